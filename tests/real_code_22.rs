//! Issue 22, real code as written: constructs that stopped HammerDB's
//! TPC-C or graphile-worker's SQL (found by `scripts/real_code.sh`), on
//! small fixtures of our own. Each statement here was run on PostgreSQL 15
//! first (psql accepted it); expected reads and writes come from what
//! PostgreSQL does with the statement (reasoning next to each).

#[path = "common/workdir.rs"]
mod workdir;

use isolint::frontend::Loaded;

const SCHEMA: &str = "CREATE TABLE t (id int PRIMARY KEY, a int, b text);
CREATE TABLE q (id int PRIMARY KEY, k int, c int);
CREATE TABLE u (id int PRIMARY KEY, c int);
";

fn load(schema: &str, files: &[(&str, &str)]) -> Result<Loaded, String> {
    workdir::load(schema, "", files).map_err(|e| e.message.clone())
}

fn loaded(sql: &str) -> Loaded {
    load(SCHEMA, &[("p.sql", sql)]).unwrap_or_else(|e| panic!("expected it to load: {e}"))
}

/// Program `p`'s statements as `type rel P{..} R{..} W{..}`.
fn stmts(l: &Loaded, p: usize) -> Vec<String> {
    workdir::stmt_shapes(l, p)
}

/// HammerDB's neword: `WITH stock_update AS (UPDATE stock … RETURNING
/// stock.s_dist_01 AS s_dist, …) SELECT array_agg(s_dist) … FROM
/// stock_update`. PostgreSQL names the CTE's columns by the RETURNING
/// list, so `bb` is the CTE's column (it was "unknown column `bb` in t").
/// The UPDATE reads a (SET) and b (RETURNING) and writes a; reading the
/// CTE's rows reads no table (they come from the UPDATE), so nothing else
/// is lowered but the UPDATE's scan of its key.
#[test]
fn returning_alias_of_a_data_modifying_cte_is_its_column() {
    let l = loaded("WITH w AS (UPDATE t SET a = a + 1 WHERE id = :k RETURNING t.b AS bb)\nSELECT bb INTO :v FROM w;");
    assert_eq!(
        stmts(&l, 0),
        ["key sel t P- R{id} W-", "key upd t P- R{a,b} W{a}"]
    );
    // Control: a name the RETURNING list does not give stays an error
    // (PostgreSQL: column "zz" does not exist).
    let e = load(
        SCHEMA,
        &[(
            "p.sql",
            "WITH w AS (UPDATE t SET a = a + 1 WHERE id = :k RETURNING t.b AS bb)\nSELECT zz INTO :v FROM w;",
        )],
    )
    .err()
    .expect("zz is no column of w");
    assert!(e.contains("zz"), "{e}");
}

/// graphile-worker's completeJobs/failJobs/returnJobs: `WITH j AS (DELETE
/// … RETURNING *) UPDATE u … FROM j WHERE …`. pg_query lists `j` among the
/// statement's tables (it walks UPDATE's FROM before its WITH), and the
/// audit stopped at "references table `j`, which isolint did not model".
/// `j` is the CTE: the DELETE of q (its key scan, then the delete) and the
/// UPDATE of u, joined on a value from j (a predicate over u.id), are all
/// the statement touches.
#[test]
fn update_from_a_data_modifying_cte() {
    let l = loaded(
        "WITH j AS (DELETE FROM q WHERE id = $1 RETURNING *)\nUPDATE u SET c = 0 FROM j WHERE u.id = j.k;",
    );
    let s = stmts(&l, 0);
    assert!(
        s.contains(&"key del q P- R- W{id,k,c}".to_string()),
        "{s:?}"
    );
    assert!(
        s.contains(&"pred upd u P{id} R{id} W{c}".to_string()),
        "{s:?}"
    );
    assert!(s.iter().all(|x| !x.contains(" j ")), "{s:?}");
    // Control (fails closed): a CTE named like a table of the schema is
    // not taken as accounted for by its name; the statement is refused.
    let e = load(
        SCHEMA,
        &[(
            "p.sql",
            "WITH t AS (DELETE FROM q WHERE id = $1 RETURNING *)\nUPDATE u SET c = 0 FROM t WHERE u.id = t.k;",
        )],
    )
    .err()
    .expect("a CTE shadowing table t stays unaccounted for");
    assert!(e.contains("`t`"), "{e}");
}

/// graphile-worker's add_job: `select * into v_job from
/// graphile_worker.add_jobs(…) limit 1` — a schema-qualified PL/pgSQL
/// routine in FROM without an alias. PostgreSQL names that FROM item by
/// the function's name without its schema (`add_jobs`); isolint wrote the
/// qualified name as the item's alias (`AS s.add_jobs`), which PostgreSQL
/// rejects ("syntax error at or near ."). The call is inlined: add_job's
/// only statement is add_jobs's INSERT of a new jobs row.
#[test]
fn schema_qualified_routine_in_from_without_alias() {
    let schema = "CREATE SCHEMA s;
CREATE TYPE s.spec AS (a text, b int);
CREATE TABLE s.jobs (id int PRIMARY KEY, a text, b int);
CREATE FUNCTION s.add_jobs(specs s.spec[], pr boolean DEFAULT false) RETURNS SETOF s.jobs LANGUAGE plpgsql AS $$
begin
  return query insert into s.jobs (id, a, b) select 1, spec.a, spec.b from unnest(specs) spec returning *;
end $$;
CREATE FUNCTION s.add_job(identifier text, n int) RETURNS s.jobs LANGUAGE plpgsql AS $$
declare
  v_job s.jobs;
begin
  select * into v_job from s.add_jobs(ARRAY[(identifier, n)::s.spec], (identifier = 'x')) limit 1;
  return v_job;
end $$;
";
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("schema.sql"), schema).unwrap();
    std::fs::write(
        d.path().join("isolint.yaml"),
        "schema: schema.sql\nprograms: [add_job]\n",
    )
    .unwrap();
    let l = isolint::frontend::load(d.path(), None)
        .unwrap_or_else(|e| panic!("expected it to load: {}", e.message));
    assert_eq!(l.workload.programs.len(), 1);
    assert_eq!(stmts(&l, 0), ["ins jobs P- R- W{id,a,b}"]);
}
