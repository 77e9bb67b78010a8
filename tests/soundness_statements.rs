//! Soundness of the order of work inside one statement, and of upserts on
//! a UNIQUE column that is not the key (issue 21, classes 2 and 3).
//!
//! Each not-robust workload here was run on PostgreSQL 15 at READ
//! COMMITTED with two psql sessions fed step by step (the schedule is in
//! the test's comment), and its outcome compared with both serial orders.
//! Each has a robust control (a one-line variant), so a test that always
//! said "not robust" would fail.

#[path = "common/workdir.rs"]
mod workdir;

fn run(schema: &str, files: &[(&str, &str)]) -> Result<bool, String> {
    let l = workdir::load(schema, "", files).map_err(|e| e.message.clone())?;
    Ok(workdir::robust_of(&l))
}

fn lower(schema: &str, files: &[(&str, &str)]) -> isolint::model::btp::Workload {
    match workdir::load(schema, "", files) {
        Ok(l) => l.workload,
        Err(e) => panic!("expected BTPs, got: {}", e.message),
    }
}

fn robust(schema: &str, files: &[(&str, &str)]) -> bool {
    match run(schema, files) {
        Ok(r) => r,
        Err(e) => panic!("expected a verdict, got: {e}"),
    }
}

/// acct(id PK, bal), other(id PK, v).
const TWO: &str = "CREATE TABLE acct (id INT PRIMARY KEY, bal INT);
CREATE TABLE other (id INT PRIMARY KEY, v INT);
";

/// Item 1: `WITH w AS (UPDATE …) SELECT … FROM other`. The SELECT reads
/// `other` on the snapshot taken when the statement started, before the
/// UPDATE waited for a row lock. Confirmed on PostgreSQL 15 at READ
/// COMMITTED from acct(1, bal 1), other(1, v 0):
/// T2 `BEGIN; UPDATE acct SET bal = bal * 10 WHERE id = 1;`
/// T1 `BEGIN; WITH w AS (UPDATE acct SET bal = bal + 1 WHERE id = 1
/// RETURNING bal) SELECT v FROM other WHERE id = 1;` (blocks)
/// T2 `UPDATE other SET v = 1 WHERE id = 1; COMMIT;`
/// T1 returns v = 0; `COMMIT;` final bal = 11.
/// Serial T1;T2: v 0, bal 20; T2;T1: v 1, bal 11. Neither matches.
#[test]
fn data_modifying_cte_reads_before_its_write() {
    let p1 = "WITH w AS (UPDATE acct SET bal = bal + 1 WHERE id = :a RETURNING bal)\nSELECT v INTO :v FROM other WHERE id = :o;\n";
    let p2 =
        "UPDATE acct SET bal = bal * 10 WHERE id = :a;\nUPDATE other SET v = 1 WHERE id = :o;\n";
    assert!(!robust(TWO, &[("P1.sql", p1), ("P2.sql", p2)]));
    // Control: the same two statements written one after the other read
    // `other` after the UPDATE took the row lock (T2's UPDATE of acct then
    // waits for T1's commit): robust.
    let p1 = "UPDATE acct SET bal = bal + 1 WHERE id = :a;\nSELECT v INTO :v FROM other WHERE id = :o;\n";
    assert!(robust(TWO, &[("P1.sql", p1), ("P2.sql", p2)]));
}

/// The BTP order of a WITH: every part's reads on the snapshot (the
/// UPDATE's scan of row :a, the SELECT CTE (a CTE may return no row:
/// predicate-based); reading r reads no table), then the
/// write. The two parts' order as written does not matter.
#[test]
fn with_lowers_snapshot_reads_before_writes() {
    for p1 in [
        "WITH w AS (UPDATE acct SET bal = bal + 1 WHERE id = :a RETURNING bal), r AS (SELECT v FROM other WHERE id = :o)\nSELECT v INTO :v FROM r;\n",
        "WITH r AS (SELECT v FROM other WHERE id = :o), w AS (UPDATE acct SET bal = bal + 1 WHERE id = :a RETURNING bal)\nSELECT v INTO :v FROM r;\n",
    ] {
        let w = lower(TWO, &[("P1.sql", p1)]);
        let p = &w.programs[0];
        let kinds: Vec<String> = p
            .statements
            .iter()
            .map(|s| format!("{} {}", s.ty.name(), w.schema.rel(s.rel).name))
            .collect();
        let first = if p1.starts_with("WITH w") {
            ["key sel acct", "pred sel other"]
        } else {
            ["pred sel other", "key sel acct"]
        };
        assert_eq!(kinds[..2], first, "{p1}");
        assert_eq!(kinds[2], "key upd acct", "{p1}");
        assert_eq!(isolint::report::body_text(p, &p.body), "q1; q2; q3");
        // Beside P2 of the test above: not robust either way.
        let p2 = "UPDATE acct SET bal = bal * 10 WHERE id = :a;\nUPDATE other SET v = 1 WHERE id = :o;\n";
        assert!(!robust(TWO, &[("P1.sql", p1), ("P2.sql", p2)]), "{p1}");
    }
}

/// t(id PK, x), u(id PK, y).
const TU: &str = "CREATE TABLE t (id INT PRIMARY KEY, x INT);
CREATE TABLE u (id INT PRIMARY KEY, y INT);
";

/// Item 2: `FOR UPDATE OF t` over a join locks only t's rows; after the
/// lock wait PostgreSQL re-reads t (EvalPlanQual) but keeps u as of the
/// snapshot. Confirmed on PostgreSQL 15 at READ COMMITTED from t(1, x 0),
/// u(1, y 0):
/// T2 `BEGIN; UPDATE t SET x = 1 WHERE id = 1;`
/// T1 `BEGIN; SELECT t.x, u.y FROM t, u WHERE t.id = 1 AND u.id = 1 FOR
/// UPDATE OF t;` (blocks)
/// T2 `UPDATE u SET y = 1 WHERE id = 1; COMMIT;`
/// T1 returns x 1, y 0 (also with `FROM t JOIN u ON u.id = t.id WHERE
/// t.id = 1`). Serial orders return (0, 0) or (1, 1). With plain `FOR
/// UPDATE` (both rows locked, both re-read) the same schedule returns
/// (1, 1).
#[test]
fn for_update_of_one_table_reads_the_other_first() {
    let p2 = "UPDATE t SET x = 1 WHERE id = :a;\nUPDATE u SET y = 1 WHERE id = :b;\n";
    for p1 in [
        "SELECT t.x, u.y INTO :x, :y FROM t, u WHERE t.id = :a AND u.id = :b FOR UPDATE OF t;\n",
        "SELECT t.x, u.y INTO :x, :y FROM t JOIN u ON u.id = t.id WHERE t.id = :a FOR UPDATE OF t;\n",
        "SELECT t.x, u.y INTO :x, :y FROM u, t WHERE t.id = :a AND u.id = :b FOR UPDATE OF t;\n",
    ] {
        assert!(!robust(TU, &[("P1.sql", p1), ("P2.sql", p2)]), "{p1}");
    }
    // Control: FOR UPDATE locks both tables; both reads are locking reads
    // (docs/locking-reads.md), which no counterflow edge leaves.
    let p1 = "SELECT t.x, u.y INTO :x, :y FROM t, u WHERE t.id = :a AND u.id = :b FOR UPDATE;\n";
    assert!(robust(TU, &[("P1.sql", p1), ("P2.sql", p2)]));
}

/// f reads u; VOLATILE is PostgreSQL's default, g is the same body
/// declared STABLE; reset_u writes u. The `pg_sleep` only gives the other
/// session time to run (a built-in: no read).
const FUNC: &str = "CREATE TABLE t (id INT PRIMARY KEY, x INT);
CREATE TABLE u (id INT PRIMARY KEY, y INT);
CREATE FUNCTION f(k INT) RETURNS INT LANGUAGE sql AS $$ SELECT pg_sleep(3); SELECT y FROM u WHERE id = k $$;
CREATE FUNCTION g(k INT) RETURNS INT LANGUAGE sql STABLE AS $$ SELECT pg_sleep(3); SELECT y FROM u WHERE id = k $$;
CREATE FUNCTION reset_u(k INT) RETURNS INT LANGUAGE sql AS $$ SELECT pg_sleep(3); UPDATE u SET y = 0 WHERE id = k RETURNING id $$;
";

/// Item 3: a VOLATILE function called per row runs its statements, each
/// on a fresh snapshot, after the outer statement read its rows.
/// Confirmed on PostgreSQL 15 at READ COMMITTED from t(1, x 0),
/// u(1, y 0) with FUNC's f:
/// T1 `BEGIN; SELECT t.x, f(t.id) FROM t WHERE t.id = 1;` (sleeps in f)
/// T2 `BEGIN; UPDATE t SET x = 1 WHERE id = 1; UPDATE u SET y = 1 WHERE
/// id = 1; COMMIT;`
/// T1 returns x 0, f 1; `COMMIT;`. Serial orders return (0, 0) or (1, 1).
/// With the STABLE g the same schedule returns (0, 0): g reads the
/// caller's snapshot. With reset_u (u(1) = y 5 at the start) T1 returns
/// x 0 and the final y is 0; serial orders give (x 0, y 1) or (x 1, y 0).
#[test]
fn volatile_function_reads_after_the_statement() {
    let p2 = "UPDATE t SET x = 1 WHERE id = :a;\nUPDATE u SET y = 1 WHERE id = :b;\n";
    for p1 in [
        "SELECT t.x, f(t.id) INTO :x, :y FROM t WHERE t.id = :a;\n",
        "SELECT t.x, reset_u(t.id) INTO :x, :y FROM t WHERE t.id = :a;\n",
    ] {
        assert!(!robust(FUNC, &[("P1.sql", p1), ("P2.sql", p2)]), "{p1}");
    }
    // Where the bodies go (PostgreSQL's manual, "Function Volatility
    // Categories": a VOLATILE function takes a fresh snapshot for each of
    // its queries, STABLE and IMMUTABLE ones use the calling query's):
    // f's read of u after the read of t, g's with the snapshot reads,
    // before it. Per row: a loop.
    let order = |p1: &str| {
        let w = lower(FUNC, &[("P1.sql", p1)]);
        let p = &w.programs[0];
        let rels: Vec<String> = p
            .statements
            .iter()
            .map(|s| w.schema.rel(s.rel).name.clone())
            .collect();
        (rels, isolint::report::body_text(p, &p.body))
    };
    let (rels, body) = order("SELECT t.x, f(t.id) INTO :x, :y FROM t WHERE t.id = :a;\n");
    assert_eq!(
        (rels.join(" "), body.as_str()),
        ("t u".into(), "q1; loop(q2)")
    );
    let (rels, body) = order("SELECT t.x, g(t.id) INTO :x, :y FROM t WHERE t.id = :a;\n");
    assert_eq!(
        (rels.join(" "), body.as_str()),
        ("u t".into(), "loop(q1); q2")
    );
    // An UPDATE: its scan on the snapshot (row :a exists), the body, then
    // the write (after a lock wait PostgreSQL evaluates the call again,
    // still before the write).
    let (rels, body) = order("UPDATE t SET x = f(id) WHERE id = :a;\n");
    assert_eq!(
        (rels.join(" "), body.as_str()),
        ("t u t".into(), "q1; loop(q2); q3")
    );

    // Control: the writing function called by an UPDATE of t. reset_u
    // locks u(k) before the UPDATE locks t(k); T2 locks t then u. Either
    // one waits for the other's commit on both rows, or they deadlock:
    // robust.
    let p1 = "UPDATE t SET x = reset_u(id) WHERE id = :a;\n";
    assert!(robust(FUNC, &[("P1.sql", p1), ("P2.sql", p2)]));
}

/// users(id PK, email UNIQUE, name, visits), total(id PK, s).
const USERS: &str =
    "CREATE TABLE users (id INT PRIMARY KEY, email TEXT UNIQUE, name TEXT, visits INT);
CREATE TABLE total (id INT PRIMARY KEY, s INT);
";

/// The same with the uniqueness from `CREATE UNIQUE INDEX`.
const USERS_INDEX: &str =
    "CREATE TABLE users (id INT PRIMARY KEY, email TEXT, name TEXT, visits INT);
CREATE UNIQUE INDEX users_email ON users (email);
CREATE TABLE total (id INT PRIMARY KEY, s INT);
";

/// Item 4 (class 3): `ON CONFLICT (email) DO UPDATE` updates the row that
/// holds the email, not the row whose key the INSERT names: a later read
/// of that key has no same-tuple protection. Confirmed on PostgreSQL 15
/// at READ COMMITTED from users (1, 'a', 'n1', 0), (2, 'b', 'n2', 0),
/// total (1, 0):
/// T1 `BEGIN; INSERT INTO users VALUES (2, 'a', 'x', 0) ON CONFLICT
/// (email) DO UPDATE SET visits = users.visits + 1;` (updates row 1)
/// `SELECT name FROM users WHERE id = 2;` → 'n2'
/// T2 `BEGIN; UPDATE users SET name = 'y' WHERE id = 2; UPDATE total SET
/// s = 2 WHERE id = 1; COMMIT;`
/// T1 `UPDATE total SET s = 1 WHERE id = 1; COMMIT;` final s = 1.
/// Serial T1;T2: T1 reads 'n2', s 2; T2;T1: 'y', s 1. Neither matches.
#[test]
fn upsert_on_unique_column_updates_the_conflicting_row() {
    let p2 = "UPDATE users SET name = 'y' WHERE id = :k;\nUPDATE total SET s = 2 WHERE id = 1;\n";
    let p1 = |target: &str| {
        format!("INSERT INTO users VALUES (:id, :e, 'x', 0) ON CONFLICT ({target}) DO UPDATE SET visits = users.visits + 1;\nSELECT name INTO :n FROM users WHERE id = :id;\nUPDATE total SET s = 1 WHERE id = 1;\n")
    };
    for schema in [USERS, USERS_INDEX] {
        assert!(!robust(schema, &[("P1.sql", &p1("email")), ("P2.sql", p2)]));
        // Control: ON CONFLICT (id) updates row :id itself, and holds its
        // lock; T2's update of the row waits for T1's commit.
        assert!(robust(schema, &[("P1.sql", &p1("id")), ("P2.sql", p2)]));
    }
    // The action is a key-based update of the row with that email (email
    // is a key: no statement assigns it), pinned by the email only.
    let w = lower(USERS, &[("P1.sql", &p1("email"))]);
    let p = &w.programs[0];
    let alt = &p.statements[1];
    assert_eq!(
        (alt.ty.name(), w.schema.rel(alt.rel).name.as_str()),
        ("key upd", "users")
    );
    // The later read of row :id is the same tuple as the insert (q1), in
    // the branch that inserted; never the same as the update (q2).
    assert!(
        p.constraints.iter().all(|c| c.parent != 1),
        "{:?}",
        p.constraints
    );
}

/// `ON CONFLICT (email) DO NOTHING` (and without a target, and `ON
/// CONFLICT ON CONSTRAINT`) reads the unique column: a concurrent change
/// of a row's email decides between the insert and nothing. Confirmed on
/// PostgreSQL 15 at READ COMMITTED from users (1, 'a', 'n1', 0),
/// (2, 'b', 'n2', 0), total (1, 0), for each of the three forms and with
/// the uniqueness from `CREATE UNIQUE INDEX`:
/// T1 `BEGIN; INSERT INTO users (id, email) VALUES (3, 'a') ON CONFLICT
/// (email) DO NOTHING;` (row 1 holds 'a': nothing)
/// T2 `BEGIN; UPDATE users SET email = 'z' WHERE id = 1; UPDATE total SET
/// s = 2 WHERE id = 1; COMMIT;`
/// T1 `UPDATE total SET s = 1 WHERE id = 1; COMMIT;`
/// Final: no row 3, s = 1. Serial T1;T2: no row 3, s 2; T2;T1: row 3
/// inserted, s 1. Neither matches.
#[test]
fn upsert_do_nothing_reads_the_unique_column() {
    let p2 = "UPDATE users SET email = :f WHERE id = :k;\nUPDATE total SET s = 2 WHERE id = 1;\n";
    for schema in [USERS, USERS_INDEX] {
        for target in ["(email) ", "", "ON CONSTRAINT users_email_key "] {
            let p1 = format!("INSERT INTO users (id, email) VALUES (:id, :e) ON CONFLICT {target}DO NOTHING;\nUPDATE total SET s = 1 WHERE id = 1;\n");
            assert!(!robust(schema, &[("P1.sql", &p1), ("P2.sql", p2)]), "{p1}");
            // Control: T2 changes the name, which no conflict check reads.
            // (isolint does not record constraint names: ON CONSTRAINT
            // reads every column, so it has no such control.)
            if !target.starts_with("ON CONSTRAINT") {
                let p2 = p2.replace("email = :f", "name = :f");
                assert!(robust(schema, &[("P1.sql", &p1), ("P2.sql", &p2)]), "{p1}");
            }
        }
    }
}

/// A plain INSERT into a table with a UNIQUE column succeeds only if no
/// row holds its value: when a program can change (or delete) such a row,
/// that is a read. Confirmed on PostgreSQL 15 at READ COMMITTED from users
/// (1, 'a', …), total (1, 0):
/// T1 `BEGIN; SELECT s FROM total WHERE id = 1;` → 0
/// T2 `BEGIN; UPDATE users SET email = 'z' WHERE id = 1; UPDATE total SET
/// s = 2 WHERE id = 1; COMMIT;`
/// T1 `INSERT INTO users (id, email) VALUES (3, 'a'); COMMIT;` succeeds.
/// Serial T1;T2: T1's insert fails ('a' taken); T2;T1: T1 reads 2.
#[test]
fn insert_reads_unique_columns_that_can_change() {
    let p1 = "SELECT s INTO :s FROM total WHERE id = 1;\nINSERT INTO users (id, email) VALUES (:id, :e);\n";
    let p2 = "UPDATE users SET email = :f WHERE id = :k;\nUPDATE total SET s = 2 WHERE id = 1;\n";
    assert!(!robust(USERS, &[("P1.sql", p1), ("P2.sql", p2)]));
    // Control: no program changes an email or deletes a user; two
    // concurrent inserts of one email abort one of them.
    let p2 = "UPDATE users SET name = :f WHERE id = :k;\nUPDATE total SET s = 2 WHERE id = 1;\n";
    assert!(robust(USERS, &[("P1.sql", p1), ("P2.sql", p2)]));
    // Registrations alone stay robust (no check is needed).
    let reg = "INSERT INTO users (id, email) VALUES (:id, :e) ON CONFLICT (email) DO NOTHING;\n";
    assert!(robust(USERS, &[("R.sql", reg)]));
}
