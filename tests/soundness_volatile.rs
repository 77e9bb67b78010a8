//! Issue 21, class 2, third bullet, for PL/pgSQL routines: a VOLATILE
//! routine called inside a statement runs after the statement took its
//! snapshot (each of its queries on a fresh one), before the statement's
//! writes; a STABLE one reads the statement's snapshot.
//!
//! Confirmed on PostgreSQL 15 at READ COMMITTED, t(1, x 0), (2, x 0),
//! u(1, v 0); `fvol(i)` = `PERFORM pg_sleep(1); RETURN (SELECT v FROM u
//! WHERE k = 1)`, `fstab` the same declared STABLE:
//! S1 `SELECT t.id, t.x, fvol(t.id) FROM t` (sleeps in fvol);
//! S2 (0.5 s later) `BEGIN; UPDATE t SET x = 100; UPDATE u SET v = 100;
//! COMMIT;`. S1 returns x 0, fvol 100 on both rows: t from the statement's
//! snapshot, u as committed after it. With fstab: x 0, fstab 0.

use std::path::Path;

use isolint::analysis::analyze;
use isolint::analysis::graph::Settings;
use isolint::analysis::robustness::Method;

fn dir(schema: &str, files: &[(&str, &str)]) -> tempfile::TempDir {
    let d = tempfile::tempdir().expect("tempdir");
    std::fs::write(d.path().join("schema.sql"), schema).expect("write");
    std::fs::write(
        d.path().join("isolint.yaml"),
        "schema: schema.sql\nprograms: [p1, p2]\n",
    )
    .expect("write");
    for (n, t) in files {
        std::fs::write(d.path().join(n), t).expect("write");
    }
    d
}

fn lower(schema: &str, files: &[(&str, &str)]) -> isolint::model::btp::Workload {
    let d = dir(schema, files);
    match isolint::frontend::load(Path::new(d.path()), None) {
        Ok(l) => l.workload,
        Err(e) => panic!("expected BTPs, got: {}", e.message),
    }
}

fn robust(schema: &str, files: &[(&str, &str)]) -> bool {
    let w = lower(schema, files);
    analyze(&w, Settings::default(), Method::TypeII, false).robust
}

const SCHEMA: &str = "CREATE TABLE t (id INT PRIMARY KEY, x INT);
CREATE TABLE u (id INT PRIMARY KEY, y INT);
";

/// reset_u writes u (VOLATILE: PostgreSQL's default, and a STABLE
/// function may not write); read_u reads u, declared as `vol`.
fn routines(vol: &str, p1_body: &str) -> String {
    format!(
        "CREATE FUNCTION reset_u(k int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_sleep(1);
  UPDATE u SET y = 0 WHERE id = k;
  RETURN k;
END $$;
CREATE FUNCTION read_u(k int) RETURNS int LANGUAGE plpgsql {vol} AS $$
BEGIN
  RETURN (SELECT y FROM u WHERE id = k);
END $$;
CREATE FUNCTION p1(a int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE vx int; r int;
BEGIN
{p1_body}
END $$;
CREATE FUNCTION p2(a int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  UPDATE t SET x = 1 WHERE id = a;
  UPDATE u SET y = 1 WHERE id = a;
END $$;
"
    )
}

/// The statements' relations and the body of p1.
fn order(vol: &str, p1_body: &str) -> (String, String) {
    let w = lower(SCHEMA, &[("r.sql", &routines(vol, p1_body))]);
    let p = w
        .programs
        .iter()
        .find(|p| p.name.eq_ignore_ascii_case("p1"))
        .expect("p1");
    let rels: Vec<String> = p
        .statements
        .iter()
        .map(|s| w.schema.rel(s.rel).name.clone())
        .collect();
    (rels.join(" "), isolint::report::body_text(p, &p.body))
}

/// Not robust on PostgreSQL, robust under the old placement (reset_u's
/// body inlined before the SELECT). Run on PostgreSQL 15 from t(1, x 0),
/// u(1, y 5): T1 `BEGIN; SELECT p1(1);` — its SELECT reads t on its
/// snapshot, then sleeps in reset_u; T2 `SELECT p2(1);` (autocommit)
/// commits meanwhile; reset_u's UPDATE then overwrites y; T1 `COMMIT`.
/// T1 read x 0 and the final y is 0; serial orders give (x 0, y 1) for T1
/// then T2, (x 1, y 0) for T2 then T1. As BTPs: p1 = [R t; W u] lets T1 be
/// split after its read of t with no write before it (Vandevoort et al.,
/// the split schedule's ww condition only covers the prefix up to b1); the
/// old [W u; R t] had the write of u in that prefix, which conflicts with
/// p2's write of u, so no split schedule existed.
#[test]
fn volatile_routine_writes_after_the_statement_read() {
    let body = "  SELECT t.x, reset_u(t.id) INTO vx, r FROM t WHERE t.id = a;";
    assert_eq!(order("", body), ("t u".into(), "q1; loop(q2)".into()));
    assert!(!robust(SCHEMA, &[("r.sql", &routines("", body))]));
    // Control: the call as a statement of its own runs before the SELECT
    // on PostgreSQL too ([W u; R t]): robust.
    let own = "  PERFORM reset_u(a);\n  SELECT t.x INTO vx FROM t WHERE t.id = a;";
    assert_eq!(order("", own), ("u t".into(), "q1; q2".into()));
    assert!(robust(SCHEMA, &[("r.sql", &routines("", own))]));
}

/// The volatility comes from the routine's header: VOLATILE (written or
/// by default) after the statement's read of t, STABLE and IMMUTABLE
/// before it (their queries read the statement's snapshot, as run above).
#[test]
fn volatility_from_the_header_places_the_body() {
    let body = "  SELECT t.x, read_u(t.id) INTO vx, r FROM t WHERE t.id = a;";
    for vol in ["", "VOLATILE", "CALLED ON NULL INPUT"] {
        assert_eq!(
            order(vol, body),
            ("t u".into(), "q1; loop(q2)".into()),
            "{vol}"
        );
    }
    for vol in ["STABLE", "IMMUTABLE", "STABLE PARALLEL SAFE"] {
        assert_eq!(
            order(vol, body),
            ("u t".into(), "loop(q1); q2".into()),
            "{vol}"
        );
    }
    // An UPDATE: its scan on the snapshot, the body, then the write.
    let upd = "  UPDATE t SET x = read_u(t.id) WHERE id = a;";
    let (rels, b) = order("", upd);
    assert!(rels.starts_with("t u"), "{rels} {b}");
}

/// A VOLATILE call in a condition that reads a table: PostgreSQL runs the
/// condition as a query whose snapshot comes before the routine's, which
/// isolint places only for statements — a located error, not the old
/// placement before the condition. A STABLE routine there is modelled.
#[test]
fn volatile_routine_in_a_condition_is_rejected() {
    let body = "  IF (SELECT count(*) FROM t WHERE t.x = read_u(t.id)) > 0 THEN\n    RAISE EXCEPTION 'x';\n  END IF;";
    let assign = "  vx := (SELECT max(t.x) FROM t WHERE t.x = read_u(t.id));";
    let for_loop = "  FOR r IN SELECT read_u(t.id) FROM t LOOP\n    vx := r;\n  END LOOP;";
    for b in [body, assign, for_loop] {
        let d = dir(SCHEMA, &[("r.sql", &routines("", b))]);
        let e = match isolint::frontend::load(Path::new(d.path()), None) {
            Ok(_) => panic!("expected an error: {b}"),
            Err(e) => e,
        };
        assert!(
            e.message.contains("VOLATILE routine `read_u`"),
            "{b}: {}",
            e.message
        );
        // STABLE: the body reads the query's snapshot, modelled before it.
        assert!(order("STABLE", b).0.starts_with("u t"), "{b}");
    }
}
/// The header's volatility words count only outside parentheses: a
/// `RETURNS TABLE` column named `stable` leaves the routine VOLATILE.
#[test]
fn a_column_named_stable_is_no_volatility() {
    let r = routines("", "  SELECT t.x, read_u(t.id) INTO vx, r FROM t WHERE t.id = a;").replace(
        "CREATE FUNCTION read_u(k int) RETURNS int LANGUAGE plpgsql  AS $$\nBEGIN\n  RETURN (SELECT y FROM u WHERE id = k);",
        "CREATE FUNCTION read_u(k int) RETURNS TABLE (stable int) LANGUAGE plpgsql AS $$\nBEGIN\n  RETURN QUERY SELECT y FROM u WHERE id = k;",
    );
    assert!(r.contains("TABLE (stable int)"));
    let w = lower(SCHEMA, &[("r.sql", &r)]);
    let p = w
        .programs
        .iter()
        .find(|p| p.name.eq_ignore_ascii_case("p1"))
        .expect("p1");
    let rels: Vec<String> = p
        .statements
        .iter()
        .map(|s| w.schema.rel(s.rel).name.clone())
        .collect();
    assert_eq!(rels.join(" "), "t u");
}

/// A `LANGUAGE sql` function of a routine file keeps its declared
/// volatility: a STABLE one's body before the SELECT, a VOLATILE one's
/// after its read of t.
#[test]
fn sql_function_of_a_routine_file_keeps_its_volatility() {
    for (vol, rels) in [("", "t u"), ("STABLE", "u t")] {
        let r = routines("", "  SELECT t.x, g(t.id) INTO vx, r FROM t WHERE t.id = a;")
            + &format!("CREATE FUNCTION g(k int) RETURNS int LANGUAGE sql {vol} AS $$ SELECT y FROM u WHERE id = k $$;\n");
        let w = lower(SCHEMA, &[("r.sql", &r)]);
        let p = w
            .programs
            .iter()
            .find(|p| p.name.eq_ignore_ascii_case("p1"))
            .expect("p1");
        let got: Vec<String> = p
            .statements
            .iter()
            .map(|s| w.schema.rel(s.rel).name.clone())
            .collect();
        assert_eq!(got.join(" "), rels, "{vol}");
    }
}
