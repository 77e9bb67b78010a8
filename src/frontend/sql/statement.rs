//! Text-level preparation of one SQL statement for sqlparser: the INTO
//! targets of `SELECT … INTO :v` / `RETURNING … INTO :v` and PostgreSQL's
//! lock strengths that sqlparser 0.63 does not know. Positions are kept,
//! so sqlparser's error positions stay right.

/// Blank out `INTO :a, :b` after a SELECT list or RETURNING list (sqlparser
/// does not take variables there); positions are kept for error spans.
pub fn strip_into(text: &str) -> (String, Vec<String>) {
    let upper = text.to_ascii_uppercase();
    let b = upper.as_bytes();
    let mut depth = 0i32;
    let mut i = 0;
    let mut first_word: Option<String> = None;
    let mut seen_returning = false;
    let mut seen_select = false;
    while i < b.len() {
        if let Some(e) = super::lex::lexeme_end(text, i) {
            i = e;
            continue;
        }
        let c = b[i];
        match c {
            b'(' => depth += 1,
            b')' => depth -= 1,
            _ => {}
        }
        if depth == 0
            && c.is_ascii_alphabetic()
            && (i == 0
                || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_' || b[i - 1] == b':'))
        {
            let s = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            let w = &upper[s..i];
            if first_word.is_none() {
                first_word = Some(w.to_string());
            }
            if w == "RETURNING" {
                seen_returning = true;
            }
            // `WITH … SELECT … INTO v` (PL/pgSQL takes INTO after a WITH
            // too): the top-level SELECT's INTO, not an INSERT INTO.
            if w == "SELECT" && first_word.as_deref() == Some("WITH") {
                seen_select = true;
            }
            let select = first_word.as_deref() == Some("SELECT") || seen_select;
            if w == "INTO" && (seen_returning || select) {
                // Targets: comma-separated (:)names up to the next keyword.
                let mut j = i;
                let mut vars = vec![];
                loop {
                    while j < b.len()
                        && (b[j] == b' ' || b[j] == b'\n' || b[j] == b'\t' || b[j] == b'\r')
                    {
                        j += 1;
                    }
                    let vs = j;
                    if j < b.len() && b[j] == b':' {
                        j += 1;
                    }
                    let ns = j;
                    while j < b.len()
                        && (b[j].is_ascii_alphanumeric() || b[j] == b'_' || b[j] == b'$')
                    {
                        j += 1;
                    }
                    if ns == j || (vs == ns && is_keyword(&upper[ns..j])) {
                        j = vs;
                        break;
                    }
                    // `:r$f` (PL/pgSQL's `INTO r.f`) assigns the record r,
                    // `:a[i]` the array a.
                    let var = text[ns..j].split('$').next().unwrap_or_default();
                    vars.push(var.to_lowercase());
                    if b.get(j) == Some(&b'[') {
                        if let Some(k) = text[j..].find(']') {
                            j += k + 1;
                        }
                    }
                    let mut k = j;
                    while k < b.len()
                        && (b[k] == b' ' || b[k] == b'\n' || b[k] == b'\t' || b[k] == b'\r')
                    {
                        k += 1;
                    }
                    if k < b.len() && b[k] == b',' {
                        j = k + 1;
                    } else {
                        break;
                    }
                }
                if !vars.is_empty() {
                    let mut out = text.to_string();
                    out.replace_range(s..j, &" ".repeat(j - s));
                    return (out, vars);
                }
            }
            continue;
        }
        i += 1;
    }
    (text.to_string(), vec![])
}

/// sqlparser 0.63 knows `FOR UPDATE` and `FOR SHARE` but not PostgreSQL's
/// `FOR NO KEY UPDATE` and `FOR KEY SHARE`. FOR NO KEY UPDATE conflicts
/// with every lock an UPDATE or DELETE takes, like FOR UPDATE; FOR KEY
/// SHARE conflicts only with FOR UPDATE (DELETE, key updates), not with
/// the FOR NO KEY UPDATE lock of an ordinary UPDATE, so it orders nothing
/// for isolint: reported as weak. Rewritten in place, padded to keep
/// positions.
pub fn normalize_locks(text: &str) -> (String, bool) {
    let mut out = text.to_string();
    let mut weak = false;
    for (from, to) in [
        ("FOR NO KEY UPDATE", "FOR UPDATE"),
        ("FOR KEY SHARE", "FOR SHARE"),
    ] {
        loop {
            let upper = out.to_ascii_uppercase();
            let words: Vec<&str> = from.split(' ').collect();
            // Match the words with any whitespace between them.
            let Some(start) = find_words(&upper, &words) else {
                break;
            };
            weak |= from == "FOR KEY SHARE";
            let (s, e) = start;
            let replacement = format!("{to}{}", " ".repeat((e - s).saturating_sub(to.len())));
            out.replace_range(s..e, &replacement);
        }
    }
    (out, weak)
}

fn find_words(upper: &str, words: &[&str]) -> Option<(usize, usize)> {
    let mut from = 0;
    while let Some(i) = upper[from..].find(words[0]) {
        let s = from + i;
        let mut at = s + words[0].len();
        let mut ok =
            (s == 0 || !upper.as_bytes()[s - 1].is_ascii_alphanumeric()) && in_code(upper, s);
        for w in &words[1..] {
            let rest = &upper[at..];
            let trimmed = rest.trim_start();
            if trimmed.len() == rest.len() || !trimmed.starts_with(w) {
                ok = false;
                break;
            }
            at += rest.len() - trimmed.len() + w.len();
        }
        if ok
            && !upper
                .as_bytes()
                .get(at)
                .is_some_and(|c| c.is_ascii_alphanumeric())
        {
            return Some((s, at));
        }
        from = s + 1;
    }
    None
}

/// Whether `at` is outside the strings, quoted names and comments of
/// `text` (`'… for key share …'` is no lock clause).
fn in_code(text: &str, at: usize) -> bool {
    let mut i = 0;
    while i < at {
        match super::lex::lexeme_end(text, i) {
            Some(e) if e > at => return false,
            Some(e) => i = e,
            None => i += 1,
        }
    }
    true
}

fn is_keyword(w: &str) -> bool {
    matches!(
        w,
        "FROM" | "WHERE" | "ORDER" | "GROUP" | "LIMIT" | "FOR" | "UNION" | "HAVING"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_words_inside_strings_are_no_lock_clause() {
        let t = "SELECT a FROM t WHERE b = E'\\' for key share' FOR NO KEY UPDATE";
        let (out, weak) = normalize_locks(t);
        assert!(!weak);
        assert!(out.contains("E'\\' for key share' FOR UPDATE"), "{out}");
    }
}
