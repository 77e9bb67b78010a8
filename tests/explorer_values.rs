//! The value-aware explorer (issue 23, item 1): predicates instantiated
//! on the values the front-end's provenance gives, "confirmed" only for a
//! schedule of program instances with values; the BTP model's schedules
//! labelled "in the model only" with the reason.

use std::path::Path;

use isolint::analysis::explorer::{
    explore_in, explore_nodes, verify, Bounds, OpKind, Schedule,
};
use isolint::analysis::graph::{build, Settings, SummaryGraph};
use isolint::frontend::Loaded;
use isolint::model::isolation::{Allocation, Level};

fn load(dir: &Path) -> Loaded {
    isolint::frontend::load(dir, None).unwrap_or_else(|e| panic!("{}", e.message))
}

fn bundled(name: &str) -> Loaded {
    load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads").join(name))
}

/// A workload from files in a temporary directory (`schema.sql` and the
/// programs), as tests/soundness.rs builds them.
fn workload(schema: &str, files: &[(&str, &str)]) -> Loaded {
    let d = tempfile::tempdir().expect("temp dir");
    std::fs::write(d.path().join("schema.sql"), schema).expect("write");
    std::fs::write(d.path().join("isolint.yaml"), "schema: schema.sql\n").expect("write");
    for (n, t) in files {
        std::fs::write(d.path().join(n), t).expect("write");
    }
    load(d.path())
}

fn nodes(g: &SummaryGraph, names: &[&str]) -> Vec<usize> {
    names
        .iter()
        .flat_map(|n| {
            let all: Vec<usize> = (0..g.nodes.len())
                .filter(|&v| g.nodes[v].name == *n || g.nodes[v].name.starts_with(&format!("{n}#")))
                .collect();
            assert!(!all.is_empty(), "no node {n}");
            all
        })
        .collect()
}

fn print(l: &Loaded, s: &Schedule) {
    for x in isolint::report::schedule::lines(&l.workload, s) {
        println!("  {x}");
    }
    if let Some(why) = &s.model_only {
        println!("  (in the model only: {why})");
    }
}

/// Searches the given programs together with values (the BTP model as
/// the fallback); every schedule found must pass `verify`.
fn search(l: &Loaded, names: &[&str]) -> Option<Schedule> {
    let w = &l.workload;
    let g = build(w, Settings::default());
    let alloc = Allocation::uniform(w.programs.len(), Level::ReadCommitted);
    let e = explore_in(w, &l.provenance, &g, &nodes(&g, names), Bounds::default(), &alloc);
    assert!(!e.explored.exhausted, "budget ran out: {:?}", e.explored);
    if let Some(s) = &e.found {
        print(l, s);
        assert_eq!(verify(s), Ok(()));
    }
    e.found
}

/// The same search in the BTP model alone (the explorer before values).
fn search_model(l: &Loaded, names: &[&str]) -> Option<Schedule> {
    let w = &l.workload;
    let g = build(w, Settings::default());
    let e = explore_nodes(w, &g, &nodes(&g, names), Bounds::default());
    e.found
}

fn with_values(s: &Option<Schedule>) -> bool {
    s.as_ref().is_some_and(|s| s.values.is_some() && s.model_only.is_none())
}

#[test]
#[ignore]
fn debug_tpcc() {
    let l = bundled("tpcc");
    for pair in [["OrderStatus", "Delivery"], ["Delivery", "Delivery"], ["Payment", "OrderStatus"]] {
        println!("== {pair:?}");
        let s = search(&l, &pair);
        println!("with values: {}", with_values(&s));
    }
    let _ = search_model;
    let _ = OpKind::Read;
}
