//! `isolint invariants` (issue 25): invariants stated as SQL, checked at
//! load with PostgreSQL's parser; the search on a throwaway PostgreSQL
//! (skipped, saying so, without the binaries, as tests/replay.rs does).
//!
//! Expected verdicts come from reasoning written next to each test, and
//! the SmallBank write skew was run by hand in two psql sessions
//! (schedule in `smallbank_variant_breaks_at_repeatable_read`).
#![cfg(feature = "postgres")]

use std::path::Path;

use assert_cmd::Command;
use serde_json::Value;

#[path = "common/postgres.rs"]
mod postgres;
use postgres::server;

fn isolint() -> Command {
    Command::cargo_bin("isolint").expect("binary")
}

/// `isolint invariants DIR --postgres URL ARGS --format json`: (exit, JSON).
fn search(url: &str, dir: &Path, args: &[&str]) -> (i32, Value) {
    let out = isolint()
        .arg("invariants")
        .arg(dir)
        .args(["--postgres", url, "--format", "json"])
        .args(args)
        .output()
        .expect("run isolint");
    let text = String::from_utf8_lossy(&out.stdout);
    let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {text}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), v)
}

fn verdict(v: &Value, name: &str) -> String {
    v["invariants"]
        .as_array()
        .and_then(|a| a.iter().find(|i| i["name"] == name))
        .map(|i| i["verdict"].as_str().unwrap_or("").to_string())
        .unwrap_or_else(|| panic!("no invariant {name} in {v}"))
}

fn programs_of_counterexample(v: &Value, name: &str) -> Vec<String> {
    let inv = v["invariants"]
        .as_array()
        .and_then(|a| a.iter().find(|i| i["name"] == name))
        .expect("invariant");
    inv["counterexample"]["transactions"]
        .as_array()
        .expect("transactions")
        .iter()
        .map(|t| {
            let n = t["name"].as_str().unwrap_or("");
            n.split(" = ").nth(1).unwrap_or(n).to_string()
        })
        .collect()
}

/// A workload directory in a temporary directory.
fn workload(schema: &str, manifest: &str, files: &[(&str, &str)]) -> tempfile::TempDir {
    let d = tempfile::tempdir().expect("tempdir");
    std::fs::write(d.path().join("schema.sql"), schema).expect("write");
    std::fs::write(
        d.path().join("isolint.yaml"),
        format!("schema: schema.sql\n{manifest}"),
    )
    .expect("write");
    for (n, t) in files {
        let p = d.path().join(n);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(p, t).expect("write");
    }
    d
}

const ACCOUNTS: &str =
    "CREATE TABLE Checking (CustomerID INTEGER PRIMARY KEY, Balance NUMERIC(12, 2) NOT NULL);\n";

// ---------------------------------------------------------------- load

/// Bad invariants are located errors at load, for every command (exit 2):
/// a syntax error (PostgreSQL's message), a statement that is not one
/// SELECT, a table the schema does not have. Control: the same manifest
/// with a good query loads and `check` gives its verdict.
#[test]
fn bad_invariants_are_located_errors_at_load() {
    let prog = [(
        "Deposit.sql",
        "UPDATE Checking SET Balance = Balance + :V WHERE CustomerID = :c;\nCOMMIT;\n",
    )];
    let cases = [
        (
            "invariants:\n  broken: \"SELECT bool_and(Balance >= 0 FROM Checking\"\n",
            "syntax error",
        ),
        (
            "invariants:\n  writes: \"UPDATE Checking SET Balance = 0\"\n",
            "is not a SELECT",
        ),
        (
            "invariants:\n  two: \"SELECT true; SELECT false\"\n",
            "is 2 statements",
        ),
        (
            "invariants:\n  elsewhere: \"SELECT bool_and(b >= 0) FROM Savings\"\n",
            "not a table of the schema",
        ),
        (
            "invariants:\n  locks: \"SELECT bool_and(Balance >= 0) FROM Checking FOR UPDATE\"\n",
            "takes row locks",
        ),
    ];
    for (manifest, expected) in cases {
        let d = workload(ACCOUNTS, manifest, &prog);
        let out = isolint().arg("check").arg(d.path()).output().expect("run");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{manifest}: {err}");
        assert!(
            err.contains(expected),
            "{manifest}: expected `{expected}` in {err}"
        );
        // Line 3: the helper writes `schema:` on line 1.
        assert!(
            err.contains("isolint.yaml:3:"),
            "{manifest}: not located: {err}"
        );
    }
    // Control: a good invariant loads; Deposit alone is robust (exit 0).
    let d = workload(
        ACCOUNTS,
        "invariants:\n  ok: \"SELECT bool_and(Balance >= 0) FROM Checking\"\n",
        &prog,
    );
    let out = isolint().arg("check").arg(d.path()).output().expect("run");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// An SQL invariants file (`-- invariant: name` before each query) is read
/// with its names; an error in it is located in that file.
#[test]
fn invariants_file_in_sql() {
    let prog = [
        (
            "Deposit.sql",
            "UPDATE Checking SET Balance = Balance + :V WHERE CustomerID = :c;\nCOMMIT;\n",
        ),
        (
            "rules/inv.sql",
            "-- invariant: non_negative\nSELECT bool_and(Balance >= 0) FROM Checking;\n-- invariant: bad\nSELECT bool_and(Balance >= 0 FROM Checking;\n",
        ),
    ];
    let d = workload(ACCOUNTS, "invariants_file: rules/inv.sql\n", &prog);
    let out = isolint().arg("check").arg(d.path()).output().expect("run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    // PostgreSQL's cursor: the `FROM` where `)` was expected.
    assert!(
        err.contains("syntax error") && err.contains("inv.sql:4:30"),
        "{err}"
    );
}

// ---------------------------------------------------------------- SmallBank

/// The SmallBank variant (workloads/smallbank-invariant): WriteCheck and
/// TransactSavings withdraw only when checking + savings covers the
/// amount, deposits are non-negative. Serially every withdrawal keeps
/// the sum ≥ 0 (it checks the sum it is about to reduce), so the serial
/// search must find nothing (`serial_complete`, not `broken_serially`).
/// At READ COMMITTED two withdrawals that both read a sum of 2 and take
/// 2 each break it (both TransactSavings: the second UPDATE re-reads the
/// row, EvalPlanQual, but not the check before it).
#[test]
fn smallbank_variant_breaks_at_read_committed_not_serially() {
    let Some(s) = server() else { return };
    let (code, v) = search(
        &s.conninfo(),
        Path::new("workloads/smallbank-invariant"),
        &["--instances", "2"],
    );
    assert_eq!(code, 1, "{v}");
    assert_eq!(verdict(&v, "total_non_negative"), "broken", "{v}");
    assert_eq!(v["bounds"]["serial_complete"], true, "{v}");
    assert!(v["bounds"]["serial_runs"].as_u64().unwrap_or(0) > 0, "{v}");
}

/// At REPEATABLE READ, two withdrawals of one row conflict (the second
/// fails to serialize), so the break needs two rows: WriteCheck (checking)
/// beside TransactSavings (savings), write skew. Run by hand on
/// PostgreSQL 15 (seed: customer 1 with checking 1, savings 1):
///   S1: BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT balance FROM savings WHERE customerid = 1; -- 1
///       SELECT balance FROM checking WHERE customerid = 1; -- 1
///   S2: BEGIN ISOLATION LEVEL REPEATABLE READ; (same two reads) -- 1, 1
///   S1: UPDATE savings SET balance = balance - 2 WHERE customerid = 1; COMMIT;
///   S2: UPDATE checking SET balance = balance - 2 WHERE customerid = 1; COMMIT;
///   → checking -1, savings -1: the sum is -2 (both serial orders refuse
///   the second withdrawal: the sum is 0 < 2 by then).
#[test]
fn smallbank_variant_breaks_at_repeatable_read() {
    let Some(s) = server() else { return };
    let (code, v) = search(
        &s.conninfo(),
        Path::new("workloads/smallbank-invariant"),
        &["--level", "repeatable-read", "--instances", "2"],
    );
    assert_eq!(code, 1, "{v}");
    assert_eq!(verdict(&v, "total_non_negative"), "broken", "{v}");
    let mut progs = programs_of_counterexample(&v, "total_non_negative");
    progs.sort();
    assert_eq!(progs, ["TransactSavings", "WriteCheck"], "{v}");
    // The same driver actions, run again, break it again.
    assert_eq!(
        v["invariants"][0]["counterexample"]["replayed"], true,
        "{v}"
    );
}

/// At the lowest robust allocation (`isolint allocate`: every program of
/// this variant SERIALIZABLE) every execution is serializable, and every
/// serial run keeps the invariant: the whole bounded search must find
/// nothing, and run to its end within the budget.
#[test]
fn smallbank_variant_holds_at_the_robust_allocation() {
    let Some(s) = server() else { return };
    let out = isolint()
        .args([
            "allocate",
            "workloads/smallbank-invariant",
            "--format",
            "json",
        ])
        .output()
        .expect("run");
    let a: Value = serde_json::from_slice(&out.stdout).expect("json");
    let levels = robust_levels(&a);
    assert!(!levels.is_empty(), "{a}");
    let (code, v) = search(
        &s.conninfo(),
        Path::new("workloads/smallbank-invariant"),
        &[
            "--levels",
            &levels,
            "--instances",
            "2",
            "--time-budget",
            "600",
        ],
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        verdict(&v, "total_non_negative"),
        "held_within_bounds",
        "{v}"
    );
    assert_eq!(v["bounds"]["complete"], true, "{v}");
    assert!(
        v["bounds"]["interleavings"].as_u64().unwrap_or(0) > 0,
        "{v}"
    );
}

/// `PROG=LEVEL,…` from `allocate --format json` (`isolation.as_is`).
fn robust_levels(a: &Value) -> String {
    a["isolation"]["as_is"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(p, l)| {
                    let l = l
                        .as_str()
                        .unwrap_or("")
                        .to_ascii_lowercase()
                        .replace(' ', "-");
                    format!("{p}={l}")
                })
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default()
}

// ---------------------------------------------------------------- Courseware

/// Courseware (CAV 2019): "no student is enrolled in a removed course".
/// Serially RemoveCourse(2) sees EnrollStudent's row (or EnrollStudent
/// does not find course 2), so no serial run breaks it. Below its robust
/// allocation (`isolint allocate`: EnrollStudent and RemoveCourse
/// SERIALIZABLE), EnrollStudent(s, 2) reads course 2 while RemoveCourse(2)
/// counts no enrolment of course 2, and both commit: at READ COMMITTED
/// and at REPEATABLE READ alike (the two write different tables, so no
/// row lock or first-updater rule stops either). Run by hand on
/// PostgreSQL 15 at REPEATABLE READ from the workload's seed:
///   S1: BEGIN; SELECT name FROM student WHERE id = 2; SELECT title FROM course WHERE id = 2; -- 'c2'
///   S2: BEGIN; SELECT count(*) FROM enrolled WHERE course_id = 2; -- 0
///   S1: INSERT INTO enrolled VALUES (2, 2);
///   S2: DELETE FROM course WHERE id = 2; COMMIT;
///   S1: COMMIT;   → enrolled (2, 2) names no course: the invariant is false.
#[test]
fn courseware_broken_below_its_robust_allocation() {
    let Some(s) = server() else { return };
    for level in ["read-committed", "repeatable-read"] {
        let (code, v) = search(
            &s.conninfo(),
            Path::new("workloads/courseware"),
            &["--level", level, "--instances", "4"],
        );
        assert_eq!(code, 1, "{level}: {v}");
        assert_eq!(
            verdict(&v, "enrolled_course_exists"),
            "broken",
            "{level}: {v}"
        );
        let mut progs = programs_of_counterexample(&v, "enrolled_course_exists");
        progs.sort();
        assert_eq!(progs, ["EnrollStudent", "RemoveCourse"], "{level}: {v}");
    }
}

// ---------------------------------------------------------------- fixtures

/// A transfer between two checking accounts beside a balance query: the
/// static test alarms (Total reads account :a before Transfer and :b
/// after it: read skew, a dangerous cycle), but the stated invariant —
/// the money in the bank is constant, 2 with the seed — holds: each
/// UPDATE adds to the row's latest version under its row lock, so no
/// interleaving loses or makes money. The control is `check`'s exit 1.
#[test]
fn alarm_without_a_broken_invariant() {
    let files = [
        (
            "Transfer.sql",
            "UPDATE Checking SET Balance = Balance - :V WHERE CustomerID = :a;\nUPDATE Checking SET Balance = Balance + :V WHERE CustomerID = :b;\nCOMMIT;\n",
        ),
        (
            "Total.sql",
            "SELECT Balance INTO :x FROM Checking WHERE CustomerID = :a;\nSELECT Balance INTO :y FROM Checking WHERE CustomerID = :b;\nCOMMIT;\n",
        ),
        (
            "data/seed.sql",
            "INSERT INTO Checking VALUES (1, 1), (2, 1);\n",
        ),
    ];
    let d = workload(
        ACCOUNTS,
        "invariants:\n  money_is_constant: \"SELECT sum(Balance) = 2 FROM Checking\"\ninvariants_seed: data/seed.sql\n",
        &files,
    );
    let out = isolint().arg("check").arg(d.path()).output().expect("run");
    assert_eq!(out.status.code(), Some(1), "the static test must alarm");
    let Some(s) = server() else { return };
    let (code, v) = search(&s.conninfo(), d.path(), &["--instances", "4"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        verdict(&v, "money_is_constant"),
        "held_within_bounds",
        "{v}"
    );
    assert_eq!(v["bounds"]["complete"], true, "{v}");
    assert_eq!(
        v["bounds"]["read_only_left_out"],
        serde_json::json!(["Total"]),
        "{v}"
    );
}

/// A withdrawal without a check: one serial run of Withdraw(1, 2) on a
/// balance of 1 leaves -1, so "balances are non-negative" is a property
/// the program does not have — reported as broken serially, not as an
/// isolation problem. Control: a second invariant the program keeps
/// (customer ids stay positive) holds.
#[test]
fn serial_run_breaks_the_invariant() {
    let Some(s) = server() else { return };
    let files = [
        (
            "Withdraw.sql",
            "UPDATE Checking SET Balance = Balance - :V WHERE CustomerID = :c;\nCOMMIT;\n",
        ),
        (
            "data/seed.sql",
            "INSERT INTO Checking VALUES (1, 1), (2, 1);\n",
        ),
    ];
    let d = workload(
        ACCOUNTS,
        "invariants:\n  non_negative: \"SELECT bool_and(Balance >= 0) FROM Checking\"\n  ids_positive: \"SELECT bool_and(CustomerID > 0) FROM Checking\"\ninvariants_seed: data/seed.sql\n",
        &files,
    );
    let (code, v) = search(&s.conninfo(), d.path(), &[]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(verdict(&v, "non_negative"), "broken_serially", "{v}");
    assert_eq!(verdict(&v, "ids_positive"), "held_within_bounds", "{v}");
}

/// A seed that breaks an invariant is said so, and the invariant is not
/// searched (exit 1: it is not held).
#[test]
fn seed_breaking_an_invariant_is_reported() {
    let Some(s) = server() else { return };
    let files = [
        (
            "Deposit.sql",
            "UPDATE Checking SET Balance = Balance + 1 WHERE CustomerID = :c;\nCOMMIT;\n",
        ),
        ("data/seed.sql", "INSERT INTO Checking VALUES (1, -5);\n"),
    ];
    let d = workload(
        ACCOUNTS,
        "invariants:\n  non_negative: \"SELECT bool_and(Balance >= 0) FROM Checking\"\ninvariants_seed: data/seed.sql\n",
        &files,
    );
    let (code, v) = search(&s.conninfo(), d.path(), &[]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(verdict(&v, "non_negative"), "false_on_seed", "{v}");
    // The Markdown form says the same.
    let out = isolint()
        .arg("invariants")
        .arg(d.path())
        .args(["--postgres", &s.conninfo(), "--format", "markdown"])
        .output()
        .expect("run");
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(
        md.contains("| `non_negative` | false on the seed data"),
        "{md}"
    );
}

/// `allocate --invariants` on the SmallBank variant. The robust
/// allocation puts every program at SERIALIZABLE. Balance only reads (no
/// committed state changes with it): READ COMMITTED. DepositChecking only
/// adds a non-negative amount, which never lowers a sum another
/// transaction checked: READ COMMITTED holds. TransactSavings lowered to
/// REPEATABLE READ beside WriteCheck at SERIALIZABLE: PostgreSQL checks
/// rw-conflicts only for SERIALIZABLE writers and readers, so the
/// REPEATABLE READ side of the write skew is invisible to SSI and the
/// skew commits — it stays SERIALIZABLE; WriteCheck likewise.
#[test]
fn allocate_with_invariants_lowers_what_the_invariant_allows() {
    let Some(s) = server() else { return };
    let out = isolint()
        .args([
            "allocate",
            "workloads/smallbank-invariant",
            "--invariants",
            "--postgres",
        ])
        .arg(s.conninfo())
        .args([
            "--instances",
            "2",
            "--time-budget",
            "120",
            "--format",
            "json",
        ])
        .output()
        .expect("run");
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(out.status.code(), Some(0), "{v}");
    assert_eq!(v["bounded"], true);
    let level = |p: &str, key: &str| -> String {
        v["programs"]
            .as_array()
            .and_then(|a| a.iter().find(|x| x["name"] == p))
            .map(|x| x[key].as_str().unwrap_or("").to_string())
            .unwrap_or_default()
    };
    for p in [
        "Balance",
        "DepositChecking",
        "TransactSavings",
        "WriteCheck",
    ] {
        assert_eq!(level(p, "robust"), "SERIALIZABLE", "{p}: {v}");
    }
    assert_eq!(level("Balance", "invariants"), "READ COMMITTED", "{v}");
    assert_eq!(
        level("DepositChecking", "invariants"),
        "READ COMMITTED",
        "{v}"
    );
    assert_eq!(
        level("TransactSavings", "invariants"),
        "SERIALIZABLE",
        "{v}"
    );
    assert_eq!(level("WriteCheck", "invariants"), "SERIALIZABLE", "{v}");
}
