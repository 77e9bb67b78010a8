//! Statement lowering: SELECT, INSERT (with upserts), UPDATE and DELETE
//! (with UPDATE … FROM / DELETE … USING and referential actions) → BTP
//! statements of the right type and sets; and the audit that every query
//! in a statement was modelled.

use super::clauses::{has_aggregate, item_columns, read_columns, returning_columns, strip_nested};
use super::vocab::{ColumnRole, ColumnUses, Cte, TableRef, Term};
use super::{assignment_columns, find_rel, sequence, Lowerer};
use crate::frontend::sql::ddl::FkAction;
use crate::frontend::sql::procedural::Node;
use crate::frontend::sql::{same_name, Snippet};
use crate::model::btp::{Body, Held, StmtType};
use crate::model::error::{Diag, Result};
use crate::model::provenance::Role;
use crate::model::schema::RelId;
use sqlparser::ast::{
    Expr, FromTable, Ident, Query, SelectItem, SetExpr, Statement as Sql, TableFactor, TableObject,
    Value,
};
use std::collections::{BTreeSet, HashSet};

use crate::frontend::sql::ddl::HookKind;

/// `DEFAULT` as a value (VALUES item, SET c = DEFAULT).
fn is_default(e: &Expr) -> bool {
    matches!(e, Expr::Identifier(i) if i.quote_style.is_none() && i.value.eq_ignore_ascii_case("default"))
}

/// Columns an UPDATE sets to DEFAULT.
fn set_default_columns(
    assignments: &[sqlparser::ast::Assignment],
    col: impl Fn(&Ident) -> Option<usize>,
) -> BTreeSet<usize> {
    assignments
        .iter()
        .filter(|a| is_default(&a.value))
        .flat_map(|a| assignment_columns(&a.target))
        .filter_map(|c| col(&c))
        .collect()
}

/// Columns every row of an INSERT gives a value (not DEFAULT): `cols`
/// (the column list, or all columns) as far as each VALUES row reaches;
/// none for DEFAULT VALUES.
fn given_columns(ins: &sqlparser::ast::Insert, cols: &[usize]) -> BTreeSet<usize> {
    match ins.source.as_deref() {
        None => BTreeSet::new(),
        Some(Query { body, .. }) => match body.as_ref() {
            SetExpr::Values(v) => cols
                .iter()
                .enumerate()
                .filter(|(k, _)| {
                    v.rows
                        .iter()
                        .all(|r| r.get(*k).is_some_and(|e| !is_default(e)))
                })
                .map(|(_, c)| *c)
                .collect(),
            _ => cols.iter().copied().collect(),
        },
    }
}

impl Lowerer<'_> {
    /// Lower one parsed statement, then check that every query and every
    /// call of a user function in it was modelled (fail closed: a
    /// position the lowering does not visit is an error, not a lost read).
    pub(super) fn lower_audited(
        &mut self,
        sql: &Sql,
        into: &[String],
        s: &Snippet,
        next: Option<&Node>,
        weak_lock: bool,
        pg: Option<&crate::frontend::sql::gate::PgRefs>,
    ) -> Result<Body> {
        let (q0, c0) = (self.inl.selects, self.inl.inlined);
        let mut mark = self.audit_mark();
        // Taken here: the statements of inlined SQL bodies are lowered
        // through this function too. The statement's own reads are
        // renumbered before the calls' statements: audit from those on.
        let after = self.stage.after.take();
        if let Some((m, _)) = &after {
            mark.0 = *m;
        }
        let b = if after.is_some() || self.calls_volatile(sql) || self.calls_volatile_in_from(sql) {
            self.lower_volatile(sql, into, s, next, weak_lock, after)?
        } else {
            let saved = self.stage.defer.take();
            let b = self.lower_sql(sql, into, s, next, weak_lock);
            self.stage.defer = saved;
            b?
        };
        let (q, c) = (self.inl.selects - q0, self.inl.inlined - c0);
        self.audit(sql, s, q, c)?;
        if let Some(pg) = pg {
            self.audit_pg(pg, mark, s)?;
        }
        Ok(b)
    }

    pub(super) fn lower_sql(
        &mut self,
        sql: &Sql,
        into: &[String],
        s: &Snippet,
        next: Option<&Node>,
        weak_lock: bool,
    ) -> Result<Body> {
        let into = into.to_vec();
        let snip = s.clone();
        self.sql.weak_lock = weak_lock;
        match sql {
            Sql::Query(q) => self.select(q, &snip, &into),
            Sql::Update(u) => self.update(u, &snip, &into, next),
            Sql::Delete(d) => self.delete(d, &snip, &into, next),
            Sql::Insert(ins) => self.insert(ins, &snip, &into),
            _ => Err(Diag::new("unsupported statement: isolint models SELECT, INSERT, UPDATE and DELETE")
                .help(if is_ddl(sql) {
                    "DDL belongs in the schema file"
                } else {
                    "LOCK, SET, CALL, COPY and other commands cannot be modelled as BTP statements; remove the statement if it touches no table"
                })
                .at(&self.src.file, s.offset + (s.text.len() - s.text.trim_start().len()), 6, "here")),
        }
    }

    /// UPDATE t … [FROM s …]: the rows of s are read (one statement per
    /// table, before the write), t is the target (index 0).
    fn update(
        &mut self,
        u: &sqlparser::ast::Update,
        snip: &Snippet,
        into: &[String],
        next: Option<&Node>,
    ) -> Result<Body> {
        // UPDATE t … FROM s …: the rows of s are read (one statement
        // per table, before the write), t is the target (index 0).
        let split = std::mem::take(&mut self.stage.split);
        let mut tables = vec![self.table_ref(&u.table.relation, snip)?];
        let (mut ons, mut pre, mut hits) = (vec![], vec![], vec![]);
        if !u.table.joins.is_empty() {
            return Err(self.unsupported(
                snip,
                "joins in the UPDATE target",
                "put the other tables in UPDATE … FROM",
            ));
        }
        if let Some(
            sqlparser::ast::UpdateTableFromKind::BeforeSet(f)
            | sqlparser::ast::UpdateTableFromKind::AfterSet(f),
        ) = &u.from
        {
            self.tables_of(f, snip, &mut tables, &mut ons, &mut pre, &mut hits)?;
        }
        let mut uses = vec![ColumnUses::default(); tables.len()];
        correlate(&mut uses, &hits);
        let mut writes = BTreeSet::new();
        let mut sets = vec![];
        let mut not_null = vec![];
        for a in &u.assignments {
            let cols = assignment_columns(&a.target);
            for col in &cols {
                let c = self.column(&tables[..1], None, col, snip)?.1;
                writes.insert(c);
                if cols.len() == 1 {
                    if let Some(t) = self.plain_value(&a.value) {
                        sets.push((c, t));
                    } else if never_null(&a.value) {
                        not_null.push(c);
                    }
                }
            }
            if is_default(&a.value) {
                continue;
            }
            self.collect(
                &tables,
                &a.value,
                snip,
                Some(&mut pre),
                ColumnRole::Read,
                &mut uses,
            )?;
        }
        if let Some(r) = &u.returning {
            for item in r {
                self.collect_item(&tables, item, snip, &mut pre, &mut uses)?;
            }
        }
        // CHECKs of the table, domain CHECKs of the assigned columns and
        // DEFAULTs assigned with `= DEFAULT` call their functions.
        let defaulted = set_default_columns(&u.assignments, |c| {
            self.column(&tables[..1], None, c, snip).ok().map(|x| x.1)
        });
        let rel = tables[0].rel;
        // These and the foreign-key checks run at the write (per row, after
        // any lock wait): in a WITH they stay with it (order.rs).
        let mut checks = vec![];
        let to = if split { &mut checks } else { &mut pre };
        self.hook_reads(
            rel,
            true,
            &|k| match k {
                HookKind::Check => true,
                HookKind::Domain(c) => writes.contains(&c),
                HookKind::Default(c) => defaulted.contains(&c),
            },
            to,
        )?;
        // The CHECKs' functions are called with the row's values of the
        // columns the UPDATE does not assign: reads of the target row.
        uses[0].read.extend(self.check_columns(rel, &writes));
        self.with_generated(rel, &mut writes);
        self.conflict_reads(rel, Some(&writes), snip, to);
        self.update_integrity_reads(tables[0].rel, &writes, snip, to);
        self.conditions(
            &tables,
            &ons,
            u.selection.as_ref(),
            snip,
            &mut pre,
            &mut uses,
        )?;
        let target = Target {
            kind: WriteKind::Update,
            tables: &tables,
            uses: &uses,
            writes,
            returning: &u.returning,
        };
        let mark = self.out.statements.len();
        let b = self.write_after_reads(target, snip, into, next, pre, split.then_some(checks))?;
        self.counter_sources(u, &tables, into, mark);
        for q in mark..self.out.statements.len() {
            let st = &self.out.statements[q];
            if st.rel == rel && matches!(st.ty, StmtType::KeyUpd | StmtType::PredUpd) {
                self.out.facts[q].sets = sets.clone();
                self.out.facts[q].not_null = not_null.clone();
            }
        }
        Ok(b)
    }

    /// The term of a SET value that is a literal, NULL or a parameter (or
    /// a cast `term` takes for one), for the provenance (`Provenance::sets`);
    /// `None` for anything else (no fresh term is made for it).
    fn plain_value(&mut self, e: &Expr) -> Option<Term> {
        let mut inner = super::clauses::strip_nested(e);
        while let Expr::Cast { expr, .. } = inner {
            inner = super::clauses::strip_nested(expr);
        }
        if matches!(inner, Expr::Value(v) if matches!(v.value, sqlparser::ast::Value::Null)) {
            return Some(Term::Lit("NULL".into()));
        }
        let simple = matches!(inner, Expr::Value(v) if matches!(
            v.value,
            sqlparser::ast::Value::Placeholder(_)
                | sqlparser::ast::Value::Number(..)
                | sqlparser::ast::Value::SingleQuotedString(_)
                | sqlparser::ast::Value::EscapedStringLiteral(_)
        ));
        if !simple {
            return None;
        }
        match self.term(e) {
            t @ (Term::Param(_) | Term::Lit(_)) => Some(t),
            _ => None,
        }
    }

    /// Provenance (`Source::Counter`): `UPDATE … SET c = c + n … RETURNING
    /// c ± k INTO v` of one row by key allocates a number: `v`'s fresh
    /// symbol gets the counter as its source.
    fn counter_sources(
        &mut self,
        u: &sqlparser::ast::Update,
        tables: &[TableRef],
        into: &[String],
        mark: usize,
    ) {
        let rel = self.cat.schema.rel(tables[0].rel);
        let Some(q) = (mark..self.out.statements.len()).find(|&q| {
            self.out.statements[q].rel == tables[0].rel
                && self.out.statements[q].ty == StmtType::KeyUpd
        }) else {
            return;
        };
        let bumped: Vec<usize> = u
            .assignments
            .iter()
            .filter_map(|a| counter_bump(a, rel))
            .collect();
        let Some(items) = &u.returning else {
            return;
        };
        for (k, item) in items.iter().enumerate() {
            let (SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. }) = item
            else {
                continue;
            };
            let Some(c) = counter_offset(e, rel) else {
                continue;
            };
            let fresh = into.get(k).and_then(|v| self.vars.env.get(v));
            if let (true, Some(Term::Fresh(n))) = (bumped.contains(&c), fresh) {
                let src = crate::model::provenance::Source::Counter { stmt: q, attr: c };
                self.out.sources.push((*n, src));
            }
        }
    }

    /// DELETE FROM t [USING s …]: s is read, t is the target.
    fn delete(
        &mut self,
        d: &sqlparser::ast::Delete,
        snip: &Snippet,
        into: &[String],
        next: Option<&Node>,
    ) -> Result<Body> {
        let from = match &d.from {
            FromTable::WithFromKeyword(v) | FromTable::WithoutKeyword(v) => v,
        };
        if from.len() != 1 || !from[0].joins.is_empty() || !d.tables.is_empty() {
            return Err(self.unsupported(
                snip,
                "DELETE from several tables",
                "delete from one table per statement; name the others in USING",
            ));
        }
        // DELETE FROM t USING s …: s is read, t is the target.
        let split = std::mem::take(&mut self.stage.split);
        let mut tables = vec![self.table_ref(&from[0].relation, snip)?];
        let (mut ons, mut pre, mut hits) = (vec![], vec![], vec![]);
        if let Some(using) = &d.using {
            self.tables_of(using, snip, &mut tables, &mut ons, &mut pre, &mut hits)?;
        }
        let mut uses = vec![ColumnUses::default(); tables.len()];
        correlate(&mut uses, &hits);
        self.conditions(
            &tables,
            &ons,
            d.selection.as_ref(),
            snip,
            &mut pre,
            &mut uses,
        )?;
        if let Some(r) = &d.returning {
            let mut ret = vec![ColumnUses::default(); tables.len()];
            for item in r {
                self.collect_item(&tables, item, snip, &mut pre, &mut ret)?;
            }
            // Columns of the other tables in RETURNING are reads of them.
            for (t, u) in ret.iter().enumerate().skip(1) {
                uses[t].read.extend(u.read.iter().copied());
                uses[t].all |= u.all;
            }
        }
        let target = Target {
            kind: WriteKind::Delete,
            tables: &tables,
            uses: &uses,
            writes: BTreeSet::new(),
            returning: &d.returning,
        };
        self.write_after_reads(target, snip, into, next, pre, split.then(Vec::new))
    }

    /// ON conditions of the other tables, then WHERE (UPDATE, DELETE).
    fn conditions(
        &mut self,
        tables: &[TableRef],
        ons: &[Expr],
        selection: Option<&Expr>,
        snip: &Snippet,
        pre: &mut Vec<Body>,
        uses: &mut [ColumnUses],
    ) -> Result<()> {
        for on in ons.iter().chain(selection) {
            self.where_clause(tables, on, snip, pre, uses)?;
        }
        Ok(())
    }

    /// The end of an UPDATE or DELETE: the other tables are read (one
    /// statement each), then the target is written. `split` (a part of a
    /// WITH, order.rs): the reads so far, and the target's scan on the
    /// snapshot, go to `split_out`; the foreign-key checks given stay
    /// before the write.
    fn write_after_reads(
        &mut self,
        t: Target,
        snip: &Snippet,
        into: &[String],
        next: Option<&Node>,
        mut pre: Vec<Body>,
        split: Option<Vec<Body>>,
    ) -> Result<Body> {
        self.table_reads(t.tables, t.uses, 1, &[], snip, &mut pre);
        let mut scans = 0..0;
        if let Some(checks) = split {
            // The scan that finds the target's rows reads their WHERE
            // columns on the snapshot; the write re-reads the row it locks.
            scans.start = self.out.statements.len();
            self.snapshot_scan(&t.tables[0], &t.uses[0], snip, &mut pre);
            scans.end = self.out.statements.len();
            for q in scans.clone() {
                self.out.facts[q].scan = true;
                // A keyed scan finds the row by its key, matching or not.
                if let Some(key) = self.out.facts[q].key.clone() {
                    let mut extra = Self::extras(&t.uses[0], &key);
                    extra.extend(t.uses[0].join.iter().copied());
                    if !extra.is_empty() {
                        self.out.facts[q].cond = Some((extra.into_iter().collect(), Role::Scan));
                    }
                }
            }
            self.stage.split_out.append(&mut pre);
            pre = checks;
        }
        let returning_cols = returning_columns(t.returning, &t.tables[..1], self.cat.schema);
        let rel = t.tables[0].rel;
        let body = self.write_stmt(Write {
            kind: t.kind,
            rel,
            uses: &t.uses[0],
            writes: t.writes,
            snip,
            into,
            returning_cols: &returning_cols,
            next,
        })?;
        self.pin_element_scan(scans, &body, &t.uses[0]);
        Ok(sequence(pre, body))
    }

    /// INSERT: VALUES or a SELECT (read first), then the insert; an upsert
    /// is a branch between the insert and the action on the existing row.
    fn insert(
        &mut self,
        ins: &sqlparser::ast::Insert,
        snip: &Snippet,
        into: &[String],
    ) -> Result<Body> {
        let split = std::mem::take(&mut self.stage.split);
        let TableObject::TableName(name) = &ins.table else {
            return Err(self.unsupported(
                snip,
                "INSERT into a table function",
                "insert into a table",
            ));
        };
        let Some(ident) = name.0.last().and_then(|p| p.as_ident()).cloned() else {
            return Err(self.unsupported(snip, "this INSERT target", "insert into a table"));
        };
        let rel = self.rel_by_ident(&ident, snip)?;
        let tables = vec![TableRef {
            rel,
            name: self.cat.schema.rel(rel).name.clone(),
            // `INSERT INTO t AS j`: ON CONFLICT and RETURNING name it j
            // (the alias hides t's name, as in FROM).
            alias: ins.table_alias.as_ref().map(|a| a.alias.value.clone()),
            pseudo: false,
            cte: false,
            virt: None,
        }];
        let mut cols = vec![];
        for c in &ins.columns {
            if let Some(i) = c.0.last().and_then(|p| p.as_ident()) {
                cols.push(self.column(&tables, None, i, snip)?.1);
            }
        }
        if cols.is_empty() {
            cols = (0..self.cat.schema.rel(rel).arity()).collect();
        }
        let mut pre = vec![];
        let mut eq = vec![];
        let mut nulls = vec![];
        let mut known = false;
        match ins.source.as_deref() {
            Some(Query { body, .. }) if matches!(body.as_ref(), SetExpr::Values(_)) => {
                if let SetExpr::Values(v) = body.as_ref() {
                    self.inl.selects += 1; // the VALUES query itself
                    for row in &v.rows {
                        for (c, e) in cols.iter().zip(row.iter()) {
                            if is_default(e) {
                                continue;
                            }
                            // Subqueries and calls inside VALUES become reads.
                            self.collect(&[], e, snip, Some(&mut pre), ColumnRole::Read, &mut [])?;
                            if v.rows.len() == 1 {
                                known = true;
                                if matches!(e, Expr::Value(x) if matches!(x.value, Value::Null)) {
                                    nulls.push(*c);
                                }
                                let t = self.term(e);
                                eq.push((*c, t));
                            }
                        }
                    }
                }
            }
            Some(q) => {
                // INSERT … SELECT: the SELECT is a read before the
                // insert; it may return no row, and the program
                // goes on.
                self.pos.sub_depth += 1;
                let r = self.select(q, snip, &[]);
                self.pos.sub_depth -= 1;
                pre.push(r?);
            }
            None => {}
        }
        let given = given_columns(ins, &cols);
        // One row: a single VALUES row or DEFAULT VALUES.
        let one_row = known || ins.source.is_none();
        // The functions of DEFAULTs and CHECKs, exclusion and partial
        // unique checks and the foreign-key checks run at the insert: in a
        // WITH they stay with it (order.rs).
        let mut checks = vec![];
        let to = if split { &mut checks } else { &mut pre };
        self.hook_reads(
            rel,
            !one_row,
            &|k| match k {
                HookKind::Check | HookKind::Domain(_) => true,
                HookKind::Default(c) => !given.contains(&c),
            },
            to,
        )?;
        self.conflict_reads(rel, None, snip, to);
        self.integrity_reads(rel, &eq, known, &nulls, snip, to);
        let mark = self.out.statements.len();
        let unique = self.unique_checks(rel, snip);
        let q = self.new_statement(StmtType::Ins, rel, snip);
        self.out.statements[q].write = self.all_attrs(rel);
        self.out.facts[q].plain_insert = ins.on.is_none();
        self.bind(q, &eq);
        self.out.facts[q].key = self.key_of(rel, &eq);
        let returning_cols = returning_columns(&ins.returning, &tables, self.cat.schema);
        let inserted = sequence(unique, Body::Stmt(q));
        let b = match &ins.on {
            None => {
                self.assign_into(into, q, true, &returning_cols, &BTreeSet::new());
                inserted
            }
            Some(on) => self.upsert(on, q, inserted, tables, snip, into, &mut pre)?,
        };
        if split {
            self.stage.split_out.append(&mut pre);
            return Ok(sequence(checks, b));
        }
        // An upsert's SET subqueries were lowered after the insert but run
        // before it: keep statement indices in program order.
        Ok(self.renumber(mark, sequence(pre, b)))
    }

    /// An INSERT succeeds only if no row holds its values of a UNIQUE key
    /// (PostgreSQL waits for a concurrent writer of such a row, and raises
    /// a unique violation if the row still holds them): a predicate read
    /// of the key's columns. It matters only when a row can stop holding
    /// them — some program deletes from the table or assigns a column of
    /// the key; otherwise a conflicting insert aborts one of the two
    /// transactions, and no committed schedule has the dependency. The
    /// primary key is the tuple's identity in the BTP model (an insert of
    /// an existing tuple is no schedule): no read.
    fn unique_checks(&mut self, rel: RelId, snip: &Snippet) -> Vec<Body> {
        let keys: Vec<Vec<usize>> = self.cat.schema.rel(rel).unique_keys.clone();
        let mut out = vec![];
        for k in keys {
            let changes = self.cat.deleted.contains(&rel)
                || k.iter().any(|c| self.cat.assigned.contains(&(rel, *c)));
            if k.is_empty() || !changes {
                continue;
            }
            let cols: BTreeSet<usize> = k.iter().copied().collect();
            let s = self.new_statement(StmtType::PredSel, rel, snip);
            self.out.statements[s].pread = self.attrs(rel, &cols);
            self.out.statements[s].read = self.attrs(rel, &cols);
            let names: Vec<&str> = k
                .iter()
                .map(|c| self.cat.schema.rel(rel).attributes[*c].as_str())
                .collect();
            let label = format!("unique check ({})", names.join(", "));
            self.check_read(s, &label);
            out.push(Body::Stmt(s));
        }
        out
    }

    /// An upsert: either the insert `q` (`inserted`: with its unique
    /// checks), or (on a conflict) the action on the conflicting row: the
    /// row with the inserted values of the arbiter's columns
    /// (`arbiter`), not the row with the inserted key.
    #[allow(clippy::too_many_arguments)]
    fn upsert(
        &mut self,
        on: &sqlparser::ast::OnInsert,
        q: usize,
        inserted: Body,
        tables: Vec<TableRef>,
        snip: &Snippet,
        into: &[String],
        pre: &mut Vec<Body>,
    ) -> Result<Body> {
        let rel = tables[0].rel;
        let arbiters = self.arbiter(rel, on, snip)?;
        let (assignments, selection) = match on {
            sqlparser::ast::OnInsert::DuplicateKeyUpdate(a) => (a.clone(), None),
            sqlparser::ast::OnInsert::OnConflict(c) => match &c.action {
                sqlparser::ast::OnConflictAction::DoNothing => (vec![], None),
                sqlparser::ast::OnConflictAction::DoUpdate(d) => {
                    (d.assignments.clone(), d.selection.clone())
                }
            },
            _ => {
                return Err(self.unsupported(
                    snip,
                    "this ON CONFLICT form",
                    "use ON CONFLICT … DO NOTHING or DO UPDATE",
                ))
            }
        };
        let mut scope = tables;
        scope.push(TableRef {
            rel,
            name: "excluded".into(),
            alias: Some("excluded".into()),
            pseudo: true,
            cte: false,
            virt: None,
        });
        let mut uses = vec![ColumnUses::default(); 2];
        let mut writes = BTreeSet::new();
        for a in &assignments {
            for col in assignment_columns(&a.target) {
                writes.insert(self.column(&scope[..1], None, &col, snip)?.1);
            }
            self.collect(
                &scope,
                &a.value,
                snip,
                Some(pre),
                ColumnRole::Read,
                &mut uses,
            )?;
        }
        if let Some(w) = &selection {
            self.collect(&scope, w, snip, Some(pre), ColumnRole::Read, &mut uses)?;
        }
        // DO UPDATE runs the table's CHECKs on the updated row: their
        // functions get the row's values of what it does not assign.
        if !writes.is_empty() {
            uses[0].read.extend(self.check_columns(rel, &writes));
        }
        // A stored generated column is written with its inputs.
        self.with_generated(rel, &mut writes);
        // One alternative per unique key the conflict may be on.
        let mut alts = vec![inserted];
        for arb in &arbiters {
            let a = self.conflict_action(q, rel, arb, &uses[0].read, &writes, snip);
            alts.push(Body::Stmt(a));
        }
        if alts.len() > 2 {
            for b in &alts[1..] {
                if let Body::Stmt(a) = b {
                    self.out.facts[*a].certain = false;
                }
            }
        }
        for v in into {
            let t = self.vars.fresh();
            self.vars.env.insert(v.clone(), t);
        }
        self.out.facts[q].certain = false;
        Ok(Body::Branch(alts))
    }

    /// The action of an upsert on a row that conflicts on `cols`: a read
    /// (DO NOTHING) or an update of the row. Key-based when `cols` are a
    /// key the insert pins (the row holds the inserted values of the key,
    /// and nothing else of the insert is known about it); otherwise a
    /// predicate read of `cols` finds the conflicting rows.
    fn conflict_action(
        &mut self,
        q: usize,
        rel: RelId,
        arb: &Arbiter,
        read: &BTreeSet<usize>,
        writes: &BTreeSet<usize>,
        snip: &Snippet,
    ) -> usize {
        let cols = &arb.cols;
        let eq = |k: &Vec<usize>| -> Option<Vec<(usize, Term)>> {
            k.iter()
                .map(|c| self.out.facts[q].bound.get(c).map(|t| (*c, t.clone())))
                .collect()
        };
        let pinned = arb.key.clone().and_then(|k| eq(&k).map(|e| (k, e)));
        let nothing = writes.is_empty();
        match pinned {
            Some((k, eq)) => {
                let ty = if nothing {
                    StmtType::KeySel
                } else {
                    StmtType::KeyUpd
                };
                let a = self.new_statement(ty, rel, snip);
                if nothing {
                    // DO NOTHING: the conflict check read the row's key.
                    self.out.statements[a].read = self.attrs(rel, cols);
                } else {
                    self.out.statements[a].read = self.attrs(rel, read);
                    self.out.statements[a].write = self.attrs(rel, writes);
                    self.out.facts[a].assigns = writes.clone();
                }
                self.out.facts[a].key = Some(k);
                self.bind(a, &eq);
                a
            }
            None => {
                let ty = if nothing {
                    StmtType::PredSel
                } else {
                    StmtType::PredUpd
                };
                let a = self.new_statement(ty, rel, snip);
                self.out.statements[a].pread = self.attrs(rel, cols);
                let mut r = read.clone();
                r.extend(cols.iter().copied());
                self.out.statements[a].read = self.attrs(rel, &r);
                if !nothing {
                    self.out.statements[a].write = self.attrs(rel, writes);
                }
                a
            }
        }
    }

    /// What an upsert may conflict on: per alternative, the columns its
    /// conflict check reads and the key they are when they are one (the
    /// primary key, or a UNIQUE key no statement assigns, as in `key_of`).
    /// `ON CONFLICT (cols)` names one unique index (a partial one, unknown
    /// here, is no key: its columns are read as a predicate); `DO
    /// NOTHING` without a target and MySQL's `ON DUPLICATE KEY` may
    /// conflict on any unique key: one alternative each; `ON CONFLICT ON
    /// CONSTRAINT name` on one isolint does not know: every column.
    fn arbiter(
        &self,
        rel: RelId,
        on: &sqlparser::ast::OnInsert,
        snip: &Snippet,
    ) -> Result<Vec<Arbiter>> {
        use sqlparser::ast::{ConflictTarget, OnInsert};
        let r = self.cat.schema.rel(rel);
        let pk = &r.primary_key;
        let usable = |k: &Vec<usize>| {
            !k.is_empty() && (k == pk || k.iter().all(|c| !self.cat.assigned.contains(&(rel, *c))))
        };
        let set = |k: &Vec<usize>| k.iter().copied().collect::<BTreeSet<usize>>();
        let keys: Vec<&Vec<usize>> = std::iter::once(pk)
            .chain(&r.unique_keys)
            .filter(|k| !k.is_empty())
            .collect();
        let target = match on {
            OnInsert::OnConflict(c) => c.conflict_target.as_ref(),
            _ => None,
        };
        let every = || Arbiter {
            cols: (0..r.arity()).collect(),
            key: None,
        };
        Ok(match target {
            None if keys.is_empty() => vec![every()],
            None => keys
                .iter()
                .map(|k| Arbiter {
                    cols: set(k),
                    key: usable(k).then(|| (*k).clone()),
                })
                .collect(),
            Some(ConflictTarget::OnConstraint(_)) => vec![every()],
            Some(ConflictTarget::Columns(ids)) => {
                let table = [TableRef {
                    rel,
                    name: r.name.clone(),
                    alias: None,
                    pseudo: false,
                    cte: false,
                    virt: None,
                }];
                let mut cols = BTreeSet::new();
                for i in ids {
                    cols.insert(self.column(&table, None, i, snip)?.1);
                }
                // `ON CONFLICT (cols) WHERE pred`: the arbiter is a partial
                // unique index, which holds only the rows pred accepts. Its
                // check reads pred's columns too, and it is no key of the
                // table (two rows may share cols): a predicate read.
                let partial = crate::frontend::sql::conflict_index_predicate(&self.src.file, snip)?;
                if let Some(pred) = &partial {
                    for (q, c) in expr_columns(pred) {
                        cols.insert(self.column(&table, q.as_ref(), &c, snip)?.1);
                    }
                }
                let key = keys
                    .iter()
                    .find(|k| partial.is_none() && set(k) == cols && usable(k))
                    .map(|k| (*k).clone());
                vec![Arbiter { cols, key }]
            }
        })
    }

    pub(super) fn unsupported(&self, snip: &Snippet, what: &str, help: &str) -> Box<Diag> {
        let first = snip.text.len() - snip.text.trim_start().len();
        Diag::new(format!("{what} is not supported"))
            .help(help.to_string())
            .at(&self.src.file, snip.offset + first, 6, "here")
    }

    /// An UPDATE or DELETE of the target, then what its foreign keys'
    /// referential actions do to the referencing rows.
    pub(super) fn write_stmt(&mut self, w: Write) -> Result<Body> {
        let (uses, snip) = (w.uses, w.snip);
        let first = self.out.statements.len();
        let (kind, rel, writes) = (w.kind, w.rel, w.writes.clone());
        // Keyed by the elements of a values item (from.rs): one keyed
        // write per element, a loop; INTO gets no tuple's column.
        let per_elem = !uses.elem.is_empty() && self.unjoined_key(rel, uses).is_some();
        let into = w.into;
        let b = self.write_target(w)?;
        let b = if per_elem {
            for v in into {
                let t = self.vars.fresh();
                self.vars.env.insert(v.clone(), t);
            }
            Body::Loop(Box::new(b))
        } else {
            b
        };
        let mut pred = uses.pred.clone();
        pred.extend(uses.join.iter().copied());
        for q in first..self.out.statements.len() {
            self.out.facts[q].pred.extend(pred.iter().copied());
        }
        let mut parts = vec![b];
        let mut seen = HashSet::new();
        let mark = self.out.statements.len();
        self.cascade(
            rel,
            kind == WriteKind::Delete,
            &writes,
            snip,
            &mut seen,
            &mut parts,
        )?;
        if kind == WriteKind::Delete {
            self.pin_children(rel, first, mark);
        }
        Ok(if parts.len() == 1 {
            parts.remove(0)
        } else {
            Body::Seq(parts)
        })
    }

    /// ON DELETE / ON UPDATE actions of the foreign keys that reference
    /// `rel`: PostgreSQL runs them at the end of the statement as part of
    /// the same transaction. CASCADE on delete deletes the referencing
    /// rows, every other action (and CASCADE on update) updates their
    /// FK columns; the referencing rows are found by their FK columns
    /// (predicate-based). Cascades of cascades follow, each FK once.
    pub(super) fn cascade(
        &mut self,
        rel: RelId,
        deleted: bool,
        updated: &BTreeSet<usize>,
        snip: &Snippet,
        seen: &mut HashSet<(usize, bool)>,
        parts: &mut Vec<Body>,
    ) -> Result<()> {
        let fks: Vec<(usize, crate::model::schema::ForeignKey)> = self
            .cat
            .schema
            .foreign_keys
            .iter()
            .cloned()
            .enumerate()
            .filter(|(_, fk)| fk.range == rel)
            .collect();
        for (fi, fk) in fks {
            let (on_delete, on_update) = self.cat.fk_actions.get(fi).copied().unwrap_or_default();
            let action = if deleted {
                on_delete
            } else if fk.columns.iter().any(|(_, r)| updated.contains(r)) {
                on_update
            } else {
                continue;
            };
            if action == FkAction::NoAction {
                // NO ACTION / RESTRICT: PostgreSQL checks that no row
                // still references the deleted (re-keyed) row: a
                // predicate read of the referencing table (integrity.rs).
                if !self.cat.skip_referential_checks && seen.insert((fi, deleted)) {
                    let check = if deleted {
                        super::hooks::FkCheck::OnDelete
                    } else {
                        super::hooks::FkCheck::OnUpdate
                    };
                    let when = self.when(fi, check);
                    if when != super::hooks::CheckTime::Commit {
                        parts.push(Body::Stmt(self.child_check(fi, &fk, snip)));
                    }
                    if when != super::hooks::CheckTime::Now {
                        let q = self.child_check(fi, &fk, snip);
                        self.defer(q);
                    }
                }
                continue;
            }
            if !seen.insert((fi, deleted)) {
                continue;
            }
            let dom = fk.domain;
            let cols: BTreeSet<usize> = fk.columns.iter().map(|(d, _)| *d).collect();
            let child_deleted = deleted && action == FkAction::Cascade;
            let ty = if child_deleted {
                StmtType::PredDel
            } else {
                StmtType::PredUpd
            };
            if !child_deleted {
                // The updated referencing rows pass the referencing
                // table's CHECKs and domain CHECKs (SET DEFAULT: its
                // DEFAULTs), per row.
                let set_default = action == FkAction::SetDefault;
                self.hook_reads(
                    dom,
                    true,
                    &|k| match k {
                        HookKind::Check => true,
                        HookKind::Domain(c) => cols.contains(&c),
                        HookKind::Default(c) => set_default && cols.contains(&c),
                    },
                    parts,
                )?;
            }
            let q = self.new_statement(ty, dom, snip);
            self.out.statements[q].pread = self.attrs(dom, &cols);
            if child_deleted {
                self.out.statements[q].write = self.all_attrs(dom);
            } else {
                let read = self.check_columns(dom, &cols);
                self.out.statements[q].read = self.attrs(dom, &read);
                self.out.statements[q].write = self.attrs(dom, &cols);
            }
            let how = if deleted { "ON DELETE" } else { "ON UPDATE" };
            if let Some(sql) = &mut self.out.statements[q].sql {
                sql.push_str(&format!("  -- {how} {} of {}", action.sql(), fk.name));
            }
            if !child_deleted {
                let mut w = cols.clone();
                self.with_generated(dom, &mut w);
                self.out.statements[q].write = self.attrs(dom, &w);
            }
            self.out.facts[q].assigns = if child_deleted {
                BTreeSet::new()
            } else {
                cols.clone()
            };
            parts.push(Body::Stmt(q));
            self.cascade(dom, child_deleted, &cols, snip, seen, parts)?;
        }
        Ok(())
    }

    /// Provenance only (`Facts::value_pins`): the foreign-key checks and
    /// actions a key-based DELETE of `rel` (statements `first..mark`)
    /// runs read the children of the deleted row, so their FK columns
    /// equal its key: `enrolled.course_id` = the deleted `course.id`. The
    /// explorer instantiates them on values (issue 23); the BTPs and the
    /// constraints stay as they were.
    fn pin_children(&mut self, rel: RelId, first: usize, mark: usize) {
        let targets: Vec<usize> = (first..mark)
            .filter(|&q| {
                self.out.statements[q].rel == rel && self.out.statements[q].ty == StmtType::KeyDel
            })
            .collect();
        let [p] = targets[..] else { return };
        for q in mark..self.out.statements.len() {
            let s = &self.out.statements[q];
            let fk = self.cat.schema.foreign_keys.iter().find(|f| {
                f.range == rel
                    && f.domain == s.rel
                    && !f.columns.is_empty()
                    && s.pread.as_ref().is_some_and(|pr| {
                        pr.len() == f.columns.len()
                            && f.columns.iter().all(|(d, _)| pr.contains(*d))
                    })
            });
            if let Some(f) = fk {
                let pins: Vec<(usize, Term)> = f
                    .columns
                    .iter()
                    .map(|&(d, r)| (d, Term::Col(p, r)))
                    .collect();
                self.out.facts[q].value_pins = pins;
            }
        }
    }

    pub(super) fn write_target(&mut self, w: Write) -> Result<Body> {
        let Write {
            kind,
            rel,
            uses,
            writes,
            snip,
            into,
            returning_cols,
            next,
        } = w;
        let key = self.unjoined_key(rel, uses);
        let r = self.cat.schema.rel(rel);
        let assigns_key = writes.iter().any(|c| r.primary_key.contains(c));
        // Join columns (UPDATE … FROM, DELETE … USING) are read and, for a
        // predicate-based statement, part of its predicate.
        let mut read = uses.read.clone();
        read.extend(uses.join.iter().copied());
        if assigns_key && kind == WriteKind::Update {
            // Changing the key moves the row: a read of what the SET
            // expressions use, a delete, and an insert.
            let name = r.name.clone();
            self.warn(snip.offset, format!("UPDATE assigns a primary-key column of `{name}`: modelled as a read, a delete and an insert"));
            let mut parts = vec![];
            let sel_ty = if key.is_some() {
                StmtType::KeySel
            } else {
                StmtType::PredSel
            };
            let s = self.new_statement(sel_ty, rel, snip);
            read.extend(uses.extra.iter().copied());
            self.out.statements[s].read = self.attrs(rel, &read);
            if key.is_none() {
                self.out.statements[s].pread = self.attrs(rel, &uses.pred);
            }
            self.bind_uses(s, uses);
            parts.push(Body::Stmt(s));
            let del_ty = if key.is_some() {
                StmtType::KeyDel
            } else {
                StmtType::PredDel
            };
            let d = self.new_statement(del_ty, rel, snip);
            self.out.statements[d].write = self.all_attrs(rel);
            if key.is_none() {
                self.out.statements[d].pread = self.attrs(rel, &uses.pred);
            }
            self.bind_uses(d, uses);
            parts.push(Body::Stmt(d));
            let i = self.new_statement(StmtType::Ins, rel, snip);
            self.out.statements[i].write = self.all_attrs(rel);
            parts.push(Body::Stmt(i));
            for v in into {
                let t = self.vars.fresh();
                self.vars.env.insert(v.clone(), t);
            }
            return Ok(Body::Seq(parts));
        }
        match key {
            Some(key) => {
                // A join conjunct may match nothing, like any extra conjunct.
                let mut extra = Self::extras(uses, &key);
                extra.extend(uses.join.iter().copied());
                let ty = if kind == WriteKind::Update {
                    StmtType::KeyUpd
                } else {
                    StmtType::KeyDel
                };
                let q = self.new_statement(ty, rel, snip);
                if kind == WriteKind::Update {
                    let mut rs = read.clone();
                    rs.extend(extra.iter().copied());
                    self.out.statements[q].read = self.attrs(rel, &rs);
                    self.out.statements[q].write = self.attrs(rel, &writes);
                } else {
                    self.out.statements[q].write = self.all_attrs(rel);
                }
                self.bind_uses(q, uses);
                self.out.facts[q].key = Some(key);
                self.out.facts[q].assigns = writes.clone();
                self.assign_into(into, q, true, returning_cols, &writes);
                let own_read = (kind == WriteKind::Update).then_some(&read);
                self.condition_facts(q, uses, &extra, own_read);
                if extra.is_empty() || self.aborts_when_no_match(into, next) {
                    return Ok(Body::Stmt(q));
                }
                // Extra conjuncts may match nothing: then the statement only
                // read the tuple and the transaction goes on.
                self.out.facts[q].certain = false;
                let s = self.new_statement(StmtType::KeySel, rel, snip);
                self.out.statements[s].read = self.attrs(rel, &extra);
                self.bind_uses(s, uses);
                self.no_match_facts(s, q, uses, &extra);
                Ok(Body::Branch(vec![Body::Stmt(q), Body::Stmt(s)]))
            }
            None => {
                let ty = if kind == WriteKind::Update {
                    StmtType::PredUpd
                } else {
                    StmtType::PredDel
                };
                let q = self.new_statement(ty, rel, snip);
                self.out.statements[q].pread = self.attrs(rel, &uses.pred);
                if kind == WriteKind::Update {
                    self.out.statements[q].read = self.attrs(rel, &read);
                    self.out.statements[q].write = self.attrs(rel, &writes);
                } else {
                    self.out.statements[q].write = self.all_attrs(rel);
                }
                self.bind_uses(q, uses);
                self.out.facts[q].assigns = writes;
                self.assign_into(into, q, false, returning_cols, &BTreeSet::new());
                Ok(Body::Stmt(q))
            }
        }
    }

    /// The provenance of keyed write `q`'s extra conjuncts `extra`
    /// (`Provenance::conditions`, `tests`, and for an UPDATE reading
    /// `read` otherwise, `cond_only`).
    fn condition_facts(
        &mut self,
        q: usize,
        uses: &ColumnUses,
        extra: &BTreeSet<usize>,
        read: Option<&BTreeSet<usize>>,
    ) {
        if extra.is_empty() {
            return;
        }
        let f = &mut self.out.facts[q];
        f.cond = Some((extra.iter().copied().collect(), Role::Write));
        f.tests = Self::tests_of(uses);
        if let Some(read) = read {
            f.cond_only = extra.difference(read).copied().collect();
        }
    }

    /// The provenance of `s`, the no-match key sel of keyed write `q`
    /// with extra conjuncts `extra` (`Provenance::conditions`, `tests`).
    fn no_match_facts(&mut self, s: usize, q: usize, uses: &ColumnUses, extra: &BTreeSet<usize>) {
        self.out.facts[s].key = self.out.facts[q].key.clone();
        self.out.facts[s].cond = Some((extra.iter().copied().collect(), Role::NoMatch));
        self.out.facts[s].tests = Self::tests_of(uses);
    }

    /// A keyed write's extra conjuncts as tests of columns against
    /// constants (`Provenance::tests`): only when every one that is not an
    /// equality to a value is such a test, on a column no equality pins
    /// (else the values cannot say when the WHERE holds).
    fn tests_of(uses: &ColumnUses) -> Option<Vec<(usize, crate::model::provenance::Test)>> {
        let tested = |c: &usize| uses.tests.iter().any(|(a, _)| a == c);
        let plain = !uses.opaque
            && uses.join.is_empty()
            && uses.untested.is_disjoint(&uses.extra)
            && uses.extra.iter().all(tested)
            && !uses.eq.iter().any(|(c, _)| uses.extra.contains(c));
        (plain && !uses.tests.is_empty()).then(|| uses.tests.clone())
    }

    /// One read statement per table from `first` on (SELECT, and the FROM /
    /// USING tables of UPDATE and DELETE): key sel when its key is pinned by
    /// values and not joined, else pred sel with the join columns in
    /// PReadSet and ReadSet. Returns the first key-based one.
    pub(super) fn table_reads(
        &mut self,
        tables: &[TableRef],
        uses: &[ColumnUses],
        first: usize,
        locking: &[bool],
        snip: &Snippet,
        parts: &mut Vec<Body>,
    ) -> Option<usize> {
        let mut first_key_based = None;
        for (ti, t) in tables.iter().enumerate().skip(first) {
            if t.cte || t.virt.is_some() {
                continue;
            }
            let u = &uses[ti].for_reads();
            let rel = t.rel;
            let mut read: BTreeSet<usize> = if u.all {
                (0..self.cat.schema.rel(rel).arity()).collect()
            } else {
                u.read.clone()
            };
            read.extend(u.join.iter().copied());
            let s = if let Some(key) = self.unjoined_key(rel, u) {
                let s = self.new_statement(StmtType::KeySel, rel, snip);
                let extras = Self::extras(u, &key);
                // PostgreSQL locks only rows that match the whole WHERE:
                // with an extra conjunct, a row it filters out is neither
                // locked nor waited for. SKIP LOCKED / NOWAIT and FOR KEY
                // SHARE do not order the read either (docs/locking-reads.md).
                self.out.statements[s].locking = locking.get(ti).copied().unwrap_or(false)
                    && extras.is_empty()
                    && !self.sql.weak_lock;
                read.extend(extras);
                self.out.statements[s].read = self.attrs(rel, &read);
                self.out.facts[s].key = Some(key);
                // The FROM/USING tables of UPDATE and DELETE: no match
                // means no write, and the program goes on.
                self.out.facts[s].may_miss |= first > 0;
                first_key_based.get_or_insert(s);
                s
            } else {
                let s = self.new_statement(StmtType::PredSel, rel, snip);
                let mut pred = u.pred.clone();
                pred.extend(u.join.iter().copied());
                self.out.statements[s].pread = self.attrs(rel, &pred);
                self.out.statements[s].read = self.attrs(rel, &read);
                s
            };
            let u2 = u.clone();
            self.bind_uses(s, &u2);
            self.out.facts[s].pred = u.pred.iter().chain(&u.join).copied().collect();
            parts.push(Body::Stmt(s));
        }
        first_key_based
    }

    /// SELECT: one statement per table of FROM, in FROM order.
    pub(super) fn select(&mut self, q: &Query, snip: &Snippet, into: &[String]) -> Result<Body> {
        let split = std::mem::take(&mut self.stage.split);
        if q.with.is_some() {
            self.stage.split = split;
            return self.with_query(q, snip, into);
        }
        let SetExpr::Select(sel) = q.body.as_ref() else {
            return self.set_query(q, snip, into, split);
        };
        let (mut tables, mut ons, mut pre, mut hits) = (vec![], vec![], vec![], vec![]);
        self.tables_of(&sel.from, snip, &mut tables, &mut ons, &mut pre, &mut hits)?;
        self.inl.selects += 1;
        if tables.is_empty() {
            let b = self.select_without_from(sel, snip, into)?;
            if split {
                self.stage.split_out.push(b);
                return Ok(Body::Seq(vec![]));
            }
            return Ok(b);
        }
        let mut uses = vec![ColumnUses::default(); tables.len()];
        correlate(&mut uses, &hits);
        for item in &sel.projection {
            self.collect_item(&tables, item, snip, &mut pre, &mut uses)?;
        }
        self.select_clauses(q, sel, &tables, &ons, snip, &mut pre, &mut uses)?;
        // FOR UPDATE locks every table; FOR UPDATE OF t only the tables named.
        self.no_virtual_lock(q, &tables, snip)?;
        let locking = locked_tables(q, &tables);
        let mut parts = pre;
        let single = tables.len() == 1;
        let mark = self.out.statements.len();
        let mut late = vec![];
        // A predicate-based locking read that waits for a row lock re-checks
        // only the rows it waited for (EvalPlanQual) and never sees rows
        // inserted after its snapshot: it reads on both sides of the other
        // transaction's commit, which one atomic BTP read cannot express
        // (tests/explorer_epq.rs, confirmed on PostgreSQL 15). So it is a
        // snapshot scan and, later, the locked re-read.
        let pred_locked = tables.iter().enumerate().any(|(ti, t)| {
            locking[ti] && !t.cte && self.unjoined_key(t.rel, &uses[ti].for_reads()).is_none()
        });
        let first_key_based =
            if locking.iter().any(|l| *l) && (split || pred_locked || locking.iter().any(|l| !l)) {
                self.locked_after_snapshot(&tables, &uses, &locking, snip, &mut parts, &mut late)
            } else {
                self.table_reads(&tables, &uses, 0, &locking, snip, &mut parts)
            };
        if single {
            self.mark_own_inserts(tables[0].rel, &uses[0], mark);
        }
        // An aggregate over no rows still returns a row (COUNT 0, SUM
        // NULL): the program goes on when the keyed row is missing.
        let grouped = !matches!(&sel.group_by, sqlparser::ast::GroupByExpr::Expressions(v, _) if v.is_empty());
        if !grouped && sel.projection.iter().any(has_aggregate) {
            for q in mark..self.out.statements.len() {
                self.out.facts[q].may_miss = true;
            }
        }
        if limited_select(q, sel, grouped, !into.is_empty()) {
            let order = match single {
                true => select_order(q, sel, self.cat.schema.rel(tables[0].rel)),
                false => None,
            };
            for q in mark..self.out.statements.len() {
                self.out.facts[q].limited = true;
                self.out.facts[q].order = order;
            }
        }
        // INTO: a plain column of a key-based single-table SELECT names that
        // tuple's column; anything else is a fresh symbol.
        match (single, first_key_based) {
            (true, Some(s)) => {
                let cols = item_columns(&sel.projection, self.cat.schema.rel(tables[0].rel), true);
                self.assign_into(into, s, true, &cols, &BTreeSet::new())
            }
            _ => {
                // Provenance: a plain column, min or max of the one
                // predicate-read table is a value of a row it read.
                let read = (0..self.out.statements.len())
                    .rev()
                    .take_while(|&q| q >= mark)
                    .find(|&q| {
                        single
                            && self.out.statements[q].rel == tables[0].rel
                            && self.out.statements[q].ty == StmtType::PredSel
                    });
                let cols = match read {
                    Some(_) => read_columns(&sel.projection, self.cat.schema.rel(tables[0].rel)),
                    None => vec![],
                };
                for (k, v) in into.iter().enumerate() {
                    let t = self.vars.fresh();
                    if let (Some(stmt), Some(Some(attr)), Term::Fresh(n)) = (read, cols.get(k), &t)
                    {
                        let src = crate::model::provenance::Source::Read {
                            stmt,
                            attr: *attr,
                            nullable: !self.pos.stmt_tested,
                        };
                        self.out.sources.push((*n, src));
                    }
                    self.vars.env.insert(v.clone(), t);
                }
            }
        }
        if split {
            self.stage.split_out.append(&mut parts);
            return Ok(Body::Seq(late));
        }
        parts.append(&mut late);
        Ok(if parts.len() == 1 {
            parts.remove(0)
        } else {
            Body::Seq(parts)
        })
    }

    /// The columns a SELECT's ORDER BY, GROUP BY, HAVING, join conditions
    /// and WHERE use (and the subqueries and calls in them, into `pre`).
    #[allow(clippy::too_many_arguments)]
    fn select_clauses(
        &mut self,
        q: &Query,
        sel: &sqlparser::ast::Select,
        tables: &[TableRef],
        ons: &[Expr],
        snip: &Snippet,
        pre: &mut Vec<Body>,
        uses: &mut [ColumnUses],
    ) -> Result<()> {
        if let Some(ob) = &q.order_by {
            if let sqlparser::ast::OrderByKind::Expressions(v) = &ob.kind {
                for o in v {
                    self.collect(
                        tables,
                        &o.expr,
                        snip,
                        Some(&mut *pre),
                        ColumnRole::Read,
                        uses,
                    )?;
                }
            }
        }
        if let sqlparser::ast::GroupByExpr::Expressions(v, _) = &sel.group_by {
            for e in v {
                self.collect(tables, e, snip, Some(&mut *pre), ColumnRole::Read, uses)?;
            }
        }
        if let Some(h) = &sel.having {
            self.collect(tables, h, snip, Some(&mut *pre), ColumnRole::Read, uses)?;
        }
        for on in ons {
            self.where_clause(tables, on, snip, pre, uses)?;
        }
        if let Some(w) = &sel.selection {
            self.where_clause(tables, w, snip, pre, uses)?;
        }
        Ok(())
    }

    /// `Held::OwnInserts` on the reads `mark..` of a one-table SELECT whose
    /// primary key (one column) is pinned, by `=` or `= ANY(ARRAY[…])`, to
    /// keys that plain INSERTs of this transaction returned (not rolled
    /// back): docs/rules.md, "Reads of the transaction's own inserts".
    fn mark_own_inserts(&mut self, rel: RelId, u: &ColumnUses, mark: usize) {
        let [c] = self.cat.schema.rel(rel).primary_key[..] else {
            return;
        };
        let own = |t: &Term| {
            matches!(*t, Term::Col(q, a) if a == c
                && q < mark
                && self.out.statements[q].ty == StmtType::Ins
                && self.out.statements[q].rel == rel
                && self.out.facts[q].plain_insert
                && !self.out.facts[q].rolled_back)
        };
        let pinned = u.eq.iter().any(|(a, t)| *a == c && own(t))
            || u.any_of
                .iter()
                .any(|(a, ts)| *a == c && !ts.is_empty() && ts.iter().all(own));
        if !pinned {
            return;
        }
        for q in mark..self.out.statements.len() {
            let s = &mut self.out.statements[q];
            if s.rel == rel && matches!(s.ty, StmtType::KeySel | StmtType::PredSel) {
                s.held = Some(Held::OwnInserts);
            }
        }
    }

    /// A SELECT whose lock clause locks some of its tables, beside tables
    /// it does not lock (`FOR UPDATE OF t`) or other parts of a WITH: the
    /// unlocked tables are read on the statement's snapshot, and so is the
    /// scan of the locked ones (their WHERE columns); after a lock wait
    /// PostgreSQL re-reads only the locked rows (EvalPlanQual), so their
    /// reads come last (`late`), in FROM order. Returns the locked read of
    /// a single table, if key-based (for INTO).
    fn locked_after_snapshot(
        &mut self,
        tables: &[TableRef],
        uses: &[ColumnUses],
        locking: &[bool],
        snip: &Snippet,
        parts: &mut Vec<Body>,
        late: &mut Vec<Body>,
    ) -> Option<usize> {
        for (ti, t) in tables.iter().enumerate() {
            if locking[ti] {
                self.snapshot_scan(t, &uses[ti], snip, parts);
            } else {
                let r = ti..ti + 1;
                self.table_reads(&tables[r.clone()], &uses[r], 0, &[], snip, parts);
            }
        }
        let mut first = None;
        for (ti, _) in tables.iter().enumerate().filter(|(ti, _)| locking[*ti]) {
            let r = ti..ti + 1;
            let mark = self.out.statements.len();
            let s = self.table_reads(&tables[r.clone()], &uses[r], 0, &[true], snip, late);
            // The locked re-read of a key-based read: its snapshot scan
            // (above) reads the key's existence, so a missing row need not
            // make the locked read predicate-based; it re-checks the key
            // after a lock wait (EvalPlanQual), so it reads the key too.
            for q in mark..self.out.statements.len() {
                if !self.out.statements[q].locking {
                    continue;
                }
                if let Some(key) = self.out.facts[q].key.clone() {
                    let rel = self.out.statements[q].rel;
                    let mut read: BTreeSet<usize> = self.out.statements[q]
                        .read
                        .iter()
                        .flat_map(|a| a.iter())
                        .collect();
                    read.extend(key);
                    self.out.statements[q].read = self.attrs(rel, &read);
                    self.out.facts[q].scanned = true;
                }
            }
            first = first.or(s);
        }
        first
    }

    /// The scan that finds a table's rows on the statement's snapshot: a
    /// plain read of its WHERE and join columns (a key-based one with no
    /// other column reads the row's existence).
    pub(super) fn snapshot_scan(
        &mut self,
        t: &TableRef,
        u: &ColumnUses,
        snip: &Snippet,
        parts: &mut Vec<Body>,
    ) {
        let scan = ColumnUses {
            read: BTreeSet::new(),
            all: false,
            ..u.clone()
        };
        self.table_reads(std::slice::from_ref(t), &[scan], 0, &[], snip, parts);
    }

    /// `WITH c₁ AS (…), … main`: each CTE lowered as a statement of its own
    /// (SELECT, or INSERT/UPDATE/DELETE … RETURNING), then the main
    /// statement; reading a CTE by name reads no table (its rows come from
    /// the sub-statement, which was lowered with its reads).
    ///
    /// PostgreSQL runs all parts on one snapshot, taken when the statement
    /// starts; a data-modifying part that waits for a row lock writes (and
    /// re-reads the locked row) after the wait. So the reads every part
    /// makes on the snapshot come first, in the order written, then the
    /// writes and locking reads, in the order written (order.rs says why
    /// that admits every PostgreSQL execution; PostgreSQL does not promise
    /// an order of the parts' writes, and none is needed: this
    /// transaction's writes are invisible to others until it commits).
    fn with_query(&mut self, q: &Query, snip: &Snippet, into: &[String]) -> Result<Body> {
        let Some(with) = &q.with else {
            return self.select(q, snip, into);
        };
        if with.recursive {
            return Err(self.unsupported(
                snip,
                "WITH RECURSIVE",
                "write the recursion as a loop of statements",
            ));
        }
        let depth = self.sql.ctes.len();
        let r = self.with_parts(q, with, snip, into);
        self.sql.ctes.truncate(depth);
        r
    }

    fn with_parts(
        &mut self,
        q: &Query,
        with: &sqlparser::ast::With,
        snip: &Snippet,
        into: &[String],
    ) -> Result<Body> {
        let split = std::mem::take(&mut self.stage.split);
        let mark = self.out.statements.len();
        // Reads on the statement's snapshot, then what waits for locks.
        let (mut reads, mut late) = (vec![], vec![]);
        for cte in &with.cte_tables {
            let from = self.out.statements.len();
            let (body, rel) = self.cte_body(&cte.query, snip)?;
            let (row, miss) = self.cte_row(from, &body, rel).unzip();
            self.file_part(body, &mut reads, &mut late);
            // A data-modifying CTE's outputs are its RETURNING list's: the
            // write already read what it returns (`update` collects it).
            let returning = match cte.query.body.as_ref() {
                SetExpr::Insert(Sql::Insert(i)) => i.returning.as_deref(),
                SetExpr::Update(Sql::Update(u)) => u.returning.as_deref(),
                SetExpr::Delete(Sql::Delete(d)) => d.returning.as_deref(),
                _ => None,
            };
            let items = match cte.query.body.as_ref() {
                SetExpr::Select(sel) => Some(sel.projection.as_slice()),
                _ => returning,
            };
            let outputs = items
                .unwrap_or_default()
                .iter()
                .filter_map(|i| match i {
                    SelectItem::ExprWithAlias { alias, .. } => Some(alias.value.clone()),
                    _ => None,
                })
                .collect();
            self.sql.ctes.push(Cte {
                name: cte.alias.name.clone(),
                rel,
                renamed: !cte.alias.columns.is_empty(),
                outputs,
                row,
                miss: miss.flatten(),
            });
        }
        let main = match q.body.as_ref() {
            SetExpr::Insert(st) | SetExpr::Update(st) | SetExpr::Delete(st) => {
                // The Query wrapping the main statement (audit counts it).
                self.inl.selects += 1;
                self.stage.split = true;
                self.lower_sql(st, into, snip, None, self.sql.weak_lock)?
            }
            _ => {
                let mut plain = q.clone();
                plain.with = None;
                self.stage.split = true;
                self.select(&plain, snip, into)?
            }
        };
        self.file_part(main, &mut reads, &mut late);
        if split {
            // A WITH inside a part of a WITH: one snapshot for all.
            self.stage.split_out.append(&mut reads);
            return Ok(Body::Seq(late));
        }
        reads.append(&mut late);
        Ok(self.renumber(mark, Body::Seq(reads)))
    }

    /// Sort one lowered part of a WITH: what it left in `split_out` is
    /// read on the snapshot, the body it returned comes after. A part that
    /// did not take the split request (VALUES) is all snapshot reads.
    fn file_part(&mut self, body: Body, reads: &mut Vec<Body>, late: &mut Vec<Body>) {
        if std::mem::take(&mut self.stage.split) {
            reads.push(body);
        } else {
            reads.append(&mut self.take_split());
            late.push(body);
        }
    }

    /// One CTE's statement, and the table its rows are rows of (the target
    /// of a data-modifying CTE, the one table of a SELECT), if any.
    fn cte_body(&mut self, q: &Query, snip: &Snippet) -> Result<(Body, Option<RelId>)> {
        match q.body.as_ref() {
            SetExpr::Insert(st) | SetExpr::Update(st) | SetExpr::Delete(st) if q.with.is_none() => {
                self.inl.selects += 1;
                let rel = match st {
                    Sql::Insert(ins) => match &ins.table {
                        TableObject::TableName(n) => {
                            n.0.last().and_then(|p| p.as_ident()).and_then(|i| {
                                find_rel(self.cat.schema, &self.cat.extras.aliases, i)
                            })
                        }
                        _ => None,
                    },
                    Sql::Update(u) => match &u.table.relation {
                        TableFactor::Table { name, .. } => {
                            name.0.last().and_then(|p| p.as_ident()).and_then(|i| {
                                find_rel(self.cat.schema, &self.cat.extras.aliases, i)
                            })
                        }
                        _ => None,
                    },
                    Sql::Delete(d) => {
                        let from = match &d.from {
                            sqlparser::ast::FromTable::WithFromKeyword(v)
                            | sqlparser::ast::FromTable::WithoutKeyword(v) => v,
                        };
                        match from.first().map(|t| &t.relation) {
                            Some(TableFactor::Table { name, .. }) => {
                                name.0.last().and_then(|p| p.as_ident()).and_then(|i| {
                                    find_rel(self.cat.schema, &self.cat.extras.aliases, i)
                                })
                            }
                            _ => None,
                        }
                    }
                    _ => None,
                };
                // A data-modifying CTE runs to completion whether or not
                // its rows are read, and its RETURNING has no INTO. It is
                // a statement of the program like any other (key-based
                // under the Section 5.4 assumption).
                self.stage.split = true;
                Ok((self.lower_sql(st, &[], snip, None, false)?, rel))
            }
            SetExpr::Select(sel) => {
                let rel = match sel.from.as_slice() {
                    [t] if t.joins.is_empty() => match &t.relation {
                        TableFactor::Table { name, .. } => name
                            .0
                            .last()
                            .and_then(|p| p.as_ident())
                            .and_then(|i| self.cte_or_rel(i)),
                        _ => None,
                    },
                    _ => None,
                };
                // As a subquery: its rows may be none, and the program goes on.
                self.pos.sub_depth += 1;
                self.stage.split = true;
                let b = self.with_query(q, snip, &[]);
                self.pos.sub_depth -= 1;
                Ok((b?, rel))
            }
            SetExpr::Values(_) => {
                self.inl.selects += 1;
                let b = self.with_query_values(q, snip)?;
                // Snapshot reads: `file_part` finds the request untaken.
                self.stage.split = true;
                Ok((b, None))
            }
            _ => {
                // A set operation: its arms are snapshot reads (set_query
                // takes the request and leaves them in `split_out`).
                self.pos.sub_depth += 1;
                self.stage.split = true;
                let b = self.with_query(q, snip, &[]);
                self.pos.sub_depth -= 1;
                Ok((b?, None))
            }
        }
    }

    /// `WITH c AS (VALUES …)`: the reads of the values' expressions.
    fn with_query_values(&mut self, q: &Query, snip: &Snippet) -> Result<Body> {
        let mut pre = vec![];
        if let SetExpr::Values(v) = q.body.as_ref() {
            for row in &v.rows {
                for e in row.iter() {
                    self.collect(&[], e, snip, Some(&mut pre), ColumnRole::Read, &mut [])?;
                }
            }
        }
        Ok(Body::Seq(pre))
    }

    /// A SELECT without FROM reads only what its expressions read:
    /// subqueries and calls in the list, WHERE and HAVING.
    fn select_without_from(
        &mut self,
        sel: &sqlparser::ast::Select,
        snip: &Snippet,
        into: &[String],
    ) -> Result<Body> {
        let mut pre = vec![];
        let mut exprs: Vec<&Expr> = vec![];
        for item in &sel.projection {
            match item {
                SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                    exprs.push(e)
                }
                _ => {
                    return Err(self.unsupported(snip, "`*` without FROM", "name a table in FROM"))
                }
            }
        }
        exprs.extend(sel.selection.iter());
        exprs.extend(sel.having.iter());
        let inlined = self.inl.inlined;
        for e in exprs {
            self.collect(&[], e, snip, Some(&mut pre), ColumnRole::Read, &mut [])?;
        }
        // A call whose body was inlined (a VOLATILE one goes elsewhere) is
        // modelled: no warning then.
        if pre.is_empty() && self.inl.inlined == inlined {
            self.warn(snip.offset, "statement reads no table; nothing to model");
        }
        for v in into {
            let t = self.vars.fresh();
            self.vars.env.insert(v.clone(), t);
        }
        Ok(Body::Seq(pre))
    }
}

/// What an upsert's conflict may be on: the columns its check reads, and
/// the key they are when they are one.
struct Arbiter {
    cols: BTreeSet<usize>,
    key: Option<Vec<usize>>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum WriteKind {
    Update,
    Delete,
}

pub(super) fn is_ddl(sql: &Sql) -> bool {
    matches!(
        sql,
        Sql::CreateTable(_)
            | Sql::CreateIndex(_)
            | Sql::CreateView(_)
            | Sql::CreateFunction(_)
            | Sql::CreateTrigger(_)
            | Sql::AlterTable(_)
            | Sql::Drop { .. }
    )
}

/// The target of an UPDATE or DELETE (`tables[0]`) with what the
/// statement reads of each table and the columns it assigns.
struct Target<'t> {
    kind: WriteKind,
    tables: &'t [TableRef],
    uses: &'t [ColumnUses],
    writes: BTreeSet<usize>,
    returning: &'t Option<Vec<SelectItem>>,
}

/// One write of an UPDATE or DELETE target, with what the lowering needs
/// to place it: the statement's reads of the target, the columns it
/// assigns, its INTO targets and RETURNING columns, and the node after it
/// (an abort idiom there keeps the Section 5.4 assumption).
pub(super) struct Write<'a> {
    pub(super) kind: WriteKind,
    pub(super) rel: RelId,
    pub(super) uses: &'a ColumnUses,
    pub(super) writes: BTreeSet<usize>,
    pub(super) snip: &'a Snippet,
    pub(super) into: &'a [String],
    pub(super) returning_cols: &'a [Option<usize>],
    pub(super) next: Option<&'a Node>,
}

/// Which tables of a SELECT its lock clause locks: FOR UPDATE every
/// table, FOR UPDATE OF t only those named; a FROM item that is no table
/// never (a clause with NOWAIT or SKIP LOCKED is not counted here).
fn locked_tables(q: &Query, tables: &[TableRef]) -> Vec<bool> {
    tables
        .iter()
        .map(|t| {
            t.virt.is_none()
                && q.locks
                    .iter()
                    .filter(|l| l.nonblock.is_none())
                    .any(|l| match &l.of {
                        None => true,
                        Some(name) => name.0.last().and_then(|p| p.as_ident()).is_some_and(|i| {
                            t.alias.as_deref().is_some_and(|a| same_name(a, i))
                                || same_name(&t.name, i)
                        }),
                    })
        })
        .collect()
}

/// The column references of an expression (`(qualifier, column)`).
fn expr_columns(e: &Expr) -> Vec<(Option<Ident>, Ident)> {
    let mut out = vec![];
    let _ = sqlparser::ast::visit_expressions(e, |x| {
        match x {
            Expr::Identifier(i) => out.push((None, i.clone())),
            Expr::CompoundIdentifier(v) if v.len() >= 2 => {
                out.push((Some(v[v.len() - 2].clone()), v[v.len() - 1].clone()))
            }
            _ => {}
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    out
}

/// Columns of earlier FROM items named by a later one (LATERAL, a
/// function's arguments): join columns of their tables, like correlation
/// columns of a subquery.
fn correlate(uses: &mut [ColumnUses], hits: &[(usize, usize)]) {
    for &(t, a) in hits {
        if let Some(u) = uses.get_mut(t) {
            u.pred.insert(a);
            u.join.insert(a);
        }
    }
}

/// Does the SELECT return fewer rows than its tables' reads match
/// (`Provenance::limited`)? `LIMIT n`/`FETCH FIRST`; an ungrouped list of
/// `min(c)`/`max(c)` only (one row, the extreme one); a `SELECT … INTO`
/// of no aggregate (PL/pgSQL keeps the first row). Aggregates such as
/// `count`/`sum` depend on every match: not limited.
fn limited_select(q: &Query, sel: &sqlparser::ast::Select, grouped: bool, into: bool) -> bool {
    use sqlparser::ast::LimitClause;
    let limit = match &q.limit_clause {
        Some(LimitClause::LimitOffset { limit, .. }) => limit.is_some(),
        Some(LimitClause::OffsetCommaLimit { .. }) => true,
        None => false,
    };
    let extreme = |item: &SelectItem| match item {
        SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
            matches!(strip_nested(e), Expr::Function(f)
                if matches!(f.name.to_string().to_lowercase().as_str(), "min" | "max"))
        }
        _ => false,
    };
    let extremes = !grouped && !sel.projection.is_empty() && sel.projection.iter().all(extreme);
    let first_row = into && !sel.projection.iter().any(has_aggregate);
    limit || q.fetch.is_some() || extremes || first_row
}

/// A plain column of `rel` (unqualified or qualified).
fn column_of(e: &Expr, rel: &crate::model::schema::Relation) -> Option<usize> {
    let i = match strip_nested(e) {
        Expr::Identifier(i) => i,
        Expr::CompoundIdentifier(v) => v.last()?,
        _ => return None,
    };
    rel.attributes.iter().position(|a| same_name(a, i))
}

/// A positive integer literal.
fn positive(e: &Expr) -> bool {
    matches!(strip_nested(e), Expr::Value(v)
        if matches!(&v.value, Value::Number(n, _) if n.parse::<u64>().is_ok_and(|n| n > 0)))
}

/// `c = c + n` (n a positive integer literal): the column bumped.
fn counter_bump(
    a: &sqlparser::ast::Assignment,
    rel: &crate::model::schema::Relation,
) -> Option<usize> {
    let target = assignment_columns(&a.target);
    let [t] = target.as_slice() else {
        return None;
    };
    let c = rel.attributes.iter().position(|x| same_name(x, t))?;
    match strip_nested(&a.value) {
        Expr::BinaryOp {
            left,
            op: sqlparser::ast::BinaryOperator::Plus,
            right,
        } if column_of(left, rel) == Some(c) && positive(right) => Some(c),
        _ => None,
    }
}

/// `c`, `c - k` or `c + k` (k an integer literal): the column.
fn counter_offset(e: &Expr, rel: &crate::model::schema::Relation) -> Option<usize> {
    use sqlparser::ast::BinaryOperator::{Minus, Plus};
    match strip_nested(e) {
        Expr::BinaryOp {
            left,
            op: Plus | Minus,
            right,
        } if positive(right) => column_of(left, rel),
        e => column_of(e, rel),
    }
}

/// The order of a limited single-table read when it is one primary-key
/// column (never NULL): `MIN(c)` ascending, `MAX(c)` descending, `ORDER BY
/// c [ASC|DESC] LIMIT …` (`Provenance::orders`).
fn select_order(
    q: &Query,
    sel: &sqlparser::ast::Select,
    rel: &crate::model::schema::Relation,
) -> Option<(usize, bool)> {
    use sqlparser::ast::{
        FunctionArg, FunctionArgExpr, FunctionArguments, OrderByKind, OrderBySort,
    };
    let key = |c: usize| rel.primary_key.contains(&c).then_some(c);
    if q.limit_clause.is_some() || q.fetch.is_some() {
        let OrderByKind::Expressions(v) = &q.order_by.as_ref()?.kind else {
            return None;
        };
        let [o] = v.as_slice() else {
            return None;
        };
        let desc = match &o.options.sort {
            None | Some(OrderBySort::Asc) => false,
            Some(OrderBySort::Desc) => true,
            Some(_) => return None,
        };
        return key(column_of(&o.expr, rel)?).map(|c| (c, desc));
    }
    let [SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. }] =
        sel.projection.as_slice()
    else {
        return None;
    };
    let Expr::Function(f) = strip_nested(e) else {
        return None;
    };
    let desc = match f.name.to_string().to_lowercase().as_str() {
        "min" => false,
        "max" => true,
        _ => return None,
    };
    let FunctionArguments::List(l) = &f.args else {
        return None;
    };
    match l.args.as_slice() {
        [FunctionArg::Unnamed(FunctionArgExpr::Expr(a))] if l.clauses.is_empty() => {
            key(column_of(a, rel)?).map(|c| (c, desc))
        }
        _ => None,
    }
}

/// A SET value that is never NULL though no constant: the current time
/// (`now()`, `CURRENT_TIMESTAMP`, …), `nextval(…)`, `gen_random_uuid()`
/// (`Provenance::not_null`).
fn never_null(e: &Expr) -> bool {
    match super::clauses::strip_nested(e) {
        Expr::Cast { expr, .. } => never_null(expr),
        Expr::Function(f) => {
            let name = f.name.to_string().to_ascii_lowercase();
            let name = name.trim_start_matches("pg_catalog.");
            matches!(
                name,
                "now"
                    | "current_timestamp"
                    | "current_date"
                    | "localtimestamp"
                    | "clock_timestamp"
                    | "statement_timestamp"
                    | "transaction_timestamp"
                    | "nextval"
                    | "gen_random_uuid"
            )
        }
        _ => false,
    }
}
