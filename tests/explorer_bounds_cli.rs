//! The confirming search's bounds are the user's (issue 23 item 3: "the
//! transaction bound is the user's to raise"): `--max-txns`,
//! `--max-states` and `--shared-tuples` reach the explorer, and the JSON
//! says which bounds a confirmation was searched within. TPC-C's
//! four-transaction anomaly under snapshot isolation needs 3 shared tuples
//! per relation and about a million states (tests/explorer_split.rs).

use assert_cmd::Command;
use serde_json::Value;

fn check(extra: &[&str]) -> (i32, Value, String) {
    let out = Command::cargo_bin("isolint")
        .expect("binary built")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["check", "workloads/courseware", "--format", "json"])
        .args(extra)
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), v, err)
}

/// Courseware is not robust (Table 2), so its one witness carries a
/// confirmation with the bounds it was searched within.
#[test]
fn the_search_bounds_are_the_users() {
    let (code, v, err) = check(&[]);
    assert_eq!(code, 1, "{err}");
    let b = &v["witnesses"][0]["confirmation"]["bounds"];
    assert_eq!(b["max_states"], 200_000, "the default: {b}");
    assert_eq!(b["tuples_per_relation"], 2, "the default: {b}");
    let (code, v, err) = check(&["--max-states", "5000", "--shared-tuples", "3"]);
    assert_eq!(code, 1, "{err}");
    let b = &v["witnesses"][0]["confirmation"]["bounds"];
    assert_eq!(b["max_states"], 5000, "{b}");
    assert_eq!(b["tuples_per_relation"], 3, "{b}");
}

/// Out of range: a usage error (exit 2) naming the flag and its range,
/// no verdict.
#[test]
fn a_bound_out_of_range_is_a_usage_error() {
    let (code, v, err) = check(&["--shared-tuples", "9"]);
    assert_eq!(code, 2, "{v}");
    assert!(
        err.contains("--shared-tuples") && err.contains("1..=4"),
        "{err}"
    );
    let (code, _, err) = check(&["--max-states", "5"]);
    assert_eq!(code, 2);
    assert!(err.contains("--max-states"), "{err}");
}
