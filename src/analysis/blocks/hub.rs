//! The hub graph of the block form (module comment of `blocks`, (1) and
//! (4)): program nodes, an out-hub O(ci) per class (and per stripped
//! class) and an in-hub I(cj) per class of each relation; arcs u → O(ci)
//! per occurrence, O(ci) → I(cj) per class pair with an edge kind, I(cj)
//! → v per occurrence. Its strongly connected components restricted to
//! program nodes are the summary graph's; a path through it is a walk of
//! real edges, which is how witnesses are expanded.

use std::collections::VecDeque;

use super::{Blocks, View, STRIPPED};
use crate::analysis::graph::Edge;
use crate::analysis::scc::{tarjan, NONE};

/// The hub graph of one view, as adjacency slots.
pub struct Hub<'b> {
    b: &'b Blocks,
    n: usize,
    included: Option<&'b fixedbitset::FixedBitSet>,
    /// (relation, class with the stripped flag) per hub, from index n.
    hubs: Vec<(u32, u32)>,
    start: Vec<usize>,
    /// (target, position): the occurrence's position at the program
    /// node end of a node arc, 0 on a hub-to-hub arc.
    arcs: Vec<(u32, u16)>,
    /// The reverse arcs, built when a tree to a root is asked for.
    rev: Option<Csr>,
}

/// Adjacency slots: (start per vertex, arcs).
type Csr = (Vec<usize>, Vec<(u32, u16)>);

/// Predecessor of each hub-graph vertex on a search tree: (vertex, label).
type Parents = Vec<(u32, u16)>;

impl<'b> Hub<'b> {
    pub fn new(b: &'b Blocks, view: View<'b>) -> Hub<'b> {
        let n = b.nodes.len();
        let (mut out_base, mut in_base, mut hubs) = (vec![], vec![], vec![]);
        for (r, cl) in b.occ.rel_classes.iter().enumerate() {
            let l = cl.len() as u32;
            out_base.push(n + hubs.len());
            hubs.extend((0..l).map(|c| (r as u32, c)));
            hubs.extend((0..l).map(|c| (r as u32, c | STRIPPED)));
            in_base.push(n + hubs.len());
            hubs.extend((0..l).map(|c| (r as u32, c)));
        }
        let o_hub = |r: u32, c: u32| {
            let l = b.occ.rel_classes[r as usize].len();
            let i = (c & !STRIPPED) as usize + if c & STRIPPED != 0 { l } else { 0 };
            out_base[r as usize] + i
        };
        // Every arc (source, target, label), in slot order; run twice:
        // to count the slots, then to fill them (no per-vertex vectors:
        // the subset search builds one hub graph per test).
        // Node arcs of the view's nodes only (a subset test's hub graph
        // costs its own occurrences, not the workload's); each in-hub's
        // arcs still come in node and position order, as in `by_rel`.
        let each_arc = |f: &mut dyn FnMut(usize, (u32, u16))| {
            for u in view.each_node(n) {
                for &(r, pos, c) in &b.occ.node_occ[u] {
                    f(u, (o_hub(r, b.class_in(view, u, pos, c)) as u32, pos));
                    f(in_base[r as usize] + c as usize, (u as u32, pos));
                }
            }
            for (r, cl) in b.occ.rel_classes.iter().enumerate() {
                let l = cl.len();
                let ib = in_base[r] as u32;
                for ci in 0..l {
                    for &cj in &b.targets[r][ci] {
                        f(out_base[r] + ci, (ib + cj, 0));
                    }
                    if view.promoted.is_some() {
                        for &cj in &b.targets_stripped[r][ci] {
                            f(out_base[r] + l + ci, (ib + cj, 0));
                        }
                    }
                }
            }
        };
        let total = n + hubs.len();
        let mut start = vec![0usize; total + 1];
        each_arc(&mut |x, _| start[x + 1] += 1);
        for x in 0..total {
            start[x + 1] += start[x];
        }
        let mut fill = start.clone();
        let mut arcs = vec![(0u32, 0u16); start[total]];
        each_arc(&mut |x, a| {
            arcs[fill[x]] = a;
            fill[x] += 1;
        });
        Hub {
            b,
            n,
            included: view.nodes,
            hubs,
            start,
            arcs,
            rev: None,
        }
    }

    /// Component per program node (`NONE` for nodes outside the view).
    pub fn components(&self) -> Vec<u32> {
        let total = self.start.len() - 1;
        let has_arcs = |v: usize| v >= self.n || self.start[v] < self.start[v + 1];
        let comp = tarjan(
            total,
            // An excluded node has no arcs in or out; it is left out so
            // that it gets no component.
            |v| has_arcs(v) || self.in_view_isolated(v),
            |v| self.start[v]..self.start[v + 1],
            |s| Some(self.arcs[s].0 as usize),
        );
        comp[..self.n].to_vec()
    }

    /// A node without occurrences has no arcs; it still takes part when
    /// the view includes it (its own component, with no edge).
    fn in_view_isolated(&self, v: usize) -> bool {
        self.b.occ.node_occ[v].is_empty() && self.included.is_none_or(|m| m.contains(v))
    }

    /// Breadth-first search from `from` over the arcs (`rev`: reversed),
    /// entering program nodes of component `c` only, until `goal` is
    /// reached (or everything reachable, with `goal` = `NONE`).
    fn search(&self, comp: &[u32], c: u32, from: u32, goal: u32, rev: bool) -> Parents {
        let (start, arcs) = match (&self.rev, rev) {
            (Some((s, a)), true) => (s, a),
            _ => (&self.start, &self.arcs),
        };
        let total = self.start.len() - 1;
        let mut prev: Parents = vec![(NONE, 0); total];
        prev[from as usize] = (from, 0);
        let mut queue = VecDeque::from([from]);
        while let Some(x) = queue.pop_front() {
            for &(y, label) in &arcs[start[x as usize]..start[x as usize + 1]] {
                let yi = y as usize;
                if prev[yi].0 != NONE || (yi < self.n && comp[yi] != c) {
                    continue;
                }
                prev[yi] = (x, label);
                if y == goal {
                    return prev;
                }
                queue.push_back(y);
            }
        }
        prev
    }

    /// The real edge of the hub path u -(p)-> O -> I -(q)-> v.
    fn edge(&self, (u, p): (u32, u16), o: u32, (v, q): (u32, u16)) -> Edge {
        let (r, ci) = self.hubs[o as usize - self.n];
        let cj = self.b.class_at(v, q);
        let k = self.b.kind(r, ci, cj);
        Edge {
            from: u,
            to: v,
            from_pos: p,
            to_pos: q,
            counterflow: k & 1 == 0,
        }
    }

    /// The edges of the tree path from the search's root to `to` (forward
    /// search) or from `to` to the root (reverse search).
    fn walk(&self, prev: &Parents, to: u32, rev: bool) -> Option<Vec<Edge>> {
        let mut edges = vec![];
        let mut at = to;
        loop {
            let (x, label) = prev[at as usize];
            if x == NONE {
                return None;
            }
            if x == at {
                break;
            }
            // Three arcs per edge: node, out-hub, in-hub, node (forward);
            // node, in-hub, out-hub, node (reverse).
            let (h1, _) = prev[x as usize];
            let (u, label_u) = prev[h1 as usize];
            if rev {
                // at -(label)-> ... reversed: at is the edge's source.
                edges.push(self.edge((at, label), x, (u, label_u)));
            } else {
                edges.push(self.edge((u, label_u), h1, (at, label)));
            }
            at = u;
        }
        if !rev {
            edges.reverse();
        }
        Some(edges)
    }

    /// A shortest walk of real edges from program node `a` to `b` inside
    /// component `c` (empty when a == b).
    pub fn path(&self, comp: &[u32], c: u32, a: u32, b: u32) -> Option<Vec<Edge>> {
        if a == b {
            return Some(vec![]);
        }
        self.walk(&self.search(comp, c, a, b, false), b, false)
    }

    /// Search trees of component `c` through the non-counterflow edge
    /// `nc`: walks from any node to `nc.from` and from `nc.to` to any
    /// node, for many cycles at the cost of two searches.
    pub fn trees(&mut self, comp: &[u32], c: u32, nc: Edge) -> Trees {
        if self.rev.is_none() {
            let total = self.start.len() - 1;
            let mut deg = vec![0usize; total + 1];
            for &(y, _) in &self.arcs {
                deg[y as usize + 1] += 1;
            }
            for i in 0..total {
                deg[i + 1] += deg[i];
            }
            let mut fill = deg.clone();
            let mut rarcs = vec![(0u32, 0u16); self.arcs.len()];
            for x in 0..total {
                for &(y, label) in &self.arcs[self.start[x]..self.start[x + 1]] {
                    rarcs[fill[y as usize]] = (x as u32, label);
                    fill[y as usize] += 1;
                }
            }
            self.rev = Some((deg, rarcs));
        }
        Trees {
            nc,
            to_nc: self.search(comp, c, nc.from, NONE, true),
            from_nc: self.search(comp, c, nc.to, NONE, false),
        }
    }

    /// A closed walk through the pair (e3, e4) of component `c`, with a
    /// non-counterflow edge when `need_nc` is given (type II): the
    /// shortest way back, or through that edge. Type I (`need_nc` =
    /// `None`): e3 = e4 is the counterflow edge, taken once.
    pub fn cycle(
        &self,
        comp: &[u32],
        c: u32,
        (e3, e4): (Edge, Edge),
        need_nc: Option<Edge>,
    ) -> Option<Vec<Edge>> {
        let mut walk = if need_nc.is_none() {
            vec![e3]
        } else {
            vec![e3, e4]
        };
        let back = self.path(comp, c, walk[walk.len() - 1].to, e3.from)?;
        let has_nc = |w: &[Edge]| w.iter().any(|e| !e.counterflow);
        match need_nc {
            Some(nc) if !has_nc(&walk) && !has_nc(&back) => {
                walk.extend(self.path(comp, c, walk[walk.len() - 1].to, nc.from)?);
                walk.push(nc);
                walk.extend(self.path(comp, c, nc.to, e3.from)?);
            }
            _ => walk.extend(back),
        }
        Some(walk)
    }
}

/// Two search trees of one component through a non-counterflow edge.
pub struct Trees {
    nc: Edge,
    to_nc: Parents,
    from_nc: Parents,
}

impl Trees {
    /// The closed walk e3, e4, (to `nc.from`), nc, (from `nc.to` to
    /// e3's source): dangerous through the pair, with a non-counterflow
    /// edge.
    pub fn cycle(&self, hub: &Hub, (e3, e4): (Edge, Edge)) -> Option<Vec<Edge>> {
        let mut walk = vec![e3, e4];
        walk.extend(hub.walk(&self.to_nc, e4.to, true)?);
        walk.push(self.nc);
        walk.extend(hub.walk(&self.from_nc, e3.from, false)?);
        Some(walk)
    }
}
