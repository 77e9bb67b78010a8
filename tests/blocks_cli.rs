//! The commands on the block form of the summary graph (issue 26,
//! `analysis::on_blocks`): what `analyze`, `check` and `allocate` answer
//! above the edge guard, where the per-edge graph cannot be written.
//!
//! Expectations: Auction(n)'s verdicts and counts come from the paper
//! (Section 7.3, Table 2: 3n nodes, 8n + 9n² edges, n counterflow; robust
//! under type II, not under type I); everything else from the per-edge
//! pipeline, the test oracle, on inputs small enough for both (the block
//! form is forced with `ISOLINT_FORM=blocks`, or the guard lowered with
//! `ISOLINT_EDGE_GUARD`). Witnesses need not be the per-edge ones, but
//! every edge of every cycle must be an edge of the per-edge graph and
//! the cycle dangerous (`robustness::check_witness`).

mod common;

use assert_cmd::Command;
use common::{bundled, random_workload, settings, Rng, Shape};
use fixedbitset::FixedBitSet;
use isolint::analysis::allocation::Cause;
use isolint::analysis::blocks::{Blocks, View};
use isolint::analysis::graph::build;
use isolint::analysis::on_blocks;
use isolint::analysis::progress::Silent;
use isolint::analysis::promote::{promoted, suggest, Budget, Suggestion};
use isolint::analysis::robustness::{
    check_witness, check_witness_under, is_robust, Method, Witness,
};
use isolint::analysis::subsets::maximal_robust_subsets;
use isolint::analysis::{allocate_with, analyze};
use isolint::model::btp::Workload;
use isolint::model::isolation::{Allocation, Level};
use isolint::model::settings::Settings;
use proptest::prelude::*;
use serde_json::Value;

fn isolint(env: &[(&str, &str)]) -> Command {
    let mut c = Command::cargo_bin("isolint").expect("binary built");
    c.current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("NO_COLOR", "1");
    for (k, v) in env {
        c.env(k, v);
    }
    c
}

/// JSON output, stderr and exit code of one command.
fn run(args: &[&str], env: &[(&str, &str)]) -> (Value, String, i32) {
    let out = isolint(env).args(args).output().expect("runs");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let v = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}); stderr: {err}"));
    (v, err, out.status.code().unwrap_or(-1))
}

/// Auction(n) written as a BTP file by the CLI itself.
fn auction_file(dir: &std::path::Path, n: usize) -> String {
    let path = dir.join(format!("auction{n}.yaml"));
    let p = path.to_str().expect("utf-8 path").to_string();
    isolint(&[])
        .args(["generate", "auction", "--n", &n.to_string(), "-o", &p])
        .assert()
        .success();
    p
}

/// Auction(40) over a guard lowered to 1,000 edges (it has 14,720): the
/// commands decide on blocks (and say so), with the paper's verdicts and
/// Table 2's formulas. Control: type I, which the paper shows cannot
/// prove Auction robust, is not robust on blocks either.
#[test]
fn auction_above_the_guard_is_decided_on_blocks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let n = 40u64;
    let file = auction_file(dir.path(), n as usize);
    let guard = [("ISOLINT_EDGE_GUARD", "1000")];
    let (v, err, code) = run(&["analyze", &file, "--format", "json"], &guard);
    assert!(err.contains("block form"), "{err}");
    assert_eq!(code, 0);
    assert_eq!(v["robust"], true);
    assert_eq!(v["summary_graph"]["nodes"], 3 * n);
    assert_eq!(v["summary_graph"]["edges"], 8 * n + 9 * n * n);
    assert_eq!(v["summary_graph"]["counterflow_edges"], n);
    let (v, _, code) = run(
        &["check", &file, "--no-confirm", "--format", "json"],
        &guard,
    );
    assert_eq!((v["robust"].clone(), code), (Value::Bool(true), 0));
    let (v, _, _) = run(&["allocate", &file, "--format", "json"], &guard);
    let levels = v["isolation"]["as_is"].as_object().expect("levels");
    assert_eq!(levels.len() as u64, 2 * n);
    assert!(levels.values().all(|l| l == "READ COMMITTED"), "{levels:?}");
    // Control.
    let (v, err, _) = run(
        &[
            "analyze",
            &file,
            "--method",
            "type1",
            "--no-confirm",
            "--format",
            "json",
        ],
        &guard,
    );
    assert!(err.contains("block form"), "{err}");
    assert_eq!(v["robust"], false);
    // One witness per component with a counterflow edge, as per edge.
    let (e, _, _) = run(
        &[
            "analyze",
            &file,
            "--method",
            "type1",
            "--no-confirm",
            "--format",
            "json",
        ],
        &[("ISOLINT_FORM", "edges")],
    );
    let count = |v: &Value| v["witnesses"].as_array().map(Vec::len);
    assert_eq!(count(&v), count(&e));
    assert!(count(&v) > Some(0));
}

/// The parts of a JSON answer both forms must agree on exactly: the
/// verdict, Table 2's counts, the allocation (levels, deployed verdict,
/// which programs are raised and why), the number of witnesses, the
/// maximal robust subsets, whether a verified fix exists and whether no
/// promotion can help. (The fix itself may differ: the block form reports
/// a minimal one, the per-edge search the smallest.)
fn comparable(v: &Value) -> Value {
    let reasons = v["isolation"]["reasons"].as_array().map(|rs| {
        rs.iter()
            .map(|r| {
                let mut r = r.clone();
                r.as_object_mut().map(|o| o.remove("cycle"));
                r
            })
            .collect::<Vec<_>>()
    });
    serde_json::json!({
        "robust": v["robust"],
        "robust_rc": v["robust_under_read_committed"],
        "summary_graph": v["summary_graph"],
        "as_is": v["isolation"]["as_is"],
        "deployed": v["isolation"]["deployed"],
        "reasons": reasons,
        "witnesses": v["witnesses"].as_array().map(Vec::len),
        "subsets": v["maximal_robust_subsets"],
        "subsets_complete": v["maximal_robust_subsets_complete"],
        "fix_verified": v["suggestion"]["verified"],
        "no_promotion_helps": v["suggestion"]["no_promotion_helps"],
    })
}

/// Every command that runs on blocks, forced onto them, answers as the
/// per-edge pipeline on the bundled workloads (BTP and SQL), including a
/// `--levels` deployment.
#[test]
fn forced_blocks_answer_as_the_per_edge_pipeline() {
    let runs: &[&[&str]] = &[
        &["analyze", "--no-confirm"],
        &["analyze", "--no-confirm", "--method", "type1", "--subsets"],
        &["analyze", "--no-confirm", "--subsets"],
        &["analyze", "--no-confirm", "--level", "repeatable-read"],
        &["check", "--no-confirm"],
        &["allocate"],
    ];
    let inputs = [
        "workloads/smallbank.yaml",
        "workloads/tpcc-paper.yaml",
        "workloads/auction.yaml",
        "workloads/tpcc",
    ];
    for input in inputs {
        for args in runs {
            let mut a: Vec<&str> = args.to_vec();
            a.extend([input, "--format", "json"]);
            let (e, _, ce) = run(&a, &[("ISOLINT_FORM", "edges")]);
            let (b, _, cb) = run(&a, &[("ISOLINT_FORM", "blocks")]);
            assert_eq!(comparable(&b), comparable(&e), "{a:?}");
            assert_eq!(cb, ce, "{a:?}");
        }
    }
    let a = [
        "check",
        "--no-confirm",
        "workloads/smallbank.yaml",
        "--levels",
        "Amalgamate=serializable,WriteCheck=repeatable-read",
        "--format",
        "json",
    ];
    let (e, _, ce) = run(&a, &[("ISOLINT_FORM", "edges")]);
    let (b, _, cb) = run(&a, &[("ISOLINT_FORM", "blocks")]);
    assert_eq!(comparable(&b), comparable(&e));
    assert_eq!(cb, ce);
}

/// The generated 12-table application (README "Scale"), 60 programs over
/// a guard lowered to 10,000 edges: not robust on blocks, as on edges,
/// with the same counts and allocation; the same input without the
/// lowered guard runs per edge (no note). The witnesses' edges are
/// checked against the per-edge graph in [`findings_on_blocks_match`].
#[test]
fn generated_app_above_the_guard_is_not_robust_on_blocks() {
    let dir = tempfile::tempdir().expect("tempdir");
    common::app::write(dir.path(), 7, 60, 25).expect("write app");
    let app = dir.path().to_str().expect("utf-8").to_string();
    let a = ["check", &app, "--no-confirm", "--format", "json"];
    let (b, err, cb) = run(&a, &[("ISOLINT_EDGE_GUARD", "10000")]);
    assert!(err.contains("block form"), "{err}");
    let (e, err, ce) = run(&a, &[]);
    assert!(!err.contains("block form"), "{err}");
    assert_eq!(b["robust"], false);
    assert_eq!((cb, ce), (1, 1));
    assert_eq!(comparable(&b), comparable(&e));
    let w = isolint::frontend::load(dir.path(), None)
        .expect("loads")
        .workload;
    findings_on_blocks_match(&w, Settings::default(), &Allocation(vec![]))
        .expect("blocks findings equal per-edge findings");
}

/// The findings on blocks against the per-edge ones on `w`: verdicts,
/// counts, lowest allocation and its raised programs; every witness and
/// every raised program's cycle made of real edges and dangerous
/// (`check_witness`, `check_witness_under` one level lower), and the
/// deployed `alloc`'s verdict (when it names every program).
fn findings_on_blocks_match(
    w: &Workload,
    s: Settings,
    alloc: &Allocation,
) -> Result<(), TestCaseError> {
    let g = build(w, s);
    for m in [Method::TypeII, Method::TypeI, Method::Snapshot] {
        let e = analyze(w, s, m, false);
        let b = on_blocks::analyze_with(w, s, m, false, &Silent);
        prop_assert_eq!(b.robust, e.robust, "{:?}", m);
        prop_assert_eq!(
            (b.edge_count(), b.counterflow_count()),
            (e.edge_count(), e.counterflow_count())
        );
        prop_assert_eq!(b.witnesses.len(), e.witnesses.len(), "{:?}", m);
        for x in &b.witnesses {
            prop_assert_eq!(check_witness(&g, x, m), Ok(()), "{:?} {:?}", m, x);
        }
        prop_assert_eq!(&b.isolation.as_is, &e.isolation.as_is, "{:?}", m);
    }
    // Subsets and the fix search on blocks against the per-edge ones.
    let blocks = Blocks::build(w, s);
    for m in [Method::TypeII, Method::TypeI] {
        prop_assert_eq!(
            on_blocks::subsets(&blocks, m, None, &Silent),
            maximal_robust_subsets(&g, m),
            "{:?}",
            m
        );
        if !is_robust(&g, None, m) {
            let (e, b) = (
                suggest(w, s, m, Budget::default()),
                on_blocks::fix(w, &blocks, m),
            );
            prop_assert_eq!(e.reads().is_some(), b.reads().is_some(), "{:?} {:?}", e, b);
            prop_assert_eq!(
                matches!(e, Suggestion::Impossible { .. }),
                matches!(b, Suggestion::Impossible { .. })
            );
            if let Some(reads) = b.reads() {
                prop_assert!(is_robust(&build(&promoted(w, reads), s), None, m));
                // Minimal: no read can be left out.
                for i in 0..reads.len() {
                    let mut fewer = reads.to_vec();
                    fewer.remove(i);
                    prop_assert!(!is_robust(&build(&promoted(w, &fewer), s), None, m));
                }
            }
        }
    }
    let e = allocate_with(w, s, &Silent);
    let b = on_blocks::allocate_with(w, s, &Silent);
    prop_assert_eq!(&b.isolation.as_is, &e.isolation.as_is);
    let raised = |f: &isolint::analysis::Findings| -> Vec<(usize, Level)> {
        f.isolation
            .raised
            .iter()
            .map(|r| (r.program, r.level))
            .collect()
    };
    prop_assert_eq!(raised(&b), raised(&e));
    // Each raised program's cycle, rebuilt as a witness: dangerous with
    // the program one level lower (a pivot) or not SERIALIZABLE (a
    // neighbour, checked at its pivot).
    let low = Blocks::build(w, s).lowest();
    for r in &low.raised {
        let mut below = low.allocation.clone();
        below.0[r.program] = Level::ALL[r.level as usize - 1];
        for wit in raised_cycles(w, s, r) {
            prop_assert_eq!(check_witness_under(&g, &wit, &below), Ok(()), "{:?}", r);
            if let Cause::Neighbour { pivot } = r.cause {
                prop_assert_eq!(g.nodes[wit.edges[0].to as usize].ltp.program, pivot);
            }
        }
    }
    if alloc.0.len() == w.programs.len() {
        let dep = isolint::model::isolation::Deployed {
            allocation: alloc.clone(),
            sources: vec![isolint::model::isolation::LevelSource::Flag; alloc.0.len()],
        };
        let e = isolint::analysis::check_deployed_with(w, s, Method::TypeII, &dep, &Silent);
        let b = on_blocks::check_deployed_with(w, s, Method::TypeII, &dep, &Silent);
        prop_assert_eq!(b.robust, e.robust);
        prop_assert_eq!(b.witnesses.len(), e.witnesses.len());
        for x in &b.witnesses {
            prop_assert_eq!(check_witness_under(&g, x, alloc), Ok(()));
        }
    }
    Ok(())
}

/// The two cycles `on_blocks` may report for raised program `r` (the
/// first raised programs get a shortest one, the rest one through two
/// search trees), as witnesses.
fn raised_cycles(
    w: &Workload,
    s: Settings,
    r: &isolint::analysis::blocks::BlockRaise,
) -> Vec<Witness> {
    let b = Blocks::build(w, s);
    let mut hub = isolint::analysis::blocks::Hub::new(&b, View::default());
    let comp = hub.components();
    let nc = b.nc_edges(View::default())[&r.comp];
    let shortest = hub.cycle(&comp, r.comp, (r.e3, r.e4), Some(nc));
    let trees = hub.trees(&comp, r.comp, nc).cycle(&hub, (r.e3, r.e4));
    [shortest, trees]
        .into_iter()
        .map(|edges| Witness {
            edges: edges.expect("closes"),
            reason: r.reason,
        })
        .collect()
}

/// The masks of `blocks::View` against the per-edge graph: a node mask
/// is the induced subgraph (`is_robust` with a mask), a set of promoted
/// statements removes the counterflow edges leaving their occurrences
/// (`promote`'s module comment).
fn masks_match(w: &Workload, s: Settings, seed: u64) -> Result<(), TestCaseError> {
    let g = build(w, s);
    let b = Blocks::build(w, s);
    let mut r = Rng(seed | 1);
    let mut programs = FixedBitSet::with_capacity(w.programs.len());
    for p in 0..w.programs.len() {
        programs.set(p, r.chance(70));
    }
    let mut nodes = FixedBitSet::with_capacity(g.nodes.len());
    for p in programs.ones() {
        g.program_nodes[p].iter().for_each(|&v| nodes.insert(v));
    }
    let promoted: std::collections::HashSet<(usize, usize)> = w
        .programs
        .iter()
        .enumerate()
        .flat_map(|(p, prog)| (0..prog.statements.len()).map(move |q| (p, q)))
        .filter(|_| r.chance(30))
        .collect();
    let stmt = |v: u32, pos: u16| {
        let l = &g.nodes[v as usize].ltp;
        (l.program, l.occurrences[pos as usize].stmt)
    };
    let masked =
        g.retain_edges(|e| !(e.counterflow && promoted.contains(&stmt(e.from, e.from_pos))));
    for m in [Method::TypeII, Method::TypeI, Method::Snapshot] {
        for (nm, pm) in [
            (None, None),
            (Some(&nodes), None),
            (None, Some(&promoted)),
            (Some(&nodes), Some(&promoted)),
        ] {
            let view = View {
                nodes: nm,
                promoted: pm,
            };
            let gm = if pm.is_some() { &masked } else { &g };
            prop_assert_eq!(
                b.is_robust_in(view, m),
                is_robust(gm, nm, m),
                "{:?} nodes {} promoted {}",
                m,
                nm.is_some(),
                pm.is_some()
            );
        }
    }
    Ok(())
}

fn random_allocation(seed: u64, n: usize) -> Allocation {
    let mut r = Rng(seed.rotate_left(7) | 1);
    Allocation((0..n).map(|_| Level::ALL[r.below(3)]).collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(120))]

    /// Random workloads, every setting: the findings on blocks equal the
    /// per-edge ones, and every cycle they show is real and dangerous.
    #[test]
    fn blocks_findings_equal_per_edge_findings(seed in any::<u64>(), bits in 0u8..8) {
        let shape = Shape { programs: 8, ..Shape::small() };
        let w = random_workload(seed, shape);
        findings_on_blocks_match(&w, settings(bits), &random_allocation(seed, w.programs.len()))?;
    }

    /// Node and tag masks on blocks equal the per-edge masked graph.
    #[test]
    fn block_masks_equal_the_masked_graph(seed in any::<u64>(), bits in 0u8..8) {
        let shape = Shape { programs: 8, ..Shape::small() };
        let w = random_workload(seed, shape);
        masks_match(&w, settings(bits), seed)?;
    }
}

/// The bundled workloads on every row of Table 2.
#[test]
fn blocks_findings_on_bundled_workloads() {
    for name in ["smallbank", "tpcc-paper", "auction"] {
        let w = bundled(name);
        for s in Settings::paper_rows(true) {
            findings_on_blocks_match(&w, s, &Allocation(vec![]))
                .unwrap_or_else(|e| panic!("{name} {s:?}: {e}"));
            masks_match(&w, s, 11).unwrap_or_else(|e| panic!("{name} {s:?}: {e}"));
        }
    }
}
