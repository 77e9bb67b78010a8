//! Issue 23's remaining acceptance items on bundled TPC-C: plain `check`
//! (default bounds) confirms the cycle with values, and the value search
//! orders the component's transaction sets cheapest first within one
//! budget (src/analysis/explorer/mod.rs `confirm_values`).
//!
//! The anomaly, run by hand on PostgreSQL 15.20 (two psql sessions, READ
//! COMMITTED; Warehouse 3, District (2, 3), Customer (1, 2, 3) balance 0,
//! Order (4, 2, 3, customer 1, carrier NULL), NewOrder (4, 2, 3), one
//! OrderLine of order 4 with amount 5):
//! T2 (Delivery, district 2) `SELECT MIN(NO_O_ID)` → 4;
//! T1 (OrderStatus by id) `SELECT C_BALANCE … C_ID = 1` → 0.00;
//! T2 DELETE NewOrder 4, UPDATE Order 4 carrier 7, UPDATE its OrderLine,
//! SUM → 5.00, UPDATE Customer 1 balance + 5; COMMIT;
//! T1 `SELECT … FROM "Order" … O_C_ID = 1` → (4, carrier 7), its line
//! delivered; COMMIT. T1 saw the balance before Delivery and the carrier
//! after it: serially, OrderStatus first sees carrier NULL and Delivery
//! first balance 5.00 — not serializable.

use std::path::Path;

use assert_cmd::Command;
use isolint::analysis::analyze;
use isolint::analysis::explorer::{confirm, explore_in, verify, Bounds, Confirmation};
use isolint::analysis::graph::{build, Settings, SummaryGraph};
use isolint::analysis::robustness::Method;
use isolint::model::isolation::{Allocation, Level};
use serde_json::Value;

fn tpcc() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("workloads")
        .join("tpcc")
        .display()
        .to_string()
}

fn check_json(args: &[&str]) -> Value {
    let out = Command::cargo_bin("isolint")
        .expect("binary")
        .arg("check")
        .arg(tpcc())
        .args(args)
        .args(["--format", "json"])
        .output()
        .expect("run isolint");
    assert_eq!(out.status.code(), Some(1), "TPC-C is not robust (exit 1)");
    serde_json::from_slice(&out.stdout).expect("JSON")
}

fn programs(conf: &Value) -> Vec<String> {
    let mut p: Vec<String> = conf["schedule"]["transactions"]
        .as_array()
        .expect("transactions")
        .iter()
        .filter_map(|t| t["program"].as_str().map(String::from))
        .collect();
    p.sort();
    p
}

/// Plain `check` with default settings confirms TPC-C's cycle with values
/// (before: "in the model only", the value pass's half budget spent on the
/// witness's two-iteration Delivery sets). Expectation: the hand run
/// above. Control: the same witness confirmed without the front-end's
/// provenance (the BTP model alone) gives a schedule without values — so
/// `with_values` comes from the value search, not a constant.
#[test]
fn check_confirms_tpcc_with_values_by_default() {
    let v = check_json(&[]);
    let conf = &v["witnesses"][0]["confirmation"];
    assert_eq!(conf["status"], "confirmed", "{conf}");
    assert_eq!(conf["with_values"], true, "{conf}");
    assert!(conf["model_only"].is_null(), "{conf}");
    assert_eq!(programs(conf), ["Delivery", "OrderStatus"], "{conf}");

    let l = isolint::frontend::load(Path::new(&tpcc()), None).expect("load");
    let w = &l.workload;
    let f = analyze(w, Settings::default(), Method::TypeII, false);
    let b = Bounds {
        max_states: 200_000,
        ..Bounds::default()
    };
    match confirm(w, &f.graph, &f.witnesses[0], b) {
        Confirmation::Confirmed(s) => assert!(s.values.is_none(), "control: {s:?}"),
        other => panic!("control: the BTP model has a schedule: {other:?}"),
    }
}

fn nodes(g: &SummaryGraph, names: &[&str]) -> Vec<usize> {
    (0..g.nodes.len())
        .filter(|&v| names.contains(&g.nodes[v].name.as_str()))
        .collect()
}

/// OrderStatus by id (`OrderStatus#2`) beside Delivery's two-iteration
/// unfolding, k = 2: found with values, verified, within a small budget
/// (the hand run above). Control (reasoning): with OrderStatus at
/// REPEATABLE READ (one snapshot: it sees Delivery entirely or not at
/// all, and a read-only transaction beside one writer serializes) and
/// Delivery at SERIALIZABLE (two Deliveries: PostgreSQL's SSI), no
/// schedule of these programs is non-serializable — nothing is found.
#[test]
fn order_status_by_id_beside_delivery_within_a_small_budget() {
    let l = isolint::frontend::load(Path::new(&tpcc()), None).expect("load");
    let w = &l.workload;
    let g = build(w, Settings::default());
    let ns = nodes(&g, &["OrderStatus#2", "Delivery#2"]);
    assert_eq!(ns.len(), 2, "the unfoldings exist");
    let b = Bounds {
        max_txns: 2,
        max_states: 20_000,
        ..Bounds::default()
    };
    let rc = Allocation::uniform(w.programs.len(), Level::ReadCommitted);
    let e = explore_in(w, &l.provenance, &g, &ns, b, &rc);
    let s = e.found.expect("a schedule with values");
    assert!(s.values.is_some() && s.model_only.is_none(), "{s:?}");
    assert_eq!(verify(&s), Ok(()));

    let mut strict = rc.clone();
    let p = |n: &str| w.programs.iter().position(|p| p.name == n).expect(n);
    strict.0[p("OrderStatus")] = Level::RepeatableRead;
    strict.0[p("Delivery")] = Level::Serializable;
    let e = explore_in(w, &l.provenance, &g, &ns, b, &strict);
    assert!(e.found.is_none(), "control: {:?}", e.found);
}

// ---------------------------------------------------------------------
// Issue 23: say why a replay is not reproduced. Tests that need a server
// skip, saying why, on a machine without PostgreSQL binaries.

#[cfg(feature = "postgres")]
#[path = "common/postgres.rs"]
mod postgres;

#[cfg(feature = "postgres")]
fn workload_dir(schema: &str, files: &[(&str, &str)]) -> tempfile::TempDir {
    let d = tempfile::tempdir().expect("tempdir");
    std::fs::write(d.path().join("schema.sql"), schema).expect("schema");
    std::fs::write(d.path().join("isolint.yaml"), "schema: schema.sql\n").expect("manifest");
    for (n, t) in files {
        std::fs::write(d.path().join(n), t).expect("program");
    }
    d
}

/// `check --postgres URL --format json`: the first witness's `postgres`.
#[cfg(feature = "postgres")]
fn on_postgres(dir: &Path, url: &str) -> Value {
    let out = Command::cargo_bin("isolint")
        .expect("binary")
        .args(["check", &dir.display().to_string(), "--postgres", url])
        .args(["--format", "json"])
        .output()
        .expect("run isolint");
    assert_eq!(out.status.code(), Some(1), "not robust (exit 1)");
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    v["witnesses"][0]["postgres"].clone()
}

#[cfg(feature = "postgres")]
const T: &str = "CREATE TABLE t (id int PRIMARY KEY, v int NOT NULL CHECK (v <> -5));";

/// A transaction that rolls back says why. Reasoning (PostgreSQL's
/// PL/pgSQL semantics): `:mode` cannot equal two different literals, so
/// every run takes the ELSE branch, and RAISE EXCEPTION aborts the
/// transaction; the static test and the explorer see the UPDATE path (the
/// BTP model takes the IF both ways), so the lost-update cycle is
/// confirmed and replayed, and never reproduced. The answer must name the
/// program's RAISE and the condition that led there, in text and in JSON
/// `stopped`. Control (PostgreSQL, by hand on 15.20: `UPDATE t SET v = -5`
/// fails with SQLSTATE 23514 "new row for relation \"t\" violates check
/// constraint \"t_v_check\""): a program whose UPDATE PostgreSQL refuses
/// reports the server's SQLSTATE, message and statement instead.
#[cfg(feature = "postgres")]
#[test]
fn replay_says_why_a_transaction_did_not_commit() {
    let Some(s) = postgres::server() else { return };
    let raise = "
SELECT v INTO :v FROM t WHERE id = :id;
IF :mode = 'never' AND :mode = 'ever' THEN
  UPDATE t SET v = :v + 1 WHERE id = :id;
ELSE
  RAISE EXCEPTION 'no such mode';
END IF;
";
    let d = workload_dir(T, &[("Bump.sql", raise)]);
    let pg = on_postgres(d.path(), &s.conninfo());
    assert_eq!(pg["status"], "not_reproduced", "{pg}");
    let stopped = pg["stopped"].as_array().expect("stopped");
    assert!(!stopped.is_empty(), "{pg}");
    for x in stopped {
        assert_eq!(x["end"], "rolled_back", "{x}");
        let why = x["why"].as_str().unwrap_or("");
        assert!(
            why.contains("raised an exception") && why.contains(":mode = 'never'"),
            "{why}"
        );
    }
    assert!(
        pg["why"]
            .as_str()
            .unwrap_or("")
            .contains("rolled back: the program raised"),
        "{pg}"
    );

    let refused = "
SELECT v INTO :v FROM t WHERE id = :id;
UPDATE t SET v = -5 WHERE id = :id;
";
    let d = workload_dir(T, &[("Clear.sql", refused)]);
    let pg = on_postgres(d.path(), &s.conninfo());
    assert_eq!(pg["status"], "not_reproduced", "{pg}");
    let stopped = pg["stopped"].as_array().expect("stopped");
    assert!(!stopped.is_empty(), "{pg}");
    for x in stopped {
        assert_eq!(x["end"], "stopped", "{x}");
        assert_eq!(x["sqlstate"], "23514", "{x}");
        assert!(
            x["message"]
                .as_str()
                .unwrap_or("")
                .contains("check constraint"),
            "{x}"
        );
        assert!(
            x["statement"]
                .as_str()
                .unwrap_or("")
                .contains("UPDATE t SET v = -5"),
            "{x}"
        );
    }
}

/// Values of arrays, composites, domains and void come back as PostgreSQL
/// prints them (graphile-worker's `add_job` builds a `job_spec[]` and
/// PERFORMs `pg_notify`; the replay stopped on "error deserializing column
/// 0"). Expectation: the server's own text output (`::text`) of the same
/// value. Control: a type the replay does not read (`point`) is still an
/// error that names it, not a wrong value.
#[cfg(feature = "postgres")]
#[test]
fn arrays_and_composites_read_as_postgres_prints_them() {
    let Some(s) = postgres::server() else { return };
    let mut c = s.connect().expect("connect");
    c.batch_execute(
        "CREATE TYPE spec AS (name text, n smallint, flags text[]);
         CREATE DOMAIN pos AS int CHECK (VALUE > 0);",
    )
    .expect("types");
    for e in [
        "ARRAY[ROW('a b', 1, ARRAY['x', NULL, ''])::spec, ROW(NULL, NULL, NULL)::spec]",
        "ROW('q\"uo\\te', 2, '{}')::spec",
        "ARRAY[[1, 2], [3, 4]]",
        "'[0:1]={7,8}'::int[]",
        "ARRAY['NULL', 'a,b', '{c}']",
        "3::pos",
        "pg_notify('x', 'y')",
    ] {
        let (rows, _) = isolint::replay::executor::query(&mut c, &format!("SELECT ({e})"), &[])
            .unwrap_or_else(|err| panic!("{e}: {err:?}"));
        let got = rows[0].1[0].text.clone().unwrap_or_default();
        let want: String = c
            .query_one(&format!("SELECT ({e})::text"), &[])
            .expect("text")
            .get(0);
        assert_eq!(got, want, "{e}");
    }
    let err = isolint::replay::executor::query(&mut c, "SELECT point(1, 2)", &[])
        .expect_err("control: point is not read");
    assert!(format!("{err:?}").contains("point"), "{err:?}");
}
