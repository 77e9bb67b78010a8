//! The explorer searches the value-aware explorer tests share: the search
//! with values (the BTP model as the fallback) of named programs, every
//! schedule found checked by `verify`, and the two answers the tests ask
//! for — confirmed with values, or the model's schedule only. Included
//! with `#[path]` beside `common/workdir.rs` (declared `mod workdir` in the
//! same test file), whose `nodes` names the programs' graph nodes.
#![allow(dead_code)]

use isolint::analysis::explorer::{explore_in, explore_nodes, verify, Bounds, Schedule};
use isolint::analysis::graph::{build, Settings};
use isolint::frontend::Loaded;
use isolint::model::isolation::{Allocation, Level};
use isolint::model::provenance::Provenance;

use super::workdir::nodes;

/// Prints the schedule's steps and, when in the model only, why.
pub fn print(l: &Loaded, s: &Schedule) {
    for x in isolint::report::schedule::lines(&l.workload, s) {
        println!("  {x}");
    }
    if let Some(why) = &s.model_only {
        println!("  (in the model only: {why})");
    }
}

/// The programs `names` searched together with values from `prov`, every
/// program at `level`, within `bounds`: the budget must not run out and
/// every schedule found must pass `verify`.
pub fn search_at(
    l: &Loaded,
    prov: &Provenance,
    names: &[&str],
    level: Level,
    bounds: Bounds,
) -> Option<Schedule> {
    let w = &l.workload;
    let g = build(w, Settings::default());
    let alloc = Allocation::uniform(w.programs.len(), level);
    let e = explore_in(w, prov, &g, &nodes(&g, names), bounds, &alloc);
    assert!(!e.explored.exhausted, "budget ran out: {:?}", e.explored);
    if let Some(s) = &e.found {
        print(l, s);
        assert_eq!(verify(s), Ok(()));
    }
    e.found
}

/// [`search_at`] with the front-end's provenance, at READ COMMITTED,
/// within the default bounds.
pub fn search(l: &Loaded, names: &[&str]) -> Option<Schedule> {
    search_at(
        l,
        &l.provenance,
        names,
        Level::ReadCommitted,
        Bounds::default(),
    )
}

/// The same programs in the BTP model alone (the explorer without values).
pub fn search_model(l: &Loaded, names: &[&str]) -> Option<Schedule> {
    let w = &l.workload;
    let g = build(w, Settings::default());
    explore_nodes(w, &g, &nodes(&g, names), Bounds::default()).found
}

/// [`search`] must find a schedule confirmed with values (not "in the
/// model only"): that schedule.
pub fn confirmed_with_values(l: &Loaded, names: &[&str]) -> Schedule {
    let s = search(l, names).expect("a schedule");
    assert!(
        s.model_only.is_none(),
        "not confirmed with values: {:?}",
        s.model_only
    );
    s
}

/// The BTP model finds a schedule, the search with values none: [`search`]
/// gives the model's schedule, without values and labelled "in the model
/// only". The label's reason.
pub fn model_only(l: &Loaded, names: &[&str]) -> String {
    assert!(search_model(l, names).is_some(), "the model's cycle");
    let s = search(l, names).expect("the model's schedule");
    assert!(
        s.values.is_none(),
        "confirmed with values: not on PostgreSQL"
    );
    s.model_only.expect("labelled in the model only")
}

/// The value of column `col` of tuple `t` in the schedule's values.
pub fn row_value(s: &Schedule, t: usize, col: &str) -> Option<String> {
    let v = s.values.as_ref()?;
    v.rows[t]
        .iter()
        .find(|(c, _)| c == col)
        .map(|(_, x)| x.clone())
}

/// The tuple of table `rel` that the transaction whose name starts with
/// `txn` writes in the schedule (the first such write).
pub fn written(s: &Schedule, txn: &str, rel: &str) -> usize {
    use isolint::analysis::explorer::OpKind;
    let t = (0..s.transactions.len())
        .find(|&i| s.transactions[i].name.starts_with(txn))
        .unwrap_or_else(|| panic!("{txn} runs"));
    s.steps
        .iter()
        .filter(|st| st.txn == t)
        .flat_map(|st| &st.ops)
        .filter(|o| o.kind == OpKind::Write)
        .filter_map(|o| o.tuple)
        .find(|&x| s.tuples[x].name.starts_with(&format!("{rel}#")))
        .unwrap_or_else(|| panic!("{txn} writes no {rel} row"))
}
