//! Issue 23 (h23-depth): replay reads structure, not labels.
//! (1) An integrity-check read (foreign-key, unique, exclusion check) is
//! part of its SQL statement in the replayed schedule because the
//! front-end says so in `Provenance::inside`, not because replay parses
//! the display label the BTP's `sql` carries.
//! One throwaway server per test (tests/common/postgres.rs); the tests
//! skip, saying why, on a machine without PostgreSQL binaries.
#![cfg(feature = "postgres")]

use isolint::analysis::explorer::{confirm_in, Bounds, Confirmation};
use isolint::analysis::graph::{build, Settings};
use isolint::analysis::robustness::witnesses_under;
use isolint::model::isolation::{Allocation, Level};
use isolint::replay::scratch::Scratch;
use isolint::replay::witness;

#[path = "common/postgres.rs"]
mod postgres;
#[path = "common/replay.rs"]
mod replay;
#[path = "common/workdir.rs"]
mod workdir;
use workdir::dir as workload_dir;

const ACCT_LOG: &str = "
CREATE TABLE acct (id int PRIMARY KEY, v int NOT NULL);
CREATE TABLE log (id int PRIMARY KEY, acct int NOT NULL REFERENCES acct(id));
";

/// A lost update (two `Bump`s read `v`, both write `v + 1`) with an
/// INSERT into a child table between: PostgreSQL checks the foreign key
/// inside the INSERT (`SELECT 1 FROM acct WHERE id = … FOR KEY SHARE`),
/// which the front-end lowers as a key read before the insert.
const BUMP: &str = "
SELECT v INTO :a FROM acct WHERE id = :x;
INSERT INTO log VALUES (:l, :x);
UPDATE acct SET v = :a + 1 WHERE id = :x;
";

/// The statements replay expects transaction `t` of the first confirmed
/// schedule of `Bump` × 2 to run, with the loaded workload changed by
/// `edit` first.
fn expected_paths(
    edit: &dyn Fn(&mut isolint::frontend::Loaded),
) -> Option<(Vec<Vec<String>>, isolint::frontend::Loaded)> {
    let s = postgres::server()?;
    let d = workload_dir(ACCT_LOG, "", &[("Bump.sql", BUMP)]);
    let mut l = isolint::frontend::load(d.path(), None).expect("load");
    edit(&mut l);
    let w = &l.workload;
    let g = build(w, Settings::default());
    let alloc = Allocation::uniform(w.programs.len(), Level::ReadCommitted);
    let witnesses = witnesses_under(&g, None, &alloc);
    assert!(!witnesses.is_empty(), "a lost update: not robust");
    let Confirmation::Confirmed(sched) = confirm_in(
        w,
        &l.provenance,
        &g,
        &witnesses[0],
        Bounds::default(),
        &alloc,
    ) else {
        panic!("the explorer confirms the lost update");
    };
    let sources = l.sources.as_ref().expect("SQL sources");
    let mut scratch = Scratch::create(&s, &sources.schema).expect("scratch schema");
    let p = witness::plan(sources, w, &l.provenance, &g, &sched, &mut scratch).expect("plan");
    Some((p.expected, l))
}

/// Renames every check's display label to text replay cannot parse: the
/// schedule's paths still merge the foreign-key check into its INSERT
/// (three statements a transaction, the INSERT's own text), so replay
/// reads the front-end's field. Control: with the field emptied, the
/// renamed label stands as a statement of its own — the field, not the
/// label, is what merges them (so this test fails if replay goes back to
/// reading labels).
#[test]
fn a_check_read_is_merged_by_the_field_not_the_label() {
    const RENAMED: &str = "an integrity read";
    let rename = |l: &mut isolint::frontend::Loaded| {
        let mut n = 0;
        for p in &mut l.workload.programs {
            for st in &mut p.statements {
                if st
                    .sql
                    .as_deref()
                    .is_some_and(|q| q.starts_with("foreign-key check"))
                {
                    st.sql = Some(RENAMED.to_string());
                    n += 1;
                }
            }
        }
        assert!(n > 0, "the fixture has a foreign-key check read");
    };
    let Some((paths, l)) = expected_paths(&rename) else {
        return;
    };
    assert!(
        l.provenance.inside.iter().any(|c| !c.is_empty()),
        "the front-end records the check"
    );
    for path in &paths {
        assert!(path.iter().all(|q| q != RENAMED), "merged: {paths:?}");
        let inserts = path
            .iter()
            .filter(|q| q.starts_with("INSERT INTO log"))
            .count();
        assert!(inserts <= 1, "one INSERT step: {paths:?}");
    }
    assert!(
        paths
            .iter()
            .any(|p| p.iter().any(|q| q.starts_with("INSERT INTO log"))),
        "the schedule runs an INSERT: {paths:?}"
    );

    let unmarked = |l: &mut isolint::frontend::Loaded| {
        rename(l);
        l.provenance.inside.iter_mut().for_each(Vec::clear);
    };
    let Some((paths, _)) = expected_paths(&unmarked) else {
        return;
    };
    assert!(
        paths.iter().any(|p| p.iter().any(|q| q == RENAMED)),
        "without the field the check is a step of its own: {paths:?}"
    );
}

// ---------------------------------------------------------------------
// (4) A function called by a statement: one snapshot when STABLE, its
// own snapshots when VOLATILE.
// ---------------------------------------------------------------------

const ACCT: &str = "CREATE TABLE acct (id int PRIMARY KEY, v int NOT NULL);";

/// `bal(p)` reads one balance; `{vol}` is STABLE or VOLATILE.
fn bal(vol: &str) -> String {
    format!(
        "{ACCT}
CREATE FUNCTION bal(p int) RETURNS int LANGUAGE sql {vol} AS $$
  SELECT v FROM acct WHERE id = p
$$;
"
    )
}

/// `Sum` reads two balances in one statement, one of them through `bal`;
/// `Move` changes both.
const SUM: &str = "SELECT v + bal(:y) INTO :s FROM acct WHERE id = :x;\n";
const MOVE: &str = "
UPDATE acct SET v = v - 1 WHERE id = :a;
UPDATE acct SET v = v + 1 WHERE id = :b;
";

/// What PostgreSQL does, on the server: `SELECT v, pg_sleep(1), bal(2)
/// FROM acct WHERE id = 1` (READ COMMITTED; the target list is evaluated
/// left to right, so `bal` runs after the sleep), while another session
/// runs `UPDATE … id = 1; UPDATE … id = 2; COMMIT` during the sleep.
/// Returns (v, bal(2)) from acct (1, 10), (2, 20).
fn during_a_commit(s: &isolint::replay::server::Server, vol: &str) -> (i32, i32) {
    let mut c = s.connect().expect("connect");
    c.batch_execute(&format!(
        "DROP TABLE IF EXISTS acct CASCADE; {} INSERT INTO acct VALUES (1, 10), (2, 20);",
        bal(vol)
    ))
    .expect("setup");
    let reader = std::thread::spawn({
        let mut r = s.connect().expect("connect");
        move || {
            let row = r
                .query_one("SELECT v, pg_sleep(1), bal(2) FROM acct WHERE id = 1", &[])
                .expect("read");
            (row.get::<_, i32>(0), row.get::<_, i32>(2))
        }
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    c.batch_execute(
        "BEGIN; UPDATE acct SET v = v + 1 WHERE id = 1; UPDATE acct SET v = v + 1 WHERE id = 2; COMMIT;",
    )
    .expect("writer");
    let got = reader.join().expect("reader thread");
    c.batch_execute("DROP TABLE acct CASCADE").expect("cleanup");
    got
}

/// STABLE: on PostgreSQL 15 the function's query reads the calling
/// statement's snapshot — (10, 20) with a commit during the statement
/// (by hand too, two psql sessions: `10||20`). So the schedule in which
/// `bal`'s read sees the old row 2 and the statement's own read of row 1
/// sees Move's commit (the BTP model's cycle Sum →rw Move →wr Sum) is one
/// PostgreSQL cannot run: the explorer no longer calls it confirmed with
/// values (it did before: `bal`'s read, with its own text, was a step of
/// its own), it is "in the model only", and replay does not reproduce it.
#[test]
fn a_stable_function_reads_its_callers_snapshot() {
    let Some(s) = postgres::server() else { return };
    assert_eq!(during_a_commit(&s, "STABLE"), (10, 20), "one snapshot");
    let d = workload_dir(&bal("STABLE"), "", &[("Sum.sql", SUM), ("Move.sql", MOVE)]);
    let (code, v, err) = replay::check_json(d.path(), &["--postgres", &s.conninfo()]);
    assert_eq!(
        code, 1,
        "not robust statically (the BTPs over-approximate): {v} {err}"
    );
    let wit = &v["witnesses"][0];
    let conf = &wit["confirmation"];
    assert!(
        conf["model_only"].is_string(),
        "not confirmed with values: {conf}"
    );
    assert!(
        conf["model_only"]
            .as_str()
            .unwrap_or_default()
            .contains("STABLE"),
        "the reason names the snapshot: {conf}"
    );
    let pg = &wit["postgres"];
    assert_ne!(pg["status"], "reproduced", "{pg}");
    let notes = replay::strings(pg, "notes");
    assert!(
        notes.iter().any(|n| n.contains("read one snapshot")),
        "{notes:?}"
    );
}

/// VOLATILE (control): each query of the body takes a snapshot of its own
/// — (10, 21) on PostgreSQL 15 with the same commit during the statement
/// (by hand: `10||21`), not what any serial order reads. The explorer
/// confirms the cycle with values (the statement's read, then `bal`'s
/// after Move's commit); replay runs a statement as one step, so it does
/// not reproduce it and says why instead of "took another path".
#[test]
fn a_volatile_function_takes_its_own_snapshot() {
    let Some(s) = postgres::server() else { return };
    assert_eq!(during_a_commit(&s, "VOLATILE"), (10, 21), "two snapshots");
    let d = workload_dir(
        &bal("VOLATILE"),
        "",
        &[("Sum.sql", SUM), ("Move.sql", MOVE)],
    );
    let (code, v, err) = replay::check_json(d.path(), &["--postgres", &s.conninfo()]);
    assert_eq!(code, 1, "not robust: {v} {err}");
    let wit = &v["witnesses"][0];
    let conf = &wit["confirmation"];
    assert!(
        conf["model_only"].is_null(),
        "confirmed with values: {conf}"
    );
    let pg = &wit["postgres"];
    assert_ne!(pg["status"], "reproduced", "{pg}");
    let notes = replay::strings(pg, "notes");
    assert!(
        notes
            .iter()
            .any(|n| n.contains("VOLATILE") && n.contains("one step")),
        "{notes:?}"
    );
    assert!(
        !notes.iter().any(|n| n.contains("another path")),
        "the statement ran as the schedule has it: {notes:?}"
    );
}

// ---------------------------------------------------------------------
// (2) `isolint replay --random` draws application choices.
// ---------------------------------------------------------------------

use replay::{CHOICES, INC};

/// Up to 60 random rounds of two `Inc`s (`program`) over one row, seed 7.
fn random_anomalies(s: &isolint::replay::server::Server, program: &str, manifest: &str) -> usize {
    let d = workload_dir(ACCT, manifest, &[("Inc.sql", program)]);
    replay::random_anomalies(s, d.path(), (60, 1, 7))
}

/// With `choices:` each condition `:c1`, `:c2`, `:done` is drawn anew,
/// so an instance can read the row and then write `v = x + 1` — two such
/// instances lose an update (READ COMMITTED; by hand on PostgreSQL 15.20,
/// acct (1, 2): T1 reads 2, T2 reads 2, T1 writes 3 and commits, T2
/// writes 3 and commits: 3, where either serial order gives 4). Before,
/// `--random` picked `:c1`, `:c2`, `:done` once per instance, so an
/// instance ran one statement (`done` true) or stopped after 1,000
/// iterations (`done` false): never a read and then a write, never an
/// anomaly (the control without `choices:` below).
#[test]
fn random_replay_draws_choices_and_finds_the_lost_update() {
    let Some(s) = postgres::server() else { return };
    assert!(random_anomalies(&s, INC, CHOICES) > 0, "a lost update");
    assert_eq!(random_anomalies(&s, INC, ""), 0, "without choices: none");
}

/// Robust control: the read `FOR UPDATE` (robust, as `check` says:
/// replay_choices.rs) shows no anomaly with drawn choices either. It
/// would if the serial runs drew their choices again instead of
/// following the path each instance took in the concurrent run (another
/// path, another outcome, "no serial order").
#[test]
fn random_choices_on_a_robust_workload_show_nothing() {
    let Some(s) = postgres::server() else { return };
    let locked = INC.replace(
        "WHERE id = :k;\n  ELSIF",
        "WHERE id = :k FOR UPDATE;\n  ELSIF",
    );
    assert_ne!(locked, INC);
    assert_eq!(random_anomalies(&s, &locked, CHOICES), 0);
}

// ---------------------------------------------------------------------
// (3) Readable parameter names in replay's output.
// ---------------------------------------------------------------------

/// `INC` with JDBC `?`s for the row (BenchBase's procedures).
const INC_JDBC: &str = "
LOOP
  IF :c1 THEN
    SELECT v INTO :x FROM acct WHERE id = ?;
  ELSIF :c2 THEN
    UPDATE acct SET v = :x + 1 WHERE id = ?;
  END IF;
  EXIT WHEN :done;
END LOOP;
";

/// The replayed transactions were printed `Inc(?@58 = 1, ?@113 = 1, c1 =
/// 1, c2 = 1, done = 1, x = 6)`: the executor's file offsets, and the
/// values of choices the schedule's path decides (never read). Now a `?`
/// is named by its place, `?1 of statement 2` (the first `?` of the
/// program's second SQL statement, in text order: the UPDATE), and the
/// choices are left out — in the text and in the JSON `params`.
#[test]
fn replay_names_placeholders_by_place_and_leaves_out_choices() {
    let Some(s) = postgres::server() else { return };
    let d = workload_dir(ACCT, CHOICES, &[("Inc.sql", INC_JDBC)]);
    let out = assert_cmd::Command::cargo_bin("isolint")
        .expect("binary")
        .args(["check", &d.path().display().to_string()])
        .args(["--postgres", &s.conninfo()])
        .output()
        .expect("run isolint");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "not robust: {text}");
    let calls: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("T1 = Inc") || l.starts_with("T2 = Inc"))
        .filter(|l| l.contains('('))
        .collect();
    assert!(!calls.is_empty(), "the replayed transactions: {text}");
    for c in &calls {
        assert!(!c.contains("?@"), "no file offsets: {c}");
        for choice in ["c1 =", "c2 =", "done ="] {
            assert!(!c.contains(choice), "no choice values: {c}");
        }
    }
    assert!(
        calls
            .iter()
            .any(|c| c.contains("?1 of statement 1 = ") || c.contains("?1 of statement 2 = ")),
        "{calls:?}"
    );

    let (_, v, _) = replay::check_json(d.path(), &["--postgres", &s.conninfo()]);
    let txns = v["witnesses"][0]["postgres"]["transactions"].to_string();
    assert!(!txns.contains("?@") && !txns.contains("\"c1\""), "{txns}");
}

/// A choice the program also uses as a value is read, so it is shown
/// (control for the above: only unread choices are left out).
#[test]
fn a_choice_used_as_a_value_is_shown() {
    use isolint::replay::params::used_parameters;
    let choices: Vec<String> = ["c1", "c2", "done"].map(String::from).to_vec();
    let l = workdir::load(ACCT, CHOICES, &[("Inc.sql", INC_JDBC)]).expect("load");
    let used = used_parameters(&l.sources.as_ref().expect("sources").programs[0], &choices);
    assert!(used.iter().all(|p| !choices.contains(p)), "{used:?}");
    assert!(used.iter().any(|p| p == "x"), "{used:?}");
    let valued = INC_JDBC.replace(":x + 1", ":x + :c1");
    let l = workdir::load(ACCT, CHOICES, &[("Inc.sql", &valued)]).expect("load");
    let used = used_parameters(&l.sources.as_ref().expect("sources").programs[0], &choices);
    assert!(used.iter().any(|p| p == "c1"), "{used:?}");
}

// ---------------------------------------------------------------------
// (4, continued) A PL/pgSQL routine called in an expression.
// ---------------------------------------------------------------------

/// `tot` reads two balances in two queries; `{vol}` is STABLE or
/// VOLATILE. `sum_it` calls it (`s := tot(p, q)`); `move` raises both.
fn tot_routines(vol: &str) -> String {
    format!(
        "
CREATE FUNCTION tot(a int, b int) RETURNS int LANGUAGE plpgsql {vol} AS $$
DECLARE x int; y int;
BEGIN
  SELECT v INTO x FROM acct WHERE id = a;
  SELECT v INTO y FROM acct WHERE id = b;
  RETURN x + y;
END $$;
CREATE FUNCTION sum_it(p int, q int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE s int;
BEGIN
  s := tot(p, q);
  RETURN s;
END $$;
CREATE FUNCTION move(p int, q int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  UPDATE acct SET v = v + 1 WHERE id = p;
  UPDATE acct SET v = v + 1 WHERE id = q;
END $$;
"
    )
}

/// On the server: `sum_it` with a `pg_sleep(1)` between `tot`'s two
/// queries while another session raises both rows and commits. Returns
/// `tot`'s (x, y) from acct (1, 10), (2, 20).
fn tot_during_a_commit(s: &isolint::replay::server::Server, vol: &str) -> (i32, i32) {
    let slow = tot_routines(vol).replace(
        "  SELECT v INTO y",
        "  PERFORM pg_sleep(1);\n  SELECT v INTO y",
    );
    let mut c = s.connect().expect("connect");
    c.batch_execute(&format!(
        "DROP TABLE IF EXISTS acct CASCADE; {ACCT} INSERT INTO acct VALUES (1, 10), (2, 20); {slow}"
    ))
    .expect("setup");
    let reader = std::thread::spawn({
        let mut r = s.connect().expect("connect");
        move || {
            let row = r.query_one("SELECT sum_it(1, 2)", &[]).expect("read");
            row.get::<_, i32>(0)
        }
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    c.batch_execute("BEGIN; SELECT move(1, 2); COMMIT;")
        .expect("writer");
    let sum = reader.join().expect("reader thread");
    c.batch_execute("DROP TABLE acct CASCADE; DROP FUNCTION sum_it, tot, move")
        .expect("cleanup");
    (10, sum - 10)
}

fn tot_dir(vol: &str) -> tempfile::TempDir {
    workload_dir(
        ACCT,
        "programs: [sum_it, move]\n",
        &[("routines.sql", &tot_routines(vol))],
    )
}

/// STABLE: `tot`'s second query reads the snapshot of `s := tot(p, q)`
/// (PostgreSQL 15: 10 + 20 with a commit between the two queries; by
/// hand too, two psql sessions). The explorer confirmed the schedule with
/// that commit between them (a read skew), and replay — whose executor
/// sends each query on its own — "reproduced" it: an anomaly PostgreSQL
/// cannot produce. Now the schedule is "in the model only", replay runs
/// the two queries back to back and says so, and random rounds find
/// nothing (the driver runs a held transaction's next query first).
#[test]
fn a_stable_plpgsql_routine_reads_one_snapshot() {
    let Some(s) = postgres::server() else { return };
    assert_eq!(tot_during_a_commit(&s, "STABLE"), (10, 20), "one snapshot");
    let d = tot_dir("STABLE");
    let (code, v, err) = replay::check_json(d.path(), &["--postgres", &s.conninfo()]);
    assert_eq!(code, 1, "not robust statically: {v} {err}");
    let wit = &v["witnesses"][0];
    assert!(wit["confirmation"]["model_only"].is_string(), "{wit}");
    let pg = &wit["postgres"];
    assert_ne!(pg["status"], "reproduced", "{pg}");
    let notes = replay::strings(pg, "notes");
    assert!(
        notes.iter().any(|n| n.contains("one snapshot")),
        "{notes:?}"
    );
    assert_eq!(random_rounds(&s, &d), 0, "no anomaly in random rounds");
}

/// VOLATILE (control): each query takes its own snapshot (10 + 21 on the
/// server with the same commit), the read skew is confirmed with values
/// and reproduced, and random rounds find it.
#[test]
fn a_volatile_plpgsql_routine_takes_a_snapshot_per_query() {
    let Some(s) = postgres::server() else { return };
    assert_eq!(
        tot_during_a_commit(&s, "VOLATILE"),
        (10, 21),
        "two snapshots"
    );
    let d = tot_dir("VOLATILE");
    let pg = replay::reproduced(d.path(), &s.conninfo(), &[]);
    assert!(pg["status"] == "reproduced", "{pg}");
    assert!(
        random_rounds(&s, &d) > 0,
        "random rounds find the read skew"
    );
}

/// Up to 80 random rounds of the workload in `d` over two rows, seed 3.
fn random_rounds(s: &isolint::replay::server::Server, d: &tempfile::TempDir) -> usize {
    replay::random_anomalies(s, d.path(), (80, 2, 3))
}
