//! Issue 23 (h23-depth): replay reads structure, not labels.
//! (1) An integrity-check read (foreign-key, unique, exclusion check) is
//! part of its SQL statement in the replayed schedule because the
//! front-end says so in `Provenance::checks`, not because replay parses
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
        l.provenance.checks.iter().any(|c| !c.is_empty()),
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
        l.provenance.checks.iter_mut().for_each(Vec::clear);
    };
    let Some((paths, _)) = expected_paths(&unmarked) else {
        return;
    };
    assert!(
        paths.iter().any(|p| p.iter().any(|q| q == RENAMED)),
        "without the field the check is a step of its own: {paths:?}"
    );
}
