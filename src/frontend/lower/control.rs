//! Control structure: sequences, IF/ELSIF/CASE, loops and their heads,
//! EXIT/CONTINUE, RAISE/ASSERT/assignment nodes → `Body`; and what the
//! program says about rows that may be missing (FOUND, NULL tests).

use super::clauses::strip_nested;
use super::vocab::Term;
use super::{each_cond, each_stmt, is_empty, push_seq, Lowerer};
use crate::frontend::sql::procedural::{LoopHead, Node, ProcExpr, Stmt};
use crate::model::btp::Body;
use crate::model::error::{Diag, Result};
use sqlparser::ast::{BinaryOperator, Expr, UnaryOperator, Value};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::ops::ControlFlow;

use crate::frontend::sql::plpgsql::{
    EXECUTE_LABEL, ONE_SNAPSHOT_LABEL, ROW_COUNT_MARK, VOLATILE_LABEL,
};

impl Lowerer<'_> {
    /// Lower a list of nodes. `None` body: every path aborts. The flag
    /// says whether an EXIT may leave the enclosing loop from here.
    pub(super) fn block(&mut self, nodes: &[Node]) -> Result<(Option<Body>, bool)> {
        let mut seq: Vec<Body> = vec![];
        let mut i = 0;
        while i < nodes.len() {
            let node = &nodes[i];
            // What runs after a compound node, for FOUND tests after it.
            let compound = matches!(
                node,
                Node::If(_) | Node::Loop { .. } | Node::Block { .. } | Node::Prefix(_)
            );
            if compound {
                self.pos.continuations.push(nodes[i + 1..].to_vec());
            }
            let r = self.block_node(nodes, i);
            if compound {
                self.pos.continuations.pop();
            }
            let (b, exits) = match r? {
                Some(r) => r,
                None => return Ok((None, false)),
            };
            match b {
                None => return Ok((None, false)),
                Some(b) => push_seq(&mut seq, b),
            }
            i += 1;
            if exits {
                // The rest of this sequence may be skipped by the EXIT: an
                // over-approximation (later iterations stay possible).
                let mark = self.out.statements.len();
                match self.block(&nodes[i..])?.0 {
                    Some(r) if !is_empty(&r) => seq.push(Body::Opt(Box::new(r))),
                    Some(_) => {}
                    // Going on after the EXIT always aborts: only leaving counts.
                    None => self.truncate(mark),
                }
                return Ok((Some(Body::Seq(seq)), true));
            }
        }
        Ok((Some(Body::Seq(seq)), false))
    }

    /// One node of a sequence (`nodes[i]`, what follows it for FOUND and
    /// the abort idioms). `None`: every path aborts.
    fn block_node(&mut self, nodes: &[Node], i: usize) -> Result<Option<(Option<Body>, bool)>> {
        let node = &nodes[i];
        Ok(Some(match node {
            Node::Sql(s) => (Some(self.statement(s, &nodes[i + 1..])?), false),
            // EXECUTE 'literal': a statement whose row count (not
            // FOUND) what follows may test.
            Node::Block { .. } if executed(node).is_some() => {
                let s = executed(node).ok_or_else(|| Diag::new("internal error: EXECUTE"))?;
                (Some(self.statement(s, &nodes[i + 1..])?), false)
            }
            // A statement and the per-row calls of VOLATILE routines in
            // it: the calls are lowered first (their results are the
            // statement's `:__callN`), placed by order.rs.
            Node::Block {
                label: Some(l),
                body,
                ..
            } if l == VOLATILE_LABEL => match self.volatile_calls(body, &nodes[i + 1..])? {
                Some(r) => r,
                None => return Ok(None),
            },
            // A STABLE routine's queries, or a statement and the STABLE
            // routines it calls: one snapshot (`ONE_SNAPSHOT_LABEL`).
            Node::Block { label: Some(l), .. } if l == ONE_SNAPSHOT_LABEL => {
                match self.one_snapshot(node)? {
                    Some(r) => r,
                    None => return Ok(None),
                }
            }
            // In the rolled-back prefix of an EXCEPTION block, an
            // error is what starts the handler: the path goes on.
            Node::Abort if self.pos.prefix > 0 => (Some(Body::Seq(vec![])), false),
            Node::Abort => return Ok(None),
            Node::Return { .. }
            | Node::Block { .. }
            | Node::Prefix(_)
            | Node::Open(_)
            | Node::Call { .. } => match self.pl_node(node)? {
                Some(r) => r,
                None => return Ok(None),
            },
            // EXIT and EXIT WHEN are treated alike: the rest of the body
            // becomes optional either way (the condition's value is not
            // modelled, its reads are). CONTINUE skips the rest too.
            Node::Exit {
                at,
                when,
                is_continue,
                label,
            } => {
                if self.pos.loops.is_empty() && label.is_none() {
                    let what = if *is_continue { "CONTINUE" } else { "EXIT" };
                    return Err(Diag::new(format!("{what} outside a loop"))
                        .help(format!("{what} acts on the innermost LOOP; remove it or put it inside LOOP … END LOOP;"))
                        .at(&self.src.file, *at, what.len(), "here"));
                }
                let reads = match when {
                    Some(c) => self.expr_reads(c)?,
                    None => Body::Seq(vec![]),
                };
                (Some(reads), true)
            }
            Node::If(branches) => self.if_node(branches)?,
            Node::Loop {
                head, body, label, ..
            } => (
                Some(self.loop_node(head, body)?),
                escapes(body, label.as_deref(), true),
            ),
            Node::Eval(exprs) => {
                let mut parts = vec![];
                for e in exprs {
                    parts.push(self.expr_reads(e)?);
                }
                (Some(Body::Seq(parts)), false)
            }
            Node::Assign { var, expr } => {
                let reads = self.expr_reads(expr)?;
                let t = self.term(&expr.expr);
                self.vars.env.insert(var.clone(), t);
                (Some(reads), false)
            }
            Node::Begin { level, at } => {
                if let Some(level) = level {
                    self.warn(*at, format!("declares ISOLATION LEVEL {level}: `check` tests robustness with this level for the program (docs/allocation.md)"));
                }
                (Some(Body::Seq(vec![])), false)
            }
            // Its effect is on the foreign-key checks
            // (`constraint_modes`, before lowering).
            Node::SetConstraints { .. } => (Some(Body::Seq(vec![])), false),
            Node::Commit { at } => {
                return Err(Diag::new("internal error: COMMIT inside a transaction").at(
                    &self.src.file,
                    *at,
                    6,
                    "here",
                ))
            }
        }))
    }

    /// A statement (`body[0]`) and the per-row calls of VOLATILE routines
    /// in it (`VOLATILE_LABEL`; `rest`: what follows the statement). `None`:
    /// every path of the calls aborts.
    fn volatile_calls(
        &mut self,
        body: &[Node],
        rest: &[Node],
    ) -> Result<Option<(Option<Body>, bool)>> {
        let Some((Node::Sql(s), calls)) = body.split_first() else {
            return Err(Diag::new("internal error: VOLATILE call block"));
        };
        let mark = self.out.statements.len();
        // A VOLATILE body's queries take snapshots of their own, also
        // inside a block that reads one (STABLE calls beside them, or a
        // STABLE routine around the statement).
        let snap = self.stage.snap.take();
        let calls = self.block(calls);
        self.stage.snap = snap;
        let Some(b) = calls?.0 else {
            return Ok(None);
        };
        self.stage.after = Some((mark, b));
        let r = self.statement(s, rest);
        self.stage.after = None;
        Ok(Some((Some(r?), false)))
    }

    /// A block read from one snapshot (`ONE_SNAPSHOT_LABEL`): a new
    /// snapshot group unless one is open already (a STABLE routine inside
    /// another reads its caller's snapshot).
    fn one_snapshot(&mut self, node: &Node) -> Result<Option<(Option<Body>, bool)>> {
        let saved = self.stage.snap;
        if saved.is_none() {
            self.stage.groups += 1;
            self.stage.snap = Some((self.stage.groups, self.pos.loops.len()));
        }
        let r = self.pl_node(node);
        self.stage.snap = saved;
        r
    }

    /// IF c1 THEN A ELSIF c2 THEN B ELSE C: c1's reads, then A or (c2's
    /// reads, then B or C): each condition is evaluated only when the
    /// ones before it were false.
    pub(super) fn if_node(
        &mut self,
        branches: &[(Option<ProcExpr>, Vec<Node>)],
    ) -> Result<(Option<Body>, bool)> {
        let Some((Some(cond), then)) = branches.first() else {
            // ELSE alone (the selector wrapper of a CASE).
            let body = branches.first().map_or(&[][..], |b| &b.1[..]);
            return self.block(body);
        };
        let reads = self.expr_reads(cond)?;
        let rest: Vec<(Option<ProcExpr>, Vec<Node>)> = match branches.get(1) {
            None => vec![],
            Some((None, body)) => vec![(None, body.clone())],
            Some((Some(_), _)) => vec![(None, vec![Node::If(branches[1..].to_vec())])],
        };
        let mut two = vec![(Some(cond.clone()), then.clone())];
        two.extend(rest);
        let (b, exits) = self.branch(&two)?;
        Ok((
            b.map(|b| {
                let mut seq = vec![];
                push_seq(&mut seq, reads);
                push_seq(&mut seq, b);
                Body::Seq(seq)
            }),
            exits,
        ))
    }

    /// The alternatives of an IF (conditions already lowered).
    pub(super) fn branch(
        &mut self,
        branches: &[(Option<ProcExpr>, Vec<Node>)],
    ) -> Result<(Option<Body>, bool)> {
        let id = self.pos.next_if;
        self.pos.next_if += 1;
        let before = self.vars.env.clone();
        let mut alts = vec![];
        let mut exits = false;
        let mut ends: Vec<HashMap<String, Term>> = vec![];
        for (bi, (_, nodes)) in branches.iter().enumerate() {
            self.vars.env = before.clone();
            self.pos.path.push((id, bi));
            let mark = self.out.statements.len();
            let (b, e) = self.block(nodes)?;
            if b.is_none() {
                self.truncate(mark);
            }
            self.pos.path.pop();
            exits |= e;
            if let Some(b) = b {
                alts.push(b);
                ends.push(self.vars.env.clone());
            } else {
                // An aborting branch contributes no value.
                ends.push(HashMap::new());
            }
        }
        if branches.last().is_some_and(|(c, _)| c.is_some()) {
            alts.push(Body::Seq(vec![]));
            ends.push(before.clone());
        }
        // Variables some branch changed get a phi, resolved per path.
        let mut names: BTreeSet<String> = BTreeSet::new();
        for end in &ends {
            for (k, v) in end {
                if before.get(k) != Some(v) {
                    names.insert(k.clone());
                }
            }
        }
        self.vars.env = before.clone();
        for v in names {
            let values: Vec<Term> = ends
                .iter()
                .map(|end| {
                    end.get(&v)
                        .cloned()
                        .or_else(|| before.get(&v).cloned())
                        .unwrap_or(Term::Param(v.clone()))
                })
                .collect();
            self.vars.phis.push((id, values));
            self.vars.env.insert(v, Term::Phi(self.vars.phis.len() - 1));
        }
        // Alternatives without statements are all ε: one is enough.
        if alts.iter().all(is_empty) && !alts.is_empty() {
            return Ok((Some(Body::Seq(vec![])), exits));
        }
        Ok(match alts.len() {
            0 => (None, false),
            1 => (alts.pop(), exits),
            _ => (Some(Body::Branch(alts)), exits),
        })
    }

    /// A loop and what its head evaluates: a FOR's range bounds, query or
    /// array once before the first iteration; a WHILE's condition before
    /// every iteration and once more at the end.
    pub(super) fn loop_node(&mut self, head: &LoopHead, body: &[Node]) -> Result<Body> {
        let mut before = vec![];
        match head {
            LoopHead::Plain | LoopHead::While(_) => {}
            LoopHead::Range { bounds, .. } => {
                for b in bounds {
                    push_seq(&mut before, self.expr_reads(b)?);
                }
            }
            LoopHead::Array { expr, .. } => push_seq(&mut before, self.expr_reads(expr)?),
            LoopHead::Query { query, .. } => {
                // The query runs once; it may return no row (no abort).
                self.pos.sub_depth += 1;
                let r = self.statement(query, &[]);
                self.pos.sub_depth -= 1;
                push_seq(&mut before, r?);
            }
        }
        let id = self.pos.next_loop;
        self.pos.next_loop += 1;
        // Variables assigned in the body differ between iterations: fresh
        // symbols at entry and at exit.
        let mut assigned = HashSet::new();
        collect_assigned(body, &mut assigned);
        if let Some(v) = head.var() {
            assigned.insert(v.to_string());
        }
        for v in &assigned {
            let t = self.vars.fresh();
            // Provenance: a FOR over a range takes a new value each
            // iteration (the explorer's values, issue 23).
            if let (LoopHead::Range { var, .. }, Term::Fresh(n)) = (head, &t) {
                if var.eq_ignore_ascii_case(v) {
                    self.out
                        .sources
                        .push((*n, crate::model::provenance::Source::RangeLoop));
                }
            }
            self.vars.env.insert(v.clone(), t);
        }
        if let LoopHead::While(c) = head {
            push_seq(&mut before, self.expr_reads(c)?);
        }
        self.pos.loops.push(id);
        let mark = self.out.statements.len();
        // The next iteration (a WHILE's condition first) follows the body.
        let mut next: Vec<Node> = match head {
            LoopHead::While(c) => vec![Node::Eval(vec![c.clone()])],
            _ => vec![],
        };
        next.extend(body.iter().cloned());
        self.pos.continuations.push(next);
        let r = self.block(body);
        self.pos.continuations.pop();
        let (b, _) = r?;
        if b.is_none() {
            self.truncate(mark);
        }
        let b = match (b, head) {
            (Some(b), LoopHead::While(c)) => {
                let mut seq = vec![];
                push_seq(&mut seq, b);
                push_seq(&mut seq, self.expr_reads(c)?);
                Some(Body::Seq(seq))
            }
            (b, _) => b,
        };
        self.pos.loops.pop();
        for v in &assigned {
            let t = self.vars.fresh();
            self.vars.env.insert(v.clone(), t);
        }
        // A body that always aborts can only run zero times; a body
        // without statements contributes nothing.
        if let Some(b) = b.filter(|b| !is_empty(b)) {
            before.push(Body::Loop(Box::new(b)));
        }
        Ok(Body::Seq(before))
    }

    /// A statement of the program. Whether it may find no row (and the
    /// program go on) is decided here from what follows it: a test of
    /// FOUND right after it, or a NULL test of a variable it sets,
    /// unless that test only leads to an abort (the paper's assumption,
    /// Section 5.4, then holds).
    pub(super) fn statement(&mut self, s: &Stmt, rest: &[Node]) -> Result<Body> {
        let next = rest.first();
        // FOUND after the end of this sequence: what runs next (after the
        // enclosing IF, block or loop, or the loop's next iteration).
        let (mut found, mut open) = found_scan(rest);
        for after in self.pos.continuations.iter().rev() {
            if found || !open {
                break;
            }
            (found, open) = found_scan(after);
        }
        let evidence = found || s.into.iter().any(|v| self.vars.null_tested.contains(v));
        let saved = (self.pos.stmt_may_miss, self.pos.stmt_tested);
        self.pos.stmt_may_miss = evidence && !self.aborts_after(&s.into, rest);
        self.pos.stmt_tested = evidence;
        let open = self.open_statement(&s.snip);
        let r = self.lower_audited(&s.sql, &s.into, &s.snip, next, s.weak_lock, Some(&s.pg));
        (self.stage.exec, self.stage.snap, self.stage.exec_sql) = open;
        (self.pos.stmt_may_miss, self.pos.stmt_tested) = saved;
        r
    }

    /// The abort idioms right after a statement: `IF NOT FOUND THEN
    /// RAISE/ROLLBACK`, `IF :v IS NULL THEN …` for a RETURNING … INTO :v,
    /// or `GET DIAGNOSTICS n = ROW_COUNT; IF n = 0 THEN …` (any
    /// comparison of n with a number that holds for n = 0).
    pub(super) fn aborts_after(&self, into: &[String], rest: &[Node]) -> bool {
        let mut counts = vec![];
        let mut k = 0;
        while let Some(Node::Assign { var, expr }) = rest.get(k) {
            if expr.snip.text != ROW_COUNT_MARK {
                break;
            }
            counts.push(var.clone());
            k += 1;
        }
        let Some(Node::If(branches)) = rest.get(k) else {
            return false;
        };
        let Some((Some(cond), body)) = branches.first() else {
            return false;
        };
        if !(body.len() == 1 && matches!(body[0], Node::Abort)) {
            return false;
        }
        if counts
            .iter()
            .any(|n| holds_at_zero(&cond.expr, n) == Some(true))
        {
            return true;
        }
        k == 0 && self.aborts_when_no_match(into, rest.first())
    }

    /// The abort idioms of `aborts_after` without GET DIAGNOSTICS.
    pub(super) fn aborts_when_no_match(&self, into: &[String], next: Option<&Node>) -> bool {
        let Some(Node::If(branches)) = next else {
            return false;
        };
        let Some((Some(cond), body)) = branches.first() else {
            return false;
        };
        if !(body.len() == 1 && matches!(body[0], Node::Abort)) {
            return false;
        }
        match &cond.expr {
            Expr::UnaryOp {
                op: UnaryOperator::Not,
                expr,
            } => {
                matches!(expr.as_ref(), Expr::Identifier(i) if i.value.eq_ignore_ascii_case("found"))
            }
            Expr::IsNull(inner) => match inner.as_ref() {
                Expr::Value(v) => match &v.value {
                    Value::Placeholder(p) => {
                        into.contains(&p.trim_start_matches(':').to_lowercase())
                    }
                    _ => false,
                },
                _ => false,
            },
            _ => false,
        }
    }
}

/// The statement of an `EXECUTE 'literal'` (see `plpgsql::EXECUTE_LABEL`).
fn executed(node: &Node) -> Option<&Stmt> {
    match node {
        Node::Block {
            label: Some(l),
            body,
            handlers: None,
            file: None,
        } if l == EXECUTE_LABEL => match body.as_slice() {
            [Node::Sql(s)] => Some(s),
            _ => None,
        },
        _ => None,
    }
}

/// Variables assigned (by INTO, `:=` or a FOR) anywhere in `nodes`.
pub(super) fn collect_assigned(nodes: &[Node], out: &mut HashSet<String>) {
    each_stmt(nodes, &mut |s| out.extend(s.into.iter().cloned()));
    fn walk(nodes: &[Node], out: &mut HashSet<String>) {
        for n in nodes {
            match n {
                Node::Assign { var, .. } => {
                    out.insert(var.clone());
                }
                Node::If(bs) => bs.iter().for_each(|(_, b)| walk(b, out)),
                Node::Loop { head, body, .. } => {
                    out.extend(head.var().map(str::to_string));
                    walk(body, out);
                }
                Node::Block { body, handlers, .. } => {
                    walk(body, out);
                    handlers.iter().flatten().for_each(|h| walk(h, out));
                }
                Node::Prefix(body) => walk(body, out),
                Node::Call { result, .. } => out.extend(result.clone()),
                _ => {}
            }
        }
    }
    walk(nodes, out);
}

/// Whether FOUND (or the row count) is tested after a statement, before
/// the next statement that sets FOUND, and whether the search may run off
/// the end of `rest` (or jump out of it by an EXIT) without meeting such a
/// statement: `(tested, open)`. Nodes that may or may not set FOUND (IF,
/// blocks, WHILE and plain loops, EXECUTE) do not end the search: FOUND
/// after them may still be this statement's. An IF is searched branch by
/// branch (a mention after a branch's own statement is that statement's);
/// a mention anywhere inside another node counts (may-miss only adds
/// conflicts).
pub(super) fn found_scan(rest: &[Node]) -> (bool, bool) {
    let word = |t: &str| {
        t.split(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_'))
            .any(|w| w.eq_ignore_ascii_case("found"))
    };
    let mut open = false;
    for n in rest {
        let one = std::slice::from_ref(n);
        if let Node::If(branches) = n {
            // The conditions run before any branch; then one branch runs
            // (or none, without ELSE) and the search goes on after the IF
            // unless every branch sets FOUND (or ends the path) first.
            let mut closed = branches.last().is_some_and(|(c, _)| c.is_none());
            for (cond, body) in branches {
                let c = cond.as_ref().map(|c| c.snip.text.as_str());
                if c.is_some_and(|t| t == ROW_COUNT_MARK || word(t)) {
                    return (true, open);
                }
                let (hit, falls) = found_scan(body);
                if hit {
                    return (true, open);
                }
                closed &= !falls;
            }
            open |= has_exit(one);
            if closed {
                return (false, open);
            }
            continue;
        }
        let mut hit = false;
        each_cond(one, &mut |c| {
            hit |= c.snip.text == ROW_COUNT_MARK || word(&c.snip.text)
        });
        each_stmt(one, &mut |s| hit |= word(&s.snip.text));
        if hit {
            return (true, open);
        }
        match n {
            // A call may test FOUND in the callee (conservative).
            Node::Call { .. } => return (true, open),
            // These set FOUND (or end the path) whatever happens.
            Node::Sql(_)
            | Node::Abort
            | Node::Commit { .. }
            | Node::Return { .. }
            | Node::Loop {
                head: LoopHead::Range { .. } | LoopHead::Query { .. },
                ..
            } => return (false, open),
            // An EXIT (or CONTINUE) may leave for code after the loop.
            n => open |= has_exit(one) || matches!(n, Node::Exit { .. }),
        }
    }
    (false, true)
}

/// Whether `nodes` hold an EXIT or CONTINUE (at any depth).
fn has_exit(nodes: &[Node]) -> bool {
    nodes.iter().any(|n| match n {
        Node::Exit { .. } => true,
        Node::If(bs) => bs.iter().any(|(_, b)| has_exit(b)),
        Node::Loop { body, .. } | Node::Prefix(body) => has_exit(body),
        Node::Block { body, handlers, .. } => {
            has_exit(body) || handlers.iter().flatten().any(|h| has_exit(h))
        }
        _ => false,
    })
}

/// The value of a condition when the row-count variable `n` is 0, if it
/// compares `n` with a number (`n = 0`, `n < 1`, `0 <> n`, `NOT (…)`).
fn holds_at_zero(e: &Expr, n: &str) -> Option<bool> {
    let is_n = |x: &Expr| match strip_nested(x) {
        Expr::Value(v) => matches!(&v.value, Value::Placeholder(p)
            if p.trim_start_matches(':').eq_ignore_ascii_case(n)),
        Expr::Identifier(i) => i.value.eq_ignore_ascii_case(n),
        _ => false,
    };
    let number = |x: &Expr| match strip_nested(x) {
        Expr::Value(v) => match &v.value {
            Value::Number(t, _) => t.parse::<f64>().ok(),
            _ => None,
        },
        _ => None,
    };
    match strip_nested(e) {
        Expr::UnaryOp {
            op: UnaryOperator::Not,
            expr,
        } => holds_at_zero(expr, n).map(|b| !b),
        Expr::BinaryOp { left, op, right } => {
            // n op c, or c op n (then the operator is mirrored).
            let (c, op) = if is_n(left) {
                (number(right)?, op.clone())
            } else if is_n(right) {
                let mirrored = match op {
                    BinaryOperator::Lt => BinaryOperator::Gt,
                    BinaryOperator::Gt => BinaryOperator::Lt,
                    BinaryOperator::LtEq => BinaryOperator::GtEq,
                    BinaryOperator::GtEq => BinaryOperator::LtEq,
                    o => o.clone(),
                };
                (number(left)?, mirrored)
            } else {
                return None;
            };
            match op {
                BinaryOperator::Eq => Some(0.0 == c),
                BinaryOperator::NotEq => Some(0.0 != c),
                BinaryOperator::Lt => Some(0.0 < c),
                BinaryOperator::LtEq => Some(0.0 <= c),
                BinaryOperator::Gt => Some(0.0 > c),
                BinaryOperator::GtEq => Some(0.0 >= c),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Variables a program tests for NULL: `v IS [NOT] NULL`, `IS [NOT]
/// DISTINCT FROM`, and arguments of COALESCE / NULLIF / IFNULL.
pub(super) fn null_tested(nodes: &[Node]) -> HashSet<String> {
    fn name(e: &Expr) -> Option<String> {
        match strip_nested(e) {
            Expr::Value(v) => match &v.value {
                Value::Placeholder(p) => {
                    let p = p.trim_start_matches(':').to_lowercase();
                    Some(p.split('$').next().unwrap_or_default().to_string())
                }
                _ => None,
            },
            Expr::Identifier(i) => Some(i.value.to_lowercase()),
            _ => None,
        }
    }
    fn scan<V: sqlparser::ast::Visit>(node: &V, out: &mut HashSet<String>) {
        let _ = sqlparser::ast::visit_expressions(node, |e| {
            match e {
                Expr::IsNull(x) | Expr::IsNotNull(x) => out.extend(name(x)),
                Expr::IsDistinctFrom(a, b) | Expr::IsNotDistinctFrom(a, b) => {
                    out.extend(name(a));
                    out.extend(name(b));
                }
                Expr::Function(func) => {
                    let fname = func.name.to_string().to_lowercase();
                    if matches!(fname.as_str(), "coalesce" | "nullif" | "ifnull" | "nvl") {
                        if let sqlparser::ast::FunctionArguments::List(l) = &func.args {
                            for a in &l.args {
                                if let sqlparser::ast::FunctionArg::Unnamed(
                                    sqlparser::ast::FunctionArgExpr::Expr(x),
                                ) = a
                                {
                                    out.extend(name(x));
                                }
                            }
                        }
                    }
                }
                _ => {}
            }
            ControlFlow::<()>::Continue(())
        });
    }
    let mut out = HashSet::new();
    each_stmt(nodes, &mut |s| scan(&s.sql, &mut out));
    each_cond(nodes, &mut |c| scan(&c.expr, &mut out));
    out
}

impl Lowerer<'_> {
    /// The nodes only PL/pgSQL routines have. `None`: every path aborts.
    fn pl_node(&mut self, node: &Node) -> Result<Option<(Option<Body>, bool)>> {
        Ok(Some(match node {
            // RETURN leaves the routine: the rest is skipped on this
            // path (made optional, and propagated out of loops).
            Node::Return { .. } => (Some(Body::Seq(vec![])), true),
            Node::Block {
                label,
                body,
                handlers: None,
                file,
            } => {
                let saved = file
                    .as_ref()
                    .map(|f| std::mem::replace(&mut self.src.file, f.clone()));
                let r = self.block(body);
                if let Some(f) = saved {
                    self.src.file = f;
                }
                let (b, e) = r?;
                match b {
                    None => return Ok(None),
                    Some(b) => (Some(b), e && escapes(body, label.as_deref(), false)),
                }
            }
            Node::Block {
                label,
                body,
                handlers: Some(handlers),
                file,
            } => {
                let saved = file
                    .as_ref()
                    .map(|f| std::mem::replace(&mut self.src.file, f.clone()));
                let r = self.try_block(label.as_deref(), body, handlers);
                if let Some(f) = saved {
                    self.src.file = f;
                }
                r?
            }
            Node::Prefix(body) => (Some(self.prefix_node(body)?), false),
            Node::Open(query) => {
                // Like a FOR loop's query: read once; it may return no row.
                self.pos.sub_depth += 1;
                let r = self.statement(query, &[]);
                self.pos.sub_depth -= 1;
                (Some(r?), false)
            }
            Node::Call { at, .. } => {
                return Err(Diag::new("internal error: a routine call was not inlined")
                    .help("please report this with the SQL that caused it")
                    .at(&self.src.file, *at, 4, "here"))
            }
            _ => (Some(Body::Seq(vec![])), false),
        }))
    }
}

/// Whether an EXIT/CONTINUE or RETURN in `nodes` (the body of a loop or
/// block labelled `own`) leaves that construct: RETURN always, an EXIT to
/// another label, or an unlabelled EXIT outside every loop of `nodes`
/// when the construct is no loop. Over-approximates: labels of inner
/// constructs are not tracked, so an EXIT to one counts as leaving.
pub(super) fn escapes(nodes: &[Node], own: Option<&str>, is_loop: bool) -> bool {
    nodes.iter().any(|n| match n {
        Node::Return { .. } => true,
        Node::Exit { label: Some(l), .. } => own != Some(l.as_str()),
        Node::Exit { label: None, .. } => !is_loop,
        Node::If(bs) => bs.iter().any(|(_, b)| escapes(b, own, is_loop)),
        Node::Loop { body, .. } => escapes(body, own, true),
        Node::Block { body, handlers, .. } => {
            escapes(body, own, is_loop)
                || handlers.iter().flatten().any(|h| escapes(h, own, is_loop))
        }
        Node::Prefix(body) => escapes(body, own, is_loop),
        _ => false,
    })
}

/// Every statement of a body made optional.
fn optionalize(b: Body) -> Body {
    match b {
        Body::Stmt(s) => Body::Opt(Box::new(Body::Stmt(s))),
        Body::Seq(v) => Body::Seq(v.into_iter().map(optionalize).collect()),
        Body::Branch(v) => Body::Branch(v.into_iter().map(optionalize).collect()),
        Body::Opt(x) => Body::Opt(Box::new(optionalize(*x))),
        Body::Loop(x) => Body::Loop(Box::new(optionalize(*x))),
    }
}

impl Lowerer<'_> {
    /// A block with EXCEPTION handlers is a subtransaction: either it runs
    /// to completion, or some prefix of it runs, fails, is rolled back and
    /// a handler runs. The second alternative is modelled as the block
    /// with every statement optional (any prefix, and more), then one of
    /// the handlers. Rolled-back writes are kept as writes: an extra
    /// operation only adds dependencies, so this over-approximates the
    /// schedules (docs/sql-frontend.md, "PL/pgSQL").
    fn try_block(
        &mut self,
        label: Option<&str>,
        body: &[Node],
        handlers: &[Vec<Node>],
    ) -> Result<(Option<Body>, bool)> {
        let mut alts = vec![(None, body.to_vec())];
        for h in handlers {
            let mut nodes = vec![Node::Prefix(body.to_vec())];
            nodes.extend(h.iter().cloned());
            alts.push((None, nodes));
        }
        let all: Vec<Node> = body
            .iter()
            .chain(handlers.iter().flatten())
            .cloned()
            .collect();
        let (b, e) = self.branch(&alts)?;
        Ok((b, e && escapes(&all, label, false)))
    }

    /// The rolled-back prefix of an EXCEPTION block (see `try_block`).
    /// Variables it assigns keep whatever value the failed prefix gave
    /// them (PL/pgSQL does not roll variables back): fresh afterwards.
    fn prefix_node(&mut self, body: &[Node]) -> Result<Body> {
        let mark = self.out.statements.len();
        self.pos.prefix += 1;
        let r = self.block(body);
        self.pos.prefix -= 1;
        let b = r?.0.map_or(Body::Seq(vec![]), optionalize);
        for q in mark..self.out.statements.len() {
            self.rolled_back_shadow(q);
        }
        let mut assigned = HashSet::new();
        collect_assigned(body, &mut assigned);
        for v in assigned {
            let t = self.vars.fresh();
            self.vars.env.insert(v, t);
        }
        Ok(b)
    }
}
