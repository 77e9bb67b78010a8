//! Issue 26, `allocate` and `analyze` at scale: `analyze` computes the
//! components and the pivots' aggregates once (`robustness::verdict`) and
//! the lowest allocation and the fix search reuse them; the fix search
//! decides "no promotion helps" on the per-edge graph with the tagged
//! edges left out (`robustness::is_robust_without`) before grouping the
//! graph. Each shortcut is checked against the computation it replaced:
//! the expectations are those functions' answers on the same input
//! (`is_robust` on a graph rebuilt without the edges, the grouped graph's
//! full tag mask, `witnesses`, `lowest_pairs`, `Isolation::lowest`), which
//! tests/algorithm2.rs, tests/oracle.rs, tests/allocation.rs and
//! tests/promote.rs check against the paper's definitions.

mod common;

use std::collections::HashSet;

use common::{random_workload, settings, Rng, Shape};
use fixedbitset::FixedBitSet;
use isolint::analysis::allocation::lowest_pairs;
use isolint::analysis::findings::Isolation;
use isolint::analysis::graph::{build, Edge, SummaryGraph};
use isolint::analysis::oracle::{Compact, View, UNTAGGED};
use isolint::analysis::progress::Silent;
use isolint::analysis::promote::{candidates_in, suggest, Budget, Suggestion};
use isolint::analysis::robustness::{is_robust, is_robust_without, witnesses, Method};
use isolint::analysis::{allocate_with, analyze, check};
use isolint::model::btp::Workload;
use proptest::prelude::*;

fn shape() -> Shape {
    Shape {
        programs: 6,
        statements: 3,
        ..Shape::small()
    }
}

/// Edge indices of every edge equal to one of `values` (a graph may hold
/// equal edges: `retain_edges` drops by value, so must the bit set).
fn indices_of(g: &SummaryGraph, values: &HashSet<Edge>) -> FixedBitSet {
    let mut set = FixedBitSet::with_capacity(g.edges.len());
    set.extend((0..g.edges.len()).filter(|&i| values.contains(&g.edges[i])));
    set
}

/// The grouped graph of the fix search (tags as in `promote`) and the
/// full tag mask: the test the search ran before the shortcut.
fn grouped_all_promoted_robust(w: &Workload, g: &SummaryGraph, method: Method) -> bool {
    let cands = candidates_in(w, g);
    let tag = |i: usize| {
        let e = &g.edges[i];
        let n = &g.nodes[e.from as usize];
        let src = (n.ltp.program, n.ltp.occurrences[e.from_pos as usize].stmt);
        match cands.iter().position(|&c| c == src) {
            Some(t) if e.counterflow => t as u32,
            _ => UNTAGGED,
        }
    };
    let compact = Compact::new(g, tag);
    let mut all = FixedBitSet::with_capacity(cands.len());
    all.insert_range(..);
    let view = View {
        nodes: None,
        dropped: Some(&all),
    };
    compact.is_robust(view, method)
}

/// The old composition of `analyze`'s allocation: `lowest_pairs` on the
/// graph (its own components and pivots), as (program, level, cause,
/// pair, reason) rows.
fn old_allocation(f: &isolint::analysis::Findings) -> Vec<String> {
    let l = lowest_pairs(&f.graph);
    let mut rows = vec![format!("{:?}", l.allocation)];
    rows.extend(l.raised.iter().map(|r| {
        format!(
            "{} {:?} {:?} {:?} {:?}",
            r.program, r.level, r.cause, r.pair, r.reason
        )
    }));
    rows
}

fn new_allocation(i: &Isolation) -> Vec<String> {
    let mut rows = vec![format!("{:?}", i.as_is)];
    rows.extend(i.raised.iter().map(|r| {
        format!(
            "{} {:?} {:?} {:?} {:?}",
            r.program, r.level, r.cause, r.pair, r.reason
        )
    }));
    rows
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(60))]

    /// `is_robust_without` is `is_robust` on the graph rebuilt without
    /// the dropped edges, for random drop sets and every method.
    /// Mutations caught: Tarjan following dropped edges; the aggregates
    /// reading dropped edges.
    #[test]
    fn robust_without_equals_the_smaller_graph(seed in any::<u64>(), bits in 0u8..8, pct in 0u64..70) {
        let w = random_workload(seed, shape());
        let g = build(&w, settings(bits));
        let mut r = Rng(seed ^ 0x9e37_79b9);
        let values: HashSet<Edge> = g.edges.iter().filter(|_| r.chance(pct)).copied().collect();
        let dropped = indices_of(&g, &values);
        let smaller = g.retain_edges(|e| !values.contains(e));
        for m in [Method::TypeII, Method::TypeI, Method::Snapshot] {
            prop_assert_eq!(
                is_robust_without(&g, m, &dropped),
                is_robust(&smaller, None, m),
                "{:?}, {} of {} edges dropped", m, dropped.count_ones(..), g.edges.len()
            );
        }
    }

    /// The fix search says "no promotion helps" exactly when the grouped
    /// graph's full tag mask has a dangerous cycle (the test it ran
    /// before), with the same candidate count.
    #[test]
    fn impossible_exactly_when_the_grouped_mask_says_so(seed in any::<u64>(), bits in 0u8..8) {
        let w = random_workload(seed, shape());
        let s = settings(bits);
        let g = build(&w, s);
        for m in [Method::TypeII, Method::TypeI] {
            if is_robust(&g, None, m) {
                continue;
            }
            let impossible = !grouped_all_promoted_robust(&w, &g, m);
            let got = suggest(&w, s, m, Budget::default());
            match got {
                Suggestion::Impossible { candidates } => {
                    prop_assert!(impossible, "{:?}", m);
                    prop_assert_eq!(candidates, candidates_in(&w, &g).len());
                }
                other => prop_assert!(!impossible, "{:?}: {:?}", m, other),
            }
        }
    }

    /// `analyze`, `check` and `allocate` from the shared components and
    /// pivots give what the separate computations give: verdict,
    /// witnesses, lowest allocation with causes, pairs and reasons, fix
    /// suggestion (with its `tried` count), the allocation after edits.
    #[test]
    fn shared_components_give_the_same_findings(seed in any::<u64>(), bits in 0u8..8) {
        let w = random_workload(seed, shape());
        let s = settings(bits);
        let g = build(&w, s);
        for m in [Method::TypeII, Method::TypeI, Method::Snapshot] {
            let f = analyze(&w, s, m, false);
            let robust = is_robust(&g, None, m);
            prop_assert_eq!(f.robust, robust);
            let want = if robust { vec![] } else { witnesses(&g, None, m) };
            prop_assert_eq!(&f.witnesses, &want);
            if !robust || m == Method::Snapshot {
                prop_assert_eq!(new_allocation(&f.isolation), old_allocation(&f), "{:?}", m);
            } else {
                prop_assert!(f.isolation.raised.is_empty());
            }
        }
        for m in [Method::TypeII, Method::TypeI] {
            let f = check(&w, s, m);
            if f.robust {
                continue;
            }
            let want = suggest(&w, s, m, Budget::default());
            prop_assert_eq!(f.suggestion.as_ref(), Some(&want));
            let old = Isolation::lowest(&w, &g, want.reads().is_some());
            prop_assert_eq!(&f.isolation.as_is, &old.as_is);
            prop_assert_eq!(&f.isolation.with_edits, &old.with_edits);
            prop_assert_eq!(new_allocation(&f.isolation), new_allocation(&old));
        }
        let f = allocate_with(&w, s, &Silent);
        if !f.robust {
            let want = suggest(&w, s, Method::TypeII, Budget::default());
            prop_assert_eq!(f.suggestion.as_ref(), Some(&want));
            let old = Isolation::lowest(&w, &g, want.reads().is_some());
            prop_assert_eq!(&f.isolation.with_edits, &old.with_edits);
            prop_assert_eq!(new_allocation(&f.isolation), new_allocation(&old));
        }
    }
}

/// The properties above must bite: drop sets that change the verdict,
/// workloads no promotion fixes, fixes whose allocation after the edits
/// differs from the one as is.
#[test]
fn generator_covers_each_case() {
    let (mut flips, mut impossible, mut fixed_raised) = (0, 0, 0);
    for seed in 1..300u64 {
        let w = random_workload(seed * 7919, shape());
        let s = settings((seed % 8) as u8);
        let g = build(&w, s);
        if is_robust(&g, None, Method::TypeII) {
            continue;
        }
        let cf: FixedBitSet = {
            let mut b = FixedBitSet::with_capacity(g.edges.len());
            b.extend((0..g.edges.len()).filter(|&i| g.edges[i].counterflow && i % 2 == 0));
            b
        };
        if is_robust_without(&g, Method::TypeII, &cf) {
            flips += 1;
        }
        let f = allocate_with(&w, s, &Silent);
        match f.suggestion {
            Some(Suggestion::Impossible { .. }) => impossible += 1,
            Some(ref x) if x.reads().is_some() && f.isolation.with_edits.is_some() => {
                fixed_raised += 1
            }
            _ => {}
        }
    }
    eprintln!("flips {flips}, impossible {impossible}, fixed with raised programs {fixed_raised}");
    assert!(
        flips > 8 && impossible > 20 && fixed_raised > 5,
        "flips {flips}, impossible {impossible}, fixed with raised programs {fixed_raised}"
    );
}
