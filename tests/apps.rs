//! The generated SQL application of the benchmarks, end to end: it loads
//! through the SQL front-end, is not robust, and `check` proves that no
//! promotion fixes it (its dangerous cycles run through predicate reads)
//! and lists the maximal robust subsets instead.
//!
//! `ISOLINT_FIXTURES=DIR cargo test --test apps -- --ignored` writes the
//! workloads the README's whole-process timings use.

mod common;

use isolint::analysis::check;
use isolint::analysis::graph::{build, Settings};
use isolint::analysis::promote::Suggestion;
use isolint::analysis::robustness::{is_robust, Method};

#[test]
fn generated_app_has_no_promotion_fix() {
    let dir = tempfile::tempdir().expect("tempdir");
    common::app::write(dir.path(), 7, 20, 25).expect("write");
    let w = isolint::frontend::load(dir.path(), None)
        .expect("loads")
        .workload;
    assert_eq!(w.programs.len(), 20);
    let r = check(&w, Settings::default(), Method::TypeII);
    assert!(!r.robust);
    let Some(Suggestion::Impossible { candidates }) = r.suggestion else {
        panic!("expected no promotion to help, got {:?}", r.suggestion);
    };
    // Promoting every candidate really leaves a dangerous cycle.
    let all: Vec<_> = isolint::analysis::promote::candidates(&w, Settings::default());
    assert_eq!(all.len(), candidates);
    let promoted = isolint::analysis::promote::promoted(&w, &all);
    assert!(!is_robust(
        &build(&promoted, Settings::default()),
        None,
        Method::TypeII
    ));
    // Each listed subset is robust (maximality is checked in tests/oracle.rs).
    let subsets = r.subsets.expect("subsets when no fix");
    assert!(!subsets.sets.is_empty());
    let g = &r.graph;
    for set in &subsets.sets {
        let mut mask = fixedbitset::FixedBitSet::with_capacity(g.nodes.len());
        for &p in set {
            g.program_nodes[p].iter().for_each(|&v| mask.insert(v));
        }
        assert!(is_robust(g, Some(&mask), Method::TypeII));
    }
}

#[test]
#[ignore = "writes benchmark fixtures to $ISOLINT_FIXTURES"]
fn write_fixtures() {
    let Ok(dir) = std::env::var("ISOLINT_FIXTURES") else {
        return;
    };
    let dir = std::path::Path::new(&dir);
    for n in [5, 40, 80, 200] {
        common::app::write(&dir.join(format!("app{n}")), 7, n, 25).expect("write app");
    }
    for n in [80, 150] {
        let w = common::random_workload(11, common::Shape::programs(n));
        std::fs::write(
            dir.join(format!("random{n}.yaml")),
            isolint::report::yaml::to_yaml(&w),
        )
        .expect("write yaml");
    }
}
