//! Issue 21, class 7 and "PostgreSQL's parser as the gate": isolint reads
//! the text of programs and routines as PostgreSQL 15 lexes it, every
//! statement it lowers is one PostgreSQL's parser accepts (else a located
//! error with PostgreSQL's message), and what PostgreSQL's parse tree
//! references is accounted for by the lowering (fail-closed audit).
//! Expected lexing comes from PostgreSQL 15 (psql -c on a real server, see
//! each test); expected statements from reading the program.

use isolint::frontend::sql_dir::lower_texts;
use isolint::frontend::Loaded;
use isolint::model::error::SourceFile;

const SCHEMA: &str = "CREATE TABLE acct (id int PRIMARY KEY, name text, bal int);\n\
                      CREATE TABLE log (id int PRIMARY KEY, msg text);\n";

fn load(files: &[(&str, &str)]) -> Result<Loaded, String> {
    let schema = SourceFile::new("schema.sql", SCHEMA);
    let files: Vec<SourceFile> = files.iter().map(|(n, t)| SourceFile::new(*n, *t)).collect();
    lower_texts(&schema, &files).map_err(|e| {
        let at = e
            .span
            .map(|l| format!(" @{}", l.offset()))
            .unwrap_or_default();
        format!("{}{at}", e.message)
    })
}

/// The lowered statements of the first program: `type relation`.
fn statements(files: &[(&str, &str)]) -> Vec<String> {
    let l = load(files).unwrap_or_else(|e| panic!("expected a workload, got: {e}"));
    let w = &l.workload;
    w.programs[0]
        .statements
        .iter()
        .map(|s| {
            format!(
                "{} {}",
                s.ty.name(),
                w.schema.rel(s.rel).name.to_lowercase()
            )
        })
        .collect()
}

fn error(files: &[(&str, &str)]) -> String {
    match load(files) {
        Ok(_) => panic!("expected an error"),
        Err(e) => e,
    }
}

// ---- 1. Lexing as PostgreSQL lexes ----

/// `E'a\''` is one string (PostgreSQL 15: `SELECT E'a\'';` gives `a'`).
/// isolint used to read the string as ending at `\'` and reported "a
/// statement without a terminating `;`" spanning the rest of the file.
#[test]
fn escape_string_with_backslash_quote() {
    let p = "UPDATE acct SET name = E'a\\';' WHERE id = :id;\n\
             SELECT bal FROM acct WHERE id = :id;\n";
    assert_eq!(
        statements(&[("p.sql", p)]),
        ["key upd acct", "key sel acct"]
    );
}

/// Block comments nest (`SELECT /* /* ; */ ; */ 1` is `SELECT 1` on
/// PostgreSQL 15); a `--` comment inside a statement may hold `'` and `;`.
#[test]
fn nested_comments_and_line_comments_inside_statements() {
    let p = "/* outer /* inner ; ' */ still ; ' comment */\n\
             UPDATE acct SET bal = bal + 1 -- it's; not the end\n\
               WHERE id = :id;\n\
             INSERT INTO log VALUES (:id, 'done');\n";
    assert_eq!(statements(&[("p.sql", p)]), ["key upd acct", "ins log"]);
}

/// `U&'…'` strings and `"…"` identifiers with `""` hide their `;`.
#[test]
fn unicode_strings_and_quoted_identifiers() {
    let p = "UPDATE acct SET \"name\" = U&'d\\0061t;\"' WHERE id = :id;\n\
             SELECT bal FROM acct WHERE id = :id;\n";
    assert_eq!(
        statements(&[("p.sql", p)]),
        ["key upd acct", "key sel acct"]
    );
}

/// `$1` is a parameter, `$t$ … $t$` a string (PostgreSQL's `dolqdelim`).
#[test]
fn dollar_quotes_and_parameters() {
    let p = "UPDATE acct SET name = $t$ ; ' $$ $t$ WHERE id = $1;\n\
             SELECT bal FROM acct WHERE id = $1;\n";
    assert_eq!(
        statements(&[("p.sql", p)]),
        ["key upd acct", "key sel acct"]
    );
}

/// A PL/pgSQL routine whose body holds `E'\''`, a nested comment and a
/// `--` comment with a quote.
#[test]
fn routine_bodies_lex_as_postgresql() {
    let r = "CREATE FUNCTION pay(k int) RETURNS void LANGUAGE plpgsql AS $$\n\
             BEGIN\n\
               /* a /* b ; */ ' ; */\n\
               UPDATE acct SET name = E'\\'; END;' WHERE id = k; -- don't\n\
               INSERT INTO log VALUES (k, 'paid');\n\
             END $$;\n";
    assert_eq!(statements(&[("r.sql", r)]), ["key upd acct", "ins log"]);
}

/// Where sqlparser 0.63 does not take a form PostgreSQL takes (`U&"…"`
/// identifiers), the error is located at the form.
#[test]
fn unsupported_lexemes_are_located_errors() {
    let p = "UPDATE acct SET U&\"bal\" = 1 WHERE id = :id;\n";
    let e = error(&[("p.sql", p)]);
    assert!(e.contains("@17") || e.contains("@16"), "{e}");
}
