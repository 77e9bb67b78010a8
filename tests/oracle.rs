//! The grouped robustness oracle (src/oracle.rs) against
//! `robustness::is_robust` on random node masks, and the subset search
//! built on it against a brute-force enumeration of all program subsets.

mod common;

use common::{bundled, random_workload, settings, Rng, Shape};
use fixedbitset::FixedBitSet;
use isolint::analysis::graph::{build, SummaryGraph};
use isolint::analysis::oracle::{Compact, View, UNTAGGED};
use isolint::analysis::progress::Silent;
use isolint::analysis::robustness::{is_robust, Method};
use isolint::analysis::subsets::{maximal_robust_subsets, search, MAX_SUBSETS};
use proptest::prelude::*;

/// Maximal robust subsets by definition: test all 2^n program sets with
/// the reference test, keep the robust ones no robust set strictly
/// contains.
fn brute_force(g: &SummaryGraph, method: Method) -> Vec<Vec<usize>> {
    let n = g.program_nodes.len();
    assert!(n <= 10);
    let robust: Vec<bool> = (0..1u32 << n)
        .map(|bits| {
            let mut mask = FixedBitSet::with_capacity(g.nodes.len());
            for p in (0..n).filter(|p| bits & (1 << p) != 0) {
                g.program_nodes[p].iter().for_each(|&v| mask.insert(v));
            }
            is_robust(g, Some(&mask), method)
        })
        .collect();
    let mut out: Vec<Vec<usize>> = (0..1u32 << n)
        .filter(|&s| robust[s as usize])
        .filter(|&s| !(0..1u32 << n).any(|t| t != s && t & s == s && robust[t as usize]))
        .map(|s| (0..n).filter(|p| s & (1 << p) != 0).collect())
        .collect();
    out.sort();
    out
}

fn wide() -> Shape {
    Shape {
        programs: 7,
        ..Shape::small()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(50))]

    #[test]
    fn grouped_oracle_agrees_on_random_masks(seed in any::<u64>(), bits in 0u8..8) {
        let w = random_workload(seed, wide());
        let g = build(&w, settings(bits));
        let compact = Compact::new(&g, |_| UNTAGGED);
        let mut r = Rng(seed | 1);
        for round in 0..6 {
            let mask = (round > 0).then(|| {
                let mut m = FixedBitSet::with_capacity(g.nodes.len());
                for v in 0..g.nodes.len() {
                    if r.chance(60) {
                        m.insert(v);
                    }
                }
                m
            });
            let view = View { nodes: mask.as_ref(), dropped: None };
            for method in [Method::TypeII, Method::TypeI] {
                prop_assert_eq!(
                    compact.is_robust(view, method),
                    is_robust(&g, mask.as_ref(), method)
                );
            }
        }
    }

    #[test]
    fn subsets_equal_brute_force(seed in any::<u64>(), bits in 0u8..8) {
        let w = random_workload(seed, wide());
        let g = build(&w, settings(bits));
        for method in [Method::TypeII, Method::TypeI] {
            let found = maximal_robust_subsets(&g, method);
            prop_assert!(found.complete);
            prop_assert_eq!(found.sets, brute_force(&g, method));
        }
    }

    /// Passing the known verdict on the whole graph changes nothing.
    #[test]
    fn known_verdict_is_reused_not_changed(seed in any::<u64>()) {
        let w = random_workload(seed, wide());
        let g = build(&w, settings(0));
        for method in [Method::TypeII, Method::TypeI] {
            let whole = is_robust(&g, None, method);
            prop_assert_eq!(
                search(&g, method, MAX_SUBSETS, Some(whole), &Silent),
                search(&g, method, MAX_SUBSETS, None, &Silent)
            );
        }
    }
}

/// The generator gives both verdicts and multi-set answers, or the
/// properties above would be vacuous.
#[test]
fn generator_covers_several_maximal_sets() {
    let (mut robust, mut several) = (0, 0);
    for seed in 1..200u64 {
        let g = build(&random_workload(seed * 7919, wide()), settings(0));
        let found = maximal_robust_subsets(&g, Method::TypeII);
        if found.sets.len() == 1 && found.sets[0].len() == g.program_nodes.len() {
            robust += 1;
        }
        if found.sets.len() >= 2 {
            several += 1;
        }
    }
    assert!(
        robust > 10 && several > 10,
        "robust {robust}, several {several}"
    );
}

/// The bundled workloads' subsets by brute force, all settings, both tests
/// (Figures 6 and 7 are asserted from the paper in tests/paper.rs).
#[test]
fn bundled_subsets_equal_brute_force() {
    for name in ["smallbank", "tpcc-paper", "auction"] {
        let w = bundled(name);
        for bits in 0..8 {
            let g = build(&w, settings(bits));
            for method in [Method::TypeII, Method::TypeI] {
                assert_eq!(
                    maximal_robust_subsets(&g, method).sets,
                    brute_force(&g, method),
                    "{name} {bits} {method:?}"
                );
            }
        }
    }
}
