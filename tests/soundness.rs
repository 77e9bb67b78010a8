//! Soundness of the SQL front-end (issue 8): every construct that can read
//! or write a table is lowered, in program order, or rejected with a
//! located error. Each workload here has a real anomaly under READ
//! COMMITTED; isolint must never call it robust.
//!
//! Where a case says "confirmed on PostgreSQL 15", the anomaly was
//! reproduced at READ COMMITTED: by the reporter, or (where the
//! schedule is given) for this file on PostgreSQL 15.18 with two
//! connections running the schedule step by step, the outcome compared
//! with both serial orders.
//! Each not-robust case has a one-line variant, or a control, that must
//! stay robust, so a test that always says "not robust" would fail.

use std::path::Path;

use isolint::analysis::analyze;
use isolint::analysis::graph::Settings;
use isolint::analysis::robustness::Method;

/// acct(id PK, grp, bal), total(id PK, s): the schema.
const ACCT: &str = "CREATE TABLE acct (id INT PRIMARY KEY, grp INT, bal INT);
CREATE TABLE total (id INT PRIMARY KEY, s INT);
CREATE FUNCTION sum_group(g INT) RETURNS BIGINT LANGUAGE sql AS $$ SELECT SUM(bal) FROM acct WHERE grp = g $$;
CREATE FUNCTION double_it(x INT) RETURNS INT LANGUAGE sql AS $$ SELECT x * 2 $$;
CREATE FUNCTION loop_a(x INT) RETURNS INT LANGUAGE sql AS $$ SELECT loop_b(x) $$;
CREATE FUNCTION loop_b(x INT) RETURNS INT LANGUAGE sql AS $$ SELECT loop_a(x) $$;
CREATE FUNCTION pl(x INT) RETURNS INT LANGUAGE plpgsql AS $$ BEGIN RETURN x; END $$;
";

/// Transfer between two accounts (key-based writes of acct).
const MOVE: &str =
    "UPDATE acct SET bal = bal - 1 WHERE id = :a;\nUPDATE acct SET bal = bal + 1 WHERE id = :b;\n";

struct Outcome {
    robust: bool,
    warnings: Vec<String>,
    programs: Vec<String>,
}

fn run(schema: &str, manifest: &str, files: &[(&str, &str)]) -> Result<Outcome, String> {
    let d = tempfile::tempdir().map_err(|e| e.to_string())?;
    std::fs::write(d.path().join("schema.sql"), schema).map_err(|e| e.to_string())?;
    std::fs::write(
        d.path().join("isolint.yaml"),
        format!("schema: schema.sql\n{manifest}"),
    )
    .map_err(|e| e.to_string())?;
    for (n, t) in files {
        std::fs::write(d.path().join(n), t).map_err(|e| e.to_string())?;
    }
    let loaded =
        isolint::frontend::load(Path::new(d.path()), None).map_err(|e| e.message.clone())?;
    let a = analyze(&loaded.workload, Settings::default(), Method::TypeII, false);
    Ok(Outcome {
        robust: a.robust,
        warnings: loaded.warnings.iter().map(|w| w.message.clone()).collect(),
        programs: loaded
            .workload
            .programs
            .iter()
            .map(|p| p.name.clone())
            .collect(),
    })
}

fn robust(schema: &str, files: &[(&str, &str)]) -> bool {
    match run(schema, "", files) {
        Ok(o) => o.robust,
        Err(e) => panic!("expected a verdict, got: {e}"),
    }
}

fn error(schema: &str, files: &[(&str, &str)]) -> String {
    match run(schema, "", files) {
        Ok(_) => panic!("expected an error"),
        Err(e) => e,
    }
}

/// Sum₁ reads acct before Move commits (rw, counterflow), Move → Sum₂ (wr),
/// Sum₂ → Sum₁ (ww on total): a type-II cycle once the read of acct is
/// modelled.
#[test]
fn every_position_of_the_group_read_is_modelled() {
    let variants = [
        // 1. the FOR header's query (runs once, before the body)
        "FOR r IN SELECT bal FROM acct WHERE grp = :g LOOP\n  UPDATE total SET s = s + 1 WHERE id = :g;\nEND LOOP;\n",
        // 2. an IF condition, and an ELSIF condition
        "IF EXISTS (SELECT 1 FROM acct WHERE grp = :g AND bal < 0) THEN\n  UPDATE total SET s = 0 WHERE id = :g;\nEND IF;\n",
        "IF :g < 0 THEN\n  UPDATE total SET s = 1 WHERE id = :g;\nELSIF (SELECT SUM(bal) FROM acct WHERE grp = :g) > 0 THEN\n  UPDATE total SET s = 0 WHERE id = :g;\nEND IF;\n",
        // 3. WHILE and EXIT WHEN conditions
        "WHILE (SELECT SUM(bal) FROM acct WHERE grp = :g) > 0 LOOP\n  UPDATE total SET s = s + 1 WHERE id = :g;\n  EXIT;\nEND LOOP;\n",
        "LOOP\n  EXIT WHEN (SELECT SUM(bal) FROM acct WHERE grp = :g) > 0;\n  UPDATE total SET s = s + 1 WHERE id = :g;\nEND LOOP;\n",
        // 4. RAISE NOTICE does not abort
        "SELECT SUM(bal) INTO :x FROM acct WHERE grp = :g;\nRAISE NOTICE 'sum is %', :x;\nUPDATE total SET s = :x WHERE id = :g;\n",
        // RAISE NOTICE's own argument reads the table
        "RAISE NOTICE 'sum is %', (SELECT SUM(bal) FROM acct WHERE grp = :g);\nUPDATE total SET s = 0 WHERE id = :g;\n",
        // 5. a user function's body
        "SELECT sum_group(:g) INTO :x;\nUPDATE total SET s = :x WHERE id = :g;\n",
        "UPDATE total SET s = sum_group(:g) WHERE id = :g;\n",
        // SELECT without FROM: its subqueries
        "SELECT (SELECT SUM(bal) FROM acct WHERE grp = :g) INTO :x;\nUPDATE total SET s = :x WHERE id = :g;\n",
        // assignment, CASE and ASSERT
        ":x := (SELECT SUM(bal) FROM acct WHERE grp = :g);\nUPDATE total SET s = :x WHERE id = :g;\n",
        "CASE WHEN (SELECT SUM(bal) FROM acct WHERE grp = :g) > 0 THEN UPDATE total SET s = 1 WHERE id = :g; ELSE UPDATE total SET s = 0 WHERE id = :g; END CASE;\n",
        "CASE (SELECT SUM(bal) FROM acct WHERE grp = :g) WHEN 0 THEN UPDATE total SET s = 1 WHERE id = :g; ELSE NULL; END CASE;\n",
        "ASSERT (SELECT SUM(bal) FROM acct WHERE grp = :g) >= 0, 'negative';\nUPDATE total SET s = 0 WHERE id = :g;\n",
        // FOR bounds and multi-row VALUES
        "FOR i IN 1..(SELECT SUM(bal) FROM acct WHERE grp = :g) LOOP\n  UPDATE total SET s = s + 1 WHERE id = :g;\nEND LOOP;\n",
        "INSERT INTO total VALUES (:n, 0), (:m, (SELECT SUM(bal) FROM acct WHERE grp = :g));\nUPDATE total SET s = 0 WHERE id = :g;\n",
    ];
    for sum in variants {
        assert!(
            !robust(ACCT, &[("Move.sql", MOVE), ("Sum.sql", sum)]),
            "called robust:\n{sum}"
        );
    }
    // Control: the same shapes without the read of acct are robust, and so
    // is a read of acct that Move cannot change (the number of rows of a
    // group: Move writes bal only).
    for sum in [
        "WHILE (SELECT COUNT(*) FROM acct WHERE grp = :g) > 0 LOOP\n  UPDATE total SET s = s + 1 WHERE id = :g;\n  EXIT;\nEND LOOP;\n",
        "FOR i IN 1..:n LOOP\n  UPDATE total SET s = s + 1 WHERE id = :g;\nEND LOOP;\n",
        "IF :g > 0 THEN UPDATE total SET s = 0 WHERE id = :g; END IF;\n",
        "SELECT double_it(:g) INTO :x;\nRAISE NOTICE 'x %', :x;\nUPDATE total SET s = :x WHERE id = :g;\n",
    ] {
        assert!(
            robust(ACCT, &[("Move.sql", MOVE), ("Sum.sql", sum)]),
            "control called not robust:\n{sum}"
        );
    }
}

#[test]
fn raise_levels() {
    // RAISE EXCEPTION (and RAISE without a level) ends the path: the
    // read-then-write is never committed together with the read.
    let aborting = "SELECT SUM(bal) INTO :x FROM acct WHERE grp = :g;\nRAISE EXCEPTION 'stop %', :x;\nUPDATE total SET s = :x WHERE id = :g;\n";
    let o = run(ACCT, "", &[("Move.sql", MOVE), ("Sum.sql", aborting)]).expect("lowers");
    assert!(o.robust, "an aborted path commits nothing");
    assert!(o.warnings.iter().any(|w| w.contains("commits nothing")));
    for level in ["DEBUG", "LOG", "INFO", "NOTICE", "WARNING"] {
        let sum = format!("SELECT SUM(bal) INTO :x FROM acct WHERE grp = :g;\nRAISE {level} 'sum %', :x;\nUPDATE total SET s = :x WHERE id = :g;\n");
        assert!(
            !robust(ACCT, &[("Move.sql", MOVE), ("Sum.sql", &sum)]),
            "{level}"
        );
    }
}

#[test]
fn functions_unknown_pure_recursive_plpgsql() {
    let sum = "SELECT mystery(:g) INTO :x;\nUPDATE total SET s = :x WHERE id = :g;\n";
    let e = error(ACCT, &[("Sum.sql", sum)]);
    assert!(
        e.contains("Sum.sql:1:8: call of unknown function `mystery`"),
        "{e}"
    );
    // Declared pure in the manifest: fine.
    let o = run(ACCT, "pure_functions: [mystery]\n", &[("Sum.sql", sum)]).expect("pure");
    assert_eq!(o.programs, ["Sum"]);
    let e = error(ACCT, &[("Sum.sql", "SELECT loop_a(:g) INTO :x;\n")]);
    assert!(e.contains("recursive call of function `loop_a`"), "{e}");
    let e = error(ACCT, &[("Sum.sql", "SELECT pl(:g) INTO :x;\n")]);
    assert!(e.contains("written in plpgsql"), "{e}");
    // A workload file of CREATE FUNCTIONs only is a library, not a program.
    let o = run(
        "CREATE TABLE acct (id INT PRIMARY KEY, grp INT, bal INT);\nCREATE TABLE total (id INT PRIMARY KEY, s INT);",
        "",
        &[
            ("lib.sql", "-- helpers\nCREATE FUNCTION grp_sum(g INT) RETURNS BIGINT LANGUAGE sql AS $$ SELECT SUM(bal) FROM acct WHERE grp = $1 $$;\n"),
            ("Sum.sql", "UPDATE total SET s = grp_sum(:g) WHERE id = :g;\n"),
            ("Move.sql", MOVE),
        ],
    )
    .expect("lowers");
    assert_eq!(o.programs, ["Move", "Sum"]);
    assert!(
        !o.robust,
        "the library function's read ($1 bound) is inlined"
    );
    // Built-ins need no declaration.
    assert!(robust(
        ACCT,
        &[(
            "T.sql",
            "UPDATE total SET s = coalesce(greatest(:a, 0), abs(:b)) + extract(year from now()) WHERE id = :g;\n"
        )]
    ));
}

#[test]
fn positions_isolint_does_not_model_are_errors() {
    // A subquery in LIMIT is not lowered: the audit refuses it.
    let e = error(
        ACCT,
        &[(
            "P.sql",
            "SELECT bal FROM acct WHERE grp = :g LIMIT (SELECT COUNT(*) FROM total);\n",
        )],
    );
    assert!(e.contains("cannot model a subquery"), "{e}");
}

/// `BEGIN` without `;` used to swallow the next statement: the lost update
/// (SELECT then UPDATE) became a blind write.
#[test]
fn begin_without_semicolon_is_an_error() {
    let e = error(
        ACCT,
        &[(
            "P.sql",
            "BEGIN\n  SELECT bal INTO :b FROM acct WHERE id = :a;\n  UPDATE acct SET bal = :b + 1 WHERE id = :a;\nEND;\n",
        )],
    );
    assert!(e.contains("P.sql:1:1: `BEGIN` without `;`"), "{e}");
    // With `;` it is the lost update, not robust.
    assert!(!robust(
        ACCT,
        &[(
            "P.sql",
            "BEGIN;\nSELECT bal INTO :b FROM acct WHERE id = :a;\nUPDATE acct SET bal = :b + 1 WHERE id = :a;\nEND;\n"
        )]
    ));
}

/// roles(user_id, role) keyed by both: each program grants a role only if
/// the user lacks the other. Both read "absent", both insert, both commit
/// (confirmed on PostgreSQL 15 by the reporter): the key-based
/// read whose absence the program handles is a predicate read.
#[test]
fn reads_of_rows_that_may_be_missing() {
    let roles = "CREATE TABLE roles (user_id INT, role TEXT, PRIMARY KEY (user_id, role));\nCREATE TABLE acct (id INT PRIMARY KEY, grp INT, bal INT);\nCREATE TABLE total (id INT PRIMARY KEY, s INT);";
    for (test_a, test_b) in [
        ("IF NOT FOUND THEN", "IF NOT FOUND THEN"),
        ("IF :x IS NULL THEN", "IF :y IS NULL THEN"),
        ("IF coalesce(:x, 0) = 0 THEN", "IF NOT FOUND THEN"),
    ] {
        let a = format!("SELECT 1 INTO :x FROM roles WHERE user_id = :u AND role = 'auditor';\n{test_a} INSERT INTO roles VALUES (:u, 'admin'); END IF;\n");
        let b = format!("SELECT 1 INTO :y FROM roles WHERE user_id = :u AND role = 'admin';\n{test_b} INSERT INTO roles VALUES (:u, 'auditor'); END IF;\n");
        assert!(!robust(roles, &[("A.sql", &a), ("B.sql", &b)]), "{test_a}");
    }
    // Insert-if-absent without any test: the insert fails if the row is
    // there, so every committed run read "absent".
    let a = "SELECT role INTO :r FROM roles WHERE user_id = :u AND role = 'admin';\nINSERT INTO roles VALUES (:u, 'admin');\nUPDATE total SET s = s + 1 WHERE id = 1;\n";
    assert!(!robust(roles, &[("A.sql", a)]));
    // Control: when absence aborts, the paper's assumption holds and the
    // key-based reads of these two programs touch different tuples.
    let a = "SELECT 1 INTO :x FROM roles WHERE user_id = :u AND role = 'auditor';\nIF NOT FOUND THEN ROLLBACK; END IF;\nUPDATE total SET s = s + 1 WHERE id = :u;\n";
    assert!(robust(roles, &[("A.sql", a)]));
}

/// An existence read by key (COUNT(*), SELECT 1) reads the row: a DELETE of
/// it conflicts. Reader: reads existence of acct a, then writes total a;
/// Deleter: deletes acct a, writes total a. Reader →rw(counterflow)
/// Deleter →ww Reader, and the counterflow edge leaves before the ww
/// edge enters: type II. Confirmed on PostgreSQL 15 (acct 1 present,
/// total.s = 5): R: SELECT COUNT(*) … id = 1 → 1; D: DELETE acct 1; UPDATE
/// total s = s - 1; COMMIT; R: UPDATE total SET s = 1 (R's value for
/// n = 1); COMMIT. Final (no acct, s = 1); R;D gives s = 0, D;R reads n = 0.
#[test]
fn existence_reads_conflict_with_deletes() {
    let deleter = "DELETE FROM acct WHERE id = :a;\nUPDATE total SET s = s - 1 WHERE id = :a;\n";
    for reader in [
        "SELECT COUNT(*) INTO :n FROM acct WHERE id = :a;\nUPDATE total SET s = s + 1 WHERE id = :a;\n",
        "SELECT 1 INTO :n FROM acct WHERE id = :a;\nUPDATE total SET s = s + 1 WHERE id = :a;\n",
        "SELECT EXISTS (SELECT 1 FROM acct WHERE id = :a) INTO :n;\nUPDATE total SET s = s + 1 WHERE id = :a;\n",
    ] {
        assert!(
            !robust(ACCT, &[("R.sql", reader), ("D.sql", deleter)]),
            "{reader}"
        );
    }
    // Control: reading a column the deleter's partner never touches, with
    // no delete, is robust.
    let updater =
        "UPDATE acct SET grp = 1 WHERE id = :a;\nUPDATE total SET s = s - 1 WHERE id = :a;\n";
    let reader =
        "SELECT bal INTO :n FROM acct WHERE id = :a;\nUPDATE total SET s = s + 1 WHERE id = :a;\n";
    assert!(robust(ACCT, &[("R.sql", reader), ("U.sql", updater)]));
}

/// The lost update SELECT bal … ; UPDATE … SET bal = :b + 1, twice. A row
/// lock that really orders the read (FOR UPDATE, FOR NO KEY UPDATE, FOR
/// SHARE on the key alone) makes it robust; the others do not order it.
/// Confirmed on PostgreSQL 15: with FOR KEY SHARE both read bal = 10 and
/// both write 11 (a lost update); `WHERE id = 1 AND grp = 1 FOR UPDATE` on
/// a row with grp = 0 returns nothing and locks nothing, the other
/// transaction sets grp = 1, bal = 20 and commits, and the first then
/// reads bal = 20: no serial order gives both reads.
#[test]
fn lock_strengths_and_extra_conjuncts() {
    let p = |lock: &str| {
        format!("SELECT bal INTO :b FROM acct WHERE id = :a {lock};\nUPDATE acct SET bal = :b + 1 WHERE id = :a;\n")
    };
    for lock in ["FOR UPDATE", "FOR NO KEY UPDATE", "FOR SHARE"] {
        assert!(robust(ACCT, &[("P.sql", &p(lock))]), "{lock}");
    }
    for lock in [
        "",
        "FOR KEY SHARE",
        "FOR UPDATE SKIP LOCKED",
        "FOR UPDATE NOWAIT",
    ] {
        assert!(!robust(ACCT, &[("P.sql", &p(lock))]), "{lock}");
    }
    // An extra conjunct: a row it filters out is neither locked nor waited for.
    let extra = "SELECT bal INTO :b FROM acct WHERE id = :a AND grp = 1 FOR UPDATE;\nUPDATE acct SET bal = :b + 1 WHERE id = :a;\n";
    assert!(!robust(ACCT, &[("P.sql", extra)]));
}

/// The deleter's cascade deletes the child the reader read. Confirmed on
/// PostgreSQL 15 (child 1 of parent 1, w = 7): R reads w = 7; D deletes
/// parent 1 (the cascade deletes child 1), s = s + 1, commits; R sets
/// s = 7 and commits. Final: no child, s = 7; R;D gives s = 8, D;R reads
/// no child.
#[test]
fn referential_actions_are_writes_of_the_deleting_program() {
    let schema = |action: &str| {
        format!("CREATE TABLE parent (id INT PRIMARY KEY, v INT);\nCREATE TABLE child (id INT PRIMARY KEY, pid INT REFERENCES parent {action}, w INT);\nCREATE TABLE total (id INT PRIMARY KEY, s INT);")
    };
    let deleter = "DELETE FROM parent WHERE id = :p;\nUPDATE total SET s = s + 1 WHERE id = 1;\n";
    let reader =
        "SELECT w INTO :w FROM child WHERE id = :c;\nUPDATE total SET s = :w WHERE id = 1;\n";
    for action in [
        "ON DELETE CASCADE",
        "ON DELETE SET NULL",
        "ON DELETE SET DEFAULT",
    ] {
        let reader = if action == "ON DELETE CASCADE" {
            reader.to_string()
        } else {
            "SELECT pid INTO :w FROM child WHERE id = :c;\nUPDATE total SET s = :w WHERE id = 1;\n"
                .to_string()
        };
        assert!(
            !robust(&schema(action), &[("D.sql", deleter), ("R.sql", &reader)]),
            "{action}"
        );
    }
    // ON UPDATE CASCADE: changing the parent's key rewrites child.pid.
    let keyupd =
        "UPDATE parent SET id = :n WHERE id = :p;\nUPDATE total SET s = s + 1 WHERE id = 1;\n";
    let reader2 =
        "SELECT pid INTO :w FROM child WHERE id = :c;\nUPDATE total SET s = :w WHERE id = 1;\n";
    assert!(!robust(
        &schema("ON UPDATE CASCADE"),
        &[("K.sql", keyupd), ("R.sql", reader2)]
    ));
    // Control: without an action the delete touches no child row.
    assert!(robust(
        &schema(""),
        &[("D.sql", deleter), ("R.sql", reader)]
    ));
}

/// email is UNIQUE, but an upsert assigns it: `WHERE email = :e` is then a
/// predicate read (a phantom when another row takes that email).
#[test]
fn unique_assigned_by_on_conflict_is_no_key() {
    let schema = "CREATE TABLE users (id INT PRIMARY KEY, email TEXT UNIQUE, name TEXT, visits INT);\nCREATE TABLE total (id INT PRIMARY KEY, s INT);";
    let reader = "SELECT name INTO :n FROM users WHERE email = :e;\nUPDATE total SET s = s + 1 WHERE id = 1;\n";
    let upsert = "INSERT INTO users VALUES (:id, :e, :n, 0) ON CONFLICT (id) DO UPDATE SET email = EXCLUDED.email;\nUPDATE total SET s = 0 WHERE id = 1;\n";
    assert!(!robust(schema, &[("R.sql", reader), ("U.sql", upsert)]));
    // Control: an upsert that leaves email alone keeps email a key; the
    // reader's key-based read of name then conflicts with neither the
    // insert (a new tuple) nor the update of visits.
    let upsert = "INSERT INTO users VALUES (:id, :e, :n, 0) ON CONFLICT (id) DO UPDATE SET visits = users.visits + 1;\nUPDATE total SET s = 0 WHERE id = 1;\n";
    assert!(robust(schema, &[("R.sql", reader), ("U.sql", upsert)]));
}

/// The write skew of the on-call doctors (SELECT without FROM, INSERT …
/// SELECT … WHERE NOT EXISTS without FROM).
#[test]
fn subqueries_without_from() {
    let schema = "CREATE TABLE oncall (doctor INT, shift INT, PRIMARY KEY (doctor, shift));";
    let leave = "SELECT EXISTS (SELECT 1 FROM oncall WHERE shift = :s AND doctor <> :d) INTO :other;\nIF :other THEN DELETE FROM oncall WHERE doctor = :d AND shift = :s; END IF;\n";
    assert!(!robust(schema, &[("Leave.sql", leave)]));
    let join = "INSERT INTO oncall (doctor, shift) SELECT :d, :s WHERE NOT EXISTS (SELECT 1 FROM oncall WHERE shift = :s);\n";
    assert!(!robust(schema, &[("Join.sql", join)]));
}

/// HammerDB's DELIVERY ends its loop with RAISE NOTICE; it used to lower to
/// the empty program. Two deliveries credit the same customer twice.
#[test]
fn delivery_with_raise_notice() {
    let schema = "CREATE TABLE new_order (o_id INT PRIMARY KEY, d_id INT);\nCREATE TABLE customer (id INT PRIMARY KEY, balance INT);";
    let delivery = "FOR d IN 1..10 LOOP\n  SELECT MIN(o_id) INTO :o FROM new_order WHERE d_id = :d;\n  DELETE FROM new_order WHERE o_id = :o;\n  UPDATE customer SET balance = balance + 1 WHERE id = :c;\n  RAISE NOTICE 'D: % O: %', :d, :o;\nEND LOOP;\n";
    let o = run(schema, "", &[("Delivery.sql", delivery)]).expect("lowers");
    assert!(!o.robust);
}

#[test]
fn transactions_and_empty_programs() {
    // A mid-program COMMIT (or END) splits the program into transactions.
    for commit in ["COMMIT;", "END;", "COMMIT WORK;"] {
        let p = format!("SELECT bal INTO :b FROM acct WHERE id = :a;\n{commit}\nUPDATE acct SET bal = :b + 1 WHERE id = :a;\nCOMMIT;\n");
        let o = run(ACCT, "", &[("P.sql", &p)]).expect("lowers");
        assert_eq!(o.programs, ["P.1", "P.2"], "{commit}");
        assert!(o.warnings.iter().any(|w| w.contains("2 transactions")));
    }
    let e = error(
        ACCT,
        &[(
            "P.sql",
            "IF :a > 0 THEN COMMIT; END IF;\nUPDATE acct SET bal = 0 WHERE id = :a;\n",
        )],
    );
    assert!(e.contains("COMMIT inside IF"), "{e}");
    // The declared level is recorded.
    let o = run(
        ACCT,
        "",
        &[(
            "P.sql",
            "BEGIN ISOLATION LEVEL SERIALIZABLE;\nUPDATE acct SET bal = 0 WHERE id = :a;\nCOMMIT;\n",
        )],
    )
    .expect("lowers");
    assert!(
        o.warnings
            .iter()
            .any(|w| w.contains("ISOLATION LEVEL SERIALIZABLE")),
        "{:?}",
        o.warnings
    );
    // A program with no statement is reported.
    let o = run(
        ACCT,
        "",
        &[("P.sql", "RAISE NOTICE 'nothing';\n"), ("M.sql", MOVE)],
    )
    .expect("lowers");
    assert!(
        o.warnings
            .iter()
            .any(|w| w.contains("`P` has no SQL statement")),
        "{:?}",
        o.warnings
    );
    // Savepoints cannot be modelled.
    let e = error(
        ACCT,
        &[(
            "P.sql",
            "SAVEPOINT s;\nUPDATE acct SET bal = 0 WHERE id = :a;\nROLLBACK TO SAVEPOINT s;\n",
        )],
    );
    assert!(e.contains("SAVEPOINT"), "{e}");
}

/// Each unsupported PL/pgSQL construct is named in its error.
#[test]
fn plpgsql_constructs_get_their_own_errors() {
    for (stmt, named) in [
        ("RETURN 1;", "`RETURN` is PL/pgSQL"),
        ("PERFORM 1;", "`PERFORM` is PL/pgSQL"),
        ("DECLARE x INT;", "`DECLARE` is PL/pgSQL"),
        ("EXCEPTION WHEN others THEN NULL;", "`EXCEPTION` is PL/pgSQL"),
        ("OPEN c;", "`OPEN` is PL/pgSQL"),
        ("EXECUTE 'UPDATE acct SET bal = 0';", "`EXECUTE` is PL/pgSQL"),
        ("GET DIAGNOSTICS n = ROW_COUNT;", "`GET` is PL/pgSQL"),
        ("FOR r IN c LOOP NULL; END LOOP;", "unsupported FOR loop"),
        (
            "CREATE FUNCTION f() RETURNS void LANGUAGE plpgsql AS $$ BEGIN UPDATE acct SET bal = 0; END $$;",
            "DDL in a program",
        ),
    ] {
        let e = error(
            ACCT,
            &[("P.sql", &format!("UPDATE acct SET bal = 0 WHERE id = :a;\n{stmt}\n"))],
        );
        assert!(e.contains(named), "{stmt}: {e}");
        assert!(e.contains("P.sql:2:"), "{stmt}: {e}");
    }
}

/// `:items[:i]`: an array parameter indexed by the loop variable is one
/// value per iteration (not an unknown column `i`).
#[test]
fn array_subscripts() {
    let schema = "CREATE TABLE stock (id INT PRIMARY KEY, q INT);";
    let p = "FOR i IN 1..:n LOOP\n  SELECT q INTO :q FROM stock WHERE id = :items[:i];\n  UPDATE stock SET q = :q - 1 WHERE id = :items[:i];\nEND LOOP;\n";
    let d = tempfile::tempdir().expect("tmp");
    std::fs::write(d.path().join("s.sql"), schema).expect("w");
    std::fs::write(d.path().join("P.sql"), p).expect("w");
    let l = isolint::frontend::load(d.path(), Some(&d.path().join("s.sql"))).expect("lowers");
    let types: Vec<String> = l.workload.programs[0]
        .statements
        .iter()
        .map(|s| s.ty.to_string())
        .collect();
    assert_eq!(types, ["key sel", "key upd"]);
    // The lost update inside the loop is still found.
    assert!(!robust(schema, &[("P.sql", p)]));
}

/// Positional placeholders: `$1` is one value throughout the program (the
/// lost update is found, and FOR UPDATE on it fixes it); a view cannot be
/// used (isolint does not expand it).
#[test]
fn placeholders_and_views() {
    let p = "SELECT bal INTO :b FROM acct WHERE id = $1;\nUPDATE acct SET bal = :b + 1 WHERE id = $1;\n";
    assert!(!robust(ACCT, &[("P.sql", p)]));
    let p = "SELECT bal INTO :b FROM acct WHERE id = $1 FOR UPDATE;\nUPDATE acct SET bal = :b + 1 WHERE id = $1;\n";
    assert!(robust(ACCT, &[("P.sql", p)]));
    let schema = format!("{ACCT}CREATE VIEW rich AS SELECT id FROM acct WHERE bal > 100;\n");
    let e = error(
        &schema,
        &[("P.sql", "SELECT id INTO :r FROM rich WHERE id = :a;\n")],
    );
    assert!(e.contains("P.sql:1:24: `rich` is a view"), "{e}");
}

/// Referential-integrity checks are reads (frontend/lower/integrity.rs).
/// Linker reads x before Maker's increment, Maker inserts parent 7 and
/// commits, Linker inserts a child of 7 (PostgreSQL's foreign-key check
/// reads the parent and sees it) and commits. Linker must precede Maker
/// (old x) and follow it (parent present): no serial order. Confirmed on
/// PostgreSQL 15.18 at READ COMMITTED with the schedule: Linker SELECT v;
/// Maker UPDATE X, INSERT Parent, COMMIT; Linker INSERT Child, COMMIT —
/// both commit, Linker read v = 0, final v = 1.
#[test]
fn foreign_key_checks_read_the_parent() {
    let schema = "CREATE TABLE X (id INT PRIMARY KEY, v INT);
CREATE TABLE Parent (id INT PRIMARY KEY, note INT);
CREATE TABLE Child (id INT PRIMARY KEY, pid INT REFERENCES Parent(id));";
    let maker = (
        "Maker.sql",
        "UPDATE X SET v = v + 1 WHERE id = :a;\nINSERT INTO Parent VALUES (:p, 0);\n",
    );
    let linker = (
        "Linker.sql",
        "SELECT v INTO :v FROM X WHERE id = :a;\nINSERT INTO Child VALUES (:c, :p);\n",
    );
    assert!(!robust(schema, &[maker, linker]));
    // A NULL reference is not checked: the pair is robust (the X read and
    // increment alone are serializable).
    let orphan = (
        "Linker.sql",
        "SELECT v INTO :v FROM X WHERE id = :a;\nINSERT INTO Child VALUES (:c, NULL);\n",
    );
    assert!(robust(schema, &[maker, orphan]));
    // Without the checks (the paper's model) the cycle is not seen, and
    // the output says why a robust verdict may not hold.
    let o = run(schema, "referential_checks: false\n", &[maker, linker]).expect("verdict");
    assert!(o.robust);
    assert!(
        o.warnings
            .iter()
            .any(|w| w.contains("referential_checks: false")),
        "{:?}",
        o.warnings
    );
}

/// Data-modifying and plain CTEs (issue 10): each part is a statement of
/// the program, in the order written, the main statement last; reading a
/// CTE by name reads no table.
///
/// Lost update inside one statement: `WITH r AS (SELECT bal …) UPDATE acct
/// SET bal = (SELECT bal FROM r) + 1` reads bal on the statement's snapshot;
/// when a concurrent increment commits while the UPDATE waits for its row
/// lock, PostgreSQL re-checks the row but keeps r's stale value. Confirmed
/// on PostgreSQL 15.18 at READ COMMITTED: T2 `UPDATE acct SET bal = bal + 1
/// WHERE id = 1` (not committed); T1 runs the WITH statement and blocks; T2
/// commits; T1 commits: final bal = 1, both serial orders give 2. With the
/// read inside the UPDATE (`SET bal = bal + 1`) it is robust.
#[test]
fn ctes_are_statements_in_order() {
    let cte = "WITH r AS (SELECT bal FROM acct WHERE id = :a)\nUPDATE acct SET bal = (SELECT bal FROM r) + 1 WHERE id = :a;\n";
    assert!(!robust(ACCT, &[("P.sql", cte)]));
    let inc = "UPDATE acct SET bal = bal + 1 WHERE id = :a;\n";
    assert!(robust(ACCT, &[("P.sql", inc)]));

    // A data-modifying CTE is the same program as its two statements: a
    // debit logged in `total` (key-based writes only: robust); beside a
    // program that reads acct and then updates total, not robust in both
    // forms (it reads acct before the debit commits, rw, and updates the
    // total row after the insert commits, ww: the read comes first in it).
    // The CTE's key-based UPDATE stays key-based.
    let logged = "WITH u AS (UPDATE acct SET bal = bal - 1 WHERE id = :a RETURNING id, bal)\nINSERT INTO total (id, s) SELECT id, bal FROM u;\n";
    let two =
        "UPDATE acct SET bal = bal - 1 WHERE id = :a;\nINSERT INTO total (id, s) VALUES (:a, 0);\n";
    assert!(robust(ACCT, &[("P.sql", logged)]));
    assert!(robust(ACCT, &[("P.sql", two)]));
    let reader =
        "SELECT bal INTO :b FROM acct WHERE id = :x;\nUPDATE total SET s = :b WHERE id = :t;\n";
    assert!(!robust(ACCT, &[("P.sql", logged), ("R.sql", reader)]));
    assert!(!robust(ACCT, &[("P.sql", two), ("R.sql", reader)]));

    // DELETE … RETURNING feeding an INSERT, and a CTE read by a SELECT
    // INTO with a join: both load, and the DELETE is a write of acct that
    // a concurrent reader-then-writer of acct conflicts with.
    let archive = "WITH d AS (DELETE FROM acct WHERE id = :a RETURNING id)\nINSERT INTO total (id, s) SELECT id, 0 FROM d;\n";
    let rmw =
        "SELECT bal INTO :b FROM acct WHERE id = :x;\nUPDATE total SET s = :b WHERE id = :x;\n";
    assert!(!robust(ACCT, &[("A.sql", archive), ("B.sql", rmw)]));
    let join = "WITH g AS (SELECT id FROM acct WHERE grp = :g)\nSELECT t.s INTO :s FROM g JOIN total t ON t.id = g.id;\n";
    assert!(robust(ACCT, &[("J.sql", join)]));

    // What isolint cannot resolve is a located error, never a dropped read.
    let e = error(
        ACCT,
        &[(
            "P.sql",
            "WITH RECURSIVE r AS (SELECT 1) SELECT 1 INTO :x;\n",
        )],
    );
    assert!(e.contains("WITH RECURSIVE"), "{e}");
    let e = error(
        ACCT,
        &[(
            "P.sql",
            "WITH r(x) AS (SELECT bal FROM acct WHERE id = :a)\nSELECT x INTO :v FROM r;\n",
        )],
    );
    assert!(e.contains("P.sql:2:23") && e.contains("CTE `r`"), "{e}");
}

/// PostgreSQL's array constructor `ARRAY(SELECT …)` reads like a scalar
/// subquery. It was an error ("unknown function ARRAY"), found while
/// writing the generator of issue 15; now it is lowered before the
/// statement that holds it. Write skew: P counts the rows with b = :x and
/// writes the count to a of row :k; Q sets b of row :k when its a > 0.
/// From row 1 = (a 1, b 1): P(x 0, k 1) counts none; Q(x 0, k 1) sees
/// a = 1 and sets b = 0, commits; P sets a = 0, commits. Final (a 0, b 0);
/// P then Q gives (0, 1) (Q sees a = 0), Q then P gives (1, 0) (P counts
/// row 1). With a literal array in place of the subquery, P reads nothing
/// and the pair is robust.
#[test]
fn array_constructor_reads_its_query() {
    let schema = "CREATE TABLE t0 (id INT PRIMARY KEY, a INT NOT NULL DEFAULT 0, b INT NOT NULL DEFAULT 0);\n";
    let q = "UPDATE t0 SET b = :x WHERE id = :k AND a > 0;\n";
    let p = |array: &str| {
        format!(
            ":n := coalesce(array_length({array}, 1), 0);\nUPDATE t0 SET a = :n WHERE id = :k;\n"
        )
    };
    let reads = p("ARRAY(SELECT id FROM t0 WHERE b = :x)");
    assert!(!robust(schema, &[("P.sql", &reads), ("Q.sql", q)]));
    let literal = p("ARRAY[:x]");
    assert!(robust(schema, &[("P.sql", &literal), ("Q.sql", q)]));
    // The same read in a SELECT list without FROM.
    let select = "SELECT coalesce(array_length(ARRAY(SELECT id FROM t0 WHERE b = :x), 1), 0) INTO :n;\nUPDATE t0 SET a = :n WHERE id = :k;\n";
    assert!(!robust(schema, &[("P.sql", select), ("Q.sql", q)]));
}
