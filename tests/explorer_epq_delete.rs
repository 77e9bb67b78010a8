//! Issue 23: "confirmed" must be a schedule PostgreSQL can produce. A keyed
//! UPDATE/DELETE with a condition beyond its key (`WHERE id = :k AND flag =
//! 1`) is lowered as a branch: the write, or a key sel of the extra columns
//! (no row matched, the program goes on). PostgreSQL evaluates the whole
//! WHERE on the row's version in the statement's snapshot; a row that
//! matched there and is held by another transaction is waited for and
//! re-checked on its new version (EvalPlanQual): deleted or no longer
//! matching, nothing is written, and the statement in effect read the
//! other's write (wr). The explorer used to take the no-match branch on a
//! row that matched (its extra pins were the row's values), so it read the
//! old version beside the writer PostgreSQL waits for (rw) and "confirmed"
//! schedules whose outcome on PostgreSQL is serial. Now the extra pins are
//! checked on the versions (`Provenance::conditions`, `StepSpec::cond`,
//! `mvrc::Search::condition_holds`).
//!
//! Checked by hand on PostgreSQL 15.20 (two psql sessions, READ COMMITTED,
//! `t(id int PRIMARY KEY, flag int, v int)`, row 2 with flag 1 unless
//! said; S2 writes row 2 and holds it, then S1 runs its statement, then S2
//! commits):
//!
//! ```text
//! S2 holds                    S1 runs                                   S1
//! DELETE … id = 2             DELETE … id = 2 AND flag = 1     waits, DELETE 0
//! SET flag = 0 … id = 2       DELETE … id = 2 AND flag = 1     waits, DELETE 0
//! SET v = 7 … id = 2          DELETE … id = 2 AND flag = 1     waits, DELETE 1
//! SET flag = 1 (was 0)        DELETE … id = 2 AND flag = 1     no wait, DELETE 0
//! DELETE … id = 2             UPDATE SET v = v + 1 … AND flag = 1   waits, UPDATE 0
//! SET flag = 0 … id = 2       UPDATE SET v = v + 1 … AND flag = 1   waits, UPDATE 0
//! SET v = 7 … id = 2          UPDATE SET v = v + 1 … AND flag = 1   waits, v = 8
//! SET flag = 1 (was 0)        UPDATE SET v = v + 1 … AND flag = 1   no wait, UPDATE 0
//! ```
//!
//! The predicate forms (`DELETE FROM t WHERE flag = 1`, `UPDATE … WHERE
//! flag = 1`, row 5 with flag 1 beside) behave the same on row 2 and write
//! row 5 — the EvalPlanQual step the explorer already models.

#[path = "common/workdir.rs"]
mod workdir;
use workdir::workload;
#[path = "common/explorer.rs"]
mod explorer;
use explorer::{search, search_model};

use isolint::analysis::explorer::Schedule;
use isolint::frontend::Loaded;
use isolint::model::btp::StmtType;
use isolint::model::provenance::Role;

const SCHEMA: &str = "CREATE TABLE t (id int PRIMARY KEY, flag int NOT NULL, v int NOT NULL);
CREATE TABLE u (id int PRIMARY KEY, v int NOT NULL);
";

/// Delete the row if it is flagged, then read a counter.
const DEL_IF: &str = "DELETE FROM t WHERE id = :k AND flag = 1;
SELECT v FROM u WHERE id = :j;
";

/// Bump the row if it is flagged, then read a counter.
const BUMP_IF: &str = "UPDATE t SET v = v + 1 WHERE id = :k AND flag = 1;
SELECT v FROM u WHERE id = :j;
";

/// Bump the counter, then flag the row (the condition becomes true).
const ARM: &str = "UPDATE u SET v = v + 1 WHERE id = :j;
UPDATE t SET flag = 1 WHERE id = :k;
";

fn confirmed(s: &Option<Schedule>) -> bool {
    s.as_ref()
        .is_some_and(|s| s.model_only.is_none() && s.values.is_some())
}

/// DelIf beside Purge, which bumps the counter and then deletes the row
/// under the same condition. On PostgreSQL 15.20 (t (2, 1, 0), u (3, 0)):
///
/// ```text
/// S2: BEGIN; UPDATE u SET v = v + 1 WHERE id = 3;                 -- UPDATE 1
/// S2: DELETE FROM t WHERE id = 2 AND flag = 1;                    -- DELETE 1
/// S1: BEGIN; DELETE FROM t WHERE id = 2 AND flag = 1;   -- waits for S2's lock
/// S2: COMMIT;
/// S1: DELETE 0 (re-checks row 2: deleted); SELECT v FROM u WHERE id = 3; -- 1
/// S1: COMMIT;
/// ```
///
/// S1 read S2's delete and S2's counter: the outcome of S2 then S1. (S1's
/// DELETE before S2's takes the row; S1's no-match needs flag ≠ 1 on its
/// snapshot, and then Purge deletes nothing either.) Before, the explorer
/// "confirmed" S1's no-match read of the old row (flag 1, rw S1 → S2)
/// with the wr on the counter (S2 → S1); `isolint replay` on that schedule
/// says "not reproduced" (S2 blocks where the schedule needs it).
#[test]
fn keyed_delete_after_a_concurrent_delete_is_not_confirmed() {
    let purge = "UPDATE u SET v = v + 1 WHERE id = :j;
DELETE FROM t WHERE id = :k AND flag = 1;
";
    let l = workload(SCHEMA, &[("DelIf.sql", DEL_IF), ("Purge.sql", purge)]);
    assert!(!workdir::robust_of(&l), "the static verdict");
    assert!(
        search_model(&l, &["DelIf", "Purge"]).is_some(),
        "the model's cycle"
    );
    let s = search(&l, &["DelIf", "Purge"]);
    assert!(
        !confirmed(&s),
        "confirmed with values: PostgreSQL's outcome is a serial one"
    );
}

/// BumpIf beside Clear, which bumps the counter and then clears the flag
/// (the condition becomes false). On PostgreSQL 15.20 (t (2, 1, 0), u (3,
/// 0)):
///
/// ```text
/// S2: BEGIN; UPDATE u SET v = v + 1 WHERE id = 3;                 -- UPDATE 1
/// S2: UPDATE t SET flag = 0 WHERE id = 2 AND flag = 1;            -- UPDATE 1
/// S1: BEGIN; UPDATE t SET v = v + 1 WHERE id = 2 AND flag = 1;        -- waits
/// S2: COMMIT;
/// S1: UPDATE 0 (re-checks row 2: flag 0); SELECT v FROM u WHERE id = 3; -- 1
/// S1: COMMIT;                                   final: t (2, 0, 0), u (3, 1)
/// ```
///
/// The outcome of S2 then S1. Before, "confirmed" as above (S1's no-match
/// read of flag 1 beside S2's pending write).
#[test]
fn keyed_update_after_a_concurrent_clear_is_not_confirmed() {
    let clear = "UPDATE u SET v = v + 1 WHERE id = :j;
UPDATE t SET flag = 0 WHERE id = :k AND flag = 1;
";
    let l = workload(SCHEMA, &[("BumpIf.sql", BUMP_IF), ("Clear.sql", clear)]);
    assert!(!workdir::robust_of(&l), "the static verdict");
    assert!(
        search_model(&l, &["BumpIf", "Clear"]).is_some(),
        "the model's cycle"
    );
    let s = search(&l, &["BumpIf", "Clear"]);
    assert!(
        !confirmed(&s),
        "confirmed with values: PostgreSQL's outcome is a serial one"
    );
}

/// The control of the DELETE case: Arm makes the condition true. On
/// PostgreSQL 15.20 (t (2, 0, 0), u (3, 0)):
///
/// ```text
/// S1: BEGIN; UPDATE u SET v = v + 1 WHERE id = 3;                 -- UPDATE 1
/// S1: UPDATE t SET flag = 1 WHERE id = 2;                         -- UPDATE 1
/// S2: BEGIN; DELETE FROM t WHERE id = 2 AND flag = 1;
///            -- DELETE 0 at once: flag 0 on its snapshot, no wait
/// S1: COMMIT;
/// S2: SELECT v FROM u WHERE id = 3;                                    -- 1
/// S2: COMMIT;                                   final: t (2, 1, 0), u (3, 1)
/// ```
///
/// S1 then S2 would delete the row; S2 then S1 would read 0: a real
/// anomaly (rw S2 → S1 on the row's flag, wr S1 → S2 on the counter),
/// which must stay confirmed with values (`isolint replay` reproduces it on
/// PostgreSQL 15.20: "serial T1, T2: … 1 row(s) affected (concurrently:
/// 0)").
#[test]
fn keyed_delete_beside_a_row_made_to_match_stays_confirmed() {
    let l = workload(SCHEMA, &[("DelIf.sql", DEL_IF), ("Arm.sql", ARM)]);
    let s = search(&l, &["DelIf", "Arm"]);
    assert!(confirmed(&s), "not confirmed with values: {s:?}");
}

/// The control of the UPDATE case, the same schedule with BumpIf: UPDATE
/// 0 at once (flag 0 on its snapshot), then the new counter — neither
/// serial order (run on PostgreSQL 15.20: the table above, last line).
#[test]
fn keyed_update_beside_a_row_made_to_match_stays_confirmed() {
    let l = workload(SCHEMA, &[("BumpIf.sql", BUMP_IF), ("Arm.sql", ARM)]);
    let s = search(&l, &["BumpIf", "Arm"]);
    assert!(confirmed(&s), "not confirmed with values: {s:?}");
}

/// A statement's recorded condition: its extra columns and role.
type Cond = Option<(Vec<usize>, Role)>;

/// DelIf beside Kill, which bumps the counter and deletes the row whatever
/// its flag. Every interleaving's outcome on PostgreSQL is a serial one:
/// DelIf reads the counter after its DELETE, so an old counter means Kill
/// had not committed when DelIf's DELETE ran — it then deleted the row
/// (flag 1; Kill's DELETE waits and deletes nothing: T1 then T2) or found
/// no match (flag ≠ 1: as T1 then T2). With flag 1 and Kill's delete
/// pending, DelIf waits and reads the new counter (T2 then T1; schedule A
/// of the module comment). The explorer with values, after the first fix,
/// still "confirmed" DelIf's no-match read of a row with flag 4 beside
/// Kill's delete (rw on `t.flag`, a dependency no outcome shows); the
/// no-match branch is now a predicate read of its row: a dependency only
/// where a write changes whether the row matches.
#[test]
fn keyed_delete_beside_an_unconditional_delete_is_not_confirmed() {
    let kill = "UPDATE u SET v = v + 1 WHERE id = :j;
DELETE FROM t WHERE id = :k;
";
    let l = workload(SCHEMA, &[("DelIf.sql", DEL_IF), ("Kill.sql", kill)]);
    assert!(search_model(&l, &["DelIf", "Kill"]).is_some());
    let s = search(&l, &["DelIf", "Kill"]);
    assert!(
        !confirmed(&s),
        "confirmed with values: every outcome is serial"
    );
}

/// The control of the one above, and a real anomaly the no-match branch
/// now finds: the counter read first, then the conditional DELETE, after
/// Kill deleted the row and committed. On PostgreSQL 15.20 (t (2, 1, 0),
/// u (3, 0)):
///
/// ```text
/// S2: BEGIN; SELECT v FROM u WHERE id = 3;                             -- 0
/// S1: BEGIN; UPDATE u SET v = v + 1 WHERE id = 3; DELETE FROM t WHERE id = 2;
/// S1: COMMIT;
/// S2: DELETE FROM t WHERE id = 2 AND flag = 1;                    -- DELETE 0
/// S2: COMMIT;
/// ```
///
/// S2 then S1 would delete the row in S2 (DELETE 1); S1 then S2 would make
/// S2 read 1. Before, the no-match branch needed its row visible (a
/// key-based statement does, Section 5.4): not confirmed with values.
/// `isolint replay` reproduces it on PostgreSQL 15.20.
#[test]
fn keyed_delete_of_a_row_deleted_since_is_confirmed() {
    let peek_del = "SELECT v FROM u WHERE id = :j;
DELETE FROM t WHERE id = :k AND flag = 1;
";
    let kill = "UPDATE u SET v = v + 1 WHERE id = :j;
DELETE FROM t WHERE id = :k;
";
    let l = workload(SCHEMA, &[("PeekDel.sql", peek_del), ("Kill.sql", kill)]);
    let s = search(&l, &["PeekDel", "Kill"]);
    assert!(confirmed(&s), "not confirmed with values: {s:?}");
}

/// What the front-end records: the keyed DELETE with its extra column and
/// its no-match key sel; nothing for a keyed write without extra
/// conjuncts, nor for a read.
#[test]
fn the_conditions_of_keyed_writes_are_recorded() {
    let l = workload(SCHEMA, &[("DelIf.sql", DEL_IF), ("Arm.sql", ARM)]);
    let w = &l.workload;
    let p = (w.programs.iter())
        .position(|p| p.name == "DelIf")
        .expect("DelIf");
    let flag = 1;
    let got: Vec<(StmtType, Cond)> = (0..w.programs[p].statements.len())
        .map(|q| {
            let c = l.provenance.condition(p, q).map(|(c, m)| (c.to_vec(), m));
            (w.programs[p].statements[q].ty, c)
        })
        .collect();
    assert_eq!(
        got,
        [
            (StmtType::KeyDel, Some((vec![flag], Role::Write))),
            (StmtType::KeySel, Some((vec![flag], Role::NoMatch))),
            (StmtType::KeySel, None),
        ]
    );
    let a = 1 - p;
    assert!((0..w.programs[a].statements.len()).all(|q| l.provenance.condition(a, q).is_none()));
}

// ---------------------------------------------------------------------
// A statement calling both a STABLE and a VOLATILE PL/pgSQL routine.
// ---------------------------------------------------------------------

/// `st(a)` reads one balance (`{vol}`: STABLE or VOLATILE); `vo()` is
/// VOLATILE and reads nothing; `sum_it` calls both in one statement
/// beside its own read; `move` raises two balances.
fn mixed_routines(vol: &str) -> String {
    format!(
        "
CREATE FUNCTION st(a int) RETURNS int LANGUAGE plpgsql {vol} AS $$
DECLARE x int;
BEGIN
  SELECT v INTO x FROM acct WHERE id = a;
  RETURN x;
END $$;
CREATE FUNCTION vo() RETURNS int LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  RETURN 0;
END $$;
CREATE FUNCTION sum_it(p int, q int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE s int;
BEGIN
  SELECT v + st(q) + vo() INTO s FROM acct WHERE id = p;
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

fn mixed(vol: &str) -> Loaded {
    workdir::load(
        "CREATE TABLE acct (id int PRIMARY KEY, v int NOT NULL);",
        "programs: [sum_it, move]\n",
        &[("routines.sql", &mixed_routines(vol))],
    )
    .unwrap_or_else(|e| panic!("{}", e.message))
}

/// What PostgreSQL 15.20 does (by hand, psql; `f_stable`/`f_volatile`
/// each `PERFORM pg_sleep(1.5)` and then read a row of `a`/`b` (0); another
/// session sets both rows to 1 and commits 0.5 s into the statement):
///
/// ```text
/// SELECT f_stable(), f_volatile()                        -- 0 | 1
/// SELECT f_volatile(), f_stable()                        -- 1 | 0
/// SELECT f_volatile(), f_stable()   (commit at 2.0 s)    -- 0 | 0
/// SELECT g_stable()   (STABLE: reads a, then calls a VOLATILE routine
///                      reading b)                        -- a 0, b 1
/// ```
///
/// A STABLE routine reads the calling statement's snapshot whatever else
/// the statement calls and whenever it runs; a VOLATILE one's queries take
/// fresh snapshots, also inside a STABLE routine. So in `sum_it`'s
/// statement, `st`'s read and the statement's read of `p` see one
/// snapshot: the read skew with `move` committing between them is
/// not PostgreSQL's. Before, the STABLE call beside a VOLATILE one kept
/// its own snapshot and this was "confirmed" with values.
#[test]
fn stable_beside_volatile_routine_reads_the_statements_snapshot() {
    let l = mixed("STABLE");
    assert!(!workdir::robust_of(&l), "the static verdict");
    assert!(search_model(&l, &["sum_it", "move"]).is_some());
    let s = search(&l, &["sum_it", "move"]);
    assert!(
        !confirmed(&s),
        "confirmed with values: one snapshot on PostgreSQL"
    );
}

/// The control: `st` VOLATILE too. Its query takes a snapshot after the
/// statement's own (as `f_volatile` above), so `move` may commit between
/// the statement's read of `p` and `st`'s read of `q`: a real read skew,
/// confirmed with values.
#[test]
fn two_volatile_routines_read_their_own_snapshots() {
    let l = mixed("VOLATILE");
    let s = search(&l, &["sum_it", "move"]);
    assert!(confirmed(&s), "not confirmed with values: {s:?}");
}
