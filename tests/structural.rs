//! Unfolding without enumerating (issue 8 item 5, issue 13 item 4):
//! statement-free parts collapse, identical alternatives merge, programs
//! too large for Unfold≤2 are analysed through approximate nodes
//! (`unfold::Mode`, soundness proof in `src/summary_graph.rs`), and the
//! edge guard refuses what would not fit. The literal LTP graph is the
//! oracle: an approximation may turn "robust" into "not robust", never the
//! reverse; how often it does is measured here on random workloads and on
//! every bundled workload.
//!
//! `ISOLINT_STRUCTURAL_CASES=N` raises the number of random workloads
//! (default 200 per property).

use isolint::analysis::graph::{build, build_from_ltps, Settings, SummaryGraph};
use isolint::analysis::robustness::{is_robust, Method};
use isolint::analysis::subsets::maximal_robust_subsets;
use isolint::analysis::unfold::{
    count_unfoldings, plan, unfold_program, unfold_workload_with, Mode,
};
use isolint::frontend::yaml;
use isolint::model::btp::{
    validate, Body, Constraint, ConstraintKind, Program, Statement, StmtType, Workload,
};
use isolint::model::error::SourceFile;
use isolint::model::schema::{AttrSet, ForeignKey, Relation, Schema};
use proptest::prelude::*;

mod common;
use common::programs::{branchy_loop, twenty_ifs};
use common::{
    finish, random_constraints, random_program, random_schema, random_statement, settings, Rng,
};

fn cases() -> u32 {
    std::env::var("ISOLINT_STRUCTURAL_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200)
}

fn graph(w: &Workload, mode: Mode, s: Settings) -> SummaryGraph {
    let modes = vec![mode; w.programs.len()];
    build_from_ltps(w, unfold_workload_with(w, &modes), s)
}

// ---------------------------------------------------------------- SQL

fn sql_workload(schema: &str, programs: &[(&str, String)]) -> Workload {
    let schema = isolint::frontend::sql::ddl::parse_schema(&SourceFile::new("schema.sql", schema))
        .expect("schema parses");
    let sources: Vec<SourceFile> = programs
        .iter()
        .map(|(n, t)| SourceFile::new(format!("{n}.sql"), t.as_str()))
        .collect();
    isolint::frontend::lower::lower_programs("test".into(), None, schema, &sources)
        .expect("programs lower")
        .workload
}

const SCHEMA: &str = "CREATE TABLE t (id INT PRIMARY KEY, a INT, b INT, c INT);\n";

#[test]
fn twenty_optional_updates_are_analysed_without_enumerating() {
    // Reader: one key-based read of t.a. Writer: twenty optional updates
    // of t.a. Edges: read → update (rw, counterflow), update → read (wr),
    // update → update (ww). The only cycles run Reader → Writer → Reader;
    // at Reader the incoming wr edge enters the read, the counterflow edge
    // leaves the same statement (not before it) and starts nothing from a
    // read into Reader; Writer has no outgoing counterflow edge (key upd
    // rows of Table 1b are all false). So no type-II cycle: robust.
    let w = sql_workload(
        SCHEMA,
        &[
            ("Writer", twenty_ifs()),
            (
                "Reader",
                "SELECT a INTO :x FROM t WHERE id = :k;\nCOMMIT;\n".into(),
            ),
        ],
    );
    let writer = w.program("Writer").expect("Writer");
    assert_eq!(count_unfoldings(&w.programs[writer].body), 1 << 20);
    let p = plan(&w);
    assert_eq!(p.modes[writer], Mode::Maximal, "2^20 unfoldings");
    assert!(p.fits());
    let g = build(&w, Settings::default());
    // One maximal unfolding: all twenty updates.
    assert_eq!(g.program_nodes[writer].len(), 1);
    assert_eq!(
        g.nodes[g.program_nodes[writer][0]].ltp.occurrences.len(),
        20
    );
    assert!(is_robust(&g, None, Method::TypeII));

    // Add a read of t.b before the writer's updates of t.a, and let the
    // reader read t.b after t.a: SmallBank's Balance/Amalgamate anomaly
    // (Reader reads a, Writer updates a and writes b, Reader reads b) once
    // an update writes b. Not robust, in the unfolding that takes it.
    let mut text = twenty_ifs();
    text = text.replacen(
        "UPDATE t SET a = a + 20 WHERE id = :k20;",
        "UPDATE t SET b = b + 20 WHERE id = :k20;",
        1,
    );
    let w = sql_workload(
        SCHEMA,
        &[
            ("Writer", text),
            (
                "Reader",
                "SELECT a INTO :x FROM t WHERE id = :k;\nSELECT b INTO :y FROM t WHERE id = :k;\nCOMMIT;\n"
                    .into(),
            ),
        ],
    );
    let g = build(&w, Settings::default());
    assert!(!is_robust(&g, None, Method::TypeII));
}

#[test]
fn identical_branches_give_one_linear_program() {
    // 15 IF/ELSE blocks whose branches run the same UPDATE: 2^15
    // unfoldings before merging, one statement sequence after.
    let mut s = String::new();
    for i in 1..=15 {
        s.push_str(&format!(
            "IF :p{i} > 0 THEN\n  UPDATE t SET a = a + 1 WHERE id = :k;\nELSE\n  UPDATE t SET a = a + 1 WHERE id = :k;\nEND IF;\n"
        ));
    }
    s.push_str("COMMIT;\n");
    let w = sql_workload(SCHEMA, &[("P", s)]);
    let ltps = unfold_program(0, &w.programs[0]);
    assert_eq!(ltps.len(), 1);
    assert_eq!(ltps[0].occurrences.len(), 15);
    assert_eq!(plan(&w).modes, vec![Mode::Literal]);
}

#[test]
fn statement_free_branches_do_not_multiply_unfoldings() {
    let w = sql_workload(SCHEMA, &[("P", branchy_loop())]);
    // The same structure as a BTP with the statement-free parts spelled
    // out (as the front-end lowered it when issue 8 was filed): loop body
    // = 16 (15 branches + the missing ELSE) × 2 (IF) × 3 (WHILE: 0, 1, 2
    // times) × 2 (IF/ELSE) = 192 unfoldings, the loop 1 + 192 + 192² =
    // 37,057 (the count issue 8 reports); Unfold≤2 gives three LTPs.
    let mut p = w.programs[0].clone();
    let empty = || Body::Seq(vec![]);
    p.body = Body::Loop(Box::new(Body::Seq(vec![
        Body::Branch((0..16).map(|_| empty()).collect()),
        Body::Branch(vec![empty(), empty()]),
        Body::Loop(Box::new(empty())),
        Body::Branch(vec![empty(), empty()]),
        Body::Stmt(0),
        Body::Stmt(1),
    ])));
    assert_eq!(count_unfoldings(&p.body), 37_057);
    let lens: Vec<usize> = unfold_program(0, &p)
        .iter()
        .map(|l| l.occurrences.len())
        .collect();
    assert_eq!(lens, vec![0, 2, 4]);
    // The loop body reduces to the two UPDATEs: Unfold≤2 gives the empty
    // program, one iteration and two iterations.
    let lens: Vec<usize> = unfold_program(0, &w.programs[0])
        .iter()
        .map(|l| l.occurrences.len())
        .collect();
    assert_eq!(lens, vec![0, 2, 4]);
    assert_eq!(plan(&w).modes, vec![Mode::Literal]);
}

#[test]
fn if_else_blocks_on_one_table_fit_instead_of_aborting() {
    // 14 IF/ELSE blocks whose branches differ: 16,384 distinct unfoldings
    // of 14 statements on one table, ≈5·10¹⁰ occurrence pairs literally
    // (the allocation abort of issue 13). Maximal unfoldings are the same
    // 16,384, so the program becomes one node of 28 occurrences.
    let mut s = String::new();
    for i in 1..=14 {
        s.push_str(&format!(
            "IF :p{i} > 0 THEN\n  UPDATE t SET a = a + 1 WHERE id = :k{i};\nELSE\n  UPDATE t SET b = b + 1 WHERE id = :k{i};\nEND IF;\n"
        ));
    }
    s.push_str("COMMIT;\n");
    let w = sql_workload(SCHEMA, &[("P", s)]);
    let p = plan(&w);
    assert_eq!(p.modes, vec![Mode::Full]);
    assert!(p.fits());
    assert!(isolint::analysis::limits::check_size(&w).is_ok());
    let g = build(&w, Settings::default());
    assert_eq!(g.nodes.len(), 1);
    assert_eq!(g.nodes[0].ltp.occurrences.len(), 28);
    // Only key updates: no counterflow edge at all (Table 1b), robust.
    assert!(is_robust(&g, None, Method::TypeII));
    assert_eq!(g.counterflow_edges(), 0);
}

#[test]
fn the_edge_guard_refuses_with_a_message() {
    // Auction(n) has 3n nodes and 8n + 9n² edges (Table 2); Buyer alone
    // is touched by 3n occurrences. At n = 10000 that is ≥ 9·10⁸ pairs.
    let w = isolint::model::generate::auction(10_000);
    let err = isolint::analysis::limits::check_size(&w).expect_err("too large");
    assert!(err.message.contains("summary graph"), "{}", err.message);
    assert!(err.message.contains("edges"), "{}", err.message);
    // Small programs are never coarsened: Auction(n) stays literal.
    assert!(plan(&w).modes.iter().all(|m| *m == Mode::Literal));
    // Auction(1000) fits.
    assert!(
        isolint::analysis::limits::check_size(&isolint::model::generate::auction(1000)).is_ok()
    );
}

#[test]
fn optional_protector_is_not_trusted() {
    // q1: key upd Parent; q2: key sel Child with q1 = f(q2) — but q1 is
    // optional. A maximal node keeps q1, yet the unfolding without q1 has
    // an unprotected q2, so the link must be dropped in approximate modes.
    let rel = |name: &str| Relation {
        name: name.into(),
        attributes: vec!["id".into(), "v".into()],
        primary_key: vec![0],
        unique_keys: vec![],
    };
    let schema = Schema {
        relations: vec![rel("Parent"), rel("Child")],
        foreign_keys: vec![ForeignKey {
            name: "f".into(),
            domain: 1,
            range: 0,
            columns: vec![],
        }],
    };
    let set = |v: &[usize]| Some(AttrSet::from_indices(2, v.iter().copied()));
    let st = |id: &str, ty, rel, read, write| Statement {
        id: id.into(),
        ty,
        rel,
        pread: None,
        read,
        write,
        sql: None,
        origin: None,
        locking: false,
        held: None,
    };
    let p = Program {
        name: "P".into(),
        abbrev: None,
        statements: vec![
            st("q1", StmtType::KeyUpd, 0, set(&[1]), set(&[1])),
            st("q2", StmtType::KeySel, 1, set(&[1]), None),
            st("q3", StmtType::KeyUpd, 0, set(&[1]), set(&[1])),
        ],
        body: Body::Seq(vec![
            Body::Opt(Box::new(Body::Stmt(0))),
            Body::Stmt(1),
            Body::Stmt(2),
        ]),
        constraints: vec![
            Constraint {
                kind: ConstraintKind::ForeignKey(0),
                child: 1,
                parent: 0,
            },
            Constraint {
                kind: ConstraintKind::ForeignKey(0),
                child: 1,
                parent: 2,
            },
        ],
        file: None,
    };
    let w = Workload {
        name: "w".into(),
        description: None,
        schema,
        programs: vec![p],
    };
    assert_eq!(validate(&w), Ok(()));
    for mode in [Mode::Maximal, Mode::Full] {
        let ltps = unfold_workload_with(&w, &[mode]);
        assert_eq!(ltps.len(), 1);
        // Only links whose parent is always there and earlier survive:
        // none (q1 optional, q3 after q2).
        assert!(ltps[0].links.is_empty(), "{mode:?}: {:?}", ltps[0].links);
    }
    let lit = unfold_workload_with(&w, &[Mode::Literal]);
    assert!(lit.iter().any(|l| !l.links.is_empty()));
}

// ------------------------------------------------ random workloads

/// A random body over statements `next..`: nested sequences, branches,
/// options and loops (depth ≤ 3), each statement used once.
fn random_body(r: &mut Rng, next: &mut usize, n: usize, depth: u32) -> Body {
    if *next >= n {
        return Body::Seq(vec![]);
    }
    if depth == 0 || r.chance(35) {
        *next += 1;
        return Body::Stmt(*next - 1);
    }
    let k = 1 + r.below(3);
    let parts: Vec<Body> = (0..k).map(|_| random_body(r, next, n, depth - 1)).collect();
    match r.below(4) {
        0 => Body::Seq(parts),
        1 => {
            let mut parts = parts;
            if r.chance(30) {
                parts.push(Body::Seq(vec![]));
            }
            Body::Branch(parts)
        }
        2 => Body::Opt(Box::new(Body::Seq(parts))),
        _ => Body::Loop(Box::new(Body::Seq(parts))),
    }
}

fn random_workload(seed: u64) -> Workload {
    let mut r = Rng(seed | 1);
    let nrel = 1 + r.below(3);
    let schema = random_schema(&mut r, nrel, 50);
    let nprog = 1 + r.below(3);
    let mut programs = vec![];
    for p in 0..nprog {
        let nstmt = 1 + r.below(6);
        let mut statements: Vec<Statement> = (0..nstmt)
            .map(|s| {
                let ty = StmtType::ALL[r.below(7)];
                random_statement(&mut r, &schema, format!("p{p}s{s}"), ty, Some(15))
            })
            .collect();
        // Twins: a statement with the same contents as the one before it,
        // so branches often have alternatives equal up to contents (with
        // or without the same constraints) and normalization merges them.
        for s in 1..nstmt {
            if r.chance(40) {
                let id = statements[s].id.clone();
                statements[s] = Statement {
                    id,
                    ..statements[s - 1].clone()
                };
            }
        }
        let mut next = 0;
        let mut items = vec![];
        while next < nstmt {
            items.push(random_body(&mut r, &mut next, nstmt, 3));
        }
        let mut body = Body::Seq(items);
        // Keep the naive oracle (no merging at all) small.
        if count_unfoldings(&body) > 300 {
            body = Body::Seq((0..nstmt).map(Body::Stmt).collect());
        }
        let constraints = random_constraints(&mut r, &schema, &statements, 45);
        programs.push(random_program(p, statements, body, constraints));
    }
    finish(schema, programs)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    /// Soundness of both approximate modes against the literal graph, for
    /// both tests and every induced program subset's verdict (via the
    /// maximal robust subsets: each approximate maximal set must lie in a
    /// literal one). Without FK and same-tuple constraints nothing is
    /// dropped and maximal unfoldings are literal unfoldings, so `Maximal`
    /// must then agree exactly (module comment of summary_graph.rs).
    #[test]
    fn approximations_are_sound(seed in any::<u64>(), bits in 0u8..8) {
        let w = random_workload(seed);
        let s = settings(bits);
        let lit = graph(&w, Mode::Literal, s);
        for mode in [Mode::Maximal, Mode::Full] {
            let g = graph(&w, mode, s);
            for method in [Method::TypeII, Method::TypeI] {
                let (l, a) = (is_robust(&lit, None, method), is_robust(&g, None, method));
                prop_assert!(l || !a, "{:?} says robust, literal does not ({:?}, {:?})", mode, method, s);
                if mode == Mode::Maximal && !s.foreign_keys && !s.same_tuple {
                    prop_assert_eq!(l, a, "Maximal without constraints is exact");
                }
            }
            let ls = maximal_robust_subsets(&lit, Method::TypeII);
            let gs = maximal_robust_subsets(&g, Method::TypeII);
            for set in &gs.sets {
                prop_assert!(ls.sets.iter().any(|l| set.iter().all(|p| l.contains(p))),
                    "approximate robust set {:?} not robust literally", set);
            }
        }
    }

    /// Normalization and bottom-up merging never change the literal LTPs
    /// of a program, compared with enumerating the raw body (the program
    /// as given, which `unfold_program` normalizes) — checked through the
    /// summary graph's Table 2 counts and verdicts, whatever the settings.
    #[test]
    fn normalization_keeps_the_literal_graph(seed in any::<u64>(), bits in 0u8..8) {
        let w = random_workload(seed);
        let s = settings(bits);
        let g = graph(&w, Mode::Literal, s);
        let raw = naive_graph(&w, s);
        prop_assert_eq!(g.nodes.len(), raw.nodes.len());
        prop_assert_eq!(g.edges.len(), raw.edges.len());
        prop_assert_eq!(g.counterflow_edges(), raw.counterflow_edges());
        for method in [Method::TypeII, Method::TypeI] {
            prop_assert_eq!(is_robust(&g, None, method), is_robust(&raw, None, method));
        }
    }
}

/// The literal graph from a naive Unfold≤2: every program's body expanded
/// without any merging, then one LTP per distinct (statement contents,
/// links) — Section 6.1 by the letter, the oracle for normalization.
fn naive_graph(w: &Workload, s: Settings) -> SummaryGraph {
    use isolint::analysis::unfold::{Link, Ltp, Occurrence};
    fn expand(b: &Body, it: &[u8]) -> Vec<Vec<Occurrence>> {
        match b {
            Body::Stmt(i) => vec![vec![Occurrence {
                stmt: *i,
                iteration: it.to_vec(),
            }]],
            Body::Seq(v) => {
                let mut acc = vec![vec![]];
                for p in v {
                    let tails = expand(p, it);
                    acc = acc
                        .iter()
                        .flat_map(|h: &Vec<Occurrence>| {
                            tails.iter().map(move |t| [h.clone(), t.clone()].concat())
                        })
                        .collect();
                }
                acc
            }
            Body::Branch(v) => v.iter().flat_map(|a| expand(a, it)).collect(),
            Body::Opt(b) => [expand(b, it), vec![vec![]]].concat(),
            Body::Loop(b) => {
                let one = expand(b, &[it, &[1]].concat());
                let two = expand(b, &[it, &[2]].concat());
                let mut v = vec![vec![]];
                v.extend(one.iter().cloned());
                for a in &one {
                    for c in &two {
                        v.push([a.clone(), c.clone()].concat());
                    }
                }
                v
            }
        }
    }
    fn loops(b: &Body, path: &mut Vec<usize>, next: &mut usize, out: &mut Vec<Vec<usize>>) {
        match b {
            Body::Stmt(i) => out[*i] = path.clone(),
            Body::Seq(v) | Body::Branch(v) => v.iter().for_each(|b| loops(b, path, next, out)),
            Body::Opt(b) => loops(b, path, next, out),
            Body::Loop(b) => {
                path.push(*next);
                *next += 1;
                loops(b, path, next, out);
                path.pop();
            }
        }
    }
    let mut ltps = vec![];
    for (pi, p) in w.programs.iter().enumerate() {
        let mut lp = vec![vec![]; p.statements.len()];
        loops(&p.body, &mut vec![], &mut 0, &mut lp);
        let content = |i: usize| {
            let s = &p.statements[i];
            (
                s.ty,
                s.rel,
                s.pread.clone(),
                s.read.clone(),
                s.write.clone(),
                s.locking,
            )
        };
        let mut seen = vec![];
        let mut k = 0;
        for occ in expand(&p.body, &[]) {
            let mut links = vec![];
            for c in &p.constraints {
                let shared = lp[c.child]
                    .iter()
                    .zip(&lp[c.parent])
                    .take_while(|(a, b)| a == b)
                    .count();
                for (ci, co) in occ.iter().enumerate().filter(|(_, o)| o.stmt == c.child) {
                    for (pj, po) in occ.iter().enumerate().filter(|(_, o)| o.stmt == c.parent) {
                        if co.iteration[..shared] == po.iteration[..shared] {
                            links.push(Link {
                                kind: c.kind,
                                child: ci,
                                parent: pj,
                            });
                        }
                    }
                }
            }
            links.sort();
            let key = (
                occ.iter().map(|o| content(o.stmt)).collect::<Vec<_>>(),
                links.clone(),
            );
            if !seen.contains(&key) {
                seen.push(key);
                k += 1;
                ltps.push(Ltp {
                    program: pi,
                    unfolding: k,
                    occurrences: occ,
                    links,
                    mode: Mode::Literal,
                });
            }
        }
    }
    build_from_ltps(w, ltps, s)
}

// ------------------------------------------------ measurements

fn bundled() -> Vec<(String, Workload)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads");
    let mut out = vec![];
    for name in ["smallbank", "tpcc-paper", "auction"] {
        let file =
            isolint::frontend::read_source(&root.join(format!("{name}.yaml"))).expect("readable");
        out.push((format!("{name}.yaml"), yaml::parse(&file).expect("valid")));
    }
    for name in ["smallbank", "tpcc-paper", "tpcc", "auction"] {
        let loaded = isolint::frontend::load(&root.join(name), None).expect("loads");
        out.push((format!("{name}/"), loaded.workload));
    }
    out
}

/// Every bundled workload forced through each approximate mode, in all
/// eight settings and both tests: the verdict and the maximal robust
/// subsets compared with the literal graph. Sound always; the number of
/// changed answers is printed (`cargo test --test structural -- --nocapture`)
/// and recorded in README.md.
#[test]
fn bundled_workloads_through_the_approximation() {
    let (mut total, mut verdicts, mut subsets) = (0, [0; 2], [0; 2]);
    for (name, w) in bundled() {
        for bits in 0..8 {
            let s = settings(bits);
            let lit = graph(&w, Mode::Literal, s);
            for (k, mode) in [Mode::Maximal, Mode::Full].into_iter().enumerate() {
                let g = graph(&w, mode, s);
                for method in [Method::TypeII, Method::TypeI] {
                    let (l, a) = (is_robust(&lit, None, method), is_robust(&g, None, method));
                    assert!(l || !a, "{name} {mode:?} {method:?} {s:?}: unsound");
                    if k == 0 {
                        total += 1;
                    }
                    if l != a {
                        verdicts[k] += 1;
                    }
                    let ls = maximal_robust_subsets(&lit, method).sets;
                    let gs = maximal_robust_subsets(&g, method).sets;
                    for set in &gs {
                        assert!(
                            ls.iter().any(|l| set.iter().all(|p| l.contains(p))),
                            "{name} {mode:?}: {set:?} not robust literally"
                        );
                    }
                    if ls != gs {
                        subsets[k] += 1;
                        eprintln!(
                            "{name} {mode:?} {method:?} {}: subsets {ls:?} -> {gs:?}",
                            s.label()
                        );
                    }
                }
            }
        }
    }
    eprintln!(
        "bundled: {total} (workload, setting, test) cases; verdict changed: maximal {}, full {}; maximal robust subsets changed: maximal {}, full {}",
        verdicts[0], verdicts[1], subsets[0], subsets[1]
    );
}

/// Random workloads: how often each approximation changes the verdict.
#[test]
fn random_workloads_verdict_changes() {
    let n = cases() as u64;
    let (mut total, mut not_robust, mut changed) = (0, 0, [0; 2]);
    for seed in 1..=n {
        let w = random_workload(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        for bits in 0..8 {
            let s = settings(bits);
            let lit = graph(&w, Mode::Literal, s);
            let l = is_robust(&lit, None, Method::TypeII);
            total += 1;
            if !l {
                not_robust += 1;
            }
            for (k, mode) in [Mode::Maximal, Mode::Full].into_iter().enumerate() {
                let a = is_robust(&graph(&w, mode, s), None, Method::TypeII);
                assert!(l || !a, "seed {seed}: unsound");
                if l != a {
                    changed[k] += 1;
                }
            }
        }
    }
    eprintln!(
        "random: {total} (workload, setting) cases, {not_robust} not robust literally; type-II verdict changed: maximal {}, full {}",
        changed[0], changed[1]
    );
    assert!(not_robust > total / 10 && not_robust < total * 9 / 10);
}

/// The generator must exercise the merging of alternatives, or
/// `normalization_keeps_the_literal_graph` would not test it.
#[test]
fn generator_produces_mergeable_alternatives() {
    let mut merged = 0;
    for seed in 1..=200u64 {
        let w = random_workload(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        for p in &w.programs {
            let (mut before, mut after) = (vec![], vec![]);
            p.body.statements(&mut before);
            isolint::analysis::unfold::normalize(&p.body, p).statements(&mut after);
            if after.len() < before.len() {
                merged += 1;
            }
        }
    }
    assert!(
        merged > 10,
        "only {merged} programs with merged alternatives"
    );
}

/// The grouped, dense build (occurrences classed, edge kinds tabled per
/// class pair, edges written once by source) against the definition:
/// Algorithm 1 asked for every ordered pair of occurrences on one
/// relation, edges sorted by source node, then by the source's relation
/// and position, then by target. Same edges in the same order, so
/// witnesses do not depend on the grouping.
#[test]
fn grouped_build_equals_algorithm_1_pair_by_pair() {
    let mut ws = bundled();
    ws.push(("Auction(4)".into(), isolint::model::generate::auction(4)));
    for (name, w) in &ws {
        for bits in 0..8 {
            let s = settings(bits);
            let g = isolint::analysis::graph::build(w, s);
            let mut expected = vec![];
            for (ni, a) in g.nodes.iter().enumerate() {
                // Source occurrences by (relation, position), as `build`.
                let mut occ: Vec<(usize, usize)> = (0..a.ltp.occurrences.len())
                    .map(|p| (a.ltp.statement(w, p).rel, p))
                    .collect();
                occ.sort_unstable();
                for (_, pa) in occ {
                    for (nj, b) in g.nodes.iter().enumerate() {
                        for pb in 0..b.ltp.occurrences.len() {
                            let (nc, cf) = isolint::analysis::graph::edge_kinds_between(
                                w,
                                (&a.ltp, pa),
                                (&b.ltp, pb),
                                s,
                            );
                            for (on, counterflow) in [(nc, false), (cf, true)] {
                                if on {
                                    expected.push(isolint::analysis::graph::Edge {
                                        from: ni as u32,
                                        to: nj as u32,
                                        from_pos: pa as u16,
                                        to_pos: pb as u16,
                                        counterflow,
                                    });
                                }
                            }
                        }
                    }
                }
            }
            assert!(g.edges == expected, "{name} {}", s.label());
        }
    }
}
