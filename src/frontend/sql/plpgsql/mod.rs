//! PL/pgSQL routines (`CREATE [OR REPLACE] FUNCTION|PROCEDURE … LANGUAGE
//! plpgsql AS $$ … $$`) as transaction programs. The header is read by
//! hand; the body is parsed by the procedural layer (`procedural::Parser`) in
//! PL/pgSQL mode into the same program tree as the `.sql` dialect, with
//! the nodes PL/pgSQL adds (blocks, RETURN, cursors, calls). Variables and
//! parameters become `:name` in every snippet handed to sqlparser, after
//! the check PostgreSQL makes with `plpgsql.variable_conflict = error`.
//! Positions: the routines are parsed against a *shadow* of the file (same
//! length and lines, text outside the bodies blanked), so every diagnostic
//! points into the original file. This module knows nothing about BTPs.

mod body;
mod dynamic;
mod inline;

pub(crate) use super::lex::{find_word_in, ident_at, quoted_end};
pub(crate) use super::plenv::Cursor;
pub use super::plenv::{PlEnv, VarKind};
pub use inline::{bind_args, hoist_returns, inline_calls, Routines};
use std::collections::HashSet;

use super::procedural::{
    blank_prefix, dollar_quote_end, is_blank, is_word_byte, lex, split_top, Lex, Node, Parser,
    ProcExpr,
};
use super::Snippet;
use crate::model::error::{Diag, Result, SourceFile};
use crate::model::schema::Schema;

/// The text of the assignment `GET [CURRENT] DIAGNOSTICS v = ROW_COUNT`
/// becomes (its value is fresh, like every diagnostics item): lowering
/// reads it as a test of whether the statement before found its row (no
/// expression written in a program has this text).
pub const ROW_COUNT_MARK: &str = "GET DIAGNOSTICS ROW_COUNT";

/// Marks for the replay's executor (no expression written in a program
/// has these texts; lowering sees what it always saw: assignments of
/// fresh values, and expressions that read nothing). The text of the
/// cursor variable's assignment at `OPEN c` is `CURSOR OPEN`, at `CLOSE
/// c` `CURSOR CLOSE`, at `FETCH …`/`MOVE …` `CURSOR ` and the statement
/// up to INTO (`CURSOR FETCH NEXT FROM c`); a FETCH target k of n has
/// `CURSOR INTO k n`.
pub const CURSOR_MARK: &str = "CURSOR ";

/// Defined beside the parser that writes it (`procedural`), so that
/// `procedural` does not import from this module.
pub use super::procedural::ASSERT_MARK;

/// The first expression of a `RETURN NEXT`'s `Node::Eval` (then the
/// returned expressions): the replay's executor does not collect RETURN
/// NEXT rows, and stops where a routine's rows so made are used.
pub const RETURN_NEXT_MARK: &str = "RETURN NEXT";

/// The first expression of a `RETURN expr`'s `Node::Eval` (then the
/// returned expression): the replay's executor evaluates it into the
/// caller's result variable of an inlined call (issue 23). The mark's
/// text may go on with ` ` and the routine's declared return type, to
/// which the value is converted (`RETURN VALUE numeric(10, 2)`).
/// `RETURN f(x)` of a workload routine is the inlined call into a
/// variable `__callN`, then this mark with `:__callN`.
pub const RETURN_VALUE_MARK: &str = "RETURN VALUE";

/// The first node of an EXCEPTION handler's body: `Node::Eval` of an
/// expression with this text followed by the handler's conditions as
/// written (`EXCEPTION WHEN no_data_found OR SQLSTATE '22012'`), so the
/// executor catches what PL/pgSQL catches.
pub const HANDLER_MARK: &str = "EXCEPTION WHEN ";

/// The label of the block an `EXECUTE 'literal'` statement is wrapped
/// in: EXECUTE sets ROW_COUNT but not FOUND (no user label has a `$`).
pub const EXECUTE_LABEL: &str = "$execute";

/// The label of the loop a routine call found inside a statement that
/// names a table is queued in (`extract_calls`): it may run once per row.
pub const PER_ROW_LABEL: &str = "$per_row";

/// The label of the block `[statement, calls…]` that holds a statement
/// and the per-row calls of VOLATILE routines found in it
/// (`inline_calls`): the lowering puts the calls after the statement's
/// snapshot reads and before its writes (lower/order.rs).
pub const VOLATILE_LABEL: &str = "$volatile";

/// The label of a block whose queries read one snapshot (`inline_calls`):
/// the body of a STABLE or IMMUTABLE routine called in an expression, or
/// a statement with the per-row calls of such routines before it.
/// PostgreSQL 15 runs a non-VOLATILE routine's queries on the snapshot of
/// the query that calls it (on a server: a commit between two of its
/// queries is not seen by the second; tests/replay_checks.rs); the
/// explorer puts no commit inside (`Provenance::parts`).
pub const ONE_SNAPSHOT_LABEL: &str = "$one_snapshot";

/// How a parameter passes its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    In,
    Out,
    InOut,
}

/// A routine parameter: its name (if any), mode and default's byte range.
#[derive(Debug, Clone)]
pub struct Param {
    pub name: Option<String>,
    pub mode: Mode,
    pub default: Option<(usize, usize)>,
    /// The type as written, normalized (`norm_type`).
    pub ty: String,
}

/// A `CREATE FUNCTION|PROCEDURE` of a routine file, as written.
#[derive(Debug, Clone)]
pub struct Routine {
    pub name: String,
    /// The schema that qualifies the name, if any but `public` (the
    /// schema of an unqualified name under the default search_path).
    pub schema: Option<String>,
    pub abbrev: Option<String>,
    pub procedure: bool,
    pub params: Vec<Param>,
    pub language: String,
    /// `RETURNS trigger` / `event_trigger`: runs only when a trigger fires.
    pub trigger: bool,
    /// No STABLE or IMMUTABLE option (VOLATILE is PostgreSQL's default):
    /// each of its queries takes a fresh snapshot.
    pub volatile: bool,
    /// Byte range of the body inside its quotes.
    pub body: (usize, usize),
    /// The body is a single-quoted string (`''` escapes).
    pub quoted: bool,
    /// Byte offset of CREATE, and of the whole statement's end.
    pub at: usize,
    pub end: usize,
    /// The declared scalar return type as written (`RETURNS int`); None
    /// for a procedure and for SETOF, TABLE, record, void, trigger and
    /// `%TYPE` returns (`return_type`).
    pub returns: Option<String>,
}

impl Routine {
    /// What PostgreSQL identifies a routine by: its name and the types of
    /// its input parameters (a function's IN, INOUT and VARIADIC ones; a
    /// procedure's all, OUT included, as in PostgreSQL 14+). `CREATE OR
    /// REPLACE` with another signature makes an overload.
    pub fn signature(&self) -> String {
        let types: Vec<&str> = self
            .params
            .iter()
            .filter(|p| self.procedure || p.mode != Mode::Out)
            .map(|p| p.ty.as_str())
            .collect();
        let schema = self
            .schema
            .as_ref()
            .map_or(String::new(), |s| format!("{s}."));
        format!("{schema}{}({})", self.name, types.join(", "))
    }
}

/// A type name as PostgreSQL resolves it: lower case, typmods dropped,
/// the SQL-standard spellings and aliases mapped to one name
/// (`int4`/`int` → `integer`, `varchar(n)` → `character varying`, …).
pub fn norm_type(t: &str) -> String {
    let mut out = String::new();
    let (mut depth, mut quoted) = (0i32, false);
    let mut typmod = String::new();
    for c in t.trim().chars() {
        match c {
            // A quoted name keeps its case (`"T"` is not `t`).
            '"' => {
                quoted = !quoted;
                out.push(c);
            }
            _ if quoted => out.push(c),
            '(' => depth += 1,
            ')' => depth -= 1,
            _ if depth == 0 => out.push(c.to_ascii_lowercase()),
            _ => typmod.push(c),
        }
    }
    // float(p): real for p ≤ 24, double precision above (PostgreSQL).
    if out.trim() == "float" && typmod.trim().parse::<u32>().is_ok_and(|p| p <= 24) {
        return "real".into();
    }
    let words: Vec<&str> = out.split_whitespace().collect();
    let t = words.join(" ");
    let t = t
        .strip_prefix("pg_catalog.")
        .unwrap_or(&t)
        .replace(" [", "[");
    let (base, arr) = match t.find('[') {
        Some(k) => (t[..k].trim().to_string(), "[]"),
        None => (t.clone(), ""),
    };
    let base = match base.as_str() {
        "int" | "int4" | "integer" | "serial" | "serial4" => "integer",
        "int8" | "bigint" | "bigserial" | "serial8" => "bigint",
        "int2" | "smallint" | "smallserial" | "serial2" => "smallint",
        "float8" | "double precision" | "float" => "double precision",
        "float4" | "real" => "real",
        "decimal" | "numeric" => "numeric",
        "bool" | "boolean" => "boolean",
        "varchar" | "character varying" => "character varying",
        "char" | "character" | "bpchar" => "character",
        "timestamp" | "timestamp without time zone" => "timestamp without time zone",
        "timestamptz" | "timestamp with time zone" => "timestamp with time zone",
        "timetz" | "time with time zone" => "time with time zone",
        "time" | "time without time zone" => "time without time zone",
        b => b,
    };
    format!("{base}{arr}")
}

/// Statements a migration file may hold besides routines.
fn ignorable(first: &str, second: &str) -> bool {
    matches!(
        (first, second),
        (
            "SET" | "GRANT" | "REVOKE" | "COMMENT" | "BEGIN" | "COMMIT" | "END",
            _
        ) | ("ALTER" | "DROP", "FUNCTION" | "PROCEDURE")
            | ("SELECT", "PG_CATALOG")
    )
}

/// The routines of a file that defines at least one PL/pgSQL routine;
/// `None` for any other file (a program or a library of SQL functions).
pub fn scan_routines(file: &SourceFile) -> Result<Option<Vec<Routine>>> {
    scan(file, false)
}

/// The routines of the schema file (a `pg_dump` file): every other
/// statement is the schema reader's.
pub fn scan_schema_routines(file: &SourceFile) -> Result<Option<Vec<Routine>>> {
    scan(file, true)
}

fn scan(file: &SourceFile, schema: bool) -> Result<Option<Vec<Routine>>> {
    let text = &file.text;
    let toks = lex(text);
    let mut out = vec![];
    let mut from = 0usize;
    let mut k = 0usize;
    while k < toks.len() {
        let start = k;
        while k < toks.len() && toks[k].0 != Lex::Semi {
            k += 1;
        }
        let end = toks.get(k).map_or(text.len(), |t| t.1);
        let words: Vec<String> = toks[start..k]
            .iter()
            .take(4)
            .map(|t| text[t.1..t.2].to_ascii_uppercase())
            .collect();
        k += 1;
        let at = from + blank_prefix(&text[from..]);
        let stmt_from = from;
        from = end + 1;
        if is_blank(&text[at.min(end)..end]) {
            continue;
        }
        let w = |i: usize| words.get(i).map_or("", String::as_str);
        let kind = match (w(0), w(1), w(2), w(3)) {
            ("CREATE", "FUNCTION" | "PROCEDURE", ..) => 1,
            ("CREATE", "OR", "REPLACE", "FUNCTION" | "PROCEDURE") => 3,
            _ => 0,
        };
        if kind == 0 {
            // Schema DDL mixed into a migration (or the rest of a pg_dump
            // file): skipped with a warning (`skipped_ddl`); the schema
            // comes from the schema file.
            if schema || ignorable(w(0), w(1)) || is_ddl(w(0), w(1), w(2), w(3)) {
                continue;
            }
            // A file that starts with a data statement is a program (its
            // CREATE FUNCTION is then reported as DDL in a program); one
            // that starts with DDL or a DO block, as migrations do, is a
            // routine file if it defines a PL/pgSQL routine (decided
            // below), and the statement is an error there.
            let word = w(0).to_string();
            let migration = matches!(word.as_str(), "CREATE" | "ALTER" | "DROP" | "DO");
            if out.is_empty() && !migration {
                return Ok(None);
            }
            let help = if word == "DO" {
                "a DO block runs once, where the migration is applied, in no transaction program; isolint does not run it: remove it from the routine file (what it creates belongs in the schema file)"
            } else {
                "a routine file holds CREATE FUNCTION / CREATE PROCEDURE statements (SET, GRANT, COMMENT and ALTER/DROP FUNCTION are skipped); tables belong in the schema file"
            };
            out.push(Err(Diag::new(format!(
                "`{word}` in a file of PL/pgSQL routines"
            ))
            .help(help)
            .at(file, at, word.len().max(1), "here")));
            continue;
        }
        let h = header(file, stmt_from, at, end, kind, w(kind) == "PROCEDURE");
        // A header isolint cannot read in a file of routines is its error;
        // after another statement, only if the file turns out to be one.
        if h.is_err() && out.iter().all(Result::is_ok) {
            return h.map(|_| None);
        }
        out.push(h);
    }
    let is_routine_file = out
        .iter()
        .any(|r| matches!(r, Ok(r) if r.language == "plpgsql"));
    if !is_routine_file {
        return Ok(None);
    }
    let routines = out.into_iter().collect::<Result<Vec<_>>>()?;
    super::gate::routine_file(file)?;
    Ok(Some(routines))
}

/// A schema statement (CREATE TABLE / INDEX / TYPE / TRIGGER …, ALTER,
/// DROP of anything but a routine): no program, the schema file has it.
/// Triggers, rules and policies add reads and writes to statements: in a
/// migration they stay errors (the schema file, where they are modelled,
/// must have them), not skipped.
fn is_ddl(first: &str, second: &str, third: &str, fourth: &str) -> bool {
    let adds_reads = |w: &str| matches!(w, "TRIGGER" | "RULE" | "POLICY");
    // The object kind: `CREATE [OR REPLACE] [CONSTRAINT] kind`.
    let kind = match (second, third) {
        ("OR", _) => fourth,
        ("CONSTRAINT", _) => third,
        _ => second,
    };
    match first {
        "CREATE" => !matches!(kind, "FUNCTION" | "PROCEDURE") && !adds_reads(kind),
        "ALTER" => second != "POLICY",
        "DROP" => true,
        _ => false,
    }
}

/// psql meta-commands (a line starting with a backslash: pg_dump's
/// `\restrict` / `\unrestrict` / `\connect`) blanked, positions kept, as
/// the schema reader does; `None` if the file has none.
pub fn blank_meta_commands(file: &SourceFile) -> Option<SourceFile> {
    if !file.text.starts_with('\\') && !file.text.contains("\n\\") {
        return None;
    }
    let text: String = file
        .text
        .split_inclusive('\n')
        .map(|l| {
            if l.starts_with('\\') {
                l.chars().map(|c| if c == '\n' { c } else { ' ' }).collect()
            } else {
                l.to_string()
            }
        })
        .collect();
    Some(SourceFile::new(&file.name, text))
}

/// Warnings for the schema DDL statements of a routine file, which
/// `scan_routines` skips.
pub fn skipped_ddl(file: &SourceFile) -> Vec<crate::model::error::Warning> {
    let text = &file.text;
    let toks = lex(text);
    let mut out = vec![];
    let mut first = true;
    for (k, t) in toks.iter().enumerate() {
        match t.0 {
            Lex::Semi => first = true,
            Lex::Word if first => {
                first = false;
                let w = text[t.1..t.2].to_ascii_uppercase();
                let next = toks
                    .get(k + 1)
                    .map(|n| text[n.1..n.2].to_ascii_uppercase())
                    .unwrap_or_default();
                let word = |j: usize| {
                    toks.get(k + j)
                        .map(|n| text[n.1..n.2].to_ascii_uppercase())
                        .unwrap_or_default()
                };
                let (third, fourth) = (word(2), word(3));
                let routine = next == "OR" && matches!(fourth.as_str(), "FUNCTION" | "PROCEDURE");
                let ignored = ignorable(&w, &next);
                if is_ddl(&w, &next, &third, &fourth) && !routine && !ignored {
                    out.push(crate::model::error::Warning {
                        file: file.name.clone(),
                        line: file.line_col(t.1).0,
                        message: format!("`{w} {next}` in a file of PL/pgSQL routines: schema DDL, skipped (isolint reads the schema from the schema file)"),
                    });
                }
            }
            Lex::Word => {}
        }
    }
    out
}

/// Whether a file holds only schema DDL (a migration that creates tables,
/// indexes, …): no program. Routines and data changes count as programs.
pub fn ddl_only(file: &SourceFile) -> bool {
    let text = &file.text;
    let toks = lex(text);
    let mut first = true;
    let mut any = false;
    for (k, t) in toks.iter().enumerate() {
        match t.0 {
            Lex::Semi => first = true,
            Lex::Word if first => {
                first = false;
                any = true;
                let w = text[t.1..t.2].to_ascii_uppercase();
                let next = toks.get(k + 1).map(|n| text[n.1..n.2].to_ascii_uppercase());
                let ddl = match w.as_str() {
                    "CREATE" => !matches!(
                        next.as_deref(),
                        Some("FUNCTION" | "PROCEDURE" | "OR" | "RULE")
                    ),
                    "ALTER" | "DROP" | "COMMENT" | "GRANT" | "REVOKE" | "SET" => true,
                    _ => false,
                };
                if !ddl {
                    return false;
                }
            }
            Lex::Word => {}
        }
    }
    any
}

/// The header of one CREATE FUNCTION|PROCEDURE: name, parameters,
/// LANGUAGE and the body's place. `words` words precede the name.
fn header(
    file: &SourceFile,
    stmt_from: usize,
    at: usize,
    end: usize,
    words: usize,
    procedure: bool,
) -> Result<Routine> {
    let text = &file.text[..end];
    let bad =
        |pos: usize, msg: &str, help: &str| Diag::new(msg).help(help).at(file, pos, 1, "here");
    // Skip CREATE [OR REPLACE] FUNCTION.
    let mut i = at;
    for _ in 0..words + 1 {
        i += blank_prefix(&text[i..]);
        while i < text.len() && is_word_byte(text.as_bytes()[i]) {
            i += 1;
        }
    }
    // The name, maybe schema-qualified: the last part counts.
    let mut name = String::new();
    let mut schema = None;
    loop {
        i += blank_prefix(&text[i..]);
        let Some((n, j)) = ident_at(text, i) else {
            return Err(bad(
                i,
                "expected the routine's name",
                "write CREATE FUNCTION name(params) …",
            ));
        };
        if !name.is_empty() {
            schema = Some(std::mem::take(&mut name)).filter(|s| s != "public");
        }
        name = n;
        i = j + blank_prefix(&text[j..]);
        if text.as_bytes().get(i) == Some(&b'.') {
            i += 1;
            continue;
        }
        break;
    }
    if text.as_bytes().get(i) != Some(&b'(') {
        return Err(bad(
            i,
            "expected `(` after the routine's name",
            "write CREATE FUNCTION name(params) …",
        ));
    }
    let close = matching_paren(text, i)
        .ok_or_else(|| bad(i, "unclosed parameter list", "close it with `)`"))?;
    let params = split_top(&text[i + 1..close], b',')
        .into_iter()
        .filter(|(_, p)| !is_blank(p))
        .map(|(o, p)| param(i + 1 + o, p))
        .collect();
    let mut params = params;
    let (language, body, quoted) = options(text, close + 1, end, &mut params);
    let body = body
        .filter(|&(s, e)| s <= e && file.text.is_char_boundary(s) && file.text.is_char_boundary(e));
    let Some(body) = body else {
        return Err(bad(
            at,
            "routine without a body",
            "write … AS $$ … $$ (a BEGIN ATOMIC body is not supported)",
        ));
    };
    // `AS E'…'`: the body's backslash escapes would have to be undone
    // before PL/pgSQL reads it; isolint does not, so it does not guess.
    let opening = body.0.saturating_sub(2);
    if quoted && matches!(text.as_bytes().get(opening), Some(b'e' | b'E')) {
        return Err(bad(
            opening,
            "a routine body written as an E'…' string is not supported",
            "write the body dollar-quoted: AS $$ … $$",
        ));
    }
    let outside = format!("{} {}", &text[close + 1..body.0], &text[body.1..end]);
    let (trigger, volatile) = trigger_and_volatility(&outside);
    let returns = return_type(&outside);
    Ok(Routine {
        name,
        schema,
        abbrev: abbrev_before(&file.text[stmt_from..at]),
        procedure,
        params,
        language,
        trigger,
        volatile,
        body,
        quoted,
        at,
        end,
        returns,
    })
}

/// The scalar type after `RETURNS` in a routine header's words outside
/// the body and parameter list, as written (`numeric(10, 2)`, `double
/// precision`, `int[]`), up to the next routine option. None where the
/// value is not one scalar the replay converts: SETOF, TABLE, record,
/// void, trigger, `%TYPE`, or no RETURNS.
fn return_type(outside: &str) -> Option<String> {
    const OPTIONS: [&str; 22] = [
        "LANGUAGE",
        "AS",
        "IMMUTABLE",
        "STABLE",
        "VOLATILE",
        "STRICT",
        "CALLED",
        "RETURNS",
        "SECURITY",
        "EXTERNAL",
        "PARALLEL",
        "COST",
        "ROWS",
        "SUPPORT",
        "SET",
        "WINDOW",
        "LEAKPROOF",
        "NOT",
        "TRANSFORM",
        "BEGIN",
        "RESET",
        "ATOMIC",
    ];
    let upper = outside.to_ascii_uppercase();
    let k = find_word_in(&upper, "RETURNS")? + "RETURNS".len();
    let mut depth = 0i32;
    let mut end = outside.len();
    let mut i = k;
    let b = outside.as_bytes();
    while i < b.len() {
        match b[i] {
            b'(' => depth += 1,
            b')' => depth -= 1,
            b';' if depth == 0 => {
                end = i;
                break;
            }
            c if depth == 0 && c.is_ascii_alphabetic() && !is_word_byte(b[i - 1]) => {
                let w: String = upper[i..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if OPTIONS.contains(&w.as_str()) {
                    end = i;
                    break;
                }
                i += w.len();
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    let ty = outside[k..end].trim();
    let first = ty
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .next()
        .unwrap_or("")
        .to_ascii_uppercase();
    let opaque = [
        "",
        "SETOF",
        "TABLE",
        "RECORD",
        "VOID",
        "TRIGGER",
        "EVENT_TRIGGER",
        "NULL",
    ];
    (!opaque.contains(&first.as_str()) && !ty.contains('%')).then(|| ty.to_string())
}

/// From a routine header's words outside the body and the parameter
/// list: whether it `RETURNS TRIGGER` (or EVENT_TRIGGER), and whether it
/// is VOLATILE — the last volatility written counts (PostgreSQL rejects
/// conflicting ones), VOLATILE when none is. Words inside parentheses
/// (`RETURNS TABLE (stable int)`) are names.
fn trigger_and_volatility(outside: &str) -> (bool, bool) {
    let words: Vec<String> = outside
        .split_whitespace()
        .map(str::to_ascii_uppercase)
        .collect();
    let trigger = words
        .windows(2)
        .any(|w| w[0] == "RETURNS" && matches!(w[1].as_str(), "TRIGGER" | "EVENT_TRIGGER"));
    let mut depth = 0i32;
    let unparenthesized: String = outside
        .chars()
        .map(|c| {
            depth += i32::from(c == '(') - i32::from(c == ')');
            if depth > 0 || c == ')' || c == ';' {
                ' '
            } else {
                c
            }
        })
        .collect();
    let volatile = unparenthesized
        .split_whitespace()
        .map(str::to_ascii_uppercase)
        .rev()
        .find(|w| matches!(w.as_str(), "VOLATILE" | "STABLE" | "IMMUTABLE"))
        .is_none_or(|w| w == "VOLATILE");
    (trigger, volatile)
}

/// The options after the parameter list, in any order: LANGUAGE, the body
/// (`AS $tag$ … $tag$` or `AS '…'`), and `RETURNS TABLE (…)`, whose
/// columns are OUT parameters (variables of the body). Others are skipped.
fn options(
    text: &str,
    from: usize,
    end: usize,
    params: &mut Vec<Param>,
) -> (String, Option<(usize, usize)>, bool) {
    let (mut language, mut body, mut quoted) = (String::new(), None, false);
    let mut j = from;
    let mut prev = String::new();
    while j < end {
        j += blank_prefix(&text[j..]);
        if j >= end {
            break;
        }
        let b = text.as_bytes()[j];
        if let Some(e) = dollar_quote_end(text, j) {
            let tag = text[j..]
                .find('$')
                .and_then(|o| text[j + o + 1..].find('$').map(|p| o + p + 2));
            let tag_len = tag.unwrap_or(2);
            body = Some((j + tag_len, e.saturating_sub(tag_len).max(j + tag_len)));
            j = e;
        } else if b == b'\'' {
            let e = quoted_end(text, j);
            if language.is_empty()
                && text[..j]
                    .trim_end()
                    .to_ascii_uppercase()
                    .ends_with("LANGUAGE")
            {
                language = text[j + 1..e.saturating_sub(1)].to_lowercase();
            } else {
                body = Some((j + 1, e.saturating_sub(1).max(j + 1)));
                quoted = true;
            }
            j = e;
        } else if b == b'(' {
            let close = matching_paren(text, j).unwrap_or(end);
            if prev == "table" {
                params.extend(
                    split_top(&text[j + 1..close.min(end)], b',')
                        .into_iter()
                        .filter(|(_, p)| !is_blank(p))
                        .map(|(o, p)| Param {
                            mode: Mode::Out,
                            ..param(j + 1 + o, p)
                        }),
                );
            }
            j = (close + 1).min(end);
        } else if is_word_byte(b) || b == b'"' {
            let (w, e) = ident_at(text, j).unwrap_or((String::new(), j + 1));
            if w == "language" {
                let l = e + blank_prefix(&text[e..]);
                if let Some((lang, le)) = ident_at(text, l) {
                    if text.as_bytes().get(l) != Some(&b'\'') {
                        language = lang.to_lowercase();
                        j = le;
                        continue;
                    }
                }
            }
            prev = w;
            j = e;
        } else {
            j += 1;
        }
    }
    (language, body, quoted)
}

/// `-- isolint: abbrev XX` in the comments before a routine.
fn abbrev_before(text: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let a = l
            .trim()
            .strip_prefix("--")?
            .trim()
            .strip_prefix("isolint:")?;
        let a = a.trim().strip_prefix("abbrev")?.trim();
        (!a.is_empty()).then(|| a.to_string())
    })
}

pub(super) fn matching_paren(text: &str, open: usize) -> Option<usize> {
    let b = text.as_bytes();
    let mut depth = 0usize;
    let mut j = open;
    while j < b.len() {
        match b[j] {
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(j);
                }
            }
            _ => {
                if let Some(e) = super::lex::lexeme_end(text, j) {
                    j = e;
                    continue;
                }
            }
        }
        j += 1;
    }
    None
}

/// `[mode] [name] [mode] type [DEFAULT e | = e]`.
fn param(offset: usize, p: &str) -> Param {
    let upper = p.to_ascii_uppercase();
    let def = find_word_in(&upper, "DEFAULT")
        .map(|k| (k, k + 7))
        .or_else(|| upper.find('=').map(|k| (k, k + 1)));
    let head = &p[..def.map_or(p.len(), |d| d.0)];
    let mut words: Vec<&str> = head.split_whitespace().collect();
    let mut mode = Mode::In;
    for k in 0..2.min(words.len()) {
        let m = match words[k].to_ascii_uppercase().as_str() {
            "OUT" => Some(Mode::Out),
            "INOUT" => Some(Mode::InOut),
            "IN" | "VARIADIC" => Some(Mode::In),
            _ => None,
        };
        if let Some(m) = m {
            mode = m;
            words.remove(k);
            break;
        }
    }
    // `name type` or `type` alone; a type of two words (`double
    // precision`, `character varying`) has no name before it only if its
    // first word is a type word: PostgreSQL reads the first word as the
    // name whenever what follows is a type, so does this.
    let type_words = [
        "double",
        "character",
        "timestamp",
        "time",
        "bit",
        "interval",
    ];
    let named = words.len() >= 2
        && !(words.len() == 2
            && type_words.contains(&words[0].to_ascii_lowercase().as_str())
            && ["precision", "varying", "with", "without"]
                .iter()
                .any(|w| words[1].to_ascii_lowercase().starts_with(w)));
    let name = named.then(|| {
        let n = words[0];
        n.strip_prefix('"')
            .and_then(|x| x.strip_suffix('"'))
            .map_or_else(|| n.to_lowercase(), str::to_string)
    });
    let ty = norm_type(&words[usize::from(named)..].join(" "));
    Param {
        name,
        mode,
        default: def.map(|(_, e)| (offset + e, offset + p.len())),
        ty,
    }
}

/// The file with everything but the routine bodies blanked (newlines and
/// lengths kept, so positions stay those of the original), and a
/// single-quoted body unescaped in place (`unquote_in_place`). The user's
/// text is what diagnostics show (`SourceFile::shown`).
pub fn shadow(file: &SourceFile, routines: &[Routine]) -> SourceFile {
    let mut out: Vec<u8> = file
        .text
        .bytes()
        .map(|c| if c == b'\n' { b'\n' } else { b' ' })
        .collect();
    let src = file.text.as_bytes();
    for r in routines {
        let (s, e) = r.body;
        out[s..e].copy_from_slice(&src[s..e]);
        if r.quoted {
            // A body that cannot be unescaped in place is rejected by
            // `quoted_body_error` before it is parsed.
            let _ = unquote_in_place(&mut out[s..e]);
        }
    }
    // Non-ASCII bytes outside bodies became spaces: still valid UTF-8.
    let text = String::from_utf8(out).unwrap_or_else(|_| file.text.to_string());
    let mut sh = SourceFile::new(file.name.clone(), text);
    sh.shown = Some(file.text.clone());
    sh
}

/// The located error for a single-quoted body isolint cannot unescape in
/// place (`unquote_in_place`), if any.
pub fn quoted_body_error(file: &SourceFile, r: &Routine) -> Option<Box<Diag>> {
    let (s, e) = r.body;
    if !r.quoted {
        return None;
    }
    let mut b = file.text.as_bytes().get(s..e)?.to_vec();
    let at = unquote_in_place(&mut b).err()?;
    Some(
        Diag::new("a quote inside a string literal, quoted identifier or dollar-quoted string of a single-quoted routine body is not supported")
            .help("write the body dollar-quoted (AS $$ … $$), where the quote is written once")
            .at(file, s + at, 4, "here"),
    )
}

/// Undo the `''` escapes of a single-quoted string (a routine body, an
/// `EXECUTE '…'` string) *in place*, keeping its length so positions stay
/// those of the file: each `''` is the one quote PL/pgSQL reads, written
/// ` '` where it opens a string literal and `' ` where it closes one (the
/// blank outside the literal: `''x''` is the literal `'x'`, not `' x'`).
/// A quote *inside* a literal (`''''` within one, `\''` in an `E''…''`
/// one), a quoted identifier or a dollar-quoted string has no
/// same-length form: `Err(offset)`.
pub fn unquote_in_place(b: &mut [u8]) -> std::result::Result<(), usize> {
    enum St {
        Code,
        Lit { e: bool },
        Line,
        Block(usize),
        Ident,
        Dollar(Vec<u8>),
    }
    let pair = |b: &[u8], j: usize| b.get(j) == Some(&b'\'') && b.get(j + 1) == Some(&b'\'');
    let mut st = St::Code;
    let mut j = 0;
    while j < b.len() {
        if pair(b, j) {
            match st {
                St::Code => {
                    // A prefix touching the quote (`E''…''`, `B''…''`,
                    // `date''…''`) moves right with it: ` E'…'`.
                    let w = b[..j]
                        .iter()
                        .rposition(|&x| !is_word_byte(x))
                        .map_or(0, |k| k + 1);
                    let e = matches!(&b[w..j], b"e" | b"E");
                    b.copy_within(w..j, w + 1);
                    (b[w], b[j + 1]) = (b' ', b'\'');
                    st = St::Lit { e };
                }
                // `''''` inside a literal: an escaped quote.
                St::Lit { .. } if pair(b, j + 2) => return Err(j),
                St::Lit { .. } => {
                    (b[j], b[j + 1]) = (b'\'', b' ');
                    st = St::Code;
                }
                St::Line | St::Block(_) => b[j + 1] = b' ',
                St::Ident | St::Dollar(_) => return Err(j),
            }
            j += 2;
            continue;
        }
        let (c, next) = (b[j], b.get(j + 1).copied());
        match &mut st {
            St::Code => match (c, next) {
                (b'-', Some(b'-')) => st = St::Line,
                (b'/', Some(b'*')) => st = St::Block(0),
                (b'"', _) => st = St::Ident,
                (b'$', Some(n)) if !n.is_ascii_digit() && (j == 0 || !is_word_byte(b[j - 1])) => {
                    let close = b[j + 1..]
                        .iter()
                        .position(|&x| !is_word_byte(x))
                        .map(|k| j + 1 + k)
                        .filter(|&t| b[t] == b'$');
                    if let Some(t) = close {
                        st = St::Dollar(b[j..=t].to_vec());
                        j = t + 1;
                        continue;
                    }
                }
                _ => {}
            },
            St::Lit { e: true } if c == b'\\' => {
                if pair(b, j + 1) {
                    return Err(j);
                }
                j += 2;
                continue;
            }
            St::Line if c == b'\n' => st = St::Code,
            St::Block(d) => match (c, next) {
                (b'/', Some(b'*')) => {
                    *d += 1;
                    j += 1;
                }
                (b'*', Some(b'/')) => {
                    match d.checked_sub(1) {
                        Some(k) => *d = k,
                        None => st = St::Code,
                    }
                    j += 1;
                }
                _ => {}
            },
            St::Ident if c == b'"' => st = St::Code,
            St::Dollar(tag) if b[j..].starts_with(tag) => {
                j += tag.len();
                st = St::Code;
                continue;
            }
            _ => {}
        }
        j += 1;
    }
    Ok(())
}

/// A parsed routine: its tree (the outermost block's statements), the
/// parameters' defaults, and its header.
pub struct ParsedRoutine {
    pub routine: Routine,
    pub nodes: Vec<Node>,
    pub defaults: Vec<Option<ProcExpr>>,
    /// Declared types of its parameters and scalar variables (normalized),
    /// for resolving calls of overloaded routines.
    pub types: std::collections::HashMap<String, String>,
    /// Its scalar variables' declared types as written (`PlEnv::declared`).
    pub declared: std::collections::HashMap<String, String>,
    /// The (shadow) file the positions of `nodes` refer to.
    pub file: SourceFile,
}

/// Parse a routine's body against the shadow file.
pub fn parse_routine(
    original: &SourceFile,
    shadow: &SourceFile,
    r: &Routine,
    schema: &Schema,
    callable: &HashSet<String>,
    binds: &std::collections::BTreeMap<String, String>,
) -> Result<ParsedRoutine> {
    let mut env = PlEnv::new(&r.name, schema, callable.clone());
    env.procedure = r.procedure;
    env.returns = r.returns.clone();
    // `bind: { routine.param: value }` of the manifest: this routine's.
    let prefix = format!("{}.", r.name.to_lowercase());
    for (k, v) in binds {
        if let Some(p) = k.to_lowercase().strip_prefix(&prefix) {
            env.binds.insert(p.to_string(), v.clone());
        }
    }
    let mut pre = vec![];
    for (k, p) in r.params.iter().enumerate() {
        if let Some(n) = &p.name {
            env.vars.insert(n.clone(), (VarKind::Scalar, r.at));
            env.types.insert(n.clone(), p.ty.clone());
        }
        env.types.insert(format!("${}", k + 1), p.ty.clone());
        env.vars
            .insert(format!("${}", k + 1), (VarKind::Scalar, r.at));
        // `$n` and the parameter's name are one variable.
        if let Some(n) = &p.name {
            env.aliases.insert(format!("${}", k + 1), n.clone());
        }
    }
    let (s, e) = r.body;
    let mut p = Parser {
        file: shadow,
        toks: lex(&shadow.text[s..e])
            .into_iter()
            .map(|(k, a, b)| (k, a + s, b + s))
            .collect(),
        pos: 0,
        label: None,
        label_end: usize::MAX,
        pl: Some(Box::new(env)),
    };
    // `$n` is the n-th parameter.
    for (k, prm) in r.params.iter().enumerate() {
        if let Some(n) = &prm.name {
            let c = p.cond(Snippet {
                text: format!(":{n}"),
                offset: r.at,
                parsed: None,
            })?;
            pre.push(Node::Assign {
                var: format!("${}", k + 1),
                expr: c,
            });
        }
    }
    let mut defaults = vec![];
    for prm in &r.params {
        defaults.push(match prm.default {
            Some((a, b)) => Some(p.cond(Snippet {
                text: original.text[a..b].to_string(),
                offset: a,
                parsed: None,
            })?),
            None => None,
        });
    }
    let body = p.routine_body(e)?;
    pre.extend(body);
    let types = p.pl.as_ref().map(|pl| pl.types.clone()).unwrap_or_default();
    let declared =
        p.pl.as_ref()
            .map(|pl| pl.declared.clone())
            .unwrap_or_default();
    Ok(ParsedRoutine {
        routine: r.clone(),
        nodes: hoist_returns(pre),
        defaults,
        types,
        declared,
        file: shadow.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(t: &str) -> Vec<Routine> {
        scan_routines(&SourceFile::new("m.sql", t))
            .expect("scans")
            .expect("a routine file")
    }

    #[test]
    fn headers_in_any_order() {
        let rs = scan(
            "SET search_path = public;\n-- isolint: abbrev X\nCREATE OR REPLACE PROCEDURE s.\"P\"(a INOUT int, IN b text DEFAULT 'x', int)\n SECURITY DEFINER AS $q$ BEGIN NULL; END $q$ LANGUAGE plpgsql;\nCREATE FUNCTION g() RETURNS TABLE (o int) AS 'BEGIN RETURN; END' LANGUAGE 'plpgsql' STABLE;",
        );
        assert_eq!(rs.len(), 2);
        let p = &rs[0];
        assert_eq!(
            (p.name.as_str(), p.procedure, p.abbrev.as_deref()),
            ("P", true, Some("X"))
        );
        let names: Vec<_> = p.params.iter().map(|x| x.name.clone()).collect();
        assert_eq!(names, [Some("a".into()), Some("b".into()), None]);
        assert_eq!(p.params[0].mode, Mode::InOut);
        assert!(p.params[1].default.is_some());
        assert_eq!(p.language, "plpgsql");
        let text = "SET search_path = public;";
        assert!(text.len() < p.body.0);
        let g = &rs[1];
        assert!(g.quoted && g.language == "plpgsql");
        assert_eq!(g.params.len(), 1);
        assert_eq!(g.params[0].mode, Mode::Out);
    }

    #[test]
    fn not_a_routine_file() {
        let f = SourceFile::new("p.sql", "UPDATE t SET a = 1;\nCREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $$ BEGIN RETURN 1; END $$;");
        assert!(scan_routines(&f).expect("scans").is_none());
        let f = SourceFile::new(
            "l.sql",
            "CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$;",
        );
        assert!(scan_routines(&f).expect("scans").is_none());
        assert!(ddl_only(&SourceFile::new(
            "d.sql",
            "CREATE TABLE t (a int);\nALTER TABLE t ADD PRIMARY KEY (a);"
        )));
        assert!(!ddl_only(&SourceFile::new(
            "d.sql",
            "CREATE TABLE t (a int);\nINSERT INTO t VALUES (1);"
        )));
    }

    #[test]
    fn shadow_keeps_positions() {
        let t = "CREATE FUNCTION f() RETURNS int AS 'BEGIN RETURN ''a''; END' LANGUAGE plpgsql;";
        let f = SourceFile::new("m.sql", t);
        let rs = scan(t);
        let sh = shadow(&f, &rs);
        assert_eq!(sh.text.len(), t.len());
        // `''a''` is the literal 'a' (not ' a'): what PL/pgSQL reads.
        assert_eq!(sh.text.trim(), "BEGIN RETURN  'a' ; END");
        assert_eq!(sh.shown.as_deref(), Some(t));
        let mut b = b"x = ''a'' -- it''s\n AND y = E''b'' AND z = ''''".to_vec();
        unquote_in_place(&mut b).expect("representable");
        assert_eq!(
            String::from_utf8(b).expect("utf8"),
            "x =  'a'  -- it' s\n AND y =  E'b'  AND z =  '' "
        );
        for bad in ["''it''''s''", "E''a\\''b''", "\"a''b\"", "$q$ a''b $q$"] {
            assert!(
                unquote_in_place(&mut bad.as_bytes().to_vec()).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn rewriting_variables() {
        let schema = Schema {
            relations: vec![crate::model::schema::Relation {
                name: "T".into(),
                attributes: vec!["k".into(), "a".into()],
                primary_key: vec![0],
                unique_keys: vec![],
            }],
            foreign_keys: vec![],
        };
        let mut env = PlEnv::new("f", &schema, HashSet::new());
        for v in ["v", "a"] {
            env.vars.insert(v.into(), (VarKind::Scalar, 0));
        }
        env.vars.insert("r".into(), (VarKind::Record, 0));
        let f = SourceFile::new("m.sql", "");
        let rw = |t: &str| {
            env.rewrite(
                &f,
                &Snippet {
                    text: t.into(),
                    offset: 0,
                    parsed: None,
                },
            )
            .map(|r| r.text)
        };
        assert_eq!(
            rw("v + r.x + f.a + t.k + g(v)").expect("ok"),
            ":v + :r$x +  :a + t.k + g(:v)"
        );
        assert_eq!(
            rw("SELECT k INTO STRICT v FROM T WHERE k = v").expect("ok"),
            "SELECT k INTO       :v FROM T WHERE k = :v"
        );
        let e = rw("SELECT k FROM T WHERE a = 1").expect_err("conflict");
        assert!(e.message.contains("`a` is both"), "{}", e.message);
        assert_eq!(rw("'v' || \"v\" -- v").expect("ok"), "'v' || \"v\" -- v");
    }
}
