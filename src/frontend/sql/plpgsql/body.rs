//! The PL/pgSQL statements: methods of the procedural parser (`Parser`) in
//! PL/pgSQL mode.

use sqlparser::ast::Expr;

use super::super::plenv::literal_end;
use super::super::procedural::{
    blank_prefix, is_blank, is_word_byte, split_top, Ctx, Lex, LoopHead, Node, Parser, ProcExpr,
    Stmt,
};
use super::super::Snippet;
use super::*;
use crate::model::error::{Diag, Result};

impl Parser<'_> {
    /// `[<<label>>] [DECLARE …] BEGIN … END [label] [;]`: the whole body.
    pub(super) fn routine_body(&mut self, e: usize) -> Result<Vec<Node>> {
        self.compiler_options()?;
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
        Ok(match node {
            Node::Block {
                label: None,
                body,
                handlers: None,
                file: None,
            } => body,
            n => vec![n],
        })
    }

    /// PL/pgSQL's compiler options before the body (`#option dump`,
    /// `#print_strict_params on|off`, `#variable_conflict error`): they
    /// change messages only. `#variable_conflict use_variable|use_column`
    /// resolves names unlike PostgreSQL's default, which isolint follows:
    /// an error.
    fn compiler_options(&mut self) -> Result<()> {
        while let Some(&(Lex::Word, s, _)) = self.toks.get(self.pos) {
            let text = &self.file.text;
            if !text[..s].ends_with('#') {
                return Ok(());
            }
            let line_end = text[s..].find('\n').map_or(text.len(), |k| s + k);
            let option = self.word(self.pos).unwrap_or_default();
            let mut value = String::new();
            self.pos += 1;
            while let Some(&(_, t, _)) = self.toks.get(self.pos) {
                if t >= line_end {
                    break;
                }
                value = self.word(self.pos).unwrap_or_default();
                self.pos += 1;
            }
            match (option.as_str(), value.as_str()) {
                ("PRINT_STRICT_PARAMS", _) | ("OPTION", "DUMP") | ("VARIABLE_CONFLICT", "ERROR") => {}
                _ => {
                    return Err(self.err(
                        s - 1,
                        line_end - s + 1,
                        format!("the compiler option `#{}` is not modelled", text[s..line_end].trim_end()),
                        "isolint resolves names as PostgreSQL does by default (plpgsql.variable_conflict = error); #print_strict_params and #option dump are read",
                    ))
                }
            }
        }
        Ok(())
    }

    /// A `<<label>>` before a loop or block: remembered for it.
    pub(crate) fn take_label(&mut self) -> Result<bool> {
        let Some(&(Lex::Word, s, e)) = self.toks.get(self.pos) else {
            return Ok(false);
        };
        let text = &self.file.text;
        if let Some(label) = self.quoted_label(s) {
            // `<<"Label">>` (the lexer skips quoted names, so the current
            // word is the loop or block): case kept, as PostgreSQL does.
            if let Some(pl) = &mut self.pl {
                pl.labels.push(label.clone());
            }
            self.label = Some(label);
            self.label_end = s;
            return Ok(false);
        }
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

    /// The quoted label `<<"…">>` right before the word at `s`, if any
    /// (after the previous token).
    fn quoted_label(&self, s: usize) -> Option<String> {
        let text = &self.file.text;
        let before = text[self.prev_end()..s].trim_end().strip_suffix(">>")?;
        let open = before.rfind("<<")?;
        let inner = &before[open + 2..];
        let lead = inner.len() - inner.trim_start().len();
        let at = self.prev_end() + open + 2 + lead;
        let (name, end) = ident_at(text, at)?;
        // Not inside a comment: no `--` earlier on its line, no open `/*`.
        let lead_text = &text[self.prev_end()..self.prev_end() + open];
        let line = &lead_text[lead_text.rfind('\n').map_or(0, |k| k + 1)..];
        let in_comment = line.contains("--") || lead_text.rfind("/*") > lead_text.rfind("*/");
        (text.as_bytes()[at] == b'"'
            && !in_comment
            && text[end..s].trim_start().starts_with(">>")
            && is_blank(lead_text))
        .then_some(name)
    }

    /// PL/pgSQL statements; `false` when `w` starts none of them.
    pub(crate) fn pl_statement(
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
                let snip = Snippet {
                    text,
                    offset: at,
                    parsed: None,
                };
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
                let name = self.word(self.pos + 1).unwrap_or_default().to_lowercase();
                self.pos = semi + 1;
                nodes.extend(self.cursor_mark(&name, "CURSOR CLOSE", at)?);
            }
            "GET" => nodes.extend(self.diagnostics()?),
            "EXECUTE" => nodes.extend(self.execute()?),
            "FOREACH" => nodes.push(self.loop_stmt(w)?),
            "COMMIT" | "ROLLBACK" | "ABORT" if !self.pl.as_ref().is_some_and(|pl| pl.procedure) => {
                // A function cannot end the transaction: PostgreSQL raises
                // "invalid transaction termination", so the path aborts.
                let semi = self.semi_after(w, at, "end it with `;`")?;
                self.pos = semi + 1;
                nodes.push(Node::Abort);
            }
            "ROLLBACK" | "ABORT" if ctx != Ctx::Routine && self.returns_after() => {
                // ROLLBACK; RETURN; — the path aborts and nothing follows.
                nodes.push(self.rollback_stmt(w)?);
            }
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
            "ROLLBACK" | "ABORT" if ctx == Ctx::Handler => nodes.push(self.handler_rollback(w)?),
            "COMMIT" | "ROLLBACK" | "ABORT" | "SAVEPOINT" | "RELEASE" => {
                return Err(self.err(at, w.len(), format!("{w} inside a block, IF, CASE or LOOP of a routine"), "isolint splits a procedure into transactions only at a COMMIT in the routine's outermost block; PostgreSQL forbids COMMIT inside a block with an EXCEPTION handler"));
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// ROLLBACK in an EXCEPTION handler of a procedure. PostgreSQL 15
    /// allows it (the block's subtransaction is already rolled back): the
    /// transaction aborts and the procedure goes on in a new one. When it
    /// ends the handler of the routine's outermost block, nothing follows:
    /// the path aborts (an aborted transaction is in no committed schedule,
    /// Section 3.3). Elsewhere it is refused: under an enclosing handler
    /// PostgreSQL raises "cannot roll back while a subtransaction is
    /// active", and a transaction that goes on after it is not modelled.
    fn handler_rollback(&mut self, w: &str) -> Result<Node> {
        let at = self.start();
        let outer = self.pl.as_ref().is_some_and(|pl| pl.outer_handler);
        let last = self
            .next_semi()
            .is_some_and(|k| matches!(self.word(k + 1).as_deref(), Some("END" | "WHEN")));
        if outer && last {
            return self.rollback_stmt(w);
        }
        Err(self.err(at, w.len(), format!("{w} in an EXCEPTION handler, other than as the last statement of a handler of the routine's outermost block"), "PostgreSQL raises \"cannot roll back while a subtransaction is active\" when an enclosing block has an EXCEPTION handler; isolint models a handler's ROLLBACK only as the last statement of the handler of the routine's outermost block, where the path ends with it"))
    }

    /// Whether the statement after the current one is RETURN.
    fn returns_after(&self) -> bool {
        self.next_semi()
            .is_some_and(|k| self.word(k + 1).as_deref() == Some("RETURN"))
    }

    /// `[DECLARE …] BEGIN … [EXCEPTION WHEN … THEN …] END [label];`.
    fn pl_block(&mut self, outer: bool) -> Result<Node> {
        let label = self.label.take();
        let at = self.start();
        let mut body = vec![];
        if let Some(pl) = &mut self.pl {
            pl.scopes.push(vec![]);
            pl.blocks.push((label.clone(), vec![]));
        }
        let out = self.pl_block_in_scope(outer, label, at, &mut body);
        // The block's names go out of scope: an outer variable a
        // declaration shadowed is visible again.
        if let Some(pl) = &mut self.pl {
            pl.blocks.pop();
            for (name, before) in pl.scopes.pop().unwrap_or_default().into_iter().rev() {
                match before {
                    Some(b) => pl.aliases.insert(name, b),
                    None => pl.aliases.remove(&name),
                };
            }
        }
        out
    }

    fn pl_block_in_scope(
        &mut self,
        outer: bool,
        label: Option<String>,
        at: usize,
        body: &mut Vec<Node>,
    ) -> Result<Node> {
        let mut body = std::mem::take(body);
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
            let saved = self.pl.as_mut().map(|pl| {
                let s = pl.outer_handler;
                pl.outer_handler = outer;
                s
            });
            let hs = self.handlers(at);
            if let (Some(pl), Some(s)) = (self.pl.as_mut(), saved) {
                pl.outer_handler = s;
            }
            Some(hs?)
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
            file: None,
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
            let conds = self.file.text[self.toks[self.pos].2..self.toks[then].1].trim();
            let mut mark = self.cond(Snippet {
                text: "NULL".into(),
                offset: at,
                parsed: None,
            })?;
            mark.snip.text = format!("{}{conds}", super::HANDLER_MARK);
            self.pos = then + 1;
            let mut body = vec![Node::Eval(vec![mark])];
            body.extend(self.block(Ctx::Handler, opener)?);
            out.push(body);
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

    /// A variable declared in a DECLARE section: PostgreSQL rejects a
    /// name declared twice in one block, but an inner block may declare a
    /// name an outer block (or the parameter list) declares: a different
    /// variable within the inner block. That one gets a fresh name, which
    /// the block's uses of the name resolve to (an alias until the block
    /// ends, see `pl_block`). Returns the variable's name.
    fn declare_var(&mut self, name: &str, kind: VarKind, at: usize, len: usize) -> Result<String> {
        let Some(pl) = &mut self.pl else {
            return Ok(name.to_string());
        };
        if pl
            .scopes
            .last()
            .is_some_and(|s| s.iter().any(|(n, _)| n == name))
        {
            return Err(Diag::new(format!("duplicate declaration of `{name}` in one block of {}", pl.routine))
                .help("PostgreSQL rejects a name declared twice in one DECLARE section (\"duplicate declaration\"); an inner block may declare it again")
                .at(self.file, at, len, "declared again here"));
        }
        let shadows = pl.vars.get(name).is_some_and(|v| v.0 != VarKind::Cursor)
            && kind != VarKind::Cursor
            && !pl.cursors.contains_key(name);
        if !shadows {
            self.declare(name, kind, at, len)?;
            if let Some(pl) = &mut self.pl {
                if let Some(s) = pl.scopes.last_mut() {
                    s.push((name.to_string(), pl.aliases.get(name).cloned()));
                }
                if let Some(b) = pl.blocks.last_mut() {
                    b.1.push((name.to_string(), name.to_string()));
                }
                // Declared here: no alias of an enclosing scope applies.
                pl.aliases.remove(name);
            }
            return Ok(name.to_string());
        }
        let mut k = 2;
        while pl.vars.contains_key(&format!("{name}__{k}")) {
            k += 1;
        }
        let fresh = format!("{name}__{k}");
        pl.vars.insert(fresh.clone(), (kind, at));
        let before = pl.aliases.insert(name.to_string(), fresh.clone());
        if let Some(s) = pl.scopes.last_mut() {
            s.push((name.to_string(), before));
        }
        if let Some(b) = pl.blocks.last_mut() {
            b.1.push((name.to_string(), fresh.clone()));
        }
        Ok(fresh)
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
                self.alias(&name, &text, &upper, at, ne)?;
            } else if has("CURSOR") {
                self.cursor_decl(&name, at, &text, &upper)?;
            } else {
                let kind = if has("RECORD")
                    || upper.contains("%ROWTYPE")
                    || self.is_table_type(&words)
                    || is_composite_type(&text[ne..])
                {
                    VarKind::Record
                } else if has("REFCURSOR") {
                    VarKind::Cursor
                } else {
                    VarKind::Scalar
                };
                let name = self.declare_var(&name, kind, at, ne)?;
                let def =
                    top_level_op(&text).or_else(|| find_word_in(&upper, "DEFAULT").map(|k| k + 7));
                if kind == VarKind::Scalar {
                    self.note_type(&name, &text, ne, def, true);
                } else if kind == VarKind::Record
                    && !has("RECORD")
                    && !upper.contains("%ROWTYPE")
                    && !self.is_table_type(&words)
                {
                    // A type name that is no base type (`v mood`): an enum
                    // or a domain as often as a composite; replay resolves
                    // it on the server (`replay::retype::resolve_type`).
                    self.note_type(&name, &text, ne, def, false);
                }
                let expr = match def {
                    Some(d) => self.expr(at + d, end)?,
                    None => self.cond(Snippet {
                        text: "NULL".into(),
                        offset: at,
                        parsed: None,
                    })?,
                };
                body.push(Node::Assign { var: name, expr });
            }
            self.pos = semi + 1;
        }
        Ok(())
    }

    /// `name ALIAS FOR target`: another name of the same variable (no
    /// copy: PostgreSQL resolves both names to one datum).
    fn alias(&mut self, name: &str, text: &str, upper: &str, at: usize, ne: usize) -> Result<()> {
        let from = find_word_in(upper, "FOR").map_or(ne, |k| k + 3);
        let raw = text[from..].trim().trim_end_matches(';').trim();
        let lead = from + blank_prefix(&text[from..]);
        let target = match ident_at(raw, 0) {
            Some((t, e)) if e == raw.len() => t,
            _ if raw.starts_with('$') => raw.to_string(),
            _ => {
                return Err(self.err(
                    at + lead,
                    raw.len().max(1),
                    "expected a variable or $n after ALIAS FOR",
                    "write name ALIAS FOR $1; or name ALIAS FOR variable;",
                ))
            }
        };
        let Some(pl) = &self.pl else { return Ok(()) };
        let Some(kind) = pl.var(&target) else {
            return Err(self.err(
                at + lead,
                raw.len().max(1),
                format!("ALIAS FOR `{raw}`, which is not a parameter or variable of the routine"),
                "name a parameter ($n or its name) or a variable declared before",
            ));
        };
        let canon = pl.canon(&target);
        self.declare(name, kind, at, ne)?;
        if let Some(pl) = &mut self.pl {
            pl.aliases.insert(name.to_string(), canon);
        }
        Ok(())
    }

    /// The declared type of a variable: what follows its name up to the
    /// default, without CONSTANT, NOT NULL and COLLATE. A scalar's also
    /// normalized (`PlEnv::types`, for overload resolution).
    fn note_type(&mut self, name: &str, text: &str, ne: usize, def: Option<usize>, scalar: bool) {
        let end = def.map_or(text.len(), |d| {
            // `def` points after `:=`/`=`/DEFAULT: back to its start.
            let head = text[..d].trim_end_matches([':', '=']);
            head.len()
                - if head.to_ascii_uppercase().ends_with("DEFAULT") {
                    7
                } else {
                    0
                }
        });
        let Some(decl) = text.get(ne..end.max(ne)) else {
            return;
        };
        let mut words: Vec<&str> = decl
            .trim()
            .trim_end_matches(';')
            .split_whitespace()
            .collect();
        if words
            .first()
            .is_some_and(|w| w.eq_ignore_ascii_case("constant"))
        {
            words.remove(0);
        }
        if let Some(k) = words
            .iter()
            .position(|w| w.eq_ignore_ascii_case("not") || w.eq_ignore_ascii_case("collate"))
        {
            words.truncate(k);
        }
        if let Some(pl) = &mut self.pl {
            if scalar {
                pl.types
                    .insert(name.to_string(), norm_type(&words.join(" ")));
            }
            pl.declared.insert(name.to_lowercase(), words.join(" "));
        }
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
                .insert(name.to_string(), Cursor { params, query });
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
                let mut q = self.sql(from, end)?;
                q.returned = true;
                nodes.push(Node::Sql(Box::new(q)));
                self.pos = semi + 1;
                return Ok(());
            }
            Some("NEXT") => {
                let mut e = self.exprs(self.toks[self.pos + 1].2, end)?;
                // Marked for the replay's executor, which does not
                // collect RETURN NEXT rows (it says so).
                let mut mark = self.cond(Snippet {
                    text: "NULL".into(),
                    offset: at,
                    parsed: None,
                })?;
                mark.snip.text = RETURN_NEXT_MARK.into();
                e.insert(0, mark);
                nodes.push(Node::Eval(e));
                self.pos = semi + 1;
                return Ok(());
            }
            _ => {}
        }
        let from = self.toks[self.pos].2;
        self.pos = semi + 1;
        if !is_blank(&self.file.text[from..end]) {
            // The value is marked for the replay's executor, which gives
            // it to the caller of an inlined call (RETURN_VALUE_MARK).
            let returns = self.pl.as_ref().and_then(|pl| pl.returns.clone());
            let mut mark = self.cond(Snippet {
                text: "NULL".into(),
                offset: at,
                parsed: None,
            })?;
            mark.snip.text = match returns {
                Some(t) => format!("{RETURN_VALUE_MARK} {t}"),
                None => RETURN_VALUE_MARK.into(),
            };
            match self.routine_call(from, end)? {
                Some(call) => {
                    let var = match &self.pl {
                        Some(pl) => {
                            pl.calls.set(pl.calls.get() + 1);
                            format!("__call{}", pl.calls.get())
                        }
                        None => "__call0".into(),
                    };
                    nodes.push(Node::Call {
                        call,
                        result: Some(var.clone()),
                        at,
                    });
                    let value = self.cond(Snippet {
                        text: format!(":{var}"),
                        offset: at,
                        parsed: None,
                    })?;
                    nodes.push(Node::Eval(vec![mark, value]));
                }
                None => nodes.push(Node::Eval(vec![mark, self.expr(from, end)?])),
            }
        }
        nodes.push(Node::Return { at });
        Ok(())
    }

    /// `v := e`: a call of a workload routine is inlined, anything else is
    /// an assignment.
    /// An assignment to a field or element (`whole` false) changes the
    /// variable to an unknown value: the right-hand side is only read.
    pub(crate) fn pl_assign(
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
        // `v := col FROM t WHERE …`: PL/pgSQL evaluates an assignment as
        // `SELECT <expression part>`, so a FROM clause is a query. As
        // `SELECT … INTO v` (no row: NULL; PostgreSQL raises on several
        // rows, which only removes executions).
        if whole && from >= 7 && top_level_from(&self.file.text[from..to]) {
            let snip = Snippet {
                text: format!("SELECT {}", &self.file.text[from..to]),
                offset: from - 7,
                parsed: None,
            };
            let mut st = self.stmt_of(snip)?;
            st.into = vec![var];
            return Ok(Node::Sql(Box::new(st)));
        }
        let expr = self.expr(from, to)?;
        if whole {
            return Ok(Node::Assign { var, expr });
        }
        let fresh = self.cond(Snippet {
            text: "NULL".into(),
            offset: at,
            parsed: None,
        })?;
        Ok(Node::If(vec![(
            None,
            vec![Node::Eval(vec![expr]), Node::Assign { var, expr: fresh }],
        )]))
    }

    /// `FOR r IN cursor [(args)] LOOP`: the cursor's query, and the
    /// assignments of its arguments.
    pub(crate) fn cursor_loop(
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
    pub(crate) fn routine_call(&self, from: usize, to: usize) -> Result<Option<ProcExpr>> {
        let Some(pl) = &self.pl else { return Ok(None) };
        let t = self.file.text[from..to].trim_start();
        let Some((mut name, e)) = ident_at(t, 0) else {
            return Ok(None);
        };
        // `schema.routine(…)`: routines are known by their last name part.
        if t.as_bytes().get(e) == Some(&b'.') {
            if let Some((n, _)) = ident_at(t, e + 1) {
                name = n;
            }
        }
        if !pl.callable.contains(&name) {
            return Ok(None);
        }
        let c = self.expr(from, to)?;
        Ok(matches!(c.expr, Expr::Function(_)).then_some(c))
    }

    /// An SQL statement from a snippet (rewritten, INTO cut out, parsed).
    pub(crate) fn stmt_of(&self, s: Snippet) -> Result<Stmt> {
        let rw = match &self.pl {
            Some(pl) => pl.rewrite(self.file, &self.extract_calls(s.clone())?)?,
            None => crate::frontend::sql::Rewrite {
                text: s.parse_text().to_string(),
                map: s.parsed.as_ref().map(|r| r.map.clone()).unwrap_or_default(),
            },
        };
        // Both keep every position (blanks for what they cut).
        let (locks, weak_lock) = crate::frontend::sql::statement::normalize_locks(&rw.text);
        let (clean, into) = crate::frontend::sql::statement::strip_into(&locks);
        // PostgreSQL parses the text before the lock rewrite (it knows FOR
        // NO KEY UPDATE), INTO targets cut out as PL/pgSQL cuts them.
        let (gated, _) = crate::frontend::sql::statement::strip_into(&rw.text);
        let snip = Snippet {
            text: s.text,
            offset: s.offset,
            parsed: Some(Box::new(crate::frontend::sql::Rewrite {
                text: clean,
                map: rw.map,
            })),
        };
        let pg = crate::frontend::sql::gate::statement(self.file, &snip, &gated)?;
        let sql = crate::frontend::sql::parse_one(self.file, &snip)?;
        Ok(Stmt {
            snip,
            sql,
            into,
            weak_lock,
            returned: false,
            pg,
        })
    }

    /// Calls of workload routines inside a statement or expression (not
    /// the whole of it: `v := f(…)`, PERFORM and CALL inline that
    /// directly) become `:__callN`, and the call is queued to be inlined
    /// before the node that holds it. In a statement that names a table
    /// the call may run once per row, or not at all: a loop, labelled so
    /// that `inline_calls` can move the call of a VOLATILE routine after
    /// the statement's snapshot reads.
    pub(crate) fn extract_calls(&self, mut s: Snippet) -> Result<Snippet> {
        let Some(pl) = &self.pl else { return Ok(s) };
        let t = s.parse_text().to_string();
        let mut anchors = crate::frontend::sql::Anchors::default();
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
            let (mut w, mut e) = ident_at(&t, i).unwrap_or_default();
            // Where the routine's own name starts (after a schema).
            let mut name_at = i;
            // `schema.routine(…)`: the routine's last name part counts.
            if b.get(e) == Some(&b'.') {
                if let Some((n, e2)) = ident_at(&t, e + 1) {
                    if pl.callable.contains(&n) {
                        name_at = e + 1;
                        (w, e) = (n, e2);
                    }
                }
            }
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
                        parsed: None,
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
                            label: Some(super::PER_ROW_LABEL.to_string()),
                        }
                    };
                    pl.pending.borrow_mut().push(node);
                    anchors.at(out.len(), s.orig(copied));
                    out.push_str(&t[copied..i]);
                    anchors.at(out.len(), s.orig(i));
                    if from_item_at(&t, i) {
                        // A routine in FROM: its rows are values (the
                        // body is inlined before), a FROM item that reads
                        // no table, known by the routine's name unless
                        // aliased (lower/from.rs).
                        out.push_str("unnest(:");
                        out.push_str(&var);
                        // The arguments stay in the statement (UNNEST
                        // takes several arrays): columns of the items
                        // before it that they name are read per row.
                        let args = &t[open + 1..c];
                        if !crate::frontend::sql::lex::is_blank(args) {
                            out.push_str(", ");
                            anchors.at(out.len(), s.orig(open + 1));
                            out.push_str(&neutral_calls(args, &pl.callable));
                        }
                        out.push(')');
                        if !alias_follows(&t, c + 1) {
                            // PostgreSQL names the item by the function's
                            // name without its schema (`FROM s.f(…)` is f).
                            out.push_str(" AS ");
                            out.push_str(&t[name_at..e]);
                        }
                    } else if names_column(pl, &t, &t[open + 1..c]) {
                        // The arguments are evaluated per row of the
                        // statement: columns they name are read by it
                        // (`g(t.b)` reads t.b), so they stay in it, beside
                        // the call's value.
                        out.push_str("coalesce(:");
                        out.push_str(&var);
                        out.push_str(", ");
                        anchors.at(out.len(), s.orig(open + 1));
                        out.push_str(&neutral_calls(&t[open + 1..c], &pl.callable));
                        out.push(')');
                    } else {
                        out.push(':');
                        out.push_str(&var);
                    }
                    anchors.at(out.len(), s.orig(c + 1));
                    copied = c + 1;
                    i = c + 1;
                }
                _ => i = e.max(i + 1),
            }
        }
        if out.is_empty() {
            return Ok(s);
        }
        anchors.at(out.len(), s.orig(copied));
        out.push_str(&t[copied..]);
        s.parsed = Some(Box::new(crate::frontend::sql::Rewrite {
            text: out,
            map: anchors.0,
        }));
        Ok(s)
    }

    /// Queued calls (see `extract_calls`) from `base` on, to be put
    /// before the node they were found in.
    pub(crate) fn take_pending(&self, base: usize) -> Vec<Node> {
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

    pub(crate) fn pending_len(&self) -> usize {
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
            out.extend(self.cursor_mark(&name, "CURSOR OPEN", at)?);
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
            out.extend(self.cursor_mark(&name, "CURSOR OPEN", at)?);
            out.push(Node::Open(Box::new(q)));
        }
        Ok(out)
    }

    /// `(a, b)` after a bound cursor's name: assignments to its parameters.
    pub(crate) fn cursor_args(
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
        let (inner, base) = (&text[open + 1..close], from + open + 1);
        // Named notation (`p := v`, `p => v`, after the positional ones):
        // each argument goes to its parameter.
        let mut args: Vec<Option<ProcExpr>> = vec![None; c.params.len()];
        let mut given = 0usize;
        for (o, piece) in split_top(inner, b',') {
            if is_blank(piece) {
                continue;
            }
            given += 1;
            let lead = blank_prefix(piece);
            let word_end = lead
                + piece[lead..]
                    .bytes()
                    .take_while(|&b| is_word_byte(b))
                    .count();
            let rest = &piece[word_end..];
            let arrow = blank_prefix(rest);
            let named = (rest[arrow..].starts_with(":=") || rest[arrow..].starts_with("=>"))
                && word_end > lead;
            let (slot, value_at) = if named {
                let name = piece[lead..word_end].to_lowercase();
                let Some(k) = c.params.iter().position(|p| p.eq_ignore_ascii_case(&name)) else {
                    return Err(self.err(
                        base + o + lead,
                        word_end - lead,
                        format!("the cursor has no parameter `{name}`"),
                        "name one of the cursor's parameters",
                    ));
                };
                (k, word_end + arrow + 2)
            } else {
                (given - 1, 0)
            };
            if slot >= args.len() || args[slot].is_some() {
                return Err(self.err(
                    at,
                    4,
                    "a cursor parameter is given twice, or too many arguments",
                    "pass one value per cursor parameter",
                ));
            }
            args[slot] = Some(self.expr(base + o + value_at, base + o + piece.len())?);
        }
        let args: Vec<ProcExpr> = args.into_iter().flatten().collect();
        if given != c.params.len() || args.len() != c.params.len() {
            return Err(self.err(
                at,
                4,
                format!(
                    "the cursor takes {} arguments, {} given",
                    c.params.len(),
                    given
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
            let upto = into.map_or(self.toks[semi].1, |k| self.toks[k].1);
            let text = format!("CURSOR {}", self.file.text[at..upto].trim());
            out.extend(self.cursor_mark(&c, &text, at)?);
        }
        if let Some(k) = into {
            let (from, to) = (self.toks[k].2, self.toks[semi].1);
            let targets = self.fresh_targets(from, to, at, false)?;
            let n = targets.len();
            for (i, mut t) in targets.into_iter().enumerate() {
                if let Node::Assign { expr, .. } = &mut t {
                    expr.snip.text = format!("CURSOR INTO {i} {n}");
                }
                out.push(t);
            }
        }
        self.pos = semi + 1;
        Ok(out)
    }

    /// The cursor variable `c` assigned a fresh value, marked `text` for
    /// the replay's executor (`CURSOR_MARK`): OPEN, FETCH/MOVE and CLOSE
    /// move the cursor, so `CURRENT OF c` names another row. Nothing when
    /// `c` is no cursor variable of the routine.
    fn cursor_mark(&self, c: &str, text: &str, at: usize) -> Result<Option<Node>> {
        if !self
            .pl
            .as_ref()
            .is_some_and(|pl| pl.var(c) == Some(VarKind::Cursor))
        {
            return Ok(None);
        }
        let mut null = self.cond(Snippet {
            text: "NULL".into(),
            offset: at,
            parsed: None,
        })?;
        null.snip.text = text.to_string();
        Ok(Some(Node::Assign {
            var: c.to_string(),
            expr: null,
        }))
    }

    /// Comma-separated variables from..to: each assigned a fresh value.
    fn fresh_targets(
        &self,
        from: usize,
        to: usize,
        at: usize,
        diagnostics: bool,
    ) -> Result<Vec<Node>> {
        let mut out = vec![];
        for (o, piece) in split_top(&self.file.text[from..to], b',') {
            let lead = blank_prefix(piece);
            let target = piece[lead..].split(['=', ':']).next().unwrap_or("").trim();
            let var = target.rsplit('.').next().unwrap_or(target).to_lowercase();
            let var = var.split('[').next().unwrap_or("").trim().to_string();
            let known = self.pl.as_ref().is_some_and(|pl| pl.var(&var).is_some());
            let var = self.pl.as_ref().map_or(var.clone(), |pl| pl.canon(&var));
            if !known {
                return Err(self.err(
                    from + o + lead,
                    target.len().max(1),
                    format!("`{target}` is not a variable of the routine"),
                    "declare it in a DECLARE section",
                ));
            }
            let mut expr = self.cond(Snippet {
                text: "NULL".into(),
                offset: at,
                parsed: None,
            })?;
            // `v = ROW_COUNT` (also `:=`) of GET [CURRENT] DIAGNOSTICS.
            let item = piece[lead..]
                .split_once('=')
                .map(|(_, i)| i.trim().to_ascii_uppercase());
            if diagnostics && item.as_deref() == Some("ROW_COUNT") {
                expr.snip.text = super::ROW_COUNT_MARK.into();
            }
            out.push(Node::Assign { var, expr });
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
        let out = self.fresh_targets(self.toks[k].2, self.toks[semi].1, at, true)?;
        self.pos = semi + 1;
        Ok(out)
    }

    /// EXECUTE 'literal' [INTO …] [USING …]: the literal is parsed as SQL;
    /// its `$n` are the USING arguments. A string computed from literals
    /// and parameters bound in the manifest (`bind:`) is evaluated
    /// (plpgsql/dynamic.rs) and read the same way; any other computed
    /// string is an error.
    fn execute(&mut self) -> Result<Vec<Node>> {
        let at = self.start();
        let semi = self.semi_after("EXECUTE", at, "end it with `;`")?;
        let end = self.toks[semi].1;
        let from = self.toks[self.pos].2;
        let lit = from + blank_prefix(&self.file.text[from..end]);
        let file = self.file;
        let t = &file.text;
        let routine = self
            .pl
            .as_ref()
            .map_or(String::new(), |pl| pl.routine.clone());
        let hint = format!("write the statement itself, or EXECUTE a single string literal; a string built with ||, format('… %I %L %s …'), quote_ident or quote_literal from literals and parameters is analysed when isolint.yaml binds those parameters: `bind: {{ {routine}.param: value }}`");
        let dynamic = || {
            self.err(
                at,
                7,
                "EXECUTE of a computed string (dynamic SQL) cannot be analysed",
                &hint,
            )
        };
        let (content, close, escape, computed) = match self.literal_string(lit, end) {
            Some((close, escape)) => {
                let Some(content) = t.get(lit + 1 + usize::from(escape)..close.saturating_sub(1))
                else {
                    return Err(dynamic());
                };
                (content.to_string(), close, escape, false)
            }
            None => {
                let stop = top_level_word(t, lit, end, &["INTO", "USING"]).unwrap_or(end);
                let value = self.pl.as_ref().and_then(|pl| {
                    let value_of = |n: &[String]| match n {
                        [p] => pl.binds.get(&pl.canon(p)).cloned(),
                        [q, p] if pl.is_qualifier(q) => pl.binds.get(p).cloned(),
                        _ => None,
                    };
                    super::dynamic::evaluate(&t[lit..stop], &value_of)
                });
                match value {
                    Some(v) => (v, stop, false, true),
                    None => return Err(dynamic()),
                }
            }
        };
        let lit = lit + usize::from(escape);
        let using = (self.pos + 1..semi)
            .find(|&k| self.word(k).as_deref() == Some("USING") && self.toks[k].1 >= close);
        let into_end = using.map_or(end, |k| self.toks[k].1);
        let content = content.as_str();
        self.no_dynamic_do_or_call(at, content)?;
        let n = self.pl.as_ref().map_or(0, |pl| pl.exec_count);
        if let Some(pl) = &mut self.pl {
            pl.exec_count += 1;
        }
        let mut out = vec![];
        let decoded = if computed {
            Ok(content.to_string())
        } else {
            decode_literal(content, escape)
        };
        let mut content = decoded.map_err(|(i, len)| {
            self.err(
                lit + 1 + i,
                len,
                "escape sequence in an EXECUTE E'…' string that isolint does not decode",
                "isolint reads the escapes \\' \\\\ \\n \\r \\t \\f of an escape string; write the statement itself, or EXECUTE a standard string literal ('…', a quote doubled)",
            )
        })?;
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
        let rest = t.get(close..into_end).unwrap_or("");
        let snip = execute_snippet(&content, rest, lit, close, computed);
        let stmt = Node::Sql(Box::new(self.stmt_of(snip)?));
        out.push(Node::Block {
            label: Some(super::EXECUTE_LABEL.into()),
            body: vec![stmt],
            handlers: None,
            file: None,
        });
        self.pos = semi + 1;
        Ok(out)
    }

    /// Only a query or a data change is read from an EXECUTE string: a DO
    /// block or a CALL run as dynamic SQL is code isolint does not compile
    /// (PostgreSQL compiles it when it runs).
    fn no_dynamic_do_or_call(&self, at: usize, content: &str) -> Result<()> {
        let first: String = content
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphabetic())
            .collect::<String>()
            .to_ascii_uppercase();
        if matches!(first.as_str(), "DO" | "CALL") {
            return Err(self.err(
                at,
                7,
                format!("EXECUTE of a `{first}` statement is not modelled"),
                "a DO block or CALL run as dynamic SQL is compiled only when it runs: write its statements, or CALL the routine, in the routine itself",
            ));
        }
        Ok(())
    }

    /// The EXECUTE string at `lit` when it is one literal (`'…'` or
    /// `E'…'`) followed by nothing, INTO or USING: its end and whether it
    /// is an escape string.
    fn literal_string(&self, lit: usize, end: usize) -> Option<(usize, bool)> {
        let t = &self.file.text;
        let escape = matches!(t.as_bytes().get(lit), Some(b'e' | b'E'))
            && t.as_bytes().get(lit + 1) == Some(&b'\'');
        let q = lit + usize::from(escape);
        if t.as_bytes().get(q) != Some(&b'\'') {
            return None;
        }
        let close = quoted_end(t, q);
        let after = t.get(close..end)?.trim_start().to_ascii_uppercase();
        (after.is_empty() || after.starts_with("INTO") || after.starts_with("USING"))
            .then_some((close, escape))
    }

    /// `FOR a, b, c IN …` (PL/pgSQL, LOOP at token `lp`): the targets
    /// before the last, and the token position from which `for_head` sees
    /// `FOR c IN …`. Anything else: no extra targets, the position as is.
    pub(crate) fn loop_targets(&self, lp: usize) -> (Vec<String>, usize) {
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
    pub(crate) fn fresh_values(&self, vars: &[String], at: usize) -> Result<Vec<Node>> {
        vars.iter()
            .map(|v| {
                Ok(Node::Assign {
                    var: v.clone(),
                    expr: self.cond(Snippet {
                        text: "NULL".into(),
                        offset: at,
                        parsed: None,
                    })?,
                })
            })
            .collect()
    }

    /// The loop variable of a FOR / FOREACH, declared for the body.
    pub(crate) fn declare_loop_var(&mut self, var: &str, record: bool) {
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
        if let Some(e) = literal_end(text, i) {
            i = e;
            continue;
        }
        match b[i] {
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

/// The SQL text a string literal's content denotes (`escape`: an `E'…'`
/// string), as long as the content so that positions still map to the
/// file. A doubled quote is one quote, and so is `\'` in an escape
/// string; `\\` is a backslash, `\n` `\r` `\t` `\f` white space. What
/// a two-byte escape saves is made up with blanks placed before the next
/// character that is no quote and outside the SQL text's own literals, so
/// a quote pair of the SQL text (`''` inside its own literal) stays a
/// pair and a literal keeps its value: the blanks land between tokens.
/// Other escapes (octal, hex, Unicode, `\b`, a
/// quoted ordinary character): `Err((offset, length))` of the escape.
pub(crate) fn decode_literal(
    content: &str,
    escape: bool,
) -> std::result::Result<String, (usize, usize)> {
    let mut out = String::with_capacity(content.len());
    let mut pad = 0;
    let mut in_literal = false;
    let mut chars = content.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let (decoded, saved) = match c {
            '\'' if chars.peek().is_some_and(|(_, n)| *n == '\'') => {
                chars.next();
                ('\'', 1)
            }
            '\\' if escape => match chars.next().map(|(_, n)| n) {
                Some('\'') => ('\'', 1),
                Some('\\') => ('\\', 1),
                Some('n' | 'r' | 't' | 'f') => (' ', 1),
                other => return Err((i, 1 + other.map_or(0, char::len_utf8))),
            },
            c => (c, 0),
        };
        // Blanks go between tokens of the SQL text, never inside one of
        // its literals: `''y''` is the literal 'y', not ' y' (a
        // different value, which replay would send).
        if decoded != '\'' && decoded != '\\' && !in_literal {
            out.extend(std::iter::repeat_n(' ', pad));
            pad = 0;
        }
        if decoded == '\'' && saved > 0 {
            in_literal = !in_literal;
        }
        out.push(decoded);
        pad += saved;
    }
    out.extend(std::iter::repeat_n(' ', pad));
    Ok(out)
}

/// Whether a declaration's type (`text` after the name) is a named type
/// that is not one of PostgreSQL's base types: a composite type (`v pair`,
/// `CREATE TYPE pair AS (x int, y int)`), whose fields `v.x` PL/pgSQL
/// reads as a record's. An enum or domain taken for one loses nothing
/// a scalar has but its type for overload resolution (a call it is an
/// argument of may become ambiguous, a located error).
fn is_composite_type(text: &str) -> bool {
    let t = text.trim_start();
    let word: String = t
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '.' || *c == '"')
        .collect();
    let rest = t[word.len()..].trim_start();
    if word.is_empty() || word.eq_ignore_ascii_case("constant") || rest.starts_with(['[', '(', '%'])
    {
        return false;
    }
    let base = word
        .rsplit('.')
        .next()
        .unwrap_or(&word)
        .to_ascii_lowercase();
    const BASE: &[&str] = &[
        "int",
        "int2",
        "int4",
        "int8",
        "integer",
        "smallint",
        "bigint",
        "serial",
        "bigserial",
        "smallserial",
        "real",
        "float",
        "float4",
        "float8",
        "double",
        "numeric",
        "decimal",
        "boolean",
        "bool",
        "text",
        "varchar",
        "char",
        "character",
        "bpchar",
        "name",
        "uuid",
        "json",
        "jsonb",
        "bytea",
        "date",
        "time",
        "timestamp",
        "timestamptz",
        "timetz",
        "interval",
        "money",
        "inet",
        "cidr",
        "macaddr",
        "macaddr8",
        "bit",
        "varbit",
        "oid",
        "regclass",
        "regproc",
        "regtype",
        "xml",
        "tsvector",
        "tsquery",
        "point",
        "line",
        "lseg",
        "box",
        "path",
        "polygon",
        "circle",
        "citext",
        "hstore",
        "refcursor",
        "record",
        "int4range",
        "int8range",
        "numrange",
        "tsrange",
        "tstzrange",
        "daterange",
        "pg_lsn",
        "anyelement",
        "anyarray",
        "anynonarray",
        "anyenum",
        "void",
        "cursor",
        "alias",
    ];
    !BASE.contains(&base.as_str())
}

/// Clause keywords: the last one before a position, at its parenthesis
/// depth, says which clause the position is in.
const CLAUSES: &[&str] = &[
    "select",
    "from",
    "where",
    "join",
    "on",
    "using",
    "group",
    "order",
    "having",
    "limit",
    "offset",
    "set",
    "values",
    "returning",
    "into",
    "union",
    "intersect",
    "except",
    "window",
    "for",
    "insert",
    "update",
    "delete",
    "conflict",
    "do",
    "with",
];

/// Words after which `(` may open a subquery rather than a call's
/// arguments.
const OPENS_QUERY: &[&str] = &[
    "in", "exists", "lateral", "any", "all", "some", "array", "as", "and", "or", "not", "then",
    "else", "when", "query", "return", "is", "like", "between",
];

/// Whether the word at `i` stands as an item of a FROM list (after FROM,
/// JOIN, USING, LATERAL or a comma of a FROM list).
fn from_item_at(t: &str, i: usize) -> bool {
    let b = t.as_bytes();
    // The clause of each open parenthesis level, and the previous token.
    let (mut levels, mut prev): (Vec<Option<String>>, String) = (vec![None], String::new());
    let mut k = 0;
    while k < i {
        if let Some(e) = crate::frontend::sql::lex::lexeme_end(t, k) {
            k = e;
            prev = "'".into();
            continue;
        }
        let c = b[k];
        if is_word_byte(c) {
            let (w, e) = ident_at(t, k).unwrap_or_else(|| (String::new(), k + 1));
            let w = w.to_lowercase();
            if CLAUSES.contains(&w.as_str()) {
                // Inside a call's parentheses FROM is an argument keyword
                // (`extract(epoch FROM x)`, `substring(s FROM 2)`).
                if let Some(l) = levels.last_mut().filter(|l| l.as_deref() != Some("()")) {
                    *l = Some(w.clone());
                }
            }
            prev = w;
            k = e.max(k + 1);
            continue;
        }
        match c {
            // After a word that is no keyword: a call's arguments.
            b'(' if prev.bytes().next().is_some_and(is_word_byte)
                && !OPENS_QUERY.contains(&prev.as_str())
                && !CLAUSES.contains(&prev.as_str()) =>
            {
                levels.push(Some("()".into()))
            }
            b'(' => levels.push(None),
            b')' if levels.len() > 1 => {
                levels.pop();
            }
            _ => {}
        }
        if !c.is_ascii_whitespace() {
            prev = (c as char).to_string();
        }
        k += 1;
    }
    let clause = levels.last().cloned().flatten();
    matches!(clause.as_deref(), Some("from" | "join" | "using"))
        && matches!(prev.as_str(), "from" | "join" | "using" | "lateral" | ",")
}

/// Whether an alias follows a FROM item ending at `k` (`AS`, or a word
/// that is no keyword ending the item), or WITH ORDINALITY.
fn alias_follows(t: &str, k: usize) -> bool {
    let at = k + blank_prefix(&t[k..]);
    let Some((w, _)) = ident_at(t, at) else {
        return false;
    };
    let w = w.to_lowercase();
    // WITH ORDINALITY comes before the alias: no name may be added.
    w == "with"
        || !CLAUSES.contains(&w.as_str())
            && !matches!(
                w.as_str(),
                "inner" | "left" | "right" | "full" | "cross" | "natural" | "lateral" | "outer"
            )
}

/// Whether `text` has a `FROM` outside parentheses, strings and comments
/// (`extract(year FROM d)` has none).
fn top_level_from(text: &str) -> bool {
    let b = text.as_bytes();
    let (mut i, mut depth) = (0usize, 0i32);
    while i < b.len() {
        if let Some(e) = crate::frontend::sql::lex::lexeme_end(text, i) {
            i = e.max(i + 1);
            continue;
        }
        match b[i] {
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth -= 1,
            c if is_word_byte(c) => {
                let s = i;
                while i < b.len() && is_word_byte(b[i]) {
                    i += 1;
                }
                if depth == 0 && text[s..i].eq_ignore_ascii_case("from") {
                    return true;
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    false
}

/// Whether call arguments may name a column of a table the statement
/// names: a word of them (outside literals, not a `:var`/`$n`) that is a
/// column of one of those tables. A variable of the same name is a
/// conflict PostgreSQL rejects, so this over-approximates only.
fn names_column(pl: &crate::frontend::sql::plenv::PlEnv, stmt: &str, args: &str) -> bool {
    let scope = pl.relations_in(stmt);
    if scope.is_empty() {
        return false;
    }
    let b = args.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if let Some(e) = literal_end(args, i) {
            i = e;
            continue;
        }
        let starts = (b[i].is_ascii_alphabetic() || b[i] == b'_' || b[i] == b'"')
            && (i == 0 || !is_word_byte(b[i - 1]) && !matches!(b[i - 1], b'$' | b':'));
        if starts {
            if let Some((w, e)) = ident_at(args, i) {
                if scope.iter().any(|&r| pl.relations[r].1.contains(&w)) {
                    return true;
                }
                i = e.max(i + 1);
                continue;
            }
        }
        i += args[i..].chars().next().map_or(1, char::len_utf8);
    }
    false
}

/// Call arguments copied into the statement beside the call's value:
/// nested calls of workload routines (inlined through the outer call)
/// become `coalesce(…)`, which keeps their arguments as reads and is no
/// call of a routine.
fn neutral_calls(args: &str, callable: &std::collections::HashSet<String>) -> String {
    let b = args.as_bytes();
    let mut out = String::with_capacity(args.len());
    let (mut i, mut copied) = (0, 0);
    while i < b.len() {
        if let Some(e) = literal_end(args, i) {
            i = e;
            continue;
        }
        let starts = (b[i].is_ascii_alphabetic() || b[i] == b'_')
            && (i == 0 || !is_word_byte(b[i - 1]) && !matches!(b[i - 1], b'$' | b'.' | b':'));
        if !starts {
            i += args[i..].chars().next().map_or(1, char::len_utf8);
            continue;
        }
        let (mut w, mut e) = ident_at(args, i).unwrap_or_default();
        if b.get(e) == Some(&b'.') {
            if let Some((n, e2)) = ident_at(args, e + 1) {
                if callable.contains(&n) {
                    (w, e) = (n, e2);
                }
            }
        }
        let open = e + blank_prefix(&args[e..]);
        if b.get(open) == Some(&b'(') && callable.contains(&w) {
            out.push_str(&args[copied..i]);
            out.push_str("coalesce");
            copied = open;
        }
        i = e.max(i + 1);
    }
    out.push_str(&args[copied..]);
    out
}

/// Offset of the first of `words` (upper case) in `t[from..end]` outside
/// literals and parentheses.
fn top_level_word(t: &str, from: usize, end: usize, words: &[&str]) -> Option<usize> {
    let b = t.as_bytes();
    let (mut i, mut depth) = (from, 0usize);
    while i < end {
        if let Some(e) = literal_end(t, i) {
            i = e;
            continue;
        }
        match b[i] {
            b'(' => depth += 1,
            b')' => depth = depth.saturating_sub(1),
            c if depth == 0
                && (c.is_ascii_alphabetic() || c == b'_')
                && (i == from || !is_word_byte(b[i - 1])) =>
            {
                let e = i + t[i..end].bytes().take_while(|&c| is_word_byte(c)).count();
                if words.iter().any(|w| t[i..e].eq_ignore_ascii_case(w)) {
                    return Some(i);
                }
                i = e;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The statement an EXECUTE runs: its (decoded or computed) `content`,
/// then `rest` (INTO …) as written. The literal starts at `lit`, the text
/// after it at `close`. A computed text has no place in the file: every
/// position of it is the expression's start; INTO and the rest are where
/// written.
fn execute_snippet(content: &str, rest: &str, lit: usize, close: usize, computed: bool) -> Snippet {
    let text = format!("{content} {rest}");
    if !computed {
        return Snippet {
            text,
            offset: lit + 1,
            parsed: None,
        };
    }
    let mut anchors = crate::frontend::sql::Anchors::default();
    for i in 0..=content.len() {
        anchors.at(i, 0);
    }
    anchors.at(content.len() + 1, close - lit);
    Snippet {
        // The statement's text (replay runs it) is the generated one.
        text: text.clone(),
        offset: lit,
        parsed: Some(Box::new(crate::frontend::sql::Rewrite {
            text,
            map: anchors.0,
        })),
    }
}
