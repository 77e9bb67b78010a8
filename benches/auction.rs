//! Auction(n) (Section 7.3): summary-graph construction (Algorithm 1 over
//! Unfold≤2) and the type-II test (Algorithm 2, per SCC) measured
//! separately. Run with `cargo bench --bench auction`.

use isolint::analysis::graph::{build, Settings};
use isolint::analysis::robustness::{is_robust, Method};
use isolint::model::generate::auction;

fn main() {
    divan::main();
}

#[divan::bench(args = [10, 100, 1000], sample_count = 5, sample_size = 1)]
fn summary_graph(bencher: divan::Bencher, n: usize) {
    let w = auction(n);
    bencher.bench_local(|| build(&w, Settings::default()).edges.len());
}

#[divan::bench(args = [10, 100, 1000], sample_count = 5, sample_size = 1)]
fn type2_test(bencher: divan::Bencher, n: usize) {
    let g = build(&auction(n), Settings::default());
    bencher.bench_local(|| is_robust(&g, None, Method::TypeII));
}

#[divan::bench(args = [10, 100], sample_count = 5, sample_size = 1)]
fn maximal_subsets(bencher: divan::Bencher, n: usize) {
    let g = build(&auction(n), Settings::default());
    bencher.bench_local(|| {
        isolint::analysis::subsets::maximal_robust_subsets(&g, Method::TypeII)
            .sets
            .len()
    });
}

/// The SQL front-end on TPC-C as specified: parse DDL and five programs,
/// lower to BTPs, infer constraints.
#[divan::bench(sample_count = 20)]
fn lower_tpcc_sql() -> usize {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/tpcc");
    isolint::frontend::load(&dir, None)
        .map(|l| l.workload.programs.len())
        .unwrap_or(0)
}

/// `isolint check` on TPC-C from SQL: analysis, fix search, subsets.
#[divan::bench(sample_count = 20)]
fn check_tpcc_sql(bencher: divan::Bencher) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/tpcc");
    let Ok(loaded) = isolint::frontend::load(&dir, None) else {
        return;
    };
    bencher.bench_local(|| {
        isolint::analysis::check(&loaded.workload, Settings::default(), Method::TypeII).robust
    });
}

/// The physical floor the graph build is compared with (issue 13): write
/// Auction(n)'s 8n + 9n² edges once into a vector sized in advance.
#[divan::bench(args = [1000], sample_count = 5, sample_size = 1)]
fn floor_write_edges(bencher: divan::Bencher, n: usize) {
    let count = 8 * n + 9 * n * n;
    bencher.bench_local(|| {
        let mut v: Vec<isolint::analysis::graph::Edge> = Vec::with_capacity(count);
        for i in 0..count {
            v.push(isolint::analysis::graph::Edge {
                from: (i / 3000) as u32,
                to: (i % 3000) as u32,
                from_pos: (i & 3) as u16,
                to_pos: (i & 7) as u16,
                counterflow: i & 15 == 0,
            });
        }
        divan::black_box(v).len()
    });
}

/// …and read them once (the floor of one pass of the type-II test).
#[divan::bench(args = [1000], sample_count = 5, sample_size = 1)]
fn floor_read_pass(bencher: divan::Bencher, n: usize) {
    let g = build(&auction(n), Settings::default());
    bencher.bench_local(|| {
        g.edges
            .iter()
            .map(|e| e.to as usize + usize::from(e.counterflow))
            .sum::<usize>()
    });
}
