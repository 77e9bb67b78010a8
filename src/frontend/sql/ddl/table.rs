//! CREATE TABLE, ALTER TABLE, CREATE INDEX and CREATE DOMAIN on
//! PostgreSQL's parse tree, and the end of the reading: inheritance and
//! partitions merged into their roots, foreign keys resolved.

use super::*;
use crate::model::error::did_you_mean;
use pb::ConstrType as C;

impl Reader<'_> {
    pub(super) fn create_table(&mut self, c: &pb::CreateStmt, at: usize) -> Result<()> {
        let Some(rv) = c.relation.as_ref() else {
            return Ok(());
        };
        let name = self.written(rv);
        if c.of_typename.is_some() {
            return Err(self.reject(
                loc(rv.location),
                name.len(),
                "CREATE TABLE … OF type is not modelled",
                "list the table's columns",
            ));
        }
        if let Some(t) = self.table(&rv.relname) {
            if c.if_not_exists {
                return Ok(());
            }
            let _ = t;
            return Err(Diag::new(format!("table `{name}` is defined twice")).at(
                self.file,
                loc(rv.location),
                name.len(),
                "second definition",
            ));
        }
        // INHERITS (…) or PARTITION OF: the parent's columns first.
        let mut parent = None;
        if c.inh_relations.len() > 1 {
            return Err(self.reject(
                at,
                6,
                "multiple inheritance is not modelled",
                "inherit from one table",
            ));
        }
        for p in &c.inh_relations {
            if let Some(NodeEnum::RangeVar(prv)) = p.node.as_ref() {
                let pi = self.table_of(prv, "parent", "create the parent table first")?;
                parent = Some((pi, c.partbound.is_some()));
            }
        }
        let ti = self.tables.len();
        let cols = parent.map_or(vec![], |(p, _)| self.tables[p].cols.clone());
        self.tables.push(Table {
            name,
            at,
            folded: rv.relname.clone(),
            cols,
            pk: vec![],
            uniques: vec![],
            parent,
        });
        for e in &c.table_elts {
            match e.node.as_ref() {
                Some(NodeEnum::ColumnDef(cd)) => self.column(ti, cd)?,
                Some(NodeEnum::Constraint(k)) => self.constraint(ti, k, None)?,
                Some(NodeEnum::TableLikeClause(_)) => {
                    return Err(self.reject(
                        at,
                        6,
                        "CREATE TABLE … (LIKE …) is not modelled",
                        "list the table's columns",
                    ))
                }
                _ => {}
            }
        }
        for k in &c.constraints {
            if let Some(NodeEnum::Constraint(k)) = k.node.as_ref() {
                self.constraint(ti, k, None)?;
            }
        }
        Ok(())
    }

    /// A column definition (or ADD COLUMN) and its column constraints. A
    /// column a partition or child repeats from its parent only adds
    /// constraints.
    pub(super) fn column(&mut self, ti: usize, cd: &pb::ColumnDef) -> Result<()> {
        let written = written_name(&self.file.text, loc(cd.location))
            .filter(|w| w.eq_ignore_ascii_case(&cd.colname))
            .unwrap_or_else(|| cd.colname.clone());
        if !self.tables[ti].cols.iter().any(|(_, f)| f == &cd.colname) {
            self.tables[ti].cols.push((written, cd.colname.clone()));
        }
        let col = cd.colname.clone();
        // A domain's CHECKs and DEFAULT apply to its columns.
        let ty = cd.type_name.as_ref().map(|t| names(&t.names));
        if let Some(d) = ty
            .and_then(|n| n.last().cloned())
            .and_then(|n| self.domains.iter().find(|d| d.name == n))
        {
            let checks = d.checks.clone();
            let default = d.default.clone();
            for call in checks {
                self.hooks
                    .push((ti, PendingHook::Domain(col.clone()), call));
            }
            let has_default = cd.raw_default.is_some()
                || cd.constraints.iter().any(|k| {
                    matches!(k.node.as_ref(), Some(NodeEnum::Constraint(k)) if k.contype() == C::ConstrDefault)
                });
            if !has_default {
                for call in default {
                    self.hooks
                        .push((ti, PendingHook::Default(col.clone()), call));
                }
            }
        }
        if let Some(d) = &cd.raw_default {
            self.default(ti, &col, d, loc(cd.location))?;
        }
        let mut last_fk: Option<usize> = None;
        for k in &cd.constraints {
            let Some(NodeEnum::Constraint(k)) = k.node.as_ref() else {
                continue;
            };
            // DEFERRABLE / INITIALLY DEFERRED after a REFERENCES clause of
            // a column are nodes of their own (PostgreSQL folds them into
            // the constraint before it).
            match k.contype() {
                C::ConstrAttrDeferred
                | C::ConstrAttrImmediate
                | C::ConstrAttrDeferrable
                | C::ConstrAttrNotDeferrable => {
                    if let Some(f) = last_fk {
                        let d = &mut self.fks[f].deferral;
                        match k.contype() {
                            C::ConstrAttrDeferred => {
                                d.deferrable = true;
                                d.initially_deferred = true;
                            }
                            C::ConstrAttrImmediate => d.initially_deferred = false,
                            C::ConstrAttrDeferrable => d.deferrable = true,
                            _ => {
                                d.deferrable = false;
                                d.initially_deferred = false;
                            }
                        }
                    }
                    continue;
                }
                _ => {}
            }
            let before = self.fks.len();
            self.constraint(ti, k, Some(&col))?;
            last_fk = (self.fks.len() > before).then_some(before).or(last_fk);
        }
        Ok(())
    }

    /// A column's DEFAULT expression: its function calls run on INSERT.
    fn default(&mut self, ti: usize, col: &str, e: &pb::Node, at: usize) -> Result<()> {
        let u = self.expr(e, at, "DEFAULT")?;
        for call in u.calls {
            self.hooks
                .push((ti, PendingHook::Default(col.to_string()), call));
        }
        Ok(())
    }

    /// The uses of a schema expression; a subquery or a node kind the walk
    /// does not know is an error at `at`.
    pub(super) fn expr(&self, e: &pb::Node, at: usize, what: &str) -> Result<ExprUses> {
        let u = ExprUses::of(e);
        if let Some(s) = u.subquery {
            return Err(self.reject(
                s,
                1,
                &format!("subquery in a {what} expression"),
                "PostgreSQL does not allow one here",
            ));
        }
        if let Some((kind, _)) = &u.unknown {
            return Err(self.reject(
                at,
                1,
                &format!("isolint cannot read this {what} expression ({kind})"),
                "simplify the expression, or move it into a function of the schema",
            ));
        }
        Ok(u)
    }

    /// One constraint of table `ti` (`col`: of this column).
    pub(super) fn constraint(
        &mut self,
        ti: usize,
        k: &pb::Constraint,
        col: Option<&str>,
    ) -> Result<()> {
        let at = loc(k.location);
        let keys = |v: &[pb::Node]| -> Vec<String> {
            if v.is_empty() {
                col.map(|c| vec![c.to_string()]).unwrap_or_default()
            } else {
                names(v)
            }
        };
        // A partition's or child's own keys are not keys of the merged
        // relation (see `finish`).
        let own_keys = self.tables[ti].parent.is_none();
        match k.contype() {
            C::ConstrNull | C::ConstrNotnull | C::ConstrIdentity => {}
            C::ConstrDefault => {
                if let (Some(c), Some(e)) = (col, &k.raw_expr) {
                    self.default(ti, c, e, at)?;
                }
            }
            C::ConstrCheck => {
                if let Some(e) = &k.raw_expr {
                    let u = self.expr(e, at, "CHECK")?;
                    self.check_columns(ti, &u.columns, at)?;
                    for call in u.calls {
                        self.hooks
                            .push((ti, PendingHook::Check(u.columns.clone()), call));
                    }
                }
            }
            C::ConstrGenerated => {
                let (Some(c), Some(e)) = (col, &k.raw_expr) else {
                    return Ok(());
                };
                let u = self.expr(e, at, "GENERATED")?;
                self.immutable_calls
                    .extend(u.calls.iter().map(|c| (c.clone(), "a generated column")));
                self.check_columns(ti, &u.columns, at)?;
                self.generated.push((ti, c.to_string(), u.columns));
            }
            C::ConstrPrimary | C::ConstrUnique => {
                let mut cols = keys(&k.keys);
                if !k.indexname.is_empty() {
                    match self
                        .indexes
                        .iter()
                        .find(|(n, t, _)| n == &k.indexname && *t == ti)
                    {
                        Some((_, _, c)) => cols = c.clone(),
                        None => {
                            return Err(self.reject(
                                at,
                                10,
                                &format!("USING INDEX of unknown unique index `{}`", k.indexname),
                                "create the unique index on this table before the constraint",
                            ))
                        }
                    }
                }
                self.check_columns(ti, &cols, at)?;
                if !own_keys {
                } else if k.contype() == C::ConstrPrimary {
                    self.tables[ti].pk = cols;
                } else {
                    self.tables[ti].uniques.push(cols);
                }
            }
            C::ConstrExclusion => {
                // Two rows conflict when the operators say so: an INSERT
                // that may fail on it reads the other rows' values.
                let mut cols = vec![];
                for x in &k.exclusions {
                    if let Some(NodeEnum::List(l)) = x.node.as_ref() {
                        if let Some(NodeEnum::IndexElem(ie)) =
                            l.items.first().and_then(|n| n.node.as_ref())
                        {
                            cols.extend(self.index_elem_columns(ie, at)?);
                        }
                    }
                }
                if let Some(w) = &k.where_clause {
                    cols.extend(self.index_expr(w, at, "index WHERE")?);
                }
                self.check_columns(ti, &cols, at)?;
                self.conflicts.push((ti, cols));
            }
            C::ConstrForeign => self.foreign_key(ti, k, col)?,
            C::ConstrAttrDeferrable
            | C::ConstrAttrNotDeferrable
            | C::ConstrAttrDeferred
            | C::ConstrAttrImmediate => {}
            C::Undefined => return Err(self.reject(at, 1, "unknown constraint", "")),
        }
        Ok(())
    }

    fn foreign_key(&mut self, ti: usize, k: &pb::Constraint, col: Option<&str>) -> Result<()> {
        let at = loc(k.location);
        let Some(target) = k.pktable.as_ref() else {
            return Ok(());
        };
        if k.fk_matchtype == "p" {
            // MATCH PARTIAL is not implemented by PostgreSQL either.
            return Err(self.reject(
                at,
                10,
                "MATCH PARTIAL is not modelled",
                "PostgreSQL does not implement MATCH PARTIAL",
            ));
        }
        if !k.fk_del_set_cols.is_empty() {
            return Err(self.reject(
                at,
                10,
                "ON DELETE SET NULL / SET DEFAULT with a column list is not modelled",
                "set all the foreign key's columns",
            ));
        }
        let columns = if k.fk_attrs.is_empty() {
            col.map(|c| vec![c.to_string()]).unwrap_or_default()
        } else {
            names(&k.fk_attrs)
        };
        self.check_columns(ti, &columns, at)?;
        let letters = [k.fk_del_action.clone(), k.fk_upd_action.clone()];
        let letters2 = letters.clone();
        self.fks.push(PendingFk {
            name: (!k.conname.is_empty()).then(|| {
                written_name(&self.file.text, self.conname_at(at))
                    .filter(|w| w.eq_ignore_ascii_case(&k.conname))
                    .unwrap_or_else(|| k.conname.clone())
            }),
            table: ti,
            columns,
            target: target.relname.clone(),
            target_at: loc(target.location),
            referred: names(&k.pk_attrs),
            actions: (
                FkAction::of(&k.fk_del_action),
                FkAction::of(&k.fk_upd_action),
            ),
            letters,
            deferral: deferral(k.deferrable, k.initdeferred, &letters2),
            at,
        });
        Ok(())
    }

    /// Where a constraint's name is written (after `CONSTRAINT`).
    fn conname_at(&self, at: usize) -> usize {
        let t = &self.file.text;
        if t.get(at..at + 10)
            .is_some_and(|w| w.eq_ignore_ascii_case("constraint"))
        {
            skip_blank(t, at + 10)
        } else {
            at
        }
    }

    /// Every name in `cols` is a column of table `ti`.
    pub(super) fn check_columns(&self, ti: usize, cols: &[String], at: usize) -> Result<()> {
        let t = &self.tables[ti];
        for c in cols {
            if !t.cols.iter().any(|(_, f)| f == c) {
                let known: Vec<&str> = t.cols.iter().map(|(w, _)| w.as_str()).collect();
                return Err(Diag::new(format!("table `{}` has no column `{c}`", t.name))
                    .help(
                        did_you_mean(c, known.iter().copied())
                            .unwrap_or_else(|| format!("its columns are: {}", known.join(", "))),
                    )
                    .at(self.file, at, 1, "unknown column"));
            }
        }
        Ok(())
    }

    fn index_elem_columns(&mut self, ie: &pb::IndexElem, at: usize) -> Result<Vec<String>> {
        Ok(if !ie.name.is_empty() {
            vec![ie.name.clone()]
        } else if let Some(e) = &ie.expr {
            self.index_expr(e, at, "index")?
        } else {
            vec![]
        })
    }

    /// The columns of an index expression or predicate. PostgreSQL
    /// evaluates it for every row written; its calls are checked in
    /// `finish` (`immutable_calls`).
    fn index_expr(&mut self, e: &pb::Node, at: usize, what: &str) -> Result<Vec<String>> {
        let u = self.expr(e, at, what)?;
        self.immutable_calls
            .extend(u.calls.iter().map(|c| (c.clone(), "an index expression")));
        Ok(u.columns)
    }

    /// CREATE INDEX: a plain UNIQUE index on columns is a unique key; a
    /// partial or expression one is not, and an INSERT that may fail on it
    /// observes other rows (a conflict check). Other indexes change no
    /// data.
    pub(super) fn index(&mut self, i: &pb::IndexStmt, at: usize) -> Result<()> {
        let Some(rv) = i.relation.as_ref() else {
            return Ok(());
        };
        let ti = self.table_of(rv, "index on", "create the table before its indexes")?;
        let mut cols = vec![];
        let mut plain = i.where_clause.is_none();
        for p in &i.index_params {
            if let Some(NodeEnum::IndexElem(ie)) = p.node.as_ref() {
                plain &= !ie.name.is_empty();
                cols.extend(self.index_elem_columns(ie, at)?);
            }
        }
        if let Some(w) = &i.where_clause {
            cols.extend(self.index_expr(w, at, "index WHERE")?);
        }
        self.check_columns(ti, &cols, at)?;
        if !i.unique {
            return Ok(());
        }
        if plain {
            if self.tables[ti].parent.is_none() {
                self.tables[ti].uniques.push(cols.clone());
            }
            self.indexes.push((i.idxname.clone(), ti, cols));
        } else {
            self.conflicts.push((ti, cols));
        }
        Ok(())
    }

    /// CREATE DOMAIN: calls in its CHECKs and DEFAULT, applied to the
    /// columns declared with it afterwards.
    pub(super) fn domain(&mut self, d: &pb::CreateDomainStmt, at: usize) -> Result<()> {
        let mut dom = Domain {
            name: names(&d.domainname).pop().unwrap_or_default(),
            checks: vec![],
            default: vec![],
        };
        for k in &d.constraints {
            let Some(NodeEnum::Constraint(k)) = k.node.as_ref() else {
                continue;
            };
            let Some(e) = &k.raw_expr else { continue };
            match k.contype() {
                C::ConstrCheck => dom
                    .checks
                    .extend(self.expr(e, loc(k.location), "CHECK")?.calls),
                C::ConstrDefault => dom.default.extend(self.expr(e, at, "DEFAULT")?.calls),
                _ => {}
            }
        }
        // A domain over a domain has its base's constraints too.
        let base = d
            .type_name
            .as_ref()
            .map(|t| names(&t.names))
            .and_then(|n| n.last().cloned());
        if let Some(b) = base.and_then(|b| self.domains.iter().find(|x| x.name == b)) {
            dom.checks.extend(b.checks.clone());
            if dom.default.is_empty() {
                dom.default = b.default.clone();
            }
        }
        self.domains.push(dom);
        Ok(())
    }

    /// ALTER DOMAIN: a CHECK added to a domain already used by columns
    /// would need those columns found again: rejected; other forms change
    /// no data (SET DEFAULT likewise rejected when it calls a function).
    pub(super) fn alter_domain(&mut self, d: &pb::AlterDomainStmt, at: usize) -> Result<()> {
        let calls = match &d.def {
            Some(e) => match e.node.as_ref() {
                Some(NodeEnum::Constraint(k)) => k
                    .raw_expr
                    .as_ref()
                    .map(|x| ExprUses::of(x).calls)
                    .unwrap_or_default(),
                _ => ExprUses::of(e).calls,
            },
            None => vec![],
        };
        if calls.iter().any(|c| !is_pure_builtin(c)) {
            return Err(self.reject(
                at,
                12,
                "ALTER DOMAIN with a function call is not modelled",
                "put the CHECK or DEFAULT into CREATE DOMAIN",
            ));
        }
        Ok(())
    }
}

/// Built-ins that read no table, for positions where isolint does not
/// inline calls (generated columns, ALTER DOMAIN).
fn is_pure_builtin(c: &Call) -> bool {
    let n = c.name.last().map_or("", String::as_str);
    c.name.first().is_some_and(|s| s == "pg_catalog") || crate::frontend::lower::is_builtin(n)
}

/// A foreign key's deferral from its clauses (`letters`: PostgreSQL's ON
/// DELETE and ON UPDATE action letters; `r` is RESTRICT).
pub(super) fn deferral(deferrable: bool, initdeferred: bool, letters: &[String; 2]) -> Deferral {
    Deferral {
        deferrable: deferrable || initdeferred,
        initially_deferred: initdeferred,
        restrict_on_delete: letters[0] == "r",
        restrict_on_update: letters[1] == "r",
    }
}
