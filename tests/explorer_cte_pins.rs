//! Issue 23 (open item 4): a data-modifying CTE keyed with an extra
//! condition, `WITH j AS (UPDATE jobs … WHERE id = :job AND locked_by =
//! :w RETURNING queue_id) UPDATE queues … FROM j WHERE queues.id =
//! j.queue_id`, touches at most the key's one row: the extra condition can
//! only remove it. The front-end's provenance pins the join to that row's
//! column where the write ran and to NULL (no row) where the extra
//! condition matched nothing (`lower/cte_rows.rs`, `CTE_MATCH`); the BTPs
//! are unchanged.

#[path = "common/workdir.rs"]
mod workdir;
use workdir::workload;
#[path = "common/explorer.rs"]
mod explorer;
use explorer::{confirmed_with_values, model_only, row_value, written};

use isolint::analysis::explorer::{Bounds, Schedule};
use isolint::analysis::graph::{build, Settings};
use isolint::frontend::Loaded;
use isolint::model::btp::StmtType;
use isolint::model::isolation::Level;
use isolint::model::provenance::{Provenance, Value};

/// The search with values of the programs with the provenance given (a
/// test changes it to show what the pin does).
fn search_with(l: &Loaded, prov: &Provenance, names: &[&str]) -> Option<Schedule> {
    explorer::search_at(l, prov, names, Level::ReadCommitted, Bounds::default())
}

const SCHEMA: &str = "CREATE TABLE queues (id int PRIMARY KEY, pending int NOT NULL);
CREATE TABLE jobs (id int PRIMARY KEY, queue_id int NOT NULL REFERENCES queues(id),
                   attempts int NOT NULL, locked_by text);
";

/// graphile-worker's shape: a CTE updates one job by key if this worker
/// holds it, the main UPDATE joins the job's queue.
const FAIL: &str = "WITH j AS (UPDATE jobs SET attempts = attempts + 1
            WHERE id = :job AND locked_by = :w RETURNING queue_id)
UPDATE queues SET pending = pending - 1 FROM j WHERE queues.id = j.queue_id;
";

/// The index of program `name`.
fn program(l: &Loaded, name: &str) -> usize {
    l.workload
        .programs
        .iter()
        .position(|p| p.name == name)
        .unwrap_or_else(|| panic!("no program {name}"))
}

/// The provenance without Fail's join pins: what the front-end gave
/// before the pin (the join on the CTE unpinned).
fn without_join_pins(l: &Loaded) -> Provenance {
    let f = program(l, "Fail");
    let mut prov = l.provenance.clone();
    for pins in &mut prov.programs[f] {
        pins.retain(|(_, v)| *v != Value::Unknown(usize::MAX));
    }
    prov.alternatives[f].clear();
    prov
}

/// Drop: reads a queue, then deletes a job.
const DROP: &str = "SELECT pending FROM queues WHERE id = :q;\nDELETE FROM jobs WHERE id = :job;\n";

/// Fail beside Drop: a read skew through the join. Checked on PostgreSQL
/// 15.20 with two psql sessions at READ COMMITTED, queues (1, pending 4),
/// (4, 6), jobs (2, queue 1, attempts 0, locked_by 'w3') — the values of
/// the schedule the search finds:
///
/// ```text
/// S1 (Drop): BEGIN; SELECT pending FROM queues WHERE id = 1;        -- 4
/// S2 (Fail): BEGIN; WITH j AS (UPDATE jobs SET attempts = attempts + 1
///            WHERE id = 2 AND locked_by = 'w3' RETURNING queue_id)
///            UPDATE queues SET pending = pending - 1
///            FROM j WHERE queues.id = j.queue_id;                  -- UPDATE 1
/// S2: COMMIT;
/// S1: DELETE FROM jobs WHERE id = 2;                                -- DELETE 1
/// S1: COMMIT;              final: queue 1 pending 3, job 2 gone
/// ```
///
/// Serially, Drop then Fail: Drop reads 4, Fail's CTE finds no job
/// (`UPDATE 0`), queue 1 stays 4; Fail then Drop: Drop reads 3. Reading 4
/// and ending with 3 is neither. The schedule needs the queue Fail writes
/// to be the job's queue: without the join's pin the search with values
/// cannot instantiate Fail's join (before this change the answer was "in
/// the model only: … reads queues.id other than by an equality").
#[test]
fn extra_condition_cte_join_is_confirmed_with_values() {
    let l = workload(SCHEMA, &[("Fail.sql", FAIL), ("Drop.sql", DROP)]);
    let s = confirmed_with_values(&l, &["Fail", "Drop"]);
    let (queue, job) = (written(&s, "Fail", "queues"), written(&s, "Fail", "jobs"));
    let joined = row_value(&s, queue, "id").expect("the queue's id");
    assert_eq!(row_value(&s, job, "queue_id"), Some(joined));
    // Only thanks to the pin: without it, not instantiated.
    let s = search_with(&l, &without_join_pins(&l), &["Fail", "Drop"]).expect("a schedule");
    let why = s.model_only.expect("in the model only without the pin");
    assert!(why.contains("other than by an equality"), "{why}");
}

/// The control: Drop deletes the job first, then reads the queue. On
/// PostgreSQL 15.20 (data as above) Fail waits for Drop's row lock and
/// finds the job gone:
///
/// ```text
/// S1 (Drop): BEGIN; DELETE FROM jobs WHERE id = 2;                  -- DELETE 1
/// S2 (Fail): BEGIN; WITH j AS (UPDATE jobs … WHERE id = 2 AND locked_by
///            = 'w3' …) UPDATE queues … FROM j …;                   -- waits
/// S1: SELECT pending FROM queues WHERE id = 1;                      -- 4
/// S1: COMMIT;                                    S2: UPDATE 0; COMMIT;
///                          final: queue 1 pending 4 = Drop then Fail
/// ```
///
/// The BTP model's schedule has Fail's snapshot scan and its write on two
/// different jobs (no constraint ties them when the WHERE has an extra
/// conjunct); the values make them one job, which Drop deleted first.
#[test]
fn delete_before_the_read_is_not_confirmed() {
    let swapped = "DELETE FROM jobs WHERE id = :job;\nSELECT pending FROM queues WHERE id = :q;\n";
    let l = workload(SCHEMA, &[("Fail.sql", FAIL), ("Drop.sql", swapped)]);
    model_only(&l, &["Fail", "Drop"]);
}

/// The unfolding of Fail in which the extra condition removes the row
/// (the key sel of `(write | key sel)`): the CTE returns no row, so the
/// join matches nothing and Fail writes no queue. The pin says so (NULL,
/// which matches no row). Beside Take, which reads a queue and then
/// writes the job's `locked_by`, the BTP model's cycle has that unfolding
/// write the queue Take read; with values it writes none. On PostgreSQL
/// 15.20, job 2 held by 'w9':
///
/// ```text
/// S1 (Take): BEGIN; SELECT pending FROM queues WHERE id = 1;        -- 4
/// S2 (Fail): BEGIN; WITH j AS (UPDATE jobs … WHERE id = 2 AND locked_by
///            = 'w3' …) UPDATE queues … FROM j …;                   -- UPDATE 0
/// S2: COMMIT;
/// S1: UPDATE jobs SET locked_by = 'w5' WHERE id = 2; COMMIT;        -- UPDATE 1
///                       final: queue 1 pending 4, as in either serial order
/// ```
///
/// Giving that alternative the row's column instead of NULL (a pin that
/// ignores the extra condition) confirms the model's schedule: the test
/// fails if the no-match case is not handled.
#[test]
fn extra_condition_that_removes_the_row_joins_no_row() {
    let take =
        "SELECT pending FROM queues WHERE id = :q;\nUPDATE jobs SET locked_by = :v WHERE id = :job;\n";
    let l = workload(SCHEMA, &[("Fail.sql", FAIL), ("Take.sql", take)]);
    let f = program(&l, "Fail");
    let statements = &l.workload.programs[f].statements;
    // The join's pin: the CTE's row where the write ran, NULL where the
    // no-match key sel ran.
    let alts = &l.provenance.alternatives[f];
    assert!(!alts.is_empty(), "no pin on Fail's join");
    for (_, _, options) in alts {
        let [(none, row), (marks, null)] = options.as_slice() else {
            panic!("two alternatives: {options:?}");
        };
        assert!(none.is_empty());
        assert!(matches!(row, Value::Column { .. }), "{row:?}");
        assert_eq!(*null, Value::Literal("NULL".into()));
        let [miss] = marks.as_slice() else {
            panic!("{marks:?}")
        };
        assert_eq!(statements[*miss].ty, StmtType::KeySel);
    }
    // The unfolding that takes the no-match key sel (it writes no job).
    let g = build(&l.workload, Settings::default());
    let no_match = g
        .nodes
        .iter()
        .find(|n| {
            n.ltp.program == f
                && n.ltp
                    .occurrences
                    .iter()
                    .all(|o| statements[o.stmt].ty != StmtType::KeyUpd)
        })
        .map(|n| n.name.clone())
        .expect("an unfolding without Fail's write");
    let names = [no_match.as_str(), "Take"];
    let why = model_only(&l, &names);
    assert!(
        why.contains("within the bounds"),
        "searched with values: {why}"
    );
    // The same with the row's column in place of NULL: confirmed.
    let mut wrong = l.provenance.clone();
    for (_, _, options) in &mut wrong.alternatives[f] {
        options[1].1 = options[0].1.clone();
    }
    let s = search_with(&l, &wrong, &names).expect("a schedule");
    assert!(s.model_only.is_none(), "{:?}", s.model_only);
}

/// Like the keyed join's pin (tests/explorer_join.rs), the pin with an
/// extra condition is dropped, alternatives and all, when a program of
/// the workload writes the joined column.
#[test]
fn extra_condition_pin_is_dropped_when_the_joined_column_is_written() {
    let pinned = |l: &Loaded| {
        let f = program(l, "Fail");
        let pin = l.provenance.programs[f]
            .iter()
            .flatten()
            .any(|(_, v)| *v == Value::Unknown(usize::MAX));
        assert_eq!(pin, !l.provenance.alternatives[f].is_empty());
        pin
    };
    assert!(pinned(&workload(
        SCHEMA,
        &[("Fail.sql", FAIL), ("Drop.sql", DROP)]
    )));
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
