//! pgbench custom scripts (`pgbench -f script`) as programs: meta-commands
//! (`\set`, `\sleep`, `\if`/`\elif`/`\else`/`\endif`, `\gset`,
//! `\setshell`, `\shell`, `\startpipeline`/`\endpipeline`) and SQL commands
//! ending at `;` (over several lines, as pgbench ≥ 10 reads them) with
//! `:name` variables, into the program AST the `.sql` dialect produces.
//!
//! Transactions are PostgreSQL's, not pgbench's: a SQL command outside
//! `BEGIN … END` commits on its own (autocommit), so it is a transaction
//! of its own; `BEGIN … END/COMMIT` is one; a compound command (`\;`) and
//! the commands of a pipeline up to `\endpipeline` (its Sync) run in one
//! implicit transaction (an explicit BEGIN there takes the commands before
//! it into its transaction, as PostgreSQL's xact.c does). The script's
//! transactions are split like a program's mid-program COMMITs.
//!
//! Meta-commands run in the client and read no table. `\set` gives its
//! variable a fresh unknown value (inside a transaction; outside one, the
//! next transaction's variables are free parameters anyway). `\if` inside
//! a transaction is a branch on an unknown condition; outside one, the
//! transactions of every branch are programs (each may run or not).
//! Each SQL command is parsed by the `.sql` dialect's parser on a copy of
//! the file with everything else blanked (positions kept).

use std::sync::Arc;

use sqlparser::ast::{Expr, SelectItem, SetExpr, Statement as Sql};

use super::ast::{Node, ProcExpr};
use super::procedural::parse_program;
use super::Snippet;
use crate::model::error::{Diag, Result, SourceFile, Warning};

/// pgbench's meta-commands (PostgreSQL 15).
const META: &[&str] = &[
    "set",
    "setshell",
    "shell",
    "sleep",
    "if",
    "elif",
    "else",
    "endif",
    "gset",
    "aset",
    "startpipeline",
    "endpipeline",
];

/// Whether `file` is a pgbench script: a `.pgbench` file, or a file with
/// lines that start with a meta-command, all of them pgbench's (`\set aid
/// …`; a psql script's `\echo`, `\i` or pg_dump's `\restrict` make it none).
pub fn is_pgbench(file: &SourceFile) -> bool {
    if file.name.ends_with(".pgbench") {
        return true;
    }
    let metas: Vec<bool> = file
        .text
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix('\\'))
        .map(|rest| {
            let w: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphabetic())
                .collect();
            META.contains(&w.to_ascii_lowercase().as_str())
        })
        .collect();
    !metas.is_empty() && metas.iter().all(|&m| m)
}

/// One piece of a script, in order.
#[derive(Debug)]
enum Item {
    /// An SQL command: its pieces (more than one: a compound `\;`
    /// command), each `(from, to)` without the terminator; `gset`: the
    /// `\gset` prefix that ended it, with its offset.
    Sql {
        pieces: Vec<(usize, usize)>,
        gset: Option<(String, usize)>,
    },
    /// `\name args` at `at`; `args` is the rest of the line (continued
    /// lines joined).
    Meta {
        name: String,
        at: usize,
        args: (usize, usize),
    },
}

fn err(file: &SourceFile, at: usize, len: usize, msg: impl Into<String>, help: &str) -> Box<Diag> {
    Diag::new(msg).help(help).at(file, at, len, "here")
}

/// Skips a quoted string, quoted identifier, dollar quote or comment at
/// `i`; the offset after it, or `None` when there is none.
fn skip_quoted(text: &str, i: usize) -> Option<usize> {
    let b = text.as_bytes();
    let c = b[i];
    if c == b'-' && b.get(i + 1) == Some(&b'-') {
        return Some(text[i..].find('\n').map_or(text.len(), |k| i + k));
    }
    if c == b'/' && b.get(i + 1) == Some(&b'*') {
        return Some(
            text[i + 2..]
                .find("*/")
                .map_or(text.len(), |k| i + 2 + k + 2),
        );
    }
    if c == b'\'' || c == b'"' {
        // E'…' strings take backslash escapes.
        let escapes = c == b'\'' && i > 0 && (b[i - 1] == b'E' || b[i - 1] == b'e');
        let mut j = i + 1;
        while j < b.len() {
            if escapes && b[j] == b'\\' {
                j += 2;
                continue;
            }
            if b[j] == c {
                if b.get(j + 1) == Some(&c) {
                    j += 2;
                    continue;
                }
                return Some(j + 1);
            }
            j += 1;
        }
        return Some(b.len());
    }
    super::lex::dollar_quote_end(text, i)
}

/// The script cut into SQL commands and meta-commands.
fn scan(file: &SourceFile) -> Result<Vec<Item>> {
    let text: &str = &file.text;
    let b = text.as_bytes();
    let mut items = vec![];
    let mut pieces: Vec<(usize, usize)> = vec![];
    let mut start: Option<usize> = None;
    let mut depth = 0usize;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        // A `:'name'` variable is no string.
        let var_quote = c == b'\'' && i > 0 && b[i - 1] == b':';
        if !var_quote {
            if let Some(end) = skip_quoted(text, i) {
                if c != b'-' && c != b'/' {
                    start.get_or_insert(i);
                }
                i = end.max(i + 1);
                continue;
            }
        }
        match c {
            b'\\' if b.get(i + 1) == Some(&b';') => {
                pieces.push((start.unwrap_or(i), i));
                start = None;
                i += 2;
            }
            b'\\' => i = meta_command(file, i, &mut start, &mut pieces, &mut items)?,
            b'(' => {
                depth += 1;
                start.get_or_insert(i);
                i += 1;
            }
            b')' => {
                depth = depth.saturating_sub(1);
                i += 1;
            }
            b';' if depth == 0 => {
                match start {
                    Some(s) => pieces.push((s, i)),
                    // An empty command (`;;`) is nothing, as in psql.
                    None if pieces.is_empty() => {
                        i += 1;
                        continue;
                    }
                    None => {}
                }
                items.push(Item::Sql {
                    pieces: std::mem::take(&mut pieces),
                    gset: None,
                });
                start = None;
                i += 1;
            }
            c if c.is_ascii_whitespace() => i += 1,
            _ => {
                start.get_or_insert(i);
                i += 1;
            }
        }
    }
    if let Some(s) = start.or(pieces.first().map(|p| p.0)) {
        let end = text.trim_end().len().max(s + 1);
        return Err(err(
            file,
            s,
            end - s,
            "SQL command without a terminating `;`",
            "end every SQL command of a pgbench script with `;`",
        ));
    }
    Ok(items)
}

/// The meta-command at `i` (a `\`): `\gset` ends the pending query,
/// any other must stand where no query is pending. The offset after it.
fn meta_command(
    file: &SourceFile,
    i: usize,
    start: &mut Option<usize>,
    pieces: &mut Vec<(usize, usize)>,
    items: &mut Vec<Item>,
) -> Result<usize> {
    let text: &str = &file.text;
    let b = text.as_bytes();
    let w_end = i
        + 1
        + text[i + 1..]
            .find(|ch: char| !ch.is_ascii_alphabetic())
            .unwrap_or(text.len() - i - 1);
    let name = text[i + 1..w_end].to_ascii_lowercase();
    let mut e = w_end;
    // A meta-command ends at the end of its line (`\` + newline
    // continues it).
    while e < b.len() && b[e] != b'\n' {
        if b[e] == b'\\' && b.get(e + 1) == Some(&b'\n') {
            e += 1;
        }
        e += 1;
    }
    let pending = start.is_some() || !pieces.is_empty();
    if name == "gset" || name == "aset" {
        let Some(s) = start.filter(|_| pending) else {
            return Err(err(
                file,
                i,
                w_end - i,
                format!("`\\{name}` without a query before it"),
                "\\gset ends a query in place of its `;`: SELECT a, b FROM t WHERE … \\gset",
            ));
        };
        if name == "aset" {
            return Err(err(file, i, w_end - i, "`\\aset` is not modelled", "\\aset leaves a variable unchanged when a query returns no row; isolint models \\gset (exactly one row): use \\gset"));
        }
        pieces.push((s, i));
        let prefix = text[w_end..e].trim().to_string();
        items.push(Item::Sql {
            pieces: std::mem::take(pieces),
            gset: Some((prefix, i)),
        });
        *start = None;
    } else {
        if pending {
            let at = start.or(pieces.first().map(|p| p.0)).unwrap_or(i);
            return Err(err(
                file,
                at,
                1,
                format!("SQL command without a terminating `;` before `\\{name}`"),
                "end the SQL command with `;` (pgbench reads it up to its `;`, over several lines)",
            ));
        }
        if !META.contains(&name.as_str()) {
            return Err(err(file, i, w_end - i, format!("unknown pgbench meta-command `\\{name}`"), "pgbench 15 knows \\set, \\setshell, \\shell, \\sleep, \\if, \\elif, \\else, \\endif, \\gset, \\aset, \\startpipeline and \\endpipeline"));
        }
        items.push(Item::Meta {
            name,
            at: i,
            args: (w_end, e),
        });
    }
    Ok(e)
}

/// The file blanked but for `from..to` (newlines and lengths kept), a `;`
/// at `to`, and `:'name'` variables written `:name`; `:"name"` (a
/// variable as an identifier) is an error.
fn masked(file: &SourceFile, from: usize, to: usize) -> Result<SourceFile> {
    let text: &str = &file.text;
    let mut out: Vec<u8> = text
        .bytes()
        .map(|c| if c == b'\n' { b'\n' } else { b' ' })
        .collect();
    out[from..to].copy_from_slice(&text.as_bytes()[from..to]);
    if to < out.len() {
        out[to] = b';';
    }
    let b = text.as_bytes();
    let mut i = from;
    while i < to {
        if b[i] == b':' && matches!(b.get(i + 1), Some(b'\'' | b'"')) {
            let q = b[i + 1];
            let close = text[i + 2..to].find(q as char).map(|k| i + 2 + k);
            let Some(close) = close else {
                i += 1;
                continue;
            };
            if q == b'"' {
                return Err(err(file, i, close + 1 - i, "a pgbench variable used as an identifier (`:\"name\"`)", "the table or column it names is known only when the script runs; write the name itself"));
            }
            // `:'aid'` → `:aid  `: the variable's value, as a literal.
            let name = &b[i + 2..close];
            out[i + 1..i + 1 + name.len()].copy_from_slice(name);
            for x in out.iter_mut().take(close + 1).skip(i + 1 + name.len()) {
                *x = b' ';
            }
            i = close + 1;
            continue;
        }
        if b[i] != b':' {
            if let Some(end) = skip_quoted(text, i) {
                i = end.min(to).max(i + 1);
                continue;
            }
        }
        i += 1;
    }
    // Non-ASCII bytes outside the command became spaces: valid UTF-8.
    let t = String::from_utf8(out).unwrap_or_else(|_| text.to_string());
    Ok(SourceFile::new(file.name.clone(), t))
}

/// Point a diagnostic made on a masked copy at the original text.
fn unmask(mut d: Box<Diag>, file: &SourceFile) -> Box<Diag> {
    if d.src.is_some() {
        d.src = Some(miette::NamedSource::new(
            file.name.clone(),
            Arc::clone(&file.text),
        ));
    }
    d
}

/// What the variables a `\gset` sets are named: the result columns'
/// names (PostgreSQL's: the column, the alias, the function), prefixed.
fn gset_names(file: &SourceFile, sql: &Sql, prefix: &str, at: usize) -> Result<Vec<String>> {
    fn name_of(e: &Expr) -> Option<String> {
        match e {
            Expr::Identifier(i) => Some(super::ident_name(i)),
            Expr::CompoundIdentifier(v) => v.last().map(super::ident_name),
            Expr::Function(f) => f
                .name
                .0
                .last()
                .and_then(|p| p.as_ident())
                .map(super::ident_name),
            Expr::Cast { expr, .. } | Expr::Nested(expr) => name_of(expr),
            _ => None,
        }
    }
    let items: &[SelectItem] = match sql {
        Sql::Query(q) => match q.body.as_ref() {
            SetExpr::Select(s) => &s.projection,
            _ => &[],
        },
        Sql::Insert(i) => i.returning.as_deref().unwrap_or(&[]),
        Sql::Update(u) => u.returning.as_deref().unwrap_or(&[]),
        Sql::Delete(d) => d.returning.as_deref().unwrap_or(&[]),
        _ => &[],
    };
    let help = "\\gset names each variable after its column: give every column of the SELECT (or RETURNING) list a name, e.g. `SELECT count(*) AS n …`";
    if items.is_empty() {
        return Err(err(
            file,
            at,
            5,
            "`\\gset` after a command that returns no columsn isolint can name",
            help,
        ));
    }
    items
        .iter()
        .map(|it| {
            let n = match it {
                SelectItem::ExprWithAlias { alias, .. } => Some(super::ident_name(alias)),
                SelectItem::UnnamedExpr(e) => name_of(e),
                _ => None,
            };
            n.map(|n| format!("{prefix}{n}").to_lowercase())
                .ok_or_else(|| {
                    err(
                        file,
                        at,
                        5,
                        "`\\gset` after a column without a name (`*` or an expression)",
                        help,
                    )
                })
        })
        .collect()
}

/// A pgbench script → the program AST of the `.sql` dialect, with the
/// warnings for what runs outside the database (`\shell`, `\setshell`).
pub fn parse_script(file: &SourceFile) -> Result<(Vec<Node>, Vec<Warning>)> {
    let items = scan(file)?;
    same_case(file, &items)?;
    let mut b = Builder {
        file,
        top: vec![],
        frames: vec![],
        tx: None,
        implicit: false,
        pipeline: None,
        ifs: 0,
        warnings: vec![],
    };
    for item in &items {
        match item {
            Item::Sql { pieces, gset } => b.command(pieces, gset.as_ref())?,
            Item::Meta { name, at, args } => b.meta(name, *at, *args)?,
        }
    }
    b.finish()
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Tx {
    Explicit,
    /// A compound command's or a pipeline's implicit transaction.
    Implicit,
}

/// An open `\if`: inside a transaction its branches are collected into a
/// `Node::If`; outside one its branches' transactions go to the top.
struct Frame {
    at: usize,
    in_tx: bool,
    branches: Vec<(Option<ProcExpr>, Vec<Node>)>,
    has_else: bool,
}

struct Builder<'a> {
    file: &'a SourceFile,
    top: Vec<Node>,
    frames: Vec<Frame>,
    tx: Option<Tx>,
    /// Inside a compound command or a pipeline: a command opens an
    /// implicit transaction.
    implicit: bool,
    /// Offset of the open `\startpipeline`.
    pipeline: Option<usize>,
    /// `\if`s seen (names their unknown conditions).
    ifs: usize,
    warnings: Vec<Warning>,
}

impl Builder<'_> {
    /// Where the next node goes: the innermost `\if` branch of the open
    /// transaction, else the top level.
    fn body(&mut self) -> &mut Vec<Node> {
        match self.frames.iter_mut().rev().find(|f| f.in_tx) {
            Some(f) => match f.branches.last_mut() {
                Some(br) => &mut br.1,
                None => &mut self.top,
            },
            None => &mut self.top,
        }
    }

    /// A transaction may begin or end only where no `\if` opened inside
    /// it is open.
    fn boundary_ok(&self, at: usize, what: &str) -> Result<()> {
        if self.frames.iter().any(|f| f.in_tx) {
            return Err(err(self.file, at, what.len(), format!("{what} inside a `\\if` that is inside a transaction"), "isolint needs every transaction to begin and end in the same \\if branch: move BEGIN/END inside the branch, or the \\if inside the transaction"));
        }
        Ok(())
    }

    fn command(&mut self, pieces: &[(usize, usize)], gset: Option<&(String, usize)>) -> Result<()> {
        let compound = pieces.len() > 1;
        if compound && self.tx.is_none() {
            self.implicit = true;
        }
        for (k, &(from, to)) in pieces.iter().enumerate() {
            let m = masked(self.file, from, to)?;
            let mut nodes = parse_program(&m).map_err(|d| unmask(d, self.file))?;
            if k + 1 == pieces.len() {
                if let Some((prefix, at)) = gset {
                    match nodes.as_mut_slice() {
                        [Node::Sql(s)] => s.into = gset_names(self.file, &s.sql, prefix, *at)?,
                        _ => {
                            return Err(err(
                                self.file,
                                *at,
                                5,
                                "`\\gset` after a command that is no query",
                                "\\gset ends a SELECT (or a command with RETURNING)",
                            ))
                        }
                    }
                }
            }
            // `SET TRANSACTION …` / `SET SESSION CHARACTERISTICS …` also
            // read as a level; only BEGIN and START open a transaction.
            let text = self.file.text[from..to].trim_start();
            let opens = ["BEGIN", "START"].iter().any(|w| {
                text.get(..w.len())
                    .is_some_and(|t| t.eq_ignore_ascii_case(w))
            });
            for n in nodes {
                self.node(n, from, opens)?;
            }
        }
        if compound && self.pipeline.is_none() {
            self.end_implicit(pieces[0].0)?;
            self.implicit = false;
        }
        Ok(())
    }

    /// One node of a SQL command: BEGIN/COMMIT/ROLLBACK move the
    /// transaction state; a statement outside a transaction commits alone.
    fn node(&mut self, n: Node, at: usize, opens: bool) -> Result<()> {
        match n {
            // Outside a transaction, SET TRANSACTION is a no-op (PostgreSQL
            // warns) and SET SESSION CHARACTERISTICS a default: assuming
            // READ COMMITTED for the next transactions is the weaker level.
            Node::Begin { .. } if !opens => {
                if self.tx.is_some() {
                    self.body().push(n);
                }
            }
            Node::Begin { .. } => {
                if self.tx != Some(Tx::Explicit) {
                    if self.tx.is_none() {
                        self.boundary_ok(at, "BEGIN")?;
                    }
                    self.tx = Some(Tx::Explicit);
                }
                self.body().push(n);
            }
            Node::Commit { .. } | Node::Abort => {
                // Without a transaction, PostgreSQL only warns.
                if self.tx.is_some() {
                    self.tx = None;
                    self.boundary_ok(at, "END")?;
                    if matches!(n, Node::Abort) {
                        self.top.push(Node::Abort);
                    }
                    self.top.push(Node::Commit { at });
                }
            }
            Node::Sql(_) => {
                if self.tx.is_none() {
                    if self.implicit {
                        self.tx = Some(Tx::Implicit);
                    } else {
                        self.top.push(n);
                        self.top.push(Node::Commit { at });
                        return Ok(());
                    }
                }
                self.body().push(n);
            }
            _ => {
                return Err(err(self.file, at, 1, "not an SQL command", "a pgbench script holds SQL commands and meta-commands; variables are set with \\set"));
            }
        }
        Ok(())
    }

    /// The end of a compound command or pipeline: its implicit
    /// transaction commits (an explicit one goes on).
    fn end_implicit(&mut self, at: usize) -> Result<()> {
        if self.tx == Some(Tx::Implicit) {
            self.boundary_ok(at, "\\endpipeline")?;
            self.tx = None;
            self.top.push(Node::Commit { at });
        }
        Ok(())
    }

    fn meta(&mut self, name: &str, at: usize, (from, to): (usize, usize)) -> Result<()> {
        let args = self.file.text[from..to].trim();
        let line = self.file.line_col(at).0;
        match name {
            "set" | "setshell" => {
                let var = args.split_whitespace().next().unwrap_or("");
                if var.is_empty() {
                    return Err(err(
                        self.file,
                        at,
                        name.len() + 1,
                        format!("`\\{name}` without a variable"),
                        "write \\set name expression",
                    ));
                }
                if name == "setshell" {
                    self.warn(line, "`\\setshell` runs a shell command; isolint assumes it does not touch the database (its value is unknown)");
                }
                if self.tx.is_some() {
                    let expr = fresh(from, &self.file.text[from..to])?;
                    self.body().push(Node::Assign {
                        var: var.to_lowercase(),
                        expr,
                    });
                }
            }
            "shell" => self.warn(
                line,
                "`\\shell` runs a shell command; isolint assumes it does not touch the database",
            ),
            "sleep" => {}
            "if" => {
                let in_tx = self.tx.is_some();
                let cond = self.unknown(from, to)?;
                self.frames.push(Frame {
                    at,
                    in_tx,
                    branches: vec![(Some(cond), vec![])],
                    has_else: false,
                });
            }
            "elif" | "else" | "endif" => self.branch(name, at, (from, to))?,
            "startpipeline" => {
                if self.pipeline.is_some() {
                    return Err(err(
                        self.file,
                        at,
                        14,
                        "`\\startpipeline` inside a pipeline",
                        "end the pipeline with \\endpipeline first",
                    ));
                }
                self.pipeline = Some(at);
                self.implicit = self.tx.is_none();
            }
            "endpipeline" => {
                if self.pipeline.take().is_none() {
                    return Err(err(
                        self.file,
                        at,
                        12,
                        "`\\endpipeline` without `\\startpipeline`",
                        "start the pipeline with \\startpipeline",
                    ));
                }
                self.end_implicit(at)?;
                self.implicit = false;
            }
            _ => {}
        }
        Ok(())
    }

    /// `\elif`, `\else`, `\endif` of the innermost `\if`.
    fn branch(&mut self, name: &str, at: usize, (from, to): (usize, usize)) -> Result<()> {
        let file = self.file;
        let in_tx = self.tx.is_some();
        let cond = if name == "elif" {
            Some(self.unknown(from, to)?)
        } else {
            None
        };
        let Some(f) = self.frames.last_mut() else {
            return Err(err(
                file,
                at,
                name.len() + 1,
                format!("`\\{name}` without `\\if`"),
                "open the branch with \\if expression",
            ));
        };
        if f.in_tx != in_tx {
            return Err(err(
                file,
                at,
                name.len() + 1,
                format!(
                    "a transaction begins or ends in a `\\if` branch and goes on after `\\{name}`"
                ),
                "isolint needs every transaction to begin and end in the same \\if branch",
            ));
        }
        if f.has_else && name != "endif" {
            return Err(err(
                file,
                at,
                name.len() + 1,
                format!("`\\{name}` after `\\else`"),
                "\\else is the last branch of a \\if",
            ));
        }
        match name {
            "endif" => {
                let Some(f) = self.frames.pop() else {
                    return Ok(());
                };
                if f.in_tx {
                    let mut branches = f.branches;
                    if !f.has_else {
                        branches.push((None, vec![]));
                    }
                    self.body().push(Node::If(branches));
                }
            }
            _ => {
                f.has_else = name == "else";
                f.branches.push((cond, vec![]));
            }
        }
        Ok(())
    }

    /// A `\if`/`\elif` condition: computed in the client from variables,
    /// it reads no table; isolint takes it as unknown (both ways).
    fn unknown(&mut self, from: usize, to: usize) -> Result<ProcExpr> {
        self.ifs += 1;
        let name = format!(":pgbench_if_{}", self.ifs);
        let snip = Snippet {
            text: self.file.text[from..to].to_string(),
            offset: from,
            parsed: None,
        };
        let probe = Snippet {
            text: name,
            offset: from,
            parsed: None,
        };
        // The client evaluates `\if`: nothing for PostgreSQL's gate.
        Ok(ProcExpr {
            expr: super::parse_expr(self.file, &probe)?,
            snip,
            pg: None,
        })
    }

    fn warn(&mut self, line: usize, message: &str) {
        self.warnings.push(Warning {
            file: self.file.name.clone(),
            line,
            message: message.into(),
        });
    }

    fn finish(self) -> Result<(Vec<Node>, Vec<Warning>)> {
        let file = self.file;
        if let Some(f) = self.frames.last() {
            return Err(err(
                file,
                f.at,
                3,
                "`\\if` without `\\endif`",
                "close it with \\endif",
            ));
        }
        if let Some(at) = self.pipeline {
            return Err(err(
                file,
                at,
                14,
                "`\\startpipeline` without `\\endpipeline`",
                "end the pipeline with \\endpipeline",
            ));
        }
        if self.tx.is_some() {
            let at = file.text.trim_end().len();
            return Err(err(file, at.saturating_sub(1), 1, "the script ends inside a transaction", "end it with END; or COMMIT; (pgbench would leave it open across runs of the script)"));
        }
        Ok((self.top, self.warnings))
    }
}

/// pgbench's variables are case-sensitive, isolint's `:name`s are not: two
/// names that differ only in case would be taken for one (and their values
/// for equal), so they are an error.
fn same_case(file: &SourceFile, items: &[Item]) -> Result<()> {
    let text: &str = &file.text;
    let b = text.as_bytes();
    let mut seen: Vec<(&str, usize)> = vec![];
    let mut add = |name: &str, at: usize| -> Result<()> {
        let name = &text[at..at + name.len()];
        if let Some((other, _)) = seen
            .iter()
            .find(|(o, _)| *o != name && o.eq_ignore_ascii_case(name))
        {
            return Err(err(
                file,
                at,
                name.len(),
                format!("pgbench variables `{other}` and `{name}` differ only in case"),
                "pgbench tells them apart, isolint does not: rename one",
            ));
        }
        seen.push((name, at));
        Ok(())
    };
    let ranges: Vec<(usize, usize, bool)> = items
        .iter()
        .flat_map(|it| match it {
            Item::Sql { pieces, .. } => pieces
                .iter()
                .map(|&(f, t)| (f, t, false))
                .collect::<Vec<_>>(),
            Item::Meta { name, args, .. } => {
                vec![(args.0, args.1, name == "set" || name == "setshell")]
            }
        })
        .collect();
    for (from, to, sets) in ranges {
        if sets {
            let arg = &text[from..to];
            let lead = arg.len() - arg.trim_start().len();
            let var = arg.split_whitespace().next().unwrap_or("");
            if !var.is_empty() {
                add(var, from + lead)?;
            }
        }
        let mut i = from;
        while i < to {
            if b[i] == b':' && b.get(i + 1) != Some(&b':') && (i == 0 || b[i - 1] != b':') {
                let s = i + 1 + usize::from(matches!(b.get(i + 1), Some(b'\'' | b'"')));
                let mut e = s;
                while e < to && super::lex::is_word_byte(b[e]) {
                    e += 1;
                }
                if e > s {
                    add(&text[s..e], s)?;
                }
                i = e.max(i + 1);
                continue;
            }
            if b[i] != b':' {
                if let Some(end) = skip_quoted(text, i) {
                    i = end.min(to).max(i + 1);
                    continue;
                }
            }
            i += 1;
        }
    }
    Ok(())
}

/// The value `\set` gives: unknown (pgbench computes it in the client,
/// mostly from random()); a call of `random()` is isolint's fresh value.
fn fresh(at: usize, text: &str) -> Result<ProcExpr> {
    let probe = Snippet {
        text: "random()".into(),
        offset: at,
        parsed: None,
    };
    let f = SourceFile::new("pgbench", "random()");
    Ok(ProcExpr {
        expr: super::parse_expr(&f, &probe)?,
        pg: None,
        snip: Snippet {
            text: text.to_string(),
            offset: at,
            parsed: None,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(t: &str) -> Result<Vec<Node>> {
        parse_script(&SourceFile::new("s.pgbench", t)).map(|(n, _)| n)
    }

    #[test]
    fn autocommit_commands_are_transactions() {
        let n = parse("\\set aid random(1, 10)\nSELECT 1;\nSELECT\n  2;\n").expect("parses");
        assert_eq!(n.len(), 4);
        assert!(matches!(n[1], Node::Commit { .. }));
    }

    #[test]
    fn begin_end_and_if_inside() {
        let n = parse("BEGIN;\n\\set x random(1, 2)\n\\if :x = 1\nSELECT 1;\n\\else\nSELECT 2;\n\\endif\nEND;\n").expect("parses");
        // BEGIN, \set, \if, then the COMMIT.
        assert_eq!(n.len(), 4, "{n:?}");
        assert!(matches!(&n[2], Node::If(b) if b.len() == 2));
    }

    #[test]
    fn set_transaction_opens_none() {
        let n = parse("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE;\nSELECT 1;\nSELECT 2;\n")
            .expect("parses");
        // Two autocommit transactions, no BEGIN.
        assert_eq!(n.len(), 4, "{n:?}");
        assert!(matches!(n[1], Node::Commit { .. }));
        let n = parse(
            "START TRANSACTION ISOLATION LEVEL SERIALIZABLE;\nSELECT 1;\nSELECT 2;\nCOMMIT;\n",
        )
        .expect("parses");
        assert_eq!(n.len(), 4, "{n:?}");
        assert!(matches!(n[0], Node::Begin { level: Some(_), .. }));
    }

    #[test]
    fn gset_names_the_columns() {
        let n =
            parse("BEGIN;\nSELECT abalance, count(*) AS n FROM t WHERE k = :k \\gset p_\nEND;\n")
                .expect("parses");
        let Node::Sql(s) = &n[1] else { panic!("{n:?}") };
        assert_eq!(s.into, ["p_abalance", "p_n"]);
    }

    #[test]
    fn located_errors() {
        for (t, want) in [
            ("SELECT 1\n\\sleep 1\n", "without a terminating"),
            ("\\bogus\n", "unknown pgbench meta-command"),
            ("\\if 1\nSELECT 1;\n", "without `\\endif`"),
            ("BEGIN;\nSELECT 1;\n", "ends inside a transaction"),
            ("BEGIN;\n\\if 1\nEND;\n\\endif\n", "inside a `\\if`"),
            ("SELECT * FROM t \\gset\n", "without a name"),
            ("SELECT :\"col\" FROM t;\n", "as an identifier"),
            ("\\set Aid 1\nSELECT :aid;\n", "differ only in case"),
        ] {
            let e = parse(t).expect_err(t);
            assert!(e.message.contains(want), "{t}: {}", e.message);
            assert!(e.location.is_some(), "{t}");
        }
    }

    #[test]
    fn detection() {
        assert!(is_pgbench(&SourceFile::new(
            "a.sql",
            "\\set a 1\nSELECT :a;\n"
        )));
        assert!(!is_pgbench(&SourceFile::new("a.sql", "SELECT :a;\n")));
        assert!(is_pgbench(&SourceFile::new("a.pgbench", "SELECT 1;\n")));
        let psql = "\\set ON_ERROR_STOP on\n\\echo hi\nSELECT 1;\n";
        assert!(!is_pgbench(&SourceFile::new("a.sql", psql)));
    }
}
