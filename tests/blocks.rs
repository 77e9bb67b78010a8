//! The block form of the summary graph (`analysis::blocks`, issue 26)
//! against the per-edge graph, the test oracle: the same strongly
//! connected components, the same type-II / type-I / snapshot /
//! allocation verdicts, and the same edge counts (Table 2), on random
//! workloads and the bundled ones; and Auction(10000), which the per-edge
//! graph (9·10⁸ edges) cannot hold, from the paper's formulas.

mod common;

use common::{bundled, random_workload, settings, Rng, Shape};
use isolint::analysis::allocation::lowest;
use isolint::analysis::blocks::Blocks;
use isolint::analysis::graph::{build, SummaryGraph};
use isolint::analysis::robustness::{components, is_robust, is_robust_under, Method};
use isolint::model::btp::Workload;
use isolint::model::generate::auction;
use isolint::model::isolation::{Allocation, Level};
use isolint::model::settings::Settings;
use proptest::prelude::*;

/// Both partitions of the nodes into components are the same.
fn same_partition(a: &[u32], b: &[u32]) -> bool {
    let mut ab = std::collections::HashMap::new();
    let mut ba = std::collections::HashMap::new();
    a.iter()
        .zip(b)
        .all(|(x, y)| *ab.entry(*x).or_insert(*y) == *y && *ba.entry(*y).or_insert(*x) == *x)
}

/// Every verdict of the block form equals the per-edge one on `w`.
fn compare(w: &Workload, s: Settings, alloc: &Allocation) -> Result<(), TestCaseError> {
    let g: SummaryGraph = build(w, s);
    let b = Blocks::build(w, s);
    prop_assert_eq!(b.nodes.len(), g.nodes.len());
    prop_assert_eq!(
        b.edge_counts(),
        (g.edges.len() as u64, g.counterflow_edges() as u64)
    );
    prop_assert!(same_partition(&b.components(), &components(&g, None)));
    for m in [Method::TypeII, Method::TypeI, Method::Snapshot] {
        prop_assert_eq!(b.is_robust(m), is_robust(&g, None, m), "{:?}", m);
    }
    // A random allocation, the lowest robust one, and each one-program
    // step below it: the boundary where SERIALIZABLE exemptions decide.
    let low = lowest(&g).allocation;
    prop_assert_eq!(&b.lowest_levels(), &low);
    let mut allocs = vec![alloc.clone(), low.clone()];
    for p in 0..low.0.len() {
        if low.0[p] > Level::ReadCommitted {
            let mut a = low.clone();
            a.0[p] = Level::ALL[low.0[p] as usize - 1];
            allocs.push(a);
        }
    }
    for a in &allocs {
        prop_assert_eq!(
            b.is_robust_under(a),
            is_robust_under(&g, None, a),
            "{:?}",
            a
        );
    }
    // The pair found is made of real edges, adjacent, e4 counterflow,
    // both inside one component of the per-edge graph.
    let level = |v: usize| alloc.level(g.nodes[v].ltp.program);
    if let Some((e3, e4, _)) = b.find(&level) {
        let comp = components(&g, None);
        prop_assert!(g.edges.contains(&e3) && g.edges.contains(&e4));
        prop_assert_eq!(e3.to, e4.from);
        prop_assert!(e4.counterflow);
        prop_assert_eq!(comp[e3.from as usize], comp[e3.to as usize]);
        prop_assert_eq!(comp[e4.from as usize], comp[e4.to as usize]);
    }
    Ok(())
}

fn random_allocation(seed: u64, n: usize) -> Allocation {
    let mut r = Rng(seed | 1);
    Allocation((0..n).map(|_| Level::ALL[r.below(3)]).collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Small random workloads (1–4 programs, 1–3 relations), every
    /// setting, a random allocation.
    #[test]
    fn blocks_equal_the_per_edge_graph(seed in any::<u64>(), bits in 0u8..8) {
        let w = random_workload(seed, Shape::small());
        compare(&w, settings(bits), &random_allocation(seed, w.programs.len()))?;
    }

    /// Larger ones: 12 programs over 3 relations (larger components,
    /// several occurrences per class).
    #[test]
    fn blocks_equal_the_per_edge_graph_larger(seed in any::<u64>(), bits in 0u8..8) {
        let shape = Shape { programs: 12, exact: true, ..Shape::small() };
        let w = random_workload(seed, shape);
        compare(&w, settings(bits), &random_allocation(seed, w.programs.len()))?;
    }
}

/// The bundled workloads, every row of Table 2 (whose counts
/// `tests/paper.rs` pins on the per-edge graph).
#[test]
fn blocks_equal_the_per_edge_graph_on_bundled_workloads() {
    for name in ["smallbank", "tpcc-paper", "auction"] {
        let w = bundled(name);
        for s in Settings::paper_rows(true)
            .into_iter()
            .chain(Settings::paper_rows(false))
        {
            for l in Level::ALL {
                let alloc = Allocation::uniform(w.programs.len(), l);
                compare(&w, s, &alloc).unwrap_or_else(|e| panic!("{name} {s:?} {l}: {e}"));
            }
        }
    }
}

/// Section 7.3 and Table 2: Auction(n) has 3n nodes, 8n + 9n² edges, n of
/// them counterflow, and is robust against READ COMMITTED for every n.
/// At n = 10000 that is 9·10⁸ edges, over the per-edge graph's guard; the
/// block form counts them and decides without writing one. The control
/// (not robust) is the type-I test: the n counterflow edges lie on
/// cycles (the paper: type I cannot show Auction robust).
#[test]
fn auction_10000_from_blocks() {
    let n = 10_000u64;
    let w = auction(n as usize);
    let b = Blocks::build(&w, Settings::default());
    assert_eq!(b.nodes.len() as u64, 3 * n);
    assert_eq!(b.edge_counts(), (8 * n + 9 * n * n, n));
    assert!(b.is_robust(Method::TypeII));
    assert!(!b.is_robust(Method::TypeI));
    // Robust under READ COMMITTED: the lowest allocation is all READ
    // COMMITTED.
    let rc = Allocation::uniform(w.programs.len(), Level::ReadCommitted);
    assert_eq!(b.lowest_levels(), rc);
}

/// `ISOLINT_SCALE=DIR:N,N… cargo test --test blocks -- --ignored` writes
/// the generated application (`tests/common/app.rs`) with N programs to
/// DIR/appN, for the README's whole-process "Scale" timings.
#[test]
#[ignore = "writes benchmark fixtures to $ISOLINT_SCALE"]
fn write_scale_fixtures() {
    let Ok(spec) = std::env::var("ISOLINT_SCALE") else {
        return;
    };
    let (dir, ns) = spec.split_once(':').expect("DIR:N,N…");
    for n in ns.split(',') {
        let n: usize = n.parse().expect("a program count");
        let to = std::path::Path::new(dir).join(format!("app{n}"));
        common::app::write(&to, 7, n, 25).expect("write app");
    }
}
