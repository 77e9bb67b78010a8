//! The commands on the block form of the summary graph (issue 26), for
//! workloads whose per-edge graph would not fit (`limits::Form`): the
//! same [`Findings`] as the per-edge pipeline in `analysis`, computed
//! from `blocks` — Table 2's counts per class pair, the verdicts by the
//! block test (equal to Algorithm 2, `blocks`' module comment), and each
//! dangerous pair expanded into a cycle of real edges on the hub graph.
//! `Findings::graph` then holds every node but only the edges of the
//! cycles shown (a subgraph of the summary graph, so every witness passes
//! `robustness::check_witness` on it and on the full graph), and
//! `Findings::counted` the real counts.

use std::collections::{HashMap, HashSet};

use fixedbitset::FixedBitSet;

use super::blocks::{Blocks, Found, Hub, StmtRef, View};
use super::findings::{steps, DeployedVerdict, Findings, Isolation, Raised};
use super::graph::{Edge, SummaryGraph};
use super::progress::Progress;
use super::promote::{promoted, Suggestion};
use super::robustness::{Method, Reason, Witness};
use super::subsets::{search_with, Subsets, MAX_SUBSETS};
use crate::model::btp::Workload;
use crate::model::isolation::{Deployed, Level};
use crate::model::settings::Settings;

/// Raised programs whose cycle is a shortest one (a search each).
const SHORTEST_RAISED: usize = 100;

/// `analysis::analyze_with` on blocks: verdict, one witness per
/// dangerous component, the lowest allocation, and (when asked) the
/// maximal robust subsets.
pub fn analyze_with(
    w: &Workload,
    settings: Settings,
    method: Method,
    subsets: bool,
    progress: &dyn Progress,
) -> Findings {
    let b = Blocks::build(w, settings);
    let found = b.find_method(View::default(), method, false);
    let robust = found.is_empty();
    let sets = subsets.then(|| self::subsets(&b, method, Some(robust), progress));
    // Robust under READ COMMITTED: READ COMMITTED everywhere.
    let low = (!robust || method == Method::Snapshot).then(|| b.lowest());
    let mut f = finish(w, b, method, found, low);
    f.subsets = sets;
    f
}

/// `analysis::allocate_with` on blocks: the verdict under READ COMMITTED,
/// the lowest allocation with the cycle behind each raised program, and
/// the fix with the allocation after it.
pub fn allocate_with(w: &Workload, settings: Settings, progress: &dyn Progress) -> Findings {
    let b = Blocks::build(w, settings);
    let found = b.find_method(View::default(), Method::TypeII, false);
    let suggestion = (!found.is_empty()).then(|| fix(w, &b, Method::TypeII));
    let low = (!found.is_empty()).then(|| b.lowest());
    let _ = progress;
    let mut f = finish(w, b, Method::TypeII, found, low);
    with_fix(w, &mut f, suggestion, true);
    f
}

/// Record the fix `s` (and, with one, every program may run READ
/// COMMITTED after the edits); `shown`: the verdict is the one the fix
/// is for.
fn with_fix(w: &Workload, f: &mut Findings, s: Option<Suggestion>, shown: bool) {
    if let Some(set) = s.as_ref().and_then(|s| s.reads()) {
        if !f.isolation.raised.is_empty() {
            f.isolation.with_edits = Some(crate::model::isolation::Allocation::uniform(
                w.programs.len(),
                Level::ReadCommitted,
            ));
        }
        if shown {
            f.edits = super::findings::edits(w, set);
        }
    }
    if shown {
        f.suggestion = s;
    }
}

/// `analysis::check_deployed_with` on blocks: the verdict under the
/// deployed levels (READ COMMITTED by default), its witnesses, the
/// programs to raise, and — not robust under READ COMMITTED — the fix by
/// promoted reads ([`fix`]) or the maximal robust subsets ([`subsets`]).
pub fn check_deployed_with(
    w: &Workload,
    settings: Settings,
    method: Method,
    deployed: &Deployed,
    progress: &dyn Progress,
) -> Findings {
    let all_rc = deployed
        .allocation
        .0
        .iter()
        .all(|&l| l == Level::ReadCommitted);
    let b = Blocks::build(w, settings);
    let rc_found = b.find_method(View::default(), method, false);
    // As `analysis::check_with`: a verified fix, else the subsets.
    let (suggestion, subsets) = if rc_found.is_empty() {
        (None, None)
    } else {
        let s = fix(w, &b, method);
        let subsets = s
            .reads()
            .is_none()
            .then(|| self::subsets(&b, method, Some(false), progress));
        (Some(s), subsets)
    };
    let low = (!rc_found.is_empty() || method == Method::Snapshot).then(|| b.lowest());
    let found = if all_rc {
        rc_found
    } else {
        let alloc = &deployed.allocation;
        let level = |v: usize| alloc.level(b.nodes[v].ltp.program);
        b.find_in(View::default(), &level, false)
    };
    let mut f = finish(w, b, method, found, low);
    let shown = !f.robust || all_rc;
    with_fix(w, &mut f, suggestion, shown);
    if shown {
        f.subsets = subsets;
    }
    let raise = super::allocation::to_raise(&deployed.allocation, &f.isolation.as_is);
    f.isolation.deployed = Some(DeployedVerdict {
        deployed: deployed.clone(),
        robust: f.robust,
        raise: if f.robust { vec![] } else { raise },
    });
    f
}

/// The fix search on blocks, with `promote`'s answers: `Impossible` when
/// the view with every candidate read promoted (tag mask, `blocks` (3))
/// still has a dangerous cycle; otherwise `promote`'s greedy removal —
/// drop each read, last first, while the masked view stays robust —
/// verified once on the promoted workload's own blocks, reported as
/// `Minimal` with no smaller size searched (`none_up_to` 0). A read kept
/// cannot be left out: its removal failed on a view with more promoted
/// reads than the answer, and fewer promotions only add edges. (The
/// exhaustive smallest-first search runs on the per-edge graph only.)
pub fn fix(w: &Workload, b: &Blocks, method: Method) -> Suggestion {
    let cands = b.candidates(w);
    let n = cands.len();
    let mut keep: HashSet<StmtRef> = cands.iter().copied().collect();
    let robust = |keep: &HashSet<StmtRef>| {
        let view = View {
            nodes: None,
            promoted: Some(keep),
        };
        b.is_robust_in(view, method)
    };
    if !robust(&keep) {
        return Suggestion::Impossible { candidates: n };
    }
    for c in cands.iter().rev() {
        keep.remove(c);
        if !robust(&keep) {
            keep.insert(*c);
        }
    }
    let mut reads: Vec<StmtRef> = keep.into_iter().collect();
    reads.sort_unstable();
    // The masks equal the promoted workload's graph unless a promoted
    // read has a twin (`promote`'s module comment): verify once.
    if Blocks::build(&promoted(w, &reads), b.settings).is_robust(method) {
        Suggestion::Minimal {
            reads,
            none_up_to: 0,
        }
    } else {
        Suggestion::NotFound {
            candidates: n,
            tried: n + 1,
        }
    }
}

/// Maximal robust subsets on blocks: `subsets::search_with` over node
/// masks (`blocks` (3)), each failing test naming its cycle's programs.
pub fn subsets(
    b: &Blocks,
    method: Method,
    whole_robust: Option<bool>,
    progress: &dyn Progress,
) -> Subsets {
    subsets_up_to(b, method, MAX_SUBSETS, whole_robust, progress)
}

/// [`subsets`], stopping after `limit` sets. The search's answer depends
/// only on the verdicts of its tests (the cycles named only spare tests),
/// and each verdict is the per-edge one (`blocks` (3)), so this lists the
/// sets `subsets::search` lists on the summary graph, in the same order,
/// with the same cut: `check` uses it on both forms (a test costs the
/// mask's occurrences and class pairs, not its edges).
pub fn subsets_up_to(
    b: &Blocks,
    method: Method,
    limit: usize,
    whole_robust: Option<bool>,
    progress: &dyn Progress,
) -> Subsets {
    let test = |mask: &FixedBitSet| {
        let view = View {
            nodes: Some(mask),
            promoted: None,
        };
        match b.first_cycle(view, method) {
            None => None,
            Some((_, Some(edges))) => Some(
                edges
                    .iter()
                    .map(|e| b.nodes[e.from as usize].ltp.program)
                    .collect(),
            ),
            // A pair found but not closed (cannot happen, `blocks` (4)):
            // still not robust; the mask's own programs are the core.
            Some((_, None)) => Some(
                mask.ones()
                    .filter(|&v| v < b.nodes.len())
                    .map(|v| b.nodes[v].ltp.program)
                    .collect(),
            ),
        }
    };
    search_with(
        &b.program_nodes,
        b.nodes.len(),
        &test,
        limit,
        whole_robust,
        progress,
    )
}

/// Expand the pairs `found` and the lowest allocation's pairs `low` into
/// cycles, and assemble the findings.
fn finish(
    w: &Workload,
    mut b: Blocks,
    method: Method,
    found: Vec<Found>,
    low: Option<super::blocks::BlockLowest>,
) -> Findings {
    let robust = found.is_empty();
    let counted = b.edge_counts();
    let (witnesses, raised) = {
        let mut hub = Hub::new(&b, View::default());
        let comp = hub.components();
        let nc = b.nc_edges(View::default());
        let witnesses: Vec<Witness> = found
            .iter()
            .map(|f| {
                let need = (f.reason != Reason::Counterflow).then(|| nc[&f.comp]);
                let edges = hub
                    .cycle(&comp, f.comp, (f.e3, f.e4), need)
                    .expect("a pair inside a component closes into a cycle (blocks, (4))");
                Witness {
                    edges,
                    reason: f.reason,
                }
            })
            .collect();
        let mut trees = HashMap::new();
        let raised: Vec<(super::blocks::BlockRaise, Witness)> = low
            .iter()
            .flat_map(|l| l.raised.iter())
            .enumerate()
            .map(|(i, r)| {
                // The first cycles by a search each (shortest way back);
                // the rest on two search trees per component, so that
                // thousands of raised programs cost two searches.
                let edges = if i < SHORTEST_RAISED {
                    hub.cycle(&comp, r.comp, (r.e3, r.e4), Some(nc[&r.comp]))
                } else {
                    let t = trees
                        .entry(r.comp)
                        .or_insert_with(|| hub.trees(&comp, r.comp, nc[&r.comp]));
                    t.cycle(&hub, (r.e3, r.e4))
                }
                .expect("a pair inside a component closes into a cycle (blocks, (4))");
                let wit = Witness {
                    edges,
                    reason: r.reason,
                };
                (r.clone(), wit)
            })
            .collect();
        (witnesses, raised)
    };
    let graph = skeleton(
        &mut b,
        witnesses
            .iter()
            .chain(raised.iter().map(|r| &r.1))
            .flat_map(|x| x.edges.iter().copied()),
    );
    let cycles = witnesses.iter().map(|x| steps(w, &graph, x)).collect();
    let isolation = match low {
        None => Isolation::read_committed(w.programs.len()),
        Some(l) => Isolation::with_cycles(
            l.allocation,
            raised
                .iter()
                .map(|(r, wit)| {
                    // The pair as indices into the skeleton (its edges are
                    // sorted and hold every witness edge).
                    let at = |e: &Edge| graph.edges.binary_search(e).unwrap_or(usize::MAX);
                    let pair = (at(&wit.edges[0]), at(&wit.edges[1 % wit.edges.len()]));
                    Raised::with_cycle(
                        r.program,
                        r.level,
                        r.cause.clone(),
                        r.reason,
                        pair,
                        steps(w, &graph, wit),
                    )
                })
                .collect(),
        ),
    };
    Findings {
        settings: b.settings,
        method,
        graph,
        robust,
        witnesses,
        cycles,
        subsets: None,
        suggestion: None,
        edits: vec![],
        isolation,
        table: None,
        confirmations: vec![],
        counted: Some(counted),
    }
}

/// The summary graph's nodes with only `edges` (real edges of it): what
/// the reports and the explorer read of a witness.
fn skeleton(b: &mut Blocks, edges: impl Iterator<Item = Edge>) -> SummaryGraph {
    let mut edges: Vec<Edge> = edges.collect();
    edges.sort_unstable();
    edges.dedup();
    let n = b.nodes.len();
    let mut out_start = vec![0usize; n + 1];
    for e in &edges {
        out_start[e.from as usize + 1] += 1;
    }
    for v in 0..n {
        out_start[v + 1] += out_start[v];
    }
    let mut rw = FixedBitSet::with_capacity(edges.len());
    let mut fuw = FixedBitSet::with_capacity(edges.len());
    for (i, e) in edges.iter().enumerate() {
        let (r, f) = b.edge_flags(e);
        rw.set(i, r);
        fuw.set(i, f);
    }
    SummaryGraph {
        settings: b.settings,
        nodes: std::mem::take(&mut b.nodes),
        edges,
        out_start,
        program_nodes: std::mem::take(&mut b.program_nodes),
        rw,
        fuw,
    }
}
