//! The search for witness values (issue 23, item 5): which extra
//! equations and values make the statements of the cycle meet on the same
//! rows on PostgreSQL.
//!
//! `witness::plan_with` always equates what key-based statements and
//! inserts pin with the tuple the schedule says they touch. A
//! predicate-based statement pins columns too (`WHERE C_LAST = :c_last`),
//! but which tuples its predicate must match is a choice: the tuples the
//! cycle's edges name for it (*strong*), also every tuple the schedule has
//! it read (*all*), or none. Values the program computes (`MIN(NO_O_ID)`,
//! a loop variable) are equal where the front-end says they are equal; the
//! value itself is a choice (fresh, or small integers a loop `FOR d IN
//! 1..10` reaches). A parameter that decides an IF (`IF :by_last_name`)
//! is a choice (true, false, 0, 1). A tuple another transaction writes
//! may have to match the predicate only after that write (PostgreSQL's
//! manual: `hits = 9` becomes 10 under `DELETE … WHERE hits = 10`): an
//! offset of −1 or +1 on the written column is a choice.
//!
//! [`Space::choices`] lists the combinations, fewest changes from the
//! first first; `witness::replay` runs them in that order and stops at the
//! first the database reproduces. Trying more combinations never makes a
//! false "reproduced": each run is compared with the serial orders of the
//! same transactions on the same data.

use crate::analysis::explorer::{DepKind, OpKind, Schedule};
use crate::analysis::graph::SummaryGraph;
use crate::frontend::sql::ast::{LoopHead, Node};
use crate::frontend::Sources;
use crate::model::btp::{StmtType, Workload};
use crate::model::provenance::Provenance;

use super::value::Val;

/// A predicate-based statement of the schedule (transaction `txn`,
/// position `pos`) whose pinned columns may be equated with `tuple`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Match {
    pub txn: usize,
    pub pos: usize,
    pub tuple: usize,
    /// A cycle edge names the tuple for this statement.
    pub strong: bool,
    /// Attributes of the tuple other transactions write: the predicate
    /// may match their new value instead (an offset).
    pub written: Vec<usize>,
}

/// Which predicate matches to equate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Soft {
    /// The tuples the cycle's edges name.
    Cycle,
    /// Those and every tuple the schedule has the statement read.
    All,
    /// None (key-based pins only).
    None,
}

/// One combination of choices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    pub soft: Soft,
    /// Values the program computes get 1, 2, 3, … instead of fresh ones.
    pub small: bool,
    /// Per branch parameter of the space: 0 keeps the made-up value, k
    /// takes candidate k − 1.
    pub branch: Vec<usize>,
    /// Per offset match of the space: 0, −1 or +1.
    pub offset: Vec<i64>,
}

/// What can be chosen for one schedule.
#[derive(Debug, Clone, Default)]
pub struct Space {
    pub matches: Vec<Match>,
    /// (transaction, parameter, candidate values).
    pub branch: Vec<(usize, String, Vec<Val>)>,
    /// Indices into `matches` of strong matches on a written tuple.
    pub offsets: Vec<usize>,
}

/// At most this many parameters and offsets are varied.
const MAX_DIMS: usize = 4;
/// Combinations differing from the first in at most this many steps.
const MAX_DISTANCE: usize = 3;

impl Space {
    pub fn of(
        sources: &Sources,
        w: &Workload,
        prov: &Provenance,
        g: &SummaryGraph,
        s: &Schedule,
    ) -> Space {
        let mut sp = Space {
            matches: matches(w, prov, g, s),
            ..Space::default()
        };
        sp.offsets = (0..sp.matches.len())
            .filter(|&i| sp.matches[i].strong && !sp.matches[i].written.is_empty())
            .take(MAX_DIMS)
            .collect();
        let mut lit_params: Vec<(usize, String)> = vec![];
        for (t, tr) in s.transactions.iter().enumerate() {
            let Some(program) = sources.programs.get(tr.program) else {
                continue;
            };
            let params = super::witness::parameters(program);
            let mut found = vec![];
            branch_params(program, &mut found);
            let mut lits = vec![];
            branch_literals(program, &mut lits);
            for (p, boolean) in found {
                if !params.contains(&p) || sp.branch.iter().any(|(t2, p2, _)| *t2 == t && *p2 == p)
                {
                    continue;
                }
                let mine: Vec<Val> = lits
                    .iter()
                    .filter(|(q, _)| *q == p)
                    .map(|(_, l)| Val::untyped(l.clone()))
                    .collect();
                let cands = if !mine.is_empty() {
                    lit_params.push((t, p.clone()));
                    mine
                } else if boolean {
                    vec![Val::boolean(true), Val::boolean(false)]
                } else {
                    vec![Val::untyped("0"), Val::untyped("1")]
                };
                sp.branch.push((t, p, cands));
            }
        }
        // Parameters a condition compares with literals first (a made-up
        // text never equals 'replace'): the search has few dimensions.
        sp.branch
            .sort_by_key(|(t, p, _)| !lit_params.contains(&(*t, p.clone())));
        sp.branch.truncate(MAX_DIMS);
        sp
    }

    /// The combinations to try, the first (cycle matches, fresh values,
    /// made-up parameters) first, then by how many choices differ from
    /// it.
    pub fn choices(&self) -> Vec<Choice> {
        let mut radix = vec![3, 2];
        radix.extend(self.branch.iter().map(|(_, _, c)| c.len() + 1));
        radix.extend(self.offsets.iter().map(|_| 3));
        let mut all = vec![];
        let mut cur = vec![0; radix.len()];
        combos(&radix, 0, MAX_DISTANCE, &mut cur, &mut all);
        all.sort_by_key(|v: &Vec<usize>| v.iter().sum::<usize>());
        let nb = self.branch.len();
        all.into_iter()
            .filter_map(|v| {
                let soft = [Soft::Cycle, Soft::All, Soft::None][v[0]];
                let offset: Vec<i64> = v[2 + nb..].iter().map(|&k| [0, -1, 1][k]).collect();
                if soft == Soft::None && offset.iter().any(|&d| d != 0) {
                    return None;
                }
                Some(Choice {
                    soft,
                    small: v[1] == 1,
                    branch: v[2..2 + nb].to_vec(),
                    offset,
                })
            })
            .collect()
    }

    /// The first choice (what `witness::plan` uses).
    pub fn first(&self) -> Choice {
        Choice {
            soft: Soft::Cycle,
            small: false,
            branch: vec![0; self.branch.len()],
            offset: vec![0; self.offsets.len()],
        }
    }
}

/// Every index vector within `radix` whose sum is at most `left` more.
fn combos(
    radix: &[usize],
    at: usize,
    left: usize,
    cur: &mut Vec<usize>,
    out: &mut Vec<Vec<usize>>,
) {
    if at == radix.len() {
        out.push(cur.clone());
        return;
    }
    for k in 0..radix[at].min(left + 1) {
        cur[at] = k;
        combos(radix, at + 1, left - k, cur, out);
    }
    cur[at] = 0;
}

/// The predicate-based statements of the schedule with the tuples they
/// may be made to match: strong for a tuple a cycle edge names for the
/// statement's transaction (the edge's reading side), weak for the other
/// tuples the step reads.
fn matches(w: &Workload, prov: &Provenance, g: &SummaryGraph, s: &Schedule) -> Vec<Match> {
    let cycle = s.cycle_edges();
    let mut out: Vec<Match> = vec![];
    for st in &s.steps {
        let Some(pos) = st.pos else { continue };
        let t = st.txn;
        let ltp = &g.nodes[s.transactions[t].node].ltp;
        let Some(occ) = ltp.occurrences.get(pos) else {
            continue;
        };
        let stmt = &w.programs[ltp.program].statements[occ.stmt];
        if stmt.ty.is_key_based() || stmt.ty == StmtType::Ins {
            continue;
        }
        if prov.pins(ltp.program, occ.stmt).is_empty() {
            continue;
        }
        let reads: Vec<usize> = st
            .ops
            .iter()
            .filter(|o| matches!(o.kind, OpKind::Read | OpKind::PredRead))
            .filter_map(|o| o.tuple)
            .collect();
        let pred_rel = |rel| {
            st.ops
                .iter()
                .any(|o| o.kind == OpKind::PredRead && o.rel == rel)
        };
        let mut mine: Vec<(usize, bool)> = reads.iter().map(|&tu| (tu, false)).collect();
        for d in &cycle {
            let Some(tu) = d.tuple else { continue };
            let (reader, pred) = match d.kind {
                DepKind::PredRw => (d.from, true),
                DepKind::PredWr => (d.to, true),
                DepKind::Rw => (d.from, false),
                DepKind::Wr => (d.to, false),
                DepKind::Ww => continue,
            };
            if reader != t || !(reads.contains(&tu) || pred && pred_rel(s.tuples[tu].rel)) {
                continue;
            }
            mine.push((tu, true));
        }
        for (tu, strong) in mine {
            let written: Vec<usize> = s
                .steps
                .iter()
                .filter(|x| x.txn != t)
                .flat_map(|x| &x.ops)
                .filter(|o| o.kind == OpKind::Write && o.tuple == Some(tu))
                .flat_map(|o| o.attrs.iter().copied())
                .collect();
            match out
                .iter_mut()
                .find(|m| m.txn == t && m.pos == pos && m.tuple == tu)
            {
                Some(m) => m.strong |= strong,
                None => out.push(Match {
                    txn: t,
                    pos,
                    tuple: tu,
                    strong,
                    written,
                }),
            }
        }
    }
    out
}

/// `(parameter, literal)` for each comparison of a parameter with a
/// literal in an IF, WHILE or EXIT WHEN condition (`:mode = 'replace'`,
/// `:mode IN ('replace', 'preserve_run_at')`, casts allowed): the values
/// that decide the branch (graphile-worker's `job_key_mode`).
fn branch_literals(nodes: &[Node], out: &mut Vec<(String, String)>) {
    use sqlparser::ast::{BinaryOperator as B, Expr, Value};
    fn param(e: &Expr) -> Option<String> {
        match e {
            Expr::Nested(x) | Expr::Cast { expr: x, .. } => param(x),
            Expr::Value(v) => match &v.value {
                Value::Placeholder(p) => Some(p.trim_start_matches(':').to_lowercase()),
                _ => None,
            },
            _ => None,
        }
    }
    fn lit(e: &Expr) -> Option<String> {
        match e {
            Expr::Nested(x) | Expr::Cast { expr: x, .. } => lit(x),
            Expr::Value(v) => match &v.value {
                Value::SingleQuotedString(t) => Some(t.clone()),
                Value::Number(n, _) => Some(n.to_string()),
                _ => None,
            },
            _ => None,
        }
    }
    let mut conds: Vec<&Expr> = vec![];
    each_condition(nodes, &mut conds);
    for c in conds {
        let _ = sqlparser::ast::visit_expressions(c, |x| {
            match x {
                Expr::BinaryOp {
                    left,
                    op: B::Eq | B::NotEq,
                    right,
                } => {
                    let pair = param(left).zip(lit(right)).or(param(right).zip(lit(left)));
                    out.extend(pair);
                }
                Expr::InList { expr, list, .. } => {
                    if let Some(p) = param(expr) {
                        out.extend(list.iter().filter_map(lit).map(|l| (p.clone(), l)));
                    }
                }
                _ => {}
            }
            std::ops::ControlFlow::<()>::Continue(())
        });
    }
    out.dedup();
}

/// The IF, WHILE and EXIT WHEN conditions of `nodes`.
fn each_condition<'a>(nodes: &'a [Node], out: &mut Vec<&'a sqlparser::ast::Expr>) {
    for n in nodes {
        match n {
            Node::If(bs) => {
                for (c, b) in bs {
                    out.extend(c.iter().map(|c| &c.expr));
                    each_condition(b, out);
                }
            }
            Node::Loop { head, body, .. } => {
                if let LoopHead::While(c) = head {
                    out.push(&c.expr);
                }
                each_condition(body, out);
            }
            Node::Exit { when: Some(c), .. } => out.push(&c.expr),
            Node::Block { body, handlers, .. } => {
                each_condition(body, out);
                handlers
                    .iter()
                    .flatten()
                    .for_each(|h| each_condition(h, out));
            }
            Node::Prefix(b) => each_condition(b, out),
            _ => {}
        }
    }
}

/// Parameters in IF, WHILE and EXIT WHEN conditions; `true` when the
/// condition is the parameter alone (or NOT it): a boolean.
fn branch_params(nodes: &[Node], out: &mut Vec<(String, bool)>) {
    let cond = |e: &sqlparser::ast::Expr, out: &mut Vec<(String, bool)>| {
        use sqlparser::ast::{Expr, UnaryOperator, Value};
        let mut bare = e;
        loop {
            match bare {
                Expr::Nested(x) => bare = x,
                Expr::UnaryOp {
                    op: UnaryOperator::Not,
                    expr,
                } => bare = expr,
                _ => break,
            }
        }
        let alone = matches!(bare, Expr::Value(v) if matches!(v.value, Value::Placeholder(_)));
        let _ = sqlparser::ast::visit_expressions(e, |x| {
            if let Expr::Value(v) = x {
                if let Value::Placeholder(p) = &v.value {
                    let name = p.trim_start_matches(':').to_lowercase();
                    out.push((name, alone));
                }
            }
            std::ops::ControlFlow::<()>::Continue(())
        });
    };
    for n in nodes {
        match n {
            Node::If(bs) => {
                for (c, b) in bs {
                    if let Some(c) = c {
                        cond(&c.expr, out);
                    }
                    branch_params(b, out);
                }
            }
            Node::Loop { head, body, .. } => {
                if let LoopHead::While(c) = head {
                    cond(&c.expr, out);
                }
                branch_params(body, out);
            }
            Node::Exit { when: Some(c), .. } => cond(&c.expr, out),
            Node::Block { body, handlers, .. } => {
                branch_params(body, out);
                handlers
                    .iter()
                    .flatten()
                    .for_each(|h| branch_params(h, out));
            }
            Node::Prefix(b) => branch_params(b, out),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_start_with_the_first_and_grow_by_distance() {
        let sp = Space {
            matches: vec![],
            branch: vec![(0, "b".into(), vec![Val::boolean(true), Val::boolean(false)])],
            offsets: vec![],
        };
        let cs = sp.choices();
        assert_eq!(cs[0], sp.first());
        // 3 × 2 × 3 combinations, all within distance 3 but (2, 1, 2)
        // (distance 5) and (2, 1, 1), (1, 1, 2), (2, 0, 2) (distance 4).
        assert_eq!(cs.len(), 18 - 4);
        let d = |c: &Choice| {
            [Soft::Cycle, Soft::All, Soft::None]
                .iter()
                .position(|x| *x == c.soft)
                .unwrap_or(0)
                + usize::from(c.small)
                + c.branch.iter().sum::<usize>()
        };
        assert!(cs.windows(2).all(|p| d(&p[0]) <= d(&p[1])));
    }
}
