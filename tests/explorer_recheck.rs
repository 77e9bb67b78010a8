//! Issue 23: the explorer's "confirmed with values" must be a schedule
//! PostgreSQL can produce. An UPDATE/DELETE in a WITH is lowered as its
//! target's snapshot scan (a separate BTP statement) and, later, the write
//! that locks the rows. PostgreSQL's write re-fetches a row changed since
//! the snapshot and re-evaluates the WHERE on its latest version
//! (EvalPlanQual): the scan's read of that row on the snapshot decides
//! nothing, so it gives no rw dependency (`Provenance::scans`,
//! `mvrc::Search::superseded`). graphile-worker's completeJobs has this
//! shape; before the fix two of them were "confirmed with values".

#[path = "common/workdir.rs"]
mod workdir;
use workdir::workload;
#[path = "common/explorer.rs"]
mod explorer;
use explorer::{confirmed_with_values, model_only};

use isolint::model::btp::StmtType;

const SCHEMA: &str = "CREATE TABLE queues (id int PRIMARY KEY, locked_by text);
CREATE TABLE jobs (id int PRIMARY KEY, queue_id int NOT NULL REFERENCES queues(id),
                   locked_by text);
";

/// graphile-worker's completeJobs, one job: delete the job if this worker
/// holds it, and unlock its queue if this worker holds the queue.
const COMPLETE: &str = "WITH j AS (DELETE FROM jobs WHERE id = :job AND locked_by = :w RETURNING *)
UPDATE queues SET locked_by = null FROM j
 WHERE queues.id = j.queue_id AND queues.locked_by = :w;
";

/// completeJobs beside PeekComplete, the same after a read of the queue
/// in a statement of its own.
fn beside_peek_complete() -> isolint::frontend::Loaded {
    let peek = format!("SELECT locked_by FROM queues WHERE id = :q;\n{COMPLETE}");
    workload(
        SCHEMA,
        &[("Complete.sql", COMPLETE), ("PeekComplete.sql", &peek)],
    )
}

/// Two completeJobs of one worker, on two jobs of the queue it holds.
/// On PostgreSQL 15.20 (two psql sessions, READ COMMITTED; queues (3,
/// 'w'), jobs (1, 3, 'w'), (4, 3, 'w')):
///
/// ```text
/// S1: BEGIN; WITH j AS (DELETE FROM jobs WHERE id = 1 AND locked_by = 'w'
///     RETURNING *) UPDATE queues SET locked_by = null FROM j
///     WHERE queues.id = j.queue_id AND queues.locked_by = 'w';   -- UPDATE 1
/// S2: BEGIN; (the same for job 4)                 -- waits for queue 3's lock
/// S1: COMMIT;
/// S2: UPDATE 0 (re-checks queue 3's new version: locked_by is NULL); COMMIT;
///     final: no jobs, queue 3 unlocked
/// ```
///
/// Serially S1 then S2: UPDATE 1, then UPDATE 0, the same final state: the
/// outcome of the only interleaving that conflicts is a serial one. The
/// explorer's schedule (before the fix, "confirmed with values") had S2's
/// snapshot scan of queue 3 read the version before S1's (rw S2 → S1) and
/// its UPDATE re-check read S1's (wr S1 → S2); the scan's read is what
/// EvalPlanQual replaces. The static verdict stays "not robust" (the BTP
/// model's cycle, in the model only).
#[test]
fn two_completes_of_one_worker_are_not_confirmed_with_values() {
    let l = workload(SCHEMA, &[("Complete.sql", COMPLETE)]);
    assert!(!workdir::robust_of(&l), "the static verdict");
    // Confirmed with values would be wrong: PostgreSQL's outcome is a
    // serial one.
    model_only(&l, &["Complete"]);
}

/// The control: the same completeJobs beside one that first reads the
/// queue in a statement of its own (a separate snapshot, nothing
/// re-checks it). On PostgreSQL 15.20 (data as above):
///
/// ```text
/// S2: BEGIN; SELECT locked_by FROM queues WHERE id = 3;          -- 'w'
/// S1: BEGIN; completeJobs(job 1, 'w');                         -- UPDATE 1
/// S1: COMMIT;
/// S2: completeJobs(job 4, 'w');                                -- UPDATE 0
/// S2: COMMIT;
/// ```
///
/// S1 then S2: S2 reads NULL. S2 then S1: S2 reads 'w' but its UPDATE
/// unlocks the queue (UPDATE 1) and S1's updates nothing (UPDATE 0).
/// Reading 'w' with UPDATE 0 is neither: a real anomaly, which must stay
/// confirmed with values (the test fails if the fix dropped every read of
/// the queue, not only the scan's).
#[test]
fn a_read_of_the_queue_in_another_statement_stays_confirmed() {
    let l = beside_peek_complete();
    confirmed_with_values(&l, &["Complete", "PeekComplete"]);
}

/// What the front-end records: the two snapshot scans of completeJobs
/// (the CTE's job by key, the UPDATE's queue), not the writes nor the
/// no-match key read, and nothing for a statement outside a WITH.
#[test]
fn the_target_scans_of_a_with_are_recorded() {
    let l = beside_peek_complete();
    for (p, prog) in l.workload.programs.iter().enumerate() {
        let scans: Vec<(StmtType, &str)> = (0..prog.statements.len())
            .filter(|&q| l.provenance.scan(p, q))
            .map(|q| {
                let s = &prog.statements[q];
                (s.ty, l.workload.schema.rel(s.rel).name.as_str())
            })
            .collect();
        assert_eq!(
            scans,
            [(StmtType::KeySel, "jobs"), (StmtType::PredSel, "queues")],
            "{}",
            prog.name
        );
        // The peek (statement 0 of PeekComplete) is no scan.
        assert!(!l.provenance.scan(p, 0) || prog.name == "Complete");
    }
}

/// graphile-worker's own form: the jobs by an array of ids (`unnest`, a
/// loop of per-element deletes inside the statement), the worker's id
/// cast. Two parts of one SQL statement: the loop's deletes and the
/// UPDATE after them share the statement's snapshot (`instance::continues`
/// with a loop inside the statement; before, the UPDATE took a fresh
/// snapshot after the loop, which PostgreSQL never does). On PostgreSQL
/// 15.20, with `ARRAY[1]` and `ARRAY[4]` in place of job 1 and job 4, the
/// schedule of `two_completes_of_one_worker_are_not_confirmed_with_values`
/// gives the same: UPDATE 1, UPDATE 0 (after the wait), as serially.
#[test]
fn graphile_complete_jobs_by_array_is_not_confirmed_with_values() {
    let complete = "WITH j AS (DELETE FROM jobs USING unnest(:ids::bigint[]) n(n)
 WHERE id = n RETURNING *)
UPDATE queues SET locked_by = null FROM j
 WHERE queues.id = j.queue_id AND queues.locked_by = :w::text;
";
    let l = workload(SCHEMA, &[("Complete.sql", complete)]);
    // PostgreSQL's outcome is a serial one.
    model_only(&l, &["Complete"]);
}
