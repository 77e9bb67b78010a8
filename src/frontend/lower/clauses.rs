//! ColumnRole analysis: which columns a statement's clauses read, predicate on
//! or pin to values (WHERE equalities, joins, extra conjuncts), and which
//! key it pins.

use super::vocab::{ColumnRole, ColumnUses, TableRef, Term};
use super::Lowerer;
use crate::frontend::sql::{same_name, Snippet};
use crate::model::btp::Body;
use crate::model::error::Result;
use crate::model::provenance::{Cmp, Test};
use crate::model::schema::{RelId, Schema};
use sqlparser::ast::{BinaryOperator, Expr, Ident, Query, SelectItem, Spanned};
use std::collections::{BTreeSet, HashSet};
use std::ops::ControlFlow;

impl Lowerer<'_> {
    /// The key (PK, or a UNIQUE key no UPDATE assigns) pinned by `eq`.
    pub(super) fn key_of(&self, rel: RelId, eq: &[(usize, Term)]) -> Option<Vec<usize>> {
        let r = self.cat.schema.rel(rel);
        let pinned: HashSet<usize> = eq.iter().map(|(c, _)| *c).collect();
        let mut keys = vec![];
        if !r.primary_key.is_empty() {
            keys.push(r.primary_key.clone());
        }
        for u in &r.unique_keys {
            if !u.is_empty() && u.iter().all(|c| !self.cat.assigned.contains(&(rel, *c))) {
                keys.push(u.clone());
            }
        }
        keys.into_iter()
            .find(|k| k.iter().all(|c| pinned.contains(c)))
    }

    /// Conjuncts beyond the key equalities: other conjuncts, and
    /// equalities on columns outside the key.
    pub(super) fn extras(uses: &ColumnUses, key: &[usize]) -> BTreeSet<usize> {
        let mut e = uses.extra.clone();
        e.extend(uses.eq.iter().map(|(c, _)| *c).filter(|c| !key.contains(c)));
        e
    }

    /// Walk an expression: column uses go to `uses[table]` under `clause`;
    /// subqueries are lowered into `pre` (reads before this statement).
    pub(super) fn collect(
        &mut self,
        tables: &[TableRef],
        e: &Expr,
        snip: &Snippet,
        pre: Option<&mut Vec<Body>>,
        clause: ColumnRole,
        uses: &mut [ColumnUses],
    ) -> Result<()> {
        // Subqueries first; remember their spans to skip their columns.
        let subs = subqueries(e);
        // Keep only outermost subqueries.
        let spans: Vec<_> = subs.iter().map(|q| q.span()).collect();
        let inside = |s: sqlparser::tokenizer::Span, except: Option<usize>| {
            spans
                .iter()
                .enumerate()
                .any(|(i, o)| Some(i) != except && o.start <= s.start && s.end <= o.end && *o != s)
        };
        // `pre` is None when only columns are wanted (the subqueries were
        // lowered already): lowering twice would create orphan statements.
        if let Some(pre) = pre {
            for (i, q) in subs.iter().enumerate() {
                if !inside(q.span(), Some(i)) {
                    // A correlated subquery may name this statement's tables.
                    self.sql.scopes.push(tables.to_vec());
                    self.sql.outer_hits.push(vec![]);
                    // A subquery never aborts on a missing row.
                    self.pos.sub_depth += 1;
                    let b = self.select(q, snip, &[]);
                    self.pos.sub_depth -= 1;
                    let hits = self.sql.outer_hits.pop().unwrap_or_default();
                    self.sql.scopes.pop();
                    // Correlation columns act like join columns of this
                    // statement: in its predicate and read.
                    for (t, a) in hits {
                        if let Some(u) = uses.get_mut(t) {
                            u.pred.insert(a);
                            u.join.insert(a);
                        }
                    }
                    pre.push(b?);
                }
            }
            // Calls of user functions outside the subqueries, innermost
            // first (arguments are evaluated before the call).
            let mut calls: Vec<sqlparser::ast::Function> = vec![];
            let _ = sqlparser::ast::visit_expressions(e, |x| {
                if let Expr::Function(f) = x {
                    if !inside(x.span(), None) {
                        calls.push(f.clone());
                    }
                }
                ControlFlow::<()>::Continue(())
            });
            calls.sort_by_key(|f| {
                let sp = f.span();
                (sp.end, std::cmp::Reverse(sp.start))
            });
            for f in &calls {
                self.call(f, !tables.is_empty(), snip, pre)?;
            }
        }
        // The names of named arguments (`make_interval(secs => k)`) are
        // parameter names of the function, never columns.
        let arg_names = named_argument_spans(e);
        let mut idents: Vec<(Option<Ident>, Ident)> = vec![];
        // `t.arr[1:2]` is `t` accessed by `.arr`, then `[1:2]`: the column
        // t.arr (its parts are not visited again as columns).
        let mut taken = arg_names;
        let _ = sqlparser::ast::visit_expressions(e, |x| {
            match x {
                Expr::CompoundFieldAccess { root, access_chain } if !inside(x.span(), None) => {
                    if let (
                        Expr::Identifier(q),
                        Some(sqlparser::ast::AccessExpr::Dot(Expr::Identifier(c))),
                    ) = (root.as_ref(), access_chain.first())
                    {
                        taken.extend([q.span, c.span]);
                        idents.push((Some(q.clone()), c.clone()));
                    }
                }
                Expr::Identifier(i) if !inside(i.span, None) && !taken.contains(&i.span) => {
                    idents.push((None, i.clone()))
                }
                Expr::CompoundIdentifier(v)
                    if v.len() >= 2 && !inside(v[v.len() - 1].span, None) =>
                {
                    idents.push((Some(v[v.len() - 2].clone()), v[v.len() - 1].clone()))
                }
                _ => {}
            }
            ControlFlow::<()>::Continue(())
        });
        for (q, c) in idents {
            let Some((t, a)) = self.resolve_column(tables, q.as_ref(), &c, snip)? else {
                continue;
            };
            match clause {
                ColumnRole::Read => uses[t].read.insert(a),
                ColumnRole::Pred => uses[t].pred.insert(a),
            };
        }
        Ok(())
    }

    pub(super) fn collect_item(
        &mut self,
        tables: &[TableRef],
        item: &SelectItem,
        snip: &Snippet,
        pre: &mut Vec<Body>,
        uses: &mut [ColumnUses],
    ) -> Result<()> {
        match item {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                self.collect(tables, e, snip, Some(pre), ColumnRole::Read, uses)
            }
            SelectItem::Wildcard(_) => {
                uses.iter_mut().for_each(|u| u.all = true);
                Ok(())
            }
            SelectItem::QualifiedWildcard(kind, _) => {
                let name = match kind {
                    sqlparser::ast::SelectItemQualifiedWildcardKind::ObjectName(n) => {
                        n.0.last().and_then(|p| p.as_ident()).cloned()
                    }
                    _ => None,
                };
                for (i, t) in tables.iter().enumerate() {
                    let hit = name.as_ref().is_none_or(|n| {
                        t.alias.as_deref().is_some_and(|a| same_name(a, n)) || same_name(&t.name, n)
                    });
                    if hit {
                        uses[i].all = true;
                    }
                }
                Ok(())
            }
            _ => {
                uses.iter_mut().for_each(|u| u.all = true);
                Ok(())
            }
        }
    }

    /// WHERE (or ON): columns are predicate columns; top-level conjuncts
    /// `col = value` are equalities, the rest extra conjuncts.
    pub(super) fn where_clause(
        &mut self,
        tables: &[TableRef],
        w: &Expr,
        snip: &Snippet,
        pre: &mut Vec<Body>,
        uses: &mut [ColumnUses],
    ) -> Result<()> {
        self.collect(tables, w, snip, Some(pre), ColumnRole::Pred, uses)?;
        let mut conj = vec![];
        conjuncts(w, &mut conj);
        for c in conj {
            let mut cols = vec![ColumnUses::default(); tables.len()];
            self.collect(tables, c, snip, None, ColumnRole::Pred, &mut cols)?;
            let n_cols: usize = cols.iter().map(|u| u.pred.len()).sum();
            if let Expr::BinaryOp {
                left,
                op: BinaryOperator::Eq,
                right,
            } = c
            {
                let side = |e: &Expr| match e {
                    Expr::Identifier(_) | Expr::CompoundIdentifier(_) => true,
                    Expr::Nested(i) => matches!(
                        i.as_ref(),
                        Expr::Identifier(_) | Expr::CompoundIdentifier(_)
                    ),
                    _ => false,
                };
                if n_cols == 1 {
                    // `col = value`; when the value names a column of an
                    // enclosing statement (correlation), `col` is joined.
                    let ident = |e: &Expr| match strip_nested(e) {
                        Expr::Identifier(i) => Some((None, i.clone())),
                        Expr::CompoundIdentifier(v) if v.len() >= 2 => {
                            Some((Some(v[v.len() - 2].clone()), v[v.len() - 1].clone()))
                        }
                        _ => None,
                    };
                    let mut done = false;
                    for (colside, valside) in [(left, right), (right, left)] {
                        let Some((q, id)) = ident(colside) else {
                            continue;
                        };
                        let Some((t, a)) = self.resolve_column(tables, q.as_ref(), &id, snip)?
                        else {
                            continue;
                        };
                        if has_identifier(valside) {
                            uses[t].join.insert(a);
                        } else {
                            let term = self.term(valside);
                            uses[t].eq.push((a, term));
                        }
                        done = true;
                        break;
                    }
                    if done {
                        continue;
                    }
                }
                if n_cols == 2 && side(left) && side(right) && tables.len() > 1 {
                    self.cte_join(tables, &cols, uses);
                    if !self.element_key(tables, &cols, uses) {
                        for (t, u) in cols.iter().enumerate() {
                            uses[t].join.extend(u.pred.iter().copied());
                        }
                    }
                    continue;
                }
            }
            if self.any_of_param(tables, c, snip, uses)? {
                continue;
            }
            if let Some((t, a, terms)) = self.any_of_values(tables, c, snip)? {
                uses[t].any_of.push((a, terms));
            }
            let ranged = n_cols == 1 && self.range_bounds(tables, c, snip, uses)?;
            let test = match n_cols {
                1 => self.column_test(tables, c, snip)?,
                _ => None,
            };
            let tested = test.is_some();
            if let Some((t, a, x)) = test {
                uses[t].tests.push((a, x));
            }
            for (t, u) in cols.iter().enumerate() {
                uses[t].extra.extend(u.pred.iter().copied());
                if !ranged {
                    uses[t].unranged.extend(u.pred.iter().copied());
                }
                if !tested {
                    uses[t].untested.extend(u.pred.iter().copied());
                }
            }
            if n_cols == 0 {
                uses.iter_mut().for_each(|u| u.opaque = true);
            }
        }
        Ok(())
    }

    /// A conjunct testing one column against a constant: `col < 3` (`<`,
    /// `<=`, `>`, `>=`, `<>` with a number on either side), `col IS NULL`,
    /// `col IS NOT NULL` (`Provenance::tests`): (table, column, test).
    fn column_test(
        &mut self,
        tables: &[TableRef],
        c: &Expr,
        snip: &Snippet,
    ) -> Result<Option<(usize, usize, Test)>> {
        let column = |e: &Expr| match strip_nested(e) {
            Expr::Identifier(i) => Some((None, i.clone())),
            Expr::CompoundIdentifier(v) if v.len() >= 2 => {
                Some((Some(v[v.len() - 2].clone()), v[v.len() - 1].clone()))
            }
            _ => None,
        };
        let number = |e: &Expr| match strip_nested(e) {
            Expr::Value(v) => match &v.value {
                sqlparser::ast::Value::Number(n, _) => Some(n.clone()),
                _ => None,
            },
            Expr::UnaryOp {
                op: sqlparser::ast::UnaryOperator::Minus,
                expr,
            } => match strip_nested(expr) {
                Expr::Value(v) => match &v.value {
                    sqlparser::ast::Value::Number(n, _) => Some(format!("-{n}")),
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        };
        let (col, test) = match strip_nested(c) {
            Expr::IsNull(e) => (e.as_ref(), Test::Null(true)),
            Expr::IsNotNull(e) => (e.as_ref(), Test::Null(false)),
            Expr::BinaryOp { left, op, right } => {
                let op = match op {
                    BinaryOperator::Lt => Cmp::Lt,
                    BinaryOperator::LtEq => Cmp::Le,
                    BinaryOperator::Gt => Cmp::Gt,
                    BinaryOperator::GtEq => Cmp::Ge,
                    BinaryOperator::NotEq => Cmp::Ne,
                    _ => return Ok(None),
                };
                let flip = |op| match op {
                    Cmp::Lt => Cmp::Gt,
                    Cmp::Le => Cmp::Ge,
                    Cmp::Gt => Cmp::Lt,
                    Cmp::Ge => Cmp::Le,
                    Cmp::Ne => Cmp::Ne,
                };
                match (number(left), number(right)) {
                    (None, Some(n)) => (left.as_ref(), Test::Cmp(op, n)),
                    (Some(n), None) => (right.as_ref(), Test::Cmp(flip(op), n)),
                    _ => return Ok(None),
                }
            }
            _ => return Ok(None),
        };
        let Some((q, id)) = column(col) else {
            return Ok(None);
        };
        let Some((t, a)) = self.resolve_column(tables, q.as_ref(), &id, snip)? else {
            return Ok(None);
        };
        Ok(Some((t, a, test)))
    }

    /// A range conjunct on one column with values as bounds (`col BETWEEN
    /// v AND w`, `col < v`, `v <= col`, …; not NOT BETWEEN, not BETWEEN
    /// SYMMETRIC, whose bounds may swap): noted in `ColumnUses::ranges`.
    /// Returns whether `c` was one.
    fn range_bounds(
        &mut self,
        tables: &[TableRef],
        c: &Expr,
        snip: &Snippet,
        uses: &mut [ColumnUses],
    ) -> Result<bool> {
        let column = |e: &Expr| match strip_nested(e) {
            Expr::Identifier(i) => Some((None, i.clone())),
            Expr::CompoundIdentifier(v) if v.len() >= 2 => {
                Some((Some(v[v.len() - 2].clone()), v[v.len() - 1].clone()))
            }
            _ => None,
        };
        // (the column side, bounds as (expression, upper)).
        let (col, bounds): (&Expr, Vec<(&Expr, bool)>) = match c {
            Expr::Between {
                expr,
                negated: false,
                low,
                high,
            } => (expr, vec![(low, false), (high, true)]),
            Expr::BinaryOp { left, op, right } => {
                let upper = match op {
                    BinaryOperator::Lt | BinaryOperator::LtEq => true,
                    BinaryOperator::Gt | BinaryOperator::GtEq => false,
                    _ => return Ok(false),
                };
                if column(left).is_some() {
                    (left, vec![(right, upper)])
                } else {
                    (right, vec![(left, !upper)])
                }
            }
            _ => return Ok(false),
        };
        let Some((q, id)) = column(col) else {
            return Ok(false);
        };
        if bounds.iter().any(|(b, _)| has_identifier(b)) {
            return Ok(false);
        }
        let Some((t, a)) = self.resolve_column(tables, q.as_ref(), &id, snip)? else {
            return Ok(false);
        };
        for (b, upper) in bounds {
            let term = self.term(b);
            uses[t].ranges.push((a, term, upper));
        }
        Ok(true)
    }

    /// `col = ANY(ARRAY[v₁, …])` with values (no column) in the array: the
    /// table, the column and the values' terms.
    fn any_of_values(
        &mut self,
        tables: &[TableRef],
        c: &Expr,
        snip: &Snippet,
    ) -> Result<Option<(usize, usize, Vec<Term>)>> {
        let Some((q, id, right)) = any_eq(c) else {
            return Ok(None);
        };
        let Expr::Array(arr) = strip_nested(right) else {
            return Ok(None);
        };
        if arr.elem.iter().any(has_identifier) {
            return Ok(None);
        }
        let Some((t, a)) = self.resolve_column(tables, q.as_ref(), &id, snip)? else {
            return Ok(None);
        };
        let terms = arr.elem.iter().map(|e| self.term(e)).collect();
        Ok(Some((t, a, terms)))
    }

    /// `col = ANY(:ids)` (graphile-worker's `id = any($1::bigint[])`): as
    /// `FROM unnest(:ids) n WHERE col = n` (`element_key`), col is pinned
    /// to one element per access. PostgreSQL's semantics are the same: one
    /// snapshot, every row whose col is an element, each row once.
    /// Returns whether `c` was one.
    fn any_of_param(
        &mut self,
        tables: &[TableRef],
        c: &Expr,
        snip: &Snippet,
        uses: &mut [ColumnUses],
    ) -> Result<bool> {
        let Some((q, id, right)) = any_eq(c) else {
            return Ok(false);
        };
        // A parameter, or a cast of one (`$1::bigint[]`): `term` says
        // whether it is the parameter's value (no other term is made).
        let mut inner = strip_nested(right);
        while let Expr::Cast { expr, .. } = inner {
            inner = strip_nested(expr);
        }
        let placeholder = matches!(inner, Expr::Value(v) if matches!(v.value, sqlparser::ast::Value::Placeholder(_)));
        if !placeholder || !matches!(self.term(strip_nested(right)), Term::Param(_)) {
            return Ok(false);
        }
        let Some((t, a)) = self.resolve_column(tables, q.as_ref(), &id, snip)? else {
            return Ok(false);
        };
        if tables[t].virt.is_some() || tables[t].cte || tables[t].pseudo {
            return Ok(false);
        }
        self.pin_element(&mut uses[t], a);
        Ok(true)
    }

    /// Pins column `a` to one element of a list per access: a fresh value
    /// each time, as a range loop's variable (`Source::RangeLoop`, for the
    /// explorer), marked as an element key (`ColumnUses::elem`).
    fn pin_element(&mut self, uses: &mut ColumnUses, a: usize) {
        let v = self.vars.fresh();
        if let Term::Fresh(n) = v {
            let src = crate::model::provenance::Source::RangeLoop;
            if !self.out.sources.contains(&(n, src)) {
                self.out.sources.push((n, src));
            }
        }
        uses.eq.push((a, v));
        uses.elem.insert(a);
    }

    /// `t.c = x.e` with x a values item (UNNEST, VALUES: from.rs): t.c is
    /// pinned to one element per access — a value, as `FOR e IN ARRAY`
    /// pins it in a loop (`ColumnUses::elem`: an UPDATE/DELETE target keyed by
    /// such values writes per element). Returns whether it was one.
    fn element_key(
        &mut self,
        tables: &[TableRef],
        cols: &[ColumnUses],
        uses: &mut [ColumnUses],
    ) -> bool {
        let sides: Vec<(usize, usize)> = cols
            .iter()
            .enumerate()
            .flat_map(|(t, u)| u.pred.iter().map(move |a| (t, *a)))
            .collect();
        let is_values = |t: usize| tables[t].virt.as_ref().is_some_and(|v| v.values);
        let real = |t: usize| tables[t].virt.is_none() && !tables[t].cte && !tables[t].pseudo;
        let [(t1, a1), (t2, a2)] = sides[..] else {
            return false;
        };
        let (t, a) = match (real(t1) && is_values(t2), real(t2) && is_values(t1)) {
            (true, _) => (t1, a1),
            (_, true) => (t2, a2),
            _ => return false,
        };
        // One element per keyed write of the loop.
        self.pin_element(&mut uses[t], a);
        true
    }

    /// The key pinned by value equalities, unless a key column is also
    /// equated to another table's column (then the table is
    /// predicate-based, as the lowering rules say).
    pub(super) fn unjoined_key(&self, rel: RelId, u: &ColumnUses) -> Option<Vec<usize>> {
        let pk = &self.cat.schema.rel(rel).primary_key;
        self.key_of(rel, &u.eq)
            .filter(|_| u.join.iter().all(|c| !pk.contains(c)))
    }
}

/// The subqueries of `e`, nested ones included, in visiting order:
/// `(SELECT …)`, EXISTS, IN, and PostgreSQL's `ARRAY(SELECT …)`, which
/// reads like a scalar subquery (all its rows).
fn subqueries(e: &Expr) -> Vec<Query> {
    let mut subs: Vec<Query> = vec![];
    let _ = sqlparser::ast::visit_expressions(e, |x| {
        match x {
            Expr::Subquery(q)
            | Expr::Exists { subquery: q, .. }
            | Expr::InSubquery { subquery: q, .. } => subs.push((**q).clone()),
            Expr::Function(f) => {
                if let Some(q) = array_subquery(f) {
                    subs.push(q.clone());
                }
            }
            _ => {}
        }
        ControlFlow::<()>::Continue(())
    });
    subs
}

/// Where the names of named arguments (`make_interval(secs => k)`) are in
/// `e`: parameter names of the function, never columns.
fn named_argument_spans(e: &Expr) -> Vec<sqlparser::tokenizer::Span> {
    let mut arg_names = vec![];
    let _ = sqlparser::ast::visit_expressions(e, |x| {
        if let Expr::Function(f) = x {
            if let sqlparser::ast::FunctionArguments::List(l) = &f.args {
                for a in &l.args {
                    if let sqlparser::ast::FunctionArg::ExprNamed {
                        name: Expr::Identifier(i),
                        ..
                    } = a
                    {
                        arg_names.push(i.span);
                    }
                }
            }
        }
        ControlFlow::<()>::Continue(())
    });
    arg_names
}

/// `col = ANY(right)` or `t.col = ANY(right)`: (qualifier, column, right).
fn any_eq(c: &Expr) -> Option<(Option<Ident>, Ident, &Expr)> {
    let Expr::AnyOp {
        left,
        compare_op: BinaryOperator::Eq,
        right,
        ..
    } = c
    else {
        return None;
    };
    let (q, id) = match strip_nested(left) {
        Expr::Identifier(i) => (None, i.clone()),
        Expr::CompoundIdentifier(v) if v.len() >= 2 => {
            (Some(v[v.len() - 2].clone()), v[v.len() - 1].clone())
        }
        _ => return None,
    };
    Some((q, id, right))
}

/// Whether an expression names any column (outside subqueries or not).
pub(super) fn has_identifier(e: &Expr) -> bool {
    let mut found = false;
    let _ = sqlparser::ast::visit_expressions(e, |x| {
        if matches!(x, Expr::Identifier(_) | Expr::CompoundIdentifier(_)) {
            found = true;
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    });
    found
}

pub(super) fn strip_nested(e: &Expr) -> &Expr {
    match e {
        Expr::Nested(i) => strip_nested(i),
        _ => e,
    }
}

pub(super) fn conjuncts<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
    match e {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            conjuncts(left, out);
            conjuncts(right, out);
        }
        Expr::Nested(i) => conjuncts(i, out),
        _ => out.push(e),
    }
}

/// For each RETURNING item, the column of the target it returns (plain
/// columns only: a qualified one may name another table of UPDATE … FROM).
pub(super) fn returning_columns(
    r: &Option<Vec<SelectItem>>,
    tables: &[TableRef],
    schema: &Schema,
) -> Vec<Option<usize>> {
    r.as_ref().map_or(vec![], |items| {
        item_columns(items, schema.rel(tables[0].rel), false)
    })
}

/// For each select-list item, the column of `rel` it is (`None` for
/// expressions), optionally also when qualified.
pub(super) fn item_columns(
    items: &[SelectItem],
    rel: &crate::model::schema::Relation,
    qualified: bool,
) -> Vec<Option<usize>> {
    let col = |i: &Ident| rel.attributes.iter().position(|a| same_name(a, i));
    items
        .iter()
        .map(|item| match item {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                match strip_nested(e) {
                    Expr::Identifier(i) => col(i),
                    Expr::CompoundIdentifier(v) if qualified => v.last().and_then(col),
                    _ => None,
                }
            }
            _ => None,
        })
        .collect()
}

/// Per select item: the column it returns of a row read, for a plain
/// column, `min(c)` or `max(c)` (provenance, `model::provenance::Source`).
pub(super) fn read_columns(
    items: &[SelectItem],
    rel: &crate::model::schema::Relation,
) -> Vec<Option<usize>> {
    use sqlparser::ast::{FunctionArg, FunctionArgExpr, FunctionArguments};
    let plain = item_columns(items, rel, true);
    items
        .iter()
        .zip(plain)
        .map(|(item, p)| {
            let e = match item {
                SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => e,
                _ => return None,
            };
            let Expr::Function(f) = strip_nested(e) else {
                return p;
            };
            let n = f.name.to_string().to_lowercase();
            if n != "min" && n != "max" {
                return None;
            }
            let FunctionArguments::List(l) = &f.args else {
                return None;
            };
            match l.args.as_slice() {
                [FunctionArg::Unnamed(FunctionArgExpr::Expr(a))] if l.clauses.is_empty() => {
                    let one = SelectItem::UnnamedExpr(a.clone());
                    item_columns(&[one], rel, true).pop().flatten()
                }
                _ => None,
            }
        })
        .collect()
}

/// Aggregate functions: over no rows they still return one row.
pub(super) const AGGREGATES: &[&str] = &[
    "count",
    "sum",
    "avg",
    "min",
    "max",
    "bool_and",
    "bool_or",
    "every",
    "array_agg",
    "string_agg",
    "json_agg",
    "jsonb_agg",
    "json_object_agg",
    "jsonb_object_agg",
    "stddev",
    "stddev_pop",
    "stddev_samp",
    "variance",
    "var_pop",
    "var_samp",
    "bit_and",
    "bit_or",
];

pub(super) fn has_aggregate(item: &SelectItem) -> bool {
    let mut found = false;
    let _ = sqlparser::ast::visit_expressions(item, |e| {
        if let Expr::Function(f) = e {
            let n = f.name.to_string().to_lowercase();
            if AGGREGATES.contains(&n.as_str()) {
                found = true;
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    });
    found
}

/// The query of `ARRAY(SELECT …)`, PostgreSQL's array constructor.
pub(super) fn array_subquery(f: &sqlparser::ast::Function) -> Option<&Query> {
    let is_array = f.name.0.len() == 1
        && f.name.0[0]
            .as_ident()
            .is_some_and(|i| i.value.eq_ignore_ascii_case("array"));
    match &f.args {
        sqlparser::ast::FunctionArguments::Subquery(q) if is_array => Some(q),
        _ => None,
    }
}
