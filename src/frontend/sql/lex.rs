//! The lexical layer under the procedural parsers (the `.sql` dialect in
//! `procedural`, PL/pgSQL in `plpgsql`): words, quotes, dollar quotes and
//! blanks, by byte offset. Knows no statements.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lex {
    Word,
    Semi,
}

/// Words and top-level semicolons with byte ranges; strings, dollar-quoted
/// strings, quoted identifiers, comments and parenthesised text are
/// skipped over.
pub(crate) fn lex(text: &str) -> Vec<(Lex, usize, usize)> {
    let b = text.as_bytes();
    let mut out = vec![];
    let mut i = 0;
    let mut depth = 0usize;
    while i < b.len() {
        let c = b[i];
        if c == b'-' && b.get(i + 1) == Some(&b'-') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                i += 1;
            }
            i += 2;
        } else if c == b'\'' || c == b'"' {
            i += 1;
            while i < b.len() {
                if b[i] == c {
                    if b.get(i + 1) == Some(&c) {
                        i += 2;
                        continue;
                    }
                    break;
                }
                i += 1;
            }
            i += 1;
        } else if let Some(end) = dollar_quote_end(text, i) {
            i = end;
        } else if c == b'(' || c == b'[' {
            depth += 1;
            i += 1;
        } else if c == b')' || c == b']' {
            depth = depth.saturating_sub(1);
            i += 1;
        } else if c == b';' && depth == 0 {
            out.push((Lex::Semi, i, i + 1));
            i += 1;
        } else if (c.is_ascii_alphabetic() || c == b'_')
            && (i == 0 || !is_word_byte(b[i - 1]) && b[i - 1] != b':' && b[i - 1] != b'$')
        {
            let s = i;
            while i < b.len() && is_word_byte(b[i]) {
                i += 1;
            }
            if depth == 0 {
                out.push((Lex::Word, s, i));
            }
        } else {
            i += 1;
        }
    }
    out
}

/// `$tag$ … $tag$` starting at `i`: the offset after its closing tag
/// (the end of the text when unterminated).
pub(crate) fn dollar_quote_end(text: &str, i: usize) -> Option<usize> {
    let b = text.as_bytes();
    if b.get(i) != Some(&b'$') || (i > 0 && is_word_byte(b[i - 1])) {
        return None;
    }
    let mut j = i + 1;
    while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
        j += 1;
    }
    if b.get(j) != Some(&b'$') || b.get(i + 1).is_some_and(u8::is_ascii_digit) {
        return None;
    }
    let tag = &text[i..=j];
    Some(
        text[j + 1..]
            .find(tag)
            .map_or(text.len(), |k| j + 1 + k + tag.len()),
    )
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
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                i += 1;
            }
            i += 2;
        } else {
            return i;
        }
    }
    b.len()
}

/// Split `text` at top-level occurrences of `sep` (outside strings and
/// parentheses): `(offset within text, piece)`.
pub(crate) fn split_top(text: &str, sep: u8) -> Vec<(usize, &str)> {
    let b = text.as_bytes();
    let mut out = vec![];
    let (mut depth, mut start, mut i) = (0usize, 0usize, 0usize);
    while i < b.len() {
        match b[i] {
            b'\'' | b'"' => {
                let q = b[i];
                i += 1;
                while i < b.len() && b[i] != q {
                    i += 1;
                }
            }
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

/// An identifier at `i`: its name (SQL case rules) and end.
pub(crate) fn ident_at(text: &str, i: usize) -> Option<(String, usize)> {
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

pub(crate) fn quoted_end(text: &str, i: usize) -> usize {
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
