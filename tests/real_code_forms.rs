//! Forms of real PL/pgSQL code (HammerDB's TPC-C, issue 22) that
//! PostgreSQL 15 runs as written: names that are never variables, INTO
//! after FROM. Each expectation was checked on PostgreSQL 15 (default
//! `plpgsql.variable_conflict = error`) with the same routine over
//! `t(k int PRIMARY KEY, a int, b int)`; the server's outcome is noted at
//! each case.

use std::path::Path;

use isolint::model::btp::Workload;

const SCHEMA: &str = "CREATE TABLE t (k int PRIMARY KEY, a int, b int);
CREATE TABLE u (k int PRIMARY KEY, c int);\n";

fn load(routines: &str) -> Result<Workload, String> {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("schema.sql"), SCHEMA).expect("write");
    std::fs::write(dir.path().join("r.sql"), routines).expect("write");
    std::fs::write(dir.path().join("isolint.yaml"), "schema: schema.sql\n").expect("write");
    isolint::frontend::load(Path::new(dir.path()), None)
        .map(|l| l.workload)
        .map_err(|e| match e.message.split_once("r.sql:") {
            Some((_, rest)) => rest.to_string(),
            None => e.message.clone(),
        })
}

/// `f(k int, a int)` with locals r, x, b and `body` between BEGIN and END.
fn routine(body: &str) -> String {
    format!(
        "CREATE FUNCTION f(k int, a int) RETURNS int LANGUAGE plpgsql AS $$\n\
         DECLARE r int; x int := 1; b int;\nBEGIN\n{body}\n  RETURN r;\nEND $$;\n"
    )
}

/// (type, relation, read set, write set) of each statement.
fn stmts(w: &Workload) -> Vec<String> {
    let set = |rel: usize, s: &Option<isolint::model::schema::AttrSet>| match s {
        None => "-".to_string(),
        Some(a) => w.schema.rel(rel).names(a).join(",").to_lowercase(),
    };
    w.programs[0]
        .statements
        .iter()
        .map(|s| {
            format!(
                "{} {} R{{{}}} W{{{}}}",
                s.ty.name(),
                w.schema.rel(s.rel).name.to_lowercase(),
                set(s.rel, &s.read),
                set(s.rel, &s.write)
            )
        })
        .collect()
}

fn loads(body: &str) -> Vec<String> {
    stmts(&load(&routine(body)).unwrap_or_else(|e| panic!("must load: {e}")))
}

fn conflict(body: &str) -> String {
    let e = load(&routine(body)).expect_err("PostgreSQL rejects it");
    assert!(
        e.contains("is both a variable of f and a column of t"),
        "{e}"
    );
    e
}

// PostgreSQL: `INSERT INTO t (k, a) VALUES (f.k, 1)` in f(k, a) runs.
#[test]
fn insert_column_list_names_are_never_variables() {
    let s = loads(
        "  INSERT INTO t (k, a) VALUES (f.k, 1);\n  INSERT INTO t AS z (k, a) VALUES (2, 3);",
    );
    assert_eq!(s, ["ins t R{-} W{k,a,b}", "ins t R{-} W{k,a,b}"]);
}

// PostgreSQL: the target table is not in scope of VALUES or of the
// INSERT's SELECT: `VALUES (5, a)` and `SELECT 6, a` use the variable a
// (both ran; the rows got a = 3).
#[test]
fn insert_values_and_select_do_not_see_the_target_columns() {
    let s = loads("  INSERT INTO t (k, b) VALUES (5, a);\n  INSERT INTO t (k, b) SELECT 6, a;");
    assert_eq!(s.len(), 2, "{s:?}");
}

// PostgreSQL: `UPDATE t SET a = x …` and `SET (a, b) = (x, x)` in f(k, a)
// run; the SET targets are columns.
#[test]
fn set_targets_are_never_variables() {
    let s = loads(
        "  UPDATE t SET a = x WHERE t.k = x;\n  UPDATE t SET b = 2, a = x WHERE t.k = x;\n  UPDATE t SET (a, b) = (x, x) WHERE t.k = x;",
    );
    // PostgreSQL: `ON CONFLICT ON CONSTRAINT t_pkey DO UPDATE SET a = 3`
    // in f(k, a) runs.
    let u = loads(
        "  INSERT INTO t (k) VALUES (1) ON CONFLICT ON CONSTRAINT t_pkey DO UPDATE SET a = 3;",
    );
    assert!(!u.is_empty());
    assert_eq!(
        s,
        [
            "key upd t R{} W{a}",
            "key upd t R{} W{a,b}",
            "key upd t R{} W{a,b}"
        ]
    );
}

// PostgreSQL: `FROM t AS s(k, a)` in f(k, a) runs (the names in the alias
// list are no variables). isolint does not model renaming by position, so
// it refuses the column list — but not with the variable conflict.
#[test]
fn alias_column_lists_are_never_variables() {
    for body in [
        "  SELECT s.a INTO r FROM t AS s(k, a) WHERE s.k = 1;",
        "  SELECT s.a INTO r FROM t s(k, a) WHERE s.k = 1;",
    ] {
        let e = load(&routine(body)).expect_err("alias column lists are refused");
        assert!(e.contains("column list of alias `s`"), "{e}");
    }
    // A CTE's column list: PostgreSQL runs it; isolint refuses to read the
    // renamed CTE by name, not for a conflict.
    let e = load(&routine(
        "  WITH c(a) AS (SELECT t.a FROM t WHERE t.k = 2) SELECT c.a INTO r FROM c;",
    ))
    .expect_err("a CTE with a column list is read through its table only");
    assert!(!e.contains("both a variable"), "{e}");
}

// Renaming by position must not be read as t's own columns: `s.b` is t.k
// here (PostgreSQL: `SELECT s.k FROM t AS s(b, k) WHERE s.b = 1` reads t.a
// of the row with key 1); modelling it as a predicate read of b would be
// the wrong statement.
#[test]
fn alias_column_list_is_refused_not_misread() {
    let e = load(&routine(
        "  SELECT s.k INTO r FROM t AS s(b, k) WHERE s.b = 1;",
    ))
    .expect_err("renamed columns are refused");
    assert!(
        e.starts_with("4:33:") && e.contains("renamed by position"),
        "{e}"
    );
}

// Controls: where PostgreSQL 15 raises "column reference … is ambiguous",
// isolint still reports the conflict.
#[test]
fn conflicts_stay_where_postgresql_reports_them() {
    // WHERE a = 1: "column reference "a" is ambiguous".
    conflict("  SELECT t.k INTO r FROM t WHERE a = 1;");
    // UPDATE t SET b = a: ambiguous (the SET expression sees t).
    conflict("  UPDATE t SET b = a WHERE t.k = 1;");
    // INSERT … RETURNING a: ambiguous (RETURNING sees the target).
    conflict("  INSERT INTO t (k, b) VALUES (9, 1) RETURNING a INTO r;");
    // ON CONFLICT (k) with a variable k: ambiguous on PostgreSQL 15 (the
    // arbiter's index expression is resolved with the variables in scope).
    conflict("  INSERT INTO t AS z (k, a) VALUES (1, 2) ON CONFLICT (k) DO NOTHING;");
    // ON CONFLICT … DO UPDATE SET a = b with a variable b: ambiguous.
    conflict(
        "  INSERT INTO t (k) VALUES (1) ON CONFLICT ON CONSTRAINT t_pkey DO UPDATE SET a = b;",
    );
    // INSERT … SELECT … FROM t WHERE a: t is in scope of its own SELECT.
    conflict("  INSERT INTO t (k, b) SELECT t.k + 1, 0 FROM t WHERE a = 1;");
}

// PL/pgSQL takes the first INTO not after INSERT/MERGE wherever it stands
// (pl_gram.y, make_execsql_stmt). PostgreSQL 15 ran each of these with
// t(1, 3, …) and returned 3.
#[test]
fn into_after_from_where_or_with() {
    for body in [
        "  SELECT t.a FROM t WHERE t.k = x INTO r;",
        "  SELECT t.a FROM t INTO r WHERE t.k = x;",
        "  SELECT t.a FROM t INTO STRICT r WHERE t.k = x;",
    ] {
        let s = loads(body);
        assert_eq!(s, ["key sel t R{a} W{-}"], "{body}");
    }
    // Through a CTE: one read of t that includes a (the CTE's own
    // modelling decides key or predicate read).
    let s = loads("  WITH c AS (SELECT t.a, t.k FROM t WHERE t.k = x) SELECT c.a FROM c INTO r;");
    assert!(
        s.len() == 1 && s[0].contains("sel t R{") && s[0].contains('a'),
        "{s:?}"
    );
    // WITH … INSERT INTO: the INTO of INSERT is no target (PostgreSQL ran
    // it and inserted the row).
    let s = loads(
        "  WITH c AS (SELECT t.a FROM t WHERE t.k = x) INSERT INTO u (k, c) SELECT 7, c.a FROM c;",
    );
    assert!(s.iter().any(|s| s.starts_with("ins u")), "{s:?}");
}

// PostgreSQL: "INTO specified more than once". isolint rejects it too, and
// its message shows the variable as written, never its internal `:v`.
#[test]
fn second_into_is_an_error_shown_as_written() {
    let e = load(&routine("  SELECT t.a FROM t INTO r WHERE t.k = x INTO x;"))
        .expect_err("PostgreSQL rejects a second INTO");
    assert!(!e.contains("`:") && !e.contains(": :"), "{e}");
    let e =
        load(&routine("  SELECT t.a INTO r x FROM t WHERE t.k = x;")).expect_err("a syntax error");
    assert!(e.contains("unexpected `x`"), "{e}");
    let e = load(&routine("  SELECT t.a FROM t WHERE t.k = x r;")).expect_err("a syntax error");
    assert!(!e.contains(": :") && !e.contains("`:"), "{e}");
}

fn procedure(body: &str) -> String {
    format!(
        "CREATE PROCEDURE pr(p int) LANGUAGE plpgsql AS $$\n\
         DECLARE r int;\nBEGIN\n{body}\nEND $$;\n"
    )
}

// PostgreSQL 15 ran `CALL pr(0)` of
//   BEGIN UPDATE t SET b = 99 WHERE k = 1; r := 1 / p;
//   EXCEPTION WHEN division_by_zero THEN ROLLBACK; END
// without error (the handler's ROLLBACK is allowed: the block's
// subtransaction is already gone); the UPDATE was rolled back. The path
// through the handler aborts; the normal path is the UPDATE.
#[test]
fn rollback_ending_the_outermost_handler_aborts_that_path() {
    let w = load(&procedure(
        "  UPDATE t SET b = 99 WHERE t.k = p;\n  r := 1 / p;\nEXCEPTION WHEN division_by_zero THEN ROLLBACK;",
    ))
    .unwrap_or_else(|e| panic!("PostgreSQL runs it: {e}"));
    assert_eq!(stmts(&w), ["key upd t R{} W{b}"]);
}

// PostgreSQL 15, with the same handler inside a block whose enclosing
// block has `EXCEPTION WHEN others`: the ROLLBACK raised "cannot roll back
// while a subtransaction is active" (caught by the outer handler). And a
// handler ROLLBACK after which the procedure goes on (a new transaction)
// is not modelled. Both: a located error.
#[test]
fn rollback_elsewhere_in_a_handler_is_a_located_error() {
    let e = load(&procedure(
        "  UPDATE t SET b = 1 WHERE t.k = p;\n  BEGIN\n    r := 1 / p;\n  EXCEPTION WHEN division_by_zero THEN ROLLBACK;\n  END;\nEXCEPTION WHEN others THEN NULL;",
    ))
    .expect_err("not modelled");
    assert!(
        e.starts_with("7:40:") && e.contains("other than as the last statement"),
        "{e}"
    );
    let e = load(&procedure(
        "  UPDATE t SET b = 1 WHERE t.k = p;\nEXCEPTION WHEN division_by_zero THEN ROLLBACK; UPDATE t SET b = 2 WHERE t.k = p;",
    ))
    .expect_err("not modelled");
    assert!(e.starts_with("5:38:"), "{e}");
}
