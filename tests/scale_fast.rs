//! Issue 26 (h26-fast): the faster subset search and witnesses against
//! plain references on random small graphs.
//!
//! The subset search (`subsets::search`) grows each maximal robust set
//! greedily and cuts the list at a limit, so *which* sets it lists depends
//! on the order it tests candidates in. The reference here is the
//! definition of that search written plainly: "dualize and advance" with
//! the minimal transversals recomputed naively (every candidate against
//! every kept one), seeds tested in size order, and each seed grown by
//! adding programs one at a time in index order, each test the per-edge
//! `robustness::is_robust` on the node mask (no grouping, no cores, no
//! bisection, no cache). The fast search must return the same sets, in the
//! same order, with the same `complete` flag, at every limit.

mod common;
#[path = "common/plain_subsets.rs"]
mod plain_subsets;

use common::{random_workload, settings, Rng, Shape};
use isolint::analysis::graph::build;
use isolint::analysis::robustness::{check_witness, is_robust, witnesses, Method};
use isolint::analysis::subsets::maximal_robust_subsets_up_to;
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

    /// Same sets, same cut, at limits that cut the list and one that
    /// does not, both tests.
    #[test]
    fn subset_search_equals_plain_definition(seed in any::<u64>(), bits in 0u8..8) {
        let w = random_workload(seed, many());
        let g = build(&w, settings(bits));
        for method in [Method::TypeII, Method::TypeI] {
            for limit in [1, 2, 4, 100] {
                prop_assert_eq!(
                    maximal_robust_subsets_up_to(&g, method, limit),
                    plain_subsets(&g, method, limit),
                    "method {:?} limit {}", method, limit
                );
            }
        }
    }

    /// Every witness (built by the BFS over the graph's own out-edge
    /// index) is a dangerous cycle of the graph.
    #[test]
    fn witnesses_are_dangerous_cycles(seed in any::<u64>(), bits in 0u8..8) {
        let w = random_workload(seed, many());
        let g = build(&w, settings(bits));
        for method in [Method::TypeII, Method::TypeI] {
            let found = witnesses(&g, None, method);
            prop_assert_eq!(found.is_empty(), is_robust(&g, None, method));
            for x in &found {
                prop_assert_eq!(check_witness(&g, x, method), Ok(()));
            }
        }
    }
}

/// The generator yields workloads whose answer is cut at the small limits
/// (several maximal sets), or the property above would not look at the
/// order the search tests candidates in.
#[test]
fn generator_gives_cut_answers() {
    let mut cut = 0;
    let mut r = Rng(7);
    for _ in 0..60 {
        let g = build(&random_workload(r.next(), many()), settings(0));
        if !maximal_robust_subsets_up_to(&g, Method::TypeII, 2).complete {
            cut += 1;
        }
    }
    assert!(
        cut > 10,
        "only {cut} of 60 workloads have more than 2 maximal sets"
    );
}

/// `allocate`'s text shows the first `SHOWN_CYCLES` raised programs'
/// cycles and one line counting the rest; `allocate_showing(None)` (the
/// `--all-cycles` flag) shows every one; JSON lists every one. The
/// generated application (`tests/common/app.rs`) with 40 programs raises
/// more than 10 (its predicate reads make most programs pivots; the count
/// is read from the analysis, not assumed).
#[test]
fn allocate_text_shows_first_cycles_and_counts_the_rest() {
    use isolint::report::text::{allocate, allocate_showing, SHOWN_CYCLES};
    let dir = tempfile::tempdir().expect("tempdir");
    common::app::write(dir.path(), 7, 40, 25).expect("write app");
    let w = isolint::frontend::load(dir.path(), None)
        .expect("generated app loads")
        .workload;
    let f = isolint::analysis::allocate_with(
        &w,
        isolint::analysis::graph::Settings::default(),
        &isolint::analysis::progress::Silent,
    );
    let raised = f.isolation.raised.len();
    assert!(raised > SHOWN_CYCLES, "only {raised} raised programs");
    let cycles = |text: &str| text.matches("(below it, this cycle is dangerous").count();
    let short = allocate(&w, &f);
    assert_eq!(cycles(&short), SHOWN_CYCLES);
    assert!(short.contains(&format!(
        "... and the cycles of {} more raised programs (--all-cycles",
        raised - SHOWN_CYCLES
    )));
    let all = allocate_showing(&w, &f, None);
    assert_eq!(cycles(&all), raised);
    assert!(!all.contains("more raised programs"));
    let json = isolint::report::json::allocate(&w, &f, &[]);
    let reasons = json["isolation"]["reasons"].as_array().expect("reasons");
    assert_eq!(reasons.len(), raised);
    assert!(reasons
        .iter()
        .all(|r| r["cycle"].as_array().is_some_and(|c| c.len() >= 2)));
}
