//! An independent check of a schedule the search returns, straight from
//! the paper's definitions rather than the search's incremental state:
//! replay the operations, check read-last-committed and no dirty writes
//! (Definition 3.3; for REPEATABLE READ: reads from the snapshot of the
//! first statement, and no write of a tuple written by a transaction that
//! committed after that snapshot) and that every read saw the version it
//! reports, then
//! build SeG(s) from all pairs of operations (Section 3.4) and check that
//! the reported cycle is in it (Theorem 3.2: not conflict serializable).
//! The tests and the soundness harness run it on every schedule found.
//! A schedule found with values is then evaluated on them
//! (`verify_values`, issue 23 item 2).

use std::collections::HashMap;

use super::instance::TupleKind;
use super::schedule::{Op, OpKind, Schedule, Seen};
use crate::model::isolation::Level;

/// A version of a tuple: index in its write order; `None` = initial.
type Version = Option<usize>;

/// One replayed operation with the versions it created or saw.
struct Done {
    txn: usize,
    kind: OpKind,
    tuple: Option<usize>,
    attrs: Vec<usize>,
    /// For a write: the version created. For a read: the version seen.
    version: Version,
    /// For a predicate read: the version seen of every tuple of the relation.
    vset: HashMap<usize, Version>,
}

struct Replay<'s> {
    s: &'s Schedule,
    /// Per tuple: writers (txn, kind) in write order.
    versions: Vec<Vec<(usize, OpKind)>>,
    committed: Vec<bool>,
    /// REPEATABLE READ: the transactions committed at T_i's first statement.
    snapshot: Vec<Option<Vec<bool>>>,
    /// READ COMMITTED: the transactions committed when T_i's current SQL
    /// statement started (its first part; issue 23, item 2).
    statement: Vec<Option<Vec<bool>>>,
    /// The current step's reads: the statement snapshot they see (`None`:
    /// the latest committed), and the tuples the step writes, whose reads
    /// see the latest committed version (a write follows the update chain).
    reads_at: Option<Vec<bool>>,
    written: Vec<usize>,
    done: Vec<Done>,
}

impl Replay<'_> {
    /// Are T_w's writes visible to T_txn's statements: committed (READ
    /// COMMITTED), or committed before its snapshot (REPEATABLE READ)?
    fn sees(&self, txn: usize, w: usize) -> bool {
        match &self.snapshot[txn] {
            Some(snap) => snap[w],
            None => self.committed[w],
        }
    }

    /// The version transaction `txn` sees of `t`: its own last write, else
    /// the last version whose writer it sees.
    fn visible_version(&self, txn: usize, t: usize) -> Version {
        let vs = &self.versions[t];
        if let Some(i) = vs.iter().rposition(|&(w, _)| w == txn) {
            return Some(i);
        }
        vs.iter().rposition(|&(w, _)| self.sees(txn, w))
    }

    /// The version a plain read or snapshot predicate read of `t` by
    /// `txn` sees: of the SQL statement's snapshot in a later part of one.
    fn read_version(&self, txn: usize, t: usize) -> Version {
        let vs = &self.versions[t];
        match &self.reads_at {
            Some(snap) if !self.written.contains(&t) => vs
                .iter()
                .rposition(|&(w, _)| w == txn)
                .or_else(|| vs.iter().rposition(|&(w, _)| snap[w])),
            _ => self.visible_version(txn, t),
        }
    }

    /// How a read by `txn` of version `v` of `t` is reported.
    fn seen_as(&self, txn: usize, t: usize, v: Version) -> Seen {
        match v {
            None => Seen::Initial,
            Some(i) if self.versions[t][i].0 == txn => Seen::Own,
            Some(i) => Seen::Txn(self.versions[t][i].0),
        }
    }

    /// Is that version a live tuple (not unborn, not dead)?
    fn alive(&self, t: usize, v: Version) -> bool {
        match v {
            None => !matches!(self.s.tuples[t].kind, TupleKind::Inserted(_)),
            Some(i) => self.versions[t][i].1 != OpKind::Delete,
        }
    }

    fn op(&mut self, txn: usize, op: &Op) -> Result<(), String> {
        let mut d = Done {
            txn,
            kind: op.kind,
            tuple: op.tuple,
            attrs: op.attrs.clone(),
            version: None,
            vset: HashMap::new(),
        };
        match (op.kind, op.tuple) {
            (OpKind::PredRead, Some(t)) => {
                // The re-check after a lock wait (EvalPlanQual): the
                // predicate on the latest committed version, which no
                // other transaction is writing any more.
                if let Some(&(w, _)) = self.versions[t]
                    .iter()
                    .find(|&&(w, _)| w != txn && !self.committed[w])
                {
                    return Err(format!(
                        "T{} re-checks a tuple T{} still holds",
                        txn + 1,
                        w + 1
                    ));
                }
                let v = self.visible_version(txn, t);
                if op.seen != Some(self.seen_as(txn, t, v)) {
                    return Err(format!("T{} re-check reports {:?}", txn + 1, op.seen));
                }
                d.vset.insert(t, v);
            }
            (OpKind::PredRead, None) => {
                for t in (0..self.s.tuples.len())
                    .filter(|&t| self.s.tuples[t].rel == op.rel && !op.deferred.contains(&t))
                {
                    d.vset.insert(t, self.read_version(txn, t));
                }
            }
            (OpKind::Read, Some(t)) => {
                let v = self.read_version(txn, t);
                if !self.alive(t, v) {
                    return Err(format!("T{} reads a tuple that is not visible", txn + 1));
                }
                let expect = self.seen_as(txn, t, v);
                if op.seen != Some(expect) {
                    return Err(format!(
                        "T{} reports {:?}, last committed is {expect:?}",
                        txn + 1,
                        op.seen
                    ));
                }
                d.version = v;
            }
            (kind, Some(t)) => {
                let vs = &self.versions[t];
                if let Some(&(w, _)) = vs.iter().find(|&&(w, _)| w != txn && !self.committed[w]) {
                    return Err(format!(
                        "dirty write: T{} writes a tuple T{} wrote and has not committed",
                        txn + 1,
                        w + 1
                    ));
                }
                if let Some(&(w, _)) = vs.iter().find(|&&(w, _)| w != txn && !self.sees(txn, w)) {
                    return Err(format!(
                        "lost update: T{} writes a tuple T{} wrote after its snapshot",
                        txn + 1,
                        w + 1
                    ));
                }
                let latest = vs.len().checked_sub(1);
                // Section 3.3: only an insert creates the first visible
                // version; nothing is written after the dead version.
                let ok = if kind == OpKind::Insert {
                    latest.is_none() && !self.alive(t, None)
                } else {
                    self.alive(t, latest)
                };
                if !ok {
                    return Err(format!(
                        "T{}: {kind:?} on a tuple in the wrong state",
                        txn + 1
                    ));
                }
                self.versions[t].push((txn, kind));
                d.version = Some(self.versions[t].len() - 1);
            }
            _ => return Err("an operation without a tuple".into()),
        }
        self.done.push(d);
        Ok(())
    }
}

fn meets(a: &[usize], b: &[usize]) -> bool {
    a.iter().any(|x| b.contains(x))
}

fn is_write(k: OpKind) -> bool {
    matches!(k, OpKind::Write | OpKind::Insert | OpKind::Delete)
}

/// Does `a` depend on `b` (b →_s a, Section 3.4)?
fn depends(b: &Done, a: &Done) -> bool {
    let older = |x: Version, y: Version| match (x, y) {
        (None, Some(_)) => true,
        (Some(x), Some(y)) => x < y,
        _ => false,
    };
    let insdel = |d: &Done| matches!(d.kind, OpKind::Insert | OpKind::Delete);
    match (b.kind, a.kind) {
        (OpKind::PredRead, k) if is_write(k) => {
            a.tuple
                .is_some_and(|t| b.vset.get(&t).is_some_and(|&v| older(v, a.version)))
                && (insdel(a) || meets(&b.attrs, &a.attrs))
        }
        (k, OpKind::PredRead) if is_write(k) => {
            b.tuple
                .is_some_and(|t| a.vset.get(&t).is_some_and(|&v| !older(v, b.version)))
                && (insdel(b) || meets(&b.attrs, &a.attrs))
        }
        (OpKind::PredRead, _) | (_, OpKind::PredRead) => false,
        (kb, ka) => {
            if b.tuple != a.tuple || !meets(&b.attrs, &a.attrs) {
                return false;
            }
            match (is_write(kb), is_write(ka)) {
                (true, true) | (false, true) => older(b.version, a.version),
                (true, false) => !older(a.version, b.version),
                (false, false) => false,
            }
        }
    }
}

/// A statement that deferred tuples (waits for their row locks) goes on
/// only in the next step of its transaction, marked resumed, which
/// re-checks exactly those tuples; nothing else is resumed.
fn check_wait(
    step: &super::schedule::Step,
    open: &mut Option<(usize, Vec<usize>)>,
) -> Result<(), String> {
    let who = step.txn + 1;
    let rechecked: Vec<usize> = step
        .ops
        .iter()
        .filter(|o| o.kind == OpKind::PredRead)
        .filter_map(|o| o.tuple)
        .collect();
    match open.take() {
        Some((pos, mut deferred)) => {
            let mut got = rechecked;
            deferred.sort_unstable();
            got.sort_unstable();
            if !step.resumed || step.pos != Some(pos) || got != deferred {
                return Err(format!("T{who} does not resume its waiting statement"));
            }
        }
        None if step.resumed || !rechecked.is_empty() => {
            return Err(format!("T{who} resumes a statement that did not wait"));
        }
        None => {}
    }
    let deferred: Vec<usize> = step
        .ops
        .iter()
        .flat_map(|o| o.deferred.iter().copied())
        .collect();
    if let (false, Some(pos)) = (deferred.is_empty(), step.pos) {
        *open = Some((pos, deferred));
    }
    Ok(())
}

/// Sets the reads of `step` (at position `pos`) up: a READ COMMITTED
/// statement's first part takes the statement snapshot, a later part
/// (`Transaction::continues`) reads it; a resumed step re-checks on the
/// latest versions.
fn statement_view(r: &mut Replay<'_>, step: &super::schedule::Step, pos: usize) {
    let t = &r.s.transactions[step.txn];
    r.reads_at = None;
    r.written = step
        .ops
        .iter()
        .filter(|o| is_write(o.kind))
        .filter_map(|o| o.tuple)
        .collect();
    if t.level != Level::ReadCommitted || step.resumed {
        return;
    }
    let later = t.continues.get(pos).copied().unwrap_or(false);
    if !later || r.statement[step.txn].is_none() {
        r.statement[step.txn] = Some(r.committed.clone());
    }
    r.reads_at = r.statement[step.txn].clone();
}

/// Checks `s` against Definition 3.3 and Section 3.4; `Ok` means it is an
/// MVRC schedule whose serialization graph contains the reported cycle.
pub fn verify(s: &Schedule) -> Result<(), String> {
    let k = s.transactions.len();
    let mut r = Replay {
        s,
        versions: vec![vec![]; s.tuples.len()],
        committed: vec![false; k],
        snapshot: vec![None; k],
        statement: vec![None; k],
        reads_at: None,
        written: vec![],
        done: vec![],
    };
    // Per transaction, the statement waiting for row locks: its position
    // and the tuples it deferred.
    let mut waiting: Vec<Option<(usize, Vec<usize>)>> = vec![None; k];
    for step in &s.steps {
        if r.committed[step.txn] {
            return Err(format!("T{} acts after its commit", step.txn + 1));
        }
        check_wait(step, &mut waiting[step.txn])?;
        match step.pos {
            None => r.committed[step.txn] = true,
            Some(pos) => {
                let level = s.transactions[step.txn].level;
                if level != Level::ReadCommitted && r.snapshot[step.txn].is_none() {
                    r.snapshot[step.txn] = Some(r.committed.clone());
                }
                statement_view(&mut r, step, pos);
                for op in &step.ops {
                    r.op(step.txn, op)?;
                }
            }
        }
    }
    if waiting.iter().any(Option::is_some) || r.committed.iter().any(|c| !c) {
        return Err("a transaction does not commit".into());
    }
    let mut edges = vec![vec![false; k]; k];
    for b in &r.done {
        for a in r.done.iter().filter(|a| a.txn != b.txn) {
            if depends(b, a) {
                edges[b.txn][a.txn] = true;
            }
        }
    }
    let n = s.cycle.len();
    if n < 2 {
        return Err("no cycle reported".into());
    }
    for i in 0..n {
        let (x, y) = (s.cycle[i], s.cycle[(i + 1) % n]);
        if !edges[x][y] {
            return Err(format!("SeG(s) has no edge T{} → T{}", x + 1, y + 1));
        }
    }
    // A schedule found with values: its statements evaluated on them.
    super::verify_values::verify_values(s)
}
