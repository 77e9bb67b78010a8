//! Robustness tests on a summary graph: the type-II cycle test of
//! Algorithm 2 (Theorem 6.4) and the type-I test of Alomari and Fekete.
//!
//! Algorithm 2 looks for edges (P1,q1,nc,q2,P2), (P3,q3,c,q4,P4),
//! (P4,q4',cf,q5,P5) with P3 reachable from P2 and P1 from P5
//! (reflexively), where c is counterflow, q4' <_{P4} q4, or q3 starts with
//! a read. Those reachabilities close the walk P1→P2⇝P3→P4→P5⇝P1, so all
//! five programs lie in one strongly connected component, and conversely
//! any such edges inside one SCC satisfy them. So the test runs per SCC in
//! O(E): an SCC has a type-II cycle iff it contains a non-counterflow edge
//! and some node v with an incoming edge e3 and an outgoing counterflow
//! edge e4 (both inside the SCC) meeting the condition. For a node, the
//! condition holds for some pair iff some e3 is counterflow or starts with
//! a read, or min over e4 of pos(q4') < max over e3 of pos(q4).
//! `tests/algorithm2.rs` checks this against a literal transcription.
//!
//! This module decides and explains; it does not build graphs.

use std::collections::VecDeque;

use fixedbitset::FixedBitSet;

use crate::analysis::graph::{Edge, SummaryGraph};
use crate::analysis::rules::{dangerous, Pivots};
use crate::analysis::scc::tarjan;
use crate::model::isolation::{Allocation, Level};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// Absence of type-II cycles (Algorithm 2, this paper).
    TypeII,
    /// Absence of type-I cycles: cycles with a counterflow edge ([3]).
    TypeI,
    /// Robustness against snapshot isolation (PostgreSQL's REPEATABLE
    /// READ) for every program: the allocation test of docs/allocation.md
    /// with every program at [`Level::RepeatableRead`]. A dangerous pair
    /// is a counterflow edge out of P4 whose incoming edge can be an
    /// rw-antidependency (counterflow, or from a read): Fekete et al.'s
    /// dangerous structure lifted to the summary graph.
    Snapshot,
}

impl Method {
    /// The level every program runs at under this method's verdict.
    pub fn level(self) -> Level {
        match self {
            Method::TypeII | Method::TypeI => Level::ReadCommitted,
            Method::Snapshot => Level::RepeatableRead,
        }
    }
}

pub use crate::analysis::rules::Reason;

/// A dangerous closed walk in the summary graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Witness {
    /// Closed walk: `edges[i].to == edges[i+1].from`, and the last edge
    /// returns to `edges[0].from`. For type II, `edges[0]` and `edges[1]`
    /// are the adjacent pair (e3, e4); for type I, `edges[0]` is the
    /// counterflow edge.
    pub edges: Vec<Edge>,
    pub reason: Reason,
}

/// Which nodes take part; `None` = all. Subset search passes a mask.
pub type Mask<'a> = Option<&'a FixedBitSet>;

/// Strongly connected component id per node (`u32::MAX` for excluded).
///
/// Tarjan (`scc`) directly over the graph's source-grouped edge list
/// (`out_start`), restricted to `mask`.
pub fn components(g: &SummaryGraph, mask: Mask) -> Vec<u32> {
    let included = |v: usize| mask.is_none_or(|m| m.contains(v));
    tarjan(
        g.nodes.len(),
        included,
        |v| g.out_start[v]..g.out_start[v + 1],
        |at| {
            let w = g.edges[at].to as usize;
            included(w).then_some(w)
        },
    )
}

/// The dangerous adjacent pair found in one SCC: edge indices and reason.
#[derive(Debug, Clone, Copy)]
struct Found {
    comp: u32,
    first: usize,
    second: usize,
    reason: Reason,
}

/// What makes an adjacent pair dangerous: the method's uniform test, or a
/// level per node (an allocation, docs/allocation.md).
#[derive(Clone, Copy)]
enum Test<'a> {
    Method(Method),
    /// The isolation level of each node's program.
    Levels(&'a [Level]),
}

/// Per SCC, the first dangerous pair (type II) or counterflow edge (type I).
fn find(
    g: &SummaryGraph,
    mask: Mask,
    method: Method,
    stop_at_first: bool,
) -> (Vec<u32>, Vec<Found>) {
    find_test(g, mask, Test::Method(method), stop_at_first)
}

/// The level of each node under `alloc`.
pub fn node_levels(g: &SummaryGraph, alloc: &Allocation) -> Vec<Level> {
    g.nodes.iter().map(|n| alloc.level(n.ltp.program)).collect()
}

fn find_test(
    g: &SummaryGraph,
    mask: Mask,
    test: Test,
    stop_at_first: bool,
) -> (Vec<u32>, Vec<Found>) {
    let comp = components(g, mask);
    let found = match test {
        Test::Method(Method::TypeI) => find_type_i(g, mask, &comp, stop_at_first),
        // The level of node v (docs/allocation.md): TypeII is everything
        // at READ COMMITTED, Snapshot everything at REPEATABLE READ.
        Test::Method(m) => {
            let pivots = Pivots::of_graph(g, &comp, |_| false);
            find_pairs(g, &comp, &pivots, |_| m.level(), stop_at_first)
        }
        Test::Levels(l) => {
            let pivots = Pivots::of_graph(g, &comp, |v| l[v] == Level::Serializable);
            find_pairs(g, &comp, &pivots, |v| l[v], stop_at_first)
        }
    };
    (comp, found)
}

/// The verdict of a uniform method on the whole graph with what later
/// stages reuse: the components and (type II, snapshot) the pivots'
/// aggregates with no program SERIALIZABLE, which are exactly the ones
/// `allocation::lowest_pairs_in` reads. `analyze` ran Tarjan three times
/// and the aggregates twice (issue 26); now once each.
pub struct Verdict {
    pub comp: Vec<u32>,
    pub(crate) pivots: Option<Pivots>,
    /// One per strongly connected component that has a dangerous cycle
    /// (as [`witnesses`]): robust iff empty.
    pub witnesses: Vec<Witness>,
}

/// [`is_robust`] and [`witnesses`] on the unmasked graph in one pass.
pub fn verdict(g: &SummaryGraph, method: Method) -> Verdict {
    let comp = components(g, None);
    let (pivots, found) = match method {
        Method::TypeI => (None, find_type_i(g, None, &comp, false)),
        m => {
            let pivots = Pivots::of_graph(g, &comp, |_| false);
            let found = find_pairs(g, &comp, &pivots, |_| m.level(), false);
            (Some(pivots), found)
        }
    };
    let witnesses = found.iter().map(|f| build_witness(g, &comp, f)).collect();
    Verdict {
        comp,
        pivots,
        witnesses,
    }
}

/// Algorithm 2 (or the type-I test) on `g` without the edges `dropped`
/// names (edge indices): components and aggregates over the remaining
/// edges only, so the verdict is [`is_robust`] on
/// `g.retain_edges(…)` without building that graph. The fix search asks
/// this of "every candidate read promoted" before grouping the graph
/// (`promote`): when it is not robust no promotion helps.
pub fn is_robust_without(g: &SummaryGraph, method: Method, dropped: &FixedBitSet) -> bool {
    let comp = tarjan(
        g.nodes.len(),
        |_| true,
        |v| g.out_start[v]..g.out_start[v + 1],
        |at| (!dropped.contains(at)).then_some(g.edges[at].to as usize),
    );
    match method {
        Method::TypeI => !g.edges.iter().enumerate().any(|(i, e)| {
            e.counterflow && !dropped.contains(i) && comp[e.from as usize] == comp[e.to as usize]
        }),
        m => {
            let pivots = Pivots::of_graph_where(g, &comp, |_| false, |i| !dropped.contains(i));
            (0..g.nodes.len()).all(|v| pivots.at(&comp, v, m.level()).is_none())
        }
    }
}

/// Type I: per SCC, the first counterflow edge inside it.
fn find_type_i(g: &SummaryGraph, mask: Mask, comp: &[u32], stop_at_first: bool) -> Vec<Found> {
    let mut found = vec![];
    let mut done = FixedBitSet::with_capacity(g.nodes.len());
    for i in g.edges_within(mask) {
        let e = &g.edges[i];
        let c = comp[e.from as usize];
        if e.counterflow && c != u32::MAX && c == comp[e.to as usize] && !done.put(c as usize) {
            found.push(Found {
                comp: c,
                first: i,
                second: i,
                reason: Reason::Counterflow,
            });
            if stop_at_first {
                break;
            }
        }
    }
    found
}

/// Type II at a level per node: per SCC with a non-counterflow edge, the
/// first node (in node order) with a pair `rules::dangerous_pair` accepts.
fn find_pairs(
    g: &SummaryGraph,
    comp: &[u32],
    pivots: &Pivots,
    level: impl Fn(usize) -> Level,
    stop_at_first: bool,
) -> Vec<Found> {
    let mut found = vec![];
    let mut done = FixedBitSet::with_capacity(g.nodes.len());
    for v in 0..g.nodes.len() {
        let c = comp[v];
        if c == u32::MAX || done.contains(c as usize) {
            continue;
        }
        if let Some((first, second, reason)) = pivots.at(comp, v, level(v)) {
            done.insert(c as usize);
            found.push(Found {
                comp: c,
                first,
                second,
                reason,
            });
            if stop_at_first {
                break;
            }
        }
    }
    found
}

/// True when no cycle of the summary graph (restricted to `mask`) is
/// dangerous under the allocation `alloc` (docs/allocation.md, Theorem
/// 1): every schedule the allocation allows is serializable. With every
/// program at READ COMMITTED this is exactly the type-II test.
pub fn is_robust_under(g: &SummaryGraph, mask: Mask, alloc: &Allocation) -> bool {
    let levels = node_levels(g, alloc);
    find_test(g, mask, Test::Levels(&levels), true).1.is_empty()
}

/// One witness per strongly connected component that has a cycle
/// dangerous under `alloc`.
pub fn witnesses_under(g: &SummaryGraph, mask: Mask, alloc: &Allocation) -> Vec<Witness> {
    let levels = node_levels(g, alloc);
    let (comp, found) = find_test(g, mask, Test::Levels(&levels), false);
    found.iter().map(|f| build_witness(g, &comp, f)).collect()
}

/// A witness through the given adjacent pair (e3 = `inc`, e4 = `out`,
/// edge indices of one SCC of the unmasked graph), for explanations of
/// the lowest allocation.
pub(crate) fn witness_through(
    g: &SummaryGraph,
    comp: &[u32],
    (inc, out): (usize, usize),
    reason: Reason,
) -> Witness {
    let c = comp[g.edges[out].from as usize];
    build_witness(
        g,
        comp,
        &Found {
            comp: c,
            first: inc,
            second: out,
            reason,
        },
    )
}

/// True when the summary graph (restricted to `mask`) has no type-II
/// (or, with [`Method::TypeI`], no type-I) cycle: the programs are robust
/// against MVRC (Proposition 6.5).
pub fn is_robust(g: &SummaryGraph, mask: Mask, method: Method) -> bool {
    find(g, mask, method, true).1.is_empty()
}

/// One witness per strongly connected component that has one.
pub fn witnesses(g: &SummaryGraph, mask: Mask, method: Method) -> Vec<Witness> {
    let (comp, found) = find(g, mask, method, false);
    found.iter().map(|f| build_witness(g, &comp, f)).collect()
}

/// Shortest path of edges from `a` to `b` inside component `c`
/// (empty when a == b), preferring non-counterflow edges: each node's
/// out-edges are looked at non-counterflow first, then counterflow, each
/// in edge order. The BFS reads the graph's own out-edge index
/// (`out_start`) and stops at `b`: copying the component's edges first
/// (as an earlier version did per witness) cost O(edges) per cycle, most
/// of `allocation::lowest` at 3,000 programs (issue 26).
fn path(g: &SummaryGraph, comp: &[u32], c: u32, a: u32, b: u32) -> Vec<usize> {
    if a == b {
        return vec![];
    }
    let mut prev: Vec<Option<usize>> = vec![None; g.nodes.len()];
    let mut seen = FixedBitSet::with_capacity(g.nodes.len());
    seen.insert(a as usize);
    let mut queue = VecDeque::from([a]);
    while let Some(u) = queue.pop_front() {
        let row = g.out_start[u as usize]..g.out_start[u as usize + 1];
        let nc_first = row
            .clone()
            .filter(|&i| !g.edges[i].counterflow)
            .chain(row.filter(|&i| g.edges[i].counterflow));
        for i in nc_first {
            let v = g.edges[i].to;
            if comp[v as usize] != c || seen.put(v as usize) {
                continue;
            }
            prev[v as usize] = Some(i);
            if v == b {
                let mut walk = vec![];
                let mut at = b;
                while at != a {
                    let Some(i) = prev[at as usize] else { break };
                    walk.push(i);
                    at = g.edges[i].from;
                }
                walk.reverse();
                return walk;
            }
            queue.push_back(v);
        }
    }
    vec![]
}

fn build_witness(g: &SummaryGraph, comp: &[u32], f: &Found) -> Witness {
    let c = f.comp;
    let (e1, e2) = (g.edges[f.first], g.edges[f.second]);
    let mut walk = if f.reason == Reason::Counterflow {
        vec![f.first]
    } else {
        vec![f.first, f.second]
    };
    let start = e1.from;
    let end = if f.reason == Reason::Counterflow {
        e1.to
    } else {
        e2.to
    };
    let back = path(g, comp, c, end, start);
    let has_nc = |w: &[usize]| w.iter().any(|&i| !g.edges[i].counterflow);
    if f.reason == Reason::Counterflow || has_nc(&walk) || has_nc(&back) {
        walk.extend(back);
    } else {
        // Route the way back through a non-counterflow edge of the SCC.
        let nc = (0..g.edges.len()).find(|&i| {
            !g.edges[i].counterflow
                && comp[g.edges[i].from as usize] == c
                && comp[g.edges[i].to as usize] == c
        });
        match nc {
            Some(i) => {
                walk.extend(path(g, comp, c, end, g.edges[i].from));
                walk.push(i);
                walk.extend(path(g, comp, c, g.edges[i].to, start));
            }
            None => walk.extend(back),
        }
    }
    Witness {
        edges: walk.into_iter().map(|i| g.edges[i]).collect(),
        reason: f.reason,
    }
}

/// Checks that `w` really is a cycle of the required type in `g`: every
/// edge exists, the walk is closed, and the distinguished pair qualifies.
pub fn check_witness(g: &SummaryGraph, w: &Witness, method: Method) -> Result<(), String> {
    if w.edges.is_empty() {
        return Err("empty witness".into());
    }
    for (i, e) in w.edges.iter().enumerate() {
        if find_edge(g, e).is_none() {
            return Err(format!("edge {i} is not in the summary graph"));
        }
        let next = &w.edges[(i + 1) % w.edges.len()];
        if e.to != next.from {
            return Err(format!(
                "edge {i} ends at node {} but edge {} starts at {}",
                e.to,
                i + 1,
                next.from
            ));
        }
    }
    match method {
        Method::TypeI => {
            if !w.edges.iter().any(|e| e.counterflow) {
                return Err("no counterflow edge".into());
            }
        }
        Method::Snapshot => {
            return check_witness_under(
                g,
                w,
                &Allocation::uniform(g.program_nodes.len(), Level::RepeatableRead),
            )
        }
        Method::TypeII => {
            if !w.edges.iter().any(|e| !e.counterflow) {
                return Err("no non-counterflow edge".into());
            }
            let (i3, i4) = (
                index_of(g, &w.edges[0]),
                index_of(g, &w.edges[1 % w.edges.len()]),
            );
            if !w.edges[1 % w.edges.len()].counterflow {
                return Err("second edge of the pair is not counterflow".into());
            }
            let rc = Level::ReadCommitted;
            if dangerous(rc, g.pair_in(i3), g.pair_out(i4), false, false).is_none() {
                return Err(
                    "the adjacent pair is neither adjacent-counterflow nor ordered-counterflow"
                        .into(),
                );
            }
        }
    }
    Ok(())
}

/// The index of edge `e` in `g`, searched among its source's out-edges
/// only (a scan of every edge made each witness check O(edges)).
fn find_edge(g: &SummaryGraph, e: &Edge) -> Option<usize> {
    let from = e.from as usize;
    if from >= g.nodes.len() {
        return None;
    }
    (g.out_start[from]..g.out_start[from + 1]).find(|&i| g.edges[i] == *e)
}

/// The index of edge `e`, known to be in `g` (checked by the caller).
fn index_of(g: &SummaryGraph, e: &Edge) -> usize {
    find_edge(g, e).unwrap_or(g.out_start[e.from as usize])
}

/// Checks that `w` is a cycle dangerous under `alloc`: closed walk of
/// graph edges with a non-counterflow edge, whose first two edges are an
/// adjacent pair (e3 into P4, e4 counterflow out of P4) that is dangerous
/// at P4's level (docs/allocation.md).
pub fn check_witness_under(
    g: &SummaryGraph,
    w: &Witness,
    alloc: &Allocation,
) -> Result<(), String> {
    if w.edges.is_empty() {
        return Err("empty witness".into());
    }
    for (i, e) in w.edges.iter().enumerate() {
        if find_edge(g, e).is_none() {
            return Err(format!("edge {i} is not in the summary graph"));
        }
        let next = &w.edges[(i + 1) % w.edges.len()];
        if e.to != next.from {
            return Err(format!("edge {i} does not meet edge {}", i + 1));
        }
    }
    if !w.edges.iter().any(|e| !e.counterflow) {
        return Err("no non-counterflow edge".into());
    }
    let (e3, e4) = (&w.edges[0], &w.edges[1 % w.edges.len()]);
    if !e4.counterflow {
        return Err("second edge of the pair is not counterflow".into());
    }
    let level = |v: u32| alloc.level(g.nodes[v as usize].ltp.program);
    let ssi = |v: u32| level(v) == Level::Serializable;
    let (i3, i4) = (index_of(g, e3), index_of(g, e4));
    let ok = dangerous(
        level(e4.from),
        g.pair_in(i3),
        g.pair_out(i4),
        ssi(e3.from),
        ssi(e4.to),
    )
    .is_some();
    if ok {
        Ok(())
    } else {
        Err(format!(
            "the adjacent pair is not dangerous at {}",
            level(e4.from)
        ))
    }
}
