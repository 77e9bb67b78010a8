//! Relational schema (Section 3.1): relations with attributes and keys, and
//! foreign keys `f` with `dom(f)` and `range(f)`.
//!
//! Owns attribute sets ([`AttrSet`]) and name lookup. Knows nothing about
//! programs or SQL; the DDL reader in `sql::ddl` builds a [`Schema`].

use fixedbitset::FixedBitSet;

pub type RelId = usize;
pub type FkId = usize;

/// A set of attributes of one relation, as a bitset over attribute indices.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AttrSet(FixedBitSet);

impl AttrSet {
    pub fn empty(arity: usize) -> AttrSet {
        AttrSet(FixedBitSet::with_capacity(arity))
    }

    pub fn full(arity: usize) -> AttrSet {
        let mut s = FixedBitSet::with_capacity(arity);
        s.insert_range(..);
        AttrSet(s)
    }

    pub fn from_indices(arity: usize, idx: impl IntoIterator<Item = usize>) -> AttrSet {
        let mut s = AttrSet::empty(arity);
        for i in idx {
            s.insert(i);
        }
        s
    }

    pub fn insert(&mut self, i: usize) {
        self.0.grow(i + 1);
        self.0.insert(i);
    }

    pub fn contains(&self, i: usize) -> bool {
        self.0.contains(i)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_clear()
    }

    pub fn intersects(&self, other: &AttrSet) -> bool {
        !self.0.is_disjoint(&other.0)
    }

    pub fn union_with(&mut self, other: &AttrSet) {
        self.0.union_with(&other.0);
    }

    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.ones()
    }

    pub fn len(&self) -> usize {
        self.0.count_ones(..)
    }
}

/// `∅ ≠ ⊥`: an undefined set (`None`) never intersects anything.
pub fn meets(a: &Option<AttrSet>, b: &Option<AttrSet>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a.intersects(b),
        _ => false,
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Relation {
    pub name: String,
    pub attributes: Vec<String>,
    /// Primary key attribute indices (may be empty when unknown, e.g. in a
    /// hand-written BTP file that only needs statement types).
    pub primary_key: Vec<usize>,
    /// Other candidate keys (`UNIQUE`), used by the SQL front-end.
    pub unique_keys: Vec<Vec<usize>>,
}

impl Relation {
    pub fn attr(&self, name: &str) -> Option<usize> {
        self.attributes.iter().position(|a| a == name).or_else(|| {
            self.attributes
                .iter()
                .position(|a| a.eq_ignore_ascii_case(name))
        })
    }

    pub fn arity(&self) -> usize {
        self.attributes.len()
    }

    pub fn names(&self, set: &AttrSet) -> Vec<String> {
        set.iter().map(|i| self.attributes[i].clone()).collect()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForeignKey {
    pub name: String,
    /// `dom(f)`: the referencing relation.
    pub domain: RelId,
    /// `range(f)`: the referenced relation.
    pub range: RelId,
    /// Column pairs (domain attribute, range attribute); empty when the
    /// workload was written as BTPs and the columns do not matter.
    pub columns: Vec<(usize, usize)>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Schema {
    pub relations: Vec<Relation>,
    pub foreign_keys: Vec<ForeignKey>,
}

impl Schema {
    pub fn relation(&self, name: &str) -> Option<RelId> {
        self.relations
            .iter()
            .position(|r| r.name == name)
            .or_else(|| {
                self.relations
                    .iter()
                    .position(|r| r.name.eq_ignore_ascii_case(name))
            })
    }

    pub fn foreign_key(&self, name: &str) -> Option<FkId> {
        self.foreign_keys.iter().position(|f| f.name == name)
    }

    pub fn rel(&self, id: RelId) -> &Relation {
        &self.relations[id]
    }
}
