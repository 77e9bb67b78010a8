//! Issue 23, items 1 and 5 (h23-range): range predicates with values.
//! `SELECT … WHERE start_date BETWEEN :lo AND :hi AND status = :s`
//! (BenchBase auctionmark's `getDueItems`) was "not instantiated" by the
//! explorer ("reads item.start_date other than by an equality to a
//! value"), so its cycles were "in the model only", and the replay made up
//! `:lo`, `:hi` outside the seeded rows' dates: nothing matched, nothing
//! was reproduced. Now a range whose bounds are parameters nothing else
//! pins, on a column no transaction of the instance writes, is taken to
//! match every row (the bounds bracket the rows: `explorer::values`,
//! `covering`), and the replay gives such bounds the type's extremes
//! (`-infinity` / `infinity`). One throwaway server per replay test; they
//! skip, saying why, without PostgreSQL binaries (tests/common/postgres.rs).
#![cfg(feature = "postgres")]

use isolint::replay::server::Server;
use serde_json::Value;

#[path = "common/postgres.rs"]
mod postgres;
#[path = "common/replay.rs"]
mod replay;
use replay::{confirmation, not_robust};
#[path = "common/workdir.rs"]
mod workdir;
use workdir::dir as workload_dir;

/// `isolint check ARGS` of the workload of `schema` and `files`, which
/// must find it not robust: the confirmation of its first witness.
fn confirmed(schema: &str, files: &[(&str, &str)], args: &[&str]) -> Value {
    let d = workload_dir(schema, "", files);
    confirmation(&not_robust(d.path(), args)).clone()
}

/// `isolint check ARGS` of the workload, which must find it robust.
fn robust(schema: &str, files: &[(&str, &str)], args: &[&str]) {
    replay::robust(workload_dir(schema, "", files).path(), args);
}

/// The first witness is "in the model only" (no values), `why` among the
/// reasons.
fn model_only(schema: &str, files: &[(&str, &str)], why: &str) {
    let c = confirmed(schema, files, &[]);
    assert_eq!(c["with_values"], false, "{c}");
    let reasons = c["model_only"].as_str().unwrap_or_default();
    assert!(reasons.contains(why), "{c}");
}

/// `isolint check --postgres` of the workload: not robust, its first
/// witness confirmed with values and reproduced on `s`; the confirmation.
fn reproduced_with_values(s: &Server, schema: &str, files: &[(&str, &str)]) -> Value {
    let d = workload_dir(schema, "", files);
    let v = replay::reproduced_json(d.path(), &s.conninfo(), &[]);
    let c = confirmation(&v).clone();
    assert_eq!(c["with_values"], true, "{c}");
    c
}

const ITEM: &str =
    "CREATE TABLE item (id int PRIMARY KEY, start_date timestamp NOT NULL, status int NOT NULL);";

/// The due items of a period, read twice (auctionmark's CloseAuctions
/// runs `getDueItems` in a loop).
const DUE: &str = "
SELECT id FROM item WHERE start_date BETWEEN :lo AND :hi AND status = :s;
SELECT id FROM item WHERE start_date BETWEEN :lo AND :hi AND status = :s;
";
/// auctionmark's `updateItemStatus`.
const CLOSE: &str = "UPDATE item SET status = :new WHERE id = :id;\n";

/// A real anomaly: by hand on PostgreSQL 15.20 (two psql sessions, both
/// READ COMMITTED, item (1, '2001-01-04', 2), (4, '2001-01-06', 6)):
/// T1 `BEGIN; UPDATE item SET status = 7 WHERE id = 1`; T2 `BEGIN;
/// SELECT id FROM item WHERE start_date BETWEEN '-infinity' AND
/// 'infinity' AND status = 2` → 1; T1 COMMIT; T2 the same SELECT → no
/// row; COMMIT. Serially T2 reads no row twice (T1 first) or 1 twice (T2
/// first). Before: "in the model only" (the range was not instantiated)
/// and not reproduced (made-up bounds matched no seeded row).
#[test]
fn a_range_read_is_confirmed_with_values_and_reproduced() {
    let Some(s) = postgres::server() else { return };
    let c = reproduced_with_values(&s, ITEM, &[("Due.sql", DUE), ("Close.sql", CLOSE)]);
    assert_eq!(c["status"], "confirmed", "{c}");
}

/// Control: Due at REPEATABLE READ reads both times from one snapshot;
/// the workload is robust (the static test says so: no witness to
/// replay). By hand on PostgreSQL 15.20, the schedule above with T2 `BEGIN
/// ISOLATION LEVEL REPEATABLE READ` reads 1 twice, as serially T2, T1.
#[test]
fn the_range_reader_at_repeatable_read_is_robust() {
    let files = [("Due.sql", DUE), ("Close.sql", CLOSE)];
    robust(ITEM, &files, &["--levels", "Due=repeatable-read"]);
}

/// Control: a reader by key that tests neither the status nor anything
/// Close writes (`id` and `start_date` only) has no conflict with Close:
/// robust, whatever the values.
#[test]
fn a_reader_by_key_of_columns_nobody_writes_is_robust() {
    let by_key = "
SELECT id FROM item WHERE id = :k AND start_date BETWEEN :lo AND :hi;
SELECT id FROM item WHERE id = :k AND start_date BETWEEN :lo AND :hi;
";
    robust(
        ITEM,
        &[("Due.sql", by_key), ("Close.sql", CLOSE)],
        &["--no-confirm"],
    );
}

/// Literal bounds cannot be chosen: the rows would have to be placed
/// inside them, which the explorer does not do, so the instance is not
/// instantiated and the answer stays "in the model only" (never a
/// "confirmed" with values that assumed every row matches).
#[test]
fn literal_bounds_are_not_taken_to_match_every_row() {
    let due = "
SELECT id FROM item WHERE start_date BETWEEN '2001-01-01' AND '2001-02-01' AND status = :s;
SELECT id FROM item WHERE start_date BETWEEN '2001-01-01' AND '2001-02-01' AND status = :s;
";
    model_only(
        ITEM,
        &[("Due.sql", due), ("Close.sql", CLOSE)],
        "start_date",
    );
}

/// A bound that the transaction also pins (here the key of a row it
/// reads) has a value of its own: the range may exclude rows, so it is
/// not taken to match every row.
#[test]
fn a_bound_pinned_elsewhere_is_not_taken_to_match_every_row() {
    let schema = "CREATE TABLE item (id int PRIMARY KEY, rank int NOT NULL, status int NOT NULL);";
    let due = "
SELECT id FROM item WHERE rank >= :lo AND status = :s;
SELECT status FROM item WHERE id = :lo;
SELECT id FROM item WHERE rank >= :lo AND status = :s;
";
    let files = [("Due.sql", due), ("Close.sql", CLOSE)];
    model_only(
        schema,
        &files,
        ":lo of Due bounds a range and is also pinned",
    );
}

/// A range on a column another transaction writes: a row may leave or
/// enter the range, which bounds at the extremes do not model, so the
/// instance is not instantiated (in the model only).
#[test]
fn a_range_on_a_written_column_is_not_taken_to_match_every_row() {
    let due = "
SELECT id FROM item WHERE start_date < :hi;
SELECT id FROM item WHERE start_date < :hi;
";
    let mv = "UPDATE item SET start_date = :d WHERE id = :id;\n";
    let files = [("Due.sql", due), ("Move.sql", mv)];
    model_only(
        ITEM,
        &files,
        "reads item.start_date other than by an equality",
    );
}

// ---------------------------------------------------------------------
// `= ANY(:ids)` (graphile-worker's `where id = any($1::bigint[])`) is
// pinned per element, as `FROM unnest(:ids) n WHERE id = n` already was:
// before, the WHERE read `id` "other than by an equality to a value" (in
// the model only) and the replay made up an array that met no seeded row.

const JOBS: &str = "CREATE TABLE queues (id int PRIMARY KEY, pending int NOT NULL);
CREATE TABLE jobs (id bigint PRIMARY KEY, queue_id int NOT NULL REFERENCES queues(id),
                   attempts int NOT NULL);
";
const FAIL_ANY: &str = "UPDATE jobs SET attempts = attempts + 1 WHERE id = ANY(:ids);\n";
const PEEK: &str = "
SELECT attempts FROM jobs WHERE id = :a;
SELECT attempts FROM jobs WHERE id = :b;
";

/// By hand on PostgreSQL 15.20 (two psql sessions at READ COMMITTED,
/// queues (2, 4), jobs (1, queue 2, attempts 3)): T1 `BEGIN; UPDATE jobs
/// SET attempts = attempts + 1 WHERE id = ANY('{1}'::bigint[])`; T2
/// `BEGIN; SELECT attempts FROM jobs WHERE id = 1` → 3; T1 COMMIT; T2 the
/// same → 4; COMMIT. Serially T2 reads 4 twice or 3 twice.
#[test]
fn any_of_an_array_parameter_is_pinned_and_reproduced() {
    let Some(s) = postgres::server() else { return };
    reproduced_with_values(&s, JOBS, &[("Fail.sql", FAIL_ANY), ("Peek.sql", PEEK)]);
}

/// Control: Peek at REPEATABLE READ reads one snapshot: robust.
#[test]
fn any_with_the_reader_at_repeatable_read_is_robust() {
    let files = [("Fail.sql", FAIL_ANY), ("Peek.sql", PEEK)];
    robust(JOBS, &files, &["--levels", "Peek=repeatable-read"]);
}

/// graphile-worker's completeJobs with `= ANY`: two of them are serial on
/// PostgreSQL 15.20 (queues (2, 4), jobs 1 and 7 in queue 2: on different
/// jobs T2's UPDATE of the queue waits for T1's and re-checks it, 4 → 2;
/// on one job T2's DELETE waits, finds it gone, its CTE returns nothing,
/// 2 → 1: as T1 then T2 both times). The BTP model "confirms" a schedule;
/// with the pins the search with values (two transactions) finds none,
/// as for the `unnest` form (tests/explorer_join.rs).
#[test]
fn two_any_keyed_completes_are_not_confirmed_with_values() {
    let complete = "WITH j AS (DELETE FROM jobs WHERE id = ANY(:ids) RETURNING queue_id)
UPDATE queues SET pending = pending - 1 FROM j WHERE queues.id = j.queue_id;
";
    let c = confirmed(JOBS, &[("Complete.sql", complete)], &["--max-txns", "2"]);
    assert_ne!(c["with_values"], true, "{c}");
    let why = c["model_only"].as_str().unwrap_or_default();
    assert!(why.contains("ran more than once"), "{c}");
}

// ---------------------------------------------------------------------
// `id = :a::bigint`: a cast of an untyped parameter is the parameter
// (PostgreSQL infers the parameter's type from the cast), so the pin
// stays; before it was a computed value and the instance was not
// instantiated.

const PEEK_CAST: &str = "
SELECT attempts FROM jobs WHERE id = :a::bigint;
SELECT attempts FROM jobs WHERE id = :b::bigint;
";

/// The schedule of `any_of_an_array_parameter_is_pinned_and_reproduced`
/// with `id = 1::bigint` in T2 (run by hand the same way: 3, then 4).
#[test]
fn a_cast_parameter_keeps_its_pin() {
    let Some(s) = postgres::server() else { return };
    let files = [("Fail.sql", FAIL_ANY), ("Peek.sql", PEEK_CAST)];
    reproduced_with_values(&s, JOBS, &files);
}

/// A cast with a typmod changes values (`numeric(3, 0)` rounds 1.4 and
/// 0.6 to 1: two parameters, one row): it stays a computed value and the
/// instance is not instantiated.
#[test]
fn a_cast_with_a_typmod_is_not_the_parameter() {
    let peek = "
SELECT attempts FROM jobs WHERE id = :a::numeric(3, 0);
SELECT attempts FROM jobs WHERE id = :b::numeric(3, 0);
";
    let files = [("Fail.sql", FAIL_ANY), ("Peek.sql", peek)];
    model_only(JOBS, &files, "pins a value the program computes");
}

// ---------------------------------------------------------------------
// An UPDATE's SET value that is a literal, NULL or a parameter is the
// value written (`Provenance::sets`). Before, the explorer gave every
// write of a pinned column "a value chosen among the pinned ones and a
// fresh one", whatever the SQL wrote: `SET status = 2` could move a row
// out of `status = 2`, a "confirmed" schedule PostgreSQL cannot run.

const DUE_TWO: &str = "
SELECT id FROM item WHERE status = 2;
SELECT id FROM item WHERE status = 2;
";

/// Close rewrites the status a row already has. By hand on PostgreSQL
/// 15.20 (item (1, …, 2), (3, …, 5), both READ COMMITTED): T1 `BEGIN;
/// UPDATE item SET status = 2 WHERE id = 1 AND status = 2`; T2 `BEGIN;
/// SELECT id FROM item WHERE status = 2` → 1; T1 COMMIT; T2 the same → 1;
/// and with `id = 3` (no match) T2 reads 1 twice too: as serially. Before
/// this change the search with values "confirmed" a schedule in which T1
/// writes item#1's status to "a value no predicate pins".
#[test]
fn a_literal_set_value_is_the_value_written() {
    let close = "UPDATE item SET status = 2 WHERE id = :id AND status = 2;\n";
    let c = confirmed(ITEM, &[("Due.sql", DUE_TWO), ("Close.sql", close)], &[]);
    assert_ne!(c["with_values"], true, "{c}");
}

/// Control: `SET status = 7` moves the row out of `status = 2` — the
/// schedule of `a_range_read_is_confirmed_with_values_and_reproduced`
/// without the range (T2 reads 1, then nothing): confirmed with values.
#[test]
fn a_literal_set_that_moves_the_row_is_confirmed() {
    let close = "UPDATE item SET status = 7 WHERE id = :id;\n";
    let c = confirmed(ITEM, &[("Due.sql", DUE_TWO), ("Close.sql", close)], &[]);
    assert_eq!(c["with_values"], true, "{c}");
    let writes = c["values"]["writes"].to_string();
    assert!(!writes.contains("= 2"), "T1 writes 7, never 2: {writes}");
}

/// What the front-end records (`Provenance::ranges`, `range_side`): top-level
/// range conjuncts with parameter bounds on a column nothing else in the
/// WHERE tests, each bound on its side; not NOT BETWEEN, not a range inside
/// an OR, not a range on a pinned column.
#[test]
fn range_conjuncts_are_recorded_with_their_side() {
    let due = "
SELECT id FROM item WHERE start_date BETWEEN :lo AND :hi AND status = :s;
SELECT id FROM item WHERE :x > start_date;
SELECT id FROM item WHERE start_date NOT BETWEEN :a AND :b;
SELECT id FROM item WHERE start_date < :c OR status = 1;
SELECT id FROM item WHERE status > :d AND status = :e;
SELECT id FROM item WHERE start_date >= :y AND start_date < :y;
";
    let l = workdir::load(ITEM, "", &[("Due.sql", due)]).expect("loads");
    let side = |p: &str| l.provenance.range_side(0, p);
    assert_eq!(side("lo"), Some(false));
    assert_eq!(side("hi"), Some(true));
    assert_eq!(side("x"), Some(true), "`:x > col` is `col < :x`");
    for p in ["a", "b", "c", "d", "e", "s"] {
        assert_eq!(side(p), None, ":{p}");
    }
    assert_eq!(side("y"), None, "a bound on both sides");
}

/// A routine's parameter has a declared type: `a::bigint` of a numeric
/// `a` rounds (1.5 and 2.4 both read row 2), so it is no identity and
/// stays a computed value (in the model only). Control: `id = a` (the
/// parameter itself) is pinned and confirmed with values.
#[test]
fn a_cast_of_a_typed_routine_parameter_is_not_the_parameter() {
    let routines = |cond: &str| {
        format!(
            "CREATE FUNCTION peek(a numeric) RETURNS int LANGUAGE plpgsql AS $$
DECLARE x int; y int;
BEGIN
  SELECT attempts INTO x FROM jobs WHERE {cond};
  SELECT attempts INTO y FROM jobs WHERE {cond};
  RETURN x + y;
END $$;
CREATE FUNCTION fail(k bigint) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  UPDATE jobs SET attempts = attempts + 1 WHERE id = k;
END $$;
"
        )
    };
    let manifest = "programs: [peek, fail]\n";
    for (cond, with_values) in [("id = a::bigint", false), ("id = a", true)] {
        let d = workload_dir(JOBS, manifest, &[("r.sql", &routines(cond))]);
        let v = not_robust(d.path(), &[]);
        let c = confirmation(&v);
        assert_eq!(c["with_values"], with_values, "{cond}: {c}");
    }
}

/// `= ANY(:ids)` with an extra conjunct (graphile-worker's failJobs and
/// returnJobs: `where id = any($1::bigint[]) and locked_by = $3::text`):
/// the per-element write is a branch (key upd | key sel), neither runs in
/// every iteration, and the statement's snapshot scan was left unpinned
/// ("reads jobs.id other than by an equality"); it is now pinned to the
/// element. By hand on PostgreSQL 15.20 (jobs (1, 'w1', 3), both READ
/// COMMITTED): T1 `BEGIN; UPDATE jobs SET attempts = attempts + 1 WHERE
/// id = ANY('{1}'::bigint[]) AND locked_by = 'w1'`; T2 `BEGIN; SELECT
/// attempts FROM jobs WHERE id = 1` → 3; T1 COMMIT; T2 the same → 4.
#[test]
fn any_with_an_extra_conjunct_is_pinned_and_reproduced() {
    let Some(s) = postgres::server() else { return };
    let schema =
        "CREATE TABLE jobs (id bigint PRIMARY KEY, locked_by text, attempts int NOT NULL);";
    let fail = "UPDATE jobs SET attempts = attempts + 1 WHERE id = ANY(:ids) AND locked_by = :w;\n";
    reproduced_with_values(&s, schema, &[("Fail.sql", fail), ("Peek.sql", PEEK)]);
}
