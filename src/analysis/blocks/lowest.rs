//! The lowest robust allocation on the block form: `allocation::lowest`'s
//! one pass (its module comment argues uniqueness and robustness), with
//! each node's aggregates from the blocks (module comment of `blocks`,
//! (2)) and, for each raised program, the pair that forces it, as real
//! edges (expanded into a cycle by `hub`).

use std::collections::HashMap;

use super::{Blocks, Presence, View};
use crate::analysis::allocation::Cause;
use crate::analysis::graph::Edge;
use crate::analysis::rules::{dangerous_pair, Reason};
use crate::analysis::scc::NONE;
use crate::model::isolation::{Allocation, Level};

/// One raised program and the adjacent pair (e3, e4) that forces it: a
/// cycle through the pair is dangerous with the program one level lower
/// (a neighbour: with it not SERIALIZABLE).
#[derive(Debug, Clone)]
pub struct BlockRaise {
    pub program: usize,
    pub level: Level,
    pub cause: Cause,
    pub comp: u32,
    pub e3: Edge,
    pub e4: Edge,
    pub reason: Reason,
}

/// The lowest robust allocation and the pairs behind it.
pub struct BlockLowest {
    pub allocation: Allocation,
    /// One per program above READ COMMITTED, by program index.
    pub raised: Vec<BlockRaise>,
}

/// Why a program was raised, while the pass runs.
type Why = Option<(Cause, u32, Edge, Edge, Reason)>;

impl Blocks {
    /// `allocation::lowest` from the blocks: a pivot dangerous at
    /// REPEATABLE READ is SERIALIZABLE, and so is every P3 of an rw edge
    /// into it and every P5 of a counterflow edge out of it not ruled out
    /// by first-updater-wins (every occurrence, in the component, of a
    /// class that gives such an edge); a pivot dangerous only at READ
    /// COMMITTED is REPEATABLE READ.
    pub fn lowest(&self) -> BlockLowest {
        let view = View::default();
        let pr = self.presence(view, &|_| false);
        let has_nc = self.with_kind(&pr, 0);
        let programs = self.program_nodes.len();
        let mut levels = vec![Level::ReadCommitted; programs];
        let mut why: Vec<Why> = vec![None; programs];
        let prog = |v: usize| self.nodes[v].ltp.program;
        // (component, relation, class) → (pivot, pivot's edge e4 or e3,
        // is the class on the incoming side).
        let mut forced: HashMap<(u32, u32, u32), (Edge, Edge, bool)> = HashMap::new();
        for v in 0..self.nodes.len() {
            let c = pr.comp[v];
            if c == NONE || !has_nc.contains_key(&c) {
                continue;
            }
            let (inc, out) = self.aggregates(view, &pr, v);
            let (level, (e3, e4, reason)) =
                if let Some(p) = dangerous_pair(Level::RepeatableRead, &inc, &out) {
                    self.force_neighbours(&pr, v, (&inc, &out), &mut forced);
                    (Level::Serializable, p)
                } else if let Some(p) = dangerous_pair(Level::ReadCommitted, &inc, &out) {
                    (Level::RepeatableRead, p)
                } else {
                    continue;
                };
            if levels[prog(v)] < level {
                levels[prog(v)] = level;
                why[prog(v)] = Some((Cause::Pivot, c, e3, e4, reason));
            }
        }
        // Each neighbour's reason is its first pivot in node order (the
        // per-edge pass forces pivot by pivot), an edge into the pivot
        // before one out of it, then its first node and occurrence.
        let mut best: Vec<Option<(u32, bool, Edge, Edge)>> = vec![None; programs];
        for (u, occ) in self.occ.node_occ.iter().enumerate() {
            let c = pr.comp[u];
            for &(r, pos, cl) in occ {
                let Some(&(e3, e4, incoming)) = forced.get(&(c, r, cl)) else {
                    continue;
                };
                let key = (e3.to, !incoming);
                if best[prog(u)].is_some_and(|b| (b.0, b.1) <= key) {
                    continue;
                }
                // This occurrence's own edge to or from the pivot.
                let (e3, e4) = if incoming {
                    let k = self.kind(r, cl, self.class_at(e3.to, e3.to_pos));
                    let e3 = Edge {
                        from: u as u32,
                        from_pos: pos,
                        counterflow: k & 5 != 5,
                        ..e3
                    };
                    (e3, e4)
                } else {
                    let e4 = Edge {
                        to: u as u32,
                        to_pos: pos,
                        ..e4
                    };
                    (e3, e4)
                };
                best[prog(u)] = Some((key.0, key.1, e3, e4));
            }
        }
        for (p, b) in best.into_iter().enumerate() {
            let Some((_, _, e3, e4)) = b else { continue };
            if levels[p] < Level::Serializable {
                levels[p] = Level::Serializable;
                let pivot = prog(e4.from as usize);
                let reason = Reason::strong(e3.counterflow);
                why[p] = Some((
                    Cause::Neighbour { pivot },
                    pr.comp[e4.from as usize],
                    e3,
                    e4,
                    reason,
                ));
            }
        }
        let raised = why
            .into_iter()
            .enumerate()
            .filter_map(|(p, w)| {
                w.map(|(cause, comp, e3, e4, reason)| BlockRaise {
                    program: p,
                    level: levels[p],
                    cause,
                    comp,
                    e3,
                    e4,
                    reason,
                })
            })
            .collect();
        BlockLowest {
            allocation: Allocation(levels),
            raised,
        }
    }

    /// At an SI-dangerous pivot v: every class present in v's component
    /// that gives an rw edge into v (with v's counterflow edge e4 not
    /// ruled out by first-updater-wins) or such a counterflow edge out of
    /// v (with v's rw edge e3) forces its programs to SERIALIZABLE.
    fn force_neighbours(
        &self,
        pr: &Presence,
        v: usize,
        (inc, out): (
            &crate::analysis::rules::Incoming<Edge>,
            &crate::analysis::rules::Outgoing<Edge>,
        ),
        forced: &mut HashMap<(u32, u32, u32), (Edge, Edge, bool)>,
    ) {
        let (Some(si_out), Some((rw_in, _))) = (out.si_cf, inc.rw) else {
            return;
        };
        let c = pr.comp[v];
        for &(r, pos, cl) in &self.occ.node_occ[v] {
            for &other in pr.classes.get(&(c, r)).into_iter().flatten() {
                let (k_in, k_out) = (self.kind(r, other, cl), self.kind(r, cl, other));
                let rep = pr.reps[&(c, r, other)].any;
                if k_in & 2 != 0 || k_in & 5 == 5 {
                    // e3 from `other` into (v, pos); the occurrence's own
                    // edge is made when it is forced.
                    let e3 = Edge {
                        from: rep.0,
                        to: v as u32,
                        from_pos: rep.1,
                        to_pos: pos,
                        counterflow: k_in & 5 != 5,
                    };
                    forced.entry((c, r, other)).or_insert((e3, si_out, true));
                }
                if k_out & 2 != 0 && k_out & 8 == 0 {
                    let e4 = Edge {
                        from: v as u32,
                        to: rep.0,
                        from_pos: pos,
                        to_pos: rep.1,
                        counterflow: true,
                    };
                    forced.entry((c, r, other)).or_insert((rw_in, e4, false));
                }
            }
        }
    }
}
