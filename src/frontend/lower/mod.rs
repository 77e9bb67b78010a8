//! Lowering SQL programs to BTPs (Section 5; Figures 2 and 5), with
//! foreign-key and same-tuple constraints inferred. Rules and soundness
//! arguments: docs/sql-frontend.md.
//!
//! Values are tracked symbolically: a parameter `:p` never assigned is one
//! symbol; `SELECT c INTO :v` / `RETURNING c INTO :v` of a key-based
//! statement q makes `:v` the term "column c of q's tuple"; anything else
//! (expressions, aggregates, values read by a predicate-based statement,
//! variables after an IF or around a loop that assigns them, loop
//! variables) is a fresh opaque symbol. Equalities in WHERE and INSERT
//! VALUES unite a statement's columns with these terms; a constraint is
//! inferred only when the union-find proves the columns equal. Variables
//! assigned in a loop get fresh symbols at the loop's entry and exit, so a
//! proof never mixes iterations (the engine links statements of the same
//! iteration only).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::ops::ControlFlow;
use std::path::Path;

use serde::Deserialize;
use sqlparser::ast::{
    AssignmentTarget, BinaryOperator, Expr, FromTable, Ident, Query, SelectItem, SetExpr, Spanned,
    Statement as Sql, TableFactor, TableObject, TableWithJoins, UnaryOperator, Value,
};

use crate::btp::{
    validate, Body, Constraint, ConstraintKind, Origin, Program, Statement, StmtType, Workload,
};
use crate::error::{did_you_mean, Diag, Result, SourceFile, Warning};
use crate::load::{check_size, Loaded};
use crate::schema::{AttrSet, RelId, Schema};
use crate::sql::ddl::{parse_ddl, FkAction, FunctionDef};
use crate::sql::procedural::{
    abbreviation, parse_program, split_statements, Cond, LoopHead, Node, Stmt,
};
use crate::sql::{parse_one, same_name, Snippet};

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Manifest {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    schema: Option<String>,
    /// Program order (file stems); the rest follow by file name.
    #[serde(default)]
    programs: Vec<String>,
    /// User functions that touch no table (calls of other unknown
    /// functions are errors).
    #[serde(default)]
    pure_functions: Vec<String>,
}

/// What the lowering needs besides the schema and the program files.
#[derive(Default)]
pub struct Context {
    /// `CREATE FUNCTION`s, inlined where called.
    pub functions: Vec<FunctionDef>,
    /// (ON DELETE, ON UPDATE) per foreign key of the schema.
    pub fk_actions: Vec<(FkAction, FkAction)>,
    /// Lower-case names of user functions declared free of table access.
    pub pure_functions: Vec<String>,
    /// Views of the schema (not expanded: using one is an error).
    pub views: Vec<String>,
}

/// Load a directory of `.sql` programs with its schema.
pub fn load_dir(dir: &Path, schema_override: Option<&Path>) -> Result<Loaded> {
    let manifest_path = dir.join("isolint.yaml");
    let manifest: Manifest = if manifest_path.exists() {
        let f = SourceFile::read(&manifest_path)?;
        yaml_serde::from_str(&f.text).map_err(|e| {
            let d = Diag::new(format!("malformed manifest: {}", e.to_string().split(" at line ").next().unwrap_or("")))
                .help("isolint.yaml may set `schema:` (path relative to the directory), `description:` and `name:`");
            match e.location() {
                Some(l) => d.at_line_col(&f, l.line(), l.column(), "here"),
                None => d,
            }
        })?
    } else {
        Manifest::default()
    };
    let schema_path = match (schema_override, &manifest.schema) {
        (Some(p), _) => p.to_path_buf(),
        (None, Some(s)) => dir.join(s),
        (None, None) => {
            return Err(
                Diag::new(format!("no schema for {}", dir.display())).help(format!(
                    "pass --schema FILE, or add `schema: ../../schemas/NAME.sql` to {}",
                    manifest_path.display()
                )),
            )
        }
    };
    if !schema_path.exists() {
        return Err(Diag::new(format!("schema file {} does not exist", schema_path.display()))
            .help("check the `schema:` path in isolint.yaml (relative to the workload directory) or the --schema argument"));
    }
    let ddl = parse_ddl(&SourceFile::read(&schema_path)?)?;
    let schema = ddl.schema;
    let mut context = Context {
        functions: ddl.functions,
        fk_actions: ddl.fk_actions,
        views: ddl.views,
        pure_functions: manifest
            .pure_functions
            .iter()
            .map(|f| f.to_lowercase())
            .collect(),
    };
    let schema_canon = schema_path.canonicalize().ok();
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| Diag::new(format!("cannot read directory {}: {e}", dir.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "sql"))
        // The schema may live beside the programs.
        .filter(|p| schema_canon.is_none() || p.canonicalize().ok() != schema_canon)
        .collect();
    files.sort();
    let stem = |p: &std::path::PathBuf| {
        p.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    for name in &manifest.programs {
        if !files.iter().any(|f| &stem(f) == name) {
            return Err(Diag::new(format!("{} lists program `{name}`, but there is no {name}.sql", manifest_path.display()))
                .help("the `programs:` list of isolint.yaml orders the .sql files of the directory by file stem"));
        }
    }
    files.sort_by_key(|f| {
        manifest
            .programs
            .iter()
            .position(|n| *n == stem(f))
            .unwrap_or(usize::MAX)
    });
    if files.is_empty() {
        return Err(Diag::new(format!("{} contains no .sql programs", dir.display()))
            .help("a workload directory holds one .sql file per transaction program (program name = file stem)"));
    }
    let mut sources: Vec<SourceFile> = vec![];
    for p in &files {
        let f = SourceFile::read(p)?;
        // A file of CREATE FUNCTIONs only is a library, not a program.
        match function_library(&f)? {
            Some(defs) => context.functions.extend(defs),
            None => sources.push(f),
        }
    }
    if sources.is_empty() {
        return Err(Diag::new(format!("{} contains no .sql programs", dir.display()))
            .help("a workload directory holds one .sql file per transaction program (program name = file stem)"));
    }
    let name = manifest
        .name
        .clone()
        .or_else(|| {
            let d = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
            d.file_name().map(|n| n.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| "workload".into());
    let (workload, warnings) = lower_programs_with(
        name,
        manifest.description.clone(),
        schema,
        &sources,
        &context,
    )?;
    check_size(&workload)?;
    Ok(Loaded { workload, warnings })
}

/// The functions of a file that holds only `CREATE FUNCTION` statements.
fn function_library(f: &SourceFile) -> Result<Option<Vec<FunctionDef>>> {
    let starts_with_create = f.text[crate::sql::procedural::blank_prefix(&f.text)..]
        .get(..6)
        .is_some_and(|w| w.eq_ignore_ascii_case("create"));
    if !starts_with_create {
        return Ok(None);
    }
    let snip = Snippet {
        text: f.text.to_string(),
        offset: 0,
    };
    let Ok(stmts) = crate::sql::parse_statements(f, &snip) else {
        return Ok(None);
    };
    if stmts.is_empty() || !stmts.iter().all(|s| matches!(s, Sql::CreateFunction(_))) {
        return Ok(None);
    }
    let mut defs = vec![];
    for s in &stmts {
        if let Sql::CreateFunction(cf) = s {
            defs.push(crate::sql::ddl::function_def(f, &snip, cf)?);
        }
    }
    Ok(Some(defs))
}

/// Lower already-read program files against a schema.
pub fn lower_programs(
    name: String,
    description: Option<String>,
    schema: Schema,
    sources: &[SourceFile],
) -> Result<(Workload, Vec<Warning>)> {
    lower_programs_with(name, description, schema, sources, &Context::default())
}

/// A program's top level cut at its COMMITs: one transaction each.
fn transactions(tree: Vec<Node>) -> Vec<Vec<Node>> {
    let mut out = vec![vec![]];
    for n in tree {
        match n {
            Node::Commit { .. } => out.push(vec![]),
            n => out.last_mut().map_or((), |v| v.push(n)),
        }
    }
    // A segment with no statement (only BEGIN, or nothing after the last
    // COMMIT) is no transaction.
    let has_work = |v: &Vec<Node>| v.iter().any(|n| !matches!(n, Node::Begin { .. }));
    let levels: Vec<Node> = out
        .iter()
        .flatten()
        .filter(|n| matches!(n, Node::Begin { level: Some(_), .. }))
        .cloned()
        .collect();
    let mut kept: Vec<Vec<Node>> = out.into_iter().filter(has_work).collect();
    if kept.is_empty() {
        kept.push(levels);
    }
    kept
}

/// Lower program files with the function definitions, foreign-key actions
/// and pure functions of `ctx`.
pub fn lower_programs_with(
    name: String,
    description: Option<String>,
    schema: Schema,
    sources: &[SourceFile],
    ctx: &Context,
) -> Result<(Workload, Vec<Warning>)> {
    // Parse everything first: UNIQUE keys count only if no UPDATE assigns
    // them, which needs the whole workload.
    let mut trees = vec![];
    for f in sources {
        trees.push(transactions(parse_program(f)?));
    }
    let functions = parse_functions(&ctx.functions)?;
    let mut assigned: HashSet<(RelId, usize)> = HashSet::new();
    for tree in &trees {
        for t in tree {
            each_stmt(t, &mut |st| {
                assigned_columns(&schema, &st.sql, &mut assigned)
            });
        }
    }
    for (_, stmts) in &functions {
        for (_, sql) in stmts {
            assigned_columns(&schema, sql, &mut assigned);
        }
    }
    // Referential actions write the referencing columns.
    for (fk, (del, upd)) in schema.foreign_keys.iter().zip(&ctx.fk_actions) {
        if *del != FkAction::NoAction && *del != FkAction::Cascade || *upd != FkAction::NoAction {
            assigned.extend(fk.columns.iter().map(|(d, _)| (fk.domain, *d)));
        }
    }
    let pure: HashSet<String> = ctx.pure_functions.iter().cloned().collect();
    let mut programs = vec![];
    let mut warnings = vec![];
    let mut counter = 0usize;
    for (f, tree) in sources.iter().zip(&trees) {
        let stem = Path::new(&f.name)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        if tree.len() > 1 {
            warnings.push(Warning {
                file: f.name.clone(),
                line: 1,
                message: format!(
                    "COMMIT splits this program into {} transactions, analysed as programs {stem}.1 … {stem}.{}",
                    tree.len(),
                    tree.len()
                ),
            });
        }
        for (k, nodes) in tree.iter().enumerate() {
            let mut l = Lowerer {
                schema: &schema,
                file: f,
                assigned: &assigned,
                functions: &functions,
                fk_actions: &ctx.fk_actions,
                views: &ctx.views,
                pure: &pure,
                statements: vec![],
                facts: vec![],
                env: HashMap::new(),
                phis: vec![],
                path: vec![],
                next_if: 0,
                scopes: vec![],
                outer_hits: vec![],
                fresh: 0,
                loops: vec![],
                next_loop: 0,
                null_tested: null_tested(nodes),
                stmt_may_miss: false,
                sub_depth: 0,
                selects: 0,
                inlined: 0,
                inline_stack: vec![],
                instances: 0,
                weak_lock: false,
                counter: &mut counter,
                warnings: &mut warnings,
            };
            let (body, _) = l.block(nodes)?;
            let body = match body {
                Some(b) => b,
                None => {
                    // Every path aborts: the program never commits anything.
                    l.truncate(0);
                    l.warnings.push(Warning {
                        file: f.name.clone(),
                        line: 1,
                        message:
                            "every path of this program ends in ROLLBACK or RAISE; it commits nothing"
                                .into(),
                    });
                    Body::Seq(vec![])
                }
            };
            l.apply_may_miss();
            let constraints = l.infer_constraints();
            let (name, abbrev) = if tree.len() > 1 {
                (
                    format!("{stem}.{}", k + 1),
                    abbreviation(f).map(|a| format!("{a}.{}", k + 1)),
                )
            } else {
                (stem.clone(), abbreviation(f))
            };
            if l.statements.is_empty() {
                l.warnings.push(Warning {
                    file: f.name.clone(),
                    line: 1,
                    message: format!(
                        "program `{name}` has no SQL statement on any path that commits: it is analysed as an empty transaction"
                    ),
                });
            }
            programs.push(Program {
                name,
                abbrev,
                statements: l.statements,
                body,
                constraints,
                file: Some(f.name.clone()),
            });
        }
    }
    let w = Workload {
        name,
        description,
        schema,
        programs,
    };
    if let Err(inv) = validate(&w) {
        return Err(Diag::new(format!(
            "internal error: the lowered BTPs are invalid: {}",
            inv.message
        ))
        .help("please report this with the SQL that caused it"));
    }
    Ok((w, warnings))
}

/// Columns that some UPDATE (or ON CONFLICT … DO UPDATE) assigns.
fn assigned_columns(schema: &Schema, sql: &Sql, out: &mut HashSet<(RelId, usize)>) {
    let mut note = |name: &sqlparser::ast::ObjectName,
                    assignments: &[sqlparser::ast::Assignment]| {
        let Some(rel) = name
            .0
            .last()
            .and_then(|p| p.as_ident())
            .and_then(|i| find_rel(schema, i))
        else {
            return;
        };
        for a in assignments {
            for col in assignment_columns(&a.target) {
                if let Some(c) = schema
                    .rel(rel)
                    .attributes
                    .iter()
                    .position(|x| same_name(x, &col))
                {
                    out.insert((rel, c));
                }
            }
        }
    };
    match sql {
        Sql::Update(u) => {
            if let TableFactor::Table { name, .. } = &u.table.relation {
                note(name, &u.assignments);
            }
        }
        Sql::Insert(ins) => {
            let TableObject::TableName(name) = &ins.table else {
                return;
            };
            match &ins.on {
                Some(sqlparser::ast::OnInsert::DuplicateKeyUpdate(a)) => note(name, a),
                Some(sqlparser::ast::OnInsert::OnConflict(c)) => {
                    if let sqlparser::ast::OnConflictAction::DoUpdate(d) = &c.action {
                        note(name, &d.assignments);
                    }
                }
                _ => {}
            }
        }
        _ => {}
    }
}

/// A function's body statements, parsed once (SQL-language functions
/// only; others are rejected where they are called).
type ParsedFunction<'a> = (&'a FunctionDef, Vec<(Snippet, Sql)>);

fn parse_functions(defs: &[FunctionDef]) -> Result<Vec<ParsedFunction<'_>>> {
    let mut out = vec![];
    for d in defs {
        let mut stmts = vec![];
        if d.language == "sql" {
            for (s, e) in split_statements(&d.body.text) {
                let snip = Snippet {
                    text: d.body.text[s..e].to_string(),
                    offset: d.body.offset + s,
                };
                let sql = parse_one(&d.file, &snip)?;
                stmts.push((snip, sql));
            }
        }
        out.push((d, stmts));
    }
    Ok(out)
}

fn assignment_columns(t: &AssignmentTarget) -> Vec<Ident> {
    let names = match t {
        AssignmentTarget::ColumnName(n) => vec![n],
        AssignmentTarget::Tuple(v) => v.iter().collect(),
    };
    names
        .into_iter()
        .filter_map(|n| n.0.last().and_then(|p| p.as_ident()).cloned())
        .collect()
}

fn find_rel(schema: &Schema, i: &Ident) -> Option<RelId> {
    schema.relations.iter().position(|r| same_name(&r.name, i))
}

/// Symbolic values: see the module comment.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Term {
    Param(String),
    Lit(String),
    Fresh(usize),
    /// Column `attr` of the tuple statement `stmt` touches.
    Col(usize, usize),
    /// The value after an IF of a variable some branch assigned: index
    /// into `Lowerer::phis`, resolved per path.
    Phi(usize),
    /// Element `index` of the array parameter or variable `array`.
    Elem(Box<Term>, Box<Term>),
}

/// What FK and same-tuple inference needs to know about a statement.
#[derive(Debug, Clone, Default)]
struct Facts {
    /// Columns the statement pins to a value (WHERE equalities, VALUES).
    bound: HashMap<usize, Term>,
    /// The IF branches the statement is in: (IF id, branch index).
    path: Vec<(usize, usize)>,
    /// Columns the statement writes through SET (they change the tuple).
    assigns: BTreeSet<usize>,
    /// The key (column set) that made it key-based, if any.
    key: Option<Vec<usize>>,
    /// The program goes on when the keyed row is missing (the paper's
    /// Section 5.4 assumption fails): lowered as predicate-based over
    /// `pred` and the key (`apply_may_miss`).
    may_miss: bool,
    /// WHERE and join columns.
    pred: BTreeSet<usize>,
}

struct Lowerer<'a> {
    schema: &'a Schema,
    file: &'a SourceFile,
    assigned: &'a HashSet<(RelId, usize)>,
    functions: &'a [ParsedFunction<'a>],
    fk_actions: &'a [(FkAction, FkAction)],
    views: &'a [String],
    pure: &'a HashSet<String>,
    statements: Vec<Statement>,
    facts: Vec<Facts>,
    env: HashMap<String, Term>,
    /// Phi terms: (IF id, value per branch, the implicit ELSE last).
    phis: Vec<(usize, Vec<Term>)>,
    path: Vec<(usize, usize)>,
    next_if: usize,
    /// Tables of the statements enclosing the subquery being lowered,
    /// outermost first, and the outer columns it referenced (correlation).
    scopes: Vec<Vec<TableRef>>,
    outer_hits: Vec<Vec<(usize, usize)>>,
    fresh: usize,
    loops: Vec<usize>,
    next_loop: usize,
    /// Variables the program tests for NULL (IS NULL, COALESCE, …): a
    /// key-based read INTO one of them may find no row.
    null_tested: HashSet<String>,
    /// The statement being lowered may find no row (see `statement`).
    stmt_may_miss: bool,
    /// Positive while lowering a subquery, an expression, a FOR query or a
    /// function body: a key-based read there never aborts when its row
    /// is missing, so it is predicate-based.
    sub_depth: usize,
    /// Queries lowered and function calls inlined, for `audit`.
    selects: usize,
    inlined: usize,
    inline_stack: Vec<String>,
    instances: usize,
    /// The statement's lock clause is FOR KEY SHARE (see `normalize_locks`).
    weak_lock: bool,
    counter: &'a mut usize,
    warnings: &'a mut Vec<Warning>,
}

/// A table of the FROM list (or the target of UPDATE/DELETE/INSERT).
#[derive(Clone)]
struct TableRef {
    rel: RelId,
    name: String,
    alias: Option<String>,
    /// ON CONFLICT's `EXCLUDED`: the proposed row, not a database read.
    /// Only reachable through its qualifier.
    pseudo: bool,
}

/// Columns of one table found in the parts of a statement.
#[derive(Default, Clone)]
struct Uses {
    /// WHERE and ON columns (predicate columns).
    pred: BTreeSet<usize>,
    /// Columns read: select list, ORDER/GROUP BY, HAVING, SET and RETURNING expressions.
    read: BTreeSet<usize>,
    /// Equalities column = value (no column on the other side).
    eq: Vec<(usize, Term)>,
    /// Columns of conjuncts that are not such equalities.
    extra: BTreeSet<usize>,
    /// Columns in column = column conjuncts (joins).
    join: BTreeSet<usize>,
    all: bool,
}

impl<'a> Lowerer<'a> {
    fn fresh(&mut self) -> Term {
        self.fresh += 1;
        Term::Fresh(self.fresh)
    }

    fn line_of(&self, offset: usize) -> usize {
        self.file.line_col(offset).0
    }

    fn warn(&mut self, offset: usize, message: impl Into<String>) {
        let line = self.line_of(offset);
        self.warnings.push(Warning {
            file: self.file.name.clone(),
            line,
            message: message.into(),
        });
    }

    /// Lower a list of nodes. `None` body: every path aborts. The flag
    /// says whether an EXIT may leave the enclosing loop from here.
    fn block(&mut self, nodes: &[Node]) -> Result<(Option<Body>, bool)> {
        let mut seq: Vec<Body> = vec![];
        let mut i = 0;
        while i < nodes.len() {
            let node = &nodes[i];
            let (b, exits) = match node {
                Node::Sql(s) => (Some(self.statement(s, &nodes[i + 1..])?), false),
                Node::Abort => return Ok((None, false)),
                // EXIT and EXIT WHEN are treated alike: the rest of the body
                // becomes optional either way (the condition's value is not
                // modelled, its reads are). CONTINUE skips the rest too.
                Node::Exit { at, when, cont } => {
                    if self.loops.is_empty() {
                        let what = if *cont { "CONTINUE" } else { "EXIT" };
                        return Err(Diag::new(format!("{what} outside a loop"))
                            .help(format!("{what} acts on the innermost LOOP; remove it or put it inside LOOP … END LOOP;"))
                            .at(self.file, *at, what.len(), "here"));
                    }
                    let reads = match when {
                        Some(c) => self.expr_reads(c)?,
                        None => Body::Seq(vec![]),
                    };
                    (Some(reads), true)
                }
                Node::If(branches) => self.if_node(branches)?,
                Node::Loop { head, body, .. } => (Some(self.loop_node(head, body)?), false),
                Node::Eval(exprs) => {
                    let mut parts = vec![];
                    for e in exprs {
                        parts.push(self.expr_reads(e)?);
                    }
                    (Some(Body::Seq(parts)), false)
                }
                Node::Assign { var, expr } => {
                    let reads = self.expr_reads(expr)?;
                    let t = self.term(&expr.expr);
                    self.env.insert(var.clone(), t);
                    (Some(reads), false)
                }
                Node::Begin { level, at } => {
                    if let Some(level) = level {
                        self.warn(*at, format!("declares ISOLATION LEVEL {level}: recorded; isolint decides robustness for READ COMMITTED"));
                    }
                    (Some(Body::Seq(vec![])), false)
                }
                Node::Commit { at } => {
                    return Err(Diag::new("internal error: COMMIT inside a transaction")
                        .at(self.file, *at, 6, "here"))
                }
            };
            match b {
                None => return Ok((None, false)),
                Some(b) => push_seq(&mut seq, b),
            }
            i += 1;
            if exits {
                // The rest of this sequence may be skipped by the EXIT: an
                // over-approximation (later iterations stay possible).
                let mark = self.statements.len();
                match self.block(&nodes[i..])?.0 {
                    Some(r) if !is_empty(&r) => seq.push(Body::Opt(Box::new(r))),
                    Some(_) => {}
                    // Going on after the EXIT always aborts: only leaving counts.
                    None => self.truncate(mark),
                }
                return Ok((Some(Body::Seq(seq)), true));
            }
        }
        Ok((Some(Body::Seq(seq)), false))
    }

    /// IF c1 THEN A ELSIF c2 THEN B ELSE C: c1's reads, then A or (c2's
    /// reads, then B or C): each condition is evaluated only when the
    /// ones before it were false.
    fn if_node(&mut self, branches: &[(Option<Cond>, Vec<Node>)]) -> Result<(Option<Body>, bool)> {
        let Some((Some(cond), then)) = branches.first() else {
            // ELSE alone (the selector wrapper of a CASE).
            let body = branches.first().map_or(&[][..], |b| &b.1[..]);
            return self.block(body);
        };
        let reads = self.expr_reads(cond)?;
        let rest: Vec<(Option<Cond>, Vec<Node>)> = match branches.get(1) {
            None => vec![],
            Some((None, body)) => vec![(None, body.clone())],
            Some((Some(_), _)) => vec![(None, vec![Node::If(branches[1..].to_vec())])],
        };
        let mut two = vec![(Some(cond.clone()), then.clone())];
        two.extend(rest);
        let (b, exits) = self.branch(&two)?;
        Ok((
            b.map(|b| {
                let mut seq = vec![];
                push_seq(&mut seq, reads);
                push_seq(&mut seq, b);
                Body::Seq(seq)
            }),
            exits,
        ))
    }

    /// The alternatives of an IF (conditions already lowered).
    fn branch(&mut self, branches: &[(Option<Cond>, Vec<Node>)]) -> Result<(Option<Body>, bool)> {
        let id = self.next_if;
        self.next_if += 1;
        let before = self.env.clone();
        let mut alts = vec![];
        let mut exits = false;
        let mut ends: Vec<HashMap<String, Term>> = vec![];
        for (bi, (_, nodes)) in branches.iter().enumerate() {
            self.env = before.clone();
            self.path.push((id, bi));
            let mark = self.statements.len();
            let (b, e) = self.block(nodes)?;
            if b.is_none() {
                self.truncate(mark);
            }
            self.path.pop();
            exits |= e;
            if let Some(b) = b {
                alts.push(b);
                ends.push(self.env.clone());
            } else {
                // An aborting branch contributes no value.
                ends.push(HashMap::new());
            }
        }
        if branches.last().is_some_and(|(c, _)| c.is_some()) {
            alts.push(Body::Seq(vec![]));
            ends.push(before.clone());
        }
        // Variables some branch changed get a phi, resolved per path.
        let mut names: BTreeSet<String> = BTreeSet::new();
        for end in &ends {
            for (k, v) in end {
                if before.get(k) != Some(v) {
                    names.insert(k.clone());
                }
            }
        }
        self.env = before.clone();
        for v in names {
            let values: Vec<Term> = ends
                .iter()
                .map(|end| {
                    end.get(&v)
                        .cloned()
                        .or_else(|| before.get(&v).cloned())
                        .unwrap_or(Term::Param(v.clone()))
                })
                .collect();
            self.phis.push((id, values));
            self.env.insert(v, Term::Phi(self.phis.len() - 1));
        }
        // Alternatives without statements are all ε: one is enough.
        if alts.iter().all(is_empty) && !alts.is_empty() {
            return Ok((Some(Body::Seq(vec![])), exits));
        }
        Ok(match alts.len() {
            0 => (None, false),
            1 => (alts.pop(), exits),
            _ => (Some(Body::Branch(alts)), exits),
        })
    }

    /// A loop and what its head evaluates: a FOR's range bounds, query or
    /// array once before the first iteration; a WHILE's condition before
    /// every iteration and once more at the end.
    fn loop_node(&mut self, head: &LoopHead, body: &[Node]) -> Result<Body> {
        let mut before = vec![];
        match head {
            LoopHead::Plain | LoopHead::While(_) => {}
            LoopHead::Range { bounds, .. } => {
                for b in bounds {
                    push_seq(&mut before, self.expr_reads(b)?);
                }
            }
            LoopHead::Array { expr, .. } => push_seq(&mut before, self.expr_reads(expr)?),
            LoopHead::Query { query, .. } => {
                // The query runs once; it may return no row (no abort).
                self.sub_depth += 1;
                let r = self.statement(query, &[]);
                self.sub_depth -= 1;
                push_seq(&mut before, r?);
            }
        }
        let id = self.next_loop;
        self.next_loop += 1;
        // Variables assigned in the body differ between iterations: fresh
        // symbols at entry and at exit.
        let mut assigned = HashSet::new();
        collect_assigned(body, &mut assigned);
        if let Some(v) = head.var() {
            assigned.insert(v.to_string());
        }
        for v in &assigned {
            let t = self.fresh();
            self.env.insert(v.clone(), t);
        }
        if let LoopHead::While(c) = head {
            push_seq(&mut before, self.expr_reads(c)?);
        }
        self.loops.push(id);
        let mark = self.statements.len();
        let (b, _) = self.block(body)?;
        if b.is_none() {
            self.truncate(mark);
        }
        let b = match (b, head) {
            (Some(b), LoopHead::While(c)) => {
                let mut seq = vec![];
                push_seq(&mut seq, b);
                push_seq(&mut seq, self.expr_reads(c)?);
                Some(Body::Seq(seq))
            }
            (b, _) => b,
        };
        self.loops.pop();
        for v in &assigned {
            let t = self.fresh();
            self.env.insert(v.clone(), t);
        }
        // A body that always aborts can only run zero times; a body
        // without statements contributes nothing.
        if let Some(b) = b.filter(|b| !is_empty(b)) {
            before.push(Body::Loop(Box::new(b)));
        }
        Ok(Body::Seq(before))
    }

    fn var_term(&mut self, name: &str) -> Term {
        let key = name.trim_start_matches(':').to_lowercase();
        // JDBC's `?`: each one a value of its own.
        if key == "?" {
            return self.fresh();
        }
        // `:a$$i$` is `:a[:i]` (crate::sql::rewrite_subscripts); `$1` is a
        // positional parameter.
        if let Some((array, index)) = key.split_once('$').filter(|(a, _)| !a.is_empty()) {
            let index = index.trim_matches('$').to_string();
            let a = self.var_term(array);
            let i = if index.bytes().all(|b| b.is_ascii_digit()) {
                Term::Lit(index)
            } else {
                self.var_term(&index)
            };
            return Term::Elem(Box::new(a), Box::new(i));
        }
        self.env.get(&key).cloned().unwrap_or(Term::Param(key))
    }

    fn term(&mut self, e: &Expr) -> Term {
        match e {
            Expr::Value(v) => match &v.value {
                Value::Placeholder(p) => self.var_term(p),
                Value::Number(n, _) => Term::Lit(n.clone()),
                Value::SingleQuotedString(s) => Term::Lit(format!("'{s}'")),
                _ => self.fresh(),
            },
            Expr::Nested(inner) => self.term(inner),
            _ => self.fresh(),
        }
    }

    fn new_statement(&mut self, ty: StmtType, rel: RelId, snip: &Snippet) -> usize {
        *self.counter += 1;
        let text: String = snip.text.split_whitespace().collect::<Vec<_>>().join(" ");
        let first = snip.text.len() - snip.text.trim_start().len();
        self.statements.push(Statement {
            id: format!("q{}", self.counter),
            ty,
            rel,
            pread: None,
            read: None,
            write: None,
            sql: Some(text),
            origin: Some(Origin {
                file: self.file.name.clone(),
                line: self.line_of(snip.offset + first),
            }),
            locking: false,
        });
        self.facts.push(Facts {
            path: self.path.clone(),
            may_miss: self.stmt_may_miss || self.sub_depth > 0,
            ..Facts::default()
        });
        self.statements.len() - 1
    }

    fn set(&self, rel: RelId, cols: &BTreeSet<usize>) -> Option<AttrSet> {
        Some(AttrSet::from_indices(
            self.schema.rel(rel).arity(),
            cols.iter().copied(),
        ))
    }

    fn all(&self, rel: RelId) -> Option<AttrSet> {
        Some(AttrSet::full(self.schema.rel(rel).arity()))
    }

    /// Bind the statement's columns to the terms of its equalities.
    fn bind(&mut self, q: usize, eq: &[(usize, Term)]) {
        for (c, t) in eq {
            self.facts[q].bound.entry(*c).or_insert_with(|| t.clone());
        }
    }

    /// The value a term denotes on the path `path`: columns pinned by
    /// their statement are followed, phis of IFs on the path resolved.
    fn resolve(&self, t: &Term, path: &[(usize, usize)], depth: usize) -> Term {
        if depth > 64 {
            return t.clone();
        }
        match t {
            Term::Col(q, c) => match self.facts[*q].bound.get(c) {
                Some(b) => self.resolve(b, path, depth + 1),
                None => t.clone(),
            },
            Term::Phi(k) => {
                let (if_id, values) = &self.phis[*k];
                match path.iter().find(|(i, _)| i == if_id) {
                    Some((_, b)) => values
                        .get(*b)
                        .map_or(t.clone(), |v| self.resolve(v, path, depth + 1)),
                    None => t.clone(),
                }
            }
            _ => t.clone(),
        }
    }

    /// The branch choices of two statements together; `None` when they are
    /// in different branches of one IF (they never run together).
    fn joint_path(&self, i: usize, j: usize) -> Option<Vec<(usize, usize)>> {
        let mut p = self.facts[i].path.clone();
        for &(k, b) in &self.facts[j].path {
            match p.iter().find(|(k2, _)| *k2 == k) {
                Some(&(_, b2)) if b2 != b => return None,
                Some(_) => {}
                None => p.push((k, b)),
            }
        }
        Some(p)
    }

    fn same_value(&self, a: Term, b: Term, path: &[(usize, usize)]) -> bool {
        let (x, y) = (self.resolve(&a, path, 0), self.resolve(&b, path, 0));
        x == y
    }

    /// The key (PK, or a UNIQUE key no UPDATE assigns) pinned by `eq`.
    fn key_of(&self, rel: RelId, eq: &[(usize, Term)]) -> Option<Vec<usize>> {
        let r = self.schema.rel(rel);
        let pinned: HashSet<usize> = eq.iter().map(|(c, _)| *c).collect();
        let mut keys = vec![];
        if !r.primary_key.is_empty() {
            keys.push(r.primary_key.clone());
        }
        for u in &r.unique_keys {
            if !u.is_empty() && u.iter().all(|c| !self.assigned.contains(&(rel, *c))) {
                keys.push(u.clone());
            }
        }
        keys.into_iter()
            .find(|k| k.iter().all(|c| pinned.contains(c)))
    }

    /// Conjuncts beyond the key equalities: other conjuncts, and
    /// equalities on columns outside the key.
    fn extras(uses: &Uses, key: &[usize]) -> BTreeSet<usize> {
        let mut e = uses.extra.clone();
        e.extend(uses.eq.iter().map(|(c, _)| *c).filter(|c| !key.contains(c)));
        e
    }

    /// Forget statements lowered on a path that aborts.
    fn truncate(&mut self, mark: usize) {
        let removed = self.statements.len() - mark;
        self.statements.truncate(mark);
        self.facts.truncate(mark);
        *self.counter -= removed;
    }

    /// A statement of the program. Whether it may find no row (and the
    /// program go on) is decided here from what follows it: a test of
    /// FOUND right after it, or a NULL test of a variable it sets,
    /// unless that test only leads to an abort (the paper's assumption,
    /// Section 5.4, then holds).
    fn statement(&mut self, s: &Stmt, rest: &[Node]) -> Result<Body> {
        let next = rest.first();
        let evidence = tests_found(rest) || s.into.iter().any(|v| self.null_tested.contains(v));
        let saved = self.stmt_may_miss;
        self.stmt_may_miss = evidence && !self.aborts_when_no_match(&s.into, next);
        let r = self.lower_audited(&s.sql, &s.into, &s.snip, next, s.weak_lock);
        self.stmt_may_miss = saved;
        r
    }

    /// Lower one parsed statement, then check that every query and every
    /// call of a user function in it was modelled (fail closed: a
    /// position the lowering does not visit is an error, not a lost read).
    fn lower_audited(
        &mut self,
        sql: &Sql,
        into: &[String],
        s: &Snippet,
        next: Option<&Node>,
        weak_lock: bool,
    ) -> Result<Body> {
        let (q0, c0) = (self.selects, self.inlined);
        let b = self.lower_sql(sql, into, s, next, weak_lock)?;
        let (q, c) = (self.selects - q0, self.inlined - c0);
        self.audit(sql, s, q, c)?;
        Ok(b)
    }

    fn lower_sql(
        &mut self,
        sql: &Sql,
        into: &[String],
        s: &Snippet,
        next: Option<&Node>,
        weak_lock: bool,
    ) -> Result<Body> {
        let into = into.to_vec();
        let snip = s.clone();
        self.weak_lock = weak_lock;
        match sql {
            Sql::Query(q) => self.select(q, &snip, &into),
            Sql::Update(u) => {
                // UPDATE t … FROM s …: the rows of s are read (one statement
                // per table, before the write), t is the target (index 0).
                let mut tables = vec![self.table_ref(&u.table.relation, &snip)?];
                let mut ons = vec![];
                if !u.table.joins.is_empty() {
                    return Err(self.unsupported(&snip, "joins in the UPDATE target", "put the other tables in UPDATE … FROM"));
                }
                if let Some(sqlparser::ast::UpdateTableFromKind::BeforeSet(f) | sqlparser::ast::UpdateTableFromKind::AfterSet(f)) = &u.from {
                    self.tables_of(f, &snip, &mut tables, &mut ons)?;
                }
                let mut pre = vec![];
                let mut uses = vec![Uses::default(); tables.len()];
                let mut writes = BTreeSet::new();
                for a in &u.assignments {
                    for col in assignment_columns(&a.target) {
                        let c = self.column(&tables[..1], None, &col, &snip)?.1;
                        writes.insert(c);
                    }
                    self.collect(&tables, &a.value, &snip, Some(&mut pre), Clause::Read, &mut uses)?;
                }
                if let Some(r) = &u.returning {
                    for item in r {
                        self.collect_item(&tables, item, &snip, &mut pre, &mut uses)?;
                    }
                }
                for on in &ons {
                    self.where_clause(&tables, on, &snip, &mut pre, &mut uses)?;
                }
                if let Some(w) = &u.selection {
                    self.where_clause(&tables, w, &snip, &mut pre, &mut uses)?;
                }
                self.table_reads(&tables, &uses, 1, &[], &snip, &mut pre);
                let rel = tables[0].rel;
                let returning_cols = returning_columns(&u.returning, &tables[..1], self.schema);
                let body = self.write_stmt(WriteKind::Update, rel, &uses[0], writes, &snip, &into, &returning_cols, next)?;
                Ok(seq(pre, body))
            }
            Sql::Delete(d) => {
                let from = match &d.from {
                    FromTable::WithFromKeyword(v) | FromTable::WithoutKeyword(v) => v,
                };
                if from.len() != 1 || !from[0].joins.is_empty() || !d.tables.is_empty() {
                    return Err(self.unsupported(&snip, "DELETE from several tables", "delete from one table per statement; name the others in USING"));
                }
                // DELETE FROM t USING s …: s is read, t is the target.
                let mut tables = vec![self.table_ref(&from[0].relation, &snip)?];
                let mut ons = vec![];
                if let Some(using) = &d.using {
                    self.tables_of(using, &snip, &mut tables, &mut ons)?;
                }
                let mut pre = vec![];
                let mut uses = vec![Uses::default(); tables.len()];
                for on in &ons {
                    self.where_clause(&tables, on, &snip, &mut pre, &mut uses)?;
                }
                if let Some(w) = &d.selection {
                    self.where_clause(&tables, w, &snip, &mut pre, &mut uses)?;
                }
                if let Some(r) = &d.returning {
                    let mut ret = vec![Uses::default(); tables.len()];
                    for item in r {
                        self.collect_item(&tables, item, &snip, &mut pre, &mut ret)?;
                    }
                    // Columns of the other tables in RETURNING are reads of them.
                    for (t, u) in ret.iter().enumerate().skip(1) {
                        uses[t].read.extend(u.read.iter().copied());
                        uses[t].all |= u.all;
                    }
                }
                self.table_reads(&tables, &uses, 1, &[], &snip, &mut pre);
                let rel = tables[0].rel;
                let returning_cols = returning_columns(&d.returning, &tables[..1], self.schema);
                let body = self.write_stmt(WriteKind::Delete, rel, &uses[0], BTreeSet::new(), &snip, &into, &returning_cols, next)?;
                Ok(seq(pre, body))
            }
            Sql::Insert(ins) => {
                let TableObject::TableName(name) = &ins.table else {
                    return Err(self.unsupported(&snip, "INSERT into a table function", "insert into a table"));
                };
                let Some(ident) = name.0.last().and_then(|p| p.as_ident()).cloned() else {
                    return Err(self.unsupported(&snip, "this INSERT target", "insert into a table"));
                };
                let rel = self.rel_by_ident(&ident, &snip)?;
                let tables = vec![TableRef {
                    rel,
                    name: self.schema.rel(rel).name.clone(),
                    alias: None,
                    pseudo: false,
                }];
                let mut cols = vec![];
                for c in &ins.columns {
                    if let Some(i) = c.0.last().and_then(|p| p.as_ident()) {
                        cols.push(self.column(&tables, None, i, &snip)?.1);
                    }
                }
                if cols.is_empty() {
                    cols = (0..self.schema.rel(rel).arity()).collect();
                }
                let mut pre = vec![];
                let mut eq = vec![];
                match ins.source.as_deref() {
                    Some(Query { body, .. }) if matches!(body.as_ref(), SetExpr::Values(_)) => {
                        if let SetExpr::Values(v) = body.as_ref() {
                            self.selects += 1; // the VALUES query itself
                            for row in &v.rows {
                                for (c, e) in cols.iter().zip(row.iter()) {
                                    // Subqueries and calls inside VALUES become reads.
                                    self.collect(&[], e, &snip, Some(&mut pre), Clause::Read, &mut [])?;
                                    if v.rows.len() == 1 {
                                        let t = self.term(e);
                                        eq.push((*c, t));
                                    }
                                }
                            }
                        }
                    }
                    Some(q) => {
                        // INSERT … SELECT: the SELECT is a read before the
                        // insert; it may return no row, and the program
                        // goes on.
                        self.sub_depth += 1;
                        let r = self.select(q, &snip, &[]);
                        self.sub_depth -= 1;
                        pre.push(r?);
                    }
                    None => {}
                }
                let q = self.new_statement(StmtType::Ins, rel, &snip);
                self.statements[q].write = self.all(rel);
                self.bind(q, &eq);
                self.facts[q].key = self.key_of(rel, &eq);
                let returning_cols = returning_columns(&ins.returning, &tables, self.schema);
                let Some(on) = &ins.on else {
                    self.assign_into(&into, q, true, &returning_cols, &BTreeSet::new());
                    return Ok(seq(pre, Body::Stmt(q)));
                };
                // Upsert: either the insert, or (on a key conflict) the
                // action on the existing row with the same key.
                let (assignments, selection) = match on {
                    sqlparser::ast::OnInsert::DuplicateKeyUpdate(a) => (a.clone(), None),
                    sqlparser::ast::OnInsert::OnConflict(c) => match &c.action {
                        sqlparser::ast::OnConflictAction::DoNothing => (vec![], None),
                        sqlparser::ast::OnConflictAction::DoUpdate(d) => (d.assignments.clone(), d.selection.clone()),
                    },
                    _ => return Err(self.unsupported(&snip, "this ON CONFLICT form", "use ON CONFLICT … DO NOTHING or DO UPDATE")),
                };
                let mut scope = tables;
                scope.push(TableRef {
                    rel,
                    name: "excluded".into(),
                    alias: Some("excluded".into()),
                    pseudo: true,
                });
                let mut uses = vec![Uses::default(); 2];
                let mut writes = BTreeSet::new();
                for a in &assignments {
                    for col in assignment_columns(&a.target) {
                        writes.insert(self.column(&scope[..1], None, &col, &snip)?.1);
                    }
                    self.collect(&scope, &a.value, &snip, Some(&mut pre), Clause::Read, &mut uses)?;
                }
                if let Some(w) = &selection {
                    self.collect(&scope, w, &snip, Some(&mut pre), Clause::Read, &mut uses)?;
                }
                let key = self.facts[q].key.clone();
                let key_cols: BTreeSet<usize> = match &key {
                    Some(k) => k.iter().copied().collect(),
                    None => self.schema.rel(rel).primary_key.iter().copied().collect(),
                };
                let alt = match (&key, writes.is_empty()) {
                    // DO NOTHING: the conflict check read the existing row's key.
                    (Some(k), true) => {
                        let a = self.new_statement(StmtType::KeySel, rel, &snip);
                        self.statements[a].read = self.set(rel, &key_cols);
                        self.facts[a].key = Some(k.clone());
                        self.bind(a, &eq);
                        a
                    }
                    (Some(k), false) => {
                        let a = self.new_statement(StmtType::KeyUpd, rel, &snip);
                        self.statements[a].read = self.set(rel, &uses[0].read);
                        self.statements[a].write = self.set(rel, &writes);
                        self.facts[a].key = Some(k.clone());
                        self.facts[a].assigns = writes.clone();
                        self.bind(a, &eq);
                        a
                    }
                    // Several rows or no pinned key: any row may conflict.
                    (None, nothing) => {
                        let ty = if nothing { StmtType::PredSel } else { StmtType::PredUpd };
                        let a = self.new_statement(ty, rel, &snip);
                        self.statements[a].pread = self.all(rel);
                        let mut read = uses[0].read.clone();
                        read.extend(key_cols.iter().copied());
                        self.statements[a].read = self.set(rel, &read);
                        if !nothing {
                            self.statements[a].write = self.set(rel, &writes);
                        }
                        a
                    }
                };
                for v in &into {
                    let t = self.fresh();
                    self.env.insert(v.clone(), t);
                }
                Ok(seq(pre, Body::Branch(vec![Body::Stmt(q), Body::Stmt(alt)])))
            }
            _ => Err(Diag::new("unsupported statement: isolint models SELECT, INSERT, UPDATE and DELETE")
                .help(if is_ddl(sql) {
                    "DDL belongs in the schema file"
                } else {
                    "LOCK, SET, CALL, COPY and other commands cannot be modelled as BTP statements; remove the statement if it touches no table"
                })
                .at(self.file, s.offset + (s.text.len() - s.text.trim_start().len()), 6, "here")),
        }
    }

    /// The reads an expression outside a statement performs (conditions,
    /// FOR bounds, RAISE arguments, assignments): its subqueries and
    /// user-function calls, in evaluation order.
    fn expr_reads(&mut self, c: &Cond) -> Result<Body> {
        let (q0, c0) = (self.selects, self.inlined);
        let mut pre = vec![];
        self.collect(&[], &c.expr, &c.snip, Some(&mut pre), Clause::Read, &mut [])?;
        let (q, n) = (self.selects - q0, self.inlined - c0);
        self.audit(&c.expr, &c.snip, q, n)?;
        Ok(Body::Seq(pre))
    }

    /// Fail closed: every query in `node` must have been lowered and every
    /// user-function call inlined; a call of an unknown function is an
    /// error wherever it stands.
    fn audit<V: sqlparser::ast::Visit>(
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
            fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
                if let Expr::Function(f) = e {
                    if let Some(i) = f.name.0.last().and_then(|p| p.as_ident()) {
                        let qualified = f.name.0.len() > 1;
                        let n = if qualified
                            && f.name.0[0].to_string().eq_ignore_ascii_case("pg_catalog")
                        {
                            "now".to_string()
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
            if self.functions.iter().any(|(d, _)| &d.name == n) {
                user += 1;
            } else if !is_builtin(n) && !self.pure.contains(n) {
                return Err(self.unknown_function(ident, s));
            }
        }
        if c.queries != queries || user != calls {
            let first = s.text.len() - s.text.trim_start().len();
            return Err(Diag::new("isolint cannot model a subquery or function call in this position")
                .help("move it into a statement of its own (SELECT … INTO :v) or into the WHERE clause; isolint never drops a read")
                .at(self.file, s.offset + first, 6, "in this statement"));
        }
        Ok(())
    }

    fn unknown_function(&self, ident: &Ident, s: &Snippet) -> Box<Diag> {
        let at = s.file_offset(ident.span.start.line, ident.span.start.column);
        Diag::new(format!("call of unknown function `{}`", ident.value))
            .help(format!(
                "isolint inlines the functions it has the definition of: add `CREATE FUNCTION {}(…) … LANGUAGE sql AS $$ … $$;` to the schema file, or, if it reads and writes no table, list it under `pure_functions:` in isolint.yaml",
                ident.value
            ))
            .at(self.file, at, ident.value.len().max(1), "unknown function")
    }

    /// A call of a user function: its body's statements inlined before the
    /// calling statement, parameters bound to the arguments' values. A
    /// call evaluated per row (inside a statement with tables) may run any
    /// number of times: a loop.
    fn call(
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
        let funcs: &'a [ParsedFunction<'a>] = self.functions;
        let Some((def, body)) = funcs.iter().find(|(d, _)| d.name == name) else {
            if f.name.0.len() > 1 && f.name.0[0].to_string().eq_ignore_ascii_case("pg_catalog")
                || is_builtin(&name)
                || self.pure.contains(&name)
            {
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
            .at(self.file, at, ident.value.len(), "called here"));
        }
        if self.inline_stack.contains(&name) {
            return Err(Diag::new(format!("recursive call of function `{}`", ident.value))
                .help("isolint inlines function bodies and cannot unfold recursion; call it from the program instead")
                .at(self.file, at, ident.value.len(), "recursive call"));
        }
        self.instances += 1;
        let prefix = format!("__{name}_{}", self.instances);
        let mut bound: Vec<Option<Term>> = vec![None; def.params.len()];
        if let FunctionArguments::List(list) = &f.args {
            for (k, a) in list.args.iter().enumerate() {
                let (slot, e) = match a {
                    FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => (Some(k), e),
                    FunctionArg::Named {
                        name,
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
            let t = t.unwrap_or_else(|| self.fresh());
            self.env.insert(format!("{prefix}_{k}"), t);
        }
        let saved_file = self.file;
        let saved_counts = (self.selects, self.inlined);
        self.file = &def.file;
        self.inline_stack.push(name);
        self.sub_depth += 1;
        let mut parts = vec![];
        let mut result = Ok(());
        for (bsnip, sql) in body {
            let sql = bind_params(sql, def, &prefix, self.schema);
            match self.lower_audited(&sql, &[], bsnip, None, false) {
                Ok(b) => push_seq(&mut parts, b),
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        self.sub_depth -= 1;
        self.inline_stack.pop();
        self.file = saved_file;
        (self.selects, self.inlined) = saved_counts;
        self.inlined += 1;
        result?;
        let b = Body::Seq(parts);
        if !is_empty(&b) {
            pre.push(if per_row { Body::Loop(Box::new(b)) } else { b });
        }
        Ok(())
    }

    /// Key-based statements whose row may be missing while the program
    /// goes on become predicate-based over their WHERE columns and key
    /// (Section 5.4: the paper's model assumes a key-based statement finds
    /// its row or the transaction aborts). Such evidence: a later insert of
    /// the same key into the same relation (it would fail if the row were
    /// there), plus what `statement`, `select` and `table_reads` marked.
    /// Then a key sel that returns no column still reads its tuple's
    /// existence: its ReadSet gets the key (a delete conflicts with it).
    fn apply_may_miss(&mut self) {
        let n = self.statements.len();
        for q in 0..n {
            let Some(kq) = self.facts[q].key.clone() else {
                continue;
            };
            // After a DELETE of the key the insert succeeds either way.
            if !matches!(self.statements[q].ty, StmtType::KeySel | StmtType::KeyUpd) {
                continue;
            }
            let rel = self.statements[q].rel;
            for i in q + 1..n {
                if matches!(self.statements[i].ty, StmtType::KeyDel | StmtType::PredDel)
                    && self.statements[i].rel == rel
                {
                    break;
                }
                if self.statements[i].ty != StmtType::Ins
                    || self.statements[i].rel != self.statements[q].rel
                    || self.facts[i].key.as_ref() != Some(&kq)
                {
                    continue;
                }
                let Some(path) = self.joint_path(q, i) else {
                    continue;
                };
                if kq
                    .iter()
                    .all(|c| self.same_value(Term::Col(q, *c), Term::Col(i, *c), &path))
                {
                    self.facts[q].may_miss = true;
                }
            }
        }
        for q in 0..n {
            let ty = self.statements[q].ty;
            if !(self.facts[q].may_miss && ty.is_key_based()) {
                continue;
            }
            let rel = self.statements[q].rel;
            let mut pred = self.facts[q].pred.clone();
            pred.extend(self.facts[q].key.take().unwrap_or_default());
            pred.extend(self.facts[q].bound.keys().copied());
            let st = &mut self.statements[q];
            st.ty = match ty {
                StmtType::KeySel => StmtType::PredSel,
                StmtType::KeyUpd => StmtType::PredUpd,
                _ => StmtType::PredDel,
            };
            st.locking = false;
            st.pread = Some(AttrSet::from_indices(self.schema.rel(rel).arity(), pred));
        }
        for q in 0..n {
            let st = &self.statements[q];
            if st.ty == StmtType::KeySel && st.read.as_ref().is_some_and(|r| r.is_empty()) {
                let key = self.facts[q]
                    .key
                    .clone()
                    .unwrap_or_else(|| self.schema.rel(st.rel).primary_key.clone());
                let arity = self.schema.rel(st.rel).arity();
                self.statements[q].read = Some(AttrSet::from_indices(arity, key));
            }
        }
    }

    fn unsupported(&self, snip: &Snippet, what: &str, help: &str) -> Box<Diag> {
        let first = snip.text.len() - snip.text.trim_start().len();
        Diag::new(format!("{what} is not supported"))
            .help(help.to_string())
            .at(self.file, snip.offset + first, 6, "here")
    }

    /// `:v` of INTO gets column c of q's tuple (key-based statements,
    /// columns not changed by the statement) or a fresh symbol.
    fn assign_into(
        &mut self,
        into: &[String],
        q: usize,
        key_based: bool,
        cols: &[Option<usize>],
        changed: &BTreeSet<usize>,
    ) {
        for (k, v) in into.iter().enumerate() {
            let t = match cols.get(k).copied().flatten() {
                Some(c) if key_based && !changed.contains(&c) => Term::Col(q, c),
                _ => self.fresh(),
            };
            self.env.insert(v.clone(), t);
        }
    }

    /// An UPDATE or DELETE of the target, then what its foreign keys'
    /// referential actions do to the referencing rows.
    #[allow(clippy::too_many_arguments)]
    fn write_stmt(
        &mut self,
        kind: WriteKind,
        rel: RelId,
        uses: &Uses,
        writes: BTreeSet<usize>,
        snip: &Snippet,
        into: &[String],
        returning_cols: &[Option<usize>],
        next: Option<&Node>,
    ) -> Result<Body> {
        let first = self.statements.len();
        let b = self.write_target(
            kind,
            rel,
            uses,
            writes.clone(),
            snip,
            into,
            returning_cols,
            next,
        )?;
        let mut pred = uses.pred.clone();
        pred.extend(uses.join.iter().copied());
        for q in first..self.statements.len() {
            self.facts[q].pred.extend(pred.iter().copied());
        }
        let mut parts = vec![b];
        let mut seen = HashSet::new();
        self.cascade(
            rel,
            kind == WriteKind::Delete,
            &writes,
            snip,
            &mut seen,
            &mut parts,
        );
        Ok(if parts.len() == 1 {
            parts.remove(0)
        } else {
            Body::Seq(parts)
        })
    }

    /// ON DELETE / ON UPDATE actions of the foreign keys that reference
    /// `rel`: PostgreSQL runs them at the end of the statement as part of
    /// the same transaction. CASCADE on delete deletes the referencing
    /// rows, every other action (and CASCADE on update) updates their
    /// FK columns; the referencing rows are found by their FK columns
    /// (predicate-based). Cascades of cascades follow, each FK once.
    fn cascade(
        &mut self,
        rel: RelId,
        deleted: bool,
        updated: &BTreeSet<usize>,
        snip: &Snippet,
        seen: &mut HashSet<(usize, bool)>,
        parts: &mut Vec<Body>,
    ) {
        let fks: Vec<(usize, crate::schema::ForeignKey)> = self
            .schema
            .foreign_keys
            .iter()
            .cloned()
            .enumerate()
            .filter(|(_, fk)| fk.range == rel)
            .collect();
        for (fi, fk) in fks {
            let (on_delete, on_update) = self.fk_actions.get(fi).copied().unwrap_or_default();
            let action = if deleted {
                on_delete
            } else if fk.columns.iter().any(|(_, r)| updated.contains(r)) {
                on_update
            } else {
                continue;
            };
            if action == FkAction::NoAction || !seen.insert((fi, deleted)) {
                continue;
            }
            let dom = fk.domain;
            let cols: BTreeSet<usize> = fk.columns.iter().map(|(d, _)| *d).collect();
            let child_deleted = deleted && action == FkAction::Cascade;
            let ty = if child_deleted {
                StmtType::PredDel
            } else {
                StmtType::PredUpd
            };
            let q = self.new_statement(ty, dom, snip);
            self.statements[q].pread = self.set(dom, &cols);
            if child_deleted {
                self.statements[q].write = self.all(dom);
            } else {
                self.statements[q].read = self.set(dom, &BTreeSet::new());
                self.statements[q].write = self.set(dom, &cols);
            }
            let how = if deleted { "ON DELETE" } else { "ON UPDATE" };
            if let Some(sql) = &mut self.statements[q].sql {
                sql.push_str(&format!("  -- {how} {} of {}", action.sql(), fk.name));
            }
            self.facts[q].assigns = if child_deleted {
                BTreeSet::new()
            } else {
                cols.clone()
            };
            parts.push(Body::Stmt(q));
            self.cascade(dom, child_deleted, &cols, snip, seen, parts);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn write_target(
        &mut self,
        kind: WriteKind,
        rel: RelId,
        uses: &Uses,
        writes: BTreeSet<usize>,
        snip: &Snippet,
        into: &[String],
        returning_cols: &[Option<usize>],
        next: Option<&Node>,
    ) -> Result<Body> {
        let key = self.unjoined_key(rel, uses);
        let r = self.schema.rel(rel);
        let assigns_key = writes.iter().any(|c| r.primary_key.contains(c));
        // Join columns (UPDATE … FROM, DELETE … USING) are read and, for a
        // predicate-based statement, part of its predicate.
        let mut read = uses.read.clone();
        read.extend(uses.join.iter().copied());
        if assigns_key && kind == WriteKind::Update {
            // Changing the key moves the row: a read of what the SET
            // expressions use, a delete, and an insert.
            let name = r.name.clone();
            self.warn(snip.offset, format!("UPDATE assigns a primary-key column of `{name}`: modelled as a read, a delete and an insert"));
            let mut parts = vec![];
            let sel_ty = if key.is_some() {
                StmtType::KeySel
            } else {
                StmtType::PredSel
            };
            let s = self.new_statement(sel_ty, rel, snip);
            read.extend(uses.extra.iter().copied());
            self.statements[s].read = self.set(rel, &read);
            if key.is_none() {
                self.statements[s].pread = self.set(rel, &uses.pred);
            }
            self.bind(s, &uses.eq);
            parts.push(Body::Stmt(s));
            let del_ty = if key.is_some() {
                StmtType::KeyDel
            } else {
                StmtType::PredDel
            };
            let d = self.new_statement(del_ty, rel, snip);
            self.statements[d].write = self.all(rel);
            if key.is_none() {
                self.statements[d].pread = self.set(rel, &uses.pred);
            }
            self.bind(d, &uses.eq);
            parts.push(Body::Stmt(d));
            let i = self.new_statement(StmtType::Ins, rel, snip);
            self.statements[i].write = self.all(rel);
            parts.push(Body::Stmt(i));
            for v in into {
                let t = self.fresh();
                self.env.insert(v.clone(), t);
            }
            return Ok(Body::Seq(parts));
        }
        match key {
            Some(key) => {
                // A join conjunct may match nothing, like any extra conjunct.
                let mut extra = Self::extras(uses, &key);
                extra.extend(uses.join.iter().copied());
                let ty = if kind == WriteKind::Update {
                    StmtType::KeyUpd
                } else {
                    StmtType::KeyDel
                };
                let q = self.new_statement(ty, rel, snip);
                if kind == WriteKind::Update {
                    let mut rs = read.clone();
                    rs.extend(extra.iter().copied());
                    self.statements[q].read = self.set(rel, &rs);
                    self.statements[q].write = self.set(rel, &writes);
                } else {
                    self.statements[q].write = self.all(rel);
                }
                self.bind(q, &uses.eq);
                self.facts[q].key = Some(key);
                self.facts[q].assigns = writes.clone();
                self.assign_into(into, q, true, returning_cols, &writes);
                if extra.is_empty() || self.aborts_when_no_match(into, next) {
                    return Ok(Body::Stmt(q));
                }
                // Extra conjuncts may match nothing: then the statement only
                // read the tuple and the transaction goes on.
                let s = self.new_statement(StmtType::KeySel, rel, snip);
                self.statements[s].read = self.set(rel, &extra);
                self.bind(s, &uses.eq);
                self.facts[s].key = self.facts[q].key.clone();
                Ok(Body::Branch(vec![Body::Stmt(q), Body::Stmt(s)]))
            }
            None => {
                let ty = if kind == WriteKind::Update {
                    StmtType::PredUpd
                } else {
                    StmtType::PredDel
                };
                let q = self.new_statement(ty, rel, snip);
                self.statements[q].pread = self.set(rel, &uses.pred);
                if kind == WriteKind::Update {
                    self.statements[q].read = self.set(rel, &read);
                    self.statements[q].write = self.set(rel, &writes);
                } else {
                    self.statements[q].write = self.all(rel);
                }
                self.bind(q, &uses.eq);
                self.facts[q].assigns = writes;
                self.assign_into(into, q, false, returning_cols, &BTreeSet::new());
                Ok(Body::Stmt(q))
            }
        }
    }

    /// The abort idioms right after a statement: `IF NOT FOUND THEN
    /// RAISE/ROLLBACK` or `IF :v IS NULL THEN …` for a RETURNING … INTO :v.
    fn aborts_when_no_match(&self, into: &[String], next: Option<&Node>) -> bool {
        let Some(Node::If(branches)) = next else {
            return false;
        };
        let Some((Some(cond), body)) = branches.first() else {
            return false;
        };
        if !(body.len() == 1 && matches!(body[0], Node::Abort)) {
            return false;
        }
        match &cond.expr {
            Expr::UnaryOp {
                op: UnaryOperator::Not,
                expr,
            } => {
                matches!(expr.as_ref(), Expr::Identifier(i) if i.value.eq_ignore_ascii_case("found"))
            }
            Expr::IsNull(inner) => match inner.as_ref() {
                Expr::Value(v) => match &v.value {
                    Value::Placeholder(p) => {
                        into.contains(&p.trim_start_matches(':').to_lowercase())
                    }
                    _ => false,
                },
                _ => false,
            },
            _ => false,
        }
    }

    fn rel_by_ident(&self, ident: &Ident, snip: &Snippet) -> Result<RelId> {
        find_rel(self.schema, ident).ok_or_else(|| {
            let at = snip.file_offset(ident.span.start.line, ident.span.start.column);
            if self.views.iter().any(|v| same_name(v, ident)) {
                return Diag::new(format!("`{}` is a view", ident.value))
                    .help("isolint does not expand views: name the view's tables in the statement")
                    .at(self.file, at, ident.value.len(), "view");
            }
            Diag::new(format!("unknown table `{}`", ident.value))
                .help(
                    did_you_mean(
                        &ident.value,
                        self.schema.relations.iter().map(|r| r.name.as_str()),
                    )
                    .unwrap_or_else(|| {
                        "the schema does not define it; check the schema file given to isolint"
                            .into()
                    }),
                )
                .at(self.file, at, ident.value.len(), "unknown table")
        })
    }

    fn table_ref(&self, f: &TableFactor, snip: &Snippet) -> Result<TableRef> {
        match f {
            TableFactor::Table { name, alias, .. } => {
                let Some(ident) = name.0.last().and_then(|p| p.as_ident()) else {
                    return Err(self.unsupported(snip, "this FROM item", "name a table"));
                };
                let rel = self.rel_by_ident(ident, snip)?;
                Ok(TableRef {
                    rel,
                    name: ident.value.clone(),
                    alias: alias.as_ref().map(|a| a.name.value.clone()),
                    pseudo: false,
                })
            }
            _ => Err(self.unsupported(
                snip,
                "a subquery, function or nested join in FROM",
                "name tables directly in FROM",
            )),
        }
    }

    /// Resolve a column to (table index, attribute index).
    fn column(
        &self,
        tables: &[TableRef],
        qualifier: Option<&Ident>,
        col: &Ident,
        snip: &Snippet,
    ) -> Result<(usize, usize)> {
        let at = snip.file_offset(col.span.start.line, col.span.start.column);
        let candidates: Vec<usize> = match qualifier {
            Some(q) => tables
                .iter()
                .enumerate()
                .filter(|(_, t)| {
                    t.alias.as_deref().is_some_and(|a| same_name(a, q))
                        || !t.pseudo
                            && ((t.alias.is_none() && same_name(&t.name, q))
                                || same_name(&self.schema.rel(t.rel).name, q))
                })
                .map(|(i, _)| i)
                .collect(),
            None => (0..tables.len()).filter(|&i| !tables[i].pseudo).collect(),
        };
        if qualifier.is_some() && candidates.is_empty() {
            let q = qualifier.map(|q| q.value.clone()).unwrap_or_default();
            let qat = qualifier.map_or(at, |q| {
                snip.file_offset(q.span.start.line, q.span.start.column)
            });
            return Err(
                Diag::new(format!("`{q}` is not a table or alias of this statement"))
                    .help("qualify columns with a table name or alias from this statement's FROM; correlated subqueries (naming an outer table) are not supported: rewrite them as a join")
                    .at(self.file, qat, q.len(), "unknown qualifier"),
            );
        }
        let mut found = vec![];
        for &ti in &candidates {
            let r = self.schema.rel(tables[ti].rel);
            if let Some(c) = r.attributes.iter().position(|a| same_name(a, col)) {
                found.push((ti, c));
            }
        }
        match found.len() {
            1 => Ok(found[0]),
            0 => {
                let names: Vec<&str> = candidates
                    .iter()
                    .flat_map(|&ti| {
                        self.schema
                            .rel(tables[ti].rel)
                            .attributes
                            .iter()
                            .map(String::as_str)
                    })
                    .collect();
                let tabs: Vec<&str> = candidates
                    .iter()
                    .map(|&ti| self.schema.rel(tables[ti].rel).name.as_str())
                    .collect();
                Err(Diag::new(format!(
                    "unknown column `{}` in {}",
                    col.value,
                    tabs.join(", ")
                ))
                .help(
                    did_you_mean(&col.value, names.iter().copied())
                        .unwrap_or_else(|| "check the column against the schema".into()),
                )
                .at(self.file, at, col.value.len(), "unknown column"))
            }
            _ => Err(Diag::new(format!("column `{}` is ambiguous", col.value))
                .help("qualify it with the table name or alias")
                .at(self.file, at, col.value.len(), "ambiguous")),
        }
    }

    /// Walk an expression: column uses go to `uses[table]` under `clause`;
    /// subqueries are lowered into `pre` (reads before this statement).
    fn collect(
        &mut self,
        tables: &[TableRef],
        e: &Expr,
        snip: &Snippet,
        pre: Option<&mut Vec<Body>>,
        clause: Clause,
        uses: &mut [Uses],
    ) -> Result<()> {
        // Subqueries first; remember their spans to skip their columns.
        let mut subs: Vec<Query> = vec![];
        let _ = sqlparser::ast::visit_expressions(e, |x| {
            match x {
                Expr::Subquery(q)
                | Expr::Exists { subquery: q, .. }
                | Expr::InSubquery { subquery: q, .. } => subs.push((**q).clone()),
                _ => {}
            }
            ControlFlow::<()>::Continue(())
        });
        // Keep only outermost subqueries.
        let spans: Vec<_> = subs.iter().map(|q| q.span()).collect();
        let inside = |s: sqlparser::tokenizer::Span, except: Option<usize>| {
            spans
                .iter()
                .enumerate()
                .any(|(i, o)| Some(i) != except && o.start <= s.start && s.end <= o.end && *o != s)
        };
        // `pre` is None when only columns are wanted (the subqueries were
        // lowered already): lowering twice would create orphan statements.
        if let Some(pre) = pre {
            for (i, q) in subs.iter().enumerate() {
                if !inside(q.span(), Some(i)) {
                    // A correlated subquery may name this statement's tables.
                    self.scopes.push(tables.to_vec());
                    self.outer_hits.push(vec![]);
                    // A subquery never aborts on a missing row.
                    self.sub_depth += 1;
                    let b = self.select(q, snip, &[]);
                    self.sub_depth -= 1;
                    let hits = self.outer_hits.pop().unwrap_or_default();
                    self.scopes.pop();
                    // Correlation columns act like join columns of this
                    // statement: in its predicate and read.
                    for (t, a) in hits {
                        if let Some(u) = uses.get_mut(t) {
                            u.pred.insert(a);
                            u.join.insert(a);
                        }
                    }
                    pre.push(b?);
                }
            }
            // Calls of user functions outside the subqueries, innermost
            // first (arguments are evaluated before the call).
            let mut calls: Vec<sqlparser::ast::Function> = vec![];
            let _ = sqlparser::ast::visit_expressions(e, |x| {
                if let Expr::Function(f) = x {
                    if !inside(x.span(), None) {
                        calls.push(f.clone());
                    }
                }
                ControlFlow::<()>::Continue(())
            });
            calls.sort_by_key(|f| {
                let sp = f.span();
                (sp.end, std::cmp::Reverse(sp.start))
            });
            for f in &calls {
                self.call(f, !tables.is_empty(), snip, pre)?;
            }
        }
        let mut idents: Vec<(Option<Ident>, Ident)> = vec![];
        let _ = sqlparser::ast::visit_expressions(e, |x| {
            match x {
                Expr::Identifier(i) if !inside(i.span, None) => idents.push((None, i.clone())),
                Expr::CompoundIdentifier(v)
                    if v.len() >= 2 && !inside(v[v.len() - 1].span, None) =>
                {
                    idents.push((Some(v[v.len() - 2].clone()), v[v.len() - 1].clone()))
                }
                _ => {}
            }
            ControlFlow::<()>::Continue(())
        });
        for (q, c) in idents {
            let Some((t, a)) = self.resolve_column(tables, q.as_ref(), &c, snip)? else {
                continue;
            };
            match clause {
                Clause::Read => uses[t].read.insert(a),
                Clause::Pred => uses[t].pred.insert(a),
            };
        }
        Ok(())
    }

    /// Resolve a column in `tables`, else in an enclosing statement
    /// (recorded as a correlation, `None` returned); else the error.
    fn resolve_column(
        &mut self,
        tables: &[TableRef],
        q: Option<&Ident>,
        c: &Ident,
        snip: &Snippet,
    ) -> Result<Option<(usize, usize)>> {
        let err = match self.column(tables, q, c, snip) {
            Ok(found) => return Ok(Some(found)),
            Err(e) => e,
        };
        for level in (0..self.scopes.len()).rev() {
            let scope = self.scopes[level].clone();
            if let Ok(found) = self.column(&scope, q, c, snip) {
                self.outer_hits[level].push(found);
                return Ok(None);
            }
        }
        // An expression outside any statement (a condition, a RAISE
        // argument) names no column: FOUND and the like are values.
        if tables.is_empty() {
            return Ok(None);
        }
        Err(err)
    }

    fn collect_item(
        &mut self,
        tables: &[TableRef],
        item: &SelectItem,
        snip: &Snippet,
        pre: &mut Vec<Body>,
        uses: &mut [Uses],
    ) -> Result<()> {
        match item {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                self.collect(tables, e, snip, Some(pre), Clause::Read, uses)
            }
            SelectItem::Wildcard(_) => {
                uses.iter_mut().for_each(|u| u.all = true);
                Ok(())
            }
            SelectItem::QualifiedWildcard(kind, _) => {
                let name = match kind {
                    sqlparser::ast::SelectItemQualifiedWildcardKind::ObjectName(n) => {
                        n.0.last().and_then(|p| p.as_ident()).cloned()
                    }
                    _ => None,
                };
                for (i, t) in tables.iter().enumerate() {
                    let hit = name.as_ref().is_none_or(|n| {
                        t.alias.as_deref().is_some_and(|a| same_name(a, n)) || same_name(&t.name, n)
                    });
                    if hit {
                        uses[i].all = true;
                    }
                }
                Ok(())
            }
            _ => {
                uses.iter_mut().for_each(|u| u.all = true);
                Ok(())
            }
        }
    }

    /// WHERE (or ON): columns are predicate columns; top-level conjuncts
    /// `col = value` are equalities, the rest extra conjuncts.
    fn where_clause(
        &mut self,
        tables: &[TableRef],
        w: &Expr,
        snip: &Snippet,
        pre: &mut Vec<Body>,
        uses: &mut [Uses],
    ) -> Result<()> {
        self.collect(tables, w, snip, Some(pre), Clause::Pred, uses)?;
        let mut conj = vec![];
        conjuncts(w, &mut conj);
        for c in conj {
            let mut cols = vec![Uses::default(); tables.len()];
            self.collect(tables, c, snip, None, Clause::Pred, &mut cols)?;
            let n_cols: usize = cols.iter().map(|u| u.pred.len()).sum();
            if let Expr::BinaryOp {
                left,
                op: BinaryOperator::Eq,
                right,
            } = c
            {
                let side = |e: &Expr| match e {
                    Expr::Identifier(_) | Expr::CompoundIdentifier(_) => true,
                    Expr::Nested(i) => matches!(
                        i.as_ref(),
                        Expr::Identifier(_) | Expr::CompoundIdentifier(_)
                    ),
                    _ => false,
                };
                if n_cols == 1 {
                    // `col = value`; when the value names a column of an
                    // enclosing statement (correlation), `col` is joined.
                    let ident = |e: &Expr| match strip_nested(e) {
                        Expr::Identifier(i) => Some((None, i.clone())),
                        Expr::CompoundIdentifier(v) if v.len() >= 2 => {
                            Some((Some(v[v.len() - 2].clone()), v[v.len() - 1].clone()))
                        }
                        _ => None,
                    };
                    let mut done = false;
                    for (colside, valside) in [(left, right), (right, left)] {
                        let Some((q, id)) = ident(colside) else {
                            continue;
                        };
                        let Some((t, a)) = self.resolve_column(tables, q.as_ref(), &id, snip)?
                        else {
                            continue;
                        };
                        if has_identifier(valside) {
                            uses[t].join.insert(a);
                        } else {
                            let term = self.term(valside);
                            uses[t].eq.push((a, term));
                        }
                        done = true;
                        break;
                    }
                    if done {
                        continue;
                    }
                }
                if n_cols == 2 && side(left) && side(right) && tables.len() > 1 {
                    for (t, u) in cols.iter().enumerate() {
                        uses[t].join.extend(u.pred.iter().copied());
                    }
                    continue;
                }
            }
            for (t, u) in cols.iter().enumerate() {
                uses[t].extra.extend(u.pred.iter().copied());
            }
        }
        Ok(())
    }

    /// Tables (and ON conditions) of a FROM list, in order.
    fn tables_of(
        &self,
        from: &[TableWithJoins],
        snip: &Snippet,
        tables: &mut Vec<TableRef>,
        ons: &mut Vec<Expr>,
    ) -> Result<()> {
        for twj in from {
            let TableWithJoins { relation, joins } = twj;
            tables.push(self.table_ref(relation, snip)?);
            for j in joins {
                tables.push(self.table_ref(&j.relation, snip)?);
                match join_on(&j.join_operator) {
                    Ok(Some(on)) => ons.push(on.clone()),
                    Ok(None) => {}
                    Err(()) => {
                        return Err(self.unsupported(
                            snip,
                            "this kind of join (USING, NATURAL, semi/anti or lateral)",
                            "write the join as JOIN … ON with explicit equalities",
                        ))
                    }
                }
            }
        }
        Ok(())
    }

    /// One read statement per table from `first` on (SELECT, and the FROM /
    /// USING tables of UPDATE and DELETE): key sel when its key is pinned by
    /// values and not joined, else pred sel with the join columns in
    /// PReadSet and ReadSet. Returns the first key-based one.
    fn table_reads(
        &mut self,
        tables: &[TableRef],
        uses: &[Uses],
        first: usize,
        locking: &[bool],
        snip: &Snippet,
        parts: &mut Vec<Body>,
    ) -> Option<usize> {
        let mut first_key_based = None;
        for (ti, t) in tables.iter().enumerate().skip(first) {
            let u = &uses[ti];
            let rel = t.rel;
            let mut read: BTreeSet<usize> = if u.all {
                (0..self.schema.rel(rel).arity()).collect()
            } else {
                u.read.clone()
            };
            read.extend(u.join.iter().copied());
            let s = if let Some(key) = self.unjoined_key(rel, u) {
                let s = self.new_statement(StmtType::KeySel, rel, snip);
                let extras = Self::extras(u, &key);
                // PostgreSQL locks only rows that match the whole WHERE:
                // with an extra conjunct, a row it filters out is neither
                // locked nor waited for. SKIP LOCKED / NOWAIT and FOR KEY
                // SHARE do not order the read either (docs/locking-reads.md).
                self.statements[s].locking = locking.get(ti).copied().unwrap_or(false)
                    && extras.is_empty()
                    && !self.weak_lock;
                read.extend(extras);
                self.statements[s].read = self.set(rel, &read);
                self.facts[s].key = Some(key);
                // The FROM/USING tables of UPDATE and DELETE: no match
                // means no write, and the program goes on.
                self.facts[s].may_miss |= first > 0;
                first_key_based.get_or_insert(s);
                s
            } else {
                let s = self.new_statement(StmtType::PredSel, rel, snip);
                let mut pred = u.pred.clone();
                pred.extend(u.join.iter().copied());
                self.statements[s].pread = self.set(rel, &pred);
                self.statements[s].read = self.set(rel, &read);
                s
            };
            let eq = u.eq.clone();
            self.bind(s, &eq);
            self.facts[s].pred = u.pred.iter().chain(&u.join).copied().collect();
            parts.push(Body::Stmt(s));
        }
        first_key_based
    }

    /// The key pinned by value equalities, unless a key column is also
    /// equated to another table's column (then the table is
    /// predicate-based, as the lowering rules say).
    fn unjoined_key(&self, rel: RelId, u: &Uses) -> Option<Vec<usize>> {
        let pk = &self.schema.rel(rel).primary_key;
        self.key_of(rel, &u.eq)
            .filter(|_| u.join.iter().all(|c| !pk.contains(c)))
    }

    /// SELECT: one statement per table of FROM, in FROM order.
    fn select(&mut self, q: &Query, snip: &Snippet, into: &[String]) -> Result<Body> {
        // A CTE may hide writes (WITH x AS (UPDATE …)): never drop it silently.
        if q.with.is_some() {
            return Err(self.unsupported(
                snip,
                "WITH (common table expressions)",
                "write each step as its own statement, or inline the CTE as a subquery",
            ));
        }
        let SetExpr::Select(sel) = q.body.as_ref() else {
            return Err(self.unsupported(
                snip,
                "UNION/INTERSECT/EXCEPT or VALUES as a query",
                "write one SELECT per statement",
            ));
        };
        let mut tables = vec![];
        let mut ons = vec![];
        self.tables_of(&sel.from, snip, &mut tables, &mut ons)?;
        self.selects += 1;
        if tables.is_empty() {
            // No FROM: only what its expressions read (subqueries, calls).
            let mut pre = vec![];
            let mut exprs: Vec<&Expr> = vec![];
            for item in &sel.projection {
                match item {
                    SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                        exprs.push(e)
                    }
                    _ => {
                        return Err(self.unsupported(
                            snip,
                            "`*` without FROM",
                            "name a table in FROM",
                        ))
                    }
                }
            }
            exprs.extend(sel.selection.iter());
            exprs.extend(sel.having.iter());
            for e in exprs {
                self.collect(&[], e, snip, Some(&mut pre), Clause::Read, &mut [])?;
            }
            if pre.is_empty() {
                self.warn(snip.offset, "statement reads no table; nothing to model");
            }
            for v in into {
                let t = self.fresh();
                self.env.insert(v.clone(), t);
            }
            return Ok(Body::Seq(pre));
        }
        let mut pre = vec![];
        let mut uses = vec![Uses::default(); tables.len()];
        for item in &sel.projection {
            self.collect_item(&tables, item, snip, &mut pre, &mut uses)?;
        }
        if let Some(ob) = &q.order_by {
            if let sqlparser::ast::OrderByKind::Expressions(v) = &ob.kind {
                for o in v {
                    self.collect(
                        &tables,
                        &o.expr,
                        snip,
                        Some(&mut pre),
                        Clause::Read,
                        &mut uses,
                    )?;
                }
            }
        }
        if let sqlparser::ast::GroupByExpr::Expressions(v, _) = &sel.group_by {
            for e in v {
                self.collect(&tables, e, snip, Some(&mut pre), Clause::Read, &mut uses)?;
            }
        }
        if let Some(h) = &sel.having {
            self.collect(&tables, h, snip, Some(&mut pre), Clause::Read, &mut uses)?;
        }
        for on in &ons {
            self.where_clause(&tables, on, snip, &mut pre, &mut uses)?;
        }
        if let Some(w) = &sel.selection {
            self.where_clause(&tables, w, snip, &mut pre, &mut uses)?;
        }
        // FOR UPDATE locks every table; FOR UPDATE OF t only the tables named.
        let locking: Vec<bool> = tables
            .iter()
            .map(|t| {
                q.locks
                    .iter()
                    .filter(|l| l.nonblock.is_none())
                    .any(|l| match &l.of {
                        None => true,
                        Some(name) => name.0.last().and_then(|p| p.as_ident()).is_some_and(|i| {
                            t.alias.as_deref().is_some_and(|a| same_name(a, i))
                                || same_name(&t.name, i)
                        }),
                    })
            })
            .collect();
        let mut parts = pre;
        let single = tables.len() == 1;
        let mark = self.statements.len();
        let first_key_based = self.table_reads(&tables, &uses, 0, &locking, snip, &mut parts);
        // An aggregate over no rows still returns a row (COUNT 0, SUM
        // NULL): the program goes on when the keyed row is missing.
        let grouped = !matches!(&sel.group_by, sqlparser::ast::GroupByExpr::Expressions(v, _) if v.is_empty());
        if !grouped && sel.projection.iter().any(has_aggregate) {
            for q in mark..self.statements.len() {
                self.facts[q].may_miss = true;
            }
        }
        // INTO: a plain column of a key-based single-table SELECT names that
        // tuple's column; anything else is a fresh symbol.
        let cols: Vec<Option<usize>> = sel
            .projection
            .iter()
            .map(|item| match item {
                SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                    match strip_nested(e) {
                        Expr::Identifier(i) => self
                            .schema
                            .rel(tables[0].rel)
                            .attributes
                            .iter()
                            .position(|a| same_name(a, i)),
                        Expr::CompoundIdentifier(v) => v.last().and_then(|i| {
                            self.schema
                                .rel(tables[0].rel)
                                .attributes
                                .iter()
                                .position(|a| same_name(a, i))
                        }),
                        _ => None,
                    }
                }
                _ => None,
            })
            .collect();
        match (single, first_key_based) {
            (true, Some(s)) => self.assign_into(into, s, true, &cols, &BTreeSet::new()),
            _ => {
                for v in into {
                    let t = self.fresh();
                    self.env.insert(v.clone(), t);
                }
            }
        }
        Ok(if parts.len() == 1 {
            parts.remove(0)
        } else {
            Body::Seq(parts)
        })
    }

    /// FK constraints q_j = f(q_i) and same-tuple constraints q_k = id(q_i)
    /// that the union-find proves (see the module comment).
    fn infer_constraints(&mut self) -> Vec<Constraint> {
        let mut out = vec![];
        let n = self.statements.len();
        for i in 0..n {
            for j in 0..n {
                if i == j {
                    continue;
                }
                let Some(path) = self.joint_path(i, j) else {
                    continue;
                };
                let (qi, qj) = (&self.statements[i], &self.statements[j]);
                let (ri, rj, ti, tj) = (qi.rel, qj.rel, qi.ty, qj.ty);
                // q_j must pin down one tuple of range(f).
                let j_one_tuple =
                    (tj.is_key_based() && self.facts[j].key.is_some()) || tj == StmtType::Ins;
                for (fi, fk) in self.schema.foreign_keys.iter().enumerate() {
                    if !j_one_tuple || fk.domain != ri || fk.range != rj || fk.columns.is_empty() {
                        continue;
                    }
                    // A statement that changes its FK columns (or the
                    // parent's key) moves the reference: no constraint.
                    if fk
                        .columns
                        .iter()
                        .any(|(d, _)| self.facts[i].assigns.contains(d))
                        || fk
                            .columns
                            .iter()
                            .any(|(_, r)| self.facts[j].assigns.contains(r))
                    {
                        continue;
                    }
                    // Predicate-based q_i: only columns its WHERE pins hold
                    // for every tuple it touches.
                    if !ti.is_key_based()
                        && ti != StmtType::Ins
                        && !fk
                            .columns
                            .iter()
                            .all(|(d, _)| self.facts[i].bound.contains_key(d))
                    {
                        continue;
                    }
                    if fk
                        .columns
                        .iter()
                        .all(|(d, r)| self.same_value(Term::Col(i, *d), Term::Col(j, *r), &path))
                    {
                        out.push(Constraint {
                            kind: ConstraintKind::ForeignKey(fi),
                            child: i,
                            parent: j,
                        });
                    }
                }
                // Same tuple: q_j (earlier key-based write) and key-based q_i.
                if ri == rj && j < i && tj.is_key_write() && ti.is_key_based() {
                    if let (Some(kj), Some(ki)) = (&self.facts[j].key, &self.facts[i].key) {
                        let key_assigned = kj.iter().any(|c| self.facts[j].assigns.contains(c));
                        if kj == ki
                            && !key_assigned
                            && kj
                                .iter()
                                .all(|c| self.same_value(Term::Col(i, *c), Term::Col(j, *c), &path))
                        {
                            out.push(Constraint {
                                kind: ConstraintKind::SameTuple,
                                child: i,
                                parent: j,
                            });
                        }
                    }
                }
            }
        }
        out.sort();
        out.dedup();
        out
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Clause {
    Read,
    Pred,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum WriteKind {
    Update,
    Delete,
}

fn is_ddl(sql: &Sql) -> bool {
    matches!(
        sql,
        Sql::CreateTable(_)
            | Sql::CreateIndex(_)
            | Sql::CreateView(_)
            | Sql::CreateFunction(_)
            | Sql::CreateTrigger(_)
            | Sql::AlterTable(_)
            | Sql::Drop { .. }
    )
}

/// Append to a sequence, dropping ε and flattening nested sequences.
fn push_seq(seq: &mut Vec<Body>, b: Body) {
    match b {
        Body::Seq(v) => v.into_iter().for_each(|x| push_seq(seq, x)),
        b => seq.push(b),
    }
}

/// A body without statements.
fn is_empty(b: &Body) -> bool {
    match b {
        Body::Stmt(_) => false,
        Body::Seq(v) | Body::Branch(v) => v.iter().all(is_empty),
        Body::Opt(x) | Body::Loop(x) => is_empty(x),
    }
}

fn seq(mut pre: Vec<Body>, b: Body) -> Body {
    if pre.is_empty() {
        b
    } else {
        pre.push(b);
        Body::Seq(pre)
    }
}

/// Whether an expression names any column (outside subqueries or not).
fn has_identifier(e: &Expr) -> bool {
    let mut found = false;
    let _ = sqlparser::ast::visit_expressions(e, |x| {
        if matches!(x, Expr::Identifier(_) | Expr::CompoundIdentifier(_)) {
            found = true;
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    });
    found
}

fn strip_nested(e: &Expr) -> &Expr {
    match e {
        Expr::Nested(i) => strip_nested(i),
        _ => e,
    }
}

fn conjuncts<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
    match e {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            conjuncts(left, out);
            conjuncts(right, out);
        }
        Expr::Nested(i) => conjuncts(i, out),
        _ => out.push(e),
    }
}

/// The join's ON condition: `Ok(None)` for a join without a condition
/// (CROSS JOIN), `Err(())` for USING, NATURAL and exotic joins, whose
/// implicit equalities would otherwise be missing from the predicate sets.
#[allow(clippy::result_unit_err)]
fn join_on(op: &sqlparser::ast::JoinOperator) -> std::result::Result<Option<&Expr>, ()> {
    use sqlparser::ast::{JoinConstraint, JoinOperator as J};
    let c = match op {
        J::Join(c)
        | J::Inner(c)
        | J::Left(c)
        | J::LeftOuter(c)
        | J::Right(c)
        | J::RightOuter(c)
        | J::FullOuter(c)
        | J::CrossJoin(c) => c,
        _ => return Err(()),
    };
    match c {
        JoinConstraint::On(e) => Ok(Some(e)),
        JoinConstraint::None => Ok(None),
        _ => Err(()),
    }
}

/// For each RETURNING item, the column it returns (plain columns only).
fn returning_columns(
    r: &Option<Vec<SelectItem>>,
    tables: &[TableRef],
    schema: &Schema,
) -> Vec<Option<usize>> {
    let Some(items) = r else { return vec![] };
    items
        .iter()
        .map(|item| match item {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                match strip_nested(e) {
                    Expr::Identifier(i) => schema
                        .rel(tables[0].rel)
                        .attributes
                        .iter()
                        .position(|a| same_name(a, i)),
                    _ => None,
                }
            }
            _ => None,
        })
        .collect()
}

/// Every SQL statement of a program tree (FOR queries included).
fn each_stmt(nodes: &[Node], f: &mut dyn FnMut(&Stmt)) {
    for n in nodes {
        match n {
            Node::Sql(s) => f(s),
            Node::If(bs) => bs.iter().for_each(|(_, b)| each_stmt(b, f)),
            Node::Loop { head, body, .. } => {
                if let LoopHead::Query { query, .. } = head {
                    f(query);
                }
                each_stmt(body, f);
            }
            _ => {}
        }
    }
}

/// Every expression outside statements (conditions, bounds, arguments).
fn each_cond(nodes: &[Node], f: &mut dyn FnMut(&Cond)) {
    for n in nodes {
        match n {
            Node::If(bs) => {
                for (c, b) in bs {
                    if let Some(c) = c {
                        f(c);
                    }
                    each_cond(b, f);
                }
            }
            Node::Loop { head, body, .. } => {
                match head {
                    LoopHead::While(c) | LoopHead::Array { expr: c, .. } => f(c),
                    LoopHead::Range { bounds, .. } => bounds.iter().for_each(&mut *f),
                    LoopHead::Query { .. } | LoopHead::Plain => {}
                }
                each_cond(body, f);
            }
            Node::Exit { when: Some(c), .. } => f(c),
            Node::Eval(v) => v.iter().for_each(&mut *f),
            Node::Assign { expr, .. } => f(expr),
            _ => {}
        }
    }
}

/// Variables assigned (by INTO, `:=` or a FOR) anywhere in `nodes`.
fn collect_assigned(nodes: &[Node], out: &mut HashSet<String>) {
    each_stmt(nodes, &mut |s| out.extend(s.into.iter().cloned()));
    fn walk(nodes: &[Node], out: &mut HashSet<String>) {
        for n in nodes {
            match n {
                Node::Assign { var, .. } => {
                    out.insert(var.clone());
                }
                Node::If(bs) => bs.iter().for_each(|(_, b)| walk(b, out)),
                Node::Loop { head, body, .. } => {
                    out.extend(head.var().map(str::to_string));
                    walk(body, out);
                }
                _ => {}
            }
        }
    }
    walk(nodes, out);
}

/// Whether FOUND is tested after a statement, before the next one.
fn tests_found(rest: &[Node]) -> bool {
    let mentions = |c: &Cond| {
        c.snip
            .text
            .split(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_'))
            .any(|w| w.eq_ignore_ascii_case("found"))
    };
    for n in rest {
        match n {
            Node::If(bs) => {
                return bs.iter().any(|(c, b)| {
                    c.as_ref().is_some_and(mentions) || c.is_none() && tests_found(b)
                })
            }
            Node::Loop { head, .. } => {
                return matches!(head, LoopHead::While(c) if mentions(c));
            }
            Node::Exit { when, .. } => {
                if when.as_ref().is_some_and(mentions) {
                    return true;
                }
            }
            Node::Eval(v) => {
                if v.iter().any(mentions) {
                    return true;
                }
            }
            Node::Assign { expr, .. } => {
                if mentions(expr) {
                    return true;
                }
            }
            Node::Begin { .. } => {}
            Node::Sql(_) | Node::Abort | Node::Commit { .. } => return false,
        }
    }
    false
}

/// Variables a program tests for NULL: `v IS [NOT] NULL`, `IS [NOT]
/// DISTINCT FROM`, and arguments of COALESCE / NULLIF / IFNULL.
fn null_tested(nodes: &[Node]) -> HashSet<String> {
    fn name(e: &Expr) -> Option<String> {
        match strip_nested(e) {
            Expr::Value(v) => match &v.value {
                Value::Placeholder(p) => {
                    let p = p.trim_start_matches(':').to_lowercase();
                    Some(p.split('$').next().unwrap_or_default().to_string())
                }
                _ => None,
            },
            Expr::Identifier(i) => Some(i.value.to_lowercase()),
            _ => None,
        }
    }
    fn scan<V: sqlparser::ast::Visit>(node: &V, out: &mut HashSet<String>) {
        let _ = sqlparser::ast::visit_expressions(node, |e| {
            match e {
                Expr::IsNull(x) | Expr::IsNotNull(x) => out.extend(name(x)),
                Expr::IsDistinctFrom(a, b) | Expr::IsNotDistinctFrom(a, b) => {
                    out.extend(name(a));
                    out.extend(name(b));
                }
                Expr::Function(func) => {
                    let fname = func.name.to_string().to_lowercase();
                    if matches!(fname.as_str(), "coalesce" | "nullif" | "ifnull" | "nvl") {
                        if let sqlparser::ast::FunctionArguments::List(l) = &func.args {
                            for a in &l.args {
                                if let sqlparser::ast::FunctionArg::Unnamed(
                                    sqlparser::ast::FunctionArgExpr::Expr(x),
                                ) = a
                                {
                                    out.extend(name(x));
                                }
                            }
                        }
                    }
                }
                _ => {}
            }
            ControlFlow::<()>::Continue(())
        });
    }
    let mut out = HashSet::new();
    each_stmt(nodes, &mut |s| scan(&s.sql, &mut out));
    each_cond(nodes, &mut |c| scan(&c.expr, &mut out));
    out
}

/// Aggregate functions: over no rows they still return one row.
const AGGREGATES: &[&str] = &[
    "count",
    "sum",
    "avg",
    "min",
    "max",
    "bool_and",
    "bool_or",
    "every",
    "array_agg",
    "string_agg",
    "json_agg",
    "jsonb_agg",
    "json_object_agg",
    "jsonb_object_agg",
    "stddev",
    "stddev_pop",
    "stddev_samp",
    "variance",
    "var_pop",
    "var_samp",
    "bit_and",
    "bit_or",
];

fn has_aggregate(item: &SelectItem) -> bool {
    let mut found = false;
    let _ = sqlparser::ast::visit_expressions(item, |e| {
        if let Expr::Function(f) = e {
            let n = f.name.to_string().to_lowercase();
            if AGGREGATES.contains(&n.as_str()) {
                found = true;
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    });
    found
}

/// PostgreSQL built-ins that read and write no table. Sequences
/// (`nextval`, `setval`) are outside transactions: a fresh value, no
/// conflict. Advisory locks only ever order more, so ignoring them is
/// sound.
const BUILTINS: &[&str] = &[
    "abs",
    "age",
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

fn is_builtin(name: &str) -> bool {
    BUILTINS.contains(&name) || AGGREGATES.contains(&name)
}

/// A function body's statement with its parameters (named, `fn.param`,
/// or `$n`) replaced by placeholders bound to the call's arguments. As in
/// PostgreSQL, a column name takes precedence over a parameter's.
fn bind_params(sql: &Sql, def: &FunctionDef, prefix: &str, schema: &Schema) -> Sql {
    let mut sql = sql.clone();
    let is_column = |n: &str| {
        schema
            .relations
            .iter()
            .any(|r| r.attributes.iter().any(|a| a.eq_ignore_ascii_case(n)))
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
