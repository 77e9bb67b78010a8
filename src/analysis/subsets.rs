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
//!
//! The answer depends only on the tests' verdicts (each is Algorithm 2 on
//! the programs of a set; the cycles a failing test names, the cores,
//! only spare later tests), so any exact test gives the same sets in the
//! same order: `check` runs the search on the block form
//! (`on_blocks::subsets_up_to`), `search` on the grouped graph.

use fixedbitset::FixedBitSet;

use crate::analysis::blocks::FxMap;
use crate::analysis::graph::SummaryGraph;
use crate::analysis::oracle::{Compact, View, UNTAGGED};
use crate::analysis::progress::{Progress, Silent, Stage};
use crate::analysis::robustness::Method;

/// The test the search asks of a node mask (the nodes of a set of
/// programs): the programs of a dangerous cycle among them, or `None`
/// when the induced subgraph is robust. On the per-edge graph it is the
/// grouped graph's test ([`Compact`]); on the block form,
/// `on_blocks::subsets`.
pub type CycleTest<'a> = dyn Fn(&FixedBitSet) -> Option<Vec<usize>> + 'a;

/// Robustness oracle over program sets, with a cache. A test builds the
/// node mask of the programs and asks `test`.
struct Oracle<'g> {
    test: &'g CycleTest<'g>,
    /// Programs of dangerous cycles found so far: a set containing one is
    /// not robust (robustness is hereditary), no test needed.
    cores: Cores,
    program_nodes: &'g [Vec<usize>],
    nodes: usize,
    cache: FxMap<FixedBitSet, bool>,
    progress: &'g dyn Progress,
    /// [`Oracle::unblocked`]'s programs blocked for the set being grown.
    memo: Option<Blocked>,
}

/// The programs of the dangerous cycles found so far, each with its last
/// program (a core is never empty: a cycle has edges), and for each
/// program the cores holding it.
struct Cores {
    list: Vec<(usize, FixedBitSet)>,
    holding: Vec<Vec<u32>>,
}

impl Cores {
    fn new(programs: usize) -> Cores {
        Cores {
            list: vec![],
            holding: vec![vec![]; programs],
        }
    }

    fn push(&mut self, core: FixedBitSet) {
        let Some(last) = core.maximum() else { return };
        let i = self.list.len() as u32;
        core.ones().for_each(|p| self.holding[p].push(i));
        self.list.push((last, core));
    }
}

/// Programs p with a known dangerous cycle in `set` ∪ {p} (`set`
/// robust), kept while `set` grows: per core, how many of its programs
/// lie outside `set`, so that adding programs to `set` costs only the
/// cores holding them, and a core counts once when it is found (a rescan
/// of every core whenever the set grew was the search's largest cost
/// after the tests, issue 26).
struct Blocked {
    set: FixedBitSet,
    /// Per core (of the first `outside.len()`): |core \ set|.
    outside: Vec<u32>,
    blocked: FixedBitSet,
}

impl Blocked {
    fn new(set: &FixedBitSet) -> Blocked {
        Blocked {
            set: set.clone(),
            outside: vec![],
            blocked: FixedBitSet::with_capacity(set.len()),
        }
    }

    /// Bring the counts to `set` (a superset of the last one) and to
    /// every core of `cores`.
    fn update(&mut self, cores: &Cores, set: &FixedBitSet) {
        if self.set != *set {
            let mut added = set.clone();
            added.difference_with(&self.set);
            let mut one = vec![];
            for p in added.ones() {
                for &c in &cores.holding[p] {
                    // `p` was outside `self.set` and is in the core: its
                    // count is at least one here.
                    if let Some(n) = self.outside.get_mut(c as usize) {
                        *n -= 1;
                        if *n == 1 {
                            one.push(c as usize);
                        }
                    }
                }
            }
            self.set.union_with(set);
            for c in one.into_iter().filter(|&c| self.outside[c] == 1) {
                if let Some(p) = only_outside(&cores.list[c].1, set) {
                    self.blocked.insert(p);
                }
            }
        }
        for (_, core) in &cores.list[self.outside.len()..] {
            let n = count_outside(core, set);
            if n == 1 {
                if let Some(p) = only_outside(core, set) {
                    self.blocked.insert(p);
                }
            }
            self.outside.push(n);
        }
    }
}

impl Oracle<'_> {
    /// The programs of `chunk` no known dangerous cycle lies in `set` ∪
    /// {p} for (`set` robust). The counts are kept while `set` only grows
    /// (it grows when a chunk is accepted, and starts again at each seed).
    fn unblocked(&mut self, set: &FixedBitSet, chunk: &[usize]) -> Vec<usize> {
        unblocked(&mut self.memo, &self.cores, set, chunk)
    }

    fn robust(&mut self, programs: &FixedBitSet) -> bool {
        if let Some(&r) = self.cache.get(programs) {
            return r;
        }
        // A core's last program is checked before the whole set: most
        // cores miss it, as a core found while growing a set usually ends
        // with the program being tried, which, rejected, stays out of the
        // later sets of that growth (candidates go in index order); a
        // subset test is a pass over every word (issue 26: tens of
        // thousands of cores against as many sets at 10,000 programs; the
        // first program, tried first, was in almost every set).
        let within =
            |(last, c): &(usize, FixedBitSet)| programs.contains(*last) && c.is_subset(programs);
        if self.cores.list.iter().any(within) {
            self.cache.insert(programs.clone(), false);
            return false;
        }
        let mut mask = FixedBitSet::with_capacity(self.nodes);
        for p in programs.ones() {
            for &n in &self.program_nodes[p] {
                mask.insert(n);
            }
        }
        let cycle = (self.test)(&mask);
        let r = cycle.is_none();
        if let Some(c) = cycle {
            let mut core = FixedBitSet::with_capacity(programs.len());
            c.into_iter().for_each(|p| core.insert(p));
            self.cores.push(core);
        }
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

impl Subsets {
    /// The answer for a robust workload of `programs` programs: itself.
    pub fn whole(programs: usize) -> Subsets {
        Subsets {
            sets: vec![(0..programs).collect()],
            complete: true,
        }
    }
}

/// How many maximal robust subsets a search lists before it stops.
pub const MAX_SUBSETS: usize = 100;
/// Bound on the intermediate list of minimal transversals.
const MAX_TRANSVERSALS: usize = 200_000;

/// Maximal robust subsets (at most [`MAX_SUBSETS`]), without progress
/// reports. The flag is ignored: the library never draws (callers that
/// want progress use [`search`]); it stays so existing callers compile.
pub fn maximal_robust_subsets(g: &SummaryGraph, method: Method) -> Subsets {
    search(g, method, MAX_SUBSETS, None, &Silent)
}

/// As [`maximal_robust_subsets`], stopping after `limit` sets.
pub fn maximal_robust_subsets_up_to(g: &SummaryGraph, method: Method, limit: usize) -> Subsets {
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
    if whole_robust == Some(true) {
        let none = |_: &FixedBitSet| None;
        return search_with(
            &g.program_nodes,
            g.nodes.len(),
            &none,
            limit,
            whole_robust,
            progress,
        );
    }
    let compact = Compact::new(g, |_| UNTAGGED);
    let test = |mask: &FixedBitSet| {
        let view = View {
            nodes: Some(mask),
            dropped: None,
        };
        compact.first_cycle(g, view, method).map(|c| {
            c.edges
                .iter()
                .map(|&i| g.nodes[g.edges[i].from as usize].ltp.program)
                .collect()
        })
    };
    search_with(
        &g.program_nodes,
        g.nodes.len(),
        &test,
        limit,
        whole_robust,
        progress,
    )
}

/// [`search`] over any [`CycleTest`] of a graph with `nodes` nodes whose
/// programs own `program_nodes`.
pub fn search_with(
    program_nodes: &[Vec<usize>],
    nodes: usize,
    test: &CycleTest,
    limit: usize,
    whole_robust: Option<bool>,
    progress: &dyn Progress,
) -> Subsets {
    let n = program_nodes.len();
    let mut all = FixedBitSet::with_capacity(n);
    all.insert_range(..);
    if whole_robust == Some(true) {
        return Subsets::whole(n);
    }
    let mut oracle = Oracle {
        test,
        cores: Cores::new(n),
        program_nodes,
        nodes,
        cache: FxMap::default(),
        progress,
        memo: None,
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
        // Each carries "known not robust": a transversal kept by Berge's
        // step was tested in an earlier round, so it is not tested (or
        // looked up) again.
        let mut transversals: Vec<(FixedBitSet, bool)> =
            vec![(FixedBitSet::with_capacity(n), false)];
        let mut complements: Vec<FixedBitSet> = vec![];
        loop {
            if maximal.len() >= limit || transversals.len() > MAX_TRANSVERSALS {
                complete = false;
                break;
            }
            // `add_edge` returns them sorted by size.
            let mut next = None;
            for (t, not_robust) in transversals.iter_mut().filter(|t| !t.1) {
                if oracle.robust(t) {
                    next = Some(t.clone());
                    break;
                }
                *not_robust = true;
            }
            let Some(seed) = next else { break };
            let m = grow(&mut oracle, seed, n);
            let mut complement = all.clone();
            complement.difference_with(&m);
            transversals = add_edge(transversals, &complements, &complement);
            complements.push(complement);
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
    // A program p with a known dangerous cycle inside set ∪ {p} is
    // rejected without a test: the greedy order rejects it too when it
    // gets to it (the set only grows). Dropping such programs before
    // bisecting keeps the chunks that remain likely to pass whole.
    let chunk = oracle.unblocked(set, chunk);
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
/// minimal transversals of H (`hyper`), in the order of the input, then
/// stably sorted by size (the order the search tests them in).
///
/// A transversal t that meets `edge` stays, and stays minimal. One that
/// misses it gives t ∪ {e} for each e ∈ edge, which is a transversal of
/// H ∪ {edge}; it is minimal iff each of its elements has a *private* edge
/// (one it alone hits). e has `edge` (t misses it). v ∈ t needs an F ∈ H
/// with F ∩ t = {v} and e ∉ F (`edge` meets t ∪ {e} in e only, so it is
/// nobody else's). So e is excluded exactly when, for some v ∈ t, e lies
/// in every private edge of v: one pass over H per t, instead of comparing
/// every candidate with every kept transversal.
fn add_edge(
    transversals: Vec<(FixedBitSet, bool)>,
    hyper: &[FixedBitSet],
    edge: &FixedBitSet,
) -> Vec<(FixedBitSet, bool)> {
    let n = edge.len();
    let mut next: Vec<(FixedBitSet, bool)> = vec![];
    let mut private: Vec<Option<FixedBitSet>> = vec![None; n];
    for (t, not_robust) in transversals {
        if !t.is_disjoint(edge) {
            next.push((t, not_robust));
            continue;
        }
        for v in t.ones() {
            private[v] = None;
        }
        for f in hyper {
            if let Some(v) = only_common(f, &t) {
                match &mut private[v] {
                    Some(common) => common.intersect_with(f),
                    slot => *slot = Some(f.clone()),
                }
            }
        }
        let mut excluded = FixedBitSet::with_capacity(n);
        for v in t.ones() {
            if let Some(common) = &private[v] {
                excluded.union_with(common);
            }
        }
        for e in edge.ones().filter(|&e| !excluded.contains(e)) {
            let mut u = t.clone();
            u.insert(e);
            next.push((u, false));
        }
    }
    // Stable, with each size computed once.
    next.sort_by_cached_key(|t| t.0.count_ones(..));
    next
}

/// [`Oracle::unblocked`] on its parts: `memo` holds the counts for the
/// set being grown, and starts again when `set` is not a superset of it.
fn unblocked(
    memo: &mut Option<Blocked>,
    cores: &Cores,
    set: &FixedBitSet,
    chunk: &[usize],
) -> Vec<usize> {
    if memo.as_ref().is_none_or(|m| !m.set.is_subset(set)) {
        *memo = Some(Blocked::new(set));
    }
    let Some(m) = memo.as_mut() else {
        return chunk.to_vec();
    };
    m.update(cores, set);
    chunk
        .iter()
        .copied()
        .filter(|&p| !m.blocked.contains(p))
        .collect()
}

/// |a \ b| (word-wise).
fn count_outside(a: &FixedBitSet, b: &FixedBitSet) -> u32 {
    let b = b.as_slice();
    a.as_slice()
        .iter()
        .enumerate()
        .map(|(i, x)| (x & !b.get(i).copied().unwrap_or(0)).count_ones())
        .sum()
}

/// The one element of `a` not in `b`, if exactly one.
fn only_outside(a: &FixedBitSet, b: &FixedBitSet) -> Option<usize> {
    let mut found = None;
    for (i, (x, y)) in a.as_slice().iter().zip(b.as_slice()).enumerate() {
        let rest = x & !y;
        if rest == 0 {
            continue;
        }
        if found.is_some() || rest & (rest - 1) != 0 {
            return None;
        }
        found = Some(i * usize::BITS as usize + rest.trailing_zeros() as usize);
    }
    found
}

/// The one element `a` and `b` share, if they share exactly one
/// (word-wise: this runs for every transversal against every edge).
fn only_common(a: &FixedBitSet, b: &FixedBitSet) -> Option<usize> {
    let mut found = None;
    for (i, (x, y)) in a.as_slice().iter().zip(b.as_slice()).enumerate() {
        let both = x & y;
        if both == 0 {
            continue;
        }
        if found.is_some() || both & (both - 1) != 0 {
            return None;
        }
        found = Some(i * usize::BITS as usize + both.trailing_zeros() as usize);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(n: usize, xs: &[usize]) -> FixedBitSet {
        let mut s = FixedBitSet::with_capacity(n);
        xs.iter().for_each(|&x| s.insert(x));
        s
    }

    /// The blocked-programs memo before the per-core counts: reset
    /// whenever the set changed, then every core scanned again.
    struct OldMemo {
        set: FixedBitSet,
        seen: usize,
        blocked: FixedBitSet,
    }

    fn old_unblocked(
        memo: &mut Option<OldMemo>,
        cores: &[FixedBitSet],
        set: &FixedBitSet,
        chunk: &[usize],
    ) -> Vec<usize> {
        if memo.as_ref().is_none_or(|m| m.set != *set) {
            *memo = Some(OldMemo {
                set: set.clone(),
                seen: 0,
                blocked: FixedBitSet::with_capacity(set.len()),
            });
        }
        let Some(memo) = memo.as_mut() else {
            return chunk.to_vec();
        };
        for c in &cores[memo.seen..] {
            if let Some(p) = only_outside(c, set) {
                memo.blocked.insert(p);
            }
        }
        memo.seen = cores.len();
        chunk
            .iter()
            .copied()
            .filter(|&p| !memo.blocked.contains(p))
            .collect()
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

        /// The counted memo answers as the old one (and as the definition:
        /// p is blocked iff some core lies in set ∪ {p}, p ∉ set) on the
        /// search's sequences: sets that stay robust (no core inside),
        /// grown by some programs or started again at a new seed, cores
        /// found between calls, chunks outside the set.
        #[test]
        fn counted_memo_equals_old_memo(seed in proptest::prelude::any::<u64>(), wide in proptest::prelude::any::<bool>()) {
            let mut x = seed | 1;
            let mut rnd = move |k: u64| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x % k.max(1)
            };
            let n = if wide { 65 + rnd(100) as usize } else { 2 + rnd(12) as usize };
            let mut cores = Cores::new(n);
            let mut plain: Vec<FixedBitSet> = vec![];
            let (mut memo, mut old) = (None, None);
            let mut s = FixedBitSet::with_capacity(n);
            let inside = |s: &FixedBitSet, cores: &[FixedBitSet]| cores.iter().any(|c| c.is_subset(s));
            for _ in 0..40 {
                match rnd(5) {
                    // A new seed: a small random robust set.
                    0 => {
                        s.clear();
                        for p in 0..n {
                            s.insert(p);
                            if rnd(4) != 0 || inside(&s, &plain) {
                                s.set(p, false);
                            }
                        }
                    }
                    // A core found by a failing test of a trial ⊇ s.
                    1 | 2 => {
                        let mut c = FixedBitSet::with_capacity(n);
                        for _ in 0..1 + rnd(4) {
                            c.insert(rnd(n as u64) as usize);
                        }
                        if !c.is_subset(&s) {
                            plain.push(c.clone());
                            cores.push(c);
                        }
                    }
                    // An accepted chunk: s grows and stays robust.
                    _ => {
                        for p in 0..n {
                            if !s.contains(p) && rnd(3) == 0 {
                                s.insert(p);
                                if inside(&s, &plain) {
                                    s.set(p, false);
                                }
                            }
                        }
                    }
                }
                let chunk: Vec<usize> = (0..n).filter(|&p| !s.contains(p) && rnd(2) == 0).collect();
                let got = unblocked(&mut memo, &cores, &s, &chunk);
                proptest::prop_assert_eq!(&got, &old_unblocked(&mut old, &plain, &s, &chunk));
                let defined: Vec<usize> = chunk
                    .iter()
                    .copied()
                    .filter(|&p| {
                        let mut t = s.clone();
                        t.insert(p);
                        !inside(&t, &plain)
                    })
                    .collect();
                proptest::prop_assert_eq!(got, defined);
            }
        }
    }

    #[test]
    fn berge_step_keeps_only_minimal_transversals() {
        // Tr({{0,1}}) = {{0},{1}}; adding {1,2} gives {{1},{0,2}}.
        let t = add_edge(vec![(set(3, &[]), false)], &[], &set(3, &[0, 1]));
        let t = add_edge(t, &[set(3, &[0, 1])], &set(3, &[1, 2]));
        let mut got: Vec<Vec<usize>> = t.iter().map(|s| s.0.ones().collect()).collect();
        got.sort();
        assert_eq!(got, vec![vec![0, 2], vec![1]]);
    }

    /// The step before the kept-through index: every candidate against
    /// every smaller one.
    fn naive_add_edge(transversals: Vec<FixedBitSet>, edge: &FixedBitSet) -> Vec<FixedBitSet> {
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

    #[test]
    fn berge_step_equals_naive_step_in_order() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..200 {
            // One word and several (the word-wise `only_common`).
            let n = if rnd() % 4 == 0 {
                60 + (rnd() % 100) as usize
            } else {
                3 + (rnd() % 8) as usize
            };
            let mut fast = vec![(FixedBitSet::with_capacity(n), false)];
            let mut slow = vec![FixedBitSet::with_capacity(n)];
            let mut hyper: Vec<FixedBitSet> = vec![];
            for _ in 0..(1 + rnd() % if n > 16 { 4 } else { 6 }) {
                let mut edge = FixedBitSet::with_capacity(n);
                for v in 0..n {
                    // Sparse edges on many programs keep the naive step's
                    // quadratic list small.
                    if rnd() % (if n > 16 { 30 } else { 3 }) == 0 {
                        edge.insert(v);
                    }
                }
                if edge.is_clear() {
                    edge.insert(0);
                }
                fast = add_edge(fast, &hyper, &edge);
                slow = naive_add_edge(slow, &edge);
                hyper.push(edge);
                let fast_sets: Vec<FixedBitSet> = fast.iter().map(|t| t.0.clone()).collect();
                assert_eq!(fast_sets, slow);
            }
        }
    }
}
