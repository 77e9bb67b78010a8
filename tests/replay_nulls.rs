//! Issue 23, item 5 (h23-null): replay binds NULLs PostgreSQL can type.
//! When a read found no row, the executor bound the INTO variable as an
//! untyped NULL; beside another untyped value (a made-up parameter whose
//! type PostgreSQL cannot infer from `bal = $1 - $2`) the statement
//! failed: `operator is not unique: unknown - unknown` (42725). Seen on
//! tests/replay_schemas.rs's HammerDB-like pay pair when a schedule took
//! the by-name path. Now an INTO that finds no row gives its variables
//! the result columns' types, and a statement PostgreSQL still cannot
//! type runs again with explicit types (src/replay/retype.rs). One
//! throwaway server per test (tests/common/postgres.rs).
#![cfg(feature = "postgres")]

use std::collections::BTreeMap;

use isolint::replay::executor::{query, Executor, Halt, Step};
use isolint::replay::value::Val;

#[path = "common/postgres.rs"]
mod postgres;
#[path = "common/replay.rs"]
mod replay;
#[path = "common/workdir.rs"]
mod workdir;
use workdir::dir as workload_dir;

/// acct's (id, bal) rows in id order.
type Balances = Vec<(i32, Option<i32>)>;

const ACCT: &str = "CREATE TABLE acct (id integer PRIMARY KEY, bal integer);\n";

/// Pay reads the balance (FOR UPDATE, so two Pays serialise), goes on
/// when there is no row (so the read is a predicate read over the key),
/// and writes `b - amt`. `amt` only meets `b` in `$1 - $2`: PostgreSQL
/// infers no type for it, so replay makes it up untyped.
const PAY: &str = "SELECT bal INTO :b FROM acct WHERE id = :k FOR UPDATE;
IF NOT FOUND THEN
  :missing := 1;
END IF;
UPDATE acct SET bal = :b - :amt WHERE id = :k;
";
const OPEN: &str = "INSERT INTO acct (id, bal) VALUES (:k, 0);\n";

/// `isolint replay DIR --postgres URL --level LEVEL`: its first witness.
fn first_witness(dir: &std::path::Path, url: &str, level: &str) -> serde_json::Value {
    let (code, v, err) =
        replay::isolint_json("replay", dir, &["--postgres", url, "--level", level]);
    assert!(code == 0 || code == 1, "{code} {v} {err}");
    v["witnesses"][0].clone()
}

/// Pay's read finds no row, Open inserts it and commits, Pay's UPDATE
/// (a new snapshot at READ COMMITTED) writes the new row with `b - amt`
/// = NULL. Before the fix the UPDATE stopped on 42725 and nothing was
/// said about the schedule. Run by hand on PostgreSQL 15.20 (two psql
/// sessions, acct (2, 3), (4, 5)): T1 BEGIN; T2 BEGIN; T1 INSERT (1, 0);
/// T2 SELECT bal … WHERE id = 1 FOR UPDATE → 0 rows; T1 COMMIT; T2
/// UPDATE acct SET bal = NULL::integer - 6 WHERE id = 1 → UPDATE 1; T2
/// COMMIT: acct 1 has bal NULL and Pay read nothing. Serially Open, Pay
/// reads 0 and leaves −6; Pay, Open reads nothing and leaves 0: not
/// serializable. The same schedule at REPEATABLE READ (by hand: the
/// UPDATE does not see the row inserted after Pay's snapshot, UPDATE 0,
/// bal 0) equals Pay, Open: not reproduced, and no program stops.
#[test]
fn empty_read_then_update_of_the_inserted_row_is_reproduced() {
    let Some(s) = postgres::server() else { return };
    let d = workload_dir(ACCT, "", &[("Pay.sql", PAY), ("Open.sql", OPEN)]);
    let w = first_witness(d.path(), &s.conninfo(), "read-committed");
    let trace = replay::strings(&w, "trace").join("\n");
    assert_eq!(w["reproduced"], true, "{w}");
    assert!(
        trace.contains("FOR UPDATE → 0 row(s)") && trace.contains(":amt WHERE id = :k → 1 row"),
        "the read found nothing, the UPDATE wrote the new row: {trace}"
    );
    assert!(!w.to_string().contains("42725"), "{w}");

    let w = first_witness(d.path(), &s.conninfo(), "repeatable-read");
    assert_eq!(w["replayed"], true, "{w}");
    assert_ne!(w["reproduced"], true, "{w}");
    assert_eq!(w["stopped"], serde_json::json!([]), "{w}");
    let why = w["why_not"].to_string();
    assert!(why.contains("equals the serial order"), "{why}");
}

/// Control, one line away: the UPDATE also asks `:b IS NOT NULL`, so
/// after the empty read it writes nothing (by hand on 15.20, the same
/// schedule at READ COMMITTED: UPDATE 0, acct 1 keeps bal 0 — Pay, Open's
/// outcome). Replay must run it (the NULL typed: before, `$3 IS NOT
/// NULL` of an untyped NULL could not be typed either) and say it is not
/// reproduced.
#[test]
fn control_update_guarded_by_is_not_null_is_not_reproduced() {
    let Some(s) = postgres::server() else { return };
    let guarded = PAY.replace("WHERE id = :k;\n", "WHERE id = :k AND :b IS NOT NULL;\n");
    assert_ne!(guarded, PAY);
    let d = workload_dir(ACCT, "", &[("Pay.sql", &guarded), ("Open.sql", OPEN)]);
    let (code, v, err) = replay::isolint_json("replay", d.path(), &["--postgres", &s.conninfo()]);
    assert!(code == 0 || code == 1, "{code} {v} {err}");
    for w in v["witnesses"].as_array().cloned().unwrap_or_default() {
        assert_ne!(w["reproduced"], true, "{w}");
        assert_eq!(w["stopped"], serde_json::json!([]), "{w}");
        assert!(!w.to_string().contains("could not determine"), "{w}");
    }
}

/// tests/replay_schemas.rs's HammerDB-like `pay` (parameters `ALIAS FOR
/// $n`, a by-name path), here with a `DECLARE`d variable `c` no
/// statement assigns.
const PAY_ROUTINE: &str = "
CREATE FUNCTION pay(integer, integer, text, integer) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  p_id_in ALIAS FOR $1;
  amt ALIAS FOR $2;
  p_name ALIAS FOR $3;
  byname ALIAS FOR $4;
  p_id integer;
  b integer;
  c integer;
BEGIN
  IF byname = 1 THEN
    SELECT id INTO p_id FROM acct WHERE name = p_name;
  ELSE
    p_id := p_id_in;
  END IF;
  SELECT bal INTO b FROM acct WHERE id = p_id;
  UPDATE acct SET bal = b - amt WHERE id = p_id;
  IF c - amt IS NULL THEN
    UPDATE acct SET bal = coalesce(c - amt, bal * 10) WHERE id = p_id_in;
  END IF;
END $$;
";

/// Runs `pay` with the executor on `c` (in a transaction rolled back
/// after), its four `$n` made up untyped as replay makes them up when
/// PostgreSQL infers no type: how it ended and the balances after it.
fn run_pay(c: &mut ::postgres::Client, args: [&str; 4]) -> (Result<(), Halt>, Balances) {
    let schema = "CREATE TABLE acct (id integer PRIMARY KEY, name text NOT NULL, bal integer);\n";
    let d = workload_dir(
        schema,
        "programs: [pay]\n",
        &[("routines.sql", PAY_ROUTINE)],
    );
    let l = isolint::frontend::load(d.path(), None).expect("load");
    let sources = l.sources.as_ref().expect("SQL sources");
    let p = l.workload.program("pay").expect("the program");
    let params: BTreeMap<String, Val> = args
        .iter()
        .enumerate()
        .map(|(i, a)| (format!("${}", i + 1), Val::untyped(*a)))
        .collect();
    c.batch_execute("BEGIN").expect("begin");
    let mut e = Executor::new(&sources.programs[p], params);
    let end = loop {
        match e.step(c) {
            Ok(Step::Ran(_)) => {}
            Ok(Step::Finished) => break Ok(()),
            Ok(Step::RolledBack(why)) => panic!("pay rolled back: {why}"),
            Err(h) => break Err(h),
        }
    };
    let after = balances(c);
    c.batch_execute("ROLLBACK").expect("rollback");
    (end, after)
}

fn balances(c: &mut ::postgres::Client) -> Balances {
    c.query("SELECT id, bal FROM acct ORDER BY id", &[])
        .expect("balances")
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect()
}

/// PostgreSQL's own call of `pay` with the same arguments, on the same
/// data (in a transaction rolled back after): the balances it leaves.
fn pay_on_postgres(c: &mut ::postgres::Client, args: [&str; 4]) -> Balances {
    c.batch_execute("BEGIN").expect("begin");
    let call = format!(
        "SELECT pay({}, {}, '{}', {})",
        args[0], args[1], args[2], args[3]
    );
    c.batch_execute(&call).expect("PostgreSQL's own call");
    let after = balances(c);
    c.batch_execute("ROLLBACK").expect("rollback");
    after
}

/// The executor runs `pay` as PostgreSQL runs it, on acct (1, 'ann', 7),
/// (2, 'bob', 9): by id (b = 7, bal 7 − 5 = 2), by a name with no row
/// (p_id NULL, b NULL: the UPDATE of `b - amt` matches nothing — the
/// case that stopped on `operator is not unique: unknown - unknown`), by
/// a name with a row. Each time `c` (declared, never assigned) is NULL,
/// so `c - amt IS NULL` holds and acct `$1` gets `coalesce(c - amt,
/// bal * 10)` = bal × 10 (an untyped NULL beside an untyped `amt`, in a
/// condition and in a statement: the retyping). The expected balances
/// are PostgreSQL's own call's, not the executor's.
#[test]
fn pay_routine_runs_as_postgresql_runs_it_when_a_read_finds_nothing() {
    let Some(s) = postgres::server() else { return };
    let mut c = s.connect().expect("connect");
    c.batch_execute(&format!(
        "CREATE TABLE acct (id integer PRIMARY KEY, name text NOT NULL, bal integer);
         INSERT INTO acct VALUES (1, 'ann', 7), (2, 'bob', 9);
         {PAY_ROUTINE}"
    ))
    .expect("setup");
    for args in [
        ["1", "5", "ann", "0"],
        ["1", "5", "nobody", "1"],
        ["2", "5", "ann", "1"],
    ] {
        let want = pay_on_postgres(&mut c, args);
        let (end, got) = run_pay(&mut c, args);
        assert_eq!(end, Ok(()), "{args:?}");
        assert_eq!(got, want, "{args:?}");
    }
    // What PostgreSQL gave, written out (by hand with psql on 15.20 the
    // same): by id, acct 1 is 2 then ×10; by an absent name only ×10.
    assert_eq!(
        pay_on_postgres(&mut c, ["1", "5", "ann", "0"]),
        vec![(1, Some(20)), (2, Some(9))]
    );
    assert_eq!(
        pay_on_postgres(&mut c, ["1", "5", "nobody", "1"]),
        vec![(1, Some(70)), (2, Some(9))]
    );
    let (rows, _) = query(&mut c, "SELECT count(*) FROM acct", &[]).expect("count");
    assert_eq!(rows[0].1[0].text.as_deref(), Some("2"));
}

/// The NULLs an empty `SELECT … INTO` leaves have the columns' types, as
/// PL/pgSQL's variables have their declared types (`v acct.bal%TYPE`):
/// `b` integer, `n` text — not "unknown", which PostgreSQL cannot type
/// beside another unknown. A read that finds the row gives its values.
#[test]
fn empty_into_gives_nulls_of_the_column_types() {
    use ::postgres::types::Type;
    let Some(s) = postgres::server() else { return };
    let mut c = s.connect().expect("connect");
    let schema = "CREATE TABLE acct (id integer PRIMARY KEY, name text NOT NULL, bal integer);\n";
    c.batch_execute(&format!("{schema} INSERT INTO acct VALUES (1, 'ann', 7);"))
        .expect("setup");
    let read = "SELECT bal, name INTO :b, :n FROM acct WHERE id = :k;\n";
    let d = workload_dir(schema, "", &[("Read.sql", read)]);
    let l = isolint::frontend::load(d.path(), None).expect("load");
    let sources = l.sources.as_ref().expect("SQL sources");
    for (k, want_b, want_n) in [
        ("2", Type::INT4.oid(), Type::TEXT.oid()),
        ("1", Type::INT4.oid(), Type::TEXT.oid()),
    ] {
        let params = BTreeMap::from([("k".to_string(), Val::untyped(k))]);
        let mut e = Executor::new(&sources.programs[0], params);
        loop {
            match e.step(&mut c) {
                Ok(Step::Ran(_)) => {}
                Ok(Step::Finished) => break,
                other => panic!("k = {k}: {other:?}"),
            }
        }
        let (b, n) = (&e.vars["b"], &e.vars["n"]);
        assert_eq!((b.oid, n.oid), (want_b, want_n), "k = {k}: {b:?} {n:?}");
        if k == "1" {
            assert_eq!(
                (b.text.as_deref(), n.text.as_deref()),
                (Some("7"), Some("ann"))
            );
        } else {
            assert_eq!((b.text.as_deref(), n.text.as_deref()), (None, None));
        }
    }
}

/// A routine's parameters take their declared types (what PostgreSQL's
/// own call converts its arguments to), by position and by name — only
/// when the name is one routine (not overloaded) and every parameter of
/// the program is one of its own. Expected types: the DDL below.
#[test]
fn routine_parameters_take_their_declared_types() {
    use ::postgres::types::Type;
    use isolint::replay::retype::declared_types;
    let Some(s) = postgres::server() else { return };
    let mut c = s.connect().expect("connect");
    c.batch_execute(
        "CREATE FUNCTION pay(integer, smallint, text, integer) RETURNS void LANGUAGE sql AS 'SELECT';
         CREATE FUNCTION mv(p_id int, p_amt numeric) RETURNS void LANGUAGE sql AS 'SELECT';",
    )
    .expect("setup");
    let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let pay = declared_types(&mut c, "pay", &names(&["$1", "$2", "$3", "$4"]));
    let got: Vec<(&str, &Type)> = pay.iter().map(|(k, t)| (k.as_str(), t)).collect();
    assert_eq!(
        got,
        vec![
            ("$1", &Type::INT4),
            ("$2", &Type::INT2),
            ("$3", &Type::TEXT),
            ("$4", &Type::INT4)
        ]
    );
    let mv = declared_types(&mut c, "mv", &names(&["p_id", "p_amt"]));
    assert_eq!(mv.get("p_amt"), Some(&Type::NUMERIC), "{mv:?}");
    assert_eq!(mv.get("$1"), Some(&Type::INT4), "{mv:?}");
    // Not the routine's own parameters: a program merely named like it.
    assert!(declared_types(&mut c, "mv", &names(&["p_id", "k"])).is_empty());
    assert!(declared_types(&mut c, "nosuch", &names(&["$1"])).is_empty());
    // Overloaded: which one runs is not known.
    c.batch_execute("CREATE FUNCTION mv(p_id text) RETURNS void LANGUAGE sql AS 'SELECT';")
        .expect("overload");
    assert!(declared_types(&mut c, "mv", &names(&["p_id"])).is_empty());
}
