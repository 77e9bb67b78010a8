//! Scale (issue 26), side by side in one process and one run: for the
//! generated SQL application of `tests/common/app.rs` with `n` programs,
//! lowering (front-end load) + summary graph build — the yardstick —
//! beside `analyze`, `check` and `allocate` (each from the loaded
//! workload, graph build included) and `allocation::lowest` alone; for
//! Auction(n), graph build and the type-II test. Prints Markdown rows;
//! the last column gives the same ratios in this thread's CPU time,
//! which other processes' load disturbs far less than wall time.
//!
//! `cargo bench --bench scale -- 1000 3000 auction:4000`; `write:DIR:N`
//! writes the N-program application to DIR for whole-process timings;
//! `only:check:N` (or `analyze`, `allocate`, `lowest`) runs one command on
//! the N-program application, for a profiler.

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use isolint::analysis::allocation::lowest;
use isolint::analysis::blocks::Blocks;
use isolint::analysis::graph::{build, Settings};
use isolint::analysis::progress::Silent;
use isolint::analysis::robustness::{is_robust, Method};
use isolint::analysis::{allocate_with, analyze_with, check};
use isolint::model::generate::auction;

fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let t = Instant::now();
    let x = f();
    (x, t.elapsed())
}

/// This thread's CPU time (`/proc/thread-self/schedstat`, first field:
/// nanoseconds on a CPU; zero where unavailable). On a machine shared with
/// other builds wall times vary with the load; CPU time much less.
fn cpu_now() -> Duration {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .map(Duration::from_nanos)
        .unwrap_or_default()
}

/// [`timed`] with the CPU time beside the wall time.
fn timed_cpu<T>(f: impl FnOnce() -> T) -> (T, Duration, Duration) {
    let c = cpu_now();
    let (x, wall) = timed(f);
    (x, wall, cpu_now().saturating_sub(c))
}

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    println!("| input | edges | load + build | analyze | check | allocate | lowest alone | blocks: build + type II + lowest levels | CPU: load + build, analyze/check/allocate ratios |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for a in &args {
        if let Some(spec) = a.strip_prefix("write:") {
            let (dir, n) = spec.rsplit_once(':').expect("write:DIR:N");
            common::app::write(std::path::Path::new(dir), 7, n.parse().expect("N"), 25)
                .expect("write app");
            continue;
        }
        if let Some(spec) = a.strip_prefix("only:") {
            let (cmd, n) = spec.split_once(':').expect("only:COMMAND:N");
            only(cmd, n.parse().expect("N"));
            continue;
        }
        match a.strip_prefix("auction:") {
            Some(n) => auction_row(n.parse().expect("auction:N")),
            None => app_row(a.parse().expect("a program count")),
        }
    }
}

fn app_row(n: usize) {
    let dir = tempfile::tempdir().expect("tempdir");
    common::app::write(dir.path(), 7, n, 25).expect("write app");
    let (w, load, load_cpu) = timed_cpu(|| {
        isolint::frontend::load(dir.path(), None)
            .expect("generated app loads")
            .workload
    });
    let (g, graph, graph_cpu) = timed_cpu(|| build(&w, Settings::default()));
    let (_, low) = timed(|| lowest(&g).raised.len());
    let edges = g.edges.len();
    drop(g);
    let base = load + graph;
    let base_cpu = load_cpu + graph_cpu;
    let (_, an, an_cpu) =
        timed_cpu(|| analyze_with(&w, Settings::default(), Method::TypeII, false, &Silent));
    let (_, ch, ch_cpu) = timed_cpu(|| check(&w, Settings::default(), Method::TypeII));
    let (_, al, al_cpu) = timed_cpu(|| allocate_with(&w, Settings::default(), &Silent));
    let (_, bl) = timed(|| {
        let b = Blocks::build(&w, Settings::default());
        (b.is_robust(Method::TypeII), b.lowest_levels())
    });
    let r = |d: Duration| {
        format!(
            "{} ({:.1}×)",
            secs(d + load),
            (d + load).as_secs_f64() / base.as_secs_f64()
        )
    };
    let rc = |d: Duration| {
        format!(
            "{:.2}×",
            (d + load_cpu).as_secs_f64() / base_cpu.as_secs_f64()
        )
    };
    println!(
        "| {n} programs | {edges} | {} | {} | {} | {} | {} | {} | {} CPU, {}/{}/{} |",
        secs(base),
        r(an),
        r(ch),
        r(al),
        secs(low),
        secs(bl),
        secs(base_cpu),
        rc(an_cpu),
        rc(ch_cpu),
        rc(al_cpu)
    );
}

/// One command on the `n`-program application (for `perf record`).
fn only(cmd: &str, n: usize) {
    let dir = tempfile::tempdir().expect("tempdir");
    common::app::write(dir.path(), 7, n, 25).expect("write app");
    let w = isolint::frontend::load(dir.path(), None)
        .expect("generated app loads")
        .workload;
    let s = Settings::default();
    let (robust, t) = timed(|| match cmd {
        "check" => check(&w, s, Method::TypeII).robust,
        "analyze" => analyze_with(&w, s, Method::TypeII, false, &Silent).robust,
        "allocate" => allocate_with(&w, s, &Silent).robust,
        "lowest" => lowest(&build(&w, s)).raised.is_empty(),
        _ => panic!("only:check|analyze|allocate|lowest:N"),
    });
    eprintln!("{cmd} {n}: {} ({robust})", secs(t));
}

/// Auction(n): the per-edge graph and type-II test up to `per_edge`
/// programs (beyond, the edge guard refuses it), and the block form.
fn auction_row(n: usize) {
    let w = auction(n);
    let (b, blocks) = timed(|| {
        let b = Blocks::build(&w, Settings::default());
        let robust = b.is_robust(Method::TypeII);
        (b, robust)
    });
    let (edges, _) = b.0.edge_counts();
    let per_edge = if n <= 4000 {
        let ((g, robust), t) = timed(|| {
            let g = build(&w, Settings::default());
            let r = is_robust(&g, None, Method::TypeII);
            (g, r)
        });
        assert_eq!(robust, b.1);
        drop(g);
        format!("{} (per-edge graph + type II)", secs(t))
    } else {
        "refused (edge guard)".into()
    };
    println!(
        "| Auction({n}) | {edges} | {per_edge} | | | | | {} ({}) | |",
        secs(blocks),
        if b.1 { "robust" } else { "not robust" }
    );
}
