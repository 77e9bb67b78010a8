//! Loop-heavy programs (issue 26 item 3): a program with loops and
//! branches in sequence has many Unfold≤2 unfoldings, most of them a part
//! of a longer one. `unfold::subsume` keeps only the unfoldings no other
//! one subsumes (proof in the module comment of `src/analysis/unfold.rs`);
//! these tests check that the reduced graph gives exactly the verdicts of
//! the full one, on random loop-heavy BTP workloads and on hand-written
//! SQL programs, and that the PostgreSQL batch's generated workloads are
//! all small enough to analyse once reduced.
//!
//! `ISOLINT_LOOPS_CASES=N` raises the number of random workloads (default
//! 32 per property).

use isolint::analysis::allocation::lowest;
use isolint::analysis::graph::{build, build_from_ltps, Settings, SummaryGraph};
use isolint::analysis::robustness::{check_witness, is_robust, witnesses, Method};
use isolint::analysis::subsets::maximal_robust_subsets;
use isolint::analysis::unfold::{
    count_unfoldings, plan, subsume, unfold_program, unfold_workload, unfold_workload_with, Ltp,
    Mode, SUBSUME_ABOVE,
};
use isolint::model::btp::{Body, Statement, StmtType, Workload};
use isolint::model::error::SourceFile;
use proptest::prelude::*;

mod common;
use common::{finish, random_constraints, random_program, random_schema, random_statement, Rng};

fn cases() -> u32 {
    std::env::var("ISOLINT_LOOPS_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(32)
}

// ------------------------------------------------------------ graphs

/// Every literal unfolding of every program (the full Unfold≤2).
fn literal_ltps(w: &Workload) -> Vec<Ltp> {
    unfold_workload_with(w, &vec![Mode::Literal; w.programs.len()])
}

/// The full graph: one node per literal unfolding.
fn full_graph(w: &Workload, s: Settings) -> SummaryGraph {
    build_from_ltps(w, literal_ltps(w), s)
}

/// Every program reduced, whatever its number of unfoldings (the shipped
/// pipeline reduces only above `SUBSUME_ABOVE`).
fn reduced_graph(w: &Workload, s: Settings) -> SummaryGraph {
    let ltps = (0..w.programs.len())
        .flat_map(|pi| subsume(&w.programs[pi], unfold_program(pi, &w.programs[pi])))
        .collect();
    build_from_ltps(w, ltps, s)
}

const METHODS: [Method; 3] = [Method::TypeII, Method::TypeI, Method::Snapshot];

/// The verdict-level results that must not change: per method the
/// verdict, whether a witness exists and that every witness is a real
/// dangerous cycle of its graph; the maximal robust subsets (every induced
/// program subset's verdict); the lowest allocation (program levels).
fn agree(full: &SummaryGraph, reduced: &SummaryGraph) -> Result<(), String> {
    for m in METHODS {
        let (f, r) = (is_robust(full, None, m), is_robust(reduced, None, m));
        if f != r {
            return Err(format!("{m:?}: full says robust={f}, reduced {r}"));
        }
        let ws = witnesses(reduced, None, m);
        if ws.is_empty() != r {
            return Err(format!(
                "{m:?}: reduced verdict {r} with {} witnesses",
                ws.len()
            ));
        }
        for x in &ws {
            check_witness(reduced, x, m).map_err(|e| format!("{m:?}: bad witness: {e}"))?;
        }
        if witnesses(full, None, m).is_empty() != f {
            return Err(format!(
                "{m:?}: full graph's witnesses disagree with its verdict"
            ));
        }
    }
    let (fs, rs) = (
        maximal_robust_subsets(full, Method::TypeII).sets,
        maximal_robust_subsets(reduced, Method::TypeII).sets,
    );
    if fs != rs {
        return Err(format!(
            "maximal robust subsets: full {fs:?}, reduced {rs:?}"
        ));
    }
    let (fa, ra) = (lowest(full).allocation, lowest(reduced).allocation);
    if fa != ra {
        return Err(format!("lowest allocation: full {fa:?}, reduced {ra:?}"));
    }
    Ok(())
}

// ------------------------------------------------ random loop-heavy workloads

/// A loop-heavy body over statements `0..n`: 2–4 items in sequence, each
/// a loop around 1–3 statements (sometimes holding a branch or an inner
/// loop), a branch, an option or a statement.
fn loop_heavy_body(r: &mut Rng, n: usize) -> Body {
    let mut next = 0;
    let mut take = |r: &mut Rng, k: usize| -> Vec<Body> {
        let mut v = vec![];
        for _ in 0..k {
            if next < n {
                v.push(Body::Stmt(next));
                next += 1;
            }
            let _ = r;
        }
        v
    };
    let mut items = vec![];
    while items.len() < 2 + r.below(3) {
        let k = 1 + r.below(3);
        let item = match r.below(6) {
            0 | 1 => Body::Loop(Box::new(Body::Seq(take(r, k)))),
            2 => {
                let mut inner = take(r, k);
                let alt = take(r, 1);
                inner.push(Body::Branch(vec![Body::Seq(alt), Body::Seq(vec![])]));
                Body::Loop(Box::new(Body::Seq(inner)))
            }
            3 => {
                let outer = take(r, 1);
                let inner = Body::Loop(Box::new(Body::Seq(take(r, k))));
                Body::Loop(Box::new(Body::Seq(
                    outer.into_iter().chain([inner]).collect(),
                )))
            }
            4 => Body::Branch(vec![Body::Seq(take(r, k)), Body::Seq(take(r, 1))]),
            _ => Body::Opt(Box::new(Body::Seq(take(r, k)))),
        };
        items.push(item);
    }
    // Statements not placed yet go last, so each is used exactly once.
    items.extend(take(r, n));
    Body::Seq(items)
}

/// 1–3 programs of 2–7 statements over 1–2 relations (mostly key-based
/// statements only); many statements
/// are twins of the one before (same contents), so different loop copies
/// and branches give occurrences of the same class; FK and same-tuple
/// constraints link them. Programs whose full unfolding would be too large
/// for a debug-build oracle are cut down to a loop around their statements.
fn loop_heavy_workload(seed: u64) -> Workload {
    let mut r = Rng(seed | 1);
    let nrel = 1 + r.below(2);
    let schema = random_schema(&mut r, nrel, 50);
    let nprog = 1 + r.below(3);
    // Key-based statements only, in most workloads: robust workloads are
    // then common and FK/same-tuple protections decide verdicts, which is
    // where a reduction that ignored links would go wrong.
    let key_only = r.chance(60);
    let mut programs = vec![];
    for p in 0..nprog {
        let nstmt = 2 + r.below(6);
        let mut statements: Vec<Statement> = (0..nstmt)
            .map(|s| {
                let ty = if key_only {
                    [
                        StmtType::KeySel,
                        StmtType::KeyUpd,
                        StmtType::KeyDel,
                        StmtType::Ins,
                    ][r.below(4)]
                } else {
                    StmtType::ALL[r.below(7)]
                };
                random_statement(&mut r, &schema, format!("p{p}s{s}"), ty, Some(15))
            })
            .collect();
        for s in 1..nstmt {
            if r.chance(45) {
                let id = statements[s].id.clone();
                statements[s] = Statement {
                    id,
                    ..statements[s - 1].clone()
                };
            }
        }
        let mut body = loop_heavy_body(&mut r, nstmt);
        if count_unfoldings(&body) > 250 {
            body = Body::Loop(Box::new(Body::Seq((0..nstmt).map(Body::Stmt).collect())));
        }
        let constraints = random_constraints(&mut r, &schema, &statements, 45);
        programs.push(random_program(p, statements, body, constraints));
    }
    finish(schema, programs)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    /// The reduced graph (every program's subsumed unfoldings dropped)
    /// and the full Unfold≤2 graph agree on every verdict, witness
    /// existence, subset and allocation, under all eight settings; so does
    /// the shipped pipeline (`graph::build`, which reduces only programs
    /// with more than `SUBSUME_ABOVE` unfoldings).
    #[test]
    fn reduction_keeps_every_verdict(seed in any::<u64>(), bits in 0u8..8) {
        let w = loop_heavy_workload(seed);
        let s = common::settings(bits);
        let full = full_graph(&w, s);
        let reduced = reduced_graph(&w, s);
        prop_assert!(reduced.nodes.len() <= full.nodes.len());
        if let Err(e) = agree(&full, &reduced) {
            prop_assert!(false, "seed {seed}, {s:?}: {e}");
        }
        if let Err(e) = agree(&full, &build(&w, s)) {
            prop_assert!(false, "seed {seed}, {s:?}, graph::build: {e}");
        }
    }
}

/// The property above is not vacuous: over fixed seeds the reduction
/// drops nodes, and the generator gives both robust and non-robust
/// workloads (a reduction that made everything robust, or everything not
/// robust, would fail `reduction_keeps_every_verdict` on one of them).
#[test]
fn random_loop_heavy_workloads_shrink_and_vary() {
    let (mut shrunk, mut robust, mut not_robust, mut nodes) = (0, 0, 0, (0, 0));
    for seed in 1..=60u64 {
        let w = loop_heavy_workload(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let s = Settings::default();
        let (full, reduced) = (full_graph(&w, s), reduced_graph(&w, s));
        shrunk += usize::from(reduced.nodes.len() < full.nodes.len());
        nodes.0 += full.nodes.len();
        nodes.1 += reduced.nodes.len();
        if is_robust(&full, None, Method::TypeII) {
            robust += 1;
        } else {
            not_robust += 1;
        }
    }
    eprintln!(
        "60 workloads: {shrunk} shrunk, nodes {} → {}, {robust} robust, {not_robust} not",
        nodes.0, nodes.1
    );
    assert!(shrunk >= 30, "only {shrunk} of 60 workloads shrank");
    assert!(
        robust >= 3 && not_robust >= 3,
        "{robust} robust, {not_robust} not robust"
    );
}

// ------------------------------------------------ hand-written SQL programs

const SCHEMA: &str = "CREATE TABLE t (id INT PRIMARY KEY, a INT, b INT, c INT);\n";

fn sql_workload(programs: &[(&str, String)]) -> Workload {
    let schema = isolint::frontend::sql::ddl::parse_schema(&SourceFile::new("schema.sql", SCHEMA))
        .expect("schema parses");
    let sources: Vec<SourceFile> = programs
        .iter()
        .map(|(n, t)| SourceFile::new(format!("{n}.sql"), t.as_str()))
        .collect();
    isolint::frontend::lower::lower_programs("loops".into(), None, schema, &sources)
        .expect("programs lower")
        .workload
}

/// Three loops in sequence: 3³ = 27 unfoldings (each loop zero, one or
/// two times), more than `SUBSUME_ABOVE`, so the shipped pipeline reduces
/// the program. `first` is the body of the first loop.
fn three_loops(first: &str) -> String {
    format!(
        "FOR i IN 1..:n LOOP\n{first}END LOOP;\n\
         FOR j IN 1..:m LOOP\n  UPDATE t SET b = b + 1 WHERE id = :j;\nEND LOOP;\n\
         FOR l IN 1..:p LOOP\n  UPDATE t SET c = c + 1 WHERE id = :l;\nEND LOOP;\nCOMMIT;\n"
    )
}

/// The verdict of the shipped (reduced) pipeline, after checking that it
/// equals the full graph's and that the reduction did happen.
fn verdict(w: &Workload) -> bool {
    let s = Settings::default();
    let (full, shipped) = (full_graph(w, s), build(w, s));
    assert!(
        w.programs
            .iter()
            .any(|p| count_unfoldings(&p.body) > SUBSUME_ABOVE),
        "no program is loop-heavy enough to be reduced"
    );
    assert!(
        shipped.nodes.len() < full.nodes.len(),
        "nothing was reduced"
    );
    agree(&full, &shipped).expect("reduced and full graphs agree");
    is_robust(&shipped, None, Method::TypeII)
}

/// Lost update inside a loop: two instances of Bump read t.a of row :i,
/// both update it from the value read; at READ COMMITTED T1 reads a = 0,
/// T2 reads a = 0, T2 writes 0 - 1 and commits, T1's UPDATE (row no longer
/// locked) writes 0 - 1 and commits: a = -1, while either serial order
/// gives -2 (run on PostgreSQL 15 with rows (1,0,0,0), (2,0,0,0): T1
/// `SELECT a … id = 1` → 0; T2 whole: reads 0, `UPDATE … a = 0 - 1`,
/// commits; T1 `UPDATE … a = 0 - 1`, commits; final a = -1). Summary
/// graph: the read → the other's update is counterflow
/// (rw), the update → the other's read is non-counterflow (wr), and the
/// read comes before the update in Bump: a type-II cycle. Not robust.
///
/// Control: the read `FOR UPDATE`. Every statement then locks the rows it
/// touches until commit (row-level two-phase locking, no predicate reads),
/// so every execution is serializable; in the graph a locking read has no
/// counterflow edge and key updates have none either (Table 1b), so no
/// cycle has a counterflow edge. Robust.
#[test]
fn lost_update_in_a_loop_heavy_program() {
    let plain =
        "  SELECT a INTO :x FROM t WHERE id = :i;\n  UPDATE t SET a = :x - 1 WHERE id = :i;\n";
    let locking =
        "  SELECT a INTO :x FROM t WHERE id = :i FOR UPDATE;\n  UPDATE t SET a = :x - 1 WHERE id = :i;\n";
    assert!(!verdict(&sql_workload(&[("Bump", three_loops(plain))])));
    assert!(verdict(&sql_workload(&[("Bump", three_loops(locking))])));
}

/// Read skew against a loop-heavy writer. Writer's first loop increments
/// t.a of rows :i (twice round the loop: two rows in one transaction).
/// Pair reads t.a of row :k1, then of row :k2: with k1 = 1, k2 = 2 and a
/// Writer over rows 1 and 2 starting after Pair's first read and
/// committing before its second, Pair sees row 1 before and row 2 after
/// the Writer — no serial order gives that (run on PostgreSQL 15: Pair
/// saw 0, then 1; serial orders give 0, 0 or 1, 1). Graph: Pair's first read →
/// Writer's update is counterflow, Writer's update → Pair's second read
/// is wr, and in Pair the counterflow edge leaves before the statement
/// the incoming edge enters: type II. Not robust.
///
/// Control: One reads a single row once. Its only counterflow edge leaves
/// the statement the incoming wr edge enters (not an earlier one), that
/// edge starts at an update (not a read), and Writer has no outgoing
/// counterflow edge (key updates: Table 1b), so no dangerous pair. Robust.
#[test]
fn read_skew_against_a_loop_heavy_writer() {
    let writer = three_loops("  UPDATE t SET a = a + 1 WHERE id = :i;\n");
    let pair = "SELECT a INTO :x FROM t WHERE id = :k1;\nSELECT a INTO :y FROM t WHERE id = :k2;\nCOMMIT;\n";
    let one = "SELECT a INTO :x FROM t WHERE id = :k1;\nCOMMIT;\n";
    assert!(!verdict(&sql_workload(&[
        ("Writer", writer.clone()),
        ("Pair", pair.into())
    ])));
    assert!(verdict(&sql_workload(&[
        ("Writer", writer),
        ("One", one.into())
    ])));
}

/// Order matters: the reduction may drop an unfolding only for one that
/// contains it *in order*. Schema r, s (and u for loop-heaviness).
/// Blind writes W: r.a := 1 for row :k, then s.b := 1 for row :k. Swap
/// first runs three loops over u (27 · 2 = 54 unfoldings, so the shipped
/// pipeline reduces it; all before the statements below, so edges into
/// them never come after Swap's read), then either writes r.a := 2 and
/// reads s.b (in that order), or reads s.b and writes r.a := 2.
///
/// Edges: Swap's read of s.b → W's write of s.b is counterflow (rw); W's
/// writes → Swap's write of r.a (ww) and Swap's read of s.b (wr) are not;
/// W has no outgoing counterflow edge (blind key updates, Table 1b), and
/// no edge starts at a read except Swap's counterflow one. So a type-II
/// cycle needs, in Swap, the counterflow edge to leave *before* the
/// statement the incoming edge enters: only the unfolding "read s.b, then
/// write r.a" has it. The ELSE branch has it: not robust. On PostgreSQL
/// (READ COMMITTED): Swap reads s.b = 0, W runs and commits, Swap writes
/// r.a = 2 and commits: r.a = 2 and Swap saw b = 0, while W;Swap gives
/// b = 1 seen and Swap;W gives r.a = 1 (run on PostgreSQL 15 with rows
/// r(1, 0), s(1, 0): Swap saw 0, final r.a = 2, s.b = 1).
///
/// Control: both branches write first (the one-line change in ELSE).
/// Then no unfolding has the order: robust (on PostgreSQL, W's update of
/// r waits for Swap's row lock, so W cannot run between Swap's write and
/// its read). A reduction that compared
/// statement multisets instead of sequences would drop the ELSE
/// unfolding (same statements as THEN, later) and call the first
/// workload robust.
#[test]
fn order_decides_which_unfolding_is_contained() {
    let schema_extra = "CREATE TABLE r (id INT PRIMARY KEY, a INT);\nCREATE TABLE s (id INT PRIMARY KEY, b INT);\nCREATE TABLE u (id INT PRIMARY KEY, a INT, b INT, c INT);\n";
    let write = "  UPDATE r SET a = 2 WHERE id = :k;\n";
    let read = "  SELECT b INTO :x FROM s WHERE id = :k;\n";
    let loops = "FOR i IN 1..:n LOOP\n  UPDATE u SET a = a + 1 WHERE id = :i;\nEND LOOP;\n\
                 FOR j IN 1..:m LOOP\n  UPDATE u SET b = b + 1 WHERE id = :j;\nEND LOOP;\n\
                 FOR l IN 1..:p LOOP\n  UPDATE u SET c = c + 1 WHERE id = :l;\nEND LOOP;\n";
    let w = "UPDATE r SET a = 1 WHERE id = :k;\nUPDATE s SET b = 1 WHERE id = :k;\nCOMMIT;\n";
    let swap = |else_branch: String| {
        format!("{loops}IF :c > 0 THEN\n{write}{read}ELSE\n{else_branch}END IF;\nCOMMIT;\n")
    };
    let load = |swap: String| {
        let schema =
            isolint::frontend::sql::ddl::parse_schema(&SourceFile::new("schema.sql", schema_extra))
                .expect("schema parses");
        let sources = [
            SourceFile::new("W.sql", w),
            SourceFile::new("Swap.sql", swap.as_str()),
        ];
        isolint::frontend::lower::lower_programs("order".into(), None, schema, &sources)
            .expect("programs lower")
            .workload
    };
    assert!(!verdict(&load(swap(format!("{read}{write}")))));
    assert!(verdict(&load(swap(format!("{write}{read}")))));
}

/// Nine loops in sequence, each reading t.a and writing t.b of row :iₖ:
/// 3⁹ = 19,683 unfoldings, 354,294 occurrences (≈1.3·10¹¹ estimated
/// edges with the reader): by the structural bound alone `plan` would
/// coarsen the program to its maximal unfoldings (an over-approximation,
/// with a warning). Reduced, one node remains (every loop twice, 36
/// statements), so the plan keeps it literal, the size guard admits it
/// without a warning, and the graph has two nodes.
///
/// Verdict (reasoned): nobody writes t.a, so the loops' reads have no
/// edges; their updates of t.b give only ww edges (key updates have no
/// counterflow edge, Table 1b). Reader (t.a and t.b of one row) has a
/// counterflow edge to the updates and a wr edge back, but it is one
/// statement (the counterflow edge leaves the statement the incoming
/// edge enters) and the loop program has no outgoing counterflow edge:
/// no type-II cycle. Robust.
#[test]
fn nine_loops_in_sequence_stay_literal_and_small() {
    let mut p = String::new();
    for k in 1..=9 {
        p.push_str(&format!(
            "FOR i{k} IN 1..:n{k} LOOP\n  SELECT a INTO :x{k} FROM t WHERE id = :i{k};\n  UPDATE t SET b = :x{k} WHERE id = :i{k};\nEND LOOP;\n"
        ));
    }
    p.push_str("COMMIT;\n");
    let reader = "SELECT a, b INTO :x, :y FROM t WHERE id = :k;\nCOMMIT;\n".to_string();
    let w = sql_workload(&[("Loops", p), ("Reader", reader)]);
    assert_eq!(count_unfoldings(&w.programs[0].body), 19_683);
    let pl = plan(&w);
    assert_eq!(pl.modes, vec![Mode::Literal, Mode::Literal]);
    let warnings = isolint::analysis::limits::admit(&w).expect("admitted");
    assert!(warnings.is_empty(), "no approximation warning");
    let g = build(&w, Settings::default());
    assert_eq!(g.nodes.len(), 2);
    assert_eq!(g.nodes[0].ltp.occurrences.len(), 36);
    assert!(is_robust(&g, None, Method::TypeII));
}

// ------------------------------------------------ the PostgreSQL batch

/// The seeds of tests/pg_soundness.rs's default batch (0..300): each
/// workload, reduced, is under `isolint_testkit::soundness::MAX_OCCURRENCES`, so
/// the batch skips none as too large. Before the reduction 38 of the 300
/// were over the old limit (150 occurrences by the plan's estimate; up to
/// 10,116 occurrences, 618 nodes and 2·10⁷ edges), the largest reduced
/// one has a few hundred.
#[test]
fn the_batch_skips_no_workload() {
    use isolint_testkit::soundness::{files, occurrences, MAX_OCCURRENCES};
    use isolint_testkit::sqlgen::workload;
    let mut over = vec![];
    let mut largest = (0, 0);
    for seed in 0..300 {
        let (s, p) = files(&workload(seed));
        let loaded = isolint::frontend::sql_dir::lower_texts(&s, &p).expect("lowers");
        let n = occurrences(&loaded.workload);
        largest = largest.max((n, seed));
        if n > MAX_OCCURRENCES {
            over.push((seed, n));
        }
    }
    eprintln!(
        "largest reduced workload: {} occurrences (seed {})",
        largest.0, largest.1
    );
    assert!(over.is_empty(), "too large: {over:?}");
}

/// Measurement, not a test: `cargo test --test loops -- --ignored
/// --nocapture measure_batch` prints, per generated workload of seeds
/// 0..N (N=300 by default) that the old limit skipped, the plan's
/// estimate and modes, the occurrences, nodes and edges before (the
/// plan's modes, no reduction) and after, and where the time goes.
#[test]
#[ignore]
fn measure_batch() {
    use isolint_testkit::soundness::files;
    use isolint_testkit::sqlgen::workload;
    use std::time::Instant;
    let n: u64 = std::env::var("N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let (mut over, mut tot) = (0, [0f64; 5]);
    for seed in 0..n {
        let (s, p) = files(&workload(seed));
        let t0 = Instant::now();
        let w = isolint::frontend::sql_dir::lower_texts(&s, &p)
            .expect("lowers")
            .workload;
        let t1 = Instant::now();
        let est: f64 = plan(&w)
            .estimates
            .iter()
            .map(|e| e.total_occurrences())
            .sum();
        let ltps = unfold_workload(&w);
        let t2 = Instant::now();
        let g = build(&w, Settings::default());
        let r = is_robust(&g, None, Method::TypeII);
        let t3 = Instant::now();
        // The pipeline before the reduction: the plan's modes (a program
        // over 20,000 unfoldings is over-approximated either way).
        let modes = plan(&w).modes;
        let before = unfold_workload_with(&w, &modes);
        let occ = |l: &[Ltp]| l.iter().map(|l| l.occurrences.len()).sum::<usize>();
        // Up to ~10⁹ edges: not built (the old plan coarsened such a
        // program; the new one keeps it literal since reduced it fits).
        let full = (occ(&before) <= 20_000)
            .then(|| build_from_ltps(&w, before.clone(), Settings::default()));
        let fr = full
            .as_ref()
            .map_or(r, |g| is_robust(g, None, Method::TypeII));
        let t4 = Instant::now();
        let _ = isolint::analysis::analyze(&w, Settings::default(), Method::TypeII, false);
        let t5 = Instant::now();
        let d = [t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4].map(|d| d.as_secs_f64());
        for (a, b) in tot.iter_mut().zip(d) {
            *a += b;
        }
        assert_eq!(r, fr, "seed {seed}");
        if est > 150.0 {
            over += 1;
            eprintln!(
                "seed {seed}: estimate {est:.0}; modes {modes:?}; before {} occ, {} nodes, {} edges, {:.3} s; reduced {} occ, {} nodes, {} edges, {:.3} s (unfold {:.3} s); analyze {:.3} s; robust {r}",
                occ(&before), full.as_ref().map_or(0, |g| g.nodes.len()), full.as_ref().map_or(0, |g| g.edges.len()), d[3],
                occ(&ltps), g.nodes.len(), g.edges.len(), d[2], d[1], d[4]
            );
        }
    }
    eprintln!("{over} of {n} over the old limit; totals: lower {:.1} s, unfold {:.1} s, reduced graph+test {:.1} s, unreduced graph+test {:.1} s, analyze {:.1} s", tot[0], tot[1], tot[2], tot[3], tot[4]);
}
