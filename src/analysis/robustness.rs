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

/// Why the distinguished adjacent pair of a witness makes it dangerous.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// Two adjacent counterflow edges (Theorem 6.4, first condition).
    AdjacentCounterflow,
    /// Ordered-counterflow pair: the counterflow edge leaves P4 from a
    /// statement before the one the incoming edge enters.
    OutgoingBeforeIncoming,
    /// Ordered-counterflow pair: the incoming edge starts at a key sel,
    /// pred sel, pred upd or pred del (an R- or PR-operation).
    IncomingFromRead,
    /// Type-I method: the cycle contains a counterflow edge.
    Counterflow,
}

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
    let inside = |e: &Edge| {
        let c = comp[e.from as usize];
        c != u32::MAX && c == comp[e.to as usize]
    };
    let mut found: Vec<Found> = vec![];
    let mut done = FixedBitSet::with_capacity(g.nodes.len());
    if let Test::Method(Method::TypeI) = test {
        for i in g.edges_within(mask) {
            let e = &g.edges[i];
            if e.counterflow && inside(e) && !done.put(comp[e.from as usize] as usize) {
                found.push(Found {
                    comp: comp[e.from as usize],
                    first: i,
                    second: i,
                    reason: Reason::Counterflow,
                });
                if stop_at_first {
                    break;
                }
            }
        }
        return (comp, found);
    }
    // The level of node v (docs/allocation.md): TypeII is everything at
    // READ COMMITTED, Snapshot everything at REPEATABLE READ.
    let level = |v: usize| match test {
        Test::Levels(l) => l[v],
        Test::Method(m) => m.level(),
    };
    let ssi = |v: usize| level(v) == Level::Serializable;
    let n = g.nodes.len();
    let mut has_nc = FixedBitSet::with_capacity(n);
    // Per node v: an incoming edge that is counterflow or from a read;
    // the incoming edge entering the latest statement; the outgoing
    // counterflow edge leaving the earliest statement.
    let mut strong_in: Vec<Option<usize>> = vec![None; n];
    let mut latest_in: Vec<Option<usize>> = vec![None; n];
    let mut earliest_cf_out: Vec<Option<usize>> = vec![None; n];
    // Snapshot levels: an incoming edge that may be an rw-antidependency
    // (`SummaryGraph::rw`), any, and from a program that is not
    // SERIALIZABLE; a counterflow edge to such a program (the SSI
    // exemption needs all three SERIALIZABLE).
    let mut si_in: Vec<Option<usize>> = vec![None; n];
    let mut si_in_plain: Vec<Option<usize>> = vec![None; n];
    let mut cf_out_plain: Vec<Option<usize>> = vec![None; n];
    // Snapshot levels: a counterflow edge out that first-updater-wins does
    // not rule out (`SummaryGraph::fuw`, docs/allocation.md Lemma 3).
    let mut si_cf_out: Vec<Option<usize>> = vec![None; n];
    // Latest to_pos of latest_in, earliest from_pos of earliest_cf_out,
    // kept beside them so the pass reads each edge once, in edge order
    // (source node by source node, as `edges_within` visits them).
    let mut latest_pos: Vec<u16> = vec![0; n];
    let mut earliest_pos: Vec<u16> = vec![0; n];
    for u in 0..n {
        let cu = comp[u];
        if cu == u32::MAX {
            continue;
        }
        let types = &g.nodes[u].types;
        for i in g.out_start[u]..g.out_start[u + 1] {
            let e = &g.edges[i];
            let v = e.to as usize;
            // Excluded targets have comp u32::MAX ≠ cu.
            if comp[v] != cu {
                continue;
            }
            if !e.counterflow {
                has_nc.insert(cu as usize);
            }
            if strong_in[v].is_none()
                && (e.counterflow
                    || types
                        .get(e.from_pos as usize)
                        .is_none_or(|t| t.starts_with_read()))
            {
                strong_in[v] = Some(i);
            }
            if g.rw.contains(i) {
                if si_in[v].is_none() {
                    si_in[v] = Some(i);
                }
                if si_in_plain[v].is_none() && !ssi(u) {
                    si_in_plain[v] = Some(i);
                }
            }
            if latest_in[v].is_none() || latest_pos[v] < e.to_pos {
                latest_in[v] = Some(i);
                latest_pos[v] = e.to_pos;
            }
            if e.counterflow && (earliest_cf_out[u].is_none() || earliest_pos[u] > e.from_pos) {
                earliest_cf_out[u] = Some(i);
                earliest_pos[u] = e.from_pos;
            }
            let snapshot_cf = e.counterflow && !g.fuw.contains(i);
            if snapshot_cf && si_cf_out[u].is_none() {
                si_cf_out[u] = Some(i);
            }
            if snapshot_cf && cf_out_plain[u].is_none() && !ssi(v) {
                cf_out_plain[u] = Some(i);
            }
        }
    }
    let strong_reason = |inc: usize| {
        if g.edges[inc].counterflow {
            Reason::AdjacentCounterflow
        } else {
            Reason::IncomingFromRead
        }
    };
    for v in 0..n {
        let c = comp[v];
        if c == u32::MAX || !has_nc.contains(c as usize) || done.contains(c as usize) {
            continue;
        }
        let out = match level(v) {
            Level::ReadCommitted => earliest_cf_out[v],
            Level::RepeatableRead | Level::Serializable => si_cf_out[v],
        };
        let Some(out) = out else {
            continue;
        };
        let pair = match level(v) {
            // Theorem 4.2 / 6.4: counterflow or read incoming edge, or
            // the counterflow edge leaves before the incoming one enters.
            Level::ReadCommitted => {
                if let Some(inc) = strong_in[v] {
                    Some((inc, out, strong_reason(inc)))
                } else {
                    latest_in[v]
                        .filter(|&inc| g.edges[out].from_pos < g.edges[inc].to_pos)
                        .map(|inc| (inc, out, Reason::OutgoingBeforeIncoming))
                }
            }
            // Snapshot reads: the incoming edge must be able to be an
            // rw-antidependency (docs/allocation.md, Lemma 2).
            Level::RepeatableRead => si_in[v].map(|inc| (inc, out, strong_reason(inc))),
            // SSI: as SI, unless P3 and P5 are SERIALIZABLE too (then
            // PostgreSQL aborts the dangerous structure, Theorem 1).
            Level::Serializable => match (si_in_plain[v], cf_out_plain[v]) {
                (Some(inc), _) => Some((inc, out, strong_reason(inc))),
                (None, Some(o)) => si_in[v].map(|inc| (inc, o, strong_reason(inc))),
                (None, None) => None,
            },
        };
        if let Some((inc, out, reason)) = pair {
            done.insert(c as usize);
            found.push(Found {
                comp: c,
                first: inc,
                second: out,
                reason,
            });
            if stop_at_first {
                break;
            }
        }
    }
    (comp, found)
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
/// `outs` caches [`component_out`] per component across calls.
pub(crate) fn witness_through(
    g: &SummaryGraph,
    comp: &[u32],
    outs: &mut std::collections::HashMap<u32, Vec<Vec<usize>>>,
    (inc, out): (usize, usize),
    reason: Reason,
) -> Witness {
    let c = comp[g.edges[out].from as usize];
    let adj = outs.entry(c).or_insert_with(|| component_out(g, comp, c));
    build_witness_with(
        g,
        comp,
        &Found {
            comp: c,
            first: inc,
            second: out,
            reason,
        },
        adj,
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
/// (empty when a == b), preferring non-counterflow edges.
fn path(g: &SummaryGraph, comp: &[u32], c: u32, out: &[Vec<usize>], a: u32, b: u32) -> Vec<usize> {
    if a == b {
        return vec![];
    }
    let mut prev: Vec<Option<usize>> = vec![None; g.nodes.len()];
    let mut seen = FixedBitSet::with_capacity(g.nodes.len());
    seen.insert(a as usize);
    let mut queue = VecDeque::from([a]);
    while let Some(u) = queue.pop_front() {
        for &i in &out[u as usize] {
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

/// Out-edges inside component `c`, non-counterflow first, per node.
pub(crate) fn component_out(g: &SummaryGraph, comp: &[u32], c: u32) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = vec![vec![]; g.nodes.len()];
    for (i, e) in g.edges.iter().enumerate() {
        if comp[e.from as usize] == c && comp[e.to as usize] == c {
            out[e.from as usize].push(i);
        }
    }
    for row in &mut out {
        row.sort_by_key(|&i| g.edges[i].counterflow);
    }
    out
}

fn build_witness(g: &SummaryGraph, comp: &[u32], f: &Found) -> Witness {
    let out = component_out(g, comp, f.comp);
    build_witness_with(g, comp, f, &out)
}

fn build_witness_with(g: &SummaryGraph, comp: &[u32], f: &Found, out: &[Vec<usize>]) -> Witness {
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
    let back = path(g, comp, c, out, end, start);
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
                walk.extend(path(g, comp, c, out, end, g.edges[i].from));
                walk.push(i);
                walk.extend(path(g, comp, c, out, g.edges[i].to, start));
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
        if !g.edges.contains(e) {
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
            let (e3, e4) = (&w.edges[0], &w.edges[1 % w.edges.len()]);
            if !e4.counterflow {
                return Err("second edge of the pair is not counterflow".into());
            }
            let ok = e3.counterflow
                || e4.from_pos < e3.to_pos
                || g.nodes[e3.from as usize].types[e3.from_pos as usize].starts_with_read();
            if !ok {
                return Err(
                    "the adjacent pair is neither adjacent-counterflow nor ordered-counterflow"
                        .into(),
                );
            }
        }
    }
    Ok(())
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
        if !g.edges.contains(e) {
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
    let strong =
        e3.counterflow || g.nodes[e3.from as usize].types[e3.from_pos as usize].starts_with_read();
    // The witness's edges are graph edges (checked above); find e3's index
    // for its rw flag.
    let rw = e3.counterflow
        || (g.out_start[e3.from as usize]..g.out_start[e3.from as usize + 1])
            .any(|i| g.edges[i] == *e3 && g.rw.contains(i));
    // e4 must be realisable at a snapshot level (`SummaryGraph::fuw`).
    let fuw = (g.out_start[e4.from as usize]..g.out_start[e4.from as usize + 1])
        .all(|i| g.edges[i] != *e4 || g.fuw.contains(i));
    let ok = match level(e4.from) {
        Level::ReadCommitted => strong || e4.from_pos < e3.to_pos,
        _ if fuw => false,
        Level::RepeatableRead => rw,
        Level::Serializable => {
            rw && !(level(e3.from) == Level::Serializable && level(e4.to) == Level::Serializable)
        }
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "the adjacent pair is not dangerous at {}",
            level(e4.from)
        ))
    }
}
