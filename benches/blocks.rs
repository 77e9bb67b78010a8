//! The commands on the block form (issue 26, `analysis::on_blocks`), as
//! the CLI runs them above the edge guard: load, `limits::admit_form`,
//! then `analyze` / `check` / `allocate` on blocks. Inputs: Auction(n)
//! (robust; 9n² edges) and the generated 12-table application of
//! README "Scale" (`tests/common/app.rs`; not robust: witnesses, lowest
//! allocation, fix search and subsets on blocks).
//! `cargo bench --bench blocks`.

#[path = "../tests/common/mod.rs"]
mod common;

use isolint::analysis::limits::{admit_form, Choose, Form};
use isolint::analysis::on_blocks;
use isolint::analysis::progress::Silent;
use isolint::analysis::robustness::Method;
use isolint::model::btp::Workload;
use isolint::model::generate::auction;
use isolint::model::isolation::{Allocation, Deployed, Level, LevelSource};
use isolint::model::settings::Settings;

fn main() {
    divan::main();
}

fn rc(w: &Workload) -> Deployed {
    Deployed {
        allocation: Allocation::uniform(w.programs.len(), Level::ReadCommitted),
        sources: vec![LevelSource::Default; w.programs.len()],
    }
}

fn app(n: usize) -> (tempfile::TempDir, Workload) {
    let dir = tempfile::tempdir().expect("tempdir");
    common::app::write(dir.path(), 7, n, 25).expect("write app");
    let w = isolint::frontend::load(dir.path(), None)
        .expect("generated app loads")
        .workload;
    (dir, w)
}

/// `isolint analyze` on Auction(n) from the admitted workload.
#[divan::bench(args = [1000, 10000], sample_count = 3, sample_size = 1)]
fn analyze_auction(bencher: divan::Bencher, n: usize) {
    let w = auction(n);
    bencher.bench_local(|| {
        let a = admit_form(&w, Choose::Force(Form::Blocks)).expect("admitted");
        on_blocks::analyze_with(&w, Settings::default(), Method::TypeII, false, &Silent).robust
            && a.form == Form::Blocks
    });
}

/// `isolint check` on the generated application (n programs).
#[divan::bench(args = [1000, 3000], sample_count = 3, sample_size = 1)]
fn check_app(bencher: divan::Bencher, n: usize) {
    let (_dir, w) = app(n);
    let dep = rc(&w);
    bencher.bench_local(|| {
        let _ = admit_form(&w, Choose::Force(Form::Blocks)).expect("admitted");
        on_blocks::check_deployed_with(&w, Settings::default(), Method::TypeII, &dep, &Silent)
            .robust
    });
}

/// `isolint allocate` on the generated application (n programs).
#[divan::bench(args = [1000, 3000], sample_count = 3, sample_size = 1)]
fn allocate_app(bencher: divan::Bencher, n: usize) {
    let (_dir, w) = app(n);
    bencher.bench_local(|| {
        on_blocks::allocate_with(&w, Settings::default(), &Silent)
            .isolation
            .raised
            .len()
    });
}
