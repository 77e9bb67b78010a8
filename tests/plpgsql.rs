//! PL/pgSQL routines as transaction programs: the bundled PL/pgSQL
//! versions of SmallBank and TPC-C lower to the same BTPs as the `.sql`
//! versions (so Table 2 and Figures 6–7 come out the same); one test per
//! construct (routine text → BTP text); located errors; no panics.

use std::collections::BTreeSet;
use std::path::Path;

use isolint::analysis::graph::{build, Granularity, Settings};
use isolint::analysis::robustness::Method;
use isolint::analysis::subsets::maximal_robust_subsets;
use isolint::analysis::unfold::unfold_program;
use isolint::model::btp::{Statement, Workload};
use proptest::prelude::*;

fn load(dir: &str) -> Workload {
    isolint::frontend::load(Path::new(dir), None)
        .unwrap_or_else(|e| panic!("{dir}: {e:?}"))
        .workload
}

fn set_text(w: &Workload, s: &Statement, set: &Option<isolint::model::schema::AttrSet>) -> String {
    match set {
        None => "-".into(),
        Some(a) => format!("{{{}}}", w.schema.rel(s.rel).names(a).join(",")),
    }
}

fn stmt_text(w: &Workload, s: &Statement) -> String {
    format!(
        "{} {} P{} R{} W{}",
        s.ty.name(),
        w.schema.rel(s.rel).name.to_lowercase(),
        set_text(w, s, &s.pread).to_lowercase(),
        set_text(w, s, &s.read).to_lowercase(),
        set_text(w, s, &s.write).to_lowercase()
    )
}

/// Each program's unfoldings as statement sequences (names lower-cased:
/// pg_dump prints unquoted names in lower case), in program order.
fn unfoldings(w: &Workload) -> Vec<BTreeSet<Vec<String>>> {
    w.programs
        .iter()
        .enumerate()
        .map(|(pi, p)| {
            unfold_program(pi, p)
                .iter()
                .map(|l| {
                    (0..l.occurrences.len())
                        .map(|k| stmt_text(w, l.statement(w, k)))
                        .collect()
                })
                .collect()
        })
        .collect()
}

fn constraints(w: &Workload) -> Vec<BTreeSet<String>> {
    w.programs
        .iter()
        .map(|p| {
            p.constraints
                .iter()
                .map(|c| w.constraint_text(p, c).to_lowercase())
                .collect()
        })
        .collect()
}

fn abbrevs(w: &Workload) -> Vec<String> {
    w.programs.iter().map(|p| p.short().to_string()).collect()
}

/// (nodes, edges, counterflow edges) of the summary graph per setting.
fn graph_counts(w: &Workload) -> Vec<(usize, usize, usize)> {
    settings()
        .map(|s| {
            let g = build(w, s);
            (g.nodes.len(), g.edges.len(), g.counterflow_edges())
        })
        .collect()
}

fn settings() -> impl Iterator<Item = Settings> {
    [Granularity::Attribute, Granularity::Tuple]
        .into_iter()
        .flat_map(|granularity| {
            [true, false].map(|foreign_keys| Settings {
                granularity,
                foreign_keys,
                same_tuple: false,
            })
        })
}

fn subsets(w: &Workload) -> Vec<Vec<String>> {
    let mut out = vec![];
    for s in settings() {
        for m in [Method::TypeI, Method::TypeII] {
            let found = maximal_robust_subsets(&build(w, s), m);
            let mut sets: Vec<String> = found
                .sets
                .iter()
                .map(|set| {
                    let mut n: Vec<&str> = set.iter().map(|&p| w.programs[p].short()).collect();
                    n.sort();
                    n.join(",")
                })
                .collect();
            sets.sort();
            out.push(sets);
        }
    }
    out
}

fn same_btps(sql: &str, plpgsql: &str) {
    let (a, b) = (load(sql), load(plpgsql));
    assert_eq!(abbrevs(&a), abbrevs(&b), "abbreviations");
    assert_eq!(unfoldings(&a), unfoldings(&b), "statements per unfolding");
    assert_eq!(constraints(&a), constraints(&b), "constraints");
    assert_eq!(graph_counts(&a), graph_counts(&b), "Table 2 counts");
    assert_eq!(subsets(&a), subsets(&b), "Figures 6-7 subsets");
}

#[test]
fn smallbank_plpgsql_lowers_like_the_sql_version() {
    same_btps("workloads/smallbank", "workloads/smallbank-plpgsql");
    // Table 2's SmallBank row, from PL/pgSQL.
    let w = load("workloads/smallbank-plpgsql");
    assert!(graph_counts(&w).iter().all(|c| *c == (5, 56, 12)));
}

#[test]
fn tpcc_plpgsql_lowers_like_the_sql_version() {
    same_btps("workloads/tpcc-paper", "workloads/tpcc-plpgsql");
    // Table 2's TPC-C row (attr+FK, attr, tpl+FK, tpl), from PL/pgSQL.
    let w = load("workloads/tpcc-plpgsql");
    assert_eq!(
        graph_counts(&w),
        [(13, 396, 83), (13, 400, 87), (13, 704, 157), (13, 734, 187)]
    );
}

const SCHEMA: &str = "CREATE TABLE A (k INT PRIMARY KEY, x INT, y INT);
CREATE TABLE B (k INT PRIMARY KEY, ak INT REFERENCES A, z INT);
";

/// Lower a routine file (with `yaml` as isolint.yaml) in a fresh directory.
fn lower_dir(routines: &str, yaml: &str) -> Result<Workload, String> {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("schema.sql"), SCHEMA).expect("write");
    std::fs::write(dir.path().join("r.sql"), routines).expect("write");
    std::fs::write(
        dir.path().join("isolint.yaml"),
        format!("schema: schema.sql\n{yaml}"),
    )
    .expect("write");
    isolint::frontend::load(dir.path(), None)
        .map(|l| l.workload)
        // "…/r.sql:LINE:COL: message" → "LINE:COL: message".
        .map_err(|e| match e.message.split_once("r.sql:") {
            Some((_, rest)) => rest.to_string(),
            None => e.message.clone(),
        })
}

/// The BTP text of every program: `name: body` then one line per
/// statement (`q1 key sel a P- R{x} W-`) and the constraints.
fn render(w: &Workload) -> String {
    let mut out = String::new();
    for p in &w.programs {
        out += &format!("{}: {}\n", p.name, isolint::report::body_text(p, &p.body));
        for s in &p.statements {
            out += &format!("  {} {}\n", s.id, stmt_text(w, s));
        }
        let mut cs: Vec<String> = p
            .constraints
            .iter()
            .map(|c| w.constraint_text(p, c))
            .collect();
        cs.sort();
        if !cs.is_empty() {
            out += &format!("  {}\n", cs.join(", "));
        }
    }
    out
}

/// One PL/pgSQL function `f(p int, q int)` with `body` (DECLARE … END).
fn routine(body: &str) -> String {
    format!("CREATE FUNCTION f(p int, q int) RETURNS int LANGUAGE plpgsql AS $$\n{body}\n$$;\n")
}

fn btp(routines: &str) -> String {
    render(&lower_dir(routines, "").unwrap_or_else(|e| panic!("{e}")))
}

fn check(body: &str, expected: &str) {
    let got = btp(&routine(body));
    assert_eq!(got.trim(), expected.trim(), "\n--- got ---\n{got}");
}

fn error(routines: &str) -> String {
    lower_dir(routines, "").expect_err("must be rejected")
}

#[test]
fn declare_defaults_and_assignments() {
    check(
        "DECLARE v int := p; w A.x%TYPE; c CONSTANT int DEFAULT 3;
BEGIN
  w = v;
  UPDATE A SET x = c WHERE k = w;
  SELECT ak INTO v FROM B WHERE k = q;
  SELECT x INTO w FROM A WHERE k = v;
  RETURN w;
END;",
        "f: q1; q2; q3
  q1 key upd a P- R{} W{x}
  q2 key sel b P- R{ak} W-
  q3 key sel a P- R{x} W-
  q3 = fk_B_A(q2)",
    );
}

#[test]
fn alias_rowtype_record_and_routine_qualified_names() {
    check(
        "DECLARE a ALIAS FOR $1; r A%ROWTYPE; rec RECORD; x int := 1;
BEGIN
  SELECT * INTO r FROM A WHERE k = a;
  SELECT z, ak INTO rec FROM B WHERE k = r.y;
  -- f.x is the variable, x alone would be ambiguous with A.x.
  UPDATE A SET y = f.x WHERE k = rec.ak;
  RETURN 0;
END;",
        "f: q1; q2; q3
  q1 key sel a P- R{k,x,y} W-
  q2 key sel b P- R{ak,z} W-
  q3 key upd a P- R{} W{y}",
    );
}

#[test]
fn nested_blocks_labels_and_into_after_from() {
    check(
        "<<outer>>
DECLARE v int;
BEGIN
  <<inner>>
  DECLARE w int;
  BEGIN
    SELECT x FROM A WHERE k = p INTO STRICT v;
    w := outer.v;
    EXIT inner WHEN w > 3;
    UPDATE A SET y = 1 WHERE k = w;
  END inner;
  DELETE FROM B WHERE k = q;
  RETURN 1;
END outer;",
        "f: q1; (q2 | ε); q3
  q1 key sel a P- R{x} W-
  q2 key upd a P- R{} W{y}
  q3 key del b P- R- W{k,ak,z}",
    );
}

#[test]
fn returning_into_perform_and_return_query() {
    check(
        "DECLARE v int;
BEGIN
  UPDATE A SET x = x + 1 WHERE k = p RETURNING y INTO v;
  PERFORM 1 FROM B WHERE k = v;
  RETURN QUERY SELECT z FROM B WHERE ak = p;
  RETURN NEXT v;
END;",
        "f: q1; q2; q3
  q1 key upd a P- R{x,y} W{x}
  q2 key sel b P- R{k} W-
  q3 pred sel b P{ak} R{z} W-
  q1 = fk_B_A(q3)",
    );
}

#[test]
fn return_ends_the_path() {
    check(
        "BEGIN
  IF p > 0 THEN
    UPDATE A SET x = 1 WHERE k = p;
    RETURN 1;
  END IF;
  UPDATE B SET z = 1 WHERE k = q;
  RETURN 2;
  DELETE FROM A WHERE k = p;
END;",
        "f: (q1 | q2)
  q1 key upd a P- R{} W{x}
  q2 key upd b P- R{} W{z}",
    );
}

#[test]
fn if_elsif_else_and_both_case_forms() {
    check(
        "BEGIN
  IF p = 1 THEN UPDATE A SET x = 1 WHERE k = q;
  ELSIF p = 2 THEN UPDATE A SET y = 1 WHERE k = q;
  ELSE NULL;
  END IF;
  CASE p WHEN 1, 2 THEN DELETE FROM B WHERE k = q; ELSE NULL; END CASE;
  CASE WHEN q > 0 THEN SELECT x INTO p FROM A WHERE k = q; END CASE;
  RETURN 0;
END;",
        "f: (q1 | (q2 | ε)); (q3 | ε); q4
  q1 key upd a P- R{} W{x}
  q2 key upd a P- R{} W{y}
  q3 key del b P- R- W{k,ak,z}
  q4 key sel a P- R{x} W-
  q1 = id(q4), q2 = id(q4)",
    );
}

#[test]
fn loops_exit_continue_and_foreach() {
    check(
        "DECLARE arr int[] := ARRAY[1, 2]; e int; n int := 0;
BEGIN
  <<outer>>
  LOOP
    n := n + 1;
    WHILE n < 3 LOOP
      EXIT outer WHEN n > 5;
      UPDATE A SET x = n WHERE k = p;
    END LOOP;
    CONTINUE WHEN n = 2;
    EXIT;
  END LOOP outer;
  FOR i IN REVERSE 10..1 BY 2 LOOP DELETE FROM B WHERE k = i; END LOOP;
  FOR r IN SELECT k FROM A WHERE y = q LOOP UPDATE A SET y = 0 WHERE k = r.k; END LOOP;
  FOREACH e IN ARRAY arr LOOP INSERT INTO B (k, ak, z) VALUES (e, p, 0); END LOOP;
  RETURN n;
END;",
        // q6's foreign-key check reads A's row k = p (q5, integrity.rs):
        // q1 wrote that row, but in loops that may not have run.
        "f: loop(loop((q1 | ε))); loop(q2); q3; loop(q4); loop(q5; q6)
  q1 key upd a P- R{} W{x}
  q2 key del b P- R- W{k,ak,z}
  q3 pred sel a P{y} R{k} W-
  q4 key upd a P- R{} W{y}
  q5 key sel a P- R{k} W-
  q6 ins b P- R- W{k,ak,z}
  q1 = fk_B_A(q6), q1 = id(q5), q5 = fk_B_A(q6)",
    );
}

#[test]
fn cursors_open_fetch_close_and_current_of() {
    check(
        "DECLARE
  c CURSOR (lo int) FOR SELECT k, x FROM A WHERE x > lo;
  u refcursor;
  v int; w int;
BEGIN
  OPEN c(p);
  FETCH c INTO v, w;
  UPDATE A SET y = w WHERE CURRENT OF c;
  MOVE NEXT FROM c;
  CLOSE c;
  OPEN u FOR SELECT z FROM B WHERE ak = q;
  FETCH u INTO v;
  CLOSE u;
  FOR r IN c(q) LOOP DELETE FROM A WHERE CURRENT OF c; END LOOP;
  RETURN v;
END;",
        "f: q1; q2; q3; q4; loop(q5; q6)
  q1 pred sel a P{x} R{k,x} W-
  q2 key upd a P- R{} W{y}
  q3 pred sel b P{ak} R{z} W-
  q4 pred sel a P{x} R{k,x} W-
  q5 key del a P- R- W{k,x,y}
  q6 pred sel b P{ak} R{ak} W-",
    );
}

#[test]
fn get_diagnostics_found_raise_assert() {
    check(
        "DECLARE n int;
BEGIN
  UPDATE A SET x = 1 WHERE y = p;
  GET DIAGNOSTICS n = ROW_COUNT;
  RAISE NOTICE 'updated % rows', n;
  ASSERT n >= 0, 'negative';
  SELECT x INTO n FROM A WHERE k = q;
  IF NOT FOUND THEN RAISE EXCEPTION 'no row %', q; END IF;
  IF n > 3 THEN RAISE 'too big'; END IF;
  RETURN n;
END;",
        "f: q1; q2
  q1 pred upd a P{y} R{} W{x}
  q2 key sel a P- R{x} W-",
    );
}

#[test]
fn exception_block_is_a_subtransaction() {
    // Either the block completes (q1; q2), or a prefix of it ran and was
    // rolled back (every statement optional), then the handler (q5). What
    // stays of the rolled-back statements is their reads (q3: the INSERT
    // observed its key present, or absent; q4: the UPDATE read the row, or
    // found it missing), as predicate reads without writes or locks.
    check(
        "BEGIN
  BEGIN
    INSERT INTO A (k, x, y) VALUES (p, 0, 0);
    UPDATE B SET z = 1 WHERE k = q;
  EXCEPTION
    WHEN unique_violation THEN
      UPDATE A SET x = x + 1 WHERE k = p;
    WHEN OTHERS THEN
      RAISE;
  END;
  RETURN 0;
END;",
        "f: (q1; q2 | (q3 | ε); (q4 | ε); q5)
  q1 ins a P- R- W{k,x,y}
  q2 key upd b P- R{} W{z}
  q3 pred sel a P{k} R{k} W-
  q4 pred sel b P{k} R{k,ak,z} W-
  q5 key upd a P- R{x} W{x}",
    );
}

#[test]
fn calls_of_workload_routines_are_inlined() {
    let src = "
CREATE PROCEDURE bump(a_k int, a_by int DEFAULT 1, out a_new int) LANGUAGE plpgsql AS $$
BEGIN
  UPDATE A SET x = x + a_by WHERE k = a_k RETURNING x INTO a_new;
END $$;
CREATE FUNCTION get(g_k int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE r int;
BEGIN
  SELECT ak INTO r FROM B WHERE k = g_k;
  IF r IS NULL THEN RETURN 0; END IF;
  RETURN r;
END $$;
CREATE PROCEDURE main(m int) LANGUAGE plpgsql AS $$
DECLARE v int; n int;
BEGIN
  v := get(m);
  CALL bump(v, a_new => n);
  PERFORM get(g_k => n);
END $$;
";
    let w = lower_dir(src, "programs: [main]\n").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        render(&w).trim(),
        "main: q1; q2; q3
  q1 pred sel b P{k} R{ak} W-
  q2 key upd a P- R{x} W{x}
  q3 pred sel b P{k} R{ak} W-"
    );
}

#[test]
fn recursion_is_rejected() {
    let e = error(
        "CREATE FUNCTION r(n int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  IF n > 0 THEN
    RETURN r(n - 1);
  END IF;
  RETURN 0;
END $$;",
    );
    assert!(
        e.starts_with("4:") && e.contains("recursive call of `r`"),
        "{e}"
    );
}

#[test]
fn execute_of_a_literal_is_parsed_and_dynamic_sql_rejected() {
    check(
        "DECLARE v int;
BEGIN
  EXECUTE 'SELECT x FROM A WHERE k = $1' INTO v USING p;
  EXECUTE 'UPDATE B SET z = 0 WHERE k = 1';
  RETURN v;
END;",
        "f: q1; q2
  q1 key sel a P- R{x} W-
  q2 key upd b P- R{} W{z}",
    );
    let e = error(&routine(
        "BEGIN\n  EXECUTE 'SELECT x FROM A WHERE k = ' || p;\n  RETURN 0;\nEND;",
    ));
    assert!(e.starts_with("3:3:") && e.contains("dynamic SQL"), "{e}");
}

#[test]
fn commit_in_a_procedure_splits_it() {
    let w = lower_dir(
        "CREATE PROCEDURE batch(p int) LANGUAGE plpgsql AS $$
BEGIN
  UPDATE A SET x = 1 WHERE k = p;
  COMMIT;
  DELETE FROM B WHERE k = p;
END $$;",
        "",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let e = error(
        "CREATE PROCEDURE batch(p int) LANGUAGE plpgsql AS $$
BEGIN
  COMMIT;
END $$;
CREATE PROCEDURE outer_p() LANGUAGE plpgsql AS $$
BEGIN
  CALL batch(1);
END $$;",
    );
    assert!(e.starts_with("7:3:") && e.contains("which commits"), "{e}");
    assert_eq!(
        render(&w).trim(),
        "batch.1: q1
  q1 key upd a P- R{} W{x}
batch.2: q2
  q2 key del b P- R- W{k,ak,z}"
    );
}

#[test]
fn variable_conflict_is_an_error_at_its_place() {
    let e = error(&routine(
        "DECLARE x int := 1;\nBEGIN\n  UPDATE A SET y = 2 WHERE k = x;\n  RETURN 0;\nEND;",
    ));
    assert!(
        e.starts_with("4:32:") && e.contains("`x` is both a variable of f and a column of a"),
        "{e}"
    );
}

#[test]
fn single_quoted_body_options_in_any_order_and_param_modes() {
    let w = lower_dir(
        "CREATE OR REPLACE FUNCTION public.g(p_k INOUT int, IN p_s text DEFAULT 'a')
  SECURITY DEFINER
  AS 'BEGIN
  UPDATE A SET y = length(p_s || ''x'') WHERE k = p_k;
END;'
  SET search_path = public
  LANGUAGE plpgsql;",
        "",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        render(&w).trim(),
        "g: q1
  q1 key upd a P- R{} W{y}"
    );
}

#[test]
fn errors_point_into_the_body() {
    let e = error(&routine(
        "BEGIN\n  UPDATE A SET nope = 1 WHERE k = p;\n  RETURN 0;\nEND;",
    ));
    assert!(e.starts_with("3:"), "{e}");
    let e = error(&routine("BEGIN\n  IF p THEN\n    RETURN 0;\nEND;"));
    assert!(
        e.contains("unexpected") || e.contains("unterminated"),
        "{e}"
    );
    let e = error(&routine("BEGIN\n  v := 1;\n  RETURN 0;\nEND;"));
    assert!(e.starts_with("3:3:") && e.contains("not a variable"), "{e}");
    // Twice in one block (PostgreSQL: "duplicate declaration"; an inner
    // block's redeclaration is shadowing, tests/soundness_calls.rs).
    let e = error(&routine(
        "DECLARE v int;\n  v int;\nBEGIN\n  RETURN 0;\nEND;",
    ));
    assert!(
        e.starts_with("3:3:") && e.contains("duplicate declaration"),
        "{e}"
    );
    let e = error(&routine("BEGIN\n  CALL nowhere(1);\n  RETURN 0;\nEND;"));
    assert!(e.starts_with("3:3:"), "{e}");
    // Schema DDL in a routine file is skipped with a warning (issue 22;
    // tests/pg_dump_input.rs), but a rule adds writes: still an error.
    let e = error("CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $$ BEGIN RETURN 1; END $$;\nCREATE RULE r AS ON INSERT TO A DO INSTEAD NOTHING;");
    assert!(e.starts_with("2:1:") && e.contains("CREATE"), "{e}");
    // Columns stay exact after variables (rewritten to `:name` for the
    // parser) and after a call cut out of the statement: `nope` is at
    // column 38 and 45 of the source lines.
    let e = error(&routine(
        "BEGIN\n  UPDATE A SET x = p WHERE k = q AND nope = 1;\n  RETURN 0;\nEND;",
    ));
    assert!(e.starts_with("3:38:") && e.contains("nope"), "{e}");
    let e = error(&format!(
        "{}{}",
        routine("BEGIN\n  UPDATE A SET x = g(p) + q WHERE k = q AND nope = 1;\n  RETURN 0;\nEND;"),
        "CREATE FUNCTION g(a int) RETURNS int LANGUAGE plpgsql AS $$ BEGIN RETURN a; END $$;\n"
    ));
    assert!(e.starts_with("3:45:") && e.contains("nope"), "{e}");
    // A statement cut short: the error is where something is missing
    // (PostgreSQL's parser, the gate, says so first).
    let e = error(&routine(
        "BEGIN\n  UPDATE A SET x = p WHERE k > ;\n  RETURN 0;\nEND;",
    ));
    assert!(e.starts_with("3:31:") && e.contains("end of input"), "{e}");
}

/// Fragments of PL/pgSQL bodies, balanced or not.
fn fragment() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "DECLARE v int := 1; ",
        "BEGIN ",
        "END; ",
        "END ",
        "IF p > 0 THEN ",
        "ELSE ",
        "END IF; ",
        "LOOP ",
        "END LOOP; ",
        "<<l>> ",
        "EXIT l; ",
        "EXIT WHEN v > 1; ",
        "RETURN; ",
        "RETURN v; ",
        "SELECT x INTO v FROM A WHERE k = p; ",
        "UPDATE A SET x = v WHERE k = q; ",
        "PERFORM 1 FROM B WHERE k = v; ",
        "EXCEPTION WHEN OTHERS THEN ",
        "FOR i IN 1..3 LOOP ",
        "FOREACH v IN ARRAY a LOOP ",
        "OPEN c FOR SELECT k FROM A; ",
        "FETCH c INTO v; ",
        "GET DIAGNOSTICS v = ROW_COUNT; ",
        "EXECUTE 'SELECT 1'; ",
        "CALL f(1, 2); ",
        "v := f(p, q); ",
        "CASE v WHEN 1 THEN ",
        "END CASE; ",
        "RAISE NOTICE 'x %', v; ",
        "COMMIT; ",
        "$$ ",
        "' ",
        "; ",
        "x.y := 1; ",
        "UPDATE A SET y = 1 WHERE CURRENT OF c; ",
        "WITH u AS (UPDATE A SET x = x + 1 WHERE k = p RETURNING k) ",
        "INSERT INTO B (k, ak, z) SELECT q, k, 0 FROM u; ",
        "WITH c AS (SELECT x FROM A WHERE y = v) SELECT x INTO v FROM c; ",
        // Issue 21: aliases, $n, row counts, overloaded calls.
        "DECLARE a ALIAS FOR $1; w ALIAS FOR v; ",
        "w := $2; ",
        "$1 := v; ",
        "IF v = 0 THEN RAISE EXCEPTION 'none'; END IF; ",
        "IF NOT FOUND THEN ",
        "CALL f('x', 2); ",
        "v := f(p + 1, NULL); ",
    ])
}

/// Lower a routine file in memory (the fuzz targets: no temp files).
fn lower_mem(schema: &str, routines: &str) -> Option<Workload> {
    isolint::frontend::sql_dir::lower_routine_file(
        &isolint::model::error::SourceFile::new("s.sql", schema),
        &isolint::model::error::SourceFile::new("r.sql", routines),
    )
    .ok()
    .map(|l| l.workload)
}

/// 300 cases in `cargo test`; `PROPTEST_CASES=N` for a longer run.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(300)
}

fn bundled_routines() -> String {
    std::fs::read_to_string("workloads/tpcc-plpgsql/V3__tpcc_routines.sql").expect("bundled")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    /// The bundled TPC-C routines with a random range cut out and random
    /// text put in: errors, never a panic.
    #[test]
    fn fuzz_mutated_routines_never_panic(
        cut in (0usize..12000, 0usize..200),
        insert in "\\PC{0,20}",
        frag in fragment(),
    ) {
        let src = bundled_routines();
        let mut at = cut.0 % src.len();
        while !src.is_char_boundary(at) { at -= 1; }
        let mut end = (at + cut.1).min(src.len());
        while !src.is_char_boundary(end) { end -= 1; }
        let mutated = format!("{}{insert}{frag}{}", &src[..at], &src[end..]);
        let schema = std::fs::read_to_string("schemas/tpcc-pgdump.sql").expect("bundled");
        if let Some(w) = lower_mem(&schema, &mutated) {
            let _ = build(&w, Settings::default());
        }
    }

    /// Random sequences of body fragments: the loader never panics, and
    /// whatever lowers is a valid workload whose summary graph builds.
    #[test]
    fn fuzz_plpgsql_bodies_never_panic(parts in prop::collection::vec(fragment(), 0..14)) {
        let src = routine(&format!("DECLARE c refcursor; a int[];\nBEGIN\n{}\nEND;", parts.concat()));
        if let Some(w) = lower_mem(SCHEMA, &src) {
            let _ = build(&w, Settings::default());
        }
    }

    /// Arbitrary text inside the dollar quotes.
    #[test]
    fn fuzz_arbitrary_bodies_never_panic(body in "\\PC{0,120}") {
        let _ = lower_mem(SCHEMA, &routine(&body));
    }
}

fn robust(w: &Workload) -> bool {
    isolint::analysis::analyze_with(
        w,
        Settings::default(),
        Method::TypeII,
        false,
        &isolint::analysis::progress::Silent,
    )
    .robust
}

/// Soundness: a lost update that happens only in an EXCEPTION handler (or
/// only after an early RETURN is not taken) is found. Control: the same
/// routine without the handler (a failed INSERT aborts; a successful one
/// holds its row until COMMIT) is robust. (The single-statement increment
/// in the handler is no longer a control: the failed INSERT's read of its
/// key is now modelled, as a predicate read, and BTPs cannot say that an
/// INSERT of a key observed present fails — a false alarm, never a missed
/// anomaly; docs/sql-frontend.md, "EXCEPTION handlers".)
#[test]
fn handler_and_return_paths_keep_their_anomalies() {
    let lost = "
CREATE FUNCTION inc(p int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE v int;
BEGIN
  BEGIN
    INSERT INTO A (k, x, y) VALUES (p, 1, 0);
  EXCEPTION WHEN unique_violation THEN
    SELECT x INTO v FROM A WHERE k = p;
    UPDATE A SET x = v + 1 WHERE k = p;
  END;
  RETURN 0;
END $$;";
    assert!(!robust(
        &lower_dir(lost, "").unwrap_or_else(|e| panic!("{e}"))
    ));
    let control = lost.replace("  EXCEPTION WHEN unique_violation THEN\n", "");
    assert!(robust(
        &lower_dir(&control, "").unwrap_or_else(|e| panic!("{e}"))
    ));
    let early = "
CREATE FUNCTION inc(p int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE v int;
BEGIN
  IF p < 0 THEN RETURN 0; END IF;
  SELECT x INTO v FROM A WHERE k = p;
  UPDATE A SET x = v + 1 WHERE k = p;
  RETURN v;
END $$;";
    assert!(!robust(
        &lower_dir(early, "").unwrap_or_else(|e| panic!("{e}"))
    ));
}

#[test]
fn returns_table_columns_are_variables() {
    check_src(
        "CREATE FUNCTION t(p int) RETURNS TABLE (o_x int) LANGUAGE plpgsql AS $$
BEGIN
  SELECT x INTO o_x FROM A WHERE k = p;
  o_x := o_x + 1;
  RETURN NEXT;
END $$;",
        "t: q1
  q1 key sel a P- R{x} W-",
    );
}

fn check_src(src: &str, expected: &str) {
    let got = btp(src);
    assert_eq!(got.trim(), expected.trim(), "\n--- got ---\n{got}");
}

#[test]
fn calls_inside_statements_and_expressions() {
    let src = "
CREATE FUNCTION next_k() RETURNS int LANGUAGE plpgsql AS $$
DECLARE v int;
BEGIN
  UPDATE B SET z = z + 1 WHERE k = 0 RETURNING z INTO v;
  RETURN v;
END $$;
CREATE FUNCTION main(p int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  IF next_k() > 3 THEN
    INSERT INTO A (k, x, y) VALUES (next_k() + p, 0, 0);
  END IF;
  RETURN 0;
END $$;
";
    // The condition's call runs once, before the IF; the one inside the
    // INSERT (a statement with a table) zero or more times.
    let w = lower_dir(src, "programs: [main]\n").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        render(&w).trim(),
        "main: q1; (loop(q2); q3 | ε)
  q1 key upd b P- R{z} W{z}
  q2 key upd b P- R{z} W{z}
  q3 ins a P- R- W{k,x,y}
  q1 = id(q2)"
    );
    let e = error(
        &src.replace("IF next_k() > 3 THEN", "WHILE next_k() > 3 LOOP")
            .replace("END IF;", "END LOOP;"),
    );
    assert!(
        e.starts_with("10:3:") && e.contains("WHILE condition"),
        "{e}"
    );
}

#[test]
fn for_loop_with_several_targets() {
    check(
        "DECLARE a int; b int;
BEGIN
  FOR a, b IN SELECT k, x FROM A WHERE y = p LOOP
    UPDATE B SET z = b WHERE k = a;
  END LOOP;
  RETURN 0;
END;",
        "f: q1; loop(q2)
  q1 pred sel a P{y} R{k,x} W-
  q2 key upd b P- R{} W{z}",
    );
}

#[test]
fn trigger_functions_are_no_programs_and_triggers_are_errors() {
    let src = "
CREATE FUNCTION audit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO B (k, ak, z) VALUES (NEW.k, NEW.k, 0);
  RETURN NEW;
END $$;
CREATE FUNCTION f(p int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  UPDATE A SET x = 1 WHERE k = p;
  RETURN 0;
END $$;
";
    let w = lower_dir(src, "").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(abbrevs(&w), ["f"]);
    let e = error(&format!(
        "{src}CREATE TRIGGER t AFTER UPDATE ON A FOR EACH ROW EXECUTE FUNCTION audit();\n"
    ));
    assert!(e.starts_with("12:1:"), "{e}");
}

/// HammerDB's style: `INTO a[i]`, and ROLLBACK in a function's handler
/// (PostgreSQL raises "invalid transaction termination": the path aborts).
#[test]
fn into_array_elements_and_rollback_in_a_function() {
    check(
        "DECLARE ids int[];
BEGIN
  FOR i IN 1 .. 3 LOOP
    SELECT ak INTO ids[i] FROM B WHERE k = i;
    UPDATE A SET x = 0 WHERE k = ids[i];
  END LOOP;
  RETURN 1;
EXCEPTION
  WHEN serialization_failure OR deadlock_detected THEN
    ROLLBACK;
    RETURN 0;
END;",
        "f: loop(q1; q2)
  q1 key sel b P- R{ak} W-
  q2 key upd a P- R{} W{x}",
    );
}

/// `SELECT x INTO x`: the INTO target is no column reference (PostgreSQL
/// accepts it); the same name in the WHERE clause is a conflict.
#[test]
fn into_targets_are_no_column_references() {
    check(
        "DECLARE y int; z int;
BEGIN
  SELECT A.y, A.x INTO y, z FROM A WHERE A.k = p;
  RETURN y;
END;",
        "f: q1
  q1 key sel a P- R{x,y} W-",
    );
    let e = error(&routine(
        "DECLARE y int;\nBEGIN\n  SELECT x INTO y FROM A WHERE k = y;\n  RETURN y;\nEND;",
    ));
    assert!(e.starts_with("4:36:") && e.contains("`y` is both"), "{e}");
}

/// Data-modifying CTEs (issue 10: 24 of 72 real routines use them): the
/// CTE's UPDATE is a statement (key-based: `k = p`), then the INSERT of the
/// main statement; reading `u` reads no table. The INSERT's `ak` comes from
/// u, an unknown value: the foreign-key check reads A by an unknown key
/// (a predicate read of its key, docs/sql-frontend.md). Issue 21: the
/// UPDATE's scan on the statement's snapshot (the existence of row p)
/// comes first, the write after it (it may wait for the row lock).
#[test]
fn data_modifying_cte() {
    check(
        "BEGIN
  WITH u AS (UPDATE A SET x = x + 1 WHERE k = p RETURNING k)
  INSERT INTO B (k, ak, z) SELECT q, k, 0 FROM u;
END;",
        "f: q1; q2; q3; q4
  q1 key sel a P- R{k} W-
  q2 key upd a P- R{k,x} W{x}
  q3 pred sel a P{k} R{k} W-
  q4 ins b P- R- W{k,ak,z}
  q2 = id(q1)",
    );
    // q2 = id(q1) is a forward same-tuple link (the key sel q1 before the
    // key upd q2 of row k = p): only the snapshot levels use it
    // (docs/same-tuple.md, issue 24).
}

/// Calls across routine files (migrations define a helper in one file and
/// call it from a later one): inlined like calls within a file, each
/// statement keeping the file and line it was written at; an error inside
/// the callee points into the callee's file; a later file's CREATE OR
/// REPLACE is the definition in effect.
#[test]
fn calls_across_routine_files() {
    let dir = tempfile::tempdir().expect("temp dir");
    let put = |n: &str, t: &str| std::fs::write(dir.path().join(n), t).expect("write");
    put("schema.sql", SCHEMA);
    put("isolint.yaml", "schema: schema.sql\nprograms: [caller]\n");
    put(
        "V1__helper.sql",
        "CREATE FUNCTION bump(p int) RETURNS void LANGUAGE plpgsql AS $$\nBEGIN\n  UPDATE A SET x = x + 1 WHERE k = p;\nEND $$;\n",
    );
    put(
        "V2__caller.sql",
        "CREATE PROCEDURE caller(a int) LANGUAGE plpgsql AS $$\nBEGIN\n  PERFORM bump(a);\n  UPDATE B SET z = 0 WHERE k = a;\nEND $$;\n",
    );
    let w = isolint::frontend::load(dir.path(), None)
        .unwrap_or_else(|e| panic!("{}", e.message))
        .workload;
    assert_eq!(w.programs.len(), 1);
    let origins: Vec<String> = w.programs[0]
        .statements
        .iter()
        .map(|s| {
            let o = s.origin.as_ref().expect("origin");
            let f = std::path::Path::new(&o.file).file_name().expect("name");
            format!("{} {}:{}", stmt_text(&w, s), f.to_string_lossy(), o.line)
        })
        .collect();
    assert_eq!(
        origins,
        vec![
            "key upd a P- R{x} W{x} V1__helper.sql:3".to_string(),
            "key upd b P- R{} W{z} V2__caller.sql:4".to_string(),
        ]
    );

    // V3 replaces bump with a body that reads an unknown column: the error
    // is located in V3, not in the caller's file.
    put(
        "V3__helper_v2.sql",
        "CREATE OR REPLACE FUNCTION bump(p int) RETURNS void LANGUAGE plpgsql AS $$\nBEGIN\n  UPDATE A SET x = nope WHERE k = p;\nEND $$;\n",
    );
    let Err(e) = isolint::frontend::load(dir.path(), None) else {
        panic!("an unknown column must be an error");
    };
    assert!(e.message.contains("V3__helper_v2.sql:3:"), "{}", e.message);
}
