//! The dangerous-pair rule, written once (issue 26): whether an adjacent
//! pair e3 = (P3, q3, c, q4, P4) into a pivot P4 and e4 = (P4, q4', cf,
//! q5, P5) out of it makes a cycle through them dangerous at P4's
//! isolation level, and its per-node summary. Every search asks here: the
//! type-II test and the allocation test (`robustness`), the grouped
//! graph of the subset search (`oracle`), the lowest allocation
//! (`allocation`) and the witness checks (`robustness::check_witness*`).
//!
//! [`dangerous`] is the rule for one pair (docs/allocation.md):
//!
//! * READ COMMITTED (Theorem 4.2 / 6.4): e3 is counterflow or q3 starts
//!   with a read ("strong"), or q4' comes before q4 in P4;
//! * REPEATABLE READ: e4 is not ruled out by first-updater-wins
//!   (`si::fuw_blocked`, Lemma 3) and e3 may be an rw-antidependency from
//!   a non-writing operation (`si::rw_capable`, Lemma 2);
//! * SERIALIZABLE: as REPEATABLE READ, unless P3 and P5 are SERIALIZABLE
//!   too (PostgreSQL's SSI then aborts the structure, Theorem 1).
//!
//! [`dangerous_pair`] decides the same from per-node aggregates
//! ([`Incoming`], [`Outgoing`]), so a search reads each edge once.
//! **Why the aggregates lose nothing.** A pair exists that [`dangerous`]
//! accepts iff: (RC) some e4 is counterflow and either some e3 is strong
//! (then every counterflow e4 pairs with it) or the smallest `from_pos` of
//! a counterflow e4 is below the largest `to_pos` of an e3 (the only
//! other condition, a comparison of one value of each side); (RR) some
//! e3 is rw and some e4 is a counterflow edge not `fuw` (the conditions
//! are independent); (SER) as RR plus not (P3 and P5 SERIALIZABLE): some
//! rw e3 from a non-SERIALIZABLE P3 with any such e4, or any rw e3 with
//! such an e4 into a non-SERIALIZABLE P5. Each is an OR, min or max over
//! the edges of one side, kept in the aggregates with a representative,
//! and the pair returned is one [`dangerous`] accepts with the same
//! reason. The unit test below checks both claims against every pair of
//! random edge sets.

use crate::model::isolation::Level;

/// Why the distinguished adjacent pair of a witness makes it dangerous.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// Two adjacent counterflow edges (Theorem 6.4, first condition).
    AdjacentCounterflow,
    /// Ordered-counterflow pair: the counterflow edge leaves P4 from a
    /// statement before the one the incoming edge enters.
    OutgoingBeforeIncoming,
    /// Ordered-counterflow pair: the incoming edge starts at a key sel,
    /// pred sel, pred upd or pred del (an R- or PR-operation).
    IncomingFromRead,
    /// Type-I method: the cycle contains a counterflow edge.
    Counterflow,
}

impl Reason {
    /// The reason of a strong (or rw) incoming edge.
    pub(crate) fn strong(counterflow: bool) -> Reason {
        if counterflow {
            Reason::AdjacentCounterflow
        } else {
            Reason::IncomingFromRead
        }
    }
}

/// What the rule reads of an edge e3 entering the pivot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct InEdge {
    pub(crate) counterflow: bool,
    /// q3 starts with a read (`StmtType::starts_with_read`).
    pub(crate) from_read: bool,
    /// The dependency may be an rw-antidependency from an operation that
    /// does not write the object (`SummaryGraph::rw`).
    pub(crate) rw: bool,
    /// Position of q4 in P4.
    pub(crate) to_pos: u16,
}

/// What the rule reads of an edge e4 leaving the pivot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OutEdge {
    pub(crate) counterflow: bool,
    /// First-updater-wins rules the edge out at the snapshot levels
    /// (`SummaryGraph::fuw`).
    pub(crate) fuw: bool,
    /// Position of q4' in P4.
    pub(crate) from_pos: u16,
}

/// Is the pair (e3, e4) dangerous with the pivot at `level`? `p3_ssi`,
/// `p5_ssi`: P3 (source of e3), P5 (target of e4) run SERIALIZABLE.
pub(crate) fn dangerous(
    level: Level,
    e3: InEdge,
    e4: OutEdge,
    p3_ssi: bool,
    p5_ssi: bool,
) -> Option<Reason> {
    if !e4.counterflow {
        return None;
    }
    match level {
        Level::ReadCommitted => {
            if e3.counterflow || e3.from_read {
                Some(Reason::strong(e3.counterflow))
            } else {
                (e4.from_pos < e3.to_pos).then_some(Reason::OutgoingBeforeIncoming)
            }
        }
        _ if e4.fuw => None,
        Level::RepeatableRead => e3.rw.then(|| Reason::strong(e3.counterflow)),
        Level::Serializable => {
            (e3.rw && !(p3_ssi && p5_ssi)).then(|| Reason::strong(e3.counterflow))
        }
    }
}

/// Over the edges entering one node, the first edge (in the order added)
/// of each kind [`dangerous_pair`] asks for. `I` names an edge, or a group
/// and an edge (`oracle`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Incoming<I> {
    /// Counterflow or from a read, with its `counterflow`.
    pub(crate) strong: Option<(I, bool)>,
    /// Largest `to_pos` (the first edge reaching it).
    pub(crate) latest: Option<(u16, I)>,
    /// May be an rw-antidependency, with its `counterflow`.
    pub(crate) rw: Option<(I, bool)>,
    /// The same, from a program not SERIALIZABLE.
    pub(crate) rw_plain: Option<(I, bool)>,
}

/// Over the edges leaving one node, the first counterflow edge of each
/// kind [`dangerous_pair`] asks for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Outgoing<I> {
    /// Smallest `from_pos` (the first edge reaching it).
    pub(crate) earliest_cf: Option<(u16, I)>,
    /// Not ruled out by first-updater-wins.
    pub(crate) si_cf: Option<I>,
    /// The same, into a program not SERIALIZABLE.
    pub(crate) si_cf_plain: Option<I>,
}

impl<I: Copy> Default for Incoming<I> {
    fn default() -> Self {
        Incoming {
            strong: None,
            latest: None,
            rw: None,
            rw_plain: None,
        }
    }
}

impl<I: Copy> Default for Outgoing<I> {
    fn default() -> Self {
        Outgoing {
            earliest_cf: None,
            si_cf: None,
            si_cf_plain: None,
        }
    }
}

impl<I: Copy> Incoming<I> {
    /// Add edge `id` (facts `e`, from a SERIALIZABLE program if `p3_ssi`).
    pub(crate) fn add(&mut self, e: InEdge, p3_ssi: bool, id: I) {
        if (e.counterflow || e.from_read) && self.strong.is_none() {
            self.strong = Some((id, e.counterflow));
        }
        if self.latest.is_none_or(|(p, _)| p < e.to_pos) {
            self.latest = Some((e.to_pos, id));
        }
        if e.rw {
            self.rw.get_or_insert((id, e.counterflow));
            if !p3_ssi {
                self.rw_plain.get_or_insert((id, e.counterflow));
            }
        }
    }

    /// Add the edges summarised by `o`, all from one program (SERIALIZABLE
    /// if `p3_ssi`), naming them through `f`: the same as adding them one
    /// by one, in `o`'s order, after the edges already added.
    pub(crate) fn merge<J: Copy>(&mut self, o: &Incoming<J>, p3_ssi: bool, f: impl Fn(J) -> I) {
        if self.strong.is_none() {
            self.strong = o.strong.map(|(j, c)| (f(j), c));
        }
        if let Some((p, j)) = o.latest {
            if self.latest.is_none_or(|(q, _)| q < p) {
                self.latest = Some((p, f(j)));
            }
        }
        if self.rw.is_none() {
            self.rw = o.rw.map(|(j, c)| (f(j), c));
        }
        if self.rw_plain.is_none() && !p3_ssi {
            self.rw_plain = o.rw.map(|(j, c)| (f(j), c));
        }
    }

    /// Add the edges summarised by `o` (built by [`Incoming::add`] with
    /// each edge's own P3 level), naming them through `f`: the same as
    /// adding them one by one, in `o`'s order, after the edges already
    /// added (each field is the first edge of its kind, or the first at
    /// the largest `to_pos`).
    pub(crate) fn absorb<J: Copy>(&mut self, o: &Incoming<J>, f: impl Fn(J) -> I) {
        if self.strong.is_none() {
            self.strong = o.strong.map(|(j, c)| (f(j), c));
        }
        if let Some((p, j)) = o.latest {
            if self.latest.is_none_or(|(q, _)| q < p) {
                self.latest = Some((p, f(j)));
            }
        }
        if self.rw.is_none() {
            self.rw = o.rw.map(|(j, c)| (f(j), c));
        }
        if self.rw_plain.is_none() {
            self.rw_plain = o.rw_plain.map(|(j, c)| (f(j), c));
        }
    }
}

impl<I: Copy> Outgoing<I> {
    /// Add edge `id` (facts `e`, into a SERIALIZABLE program if `p5_ssi`).
    pub(crate) fn add(&mut self, e: OutEdge, p5_ssi: bool, id: I) {
        if !e.counterflow {
            return;
        }
        if self.earliest_cf.is_none_or(|(p, _)| p > e.from_pos) {
            self.earliest_cf = Some((e.from_pos, id));
        }
        if !e.fuw {
            self.si_cf.get_or_insert(id);
            if !p5_ssi {
                self.si_cf_plain.get_or_insert(id);
            }
        }
    }

    /// [`Incoming::merge`] for outgoing edges, all into one program.
    pub(crate) fn merge<J: Copy>(&mut self, o: &Outgoing<J>, p5_ssi: bool, f: impl Fn(J) -> I) {
        if let Some((p, j)) = o.earliest_cf {
            if self.earliest_cf.is_none_or(|(q, _)| q > p) {
                self.earliest_cf = Some((p, f(j)));
            }
        }
        if self.si_cf.is_none() {
            self.si_cf = o.si_cf.map(&f);
        }
        if self.si_cf_plain.is_none() && !p5_ssi {
            self.si_cf_plain = o.si_cf.map(&f);
        }
    }

    /// [`Incoming::absorb`] for outgoing edges (each with its own P5
    /// level in `o`).
    pub(crate) fn absorb<J: Copy>(&mut self, o: &Outgoing<J>, f: impl Fn(J) -> I) {
        if let Some((p, j)) = o.earliest_cf {
            if self.earliest_cf.is_none_or(|(q, _)| q > p) {
                self.earliest_cf = Some((p, f(j)));
            }
        }
        if self.si_cf.is_none() {
            self.si_cf = o.si_cf.map(&f);
        }
        if self.si_cf_plain.is_none() {
            self.si_cf_plain = o.si_cf_plain.map(&f);
        }
    }
}

/// A pair (e3, e4, reason) that [`dangerous`] accepts at `level`, from
/// the pivot's aggregates, or `None` when there is none (module comment).
pub(crate) fn dangerous_pair<I: Copy>(
    level: Level,
    inc: &Incoming<I>,
    out: &Outgoing<I>,
) -> Option<(I, I, Reason)> {
    match level {
        Level::ReadCommitted => {
            let (from, o) = out.earliest_cf?;
            if let Some((i, cf)) = inc.strong {
                return Some((i, o, Reason::strong(cf)));
            }
            let (to, i) = inc.latest?;
            (from < to).then_some((i, o, Reason::OutgoingBeforeIncoming))
        }
        Level::RepeatableRead => {
            let o = out.si_cf?;
            let (i, cf) = inc.rw?;
            Some((i, o, Reason::strong(cf)))
        }
        Level::Serializable => {
            let o = out.si_cf?;
            match (inc.rw_plain, out.si_cf_plain) {
                (Some((i, cf)), _) => Some((i, o, Reason::strong(cf))),
                (None, Some(o2)) => inc.rw.map(|(i, cf)| (i, o2, Reason::strong(cf))),
                (None, None) => None,
            }
        }
    }
}

/// The aggregates of every node of a summary graph over the edges inside
/// its strongly connected component, read in one pass in edge order.
pub(crate) struct Pivots {
    /// Per component: it has a non-counterflow edge (type II needs one).
    pub(crate) has_nc: fixedbitset::FixedBitSet,
    pub(crate) inc: Vec<Incoming<usize>>,
    pub(crate) out: Vec<Outgoing<usize>>,
}

impl Pivots {
    /// `comp`: component per node (`scc::NONE` for nodes left out);
    /// `ssi(v)`: node v's program runs SERIALIZABLE.
    pub(crate) fn of_graph(
        g: &crate::analysis::graph::SummaryGraph,
        comp: &[u32],
        ssi: impl Fn(usize) -> bool,
    ) -> Pivots {
        Pivots::of_graph_where(g, comp, ssi, |_| true)
    }

    /// [`Pivots::of_graph`] over the edges `keep` accepts (edge indices):
    /// the graph with the other edges removed, `comp` its components.
    pub(crate) fn of_graph_where(
        g: &crate::analysis::graph::SummaryGraph,
        comp: &[u32],
        ssi: impl Fn(usize) -> bool,
        keep: impl Fn(usize) -> bool,
    ) -> Pivots {
        let n = g.nodes.len();
        let mut p = Pivots {
            has_nc: fixedbitset::FixedBitSet::with_capacity(n),
            inc: vec![Incoming::default(); n],
            out: vec![Outgoing::default(); n],
        };
        for u in 0..n {
            let cu = comp[u];
            if cu == crate::analysis::scc::NONE {
                continue;
            }
            for i in g.out_start[u]..g.out_start[u + 1] {
                let v = g.edges[i].to as usize;
                // Left-out targets have comp NONE ≠ cu.
                if comp[v] != cu || !keep(i) {
                    continue;
                }
                if !g.edges[i].counterflow {
                    p.has_nc.insert(cu as usize);
                }
                p.inc[v].add(g.pair_in(i), ssi(u), i);
                p.out[u].add(g.pair_out(i), ssi(v), i);
            }
        }
        p
    }

    /// The pair making node v a dangerous pivot at `level`, if v's
    /// component can hold a type-II cycle.
    pub(crate) fn at(
        &self,
        comp: &[u32],
        v: usize,
        level: Level,
    ) -> Option<(usize, usize, Reason)> {
        let c = comp[v];
        if c == crate::analysis::scc::NONE || !self.has_nc.contains(c as usize) {
            return None;
        }
        dangerous_pair(level, &self.inc[v], &self.out[v])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn in_edge() -> impl Strategy<Value = (InEdge, bool)> {
        (any::<[bool; 4]>(), 0u16..4).prop_map(|(b, to_pos)| {
            (
                InEdge {
                    counterflow: b[0],
                    from_read: b[1],
                    // Every counterflow edge may be an rw (graph.rs).
                    rw: b[2] || b[0],
                    to_pos,
                },
                b[3],
            )
        })
    }

    fn out_edge() -> impl Strategy<Value = (OutEdge, bool)> {
        (any::<[bool; 3]>(), 0u16..4).prop_map(|(b, from_pos)| {
            (
                OutEdge {
                    counterflow: b[0],
                    fuw: b[1] && b[0],
                    from_pos,
                },
                b[2],
            )
        })
    }

    proptest! {
        /// The aggregates find a dangerous pair iff some pair of edges is
        /// dangerous, and the pair they name is one, for the same reason;
        /// merging group summaries equals adding their edges.
        #[test]
        fn aggregate_equals_every_pair(
            ins in prop::collection::vec(in_edge(), 0..6),
            outs in prop::collection::vec(out_edge(), 0..6),
            cut in 1usize..4,
        ) {
            let mut inc = Incoming::default();
            let mut out = Outgoing::default();
            for (i, &(e, s)) in ins.iter().enumerate() {
                inc.add(e, s, i);
            }
            for (i, &(e, s)) in outs.iter().enumerate() {
                out.add(e, s, i);
            }
            for level in Level::ALL {
                let any = ins.iter().any(|&(e3, s3)| {
                    outs.iter().any(|&(e4, s5)| dangerous(level, e3, e4, s3, s5).is_some())
                });
                let got = dangerous_pair(level, &inc, &out);
                prop_assert_eq!(any, got.is_some(), "{:?}", level);
                if let Some((i, o, r)) = got {
                    let ((e3, s3), (e4, s5)) = (ins[i], outs[o]);
                    prop_assert_eq!(dangerous(level, e3, e4, s3, s5), Some(r));
                }
            }
            // Merging: singleton summaries of each edge, in order.
            let mut m_in = Incoming::default();
            for (i, &(e, s)) in ins.iter().enumerate() {
                let mut one = Incoming::default();
                one.add(e, false, i);
                m_in.merge(&one, s, |x| x);
            }
            let mut m_out = Outgoing::default();
            for (i, &(e, s)) in outs.iter().enumerate() {
                let mut one = Outgoing::default();
                one.add(e, false, i);
                m_out.merge(&one, s, |x| x);
            }
            for level in Level::ALL {
                prop_assert_eq!(
                    dangerous_pair(level, &m_in, &m_out),
                    dangerous_pair(level, &inc, &out)
                );
            }
            // Absorbing: the edges cut into runs (at `cut`), each run
            // added into its own summary with the edges' own levels.
            let mut a_in = Incoming::default();
            for run in ins.iter().enumerate().collect::<Vec<_>>().chunks(cut) {
                let mut part = Incoming::default();
                for &(i, &(e, s)) in run {
                    part.add(e, s, i);
                }
                a_in.absorb(&part, |x| x);
            }
            let mut a_out = Outgoing::default();
            for run in outs.iter().enumerate().collect::<Vec<_>>().chunks(cut) {
                let mut part = Outgoing::default();
                for &(i, &(e, s)) in run {
                    part.add(e, s, i);
                }
                a_out.absorb(&part, |x| x);
            }
            prop_assert_eq!(format!("{a_in:?}"), format!("{inc:?}"));
            prop_assert_eq!(format!("{a_out:?}"), format!("{out:?}"));
        }
    }
}
