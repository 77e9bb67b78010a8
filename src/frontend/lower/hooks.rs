//! What schema objects do on a statement's behalf (issue 21, class 1):
//! functions called by DEFAULT, CHECK and domain CHECK expressions (their
//! reads are the statement's, before its write), stored generated columns
//! (written with their inputs), and the checks of deferred foreign keys
//! (run at COMMIT). docs/sql-frontend.md, "Schema objects".

use super::functions::{is_builtin, overloaded};
use super::{find_rel, Lowerer};
use crate::frontend::sql::ddl::{Extras, FunctionDef};
use crate::frontend::sql::procedural::Node;
use crate::frontend::sql::Snippet;
use crate::model::btp::{Body, StmtType};
use crate::model::error::{Diag, Result, SourceFile};
use crate::model::schema::RelId;
use sqlparser::ast::{Expr, Ident};
use std::collections::BTreeSet;

use crate::frontend::sql::ddl::HookKind;
use crate::frontend::sql::pg;

/// Every SQL text of a PL/pgSQL body as PostgreSQL's PL/pgSQL compiler
/// splits it (statements and expressions), or why not.
fn plpgsql_queries(def: &FunctionDef) -> std::result::Result<Vec<String>, String> {
    let params = def
        .params
        .iter()
        .map(|p| format!("{} int", if p.is_empty() { "" } else { p }))
        .collect::<Vec<_>>()
        .join(", ");
    // The return type is unknown here: try the forms a body's RETURN fits.
    let mut last = String::new();
    for ret in ["int", "void", "SETOF int", "trigger"] {
        let text = format!(
            "CREATE FUNCTION f({params}) RETURNS {ret} LANGUAGE plpgsql AS $isolint$\n{}\n$isolint$",
            def.body.text
        );
        match pg::parse_plpgsql(&text) {
            Ok(v) => {
                let mut out = vec![];
                collect_queries(&v, &mut out)?;
                return Ok(out);
            }
            Err(e) => last = e.message,
        }
    }
    Err(format!(
        "PostgreSQL's PL/pgSQL compiler rejects its body ({last})"
    ))
}

fn collect_queries(
    v: &serde_json::Value,
    out: &mut Vec<String>,
) -> std::result::Result<(), String> {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                if k.contains("dyn") {
                    return Err("it runs dynamic SQL (EXECUTE)".into());
                }
                if k == "query" {
                    if let Some(q) = x.as_str() {
                        out.push(q.to_string());
                        continue;
                    }
                }
                collect_queries(x, out)?;
            }
        }
        serde_json::Value::Array(a) => {
            for x in a {
                collect_queries(x, out)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// What a PL/pgSQL query text touches: a statement as is, an expression
/// as `SELECT expr`, an assignment `v := expr` by its expression.
fn touches_of(q: &str) -> Option<pg::Touches> {
    pg::touches(q).ok().or_else(|| {
        let expr = q.split_once(":=").map_or(q, |(_, e)| e);
        pg::touches(&format!("SELECT {expr}")).ok()
    })
}

/// Which check of a foreign key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FkCheck {
    /// The parent row of an inserted or updated referencing row.
    Parent,
    /// No referencing row left for a deleted (re-keyed) parent.
    OnDelete,
    OnUpdate,
}

/// When a foreign-key check runs (was `When`): at the statement, at
/// COMMIT, or either depending on the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CheckTime {
    Now,
    Commit,
    /// Either, depending on the path: lowered at both places.
    Both,
}

/// How the transaction's `SET CONSTRAINTS` set a foreign key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FkMode {
    Schema,
    Deferred,
    Both,
}

/// Every function name PostgreSQL's parse trees of the statements and
/// expressions in `nodes` reference, at any depth.
fn each_function(nodes: &[Node], f: &mut dyn FnMut(&str)) {
    use crate::frontend::sql::ast::{LoopHead, ProcExpr};
    fn cond(c: &ProcExpr, f: &mut dyn FnMut(&str)) {
        c.pg.iter().flat_map(|p| &p.functions).for_each(|n| f(n));
    }
    for n in nodes {
        match n {
            Node::Sql(s) | Node::Open(s) => s.pg.functions.iter().for_each(|n| f(n)),
            Node::If(bs) => {
                for (c, b) in bs {
                    c.iter().for_each(|c| cond(c, f));
                    each_function(b, f);
                }
            }
            Node::Loop { head, body, .. } => {
                match head {
                    LoopHead::Plain => {}
                    LoopHead::While(c) | LoopHead::Array { expr: c, .. } => cond(c, f),
                    LoopHead::Range { bounds, .. } => bounds.iter().for_each(|c| cond(c, f)),
                    LoopHead::Query { query, .. } => query.pg.functions.iter().for_each(|n| f(n)),
                }
                each_function(body, f);
            }
            Node::Exit { when, .. } => when.iter().for_each(|c| cond(c, f)),
            Node::Eval(cs) => cs.iter().for_each(|c| cond(c, f)),
            Node::Assign { expr, .. } => cond(expr, f),
            Node::Call { call, .. } => cond(call, f),
            Node::Block { body, handlers, .. } => {
                each_function(body, f);
                handlers.iter().flatten().for_each(|h| each_function(h, f));
            }
            Node::Prefix(b) => each_function(b, f),
            Node::Begin { .. }
            | Node::SetConstraints { .. }
            | Node::Commit { .. }
            | Node::Abort
            | Node::Return { .. } => {}
        }
    }
}

/// Every `SET CONSTRAINTS` node in `nodes`, at any depth.
fn each_set_constraints(nodes: &[Node], f: &mut dyn FnMut(&Node)) {
    for n in nodes {
        match n {
            Node::SetConstraints { .. } => f(n),
            Node::If(bs) => bs.iter().for_each(|(_, b)| each_set_constraints(b, f)),
            Node::Loop { body, .. } | Node::Prefix(body) => each_set_constraints(body, f),
            Node::Block { body, handlers, .. } => {
                each_set_constraints(body, f);
                handlers
                    .iter()
                    .flatten()
                    .for_each(|h| each_set_constraints(h, f));
            }
            _ => {}
        }
    }
}

impl Lowerer<'_> {
    /// The reads of the functions that the schema's DEFAULT / CHECK /
    /// domain CHECK expressions of `rel` call, for the hooks `applies`
    /// selects, in `pre` (before the write). Each call is inlined like a
    /// call in the program (`per_row`: once per row of a statement that
    /// may write several, a loop), its arguments unknown values; errors point at
    /// the call in the schema file. Calls of built-ins that read nothing
    /// (`now()`, `nextval(…)`) add nothing.
    pub(super) fn hook_reads(
        &mut self,
        rel: RelId,
        per_row: bool,
        applies: &dyn Fn(HookKind) -> bool,
        pre: &mut Vec<Body>,
    ) -> Result<()> {
        // All calls of one row in order, in one loop when per row: the
        // rows' calls interleave (g₁ f₁ g₂ f₂), which separate loops
        // (g g f f) would not cover. Every body goes here, VOLATILE ones
        // included: they run at the write, as these checks do.
        let saved = self.stage.defer.take();
        let mut parts = vec![];
        let r = self.row_hook_reads(rel, applies, &mut parts);
        self.stage.defer = saved;
        r?;
        if !parts.is_empty() {
            let b = Body::Seq(parts);
            pre.push(if per_row { Body::Loop(Box::new(b)) } else { b });
        }
        Ok(())
    }

    /// `hook_reads` for one row.
    fn row_hook_reads(
        &mut self,
        rel: RelId,
        applies: &dyn Fn(HookKind) -> bool,
        pre: &mut Vec<Body>,
    ) -> Result<()> {
        let extras: &Extras = self.cat.extras;
        let Some(file) = extras.file.clone() else {
            return Ok(());
        };
        // PostgreSQL forms the row (DEFAULTs, domain CHECKs at the
        // coercion of each value) before it checks the table's CHECKs.
        let mut hooks: Vec<&crate::frontend::sql::ddl::Hook> = extras
            .hooks
            .iter()
            .filter(|h| h.rel == rel && applies(h.kind))
            .collect();
        hooks.sort_by_key(|h| matches!(h.kind, HookKind::Check));
        for h in hooks {
            // PostgreSQL's grammar writes `AT TIME ZONE`, `EXTRACT`,
            // `SUBSTRING … FROM`, … as calls of pg_catalog functions; none
            // reads a table of the schema.
            if h.call.name.len() > 1 && h.call.name[0] == "pg_catalog" {
                continue;
            }
            let name: Vec<String> = h
                .call
                .name
                .iter()
                .map(|p| format!("\"{}\"", p.replace('"', "\"\"")))
                .collect();
            let args = vec!["NULL"; h.call.nargs].join(", ");
            let snip = Snippet {
                text: format!("{}({args})", name.join(".")),
                offset: h.call.at,
                parsed: None,
            };
            let parsed = sqlparser::parser::Parser::new(&crate::frontend::sql::DIALECT)
                .try_with_sql(&snip.text)
                .and_then(|mut p| p.parse_expr());
            let Ok(Expr::Function(f)) = parsed else {
                return Err(
                    Diag::new("isolint cannot read this function call of the schema")
                        .at(&file, h.call.at, 1, "here"),
                );
            };
            if let Some(n) = h.call.name.last() {
                overloaded(&self.cat.functions, n, &file, h.call.at)?;
            }
            let lang = self
                .cat
                .functions
                .iter()
                .find(|(d, _)| Some(&d.name) == h.call.name.last())
                .map(|(d, _)| (*d).clone());
            if let Some(def) = lang.filter(|d| d.language == "plpgsql") {
                self.plpgsql_hook(&def, h, &file, pre)?;
                continue;
            }
            // The inlined body's reads are this statement's; the audit of
            // the statement's own calls must not count them.
            let saved = (
                std::mem::replace(&mut self.src.file, file.clone()),
                self.inl.inlined,
            );
            let r = self.call(&f, false, &snip, pre);
            (self.src.file, self.inl.inlined) = saved;
            r?;
        }
        Ok(())
    }

    /// The columns of `rel`'s CHECKs that call functions, less `writes`:
    /// an update of the row calls those functions with the row's values
    /// of them, so it reads them (`Hook::columns`).
    pub(super) fn check_columns(&self, rel: RelId, writes: &BTreeSet<usize>) -> BTreeSet<usize> {
        self.cat
            .extras
            .hooks
            .iter()
            .filter(|h| h.rel == rel && matches!(h.kind, HookKind::Check))
            .flat_map(|h| h.columns.iter().copied())
            .filter(|c| !writes.contains(c))
            .collect()
    }

    /// Exclusion constraints and partial or expression unique indexes of
    /// `rel`: an INSERT (`writes` None) or an UPDATE writing their columns
    /// succeeds only if no other row conflicts, so it observes the other
    /// rows' values of those columns: a predicate read before the write.
    pub(super) fn conflict_reads(
        &mut self,
        rel: RelId,
        writes: Option<&BTreeSet<usize>>,
        snip: &Snippet,
        pre: &mut Vec<Body>,
    ) {
        let checks: Vec<BTreeSet<usize>> = self
            .cat
            .extras
            .conflict_checks
            .iter()
            .filter(|(r, cols)| {
                *r == rel && writes.is_none_or(|w| cols.iter().any(|c| w.contains(c)))
            })
            .map(|(_, cols)| cols.iter().copied().collect())
            .collect();
        for cols in checks {
            let q = self.new_statement(StmtType::PredSel, rel, snip);
            self.out.statements[q].pread = self.attrs(rel, &cols);
            self.out.statements[q].read = self.attrs(rel, &cols);
            self.check_read(q, "exclusion / partial unique check");
            pre.push(Body::Stmt(q));
        }
    }

    /// A PL/pgSQL function called by a schema expression: it reads, any
    /// number of times, every table its body's statements and expressions
    /// name (a predicate read of all their columns, in a loop: more than
    /// PostgreSQL does). A body that may write, runs dynamic SQL or calls
    /// a function that is no built-in is an error at the call.
    fn plpgsql_hook(
        &mut self,
        def: &FunctionDef,
        h: &crate::frontend::sql::ddl::Hook,
        file: &SourceFile,
        pre: &mut Vec<Body>,
    ) -> Result<()> {
        let name = h.call.name.last().cloned().unwrap_or_default();
        let fail = |why: &str| {
            Diag::new(format!(
                "isolint cannot model PL/pgSQL function `{name}` called here: {why}"
            ))
            .help("a PL/pgSQL function called by a DEFAULT or CHECK is modelled only when it reads tables with static SQL and calls built-ins; rewrite it in SQL, or list it under `pure_functions:` if it touches no table")
            .at(file, h.call.at, name.len().max(1), "called here")
        };
        if self.cat.pure.contains(&name) {
            return Ok(());
        }
        let queries = plpgsql_queries(def).map_err(|w| fail(&w))?;
        let mut rels: BTreeSet<RelId> = BTreeSet::new();
        for q in &queries {
            // It would move foreign-key checks of the transaction to
            // COMMIT, which a hook's over-approximated reads do not show.
            if q.trim_start()
                .to_ascii_uppercase()
                .starts_with("SET CONSTRAINTS")
            {
                return Err(fail("its body runs SET CONSTRAINTS"));
            }
            let t = touches_of(q).ok_or_else(|| fail(&format!("PostgreSQL cannot parse `{q}`")))?;
            if t.writes {
                return Err(fail("its body may write"));
            }
            if let Some(f) = t.functions.iter().find(|f| {
                let last = f.rsplit('.').next().unwrap_or(f);
                !(f.starts_with("pg_catalog.") || is_builtin(last) || self.cat.pure.contains(last))
            }) {
                return Err(fail(&format!("it calls `{f}`")));
            }
            for table in &t.tables {
                let last = table.rsplit('.').next().unwrap_or(table);
                let ident = Ident::new(last);
                let rel = find_rel(self.cat.schema, &self.cat.extras.aliases, &ident).ok_or_else(
                    || {
                        fail(&format!(
                            "it reads `{table}`, which the schema does not define"
                        ))
                    },
                )?;
                rels.insert(rel);
            }
        }
        let snip = Snippet {
            text: def.body.text.clone(),
            offset: def.body.offset,
            parsed: None,
        };
        let saved = std::mem::replace(&mut self.src.file, def.file.clone());
        let mut reads = vec![];
        for rel in rels {
            let q = self.new_statement(StmtType::PredSel, rel, &snip);
            self.out.statements[q].pread = self.all_attrs(rel);
            self.out.statements[q].read = self.all_attrs(rel);
            if let Some(sql) = &mut self.out.statements[q].sql {
                *sql = format!("reads of PL/pgSQL function `{name}`: {sql}");
            }
            reads.push(Body::Stmt(q));
        }
        self.src.file = saved;
        if !reads.is_empty() {
            pre.push(Body::Loop(Box::new(Body::Seq(reads))));
        }
        Ok(())
    }

    /// Add to `writes` the stored generated columns of `rel` whose inputs
    /// it writes: PostgreSQL recomputes them in the same row version.
    pub(super) fn with_generated(&self, rel: RelId, writes: &mut BTreeSet<usize>) {
        for g in self.cat.extras.generated.iter().filter(|g| g.rel == rel) {
            if g.inputs.iter().any(|i| writes.contains(i)) {
                writes.insert(g.column);
            }
        }
    }

    /// When PostgreSQL runs check `check` of foreign key `fi` in this
    /// transaction: its schema deferral, or as a `SET CONSTRAINTS … DEFERRED`
    /// of the program set it (`constraint_modes`).
    pub(super) fn when(&self, fi: usize, check: FkCheck) -> CheckTime {
        let d = self
            .cat
            .extras
            .deferred
            .get(fi)
            .copied()
            .unwrap_or_default();
        let restrict = match check {
            FkCheck::Parent => false,
            FkCheck::OnDelete => d.restrict_on_delete,
            FkCheck::OnUpdate => d.restrict_on_update,
        };
        if restrict || !d.deferrable {
            return CheckTime::Now;
        }
        match self.out.fk_modes.get(fi) {
            Some(FkMode::Deferred) => CheckTime::Commit,
            Some(FkMode::Both) => CheckTime::Both,
            _ if d.initially_deferred => CheckTime::Commit,
            _ => CheckTime::Now,
        }
    }

    /// How the transaction's `SET CONSTRAINTS … DEFERRED` statements set
    /// each foreign key: one before every other statement of the
    /// transaction defers the checks of the statements after it; one
    /// anywhere else (a branch, a loop, after a statement) may or may not
    /// have run before a check, so the check is lowered at both places
    /// (more reads, sound). `SET CONSTRAINTS … IMMEDIATE` runs the pending
    /// checks where it stands: not modelled, an error.
    pub(super) fn constraint_modes(&self, nodes: &[Node]) -> Result<Vec<FkMode>> {
        let mut modes = vec![FkMode::Schema; self.cat.schema.foreign_keys.len()];
        self.function_deferrals(nodes, &mut modes);
        let mut leading = true;
        for n in nodes {
            match n {
                // A SET CONSTRAINTS before BEGIN ran in a transaction of
                // its own in psql: it may not hold for this one.
                Node::Begin { .. } => modes
                    .iter_mut()
                    .filter(|m| **m == FkMode::Deferred)
                    .for_each(|m| *m = FkMode::Both),
                Node::SetConstraints { .. } => self.set_mode(n, leading, &mut modes)?,
                n => {
                    leading = false;
                    let mut err = Ok(());
                    each_set_constraints(std::slice::from_ref(n), &mut |s| {
                        if err.is_ok() {
                            err = self.set_mode(s, false, &mut modes);
                        }
                    });
                    err?;
                }
            }
        }
        Ok(modes)
    }

    /// The `SET CONSTRAINTS … DEFERRED` of the SQL functions the
    /// transaction calls (its statements and expressions, and the schema's
    /// DEFAULT and CHECK hooks): run somewhere in the transaction, so each
    /// named check may run at either place (more reads, sound).
    fn function_deferrals(&self, nodes: &[Node], modes: &mut [FkMode]) {
        if self.cat.deferrals.is_empty() {
            return;
        }
        let mut called: BTreeSet<String> = BTreeSet::new();
        each_function(nodes, &mut |f| {
            called.insert(f.rsplit('.').next().unwrap_or(f).to_lowercase());
        });
        for h in &self.cat.extras.hooks {
            if let Some(n) = h.call.name.last() {
                called.insert(n.to_lowercase());
            }
        }
        for names in called
            .iter()
            .filter_map(|f| self.cat.deferrals.get(f))
            .flatten()
        {
            let n = Node::SetConstraints {
                names: names.clone(),
                deferred: true,
                at: 0,
            };
            // Deferred only: cannot fail.
            let _ = self.set_mode(&n, false, modes);
        }
    }

    fn set_mode(&self, n: &Node, leading: bool, modes: &mut [FkMode]) -> Result<()> {
        let Node::SetConstraints {
            names,
            deferred,
            at,
        } = n
        else {
            return Ok(());
        };
        if !deferred {
            return Err(Diag::new("SET CONSTRAINTS … IMMEDIATE is not modelled")
                .help("PostgreSQL runs the pending checks of deferred constraints where it stands; declare the foreign key NOT DEFERRABLE or INITIALLY IMMEDIATE instead")
                .at(&self.src.file, *at, 3, "here"));
        }
        let fks = &self.cat.schema.foreign_keys;
        // A name isolint does not know (an unnamed key's PostgreSQL name):
        // every foreign key may be meant.
        let all = names.as_ref().is_none_or(|v| {
            v.iter()
                .any(|n| !fks.iter().any(|f| f.name.eq_ignore_ascii_case(n)))
        });
        for (fi, f) in fks.iter().enumerate() {
            let named = all
                || names
                    .iter()
                    .flatten()
                    .any(|n| f.name.eq_ignore_ascii_case(n));
            if named {
                modes[fi] = if leading && modes[fi] != FkMode::Both {
                    FkMode::Deferred
                } else {
                    FkMode::Both
                };
            }
        }
        Ok(())
    }

    /// Queue check `q` for COMMIT.
    pub(super) fn defer(&mut self, q: usize) {
        let once = self.pos.path.is_empty()
            && self.pos.loops.is_empty()
            && self.pos.prefix == 0
            && self.pos.sub_depth == 0
            && self.inl.inline_stack.is_empty();
        self.out.at_commit.push((q, once));
        // It runs at COMMIT, not in the statement that queued it.
        self.out.facts[q].part = None;
    }

    /// The transaction's body followed by the checks PostgreSQL runs at
    /// COMMIT. A check queued on one path, in a loop or in a function body
    /// may run any number of times: a loop (more executions than
    /// PostgreSQL's, so sound).
    pub(super) fn commit_checks(&mut self, body: Body) -> Body {
        if self.out.at_commit.is_empty() {
            return body;
        }
        let mut parts = vec![body];
        for (q, once) in std::mem::take(&mut self.out.at_commit) {
            parts.push(if once {
                Body::Stmt(q)
            } else {
                Body::Loop(Box::new(Body::Stmt(q)))
            });
        }
        Body::Seq(parts)
    }
}
