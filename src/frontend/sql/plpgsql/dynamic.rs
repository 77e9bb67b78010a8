//! Dynamic SQL whose text is known (issue 22, item 5): the string of an
//! `EXECUTE` built from literals and parameters the manifest binds
//! (`bind: { routine.param: value }`) with `||`, `format('… %I %L %s …')`,
//! `quote_ident`, `quote_literal`, `quote_nullable`, `concat` and casts to
//! text, evaluated as PostgreSQL evaluates it. Anything else is `None`:
//! the caller keeps the "dynamic SQL cannot be analysed" error.

use super::super::pg::{protobuf, NodeEnum};
use protobuf::a_const::Val;

/// The value of the string expression `expr`, where `value_of` gives the
/// value of a name (`p`, `fn.p`, `$n`) bound in the manifest.
pub(crate) fn evaluate(
    expr: &str,
    value_of: &dyn Fn(&[String]) -> Option<String>,
) -> Option<String> {
    let parsed = super::super::pg::parse(&format!("SELECT {expr}")).ok()?;
    let [raw] = parsed.tree.stmts.as_slice() else {
        return None;
    };
    let NodeEnum::SelectStmt(s) = raw.stmt.as_ref()?.node.as_ref()? else {
        return None;
    };
    if !s.from_clause.is_empty() || s.where_clause.is_some() {
        return None;
    }
    let [target] = s.target_list.as_slice() else {
        return None;
    };
    let NodeEnum::ResTarget(rt) = target.node.as_ref()? else {
        return None;
    };
    value(rt.val.as_deref()?, value_of)
}

fn names(nodes: &[protobuf::Node]) -> Option<Vec<String>> {
    nodes
        .iter()
        .map(|n| match n.node.as_ref()? {
            NodeEnum::String(s) => Some(s.sval.to_lowercase()),
            _ => None,
        })
        .collect()
}

fn value(n: &protobuf::Node, value_of: &dyn Fn(&[String]) -> Option<String>) -> Option<String> {
    match n.node.as_ref()? {
        NodeEnum::AConst(c) => match c.val.as_ref()? {
            Val::Sval(s) => Some(s.sval.clone()),
            Val::Ival(i) => Some(i.ival.to_string()),
            Val::Fval(f) => Some(f.fval.clone()),
            _ => None,
        },
        NodeEnum::ColumnRef(c) => value_of(&names(&c.fields)?),
        NodeEnum::ParamRef(p) => value_of(&[format!("${}", p.number)]),
        NodeEnum::TypeCast(t) => {
            // Only casts that keep the text as it is.
            let ty = names(&t.type_name.as_ref()?.names)?;
            let text = matches!(
                ty.last().map(String::as_str),
                Some("text" | "varchar" | "name" | "bpchar")
            );
            text.then(|| value(t.arg.as_deref()?, value_of)).flatten()
        }
        NodeEnum::AExpr(e) => {
            let concat = e.kind == protobuf::AExprKind::AexprOp as i32
                && names(&e.name)?.last().map(String::as_str) == Some("||");
            if !concat {
                return None;
            }
            let l = value(e.lexpr.as_deref()?, value_of)?;
            let r = value(e.rexpr.as_deref()?, value_of)?;
            Some(l + &r)
        }
        NodeEnum::FuncCall(f) => call(f, value_of),
        _ => None,
    }
}

fn call(f: &protobuf::FuncCall, value_of: &dyn Fn(&[String]) -> Option<String>) -> Option<String> {
    let name = names(&f.funcname)?;
    let plain = match name.as_slice() {
        [n] => n.as_str(),
        [s, n] if s == "pg_catalog" => n.as_str(),
        _ => return None,
    };
    if f.agg_star || f.agg_distinct || f.func_variadic || f.over.is_some() {
        return None;
    }
    let args: Vec<String> = f
        .args
        .iter()
        .map(|a| value(a, value_of))
        .collect::<Option<_>>()?;
    match (plain, args.as_slice()) {
        ("quote_ident", [a]) => Some(quote_ident(a)),
        ("quote_literal" | "quote_nullable", [a]) => Some(quote_literal(a)),
        ("concat", _) => Some(args.concat()),
        ("format", [fmt, rest @ ..]) => format(fmt, rest),
        _ => None,
    }
}

/// PostgreSQL's `quote_ident`: quoted unless a lower-case name that is
/// no keyword (other than an unreserved one).
pub(crate) fn quote_ident(s: &str) -> String {
    let simple = s
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if simple && !reserved(s) {
        return s.to_string();
    }
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// A keyword PostgreSQL's `quote_ident` quotes (any but unreserved).
fn reserved(s: &str) -> bool {
    use protobuf::KeywordKind;
    let Ok(scan) = pg_query::scan(s) else {
        return true;
    };
    scan.tokens.iter().any(|t| {
        !matches!(
            t.keyword_kind(),
            KeywordKind::NoKeyword | KeywordKind::UnreservedKeyword
        )
    })
}

/// PostgreSQL's `quote_literal`: quotes doubled; with a backslash, an
/// `E'…'` string with the backslashes doubled.
pub(crate) fn quote_literal(s: &str) -> String {
    let body = s.replace('\'', "''");
    if s.contains('\\') {
        format!("E'{}'", body.replace('\\', "\\\\"))
    } else {
        format!("'{body}'")
    }
}

/// PostgreSQL's `format`: `%s`, `%I`, `%L`, `%%`, with an optional
/// argument position `%n$`. Widths and flags: `None` (not evaluated).
fn format(fmt: &str, args: &[String]) -> Option<String> {
    let mut out = String::new();
    let mut chars = fmt.chars().peekable();
    let mut next = 0;
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'%') {
            chars.next();
            out.push('%');
            continue;
        }
        let mut digits = String::new();
        while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
            digits.push(*d);
            chars.next();
        }
        let index = if digits.is_empty() {
            next
        } else if chars.next() == Some('$') {
            digits.parse::<usize>().ok()?.checked_sub(1)?
        } else {
            return None;
        };
        let arg = args.get(index)?;
        next = index + 1;
        match chars.next()? {
            's' => out.push_str(arg),
            'I' => out.push_str(&quote_ident(arg)),
            'L' => out.push_str(&quote_literal(arg)),
            _ => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(e: &str) -> Option<String> {
        evaluate(e, &|n: &[String]| match n {
            [q] if q == "q" || q == "$1" => Some("Jobs x".into()),
            [q] if q == "s" => Some("app".into()),
            _ => None,
        })
    }

    #[test]
    fn evaluates_what_postgresql_would() {
        // Expected values: PostgreSQL 15's format / quote_ident /
        // quote_literal on the same arguments.
        assert_eq!(
            eval("format('UPDATE %I.%I SET a = %L', s, 'jobs_' || q, q)").as_deref(),
            Some("UPDATE app.\"jobs_Jobs x\" SET a = 'Jobs x'")
        );
        assert_eq!(
            eval("'DELETE FROM ' || quote_ident(s) || ' WHERE x = ' || quote_literal($1)")
                .as_deref(),
            Some("DELETE FROM app WHERE x = 'Jobs x'")
        );
        assert_eq!(
            eval("format('%2$s %1$s %%', 'a', 'b')").as_deref(),
            Some("b a %")
        );
        assert_eq!(quote_ident("select"), "\"select\"");
        assert_eq!(quote_ident("jobs_1"), "jobs_1");
        assert_eq!(quote_literal("a'b\\c"), "E'a''b\\\\c'");
        // Unbound names, other functions, widths: not evaluated.
        assert_eq!(eval("'SELECT ' || other"), None);
        assert_eq!(eval("upper(q)"), None);
        assert_eq!(eval("format('%10s', q)"), None);
        assert_eq!(eval("'a'::regclass"), None);
    }
}
