//! Input text → expected BTP text, one case per lowering rule of
//! docs/sql-frontend.md (rust-analyzer style: the fixture is data). Each
//! expectation is derived from the rule named above it, not from output.

use crate::frontend::lower::lower_programs;
use crate::frontend::sql::ddl::parse_schema;
use crate::model::btp::{Body, Program, Workload};
use crate::model::error::SourceFile;
use crate::model::schema::AttrSet;

const SCHEMA: &str = "CREATE TABLE A (k INT PRIMARY KEY, x INT, y INT);
CREATE TABLE B (k INT PRIMARY KEY, ak INT REFERENCES A, z INT);";

fn set(w: &Workload, rel: usize, s: &Option<AttrSet>) -> String {
    match s {
        None => "⊥".into(),
        Some(s) => format!("{{{}}}", w.schema.rel(rel).names(s).join(", ")),
    }
}

fn body(p: &Program, b: &Body) -> String {
    let all = |v: &[Body], sep: &str| v.iter().map(|b| body(p, b)).collect::<Vec<_>>().join(sep);
    match b {
        Body::Stmt(i) => p.statements[*i].id.clone(),
        Body::Seq(v) if v.is_empty() => "ε".into(),
        Body::Seq(v) => all(v, "; "),
        Body::Branch(v) => format!("({})", all(v, " | ")),
        Body::Opt(b) => format!("({} | ε)", body(p, b)),
        Body::Loop(b) => format!("loop({})", body(p, b)),
    }
}

/// One line per statement (`q1 key sel A ⊥ {x} ⊥`), then the body and
/// the constraints.
fn btp(program: &str) -> String {
    let schema = parse_schema(&SourceFile::new("s.sql", SCHEMA)).expect("schema");
    let l = lower_programs(
        "t".into(),
        None,
        schema,
        &[SourceFile::new("P.sql", program)],
    )
    .expect("lowers");
    let w = &l.workload;
    let p = &w.programs[0];
    let mut out = vec![];
    for s in &p.statements {
        out.push(format!(
            "{} {} {} {} {} {}{}",
            s.id,
            s.ty,
            w.schema.rel(s.rel).name,
            set(w, s.rel, &s.pread),
            set(w, s.rel, &s.read),
            set(w, s.rel, &s.write),
            if s.locking { " locking" } else { "" }
        ));
    }
    out.push(format!("body: {}", body(p, &p.body)));
    for c in &p.constraints {
        out.push(format!("constraint: {}", w.constraint_text(p, c)));
    }
    out.join("\n")
}

fn check(program: &str, expected: &str) {
    assert_eq!(btp(program), expected.trim(), "\n{program}");
}

/// SELECT: key-based when the WHERE equates the primary key to a
/// parameter; the select list is the ReadSet, key columns only locate.
#[test]
fn key_select() {
    check(
        "SELECT x INTO :v FROM A WHERE k = :p;",
        "q1 key sel A ⊥ {x} ⊥\nbody: q1",
    );
}

/// Otherwise predicate-based: the WHERE columns are the PReadSet.
#[test]
fn predicate_select() {
    check(
        "SELECT x FROM A WHERE y > :p;",
        "q1 pred sel A {y} {x} ⊥\nbody: q1",
    );
}

/// UPDATE: WriteSet = SET columns, ReadSet = what SET expressions read.
#[test]
fn key_update_reads_what_set_reads() {
    check(
        "UPDATE A SET x = x + 1 WHERE k = :p;",
        "q1 key upd A ⊥ {x} {x}\nbody: q1",
    );
}

/// DELETE writes every attribute; a predicate DELETE has no ReadSet.
#[test]
fn predicate_delete() {
    check(
        "DELETE FROM B WHERE z = 0;",
        "q1 pred del B {z} ⊥ {k, ak, z}\nbody: q1",
    );
}

/// IF without ELSE: a branch with an empty alternative; the condition
/// reads no table.
#[test]
fn if_without_else_is_optional() {
    check(
        "IF :c > 0 THEN UPDATE A SET x = 1 WHERE k = :p; END IF;",
        "q1 key upd A ⊥ {} {x}\nbody: (q1 | ε)",
    );
}

/// A subquery in SET is a read before the outer statement; a subquery
/// does not abort on a missing row, so it is predicate-based over its key.
#[test]
fn subquery_in_set_reads_first() {
    check(
        "UPDATE A SET x = (SELECT z FROM B WHERE k = :b) WHERE k = :a;",
        "q1 pred sel B {k} {z} ⊥\nq2 key upd A ⊥ {} {x}\nbody: q1; q2",
    );
}

/// FOUND tested after a key read, and an insert of the same key: the
/// program goes on when the row is missing (Section 5.4 fails), so the
/// read is predicate-based over the key.
#[test]
fn read_of_a_possibly_missing_row_is_a_predicate_read() {
    check(
        "SELECT x INTO :v FROM A WHERE k = :p;
         IF NOT FOUND THEN INSERT INTO A VALUES (:p, 0, 0); END IF;",
        "q1 pred sel A {k} {x} ⊥\nq2 ins A ⊥ ⊥ {k, x, y}\nbody: q1; (q2 | ε)",
    );
}

/// FOR UPDATE on a key-based read whose WHERE is the key alone locks.
#[test]
fn locking_read() {
    check(
        "SELECT x INTO :v FROM A WHERE k = :p FOR UPDATE;",
        "q1 key sel A ⊥ {x} ⊥ locking\nbody: q1",
    );
}

/// FK inference: the insert's `ak` is pinned to `:a`, the key of the
/// earlier key-based update of A, so q1 = f(q2).
#[test]
fn foreign_key_constraint_is_inferred() {
    check(
        "UPDATE A SET x = x + 1 WHERE k = :a;
         INSERT INTO B VALUES (:b, :a, 0);",
        "q1 key upd A ⊥ {x} {x}\nq2 ins B ⊥ ⊥ {k, ak, z}\nbody: q1; q2\nconstraint: q1 = fk_B_A(q2)",
    );
}

/// An insert whose parent row this program did not write: PostgreSQL's
/// foreign-key check reads the parent's key first (integrity.rs); the
/// check reads A's row k = :a, so q1 = fk_B_A(q2). (When the program
/// wrote that row earlier, as in `foreign_key_constraint_is_inferred`,
/// there is no extra read.)
#[test]
fn foreign_key_check_reads_an_unwritten_parent() {
    check(
        "INSERT INTO B VALUES (:b, :a, 0);",
        "q1 key sel A ⊥ {k} ⊥\nq2 ins B ⊥ ⊥ {k, ak, z}\nbody: q1; q2\nconstraint: q1 = fk_B_A(q2)",
    );
}

/// Several rows (or INSERT … SELECT): the parents are not known, so the
/// check is a predicate read over A's key.
#[test]
fn foreign_key_check_of_several_rows_is_a_predicate_read() {
    check(
        "INSERT INTO B VALUES (:b, :a, 0), (:c, :d, 0);",
        "q1 pred sel A {k} {k} ⊥\nq2 ins B ⊥ ⊥ {k, ak, z}\nbody: q1; q2",
    );
}

/// Deleting a referenced row (NO ACTION): PostgreSQL checks that no B row
/// still references it, a predicate read of B's foreign-key column after
/// the delete.
#[test]
fn delete_of_a_referenced_row_checks_for_children() {
    check(
        "DELETE FROM A WHERE k = :a;",
        "q1 key del A ⊥ ⊥ {k, x, y}\nq2 pred sel B {ak} {ak} ⊥\nbody: q1; q2",
    );
}

/// Re-pointing a reference: the new parent's existence is read first; its
/// value is not tracked, so over A's whole key.
#[test]
fn update_of_a_foreign_key_column_reads_the_parent() {
    check(
        "UPDATE B SET ak = :a WHERE k = :b;",
        "q1 pred sel A {k} {k} ⊥\nq2 key upd B ⊥ {} {ak}\nbody: q1; q2",
    );
}

/// WITH: the reads of every part on the statement's snapshot first (the
/// UPDATE's scan: the existence of row :p), then the writes (issue 21);
/// the main statement's read of the CTE by name reads no table (the
/// UPDATE already read what RETURNING returns: its ReadSet has y besides
/// x).
#[test]
fn data_modifying_cte() {
    // The snapshot read of the UPDATE's row (q1) and the update (q2) are
    // of the same key `k = :p`, the update unconditional: the forward
    // same-tuple link of issue 24 (docs/allocation.md, Lemma 3).
    check(
        "WITH u AS (UPDATE A SET x = x + 1 WHERE k = :p RETURNING y)\nSELECT y INTO :v FROM u;",
        "q1 key sel A ⊥ {k} ⊥\nq2 key upd A ⊥ {x, y} {x}\nbody: q1; q2\nconstraint: q2 = id(q1)",
    );
    check(
        "WITH r AS (SELECT x FROM A WHERE y = :p)\nDELETE FROM B WHERE k = :b;",
        // The DELETE's snapshot read of its row (q2) and the delete (q3):
        // the same forward link.
        "q1 pred sel A {y} {x} ⊥\nq2 key sel B ⊥ {k} ⊥\nq3 key del B ⊥ ⊥ {k, ak, z}\nbody: q1; q2; q3\nconstraint: q3 = id(q2)",
    );
}

/// The audit against PostgreSQL's tree (issue 21), with fake lowerings:
/// what a lowering that skipped a position would have touched and
/// inlined. The tree of `UPDATE a … g(1) … EXISTS (SELECT … FROM b)`
/// references a, b and g; each omission is named.
#[test]
fn postgresql_audit_names_what_a_lowering_skipped() {
    use super::functions::{unaccounted, Missing};
    use crate::frontend::sql::{gate, Snippet};
    let text = "UPDATE a SET x = g(1) + EXTRACT(year FROM now()) WHERE k = :k \
                AND EXISTS (SELECT 1 FROM public.b WHERE trim(both ' ' from 'x') = 'x')";
    let f = SourceFile::new("p.sql", text);
    let snip = Snippet {
        text: text.into(),
        offset: 0,
        parsed: None,
    };
    let pg = gate::statement(&f, &snip, text).unwrap();
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let builtin = |f: &str| super::functions::is_builtin(f);
    // Everything accounted for: a and b touched, g inlined; EXTRACT and
    // TRIM are PostgreSQL's `pg_catalog.extract` / `pg_catalog.btrim`.
    assert_eq!(unaccounted(&pg, &s(&["a", "b"]), &s(&["g"]), builtin), None);
    // The subquery skipped.
    assert_eq!(
        unaccounted(&pg, &s(&["a"]), &s(&["g"]), builtin),
        Some(Missing::Table("b".into()))
    );
    // The call skipped (not inlined, not pure, not a built-in).
    assert_eq!(
        unaccounted(&pg, &s(&["a", "b"]), &[], builtin),
        Some(Missing::Function("g".into()))
    );
    // Listed under `pure_functions:`.
    assert_eq!(
        unaccounted(&pg, &s(&["a", "b"]), &[], |f| builtin(f) || f == "g"),
        None
    );
    // A `pg_catalog.` function the grammar does not write is no pass.
    let text = "SELECT pg_catalog.query_to_xml('select * from b', true, true, '')";
    let pg = gate::statement(&f, &snip, text).unwrap();
    assert_eq!(
        unaccounted(&pg, &[], &[], builtin),
        Some(Missing::Function("pg_catalog.query_to_xml".into()))
    );
}
