//! Issue 26 (h26-check): `check`'s maximal-subset search on the block
//! form, against the search's plain definition and the per-edge search.
//!
//! The search (`subsets::search_with`) grows each maximal robust set
//! greedily and cuts the list at a limit, so which sets it lists depends
//! on the order of its tests; its answer depends only on their verdicts
//! (the cycles a failing test names only spare later tests). The
//! reference is the definition written plainly, as in
//! `tests/scale_fast.rs`: "dualize and advance" with naive minimal
//! transversals, seeds in size order, each seed grown one program at a
//! time in index order, every test the per-edge `robustness::is_robust`
//! on the node mask (no grouping, cores, bisection or cache). The search
//! on blocks (`on_blocks::subsets_up_to`, what `check` runs) must return
//! the same sets, in the same order, with the same `complete` flag.

mod common;
#[path = "common/plain_subsets.rs"]
mod plain_subsets;

use common::{random_workload, settings, Rng, Shape};
use isolint::analysis::blocks::Blocks;
use isolint::analysis::graph::{build, Settings};
use isolint::analysis::on_blocks::subsets_up_to;
use isolint::analysis::progress::Silent;
use isolint::analysis::robustness::{is_robust, Method};
use isolint::analysis::subsets::maximal_robust_subsets;
use plain_subsets::plain_subsets;
use proptest::prelude::*;

fn many() -> Shape {
    Shape {
        programs: 10,
        statements: 3,
        ..Shape::small()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(60))]

    /// The search on blocks lists the sets of the plain definition, cut
    /// the same way, for every method and setting, whether or not the
    /// caller passes the whole workload's verdict.
    #[test]
    fn block_subset_search_equals_plain_definition(seed in any::<u64>(), bits in 0u8..8) {
        let w = random_workload(seed, many());
        let s = settings(bits);
        let g = build(&w, s);
        let b = Blocks::build(&w, s);
        for method in [Method::TypeII, Method::TypeI, Method::Snapshot] {
            let whole = is_robust(&g, None, method);
            for limit in [1, 2, 4, 100] {
                let plain = plain_subsets(&g, method, limit);
                for known in [None, Some(whole)] {
                    prop_assert_eq!(
                        &subsets_up_to(&b, method, limit, known, &Silent),
                        &plain,
                        "method {:?} limit {} verdict passed {:?}", method, limit, known
                    );
                }
            }
        }
    }
}

/// The random workloads above have cut answers (several maximal sets),
/// or the property would not look at the order of the tests.
#[test]
fn generator_gives_cut_answers_on_blocks() {
    let mut cut = 0;
    let mut r = Rng(11);
    for _ in 0..60 {
        let w = random_workload(r.next(), many());
        let b = Blocks::build(&w, settings(0));
        if !subsets_up_to(&b, Method::TypeII, 2, None, &Silent).complete {
            cut += 1;
        }
    }
    assert!(
        cut > 10,
        "only {cut} of 60 workloads have more than 2 maximal sets"
    );
}

/// `check` on the generated application (non-robust by predicate reads,
/// no promotion helps, so it lists the subsets) lists exactly the sets
/// of the per-edge search (`subsets::maximal_robust_subsets`, grouped
/// graph), which `tests/scale_fast.rs` pins to the definition.
#[test]
fn check_lists_the_per_edge_subsets_on_the_generated_app() {
    let dir = tempfile::tempdir().expect("tempdir");
    common::app::write(dir.path(), 7, 80, 25).expect("write app");
    let w = isolint::frontend::load(dir.path(), None)
        .expect("generated app loads")
        .workload;
    let f = isolint::analysis::check(&w, Settings::default(), Method::TypeII);
    assert!(!f.robust);
    let listed = f.subsets.expect("no fix: the subsets are listed");
    let g = build(&w, Settings::default());
    let per_edge = maximal_robust_subsets(&g, Method::TypeII);
    assert!(listed.sets.len() > 1, "{} sets", listed.sets.len());
    assert_eq!(listed, per_edge);
}
