//! Reads whose result is not every row they match (issue 23, "MIN/ORDER
//! BY/LIMIT honesty"): `SELECT MIN(c)`, `… ORDER BY … LIMIT 1`, a
//! non-aggregate `SELECT … INTO` (PL/pgSQL keeps the first row)
//! (`Provenance::limited`). Both models read every match, which gives
//! dependencies on rows the read does not return: an insert into the
//! group of a `MIN` above its result, an update of a row after the first.
//! PostgreSQL's result does not change then, and a cycle through such an
//! edge may equal a serial order in every result (TPC-C's OrderStatus →
//! Delivery → NewOrder under snapshot isolation).
//!
//! The values give no order among rows, so which match is the result is
//! not known — except when the read matches at most one row besides the
//! one a write changes: a write that makes row `t` match, or stop
//! matching, changes the result when no *other* row matches (empty ↔
//! `t`: NULL ↔ `t`'s value for `MIN`, no row ↔ `t` for `LIMIT 1`); an
//! item read of the only match reads the result. Only those dependencies
//! are edges of the serialization graph with values (`certain`); the
//! others are kept for PostgreSQL's SSI, which tracks every row the read
//! scanned (`Search::ssi`: more aborts there, never a false confirmation).
//! A schedule whose cycle needs another edge is found only in the BTP
//! model and labelled "in the model only".

use super::instance::Instance;
use crate::analysis::graph::SummaryGraph;
use crate::model::btp::{StmtType, Workload};
use crate::model::provenance::Provenance;

/// Marks the limited predicate selections of an instance searched with
/// values.
pub(super) fn mark_limited(g: &SummaryGraph, prov: &Provenance, inst: &mut Instance) {
    for t in &mut inst.txns {
        let ltp = &g.nodes[t.node].ltp;
        for (pos, s) in t.steps.iter_mut().enumerate() {
            let stmt = ltp.occurrences[pos].stmt;
            s.limited = s.ty == StmtType::PredSel && prov.limited(ltp.program, stmt);
        }
    }
}

/// The tuples a limited read matched, as a mask (every bit set when a
/// tuple is beyond the mask: then no dependency is certain).
pub(super) fn mask(matched: &[usize]) -> u128 {
    if matched.iter().any(|&t| t >= 128) {
        return u128::MAX;
    }
    matched.iter().fold(0, |m, &t| m | (1 << t))
}

/// Is a change of whether tuple `t` matches certain to change the result
/// of a limited read that matched `mask`? Only when no other row matched.
pub(super) fn certain(mask: u128, t: usize) -> bool {
    let me = if t < 128 { 1u128 << t } else { 0 };
    mask & !me == 0
}

/// Why the search with values found no schedule when some schedule's
/// cycle needs a dependency that does not change a limited read's result.
pub(super) fn reason(w: &Workload, g: &SummaryGraph, inst: &Instance) -> String {
    let reads: Vec<String> = inst
        .txns
        .iter()
        .flat_map(|t| {
            let ltp = &g.nodes[t.node].ltp;
            t.steps
                .iter()
                .enumerate()
                .filter(|(_, s)| s.limited)
                .map(move |(pos, _)| {
                    format!(
                        "{} of {}",
                        ltp.occurrence_label(w, pos),
                        w.programs[ltp.program].name
                    )
                })
        })
        .collect::<std::collections::BTreeSet<String>>()
        .into_iter()
        .collect();
    format!(
        "the cycles with values rest on a row that a MIN, ORDER BY … LIMIT or one-row INTO read ({}) matches but need not return: PostgreSQL's result of that read would not change",
        reads.join(", ")
    )
}
