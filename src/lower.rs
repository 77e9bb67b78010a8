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
use crate::sql::ddl::parse_schema;
use crate::sql::program::{abbreviation, parse_program, Node};
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
    let schema = parse_schema(&SourceFile::read(&schema_path)?)?;
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
    let sources: Vec<SourceFile> = files
        .iter()
        .map(|p| SourceFile::read(p))
        .collect::<Result<_>>()?;
    let name = manifest
        .name
        .clone()
        .or_else(|| {
            let d = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
            d.file_name().map(|n| n.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| "workload".into());
    let (workload, warnings) =
        lower_programs(name, manifest.description.clone(), schema, &sources)?;
    check_size(&workload)?;
    Ok(Loaded { workload, warnings })
}

/// Lower already-read program files against a schema.
pub fn lower_programs(
    name: String,
    description: Option<String>,
    schema: Schema,
    sources: &[SourceFile],
) -> Result<(Workload, Vec<Warning>)> {
    // Parse everything first: UNIQUE keys count only if no UPDATE assigns
    // them, which needs the whole workload.
    let mut trees = vec![];
    for f in sources {
        trees.push(parse_program(f)?);
    }
    let mut parsed: Vec<HashMap<usize, (Sql, Vec<String>)>> = vec![];
    let mut assigned: HashSet<(RelId, usize)> = HashSet::new();
    for (f, tree) in sources.iter().zip(&trees) {
        let mut map = HashMap::new();
        parse_all(f, tree, &mut map)?;
        for (sql, _) in map.values() {
            if let Sql::Update(u) = sql {
                if let TableFactor::Table { name, .. } = &u.table.relation {
                    if let Some(rel) = name
                        .0
                        .last()
                        .and_then(|p| p.as_ident())
                        .and_then(|i| find_rel(&schema, i))
                    {
                        for a in &u.assignments {
                            for col in assignment_columns(&a.target) {
                                if let Some(c) = schema
                                    .rel(rel)
                                    .attributes
                                    .iter()
                                    .position(|x| same_name(x, &col))
                                {
                                    assigned.insert((rel, c));
                                }
                            }
                        }
                    }
                }
            }
        }
        parsed.push(map);
    }
    let mut programs = vec![];
    let mut warnings = vec![];
    let mut counter = 0usize;
    for ((f, tree), map) in sources.iter().zip(&trees).zip(&parsed) {
        let mut l = Lowerer {
            schema: &schema,
            file: f,
            parsed: map,
            assigned: &assigned,
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
            counter: &mut counter,
            warnings: &mut warnings,
        };
        let (body, _) = l.block(tree)?;
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
        let constraints = l.infer_constraints();
        let stem = Path::new(&f.name)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        programs.push(Program {
            name: stem,
            abbrev: abbreviation(f),
            statements: l.statements,
            body,
            constraints,
            file: Some(f.name.clone()),
        });
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

/// Parse every SQL statement of the tree (keyed by its offset), with the
/// INTO targets cut out of the text.
fn parse_all(
    f: &SourceFile,
    nodes: &[Node],
    out: &mut HashMap<usize, (Sql, Vec<String>)>,
) -> Result<()> {
    for n in nodes {
        match n {
            Node::Sql(s) => {
                let (clean, into) = strip_into(&normalize_locks(&s.text));
                let snip = Snippet {
                    text: clean,
                    offset: s.offset,
                };
                let stmt = parse_one(f, &snip)?;
                out.insert(s.offset, (stmt, into));
            }
            Node::If(bs) => {
                for (_, b) in bs {
                    parse_all(f, b, out)?;
                }
            }
            Node::Loop { body, .. } => parse_all(f, body, out)?,
            Node::Exit { .. } | Node::Abort => {}
        }
    }
    Ok(())
}

/// Blank out `INTO :a, :b` after a SELECT list or RETURNING list (sqlparser
/// does not take variables there); positions are kept for error spans.
fn strip_into(text: &str) -> (String, Vec<String>) {
    let upper = text.to_uppercase();
    let b = upper.as_bytes();
    let mut depth = 0i32;
    let mut i = 0;
    let mut first_word: Option<String> = None;
    let mut seen_returning = false;
    let mut in_str = false;
    while i < b.len() {
        let c = b[i];
        if in_str {
            if c == b'\'' {
                in_str = false;
            }
            i += 1;
            continue;
        }
        match c {
            b'\'' => in_str = true,
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
            if w == "INTO" && (seen_returning || first_word.as_deref() == Some("SELECT")) {
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
                    while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                        j += 1;
                    }
                    if ns == j || (vs == ns && is_keyword(&upper[ns..j])) {
                        j = vs;
                        break;
                    }
                    vars.push(text[ns..j].to_lowercase());
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
/// `FOR NO KEY UPDATE` and `FOR KEY SHARE`; they lock the row the same way
/// for isolint's purpose. Rewritten in place, padded to keep positions.
fn normalize_locks(text: &str) -> String {
    let mut out = text.to_string();
    for (from, to) in [
        ("FOR NO KEY UPDATE", "FOR UPDATE"),
        ("FOR KEY SHARE", "FOR SHARE"),
    ] {
        loop {
            let upper = out.to_uppercase();
            let words: Vec<&str> = from.split(' ').collect();
            // Match the words with any whitespace between them.
            let Some(start) = find_words(&upper, &words) else {
                break;
            };
            let (s, e) = start;
            let replacement = format!("{to}{}", " ".repeat((e - s).saturating_sub(to.len())));
            out.replace_range(s..e, &replacement);
        }
    }
    out
}

fn find_words(upper: &str, words: &[&str]) -> Option<(usize, usize)> {
    let mut from = 0;
    while let Some(i) = upper[from..].find(words[0]) {
        let s = from + i;
        let mut at = s + words[0].len();
        let mut ok = s == 0 || !upper.as_bytes()[s - 1].is_ascii_alphanumeric();
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

fn is_keyword(w: &str) -> bool {
    matches!(
        w,
        "FROM" | "WHERE" | "ORDER" | "GROUP" | "LIMIT" | "FOR" | "UNION" | "HAVING"
    )
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
}

struct Lowerer<'a> {
    schema: &'a Schema,
    file: &'a SourceFile,
    parsed: &'a HashMap<usize, (Sql, Vec<String>)>,
    assigned: &'a HashSet<(RelId, usize)>,
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
                Node::Sql(s) => (Some(self.statement(s, nodes.get(i + 1))?), false),
                Node::Abort => return Ok((None, false)),
                // EXIT and EXIT WHEN are treated alike: the rest of the body
                // becomes optional either way (the condition is not modelled).
                Node::Exit { at, .. } => {
                    if self.loops.is_empty() {
                        return Err(Diag::new("EXIT outside a loop")
                            .help("EXIT leaves the innermost LOOP; remove it or put it inside LOOP … END LOOP;")
                            .at(self.file, *at, 4, "here"));
                    }
                    (Some(Body::Seq(vec![])), true)
                }
                Node::If(branches) => self.if_node(branches)?,
                Node::Loop { var, body, .. } => {
                    (Some(self.loop_node(var.as_deref(), body)?), false)
                }
            };
            match b {
                None => return Ok((None, false)),
                // ε contributes nothing to a sequence.
                Some(Body::Seq(v)) if v.is_empty() => {}
                Some(b) => seq.push(b),
            }
            i += 1;
            if exits {
                // The rest of this sequence may be skipped by the EXIT: an
                // over-approximation (later iterations stay possible).
                let mark = self.statements.len();
                match self.block(&nodes[i..])?.0 {
                    Some(r) => seq.push(Body::Opt(Box::new(r))),
                    // Going on after the EXIT always aborts: only leaving counts.
                    None => self.truncate(mark),
                }
                return Ok((Some(Body::Seq(seq)), true));
            }
        }
        Ok((Some(Body::Seq(seq)), false))
    }

    fn if_node(
        &mut self,
        branches: &[(Option<Snippet>, Vec<Node>)],
    ) -> Result<(Option<Body>, bool)> {
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
        Ok(match alts.len() {
            0 => (None, false),
            1 => (alts.pop(), exits),
            _ => (Some(Body::Branch(alts)), exits),
        })
    }

    fn loop_node(&mut self, var: Option<&str>, body: &[Node]) -> Result<Body> {
        let id = self.next_loop;
        self.next_loop += 1;
        // Variables assigned in the body differ between iterations: fresh
        // symbols at entry and at exit.
        let mut assigned = HashSet::new();
        collect_assigned(body, self.parsed, &mut assigned);
        if let Some(v) = var {
            assigned.insert(v.to_string());
        }
        for v in &assigned {
            let t = self.fresh();
            self.env.insert(v.clone(), t);
        }
        self.loops.push(id);
        let mark = self.statements.len();
        let (b, _) = self.block(body)?;
        if b.is_none() {
            self.truncate(mark);
        }
        self.loops.pop();
        for v in &assigned {
            let t = self.fresh();
            self.env.insert(v.clone(), t);
        }
        // A body that always aborts can only run zero times.
        Ok(match b {
            Some(b) => Body::Loop(Box::new(b)),
            None => Body::Seq(vec![]),
        })
    }

    fn var_term(&mut self, name: &str) -> Term {
        let key = name.trim_start_matches(':').to_lowercase();
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

    fn statement(&mut self, s: &Snippet, next: Option<&Node>) -> Result<Body> {
        let Some((sql, into)) = self.parsed.get(&s.offset) else {
            return Err(Diag::new("internal error: statement not parsed")
                .at(self.file, s.offset, 1, "here"));
        };
        let (sql, into) = (sql.clone(), into.clone());
        let snip = s.clone();
        match &sql {
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
                            if v.rows.len() == 1 {
                                for (c, e) in cols.iter().zip(v.rows[0].iter()) {
                                    let mut scratch = Uses::default();
                                    // Subqueries inside VALUES become reads.
                                    self.collect(&tables, e, &snip, Some(&mut pre), Clause::Read, std::slice::from_mut(&mut scratch))?;
                                    let t = self.term(e);
                                    eq.push((*c, t));
                                }
                            }
                        }
                    }
                    Some(q) => {
                        // INSERT … SELECT: the SELECT is a read before the insert.
                        pre.push(self.select(q, &snip, &[])?);
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
                .help("DDL belongs in the schema file; SET, LOCK and other commands cannot be modelled as BTP statements")
                .at(self.file, s.offset + (s.text.len() - s.text.trim_start().len()), 6, "here")),
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
        let Ok(e) = crate::sql::parse_expr(self.file, cond) else {
            return false;
        };
        match e {
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
                    let b = self.select(q, snip, &[]);
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
                read.extend(Self::extras(u, &key));
                self.statements[s].read = self.set(rel, &read);
                self.statements[s].locking = locking.get(ti).copied().unwrap_or(false);
                self.facts[s].key = Some(key);
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
        if tables.is_empty() {
            self.warn(snip.offset, "statement reads no table; nothing to model");
            for v in into {
                let t = self.fresh();
                self.env.insert(v.clone(), t);
            }
            return Ok(Body::Seq(vec![]));
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
                q.locks.iter().any(|l| match &l.of {
                    None => true,
                    Some(name) => name.0.last().and_then(|p| p.as_ident()).is_some_and(|i| {
                        t.alias.as_deref().is_some_and(|a| same_name(a, i)) || same_name(&t.name, i)
                    }),
                })
            })
            .collect();
        let mut parts = pre;
        let single = tables.len() == 1;
        let first_key_based = self.table_reads(&tables, &uses, 0, &locking, snip, &mut parts);
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

/// Variables assigned (by INTO) anywhere in `nodes`.
fn collect_assigned(
    nodes: &[Node],
    parsed: &HashMap<usize, (Sql, Vec<String>)>,
    out: &mut HashSet<String>,
) {
    for n in nodes {
        match n {
            Node::Sql(s) => {
                if let Some((_, into)) = parsed.get(&s.offset) {
                    out.extend(into.iter().cloned());
                }
            }
            Node::If(bs) => bs
                .iter()
                .for_each(|(_, b)| collect_assigned(b, parsed, out)),
            Node::Loop { var, body, .. } => {
                if let Some(v) = var {
                    out.insert(v.clone());
                }
                collect_assigned(body, parsed, out)
            }
            Node::Exit { .. } | Node::Abort => {}
        }
    }
}
