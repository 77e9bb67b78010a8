//! PL/pgSQL routines (`CREATE [OR REPLACE] FUNCTION|PROCEDURE … LANGUAGE
//! plpgsql AS $$ … $$`) as transaction programs. The header is read by
//! hand; the body is parsed by the procedural layer (`procedural::P`) in
//! PL/pgSQL mode into the same program tree as the `.sql` dialect, with
//! the nodes PL/pgSQL adds (blocks, RETURN, cursors, calls). Variables and
//! parameters become `:name` in every snippet handed to sqlparser, after
//! the check PostgreSQL makes with `plpgsql.variable_conflict = error`.
//! Positions: the routines are parsed against a *shadow* of the file (same
//! length and lines, text outside the bodies blanked), so every diagnostic
//! points into the original file. This module knows nothing about BTPs.

use std::collections::{HashMap, HashSet};

use sqlparser::ast::{Expr, FunctionArg, FunctionArgExpr, FunctionArguments};

use super::procedural::{
    blank_prefix, dollar_quote_end, is_blank, is_word_byte, lex, split_top, Cond, Ctx, Lex,
    LoopHead, Node, Stmt, P,
};
use super::Snippet;
use crate::model::error::{Diag, Result, SourceFile};
use crate::model::schema::Schema;

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
}

/// A `CREATE FUNCTION|PROCEDURE` of a routine file, as written.
#[derive(Debug, Clone)]
pub struct Routine {
    pub name: String,
    pub abbrev: Option<String>,
    pub procedure: bool,
    pub params: Vec<Param>,
    pub language: String,
    /// `RETURNS trigger` / `event_trigger`: runs only when a trigger fires.
    pub trigger: bool,
    /// Byte range of the body inside its quotes.
    pub body: (usize, usize),
    /// The body is a single-quoted string (`''` escapes).
    pub quoted: bool,
    /// Byte offset of CREATE, and of the whole statement's end.
    pub at: usize,
    pub end: usize,
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
            if ignorable(w(0), w(1)) {
                continue;
            }
            // A file that starts with another statement is a program (its
            // CREATE FUNCTION is then reported as DDL in a program).
            if out.is_empty() {
                return Ok(None);
            }
            // Decided below: only an error in a file of routines.
            out.push(Err((at, w(0).to_string())));
            continue;
        }
        out.push(Ok(header(
            file,
            stmt_from,
            at,
            end,
            kind,
            w(kind) == "PROCEDURE",
        )?));
    }
    let is_routine_file = out
        .iter()
        .any(|r| matches!(r, Ok(r) if r.language == "plpgsql"));
    if !is_routine_file {
        return Ok(None);
    }
    out.into_iter()
        .map(|r| {
            r.map_err(|(at, w)| {
                Diag::new(format!("`{w}` in a file of PL/pgSQL routines"))
                    .help("a routine file holds CREATE FUNCTION / CREATE PROCEDURE statements (SET, GRANT, COMMENT and ALTER/DROP FUNCTION are skipped); tables belong in the schema file")
                    .at(file, at, w.len().max(1), "here")
            })
        })
        .collect::<Result<Vec<_>>>()
        .map(Some)
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

/// An identifier at `i`: its name (SQL case rules) and end.
fn ident_at(text: &str, i: usize) -> Option<(String, usize)> {
    let b = text.as_bytes();
    if b.get(i) == Some(&b'"') {
        let close = text[i + 1..].find('"')? + i + 1;
        return Some((text[i + 1..close].to_string(), close + 1));
    }
    let mut j = i;
    while j < b.len() && is_word_byte(b[j]) {
        j += 1;
    }
    (j > i).then(|| (text[i..j].to_lowercase(), j))
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
    let mut name;
    loop {
        i += blank_prefix(&text[i..]);
        let Some((n, j)) = ident_at(text, i) else {
            return Err(bad(
                i,
                "expected the routine's name",
                "write CREATE FUNCTION name(params) …",
            ));
        };
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
    let outside = format!("{} {}", &text[close + 1..body.0], &text[body.1..end]);
    let words: Vec<String> = outside
        .split_whitespace()
        .map(str::to_ascii_uppercase)
        .collect();
    let trigger = words
        .windows(2)
        .any(|w| w[0] == "RETURNS" && matches!(w[1].as_str(), "TRIGGER" | "EVENT_TRIGGER"));
    Ok(Routine {
        name,
        abbrev: abbrev_before(&file.text[stmt_from..at]),
        procedure,
        params,
        language,
        trigger,
        body,
        quoted,
        at,
        end,
    })
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

fn quoted_end(text: &str, i: usize) -> usize {
    let b = text.as_bytes();
    let mut j = i + 1;
    while j < b.len() {
        if b[j] == b'\'' {
            if b.get(j + 1) == Some(&b'\'') {
                j += 2;
                continue;
            }
            return j + 1;
        }
        j += 1;
    }
    b.len()
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
            b'\'' => {
                j = quoted_end(text, j);
                continue;
            }
            _ => {}
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
    let name = (words.len() >= 2).then(|| {
        let n = words[0];
        n.strip_prefix('"')
            .and_then(|x| x.strip_suffix('"'))
            .map_or_else(|| n.to_lowercase(), str::to_string)
    });
    Param {
        name,
        mode,
        default: def.map(|(_, e)| (offset + e, offset + p.len())),
    }
}

fn find_word_in(upper: &str, w: &str) -> Option<usize> {
    let b = upper.as_bytes();
    let mut from = 0;
    while let Some(k) = upper[from..].find(w) {
        let s = from + k;
        let e = s + w.len();
        if (s == 0 || !is_word_byte(b[s - 1])) && (e >= b.len() || !is_word_byte(b[e])) {
            return Some(s);
        }
        from = e;
    }
    None
}

/// The file with everything but the routine bodies blanked (newlines and
/// lengths kept, so positions stay those of the original), and `''` in
/// single-quoted bodies turned into `' ` (one quote, same length).
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
            let mut j = s;
            while j + 1 < e {
                if out[j] == b'\'' && out[j + 1] == b'\'' {
                    out[j + 1] = b' ';
                    j += 2;
                } else {
                    j += 1;
                }
            }
        }
    }
    // Non-ASCII bytes outside bodies became spaces: still valid UTF-8.
    let text = String::from_utf8(out).unwrap_or_else(|_| file.text.to_string());
    SourceFile::new(file.name.clone(), text)
}

/// What a variable holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VarKind {
    Scalar,
    /// RECORD, `%ROWTYPE`, a table type, a query loop's variable: `r.f`
    /// becomes `:r$f` (one value per field, changed when `r` is).
    Record,
    Cursor,
}

/// A declared cursor: its parameters and query.
#[derive(Debug, Clone)]
pub(super) struct Cursor {
    pub(super) params: Vec<String>,
    pub(super) query: Option<Stmt>,
}

/// The names a routine body can use, for the rewriting of its snippets.
pub struct PlEnv {
    pub(super) routine: String,
    pub(super) vars: HashMap<String, (VarKind, usize)>,
    pub(super) labels: Vec<String>,
    /// Relations (lower-case name, lower-case columns, primary-key
    /// columns) for the variable/column conflict check and CURRENT OF.
    pub(super) relations: Vec<(String, Vec<String>, Vec<String>)>,
    /// PL/pgSQL routines of the workload: calls of these are inlined.
    pub(super) callable: HashSet<String>,
    pub(super) cursors: HashMap<String, Cursor>,
    /// Names with a fixed meaning (`found`): never variables.
    pub(super) exec_count: usize,
    /// Calls of workload routines found inside statements and
    /// expressions, to be inlined before the node that holds them
    /// (`P::extract_calls`, drained by `P::block`).
    pub(super) pending: std::cell::RefCell<Vec<Node>>,
    pub(super) calls: std::cell::Cell<usize>,
}

impl PlEnv {
    pub fn new(routine: &str, schema: &Schema, callable: HashSet<String>) -> PlEnv {
        PlEnv {
            routine: routine.to_lowercase(),
            vars: HashMap::new(),
            labels: vec![],
            relations: schema
                .relations
                .iter()
                .map(|r| {
                    (
                        r.name.to_lowercase(),
                        r.attributes.iter().map(|a| a.to_lowercase()).collect(),
                        r.primary_key
                            .iter()
                            .map(|&c| r.attributes[c].to_lowercase())
                            .collect(),
                    )
                })
                .collect(),
            callable,
            cursors: HashMap::new(),
            exec_count: 0,
            pending: std::cell::RefCell::new(vec![]),
            calls: std::cell::Cell::new(0),
        }
    }

    fn var(&self, name: &str) -> Option<VarKind> {
        self.vars.get(name).map(|v| v.0)
    }

    /// A qualifier that names the routine or an enclosing block's label.
    fn is_qualifier(&self, w: &str) -> bool {
        w == self.routine || self.labels.iter().any(|l| l == w)
    }

    /// Relations named anywhere in a statement: the tables in its scope
    /// (an over-approximation of PostgreSQL's scope).
    fn relations_in(&self, text: &str) -> Vec<usize> {
        let mut words = HashSet::new();
        let b = text.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'"' {
                if let Some((n, e)) = ident_at(text, i) {
                    words.insert(n.to_lowercase());
                    i = e;
                    continue;
                }
            }
            if is_word_byte(b[i]) {
                let s = i;
                while i < b.len() && is_word_byte(b[i]) {
                    i += 1;
                }
                words.insert(text[s..i].to_lowercase());
                continue;
            }
            i += 1;
        }
        (0..self.relations.len())
            .filter(|&r| words.contains(&self.relations[r].0))
            .collect()
    }

    /// The snippet's text with variables as `:name`, `fn.x` and
    /// `label.x` as `:x`, record fields `r.f` as `:r$f`, `STRICT` after
    /// INTO dropped. An unqualified name that is both a variable and a
    /// column of a table the statement names is an error, as in
    /// PostgreSQL with `plpgsql.variable_conflict = error`.
    pub fn rewrite(&self, file: &SourceFile, snip: &Snippet) -> Result<String> {
        let current = self.current_of(file, snip)?;
        let t = current.as_deref().unwrap_or(snip.text.as_str());
        let b = t.as_bytes();
        let scope = self.relations_in(t);
        let mut out = String::with_capacity(t.len() + 16);
        let mut i = 0;
        let first_word = t
            .trim_start()
            .split(|c: char| !c.is_ascii_alphabetic())
            .next()
            .unwrap_or("")
            .to_lowercase();
        let first_word = first_word.as_str();
        let mut prev_word = String::new();
        while i < b.len() {
            if let Some(e) = literal_end(t, i) {
                out.push_str(&t[i..e]);
                i = e;
                continue;
            }
            let c = b[i];
            let starts_word = (c.is_ascii_alphabetic() || c == b'_')
                && (i == 0 || !is_word_byte(b[i - 1]) && b[i - 1] != b'$');
            if !starts_word {
                let ch = t[i..].chars().next().unwrap_or(' ');
                out.push(ch);
                i += ch.len_utf8();
                continue;
            }
            let s = i;
            while i < b.len() && is_word_byte(b[i]) {
                i += 1;
            }
            let w = t[s..i].to_lowercase();
            let before = t[..s].trim_end().as_bytes().last().copied();
            let after = t[i..].trim_start().as_bytes().first().copied();
            let dotted = b.get(i) == Some(&b'.')
                && b.get(i + 1)
                    .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_');
            if before == Some(b'.') || before == Some(b':') {
                out.push_str(&t[s..i]);
            } else if dotted {
                let fs = i + 1;
                let mut fe = fs;
                while fe < b.len() && is_word_byte(b[fe]) {
                    fe += 1;
                }
                let field = t[fs..fe].to_lowercase();
                if self.is_qualifier(&w) && self.var(&field).is_some() {
                    out.push_str(&" ".repeat(i - s));
                    push_var(&mut out, &field, false);
                } else if self.var(&w) == Some(VarKind::Record) {
                    push_var(&mut out, &format!("{w}${field}"), true);
                } else {
                    out.push_str(&t[s..fe]);
                }
                i = fe;
            } else if w == "strict" && prev_word == "into" {
                out.push_str(&" ".repeat(i - s));
            } else if self.var(&w).is_some_and(|k| k != VarKind::Cursor)
                && after != Some(b'(')
                && !self.table_position(&prev_word, &w, first_word)
            {
                if let Some(&r) = scope.iter().find(|&&r| self.relations[r].1.contains(&w)) {
                    let at = snip.offset + s;
                    return Err(Diag::new(format!(
                        "`{w}` is both a variable of {} and a column of {}",
                        self.routine, self.relations[r].0
                    ))
                    .help(format!("PostgreSQL (plpgsql.variable_conflict = error, the default) rejects this reference: rename the variable, or qualify it as {}.{w} (the variable) or {}.{w} (the column)", self.routine, self.relations[r].0))
                    .at(file, at, w.len(), "ambiguous"));
                }
                push_var(&mut out, &w, true);
            } else {
                out.push_str(&t[s..i]);
            }
            prev_word = w;
        }
        Ok(out)
    }

    /// A relation's name where a table stands (after FROM, JOIN, UPDATE,
    /// INSERT INTO, …): no variable there, as in PostgreSQL.
    fn table_position(&self, prev: &str, w: &str, first: &str) -> bool {
        let table_kw = matches!(
            prev,
            "from" | "join" | "update" | "table" | "only" | "using"
        ) || prev == "into" && first == "insert";
        table_kw && self.relations.iter().any(|r| r.0 == w)
    }

    /// `UPDATE t … WHERE CURRENT OF c` / `DELETE FROM t WHERE CURRENT OF c`:
    /// a key-based write of the row the cursor is on, written as equalities
    /// of t's primary key with `:c$col` (values that change at each FETCH,
    /// which assigns `c`).
    fn current_of(&self, file: &SourceFile, snip: &Snippet) -> Result<Option<String>> {
        let upper = snip.text.to_ascii_uppercase();
        let Some(k) = find_word_in(&upper, "CURRENT") else {
            return Ok(None);
        };
        let rest = upper[k + 7..].trim_start();
        if !rest.starts_with("OF") || rest.as_bytes().get(2).is_some_and(|c| is_word_byte(*c)) {
            return Ok(None);
        }
        let of = k + 7 + (upper[k + 7..].len() - rest.len());
        let c0 = of + 2 + blank_prefix(&snip.text[of + 2..]);
        let Some((cursor, ce)) = ident_at(&snip.text, c0) else {
            return Ok(None);
        };
        let err = |msg: &str| {
            Diag::new(msg.to_string())
                .help("write UPDATE t SET … WHERE CURRENT OF c; or DELETE FROM t WHERE CURRENT OF c; where t has a primary key")
                .at(file, snip.offset + k, 7, "here")
        };
        if self.var(&cursor) != Some(VarKind::Cursor) {
            return Err(err(&format!(
                "CURRENT OF `{cursor}`, which is not a cursor of the routine"
            )));
        }
        let words: Vec<&str> = upper.split_whitespace().collect();
        let table = match words.as_slice() {
            ["UPDATE", "ONLY", t, ..]
            | ["UPDATE", t, ..]
            | ["DELETE", "FROM", "ONLY", t, ..]
            | ["DELETE", "FROM", t, ..] => t.trim_matches('"').to_lowercase(),
            _ => return Err(err("CURRENT OF outside UPDATE or DELETE")),
        };
        let table = table.rsplit('.').next().unwrap_or_default().to_string();
        let Some(rel) = self.relations.iter().find(|r| r.0 == table) else {
            return Err(err(&format!(
                "CURRENT OF on `{table}`, which is not a table of the schema"
            )));
        };
        if rel.2.is_empty() {
            return Err(err(&format!(
                "CURRENT OF on `{table}`, which has no primary key"
            )));
        }
        let pred: Vec<String> = rel
            .2
            .iter()
            .map(|c| format!("{c} = :{cursor}${c}"))
            .collect();
        let mut out = snip.text.clone();
        out.replace_range(k..ce, &pred.join(" AND "));
        Ok(Some(out))
    }

    /// `x := e`, `x = e`, `fn.x := e`, `r.f := e`, `a[i] := e` from `at` to
    /// `end` of the shadow file: the variable and the right-hand side's
    /// offset from `at`.
    pub fn assignment(
        &self,
        file: &SourceFile,
        at: usize,
        end: usize,
    ) -> Result<Option<(String, usize, bool)>> {
        let t = &file.text[at..end];
        let Some((first, mut i)) = ident_at(t, 0) else {
            return Ok(None);
        };
        let mut var = first.clone();
        let mut whole = true;
        let b = t.as_bytes();
        if b.get(i) == Some(&b'.') {
            let Some((second, j)) = ident_at(t, i + 1) else {
                return Ok(None);
            };
            if self.is_qualifier(&first) {
                var = second;
            } else {
                whole = false;
            }
            i = j;
        }
        if b.get(i) == Some(&b'[') {
            whole = false;
            i = match t[i..].find(']') {
                Some(k) => i + k + 1,
                None => return Ok(None),
            };
        }
        let rest = &t[i..];
        let ws = rest.len() - rest.trim_start().len();
        let r = rest.trim_start();
        let op = if r.starts_with(":=") {
            2
        } else if r.starts_with('=') && !r.starts_with("==") {
            1
        } else {
            return Ok(None);
        };
        if self.var(&var).is_none() {
            return Err(Diag::new(format!(
                "assignment to `{var}`, which is not a variable of {}",
                self.routine
            ))
            .help("declare it in a DECLARE section (or as a parameter) of the routine")
            .at(file, at, first.len().max(1), "here"));
        }
        Ok(Some((var, i + ws + op, whole)))
    }
}

/// Append `:name`, in place of one blank before it when there are two
/// (keeps the columns of what follows; otherwise one column of drift).
fn push_var(out: &mut String, name: &str, absorb: bool) {
    if absorb && out.ends_with("  ") {
        out.pop();
    }
    out.push(':');
    out.push_str(name);
}

/// The end of a string, quoted identifier, comment or dollar quote that
/// starts at `i`.
fn literal_end(t: &str, i: usize) -> Option<usize> {
    let b = t.as_bytes();
    match b[i] {
        b'\'' => Some(quoted_end(t, i)),
        b'"' => Some(t[i + 1..].find('"').map_or(t.len(), |k| i + k + 2)),
        b'-' if b.get(i + 1) == Some(&b'-') => Some(t[i..].find('\n').map_or(t.len(), |k| i + k)),
        b'/' if b.get(i + 1) == Some(&b'*') => {
            Some(t[i + 2..].find("*/").map_or(t.len(), |k| i + k + 4))
        }
        b'$' => dollar_quote_end(t, i),
        _ => None,
    }
}

/// A parsed routine: its tree (the outermost block's statements), the
/// parameters' defaults, and its header.
pub struct ParsedRoutine {
    pub routine: Routine,
    pub nodes: Vec<Node>,
    pub defaults: Vec<Option<Cond>>,
}

/// Parse a routine's body against the shadow file.
pub fn parse_routine(
    original: &SourceFile,
    shadow: &SourceFile,
    r: &Routine,
    schema: &Schema,
    callable: &HashSet<String>,
) -> Result<ParsedRoutine> {
    let mut env = PlEnv::new(&r.name, schema, callable.clone());
    let mut pre = vec![];
    for (k, p) in r.params.iter().enumerate() {
        if let Some(n) = &p.name {
            env.vars.insert(n.clone(), (VarKind::Scalar, r.at));
        }
        env.vars
            .insert(format!("${}", k + 1), (VarKind::Scalar, r.at));
    }
    let (s, e) = r.body;
    let mut p = P {
        file: shadow,
        toks: lex(&shadow.text[s..e])
            .into_iter()
            .map(|(k, a, b)| (k, a + s, b + s))
            .collect(),
        pos: 0,
        label: None,
        pl: Some(Box::new(env)),
    };
    // `$n` is the n-th parameter.
    for (k, prm) in r.params.iter().enumerate() {
        if let Some(n) = &prm.name {
            let c = p.cond(Snippet {
                text: format!(":{n}"),
                offset: r.at,
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
            })?),
            None => None,
        });
    }
    let body = p.routine_body(s, e)?;
    pre.extend(body);
    Ok(ParsedRoutine {
        routine: r.clone(),
        nodes: hoist_returns(pre),
        defaults,
    })
}

impl P<'_> {
    /// `[<<label>>] [DECLARE …] BEGIN … END [label] [;]`: the whole body.
    fn routine_body(&mut self, s: usize, e: usize) -> Result<Vec<Node>> {
        self.take_label()?;
        let at = self.start();
        match self.word(self.pos).as_deref() {
            Some("DECLARE" | "BEGIN") => {}
            _ => {
                return Err(self.err(
                    at.min(e),
                    1,
                    "expected DECLARE or BEGIN at the start of the PL/pgSQL body",
                    "a PL/pgSQL body is [DECLARE …] BEGIN … END;",
                ))
            }
        }
        let node = self.pl_block(true)?;
        if self.pos < self.toks.len() {
            let at = self.start();
            return Err(self.err(
                at,
                1,
                "text after the END of the routine's body",
                "the body ends with the END of its outermost block",
            ));
        }
        let _ = s;
        Ok(match node {
            Node::Block {
                label: None,
                body,
                handlers: None,
            } => body,
            n => vec![n],
        })
    }

    /// A `<<label>>` before a loop or block: remembered for it.
    pub(super) fn take_label(&mut self) -> Result<bool> {
        let Some(&(Lex::Word, s, e)) = self.toks.get(self.pos) else {
            return Ok(false);
        };
        let text = &self.file.text;
        if !text[..s].trim_end().ends_with("<<") {
            return Ok(false);
        }
        let rest = &text[e..];
        let ws = rest.len() - rest.trim_start().len();
        if !rest.trim_start().starts_with(">>") {
            return Err(self.err(s, e - s, "unterminated label", "write <<label>>"));
        }
        let label = text[s..e].to_lowercase();
        if let Some(pl) = &mut self.pl {
            pl.labels.push(label.clone());
        }
        self.label = Some(label);
        // The next statement starts after `>>`.
        self.toks[self.pos].2 = e + ws + 2;
        self.pos += 1;
        Ok(true)
    }

    /// PL/pgSQL statements; `false` when `w` starts none of them.
    pub(super) fn pl_statement(
        &mut self,
        w: &str,
        ctx: Ctx,
        nodes: &mut Vec<Node>,
    ) -> Result<bool> {
        let at = self.start();
        match w {
            "DECLARE" | "BEGIN" => nodes.push(self.pl_block(false)?),
            "RETURN" => self.pl_return(nodes)?,
            "PERFORM" => {
                let semi = self.semi_after(w, at, "end it with `;`")?;
                let end = self.toks[semi].1;
                let text = format!("SELECT {}", &self.file.text[at + 7..end]);
                self.pos = semi + 1;
                let snip = Snippet { text, offset: at };
                match self.routine_call(at + 7, end)? {
                    Some(call) => nodes.push(Node::Call {
                        call,
                        result: None,
                        at,
                    }),
                    None => nodes.push(Node::Sql(Box::new(self.stmt_of(snip)?))),
                }
            }
            "CALL" => {
                let semi = self.semi_after(w, at, "end it with `;`")?;
                let end = self.toks[semi].1;
                self.pos = semi + 1;
                let Some(call) = self.routine_call(at + 4, end)? else {
                    return Err(self.err(at, 4, "CALL of a routine that is not a PL/pgSQL routine of the workload", "define the procedure in a routine file of the workload directory, so that it can be inlined"));
                };
                nodes.push(Node::Call {
                    call,
                    result: None,
                    at,
                });
            }
            "OPEN" => nodes.extend(self.open_cursor()?),
            "FETCH" | "MOVE" => nodes.extend(self.fetch()?),
            "CLOSE" => {
                let semi = self.semi_after(w, at, "end it with `;`")?;
                self.pos = semi + 1;
            }
            "GET" => nodes.extend(self.diagnostics()?),
            "EXECUTE" => nodes.extend(self.execute()?),
            "FOREACH" => nodes.push(self.loop_stmt(w)?),
            "COMMIT" | "ROLLBACK" | "ABORT" if ctx == Ctx::Routine => {
                if w == "COMMIT" {
                    nodes.push(self.commit_stmt(Ctx::Top, w)?);
                } else {
                    // The path so far aborts; the procedure goes on in a
                    // new transaction.
                    nodes.push(self.rollback_stmt(w)?);
                    nodes.push(Node::Commit { at });
                }
            }
            "COMMIT" | "ROLLBACK" | "ABORT" | "SAVEPOINT" | "RELEASE" => {
                return Err(self.err(at, w.len(), format!("{w} inside a block, IF, CASE or LOOP of a routine"), "isolint splits a procedure into transactions only at a COMMIT in the routine's outermost block; PostgreSQL forbids COMMIT inside a block with an EXCEPTION handler"));
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// `[DECLARE …] BEGIN … [EXCEPTION WHEN … THEN …] END [label];`.
    fn pl_block(&mut self, outer: bool) -> Result<Node> {
        let label = self.label.take();
        let at = self.start();
        let mut body = vec![];
        if self.word(self.pos).as_deref() == Some("DECLARE") {
            self.pos += 1;
            self.declarations(&mut body)?;
        }
        if self.word(self.pos).as_deref() != Some("BEGIN") {
            let here = self.start();
            return Err(self.err(
                here,
                1,
                "expected BEGIN after the declarations",
                "write DECLARE … BEGIN … END;",
            ));
        }
        self.pos += 1;
        let ctx = if outer { Ctx::Routine } else { Ctx::Block };
        body.extend(self.block(ctx, at)?);
        let handlers = if self.word(self.pos).as_deref() == Some("EXCEPTION") {
            self.pos += 1;
            if body.iter().any(|n| matches!(n, Node::Commit { .. })) {
                return Err(self.err(at, 5, "COMMIT in a block with an EXCEPTION handler", "PostgreSQL cannot commit inside a subtransaction; move the COMMIT out of the block"));
            }
            Some(self.handlers(at)?)
        } else {
            None
        };
        if self.word(self.pos).as_deref() != Some("END") {
            return Err(self.unterminated(Ctx::Block, at));
        }
        self.pos += 1;
        if self.word(self.pos).is_some()
            && (self.is_semi(self.pos + 1) || self.pos + 1 >= self.toks.len())
        {
            self.pos += 1;
        }
        if self.is_semi(self.pos) {
            self.pos += 1;
        } else if !outer {
            self.expect_semi("END")?;
        }
        if let (Some(l), Some(pl)) = (&label, &mut self.pl) {
            pl.labels.retain(|x| x != l);
        }
        Ok(Node::Block {
            label,
            body,
            handlers,
        })
    }

    /// `WHEN cond [OR cond] THEN stmts …` up to END: one body per handler.
    /// The condition names read nothing.
    fn handlers(&mut self, opener: usize) -> Result<Vec<Vec<Node>>> {
        let mut out = vec![];
        while self.word(self.pos).as_deref() == Some("WHEN") {
            let at = self.start();
            let Some(then) = self.find_word("THEN", true) else {
                return Err(self.err(
                    at,
                    4,
                    "`WHEN` without THEN",
                    "write EXCEPTION WHEN condition THEN …",
                ));
            };
            self.pos = then + 1;
            out.push(self.block(Ctx::Handler, opener)?);
        }
        if out.is_empty() {
            let at = self.start();
            return Err(self.err(
                at,
                1,
                "EXCEPTION without WHEN",
                "write EXCEPTION WHEN others THEN …",
            ));
        }
        Ok(out)
    }

    fn declare(&mut self, name: &str, kind: VarKind, at: usize, len: usize) -> Result<()> {
        let Some(pl) = &mut self.pl else {
            return Ok(());
        };
        if let Some((_, first)) = pl.vars.get(name) {
            let (line, _) = self.file.line_col(*first);
            return Err(Diag::new(format!(
                "`{name}` is declared twice in {} (first on line {line})",
                pl.routine
            ))
            .help("isolint keeps one variable per name in a routine: rename the inner one")
            .at(self.file, at, len, "declared again here"));
        }
        pl.vars.insert(name.to_string(), (kind, at));
        Ok(())
    }

    /// The declarations of a DECLARE section, up to BEGIN; initial values
    /// become assignments (NULL without a default: a fresh value).
    fn declarations(&mut self, body: &mut Vec<Node>) -> Result<()> {
        while self.pos < self.toks.len() && self.word(self.pos).as_deref() != Some("BEGIN") {
            let at = self.start();
            let semi = self.semi_after("the declaration", at, "end each declaration with `;`")?;
            let end = self.toks[semi].1;
            let text = self.file.text[at..end].to_string();
            let Some((name, ne)) = ident_at(&text, 0) else {
                return Err(self.err(
                    at,
                    1,
                    "expected a variable name",
                    "write name type [:= value];",
                ));
            };
            let words: Vec<String> = (self.pos + 1..semi).filter_map(|k| self.word(k)).collect();
            let has = |w: &str| words.iter().any(|x| x == w);
            let upper = text.to_ascii_uppercase();
            if has("ALIAS") {
                self.declare(&name, VarKind::Scalar, at, ne)?;
                let target = text[find_word_in(&upper, "FOR").map_or(ne, |k| k + 3)..]
                    .trim()
                    .to_string();
                let target = match target.strip_prefix('$') {
                    Some(_) => target,
                    None => format!(":{}", target.to_lowercase()),
                };
                body.push(Node::Assign {
                    var: name,
                    expr: self.cond(Snippet {
                        text: target,
                        offset: at,
                    })?,
                });
            } else if has("CURSOR") {
                self.cursor_decl(&name, at, &text, &upper)?;
            } else {
                let kind =
                    if has("RECORD") || upper.contains("%ROWTYPE") || self.is_table_type(&words) {
                        VarKind::Record
                    } else if has("REFCURSOR") {
                        VarKind::Cursor
                    } else {
                        VarKind::Scalar
                    };
                self.declare(&name, kind, at, ne)?;
                let def =
                    top_level_op(&text).or_else(|| find_word_in(&upper, "DEFAULT").map(|k| k + 7));
                let expr = match def {
                    Some(d) => self.expr(at + d, end)?,
                    None => self.cond(Snippet {
                        text: "NULL".into(),
                        offset: at,
                    })?,
                };
                body.push(Node::Assign { var: name, expr });
            }
            self.pos = semi + 1;
        }
        Ok(())
    }

    fn is_table_type(&self, words: &[String]) -> bool {
        let Some(pl) = &self.pl else { return false };
        words.len() == 1
            && pl
                .relations
                .iter()
                .any(|r| r.0.eq_ignore_ascii_case(&words[0]))
    }

    /// `name [NO] [SCROLL] CURSOR [(p type, …)] FOR|IS query`.
    fn cursor_decl(&mut self, name: &str, at: usize, text: &str, upper: &str) -> Result<()> {
        self.declare(name, VarKind::Cursor, at, name.len())?;
        let ck = find_word_in(upper, "CURSOR").unwrap_or(0) + 6;
        let mut params = vec![];
        let mut q = ck;
        let open = ck + blank_prefix(&text[ck..]);
        if text.as_bytes().get(open) == Some(&b'(') {
            let close = matching_paren(text, open)
                .unwrap_or(text.len())
                .max(open + 1);
            for (o, piece) in split_top(&text[open + 1..close], b',') {
                if let Some((p, pe)) = ident_at(piece.trim_start(), 0) {
                    let lead = piece.len() - piece.trim_start().len();
                    self.declare(&p, VarKind::Scalar, at + open + 1 + o + lead, pe)?;
                    params.push(p);
                }
            }
            q = close + 1;
        }
        let kw = find_word_in(&upper[q..], "FOR")
            .map(|k| k + 3)
            .or_else(|| find_word_in(&upper[q..], "IS").map(|k| k + 2));
        let Some(kw) = kw else {
            return Err(self.err(
                at,
                name.len(),
                "cursor declaration without FOR query",
                "write name CURSOR FOR SELECT …;",
            ));
        };
        let from = at + q + kw;
        let query = Some(self.sql(from + blank_prefix(&text[q + kw..]), at + text.len())?);
        if let Some(pl) = &mut self.pl {
            pl.cursors
                .insert(name.to_string(), super::plpgsql::Cursor { params, query });
        }
        Ok(())
    }

    /// RETURN [expr]; RETURN NEXT expr; RETURN QUERY query;
    fn pl_return(&mut self, nodes: &mut Vec<Node>) -> Result<()> {
        let at = self.start();
        let semi = self.semi_after("RETURN", at, "end it with `;`")?;
        let end = self.toks[semi].1;
        let next = if self.pos + 1 < semi {
            self.word(self.pos + 1)
        } else {
            None
        };
        match next.as_deref() {
            Some("QUERY") => {
                if self.word(self.pos + 2).as_deref() == Some("EXECUTE") {
                    return Err(self.err(
                        at,
                        6,
                        "RETURN QUERY EXECUTE (dynamic SQL) cannot be analysed",
                        "write RETURN QUERY SELECT … with the query itself",
                    ));
                }
                let from = self.toks[self.pos + 1].2;
                nodes.push(Node::Sql(Box::new(self.sql(from, end)?)));
                self.pos = semi + 1;
                return Ok(());
            }
            Some("NEXT") => {
                let e = self.exprs(self.toks[self.pos + 1].2, end)?;
                nodes.push(Node::Eval(e));
                self.pos = semi + 1;
                return Ok(());
            }
            _ => {}
        }
        let from = self.toks[self.pos].2;
        self.pos = semi + 1;
        if !is_blank(&self.file.text[from..end]) {
            match self.routine_call(from, end)? {
                Some(call) => nodes.push(Node::Call {
                    call,
                    result: None,
                    at,
                }),
                None => nodes.push(Node::Eval(vec![self.expr(from, end)?])),
            }
        }
        nodes.push(Node::Return { at });
        Ok(())
    }

    /// `v := e`: a call of a workload routine is inlined, anything else is
    /// an assignment.
    /// An assignment to a field or element (`whole` false) changes the
    /// variable to an unknown value: the right-hand side is only read.
    pub(super) fn pl_assign(
        &mut self,
        var: String,
        from: usize,
        to: usize,
        whole: bool,
    ) -> Result<Node> {
        let at = from;
        if let Some(call) = self.routine_call(from, to)? {
            return Ok(Node::Call {
                call,
                result: Some(var),
                at,
            });
        }
        let expr = self.expr(from, to)?;
        if whole {
            return Ok(Node::Assign { var, expr });
        }
        let fresh = self.cond(Snippet {
            text: "NULL".into(),
            offset: at,
        })?;
        Ok(Node::If(vec![(
            None,
            vec![Node::Eval(vec![expr]), Node::Assign { var, expr: fresh }],
        )]))
    }

    /// `FOR r IN cursor [(args)] LOOP`: the cursor's query, and the
    /// assignments of its arguments.
    pub(super) fn cursor_loop(
        &self,
        at: usize,
        lp: usize,
    ) -> Result<Option<(LoopHead, Vec<Node>)>> {
        let Some(pl) = &self.pl else { return Ok(None) };
        let (Some(var), Some(name)) = (self.word(self.pos + 1), self.word(self.pos + 3)) else {
            return Ok(None);
        };
        let Some(c) = pl.cursors.get(&name.to_lowercase()) else {
            return Ok(None);
        };
        if self.word(self.pos + 2).as_deref() != Some("IN") || self.pos + 3 >= lp {
            return Ok(None);
        }
        let args = self.cursor_args(c, self.toks[self.pos + 3].2, self.toks[lp].1, at)?;
        let Some(query) = c.query.clone() else {
            return Ok(None);
        };
        Ok(Some((
            LoopHead::Query {
                var: var.to_lowercase(),
                query: Box::new(query),
            },
            args,
        )))
    }

    /// The text from..to as a call of a workload PL/pgSQL routine, if it
    /// is exactly one.
    fn routine_call(&self, from: usize, to: usize) -> Result<Option<Cond>> {
        let Some(pl) = &self.pl else { return Ok(None) };
        let t = self.file.text[from..to].trim_start();
        let Some((name, _)) = ident_at(t, 0) else {
            return Ok(None);
        };
        if !pl.callable.contains(&name) {
            return Ok(None);
        }
        let c = self.expr(from, to)?;
        Ok(matches!(c.expr, Expr::Function(_)).then_some(c))
    }

    /// An SQL statement from a snippet (rewritten, INTO cut out, parsed).
    pub(super) fn stmt_of(&self, s: Snippet) -> Result<Stmt> {
        let text = match &self.pl {
            Some(pl) => pl.rewrite(self.file, &self.extract_calls(s.clone())?)?,
            None => s.text.clone(),
        };
        let (locks, weak_lock) = super::statement::normalize_locks(&text);
        let (clean, into) = super::statement::strip_into(&locks);
        let sql = super::parse_one(
            self.file,
            &Snippet {
                text: clean,
                offset: s.offset,
            },
        )?;
        Ok(Stmt {
            snip: s,
            sql,
            into,
            weak_lock,
        })
    }

    /// Calls of workload routines inside a statement or expression (not
    /// the whole of it: `v := f(…)`, PERFORM and CALL inline that
    /// directly) become `:__callN`, and the call is queued to be inlined
    /// before the node that holds it. In a statement that names a table
    /// the call may run once per row, or not at all: a loop.
    pub(super) fn extract_calls(&self, mut s: Snippet) -> Result<Snippet> {
        let Some(pl) = &self.pl else { return Ok(s) };
        let t = s.text.clone();
        let b = t.as_bytes();
        let whole = t.trim();
        let mut out = String::with_capacity(t.len());
        let (mut i, mut copied) = (0, 0);
        while i < b.len() {
            if let Some(e) = literal_end(&t, i) {
                i = e;
                continue;
            }
            let starts = (b[i].is_ascii_alphabetic() || b[i] == b'_')
                && (i == 0 || !is_word_byte(b[i - 1]) && !matches!(b[i - 1], b'$' | b'.' | b':'));
            if !starts {
                i += t[i..].chars().next().map_or(1, char::len_utf8);
                continue;
            }
            let (w, e) = ident_at(&t, i).unwrap_or_default();
            let open = e + blank_prefix(&t[e..]);
            let close = (b.get(open) == Some(&b'(') && pl.callable.contains(&w))
                .then(|| matching_paren(&t, open))
                .flatten();
            match close {
                Some(c) if t[i..=c].trim() != whole => {
                    let n = pl.calls.get() + 1;
                    pl.calls.set(n);
                    let call = self.cond(Snippet {
                        text: t[i..=c].to_string(),
                        offset: s.offset + i,
                    })?;
                    let var = format!("__call{n}");
                    let node = Node::Call {
                        call,
                        result: Some(var.clone()),
                        at: s.offset + i,
                    };
                    let node = if pl.relations_in(&t).is_empty() {
                        node
                    } else {
                        Node::Loop {
                            head: LoopHead::Plain,
                            body: vec![node],
                            at: s.offset + i,
                            label: None,
                        }
                    };
                    pl.pending.borrow_mut().push(node);
                    out.push_str(&t[copied..i]);
                    out.push(':');
                    out.push_str(&var);
                    copied = c + 1;
                    i = c + 1;
                }
                _ => i = e.max(i + 1),
            }
        }
        out.push_str(&t[copied..]);
        s.text = out;
        Ok(s)
    }

    /// Queued calls (see `extract_calls`) from `base` on, to be put
    /// before the node they were found in.
    pub(super) fn take_pending(&self, base: usize) -> Vec<Node> {
        match &self.pl {
            Some(pl) => {
                let mut p = pl.pending.borrow_mut();
                if p.len() > base {
                    p.split_off(base)
                } else {
                    vec![]
                }
            }
            None => vec![],
        }
    }

    pub(super) fn pending_len(&self) -> usize {
        self.pl.as_ref().map_or(0, |pl| pl.pending.borrow().len())
    }

    /// `OPEN c [(args)]` of a bound cursor or `OPEN c [[NO] SCROLL] FOR
    /// query`: the arguments' assignments, then the query.
    fn open_cursor(&mut self) -> Result<Vec<Node>> {
        let at = self.start();
        let semi = self.semi_after("OPEN", at, "end it with `;`")?;
        let end = self.toks[semi].1;
        let name = self.word(self.pos + 1).unwrap_or_default().to_lowercase();
        let for_k = (self.pos + 2..semi).find(|&k| self.word(k).as_deref() == Some("FOR"));
        let mut out = vec![];
        if let Some(k) = for_k {
            if self.word(k + 1).as_deref() == Some("EXECUTE") {
                return Err(self.err(
                    at,
                    4,
                    "OPEN … FOR EXECUTE (dynamic SQL) cannot be analysed",
                    "write OPEN c FOR SELECT … with the query itself",
                ));
            }
            let q = self.sql(self.toks[k].2, end)?;
            self.pos = semi + 1;
            out.push(Node::Open(Box::new(q)));
            return Ok(out);
        }
        let cursor = self
            .pl
            .as_ref()
            .and_then(|pl| pl.cursors.get(&name).cloned());
        let Some(cursor) = cursor else {
            return Err(self.err(
                at,
                4,
                format!("OPEN of `{name}`, which is not a cursor declared with a query"),
                "declare it as name CURSOR FOR SELECT …, or write OPEN name FOR SELECT …",
            ));
        };
        let name_end = self.toks[self.pos + 1].2;
        out.extend(self.cursor_args(&cursor, name_end, end, at)?);
        self.pos = semi + 1;
        if let Some(q) = cursor.query {
            out.push(Node::Open(Box::new(q)));
        }
        Ok(out)
    }

    /// `(a, b)` after a bound cursor's name: assignments to its parameters.
    pub(super) fn cursor_args(
        &self,
        c: &Cursor,
        from: usize,
        to: usize,
        at: usize,
    ) -> Result<Vec<Node>> {
        let text = &self.file.text[from..to];
        let open = blank_prefix(text);
        if text.as_bytes().get(open) != Some(&b'(') {
            if !c.params.is_empty() {
                return Err(self.err(
                    at,
                    4,
                    "the cursor takes arguments",
                    "pass them: OPEN c(arg, …);",
                ));
            }
            return Ok(vec![]);
        }
        let close = matching_paren(text, open).unwrap_or(text.len());
        let args = self.exprs(from + open + 1, from + close)?;
        if args.len() != c.params.len() {
            return Err(self.err(
                at,
                4,
                format!(
                    "the cursor takes {} arguments, {} given",
                    c.params.len(),
                    args.len()
                ),
                "pass one value per cursor parameter",
            ));
        }
        Ok(c.params
            .iter()
            .cloned()
            .zip(args)
            .map(|(var, expr)| Node::Assign { var, expr })
            .collect())
    }

    /// FETCH … INTO targets / MOVE …: the targets get fresh values (the
    /// cursor's query was read at OPEN).
    fn fetch(&mut self) -> Result<Vec<Node>> {
        let at = self.start();
        let semi = self.semi_after("FETCH", at, "end it with `;`")?;
        let into = (self.pos + 1..semi).find(|&k| self.word(k).as_deref() == Some("INTO"));
        let mut out = vec![];
        // The cursor moves: `CURRENT OF c` names another row.
        let last = into.unwrap_or(semi).saturating_sub(1);
        if let Some(c) = self.word(last).map(|w| w.to_lowercase()) {
            if self
                .pl
                .as_ref()
                .is_some_and(|pl| pl.var(&c) == Some(VarKind::Cursor))
            {
                let null = self.cond(Snippet {
                    text: "NULL".into(),
                    offset: at,
                })?;
                out.push(Node::Assign { var: c, expr: null });
            }
        }
        if let Some(k) = into {
            let (from, to) = (self.toks[k].2, self.toks[semi].1);
            out.extend(self.fresh_targets(from, to, at)?);
        }
        self.pos = semi + 1;
        Ok(out)
    }

    /// Comma-separated variables from..to: each assigned a fresh value.
    fn fresh_targets(&self, from: usize, to: usize, at: usize) -> Result<Vec<Node>> {
        let mut out = vec![];
        for (o, piece) in split_top(&self.file.text[from..to], b',') {
            let lead = blank_prefix(piece);
            let target = piece[lead..].split(['=', ':']).next().unwrap_or("").trim();
            let var = target.rsplit('.').next().unwrap_or(target).to_lowercase();
            let var = var.split('[').next().unwrap_or("").trim().to_string();
            let known = self.pl.as_ref().is_some_and(|pl| pl.var(&var).is_some());
            if !known {
                return Err(self.err(
                    from + o + lead,
                    target.len().max(1),
                    format!("`{target}` is not a variable of the routine"),
                    "declare it in a DECLARE section",
                ));
            }
            out.push(Node::Assign {
                var,
                expr: self.cond(Snippet {
                    text: "NULL".into(),
                    offset: at,
                })?,
            });
        }
        Ok(out)
    }

    /// GET [CURRENT|STACKED] DIAGNOSTICS v = item, …: fresh values.
    fn diagnostics(&mut self) -> Result<Vec<Node>> {
        let at = self.start();
        let semi = self.semi_after("GET DIAGNOSTICS", at, "end it with `;`")?;
        let Some(k) =
            (self.pos + 1..semi).find(|&k| self.word(k).as_deref() == Some("DIAGNOSTICS"))
        else {
            return Err(self.err(
                at,
                3,
                "expected GET [STACKED] DIAGNOSTICS",
                "write GET DIAGNOSTICS v = ROW_COUNT;",
            ));
        };
        let out = self.fresh_targets(self.toks[k].2, self.toks[semi].1, at)?;
        self.pos = semi + 1;
        Ok(out)
    }

    /// EXECUTE 'literal' [INTO …] [USING …]: the literal is parsed as SQL;
    /// its `$n` are the USING arguments. A computed string is an error.
    fn execute(&mut self) -> Result<Vec<Node>> {
        let at = self.start();
        let semi = self.semi_after("EXECUTE", at, "end it with `;`")?;
        let end = self.toks[semi].1;
        let from = self.toks[self.pos].2;
        let lit = from + blank_prefix(&self.file.text[from..end]);
        let file = self.file;
        let t = &file.text;
        let dynamic = || {
            self.err(
                at,
                7,
                "EXECUTE of a computed string (dynamic SQL) cannot be analysed",
                "write the statement itself, or EXECUTE a single string literal",
            )
        };
        if t.as_bytes().get(lit) != Some(&b'\'') {
            return Err(dynamic());
        }
        let close = quoted_end(t, lit);
        let after = t
            .get(close..end)
            .unwrap_or("")
            .trim_start()
            .to_ascii_uppercase();
        if !(after.is_empty() || after.starts_with("INTO") || after.starts_with("USING")) {
            return Err(dynamic());
        }
        let using = (self.pos + 1..semi)
            .find(|&k| self.word(k).as_deref() == Some("USING") && self.toks[k].1 >= close);
        let into_end = using.map_or(end, |k| self.toks[k].1);
        let Some(content) = t.get(lit + 1..close.saturating_sub(1)) else {
            return Err(dynamic());
        };
        let n = self.pl.as_ref().map_or(0, |pl| pl.exec_count);
        if let Some(pl) = &mut self.pl {
            pl.exec_count += 1;
        }
        let mut out = vec![];
        let mut content = content.replace("''", "' ");
        if let Some(k) = using {
            let args = self.exprs(self.toks[k].2, end)?;
            for (i, a) in args.into_iter().enumerate().rev() {
                let var = format!("_exec{n}_{}", i + 1);
                content = content.replace(&format!("${}", i + 1), &format!(":{var}"));
                if let Some(pl) = &mut self.pl {
                    pl.vars.entry(var.clone()).or_insert((VarKind::Scalar, at));
                }
                out.insert(0, Node::Assign { var, expr: a });
            }
        }
        let text = format!("{content} {}", t.get(close..into_end).unwrap_or(""));
        out.push(Node::Sql(Box::new(self.stmt_of(Snippet {
            text,
            offset: lit + 1,
        })?)));
        self.pos = semi + 1;
        Ok(out)
    }

    /// `FOR a, b, c IN …` (PL/pgSQL, LOOP at token `lp`): the targets
    /// before the last, and the token position from which `for_head` sees
    /// `FOR c IN …`. Anything else: no extra targets, the position as is.
    pub(super) fn loop_targets(&self, lp: usize) -> (Vec<String>, usize) {
        let none = (vec![], self.pos);
        if self.pl.is_none() {
            return none;
        }
        let Some(k) = (self.pos + 2..lp).find(|&k| self.word(k).as_deref() == Some("IN")) else {
            return none;
        };
        if k == self.pos + 2 {
            return none;
        }
        let between = &self.file.text[self.toks[self.pos + 1].1..self.toks[k - 1].2];
        let names: Vec<String> = between
            .split(',')
            .map(|n| n.trim().to_lowercase())
            .collect();
        let simple = names.len() == k - self.pos - 1
            && names
                .iter()
                .all(|n| ident_at(n, 0).is_some_and(|(_, e)| e == n.len()));
        if !simple {
            return none;
        }
        (names[..names.len() - 1].to_vec(), k - 2)
    }

    /// Assignments of fresh values to `vars`.
    pub(super) fn fresh_values(&self, vars: &[String], at: usize) -> Result<Vec<Node>> {
        vars.iter()
            .map(|v| {
                Ok(Node::Assign {
                    var: v.clone(),
                    expr: self.cond(Snippet {
                        text: "NULL".into(),
                        offset: at,
                    })?,
                })
            })
            .collect()
    }

    /// The loop variable of a FOR / FOREACH, declared for the body.
    pub(super) fn declare_loop_var(&mut self, var: &str, record: bool) {
        if let Some(pl) = &mut self.pl {
            let kind = if record {
                VarKind::Record
            } else {
                VarKind::Scalar
            };
            pl.vars.entry(var.to_string()).or_insert((kind, 0));
        }
    }
}

/// Offset of the value after `:=` or `=` at the top level of a
/// declaration.
fn top_level_op(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\'' => {
                i = quoted_end(text, i);
                continue;
            }
            b'(' => depth += 1,
            b')' => depth = depth.saturating_sub(1),
            b':' if depth == 0 && b.get(i + 1) == Some(&b'=') => return Some(i + 2),
            b'=' if depth == 0 => return Some(i + 1),
            _ => {}
        }
        i += 1;
    }
    None
}

/// RETURN ends the path. Where an IF has branches that return and others
/// that do not, what follows the IF is moved into the others (exactly
/// PostgreSQL's paths); a RETURN at the end of the routine is dropped.
/// RETURNs left (inside loops) are lowered as leaving everything after
/// them optional.
pub fn hoist_returns(nodes: Vec<Node>) -> Vec<Node> {
    let mut out = vec![];
    let mut it = nodes.into_iter();
    while let Some(n) = it.next() {
        match n {
            Node::Return { .. } if it.len() == 0 => return out,
            Node::Return { .. } => {
                out.push(n);
                return out;
            }
            Node::Block {
                label: None,
                body,
                handlers: None,
            } => {
                let mut rest: Vec<Node> = body;
                rest.extend(it);
                out.extend(hoist_returns(rest));
                return out;
            }
            Node::If(mut bs) if bs.iter().any(|(_, b)| ends_in_return(b)) => {
                let rest: Vec<Node> = it.collect();
                if bs.last().is_some_and(|(c, _)| c.is_some()) {
                    bs.push((None, vec![]));
                }
                for (_, b) in &mut bs {
                    if !ends(b) {
                        b.extend(rest.iter().cloned());
                    }
                    *b = hoist_returns(std::mem::take(b));
                }
                out.push(Node::If(bs));
                return out;
            }
            n => out.push(n),
        }
    }
    out
}

fn ends(b: &[Node]) -> bool {
    match b.last() {
        Some(Node::Return { .. } | Node::Abort) => true,
        Some(Node::If(bs)) => {
            bs.last().is_some_and(|(c, _)| c.is_none()) && bs.iter().all(|(_, b)| ends(b))
        }
        _ => false,
    }
}

fn ends_in_return(b: &[Node]) -> bool {
    match b.last() {
        Some(Node::Return { .. }) => true,
        Some(Node::If(bs)) => bs.iter().any(|(_, b)| ends_in_return(b)),
        _ => false,
    }
}

/// The arguments of a call, by parameter: positional, then named
/// (`a => v`, `a := v`), then defaults. Errors name what is missing.
pub fn bind_args(
    file: &SourceFile,
    call: &Cond,
    callee: &ParsedRoutine,
    at: usize,
) -> Result<Vec<Cond>> {
    let Expr::Function(f) = &call.expr else {
        return Ok(vec![]);
    };
    let params = &callee.routine.params;
    let mut out: Vec<Option<Cond>> = callee.defaults.clone();
    // A function's OUT parameters take no argument; a procedure's do.
    let slots: Vec<usize> = (0..params.len())
        .filter(|&k| callee.routine.procedure || params[k].mode != Mode::Out)
        .collect();
    for (k, p) in params.iter().enumerate() {
        if !slots.contains(&k) && p.mode == Mode::Out {
            out[k] = Some(Cond {
                snip: call.snip.clone(),
                expr: Expr::Value(sqlparser::ast::Value::Null.with_empty_span()),
            });
        }
    }
    let mk = |e: &Expr| Cond {
        snip: call.snip.clone(),
        expr: e.clone(),
    };
    if let FunctionArguments::List(l) = &f.args {
        for (k, a) in l.args.iter().enumerate() {
            match a {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => {
                    let Some(&slot) = slots.get(k) else {
                        return Err(Diag::new(format!(
                            "too many arguments for {}",
                            callee.routine.name
                        ))
                        .help("pass one value per parameter")
                        .at(file, at, 4, "here"));
                    };
                    out[slot] = Some(mk(e));
                }
                FunctionArg::Named {
                    name,
                    arg: FunctionArgExpr::Expr(e),
                    ..
                }
                | FunctionArg::ExprNamed {
                    name: Expr::Identifier(name),
                    arg: FunctionArgExpr::Expr(e),
                    ..
                } => {
                    let n = super::ident_name(name);
                    let Some(k) = params
                        .iter()
                        .position(|p| p.name.as_deref() == Some(n.as_str()))
                    else {
                        return Err(Diag::new(format!(
                            "{} has no parameter `{n}`",
                            callee.routine.name
                        ))
                        .help("name one of the routine's parameters")
                        .at(file, at, 4, "here"));
                    };
                    out[k] = Some(mk(e));
                }
                _ => {
                    return Err(Diag::new("unsupported argument form")
                        .help("pass values positionally or as name => value")
                        .at(file, at, 4, "here"))
                }
            }
        }
    }
    out.into_iter()
        .enumerate()
        .map(|(k, a)| {
            a.ok_or_else(|| {
                Diag::new(format!("no value for parameter {} of {}", k + 1, callee.routine.name))
                    .help("pass a value for every parameter without a default (OUT parameters take a variable or NULL)")
                    .at(file, at, 4, "here")
            })
        })
        .collect()
}

/// A workload's parsed PL/pgSQL routines by (lower-case) name.
pub type Routines = HashMap<String, ParsedRoutine>;

/// Replace every call of a workload routine by the callee's statements:
/// its parameters assigned the arguments, its body (variables renamed
/// `callee.x`, RETURN leaving the inlined block), then the result variable
/// (a fresh value) and OUT arguments. Recursion is an error.
pub fn inline_calls(
    file: &SourceFile,
    nodes: Vec<Node>,
    routines: &Routines,
    stack: &mut Vec<String>,
) -> Result<Vec<Node>> {
    let mut out = vec![];
    for n in nodes {
        match n {
            Node::Call { call, result, at } => {
                out.extend(inline_one(file, &call, result, at, routines, stack)?)
            }
            n => out.push(map_children(n, &mut |b| {
                inline_calls(file, b, routines, stack)
            })?),
        }
    }
    Ok(out)
}

fn call_name(call: &Cond) -> String {
    match &call.expr {
        Expr::Function(f) => f
            .name
            .0
            .last()
            .and_then(|p| p.as_ident())
            .map(super::ident_name)
            .unwrap_or_default(),
        _ => String::new(),
    }
}

fn inline_one(
    file: &SourceFile,
    call: &Cond,
    result: Option<String>,
    at: usize,
    routines: &Routines,
    stack: &mut Vec<String>,
) -> Result<Vec<Node>> {
    let name = call_name(call);
    let Some(callee) = routines.get(&name) else {
        return Err(Diag::new(format!(
            "call of `{name}`, which is not a PL/pgSQL routine of this file"
        ))
        .help("isolint inlines calls of routines defined in the same routine file")
        .at(file, at, name.len().max(1), "here"));
    };
    if stack.contains(&name) {
        return Err(Diag::new(format!(
            "recursive call of `{name}` ({} → {name})",
            stack.join(" → ")
        ))
        .help("recursive routines cannot be inlined; unroll the recursion by hand")
        .at(file, at, name.len().max(1), "here"));
    }
    if callee
        .nodes
        .iter()
        .any(|n| matches!(n, Node::Commit { .. }))
    {
        return Err(Diag::new(format!("call of `{name}`, which commits"))
            .help("isolint splits only the called procedure itself at its COMMITs; call it from the client, or move the COMMIT into the caller")
            .at(file, at, name.len().max(1), "here"));
    }
    let args = bind_args(file, call, callee, at)?;
    let prefix = format!("{name}.");
    let label = format!("{name}()");
    let mut out = vec![];
    let params = &callee.routine.params;
    for (k, (p, a)) in params.iter().zip(&args).enumerate() {
        let var = p.name.clone().unwrap_or(format!("${}", k + 1));
        out.push(Node::Assign {
            var: rename_key(&var, &prefix),
            expr: a.clone(),
        });
    }
    let body = callee
        .nodes
        .iter()
        .cloned()
        .map(|n| rename(n, &prefix, &label))
        .collect();
    stack.push(name.clone());
    let body = inline_calls(file, body, routines, stack);
    stack.pop();
    out.push(Node::Block {
        label: Some(label),
        body: body?,
        handlers: None,
    });
    if let Some(v) = result {
        let null = Expr::Value(sqlparser::ast::Value::Null.with_empty_span());
        out.push(Node::Assign {
            var: v,
            expr: Cond {
                snip: call.snip.clone(),
                expr: null,
            },
        });
    }
    for (k, (p, a)) in params.iter().zip(&args).enumerate() {
        let target = match &a.expr {
            Expr::Value(v) => match &v.value {
                sqlparser::ast::Value::Placeholder(ph) if p.mode != Mode::In => {
                    ph.trim_start_matches(':').to_lowercase()
                }
                _ => continue,
            },
            _ => continue,
        };
        let var = p.name.clone().unwrap_or(format!("${}", k + 1));
        let ph = format!(":{}", rename_key(&var, &prefix));
        let expr = Expr::Value(sqlparser::ast::Value::Placeholder(ph).with_empty_span());
        out.push(Node::Assign {
            var: target,
            expr: Cond {
                snip: call.snip.clone(),
                expr,
            },
        });
    }
    Ok(out)
}

/// Apply `f` to every statement list directly inside a node.
fn map_children(n: Node, f: &mut dyn FnMut(Vec<Node>) -> Result<Vec<Node>>) -> Result<Node> {
    Ok(match n {
        Node::If(bs) => Node::If(
            bs.into_iter()
                .map(|(c, b)| Ok((c, f(b)?)))
                .collect::<Result<_>>()?,
        ),
        Node::Loop {
            head,
            body,
            at,
            label,
        } => Node::Loop {
            head,
            body: f(body)?,
            at,
            label,
        },
        Node::Block {
            label,
            body,
            handlers,
        } => Node::Block {
            label,
            body: f(body)?,
            handlers: match handlers {
                Some(hs) => Some(hs.into_iter().map(&mut *f).collect::<Result<_>>()?),
                None => None,
            },
        },
        n => n,
    })
}

/// A callee's variable name as seen by the caller.
fn rename_key(k: &str, prefix: &str) -> String {
    match k.strip_prefix('$') {
        Some(n) => format!("{prefix}p{n}"),
        None => format!("{prefix}{k}"),
    }
}

/// A placeholder (`:x`, `:a$i$`, `:r$f`, `$1`) renamed for the caller.
fn rename_placeholder(p: &str, prefix: &str) -> String {
    if let Some(n) = p.strip_prefix('$') {
        return format!(":{}", rename_key(&format!("${n}"), prefix));
    }
    let key = p.trim_start_matches(':');
    match key.split_once('$') {
        Some((a, rest)) if !a.is_empty() => {
            let idx = rest.trim_matches('$');
            if idx.bytes().all(|b| b.is_ascii_digit()) {
                format!(":{prefix}{a}${idx}$")
            } else {
                format!(":{prefix}{a}${prefix}{idx}$")
            }
        }
        _ => format!(":{}", rename_key(key, prefix)),
    }
}

fn rename_expr<V: sqlparser::ast::VisitMut>(v: &mut V, prefix: &str) {
    let _ = sqlparser::ast::visit_expressions_mut(v, |e| {
        if let Expr::Value(v) = e {
            if let sqlparser::ast::Value::Placeholder(p) = &mut v.value {
                *p = rename_placeholder(p, prefix);
            }
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
}

fn rename_cond(mut c: Cond, prefix: &str) -> Cond {
    rename_expr(&mut c.expr, prefix);
    c
}

fn rename_stmt(mut s: Stmt, prefix: &str) -> Stmt {
    rename_expr(&mut s.sql, prefix);
    s.into = s.into.iter().map(|v| rename_key(v, prefix)).collect();
    s
}

/// A callee's node with its variables and labels renamed, RETURN as an
/// EXIT of the inlined block `ret`.
fn rename(n: Node, prefix: &str, ret: &str) -> Node {
    let r = |b: Vec<Node>| -> Vec<Node> { b.into_iter().map(|n| rename(n, prefix, ret)).collect() };
    let lbl = |l: Option<String>| l.map(|l| format!("{prefix}{l}"));
    match n {
        Node::Sql(s) => Node::Sql(Box::new(rename_stmt(*s, prefix))),
        Node::Open(s) => Node::Open(Box::new(rename_stmt(*s, prefix))),
        Node::If(bs) => Node::If(
            bs.into_iter()
                .map(|(c, b)| (c.map(|c| rename_cond(c, prefix)), r(b)))
                .collect(),
        ),
        Node::Loop {
            head,
            body,
            at,
            label,
        } => Node::Loop {
            head: match head {
                LoopHead::Plain => LoopHead::Plain,
                LoopHead::While(c) => LoopHead::While(rename_cond(c, prefix)),
                LoopHead::Range { var, bounds } => LoopHead::Range {
                    var: rename_key(&var, prefix),
                    bounds: bounds.into_iter().map(|c| rename_cond(c, prefix)).collect(),
                },
                LoopHead::Query { var, query } => LoopHead::Query {
                    var: rename_key(&var, prefix),
                    query: Box::new(rename_stmt(*query, prefix)),
                },
                LoopHead::Array { var, expr } => LoopHead::Array {
                    var: rename_key(&var, prefix),
                    expr: rename_cond(expr, prefix),
                },
            },
            body: r(body),
            at,
            label: lbl(label),
        },
        Node::Exit {
            when,
            at,
            cont,
            label,
        } => Node::Exit {
            when: when.map(|c| rename_cond(c, prefix)),
            at,
            cont,
            label: lbl(label),
        },
        Node::Eval(v) => Node::Eval(v.into_iter().map(|c| rename_cond(c, prefix)).collect()),
        Node::Assign { var, expr } => Node::Assign {
            var: rename_key(&var, prefix),
            expr: rename_cond(expr, prefix),
        },
        Node::Return { at } => Node::Exit {
            when: None,
            at,
            cont: false,
            label: Some(ret.to_string()),
        },
        Node::Block {
            label,
            body,
            handlers,
        } => Node::Block {
            label: lbl(label),
            body: r(body),
            handlers: handlers.map(|hs| hs.into_iter().map(r).collect()),
        },
        Node::Call { call, result, at } => Node::Call {
            call: rename_cond(call, prefix),
            result: result.map(|v| rename_key(&v, prefix)),
            at,
        },
        Node::Prefix(b) => Node::Prefix(r(b)),
        n @ (Node::Begin { .. } | Node::Commit { .. } | Node::Abort) => n,
    }
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
        assert_eq!(sh.text.trim(), "BEGIN RETURN ' a' ; END");
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
                },
            )
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
