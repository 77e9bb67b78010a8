//! `isolint allocate` (docs/allocation.md): summary graph, READ COMMITTED
//! verdict, the lowest robust allocation with a cycle per raised program,
//! and the read-promotion search, on Auction(1000) (Section 7.3) and on
//! 150-program workloads (the generated SQL application of
//! `tests/common/app.rs` and a random BTP workload). Issue 12 asks for
//! under 10 s each. Run with `cargo bench --bench allocate`.

#[path = "../tests/common/mod.rs"]
mod common;

use isolint::analysis::allocate_with;
use isolint::analysis::allocation::lowest;
use isolint::analysis::graph::{build, Settings};
use isolint::analysis::progress::Silent;
use isolint::model::generate::auction;

fn main() {
    divan::main();
}

#[divan::bench(args = [100, 1000], sample_count = 3, sample_size = 1)]
fn allocate_auction(bencher: divan::Bencher, n: usize) {
    let w = auction(n);
    bencher.bench_local(|| {
        allocate_with(&w, Settings::default(), &Silent)
            .isolation
            .raised
            .len()
    });
}

/// The allocation search alone on Auction(1000)'s graph.
#[divan::bench(args = [1000], sample_count = 3, sample_size = 1)]
fn lowest_only_auction(bencher: divan::Bencher, n: usize) {
    let g = build(&auction(n), Settings::default());
    bencher.bench_local(|| lowest(&g).raised.len());
}

#[divan::bench(sample_count = 3, sample_size = 1)]
fn allocate_app_150(bencher: divan::Bencher) {
    let dir = tempfile::tempdir().expect("tempdir");
    common::app::write(dir.path(), 7, 150, 25).expect("write app");
    let w = isolint::frontend::load(dir.path(), None)
        .expect("generated app loads")
        .workload;
    bencher.bench_local(|| {
        allocate_with(&w, Settings::default(), &Silent)
            .isolation
            .raised
            .len()
    });
}

#[divan::bench(sample_count = 3, sample_size = 1)]
fn allocate_random_150(bencher: divan::Bencher) {
    let w = common::random_workload(42, common::Shape::programs(150));
    bencher.bench_local(|| {
        allocate_with(&w, Settings::default(), &Silent)
            .isolation
            .raised
            .len()
    });
}
