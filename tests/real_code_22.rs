//! Issue 22, real code as written: constructs that stopped HammerDB's
//! TPC-C or graphile-worker's SQL (found by `scripts/real_code.sh`), on
//! small fixtures of our own. Each statement here was run on PostgreSQL 15
//! first (psql accepted it); expected reads and writes come from what
//! PostgreSQL does with the statement (reasoning next to each).

use std::path::Path;

use isolint::frontend::Loaded;

const SCHEMA: &str = "CREATE TABLE t (id int PRIMARY KEY, a int, b text);
CREATE TABLE q (id int PRIMARY KEY, k int, c int);
CREATE TABLE u (id int PRIMARY KEY, c int);
";

fn load(schema: &str, files: &[(&str, &str)]) -> Result<Loaded, String> {
    let d = tempfile::tempdir().map_err(|e| e.to_string())?;
    std::fs::write(d.path().join("schema.sql"), schema).map_err(|e| e.to_string())?;
    std::fs::write(d.path().join("isolint.yaml"), "schema: schema.sql\n")
        .map_err(|e| e.to_string())?;
    for (n, t) in files {
        std::fs::write(d.path().join(n), t).map_err(|e| e.to_string())?;
    }
    isolint::frontend::load(Path::new(d.path()), None).map_err(|e| e.message.clone())
}

fn loaded(sql: &str) -> Loaded {
    load(SCHEMA, &[("p.sql", sql)]).unwrap_or_else(|e| panic!("expected it to load: {e}"))
}

/// Program `p`'s statements as `type rel P{..} R{..} W{..}`.
fn stmts(l: &Loaded, p: usize) -> Vec<String> {
    let w = &l.workload;
    let set = |rel, s: &Option<isolint::model::schema::AttrSet>| match s {
        None => "-".to_string(),
        Some(a) => format!("{{{}}}", w.schema.rel(rel).names(a).join(",")),
    };
    w.programs[p]
        .statements
        .iter()
        .map(|s| {
            format!(
                "{} {} P{} R{} W{}",
                s.ty.name(),
                w.schema.rel(s.rel).name,
                set(s.rel, &s.pread),
                set(s.rel, &s.read),
                set(s.rel, &s.write)
            )
        })
        .collect()
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
    assert!(s.contains(&"key del q P- R- W{id,k,c}".to_string()), "{s:?}");
    assert!(s.contains(&"pred upd u P{id} R{id} W{c}".to_string()), "{s:?}");
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
