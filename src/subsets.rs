//! Maximal robust subsets of application-level programs (Section 7.2).
//!
//! A subset takes all unfoldings of its programs, and its summary graph is
//! the induced subgraph, so robustness is hereditary: every subset of a
//! robust set is robust. The maximal robust sets are then found with
//! "dualize and advance" (Gunopulos et al.): keep the maximal sets found so
//! far; any robust set not yet covered contains a minimal transversal of
//! their complements; test those transversals — a robust one is grown
//! greedily into a new maximal set, and when all are non-robust the list
//! is complete (each such transversal is a minimal non-robust set). The
//! number of robustness tests is about (#maximal + #minimal non-robust) ×
//! #programs, never 2^n when the answer is small.

use std::collections::HashMap;

use fixedbitset::FixedBitSet;

use crate::oracle::{Compact, View, UNTAGGED};
use crate::progress::{Progress, Silent, Stage};
use crate::robustness::Method;
use crate::summary_graph::SummaryGraph;

/// Robustness oracle over program sets, with a cache. The summary graph is
/// grouped once ([`Compact`]); a test builds the node mask of the programs
/// and walks the groups, without filtering or sorting edges.
struct Oracle<'g> {
    compact: Compact,
    program_nodes: &'g [Vec<usize>],
    nodes: usize,
    method: Method,
    cache: HashMap<FixedBitSet, bool>,
    progress: &'g dyn Progress,
}

impl Oracle<'_> {
    fn robust(&mut self, programs: &FixedBitSet) -> bool {
        if let Some(&r) = self.cache.get(programs) {
            return r;
        }
        let mut mask = FixedBitSet::with_capacity(self.nodes);
        for p in programs.ones() {
            for &n in &self.program_nodes[p] {
                mask.insert(n);
            }
        }
        let view = View {
            nodes: Some(&mask),
            dropped: None,
        };
        let r = self.compact.is_robust(view, self.method);
        self.cache.insert(programs.clone(), r);
        self.progress
            .update(Stage::Subsets, self.cache.len() as u64);
        r
    }
}

/// The result of the search: maximal robust subsets as sorted lists of
/// program indices, the list sorted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subsets {
    pub sets: Vec<Vec<usize>>,
    /// False when the search stopped at [`MAX_SUBSETS`] (or the transversal
    /// bound): there are more maximal robust subsets than listed. The answer
    /// can be exponential: Auction(n) under type-I has 2^n.
    pub complete: bool,
}

/// How many maximal robust subsets a search lists before it stops.
pub const MAX_SUBSETS: usize = 100;
/// Bound on the intermediate list of minimal transversals.
const MAX_TRANSVERSALS: usize = 200_000;

/// Maximal robust subsets (at most [`MAX_SUBSETS`]), without progress
/// reports. The flag is ignored: the library never draws (callers that
/// want progress use [`search`]); it stays so existing callers compile.
pub fn maximal_robust_subsets(g: &SummaryGraph, method: Method, _show_progress: bool) -> Subsets {
    search(g, method, MAX_SUBSETS, None, &Silent)
}

/// As [`maximal_robust_subsets`], stopping after `limit` sets.
pub fn maximal_robust_subsets_up_to(
    g: &SummaryGraph,
    method: Method,
    _show_progress: bool,
    limit: usize,
) -> Subsets {
    search(g, method, limit, None, &Silent)
}

/// Maximal robust subsets, at most `limit`. `whole_robust` is the verdict
/// on the whole graph when the caller already has it (the analysis always
/// does): a robust workload is its own only maximal robust subset, and a
/// non-robust one needs no second full test. Progress goes to `progress`.
pub fn search(
    g: &SummaryGraph,
    method: Method,
    limit: usize,
    whole_robust: Option<bool>,
    progress: &dyn Progress,
) -> Subsets {
    let n = g.program_nodes.len();
    let mut all = FixedBitSet::with_capacity(n);
    all.insert_range(..);
    if whole_robust == Some(true) {
        return Subsets {
            sets: vec![all.ones().collect()],
            complete: true,
        };
    }
    let mut oracle = Oracle {
        compact: Compact::new(g, |_| UNTAGGED),
        program_nodes: &g.program_nodes,
        nodes: g.nodes.len(),
        method,
        cache: HashMap::new(),
        progress,
    };
    if let Some(r) = whole_robust {
        oracle.cache.insert(all.clone(), r);
    }
    let mut maximal: Vec<FixedBitSet> = vec![];
    let mut complete = true;
    if oracle.robust(&all) {
        maximal.push(all.clone());
    } else {
        // Minimal transversals of {all \ M : M ∈ maximal}; {∅} initially.
        let mut transversals: Vec<FixedBitSet> = vec![FixedBitSet::with_capacity(n)];
        loop {
            if maximal.len() >= limit || transversals.len() > MAX_TRANSVERSALS {
                complete = false;
                break;
            }
            transversals.sort_by_key(|t| t.count_ones(..));
            let next = transversals.iter().find(|t| oracle.robust(t)).cloned();
            let Some(seed) = next else { break };
            let m = grow(&mut oracle, seed, n);
            let mut complement = all.clone();
            complement.difference_with(&m);
            transversals = add_edge(transversals, &complement);
            maximal.push(m);
        }
    }
    progress.finish(Stage::Subsets);
    let mut sets: Vec<Vec<usize>> = maximal.iter().map(|m| m.ones().collect()).collect();
    sets.sort();
    Subsets { sets, complete }
}

/// Grow a robust set into a maximal one. Tries whole chunks of candidates
/// and bisects a chunk that breaks robustness, so a set that can take most
/// programs costs O(k log n) tests for k rejected programs. A rejected
/// program stays rejected: robustness is hereditary and the set only grows.
fn grow(oracle: &mut Oracle, mut set: FixedBitSet, n: usize) -> FixedBitSet {
    let candidates: Vec<usize> = (0..n).filter(|&p| !set.contains(p)).collect();
    add_chunk(oracle, &mut set, &candidates);
    set
}

fn add_chunk(oracle: &mut Oracle, set: &mut FixedBitSet, chunk: &[usize]) {
    if chunk.is_empty() {
        return;
    }
    let mut trial = set.clone();
    chunk.iter().for_each(|&p| trial.insert(p));
    if oracle.robust(&trial) {
        *set = trial;
    } else if chunk.len() > 1 {
        let (a, b) = chunk.split_at(chunk.len() / 2);
        add_chunk(oracle, set, a);
        add_chunk(oracle, set, b);
    }
}

/// Berge's incremental step: minimal transversals of H ∪ {edge} from the
/// minimal transversals of H.
fn add_edge(transversals: Vec<FixedBitSet>, edge: &FixedBitSet) -> Vec<FixedBitSet> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn set(n: usize, xs: &[usize]) -> FixedBitSet {
        let mut s = FixedBitSet::with_capacity(n);
        xs.iter().for_each(|&x| s.insert(x));
        s
    }

    #[test]
    fn berge_step_keeps_only_minimal_transversals() {
        // Tr({{0,1}}) = {{0},{1}}; adding {1,2} gives {{1},{0,2}}.
        let t = add_edge(vec![set(3, &[])], &set(3, &[0, 1]));
        let t = add_edge(t, &set(3, &[1, 2]));
        let mut got: Vec<Vec<usize>> = t.iter().map(|s| s.ones().collect()).collect();
        got.sort();
        assert_eq!(got, vec![vec![0, 2], vec![1]]);
    }
}
