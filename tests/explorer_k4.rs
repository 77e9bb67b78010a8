//! Issue 23, item 3: "the transaction bound is the user's to raise, and is
//! raised where a cycle needs more instances". A cycle whose anomaly needs
//! one program twice (TPC-C under snapshot isolation needs two NewOrders)
//! is searched with the repeat once k allows it, and when k does not, the
//! answer says which flag to raise (`explorer::more_txns_hint`).
//!
//! The fixture is TPC-C's shape made small. At REPEATABLE READ (snapshot
//! isolation):
//!
//! - `P(:k)` reads the hub row every P locks (`FOR UPDATE`), bumps it,
//!   and writes the value it read into slot `:k` (NewOrder: the district
//!   counter and stock; two Ps are serialised on the hub, so the later one
//!   reads the earlier one's count, and its slot shows it);
//! - `Q` reads slot 1 and credits account 2 (Delivery: it reads one
//!   district and credits the customer of another);
//! - `R(:k)` reads account `:k` and slot `:k` (OrderStatus).
//!
//! The anomaly: Q reads slot 1; P1 (k = 1) writes slot 1 and commits; P2
//! (k = 2) starts after, reads P1's count and writes it into slot 2, commits; R (k = 2)
//! reads account 2 (before Q's credit) and slot 2 (P2's); Q credits
//! account 2 and commits. Q -rw-> P1 -wr-> P2 -wr-> R -rw-> Q: Q before P1
//! (it missed slot 1), P1 before P2, P2 before R, R before Q (it missed the
//! credit): no serial order. With one P it cannot close: Q's edge to P
//! needs k = 1, P's edge to R needs R to read P's slot (k = 1), R's edge to
//! Q needs account 2 (k = 2). Nor with three: two Ps or two Qs are
//! serialised on the hub or account 2, two Rs write nothing. So four
//! transactions, one program twice (the schedule is the read-only anomaly
//! of Fekete, O'Neil and O'Neil, SIGMOD Record 2004, with the writer split
//! in two). P writes the count it read into its slot so that the order of
//! the two Ps is seen: with `SET n = n + 1` and `SET v = v + 1` alone the
//! schedule is a conflict cycle whose reads and final state equal the
//! serial order P2, R, Q, P1. Run on PostgreSQL 15.20 by
//! `isolint check --max-txns 4 --postgres-temp` (the explorer's schedule,
//! replayed): reproduced, no serial order gives the same reads and final
//! state (tests/replay_split.rs,
//! `four_transaction_anomaly_is_reproduced_at_repeatable_read`).
//!
//! Control, one line changed: Q reads slot 2. Then one P (k = 2) closes the
//! cycle Q -rw-> P -wr-> R -rw-> Q with three transactions (the read-only
//! anomaly itself), and k = 3 confirms it.

use assert_cmd::Command;
use serde_json::Value;

#[path = "common/split_fixtures.rs"]
mod split_fixtures;
use split_fixtures::{HUB as SCHEMA, HUB_P as P, HUB_Q as Q, HUB_R as R};

const LEVELS: &str = "P=repeatable-read,Q=repeatable-read,R=repeatable-read";

/// `isolint check --format json` on the fixture with Q's text `q`: the
/// exit code and the first witness's confirmation.
fn check(q: &str, extra: &[&str]) -> (i32, Value) {
    let d = tempfile::tempdir().expect("tempdir");
    let write = |n: &str, t: &str| std::fs::write(d.path().join(n), t).expect("write");
    write("schema.sql", SCHEMA);
    write("isolint.yaml", "schema: schema.sql\n");
    write("P.sql", P);
    write("Q.sql", q);
    write("R.sql", R);
    let out = Command::cargo_bin("isolint")
        .expect("binary built")
        .args(["check", "--format", "json", "--levels", LEVELS])
        .arg(d.path())
        .args(extra)
        .output()
        .expect("runs");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    let c = v["witnesses"][0]["confirmation"].clone();
    (out.status.code().unwrap_or(-1), c)
}

fn with_values(c: &Value) -> bool {
    c["status"] == "confirmed" && c["with_values"] == true
}

fn transactions(c: &Value) -> usize {
    c["schedule"]["transactions"].as_array().map_or(0, Vec::len)
}

fn description(c: &Value) -> String {
    match &c["description"] {
        Value::Array(lines) => lines
            .iter()
            .map(|l| l.as_str().unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\n"),
        other => other.to_string(),
    }
}

/// k = 3: the three-program cycle is not confirmed with values, and the
/// answer names the flag that searches the sets with P twice.
#[test]
fn a_cycle_needing_a_program_twice_names_the_flag() {
    let (code, c) = check(Q, &["--max-txns", "3"]);
    assert_eq!(code, 1, "not robust at REPEATABLE READ: {c}");
    assert!(!with_values(&c), "{c}");
    let text = description(&c);
    assert!(text.contains("raise --max-txns to 4"), "{text}");
}

/// k = 4: the sets covering the cycle with P twice are searched first,
/// and the four-transaction schedule is confirmed with values.
#[test]
fn raised_k_confirms_the_four_transaction_anomaly() {
    let (code, c) = check(Q, &["--max-txns", "4"]);
    assert_eq!(code, 1);
    assert!(with_values(&c), "{c}");
    assert_eq!(transactions(&c), 4, "{c}");
    let names: Vec<&str> = c["schedule"]["transactions"]
        .as_array()
        .expect("transactions")
        .iter()
        .filter_map(|t| t["program"].as_str())
        .collect();
    assert_eq!(names.iter().filter(|&&n| n == "P").count(), 2, "{names:?}");
}

/// Control: Q reads slot 2, one P suffices; k = 3 confirms it with three
/// transactions and gives no hint to raise k.
#[test]
fn control_needs_no_repeat() {
    let q = Q.replace("WHERE id = 1", "WHERE id = 2");
    let (code, c) = check(&q, &["--max-txns", "3"]);
    assert_eq!(code, 1);
    assert!(with_values(&c), "{c}");
    assert_eq!(transactions(&c), 3, "{c}");
    assert!(!description(&c).contains("--max-txns"), "{c}");
}
