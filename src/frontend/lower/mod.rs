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

use sqlparser::ast::{AssignmentTarget, Ident, Statement as Sql, TableFactor, TableObject};

use super::Loaded;
use crate::frontend::sql::ddl::{Extras, FkAction, FunctionDef};
use crate::frontend::sql::procedural::{
    abbreviation, parse_program, LoopHead, Node, ProcExpr, Stmt,
};
use crate::frontend::sql::{same_name, Snippet};
use crate::model::btp::{validate, Body, Origin, Program, Statement, StmtType, Workload};
use crate::model::error::{Diag, Errors, Result, SourceFile, Warning};
use crate::model::isolation::{Declared, Level};
use crate::model::provenance::{Pins, Provenance};
use crate::model::schema::{AttrSet, RelId, Schema};

/// A statement's text as `Statement::sql` shows it (comments dropped,
/// whitespace collapsed): replay matches what it ran against it. A `--`
/// comment kept on the one line would swallow the rest of the statement.
pub fn statement_text(text: &str) -> String {
    let b = text.as_bytes();
    let mut plain = String::with_capacity(text.len());
    let (mut i, mut from) = (0, 0);
    while i < b.len() {
        let Some(e) = crate::frontend::sql::lex::lexeme_end(text, i) else {
            i += 1;
            continue;
        };
        let e = e.clamp(i + 1, b.len());
        if (b[i..].starts_with(b"--") || b[i..].starts_with(b"/*")) && text.is_char_boundary(e) {
            plain.push_str(&text[from..i]);
            plain.push(' ');
            from = e;
        }
        i = e;
    }
    plain.push_str(text.get(from..).unwrap_or(""));
    plain.split_whitespace().collect::<Vec<_>>().join(" ")
}

mod clauses;
mod control;
mod cte_rows;
mod from;
mod functions;
pub use functions::{is_builtin, may_read};
mod hooks;
mod infer;
mod integrity;
mod order;
mod scope;
mod statements;
mod symbolic;
#[cfg(test)]
mod tests;
mod vocab;

use self::control::null_tested;
use self::functions::{latest_definitions, parse_functions, Deferrals, ParsedFunction};
use self::vocab::{Cte, TableRef, Term};

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
    /// Leave out the reads of PostgreSQL's referential-integrity checks
    /// (`integrity`): the paper's model, for reproducing its BTPs only.
    pub skip_referential_checks: bool,
    /// What the schema's objects do on a statement's behalf (hooks,
    /// generated columns, deferred checks, partitions).
    pub extras: Extras,
}

/// Lower already-read program files against a schema.
pub fn lower_programs(
    name: String,
    description: Option<String>,
    schema: Schema,
    sources: &[SourceFile],
) -> Result<Loaded> {
    lower_programs_with(name, description, schema, sources, &Context::default())
}

/// A program's top level cut at its COMMITs: one transaction each.
pub(crate) fn transactions(tree: Vec<Node>) -> Vec<Vec<Node>> {
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

/// A transaction program before lowering: a `.sql` file or a PL/pgSQL
/// routine, parsed, with the file its positions refer to.
pub struct Unit {
    pub name: String,
    pub abbrev: Option<String>,
    pub file: SourceFile,
    pub nodes: Vec<Node>,
    /// A routine's body: its parameters have declared types (a cast of
    /// one may convert, `Lowerer::untyped_params`).
    pub typed: bool,
    /// The routine it runs (a routine or `LANGUAGE sql` function under
    /// `programs:`): its identity and declared types, for replay.
    pub routine: Option<crate::model::btp::ProgramRoutine>,
}

/// Lower program files with the function definitions, foreign-key actions
/// and pure functions of `ctx`.
pub fn lower_programs_with(
    name: String,
    description: Option<String>,
    schema: Schema,
    sources: &[SourceFile],
    ctx: &Context,
) -> Result<Loaded> {
    let mut units = vec![];
    let mut errors = Errors::default();
    for f in sources {
        if let Some(nodes) = errors.take(parse_program(f)) {
            units.push(Unit {
                name: Path::new(&f.name)
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                abbrev: abbreviation(f),
                file: f.clone(),
                nodes,
                typed: false,
                routine: None,
            });
        }
    }
    errors.finish()?;
    lower_units(name, description, schema, units, ctx)
}

/// Lower parsed programs (see [`Unit`]).
pub fn lower_units(
    name: String,
    description: Option<String>,
    schema: Schema,
    units: Vec<Unit>,
    ctx: &Context,
) -> Result<Loaded> {
    // UNIQUE keys count only if no UPDATE assigns them, which needs the
    // whole workload.
    let trees: Vec<Vec<Vec<Node>>> = units
        .iter()
        .map(|u| transactions(u.nodes.clone()))
        .collect();
    let defs = latest_definitions(&ctx.functions)?;
    let (functions, deferrals) = parse_functions(&defs)?;
    let (assigned, deleted) = workload_writes(&schema, &trees, &functions, ctx);
    let catalogue = Catalogue {
        schema: &schema,
        assigned,
        deleted,
        functions,
        deferrals,
        fk_actions: &ctx.fk_actions,
        views: &ctx.views,
        extras: &ctx.extras,
        pure: ctx.pure_functions.iter().cloned().collect(),
        skip_referential_checks: ctx.skip_referential_checks,
    };
    let mut programs = vec![];
    let mut provenance = Provenance::default();
    let mut warnings = ctx.extras.warnings.clone();
    let mut counter = 0usize;
    let mut declared = vec![];
    let mut errors = Errors::default();
    let mut joined = vec![];
    for (u, tree) in units.iter().zip(&trees) {
        let (f, stem) = (&u.file, &u.name);
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
            let (name, abbrev) = if tree.len() > 1 {
                (
                    format!("{stem}.{}", k + 1),
                    u.abbrev.as_ref().map(|a| format!("{a}.{}", k + 1)),
                )
            } else {
                (stem.clone(), u.abbrev.clone())
            };
            // An error in one transaction does not hide the next one's.
            let lowered = lower_transaction(
                &catalogue,
                f,
                nodes,
                (name, abbrev, u.typed),
                &mut counter,
                &mut warnings,
            );
            if let Some((program, prov)) = errors.take(lowered) {
                joined.push(record(&mut provenance, prov));
                programs.push(program);
                declared.push(declared_level(f, nodes));
            }
        }
    }
    errors.finish()?;
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
    cte_rows::unwritten_joins(&w, &mut provenance, &joined);
    Ok(Loaded {
        workload: w,
        warnings,
        provenance,
        declared,
        deployed: vec![],
        sources: None,
    })
}

/// What the whole workload writes: the columns some UPDATE (or upsert,
/// referential action, generated column) assigns and the relations some
/// DELETE (or ON DELETE CASCADE) deletes from.
fn workload_writes(
    schema: &Schema,
    trees: &[Vec<Vec<Node>>],
    functions: &[ParsedFunction],
    ctx: &Context,
) -> (HashSet<(RelId, usize)>, HashSet<RelId>) {
    let mut assigned: HashSet<(RelId, usize)> = HashSet::new();
    let mut deleted: HashSet<RelId> = HashSet::new();
    for tree in trees {
        for t in tree {
            each_stmt(t, &mut |st| {
                assigned_columns(
                    schema,
                    &ctx.extras.aliases,
                    &st.sql,
                    &mut assigned,
                    &mut deleted,
                )
            });
        }
    }
    for (_, stmts) in functions {
        for (_, sql) in stmts {
            assigned_columns(
                schema,
                &ctx.extras.aliases,
                sql,
                &mut assigned,
                &mut deleted,
            );
        }
    }
    // Referential actions write the referencing columns.
    for (fk, (del, upd)) in schema.foreign_keys.iter().zip(&ctx.fk_actions) {
        if *del != FkAction::NoAction && *del != FkAction::Cascade || *upd != FkAction::NoAction {
            assigned.extend(fk.columns.iter().map(|(d, _)| (fk.domain, *d)));
        }
        if *del == FkAction::Cascade {
            deleted.insert(fk.domain);
        }
    }
    // A generated column changes with its inputs.
    for g in &ctx.extras.generated {
        if g.inputs.iter().any(|i| assigned.contains(&(g.rel, *i))) {
            assigned.insert((g.rel, g.column));
        }
    }
    (assigned, deleted)
}

/// The isolation level a transaction declares (`BEGIN ISOLATION LEVEL …`
/// or `SET TRANSACTION ISOLATION LEVEL …` at its top level), the last one
/// if several. PostgreSQL runs READ UNCOMMITTED as READ COMMITTED.
fn declared_level(file: &SourceFile, nodes: &[Node]) -> Option<Declared> {
    nodes.iter().rev().find_map(|n| match n {
        Node::Begin {
            level: Some(text),
            at,
        } => {
            let level = Level::parse(text).or_else(|| {
                Level::parse(&text.to_lowercase().replace("uncommitted", "committed"))
            })?;
            Some(Declared {
                level,
                file: file.name.clone(),
                line: file.line_col(*at).0,
            })
        }
        _ => None,
    })
}

/// What every program of a workload shares while it is lowered.
struct Catalogue<'a> {
    schema: &'a Schema,
    /// Columns some UPDATE (or upsert, or referential action) assigns: a
    /// UNIQUE key with such a column is no key.
    assigned: HashSet<(RelId, usize)>,
    /// Relations some DELETE (or ON DELETE CASCADE) deletes from.
    deleted: HashSet<RelId>,
    functions: Vec<ParsedFunction<'a>>,
    /// The `SET CONSTRAINTS … DEFERRED` the SQL functions run.
    deferrals: Deferrals,
    fk_actions: &'a [(FkAction, FkAction)],
    views: &'a [String],
    extras: &'a Extras,
    pure: HashSet<String>,
    skip_referential_checks: bool,
}

/// One transaction of a program file → a BTP with its constraints.
fn lower_transaction<'a>(
    cat: &'a Catalogue<'a>,
    f: &SourceFile,
    nodes: &[Node],
    (name, abbrev, typed): (String, Option<String>, bool),
    counter: &'a mut usize,
    warnings: &'a mut Vec<Warning>,
) -> Result<(Program, ProgramProvenance)> {
    let mut l = Lowerer {
        cat,
        out: Built::default(),
        src: SourceText {
            file: f.clone(),
            qmarks: None,
        },
        sink: Sink { counter, warnings },
        vars: Vars {
            null_tested: null_tested(nodes),
            ..Vars::default()
        },
        pos: Position::default(),
        sql: SqlScope::default(),
        stage: Staging::default(),
        inl: Inlining::default(),
    };
    l.vars.typed = typed;
    l.out.fk_modes = l.constraint_modes(nodes)?;
    let (body, _) = l.block(nodes)?;
    let body = match body {
        Some(b) => b,
        None => {
            // Every path aborts: the program never commits anything.
            l.truncate(0);
            l.warn(
                0,
                "every path of this program ends in ROLLBACK or RAISE; it commits nothing",
            );
            Body::Seq(vec![])
        }
    };
    let body = l.commit_checks(body);
    l.apply_may_miss();
    let constraints = l.infer_constraints();
    if l.out.statements.is_empty() {
        l.warn(0, format!("program `{name}` has no SQL statement on any path that commits: it is analysed as an empty transaction"));
    }
    l.no_triggered_writes()?;
    let facts = &l.out.facts;
    let marked = |f: fn(&Facts) -> bool| (0..facts.len()).filter(|&q| f(&facts[q])).collect();
    let prov = ProgramProvenance {
        pins: l.pins(),
        sources: l.out.sources.clone(),
        key_share: marked(|f| f.key_share),
        alternatives: l.alternatives(),
        inexact: marked(|f| f.inexact),
        joined: (0..facts.len())
            .flat_map(|q| facts[q].joined.iter().map(move |&c| (q, c)))
            .collect(),
        limited: marked(|f| f.limited),
        orders: (0..facts.len())
            .filter_map(|q| facts[q].order.map(|(a, d)| (q, a, d)))
            .collect(),
        ranges: l.ranges(),
        sets: l.sets(),
        scans: marked(|f| f.scan),
        inside: (0..facts.len())
            .filter_map(|q| Some((q, facts[q].inside.clone()?)))
            .collect(),
        parts: facts.iter().map(|f| f.part).collect(),
        conditions: (0..facts.len())
            .filter_map(|q| {
                let (cols, miss) = facts[q].cond.clone()?;
                Some((q, cols, miss))
            })
            .collect(),
        tests: (0..facts.len())
            .filter_map(|q| Some((q, facts[q].tests.clone()?)))
            .collect(),
        not_null: (0..facts.len())
            .flat_map(|q| facts[q].not_null.iter().map(move |&c| (q, c)))
            .collect(),
        cond_only: (0..facts.len())
            .filter(|&q| !facts[q].cond_only.is_empty())
            .map(|q| (q, facts[q].cond_only.clone()))
            .collect(),
    };
    let program = Program {
        name,
        abbrev,
        statements: l.out.statements,
        body,
        constraints,
        file: Some(f.name.clone()),
    };
    Ok((program, prov))
}

/// Columns that some UPDATE (or ON CONFLICT … DO UPDATE) assigns, and
/// relations some DELETE deletes from; also in the parts of a WITH.
fn assigned_columns(
    schema: &Schema,
    aliases: &[(String, RelId)],
    sql: &Sql,
    out: &mut HashSet<(RelId, usize)>,
    deleted: &mut HashSet<RelId>,
) {
    let _ = sqlparser::ast::visit_statements(sql, |st| {
        if let Sql::Delete(d) = st {
            let (sqlparser::ast::FromTable::WithFromKeyword(v)
            | sqlparser::ast::FromTable::WithoutKeyword(v)) = &d.from;
            for t in v {
                if let TableFactor::Table { name, .. } = &t.relation {
                    let rel = name.0.last().and_then(|p| p.as_ident());
                    deleted.extend(rel.and_then(|i| find_rel(schema, aliases, i)));
                }
            }
        }
        assigned_in(schema, aliases, st, out);
        ControlFlow::<()>::Continue(())
    });
}

fn assigned_in(
    schema: &Schema,
    aliases: &[(String, RelId)],
    sql: &Sql,
    out: &mut HashSet<(RelId, usize)>,
) {
    let mut note = |name: &sqlparser::ast::ObjectName,
                    assignments: &[sqlparser::ast::Assignment]| {
        let Some(rel) = name
            .0
            .last()
            .and_then(|p| p.as_ident())
            .and_then(|i| find_rel(schema, aliases, i))
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

/// The relation a table name means: a table of the schema, or a partition
/// or inheritance child, which is a relation of its root (`Extras::aliases`).
fn find_rel(schema: &Schema, aliases: &[(String, RelId)], i: &Ident) -> Option<RelId> {
    schema
        .relations
        .iter()
        .position(|r| same_name(&r.name, i))
        .or_else(|| {
            aliases
                .iter()
                .find(|(n, _)| same_name(n, i))
                .map(|(_, r)| *r)
        })
}

/// Appends one program's provenance to the workload's; returns its
/// unwritten joins (`cte_rows::unwritten_joins` reads them once all
/// programs are lowered).
fn record(p: &mut Provenance, prov: ProgramProvenance) -> Vec<(usize, usize)> {
    p.programs.push(prov.pins);
    p.sources.push(prov.sources);
    p.key_share.push(prov.key_share);
    p.alternatives.push(prov.alternatives);
    p.inexact.push(prov.inexact);
    p.limited.push(prov.limited);
    p.orders.push(prov.orders);
    p.ranges.push(prov.ranges);
    p.sets.push(prov.sets);
    p.scans.push(prov.scans);
    p.inside.push(prov.inside);
    p.parts.push(prov.parts);
    p.conditions.push(prov.conditions);
    p.tests.push(prov.tests);
    p.cond_only.push(prov.cond_only);
    p.not_null.push(prov.not_null);
    prov.joined
}

/// One program's provenance as lowered: its entry of each per-program
/// field of [`Provenance`] (named alike; described there), and `joined`,
/// the joins on a data-modifying CTE's rows by statement and attribute,
/// which [`record`] hands back for `cte_rows::unwritten_joins` (they need
/// the whole workload).
struct ProgramProvenance {
    pins: Vec<Pins>,
    sources: Vec<(usize, crate::model::provenance::Source)>,
    key_share: Vec<usize>,
    alternatives: Vec<crate::model::provenance::Alternative>,
    inexact: Vec<usize>,
    joined: Vec<(usize, usize)>,
    limited: Vec<usize>,
    orders: Vec<(usize, usize, bool)>,
    ranges: Vec<crate::model::provenance::Range>,
    sets: Vec<(usize, usize, crate::model::provenance::Value)>,
    scans: Vec<usize>,
    inside: Vec<(usize, String)>,
    parts: Vec<Option<crate::model::provenance::Part>>,
    conditions: Vec<(usize, Vec<usize>, crate::model::provenance::Role)>,
    tests: Vec<(usize, Vec<(usize, crate::model::provenance::Test)>)>,
    cond_only: Vec<(usize, Vec<usize>)>,
    not_null: Vec<(usize, usize)>,
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
    /// The loops around the statement (innermost last), for "ran in this
    /// iteration" (`integrity`).
    loops: Vec<usize>,
    /// Runs whenever its path is taken (false for one alternative of a
    /// branch the lowering made itself: upserts, extra conjuncts).
    certain: bool,
    /// In the rolled-back prefix of an EXCEPTION block: it did not happen
    /// in the execution it stands for, so no constraint involves it.
    rolled_back: bool,
    /// Columns pinned for the provenance only (not for constraint
    /// inference): a referential check's or action's FK columns, equal to
    /// the deleted parent's key (`pin_children`).
    value_pins: Vec<(usize, Term)>,
    /// The columns of `value_pins` pinned by a join on a CTE's row
    /// (`cte_rows.rs`; dropped when the workload writes the joined column).
    joined: Vec<usize>,
    /// A foreign-key existence read (`SELECT 1 … FOR KEY SHARE`): for the
    /// provenance (`Provenance::key_share`), not the BTP.
    key_share: bool,
    /// The WHERE has conjuncts on pinned columns or on no column beyond
    /// its equalities (`bind_uses`): for the provenance.
    inexact: bool,
    /// The locked re-read of a key-based locking read whose existence
    /// the statement's snapshot scan (an earlier statement over the same
    /// key) already reads: a missing row leaves it a locking key sel
    /// (`apply_may_miss`; docs/rules.md, "Locking reads in a WITH").
    scanned: bool,
    /// A plain INSERT (no ON CONFLICT): the row it returns is one it
    /// inserted (`Held::OwnInserts`).
    plain_insert: bool,
    /// A read of a SELECT whose result is not every matching row (MIN,
    /// MAX, LIMIT, one row INTO): for the provenance
    /// (`Provenance::limited`), not the BTP.
    limited: bool,
    /// A limited read's order, when one key column: (attribute,
    /// descending) (`Provenance::orders`).
    order: Option<(usize, bool)>,
    /// Range conjuncts on columns nothing else in the WHERE tests:
    /// (column, bound, upper) (`Provenance::ranges`).
    ranges: Vec<(usize, Term, bool)>,
    /// An UPDATE's SET values that are a literal, NULL or a parameter:
    /// (column, value) (`Provenance::sets`).
    sets: Vec<(usize, Term)>,
    /// The snapshot scan of an UPDATE/DELETE target in a WITH
    /// (`write_after_reads`): `Provenance::scans`.
    scan: bool,
    /// The text of the SQL statement it runs inside, when not its own: an
    /// integrity-check read (set with the display label, `check_read`), a
    /// function body's statement (`Provenance::inside`).
    inside: Option<String>,
    /// The SQL statement and snapshot it is a part of (`Provenance::parts`).
    part: Option<crate::model::provenance::Part>,
    /// A keyed UPDATE/DELETE with extra conjuncts, or its no-match key
    /// sel: (the extra columns, no-match branch) (`Provenance::conditions`).
    cond: Option<(Vec<usize>, crate::model::provenance::Role)>,
    /// Its extra conjuncts as tests of columns against constants, when
    /// all of them that are not equalities are such (`Provenance::tests`).
    tests: Option<Vec<(usize, crate::model::provenance::Test)>>,
    /// A keyed UPDATE's columns read only for its extra conjuncts
    /// (`Provenance::cond_only`).
    cond_only: Vec<usize>,
    /// SET columns whose value is never NULL (`Provenance::not_null`).
    not_null: Vec<usize>,
}

/// The state of lowering one transaction, in parts with one concern each:
/// most methods touch one or two of them.
struct Lowerer<'a> {
    /// What the whole workload shares (schema, functions, …); read only.
    cat: &'a Catalogue<'a>,
    /// The program being built: statements, their facts, provenance.
    out: Built,
    /// The file positions refer to.
    src: SourceText,
    /// Statement ids and warnings, shared with the other programs.
    sink: Sink<'a>,
    /// Program variables and the symbolic values they hold.
    vars: Vars,
    /// Where in the control structure the lowering is.
    pos: Position,
    /// Tables and CTEs in scope for the statement being lowered.
    sql: SqlScope,
    /// Where the parts of the statement being lowered go (order.rs).
    stage: Staging,
    /// Function calls inlined and queries lowered, for `audit`.
    inl: Inlining,
}

/// The program being built.
#[derive(Default)]
struct Built {
    statements: Vec<Statement>,
    facts: Vec<Facts>,
    /// Checks PostgreSQL runs at COMMIT (deferred foreign keys), appended
    /// to the end of the transaction: statement index, and whether the
    /// statement that queued it runs exactly once on every path.
    at_commit: Vec<(usize, bool)>,
    /// How `SET CONSTRAINTS` set each foreign key in this transaction.
    fk_modes: Vec<hooks::FkMode>,
    /// Provenance: where some fresh values come from (`model::provenance::
    /// Source`), for the explorer's values (issue 23).
    sources: Vec<(usize, crate::model::provenance::Source)>,
}

/// The file positions refer to.
struct SourceText {
    /// The file itself (swapped while lowering an inlined body).
    file: SourceFile,
    /// The program's file and the offsets of its JDBC `?`s (numbered `?1`,
    /// … in order).
    qmarks: Option<(String, Vec<usize>)>,
}

/// What the lowering of every program of the workload appends to.
struct Sink<'a> {
    /// The last statement id given (`q1`, `q2`, … across the workload).
    counter: &'a mut usize,
    warnings: &'a mut Vec<Warning>,
}

/// Program variables and their symbolic values (`symbolic.rs`).
#[derive(Default)]
struct Vars {
    env: HashMap<String, Term>,
    /// Phi terms: (IF id, value per branch, the implicit ELSE last).
    phis: Vec<(usize, Vec<Term>)>,
    /// The last fresh symbol made (`Vars::fresh`).
    fresh: usize,
    /// Variables the program tests for NULL (IS NULL, COALESCE, …): a
    /// key-based read INTO one of them may find no row.
    null_tested: HashSet<String>,
    /// The program is a routine (`Unit::typed`): its parameters have
    /// declared types (`Lowerer::untyped_params`).
    typed: bool,
}

impl Vars {
    /// A new opaque symbol.
    fn fresh(&mut self) -> Term {
        self.fresh += 1;
        Term::Fresh(self.fresh)
    }
}

/// Where in the program's control structure the lowering is.
#[derive(Default)]
struct Position {
    /// The IF branches around: (IF id, branch index).
    path: Vec<(usize, usize)>,
    next_if: usize,
    /// The loops around (ids, innermost last).
    loops: Vec<usize>,
    next_loop: usize,
    /// What runs after the compound nodes being lowered (innermost last;
    /// a loop's body for its next iteration), for FOUND tests after the
    /// end of a nested sequence (`control::found_scan`).
    continuations: Vec<Vec<Node>>,
    /// Positive while lowering the rolled-back prefix of an EXCEPTION
    /// block (`try_block`): a RAISE there starts the handler.
    prefix: usize,
    /// Positive while lowering a subquery, an expression, a FOR query or a
    /// function body: a key-based read there never aborts when its row
    /// is missing, so it is predicate-based.
    sub_depth: usize,
    /// The statement being lowered may find no row (see `statement`).
    stmt_may_miss: bool,
    /// The program tests whether the statement being lowered found a row
    /// (FOUND, or IS NULL of a variable it sets): its INTO values are not
    /// `Source::Read { nullable }` (the explorer evaluates no test).
    stmt_tested: bool,
}

/// What is in scope for the statement being lowered.
#[derive(Default)]
struct SqlScope {
    /// Tables of the statements enclosing the subquery being lowered,
    /// outermost first, and the outer columns it referenced (correlation).
    scopes: Vec<Vec<TableRef>>,
    outer_hits: Vec<Vec<(usize, usize)>>,
    /// CTEs in scope (WITH), innermost last.
    ctes: Vec<Cte>,
    /// The statement's lock clause is FOR KEY SHARE (see `normalize_locks`).
    weak_lock: bool,
}

/// Where the parts of the statement being lowered go: snapshot reads
/// before lock waits, deferred function bodies (order.rs).
#[derive(Default)]
struct Staging {
    /// Set by `with_parts` for the one part it lowers next: that part
    /// leaves the reads it makes on the statement's snapshot in
    /// `split_out` and returns only what runs after a lock wait (writes,
    /// locking reads). See `order.rs`.
    split: bool,
    split_out: Vec<Body>,
    /// Inside a statement that calls a VOLATILE function: the inlined
    /// bodies of those calls, which run after the statement's snapshot
    /// reads and before its writes (order.rs).
    defer: Option<Vec<Body>>,
    /// The lowered per-row calls of VOLATILE PL/pgSQL routines of the next
    /// statement (a `VOLATILE_LABEL` block) and the first statement index
    /// they created: they go where `defer` goes (order.rs).
    after: Option<(usize, Body)>,
    /// The SQL statement and snapshot being lowered (`Provenance::parts`;
    /// `lower_audited` opens them, a VOLATILE body opens its own
    /// snapshots), and how many groups were opened.
    exec: Option<(usize, usize)>,
    /// The text of the SQL statement `exec` is.
    exec_sql: Option<String>,
    /// (group, loops around it), as `exec`.
    snap: Option<(usize, usize)>,
    groups: usize,
}

/// What `open_statement` restores: `Staging`'s exec, snap and exec_sql.
type Opened = (
    Option<(usize, usize)>,
    Option<(usize, usize)>,
    Option<String>,
);

/// Queries lowered and function calls inlined, for `audit`.
#[derive(Default)]
struct Inlining {
    selects: usize,
    inlined: usize,
    inline_stack: Vec<String>,
    /// Every function inlined so far, in order (the PostgreSQL audit
    /// checks the ones a statement's parse tree calls).
    inlined_names: Vec<String>,
    instances: usize,
}

impl<'a> Lowerer<'a> {
    /// Opens a SQL statement of the program (`Provenance::parts`):
    /// PostgreSQL runs it, and the bodies of the LANGUAGE sql functions it
    /// calls, in one step, on one snapshot — unless a one-snapshot block
    /// around it has one already (`ONE_SNAPSHOT_LABEL`); a VOLATILE body's
    /// queries take their own (`call`). Returns what to restore.
    fn open_statement(&mut self, s: &Snippet) -> Opened {
        let saved = (self.stage.exec, self.stage.snap, self.stage.exec_sql.take());
        let depth = self.pos.loops.len();
        self.stage.groups += 1;
        self.stage.exec = Some((self.stage.groups, depth));
        self.stage.exec_sql = Some(statement_text(&s.text));
        if self.stage.snap.is_none() {
            self.stage.groups += 1;
            self.stage.snap = Some((self.stage.groups, depth));
        }
        saved
    }

    /// The SQL statement and snapshot a statement made now is a part of.
    fn part(&self) -> Option<crate::model::provenance::Part> {
        let (exec, depth) = self.stage.exec?;
        let (snap, snap_depth) = self.stage.snap?;
        Some(crate::model::provenance::Part {
            exec,
            depth,
            snap,
            snap_depth,
        })
    }

    fn line_of(&self, offset: usize) -> usize {
        self.src.file.line_col(offset).0
    }

    fn warn(&mut self, offset: usize, message: impl Into<String>) {
        let line = self.line_of(offset);
        self.sink.warnings.push(Warning {
            file: self.src.file.name.clone(),
            line,
            message: message.into(),
        });
    }

    fn new_statement(&mut self, ty: StmtType, rel: RelId, snip: &Snippet) -> usize {
        *self.sink.counter += 1;
        let text = statement_text(&snip.text);
        let first = snip.text.len() - snip.text.trim_start().len();
        self.out.statements.push(Statement {
            id: format!("q{}", self.sink.counter),
            ty,
            rel,
            pread: None,
            read: None,
            write: None,
            sql: Some(text),
            origin: Some(Origin {
                file: self.src.file.name.clone(),
                line: self.line_of(snip.offset + first),
            }),
            locking: false,
            held: None,
        });
        self.out.facts.push(Facts {
            path: self.pos.path.clone(),
            loops: self.pos.loops.clone(),
            certain: true,
            may_miss: self.pos.stmt_may_miss || self.pos.sub_depth > 0,
            rolled_back: self.pos.prefix > 0,
            part: self.part(),
            // A function body's statement runs inside the caller's.
            inside: self
                .stage
                .exec_sql
                .clone()
                .filter(|_| !self.inl.inline_stack.is_empty()),
            ..Facts::default()
        });
        self.out.statements.len() - 1
    }

    /// The attribute set of columns `cols` of `rel` (was `set`).
    fn attrs(&self, rel: RelId, cols: &BTreeSet<usize>) -> Option<AttrSet> {
        Some(AttrSet::from_indices(
            self.cat.schema.rel(rel).arity(),
            cols.iter().copied(),
        ))
    }

    /// Every attribute of `rel` (was `all`).
    fn all_attrs(&self, rel: RelId) -> Option<AttrSet> {
        Some(AttrSet::full(self.cat.schema.rel(rel).arity()))
    }

    /// Forget statements lowered on a path that aborts.
    fn truncate(&mut self, mark: usize) {
        let removed = self.out.statements.len() - mark;
        self.out.statements.truncate(mark);
        self.out.facts.truncate(mark);
        self.out.at_commit.retain(|&(q, _)| q < mark);
        *self.sink.counter -= removed;
    }
}

impl Lowerer<'_> {
    /// A statement that writes a table with a trigger runs the trigger's
    /// function, whose reads and writes isolint does not model: an error
    /// (docs/sql-frontend.md, "Schema DDL: every clause"). A locking read
    /// (`SELECT … FOR UPDATE`, lowered as an update writing nothing) fires
    /// no trigger.
    fn no_triggered_writes(&self) -> Result<()> {
        for s in &self.out.statements {
            let Some((_, trig, tline)) = self.cat.extras.triggers.iter().find(|t| t.0 == s.rel)
            else {
                continue;
            };
            let writes = match s.ty {
                StmtType::KeySel | StmtType::PredSel => false,
                StmtType::Ins | StmtType::KeyDel | StmtType::PredDel => true,
                StmtType::KeyUpd | StmtType::PredUpd => {
                    s.write.as_ref().is_some_and(|w| !w.is_empty())
                        || !s
                            .sql
                            .as_deref()
                            .unwrap_or("")
                            .trim_start()
                            .to_ascii_lowercase()
                            .starts_with("select")
                }
            };
            if !writes {
                continue;
            }
            let rel = &self.cat.schema.rel(s.rel).name;
            let schema_file = self
                .cat
                .extras
                .file
                .as_ref()
                .map_or("the schema", |f| f.name.as_str());
            let d = Diag::new(format!(
                "this statement writes `{rel}`, which has trigger `{trig}` ({schema_file}:{tline}): triggers are not modelled"
            ))
            .help("a trigger's reads and writes belong to every statement that fires it; isolint cannot see them. Remove the trigger from the schema given to isolint only if its function touches no table");
            return Err(match &s.origin {
                Some(o) if o.file == self.src.file.name => {
                    let at = line_start(&self.src.file.text, o.line);
                    d.at(&self.src.file, at, 1, "here")
                }
                _ => d,
            });
        }
        Ok(())
    }
}

/// Offset of the first character of 1-based line `line`.
fn line_start(text: &str, line: usize) -> usize {
    if line <= 1 {
        return 0;
    }
    text.match_indices('\n')
        .nth(line - 2)
        .map_or(0, |(k, _)| k + 1)
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

/// `pre` followed by `b` (was `seq`).
fn sequence(mut pre: Vec<Body>, b: Body) -> Body {
    if pre.is_empty() {
        b
    } else {
        pre.push(b);
        Body::Seq(pre)
    }
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
            Node::Open(query) => f(query),
            Node::Block { body, handlers, .. } => {
                each_stmt(body, f);
                handlers.iter().flatten().for_each(|h| each_stmt(h, f));
            }
            Node::Prefix(body) => each_stmt(body, f),
            _ => {}
        }
    }
}

/// Every expression outside statements (conditions, bounds, arguments).
fn each_cond(nodes: &[Node], f: &mut dyn FnMut(&ProcExpr)) {
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
            Node::Block { body, handlers, .. } => {
                each_cond(body, f);
                handlers.iter().flatten().for_each(|h| each_cond(h, f));
            }
            Node::Prefix(body) => each_cond(body, f),
            Node::Call { call, .. } => f(call),
            _ => {}
        }
    }
}
