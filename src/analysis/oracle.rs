//! Many robustness tests on masked views of one summary graph: the
//! oracle behind the subset search (node masks: a set of programs) and
//! the fix search (tag masks: a set of promoted reads).
//!
//! `robustness::is_robust` on a mask re-filters the edge list, sorts and
//! deduplicates every row and builds a CSR before Tarjan: ≈99% of a test.
//! Here the edges are folded once into *groups*, one per (source node,
//! target node, tag), and a test only walks the groups.
//!
//! **Why groups lose nothing.** Both tests in `robustness` look at an edge
//! only through (a) whether its two ends are in one strongly connected
//! component of the (masked) graph, which depends on the node pair alone,
//! and (b) whether some edge of an SCC is non-counterflow, and the
//! dangerous-pair aggregates of `rules::pair` (`Incoming`, `Outgoing`)
//! of each node, or (type I) whether some edge is counterflow. Each
//! aggregate is an OR, max or min over edges, so it equals the same
//! OR/max/min over groups of the per-group aggregates (`merge`, checked
//! against adding edge by edge in `rules::pair`'s test). A mask removes
//! whole groups (a node mask removes every group at a masked node; a tag
//! mask removes every group with that tag), so the aggregates of a masked
//! graph are those of its remaining groups, and the verdict is
//! `robustness::find`'s verdict, decided by the same `dangerous_pair` per
//! node. `tests/oracle.rs` checks this against `is_robust` on random
//! workloads and masks.
//!
//! Each group keeps one representative edge per aggregate, so a dangerous
//! cycle found here can be turned back into real edges (`cycle`).

use std::collections::{HashMap, VecDeque};

use fixedbitset::FixedBitSet;

use crate::analysis::graph::SummaryGraph;
use crate::analysis::robustness::Method;
use crate::analysis::rules::{dangerous_pair, Incoming, Outgoing};
use crate::analysis::scc::tarjan;
use crate::model::isolation::Level;

/// Tag of edges no tag mask removes.
pub const UNTAGGED: u32 = u32::MAX;
const NONE: u32 = u32::MAX;

/// The edges from one node to one node with one tag, summarised: the
/// dangerous-pair aggregates (`rules::pair`) of its edges, as the edge
/// into the target and out of the source.
#[derive(Debug, Clone, Copy)]
struct Group {
    to: u32,
    tag: u32,
    /// A non-counterflow edge, or `NONE`.
    rep_nc: u32,
    inc: Incoming<u32>,
    out: Outgoing<u32>,
}

impl Group {
    fn nc(&self) -> bool {
        self.rep_nc != NONE
    }
    /// A counterflow edge, if any.
    fn cf(&self) -> Option<u32> {
        self.out.earliest_cf.map(|(_, e)| e)
    }
}

/// The grouped graph. Groups of node u are `groups[row[u]..row[u + 1]]`,
/// sorted by target.
pub struct Compact {
    n: usize,
    row: Vec<u32>,
    groups: Vec<Group>,
    /// Adjacency bits, when every group is untagged and the graph small
    /// enough (the subset search's graph): see [`Bits`].
    bits: Option<Bits>,
}

/// Each node's row as a bit row over target nodes, with the number of
/// groups before each word. A node-masked test then reaches the groups
/// into the mask by `row & mask`, word by word, instead of scanning the
/// whole row: the subset search tests sets of about a tenth of the
/// programs, so most of a row pointed outside the mask (issue 26: 8,064
/// tests at 3,000 programs, each scanning every row of its mask).
struct Bits {
    words: usize,
    adj: Vec<usize>,
    /// Groups of row u before word w: `rank[u * words + w]`.
    rank: Vec<u32>,
}

/// Largest node count for [`Bits`] (n²/8 bytes of adjacency bits).
const BITS_UP_TO: usize = 20_000;
const WORD: usize = usize::BITS as usize;

/// The groups of one view, per node (CSR over node order): built once per
/// test, then walked by every step of it.
struct Local {
    start: Vec<u32>,
    groups: Vec<u32>,
    /// Each group's target, beside it: Tarjan and the component checks
    /// read only this, not the (large, randomly placed) groups.
    to: Vec<u32>,
}

impl Local {
    /// The (group, target) pairs of node u.
    fn out(&self, u: usize) -> impl Iterator<Item = (u32, usize)> + '_ {
        let r = self.start[u] as usize..self.start[u + 1] as usize;
        self.groups[r.clone()]
            .iter()
            .zip(&self.to[r])
            .map(|(&gi, &v)| (gi, v as usize))
    }
}

/// A step of a cycle: a group and the edge of it the cycle uses.
type Step = (u32, u32);

/// A dangerous pair found in one SCC: e3 and e4 as steps (type I: one
/// step, a counterflow edge, twice).
#[derive(Debug, Clone, Copy)]
struct Found {
    comp: u32,
    first: Step,
    second: Step,
}

/// Node and tag masks of one test; `None` = everything present.
#[derive(Clone, Copy, Default)]
pub struct View<'a> {
    /// Nodes taking part.
    pub nodes: Option<&'a FixedBitSet>,
    /// Tags whose groups are removed.
    pub dropped: Option<&'a FixedBitSet>,
}

impl View<'_> {
    fn node(&self, v: usize) -> bool {
        self.nodes.is_none_or(|m| m.contains(v))
    }
    fn group(&self, g: &Group) -> bool {
        self.node(g.to as usize)
            && (g.tag == UNTAGGED || self.dropped.is_none_or(|d| !d.contains(g.tag as usize)))
    }
}

/// Per-test result: SCC ids and the dangerous pairs, one per SCC.
struct Outcome {
    comp: Vec<u32>,
    found: Vec<Found>,
    local: Local,
}

impl Compact {
    /// Group the edges of `g`; `tag(i)` is the tag of edge `g.edges[i]`
    /// ([`UNTAGGED`] for edges no mask removes).
    pub fn new(g: &SummaryGraph, tag: impl Fn(usize) -> u32) -> Compact {
        let n = g.nodes.len();
        let mut row = Vec::with_capacity(n + 1);
        let mut groups: Vec<Group> = vec![];
        // Untagged groups of the current row by target: a stamp array
        // instead of a hash map, since almost every edge is untagged.
        let mut slot: Vec<u32> = vec![NONE; n];
        let mut stamp: Vec<u32> = vec![NONE; n];
        let mut tagged: HashMap<(u32, u32), u32> = HashMap::new();
        for u in 0..n {
            row.push(groups.len() as u32);
            tagged.clear();
            for i in g.out_start[u]..g.out_start[u + 1] {
                let e = &g.edges[i];
                let t = tag(i);
                let gi = if t == UNTAGGED {
                    if stamp[e.to as usize] != u as u32 {
                        stamp[e.to as usize] = u as u32;
                        slot[e.to as usize] = groups.len() as u32;
                        groups.push(new_group(e.to, t));
                    }
                    slot[e.to as usize]
                } else {
                    let next = groups.len() as u32;
                    let gi = *tagged.entry((e.to, t)).or_insert(next);
                    if gi == next {
                        groups.push(new_group(e.to, t));
                    }
                    gi
                };
                let gr = &mut groups[gi as usize];
                if !e.counterflow && gr.rep_nc == NONE {
                    gr.rep_nc = i as u32;
                }
                // The levels of P3 and P5 are merged in by `find`.
                gr.inc.add(g.pair_in(i), false, i as u32);
                gr.out.add(g.pair_out(i), false, i as u32);
            }
            let start = row[u] as usize;
            groups[start..].sort_by_key(|gr| (gr.to, gr.tag));
        }
        row.push(groups.len() as u32);
        let untagged = groups.iter().all(|gr| gr.tag == UNTAGGED);
        let bits = (untagged && n <= BITS_UP_TO).then(|| Bits::new(n, &row, &groups));
        Compact {
            n,
            row,
            groups,
            bits,
        }
    }

    /// The groups of `view` per node: by the adjacency bits for a node
    /// mask, else by scanning each row.
    fn local(&self, view: View) -> Local {
        let mut start = Vec::with_capacity(self.n + 1);
        let mut groups: Vec<u32> = vec![];
        let mut to: Vec<u32> = vec![];
        match (&self.bits, view.nodes, view.dropped) {
            (Some(b), Some(mask), None) => {
                let m = mask.as_slice();
                for u in 0..self.n {
                    start.push(groups.len() as u32);
                    if !mask.contains(u) {
                        continue;
                    }
                    let row = &b.adj[u * b.words..(u + 1) * b.words];
                    for (w, (&a, &mw)) in row.iter().zip(m).enumerate() {
                        let mut hit = a & mw;
                        while hit != 0 {
                            let below = a & ((1usize << hit.trailing_zeros()) - 1);
                            groups.push(self.row[u] + b.rank[u * b.words + w] + below.count_ones());
                            to.push((w * WORD + hit.trailing_zeros() as usize) as u32);
                            hit &= hit - 1;
                        }
                    }
                }
            }
            _ => {
                for u in 0..self.n {
                    start.push(groups.len() as u32);
                    if view.node(u) {
                        for gi in self.out(u).filter(|&gi| view.group(&self.groups[gi])) {
                            groups.push(gi as u32);
                            to.push(self.groups[gi].to);
                        }
                    }
                }
            }
        }
        start.push(groups.len() as u32);
        Local { start, groups, to }
    }

    /// Number of groups (for sizing benchmarks and tests).
    pub fn groups(&self) -> usize {
        self.groups.len()
    }

    fn out(&self, u: usize) -> std::ops::Range<usize> {
        self.row[u] as usize..self.row[u + 1] as usize
    }

    /// True when the view has no type-II (type-I) cycle: the same verdict
    /// as `robustness::is_robust` on the same edges.
    pub fn is_robust(&self, view: View, method: Method) -> bool {
        self.find(view, method, true).found.is_empty()
    }

    /// Strongly connected components of the view (iterative Tarjan);
    /// `NONE` for nodes outside it.
    fn components(&self, view: View, local: &Local) -> Vec<u32> {
        tarjan(
            self.n,
            |v| view.node(v),
            |u| local.start[u] as usize..local.start[u + 1] as usize,
            |at| Some(local.to[at] as usize),
        )
    }

    /// `robustness::find` over groups: per SCC the first dangerous pair.
    fn find(&self, view: View, method: Method, stop_at_first: bool) -> Outcome {
        let local = self.local(view);
        let comp = self.components(view, &local);
        let found = if method == Method::TypeI {
            self.find_type_i(&local, &comp, stop_at_first)
        } else {
            self.find_pairs(&local, &comp, method.level(), stop_at_first)
        };
        Outcome { comp, found, local }
    }

    /// Type I: per SCC, the first group with a counterflow edge inside it.
    fn find_type_i(&self, local: &Local, comp: &[u32], stop_at_first: bool) -> Vec<Found> {
        let mut found = vec![];
        let mut done = FixedBitSet::with_capacity(self.n);
        for u in (0..self.n).filter(|&u| comp[u] != NONE) {
            for (gi, v) in local.out(u) {
                if comp[u] != comp[v] || done.contains(comp[u] as usize) {
                    continue;
                }
                let Some(e) = self.groups[gi as usize].cf() else {
                    continue;
                };
                if !done.put(comp[u] as usize) {
                    let step = (gi, e);
                    found.push(Found {
                        comp: comp[u],
                        first: step,
                        second: step,
                    });
                    if stop_at_first {
                        return found;
                    }
                }
            }
        }
        found
    }

    /// Type II, every node at `level`: the groups' aggregates merged per
    /// node, then `rules::dangerous_pair` per node.
    fn find_pairs(&self, local: &Local, comp: &[u32], level: Level, stop: bool) -> Vec<Found> {
        let n = self.n;
        let mut has_nc = FixedBitSet::with_capacity(n);
        let mut inc: Vec<Incoming<Step>> = vec![Incoming::default(); n];
        let mut out: Vec<Outgoing<Step>> = vec![Outgoing::default(); n];
        let ssi = level == Level::Serializable;
        for u in (0..n).filter(|&u| comp[u] != NONE) {
            for (gi, v) in local.out(u) {
                if comp[u] != comp[v] {
                    continue;
                }
                let g = &self.groups[gi as usize];
                if g.nc() {
                    has_nc.insert(comp[u] as usize);
                }
                inc[v].merge(&g.inc, ssi, |e| (gi, e));
                out[u].merge(&g.out, ssi, |e| (gi, e));
            }
        }
        let mut found = vec![];
        let mut done = FixedBitSet::with_capacity(n);
        for v in 0..n {
            let c = comp[v];
            if c == NONE || !has_nc.contains(c as usize) || done.contains(c as usize) {
                continue;
            }
            if let Some((first, second, _)) = dangerous_pair(level, &inc[v], &out[v]) {
                done.insert(c as usize);
                found.push(Found {
                    comp: c,
                    first,
                    second,
                });
                if stop {
                    break;
                }
            }
        }
        found
    }

    /// One dangerous cycle per SCC of the view that has one, as real edges
    /// (indices into `g.edges`, `g` the graph this was built from), chosen
    /// to pass through as few tagged groups as possible (0-1 BFS: a step
    /// over a non-counterflow edge or through an untagged group costs
    /// nothing). Every cycle is a witness `robustness::check_witness`
    /// accepts on the view's edges.
    pub fn cycles(&self, g: &SummaryGraph, view: View, method: Method) -> Vec<Cycle> {
        let out = self.find(view, method, false);
        out.found
            .iter()
            .map(|f| self.cycle(g, &out, f, method))
            .collect()
    }

    /// The first dangerous cycle of the view, or `None` when robust: the
    /// test of [`Compact::is_robust`] with a certificate on failure.
    pub fn first_cycle(&self, g: &SummaryGraph, view: View, method: Method) -> Option<Cycle> {
        let out = self.find(view, method, true);
        out.found.first().map(|f| self.cycle(g, &out, f, method))
    }

    fn cycle(&self, g: &SummaryGraph, out: &Outcome, f: &Found, method: Method) -> Cycle {
        let (comp, local) = (&out.comp[..], &out.local);
        let mut steps: Vec<Step> = vec![f.first];
        if method != Method::TypeI {
            steps.push(f.second);
        }
        let source = self.source_of(f.first.0);
        let end = self.groups[steps[steps.len() - 1].0 as usize].to;
        let back = self.path(local, comp, f.comp, end, source);
        let nc_on = |s: &[Step]| s.iter().any(|&(_, e)| !g.edges[e as usize].counterflow);
        if method == Method::TypeI || nc_on(&steps) || nc_on(&back) {
            steps.extend(back);
        } else {
            // Type II needs a non-counterflow edge on the cycle: route
            // through one of the component (there is one, or `find` would
            // not have reported it).
            let nc = (0..self.n)
                .filter(|&u| comp[u] == f.comp)
                .flat_map(|u| local.out(u).map(move |(gi, _)| (u, gi as usize)))
                .find(|&(_, gi)| {
                    let gr = &self.groups[gi];
                    gr.nc() && comp[gr.to as usize] == f.comp
                });
            match nc {
                Some((u, gi)) => {
                    steps.extend(self.path(local, comp, f.comp, end, u as u32));
                    steps.push((gi as u32, self.groups[gi].rep_nc));
                    let to = self.groups[gi].to;
                    steps.extend(self.path(local, comp, f.comp, to, source));
                }
                None => steps.extend(back),
            }
        }
        // A tagged group holds only counterflow edges of its tag, so the
        // cycle keeps its edge exactly while that tag is not dropped.
        let mut tags: Vec<u32> = steps
            .iter()
            .map(|&(gi, _)| self.groups[gi as usize].tag)
            .filter(|&t| t != UNTAGGED)
            .collect();
        tags.sort_unstable();
        tags.dedup();
        Cycle {
            edges: steps.iter().map(|&(_, e)| e as usize).collect(),
            tags,
        }
    }

    /// The edge a step on the way back uses: any will do; a
    /// non-counterflow one is never removed by a promotion.
    fn path_step(&self, gi: u32) -> Step {
        let g = &self.groups[gi as usize];
        (
            gi,
            if g.nc() {
                g.rep_nc
            } else {
                g.cf().unwrap_or(NONE)
            },
        )
    }

    fn source_of(&self, gi: u32) -> u32 {
        // Rows are contiguous: binary search the row containing gi.
        (self.row.partition_point(|&s| s <= gi) - 1) as u32
    }

    /// Steps from `a` to `b` inside component `c` (empty if a == b).
    fn path(&self, local: &Local, comp: &[u32], c: u32, a: u32, b: u32) -> Vec<Step> {
        if a == b {
            return vec![];
        }
        let n = self.n;
        let mut dist = vec![u32::MAX; n];
        let mut prev = vec![NONE; n];
        let mut dq = VecDeque::from([a]);
        dist[a as usize] = 0;
        while let Some(u) = dq.pop_front() {
            // 0-1 BFS pops nodes in order of distance: b's path is final
            // once b is popped, and nothing after changes it.
            if u == b {
                break;
            }
            for (gi, v) in local.out(u as usize) {
                if comp[v] != c {
                    continue;
                }
                let g = &self.groups[gi as usize];
                let w = u32::from(!(g.nc() || g.tag == UNTAGGED));
                let d = dist[u as usize] + w;
                if d < dist[v] {
                    dist[v] = d;
                    prev[v] = gi;
                    if w == 0 {
                        dq.push_front(v as u32);
                    } else {
                        dq.push_back(v as u32);
                    }
                }
            }
        }
        let mut steps = vec![];
        let mut at = b;
        while at != a {
            let gi = prev[at as usize];
            if gi == NONE {
                return vec![];
            }
            steps.push(self.path_step(gi));
            at = self.source_of(gi);
        }
        steps.reverse();
        steps
    }
}

/// A dangerous cycle: real edges, and the tags of the masked groups its
/// counterflow edges come from. Removing any one of those tags is the
/// only way to break this particular cycle.
#[derive(Debug, Clone)]
pub struct Cycle {
    pub edges: Vec<usize>,
    pub tags: Vec<u32>,
}

impl Bits {
    fn new(n: usize, row: &[u32], groups: &[Group]) -> Bits {
        let words = n.div_ceil(WORD);
        let mut adj = vec![0usize; n * words];
        let mut rank = vec![0u32; n * words];
        for u in 0..n {
            let bits = &mut adj[u * words..(u + 1) * words];
            for g in &groups[row[u] as usize..row[u + 1] as usize] {
                bits[g.to as usize / WORD] |= 1 << (g.to as usize % WORD);
            }
            let mut before = 0;
            for w in 0..words {
                rank[u * words + w] = before;
                before += bits[w].count_ones();
            }
        }
        Bits { words, adj, rank }
    }
}

fn new_group(to: u32, tag: u32) -> Group {
    Group {
        to,
        tag,
        rep_nc: NONE,
        inc: Incoming::default(),
        out: Outgoing::default(),
    }
}
