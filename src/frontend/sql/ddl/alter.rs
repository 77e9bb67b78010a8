//! ALTER TABLE, and the end of the reading: partitions and inheritance
//! children merged into their root relation, foreign keys resolved.

use super::*;
use crate::model::error::did_you_mean;
use crate::model::schema::{ForeignKey, Relation};
use pb::AlterTableType as A;

impl Reader<'_> {
    pub(super) fn alter_table(&mut self, a: &pb::AlterTableStmt, at: usize) -> Result<()> {
        use pb::ObjectType as O;
        match a.objtype() {
            O::ObjectTable => {}
            O::ObjectForeignTable => {
                return Err(self.reject(
                    at,
                    5,
                    "foreign tables are not modelled",
                    "a foreign table's rows live on another server",
                ))
            }
            // ALTER INDEX / SEQUENCE / VIEW / MATERIALIZED VIEW / TYPE:
            // storage, owners, defaults of views (which programs cannot
            // use), partitioned indexes.
            _ => return Ok(()),
        }
        let Some(rv) = a.relation.as_ref() else {
            return Ok(());
        };
        let Some(ti) = self.table(&rv.relname) else {
            // `ALTER TABLE` also names views and sequences (pg_dump writes
            // `ALTER TABLE v OWNER TO …` for them): no table data.
            if a.missing_ok || self.relations.contains(&rv.relname) {
                return Ok(());
            }
            return self
                .table_of(rv, "ALTER TABLE of", "create the table before altering it")
                .map(|_| ());
        };
        for c in &a.cmds {
            if let Some(NodeEnum::AlterTableCmd(c)) = c.node.as_ref() {
                self.alter_cmd(ti, c, at)?;
            }
        }
        Ok(())
    }

    fn alter_cmd(&mut self, ti: usize, c: &pb::AlterTableCmd, at: usize) -> Result<()> {
        let def = c.def.as_deref().and_then(|d| d.node.as_ref());
        match (c.subtype(), def) {
            (A::AtAddColumn | A::AtAddColumnRecurse, Some(NodeEnum::ColumnDef(cd))) => {
                self.column(ti, cd)?;
                // PostgreSQL adds it to the partitions and children too.
                let col = self.tables[ti].cols.last().cloned();
                for d in self.descendants(ti) {
                    if let Some(col) = &col {
                        if !self.tables[d].cols.iter().any(|(_, f)| f == &col.1) {
                            self.tables[d].cols.push(col.clone());
                        }
                    }
                }
            }
            (A::AtColumnDefault, Some(e)) => {
                let e = pb::Node {
                    node: Some(e.clone()),
                };
                self.check_columns(ti, std::slice::from_ref(&c.name), at)?;
                let u = self.expr(&e, at, "DEFAULT")?;
                for call in u.calls {
                    self.hooks
                        .push((ti, PendingHook::Default(c.name.clone()), call));
                }
            }
            (A::AtAddConstraint | A::AtAddConstraintRecurse, Some(NodeEnum::Constraint(k))) => {
                self.constraint(ti, k, None)?;
            }
            (A::AtAlterConstraint, Some(NodeEnum::Constraint(k))) => {
                // ALTER CONSTRAINT fk [NOT] DEFERRABLE [INITIALLY …].
                for f in self.fks.iter_mut().filter(|f| {
                    f.table == ti
                        && f.name
                            .as_deref()
                            .is_some_and(|n| n.eq_ignore_ascii_case(&k.conname))
                }) {
                    f.deferral = super::table::deferral(k.deferrable, k.initdeferred, &f.letters);
                }
            }
            (A::AtAlterColumnType, Some(NodeEnum::ColumnDef(cd))) => {
                let ty = cd
                    .type_name
                    .as_ref()
                    .map(|t| names(&t.names))
                    .and_then(|n| n.last().cloned());
                if ty.is_some_and(|t| {
                    self.domains
                        .iter()
                        .any(|d| d.name == t && (!d.checks.is_empty() || !d.default.is_empty()))
                }) {
                    return Err(self.reject(
                        at,
                        5,
                        "changing a column's type to a domain with function calls is not modelled",
                        "declare the column with the domain in CREATE TABLE",
                    ));
                }
            }
            (A::AtAddInherit, Some(NodeEnum::RangeVar(p))) => {
                let pi = self.table_of(p, "INHERIT of", "create the parent table first")?;
                self.tables[ti].parent = Some((pi, false));
            }
            (A::AtAttachPartition, Some(NodeEnum::PartitionCmd(pc))) => {
                if let Some(child) = pc.name.as_ref() {
                    let ci =
                        self.table_of(child, "ATTACH PARTITION of", "create the partition first")?;
                    self.tables[ci].parent = Some((ti, true));
                }
            }
            (
                A::AtDropColumn
                | A::AtDropColumnRecurse
                | A::AtDropConstraint
                | A::AtDropConstraintRecurse,
                _,
            ) => {
                return Err(self.reject(at, 5, "ALTER TABLE … DROP is not modelled", "give isolint the schema as it is after the file runs: leave out the dropped column or constraint"));
            }
            (s, _) if no_data_change(s) => {}
            (s, _) => {
                return Err(self.reject(
                    at,
                    5,
                    &format!("this ALTER TABLE form ({s:?}) is not modelled"),
                    "see docs/sql-frontend.md, \"Schema DDL: every clause\"",
                ));
            }
        }
        Ok(())
    }

    /// The partitions and children of `ti`, at any depth.
    fn descendants(&self, ti: usize) -> Vec<usize> {
        (0..self.tables.len())
            .filter(|&t| t != ti && self.root(t) != t && self.ancestors(t).contains(&ti))
            .collect()
    }

    fn ancestors(&self, mut t: usize) -> Vec<usize> {
        let mut out = vec![];
        while let Some((p, _)) = self.tables[t].parent {
            if out.contains(&p) || p == t {
                break;
            }
            out.push(p);
            t = p;
        }
        out
    }

    fn root(&self, t: usize) -> usize {
        self.ancestors(t).last().copied().unwrap_or(t)
    }

    /// Builds the schema: one relation per root table (a partition or an
    /// inheritance child is a relation of its root: its rows are the
    /// root's rows, docs/sql-frontend.md "Inheritance and partitions").
    pub(super) fn finish(self) -> Result<Ddl> {
        self.no_schema_function_per_row()?;
        let roots: Vec<usize> = (0..self.tables.len())
            .filter(|&t| self.root(t) == t)
            .collect();
        let rel_of = |t: usize| roots.iter().position(|&r| r == self.root(t)).unwrap_or(0);
        let (relations, folded) = self.merged_relations(&roots);
        let mut extras = self.extras(&folded, &rel_of);
        let mut schema = Schema {
            relations,
            foreign_keys: vec![],
        };
        let mut fk_actions = vec![];
        for p in &self.fks {
            let fk = self.resolve(p, &schema, &folded, &rel_of)?;
            schema.foreign_keys.push(fk);
            fk_actions.push(p.actions);
            extras.deferred.push(p.deferral);
        }
        Ok(Ddl {
            schema,
            functions: self.functions,
            fk_actions,
            views: self.views,
            extras,
        })
    }

    /// A function of the schema where PostgreSQL runs it for every row
    /// written and trusts it to be IMMUTABLE (generated columns, index
    /// expressions): an error.
    fn no_schema_function_per_row(&self) -> Result<()> {
        for (call, what) in &self.immutable_calls {
            let name = call.name.last().map_or("", String::as_str);
            let user = self
                .functions
                .iter()
                .any(|f| f.name == name && f.language != "c" && f.language != "internal");
            if user {
                return Err(self.reject(
                    call.at,
                    name.len().max(1),
                    &format!("a function of the schema in {what} is not modelled"),
                    "PostgreSQL runs it for every row written and does not verify that it reads no table; compute the value in the statements, or use built-ins",
                ));
            }
        }
        Ok(())
    }

    /// Per root table its relation (columns of its descendants merged in)
    /// and its columns' folded names.
    fn merged_relations(&self, roots: &[usize]) -> (Vec<Relation>, Vec<Vec<String>>) {
        let mut relations: Vec<Relation> = vec![];
        let mut folded: Vec<Vec<String>> = vec![];
        for &r in roots {
            let mut cols = self.tables[r].cols.clone();
            for d in self.descendants(r) {
                for c in &self.tables[d].cols {
                    if !cols.iter().any(|(_, f)| f == &c.1) {
                        cols.push(c.clone());
                    }
                }
            }
            // Keys of a root with inheritance children hold for the root's
            // own rows only: no key. A partitioned root's keys span its
            // partitions (PostgreSQL requires the partition key in them).
            let inherited = self
                .descendants(r)
                .iter()
                .any(|&d| self.tables[d].parent.is_some_and(|(_, part)| !part));
            let idx = |names: &[String]| -> Vec<usize> {
                names
                    .iter()
                    .filter_map(|n| cols.iter().position(|(_, f)| f == n))
                    .collect()
            };
            let t = &self.tables[r];
            relations.push(Relation {
                name: t.name.clone(),
                attributes: cols.iter().map(|(w, _)| w.clone()).collect(),
                primary_key: if inherited { vec![] } else { idx(&t.pk) },
                unique_keys: if inherited {
                    vec![]
                } else {
                    t.uniques.iter().map(|u| idx(u)).collect()
                },
            });
            folded.push(cols.into_iter().map(|(_, f)| f).collect());
        }
        (relations, folded)
    }

    /// What the schema adds beyond relations and keys: hooks (CHECK,
    /// DEFAULT, domains), generated columns, conflict checks, the names of
    /// partitions and children (with a warning each), triggers.
    fn extras(&self, folded: &[Vec<String>], rel_of: &dyn Fn(usize) -> usize) -> Extras {
        let col = |t: usize, name: &str| folded[rel_of(t)].iter().position(|f| f == name);
        let mut extras = Extras {
            file: Some(self.file.clone()),
            ..Extras::default()
        };
        for (t, kind, call) in &self.hooks {
            let columns = match kind {
                PendingHook::Check(cs) => cs.iter().filter_map(|c| col(*t, c)).collect(),
                _ => vec![],
            };
            let kind = match kind {
                PendingHook::Check(_) => Some(HookKind::Check),
                PendingHook::Default(c) => col(*t, c).map(HookKind::Default),
                PendingHook::Domain(c) => col(*t, c).map(HookKind::Domain),
            };
            if let Some(kind) = kind {
                extras.hooks.push(Hook {
                    rel: rel_of(*t),
                    kind,
                    call: call.clone(),
                    columns,
                });
            }
        }
        for (t, g, inputs) in &self.generated {
            if let Some(column) = col(*t, g) {
                extras.generated.push(Generated {
                    rel: rel_of(*t),
                    column,
                    inputs: inputs.iter().filter_map(|i| col(*t, i)).collect(),
                });
            }
        }
        for (t, cols) in &self.conflicts {
            let mut v: Vec<usize> = cols.iter().filter_map(|c| col(*t, c)).collect();
            v.sort_unstable();
            v.dedup();
            extras.conflict_checks.push((rel_of(*t), v));
        }
        for t in 0..self.tables.len() {
            let r = self.root(t);
            if r != t {
                let (name, root) = (&self.tables[t].name, &self.tables[r].name);
                extras.aliases.push((name.clone(), rel_of(t)));
                let what = match self.tables[t].parent {
                    Some((_, true)) => "a partition",
                    _ => "an inheritance child",
                };
                extras.warnings.push(crate::model::error::Warning {
                    file: self.file.name.clone(),
                    line: self.file.line_col(self.tables[t].at).0,
                    message: format!("`{name}` is {what} of `{root}`: its rows are analysed as rows of `{root}` (statements on different partitions or children are taken to conflict where their columns meet)"),
                });
            }
        }
        for (t, name, at) in &self.triggers {
            let line = self.file.line_col(*at).0;
            extras.triggers.push((rel_of(*t), name.clone(), line));
        }
        extras
    }

    /// A foreign key's referenced table and columns (its primary key when
    /// none are listed), its name made unique.
    fn resolve(
        &self,
        p: &PendingFk,
        schema: &Schema,
        folded: &[Vec<String>],
        rel_of: &dyn Fn(usize) -> usize,
    ) -> Result<ForeignKey> {
        let domain = rel_of(p.table);
        let dom = &schema.relations[domain];
        let Some(tt) = self.table(&p.target) else {
            let written =
                written_name(&self.file.text, p.target_at).unwrap_or_else(|| p.target.clone());
            let known: Vec<&str> = self.tables.iter().map(|t| t.name.as_str()).collect();
            return Err(Diag::new(format!(
                "foreign key of `{}` references unknown table `{written}`",
                dom.name
            ))
            .help(
                did_you_mean(&written, known)
                    .unwrap_or_else(|| "declare the referenced table in the schema".into()),
            )
            .at(
                self.file,
                p.target_at,
                written.len().max(1),
                "unknown table",
            ));
        };
        let range = rel_of(tt);
        let find = |rel: usize, names: &[String]| -> Result<Vec<usize>> {
            names
                .iter()
                .map(|n| {
                    folded[rel].iter().position(|f| f == n).ok_or_else(|| {
                        let r = &schema.relations[rel];
                        Diag::new(format!("table `{}` has no column `{n}`", r.name))
                            .help(
                                did_you_mean(n, r.attributes.iter().map(String::as_str))
                                    .unwrap_or_else(|| {
                                        format!("its columns are: {}", r.attributes.join(", "))
                                    }),
                            )
                            .at(self.file, p.at, 1, "unknown column")
                    })
                })
                .collect()
        };
        let dcols = find(domain, &p.columns)?;
        let referred = if p.referred.is_empty() {
            self.tables[tt].pk.clone()
        } else {
            p.referred.clone()
        };
        let rcols = find(range, &referred)?;
        let rrel = &schema.relations[range];
        if rcols.len() != dcols.len() {
            return Err(Diag::new(format!(
                "foreign key of `{}` has {} column(s) but references {} column(s) of `{}`",
                dom.name,
                dcols.len(),
                rcols.len(),
                rrel.name
            ))
            .help("list the referenced columns, or give the referenced table a PRIMARY KEY")
            .at(self.file, p.target_at, p.target.len().max(1), "here"));
        }
        let base = p
            .name
            .clone()
            .unwrap_or_else(|| format!("fk_{}_{}", dom.name, rrel.name));
        let mut name = base.clone();
        let mut k = 2;
        while schema.foreign_keys.iter().any(|f| f.name == name) {
            name = format!("{base}_{k}");
            k += 1;
        }
        Ok(ForeignKey {
            name,
            domain,
            range,
            columns: dcols.into_iter().zip(rcols).collect(),
        })
    }
}

/// ALTER TABLE forms that change neither columns, keys, foreign keys nor
/// what a statement reads or writes (docs/sql-frontend.md lists them).
fn no_data_change(s: A) -> bool {
    matches!(
        s,
        A::AtDropNotNull
            | A::AtSetNotNull
            | A::AtCheckNotNull
            | A::AtDropExpression
            | A::AtSetStatistics
            | A::AtSetOptions
            | A::AtResetOptions
            | A::AtSetStorage
            | A::AtSetCompression
            | A::AtColumnDefault
            | A::AtValidateConstraint
            | A::AtValidateConstraintRecurse
            | A::AtAlterColumnGenericOptions
            | A::AtChangeOwner
            | A::AtClusterOn
            | A::AtDropCluster
            | A::AtSetLogged
            | A::AtSetUnLogged
            | A::AtDropOids
            | A::AtSetAccessMethod
            | A::AtSetTableSpace
            | A::AtSetRelOptions
            | A::AtResetRelOptions
            | A::AtReplaceRelOptions
            | A::AtEnableTrig
            | A::AtEnableAlwaysTrig
            | A::AtEnableReplicaTrig
            | A::AtDisableTrig
            | A::AtEnableTrigAll
            | A::AtDisableTrigAll
            | A::AtEnableTrigUser
            | A::AtDisableTrigUser
            | A::AtEnableRule
            | A::AtEnableAlwaysRule
            | A::AtEnableReplicaRule
            | A::AtDisableRule
            | A::AtDropInherit
            | A::AtAddOf
            | A::AtDropOf
            | A::AtReplicaIdentity
            | A::AtEnableRowSecurity
            | A::AtDisableRowSecurity
            | A::AtForceRowSecurity
            | A::AtNoForceRowSecurity
            | A::AtGenericOptions
            | A::AtDetachPartition
            | A::AtDetachPartitionFinalize
            | A::AtAddIdentity
            | A::AtSetIdentity
            | A::AtDropIdentity
    )
}
