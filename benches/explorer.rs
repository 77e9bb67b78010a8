//! The bounded schedule explorer (issue 11): cost of `explore` (the whole
//! workload, independent of the static test) and of `confirm` (every
//! static witness) on SmallBank, TPC-C (`workloads/tpcc`) and
//! Auction(3), at the default bounds (k ≤ 3, 2 shared tuples per
//! relation), and `explore` with every program at REPEATABLE READ. Run
//! with `cargo bench --bench explorer`; the search counts (instances,
//! states, complete schedules) are printed once per workload.

use isolint::analysis::explorer::{
    confirm, explore, explore_at, explore_nodes, Bounds, Confirmation,
};
use isolint::analysis::graph::{build, Settings, SummaryGraph};
use isolint::analysis::robustness::{witnesses, Method};
use isolint::model::btp::Workload;
use isolint::model::isolation::{Allocation, Level};

fn main() {
    divan::main();
}

const WORKLOADS: [&str; 3] = ["smallbank", "tpcc", "auction3"];

fn load(name: &str) -> Workload {
    let root = env!("CARGO_MANIFEST_DIR");
    match name {
        "auction3" => isolint::model::generate::auction(3),
        "tpcc" => {
            let dir = format!("{root}/workloads/tpcc");
            isolint::frontend::load(std::path::Path::new(&dir), None)
                .expect("TPC-C loads")
                .workload
        }
        _ => {
            let path = format!("{root}/workloads/{name}.yaml");
            let file =
                isolint::frontend::read_source(std::path::Path::new(&path)).expect("readable");
            isolint::frontend::yaml::parse(&file).expect("valid")
        }
    }
}

fn setup(name: &str) -> (Workload, SummaryGraph) {
    let w = load(name);
    let g = build(&w, Settings::default());
    (w, g)
}

#[divan::bench(args = WORKLOADS, sample_count = 3, sample_size = 1)]
fn explore_all(bencher: divan::Bencher, name: &str) {
    let (w, g) = setup(name);
    let e = explore(&w, &g, Bounds::default());
    eprintln!(
        "explore {name}: found {} within {}: {:?}",
        e.found.is_some(),
        e.bounds,
        e.explored
    );
    bencher.bench_local(|| explore(&w, &g, Bounds::default()).explored.states);
}

#[divan::bench(args = WORKLOADS, sample_count = 3, sample_size = 1)]
fn confirm_witnesses(bencher: divan::Bencher, name: &str) {
    let (w, g) = setup(name);
    let ws = witnesses(&g, None, Method::TypeII);
    for wit in &ws {
        // The same search `confirm` runs, for its counts.
        let nodes = isolint::analysis::explorer::witness_nodes(wit);
        let e = explore_nodes(&w, &g, &nodes, Bounds::default());
        eprintln!(
            "confirm {name}: found {}: {:?}",
            e.found.is_some(),
            e.explored
        );
    }
    bencher.bench_local(|| {
        ws.iter()
            .filter(|wit| {
                matches!(
                    confirm(&w, &g, wit, Bounds::default()),
                    Confirmation::Confirmed(_)
                )
            })
            .count()
    });
}

/// Every program at REPEATABLE READ (snapshot isolation).
#[divan::bench(args = WORKLOADS, sample_count = 3, sample_size = 1)]
fn explore_repeatable_read(bencher: divan::Bencher, name: &str) {
    let (w, g) = setup(name);
    let alloc = Allocation::uniform(w.programs.len(), Level::RepeatableRead);
    let nodes: Vec<usize> = (0..g.nodes.len()).collect();
    let run = || explore_at(&w, &g, &nodes, Bounds::default(), &alloc);
    let e = run();
    eprintln!(
        "explore at RR {name}: found {}: {:?}",
        e.found.is_some(),
        e.explored
    );
    bencher.bench_local(|| run().explored.states);
}
