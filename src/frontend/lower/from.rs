//! FROM items that are no table (issue 22): derived tables, LATERAL
//! subqueries, `(VALUES …)`, set-returning functions (UNNEST, built-ins,
//! SQL functions of the workload) and nested joins; and queries that are
//! set operations (UNION / INTERSECT / EXCEPT) or VALUES.
//!
//! Such an item reads no table itself: what it reads is lowered where it
//! stands, as reads of the statement on the statement's snapshot (a
//! derived table's query, a function's arguments, a workload function's
//! body — a VOLATILE one after the snapshot reads, as in order.rs). Its
//! rows are values: a join `t.id = x.i` with such an item is a join
//! conjunct, so `t` is predicate-based (its join columns in PReadSet), an
//! over-approximation of the per-element key access PostgreSQL makes.

use super::scope::join_on;
use super::vocab::{ColumnRole, ColumnUses, TableRef, VirtualTable};
use super::{clauses, Lowerer};
use crate::frontend::sql::{same_name, Snippet};
use crate::model::btp::Body;
use crate::model::error::Result;
use sqlparser::ast::{
    Expr, Ident, Query, SelectItem, SetExpr, Statement as Sql, TableFactor, TableWithJoins,
};
use std::ops::ControlFlow;

use sqlparser::ast::{
    FunctionArg, FunctionArgumentList, FunctionArguments, ObjectName, TableAlias, Visit, Visitor,
};

impl Lowerer<'_> {
    /// Tables (and ON conditions) of a FROM list, in order; the reads of
    /// items that are no table go to `pre`, their references to columns
    /// of items before them (LATERAL) to `hits` as (table, column).
    pub(super) fn tables_of(
        &mut self,
        from: &[TableWithJoins],
        snip: &Snippet,
        tables: &mut Vec<TableRef>,
        ons: &mut Vec<Expr>,
        pre: &mut Vec<Body>,
        hits: &mut Vec<(usize, usize)>,
    ) -> Result<()> {
        for twj in from {
            let TableWithJoins { relation, joins } = twj;
            self.lower_from_item(relation, snip, tables, ons, pre, hits)?;
            for j in joins {
                self.lower_from_item(&j.relation, snip, tables, ons, pre, hits)?;
                match join_on(&j.join_operator) {
                    Ok(Some(on)) => ons.push(on.clone()),
                    Ok(None) => {}
                    Err(()) => {
                        return Err(self.unsupported(
                            snip,
                            "this kind of join (USING, NATURAL, semi/anti or lateral)",
                            "write the join as JOIN … ON with explicit equalities",
                        ))
                    }
                }
            }
        }
        Ok(())
    }

    fn lower_from_item(
        &mut self,
        f: &TableFactor,
        snip: &Snippet,
        tables: &mut Vec<TableRef>,
        ons: &mut Vec<Expr>,
        pre: &mut Vec<Body>,
        hits: &mut Vec<(usize, usize)>,
    ) -> Result<()> {
        match f {
            TableFactor::Table { args: None, .. } => tables.push(self.source_table(f, snip)?),
            TableFactor::Table {
                name,
                alias,
                args: Some(a),
                ..
            } => self.function_item(name, &a.args, alias, snip, tables, pre, hits)?,
            TableFactor::Function {
                name, args, alias, ..
            } => self.function_item(name, args, alias, snip, tables, pre, hits)?,
            TableFactor::UNNEST {
                alias, array_exprs, ..
            } => {
                for e in array_exprs {
                    self.lateral_args(e, snip, tables, pre, hits)?;
                }
                tables.push(virtual_table("unnest", alias, true));
            }
            TableFactor::Derived {
                subquery, alias, ..
            } => self.derived(subquery, alias, snip, tables, pre, hits)?,
            TableFactor::NestedJoin {
                table_with_joins,
                alias,
            } => {
                if alias.is_some() {
                    return Err(self.unsupported(
                        snip,
                        "an alias of a parenthesized join (`(a JOIN b …) AS j`)",
                        "drop the alias and qualify columns with the joined tables' names",
                    ));
                }
                let inner = std::slice::from_ref(table_with_joins.as_ref());
                self.tables_of(inner, snip, tables, ons, pre, hits)?;
            }
            _ => {
                return Err(self.unsupported(
                    snip,
                    "this FROM item (TABLE(…), JSON_TABLE, PIVOT or another non-PostgreSQL form)",
                    "name tables, subqueries, VALUES or set-returning functions in FROM",
                ))
            }
        }
        Ok(())
    }

    /// An expression of a FROM item evaluated per row of the items before
    /// it (a function's arguments): its subqueries and calls are reads of
    /// the statement, its columns of earlier items correlation columns.
    fn lateral_args(
        &mut self,
        e: &Expr,
        snip: &Snippet,
        tables: &[TableRef],
        pre: &mut Vec<Body>,
        hits: &mut Vec<(usize, usize)>,
    ) -> Result<()> {
        let mut uses = vec![ColumnUses::default(); tables.len()];
        self.collect(tables, e, snip, Some(pre), ColumnRole::Read, &mut uses)?;
        for (t, u) in uses.iter().enumerate() {
            hits.extend(u.read.iter().map(|a| (t, *a)));
        }
        Ok(())
    }

    /// `FROM f(args) [AS x(cols)]`: a built-in reads no table; a SQL
    /// function of the workload is inlined like a call in an expression
    /// (`call`: STABLE/IMMUTABLE bodies read the statement's snapshot,
    /// VOLATILE ones run after its snapshot reads).
    #[allow(clippy::too_many_arguments)]
    fn function_item(
        &mut self,
        name: &ObjectName,
        args: &[FunctionArg],
        alias: &Option<TableAlias>,
        snip: &Snippet,
        tables: &mut Vec<TableRef>,
        pre: &mut Vec<Body>,
        hits: &mut Vec<(usize, usize)>,
    ) -> Result<()> {
        let call = Expr::Function(sqlparser::ast::Function {
            name: name.clone(),
            uses_odbc_syntax: false,
            parameters: FunctionArguments::None,
            args: FunctionArguments::List(FunctionArgumentList {
                duplicate_treatment: None,
                args: args.to_vec(),
                clauses: vec![],
            }),
            within_group: vec![],
            filter: None,
            null_treatment: None,
            over: None,
        });
        let mark = self.out.statements.len();
        self.lateral_args(&call, snip, tables, pre, hits)?;
        let fname = name
            .0
            .last()
            .and_then(|p| p.as_ident())
            .map_or_else(String::new, |i| i.value.clone());
        // A built-in (or a workload function whose body read nothing)
        // yields values; an inlined body's rows are rows it read.
        let values = self.out.statements.len() == mark;
        tables.push(virtual_table(&fname, alias, values));
        Ok(())
    }

    /// A derived table or LATERAL subquery: its query is read by the
    /// statement, on the statement's snapshot, before the statement's own
    /// table reads (it may return no row: a subquery). A LATERAL one may
    /// name the items before it: correlation columns, as for a correlated
    /// subquery in WHERE.
    fn derived(
        &mut self,
        q: &Query,
        alias: &Option<TableAlias>,
        snip: &Snippet,
        tables: &mut Vec<TableRef>,
        pre: &mut Vec<Body>,
        hits: &mut Vec<(usize, usize)>,
    ) -> Result<()> {
        if !q.locks.is_empty() {
            return Err(self.unsupported(
                snip,
                "FOR UPDATE/SHARE inside a subquery in FROM",
                "lock the rows in a statement of its own (SELECT … FOR UPDATE) before this one",
            ));
        }
        self.sql.scopes.push(tables.clone());
        self.sql.outer_hits.push(vec![]);
        self.pos.sub_depth += 1;
        let b = self.select(q, snip, &[]);
        self.pos.sub_depth -= 1;
        let h = self.sql.outer_hits.pop().unwrap_or_default();
        self.sql.scopes.pop();
        hits.extend(h);
        pre.push(b?);
        let values = matches!(q.body.as_ref(), SetExpr::Values(_));
        let mut t = virtual_table("", alias, values);
        if alias.as_ref().is_none_or(|a| a.columns.is_empty()) {
            t.virt = Some(VirtualTable {
                cols: output_columns(q),
                values,
            });
        }
        tables.push(t);
        Ok(())
    }

    /// A query that is a set operation or VALUES: each arm's reads (an
    /// arm may return no row: a subquery), on the statement's snapshot.
    /// PostgreSQL allows no lock clause here. INTO targets get values.
    pub(super) fn set_query(
        &mut self,
        q: &Query,
        snip: &Snippet,
        into: &[String],
        split: bool,
    ) -> Result<Body> {
        self.inl.selects += 1; // this query
        let mut parts = vec![];
        self.set_arm(q, q.body.as_ref(), snip, &mut parts)?;
        if let Some(ob) = &q.order_by {
            // Output columns: no read; a subquery in it is one.
            if let sqlparser::ast::OrderByKind::Expressions(v) = &ob.kind {
                for o in v {
                    self.collect(
                        &[],
                        &o.expr,
                        snip,
                        Some(&mut parts),
                        ColumnRole::Read,
                        &mut [],
                    )?;
                }
            }
        }
        for v in into {
            let t = self.vars.fresh();
            self.vars.env.insert(v.clone(), t);
        }
        if split {
            self.stage.split_out.append(&mut parts);
            return Ok(Body::Seq(vec![]));
        }
        Ok(Body::Seq(parts))
    }

    fn set_arm(
        &mut self,
        outer: &Query,
        e: &SetExpr,
        snip: &Snippet,
        parts: &mut Vec<Body>,
    ) -> Result<()> {
        match e {
            SetExpr::SetOperation { left, right, .. } => {
                self.set_arm(outer, left, snip, parts)?;
                self.set_arm(outer, right, snip, parts)
            }
            SetExpr::Select(_) => {
                // A bare SELECT arm is no query node of its own: lowered
                // as one, it must not count as one (the audit's count).
                let arm = Query {
                    with: None,
                    body: Box::new(e.clone()),
                    order_by: None,
                    limit_clause: None,
                    fetch: None,
                    locks: vec![],
                    ..outer.clone()
                };
                self.pos.sub_depth += 1;
                let b = self.select(&arm, snip, &[]);
                self.pos.sub_depth -= 1;
                self.inl.selects -= 1;
                parts.push(b?);
                Ok(())
            }
            SetExpr::Query(q) => {
                self.pos.sub_depth += 1;
                let b = self.select(q, snip, &[]);
                self.pos.sub_depth -= 1;
                parts.push(b?);
                Ok(())
            }
            SetExpr::Values(v) => {
                // Values may name columns of earlier FROM items (LATERAL).
                for row in &v.rows {
                    for x in row.iter() {
                        self.collect(&[], x, snip, Some(parts), ColumnRole::Read, &mut [])?;
                    }
                }
                Ok(())
            }
            _ => Err(self.unsupported(
                snip,
                "this query form (TABLE t, or a data-modifying statement as an arm)",
                "write SELECT … FROM t",
            )),
        }
    }

    /// A lock clause that applies to a FROM item that is no table:
    /// PostgreSQL locks the rows of a subquery's tables after its scan
    /// (EvalPlanQual re-reads them late), which the subquery's plain
    /// reads do not model.
    pub(super) fn no_virtual_lock(
        &self,
        q: &Query,
        tables: &[TableRef],
        snip: &Snippet,
    ) -> Result<()> {
        let hit = |t: &TableRef, i: &Ident| {
            t.alias.as_deref().is_some_and(|a| same_name(a, i)) || same_name(&t.name, i)
        };
        let bad = q.locks.iter().any(|l| {
            tables
                .iter()
                .filter(|t| t.virt.is_some())
                .any(|t| match &l.of {
                    None => true,
                    Some(n) => {
                        n.0.last()
                            .and_then(|p| p.as_ident())
                            .is_some_and(|i| hit(t, i))
                    }
                })
        });
        if bad {
            return Err(self.unsupported(
                snip,
                "FOR UPDATE/SHARE over a subquery, VALUES or function in FROM",
                "name the locked tables with FOR UPDATE OF t, or lock the rows in a statement of its own",
            ));
        }
        Ok(())
    }

    /// Whether a statement calls a workload function in FROM (`calls_volatile`
    /// looks at expressions only).
    pub(super) fn calls_volatile_in_from(&self, sql: &Sql) -> bool {
        struct V<'a, 'b>(&'a Lowerer<'b>, bool);
        impl Visitor for V<'_, '_> {
            type Break = ();
            fn pre_visit_table_factor(&mut self, f: &TableFactor) -> ControlFlow<()> {
                let name = match f {
                    TableFactor::Table {
                        name,
                        args: Some(_),
                        ..
                    }
                    | TableFactor::Function { name, .. } => name,
                    _ => return ControlFlow::Continue(()),
                };
                let n = name.0.last().and_then(|p| p.as_ident());
                if n.is_some_and(|i| {
                    self.0.cat.functions.iter().any(|(d, _)| {
                        d.volatile && d.language == "sql" && d.name == i.value.to_lowercase()
                    })
                }) {
                    self.1 = true;
                    return ControlFlow::Break(());
                }
                ControlFlow::Continue(())
            }
        }
        let mut v = V(self, false);
        let _ = sql.visit(&mut v);
        v.1
    }
}

/// The FROM entry of an item that is no table.
fn virtual_table(default: &str, alias: &Option<TableAlias>, values: bool) -> TableRef {
    let cols = alias
        .as_ref()
        .filter(|a| !a.columns.is_empty())
        .map(|a| a.columns.iter().map(|c| c.name.value.clone()).collect());
    TableRef {
        // Never read as a table (`virt`); any relation id will do.
        rel: 0,
        name: default.to_string(),
        alias: alias.as_ref().map(|a| a.name.value.clone()),
        pseudo: false,
        cte: false,
        virt: Some(VirtualTable { cols, values }),
    }
}

/// The output column names of a query, when every item has one (no `*`).
fn output_columns(q: &Query) -> Option<Vec<String>> {
    let SetExpr::Select(sel) = q.body.as_ref() else {
        return None;
    };
    sel.projection
        .iter()
        .map(|item| match item {
            SelectItem::ExprWithAlias { alias, .. } => Some(alias.value.clone()),
            SelectItem::UnnamedExpr(e) => match clauses::strip_nested(e) {
                Expr::Identifier(i) => Some(i.value.clone()),
                Expr::CompoundIdentifier(v) => v.last().map(|i| i.value.clone()),
                Expr::Function(f) => f
                    .name
                    .0
                    .last()
                    .and_then(|p| p.as_ident())
                    .map(|i| i.value.clone()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}
