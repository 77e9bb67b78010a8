//! Issue 22, item 4: one `pg_dump --schema-only` file is a complete input.
//! The dump fragments below are written for these tests in the shape
//! PostgreSQL 15.20's `pg_dump --schema-only` prints them (checked against
//! a real dump of the same objects: `\restrict` lines, the `SET` block,
//! `set_config('search_path', '', false)`, schema-qualified names, `ALTER
//! TABLE … OWNER TO` of sequences and views, identity columns added by
//! `ALTER TABLE … ADD GENERATED ALWAYS AS IDENTITY (SEQUENCE NAME …)`,
//! `ALTER TABLE ONLY … ATTACH PARTITION`, triggers with arguments).

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

/// The workload directory: `schema.sql` (the dump, also the only input
/// when `files` is empty), `isolint.yaml` and `files`.
fn run(schema: &str, manifest: &str, files: &[(&str, &str)]) -> Result<Outcome, String> {
    let loaded = workdir::load(schema, manifest, files).map_err(|e| e.message.clone())?;
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

fn verdict(schema: &str, manifest: &str) -> Outcome {
    match run(schema, manifest, &[]) {
        Ok(o) => o,
        Err(e) => panic!("expected a verdict, got: {e}"),
    }
}

fn error(schema: &str, manifest: &str) -> String {
    match run(schema, manifest, &[]) {
        Ok(o) => panic!("expected an error, got programs {:?}", o.programs),
        Err(e) => e,
    }
}

/// The dump's head and tail as pg_dump 15.14+ prints them.
fn dump(body: &str) -> String {
    format!(
        "--\n-- PostgreSQL database dump\n--\n\n\\restrict AbC123\n\n\
SET statement_timeout = 0;\nSET client_encoding = 'UTF8';\n\
SET standard_conforming_strings = on;\n\
SELECT pg_catalog.set_config('search_path', '', false);\n\
SET check_function_bodies = false;\nSET row_security = off;\n\n\
CREATE SCHEMA app;\n\nALTER SCHEMA app OWNER TO postgres;\n\n{body}\n\
--\n-- PostgreSQL database dump complete\n--\n\n\\unrestrict AbC123\n\n"
    )
}

/// Tables of the fixture, as pg_dump prints them: columns first, keys,
/// defaults, identities and partitions by ALTER TABLE afterwards.
const TABLES: &str = r#"
CREATE FUNCTION app.log_change() RETURNS trigger
    LANGUAGE plpgsql
    AS $$ BEGIN INSERT INTO app.audit(note) VALUES (TG_ARGV[0]); RETURN NEW; END $$;

ALTER FUNCTION app.log_change() OWNER TO postgres;

SET default_tablespace = '';

SET default_table_access_method = heap;

CREATE TABLE app.accounts (
    id integer NOT NULL,
    bal integer NOT NULL
);

ALTER TABLE app.accounts OWNER TO postgres;

CREATE TABLE app.audit (
    id bigint NOT NULL,
    note text
);

ALTER TABLE app.audit OWNER TO postgres;

CREATE SEQUENCE app.audit_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER TABLE app.audit_id_seq OWNER TO postgres;

ALTER SEQUENCE app.audit_id_seq OWNED BY app.audit.id;

CREATE TABLE app.events (
    id integer NOT NULL,
    at date NOT NULL,
    what text
)
PARTITION BY RANGE (at);

ALTER TABLE app.events OWNER TO postgres;

CREATE TABLE app.events_2026 (
    id integer NOT NULL,
    at date NOT NULL,
    what text
);

ALTER TABLE app.events_2026 OWNER TO postgres;

CREATE TABLE app.jobs (
    id bigint NOT NULL,
    queue text NOT NULL,
    locked_by text
);

ALTER TABLE app.jobs OWNER TO postgres;

ALTER TABLE app.jobs ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME app.jobs_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE VIEW app.open_jobs AS
 SELECT jobs.id,
    jobs.queue
   FROM app.jobs
  WHERE (jobs.locked_by IS NULL);

ALTER TABLE app.open_jobs OWNER TO postgres;

CREATE TABLE app.queues (
    name text NOT NULL,
    paused boolean DEFAULT false NOT NULL
);

ALTER TABLE app.queues OWNER TO postgres;

ALTER TABLE ONLY app.events ATTACH PARTITION app.events_2026 FOR VALUES FROM ('2026-01-01') TO ('2027-01-01');

ALTER TABLE ONLY app.audit ALTER COLUMN id SET DEFAULT nextval('app.audit_id_seq'::regclass);

ALTER TABLE ONLY app.accounts
    ADD CONSTRAINT accounts_pkey PRIMARY KEY (id);

ALTER TABLE ONLY app.audit
    ADD CONSTRAINT audit_pkey PRIMARY KEY (id);

ALTER TABLE ONLY app.jobs
    ADD CONSTRAINT jobs_pkey PRIMARY KEY (id);

ALTER TABLE ONLY app.queues
    ADD CONSTRAINT queues_pkey PRIMARY KEY (name);

CREATE TRIGGER queues_audit AFTER UPDATE ON app.queues FOR EACH ROW EXECUTE FUNCTION app.log_change('queue');

ALTER TABLE ONLY app.jobs
    ADD CONSTRAINT jobs_queue_fkey FOREIGN KEY (queue) REFERENCES app.queues(name);
"#;

/// The routines of the fixture (pg_dump prints them before the tables;
/// `check_function_bodies = false` lets them name tables created later).
const ROUTINES: &str = r#"
CREATE FUNCTION app.withdraw(a integer, amt integer) RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
  UPDATE app.accounts SET bal = bal - amt WHERE id = a;
END $$;

ALTER FUNCTION app.withdraw(a integer, amt integer) OWNER TO postgres;

CREATE FUNCTION app.withdraw_racy(a integer, amt integer) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE b integer;
BEGIN
  SELECT bal INTO b FROM app.accounts WHERE id = a;
  UPDATE app.accounts SET bal = b - amt WHERE id = a;
END $$;

ALTER FUNCTION app.withdraw_racy(a integer, amt integer) OWNER TO postgres;

CREATE FUNCTION app.withdraw_assign(a integer, amt integer) RETURNS void
    LANGUAGE plpgsql
    AS $$
#print_strict_params on
DECLARE b integer;
BEGIN
  b := bal FROM app.accounts WHERE id = a;
  UPDATE app.accounts SET bal = b - amt WHERE id = a;
END $$;

ALTER FUNCTION app.withdraw_assign(a integer, amt integer) OWNER TO postgres;

CREATE FUNCTION app.pay(integer, integer) RETURNS void
    LANGUAGE plpgsql
    AS $_$
BEGIN
  $2 := abs($2);
  PERFORM app.withdraw($1, $2);
END $_$;

ALTER FUNCTION app.pay(integer, integer) OWNER TO postgres;

CREATE FUNCTION app.queue_paused(q text) RETURNS boolean
    LANGUAGE plpgsql STABLE
    AS $$
DECLARE p boolean;
BEGIN
  SELECT paused INTO p FROM app.queues WHERE name = q;
  RETURN p;
END $$;

ALTER FUNCTION app.queue_paused(q text) OWNER TO postgres;

CREATE FUNCTION app.pause(q text) RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
  UPDATE app.queues SET paused = true WHERE name = q;
END $$;

ALTER FUNCTION app.pause(q text) OWNER TO postgres;

CREATE FUNCTION app.purge(t text) RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
  EXECUTE 'DELETE FROM app.' || t;
END $$;

ALTER FUNCTION app.purge(t text) OWNER TO postgres;

CREATE FUNCTION app.purge_all() RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
  PERFORM app.purge('jobs');
END $$;

ALTER FUNCTION app.purge_all() OWNER TO postgres;

CREATE FUNCTION app.pair(x integer, y integer) RETURNS record
    LANGUAGE plpgsql
    AS $$
DECLARE r record;
BEGIN
  SELECT bal INTO y FROM app.accounts WHERE id = x;
  r := ROW(x, y);
  RETURN r;
END $$;

ALTER FUNCTION app.pair(x integer, y integer) OWNER TO postgres;

CREATE FUNCTION app.run_do() RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
  EXECUTE 'DO $x$ BEGIN PERFORM 1; END $x$';
END $$;

ALTER FUNCTION app.run_do() OWNER TO postgres;

CREATE FUNCTION app.count_open(q text) RETURNS bigint
    LANGUAGE plpgsql
    AS $$
DECLARE
  c1 CURSOR (qname text, who text) FOR
    SELECT count(*) FROM app.jobs WHERE queue = qname AND locked_by = who;
  n bigint;
BEGIN
  OPEN c1(who := 'w1', qname => q);
  FETCH c1 INTO n;
  CLOSE c1;
  RETURN n;
END $$;

ALTER FUNCTION app.count_open(q text) OWNER TO postgres;
"#;

fn app_dump() -> String {
    dump(&format!("{ROUTINES}{TABLES}"))
}

/// The verdict test. withdraw_racy reads the balance, then writes the
/// value it computed from it: two concurrent runs on the same account
/// lose one withdrawal. Run on PostgreSQL 15.20 at READ COMMITTED with two
/// psql sessions, balance 100, both withdrawing 10: S1 `SELECT bal` (100);
/// S2 `SELECT bal` (100); S1 `UPDATE … SET bal = 100 - 10`, COMMIT; S2
/// `UPDATE … SET bal = 100 - 10`, COMMIT → 90, where both serial orders
/// give 80. The control, withdraw, does `bal = bal - amt` in one UPDATE
/// (PostgreSQL re-reads the row after the lock wait): robust, as in the
/// paper's model (a single key-based update). Only the dump is given.
#[test]
fn dump_routines_are_programs_lost_update_and_control() {
    let d = app_dump();
    let racy = verdict(&d, "programs: [withdraw_racy]\n");
    assert_eq!(racy.programs, ["withdraw_racy"]);
    assert!(!racy.robust, "lost update on app.accounts");
    let control = verdict(&d, "programs: [withdraw]\n");
    assert_eq!(control.programs, ["withdraw"]);
    assert!(control.robust, "a single UPDATE bal = bal - amt is robust");
}

/// `b := bal FROM app.accounts WHERE id = a` is PL/pgSQL's `SELECT bal
/// … INTO b` (an assignment is evaluated as SELECT of its expression): the
/// same lost update as withdraw_racy, after `#print_strict_params on`.
/// Dropping the assignment's FROM would make it robust.
#[test]
fn assignment_with_from_is_a_query() {
    let o = verdict(&app_dump(), "programs: [withdraw_assign]\n");
    assert!(!o.robust, "the assignment's query is a read of accounts");
}

/// `programs:` picks the entry points; a routine they call is inlined
/// from the same dump (pay calls withdraw, after `$2 := …`), so the
/// verdict is withdraw's: robust. Two pays together with withdraw_racy are
/// not (the racy read against pay's inlined update).
#[test]
fn callees_come_from_the_dump() {
    let d = app_dump();
    let o = verdict(&d, "programs: [pay]\n");
    assert_eq!(o.programs, ["pay"]);
    assert!(o.robust);
    let o = verdict(&d, "programs: [pay, withdraw_racy]\n");
    assert_eq!(o.programs, ["pay", "withdraw_racy"]);
    assert!(!o.robust);
}

/// A routine of the dump that no program reaches is not analysed: purge's
/// dynamic SQL does not stop the run. A program that calls it gets purge's
/// own located error.
#[test]
fn unreached_routines_need_not_be_readable() {
    let d = app_dump();
    assert!(verdict(&d, "programs: [withdraw]\n").robust);
    let e = error(&d, "programs: [purge_all]\n");
    assert!(
        e.contains("schema.sql:") && e.contains("dynamic SQL"),
        "purge's own error: {e}"
    );
}

/// A trigger fires only for writes of its table: a routine that reads
/// queues loads, one that updates it is rejected at its UPDATE, naming the
/// trigger (whose function, with its argument, isolint does not model).
#[test]
fn trigger_rejects_only_writes_of_its_table() {
    let d = app_dump();
    let o = verdict(&d, "programs: [queue_paused]\n");
    assert!(o.robust);
    let e = error(&d, "programs: [pause]\n");
    assert!(
        e.contains("writes `queues`")
            && e.contains("trigger `queues_audit`")
            && e.contains("schema.sql:"),
        "{e}"
    );
}

/// pg_dump's statements for sequences, views, identities and partitions
/// load: the partition is merged into its root (a warning says so).
#[test]
fn pg_dump_statements_load() {
    let o = verdict(&app_dump(), "programs: [withdraw]\n");
    assert!(
        o.warnings
            .iter()
            .any(|w| w.contains("`events_2026` is a partition of `events`")),
        "{:?}",
        o.warnings
    );
}

/// ROW(…) is a row constructor, not a call of an unknown function; named
/// cursor arguments (`p := v`, `p => v`) go to their parameters.
#[test]
fn row_constructor_and_named_cursor_arguments() {
    let d = app_dump();
    assert!(verdict(&d, "programs: [pair]\n").robust);
    assert!(verdict(&d, "programs: [count_open]\n").robust);
}

/// `EXECUTE 'DO …'` is code PostgreSQL compiles only when it runs: a
/// located error that says so.
#[test]
fn execute_do_is_rejected_located() {
    let e = error(&app_dump(), "programs: [run_do]\n");
    assert!(
        e.contains("EXECUTE of a `DO` statement is not modelled") && e.contains("schema.sql:"),
        "{e}"
    );
}

/// `#variable_conflict use_column` resolves names unlike PostgreSQL's
/// default, which isolint follows: rejected where it stands.
#[test]
fn variable_conflict_other_than_error_is_rejected() {
    let body = r#"
CREATE FUNCTION app.f(id integer) RETURNS integer
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
BEGIN
  RETURN id;
END $$;
"#;
    let d = dump(&format!("{body}{TABLES}"));
    let e = error(&d, "programs: [f]\n");
    assert!(
        e.contains("`#variable_conflict use_column` is not modelled") && e.contains("schema.sql:"),
        "{e}"
    );
}

/// A schema without tables (routines that read none) is a warning.
#[test]
fn schema_without_tables_is_a_warning() {
    let body = r#"
CREATE FUNCTION public.add_one(x integer) RETURNS integer
    LANGUAGE plpgsql
    AS $$
BEGIN
  RETURN x + 1;
END $$;
"#;
    let o = verdict(&dump(body), "programs: [add_one]\n");
    assert!(o
        .warnings
        .iter()
        .any(|w| w == "the schema defines no tables"));
}

/// Schema DDL in a migration that also defines routines is skipped with a
/// warning (the schema file has it), not an error.
#[test]
fn ddl_in_a_routine_file_is_skipped_with_a_warning() {
    let migration = "CREATE TABLE app.extra (id int PRIMARY KEY);\n\
CREATE INDEX extra_idx ON app.extra (id);\n\
CREATE OR REPLACE FUNCTION app.touch(a int) RETURNS void LANGUAGE plpgsql AS $$\n\
BEGIN UPDATE app.accounts SET bal = bal WHERE id = a; END $$;\n";
    let o = match run(&app_dump(), "", &[("V2__touch.sql", migration)]) {
        Ok(o) => o,
        Err(e) => panic!("{e}"),
    };
    assert_eq!(o.programs, ["touch"]);
    assert!(
        o.warnings
            .iter()
            .any(|w| w.contains("`CREATE TABLE` in a file of PL/pgSQL routines")),
        "{:?}",
        o.warnings
    );
    // A trigger adds reads and writes: in a migration it stays an error
    // (only the schema file's triggers are modelled).
    let with_trigger = format!(
        "{migration}CREATE TRIGGER t2 AFTER INSERT ON app.accounts FOR EACH ROW EXECUTE FUNCTION app.log_change('x');\n"
    );
    let e = match run(&app_dump(), "", &[("V2__touch.sql", &with_trigger)]) {
        Ok(_) => panic!("a trigger in a migration must be an error"),
        Err(e) => e,
    };
    assert!(e.contains("V2__touch.sql:5:"), "{e}");
}

/// Clauses that are not modelled stay located errors in a dump.
#[test]
fn rejected_clauses_are_located() {
    let d = dump(&format!(
        "{TABLES}\nALTER TABLE ONLY app.jobs DROP COLUMN locked_by;\n"
    ));
    let e = error(&d, "");
    assert!(
        e.contains("ALTER TABLE … DROP is not modelled") && e.contains("schema.sql:"),
        "{e}"
    );
    let d = dump(
        "CREATE TRIGGER t AFTER INSERT ON app.nope FOR EACH ROW EXECUTE FUNCTION app.f('x');\n",
    );
    let e = error(&d, "");
    assert!(e.contains("trigger on unknown table `nope`"), "{e}");
}

/// A referential action writes the child table on the parent statement's
/// behalf, which fires the child's trigger: the parent DELETE is rejected.
/// Control: the same schema without the trigger loads.
#[test]
fn trigger_reached_through_on_delete_cascade() {
    let schema = "CREATE TABLE p (id int PRIMARY KEY);\n\
CREATE TABLE c (id int PRIMARY KEY, pid int REFERENCES p(id) ON DELETE CASCADE);\n";
    let del = [("Del.sql", "DELETE FROM p WHERE id = :a;\n")];
    let trigger = "CREATE TRIGGER tc AFTER DELETE ON c FOR EACH ROW EXECUTE FUNCTION f('x');\n";
    let e = match run(&format!("{schema}{trigger}"), "", &del) {
        Ok(_) => panic!("the cascade fires the trigger"),
        Err(e) => e,
    };
    assert!(
        e.contains("Del.sql:1:1") && e.contains("writes `c`") && e.contains("trigger `tc`"),
        "{e}"
    );
    assert!(run(schema, "", &del).is_ok());
}
