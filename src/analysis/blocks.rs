//! The summary graph in block form (issue 26): the type-II, type-I and
//! allocation tests without writing one edge, in time linear in the
//! statement occurrences and the class pairs.
//!
//! Algorithm 1 decides an edge from occurrence (u, p) to occurrence
//! (v, q) of one relation from the two occurrences' classes alone (their
//! [`Effective`](super::rules::Effective) sets, `graph::Occurrences`):
//! every occurrence of class ci has the same edge kinds to every
//! occurrence of class cj. So the edges are *blocks* — all of class ci ×
//! all of class cj, with the kinds of the class pair — and the counts of
//! Table 2 are Σ over class pairs of |ci| · |cj| · |kinds| ([`Blocks::
//! edge_counts`]).
//!
//! # Why the block test equals Algorithm 2
//!
//! (1) *Components.* The hub graph has the program nodes, an out-hub
//! O(ci) and an in-hub I(cj) per class, and arcs u → O(ci) for each
//! occurrence of ci in u, O(ci) → I(cj) when the pair has an edge kind,
//! I(cj) → v for each occurrence of cj in v. Arcs only go node → O → I →
//! node, so a hub path between program nodes is a sequence of segments
//! u → O(ci) → I(cj) → v, each of which is a summary-graph edge u → v,
//! and every edge is such a segment. Reachability between program nodes,
//! hence the partition of program nodes into strongly connected
//! components, is the summary graph's.
//!
//! (2) *Aggregates.* `robustness` decides per component from whether it
//! has a non-counterflow edge and, per node v, the aggregates
//! `rules::pair::{Incoming, Outgoing}` over the edges inside the
//! component that enter / leave v. An edge inside component c entering
//! v at occurrence (q, cj) exists from class ci iff ci occurs in some
//! node of c and the pair (ci, cj) has the kind; what the rule reads of
//! it (counterflow, q3 a read, rw, to_pos = q; its source SERIALIZABLE or
//! not) depends only on (ci, cj, kind, q) and on whether ci occurs in c
//! at a SERIALIZABLE node or at another. So enumerating, per occurrence
//! of v, the classes present in c — with one representative occurrence
//! per (component, class, SERIALIZABLE or not) — adds to v's aggregate
//! exactly the set of rule inputs its real edges add (each at least once,
//! with real edges as representatives). `dangerous_pair` depends only on
//! that set (each field is a first/OR/min/max: `rules::pair`'s proptest
//! checks it equals "some pair is dangerous"), so it finds a pair iff the
//! per-edge search does, at every level. The same holds for outgoing
//! counterflow edges, for "the component has a non-counterflow edge"
//! (two classes present in c with that kind) and for type I (two classes
//! present with a counterflow kind). ∎
//!
//! The pair found is named by real edges, but not necessarily the ones
//! the per-edge search picks first. `tests/blocks.rs` compares verdicts
//! and edge counts with the per-edge graph, the test oracle, on random
//! workloads.

use std::collections::HashMap;

use super::graph::{make_nodes, Edge, Node, Occurrences, Settings};
use super::robustness::Method;
use super::rules::{Incoming, Outgoing, Reason};
use super::scc::{tarjan, NONE};
use super::unfold::unfold_workload;
use crate::model::btp::Workload;
use crate::model::isolation::{Allocation, Level};

/// The summary graph's nodes and edge blocks, without edges.
pub struct Blocks {
    pub nodes: Vec<Node>,
    /// Node indices of each program.
    pub program_nodes: Vec<Vec<usize>>,
    occ: Occurrences,
    /// `graph::Occurrences::kind_tables`: per relation, per local class
    /// pair, bit 0 non-counterflow, 1 counterflow, 2 rw, 3 fuw.
    kinds: Vec<Vec<u8>>,
}

/// A representative occurrence of a class in a component: the first, and
/// the first at a node whose program is not SERIALIZABLE.
#[derive(Clone, Copy)]
struct Present {
    any: (u32, u16, bool),
    plain: Option<(u32, u16)>,
}

/// Per component: which classes occur in it (by relation), with
/// representatives.
struct Presence {
    comp: Vec<u32>,
    /// (component, relation) → local classes present, in first-seen order.
    classes: HashMap<(u32, u32), Vec<u32>>,
    /// (component, relation, local class) → representatives.
    reps: HashMap<(u32, u32, u32), Present>,
}

impl Blocks {
    /// Unfold≤2 and classify the occurrences (`graph::build` without the
    /// edges).
    pub fn build(w: &Workload, settings: Settings) -> Blocks {
        let (nodes, program_nodes) = make_nodes(w, unfold_workload(w));
        let occ = Occurrences::classify(w, &nodes, settings);
        let kinds = occ.kind_tables();
        Blocks {
            nodes,
            program_nodes,
            occ,
            kinds,
        }
    }

    fn kind(&self, rel: u32, ci: u32, cj: u32) -> u8 {
        let l = self.occ.rel_classes[rel as usize].len();
        self.kinds[rel as usize][ci as usize * l + cj as usize]
    }

    /// (edges, counterflow edges) of the summary graph, counted per class
    /// pair: Table 2's numbers.
    pub fn edge_counts(&self) -> (u64, u64) {
        let (mut all, mut cf) = (0u64, 0u64);
        for (rel, occs) in self.occ.by_rel.iter().enumerate() {
            let l = self.occ.rel_classes[rel].len();
            let mut hist = vec![0u64; l];
            for &(_, _, c) in occs {
                hist[c as usize] += 1;
            }
            for ci in 0..l {
                for cj in 0..l {
                    let k = self.kinds[rel][ci * l + cj];
                    let pairs = hist[ci] * hist[cj];
                    all += pairs * u64::from((k & 3).count_ones());
                    cf += pairs * u64::from(k >> 1 & 1);
                }
            }
        }
        (all, cf)
    }

    /// Component per node, over the hub graph (module comment, (1)).
    pub fn components(&self) -> Vec<u32> {
        let n = self.nodes.len();
        let mut base = Vec::with_capacity(self.occ.rel_classes.len());
        let mut h = 0usize;
        for cl in &self.occ.rel_classes {
            base.push(h);
            h += cl.len();
        }
        let (o_hub, i_hub) = (|r: u32, c: u32| n + base[r as usize] + c as usize, n + h);
        let total = n + 2 * h;
        let mut adj: Vec<Vec<u32>> = vec![vec![]; total];
        for (u, occ) in self.occ.node_occ.iter().enumerate() {
            for &(r, _, c) in occ {
                adj[u].push(o_hub(r, c) as u32);
            }
        }
        for (r, cl) in self.occ.rel_classes.iter().enumerate() {
            let r = r as u32;
            for ci in 0..cl.len() as u32 {
                for cj in 0..cl.len() as u32 {
                    if self.kind(r, ci, cj) & 3 != 0 {
                        adj[o_hub(r, ci)].push((i_hub + o_hub(r, cj) - n) as u32);
                    }
                }
            }
            for &(v, _, cj) in &self.occ.by_rel[r as usize] {
                adj[i_hub + o_hub(r, cj) - n].push(v);
            }
        }
        let mut start = Vec::with_capacity(total + 1);
        let mut flat = vec![];
        for row in adj {
            start.push(flat.len());
            flat.extend(row);
        }
        start.push(flat.len());
        let comp = tarjan(
            total,
            |_| true,
            |v| start[v]..start[v + 1],
            |s| Some(flat[s] as usize),
        );
        comp[..n].to_vec()
    }

    fn presence(&self, ssi: &dyn Fn(usize) -> bool) -> Presence {
        let comp = self.components();
        let mut classes: HashMap<(u32, u32), Vec<u32>> = HashMap::new();
        let mut reps: HashMap<(u32, u32, u32), Present> = HashMap::new();
        for (u, occ) in self.occ.node_occ.iter().enumerate() {
            let (c, s) = (comp[u], ssi(u));
            for &(r, pos, cl) in occ {
                let here = (u as u32, pos);
                let p = reps.entry((c, r, cl)).or_insert_with(|| {
                    classes.entry((c, r)).or_default().push(cl);
                    Present {
                        any: (here.0, here.1, s),
                        plain: None,
                    }
                });
                if !s && p.plain.is_none() {
                    p.plain = Some(here);
                }
            }
        }
        Presence {
            comp,
            classes,
            reps,
        }
    }

    /// Does component `c` hold an edge of kind bit `bit` (0
    /// non-counterflow, 1 counterflow)?
    fn has_kind(&self, pr: &Presence, bit: u8) -> FixedComps {
        let mut has = FixedComps::default();
        for (&(c, r), cls) in &pr.classes {
            let found = cls
                .iter()
                .any(|&ci| cls.iter().any(|&cj| self.kind(r, ci, cj) >> bit & 1 != 0));
            if found {
                has.0.insert(c);
            }
        }
        has
    }

    /// The first dangerous pair (e3, e4, reason) at the levels `level`
    /// per node, in node order, or `None` when there is none: the verdict
    /// of `robustness::find_pairs` (module comment, (2)).
    pub fn find(&self, level: &dyn Fn(usize) -> Level) -> Option<(Edge, Edge, Reason)> {
        let ssi = |v: usize| level(v) == Level::Serializable;
        let pr = self.presence(&ssi);
        let has_nc = self.has_kind(&pr, 0);
        for v in 0..self.nodes.len() {
            let c = pr.comp[v];
            if c == NONE || !has_nc.0.contains(&c) {
                continue;
            }
            let (inc, out) = self.aggregates(&pr, v);
            if let Some(pair) = super::rules::dangerous_pair(level(v), &inc, &out) {
                return Some(pair);
            }
        }
        None
    }

    /// Node v's aggregates over the edges inside its component.
    fn aggregates(&self, pr: &Presence, v: usize) -> (Incoming<Edge>, Outgoing<Edge>) {
        let c = pr.comp[v];
        let mut inc: Incoming<Edge> = Incoming::default();
        let mut out: Outgoing<Edge> = Outgoing::default();
        for &(r, pos, cl) in &self.occ.node_occ[v] {
            for &other in pr.classes.get(&(c, r)).into_iter().flatten() {
                let p = pr.reps[&(c, r, other)];
                self.add_in(&mut inc, (v, pos, cl), r, other, p);
                self.add_out(&mut out, (v, pos, cl), r, other, p);
            }
        }
        (inc, out)
    }

    /// The levels of `allocation::lowest` (without the witnesses), from
    /// the blocks: a pivot dangerous at REPEATABLE READ is SERIALIZABLE,
    /// and so is every P3 of an rw edge into it and every P5 of a
    /// counterflow edge out of it not ruled out by first-updater-wins
    /// (all occurrences of the class, in the component, that gives such
    /// an edge); a pivot dangerous only at READ COMMITTED is REPEATABLE
    /// READ (the argument is `allocation`'s module comment).
    pub fn lowest_levels(&self) -> Allocation {
        let pr = self.presence(&|_| false);
        let has_nc = self.has_kind(&pr, 0);
        let mut levels = vec![Level::ReadCommitted; self.program_nodes.len()];
        let mut forced: std::collections::HashSet<(u32, u32, u32)> = Default::default();
        let prog = |v: usize| self.nodes[v].ltp.program;
        for v in 0..self.nodes.len() {
            let c = pr.comp[v];
            if c == NONE || !has_nc.0.contains(&c) {
                continue;
            }
            let (inc, out) = self.aggregates(&pr, v);
            let up = |l: &mut Level, to: Level| *l = (*l).max(to);
            if super::rules::dangerous_pair(Level::RepeatableRead, &inc, &out).is_some() {
                up(&mut levels[prog(v)], Level::Serializable);
                for &(r, _, cl) in &self.occ.node_occ[v] {
                    for &other in pr.classes.get(&(c, r)).into_iter().flatten() {
                        let (k_in, k_out) = (self.kind(r, other, cl), self.kind(r, cl, other));
                        let rw_in = k_in & 2 != 0 || k_in & 5 == 5;
                        let cf_out = k_out & 2 != 0 && k_out & 8 == 0;
                        if rw_in || cf_out {
                            forced.insert((c, r, other));
                        }
                    }
                }
            } else if super::rules::dangerous_pair(Level::ReadCommitted, &inc, &out).is_some() {
                up(&mut levels[prog(v)], Level::RepeatableRead);
            }
        }
        for (u, occ) in self.occ.node_occ.iter().enumerate() {
            if occ
                .iter()
                .any(|&(r, _, cl)| forced.contains(&(pr.comp[u], r, cl)))
            {
                levels[prog(u)] = Level::Serializable;
            }
        }
        Allocation(levels)
    }

    /// Edges from class `ci` (present in v's component as `p`) into
    /// occurrence `at` = (v, position, class cj).
    fn add_in(&self, inc: &mut Incoming<Edge>, at: (usize, u16, u32), r: u32, ci: u32, p: Present) {
        let (v, pos, cj) = at;
        let k = self.kind(r, ci, cj);
        let from_read = self.class_ty(r, ci).starts_with_read();
        let edge = |(u, upos): (u32, u16), counterflow| Edge {
            from: u,
            to: v as u32,
            from_pos: upos,
            to_pos: pos,
            counterflow,
        };
        for (counterflow, bit) in [(false, 0u8), (true, 1)] {
            if k >> bit & 1 == 0 {
                continue;
            }
            let facts = super::rules::InEdge {
                counterflow,
                from_read,
                rw: counterflow || k & 4 != 0,
                to_pos: pos,
            };
            let (u, upos, s) = p.any;
            inc.add(facts, s, edge((u, upos), counterflow));
            if let Some(q) = p.plain {
                inc.add(facts, false, edge(q, counterflow));
            }
        }
    }

    /// Counterflow edges from occurrence `at` = (u, position, class ci)
    /// into class `cj` (present in u's component as `p`).
    fn add_out(
        &self,
        out: &mut Outgoing<Edge>,
        at: (usize, u16, u32),
        r: u32,
        cj: u32,
        p: Present,
    ) {
        let (u, pos, ci) = at;
        let k = self.kind(r, ci, cj);
        if k & 2 == 0 {
            return;
        }
        let facts = super::rules::OutEdge {
            counterflow: true,
            fuw: k & 8 != 0,
            from_pos: pos,
        };
        let edge = |(v, vpos): (u32, u16)| Edge {
            from: u as u32,
            to: v,
            from_pos: pos,
            to_pos: vpos,
            counterflow: true,
        };
        let (v, vpos, s) = p.any;
        out.add(facts, s, edge((v, vpos)));
        if let Some(q) = p.plain {
            out.add(facts, false, edge(q));
        }
    }

    fn class_ty(&self, r: u32, c: u32) -> crate::model::btp::StmtType {
        let global = self.occ.rel_classes[r as usize][c as usize];
        self.occ.class_list[global as usize].ty
    }

    /// `robustness::is_robust` on the summary graph, from the blocks.
    pub fn is_robust(&self, method: Method) -> bool {
        match method {
            Method::TypeI => {
                let pr = self.presence(&|_| false);
                self.has_kind(&pr, 1).0.is_empty()
            }
            m => self.find(&|_| m.level()).is_none(),
        }
    }

    /// `robustness::is_robust_under` on the summary graph, from the
    /// blocks.
    pub fn is_robust_under(&self, alloc: &Allocation) -> bool {
        self.find(&|v| alloc.level(self.nodes[v].ltp.program))
            .is_none()
    }
}

/// A set of component ids.
#[derive(Default)]
struct FixedComps(std::collections::HashSet<u32>);
