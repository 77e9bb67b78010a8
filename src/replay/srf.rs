//! A set-returning routine called in FROM (issue 23), replayed as
//! PostgreSQL runs it: the routine's body first (its statements are
//! steps of their own, as the front-end inlines it), its `RETURN QUERY`
//! rows kept, then the calling statement reading exactly those rows.
//!
//! The front-end writes the call `FROM f(a, b)` as `FROM unnest(:__callN,
//! a, b) AS f` (the arguments stay for the analysis: columns they name
//! are read), which PostgreSQL cannot run (`:__callN` has no type:
//! `unnest(unknown)` is ambiguous, 42725). The executor replaces that
//! FROM item with `(SELECT * FROM (VALUES (…), …) AS r(c1, …) LIMIT n) AS
//! f`, one row per returned row, each value a parameter typed as the
//! column it came from. PostgreSQL's own function scan also materialises
//! a PL/pgSQL routine's rows before the calling statement reads them, so
//! the calling statement observes what it would observe there.
//!
//! Limits (said, not guessed): the columns are named as the `RETURN
//! QUERY` returns them (PostgreSQL names them by the declared row type,
//! the same for `RETURNING *` of that table or a `SELECT *` of it);
//! rows made by `RETURN NEXT` are not collected, and a call whose rows
//! came so stops the program with a message saying so.

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use sqlparser::ast::{TableFactor, VisitMut, VisitorMut};

use super::value::Val;

/// The rows one call of a routine returned (`RETURN QUERY`).
#[derive(Debug, Clone, Default)]
pub struct Returned {
    /// Column names and type oids, as the `RETURN QUERY` gave them.
    pub columns: Vec<(String, u32)>,
    pub rows: Vec<Vec<Val>>,
    /// A `RETURN NEXT` ran: the rows are incomplete.
    pub next: bool,
    /// One row of a scalar routine's value: its column takes the FROM
    /// item's name (`FROM f(1) AS x` reads column x).
    pub scalar: bool,
}

impl Returned {
    /// The one row a scalar routine called in FROM gives (PostgreSQL
    /// names its column after the FROM item's alias, which the
    /// front-end always writes: `AS f` when none is): its value. Rows a
    /// `RETURN QUERY` returned win (a set-returning routine).
    pub fn scalar(label: &str, v: &Val, rows: Option<Returned>) -> Returned {
        match rows {
            Some(r) if !r.columns.is_empty() || r.next => r,
            _ => Returned {
                columns: vec![(label.trim_end_matches("()").to_string(), v.oid)],
                rows: vec![vec![v.clone()]],
                next: false,
                scalar: true,
            },
        }
    }

    /// Adds what one `RETURN QUERY` returned (its columns: names and
    /// oids, also when it returned no row).
    pub fn add(&mut self, columns: Vec<(String, u32)>, rows: Vec<Vec<Val>>) {
        if self.columns.is_empty() {
            self.columns = columns;
        }
        self.rows.extend(rows);
    }
}

/// The label of the block a call of `call` (its text, `s.f(a, b)`) is
/// inlined in: the routine's name without schema, as the front-end's
/// `inline_one` labels it (`f()`).
pub fn call_label(call: &str) -> String {
    let head = call.split('(').next().unwrap_or("");
    let name = head.rsplit('.').next().unwrap_or("").trim();
    let name = match name.strip_prefix('"').and_then(|n| n.strip_suffix('"')) {
        Some(quoted) => quoted.replace("\"\"", "\""),
        None => name.to_lowercase(),
    };
    format!("{name}()")
}

/// Is `var` (lower case, without `:`) the result variable of an inlined
/// call (`__callN`, `f.__callN` inside an inlined routine)?
pub fn is_call_result(var: &str) -> bool {
    var.rsplit('.')
        .next()
        .and_then(|v| v.strip_prefix("__call"))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Replaces in `node` every FROM item `unnest(:v, …)` whose `:v` holds a
/// routine's rows (`results`) by those rows; their values become the
/// variables `__srf_<n>` (added to `vars`, bound as any parameter). The
/// error says what cannot be run (the executor's `Halt::Unsupported`).
pub fn substitute<T: VisitMut>(
    node: &mut T,
    results: &BTreeMap<String, Returned>,
    vars: &mut BTreeMap<String, Val>,
    counter: &mut usize,
) -> Result<(), String> {
    let mut v = Substitute {
        results,
        vars,
        counter,
        error: None,
    };
    let _ = node.visit(&mut v);
    match v.error {
        Some(h) => Err(h),
        None => Ok(()),
    }
}

struct Substitute<'a> {
    results: &'a BTreeMap<String, Returned>,
    vars: &'a mut BTreeMap<String, Val>,
    counter: &'a mut usize,
    error: Option<String>,
}

impl VisitorMut for Substitute<'_> {
    type Break = ();

    fn pre_visit_table_factor(&mut self, tf: &mut TableFactor) -> ControlFlow<()> {
        let TableFactor::UNNEST {
            alias, array_exprs, ..
        } = tf
        else {
            return ControlFlow::Continue(());
        };
        let Some(var) = array_exprs.first().and_then(placeholder) else {
            return ControlFlow::Continue(());
        };
        if !is_call_result(&var) {
            return ControlFlow::Continue(());
        }
        let Some(ret) = self.results.get(&var) else {
            self.error = Some(format!(
                "the rows of the routine called in FROM (`:{var}`) are not known when the statement runs (a VOLATILE routine beside tables in FROM runs per row, after the statement's snapshot: the replay does not run that)"
            ));
            return ControlFlow::Break(());
        };
        if ret.next {
            self.error = Some(
                "a set-returning routine called in FROM returned rows by RETURN NEXT, which the replay does not collect (RETURN QUERY it does)".into(),
            );
            return ControlFlow::Break(());
        }
        let named;
        let ret = match alias.as_ref() {
            Some(a) if ret.scalar => {
                let mut r = ret.clone();
                if let Some(c) = r.columns.first_mut() {
                    c.0.clone_from(&a.name.value);
                }
                named = r;
                &named
            }
            _ => ret,
        };
        match self.rows_query(ret) {
            Ok(subquery) => {
                *tf = TableFactor::Derived {
                    lateral: false,
                    subquery: Box::new(subquery),
                    alias: alias.take(),
                    sample: None,
                };
                ControlFlow::Continue(())
            }
            Err(h) => {
                self.error = Some(h);
                ControlFlow::Break(())
            }
        }
    }
}

impl Substitute<'_> {
    /// `SELECT * FROM (VALUES (:__srf_1, …), …) AS r("c1", …) LIMIT n`,
    /// with one row of typed NULLs when none was returned (LIMIT 0), so
    /// the columns keep their types; `SELECT 1 WHERE false` when no
    /// `RETURN QUERY` ran (no columns known: the call returned no row).
    fn rows_query(&mut self, ret: &Returned) -> Result<sqlparser::ast::Query, String> {
        let text = if ret.columns.is_empty() {
            "SELECT 1 WHERE false".to_string()
        } else {
            let nulls: Vec<Vec<Val>>;
            let rows = if ret.rows.is_empty() {
                nulls = vec![ret
                    .columns
                    .iter()
                    .map(|&(_, oid)| Val { text: None, oid })
                    .collect()];
                &nulls
            } else {
                &ret.rows
            };
            let mut values = vec![];
            for row in rows {
                let mut cells = vec![];
                for v in row {
                    *self.counter += 1;
                    let name = format!("__srf_{}", self.counter);
                    self.vars.insert(name.clone(), v.clone());
                    cells.push(format!(":{name}"));
                }
                values.push(format!("({})", cells.join(", ")));
            }
            let names: Vec<String> = ret
                .columns
                .iter()
                .map(|(n, _)| format!("\"{}\"", n.replace('"', "\"\"")))
                .collect();
            format!(
                "SELECT * FROM (VALUES {}) AS __rows({}) LIMIT {}",
                values.join(", "),
                names.join(", "),
                ret.rows.len()
            )
        };
        let parsed =
            sqlparser::parser::Parser::parse_sql(&sqlparser::dialect::PostgreSqlDialect {}, &text)
                .map_err(|e| format!("the rows of a set-returning routine: {e}"))?;
        match parsed.into_iter().next() {
            Some(sqlparser::ast::Statement::Query(q)) => Ok(*q),
            _ => Err("the rows of a set-returning routine: not a query".into()),
        }
    }
}

/// `:name` → `name` (lower case).
fn placeholder(e: &sqlparser::ast::Expr) -> Option<String> {
    match e {
        sqlparser::ast::Expr::Value(v) => match &v.value {
            sqlparser::ast::Value::Placeholder(p) => Some(p.trim_start_matches(':').to_lowercase()),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_result_variables() {
        assert_eq!(
            call_label("graphile_worker.add_jobs(ARRAY[1], true)"),
            "add_jobs()"
        );
        assert_eq!(call_label("Take (p_id, p_n)"), "take()");
        assert_eq!(call_label("s.\"Odd\"(1)"), "Odd()");
        assert!(is_call_result("__call1"));
        assert!(is_call_result("order_item.__call12"));
        assert!(!is_call_result("__caller"));
        assert!(!is_call_result("v"));
    }
}
