//! Which parameters a program has ([`parameters`]), which of them it uses
//! beside its application choices, and how replay names them (JDBC `?`
//! placeholders by place). Read by `witness`, `solve` and `run`; it reads
//! only the front-end's AST (so `run` and `plan` need not import each
//! other).

use std::collections::{HashMap, HashSet};

use crate::frontend::sql::ast::{LoopHead, Node, ProcExpr, Stmt};

/// Parameters of a program: the `:names` (and positional `$n`) it may read before it assigns
/// them (a definite-assignment pass: after an IF only what every branch,
/// ELSE included, assigns counts as assigned; what a loop body assigns
/// counts inside it only). TPC-C's OrderStatus assigns `:c` on its
/// by-name branch and reads it as a parameter on the other: a parameter.
pub fn parameters(nodes: &[Node]) -> Vec<String> {
    used_parameters(nodes, &[])
}

/// [`parameters`] but those that stand only as a condition that is
/// exactly one of `choices` (`IF :c1`, `EXIT WHEN :done`): with the
/// manifest's `choices:` the replay follows the schedule's path there and
/// never reads their values.
pub fn used_parameters(nodes: &[Node], choices: &[String]) -> Vec<String> {
    let mut params = vec![];
    walk(nodes, &mut HashSet::new(), &mut params, choices);
    params.sort();
    params.dedup();
    params
}

/// Names a person reads for a program's parameters: a JDBC `?`
/// (`?@<file offset>`, the executor's name) becomes `?N of statement M`
/// (the N-th `?` of the program's M-th SQL statement, in text order).
/// Other names are their own.
pub fn display_names(program: &[Node]) -> HashMap<String, String> {
    let mut stmts: Vec<&Stmt> = vec![];
    statements(program, &mut stmts);
    stmts.sort_by_key(|s| s.snip.offset);
    let mut out = HashMap::new();
    for (m, st) in stmts.iter().enumerate() {
        let mut own = vec![];
        placeholders(&st.sql, &HashSet::new(), &mut own);
        let mut at: Vec<usize> = own
            .iter()
            .filter_map(|p| p.strip_prefix("?@")?.parse().ok())
            .collect();
        at.sort_unstable();
        at.dedup();
        for (n, a) in at.iter().enumerate() {
            out.insert(
                format!("?@{a}"),
                format!("?{} of statement {}", n + 1, m + 1),
            );
        }
    }
    out
}

/// The SQL statements of `nodes`, in tree order.
fn statements<'n>(nodes: &'n [Node], out: &mut Vec<&'n Stmt>) {
    for n in nodes {
        match n {
            Node::Sql(s) | Node::Open(s) => out.push(s),
            Node::If(bs) => bs.iter().for_each(|(_, b)| statements(b, out)),
            Node::Loop { head, body, .. } => {
                if let LoopHead::Query { query, .. } = head {
                    out.push(query);
                }
                statements(body, out);
            }
            Node::Block { body, handlers, .. } => {
                statements(body, out);
                handlers.iter().flatten().for_each(|h| statements(h, out));
            }
            Node::Prefix(b) => statements(b, out),
            _ => {}
        }
    }
}

/// A condition that is exactly one of `choices` (`:c1`, `c1`).
fn is_choice(c: &ProcExpr, choices: &[String]) -> bool {
    let name = c.snip.text.trim().trim_start_matches(':').to_lowercase();
    choices.contains(&name)
}

/// JDBC's `?` placeholders of a program: the executor's name
/// `?@<file offset>` (crate::frontend::sql's parser) → the name the
/// front-end's provenance gives it, `?N` for the N-th `?` of the file
/// (`lower::symbolic`'s `qmark_name`). The file is read again for the
/// offsets; where it cannot be, the program's own `?`s in order.
pub fn qmark_names(program: &[Node], file: Option<&str>) -> HashMap<String, String> {
    let mine: Vec<usize> = parameters(program)
        .iter()
        .filter_map(|p| p.strip_prefix("?@")?.parse().ok())
        .collect();
    if mine.is_empty() {
        return HashMap::new();
    }
    let offsets = file
        .and_then(|f| std::fs::read_to_string(f).ok())
        .map(|t| crate::frontend::sql::qmark_offsets(&t))
        .filter(|o| mine.iter().all(|at| o.contains(at)))
        .unwrap_or_else(|| {
            let mut o = mine.clone();
            o.sort_unstable();
            o
        });
    mine.iter()
        .filter_map(|at| {
            let n = offsets.iter().position(|o| o == at)?;
            Some((format!("?@{at}"), format!("?{}", n + 1)))
        })
        .collect()
}

fn placeholders<T: sqlparser::ast::Visit>(
    node: &T,
    assigned: &HashSet<String>,
    params: &mut Vec<String>,
) {
    let _ = sqlparser::ast::visit_expressions(node, |e| {
        if let sqlparser::ast::Expr::Value(v) = e {
            if let sqlparser::ast::Value::Placeholder(p) = &v.value {
                // `:name`, or a routine's parameter by position (`$1`, and
                // what `x ALIAS FOR $1` names): the executor binds both
                // by their name without the colon.
                let positional =
                    p.len() > 1 && p.starts_with('$') && p[1..].bytes().all(|b| b.is_ascii_digit());
                // JDBC's `?` (BenchBase): `?@<file offset>` (`qmark_names`).
                if p.starts_with(':') || positional || p.starts_with("?@") {
                    let name = p.trim_start_matches(':').to_lowercase();
                    let base = name.split('$').next().unwrap_or(&name).to_string();
                    if !assigned.contains(&base) && name != "found" {
                        params.push(name);
                    }
                }
            }
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
}

fn walk(
    nodes: &[Node],
    assigned: &mut HashSet<String>,
    params: &mut Vec<String>,
    choices: &[String],
) {
    let var = |v: &str| v.trim_start_matches(':').to_lowercase();
    for n in nodes {
        match n {
            Node::Sql(s) | Node::Open(s) => {
                placeholders(&s.sql, assigned, params);
                assigned.extend(s.into.iter().map(|v| var(v)));
            }
            Node::If(bs) => {
                let mut after: Option<HashSet<String>> = None;
                for (c, b) in bs {
                    if let Some(c) = c.as_ref().filter(|c| !is_choice(c, choices)) {
                        placeholders(&c.expr, assigned, params);
                    }
                    let mut a = assigned.clone();
                    walk(b, &mut a, params, choices);
                    after = Some(match after {
                        None => a,
                        Some(x) => x.intersection(&a).cloned().collect(),
                    });
                }
                let has_else = bs.last().is_some_and(|(c, _)| c.is_none());
                if let (true, Some(a)) = (has_else, after) {
                    *assigned = a;
                }
            }
            Node::Loop { head, body, .. } => {
                match head {
                    LoopHead::While(c) | LoopHead::Array { expr: c, .. } => {
                        placeholders(&c.expr, assigned, params)
                    }
                    LoopHead::Range { bounds, .. } => bounds
                        .iter()
                        .for_each(|c| placeholders(&c.expr, assigned, params)),
                    LoopHead::Query { query, .. } => placeholders(&query.sql, assigned, params),
                    LoopHead::Plain => {}
                }
                let mut a = assigned.clone();
                if let Some(v) = head.var() {
                    a.insert(var(v));
                }
                walk(body, &mut a, params, choices);
            }
            Node::Exit { when: Some(c), .. } if !is_choice(c, choices) => {
                placeholders(&c.expr, assigned, params)
            }
            Node::Eval(cs) => cs
                .iter()
                .for_each(|c| placeholders(&c.expr, assigned, params)),
            Node::Assign { var: v, expr } => {
                placeholders(&expr.expr, assigned, params);
                assigned.insert(var(v));
            }
            Node::Block { body, handlers, .. } => {
                walk(body, assigned, params, choices);
                for h in handlers.iter().flatten() {
                    walk(h, &mut assigned.clone(), params, choices);
                }
            }
            Node::Prefix(b) => walk(b, &mut assigned.clone(), params, choices),
            Node::Call { call, result, .. } => {
                placeholders(&call.expr, assigned, params);
                if let Some(r) = result {
                    assigned.insert(var(r));
                }
            }
            _ => {}
        }
    }
}
