//! The vocabulary the rooms of the lowering share (issue 26, "smaller
//! rooms"): a statement's tables (`TableRef`, `Cte`, `VirtualTable`),
//! what its clauses do with their columns (`ColumnUses`, `ColumnRole`) and
//! symbolic values (`Term`). Data types only, importing no other room of
//! `lower`, so that the rooms import one another one way (scope, from,
//! clauses and symbolic imported each other in a circle).

use crate::model::schema::RelId;
use sqlparser::ast::Ident;
use std::collections::BTreeSet;

/// Symbolic values: see the module comment.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Term {
    Param(String),
    Lit(String),
    Fresh(usize),
    /// Column `attr` of the tuple statement `stmt` touches.
    Col(usize, usize),
    /// The value after an IF of a variable some branch assigned: index
    /// into `Lowerer::phis`, resolved per path.
    Phi(usize),
    /// Element `index` of the array parameter or variable `array`.
    Elem(Box<Term>, Box<Term>),
}

/// A table of the FROM list (or the target of UPDATE/DELETE/INSERT).
#[derive(Clone)]
pub(super) struct TableRef {
    pub(super) rel: RelId,
    pub(super) name: String,
    pub(super) alias: Option<String>,
    /// ON CONFLICT's `EXCLUDED`: the proposed row, not a database read.
    /// Only reachable through its qualifier.
    pub(super) pseudo: bool,
    /// A CTE read by name: rows of `rel` the CTE's statement produced;
    /// reading them reads no table.
    pub(super) cte: bool,
    /// A FROM item that is no table (from.rs): its columns; no read.
    pub(super) virt: Option<VirtualTable>,
}

/// A CTE in scope: its name and the table its rows are rows of.
pub(super) struct Cte {
    pub(super) name: Ident,
    pub(super) rel: Option<RelId>,
    /// Declared with a column list `c(a, b)`: columns renamed.
    pub(super) renamed: bool,
    /// Output names of its select list given by `AS` (`a + 1 AS a1`): a
    /// reference to one through the CTE names no column of `rel` (reading
    /// a CTE's rows reads no table; in a WHERE it is a value that names a
    /// column, so what it is equated with counts as joined).
    pub(super) outputs: Vec<String>,
    /// The statement whose tuple is the CTE's one row (`cte_rows.rs`),
    /// for the provenance of joins on it.
    pub(super) row: Option<usize>,
    /// When that row is written only if extra conjuncts hold (`WHERE id
    /// = :k AND locked_by = :w`): the key sel that stands for "they did
    /// not" (the branch's other alternative); the CTE then returns no row.
    pub(super) miss: Option<usize>,
}

/// The rows of a FROM item that is no table (was `Virtual`).
#[derive(Clone, PartialEq, Eq)]
pub(super) struct VirtualTable {
    /// Its columns, `None` when unknown (a derived table selecting `*`, a
    /// function without a column list): then any column qualified by its
    /// name is one of its columns, and an unqualified name is one only if
    /// no table in scope has it.
    pub(super) cols: Option<Vec<String>>,
    /// Values only (UNNEST, VALUES, a built-in set-returning function): a
    /// table whose key its columns pin is accessed per element by key.
    pub(super) values: bool,
}

/// Columns of one table found in the parts of a statement (was `Uses`).
#[derive(Default, Clone)]
pub(super) struct ColumnUses {
    /// WHERE and ON columns (predicate columns).
    pub(super) pred: BTreeSet<usize>,
    /// Columns read: select list, ORDER/GROUP BY, HAVING, SET and RETURNING expressions.
    pub(super) read: BTreeSet<usize>,
    /// Equalities column = value (no column on the other side).
    pub(super) eq: Vec<(usize, Term)>,
    /// Columns of conjuncts that are not such equalities.
    pub(super) extra: BTreeSet<usize>,
    /// Columns in column = column conjuncts (joins).
    pub(super) join: BTreeSet<usize>,
    pub(super) all: bool,
    /// Columns whose `eq` value is an element of a values item (UNNEST,
    /// VALUES: from.rs). An UPDATE/DELETE target keyed by them writes
    /// once per element (a loop); a read is one snapshot over all the
    /// elements, so it treats them as join columns (`for_reads`).
    pub(super) elem: BTreeSet<usize>,
    /// A conjunct on no column of the statement's tables (parameters or
    /// other tables only): the WHERE is more than its equalities and
    /// extra columns say (provenance: `Provenance::inexact`).
    pub(super) opaque: bool,
    /// `col = ANY(ARRAY[v₁, …])` conjuncts: the column and the values (also
    /// in `extra`; only `Held::OwnInserts` looks at them).
    pub(super) any_of: Vec<(usize, Vec<Term>)>,
    /// Join columns equal to a column of a CTE's one row (`cte_rows.rs`):
    /// provenance only (`Facts::value_pins`), the BTP keeps the join.
    pub(super) joined: Vec<(usize, Term)>,
    /// Top-level range conjuncts `col BETWEEN v AND w`, `col < v`, `col
    /// >= v`, … with values (no column) as bounds: (column, bound, upper).
    /// Also in `extra`; for the provenance (`Provenance::ranges`).
    pub(super) ranges: Vec<(usize, Term, bool)>,
    /// Columns of `extra` conjuncts that are not such ranges.
    pub(super) unranged: BTreeSet<usize>,
    /// Top-level conjuncts testing one column against a constant (`col <
    /// 3`, `col IS NULL`: `Provenance::tests`). Also in `extra`.
    pub(super) tests: Vec<(usize, crate::model::provenance::Test)>,
    /// Columns of `extra` conjuncts that are not such tests.
    pub(super) untested: BTreeSet<usize>,
}

impl ColumnUses {
    /// The uses as a read sees them: columns pinned by elements are join
    /// columns (one predicate read on the statement's snapshot; a loop of
    /// keyed reads would let writes in between).
    pub(super) fn for_reads(&self) -> ColumnUses {
        let mut u = self.clone();
        u.eq.retain(|(c, _)| !self.elem.contains(c));
        u.join.extend(self.elem.iter().copied());
        u.elem.clear();
        u
    }
}

/// What a column found in an expression is to the statement (was `Clause`):
/// a column it reads, or one its predicate (WHERE, join) tests.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum ColumnRole {
    Read,
    Pred,
}
