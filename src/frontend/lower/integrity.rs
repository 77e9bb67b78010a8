//! Referential-integrity checks. PostgreSQL enforces a foreign key with
//! triggers: inserting a row whose foreign-key columns are not NULL runs
//! `SELECT 1 FROM parent WHERE key = … FOR KEY SHARE`, a read of the
//! parent row's existence at the time of the insert. That read sees
//! other transactions' committed inserts, so it can close a cycle the
//! paper's model (which has no such reads) does not see: T2 reads x, T1
//! updates x, inserts parent p and commits, T2 inserts a child of p and
//! commits — T2 read x before T1 and saw p after it (confirmed on
//! PostgreSQL 15, tests/soundness.rs). So the insert becomes a key sel of
//! the parent's key (an existence read, not locking: FOR KEY SHARE does
//! not block ordinary updates) before the insert.
//!
//! The read adds nothing when this transaction wrote that very parent row
//! earlier on every path to the insert (it holds the row lock until
//! commit, so the row cannot change or vanish): then it is left out, which
//! keeps the paper's BTPs for its benchmarks (the FK constraints
//! `q_j = f(q_i)` of Section 5.1 are exactly this situation).

use super::vocab::Term;
use super::Lowerer;
use crate::frontend::sql::Snippet;
use crate::model::btp::{Body, StmtType};
use crate::model::schema::RelId;
use std::collections::BTreeSet;

use super::hooks::{CheckTime, FkCheck};
use crate::model::btp::Held;
use crate::model::schema::ForeignKey;

impl Lowerer<'_> {
    /// Existence reads of the parents an INSERT into `rel` references.
    /// `eq`: the inserted columns pinned to values (one VALUES row);
    /// `known`: whether `eq` describes the inserted row (else several or
    /// unknown rows: the reads are predicate-based); `nulls`: columns
    /// inserted as literal NULL (no check).
    pub(super) fn integrity_reads(
        &mut self,
        rel: RelId,
        eq: &[(usize, Term)],
        known: bool,
        nulls: &[usize],
        snip: &Snippet,
        pre: &mut Vec<Body>,
    ) {
        let fks = self.checked_fks(rel, |_| true);
        for (fi, fk) in fks {
            if fk.columns.iter().any(|(d, _)| nulls.contains(d)) {
                continue;
            }
            let values: Option<Vec<(usize, Term)>> = fk
                .columns
                .iter()
                .map(|(d, r)| {
                    let t = eq.iter().find(|(c, _)| c == d).map(|(_, t)| t.clone());
                    t.filter(|_| known).map(|t| (*r, t))
                })
                .collect();
            let parent_key: BTreeSet<usize> = fk.columns.iter().map(|(_, r)| *r).collect();
            let when = self.when(fi, FkCheck::Parent);
            let wrote = values
                .as_ref()
                .is_some_and(|v| self.wrote_parent_row(fk.range, v));
            if wrote {
                continue;
            }
            if when != CheckTime::Commit {
                match values {
                    Some(vals) => {
                        let q = self.new_statement(StmtType::KeySel, fk.range, snip);
                        self.out.statements[q].read = self.attrs(fk.range, &parent_key);
                        self.bind(q, &vals);
                        self.out.facts[q].key = Some(parent_key.into_iter().collect());
                        self.out.facts[q].key_share = true;
                        self.out.statements[q].held = Some(Held::KeyShare);
                        self.label_check(q, &fk.name);
                        pre.push(Body::Stmt(q));
                    }
                    None => pre.push(Body::Stmt(self.parent_check(&fk, snip))),
                }
            }
            if when != CheckTime::Now {
                // A deferred check reads at COMMIT, whatever happened
                // since: predicate-based over the parent key.
                let q = self.parent_check(&fk, snip);
                self.defer(q);
            }
        }
    }

    fn parent_check(&mut self, fk: &ForeignKey, snip: &Snippet) -> usize {
        let parent_key: BTreeSet<usize> = fk.columns.iter().map(|(_, r)| *r).collect();
        let q = self.new_statement(StmtType::PredSel, fk.range, snip);
        self.out.statements[q].pread = self.attrs(fk.range, &parent_key);
        self.out.statements[q].read = self.attrs(fk.range, &parent_key);
        self.label_check(q, &fk.name);
        q
    }

    /// An earlier key-based write of the row of `rel` whose columns equal
    /// `vals`, certain to have run whenever this point is reached: on the
    /// current IF path, before the loops around this point or earlier in
    /// their iteration, not one alternative
    /// of a branch, not rolled back.
    fn wrote_parent_row(&self, rel: RelId, vals: &[(usize, Term)]) -> bool {
        (0..self.out.statements.len()).any(|j| {
            let (s, f) = (&self.out.statements[j], &self.out.facts[j]);
            s.rel == rel
                && matches!(s.ty, StmtType::KeyUpd | StmtType::Ins)
                && f.certain
                && !f.may_miss
                && !f.rolled_back
                && self.pos.loops.starts_with(&f.loops)
                && f.path.iter().all(|p| self.pos.path.contains(p))
                && vals.iter().all(|(c, t)| {
                    f.bound
                        .get(c)
                        .is_some_and(|b| self.same_value(b.clone(), t.clone(), &self.pos.path))
                })
        })
    }

    /// An UPDATE that assigns foreign-key columns is checked like an
    /// insert; the new values are not tracked, so the read of the parent
    /// is predicate-based over its key.
    pub(super) fn update_integrity_reads(
        &mut self,
        rel: RelId,
        writes: &BTreeSet<usize>,
        snip: &Snippet,
        pre: &mut Vec<Body>,
    ) {
        let fks = self.checked_fks(rel, |f| f.columns.iter().any(|(d, _)| writes.contains(d)));
        for (fi, fk) in fks {
            let when = self.when(fi, FkCheck::Parent);
            if when != CheckTime::Commit {
                pre.push(Body::Stmt(self.parent_check(&fk, snip)));
            }
            if when != CheckTime::Now {
                let q = self.parent_check(&fk, snip);
                self.defer(q);
            }
        }
    }

    /// The NO ACTION / RESTRICT check of a deleted (or re-keyed) referenced
    /// row: is any row of `fk`'s referencing table still pointing at it?
    /// PostgreSQL runs it per deleted (re-keyed) row, after the statement
    /// took that row's FOR UPDATE lock, which the transaction holds to
    /// commit: `Held::Children` (docs/rules.md, "Foreign-key checks and
    /// the parent row's lock").
    pub(super) fn child_check(&mut self, fi: usize, fk: &ForeignKey, snip: &Snippet) -> usize {
        let cols: BTreeSet<usize> = fk.columns.iter().map(|(d, _)| *d).collect();
        let q = self.new_statement(StmtType::PredSel, fk.domain, snip);
        self.out.statements[q].pread = self.attrs(fk.domain, &cols);
        self.out.statements[q].read = self.attrs(fk.domain, &cols);
        self.out.statements[q].held = Some(Held::Children(fi));
        self.label_check(q, &fk.name);
        q
    }

    /// The foreign keys out of `rel` (with known columns) that `which`
    /// selects; none when the checks are switched off.
    fn checked_fks(
        &self,
        rel: RelId,
        which: impl Fn(&ForeignKey) -> bool,
    ) -> Vec<(usize, ForeignKey)> {
        if self.cat.skip_referential_checks {
            return vec![];
        }
        self.cat
            .schema
            .foreign_keys
            .iter()
            .enumerate()
            .filter(|(_, f)| f.domain == rel && !f.columns.is_empty() && which(f))
            .map(|(i, f)| (i, f.clone()))
            .collect()
    }

    fn label_check(&mut self, q: usize, fk: &str) {
        self.check_read(q, &format!("foreign-key check `{fk}`"));
    }

    /// Marks `q` as an integrity-check read of the SQL statement it was
    /// made for: the structured field replay reads
    /// (`Provenance::checks`), and `label` before the SQL for display.
    pub(super) fn check_read(&mut self, q: usize, label: &str) {
        let sql = self.out.statements[q].sql.take().unwrap_or_default();
        self.out.statements[q].sql = Some(format!("{label} of: {sql}"));
        // Inside a function body it runs in the caller's statement.
        let inside = &mut self.out.facts[q].inside;
        inside.get_or_insert(sql);
        // But not on its snapshot: PostgreSQL's referential and unique
        // checks see the latest committed rows (as before: their text,
        // unlike the statement's parts', differs, `instance::continues`).
        self.stage.groups += 1;
        if let Some(p) = &mut self.out.facts[q].part {
            p.snap = self.stage.groups;
        }
    }
}
