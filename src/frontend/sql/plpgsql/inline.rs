//! RETURN paths and the inlining of calls of workload routines.

use std::collections::HashMap;

use sqlparser::ast::{Expr, FunctionArg, FunctionArgExpr, FunctionArguments};

use super::super::procedural::{LoopHead, Node, ProcExpr, Stmt};
use super::*;
use crate::model::error::{Diag, Result, SourceFile};

/// RETURN ends the path. Where an IF has branches that return and others
/// that do not, what follows the IF is moved into the others (exactly
/// PostgreSQL's paths); a RETURN at the end of the routine is dropped.
/// RETURNs left (inside loops) are lowered as leaving everything after
/// them optional.
pub fn hoist_returns(nodes: Vec<Node>) -> Vec<Node> {
    let mut out = vec![];
    let mut it = nodes.into_iter();
    while let Some(n) = it.next() {
        match n {
            Node::Return { .. } if it.len() == 0 => return out,
            Node::Return { .. } => {
                out.push(n);
                return out;
            }
            Node::Block {
                label: None,
                body,
                handlers: None,
                file: None,
            } => {
                let mut rest: Vec<Node> = body;
                rest.extend(it);
                out.extend(hoist_returns(rest));
                return out;
            }
            Node::If(mut bs) if bs.iter().any(|(_, b)| ends_in_return(b)) => {
                let rest: Vec<Node> = it.collect();
                if bs.last().is_some_and(|(c, _)| c.is_some()) {
                    bs.push((None, vec![]));
                }
                for (_, b) in &mut bs {
                    if !ends(b) {
                        b.extend(rest.iter().cloned());
                    }
                    *b = hoist_returns(std::mem::take(b));
                }
                out.push(Node::If(bs));
                return out;
            }
            n => out.push(n),
        }
    }
    out
}

fn ends(b: &[Node]) -> bool {
    match b.last() {
        Some(Node::Return { .. } | Node::Abort) => true,
        Some(Node::If(bs)) => {
            bs.last().is_some_and(|(c, _)| c.is_none()) && bs.iter().all(|(_, b)| ends(b))
        }
        _ => false,
    }
}

fn ends_in_return(b: &[Node]) -> bool {
    match b.last() {
        Some(Node::Return { .. }) => true,
        Some(Node::If(bs)) => bs.iter().any(|(_, b)| ends_in_return(b)),
        _ => false,
    }
}

/// The arguments of a call, by parameter: positional, then named
/// (`a => v`, `a := v`), then defaults. Errors name what is missing.
pub fn bind_args(
    file: &SourceFile,
    call: &ProcExpr,
    callee: &ParsedRoutine,
    at: usize,
) -> Result<Vec<ProcExpr>> {
    let Expr::Function(f) = &call.expr else {
        return Ok(vec![]);
    };
    let params = &callee.routine.params;
    let mut out: Vec<Option<ProcExpr>> = callee.defaults.clone();
    // A function's OUT parameters take no argument; a procedure's do.
    let slots: Vec<usize> = (0..params.len())
        .filter(|&k| callee.routine.procedure || params[k].mode != Mode::Out)
        .collect();
    for (k, p) in params.iter().enumerate() {
        if !slots.contains(&k) && p.mode == Mode::Out {
            out[k] = Some(ProcExpr {
                snip: call.snip.clone(),
                expr: Expr::Value(sqlparser::ast::Value::Null.with_empty_span()),
                pg: None,
            });
        }
    }
    let mk = |e: &Expr| ProcExpr {
        snip: call.snip.clone(),
        expr: e.clone(),
        pg: None,
    };
    if let FunctionArguments::List(l) = &f.args {
        for (k, a) in l.args.iter().enumerate() {
            match a {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => {
                    let Some(&slot) = slots.get(k) else {
                        return Err(Diag::new(format!(
                            "too many arguments for {}",
                            callee.routine.name
                        ))
                        .help("pass one value per parameter")
                        .at(file, at, 4, "here"));
                    };
                    out[slot] = Some(mk(e));
                }
                FunctionArg::Named {
                    name,
                    arg: FunctionArgExpr::Expr(e),
                    ..
                }
                | FunctionArg::ExprNamed {
                    name: Expr::Identifier(name),
                    arg: FunctionArgExpr::Expr(e),
                    ..
                } => {
                    let n = crate::frontend::sql::ident_name(name);
                    let Some(k) = params
                        .iter()
                        .position(|p| p.name.as_deref() == Some(n.as_str()))
                    else {
                        return Err(Diag::new(format!(
                            "{} has no parameter `{n}`",
                            callee.routine.name
                        ))
                        .help("name one of the routine's parameters")
                        .at(file, at, 4, "here"));
                    };
                    out[k] = Some(mk(e));
                }
                _ => {
                    return Err(Diag::new("unsupported argument form")
                        .help("pass values positionally or as name => value")
                        .at(file, at, 4, "here"))
                }
            }
        }
    }
    out.into_iter()
        .enumerate()
        .map(|(k, a)| {
            a.ok_or_else(|| {
                Diag::new(format!("no value for parameter {} of {}", k + 1, callee.routine.name))
                    .help("pass a value for every parameter without a default (OUT parameters take a variable or NULL)")
                    .at(file, at, 4, "here")
            })
        })
        .collect()
}

/// A workload's parsed PL/pgSQL routines by signature
/// (`Routine::signature`: name and input parameter types).
pub type Routines = HashMap<String, ParsedRoutine>;

/// What a call argument's type is, as far as it is evident.
#[derive(Debug, Clone, PartialEq)]
enum ArgTy {
    /// A declared or literal type (normalized).
    Known(String),
    /// A string literal or NULL: PostgreSQL's `unknown`, coerced to the
    /// parameter's type (the string category preferred).
    Literal,
    /// An expression whose type isolint does not derive.
    Opaque,
}

fn arg_type(e: &Expr, types: &HashMap<String, String>) -> ArgTy {
    use sqlparser::ast::Value as V;
    match e {
        Expr::Nested(x) => arg_type(x, types),
        Expr::UnaryOp { expr, .. } if matches!(expr.as_ref(), Expr::Value(_)) => {
            arg_type(expr, types)
        }
        Expr::Cast { data_type, .. } => ArgTy::Known(norm_type(&data_type.to_string())),
        Expr::Value(v) => match &v.value {
            V::Number(t, _) => ArgTy::Known(
                match t.parse::<i64>() {
                    Ok(n) if i32::try_from(n).is_ok() => "integer",
                    Ok(_) => "bigint",
                    Err(_) => "numeric",
                }
                .into(),
            ),
            V::Boolean(_) => ArgTy::Known("boolean".into()),
            V::SingleQuotedString(_)
            | V::EscapedStringLiteral(_)
            | V::DollarQuotedString(_)
            | V::Null => ArgTy::Literal,
            V::Placeholder(p) => types
                .get(&p.trim_start_matches(':').to_lowercase())
                .map_or(ArgTy::Opaque, |t| ArgTy::Known(t.clone())),
            _ => ArgTy::Opaque,
        },
        _ => ArgTy::Opaque,
    }
}

const NUMERIC: [&str; 6] = [
    "smallint",
    "integer",
    "bigint",
    "numeric",
    "real",
    "double precision",
];
const STRING: [&str; 4] = ["text", "character varying", "character", "name"];

/// Whether PostgreSQL may pass a value of type `from` to a parameter of
/// type `to` implicitly. Only for the numeric and string types (whose
/// implicit casts are listed here: the numeric ones widen, the string ones
/// convert freely) is the answer "no"; for any other pair it may.
fn coercible(from: &ArgTy, to: &str) -> bool {
    let ArgTy::Known(from) = from else {
        return true;
    };
    let rank = |t: &str| NUMERIC.iter().position(|n| *n == t);
    let known = |t: &str| rank(t).is_some() || STRING.contains(&t) || t == "boolean";
    if from == to || !known(from) || !known(to) {
        return true;
    }
    match (rank(from), rank(to)) {
        (Some(a), Some(b)) => a < b && !(from == "real" && to != "double precision"),
        _ => STRING.contains(&from.as_str()) && STRING.contains(&to),
    }
}

/// The parameter each argument of `call` goes to (positional, then by
/// name), or None when the arguments do not fit the routine.
fn arg_slots(call: &ProcExpr, callee: &ParsedRoutine) -> Option<Vec<(usize, Expr)>> {
    let Expr::Function(f) = &call.expr else {
        return Some(vec![]);
    };
    let params = &callee.routine.params;
    let slots: Vec<usize> = (0..params.len())
        .filter(|&k| callee.routine.procedure || params[k].mode != Mode::Out)
        .collect();
    let mut out = vec![];
    if let FunctionArguments::List(l) = &f.args {
        for (k, a) in l.args.iter().enumerate() {
            match a {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => {
                    out.push((*slots.get(k)?, e.clone()))
                }
                FunctionArg::Named {
                    name,
                    arg: FunctionArgExpr::Expr(e),
                    ..
                }
                | FunctionArg::ExprNamed {
                    name: Expr::Identifier(name),
                    arg: FunctionArgExpr::Expr(e),
                    ..
                } => {
                    let n = crate::frontend::sql::ident_name(name);
                    let k = params
                        .iter()
                        .position(|p| p.name.as_deref() == Some(n.as_str()))?;
                    out.push((k, e.clone()));
                }
                _ => return None,
            }
        }
    }
    Some(out)
}

/// The overload of `name` a call runs, resolved as PostgreSQL resolves
/// it (the manual's "Function Type Resolution") where the argument types
/// are evident: the routines the arguments fit (number, names, implicit
/// casts), then an exact match, then the most exact matches, then string
/// literals preferring string parameters. Anything still ambiguous is an
/// error, never a guess.
fn resolve<'r>(
    file: &SourceFile,
    call: &ProcExpr,
    at: usize,
    name: &str,
    candidates: Vec<&'r ParsedRoutine>,
    types: &HashMap<String, String>,
) -> Result<&'r ParsedRoutine> {
    if candidates.len() == 1 {
        return Ok(candidates[0]);
    }
    type Fit<'r> = (&'r ParsedRoutine, Vec<(ArgTy, String)>);
    let mut fits: Vec<Fit<'r>> = vec![];
    for c in &candidates {
        let Some(slots) = arg_slots(call, c) else {
            continue;
        };
        if bind_args(file, call, c, at).is_err() {
            continue;
        }
        let args: Vec<(ArgTy, String)> = slots
            .iter()
            .map(|(k, e)| (arg_type(e, types), c.routine.params[*k].ty.clone()))
            .collect();
        if args.iter().all(|(a, p)| coercible(a, p)) {
            fits.push((c, args));
        }
    }
    let exact = |f: &Fit| {
        f.1.iter()
            .filter(|(a, p)| *a == ArgTy::Known(p.clone()))
            .count()
    };
    if fits.len() > 1 {
        let most = fits.iter().map(exact).max().unwrap_or(0);
        fits.retain(|f| exact(f) == most);
    }
    if fits.len() > 1 {
        // Unknown-type literals: the string category where any candidate
        // takes one at that position.
        let n = fits[0].1.len();
        for k in 0..n {
            let lit = fits
                .iter()
                .all(|f| f.1.get(k).is_some_and(|a| a.0 == ArgTy::Literal));
            let string = |f: &Fit| f.1.get(k).is_some_and(|a| STRING.contains(&a.1.as_str()));
            if lit && fits.iter().any(string) {
                fits.retain(string);
            }
        }
    }
    match fits.len() {
        1 => Ok(fits[0].0),
        k => {
            let mut sigs: Vec<String> = candidates.iter().map(|c| c.routine.signature()).collect();
            sigs.sort();
            let what = if k == 0 {
                "matches no overload"
            } else {
                "is ambiguous"
            };
            Err(Diag::new(format!(
                "this call of `{name}` {what}: {}",
                sigs.join(", ")
            ))
            .help("PostgreSQL picks an overload by the argument types; write the arguments with evident types (a declared variable or parameter, a literal, or a cast such as 42::int or 'x'::text)")
            .at(file, at, name.len().max(1), "here"))
        }
    }
}

/// Replace every call of a workload routine by the callee's statements:
/// its parameters assigned the arguments, its body (variables renamed
/// `callee.x`, RETURN leaving the inlined block), then the result variable
/// (a fresh value) and OUT arguments. Recursion is an error.
/// `types`: the declared types of the variables the nodes use (for
/// overloaded callees), `stack`: the signatures being inlined.
pub fn inline_calls(
    file: &SourceFile,
    nodes: Vec<Node>,
    routines: &Routines,
    types: &HashMap<String, String>,
    stack: &mut Vec<String>,
) -> Result<Vec<Node>> {
    let nodes = defer_volatile(file, nodes, routines, types)?;
    inline_each(file, nodes, routines, types, stack)
}

/// [`inline_calls`] of each node of a sequence already placed
/// (`defer_volatile`): a one-snapshot block it made is not placed again.
fn inline_each(
    file: &SourceFile,
    nodes: Vec<Node>,
    routines: &Routines,
    types: &HashMap<String, String>,
    stack: &mut Vec<String>,
) -> Result<Vec<Node>> {
    let mut out = vec![];
    for n in nodes {
        match n {
            Node::Call { call, result, at } => out.extend(inline_one(
                file,
                &call,
                result,
                at,
                (routines, types),
                stack,
            )?),
            Node::Block {
                label: Some(l),
                body,
                handlers: None,
                file: None,
            } if l == super::ONE_SNAPSHOT_LABEL => out.push(one_snapshot(inline_each(
                file, body, routines, types, stack,
            )?)),
            n => out.push(map_children(n, &mut |b| {
                inline_calls(file, b, routines, types, stack)
            })?),
        }
    }
    Ok(out)
}

/// The per-row calls queued before a statement (`extract_calls`) whose
/// routine is VOLATILE move into a block after the statement:
/// `[stmt, calls…]` labelled `VOLATILE_LABEL`. PostgreSQL runs such a
/// routine while it evaluates the statement's rows, each of its queries on
/// a fresh snapshot taken after the statement's own; STABLE and IMMUTABLE
/// routines read the statement's snapshot, so they stay before it (the
/// lowering gives the statement's snapshot reads and such a body the same
/// place: no write can come between them), in one `ONE_SNAPSHOT_LABEL`
/// block with it — also when the statement calls VOLATILE routines too. A VOLATILE call in any other
/// node that names a table (a condition, a loop's or cursor's query) is
/// an error: its body would run after that query's snapshot, which
/// isolint places only for statements.
fn defer_volatile(
    file: &SourceFile,
    nodes: Vec<Node>,
    routines: &Routines,
    types: &HashMap<String, String>,
) -> Result<Vec<Node>> {
    let per_row = |n: &Node| {
        matches!(n, Node::Loop { label: Some(l), body, .. }
            if l == super::PER_ROW_LABEL && matches!(body.as_slice(), [Node::Call { .. }]))
    };
    let mut out: Vec<Node> = vec![];
    let mut run: Vec<Node> = vec![];
    for n in nodes {
        if per_row(&n) {
            run.push(n);
            continue;
        }
        let Node::Sql(_) = n else {
            if let Some(c) = run.iter().find(|c| volatile_call(file, c, routines, types)) {
                return Err(volatile_elsewhere(file, c));
            }
            out.append(&mut run);
            out.push(n);
            continue;
        };
        let (after, before): (Vec<Node>, Vec<Node>) = run
            .drain(..)
            .partition(|c| volatile_call(file, c, routines, types));
        if after.is_empty() && !before.is_empty() {
            // STABLE calls read the statement's snapshot.
            let mut body = before;
            body.push(n);
            out.push(one_snapshot(body));
        } else if after.is_empty() {
            out.push(n);
        } else {
            // Unlabelled: placed now (`inline_calls` sees them again).
            let mut body = vec![n];
            body.extend(after.into_iter().map(|c| match c {
                Node::Loop { head, body, at, .. } => Node::Loop {
                    head,
                    body,
                    at,
                    label: None,
                },
                c => c,
            }));
            let volatile = Node::Block {
                label: Some(super::VOLATILE_LABEL.to_string()),
                body,
                handlers: None,
                file: None,
            };
            // STABLE calls beside VOLATILE ones still read the
            // statement's snapshot (PostgreSQL 15, `SELECT f_stable(),
            // f_volatile()`: docs/explorer.md); the VOLATILE bodies' queries
            // take their own (`lower::control`).
            if before.is_empty() {
                out.push(volatile);
            } else {
                let mut body = before;
                body.push(volatile);
                out.push(one_snapshot(body));
            }
        }
    }
    if let Some(c) = run.iter().find(|c| volatile_call(file, c, routines, types)) {
        return Err(volatile_elsewhere(file, c));
    }
    out.append(&mut run);
    Ok(out)
}

/// `body` in a block whose queries read one snapshot.
fn one_snapshot(body: Vec<Node>) -> Node {
    Node::Block {
        label: Some(super::ONE_SNAPSHOT_LABEL.to_string()),
        body,
        handlers: None,
        file: None,
    }
}

fn volatile_elsewhere(file: &SourceFile, n: &Node) -> Box<Diag> {
    let (name, at) = match n {
        Node::Loop { body, at, .. } => match body.as_slice() {
            [Node::Call { call, at, .. }] => (call_name(call), *at),
            _ => (String::new(), *at),
        },
        _ => (String::new(), 0),
    };
    Diag::new(format!(
        "call of the VOLATILE routine `{name}` in an expression that reads a table"
    ))
    .help("PostgreSQL runs its queries after the expression's query took its snapshot, which isolint models only for a statement: assign the query to a variable in a statement (SELECT … INTO v) and test v, or declare the routine STABLE if it only reads")
    .at(file, at, name.len().max(1), "here")
}

/// Whether the routine a queued per-row call resolves to is VOLATILE.
/// A call that does not resolve counts as VOLATILE (its inlining reports
/// the error).
fn volatile_call(
    file: &SourceFile,
    n: &Node,
    routines: &Routines,
    types: &HashMap<String, String>,
) -> bool {
    let Node::Loop { body, .. } = n else {
        return false;
    };
    let [Node::Call { call, at, .. }] = body.as_slice() else {
        return false;
    };
    let name = call_name(call);
    let candidates: Vec<&ParsedRoutine> = routines
        .values()
        .filter(|p| p.routine.name == name)
        .collect();
    resolve(file, call, *at, &name, candidates, types).map_or(true, |p| p.routine.volatile)
}

fn call_name(call: &ProcExpr) -> String {
    match &call.expr {
        Expr::Function(f) => f
            .name
            .0
            .last()
            .and_then(|p| p.as_ident())
            .map(crate::frontend::sql::ident_name)
            .unwrap_or_default(),
        _ => String::new(),
    }
}

fn inline_one(
    file: &SourceFile,
    call: &ProcExpr,
    result: Option<String>,
    at: usize,
    (routines, types): (&Routines, &HashMap<String, String>),
    stack: &mut Vec<String>,
) -> Result<Vec<Node>> {
    let name = call_name(call);
    let mut candidates: Vec<&ParsedRoutine> = routines
        .values()
        .filter(|p| p.routine.name == name)
        .collect();
    candidates.sort_by_key(|p| p.routine.signature());
    if candidates.is_empty() {
        return Err(Diag::new(format!(
            "call of `{name}`, which is not a PL/pgSQL routine of the workload"
        ))
        .help("isolint inlines calls of the routines defined in the workload's routine files")
        .at(file, at, name.len().max(1), "here"));
    }
    let callee = resolve(file, call, at, &name, candidates, types)?;
    let sig = callee.routine.signature();
    if stack.contains(&sig) {
        return Err(Diag::new(format!(
            "recursive call of `{name}` ({} → {name})",
            stack.join(" → ")
        ))
        .help("recursive routines cannot be inlined; unroll the recursion by hand")
        .at(file, at, name.len().max(1), "here"));
    }
    if callee
        .nodes
        .iter()
        .any(|n| matches!(n, Node::Commit { .. }))
    {
        return Err(Diag::new(format!("call of `{name}`, which commits"))
            .help("isolint splits only the called procedure itself at its COMMITs; call it from the client, or move the COMMIT into the caller")
            .at(file, at, name.len().max(1), "here"));
    }
    let args = bind_args(file, call, callee, at)?;
    let prefix = format!("{name}.");
    let label = format!("{name}()");
    let mut out = vec![];
    let params = &callee.routine.params;
    for (k, (p, a)) in params.iter().zip(&args).enumerate() {
        let var = p.name.clone().unwrap_or(format!("${}", k + 1));
        out.push(Node::Assign {
            var: rename_key(&var, &prefix),
            expr: a.clone(),
        });
    }
    let body = callee
        .nodes
        .iter()
        .cloned()
        .map(|n| rename(n, &prefix, &label))
        .collect();
    // A callee of another routine file: its positions refer to that file.
    let other = (callee.file.name != file.name).then(|| callee.file.clone());
    let callee_types: HashMap<String, String> = callee
        .types
        .iter()
        .map(|(k, t)| (rename_key(k, &prefix), t.clone()))
        .collect();
    stack.push(sig);
    let body = inline_calls(
        other.as_ref().unwrap_or(file),
        body,
        routines,
        &callee_types,
        stack,
    );
    stack.pop();
    out.push(Node::Block {
        label: Some(label),
        body: body?,
        handlers: None,
        file: other,
    });
    if !callee.routine.volatile {
        // Its queries read the calling query's snapshot.
        out = vec![one_snapshot(out)];
    }
    if let Some(v) = result {
        let null = Expr::Value(sqlparser::ast::Value::Null.with_empty_span());
        out.push(Node::Assign {
            var: v,
            expr: ProcExpr {
                snip: call.snip.clone(),
                expr: null,
                pg: None,
            },
        });
    }
    for (k, (p, a)) in params.iter().zip(&args).enumerate() {
        let target = match &a.expr {
            Expr::Value(v) => match &v.value {
                sqlparser::ast::Value::Placeholder(ph) if p.mode != Mode::In => {
                    ph.trim_start_matches(':').to_lowercase()
                }
                _ => continue,
            },
            _ => continue,
        };
        let var = p.name.clone().unwrap_or(format!("${}", k + 1));
        let ph = format!(":{}", rename_key(&var, &prefix));
        let expr = Expr::Value(sqlparser::ast::Value::Placeholder(ph).with_empty_span());
        out.push(Node::Assign {
            var: target,
            expr: ProcExpr {
                snip: call.snip.clone(),
                expr,
                pg: None,
            },
        });
    }
    Ok(out)
}

/// Apply `f` to every statement list directly inside a node.
fn map_children(n: Node, f: &mut dyn FnMut(Vec<Node>) -> Result<Vec<Node>>) -> Result<Node> {
    Ok(match n {
        Node::If(bs) => Node::If(
            bs.into_iter()
                .map(|(c, b)| Ok((c, f(b)?)))
                .collect::<Result<_>>()?,
        ),
        Node::Loop {
            head,
            body,
            at,
            label,
        } => Node::Loop {
            head,
            body: f(body)?,
            at,
            label,
        },
        Node::Block {
            label,
            body,
            handlers,
            file,
        } => Node::Block {
            label,
            body: f(body)?,
            handlers: match handlers {
                Some(hs) => Some(hs.into_iter().map(&mut *f).collect::<Result<_>>()?),
                None => None,
            },
            file,
        },
        n => n,
    })
}

/// A callee's variable name as seen by the caller.
fn rename_key(k: &str, prefix: &str) -> String {
    match k.strip_prefix('$') {
        Some(n) => format!("{prefix}p{n}"),
        None => format!("{prefix}{k}"),
    }
}

/// A placeholder (`:x`, `:a$i$`, `:r$f`, `$1`) renamed for the caller.
fn rename_placeholder(p: &str, prefix: &str) -> String {
    if let Some(n) = p.strip_prefix('$') {
        return format!(":{}", rename_key(&format!("${n}"), prefix));
    }
    let key = p.trim_start_matches(':');
    match key.split_once('$') {
        // `:r$f`: field f of record r, a name, not a variable.
        Some((a, rest)) if !a.is_empty() && !rest.ends_with('$') => {
            format!(":{prefix}{a}${rest}")
        }
        Some((a, rest)) if !a.is_empty() => {
            let idx = rest.trim_matches('$');
            if idx.bytes().all(|b| b.is_ascii_digit()) {
                format!(":{prefix}{a}${idx}$")
            } else {
                format!(":{prefix}{a}${prefix}{idx}$")
            }
        }
        _ => format!(":{}", rename_key(key, prefix)),
    }
}

fn rename_expr<V: sqlparser::ast::VisitMut>(v: &mut V, prefix: &str) {
    let _ = sqlparser::ast::visit_expressions_mut(v, |e| {
        if let Expr::Value(v) = e {
            if let sqlparser::ast::Value::Placeholder(p) = &mut v.value {
                *p = rename_placeholder(p, prefix);
            }
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
}

fn rename_cond(mut c: ProcExpr, prefix: &str) -> ProcExpr {
    rename_expr(&mut c.expr, prefix);
    c
}

fn rename_stmt(mut s: Stmt, prefix: &str) -> Stmt {
    rename_expr(&mut s.sql, prefix);
    s.into = s.into.iter().map(|v| rename_key(v, prefix)).collect();
    s
}

/// A callee's node with its variables and labels renamed, RETURN as an
/// EXIT of the inlined block `ret`.
fn rename(n: Node, prefix: &str, ret: &str) -> Node {
    let r = |b: Vec<Node>| -> Vec<Node> { b.into_iter().map(|n| rename(n, prefix, ret)).collect() };
    let lbl = |l: Option<String>| l.map(|l| format!("{prefix}{l}"));
    match n {
        Node::Sql(s) => Node::Sql(Box::new(rename_stmt(*s, prefix))),
        Node::Open(s) => Node::Open(Box::new(rename_stmt(*s, prefix))),
        Node::If(bs) => Node::If(
            bs.into_iter()
                .map(|(c, b)| (c.map(|c| rename_cond(c, prefix)), r(b)))
                .collect(),
        ),
        Node::Loop {
            head,
            body,
            at,
            label,
        } => Node::Loop {
            head: match head {
                LoopHead::Plain => LoopHead::Plain,
                LoopHead::While(c) => LoopHead::While(rename_cond(c, prefix)),
                LoopHead::Range { var, bounds } => LoopHead::Range {
                    var: rename_key(&var, prefix),
                    bounds: bounds.into_iter().map(|c| rename_cond(c, prefix)).collect(),
                },
                LoopHead::Query { var, query } => LoopHead::Query {
                    var: rename_key(&var, prefix),
                    query: Box::new(rename_stmt(*query, prefix)),
                },
                LoopHead::Array { var, expr } => LoopHead::Array {
                    var: rename_key(&var, prefix),
                    expr: rename_cond(expr, prefix),
                },
            },
            body: r(body),
            at,
            label: lbl(label),
        },
        Node::Exit {
            when,
            at,
            is_continue,
            label,
        } => Node::Exit {
            when: when.map(|c| rename_cond(c, prefix)),
            at,
            is_continue,
            label: lbl(label),
        },
        Node::Eval(v) => Node::Eval(v.into_iter().map(|c| rename_cond(c, prefix)).collect()),
        Node::Assign { var, expr } => Node::Assign {
            var: rename_key(&var, prefix),
            expr: rename_cond(expr, prefix),
        },
        Node::Return { at } => Node::Exit {
            when: None,
            at,
            is_continue: false,
            label: Some(ret.to_string()),
        },
        Node::Block {
            label,
            body,
            handlers,
            file,
        } => Node::Block {
            label: lbl(label),
            body: r(body),
            handlers: handlers.map(|hs| hs.into_iter().map(r).collect()),
            file,
        },
        Node::Call { call, result, at } => Node::Call {
            call: rename_cond(call, prefix),
            result: result.map(|v| rename_key(&v, prefix)),
            at,
        },
        Node::Prefix(b) => Node::Prefix(r(b)),
        n @ (Node::Begin { .. }
        | Node::SetConstraints { .. }
        | Node::Commit { .. }
        | Node::Abort) => n,
    }
}
