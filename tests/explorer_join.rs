//! Issue 23, item 1: a join on a key pins the joined row. In
//! `WITH j AS (UPDATE jobs … WHERE id = :job RETURNING queue_id) UPDATE
//! queues … FROM j WHERE queues.id = j.queue_id` the front-end's
//! provenance pins `queues.id` to the `queue_id` of the one row the CTE
//! wrote (the BTPs keep the join column), so the explorer's values
//! instantiate the join on exactly that queue (docs/explorer.md,
//! "Values").

#[path = "common/workdir.rs"]
mod workdir;
use workdir::workload;
#[path = "common/explorer.rs"]
mod explorer;
use explorer::{confirmed_with_values, model_only, row_value, search_at, search_model, written};

use isolint::analysis::explorer::{Bounds, OpKind};
use isolint::frontend::Loaded;
use isolint::model::isolation::Level;

const SCHEMA: &str = "CREATE TABLE queues (id int PRIMARY KEY, pending int NOT NULL);
CREATE TABLE jobs (id int PRIMARY KEY, queue_id int NOT NULL REFERENCES queues(id),
                   attempts int NOT NULL);
";

/// graphile-worker's shape: a CTE updates one job by key, the main
/// UPDATE joins the job's queue.
const FAIL: &str =
    "WITH j AS (UPDATE jobs SET attempts = attempts + 1 WHERE id = :job RETURNING queue_id)
UPDATE queues SET pending = pending - 1 FROM j WHERE queues.id = j.queue_id;
";

/// Fail beside a reader of one queue and one job: a read skew. Checked on
/// PostgreSQL 15.20 with two psql sessions at READ COMMITTED, queues
/// (2, pending 4), (3, 6), jobs (1, queue 2, attempts 0):
///
/// ```text
/// S2: BEGIN; SELECT pending FROM queues WHERE id = 2;          -- 4
/// S1: BEGIN; WITH j AS (UPDATE jobs SET attempts = attempts + 1 WHERE id = 1
///            RETURNING queue_id) UPDATE queues SET pending = pending - 1
///            FROM j WHERE queues.id = j.queue_id;              -- UPDATE 1
/// S1: COMMIT;
/// S2: SELECT attempts FROM jobs WHERE id = 1;                  -- 1
/// S2: COMMIT;                 final: queue 2 pending 3, job 1 attempts 1
/// ```
///
/// Serially, Peek then Fail reads (4, 0); Fail then Peek reads (3, 1):
/// Peek's (4, 1) is neither. The schedule needs the joined queue to be the
/// job's queue, which only the join's pin gives the search with values.
#[test]
fn cte_update_joined_on_key_is_confirmed_with_values() {
    let l = workload(
        SCHEMA,
        &[
            ("Fail.sql", FAIL),
            (
                "Peek.sql",
                "SELECT pending FROM queues WHERE id = :q;\nSELECT attempts FROM jobs WHERE id = :job;\n",
            ),
        ],
    );
    let s = confirmed_with_values(&l, &["Fail", "Peek"]);
    // The queue Fail writes is the job's queue: its id is the job's
    // queue_id in the schedule's values.
    let (queue, job) = (written(&s, "Fail", "queues"), written(&s, "Fail", "jobs"));
    let joined = row_value(&s, queue, "id").expect("the queue's id");
    assert_eq!(row_value(&s, job, "queue_id"), Some(joined));
}

/// The control: the job's queue is its parent (a foreign key), which
/// exists before any transaction runs, so Fail's join never meets a
/// queue Open inserts. The BTP model's schedule has Fail's predicate
/// miss Open's new queue (a predicate rw) and Open read the job before
/// Fail's write: it needs the job's queue to be the inserted one, which
/// the foreign key forbids. On PostgreSQL 15.20 (data as above), an
/// insert of queue 2 fails (`duplicate key value violates unique
/// constraint "queues_pkey"`), and with a new queue the same
/// interleaving is serial:
///
/// ```text
/// S1: BEGIN; WITH j AS (UPDATE jobs … WHERE id = 1 …) UPDATE queues … ; -- UPDATE 1
/// S2: BEGIN; INSERT INTO queues (id, pending) VALUES (5, 0);
/// S2: SELECT attempts FROM jobs WHERE id = 1;                           -- 0
/// S1: COMMIT; S2: COMMIT;     final = Open then Fail
/// ```
///
/// Without `parents_exist` (values.rs) the search with values confirmed
/// that impossible schedule: the join's pin made the inserted queue the
/// job's.
#[test]
fn join_on_the_parent_never_meets_an_inserted_row() {
    let l = workload(
        SCHEMA,
        &[
            ("Fail.sql", FAIL),
            (
                "Open.sql",
                "INSERT INTO queues (id, pending) VALUES (:q, 0);\nSELECT attempts FROM jobs WHERE id = :job;\n",
            ),
        ],
    );
    // The static test alarms, and the BTP model has a schedule: the
    // control is not vacuous.
    model_only(&l, &["Fail", "Open"]);
}

// ---------------------------------------------------------------------
// Issue 23, item 2: `verify` evaluates a schedule found with values on
// its value instance (`verify_values`), independently of the search.

use isolint::analysis::explorer::verify_values;

/// Peek's read skew (above), found with values: accepted; then made wrong
/// by hand in two ways, each rejected.
#[test]
fn wrong_join_values_are_rejected() {
    let l = workload(
        SCHEMA,
        &[
            ("Fail.sql", FAIL),
            (
                "Peek.sql",
                "SELECT pending FROM queues WHERE id = :q;\nSELECT attempts FROM jobs WHERE id = :job;\n",
            ),
        ],
    );
    let s = confirmed_with_values(&l, &["Fail", "Peek"]);
    assert_eq!(verify_values(&s), Ok(()));
    let facts = s
        .values
        .as_ref()
        .and_then(|v| v.facts.clone())
        .expect("facts");
    let queue = s
        .steps
        .iter()
        .flat_map(|st| &st.ops)
        .filter(|o| o.kind == OpKind::Write)
        .filter_map(|o| o.tuple)
        .find(|&t| s.tuples[t].name.starts_with("queues#"))
        .expect("Fail writes a queue");
    let rel = s.tuples[queue].rel;
    let id = l
        .workload
        .schema
        .rel(rel)
        .attributes
        .iter()
        .position(|a| a == "id")
        .expect("id");
    // (a) The joined queue gets another key than the job's queue_id: the
    // join's predicate "matches" a row with a different key.
    let mut bad = s.clone();
    let f = bad
        .values
        .as_mut()
        .and_then(|v| v.facts.as_mut())
        .expect("facts");
    let slot = f.cols[rel]
        .iter()
        .position(|&c| c == id)
        .expect("id is pinned");
    f.init[queue][slot] = 9999;
    // Which check fails first depends on the schedule's step order: the
    // join's predicate "matches" a row with another key, or (when Peek's
    // key read of the queue comes first, as in the split schedule the
    // explorer finds since h23-split) that row does not hold Peek's key.
    let e = verify_values(&bad).expect_err("a join on another key");
    assert!(e.contains("matches") || e.contains("does not hold"), "{e}");
    // verify itself runs the value check.
    assert!(isolint::analysis::explorer::verify(&bad).is_err());
    // (b) Peek's key read of the queue pins another value than the row's
    // key: a key statement on a row it does not select.
    let mut bad = s.clone();
    let f = bad
        .values
        .as_mut()
        .and_then(|v| v.facts.as_mut())
        .expect("facts");
    let peek = (0..bad.transactions.len())
        .find(|&i| bad.transactions[i].name.starts_with("Peek"))
        .expect("Peek");
    let pins = &mut f.stmts[peek][0].1;
    assert!(!pins.is_empty(), "Peek's key read pins :q");
    pins.iter_mut().for_each(|(_, v)| *v = 9999);
    let e = verify_values(&bad).expect_err("a key read of another row");
    assert!(e.contains("does not hold"), "{e}");
    // The facts are unchanged in the schedule that was accepted.
    assert_eq!(
        s.values.as_ref().and_then(|v| v.facts.as_ref()),
        Some(&facts)
    );
}

/// `DELETE FROM website WHERE hits = :h` beside a reader that counts the
/// same rows twice (a non-repeatable read, PostgreSQL's READ COMMITTED
/// allows it: the DELETE commits between the two counts). Found with
/// values and accepted; a DELETE that skips a row its predicate matches,
/// and a predicate that "matches" a row whose value differs, rejected.
#[test]
fn delete_that_skips_a_matching_row_is_rejected() {
    let l = workload(
        "CREATE TABLE website (id int PRIMARY KEY, hits int NOT NULL);\n",
        &[
            ("Purge.sql", "DELETE FROM website WHERE hits = :h;\n"),
            (
                "Count.sql",
                "SELECT count(*) FROM website WHERE hits = :h;\nSELECT count(*) FROM website WHERE hits = :h;\n",
            ),
        ],
    );
    let s = confirmed_with_values(&l, &["Purge", "Count"]);
    assert_eq!(verify_values(&s), Ok(()));
    // The Purge step that deletes rows.
    let at = s
        .steps
        .iter()
        .position(|st| st.ops.iter().any(|o| o.kind == OpKind::Delete))
        .expect("Purge deletes a row");
    let gone = s.steps[at]
        .ops
        .iter()
        .find(|o| o.kind == OpKind::Delete)
        .and_then(|o| o.tuple)
        .expect("a tuple");
    // (a) The DELETE skips that row (its read and delete dropped).
    let mut bad = s.clone();
    bad.steps[at].ops.retain(|o| o.tuple != Some(gone));
    let e = verify_values(&bad).expect_err("a delete that skips a matching row");
    assert!(e.contains("matches"), "{e}");
    // (b) The row deleted does not hold the predicate's value.
    let mut bad = s.clone();
    let f = bad
        .values
        .as_mut()
        .and_then(|v| v.facts.as_mut())
        .expect("facts");
    f.init[gone].iter_mut().for_each(|v| *v = 9999);
    let e = verify_values(&bad).expect_err("a predicate that matches another value");
    assert!(e.contains("matches"), "{e}");
}

// ---------------------------------------------------------------------
// A CTE keyed by array elements (graphile-worker's completeJobs shape):
// `DELETE … USING unnest(:ids) n(n) WHERE id = n` is a loop of keyed
// deletes; its snapshot scan and the join on its rows are instantiated
// where the loop runs once (one element), and match nothing where it
// does not run (an empty array).

const COMPLETE: &str =
    "WITH j AS (DELETE FROM jobs USING unnest(:ids::int[]) n(n) WHERE id = n RETURNING queue_id)
UPDATE queues SET pending = pending - 1 FROM j WHERE queues.id = j.queue_id;
";

/// Complete beside a reader of the job, then of its queue. PostgreSQL
/// 15.20, two psql sessions at READ COMMITTED, queues (2, 4), (3, 6),
/// jobs (1, queue 2, attempts 0):
///
/// ```text
/// S2: BEGIN; SELECT attempts FROM jobs WHERE id = 1;                 -- 0
/// S1: BEGIN; WITH j AS (DELETE FROM jobs USING unnest('{1}'::int[]) n(n)
///            WHERE id = n RETURNING queue_id) UPDATE queues SET pending =
///            pending - 1 FROM j WHERE queues.id = j.queue_id;        -- UPDATE 1
/// S1: COMMIT;
/// S2: SELECT pending FROM queues WHERE id = 2;                       -- 3
/// S2: COMMIT;
/// ```
///
/// Serially Peek sees (0, 4) or (no job, 3); (0, 3) is neither. (`check
/// --postgres-temp` does not reproduce it: the replay does not take the
/// array's element from the explorer's values.)
#[test]
fn array_keyed_cte_join_is_confirmed_with_values() {
    let l = workload(
        SCHEMA,
        &[
            ("Complete.sql", COMPLETE),
            (
                "Peek.sql",
                "SELECT attempts FROM jobs WHERE id = :job;\nSELECT pending FROM queues WHERE id = :q;\n",
            ),
        ],
    );
    confirmed_with_values(&l, &["Complete", "Peek"]);
}

/// The control: two Completes. On PostgreSQL 15.20 (jobs 1 and 7 in
/// queue 2, pending 4), both interleavings that meet are serial: on
/// different jobs of one queue S2's UPDATE waits for S1's queue row and
/// re-checks it (pending 4 → 2); on the same job S2's DELETE waits, finds
/// the row gone, its CTE returns nothing, and the queue is decremented
/// once (4 → 3), as T1 then T2. The BTP model "confirms" a schedule in
/// which a Complete whose array is empty still writes a queue; the search
/// with values (two transactions) completes without a schedule (the
/// two-element unfolding is not instantiated, which the answer says).
#[test]
fn two_array_keyed_completes_are_not_confirmed_with_values() {
    let l = workload(SCHEMA, &[("Complete.sql", COMPLETE)]);
    assert!(search_model(&l, &["Complete"]).is_some());
    // Two transactions: three exhaust the value budget (25 s in debug).
    let two = Bounds {
        max_txns: 2,
        ..Bounds::default()
    };
    let s = search_at(&l, &l.provenance, &["Complete"], Level::ReadCommitted, two)
        .expect("the model's schedule");
    assert!(
        s.values.is_none(),
        "confirmed with values: not on PostgreSQL"
    );
    let why = s.model_only.expect("in the model only");
    assert!(why.contains("ran more than once"), "{why}");
}

/// The join's pin stands for the joined row's column as the CTE returns
/// it, so it is dropped when a program of the workload writes that column
/// (another transaction could move the job to another queue first); a
/// schema function no program calls does not count.
#[test]
fn join_pin_is_dropped_when_the_workload_writes_the_joined_column() {
    use isolint::model::provenance::Value;
    let pinned = |l: &Loaded| {
        let p = l
            .workload
            .programs
            .iter()
            .position(|p| p.name == "Fail")
            .expect("Fail");
        l.provenance.programs[p]
            .iter()
            .flatten()
            .any(|(_, v)| matches!(v, Value::Column { .. }))
    };
    let with_function = format!(
        "{SCHEMA}CREATE FUNCTION move_job(j int, q int) RETURNS void LANGUAGE sql AS $$ UPDATE jobs SET queue_id = q WHERE id = j $$;\n"
    );
    assert!(pinned(&workload(&with_function, &[("Fail.sql", FAIL)])));
    let moved = workload(
        SCHEMA,
        &[
            ("Fail.sql", FAIL),
            (
                "Move.sql",
                "UPDATE jobs SET queue_id = :q WHERE id = :job;\n",
            ),
        ],
    );
    assert!(!pinned(&moved));
}
