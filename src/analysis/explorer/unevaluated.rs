//! Keyed UPDATE/DELETE conditions the values do not evaluate (issue 23):
//! `WHERE id = :k AND attempts < 3`, `… AND locked_at IS NULL`, `… AND v
//! <> :x`. PostgreSQL 15 treats them as it treats an equality
//! (`Provenance::conditions`; checked on PG 15.20 with two psql sessions,
//! docs/explorer.md): the whole WHERE on the row's snapshot version; a
//! row that matched there and is held by another transaction is waited
//! for and re-checked on its latest version (EvalPlanQual); a row that did
//! not match is not waited for. The explorer's values are classes with
//! equality only, so such a condition is not evaluated: the write runs
//! whenever its key matches, the no-match branch is a plain read of the
//! condition's columns. That stands for some data only while the
//! condition's truth cannot change under the schedule: nothing else writes
//! the condition's columns of the row (a write that makes it false, or
//! true, decides what PostgreSQL does), nothing deletes or inserts the
//! row beside a no-match branch (a no-match and a delete leave the same
//! outcome in either order: a read of the row's column would be a
//! dependency no outcome shows), no other statement's condition the values
//! do not evaluate meets it on the row, and no predicate pins the columns
//! to values (the initial data is then free to make the condition hold, or
//! fail, as the branch needs). Otherwise the instance gets no valuation,
//! with the reason: its schedules stay "in the model only".

use super::instance::{Instance, Mask, TupleKind};
use crate::analysis::graph::SummaryGraph;
use crate::model::btp::{StmtType, Workload};
use crate::model::provenance::{Provenance, Role};

/// A step's condition the values do not evaluate: (program, statement,
/// role, its columns as a mask).
type Open = (usize, usize, Role, Mask);

/// The columns of statement `stmt` of `program`'s condition that the
/// values do not evaluate: a keyed write's extra columns that no equality
/// pins (all of them when its WHERE is inexact); a no-match branch's extra
/// columns unless every one is pinned (then `values::condition` checks it
/// on versions).
fn open(prov: &Provenance, program: usize, stmt: usize) -> Option<(Role, Mask)> {
    let (extra, role) = prov.condition(program, stmt)?;
    let pins = prov.pins(program, stmt);
    let inexact = prov.inexact(program, stmt);
    let pinned = |c: &usize| !inexact && pins.iter().any(|(p, _)| p == c);
    let cols: Vec<usize> = match role {
        Role::Scan => return None,
        Role::Write => extra.iter().copied().filter(|c| !pinned(c)).collect(),
        Role::NoMatch if extra.iter().all(pinned) => return None,
        Role::NoMatch => extra.to_vec(),
    };
    let mask = cols
        .iter()
        .filter(|&&c| c < 128)
        .fold(0, |m, &c| m | 1 << c);
    (mask != 0).then_some((role, mask))
}

/// Why instance `inst` has no valuation because of a condition the values
/// do not evaluate (see the module comment), or `Ok` when none decides
/// anything. `slots`: per relation, the columns some predicate pins.
pub(super) fn check(
    w: &Workload,
    g: &SummaryGraph,
    prov: &Provenance,
    inst: &Instance,
    slots: &[Vec<usize>],
) -> Result<(), String> {
    let at = |a: usize, pos: usize| {
        let ltp = &g.nodes[inst.txns[a].node].ltp;
        (ltp.program, ltp.occurrences[pos].stmt)
    };
    let opens: Vec<Vec<Option<Open>>> = (inst.txns.iter().enumerate())
        .map(|(a, x)| {
            (0..x.steps.len())
                .map(|pos| {
                    let (p, q) = at(a, pos);
                    x.steps[pos].tuple?;
                    open(prov, p, q).map(|(r, m)| (p, q, r, m))
                })
                .collect()
        })
        .collect();
    for (a, x) in inst.txns.iter().enumerate() {
        for (pos, s) in x.steps.iter().enumerate() {
            let (Some(t), Some(o)) = (s.tuple, opens[a][pos]) else {
                continue;
            };
            let why = |what: String| {
                let ltp = &g.nodes[x.node].ltp;
                let rel = w.schema.rel(s.rel);
                let cols: Vec<&str> = (0..rel.attributes.len())
                    .filter(|&c| c < 128 && o.3 & (1 << c) != 0)
                    .map(|c| rel.attributes[c].as_str())
                    .collect();
                format!(
                    "not instantiated: the condition of {} of {} on {}.{} is not an equality to a value, and {what} (the values cannot say whether it holds)",
                    ltp.occurrence_label(w, pos),
                    w.programs[ltp.program].name,
                    rel.name,
                    cols.join(", ")
                )
            };
            if slots[s.rel].iter().any(|&c| c < 128 && o.3 & (1 << c) != 0) {
                return Err(why("a predicate pins that column".into()));
            }
            if matches!(inst.tuples[t].kind, TupleKind::Inserted(_)) {
                return Err(why("the row is inserted".into()));
            }
            for (b, y) in inst.txns.iter().enumerate() {
                for (q, u) in y.steps.iter().enumerate() {
                    if (b, q) == (a, pos) || u.rel != s.rel || u.tuple.is_some_and(|v| v != t) {
                        continue;
                    }
                    let other = || {
                        let l = &g.nodes[y.node].ltp;
                        format!(
                            "{} of {}",
                            l.occurrence_label(w, q),
                            w.programs[l.program].name
                        )
                    };
                    let writes = matches!(u.ty, StmtType::KeyUpd | StmtType::PredUpd)
                        && u.acc.write.is_some_and(|m| m & o.3 != 0);
                    if writes {
                        return Err(why(format!("{} writes it", other())));
                    }
                    let deletes = matches!(u.ty, StmtType::KeyDel | StmtType::PredDel);
                    if deletes && o.2 == Role::NoMatch {
                        return Err(why(format!("{} deletes the row", other())));
                    }
                    if let Some(p) = opens[b][q] {
                        if (p.0, p.1, p.2) != (o.0, o.1, o.2) {
                            return Err(why(format!(
                                "{} has another such condition on the row",
                                other()
                            )));
                        }
                    }
                }
            }
        }
    }
    Ok(())
}
