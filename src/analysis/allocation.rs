//! The lowest robust allocation of isolation levels (READ COMMITTED <
//! REPEATABLE READ < SERIALIZABLE) to programs, on one summary graph, with
//! the reason each raised program needs its level. The robustness test
//! for a given allocation is `robustness::is_robust_under`; the condition
//! and its soundness argument are in docs/allocation.md.
//!
//! # Why the lowest allocation is unique and computed in one pass
//!
//! The test looks, per node v = P4 of a strongly connected component with
//! a non-counterflow edge, at pairs (e3 into v, e4 counterflow out of v):
//!
//! * v at READ COMMITTED: the pair is dangerous iff e3 is *strong*
//!   (counterflow or from a read) or e4 leaves before e3 enters
//!   ("RC-dangerous", Theorem 6.4);
//! * v at REPEATABLE READ: iff e3 is strong ("SI-dangerous");
//! * v at SERIALIZABLE: iff e3 is strong and not both P3 (source of e3)
//!   and P5 (target of e4) are SERIALIZABLE.
//!
//! Components and edges do not depend on the allocation, and each case is
//! implied by the one above it, so raising any program only removes
//! dangerous pairs: robust allocations are closed upwards (monotone). A
//! program v with an RC-dangerous pair must be at least REPEATABLE READ
//! in *every* robust allocation (at READ COMMITTED that pair is dangerous
//! whatever the others run); a program with an SI-dangerous pair must be
//! SERIALIZABLE, and then so must every P3 of a strong edge into it and
//! every P5 of a counterflow edge out of it (each pair needs both). These
//! requirements only ever force levels up and never depend on a level
//! being low, so the allocation that meets exactly them is below every
//! robust allocation, and it is robust: every pair is either not
//! dangerous at its P4's level or exempt. Hence the lowest robust
//! allocation exists, is unique (the pointwise minimum of all robust
//! ones), and is found without iteration. `tests/allocation.rs` checks it
//! against brute force over all 3^n allocations on random workloads.

use crate::analysis::graph::SummaryGraph;
use crate::analysis::robustness::{components, is_robust_under, witness_through, Reason, Witness};
use crate::analysis::rules::Pivots;
use crate::model::isolation::{Allocation, Level};

/// Why a program is above READ COMMITTED in the lowest allocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cause {
    /// A dangerous cycle meets at this program (it is P4 of the pair):
    /// dangerous at every level below `level`.
    Pivot,
    /// The program is P3 or P5 of an SI-dangerous pair at `pivot`, which
    /// runs SERIALIZABLE: PostgreSQL's SSI only detects the dangerous
    /// structure when all three transactions are SERIALIZABLE.
    Neighbour { pivot: usize },
}

/// One raised program, with the cycle that forces it.
#[derive(Debug, Clone)]
pub struct Raise {
    pub program: usize,
    pub level: Level,
    pub cause: Cause,
    /// A cycle of the summary graph whose first two edges are the pair:
    /// dangerous with the program one level lower (or, for a neighbour,
    /// with the program not SERIALIZABLE).
    pub witness: Witness,
}

/// The lowest robust allocation and the reasons.
#[derive(Debug, Clone)]
pub struct Lowest {
    pub allocation: Allocation,
    /// One entry per program above READ COMMITTED, by program index.
    pub raised: Vec<Raise>,
}

/// One raised program with the adjacent pair that forces it; its cycle
/// is built on demand ([`LowestPairs::witness`]): a report shows the
/// first few (issue 26), and a BFS per raised program was most of
/// `lowest` at 3,000 programs.
#[derive(Debug, Clone)]
pub struct RaisePair {
    pub program: usize,
    pub level: Level,
    pub cause: Cause,
    /// The pair (e3, e4), edge indices into the graph.
    pub pair: (usize, usize),
    pub reason: Reason,
}

/// [`Lowest`] with the cycles not yet built.
#[derive(Debug, Clone)]
pub struct LowestPairs {
    pub allocation: Allocation,
    /// One entry per program above READ COMMITTED, by program index.
    pub raised: Vec<RaisePair>,
    /// Component per node of the graph, for [`LowestPairs::witness`].
    pub comp: Vec<u32>,
}

impl LowestPairs {
    /// The cycle whose first two edges are `r`'s pair (a closed walk in
    /// its component), as [`Raise::witness`].
    pub fn witness(&self, g: &SummaryGraph, r: &RaisePair) -> Witness {
        witness_through(g, &self.comp, r.pair, r.reason)
    }
}

/// The lowest robust allocation for the programs of `g` (the module
/// comment argues it is unique and below every robust allocation), with
/// every raised program's cycle.
pub fn lowest(g: &SummaryGraph) -> Lowest {
    let l = lowest_pairs(g);
    let raised = l
        .raised
        .iter()
        .map(|r| Raise {
            program: r.program,
            level: r.level,
            cause: r.cause.clone(),
            witness: l.witness(g, r),
        })
        .collect();
    Lowest {
        allocation: l.allocation,
        raised,
    }
}

/// Why a program is raised: the cause, the pair (e3, e4), the reason.
type Why = (Cause, (usize, usize), Reason);

/// [`lowest`] without building the cycles.
pub fn lowest_pairs(g: &SummaryGraph) -> LowestPairs {
    let comp = components(g, None);
    // SERIALIZABLE exemptions are decided below, edge by edge: the
    // aggregates are read as if no program were SERIALIZABLE.
    let pivots = Pivots::of_graph(g, &comp, |_| false);
    lowest_pairs_in(g, comp, &pivots)
}

/// [`lowest_pairs`] from the components of `g` and the aggregates over
/// them with no program SERIALIZABLE, as `robustness::verdict` computed
/// them for the type-II test (`analyze` reuses them).
pub(crate) fn lowest_pairs_in(g: &SummaryGraph, comp: Vec<u32>, pivots: &Pivots) -> LowestPairs {
    let programs = g.program_nodes.len();
    let prog = |v: usize| g.nodes[v].ltp.program;
    let mut levels = vec![Level::ReadCommitted; programs];
    let mut why: Vec<Option<Why>> = vec![None; programs];
    let mut ssi_pivots = vec![];
    for v in 0..g.nodes.len() {
        let pv = prog(v);
        // Dangerous at REPEATABLE READ (SI-dangerous): v must be
        // SERIALIZABLE; dangerous at READ COMMITTED only: at least
        // REPEATABLE READ.
        let (level, (inc, out, reason)) =
            if let Some(p) = pivots.at(&comp, v, Level::RepeatableRead) {
                ssi_pivots.push(v);
                (Level::Serializable, p)
            } else if let Some(p) = pivots.at(&comp, v, Level::ReadCommitted) {
                (Level::RepeatableRead, p)
            } else {
                continue;
            };
        if levels[pv] < level {
            levels[pv] = level;
            why[pv] = Some((Cause::Pivot, (inc, out), reason));
        }
    }
    // Every P3 of a strong edge into, and every P5 of a counterflow edge
    // out of, a SERIALIZABLE pivot must be SERIALIZABLE (Theorem 1 of
    // docs/allocation.md needs all three).
    neighbours(g, &comp, pivots, &ssi_pivots, (&mut levels, &mut why));
    let allocation = Allocation(levels);
    debug_assert!(is_robust_under(g, None, &allocation));
    let raised = why
        .into_iter()
        .enumerate()
        .filter_map(|(p, w)| {
            w.map(|(cause, pair, reason)| RaisePair {
                program: p,
                level: allocation.level(p),
                cause,
                pair,
                reason,
            })
        })
        .collect();
    LowestPairs {
        allocation,
        raised,
        comp,
    }
}

/// One forcing of a program to SERIALIZABLE by a SERIALIZABLE pivot:
/// (rank of the pivot among the usable ones, 0 for an rw edge into it or
/// 1 for a counterflow edge out of it, edge index). The order of these
/// keys is the order a literal scan visits them: pivot by pivot in node
/// order, at each pivot its rw edges in, then its counterflow edges out,
/// each in edge order.
type Forcing = (u32, u8, usize);

/// Raises to SERIALIZABLE every P3 of an rw edge into, and every P5 of a
/// counterflow edge (not ruled out by first-updater-wins) out of, a pivot
/// of `ssi_pivots` (inside its component), recording for each program the
/// first such forcing in [`Forcing`] order — the pair and reason a scan
/// pivot by pivot would record, since a program once SERIALIZABLE is not
/// forced again. Equal to that scan (`tests/scale_speed.rs` keeps it as
/// the oracle) without its cost: it listed the rw edges into every pivot
/// (millions at 3,000 programs; listing and reading them back was most of
/// `lowest`, issue 26). Here the rw edges are read once, row by row, and
/// only from programs not already SERIALIZABLE as pivots; each program
/// keeps its least forcing; the pivots' out-edges are read in rank order
/// until no program can still be forced earlier.
fn neighbours(
    g: &SummaryGraph,
    comp: &[u32],
    pivots: &Pivots,
    ssi_pivots: &[usize],
    (levels, why): (&mut [Level], &mut [Option<Why>]),
) {
    let prog = |v: usize| g.nodes[v].ltp.program;
    // The pivots with a pair to force through (both aggregates set), in
    // node order; a node's rank is its index here.
    let usable: Vec<(usize, usize, usize)> = ssi_pivots
        .iter()
        .filter_map(|&v| match (pivots.out[v].si_cf, pivots.inc[v].rw) {
            (Some(out), Some((strong, _))) => Some((v, out, strong)),
            _ => None,
        })
        .collect();
    let mut rank = vec![u32::MAX; g.nodes.len()];
    for (r, &(v, _, _)) in usable.iter().enumerate() {
        rank[v] = r as u32;
    }
    // Programs SERIALIZABLE as pivots are never forced (nor re-explained).
    let open: Vec<bool> = levels.iter().map(|&l| l < Level::Serializable).collect();
    let mut best: Vec<Option<Forcing>> = vec![None; levels.len()];
    for u in 0..g.nodes.len() {
        let p = prog(u);
        if !open[p] {
            continue;
        }
        for i in g.out_start[u]..g.out_start[u + 1] {
            let to = g.edges[i].to as usize;
            let r = rank[to];
            // Edges are visited in increasing index: for one pivot the
            // first one seen is its least; a later pivot never wins.
            if r != u32::MAX
                && best[p].is_none_or(|b| r < b.0)
                && g.rw.contains(i)
                && comp[u] == comp[to]
            {
                best[p] = Some((r, 0, i));
            }
        }
    }
    // Programs whose least forcing is still unknown: none forced yet, or
    // only through a pivot of a higher rank than the one being read.
    let mut settles_at = vec![0usize; usable.len()];
    let mut unsettled = 0usize;
    for p in (0..levels.len()).filter(|&p| open[p]) {
        match best[p] {
            Some((r, _, _)) => settles_at[r as usize] += 1,
            None => unsettled += 1,
        }
    }
    let mut pending = unsettled + settles_at.iter().sum::<usize>();
    for (r, &(v, _, _)) in usable.iter().enumerate() {
        // At its own rank an rw edge in (0) precedes every edge out (1).
        pending -= settles_at[r];
        if pending == 0 {
            break;
        }
        for i in g.out_start[v]..g.out_start[v + 1] {
            let e = &g.edges[i];
            let p = prog(e.to as usize);
            if !open[p] || !e.counterflow || g.fuw.contains(i) || comp[e.to as usize] != comp[v] {
                continue;
            }
            match best[p] {
                // Settled: forced at a rank ≤ r, or earlier in this row.
                Some((b, _, _)) if b as usize <= r => continue,
                Some((b, _, _)) => settles_at[b as usize] -= 1,
                None => {}
            }
            best[p] = Some((r as u32, 1, i));
            pending -= 1;
        }
    }
    for (p, f) in best.into_iter().enumerate() {
        let Some((r, side, i)) = f else { continue };
        let (v, out, strong) = usable[r as usize];
        let (pair, inc) = if side == 0 {
            ((i, out), i)
        } else {
            ((strong, i), strong)
        };
        levels[p] = Level::Serializable;
        let reason = Reason::strong(g.edges[inc].counterflow);
        why[p] = Some((Cause::Neighbour { pivot: prog(v) }, pair, reason));
    }
}

/// [`lowest_pairs`] with the forcing of neighbours done as written in
/// the module comment, pivot by pivot: the scan [`neighbours`] replaced
/// (issue 26), kept as its oracle for `tests/scale_speed.rs`. Not for
/// use: it reads every rw edge into every SERIALIZABLE pivot.
#[doc(hidden)]
pub fn lowest_pairs_by_scan(g: &SummaryGraph) -> LowestPairs {
    let comp = components(g, None);
    let pivots = Pivots::of_graph(g, &comp, |_| false);
    let mut l = lowest_pairs_in(g, comp, &pivots);
    let prog = |v: usize| g.nodes[v].ltp.program;
    // Back to the pivots' own levels and reasons, then force again.
    let mut levels = vec![Level::ReadCommitted; g.program_nodes.len()];
    let mut why: Vec<Option<Why>> = vec![None; levels.len()];
    let mut ssi_pivots = vec![];
    for v in 0..g.nodes.len() {
        let (level, (inc, out, reason)) =
            if let Some(p) = pivots.at(&l.comp, v, Level::RepeatableRead) {
                ssi_pivots.push(v);
                (Level::Serializable, p)
            } else if let Some(p) = pivots.at(&l.comp, v, Level::ReadCommitted) {
                (Level::RepeatableRead, p)
            } else {
                continue;
            };
        if levels[prog(v)] < level {
            levels[prog(v)] = level;
            why[prog(v)] = Some((Cause::Pivot, (inc, out), reason));
        }
    }
    for &v in &ssi_pivots {
        let (Some(out), Some((strong, _))) = (pivots.out[v].si_cf, pivots.inc[v].rw) else {
            continue;
        };
        let reason = |i: usize| Reason::strong(g.edges[i].counterflow);
        let mut force = |p: usize, inc: usize, out: usize| {
            if levels[p] < Level::Serializable {
                levels[p] = Level::Serializable;
                why[p] = Some((Cause::Neighbour { pivot: prog(v) }, (inc, out), reason(inc)));
            }
        };
        for i in g.rw.ones() {
            let e = &g.edges[i];
            if e.to as usize == v && l.comp[e.from as usize] == l.comp[v] {
                force(prog(e.from as usize), i, out);
            }
        }
        for i in g.out_start[v]..g.out_start[v + 1] {
            let e = &g.edges[i];
            if e.counterflow && !g.fuw.contains(i) && l.comp[e.to as usize] == l.comp[v] {
                force(prog(e.to as usize), strong, i);
            }
        }
    }
    l.allocation = Allocation(levels);
    l.raised = why
        .into_iter()
        .enumerate()
        .filter_map(|(p, w)| {
            w.map(|(cause, pair, reason)| RaisePair {
                program: p,
                level: l.allocation.level(p),
                cause,
                pair,
                reason,
            })
        })
        .collect();
    l
}

/// Programs whose deployed level is below the lowest robust one: raising
/// exactly these to their lowest level makes `deployed` robust (robust
/// allocations are closed upwards and all lie above the lowest one).
pub fn to_raise(deployed: &Allocation, lowest: &Allocation) -> Vec<(usize, Level)> {
    deployed
        .0
        .iter()
        .zip(&lowest.0)
        .enumerate()
        .filter(|(_, (d, l))| d < l)
        .map(|(p, (_, &l))| (p, l))
        .collect()
}
