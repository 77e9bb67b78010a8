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
//! first the database reproduces. When none does, [`changes`] lists value
//! changes of the first combination's plan (shared parameters, literals a
//! predicate compares a column with and their neighbours, a statement's
//! parameters set to a seed row's values), tried in turn the same way.
//! `isolint replay` and `isolint check --postgres…` run this one search.
//! Trying more combinations never makes a false "reproduced": each run is compared with the serial orders of the
//! same transactions on the same data.

use std::collections::HashSet;

use crate::analysis::explorer::{DepKind, OpKind, Schedule};
use crate::analysis::graph::SummaryGraph;
use crate::frontend::sql::ast::{LoopHead, Node};
use crate::frontend::Sources;
use crate::model::btp::{StmtType, Workload};
use crate::model::provenance::Provenance;

use super::plan::Plan;
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
            let params = super::params::parameters(program);
            let mut found = vec![];
            branch_params(program, &mut found);
            let mut lits = vec![];
            branch_literals(program, &mut lits);
            for (p, boolean) in found {
                // An application choice follows the schedule: no value to search.
                if !params.contains(&p)
                    || sources.choices.contains(&p)
                    || sp.branch.iter().any(|(t2, p2, _)| *t2 == t && *p2 == p)
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

/// At most this many other value choices are tried for one schedule.
pub const MAX_VARIANTS: usize = 32;

/// One value changed in a plan.
#[derive(Debug, Clone)]
pub enum Change {
    /// Transaction `txn`'s parameter `name` takes another transaction's
    /// value of the same parameter.
    Param { txn: usize, name: String, val: Val },
    /// Seed row `row`'s column `col` takes a value a predicate compares
    /// that column with.
    Cell { row: usize, col: String, val: Val },
    /// The parameters one statement compares with columns take seed row
    /// `row`'s values of those columns, in every transaction running it
    /// (`(txn, parameter, value)`): the statement meets that row.
    Row {
        row: usize,
        set: Vec<(usize, String, Val)>,
    },
}

impl Change {
    pub fn apply(&self, p: &mut Plan) {
        match self {
            Change::Param { txn, name, val } => {
                if let Some(t) = p.txns.get_mut(*txn) {
                    t.params.insert(name.clone(), val.clone());
                }
            }
            Change::Row { set, .. } => {
                for (txn, name, val) in set {
                    if let Some(t) = p.txns.get_mut(*txn) {
                        let oid = t.params.get(name).map_or(val.oid, |v| v.oid);
                        let val = Val {
                            text: val.text.clone(),
                            oid,
                        };
                        t.params.insert(name.clone(), val);
                    }
                }
            }
            Change::Cell { row, col, val } => {
                if let Some(r) = p.seed.get_mut(*row) {
                    for (c, v) in r.values.iter_mut() {
                        if c == col {
                            *v = Val {
                                text: val.text.clone(),
                                oid: v.oid,
                            };
                        }
                    }
                }
            }
        }
    }

    pub fn describe(&self, p: &Plan) -> String {
        match self {
            Change::Param { txn, name, val } => format!(
                "T{} {name} = {val} (as another transaction's {name})",
                txn + 1
            ),
            Change::Cell { row, col, val } => format!(
                "seed row {} ({}) {col} = {val} (a value a predicate compares it with)",
                row + 1,
                p.seed.get(*row).map_or("?", |r| r.table.as_str())
            ),
            Change::Row { row, set } => format!(
                "{} (seed row {} of {}, which the statement comparing them meets)",
                set.iter()
                    .map(|(t, n, v)| format!("T{} {n} = {v}", t + 1))
                    .collect::<Vec<_>>()
                    .join(", "),
                row + 1,
                p.seed.get(*row).map_or("?", |r| r.table.as_str())
            ),
        }
    }

    /// The (transaction, parameter) pairs or seed cells it sets.
    fn targets(&self) -> Vec<String> {
        match self {
            Change::Param { txn, name, .. } => vec![format!("{txn}:{name}")],
            Change::Row { set, .. } => set.iter().map(|(t, n, _)| format!("{t}:{n}")).collect(),
            Change::Cell { row, col, .. } => vec![format!("{row}.{col}")],
        }
    }
}

/// The value changes to try for `plan` after [`Space::choices`] (each a
/// full run with its own serial runs): a parameter equal to another
/// transaction's parameter of the same name, a seed cell equal to (or one
/// off) a literal a statement of the schedule compares its column with
/// (the manual's `DELETE … WHERE hits = 10` needs rows with 10 and 9
/// hits), the parameters of a statement set to a seed row's values. Single
/// changes first, then compatible pairs, at most [`MAX_VARIANTS`].
pub fn changes(plan: &Plan, w: &Workload, s: &Schedule, sources: &Sources) -> Vec<Vec<Change>> {
    let changes = candidates(plan, w, s, sources);
    let mut tries = vec![];
    for (i, a) in changes.iter().enumerate() {
        tries.push(vec![a.clone()]);
        for b in &changes[i + 1..] {
            if !conflicts(a, b) {
                tries.push(vec![a.clone(), b.clone()]);
            }
        }
    }
    tries.sort_by_key(Vec::len);
    tries.truncate(MAX_VARIANTS);
    tries
}

/// Two changes of the same parameter or cell cannot both hold.
fn conflicts(a: &Change, b: &Change) -> bool {
    let tb = b.targets();
    a.targets().iter().any(|x| tb.contains(x))
}

/// The value changes worth trying for `plan` (see [`changes`]).
fn candidates(plan: &Plan, w: &Workload, s: &Schedule, sources: &Sources) -> Vec<Change> {
    let mut programs: Vec<usize> = s.transactions.iter().map(|t| t.program).collect();
    programs.sort_unstable();
    programs.dedup();
    let names: HashSet<String> = plan
        .txns
        .iter()
        .flat_map(|t| t.params.keys().cloned())
        .collect();
    let mut lits: Vec<(String, String)> = vec![];
    let mut rows = vec![];
    // Parameters some statement compares with a column: the ones that
    // decide which rows a statement meets.
    let mut compared: HashSet<String> = HashSet::new();
    for p in programs {
        // A local the program copies a parameter into (`p_c_id :=
        // p_c_id_in`) stands for that parameter (issue 23, HammerDB).
        let copies = sources.programs.get(p).map(|a| copies_of(a, &names));
        let copies = copies.unwrap_or_default();
        let mut known = names.clone();
        known.extend(copies.iter().map(|(v, _)| v.clone()));
        for st in &w.programs[p].statements {
            let Some(sql) = &st.sql else { continue };
            let mut params = vec![];
            for (col, other) in comparisons(sql, &known) {
                let other = match other {
                    Other::Param(n) => Other::Param(
                        copies
                            .iter()
                            .find(|(v, _)| *v == n)
                            .map_or(n, |(_, p)| p.clone()),
                    ),
                    o => o,
                };
                match other {
                    Other::Lit(l) if !lits.contains(&(col.clone(), l.clone())) => {
                        lits.push((col, l))
                    }
                    Other::Param(n) => {
                        compared.insert(n.clone());
                        params.push((col, n));
                    }
                    Other::Lit(_) => {}
                }
            }
            rows.extend(row_changes(plan, s, p, &params));
        }
    }
    // First: a statement meets a seeded row, the statements pinning most
    // parameters first (a customer's warehouse, district and id).
    rows.sort_by_key(|c| match c {
        Change::Row { set, .. } => std::cmp::Reverse(set.len()),
        _ => std::cmp::Reverse(0),
    });
    let mut out: Vec<Change> = vec![];
    for c in rows {
        let dup = out.iter().any(|x| match (x, &c) {
            (Change::Row { set: a, .. }, Change::Row { set: b, .. }) => {
                a.len() == b.len()
                    && a.iter()
                        .zip(b)
                        .all(|(p, q)| p.0 == q.0 && p.1 == q.1 && p.2.text == q.2.text)
            }
            _ => false,
        });
        if !dup {
            out.push(c);
        }
    }
    // Then: a seeded cell at a literal a predicate compares it with.
    for (row, r) in plan.seed.iter().enumerate() {
        for (col, v) in &r.values {
            for (c, lit) in &lits {
                if !c.eq_ignore_ascii_case(col) {
                    continue;
                }
                for text in near(lit) {
                    if v.text.as_deref() != Some(text.as_str()) {
                        out.push(Change::Cell {
                            row,
                            col: col.clone(),
                            val: Val::untyped(text),
                        });
                    }
                }
            }
        }
    }
    // Last: a compared parameter equal to another transaction's.
    for (t, tx) in plan.txns.iter().enumerate() {
        for (name, v) in tx.params.iter().filter(|(n, _)| compared.contains(*n)) {
            for (u, other) in plan.txns.iter().enumerate() {
                match other.params.get(name) {
                    Some(x) if u != t && x.text != v.text && x.text.is_some() => {
                        out.push(Change::Param {
                            txn: t,
                            name: name.clone(),
                            val: x.clone(),
                        })
                    }
                    _ => {}
                }
            }
        }
    }
    out
}

/// `(variable, parameter)` for each `variable := parameter` of `ast` (the
/// whole expression one parameter among `names`, as PL/pgSQL writes a
/// copy: `p_c_id := p_c_id_in`), names lower-case without `:`. Only a
/// variable every assignment of which is such a copy of one parameter
/// (an `INTO` elsewhere may overwrite it: the value search tries the
/// parameter's values, and each try is a full replay, so a wrong guess
/// costs a try, never a false "reproduced").
fn copies_of(ast: &[Node], names: &HashSet<String>) -> Vec<(String, String)> {
    fn walk(nodes: &[Node], out: &mut Vec<(String, Option<String>)>, names: &HashSet<String>) {
        for n in nodes {
            match n {
                Node::Assign { var, expr } => {
                    let v = bare(var);
                    let e = bare(&expr.expr.to_string());
                    // A declaration without a default (`p_c_id INTEGER;`).
                    if e == "null" {
                        continue;
                    }
                    let p = names.iter().find(|k| bare(k) == e && bare(k) != v).cloned();
                    out.push((v, p));
                }
                Node::If(arms) => arms.iter().for_each(|(_, b)| walk(b, out, names)),
                Node::Loop { body, .. } | Node::Prefix(body) => walk(body, out, names),
                Node::Block { body, handlers, .. } => {
                    walk(body, out, names);
                    for h in handlers.iter().flatten() {
                        walk(h, out, names);
                    }
                }
                _ => {}
            }
        }
    }
    fn bare(x: &str) -> String {
        x.trim().trim_start_matches(':').to_ascii_lowercase()
    }
    let mut all = vec![];
    walk(ast, &mut all, names);
    let mut out: Vec<(String, String)> = vec![];
    for (v, p) in &all {
        let Some(p) = p else { continue };
        let same = all
            .iter()
            .filter(|(w, _)| w == v)
            .all(|(_, q)| q.as_ref() == Some(p));
        if same && !out.iter().any(|(w, _)| w == v) && !names.iter().any(|k| bare(k) == *v) {
            out.push((v.clone(), p.clone()));
        }
    }
    out
}

/// For a statement of program `p` comparing columns with parameters
/// (`params`: column, parameter), one change per seed row that has those
/// columns: every transaction of `p` takes the row's values.
fn row_changes(plan: &Plan, s: &Schedule, p: usize, params: &[(String, String)]) -> Vec<Change> {
    let mut out = vec![];
    for (row, r) in plan.seed.iter().enumerate() {
        let mut set: Vec<(usize, String, Val)> = vec![];
        for (t, tr) in s.transactions.iter().enumerate() {
            let Some(tx) = plan.txns.get(t).filter(|_| tr.program == p) else {
                continue;
            };
            for (col, name) in params {
                let Some((_, v)) = r.values.iter().find(|(c, _)| c.eq_ignore_ascii_case(col))
                else {
                    continue;
                };
                let known = set.iter().any(|(u, n, _)| *u == t && n == name);
                if v.text.is_some() && !known && tx.params.contains_key(name) {
                    set.push((t, name.clone(), v.clone()));
                }
            }
        }
        let changes = set
            .iter()
            .any(|(t, n, v)| plan.txns[*t].params.get(n).map(|x| &x.text) != Some(&v.text));
        if changes {
            out.push(Change::Row { row, set });
        }
    }
    out
}

/// What a statement compares a column with.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Other {
    Lit(String),
    Param(String),
}

/// A literal and, for an integer, its neighbours (a predicate `= 10`
/// beside an increment needs a row at 9 too).
fn near(lit: &str) -> Vec<String> {
    match lit.parse::<i64>() {
        Ok(n) => vec![
            n.to_string(),
            n.saturating_sub(1).to_string(),
            n.saturating_add(1).to_string(),
        ],
        Err(_) => vec![lit.to_string()],
    }
}

/// `(column, what it is compared with)` for every comparison in `sql` of
/// a column with a constant or with a parameter (`:name`, or a bare
/// identifier among `params`, as PL/pgSQL writes them), from PostgreSQL's
/// parse. Text PostgreSQL does not parse gives nothing.
fn comparisons(sql: &str, params: &HashSet<String>) -> Vec<(String, Other)> {
    use crate::frontend::sql::pg::{self, protobuf::a_const::Val as C, NodeEnum, NodeRef};
    type N = Option<Box<pg::protobuf::Node>>;
    let (text, names) = positional(sql);
    let Ok(parsed) = pg::parse(&without_into(&text)) else {
        return vec![];
    };
    let name = |n: &N| match n.as_ref().and_then(|n| n.node.as_ref()) {
        Some(NodeEnum::ColumnRef(c)) => match c.fields.last().and_then(|f| f.node.as_ref()) {
            Some(NodeEnum::String(s)) => Some((s.sval.clone(), c.fields.len())),
            _ => None,
        },
        _ => None,
    };
    let param = |n: &N| match n.as_ref().and_then(|n| n.node.as_ref()) {
        Some(NodeEnum::ParamRef(p)) => names.get((p.number as usize).wrapping_sub(1)).cloned(),
        _ => name(n)
            .filter(|(x, k)| *k == 1 && params.contains(&x.to_ascii_lowercase()))
            .map(|(x, _)| x.to_ascii_lowercase()),
    };
    let column = |n: &N| name(n).map(|(x, _)| x).filter(|_| param(n).is_none());
    let other = |n: &N| match n.as_ref().and_then(|n| n.node.as_ref()) {
        Some(NodeEnum::AConst(c)) => match &c.val {
            Some(C::Ival(i)) => Some(Other::Lit(i.ival.to_string())),
            Some(C::Fval(f)) => Some(Other::Lit(f.fval.clone())),
            Some(C::Sval(s)) => Some(Other::Lit(s.sval.clone())),
            _ => None,
        },
        _ => param(n).map(Other::Param),
    };
    let mut out = vec![];
    for (n, _, _) in parsed.tree.nodes() {
        if let NodeRef::AExpr(e) = n {
            // Comparisons only: `hits + 1` is no predicate.
            let op = match e.name.last().and_then(|x| x.node.as_ref()) {
                Some(NodeEnum::String(s)) => s.sval.as_str(),
                _ => "",
            };
            if !["=", "<>", "!=", "<", "<=", ">", ">="].contains(&op) {
                continue;
            }
            let pair = match (column(&e.lexpr), other(&e.rexpr)) {
                (Some(c), Some(v)) => Some((c, v)),
                _ => column(&e.rexpr).zip(other(&e.lexpr)),
            };
            if let Some(p) = pair {
                out.push(p);
            }
        }
    }
    out
}

/// `text` without the `INTO [STRICT] target, …` lists of a statement
/// reading into program variables (`$k` after [`positional`], or PL/pgSQL's
/// bare names), wherever they stand (`SELECT … INTO … FROM`, `RETURNING …
/// INTO …`): PostgreSQL's grammar has no such list. `INSERT INTO` stays.
fn without_into(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b == b'.';
    let mut out = String::with_capacity(text.len());
    let mut from = 0;
    let mut search = 0;
    while let Some(k) = lower[search..].find("into") {
        let at = search + k;
        search = at + 4;
        let standalone = (at == 0 || !word(bytes[at - 1]))
            && bytes.get(at + 4).is_some_and(|b| b.is_ascii_whitespace());
        let before = lower[..at].trim_end();
        if !standalone || before.ends_with("insert") || before.ends_with("merge") {
            continue;
        }
        // The targets: names or `$k`, separated by commas.
        let mut end = at + 4;
        let skip_ws = |mut e: usize| {
            while bytes.get(e).is_some_and(|b| b.is_ascii_whitespace()) {
                e += 1;
            }
            e
        };
        end = skip_ws(end);
        if lower[end..].starts_with("strict ") {
            end = skip_ws(end + 7);
        }
        let mut targets = 0;
        loop {
            let start = end;
            while bytes.get(end).copied().is_some_and(word) {
                end += 1;
            }
            if end == start {
                break;
            }
            targets += 1;
            let after = skip_ws(end);
            if bytes.get(after) == Some(&b',') {
                end = skip_ws(after + 1);
            } else {
                end = after;
                break;
            }
        }
        if targets == 0 {
            continue;
        }
        out.push_str(&text[from..at]);
        out.push(' ');
        from = end;
        search = end;
    }
    out.push_str(&text[from..]);
    out
}

/// `sql` with each `:name` parameter written `$k` (one number per name,
/// `names[k - 1]`), so PostgreSQL's parser reads it (`::type` casts are
/// left alone).
fn positional(sql: &str) -> (String, Vec<String>) {
    let mut out = String::with_capacity(sql.len());
    let mut names: Vec<String> = vec![];
    let mut chars = sql.chars().peekable();
    let mut prev = ' ';
    while let Some(c) = chars.next() {
        let next_ident = chars
            .peek()
            .is_some_and(|n| n.is_ascii_alphabetic() || *n == '_');
        if c == ':' && prev != ':' && next_ident {
            let mut name = String::new();
            while let Some(n) = chars.next_if(|n| n.is_ascii_alphanumeric() || *n == '_') {
                name.push(n.to_ascii_lowercase());
            }
            let k = match names.iter().position(|x| *x == name) {
                Some(k) => k + 1,
                None => {
                    names.push(name);
                    names.len()
                }
            };
            out.push_str(&format!("${k}"));
            prev = '0';
            continue;
        }
        out.push(c);
        prev = c;
    }
    (out, names)
}

#[cfg(test)]
mod change_tests {
    use super::*;

    fn literals(sql: &str) -> Vec<(String, String)> {
        comparisons(sql, &HashSet::new())
            .into_iter()
            .filter_map(|(c, o)| match o {
                Other::Lit(l) => Some((c, l)),
                Other::Param(_) => None,
            })
            .collect()
    }

    fn pair(c: &str, l: &str) -> (String, String) {
        (c.to_string(), l.to_string())
    }

    /// The comparisons PostgreSQL's parse shows, not arithmetic; `:name`
    /// parameters and `::` casts do not stop the parse.
    #[test]
    fn literals_of_comparisons_only() {
        assert_eq!(
            literals("DELETE FROM website WHERE hits = 10"),
            vec![pair("hits", "10")]
        );
        assert!(literals("UPDATE website SET hits = hits + 1").is_empty());
        assert_eq!(
            literals("SELECT a FROM t WHERE id = :id AND 'open' = t.status AND x::int > 3"),
            vec![pair("status", "open")]
        );
        assert!(literals("not sql at all").is_empty());
        // Statements reading into program variables.
        assert_eq!(
            literals("SELECT seats INTO STRICT :s, :t FROM flight WHERE seats > 1000000"),
            vec![pair("seats", "1000000")]
        );
        assert_eq!(
            literals("UPDATE c SET b = b - 1 WHERE id = 7 RETURNING b, d INTO p_b, p_d"),
            vec![pair("id", "7")]
        );
        assert_eq!(
            literals("INSERT INTO c (id) SELECT 1 WHERE 2 = x"),
            vec![pair("x", "2")]
        );
    }

    /// Parameters by name, and PL/pgSQL's bare parameter identifiers.
    #[test]
    fn columns_compared_with_parameters() {
        let names: HashSet<String> = ["p_c_id".to_string()].into();
        assert_eq!(
            comparisons(
                "SELECT c INTO :x FROM customer WHERE c_w_id = :w AND c_id = p_c_id AND c_d_id = :w",
                &names
            ),
            vec![
                ("c_w_id".to_string(), Other::Param("w".into())),
                ("c_id".to_string(), Other::Param("p_c_id".into())),
                ("c_d_id".to_string(), Other::Param("w".into())),
            ]
        );
    }

    #[test]
    fn named_parameters_read_as_positional() {
        assert_eq!(
            positional("WHERE a = :x AND b = c::int AND d = :Y_2 AND e = :x"),
            (
                "WHERE a = $1 AND b = c::int AND d = $2 AND e = $1".to_string(),
                vec!["x".to_string(), "y_2".to_string()]
            )
        );
    }

    /// An integer literal with its neighbours: `= 10` beside `+ 1`.
    #[test]
    fn integers_with_neighbours() {
        assert_eq!(near("10"), vec!["10", "9", "11"]);
        assert_eq!(near("open"), vec!["open"]);
    }
}
