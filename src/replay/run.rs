//! Running transactions on a scratch schema: seed it, drive k sessions
//! through an interleaving, read every table back; run the same
//! transactions one after the other in every order; compare.
//!
//! "Not serializable" here is about outcomes: a concurrent run is
//! reproduced as an anomaly when no serial order of its committed
//! transactions gives every transaction the same observations (the rows
//! each statement returned and the number it affected, in order) and the
//! database the same final state. That is weaker evidence than a cycle in
//! the serialization graph (Theorem 3.2) in one direction only: different
//! outcomes prove the run is not equivalent to any serial one; equal
//! outcomes may hide a cycle whose values happen to coincide, which is why
//! seeds and parameters are chosen distinct.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use postgres::Client;

use super::executor::{Halt, Ran, Step};
use super::scratch::{db_diag, ident, Scratch, State};
use super::session::{Reply, Session};
use super::value::Val;
use crate::frontend::sql::ast::Node;
use crate::model::error::Result;
use crate::model::isolation::Level;

/// One transaction to run: a program instance.
#[derive(Debug, Clone)]
pub struct Txn {
    /// For people: `T1 = Amalgamate`.
    pub name: String,
    pub program: Arc<Vec<Node>>,
    /// Parameters by name (lower case, without `:`).
    pub params: BTreeMap<String, Val>,
    /// Conditions and expressions that read tables (IF, WHILE, EXIT WHEN,
    /// `:=`, RAISE arguments) are steps of their own with their value as
    /// what they observed ([`Executor::observing`]); off, they run inside
    /// the step of the next statement and are not compared.
    pub observe_conditions: bool,
    /// Application-decided choices with the schedule's path (`choices:`
    /// of the manifest; witnesses only).
    pub choices: Option<Arc<super::executor::Choices>>,
    /// The routine's DECLAREd variables with their types, resolved on
    /// the server (`retype::variable_types`; empty for a program that is
    /// no routine): the executor converts what they are assigned.
    pub declared: Arc<BTreeMap<String, super::retype::Declared>>,
}

impl Txn {
    /// The parameters as a person reads them: JDBC `?`s by their place
    /// (`?2 of statement 3`), without the declared choices the replay
    /// never reads (its path decides those conditions).
    pub fn shown_params(&self) -> Vec<(String, &Val)> {
        let names = super::params::display_names(&self.program);
        let choices: &[String] = self.choices.as_deref().map_or(&[], |c| c.names.as_slice());
        let used = super::params::used_parameters(&self.program, choices);
        let mut shown: Vec<(&String, &Val)> = self
            .params
            .iter()
            .filter(|(k, _)| !choices.contains(k) || used.contains(k))
            .collect();
        // `?`s in text order, after the named parameters.
        shown.sort_by_key(|(k, _)| {
            (
                k.strip_prefix("?@").and_then(|o| o.parse::<usize>().ok()),
                *k,
            )
        });
        shown
            .into_iter()
            .map(|(k, v)| (names.get(k).cloned().unwrap_or_else(|| k.clone()), v))
            .collect()
    }
}

/// A row of the initial database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeedRow {
    /// The table's name in the scratch schema.
    pub table: String,
    pub values: Vec<(String, Val)>,
}

/// What the driver does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Run the next SQL statement of transaction i (with the control flow
    /// before it).
    Step(usize),
    /// Run what is left of transaction i and commit it.
    Commit(usize),
}

/// What happened to one transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    Committed,
    /// The program rolled back by itself, and what led there.
    RolledBack(String),
    /// The database or the executor stopped it.
    Halted(Halt),
}

/// The outcome of one run.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Per transaction, the statements it ran and what they observed.
    pub observed: Vec<Vec<Ran>>,
    pub ends: Vec<End>,
    /// Every table's rows at the end.
    pub state: State,
    /// The order things happened in: (transaction, index into its
    /// `observed`), or `None` for its commit.
    pub trace: Vec<(usize, Option<usize>)>,
    /// What deviated from the plan: a statement that blocked, a step the
    /// program had no statement for, …
    pub notes: Vec<String>,
}

impl Outcome {
    pub fn committed(&self) -> Vec<usize> {
        (0..self.ends.len())
            .filter(|&i| self.ends[i] == End::Committed)
            .collect()
    }
}

/// How long the driver waits for a blocked statement it needs next
/// before giving up (PostgreSQL's deadlock check runs after 1 s).
pub const NEED_WAIT: Duration = Duration::from_secs(3);
/// The longest a statement may run without waiting for a lock.
const MAX_RUN: Duration = Duration::from_secs(60);

/// Is backend `pid` waiting for a lock (a row lock held by another open
/// transaction)? PostgreSQL says so in `pg_stat_activity`.
fn waits_for_lock(monitor: &mut Client, pid: i32) -> bool {
    monitor
        .query_opt(
            "SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'",
            &[&pid],
        )
        .is_ok_and(|r| r.is_some())
}

/// Sends a step or a commit and waits for the answer until it comes or
/// the session's backend waits for a lock (`None`: blocked). Asking the
/// server, not a timer, keeps a slow machine from calling a slow
/// statement blocked.
fn answer(s: &mut Session, commit: bool, monitor: &mut Client) -> Option<Reply> {
    let start = Instant::now();
    if let Some(r) = s.send(commit, Duration::from_millis(5)) {
        return Some(r);
    }
    while start.elapsed() < MAX_RUN {
        if let Some(r) = s.wait(Duration::from_millis(5)) {
            return Some(r);
        }
        if waits_for_lock(monitor, s.pid) {
            // It may have been granted meanwhile.
            return s.wait(Duration::from_millis(5));
        }
    }
    None
}

/// Empties every table, inserts `seed` (in order: parents first) and
/// puts the sequences at their run start ([`Scratch::reset_sequences`]).
/// Returns the seed pinned: each row with every column's value as
/// PostgreSQL stored it, defaults included. Runs seeded with the pinned
/// rows start from the same data: a `DEFAULT now()`, `random()` or
/// `nextval(…)` column is evaluated once, not once per run (issue 23:
/// re-evaluated defaults made serial runs differ and replay "reproduce"
/// an anomaly of two read-only transactions).
pub fn reset(scratch: &mut Scratch, seed: &[SeedRow]) -> Result<Vec<SeedRow>> {
    let names: Vec<String> = scratch.tables.iter().map(|t| ident(&t.name)).collect();
    let tables = scratch.tables.clone();
    let c = scratch.admin();
    if !names.is_empty() {
        c.batch_execute(&format!(
            "TRUNCATE {} RESTART IDENTITY CASCADE",
            names.join(", ")
        ))
        .map_err(|e| db_diag("cannot empty the scratch tables", &e))?;
    }
    let mut pinned = vec![];
    for row in seed {
        let table = tables.iter().find(|t| t.name == row.table);
        let column = |name: &str| table.and_then(|t| t.columns.iter().find(|c| c.name == name));
        // A generated column takes no value; pinned rows leave it out.
        let given: Vec<&(String, Val)> = row
            .values
            .iter()
            .filter(|(c, _)| !column(c).is_some_and(|c| c.generated))
            .collect();
        let cols: Vec<String> = given.iter().map(|(c, _)| ident(c)).collect();
        let params: Vec<Val> = given
            .iter()
            .map(|(name, v)| Val {
                // Typed as the column: PostgreSQL parses the text with the
                // column type's input function.
                text: v.text.clone(),
                oid: column(name).map_or(v.oid, |c| c.oid),
            })
            .collect();
        let marks: Vec<String> = (1..=params.len()).map(|i| format!("${i}")).collect();
        let overriding = if given
            .iter()
            .any(|(c, _)| column(c).is_some_and(|c| c.identity_always))
        {
            " OVERRIDING SYSTEM VALUE"
        } else {
            ""
        };
        let stored: Vec<&super::scratch::Column> = table
            .map(|t| t.columns.iter().filter(|c| !c.generated).collect())
            .unwrap_or_default();
        let returning: Vec<String> = stored
            .iter()
            .map(|c| format!("{}::text", ident(&c.name)))
            .collect();
        let values = if cols.is_empty() {
            " DEFAULT VALUES".to_string()
        } else {
            format!(
                " ({}){overriding} VALUES ({})",
                cols.join(", "),
                marks.join(", ")
            )
        };
        let returning = if returning.is_empty() {
            String::new()
        } else {
            format!(" RETURNING {}", returning.join(", "))
        };
        let sql = format!("INSERT INTO {}{values}{returning}", ident(&row.table));
        let (rows, _) = super::executor::query(c, &sql, &params).map_err(|e| {
            let listing: Vec<String> = row
                .values
                .iter()
                .map(|(c, v)| format!("{c} = {v}"))
                .collect();
            db_diag(
                &format!(
                    "cannot seed a row of {} ({})",
                    row.table,
                    listing.join(", ")
                ),
                &e,
            )
        })?;
        let values = match rows.first() {
            Some((_, vals)) if vals.len() == stored.len() && !stored.is_empty() => stored
                .iter()
                .zip(vals)
                .map(|(c, v)| {
                    let v = Val {
                        text: v.text.clone(),
                        oid: c.oid,
                    };
                    (c.name.clone(), v)
                })
                .collect(),
            _ => row.values.clone(),
        };
        pinned.push(SeedRow {
            table: row.table.clone(),
            values,
        });
    }
    scratch.reset_sequences()?;
    Ok(pinned)
}

/// What the comparison of a run with the serial runs leaves out: values a
/// run makes up by itself, which differ between any two runs whatever the
/// interleaving (issue 23, "replay that never invents"). A value is made
/// up when it is
/// - of a date/time type or a uuid and neither seeded nor a parameter
///   (`now()`, `CURRENT_TIMESTAMP`, `clock_timestamp()`,
///   `gen_random_uuid()` in a statement or in the default of a row a
///   transaction inserts);
/// - an integer drawn from a sequence during the run (in
///   [`Scratch::seq_ranges`]: `nextval`, serial and identity columns);
/// - a floating-point number neither seeded nor a parameter, when the
///   schema or a program calls `random`.
///
/// Every made-up value becomes one token: equal outcomes stay equal, so
/// the mask can only turn "reproduced" into "not reproduced", never the
/// reverse. The seeded rows need no mask: [`reset`] pins them.
#[derive(Debug, Clone, Default)]
pub struct Mask {
    known: std::collections::HashSet<String>,
    seqs: Vec<(i64, i64)>,
    floats: bool,
}

/// What a masked value shows.
pub const MADE_UP: &str = "<made up by the run>";

impl Mask {
    pub fn new(scratch: &Scratch, seed: &[SeedRow], txns: &[Txn]) -> Mask {
        let mut known: std::collections::HashSet<String> = seed
            .iter()
            .flat_map(|r| r.values.iter().filter_map(|(_, v)| v.text.clone()))
            .collect();
        known.extend(
            txns.iter()
                .flat_map(|t| t.params.values().filter_map(|v| v.text.clone())),
        );
        // Any mention of `random` in a program's parse (a statement, a
        // condition, an assignment).
        let floats = scratch.random_in_ddl
            || txns.iter().any(|t| {
                let dbg = format!("{:?}", t.program).to_ascii_lowercase();
                dbg.contains("random(") || dbg.contains("\"random\"")
            });
        Mask {
            known,
            seqs: scratch.seq_ranges.clone(),
            floats,
        }
    }

    /// `v`, or the token when the run made it up.
    pub fn val(&self, v: &Val) -> Val {
        use postgres::types::Type;
        let Some(text) = &v.text else {
            return v.clone();
        };
        let is = |ts: &[Type]| ts.iter().any(|t| t.oid() == v.oid);
        let timeish = is(&[
            Type::DATE,
            Type::TIME,
            Type::TIMETZ,
            Type::TIMESTAMP,
            Type::TIMESTAMPTZ,
            Type::INTERVAL,
            Type::UUID,
        ]);
        let float = self.floats && is(&[Type::FLOAT4, Type::FLOAT8]);
        let drawn = is(&[Type::INT2, Type::INT4, Type::INT8, Type::NUMERIC])
            && text
                .parse::<i64>()
                .is_ok_and(|n| self.seqs.iter().any(|&(lo, hi)| lo <= n && n <= hi));
        if ((timeish || float) && !self.known.contains(text)) || drawn {
            Val {
                text: Some(MADE_UP.into()),
                oid: v.oid,
            }
        } else {
            v.clone()
        }
    }

    /// Rows with made-up values masked, sorted (a multiset: without ORDER
    /// BY their order is the physical one, which differs between runs for
    /// reasons that are no anomaly).
    pub fn rows(&self, rows: &[Vec<Val>]) -> Vec<Vec<Val>> {
        let mut out: Vec<Vec<Val>> = rows
            .iter()
            .map(|r| r.iter().map(|v| self.val(v)).collect())
            .collect();
        out.sort();
        out
    }

    pub fn state(&self, s: &State) -> State {
        s.iter()
            .map(|(t, rows)| (t.clone(), self.rows(rows)))
            .collect()
    }

    /// Do two runs of one statement observe the same? Values compare by
    /// their text (`value`'s rule): an expression over a parameter may
    /// come back with another type in a run where `retype` had to type
    /// it (a NULL beside it), and the same text is the same observation.
    pub fn same_ran(&self, x: &Ran, y: &Ran) -> bool {
        let texts = |rows: &[Vec<Val>]| -> Vec<Vec<Option<String>>> {
            let mut t: Vec<Vec<Option<String>>> = self
                .rows(rows)
                .into_iter()
                .map(|r| r.into_iter().map(|v| v.text).collect())
                .collect();
            t.sort();
            t
        };
        x.source == y.source && x.affected == y.affected && texts(&x.rows) == texts(&y.rows)
    }
}

/// Where a transaction is, for the driver's choice.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Status {
    /// Committed, rolled back or halted.
    pub ended: bool,
    /// Its program reached its end (the next action commits it).
    pub finished: bool,
    /// Its last statement is still blocked.
    pub pending: bool,
    /// Inside a STABLE routine's queries, which read one snapshot on
    /// PostgreSQL: a random driver runs its next step before any other
    /// action (`Executor::holds_snapshot`).
    pub held: bool,
}

/// Runs `txns` on the freshly seeded scratch schema at `level`, in the
/// order `next` chooses (it sees where each transaction is; `None` ends
/// the plan, and what is still open is then run to its end and committed
/// in index order).
pub fn run(
    scratch: &mut Scratch,
    seed: &[SeedRow],
    txns: &[Txn],
    level: Level,
    next: &mut dyn FnMut(&[Status]) -> Option<Action>,
) -> Result<Outcome> {
    run_levels(scratch, seed, txns, &vec![level; txns.len()], next)
}

/// [`run`] with a level per transaction (a mixed allocation, issue 25).
pub fn run_levels(
    scratch: &mut Scratch,
    seed: &[SeedRow],
    txns: &[Txn],
    levels: &[Level],
    next: &mut dyn FnMut(&[Status]) -> Option<Action>,
) -> Result<Outcome> {
    reset(scratch, seed)?;
    let monitor = scratch.connect()?;
    let sessions = start_sessions(scratch, txns, levels)?;
    let mut d = Drive::new(txns, sessions, monitor);
    loop {
        if d.all_blocked() {
            break;
        }
        let (i, commit) = match d.next_action(next) {
            Next::Act(Action::Step(i)) => (i, false),
            Next::Act(Action::Commit(i)) => (i, true),
            Next::Again => continue,
            Next::Done => break,
        };
        if i >= txns.len() || d.ended[i] {
            continue;
        }
        let go_on = if !d.unblock(i) {
            false
        } else if d.ended[i] {
            true
        } else if commit {
            d.commit(i)
        } else {
            d.step(i);
            true
        };
        if !go_on {
            break;
        }
    }
    let Drive {
        sessions,
        mut out,
        monitor: _monitor,
        ..
    } = d;
    // Sessions still open are rolled back (and unblocked) here.
    drop(sessions);
    out.state = scratch.state()?;
    Ok(out)
}

/// One session per transaction, at its level, its program not started.
fn start_sessions(scratch: &mut Scratch, txns: &[Txn], levels: &[Level]) -> Result<Vec<Session>> {
    let mut sessions = vec![];
    for (ti, t) in txns.iter().enumerate() {
        let level = levels.get(ti).copied().unwrap_or(Level::ReadCommitted);
        let mut c = scratch.connect()?;
        // A safety net: a statement never waits longer than this.
        c.batch_execute("SET statement_timeout = '60s'")
            .map_err(|e| db_diag("cannot set statement_timeout", &e))?;
        sessions.push(Session::start(
            c,
            t.program.clone(),
            t.params.clone(),
            t.observe_conditions,
            t.choices.clone(),
            t.declared.clone(),
            level,
        )?);
    }
    Ok(sessions)
}

/// What [`Drive::next_action`] says to do.
enum Next {
    Act(Action),
    /// The plan just ran out: look again (now finishing what is open).
    Again,
    /// Nothing is open.
    Done,
}

/// The state of one concurrent run: the sessions, what they answered,
/// which have ended or finished their program.
struct Drive<'a> {
    txns: &'a [Txn],
    sessions: Vec<Session>,
    monitor: Client,
    out: Outcome,
    ended: Vec<bool>,
    /// A transaction whose program finished (commit pending).
    finished: Vec<bool>,
    plan_done: bool,
}

impl<'a> Drive<'a> {
    fn new(txns: &'a [Txn], sessions: Vec<Session>, monitor: Client) -> Drive<'a> {
        let n = txns.len();
        Drive {
            txns,
            sessions,
            monitor,
            out: Outcome {
                observed: vec![vec![]; n],
                ends: vec![End::Halted(Halt::Unsupported("did not finish".into())); n],
                state: vec![],
                trace: vec![],
                notes: vec![],
            },
            ended: vec![false; n],
            finished: vec![false; n],
            plan_done: false,
        }
    }

    fn settle(&mut self, i: usize, r: Reply) {
        settle(i, r, &mut self.out, &mut self.ended, &mut self.finished);
    }

    /// Collects the answers of statements that were blocked. When every
    /// open transaction is blocked, only the server can move (a deadlock
    /// is broken after deadlock_timeout, 1 s): waits for it; `true` when
    /// they all stayed blocked.
    fn all_blocked(&mut self) -> bool {
        let n = self.txns.len();
        let start = Instant::now();
        loop {
            for i in 0..n {
                if self.sessions[i].pending {
                    if let Some(r) = self.sessions[i].wait(Duration::ZERO) {
                        self.settle(i, r);
                    }
                }
            }
            let mut open = (0..n).filter(|&i| !self.ended[i]).peekable();
            if open.peek().is_none() || open.any(|i| !self.sessions[i].pending) {
                return false;
            }
            if start.elapsed() > NEED_WAIT {
                self.out
                    .notes
                    .push("every open transaction stayed blocked".into());
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The plan's next action; once it has none, commit what is open, a
    /// transaction that is not blocked first (it may hold the lock another
    /// waits for).
    fn next_action(&mut self, next: &mut dyn FnMut(&[Status]) -> Option<Action>) -> Next {
        let n = self.txns.len();
        if self.plan_done {
            let open: Vec<usize> = (0..n).filter(|&i| !self.ended[i]).collect();
            if open.is_empty() {
                return Next::Done;
            }
            return match open.iter().find(|&&i| !self.sessions[i].pending) {
                Some(&i) => Next::Act(Action::Commit(i)),
                None => Next::Act(Action::Commit(open[0])),
            };
        }
        let status: Vec<Status> = (0..n)
            .map(|i| Status {
                ended: self.ended[i],
                finished: self.finished[i],
                pending: self.sessions[i].pending,
                held: self.sessions[i].holds_snapshot(),
            })
            .collect();
        match next(&status) {
            Some(a) => Next::Act(a),
            None => {
                self.plan_done = true;
                Next::Again
            }
        }
    }

    /// Waits for transaction `i`'s blocked statement, if any; `false`
    /// when it stayed blocked (the run stops).
    fn unblock(&mut self, i: usize) -> bool {
        if !self.sessions[i].pending {
            return true;
        }
        match self.sessions[i].wait(NEED_WAIT) {
            Some(r) => {
                self.settle(i, r);
                true
            }
            None => {
                self.out.notes.push(format!(
                    "{} stayed blocked (waiting for a lock) when the interleaving needed it next",
                    self.txns[i].name
                ));
                self.out.ends[i] = End::Halted(Halt::Unsupported("blocked".into()));
                false
            }
        }
    }

    /// Transaction `i`'s next statement; a blocked one is left pending
    /// and the others go on.
    fn step(&mut self, i: usize) {
        if self.finished[i] {
            return;
        }
        match answer(&mut self.sessions[i], false, &mut self.monitor) {
            Some(r) => self.settle(i, r),
            None => self.out.notes.push(format!(
                "{}'s statement {} blocked (waiting for a lock); the others went on",
                self.txns[i].name,
                self.out.observed[i].len() + 1
            )),
        }
    }

    /// Commits transaction `i`: the rest of its program first; `false`
    /// when the run stops (it blocked before or at its commit).
    fn commit(&mut self, i: usize) -> bool {
        while !self.finished[i] && !self.ended[i] {
            match answer(&mut self.sessions[i], false, &mut self.monitor) {
                Some(r) => self.settle(i, r),
                None if self.plan_done => {
                    // Another open transaction holds the lock: go on with it.
                    self.out.notes.push(format!(
                        "{}'s statement {} blocked (waiting for a lock); the others went on",
                        self.txns[i].name,
                        self.out.observed[i].len() + 1
                    ));
                    return true;
                }
                None => {
                    self.out.notes.push(format!(
                        "{} blocked (waiting for a lock) before it could commit",
                        self.txns[i].name
                    ));
                    self.out.ends[i] = End::Halted(Halt::Unsupported("blocked".into()));
                    return false;
                }
            }
        }
        if !self.ended[i] {
            match answer(&mut self.sessions[i], true, &mut self.monitor) {
                Some(r) => self.settle(i, r),
                None => {
                    self.out
                        .notes
                        .push(format!("{}'s COMMIT blocked", self.txns[i].name));
                    return false;
                }
            }
        }
        true
    }
}

/// Collects a session's answer to a command, now or later.
fn settle(i: usize, r: Reply, out: &mut Outcome, ended: &mut [bool], finished: &mut [bool]) {
    match r {
        Reply::Step(Ok(Step::Ran(ran))) => {
            out.trace.push((i, Some(out.observed[i].len())));
            out.observed[i].push(*ran);
        }
        Reply::Step(Ok(Step::Finished)) => finished[i] = true,
        Reply::Step(Ok(Step::RolledBack(why))) => {
            out.ends[i] = End::RolledBack(why);
            ended[i] = true;
        }
        Reply::Step(Err(h)) | Reply::Commit(Err(h)) => {
            out.ends[i] = End::Halted(h);
            ended[i] = true;
        }
        Reply::Commit(Ok(())) => {
            out.trace.push((i, None));
            out.ends[i] = End::Committed;
            ended[i] = true;
        }
    }
}

/// The transactions of `order`, each run to its end and committed before
/// the next starts.
pub fn serial(
    scratch: &mut Scratch,
    seed: &[SeedRow],
    txns: &[Txn],
    level: Level,
    order: &[usize],
) -> Result<Outcome> {
    // Only the transactions of `order` run: `run` finishes whatever is
    // still open when the plan ends, and a transaction the concurrent run
    // aborted must not commit here.
    let subset: Vec<Txn> = order.iter().filter_map(|&i| txns.get(i).cloned()).collect();
    let mut k = 0;
    let o = run(scratch, seed, &subset, level, &mut |_| {
        let a = (k < subset.len()).then_some(Action::Commit(k));
        k += 1;
        a
    })?;
    let n = txns.len();
    let mut observed = vec![vec![]; n];
    let mut ends = vec![End::Halted(Halt::Unsupported("not in this serial order".into())); n];
    for (j, &i) in order.iter().enumerate() {
        if let (Some(obs), Some(end)) = (o.observed.get(j), o.ends.get(j)) {
            observed[i] = obs.clone();
            ends[i] = end.clone();
        }
    }
    Ok(Outcome {
        observed,
        ends,
        state: o.state,
        trace: o
            .trace
            .iter()
            .map(|&(j, x)| (order.get(j).copied().unwrap_or(j), x))
            .collect(),
        notes: o.notes,
    })
}

/// Does the serial run `s` (of the same transactions) give every
/// committed transaction of `c` what it observed, and the same state?
/// Values the runs make up are masked ([`Mask`]).
pub fn same_outcome(c: &Outcome, s: &Outcome, committed: &[usize], mask: &Mask) -> bool {
    mask.state(&c.state) == mask.state(&s.state)
        && committed.iter().all(|&i| {
            s.ends[i] == End::Committed
                && c.observed[i].len() == s.observed[i].len()
                && c.observed[i]
                    .iter()
                    .zip(&s.observed[i])
                    .all(|(x, y)| mask.same_ran(x, y))
        })
}

/// The result of comparing a concurrent run with the serial orders.
#[derive(Debug, Clone)]
pub struct Comparison {
    /// Serial orders (transaction indices) tried.
    pub orders: Vec<Vec<usize>>,
    /// The first serial order with the same outcome, if any.
    pub equivalent: Option<Vec<usize>>,
    /// The serial runs' outcomes, in `orders` order.
    pub serial: Vec<Outcome>,
    /// What the comparison left out.
    pub mask: Mask,
}

/// Runs every serial order of the committed transactions of `c` (the
/// others left out) and looks for one with the same outcome.
pub fn compare(
    scratch: &mut Scratch,
    seed: &[SeedRow],
    txns: &[Txn],
    level: Level,
    c: &Outcome,
) -> Result<Comparison> {
    let committed = c.committed();
    let mut cmp = Comparison {
        orders: vec![],
        equivalent: None,
        serial: vec![],
        mask: Mask::new(scratch, seed, txns),
    };
    for order in permutations(&committed) {
        let s = serial(scratch, seed, txns, level, &order)?;
        let same = same_outcome(c, &s, &committed, &cmp.mask);
        cmp.orders.push(order.clone());
        cmp.serial.push(s);
        if same {
            cmp.equivalent = Some(order);
            break;
        }
    }
    Ok(cmp)
}

/// All orders of `items`.
pub fn permutations(items: &[usize]) -> Vec<Vec<usize>> {
    if items.is_empty() {
        return vec![vec![]];
    }
    let mut out = vec![];
    for (i, &x) in items.iter().enumerate() {
        let mut rest = items.to_vec();
        rest.remove(i);
        for mut p in permutations(&rest) {
            p.insert(0, x);
            out.push(p);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use postgres::types::Type;

    fn ran(v: Val) -> Ran {
        Ran {
            source: "SELECT :b - :amt".into(),
            sent: "SELECT $1 - $2".into(),
            params: vec![],
            rows: vec![vec![v]],
            affected: 1,
        }
    }

    /// One observation whatever type `retype` gave it; another text is
    /// another observation.
    #[test]
    fn observations_compare_by_text() {
        let m = Mask::default();
        let int = ran(Val::typed("6", &Type::INT4));
        assert!(m.same_ran(&int, &ran(Val::typed("6", &Type::NUMERIC))));
        assert!(m.same_ran(
            &ran(Val::null()),
            &ran(Val {
                text: None,
                oid: 23
            })
        ));
        assert!(!m.same_ran(&int, &ran(Val::typed("7", &Type::INT4))));
    }
}
