//! Which (instance, valuation) pairs can hold a cycle through every
//! transaction (issue 23, item 3: TPC-C's anomaly under snapshot
//! isolation needs four, and its instance is one of thousands).
//!
//! A dependency between two transactions (Section 3.4) needs a step of
//! each on one relation whose accesses may conflict (`Access::
//! may_conflict`) and a tuple both touch: a key-based statement or an
//! insert touches its tuple (none when its key is NULL, `values::nulls`),
//! a predicate statement every tuple of its relation — with values only
//! the tuples some version of which can hold its pinned values (the
//! initial or inserted values, or a value an update gives the slot).
//! That is an over-approximation of every schedule's serialization graph,
//! so a cycle through all k transactions needs a Hamiltonian cycle of
//! this "meet" graph. Without one, a cycle of a schedule of the pair runs
//! through fewer transactions and is found when that smaller set is
//! searched (the argument of `instance::may_cycle`, on tuples and values
//! instead of relations). `meets_all` is that test, applied to every
//! valuation before its search.

use super::instance::{Instance, StepSpec};
use super::valuation::Valuation;

/// The tuples step `pos` of transaction `a` may touch, as a list.
fn touches(inst: &Instance, v: Option<&Valuation>, a: usize, pos: usize) -> Vec<usize> {
    let s: &StepSpec = &inst.txns[a].steps[pos];
    if let Some(t) = s.tuple {
        return match v {
            Some(v) if v.absent.get(t).copied().unwrap_or(false) => vec![],
            _ => vec![t],
        };
    }
    (0..inst.tuples.len())
        .filter(|&u| inst.tuples[u].rel == s.rel)
        .filter(|&u| v.is_none_or(|v| may_match(v, a, pos, u)))
        .collect()
}

/// Can some version of tuple `u` match predicate step `pos` of `a`? Each
/// pinned slot must hold the pinned class in the initial (or inserted)
/// version or in a value some update writes there.
fn may_match(v: &Valuation, a: usize, pos: usize, u: usize) -> bool {
    if v.absent.get(u).copied().unwrap_or(false) || v.empty.contains(&(a, pos)) {
        return false;
    }
    v.pins[a][pos].iter().all(|&(slot, c)| {
        Some(c) != v.null
            && (v.init[u].get(slot) == Some(&c)
                || v.writes
                    .iter()
                    .any(|((_, _, t), w)| *t == u && w.get(slot) == Some(&Some(c))))
    })
}

/// The meet graph: bit b of `adj[a]` when transactions a and b may
/// depend on each other in some schedule.
pub(super) fn meet_graph(inst: &Instance) -> Vec<u8> {
    meet_graph_of(inst, inst.vals.as_ref())
}

/// [`meet_graph`] of `inst` with valuation `v` (or none).
fn meet_graph_of(inst: &Instance, v: Option<&Valuation>) -> Vec<u8> {
    let n = inst.txns.len();
    let touched: Vec<Vec<Vec<usize>>> = (0..n)
        .map(|a| {
            (0..inst.txns[a].steps.len())
                .map(|p| touches(inst, v, a, p))
                .collect()
        })
        .collect();
    let mut adj = vec![0u8; n];
    for a in 0..n {
        for b in a + 1..n {
            let meet = inst.txns[a].steps.iter().enumerate().any(|(p, s)| {
                inst.txns[b].steps.iter().enumerate().any(|(q, o)| {
                    s.rel == o.rel
                        && s.acc.may_conflict(&o.acc)
                        && touched[a][p].iter().any(|t| touched[b][q].contains(t))
                })
            });
            if meet {
                adj[a] |= 1 << b;
                adj[b] |= 1 << a;
            }
        }
    }
    adj
}

/// Has the undirected graph `adj` (at most 8 nodes) a cycle through every
/// node (two nodes: an edge)?
fn hamiltonian(adj: &[u8]) -> bool {
    let n = adj.len();
    match n {
        0 | 1 => return false,
        2 => return adj[0] & 2 != 0,
        _ => {}
    }
    // reach[mask] bit v: a path from node 0 through exactly `mask` ends
    // at v.
    let mut reach = vec![0u8; 1 << n];
    reach[1] = 1;
    for mask in 1..1usize << n {
        if mask & 1 == 0 {
            continue;
        }
        for (v, &near) in adj.iter().enumerate() {
            if reach[mask] & (1 << v) == 0 {
                continue;
            }
            for u in 0..n {
                if mask & (1 << u) == 0 && near & (1 << u) != 0 {
                    reach[mask | 1 << u] |= 1 << u;
                }
            }
        }
    }
    let full = (1usize << n) - 1;
    (1..n).any(|v| reach[full] & (1 << v) != 0 && adj[v] & 1 != 0)
}

/// Has the directed graph `out` (bit b of `out[a]`: an edge a → b; at
/// most 8 nodes) a cycle through every node once? (`hamiltonian` follows
/// out-edges and closes with an edge back to node 0, so it is directed
/// already for three or more nodes; two need both directions.)
pub(super) fn directed_cycle(out: &[u8]) -> bool {
    match out.len() {
        2 => out[0] & 2 != 0 && out[1] & 1 != 0,
        _ => hamiltonian(out),
    }
}

/// May a schedule of `inst` (with its valuation, if any) have a
/// serialization-graph cycle through all its transactions?
pub(super) fn meets_all(inst: &Instance) -> bool {
    hamiltonian(&meet_graph(inst))
}

/// [`meets_all`] of `inst` with valuation `v`, before it is set (the
/// filter of `values::valuations_where`).
pub(super) fn meets_all_with(inst: &Instance, v: &Valuation) -> bool {
    hamiltonian(&meet_graph_of(inst, Some(v)))
}

#[cfg(test)]
mod tests {
    use super::hamiltonian;

    #[test]
    fn hamiltonian_cycles() {
        // 0-1-2-3-0: a square.
        assert!(hamiltonian(&[0b1010, 0b0101, 0b1010, 0b0101]));
        // A star around 0: no cycle through every node.
        assert!(!hamiltonian(&[0b1110, 0b0001, 0b0001, 0b0001]));
        // Two triangles sharing node 0 (a figure eight): none either.
        assert!(!hamiltonian(&[0b11110, 0b00101, 0b00011, 0b10001, 0b01001]));
        assert!(hamiltonian(&[0b10, 0b01]));
        assert!(!hamiltonian(&[0b00, 0b00]));
        assert!(hamiltonian(&[0b110, 0b101, 0b011]));
    }
}
