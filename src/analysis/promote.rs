//! Verified fix suggestions: promote key-based reads to `SELECT … FOR
//! UPDATE` (docs/locking-reads.md) until the workload is robust.
//!
//! Only a key sel that is the source of a counterflow edge inside a
//! strongly connected component can matter, so those are the candidates.
//! Sets are searched by increasing size and, within a size, in
//! lexicographic order of the sorted candidate list, so the answer is the
//! first smallest set in that order; every answer is re-verified by
//! building the promoted workload's summary graph from scratch and running
//! the robustness test.
//!
//! **Masking instead of rebuilding.** Let S be a set of candidates and
//! G_S the summary graph of `promoted(w, S)`. Claim: G_S restricted to
//! the nodes of G is G minus the counterflow edges whose source occurrence
//! is an occurrence of a statement in S; and G_S has no other nodes unless
//! a statement of S has a *twin* (a statement of the same program equal to
//! it in everything `unfold` compares, i.e. all but id, SQL and origin).
//!
//! - Nodes. `unfold` enumerates the unfoldings in an order that does not
//!   look at statements, and keeps the first of each class of unfoldings
//!   equal as sequences of statement *contents* (including `locking`).
//!   Promotion changes the content of S's statements only, which can only
//!   split a class (a promoted statement no longer equals its twin), never
//!   merge two. The first member of an old class is still the first of its
//!   new class, so every node of G is a node of G_S, with the same
//!   occurrences and links; without twins the classes are unchanged and
//!   so are the nodes.
//! - Edges between nodes of G. `summary_graph::build` decides an edge
//!   from the pair of `Effective` occurrences, which differ from G's only
//!   in `locking` of S's occurrences. NCDEPTABLE/NCDEPCONDS never read
//!   `locking`; CDEPTABLE/CDEPCONDS read it only for the source q_i. For a
//!   source in S (a key sel) the CDEPTABLE row is F except for the
//!   key/pred upd/del columns, where CDEPCONDS returns true only via
//!   `PReadSet(q_i) ∩ WriteSet(q_j)` (PReadSet of a key sel is ⊥, Figure 5,
//!   enforced by `btp::validate`) or via `ReadSet(q_i) ∩ WriteSet(q_j)`,
//!   which yields no counterflow edge for a locking read. So exactly the
//!   counterflow edges leaving S's occurrences disappear; nothing else
//!   changes.
//!
//! Robustness is hereditary (a dangerous cycle of an induced subgraph is
//! one of the graph), so "the masked graph is robust" is *necessary* for
//! G_S to be robust, and equivalent to it without twins. The search
//! therefore tests masks ([`Compact`], one pass over grouped edges, no
//! rebuild) and rebuilds only a set whose mask is robust: skipping a set
//! whose mask is not robust never skips an answer, and the rebuild keeps
//! the answer exact when twins exist. `tests/promote.rs` checks the claim
//! edge by edge against the rebuild, on random workloads and the bundled
//! ones.
//!
//! **Pruning.** Each dangerous cycle of a masked graph, taken as concrete
//! edges, survives in the mask of every set that avoids the candidates its
//! counterflow edges come from (`Cycle::tags`): so every robust set hits
//! that tag set. The search collects these hitting constraints from every
//! failed test and enumerates only sets that hit all of them (an implicit
//! hitting-set search); the skipped sets are exactly ones shown not
//! robust, so the first set found is the one the plain enumeration would
//! find. If a cycle has no tag at all (it runs only through edges no
//! promotion removes: predicate reads, writes, reads already protected),
//! no set can help and the search stops at once; testing the mask with
//! every candidate promoted decides that up front — on the per-edge graph
//! without the tagged edges (`robustness::is_robust_without`), before the
//! grouped graph is built, which is then needed only when a fix may exist
//! (`tests/alloc_shared.rs` checks it against the grouped test).
//!
//! **When the search stops early** (sizes above `Budget::max_size`, or
//! `max_tries` sets tested) it never answers "no fix": the mask with every
//! candidate promoted is robust, so if the rebuild agrees a fix exists.
//! Greedy removal from the full set (each read dropped in turn while the
//! promoted workload stays robust, re-verified) gives one none of whose
//! reads can be left out; it is reported as the smallest when the search
//! showed that no set of one read fewer works ([`Suggestion::Promote`]),
//! else as minimal but not proven smallest ([`Suggestion::Minimal`]).

use fixedbitset::FixedBitSet;

use crate::analysis::graph::{build, Edge, Settings, SummaryGraph};
use crate::analysis::oracle::{Compact, View, UNTAGGED};
use crate::analysis::progress::{Progress, Silent, Stage};
use crate::analysis::robustness::{
    check_witness, components, is_robust, is_robust_without, Method, Witness,
};
use crate::model::btp::{StmtType, Workload};

/// A statement of the workload: (program index, statement index).
pub type StmtRef = (usize, usize);

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Suggestion {
    /// Promoting these reads makes the workload robust (re-verified), and
    /// no smaller set does: the search was exhaustive below this size.
    Promote(Vec<StmtRef>),
    /// Promoting these reads makes the workload robust (re-verified) and
    /// none of them can be left out (greedy removal from all candidates),
    /// but the exhaustive search stopped: no fix has at most `none_up_to`
    /// reads, and a fix of a size between that and this one may exist.
    Minimal {
        reads: Vec<StmtRef>,
        none_up_to: usize,
    },
    /// Even with every candidate read promoted a dangerous cycle remains:
    /// no promotion can make the workload robust.
    Impossible { candidates: usize },
    /// The mask with every candidate promoted has no dangerous cycle but
    /// the re-analysed promoted workload has (a promoted read with a twin,
    /// see the module comment), and no smaller set was found.
    NotFound { candidates: usize, tried: usize },
}

impl Suggestion {
    /// The reads to promote, when a verified fix was found.
    pub fn reads(&self) -> Option<&[StmtRef]> {
        match self {
            Suggestion::Promote(r) | Suggestion::Minimal { reads: r, .. } => Some(r),
            _ => None,
        }
    }
}

/// Limits of the search: largest promotion set and number of candidate
/// sets tested.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    pub max_size: usize,
    pub max_tries: usize,
}

impl Default for Budget {
    fn default() -> Budget {
        Budget {
            max_size: 6,
            max_tries: 20_000,
        }
    }
}

/// `w` with the given statements turned into locking reads.
pub fn promoted(w: &Workload, reads: &[StmtRef]) -> Workload {
    let mut w = w.clone();
    for &(p, s) in reads {
        w.programs[p].statements[s].locking = true;
    }
    w
}

/// Key-based reads that start a counterflow edge of some dangerous
/// component: the only promotions that can remove a dangerous cycle.
pub fn candidates(w: &Workload, settings: Settings) -> Vec<StmtRef> {
    candidates_in(w, &build(w, settings))
}

/// [`candidates`] on an already built summary graph of `w`.
pub fn candidates_in(w: &Workload, g: &SummaryGraph) -> Vec<StmtRef> {
    candidates_with(w, g, &components(g, None))
}

/// [`candidates_in`] given the components of `g` (`comp`, as
/// `robustness::components(g, None)`).
pub fn candidates_with(w: &Workload, g: &SummaryGraph, comp: &[u32]) -> Vec<StmtRef> {
    // One flag per statement, read in program and statement order at the
    // end (sorted): a `Vec::contains` per edge made this O(counterflow
    // edges × candidates), 10% of `check` at 3,000 programs, and a hash
    // set per edge was still a tenth of the fix search.
    let mut hit: Vec<Vec<bool>> = w
        .programs
        .iter()
        .map(|p| vec![false; p.statements.len()])
        .collect();
    // Counterflow edges inside a component: both ends in one SCC, which
    // is exactly when the edge can lie on a cycle.
    for e in g
        .edges
        .iter()
        .filter(|e| e.counterflow && comp[e.from as usize] == comp[e.to as usize])
    {
        let (p, s) = source_stmt(g, e);
        let st = &w.programs[p].statements[s];
        if st.ty == StmtType::KeySel && !st.locking {
            hit[p][s] = true;
        }
    }
    hit.iter()
        .enumerate()
        .flat_map(|(p, row)| {
            row.iter()
                .enumerate()
                .filter(|(_, &h)| h)
                .map(move |(s, _)| (p, s))
        })
        .collect()
}

/// The statement an edge leaves from.
fn source_stmt(g: &SummaryGraph, e: &Edge) -> StmtRef {
    let node = &g.nodes[e.from as usize];
    (
        node.ltp.program,
        node.ltp.occurrences[e.from_pos as usize].stmt,
    )
}

/// The edges of `g` that remain when the `promoted` statements become
/// locking reads: by the argument in the module comment, `g` without the
/// counterflow edges leaving them (for tests and tools; the search masks
/// instead).
pub fn masked_edges(g: &SummaryGraph, promoted: &[StmtRef]) -> Vec<Edge> {
    g.edges
        .iter()
        .filter(|e| !(e.counterflow && promoted.contains(&source_stmt(g, e))))
        .copied()
        .collect()
}

/// The smallest verified promotion set (first in lexicographic order of
/// the candidates among the smallest), building the summary graph.
pub fn suggest(w: &Workload, settings: Settings, method: Method, budget: Budget) -> Suggestion {
    suggest_in(w, &build(w, settings), method, budget, &Silent)
}

/// [`suggest`] on `g`, the summary graph of `w` (not robust under
/// `method`).
pub fn suggest_in(
    w: &Workload,
    g: &SummaryGraph,
    method: Method,
    budget: Budget,
    progress: &dyn Progress,
) -> Suggestion {
    suggest_in_components(w, g, &components(g, None), &[], method, budget, progress)
}

/// [`suggest_in`] given the components of `g` (`comp`, as
/// `robustness::components(g, None)`; recomputed if it does not fit) and
/// dangerous cycles of `g` under `method` already found (`known`, the
/// verdict's witnesses; each is checked before it is used).
pub fn suggest_in_components(
    w: &Workload,
    g: &SummaryGraph,
    comp: &[u32],
    known: &[Witness],
    method: Method,
    budget: Budget,
    progress: &dyn Progress,
) -> Suggestion {
    let own;
    let comp = if comp.len() == g.nodes.len() {
        comp
    } else {
        own = components(g, None);
        &own
    };
    let cands = candidates_with(w, g, comp);
    // Each statement's candidate index (its tag), `UNTAGGED` otherwise.
    let mut index: Vec<Vec<u32>> = w
        .programs
        .iter()
        .map(|p| vec![UNTAGGED; p.statements.len()])
        .collect();
    for (i, &(p, s)) in cands.iter().enumerate() {
        index[p][s] = i as u32;
    }
    // Tag each removable edge with its candidate: a promotion set is then
    // a set of dropped tags. The tag is a function of the edge's value.
    let tag_of = |e: &Edge| {
        if !e.counterflow {
            return UNTAGGED;
        }
        let (p, s) = source_stmt(g, e);
        index[p][s]
    };
    let tag = |i: usize| tag_of(&g.edges[i]);
    // A known dangerous cycle with no tagged edge is a cycle of `g`
    // without the tagged edges, so `is_robust_without` below would say
    // "not robust": same answer without its pass over every edge (a
    // Tarjan run and the pivots' aggregates, ~7% of `check` at 3,000
    // programs, issue 26).
    let untouched = |x: &Witness| {
        x.edges.iter().all(|e| tag_of(e) == UNTAGGED) && check_witness(g, x, method).is_ok()
    };
    if known.iter().any(untouched) {
        progress.finish(Stage::FixSearch);
        return Suggestion::Impossible {
            candidates: cands.len(),
        };
    }
    // Every candidate promoted, tested on the per-edge graph before the
    // graph is grouped: when a dangerous cycle remains no promotion helps
    // (heredity, module comment), and grouping the whole graph only to
    // learn that was a third of `allocate` at 3,000 programs (issue 26).
    // The edges dropped are exactly the tagged ones, so this is the
    // grouped graph's test of the full tag mask (`oracle`'s claim).
    let mut all = FixedBitSet::with_capacity(g.edges.len());
    all.extend((0..g.edges.len()).filter(|&i| tag(i) != UNTAGGED));
    if !is_robust_without(g, method, &all) {
        progress.finish(Stage::FixSearch);
        return Suggestion::Impossible {
            candidates: cands.len(),
        };
    }
    drop(all);
    let compact = Compact::new(g, tag);
    let mut search = Search {
        w,
        g,
        compact: &compact,
        method,
        cands: &cands,
        constraints: vec![],
        chosen: vec![],
        chosen_set: FixedBitSet::with_capacity(cands.len()),
        tried: 0,
        budget,
        progress,
    };
    let result = search.run();
    progress.finish(Stage::FixSearch);
    result
}

struct Search<'a> {
    w: &'a Workload,
    g: &'a SummaryGraph,
    compact: &'a Compact,
    method: Method,
    cands: &'a [StmtRef],
    /// Tag sets every robust promotion set must hit.
    constraints: Vec<Vec<u32>>,
    chosen: Vec<u32>,
    chosen_set: FixedBitSet,
    tried: usize,
    budget: Budget,
    progress: &'a dyn Progress,
}

enum Outcome {
    Found(Vec<StmtRef>),
    OutOfBudget,
    Continue,
}

impl Search<'_> {
    fn run(&mut self) -> Suggestion {
        let n = self.cands.len();
        // The mask with every candidate promoted is robust: tested by the
        // caller on the per-edge graph (`suggest_in_components`).
        self.tried += 1;
        // The unpromoted graph is not robust: its cycles seed the
        // constraints.
        self.learn(&FixedBitSet::with_capacity(n));
        // No fix has at most `none_up_to` reads (sizes searched in full).
        let mut none_up_to = 0;
        for size in 1..=self.budget.max_size.min(n) {
            match self.dfs(size, 0) {
                Outcome::Found(set) => return Suggestion::Promote(set),
                Outcome::OutOfBudget => break,
                Outcome::Continue => none_up_to = size,
            }
        }
        // The search stopped before trying every size: never "no fix" then.
        // The mask with every candidate promoted is robust; if the rebuild
        // agrees, drop reads greedily while it stays robust.
        match self.greedy() {
            // Smallest: every smaller size was searched, or no read could be
            // dropped from the full set and each of those n - 1 sets failed
            // on its mask (so do all their subsets: heredity).
            Some((reads, exact))
                if reads.len() <= none_up_to + 1 || (exact && reads.len() == n) =>
            {
                Suggestion::Promote(reads)
            }
            Some((reads, _)) => Suggestion::Minimal { reads, none_up_to },
            None => Suggestion::NotFound {
                candidates: n,
                tried: self.tried,
            },
        }
    }

    /// A verified fix none of whose reads can be left out: from every
    /// candidate, drop each in turn (last first, so the answer keeps the
    /// earliest reads) while the promoted workload stays robust. `None`
    /// when promoting every candidate is not robust once rebuilt. The flag
    /// says every failed removal failed on its mask already.
    fn greedy(&mut self) -> Option<(Vec<StmtRef>, bool)> {
        // (robust, failed on the mask)
        let test = |s: &mut Self, keep: &FixedBitSet| {
            s.tried += 1;
            if !s.masked_robust(keep) {
                return (false, true);
            }
            let set: Vec<StmtRef> = keep.ones().map(|i| s.cands[i]).collect();
            let g = build(&promoted(s.w, &set), s.g.settings);
            (is_robust(&g, None, s.method), false)
        };
        let mut keep = FixedBitSet::with_capacity(self.cands.len());
        keep.insert_range(..);
        if !test(self, &keep).0 {
            return None;
        }
        let mut exact = true;
        for i in (0..self.cands.len()).rev() {
            keep.set(i, false);
            let (ok, on_mask) = test(self, &keep);
            if !ok {
                keep.insert(i);
                exact &= on_mask;
            }
        }
        Some((keep.ones().map(|i| self.cands[i]).collect(), exact))
    }

    fn masked_robust(&self, dropped: &FixedBitSet) -> bool {
        let view = View {
            nodes: None,
            dropped: Some(dropped),
        };
        self.compact.is_robust(view, self.method)
    }

    /// Add the hitting constraints of the dangerous cycles of a mask.
    fn learn(&mut self, dropped: &FixedBitSet) {
        let view = View {
            nodes: None,
            dropped: Some(dropped),
        };
        for c in self.compact.cycles(self.g, view, self.method) {
            if !self.constraints.contains(&c.tags) {
                self.constraints.push(c.tags);
            }
        }
    }

    /// Extend `chosen` to `size` elements from indices ≥ `start`, in
    /// lexicographic order, visiting only sets that can still hit every
    /// constraint.
    fn dfs(&mut self, size: usize, start: usize) -> Outcome {
        if self.chosen.len() == size {
            return self.test();
        }
        let left = size - self.chosen.len();
        for i in start..=self.cands.len() - left {
            self.chosen.push(i as u32);
            self.chosen_set.insert(i);
            let r = if self.feasible(left - 1, i + 1) {
                self.dfs(size, i + 1)
            } else {
                Outcome::Continue
            };
            self.chosen.pop();
            self.chosen_set.set(i, false);
            if !matches!(r, Outcome::Continue) {
                return r;
            }
        }
        Outcome::Continue
    }

    /// Can `left` more candidates from indices ≥ `next` hit every
    /// constraint the chosen ones miss? Pairwise disjoint missed
    /// constraints need one candidate each: a lower bound.
    fn feasible(&self, left: usize, next: usize) -> bool {
        let mut used = FixedBitSet::with_capacity(self.cands.len());
        let mut need = 0;
        for c in &self.constraints {
            if c.iter().any(|&t| self.chosen_set.contains(t as usize)) {
                continue;
            }
            let tail = &c[c.partition_point(|&t| (t as usize) < next)..];
            if tail.is_empty() {
                return false;
            }
            if tail.iter().all(|&t| !used.contains(t as usize)) {
                need += 1;
                if need > left {
                    return false;
                }
                tail.iter().for_each(|&t| used.insert(t as usize));
            }
        }
        true
    }

    fn test(&mut self) -> Outcome {
        if self.tried >= self.budget.max_tries {
            return Outcome::OutOfBudget;
        }
        self.tried += 1;
        self.progress.update(Stage::FixSearch, self.tried as u64);
        let dropped = self.chosen_set.clone();
        if !self.masked_robust(&dropped) {
            self.learn(&dropped);
            return Outcome::Continue;
        }
        let set: Vec<StmtRef> = self
            .chosen
            .iter()
            .map(|&i| self.cands[i as usize])
            .collect();
        // The mask is robust; the rebuild decides (they differ only when a
        // promoted read has a twin, see the module comment).
        if is_robust(
            &build(&promoted(self.w, &set), self.g.settings),
            None,
            self.method,
        ) {
            Outcome::Found(set)
        } else {
            Outcome::Continue
        }
    }
}
