//! Witness-guided rounds (issue 23): where purely random rounds of a
//! not-robust workload rarely meet, rounds aimed at the static witness.
//! The explorer turns a witness cycle into a schedule of program
//! instances ([`crate::analysis::explorer::confirm_at`], the BTP model, as
//! `isolint replay` does); its values are
//! solved as `isolint replay` solves them ([`solve::Space`],
//! [`witness::plan_with`], [`solve::changes`]), so the cycle's conflicting
//! statements meet on the same rows, and the schedule's statements run in
//! its order. Each round is judged exactly as a random round is
//! ([`super::replay`]): a round a program error stopped says nothing, and
//! an anomaly is an outcome of the committed transactions that differs
//! from every serial order's, made-up values masked ([`super::judge`]).

use super::super::run::{run, Action, End, SeedRow};
use super::super::scratch::Scratch;
use super::super::server::Server;
use super::super::{solve, witness};
use super::Anomaly;
use crate::analysis::explorer::{confirm_at, Bounds, Confirmation, Schedule};
use crate::analysis::graph::SummaryGraph;
use crate::analysis::robustness::Witness;
use crate::frontend::Sources;
use crate::model::btp::Workload;
use crate::model::error::Result;
use crate::model::isolation::{Allocation, Level};
use crate::model::provenance::Provenance;

/// What the guided rounds of one workload gave.
#[derive(Debug, Clone, Default)]
pub struct Guided {
    /// Witnesses the explorer turned into a schedule at the level.
    pub schedules: usize,
    /// Rounds run (value choices of those schedules).
    pub rounds: usize,
    /// Rounds a program error stopped, or whose values PostgreSQL
    /// refused as seed rows: not compared.
    pub void: usize,
    /// Why the first void round said nothing.
    pub first_void: Option<String>,
    /// The first round that matched no serial order (the rounds stop
    /// there).
    pub anomaly: Option<Anomaly>,
    /// Time spent in the explorer, and in all.
    pub explore: std::time::Duration,
    pub total: std::time::Duration,
}

/// How far the guided rounds go for one workload.
#[derive(Debug, Clone, Copy)]
pub struct GuidedConfig {
    /// At most this many rounds, over all witnesses.
    pub rounds: usize,
    /// At most this many witnesses are explored (one per dangerous
    /// component, in `witnesses` order).
    pub witnesses: usize,
    /// The explorer's state budget per witness.
    pub max_states: u64,
    pub level: Level,
    /// Rows per table of the random rounds' data, added to a plan whose
    /// own rows a program error voided (a parent row a literal names).
    pub keys: usize,
}

/// The random rounds' row i = i data and the unique columns, to add to a
/// plan's seed rows.
struct Base {
    rows: Vec<SeedRow>,
    keys: super::Keys,
}

impl Base {
    fn of(scratch: &mut Scratch, n: usize) -> Base {
        Base {
            rows: super::seed_rows(scratch, n),
            keys: super::Keys::of(scratch),
        }
    }

    /// `seed` with the base rows whose unique values no row of `seed` in
    /// the same table has, parents first.
    fn add_to(&self, seed: &[SeedRow]) -> Vec<SeedRow> {
        let clash = |r: &SeedRow| {
            r.values.iter().any(|(c, v)| {
                self.keys.is_unique(&r.table, c)
                    && seed.iter().any(|s| {
                        s.table == r.table
                            && s.values.iter().any(|(c2, v2)| c2 == c && v2.text == v.text)
                    })
            })
        };
        let mut out: Vec<SeedRow> = seed.to_vec();
        out.extend(self.rows.iter().filter(|r| !clash(r)).cloned());
        out.sort_by_key(|r| {
            self.keys
                .order
                .iter()
                .position(|t| *t == r.table)
                .unwrap_or(usize::MAX)
        });
        out
    }
}

/// Runs guided rounds for `witnesses` (`g`: their summary graph) until
/// one shows an anomaly or `cfg.rounds` ran.
pub fn guided(
    server: &Server,
    sources: &Sources,
    w: &Workload,
    prov: &Provenance,
    g: &SummaryGraph,
    witnesses: &[Witness],
    cfg: GuidedConfig,
) -> Result<Guided> {
    let mut out = Guided::default();
    let alloc = Allocation::uniform(w.programs.len(), cfg.level);
    let bounds = Bounds {
        max_states: cfg.max_states,
        ..Bounds::default()
    };
    let mut scratch: Option<Scratch> = None;
    let start = std::time::Instant::now();
    for x in witnesses.iter().take(cfg.witnesses) {
        let t = std::time::Instant::now();
        // The BTP model's search, as `isolint replay` runs it: bounded by
        // its state budget (the value pass's valuations are not, and ran
        // for minutes on some generated workloads); the values come from
        // the replay's solver below.
        let found = confirm_at(w, g, x, bounds, &alloc);
        out.explore += t.elapsed();
        let Confirmation::Confirmed(s) = found else {
            continue;
        };
        if s.transactions.iter().any(|t| t.level != cfg.level) {
            continue;
        }
        out.schedules += 1;
        if scratch.is_none() {
            scratch = Some(Scratch::create(server, &sources.schema)?);
        }
        let Some(scratch) = scratch.as_mut() else {
            break;
        };
        let base = Base::of(scratch, cfg.keys);
        rounds(scratch, sources, w, prov, g, &s, cfg, &base, &mut out)?;
        if out.anomaly.is_some() || out.rounds >= cfg.rounds {
            break;
        }
    }
    out.total = start.elapsed();
    Ok(out)
}

/// The value choices of schedule `s`, then the changes of its first
/// plan, one round each, until an anomaly or the round budget.
#[allow(clippy::too_many_arguments)]
fn rounds(
    scratch: &mut Scratch,
    sources: &Sources,
    w: &Workload,
    prov: &Provenance,
    g: &SummaryGraph,
    s: &Schedule,
    cfg: GuidedConfig,
    base: &Base,
    out: &mut Guided,
) -> Result<()> {
    let space = solve::Space::of(sources, w, prov, g, s);
    let choices = space.choices();
    // Half the budget for the solver's choices, the rest for changes of
    // the first plan (a parameter shared, a seed cell at a literal).
    let half = out.rounds + cfg.rounds.saturating_sub(out.rounds).div_ceil(2);
    let mut first = None;
    for choice in &choices {
        if out.rounds >= half || out.anomaly.is_some() {
            break;
        }
        let Ok(plan) = witness::plan_with(sources, w, prov, g, s, scratch, &space, choice) else {
            continue;
        };
        first.get_or_insert_with(|| plan.clone());
        plan_rounds(scratch, cfg, base, plan, out)?;
    }
    let Some(plan) = first else {
        return Ok(());
    };
    for t in solve::changes(&plan, w, s, sources) {
        if out.rounds >= cfg.rounds || out.anomaly.is_some() {
            break;
        }
        let mut p = plan.clone();
        t.iter().for_each(|c| c.apply(&mut p));
        plan_rounds(scratch, cfg, base, p, out)?;
    }
    Ok(())
}

/// A plan's round, and when a program error or the seed voided it, the
/// plan once more over the base rows too (within the budget).
fn plan_rounds(
    scratch: &mut Scratch,
    cfg: GuidedConfig,
    base: &Base,
    p: witness::Plan,
    out: &mut Guided,
) -> Result<()> {
    let void = out.void;
    let mut more = p.clone();
    one(scratch, cfg.level, p, out)?;
    if out.void > void && out.rounds < cfg.rounds {
        more.seed = base.add_to(&more.seed);
        one(scratch, cfg.level, more, out)?;
    }
    Ok(())
}

/// One guided round: seed, the schedule's interleaving, the comparison.
fn one(scratch: &mut Scratch, level: Level, mut p: witness::Plan, out: &mut Guided) -> Result<()> {
    out.rounds += 1;
    match super::super::run::reset(scratch, &p.seed) {
        Ok(pinned) => p.seed = pinned,
        Err(d) => {
            out.void += 1;
            out.first_void.get_or_insert(d.message.clone());
            return Ok(());
        }
    }
    // The schedule's actions in order, except that an action of a
    // transaction whose statement waits for a lock is put off until
    // another transaction's next action has run (PostgreSQL orders them
    // so; waiting for it would stop the round after `NEED_WAIT`).
    let mut left: Vec<Action> = p.actions.clone();
    let c = run(scratch, &p.seed, &p.txns, level, &mut |st| {
        let of = |a: &Action| match a {
            Action::Step(i) | Action::Commit(i) => *i,
        };
        left.retain(|a| st.get(of(a)).is_some_and(|s| !s.ended));
        let at = left
            .iter()
            .position(|a| !st[of(a)].pending)
            .or((!left.is_empty()).then_some(0))?;
        Some(left.remove(at))
    })?;
    // As a random round: a transaction the database aborted is left out
    // of the comparison; one the harness could not run voids the round.
    let stopped = c.ends.iter().find_map(|e| match e {
        End::Halted(h) if super::voids(h) => Some(h.to_string()),
        _ => None,
    });
    if let Some(why) = stopped {
        out.void += 1;
        out.first_void.get_or_insert(why);
        return Ok(());
    }
    let Some(cmp) = super::judge(scratch, &p.seed, &p.txns, level, &c)? else {
        return Ok(());
    };
    if cmp.equivalent.is_none() {
        out.anomaly = Some(Anomaly {
            round: out.rounds - 1,
            txns: p.txns,
            outcome: c,
            comparison: cmp,
        });
    }
    Ok(())
}
