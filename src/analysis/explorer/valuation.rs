//! A valuation of an explorer instance: the values its tuples, predicates
//! and parameters take (issue 23, the value-aware explorer). Data only:
//! `values` computes valuations, `instance` carries one, `mvrc` and
//! `verify_values` read it.

/// (transaction, step, tuple).
pub(super) type Site = (usize, usize, usize);

/// One valuation of an instance.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct Valuation {
    /// Per relation: the columns some predicate of the instance pins
    /// (the slots of a version's values).
    pub cols: Vec<Vec<usize>>,
    /// Per tuple: the class per slot of its initial (or inserted) version.
    pub init: Vec<Vec<u16>>,
    /// Per transaction and step: a predicate step's pins, (slot, class).
    pub pins: Vec<Vec<Vec<(usize, u16)>>>,
    /// Per (transaction, step, tuple): the classes per slot an untracked
    /// write of a pinned column gives (`None` in a slot: not written).
    pub writes: Vec<(Site, Vec<Option<u16>>)>,
    /// Printable: per transaction its parameters and computed values.
    pub params: Vec<Vec<(String, String)>>,
    /// Printable: per tuple its pinned columns' initial values.
    pub rows: Vec<Vec<(usize, String)>>,
    /// Printable value per class.
    pub shown: Vec<String>,
    /// (transaction, predicate step, tuple): a value of the transaction is
    /// a column of the row the step read, so the step must read exactly
    /// that row (else the branch is dropped). Tuple `NO_ROW`: the step
    /// matches no row and the value is NULL (`nulls`).
    pub only: Vec<(usize, usize, usize)>,
    /// Per transaction and step: a key-based step's pins, (column, class)
    /// (`verify_values` checks its row has them).
    pub keyed: Vec<Vec<Vec<(usize, u16)>>>,
    /// Per tuple: its columns outside the slots that have a class (keys,
    /// joined columns), (column, class).
    pub known: Vec<Vec<(usize, u16)>>,
    /// (transaction, step): a predicate over the rows of a loop that did
    /// not run (an empty array): it matches no row.
    pub empty: Vec<(usize, usize)>,
    /// The class of SQL NULL, when a value read from no row is NULL: a
    /// predicate pinned to it matches nothing.
    pub null: Option<u16>,
    /// Per tuple: it does not exist (its key is NULL): a key-based
    /// statement on it finds no row and the program goes on (`nulls`).
    pub absent: Vec<bool>,
    /// (transaction, limited step, rows): rows the step may match besides
    /// its `only` row, which its order puts first (`ordered`).
    pub after: Vec<(usize, usize, Vec<usize>)>,
    /// (transaction, limited step, rows): a read ordered descending by a
    /// counter key whose result no used value names: these rows have an
    /// allocated key; when it matches one of them and otherwise only its
    /// `after` rows, that one is its result (`values::newest`).
    pub newest: Vec<(usize, usize, Vec<usize>)>,
    /// (site, slot) of `writes` that are the SQL's own value (a literal,
    /// NULL or parameter SET, `Provenance::sets`): written as is, even
    /// when the row had it before.
    pub exact: Vec<(Site, usize)>,
    /// (transaction, step, no-match branch): a keyed UPDATE/DELETE whose
    /// extra pins are checked on the row's versions, or its no-match key
    /// sel (`StepSpec::cond`).
    pub conds: Vec<(usize, usize, bool)>,
}

/// `Valuation::only`'s tuple for a read that matched no row.
pub(super) const NO_ROW: usize = usize::MAX;

impl Valuation {
    /// Does a version (alive, with `vals`) match predicate step `pos` of
    /// transaction `txn`? A step without pins (no WHERE on the relation)
    /// matches every live version.
    pub fn matches(&self, txn: usize, pos: usize, alive: bool, vals: &[u16]) -> bool {
        alive
            && !self.empty.contains(&(txn, pos))
            && self.pins[txn][pos]
                .iter()
                .all(|&(slot, c)| vals.get(slot) == Some(&c) && Some(c) != self.null)
    }

    /// The rows limited step `pos` of `txn` may match besides its result
    /// (`Valuation::after`).
    pub fn allowed(&self, txn: usize, pos: usize) -> &[usize] {
        self.after
            .iter()
            .find(|(a, p, _)| *a == txn && *p == pos)
            .map_or(&[], |(_, _, v)| v.as_slice())
    }

    /// The classes an untracked write of step `pos` of `txn` gives `t`.
    pub fn exact(&self, txn: usize, pos: usize, t: usize, slot: usize) -> bool {
        self.exact.contains(&((txn, pos, t), slot))
    }

    pub fn written(&self, txn: usize, pos: usize, t: usize) -> Option<&[Option<u16>]> {
        self.writes
            .iter()
            .find(|(k, _)| *k == (txn, pos, t))
            .map(|(_, v)| v.as_slice())
    }
}
