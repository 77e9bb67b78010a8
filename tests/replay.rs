//! `isolint replay` on a real PostgreSQL (issue 11, parts 3 and 5). Each
//! test starts a throwaway server with the installed binaries (the code
//! behind `--postgres-temp`) and skips, saying why, only when there are
//! none. The CLI runs against that server by URL, so the test can check
//! afterwards that no scratch schema is left.
#![cfg(feature = "postgres")]

use std::path::Path;

use assert_cmd::Command;
use isolint::analysis::explorer::{confirm, Bounds, Confirmation};
use isolint::analysis::graph::Settings;
use isolint::analysis::progress::Silent;
use isolint::analysis::robustness::Method;
use isolint::model::isolation::Level;
use isolint::replay::run::End;
use isolint::replay::server::Server;

#[path = "common/postgres.rs"]
mod postgres;
use isolint::replay::witness::{replay, Verdict};
use postgres::server;

/// The scratch schemas left on `s` (there must be none after a replay).
fn scratch_schemas(s: &Server) -> Vec<String> {
    let mut c = s.connect().expect("connect");
    c.query(
        "SELECT nspname::text FROM pg_namespace WHERE nspname LIKE 'isolint_replay_%'",
        &[],
    )
    .expect("query pg_namespace")
    .iter()
    .map(|r| r.get(0))
    .collect()
}

fn isolint() -> Command {
    Command::cargo_bin("isolint").expect("binary")
}

/// SmallBank's Balance / Amalgamate witness (Section 7.1, the read skew
/// of docs/explorer.md). Amalgamate(N, N) on one customer: it zeroes the
/// savings and the checking balance (`RETURNING` gives the new, zero,
/// values, so `:a + :b` is 0) and commits; Balance(N) read the savings
/// balance before that commit and the checking balance after it. So
/// Balance sees (seeded savings, 0.00), while serially it sees (0.00,
/// 0.00) after Amalgamate or (seeded savings, seeded checking) before
/// it: no serial order gives its reads.
#[test]
fn smallbank_witness_is_reproduced_at_read_committed() {
    let Some(s) = server() else { return };
    let loaded = isolint::frontend::load(Path::new("workloads/smallbank"), None).expect("load");
    let w = &loaded.workload;
    let f = isolint::analysis::analyze_with(w, Settings::default(), Method::TypeII, false, &Silent);
    let sources = loaded.sources.as_ref().expect("SQL sources");
    let mut reproduced = 0;
    for x in &f.witnesses {
        let Confirmation::Confirmed(sch) = confirm(w, &f.graph, x, Bounds::default()) else {
            continue;
        };
        let names: Vec<&str> = sch.transactions.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["Amalgamate", "Balance"]);
        let r = replay(
            &s,
            sources,
            w,
            &loaded.provenance,
            &f.graph,
            &sch,
            &vec![Level::ReadCommitted; sch.transactions.len()],
        )
        .expect("replay");
        assert_eq!(r.verdict, Verdict::Reproduced, "notes: {:?}", r.notes);
        let (p, o) = (
            r.plan.as_ref().expect("plan"),
            r.outcome.as_ref().expect("outcome"),
        );
        assert!(o.ends.iter().all(|e| *e == End::Committed));
        // One customer: both of Amalgamate's names and Balance's are one.
        let name = |t: usize, k: &str| p.txns[t].params[k].text.clone();
        assert_eq!(name(0, "n1"), name(0, "n2"));
        assert_eq!(name(0, "n1"), name(1, "n"));
        let seeded = |table: &str| {
            p.seed
                .iter()
                .find(|r| r.table == table)
                .and_then(|r| r.values.iter().find(|(c, _)| c == "balance"))
                .and_then(|(_, v)| v.text.clone())
                .expect("seeded balance")
        };
        // Balance's reads: savings (initial version), checking (T1's).
        let read = |k: usize| o.observed[1][k].rows[0][0].text.clone().unwrap_or_default();
        assert_eq!(
            read(1).parse::<f64>().ok(),
            seeded("savings").parse::<f64>().ok()
        );
        assert_ne!(seeded("savings").parse::<f64>().ok(), Some(0.0));
        assert_eq!(read(2), "0.00");
        reproduced += 1;
    }
    assert_eq!(reproduced, 1, "SmallBank has one confirmed witness");
    assert!(scratch_schemas(&s).is_empty());
}

/// The same schedule at SERIALIZABLE (and REPEATABLE READ): Balance reads
/// both balances from the snapshot of its first statement, before
/// Amalgamate commits, which is the serial order Balance, Amalgamate.
#[test]
fn smallbank_witness_is_not_reproduced_at_serializable() {
    let Some(s) = server() else { return };
    let out = isolint()
        .args([
            "replay",
            "workloads/smallbank",
            "--level",
            "serializable",
            "--postgres",
        ])
        .arg(s.conninfo())
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("not reproduced on PostgreSQL")
            && text.contains("the outcome equals the serial order T2, T1"),
        "{text}"
    );
    assert!(scratch_schemas(&s).is_empty());
}

/// The CLI end to end: exit 1 and the verdict line.
#[test]
fn cli_reproduces_smallbank_and_exits_1() {
    let Some(s) = server() else { return };
    let out = isolint()
        .args(["replay", "workloads/smallbank", "--postgres"])
        .arg(s.conninfo())
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("witness 1: Amalgamate / Balance"), "{text}");
    assert!(
        text.contains("reproduced on PostgreSQL") && text.contains("not serializable"),
        "{text}"
    );
    let json = isolint()
        .args([
            "replay",
            "workloads/smallbank",
            "--format",
            "json",
            "--postgres",
        ])
        .arg(s.conninfo())
        .output()
        .expect("run");
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    assert_eq!(v["witnesses"][0]["reproduced"], true);
    assert!(scratch_schemas(&s).is_empty());
}

/// Auction is robust (Table 2 and Figure 6 with FK constraints): no
/// schedule of it is non-serializable (Definition 3.1), so no random
/// interleaving may show an outcome that no serial order gives.
#[test]
fn robust_auction_shows_no_anomaly_in_random_replay() {
    let Some(s) = server() else { return };
    let out = isolint()
        .args([
            "replay",
            "workloads/auction",
            "--random",
            "25",
            "--seed",
            "7",
            "--postgres",
        ])
        .arg(s.conninfo())
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("25 rounds of 3 transactions"), "{text}");
    assert!(text.contains("no anomaly"), "{text}");
    assert!(text.contains("0 stopped otherwise"), "{text}");
    assert!(scratch_schemas(&s).is_empty());
}

#[test]
fn bad_url_is_a_clear_error() {
    let out = isolint()
        .args([
            "replay",
            "workloads/smallbank",
            "--postgres",
            "host=/tmp port=x",
        ])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot parse the PostgreSQL URL"), "{err}");
}

#[test]
fn no_server_is_a_clear_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = isolint()
        .args(["replay", "workloads/smallbank", "--postgres"])
        .arg(format!(
            "host={} port=1 user=postgres dbname=postgres",
            dir.path().display()
        ))
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot connect to PostgreSQL"), "{err}");
}

#[test]
fn btp_yaml_has_nothing_to_replay() {
    let out = isolint()
        .args([
            "replay",
            "workloads/smallbank.yaml",
            "--postgres",
            "host=/nonexistent",
        ])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("has no SQL to run"));
}

/// DDL that isolint reads but PostgreSQL rejects (an unknown type): exit
/// 2 with PostgreSQL's message at the line, and no schema left behind.
#[test]
fn ddl_postgres_rejects_is_located() {
    let Some(s) = server() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    std::fs::write(p.join("isolint.yaml"), "schema: schema.sql\n").expect("write");
    std::fs::write(
        p.join("schema.sql"),
        "CREATE TABLE A (\n    id INTEGER PRIMARY KEY,\n    v  FANCYTYPE NOT NULL\n);\n",
    )
    .expect("write");
    std::fs::write(
        p.join("P.sql"),
        "UPDATE A SET v = v WHERE id = :i;\nCOMMIT;\n",
    )
    .expect("write");
    let out = isolint()
        .arg("replay")
        .arg(p)
        .arg("--postgres")
        .arg(s.conninfo())
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("PostgreSQL rejected the schema DDL"), "{err}");
    assert!(err.contains("schema.sql:3:"), "{err}");
    assert!(err.contains("\"fancytype\" does not exist"), "{err}");
    assert!(scratch_schemas(&s).is_empty());
}

/// The setup of the executor tests: a scratch schema with table A(id, v),
/// the seed row A(2, 5), and `program` (a `.sql` program) parsed.
fn table_a<'s>(
    s: &'s Server,
    program: &str,
) -> (
    isolint::replay::scratch::Scratch<'s>,
    Vec<isolint::replay::run::SeedRow>,
    Vec<isolint::frontend::sql::ast::Node>,
) {
    use isolint::model::error::SourceFile;
    use isolint::replay::value::Val;
    let ddl = SourceFile::new(
        "schema.sql",
        "CREATE TABLE A (id INTEGER PRIMARY KEY, v INTEGER NOT NULL);\n",
    );
    let program = SourceFile::new("T.sql", program);
    let nodes = isolint::frontend::sql::procedural::parse_program(&program).expect("parse");
    let scratch = isolint::replay::scratch::Scratch::create(s, &ddl).expect("scratch");
    let seed = vec![isolint::replay::run::SeedRow {
        table: "a".into(),
        values: vec![
            ("id".into(), Val::untyped("2")),
            ("v".into(), Val::untyped("5")),
        ],
    }];
    (scratch, seed, nodes)
}

/// An instance of the program with `:k` = `k`.
fn txn_k(
    nodes: &[isolint::frontend::sql::ast::Node],
    k: &str,
    observe_conditions: bool,
) -> isolint::replay::run::Txn {
    use isolint::replay::value::Val;
    isolint::replay::run::Txn {
        name: format!("T(k = {k})"),
        program: std::sync::Arc::new(nodes.to_vec()),
        params: [("k".to_string(), Val::untyped(k))].into_iter().collect(),
        observe_conditions,
        choices: None,
        declared: Default::default(),
    }
}

/// The executor's control flow, by hand: T(:k) reads A's row k (FOUND),
/// inserts it with v = 0 when missing, adds 1 in a loop until v ≥ 3, then
/// multiplies by 10 if v = 3 and deletes the row otherwise. Row 1 is
/// missing: SELECT, INSERT, three UPDATEs, the × 10: A(1, 30). Row 2
/// holds 5: SELECT, one UPDATE (6 ≥ 3 exits), DELETE: no row 2.
#[test]
fn executor_follows_control_flow() {
    use isolint::replay::run::run;
    let Some(s) = server() else { return };
    let (mut scratch, seed, nodes) = table_a(
        &s,
        "SELECT v INTO :v FROM A WHERE id = :k;
IF NOT FOUND THEN
    INSERT INTO A VALUES (:k, 0);
    :v := 0;
END IF;
LOOP
    UPDATE A SET v = v + 1 WHERE id = :k;
    :v := :v + 1;
    EXIT WHEN :v >= 3;
END LOOP;
IF :v = 3 THEN
    UPDATE A SET v = v * 10 WHERE id = :k;
ELSE
    DELETE FROM A WHERE id = :k;
END IF;
",
    );
    let txn = |k: &str| txn_k(&nodes, k, false);
    let verbs = |o: &isolint::replay::run::Outcome| -> Vec<String> {
        o.observed[0]
            .iter()
            .map(|r| r.source.split(' ').next().unwrap_or("").to_string())
            .collect()
    };
    let o = run(
        &mut scratch,
        &seed,
        &[txn("1")],
        Level::ReadCommitted,
        &mut |_| None,
    )
    .expect("run");
    assert_eq!(o.ends, [End::Committed]);
    assert_eq!(
        verbs(&o),
        ["SELECT", "INSERT", "UPDATE", "UPDATE", "UPDATE", "UPDATE"]
    );
    let rows: Vec<Vec<Option<String>>> = o.state[0]
        .1
        .iter()
        .map(|r| r.iter().map(|v| v.text.clone()).collect())
        .collect();
    assert_eq!(
        rows,
        [
            vec![Some("1".to_string()), Some("30".to_string())],
            vec![Some("2".to_string()), Some("5".to_string())]
        ]
    );
    let o = run(
        &mut scratch,
        &seed,
        &[txn("2")],
        Level::ReadCommitted,
        &mut |_| None,
    )
    .expect("run");
    assert_eq!(o.ends, [End::Committed]);
    assert_eq!(verbs(&o), ["SELECT", "UPDATE", "DELETE"]);
    assert!(o.state[0].1.is_empty());
    drop(scratch);
    assert!(scratch_schemas(&s).is_empty());
}

/// Conditions and RAISE arguments that read tables are observations of
/// their own when the driver asks (random replay does): a front-end that
/// dropped such a read could otherwise never be caught by comparing runs.
/// Row 2 holds 5: the IF condition reads 5 > 0 (true), the NOTICE
/// argument reads 5, then the UPDATE; unobserved, only the UPDATE shows.
#[test]
fn conditions_and_raise_arguments_are_observed() {
    use isolint::replay::run::run;
    let Some(s) = server() else { return };
    let (mut scratch, seed, nodes) = table_a(
        &s,
        "IF (SELECT v FROM A WHERE id = :k) > 0 THEN
    RAISE NOTICE 'v is %', (SELECT v FROM A WHERE id = :k);
END IF;
UPDATE A SET v = v + 1 WHERE id = :k;
",
    );
    let mut seen = |observe: bool| -> Vec<(String, Vec<Vec<Option<String>>>)> {
        let o = run(
            &mut scratch,
            &seed,
            &[txn_k(&nodes, "2", observe)],
            Level::ReadCommitted,
            &mut |_| None,
        )
        .expect("run");
        assert_eq!(o.ends, [End::Committed]);
        o.observed[0]
            .iter()
            .map(|r| {
                (
                    r.source.clone(),
                    r.rows
                        .iter()
                        .map(|row| row.iter().map(|v| v.text.clone()).collect())
                        .collect(),
                )
            })
            .collect()
    };
    let on = seen(true);
    assert_eq!(on.len(), 3, "{on:?}");
    assert_eq!(on[0].0, "(SELECT v FROM A WHERE id = :k) > 0");
    assert_eq!(on[0].1, [vec![Some("t".to_string())]]);
    assert_eq!(on[1].0, "(SELECT v FROM A WHERE id = :k)");
    assert_eq!(on[1].1, [vec![Some("5".to_string())]]);
    assert!(on[2].0.starts_with("UPDATE"));
    let off = seen(false);
    assert_eq!(off.len(), 1, "{off:?}");
    assert!(off[0].0.starts_with("UPDATE"));
}

/// Random replay is not blind: on SmallBank's Balance and Amalgamate
/// alone (the witness's programs), some rounds interleave Amalgamate's
/// commit between Balance's two balance reads of the same customer, the
/// read skew above. The seed is fixed, so the rounds are the same on every
/// run (with seed 1, round 11 is the first such since issue 23's drawn
/// rounds changed the random sequence; seed 3 found round 6 before); the
/// assertion is only that the random replay reports at least one
/// non-serializable round.
#[test]
fn random_replay_finds_the_read_skew() {
    let Some(s) = server() else { return };
    let out = isolint()
        .args([
            "replay",
            "tests/fixtures/replay/read-skew",
            "--random",
            "20",
            "--random-txns",
            "2",
            "--seed",
            "1",
            "--postgres",
        ])
        .arg(s.conninfo())
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("rounds not serializable"), "{text}");
    assert!(scratch_schemas(&s).is_empty());
}

/// The same witness from PL/pgSQL routines over a pg_dump schema: the
/// executor runs the routines' bodies (variables as `:name`), and the
/// dump's `SET`, `set_config('search_path', …)`, `OWNER TO` and `public.`
/// qualifiers do not take the tables out of the scratch schema.
#[test]
fn smallbank_plpgsql_over_pg_dump_is_reproduced() {
    let Some(s) = server() else { return };
    let out = isolint()
        .args(["replay", "workloads/smallbank-plpgsql", "--postgres"])
        .arg(s.conninfo())
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("not serializable"), "{text}");
    assert!(scratch_schemas(&s).is_empty());
    // Nothing landed in public either.
    let mut c = s.connect().expect("connect");
    let n: i64 = c
        .query_one(
            "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public'",
            &[],
        )
        .expect("count")
        .get(0);
    assert_eq!(n, 0);
}
