//! PostgreSQL's own parser (libpg_query 15, through the `pg_query` crate):
//! the reference for what is SQL. isolint's procedural layers and sqlparser
//! may read *less* than PostgreSQL; whatever they read must also be
//! accepted here, and what PostgreSQL's tree references (relations,
//! functions) is what the lowering must account for (issue 21).
//!
//! The crate reports a parse error without its position; PostgreSQL has
//! one (`cursorpos`), so on error the text is parsed once more through the
//! C API to get it. That is the only `unsafe` of isolint.

use std::ffi::{c_char, c_int, CString};

pub use pg_query::{protobuf, NodeEnum, NodeRef};

/// A text PostgreSQL accepted: its parse tree and what the tree references.
#[derive(Debug, Clone)]
pub struct Parsed {
    pub tree: protobuf::ParseResult,
    /// Relations referenced anywhere in the tree (CTE names excluded),
    /// schema-qualified as written.
    pub tables: Vec<String>,
    /// Functions called anywhere in the tree, schema-qualified as written.
    pub functions: Vec<String>,
    /// Names of the CTEs the text defines.
    pub cte_names: Vec<String>,
}

/// PostgreSQL's error for a text it does not accept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgError {
    /// PostgreSQL's message, as `psql` would print it (`syntax error at or
    /// near "x"`).
    pub message: String,
    /// Byte offset into the parsed text where PostgreSQL stopped, when it
    /// says.
    pub at: Option<usize>,
}

impl std::fmt::Display for PgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Parses `text` (one or more statements) as PostgreSQL 15 does.
pub fn parse(text: &str) -> Result<Parsed, PgError> {
    let r = pg_query::parse(text).map_err(|e| PgError {
        message: message_of(&e),
        at: cursor(text),
    })?;
    let mut tables = r.tables();
    let mut functions = r.functions();
    tables.sort();
    functions.sort();
    Ok(Parsed {
        tables,
        functions,
        cte_names: r.cte_names.clone(),
        tree: r.protobuf,
    })
}

/// What a query text touches, for over-approximating a body isolint does
/// not lower statement by statement: the relations it names (CTE names
/// excluded), whether it may write (a DML or DDL statement, a
/// data-modifying CTE, or anything but SELECT), the functions it calls.
#[derive(Debug, Clone)]
pub struct Touches {
    pub tables: Vec<String>,
    pub writes: bool,
    pub functions: Vec<String>,
}

pub fn touches(text: &str) -> Result<Touches, PgError> {
    let r = pg_query::parse(text).map_err(|e| PgError {
        message: message_of(&e),
        at: cursor(text),
    })?;
    let writes = !r.dml_tables().is_empty()
        || !r.ddl_tables().is_empty()
        || r.statement_types().iter().any(|t| *t != "SelectStmt");
    Ok(Touches {
        tables: r.tables(),
        writes,
        functions: r.functions(),
    })
}

/// The statements of `text` as PostgreSQL's parser splits them: byte
/// ranges of each statement without its `;` (comments and blanks between
/// statements are outside every range).
pub fn split(text: &str) -> Result<Vec<(usize, usize)>, PgError> {
    let parts = pg_query::split_with_parser(text).map_err(|e| PgError {
        message: message_of(&e),
        at: cursor(text),
    })?;
    let base = text.as_ptr() as usize;
    Ok(parts
        .iter()
        .map(|s| {
            let start = s.as_ptr() as usize - base;
            (start, start + s.len())
        })
        .collect())
}

/// Parses a `CREATE FUNCTION … LANGUAGE plpgsql` statement's body with
/// PostgreSQL's PL/pgSQL compiler (no catalogue: names are not resolved).
pub fn parse_plpgsql(text: &str) -> Result<serde_json::Value, PgError> {
    pg_query::parse_plpgsql(text).map_err(|e| PgError {
        message: message_of(&e),
        at: plpgsql_cursor(text),
    })
}

fn message_of(e: &pg_query::Error) -> String {
    match e {
        pg_query::Error::Parse(m) | pg_query::Error::Split(m) | pg_query::Error::Scan(m) => {
            m.clone()
        }
        other => other.to_string(),
    }
}

#[repr(C)]
struct CError {
    message: *mut c_char,
    funcname: *mut c_char,
    filename: *mut c_char,
    lineno: c_int,
    cursorpos: c_int,
    context: *mut c_char,
}

#[repr(C)]
struct CParseResult {
    parse_tree: *mut c_char,
    stderr_buffer: *mut c_char,
    error: *mut CError,
}

#[repr(C)]
struct CPlpgsqlResult {
    plpgsql_funcs: *mut c_char,
    error: *mut CError,
}

extern "C" {
    fn pg_query_parse(input: *const c_char) -> CParseResult;
    fn pg_query_free_parse_result(result: CParseResult);
    fn pg_query_parse_plpgsql(input: *const c_char) -> CPlpgsqlResult;
    fn pg_query_free_plpgsql_parse_result(result: CPlpgsqlResult);
}

/// Where PostgreSQL's parser stops in `text`, as a byte offset.
fn cursor(text: &str) -> Option<usize> {
    let input = CString::new(text).ok()?;
    // SAFETY: `input` is a valid NUL-terminated string that outlives the
    // call; the result is read before it is freed, once, by the function
    // libpg_query provides for it.
    let pos = unsafe {
        let r = pg_query_parse(input.as_ptr());
        let pos = if r.error.is_null() {
            0
        } else {
            (*r.error).cursorpos
        };
        pg_query_free_parse_result(r);
        pos
    };
    char_position(text, pos)
}

fn plpgsql_cursor(text: &str) -> Option<usize> {
    let input = CString::new(text).ok()?;
    // SAFETY: as in `cursor`.
    let pos = unsafe {
        let r = pg_query_parse_plpgsql(input.as_ptr());
        let pos = if r.error.is_null() {
            0
        } else {
            (*r.error).cursorpos
        };
        pg_query_free_plpgsql_parse_result(r);
        pos
    };
    char_position(text, pos)
}

/// PostgreSQL's `cursorpos` is 1-based and counts characters.
fn char_position(text: &str, pos: c_int) -> Option<usize> {
    let n = usize::try_from(pos).ok().filter(|&n| n > 0)?;
    Some(
        text.char_indices()
            .nth(n - 1)
            .map_or(text.len(), |(i, _)| i),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_errors_are_located() {
        let e = parse("SELECT 1;\nSELEC 2;").unwrap_err();
        assert_eq!(e.message, "syntax error at or near \"SELEC\"");
        assert_eq!(e.at, Some(10));
        // Multi-byte characters before the error: a byte offset.
        let e = parse("SELECT 'é' FRM t").unwrap_err();
        // (`FRM` is an alias; PostgreSQL stops at `t`.)
        assert_eq!(e.at, Some("SELECT 'é' FRM ".len()));
    }

    #[test]
    fn split_gives_ranges_in_the_text() {
        let t = "select /*;*/ 1; select E'a\\';', $$;$$;";
        let r = split(t).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(&t[r[0].0..r[0].1], "select /*;*/ 1");
        assert_eq!(t[r[1].0..r[1].1].trim(), "select E'a\\';', $$;$$");
    }

    #[test]
    fn accepted_text_has_no_error() {
        let p = parse("WITH c AS (SELECT f(a) FROM t) SELECT * FROM c, u WHERE a = $1").unwrap();
        assert_eq!(p.tables, ["t", "u"]);
        assert_eq!(p.functions, ["f"]);
        assert_eq!(cursor("SELECT 1"), None);
    }
}
