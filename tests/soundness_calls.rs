//! Calls of PL/pgSQL routines of the workload inside a statement of
//! another routine (`UPDATE t SET a = g(t.b) …`, `SELECT g(t.b) INTO v
//! FROM t …`, `WHERE g(b) > 0`, RETURNING, CASE): the call is inlined
//! before (or, VOLATILE, inside) the statement, and its arguments are
//! evaluated by the statement per row, so the columns they name are
//! reads of the statement (docs/sql-frontend.md, "Calls inside
//! statements"). Before this file, the call was cut out of the statement
//! with its arguments and those reads were lost: isolint said ROBUST of
//! the two workloads below, which PostgreSQL 15 shows not serializable.
//!
//! "Confirmed on PostgreSQL 15": the schedule in the comment was run on
//! PostgreSQL 15 at READ COMMITTED with two psql sessions, t = {(1, 0, 0),
//! (2, 0, 0)}, g(x) = x + 1 (PL/pgSQL), and the outcome compared with both
//! serial orders. Each not-robust case has a one-line robust control.

#[path = "common/workdir.rs"]
mod workdir;

use isolint::analysis::analyze;
use isolint::analysis::graph::Settings;
use isolint::analysis::robustness::Method;

/// t(id PK, a, b).
const SCHEMA: &str = "CREATE TABLE t (id INT PRIMARY KEY, a INT, b INT);
CREATE FUNCTION s(x INT) RETURNS INT LANGUAGE sql IMMUTABLE AS $$ SELECT x + 1 $$;
";

fn load_with(
    schema: &str,
    manifest: &str,
    files: &[(&str, &str)],
) -> Result<isolint::frontend::Loaded, String> {
    workdir::load_text(schema, manifest, files)
}

/// Every program's statements, each prefixed by its program's name.
fn shape_of(l: &isolint::frontend::Loaded) -> Vec<String> {
    let programs = &l.workload.programs;
    (0..programs.len())
        .flat_map(|p| {
            workdir::stmt_shapes_marked(l, p, "⊥")
                .into_iter()
                .map(move |s| format!("{}: {s}", programs[p].name))
        })
        .collect()
}

fn routines(manifest: &str, text: &str) -> Result<isolint::frontend::Loaded, String> {
    load_with(SCHEMA, manifest, &[("r.sql", text)])
}

fn robust(manifest: &str, text: &str) -> bool {
    match routines(manifest, text) {
        Ok(l) => analyze(&l.workload, Settings::default(), Method::TypeII, false).robust,
        Err(e) => panic!("expected a verdict, got: {e}"),
    }
}

fn shape(manifest: &str, text: &str) -> Vec<String> {
    match routines(manifest, text) {
        Ok(l) => shape_of(&l),
        Err(e) => panic!("expected it to load, got: {e}"),
    }
}

const G: &str =
    "CREATE FUNCTION g(x int) RETURNS int LANGUAGE plpgsql AS $$ BEGIN RETURN x + 1; END $$;\n";

/// A routine f with one local `v` whose body is `body`, after g.
fn f(body: &str) -> String {
    format!("{G}CREATE FUNCTION f(k int) RETURNS int LANGUAGE plpgsql AS $$ DECLARE v int; BEGIN {body} RETURN v; END $$;\n")
}

/// The transfer of b between two rows that both workloads run beside.
const MOVE_B: &str = "CREATE FUNCTION mv(x int, y int) RETURNS void LANGUAGE plpgsql AS $$ BEGIN
  UPDATE t SET b = b - 1 WHERE id = x;
  UPDATE t SET b = b + 1 WHERE id = y; END $$;\n";

/// P1 reads b of row x, then `UPDATE t SET a = g(t.b) + v WHERE id = y`
/// reads b of row y through g's argument: a read skew with mv.
/// Confirmed on PostgreSQL 15: S1 BEGIN; S1 SELECT b FROM t WHERE id = 1
/// → 0; S2 BEGIN; S2 UPDATE t SET b = b - 1 WHERE id = 1; S2 UPDATE t SET
/// b = b + 1 WHERE id = 2; S2 COMMIT; S1 UPDATE t SET a = g(t.b) + 0
/// WHERE id = 2; S1 COMMIT → row 2 has a = 2; both serial orders give
/// a = 1. Control: the first read is of `id`, which mv does not write (run
/// the same way: a = g(1) + 1 = 3, the result of mv before p1); the
/// UPDATE's read of b is ordered with mv by the row lock of row y. (A
/// control that drops the read of b from the UPDATE is not robust: p1's
/// write of row y after mv's, with its read of b_x before mv's, is a
/// cycle for isolint's tuple-level ww conflict.)
#[test]
fn call_argument_in_update_set_is_read() {
    let p1 = |first: &str| {
        format!("{G}{MOVE_B}CREATE FUNCTION p1(x int, y int) RETURNS void LANGUAGE plpgsql AS $$ DECLARE v int; BEGIN
  SELECT {first} INTO v FROM t WHERE id = x;
  UPDATE t SET a = g(t.b) + v WHERE id = y; END $$;\n")
    };
    let m = "programs: [p1, mv]\n";
    assert!(!robust(m, &p1("b")));
    assert!(robust(m, &p1("id")));
}

/// Two `SELECT g(t.b) INTO …` of rows x and y beside mv: a read skew.
/// Confirmed on PostgreSQL 15: S1 BEGIN; S1 SELECT g(t.b) FROM t WHERE id
/// = 1 → 1; S2 BEGIN; S2 UPDATE … b - 1 WHERE id = 1; S2 UPDATE … b + 1
/// WHERE id = 2; S2 COMMIT; S1 SELECT g(t.b) FROM t WHERE id = 2 → 2; S1
/// COMMIT: S1 saw 1 and 2; serially it sees 1, 1 (before mv) or 0, 2
/// (after). Control: the second read is of a (mv writes only b).
#[test]
fn call_argument_in_select_into_is_read() {
    let p1 = |second: &str| {
        format!("{G}{MOVE_B}CREATE FUNCTION p1(x int, y int) RETURNS int LANGUAGE plpgsql AS $$ DECLARE v int; w int; BEGIN
  SELECT g(t.b) INTO v FROM t WHERE id = x;
  SELECT g(t.{second}) INTO w FROM t WHERE id = y; RETURN v + w; END $$;\n")
    };
    let m = "programs: [p1, mv]\n";
    assert!(!robust(m, &p1("b")));
    assert!(robust(m, &p1("a")));
}

/// Every position of a call in a statement keeps its argument's columns
/// as reads of that statement (expected by the rule: the statement reads
/// what its expressions name; g itself reads no table). The key-based
/// read `WHERE id = k` becomes a predicate read only where the condition
/// itself names b.
#[test]
fn call_arguments_are_read_in_every_position() {
    let m = "programs: [f]\n";
    // WHERE: the predicate is over b.
    assert_eq!(
        shape(m, &f("SELECT a INTO v FROM t WHERE g(b) = k;")),
        ["f: pred sel t P{b} R{a} W⊥"]
    );
    // RETURNING: b of the updated row is read by the UPDATE (after the
    // snapshot scan of its target, as g is VOLATILE).
    assert!(shape(
        m,
        &f("UPDATE t SET a = 1 WHERE id = k RETURNING g(b) INTO v;")
    )
    .contains(&"f: key upd t P⊥ R{b} W{a}".to_string()));
    // CASE condition.
    assert_eq!(
        shape(
            m,
            &f("SELECT CASE WHEN g(b) > 0 THEN 1 ELSE 2 END INTO v FROM t WHERE id = k;")
        ),
        ["f: key sel t P⊥ R{b} W⊥"]
    );
    // A nested call: the inner call's argument is read too.
    assert_eq!(
        shape(m, &f("SELECT g(g(t.b)) INTO v FROM t WHERE id = k;")),
        ["f: key sel t P⊥ R{b} W⊥"]
    );
    // A LANGUAGE sql function (inlined by the lowering, not extracted).
    assert_eq!(
        shape(m, &f("SELECT s(t.b) INTO v FROM t WHERE id = k;")),
        ["f: key sel t P⊥ R{b} W⊥"]
    );
    // An argument that is a subquery: its read is kept.
    assert!(
        shape(m, &f("SELECT g((SELECT b FROM t WHERE id = 2)) INTO v;"))
            .contains(&"f: pred sel t P{id} R{b} W⊥".to_string())
    );
    // A variable as argument: the key-based read stays key-based, and
    // reads no column for the argument.
    assert_eq!(
        shape(m, &f("SELECT a INTO v FROM t WHERE id = g(k);")),
        ["f: key sel t P⊥ R{a} W⊥"]
    );
}

/// A nested workload call inside the arguments of a routine in FROM:
/// its arguments stay reads too (they were dropped with the outer ones).
#[test]
fn nested_call_in_from_arguments_is_read() {
    let text = format!("{G}CREATE FUNCTION h(k int) RETURNS SETOF t LANGUAGE plpgsql AS $$ BEGIN RETURN QUERY SELECT * FROM t WHERE id = k; END $$;
CREATE FUNCTION f(k int) RETURNS int LANGUAGE plpgsql AS $$ DECLARE v int; BEGIN
  SELECT count(*) INTO v FROM t, LATERAL h(g(t.b)) AS x WHERE t.a = k; RETURN v; END $$;\n");
    // t is scanned with its WHERE (a); h's argument g(t.b) names b, a
    // join column of t (P and R), as `LATERAL h(t.id)` in
    // tests/set_based.rs; then h's body, a keyed read of t.
    assert_eq!(
        shape("programs: [f]\n", &text),
        [
            "f: pred sel t P{a,b} R{b} W⊥",
            "f: key sel t P⊥ R{id,a,b} W⊥"
        ]
    );
}

// ---- Dynamic SQL from bound parameters (issue 22, item 5) ----

/// A queue table per queue name, `jobs_<queue>`.
const QUEUES: &str = "CREATE TABLE jobs_main (id INT PRIMARY KEY, a INT);
CREATE TABLE other (id INT PRIMARY KEY, a INT);
";

fn queue_routines(manifest: &str, text: &str) -> Result<isolint::frontend::Loaded, String> {
    load_with(QUEUES, manifest, &[("r.sql", text)])
}

/// A read of `a` through dynamic SQL on the queue table, then a write of
/// `a + 1` through dynamic SQL: a lost update once `q` is bound (the
/// statements are those of tests/soundness.rs's lost update). Confirmed
/// on PostgreSQL 15 with f('main', 1) run as its two statements: S1 BEGIN;
/// S1 SELECT a FROM jobs_main WHERE id = 1 → 0; S2 BEGIN; S2 the same → 0;
/// S2 UPDATE jobs_main SET a = 0 + 1 WHERE id = 1; S2 COMMIT; S1 the same
/// UPDATE; S1 COMMIT → a = 1; both serial orders give 2. Control: the read
/// is `FOR UPDATE` (S2's read waits for S1: a = 2).
fn bump(lock: &str) -> String {
    format!(
        "CREATE FUNCTION f(q text, k int) RETURNS void LANGUAGE plpgsql AS $$ DECLARE v int; BEGIN
  EXECUTE format('SELECT a FROM %I WHERE id = $1{lock}', 'jobs_' || q) INTO v USING k;
  EXECUTE 'UPDATE ' || quote_ident('jobs_' || q) || ' SET a = $2 WHERE id = $1' USING k, v + 1;
END $$;\n"
    )
}

#[test]
fn dynamic_sql_of_bound_parameters_is_analysed() {
    let m = "programs: [f]\nbind: { f.q: main }\n";
    let l = match queue_routines(m, &bump("")) {
        Ok(l) => l,
        Err(e) => panic!("expected it to load, got: {e}"),
    };
    assert_eq!(
        shape_of(&l),
        [
            "f: key sel jobs_main P⊥ R{a} W⊥",
            "f: key upd jobs_main P⊥ R{} W{a}"
        ]
    );
    assert!(!analyze(&l.workload, Settings::default(), Method::TypeII, false).robust);
    let l = match queue_routines(m, &bump(" FOR UPDATE")) {
        Ok(l) => l,
        Err(e) => panic!("expected it to load, got: {e}"),
    };
    assert!(analyze(&l.workload, Settings::default(), Method::TypeII, false).robust);
    // Bound to another queue: the other table (a name quote_ident keeps).
    let l = queue_routines(
        "programs: [f]\nbind: { f.q: main }\n",
        &bump("").replace("'jobs_' || q", "q"),
    );
    assert!(l.is_err(), "no table `main`");
}

/// Unbound, the computed string stays a located error whose hint names
/// the manifest key; a key naming no parameter is an error too.
#[test]
fn unbound_dynamic_sql_is_a_located_error_naming_bind() {
    let e = match queue_routines("programs: [f]\n", &bump("")) {
        Ok(_) => panic!("expected an error"),
        Err(e) => e,
    };
    assert!(
        e.contains("dynamic SQL") && e.contains("cannot be analysed"),
        "{e}"
    );
    assert!(e.contains("`bind: { f.param: value }`"), "{e}");
    let e = match queue_routines("programs: [f]\nbind: { f.queue: main }\n", &bump("")) {
        Ok(_) => panic!("expected an error"),
        Err(e) => e,
    };
    assert!(e.contains("binds `f.queue`"), "{e}");
}

/// Dynamic SQL in a routine no program calls does not stop the run (it
/// is compiled by PostgreSQL only when it runs); called by a program, it
/// is the located error again.
#[test]
fn unreached_dynamic_sql_does_not_stop_the_run() {
    let helper = "CREATE FUNCTION h(q text) RETURNS void LANGUAGE plpgsql AS $$ BEGIN EXECUTE 'DELETE FROM ' || q; END $$;\n";
    let main = "CREATE FUNCTION g(k int) RETURNS void LANGUAGE plpgsql AS $$ BEGIN UPDATE other SET a = a + 1 WHERE id = k; END $$;\n";
    let l = match queue_routines("programs: [g]\n", &format!("{helper}{main}")) {
        Ok(l) => l,
        Err(e) => panic!("expected it to load, got: {e}"),
    };
    assert_eq!(shape_of(&l), ["g: key upd other P⊥ R{a} W{a}"]);
    let calls = main.replace("WHERE id = k;", "WHERE id = k; PERFORM h('other');");
    let e = match queue_routines("programs: [g]\n", &format!("{helper}{calls}")) {
        Ok(_) => panic!("expected an error"),
        Err(e) => e,
    };
    assert!(e.contains("dynamic SQL"), "{e}");
}

/// A string of literals only needs no binding; the statement isolint
/// keeps (and replay runs) is the text PostgreSQL executes.
#[test]
fn dynamic_sql_of_literals_is_the_statement_it_builds() {
    let f = "CREATE FUNCTION f(k int) RETURNS void LANGUAGE plpgsql AS $$ BEGIN
  EXECUTE format('UPDATE %I SET a = a + 1 WHERE id = $1', 'jobs_' || 'main') USING k; END $$;\n";
    let l = match queue_routines("programs: [f]\n", f) {
        Ok(l) => l,
        Err(e) => panic!("expected it to load, got: {e}"),
    };
    assert_eq!(shape_of(&l), ["f: key upd jobs_main P⊥ R{a} W{a}"]);
    let sql = l.workload.programs[0].statements[0]
        .sql
        .clone()
        .unwrap_or_default();
    assert!(
        sql.starts_with("UPDATE jobs_main SET a = a + 1 WHERE id = "),
        "{sql}"
    );
}

// ---- Shadowing in nested blocks ----

/// An inner block may declare a name an outer block (or the parameter
/// list) declares: a different variable within the inner block
/// (PostgreSQL 15: `DECLARE x int := 1; … BEGIN DECLARE x int := 2;
/// BEGIN x := x + 10; r := x; END; RETURN r || ',' || x;` returns
/// `12,1`; a DECLARE of a parameter's name in the outermost block is
/// allowed too). A name declared twice in one block is PostgreSQL's
/// "duplicate declaration" error.
#[test]
fn inner_declaration_shadows_the_outer_variable() {
    let f = "CREATE FUNCTION f(k int) RETURNS int LANGUAGE plpgsql AS $$ DECLARE x int := k; BEGIN
  DECLARE x int := 2; BEGIN UPDATE t SET a = x WHERE id = x; END;
  UPDATE t SET b = x WHERE id = x; RETURN x; END $$;\n";
    let l = match routines("programs: [f]\n", f) {
        Ok(l) => l,
        Err(e) => panic!("expected it to load, got: {e}"),
    };
    // Same variable, unassigned between: the two UPDATEs are of one row
    // (a constraint between them). The inner x is another variable: none.
    let p = &l.workload.programs[0];
    let cs: Vec<String> = p
        .constraints
        .iter()
        .map(|c| l.workload.constraint_text(p, c))
        .collect();
    assert!(cs.is_empty(), "{cs:?}");
    let same = f.replace("DECLARE x int := 2; BEGIN", "BEGIN");
    let l = match routines("programs: [f]\n", &same) {
        Ok(l) => l,
        Err(e) => panic!("expected it to load, got: {e}"),
    };
    assert!(!l.workload.programs[0].constraints.is_empty());
    // A parameter's name declared in the outermost block: loads.
    let p = "CREATE FUNCTION f(k int) RETURNS int LANGUAGE plpgsql AS $$ DECLARE k int := 1; BEGIN UPDATE t SET a = 1 WHERE id = k; RETURN k; END $$;\n";
    assert!(routines("programs: [f]\n", p).is_ok());
    // Twice in one block: rejected, as PostgreSQL does.
    let twice = "CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $$ DECLARE x int := 1; x int := 2; BEGIN RETURN x; END $$;\n";
    match routines("programs: [f]\n", twice) {
        Ok(_) => panic!("expected an error"),
        Err(e) => assert!(e.contains("duplicate declaration of `x`"), "{e}"),
    }
}

/// `outer.x` inside an inner block that redeclares `x` is the outer
/// block's x in PostgreSQL. isolint used to refuse it (the name's alias
/// pointed at the inner x); block labels are tracked now
/// (tests/real_code_bench.rs), so it is the outer x = k: the UPDATE keyed
/// by it and the later one keyed by the (outer) x touch the same row.
/// Control: the same qualified name without the inner declaration.
#[test]
fn block_qualified_name_under_shadowing_is_the_labelled_blocks() {
    let f = "CREATE FUNCTION f(k int) RETURNS int LANGUAGE plpgsql AS $$ <<outer>> DECLARE x int := k; BEGIN
  DECLARE x int := 2; BEGIN UPDATE t SET a = 1 WHERE id = outer.x; END;
  UPDATE t SET b = 1 WHERE id = x; RETURN x; END $$;\n";
    let l = match routines("programs: [f]\n", f) {
        Ok(l) => l,
        Err(e) => panic!("expected it to load, got: {e}"),
    };
    assert!(!l.workload.programs[0].constraints.is_empty());
    // The inner x (2) in its place: another row, no link.
    let inner = f.replace("id = outer.x", "id = x");
    let l = match routines("programs: [f]\n", &inner) {
        Ok(l) => l,
        Err(e) => panic!("expected it to load, got: {e}"),
    };
    assert!(l.workload.programs[0].constraints.is_empty());
    let plain = f.replace("DECLARE x int := 2; BEGIN", "BEGIN");
    let l = match routines("programs: [f]\n", &plain) {
        Ok(l) => l,
        Err(e) => panic!("expected it to load, got: {e}"),
    };
    assert!(!l.workload.programs[0].constraints.is_empty());
}
