//! Constraint inference (FK `q_j = f(q_i)` and same-tuple `q_k = id(q_i)`)
//! and the missing-row rule that turns key-based statements into
//! predicate-based ones.

use super::vocab::Term;
use super::Lowerer;
use crate::model::btp::{Constraint, ConstraintKind, Held, StmtType};
use crate::model::schema::AttrSet;
use std::collections::BTreeSet;

impl Lowerer<'_> {
    /// Key-based statements whose row may be missing while the program
    /// goes on become predicate-based over their WHERE columns and key
    /// (Section 5.4: the paper's model assumes a key-based statement finds
    /// its row or the transaction aborts). Such evidence: a later insert of
    /// the same key into the same relation (it would fail if the row were
    /// there), plus what `statement`, `select` and `table_reads` marked.
    /// Then a key sel that returns no column still reads its tuple's
    /// existence: its ReadSet gets the key (a delete conflicts with it).
    pub(super) fn apply_may_miss(&mut self) {
        let n = self.out.statements.len();
        for q in 0..n {
            let Some(kq) = self.out.facts[q].key.clone() else {
                continue;
            };
            // After a DELETE of the key the insert succeeds either way.
            if !matches!(
                self.out.statements[q].ty,
                StmtType::KeySel | StmtType::KeyUpd
            ) {
                continue;
            }
            let rel = self.out.statements[q].rel;
            for i in q + 1..n {
                if matches!(
                    self.out.statements[i].ty,
                    StmtType::KeyDel | StmtType::PredDel
                ) && self.out.statements[i].rel == rel
                {
                    break;
                }
                if self.out.statements[i].ty != StmtType::Ins
                    || self.out.statements[i].rel != self.out.statements[q].rel
                    || self.out.facts[i].key.as_ref() != Some(&kq)
                {
                    continue;
                }
                let Some(path) = self.joint_path(q, i) else {
                    continue;
                };
                if kq
                    .iter()
                    .all(|c| self.same_value(Term::Col(q, *c), Term::Col(i, *c), &path))
                {
                    self.out.facts[q].may_miss = true;
                }
            }
        }
        for q in 0..n {
            let ty = self.out.statements[q].ty;
            if !(self.out.facts[q].may_miss && ty.is_key_based()) {
                continue;
            }
            // A locked re-read whose snapshot scan reads the key's
            // existence (`locked_after_snapshot`): the scan becomes the
            // predicate read over the key; the re-read reads the row under
            // its lock when there is one (docs/rules.md, "Locking reads in
            // a WITH").
            if ty == StmtType::KeySel && self.out.statements[q].locking && self.out.facts[q].scanned
            {
                continue;
            }
            let rel = self.out.statements[q].rel;
            let mut pred = self.out.facts[q].pred.clone();
            pred.extend(self.out.facts[q].key.take().unwrap_or_default());
            pred.extend(self.out.facts[q].bound.keys().copied());
            let st = &mut self.out.statements[q];
            st.ty = match ty {
                StmtType::KeySel => StmtType::PredSel,
                StmtType::KeyUpd => StmtType::PredUpd,
                _ => StmtType::PredDel,
            };
            st.locking = false;
            // A missed row takes no lock (a FK check that misses aborts,
            // but the rules need not know); own inserts stay own.
            if st.held != Some(Held::OwnInserts) {
                st.held = None;
            }
            st.pread = Some(AttrSet::from_indices(
                self.cat.schema.rel(rel).arity(),
                pred,
            ));
        }
        for q in 0..n {
            let st = &self.out.statements[q];
            if st.ty == StmtType::KeySel && st.read.as_ref().is_some_and(|r| r.is_empty()) {
                let key = self.out.facts[q]
                    .key
                    .clone()
                    .unwrap_or_else(|| self.cat.schema.rel(st.rel).primary_key.clone());
                let arity = self.cat.schema.rel(st.rel).arity();
                self.out.statements[q].read = Some(AttrSet::from_indices(arity, key));
            }
        }
    }

    /// FK constraints q_j = f(q_i) and same-tuple constraints q_k = id(q_i)
    /// that the union-find proves (see the module comment).
    pub(super) fn infer_constraints(&mut self) -> Vec<Constraint> {
        let mut out = vec![];
        let n = self.out.statements.len();
        for i in 0..n {
            for j in 0..n {
                if i == j || self.out.facts[i].rolled_back || self.out.facts[j].rolled_back {
                    continue;
                }
                let Some(path) = self.joint_path(i, j) else {
                    continue;
                };
                let (qi, qj) = (&self.out.statements[i], &self.out.statements[j]);
                let (ri, rj, ti, tj) = (qi.rel, qj.rel, qi.ty, qj.ty);
                // q_j must pin down one tuple of range(f).
                let j_one_tuple =
                    (tj.is_key_based() && self.out.facts[j].key.is_some()) || tj == StmtType::Ins;
                for (fi, fk) in self.cat.schema.foreign_keys.iter().enumerate() {
                    if !j_one_tuple || fk.domain != ri || fk.range != rj || fk.columns.is_empty() {
                        continue;
                    }
                    // A statement that changes its FK columns (or the
                    // parent's key) moves the reference: no constraint.
                    if fk
                        .columns
                        .iter()
                        .any(|(d, _)| self.out.facts[i].assigns.contains(d))
                        || fk
                            .columns
                            .iter()
                            .any(|(_, r)| self.out.facts[j].assigns.contains(r))
                    {
                        continue;
                    }
                    // Predicate-based q_i: only columns its WHERE pins hold
                    // for every tuple it touches.
                    if !ti.is_key_based()
                        && ti != StmtType::Ins
                        && !fk
                            .columns
                            .iter()
                            .all(|(d, _)| self.out.facts[i].bound.contains_key(d))
                    {
                        continue;
                    }
                    if fk
                        .columns
                        .iter()
                        .all(|(d, r)| self.same_value(Term::Col(i, *d), Term::Col(j, *r), &path))
                    {
                        out.push(Constraint {
                            kind: ConstraintKind::ForeignKey(fi),
                            child: i,
                            parent: j,
                        });
                    }
                }
                // Same tuple: q_j (earlier key-based write) and key-based q_i.
                if ri == rj && j < i && tj.is_key_write() && ti.is_key_based() {
                    if let (Some(kj), Some(ki)) = (&self.out.facts[j].key, &self.out.facts[i].key) {
                        let key_assigned = kj.iter().any(|c| self.out.facts[j].assigns.contains(c));
                        if kj == ki
                            && !key_assigned
                            && kj
                                .iter()
                                .all(|c| self.same_value(Term::Col(i, *c), Term::Col(j, *c), &path))
                        {
                            out.push(Constraint {
                                kind: ConstraintKind::SameTuple,
                                child: i,
                                parent: j,
                            });
                        }
                    }
                }
                // Same tuple, written later: a key sel q_i whose tuple the
                // later key upd/key del q_j writes. The link points forward
                // (parent after child); CDEPCONDS ignores it, the snapshot
                // levels use it (rules/si.rs::fuw_blocked). Only a q_j that
                // runs whenever its path runs and pins nothing but the key:
                // an UPDATE with another conjunct may match no row of the
                // snapshot and then writes nothing.
                if ri == rj
                    && i < j
                    && ti == StmtType::KeySel
                    && matches!(tj, StmtType::KeyUpd | StmtType::KeyDel)
                    && self.out.facts[j].certain
                    && !self.out.facts[j].may_miss
                    && !self.out.facts[i].may_miss
                {
                    if let (Some(kj), Some(ki)) = (&self.out.facts[j].key, &self.out.facts[i].key) {
                        let only_key = self.out.facts[j].pred.iter().all(|c| kj.contains(c));
                        if kj == ki
                            && only_key
                            && kj
                                .iter()
                                .all(|c| self.same_value(Term::Col(i, *c), Term::Col(j, *c), &path))
                        {
                            out.push(Constraint {
                                kind: ConstraintKind::SameTuple,
                                child: i,
                                parent: j,
                            });
                        }
                    }
                }
            }
        }
        out.sort();
        out.dedup();
        out
    }

    /// A statement of the rolled-back prefix of an EXCEPTION block
    /// becomes what stays of it once the block failed: its reads. Its
    /// writes were rolled back and their row locks released, so keeping
    /// them would wrongly block other writers (no ww-free split schedule,
    /// Section 4) and protect later reads. What the failed (or rolled
    /// back) statement read stays, as a predicate read: an UPDATE stopped
    /// by a CHECK read the whole row (any column may be in the check); a
    /// DELETE read the row; an INSERT stopped by a unique violation
    /// observed that some row holds its key (every UNIQUE column set); a
    /// `SELECT … INTO STRICT` stopped by NO_DATA_FOUND observed a missing
    /// row — a read of "absent", so predicate-based over its key and WHERE
    /// columns (a predicate read conflicts with at least what the key read
    /// did). Locking reads lose their lock.
    pub(super) fn rolled_back_shadow(&mut self, q: usize) {
        let rel = self.out.statements[q].rel;
        let r = self.cat.schema.rel(rel);
        let arity = r.arity();
        let ty = self.out.statements[q].ty;
        let mut pred: BTreeSet<usize> = self.out.facts[q].pred.clone();
        pred.extend(self.out.facts[q].key.take().unwrap_or_default());
        if ty != StmtType::Ins {
            // An INSERT's VALUES pin its columns; it reads none of them.
            pred.extend(self.out.facts[q].bound.keys().copied());
        }
        if let Some(p) = &self.out.statements[q].pread {
            pred.extend(p.iter());
        }
        let read = match ty {
            StmtType::KeySel | StmtType::PredSel => self.out.statements[q].read.clone(),
            StmtType::Ins => {
                let unique: BTreeSet<usize> = r
                    .primary_key
                    .iter()
                    .chain(r.unique_keys.iter().flatten())
                    .copied()
                    .collect();
                pred.extend(unique.iter().copied());
                Some(AttrSet::from_indices(arity, unique))
            }
            _ => Some(AttrSet::full(arity)),
        };
        if pred.is_empty() {
            pred.extend(0..arity);
        }
        let st = &mut self.out.statements[q];
        st.ty = StmtType::PredSel;
        st.pread = Some(AttrSet::from_indices(arity, pred));
        st.read = read.or_else(|| Some(AttrSet::empty(arity)));
        st.write = None;
        st.locking = false;
        // Its reads stay, and so do the keys they are pinned to.
        if st.held != Some(Held::OwnInserts) {
            st.held = None;
        }
        self.out.facts[q].may_miss = false;
        self.out.facts[q].assigns.clear();
    }
}
