//! Soundness of PL/pgSQL paths (issue 21, classes 4–6): EXCEPTION handlers
//! and failing statements, rows found missing by other means than `IF NOT
//! FOUND`, and PL/pgSQL names as PostgreSQL resolves them.
//!
//! Where a case says "confirmed on PostgreSQL 15", the schedule written
//! next to it was run on PostgreSQL 15 at READ COMMITTED with two psql
//! sessions (a `pg_sleep` inside a routine holds it at the point named;
//! pg_sleep reads no table), and its outcome compared with both serial
//! orders. Every not-robust case has a robust control (a small variant),
//! so a front-end that always said "not robust" would fail.

use std::path::Path;

use isolint::analysis::analyze;
use isolint::analysis::graph::Settings;
use isolint::analysis::robustness::Method;

/// a(k PK, x CHECK (x <= 100), y), b(k PK, z), c(k PK, w).
const AB: &str = "CREATE TABLE a (k INT PRIMARY KEY, x INT CHECK (x <= 100), y INT);
CREATE TABLE b (k INT PRIMARY KEY, z INT);
CREATE TABLE c (k INT PRIMARY KEY, w INT);
";

fn run(schema: &str, files: &[(&str, &str)]) -> Result<(bool, String), String> {
    let d = tempfile::tempdir().map_err(|e| e.to_string())?;
    std::fs::write(d.path().join("schema.sql"), schema).map_err(|e| e.to_string())?;
    std::fs::write(d.path().join("isolint.yaml"), "schema: schema.sql\n")
        .map_err(|e| e.to_string())?;
    for (n, t) in files {
        std::fs::write(d.path().join(n), t).map_err(|e| e.to_string())?;
    }
    let loaded =
        isolint::frontend::load(Path::new(d.path()), None).map_err(|e| e.message.clone())?;
    let a = analyze(&loaded.workload, Settings::default(), Method::TypeII, false);
    let mut text = String::new();
    for p in &loaded.workload.programs {
        text += &format!("{}: {}\n", p.name, isolint::report::body_text(p, &p.body));
        for st in &p.statements {
            text += &format!("  {}\n", st.sql.clone().unwrap_or_default());
        }
    }
    Ok((a.robust, text))
}

fn robust(schema: &str, files: &[(&str, &str)]) -> bool {
    match run(schema, files) {
        Ok((r, _)) => r,
        Err(e) => panic!("expected a verdict, got: {e}"),
    }
}

fn error(schema: &str, files: &[(&str, &str)]) -> String {
    match run(schema, files) {
        Ok((_, t)) => panic!("expected an error, got:\n{t}"),
        Err(e) => e,
    }
}

/// Class 4. An UPDATE stopped by a CHECK read the row and holds no lock;
/// the handler then reads b. Confirmed on PostgreSQL 15: a(1, x = 50),
/// b(1, z = 0); T1 `SELECT bump(1)` (its UPDATE fails, x + 100 > 100; a
/// pg_sleep at the start of the handler); T2 `UPDATE a SET x = 0 WHERE k
/// = 1; UPDATE b SET z = 1 WHERE k = 1; COMMIT` (no wait: T1 holds no lock);
/// T1's handler reads z = 1; COMMIT. Serial T1;T2: T1 reads z = 0. Serial
/// T2;T1: x = 0, the UPDATE succeeds and the handler does not run. Keeping
/// the failed UPDATE as a write (a lock, no ww-free split) hid this.
/// Control: the same routine without the handler — the failed UPDATE
/// aborts, and a successful one holds its lock until COMMIT, so T2 runs
/// wholly before or after T1 (robust).
#[test]
fn update_stopped_by_check_read_the_row() {
    let bump = "CREATE FUNCTION bump(p int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE v int;
BEGIN
  BEGIN
    UPDATE a SET x = x + 100 WHERE k = p;
  EXCEPTION WHEN check_violation THEN
    SELECT z INTO v FROM b WHERE k = p;
  END;
  RETURN v;
END $$;
";
    let reset = "CREATE FUNCTION reset(p int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  UPDATE a SET x = 0 WHERE k = p;
  UPDATE b SET z = 1 WHERE k = p;
  RETURN 0;
END $$;
";
    assert!(!robust(AB, &[("bump.sql", bump), ("reset.sql", reset)]));
    let control = bump.replace("  EXCEPTION WHEN check_violation THEN\n", "");
    assert!(robust(AB, &[("bump.sql", &control), ("reset.sql", reset)]));
}

/// Class 4, write skew through a caught unique violation. Confirmed on
/// PostgreSQL 15: a(1) present, b(1, z = 0); T2 `SELECT release(1)` reads
/// z = 0 (a pg_sleep before its DELETE); T1 `SELECT claim(1); COMMIT` (the
/// INSERT fails: a(1) exists; the handler sets z = 1); T2 deletes a(1),
/// COMMIT. Outcome: release saw z = 0, a(1) gone, z = 1. Serial
/// claim;release: release sees z = 1. Serial release;claim: the INSERT
/// succeeds, z stays 0, a(1) present.
#[test]
fn caught_unique_violation_is_a_read_of_the_key() {
    let claim = "CREATE FUNCTION claim(p int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  BEGIN
    INSERT INTO a (k, x, y) VALUES (p, 0, 0);
  EXCEPTION WHEN unique_violation THEN
    UPDATE b SET z = z + 1 WHERE k = p;
  END;
  RETURN 0;
END $$;
";
    let release = "CREATE FUNCTION release(p int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE v int;
BEGIN
  SELECT z INTO v FROM b WHERE k = p;
  DELETE FROM a WHERE k = p;
  RETURN v;
END $$;
";
    assert!(!robust(
        AB,
        &[("claim.sql", claim), ("release.sql", release)]
    ));
    // Control: the handler only reads a table release does not write; the
    // only dependency left is claim's read of a(1) before release deletes
    // it (nothing of release comes back to claim).
    let other = claim.replace(
        "UPDATE b SET z = z + 1 WHERE k = p",
        "PERFORM w FROM c WHERE k = p",
    );
    assert!(robust(
        AB,
        &[("claim.sql", &other), ("release.sql", release)]
    ));
    // Without the handler the INSERT and the UPDATE commit together, and
    // release can delete the row claim inserted after reading z: not
    // robust either (a(1) absent at first: release reads z = 0, claim
    // inserts a(1) and sets z = 1, release deletes a(1); no serial order
    // ends with a(1) absent, z = 1 and release having read 0).
    let plain = claim.replace("  EXCEPTION WHEN unique_violation THEN\n", "");
    assert!(!robust(
        AB,
        &[("claim.sql", &plain), ("release.sql", release)]
    ));
}

/// Class 4, the handler sees what another transaction committed after the
/// failed INSERT observed the key: the same anomaly as the CHECK case,
/// for unique_violation (the INSERT's lock on its key is gone).
#[test]
fn caught_unique_violation_then_a_read() {
    let claim = "CREATE FUNCTION claim(p int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE v int;
BEGIN
  BEGIN
    INSERT INTO a (k, x, y) VALUES (p, 0, 0);
  EXCEPTION WHEN unique_violation THEN
    SELECT z INTO v FROM b WHERE k = p;
  END;
  RETURN v;
END $$;
";
    let drop = "CREATE FUNCTION drop_it(p int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM a WHERE k = p;
  UPDATE b SET z = 1 WHERE k = p;
  RETURN 0;
END $$;
";
    assert!(!robust(AB, &[("claim.sql", claim), ("drop.sql", drop)]));
    let control = claim.replace("  EXCEPTION WHEN unique_violation THEN\n", "");
    assert!(robust(AB, &[("claim.sql", &control), ("drop.sql", drop)]));
}

/// `reg` makes a(p) present and then changes b(p).
const REG: &str = "CREATE FUNCTION reg(p int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO a (k, x, y) VALUES (p, 0, 0);
  UPDATE b SET z = z + 1 WHERE k = p;
  RETURN 0;
END $$;
";

/// `touch(p)` with `body` (DECLARE n int; v int; w int).
fn touch(body: &str) -> String {
    format!(
        "CREATE FUNCTION touch(p int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE n int; v int; w int;
BEGIN
{body}
  RETURN v;
END $$;
"
    )
}

/// Class 5. A key-based statement whose missing row the program detects
/// and goes on: it read "absent", which conflicts with reg's INSERT.
/// Confirmed on PostgreSQL 15 for the first (GET DIAGNOSTICS) form: a(1)
/// absent, b(1, z = 0); T1 `SELECT touch(1)` (its UPDATE matches nothing;
/// a pg_sleep inside the IF, before the SELECT of b); T2 `SELECT reg(1);
/// COMMIT`; T1 reads z = 1, COMMIT. Serial touch;reg: touch reads z = 0;
/// serial reg;touch: the UPDATE finds a(1) and b is not read. The other
/// forms are the same program with the row count observed otherwise.
/// Controls: the abort idiom of each form (the missing row raises), after
/// which the SELECT of b runs only when a(p) was there: robust.
#[test]
fn missing_rows_detected_by_row_count_found_or_null() {
    let read_b = "SELECT z INTO v FROM b WHERE k = p;";
    let forms = [
        // (detection, test that the row is missing)
        (
            "UPDATE a SET x = x + 1 WHERE k = p;\n  GET DIAGNOSTICS n = ROW_COUNT;",
            "n = 0",
        ),
        (
            "UPDATE a SET x = x + 1 WHERE k = p;\n  GET CURRENT DIAGNOSTICS n := ROW_COUNT;",
            "n < 1",
        ),
        (
            "SELECT x INTO w FROM a WHERE k = p;\n  GET DIAGNOSTICS n = ROW_COUNT;",
            "0 = n",
        ),
        (
            "DELETE FROM a WHERE k = p;\n  GET DIAGNOSTICS n = ROW_COUNT;",
            "n <> 1",
        ),
        ("UPDATE a SET x = x + 1 WHERE k = p;", "NOT FOUND"),
        ("DELETE FROM a WHERE k = p;", "NOT FOUND"),
        (
            "UPDATE a SET x = x + 1 WHERE k = p RETURNING x INTO w;",
            "w IS NULL",
        ),
        ("DELETE FROM a WHERE k = p RETURNING x INTO w;", "w IS NULL"),
        (
            "EXECUTE 'UPDATE a SET x = x + 1 WHERE k = $1' USING p;\n  GET DIAGNOSTICS n = ROW_COUNT;",
            "n = 0",
        ),
    ];
    for (detect, missing) in forms {
        let goes_on = touch(&format!(
            "  {detect}\n  IF {missing} THEN\n    {read_b}\n  END IF;"
        ));
        assert!(
            !robust(AB, &[("touch.sql", &goes_on), ("reg.sql", REG)]),
            "called robust:\n{goes_on}"
        );
        let aborts = touch(&format!(
            "  {detect}\n  IF {missing} THEN\n    RAISE EXCEPTION 'missing';\n  END IF;\n  {read_b}"
        ));
        assert!(
            robust(AB, &[("touch.sql", &aborts), ("reg.sql", REG)]),
            "control called not robust:\n{aborts}"
        );
    }
    // FOUND is still the UPDATE's after an IF without statements or an
    // EXECUTE (which sets ROW_COUNT, not FOUND), and a mention inside a
    // branch counts.
    for later in [
        "  UPDATE a SET x = x + 1 WHERE k = p;\n  EXECUTE 'SELECT 1';\n  IF NOT FOUND THEN\n    SELECT z INTO v FROM b WHERE k = p;\n  END IF;",
        "  UPDATE a SET x = x + 1 WHERE k = p;\n  IF p < 0 THEN w := 1; END IF;\n  IF NOT FOUND THEN\n    SELECT z INTO v FROM b WHERE k = p;\n  END IF;",
        "  UPDATE a SET x = x + 1 WHERE k = p;\n  IF p > 0 THEN\n    w := CASE WHEN FOUND THEN 1 ELSE 0 END;\n  END IF;\n  SELECT z INTO v FROM b WHERE k = p;",
    ] {
        let t = touch(later);
        assert!(!robust(AB, &[("touch.sql", &t), ("reg.sql", REG)]), "called robust:\n{t}");
    }
    // FOUND after the end of a labelled block, of a block with a handler,
    // of an IF branch, and in the next iteration of a loop (or after it,
    // through EXIT) is still the UPDATE's.
    for nested in [
        "  <<blk>>\n  BEGIN\n    UPDATE a SET x = x + 1 WHERE k = p;\n  END blk;\n  IF NOT FOUND THEN\n    SELECT z INTO v FROM b WHERE k = p;\n  END IF;",
        "  BEGIN\n    UPDATE a SET x = x + 1 WHERE k = p;\n  EXCEPTION WHEN others THEN\n    w := 0;\n  END;\n  IF NOT FOUND THEN\n    SELECT z INTO v FROM b WHERE k = p;\n  END IF;",
        "  IF p > 0 THEN\n    UPDATE a SET x = x + 1 WHERE k = p;\n  END IF;\n  IF NOT FOUND THEN\n    SELECT z INTO v FROM b WHERE k = p;\n  END IF;",
        "  LOOP\n    IF NOT FOUND THEN\n      SELECT z INTO v FROM b WHERE k = p;\n    END IF;\n    UPDATE a SET x = x + 1 WHERE k = p;\n    EXIT WHEN p > 0;\n  END LOOP;",
        "  LOOP\n    UPDATE a SET x = x + 1 WHERE k = p;\n    EXIT WHEN p > 0;\n    SELECT z INTO v FROM b WHERE k = p + 1;\n  END LOOP;\n  IF NOT FOUND THEN\n    SELECT z INTO v FROM b WHERE k = p;\n  END IF;",
    ] {
        let t = touch(nested);
        assert!(!robust(AB, &[("touch.sql", &t), ("reg.sql", REG)]), "called robust:\n{t}");
    }
    // The row count is evidence wherever it is tested: here only later.
    let later = touch(
        "  UPDATE a SET x = x + 1 WHERE k = p;\n  GET DIAGNOSTICS n = ROW_COUNT;\n  SELECT z INTO v FROM b WHERE k = p;\n  IF n = 0 THEN v := 0; END IF;",
    );
    assert!(!robust(AB, &[("touch.sql", &later), ("reg.sql", REG)]));
}

/// Class 6. `r ALIAS FOR p` is p itself: after `r := q` the SELECT reads
/// row q, not the row the UPDATE locked, so it is no read of a tuple the
/// transaction wrote (no same-tuple protection). Confirmed on PostgreSQL
/// 15 (a pg_sleep between the assignment and the SELECT): a(1), a(2)
/// with x = 0; T1 `SELECT f(1, 2)`, T2 `SELECT f(2, 1)` while T1 sleeps;
/// both read x = 0 of the other's row; both COMMIT; x = 1 in both rows.
/// In either serial order the second reads 1. Read as a copy (`r := p`),
/// p kept its value and the SELECT looked like a read of the updated row.
/// Control: without the assignment the SELECT reads the row it locked.
#[test]
fn alias_is_the_same_variable() {
    let f = "CREATE FUNCTION f(p int, q int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE r ALIAS FOR p; v int;
BEGIN
  UPDATE a SET x = x + 1 WHERE k = p;
  r := q;
  SELECT x INTO v FROM a WHERE k = p;
  RETURN v;
END $$;
";
    assert!(!robust(AB, &[("f.sql", f)]));
    assert!(robust(AB, &[("f.sql", &f.replace("  r := q;\n", ""))]));
    // `$1` is p too, and an alias of `$1` as well.
    for (decl, assign) in [
        ("DECLARE r ALIAS FOR $1; v int;", "r := q;"),
        ("DECLARE v int;", "$1 := q;"),
        ("DECLARE r ALIAS FOR $1; s ALIAS FOR r; v int;", "s := q;"),
    ] {
        let g = f
            .replace("DECLARE r ALIAS FOR p; v int;", decl)
            .replace("r := q;", assign);
        assert!(!robust(AB, &[("f.sql", &g)]), "called robust:\n{g}");
    }
    let e = error(
        AB,
        &[("f.sql", &f.replace("ALIAS FOR p", "ALIAS FOR nothere"))],
    );
    assert!(
        e.contains("f.sql:2:") && e.contains("ALIAS FOR `nothere`"),
        "{e}"
    );
}

/// `bump(p int)` loses updates (read, then write what it read); `bump(p
/// text)` is an overload (another signature), not a replacement.
const BUMPS: &str = "CREATE FUNCTION bump(p int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE v int;
BEGIN
  SELECT x INTO v FROM a WHERE k = p;
  UPDATE a SET x = v + 1 WHERE k = p;
  RETURN v;
END $$;
CREATE OR REPLACE FUNCTION bump(p text) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  UPDATE b SET z = z + 1 WHERE k = length(p);
  RETURN 0;
END $$;
";

/// Class 6. Overloads are routines of their own: keyed by name, the
/// second `bump` replaced the first and its lost update (two sessions of
/// `SELECT bump(1)` at READ COMMITTED: both read x, both write x + 1) was
/// never analysed. `CREATE OR REPLACE` of the same signature (`int` is
/// `integer`) replaces: the single-statement increment is robust.
#[test]
fn overloads_are_programs_of_their_own() {
    let (robust, text) = run(AB, &[("r.sql", BUMPS)]).unwrap_or_else(|e| panic!("{e}"));
    assert!(!robust, "{text}");
    assert!(
        text.contains("bump(integer): ") && text.contains("bump(text): "),
        "{text}"
    );
    let replaced = format!(
        "{BUMPS}CREATE OR REPLACE FUNCTION bump(p integer) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  UPDATE a SET x = x + 1 WHERE k = p;
  RETURN 0;
END $$;
"
    );
    let (robust, text) = run(AB, &[("r.sql", &replaced)]).unwrap_or_else(|e| panic!("{e}"));
    assert!(robust, "{text}");
    assert!(!text.contains("SELECT x INTO"), "{text}");
}

/// Class 6. A call runs the overload PostgreSQL picks by the argument
/// types where they are evident (a parameter's or variable's declared
/// type, a literal: an integer literal is `integer`, a string literal goes
/// to the `text` overload, a cast names its type); otherwise the call is
/// a located error, never a guess. Every resolution below was checked on
/// PostgreSQL 15 (a function returning which overload ran; bigint and
/// numeric arguments: "function bump(bigint) does not exist").
#[test]
fn calls_resolve_overloads_by_argument_types() {
    let caller = |args: &str| {
        format!(
            "{BUMPS}CREATE FUNCTION go(i int, s text) RETURNS int LANGUAGE plpgsql AS $$
DECLARE n bigint := 1; t varchar(10) := 'x'; m numeric := 2;
BEGIN
  PERFORM bump({args});
  RETURN 0;
END $$;
"
        )
    };
    let go_reads_a = |args: &str| -> bool {
        let (_, text) =
            run(AB, &[("r.sql", &caller(args))]).unwrap_or_else(|e| panic!("{args}: {e}"));
        let go = text
            .split("go: ")
            .nth(1)
            .unwrap_or_else(|| panic!("{text}"));
        assert!(go.contains("UPDATE"), "{args}: {text}");
        go.contains("SELECT x INTO")
    };
    // To bump(integer): an integer parameter or literal, a cast.
    for args in ["i", "1", "'7'::int", "p => 3", "$1"] {
        assert!(go_reads_a(args), "{args} should call bump(integer)");
    }
    // To bump(text): text, varchar, a string literal or NULL (unknown →
    // the string category).
    for args in ["s", "t", "'abc'", "p => 'abc'", "NULL"] {
        assert!(!go_reads_a(args), "{args} should call bump(text)");
    }
    // Types isolint does not derive (PostgreSQL: integer, text): an error
    // at the call.
    for args in ["i + 1", "upper(s)"] {
        let e = error(AB, &[("r.sql", &caller(args))]);
        assert!(
            e.contains("r.sql:16:") && e.contains("call of `bump` is ambiguous"),
            "{args}: {e}"
        );
    }
    // bigint and numeric go to neither (no implicit cast to integer or text).
    for args in ["n", "m"] {
        let e = error(AB, &[("r.sql", &caller(args))]);
        assert!(e.contains("matches no overload"), "{args}: {e}");
    }
}

/// Class 4. `SELECT … INTO STRICT` stopped by NO_DATA_FOUND observed a
/// missing row (a predicate read) and the handler goes on. Confirmed on
/// PostgreSQL 15: a(1) absent, b(1, z = 0); T1 `SELECT look(1)` (STRICT
/// finds nothing; a pg_sleep at the start of the handler); T2 `SELECT
/// reg(1); COMMIT`; T1's handler reads z = 1; COMMIT. Serial look;reg:
/// z = 0 is read; serial reg;look: a(1) is found, b not read. Control:
/// without the handler a missing row aborts (the paper's assumption), and
/// reg's INSERT of a row look found cannot succeed.
#[test]
fn strict_select_stopped_by_no_data_found() {
    let look = "CREATE FUNCTION look(p int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE v int; w int;
BEGIN
  BEGIN
    SELECT x INTO STRICT v FROM a WHERE k = p;
  EXCEPTION WHEN no_data_found THEN
    SELECT z INTO w FROM b WHERE k = p;
  END;
  RETURN w;
END $$;
";
    assert!(!robust(AB, &[("look.sql", look), ("reg.sql", REG)]));
    let control = look.replace("  EXCEPTION WHEN no_data_found THEN\n", "");
    assert!(robust(AB, &[("look.sql", &control), ("reg.sql", REG)]));
}

/// Class 4. A RAISE caught by the block's own handler is no abort idiom:
/// the program goes on in the handler, after reading "absent".
#[test]
fn raise_caught_by_its_own_handler_goes_on() {
    let look = "CREATE FUNCTION look(p int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE v int; w int;
BEGIN
  BEGIN
    SELECT x INTO v FROM a WHERE k = p;
    IF NOT FOUND THEN RAISE EXCEPTION 'missing'; END IF;
  EXCEPTION WHEN raise_exception THEN
    SELECT z INTO w FROM b WHERE k = p;
  END;
  RETURN w;
END $$;
";
    assert!(!robust(AB, &[("look.sql", look), ("reg.sql", REG)]));
    let control = look.replace("  EXCEPTION WHEN raise_exception THEN\n", "");
    assert!(robust(AB, &[("look.sql", &control), ("reg.sql", REG)]));
}

/// Class 6. A LANGUAGE sql function and a PL/pgSQL routine of one name
/// are overloads isolint does not resolve across languages: an error at
/// the routine, naming the other definition.
#[test]
fn overload_across_languages_is_an_error() {
    let schema = format!(
        "{AB}CREATE FUNCTION bump(p text) RETURNS int LANGUAGE sql AS $$ SELECT z FROM b WHERE k = length(p) $$;\n"
    );
    let e = error(
        &schema,
        &[(
            "r.sql",
            "CREATE FUNCTION bump(p int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  UPDATE a SET x = x + 1 WHERE k = p;
  RETURN 0;
END $$;
",
        )],
    );
    assert!(
        e.contains("r.sql:1:1")
            && e.contains("both a PL/pgSQL routine and a LANGUAGE sql function"),
        "{e}"
    );
}

/// Signatures compare types as PostgreSQL does: aliases and typmods
/// are one type; different types (and quoted names) stay apart.
#[test]
fn type_names_normalize_like_postgres() {
    use isolint::frontend::sql::plpgsql::norm_type;
    for (a, b) in [
        ("int", "INTEGER"),
        ("int4", "integer"),
        ("varchar(10)", "character varying"),
        ("character  varying(3)", "varchar"),
        ("float8", "double precision"),
        ("float(10)", "real"),
        ("float(40)", "float8"),
        ("numeric(10, 2)", "decimal"),
        ("timestamptz", "timestamp with time zone"),
        ("int[]", "integer []"),
        ("pg_catalog.text", "text"),
    ] {
        assert_eq!(norm_type(a), norm_type(b), "{a} vs {b}");
    }
    for (a, b) in [
        ("int", "bigint"),
        ("text", "varchar"),
        ("\"T\"", "t"),
        ("int[]", "int"),
        ("timestamp", "timestamptz"),
    ] {
        assert_ne!(norm_type(a), norm_type(b), "{a} vs {b}");
    }
}

/// Class 6. The schema is part of a routine's identity: `s1.bump(int)`
/// and `s2.bump(int)` are two routines (the lost update of the first is
/// found), while `public.bump(int)` and an unqualified `bump(int)` (the
/// default search_path) are one, the later replacing the earlier.
#[test]
fn schemas_keep_routines_apart() {
    let lost = "CREATE FUNCTION s1.bump(p int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE v int;
BEGIN
  SELECT x INTO v FROM a WHERE k = p;
  UPDATE a SET x = v + 1 WHERE k = p;
  RETURN v;
END $$;
";
    let safe = "CREATE OR REPLACE FUNCTION s2.bump(p int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  UPDATE a SET x = x + 1 WHERE k = p;
  RETURN 0;
END $$;
";
    let (robust, text) =
        run(AB, &[("r.sql", &format!("{lost}{safe}"))]).unwrap_or_else(|e| panic!("{e}"));
    assert!(!robust, "{text}");
    assert!(
        text.contains("s1.bump(integer): ") && text.contains("s2.bump(integer): "),
        "{text}"
    );
    let one = format!(
        "{}{}",
        lost.replace("s1.bump", "public.bump"),
        safe.replace("s2.bump", "bump")
    );
    let (robust, text) = run(AB, &[("r.sql", &one)]).unwrap_or_else(|e| panic!("{e}"));
    assert!(robust, "{text}");
}
