//! Where a BTP statement's tuple comes from: for each statement, the
//! columns it pins (WHERE equalities, INSERT VALUES, key lookups) and to
//! which symbolic values — program parameters, literals, columns of
//! tuples earlier statements touched. The BTP abstraction (Section 5)
//! forgets these values; a counterexample schedule needs them back to
//! instantiate programs with concrete parameters (issue 11).
//!
//! Produced by the SQL front-end; empty for BTP YAML, which has no values.

/// A symbolic value, as the front-end's lowering tracks it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Value {
    /// A program parameter (`:name`, `$1`) never assigned before.
    Param(String),
    /// A literal, as written (`42`, `'open'`).
    Literal(String),
    /// A value the lowering does not follow (an expression, a value read
    /// by a predicate-based statement, a loop variable). Equal numbers
    /// within one program are equal values.
    Unknown(usize),
    /// Column `attr` of the tuple statement `stmt` (same program) touches.
    Column { stmt: usize, attr: usize },
    /// Element `index` of array `array`.
    Element {
        array: Box<Value>,
        index: Box<Value>,
    },
}

/// The columns one statement pins, by attribute index, in ascending order.
pub type Pins = Vec<(usize, Value)>;

/// Where a [`Value::Unknown`] comes from, when the lowering knows it
/// (issue 23: the explorer instantiates such values only then).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    /// The variable of `FOR v IN lo .. hi`, or the element of an UPDATE
    /// or DELETE keyed by array elements (`USING unnest(:ids) n WHERE id
    /// = n`, a loop of keyed writes): a new value each iteration.
    RangeLoop,
    /// `SELECT c INTO v` (or `min(c)`, `max(c)`) of the predicate-based
    /// statement `stmt` over one table: column `attr` of a row it read (of
    /// the only row, when it read one). `nullable`: the program goes on
    /// without testing whether a row was found (no FOUND or IS NULL test
    /// after it), so a read of no row gives NULL and the program runs on
    /// with it (the explorer evaluates no test: a tested value is never
    /// taken to be NULL there).
    Read {
        stmt: usize,
        attr: usize,
        nullable: bool,
    },
    /// `RETURNING c ± k INTO v` of the key-based UPDATE `stmt` that sets
    /// `c = c + n` (n > 0): a number allocated from a counter row (TPC-C's
    /// `D_NEXT_O_ID`). Each allocation is new, and — the data's invariant
    /// the explorer assumes, as TPC-C's consistency conditions state — above
    /// every value the rows it numbers had before.
    Counter { stmt: usize, attr: usize },
}

/// Pins per program and statement, indexed like `Workload::programs` and
/// `Program::statements`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Provenance {
    pub programs: Vec<Vec<Pins>>,
    /// Per program: the sources of its `Value::Unknown` numbers that have
    /// one (empty when the workload came without provenance).
    pub sources: Vec<Vec<(usize, Source)>>,
    /// Per program: the key-based foreign-key existence reads
    /// (`SELECT 1 FROM parent WHERE key = … FOR KEY SHARE`), by statement
    /// index. PostgreSQL holds that lock to commit: it blocks a DELETE or
    /// key update of the parent row (the BTP's key sel does not say so).
    pub key_share: Vec<Vec<usize>>,
    /// Per program: pins whose value is an IF's result (the pin says
    /// `Unknown(usize::MAX)`): (statement, attribute, per branch the
    /// statements of that branch and the value the branch gives). An
    /// unfolding takes the branch whose statements it runs (or the one
    /// without statements when it runs none of the others').
    pub alternatives: Vec<Vec<Alternative>>,
    /// Per program: statements whose WHERE has conjuncts beyond its pins
    /// on the pinned columns or on no column (`a = :x AND a > 3`,
    /// `a = :x AND :flag`): the pins are necessary, not sufficient.
    pub inexact: Vec<Vec<usize>>,
    /// Per program: predicate selections whose result is not every row
    /// they match (`MIN(c)`/`MAX(c)` alone, `LIMIT`/`FETCH`, a non-aggregate
    /// `SELECT … INTO`, which keeps one row): a write of a row they match
    /// changes their result only when no other row matches (the explorer's
    /// "confirmed" rests only on such dependencies, docs/explorer.md).
    pub limited: Vec<Vec<usize>>,
    /// Per program: the order of a limited read when it is one key column
    /// (`MIN(c)`, `MAX(c)`, `ORDER BY c [DESC] LIMIT`): (statement,
    /// attribute, descending).
    pub orders: Vec<Vec<(usize, usize, bool)>>,
    /// Per program: range conjuncts of a WHERE on a column nothing else
    /// of that WHERE tests (`i_start_date BETWEEN :a AND :b`, `c < :x`;
    /// issue 23): (statement, attribute, bound, upper). A predicate whose
    /// bounds are parameters nothing pins matches every row when the
    /// parameters bracket the column's values (`Provenance::covering`).
    pub ranges: Vec<Vec<Range>>,
    /// Per program: an UPDATE's SET values that are a literal, NULL or a
    /// parameter: (statement, attribute, value). The explorer gives such a
    /// write that value (any other SET expression gets a value chosen
    /// among the pinned ones and a fresh one, docs/explorer.md).
    pub sets: Vec<Vec<(usize, usize, Value)>>,
    /// Per program: the snapshot scans of UPDATE/DELETE targets in a
    /// WITH (the statement that finds the target's rows on the
    /// statement's snapshot, before the write part that locks them). Its
    /// reads of a row the write part then reads or re-checks decide
    /// nothing: PostgreSQL's write acts on what it re-reads (EvalPlanQual),
    /// so the explorer gives them no dependency (docs/explorer.md).
    pub scans: Vec<Vec<usize>>,
    /// Per program: the statements PostgreSQL runs inside another SQL
    /// statement whose text is not theirs — integrity-check reads (a
    /// foreign-key check, a unique check, an exclusion / partial unique
    /// check of an INSERT, UPDATE or DELETE; their BTP `sql` is a display
    /// label) and the statements of LANGUAGE sql function bodies —, by
    /// statement index, with the text of that statement. Replay runs them
    /// as that statement.
    pub inside: Vec<Vec<(usize, String)>>,
    /// Per program and statement (indexed like `Program::statements`):
    /// which execution of a SQL statement it is a part of ([`Part`]).
    /// Empty when the workload came without provenance.
    pub parts: Vec<Vec<Option<Part>>>,
    /// Per program: the key-based UPDATEs/DELETEs whose WHERE has
    /// conjuncts beyond the key (`WHERE id = :k AND flag = 1`), the key
    /// sel standing for their no-match branch and, in a WITH, their
    /// target's snapshot scan: (statement, the extra columns, its role).
    /// PostgreSQL evaluates the whole WHERE on
    /// the row's snapshot version and, when it matched and the row was
    /// changed since, re-checks it on the latest version (EvalPlanQual):
    /// the explorer checks the extra pins on those versions instead of
    /// taking them as the row's values (docs/explorer.md).
    pub conditions: Vec<Vec<(usize, Vec<usize>, Role)>>,
    /// Per program: the extra conjuncts of a keyed UPDATE/DELETE (its
    /// write and no-match statements of `conditions`) when every one that
    /// is not an equality to a value is a [`Test`] of one column against
    /// a constant (`attempts < 3`, `locked_at IS NULL`): (statement, the
    /// tests by attribute). The explorer evaluates them on the versions a
    /// write with a constant SET makes (`explorer::unevaluated`).
    pub tests: Vec<Vec<(usize, Tests)>>,
    /// Per program: the keyed UPDATEs of `conditions` (`Role::Write`) and
    /// the columns they read only to evaluate their extra conjuncts (not in
    /// a SET or RETURNING expression): (statement, columns). Where the
    /// explorer evaluates the condition on versions, that evaluation is a
    /// predicate read of the row, not a read of those columns
    /// (docs/explorer.md).
    pub cond_only: Vec<Vec<(usize, Vec<usize>)>>,
    /// Per program: an UPDATE's SET columns whose value is never NULL but
    /// no constant (`now()`, `CURRENT_TIMESTAMP`, `nextval(…)`):
    /// (statement, attribute). `IS [NOT] NULL` tests evaluate them.
    pub not_null: Vec<Vec<(usize, usize)>>,
}

/// A statement's tests by attribute (`Provenance::tests`).
pub type Tests = Vec<(usize, Test)>;

/// A test of a column against a constant (`Provenance::tests`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Test {
    /// `col op n`, a numeric literal `n` as written: NULL fails it (SQL's
    /// unknown matches no row).
    Cmp(Cmp, String),
    /// `col IS NULL` (`true`) or `col IS NOT NULL` (`false`).
    Null(bool),
}

/// The comparison of a [`Test::Cmp`], column on the left.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cmp {
    Lt,
    Le,
    Gt,
    Ge,
    Ne,
}

/// A value a write gives a column, as far as [`Test::eval`] needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written<'a> {
    /// SQL NULL.
    Null,
    /// A literal, as written (`5`, `'x'`).
    Literal(&'a str),
    /// Not NULL, value unknown (`now()`).
    NotNull,
}

impl Test {
    /// Does a column with value `v` pass the test? `None` when the value
    /// does not decide it (a non-numeric literal or an unknown value
    /// against a comparison).
    pub fn eval(&self, v: Written) -> Option<bool> {
        match (self, v) {
            (Test::Null(is), Written::Null) => Some(*is),
            (Test::Null(is), _) => Some(!*is),
            (Test::Cmp(..), Written::Null) => Some(false),
            (Test::Cmp(op, n), Written::Literal(l)) => {
                let (a, b) = (l.trim().parse::<f64>().ok()?, n.trim().parse::<f64>().ok()?);
                Some(match op {
                    Cmp::Lt => a < b,
                    Cmp::Le => a <= b,
                    Cmp::Gt => a > b,
                    Cmp::Ge => a >= b,
                    Cmp::Ne => a != b,
                })
            }
            (Test::Cmp(..), Written::NotNull) => None,
        }
    }
}

/// What a statement of a keyed UPDATE/DELETE with extra conjuncts is
/// (`Provenance::conditions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// The write: its row matched the whole WHERE.
    Write,
    /// The key sel of the no-match branch: the row did not match.
    NoMatch,
    /// The target's snapshot scan in a WITH: it finds the row by its key
    /// whether or not the rest matches.
    Scan,
}

/// The SQL statement a BTP statement is a part of, beyond what equal
/// text and origin say: an inlined routine's statements have their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Part {
    /// The SQL statement PostgreSQL runs it in: a statement of the
    /// program (or of a PL/pgSQL routine it calls), with the bodies of
    /// the LANGUAGE sql functions it calls. Replay runs these as one step.
    pub exec: usize,
    /// The loops around that SQL statement: occurrences of its parts with
    /// equal iterations of these loops are one execution of it (deeper
    /// loops are the per-row calls inside it).
    pub depth: usize,
    /// The snapshot it reads: its statement's, shared by the bodies of
    /// STABLE and IMMUTABLE functions the statement calls, and by the
    /// queries of a STABLE PL/pgSQL routine (and the statement calling
    /// it); each query of a VOLATILE function's body takes its own
    /// (PostgreSQL 15, READ COMMITTED: checked on a server,
    /// tests/replay_checks.rs).
    pub snap: usize,
    /// The loops around the code that shares the snapshot, as `depth`.
    pub snap_depth: usize,
}

/// See [`Provenance::ranges`]: (statement, attribute, bound, upper).
pub type Range = (usize, usize, Value, bool);

/// See [`Provenance::alternatives`].
pub type Alternative = (usize, usize, Vec<(Vec<usize>, Value)>);

impl Provenance {
    /// What statement `stmt` of program `program` pins (nothing when the
    /// workload came without provenance).
    pub fn pins(&self, program: usize, stmt: usize) -> &[(usize, Value)] {
        self.programs
            .get(program)
            .and_then(|p| p.get(stmt))
            .map_or(&[], |v| v.as_slice())
    }

    /// Is statement `stmt` of program `program` a key-share existence read?
    pub fn key_share(&self, program: usize, stmt: usize) -> bool {
        self.key_share
            .get(program)
            .is_some_and(|v| v.contains(&stmt))
    }

    /// Does statement `stmt` of `program` select more than its pins say?
    pub fn inexact(&self, program: usize, stmt: usize) -> bool {
        self.inexact.get(program).is_some_and(|v| v.contains(&stmt))
    }

    /// The extra columns of a keyed UPDATE/DELETE with conjuncts beyond
    /// its key, and what `stmt` is of it (`Provenance::conditions`).
    pub fn condition(&self, program: usize, stmt: usize) -> Option<(&[usize], Role)> {
        let c = self.conditions.get(program)?.iter().find(|c| c.0 == stmt)?;
        Some((&c.1, c.2))
    }

    /// The tests of keyed UPDATE/DELETE statement `stmt` of `program`
    /// (`Provenance::tests`).
    pub fn tests(&self, program: usize, stmt: usize) -> Option<&[(usize, Test)]> {
        let t = self.tests.get(program)?.iter().find(|t| t.0 == stmt)?;
        Some(&t.1)
    }

    /// The columns keyed UPDATE `stmt` of `program` reads only for its
    /// extra conjuncts (`Provenance::cond_only`).
    pub fn cond_only(&self, program: usize, stmt: usize) -> &[usize] {
        (self.cond_only.get(program).into_iter().flatten())
            .find(|c| c.0 == stmt)
            .map_or(&[], |c| c.1.as_slice())
    }

    /// Does UPDATE `stmt` of `program` set `attr` to a value never NULL
    /// (`Provenance::not_null`)?
    pub fn sets_not_null(&self, program: usize, stmt: usize, attr: usize) -> bool {
        self.not_null
            .get(program)
            .is_some_and(|v| v.contains(&(stmt, attr)))
    }

    /// Is statement `stmt` of `program` an UPDATE/DELETE target's snapshot
    /// scan (`Provenance::scans`)?
    pub fn scan(&self, program: usize, stmt: usize) -> bool {
        self.scans.get(program).is_some_and(|v| v.contains(&stmt))
    }

    /// Does statement `stmt` of `program` return fewer rows than it
    /// matches (`Provenance::limited`)?
    pub fn limited(&self, program: usize, stmt: usize) -> bool {
        self.limited.get(program).is_some_and(|v| v.contains(&stmt))
    }

    /// The order of limited read `stmt` of `program`: (attribute,
    /// descending), when it is one key column.
    pub fn order(&self, program: usize, stmt: usize) -> Option<(usize, bool)> {
        self.orders
            .get(program)?
            .iter()
            .find(|(s, _, _)| *s == stmt)
            .map(|&(_, a, d)| (a, d))
    }

    /// The range conjuncts of statement `stmt` of `program`.
    pub fn ranges(&self, program: usize, stmt: usize) -> impl Iterator<Item = &Range> {
        self.ranges
            .get(program)
            .into_iter()
            .flatten()
            .filter(move |r| r.0 == stmt)
    }

    /// The plain SET value of column `attr` of UPDATE `stmt` of `program`.
    pub fn set_value(&self, program: usize, stmt: usize, attr: usize) -> Option<&Value> {
        self.sets
            .get(program)?
            .iter()
            .find(|(s, a, _)| *s == stmt && *a == attr)
            .map(|(_, _, v)| v)
    }

    /// How parameter `name` of `program` bounds ranges: `Some(upper)` when
    /// every range that uses it has it on the same side (then a value
    /// beyond every row's makes those ranges match every row), `None` when
    /// it bounds none or both sides.
    pub fn range_side(&self, program: usize, name: &str) -> Option<bool> {
        let mut side = None;
        for (_, _, v, upper) in self.ranges.get(program).into_iter().flatten() {
            if matches!(v, Value::Param(p) if p == name) {
                if side.is_some_and(|s| s != *upper) {
                    return None;
                }
                side = Some(*upper);
            }
        }
        side
    }

    /// The text of the SQL statement statement `stmt` of `program` runs
    /// inside (`Provenance::inside`); `None` where it is its own.
    pub fn inside(&self, program: usize, stmt: usize) -> Option<&str> {
        self.inside
            .get(program)?
            .iter()
            .find(|(s, _)| *s == stmt)
            .map(|(_, sql)| sql.as_str())
    }

    /// What SQL statement and snapshot statement `stmt` of `program` is a
    /// part of (`Provenance::parts`).
    pub fn part(&self, program: usize, stmt: usize) -> Option<Part> {
        *self.parts.get(program)?.get(stmt)?
    }

    /// The per-branch values of pin `attr` of statement `stmt`, when it
    /// is an IF's result.
    pub fn alternatives(&self, program: usize, stmt: usize, attr: usize) -> &[(Vec<usize>, Value)] {
        self.alternatives
            .get(program)
            .and_then(|v| v.iter().find(|(s, a, _)| *s == stmt && *a == attr))
            .map_or(&[], |(_, _, o)| o.as_slice())
    }

    /// The source of `Value::Unknown(n)` in program `program`, if known.
    pub fn source(&self, program: usize, n: usize) -> Option<Source> {
        self.sources
            .get(program)?
            .iter()
            .find(|(m, _)| *m == n)
            .map(|(_, s)| *s)
    }
}
