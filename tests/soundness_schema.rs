//! Soundness of the schema reader (issue 21, class 1): schema objects that
//! read or write on a statement's behalf, and the rule that the DDL reader
//! fails closed.
//!
//! The not-robust cases were run on PostgreSQL 15.20 at READ COMMITTED with
//! two psql sessions fed step by step (the schedule is in each test's
//! comment), and the outcome compared with both serial orders. Each has a
//! one-line variant that must stay robust, so a reader that made every
//! workload "not robust" would fail.

#[path = "common/workdir.rs"]
mod workdir;

use isolint::analysis::analyze;
use isolint::analysis::graph::Settings;
use isolint::analysis::robustness::Method;
use isolint::model::btp::StmtType;

fn load(schema: &str, files: &[(&str, &str)]) -> Result<isolint::frontend::Loaded, String> {
    workdir::load(schema, "", files).map_err(|e| e.message.clone())
}

fn robust(schema: &str, files: &[(&str, &str)]) -> bool {
    match load(schema, files) {
        Ok(l) => analyze(&l.workload, Settings::default(), Method::TypeII, false).robust,
        Err(e) => panic!("expected a verdict, got: {e}"),
    }
}

fn error(schema: &str, files: &[(&str, &str)]) -> String {
    match load(schema, files) {
        Ok(_) => panic!("expected an error for:\n{schema}"),
        Err(e) => e,
    }
}

/// The schema's error, with a program that touches nothing of it.
fn schema_error(schema: &str) -> String {
    error(schema, &[("P.sql", "SELECT 1 FROM t0 WHERE id = :a;\n")])
}

/// (type, relation name) of every statement of program `name`.
fn statements(l: &isolint::frontend::Loaded, name: &str) -> Vec<(StmtType, String)> {
    let w = &l.workload;
    let p = w.programs.iter().find(|p| p.name == name).expect("program");
    p.statements
        .iter()
        .map(|s| (s.ty, w.schema.rel(s.rel).name.clone()))
        .collect()
}

// ---- DEFAULT, CHECK and domain CHECK expressions that call functions ----

const MEMBERS: &str = "CREATE TABLE t0 (id INT PRIMARY KEY);
CREATE TABLE members (id INT PRIMARY KEY, grp INT);
CREATE FUNCTION under_limit(g INT) RETURNS BOOLEAN LANGUAGE sql AS $$ SELECT count(*) < 2 FROM members WHERE grp = g $$;
";

const JOIN: &[(&str, &str)] = &[("Join.sql", "INSERT INTO members VALUES (:id, :g);\n")];

/// A CHECK calling a function that counts the group's rows: two INSERTs
/// into the same group both pass it (write skew). On PostgreSQL 15, with
/// members = {(1, 1)}: S1 `BEGIN; INSERT INTO members VALUES (2, 1);`,
/// S2 `BEGIN; INSERT INTO members VALUES (3, 1);`, S1 `COMMIT`, S2
/// `COMMIT` → both commit, group 1 has 3 rows; serially the second INSERT
/// fails its CHECK (count = 2).
#[test]
fn check_calling_a_function_reads_what_it_reads() {
    let schema =
        format!("{MEMBERS}ALTER TABLE members ADD CONSTRAINT lim CHECK (under_limit(grp));\n");
    assert!(!robust(&schema, JOIN));
    let l = load(&schema, JOIN).expect("loads");
    assert!(
        statements(&l, "Join").contains(&(StmtType::PredSel, "members".into())),
        "the CHECK's count is a predicate read before the insert"
    );
    // Control: a CHECK on the row's own columns reads no other row.
    let control = format!("{MEMBERS}ALTER TABLE members ADD CONSTRAINT lim CHECK (grp > 0);\n");
    assert!(robust(&control, JOIN));
}

/// The same write skew through a PL/pgSQL function (run on PostgreSQL 15
/// with the same schedule: group 1 ends with 3 rows). Its reads are
/// over-approximated: every table its body names, all columns, in a loop.
#[test]
fn check_calling_a_plpgsql_function_reads_its_tables() {
    let schema = "CREATE TABLE t0 (id INT PRIMARY KEY);
CREATE TABLE members (id INT PRIMARY KEY, grp INT);
CREATE FUNCTION under_limit(g INT) RETURNS BOOLEAN LANGUAGE plpgsql AS $$
DECLARE n INT;
BEGIN
  SELECT count(*) INTO n FROM members WHERE grp = g;
  RETURN n < 2;
END $$;
ALTER TABLE members ADD CONSTRAINT lim CHECK (under_limit(grp));
";
    assert!(!robust(schema, JOIN));
    // Control: the function reads another table.
    let control = format!(
        "CREATE TABLE caps (id INT PRIMARY KEY, c INT);\n{}",
        schema.replace("FROM members WHERE grp = g", "FROM caps WHERE id = g")
    );
    assert!(robust(&control, JOIN));
}

/// The same write skew through a domain's CHECK. On PostgreSQL 15, with
/// members = {(1, 1)}: S1 `BEGIN; INSERT INTO joins VALUES (2, 1); INSERT
/// INTO members VALUES (2, 1)`, S2 the same with id 3, S1 `COMMIT`, S2
/// `COMMIT` → both commit (3 members in group 1); serially S2's first
/// INSERT fails the domain's CHECK.
#[test]
fn domain_check_calling_a_function_reads_what_it_reads() {
    let schema = "CREATE TABLE t0 (id INT PRIMARY KEY);
CREATE TABLE members (id INT PRIMARY KEY, grp INT);
CREATE FUNCTION under_limit(g INT) RETURNS BOOLEAN LANGUAGE sql AS $$ SELECT count(*) < 2 FROM members WHERE grp = g $$;
CREATE DOMAIN limited AS INT CHECK (under_limit(VALUE));
CREATE TABLE joins (id INT PRIMARY KEY, grp limited);
";
    let files = &[(
        "Join.sql",
        "INSERT INTO joins VALUES (:id, :g);\nINSERT INTO members VALUES (:id, :g);\n",
    )];
    assert!(!robust(schema, files));
    // Control: the domain's CHECK calls no function.
    let control = schema.replace("CHECK (under_limit(VALUE))", "CHECK (VALUE > 0)");
    assert!(robust(&control, files));
}

/// A DEFAULT calling a function: read when the column is not given (or
/// given as DEFAULT), not when it is.
#[test]
fn default_calling_a_function_is_read_when_used() {
    let schema = "CREATE TABLE t0 (id INT PRIMARY KEY);
CREATE TABLE counter (id INT PRIMARY KEY, n INT);
CREATE FUNCTION next_n() RETURNS INT LANGUAGE sql AS $$ SELECT n FROM counter WHERE id = 1 $$;
CREATE TABLE orders (id INT PRIMARY KEY, num INT DEFAULT next_n(), at TIMESTAMP DEFAULT now());
";
    let reads = |prog: &str| {
        let l = load(schema, &[("P.sql", prog)]).expect("loads");
        statements(&l, "P").iter().any(|(_, r)| r == "counter")
    };
    assert!(reads("INSERT INTO orders (id) VALUES (:i);\n"));
    assert!(reads("INSERT INTO orders VALUES (:i, DEFAULT, now());\n"));
    assert!(reads("UPDATE orders SET num = DEFAULT WHERE id = :i;\n"));
    assert!(!reads("INSERT INTO orders (id, num) VALUES (:i, 5);\n"));
}

/// A referential action that updates the referencing rows runs their
/// table's CHECKs (and, for SET DEFAULT, their DEFAULTs).
#[test]
fn referential_actions_run_the_referencing_tables_hooks() {
    let schema = |action: &str| {
        format!("CREATE TABLE counter (id INT PRIMARY KEY, n INT);
CREATE FUNCTION ok_n(x INT) RETURNS BOOLEAN LANGUAGE sql AS $$ SELECT n > 0 FROM counter WHERE id = 1 $$;
CREATE FUNCTION next_n() RETURNS INT LANGUAGE sql AS $$ SELECT n FROM counter WHERE id = 2 $$;
CREATE TABLE parent (id INT PRIMARY KEY);
CREATE TABLE child (id INT PRIMARY KEY, p INT DEFAULT next_n() REFERENCES parent ON UPDATE {action}, v INT CHECK (ok_n(v)));
")
    };
    for action in ["CASCADE", "SET DEFAULT", "SET NULL"] {
        let l = load(
            &schema(action),
            &[("P.sql", "UPDATE parent SET id = :n WHERE id = :o;\n")],
        )
        .expect("loads");
        let reads = statements(&l, "P")
            .iter()
            .filter(|(_, r)| r == "counter")
            .count();
        let expect = if action == "SET DEFAULT" { 2 } else { 1 };
        assert_eq!(reads, expect, "{action}");
    }
}

/// A function the lowering cannot inline, called by a CHECK: an error at
/// the call in the schema file.
#[test]
fn check_calling_plpgsql_or_unknown_function_is_located() {
    let schema = "CREATE TABLE t0 (id INT PRIMARY KEY);
CREATE FUNCTION pl(g INT) RETURNS BOOLEAN LANGUAGE plpgsql AS $$ BEGIN EXECUTE 'SELECT 1'; RETURN true; END $$;
CREATE TABLE members (id INT PRIMARY KEY, grp INT CHECK (pl(grp)));
";
    let e = error(schema, JOIN);
    assert!(
        e.contains("schema.sql:3:58:") && e.contains("dynamic SQL"),
        "{e}"
    );
    let schema = "CREATE TABLE t0 (id INT PRIMARY KEY);
CREATE FUNCTION pl(g INT) RETURNS BOOLEAN LANGUAGE plpgsql AS $$ BEGIN UPDATE t0 SET id = 1; RETURN true; END $$;
CREATE TABLE members (id INT PRIMARY KEY, grp INT CHECK (pl(grp)));
";
    let e = error(schema, JOIN);
    assert!(
        e.contains("schema.sql:3:58:") && e.contains("may write"),
        "{e}"
    );
    let schema = "CREATE TABLE t0 (id INT PRIMARY KEY);
CREATE TABLE members (id INT PRIMARY KEY,
  grp INT CHECK (mystery(grp)));
";
    let e = error(schema, JOIN);
    assert!(
        e.contains("schema.sql:3:18:") && e.contains("unknown function `mystery`"),
        "{e}"
    );
    // Built-ins that read nothing are fine.
    let schema = "CREATE TABLE t0 (id INT PRIMARY KEY);
CREATE TABLE members (id INT PRIMARY KEY, grp INT CHECK (abs(grp) < 10) DEFAULT nextval('s'),
  at TIMESTAMP DEFAULT (now() AT TIME ZONE 'utc') CHECK (EXTRACT(year FROM at) > 2000 AND substring('x' FROM 1) = 'x'));
";
    assert!(robust(schema, JOIN));
}

// ---- GENERATED ALWAYS AS (…) STORED ----

const ITEM: &str = "CREATE TABLE item (id INT PRIMARY KEY, price INT, qty INT, note INT,
  total INT GENERATED ALWAYS AS (price * qty) STORED);
CREATE TABLE summary (id INT PRIMARY KEY, s INT);
";

/// Writing an input of a generated column writes it. On PostgreSQL 15,
/// item = (1, price 2, qty 5), summary = (1, 0): S1 `BEGIN; SELECT total
/// FROM item WHERE id = 1` (10), S2 `BEGIN; UPDATE item SET price = 3
/// WHERE id = 1; SELECT s FROM summary WHERE id = 1` (0) `COMMIT`, S1
/// `UPDATE summary SET s = 10 WHERE id = 1; COMMIT`. S1 saw the old total
/// and S2 the old s: neither serial order (S2 would see 10, or S1 15).
#[test]
fn generated_column_is_written_with_its_inputs() {
    let files = |col: &str| {
        vec![
            (
                "Audit.sql",
                "SELECT total INTO :t FROM item WHERE id = :i;\nUPDATE summary SET s = :t WHERE id = :k;\n".to_string(),
            ),
            (
                "Reprice.sql",
                format!("UPDATE item SET {col} = :p WHERE id = :i;\nSELECT s FROM summary WHERE id = :k;\n"),
            ),
        ]
    };
    let as_refs = |v: &[(&'static str, String)]| -> Vec<(&'static str, String)> { v.to_vec() };
    let price = as_refs(&files("price"));
    let price: Vec<(&str, &str)> = price.iter().map(|(n, t)| (*n, t.as_str())).collect();
    assert!(!robust(ITEM, &price));
    // Control: `note` is no input of `total`.
    let note = as_refs(&files("note"));
    let note: Vec<(&str, &str)> = note.iter().map(|(n, t)| (*n, t.as_str())).collect();
    assert!(robust(ITEM, &note));
}

// ---- DEFERRABLE INITIALLY DEFERRED foreign keys ----

const DEFERRED: &str = "CREATE TABLE parent (id INT PRIMARY KEY);
CREATE TABLE child (id INT PRIMARY KEY, p INT REFERENCES parent DEFERRABLE INITIALLY DEFERRED);
CREATE TABLE x (id INT PRIMARY KEY, v INT);
";

const ADOPT: &[(&str, &str)] = &[
    (
        "Adopt.sql",
        "INSERT INTO child VALUES (:c, :p);\nSELECT v FROM x WHERE id = :x;\n",
    ),
    (
        "Found.sql",
        "UPDATE x SET v = v + 1 WHERE id = :x;\nINSERT INTO parent VALUES (:p);\n",
    ),
];

/// The parent check of a deferred foreign key reads at COMMIT. On
/// PostgreSQL 15, x = (1, 0): S1 `BEGIN; INSERT INTO child VALUES (1, 7);
/// SELECT v FROM x WHERE id = 1` (0), S2 `BEGIN; UPDATE x SET v = v + 1
/// WHERE id = 1; INSERT INTO parent VALUES (7); COMMIT`, S1 `COMMIT`
/// succeeds (parent 7 exists by then). Serially, S1 first fails at COMMIT
/// and S2 first makes S1 read 1.
#[test]
fn deferred_foreign_key_is_checked_at_commit() {
    assert!(!robust(DEFERRED, ADOPT));
    // Control: checked at the INSERT, the parent must exist before S1's
    // read of x, so S1 sees S2's update too.
    let immediate = DEFERRED.replace(" DEFERRABLE INITIALLY DEFERRED", "");
    assert!(robust(&immediate, ADOPT));
    // DEFERRABLE alone (INITIALLY IMMEDIATE) is checked at the INSERT.
    let deferrable = DEFERRED.replace(" INITIALLY DEFERRED", "");
    assert!(robust(&deferrable, ADOPT));
    // Deferred through ALTER TABLE … ADD CONSTRAINT.
    let altered = immediate.replace(" REFERENCES parent", "")
        + "ALTER TABLE child ADD CONSTRAINT f FOREIGN KEY (p) REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED;\n";
    assert!(!robust(&altered, ADOPT));
}

/// `SET CONSTRAINTS ALL DEFERRED` in the program defers a DEFERRABLE
/// foreign key's check to COMMIT. On PostgreSQL 15 the schedule above, with
/// the key `DEFERRABLE` (initially immediate) and S1 starting with `SET
/// CONSTRAINTS ALL DEFERRED;`, commits both (S1 read v = 0).
#[test]
fn set_constraints_deferred_in_a_program() {
    let deferrable = DEFERRED.replace(" INITIALLY DEFERRED", "");
    let with = |adopt: &str| -> Vec<(&str, String)> {
        vec![
            ("Adopt.sql", adopt.to_string()),
            ("Found.sql", ADOPT[1].1.to_string()),
        ]
    };
    let refs = |v: &[(&'static str, String)]| -> Vec<(&'static str, String)> { v.to_vec() };
    for (adopt, expect_robust) in [
        // Control: no SET CONSTRAINTS, checked at the INSERT.
        ("INSERT INTO child VALUES (:c, :p);\nSELECT v FROM x WHERE id = :x;\n", true),
        ("SET CONSTRAINTS ALL DEFERRED;\nINSERT INTO child VALUES (:c, :p);\nSELECT v FROM x WHERE id = :x;\n", false),
        ("SET CONSTRAINTS fk_child_parent DEFERRED;\nINSERT INTO child VALUES (:c, :p);\nSELECT v FROM x WHERE id = :x;\n", false),
        // Inside an IF: the check may be at either place.
        ("IF :d THEN\n  SET CONSTRAINTS ALL DEFERRED;\nEND IF;\nINSERT INTO child VALUES (:c, :p);\nSELECT v FROM x WHERE id = :x;\n", false),
    ] {
        let files = refs(&with(adopt));
        let files: Vec<(&str, &str)> = files.iter().map(|(n, t)| (*n, t.as_str())).collect();
        assert_eq!(robust(&deferrable, &files), expect_robust, "{adopt}");
    }
    // A key that is not DEFERRABLE is not deferred by SET CONSTRAINTS.
    let immediate = DEFERRED.replace(" DEFERRABLE INITIALLY DEFERRED", "");
    let files = refs(&with("SET CONSTRAINTS ALL DEFERRED;\nINSERT INTO child VALUES (:c, :p);\nSELECT v FROM x WHERE id = :x;\n"));
    let files: Vec<(&str, &str)> = files.iter().map(|(n, t)| (*n, t.as_str())).collect();
    assert!(robust(&immediate, &files));
    // IMMEDIATE runs the pending checks where it stands: an error there.
    let files = refs(&with(
        "INSERT INTO child VALUES (:c, :p);\nSET CONSTRAINTS ALL IMMEDIATE;\n",
    ));
    let files: Vec<(&str, &str)> = files.iter().map(|(n, t)| (*n, t.as_str())).collect();
    let e = error(&deferrable, &files);
    assert!(
        e.contains("Adopt.sql:2:1:") && e.contains("IMMEDIATE"),
        "{e}"
    );
}

// ---- INHERITS and PARTITION OF ----

const PARTS: &str = "CREATE TABLE m (id INT, region INT, v INT, w INT, PRIMARY KEY (id, region)) PARTITION BY LIST (region);
CREATE TABLE m1 PARTITION OF m FOR VALUES IN (1);
CREATE TABLE m2 PARTITION OF m FOR VALUES IN (2);
CREATE TABLE cnt (id INT PRIMARY KEY, n INT);
";

/// A statement on the parent reads the partitions' rows. On PostgreSQL
/// 15, m = {(1, 1, 10), (2, 2, 20)}, cnt = (1, 0): S1 `BEGIN; SELECT
/// sum(v) FROM m` (30), S2 `BEGIN; UPDATE m1 SET v = v + 1 WHERE id = 1
/// AND region = 1; SELECT n FROM cnt WHERE id = 1` (0) `COMMIT`, S1
/// `UPDATE cnt SET n = 30 WHERE id = 1; COMMIT`: neither serial order.
#[test]
fn partition_rows_are_parent_rows() {
    let files = |col: &str| {
        [
            (
                "Sum.sql",
                "SELECT sum(v) INTO :s FROM m;\nUPDATE cnt SET n = :s WHERE id = 1;\n".to_string(),
            ),
            (
                "Bump.sql",
                format!("UPDATE m1 SET {col} = {col} + 1 WHERE id = :i AND region = 1;\nSELECT n FROM cnt WHERE id = 1;\n"),
            ),
        ]
    };
    let f = files("v");
    let f: Vec<(&str, &str)> = f.iter().map(|(n, t)| (*n, t.as_str())).collect();
    assert!(!robust(PARTS, &f));
    // Control: Bump writes a column Sum does not read.
    let f = files("w");
    let f: Vec<(&str, &str)> = f.iter().map(|(n, t)| (*n, t.as_str())).collect();
    assert!(robust(PARTS, &f));
}

/// A child by INHERITS: its rows are rows of the parent. On PostgreSQL 15,
/// city = {(1, 'a')}, cnt = (1, 0): S1 `BEGIN; SELECT count(*) FROM city`
/// (1), S2 `BEGIN; INSERT INTO capital VALUES (2, 'b', 'x'); SELECT n FROM
/// cnt WHERE id = 1` (0) `COMMIT`, S1 `UPDATE cnt SET n = 1 WHERE id = 1;
/// COMMIT`: S1 missed S2's row, S2 missed S1's write.
#[test]
fn inheritance_child_rows_are_parent_rows() {
    let schema = "CREATE TABLE city (id INT PRIMARY KEY, name TEXT);
CREATE TABLE capital (state TEXT) INHERITS (city);
CREATE TABLE town (id INT PRIMARY KEY, name TEXT, state TEXT);
CREATE TABLE cnt (id INT PRIMARY KEY, n INT);
";
    let files = |table: &str| {
        [
            (
                "Count.sql",
                "SELECT count(*) INTO :n FROM city;\nUPDATE cnt SET n = :n WHERE id = 1;\n"
                    .to_string(),
            ),
            (
                "Found.sql",
                format!(
                    "INSERT INTO {table} VALUES (:i, 'b', 'x');\nSELECT n FROM cnt WHERE id = 1;\n"
                ),
            ),
        ]
    };
    let f = files("capital");
    let f: Vec<(&str, &str)> = f.iter().map(|(n, t)| (*n, t.as_str())).collect();
    assert!(!robust(schema, &f));
    // Control: a table outside the hierarchy.
    let f = files("town");
    let f: Vec<(&str, &str)> = f.iter().map(|(n, t)| (*n, t.as_str())).collect();
    assert!(robust(schema, &f));
}

/// pg_dump's form: the partition created alone, then attached; a child by
/// INHERITS has its parent's columns and its own; keys of an inheritance
/// parent are no keys (they hold for the parent's own rows only).
#[test]
fn attached_partitions_and_inheritance_children() {
    let schema = "CREATE TABLE public.m (id integer NOT NULL, region integer NOT NULL, v integer) PARTITION BY LIST (region);
CREATE TABLE public.m1 (id integer NOT NULL, region integer NOT NULL, v integer);
ALTER TABLE ONLY public.m ATTACH PARTITION public.m1 FOR VALUES IN (1);
ALTER TABLE ONLY public.m ADD CONSTRAINT m_pkey PRIMARY KEY (id, region);
ALTER TABLE ONLY public.m1 ADD CONSTRAINT m1_pkey PRIMARY KEY (id, region);
CREATE TABLE city (id INT PRIMARY KEY, name TEXT);
CREATE TABLE capital (state TEXT) INHERITS (city);
";
    let l = load(
        schema,
        &[(
            "P.sql",
            "UPDATE m1 SET v = 1 WHERE id = :i AND region = 1;\nUPDATE capital SET state = 'x', name = 'y' WHERE id = :c;\n",
        )],
    )
    .expect("loads");
    let s = &l.workload.schema;
    let names: Vec<&str> = s.relations.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["m", "city"]);
    assert!(
        l.warnings
            .iter()
            .any(|w| w.message.contains("`m1` is a partition of `m`") && w.line == 2),
        "{:?}",
        l.warnings
    );
    assert_eq!(s.relations[0].primary_key, vec![0, 1]);
    assert_eq!(s.relations[1].attributes, ["id", "name", "state"]);
    assert!(s.relations[1].primary_key.is_empty());
    let st = statements(&l, "P");
    assert_eq!(st[0], (StmtType::KeyUpd, "m".into()));
    assert_eq!(st[1], (StmtType::PredUpd, "city".into()));
}

// ---- Exclusion constraints, partial and expression unique indexes ----

/// An INSERT that may fail on another row's values observes them: a
/// predicate read of the constraint's columns. Such an index is no key.
#[test]
fn exclusion_and_partial_unique_are_predicate_reads() {
    for extra in [
        "ALTER TABLE booking ADD CONSTRAINT no_overlap EXCLUDE USING gist (room WITH =, during WITH &&);",
        "CREATE UNIQUE INDEX one_open ON booking (room) WHERE open;",
        "CREATE UNIQUE INDEX lower_code ON booking ((lower(code)));",
        "ALTER TABLE booking ADD CONSTRAINT u UNIQUE NULLS NOT DISTINCT (code);",
    ] {
        let schema = format!("CREATE TABLE booking (id INT PRIMARY KEY, room INT, during TSRANGE, open BOOLEAN, code TEXT);\n{extra}\n");
        let l = load(&schema, &[("P.sql", "INSERT INTO booking (id, room, code) VALUES (:i, :r, :c);\n")])
            .expect("loads");
        let st = statements(&l, "P");
        let expect_read = !extra.contains("NULLS NOT DISTINCT");
        assert_eq!(
            st.contains(&(StmtType::PredSel, "booking".into())),
            expect_read,
            "{extra}: {st:?}"
        );
        let keys = &l.workload.schema.relations[0].unique_keys;
        assert_eq!(keys.is_empty(), expect_read, "{extra}");
    }
}

// ---- What pg_dump writes ----

#[test]
fn pg_dump_forms_load() {
    let schema = "SET statement_timeout = 0;
SELECT pg_catalog.set_config('search_path', '', false);
CREATE SCHEMA app;
CREATE TABLE app.acct (id integer NOT NULL, bal integer DEFAULT 0 NOT NULL);
ALTER TABLE app.acct ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (SEQUENCE NAME app.acct_id_seq START WITH 1 INCREMENT BY 1 NO MINVALUE NO MAXVALUE CACHE 1);
CREATE TABLE app.t0 (id integer NOT NULL);
ALTER TABLE ONLY app.acct ADD CONSTRAINT acct_pkey PRIMARY KEY (id);
ALTER TABLE ONLY app.t0 ADD CONSTRAINT t0_pkey PRIMARY KEY (id);
ALTER TABLE ONLY app.t0 ADD CONSTRAINT t0_fk FOREIGN KEY (id) REFERENCES app.acct(id) NOT VALID;
COMMENT ON TABLE app.acct IS 'accounts';
GRANT SELECT ON TABLE app.acct TO PUBLIC;
";
    let l = load(
        schema,
        &[("P.sql", "SELECT bal FROM acct WHERE id = :a;\n")],
    )
    .expect("loads");
    let s = &l.workload.schema;
    assert_eq!(s.relations[0].primary_key, vec![0]);
    assert_eq!(s.foreign_keys.len(), 1);
}

// ---- Clauses rejected with a located error ----

/// Each rejected form, on line 2 of the schema, and the column its error
/// points at (PostgreSQL's node location).
#[test]
fn rejected_clauses_are_located() {
    for (ddl, col, what) in [
        (
            "CREATE RULE r AS ON INSERT TO t0 DO INSTEAD NOTHING;",
            1,
            "CREATE RULE",
        ),
        ("CREATE POLICY p ON t0 USING (id > 0);", 1, "CREATE POLICY"),
        // A trigger is kept per table (issue 22: statements writing the
        // table are rejected, tests/pg_dump_input.rs); on an unknown table
        // it is an error here.
        (
            "CREATE TRIGGER tr AFTER INSERT ON nope FOR EACH ROW EXECUTE FUNCTION f();",
            35,
            "trigger on unknown table",
        ),
        (
            "CREATE FOREIGN TABLE ft (id INT) SERVER s;",
            1,
            "foreign tables",
        ),
        (
            "CREATE TABLE c AS SELECT * FROM t0;",
            1,
            "CREATE TABLE … AS",
        ),
        ("CREATE TABLE c (LIKE t0);", 1, "LIKE"),
        (
            "CREATE TYPE ty AS (a INT); CREATE TABLE c OF ty;",
            41,
            "OF type",
        ),
        ("ALTER TABLE t0 DROP COLUMN v;", 1, "DROP"),
        ("ALTER TABLE t0 DROP CONSTRAINT t0_pkey;", 1, "DROP"),
        ("DROP TABLE t0;", 1, "DROP of table"),
        ("ALTER TABLE t0 RENAME COLUMN v TO w;", 1, "RENAME"),
        (
            "CREATE OPERATOR === (LEFTARG = INT, RIGHTARG = INT, FUNCTION = f);",
            1,
            "CREATE OPERATOR",
        ),
        (
            "CREATE FUNCTION f(x INT) RETURNS INT IMMUTABLE LANGUAGE sql AS 'SELECT x'; CREATE TABLE g (a INT, b INT GENERATED ALWAYS AS (f(a)) STORED);",
            126,
            "generated column",
        ),
        (
            "CREATE TABLE c2 (x INT) INHERITS (t0, t1);",
            1,
            "multiple inheritance",
        ),
        (
            "CREATE DOMAIN d AS INT; ALTER DOMAIN d ADD CHECK (f(VALUE));",
            25,
            "ALTER DOMAIN",
        ),
        (
            "CREATE TABLE c3 (id INT CHECK (id IN (SELECT id FROM t0)));",
            35,
            "subquery",
        ),
        ("CALL f();", 1, "not modelled in a schema file"),
        (
            "ALTER TABLE t0 ADD CONSTRAINT k PRIMARY KEY USING INDEX nope;",
            20,
            "USING INDEX",
        ),
        (
            "CREATE TABLE c4 (id INT REFERENCES t0 MATCH PARTIAL);",
            39,
            "MATCH PARTIAL not yet implemented",
        ),
        (
            "ALTER TABLE t0 ALTER COLUMN v SET DEFAULT (SELECT 1);",
            43,
            "subquery",
        ),
    ] {
        let schema = format!(
            "CREATE TABLE t0 (id INT PRIMARY KEY, v INT); CREATE TABLE t1 (id INT);\n{ddl}\n"
        );
        let e = schema_error(&schema);
        assert!(
            e.contains(&format!("schema.sql:2:{col}:")) && e.contains(what),
            "{ddl}\n→ {e}"
        );
    }
}
