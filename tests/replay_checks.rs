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
