//! A client-side interpreter of the program AST (`frontend::sql::ast`):
//! runs one transaction program on a connection, one SQL statement per
//! [`Executor::step`], so a driver outside chooses the interleaving.
//!
//! Each SQL statement is sent as it is reached, its `:name` parameters
//! bound as real query parameters (`$n`, text format, typed as the column
//! the value came from); `SELECT … INTO` and `RETURNING … INTO` bind
//! variables (one target and several columns: a record, read as
//! `:r$col`); IF, loop and EXIT conditions and `:=` are evaluated by the
//! server (`SELECT <expr>` with the current bindings, inside a savepoint
//! so a type error does not abort the transaction); FOUND follows
//! PL/pgSQL (a row returned or affected). The executor knows nothing of
//! schedules or witnesses: issue 15 drives it with random programs.
//!
//! A block with an EXCEPTION handler runs in a savepoint, as PL/pgSQL runs
//! it in a subtransaction: an error of the database inside it (a
//! statement's, a condition's, a FETCH's), a RAISE, a failing ASSERT
//! (P0004) or `INTO STRICT` finding no row (P0002) or several (P0003)
//! rolls back to the savepoint and runs the first handler whose
//! conditions catch its SQLSTATE (`errcodes`); an error no handler
//! catches rolls back every block it leaves and stops the program.
//! Explicit cursors are real cursors of the same name (`DECLARE c CURSOR
//! FOR …` at OPEN, SQL FETCH/MOVE, CLOSE). `GET DIAGNOSTICS v =
//! ROW_COUNT` is the last statement's row count.
//!
//! An inlined routine's `RETURN expr` (`RETURN_VALUE_MARK`) is evaluated
//! and converted to its declared type: the caller's result variable gets
//! it (issue 23; it was left NULL).
//!
//! Not interpreted (the step reports [`Halt::Unsupported`]): calls not
//! inlined; the use of a call's result the replay does not know (no
//! RETURN value, a VOLATILE routine per row of a statement, a routine
//! called per row with the row's columns).

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::sync::Arc;

use postgres::fallible_iterator::FallibleIterator;
use postgres::Client;
use sqlparser::ast::{visit_expressions_mut, Expr, Value};

use super::retype;
use super::scratch::ident;
use super::srf;
use super::value::Val;
use crate::frontend::lower::{may_read, statement_text};
use crate::frontend::sql::ast::{LoopHead, Node, ProcExpr, Stmt};
use crate::frontend::sql::plpgsql::{
    ASSERT_MARK, CURSOR_MARK, HANDLER_MARK, ONE_SNAPSHOT_LABEL, PER_ROW_LABEL, RETURN_NEXT_MARK,
    RETURN_VALUE_MARK, ROW_COUNT_MARK,
};

/// One SQL statement the executor ran, with what it observed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ran {
    /// The statement as written (whitespace collapsed), as the BTP's
    /// `Statement::sql` shows it: identifies the statement.
    pub source: String,
    /// What was sent (placeholders as `$n`).
    pub sent: String,
    pub params: Vec<Val>,
    /// Rows returned (SELECT, RETURNING), as text values.
    pub rows: Vec<Vec<Val>>,
    /// Rows affected (INSERT, UPDATE, DELETE; rows for SELECT).
    pub affected: u64,
}

/// The result of one [`Executor::step`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Ran(Box<Ran>),
    /// The program reached its end: the driver may commit.
    Finished,
    /// The program chose to roll back (ROLLBACK, RAISE EXCEPTION): what
    /// led there, for people (`Executor::rollback_reason`).
    RolledBack(String),
}

/// Why a program stopped before its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Halt {
    /// The database raised an error (the transaction is aborted): a
    /// serialization failure, a deadlock, a constraint violation, …
    Db {
        code: String,
        message: String,
        /// The statement, when it was one.
        source: Option<String>,
    },
    /// A construct the executor does not run, or a missing parameter.
    Unsupported(String),
}

impl std::fmt::Display for Halt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Halt::Db {
                code,
                message,
                source,
            } => {
                write!(f, "{message} (SQLSTATE {code})")?;
                if let Some(s) = source {
                    write!(f, " at `{s}`")?;
                }
                Ok(())
            }
            Halt::Unsupported(m) => f.write_str(m),
        }
    }
}

impl Halt {
    pub fn from_db(e: &postgres::Error, source: Option<String>) -> Halt {
        match e.as_db_error() {
            Some(d) => Halt::Db {
                code: d.code().code().to_string(),
                message: d.message().to_string(),
                source,
            },
            // Not the server's error (a value the client cannot read, a
            // lost connection): its cause is what a person needs.
            None => Halt::Db {
                code: "08000".into(),
                message: match std::error::Error::source(e) {
                    Some(cause) => format!("{e}: {cause}"),
                    None => e.to_string(),
                },
                source,
            },
        }
    }

    /// A serialization failure (40001) or a deadlock (40P01): the
    /// database aborted the transaction to keep its guarantees.
    pub fn is_concurrency_abort(&self) -> bool {
        matches!(self, Halt::Db { code, .. } if code == "40001" || code == "40P01")
    }
}

enum Frame<'p> {
    Block {
        nodes: &'p [Node],
        at: usize,
        label: Option<&'p str>,
        /// An EXCEPTION block: its handlers (each body starting with its
        /// conditions, `HANDLER_MARK`) and the number of its savepoint.
        handler: Option<(&'p [Vec<Node>], usize)>,
    },
    Loop {
        body: &'p [Node],
        at: usize,
        label: Option<&'p str>,
        /// The head must be evaluated before the next iteration.
        fresh: bool,
        kind: LoopKind<'p>,
    },
}

/// A loop head's decision, taken out of its frame.
enum Head<'p> {
    Go,
    Stop,
    Cond(&'p ProcExpr),
    Set(&'p str, i64),
    /// FOR v IN query: the next row (its columns by name).
    Row(&'p str, Vec<(String, Val)>),
}

enum LoopKind<'p> {
    Plain,
    While(&'p ProcExpr),
    /// FOR v IN SELECT …: the rows the query returned when the loop began.
    Rows {
        var: &'p str,
        rows: Vec<Vec<(String, Val)>>,
        next: usize,
    },
    Range {
        var: &'p str,
        next: i64,
        last: i64,
        by: i64,
    },
}

impl<'p> LoopKind<'p> {
    /// The decision at the head of the next iteration (a FOR loop's
    /// counter or row advances).
    fn next_head(&mut self) -> Head<'p> {
        match self {
            LoopKind::Plain => Head::Go,
            LoopKind::While(cond) => Head::Cond(cond),
            LoopKind::Range {
                var,
                next,
                last,
                by,
            } => {
                if (*by > 0 && *next <= *last) || (*by < 0 && *next >= *last) {
                    let v = *next;
                    *next += *by;
                    Head::Set(var, v)
                } else {
                    Head::Stop
                }
            }
            LoopKind::Rows { var, rows, next } => match rows.get(*next) {
                Some(r) => {
                    *next += 1;
                    Head::Row(var, r.clone())
                }
                None => Head::Stop,
            },
        }
    }
}

/// One program in execution: its position and its variables.
pub struct Executor<'p> {
    frames: Vec<Frame<'p>>,
    /// The last statement's rows with their column names.
    last_rows: Vec<Vec<(String, Val)>>,
    /// Variables and parameters by name (lower case, without `:`).
    pub vars: BTreeMap<String, Val>,
    found: bool,
    /// The last statement's row count (GET DIAGNOSTICS … ROW_COUNT).
    row_count: u64,
    /// Savepoints of EXCEPTION blocks taken so far (their names).
    savepoints: usize,
    done: bool,
    /// Record evaluations that read tables as steps (`observing`).
    observe: bool,
    /// Evaluations done and not yet returned by `step`.
    evals: std::collections::VecDeque<Ran>,
    /// The cursor the next OPEN declares (its variable's name).
    opening: Option<String>,
    /// The row the last FETCH returned, with its column names.
    fetched: Vec<(String, Val)>,
    /// The conditions the last IF evaluated, and what they gave: why a
    /// RAISE or ROLLBACK was reached (issue 23: say why a replay fails).
    last_if: Vec<String>,
    /// Per inlined routine being run (its block's label, `f()`), the rows
    /// its `RETURN QUERY`s returned (`srf`).
    returning: BTreeMap<String, srf::Returned>,
    /// Per call result variable (`__callN`), the rows of that call: what
    /// `unnest(:__callN, …)` in FROM stands for.
    results: BTreeMap<String, srf::Returned>,
    /// Variables `__srf_<n>` made for those rows so far.
    srf_vars: usize,
    /// Loop iterations started so far (all loops of the program).
    iterations: u64,
    /// Per inlined routine being run (`f()`), the value its RETURN gave
    /// (None until one ran): what the caller's result variable gets.
    ret_values: BTreeMap<String, Option<Val>>,
    /// Result variables of calls whose value the replay does not know
    /// (the routine ended without a RETURN value it evaluated), with
    /// why: using one stops the program (`bind`), never reads NULL.
    unknown: BTreeMap<String, String>,
    /// Call result variables (`__callN`) an inlined call has assigned.
    called: std::collections::BTreeSet<String>,
    /// Application-decided choices and the schedule's path (`choices:`).
    choices: Option<Arc<Choices>>,
    /// How many statements of `choices.path` have run so far.
    on_path: usize,
    /// The draws of random choices (`Choices::random`).
    draws: Option<crate::model::rng::Rng>,
    /// The routine's DECLAREd variables with their types (lower-case
    /// name): a value assigned to one is converted to its type, as
    /// PL/pgSQL converts it (`with_declared`).
    declared: Arc<BTreeMap<String, retype::Declared>>,
}

/// Parameters the application decides anew at every visit (the
/// manifest's `choices:`; BenchBase's Java picks the next statement) and
/// the statements the schedule has this transaction run, in order. A
/// condition that is exactly such a parameter is not evaluated: an IF
/// branch is taken when its first statement is the schedule's next one,
/// `EXIT WHEN :done` exits when the schedule's statements have all run.
/// Only for declared choices: a real program's parameter keeps its value
/// in every iteration, and following a path its values cannot take could
/// invent an anomaly.
#[derive(Debug, Clone, Default)]
pub struct Choices {
    pub names: Vec<String>,
    pub path: Vec<String>,
    /// `isolint replay --random`: no schedule, each choice drawn at random
    /// (from this seed, one draw per condition reached) instead; the
    /// serial runs then follow the path the concurrent run took.
    pub random: Option<u64>,
}

/// Loop iterations a replayed program may start. Replay picks every
/// parameter once, so a loop whose exit hangs on a parameter (`EXIT WHEN
/// :done`, BenchBase's any-order programs) or on no statement at all can run
/// forever with the chosen values; PostgreSQL would run it forever too.
/// The witnesses replay needs run a few iterations (TPC-C: 15 items).
const MAX_ITERATIONS: u64 = 1_000;

impl<'p> Executor<'p> {
    /// Starts `program` with its parameters bound.
    pub fn new(program: &'p [Node], params: BTreeMap<String, Val>) -> Executor<'p> {
        Executor {
            frames: vec![Frame::Block {
                nodes: program,
                at: 0,
                label: None,
                handler: None,
            }],
            last_rows: vec![],
            vars: params,
            found: false,
            row_count: 0,
            savepoints: 0,
            done: false,
            observe: false,
            evals: Default::default(),
            opening: None,
            fetched: vec![],
            last_if: vec![],
            returning: BTreeMap::new(),
            results: BTreeMap::new(),
            srf_vars: 0,
            iterations: 0,
            ret_values: BTreeMap::new(),
            unknown: BTreeMap::new(),
            called: Default::default(),
            choices: None,
            on_path: 0,
            draws: None,
            declared: Default::default(),
        }
    }

    /// Convert what is assigned to the routine's DECLAREd variables to
    /// their declared types (`retype::variable_types`), as PL/pgSQL does:
    /// `d date := '2024-01-31'` holds a date, `s smallint := 70000`
    /// fails, `n int := 7 / 2.0` holds 4. Without it the value keeps the
    /// type of the expression (text, numeric) and a later statement sees
    /// another value or fails to type.
    pub fn with_declared(
        mut self,
        declared: Arc<BTreeMap<String, retype::Declared>>,
    ) -> Executor<'p> {
        self.declared = declared;
        self
    }

    /// `v` as the declared type of variable `var` (lower case), when it
    /// has one and `v` is of another type: PostgreSQL's cast (an error,
    /// as PL/pgSQL's assignment raises one, stops the program).
    fn as_declared(&self, c: &mut Client, var: &str, v: Val) -> Result<Val, Halt> {
        // A variable of a routine inlined into another (`g.f.v`): its
        // routine's `f.v`.
        let inlined = || {
            let mut parts = var.rsplitn(3, '.');
            let (v, f) = (parts.next()?, parts.next()?);
            self.declared.get(&format!("{f}.{v}"))
        };
        let Some(d) = self.declared.get(var).or_else(inlined) else {
            return Ok(v);
        };
        if v.oid == d.oid {
            return Ok(v);
        }
        if v.text.is_none() {
            return Ok(Val { oid: d.oid, ..v });
        }
        let sql = format!("SELECT CAST($1 AS {})", d.sql);
        let (rows, _) = query(c, &sql, std::slice::from_ref(&v))
            .map_err(|e| Halt::from_db(&e, Some(format!("{var} := {}", v.literal()))))?;
        Ok(first_value(rows))
    }

    /// Follow the schedule's path at conditions that are application
    /// choices ([`Choices`]).
    pub fn with_choices(mut self, choices: Option<Arc<Choices>>) -> Executor<'p> {
        self.choices = choices.filter(|c| !c.names.is_empty());
        self.draws = self
            .choices
            .as_ref()
            .and_then(|c| c.random)
            .map(crate::model::rng::Rng::new);
        self
    }

    /// The choice `cond` is, when it is exactly a declared choice
    /// parameter (`:c1`, `c1`).
    fn choice(&self, cond: &ProcExpr) -> Option<&Choices> {
        let ch = self.choices.as_deref()?;
        let name = cond.snip.text.trim().trim_start_matches(':').to_lowercase();
        ch.names.contains(&name).then_some(ch)
    }

    /// Inside a block whose queries read one snapshot on PostgreSQL (a
    /// STABLE routine's, `ONE_SNAPSHOT_LABEL`) with a query still to run
    /// there (or a loop that may run one again): the driver runs this
    /// transaction's next step before any other action, so that no commit
    /// comes between them (each statement the executor sends takes its
    /// own snapshot; with no commit between, they see the same data).
    pub fn holds_snapshot(&self) -> bool {
        let mut more = false;
        for f in self.frames.iter().rev() {
            match f {
                Frame::Block {
                    nodes, at, label, ..
                } => {
                    more |= nodes.get(*at..).is_some_and(has_sql);
                    if *label == Some(ONE_SNAPSHOT_LABEL) {
                        return more;
                    }
                }
                Frame::Loop { .. } => more = true,
            }
        }
        false
    }

    /// Runs up to and including the next SQL statement, and counts it on
    /// the schedule's path when it is the path's next one.
    pub fn step(&mut self, c: &mut Client) -> Result<Step, Halt> {
        let r = self.step_any(c);
        if let (Ok(Step::Ran(ran)), Some(ch)) = (&r, &self.choices) {
            if ch.path.get(self.on_path) == Some(&ran.source) {
                self.on_path += 1;
            }
        }
        r
    }

    /// With `on`, an evaluated condition or expression that reads a table
    /// (a subquery, a function call) is returned by the next `step` as a
    /// [`Ran`] of its own (source: its text; rows: its value), so the
    /// interleaving can put other transactions' statements between it and
    /// what follows, as PostgreSQL's PL/pgSQL evaluates it as a query of
    /// its own, and what it read is compared with the serial runs. The
    /// conditions of one IF/ELSIF chain, or a FOR loop's bounds, still
    /// run in one step. RAISE arguments and ASSERT conditions are
    /// evaluated only when on.
    pub fn observing(mut self, on: bool) -> Executor<'p> {
        self.observe = on;
        self
    }

    /// Runs up to and including the next SQL statement (control flow
    /// around it is evaluated on the way). The caller has begun the
    /// transaction on `c`.
    fn step_any(&mut self, c: &mut Client) -> Result<Step, Halt> {
        if let Some(r) = self.evals.pop_front() {
            return Ok(Step::Ran(Box::new(r)));
        }
        if self.done {
            return Ok(Step::Finished);
        }
        loop {
            if let Some(r) = self.evals.pop_front() {
                return Ok(Step::Ran(Box::new(r)));
            }
            let Some(frame) = self.frames.last_mut() else {
                self.done = true;
                return Ok(Step::Finished);
            };
            let node = match frame {
                Frame::Block {
                    nodes, at, handler, ..
                } => {
                    let nodes: &'p [Node] = nodes;
                    if *at >= nodes.len() {
                        // The block succeeded: its subtransaction commits.
                        if let Some((_, n)) = *handler {
                            savepoint(c, &format!("RELEASE SAVEPOINT isolint_block_{n}"))?;
                        }
                        self.frames.pop();
                        continue;
                    }
                    *at += 1;
                    &nodes[*at - 1]
                }
                Frame::Loop {
                    body,
                    at,
                    fresh,
                    kind,
                    ..
                } => {
                    let body: &'p [Node] = body;
                    if *at >= body.len() {
                        *at = 0;
                        *fresh = true;
                    }
                    if !*fresh {
                        *at += 1;
                        &body[*at - 1]
                    } else {
                        *fresh = false;
                        self.iterations += 1;
                        if self.iterations > MAX_ITERATIONS {
                            return Err(Halt::Unsupported(format!(
                                "a loop did not end after {MAX_ITERATIONS} iterations with the \
                                 replayed values (its exit depends on values that stay the same \
                                 in every iteration, e.g. a parameter); the program would not \
                                 end on PostgreSQL either"
                            )));
                        }
                        // What the head needs, taken out of the frame
                        // before `eval` borrows the executor.
                        let head = kind.next_head();
                        let go = match head {
                            Head::Go => true,
                            Head::Stop => false,
                            Head::Cond(cond) => self.observe_eval(c, cond)?.is_true(),
                            Head::Set(var, v) => {
                                let v = Val::typed(v.to_string(), &postgres::types::Type::INT4);
                                self.vars.insert(var.to_lowercase(), v);
                                true
                            }
                            Head::Row(var, row) => {
                                // `:v` is the first column, `:v$col` each one.
                                let var = var.to_lowercase();
                                if let Some((_, v)) = row.first() {
                                    self.vars.insert(var.clone(), v.clone());
                                }
                                for (name, v) in row {
                                    self.vars
                                        .insert(format!("{var}${}", name.to_lowercase()), v);
                                }
                                true
                            }
                        };
                        if !go {
                            self.frames.pop();
                        }
                        continue;
                    }
                }
            };
            let r = match self.exec(c, node) {
                Ok(r) => r,
                Err(h) => self.caught(c, node, h)?,
            };
            if let Some(st) = r {
                return Ok(st);
            }
        }
    }

    /// Why the program rolled back: its own RAISE EXCEPTION or ROLLBACK
    /// (the executor does not evaluate RAISE's message), and the last IF's
    /// conditions that led to it.
    fn rollback_reason(&self) -> String {
        let mut why = "the program raised an exception or rolled back".to_string();
        if !self.last_if.is_empty() {
            why.push_str(&format!(" (after {})", self.last_if.join(", ")));
        }
        why
    }

    /// An error of `node` handed to the EXCEPTION handlers. A RAISE
    /// nothing catches: the program rolls back. A caught statement error
    /// ended a statement of its own: other transactions may commit before
    /// the handler's first statement (PL/pgSQL runs each on a fresh
    /// snapshot); what it observed is the error.
    fn caught(&mut self, c: &mut Client, node: &'p Node, h: Halt) -> Result<Option<Step>, Halt> {
        let code = match &h {
            Halt::Db { code, .. } => code.clone(),
            _ => String::new(),
        };
        if let Err(h) = self.handle(c, h) {
            if matches!(node, Node::Abort) {
                self.done = true;
                return Ok(Some(Step::RolledBack(self.rollback_reason())));
            }
            return Err(h);
        }
        let Node::Sql(stmt) = node else {
            return Ok(None);
        };
        let source = statement_text(&stmt.snip.text);
        Ok(Some(Step::Ran(Box::new(Ran {
            sent: source.clone(),
            source,
            params: vec![],
            rows: vec![vec![Val::untyped(format!("error {code}"))]],
            affected: 0,
        }))))
    }

    /// Runs one node: `Some` when it ran an SQL statement (or the program
    /// rolled back), `None` when the walk goes on. An error goes to the
    /// EXCEPTION handlers ([`Executor::handle`]).
    fn exec(&mut self, c: &mut Client, node: &'p Node) -> Result<Option<Step>, Halt> {
        match node {
            Node::Sql(stmt) => {
                let ran = self.run_stmt(c, stmt)?;
                if stmt.returned {
                    self.keep_returned(c, &ran)?;
                }
                return Ok(Some(Step::Ran(Box::new(ran))));
            }
            Node::If(branches) => self.branch(c, branches)?,
            Node::Loop {
                head, body, label, ..
            } => return self.start_loop(c, head, body, label.as_deref()),
            Node::Exit {
                when,
                is_continue,
                label,
                ..
            } => {
                let go = match when {
                    None => true,
                    // An application choice: done when the schedule is.
                    Some(cond) if self.choice(cond).is_some() => match self.draws.as_mut() {
                        Some(r) => r.chance(50),
                        None => self
                            .choice(cond)
                            .is_some_and(|ch| self.on_path >= ch.path.len()),
                    },
                    Some(cond) => self.observe_eval(c, cond)?.is_true(),
                };
                if go {
                    self.exit(*is_continue, label.as_deref())?;
                }
            }
            // RAISE NOTICE arguments and ASSERT: no effect on data,
            // but what they read is output.
            Node::Eval(exprs) => match exprs.first().map(|e| e.snip.text.as_str()) {
                // A handler's conditions: read by `handle`.
                Some(t) if t.starts_with(HANDLER_MARK) => {}
                Some(ASSERT_MARK) => self.assert(c, &exprs[1..])?,
                Some(t) if t.starts_with(RETURN_VALUE_MARK) => {
                    self.return_value(c, &t[RETURN_VALUE_MARK.len()..], &exprs[1..])?
                }
                Some(RETURN_NEXT_MARK) => {
                    if let Some(r) = self
                        .routine_label()
                        .and_then(|l| self.returning.get_mut(&l))
                    {
                        r.next = true;
                    }
                }
                _ if self.observe => {
                    for e in exprs {
                        self.observe_eval(c, e)?;
                    }
                }
                _ => {}
            },
            Node::Begin { .. } => {}
            Node::Assign { var, expr } if expr.snip.text.starts_with(CURSOR_MARK) => {
                self.cursor(c, var, &expr.snip.text[CURSOR_MARK.len()..])?
            }
            Node::Assign { var, expr } if expr.snip.text == ROW_COUNT_MARK => {
                let v = Val::typed(self.row_count.to_string(), &postgres::types::Type::INT8);
                self.vars
                    .insert(var.trim_start_matches(':').to_lowercase(), v);
            }
            // Run as written: the deferral is PostgreSQL's to apply.
            Node::SetConstraints {
                names, deferred, ..
            } => set_constraints(c, names.as_deref(), *deferred)?,
            Node::Assign { var, expr } => self.assign(c, var, expr)?,
            // COMMIT splits programs before they get here; RETURN ends
            // the routine.
            Node::Commit { .. } | Node::Return { .. } => {
                self.frames.clear();
            }
            Node::Abort => {
                return Err(Halt::Db {
                    code: "P0001".into(),
                    message: "RAISE".into(),
                    source: None,
                })
            }
            Node::Block {
                label,
                body,
                handlers,
                ..
            } => {
                // An inlined routine (`f()`, `inline_one`): its rows start
                // empty for this call.
                if let Some(l) = label.as_deref().filter(|l| l.ends_with("()")) {
                    self.returning.insert(l.to_string(), Default::default());
                    self.ret_values.insert(l.to_string(), None);
                }
                self.enter_block(c, label.as_deref(), body, handlers.as_deref())?
            }
            Node::Call { .. } => {
                return Err(Halt::Unsupported(
                    "a routine call that was not inlined".into(),
                ))
            }
            Node::Open(query) => return Ok(Some(Step::Ran(Box::new(self.open(c, query)?)))),
            Node::Prefix(_) => return Err(Halt::Unsupported("an EXCEPTION block prefix".into())),
        }
        Ok(None)
    }

    /// IF/ELSIF/ELSE: the first branch whose condition is true, its
    /// conditions' values kept for a later "why it rolled back".
    fn branch(
        &mut self,
        c: &mut Client,
        branches: &'p [(Option<ProcExpr>, Vec<Node>)],
    ) -> Result<(), Halt> {
        let mut trail = vec![];
        for (cond, body) in branches {
            let take = match cond {
                None => true,
                // An application choice: the branch the schedule takes.
                Some(cond) if self.choice(cond).is_some() => {
                    let next = self
                        .choice(cond)
                        .and_then(|ch| ch.path.get(self.on_path))
                        .cloned();
                    let (take, how) = match self.draws.as_mut() {
                        Some(r) => (r.chance(50), "drawn at random"),
                        None => (
                            next.is_some() && first_statement(body) == next,
                            "as the schedule goes",
                        ),
                    };
                    trail.push(format!(
                        "`{}` was {take} (an application choice, {how})",
                        short_text(&cond.snip.text)
                    ));
                    take
                }
                Some(cond) => {
                    let v = self.observe_eval(c, cond)?;
                    let said = match &v.text {
                        None => "NULL".to_string(),
                        Some(_) if v.is_true() => "true".to_string(),
                        Some(t) if t == "f" => "false".to_string(),
                        Some(t) => t.clone(),
                    };
                    trail.push(format!("`{}` was {said}", short_text(&cond.snip.text)));
                    v.is_true()
                }
            };
            self.last_if.clone_from(&trail);
            if take {
                self.frames.push(Frame::Block {
                    nodes: body,
                    at: 0,
                    label: None,
                    handler: None,
                });
                break;
            }
        }
        Ok(())
    }

    /// A block: with handlers, a savepoint to roll back to (PL/pgSQL's
    /// subtransaction).
    fn enter_block(
        &mut self,
        c: &mut Client,
        label: Option<&'p str>,
        body: &'p [Node],
        handlers: Option<&'p [Vec<Node>]>,
    ) -> Result<(), Halt> {
        let handler = match handlers {
            Some(h) if !h.is_empty() => {
                self.savepoints += 1;
                let n = self.savepoints;
                savepoint(c, &format!("SAVEPOINT isolint_block_{n}"))?;
                Some((h, n))
            }
            _ => None,
        };
        self.frames.push(Frame::Block {
            nodes: body,
            at: 0,
            label,
            handler,
        });
        Ok(())
    }

    /// A loop reached: its head evaluated (a FOR's bounds, its query — a
    /// step of its own —, its array) and its frame pushed.
    fn start_loop(
        &mut self,
        c: &mut Client,
        head: &'p LoopHead,
        body: &'p [Node],
        label: Option<&'p str>,
    ) -> Result<Option<Step>, Halt> {
        if label == Some(PER_ROW_LABEL) {
            return self.per_row(body);
        }
        let kind = match head {
            LoopHead::Plain => LoopKind::Plain,
            LoopHead::While(cond) => LoopKind::While(cond),
            LoopHead::Range { var, bounds } => {
                let n: Vec<i64> = bounds
                    .iter()
                    .map(|b| {
                        let v = self.observe_eval(c, b)?;
                        v.text
                            .as_deref()
                            .and_then(|t| t.parse().ok())
                            .ok_or_else(|| {
                                Halt::Unsupported(format!(
                                    "loop bound `{}` is not an integer",
                                    b.snip.text.trim()
                                ))
                            })
                    })
                    .collect::<Result<_, _>>()?;
                let (lo, hi) = match n.as_slice() {
                    [lo, hi, ..] => (*lo, *hi),
                    _ => return Err(Halt::Unsupported("FOR loop without two bounds".into())),
                };
                LoopKind::Range {
                    var,
                    next: lo,
                    last: hi,
                    by: n.get(2).copied().unwrap_or(1).max(1),
                }
            }
            LoopHead::Query { var, query } => {
                // The query runs once, before the first
                // iteration (PostgreSQL opens a cursor on one
                // snapshot): a step of its own.
                let ran = self.run_stmt(c, query)?;
                let rows = std::mem::take(&mut self.last_rows);
                self.frames.push(Frame::Loop {
                    body,
                    at: 0,
                    label,
                    fresh: true,
                    kind: LoopKind::Rows { var, rows, next: 0 },
                });
                return Ok(Some(Step::Ran(Box::new(ran))));
            }
            LoopHead::Array { var, expr } => {
                // The array is evaluated once, before the
                // first iteration; its elements are the rows.
                let (e, params) = self.bind(expr.expr.clone())?;
                let sql = format!("SELECT unnest({e})");
                let ((rows, _), params) = retype::run_typed(c, &params, |c, p| query(c, &sql, p))
                    .map_err(|err| Halt::from_db(&err, Some(sql.clone())))?;
                let rows: Vec<Vec<(String, Val)>> = rows
                    .into_iter()
                    .map(|(names, r)| names.into_iter().zip(r).collect())
                    .collect();
                let values = rows
                    .iter()
                    .map(|r| r.iter().map(|(_, v)| v.clone()).collect())
                    .collect();
                self.record(expr, sql, params, values);
                LoopKind::Rows { var, rows, next: 0 }
            }
        };
        self.frames.push(Frame::Loop {
            body,
            at: 0,
            label,
            fresh: true,
            kind,
        });
        Ok(None)
    }

    /// An error inside EXCEPTION blocks, as PL/pgSQL handles it: from the
    /// innermost block out, each block's subtransaction is rolled back
    /// (its savepoint) and the first of its handlers whose conditions
    /// match the SQLSTATE runs (`OTHERS` matches all but query_canceled
    /// and assert_failure; a class name, or a `SQLSTATE 'xx000'`, its
    /// class). When none does, the error stops the program. Only errors
    /// of the database (and ASSERT, RAISE, STRICT) are caught; what the
    /// executor cannot run is not.
    fn handle(&mut self, c: &mut Client, h: Halt) -> Result<(), Halt> {
        let Halt::Db { code, message, .. } = &h else {
            return Err(h);
        };
        if code == "08000" {
            return Err(h);
        }
        let (code, message) = (code.clone(), message.clone());
        while let Some(at) = self.frames.iter().rposition(|f| {
            matches!(
                f,
                Frame::Block {
                    handler: Some(_),
                    ..
                }
            )
        }) {
            let Some(Frame::Block {
                handler: Some((handlers, n)),
                ..
            }) = self.frames.get(at)
            else {
                return Err(h);
            };
            let (handlers, n) = (*handlers, *n);
            self.frames.truncate(at);
            savepoint(c, &format!("ROLLBACK TO SAVEPOINT isolint_block_{n}"))?;
            savepoint(c, &format!("RELEASE SAVEPOINT isolint_block_{n}"))?;
            let caught = handlers.iter().find(|body| {
                let conds = match body.first() {
                    Some(Node::Eval(e)) => e.first().map(|x| x.snip.text.as_str()),
                    _ => None,
                };
                // A handler without its conditions (an AST built
                // elsewhere): what the test kit's `sqlgen` writes handlers for.
                conds
                    .and_then(|t| t.strip_prefix(HANDLER_MARK))
                    .map_or(code.starts_with("23") || code == "P0001", |t| {
                        super::errcodes::catches(t, &code)
                    })
            });
            if let Some(body) = caught {
                self.vars
                    .insert("sqlstate".into(), Val::untyped(code.clone()));
                self.vars
                    .insert("sqlerrm".into(), Val::untyped(message.clone()));
                self.frames.push(Frame::Block {
                    nodes: body,
                    at: 0,
                    label: None,
                    handler: None,
                });
                return Ok(());
            }
        }
        Err(h)
    }

    /// ASSERT cond [, message]: assert_failure (P0004) when the condition
    /// is false or NULL (PL/pgSQL's `plpgsql.check_asserts` is on by
    /// default).
    fn assert(&mut self, c: &mut Client, exprs: &[ProcExpr]) -> Result<(), Halt> {
        let Some(cond) = exprs.first() else {
            return Ok(());
        };
        let v = if self.observe {
            self.observe_eval(c, cond)?
        } else {
            self.eval(c, &cond.expr)?
        };
        if v.is_true() {
            return Ok(());
        }
        let message = match exprs.get(1) {
            Some(m) => self.eval(c, &m.expr)?.text.unwrap_or_default(),
            None => "assertion failed".into(),
        };
        Err(Halt::Db {
            code: "P0004".into(),
            message,
            source: Some(statement_text(&cond.snip.text)),
        })
    }

    /// OPEN: the cursor's query as a real cursor of the same name
    /// (`DECLARE c CURSOR FOR …`), so its snapshot is OPEN's, its rows
    /// (and row locks, FOR UPDATE) come at FETCH, and `WHERE CURRENT OF c`
    /// names its row, as in PL/pgSQL. A step: the statement the BTP reads
    /// with.
    fn open(&mut self, c: &mut Client, stmt: &Stmt) -> Result<Ran, Halt> {
        let source = statement_text(&stmt.snip.text);
        let name = self.opening.take().unwrap_or_else(|| {
            self.savepoints += 1;
            format!("isolint_cursor_{}", self.savepoints)
        });
        let (sql, params) = self.bind(stmt.sql.clone())?;
        let sent = weak_locks(&source, sql.to_string());
        let sent = format!("DECLARE {} CURSOR FOR {sent}", ident(&name));
        let (_, params) = retype::run_typed(c, &params, |c, p| query(c, &sent, p))
            .map_err(|e| Halt::from_db(&e, Some(source.clone())))?;
        Ok(Ran {
            source,
            sent,
            params,
            rows: vec![],
            affected: 0,
        })
    }

    /// The cursor marks (`CURSOR_MARK`): OPEN names the cursor the next
    /// `Node::Open` declares; FETCH/MOVE run as SQL on it (FOUND: a row
    /// fetched, or moved over); a FETCH target takes its column of the
    /// row fetched (NULL when there was none); CLOSE closes it.
    fn cursor(&mut self, c: &mut Client, var: &str, mark: &str) -> Result<(), Halt> {
        let var = var.trim_start_matches(':').to_lowercase();
        let mut words = mark.split_whitespace();
        match words.next() {
            Some("OPEN") => self.opening = Some(var),
            Some("CLOSE") => {
                savepoint(c, &format!("CLOSE {}", ident(&var)))?;
            }
            Some("INTO") => {
                let k: usize = words.next().and_then(|w| w.parse().ok()).unwrap_or(0);
                let n: usize = words.next().and_then(|w| w.parse().ok()).unwrap_or(1);
                if n == 1 && self.fetched.len() > 1 {
                    for (name, v) in &self.fetched {
                        self.vars
                            .insert(format!("{var}${}", name.to_lowercase()), v.clone());
                    }
                }
                let v = self
                    .fetched
                    .get(k)
                    .map_or_else(Val::null, |(_, v)| v.clone());
                let v = self.as_declared(c, &var, v)?;
                self.vars.insert(var, v);
            }
            Some(_) => {
                // `FETCH [direction] [FROM|IN] c` is SQL's FETCH too.
                let sql = mark.trim();
                let (rows, affected) =
                    query(c, sql, &[]).map_err(|e| Halt::from_db(&e, Some(sql.to_string())))?;
                let fetch = sql
                    .get(..5)
                    .is_some_and(|w| w.eq_ignore_ascii_case("FETCH"));
                self.found = if fetch {
                    !rows.is_empty()
                } else {
                    affected > 0
                };
                self.row_count = affected;
                self.fetched = rows
                    .into_iter()
                    .next()
                    .map(|(names, r)| names.into_iter().zip(r).collect())
                    .unwrap_or_default();
                // `WHERE CURRENT OF c` reaches the executor as equalities
                // of the table's key with `:c$col` (`plenv::current_of`):
                // the fetched row's columns under the cursor's name.
                for (name, v) in &self.fetched {
                    self.vars
                        .insert(format!("{var}${}", name.to_lowercase()), v.clone());
                }
            }
            None => {}
        }
        Ok(())
    }

    /// EXIT / CONTINUE [label]: leaves frames up to the loop (or labelled
    /// block) it names.
    fn exit(&mut self, is_continue: bool, label: Option<&str>) -> Result<(), Halt> {
        while let Some(f) = self.frames.last_mut() {
            let (is_loop, l) = match f {
                Frame::Loop { label, .. } => (true, *label),
                Frame::Block { label, .. } => (false, *label),
            };
            let hit = match label {
                None => is_loop,
                Some(want) => l.is_some_and(|l| l.eq_ignore_ascii_case(want)),
            };
            if hit {
                if is_continue && is_loop {
                    if let Frame::Loop { at, .. } = f {
                        *at = usize::MAX; // ends this iteration
                    }
                } else {
                    self.frames.pop();
                }
                return Ok(());
            }
            self.frames.pop();
        }
        Err(Halt::Unsupported("EXIT outside a loop".into()))
    }

    /// The statement with `:name` placeholders as `$n` and FOUND as a
    /// parameter; the values in order.
    fn bind<T: sqlparser::ast::VisitMut>(&self, mut node: T) -> Result<(T, Vec<Val>), Halt> {
        let mut names: Vec<String> = vec![];
        let mut missing: Option<String> = None;
        let mut unknown: Option<String> = None;
        let _ = visit_expressions_mut(&mut node, |e| {
            let name = match e {
                Expr::Value(v) => match &v.value {
                    Value::Placeholder(p) => Some(p.trim_start_matches(':').to_lowercase()),
                    _ => None,
                },
                Expr::Identifier(i)
                    if i.quote_style.is_none() && i.value.eq_ignore_ascii_case("found") =>
                {
                    Some("found".to_string())
                }
                _ => None,
            };
            if let Some(name) = name {
                if name != "found" && !self.vars.contains_key(&name) {
                    missing.get_or_insert(name.clone());
                }
                if srf::is_call_result(&name) && !self.called.contains(&name) {
                    unknown.get_or_insert_with(|| format!("the value of the routine call `:{name}` is not known when its statement is sent: a VOLATILE routine called in a statement that reads a table runs per row, after the statement's snapshot, which the replay does not run"));
                }
                if let Some(why) = self.unknown.get(&name) {
                    if self.vars.get(&name).is_none_or(|v| v.text.is_none()) {
                        unknown.get_or_insert(why.clone());
                    }
                }
                // One `$n` per occurrence: PostgreSQL infers each one's
                // type from where it stands (`id = :k` and `count(*) + :k`
                // would deduce int4 and int8 for one `$n`, an error).
                names.push(name);
                let k = names.len() - 1;
                *e = Expr::Value(Value::Placeholder(format!("${}", k + 1)).with_empty_span());
            }
            ControlFlow::<()>::Continue(())
        });
        if let Some(why) = unknown {
            return Err(Halt::Unsupported(why));
        }
        if let Some(m) = missing {
            return Err(Halt::Unsupported(format!("no value for `:{m}`")));
        }
        let vals = names
            .iter()
            .map(|n| match n.as_str() {
                "found" => Val::boolean(self.found),
                _ => self.vars.get(n).cloned().unwrap_or_else(Val::null),
            })
            .collect();
        Ok((node, vals))
    }

    /// `var := expr`. After an inlined routine (`inline_one` assigns the
    /// call's text as NULL to its result variable), the variable gets the
    /// value the routine's RETURN gave (`return_value`); when none ran it
    /// is marked unknown, so that a use stops the program (never NULL).
    /// The rows a routine's RETURN QUERYs returned are what a call in
    /// FROM reads (`srf`).
    fn assign(&mut self, c: &mut Client, var: &str, expr: &'p ProcExpr) -> Result<(), Halt> {
        let var = var.trim_start_matches(':').to_lowercase();
        let label = srf::call_label(&expr.snip.text);
        let after_call = matches!(&expr.expr, Expr::Value(v) if v.value == Value::Null)
            && self.ret_values.contains_key(&label);
        if !after_call {
            let v = self.observe_eval(c, expr)?;
            let v = self.as_declared(c, &var, v)?;
            self.unknown.remove(&var);
            self.vars.insert(var, v);
            return Ok(());
        }
        let rows = self.returning.remove(&label);
        let value = self.ret_values.remove(&label).flatten();
        let value = match (value, rows) {
            (Some(v), rows) => {
                self.unknown.remove(&var);
                if srf::is_call_result(&var) {
                    // A scalar routine in FROM reads one row: its value.
                    self.results
                        .insert(var.clone(), srf::Returned::scalar(&label, &v, rows));
                }
                v
            }
            (None, rows) => {
                if srf::is_call_result(&var) {
                    match rows {
                        Some(r) => self.results.insert(var.clone(), r),
                        None => self.results.remove(&var),
                    };
                }
                self.unknown.insert(
                    var.clone(),
                    format!("the value of `{}` is not known: the routine ended without a RETURN value the replay evaluates (OUT parameters or no RETURN expression), so the replay stops rather than read NULL", short_text(&expr.snip.text)),
                );
                Val::null()
            }
        };
        self.called.insert(var.clone());
        self.vars.insert(var, value);
        Ok(())
    }

    /// The call of a STABLE or IMMUTABLE routine in a statement that
    /// names a table, which PostgreSQL may run once per row (the
    /// front-end's `$per_row` loop before the statement): run once, its
    /// value standing for every row. That is PostgreSQL's value only
    /// when the arguments name no column of the row; otherwise the
    /// program stops, saying so. (A VOLATILE one runs after the
    /// statement: `bind` refuses the statement, whose value is not known
    /// yet.)
    fn per_row(&mut self, body: &'p [Node]) -> Result<Option<Step>, Halt> {
        let mut column = None;
        for n in body {
            let Node::Assign { expr, .. } = n else { break };
            let mut e = expr.expr.clone();
            let _ = visit_expressions_mut(&mut e, |x| {
                if matches!(x, Expr::Identifier(_) | Expr::CompoundIdentifier(_)) {
                    column.get_or_insert_with(|| x.to_string());
                }
                ControlFlow::<()>::Continue(())
            });
        }
        if let Some(col) = column {
            return Err(Halt::Unsupported(format!(
                "a routine called per row with the row's column `{col}` as an argument: its value differs per row, which the replay does not run"
            )));
        }
        self.frames.push(Frame::Block {
            nodes: body,
            at: 0,
            label: None,
            handler: None,
        });
        Ok(None)
    }

    /// `RETURN expr` of an inlined routine (`RETURN_VALUE_MARK`, then
    /// ` type` when the routine declares one): its value, converted to
    /// the declared type as PL/pgSQL converts it, is the call's result.
    /// In the program itself (no routine inlined around it) it is only
    /// observed, as before.
    fn return_value(
        &mut self,
        c: &mut Client,
        ty: &str,
        exprs: &'p [ProcExpr],
    ) -> Result<(), Halt> {
        let Some(e) = exprs.first() else {
            return Ok(());
        };
        let Some(label) = self.routine_label() else {
            if self.observe {
                self.observe_eval(c, e)?;
            }
            return Ok(());
        };
        let mut v = self.observe_eval(c, e)?;
        let ty = ty.trim();
        if !ty.is_empty() {
            let sql = format!("SELECT ($1)::{ty}");
            let (rows, _) = query(c, &sql, std::slice::from_ref(&v))
                .map_err(|err| Halt::from_db(&err, Some(sql.clone())))?;
            v = first_value(rows);
        }
        self.ret_values.insert(label, Some(v));
        Ok(())
    }

    /// The inlined routine the executor is in (its block's label, `f()`).
    fn routine_label(&self) -> Option<String> {
        self.frames.iter().rev().find_map(|f| match f {
            Frame::Block { label: Some(l), .. } if l.ends_with("()") => Some(l.to_string()),
            _ => None,
        })
    }

    /// A `RETURN QUERY` of an inlined routine ran: its rows (from
    /// `last_rows`) are kept for a call in FROM, with its columns, which
    /// PostgreSQL describes also when no row came back.
    fn keep_returned(&mut self, c: &mut Client, ran: &Ran) -> Result<(), Halt> {
        let Some(label) = self.routine_label() else {
            return Ok(());
        };
        let columns: Vec<(String, u32)> = match self.last_rows.first() {
            Some(r) => r.iter().map(|(n, v)| (n.clone(), v.oid)).collect(),
            None => {
                let types: Vec<postgres::types::Type> =
                    ran.params.iter().map(Val::param_type).collect();
                let st = c
                    .prepare_typed(&ran.sent, &types)
                    .map_err(|e| Halt::from_db(&e, Some(ran.source.clone())))?;
                st.columns()
                    .iter()
                    .map(|col| (col.name().to_string(), col.type_().oid()))
                    .collect()
            }
        };
        self.returning
            .entry(label)
            .or_default()
            .add(columns, ran.rows.clone());
        Ok(())
    }

    fn run_stmt(&mut self, c: &mut Client, stmt: &Stmt) -> Result<Ran, Halt> {
        let source = statement_text(&stmt.snip.text);
        let mut sql = stmt.sql.clone();
        if !self.results.is_empty() {
            srf::substitute(&mut sql, &self.results, &mut self.vars, &mut self.srf_vars)
                .map_err(Halt::Unsupported)?;
        }
        let (sql, params) = self.bind(sql)?;
        let sent = weak_locks(&source, sql.to_string());
        let sent = with_index_predicate(&stmt.snip, sent);
        let ((rows, affected), params) = retype::run_typed(c, &params, |c, p| query(c, &sent, p))
            .map_err(|e| Halt::from_db(&e, Some(source.clone())))?;
        self.found = affected > 0 || !rows.is_empty();
        self.row_count = affected;
        if !stmt.into.is_empty() {
            // PL/pgSQL: INTO STRICT wants exactly one row; an INSERT,
            // UPDATE or DELETE … RETURNING INTO at most one, STRICT or not.
            let strict = into_strict(&stmt.snip.text);
            let dml = !matches!(stmt.sql, sqlparser::ast::Statement::Query(_));
            let err = |code: &str, message: &str| Halt::Db {
                code: code.into(),
                message: message.into(),
                source: Some(source.clone()),
            };
            if rows.len() > 1 && (strict || dml) {
                return Err(err("P0003", "query returned more than one row"));
            }
            if rows.is_empty() && strict {
                return Err(err("P0002", "query returned no rows"));
            }
            let first = rows.first();
            let n = first.map_or(0, |(_, r)| r.len());
            if stmt.into.len() == 1 && n > 1 {
                // One target, several columns: a record `r`, read as `:r$col`.
                if let Some((cols, r)) = first {
                    for (name, v) in cols.iter().zip(r) {
                        self.vars.insert(
                            format!("{}${}", stmt.into[0], name.to_lowercase()),
                            v.clone(),
                        );
                    }
                }
            } else {
                // No row: NULLs of the columns' types, as PL/pgSQL's
                // declared variables are (`retype`: an untyped NULL beside
                // another untyped value cannot be typed, `b - amt`).
                let types = match first {
                    None => retype::result_types(c, &sent, &params),
                    Some(_) => vec![],
                };
                for (i, var) in stmt.into.iter().enumerate() {
                    let v = first
                        .and_then(|(_, r)| r.get(i).cloned())
                        .unwrap_or_else(|| retype::null_of(types.get(i)));
                    let var = var.to_lowercase();
                    let v = self.as_declared(c, &var, v)?;
                    self.unknown.remove(&var);
                    self.vars.insert(var, v);
                }
            }
        }
        self.last_rows = rows
            .iter()
            .map(|(names, r)| names.iter().cloned().zip(r.iter().cloned()).collect())
            .collect();
        Ok(Ran {
            source,
            sent,
            params,
            rows: rows.into_iter().map(|(_, r)| r).collect(),
            affected,
        })
    }

    /// `eval`, recorded for `step` (`record`).
    fn observe_eval(&mut self, c: &mut Client, cond: &ProcExpr) -> Result<Val, Halt> {
        let v = self.eval(c, &cond.expr)?;
        self.record(
            cond,
            format!("SELECT ({})", cond.expr),
            vec![],
            vec![vec![v.clone()]],
        );
        Ok(v)
    }

    /// When observing and `cond` may read a table: what its evaluation
    /// returned, queued as a step of its own (`observing`).
    fn record(&mut self, cond: &ProcExpr, sent: String, params: Vec<Val>, rows: Vec<Vec<Val>>) {
        if !self.observe || !may_read(&cond.expr) {
            return;
        }
        self.evals.push_back(Ran {
            source: statement_text(&cond.snip.text),
            sent,
            params,
            affected: rows.len() as u64,
            rows,
        });
    }

    /// `SELECT (<expr>)` with the current bindings, in a savepoint: an
    /// expression over values of unknown type may fail to resolve, and
    /// then is retried with explicit types (`retype::run_typed`).
    fn eval(&self, c: &mut Client, expr: &Expr) -> Result<Val, Halt> {
        let (e, params) = self.bind(expr.clone())?;
        // A variable or parameter alone keeps its value and type (`SELECT
        // ($1)` would make an untyped one text or numeric).
        if let (Expr::Value(v), [p]) = (&e, params.as_slice()) {
            if matches!(v.value, Value::Placeholder(_)) {
                return Ok(p.clone());
            }
        }
        let sql = format!("SELECT ({e})");
        let sp = |c: &mut Client, s: &str| c.batch_execute(s).map_err(|e| Halt::from_db(&e, None));
        sp(c, "SAVEPOINT isolint_eval")?;
        match retype::run_typed(c, &params, |c, p| query(c, &sql, p)) {
            Ok(((rows, _), _)) => {
                sp(c, "RELEASE SAVEPOINT isolint_eval")?;
                Ok(first_value(rows))
            }
            Err(e) => {
                sp(c, "ROLLBACK TO SAVEPOINT isolint_eval")?;
                Err(Halt::from_db(&e, Some(sql)))
            }
        }
    }
}

/// `… INTO STRICT …` in the statement as written.
fn into_strict(text: &str) -> bool {
    let words: Vec<String> = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(|w| w.to_ascii_uppercase())
        .collect();
    words.windows(2).any(|w| w[0] == "INTO" && w[1] == "STRICT")
}

fn savepoint(c: &mut Client, sql: &str) -> Result<(), Halt> {
    c.batch_execute(sql).map_err(|e| Halt::from_db(&e, None))
}

/// The types PostgreSQL infers for the parameters of the program's SQL
/// statements, by parameter name (those it cannot infer, or statements it
/// cannot prepare, are left out). Run on a connection whose search_path
/// has the tables; prepares, never executes.
pub fn param_types(c: &mut Client, program: &[Node]) -> BTreeMap<String, postgres::types::Type> {
    let mut stmts: Vec<&Stmt> = vec![];
    each_stmt(program, &mut stmts);
    let mut out = BTreeMap::new();
    for st in stmts {
        let mut node = st.sql.clone();
        let names = numbered(&mut node);
        infer(c, &node.to_string(), names, &mut out);
    }
    // Then the conditions and assignments, as `SELECT expr`: a parameter
    // only a condition reads (graphile-worker's `job_key_mode IN
    // ('replace', …)`) is typed there, text here, not a made-up number.
    let mut conds: Vec<&ProcExpr> = vec![];
    each_cond(program, &mut conds);
    for cond in conds {
        let mut bare = &cond.expr;
        while let Expr::Nested(e) = bare {
            bare = e;
        }
        // `v := :p` says nothing of `:p`'s type (PostgreSQL would say text).
        if matches!(bare, Expr::Value(_)) {
            continue;
        }
        let mut e = cond.expr.clone();
        let names = numbered(&mut e);
        // One parameter at a time, the others NULL: `$1 IS NULL OR $2 IN
        // ('replace', …)` as a whole is refused ("could not determine data
        // type of parameter $1"), `NULL IS NULL OR $1 IN (…)` types $1.
        for (k, name) in names.iter().enumerate() {
            let mut one = e.clone();
            let _ = visit_expressions_mut(&mut one, |x| {
                if let Expr::Value(v) = x {
                    if let Value::Placeholder(p) = &v.value {
                        let mine = *p == format!("${}", k + 1);
                        *x = if mine {
                            Expr::Value(Value::Placeholder("$1".into()).with_empty_span())
                        } else {
                            Expr::Value(Value::Null.with_empty_span())
                        };
                    }
                }
                ControlFlow::<()>::Continue(())
            });
            infer(c, &format!("SELECT {one}"), vec![name.clone()], &mut out);
        }
    }
    out
}

/// Each `:name` placeholder of `node` written `$k` (one number per name);
/// the names in number order, lower-case.
fn numbered<T: sqlparser::ast::VisitMut>(node: &mut T) -> Vec<String> {
    let mut names: Vec<String> = vec![];
    let _ = visit_expressions_mut(node, |e| {
        if let Expr::Value(v) = e {
            if let Value::Placeholder(p) = &v.value {
                let name = p.trim_start_matches(':').to_lowercase();
                let k = names.iter().position(|n| *n == name).unwrap_or_else(|| {
                    names.push(name);
                    names.len() - 1
                });
                *e = Expr::Value(Value::Placeholder(format!("${}", k + 1)).with_empty_span());
            }
        }
        ControlFlow::<()>::Continue(())
    });
    names
}

/// The parameter types PostgreSQL infers when it prepares `sql`, added to
/// `out` for names not typed yet (text it cannot prepare adds nothing).
fn infer(
    c: &mut Client,
    sql: &str,
    names: Vec<String>,
    out: &mut BTreeMap<String, postgres::types::Type>,
) {
    if let Ok(prepared) = c.prepare(sql) {
        for (name, ty) in names.into_iter().zip(prepared.params()) {
            if ty.oid() != 0 && *ty != postgres::types::Type::UNKNOWN {
                out.entry(name).or_insert_with(|| ty.clone());
            }
        }
    }
}

/// The conditions and assigned expressions of `nodes` (IF, WHILE, EXIT,
/// `:=`, FOR bounds and arrays, RAISE/ASSERT arguments).
fn each_cond<'a>(nodes: &'a [Node], out: &mut Vec<&'a ProcExpr>) {
    for n in nodes {
        match n {
            Node::If(bs) => {
                for (c, b) in bs {
                    out.extend(c.iter());
                    each_cond(b, out);
                }
            }
            Node::Loop { head, body, .. } => {
                match head {
                    LoopHead::While(c) | LoopHead::Array { expr: c, .. } => out.push(c),
                    LoopHead::Range { bounds, .. } => out.extend(bounds.iter()),
                    _ => {}
                }
                each_cond(body, out);
            }
            Node::Exit { when, .. } => out.extend(when.iter()),
            Node::Assign { expr, .. } => out.push(expr),
            Node::Eval(cs) => out.extend(cs.iter()),
            Node::Block { body, handlers, .. } => {
                each_cond(body, out);
                handlers.iter().flatten().for_each(|h| each_cond(h, out));
            }
            Node::Prefix(b) => each_cond(b, out),
            _ => {}
        }
    }
}

fn each_stmt<'a>(nodes: &'a [Node], out: &mut Vec<&'a Stmt>) {
    for n in nodes {
        match n {
            Node::Sql(s) | Node::Open(s) => out.push(s),
            Node::If(bs) => bs.iter().for_each(|(_, b)| each_stmt(b, out)),
            Node::Loop { head, body, .. } => {
                if let LoopHead::Query { query, .. } = head {
                    out.push(query);
                }
                each_stmt(body, out);
            }
            Node::Block { body, handlers, .. } => {
                each_stmt(body, out);
                handlers.iter().flatten().for_each(|h| each_stmt(h, out));
            }
            Node::Prefix(b) => each_stmt(b, out),
            _ => {}
        }
    }
}

/// The front-end parses FOR NO KEY UPDATE / FOR KEY SHARE as FOR UPDATE /
/// FOR SHARE (`statement::normalize_locks`); the database must get the
/// lock the program asks for, or replay would lock more than the program.
/// `ON CONFLICT (cols) WHERE pred`: sqlparser's tree has no place for the
/// index predicate (`crate::frontend::sql::conflict_index_predicate`), so
/// it is put back after the conflict columns, where PostgreSQL needs it to
/// infer the same partial unique index. A predicate naming a variable
/// stays out (PostgreSQL then reports the missing arbiter: replay halts).
fn with_index_predicate(snip: &crate::frontend::sql::Snippet, sent: String) -> String {
    let none = crate::model::error::SourceFile::new("", "");
    let Ok(Some(pred)) = crate::frontend::sql::conflict_index_predicate(&none, snip) else {
        return sent;
    };
    let variable = sqlparser::ast::visit_expressions(&pred, |e| match e {
        Expr::Value(v) if matches!(v.value, Value::Placeholder(_)) => ControlFlow::Break(()),
        _ => ControlFlow::Continue(()),
    });
    let Some(on) = sent.find("ON CONFLICT") else {
        return sent;
    };
    match sent[on..].find(')') {
        Some(close) if variable.is_continue() => {
            let at = on + close + 1;
            format!("{} WHERE {pred}{}", &sent[..at], &sent[at..])
        }
        _ => sent,
    }
}

fn weak_locks(source: &str, sent: String) -> String {
    let upper: String = source.to_ascii_uppercase();
    if upper.contains("FOR NO KEY UPDATE") {
        sent.replacen("FOR UPDATE", "FOR NO KEY UPDATE", 1)
    } else if upper.contains("FOR KEY SHARE") {
        sent.replacen("FOR SHARE", "FOR KEY SHARE", 1)
    } else {
        sent
    }
}

type Rows = Vec<(Vec<String>, Vec<Val>)>;

/// A condition's text on one line, at most 120 characters.
fn short_text(text: &str) -> String {
    let one: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match one.char_indices().nth(120) {
        Some((i, _)) => format!("{}…", &one[..i]),
        None => one,
    }
}

/// The first column of the first row. A NULL comes back untyped:
/// `SELECT (NULL)` (a DECLARE without a default) says text, and a later
/// `coalesce(:v, 0)` would fail on it.
fn first_value(rows: Rows) -> Val {
    rows.into_iter()
        .next()
        .and_then(|(_, r)| r.into_iter().next())
        .filter(|v| v.text.is_some())
        .unwrap_or_else(Val::null)
}

/// Runs `sql` with `params` (text format, each with its type): the rows
/// with their column names, and the rows affected.
pub fn query(c: &mut Client, sql: &str, params: &[Val]) -> Result<(Rows, u64), postgres::Error> {
    let typed: Vec<(&Val, postgres::types::Type)> =
        params.iter().map(|v| (v, v.param_type())).collect();
    let mut it = c.query_typed_raw(sql, typed)?;
    let mut rows = vec![];
    while let Some(row) = it.next()? {
        let names: Vec<String> = row.columns().iter().map(|c| c.name().to_string()).collect();
        let mut vals = vec![];
        for i in 0..row.len() {
            vals.push(row.try_get::<_, Val>(i)?);
        }
        rows.push((names, vals));
    }
    let affected = it.rows_affected().unwrap_or(rows.len() as u64);
    Ok((rows, affected))
}

/// SET CONSTRAINTS, run as written: the deferral is PostgreSQL's to apply.
fn set_constraints(c: &mut Client, names: Option<&[String]>, deferred: bool) -> Result<(), Halt> {
    let which = names.as_ref().map_or("ALL".to_string(), |n| {
        n.iter()
            .map(|x| format!("\"{}\"", x.replace('"', "\"\"")))
            .collect::<Vec<_>>()
            .join(", ")
    });
    let mode = if deferred { "DEFERRED" } else { "IMMEDIATE" };
    c.batch_execute(&format!("SET CONSTRAINTS {which} {mode}"))
        .map_err(|e| Halt::from_db(&e, None))?;
    Ok(())
}

/// The first SQL statement `body` runs, as a step names it; `None` when
/// a condition decides it first (an IF or loop before any statement).
/// Whether `nodes` hold a query (at any depth).
fn has_sql(nodes: &[Node]) -> bool {
    nodes.iter().any(|n| match n {
        Node::Sql(_) | Node::Open(_) | Node::Call { .. } => true,
        Node::If(bs) => bs.iter().any(|(c, b)| c.is_some() || has_sql(b)),
        Node::Loop { .. } => true,
        Node::Block { body, handlers, .. } => {
            has_sql(body) || handlers.iter().flatten().any(|h| has_sql(h))
        }
        Node::Prefix(b) => has_sql(b),
        Node::Assign { .. } | Node::Eval(_) | Node::Exit { .. } => true,
        _ => false,
    })
}

fn first_statement(body: &[Node]) -> Option<String> {
    for n in body {
        match n {
            Node::Sql(s) | Node::Open(s) => return Some(statement_text(&s.snip.text)),
            Node::Block { body, .. } => return first_statement(body),
            Node::If(_) | Node::Loop { .. } | Node::Call { .. } | Node::Prefix(_) => return None,
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod index_predicate_tests {
    #[test]
    fn the_index_predicate_is_put_back() {
        let snip = crate::frontend::sql::Snippet {
            text: "INSERT INTO q (id, k) VALUES (1, 2) ON CONFLICT (k) WHERE NOT done DO NOTHING"
                .into(),
            offset: 0,
            parsed: None,
        };
        let sent = "INSERT INTO q (id, k) VALUES (1, 2) ON CONFLICT(k) DO NOTHING".to_string();
        assert_eq!(
            super::with_index_predicate(&snip, sent),
            "INSERT INTO q (id, k) VALUES (1, 2) ON CONFLICT(k) WHERE NOT done DO NOTHING"
        );
    }
}
