//! Types for values PostgreSQL cannot type by itself (issue 23, item 5).
//!
//! The executor binds every variable as a query parameter with the type
//! of the value it holds (`Val::oid`). Two kinds of value arrive without
//! one: made-up parameters whose type PostgreSQL could not infer when the
//! program was prepared (`executor::param_types`: `bal = $1 - $2` has no
//! answer), and NULLs the executor made itself (an INTO or FETCH that
//! found no row, a DECLARE without a default). Sent as "unknown", two of
//! them side by side fail: `$1 - $2` is "operator is not unique:
//! unknown - unknown" (42725), `$1 IS NULL` "could not determine data
//! type" (42P18). PL/pgSQL never meets this: its variables have declared types.
//!
//! So: an INTO that finds no row sets its variables to NULLs of the
//! result columns' types ([`result_types`]: the column a program reads
//! is what PL/pgSQL's `v tbl.col%TYPE` would declare), and a statement
//! that binds an untyped value runs in a savepoint and, when PostgreSQL
//! cannot type it, again with explicit types ([`retypings`]): numbers as
//! numeric and other text as text, then NULLs as numeric, then as text.
//! Only a typing error (raised while the statement is analysed, before it
//! runs) is retried; every other error leaves the transaction as
//! PostgreSQL left it. A NULL's type changes no value the program sees.
//!
//! A routine program's own types come first (h23-replay3): its
//! parameters' and DECLAREd variables' types, carried by the front-end
//! (`ProgramRoutine`) and resolved here ([`routine_types`],
//! [`variable_types`]); the guesses are for values of no declared type.

use postgres::types::Type;
use postgres::Client;

use super::value::Val;
use crate::model::btp::ProgramRoutine;

/// SQLSTATEs of a statement PostgreSQL could not type: ambiguous
/// function/operator, undefined function/operator, datatype mismatch,
/// indeterminate datatype.
const TYPING: [&str; 4] = ["42725", "42883", "42804", "42P18"];

/// True for an error of typing (see [`TYPING`]).
pub fn is_typing_error(e: &postgres::Error) -> bool {
    e.code().is_some_and(|s| TYPING.contains(&s.code()))
}

/// True when some value would be sent as "unknown".
pub fn has_untyped(params: &[Val]) -> bool {
    params.iter().any(|v| v.oid == 0)
}

/// The typings to try, in order, after `params` as they are failed: the
/// untyped non-NULL values as numeric (when they read as a number) or
/// text, NULLs left to PostgreSQL; then NULLs also as numeric; then as
/// text. Typed values are never changed; repeats are left out.
pub fn retypings(params: &[Val]) -> Vec<Vec<Val>> {
    let guess = |null: Option<&Type>| -> Vec<Val> {
        params
            .iter()
            .map(|v| match (&v.text, v.oid) {
                (Some(t), 0) if t.trim().parse::<f64>().is_ok() => {
                    Val::typed(t.clone(), &Type::NUMERIC)
                }
                (Some(t), 0) => Val::typed(t.clone(), &Type::TEXT),
                (None, 0) => Val {
                    text: None,
                    oid: null.map_or(0, Type::oid),
                },
                _ => v.clone(),
            })
            .collect()
    };
    let mut out: Vec<Vec<Val>> = vec![];
    for null in [None, Some(&Type::NUMERIC), Some(&Type::TEXT)] {
        let g = guess(null);
        if g.as_slice() != params && !out.contains(&g) {
            out.push(g);
        }
    }
    out
}

/// `run(c, params)` as [`retypings`] says: as given first; when that
/// fails to type, each retyping in turn, inside a savepoint so that the
/// failed attempts leave no trace. Returns the result and the values it
/// ran with. A statement with no untyped value runs as it is.
pub fn run_typed<R>(
    c: &mut Client,
    params: &[Val],
    mut run: impl FnMut(&mut Client, &[Val]) -> Result<R, postgres::Error>,
) -> Result<(R, Vec<Val>), postgres::Error> {
    if !has_untyped(params) {
        return run(c, params).map(|r| (r, params.to_vec()));
    }
    // Outside a transaction block (no savepoint there) an error aborts
    // nothing: the attempts need no savepoint.
    let saved = savepoint(c, "isolint_types")?;
    let step = |c: &mut Client, sql: &str| if saved { c.batch_execute(sql) } else { Ok(()) };
    let first = match run(c, params) {
        Ok(r) => {
            step(c, "RELEASE SAVEPOINT isolint_types")?;
            return Ok((r, params.to_vec()));
        }
        Err(e) if is_typing_error(&e) => e,
        // Not a typing error: the transaction is aborted, as it would be
        // without the savepoint (the ROLLBACK that follows ends both).
        Err(e) => return Err(e),
    };
    for alt in retypings(params) {
        step(c, "ROLLBACK TO SAVEPOINT isolint_types")?;
        match run(c, &alt) {
            Ok(r) => {
                step(c, "RELEASE SAVEPOINT isolint_types")?;
                return Ok((r, alt));
            }
            Err(e) if is_typing_error(&e) => continue,
            Err(e) => return Err(e),
        }
    }
    // No typing works: PostgreSQL's first answer, the transaction as the
    // statement left it (aborted).
    Err(first)
}

/// `SAVEPOINT name`: true when set, false outside a transaction block
/// (25P01, which aborts nothing there).
fn savepoint(c: &mut Client, name: &str) -> Result<bool, postgres::Error> {
    match c.batch_execute(&format!("SAVEPOINT {name}")) {
        Ok(()) => Ok(true),
        Err(e) if e.code().is_some_and(|s| s.code() == "25P01") => Ok(false),
        Err(e) => Err(e),
    }
}

/// The types of the columns `sql` returns when run with `params`
/// (prepared, never executed, in a savepoint: a statement that just ran
/// prepares, but a failure must not abort the transaction). Empty when
/// it cannot be prepared.
pub fn result_types(c: &mut Client, sql: &str, params: &[Val]) -> Vec<Type> {
    let types: Vec<Type> = params.iter().map(Val::param_type).collect();
    let Ok(saved) = savepoint(c, "isolint_columns") else {
        return vec![];
    };
    let out = match c.prepare_typed(sql, &types) {
        Ok(st) => st.columns().iter().map(|col| col.type_().clone()).collect(),
        Err(_) => vec![],
    };
    let end = if out.is_empty() {
        "ROLLBACK TO SAVEPOINT isolint_columns; RELEASE SAVEPOINT isolint_columns"
    } else {
        "RELEASE SAVEPOINT isolint_columns"
    };
    if saved {
        let _ = c.batch_execute(end);
    }
    out
}

/// The declared types of the parameters of routine `name` (the program
/// `programs: [name]` runs its body), by the names the program binds:
/// `$k` and the parameter's own name. PostgreSQL's own call converts
/// its arguments to these types, so replay's made-up values take them
/// (a `smallint` parameter gets a value that fits one; `b - amt` has a
/// typed `amt`). Only when `name` is one routine (`to_regproc`: not
/// overloaded) and every parameter of the program is one of its own —
/// otherwise a program merely named like a function would take its
/// types. Types the client library does not know by oid (enums,
/// domains) are left to PostgreSQL's inference.
pub fn declared_types(
    c: &mut Client,
    name: &str,
    params: &[String],
) -> std::collections::BTreeMap<String, Type> {
    let mut out = std::collections::BTreeMap::new();
    let sql = "SELECT p.proargtypes::oid[], coalesce(p.proargnames, '{}'::text[]), p.proargmodes IS NULL \
               FROM pg_proc p WHERE p.oid = to_regproc($1)";
    let Ok(Some(row)) = c.query_opt(sql, &[&name]) else {
        return out;
    };
    let (Ok(types), Ok(names), Ok(plain)) = (
        row.try_get::<_, Vec<u32>>(0),
        row.try_get::<_, Vec<String>>(1),
        row.try_get::<_, bool>(2),
    ) else {
        return out;
    };
    for (k, oid) in types.iter().enumerate() {
        let Some(ty) = Type::from_oid(*oid) else {
            continue;
        };
        out.insert(format!("${}", k + 1), ty.clone());
        // With OUT/INOUT/VARIADIC modes the names do not pair with the
        // input types one to one.
        if let Some(n) = names.get(k).filter(|n| plain && !n.is_empty()) {
            out.insert(n.to_lowercase(), ty);
        }
    }
    if params.iter().all(|p| out.contains_key(p)) {
        out
    } else {
        std::collections::BTreeMap::new()
    }
}

/// A declared type resolved on the server: its oid, and how a cast
/// names it (the type as declared, or `format_type` of a `%TYPE`'s
/// column, typmod included).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declared {
    pub oid: u32,
    pub sql: String,
}

/// A type as a routine declares it (`smallint`, `varchar(3)`, `mood`,
/// `acct.bal%TYPE`), resolved on `c`'s search_path (the scratch schema,
/// where the DDL's tables and types are). `None` when PostgreSQL does not
/// know it, for `%ROWTYPE` (a record), and for a name it cannot parse
/// (`c` is the admin connection: an error there aborts nothing).
pub fn resolve_type(c: &mut Client, written: &str) -> Option<Declared> {
    let w = written.trim();
    let lower = w.to_ascii_lowercase();
    if let Some(col) = lower.strip_suffix("%type") {
        // `[schema.]table.column%TYPE`: the column's type and typmod.
        let (table, column) = w[..col.len()].rsplit_once('.')?;
        let column = match column.trim().strip_prefix('"') {
            Some(q) => q.strip_suffix('"')?.replace("\"\"", "\""),
            None => column.trim().to_lowercase(),
        };
        let sql = "SELECT a.atttypid, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a \
                   WHERE a.attrelid = to_regclass($1) AND a.attname = $2 AND NOT a.attisdropped";
        let row = c.query_opt(sql, &[&table.trim(), &column]).ok()??;
        return Some(Declared {
            oid: row.try_get(0).ok()?,
            sql: row.try_get(1).ok()?,
        });
    }
    if lower.contains('%') {
        return None;
    }
    // A composite (`v pair`) is a record to the executor (one variable
    // per field), a pseudo-type no value's: neither is converted.
    let sql = "SELECT t.oid FROM pg_type t WHERE t.oid = to_regtype($1) AND t.typtype IN ('b', 'd', 'e', 'r', 'm')";
    let row = c.query_opt(sql, &[&w]).ok()??;
    let oid: u32 = row.try_get(0).ok()?;
    Some(Declared {
        oid,
        sql: w.to_string(),
    })
}

/// The declared types of the parameters of the routine a program runs,
/// from its `CREATE` statement as the front-end read it
/// (`ProgramRoutine`, not the program's name: an overload's name is its
/// signature, a quoted name may hold `#`), by `$k` and by name, resolved
/// on the server ([`resolve_type`]). PostgreSQL's own call converts its
/// arguments to these types, so replay's made-up values take them. Only
/// types the client library knows by oid: an enum or a domain is left
/// to PostgreSQL's inference (which gives its labels and base type).
pub fn routine_types(
    c: &mut Client,
    r: &ProgramRoutine,
) -> std::collections::BTreeMap<String, Type> {
    let mut out = std::collections::BTreeMap::new();
    for (k, p) in r.params.iter().enumerate() {
        let Some(ty) = resolve_type(c, &p.ty).and_then(|d| Type::from_oid(d.oid)) else {
            continue;
        };
        out.insert(format!("${}", k + 1), ty.clone());
        if let Some(n) = &p.name {
            out.insert(n.clone(), ty);
        }
    }
    out
}

/// The routine's DECLAREd scalar variables with their types resolved
/// ([`resolve_type`]): what the executor converts every value assigned
/// to one into, as PL/pgSQL does. A variable whose type does not resolve
/// is left out (its values keep their own types, `retypings` guesses
/// for an untyped one).
pub fn variable_types(
    c: &mut Client,
    r: &ProgramRoutine,
) -> std::collections::BTreeMap<String, Declared> {
    r.variables
        .iter()
        .filter_map(|(v, t)| Some((v.clone(), resolve_type(c, t)?)))
        .collect()
}

/// A NULL of `ty` (untyped when there is none).
pub fn null_of(ty: Option<&Type>) -> Val {
    Val {
        text: None,
        oid: ty.map_or(0, Type::oid),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retypings_keep_typed_values_and_try_nulls_last() {
        let p = vec![Val::null(), Val::untyped("6"), Val::typed("x", &Type::INT4)];
        let r = retypings(&p);
        assert_eq!(r.len(), 3);
        assert_eq!(r[0][0].oid, 0);
        assert_eq!(r[0][1].oid, Type::NUMERIC.oid());
        assert_eq!(r[1][0].oid, Type::NUMERIC.oid());
        assert_eq!(r[2][0].oid, Type::TEXT.oid());
        assert!(r.iter().all(|a| a[2] == p[2]));
        assert!(retypings(&[Val::typed("1", &Type::INT4)]).is_empty());
        // Only a NULL: nothing to guess but the NULL.
        assert_eq!(retypings(&[Val::null()]).len(), 2);
        assert_eq!(retypings(&[Val::untyped("a")]).len(), 1);
    }
}
