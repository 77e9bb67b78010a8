//! Issue 24, item 3: alarms that value reasoning removes. Each refinement
//! of the conflict rules (docs/rules.md, "Refinements") has (a) a workload
//! whose alarm it removes — robust on PostgreSQL 15, the two-session
//! schedule in the comment — and (b) a one-line variant outside the
//! proof's assumptions that is not robust on PostgreSQL 15 and must stay
//! not robust, so a rule that removed every edge would fail here.
//!
//! Schedules were run on PostgreSQL 15 at READ COMMITTED with two psql
//! sessions fed step by step (0.4 s between steps, a blocked step shown
//! as "-- waits"), and the outcome compared with both serial orders.

use std::path::Path;

use isolint::analysis::analyze;
use isolint::analysis::graph::Settings;
use isolint::analysis::robustness::Method;

fn run(schema: &str, files: &[(&str, &str)]) -> Result<bool, String> {
    let d = tempfile::tempdir().map_err(|e| e.to_string())?;
    std::fs::write(d.path().join("schema.sql"), schema).map_err(|e| e.to_string())?;
    std::fs::write(d.path().join("isolint.yaml"), "schema: schema.sql\n")
        .map_err(|e| e.to_string())?;
    for (n, t) in files {
        std::fs::write(d.path().join(n), t).map_err(|e| e.to_string())?;
    }
    let loaded =
        isolint::frontend::load(Path::new(d.path()), None).map_err(|e| e.message.clone())?;
    let a = analyze(&loaded.workload, Settings::default(), Method::TypeII, false);
    Ok(a.robust)
}

fn robust(schema: &str, files: &[(&str, &str)]) -> bool {
    run(schema, files).unwrap_or_else(|e| panic!("expected a verdict, got: {e}"))
}

// ---------------------------------------------------------------------
// (a) `… WHERE id = $1 FOR UPDATE` inside a WITH is a key-based locking
// read (docs/rules.md, "Locking reads in a WITH").
// ---------------------------------------------------------------------

const ACCT: &str = "CREATE TABLE acct (id int PRIMARY KEY, bal int NOT NULL);\n";

const WITHDRAW_CTE: &str = "WITH a AS (SELECT bal FROM acct WHERE id = :i FOR UPDATE)
UPDATE acct SET bal = (SELECT bal FROM a) - 1 WHERE id = :i;\n";

/// Two Withdraws of the same account, each a locking read in a WITH then
/// the UPDATE. PostgreSQL 15, acct(1, 100):
///
/// ```text
/// S1: BEGIN; WITH a AS (SELECT bal FROM acct WHERE id = 1 FOR UPDATE)
///            UPDATE acct SET bal = (SELECT bal FROM a) - 1 WHERE id = 1;
/// S2: BEGIN; (the same)                           -- waits for S1's row lock
/// S1: COMMIT;
/// S2: (returns; the locked read re-read 99); COMMIT;   final bal 98 = serial
/// ```
///
/// Before: the locked read became a non-locking predicate read (a row a
/// WITH does not find does not stop the statement), with a counterflow
/// rw to the other Withdraw's UPDATE: a lost-update alarm.
#[test]
fn cte_for_update_is_a_locking_key_read() {
    assert!(robust(ACCT, &[("Withdraw.sql", WITHDRAW_CTE)]));
    // The same read outside a WITH was already a locking key read.
    assert!(robust(
        ACCT,
        &[(
            "Withdraw.sql",
            "SELECT bal INTO :b FROM acct WHERE id = :i FOR UPDATE;\n\
             UPDATE acct SET bal = :b - 1 WHERE id = :i;\n"
        )]
    ));
    // The join through the WITH (graphile-worker's shape): also robust.
    let jobs = "CREATE TABLE jobs (id int PRIMARY KEY, attempts int NOT NULL);\n";
    assert!(robust(
        jobs,
        &[(
            "Bump.sql",
            "WITH j AS (SELECT id, attempts FROM jobs WHERE id = $1 FOR UPDATE)\n\
             UPDATE jobs SET attempts = j.attempts + 1 FROM j WHERE jobs.id = j.id;\n"
        )]
    ));
}

/// Control: the same WITH without `FOR UPDATE` is a lost update.
/// PostgreSQL 15, acct(1, 100), the schedule above without FOR UPDATE:
/// S2's UPDATE waits for S1's row lock, then writes 100 − 1 from its
/// snapshot: final bal 99, which no serial order gives (98). Also the
/// missing-row side stays: the snapshot scan is a predicate read over the
/// key, so a Withdraw that finds no row still conflicts with an insert.
#[test]
fn cte_without_for_update_stays_not_robust() {
    let plain = WITHDRAW_CTE.replace(" FOR UPDATE", "");
    assert!(!robust(ACCT, &[("Withdraw.sql", &plain)]));
    // SKIP LOCKED takes no wait, so it orders nothing.
    let skip = WITHDRAW_CTE.replace("FOR UPDATE", "FOR UPDATE SKIP LOCKED");
    assert!(!robust(ACCT, &[("Withdraw.sql", &skip)]));
}

/// The snapshot scan keeps the missing row: Open inserts account :i,
/// Withdraw (locking read in a WITH, row absent) then writes a log row
/// whose existence Open reads. Withdraw's scan of `id = :i` sees no row
/// (rw to Open's insert, counterflow when Open commits first).
/// PostgreSQL 15, both tables empty:
///
/// ```text
/// S1: BEGIN; WITH a AS (SELECT bal FROM acct WHERE id = 1 FOR UPDATE)
///            INSERT INTO log (id, n) SELECT 1, count(*) FROM a;   -- n = 0
/// S2: BEGIN; SELECT count(*) FROM log;                             -- 0
/// S2: INSERT INTO acct VALUES (1, 0); COMMIT;
/// S1: COMMIT;              -- n = 0 and count 0: no serial order gives both
/// ```
#[test]
fn cte_for_update_missing_row_still_conflicts_with_inserts() {
    let schema = "CREATE TABLE acct (id int PRIMARY KEY, bal int NOT NULL);
CREATE TABLE log (id int PRIMARY KEY, n int NOT NULL);\n";
    let withdraw = "WITH a AS (SELECT bal FROM acct WHERE id = :i FOR UPDATE)
INSERT INTO log (id, n) SELECT :l, count(*) FROM a;\n";
    let open = "SELECT count(*) INTO :k FROM log;\nINSERT INTO acct (id, bal) VALUES (:i, 0);\n";
    assert!(!robust(
        schema,
        &[("Withdraw.sql", withdraw), ("Open.sql", open)]
    ));
}

// ---------------------------------------------------------------------
// (b) Foreign-key checks and the parent row's lock (docs/rules.md).
// ---------------------------------------------------------------------

const COURSE_FK: &str = "CREATE TABLE course (id int PRIMARY KEY, title text NOT NULL);
CREATE TABLE enrolled (student int NOT NULL, course_id int NOT NULL REFERENCES course(id),
                       PRIMARY KEY (student, course_id));\n";

const REMOVE: &str = "DELETE FROM course WHERE id = :c;\n";
const ENROLL: &str = "INSERT INTO enrolled (student, course_id) VALUES (:s, :c);\n";

/// RemoveCourse's DELETE runs the NO ACTION check `enrolled WHERE
/// course_id = :c` while it holds course :c's row lock; Enroll's INSERT
/// KEY SHARE locks course :c (its own check). Before: two counterflow
/// edges (the check → the insert, the KEY SHARE read → the delete), a
/// type-II cycle. PostgreSQL 15, course rows 1 and 2:
///
/// ```text
/// RC: S1: BEGIN; INSERT INTO enrolled VALUES (1, 1);
///     S2: BEGIN; DELETE FROM course WHERE id = 1;      -- waits (KEY SHARE)
///     S1: COMMIT;
///     S2: ERROR: update or delete on table "course" violates foreign key
///         constraint … Key (id)=(1) is still referenced   (S2 aborts)
/// RC: S2: BEGIN; DELETE FROM course WHERE id = 1;
///     S1: BEGIN; INSERT INTO enrolled VALUES (1, 1);   -- waits
///     S2: COMMIT;
///     S1: ERROR: … Key (course_id)=(1) is not present in table "course"
/// RR: the same two schedules: S2's check sees S1's enrolment (the same
///     error); S1: ERROR: could not serialize access due to concurrent
///     update (its FOR KEY SHARE check).
/// ```
///
/// With different courses they touch different rows: serial.
#[test]
fn fk_check_of_a_deleted_parent_is_ordered_by_the_parent_lock() {
    assert!(robust(
        COURSE_FK,
        &[("RemoveCourse.sql", REMOVE), ("Enroll.sql", ENROLL)]
    ));
    // Enroll updates the course row first (no check read then: it holds
    // the row's lock). PostgreSQL 15 RC: S1 UPDATE course 1, INSERT
    // enrolled (1, 1); S2 DELETE course 1 waits; S1 COMMIT; S2: ERROR
    // (still referenced).
    let touch = "UPDATE course SET title = :t WHERE id = :c;\n\
                 INSERT INTO enrolled (student, course_id) VALUES (:s, :c);\n";
    assert!(robust(
        COURSE_FK,
        &[("RemoveCourse.sql", REMOVE), ("Enroll.sql", touch)]
    ));
}

/// Control: the same invariant kept by the application, without the
/// declared foreign key (one line: no `REFERENCES`, the check written by
/// hand — the bundled Courseware): RemoveCourse counts the enrolments,
/// EnrollStudent reads the course; no lock orders them. PostgreSQL 15 RC,
/// course rows 1 and 2:
///
/// ```text
/// S1: BEGIN; SELECT title FROM course WHERE id = 2;              -- found
/// S2: BEGIN; SELECT count(*) FROM enrolled WHERE course_id = 2;  -- 0
/// S1: INSERT INTO enrolled VALUES (1, 2); COMMIT;
/// S2: DELETE FROM course WHERE id = 2; COMMIT;  -- enrolment (1, 2) without its course
/// ```
#[test]
fn application_level_check_stays_not_robust() {
    let no_fk = COURSE_FK.replace(" REFERENCES course(id)", "");
    let remove = "SELECT count(*) INTO :k FROM enrolled WHERE course_id = :c;\n\
                  IF :k = 0 THEN\n    DELETE FROM course WHERE id = :c;\nEND IF;\n";
    let enroll = "SELECT title INTO :t FROM course WHERE id = :c;\n\
                  INSERT INTO enrolled (student, course_id) VALUES (:s, :c);\n";
    assert!(!robust(
        &no_fk,
        &[("RemoveCourse.sql", remove), ("Enroll.sql", enroll)]
    ));
    // The bundled workload is that text.
    let l = isolint::frontend::load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/courseware"),
        None,
    )
    .expect("courseware loads");
    assert!(!analyze(&l.workload, Settings::default(), Method::TypeII, false).robust);
}

/// Outside the rule the alarm stays: a check that is not PostgreSQL's
/// (the application's count, with the foreign key declared). On
/// PostgreSQL this one is still ordered (RemoveCourse's DELETE then fails
/// its own check), but the count's snapshot read is not under the row
/// lock, which is all the rule may use: a conservative alarm.
#[test]
fn fk_rule_needs_the_check_and_the_pinned_parent() {
    let remove = "SELECT count(*) INTO :k FROM enrolled WHERE course_id = :c;\n\
                  IF :k = 0 THEN\n    DELETE FROM course WHERE id = :c;\nEND IF;\n";
    let enroll = "SELECT title INTO :t FROM course WHERE id = :c;\n\
                  INSERT INTO enrolled (student, course_id) VALUES (:s, :c);\n";
    assert!(!robust(
        COURSE_FK,
        &[("RemoveCourse.sql", remove), ("Enroll.sql", enroll)]
    ));
}

// ---------------------------------------------------------------------
// (c) Reads of the transaction's own inserts (docs/rules.md).
// ---------------------------------------------------------------------

const JOBS: &str = "CREATE TABLE jobs (id bigserial PRIMARY KEY, payload text NOT NULL,
                   done boolean NOT NULL DEFAULT false);\n";

const ADD_JOBS: &str = "INSERT INTO jobs (payload) VALUES (:p) RETURNING id INTO :a;
INSERT INTO jobs (payload) VALUES (:q) RETURNING id INTO :b;
SELECT count(*) INTO :n FROM jobs WHERE id = ANY(ARRAY[:a, :b]) AND NOT done;\n";

const ADD_JOB: &str = "INSERT INTO jobs (payload) VALUES (:p) RETURNING id INTO :a;
SELECT payload INTO :x FROM jobs WHERE id = :a;\n";

/// AddJobs reads back the two jobs it inserted (`id = ANY(ARRAY[:a,
/// :b])`, a predicate read); before, it had a counterflow rw to every
/// other insert into jobs (another AddJobs, AddJob). No other transaction
/// can write a row with those keys before AddJobs commits: the rows are
/// invisible to it, and an insert of the same key waits for AddJobs and
/// then fails. PostgreSQL 15, empty table:
///
/// ```text
/// S1: BEGIN; INSERT INTO jobs (payload) VALUES ('a') RETURNING id;  -- 1
/// S1: INSERT INTO jobs (payload) VALUES ('b') RETURNING id;         -- 2
/// S2: BEGIN; INSERT INTO jobs (id, payload) VALUES (1, 'x');        -- waits
/// S1: SELECT count(*) FROM jobs WHERE id = ANY(ARRAY[1, 2]) AND NOT done; -- 2
/// S1: COMMIT;
/// S2: ERROR: duplicate key value violates unique constraint "jobs_pkey"
/// ```
///
/// An explicit key (S2 above) is as harmless as a sequence's: freshness
/// is not needed, the key's uniqueness is.
#[test]
fn reads_of_own_inserts_have_no_counterflow_edge() {
    assert!(robust(
        JOBS,
        &[("AddJobs.sql", ADD_JOBS), ("AddJob.sql", ADD_JOB)]
    ));
    let explicit = "INSERT INTO jobs (id, payload) VALUES (:i, :p);\n";
    assert!(robust(
        JOBS,
        &[("AddJobs.sql", ADD_JOBS), ("Put.sql", explicit)]
    ));
}

/// Control: one key of the array is a parameter, not a key this
/// transaction inserted (one token changed). Two AddJobs that each guess
/// the other's key: PostgreSQL 15, empty table:
///
/// ```text
/// S1: BEGIN; INSERT INTO jobs (payload) VALUES ('a') RETURNING id;  -- 1
/// S2: BEGIN; INSERT INTO jobs (payload) VALUES ('b') RETURNING id;  -- 2
/// S1: SELECT count(*) FROM jobs WHERE id = ANY(ARRAY[1, 2]) AND NOT done; -- 1
/// S2: SELECT count(*) FROM jobs WHERE id = ANY(ARRAY[2, 1]) AND NOT done; -- 1
/// S1: COMMIT; S2: COMMIT;     -- both counted 1; any serial order gives 1 and 2
/// ```
#[test]
fn reads_of_other_keys_stay_not_robust() {
    let guess = "INSERT INTO jobs (payload) VALUES (:p) RETURNING id INTO :a;
SELECT count(*) INTO :n FROM jobs WHERE id = ANY(ARRAY[:a, :x]) AND NOT done;\n";
    assert!(!robust(JOBS, &[("AddJobs.sql", guess)]));
}

// ---------------------------------------------------------------------
// The same workloads replayed on PostgreSQL 15 (random interleavings at
// READ COMMITTED, the machinery of tests/pg_soundness.rs): each removed
// alarm's workload shows no anomaly; each control shows one, so the
// replay can see what the rule must not hide.
// ---------------------------------------------------------------------

#[cfg(feature = "postgres")]
#[path = "common/postgres.rs"]
mod postgres;

#[cfg(feature = "postgres")]
mod on_postgres {
    use super::postgres;
    use super::*;
    use isolint::model::isolation::Level;
    use isolint::replay::random::RandomConfig;
    use isolint_testkit::soundness::check_loaded;

    fn replay(
        server: &isolint::replay::server::Server,
        schema: &str,
        files: &[(&str, &str)],
    ) -> (bool, usize, usize) {
        let d = tempfile::tempdir().expect("temp dir");
        std::fs::write(d.path().join("schema.sql"), schema).expect("write");
        std::fs::write(d.path().join("isolint.yaml"), "schema: schema.sql\n").expect("write");
        for (n, t) in files {
            std::fs::write(d.path().join(n), t).expect("write");
        }
        let loaded = isolint::frontend::load(d.path(), None).expect("loads");
        let cfg = RandomConfig {
            rounds: 40,
            txns: 2,
            keys: 2,
            seed: 24,
            level: Level::ReadCommitted,
        };
        let c = check_loaded(server, &loaded, 24, cfg).expect("replays");
        let r = c.report.expect("not skipped");
        (c.robust, r.anomalies.len(), r.rounds)
    }

    #[test]
    fn removed_alarms_show_no_anomaly_and_controls_do() {
        let Some(server) = postgres::server() else {
            return;
        };
        let robust_cases: Vec<(&str, Vec<(&str, &str)>)> = vec![
            (ACCT, vec![("Withdraw.sql", WITHDRAW_CTE)]),
            (
                COURSE_FK,
                vec![("RemoveCourse.sql", REMOVE), ("Enroll.sql", ENROLL)],
            ),
            (
                JOBS,
                vec![("AddJobs.sql", ADD_JOBS), ("AddJob.sql", ADD_JOB)],
            ),
        ];
        for (schema, files) in &robust_cases {
            let (robust, anomalies, rounds) = replay(&server, schema, files);
            assert!(robust, "{files:?}");
            assert_eq!(anomalies, 0, "{files:?} ({rounds} rounds)");
        }
        let plain = WITHDRAW_CTE.replace(" FOR UPDATE", "");
        let (robust, anomalies, _) = replay(&server, ACCT, &[("Withdraw.sql", &plain)]);
        assert!(!robust);
        assert!(anomalies > 0, "the lost update was not reproduced");
    }
}
