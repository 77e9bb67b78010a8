//! Soundness and diagnostics leftovers of issue 21: SET CONSTRAINTS in a
//! function body, `EXECUTE E'…'`, parameter names of SQL functions, and
//! the arguments of functions a CHECK calls.
//!
//! Where a case says "confirmed on PostgreSQL 15", the schedule written
//! next to it was run on PostgreSQL 15.20 at READ COMMITTED with two psql
//! sessions, and its outcome compared with both serial orders. Every
//! not-robust case has a robust control (a small variant), so a front-end
//! that always said "not robust" would fail.

#[path = "common/workdir.rs"]
mod workdir;

fn run(schema: &str, files: &[(&str, &str)]) -> Result<(bool, String), String> {
    let loaded = workdir::load(schema, "", files).map_err(|e| e.message.clone())?;
    let robust = workdir::robust_of(&loaded);
    let mut text = String::new();
    for p in &loaded.workload.programs {
        text += &format!("{}: {}\n", p.name, isolint::report::body_text(p, &p.body));
        for (q, st) in p.statements.iter().enumerate() {
            let rel = &loaded.workload.schema.rel(st.rel).name;
            let attrs = &loaded.workload.schema.rel(st.rel).attributes;
            let read: Vec<&str> = st
                .read
                .as_ref()
                .map(|r| r.iter().map(|a| attrs[a].as_str()).collect())
                .unwrap_or_default();
            text += &format!(
                "  q{q} {:?} {rel} read={read:?} {}\n",
                st.ty,
                st.sql.clone().unwrap_or_default()
            );
        }
    }
    Ok((robust, text))
}

fn robust(schema: &str, files: &[(&str, &str)]) -> bool {
    match run(schema, files) {
        Ok((r, _)) => r,
        Err(e) => panic!("expected a verdict, got: {e}"),
    }
}

/// The located error of the front-end (with its file:line:column).
fn error(schema: &str, files: &[(&str, &str)]) -> String {
    match workdir::load(schema, "", files) {
        Ok(_) => panic!("expected an error"),
        Err(e) => format!("{} {:?}", e.message, e),
    }
}

const DEFERRABLE: &str = "CREATE TABLE parent (id INT PRIMARY KEY);
CREATE TABLE child (id INT PRIMARY KEY, p INT REFERENCES parent DEFERRABLE);
CREATE TABLE x (id INT PRIMARY KEY, v INT);
";

const FOUND: &str = "UPDATE x SET v = v + 1 WHERE id = :x;\nINSERT INTO parent VALUES (:p);\n";

/// A `LANGUAGE sql` function running `SET CONSTRAINTS ALL DEFERRED`
/// defers the foreign key's check to COMMIT, as in a program (PostgreSQL
/// 15 accepts the statement in a SQL function body; isolint gave a syntax
/// error). Confirmed on PostgreSQL 15: x = (1, 0), no parent 7;
/// S1 `BEGIN; SELECT adopt(1, 7, 1)` (returns 0: the check is deferred);
/// S2 `BEGIN; UPDATE x SET v = v + 1 WHERE id = 1; INSERT INTO parent
/// VALUES (7); COMMIT`; S1 `COMMIT` succeeds. Serial adopt; found: the
/// COMMIT fails (no parent 7). Serial found; adopt: adopt returns 1.
/// The same with the program `SELECT defer_all(); INSERT INTO child …;
/// SELECT v FROM x …` (defer_all a SQL function running the SET
/// CONSTRAINTS), whose control calls a function that does not defer:
/// the check runs at the INSERT, before the read of x (robust, as the
/// `.sql` form in tests/soundness_schema.rs).
#[test]
fn set_constraints_in_a_sql_function_defers_the_check() {
    let adopt = "CREATE FUNCTION adopt(c int, p int, k int) RETURNS int LANGUAGE sql AS $$
  SET CONSTRAINTS ALL DEFERRED;
  INSERT INTO child VALUES (c, p);
  SELECT v FROM x WHERE id = k;
$$;
";
    let schema = format!("{DEFERRABLE}{adopt}");
    let prog = "SELECT adopt(:c, :p, :x);\n";
    let files = [("Adopt.sql", prog), ("Found.sql", FOUND)];
    assert!(!robust(&schema, &files));
    // The deferral is seen by a program calling a function that defers.
    let fns = "CREATE FUNCTION defer_all() RETURNS void LANGUAGE sql AS $$ SET CONSTRAINTS ALL DEFERRED $$;
CREATE FUNCTION defer_none() RETURNS void LANGUAGE sql AS $$ SELECT 1 $$;
CREATE FUNCTION defer_nested() RETURNS void LANGUAGE sql AS $$ SELECT defer_all() $$;
CREATE FUNCTION defer_named() RETURNS void LANGUAGE sql AS $$ SET CONSTRAINTS fk_child_parent DEFERRED $$;
";
    let schema = format!("{DEFERRABLE}{fns}");
    let program = |f: &str| {
        format!(
            "SELECT {f}();\nINSERT INTO child VALUES (:c, :p);\nSELECT v FROM x WHERE id = :x;\n"
        )
    };
    for (f, expect_robust) in [
        ("defer_all", false),
        ("defer_nested", false),
        ("defer_named", false),
        // Control: the check stays at the INSERT.
        ("defer_none", true),
    ] {
        let p = program(f);
        assert_eq!(
            robust(&schema, &[("Adopt.sql", &p), ("Found.sql", FOUND)]),
            expect_robust,
            "{f}"
        );
    }
    // A key that is not DEFERRABLE is not deferred.
    let immediate = schema.replace(" DEFERRABLE", "");
    let p = program("defer_all");
    assert!(robust(
        &immediate,
        &[("Adopt.sql", &p), ("Found.sql", FOUND)]
    ));
    // IMMEDIATE runs the pending checks where it stands: located error.
    let e = error(
        &schema.replace("ALL DEFERRED", "ALL IMMEDIATE"),
        &[("Adopt.sql", &p), ("Found.sql", FOUND)],
    );
    assert!(e.contains("IMMEDIATE is not modelled"), "{e}");
    assert!(e.contains("schema.sql"), "{e}");
}

/// The same in a PL/pgSQL routine (the program is the routine), and in a
/// PL/pgSQL routine that another one calls. Confirmed on PostgreSQL 15
/// with the schedule above, `SELECT adopt(1, 7, 1)` being the PL/pgSQL
/// function. Control: without the SET CONSTRAINTS, robust.
#[test]
fn set_constraints_in_a_plpgsql_routine_defers_the_check() {
    let adopt = "CREATE FUNCTION adopt(c int, p int, k int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE r int;
BEGIN
  SET CONSTRAINTS ALL DEFERRED;
  INSERT INTO child VALUES (c, p);
  SELECT v INTO r FROM x WHERE id = k;
  RETURN r;
END $$;
";
    let found = "CREATE FUNCTION found(p int, k int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  UPDATE x SET v = v + 1 WHERE id = k;
  INSERT INTO parent VALUES (p);
  RETURN 0;
END $$;
";
    assert!(!robust(
        DEFERRABLE,
        &[("adopt.sql", adopt), ("found.sql", found)]
    ));
    let control = adopt.replace("  SET CONSTRAINTS ALL DEFERRED;\n", "");
    assert!(robust(
        DEFERRABLE,
        &[("adopt.sql", &control), ("found.sql", found)]
    ));
    let callee = format!(
        "CREATE FUNCTION defer_all() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  SET CONSTRAINTS ALL DEFERRED;
END $$;
{}",
        adopt.replace("SET CONSTRAINTS ALL DEFERRED;", "PERFORM defer_all();")
    );
    assert!(!robust(
        DEFERRABLE,
        &[("adopt.sql", &callee), ("found.sql", found)]
    ));
    // In a PL/pgSQL function a CHECK calls (its reads over-approximated):
    // a located error, not a deferral silently lost.
    let hooked = format!(
        "{DEFERRABLE}CREATE FUNCTION ok(v int) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  SET CONSTRAINTS ALL DEFERRED;
  RETURN true;
END $$;
CREATE TABLE t (id INT PRIMARY KEY, v INT CHECK (ok(v)));
"
    );
    let e = error(&hooked, &[("T.sql", "INSERT INTO t VALUES (:i, :v);\n")]);
    assert!(e.contains("runs SET CONSTRAINTS"), "{e}");
}

/// a(k PK, x), b(k PK, z).
const AB: &str = "CREATE TABLE a (k INT PRIMARY KEY, x INT);
CREATE TABLE b (k INT PRIMARY KEY, z INT);
";

const REG: &str = "CREATE FUNCTION reg(p int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO a (k, x) VALUES (p, 0);
  UPDATE b SET z = z + 10 WHERE k = p;
  RETURN 0;
END $$;
";

fn touch(exec: &str, then: &str) -> String {
    format!(
        "CREATE FUNCTION touch(p int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE n int; v int;
BEGIN
  EXECUTE {exec} USING p;
  GET DIAGNOSTICS n = ROW_COUNT;
{then}
  RETURN v;
END $$;
"
    )
}

/// `EXECUTE E'…'` is a string literal (an escape string), analysed as
/// `EXECUTE '…'` is; isolint called it "a computed string". PostgreSQL 15
/// runs `EXECUTE E'UPDATE a SET x = x + 1 WHERE k = $1' USING p` as the
/// UPDATE (checked: ROW_COUNT 1 for a present row, 0 for a missing one).
/// The workload is class 5's (tests/soundness_paths.rs, confirmed on
/// PostgreSQL 15 with the plain literal): the missing row detected by
/// ROW_COUNT is a read of "absent". Control: the abort idiom, robust.
#[test]
fn execute_of_an_escape_string_is_the_literal() {
    let goes_on = "  IF n = 0 THEN\n    SELECT z INTO v FROM b WHERE k = p;\n  END IF;";
    let aborts =
        "  IF n = 0 THEN\n    RAISE EXCEPTION 'missing';\n  END IF;\n  SELECT z INTO v FROM b WHERE k = p;";
    for lit in [
        r"E'UPDATE a SET x = x + 1 WHERE k = $1'",
        r"e'UPDATE a\tSET x = x + 1\nWHERE k = $1'",
        r"E'UPDATE a SET x = x + length(\'it\'\'s\') WHERE k = $1'",
    ] {
        let t = touch(lit, goes_on);
        assert!(
            !robust(AB, &[("touch.sql", &t), ("reg.sql", REG)]),
            "called robust:\n{t}"
        );
        let c = touch(lit, aborts);
        assert!(
            robust(AB, &[("touch.sql", &c), ("reg.sql", REG)]),
            "control called not robust:\n{c}"
        );
    }
    // An escape isolint does not decode: located where it stands, with
    // what to write instead (PostgreSQL would read `\x41` as `A`).
    let e = error(
        AB,
        &[
            (
                "touch.sql",
                &touch(r"E'UPDATE a SET x = x + 1 WHERE k = $1 -- \x41'", goes_on),
            ),
            ("reg.sql", REG),
        ],
    );
    assert!(e.contains("escape sequence"), "{e}");
    assert!(e.contains("touch.sql"), "{e}");
    // A computed string is still dynamic SQL.
    let e = error(
        AB,
        &[
            (
                "touch.sql",
                &touch(r"E'UPDATE a SET x = 1 WHERE k = ' || p", goes_on),
            ),
            ("reg.sql", REG),
        ],
    );
    assert!(e.contains("computed string (dynamic SQL)"), "{e}");
}

/// t1(id, grp, v), t2(id, g): `g` is a column of t2 only.
const GROUPS: &str = "CREATE TABLE t1 (id INT PRIMARY KEY, grp INT, v INT);
CREATE TABLE t2 (id INT PRIMARY KEY, g INT);
CREATE FUNCTION cnt(g INT) RETURNS BIGINT LANGUAGE sql AS $$ SELECT count(*) FROM t1 WHERE grp = g $$;
";

/// In a `LANGUAGE sql` function a name is a column of the statement's
/// tables first, the parameter otherwise: a column of another table does
/// not hide the parameter (isolint said "unknown column `g` in t1").
/// Checked on PostgreSQL 15 with t1 = {(1, 1), (2, 1), (3, 2)}: `cnt(1)`
/// = 2, `cnt(2)` = 1 (the parameter); `cnt2(grp) … WHERE grp = grp` = 3
/// (the column); `add(id, grp) … INSERT INTO t1 VALUES (id, grp, 0)`
/// inserts the arguments (VALUES does not see t1's columns).
///
/// Write skew, confirmed on PostgreSQL 15 (t2 = (1, 5)): S1 `BEGIN;
/// SELECT cnt(1)` (2); S2 `BEGIN; INSERT INTO t1 VALUES (5, 1, 0); SELECT
/// g FROM t2 WHERE id = 1` (5) `COMMIT`; S1 `UPDATE t2 SET g = 2 WHERE id
/// = 1; COMMIT`. Serial Count; Add: Add reads 2. Serial Add; Count: cnt
/// is 3. Control: Count without its UPDATE (a single read), robust.
#[test]
fn sql_function_parameter_named_like_a_column_of_another_table() {
    let count = "SELECT cnt(:g) INTO :n;\nUPDATE t2 SET g = :n WHERE id = 1;\n";
    let add = "INSERT INTO t1 VALUES (:i, :g, 0);\nSELECT g FROM t2 WHERE id = 1;\n";
    assert!(!robust(GROUPS, &[("Count.sql", count), ("Add.sql", add)]));
    // Control: Count only reads (one statement, one snapshot).
    let read_only = "SELECT cnt(:g) INTO :n;\n";
    assert!(robust(
        GROUPS,
        &[("Count.sql", read_only), ("Add.sql", add)]
    ));
    // The parameter is bound: cnt's read is of group :g, by key of nothing
    // else — its predicate is on grp.
    let (_, text) = run(GROUPS, &[("Count.sql", count)]).unwrap_or_else(|e| panic!("{e}"));
    assert!(text.contains("FROM t1 WHERE grp ="), "{text}");
    // A column of the FROM table wins over the parameter: `grp = grp` is
    // a read of every row's grp (no error, no key).
    let own = format!(
        "{GROUPS}CREATE FUNCTION cnt2(grp INT) RETURNS BIGINT LANGUAGE sql AS $$ SELECT count(*) FROM t1 WHERE grp = grp $$;
CREATE FUNCTION add(id INT, grp INT) RETURNS INT LANGUAGE sql AS $$ INSERT INTO t1 VALUES (id, grp, 0) RETURNING v $$;
"
    );
    let (_, text) = run(
        &own,
        &[
            ("Count.sql", "SELECT cnt2(:g) INTO :n;\n"),
            ("Add.sql", "SELECT add(:i, :g) INTO :r;\n"),
        ],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(text.contains("WHERE grp = grp"), "{text}");
    assert!(text.contains("INSERT INTO t1 VALUES"), "{text}");
    // A CTE's output column named like the parameter is that column
    // (PostgreSQL 15: `cnt5(g) … WITH s AS (SELECT grp AS g FROM t1)
    // SELECT count(*) FROM s WHERE g = 1` counts group 1 whatever the
    // argument). Since CTE outputs are names (issue 22, forms_22.rs) it is
    // the output, never the parameter: the text keeps `g = 1` and the CTE
    // reads t1's grp.
    let cte = format!(
        "{GROUPS}CREATE FUNCTION cnt5(g INT) RETURNS BIGINT LANGUAGE sql AS $$ WITH s AS (SELECT grp AS g FROM t1) SELECT count(*) FROM s WHERE g = 1 $$;
"
    );
    let (_, text) =
        run(&cte, &[("Count.sql", "SELECT cnt5(:g) INTO :n;\n")]).unwrap_or_else(|e| panic!("{e}"));
    assert!(text.contains("WHERE g = 1"), "{text}");
    assert!(text.contains("t1 read=[\"grp\"]"), "{text}");
}

/// members(id, grp CHECK (under_limit(grp)), note).
const MEMBERS: &str = "CREATE TABLE members (id INT PRIMARY KEY, grp INT, note INT);
CREATE FUNCTION under_limit(g INT) RETURNS BOOLEAN LANGUAGE sql AS $$ SELECT count(*) < 2 FROM members WHERE grp = g $$;
ALTER TABLE members ADD CONSTRAINT lim CHECK (under_limit(grp));
";

/// A CHECK calling a function with a column (`CHECK (under_limit(grp))`):
/// its argument is the row's value; the call's read of the table is kept
/// for an UPDATE as for an INSERT (tests/soundness/schema-check-calls-function),
/// and nothing of the expression is dropped. Confirmed on PostgreSQL 15:
/// members = {(1, 1), (2, 2), (3, 3)}; S1 `BEGIN; UPDATE members SET grp
/// = 1 WHERE id = 2` (group 1 has 1 row: passes); S2 `BEGIN; UPDATE
/// members SET grp = 1 WHERE id = 3` (passes, no wait: another row); both
/// COMMIT: group 1 has 3 rows. Serially the second UPDATE fails its CHECK.
/// Control: `CHECK (grp > 0)` (no function), robust.
#[test]
fn check_calling_a_function_with_a_column_reads_for_an_update() {
    let join = "UPDATE members SET grp = :g WHERE id = :id;\n";
    assert!(!robust(MEMBERS, &[("Join.sql", join)]));
    let plain = MEMBERS.replace("CHECK (under_limit(grp))", "CHECK (grp > 0)");
    assert!(robust(&plain, &[("Join.sql", join)]));
    // An UPDATE that does not assign grp still calls under_limit with the
    // row's grp: the function's read is there, and grp is read.
    let (_, text) = run(
        MEMBERS,
        &[("Note.sql", "UPDATE members SET note = :n WHERE id = :id;\n")],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(text.contains("PredSel members"), "{text}");
    let upd = text
        .lines()
        .find(|l| l.contains("KeyUpd members"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        upd.contains(r#"read=["grp"]"#),
        "grp not read: {upd}\n{text}"
    );
    // The same for ON CONFLICT … DO UPDATE (the CHECK runs on the updated
    // row).
    let (_, text) = run(
        MEMBERS,
        &[(
            "Up.sql",
            "INSERT INTO members VALUES (:id, :g, 0) ON CONFLICT (id) DO UPDATE SET note = 1;\n",
        )],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let upd = text
        .lines()
        .find(|l| l.contains("KeyUpd members"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(upd.contains(r#""grp""#), "grp not read: {upd}\n{text}");
    // Nested calls: the inner function's read is kept too, first.
    let nested = "CREATE TABLE u (id INT PRIMARY KEY, lim INT);
CREATE TABLE v (id INT PRIMARY KEY, w INT);
CREATE FUNCTION lim_of(p INT) RETURNS INT LANGUAGE sql AS $$ SELECT lim FROM u WHERE id = p $$;
CREATE FUNCTION w_of(p INT) RETURNS INT LANGUAGE sql AS $$ SELECT w FROM v WHERE id = p $$;
CREATE TABLE t (id INT PRIMARY KEY, a INT, b INT, CHECK (a < lim_of(w_of(a))));
";
    let (_, text) = run(nested, &[("P.sql", "UPDATE t SET b = 1 WHERE id = :k;\n")])
        .unwrap_or_else(|e| panic!("{e}"));
    // PostgreSQL calls w_of before lim_of; per row, both in one loop (the
    // rows' calls interleave).
    let (u, v) = (text.find("PredSel u"), text.find("PredSel v"));
    assert!(v.is_some() && u.is_some() && v < u, "{text}");
    assert!(text.contains("P: loop(q1; q2); q3"), "{text}");
}

/// a, b, c(k PK, w); `f(int)` reads a, `f(text)` reads b.
const OVERLOADS: &str = "CREATE TABLE a (k INT PRIMARY KEY, x INT);
CREATE TABLE b (k INT PRIMARY KEY, z INT);
CREATE TABLE c (k INT PRIMARY KEY, w INT);
CREATE FUNCTION f(p int) RETURNS int LANGUAGE sql AS $$ SELECT x FROM a WHERE k = p $$;
CREATE FUNCTION f(p text) RETURNS int LANGUAGE sql AS $$ SELECT z FROM b WHERE k = length(p) $$;
";

/// Q changes b, then reads c.
const Q: &str = "UPDATE b SET z = z + 1 WHERE k = :k;\nSELECT w FROM c WHERE k = 1;\n";

/// Found while building these (item e): isolint inlined the first
/// `LANGUAGE sql` function of a name, whatever the call's argument types
/// and whether a later `CREATE OR REPLACE` replaced it, and called this
/// workload ROBUST. Confirmed on PostgreSQL 15 (a = b = (3, 0), c = (1,
/// 0)): S1 `BEGIN; SELECT f('abc')` (f(text): reads b, 0); S2 `BEGIN;
/// UPDATE b SET z = z + 1 WHERE k = 3; SELECT w FROM c WHERE k = 1` (0)
/// `COMMIT`; S1 `UPDATE c SET w = 0 + 100 WHERE k = 1; COMMIT`. Serial
/// S1; S2: S2 reads 100. Serial S2; S1: f returns 1. Write skew.
/// Now: a call of an overloaded schema function is a located error
/// (isolint does not resolve these overloads); `CREATE OR REPLACE` of the
/// same signature replaces the body.
#[test]
fn sql_function_overloads_and_replacement() {
    let p = "SELECT f('abc') INTO :v;\nUPDATE c SET w = :v + 100 WHERE k = 1;\n";
    let e = error(OVERLOADS, &[("P.sql", p), ("Q.sql", Q)]);
    assert!(
        e.contains("overloaded function `f`") && e.contains("f(integer), f(text)"),
        "{e}"
    );
    assert!(e.contains("P.sql"), "{e}");
    // A CHECK calling an overloaded name: the same error, in the schema.
    let e = error(
        &format!("{OVERLOADS}CREATE TABLE d (k INT PRIMARY KEY, v INT CHECK (f(v) > 0));\n"),
        &[("D.sql", "INSERT INTO d VALUES (:k, :v);\n")],
    );
    assert!(e.contains("overloaded function `f`"), "{e}");
    // CREATE OR REPLACE of f(integer) (spelled `int4`): the new body (a
    // read of b) is what runs: the write skew above (S1 `SELECT f(3)`).
    let replaced = OVERLOADS.replace(
        "CREATE FUNCTION f(p text) RETURNS int LANGUAGE sql AS $$ SELECT z FROM b WHERE k = length(p) $$;",
        "CREATE OR REPLACE FUNCTION f(p int4) RETURNS int LANGUAGE sql AS $$ SELECT z FROM b WHERE k = p $$;",
    );
    let p = "SELECT f(3) INTO :v;\nUPDATE c SET w = :v + 100 WHERE k = 1;\n";
    assert!(!robust(&replaced, &[("P.sql", p), ("Q.sql", Q)]));
    // Control: the replacement reads a, which Q does not write.
    let control = replaced.replace(
        "SELECT z FROM b WHERE k = p $$;",
        "SELECT x FROM a WHERE k = p $$;",
    );
    assert!(robust(&control, &[("P.sql", p), ("Q.sql", Q)]));
    // The same signature in two files: which one PostgreSQL runs depends
    // on the load order.
    let lib = "CREATE FUNCTION f(p integer) RETURNS int LANGUAGE sql AS $$ SELECT 1 $$;\n";
    let e = error(&control, &[("lib.sql", lib), ("P.sql", p), ("Q.sql", Q)]);
    assert!(e.contains("is defined in"), "{e}");
}
