//! `check` and the subset search where users feel them: a generated
//! 200-program SQL application with no `FOR UPDATE` fix, random workloads
//! of 80–150 programs whose answers have many maximal robust subsets,
//! Auction(n) under the type-I test (2^n maximal sets, cut at 100), and
//! YAML parsing. Run with `cargo bench --bench check`.

#[path = "../tests/common/mod.rs"]
mod common;

use isolint::analysis::analyze_with;
use isolint::analysis::check;
use isolint::analysis::graph::{build, Settings};
use isolint::analysis::progress::Silent;
use isolint::analysis::robustness::Method;
use isolint::analysis::subsets::{search, MAX_SUBSETS};
use isolint::frontend::yaml;

fn main() {
    divan::main();
}

/// Load the generated app with `n` programs (written to a temporary
/// directory and read through the SQL front-end, as `isolint` does).
fn app(n: usize) -> isolint::model::btp::Workload {
    let dir = tempfile::tempdir().expect("tempdir");
    common::app::write(dir.path(), 7, n, 25).expect("write app");
    isolint::frontend::load(dir.path(), None)
        .expect("generated app loads")
        .workload
}

/// `analyze` (summary graph and type-II test) on the generated app: the
/// yardstick for `check`.
#[divan::bench(args = [40, 200], sample_count = 5, sample_size = 1)]
fn analyze_app(bencher: divan::Bencher, n: usize) {
    let w = app(n);
    bencher.bench_local(|| {
        analyze_with(&w, Settings::default(), Method::TypeII, false, &Silent).robust
    });
}

/// `check` on the generated app: analysis, the fix search (which proves
/// that no promotion helps), and the maximal robust subsets.
#[divan::bench(args = [40, 200], sample_count = 5, sample_size = 1)]
fn check_app_no_fix(bencher: divan::Bencher, n: usize) {
    let w = app(n);
    bencher.bench_local(|| check(&w, Settings::default(), Method::TypeII).robust);
}

/// `check` on SmallBank: the fix search that finds {q7, q14, q15}.
#[divan::bench(sample_count = 20)]
fn check_smallbank_fix(bencher: divan::Bencher) {
    let w = common::bundled("smallbank");
    bencher.bench_local(|| check(&w, Settings::default(), Method::TypeII).robust);
}

/// `analyze --subsets` on random programs (many maximal robust subsets).
#[divan::bench(args = [80, 150], sample_count = 5, sample_size = 1)]
fn analyze_subsets_random(bencher: divan::Bencher, n: usize) {
    let w = common::random_workload(11, common::Shape::programs(n));
    bencher.bench_local(|| {
        analyze_with(&w, Settings::default(), Method::TypeII, true, &Silent)
            .subsets
            .map(|s| s.sets.len())
    });
}

/// `subsets --all-settings --method both`: four graphs, two tests each.
#[divan::bench(args = [80], sample_count = 3, sample_size = 1)]
fn subsets_all_settings_both(bencher: divan::Bencher, n: usize) {
    let w = common::random_workload(11, common::Shape::programs(n));
    bencher.bench_local(|| {
        let mut total = 0;
        for s in Settings::paper_rows(true) {
            let g = build(&w, s);
            for m in [Method::TypeII, Method::TypeI] {
                total += search(&g, m, MAX_SUBSETS, None, &Silent).sets.len();
            }
        }
        total
    });
}

/// Auction(n) under type-I has 2^n maximal robust subsets: the search
/// lists 100 and stops.
#[divan::bench(args = [12, 100], sample_count = 5, sample_size = 1)]
fn subsets_auction_type1(bencher: divan::Bencher, n: usize) {
    let g = build(&isolint::model::generate::auction(n), Settings::default());
    bencher.bench_local(|| search(&g, Method::TypeI, MAX_SUBSETS, None, &Silent).complete);
}

/// Parsing BTP YAML: Auction(n) as `isolint generate` writes it.
#[divan::bench(args = [100, 1000], sample_count = 10)]
fn parse_yaml(bencher: divan::Bencher, n: usize) {
    let text = isolint::report::yaml::to_yaml(&isolint::model::generate::auction(n));
    bencher.bench_local(|| {
        let file = isolint::model::error::SourceFile::new("auction.yaml", text.as_str());
        yaml::parse(&file).map(|w| w.programs.len()).unwrap_or(0)
    });
}
