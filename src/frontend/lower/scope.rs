//! Name resolution: tables of a statement (FROM, joins, targets) and their
//! columns, with correlation to enclosing statements.

use super::vocab::TableRef;
use super::{find_rel, Lowerer};
use crate::frontend::sql::{same_name, Snippet};
use crate::model::error::{did_you_mean, Diag, Result};
use crate::model::schema::RelId;
use sqlparser::ast::{Expr, Ident, TableFactor};

impl Lowerer<'_> {
    pub(super) fn rel_by_ident(&self, ident: &Ident, snip: &Snippet) -> Result<RelId> {
        find_rel(self.cat.schema, &self.cat.extras.aliases, ident).ok_or_else(|| {
            let at = snip.file_offset(ident.span.start.line, ident.span.start.column);
            if self.cat.views.iter().any(|v| same_name(v, ident)) {
                return Diag::new(format!("`{}` is a view", ident.value))
                    .help("isolint does not expand views: name the view's tables in the statement")
                    .at(&self.src.file, at, ident.value.len(), "view");
            }
            Diag::new(format!("unknown table `{}`", ident.value))
                .help(
                    did_you_mean(
                        &ident.value,
                        self.cat.schema.relations.iter().map(|r| r.name.as_str()),
                    )
                    .unwrap_or_else(|| {
                        "the schema does not define it; check the schema file given to isolint"
                            .into()
                    }),
                )
                .at(&self.src.file, at, ident.value.len(), "unknown table")
        })
    }

    /// The table a FROM name means: a CTE in scope (innermost first), else
    /// the schema's table.
    pub(super) fn cte_or_rel(&self, ident: &Ident) -> Option<RelId> {
        match self
            .sql
            .ctes
            .iter()
            .rev()
            .find(|c| same_name(&c.name.value, ident))
        {
            Some(c) => c.rel,
            None => find_rel(self.cat.schema, &self.cat.extras.aliases, ident),
        }
    }

    /// A FROM item: a CTE in scope or a table.
    pub(super) fn source_table(&self, f: &TableFactor, snip: &Snippet) -> Result<TableRef> {
        self.no_alias_columns(f, snip)?;
        if let TableFactor::Table { name, alias, .. } = f {
            if let [part] = name.0.as_slice() {
                if let Some(ident) = part.as_ident() {
                    if let Some(c) = self
                        .sql
                        .ctes
                        .iter()
                        .rev()
                        .find(|c| same_name(&c.name.value, ident))
                    {
                        let at = snip.file_offset(ident.span.start.line, ident.span.start.column);
                        let Some(rel) = c.rel.filter(|_| !c.renamed) else {
                            return Err(Diag::new(format!("reading the CTE `{}` by name is not supported", ident.value))
                                .help("isolint resolves a CTE's columns through the one table it selects from or writes (without a column list); read the tables directly")
                                .at(&self.src.file, at, ident.value.len(), "CTE"));
                        };
                        return Ok(TableRef {
                            rel,
                            name: ident.value.clone(),
                            alias: alias.as_ref().map(|a| a.name.value.clone()),
                            pseudo: false,
                            cte: true,
                            virt: None,
                        });
                    }
                }
            }
        }
        self.table_ref(f, snip)
    }

    /// `FROM t AS s(a, b)` renames t's columns by position: `s.a` is t's
    /// first column. Resolving `s.a` as t's column `a` would model the
    /// wrong columns, so such an alias is refused.
    fn no_alias_columns(&self, f: &TableFactor, snip: &Snippet) -> Result<()> {
        if let TableFactor::Table { alias: Some(a), .. } = f {
            if let Some(c) = a.columns.first() {
                let at = snip.file_offset(c.name.span.start.line, c.name.span.start.column);
                return Err(Diag::new(format!(
                    "the column list of alias `{}` (columns renamed by position) is not supported",
                    a.name.value
                ))
                .help("drop the column list and use the table's own column names")
                .at(
                    &self.src.file,
                    at,
                    c.name.value.len().max(1),
                    "renamed column",
                ));
            }
        }
        Ok(())
    }

    pub(super) fn table_ref(&self, f: &TableFactor, snip: &Snippet) -> Result<TableRef> {
        self.no_alias_columns(f, snip)?;
        match f {
            TableFactor::Table { name, alias, .. } => {
                let Some(ident) = name.0.last().and_then(|p| p.as_ident()) else {
                    return Err(self.unsupported(snip, "this FROM item", "name a table"));
                };
                let rel = self.rel_by_ident(ident, snip)?;
                Ok(TableRef {
                    rel,
                    name: ident.value.clone(),
                    alias: alias.as_ref().map(|a| a.name.value.clone()),
                    pseudo: false,
                    cte: false,
                    virt: None,
                })
            }
            _ => Err(self.unsupported(
                snip,
                "a subquery, function or nested join in FROM",
                "name tables directly in FROM",
            )),
        }
    }

    /// Resolve a column to (table index, attribute index).
    pub(super) fn column(
        &self,
        tables: &[TableRef],
        qualifier: Option<&Ident>,
        col: &Ident,
        snip: &Snippet,
    ) -> Result<(usize, usize)> {
        let at = snip.file_offset(col.span.start.line, col.span.start.column);
        let candidates: Vec<usize> = match qualifier {
            Some(q) => tables
                .iter()
                .enumerate()
                .filter(|(_, t)| {
                    // An aliased table is known by its alias only (as in
                    // PostgreSQL: `FROM t0 s` hides `t0`); a CTE by its
                    // own name, not by the table its rows come from.
                    t.alias.as_deref().is_some_and(|a| same_name(a, q))
                        || !t.pseudo
                            && t.alias.is_none()
                            && (same_name(&t.name, q)
                                || !t.cte
                                    && t.virt.is_none()
                                    && same_name(&self.cat.schema.rel(t.rel).name, q))
                })
                .map(|(i, _)| i)
                .collect(),
            None => (0..tables.len()).filter(|&i| !tables[i].pseudo).collect(),
        };
        if qualifier.is_some() && candidates.is_empty() {
            let q = qualifier.map(|q| q.value.clone()).unwrap_or_default();
            let qat = qualifier.map_or(at, |q| {
                snip.file_offset(q.span.start.line, q.span.start.column)
            });
            return Err(
                Diag::new(format!("`{q}` is not a table or alias of this statement"))
                    .help("qualify columns with a table name or alias from this statement's FROM; correlated subqueries (naming an outer table) are not supported: rewrite them as a join")
                    .at(&self.src.file, qat, q.len(), "unknown qualifier"),
            );
        }
        let mut found = vec![];
        for &ti in &candidates {
            match tables[ti].virt.as_ref().map(|v| &v.cols) {
                None => {
                    let r = self.cat.schema.rel(tables[ti].rel);
                    if let Some(c) = r.attributes.iter().position(|a| same_name(a, col)) {
                        found.push((ti, c));
                    }
                }
                Some(Some(cols)) => {
                    if let Some(c) = cols.iter().position(|a| same_name(a, col)) {
                        found.push((ti, c));
                    }
                }
                // Columns unknown: a qualified name is one of them; an
                // unqualified one only as the last resort (`resolve_column`).
                Some(None) if qualifier.is_some() => found.push((ti, 0)),
                Some(None) => {}
            }
        }
        let candidates: Vec<usize> = candidates
            .into_iter()
            .filter(|&ti| tables[ti].virt.is_none())
            .collect();
        match found.len() {
            1 => Ok(found[0]),
            0 => {
                let names: Vec<&str> = candidates
                    .iter()
                    .flat_map(|&ti| {
                        self.cat
                            .schema
                            .rel(tables[ti].rel)
                            .attributes
                            .iter()
                            .map(String::as_str)
                    })
                    .collect();
                let mut tabs: Vec<&str> = candidates
                    .iter()
                    .map(|&ti| self.cat.schema.rel(tables[ti].rel).name.as_str())
                    .collect();
                // A FROM item that is no table, named by the qualifier.
                if tabs.is_empty() {
                    tabs.extend(qualifier.map(|q| q.value.as_str()));
                }
                Err(Diag::new(format!(
                    "unknown column `{}` in {}",
                    col.value,
                    tabs.join(", ")
                ))
                .help(
                    did_you_mean(&col.value, names.iter().copied())
                        .unwrap_or_else(|| "check the column against the schema".into()),
                )
                .at(&self.src.file, at, col.value.len(), "unknown column"))
            }
            _ => Err(Diag::new(format!("column `{}` is ambiguous", col.value))
                .help("qualify it with the table name or alias")
                .at(&self.src.file, at, col.value.len(), "ambiguous")),
        }
    }

    /// Resolve a column in `tables`, else in an enclosing statement
    /// (recorded as a correlation, `None` returned); else the error.
    pub(super) fn resolve_column(
        &mut self,
        tables: &[TableRef],
        q: Option<&Ident>,
        c: &Ident,
        snip: &Snippet,
    ) -> Result<Option<(usize, usize)>> {
        let err = match self.column(tables, q, c, snip) {
            Ok(found) => return Ok(Some(found)),
            Err(e) => e,
        };
        if self.cte_output(tables, q, c) {
            return Ok(None);
        }
        for level in (0..self.sql.scopes.len()).rev() {
            let scope = self.sql.scopes[level].clone();
            if let Ok(found) = self.column(&scope, q, c, snip) {
                self.sql.outer_hits[level].push(found);
                return Ok(None);
            }
        }
        // A FROM item whose columns are unknown (from.rs), innermost
        // first: the name is one of its columns (PostgreSQL resolved it,
        // and no table in scope has it).
        let unknown = |ts: &[TableRef]| {
            ts.iter()
                .position(|t| t.virt.as_ref().is_some_and(|v| v.cols.is_none()))
        };
        if q.is_none() {
            if let Some(ti) = unknown(tables) {
                return Ok(Some((ti, 0)));
            }
            for level in (0..self.sql.scopes.len()).rev() {
                if let Some(ti) = unknown(&self.sql.scopes[level]) {
                    self.sql.outer_hits[level].push((ti, 0));
                    return Ok(None);
                }
            }
        }
        // An expression outside any statement (a condition, a RAISE
        // argument) names no column: FOUND and the like are values.
        if tables.is_empty() {
            return Ok(None);
        }
        Err(err)
    }

    /// Whether `q.c` (or `c`) is a computed output (`expr AS c`) of a CTE
    /// of `tables`: no column of a table (see `Cte::outputs`).
    fn cte_output(&self, tables: &[TableRef], q: Option<&Ident>, c: &Ident) -> bool {
        tables.iter().filter(|t| t.cte).any(|t| {
            let named = q.is_none_or(|q| {
                t.alias
                    .as_deref()
                    .map_or(same_name(&t.name, q), |a| same_name(a, q))
            });
            named
                && self
                    .sql
                    .ctes
                    .iter()
                    .rev()
                    .find(|k| same_name(&t.name, &k.name))
                    .is_some_and(|k| k.outputs.iter().any(|o| same_name(o, c)))
        })
    }
}

/// The join's ON condition: `Ok(None)` for a join without a condition
/// (CROSS JOIN), `Err(())` for USING, NATURAL and exotic joins, whose
/// implicit equalities would otherwise be missing from the predicate sets.
#[allow(clippy::result_unit_err)]
pub(super) fn join_on(op: &sqlparser::ast::JoinOperator) -> std::result::Result<Option<&Expr>, ()> {
    use sqlparser::ast::{JoinConstraint, JoinOperator as J};
    let c = match op {
        J::Join(c)
        | J::Inner(c)
        | J::Left(c)
        | J::LeftOuter(c)
        | J::Right(c)
        | J::RightOuter(c)
        | J::FullOuter(c)
        | J::CrossJoin(c) => c,
        _ => return Err(()),
    };
    match c {
        JoinConstraint::On(e) => Ok(Some(e)),
        JoinConstraint::None => Ok(None),
        _ => Err(()),
    }
}
