//! Issue 23 (h23-bench): replay of programs whose path the application
//! decides anew at every visit (isolint.yaml `choices:`; BenchBase's
//! procedures, extracted as `LOOP IF :c1 THEN … ELSIF :c2 THEN … END IF;
//! EXIT WHEN :done; END LOOP`), and seeding fixes found on BenchBase.
//! One throwaway server per test (a Unix socket in a temp dir, no TCP
//! port); the tests skip, saying why, on a machine without PostgreSQL
//! binaries (tests/common/postgres.rs).
#![cfg(feature = "postgres")]

use serde_json::Value;

#[path = "common/postgres.rs"]
mod postgres;
#[path = "common/replay.rs"]
mod replay;
use replay::check_json;
#[path = "common/workdir.rs"]
mod workdir;
use workdir::dir as workload_dir;

const ACCT: &str = "CREATE TABLE acct (id int PRIMARY KEY, v int NOT NULL);";

use replay::{CHOICES, INC};

/// With `choices:` the replay follows the explorer's two-iteration
/// schedule: T1 = Inc updating row k (one iteration), T2 = Inc reading
/// row k in its first iteration, before T1 commits, and again in its
/// second, after (a non-repeatable read). Before, replay picked :c1,
/// :c2, :done once, so T2 read in every iteration (`done` false: the
/// loop never ended, stopped after 1,000 iterations) or once (`done`
/// true): never the schedule.
///
/// By hand on PostgreSQL 15.20 (two psql sessions, acct (1, 2), both
/// READ COMMITTED): T1 `UPDATE acct SET v = 6 + 1 WHERE id = 1`; T2
/// `SELECT v … WHERE id = 1` → 2; T1 COMMIT; T2 `SELECT v` → 7; COMMIT.
/// Serially T2 reads 7 twice (T1 first) or 2 twice (T2 first): no
/// serial order.
#[test]
fn choices_follow_a_two_iteration_schedule() {
    let Some(s) = postgres::server() else { return };
    let d = workload_dir(ACCT, CHOICES, &[("Inc.sql", INC)]);
    let pg = &replay::reproduced(d.path(), &s.conninfo(), &[]);
    // Some transaction ran a statement in two iterations: the schedule
    // needs a choice taken anew.
    let trace = replay::strings(pg, "trace");
    let twice = ["T1", "T2"].iter().any(|t| {
        trace
            .iter()
            .filter(|l| l.starts_with(&format!("{t}: ")))
            .count()
            >= 2
    });
    assert!(twice, "a two-iteration schedule: {trace:?}");
}

/// Control: the same workload without `choices:` — the replay picks every
/// parameter once, so the two-iteration schedule cannot be followed and
/// nothing is reproduced (the executor never invents a path for a
/// parameter a real program keeps).
#[test]
fn without_choices_the_schedule_is_not_reproduced() {
    let Some(s) = postgres::server() else { return };
    let d = workload_dir(ACCT, "", &[("Inc.sql", INC)]);
    let v = replay::not_robust(d.path(), &["--postgres", &s.conninfo()]);
    let pg = &v["witnesses"][0]["postgres"];
    assert_ne!(pg["status"], "reproduced", "{pg}");
}

/// Robust control: the read `FOR UPDATE` (a locking read: the writer
/// waits for the reader's commit) — robust, with `choices:` too; nothing
/// is replayed, nothing reproduced.
#[test]
fn a_locking_read_stays_robust_with_choices() {
    let Some(s) = postgres::server() else { return };
    let locked = INC.replace(
        "WHERE id = :k;\n  ELSIF",
        "WHERE id = :k FOR UPDATE;\n  ELSIF",
    );
    assert_ne!(locked, INC);
    let d = workload_dir(ACCT, CHOICES, &[("Inc.sql", &locked)]);
    let (code, v, err) = check_json(d.path(), &["--postgres", &s.conninfo()]);
    assert_eq!(code, 0, "robust: {v} {err}");
    assert_eq!(v["witnesses"].as_array().map_or(0, Vec::len), 0, "{v}");
}

/// `choices:` is for replay only: the static verdict, cycles and fix are
/// the same with and without it (the BTPs already take every path).
#[test]
fn choices_leave_the_analysis_unchanged() {
    // One directory (the output names it), the manifest rewritten.
    let d = workload_dir(ACCT, CHOICES, &[("Inc.sql", INC)]);
    let (c1, v1, e1) = check_json(d.path(), &["--no-confirm"]);
    std::fs::write(d.path().join("isolint.yaml"), "schema: schema.sql\n").expect("manifest");
    let (c2, v2, e2) = check_json(d.path(), &["--no-confirm"]);
    assert_eq!((c1, c2), (1, 1), "{e1} {e2}");
    assert_eq!(v1, v2);
}

/// A choice no program mentions is a load error naming it (a typo would
/// leave replay picking the value once, silently).
#[test]
fn an_unknown_choice_is_an_error() {
    let d = workload_dir(ACCT, "choices: [c1, dnoe]\n", &[("Inc.sql", INC)]);
    let (code, _, err) = check_json(d.path(), &["--no-confirm"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("dnoe"), "{err}");
}

// ---------------------------------------------------------------------
// Seeding (BenchBase auctionmark, wikipedia).
// ---------------------------------------------------------------------

/// A non-repeatable read of a row of `t`: Audit reads row a twice, Move
/// updates it. Not robust; the explorer's schedule (Audit reads, Move
/// updates and commits, Audit reads again) is the shape checked by hand
/// on PostgreSQL 15.20 for the acct pair above (the second read sees the
/// committed write, the first does not: no serial order).
const AUDIT: &str = "
SELECT v INTO :x FROM t WHERE id = :a;
SELECT v INTO :y FROM t WHERE id = :a;
";
const MOVE: &str = "UPDATE t SET v = v + 1 WHERE id = :a;";
/// Robust control: Audit reads the row once.
const AUDIT_ONE: &str = "SELECT v INTO :x FROM t WHERE id = :a;";

fn replayed(schema: &str, audit: &str) -> (i32, Value, String) {
    let Some(s) = postgres::server() else {
        return (-2, Value::Null, String::new());
    };
    let d = workload_dir(schema, "", &[("Audit.sql", audit), ("Move.sql", MOVE)]);
    check_json(d.path(), &["--postgres", &s.conninfo()])
}

/// Seeding a row of a table with a self-referencing foreign key
/// (auctionmark's `category.c_parent_id`): the made-up parent went after
/// its child, and itself needed a made-up parent ("violates foreign key
/// constraint"). Nullable: the unpinned parent column is NULL. NOT NULL:
/// the parent is seeded first and references itself (PostgreSQL accepts a
/// row that is its own parent: the check runs after the insert).
#[test]
fn a_self_referencing_foreign_key_seeds() {
    for parent in ["int", "int NOT NULL"] {
        let schema = format!(
            "CREATE TABLE t (id int PRIMARY KEY, v int NOT NULL, \
             parent {parent} REFERENCES t (id));"
        );
        let (code, v, err) = replayed(&schema, AUDIT);
        if code == -2 {
            return;
        }
        assert_eq!(code, 1, "not robust: {v} {err}");
        let pg = &v["witnesses"][0]["postgres"];
        assert_eq!(pg["status"], "reproduced", "parent {parent}: {pg}");
    }
    // Robust control: one snapshot, nothing replayed.
    let schema = "CREATE TABLE t (id int PRIMARY KEY, v int NOT NULL, \
                  parent int NOT NULL REFERENCES t (id));";
    let (code, v, err) = replayed(schema, AUDIT_ONE);
    if code == -2 {
        return;
    }
    assert_eq!(code, 0, "robust: {v} {err}");
}

/// Defaults a seed row cannot use (wikipedia's `useracct`): a literal
/// `'\0…'` of 28 characters in a `varchar(14)` ("value too long" on every
/// insert that leaves the column out: PostgreSQL 15 by hand, `INSERT INTO
/// t (id, v) VALUES (1, 1)` fails so), and a constant default of a unique
/// column (two seed rows — the row and its made-up parent — collide on
/// `name = ''`: by hand too). Both now get made-up values; the
/// non-repeatable read is reproduced.
#[test]
fn unusable_defaults_get_made_up_values() {
    let schema = "CREATE TABLE t (id int PRIMARY KEY, v int NOT NULL, \
                  parent int NOT NULL REFERENCES t (id), \
                  name varchar(255) NOT NULL DEFAULT '' UNIQUE, \
                  touched varchar(14) NOT NULL DEFAULT '\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0', \
                  made timestamptz NOT NULL DEFAULT now());";
    let (code, v, err) = replayed(schema, AUDIT);
    if code == -2 {
        return;
    }
    assert_eq!(code, 1, "not robust: {v} {err}");
    let pg = &v["witnesses"][0]["postgres"];
    assert_eq!(pg["status"], "reproduced", "{pg}");
}
