//! A counterexample schedule of the explorer (issue 11) as text, in the
//! style of the paper's Figure 3: one line per transaction, one per step
//! with its operations and the version each read saw, then the final
//! state, the serialization-graph cycle and the bounds searched.

use std::fmt::Write as _;

use crate::analysis::explorer::{Confirmation, Op, Schedule, Seen, NOT_MODELLED};
use crate::model::btp::Workload;

fn op_text(sch: &Schedule, w: &Workload, txn: usize, op: &Op) -> String {
    let on = match op.tuple {
        Some(t) => sch.tuples[t].name.clone(),
        None => w.schema.rel(op.rel).name.clone(),
    };
    let mut s = format!("{}{}[{on}]", op.kind.letter(), txn + 1);
    match op.seen {
        Some(Seen::Initial) => s.push_str(" (saw initial version)"),
        Some(Seen::Txn(x)) => {
            let _ = write!(s, " (saw T{}'s version)", x + 1);
        }
        Some(Seen::Own) => s.push_str(" (saw own write)"),
        None => {}
    }
    if !op.deferred.is_empty() {
        let names: Vec<&str> = op
            .deferred
            .iter()
            .map(|&t| sch.tuples[t].name.as_str())
            .collect();
        let _ = write!(
            s,
            " (matched {} on the snapshot, which another transaction holds: waits for its row lock)",
            names.join(", ")
        );
    }
    s
}

/// Plain text lines: the transactions, the steps in schedule order with
/// statement ids and operations (and the version each read saw), the
/// final state, the serialization-graph cycle and the bounds.
pub fn lines(w: &Workload, sch: &Schedule) -> Vec<String> {
    let mut out = vec![];
    for (i, t) in sch.transactions.iter().enumerate() {
        out.push(format!("T{} = {} ({})", i + 1, t.name, t.level));
    }
    for s in &sch.steps {
        let line = match s.pos {
            None => format!("  C{}", s.txn + 1),
            Some(pos) => {
                let id = sch.statement_id(s.txn, pos);
                let ops: Vec<String> = s.ops.iter().map(|o| op_text(sch, w, s.txn, o)).collect();
                // The rest of a statement after its lock wait: PostgreSQL
                // re-checks the waited rows on their new versions.
                let again = if s.resumed {
                    " resumes after the lock wait, re-checks (EvalPlanQual)"
                } else {
                    ""
                };
                // A key that is NULL (a value read from no row): no row.
                let ops = match ops.is_empty() {
                    true => vec!["(finds no row: its key is NULL)".to_string()],
                    false => ops,
                };
                format!("  T{} {id}{again}: {}", s.txn + 1, ops.join(" "))
            }
        };
        out.push(line);
    }
    let edges: Vec<String> = sch
        .cycle_edges()
        .iter()
        .map(|d| {
            let on = d
                .tuple
                .map_or(String::new(), |t| format!(" on {}", sch.tuples[t].name));
            format!("T{} -{}{on}-> T{}", d.from + 1, d.kind.label(), d.to + 1)
        })
        .collect();
    let finals: Vec<String> = sch
        .final_state()
        .iter()
        .map(|f| {
            let what = if f.exists { "written" } else { "deleted" };
            format!(
                "{} {what} last by T{}",
                sch.tuples[f.tuple].name,
                f.writer + 1
            )
        })
        .collect();
    out.push(format!("final state: {}", finals.join(", ")));
    out.push(format!("cycle: {}", edges.join(", ")));
    if let Some(v) = &sch.values {
        for (i, p) in v.params.iter().enumerate().filter(|(_, p)| !p.is_empty()) {
            let ps: Vec<String> = p.iter().map(|(n, x)| format!("{n} = {x}")).collect();
            out.push(format!("values: T{} with {}", i + 1, ps.join(", ")));
        }
        for (t, r) in v.rows.iter().enumerate().filter(|(_, r)| !r.is_empty()) {
            let cs: Vec<String> = r.iter().map(|(c, x)| format!("{c} = {x}")).collect();
            out.push(format!(
                "values: {} has {}",
                sch.tuples[t].name,
                cs.join(", ")
            ));
        }
        out.extend(v.writes.iter().map(|x| format!("values: {x}")));
    }
    out.push(format!("bounds: {}", sch.bounds));
    out
}

/// The explorer's answer for one cycle: "confirmed" and the schedule, or
/// the bounds it could not confirm within.
pub fn confirmation(w: &Workload, c: &Confirmation) -> Vec<String> {
    match c {
        Confirmation::Confirmed(s) => {
            // The levels the transactions ran at (all READ COMMITTED
            // unless a deployed allocation or --level says otherwise).
            let mut levels: Vec<String> = s
                .transactions
                .iter()
                .map(|t| t.level.sql().to_string())
                .collect();
            levels.sort();
            levels.dedup();
            let at = if levels.is_empty() {
                "READ COMMITTED".to_string()
            } else {
                levels.join(" / ")
            };
            // Found among the sets of another cycle of the component
            // (searched cheapest first with values): say which.
            let via = if s.via.is_some() {
                let mut names: Vec<&str> = s.transactions.iter().map(|t| t.name.as_str()).collect();
                names.sort_unstable();
                names.dedup();
                format!(
                    " through another dangerous cycle of this component ({}; the component's cycles are searched together, cheapest transaction sets first)",
                    names.join(", ")
                )
            } else {
                String::new()
            };
            // With values: a schedule of program instances with these
            // parameters; otherwise one of the BTP model only (issue 23).
            let what = match (&s.model_only, &s.values) {
                (None, Some(_)) => format!("confirmed{via}: a non-serializable {at} schedule of the programs with the values below (not yet replayed on PostgreSQL)"),
                (Some(why), _) => format!("in the model only{via}: a non-serializable {at} schedule of the BTPs (Section 5), not of the programs with values: {why}"),
                // BTP input: no SQL, no values; the BTPs are the programs.
                (None, None) => format!("confirmed{via}: a non-serializable {at} schedule of the BTPs (Section 5; not yet replayed on PostgreSQL)"),
            };
            let mut out = vec![what];
            out.extend(lines(w, s));
            out
        }
        Confirmation::NotWithinBounds { bounds, explored } => {
            let cut = if explored.exhausted {
                "; the state budget ran out before the search was complete"
            } else {
                ""
            };
            let others = explored.cycles.saturating_sub(1);
            let also = match others {
                0 => String::new(),
                1 => " and of 1 other dangerous cycle of its component".to_string(),
                n => format!(" and of {n} other dangerous cycles of its component"),
            };
            let mut out = vec![format!(
                "not confirmed within bounds ({bounds}): no non-serializable schedule of the programs of this cycle{also} ({} transaction sets with their rows, {} search states, {} complete schedules searched{cut}); this does not show that the alarm is false: the explorer does not model these {} things, which may hide a real anomaly (docs/explorer.md):",
                explored.instances,
                explored.states,
                explored.schedules,
                NOT_MODELLED.len()
            )];
            // Which flag searches further (issue 23, item 3: the bounds
            // are the user's to raise).
            if explored.more_txns > 0 {
                out.push(format!(
                    "  {}",
                    crate::analysis::explorer::more_txns_hint(explored.more_txns)
                ));
            }
            if explored.exhausted {
                out.push(format!("  the state budget ({} states) ran out: raise --max-states to search these bounds completely", bounds.max_states));
            }
            if explored.split {
                out.push("  in the BTP model a schedule exists, but it commits another transaction between the parts of one SQL statement (its subqueries, CTEs or joined tables, lowered as several BTP statements), which read one snapshot on PostgreSQL: not an anomaly PostgreSQL can produce".to_string());
            }
            out.extend(NOT_MODELLED.iter().map(|m| format!("  - {m}")));
            out
        }
        Confirmation::NotChecked(why) => vec![format!("not checked by the explorer: {why}")],
    }
}
