//! The SQL front-end: schema DDL (`ddl`) and transaction programs with a
//! thin procedural layer (`program`). Every SQL statement and expression is
//! parsed by `sqlparser`; this module only splits the text around IF /
//! LOOP / EXIT and maps parser errors to file positions. Lowering to BTPs
//! is `crate::frontend::lower`.

pub mod ast;
pub mod ddl;
pub mod gate;
pub mod lex;
pub mod pg;
pub mod pgbench;
pub mod plenv;
pub mod plpgsql;
pub mod procedural;
pub mod statement;

use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::{Parser, ParserError};

use crate::model::error::{Diag, SourceFile};

pub(crate) const DIALECT: PostgreSqlDialect = PostgreSqlDialect {};

/// A piece of a source file: its text and where it starts.
#[derive(Debug, Clone)]
pub struct Snippet {
    /// The source text (what the user wrote, shown in reports).
    pub text: String,
    pub offset: usize,
    /// What is parsed when it differs from `text` (PL/pgSQL variables as
    /// `:name`, calls cut out), with the way back to `text` positions.
    pub parsed: Option<Box<Rewrite>>,
}

/// A rewritten snippet text and its anchors `(position in the rewritten
/// text, position in the source text)`, sorted; between anchors the two
/// advance together.
#[derive(Debug, Clone)]
pub struct Rewrite {
    pub text: String,
    pub map: Vec<(usize, usize)>,
}

impl Snippet {
    /// The text to parse.
    pub fn parse_text(&self) -> &str {
        self.parsed.as_ref().map_or(&self.text, |r| &r.text)
    }

    /// File offset of a 1-based (line, column) inside this snippet, as
    /// sqlparser reports positions relative to the text it was given
    /// (`parse_text`).
    pub fn file_offset(&self, line: u64, col: u64) -> usize {
        let t = self.parse_text();
        let mut off = 0usize;
        for (i, l) in t.split_inclusive('\n').enumerate() {
            if i as u64 + 1 == line {
                let within: usize = l
                    .chars()
                    .take(col.saturating_sub(1) as usize)
                    .map(char::len_utf8)
                    .sum();
                return self.offset + self.orig(off + within);
            }
            off += l.len();
        }
        self.offset + self.orig(t.len())
    }

    /// The position in `text` of position `p` of `parse_text`.
    pub fn orig(&self, p: usize) -> usize {
        let Some(r) = &self.parsed else { return p };
        match r.map.partition_point(|&(n, _)| n <= p) {
            0 => p,
            k => {
                let (n, o) = r.map[k - 1];
                o + (p - n)
            }
        }
    }
}

/// Anchors of a rewrite in progress (see `Snippet::map`).
#[derive(Default)]
pub struct Anchors(pub Vec<(usize, usize)>);

impl Anchors {
    /// Text written so far is `out_len` long and continues at `orig`.
    pub fn at(&mut self, out_len: usize, orig: usize) {
        let implied = match self.0.last() {
            Some(&(n, o)) => o + (out_len - n),
            None => out_len,
        };
        if implied == orig {
            return;
        }
        match self.0.last_mut() {
            Some(l) if l.0 == out_len => l.1 = orig,
            _ => self.0.push((out_len, orig)),
        }
    }
}

/// Parse a snippet as a list of `;`-separated statements, requiring the
/// whole input: `Parser::parse_statements` stops quietly at a stray `END`
/// and would drop what follows.
pub fn parse_statements(
    file: &SourceFile,
    snip: &Snippet,
) -> Result<Vec<sqlparser::ast::Statement>, Box<Diag>> {
    // Only when sqlparser fails: `rows` may be a column's name.
    parse_all(file, snip).or_else(|e| {
        rows_from(file, snip)?;
        Err(e)
    })
}

fn parse_all(
    file: &SourceFile,
    snip: &Snippet,
) -> Result<Vec<sqlparser::ast::Statement>, Box<Diag>> {
    use sqlparser::tokenizer::Token;
    let mut p = parser(snip).map_err(|e| parse_error(file, snip, &e))?;
    let mut out = vec![];
    loop {
        while p.consume_token(&Token::SemiColon) {}
        if p.peek_token().token == Token::EOF {
            return Ok(out);
        }
        out.push(
            p.parse_statement()
                .map_err(|e| parse_error(file, snip, &e))?,
        );
        let next = p.peek_token();
        if next.token != Token::SemiColon && next.token != Token::EOF {
            let at = snip.file_offset(next.span.start.line, next.span.start.column);
            let shown = as_written(file, at, &next.token.to_string());
            return Err(Diag::new(format!(
                "SQL syntax error: unexpected `{shown}` after the end of a statement"
            ))
            .help("end each statement with `;` (END belongs to END IF / END LOOP)")
            .at(
                file,
                at,
                next.token.to_string().len().max(1),
                "leftover input",
            ));
        }
    }
}

/// `ROWS FROM (f(…), g(…))` in FROM, which PostgreSQL accepts and
/// sqlparser does not parse: a located error saying so (not a syntax
/// error PostgreSQL would not give).
fn rows_from(file: &SourceFile, snip: &Snippet) -> Result<(), Box<Diag>> {
    let t = snip.parse_text();
    // ASCII only: byte offsets stay those of `t`.
    let upper = t.to_ascii_uppercase();
    let mut from = 0;
    while let Some(k) = lex::find_word_in(&upper[from..], "ROWS") {
        let s = from + k;
        let mut e = s + 4;
        e += lex::blank_prefix(&t[e..]);
        let then_from = upper[e..].starts_with("FROM")
            && !upper
                .as_bytes()
                .get(e + 4)
                .is_some_and(|b| lex::is_word_byte(*b));
        if then_from && t[e + 4..].trim_start().starts_with('(') {
            return Err(Diag::new("`ROWS FROM (…)` in FROM is not supported")
                .help("for arrays write `unnest(a, b, …)`, which PostgreSQL also accepts; otherwise one set-returning function per FROM item")
                .at(file, snip.offset + snip.orig(s), 4, "ROWS FROM"));
        }
        from = s + 4;
    }
    Ok(())
}

/// Parse a snippet as exactly one SQL statement.
pub fn parse_one(
    file: &SourceFile,
    snip: &Snippet,
) -> Result<sqlparser::ast::Statement, Box<Diag>> {
    let mut stmts = parse_statements(file, snip)?;
    match stmts.len() {
        1 => Ok(stmts.remove(0)),
        0 => Err(Diag::new("expected an SQL statement").at(
            file,
            snip.offset,
            snip.text.len().max(1),
            "here",
        )),
        _ => Err(Diag::new("expected one SQL statement here, found several")
            .help("end each statement with `;`")
            .at(file, snip.offset, snip.text.len().max(1), "here")),
    }
}

/// Parse a snippet as an expression (IF / WHILE / EXIT WHEN conditions).
pub fn parse_expr(file: &SourceFile, snip: &Snippet) -> Result<sqlparser::ast::Expr, Box<Diag>> {
    let mut p = parser(snip).map_err(|e| parse_error(file, snip, &e))?;
    let e = p.parse_expr().map_err(|e| parse_error(file, snip, &e))?;
    if p.peek_token().token != sqlparser::tokenizer::Token::EOF {
        let span = p.peek_token().span;
        let at = snip.file_offset(span.start.line, span.start.column);
        return Err(Diag::new("unexpected text after the condition")
            .help("a condition ends at THEN, LOOP or `;`")
            .at(file, at, 1, "leftover input"));
    }
    Ok(e)
}

/// A parser over the snippet's tokens. JDBC's `?` placeholders become
/// `Placeholder("?@<file offset>")` tokens (the lowering numbers them `?1`,
/// `?2`, … in file order): PostgreSQL's dialect reads `?` as the jsonb
/// operator, so only a `?` where an operand is expected is a placeholder.
/// Working on tokens keeps every span, so error columns stay exact.
fn parser(snip: &Snippet) -> Result<Parser<'static>, ParserError> {
    use sqlparser::tokenizer::{Token, Tokenizer};
    let text = rewrite_subscripts(snip.parse_text());
    let mut tokens = Tokenizer::new(&DIALECT, &text).tokenize_with_location()?;
    if let Some((from, to)) = conflict_predicate(&tokens) {
        tokens.drain(from..to);
    }
    for i in jdbc_placeholders(&tokens) {
        let s = tokens[i].span.start;
        let at = snip.file_offset(s.line, s.column);
        tokens[i].token = Token::Placeholder(format!("?@{at}"));
    }
    Ok(Parser::new(&DIALECT).with_tokens_with_locations(tokens))
}

/// `ON CONFLICT (cols) WHERE pred DO …`: the token range `[WHERE, DO)` of
/// the index predicate (PostgreSQL's inference of a partial unique index),
/// which sqlparser does not read. `parser` leaves it out of the statement
/// and the lowering reads it back with `conflict_index_predicate`.
fn conflict_predicate(tokens: &[sqlparser::tokenizer::TokenWithSpan]) -> Option<(usize, usize)> {
    use sqlparser::keywords::Keyword;
    use sqlparser::tokenizer::Token;
    let word = |i: usize, k: Keyword| matches!(&tokens[i].token, Token::Word(w) if w.keyword == k && w.quote_style.is_none());
    let solid: Vec<usize> = (0..tokens.len())
        .filter(|&i| !matches!(tokens[i].token, Token::Whitespace(_)))
        .collect();
    let at = solid.windows(3).position(|w| {
        word(w[0], Keyword::ON)
            && word(w[1], Keyword::CONFLICT)
            && tokens[w[2]].token == Token::LParen
    })?;
    let mut depth = 0i32;
    let mut k = at + 2;
    while k < solid.len() {
        match tokens[solid[k]].token {
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            _ => {}
        }
        k += 1;
        if depth == 0 {
            break;
        }
    }
    let from = *solid.get(k)?;
    if !word(from, Keyword::WHERE) {
        return None;
    }
    let mut depth = 0i32;
    for &i in &solid[k..] {
        match tokens[i].token {
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            _ if depth == 0 && word(i, Keyword::DO) => return Some((from, i)),
            _ => {}
        }
    }
    None
}

/// The index predicate of `ON CONFLICT (cols) WHERE pred DO …`, parsed
/// (see `conflict_predicate`); None without one.
pub fn conflict_index_predicate(
    file: &SourceFile,
    snip: &Snippet,
) -> Result<Option<sqlparser::ast::Expr>, Box<Diag>> {
    use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};
    let text = rewrite_subscripts(snip.parse_text());
    let Ok(tokens) = Tokenizer::new(&DIALECT, &text).tokenize_with_location() else {
        return Ok(None);
    };
    let Some((from, to)) = conflict_predicate(&tokens) else {
        return Ok(None);
    };
    let mut part = tokens[from + 1..to].to_vec();
    part.push(TokenWithSpan::wrap(Token::EOF));
    let mut p = Parser::new(&DIALECT).with_tokens_with_locations(part);
    p.parse_expr()
        .map(Some)
        .map_err(|e| parse_error(file, snip, &e))
}

/// The indices of the `?` tokens that stand where an operand is expected
/// (JDBC placeholders; after an operand `?` is the jsonb operator).
fn jdbc_placeholders(tokens: &[sqlparser::tokenizer::TokenWithSpan]) -> Vec<usize> {
    use sqlparser::tokenizer::Token;
    let mut out = vec![];
    let mut prev: Option<usize> = None;
    for (i, t) in tokens.iter().enumerate() {
        if matches!(t.token, Token::Whitespace(_)) {
            continue;
        }
        if t.token == Token::Question && !prev.is_some_and(|p| ends_operand(&tokens[p].token)) {
            out.push(i);
        }
        prev = Some(i);
    }
    out
}

/// File offsets of the `?` placeholders of a whole file, in order (the
/// same rule as `parser`); empty when the file does not tokenize.
pub fn qmark_offsets(text: &str) -> Vec<usize> {
    use sqlparser::tokenizer::Tokenizer;
    if !text.contains('?') {
        return vec![];
    }
    let Ok(tokens) = Tokenizer::new(&DIALECT, text).tokenize_with_location() else {
        return vec![];
    };
    let whole = Snippet {
        text: text.to_string(),
        offset: 0,
        parsed: None,
    };
    jdbc_placeholders(&tokens)
        .into_iter()
        .map(|i| whole.file_offset(tokens[i].span.start.line, tokens[i].span.start.column))
        .collect()
}

/// The token can end an operand, so a `?` after it is an operator.
fn ends_operand(t: &sqlparser::tokenizer::Token) -> bool {
    use sqlparser::keywords::Keyword;
    use sqlparser::tokenizer::Token;
    match t {
        // Column names may be non-reserved keywords (`status ? 'k'`): a
        // word ends an operand unless it is one that an expression follows.
        Token::Word(w) => {
            w.quote_style.is_some()
                || !matches!(
                    w.keyword,
                    Keyword::SELECT
                        | Keyword::WHERE
                        | Keyword::AND
                        | Keyword::OR
                        | Keyword::NOT
                        | Keyword::LIMIT
                        | Keyword::OFFSET
                        | Keyword::THEN
                        | Keyword::ELSE
                        | Keyword::WHEN
                        | Keyword::CASE
                        | Keyword::VALUES
                        | Keyword::IN
                        | Keyword::BY
                        | Keyword::RETURNING
                        | Keyword::LIKE
                        | Keyword::ILIKE
                        | Keyword::BETWEEN
                        | Keyword::ON
                        | Keyword::HAVING
                        | Keyword::DISTINCT
                        | Keyword::ALL
                        | Keyword::ANY
                        | Keyword::SOME
                        | Keyword::IS
                        | Keyword::RETURN
                        | Keyword::USING
                        | Keyword::SET
                        | Keyword::WHILE
                        | Keyword::IF
                        | Keyword::CONTINUE
                )
        }
        Token::Number(..)
        | Token::SingleQuotedString(_)
        | Token::DollarQuotedString(_)
        | Token::RParen
        | Token::RBracket
        | Token::Placeholder(_) => true,
        _ => false,
    }
}

/// `:a[:i]`, `:a[i]` and `:a[3]` (an array parameter indexed by a
/// variable or a number) would parse as an array slice; they become the
/// placeholders `:a$$i$`, `:a$i$`, `:a$3$` of the same length, which the
/// lowering reads as "element i of a" (one value per index value).
pub fn rewrite_subscripts(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    while i < b.len() {
        if let Some(e) = lex::lexeme_end(text, i) {
            i = e;
            continue;
        }
        match b[i] {
            b':' if b
                .get(i + 1)
                .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_') =>
            {
                let mut j = i + 1;
                while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                    j += 1;
                }
                if b.get(j) == Some(&b'[') {
                    let inner_start = j + 1;
                    let mut k = inner_start + usize::from(b.get(inner_start) == Some(&b':'));
                    let name_start = k;
                    while k < b.len() && (b[k].is_ascii_alphanumeric() || b[k] == b'_') {
                        k += 1;
                    }
                    if k > name_start && b.get(k) == Some(&b']') {
                        out[j] = b'$';
                        if name_start > inner_start {
                            out[inner_start] = b'$';
                        }
                        out[k] = b'$';
                        i = k;
                    }
                }
                i = i.max(j.saturating_sub(1));
            }
            _ => {}
        }
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_string())
}

/// sqlparser errors carry "at Line: L, Column: C" in their text.
pub fn parse_error(file: &SourceFile, snip: &Snippet, e: &ParserError) -> Box<Diag> {
    let msg = e.to_string();
    let msg = msg
        .strip_prefix("sql parser error: ")
        .unwrap_or(&msg)
        .to_string();
    let (text, at) = match msg.rsplit_once(" at Line: ") {
        Some((text, pos)) => {
            let mut nums = pos
                .split(", Column: ")
                .map(|n| n.trim().parse::<u64>().unwrap_or(1));
            let (l, c) = (nums.next().unwrap_or(1), nums.next().unwrap_or(1));
            (text.to_string(), snip.file_offset(l, c))
        }
        None => (msg.clone(), snip.offset),
    };
    // sqlparser gives no position for the end of input: point at the end
    // of the statement, where something is missing.
    let at = if text.ends_with("found: EOF") {
        snip.offset + snip.text.trim_end().len()
    } else {
        at
    };
    // `found: :` where the user wrote a variable: show the variable.
    let text = match text.rsplit_once("found: ") {
        Some((head, tok)) if tok.starts_with(':') => {
            format!("{head}found: {}", as_written(file, at, tok))
        }
        _ => text,
    };
    Diag::new(format!("SQL syntax error: {text}"))
        .help("isolint reads PostgreSQL syntax; parameters are written :name, $1 or ?")
        .at(file, at, 1, "here")
}

/// A token as the user wrote it at file offset `at`: a `:` (or `:name`)
/// that the PL/pgSQL rewriting put before a variable is shown as the
/// variable's name in the source.
fn as_written(file: &SourceFile, at: usize, token: &str) -> String {
    let src = file.text.get(at..).unwrap_or("");
    if !token.starts_with(':') || src.starts_with(':') {
        return token.to_string();
    }
    let n = src.bytes().take_while(|&c| lex::is_word_byte(c)).count();
    match n {
        0 => token.to_string(),
        _ => src[..n].to_string(),
    }
}

/// Lower-case an unquoted identifier (SQL case rules), keep quoted ones.
pub fn ident_name(i: &sqlparser::ast::Ident) -> String {
    if i.quote_style.is_some() {
        i.value.clone()
    } else {
        i.value.to_lowercase()
    }
}

/// Case rule for matching a name from SQL against a declared name.
pub fn same_name(declared: &str, used: &sqlparser::ast::Ident) -> bool {
    if used.quote_style.is_some() {
        declared == used.value
    } else {
        declared.eq_ignore_ascii_case(&used.value)
    }
}
