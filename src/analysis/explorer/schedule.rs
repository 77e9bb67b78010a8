//! A counterexample schedule as data, in the style of the paper's
//! Figure 3: transactions (program, unfolding), the tuples, the steps in
//! schedule order with their operations and the versions reads saw, the
//! dependencies of SeG(s) and one cycle. `describe` gives plain lines; the
//! report layer renders it otherwise.

use super::Bounds;
use crate::model::isolation::Level;
use crate::model::schema::RelId;

/// Where a tuple of the instance comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TupleKind {
    /// In the initial database, shared by the transactions that pick it.
    Shared,
    /// In the initial database, touched by one transaction only.
    Private(usize),
    /// Unborn initially; inserted by the given transaction.
    Inserted(usize),
}

/// One transaction of the schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transaction {
    /// Summary-graph node (LTP) it instantiates.
    pub node: usize,
    /// The isolation level it ran at.
    pub level: Level,
    /// Program index in the workload and 1-based unfolding number.
    pub program: usize,
    pub unfolding: usize,
    /// Node name, e.g. `PlaceBid#2`.
    pub name: String,
    /// Occurrence labels per position (`q3`, or `q3@2` in a loop copy).
    pub labels: Vec<String>,
    /// Per position: a later part of the previous position's SQL
    /// statement, reading that statement's snapshot (READ COMMITTED).
    pub continues: Vec<bool>,
}

/// A tuple of the instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tuple {
    pub rel: RelId,
    /// e.g. `Savings#1`.
    pub name: String,
    pub kind: TupleKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpKind {
    Read,
    Write,
    Insert,
    Delete,
    PredRead,
}

impl OpKind {
    pub fn letter(self) -> &'static str {
        match self {
            OpKind::Read => "R",
            OpKind::Write => "W",
            OpKind::Insert => "I",
            OpKind::Delete => "D",
            OpKind::PredRead => "PR",
        }
    }
}

/// The version a read observed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Seen {
    /// The version of the initial database.
    Initial,
    /// The version committed by the given transaction (index).
    Txn(usize),
    /// The reading transaction's own uncommitted write.
    Own,
}

/// An operation (Section 3.2): on a tuple, or a predicate read on `rel`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Op {
    pub kind: OpKind,
    pub tuple: Option<usize>,
    pub rel: RelId,
    /// Attr(o) (Section 3.2), after the granularity setting: ReadSet,
    /// WriteSet or PReadSet of the statement; all attributes for I and D.
    pub attrs: Vec<usize>,
    /// For reads: the version observed. For a predicate read of one
    /// tuple (`PR` with `tuple` set: the re-check after a lock wait), the
    /// version the predicate was evaluated on.
    pub seen: Option<Seen>,
    /// For a predicate read of the relation: tuples it did not evaluate on
    /// the statement's snapshot because another transaction held their row
    /// lock and they matched there; the statement waited and re-checked
    /// each on its new version (PostgreSQL's EvalPlanQual), in the step
    /// with `resumed` set.
    pub deferred: Vec<usize>,
}

/// One atomic step: a statement (its chunk of operations) or a commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub txn: usize,
    /// Occurrence position in the transaction's LTP; `None` = commit.
    pub pos: Option<usize>,
    pub ops: Vec<Op>,
    /// Serialization-graph edges this step created first.
    pub deps: Vec<Dependency>,
    /// The rest of a statement that waited for row locks (the step of the
    /// same statement before it has `deferred` tuples): its re-checks of
    /// those tuples on their new versions and what it then did to them.
    pub resumed: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DepKind {
    Ww,
    Wr,
    Rw,
    PredWr,
    PredRw,
}

impl DepKind {
    pub fn label(self) -> &'static str {
        match self {
            DepKind::Ww => "ww",
            DepKind::Wr => "wr",
            DepKind::Rw => "rw",
            DepKind::PredWr => "predicate wr",
            DepKind::PredRw => "predicate rw",
        }
    }
}

/// An edge T_from → T_to of SeG(s), with the first dependency found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dependency {
    pub from: usize,
    pub to: usize,
    pub kind: DepKind,
    /// The tuple the dependency is on.
    pub tuple: Option<usize>,
    /// Index into the creating step's `ops`.
    pub op: usize,
}

/// A tuple's state at the end of a schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Final {
    pub tuple: usize,
    /// The transaction that wrote its last version.
    pub writer: usize,
    /// False when that version is the dead one (deleted).
    pub exists: bool,
}

/// A complete schedule allowed under MVRC whose serialization graph has a
/// cycle: a counterexample to robustness.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    pub bounds: Bounds,
    pub transactions: Vec<Transaction>,
    pub tuples: Vec<Tuple>,
    pub steps: Vec<Step>,
    /// The cycle, as transaction indices: T_c0 → T_c1 → … → T_c0.
    pub cycle: Vec<usize>,
    /// Set by `confirm` when the schedule is one of another dangerous
    /// cycle of the witness's strongly connected component than the
    /// witness (the value pass searches the sets of all of them at once,
    /// cheapest first; the model pass the witness first).
    pub via: Option<crate::analysis::robustness::Witness>,
    /// The values the schedule runs with (issue 23, item 1): set when
    /// every predicate was instantiated on values, so the schedule is one
    /// of program instances with these parameters over rows with these
    /// values. `None` with `model_only` set otherwise.
    pub values: Option<Values>,
    /// Why the schedule exists in the BTP model only (no valuation of the
    /// programs gives it, or a predicate could not be instantiated).
    pub model_only: Option<String>,
}

/// The values of a schedule found with values.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Values {
    /// Per transaction: parameters (`:c`) and values the program computes,
    /// with the value each takes.
    pub params: Vec<Vec<(String, String)>>,
    /// Per tuple: the columns predicates pin, with the row's initial (or
    /// inserted) value.
    pub rows: Vec<Vec<(String, String)>>,
    /// The values untracked expressions wrote into pinned columns
    /// (`T1 q1: website#2.hits = a value other than 10`).
    pub writes: Vec<String>,
    /// The same values as data, for `verify_values` (issue 23).
    pub facts: Option<Box<ValueFacts>>,
}

/// A statement's kind and the values it pins, (column, value).
pub type StmtValues = (StmtKind, Vec<(usize, u16)>);

/// A write's site (transaction, position, tuple) and per slot the value
/// it gives (`None`: unchanged).
pub type WriteValues = ((usize, usize, usize), Vec<Option<u16>>);

/// What a statement of a schedule found with values is, for
/// `verify_values`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StmtKind {
    /// Key-based (or an insert): touches its one tuple.
    Key,
    /// A predicate selection: reads every version it matches.
    PredSel,
    /// A predicate UPDATE or DELETE: writes every version it matches.
    PredWrite,
}

/// The value instance of a schedule as data: values are numbers, equal
/// numbers are equal values, and [`FRESH_VALUE`] (written by an
/// expression the explorer does not follow) equals no pinned value.
/// `verify_values` evaluates the schedule's statements on it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ValueFacts {
    /// Per relation: the columns some predicate pins (the slots).
    pub cols: Vec<Vec<usize>>,
    /// Per tuple: its initial (or inserted) version's value per slot.
    pub init: Vec<Vec<u16>>,
    /// Per tuple: values of columns outside the slots (keys, joined
    /// columns), (column, value); a column not listed is unknown.
    pub known: Vec<Vec<(usize, u16)>>,
    /// Per transaction and position: the statement's kind and the values
    /// it pins, (column, value).
    pub stmts: Vec<Vec<StmtValues>>,
    /// (transaction, position, tuple): per slot, the value the write
    /// gives it (`None`: unchanged).
    pub writes: Vec<WriteValues>,
    /// (transaction, position, tuple): a value of the transaction is a
    /// column of this row, so the statement reads exactly this row
    /// (`NO_ROW`: it matches no row and the value is NULL).
    pub only: Vec<(usize, usize, usize)>,
    /// (transaction, position, rows): rows a limited read (MIN, ORDER BY
    /// … LIMIT) may match besides its `only` row, which its order puts
    /// first.
    pub after: Vec<(usize, usize, Vec<usize>)>,
    /// The value of SQL NULL (a pin equal to it matches nothing).
    pub null: Option<u16>,
    /// Per tuple: it does not exist (its key is NULL): a key statement on
    /// it finds no row and the program goes on.
    pub absent: Vec<bool>,
    /// (transaction, position, no-match branch, extra pins as (column,
    /// value)): a keyed UPDATE/DELETE whose extra conjuncts hold on the
    /// row's snapshot and latest versions, or its no-match key sel, whose
    /// extra conjuncts fail on the snapshot's version (EvalPlanQual).
    pub conds: Vec<CondValues>,
}

/// See [`ValueFacts::conds`].
pub type CondValues = (usize, usize, bool, Vec<(usize, u16)>);

/// See [`ValueFacts`].
pub const FRESH_VALUE: u16 = u16::MAX;

impl Schedule {
    /// All edges of SeG(s), in the order found.
    pub fn dependencies(&self) -> impl Iterator<Item = &Dependency> {
        self.steps.iter().flat_map(|s| s.deps.iter())
    }

    /// The edges of the cycle, in cycle order.
    pub fn cycle_edges(&self) -> Vec<Dependency> {
        let n = self.cycle.len();
        (0..n)
            .filter_map(|i| {
                let (a, b) = (self.cycle[i], self.cycle[(i + 1) % n]);
                self.dependencies()
                    .find(|d| d.from == a && d.to == b)
                    .copied()
            })
            .collect()
    }

    /// The final state: for every tuple some transaction wrote, the last
    /// writer and whether the tuple exists at the end.
    pub fn final_state(&self) -> Vec<Final> {
        let mut last: Vec<Option<(usize, OpKind)>> = vec![None; self.tuples.len()];
        for step in &self.steps {
            for op in &step.ops {
                if let (Some(t), OpKind::Write | OpKind::Insert | OpKind::Delete) =
                    (op.tuple, op.kind)
                {
                    last[t] = Some((step.txn, op.kind));
                }
            }
        }
        last.iter()
            .enumerate()
            .filter_map(|(tuple, l)| {
                l.map(|(writer, kind)| Final {
                    tuple,
                    writer,
                    exists: kind != OpKind::Delete,
                })
            })
            .collect()
    }

    /// The statement label of occurrence `pos` of transaction `txn`.
    pub fn statement_id(&self, txn: usize, pos: usize) -> &str {
        self.transactions[txn]
            .labels
            .get(pos)
            .map_or("?", String::as_str)
    }
}
