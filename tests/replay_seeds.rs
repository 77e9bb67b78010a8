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
//! One throwaway server per test (tests/common/postgres.rs).
#![cfg(feature = "postgres")]

use isolint::analysis::explorer::{explore_set, Bounds};
use isolint::analysis::graph::{build, Settings};
use isolint::model::isolation::{Allocation, Level};
use isolint::model::provenance::Provenance;
use isolint::replay::witness::{replay as replay_schedule, Verdict};

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
