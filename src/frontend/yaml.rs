//! The BTP YAML format (documented in `docs/btp-format.md`).
//!
//! Reading goes YAML text → serde structs (`Raw*`) → [`Workload`], then
//! [`validate`]. Every error carries the YAML line and column: syntax and
//! shape errors from `yaml_serde`, semantic ones through [`Locator`], which
//! finds the key or value an error is about in the text (serde gives no
//! spans for values that deserialized fine).
//!
//! Writing is `report::yaml`.

use indexmap::IndexMap;
use serde::Deserialize;
use std::collections::HashMap;

use crate::model::btp::{
    validate, Body, Constraint, ConstraintKind, Held, Invalid, Origin, Program, Site, Statement,
    StmtType, Workload,
};
use crate::model::error::{did_you_mean, Diag, Result, SourceFile};
use crate::model::schema::{AttrSet, ForeignKey, Relation, Schema};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorkload {
    name: String,
    #[serde(default)]
    description: Option<String>,
    schema: RawSchema,
    programs: Vec<RawProgram>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSchema {
    relations: IndexMap<String, RawRelation>,
    #[serde(default)]
    foreign_keys: IndexMap<String, RawForeignKey>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRelation {
    attributes: Vec<String>,
    #[serde(default)]
    key: Vec<String>,
    #[serde(default)]
    unique: Vec<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawForeignKey {
    from: String,
    to: String,
    #[serde(default)]
    columns: IndexMap<String, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProgram {
    name: String,
    #[serde(default)]
    abbrev: Option<String>,
    #[serde(default)]
    file: Option<String>,
    statements: Vec<RawStatement>,
    #[serde(default)]
    body: Option<yaml_serde::Value>,
    #[serde(default)]
    constraints: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStatement {
    id: String,
    #[serde(rename = "type")]
    ty: String,
    rel: String,
    #[serde(default)]
    pread: Option<Vec<String>>,
    #[serde(default)]
    read: Option<Vec<String>>,
    #[serde(default)]
    write: Option<Vec<String>>,
    #[serde(default)]
    sql: Option<String>,
    #[serde(default)]
    origin: Option<String>,
    #[serde(default)]
    lock: bool,
    /// `Statement::held`: a foreign-key check's KEY SHARE read.
    #[serde(default)]
    key_share: bool,
    /// `Statement::held`: the NO ACTION check of the named foreign key
    /// for a parent row the statement deleted.
    #[serde(default)]
    checks_children_of: Option<String>,
    /// `Statement::held`: reads only rows its transaction inserted.
    #[serde(default)]
    own_inserts: bool,
}

/// An error found while converting: where, and optionally the exact token.
struct Problem {
    invalid: Invalid,
    token: Option<String>,
}

fn problem(site: Site, token: Option<&str>, message: String, help: Option<String>) -> Problem {
    Problem {
        invalid: Invalid {
            site,
            message,
            help,
        },
        token: token.map(str::to_string),
    }
}

/// Parse and validate a BTP workload from YAML text.
pub fn parse(file: &SourceFile) -> Result<Workload> {
    if file
        .text
        .lines()
        .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#'))
    {
        return Err(Diag::new("the workload file is empty")
            .help("a BTP workload needs `name:`, `schema:` and `programs:`; see docs/btp-format.md or run `isolint generate auction --n 1`")
            .at(file, 0, 0, "empty"));
    }
    let raw: RawWorkload = yaml_serde::from_str(&file.text).map_err(|e| {
        let msg = e.to_string();
        // yaml_serde appends " at line L column C"; the span carries that.
        let msg = msg.split(" at line ").next().unwrap_or(&msg).to_string();
        let d = Diag::new(format!("malformed BTP YAML: {msg}"))
            .help("see docs/btp-format.md for the format; `isolint generate auction --n 1` prints an example");
        match e.location() {
            Some(loc) => d.at_line_col(file, loc.line(), loc.column(), "here"),
            None => d.at(file, 0, 0, "in this file"),
        }
    })?;
    let loc = Locator::new(file, &raw);
    let w = convert(&raw).map_err(|p| loc.diag(p))?;
    validate(&w).map_err(|invalid| {
        loc.diag(Problem {
            invalid,
            token: None,
        })
    })?;
    Ok(w)
}

fn convert(raw: &RawWorkload) -> std::result::Result<Workload, Problem> {
    let mut schema = Schema::default();
    for (ri, (name, r)) in raw.schema.relations.iter().enumerate() {
        let site = Site::Relation(ri);
        let mut rel = Relation {
            name: name.clone(),
            attributes: r.attributes.clone(),
            primary_key: vec![],
            unique_keys: vec![],
        };
        for (i, a) in r.attributes.iter().enumerate() {
            if r.attributes[..i].contains(a) {
                return Err(problem(
                    site,
                    Some(a),
                    format!("relation `{name}` lists attribute `{a}` twice"),
                    None,
                ));
            }
        }
        if r.attributes.is_empty() {
            return Err(problem(
                site,
                None,
                format!("relation `{name}` has no attributes"),
                None,
            ));
        }
        let attrs = |cols: &[String]| -> std::result::Result<Vec<usize>, Problem> {
            cols.iter().map(|c| attr_index(&rel, c, site)).collect()
        };
        let primary_key = attrs(&r.key)?;
        let unique_keys = r
            .unique
            .iter()
            .map(|u| attrs(u))
            .collect::<std::result::Result<_, _>>()?;
        rel.primary_key = primary_key;
        rel.unique_keys = unique_keys;
        schema.relations.push(rel);
    }
    let mut names = Names::of(&schema);
    for (fi, (name, f)) in raw.schema.foreign_keys.iter().enumerate() {
        let site = Site::ForeignKey(fi);
        let domain = rel_index(&schema, &names, &f.from, site)?;
        let range = rel_index(&schema, &names, &f.to, site)?;
        let mut columns = vec![];
        for (d, r) in &f.columns {
            columns.push((
                attr_index(schema.rel(domain), d, site)?,
                attr_index(schema.rel(range), r, site)?,
            ));
        }
        schema.foreign_keys.push(ForeignKey {
            name: name.clone(),
            domain,
            range,
            columns,
        });
    }
    for (i, f) in schema.foreign_keys.iter().enumerate() {
        names.fks.entry(f.name.clone()).or_insert(i);
    }
    let mut programs = vec![];
    for (pi, p) in raw.programs.iter().enumerate() {
        programs.push(convert_program(&schema, &names, pi, p)?);
    }
    Ok(Workload {
        name: raw.name.clone(),
        description: raw.description.clone(),
        schema,
        programs,
    })
}

/// Relation names to indices, built once: `Schema::relation` scans the
/// relations, which made loading quadratic in them (Auction(100000) names
/// 200,000 relations; issue 26). Same answer: the exact name first, then
/// the first relation equal ignoring ASCII case.
struct Names {
    exact: HashMap<String, usize>,
    folded: HashMap<String, usize>,
    /// Foreign keys by name (the first of a name, as
    /// `Schema::foreign_key`), filled once they are declared.
    fks: HashMap<String, usize>,
}

impl Names {
    fn of(schema: &Schema) -> Names {
        let mut names = Names {
            exact: HashMap::new(),
            folded: HashMap::new(),
            fks: HashMap::new(),
        };
        for (i, r) in schema.relations.iter().enumerate() {
            names.exact.entry(r.name.clone()).or_insert(i);
            names.folded.entry(r.name.to_ascii_lowercase()).or_insert(i);
        }
        names
    }

    fn get(&self, name: &str) -> Option<usize> {
        (self.exact.get(name))
            .or_else(|| self.folded.get(&name.to_ascii_lowercase()))
            .copied()
    }
}

fn rel_index(
    schema: &Schema,
    names: &Names,
    name: &str,
    site: Site,
) -> std::result::Result<usize, Problem> {
    names.get(name).ok_or_else(|| {
        problem(
            site,
            Some(name),
            format!("unknown relation `{name}`"),
            Some(
                did_you_mean(name, schema.relations.iter().map(|r| r.name.as_str()))
                    .unwrap_or_else(|| {
                        "relations must be declared under `schema: relations:`".into()
                    }),
            ),
        )
    })
}

fn attr_index(rel: &Relation, name: &str, site: Site) -> std::result::Result<usize, Problem> {
    rel.attr(name).ok_or_else(|| {
        problem(
            site,
            Some(name),
            format!("relation `{}` has no attribute `{name}`", rel.name),
            Some(
                did_you_mean(name, rel.attributes.iter().map(String::as_str)).unwrap_or_else(
                    || format!("its attributes are: {}", rel.attributes.join(", ")),
                ),
            ),
        )
    })
}

fn convert_program(
    schema: &Schema,
    names: &Names,
    pi: usize,
    p: &RawProgram,
) -> std::result::Result<Program, Problem> {
    let statements = p
        .statements
        .iter()
        .enumerate()
        .map(|(si, s)| convert_statement(schema, names, pi, si, s))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let lookup = |id: &str, site: Site| -> std::result::Result<usize, Problem> {
        statements.iter().position(|s| s.id == id).ok_or_else(|| {
            problem(
                site,
                Some(id),
                format!("`{}` has no statement `{id}`", p.name),
                Some(
                    did_you_mean(id, statements.iter().map(|s| s.id.as_str()))
                        .unwrap_or_else(|| "declare it under `statements:`".into()),
                ),
            )
        })
    };
    let body = match &p.body {
        None => Body::Seq((0..statements.len()).map(Body::Stmt).collect()),
        Some(v) => convert_body(v, &|id| lookup(id, Site::Field(pi, usize::MAX, "body")), pi)?,
    };
    let constraints = p
        .constraints
        .iter()
        .enumerate()
        .map(|(ci, text)| {
            convert_constraint(schema, names, text, Site::Constraint(pi, ci), &lookup)
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok(Program {
        name: p.name.clone(),
        abbrev: p.abbrev.clone(),
        statements,
        body,
        constraints,
        file: p.file.clone(),
    })
}

/// One statement of program `pi`, its attribute names resolved.
fn convert_statement(
    schema: &Schema,
    names: &Names,
    pi: usize,
    si: usize,
    s: &RawStatement,
) -> std::result::Result<Statement, Problem> {
    let ty = StmtType::parse(&s.ty).ok_or_else(|| {
        problem(
            Site::Field(pi, si, "type"),
            Some(&s.ty),
            format!("unknown statement type `{}`", s.ty),
            Some("use one of: ins, key sel, pred sel, key upd, pred upd, key del, pred del".into()),
        )
    })?;
    let rel = rel_index(schema, names, &s.rel, Site::Field(pi, si, "rel"))?;
    let relation = schema.rel(rel);
    let set = |field: &'static str,
               v: &Option<Vec<String>>|
     -> std::result::Result<Option<AttrSet>, Problem> {
        v.as_ref()
            .map(|names| {
                let mut set = AttrSet::empty(relation.arity());
                for n in names {
                    set.insert(attr_index(relation, n, Site::Field(pi, si, field))?);
                }
                Ok(set)
            })
            .transpose()
    };
    let mut write = set("write", &s.write)?;
    // A predicate update that writes nothing is a predicate locking read.
    // At READ COMMITTED PostgreSQL evaluates it on its snapshot and, after
    // waiting for a row lock, re-checks the waited rows on their new
    // versions (EvalPlanQual): one statement on both sides of another
    // transaction's commit, which Algorithm 2 (q4' strictly before q4)
    // does not consider — the explorer found such workloads called robust
    // that are not (tests/explorer_epq.rs). Fail closed.
    if ty == StmtType::PredUpd && write.as_ref().is_some_and(AttrSet::is_empty) {
        return Err(problem(
            Site::Field(pi, si, "write"),
            None,
            "a `pred upd` with an empty WriteSet (a predicate locking read) cannot be analysed as one BTP statement".into(),
            Some("PostgreSQL reads it on its snapshot and again after a row-lock wait (EvalPlanQual): write it as a `pred sel` (the snapshot scan) followed by a second `pred sel` (the re-read), as isolint lowers `SELECT … WHERE … FOR UPDATE`".into()),
        ));
    }
    // Inserts and deletes write every attribute; let users omit it.
    if write.is_none() && matches!(ty, StmtType::Ins | StmtType::KeyDel | StmtType::PredDel) {
        write = Some(AttrSet::full(relation.arity()));
    }
    let origin = s.origin.as_ref().and_then(|o| {
        let (file, line) = o.rsplit_once(':')?;
        Some(Origin {
            file: file.to_string(),
            line: line.parse().ok()?,
        })
    });
    let held = match (&s.checks_children_of, s.key_share) {
        (Some(name), _) => Some(Held::Children(schema.foreign_key(name).ok_or_else(
            || {
                problem(
                    Site::Field(pi, si, "checks_children_of"),
                    Some(name),
                    format!("unknown foreign key `{name}`"),
                    did_you_mean(name, schema.foreign_keys.iter().map(|f| f.name.as_str())),
                )
            },
        )?)),
        (None, true) => Some(Held::KeyShare),
        (None, false) if s.own_inserts => Some(Held::OwnInserts),
        (None, false) => None,
    };
    Ok(Statement {
        id: s.id.clone(),
        ty,
        rel,
        pread: set("pread", &s.pread)?,
        read: set("read", &s.read)?,
        write,
        sql: s.sql.clone(),
        origin,
        locking: s.lock,
        held,
    })
}

/// `q_j = f(q_i)` or `q_k = id(q_i)`, statements looked up by id.
fn convert_constraint(
    schema: &Schema,
    names: &Names,
    text: &str,
    site: Site,
    lookup: &dyn Fn(&str, Site) -> std::result::Result<usize, Problem>,
) -> std::result::Result<Constraint, Problem> {
    let bad = || {
        problem(
            site,
            None,
            format!("cannot read constraint `{text}`"),
            Some("write it as the paper does: `q_j = f(q_i)` with f a foreign key name, or `q_k = id(q_i)` for a same-tuple constraint".into()),
        )
    };
    let (lhs, rhs) = text.split_once('=').ok_or_else(bad)?;
    let rhs = rhs.trim();
    let (f, arg) = rhs
        .strip_suffix(')')
        .and_then(|r| r.split_once('('))
        .ok_or_else(bad)?;
    let parent = lookup(lhs.trim(), site)?;
    let child = lookup(arg.trim(), site)?;
    let kind = match f.trim() {
        "id" => ConstraintKind::SameTuple,
        name => ConstraintKind::ForeignKey(names.fks.get(name).copied().ok_or_else(|| {
            problem(
                site,
                Some(name),
                format!("unknown foreign key `{name}`"),
                Some(
                    did_you_mean(name, schema.foreign_keys.iter().map(|f| f.name.as_str()))
                        .unwrap_or_else(|| "declare it under `schema: foreign_keys:`".into()),
                ),
            )
        })?),
    };
    Ok(Constraint {
        kind,
        child,
        parent,
    })
}

fn convert_body(
    v: &yaml_serde::Value,
    lookup: &dyn Fn(&str) -> std::result::Result<usize, Problem>,
    pi: usize,
) -> std::result::Result<Body, Problem> {
    use yaml_serde::Value;
    let site = Site::Field(pi, usize::MAX, "body");
    let shape = || {
        problem(
            site,
            None,
            "a body element must be a statement id, a list (sequence), or one of {branch: [..]}, {opt: ..}, {loop: ..}".into(),
            Some("example: body: [q1, {opt: q2}, {loop: [q3, q4]}, {branch: [q5, q6]}]".into()),
        )
    };
    match v {
        Value::String(id) => Ok(Body::Stmt(lookup(id)?)),
        Value::Sequence(items) => Ok(Body::Seq(
            items
                .iter()
                .map(|i| convert_body(i, lookup, pi))
                .collect::<std::result::Result<_, _>>()?,
        )),
        Value::Mapping(m) if m.len() == 1 => {
            let (k, inner) = m.iter().next().ok_or_else(shape)?;
            match k.as_str() {
                Some("opt") => Ok(Body::Opt(Box::new(convert_body(inner, lookup, pi)?))),
                Some("loop") => Ok(Body::Loop(Box::new(convert_body(inner, lookup, pi)?))),
                Some("branch") => match inner {
                    Value::Sequence(alts) if alts.len() >= 2 => Ok(Body::Branch(
                        alts.iter()
                            .map(|a| convert_body(a, lookup, pi))
                            .collect::<std::result::Result<_, _>>()?,
                    )),
                    _ => Err(problem(
                        site,
                        Some("branch"),
                        "`branch` needs a list of at least two alternatives".into(),
                        Some("for `P | ε` write {opt: P}; an empty alternative is []".into()),
                    )),
                },
                _ => Err(shape()),
            }
        }
        _ => Err(shape()),
    }
}

/// Finds where a [`Site`] is in the YAML text. Heuristic but robust for
/// block and flow style: it walks to the program by its `name:`, then to
/// the statement by its `id:`, then to the key or token.
struct Locator<'a> {
    file: &'a SourceFile,
    programs: Vec<(String, Vec<String>)>,
    relations: Vec<String>,
    fks: Vec<String>,
    constraints: Vec<Vec<String>>,
}

impl<'a> Locator<'a> {
    fn new(file: &'a SourceFile, raw: &RawWorkload) -> Locator<'a> {
        Locator {
            file,
            programs: raw
                .programs
                .iter()
                .map(|p| {
                    (
                        p.name.clone(),
                        p.statements.iter().map(|s| s.id.clone()).collect(),
                    )
                })
                .collect(),
            relations: raw.schema.relations.keys().cloned().collect(),
            fks: raw.schema.foreign_keys.keys().cloned().collect(),
            constraints: raw.programs.iter().map(|p| p.constraints.clone()).collect(),
        }
    }

    /// Offset of the first whole-word `needle` at or after `from`.
    fn find(&self, from: usize, to: usize, needle: &str) -> Option<usize> {
        let text = &self.file.text[..to.min(self.file.text.len())];
        let mut start = from.min(text.len());
        while let Some(i) = text[start..].find(needle) {
            let at = start + i;
            let before = text[..at].chars().next_back();
            let after = text[at + needle.len()..].chars().next();
            let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
            if !word(before)
                && (!word(after)
                    || !needle
                        .chars()
                        .last()
                        .is_some_and(|c| c.is_alphanumeric() || c == '_'))
            {
                return Some(at);
            }
            start = at + needle.len().max(1);
        }
        None
    }

    fn find_key_value(&self, from: usize, to: usize, key: &str, value: &str) -> Option<usize> {
        let mut start = from;
        while let Some(k) = self.find(start, to, &format!("{key}:")) {
            let rest = &self.file.text[k + key.len() + 1..];
            let trimmed = rest.trim_start_matches([' ', '"', '\'']);
            if trimmed.starts_with(value) {
                let v = k + key.len() + 1 + (rest.len() - trimmed.len());
                let after = self.file.text[v + value.len()..].chars().next();
                if !after.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                    return Some(k);
                }
            }
            start = k + 1;
        }
        None
    }

    fn program_range(&self, pi: usize) -> (usize, usize) {
        let end = self.file.text.len();
        let programs = self.find(0, end, "programs:").unwrap_or(0);
        let mut at = programs;
        let mut starts = vec![];
        for (name, _) in &self.programs {
            let s = self.find_key_value(at, end, "name", name).unwrap_or(at);
            starts.push(s);
            at = s + 1;
        }
        let start = starts.get(pi).copied().unwrap_or(programs);
        let stop = starts.get(pi + 1).copied().unwrap_or(end);
        (start, stop)
    }

    fn statement_range(&self, pi: usize, si: usize) -> (usize, usize) {
        let (ps, pe) = self.program_range(pi);
        let ids = &self.programs[pi].1;
        let mut at = ps;
        let mut starts = vec![];
        for id in ids {
            let s = self.find_key_value(at, pe, "id", id).unwrap_or(at);
            starts.push(s);
            at = s + 1;
        }
        let start = starts.get(si).copied().unwrap_or(ps);
        let stop = starts.get(si + 1).copied().unwrap_or(pe);
        (start, stop)
    }

    fn locate(&self, site: Site, token: Option<&str>) -> (usize, usize) {
        let end = self.file.text.len();
        let (start, stop, key): (usize, usize, Option<String>) = match site {
            Site::Workload => (0, end, Some("programs:".into())),
            Site::Relation(r) => {
                let s = self.find(0, end, "relations:").unwrap_or(0);
                let r = self
                    .find(s, end, &format!("{}:", self.relations[r]))
                    .unwrap_or(s);
                (r, end, None)
            }
            Site::ForeignKey(f) => {
                let s = self.find(0, end, "foreign_keys:").unwrap_or(0);
                let f = self.find(s, end, &format!("{}:", self.fks[f])).unwrap_or(s);
                (f, end, None)
            }
            Site::Program(pi) => {
                let (s, e) = self.program_range(pi);
                (s, e, None)
            }
            Site::Statement(pi, si) => {
                let (s, e) = self.statement_range(pi, si);
                (s, e, None)
            }
            Site::Field(pi, usize::MAX, field) => {
                let (s, e) = self.program_range(pi);
                (s, e, Some(format!("{field}:")))
            }
            Site::Field(pi, si, field) => {
                let (s, e) = self.statement_range(pi, si);
                (s, e, Some(format!("{field}:")))
            }
            Site::Constraint(pi, ci) => {
                let (s, e) = self.program_range(pi);
                let c = self.find(s, e, "constraints:").unwrap_or(s);
                let text = &self.constraints[pi][ci];
                let head = text.split('=').next().unwrap_or(text).trim();
                let at = self.file.text[c..e]
                    .find(text.as_str())
                    .map(|i| c + i)
                    .or_else(|| self.find(c, e, head));
                (at.unwrap_or(c), e, None)
            }
        };
        let mut at = start;
        if let Some(k) = key {
            at = self.find(start, stop, &k).unwrap_or(start);
        }
        if let Some(t) = token {
            if let Some(i) = self.find(at, stop, t) {
                return (i, t.len());
            }
        }
        let len = self.file.text[at..]
            .find(['\n', ',', '}'])
            .unwrap_or(0)
            .max(1);
        (at, len)
    }

    fn diag(&self, p: Problem) -> Box<Diag> {
        let (offset, len) = self.locate(p.invalid.site, p.token.as_deref());
        let mut d = Diag::new(p.invalid.message);
        if let Some(h) = p.invalid.help {
            d = d.help(h);
        }
        d.at(self.file, offset, len, "here")
    }
}
