//! `isolint invariants` (issue 25): do the anomalies weak isolation lets
//! through break anything the team stated? PostgreSQL is the semantics:
//! every execution below is run on the server (its snapshots, row locks,
//! EvalPlanQual re-checks and SSI aborts), and each invariant is a
//! boolean query evaluated on the committed state after every commit.
//!
//! 1. The seed (`domain::seed`) must satisfy every invariant (else that
//!    invariant is reported as false on the seed and not searched).
//! 2. Serial: every sequence of k instances of the programs that write,
//!    one after the other; an invariant a serial run breaks is a property
//!    the programs do not have, whatever the isolation.
//! 3. Concurrent, at the allocation: first the explorer's schedules of
//!    the static dangerous cycles (their programs and rows, made concrete
//!    by `witness::plan`); then every multiset of k writing instances,
//!    the programs of a dangerous cycle first, colliding parameters first,
//!    all their interleavings up to the reduction of `explore`. A broken
//!    invariant whose transactions break it in some serial order too is
//!    reported as a serial property.
//!
//! The answer per invariant is "broken" with the run, or "held within
//! bounds" with the bounds: never proven. Read-only programs are left
//! out of the instances: a plain read takes no row lock, so the writers
//! run and commit the same with or without it, and the committed states
//! (all an invariant sees) are the same.

pub mod domain;
pub mod explore;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use postgres::types::Type;
use postgres::Client;

use super::run::{run_levels, Action, End, Outcome, SeedRow, Status, Txn};
use super::scratch::Scratch;
use super::server::Server;
use crate::analysis::explorer::Schedule;
use crate::analysis::graph::SummaryGraph;
use crate::analysis::progress::{Progress, Stage};
use crate::frontend::invariants::{Invariant, Stated};
use crate::frontend::Sources;
use crate::model::btp::{StmtType, Workload};
use crate::model::error::{Diag, Result};
use crate::model::isolation::Level;
use crate::model::provenance::Provenance;

pub use domain::Domain;

/// The bounds of the search.
#[derive(Debug, Clone)]
pub struct Config {
    /// Program instances per execution.
    pub k: usize,
    /// Rows per table of the made-up seed, and the size of the numeric
    /// parameter domain.
    pub rows: usize,
    /// The level of each program (indexed like `Workload::programs`).
    pub levels: Vec<Level>,
    pub budget: Duration,
    /// Instances per program at most (of its parameter domain's product).
    pub instances: usize,
}

/// One transaction of a reported run.
#[derive(Debug, Clone)]
pub struct TxnInfo {
    pub name: String,
    pub level: Level,
    pub params: Vec<(String, String)>,
    /// committed, rolled back, or why it stopped.
    pub end: String,
}

/// One step of a reported run, in the order it happened.
#[derive(Debug, Clone)]
pub struct StepInfo {
    pub txn: usize,
    /// `None`: the commit.
    pub sql: Option<String>,
    pub rows: Vec<Vec<String>>,
    pub affected: u64,
}

/// A run that breaks an invariant.
#[derive(Debug, Clone)]
pub struct Counterexample {
    /// Where the run came from: the explorer's schedule of a cycle, or
    /// the systematic search.
    pub origin: String,
    pub txns: Vec<TxnInfo>,
    pub steps: Vec<StepInfo>,
    /// After which commit the invariant was false (`None`: at the end).
    pub after: Option<usize>,
    /// The tables the invariant reads, at that point: (table, rows as
    /// PostgreSQL prints a row).
    pub state: Vec<(String, Vec<String>)>,
    /// The query's result (`f`).
    pub result: String,
    pub notes: Vec<String>,
    /// Run once more with the same driver actions, PostgreSQL broke the
    /// invariant again.
    pub replayed: bool,
}

/// The answer for one invariant.
#[derive(Debug, Clone)]
pub enum Verdict {
    /// False already on the seed data: not searched.
    FalseOnSeed { result: String },
    /// A serial run breaks it: a property the programs do not have.
    BrokenSerially(Box<Counterexample>),
    /// A concurrent run at the allocation breaks it, and no serial order
    /// of its transactions does.
    Broken(Box<Counterexample>),
    /// Not broken by any execution run (see [`Report`] for the bounds).
    Held,
}

#[derive(Debug, Clone)]
pub struct InvariantResult {
    pub name: String,
    pub query: String,
    pub verdict: Verdict,
}

/// What the search did, and its bounds.
#[derive(Debug, Clone)]
pub struct Report {
    pub server_version: String,
    pub k: usize,
    pub levels: Vec<(String, Level)>,
    /// Where the seed came from, and its rows per table.
    pub seed_from: String,
    pub seed_rows: Vec<(String, usize)>,
    /// Per program that writes: its parameters' domains (as text).
    pub domain: Vec<(String, Vec<(String, String)>)>,
    /// Per program that writes: the instances searched (parameter
    /// values, as text, in the order of `domain`).
    pub instances: Vec<(String, Vec<Vec<String>>)>,
    /// Programs left out: they only read.
    pub read_only: Vec<String>,
    pub instances_cap: usize,
    pub serial_runs: usize,
    /// The serial search covered every sequence within the bounds.
    pub serial_complete: bool,
    pub witness_runs: usize,
    pub interleavings: usize,
    /// Choices the reduction pruned.
    pub pruned: usize,
    /// Per program multiset the systematic search reached: (programs,
    /// instance tuples whose every interleaving ran, instance tuples).
    pub coverage: Vec<(String, usize, usize)>,
    /// The concurrent search covered every execution within the bounds.
    pub complete: bool,
    pub aborted: usize,
    pub failed: usize,
    pub first_failure: Option<String>,
    pub elapsed: Duration,
    pub budget: Duration,
    pub results: Vec<InvariantResult>,
}

/// An invariant's value on `c`: `Some(false)` broken, `Some(true)` or
/// NULL (as a CHECK constraint takes NULL) held. A query that is no
/// boolean or fails is bad input, located at the invariant.
fn evaluate(c: &mut Client, inv: &Invariant) -> Result<Option<bool>> {
    let located = |msg: String| {
        Diag::new(format!("invariant `{}`: {msg}", inv.name))
            .at(&inv.file, inv.offset, inv.query.len().clamp(1, 40), "this query")
            .help("an invariant is one SELECT returning one boolean row, e.g. `SELECT bool_and(balance >= 0) FROM checking`")
    };
    let rows = c
        .query(inv.query.as_str(), &[])
        .map_err(|e| located(format!("PostgreSQL: {}", super::server::chain(&e))))?;
    if rows.len() != 1 || rows[0].columns().len() != 1 {
        return Err(located(format!(
            "returned {} rows of {} columns, not one boolean",
            rows.len(),
            rows.first().map_or(0, |r| r.columns().len())
        )));
    }
    if *rows[0].columns()[0].type_() != Type::BOOL {
        return Err(located(format!(
            "returns a {}, not a boolean",
            rows[0].columns()[0].type_().name()
        )));
    }
    let v: Option<bool> = rows[0].try_get(0).map_err(|e| located(format!("{e}")))?;
    Ok(Some(v.unwrap_or(true)))
}

/// The tables an invariant reads, as PostgreSQL prints their rows.
fn snapshot(
    c: &mut Client,
    scratch_tables: &[String],
    inv: &Invariant,
) -> Vec<(String, Vec<String>)> {
    let read = crate::frontend::sql::pg::parse(&inv.query)
        .map(|p| p.tables)
        .unwrap_or_default();
    let mut out = vec![];
    for t in scratch_tables {
        if !read.iter().any(|r| {
            r.rsplit('.')
                .next()
                .unwrap_or(r)
                .trim_matches('"')
                .eq_ignore_ascii_case(t)
        }) {
            continue;
        }
        let id = super::scratch::ident(t);
        let q = format!("SELECT x::text FROM {id} x ORDER BY 1");
        let rows = c
            .query(q.as_str(), &[])
            .map(|rs| {
                rs.iter()
                    .filter_map(|r| r.try_get::<_, String>(0).ok())
                    .collect()
            })
            .unwrap_or_default();
        out.push((t.clone(), rows));
    }
    out
}

/// Does program `p` write (or lock rows)?
pub fn writes(w: &Workload, p: usize) -> bool {
    w.programs[p]
        .statements
        .iter()
        .any(|s| s.locking || !matches!(s.ty, StmtType::KeySel | StmtType::PredSel))
}

/// The search's mutable state: the scratch schema, a checker connection,
/// what is still to decide.
struct Search<'a, 's> {
    scratch: Scratch<'s>,
    checker: Client,
    tables: Vec<String>,
    invariants: &'a [Invariant],
    /// Per invariant: still searched.
    open: Vec<bool>,
    verdicts: Vec<Option<Verdict>>,
    started: Instant,
    cfg: &'a Config,
    progress: &'a dyn Progress,
    runs: u64,
    aborted: usize,
    failed: usize,
    first_failure: Option<String>,
    /// Per program multiset searched: (programs, instance tuples whose
    /// interleavings all ran, instance tuples).
    coverage: Vec<(String, usize, usize)>,
}

/// A violation seen during a run: invariant, after which commit (index
/// into the run's choice order of commits: the transaction), result,
/// tables.
type Seen = (usize, Option<usize>, String, Vec<(String, Vec<String>)>);

impl<'a, 's> Search<'a, 's> {
    fn over_budget(&self) -> bool {
        self.started.elapsed() >= self.cfg.budget
    }

    /// Runs `txns` from `seed` in the order `next` chooses, checking the
    /// open invariants after every commit and at the end.
    fn run(
        &mut self,
        seed: &[SeedRow],
        txns: &[Txn],
        levels: &[Level],
        next: &mut dyn FnMut(&[Status]) -> Option<Action>,
    ) -> Result<(Outcome, Vec<Seen>)> {
        let mut seen: Vec<Seen> = vec![];
        let mut ended = vec![false; txns.len()];
        let open = self.open.clone();
        let invariants = self.invariants;
        let tables = self.tables.clone();
        let checker = &mut self.checker;
        let check = |after: Option<usize>, seen: &mut Vec<Seen>, c: &mut Client| -> Result<()> {
            for (n, inv) in invariants.iter().enumerate() {
                if !open[n] || seen.iter().any(|s| s.0 == n) {
                    continue;
                }
                if evaluate(c, inv)? == Some(false) {
                    let state = snapshot(c, &tables, inv);
                    seen.push((n, after, "f".into(), state));
                }
            }
            Ok(())
        };
        let mut err = None;
        let out = run_levels(&mut self.scratch, seed, txns, levels, &mut |st| {
            for i in 0..st.len() {
                if st[i].ended && !ended[i] {
                    ended[i] = true;
                    if let Err(e) = check(Some(i), &mut seen, checker) {
                        err.get_or_insert(e);
                    }
                }
            }
            next(st)
        })?;
        if let Some(e) = err {
            return Err(e);
        }
        check(None, &mut seen, &mut self.checker)?;
        // A commit the closure did not see (the last one) is the end.
        self.runs += 1;
        self.progress.update(Stage::Invariants, self.runs);
        for e in &out.ends {
            if let End::Halted(h) = e {
                if h.is_concurrency_abort() {
                    self.aborted += 1;
                } else if *h != super::executor::Halt::Unsupported("blocked".into()) {
                    self.failed += 1;
                    self.first_failure.get_or_insert_with(|| h.to_string());
                }
            }
        }
        Ok((out, seen))
    }
}

/// Per transaction, its description for the report.
fn txn_infos(txns: &[Txn], levels: &[Level], out: &Outcome) -> Vec<TxnInfo> {
    txns.iter()
        .enumerate()
        .map(|(i, t)| TxnInfo {
            name: t.name.clone(),
            level: levels.get(i).copied().unwrap_or(Level::ReadCommitted),
            params: t
                .params
                .iter()
                .map(|(k, v)| (k.clone(), shown(v)))
                .collect(),
            end: match out.ends.get(i) {
                Some(End::Committed) => "committed".into(),
                Some(End::RolledBack(why)) => format!("rolled back by the program: {why}"),
                Some(End::Halted(h)) => format!("stopped: {h}"),
                None => "did not run".into(),
            },
        })
        .collect()
}

fn steps(out: &Outcome) -> Vec<StepInfo> {
    out.trace
        .iter()
        .map(
            |&(i, at)| match at.and_then(|m| out.observed.get(i)?.get(m)) {
                Some(r) => StepInfo {
                    txn: i,
                    sql: Some(r.source.clone()),
                    rows: r
                        .rows
                        .iter()
                        .map(|row| row.iter().map(|v| v.literal()).collect())
                        .collect(),
                    affected: r.affected,
                },
                None => StepInfo {
                    txn: i,
                    sql: None,
                    rows: vec![],
                    affected: 0,
                },
            },
        )
        .collect()
}

fn counterexample(
    origin: String,
    txns: &[Txn],
    levels: &[Level],
    out: &Outcome,
    seen: &Seen,
) -> Counterexample {
    Counterexample {
        origin,
        txns: txn_infos(txns, levels, out),
        steps: steps(out),
        after: seen.1,
        state: seen.3.clone(),
        result: seen.2.clone(),
        notes: out.notes.clone(),
        replayed: false,
    }
}

/// The search, as `isolint invariants` runs it. `schedules`: the
/// explorer's schedules of the static dangerous cycles, tried first.
#[allow(clippy::too_many_arguments)]
pub fn search(
    server: &Server,
    sources: &Sources,
    w: &Workload,
    prov: &Provenance,
    stated: &Stated,
    schedules: &[(Schedule, &SummaryGraph)],
    cfg: &Config,
    progress: &dyn Progress,
) -> Result<Report> {
    let started = Instant::now();
    let mut scratch = Scratch::create(server, &sources.schema)?;
    let rows = domain::seed(&mut scratch, stated, cfg.rows)?;
    let seed = super::run::reset(&mut scratch, &rows)?;
    let domains = domain::domains(&mut scratch, sources, w, prov, &seed, cfg.rows);
    let checker = scratch.connect()?;
    let tables: Vec<String> = scratch.tables.iter().map(|t| t.name.clone()).collect();
    let n = stated.invariants.len();
    let mut s = Search {
        scratch,
        checker,
        tables,
        invariants: &stated.invariants,
        open: vec![true; n],
        verdicts: vec![None; n],
        started,
        cfg,
        progress,
        runs: 0,
        aborted: 0,
        failed: 0,
        first_failure: None,
        coverage: vec![],
    };
    // 1. The seed.
    for (i, inv) in stated.invariants.iter().enumerate() {
        if evaluate(&mut s.checker, inv)? == Some(false) {
            s.open[i] = false;
            s.verdicts[i] = Some(Verdict::FalseOnSeed { result: "f".into() });
        }
    }
    let writers: Vec<usize> = (0..w.programs.len().min(sources.programs.len()))
        .filter(|&p| writes(w, p))
        .collect();
    let mut fresh = 1_000_000u64;
    let insts: Vec<Vec<BTreeMap<String, super::value::Val>>> = (0..w.programs.len())
        .map(|p| match domains.get(p) {
            Some(d) if writers.contains(&p) => domain::instances(d, cfg.instances, &mut fresh),
            _ => vec![],
        })
        .collect();
    let ctx = Ctx {
        sources,
        w,
        domains: &domains,
        insts: &insts,
        writers: &writers,
    };
    // 2. Serial.
    let serial_complete = serial_search(&mut s, &ctx, &seed, &mut fresh)?;
    let serial_runs = s.runs as usize;
    // 3. Concurrent: the explorer's schedules, then systematic.
    let witness_runs = witness_search(&mut s, &ctx, prov, schedules, &seed, &mut fresh)?;
    let before = s.runs as usize;
    let (complete, pruned) = systematic(&mut s, &ctx, schedules, &seed, &mut fresh)?;
    let interleavings = s.runs as usize - before;
    s.progress.finish(Stage::Invariants);
    Ok(Report {
        server_version: server.version.clone(),
        k: cfg.k,
        levels: w
            .programs
            .iter()
            .zip(&cfg.levels)
            .map(|(p, l)| (p.name.clone(), *l))
            .collect(),
        seed_from: match &stated.seed {
            Some(f) => f.name.clone(),
            None => format!("made up: {} rows per table, row i holding i", cfg.rows),
        },
        seed_rows: rows_per_table(&seed),
        domain: writers
            .iter()
            .map(|&p| (w.programs[p].name.clone(), domain_text(&domains[p])))
            .collect(),
        instances: instances_text(w, &writers, &domains, &insts),
        read_only: (0..w.programs.len())
            .filter(|p| !writers.contains(p))
            .map(|p| w.programs[p].name.clone())
            .collect(),
        instances_cap: cfg.instances,
        serial_runs,
        serial_complete,
        witness_runs,
        interleavings,
        pruned,
        coverage: s.coverage.clone(),
        complete,
        aborted: s.aborted,
        failed: s.failed,
        first_failure: s.first_failure.clone(),
        elapsed: started.elapsed(),
        budget: cfg.budget,
        results: stated
            .invariants
            .iter()
            .zip(s.verdicts)
            .map(|(inv, v)| InvariantResult {
                name: inv.name.clone(),
                query: inv.query.clone(),
                verdict: v.unwrap_or(Verdict::Held),
            })
            .collect(),
    })
}

fn rows_per_table(seed: &[SeedRow]) -> Vec<(String, usize)> {
    let mut out: Vec<(String, usize)> = vec![];
    for r in seed {
        match out.iter_mut().find(|(t, _)| *t == r.table) {
            Some(x) => x.1 += 1,
            None => out.push((r.table.clone(), 1)),
        }
    }
    out
}

/// Per writing program, its instances' values as text.
fn instances_text(
    w: &Workload,
    writers: &[usize],
    domains: &domain::Domains,
    insts: &[Vec<BTreeMap<String, super::value::Val>>],
) -> Vec<(String, Vec<Vec<String>>)> {
    writers
        .iter()
        .map(|&p| {
            let list = insts[p]
                .iter()
                .map(|b| {
                    domains[p]
                        .iter()
                        .map(|(n, d)| match d {
                            Domain::Fresh { .. } => "fresh".to_string(),
                            Domain::Values(_) => b.get(n).map_or("?".into(), shown),
                        })
                        .collect()
                })
                .collect();
            (w.programs[p].name.clone(), list)
        })
        .collect()
}

/// A chosen value as people read it: numbers as numbers (the values are
/// untyped: the server types them by where they go).
pub fn shown(v: &super::value::Val) -> String {
    match &v.text {
        Some(t) if t.parse::<f64>().is_ok() => t.clone(),
        _ => v.literal(),
    }
}

fn domain_text(d: &[(String, Domain)]) -> Vec<(String, String)> {
    d.iter()
        .map(|(n, d)| {
            let t = match d {
                Domain::Values(v) => {
                    // Numbers as numbers (the values are untyped: the
                    // server types them by where they go).
                    let vals: Vec<String> = v.iter().map(shown).collect();
                    format!("{{{}}}", vals.join(", "))
                }
                Domain::Fresh { .. } => "a fresh value per instance".into(),
            };
            (n.clone(), t)
        })
        .collect()
}

/// What the stages share.
struct Ctx<'a> {
    sources: &'a Sources,
    w: &'a Workload,
    domains: &'a domain::Domains,
    insts: &'a [Vec<BTreeMap<String, super::value::Val>>],
    writers: &'a [usize],
}

impl Ctx<'_> {
    /// Transactions for (program, instance) pairs, fresh values renewed.
    fn txns(&self, picks: &[(usize, usize)], fresh: &mut u64) -> Vec<Txn> {
        picks
            .iter()
            .enumerate()
            .map(|(t, &(p, i))| {
                let mut params = self.insts[p][i].clone();
                for (name, d) in &self.domains[p] {
                    if let Domain::Fresh { number, type_name } = d {
                        *fresh += 1;
                        let v = if *number {
                            super::witness::fit_number(*fresh, type_name)
                        } else {
                            super::witness::fit_text(*fresh, type_name)
                        };
                        params.insert(name.clone(), super::value::Val::untyped(v));
                    }
                }
                Txn {
                    name: format!("T{} = {}", t + 1, self.w.programs[p].name),
                    program: Arc::new(self.sources.programs[p].clone()),
                    params,
                    observe_conditions: true,
                    choices: None,
                    declared: Default::default(),
                }
            })
            .collect()
    }
}

/// Every sequence of k writing instances, one after the other. Returns
/// whether every sequence ran.
fn serial_search(s: &mut Search, ctx: &Ctx, seed: &[SeedRow], fresh: &mut u64) -> Result<bool> {
    let all: Vec<(usize, usize)> = ctx
        .writers
        .iter()
        .flat_map(|&p| (0..ctx.insts[p].len()).map(move |i| (p, i)))
        .collect();
    let k = s.cfg.k.max(1);
    let mut idx = vec![0usize; k];
    if all.is_empty() {
        return Ok(true);
    }
    // Serial runs get at most half of the budget.
    let limit = s.cfg.budget / 2;
    loop {
        if !s.open.iter().any(|&o| o) {
            return Ok(true);
        }
        if s.started.elapsed() >= limit {
            return Ok(false);
        }
        let picks: Vec<(usize, usize)> = idx.iter().map(|&x| all[x]).collect();
        let txns = ctx.txns(&picks, fresh);
        let levels: Vec<Level> = picks.iter().map(|&(p, _)| s.cfg.levels[p]).collect();
        let mut next = 0;
        let (out, seen) = s.run(seed, &txns, &levels, &mut |_| {
            let a = (next < k).then_some(Action::Commit(next));
            next += 1;
            a
        })?;
        for v in &seen {
            s.open[v.0] = false;
            s.verdicts[v.0] = Some(Verdict::BrokenSerially(Box::new(counterexample(
                "a serial run".into(),
                &txns,
                &levels,
                &out,
                v,
            ))));
        }
        // Next sequence (odometer).
        let mut d = k;
        loop {
            if d == 0 {
                return Ok(true);
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < all.len() {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// Records the violations of a concurrent run: an invariant some serial
/// order of the same transactions also breaks is a serial property.
fn settle_concurrent(
    s: &mut Search,
    origin: &str,
    seed: &[SeedRow],
    (txns, levels, actions): (&[Txn], &[Level], &[Action]),
    out: &Outcome,
    seen: Vec<Seen>,
) -> Result<()> {
    // The same driver actions once more: does PostgreSQL break it again?
    let mut k = 0;
    let (_, again) = s.run(seed, txns, levels, &mut |_| {
        k += 1;
        actions.get(k - 1).copied()
    })?;
    for v in seen {
        if !s.open[v.0] {
            continue;
        }
        let replayed = again.iter().any(|x| x.0 == v.0);
        let committed = out.committed();
        let mut serial_break = None;
        for order in super::run::permutations(&committed) {
            let sub: Vec<Txn> = order.iter().map(|&i| txns[i].clone()).collect();
            let sub_levels: Vec<Level> = order.iter().map(|&i| levels[i]).collect();
            let mut next = 0;
            let m = sub.len();
            let (o2, seen2) = s.run(seed, &sub, &sub_levels, &mut |_| {
                let a = (next < m).then_some(Action::Commit(next));
                next += 1;
                a
            })?;
            if let Some(x) = seen2.into_iter().find(|x| x.0 == v.0) {
                serial_break = Some(counterexample(
                    format!("a serial order of a concurrent run's transactions ({origin})"),
                    &sub,
                    &sub_levels,
                    &o2,
                    &x,
                ));
                break;
            }
        }
        s.open[v.0] = false;
        s.verdicts[v.0] = Some(match serial_break {
            Some(c) => Verdict::BrokenSerially(Box::new(c)),
            None => {
                let mut c = counterexample(origin.to_string(), txns, levels, out, &v);
                c.replayed = replayed;
                Verdict::Broken(Box::new(c))
            }
        });
    }
    Ok(())
}

/// The explorer's schedules, made concrete (`witness::plan`) and run at
/// the allocation. Returns the runs made.
fn witness_search(
    s: &mut Search,
    ctx: &Ctx,
    prov: &Provenance,
    schedules: &[(Schedule, &SummaryGraph)],
    seed: &[SeedRow],
    _fresh: &mut u64,
) -> Result<usize> {
    let mut runs = 0;
    for (sched, g) in schedules {
        if !s.open.iter().any(|&o| o) || s.over_budget() {
            break;
        }
        let Ok(plan) = super::witness::plan(ctx.sources, ctx.w, prov, g, sched, &mut s.scratch)
        else {
            continue;
        };
        // The plan's own seed must satisfy the invariants still searched.
        super::run::reset(&mut s.scratch, &plan.seed)?;
        let mut ok = true;
        for (i, inv) in s.invariants.iter().enumerate() {
            if s.open[i] && evaluate(&mut s.checker, inv)? == Some(false) {
                ok = false;
            }
        }
        if !ok {
            continue;
        }
        let levels: Vec<Level> = sched
            .transactions
            .iter()
            .map(|t| s.cfg.levels[g.nodes[t.node].ltp.program])
            .collect();
        let mut k = 0;
        let actions = plan.actions.clone();
        let (out, seen) = s.run(&plan.seed, &plan.txns, &levels, &mut |_| {
            k += 1;
            actions.get(k - 1).copied()
        })?;
        runs += 1;
        let names: Vec<String> = plan.txns.iter().map(|t| t.name.clone()).collect();
        let origin = format!(
            "the explorer's schedule of the dangerous cycle {}",
            names.join(" / ")
        );
        let run = (
            plan.txns.as_slice(),
            levels.as_slice(),
            plan.actions.as_slice(),
        );
        settle_concurrent(s, &origin, &plan.seed, run, &out, seen)?;
        // Restore the search's own seed for the next stage.
        super::run::reset(&mut s.scratch, seed)?;
    }
    Ok(runs)
}

/// Multisets of k writing programs, those of a dangerous cycle first.
fn program_tuples(writers: &[usize], k: usize, hot: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = vec![vec![]];
    for _ in 0..k {
        let mut next = vec![];
        for t in &out {
            let from = t.last().copied();
            for &p in writers {
                if from.is_none_or(|f| p >= f) {
                    let mut u = t.clone();
                    u.push(p);
                    next.push(u);
                }
            }
        }
        out = next;
    }
    let on_cycle = |t: &Vec<usize>| hot.iter().any(|c| t.iter().all(|p| c.contains(p)));
    out.sort_by_key(|t| !on_cycle(t));
    out
}

/// Every multiset of k writing instances and every interleaving of it
/// (up to the reduction). Returns (complete, pruned choices).
fn systematic(
    s: &mut Search,
    ctx: &Ctx,
    schedules: &[(Schedule, &SummaryGraph)],
    seed: &[SeedRow],
    fresh: &mut u64,
) -> Result<(bool, usize)> {
    let hot: Vec<Vec<usize>> = schedules
        .iter()
        .map(|(sc, g)| {
            sc.transactions
                .iter()
                .map(|t| g.nodes[t.node].ltp.program)
                .collect()
        })
        .collect();
    let k = s.cfg.k.max(1);
    // Round robin: every instance tuple (ordered by rank, then program
    // multiset, those of a dangerous cycle first) runs at most QUOTA
    // interleavings per turn, its search resumed at its next turn, so a
    // budget that ends early has tried every pair of programs even when
    // one tuple has very many interleavings (TPC-C's Delivery).
    const QUOTA: usize = 8;
    let multisets: Vec<(Vec<usize>, Vec<Picks>)> = program_tuples(ctx.writers, k, &hot)
        .into_iter()
        .map(|progs| {
            let t = instance_tuples(ctx, &progs);
            (progs, t)
        })
        .collect();
    let base = s.coverage.len();
    let mut work: Vec<Work> = vec![];
    for (m, (progs, tuples)) in multisets.iter().enumerate() {
        let names: Vec<&str> = progs
            .iter()
            .map(|&p| ctx.w.programs[p].name.as_str())
            .collect();
        s.coverage.push((names.join(" + "), 0, tuples.len()));
        for (r, picks) in tuples.iter().enumerate() {
            work.push(Work {
                rank: (r, m),
                txns: ctx.txns(picks, fresh),
                levels: picks.iter().map(|&(p, _)| s.cfg.levels[p]).collect(),
                dfs: explore::Dfs::new(disjointness(ctx.w, progs)),
            });
        }
    }
    work.sort_by_key(|w| w.rank);
    let mut pruned = 0;
    loop {
        let mut open_work = false;
        for w in work.iter_mut().filter(|w| !w.dfs.done) {
            open_work = true;
            for _ in 0..QUOTA {
                if !s.open.iter().any(|&o| o) {
                    return Ok((true, pruned));
                }
                if s.over_budget() {
                    return Ok((false, pruned));
                }
                if w.dfs.done {
                    break;
                }
                let before = w.dfs.pruned;
                interleaving(s, seed, w)?;
                pruned += w.dfs.pruned - before;
            }
            if w.dfs.done {
                s.coverage[base + w.rank.1].1 += 1;
            }
        }
        if !open_work {
            return Ok((true, pruned));
        }
    }
}

/// One instance tuple's search in progress.
struct Work {
    /// (rank of the tuple in its multiset, multiset).
    rank: (usize, usize),
    txns: Vec<Txn>,
    levels: Vec<Level>,
    dfs: explore::Dfs,
}

/// The next interleaving of `w`'s search (up to the reduction).
fn interleaving(s: &mut Search, seed: &[SeedRow], w: &mut Work) -> Result<()> {
    let mut made = explore::Choices::default();
    let (out, seen) = {
        let d = &w.dfs;
        s.run(seed, &w.txns, &w.levels, &mut |st| d.choose(st, &mut made))?
    };
    w.dfs.advance(&made, &out);
    if !seen.is_empty() {
        let actions = made.actions();
        let run = (w.txns.as_slice(), w.levels.as_slice(), actions.as_slice());
        settle_concurrent(s, "the systematic search", seed, run, &out, seen)?;
    }
    Ok(())
}

/// An instance tuple: (program, instance) per transaction.
type Picks = Vec<(usize, usize)>;

/// Instance tuples of a program multiset: instances of one program in
/// non-decreasing order (the rest are renamings), fewest distinct
/// parameter values first (instances that collide on rows first).
fn instance_tuples(ctx: &Ctx, progs: &[usize]) -> Vec<Vec<(usize, usize)>> {
    let mut out: Vec<Vec<(usize, usize)>> = vec![vec![]];
    for (j, &p) in progs.iter().enumerate() {
        let mut next = vec![];
        for t in &out {
            let from = if j > 0 && progs[j - 1] == p {
                t.last().map_or(0, |x| x.1)
            } else {
                0
            };
            for i in from..ctx.insts[p].len() {
                let mut u = t.clone();
                u.push((p, i));
                next.push(u);
            }
        }
        out = next;
    }
    let distinct = |t: &Vec<(usize, usize)>| {
        let mut vals: Vec<&Option<String>> = t
            .iter()
            .flat_map(|&(p, i)| ctx.insts[p][i].values().map(|v| &v.text))
            .collect();
        vals.sort();
        vals.dedup();
        vals.len()
    };
    out.sort_by_cached_key(distinct);
    out
}

/// Per pair of instances: do their programs touch disjoint tables?
fn disjointness(w: &Workload, progs: &[usize]) -> Vec<Vec<bool>> {
    let rels =
        |p: usize| -> Vec<usize> { w.programs[p].statements.iter().map(|s| s.rel).collect() };
    progs
        .iter()
        .map(|&a| {
            let ra = rels(a);
            progs
                .iter()
                .map(|&b| !rels(b).iter().any(|r| ra.contains(r)))
                .collect()
        })
        .collect()
}
