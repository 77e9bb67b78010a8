//! Issue 23, items 1 and 5 (h23-range): range predicates with values.
//! `SELECT … WHERE start_date BETWEEN :lo AND :hi AND status = :s`
//! (BenchBase auctionmark's `getDueItems`) was "not instantiated" by the
//! explorer ("reads item.start_date other than by an equality to a
//! value"), so its cycles were "in the model only", and the replay made up
//! `:lo`, `:hi` outside the seeded rows' dates: nothing matched, nothing
//! was reproduced. Now a range whose bounds are parameters nothing else
//! pins, on a column no transaction of the instance writes, is taken to
//! match every row (the bounds bracket the rows: `explorer::values`,
//! `covering`), and the replay gives such bounds the type's extremes
//! (`-infinity` / `infinity`). One throwaway server per replay test; they
//! skip, saying why, without PostgreSQL binaries (tests/common/postgres.rs).
#![cfg(feature = "postgres")]

use std::path::Path;

use assert_cmd::Command;
use serde_json::Value;

#[path = "common/postgres.rs"]
mod postgres;
#[path = "common/workdir.rs"]
mod workdir;
use workdir::dir as workload_dir;

/// `isolint check DIR ARGS --format json`: (exit, JSON, stderr).
fn check_json(dir: &Path, args: &[&str]) -> (i32, Value, String) {
    let out = Command::cargo_bin("isolint")
        .expect("binary")
        .args(["check", &dir.display().to_string()])
        .args(["--format", "json"])
        .args(args)
        .output()
        .expect("run isolint");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), v, err)
}

const ITEM: &str =
    "CREATE TABLE item (id int PRIMARY KEY, start_date timestamp NOT NULL, status int NOT NULL);";

/// The due items of a period, read twice (auctionmark's CloseAuctions
/// runs `getDueItems` in a loop).
const DUE: &str = "
SELECT id FROM item WHERE start_date BETWEEN :lo AND :hi AND status = :s;
SELECT id FROM item WHERE start_date BETWEEN :lo AND :hi AND status = :s;
";
/// auctionmark's `updateItemStatus`.
const CLOSE: &str = "UPDATE item SET status = :new WHERE id = :id;\n";

/// The confirmation of the only witness.
fn confirmation(v: &Value) -> &Value {
    &v["witnesses"][0]["confirmation"]
}

/// A real anomaly: by hand on PostgreSQL 15.20 (two psql sessions, both
/// READ COMMITTED, item (1, '2001-01-04', 2), (4, '2001-01-06', 6)):
/// T1 `BEGIN; UPDATE item SET status = 7 WHERE id = 1`; T2 `BEGIN;
/// SELECT id FROM item WHERE start_date BETWEEN '-infinity' AND
/// 'infinity' AND status = 2` → 1; T1 COMMIT; T2 the same SELECT → no
/// row; COMMIT. Serially T2 reads no row twice (T1 first) or 1 twice (T2
/// first). Before: "in the model only" (the range was not instantiated)
/// and not reproduced (made-up bounds matched no seeded row).
#[test]
fn a_range_read_is_confirmed_with_values_and_reproduced() {
    let Some(s) = postgres::server() else { return };
    let d = workload_dir(ITEM, "", &[("Due.sql", DUE), ("Close.sql", CLOSE)]);
    let (code, v, err) = check_json(d.path(), &["--postgres", &s.conninfo()]);
    assert_eq!(code, 1, "not robust: {v} {err}");
    let c = confirmation(&v);
    assert_eq!(c["status"], "confirmed", "{c}");
    assert_eq!(c["with_values"], true, "{c}");
    let pg = &v["witnesses"][0]["postgres"];
    assert_eq!(pg["status"], "reproduced", "{pg}");
}

/// Control: Due at REPEATABLE READ reads both times from one snapshot;
/// the workload is robust (the static test says so: no witness to
/// replay). By hand on PostgreSQL 15.20, the schedule above with T2 `BEGIN
/// ISOLATION LEVEL REPEATABLE READ` reads 1 twice, as serially T2, T1.
#[test]
fn the_range_reader_at_repeatable_read_is_robust() {
    let d = workload_dir(ITEM, "", &[("Due.sql", DUE), ("Close.sql", CLOSE)]);
    let (code, v, err) = check_json(d.path(), &["--levels", "Due=repeatable-read"]);
    assert_eq!(code, 0, "robust: {v} {err}");
}

/// Control: a reader by key that tests neither the status nor anything
/// Close writes (`id` and `start_date` only) has no conflict with Close:
/// robust, whatever the values.
#[test]
fn a_reader_by_key_of_columns_nobody_writes_is_robust() {
    let by_key = "
SELECT id FROM item WHERE id = :k AND start_date BETWEEN :lo AND :hi;
SELECT id FROM item WHERE id = :k AND start_date BETWEEN :lo AND :hi;
";
    let d = workload_dir(ITEM, "", &[("Due.sql", by_key), ("Close.sql", CLOSE)]);
    let (code, v, err) = check_json(d.path(), &["--no-confirm"]);
    assert_eq!(code, 0, "robust: {v} {err}");
}

/// Literal bounds cannot be chosen: the rows would have to be placed
/// inside them, which the explorer does not do, so the instance is not
/// instantiated and the answer stays "in the model only" (never a
/// "confirmed" with values that assumed every row matches).
#[test]
fn literal_bounds_are_not_taken_to_match_every_row() {
    let due = "
SELECT id FROM item WHERE start_date BETWEEN '2001-01-01' AND '2001-02-01' AND status = :s;
SELECT id FROM item WHERE start_date BETWEEN '2001-01-01' AND '2001-02-01' AND status = :s;
";
    let d = workload_dir(ITEM, "", &[("Due.sql", due), ("Close.sql", CLOSE)]);
    let (code, v, err) = check_json(d.path(), &[]);
    assert_eq!(code, 1, "not robust: {v} {err}");
    let c = confirmation(&v);
    assert_eq!(c["with_values"], false, "{c}");
    let why = c["model_only"].as_str().unwrap_or_default();
    assert!(why.contains("start_date"), "{c}");
}

/// A bound that the transaction also pins (here the key of a row it
/// reads) has a value of its own: the range may exclude rows, so it is
/// not taken to match every row.
#[test]
fn a_bound_pinned_elsewhere_is_not_taken_to_match_every_row() {
    let schema = "CREATE TABLE item (id int PRIMARY KEY, rank int NOT NULL, status int NOT NULL);";
    let due = "
SELECT id FROM item WHERE rank >= :lo AND status = :s;
SELECT status FROM item WHERE id = :lo;
SELECT id FROM item WHERE rank >= :lo AND status = :s;
";
    let d = workload_dir(schema, "", &[("Due.sql", due), ("Close.sql", CLOSE)]);
    let (code, v, err) = check_json(d.path(), &[]);
    assert_eq!(code, 1, "not robust: {v} {err}");
    let c = confirmation(&v);
    assert_eq!(c["with_values"], false, "{c}");
    let why = c["model_only"].as_str().unwrap_or_default();
    assert!(
        why.contains(":lo of Due bounds a range and is also pinned"),
        "{c}"
    );
}

/// A range on a column another transaction writes: a row may leave or
/// enter the range, which bounds at the extremes do not model, so the
/// instance is not instantiated (in the model only).
#[test]
fn a_range_on_a_written_column_is_not_taken_to_match_every_row() {
    let due = "
SELECT id FROM item WHERE start_date < :hi;
SELECT id FROM item WHERE start_date < :hi;
";
    let mv = "UPDATE item SET start_date = :d WHERE id = :id;\n";
    let d = workload_dir(ITEM, "", &[("Due.sql", due), ("Move.sql", mv)]);
    let (code, v, err) = check_json(d.path(), &[]);
    assert_eq!(code, 1, "not robust: {v} {err}");
    let c = confirmation(&v);
    assert_eq!(c["with_values"], false, "{c}");
    let why = c["model_only"].as_str().unwrap_or_default();
    assert!(
        why.contains("reads item.start_date other than by an equality"),
        "{c}"
    );
}
