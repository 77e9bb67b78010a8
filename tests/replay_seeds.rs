//! Issue 23, item 5 (h23-replay3): replay's seed rows and the types it
//! binds with.
//!
//! 1. `isolint replay` of Fekete's read-only-anomaly workload
//!    (tests/common/split_fixtures.rs) at READ COMMITTED ended "not
//!    reproduced: cannot seed a row of savings … duplicate key": replay
//!    confirmed without the front-end's provenance, so it replayed a
//!    schedule of the BTP model (two Withdraws on one checking row
//!    reading two `savings` rows, although both read `savings WHERE id =
//!    :c` with the same `:c`) instead of `check`'s schedule with values.
//!    Now replay confirms as `check` does, and a schedule whose values
//!    make two rows equal on a key is "not reproduced" with that reason,
//!    before anything is seeded.
//!
//! 2. The routine a program runs is carried from the front-end
//!    (`Sources::routines`: schema, name, parameters with their types,
//!    DECLAREd variables), not parsed back from the program's name by
//!    splitting it at `#`: a routine named `"bump#day"` and overloads
//!    (programs named by signature) now take their declared parameter
//!    types — and so do routines of routine files, which replay never
//!    creates on the server (the old lookup in `pg_proc` found nothing).
//! 3. PL/pgSQL variables hold their declared types: what is assigned to
//!    one is converted as PL/pgSQL converts it (a date, an enum label, a
//!    smallint rounded), where replay used to keep the expression's type
//!    (text, numeric) and stop on the next statement.
//!
//! One throwaway server per test (tests/common/postgres.rs).
#![cfg(feature = "postgres")]

use isolint::analysis::explorer::{explore_set, Bounds};
use isolint::analysis::graph::{build, Settings};
use isolint::model::isolation::{Allocation, Level};
use isolint::model::provenance::Provenance;
use isolint::replay::executor::{Executor, Halt, Step};
use isolint::replay::value::Val;
use isolint::replay::witness::{replay as replay_schedule, Verdict};
use std::collections::BTreeMap;
use std::sync::Arc;

#[path = "common/postgres.rs"]
mod postgres;
#[path = "common/replay.rs"]
mod replay;
#[path = "common/workdir.rs"]
mod workdir;
use workdir::dir as workload_dir;

#[path = "common/split_fixtures.rs"]
mod split_fixtures;
use split_fixtures::{BANK, DEPOSIT, REPORT, WITHDRAW};

fn bank() -> tempfile::TempDir {
    workload_dir(
        BANK,
        "",
        &[
            ("Withdraw.sql", WITHDRAW),
            ("Deposit.sql", DEPOSIT),
            ("Report.sql", REPORT),
        ],
    )
}

/// `isolint replay DIR --postgres URL --format json` (READ COMMITTED,
/// replay's default): its exit code and JSON.
fn replay_json(dir: &std::path::Path, url: &str) -> (i32, serde_json::Value, String) {
    replay::isolint_json("replay", dir, &["--postgres", url])
}

/// Fekete's workload at READ COMMITTED: Report's two reads take two
/// snapshots, so it can read checking before Withdraw's commit and
/// savings after Deposit's: Report before Withdraw, Deposit before
/// Report, and Withdraw (which read savings before the deposit) before
/// Deposit: no serial order. By hand on PostgreSQL 15.20, checking (1, 3),
/// savings (1, 2), three psql sessions at READ COMMITTED: R BEGIN, reads
/// checking → 3; W BEGIN, reads checking → 3, savings → 2, UPDATE checking
/// SET bal = bal - 5, COMMIT; D BEGIN, UPDATE savings SET bal = bal + 4,
/// COMMIT; R reads savings → 6, COMMIT (checking −2, savings 6). `isolint
/// replay` must replay `check`'s schedule with values and say reproduced
/// (before: "not reproduced: cannot seed a row … duplicate key").
#[test]
fn fekete_read_only_workload_is_reproduced_by_replay_at_read_committed() {
    let Some(s) = postgres::server() else { return };
    let d = bank();
    let (code, v, err) = replay_json(d.path(), &s.conninfo());
    let w = &v["witnesses"][0];
    assert_eq!(code, 1, "an anomaly reproduced: {v} {err}");
    assert_eq!(w["reproduced"], true, "{w}");
    assert_eq!(w["level"], "READ COMMITTED", "{w}");
    // `check`'s schedule of the programs with values, not the model's.
    assert!(w["model_only"].is_null(), "{w}");
    let names: Vec<String> = w["transactions"]
        .as_array()
        .expect("transactions")
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect();
    for n in ["Withdraw", "Deposit", "Report"] {
        assert!(names.iter().any(|t| t.contains(n)), "{n}: {names:?}");
    }
    // Report's savings read comes after Deposit's commit, its checking
    // read before Withdraw's commit: the read skew, as run by hand.
    let trace = replay::strings(w, "trace");
    let name_of = |p: &str| {
        names
            .iter()
            .find(|t| t.contains(p))
            .and_then(|t| t.split(' ').next())
            .expect("a name")
            .to_string()
    };
    let (r, wd, dp) = (name_of("Report"), name_of("Withdraw"), name_of("Deposit"));
    let pos = |p: &str| {
        trace
            .iter()
            .position(|t| t.starts_with(p))
            .unwrap_or_else(|| panic!("{p} in {trace:?}"))
    };
    let r_checking = pos(&format!("{r}: SELECT bal INTO :x FROM checking"));
    let r_savings = pos(&format!("{r}: SELECT bal INTO :y FROM savings"));
    let w_commit = pos(&format!("C{}", &wd[1..]));
    let d_commit = pos(&format!("C{}", &dp[1..]));
    assert!(r_checking < w_commit, "{trace:?}");
    assert!(d_commit < r_savings, "{trace:?}");

    // Control: the same schedule at SERIALIZABLE (`--level`): Report's
    // two reads share its snapshot, so it sees neither write — the
    // outcome of the serial order Report, Withdraw, Deposit (by hand on
    // PostgreSQL 15.20: savings → 2 at Report's second read, no abort:
    // the pivot Withdraw commits before Deposit). Not reproduced, exit 0.
    let url = s.conninfo();
    let args = ["--postgres", url.as_str(), "--level", "serializable"];
    let (code, v, err) = replay::isolint_json("replay", d.path(), &args);
    let w = &v["witnesses"][0];
    assert_eq!(code, 0, "nothing reproduced: {v} {err}");
    assert_eq!(w["reproduced"], false, "{w}");
    assert!(
        w["why_not"]
            .as_str()
            .is_some_and(|x| x.contains("serial order")),
        "{w}"
    );
}

/// The schedule replay used to pick (the BTP model's, no provenance): two
/// Withdraws, T1 reading checking#1 and savings#1, T2 checking#1 and
/// savings#2. With the values the programs pin (`id = :c` on both tables,
/// one `:c` per Withdraw, one checking row) both savings rows have id 1:
/// a state PostgreSQL's primary key forbids. Replayed, the answer is "not
/// reproduced" saying so — not a seed INSERT's "duplicate key" error.
/// Controls: the reproduced test above seeds checking and savings rows
/// with id 1 side by side (one key per table: no false clash), and
/// `replay::witness::tests::only_rows_equal_on_a_key_of_one_table_clash`
/// (keys that differ in one column, NULLs in a UNIQUE key: no clash).
#[test]
fn a_schedule_that_needs_two_rows_with_one_key_is_not_reproduced_for_that_reason() {
    let Some(s) = postgres::server() else { return };
    let d = bank();
    let l = isolint::frontend::load(d.path(), None).expect("load");
    let w = &l.workload;
    let g = build(w, Settings::default());
    let alloc = Allocation::uniform(w.programs.len(), Level::ReadCommitted);
    let withdraw = workdir::nodes(&g, &["Withdraw"]);
    let set = vec![withdraw[0], withdraw[0]];
    // The BTP model only (no provenance): what replay searched before.
    let e = explore_set(
        w,
        &Provenance::default(),
        &g,
        &set,
        Bounds::default(),
        &alloc,
    );
    let sched = e.found.expect("a model schedule of two Withdraws");
    let savings: Vec<&str> = sched
        .tuples
        .iter()
        .filter(|t| t.name.starts_with("savings"))
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(
        savings.len(),
        2,
        "the test needs the model schedule with two savings rows: {savings:?}"
    );
    let sources = l.sources.as_ref().expect("SQL sources");
    let r = replay_schedule(
        &s,
        sources,
        w,
        &l.provenance,
        &g,
        &sched,
        &[Level::ReadCommitted; 2],
    )
    .expect("replay");
    let Verdict::NotReproduced(why) = &r.verdict else {
        panic!("reproduced: {:?}", r.notes);
    };
    assert!(
        why.contains("two rows of savings with id = ") && why.contains("primary key"),
        "{why}"
    );
    assert!(!why.contains("duplicate key value"), "{why}");
    assert!(r.outcome.is_none(), "nothing ran: {:?}", r.outcome);
}

/// A table with a date and an enum column, for items 2 and 3.
const DAYS: &str = "CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE TABLE acct (id int PRIMARY KEY, n int NOT NULL, day date, m mood);
";

/// `bump`: a read, then a write of the row read (a lost update at READ
/// COMMITTED), whose `d + 1` PostgreSQL types only from `d`'s declared
/// type: `$2 + 1` alone is integer, and "column day is of type date but
/// expression is of type integer".
fn bump(name: &str, d_type: &str, day: &str) -> String {
    format!(
        "CREATE FUNCTION {name}(k int, d {d_type}) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  x int;
BEGIN
  SELECT n INTO x FROM acct WHERE id = k;
  UPDATE acct SET n = x + 1, day = {day} WHERE id = k;
END $$;
"
    )
}

/// `check DIR --postgres URL`: not robust, its first witness confirmed
/// with values and reproduced; that witness's `postgres` answer.
fn reproduced_with_values(dir: &std::path::Path, url: &str) -> serde_json::Value {
    let v = replay::reproduced_json(dir, url, &[]);
    let w = &v["witnesses"][0];
    assert_eq!(w["confirmation"]["status"], "confirmed", "{w}");
    assert!(w["confirmation"]["model_only"].is_null(), "{w}");
    w["postgres"].clone()
}

/// Item 2: a routine whose (quoted) name holds `#`, in the schema file
/// as pg_dump writes one (so it is also created on the server). Replay
/// used to look up `bump` (the name cut at `#`), found no routine, made
/// `d` up as an integer and stopped at the UPDATE; with the front-end's
/// identity `d` is a date and the lost update is reproduced. By hand on
/// PostgreSQL 15.20 (acct (1, 2, …), two psql sessions at READ
/// COMMITTED running the body with k = 1): T1 reads n → 2, writes 3; T2
/// reads n → 2; T1 COMMIT; T2 writes 3, COMMIT: n = 3, where `SELECT
/// "bump#day"(1, …)` twice gives 4. Control: the read `FOR UPDATE` makes
/// the workload robust (exit 0, nothing replayed).
#[test]
fn a_routine_named_with_a_hash_takes_its_declared_parameter_types() {
    let Some(s) = postgres::server() else { return };
    let schema = format!("{DAYS}{}", bump("\"bump#day\"", "date", "d + 1"));
    let manifest = "programs: [\"bump#day\"]\n";
    let d = workload_dir(&schema, manifest, &[]);
    let l = isolint::frontend::load(d.path(), None).expect("load");
    let sources = l.sources.as_ref().expect("SQL sources");
    let r = sources.routines[0].as_ref().expect("the routine it runs");
    assert_eq!((r.schema.as_deref(), r.name.as_str()), (None, "bump#day"));
    assert_eq!(r.args(), ["integer", "date"]);
    let pg = reproduced_with_values(d.path(), &s.conninfo());
    let txns = replay::strings(&pg, "transactions");
    assert!(txns.iter().all(|t| t.contains("bump#day")), "{txns:?}");

    let locked = schema.replace(
        "WHERE id = k;\n  UPDATE",
        "WHERE id = k FOR UPDATE;\n  UPDATE",
    );
    assert_ne!(locked, schema);
    let d = workload_dir(&locked, manifest, &[]);
    replay::robust(d.path(), &["--postgres", &s.conninfo()]);
}

/// Item 2: two overloads of `bump` in a routine file are two programs,
/// named by signature (`bump(integer, date)`); each carries its own
/// parameter types (`d` a date in one, text in the other, whose body
/// casts it), which the old lookup (`to_regproc` of the program's name,
/// on a server where routine files are not created) never found. The
/// workload is replayed and reproduced (the lost update, as above).
#[test]
fn overloaded_routines_each_carry_their_own_identity() {
    let Some(s) = postgres::server() else { return };
    let file = format!(
        "{}{}",
        bump("bump", "date", "d + 1"),
        bump("bump", "text", "d::date + 1")
    );
    let d = workload_dir(DAYS, "programs: [bump]\n", &[("routines.sql", &file)]);
    let l = isolint::frontend::load(d.path(), None).expect("load");
    let sources = l.sources.as_ref().expect("SQL sources");
    let mut sigs: Vec<(String, Vec<String>)> = l
        .workload
        .programs
        .iter()
        .zip(&sources.routines)
        .map(|(p, r)| {
            let r = r.as_ref().expect("a routine");
            (
                p.name.clone(),
                r.args().iter().map(|a| a.to_string()).collect(),
            )
        })
        .collect();
    sigs.sort();
    assert_eq!(
        sigs,
        [
            (
                "bump(integer, date)".to_string(),
                vec!["integer".to_string(), "date".to_string()]
            ),
            (
                "bump(integer, text)".to_string(),
                vec!["integer".to_string(), "text".to_string()]
            ),
        ]
    );
    // Resolved on the server as replay resolves them.
    let mut c = s.connect().expect("connect");
    c.batch_execute(DAYS).expect("the DDL");
    for r in sources.routines.iter().flatten() {
        let t = isolint::replay::retype::routine_types(&mut c, r);
        let want = match r.args()[1] {
            "date" => ::postgres::types::Type::DATE,
            _ => ::postgres::types::Type::TEXT,
        };
        assert_eq!(
            (t.get("d"), t.get("$2")),
            (Some(&want), Some(&want)),
            "{r:?}"
        );
        assert_eq!(t.get("k"), Some(&::postgres::types::Type::INT4), "{r:?}");
    }
    c.batch_execute("DROP TABLE acct; DROP TYPE mood")
        .expect("clean");
    reproduced_with_values(d.path(), &s.conninfo());
}

/// Item 3: `tick`'s variables are a date, an enum and a smallint
/// assigned from expressions of other types (text, text, numeric 3.5),
/// and a column's `%TYPE`.
const TICK: &str = "CREATE FUNCTION tick(k int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  x acct.n%TYPE;
  v_day date := '2024-01-31';
  v_mood mood := 'happy';
  v_half smallint := 7 / 2.0;
BEGIN
  SELECT n INTO x FROM acct WHERE id = k;
  UPDATE acct SET n = x + v_half * 2, day = v_day + 1, m = v_mood WHERE id = k;
END $$;
";

/// Runs routine `name` of `file` (k = 1) with the executor, its
/// variables converted to their declared types (`declared`) or not: how
/// it ended and acct after it (in a transaction rolled back after).
fn run_routine(
    c: &mut ::postgres::Client,
    (file, name): (&str, &str),
    declared: bool,
) -> (Result<(), Halt>, Acct) {
    let d = workload_dir(
        DAYS,
        &format!("programs: [{name}]\n"),
        &[("routines.sql", file)],
    );
    let l = isolint::frontend::load(d.path(), None).expect("load");
    let sources = l.sources.as_ref().expect("SQL sources");
    let r = sources.routines[0].as_ref().expect("the routine");
    let types = isolint::replay::retype::variable_types(c, r);
    let named = |v: &str| types.get(v).map(|d| (d.oid, d.sql.as_str()));
    if name == "tick" {
        assert_eq!(named("x"), Some((23, "integer")), "acct.n%TYPE: {types:?}");
        assert_eq!(named("v_half"), Some((21, "smallint")), "{types:?}");
    }
    let day = if name == "tick" {
        "v_day"
    } else {
        "stamp.v_day"
    };
    assert_eq!(named(day), Some((1082, "date")), "{types:?}");
    c.batch_execute("BEGIN").expect("begin");
    let params = BTreeMap::from([("k".to_string(), Val::untyped("1"))]);
    let mut e = Executor::new(&sources.programs[0], params);
    if declared {
        e = e.with_declared(Arc::new(types));
    }
    let end = loop {
        match e.step(c) {
            Ok(Step::Ran(_)) => {}
            Ok(Step::Finished) => break Ok(()),
            Ok(Step::RolledBack(why)) => panic!("{name} rolled back: {why}"),
            Err(h) => break Err(h),
        }
    };
    // An error left the transaction aborted: nothing to read.
    let after = if end.is_ok() { acct(c) } else { vec![] };
    c.batch_execute("ROLLBACK").expect("rollback");
    (end, after)
}

/// acct's rows: id, n, day, m.
type Acct = Vec<(i32, i32, String, String)>;

fn acct(c: &mut ::postgres::Client) -> Acct {
    c.query(
        "SELECT id, n, day::text, m::text FROM acct ORDER BY id",
        &[],
    )
    .expect("acct")
    .iter()
    .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
    .collect()
}

/// The executor runs `file`'s routine `name` as PostgreSQL runs it on
/// acct (1, 10, NULL, 'sad'): it leaves what PostgreSQL's own call
/// leaves, which is `want`. Control: without the declared types (replay
/// before h23-replay3) `v_day` and `v_mood` hold text, and the UPDATE
/// stops on a typing error PostgreSQL never raises for this routine.
fn runs_as_postgresql(file: &str, name: &str, want: (i32, &str, &str)) {
    let Some(s) = postgres::server() else { return };
    let mut c = s.connect().expect("connect");
    c.batch_execute(&format!(
        "{DAYS} INSERT INTO acct VALUES (1, 10, NULL, 'sad'); {file}"
    ))
    .expect("setup");
    c.batch_execute(&format!("BEGIN; SELECT {name}(1)"))
        .expect("PostgreSQL's own call");
    let on_pg = acct(&mut c);
    c.batch_execute("ROLLBACK").expect("rollback");
    let (n, day, m) = want;
    assert_eq!(on_pg, [(1, n, day.to_string(), m.to_string())]);
    let (end, got) = run_routine(&mut c, (file, name), true);
    assert_eq!(end, Ok(()));
    assert_eq!(got, on_pg);
    let (end, _) = run_routine(&mut c, (file, name), false);
    let Err(Halt::Db { code, .. }) = &end else {
        panic!("without the declared types: {end:?}");
    };
    assert!(["42804", "42883"].contains(&code.as_str()), "{end:?}");
}

/// `tick(1)`: PostgreSQL 15.20 leaves (1, 18, 2024-02-01, happy) —
/// `v_half` is 4 (7 / 2.0 = 3.5 rounded to smallint), so n = 10 + 8 (by
/// hand with psql the same); the executor with the declared types too.
#[test]
fn declared_variables_hold_their_types_as_in_plpgsql() {
    runs_as_postgresql(TICK, "tick", (18, "2024-02-01", "happy"));
}

/// `tock` reads n and calls `stamp`, whose date and enum variables are
/// inlined into `tock` as `stamp.v_day`, `stamp.v_mood`: their types
/// come with `tock`'s routine too. PostgreSQL 15.20's `SELECT tock(1)`
/// leaves (1, 11, 2024-02-01, happy).
#[test]
fn inlined_routines_variables_hold_their_types_too() {
    let file = "CREATE FUNCTION stamp(k int, x int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  v_day date := '2024-01-31';
  v_mood mood := 'happy';
BEGIN
  UPDATE acct SET n = x + 1, day = v_day + 1, m = v_mood WHERE id = k;
END $$;
CREATE FUNCTION tock(k int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  x int;
BEGIN
  SELECT n INTO x FROM acct WHERE id = k;
  PERFORM stamp(k, x);
END $$;
";
    runs_as_postgresql(file, "tock", (11, "2024-02-01", "happy"));
}

/// Item 3 end to end: two `tick(1)` at READ COMMITTED, the lost update
/// run by hand on PostgreSQL 15.20 (acct (1, 2, …): T1 reads 2, writes
/// 2 + 4·2 = 10; T2 reads 2; T1 COMMIT; T2 writes 10, COMMIT: n = 10,
/// where two calls in a row leave 18) is reproduced by `check --postgres`
/// (before: both stopped with "column m is of type mood but expression
/// is of type text"). Control: the read `FOR UPDATE` is robust.
#[test]
fn a_routine_with_date_enum_and_smallint_variables_is_reproduced() {
    let Some(s) = postgres::server() else { return };
    let d = workload_dir(DAYS, "programs: [tick]\n", &[("routines.sql", TICK)]);
    let pg = reproduced_with_values(d.path(), &s.conninfo());
    let trace = replay::strings(&pg, "trace");
    assert!(
        trace.iter().filter(|t| t.contains(": UPDATE acct")).count() == 2,
        "{trace:?}"
    );
    let locked = TICK.replace(
        "WHERE id = k;\n  UPDATE",
        "WHERE id = k FOR UPDATE;\n  UPDATE",
    );
    assert_ne!(locked, TICK);
    let d = workload_dir(DAYS, "programs: [tick]\n", &[("routines.sql", &locked)]);
    replay::robust(d.path(), &["--postgres", &s.conninfo()]);
}
