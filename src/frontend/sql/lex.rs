//! The lexical layer under the procedural parsers (the `.sql` dialect in
//! `procedural`, PL/pgSQL in `plpgsql`): words, quotes, dollar quotes and
//! blanks, by byte offset, following PostgreSQL 15's scanner (`scan.l`,
//! `standard_conforming_strings = on`): block comments nest, `E'…'`
//! strings take backslash escapes, `'a'` newline `'b'` is one string,
//! `U&'…'` / `U&"…"` and `B'…'` / `X'…'` are single lexemes,
//! identifiers continue with `$`. Knows no statements. The property test
//! below compares it with PostgreSQL's own scanner (`pg_query::scan`).

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lex {
    Word,
    Semi,
}

/// PostgreSQL's `ident_start`.
fn ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c >= 0x80
}

/// PostgreSQL's `ident_cont` (identifiers may contain `$`).
fn ident_cont(c: u8) -> bool {
    ident_start(c) || c.is_ascii_digit() || c == b'$'
}

/// The end of the lexeme whose contents are not SQL starting at `i`: a
/// comment, a string constant (with its `E`/`B`/`X`/`U&` prefix; `N'…'`
/// is the keyword NCHAR and a plain string, as PostgreSQL scans it), a
/// quoted identifier (also `U&"…"`) or a dollar-quoted string. None when
/// none starts there, also in the middle of an identifier (`xE'a'` is
/// `xE` then `'a'`). Unterminated lexemes end at the end of the text
/// (PostgreSQL rejects them; its parser gives the error).
pub(crate) fn lexeme_end(text: &str, i: usize) -> Option<usize> {
    let in_word = i > 0 && ident_cont(text.as_bytes()[i - 1]);
    lexeme_from(text, i, in_word)
}

/// `lexeme_end`, told whether `i` continues an identifier.
fn lexeme_from(text: &str, i: usize, in_word: bool) -> Option<usize> {
    let b = text.as_bytes();
    let c = *b.get(i)?;
    let at = |k: usize| b.get(i + k).copied();
    match c {
        b'-' if at(1) == Some(b'-') => Some(line_end(b, i)),
        b'/' if at(1) == Some(b'*') => Some(block_comment_end(b, i)),
        b'"' => Some(quoted_ident_end(b, i + 1)),
        // Called at the quote of `E'…'` (a caller that read `E` as a word).
        b'\'' => {
            let escapes =
                i > 0 && matches!(b[i - 1], b'e' | b'E') && !(i > 1 && ident_cont(b[i - 2]));
            Some(string_end(b, i + 1, Quoting::of(escapes)))
        }
        _ if in_word => None,
        b'e' | b'E' if at(1) == Some(b'\'') => Some(string_end(b, i + 2, Quoting::Escape)),
        b'b' | b'B' | b'x' | b'X' if at(1) == Some(b'\'') => {
            Some(string_end(b, i + 2, Quoting::Bits))
        }
        b'u' | b'U' if at(1) == Some(b'&') && at(2) == Some(b'\'') => {
            Some(string_end(b, i + 3, Quoting::Standard))
        }
        b'u' | b'U' if at(1) == Some(b'&') && at(2) == Some(b'"') => {
            Some(quoted_ident_end(b, i + 3))
        }
        b'$' => dollar_at(text, i),
        _ => None,
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Quoting {
    /// `'…'`, `U&'…'`: only `''` escapes a quote.
    Standard,
    /// `E'…'`: `\` escapes the next character, `''` a quote.
    Escape,
    /// `B'…'`, `X'…'`: no escapes.
    Bits,
}

impl Quoting {
    fn of(escapes: bool) -> Self {
        if escapes {
            Quoting::Escape
        } else {
            Quoting::Standard
        }
    }
}

/// `--` comments end at a newline (`\n` or `\r`), which they exclude.
fn line_end(b: &[u8], i: usize) -> usize {
    (i..b.len())
        .find(|&k| b[k] == b'\n' || b[k] == b'\r')
        .unwrap_or(b.len())
}

/// Block comments nest: `/* /* */ still a comment */`.
fn block_comment_end(b: &[u8], i: usize) -> usize {
    let (mut depth, mut j) = (0usize, i);
    while j < b.len() {
        if b[j] == b'/' && b.get(j + 1) == Some(&b'*') {
            depth += 1;
            j += 2;
        } else if b[j] == b'*' && b.get(j + 1) == Some(&b'/') {
            depth -= 1;
            j += 2;
            if depth == 0 {
                return j;
            }
        } else {
            j += 1;
        }
    }
    b.len()
}

/// The end of a quoted identifier whose contents start at `j` (`""` is a
/// quote).
fn quoted_ident_end(b: &[u8], mut j: usize) -> usize {
    while j < b.len() {
        if b[j] == b'"' {
            if b.get(j + 1) == Some(&b'"') {
                j += 2;
                continue;
            }
            return j + 1;
        }
        j += 1;
    }
    b.len()
}

/// The end of a string constant whose contents start at `j`, continued
/// across `'…'` whitespace-with-a-newline `'…'` as PostgreSQL does (the
/// continuation keeps the first part's quoting).
fn string_end(b: &[u8], mut j: usize, q: Quoting) -> usize {
    loop {
        while j < b.len() {
            match b[j] {
                b'\\' if q == Quoting::Escape => j += 2,
                b'\'' if q != Quoting::Bits && b.get(j + 1) == Some(&b'\'') => j += 2,
                b'\'' => break,
                _ => j += 1,
            }
        }
        if j >= b.len() {
            return b.len();
        }
        j += 1;
        match continuation(b, j) {
            Some(k) => j = k + 1,
            None => return j,
        }
    }
}

/// PostgreSQL's `quotecontinue` at `j`: horizontal blanks and `--`
/// comments, a newline, then blanks, newlines and `--` comments, then a
/// quote (whose offset is returned).
fn continuation(b: &[u8], mut j: usize) -> Option<usize> {
    let mut newline = false;
    while j < b.len() {
        match b[j] {
            b' ' | b'\t' | 0x0c => j += 1,
            b'\n' | b'\r' => {
                newline = true;
                j += 1;
            }
            b'-' if b.get(j + 1) == Some(&b'-') => {
                j = line_end(b, j);
                // After the first newline a comment must end in one.
                if newline && j >= b.len() {
                    return None;
                }
            }
            b'\'' if newline => return Some(j),
            _ => return None,
        }
    }
    None
}

/// `$tag$ … $tag$` at `i` (PostgreSQL's `dolqdelim`: `$$` or a tag that
/// starts like an identifier and has no `$`; `$1` is a parameter).
fn dollar_at(text: &str, i: usize) -> Option<usize> {
    let b = text.as_bytes();
    let mut j = i + 1;
    if b.get(j).is_some_and(|&c| ident_start(c)) {
        while j < b.len() && ident_cont(b[j]) && b[j] != b'$' {
            j += 1;
        }
    }
    if b.get(j) != Some(&b'$') {
        return None;
    }
    let tag = &text[i..=j];
    Some(
        text[j + 1..]
            .find(tag)
            .map_or(text.len(), |k| j + 1 + k + tag.len()),
    )
}

/// Words and top-level semicolons with byte ranges; strings, dollar-quoted
/// strings, quoted identifiers, comments and parenthesised text are
/// skipped over. A word right after `:` or `$` (`:name`, `x::int`) is not
/// one.
pub(crate) fn lex(text: &str) -> Vec<(Lex, usize, usize)> {
    let b = text.as_bytes();
    let mut out = vec![];
    let mut i = 0;
    let (mut depth, mut lexeme_to) = (0usize, 0usize);
    while i < b.len() {
        // Identifiers and numbers are read whole, so `i` starts a token.
        if let Some(e) = lexeme_from(text, i, false) {
            (i, lexeme_to) = (e, e);
            continue;
        }
        let c = b[i];
        if ident_start(c) {
            let s = i;
            while i < b.len() && ident_cont(b[i]) {
                i += 1;
            }
            let after_sigil = s > 0 && s != lexeme_to && (b[s - 1] == b':' || b[s - 1] == b'$');
            if depth == 0 && !after_sigil {
                out.push((Lex::Word, s, i));
            }
            continue;
        }
        if c.is_ascii_digit() || c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
            i = number_end(b, i);
            continue;
        }
        match c {
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth = depth.saturating_sub(1),
            b';' if depth == 0 => out.push((Lex::Semi, i, i + 1)),
            _ => {}
        }
        i += 1;
    }
    out
}

/// A numeric literal (`1`, `1.5`, `.5`, `1e-3`, `1.`); PostgreSQL 15's
/// scanner reads `1abc` as `1` and `abc`.
fn number_end(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    if b.get(i) == Some(&b'.') && b.get(i + 1) != Some(&b'.') {
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        let sign = usize::from(matches!(b.get(i + 1), Some(b'+' | b'-')));
        if b.get(i + 1 + sign).is_some_and(u8::is_ascii_digit) {
            i += 1 + sign;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
        }
    }
    i
}

/// `$tag$ … $tag$` starting at `i`: the offset after its closing tag
/// (the end of the text when unterminated). Not inside an identifier
/// (`a$b$`).
pub(crate) fn dollar_quote_end(text: &str, i: usize) -> Option<usize> {
    let b = text.as_bytes();
    if b.get(i) != Some(&b'$') || (i > 0 && ident_cont(b[i - 1])) {
        return None;
    }
    dollar_at(text, i)
}

pub(crate) fn is_word_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
}

/// Whether `s` holds only whitespace and comments.
pub(crate) fn is_blank(s: &str) -> bool {
    blank_prefix(s) >= s.len()
}

/// Length of the whitespace and comments `s` starts with.
pub(crate) fn blank_prefix(s: &str) -> usize {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_whitespace() {
            i += 1;
        } else if b[i] == b'-' && b.get(i + 1) == Some(&b'-') {
            i = line_end(b, i);
        } else if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
            i = block_comment_end(b, i);
        } else {
            return i;
        }
    }
    b.len()
}

/// Split `text` at top-level occurrences of `sep` (outside strings,
/// comments and parentheses): `(offset within text, piece)`.
pub(crate) fn split_top(text: &str, sep: u8) -> Vec<(usize, &str)> {
    let b = text.as_bytes();
    let mut out = vec![];
    let (mut depth, mut start, mut i) = (0usize, 0usize, 0usize);
    while i < b.len() {
        if let Some(e) = lexeme_end(text, i) {
            i = e;
            continue;
        }
        match b[i] {
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth = depth.saturating_sub(1),
            c if c == sep && depth == 0 => {
                out.push((start, &text[start..i]));
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    out.push((start, &text[start..]));
    out
}

/// An identifier at `i`: its name (SQL case rules: `"a""b"` is `a"b`) and
/// end.
pub(crate) fn ident_at(text: &str, i: usize) -> Option<(String, usize)> {
    let b = text.as_bytes();
    if b.get(i) == Some(&b'"') {
        let end = quoted_ident_end(b, i + 1);
        if end < i + 2 || b[end - 1] != b'"' {
            return None;
        }
        return Some((text[i + 1..end - 1].replace("\"\"", "\""), end));
    }
    let mut j = i;
    while j < b.len() && is_word_byte(b[j]) {
        j += 1;
    }
    (j > i).then(|| (text[i..j].to_lowercase(), j))
}

/// The end of the string constant whose opening quote is at `i` (an
/// `E` before it makes backslashes escapes).
pub(crate) fn quoted_end(text: &str, i: usize) -> usize {
    lexeme_end(text, i).unwrap_or(text.len())
}

pub(crate) fn find_word_in(upper: &str, w: &str) -> Option<usize> {
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

/// The text with every SQL-standard function body `BEGIN ATOMIC … END`
/// written as the dollar-quoted body `AS $$ … $$` of the same length
/// (`BEGIN ATOMIC` → `AS $$` and blanks, `END` → `$$ `, or the tag `$a$`
/// when the body holds `$$`): for isolint both define the same
/// statements, and every position stays the user's. None when the text
/// has no such body (or one whose end is not found: PostgreSQL's parser,
/// the gate, then reports it).
pub(crate) fn atomic_as_dollar(text: &str) -> Option<String> {
    let toks = lex(text);
    let word = |k: usize| {
        toks.get(k)
            .filter(|t| t.0 == Lex::Word)
            .map(|t| &text[t.1..t.2])
    };
    let mut out = text.as_bytes().to_vec();
    let mut changed = false;
    let mut k = 0;
    while k + 1 < toks.len() {
        let is = |k: usize, w: &str| word(k).is_some_and(|x| x.eq_ignore_ascii_case(w));
        if !(is(k, "begin") && is(k + 1, "atomic")) {
            k += 1;
            continue;
        }
        // The body's END: the first END not closing a CASE.
        let mut case = 0usize;
        let mut end = None;
        for j in k + 2..toks.len() {
            if is(j, "case") {
                case += 1;
            } else if is(j, "end") {
                match case.checked_sub(1) {
                    Some(c) => case = c,
                    None => {
                        end = Some(j);
                        break;
                    }
                }
            }
        }
        let j = end?;
        let (open, close) = (toks[k].1, toks[j].1);
        let body = &text[toks[k + 1].2..close];
        let tag: &[u8] = if body.contains("$$") { b"$a$" } else { b"$$ " };
        if body.contains("$a$") {
            return None;
        }
        let opening = &mut out[open..toks[k + 1].2];
        opening.fill(b' ');
        opening[..3].copy_from_slice(b"AS ");
        opening[3..3 + tag.iter().filter(|&&c| c != b' ').count()]
            .copy_from_slice(&tag[..tag.iter().filter(|&&c| c != b' ').count()]);
        out[close..close + 3].copy_from_slice(tag);
        changed = true;
        k = j + 1;
    }
    if !changed {
        return None;
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn atomic_bodies_become_dollar_quoted() {
        let t = "CREATE FUNCTION g(p int) RETURNS void LANGUAGE sql BEGIN ATOMIC UPDATE t SET a = CASE WHEN a > 0 THEN 1 END WHERE id = p; END;";
        let r = super::atomic_as_dollar(t).expect("rewritten");
        assert_eq!(r.len(), t.len());
        assert_eq!(
            r,
            "CREATE FUNCTION g(p int) RETURNS void LANGUAGE sql AS $$        UPDATE t SET a = CASE WHEN a > 0 THEN 1 END WHERE id = p; $$ ;"
        );
        assert!(super::atomic_as_dollar("SELECT 'BEGIN ATOMIC'; -- BEGIN ATOMIC").is_none());
    }

    use super::*;
    use pg_query::protobuf::{KeywordKind, Token};
    use proptest::prelude::*;

    /// Top-level `;` and word ranges as PostgreSQL's scanner sees them
    /// (quoted identifiers are not words: never a keyword), or None when
    /// PostgreSQL rejects the text.
    fn pg_lex(text: &str) -> Option<Vec<(Lex, usize, usize)>> {
        // `$1E1`: the server rejects it ("trailing junk after parameter",
        // checked on PostgreSQL 15.18); libpg_query 15.1 scans `$1` `E1`.
        // Texts the server rejects need no agreement.
        let b = text.as_bytes();
        let junk = (1..b.len()).any(|i| {
            b[i - 1].is_ascii_digit()
                && (b[i].is_ascii_alphabetic() || b[i] == b'_')
                && text[..i]
                    .rsplit('$')
                    .next()
                    .is_some_and(|d| !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit()))
        });
        if junk {
            return None;
        }
        let scan = pg_query::scan(text).ok()?;
        let mut out = vec![];
        let mut depth = 0usize;
        for t in &scan.tokens {
            let (s, e) = (usize::try_from(t.start).ok()?, usize::try_from(t.end).ok()?);
            match t.token() {
                Token::Ascii40 | Token::Ascii91 => depth += 1,
                Token::Ascii41 | Token::Ascii93 => depth = depth.saturating_sub(1),
                Token::Ascii59 if depth == 0 => out.push((Lex::Semi, s, e)),
                tok if depth == 0
                    && (tok == Token::Ident && !text[s..].starts_with('"')
                        || t.keyword_kind() != KeywordKind::NoKeyword) =>
                {
                    out.push((Lex::Word, s, e));
                }
                _ => {}
            }
        }
        Some(out)
    }

    /// Lexemes whose insides PostgreSQL reads differently from a naive
    /// quote scanner, and plain tokens around them. A `--` comment follows
    /// a word: libpg_query (patch 04, comments as tokens) does not continue
    /// a string across `'a' -- c` newline `'b'` as the server does (see
    /// `string_continues_across_line_comments`).
    const PIECES: &[&str] = &[
        "select",
        "a",
        "E",
        "e",
        "U",
        "x",
        "B",
        "N",
        "foo$bar",
        "_z",
        "é",
        "if",
        "end",
        ";",
        " ",
        "\n",
        "\t",
        "(",
        ")",
        "[",
        "]",
        ",",
        "+",
        "=",
        "1",
        "4.5",
        "$1",
        "x -- c ; ' x\n",
        "x --;\r",
        "/* ; ' */",
        "/* /* ; */ ' ; */",
        "/*/ ; */",
        "/**/",
        "'a'",
        "'it''s ;'",
        "E'a\\''",
        "e'\\\\'",
        "E'x;\\'y'",
        "E'\\\\';'",
        "U&'d\\0061t;'",
        "U&\"q;\"",
        "\"a\"\"b;\"",
        "\"if\"",
        "N'z;'",
        "B'01'",
        "X'1F'",
        "$$ ; ' $$",
        "$t$ $$ ; $t$",
        "'a'\n'b;'",
        "E'a'\n'\\';'",
        "'\\'",
        "'a' \n\t'b'",
    ];

    fn text() -> impl Strategy<Value = String> {
        prop::collection::vec(
            (
                prop::sample::select(PIECES),
                prop::sample::select(&["", " ", "\n"][..]),
            ),
            0..24,
        )
        .prop_map(|v| v.into_iter().flat_map(|(p, s)| [p, s]).collect())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]
        /// The hand lexer finds the top-level `;` and the words where
        /// PostgreSQL 15's scanner does, on every text PostgreSQL lexes.
        #[test]
        fn lexes_as_postgresql(t in text()) {
            let Some(pg) = pg_lex(&t) else { return Ok(()) };
            prop_assert_eq!(lex(&t), pg, "text: {:?}", t);
        }
    }

    /// PostgreSQL 15 (the server, checked with psql -c) continues a string
    /// across a newline with `--` comments around it, keeping `E`'s
    /// escapes: `SELECT E'a' -- c⏎'\'x'` gives `a'x`; a block comment
    /// ends it (`'a' /* c */⏎'b'` is a syntax error).
    #[test]
    fn string_continues_across_line_comments() {
        let t = "select E'a' -- c ;\n'\\'x;' ; y";
        assert_eq!(lexeme_end(t, 7), Some(t.find(" ; y").unwrap()));
        let t = "select 'a' /* c */\n'b' ; y";
        assert_eq!(lexeme_end(t, 7), Some(10));
    }

    #[test]
    fn postgresql_lexemes() {
        let semis = |t: &str| {
            lex(t)
                .into_iter()
                .filter(|x| x.0 == Lex::Semi)
                .map(|x| x.1)
                .collect::<Vec<_>>()
        };
        let t = "select E'a\\'' ; x";
        assert_eq!(semis(t), [t.find(" ;").unwrap() + 1]);
        let t = "/* /* ; */ ; */ ;";
        assert_eq!(semis(t), [t.len() - 1]);
        let t = "select 'a' -- it's; \n ;";
        assert_eq!(semis(t), [t.len() - 1]);
        let t = "select U&\"a;\", U&'b;' ;";
        assert_eq!(semis(t), [t.len() - 1]);
        assert_eq!(ident_at("\"a\"\"b\" x", 0), Some(("a\"b".to_string(), 6)));
        assert_eq!(quoted_end("E'a\\'' x", 1), 6);
        assert_eq!(quoted_end("xE'a\\' x", 2), 6);
        assert_eq!(blank_prefix("/* /* */ */x"), 11);
        assert_eq!(
            split_top("f(E'a,\\'', b), c", b','),
            [(0, "f(E'a,\\'', b)"), (14, " c")]
        );
    }
}
