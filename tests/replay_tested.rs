//! Issue 23 (h23-seedtest): replay seeds a column a keyed UPDATE/DELETE
//! tests against a constant (`AND lk IS NOT NULL`, `AND a > 0`) with the
//! initial value the explorer's schedule prints for it (`values: t#1 has
//! … lk = NULL`, `a = 0`: the truth the schedule needs,
//! `explorer::unevaluated`), and runs a keyed statement that matched no
//! row (its no-match branch: a predicate read of its row) on the row the
//! explorer's values give it. Before, replay seeded a fresh value (a
//! timestamp: `lk IS NOT NULL` true where the schedule needs it false)
//! and gave the no-match statement a key of its own: "not reproduced
//! (the outcome equals the serial order T2, T1)" for a real anomaly.
//!
//! Run by hand on PostgreSQL 15.20 with two psql sessions (READ
//! COMMITTED), `t (id int PRIMARY KEY, a int, lk timestamptz, v int NOT
//! NULL)`, `u (id int PRIMARY KEY, v int NOT NULL)`, row u (2, 5); the
//! schedules are in each test's comment. One throwaway server per test
//! (tests/common/postgres.rs).
#![cfg(feature = "postgres")]

#[path = "common/postgres.rs"]
mod postgres;
#[path = "common/replay.rs"]
mod replay;
#[path = "common/workdir.rs"]
mod workdir;

const SCHEMA: &str = "CREATE TABLE t (id int PRIMARY KEY, a int, lk timestamptz, v int NOT NULL);
CREATE TABLE u (id int PRIMARY KEY, v int NOT NULL);
";

/// Bump the counter, then write the row with `set`.
fn writer(set: &str) -> String {
    format!("UPDATE u SET v = v + 1 WHERE id = :j;\nUPDATE t SET {set} WHERE id = :k;\n")
}

const DEL_LOCKED: &str = "DELETE FROM t WHERE id = :k AND lk IS NOT NULL;
SELECT v FROM u WHERE id = :j;
";

const BUMP_GT: &str = "UPDATE t SET v = v + 1 WHERE id = :k AND a > 0;
SELECT v FROM u WHERE id = :j;
";

fn pair(first: &str, second: &str) -> tempfile::TempDir {
    workdir::dir(SCHEMA, "", &[("S1.sql", first), ("S2.sql", second)])
}

/// `check --postgres`: not robust, the first witness confirmed with
/// values and reproduced with the values derived first (no note that a
/// later choice of values was needed); its `postgres` answer.
fn reproduced_first(first: &str, second: &str) -> Option<serde_json::Value> {
    let s = postgres::server()?;
    let d = pair(first, second);
    let v = replay::reproduced_json(d.path(), &s.conninfo(), &[]);
    let w = &v["witnesses"][0];
    assert_eq!(w["confirmation"]["status"], "confirmed", "{w}");
    assert!(w["confirmation"]["model_only"].is_null(), "{w}");
    let pg = w["postgres"].clone();
    let notes = replay::strings(&pg, "notes");
    assert!(
        !notes.iter().any(|n| n.contains("values derived first")),
        "reproduced only by a later choice of values: {notes:?}"
    );
    Some(pg)
}

/// `check --postgres`: not robust, its first witness not confirmed with
/// values and not reproduced.
fn not_reproduced(first: &str, second: &str) {
    let Some(s) = postgres::server() else { return };
    let d = pair(first, second);
    let v = replay::not_robust(d.path(), &["--postgres", &s.conninfo()]);
    let w = &v["witnesses"][0];
    assert!(
        !w["confirmation"]["model_only"].is_null(),
        "confirmed with values: PostgreSQL runs every interleaving serially: {w}"
    );
    assert_eq!(w["postgres"]["status"], "not_reproduced", "{w}");
}

/// `DELETE … AND lk IS NOT NULL` beside `SET lk = now()`
/// (tests/explorer_conditions.rs::is_not_null_beside_a_lock_at_now_is_confirmed).
/// By hand, t (1, 3, NULL, 4):
///
/// ```text
/// S2: BEGIN; UPDATE u SET v = v + 1 WHERE id = 2; UPDATE t SET lk = now() WHERE id = 1;
/// S1: BEGIN; DELETE FROM t WHERE id = 1 AND lk IS NOT NULL;   -- DELETE 0, no wait
/// S2: COMMIT;
/// S1: SELECT v FROM u WHERE id = 2;                                  -- 6
/// S1: COMMIT;                                  -- row 1 stays, lk set
/// ```
///
/// S1 then S2 reads 5; S2 then S1 deletes row 1. With lk set at first
/// (what replay seeded before) S1 waits for S2, re-checks, deletes and
/// reads 6: S2 then S1.
#[test]
fn is_not_null_beside_a_lock_at_now_is_reproduced() {
    let Some(pg) = reproduced_first(DEL_LOCKED, &writer("lk = now()")) else {
        return;
    };
    let trace = replay::strings(&pg, "trace");
    assert!(
        trace
            .iter()
            .any(|l| l.starts_with("T1: DELETE") && l.ends_with("→ 0 row(s) affected")),
        "S1's DELETE matches nothing on its snapshot (lk NULL): {trace:?}"
    );
    // The no-match DELETE and S2's write meet on one row: one key.
    let txns = replay::strings(&pg, "transactions");
    let key = |t: &str| {
        t.split("k = ")
            .nth(1)
            .map(|k| k.trim_end_matches(')').to_string())
    };
    assert_eq!(txns.len(), 2, "{txns:?}");
    assert_eq!(key(txns[0]), key(txns[1]), "{txns:?}");
}

/// The control: `SET lk = NULL` beside the same DELETE. By hand, from lk
/// NULL: S1's DELETE 0 at once, reads 6 — S2 then S1; from lk set: S1
/// waits for S2, re-checks (lk NULL), DELETE 0, reads 6 — S2 then S1.
#[test]
fn is_not_null_beside_an_unlock_is_not_reproduced() {
    not_reproduced(DEL_LOCKED, &writer("lk = NULL"));
}

/// `UPDATE … AND a > 0` beside `SET a = 1`: the anomaly needs `a ≤ 0` at
/// first, which no fresh value (1, 2, …) gives; the explorer prints `a =
/// 0`. By hand, t (1, 0, NULL, 4):
///
/// ```text
/// S2: BEGIN; UPDATE u SET v = v + 1 WHERE id = 2; UPDATE t SET a = 1 WHERE id = 1;
/// S1: BEGIN; UPDATE t SET v = v + 1 WHERE id = 1 AND a > 0;  -- UPDATE 0, no wait
/// S2: COMMIT;
/// S1: SELECT v FROM u WHERE id = 2;                                  -- 6
/// ```
///
/// t.v stays 4: S2 then S1 would make it 5, S1 then S2 reads 5. From a 5
/// S1 waits, re-checks (a 1), UPDATE 1, reads 6: S2 then S1. Before,
/// replay seeded `a = 3` and reproduced it only with a later choice of
/// values (a note said so).
#[test]
fn gt_beside_a_write_that_makes_it_true_is_reproduced_with_the_explorers_value() {
    let Some(pg) = reproduced_first(BUMP_GT, &writer("a = 1")) else {
        return;
    };
    let trace = replay::strings(&pg, "trace");
    assert!(
        trace
            .iter()
            .any(|l| l.starts_with("T1: UPDATE t") && l.ends_with("→ 0 row(s) affected")),
        "{trace:?}"
    );
}

/// The control: `SET a = 0` keeps `a > 0` false. By hand (as above with
/// `a = 0`): from a 0, UPDATE 0 at once, reads 6; from a 5, S1 waits,
/// re-checks (a 0), UPDATE 0, reads 6: S2 then S1 either way.
#[test]
fn gt_beside_a_write_that_keeps_it_false_is_not_reproduced() {
    not_reproduced(BUMP_GT, &writer("a = 0"));
}
