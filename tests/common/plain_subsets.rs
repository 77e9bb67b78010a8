//! The maximal-robust-subset search written plainly, the reference of
//! tests/scale_fast.rs and tests/scale_check.rs: "dualize and advance"
//! with the minimal transversals recomputed naively, seeds tested in size
//! order, each seed grown one program at a time in index order, every test
//! the per-edge `robustness::is_robust` on the node mask (no grouping, no
//! cores, no bisection, no cache).
#![allow(dead_code)]

use fixedbitset::FixedBitSet;
use isolint::analysis::graph::SummaryGraph;
use isolint::analysis::robustness::{is_robust, Method};
use isolint::analysis::subsets::Subsets;

pub fn mask_of(g: &SummaryGraph, programs: &FixedBitSet) -> FixedBitSet {
    let mut m = FixedBitSet::with_capacity(g.nodes.len());
    for p in programs.ones() {
        g.program_nodes[p].iter().for_each(|&v| m.insert(v));
    }
    m
}

pub fn robust(g: &SummaryGraph, programs: &FixedBitSet, method: Method) -> bool {
    is_robust(g, Some(&mask_of(g, programs)), method)
}

/// Minimal transversals of H ∪ {edge} from those of H, the naive way:
/// extend every transversal missing `edge` by each element of it, sort by
/// size (stable), drop duplicates and non-minimal sets.
pub fn naive_add_edge(transversals: Vec<FixedBitSet>, edge: &FixedBitSet) -> Vec<FixedBitSet> {
    let mut next: Vec<FixedBitSet> = vec![];
    for t in transversals {
        if !t.is_disjoint(edge) {
            next.push(t);
        } else {
            for e in edge.ones() {
                let mut u = t.clone();
                u.insert(e);
                next.push(u);
            }
        }
    }
    next.sort_by_key(|t| t.count_ones(..));
    next.dedup();
    let mut minimal: Vec<FixedBitSet> = vec![];
    for t in next {
        if !minimal.iter().any(|m| m.is_subset(&t)) {
            minimal.push(t);
        }
    }
    minimal
}

/// The subset search by its definition (module comment).
pub fn plain_subsets(g: &SummaryGraph, method: Method, limit: usize) -> Subsets {
    let n = g.program_nodes.len();
    let mut all = FixedBitSet::with_capacity(n);
    all.insert_range(..);
    if robust(g, &all, method) {
        return Subsets {
            sets: vec![all.ones().collect()],
            complete: true,
        };
    }
    let mut maximal: Vec<FixedBitSet> = vec![];
    let mut transversals = vec![FixedBitSet::with_capacity(n)];
    let mut complete = true;
    loop {
        if maximal.len() >= limit {
            complete = false;
            break;
        }
        let Some(seed) = transversals.iter().find(|t| robust(g, t, method)) else {
            break;
        };
        let mut m = seed.clone();
        for p in 0..n {
            if !m.contains(p) {
                m.insert(p);
                if !robust(g, &m, method) {
                    m.set(p, false);
                }
            }
        }
        let mut complement = all.clone();
        complement.difference_with(&m);
        transversals = naive_add_edge(transversals, &complement);
        maximal.push(m);
    }
    let mut sets: Vec<Vec<usize>> = maximal.iter().map(|m| m.ones().collect()).collect();
    sets.sort();
    Subsets { sets, complete }
}
