//! The fast per-SCC type-II test against a literal transcription of
//! Algorithm 2, on random workloads; and every reported witness checked to
//! be a real type-II (or type-I) cycle of the summary graph.

use isolint::analysis::graph::{build, Settings, SummaryGraph};
use isolint::analysis::robustness::{check_witness, is_robust, witnesses, Method};
use isolint::model::btp::StmtType;
use proptest::prelude::*;

mod common;
use common::{random_workload, settings, Shape};

/// Small workloads: the literal Algorithm 2 is cubic in the edges.
fn shape() -> Shape {
    Shape {
        key_sel_pct: 0,
        twin_pct: 0,
        ..Shape::small()
    }
}

/// Reflexive-transitive reachability between nodes.
fn reachability(g: &SummaryGraph) -> Vec<Vec<bool>> {
    let n = g.nodes.len();
    let mut r = vec![vec![false; n]; n];
    for (i, row) in r.iter_mut().enumerate() {
        row[i] = true;
    }
    for e in &g.edges {
        r[e.from as usize][e.to as usize] = true;
    }
    for k in 0..n {
        let via = r[k].clone();
        for row in r.iter_mut().filter(|row| row[k]) {
            for (cell, &b) in row.iter_mut().zip(&via) {
                *cell |= b;
            }
        }
    }
    r
}

/// Algorithm 2, line by line (over the already constructed SuG).
fn literal_algorithm2(g: &SummaryGraph) -> bool {
    let reach = reachability(g);
    for e1 in g.edges.iter().filter(|e| !e.counterflow) {
        let (p1, p2) = (e1.from as usize, e1.to as usize);
        for e3 in &g.edges {
            let (p3, p4) = (e3.from as usize, e3.to as usize);
            if !reach[p2][p3] {
                continue;
            }
            for e4 in g
                .edges
                .iter()
                .filter(|e| e.counterflow && e.from as usize == p4)
            {
                let p5 = e4.to as usize;
                let q3_type = g.nodes[p3].types[e3.from_pos as usize];
                if reach[p5][p1]
                    && (e3.counterflow
                        || e4.from_pos < e3.to_pos
                        || matches!(
                            q3_type,
                            StmtType::KeySel
                                | StmtType::PredSel
                                | StmtType::PredUpd
                                | StmtType::PredDel
                        ))
                {
                    return false;
                }
            }
        }
    }
    true
}

/// Type-I: no cycle through a counterflow edge.
fn literal_type1(g: &SummaryGraph) -> bool {
    let reach = reachability(g);
    !g.edges
        .iter()
        .any(|e| e.counterflow && reach[e.to as usize][e.from as usize])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn fast_type2_agrees_with_literal_algorithm2(seed in any::<u64>(), bits in 0u8..8) {
        let w = random_workload(seed, shape());
        let g = build(&w, settings(bits));
        // The literal transcription is cubic in the edges: a rare large
        // graph (loops unfold twice) would take minutes in a debug build.
        prop_assume!(g.edges.len() <= 500);
        prop_assert_eq!(is_robust(&g, None, Method::TypeII), literal_algorithm2(&g));
        prop_assert_eq!(is_robust(&g, None, Method::TypeI), literal_type1(&g));
    }

    #[test]
    fn every_witness_is_a_real_cycle(seed in any::<u64>(), bits in 0u8..8) {
        let w = random_workload(seed, shape());
        let g = build(&w, settings(bits));
        for method in [Method::TypeII, Method::TypeI] {
            let ws = witnesses(&g, None, method);
            prop_assert_eq!(ws.is_empty(), is_robust(&g, None, method));
            for wit in &ws {
                prop_assert_eq!(check_witness(&g, wit, method), Ok(()));
            }
        }
    }
}

/// The generator must produce both verdicts, or the property tests above
/// would be vacuous.
#[test]
fn generator_covers_both_verdicts() {
    let (mut robust, mut not) = (0, 0);
    for seed in 1..300u64 {
        let g = build(&random_workload(seed * 7919, shape()), Settings::default());
        if literal_algorithm2(&g) {
            robust += 1;
        } else {
            not += 1;
        }
    }
    assert!(robust > 20 && not > 20, "robust {robust}, not robust {not}");
}

/// The bundled non-robust workloads: each witness is a real type-II cycle.
#[test]
fn bundled_witnesses_are_type2_cycles() {
    for name in ["smallbank", "tpcc-paper"] {
        let path = format!("{}/workloads/{name}.yaml", env!("CARGO_MANIFEST_DIR"));
        let file = isolint::frontend::read_source(std::path::Path::new(&path)).expect("readable");
        let w = isolint::frontend::yaml::parse(&file).expect("valid");
        let g = build(&w, Settings::default());
        let ws = witnesses(&g, None, Method::TypeII);
        assert!(!ws.is_empty(), "{name} is not robust");
        for wit in &ws {
            assert_eq!(check_witness(&g, wit, Method::TypeII), Ok(()), "{name}");
        }
    }
}
