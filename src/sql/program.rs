//! The procedural layer around SQL statements (sqlparser 0.63 does not know
//! LOOP, ELSIF or EXIT): IF/ELSIF/ELSE, LOOP, WHILE … LOOP, FOR x IN …
//! LOOP, EXIT [WHEN], BEGIN/COMMIT, ROLLBACK, RAISE. A small scanner splits
//! the text at `;` and at these keywords (outside strings, comments and
//! parentheses); every statement and condition goes to sqlparser.

use super::{parse_expr, Snippet};
use crate::error::{Diag, Result, SourceFile};

/// A program as a tree of SQL statements and control structure.
#[derive(Debug, Clone)]
pub enum Node {
    Sql(Snippet),
    /// IF / ELSIF … / ELSE: `(condition, body)`, `None` for ELSE.
    If(Vec<(Option<Snippet>, Vec<Node>)>),
    /// LOOP, WHILE … LOOP, FOR x IN … LOOP; `var` is FOR's loop variable.
    Loop {
        var: Option<String>,
        body: Vec<Node>,
        at: usize,
    },
    /// EXIT [WHEN cond].
    Exit {
        when: Option<Snippet>,
        at: usize,
    },
    /// ROLLBACK or RAISE: this path never commits.
    Abort,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lex {
    Word,
    Semi,
}

/// Words and top-level semicolons with byte ranges; strings, quoted
/// identifiers, comments and parenthesised text are skipped over.
fn lex(text: &str) -> Vec<(Lex, usize, usize)> {
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
        } else if c == b'(' {
            depth += 1;
            i += 1;
        } else if c == b')' {
            depth = depth.saturating_sub(1);
            i += 1;
        } else if c == b';' && depth == 0 {
            out.push((Lex::Semi, i, i + 1));
            i += 1;
        } else if (c.is_ascii_alphabetic() || c == b'_')
            && (i == 0 || !is_word_byte(b[i - 1]) && b[i - 1] != b':')
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

fn is_word_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
}

struct P<'a> {
    file: &'a SourceFile,
    toks: Vec<(Lex, usize, usize)>,
    pos: usize,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Ctx {
    Top,
    If,
    Loop,
}

impl P<'_> {
    fn word(&self, k: usize) -> Option<String> {
        match self.toks.get(k) {
            Some((Lex::Word, s, e)) => Some(self.file.text[*s..*e].to_uppercase()),
            _ => None,
        }
    }

    fn start(&self) -> usize {
        self.toks
            .get(self.pos)
            .map_or(self.file.text.len(), |t| t.1)
    }

    fn err(&self, at: usize, len: usize, msg: impl Into<String>, help: &str) -> Box<Diag> {
        Diag::new(msg).help(help).at(self.file, at, len, "here")
    }

    /// Text from byte `from` to the start of token `k`.
    fn snippet(&self, from: usize, to: usize) -> Snippet {
        Snippet {
            text: self.file.text[from..to].to_string(),
            offset: from,
        }
    }

    /// Advance to the first top-level word equal to `kw` (skipping CASE …
    /// END inside conditions); returns its token index.
    fn find_word(&self, kw: &str, stop_at_semi: bool) -> Option<usize> {
        let mut case = 0usize;
        for k in self.pos..self.toks.len() {
            match self.toks[k].0 {
                Lex::Semi if stop_at_semi => return None,
                Lex::Semi => {}
                Lex::Word => {
                    let w = self.word(k).unwrap_or_default();
                    if w == "CASE" {
                        case += 1;
                    } else if w == "END" && case > 0 {
                        case -= 1;
                    } else if w == kw && case == 0 {
                        return Some(k);
                    }
                }
            }
        }
        None
    }

    fn next_semi(&self) -> Option<usize> {
        (self.pos..self.toks.len()).find(|&k| self.toks[k].0 == Lex::Semi)
    }

    fn expect_semi(&mut self, what: &str) -> Result<()> {
        match self.toks.get(self.pos) {
            Some((Lex::Semi, _, _)) => {
                self.pos += 1;
                Ok(())
            }
            _ => {
                let at = self.toks.get(self.pos.saturating_sub(1)).map_or(0, |t| t.2);
                Err(self.err(
                    at,
                    1,
                    format!("expected `;` after {what}"),
                    "end the statement with `;`",
                ))
            }
        }
    }

    fn block(&mut self, ctx: Ctx, opener: usize) -> Result<Vec<Node>> {
        let mut nodes = vec![];
        loop {
            let Some(w) = (self.pos < self.toks.len())
                .then(|| self.word(self.pos))
                .flatten()
            else {
                if self.pos < self.toks.len() {
                    self.pos += 1; // empty statement
                    continue;
                }
                if ctx != Ctx::Top {
                    let what = if ctx == Ctx::If { "IF" } else { "LOOP" };
                    return Err(self.err(
                        opener,
                        what.len(),
                        format!("unterminated {what}: reached the end of the file"),
                        if ctx == Ctx::If {
                            "close it with END IF;"
                        } else {
                            "close it with END LOOP;"
                        },
                    ));
                }
                return Ok(nodes);
            };
            let at = self.start();
            match w.as_str() {
                "END" => {
                    let next = self.word(self.pos + 1);
                    let (want, ok) = match ctx {
                        Ctx::If => ("IF", next.as_deref() == Some("IF")),
                        Ctx::Loop => ("LOOP", next.as_deref() == Some("LOOP")),
                        Ctx::Top => ("", false),
                    };
                    if !ok {
                        let found = match next.as_deref() {
                            Some(n @ ("IF" | "LOOP")) => format!("END {n}"),
                            _ => "END".to_string(),
                        };
                        let help = if ctx == Ctx::Top {
                            "there is no open IF or LOOP here; remove it".to_string()
                        } else {
                            format!("expected END {want}")
                        };
                        return Err(self.err(
                            at,
                            found.len(),
                            format!("unexpected `{found}`"),
                            &help,
                        ));
                    }
                    return Ok(nodes);
                }
                "ELSE" | "ELSIF" | "ELSEIF" => {
                    if ctx != Ctx::If {
                        return Err(self.err(
                            at,
                            w.len(),
                            format!("`{w}` outside IF"),
                            "ELSE and ELSIF belong inside IF … END IF;",
                        ));
                    }
                    return Ok(nodes);
                }
                "IF" => nodes.push(self.if_stmt()?),
                "LOOP" => {
                    self.pos += 1;
                    let body = self.block(Ctx::Loop, at)?;
                    self.pos += 2;
                    self.expect_semi("END LOOP")?;
                    nodes.push(Node::Loop {
                        var: None,
                        body,
                        at,
                    });
                }
                "WHILE" | "FOR" => {
                    let var = if w == "FOR" {
                        self.word(self.pos + 1).map(|v| v.to_lowercase())
                    } else {
                        None
                    };
                    let Some(lp) = self.find_word("LOOP", true) else {
                        return Err(self.err(
                            at,
                            w.len(),
                            format!("`{w}` without LOOP"),
                            &format!("write {w} … LOOP … END LOOP;"),
                        ));
                    };
                    if w == "WHILE" {
                        let cond = self.snippet(self.toks[self.pos].2, self.toks[lp].1);
                        parse_expr(self.file, &cond)?;
                    }
                    self.pos = lp + 1;
                    let body = self.block(Ctx::Loop, at)?;
                    self.pos += 2;
                    self.expect_semi("END LOOP")?;
                    nodes.push(Node::Loop { var, body, at });
                }
                "EXIT" => {
                    let semi = self.next_semi().ok_or_else(|| {
                        self.err(
                            at,
                            4,
                            "expected `;` after EXIT",
                            "write EXIT; or EXIT WHEN condition;",
                        )
                    })?;
                    let when = if self.word(self.pos + 1).as_deref() == Some("WHEN") {
                        let cond = self.snippet(self.toks[self.pos + 1].2, self.toks[semi].1);
                        parse_expr(self.file, &cond)?;
                        Some(cond)
                    } else if self.pos + 1 != semi {
                        return Err(self.err(
                            at,
                            4,
                            "unexpected text after EXIT",
                            "write EXIT; or EXIT WHEN condition;",
                        ));
                    } else {
                        None
                    };
                    self.pos = semi + 1;
                    nodes.push(Node::Exit { when, at });
                }
                "BEGIN" | "COMMIT" | "START" | "ROLLBACK" | "RAISE" => {
                    let semi = self.next_semi().ok_or_else(|| {
                        self.err(
                            at,
                            w.len(),
                            format!("expected `;` after {w}"),
                            "end it with `;`",
                        )
                    })?;
                    self.pos = semi + 1;
                    // Transaction brackets are implicit; an abort ends the path.
                    if w == "ROLLBACK" || w == "RAISE" {
                        nodes.push(Node::Abort);
                    }
                }
                _ => {
                    let Some(semi) = self.next_semi() else {
                        let end = self.toks.last().map_or(at, |t| t.2);
                        return Err(self.err(
                            at,
                            end - at,
                            "statement without a terminating `;`",
                            "end every SQL statement with `;`",
                        ));
                    };
                    let end = self.toks[semi].1;
                    nodes.push(Node::Sql(self.snippet(at, end)));
                    self.pos = semi + 1;
                }
            }
        }
    }

    fn if_stmt(&mut self) -> Result<Node> {
        let opener = self.start();
        let mut branches = vec![];
        loop {
            let kw = self.word(self.pos).unwrap_or_default();
            if kw == "ELSE" {
                self.pos += 1;
                let body = self.block(Ctx::If, opener)?;
                branches.push((None, body));
                // block returned at END IF (ELSE after ELSE is an error).
                if self.word(self.pos).as_deref() != Some("END") {
                    let at = self.start();
                    return Err(self.err(
                        at,
                        4,
                        "unexpected branch after ELSE",
                        "ELSE must be the last branch of an IF",
                    ));
                }
            } else {
                // IF / ELSIF / ELSEIF cond THEN
                let at = self.start();
                let Some(then) = self.find_word("THEN", true) else {
                    return Err(self.err(
                        at,
                        kw.len(),
                        format!("`{kw}` without THEN"),
                        "write IF condition THEN … END IF;",
                    ));
                };
                let cond = self.snippet(self.toks[self.pos].2, self.toks[then].1);
                parse_expr(self.file, &cond)?;
                self.pos = then + 1;
                let body = self.block(Ctx::If, opener)?;
                branches.push((Some(cond), body));
            }
            match self.word(self.pos).as_deref() {
                Some("END") => {
                    self.pos += 2;
                    self.expect_semi("END IF")?;
                    return Ok(Node::If(branches));
                }
                Some("ELSE" | "ELSIF" | "ELSEIF") => continue,
                _ => {
                    return Err(self.err(opener, 2, "unterminated IF", "close it with END IF;"));
                }
            }
        }
    }
}

/// Split a program file into its control structure and SQL statements.
pub fn parse_program(file: &SourceFile) -> Result<Vec<Node>> {
    let mut p = P {
        file,
        toks: lex(&file.text),
        pos: 0,
    };
    p.block(Ctx::Top, 0)
}

/// `-- isolint: abbrev NO` on the first line.
pub fn abbreviation(file: &SourceFile) -> Option<String> {
    let first = file.text.lines().next()?.trim();
    let rest = first
        .strip_prefix("--")?
        .trim()
        .strip_prefix("isolint:")?
        .trim();
    let abbrev = rest.strip_prefix("abbrev")?.trim();
    (!abbrev.is_empty()).then(|| abbrev.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(t: &str) -> Result<Vec<Node>> {
        parse_program(&SourceFile::new("p.sql", t))
    }

    #[test]
    fn control_structure() {
        let n = parse(
            "BEGIN;\nSELECT a INTO :x FROM t WHERE k = :k;\nIF :x < 3 THEN UPDATE t SET a = 1 WHERE k = :k;\nELSIF :x > 5 THEN ROLLBACK;\nELSE DELETE FROM t WHERE k = :k; END IF;\nFOR i IN 1..:n LOOP SELECT a FROM t WHERE k = :i; EXIT WHEN :i > 3; END LOOP;\nCOMMIT;",
        )
        .expect("parses");
        assert_eq!(n.len(), 3);
        let Node::If(b) = &n[1] else { panic!("IF") };
        assert_eq!(b.len(), 3);
        assert!(matches!(b[1].1[0], Node::Abort));
        assert!(b[2].0.is_none());
        let Node::Loop { var, body, .. } = &n[2] else {
            panic!("LOOP")
        };
        assert_eq!(var.as_deref(), Some("i"));
        assert!(matches!(body[1], Node::Exit { when: Some(_), .. }));
    }

    #[test]
    fn case_inside_statements_and_conditions() {
        let n = parse("UPDATE s SET q = CASE WHEN q > 1 THEN q - 1 ELSE q + 91 END WHERE k = :k;\nIF CASE WHEN :a THEN 1 ELSE 0 END = 1 THEN SELECT 1; END IF;").expect("parses");
        assert_eq!(n.len(), 2);
    }

    #[test]
    fn errors_are_located() {
        let e = parse("SELECT 1;\nIF :a THEN\n SELECT 2;\n").expect_err("unterminated");
        assert!(
            e.message.starts_with("p.sql:2:1: unterminated IF"),
            "{}",
            e.message
        );
        let e = parse("SELECT 1;\nEND IF;\n").expect_err("stray END");
        assert!(
            e.message.starts_with("p.sql:2:1: unexpected `END IF`"),
            "{}",
            e.message
        );
        let e = parse("LOOP SELECT 1;\nEND IF;").expect_err("mismatch");
        assert!(e.message.contains("unexpected `END IF`"), "{}", e.message);
        let e = parse("SELECT 1").expect_err("no semicolon");
        assert!(
            e.message.contains("without a terminating `;`"),
            "{}",
            e.message
        );
        let e = parse("IF :a < THEN SELECT 1; END IF;").expect_err("bad condition");
        assert!(e.message.starts_with("p.sql:1:"), "{}", e.message);
    }

    #[test]
    fn abbreviation_comment() {
        assert_eq!(
            abbreviation(&SourceFile::new("x", "-- isolint: abbrev NO\nSELECT 1;")).as_deref(),
            Some("NO")
        );
        assert_eq!(abbreviation(&SourceFile::new("x", "SELECT 1;")), None);
    }
}
