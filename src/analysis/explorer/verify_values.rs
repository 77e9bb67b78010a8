//! An independent check of a schedule found with values (issue 23,
//! item 2): `verify` checks the operations against MVRC and SeG(s);
//! this replays the same steps on the value instance the schedule
//! carries (`Values::facts`) and evaluates every statement on it, without
//! the search's state:
//!
//! - a predicate selection reads exactly the tuples whose version it sees
//!   (its SQL statement's snapshot at READ COMMITTED, its transaction's at
//!   REPEATABLE READ, its own writes) is alive and holds its pinned
//!   values;
//! - a predicate UPDATE or DELETE writes (or waits for, and then
//!   re-checks, EvalPlanQual) every such tuple and no other: a DELETE
//!   removes every matching row; a resumed statement writes a waited-for
//!   tuple exactly when its latest committed version matches;
//! - a key-based statement (or insert) touches a tuple that holds the
//!   values it pins, and no other live tuple of the relation holds them
//!   all; a keyed UPDATE/DELETE's extra conjuncts hold on its row's
//!   snapshot and latest versions, its no-match branch's fail on the
//!   snapshot's (EvalPlanQual);
//! - a statement whose row gives the program a value reads exactly that
//!   row — a limited read (MIN, ORDER BY … LIMIT) that row and only rows
//!   its order puts after it, a read whose value is NULL no row; a key
//!   statement on an absent row (its key is NULL) finds nothing; a pin
//!   equal to NULL matches no row;
//! - an expression the explorer does not follow never writes a value the
//!   row had before (it is realised as `hits + 1` along the row's
//!   sequence).

use super::schedule::{OpKind, Schedule, Step, StmtKind, ValueFacts, FRESH_VALUE};
use super::TupleKind;
use crate::model::isolation::Level;

/// A version: its writer, whether it is alive, its value per slot.
type Version = (usize, bool, Vec<u16>);

struct Replay<'s> {
    s: &'s Schedule,
    f: &'s ValueFacts,
    versions: Vec<Vec<Version>>,
    committed: Vec<bool>,
    /// REPEATABLE READ / SERIALIZABLE: committed at the first statement;
    /// READ COMMITTED: committed when the current SQL statement began.
    snap: Vec<Option<Vec<bool>>>,
}

impl Replay<'_> {
    /// The version of `t` transaction `txn` sees with `view` (committed
    /// transactions it sees; `None`: the latest committed): its own last
    /// write, else the last version of a writer in view, else the initial
    /// one. Returns (alive, values).
    fn version(&self, txn: usize, t: usize, view: Option<&[bool]>) -> (bool, Vec<u16>) {
        let vs = &self.versions[t];
        let seen = |w: usize| view.map_or(self.committed[w], |v| v[w]);
        let at = vs
            .iter()
            .rposition(|v| v.0 == txn)
            .or_else(|| vs.iter().rposition(|v| seen(v.0)));
        match at {
            Some(i) => (vs[i].1, vs[i].2.clone()),
            None => (
                !matches!(self.s.tuples[t].kind, TupleKind::Inserted(_))
                    && !self.f.absent.get(t).copied().unwrap_or(false),
                self.f.init[t].clone(),
            ),
        }
    }

    /// The value of column `col` of tuple `t` in a version with `vals`:
    /// a slot's, else a known column's (`None`: unknown).
    fn value(&self, t: usize, col: usize, vals: &[u16]) -> Option<u16> {
        let rel = self.s.tuples[t].rel;
        match self.f.cols[rel].iter().position(|&c| c == col) {
            Some(slot) => vals.get(slot).copied(),
            None => self.f.known[t]
                .iter()
                .find(|(c, _)| *c == col)
                .map(|&(_, v)| v),
        }
    }

    /// Does a version of `t` hold every pinned value?
    fn holds(&self, t: usize, pins: &[(usize, u16)], vals: &[u16]) -> bool {
        pins.iter().all(|&(c, v)| {
            v != FRESH_VALUE && Some(v) != self.f.null && self.value(t, c, vals) == Some(v)
        })
    }

    /// The view of a step: the snapshot its reads see (`None`: latest).
    fn view(&mut self, step: &Step, pos: usize) -> Option<Vec<bool>> {
        let t = &self.s.transactions[step.txn];
        if step.resumed {
            return None;
        }
        let later = t.continues.get(pos).copied().unwrap_or(false);
        let fresh = match t.level {
            Level::ReadCommitted => !later || self.snap[step.txn].is_none(),
            _ => self.snap[step.txn].is_none(),
        };
        if fresh {
            self.snap[step.txn] = Some(self.committed.clone());
        }
        self.snap[step.txn].clone()
    }
}

/// The tuples of the step's operations of the given kinds.
fn tuples_of(step: &Step, kinds: &[OpKind]) -> Vec<usize> {
    let mut v: Vec<usize> = step
        .ops
        .iter()
        .filter(|o| kinds.contains(&o.kind))
        .filter_map(|o| o.tuple)
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Checks a schedule found with values against its value instance (see
/// the module comment); `Ok` for a schedule without values.
pub fn verify_values(s: &Schedule) -> Result<(), String> {
    let Some(f) = s.values.as_ref().and_then(|v| v.facts.as_ref()) else {
        return Ok(());
    };
    let k = s.transactions.len();
    if f.stmts.len() != k || f.init.len() != s.tuples.len() || f.known.len() != s.tuples.len() {
        return Err("the values do not fit the schedule".into());
    }
    let mut r = Replay {
        s,
        f,
        versions: vec![vec![]; s.tuples.len()],
        committed: vec![false; k],
        snap: vec![None; k],
    };
    for step in &s.steps {
        let Some(pos) = step.pos else {
            r.committed[step.txn] = true;
            continue;
        };
        let Some((kind, pins)) = f.stmts[step.txn].get(pos) else {
            return Err(format!("T{} has no statement at {pos}", step.txn + 1));
        };
        let view = r.view(step, pos);
        let at = format!("T{} {}", step.txn + 1, label(s, step.txn, pos));
        if step.resumed && *kind == StmtKind::Key {
            // A later part's no-match branch re-checking its row after a
            // lock wait (`mvrc::Search::rechecked`): on the latest version.
            condition(&r, step, pos, None).map_err(|e| format!("{at}: {e}"))?;
        } else if step.resumed {
            recheck(&r, step, pins).map_err(|e| format!("{at}: {e}"))?;
        } else {
            match kind {
                StmtKind::Key => key(&r, step, pins, view.as_deref())
                    .and_then(|()| condition(&r, step, pos, view.as_deref())),
                _ => predicate(&r, step, *kind, pins, view.as_deref()),
            }
            .map_err(|e| format!("{at}: {e}"))?;
        }
        apply(&mut r, step, pos).map_err(|e| format!("{at}: {e}"))?;
    }
    Ok(())
}

fn label(s: &Schedule, txn: usize, pos: usize) -> String {
    s.transactions[txn]
        .labels
        .get(pos)
        .cloned()
        .unwrap_or_else(|| format!("#{pos}"))
}

/// A key-based statement or insert: its tuple holds the values it pins
/// (an insert: its inserted values), and no other live tuple of the
/// relation holds them all.
fn key(
    r: &Replay,
    step: &Step,
    pins: &[(usize, u16)],
    view: Option<&[bool]>,
) -> Result<(), String> {
    let s = r.s;
    for t in tuples_of(step, &[OpKind::Read, OpKind::Write, OpKind::Delete]) {
        if r.f.absent.get(t).copied().unwrap_or(false) {
            // No row has a NULL key: the statement finds nothing.
            continue;
        }
        let (_, vals) = r.version(step.txn, t, view);
        if !r.holds(t, pins, &vals) {
            return Err(format!(
                "{} does not hold the values the statement pins",
                s.tuples[t].name
            ));
        }
        for u in (0..s.tuples.len()).filter(|&u| u != t && s.tuples[u].rel == s.tuples[t].rel) {
            let (alive, vals) = r.version(step.txn, u, view);
            if alive && !pins.is_empty() && r.holds(u, pins, &vals) {
                return Err(format!(
                    "{} also holds the values the statement pins: it would touch both rows",
                    s.tuples[u].name
                ));
            }
        }
    }
    for t in tuples_of(step, &[OpKind::Insert]) {
        if !r.holds(t, pins, &r.f.init[t]) {
            return Err(format!(
                "{} is inserted with other values than the statement's",
                s.tuples[t].name
            ));
        }
    }
    Ok(())
}

/// A keyed UPDATE/DELETE with extra conjuncts (`ValueFacts::conds`):
/// the write's extra pins hold on its row's snapshot version and on the
/// latest one it acts on; the no-match branch's fail on the snapshot's.
fn condition(r: &Replay, step: &Step, pos: usize, view: Option<&[bool]>) -> Result<(), String> {
    let Some((_, _, miss, pins)) =
        (r.f.conds.iter()).find(|(a, p, _, _)| *a == step.txn && *p == pos)
    else {
        return Ok(());
    };
    let kinds = [
        OpKind::Read,
        OpKind::Write,
        OpKind::Delete,
        OpKind::PredRead,
    ];
    for t in tuples_of(step, &kinds) {
        let holds = |v: Option<&[bool]>| {
            let (alive, vals) = r.version(step.txn, t, v);
            alive && r.holds(t, pins, &vals)
        };
        let ok = match miss {
            true => !holds(view),
            false => holds(view) && holds(None),
        };
        if !ok {
            return Err(format!(
                "{} {} the statement's extra conditions on its snapshot",
                r.s.tuples[t].name,
                if *miss { "meets" } else { "does not meet" }
            ));
        }
    }
    Ok(())
}

/// A predicate statement on its snapshot: the tuples it reads (a
/// selection), or writes and waits for (an UPDATE/DELETE), are exactly
/// those whose version it sees matches.
fn predicate(
    r: &Replay,
    step: &Step,
    kind: StmtKind,
    pins: &[(usize, u16)],
    view: Option<&[bool]>,
) -> Result<(), String> {
    let s = r.s;
    let Some(pr) = step
        .ops
        .iter()
        .find(|o| o.kind == OpKind::PredRead && o.tuple.is_none())
    else {
        return Err("a predicate statement without its predicate read".into());
    };
    let matched: Vec<usize> = (0..s.tuples.len())
        .filter(|&t| s.tuples[t].rel == pr.rel)
        .filter(|&t| {
            let (alive, vals) = r.version(step.txn, t, view);
            alive && r.holds(t, pins, &vals)
        })
        .collect();
    let mut touched = match kind {
        StmtKind::PredSel => tuples_of(step, &[OpKind::Read]),
        _ => {
            let written = tuples_of(step, &[OpKind::Write, OpKind::Delete]);
            if let Some(t) = written.iter().find(|t| pr.deferred.contains(t)) {
                return Err(format!(
                    "{} is both written and waited for",
                    s.tuples[*t].name
                ));
            }
            written
                .into_iter()
                .chain(pr.deferred.iter().copied())
                .collect()
        }
    };
    touched.sort_unstable();
    if touched != matched {
        let names = |v: &[usize]| {
            v.iter()
                .map(|&t| s.tuples[t].name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Err(format!(
            "its predicate matches [{}] but it {} [{}]",
            names(&matched),
            if kind == StmtKind::PredSel {
                "reads"
            } else {
                "writes or waits for"
            },
            names(&touched)
        ));
    }
    only_rows(r, step, &matched)
}

/// A statement whose row gives the program a value matches exactly that
/// row (`NO_ROW`: none); a limited read may also match the rows its
/// order puts after it (`ValueFacts::after`).
fn only_rows(r: &Replay, step: &Step, matched: &[usize]) -> Result<(), String> {
    let here = |a: usize, p: usize| a == step.txn && Some(p) == step.pos;
    let only: Vec<usize> =
        r.f.only
            .iter()
            .filter(|&&(a, p, _)| here(a, p))
            .map(|&(_, _, t)| t)
            .collect();
    if only.is_empty() {
        return Ok(());
    }
    let wrong =
        || Err("a value the program takes from the row it reads comes from another row".into());
    if only.contains(&super::valuation::NO_ROW) {
        return if matched.is_empty() { Ok(()) } else { wrong() };
    }
    let after: &[usize] =
        r.f.after
            .iter()
            .find(|(a, p, _)| here(*a, *p))
            .map_or(&[], |(_, _, v)| v.as_slice());
    let ok = only.iter().all(|t| matched.contains(t))
        && matched
            .iter()
            .all(|t| only.contains(t) || after.contains(t));
    if ok {
        Ok(())
    } else {
        wrong()
    }
}

/// The rest of a predicate UPDATE/DELETE after a lock wait: each tuple it
/// re-checks is written exactly when its latest version matches.
fn recheck(r: &Replay, step: &Step, pins: &[(usize, u16)]) -> Result<(), String> {
    let written = tuples_of(step, &[OpKind::Write, OpKind::Delete]);
    for t in tuples_of(step, &[OpKind::PredRead]) {
        let (alive, vals) = r.version(step.txn, t, None);
        let m = alive && r.holds(t, pins, &vals);
        if m != written.contains(&t) {
            return Err(format!(
                "the re-check of {} {} but the statement {} it",
                r.s.tuples[t].name,
                if m { "matches" } else { "does not match" },
                if m { "skips" } else { "writes" }
            ));
        }
    }
    if let Some(t) = written.iter().find(|t| {
        !step
            .ops
            .iter()
            .any(|o| o.kind == OpKind::PredRead && o.tuple == Some(**t))
    }) {
        return Err(format!(
            "writes {} it did not wait for",
            r.s.tuples[*t].name
        ));
    }
    Ok(())
}

/// The step's writes as new versions; an untracked expression never
/// writes a value the row had before.
fn apply(r: &mut Replay, step: &Step, pos: usize) -> Result<(), String> {
    for op in &step.ops {
        let Some(t) = op.tuple else { continue };
        let (alive, vals) = match op.kind {
            OpKind::Insert => (true, r.f.init[t].clone()),
            OpKind::Delete => (false, r.version(step.txn, t, None).1),
            OpKind::Write => {
                let mut vals = r.version(step.txn, t, None).1;
                let given =
                    r.f.writes
                        .iter()
                        .find(|(site, _)| *site == (step.txn, pos, t));
                for (slot, v) in given
                    .map_or(&[][..], |(_, v)| v.as_slice())
                    .iter()
                    .enumerate()
                {
                    let Some(v) = *v else { continue };
                    let before = std::iter::once(&r.f.init[t])
                        .chain(r.versions[t].iter().map(|x| &x.2))
                        .any(|old| old.get(slot) == Some(&v));
                    if v != FRESH_VALUE && before {
                        return Err(format!(
                            "writes {} a value the row had before",
                            r.s.tuples[t].name
                        ));
                    }
                    if let Some(x) = vals.get_mut(slot) {
                        *x = v;
                    }
                }
                (true, vals)
            }
            _ => continue,
        };
        r.versions[t].push((step.txn, alive, vals));
    }
    Ok(())
}
