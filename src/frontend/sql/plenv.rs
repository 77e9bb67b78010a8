//! The names a PL/pgSQL body can use, and the rewriting of its snippets
//! (variables as `:name`, the variable/column conflict check, CURRENT OF).

use std::collections::{HashMap, HashSet};

use super::ast::{Node, Stmt};
use super::lex::{blank_prefix, find_word_in, ident_at, is_word_byte};
use super::{Anchors, Rewrite, Snippet};
use crate::model::error::{Diag, Result, SourceFile};
use crate::model::schema::Schema;

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
pub(crate) struct Cursor {
    pub(crate) params: Vec<String>,
    pub(crate) query: Option<Stmt>,
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
    /// `x ALIAS FOR y` and `$n` of a named parameter: another name of
    /// the same variable (PostgreSQL: an assignment through one is seen
    /// through the other). Maps the name to the variable's own name.
    pub(super) aliases: HashMap<String, String>,
    /// Declared (normalized) types of parameters and scalar variables.
    pub(super) types: HashMap<String, String>,
    /// Scalar variables' declared types as written (typmods, `%TYPE`):
    /// what replay binds them with (`model::btp::ProgramRoutine`).
    pub(super) declared: HashMap<String, String>,
    /// The routine is a procedure (only procedures may COMMIT/ROLLBACK).
    pub(super) procedure: bool,
    /// Handlers being read belong to the routine's outermost block.
    pub(super) outer_handler: bool,
    /// EXECUTEs seen so far (names their USING variables apart).
    pub(super) exec_count: usize,
    /// Calls of workload routines found inside statements and
    /// expressions, to be inlined before the node that holds them
    /// (`Parser::extract_calls`, drained by `Parser::block`).
    pub(super) pending: std::cell::RefCell<Vec<Node>>,
    pub(super) calls: std::cell::Cell<usize>,
    /// Parameters bound by the manifest (`bind:`): name → value, for
    /// dynamic SQL built from them (plpgsql/dynamic.rs).
    pub(super) binds: HashMap<String, String>,
    /// Names each enclosing block declared, with the alias each had
    /// before (restored when the block ends: shadowing, `declare_var`).
    pub(super) scopes: Vec<Vec<(String, Option<String>)>>,
    /// Per enclosing block (innermost last): its label (an unquoted label
    /// lower-cased, a quoted one as written) and the names it declared
    /// with the variable each stands for, for `label.x` (PostgreSQL's
    /// `plpgsql_ns_lookup`: the nearest block so labelled that declares x).
    pub(super) blocks: Vec<LabelledBlock>,
    /// The routine's declared scalar return type as written (`RETURNS
    /// numeric(10, 2)`), for the replay to convert a RETURN value as
    /// PL/pgSQL does (`RETURN_VALUE_MARK`); None for SETOF, TABLE,
    /// record, void, trigger and `%TYPE` returns.
    pub(super) returns: Option<String>,
}

/// A block's label and the (name, variable) pairs it declared.
pub(super) type LabelledBlock = (Option<String>, Vec<(String, String)>);

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
            aliases: HashMap::new(),
            types: HashMap::new(),
            declared: HashMap::new(),
            exec_count: 0,
            procedure: false,
            outer_handler: false,
            pending: std::cell::RefCell::new(vec![]),
            calls: std::cell::Cell::new(0),
            binds: HashMap::new(),
            scopes: vec![],
            blocks: vec![],
            returns: None,
        }
    }

    /// The variable `qual.field` names when `qual` labels an enclosing
    /// block that declared `field` (the nearest such block).
    pub(super) fn label_var(&self, qual: &str, field: &str) -> Option<String> {
        self.blocks
            .iter()
            .rev()
            .filter(|(l, _)| l.as_deref() == Some(qual))
            .find_map(|(_, names)| names.iter().rev().find(|(n, _)| n == field))
            .map(|(_, canon)| canon.clone())
    }

    /// `qual` labels an enclosing block (not the routine or a loop).
    fn block_label(&self, qual: &str) -> bool {
        self.blocks.iter().any(|(l, _)| l.as_deref() == Some(qual))
    }

    pub(super) fn var(&self, name: &str) -> Option<VarKind> {
        // A shadowing declaration's kind (its fresh name), else the name's.
        let canon = self.canon(name);
        self.vars
            .get(&canon)
            .or_else(|| self.vars.get(name))
            .map(|v| v.0)
    }

    /// The variable a name stands for (itself unless an alias).
    pub(super) fn canon(&self, name: &str) -> String {
        // Aliases are registered already resolved: one step. (Following
        // more would take `$1` of a parameter to a variable of an inner
        // block that shadows the parameter's name.)
        self.aliases
            .get(name)
            .cloned()
            .unwrap_or_else(|| name.to_string())
    }

    /// A qualifier that names the routine or an enclosing block's label.
    pub(super) fn is_qualifier(&self, w: &str) -> bool {
        w == self.routine || self.labels.iter().any(|l| l == w)
    }

    /// Relations named anywhere in a statement: the tables in its scope
    /// (an over-approximation of PostgreSQL's scope).
    pub(super) fn relations_in(&self, text: &str) -> Vec<usize> {
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
    pub fn rewrite(&self, file: &SourceFile, snip: &Snippet) -> Result<Rewrite> {
        let current = self.current_of(file, snip)?;
        // Positions of `t` back to the source text of `snip`.
        let src = match &current {
            Some(c) => Snippet {
                text: snip.text.clone(),
                offset: snip.offset,
                parsed: Some(Box::new(c.clone())),
            },
            None => snip.clone(),
        };
        let t = src.parse_text();
        let mut anchors = Anchors::default();
        let b = t.as_bytes();
        let scope = self.relations_in(t);
        let mut out = String::with_capacity(t.len() + 16);
        let mut i = 0;
        let first_word = first_word_of(t);
        let first_word = first_word.as_str();
        let mut prev_word = String::new();
        // INTO targets are no column references: no conflict there.
        let (mut targets, mut last_end) = (false, 0);
        let mut names = NamePositions::new(first_word);
        while i < b.len() {
            anchors.at(out.len(), src.orig(i));
            // `"Label".x`: a quoted block label keeps its case.
            if b[i] == b'"' {
                if let Some((q, qe)) = ident_at(t, i) {
                    if let Some((var, e)) = self.qualified(t, &q, qe) {
                        out.push_str(&" ".repeat(qe - i));
                        push_var(&mut out, &var, false);
                        i = e;
                        anchors.at(out.len(), src.orig(i));
                        prev_word.clear();
                        last_end = i;
                        continue;
                    }
                }
            }
            if let Some(e) = literal_end(t, i) {
                out.push_str(&t[i..e]);
                i = e;
                continue;
            }
            let c = b[i];
            if c == b'(' || c == b')' {
                let direct = t[last_end..i].trim().is_empty();
                names.paren(c == b'(', direct, &prev_word, |w| self.is_relation(w));
            }
            // `$n` of a named parameter is that parameter.
            if c == b'$' && (i == 0 || !is_word_byte(b[i - 1])) {
                let e = i + 1 + t[i + 1..].bytes().take_while(u8::is_ascii_digit).count();
                let name = self.canon(&t[i..e]);
                if e > i + 1 && !name.starts_with('$') {
                    push_var(&mut out, &name, false);
                    i = e;
                    continue;
                }
            }
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
            let lead = t[last_end..s].trim();
            let name_only = names.word(&w, &prev_word, lead, t[i..].trim_start());
            let is_target = targets
                && (matches!(prev_word.as_str(), "into" | "strict")
                    || t[last_end..s].trim() == ",");
            targets = is_target || w == "into" && !matches!(prev_word.as_str(), "insert" | "merge");
            let before = t[..s].trim_end().as_bytes().last().copied();
            let after = t[i..].trim_start().as_bytes().first().copied();
            let dotted = b.get(i) == Some(&b'.')
                && b.get(i + 1)
                    .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_');
            if before == Some(b'.') || before == Some(b':') {
                out.push_str(&t[s..i]);
            } else if dotted {
                let at = (file, snip.offset + src.orig(s));
                i = self.rewrite_dotted(at, t, s..i, &w, &mut out)?;
            } else if name_only || t[i..].trim_start().starts_with("=>") {
                // A column name PostgreSQL never takes for a variable, or
                // the parameter name of a named argument (`f(secs => v)`).
                out.push_str(&t[s..i]);
            } else if w == "strict" && prev_word == "into" {
                out.push_str(&" ".repeat(i - s));
            } else if self.var(&w).is_some_and(|k| k != VarKind::Cursor)
                && after != Some(b'(')
                && !self.table_position(&prev_word, &w, first_word)
            {
                let conflict = scope.iter().find(|&&r| {
                    !is_target
                        && self.relations[r].1.contains(&w)
                        && names.in_scope(&self.relations[r].0, t)
                });
                if let Some(&r) = conflict {
                    return Err(self.conflict(file, snip.offset + s, &w, r));
                }
                push_var(&mut out, &self.canon(&w), true);
            } else {
                out.push_str(&t[s..i]);
            }
            anchors.at(out.len(), src.orig(i));
            prev_word = w;
            last_end = i;
        }
        Ok(Rewrite {
            text: out,
            map: anchors.0,
        })
    }

    /// [`Self::rewrite`] of `w.field` (the word `w` at `word`, a field
    /// after the dot): a block-qualified variable, a variable that a
    /// qualifier names, a record's field `:w$field`, or the text as it is
    /// (a column of a table `w`). Returns where the reference ends. `at`:
    /// the file and offset of `w`, for the error.
    fn rewrite_dotted(
        &self,
        at: (&SourceFile, usize),
        t: &str,
        word: std::ops::Range<usize>,
        w: &str,
        out: &mut String,
    ) -> Result<usize> {
        let (s, i) = (word.start, word.end);
        let b = t.as_bytes();
        let fs = i + 1;
        let mut fe = fs;
        while fe < b.len() && is_word_byte(b[fe]) {
            fe += 1;
        }
        let field = t[fs..fe].to_lowercase();
        if let Some((var, e)) = self.qualified(t, w, i) {
            out.push_str(&" ".repeat(i - s));
            push_var(out, &var, false);
            return Ok(e);
        }
        if self.block_label(w) {
            // A block label whose blocks declare no `field`: not a
            // variable for PostgreSQL either (then a column of a table
            // `w`). Written once: before, the text fell through to the
            // cases below and was written twice (`blk.ablk.a`).
            out.push_str(&t[s..fe]);
            return Ok(fe);
        }
        if self.is_qualifier(w) && self.canon(&field).starts_with(&format!("{field}__")) {
            // An inner block redeclares the name; `label.x` may mean an
            // outer block's x, which the alias chain no longer knows:
            // refuse rather than read the wrong one.
            return Err(Diag::new(format!(
                "`{w}.{field}` qualifies a variable that an inner block redeclares"
            ))
            .help("isolint does not resolve a block-qualified name while an inner block shadows it; rename the inner variable (PostgreSQL resolves `label.x` to the labelled block's x)")
            .at(at.0, at.1, fe - s, "not modelled"));
        }
        if self.is_qualifier(w) && self.var(&field).is_some() {
            out.push_str(&" ".repeat(i - s));
            push_var(out, &self.canon(&field), false);
        } else if self.var(w) == Some(VarKind::Record) {
            push_var(out, &format!("{}${field}", self.canon(w)), true);
        } else {
            out.push_str(&t[s..fe]);
        }
        Ok(fe)
    }

    /// `qual.x` (the qualifier ending at `qe`) where `qual` labels an
    /// enclosing block that declared x: that variable, and where the
    /// reference ends; `qual.rec.f` of a record is its field `rec$f`.
    fn qualified(&self, t: &str, qual: &str, qe: usize) -> Option<(String, usize)> {
        let b = t.as_bytes();
        if b.get(qe) != Some(&b'.') {
            return None;
        }
        let (field, fe) = ident_at(t, qe + 1)?;
        let var = self.label_var(qual, &field)?;
        if self.vars.get(&var).map(|v| v.0) == Some(VarKind::Record) && b.get(fe) == Some(&b'.') {
            if let Some((sub, se)) = ident_at(t, fe + 1) {
                return Some((format!("{var}${sub}"), se));
            }
        }
        Some((var, fe))
    }

    /// A name that is a variable and a column of relation `r` in scope.
    fn conflict(&self, file: &SourceFile, at: usize, w: &str, r: usize) -> Box<Diag> {
        let rel = &self.relations[r].0;
        Diag::new(format!(
            "`{w}` is both a variable of {} and a column of {rel}",
            self.routine
        ))
        .help(format!("PostgreSQL (plpgsql.variable_conflict = error, the default) rejects this reference: rename the variable, or qualify it as {}.{w} (the variable) or {rel}.{w} (the column)", self.routine))
        .at(file, at, w.len(), "ambiguous")
    }

    fn is_relation(&self, w: &str) -> bool {
        self.relations.iter().any(|r| r.0 == w)
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
    fn current_of(&self, file: &SourceFile, snip: &Snippet) -> Result<Option<Rewrite>> {
        let text = snip.parse_text();
        let upper = text.to_ascii_uppercase();
        let Some(k) = find_word_in(&upper, "CURRENT") else {
            return Ok(None);
        };
        let rest = upper[k + 7..].trim_start();
        if !rest.starts_with("OF") || rest.as_bytes().get(2).is_some_and(|c| is_word_byte(*c)) {
            return Ok(None);
        }
        let of = k + 7 + (upper[k + 7..].len() - rest.len());
        let c0 = of + 2 + blank_prefix(&text[of + 2..]);
        let Some((cursor, ce)) = ident_at(text, c0) else {
            return Ok(None);
        };
        let err = |msg: &str| {
            Diag::new(msg.to_string())
                .help("write UPDATE t SET … WHERE CURRENT OF c; or DELETE FROM t WHERE CURRENT OF c; where t has a primary key")
                .at(file, snip.offset + snip.orig(k), 7, "here")
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
        let pred = pred.join(" AND ");
        let mut out = text.to_string();
        out.replace_range(k..ce, &pred);
        let mut anchors = Anchors::default();
        let mut i = 0;
        while i < out.len() {
            // Before the clause as `text`; the clause maps to CURRENT; after
            // it, shifted by the length change.
            let p = if i < k {
                i
            } else if i < k + pred.len() {
                k
            } else {
                i + ce - k - pred.len()
            };
            anchors.at(i, snip.orig(p));
            i += out[i..].chars().next().map_or(1, char::len_utf8);
        }
        Ok(Some(Rewrite {
            text: out,
            map: anchors.0,
        }))
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
        // `$n := e` assigns the n-th parameter.
        let digits = t.bytes().skip(1).take_while(u8::is_ascii_digit).count();
        let dollar =
            (t.starts_with('$') && digits > 0).then(|| (t[..=digits].to_string(), digits + 1));
        let Some((first, mut i)) = dollar.or_else(|| ident_at(t, 0)) else {
            return Ok(None);
        };
        let mut var = first.clone();
        let mut whole = true;
        let b = t.as_bytes();
        if b.get(i) == Some(&b'.') {
            let Some((second, j)) = ident_at(t, i + 1) else {
                return Ok(None);
            };
            if let Some(v) = self.label_var(&first, &second) {
                var = v;
            } else if self.is_qualifier(&first) {
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
        Ok(Some((self.canon(&var), i + ws + op, whole)))
    }
}

/// Where a statement's words are column names that PostgreSQL's PL/pgSQL
/// never resolves as variables (its parser hooks see no ColumnRef there):
/// an INSERT's column list, an alias's column list (`AS x(a, b)`,
/// `FROM t x(a, b)`, `WITH c(a, b) AS`), an UPDATE's (or ON CONFLICT DO
/// UPDATE's) `SET col =` / `SET (a, b) =` targets. Also the scope of the
/// conflict check: an INSERT's target table is not in scope of its VALUES
/// or SELECT, only from ON CONFLICT and RETURNING on (as in PostgreSQL).
struct NamePositions {
    /// Per open parenthesis: does it hold a column-name list?
    parens: Vec<bool>,
    /// After `INSERT INTO`, before the column list (or VALUES/SELECT).
    insert: bool,
    target: Option<String>,
    target_in_scope: bool,
    /// Depth of an open SET list.
    set: Option<usize>,
    /// Inside `WITH …` before the main statement (CTE names at depth 0).
    with: bool,
    /// The word before the last one, and whether only blanks separate them.
    prev2: String,
    adjacent: bool,
}

impl NamePositions {
    fn new(first_word: &str) -> NamePositions {
        NamePositions {
            parens: vec![],
            insert: false,
            target: None,
            target_in_scope: false,
            set: None,
            with: first_word == "with",
            prev2: String::new(),
            adjacent: false,
        }
    }

    /// An opening (or closing) parenthesis; `direct`: right after `prev`.
    fn paren(&mut self, open: bool, direct: bool, prev: &str, rel: impl Fn(&str) -> bool) {
        if !open {
            self.parens.pop();
            return;
        }
        let depth = self.parens.len();
        let alias = direct && !is_clause_word(prev) && prev != "materialized";
        let list = self.parens.iter().any(|&l| l)
            || self.insert
            || direct && prev == "set" && self.set == Some(depth)
            || alias && self.adjacent && (self.prev2 == "as" || rel(&self.prev2))
            || alias && self.with && depth == 0;
        self.insert = false;
        self.parens.push(list);
    }

    /// Track word `w` (after `prev`, `lead` the text between them, `rest`
    /// what follows): is it a column name that is never a variable?
    fn word(&mut self, w: &str, prev: &str, lead: &str, rest: &str) -> bool {
        let depth = self.parens.len();
        if self.insert && self.target.is_none() {
            // `schema.t`: the relation is the name after the dot.
            let name = match rest.strip_prefix('.') {
                Some(r) => r
                    .split(|c: char| !is_word_byte(c as u8))
                    .next()
                    .unwrap_or(""),
                None => w,
            };
            self.target = Some(name.to_lowercase());
        } else if self.insert
            && matches!(
                w,
                "values" | "select" | "default" | "overriding" | "with" | "table"
            )
        {
            self.insert = false;
        }
        if w == "into" && prev == "insert" {
            self.insert = true;
            self.target = None;
        }
        if matches!(w, "conflict" | "returning") {
            self.target_in_scope = true;
        }
        if depth == 0 && matches!(w, "select" | "insert" | "update" | "delete" | "merge") {
            self.with = false;
        }
        if w == "set" {
            self.set = Some(depth);
        } else if self.set == Some(depth) && matches!(w, "from" | "where" | "returning") {
            self.set = None;
        }
        self.prev2 = prev.to_string();
        self.adjacent = lead.is_empty();
        let set_target = self.set == Some(depth)
            && (prev == "set" && lead.is_empty() || lead.ends_with(','))
            && rest.starts_with('=')
            && !rest.starts_with("=>");
        set_target || self.parens.last() == Some(&true)
    }

    /// Whether relation `r` is in scope of the word being read.
    fn in_scope(&self, r: &str, text: &str) -> bool {
        match &self.target {
            Some(t) if t == r && !self.target_in_scope => word_count(text, r) > 1,
            _ => true,
        }
    }
}

/// Words after which `(` opens an expression, not an alias's column list.
fn is_clause_word(w: &str) -> bool {
    matches!(
        w,
        "where"
            | "on"
            | "using"
            | "join"
            | "lateral"
            | "and"
            | "or"
            | "not"
            | "in"
            | "exists"
            | "values"
            | "set"
            | "select"
            | "returning"
            | "by"
            | "having"
            | "limit"
            | "offset"
            | "then"
            | "else"
            | "when"
            | "case"
            | "from"
            | "as"
            | "any"
            | "all"
            | "some"
            | "is"
            | "like"
            | "between"
            | "distinct"
            | "array"
            | "row"
            | "into"
            | "do"
            | "update"
            | "conflict"
            | "with"
            | "recursive"
    )
}

/// The statement's first word, lower case.
fn first_word_of(t: &str) -> String {
    let w = t.trim_start().split(|c: char| !c.is_ascii_alphabetic());
    w.into_iter().next().unwrap_or("").to_lowercase()
}

/// How often `w` (lower case) occurs as a word of `text`.
fn word_count(text: &str, w: &str) -> usize {
    let lower = text.to_lowercase();
    let b = lower.as_bytes();
    lower
        .match_indices(w)
        .filter(|(i, _)| {
            (*i == 0 || !is_word_byte(b[i - 1]))
                && b.get(i + w.len()).is_none_or(|c| !is_word_byte(*c))
        })
        .count()
}

/// Append `:name`, in place of one blank before it when there are two
/// (keeps the columns of what follows; otherwise one column of drift).
fn push_var(out: &mut String, name: &str, absorb: bool) {
    if absorb && out.ends_with("  ") {
        out.pop();
    }
    // An alias of an unnamed parameter: `$n` as written.
    if !name.starts_with('$') {
        out.push(':');
    }
    out.push_str(name);
}

/// The end of a string, quoted identifier, comment or dollar quote that
/// starts at `i` (PostgreSQL's lexemes, `lex::lexeme_end`).
pub(super) fn literal_end(t: &str, i: usize) -> Option<usize> {
    super::lex::lexeme_end(t, i)
}
