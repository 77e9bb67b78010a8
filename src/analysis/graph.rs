//! The summary graph SuG(P) of a set of LTPs: Algorithm 1 with Tables 1a
//! and 1b (Section 6.2).
//!
//! An edge is the quintuple (P_i, q_i, c, q_j, P_j) over statement
//! occurrences of unfolded programs; P_i = P_j and q_i = q_j are included,
//! and a statement pair admitting both a counterflow and a non-counterflow
//! dependency gives two edges. These are the counting rules that reproduce
//! Table 2. This module builds the graph; it does not look for cycles.
//!
//! # Approximate nodes (programs too large to unfold)
//!
//! A program whose Unfold≤2 would not fit (`unfold::plan`) contributes
//! nodes in [`crate::analysis::unfold::Mode::Maximal`] or `Full` mode instead of its
//! LTPs: each such node N is a sequence of statement occurrences such that
//! every literal unfolding L of the program is a subsequence of some N
//! (same statements, same loop-copy tags: take every option, both loop
//! copies, and L's branch choices — or, for `Full`, all alternatives), and
//! N keeps only the constraint links whose parent is present, before the
//! child, in *every* unfolding that contains the child. Claim: if the
//! literal summary graph has a type-II (type-I) cycle, so does the graph
//! with approximate nodes; hence "robust" on the approximate graph implies
//! robust (it may say "not robust" where the literal graph does not).
//!
//! Proof. Map each literal node L to a node h(L) ⊇ L (the identity for
//! literal programs) and each occurrence to itself. (1) Edges: NCDEPTABLE
//! and NCDEPCONDS read only types and attribute sets, which an occurrence
//! keeps, so non-counterflow edges map to edges. CDEPCONDS can only be
//! *blocked* by a protection (same-tuple, FK pair, locking read); the
//! protections of an occurrence in h(L) come from guaranteed links, whose
//! parents are in L before the child, where `unfold::link` instantiates
//! the same link — so protections in h(L) are a subset of those in L and
//! every counterflow edge maps to a counterflow edge. (2) The closed walk
//! maps to a closed walk with the same edge labels, so it still has a
//! non-counterflow edge (type II) or a counterflow edge (type I). (3) At
//! the distinguished node, "q4' before q4" in L implies it in h(L)
//! (subsequence), and "q3 is a read" and "e3 is counterflow" are kept.
//! So the image is a type-II (type-I) cycle, in every induced subgraph
//! too (subset search maps programs to themselves). ∎
//!
//! What is lost: co-occurrence and order are exact for `Maximal` (two
//! occurrences share a maximal unfolding iff they share a literal one, and
//! in the same order), but a protection that holds in some unfoldings
//! only is dropped, and several unfoldings are joined at one node; `Full`
//! also lets alternatives of one branch meet. `tests/structural.rs`
//! measures the verdicts this changes, against the literal graph.

use std::collections::HashMap;

use fixedbitset::FixedBitSet;

use super::rules::{edge_kinds, fuw_blocked, rw_capable, Effective, InEdge, OutEdge};
use super::unfold::{unfold_planned, unfold_workload, Ltp, Mode, Plan};
use crate::model::btp::{ConstraintKind, Held, StmtType, Workload};
use crate::model::schema::AttrSet;
pub use crate::model::settings::{Granularity, Settings};

/// An edge (P_i, q_i, c, q_j, P_j): nodes are indices into
/// [`SummaryGraph::nodes`], statements are positions in those LTPs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Edge {
    pub from: u32,
    pub to: u32,
    pub from_pos: u16,
    pub to_pos: u16,
    pub counterflow: bool,
}

#[derive(Debug, Clone)]
pub struct Node {
    pub ltp: Ltp,
    pub name: String,
    /// type(q) per position, for Algorithm 2.
    pub types: Vec<StmtType>,
}

#[derive(Debug, Clone)]
pub struct SummaryGraph {
    pub settings: Settings,
    pub nodes: Vec<Node>,
    /// Edges grouped by source node: the out-edges of node v are
    /// `edges[out_start[v]..out_start[v + 1]]`.
    pub edges: Vec<Edge>,
    pub out_start: Vec<usize>,
    /// Node indices of each application-level program.
    pub program_nodes: Vec<Vec<usize>>,
    /// Per edge (same index as `edges`): the dependency may be an
    /// rw-antidependency from an operation that does not write the
    /// object (`rules::si::rw_capable`; every counterflow edge is one).
    /// Only the snapshot levels look at it (docs/allocation.md).
    pub rw: FixedBitSet,
    /// Per edge: a counterflow edge that cannot occur when its source
    /// program runs at REPEATABLE READ or SERIALIZABLE (`rules::si::
    /// fuw_blocked`, docs/allocation.md Lemma 3).
    pub fuw: FixedBitSet,
}

impl SummaryGraph {
    /// A copy without the edges `keep` rejects, with the out-edge index
    /// (`out_start`) and the per-edge flags (`rw`, `fuw`) rebuilt: code that
    /// looks edges up by source node relies on them (`robustness::
    /// check_witness`), so assigning to `edges` alone breaks the graph.
    pub fn retain_edges(&self, keep: impl Fn(&Edge) -> bool) -> SummaryGraph {
        let kept: Vec<usize> = (0..self.edges.len())
            .filter(|&i| keep(&self.edges[i]))
            .collect();
        let mut out_start = vec![0usize; self.nodes.len() + 1];
        for &i in &kept {
            out_start[self.edges[i].from as usize + 1] += 1;
        }
        for v in 0..self.nodes.len() {
            out_start[v + 1] += out_start[v];
        }
        let mut rw = FixedBitSet::with_capacity(kept.len());
        let mut fuw = FixedBitSet::with_capacity(kept.len());
        for (j, &i) in kept.iter().enumerate() {
            rw.set(j, self.rw.contains(i));
            fuw.set(j, self.fuw.contains(i));
        }
        SummaryGraph {
            settings: self.settings,
            nodes: self.nodes.clone(),
            edges: kept.iter().map(|&i| self.edges[i]).collect(),
            out_start,
            program_nodes: self.program_nodes.clone(),
            rw,
            fuw,
        }
    }

    pub fn counterflow_edges(&self) -> usize {
        self.edges.iter().filter(|e| e.counterflow).count()
    }

    pub fn out_edges(&self, v: usize) -> &[Edge] {
        &self.edges[self.out_start[v]..self.out_start[v + 1]]
    }

    /// What the dangerous-pair rule (`rules::pair`) reads of edge `i` as
    /// the edge e3 into a pivot.
    pub(crate) fn pair_in(&self, i: usize) -> InEdge {
        let e = &self.edges[i];
        InEdge {
            counterflow: e.counterflow,
            from_read: self.nodes[e.from as usize]
                .types
                .get(e.from_pos as usize)
                .is_none_or(|t| t.starts_with_read()),
            rw: self.rw.contains(i),
            to_pos: e.to_pos,
        }
    }

    /// What the dangerous-pair rule reads of edge `i` as the edge e4 out
    /// of a pivot.
    pub(crate) fn pair_out(&self, i: usize) -> OutEdge {
        let e = &self.edges[i];
        OutEdge {
            counterflow: e.counterflow,
            fuw: self.fuw.contains(i),
            from_pos: e.from_pos,
        }
    }

    /// Indices of the edges whose two ends are both in `mask` (all edges
    /// without a mask). Visits only the masked nodes' out-edges, so a test
    /// on a small subset of a large graph is cheap.
    pub fn edges_within<'a>(
        &'a self,
        mask: Option<&'a FixedBitSet>,
    ) -> Box<dyn Iterator<Item = usize> + 'a> {
        match mask {
            None => Box::new(0..self.edges.len()),
            Some(m) => Box::new(m.ones().flat_map(move |v| {
                (self.out_start[v]..self.out_start[v + 1])
                    .filter(move |&i| m.contains(self.edges[i].to as usize))
            })),
        }
    }
}

/// Unfold≤2 the workload and build its summary graph (Algorithm 1).
pub fn build(w: &Workload, settings: Settings) -> SummaryGraph {
    build_from_ltps(w, unfold_workload(w), settings)
}

/// [`build`] from a plan of `w` already made (`unfold::unfold_planned`).
pub fn build_planned(w: &Workload, plan: &Plan, settings: Settings) -> SummaryGraph {
    build_from_ltps(w, unfold_planned(w, plan), settings)
}

/// Algorithm 1 over given LTPs (or approximate nodes, see the module
/// comment).
pub fn build_from_ltps(w: &Workload, ltps: Vec<Ltp>, settings: Settings) -> SummaryGraph {
    let (nodes, program_nodes) = make_nodes(w, ltps);
    let occ = Occurrences::classify(w, &nodes, settings);
    let kinds = occ.kind_tables();
    let (edges, out_start, rw, fuw) = occ.edges(&kinds);
    SummaryGraph {
        settings,
        nodes,
        edges,
        out_start,
        program_nodes,
        rw,
        fuw,
    }
}

pub(super) fn make_nodes(w: &Workload, ltps: Vec<Ltp>) -> (Vec<Node>, Vec<Vec<usize>>) {
    let mut program_nodes = vec![vec![]; w.programs.len()];
    for (i, l) in ltps.iter().enumerate() {
        program_nodes[l.program].push(i);
    }
    let nodes = ltps
        .into_iter()
        .map(|ltp| {
            let n = program_nodes[ltp.program].len();
            let types = (0..ltp.occurrences.len())
                .map(|pos| ltp.statement(w, pos).ty)
                .collect();
            Node {
                name: ltp.name(w, n),
                types,
                ltp,
            }
        })
        .collect();
    (nodes, program_nodes)
}

/// Statement occurrences grouped by relation and by class (identical
/// [`Effective`]), so Algorithm 1's conditions run once per class pair.
/// Classes are numbered per relation (dense), and the edge kinds of each
/// class pair of a relation sit in a dense table: no hashing per
/// occurrence pair.
pub(super) struct Occurrences {
    pub(super) class_list: Vec<Effective>,
    /// Per relation: occurrences (node, position, local class), in node
    /// and position order.
    pub(super) by_rel: Vec<Vec<(u32, u16, u32)>>,
    /// Per relation: local class → global class.
    pub(super) rel_classes: Vec<Vec<u32>>,
    /// Per node: its occurrences as (relation, position, local class).
    pub(super) node_occ: Vec<Vec<(u32, u16, u32)>>,
}

impl Occurrences {
    pub(super) fn classify(w: &Workload, nodes: &[Node], settings: Settings) -> Occurrences {
        let nrel = w.schema.relations.len();
        let mut classes: HashMap<Effective, u32> = HashMap::new();
        let mut local_of: Vec<HashMap<u32, u32>> = vec![HashMap::new(); nrel];
        let mut o = Occurrences {
            class_list: vec![],
            by_rel: vec![vec![]; nrel],
            rel_classes: vec![vec![]; nrel],
            node_occ: Vec::with_capacity(nodes.len()),
        };
        for (ni, node) in nodes.iter().enumerate() {
            let mut occ = Vec::with_capacity(node.ltp.occurrences.len());
            for pos in 0..node.ltp.occurrences.len() {
                let eff = effective(w, &node.ltp, pos, settings);
                let rel = node.ltp.statement(w, pos).rel;
                let next = o.class_list.len() as u32;
                let class = *classes.entry(eff.clone()).or_insert_with(|| {
                    o.class_list.push(eff);
                    next
                });
                let next_local = o.rel_classes[rel].len() as u32;
                let local = *local_of[rel].entry(class).or_insert_with(|| {
                    o.rel_classes[rel].push(class);
                    next_local
                });
                // Positions and nodes are u16/u32 in `Edge`; `limits::check_size`
                // refuses larger workloads, so a wrap here would be a bug, and
                // a silent wrap could misorder statements: stop instead.
                let (node32, pos16) = match (u32::try_from(ni), u16::try_from(pos)) {
                    (Ok(n), Ok(p)) => (n, p),
                    _ => panic!("summary graph too large: node {ni}, position {pos} (limits::check_size guards this)"),
                };
                o.by_rel[rel].push((node32, pos16, local));
                occ.push((rel as u32, pos16, local));
            }
            // Today's edge order, which witnesses depend on: per source
            // node, by relation, then position.
            occ.sort_unstable();
            o.node_occ.push(occ);
        }
        o
    }

    /// kinds[rel][ci * L + cj]: bit 0 non-counterflow, bit 1 counterflow,
    /// bit 2 the non-counterflow edge may be an rw-antidependency from a
    /// non-writing operation (`rules::si`), bit 3 the counterflow edge is
    /// `rules::si::fuw_blocked`.
    pub(super) fn kind_tables(&self) -> Vec<Vec<u8>> {
        self.rel_classes
            .iter()
            .map(|cl| {
                let mut t = Vec::with_capacity(cl.len() * cl.len());
                for &ci in cl {
                    for &cj in cl {
                        let (a, b) = (&self.class_list[ci as usize], &self.class_list[cj as usize]);
                        let (nc, cf) = edge_kinds(a, b);
                        let rw = nc && rw_capable(a, b);
                        let fuw = cf && fuw_blocked(a, b);
                        t.push(
                            u8::from(nc)
                                | (u8::from(cf) << 1)
                                | (u8::from(rw) << 2)
                                | (u8::from(fuw) << 3),
                        );
                    }
                }
                t
            })
            .collect()
    }

    /// Where each node's out-edges start: the out-degree of an occurrence
    /// of local class ci, counted per class, is Σ over target classes cj
    /// of |occurrences of cj| × |kinds(ci, cj)|.
    fn out_start(&self, kinds: &[Vec<u8>]) -> Vec<usize> {
        let out_degree: Vec<Vec<usize>> = (0..self.by_rel.len())
            .map(|rel| {
                let l = self.rel_classes[rel].len();
                let mut hist = vec![0usize; l];
                for &(_, _, c) in &self.by_rel[rel] {
                    hist[c as usize] += 1;
                }
                (0..l)
                    .map(|ci| {
                        (0..l)
                            .map(|cj| {
                                hist[cj] * (kinds[rel][ci * l + cj] & 3).count_ones() as usize
                            })
                            .sum()
                    })
                    .collect()
            })
            .collect();
        let mut out_start = Vec::with_capacity(self.node_occ.len() + 1);
        out_start.push(0usize);
        for occ in &self.node_occ {
            let d: usize = occ
                .iter()
                .map(|&(rel, _, c)| out_degree[rel as usize][c as usize])
                .sum();
            out_start.push(out_start.last().copied().unwrap_or(0) + d);
        }
        out_start
    }

    /// The edges, written once, already grouped by source.
    fn edges(&self, kinds: &[Vec<u8>]) -> (Vec<Edge>, Vec<usize>, FixedBitSet, FixedBitSet) {
        let out_start = self.out_start(kinds);
        let total = out_start.last().copied().unwrap_or(0);
        let mut edges = Vec::with_capacity(total);
        let mut rw = FixedBitSet::with_capacity(total);
        let mut fuw = FixedBitSet::with_capacity(total);
        for (ni, occ) in self.node_occ.iter().enumerate() {
            let from = ni as u32;
            for &(rel, from_pos, ci) in occ {
                let rel = rel as usize;
                let l = self.rel_classes[rel].len();
                let row = &kinds[rel][ci as usize * l..(ci as usize + 1) * l];
                if row.iter().all(|&k| k == 0) {
                    continue;
                }
                for &(to, to_pos, cj) in &self.by_rel[rel] {
                    let k = row[cj as usize];
                    let edge = |counterflow| Edge {
                        from,
                        to,
                        from_pos,
                        to_pos,
                        counterflow,
                    };
                    if k & 1 != 0 {
                        rw.set(edges.len(), k & 4 != 0);
                        edges.push(edge(false));
                    }
                    if k & 2 != 0 {
                        rw.insert(edges.len());
                        fuw.set(edges.len(), k & 8 != 0);
                        edges.push(edge(true));
                    }
                }
            }
        }
        debug_assert_eq!(Some(&edges.len()), out_start.last());
        (edges, out_start, rw, fuw)
    }
}

/// `(non-counterflow edge?, counterflow edge?)` from occurrence `pa` of
/// `a` to occurrence `pb` of `b` (Algorithm 1 for one pair, without the
/// grouping `build` does; for tests and explanations).
pub fn edge_kinds_between(
    w: &Workload,
    (a, pa): (&Ltp, usize),
    (b, pb): (&Ltp, usize),
    settings: Settings,
) -> (bool, bool) {
    if a.statement(w, pa).rel != b.statement(w, pb).rel {
        return (false, false);
    }
    edge_kinds(
        &effective(w, a, pa, settings),
        &effective(w, b, pb, settings),
    )
}

// `unfold::occurrence_keys` must determine everything read here (the
// subsumption of loop-heavy programs relies on it; tests/loops.rs).
fn effective(w: &Workload, ltp: &Ltp, pos: usize, settings: Settings) -> Effective {
    let s = ltp.statement(w, pos);
    let arity = w.schema.rel(s.rel).arity();
    // 'tpl dep': every defined set, ∅ included, becomes all attributes.
    let widen = |set: &Option<AttrSet>| match settings.granularity {
        Granularity::Attribute => set.clone(),
        Granularity::Tuple => set.as_ref().map(|_| AttrSet::full(arity)),
    };
    let mut protected_by = vec![];
    let mut parent_locked = vec![];
    let mut same_tuple = false;
    let mut rewritten_later = false;
    for l in ltp.links.iter().filter(|l| l.child == pos) {
        let parent_ty = ltp.statement(w, l.parent).ty;
        // A forward same-tuple link (the write comes later): only on a
        // literal LTP is the later write on every execution the node
        // stands for (an approximate node joins unfoldings).
        if l.parent > pos
            && l.kind == ConstraintKind::SameTuple
            && settings.same_tuple
            && ltp.mode == Mode::Literal
            && matches!(parent_ty, StmtType::KeyUpd | StmtType::KeyDel)
            && s.ty == StmtType::KeySel
        {
            rewritten_later = true;
        }
        // The insert's parent row is locked by its transaction until
        // commit, wherever in the LTP the lock is taken (docs/rules.md,
        // "Foreign-key checks and the parent row's lock").
        if let ConstraintKind::ForeignKey(f) = l.kind {
            let parent = ltp.statement(w, l.parent);
            if settings.foreign_keys
                && s.ty == StmtType::Ins
                && (parent_ty.is_key_write() || parent.held == Some(Held::KeyShare))
            {
                parent_locked.push(f);
            }
        }
        if l.parent >= pos || !parent_ty.is_key_write() {
            continue;
        }
        match l.kind {
            ConstraintKind::ForeignKey(f) if settings.foreign_keys => protected_by.push(f),
            ConstraintKind::SameTuple if settings.same_tuple => same_tuple = true,
            _ => {}
        }
    }
    protected_by.sort_unstable();
    protected_by.dedup();
    parent_locked.sort_unstable();
    parent_locked.dedup();
    Effective {
        ty: s.ty,
        pread: widen(&s.pread),
        read: widen(&s.read),
        write: widen(&s.write),
        protected_by,
        same_tuple,
        locking: s.locking,
        rewritten_later,
        key_share: s.held == Some(Held::KeyShare),
        children_of: match s.held {
            Some(Held::Children(f)) => Some(f),
            _ => None,
        },
        parent_locked,
        own_inserts: s.held == Some(Held::OwnInserts),
    }
}
