//! PostgreSQL's parser as the gate (issue 21): every statement and
//! expression isolint lowers is first parsed by PostgreSQL 15's own parser
//! (`pg`). A text PostgreSQL rejects is a located error with PostgreSQL's
//! message; a text it accepts yields the relations and functions its parse
//! tree references (`PgRefs`), which the lowering's audit must account for
//! (`lower::functions::audit`).
//!
//! What is parsed is the text sqlparser parses (PL/pgSQL variables as
//! `:name`, routine calls cut out, `INTO` targets blanked), with isolint's
//! parameters `:name` and JDBC's `?` written as PostgreSQL's `$1`:
//! PostgreSQL's parser does not type parameters, so one number serves.

use super::pg;
use super::{lex, Anchors, Snippet};
use crate::model::error::{Diag, Result, SourceFile};

/// What PostgreSQL's parse tree of a statement references, names
/// lower-cased as PostgreSQL folds them (quoted names kept), schema
/// qualification dropped except `pg_catalog.` on functions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PgRefs {
    pub tables: Vec<String>,
    pub functions: Vec<String>,
    /// Names of the statement's CTEs. pg_query leaves a CTE's name out of
    /// `tables` only when it meets the CTE before the reference, which it
    /// does not for `WITH j AS (…) UPDATE t … FROM j` (UPDATE's FROM is
    /// walked before its WITH): the audit takes these names as accounted
    /// for when no table of the schema has them.
    pub ctes: Vec<String>,
}

/// Parse `text` (positions as in `snip.parse_text()`) as one statement
/// with PostgreSQL's parser.
pub fn statement(file: &SourceFile, snip: &Snippet, text: &str) -> Result<PgRefs> {
    check(file, snip, text, "", "statement")
}

/// Parse `text` as an expression: PL/pgSQL evaluates one as `SELECT expr`.
pub fn expression(file: &SourceFile, snip: &Snippet, text: &str) -> Result<PgRefs> {
    check(file, snip, text, "SELECT ", "expression")
}

fn check(
    file: &SourceFile,
    snip: &Snippet,
    text: &str,
    prefix: &str,
    what: &str,
) -> Result<PgRefs> {
    let (pg_text, anchors) = to_postgres(text, prefix);
    match pg::parse(&pg_text) {
        Ok(p) => Ok(PgRefs {
            tables: p.tables.iter().map(|t| unqualified(t)).collect(),
            functions: p.functions.iter().map(|f| function_name(f)).collect(),
            ctes: p.cte_names.clone(),
        }),
        Err(e) => {
            let back = |p: usize| {
                let mut a = Snippet {
                    text: String::new(),
                    offset: 0,
                    parsed: None,
                };
                a.parsed = Some(Box::new(super::Rewrite {
                    text: pg_text.clone(),
                    map: anchors.0.clone(),
                }));
                a.orig(p).min(text.len())
            };
            // At the end of the input: where something is missing.
            let local = if e.message.ends_with("at end of input") {
                text.trim_end().len()
            } else {
                e.at.map_or(text.len() - text.trim_start().len(), back)
            };
            let at = snip.offset + snip.orig(local).min(snip.text.len());
            Err(Diag::new(format!(
                "PostgreSQL rejects this {what}: {}",
                source_message(&e.message, &file.text, at)
            ))
            .help("isolint reads only what PostgreSQL 15 accepts; correct the SQL (psql shows the same error)")
            .at(file, at, token_len(&file.text, at), "PostgreSQL stops here"))
        }
    }
}

/// PostgreSQL's message, with the token it quotes as the user wrote it
/// when that token is isolint's `$1` for a parameter.
fn source_message(message: &str, file: &str, at: usize) -> String {
    let Some((head, quoted)) = message.split_once(" at or near \"") else {
        return message.to_string();
    };
    let rewritten =
        quoted.trim_end_matches('"') == "$1" && !file[at.min(file.len())..].starts_with("$1");
    if !rewritten {
        return message.to_string();
    }
    match file.get(at..at + token_len(file, at)) {
        Some(t) if !t.is_empty() => format!("{head} at or near \"{t}\""),
        _ => message.to_string(),
    }
}

/// The length of the token at `at` (a lexeme, up to 40 bytes; a
/// `:`-prefixed or plain word; else one character), on char boundaries.
fn token_len(text: &str, at: usize) -> usize {
    let b = text.as_bytes();
    if at >= b.len() || !text.is_char_boundary(at) {
        return 1;
    }
    let mut end = if let Some(e) = lex::lexeme_end(text, at) {
        e.min(at + 40)
    } else {
        let mut j = at + usize::from(b[at] == b':');
        while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_' || b[j] == b'$') {
            j += 1;
        }
        if j == at + usize::from(b[at] == b':') {
            at + text[at..].chars().next().map_or(1, char::len_utf8)
        } else {
            j
        }
    };
    while end > at + 1 && !text.is_char_boundary(end) {
        end -= 1;
    }
    (end - at).max(1)
}

/// `prefix` + `text` with `:name` (also `:r$f`, isolint's record fields)
/// and JDBC's `?` placeholders as `$1`, and `INTO [STRICT] :a, :b` cut
/// out (PL/pgSQL cuts its INTO targets before the SQL parser sees the
/// statement), with the anchors back to `text`.
fn to_postgres(text: &str, prefix: &str) -> (String, Anchors) {
    let qmarks = super::qmark_offsets(text);
    let b = text.as_bytes();
    let mut out = String::with_capacity(prefix.len() + text.len());
    let mut anchors = Anchors::default();
    out.push_str(prefix);
    anchors.at(prefix.len(), 0);
    let (mut i, mut copied) = (0, 0);
    let mut cut = |out: &mut String, from: usize, to: usize, with: &str, copied: &mut usize| {
        out.push_str(&text[*copied..from]);
        anchors.at(out.len(), from);
        out.push_str(with);
        anchors.at(out.len(), to);
        *copied = to;
    };
    while i < b.len() {
        if let Some(e) = lex::lexeme_end(text, i) {
            i = e;
            continue;
        }
        if let Some(e) = into_targets_end(text, i) {
            cut(&mut out, i, e, " ", &mut copied);
            i = e;
        } else if let Some(e) = named_param_end(text, i) {
            cut(&mut out, i, e, "$1", &mut copied);
            i = e;
        } else if b[i] == b'?' && qmarks.contains(&i) {
            cut(&mut out, i, i + 1, "$1", &mut copied);
            i += 1;
        } else if lex::is_word_byte(b[i]) {
            while i < b.len() && (lex::is_word_byte(b[i]) || b[i] == b'$') {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    out.push_str(&text[copied..]);
    (out, anchors)
}

/// `:name` at `i` (not the second colon of a `::` cast): its end.
fn named_param_end(text: &str, i: usize) -> Option<usize> {
    let b = text.as_bytes();
    // `i` may be the end of the text (`… INTO` at the end of a statement).
    let named = b.get(i) == Some(&b':')
        && (i == 0 || b[i - 1] != b':')
        && b.get(i + 1)
            .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_');
    named.then(|| {
        let mut j = i + 1;
        while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_' || b[j] == b'$') {
            j += 1;
        }
        j
    })
}

/// `INTO [STRICT] :a, :b` starting at `i` (a word boundary): its end.
fn into_targets_end(text: &str, i: usize) -> Option<usize> {
    let word = |at: usize, w: &str| {
        text.get(at..at + w.len())
            .is_some_and(|s| s.eq_ignore_ascii_case(w))
            && !text
                .as_bytes()
                .get(at + w.len())
                .is_some_and(|&c| lex::is_word_byte(c))
    };
    if !word(i, "into") {
        return None;
    }
    let mut j = i + 4;
    j += lex::blank_prefix(&text[j..]);
    if word(j, "strict") {
        j += 6;
        j += lex::blank_prefix(&text[j..]);
    }
    let mut end = None;
    while let Some(e) = named_param_end(text, j) {
        end = Some(e);
        j = e + lex::blank_prefix(&text[e..]);
        if text.as_bytes().get(j) != Some(&b',') {
            break;
        }
        j += 1;
        j += lex::blank_prefix(&text[j..]);
    }
    end
}

/// A file of routines (migrations) or a library of SQL functions: the
/// whole file through PostgreSQL's parser (every CREATE FUNCTION /
/// PROCEDURE and what surrounds them).
/// The statements and expressions of PL/pgSQL bodies are gated one by one
/// as the procedural parser reads them (`statement`, `expression`), as
/// PL/pgSQL hands them to the SQL parser. PL/pgSQL's own compiler
/// (`pg::parse_plpgsql`) is no gate: libpg_query runs it without the
/// routine's parameters and without a catalogue, and it rejects valid
/// routines (the bundled SmallBank and TPC-C ones: `variable "$1" does not
/// exist`, `"w.w_name" is not a known variable`; `outer.v` gives a syntax
/// error), so its rejection is not PostgreSQL's.
pub fn routine_file(file: &SourceFile) -> Result<()> {
    pg::parse(&file.text).map(|_| ()).map_err(|e| {
        let at = e.at.unwrap_or(0);
        Diag::new(format!("PostgreSQL rejects this statement: {}", e.message))
            .help("isolint reads only what PostgreSQL 15 accepts; correct the SQL (psql shows the same error)")
            .at(file, at, token_len(&file.text, at), "PostgreSQL stops here")
    })
}

fn unqualified(name: &str) -> String {
    name.rsplit('.').next().unwrap_or(name).to_string()
}

fn function_name(name: &str) -> String {
    match name.split_once('.') {
        Some(("pg_catalog", f)) => format!("pg_catalog.{f}"),
        _ => unqualified(name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snip(t: &str) -> Snippet {
        Snippet {
            text: t.to_string(),
            offset: 0,
            parsed: None,
        }
    }

    #[test]
    fn parameters_become_postgresql_parameters() {
        let (t, _) = to_postgres(
            "SELECT a::int FROM t WHERE b = :x AND c = ? AND d ? 'k'",
            "",
        );
        assert_eq!(
            t,
            "SELECT a::int FROM t WHERE b = $1 AND c = $1 AND d ? 'k'"
        );
        let (t, _) = to_postgres("':x' || :r$f", "SELECT ");
        assert_eq!(t, "SELECT ':x' || $1");
        let (t, _) = to_postgres(
            "WITH c AS (SELECT 1) SELECT a, b INTO STRICT :a, :b FROM c",
            "",
        );
        assert_eq!(t, "WITH c AS (SELECT 1) SELECT a, b   FROM c");
    }

    #[test]
    fn rejections_are_located_in_the_source() {
        let text = "UPDATE t SET a = :value WHERE id = :id id";
        let f = SourceFile::new("p.sql", text);
        let e = statement(&f, &snip(text), text).unwrap_err();
        assert!(
            e.message
                .ends_with("PostgreSQL rejects this statement: syntax error at or near \"id\""),
            "{}",
            e.message
        );
        assert_eq!(e.span.map(|s| s.offset()), Some(text.len() - 2));
        let text = "a = = :value";
        let f = SourceFile::new("p.sql", text);
        let e = expression(&f, &snip(text), text).unwrap_err();
        assert_eq!(e.span.map(|s| s.offset()), Some(4));
        // PostgreSQL's own token when it is no rewriting of isolint's.
        let text = "a >> > 1";
        let f = SourceFile::new("p.sql", text);
        let e = expression(&f, &snip(text), text).unwrap_err();
        assert!(e.message.ends_with("at or near \">\""), "{}", e.message);
        let text = "x IN (:value :other)";
        let f = SourceFile::new("p.sql", text);
        let e = expression(&f, &snip(text), text).unwrap_err();
        assert!(
            e.message.ends_with("at or near \":other\""),
            "{}",
            e.message
        );
        assert_eq!(e.span.map(|s| s.offset()), Some(13));
    }

    #[test]
    fn long_lexemes_are_cut_on_char_boundaries() {
        let t = format!("'{}'", "é".repeat(30));
        for at in 0..t.len() {
            let n = token_len(&t, at);
            assert!(t.is_char_boundary(at) && t.get(at..at + n).is_some() || n == 1);
        }
    }

    #[test]
    fn references() {
        let text = "WITH c AS (SELECT f(a) FROM public.t) SELECT now(), EXTRACT(year FROM b) FROM c, \"U\"";
        let f = SourceFile::new("p.sql", text);
        let r = statement(&f, &snip(text), text).unwrap();
        assert_eq!(r.tables, ["U", "t"]);
        assert_eq!(r.functions, ["f", "now", "pg_catalog.extract"]);
    }
}
