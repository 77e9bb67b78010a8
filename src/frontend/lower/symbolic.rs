//! Symbolic values (see the module comment of `lower`): terms for
//! parameters, literals, variables, columns of a statement's tuple and
//! per-branch phis; resolution along a path of IF branches.

use super::cte_rows::CTE_MATCH;
use super::vocab::{ColumnUses, Term};
use super::Lowerer;
use crate::model::provenance::{Pins, Value as PinValue};
use sqlparser::ast::{Expr, Value};
use std::collections::BTreeSet;

impl Lowerer<'_> {
    pub(super) fn var_term(&mut self, name: &str) -> Term {
        let key = name.trim_start_matches(':').to_lowercase();
        // JDBC's `?` (crate::frontend::sql::parser names it by its file
        // offset): each one a parameter of its own, `?1`, `?2`, … in file
        // order. Never two `?` as one value: that would claim same tuples.
        if let Some(at) = key.strip_prefix("?@").and_then(|a| a.parse::<usize>().ok()) {
            return Term::Param(self.qmark_name(at));
        }
        if key == "?" {
            return self.vars.fresh();
        }
        // `:a$$i$` is `:a[:i]` (crate::frontend::sql::rewrite_subscripts); `$1` is a
        // positional parameter.
        if let Some((array, index)) = key.split_once('$').filter(|(a, _)| !a.is_empty()) {
            let a = self.var_term(array);
            // `:r$f` (no closing `$`): field f of record r (or of cursor
            // r's row), named by a constant — never the value of a
            // variable f, which could make two fields of r one value.
            if !index.ends_with('$') {
                return Term::Elem(Box::new(a), Box::new(Term::Lit(format!("\"{index}\""))));
            }
            let index = index.trim_matches('$').to_string();
            let i = if index.bytes().all(|b| b.is_ascii_digit()) {
                Term::Lit(index)
            } else {
                self.var_term(&index)
            };
            return Term::Elem(Box::new(a), Box::new(i));
        }
        self.vars.env.get(&key).cloned().unwrap_or(Term::Param(key))
    }

    /// `?N` for the N-th `?` of the program's file; a `?` elsewhere (an
    /// inlined body) or one the file scan missed gets a name no `?N` has.
    fn qmark_name(&mut self, at: usize) -> String {
        let file = self.src.file.clone();
        let (name, offsets) = self.src.qmarks.get_or_insert_with(|| {
            (
                file.name.clone(),
                crate::frontend::sql::qmark_offsets(&file.text),
            )
        });
        match offsets.iter().position(|&o| o == at) {
            Some(i) if *name == file.name => format!("?{}", i + 1),
            _ => format!("?{}@{at}", file.name),
        }
    }

    pub(super) fn term(&mut self, e: &Expr) -> Term {
        match e {
            Expr::Value(v) => match &v.value {
                Value::Placeholder(p) => self.var_term(p),
                Value::Number(n, _) => Term::Lit(n.clone()),
                // As a standard literal writes the value (`E'it\'s'` and
                // `'it''s'` are one value): the replay unquotes it so.
                Value::SingleQuotedString(s) | Value::EscapedStringLiteral(s) => {
                    Term::Lit(format!("'{}'", s.replace('\'', "''")))
                }
                _ => self.vars.fresh(),
            },
            Expr::Nested(inner) => self.term(inner),
            // `$1::bigint` (graphile-worker's `id = $1::bigint`): the
            // parameter itself, where the cast cannot change its value.
            Expr::Cast {
                expr,
                data_type,
                format: None,
                ..
            } if self.untyped_params() && exact_cast(&data_type.to_string()) => {
                match self.term(expr) {
                    t @ Term::Param(_) => t,
                    _ => self.vars.fresh(),
                }
            }
            _ => self.vars.fresh(),
        }
    }

    /// Are the program's parameters untyped here? A plain SQL program's
    /// `:name`, `?` and `$n` have no declared type: PostgreSQL infers a
    /// parameter's type from the cast on it (`$1::bigint` makes `$1` a
    /// bigint), so the cast is the identity. A routine's parameters (a
    /// PL/pgSQL routine as a program, `Unit::typed`; a LANGUAGE sql
    /// function's call program) and the arguments of an inlined function
    /// have declared types: there a cast may convert
    /// (`p::bigint` of a numeric `p` rounds, of a text `p` reads '05' and
    /// '5' as one number) and is no identity.
    fn untyped_params(&self) -> bool {
        !self.vars.typed && self.inl.inline_stack.is_empty()
    }

    /// Bind the statement's columns to the terms of its equalities.
    pub(super) fn bind(&mut self, q: usize, eq: &[(usize, Term)]) {
        for (c, t) in eq {
            self.out.facts[q]
                .bound
                .entry(*c)
                .or_insert_with(|| t.clone());
        }
    }

    /// Binds the equalities of `u` and notes, for the provenance, when the
    /// WHERE says more about the pinned columns than the equalities (a
    /// conjunct on a pinned column or on no column at all).
    pub(super) fn bind_uses(&mut self, q: usize, u: &ColumnUses) {
        let eq = u.eq.clone();
        self.bind(q, &eq);
        for (c, t) in &u.joined {
            if !self.out.facts[q].value_pins.iter().any(|(x, _)| x == c) {
                self.out.facts[q].value_pins.push((*c, t.clone()));
                self.out.facts[q].joined.push(*c);
            }
        }
        self.out.facts[q].inexact |= u.opaque || eq.iter().any(|(c, _)| u.extra.contains(c));
        // A range on a column only ranges test (not pinned, not joined).
        for (c, t, upper) in &u.ranges {
            let alone = !u.unranged.contains(c)
                && !u.join.contains(c)
                && !eq.iter().any(|(e, _)| e == c)
                && !u.joined.iter().any(|(j, _)| j == c);
            if alone {
                self.out.facts[q].ranges.push((*c, t.clone(), *upper));
            }
        }
    }

    /// The value a term denotes on the path `path`: columns pinned by
    /// their statement are followed, phis of IFs on the path resolved.
    pub(super) fn resolve(&self, t: &Term, path: &[(usize, usize)], depth: usize) -> Term {
        if depth > 64 {
            return t.clone();
        }
        match t {
            Term::Col(q, c) => match self.out.facts[*q].bound.get(c) {
                Some(b) => self.resolve(b, path, depth + 1),
                None => t.clone(),
            },
            Term::Phi(k) => {
                let (if_id, values) = &self.vars.phis[*k];
                match path.iter().find(|(i, _)| i == if_id) {
                    Some((_, b)) => values
                        .get(*b)
                        .map_or(t.clone(), |v| self.resolve(v, path, depth + 1)),
                    None => t.clone(),
                }
            }
            _ => t.clone(),
        }
    }

    /// The branch choices of two statements together; `None` when they are
    /// in different branches of one IF (they never run together).
    pub(super) fn joint_path(&self, i: usize, j: usize) -> Option<Vec<(usize, usize)>> {
        let mut p = self.out.facts[i].path.clone();
        for &(k, b) in &self.out.facts[j].path {
            match p.iter().find(|(k2, _)| *k2 == k) {
                Some(&(_, b2)) if b2 != b => return None,
                Some(_) => {}
                None => p.push((k, b)),
            }
        }
        Some(p)
    }

    pub(super) fn same_value(&self, a: Term, b: Term, path: &[(usize, usize)]) -> bool {
        let (x, y) = (self.resolve(&a, path, 0), self.resolve(&b, path, 0));
        x == y
    }

    /// `:v` of INTO gets column c of q's tuple (key-based statements,
    /// columns not changed by the statement) or a fresh symbol.
    pub(super) fn assign_into(
        &mut self,
        into: &[String],
        q: usize,
        key_based: bool,
        cols: &[Option<usize>],
        changed: &BTreeSet<usize>,
    ) {
        for (k, v) in into.iter().enumerate() {
            let t = match cols.get(k).copied().flatten() {
                Some(c) if key_based && !changed.contains(&c) => Term::Col(q, c),
                _ => self.vars.fresh(),
            };
            self.vars.env.insert(v.clone(), t);
        }
    }
}

impl Lowerer<'_> {
    /// Provenance (see `model::provenance`): each statement's pinned
    /// columns, their terms resolved along the statement's own path.
    pub(super) fn pins(&self) -> Vec<Pins> {
        self.out
            .facts
            .iter()
            .map(|f| {
                let extra = f
                    .value_pins
                    .iter()
                    .filter(|(c, _)| !f.bound.contains_key(c))
                    .map(|(c, t)| (c, t));
                let mut v: Pins = f
                    .bound
                    .iter()
                    .chain(extra)
                    .map(|(c, t)| (*c, self.value(&self.resolve(t, &f.path, 0))))
                    .collect();
                v.sort_by_key(|(c, _)| *c);
                v
            })
            .collect()
    }

    /// Provenance: each statement's range conjuncts, their bounds resolved
    /// along the statement's own path (`Provenance::ranges`).
    pub(super) fn ranges(&self) -> Vec<crate::model::provenance::Range> {
        let mut out = vec![];
        for (q, f) in self.out.facts.iter().enumerate() {
            for (c, t, upper) in &f.ranges {
                let v = self.value(&self.resolve(t, &f.path, 0));
                out.push((q, *c, v, *upper));
            }
        }
        out
    }

    /// Provenance: each UPDATE's plain SET values (`Provenance::sets`).
    pub(super) fn sets(&self) -> Vec<(usize, usize, PinValue)> {
        let mut out = vec![];
        for (q, f) in self.out.facts.iter().enumerate() {
            for (c, t) in &f.sets {
                out.push((q, *c, self.value(&self.resolve(t, &f.path, 0))));
            }
        }
        out
    }

    /// Provenance: the pins whose value is an IF's result, per branch
    /// (`model::provenance::Provenance::alternatives`).
    pub(super) fn alternatives(&self) -> Vec<crate::model::provenance::Alternative> {
        let mut out = vec![];
        for (q, f) in self.out.facts.iter().enumerate() {
            let pins = f
                .bound
                .iter()
                .chain(f.value_pins.iter().map(|(c, t)| (c, t)));
            for (c, t) in pins {
                let Term::Phi(k) = self.resolve(t, &f.path, 0) else {
                    continue;
                };
                let (if_id, values) = &self.vars.phis[k];
                if *if_id == CTE_MATCH {
                    out.push((q, *c, self.cte_match(values)));
                    continue;
                }
                let options = values
                    .iter()
                    .enumerate()
                    .map(|(b, v)| {
                        let mut path = f.path.clone();
                        path.push((*if_id, b));
                        // Statements directly in the branch that run
                        // whenever it runs mark it (a branch without one
                        // has none: the explorer then cannot tell).
                        let marks: Vec<usize> = (0..self.out.facts.len())
                            .filter(|&x| {
                                let g = &self.out.facts[x];
                                g.path.last() == Some(&(*if_id, b))
                                    && g.certain
                                    && !g.rolled_back
                                    && g.loops.len() <= f.loops.len()
                            })
                            .collect();
                        (marks, self.value(&self.resolve(v, &path, 0)))
                    })
                    .collect();
                out.push((q, *c, options));
            }
        }
        out
    }

    /// The alternatives of a join on a CTE's row with extra conjuncts
    /// (`cte_rows::CTE_MATCH`): NULL (SQL `= NULL` matches no row) where
    /// the no-match key sel ran, else the row's column.
    fn cte_match(&self, values: &[Term]) -> Vec<(Vec<usize>, PinValue)> {
        values
            .iter()
            .enumerate()
            .filter_map(|(b, t)| match t {
                Term::Col(..) if b == 0 => Some((vec![], self.value(t))),
                Term::Col(q, _) => Some((vec![*q], PinValue::Literal("NULL".into()))),
                _ => None,
            })
            .collect()
    }

    fn value(&self, t: &Term) -> PinValue {
        match t {
            Term::Param(p) => PinValue::Param(p.clone()),
            Term::Lit(l) => PinValue::Literal(l.clone()),
            Term::Fresh(n) => PinValue::Unknown(*n),
            Term::Col(stmt, attr) => PinValue::Column {
                stmt: *stmt,
                attr: *attr,
            },
            // A value after an IF that is not on this statement's path:
            // which branch ran is not known here.
            Term::Phi(_) => PinValue::Unknown(usize::MAX),
            Term::Elem(a, i) => PinValue::Element {
                array: Box::new(self.value(a)),
                index: Box::new(self.value(i)),
            },
        }
    }
}

/// A cast to a type that holds every value of an untyped parameter cast to
/// it unchanged: no typmod (`varchar(3)` truncates, `numeric(5, 2)` and
/// `timestamp(0)` round), and not `char` (which is `char(1)`) nor `bit`
/// (`bit(1)`). Arrays of such types too (`$1::bigint[]`).
pub(super) fn exact_cast(ty: &str) -> bool {
    let t = ty.trim().to_ascii_lowercase();
    let base = t.trim_end_matches("[]");
    if base.contains('(') {
        return false;
    }
    matches!(
        base,
        "smallint"
            | "integer"
            | "int"
            | "bigint"
            | "int2"
            | "int4"
            | "int8"
            | "text"
            | "varchar"
            | "character varying"
            | "uuid"
            | "boolean"
            | "bool"
            | "date"
            | "timestamp"
            | "timestamptz"
            | "timestamp with time zone"
            | "timestamp without time zone"
            | "numeric"
            | "jsonb"
    )
}
