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
//! and (b) aggregates over the edges of an SCC: whether some edge is
//! non-counterflow (per component), whether some edge entering v is
//! counterflow or starts with a read (`strong_in`), the largest `to_pos`
//! of an edge entering v (`latest_in`), the smallest `from_pos` of a
//! counterflow edge leaving u (`earliest_cf_out`), and (type I) whether
//! some edge is counterflow. Each aggregate is an OR, max or min over
//! edges, so it equals the same OR/max/min over groups of the per-group
//! OR/max/min. A mask removes whole groups (a node mask removes every
//! group at a masked node; a tag mask removes every group with that tag),
//! so the aggregates of a masked graph are those of its remaining groups,
//! and the verdict is `robustness::find`'s verdict, decided the same way
//! per node. `tests/oracle.rs` checks this against `is_robust` on random
//! workloads and masks.
//!
//! Each group keeps one representative edge per aggregate, so a dangerous
//! cycle found here can be turned back into real edges (`cycle`).

use std::collections::{HashMap, VecDeque};

use fixedbitset::FixedBitSet;

use crate::analysis::graph::{Edge, SummaryGraph};
use crate::analysis::robustness::Method;
use crate::analysis::scc::tarjan;

/// Tag of edges no tag mask removes.
pub const UNTAGGED: u32 = u32::MAX;
const NONE: u32 = u32::MAX;

/// The edges from one node to one node with one tag, summarised.
#[derive(Debug, Clone, Copy)]
struct Group {
    to: u32,
    tag: u32,
    /// Some edge is not counterflow (`rep_nc`).
    nc: bool,
    /// Some edge is counterflow or leaves a statement that starts with a
    /// read (`rep_strong`).
    strong: bool,
    /// Largest `to_pos` (`rep_latest`).
    max_to_pos: u16,
    /// Smallest `from_pos` of a counterflow edge, `u16::MAX` if none
    /// (`rep_cf`).
    min_cf_from: u16,
    rep_nc: u32,
    rep_strong: u32,
    /// Some edge may be an rw-antidependency (`SummaryGraph::rw`; the
    /// snapshot test's incoming edge), `rep_si`, or `NONE`.
    rep_si: u32,
    rep_latest: u32,
    rep_cf: u32,
    /// A counterflow edge not ruled out at the snapshot levels
    /// (`SummaryGraph::fuw`), or `NONE`.
    rep_cf_si: u32,
}

impl Group {
    fn has_cf(&self) -> bool {
        self.rep_cf != NONE
    }
}

/// The grouped graph. Groups of node u are `groups[row[u]..row[u + 1]]`.
pub struct Compact {
    n: usize,
    row: Vec<u32>,
    groups: Vec<Group>,
}

/// A dangerous pair found in one SCC, as group indices.
#[derive(Debug, Clone, Copy)]
struct Found {
    comp: u32,
    /// Type II: the group of e3 (into v) and of e4 (counterflow, out of
    /// v), with which representative of e3's group qualifies. Type I:
    /// `first == second`, a group with a counterflow edge.
    first: u32,
    first_rep: Rep,
    second: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rep {
    Strong,
    Si,
    Latest,
    Cf,
    CfSi,
    Path,
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
                let strong =
                    e.counterflow || g.nodes[u].types[e.from_pos as usize].starts_with_read();
                add(
                    &mut groups[gi as usize],
                    e,
                    i as u32,
                    strong,
                    g.rw.contains(i),
                    g.fuw.contains(i),
                );
            }
        }
        row.push(groups.len() as u32);
        Compact { n, row, groups }
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
    fn components(&self, view: View) -> Vec<u32> {
        tarjan(
            self.n,
            |v| view.node(v),
            |u| self.row[u] as usize..self.row[u + 1] as usize,
            |at| {
                let g = &self.groups[at];
                view.group(g).then_some(g.to as usize)
            },
        )
    }

    /// `robustness::find` over groups: per SCC the first dangerous pair.
    fn find(&self, view: View, method: Method, stop_at_first: bool) -> Outcome {
        let comp = self.components(view);
        let n = self.n;
        let mut found = vec![];
        let inside = |u: usize, g: &Group| comp[u] != NONE && comp[u] == comp[g.to as usize];
        let active = |u: usize| comp[u] != NONE;
        if method == Method::TypeI {
            let mut done = FixedBitSet::with_capacity(n);
            for u in (0..n).filter(|&u| active(u)) {
                for gi in self.out(u) {
                    let g = &self.groups[gi];
                    if g.has_cf() && view.group(g) && inside(u, g) && !done.put(comp[u] as usize) {
                        found.push(Found {
                            comp: comp[u],
                            first: gi as u32,
                            first_rep: Rep::Cf,
                            second: gi as u32,
                        });
                        if stop_at_first {
                            return Outcome { comp, found };
                        }
                    }
                }
            }
            return Outcome { comp, found };
        }
        let mut has_nc = FixedBitSet::with_capacity(n);
        let mut strong_in = vec![NONE; n];
        let mut latest_in = vec![NONE; n];
        let mut earliest_cf_out = vec![NONE; n];
        for u in (0..n).filter(|&u| active(u)) {
            for gi in self.out(u) {
                let g = &self.groups[gi];
                if !view.group(g) || !inside(u, g) {
                    continue;
                }
                let v = g.to as usize;
                if g.nc {
                    has_nc.insert(comp[u] as usize);
                }
                // Snapshot: only an edge that may be an rw-antidependency
                // counts (docs/allocation.md).
                let strong = if method == Method::Snapshot {
                    g.rep_si != NONE
                } else {
                    g.strong
                };
                if strong && strong_in[v] == NONE {
                    strong_in[v] = gi as u32;
                }
                if latest_in[v] == NONE
                    || self.groups[latest_in[v] as usize].max_to_pos < g.max_to_pos
                {
                    latest_in[v] = gi as u32;
                }
                // Snapshot: the position of e4 does not matter, only that
                // first-updater-wins does not rule it out.
                let cf_ok = if method == Method::Snapshot {
                    g.rep_cf_si != NONE
                } else {
                    g.has_cf()
                };
                if cf_ok
                    && (earliest_cf_out[u] == NONE
                        || self.groups[earliest_cf_out[u] as usize].min_cf_from > g.min_cf_from)
                {
                    earliest_cf_out[u] = gi as u32;
                }
            }
        }
        let mut done = FixedBitSet::with_capacity(n);
        for v in 0..n {
            let c = comp[v];
            if c == NONE || !has_nc.contains(c as usize) || done.contains(c as usize) {
                continue;
            }
            let out = earliest_cf_out[v];
            if out == NONE {
                continue;
            }
            let pair = if strong_in[v] != NONE {
                let rep = if method == Method::Snapshot {
                    Rep::Si
                } else {
                    Rep::Strong
                };
                Some((strong_in[v], rep))
            } else if method == Method::Snapshot {
                // Under snapshot isolation only a strong incoming edge
                // makes a pair dangerous (docs/allocation.md).
                None
            } else {
                let inc = latest_in[v];
                (inc != NONE
                    && self.groups[out as usize].min_cf_from < self.groups[inc as usize].max_to_pos)
                    .then_some((inc, Rep::Latest))
            };
            if let Some((inc, rep)) = pair {
                done.insert(c as usize);
                found.push(Found {
                    comp: c,
                    first: inc,
                    first_rep: rep,
                    second: out,
                });
                if stop_at_first {
                    break;
                }
            }
        }
        Outcome { comp, found }
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
            .map(|f| self.cycle(g, view, &out.comp, f, method))
            .collect()
    }

    /// The first dangerous cycle of the view, or `None` when robust: the
    /// test of [`Compact::is_robust`] with a certificate on failure.
    pub fn first_cycle(&self, g: &SummaryGraph, view: View, method: Method) -> Option<Cycle> {
        let out = self.find(view, method, true);
        out.found
            .first()
            .map(|f| self.cycle(g, view, &out.comp, f, method))
    }

    fn cycle(
        &self,
        g: &SummaryGraph,
        view: View,
        comp: &[u32],
        f: &Found,
        method: Method,
    ) -> Cycle {
        let mut steps: Vec<(u32, Rep)> = vec![(f.first, f.first_rep)];
        if method != Method::TypeI {
            let rep = if method == Method::Snapshot {
                Rep::CfSi
            } else {
                Rep::Cf
            };
            steps.push((f.second, rep));
        }
        let source = self.source_of(f.first);
        let end = self.groups[steps[steps.len() - 1].0 as usize].to;
        let back = self.path(view, comp, f.comp, end, source);
        let nc_on = |s: &[(u32, Rep)]| {
            s.iter()
                .any(|&(gi, rep)| !g.edges[self.rep(gi, rep)].counterflow)
        };
        if method == Method::TypeI || nc_on(&steps) || nc_on(&back) {
            steps.extend(back);
        } else {
            // Type II needs a non-counterflow edge on the cycle: route
            // through one of the component (there is one, or `find` would
            // not have reported it).
            let nc = (0..self.n)
                .filter(|&u| comp[u] == f.comp)
                .flat_map(|u| self.out(u).map(move |gi| (u, gi)))
                .find(|&(_, gi)| {
                    let gr = &self.groups[gi];
                    gr.nc && view.group(gr) && comp[gr.to as usize] == f.comp
                });
            match nc {
                Some((u, gi)) => {
                    steps.extend(self.path(view, comp, f.comp, end, u as u32));
                    steps.push((gi as u32, Rep::Path));
                    let to = self.groups[gi].to;
                    steps.extend(self.path(view, comp, f.comp, to, source));
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
            edges: steps.iter().map(|&(gi, rep)| self.rep(gi, rep)).collect(),
            tags,
        }
    }

    /// The edge a step of a cycle uses.
    fn rep(&self, gi: u32, rep: Rep) -> usize {
        let g = &self.groups[gi as usize];
        (match rep {
            Rep::Strong => g.rep_strong,
            Rep::Si => g.rep_si,
            Rep::Latest => g.rep_latest,
            Rep::Cf => g.rep_cf,
            Rep::CfSi => g.rep_cf_si,
            // Any edge will do on the way back; a non-counterflow one is
            // never removed by a promotion.
            Rep::Path if g.nc => g.rep_nc,
            Rep::Path => g.rep_cf,
        }) as usize
    }

    fn source_of(&self, gi: u32) -> u32 {
        // Rows are contiguous: binary search the row containing gi.
        (self.row.partition_point(|&s| s <= gi) - 1) as u32
    }

    /// Steps from `a` to `b` inside component `c` (empty if a == b).
    fn path(&self, view: View, comp: &[u32], c: u32, a: u32, b: u32) -> Vec<(u32, Rep)> {
        if a == b {
            return vec![];
        }
        let n = self.n;
        let mut dist = vec![u32::MAX; n];
        let mut prev = vec![NONE; n];
        let mut dq = VecDeque::from([a]);
        dist[a as usize] = 0;
        while let Some(u) = dq.pop_front() {
            for gi in self.out(u as usize) {
                let g = &self.groups[gi];
                let v = g.to as usize;
                if !view.group(g) || comp[v] != c {
                    continue;
                }
                let w = u32::from(!(g.nc || g.tag == UNTAGGED));
                let d = dist[u as usize] + w;
                if d < dist[v] {
                    dist[v] = d;
                    prev[v] = gi as u32;
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
            steps.push((gi, Rep::Path));
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

fn new_group(to: u32, tag: u32) -> Group {
    Group {
        to,
        tag,
        nc: false,
        strong: false,
        max_to_pos: 0,
        min_cf_from: u16::MAX,
        rep_nc: NONE,
        rep_strong: NONE,
        rep_si: NONE,
        rep_latest: NONE,
        rep_cf: NONE,
        rep_cf_si: NONE,
    }
}

fn add(g: &mut Group, e: &Edge, i: u32, strong: bool, rw: bool, fuw: bool) {
    if rw && g.rep_si == NONE {
        g.rep_si = i;
    }
    if e.counterflow && !fuw && g.rep_cf_si == NONE {
        g.rep_cf_si = i;
    }
    if !e.counterflow && !g.nc {
        g.nc = true;
        g.rep_nc = i;
    }
    if strong && !g.strong {
        g.strong = true;
        g.rep_strong = i;
    }
    if g.rep_latest == NONE || e.to_pos > g.max_to_pos {
        g.max_to_pos = e.to_pos;
        g.rep_latest = i;
    }
    if e.counterflow && (g.rep_cf == NONE || e.from_pos < g.min_cf_from) {
        g.min_cf_from = e.from_pos;
        g.rep_cf = i;
    }
}
