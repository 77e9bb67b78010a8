//! Issue 22, "read real code as written": PostgreSQL's own catalogue of
//! built-in functions, every error of a run in one report, empty program
//! files, the manifest's `exclude:`, and pgbench scripts as programs.
//!
//! Expected verdicts come from reasoning written next to each case (the
//! paper's Section 5 rules) or from PostgreSQL 15; every non-robust case
//! has a robust control.

#[path = "common/workdir.rs"]
mod workdir;

use isolint::analysis::analyze;
use isolint::analysis::graph::Settings;
use isolint::analysis::robustness::Method;

struct Outcome {
    robust: bool,
    warnings: Vec<String>,
    programs: Vec<String>,
}

/// Writes `schema.sql`, `isolint.yaml` (`schema: schema.sql` + `manifest`)
/// and `files` to a fresh directory and loads it. The error is the whole
/// rendered message, related errors included.
fn run(schema: &str, manifest: &str, files: &[(&str, &str)]) -> Result<Outcome, String> {
    let loaded = workdir::load(schema, manifest, files).map_err(|e| render(&e))?;
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

/// A diagnostic's message, hint and the messages of its related errors.
fn render(d: &isolint::model::error::Diag) -> String {
    let mut s = format!(
        "{}\nhelp: {}",
        d.message,
        d.help.clone().unwrap_or_default()
    );
    for r in &d.related {
        s.push_str(&format!(
            "\n{}\nhelp: {}",
            r.message,
            r.help.clone().unwrap_or_default()
        ));
    }
    s
}

fn verdict(schema: &str, manifest: &str, files: &[(&str, &str)]) -> Outcome {
    match run(schema, manifest, files) {
        Ok(o) => o,
        Err(e) => panic!("expected a verdict, got: {e}"),
    }
}

fn error(schema: &str, manifest: &str, files: &[(&str, &str)]) -> String {
    match run(schema, manifest, files) {
        Ok(o) => panic!("expected an error, got programs {:?}", o.programs),
        Err(e) => e,
    }
}

// ---------------------------------------------------------------------
// 1. Built-in functions from PostgreSQL's catalogue.

const KV: &str = "CREATE TABLE kv (k INT PRIMARY KEY, v INT, doc JSONB, bits BYTEA);\n";

/// Functions a hand list missed (the examples) are built-ins of
/// PostgreSQL 15's pg_proc that touch no table: programs calling them
/// load. `a` and `b` are each one key-based UPDATE (plus a SELECT of no
/// table): a single write statement per transaction forms no dangerous
/// cycle, so the workload is robust.
#[test]
fn catalogue_functions_load() {
    let o = verdict(
        KV,
        "",
        &[
            (
                "a.sql",
                "UPDATE kv SET v = get_bit(bits, 3) WHERE k = :k;\nSELECT pg_notify('ch', current_schema());\n",
            ),
            (
                "b.sql",
                "UPDATE kv SET doc = jsonb_set(doc, '{t}', to_jsonb(jsonb_typeof(doc))) WHERE k = :k;\n",
            ),
        ],
    );
    assert_eq!(o.programs, ["a", "b"]);
    assert!(o.robust);
}

/// A built-in inside a statement does not hide the statement's read: `c`
/// reads `doc` by key, then writes it from the value read (a lost
/// update: two instances both read, both write; PostgreSQL's READ
/// COMMITTED lets the second UPDATE overwrite the first's). Not robust.
/// Control: the same change as one UPDATE (`b` above) is robust.
#[test]
fn catalogue_functions_keep_reads() {
    let c = "SELECT jsonb_typeof(doc) INTO :t FROM kv WHERE k = :k;\nUPDATE kv SET doc = to_jsonb(:t) WHERE k = :k;\n";
    assert!(!verdict(KV, "", &[("c.sql", c)]).robust);
    let b = "UPDATE kv SET doc = to_jsonb(jsonb_typeof(doc)) WHERE k = :k;\n";
    assert!(verdict(KV, "", &[("c.sql", b)]).robust);
}

/// Built-ins that read tables through SQL given as text (or whole tables
/// by name, or large objects) are no pure values: a located error naming
/// why, also when written `pg_catalog.f`. `xpath` evaluates a path over
/// an XML value and reads no table: it loads.
#[test]
fn catalogue_rejects_functions_that_read_tables() {
    for (call, name) in [
        (
            "query_to_xml('SELECT * FROM kv', true, false, '')",
            "query_to_xml",
        ),
        (
            "pg_catalog.query_to_xml('SELECT * FROM kv', true, false, '')",
            "query_to_xml",
        ),
        ("table_to_xml('kv', true, false, '')", "table_to_xml"),
        ("lo_get(42)", "lo_get"),
        (
            "ts_stat('SELECT to_tsvector(doc::text) FROM kv')",
            "ts_stat",
        ),
    ] {
        let program = format!("UPDATE kv SET v = 1 WHERE k = :k;\nSELECT {call} INTO :x;\n");
        let e = error(KV, "", &[("p.sql", &program)]);
        assert!(e.contains("p.sql:2:"), "{e}");
        assert!(
            e.contains(&format!("cannot model a call of `{name}`")),
            "{e}"
        );
    }
    let x =
        "SELECT xpath('/a/text()', '<a>1</a>'::xml) INTO :x;\nUPDATE kv SET v = 1 WHERE k = :k;\n";
    assert!(verdict(KV, "", &[("p.sql", x)]).robust);
}

/// Volatility is PostgreSQL's: the API other passes use.
#[test]
fn catalogue_volatility() {
    use isolint::frontend::builtins::{volatility, Volatility};
    assert_eq!(volatility("now"), Some(Volatility::Stable));
    assert_eq!(volatility("nextval"), Some(Volatility::Volatile));
    assert_eq!(volatility("upper"), Some(Volatility::Immutable));
    assert_eq!(Volatility::parse("STABLE"), Some(Volatility::Stable));
}

// ---------------------------------------------------------------------
// 2. Every error of a run, not only the first.

const T: &str = "CREATE TABLE t (k INT PRIMARY KEY, v INT);\n";

/// Three programs broken in three ways the loader meets at different
/// stages (a syntax error, an unterminated IF, an unknown table found
/// while lowering) and one good program: one run reports all three, each
/// located, in file order.
fn three_broken() -> Vec<(&'static str, &'static str)> {
    vec![
        (
            "a.sql",
            "UPDATE t SET v = 1 WHERE k = :k;\nSELEC v FROM t;\n",
        ),
        ("b.sql", "UPDATE nosuch SET v = 1 WHERE k = :k;\n"),
        ("c.sql", "IF :x THEN\nUPDATE t SET v = 2 WHERE k = :k;\n"),
        ("d.sql", "UPDATE t SET v = 3 WHERE k = :k;\n"),
    ]
}

#[test]
fn every_error_of_a_run() {
    let e = error(T, "", &three_broken());
    assert!(e.starts_with("3 errors"), "{e}");
    let a = e
        .find("a.sql:2:1: PostgreSQL rejects this statement: syntax error")
        .expect(&e);
    let b = e.find("b.sql:1:8: unknown table `nosuch`").expect(&e);
    let c = e.find("c.sql:1:1: unterminated IF").expect(&e);
    assert!(a < b && b < c, "file order: {e}");
    // One broken file alone is reported as itself, as before.
    let e = error(
        T,
        "",
        &[("b.sql", "UPDATE nosuch SET v = 1 WHERE k = :k;\n")],
    );
    assert!(e.starts_with("/") || e.contains("b.sql:1:8"), "{e}");
    assert!(!e.contains("errors"), "{e}");
}

/// Routines: two broken PL/pgSQL routines of one file and a good one; a
/// caller of a broken routine adds no error of its own (the callee's is
/// the one to fix).
#[test]
fn every_broken_routine_of_a_file() {
    let routines = "CREATE FUNCTION good(k1 INT) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  UPDATE t SET v = 1 WHERE k = k1;
END $$;
CREATE FUNCTION bad1(k1 INT) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  UPDATE nosuch SET v = 1 WHERE k = k1;
END $$;
CREATE FUNCTION bad2(k1 INT) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF k1 > 0 THEN
    UPDATE t SET v = 2 WHERE k = k1;
END $$;
CREATE FUNCTION caller(k1 INT) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM bad2(k1);
END $$;
";
    let e = error(T, "", &[("r.sql", routines)]);
    assert!(e.starts_with("2 errors"), "{e}");
    assert!(e.contains("r.sql:7:"), "bad1's unknown table: {e}");
    assert!(e.contains("unknown table `nosuch`"), "{e}");
    assert!(e.contains("r.sql:13:"), "bad2's unterminated IF: {e}");
    assert!(!e.contains("call of `bad2`"), "{e}");
}

/// At most 50 are shown; the count says how many there were.
#[test]
fn errors_up_to_a_limit() {
    let names: Vec<String> = (0..60).map(|k| format!("p{k:02}.sql")).collect();
    let files: Vec<(&str, &str)> = names
        .iter()
        .map(|n| (n.as_str(), "UPDATE nosuch SET v = 1;\n"))
        .collect();
    let e = error(T, "", &files);
    assert!(e.starts_with("60 errors; the first 50 follow"), "{e}");
    assert_eq!(e.matches("unknown table `nosuch`").count(), 50);
}

/// The binary prints them all and exits 2.
#[test]
fn every_error_on_the_command_line() {
    let d = tempfile::tempdir().expect("tempdir");
    std::fs::write(d.path().join("schema.sql"), T).expect("write");
    std::fs::write(d.path().join("isolint.yaml"), "schema: schema.sql\n").expect("write");
    for (n, t) in three_broken() {
        std::fs::write(d.path().join(n), t).expect("write");
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_isolint"))
        .arg("check")
        .arg(d.path())
        .env("NO_COLOR", "1")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    for needle in ["3 errors", "a.sql:2:1", "b.sql:1:8", "c.sql:1:1"] {
        assert!(err.contains(needle), "{needle}: {err}");
    }
}

// ---------------------------------------------------------------------
// 3. Empty program files; `exclude:`.

/// An empty program file (or one of comments only) is a located error,
/// not an empty transaction: an empty transaction is robust, and calling
/// a workload robust because its extraction lost a program would be
/// wrong. Control: without the empty file, the workload loads.
#[test]
fn empty_program_file_is_an_error() {
    let good = ("d.sql", "UPDATE t SET v = 3 WHERE k = :k;\n");
    for empty in ["", "\n\n", "-- extracted from app.py\n"] {
        let e = error(T, "", &[good, ("e.sql", empty)]);
        assert!(e.contains("e.sql:1:1: "), "{e}");
        assert!(e.contains("holds no SQL statement"), "{e}");
        assert!(e.contains("exclude:"), "the hint names the way out: {e}");
    }
    assert_eq!(verdict(T, "", &[good]).programs, ["d"]);
    // Excluded, the empty file is not read.
    let o = verdict(T, "exclude: [e]\n", &[good, ("e.sql", "")]);
    assert_eq!(o.programs, ["d"]);
}

/// Routines with dynamic SQL (which isolint rejects) beside the entry
/// points: `exclude:` leaves them out unparsed. `programs:` alone does
/// not (every routine must still read), and an entry point that calls an
/// excluded routine is an error: the callee runs in its transaction.
#[test]
fn exclude_routines() {
    let routines = "CREATE FUNCTION entry(k1 INT) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  UPDATE t SET v = v + 1 WHERE k = k1;
END $$;
CREATE FUNCTION maintenance(tbl TEXT) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('DELETE FROM %I WHERE v < 0', tbl);
END $$;
CREATE FUNCTION uses_it(k1 INT) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM maintenance('t');
END $$;
";
    let files = [("r.sql", routines)];
    // Control: without `exclude:` and `programs:`, every routine is a
    // program and the dynamic SQL stops the run.
    let e = error(T, "", &files);
    assert!(e.contains("r.sql:7:"), "{e}");
    // With `programs:` alone, an error of a routine no program reaches is
    // held back (issue 22: dynamic SQL no entry point calls never stops a
    // run; tests/soundness_calls.rs).
    let o = verdict(T, "programs: [entry]\n", &files);
    assert_eq!(o.programs, ["entry"]);
    let o = verdict(
        T,
        "programs: [entry]\nexclude: [maintenance, uses_it]\n",
        &files,
    );
    assert_eq!(o.programs, ["entry"]);
    // One UPDATE by key: robust.
    assert!(o.robust);
    let e = error(T, "exclude: [maintenance]\n", &files);
    assert!(e.contains("call of `maintenance`, which `exclude:`"), "{e}");
    let e = error(T, "exclude: [maintenanse]\n", &files);
    assert!(e.contains("excludes `maintenanse`, but there is no"), "{e}");
    let e = error(T, "programs: [entry]\nexclude: [entry]\n", &files);
    assert!(e.contains("under both `programs:` and `exclude:`"), "{e}");
}

/// A `.sql` program file can be excluded by its stem: it is not read.
#[test]
fn exclude_program_files() {
    let files = [
        ("a.sql", "UPDATE t SET v = 1 WHERE k = :k;\n"),
        ("broken.sql", "SELEC 1;\n"),
    ];
    assert!(error(T, "", &files).contains("broken.sql:1:1"));
    assert_eq!(verdict(T, "exclude: [broken]\n", &files).programs, ["a"]);
}

// ---------------------------------------------------------------------
// 4. pgbench scripts as programs.

/// pgbench's tables (`pgbench -i`), written from its documentation.
const PGBENCH: &str = "CREATE TABLE pgbench_branches (bid INT PRIMARY KEY, bbalance INT, filler CHAR(88));
CREATE TABLE pgbench_tellers (tid INT PRIMARY KEY, bid INT, tbalance INT, filler CHAR(84));
CREATE TABLE pgbench_accounts (aid INT PRIMARY KEY, bid INT, abalance INT, filler CHAR(84));
CREATE TABLE pgbench_history (tid INT, bid INT, aid INT, delta INT, mtime TIMESTAMP, filler CHAR(22));
";

const SETS: &str = "\\set aid random(1, 100000 * :scale)
\\set bid random(1, 1 * :scale)
\\set tid random(1, 10 * :scale)
\\set delta random(-5000, 5000)
";

/// pgbench's "tpcb-like" script, after its documentation.
fn tpcb_like() -> String {
    format!(
        "{SETS}BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime)
  VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
"
    )
}

fn simple_update() -> String {
    format!(
        "{SETS}BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
"
    )
}

const SELECT_ONLY: &str = "\\set aid random(1, 100000 * :scale)
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
";

/// The three built-in scripts load as programs, and the workload is
/// robust. Reasoning (Section 5's model; PostgreSQL 15 READ COMMITTED):
/// every UPDATE is by primary key and reads the row it writes (a
/// read-modify-write PostgreSQL runs on the latest version, under the row
/// lock: no lost update, no counterflow dependency); the one plain read,
/// `SELECT abalance … WHERE aid = :aid`, reads the row the same
/// transaction just updated and still holds locked, so no other
/// transaction can write it between that read and the commit (the
/// same-tuple rule); the INSERT into pgbench_history conflicts with no
/// read (nothing reads history). A dangerous cycle needs a counterflow
/// (rw) dependency from a read that another transaction overwrites before
/// the reader commits: there is none, so tpcb-like, simple-update and
/// select-only are robust alone and together. The non-robust control is
/// `gset_lost_update` below. (Also run: `pgbench -c 8 -T 10` with
/// tpcb-like at READ COMMITTED on PostgreSQL 15, scale 1; afterwards
/// sum(abalance) = sum(tbalance) = sum(bbalance) = sum(history.delta).)
#[test]
fn pgbench_builtin_scripts() {
    let tpcb = tpcb_like();
    let simple = simple_update();
    let o = verdict(
        PGBENCH,
        "",
        &[
            ("tpcb-like.pgbench", &tpcb),
            ("simple-update.pgbench", &simple),
            ("select-only.pgbench", SELECT_ONLY),
        ],
    );
    assert_eq!(o.programs, ["select-only", "simple-update", "tpcb-like"]);
    assert!(o.robust, "{:?}", o.warnings);
    // A `.sql` file with meta-commands is a pgbench script too.
    let o = verdict(PGBENCH, "", &[("tpcb.sql", &tpcb)]);
    assert_eq!(o.programs, ["tpcb"]);
    assert!(o.robust);
}

/// A custom script that reads the balance into a variable (`\gset`) and
/// writes it back computed in the client: inside BEGIN … END this is a
/// lost update. Schedule run on PostgreSQL 15 (READ COMMITTED, two psql
/// sessions, aid 1 with abalance 0, delta 5 each): S1 SELECT (0), S2
/// SELECT (0), S1 UPDATE … = 5, S1 END, S2 UPDATE … = 5, S2 END →
/// abalance 5; either serial order gives 10. Not robust.
/// Controls: the same commands without BEGIN/END are two autocommit
/// transactions of one statement each (robust: each statement is
/// atomic, and pgbench's "transaction" is no database transaction); the
/// UPDATE first and the `\gset` read after it (the row is locked by then,
/// as in tpcb-like) is robust.
#[test]
fn gset_lost_update() {
    let body = "SELECT abalance FROM pgbench_accounts WHERE aid = :aid \\gset\n\
                UPDATE pgbench_accounts SET abalance = :abalance + :delta WHERE aid = :aid;\n";
    let tx = format!("{SETS}BEGIN;\n{body}END;\n");
    assert!(!verdict(PGBENCH, "", &[("rmw.pgbench", &tx)]).robust);
    let auto = format!("{SETS}{body}");
    let o = verdict(PGBENCH, "", &[("rmw.pgbench", &auto)]);
    assert_eq!(o.programs, ["rmw.1", "rmw.2"]);
    assert!(o.robust);
    let after = format!("{SETS}BEGIN;\nUPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;\nSELECT abalance FROM pgbench_accounts WHERE aid = :aid \\gset\nEND;\n");
    assert!(verdict(PGBENCH, "", &[("rmw.pgbench", &after)]).robust);
}

/// `\set` inside a transaction gives a fresh value: after it, `:aid` may
/// name another row. With the `\set` between the UPDATE and the SELECT,
/// two instances can write-skew: T1 updates x and reads y, T2 updates y
/// and reads x, each read before the other's commit (T1 →rw T2 →rw T1):
/// not robust. Control: without the `\set` (simple-update's shape) the
/// SELECT reads the row the UPDATE locked: robust. Taking the two `:aid`s
/// for one value would call the first one robust too.
#[test]
fn pgbench_set_inside_a_transaction_is_fresh() {
    let with_set = "\\set aid random(1, 10)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = :aid;
\\set aid random(1, 10)
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
END;
";
    assert!(!verdict(PGBENCH, "", &[("s.pgbench", with_set)]).robust);
    let without = with_set.replace("\\set aid random(1, 10)\nSELECT", "SELECT");
    assert!(verdict(PGBENCH, "", &[("s.pgbench", &without)]).robust);
}

/// `\if` inside a transaction is a branch (both ways); several
/// transactions in one script become programs `s.1`, `s.2`.
/// s.1 updates one account by key in either branch; s.2 reads one
/// account after updating a teller: no read of a row another transaction
/// can overwrite before s.2 commits … except the account s.2 reads, which
/// s.1 writes: s.2 →rw s.1 needs s.1 → s.2 for a cycle, and s.1 neither
/// reads nor writes tellers and writes accounts only (s.2 reads it once):
/// no cycle, robust. Control: s.1 also reads the teller s.2 writes
/// (before its own update), making the write skew s.1 →rw s.2 →rw s.1:
/// not robust.
#[test]
fn pgbench_branches_and_transactions() {
    let script = "\\set aid random(1, 10)
BEGIN;
\\if :aid > 5
UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = :aid;
\\else
UPDATE pgbench_accounts SET abalance = abalance - 1 WHERE aid = :aid;
\\endif
END;
\\sleep 10 ms
BEGIN;
UPDATE pgbench_tellers SET tbalance = tbalance + 1 WHERE tid = :tid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
COMMIT;
";
    let o = verdict(PGBENCH, "", &[("s.pgbench", script)]);
    assert_eq!(o.programs, ["s.1", "s.2"]);
    assert!(o.robust);
    let skew = script.replace(
        "\\else\nUPDATE",
        "\\else\nSELECT tbalance FROM pgbench_tellers WHERE tid = :tid;\nUPDATE",
    );
    assert_ne!(skew, script);
    assert!(!verdict(PGBENCH, "", &[("s.pgbench", &skew)]).robust);
}

/// Errors a pgbench script can have are located, and reported all at
/// once with the others of the run.
#[test]
fn pgbench_errors() {
    let e = error(
        PGBENCH,
        "",
        &[
            ("a.pgbench", "BEGIN;\nSELECT 1;\n"),
            ("b.pgbench", "\\set aid random(1, 10)\n"),
            (
                "c.pgbench",
                "SELECT abalance FROM pgbench_accounts WHERE aid = :aid\n\\sleep 1\n",
            ),
        ],
    );
    assert!(e.starts_with("3 errors"), "{e}");
    assert!(
        e.contains("a.pgbench:2:") && e.contains("ends inside a transaction"),
        "{e}"
    );
    assert!(
        e.contains("b.pgbench:1:1: ") && e.contains("holds no SQL statement"),
        "{e}"
    );
    assert!(
        e.contains("c.pgbench:1:1: ") && e.contains("without a terminating `;`"),
        "{e}"
    );
}

mod fuzz {
    use proptest::prelude::*;

    const FRAGMENTS: &[&str] = &[
        "\\set aid random(1, 10)\n",
        "\\set\n",
        "BEGIN;\n",
        "END;\n",
        "ROLLBACK;\n",
        "SELECT abalance FROM pgbench_accounts WHERE aid = :aid",
        "UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = :aid",
        ";\n",
        " \\gset p_\n",
        " \\aset\n",
        " \\; ",
        "\\if :aid > 1\n",
        "\\elif 2\n",
        "\\else\n",
        "\\endif\n",
        "\\sleep 1 ms\n",
        "\\shell echo\n",
        "\\setshell v echo 1\n",
        "\\startpipeline\n",
        "\\endpipeline\n",
        "\\bogus\n",
        ":'aid'",
        ":\"aid\"",
        ":Aid",
        "'",
        "\"",
        "$$",
        "(",
        ")",
        "-- c\n",
        "/*",
        "é",
        "\\",
        "\\\n",
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(
            std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(300),
        ))]
        /// Any sequence of script fragments: a verdict or a located error,
        /// never a panic.
        #[test]
        fn pgbench_reader_never_panics(parts in proptest::collection::vec(0..FRAGMENTS.len(), 0..24)) {
            let text: String = parts.iter().map(|&k| FRAGMENTS[k]).collect();
            let schema = isolint::model::error::SourceFile::new("schema.sql", super::PGBENCH);
            let script = isolint::model::error::SourceFile::new("s.pgbench", text);
            if let Err(e) = isolint::frontend::sql_dir::lower_texts(&schema, &[script]) {
                prop_assert!(!e.message.is_empty());
            }
        }
    }
}
