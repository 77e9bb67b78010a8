//! Issue 23: "confirmed" must be a schedule PostgreSQL can produce. A keyed
//! UPDATE/DELETE whose WHERE has conjuncts beyond its key that are not
//! equalities to values — `AND a < 3`, `AND lk IS NULL`, `AND a <> 3`, `AND
//! a <> :x` — is the branch (write | key sel of the extra columns), as with
//! `flag = 1` (tests/explorer_epq_delete.rs). Before, the explorer ignored
//! such a condition: the write ran whenever its key matched, the no-match
//! branch read the row's column; beside a write that keeps the condition
//! false (or that PostgreSQL waits for and re-checks), a delete, or `a = a +
//! 1`, it "confirmed" schedules whose outcome on PostgreSQL is serial. Now
//! a test of a column against a constant is evaluated per version (truth
//! slots, `explorer::unevaluated`); any other form is confirmed only where
//! its truth cannot change under the schedule, else "in the model only".
//!
//! Checked on PostgreSQL 15.20 with two psql sessions (READ COMMITTED;
//! `t (id int PRIMARY KEY, a int, lk timestamptz, v int NOT NULL)`, `u (id
//! int PRIMARY KEY, v int NOT NULL)`, row t 2, row u (3, 0); S2 writes row 2
//! and holds it, S1 runs its statement, S2 commits):
//!
//! ```text
//! t 2 before   S2 holds                S1 runs                    S1
//! a 1          SET v = 7               UPDATE … AND a < 3         waits, UPDATE 1 (v 8)
//! a 1          SET a = 5               UPDATE … AND a < 3         waits, UPDATE 0
//! a 2          SET a = a + 1           UPDATE … AND a < 3         waits, UPDATE 0
//! a 5          SET a = 0               UPDATE … AND a < 3         no wait, UPDATE 0
//! a 5          SET v = 7               UPDATE … AND a < 3         no wait, UPDATE 0
//! a 1          DELETE                  UPDATE … AND a < 3         waits, UPDATE 0
//! lk NULL      SET lk = now()          UPDATE … AND lk IS NULL    waits, UPDATE 0
//! lk NULL      SET v = 7               UPDATE … AND lk IS NULL    waits, UPDATE 1
//! lk set       SET lk = NULL           UPDATE … AND lk IS NULL    no wait, UPDATE 0
//! v 0          SET v = 3               DELETE … AND v <> 3        waits, DELETE 0
//! v 3          SET a = 9               DELETE … AND v <> 3        no wait, DELETE 0
//! ```
//!
//! The same rule as for equalities: the whole WHERE on the snapshot's
//! version, a matching row held by another transaction waited for and
//! re-checked on its latest version (EvalPlanQual), a non-matching row
//! not waited for.

#[path = "common/workdir.rs"]
mod workdir;
use workdir::workload;
#[path = "common/explorer.rs"]
mod explorer;
use explorer::{confirmed_with_values, model_only, search, search_model};

use isolint::analysis::explorer::Schedule;
use isolint::frontend::Loaded;
use isolint::model::provenance::{Cmp, Test};

const SCHEMA: &str = "CREATE TABLE t (id int PRIMARY KEY, a int, lk timestamptz, v int NOT NULL);
CREATE TABLE u (id int PRIMARY KEY, v int NOT NULL);
";

/// Bump the row if `a < 3`, then read a counter.
const BUMP_LT: &str = "UPDATE t SET v = v + 1 WHERE id = :k AND a < 3;
SELECT v FROM u WHERE id = :j;
";

/// Bump the row if it is not locked, then read a counter.
const BUMP_FREE: &str = "UPDATE t SET v = v + 1 WHERE id = :k AND lk IS NULL;
SELECT v FROM u WHERE id = :j;
";

/// Delete the row if `a <> 3`, then read a counter.
const DEL_NE: &str = "DELETE FROM t WHERE id = :k AND a <> 3;
SELECT v FROM u WHERE id = :j;
";

/// Bump the counter, then write the row with `set` (`a = 5`, …).
fn writer(set: &str) -> String {
    format!("UPDATE u SET v = v + 1 WHERE id = :j;\nUPDATE t SET {set} WHERE id = :k;\n")
}

fn pair(first: &str, second: &str) -> Loaded {
    workload(SCHEMA, &[("S1.sql", first), ("S2.sql", second)])
}

fn confirmed(s: &Option<Schedule>) -> bool {
    s.as_ref()
        .is_some_and(|s| s.model_only.is_none() && s.values.is_some())
}

/// The model has a cycle of the pair, the search with values confirms none.
fn not_confirmed(l: &Loaded) {
    assert!(!workdir::robust_of(l), "the static verdict");
    assert!(
        search_model(l, &["S1", "S2"]).is_some(),
        "the model's cycle"
    );
    let s = search(l, &["S1", "S2"]);
    assert!(
        !confirmed(&s),
        "confirmed with values: PostgreSQL's outcome is a serial one"
    );
}

/// S1 = BumpLt beside S2 = `SET a = 5` (the condition becomes false). On
/// PostgreSQL 15.20, t (2, a 1), u (3, 0):
///
/// ```text
/// S2: BEGIN; UPDATE u SET v = v + 1 WHERE id = 3;                 -- UPDATE 1
/// S2: UPDATE t SET a = 5 WHERE id = 2;                            -- UPDATE 1
/// S1: BEGIN; UPDATE t SET v = v + 1 WHERE id = 2 AND a < 3;          -- waits
/// S2: COMMIT;
/// S1: UPDATE 0 (re-checks row 2: a 5); SELECT v FROM u WHERE id = 3;    -- 1
/// S1: COMMIT;
/// ```
///
/// S2 then S1. With a 4 at first S1 does not wait (UPDATE 0) and reads 1
/// after S2's commit, or 0 before it: S2 then S1, or S1 then S2 — `SET a =
/// 5` keeps `a < 3` false, so S1's no-match depends on nothing S2 does.
/// Before, "confirmed": S1's no-match read the old `a` beside S2's pending
/// write (rw), S2's counter after (wr).
#[test]
fn lt_beside_a_write_that_keeps_it_false_is_not_confirmed() {
    not_confirmed(&pair(BUMP_LT, &writer("a = 5")));
}

/// The control: S2 sets `a = 0` (the condition becomes true). On
/// PostgreSQL 15.20, t (2, a 4), u (3, 0):
///
/// ```text
/// S2: BEGIN; UPDATE u SET v = v + 1 WHERE id = 3;                 -- UPDATE 1
/// S2: UPDATE t SET a = 0 WHERE id = 2;                            -- UPDATE 1
/// S1: BEGIN; UPDATE t SET v = v + 1 WHERE id = 2 AND a < 3;
///            -- UPDATE 0 at once: a 4 on its snapshot, no wait
/// S2: COMMIT;
/// S1: SELECT v FROM u WHERE id = 3;                                    -- 1
/// S1: COMMIT;                                    final: t (2, a 0, v 0), u 1
/// ```
///
/// S2 then S1 would bump the row (a 0), S1 then S2 would read 0: a real
/// anomaly.
#[test]
fn lt_beside_a_write_that_makes_it_true_is_confirmed() {
    let l = pair(BUMP_LT, &writer("a = 0"));
    confirmed_with_values(&l, &["S1", "S2"]);
}

/// S1 = BumpFree beside S2 locking the row with a literal timestamp. On
/// PostgreSQL 15.20, t (2, lk NULL), u (3, 0): S1 waits for S2's lock,
/// re-checks (lk set), UPDATE 0, then reads 1 — S2 then S1; with lk set at
/// first, S1 does not wait and matches in neither order.
#[test]
fn is_null_beside_a_lock_is_not_confirmed() {
    not_confirmed(&pair(BUMP_FREE, &writer("lk = '2026-11-28'")));
}

/// The control: S2 unlocks (`lk = NULL`). On PostgreSQL 15.20, t (2, lk
/// '2026-11-27'), u (3, 0):
///
/// ```text
/// S2: BEGIN; UPDATE u SET v = v + 1 WHERE id = 3; UPDATE t SET lk = NULL WHERE id = 2;
/// S1: BEGIN; UPDATE t SET v = v + 1 WHERE id = 2 AND lk IS NULL;
///            -- UPDATE 0 at once (locked on its snapshot)
/// S2: COMMIT;
/// S1: SELECT v FROM u WHERE id = 3;                                    -- 1
/// ```
///
/// Neither serial order gives UPDATE 0 with 1.
#[test]
fn is_null_beside_an_unlock_is_confirmed() {
    let l = pair(BUMP_FREE, &writer("lk = NULL"));
    confirmed_with_values(&l, &["S1", "S2"]);
}

/// S1 = DelNe beside S2 setting `a = 3`. On PostgreSQL 15.20, t (2, a 1),
/// u (3, 0): S1's DELETE waits for S2, re-checks (a 3), DELETE 0, then
/// reads 1: S2 then S1 (with a 3 at first: no wait, no match either way).
#[test]
fn ne_beside_a_write_that_makes_it_false_is_not_confirmed() {
    not_confirmed(&pair(DEL_NE, &writer("a = 3")));
}

/// The control: S2 sets `a = 7`. On PostgreSQL 15.20, t (2, a 3), u (3,
/// 0): S1's DELETE 0 at once (a 3 on its snapshot), S2 commits, S1 reads
/// 1; S2 then S1 would delete the row.
#[test]
fn ne_beside_a_write_that_makes_it_true_is_confirmed() {
    let l = pair(DEL_NE, &writer("a = 7"));
    confirmed_with_values(&l, &["S1", "S2"]);
}

/// The counter read first, then the conditional UPDATE, after S2 made the
/// condition false and committed. On PostgreSQL 15.20, t (2, a 1), u (3, 0):
///
/// ```text
/// S1: BEGIN; SELECT v FROM u WHERE id = 3;                             -- 0
/// S2: BEGIN; UPDATE u SET v = v + 1 WHERE id = 3; UPDATE t SET a = 5 WHERE id = 2;
/// S2: COMMIT;
/// S1: UPDATE t SET v = v + 1 WHERE id = 2 AND a < 3;              -- UPDATE 0
/// S1: COMMIT;
/// ```
///
/// S1 then S2 would bump the row, S2 then S1 would read 1: a real anomaly
/// (the no-match branch reading S2's version).
#[test]
fn lt_after_a_committed_write_that_makes_it_false_is_confirmed() {
    let peek = "SELECT v FROM u WHERE id = :j;
UPDATE t SET v = v + 1 WHERE id = :k AND a < 3;
";
    let l = pair(peek, &writer("a = 5"));
    confirmed_with_values(&l, &["S1", "S2"]);
}

/// A no-match branch beside a DELETE of its row: on PostgreSQL 15.20 S1
/// either waits for the delete and finds nothing (S2 then S1), or does
/// not match on its snapshot and would not match after the delete either
/// — every outcome serial. Before, "confirmed" (S1's read of `a`, rw, to
/// S2's delete). Both with a test (evaluated) and with a parameter (not
/// evaluated: in the model only, with the reason).
#[test]
fn no_match_beside_a_delete_is_not_confirmed() {
    let kill = "UPDATE u SET v = v + 1 WHERE id = :j;\nDELETE FROM t WHERE id = :k;\n";
    not_confirmed(&pair(BUMP_LT, kill));
    let bump_param = "UPDATE t SET v = v + 1 WHERE id = :k AND a <> :x;
SELECT v FROM u WHERE id = :j;
";
    let l = pair(bump_param, kill);
    let why = model_only(&l, &["S1", "S2"]);
    assert!(why.contains("deletes the row"), "{why}");
}

/// A write the values cannot evaluate against the test stays in the model:
/// `a = a + 1` against `a < 3` (on PostgreSQL 15.20 S1 waits for S2's
/// increment and re-checks: from a 2, UPDATE 0, S2 then S1; a no-match on
/// the snapshot stays one after the increment). Before, "confirmed".
#[test]
fn a_write_the_test_cannot_evaluate_stays_in_the_model() {
    let l = pair(BUMP_LT, &writer("a = a + 1"));
    let why = model_only(&l, &["S1", "S2"]);
    assert!(why.contains("cannot evaluate"), "{why}");
}

/// `now()` and `CURRENT_TIMESTAMP` are never NULL: against `lk IS NULL`
/// they make it false. On PostgreSQL 15.20 (t (2, lk NULL), u (3, 0)) S1's
/// UPDATE waits for S2's `SET lk = now()`, re-checks, UPDATE 0, then reads
/// 1: S2 then S1 (with lk set at first: no match in either order). Before,
/// "confirmed".
#[test]
fn is_null_beside_a_lock_at_now_is_not_confirmed() {
    for set in ["lk = now()", "lk = CURRENT_TIMESTAMP"] {
        not_confirmed(&pair(BUMP_FREE, &writer(set)));
    }
}

/// The control: `lk IS NOT NULL` made true by `SET lk = now()`. On
/// PostgreSQL 15.20, t (2, lk NULL), u (3, 0):
///
/// ```text
/// S2: BEGIN; UPDATE u SET v = v + 1 WHERE id = 3; UPDATE t SET lk = now() WHERE id = 2;
/// S1: BEGIN; DELETE FROM t WHERE id = 2 AND lk IS NOT NULL;
///            -- DELETE 0 at once (lk NULL on its snapshot)
/// S2: COMMIT;
/// S1: SELECT v FROM u WHERE id = 3;                                    -- 1
/// ```
///
/// S2 then S1 would delete the row, S1 then S2 would read 0.
#[test]
fn is_not_null_beside_a_lock_at_now_is_confirmed() {
    let del_locked = "DELETE FROM t WHERE id = :k AND lk IS NOT NULL;
SELECT v FROM u WHERE id = :j;
";
    let l = pair(del_locked, &writer("lk = now()"));
    confirmed_with_values(&l, &["S1", "S2"]);
}

/// A condition with a parameter (`a <> :x`) is not evaluated; where no
/// other statement writes its column it holds or fails in every version,
/// so the write beside a write of another column stays confirmed. On
/// PostgreSQL 15.20, t (2, a 1, v 0), u (3, 0), :x = 3:
///
/// ```text
/// S1: BEGIN; SELECT v FROM u WHERE id = 3;                             -- 0
/// S2: BEGIN; UPDATE u SET v = v + 1 WHERE id = 3; UPDATE t SET v = 7 WHERE id = 2;
/// S2: COMMIT;
/// S1: UPDATE t SET v = v + 1 WHERE id = 2 AND a <> 3;   -- UPDATE 1 (v 8)
/// S1: COMMIT;
/// ```
///
/// S1 then S2 would leave v 7, S2 then S1 would read 1. With the UPDATE
/// first and a write of its column (`SET a = :y`) beside it, the pair is in
/// the model only — a real anomaly there, lost, not invented: with a 3 =
/// :x, S1's UPDATE 0 at once, S2's `a = 7` committed, S1 reads 1.
#[test]
fn a_parameter_condition_is_confirmed_only_where_its_column_is_unwritten() {
    let peek = "SELECT v FROM u WHERE id = :j;
UPDATE t SET v = v + 1 WHERE id = :k AND a <> :x;
";
    let l = pair(peek, &writer("v = 7"));
    confirmed_with_values(&l, &["S1", "S2"]);
    let bump = "UPDATE t SET v = v + 1 WHERE id = :k AND a <> :x;
SELECT v FROM u WHERE id = :j;
";
    let l = pair(bump, &writer("a = :y"));
    let why = model_only(&l, &["S1", "S2"]);
    assert!(why.contains("is not an equality to a value"), "{why}");
}

/// What the front-end records (`Provenance::tests`): the tests of the
/// write and its no-match key sel, a constant on the left flipped; nothing
/// where a conjunct is not such a test.
#[test]
fn the_tests_of_keyed_writes_are_recorded() {
    let of = |sql: &str| {
        let l = workload(SCHEMA, &[("P.sql", sql)]);
        let n = l.workload.programs[0].statements.len();
        (0..n)
            .map(|q| l.provenance.tests(0, q).map(<[_]>::to_vec))
            .collect::<Vec<_>>()
    };
    let (a, lk) = (1, 2);
    let lt = Some(vec![(a, Test::Cmp(Cmp::Lt, "3".into()))]);
    assert_eq!(of(BUMP_LT), [lt.clone(), lt, None]);
    let gt = Some(vec![(a, Test::Cmp(Cmp::Gt, "3".into()))]);
    let flipped = "UPDATE t SET v = 1 WHERE id = :k AND 3 < a;";
    assert_eq!(of(flipped), [gt.clone(), gt]);
    let null = Some(vec![
        (lk, Test::Null(true)),
        (a, Test::Cmp(Cmp::Ne, "-1".into())),
    ]);
    let both = "DELETE FROM t WHERE id = :k AND lk IS NULL AND a <> -1;";
    assert_eq!(of(both), [null.clone(), null]);
    for sql in [
        "UPDATE t SET v = 1 WHERE id = :k AND a <> :x;",
        "UPDATE t SET v = 1 WHERE id = :k AND a < 3 AND a + v > 2;",
        "UPDATE t SET v = 1 WHERE id = :k AND a = :x AND a < 3;",
    ] {
        assert!(of(sql).iter().all(Option::is_none), "{sql}");
    }
}

/// The counter read first, then the UPDATE, after S2 made the condition
/// true (`a = 2`, from 5) and committed. On PostgreSQL 15.20, t (2, a 5, v
/// 0), u (3, 0):
///
/// ```text
/// S1: BEGIN; SELECT v FROM u WHERE id = 3;                             -- 0
/// S2: BEGIN; UPDATE u SET v = v + 1 WHERE id = 3; UPDATE t SET a = 2 WHERE id = 2;
/// S2: COMMIT;
/// S1: UPDATE t SET v = v + 1 WHERE id = 2 AND a < 3;              -- UPDATE 1
/// S1: COMMIT;
/// ```
///
/// S1 then S2 would find no match (a 5), S2 then S1 would read 1: a real
/// anomaly, which needs `a` at least 3 at first — the schedule's values say
/// so (`a = 3`). From a 1 the same interleaving has the outcome of S1 then
/// S2 (S1 observed only that `a < 3` held, which S2 did not change): the
/// UPDATE's evaluation of its condition is a predicate read of its row,
/// not a read of `a` (which made that schedule a dependency cycle too).
#[test]
fn a_write_that_makes_the_condition_true_before_the_update_is_confirmed() {
    let peek = "SELECT v FROM u WHERE id = :j;
UPDATE t SET v = v + 1 WHERE id = :k AND a < 3;
";
    let l = pair(peek, &writer("a = 2"));
    let s = confirmed_with_values(&l, &["S1", "S2"]);
    let t = explorer::written(&s, "S1", "t");
    assert_eq!(explorer::row_value(&s, t, "a").as_deref(), Some("3"));
}

/// Item 2's shape: S1's WITH updates the row if `a < 3` and reads the
/// counter in the same statement (one snapshot). On PostgreSQL 15.20, t (2,
/// a 1), u (3, 0):
///
/// ```text
/// S2: BEGIN; UPDATE u SET v = v + 1 WHERE id = 3; UPDATE t SET a = 5 WHERE id = 2;
/// S1: BEGIN; WITH j AS (UPDATE t SET v = v + 1 WHERE id = 2 AND a < 3 RETURNING id)
///            SELECT v, (SELECT count(*) FROM j) FROM u WHERE id = 3;    -- waits
/// S2: COMMIT;
/// S1: 0 | 0 (the snapshot's counter; the re-check of row 2: a 5, no row)
/// ```
///
/// S1 then S2 would give 0 | 1, S2 then S1 1 | 0: a real anomaly of two
/// transactions, which needs the later part's re-check on the latest
/// version (before, neither branch was enabled there: found only through
/// three transactions). With `SET a = 2` (the condition stays true) S1
/// waits and updates the row: the outcome of S1 then S2, not confirmed.
#[test]
fn a_later_part_that_stops_matching_is_rechecked() {
    use isolint::analysis::explorer::Bounds;
    use isolint::model::isolation::Level;
    let with = "WITH j AS (UPDATE t SET v = v + 1 WHERE id = :k AND a < 3 RETURNING id)
SELECT v FROM u WHERE id = :j;
";
    let two = Bounds {
        max_txns: 2,
        ..Bounds::default()
    };
    let at_two = |set: &str| {
        let l = pair(with, &writer(set));
        let s = explorer::search_at(&l, &l.provenance, &["S1", "S2"], Level::ReadCommitted, two);
        confirmed(&s)
    };
    assert!(at_two("a = 5"), "not confirmed with two transactions");
    assert!(
        !at_two("a = 2"),
        "confirmed: PostgreSQL's outcome is S1 then S2"
    );
}
