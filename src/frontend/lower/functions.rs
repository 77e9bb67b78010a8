//! Expressions outside statements and calls of user functions: their reads
//! are lowered (SQL functions inlined with their arguments bound), unknown
//! functions rejected; the audit that nothing was skipped.

use super::clauses::AGGREGATES;
use super::vocab::{ColumnRole, Term};
use super::{is_empty, push_seq, Lowerer};
use crate::frontend::sql::ddl::FunctionDef;
use crate::frontend::sql::procedural::{split_statements, ProcExpr};
use crate::frontend::sql::{parse_one, same_name, Snippet};
use crate::model::btp::Body;
use crate::model::error::{Diag, Result, SourceFile};
use crate::model::schema::{RelId, Schema};
use sqlparser::ast::{Expr, Ident, Query, Statement as Sql, TableFactor, Value};
use std::collections::{BTreeSet, HashMap};
use std::ops::ControlFlow;

/// A function's body statements, parsed once (SQL-language functions
/// only; others are rejected where they are called).
pub(super) type ParsedFunction<'a> = (&'a FunctionDef, Vec<(Snippet, Sql)>);

/// What `SET CONSTRAINTS … DEFERRED` statements the SQL functions run,
/// by function name: each statement's constraint names (`None`: ALL),
/// those of the functions it calls included.
pub(super) type Deferrals = HashMap<String, Vec<Option<Vec<String>>>>;

pub(super) fn parse_functions(
    defs: &[FunctionDef],
) -> Result<(Vec<ParsedFunction<'_>>, Deferrals)> {
    let mut out = vec![];
    let mut deferrals: Deferrals = HashMap::new();
    let mut calls: Vec<(String, Vec<String>)> = vec![];
    for d in defs {
        let mut stmts = vec![];
        if d.language == "sql" {
            for (s, e) in split_statements(&d.body.text) {
                let snip = Snippet {
                    text: d.body.text[s..e].to_string(),
                    offset: d.body.offset + s,
                    parsed: None,
                };
                if let Some(names) = set_constraints(d, &snip)? {
                    deferrals.entry(d.name.clone()).or_default().push(names);
                    continue;
                }
                let refs = crate::frontend::sql::gate::statement(&d.file, &snip, &snip.text)?;
                calls.push((d.name.clone(), refs.functions));
                let sql = parse_one(&d.file, &snip)?;
                stmts.push((snip, sql));
            }
        }
        out.push((d, stmts));
    }
    // A function that calls a deferring one defers as it does.
    loop {
        let mut changed = false;
        for (caller, callees) in &calls {
            for c in callees {
                let c = c.rsplit('.').next().unwrap_or(c).to_lowercase();
                let Some(v) = deferrals.get(&c).cloned() else {
                    continue;
                };
                let mine = deferrals.entry(caller.clone()).or_default();
                for n in v {
                    if !mine.contains(&n) {
                        mine.push(n);
                        changed = true;
                    }
                }
            }
        }
        if !changed {
            break;
        }
    }
    Ok((out, deferrals))
}

/// The definitions PostgreSQL runs: a `CREATE OR REPLACE` of a name and
/// signature defined before replaces that definition (in one file; in two
/// files which one is created last depends on the order they are loaded:
/// an error). Other signatures of a name are overloads, kept: a call of
/// an overloaded name is an error (`overloaded`).
pub(super) fn latest_definitions(defs: &[FunctionDef]) -> Result<Vec<FunctionDef>> {
    let mut out: Vec<FunctionDef> = vec![];
    for d in defs {
        let same = out
            .iter()
            .position(|e| e.name == d.name && e.signature == d.signature);
        if let Some(k) = same {
            if out[k].file.name != d.file.name {
                return Err(Diag::new(format!(
                    "function `{}({})` is defined in {} and again in {}",
                    d.name,
                    d.signature.join(", "),
                    out[k].file.name,
                    d.file.name
                ))
                .help("PostgreSQL runs the definition created last, which depends on the order the files are loaded; keep one")
                .at(&d.file, d.at, d.name.len().max(1), "defined again here"));
            }
            out.remove(k);
        }
        out.push(d.clone());
    }
    Ok(out)
}

/// A call of a schema or library function name with several signatures:
/// PostgreSQL picks the overload by the arguments' types, which isolint
/// does not resolve for these functions (it does for PL/pgSQL routine
/// files), so the call is a located error rather than a guess.
pub(super) fn overloaded(
    funcs: &[ParsedFunction<'_>],
    name: &str,
    file: &SourceFile,
    at: usize,
) -> Result<()> {
    let sigs: Vec<String> = funcs
        .iter()
        .filter(|(d, _)| d.name == name)
        .map(|(d, _)| format!("{}({})", d.name, d.signature.join(", ")))
        .collect();
    if sigs.len() < 2 {
        return Ok(());
    }
    Err(Diag::new(format!(
        "call of overloaded function `{name}` ({})",
        sigs.join(", ")
    ))
    .help("PostgreSQL runs the overload the argument types select; isolint does not resolve overloads of schema and library functions: give each overload a name of its own")
    .at(file, at, name.len().max(1), "called here"))
}

/// A SQL function's `SET CONSTRAINTS … DEFERRED` (PostgreSQL 15 runs it
/// there as in a program): its constraint names (`None`: ALL), or None
/// for any other statement. IMMEDIATE runs the pending checks where it
/// stands: not modelled, an error.
fn set_constraints(d: &FunctionDef, snip: &Snippet) -> Result<Option<Option<Vec<String>>>> {
    use crate::frontend::sql::pg::{self, NodeEnum};
    let stmt = pg::parse(&snip.text).ok().and_then(|p| {
        p.tree
            .stmts
            .first()
            .and_then(|r| r.stmt.as_ref())
            .and_then(|n| n.node.clone())
    });
    let Some(NodeEnum::ConstraintsSetStmt(c)) = stmt else {
        return Ok(None);
    };
    let at = snip.offset + (snip.text.len() - snip.text.trim_start().len());
    if !c.deferred {
        return Err(Diag::new("SET CONSTRAINTS … IMMEDIATE is not modelled")
            .help("PostgreSQL runs the pending checks of deferred constraints where it stands; declare the foreign key NOT DEFERRABLE or INITIALLY IMMEDIATE instead")
            .at(&d.file, at, 3, "here"));
    }
    let names: Vec<String> = c
        .constraints
        .iter()
        .filter_map(|n| match n.node.as_ref() {
            Some(NodeEnum::RangeVar(r)) => Some(r.relname.clone()),
            _ => None,
        })
        .collect();
    Ok(Some((!names.is_empty()).then_some(names)))
}

impl<'a> Lowerer<'a> {
    /// The reads an expression outside a statement performs (conditions,
    /// FOR bounds, RAISE arguments, assignments): its subqueries and
    /// user-function calls, in evaluation order.
    pub(super) fn expr_reads(&mut self, c: &ProcExpr) -> Result<Body> {
        let (q0, c0) = (self.inl.selects, self.inl.inlined);
        let mark = self.audit_mark();
        let mut pre = vec![];
        self.collect(
            &[],
            &c.expr,
            &c.snip,
            Some(&mut pre),
            ColumnRole::Read,
            &mut [],
        )?;
        let (q, n) = (self.inl.selects - q0, self.inl.inlined - c0);
        self.audit(&c.expr, &c.snip, q, n)?;
        if let Some(pg) = &c.pg {
            self.audit_pg(pg, mark, &c.snip)?;
        }
        Ok(Body::Seq(pre))
    }

    /// Where the statements and inlined functions of the source statement
    /// about to be lowered begin.
    pub(super) fn audit_mark(&self) -> (usize, usize) {
        (self.out.statements.len(), self.inl.inlined_names.len())
    }

    /// Fail closed against PostgreSQL's parse tree (issue 21): every
    /// relation the tree of the source statement references must be
    /// touched by a BTP statement lowered from it (FK checks, referential
    /// actions and inlined bodies count), and every function it calls must
    /// have been inlined, or be a built-in known to touch no table, or be
    /// listed in `pure_functions:`.
    pub(super) fn audit_pg(
        &self,
        pg: &crate::frontend::sql::gate::PgRefs,
        (stmts, inlined): (usize, usize),
        s: &Snippet,
    ) -> Result<()> {
        let rels: Vec<RelId> = self.out.statements[stmts.min(self.out.statements.len())..]
            .iter()
            .map(|st| st.rel)
            .collect();
        // A partition or inheritance child is lowered as its root
        // (`Extras::aliases`): its name is accounted for by the root's.
        let touched: Vec<String> = rels
            .iter()
            .map(|r| self.cat.schema.rel(*r).name.to_lowercase())
            .chain(
                self.cat
                    .extras
                    .aliases
                    .iter()
                    .filter(|(_, r)| rels.contains(r))
                    .map(|(n, _)| n.to_lowercase()),
            )
            .collect();
        // A CTE's name that no table has is no table (`PgRefs::ctes`); one
        // that shadows a table stays unaccounted for (fails closed).
        let ctes = pg.ctes.iter().filter(|c| {
            !self
                .cat
                .schema
                .relations
                .iter()
                .any(|r| r.name.eq_ignore_ascii_case(c))
                && !self
                    .cat
                    .extras
                    .aliases
                    .iter()
                    .any(|(n, _)| n.eq_ignore_ascii_case(c))
        });
        let touched: Vec<String> = touched.into_iter().chain(ctes.cloned()).collect();
        let inlined = &self.inl.inlined_names[inlined.min(self.inl.inlined_names.len())..];
        let known = |f: &str| is_builtin(f) || self.cat.pure.contains(f);
        let Some(missing) = unaccounted(pg, &touched, inlined, known) else {
            return Ok(());
        };
        let first = s.text.len() - s.text.trim_start().len();
        let (what, help) = match &missing {
            Missing::Table(t) => (
                format!("table `{t}`"),
                "isolint never drops a read or write: name the table in a position isolint lowers (FROM, JOIN, a subquery in WHERE or the SELECT list), or in a statement of its own".to_string(),
            ),
            Missing::Function(f) => (
                format!("function `{f}`"),
                format!("isolint never drops a read or write: if `{f}` reads and writes no table, list it under `pure_functions:` in isolint.yaml; otherwise call it where isolint inlines calls (the SELECT list, WHERE, SET, VALUES)"),
            ),
        };
        Err(Diag::new(format!(
            "PostgreSQL's parse of this statement references {what}, which isolint did not model"
        ))
        .help(help)
        .at(&self.src.file, s.offset + first, 6, "in this statement"))
    }

    /// Fail closed: every query in `node` must have been lowered and every
    /// user-function call inlined; a call of an unknown function is an
    /// error wherever it stands.
    pub(super) fn audit<V: sqlparser::ast::Visit>(
        &self,
        node: &V,
        s: &Snippet,
        queries: usize,
        calls: usize,
    ) -> Result<()> {
        struct Count {
            queries: usize,
            calls: Vec<(String, Ident)>,
        }
        impl sqlparser::ast::Visitor for Count {
            type Break = ();
            fn pre_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
                self.queries += 1;
                ControlFlow::Continue(())
            }
            // A function in FROM (from.rs) is a call like one in an
            // expression; UNNEST is the built-in `unnest`.
            fn pre_visit_table_factor(&mut self, f: &TableFactor) -> ControlFlow<()> {
                match f {
                    TableFactor::Table {
                        name,
                        args: Some(_),
                        ..
                    }
                    | TableFactor::Function { name, .. } => {
                        if let Some(i) = name.0.last().and_then(|p| p.as_ident()) {
                            let catalog = name.0.len() > 1
                                && name.0[0].to_string().eq_ignore_ascii_case("pg_catalog");
                            let n = i.value.to_lowercase();
                            let n = if catalog {
                                format!("pg_catalog.{n}")
                            } else {
                                n
                            };
                            self.calls.push((n, i.clone()));
                        }
                    }
                    _ => {}
                }
                ControlFlow::Continue(())
            }
            fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
                if let Expr::Function(f) = e {
                    if let Some(i) = f.name.0.last().and_then(|p| p.as_ident()) {
                        let qualified = f.name.0.len() > 1;
                        let n = if qualified
                            && f.name.0[0].to_string().eq_ignore_ascii_case("pg_catalog")
                        {
                            // Never a user function; `is_builtin` strips it.
                            format!("pg_catalog.{}", i.value.to_lowercase())
                        } else {
                            i.value.to_lowercase()
                        };
                        self.calls.push((n, i.clone()));
                    }
                }
                ControlFlow::Continue(())
            }
        }
        let mut c = Count {
            queries: 0,
            calls: vec![],
        };
        let _ = node.visit(&mut c);
        let mut user = 0;
        for (n, ident) in &c.calls {
            if self.cat.functions.iter().any(|(d, _)| &d.name == n) {
                user += 1;
            } else if !is_builtin(n) && !self.cat.pure.contains(n) {
                return Err(self.unknown_function(ident, s));
            }
        }
        if c.queries != queries || user != calls {
            let first = s.text.len() - s.text.trim_start().len();
            return Err(Diag::new("isolint cannot model a subquery or function call in this position")
                .help("move it into a statement of its own (SELECT … INTO :v) or into the WHERE clause; isolint never drops a read")
                .at(&self.src.file, s.offset + first, 6, "in this statement"));
        }
        Ok(())
    }

    pub(super) fn unknown_function(&self, ident: &Ident, s: &Snippet) -> Box<Diag> {
        let at = s.file_offset(ident.span.start.line, ident.span.start.column);
        if let Some(why) = crate::frontend::builtins::rejection(&ident.value.to_lowercase()) {
            return Diag::new(format!("isolint cannot model a call of `{}`: it {why}", ident.value))
                .help("read the data with statements of the program instead (isolint never drops a read), or list it under `pure_functions:` in isolint.yaml if this call reaches no table")
                .at(&self.src.file, at, ident.value.len().max(1), "not modelled");
        }
        Diag::new(format!("call of unknown function `{}`", ident.value))
            .help(format!(
                "isolint inlines the functions it has the definition of: add `CREATE FUNCTION {}(…) … LANGUAGE sql AS $$ … $$;` to the schema file, or, if it reads and writes no table, list it under `pure_functions:` in isolint.yaml",
                ident.value
            ))
            .at(&self.src.file, at, ident.value.len().max(1), "unknown function")
    }

    /// A call of a user function: its body's statements inlined before the
    /// calling statement, parameters bound to the arguments' values. A
    /// call evaluated per row (inside a statement with tables) may run any
    /// number of times: a loop.
    pub(super) fn call(
        &mut self,
        f: &sqlparser::ast::Function,
        per_row: bool,
        snip: &Snippet,
        pre: &mut Vec<Body>,
    ) -> Result<()> {
        use sqlparser::ast::{FunctionArg, FunctionArgExpr, FunctionArguments};
        let Some(ident) = f.name.0.last().and_then(|p| p.as_ident()).cloned() else {
            return Ok(());
        };
        let name = ident.value.to_lowercase();
        let funcs: &'a [ParsedFunction<'a>] = &self.cat.functions;
        let catalog =
            f.name.0.len() > 1 && f.name.0[0].to_string().eq_ignore_ascii_case("pg_catalog");
        let found = funcs.iter().find(|(d, _)| !catalog && d.name == name);
        if found.is_some() {
            let at = snip.file_offset(ident.span.start.line, ident.span.start.column);
            overloaded(funcs, &name, &self.src.file, at)?;
        }
        let Some((def, body)) = found else {
            if is_builtin(&name) || !catalog && self.cat.pure.contains(&name) {
                return Ok(());
            }
            return Err(self.unknown_function(&ident, snip));
        };
        let def: &'a FunctionDef = def;
        let at = snip.file_offset(ident.span.start.line, ident.span.start.column);
        if def.language != "sql" {
            return Err(Diag::new(format!(
                "function `{}` is written in {}; isolint inlines LANGUAGE sql functions only",
                ident.value, def.language
            ))
            .help("rewrite it in SQL, or list it under `pure_functions:` in isolint.yaml if it reads and writes no table")
            .at(&self.src.file, at, ident.value.len(), "called here"));
        }
        if self.inl.inline_stack.contains(&name) {
            return Err(Diag::new(format!("recursive call of function `{}`", ident.value))
                .help("isolint inlines function bodies and cannot unfold recursion; call it from the program instead")
                .at(&self.src.file, at, ident.value.len(), "recursive call"));
        }
        self.inl.instances += 1;
        let prefix = format!("__{name}_{}", self.inl.instances);
        let mut bound: Vec<Option<Term>> = vec![None; def.params.len()];
        if let FunctionArguments::List(list) = &f.args {
            for (k, a) in list.args.iter().enumerate() {
                let (slot, e) = match a {
                    FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => (Some(k), e),
                    FunctionArg::Named {
                        name,
                        arg: FunctionArgExpr::Expr(e),
                        ..
                    }
                    | FunctionArg::ExprNamed {
                        name: sqlparser::ast::Expr::Identifier(name),
                        arg: FunctionArgExpr::Expr(e),
                        ..
                    } => (
                        def.params
                            .iter()
                            .position(|p| p.eq_ignore_ascii_case(&name.value)),
                        e,
                    ),
                    _ => continue,
                };
                let t = self.term(e);
                if let Some(slot) = slot.filter(|s| *s < bound.len()) {
                    bound[slot] = Some(t);
                }
            }
        }
        for (k, t) in bound.into_iter().enumerate() {
            let t = t.unwrap_or_else(|| self.vars.fresh());
            self.vars.env.insert(format!("{prefix}_{k}"), t);
        }
        let saved_file = std::mem::replace(&mut self.src.file, def.file.clone());
        let saved_counts = (self.inl.selects, self.inl.inlined);
        self.inl.inlined_names.push(name.clone());
        self.inl.inline_stack.push(name);
        self.pos.sub_depth += 1;
        let mut parts = vec![];
        let mut result = Ok(());
        // Each query of a VOLATILE body takes a snapshot of its own.
        let snap = self.stage.snap;
        for (bsnip, sql) in body {
            if def.volatile {
                self.stage.groups += 1;
                self.stage.snap = Some((self.stage.groups, self.pos.loops.len()));
            }
            let sql = bind_params(sql, def, &prefix, self.cat.schema);
            // The body was gated when parsed (`parse_functions`); the
            // call is what the caller's audit accounts for.
            match self.lower_audited(&sql, &[], bsnip, None, false, None) {
                Ok(b) => push_seq(&mut parts, b),
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        self.stage.snap = snap;
        self.pos.sub_depth -= 1;
        self.inl.inline_stack.pop();
        self.src.file = saved_file;
        (self.inl.selects, self.inl.inlined) = saved_counts;
        self.inl.inlined += 1;
        result?;
        let b = Body::Seq(parts);
        if !is_empty(&b) {
            let b = if per_row { Body::Loop(Box::new(b)) } else { b };
            // A VOLATILE body runs after the statement's snapshot reads
            // (order.rs); STABLE and IMMUTABLE ones read that snapshot.
            match self.stage.defer.as_mut().filter(|_| def.volatile) {
                Some(d) => d.push(b),
                None => pre.push(b),
            }
        }
        Ok(())
    }
}

/// What PostgreSQL's tree references and the lowering did not account for.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Missing {
    Table(String),
    Function(String),
}

/// The first relation of `pg` no lowered statement touched, or function
/// neither inlined nor `known` (built-in or pure). `pg_catalog.` names
/// are PostgreSQL's own, the parser writes some constructs so
/// (`EXTRACT`, `SUBSTRING … FROM`, `TRIM`, `AT TIME ZONE` …).
pub(super) fn unaccounted(
    pg: &crate::frontend::sql::gate::PgRefs,
    touched: &[String],
    inlined: &[String],
    known: impl Fn(&str) -> bool,
) -> Option<Missing> {
    if let Some(t) = pg
        .tables
        .iter()
        .find(|t| !touched.iter().any(|u| u.eq_ignore_ascii_case(t)))
    {
        return Some(Missing::Table(t.clone()));
    }
    pg.functions
        .iter()
        .find(|f| {
            let name = f.strip_prefix("pg_catalog.").unwrap_or(f).to_lowercase();
            let generated =
                f.starts_with("pg_catalog.") && PARSER_BUILTINS.contains(&name.as_str());
            !(generated || known(&name) || inlined.contains(&name))
        })
        .map(|f| Missing::Function(f.clone()))
}

/// Functions PostgreSQL's grammar writes for SQL-standard syntax, as
/// `pg_catalog.f`: none touches a table.
const PARSER_BUILTINS: &[&str] = &[
    "extract",
    "date_part",
    "substring",
    "btrim",
    "ltrim",
    "rtrim",
    "position",
    "overlay",
    "timezone",
    "overlaps",
    "like_escape",
    "similar_to_escape",
    "similar_escape",
    "normalize",
    "is_normalized",
    "pg_collation_for",
    "xmlexists",
    "now",
];

/// PostgreSQL built-ins that read and write no table. Sequences
/// (`nextval`, `setval`) are outside transactions: a fresh value, no
/// conflict. Advisory locks only ever order more, so ignoring them is
/// sound.
pub(super) const BUILTINS: &[&str] = &[
    "abs",
    "age",
    // `ROW(a, b)` / `row(a, b)`: PostgreSQL's grammar reads it as a row
    // constructor (a keyword, never a function call); its arguments are
    // lowered like any expression's.
    "row",
    // `ARRAY(SELECT …)`: its query is lowered as a subquery (clauses.rs).
    "array",
    "array_append",
    "array_cat",
    "array_length",
    "array_position",
    "array_prepend",
    "array_remove",
    "array_to_string",
    "ascii",
    "btrim",
    "cardinality",
    "cbrt",
    "ceil",
    "ceiling",
    "char_length",
    "character_length",
    "chr",
    "clock_timestamp",
    "coalesce",
    "concat",
    "concat_ws",
    "current_date",
    "current_time",
    "current_timestamp",
    "current_user",
    "currval",
    "date_part",
    "date_trunc",
    "decode",
    "degrees",
    "div",
    "encode",
    "exp",
    "extract",
    "floor",
    "format",
    "gen_random_uuid",
    "generate_series",
    "greatest",
    "hashtext",
    "initcap",
    "json_build_array",
    "json_build_object",
    "jsonb_build_array",
    "jsonb_build_object",
    "jsonb_set",
    "lastval",
    "least",
    "left",
    "length",
    "ln",
    "localtime",
    "localtimestamp",
    "log",
    "lower",
    "lpad",
    "ltrim",
    "make_date",
    "make_interval",
    "make_timestamp",
    "md5",
    "mod",
    "nextval",
    "now",
    "nullif",
    "octet_length",
    "pg_advisory_lock",
    "pg_advisory_unlock",
    "pg_advisory_xact_lock",
    "pg_advisory_xact_lock_shared",
    "pg_sleep",
    "pi",
    "position",
    "power",
    "radians",
    "random",
    "regexp_match",
    "regexp_matches",
    "regexp_replace",
    "regexp_split_to_array",
    "repeat",
    "replace",
    "reverse",
    "right",
    "round",
    "row_number",
    "rank",
    "dense_rank",
    "lag",
    "lead",
    "first_value",
    "last_value",
    "ntile",
    "percent_rank",
    "cume_dist",
    "rpad",
    "rtrim",
    "session_user",
    "setval",
    "sign",
    "split_part",
    "sqrt",
    "statement_timestamp",
    "string_to_array",
    "strpos",
    "substr",
    "substring",
    "timeofday",
    "to_char",
    "to_date",
    "to_json",
    "to_jsonb",
    "to_number",
    "to_timestamp",
    "transaction_timestamp",
    "translate",
    "trim",
    "trunc",
    "unnest",
    "upper",
    "uuid_generate_v4",
    "width_bucket",
    "ifnull",
    "nvl",
    "isnull",
    "date",
    "time",
    "timestamp",
    "interval",
    "numeric",
    "int4",
    "int8",
    "text",
    "varchar",
];

/// A built-in isolint models as a value: PostgreSQL 15's catalogue
/// (`frontend::builtins`, minus the functions that reach user data) or
/// the hand list above (SQL forms sqlparser shows as calls, and their
/// notes); a `pg_catalog.` prefix names the built-in.
pub fn is_builtin(name: &str) -> bool {
    let name = name.strip_prefix("pg_catalog.").unwrap_or(name);
    if crate::frontend::builtins::rejection(name).is_some() {
        return false;
    }
    BUILTINS.contains(&name)
        || AGGREGATES.contains(&name)
        || crate::frontend::builtins::modelled(name)
}

/// A function body's statement with its parameters (named, `fn.param`,
/// or `$n`) replaced by placeholders bound to the call's arguments. As in
/// PostgreSQL, a column of a table the statement reads from takes
/// precedence over a parameter of the same name; a column of any other
/// table does not (checked on PostgreSQL 15: `f(g int) … SELECT count(*)
/// FROM t1 WHERE grp = g` with a column `g` only in t2 counts group g).
pub(super) fn bind_params(sql: &Sql, def: &FunctionDef, prefix: &str, schema: &Schema) -> Sql {
    let mut sql = sql.clone();
    let (scope, outputs) = tables_in_scope(&sql, schema);
    let is_column = |n: &str| {
        outputs.contains(&n.to_lowercase())
            || scope.iter().any(|r| {
                schema.relations[*r]
                    .attributes
                    .iter()
                    .any(|a| a.eq_ignore_ascii_case(n))
            })
    };
    let slot_of = |n: &str| {
        def.params
            .iter()
            .position(|p| !p.is_empty() && p.eq_ignore_ascii_case(n))
    };
    let _ = sqlparser::ast::visit_expressions_mut(&mut sql, |e| {
        let slot = match e {
            Expr::Identifier(i) if !is_column(&i.value) => slot_of(&i.value),
            Expr::CompoundIdentifier(v)
                if v.len() == 2 && v[0].value.eq_ignore_ascii_case(&def.name) =>
            {
                slot_of(&v[1].value)
            }
            Expr::Value(v) => match &v.value {
                Value::Placeholder(p) if p.starts_with('$') => {
                    p[1..].parse::<usize>().ok().and_then(|n| n.checked_sub(1))
                }
                _ => None,
            },
            _ => None,
        };
        if let Some(k) = slot {
            *e = Expr::Value(Value::Placeholder(format!(":{prefix}_{k}")).with_empty_span());
        }
        ControlFlow::<()>::Continue(())
    });
    sql
}

/// The schema tables whose columns a name in `sql` may denote: every
/// table of a FROM, JOIN, UPDATE or DELETE anywhere in it (all scopes at
/// once: a name kept as a column where PostgreSQL sees the parameter is
/// then an error of the lowering, never a lost read), and the target of
/// an INSERT that has ON CONFLICT or RETURNING (its columns are visible
/// there; in VALUES they are not); and the column names that derived
/// tables and CTEs give their outputs (aliases, `AS x(a, b)`).
fn tables_in_scope(sql: &Sql, schema: &Schema) -> (BTreeSet<RelId>, BTreeSet<String>) {
    use sqlparser::ast::{Query, SelectItem, SetExpr, TableObject, Visit, Visitor};
    struct V<'s>(&'s Schema, BTreeSet<RelId>, BTreeSet<String>);
    impl V<'_> {
        fn add(&mut self, name: &sqlparser::ast::ObjectName) {
            if let Some(i) = name.0.last().and_then(|p| p.as_ident()) {
                if let Some(r) = self.0.relations.iter().position(|r| same_name(&r.name, i)) {
                    self.1.insert(r);
                }
            }
        }
        fn alias(&mut self, a: &Option<sqlparser::ast::TableAlias>) {
            for c in a.iter().flat_map(|a| &a.columns) {
                self.2.insert(c.name.value.to_lowercase());
            }
        }
        fn outputs(&mut self, q: &Query) {
            if let SetExpr::Select(s) = &*q.body {
                for item in &s.projection {
                    if let SelectItem::ExprWithAlias { alias, .. } = item {
                        self.2.insert(alias.value.to_lowercase());
                    }
                }
            }
        }
    }
    impl Visitor for V<'_> {
        type Break = ();
        fn pre_visit_table_factor(&mut self, t: &TableFactor) -> ControlFlow<()> {
            match t {
                TableFactor::Table { name, alias, .. } => {
                    self.add(name);
                    self.alias(alias);
                }
                TableFactor::Derived {
                    subquery, alias, ..
                } => {
                    self.outputs(subquery);
                    self.alias(alias);
                }
                _ => {}
            }
            ControlFlow::Continue(())
        }
        fn pre_visit_query(&mut self, q: &Query) -> ControlFlow<()> {
            for cte in q.with.iter().flat_map(|w| &w.cte_tables) {
                self.outputs(&cte.query);
                self.alias(&Some(cte.alias.clone()));
            }
            ControlFlow::Continue(())
        }
        fn pre_visit_statement(&mut self, s: &Sql) -> ControlFlow<()> {
            if let Sql::Insert(ins) = s {
                if let (TableObject::TableName(n), true) =
                    (&ins.table, ins.on.is_some() || ins.returning.is_some())
                {
                    self.add(n);
                }
            }
            ControlFlow::Continue(())
        }
    }
    let mut v = V(schema, BTreeSet::new(), BTreeSet::new());
    let _ = sql.visit(&mut v);
    (v.1, v.2)
}

/// Whether evaluating `e` may read a table as the lowering sees it: it
/// holds a subquery, `ARRAY(SELECT …)`, or a call of a function that is no
/// built-in. Such an expression becomes BTP statements of its own (replay
/// runs it as a step of its own).
pub fn may_read(e: &Expr) -> bool {
    let found = sqlparser::ast::visit_expressions(e, |x| match x {
        Expr::Subquery(_) | Expr::Exists { .. } | Expr::InSubquery { .. } => ControlFlow::Break(()),
        Expr::Function(f) => {
            let name = f
                .name
                .0
                .last()
                .and_then(|p| p.as_ident())
                .map(|i| i.value.to_lowercase())
                .unwrap_or_default();
            if super::clauses::array_subquery(f).is_some() || !is_builtin(&name) {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        }
        _ => ControlFlow::Continue(()),
    });
    found.is_break()
}
