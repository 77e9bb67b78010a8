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
//! per-edge search does, at every level. The rule inputs an occurrence
//! (v, q, cj) receives depend on (c, cj, q) and the classes present in c,
//! not on v: they are folded once per (component, class, position) into
//! aggregates naming each edge by its far end, and a node absorbs its
//! occurrences' aggregates in occurrence order, which is adding the same
//! edges in the same order (`rules::pair`'s `absorb`, checked against
//! adding edge by edge), so a test costs O(occurrences + present class
//! pairs), not O(occurrences × present classes). The same holds for outgoing
//! counterflow edges, for "the component has a non-counterflow edge"
//! (two classes present in c with that kind) and for type I (two classes
//! present with a counterflow kind). ∎
//!
//! (3) *Masks* ([`View`]). A node mask (the programs of a subset,
//! `subsets`) keeps the induced subgraph: its edges are those between
//! included occurrences, still decided by the class pair, so leaving the
//! excluded nodes out of the presence sets and out of the arcs u → O(ci)
//! and I(cj) → v gives the induced subgraph's block form, and (1), (2)
//! hold for it — and only the included nodes need be walked, so a masked
//! test (Section 7.2's maximal robust subsets: Algorithm 2 on the programs
//! of a set) costs the mask's occurrences. A tag mask (promoted reads,
//! `promote`) removes exactly the counterflow edges leaving the promoted
//! statements' occurrences (proof
//! in `promote`'s module comment; nothing else changes). Give each such
//! occurrence the *stripped* class ci* of its class ci, with kinds(ci*,
//! cj) = kinds(ci, cj) without the counterflow bit and kinds(cj, ci*) =
//! kinds(cj, ci): the edges of the stripped form are exactly the masked
//! graph's, and again (1), (2) hold. So every masked test here equals the
//! per-edge (`oracle::Compact`) test on the same masks.
//!
//! (4) *Witnesses* (`hub`). By (1) every hub path u → O(ci) → I(cj) → v is
//! a real edge (u, p, v, q) with a kind of (ci, cj), so a breadth-first
//! search on the hub graph inside a component expands the pair found into
//! a closed walk of real edges, and routes it through a non-counterflow
//! edge of the component when the pair and the way back have none.
//!
//! The pair found is named by real edges, but not necessarily the ones
//! the per-edge search picks first. `tests/blocks.rs` compares verdicts
//! and edge counts with the per-edge graph, the test oracle, on random
//! workloads; `tests/blocks_cli.rs` the commands on both forms.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use fixedbitset::FixedBitSet;

use super::graph::{make_nodes, Edge, Node, Occurrences, Settings};
use super::robustness::Method;
use super::rules::{Incoming, Outgoing, Reason};
use super::scc::NONE;
use super::unfold::{unfold_planned, unfold_workload, Ltp, Plan};
use crate::model::btp::Workload;
use crate::model::isolation::{Allocation, Level};

mod hub;
mod lowest;

pub use hub::Hub;
pub use lowest::{BlockLowest, BlockRaise};

/// A statement of the workload: (program index, statement index).
pub type StmtRef = (usize, usize);

/// The summary graph's nodes and edge blocks, without edges.
pub struct Blocks {
    pub nodes: Vec<Node>,
    /// Node indices of each program.
    pub program_nodes: Vec<Vec<usize>>,
    pub settings: Settings,
    occ: Occurrences,
    /// `graph::Occurrences::kind_tables`: per relation, per local class
    /// pair, bit 0 non-counterflow, 1 counterflow, 2 rw, 3 fuw.
    kinds: Vec<Vec<u8>>,
    /// Per relation and class: the classes it has an edge to (the hub
    /// graph's arcs O(ci) → I(cj)), and those of its stripped class.
    targets: Vec<Vec<Vec<u32>>>,
    targets_stripped: Vec<Vec<Vec<u32>>>,
}

/// Node and tag masks of one test (module comment, (3)); the default
/// is the whole graph. `oracle::View`'s counterpart.
#[derive(Clone, Copy, Default)]
pub struct View<'a> {
    /// Nodes taking part; `None` = all.
    pub nodes: Option<&'a FixedBitSet>,
    /// Promoted reads: their occurrences lose their outgoing
    /// counterflow edges.
    pub promoted: Option<&'a HashSet<StmtRef>>,
}

impl View<'_> {
    pub fn node(&self, v: usize) -> bool {
        self.nodes.is_none_or(|m| m.contains(v))
    }

    /// The nodes of the view among `0..n`, in node order: a masked test
    /// walks its mask, not the whole workload.
    pub fn each_node(&self, n: usize) -> impl Iterator<Item = usize> + '_ {
        let (all, some) = match self.nodes {
            None => (Some(0..n), None),
            Some(m) => (None, Some(m.ones().take_while(move |&v| v < n))),
        };
        all.into_iter().flatten().chain(some.into_iter().flatten())
    }
}

/// The flag of a stripped class (module comment, (3)) on a local class
/// number.
const STRIPPED: u32 = 1 << 31;

/// A representative occurrence of a class in a component: the first, and
/// the first at a node whose program is not SERIALIZABLE.
#[derive(Clone, Copy)]
struct Present {
    any: (u32, u16, bool),
    plain: Option<(u32, u16)>,
}

/// Per component: which classes occur in it (by relation), with
/// representatives.
pub(super) struct Presence {
    pub(super) comp: Vec<u32>,
    /// (component, relation) → local classes present, in first-seen order.
    classes: FxMap<(u32, u32), Vec<u32>>,
    /// (component, relation, local class) → representatives.
    reps: FxMap<(u32, u32, u32), Present>,
    /// (component, relation, class, position) → [`Blocks::occurrence`].
    memo: RefCell<FxMap<(u32, u32, u32, u16), OccAggregates>>,
}

/// A hash map with [`Fx`] hashing: a subset test looks its occurrences
/// up in several (SipHash was a tenth of `check` at 1,000 programs).
pub(crate) type FxMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<Fx>>;

/// FxHash (multiply and rotate, as rustc's): fast on small integer keys
/// and deterministic; the maps still resolve collisions, so it changes
/// speed only. Bytes are taken eight at a time (bit sets as keys).
#[derive(Default, Clone, Copy)]
pub(crate) struct Fx(u64);

impl Fx {
    fn add(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl std::hash::Hasher for Fx {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        for &b in chunks.remainder() {
            self.add(u64::from(b));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    fn write_u16(&mut self, i: u16) {
        self.add(u64::from(i));
    }
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
}

/// An edge by its far end (node, position, counterflow), the near end
/// being the occurrence whose aggregates it is in.
type Far = (u32, u16, bool);

/// One occurrence's aggregates over the edges inside its component.
type OccAggregates = (Incoming<Far>, Outgoing<Far>);

/// A dangerous pair (type II) or counterflow edge (type I, both edges the
/// same) found in one component, at pivot `e3.to`.
#[derive(Debug, Clone, Copy)]
pub struct Found {
    pub comp: u32,
    pub e3: Edge,
    pub e4: Edge,
    pub reason: Reason,
}

impl Blocks {
    /// Unfold≤2 and classify the occurrences (`graph::build` without the
    /// edges).
    pub fn build(w: &Workload, settings: Settings) -> Blocks {
        Blocks::from_ltps(w, unfold_workload(w), settings)
    }

    /// [`Blocks::build`] from a plan of `w` already made
    /// (`unfold::unfold_planned`).
    pub fn build_planned(w: &Workload, plan: &Plan, settings: Settings) -> Blocks {
        Blocks::from_ltps(w, unfold_planned(w, plan), settings)
    }

    fn from_ltps(w: &Workload, ltps: Vec<Ltp>, settings: Settings) -> Blocks {
        let (nodes, program_nodes) = make_nodes(w, ltps);
        let occ = Occurrences::classify(w, &nodes, settings);
        let kinds = occ.kind_tables();
        let targets_with = |mask: u8| -> Vec<Vec<Vec<u32>>> {
            kinds
                .iter()
                .zip(&occ.rel_classes)
                .map(|(t, cl)| {
                    let l = cl.len();
                    (0..l)
                        .map(|ci| {
                            (0..l as u32)
                                .filter(|&cj| t[ci * l + cj as usize] & mask != 0)
                                .collect()
                        })
                        .collect()
                })
                .collect()
        };
        let (targets, targets_stripped) = (targets_with(3), targets_with(1));
        Blocks {
            nodes,
            program_nodes,
            settings,
            occ,
            kinds,
            targets,
            targets_stripped,
        }
    }

    /// The kinds of edges from class `ci` to class `cj` of relation
    /// `rel`; a stripped `ci` has no counterflow edge.
    fn kind(&self, rel: u32, ci: u32, cj: u32) -> u8 {
        let l = self.occ.rel_classes[rel as usize].len();
        let (a, b) = ((ci & !STRIPPED) as usize, (cj & !STRIPPED) as usize);
        let k = self.kinds[rel as usize][a * l + b];
        if ci & STRIPPED != 0 {
            k & !(2 | 8)
        } else {
            k
        }
    }

    /// The class of occurrence (v, pos) of local class `cl` in `view`.
    fn class_in(&self, view: View, v: usize, pos: u16, cl: u32) -> u32 {
        match view.promoted {
            Some(p) if !p.is_empty() => {
                let ltp = &self.nodes[v].ltp;
                if p.contains(&(ltp.program, ltp.occurrences[pos as usize].stmt)) {
                    cl | STRIPPED
                } else {
                    cl
                }
            }
            _ => cl,
        }
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
        Hub::new(self, View::default()).components()
    }

    fn presence(&self, view: View, ssi: &dyn Fn(usize) -> bool) -> Presence {
        self.presence_in(view, Hub::new(self, view).components(), ssi)
    }

    /// [`Blocks::presence`] with the components of `view` already known.
    fn presence_in(&self, view: View, comp: Vec<u32>, ssi: &dyn Fn(usize) -> bool) -> Presence {
        let mut classes: FxMap<(u32, u32), Vec<u32>> = FxMap::default();
        let mut reps: FxMap<(u32, u32, u32), Present> = FxMap::default();
        for u in view.each_node(self.nodes.len()) {
            let occ = &self.occ.node_occ[u];
            let (c, s) = (comp[u], ssi(u));
            if c == NONE {
                continue;
            }
            for &(r, pos, cl) in occ {
                let cl = self.class_in(view, u, pos, cl);
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
            memo: RefCell::new(FxMap::default()),
        }
    }

    /// Components holding an edge of kind bit `bit` (0 non-counterflow,
    /// 1 counterflow), with one such edge each.
    fn with_kind(&self, pr: &Presence, bit: u8) -> HashMap<u32, Edge> {
        let mut has: HashMap<u32, Edge> = HashMap::new();
        for (&(c, r), cls) in &pr.classes {
            if has.contains_key(&c) {
                continue;
            }
            let pair = cls.iter().find_map(|&ci| {
                cls.iter()
                    .find(|&&cj| self.kind(r, ci, cj) >> bit & 1 != 0)
                    .map(|&cj| (ci, cj))
            });
            if let Some((ci, cj)) = pair {
                let ((u, p, _), (v, q, _)) = (pr.reps[&(c, r, ci)].any, pr.reps[&(c, r, cj)].any);
                has.insert(
                    c,
                    Edge {
                        from: u,
                        to: v,
                        from_pos: p,
                        to_pos: q,
                        counterflow: bit == 1,
                    },
                );
            }
        }
        has
    }

    /// The first dangerous pair (e3, e4, reason) at the levels `level`
    /// per node, in node order, or `None` when there is none: the verdict
    /// of `robustness::find_pairs` (module comment, (2)).
    pub fn find(&self, level: &dyn Fn(usize) -> Level) -> Option<(Edge, Edge, Reason)> {
        self.find_in(View::default(), level, true)
            .first()
            .map(|f| (f.e3, f.e4, f.reason))
    }

    /// Per component of `view` with a cycle dangerous at the levels
    /// `level`, the pair at its first pivot in node order (the pivots
    /// `robustness::find_pairs` picks; the pairs may differ).
    pub fn find_in(
        &self,
        view: View,
        level: &dyn Fn(usize) -> Level,
        stop_at_first: bool,
    ) -> Vec<Found> {
        let ssi = |v: usize| level(v) == Level::Serializable;
        let pr = self.presence(view, &ssi);
        self.find_on(view, &pr, level, stop_at_first)
    }

    /// [`Blocks::find_in`] on known presence sets.
    fn find_on(
        &self,
        view: View,
        pr: &Presence,
        level: &dyn Fn(usize) -> Level,
        stop_at_first: bool,
    ) -> Vec<Found> {
        let has_nc = self.with_kind(pr, 0);
        let mut found = vec![];
        let mut done: HashSet<u32> = HashSet::new();
        for v in view.each_node(self.nodes.len()) {
            let c = pr.comp[v];
            if c == NONE || !has_nc.contains_key(&c) || done.contains(&c) {
                continue;
            }
            let (inc, out) = self.aggregates(view, pr, v);
            if let Some((e3, e4, reason)) = super::rules::dangerous_pair(level(v), &inc, &out) {
                done.insert(c);
                found.push(Found {
                    comp: c,
                    e3,
                    e4,
                    reason,
                });
                if stop_at_first {
                    break;
                }
            }
        }
        found
    }

    /// Type I: per component of `view`, a counterflow edge inside it.
    pub fn find_type_i(&self, view: View, stop_at_first: bool) -> Vec<Found> {
        self.find_type_i_on(&self.presence(view, &|_| false), stop_at_first)
    }

    fn find_type_i_on(&self, pr: &Presence, stop_at_first: bool) -> Vec<Found> {
        let mut found: Vec<Found> = self
            .with_kind(pr, 1)
            .into_iter()
            .map(|(comp, e)| Found {
                comp,
                e3: e,
                e4: e,
                reason: Reason::Counterflow,
            })
            .collect();
        found.sort_by_key(|f| (f.e3.from, f.comp));
        if stop_at_first {
            found.truncate(1);
        }
        found
    }

    /// The witnesses' pairs of `method` on `view`: [`find_in`] at the
    /// method's level, or [`find_type_i`].
    pub fn find_method(&self, view: View, method: Method, stop_at_first: bool) -> Vec<Found> {
        match method {
            Method::TypeI => self.find_type_i(view, stop_at_first),
            m => self.find_in(view, &|_| m.level(), stop_at_first),
        }
    }

    /// The first dangerous pair of `view` under `method` (as
    /// [`Blocks::find_method`] finds it) with its cycle closed on the hub
    /// graph, or `None` when the view is robust: one hub graph per test.
    /// The cycle is `None` only if the pair could not be closed, which
    /// (4) rules out; the verdict never depends on it.
    pub fn first_cycle(&self, view: View, method: Method) -> Option<(Found, Option<Vec<Edge>>)> {
        let hub = Hub::new(self, view);
        let pr = self.presence_in(view, hub.components(), &|_| false);
        let f = *match method {
            Method::TypeI => self.find_type_i_on(&pr, true),
            m => self.find_on(view, &pr, &|_| m.level(), true),
        }
        .first()?;
        let nc = if method == Method::TypeI {
            None
        } else {
            match self.with_kind(&pr, 0).get(&f.comp) {
                Some(&e) => Some(e),
                None => return Some((f, None)),
            }
        };
        Some((f, hub.cycle(&pr.comp, f.comp, (f.e3, f.e4), nc)))
    }

    /// Key-based reads, not yet locking, that start a counterflow edge
    /// inside a component: `promote::candidates_in` from the blocks.
    pub fn candidates(&self, w: &Workload) -> Vec<StmtRef> {
        let view = View::default();
        let pr = self.presence(view, &|_| false);
        let mut out: HashSet<StmtRef> = HashSet::new();
        for (u, occ) in self.occ.node_occ.iter().enumerate() {
            let c = pr.comp[u];
            for &(r, pos, cl) in occ {
                let starts_cf = pr
                    .classes
                    .get(&(c, r))
                    .into_iter()
                    .flatten()
                    .any(|&cj| self.kind(r, cl, cj) & 2 != 0);
                let s = self.stmt_of(u as u32, pos);
                let st = &w.programs[s.0].statements[s.1];
                if starts_cf && st.ty == crate::model::btp::StmtType::KeySel && !st.locking {
                    out.insert(s);
                }
            }
        }
        let mut out: Vec<StmtRef> = out.into_iter().collect();
        out.sort_unstable();
        out
    }

    /// Node v's aggregates over the edges inside its component: its
    /// occurrences' aggregates ([`Blocks::occurrence`]), absorbed in
    /// occurrence order — the same as adding every edge in that order
    /// (`rules::pair`'s `absorb`).
    fn aggregates(&self, view: View, pr: &Presence, v: usize) -> (Incoming<Edge>, Outgoing<Edge>) {
        let c = pr.comp[v];
        let mut inc: Incoming<Edge> = Incoming::default();
        let mut out: Outgoing<Edge> = Outgoing::default();
        let mut memo = pr.memo.borrow_mut();
        for &(r, pos, cl) in &self.occ.node_occ[v] {
            let cl = self.class_in(view, v, pos, cl);
            let (oi, oo) = memo
                .entry((c, r, cl, pos))
                .or_insert_with(|| self.occurrence(pr, c, r, cl, pos));
            let v = v as u32;
            inc.absorb(oi, |(u, upos, counterflow)| Edge {
                from: u,
                to: v,
                from_pos: upos,
                to_pos: pos,
                counterflow,
            });
            out.absorb(oo, |(w, wpos, _)| Edge {
                from: v,
                to: w,
                from_pos: pos,
                to_pos: wpos,
                counterflow: true,
            });
        }
        (inc, out)
    }

    /// The aggregates of one occurrence of class `cl` at position `pos`
    /// in component `c`, over the classes of relation `r` present in `c`,
    /// each edge named by its far end. What the rule reads of an edge
    /// (`InEdge`, `OutEdge`) depends on the class pair, the kind and the
    /// position only (module comment, (2)), so every occurrence of
    /// (`cl`, `pos`) in `c` has the same aggregates up to its own end:
    /// computed once per component, not once per node.
    fn occurrence(&self, pr: &Presence, c: u32, r: u32, cl: u32, pos: u16) -> OccAggregates {
        let mut inc: Incoming<Far> = Incoming::default();
        let mut out: Outgoing<Far> = Outgoing::default();
        for &other in pr.classes.get(&(c, r)).into_iter().flatten() {
            let p = pr.reps[&(c, r, other)];
            self.add_in(&mut inc, (pos, cl), r, other, p);
            self.add_out(&mut out, (pos, cl), r, other, p);
        }
        (inc, out)
    }

    /// The levels of `allocation::lowest` (without the witnesses), from
    /// the blocks.
    pub fn lowest_levels(&self) -> Allocation {
        self.lowest().allocation
    }

    /// Edges from class `ci` (present in the component as `p`) into an
    /// occurrence `at` = (position, class cj), named by their source.
    fn add_in(&self, inc: &mut Incoming<Far>, at: (u16, u32), r: u32, ci: u32, p: Present) {
        let (pos, cj) = at;
        let k = self.kind(r, ci, cj);
        let from_read = self.class_ty(r, ci).starts_with_read();
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
            inc.add(facts, s, (u, upos, counterflow));
            if let Some((q, qpos)) = p.plain {
                inc.add(facts, false, (q, qpos, counterflow));
            }
        }
    }

    /// Counterflow edges from an occurrence `at` = (position, class ci)
    /// into class `cj` (present in the component as `p`), named by their
    /// target.
    fn add_out(&self, out: &mut Outgoing<Far>, at: (u16, u32), r: u32, cj: u32, p: Present) {
        let (pos, ci) = at;
        let k = self.kind(r, ci, cj);
        if k & 2 == 0 {
            return;
        }
        let facts = super::rules::OutEdge {
            counterflow: true,
            fuw: k & 8 != 0,
            from_pos: pos,
        };
        let (v, vpos, s) = p.any;
        out.add(facts, s, (v, vpos, true));
        if let Some((q, qpos)) = p.plain {
            out.add(facts, false, (q, qpos, true));
        }
    }

    fn class_ty(&self, r: u32, c: u32) -> crate::model::btp::StmtType {
        let global = self.occ.rel_classes[r as usize][(c & !STRIPPED) as usize];
        self.occ.class_list[global as usize].ty
    }

    /// The flags `SummaryGraph` keeps per edge, (rw, fuw), of a real
    /// edge `e` (`graph::Occurrences::edges`).
    pub fn edge_flags(&self, e: &Edge) -> (bool, bool) {
        let at = |v: u32, pos: u16| {
            self.occ.node_occ[v as usize]
                .iter()
                .find(|o| o.1 == pos)
                .map_or((0, 0), |&(r, _, c)| (r, c))
        };
        let ((r, ci), (_, cj)) = (at(e.from, e.from_pos), at(e.to, e.to_pos));
        let k = self.kind(r, ci, cj);
        if e.counterflow {
            (true, k & 8 != 0)
        } else {
            (k & 4 != 0, false)
        }
    }

    /// `robustness::is_robust` on the summary graph, from the blocks.
    pub fn is_robust(&self, method: Method) -> bool {
        self.is_robust_in(View::default(), method)
    }

    /// `robustness::is_robust` (`oracle::Compact::is_robust`) on the
    /// masked graph of `view`.
    pub fn is_robust_in(&self, view: View, method: Method) -> bool {
        self.find_method(view, method, true).is_empty()
    }

    /// `robustness::is_robust_under` on the summary graph, from the
    /// blocks.
    pub fn is_robust_under(&self, alloc: &Allocation) -> bool {
        self.find(&|v| alloc.level(self.nodes[v].ltp.program))
            .is_none()
    }

    /// The local class of occurrence (v, pos).
    fn class_at(&self, v: u32, pos: u16) -> u32 {
        self.occ.node_occ[v as usize]
            .iter()
            .find(|o| o.1 == pos)
            .map_or(0, |o| o.2)
    }

    /// One non-counterflow edge inside each component of `view` that has
    /// one (type II needs it on the cycle).
    pub fn nc_edges(&self, view: View) -> HashMap<u32, Edge> {
        self.with_kind(&self.presence(view, &|_| false), 0)
    }

    /// The statement occurrence (v, pos) stands for.
    pub fn stmt_of(&self, v: u32, pos: u16) -> StmtRef {
        let ltp = &self.nodes[v as usize].ltp;
        (ltp.program, ltp.occurrences[pos as usize].stmt)
    }
}
