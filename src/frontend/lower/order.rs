//! The order of work inside one statement (issue 21, class 2).
//!
//! PostgreSQL takes one snapshot when a statement starts. Every plain read
//! of the statement — SELECT CTEs, the main query, the WHERE scans of
//! data-modifying parts, the tables of a join that `FOR UPDATE OF` does
//! not lock — sees that snapshot. What waits for a row lock (the writes of
//! UPDATE/DELETE/INSERT … ON CONFLICT, locking reads) runs later and reads
//! the locked row's latest version (EvalPlanQual); other transactions may
//! commit in between. The BTP of such a statement is therefore: the
//! snapshot reads first, then the lock-waiting parts. A schedule that puts
//! no other transaction between them is the statement run without a
//! wait; one that puts transactions before the later parts is a wait.
//! Each real execution maps to one of these schedules: the snapshot reads
//! read what the snapshot holds, each lock-waiting part reads what was
//! committed when it got its lock, and the position of this transaction's
//! own writes only matters for those reads (its writes are invisible to
//! others until it commits). The statement lowering functions build the
//! two groups (`Lowerer::split`); `renumber` keeps statement indices in
//! program order afterwards, which the inference of constraints and of
//! missing rows relies on.

use super::vocab::Term;
use super::{Facts, Lowerer};
use crate::frontend::sql::procedural::Node;
use crate::frontend::sql::Snippet;
use crate::model::btp::{Body, Statement};
use crate::model::error::Result;
use sqlparser::ast::{Expr, Statement as Sql};
use std::ops::ControlFlow;

impl Lowerer<'_> {
    /// Renumber the statements created since `mark` so that their indices
    /// (and ids) follow their order in `body`, which the WITH lowering
    /// built in an order other than creation order.
    pub(super) fn renumber(&mut self, mark: usize, body: Body) -> Body {
        let n = self.out.statements.len();
        let mut order = vec![];
        body.statements(&mut order);
        order.retain(|&q| q >= mark);
        for q in mark..n {
            if !order.contains(&q) {
                order.push(q);
            }
        }
        if order.iter().copied().eq(mark..n) {
            return body;
        }
        let mut new_of = vec![0; n - mark];
        for (k, &old) in order.iter().enumerate() {
            new_of[old - mark] = mark + k;
        }
        let map = |q: usize| if q >= mark { new_of[q - mark] } else { q };
        let ids: Vec<String> = (mark..n)
            .map(|q| self.out.statements[q].id.clone())
            .collect();
        let mut stmts: Vec<Option<Statement>> =
            self.out.statements.drain(mark..).map(Some).collect();
        let mut facts: Vec<Option<Facts>> = self.out.facts.drain(mark..).map(Some).collect();
        for (k, &old) in order.iter().enumerate() {
            if let (Some(mut s), Some(f)) = (stmts[old - mark].take(), facts[old - mark].take()) {
                s.id = ids[k].clone();
                self.out.statements.push(s);
                self.out.facts.push(f);
            }
        }
        for f in &mut self.out.facts {
            for t in f.bound.values_mut() {
                remap_term(t, &map);
            }
            for (_, t) in &mut f.value_pins {
                remap_term(t, &map);
            }
        }
        for (_, s) in &mut self.out.sources {
            if let crate::model::provenance::Source::Read { stmt, .. }
            | crate::model::provenance::Source::Counter { stmt, .. } = s
            {
                *stmt = map(*stmt);
            }
        }
        for t in self.vars.env.values_mut() {
            remap_term(t, &map);
        }
        for (_, values) in &mut self.vars.phis {
            values.iter_mut().for_each(|t| remap_term(t, &map));
        }
        // Checks queued for COMMIT (a deferred foreign key's check made
        // in the body of a VOLATILE function) move with their statements.
        for (q, _) in &mut self.out.at_commit {
            *q = map(*q);
        }
        remap_body(body, &map)
    }

    /// Whether a statement calls a VOLATILE user function (`LANGUAGE sql`:
    /// the ones inlined here) anywhere in it.
    pub(super) fn calls_volatile(&self, sql: &Sql) -> bool {
        let found = sqlparser::ast::visit_expressions(sql, |e| {
            if let Expr::Function(f) = e {
                let name = f.name.0.last().and_then(|p| p.as_ident());
                let hit = name.is_some_and(|i| {
                    self.cat.functions.iter().any(|(d, _)| {
                        d.volatile && d.language == "sql" && d.name == i.value.to_lowercase()
                    })
                });
                if hit {
                    return ControlFlow::Break(());
                }
            }
            ControlFlow::Continue(())
        });
        found.is_break()
    }

    /// A statement that calls a VOLATILE function: PostgreSQL runs the
    /// function's statements each on a fresh snapshot, after the outer
    /// statement read its rows on its own snapshot (once per row when the
    /// call is evaluated per row) and before the row is written (after a
    /// lock wait EvalPlanQual evaluates the call again, still before the
    /// write). So: the statement's snapshot reads, then the calls' bodies
    /// (`call` leaves them in `defer`; a loop when per row), then its
    /// writes and locking reads. `after`: the bodies of VOLATILE PL/pgSQL
    /// routines called in the statement, lowered already (from statement
    /// `.0` on), which go to the same place.
    pub(super) fn lower_volatile(
        &mut self,
        sql: &Sql,
        into: &[String],
        s: &Snippet,
        next: Option<&Node>,
        weak_lock: bool,
        after: Option<(usize, Body)>,
    ) -> Result<Body> {
        let saved = (self.stage.defer.replace(vec![]), self.take_split());
        let (mark, pl) = match after {
            Some((m, b)) => (m, Some(b)),
            None => (self.out.statements.len(), None),
        };
        self.stage.split = true;
        let r = self.lower_sql(sql, into, s, next, weak_lock);
        self.stage.split = false;
        let mut parts = self.take_split();
        parts.extend(self.stage.defer.take().unwrap_or_default());
        parts.extend(pl);
        (self.stage.defer, self.stage.split_out) = saved;
        parts.push(r?);
        Ok(self.renumber(mark, Body::Seq(parts)))
    }

    /// Take the snapshot reads a split part left in `split_out`.
    pub(super) fn take_split(&mut self) -> Vec<Body> {
        std::mem::take(&mut self.stage.split_out)
    }
}

fn remap_term(t: &mut Term, map: &dyn Fn(usize) -> usize) {
    match t {
        Term::Col(q, _) => *q = map(*q),
        Term::Elem(a, i) => {
            remap_term(a, map);
            remap_term(i, map);
        }
        _ => {}
    }
}

fn remap_body(b: Body, map: &dyn Fn(usize) -> usize) -> Body {
    match b {
        Body::Stmt(q) => Body::Stmt(map(q)),
        Body::Seq(v) => Body::Seq(v.into_iter().map(|x| remap_body(x, map)).collect()),
        Body::Branch(v) => Body::Branch(v.into_iter().map(|x| remap_body(x, map)).collect()),
        Body::Opt(x) => Body::Opt(Box::new(remap_body(*x, map))),
        Body::Loop(x) => Body::Loop(Box::new(remap_body(*x, map))),
    }
}
