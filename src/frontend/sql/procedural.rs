//! The procedural layer around SQL statements (sqlparser 0.63 does not know
//! LOOP, ELSIF or EXIT): IF/ELSIF/ELSE, CASE, LOOP, WHILE … LOOP, FOR x IN
//! … LOOP, EXIT/CONTINUE [WHEN], RAISE, ASSERT, `:v := expr`,
//! BEGIN/COMMIT, ROLLBACK. A small scanner splits the text at `;` and at
//! these keywords (outside strings, dollar quotes, comments and
//! parentheses); every statement, condition and expression goes to
//! sqlparser, and every expression is kept, because the lowering must
//! model the reads it performs (docs/sql-frontend.md, "Positions").
//! This module knows nothing about BTPs.

pub use super::ast::{LoopHead, Node, ProcExpr, Stmt};
pub(crate) use super::lex::{
    blank_prefix, dollar_quote_end, is_blank, is_word_byte, lex, split_top, Lex,
};
use super::{parse_expr, Snippet};
use crate::model::error::{Diag, Result, SourceFile};

/// The first expression of an ASSERT's `Node::Eval` (then the condition
/// and the message): the executor raises `assert_failure` when the
/// condition is not true.
pub const ASSERT_MARK: &str = "ASSERT";

/// PL/pgSQL statements outside isolint's `.sql` dialect, each with what to
/// write instead.
fn plpgsql_only(w: &str) -> Option<&'static str> {
    Some(match w {
        "RETURN" => "RETURN ends a PL/pgSQL function; in a .sql program the transaction ends at its last statement (or COMMIT): remove RETURN, or put the rest in ELSE",
        "PERFORM" => "PERFORM runs a query and discards its result; write it as a plain SELECT …;",
        "DECLARE" => "PL/pgSQL declarations are not needed: variables are written :name and need no declaration",
        "EXCEPTION" => "EXCEPTION handlers (subtransactions) are not supported in the .sql dialect; remove the handler, or write the error path with IF … THEN ROLLBACK;",
        "FOREACH" => "write FOREACH x IN ARRAY a as FOR x IN ARRAY :a LOOP … END LOOP;",
        "OPEN" | "FETCH" | "CLOSE" | "MOVE" => "cursors are not supported in the .sql dialect; loop over the query with FOR x IN SELECT … LOOP … END LOOP;",
        "GET" => "GET DIAGNOSTICS is not supported; test the statement's RETURNING … INTO :v value, or FOUND",
        "EXECUTE" => "dynamic SQL (EXECUTE) cannot be analysed; write the statement itself",
        "CALL" => "procedure calls are not inlined yet; write the procedure's statements in the program",
        "DO" => "anonymous code blocks are not supported; write their statements in the program",
        "SAVEPOINT" | "RELEASE" => "savepoints (partial rollbacks) are not supported; the whole program is one transaction",
        _ => return None,
    })
}

/// The procedural parser's state (was `P`): a program file's tokens and
/// the position in them; PL/pgSQL bodies add their environment.
pub(super) struct Parser<'a> {
    pub(super) file: &'a SourceFile,
    pub(super) toks: Vec<(Lex, usize, usize)>,
    pub(super) pos: usize,
    /// The `<<label>>` just read, for the loop or block that follows.
    pub(super) label: Option<String>,
    /// Where the word after a quoted `<<"label">>` starts (the label is
    /// no token: the statement starts there all the same).
    pub(super) label_end: usize,
    /// Set when parsing a PL/pgSQL routine body (`super::plpgsql`).
    pub(super) pl: Option<Box<super::plenv::PlEnv>>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Ctx {
    Top,
    If,
    Loop,
    Case,
    /// A PL/pgSQL BEGIN … END block (the routine's outermost one is
    /// `Routine`): END or EXCEPTION ends its statements.
    Block,
    Routine,
    /// An EXCEPTION handler: the next WHEN or END ends it.
    Handler,
}

impl Ctx {
    fn closer(self) -> &'static str {
        match self {
            Ctx::Top | Ctx::Block | Ctx::Routine | Ctx::Handler => "",
            Ctx::If => "IF",
            Ctx::Loop => "LOOP",
            Ctx::Case => "CASE",
        }
    }
}

impl Parser<'_> {
    pub(super) fn word(&self, k: usize) -> Option<String> {
        match self.toks.get(k) {
            Some((Lex::Word, s, e)) => Some(self.file.text[*s..*e].to_uppercase()),
            _ => None,
        }
    }

    pub(super) fn is_semi(&self, k: usize) -> bool {
        matches!(self.toks.get(k), Some((Lex::Semi, _, _)))
    }

    pub(super) fn start(&self) -> usize {
        self.toks
            .get(self.pos)
            .map_or(self.file.text.len(), |t| t.1)
    }

    /// Where the text of the next statement starts: after the token
    /// consumed last.
    pub(super) fn prev_end(&self) -> usize {
        if self.pos == 0 {
            0
        } else {
            self.toks[self.pos - 1].2
        }
    }

    pub(super) fn err(
        &self,
        at: usize,
        len: usize,
        msg: impl Into<String>,
        help: &str,
    ) -> Box<Diag> {
        Diag::new(msg).help(help).at(self.file, at, len, "here")
    }

    pub(super) fn snippet(&self, from: usize, to: usize) -> Snippet {
        Snippet {
            text: self.file.text[from..to].to_string(),
            offset: from,
            parsed: None,
        }
    }

    /// Text between two byte offsets as an expression.
    pub(super) fn expr(&self, from: usize, to: usize) -> Result<ProcExpr> {
        let s = self.snippet(from, to);
        if is_blank(&s.text) {
            return Err(self.err(
                from,
                1,
                "expected an expression here",
                "write a condition or value",
            ));
        }
        self.cond(s)
    }

    /// Parse a snippet as an expression; in a PL/pgSQL body its variables
    /// become `:name` first.
    pub(super) fn cond(&self, mut s: Snippet) -> Result<ProcExpr> {
        if let Some(pl) = &self.pl {
            s.parsed = Some(Box::new(
                pl.rewrite(self.file, &self.extract_calls(s.clone())?)?,
            ));
        }
        let pg = super::gate::expression(self.file, &s, s.parse_text())?;
        let expr = parse_expr(self.file, &s)?;
        Ok(ProcExpr {
            snip: s,
            expr,
            pg: Some(pg),
        })
    }

    /// An SQL statement between two offsets, parsed.
    pub(super) fn sql(&self, from: usize, to: usize) -> Result<Stmt> {
        self.stmt_of(self.snippet(from, to))
    }

    /// Comma-separated expressions between two offsets.
    pub(super) fn exprs(&self, from: usize, to: usize) -> Result<Vec<ProcExpr>> {
        let text = &self.file.text[from..to];
        if is_blank(text) {
            return Ok(vec![]);
        }
        split_top(text, b',')
            .into_iter()
            .map(|(o, piece)| self.expr(from + o, from + o + piece.len()))
            .collect()
    }

    /// The first top-level word equal to `kw` from the current token on
    /// (skipping CASE … END inside expressions); its token index.
    pub(super) fn find_word(&self, kw: &str, stop_at_semi: bool) -> Option<usize> {
        self.find_any(&[kw], stop_at_semi)
    }

    pub(super) fn find_any(&self, kws: &[&str], stop_at_semi: bool) -> Option<usize> {
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
                    } else if case == 0 && kws.contains(&w.as_str()) {
                        return Some(k);
                    }
                }
            }
        }
        None
    }

    pub(super) fn next_semi(&self) -> Option<usize> {
        (self.pos..self.toks.len()).find(|&k| self.toks[k].0 == Lex::Semi)
    }

    pub(super) fn semi_after(&self, what: &str, at: usize, help: &str) -> Result<usize> {
        self.next_semi()
            .ok_or_else(|| self.err(at, what.len(), format!("expected `;` after {what}"), help))
    }

    pub(super) fn expect_semi(&mut self, what: &str) -> Result<()> {
        if self.is_semi(self.pos) {
            self.pos += 1;
            return Ok(());
        }
        let at = self.toks.get(self.pos.saturating_sub(1)).map_or(0, |t| t.2);
        Err(self.err(
            at,
            1,
            format!("expected `;` after {what}"),
            "end the statement with `;`",
        ))
    }

    pub(super) fn unterminated(&self, ctx: Ctx, opener: usize) -> Box<Diag> {
        let what = match ctx.closer() {
            "" => "BEGIN",
            w => w,
        };
        self.err(
            opener,
            what.len().max(2),
            format!("unterminated {what}: reached the end of the file"),
            &format!("close it with END {};", ctx.closer()),
        )
    }

    pub(super) fn block(&mut self, ctx: Ctx, opener: usize) -> Result<Vec<Node>> {
        let mut nodes = vec![];
        // Calls found in this block's statements go before them (PL/pgSQL).
        let base = self.pending_len();
        let mut mark = 0;
        loop {
            let calls = self.take_pending(base);
            nodes.splice(mark..mark, calls);
            mark = nodes.len();
            if self.pos >= self.toks.len() {
                self.end_of_input(ctx, opener)?;
                return Ok(nodes);
            }
            if self.pl.is_some() && self.take_label()? {
                continue;
            }
            // A statement that starts with something other than a word
            // (`:v := …`, `(SELECT …)`) begins right after the last token.
            let lead_blank = self.label_end == self.start()
                || is_blank(&self.file.text[self.prev_end()..self.start()]);
            let w = match self.word(self.pos) {
                Some(w) if lead_blank => w,
                _ => {
                    if self.is_semi(self.pos) && lead_blank {
                        self.pos += 1; // empty statement
                        continue;
                    }
                    nodes.push(self.statement()?);
                    continue;
                }
            };
            let at = self.start();
            if self.pl.is_some() {
                if self.pl_ends_block(&w, ctx, at)? {
                    return Ok(nodes);
                }
                if self.pl_statement(&w, ctx, &mut nodes)? {
                    continue;
                }
            }
            match w.as_str() {
                "END" if ctx != Ctx::Top || !self.ends_transaction() => {
                    self.closing_end(ctx, at)?;
                    return Ok(nodes);
                }
                "ELSE" | "ELSIF" | "ELSEIF" | "WHEN" => {
                    self.branch_word(&w, ctx, at)?;
                    return Ok(nodes);
                }
                "IF" => nodes.push(self.if_stmt()?),
                "CASE" => nodes.push(self.case_stmt()?),
                "LOOP" | "WHILE" | "FOR" => nodes.push(self.loop_stmt(&w)?),
                "EXIT" | "CONTINUE" => nodes.push(self.exit_stmt(&w)?),
                "RAISE" => nodes.push(self.raise()?),
                "ASSERT" => {
                    let semi = self.semi_after("ASSERT", at, "write ASSERT condition;")?;
                    let mut e = self.exprs(self.toks[self.pos].2, self.toks[semi].1)?;
                    // Marked for the replay's executor, which raises
                    // assert_failure as PL/pgSQL does.
                    let mut mark = self.cond(Snippet {
                        text: "NULL".into(),
                        offset: at,
                        parsed: None,
                    })?;
                    mark.snip.text = ASSERT_MARK.into();
                    e.insert(0, mark);
                    self.pos = semi + 1;
                    nodes.push(Node::Eval(e));
                }
                "NULL" if self.is_semi(self.pos + 1) => self.pos += 2,
                "BEGIN" | "START" => nodes.push(self.begin(ctx, &w)?),
                "SET" if self.word(self.pos + 1).as_deref() == Some("CONSTRAINTS") => {
                    nodes.push(self.set_constraints()?)
                }
                "SET"
                    if matches!(
                        self.word(self.pos + 1).as_deref(),
                        Some("TRANSACTION" | "SESSION")
                    ) =>
                {
                    nodes.push(self.begin(ctx, &w)?)
                }
                "COMMIT" | "END" => nodes.push(self.commit_stmt(ctx, &w)?),
                "ROLLBACK" | "ABORT" => nodes.push(self.rollback_stmt(&w)?),
                // A DO block run by a routine: code isolint sees only as a
                // string (PostgreSQL compiles it when the statement runs).
                "DO" if self.pl.is_some() => {
                    return Err(self.err(
                        at,
                        2,
                        "a DO block inside a routine is not modelled",
                        "DO compiles and runs its code only when the statement runs; write its statements in the routine (or call a routine of the workload)",
                    ));
                }
                _ => {
                    if let Some(help) = plpgsql_only(&w) {
                        return Err(self.err(
                            at,
                            w.len(),
                            format!("`{w}` is PL/pgSQL, not part of isolint's .sql dialect"),
                            help,
                        ));
                    }
                    nodes.push(self.statement()?);
                }
            }
        }
    }

    /// The input ended: text after the last `;` must be blank, and no IF,
    /// CASE or LOOP may be open.
    fn end_of_input(&self, ctx: Ctx, opener: usize) -> Result<()> {
        let rest = &self.file.text[self.prev_end()..];
        if !is_blank(rest) {
            let at = self.prev_end() + (rest.len() - rest.trim_start().len());
            return Err(self.err(
                at,
                rest.trim().len(),
                "statement without a terminating `;`",
                "end every SQL statement with `;`",
            ));
        }
        if ctx != Ctx::Top {
            return Err(self.unterminated(ctx, opener));
        }
        Ok(())
    }

    /// An END at `at` must close the construct `ctx` opened.
    fn closing_end(&self, ctx: Ctx, at: usize) -> Result<()> {
        let next = self.word(self.pos + 1);
        let want = ctx.closer();
        if ctx != Ctx::Top && next.as_deref() == Some(want) {
            return Ok(());
        }
        let found = match next.as_deref() {
            Some(n @ ("IF" | "LOOP" | "CASE")) => format!("END {n}"),
            _ => "END".to_string(),
        };
        let help = if ctx == Ctx::Top {
            "there is no open IF, CASE or LOOP here; remove it (a PL/pgSQL block's BEGIN … END is not part of the .sql dialect)".to_string()
        } else {
            format!("expected END {want}")
        };
        Err(self.err(at, found.len(), format!("unexpected `{found}`"), &help))
    }

    /// ELSE, ELSIF or WHEN ends a branch of the IF or CASE `ctx`, and is
    /// an error anywhere else.
    fn branch_word(&self, w: &str, ctx: Ctx, at: usize) -> Result<()> {
        let inside = match w {
            "WHEN" => ctx == Ctx::Case,
            "ELSE" => ctx == Ctx::If || ctx == Ctx::Case,
            _ => ctx == Ctx::If,
        };
        if inside {
            return Ok(());
        }
        Err(self.err(
            at,
            w.len(),
            format!("`{w}` outside IF or CASE"),
            "ELSE and ELSIF belong inside IF … END IF; WHEN inside CASE … END CASE;",
        ))
    }

    /// In a PL/pgSQL body: whether `w` ends the current block's statements
    /// (END of a block, EXCEPTION, the next handler's WHEN).
    fn pl_ends_block(&self, w: &str, ctx: Ctx, at: usize) -> Result<bool> {
        let closes_if = matches!(
            self.word(self.pos + 1).as_deref(),
            Some("IF" | "LOOP" | "CASE")
        );
        match (w, ctx) {
            ("END", Ctx::Block | Ctx::Routine | Ctx::Handler) if !closes_if => Ok(true),
            ("EXCEPTION", Ctx::Block | Ctx::Routine) | ("WHEN", Ctx::Handler) => Ok(true),
            ("EXCEPTION", _) => Err(self.err(
                at,
                w.len(),
                "EXCEPTION inside IF, CASE or LOOP",
                "EXCEPTION follows the statements of a BEGIN … END block; close the IF, CASE or LOOP first",
            )),
            _ => Ok(false),
        }
    }

    /// EXIT [WHEN cond]; or CONTINUE [WHEN cond];
    pub(super) fn exit_stmt(&mut self, w: &str) -> Result<Node> {
        let at = self.start();
        let semi = self.semi_after(w, at, "write EXIT; or EXIT WHEN condition;")?;
        // PL/pgSQL: EXIT label [WHEN …].
        let label = match self.word(self.pos + 1) {
            Some(l) if self.pl.is_some() && l != "WHEN" => {
                self.pos += 1;
                Some(l.to_lowercase())
            }
            _ => None,
        };
        let when = if self.word(self.pos + 1).as_deref() == Some("WHEN") {
            Some(self.expr(self.toks[self.pos + 1].2, self.toks[semi].1)?)
        } else if self.pos + 1 != semi {
            return Err(self.err(
                at,
                w.len(),
                format!("unexpected text after {w}"),
                &format!("write {w}; or {w} WHEN condition; (loop labels are not supported)"),
            ));
        } else {
            None
        };
        self.pos = semi + 1;
        Ok(Node::Exit {
            when,
            at,
            is_continue: w == "CONTINUE",
            label,
        })
    }

    /// COMMIT [WORK|TRANSACTION]; (or END;) at the top level.
    pub(super) fn commit_stmt(&mut self, ctx: Ctx, w: &str) -> Result<Node> {
        let at = self.start();
        // END here is PostgreSQL's COMMIT (ends_transaction).
        let semi = self.semi_after(w, at, "end it with `;`")?;
        let plain = (self.pos + 1..semi)
            .all(|k| matches!(self.word(k).as_deref(), Some("WORK" | "TRANSACTION")));
        if !plain {
            return Err(self.err(
                at,
                w.len(),
                format!("unsupported form of {w}"),
                "write COMMIT; (COMMIT AND CHAIN and prepared transactions are not supported)",
            ));
        }
        if ctx != Ctx::Top {
            return Err(self.err(at, w.len(), format!("{w} inside IF, CASE or LOOP"), "isolint splits a program into transactions only at a COMMIT outside every IF, CASE and LOOP; move it, or split the program into files"));
        }
        self.pos = semi + 1;
        Ok(Node::Commit { at })
    }

    /// ROLLBACK; (ROLLBACK TO SAVEPOINT is an error).
    pub(super) fn rollback_stmt(&mut self, w: &str) -> Result<Node> {
        let at = self.start();
        let semi = self.semi_after(w, at, "end it with `;`")?;
        if (self.pos + 1..semi)
            .any(|k| matches!(self.word(k).as_deref(), Some("TO" | "PREPARED" | "AND")))
        {
            return Err(self.err(at, w.len(), "ROLLBACK TO SAVEPOINT is not supported", "savepoints (partial rollbacks) cannot be modelled; the whole program is one transaction"));
        }
        self.pos = semi + 1;
        Ok(Node::Abort)
    }

    /// `END` followed by `;` (or TRANSACTION/WORK) at the top level.
    pub(super) fn ends_transaction(&self) -> bool {
        self.is_semi(self.pos + 1)
            || matches!(
                self.word(self.pos + 1).as_deref(),
                Some("TRANSACTION" | "WORK")
            )
    }

    /// An SQL statement or an assignment, from after the last token to `;`.
    pub(super) fn statement(&mut self) -> Result<Node> {
        let from = self.prev_end();
        let at = from + blank_prefix(&self.file.text[from..]);
        let Some(semi) = self.next_semi() else {
            let end = self.file.text.trim_end().len().max(at);
            return Err(self.err(
                at,
                end - at,
                "statement without a terminating `;`",
                "end every SQL statement with `;`",
            ));
        };
        let end = self.toks[semi].1;
        self.pos = semi + 1;
        if let Some(pl) = &self.pl {
            if let Some((var, rhs, whole)) = pl.assignment(self.file, at, end)? {
                return self.pl_assign(var, at + rhs, end, whole);
            }
        } else if let Some((var, rhs)) = assignment(&self.file.text[at..end]) {
            let expr = self.expr(at + rhs, end)?;
            return Ok(Node::Assign { var, expr });
        }
        if self.file.text[at..end]
            .trim_start()
            .to_uppercase()
            .starts_with("CREATE")
        {
            return Err(self.err(at, 6, "DDL in a program", "CREATE TABLE, indexes and functions belong in the schema file (functions defined there are inlined where programs call them)"));
        }
        Ok(Node::Sql(Box::new(self.sql(at, end)?)))
    }

    /// `SET CONSTRAINTS …;`, read with PostgreSQL's parser.
    fn set_constraints(&mut self) -> Result<Node> {
        use super::pg::NodeEnum;
        let at = self.start();
        let semi = self.semi_after("SET CONSTRAINTS", at, "end it with `;`")?;
        let text = &self.file.text[at..self.toks[semi].1];
        let stmt = super::pg::parse(text).ok().and_then(|p| {
            p.tree
                .stmts
                .first()
                .and_then(|r| r.stmt.as_ref())
                .and_then(|n| n.node.clone())
        });
        let Some(NodeEnum::ConstraintsSetStmt(c)) = stmt else {
            return Err(self.err(
                at,
                3,
                "unsupported form of SET CONSTRAINTS",
                "write SET CONSTRAINTS { ALL | name, … } { DEFERRED | IMMEDIATE };",
            ));
        };
        let names: Vec<String> = c
            .constraints
            .iter()
            .filter_map(|n| match n.node.as_ref() {
                Some(NodeEnum::RangeVar(r)) => Some(r.relname.clone()),
                _ => None,
            })
            .collect();
        self.pos = semi + 1;
        Ok(Node::SetConstraints {
            names: (!names.is_empty()).then_some(names),
            deferred: c.deferred,
            at,
        })
    }

    pub(super) fn begin(&mut self, ctx: Ctx, w: &str) -> Result<Node> {
        let at = self.start();
        let semi = self.semi_after(w, at, "end it with `;`")?;
        let words: Vec<String> = (self.pos + 1..semi)
            .map(|k| self.word(k).unwrap_or_default())
            .collect();
        let allowed = |x: &str| {
            matches!(
                x,
                "TRANSACTION"
                    | "WORK"
                    | "ISOLATION"
                    | "LEVEL"
                    | "READ"
                    | "WRITE"
                    | "ONLY"
                    | "NOT"
                    | "DEFERRABLE"
                    | "COMMITTED"
                    | "UNCOMMITTED"
                    | "REPEATABLE"
                    | "SERIALIZABLE"
                    | "SESSION"
                    | "CHARACTERISTICS"
                    | "AS"
                    | ""
            )
        };
        let non_word = !self.file.text[self.toks[self.pos].2..self.toks[semi].1]
            .chars()
            .all(|c| c.is_ascii_alphabetic() || c.is_whitespace() || c == ',' || c == '_');
        if w == "BEGIN" && (!words.iter().all(|x| allowed(x)) || non_word) {
            return Err(self.err(at, 5, "`BEGIN` without `;` opens a PL/pgSQL block, which the .sql dialect does not have", "start the transaction with `BEGIN;` (or drop it: a program is one transaction) and write statements without BEGIN … END blocks"));
        }
        if !words.iter().all(|x| allowed(x)) || non_word {
            return Err(self.err(
                at,
                w.len(),
                format!("unsupported form of {w}"),
                "write BEGIN [ISOLATION LEVEL …]; or SET TRANSACTION ISOLATION LEVEL …;",
            ));
        }
        // In a routine's outermost block (a procedure's `COMMIT; SET
        // TRANSACTION …`) it is recorded as in a program's top level.
        if ctx != Ctx::Top && ctx != Ctx::Routine {
            return Err(self.err(
                at,
                w.len(),
                format!("{w} inside IF, CASE or LOOP"),
                "a transaction starts at the top of the program",
            ));
        }
        let level = words.iter().position(|x| x == "LEVEL").map(|k| {
            words[k + 1..]
                .iter()
                .take_while(|x| {
                    matches!(
                        x.as_str(),
                        "READ" | "COMMITTED" | "UNCOMMITTED" | "REPEATABLE" | "SERIALIZABLE"
                    )
                })
                .take(2)
                .cloned()
                .collect::<Vec<_>>()
                .join(" ")
        });
        self.pos = semi + 1;
        Ok(Node::Begin { level, at })
    }

    /// RAISE: EXCEPTION (the default level) aborts; DEBUG … WARNING only
    /// evaluate their arguments.
    pub(super) fn raise(&mut self) -> Result<Node> {
        let at = self.start();
        let semi = self.semi_after("RAISE", at, "end it with `;`")?;
        let level = self.word(self.pos + 1).unwrap_or_default();
        if !matches!(
            level.as_str(),
            "DEBUG" | "LOG" | "INFO" | "NOTICE" | "WARNING"
        ) {
            self.pos = semi + 1;
            return Ok(Node::Abort);
        }
        let from = self.toks[self.pos + 1].2;
        let end = self.toks[semi].1;
        let using = (self.pos + 2..semi).find(|&k| self.word(k).as_deref() == Some("USING"));
        let args_end = using.map_or(end, |k| self.toks[k].1);
        let mut exprs = vec![];
        let args = &self.file.text[from..args_end];
        // 'format', args…; a condition name or SQLSTATE 'code' has no
        // expressions.
        // An argument that is a call of a workload routine is inlined
        // before the RAISE (`raise notice '%', f(x)`).
        let mut calls = vec![];
        if args.trim_start().starts_with('\'') {
            for (o, piece) in split_top(args, b',') {
                let (a, b) = (from + o, from + o + piece.len());
                match self.routine_call(a, b)? {
                    Some(call) => calls.push(Node::Call {
                        call,
                        result: None,
                        at: a + blank_prefix(piece),
                    }),
                    None => exprs.push(self.expr(a, b)?),
                }
            }
        }
        if let Some(k) = using {
            let ufrom = self.toks[k].2;
            for (o, piece) in split_top(&self.file.text[ufrom..end], b',') {
                let Some(eq) = piece.find('=') else {
                    return Err(self.err(
                        ufrom + o,
                        piece.len().max(1),
                        "expected `option = expression` after USING",
                        "write RAISE NOTICE USING MESSAGE = …;",
                    ));
                };
                exprs.push(self.expr(ufrom + o + eq + 1, ufrom + o + piece.len())?);
            }
        }
        self.pos = semi + 1;
        if calls.is_empty() {
            return Ok(Node::Eval(exprs));
        }
        // An IF with only its ELSE branch: always run, in order.
        calls.push(Node::Eval(exprs));
        Ok(Node::If(vec![(None, calls)]))
    }

    pub(super) fn loop_stmt(&mut self, w: &str) -> Result<Node> {
        let at = self.start();
        let label = self.label.take();
        if w == "LOOP" {
            self.pos += 1;
            let body = self.block(Ctx::Loop, at)?;
            self.end_loop()?;
            return Ok(Node::Loop {
                head: LoopHead::Plain,
                body,
                at,
                label,
            });
        }
        let Some(lp) = self.find_word("LOOP", true) else {
            return Err(self.err(
                at,
                w.len(),
                format!("`{w}` without LOOP"),
                &format!("write {w} … LOOP … END LOOP;"),
            ));
        };
        let mut pre = vec![];
        let mut fresh = vec![];
        let head = if w == "WHILE" {
            let before = self.pending_len();
            let c = self.expr(self.toks[self.pos].2, self.toks[lp].1)?;
            if self.pending_len() > before {
                return Err(self.err(at, 5, "a routine call in a WHILE condition", "the condition is evaluated before every iteration: assign the call's value to a variable at the end of the body and test that"));
            }
            LoopHead::While(c)
        } else if let Some((head, args)) = self.cursor_loop(at, lp)? {
            pre = args;
            head
        } else {
            // PL/pgSQL `FOR a, b IN query`: all but the last target are
            // assigned fresh values at the start of every iteration.
            let (extra, start) = self.loop_targets(lp);
            self.pos = start;
            fresh = extra;
            self.for_head(at, lp)?
        };
        if let Some(v) = head.var() {
            let record = matches!(head, LoopHead::Query { .. });
            self.declare_loop_var(v, record);
        }
        self.pos = lp + 1;
        let mut body = self.fresh_values(&fresh, at)?;
        body.extend(self.block(Ctx::Loop, at)?);
        self.end_loop()?;
        let node = Node::Loop {
            head,
            body,
            at,
            label,
        };
        if pre.is_empty() {
            return Ok(node);
        }
        // A cursor's arguments are evaluated before the loop.
        pre.push(node);
        Ok(Node::If(vec![(None, pre)]))
    }

    /// `END LOOP [label];` (the label only in PL/pgSQL).
    pub(super) fn end_loop(&mut self) -> Result<()> {
        self.pos += 2;
        if self.pl.is_some() && self.word(self.pos).is_some() && self.is_semi(self.pos + 1) {
            self.pos += 1;
        }
        self.expect_semi("END LOOP")
    }

    /// `FOR v IN <header> LOOP`, the LOOP at token `lp`.
    pub(super) fn for_head(&self, at: usize, lp: usize) -> Result<LoopHead> {
        let bad = |help: &str| self.err(at, 3, "unsupported FOR loop", help);
        // `FOR targets IN EXECUTE …`, whatever the targets (`lbl.a, lbl.b`).
        let dynamic = (self.pos + 1..lp).any(|k| {
            self.word(k).as_deref() == Some("IN") && self.word(k + 1).as_deref() == Some("EXECUTE")
        });
        if dynamic {
            return Err(self.err(
                at,
                3,
                "FOR … IN EXECUTE (dynamic SQL) cannot be analysed",
                "write the query itself: FOR x IN SELECT … LOOP",
            ));
        }
        let var = self
            .word(self.pos + 1)
            .filter(|_| self.word(self.pos + 2).as_deref() == Some("IN") && self.pos + 2 < lp)
            .ok_or_else(|| {
                bad("write FOR x IN lo..hi LOOP, FOR x IN SELECT … LOOP or FOR x IN ARRAY :a LOOP")
            })?
            .to_lowercase();
        let mut from = self.toks[self.pos + 2].2;
        let to = self.toks[lp].1;
        let first = self.word(self.pos + 3).filter(|_| self.pos + 3 < lp);
        match first.as_deref() {
            Some("SELECT" | "WITH" | "VALUES" | "TABLE") => {
                let s = self.toks[self.pos + 3].1;
                return Ok(LoopHead::Query {
                    var,
                    query: Box::new(self.sql(s, to)?),
                });
            }
            Some("ARRAY") => {
                return Ok(LoopHead::Array {
                    var,
                    expr: self.expr(self.toks[self.pos + 3].2, to)?,
                })
            }
            Some("REVERSE") => from = self.toks[self.pos + 3].2,
            _ => {}
        }
        let text = &self.file.text[from..to];
        let Some(dots) = text.find("..") else {
            return Err(bad("cursor loops are not supported; write FOR x IN SELECT … LOOP, FOR x IN lo..hi LOOP or FOR x IN ARRAY :a LOOP"));
        };
        let mut bounds = vec![self.expr(from, from + dots)?];
        let rest = from + dots + 2;
        let by = (self.pos + 3..lp)
            .find(|&k| self.word(k).as_deref() == Some("BY") && self.toks[k].1 > rest);
        match by {
            Some(k) => {
                bounds.push(self.expr(rest, self.toks[k].1)?);
                bounds.push(self.expr(self.toks[k].2, to)?);
            }
            None => bounds.push(self.expr(rest, to)?),
        }
        Ok(LoopHead::Range { var, bounds })
    }

    /// The ELSE branch of an IF or CASE: its body, which must be the last.
    pub(super) fn else_branch(&mut self, ctx: Ctx, opener: usize) -> Result<Vec<Node>> {
        self.pos += 1;
        let body = self.block(ctx, opener)?;
        if self.word(self.pos).as_deref() != Some("END") {
            let at = self.start();
            return Err(self.err(
                at,
                4,
                "unexpected branch after ELSE",
                &format!(
                    "ELSE must be the last branch of {} {}",
                    if ctx == Ctx::If { "an" } else { "a" },
                    ctx.closer()
                ),
            ));
        }
        Ok(body)
    }

    pub(super) fn if_stmt(&mut self) -> Result<Node> {
        let opener = self.start();
        let mut branches = vec![];
        loop {
            let kw = self.word(self.pos).unwrap_or_default();
            if kw == "ELSE" {
                branches.push((None, self.else_branch(Ctx::If, opener)?));
            } else {
                let at = self.start();
                let Some(then) = self.find_word("THEN", true) else {
                    return Err(self.err(
                        at,
                        kw.len(),
                        format!("`{kw}` without THEN"),
                        "write IF condition THEN … END IF;",
                    ));
                };
                let cond = self.expr(self.toks[self.pos].2, self.toks[then].1)?;
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
                _ => return Err(self.unterminated(Ctx::If, opener)),
            }
        }
    }

    /// The CASE statement: searched (`CASE WHEN c THEN …`) or simple
    /// (`CASE x WHEN v1, v2 THEN …`), as an IF chain. Without ELSE, no
    /// matching WHEN raises CASE_NOT_FOUND: that path aborts.
    pub(super) fn case_stmt(&mut self) -> Result<Node> {
        let opener = self.start();
        self.pos += 1;
        let Some(first_when) = self.find_word("WHEN", false) else {
            return Err(self.err(
                opener,
                4,
                "CASE without WHEN",
                "write CASE WHEN condition THEN … END CASE;",
            ));
        };
        let sel_from = self.toks[self.pos - 1].2;
        let sel_to = self.toks[first_when].1;
        let selector = if is_blank(&self.file.text[sel_from..sel_to]) {
            None
        } else {
            Some(self.expr(sel_from, sel_to)?)
        };
        self.pos = first_when;
        let mut branches: Vec<(Option<ProcExpr>, Vec<Node>)> = vec![];
        loop {
            match self.word(self.pos).as_deref() {
                Some("WHEN") => {
                    let at = self.start();
                    let Some(then) = self.find_word("THEN", true) else {
                        return Err(self.err(
                            at,
                            4,
                            "`WHEN` without THEN",
                            "write WHEN condition THEN …",
                        ));
                    };
                    let (from, to) = (self.toks[self.pos].2, self.toks[then].1);
                    // Simple CASE: the values as one tuple expression, the
                    // `(` standing on the blank after WHEN.
                    let cond = if selector.is_some() {
                        self.cond(Snippet {
                            text: format!("({})", &self.file.text[from..to]),
                            offset: from - 1,
                            parsed: None,
                        })?
                    } else {
                        self.expr(from, to)?
                    };
                    self.pos = then + 1;
                    let body = self.block(Ctx::Case, opener)?;
                    branches.push((Some(cond), body));
                }
                Some("ELSE") => branches.push((None, self.else_branch(Ctx::Case, opener)?)),
                Some("END") => {
                    self.pos += 2;
                    self.expect_semi("END CASE")?;
                    if branches.last().is_some_and(|(c, _)| c.is_some()) {
                        branches.push((None, vec![Node::Abort]));
                    }
                    let node = Node::If(branches);
                    return Ok(match selector {
                        // The selector is evaluated once, before the WHENs.
                        Some(s) => Node::If(vec![(None, vec![Node::Eval(vec![s]), node])]),
                        None => node,
                    });
                }
                _ => return Err(self.unterminated(Ctx::Case, opener)),
            }
        }
    }
}

/// `:v := expr` or `v := expr` (also `:v[i] := …`): the variable and the
/// offset of the right-hand side.
pub(super) fn assignment(text: &str) -> Option<(String, usize)> {
    let t = text.trim_start();
    let lead = text.len() - t.len();
    let b = t.as_bytes();
    let mut i = usize::from(b.first() == Some(&b':'));
    let s = i;
    while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
        i += 1;
    }
    if i == s || !(b[s].is_ascii_alphabetic() || b[s] == b'_') {
        return None;
    }
    let var = t[s..i].to_lowercase();
    if b.get(i) == Some(&b'[') {
        i += t[i..].find(']')? + 1;
    }
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    t[i..].starts_with(":=").then(|| (var, lead + i + 2))
}

/// Byte ranges of the `;`-separated statements of `text` (a function body),
/// without the `;`.
pub fn split_statements(text: &str) -> Vec<(usize, usize)> {
    let mut out = vec![];
    let mut from = 0;
    for (kind, s, e) in lex(text) {
        if kind == Lex::Semi {
            if !is_blank(&text[from..s]) {
                out.push((from, s));
            }
            from = e;
        }
    }
    if !is_blank(&text[from..]) {
        out.push((from, text.len()));
    }
    out
}

/// Split a program file into its control structure and SQL statements.
pub fn parse_program(file: &SourceFile) -> Result<Vec<Node>> {
    let mut p = Parser {
        file,
        toks: lex(&file.text),
        pos: 0,
        label: None,
        label_end: usize::MAX,
        pl: None,
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
        // BEGIN; and COMMIT; are nodes: the declared level, the split point.
        assert_eq!(n.len(), 5);
        assert!(matches!(n[0], Node::Begin { level: None, .. }));
        assert!(matches!(n[4], Node::Commit { .. }));
        let n = &n[1..4];
        let Node::If(b) = &n[1] else { panic!("IF") };
        assert_eq!(b.len(), 3);
        assert!(matches!(b[1].1[0], Node::Abort));
        assert!(b[2].0.is_none());
        let Node::Loop { head, body, .. } = &n[2] else {
            panic!("LOOP")
        };
        assert_eq!(head.var(), Some("i"));
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
