//! Set-based SQL (issue 22, item 2, and UNION / INTERSECT / EXCEPT of item
//! 5): derived tables, LATERAL subqueries, `(VALUES …)`, UNNEST and other
//! set-returning functions, SQL functions of the workload returning SETOF
//! in FROM, nested joins, set operations — in SELECT, UPDATE … FROM,
//! DELETE … USING, INSERT … SELECT, CTEs and subqueries.
//!
//! The model (docs/sql-frontend.md, "Set-based FROM items"): such an item
//! reads no table itself; what it reads (a derived table's query, a
//! function's arguments, a workload function's body) is read by the
//! statement on its snapshot; its rows are values, so a table joined to
//! it (`t.id = x.i`) is predicate-based over its join columns.
//! Expected statements below are derived from that rule by hand (the
//! reasoning is next to each), not copied from isolint's output.
//!
//! "Confirmed on PostgreSQL 15": the schedule in the comment was run on
//! PostgreSQL 15 at READ COMMITTED with two psql sessions, and the outcome
//! compared with both serial orders.

#[path = "common/workdir.rs"]
mod workdir;

use isolint::analysis::analyze;
use isolint::analysis::graph::Settings;
use isolint::analysis::robustness::Method;

/// t(id PK, a, b), u(id PK, t_id, c), log(id PK, v).
const SCHEMA: &str = "CREATE TABLE t (id INT PRIMARY KEY, a INT, b INT);
CREATE TABLE u (id INT PRIMARY KEY, t_id INT, c INT);
CREATE TABLE log (id INT PRIMARY KEY, v INT);
CREATE FUNCTION g(k INT) RETURNS SETOF t LANGUAGE sql STABLE AS $$ SELECT * FROM t WHERE id = k $$;
CREATE FUNCTION bump(k INT) RETURNS SETOF t LANGUAGE sql AS $$ UPDATE t SET b = b + 1 WHERE id = k RETURNING * $$;
CREATE FUNCTION pl(k INT) RETURNS SETOF t LANGUAGE plpgsql AS $$ BEGIN RETURN QUERY SELECT * FROM t WHERE id = k; END $$;
";

fn load(schema: &str, files: &[(&str, &str)]) -> Result<isolint::frontend::Loaded, String> {
    load_with(schema, "", files)
}

fn load_with(
    schema: &str,
    manifest: &str,
    files: &[(&str, &str)],
) -> Result<isolint::frontend::Loaded, String> {
    workdir::load(schema, manifest, files).map_err(|e| e.message.clone())
}

/// The statements of the one program, as `type rel P{…} R{…} W{…}`, in
/// program order.
fn shape(sql: &str) -> Vec<String> {
    match load(SCHEMA, &[("p.sql", sql)]) {
        Ok(l) => shape_of(&l),
        Err(e) => panic!("expected it to load, got: {e}"),
    }
}

fn shape_of(l: &isolint::frontend::Loaded) -> Vec<String> {
    workdir::stmt_shapes_marked(l, 0, "⊥")
}

/// The program's body as `isolint btp` prints it (`loop(q1)`, …).
fn body(sql: &str) -> String {
    match load(SCHEMA, &[("p.sql", sql)]) {
        Ok(l) => {
            let p = &l.workload.programs[0];
            isolint::report::body_text(p, &p.body)
        }
        Err(e) => panic!("expected it to load, got: {e}"),
    }
}

fn robust(files: &[(&str, &str)]) -> bool {
    match load(SCHEMA, files) {
        Ok(l) => analyze(&l.workload, Settings::default(), Method::TypeII, false).robust,
        Err(e) => panic!("expected a verdict, got: {e}"),
    }
}

fn error(sql: &str) -> String {
    match load(SCHEMA, &[("p.sql", sql)]) {
        Ok(_) => panic!("expected an error for {sql}"),
        Err(e) => e,
    }
}

/// UNNEST of a parameter array joined on t's key: the elements are values
/// (no read); `t.id = x.i` pins t's key to one element per access, so the
/// UPDATE is a key-based update per element — a loop, as `FOR i IN ARRAY
/// ids LOOP UPDATE t SET a = a + 1 WHERE id = i` is lowered. SET reads a.
/// Joined on a column that is no key, it is a predicate update instead.
#[test]
fn unnest_in_update_from_is_a_keyed_update_per_element() {
    let sql = "UPDATE t SET a = a + 1 FROM unnest(:ids) AS x(i) WHERE t.id = x.i;\n";
    assert_eq!(shape(sql), ["key upd t P⊥ R{a} W{a}"]);
    assert_eq!(body(sql), "loop(q1)");
    let sql = "UPDATE t SET a = a + 1 FROM unnest(:ids) AS x(i) WHERE t.b = x.i;\n";
    assert_eq!(shape(sql), ["pred upd t P{b} R{a} W{a}"]);
    assert_eq!(body(sql), "q1");
}

/// `(VALUES …) AS v(id, a)`: rows of values; `SET a = v.a` reads no column
/// of t; the join pins t's key per row of VALUES: a keyed write per row.
#[test]
fn values_in_from_reads_no_table() {
    let sql = "UPDATE t SET a = v.a FROM (VALUES (1, 2), (3, 4)) AS v(id, a) WHERE t.id = v.id;\n";
    assert_eq!(shape(sql), ["key upd t P⊥ R{} W{a}"]);
    assert_eq!(body(sql), "loop(q1)");
}

/// A derived table's query is read by the statement: `SELECT *` over t
/// with `a > 0` is a predicate read of t.a reading every column.
#[test]
fn derived_table_is_read_by_the_statement() {
    assert_eq!(
        shape("SELECT count(*) INTO :n FROM (SELECT * FROM t WHERE a > 0) s;\n"),
        ["pred sel t P{a} R{id,a,b} W⊥"]
    );
}

/// LATERAL: the subquery reads u (predicate t_id, reads c) and names
/// t.id, a correlation column: t is joined on id, so predicate-based.
#[test]
fn lateral_subquery_correlates_with_the_items_before_it() {
    assert_eq!(
        shape(
            "SELECT x.c INTO :n FROM t, LATERAL (SELECT c FROM u WHERE u.t_id = t.id LIMIT 1) x WHERE t.id = :k;\n"
        ),
        ["pred sel u P{t_id} R{t_id,c} W⊥", "pred sel t P{id} R{id} W⊥"]
    );
}

/// A SETOF SQL function of the workload in FROM: its body is inlined (a
/// subquery's read: it may find no row, so predicate-based on id).
#[test]
fn setof_function_in_from_is_inlined() {
    assert_eq!(
        shape("SELECT a INTO :n FROM g(:k);\n"),
        ["pred sel t P{id} R{id,a,b} W⊥"]
    );
}

/// A VOLATILE SETOF function in FROM that writes: its UPDATE is part of the
/// statement, after the statement's snapshot read of u (order.rs).
#[test]
fn volatile_function_in_from_runs_after_the_snapshot_reads() {
    let s = shape("SELECT u.c INTO :n FROM u, bump(:k) AS r WHERE u.id = :j;\n");
    assert_eq!(s.len(), 2, "{s:?}");
    assert!(s[0].starts_with("key sel u"), "{s:?}");
    assert!(s[1].contains(" t ") && s[1].contains("W{b}"), "{s:?}");
}

/// Built-in set-returning functions read no table: the statement reads t.
#[test]
fn builtin_set_returning_functions_read_no_table() {
    assert_eq!(
        shape("SELECT count(*) INTO :n FROM t, generate_series(1, :k) AS g(i) WHERE t.a = g.i;\n"),
        ["pred sel t P{a} R{a} W⊥"]
    );
}

/// UNION: each arm's reads, in order (an arm may find no row).
#[test]
fn union_reads_each_arm() {
    assert_eq!(
        shape("SELECT a INTO :v FROM t WHERE id = :k UNION SELECT c FROM u WHERE id = :k;\n"),
        ["pred sel t P{id} R{a} W⊥", "pred sel u P{id} R{c} W⊥"]
    );
    // INTERSECT and EXCEPT the same, with a parenthesized arm.
    assert_eq!(
        shape(
            "SELECT a FROM t WHERE b = 1 INTERSECT (SELECT c FROM u) EXCEPT SELECT v FROM log;\n"
        )
        .len(),
        3
    );
}

/// `FROM t JOIN (u JOIN log ON …) ON …`: all three tables, joins as
/// join conjuncts.
#[test]
fn nested_join_reads_every_table() {
    assert_eq!(
        shape("SELECT t.a INTO :v FROM t JOIN (u JOIN log ON log.id = u.c) ON u.t_id = t.id WHERE t.b = :k;\n"),
        [
            "pred sel t P{id,b} R{id,a} W⊥",
            "pred sel u P{t_id,c} R{t_id,c} W⊥",
            "pred sel log P{id} R{id} W⊥"
        ]
    );
}

/// DELETE … USING unnest: a predicate delete over the join column.
#[test]
fn unnest_in_delete_using() {
    assert_eq!(
        shape("DELETE FROM u USING unnest(:ids) AS x(i) WHERE u.t_id = x.i;\n"),
        ["pred del u P{t_id} R⊥ W{id,t_id,c}"]
    );
}

/// INSERT … SELECT from UNNEST and from a derived table; a CTE over VALUES
/// joined to t; a derived table inside a subquery in WHERE.
#[test]
fn set_based_forms_inside_other_statements() {
    assert_eq!(
        shape("INSERT INTO log (id, v) SELECT x.i, 0 FROM unnest(:ids) AS x(i);\n"),
        ["ins log P⊥ R⊥ W{id,v}"]
    );
    assert_eq!(
        shape(
            "INSERT INTO log (id, v) SELECT s.id, s.a FROM (SELECT id, a FROM t WHERE b = :k) s;\n"
        ),
        ["pred sel t P{b} R{id,a} W⊥", "ins log P⊥ R⊥ W{id,v}"]
    );
    let s = shape(
        "WITH w AS (SELECT t.id FROM t JOIN (VALUES (1), (2)) AS v(k) ON t.a = v.k) UPDATE u SET c = 0 WHERE id = :k;\n",
    );
    assert_eq!(s[0], "pred sel t P{a} R{id,a} W⊥", "{s:?}");
    assert_eq!(
        shape("UPDATE u SET c = 1 WHERE t_id IN (SELECT s.id FROM (SELECT id FROM t WHERE a > 0) s);\n"),
        ["pred sel t P{a} R{id} W⊥", "pred upd u P{t_id} R{} W{c}"]
    );
}

/// What cannot be modelled stays rejected, located, saying why.
#[test]
fn unmodelled_forms_are_rejected() {
    // FOR UPDATE over a subquery locks its rows after the scan.
    let e = error("SELECT s.a INTO :v FROM (SELECT a FROM t WHERE id = :k) s FOR UPDATE;\n");
    assert!(e.contains("FOR UPDATE/SHARE over a subquery"), "{e}");
    let e = error("SELECT a INTO :v FROM (SELECT a FROM t WHERE id = :k FOR UPDATE) s;\n");
    assert!(
        e.contains("FOR UPDATE/SHARE inside a subquery in FROM"),
        "{e}"
    );
    // An alias of a parenthesized join hides the joined tables' names.
    let e = error("SELECT j.c INTO :v FROM (t JOIN u ON u.t_id = t.id) AS j WHERE j.t_id = 1;\n");
    assert!(e.contains("alias of a parenthesized join"), "{e}");
    // A PL/pgSQL function is not inlined in FROM.
    let e = error("SELECT a INTO :v FROM pl(:k);\n");
    assert!(e.contains("plpgsql"), "{e}");
    // ROWS FROM: PostgreSQL accepts it, isolint's parser does not; the
    // error says so (not a syntax error PostgreSQL would not give).
    let e =
        error("SELECT count(*) INTO :n FROM ROWS FROM (unnest(:a1), unnest(:a2)) AS x(i, j);\n");
    assert!(
        e.contains("`ROWS FROM (…)` in FROM is not supported"),
        "{e}"
    );
    // A column the derived table does not have is named with the item.
    let e = error("SELECT s.zz INTO :n FROM (SELECT a FROM t) s;\n");
    assert!(e.contains("unknown column `zz` in s"), "{e}");
    // TABLE t as a set-operation arm.
    let e = error("SELECT id, a, b FROM t UNION TABLE t;\n");
    assert!(e.contains("TABLE t"), "{e}");
}

/// Lost update through a derived table: both instances read t.a of row :k
/// through `(SELECT a FROM t WHERE id = :k) s`, then write a + 1 computed
/// from it. Confirmed on PostgreSQL 15 (t(1, 0, 0)): S1 BEGIN; S1 SELECT
/// s.a FROM (SELECT a FROM t WHERE id = 1) s → 0; S2 BEGIN; S2 the same →
/// 0; S2 UPDATE t SET a = 0 + 1 WHERE id = 1; S2 COMMIT; S1 UPDATE t SET
/// a = 0 + 1 WHERE id = 1; S1 COMMIT → a = 1, both serial orders give 2.
/// Control: the derived table reads b, which nobody writes, and the
/// increment reads a in the UPDATE itself: robust.
#[test]
fn derived_table_lost_update_is_not_robust() {
    let bad = "SELECT s.a INTO :v FROM (SELECT a FROM t WHERE id = :k) s;\nUPDATE t SET a = :v + 1 WHERE id = :k;\n";
    assert!(!robust(&[("inc.sql", bad)]));
    let good = "SELECT s.b INTO :v FROM (SELECT b FROM t WHERE id = :k) s;\nUPDATE t SET a = a + 1 WHERE id = :k;\n";
    assert!(robust(&[("inc.sql", good)]));
}

/// Read skew through an UNNEST join: `total` sums the rows of the array,
/// then reads one of them again; `spend` adds to one row. Confirmed on
/// PostgreSQL 15 (t(1, 10, 0), t(2, 10, 0)): S1 BEGIN; S1 SELECT
/// sum(t.a) FROM t JOIN unnest('{1,2}'::int[]) AS x(i) ON t.id = x.i →
/// 20; S2 BEGIN; S2 UPDATE t SET a = a + 5 WHERE id = 2; S2 COMMIT; S1
/// SELECT a FROM t WHERE id = 2 → 15; S1 COMMIT. S1 saw (20, 15); serially
/// it sees (20, 10) before S2 and (25, 15) after. Control: the second read
/// is of `log`, which spend does not write: robust.
#[test]
fn unnest_join_read_skew_is_not_robust() {
    let total = "SELECT sum(t.a) INTO :s FROM t JOIN unnest(:ids) AS x(i) ON t.id = x.i;\nSELECT a INTO :v FROM t WHERE id = :j;\n";
    let spend = "UPDATE t SET a = a + 5 WHERE id = :x;\n";
    assert!(!robust(&[("total.sql", total), ("spend.sql", spend)]));
    let total_ok = "SELECT sum(t.a) INTO :s FROM t JOIN unnest(:ids) AS x(i) ON t.id = x.i;\nSELECT v INTO :v FROM log WHERE id = :j;\n";
    assert!(robust(&[("total.sql", total_ok), ("spend.sql", spend)]));
}

/// UNION: the arm over t is a read of t.a that the later write is
/// computed from: a lost update as above. Confirmed on PostgreSQL 15
/// (t(1, 0, 0), u empty): S1 BEGIN; S1 SELECT a FROM t WHERE id = 1 UNION
/// SELECT c FROM u WHERE id = 1 → 0; S2 BEGIN; S2 the same → 0; S2 UPDATE
/// t SET a = 0 + 1 WHERE id = 1; S2 COMMIT; S1 the same UPDATE; S1 COMMIT
/// → a = 1, both serial orders give 2. Control: the arm reads b, and the
/// UPDATE computes a + 1 itself.
#[test]
fn union_arm_lost_update_is_not_robust() {
    let bad = "SELECT a INTO :v FROM t WHERE id = :k UNION SELECT c FROM u WHERE id = :k;\nUPDATE t SET a = :v + 1 WHERE id = :k;\n";
    assert!(!robust(&[("inc.sql", bad)]));
    let good = "SELECT b INTO :v FROM t WHERE id = :k UNION SELECT c FROM u WHERE id = :k;\nUPDATE t SET a = a + 1 WHERE id = :k;\n";
    assert!(robust(&[("inc.sql", good)]));
}

/// PL/pgSQL routines in FROM inside a PL/pgSQL routine: `gp` (RETURN QUERY,
/// VOLATILE by default) and `h` (an UPDATE, then RETURN QUERY) are inlined
/// as their calls in expressions are; a VOLATILE one after the statement's
/// snapshot reads, per row when tables come before it. The routine's name
/// qualifies its columns (`gp.b`), and a LATERAL argument (`h(t.id)`) stays
/// a read of t.id. Loaded on PostgreSQL 15 (schema + routines created,
/// `SELECT f(1)` ran).
#[test]
fn plpgsql_routines_in_from_are_inlined() {
    let routines = "CREATE FUNCTION gp(k int) RETURNS SETOF t LANGUAGE plpgsql AS $$ BEGIN RETURN QUERY SELECT * FROM t WHERE id = k; END $$;
CREATE FUNCTION h(k int) RETURNS TABLE(x int, y int) LANGUAGE plpgsql AS $$ BEGIN UPDATE u SET c = c + 1 WHERE id = k; RETURN QUERY SELECT id, c FROM u WHERE id = k; END $$;
CREATE FUNCTION f(k int) RETURNS int LANGUAGE plpgsql AS $$ DECLARE n int; BEGIN
  SELECT gp.b INTO n FROM gp(k);
  SELECT count(*) INTO n FROM t JOIN h(k) ON t.id = h.x;
  SELECT coalesce(max(x), 0) INTO n FROM t, LATERAL h(t.id) AS hh WHERE t.a = n;
  RETURN n; END $$;
";
    let l = match load_with(SCHEMA, "programs: [f]\n", &[("r.sql", routines)]) {
        Ok(l) => l,
        Err(e) => panic!("expected it to load, got: {e}"),
    };
    assert_eq!(
        shape_of(&l),
        [
            // SELECT … FROM gp(k): gp's query.
            "key sel t P⊥ R{id,a,b} W⊥",
            // JOIN h(k): t is joined on id (predicate-based), then h's
            // body per row after that snapshot read.
            "pred sel t P{id} R{id} W⊥",
            "key upd u P⊥ R{c} W{c}",
            "key sel u P⊥ R{id,c} W⊥",
            // LATERAL h(t.id): t read with a (WHERE) and id (argument).
            "pred sel t P{id,a} R{id} W⊥",
            "key upd u P⊥ R{c} W{c}",
            "key sel u P⊥ R{id,c} W⊥",
        ]
    );
}

/// The per-element keyed write conflicts like a keyed write: a read of
/// t.a, then `UPDATE t SET a = :v + 1 FROM unnest(:ids) …` loses an
/// update. Confirmed on PostgreSQL 15 (t(1, 0, 0), t(2, 0, 0)): S1 BEGIN;
/// S1 SELECT a FROM t WHERE id = 1 → 0; S2 BEGIN; S2 the same → 0; S2
/// UPDATE t SET a = 0 + 1 FROM unnest('{1,2}'::int[]) AS x(i) WHERE t.id =
/// x.i; S2 COMMIT; S1 the same UPDATE; S1 COMMIT → a = 1 in both rows, both
/// serial orders give 2. Control (run the same way on PostgreSQL: a = 2,
/// the serial result): the read is of b and the UPDATE computes a + 1
/// itself — robust, which the predicate model of the first version of
/// this lowering did not say (a per-row lock orders each increment).
#[test]
fn unnest_keyed_write_lost_update_is_not_robust() {
    let bad = "SELECT a INTO :v FROM t WHERE id = :k;\nUPDATE t SET a = :v + 1 FROM unnest(:ids) AS x(i) WHERE t.id = x.i;\n";
    assert!(!robust(&[("inc.sql", bad)]));
    let good = "SELECT b INTO :v FROM t WHERE id = :k;\nUPDATE t SET a = a + 1 FROM unnest(:ids) AS x(i) WHERE t.id = x.i;\n";
    assert!(robust(&[("inc.sql", good)]));
}

/// A read joined to UNNEST on t's key is one predicate read on the
/// statement's snapshot, not a loop of keyed reads (which would let a
/// write in between its rows): the sum over the array reads t's rows at
/// once. With a writer of t.a, a single such read is robust.
#[test]
fn unnest_keyed_read_is_one_snapshot_read() {
    let sql = "SELECT sum(t.a) INTO :s FROM t JOIN unnest(:ids) AS x(i) ON t.id = x.i;\n";
    assert_eq!(shape(sql), ["pred sel t P{id} R{id,a} W⊥"]);
    assert_eq!(body(sql), "q1");
    let spend = "UPDATE t SET a = a + 5 WHERE id = :x;\n";
    assert!(robust(&[("total.sql", sql), ("spend.sql", spend)]));
}

/// A set operation (or VALUES with a subquery) as a part of a WITH reads
/// on the statement's snapshot: its reads come with the other parts'
/// snapshot reads, before the data-modifying part's write (order.rs: a
/// read placed after the write would model it reading later than it
/// does). The UPDATE's target scan (key sel u) is a snapshot read too.
#[test]
fn set_operation_in_a_cte_reads_on_the_snapshot() {
    let sql = "WITH w AS (UPDATE u SET c = 1 WHERE id = :k RETURNING c), s AS (SELECT a FROM t WHERE id = :j UNION SELECT b FROM t WHERE id = :j) SELECT count(*) INTO :n FROM w;\n";
    assert_eq!(
        shape(sql),
        [
            "key sel u P⊥ R{id} W⊥",
            "pred sel t P{id} R{a} W⊥",
            "pred sel t P{id} R{b} W⊥",
            "key upd u P⊥ R{c} W{c}"
        ]
    );
    let sql = "WITH w AS (UPDATE u SET c = 1 WHERE id = :k RETURNING c), s AS (VALUES ((SELECT a FROM t WHERE id = :j))) SELECT count(*) INTO :n FROM w;\n";
    assert_eq!(
        shape(sql),
        [
            "key sel u P⊥ R{id} W⊥",
            "pred sel t P{id} R{a} W⊥",
            "key upd u P⊥ R{c} W{c}"
        ]
    );
}

/// The set-based idiom of a job queue's `add_jobs` (own fixture after
/// graphile-worker's): UNNEST of a composite-type array parameter in
/// INSERT … SELECT, UPDATE … FROM and a join, a correlated UNNEST in a
/// select-list subquery, an INSERT target alias (`AS j`) named in ON
/// CONFLICT … WHERE. Loaded on PostgreSQL 15 (schema and routine
/// created, `add_jobs(array[row(…)::job_spec])` ran). Expected: the
/// UPDATE joined on `jobs.key` (UNIQUE, but this UPDATE assigns it, so no
/// key) is a predicate update over key and locked_at; tasks joined to the
/// elements on its UNIQUE identifier is one predicate read (a read, not
/// a write: not per element).
#[test]
fn add_jobs_idiom_loads() {
    let schema = "CREATE TYPE job_spec AS (identifier text, queue_name text, job_key text, payload json, flags text[]);
CREATE TABLE tasks (id serial PRIMARY KEY, identifier text NOT NULL UNIQUE);
CREATE TABLE queues (id serial PRIMARY KEY, queue_name text NOT NULL UNIQUE);
CREATE TABLE jobs (id bigserial PRIMARY KEY, queue_id int REFERENCES queues (id), task_id int NOT NULL REFERENCES tasks (id), payload json, key text UNIQUE, attempts int NOT NULL DEFAULT 0, max_attempts int NOT NULL DEFAULT 25, locked_at timestamptz, flags jsonb);
";
    let routine = "CREATE FUNCTION add_jobs(specs job_spec[]) RETURNS SETOF jobs LANGUAGE plpgsql AS $$
begin
  insert into tasks (identifier) select distinct spec.identifier from unnest(specs) spec on conflict do nothing;
  update jobs set key = null, attempts = jobs.max_attempts from unnest(specs) spec where spec.job_key is not null and jobs.key = spec.job_key and locked_at is not null;
  return query insert into jobs as j (queue_id, task_id, payload, key, flags)
    select queues.id, tasks.id, coalesce(spec.payload, '{}'::json), spec.job_key,
      (select jsonb_object_agg(flag, true) from unnest(spec.flags) as item(flag))
    from unnest(specs) spec
    inner join tasks on tasks.identifier = spec.identifier
    left join queues on queues.queue_name = spec.queue_name
  on conflict (key) do update set payload = excluded.payload, attempts = 0
  where j.locked_at is null
  returning *;
end $$;
";
    let l = match load_with(schema, "programs: [add_jobs]\n", &[("r.sql", routine)]) {
        Ok(l) => l,
        Err(e) => panic!("expected it to load, got: {e}"),
    };
    let s = shape_of(&l);
    assert!(
        s.contains(&"pred upd jobs P{key,locked_at} R{max_attempts} W{key,attempts}".to_string()),
        "{s:?}"
    );
    assert!(
        s.contains(&"pred sel tasks P{identifier} R{id,identifier} W⊥".to_string()),
        "{s:?}"
    );
    // The upsert's action reads locked_at of the conflicting row (its
    // WHERE names the target by its alias).
    assert!(
        s.iter()
            .any(|x| x.starts_with("pred upd jobs P{key} R{key,locked_at}")),
        "{s:?}"
    );
}

/// FROM inside a call's arguments (`extract(epoch FROM …)`,
/// `substring(s FROM g(k))`) is no FROM list: a routine called there
/// stays a call in an expression (not rewritten as a FROM item, which
/// would make a statement PostgreSQL rejects); a routine in the FROM of a
/// subquery is a FROM item. Ran on PostgreSQL 15 (`SELECT f(1)`).
#[test]
fn from_inside_call_arguments_is_no_from_item() {
    let routines = "CREATE FUNCTION g(k int) RETURNS int LANGUAGE plpgsql AS $$ BEGIN RETURN k; END $$;
CREATE FUNCTION gs(k int) RETURNS SETOF t LANGUAGE plpgsql AS $$ BEGIN RETURN QUERY SELECT * FROM t WHERE id = k; END $$;
CREATE FUNCTION f(k int) RETURNS int LANGUAGE plpgsql AS $$ DECLARE n int; BEGIN
  SELECT extract(epoch FROM now())::int + length(substring('abc' FROM g(k))) INTO n FROM t WHERE id = k;
  SELECT count(*) INTO n FROM t WHERE EXISTS (SELECT 1 FROM gs(k) s WHERE s.id = t.id);
  RETURN n; END $$;
";
    let schema = "CREATE TABLE t (id INT PRIMARY KEY, a INT, b INT);\n";
    let l = match load_with(schema, "programs: [f]\n", &[("r.sql", routines)]) {
        Ok(l) => l,
        Err(e) => panic!("expected it to load, got: {e}"),
    };
    assert_eq!(
        shape_of(&l),
        [
            // g reads nothing: the first statement is t's keyed read.
            "key sel t P⊥ R{id} W⊥",
            // EXISTS (… FROM gs(k) s WHERE s.id = t.id): t joined on id;
            // gs (VOLATILE) per row after that snapshot read.
            "pred sel t P{id} R{id} W⊥",
            "key sel t P⊥ R{id,a,b} W⊥",
        ]
    );
}

/// Random sequences of set-based statement fragments in a PL/pgSQL body
/// (balanced or not): the loader errors or lowers, never panics, and what
/// lowers is valid BTPs. 300 cases; `PROPTEST_CASES=N` for a longer run.
mod fuzz {
    use proptest::prelude::*;

    fn fragment() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec![
            "SELECT count(*) INTO n FROM (SELECT * FROM t WHERE a > k) s; ",
            "SELECT x.c INTO n FROM t, LATERAL (SELECT c FROM u WHERE u.t_id = t.id LIMIT 1) x; ",
            "UPDATE t SET a = a + 1 FROM unnest(ids) AS x(i) WHERE t.id = x.i; ",
            "DELETE FROM u USING unnest(ids) AS x(i) WHERE u.id = x.i; ",
            "UPDATE t SET a = v.a FROM (VALUES (1, 2), (k, 4)) AS v(id, a) WHERE t.id = v.id; ",
            "SELECT a INTO n FROM t WHERE id = k UNION SELECT c FROM u WHERE id = k; ",
            "SELECT a INTO n FROM t INTERSECT (SELECT c FROM u) EXCEPT SELECT 1; ",
            "SELECT g.b INTO n FROM gp(k); ",
            "SELECT count(*) INTO n FROM t JOIN gp(k) r ON r.id = t.id; ",
            "SELECT a INTO n FROM gs(k) AS r; ",
            "SELECT count(*) INTO n FROM t JOIN (u JOIN t AS t2 ON t2.id = u.t_id) ON u.t_id = t.id; ",
            "INSERT INTO u (id, t_id, c) SELECT x.i, x.i, 0 FROM unnest(ids) x(i) ON CONFLICT DO NOTHING; ",
            "WITH w AS (SELECT a FROM t UNION SELECT c FROM u) SELECT count(*) INTO n FROM t; ",
            "SELECT count(*) INTO n FROM generate_series(1, k) g, LATERAL (SELECT a FROM t WHERE t.id = g) s; ",
            "SELECT count(*) INTO n FROM ROWS FROM (unnest(ids)) x; ",
            "SELECT * INTO n FROM (t JOIN u ON u.t_id = t.id) AS j; ",
            "SELECT s.a INTO n FROM (SELECT a FROM t FOR UPDATE) s; ",
            "FROM unnest( ",
            "LATERAL ( ",
            ") s ",
            "UNION ",
            "(VALUES (1)) ",
            "IF k > 0 THEN ",
            "END IF; ",
            "BEGIN ",
            "END; ",
            "; ",
        ])
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(300),
            ..ProptestConfig::default()
        })]

        #[test]
        fn fuzz_set_based_bodies_never_panic(parts in prop::collection::vec(fragment(), 0..8)) {
            let schema = "CREATE TABLE t (id INT PRIMARY KEY, a INT, b INT);
CREATE TABLE u (id INT PRIMARY KEY, t_id INT, c INT);
CREATE FUNCTION gs(k INT) RETURNS SETOF t LANGUAGE sql STABLE AS $$ SELECT * FROM t WHERE id = k $$;
";
            let routines = format!(
                "CREATE FUNCTION gp(k int) RETURNS SETOF t LANGUAGE plpgsql AS $$ BEGIN RETURN QUERY SELECT * FROM t WHERE id = k; END $$;
CREATE FUNCTION f(k int, ids int[]) RETURNS int LANGUAGE plpgsql AS $$ DECLARE n int; BEGIN {} RETURN n; END $$;
",
                parts.concat()
            );
            if let Ok(l) = isolint::frontend::sql_dir::lower_routine_file(
                &isolint::model::error::SourceFile::new("s.sql", schema),
                &isolint::model::error::SourceFile::new("r.sql", &*routines),
            ) {
                let _ = isolint::analysis::graph::build(
                    &l.workload,
                    isolint::analysis::graph::Settings::default(),
                );
            }
        }
    }
}
