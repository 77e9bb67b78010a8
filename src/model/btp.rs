//! Basic transaction programs (Section 5.1).
//!
//! A [`Workload`] is a schema plus a set of BTPs. Each [`Program`] has
//! statements with `type`, `rel`, `PReadSet`, `ReadSet`, `WriteSet`
//! (`None` = ⊥, distinct from the empty set), a control structure
//! ([`Body`]: sequence, `P1 | P2`, `P | ε`, `loop(P)`) and constraints
//! `q_j = f(q_i)`. This module owns the model and its validation
//! (Figure 5, the FK rules of Section 5.1); `frontend::yaml` reads it and
//! `report::yaml` writes it.
//! It does not unfold or analyse anything.

use std::fmt;

use crate::model::schema::{AttrSet, FkId, RelId, Schema};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StmtType {
    Ins,
    KeySel,
    PredSel,
    KeyUpd,
    PredUpd,
    KeyDel,
    PredDel,
}

impl StmtType {
    pub const ALL: [StmtType; 7] = [
        StmtType::Ins,
        StmtType::KeySel,
        StmtType::PredSel,
        StmtType::KeyUpd,
        StmtType::PredUpd,
        StmtType::KeyDel,
        StmtType::PredDel,
    ];

    /// Row/column index in Tables 1a and 1b (the paper's order).
    pub fn index(self) -> usize {
        self as usize
    }

    pub fn name(self) -> &'static str {
        match self {
            StmtType::Ins => "ins",
            StmtType::KeySel => "key sel",
            StmtType::PredSel => "pred sel",
            StmtType::KeyUpd => "key upd",
            StmtType::PredUpd => "pred upd",
            StmtType::KeyDel => "key del",
            StmtType::PredDel => "pred del",
        }
    }

    pub fn parse(s: &str) -> Option<StmtType> {
        let norm: String = s
            .split(|c: char| c.is_whitespace() || c == '_' || c == '-')
            .filter(|p| !p.is_empty())
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase();
        StmtType::ALL.into_iter().find(|t| t.name() == norm)
    }

    pub fn is_key_based(self) -> bool {
        matches!(self, StmtType::KeySel | StmtType::KeyUpd | StmtType::KeyDel)
    }

    /// Types that may be the parent of a constraint whose protection
    /// CDEPCONDS uses: the statement wrote the parent tuple (Algorithm 1).
    pub fn is_key_write(self) -> bool {
        matches!(self, StmtType::KeyUpd | StmtType::KeyDel | StmtType::Ins)
    }

    /// Types whose instantiation starts with an R- or PR-operation, the
    /// second alternative of the ordered-counterflow condition (Theorem 6.4).
    pub fn starts_with_read(self) -> bool {
        matches!(
            self,
            StmtType::KeySel | StmtType::PredSel | StmtType::PredUpd | StmtType::PredDel
        )
    }
}

impl fmt::Display for StmtType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where a statement came from, for messages and witnesses.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Origin {
    pub file: String,
    pub line: usize,
}

/// `file:line`, as compilers write a location.
impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Statement {
    pub id: String,
    pub ty: StmtType,
    pub rel: RelId,
    pub pread: Option<AttrSet>,
    pub read: Option<AttrSet>,
    pub write: Option<AttrSet>,
    /// The SQL this statement models, for display only.
    pub sql: Option<String>,
    pub origin: Option<Origin>,
    /// A key-based read that takes the row lock (`SELECT … FOR UPDATE`,
    /// `FOR NO KEY UPDATE`, `FOR SHARE`). Used by `check` fix suggestions.
    pub locking: bool,
    /// What the statement's transaction holds that orders other writers
    /// against this statement's reads (`None` for most statements); the
    /// conflict rules use it (docs/rules.md, "Refinements").
    pub held: Option<Held>,
}

/// See [`Statement::held`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Held {
    /// A key sel that is a foreign-key check of an INSERT or UPDATE
    /// (`SELECT 1 FROM parent WHERE key = … FOR KEY SHARE`): the parent
    /// row it finds is KEY SHARE locked until commit (it blocks deletes).
    KeyShare,
    /// A pred sel that is the NO ACTION / RESTRICT check of foreign key
    /// `f` for a parent row this statement deleted (or whose key it
    /// changed): it reads the children whose `f` columns equal that row's
    /// key while the transaction holds the row's FOR UPDATE lock.
    Children(FkId),
    /// A key sel or pred sel whose key is pinned to keys of rows its own
    /// transaction inserted earlier (`WHERE id = :new_id`, `id =
    /// ANY(ARRAY[:a, :b])` after `INSERT … RETURNING id INTO …`): until
    /// its commit no other transaction can write a row with such a key
    /// (the rows are invisible to others, and a uniqueness check waits).
    OwnInserts,
}

/// Control structure of a BTP: `P ← loop(P) | (P | P) | (P | ε) | P;P | q`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// A statement, by index into [`Program::statements`].
    Stmt(usize),
    Seq(Vec<Body>),
    /// `P1 | P2 | …`: exactly one alternative runs. Two alternatives are the
    /// paper's `(P1 | P2)`; more are nested binary choices.
    Branch(Vec<Body>),
    /// `(P | ε)`.
    Opt(Box<Body>),
    Loop(Box<Body>),
}

impl Body {
    /// Statement indices in textual order.
    pub fn statements(&self, out: &mut Vec<usize>) {
        match self {
            Body::Stmt(i) => out.push(*i),
            Body::Seq(v) | Body::Branch(v) => v.iter().for_each(|b| b.statements(out)),
            Body::Opt(b) | Body::Loop(b) => b.statements(out),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ConstraintKind {
    /// `q_j = f(q_i)` for a foreign key `f` (Section 5.1).
    ForeignKey(FkId),
    /// `q_k = id(q_i)`: q_i touches the same tuple as the earlier key-based
    /// write q_k. An isolint extension; see `docs/same-tuple.md`.
    SameTuple,
}

/// `parent = kind(child)`, i.e. the paper's `q_j = f(q_i)` with
/// `child = q_i`, `parent = q_j` (statement indices).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Constraint {
    pub kind: ConstraintKind,
    pub child: usize,
    pub parent: usize,
}

/// The routine a program runs, as PostgreSQL identifies it (issue 23,
/// item 5): set by the front-end for a PL/pgSQL routine or `LANGUAGE sql`
/// function named under `programs:`, from its `CREATE` statement — never
/// parsed back from the program's name, which may be a signature (an
/// overload) or hold any character a quoted name may (`"pay#2"`). Replay
/// finds the declared types of its parameters and variables by it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProgramRoutine {
    /// The schema that qualifies the name, if any but `public`.
    pub schema: Option<String>,
    /// The name as PostgreSQL stores it (unquoted; a quoted name's case
    /// and characters kept).
    pub name: String,
    /// Every parameter in order (`$k` is the k-th): its name and type.
    pub params: Vec<RoutineParam>,
    /// The DECLAREd variables of its body (lower-case name → type as
    /// written, typmod and `%TYPE` kept; CONSTANT, NOT NULL, COLLATE and
    /// the default dropped), and as `f.v` those of each routine `f` that
    /// may be inlined into it (inlining renames them so). Not its
    /// parameters: PostgreSQL's call types those.
    pub variables: std::collections::BTreeMap<String, String>,
}

impl ProgramRoutine {
    /// The input parameters' types: with the schema and name, the
    /// routine's identity (`CREATE OR REPLACE` with other input types
    /// makes an overload).
    pub fn args(&self) -> Vec<&str> {
        self.params
            .iter()
            .filter(|p| p.input)
            .map(|p| p.ty.as_str())
            .collect()
    }
}

/// A parameter of a [`ProgramRoutine`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RoutineParam {
    /// Lower case (a quoted name as written); `None` when unnamed.
    pub name: Option<String>,
    /// The type (`plpgsql::norm_type`: `integer`, `date`, `mood`,
    /// `acct.bal%type`).
    pub ty: String,
    /// Part of the identity: a function's IN, INOUT and VARIADIC
    /// parameters, a procedure's all.
    pub input: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    pub name: String,
    pub abbrev: Option<String>,
    pub statements: Vec<Statement>,
    pub body: Body,
    pub constraints: Vec<Constraint>,
    /// Source file of the program (SQL front-end), for messages.
    pub file: Option<String>,
}

impl Program {
    /// Abbreviation as in Figures 6 and 7, or the name.
    pub fn short(&self) -> &str {
        self.abbrev.as_deref().unwrap_or(&self.name)
    }

    pub fn stmt(&self, id: &str) -> Option<usize> {
        self.statements.iter().position(|s| s.id == id)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workload {
    pub name: String,
    pub description: Option<String>,
    pub schema: Schema,
    pub programs: Vec<Program>,
}

impl Workload {
    pub fn program(&self, name: &str) -> Option<usize> {
        self.programs
            .iter()
            .position(|p| p.name == name || p.abbrev.as_deref() == Some(name))
    }

    pub fn constraint_text(&self, p: &Program, c: &Constraint) -> String {
        let f = match c.kind {
            ConstraintKind::ForeignKey(f) => self.schema.foreign_keys[f].name.as_str(),
            ConstraintKind::SameTuple => "id",
        };
        format!(
            "{} = {}({})",
            p.statements[c.parent].id, f, p.statements[c.child].id
        )
    }
}

/// The place a validation problem is about; the reader of the workload
/// (YAML or SQL) turns it into a file position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Site {
    Workload,
    Relation(RelId),
    ForeignKey(FkId),
    Program(usize),
    Statement(usize, usize),
    Field(usize, usize, &'static str),
    Constraint(usize, usize),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    pub site: Site,
    pub message: String,
    pub help: Option<String>,
}

fn invalid(site: Site, message: String, help: Option<&str>) -> Invalid {
    Invalid {
        site,
        message,
        help: help.map(str::to_string),
    }
}

/// Checks everything the paper requires of a set of BTPs: Figure 5 per
/// statement type, Section 5.1 for constraints, each statement used exactly
/// once in its body, unique names. Returns the first problem found.
pub fn validate(w: &Workload) -> Result<(), Invalid> {
    if w.programs.is_empty() {
        return Err(invalid(
            Site::Workload,
            "the workload has no programs".into(),
            Some("add at least one program under `programs:`"),
        ));
    }
    for (fi, fk) in w.schema.foreign_keys.iter().enumerate() {
        for (d, r) in &fk.columns {
            if *d >= w.schema.rel(fk.domain).arity() || *r >= w.schema.rel(fk.range).arity() {
                return Err(invalid(
                    Site::ForeignKey(fi),
                    format!("foreign key `{}` names a column out of range", fk.name),
                    None,
                ));
            }
        }
    }
    let mut names = std::collections::HashSet::new();
    // Names and abbreviations of the programs before `pi`: a set, not a
    // scan per program (quadratic at Auction(100000)'s 200,000 programs).
    let mut taken = std::collections::HashSet::new();
    for (pi, p) in w.programs.iter().enumerate() {
        if !names.insert(p.name.as_str()) {
            return Err(invalid(
                Site::Program(pi),
                format!("duplicate program name `{}`", p.name),
                Some("program names must be unique"),
            ));
        }
        if let Some(a) = &p.abbrev {
            if taken.contains(a.as_str()) {
                return Err(invalid(
                    Site::Program(pi),
                    format!("abbreviation `{a}` of `{}` is already used", p.name),
                    Some("abbreviations must be unique"),
                ));
            }
        }
        taken.insert(p.name.as_str());
        if let Some(a) = &p.abbrev {
            taken.insert(a.as_str());
        }
        validate_program(w, pi, p)?;
    }
    Ok(())
}

fn validate_program(w: &Workload, pi: usize, p: &Program) -> Result<(), Invalid> {
    let mut seen = std::collections::HashSet::new();
    for (si, s) in p.statements.iter().enumerate() {
        if !seen.insert(s.id.as_str()) {
            return Err(invalid(
                Site::Statement(pi, si),
                format!("duplicate statement id `{}` in `{}`", s.id, p.name),
                Some("statement ids must be unique within a program"),
            ));
        }
        validate_statement(w, pi, si, s)?;
    }
    let mut used = Vec::new();
    p.body.statements(&mut used);
    let mut count = vec![0usize; p.statements.len()];
    for i in used {
        count[i] += 1;
    }
    for (si, c) in count.iter().enumerate() {
        if *c != 1 {
            let what = if *c == 0 {
                "is never used in the body"
            } else {
                "occurs more than once in the body"
            };
            return Err(invalid(
                Site::Statement(pi, si),
                format!("statement `{}` of `{}` {what}", p.statements[si].id, p.name),
                Some("every statement must appear exactly once in `body`; give a repeated statement a new id"),
            ));
        }
    }
    for (ci, c) in p.constraints.iter().enumerate() {
        let (qi, qj) = (&p.statements[c.child], &p.statements[c.parent]);
        let text = w.constraint_text(p, c);
        match c.kind {
            ConstraintKind::ForeignKey(f) => {
                let fk = &w.schema.foreign_keys[f];
                let (dom, range) = (&w.schema.rel(fk.domain).name, &w.schema.rel(fk.range).name);
                if qi.rel != fk.domain {
                    return Err(invalid(
                        Site::Constraint(pi, ci),
                        format!(
                            "in `{text}`, `{}` is over `{}` but dom({}) is `{dom}`",
                            qi.id,
                            w.schema.rel(qi.rel).name,
                            fk.name
                        ),
                        Some("Section 5.1 requires rel(q_i) = dom(f) for q_j = f(q_i)"),
                    ));
                }
                if qj.rel != fk.range {
                    return Err(invalid(
                        Site::Constraint(pi, ci),
                        format!(
                            "in `{text}`, `{}` is over `{}` but range({}) is `{range}`",
                            qj.id,
                            w.schema.rel(qj.rel).name,
                            fk.name
                        ),
                        Some("Section 5.1 requires rel(q_j) = range(f) for q_j = f(q_i)"),
                    ));
                }
                // Section 5.1 asks for a key-based q_j; an insert also
                // pins down exactly one tuple (TPC-C's NewOrder needs it).
                if !(qj.ty.is_key_based() || qj.ty == StmtType::Ins) {
                    return Err(invalid(
                        Site::Constraint(pi, ci),
                        format!("in `{text}`, `{}` is a {} statement", qj.id, qj.ty),
                        Some("the left-hand side q_j of q_j = f(q_i) must be key-based (key sel, key upd, key del) or an insert"),
                    ));
                }
            }
            ConstraintKind::SameTuple => {
                if qi.rel != qj.rel {
                    return Err(invalid(
                        Site::Constraint(pi, ci),
                        format!("in `{text}`, the two statements are over different relations"),
                        Some("a same-tuple constraint relates two statements on the same relation"),
                    ));
                }
                if !qj.ty.is_key_write() || !(qi.ty.is_key_based()) {
                    return Err(invalid(
                        Site::Constraint(pi, ci),
                        format!("in `{text}`, `{}` must be a key upd, key del or ins and `{}` key-based", qj.id, qi.id),
                        Some("q_k = id(q_i) says q_i touches the tuple that the earlier key-based write q_k wrote"),
                    ));
                }
            }
        }
    }
    Ok(())
}

fn validate_statement(w: &Workload, pi: usize, si: usize, s: &Statement) -> Result<(), Invalid> {
    use StmtType::*;
    let rel = w.schema.rel(s.rel);
    let all = AttrSet::full(rel.arity());
    // Figure 5: which sets are defined (and, for ins/del, what WriteSet is).
    let (write, read, pread) = match s.ty {
        Ins | KeyDel => (Some(true), false, false),
        PredDel => (Some(true), false, true),
        KeySel => (None, true, false),
        PredSel => (None, true, true),
        KeyUpd => (Some(false), true, false),
        PredUpd => (Some(false), true, true),
    };
    let fig5 = Some("see Figure 5 of the paper: which of PReadSet, ReadSet, WriteSet a statement type defines; omit a key for ⊥, write [] for ∅");
    let check = |field: &'static str, set: &Option<AttrSet>, defined: bool| match (
        set.is_some(),
        defined,
    ) {
        (true, false) => Err(invalid(
            Site::Field(pi, si, field),
            format!(
                "`{}` is a {} statement, so its {field} must be undefined (⊥)",
                s.id, s.ty
            ),
            fig5,
        )),
        (false, true) => Err(invalid(
            Site::Field(pi, si, field),
            format!(
                "`{}` is a {} statement, so its {field} must be defined (use [] for ∅)",
                s.id, s.ty
            ),
            fig5,
        )),
        _ => Ok(()),
    };
    if s.locking && s.ty != KeySel {
        return Err(invalid(
            Site::Field(pi, si, "lock"),
            format!("`{}` is a {} statement; only a key sel can be a locking read", s.id, s.ty),
            Some("a row lock taken by a predicate read does not cover the predicate (docs/locking-reads.md); remove `lock: true`"),
        ));
    }
    let (held_ok, field) = match s.held {
        None => (true, "key_share"),
        Some(Held::KeyShare) => (s.ty == KeySel, "key_share"),
        Some(Held::Children(_)) => (s.ty == PredSel, "checks_children_of"),
        Some(Held::OwnInserts) => (matches!(s.ty, KeySel | PredSel), "own_inserts"),
    };
    if !held_ok {
        return Err(invalid(
            Site::Field(pi, si, field),
            format!("`{}` is a {} statement; `key_share` needs a key sel, `checks_children_of` a pred sel", s.id, s.ty),
            None,
        ));
    }
    check("write", &s.write, write.is_some())?;
    check("read", &s.read, read)?;
    check("pread", &s.pread, pread)?;
    if write == Some(true) && s.write.as_ref() != Some(&all) {
        return Err(invalid(
            Site::Field(pi, si, "write"),
            format!(
                "`{}` is a {} statement, so its WriteSet must be all attributes of `{}`",
                s.id, s.ty, rel.name
            ),
            Some("inserts and deletes write every attribute (Figure 5); omit `write` to get that"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statement_types_parse_loosely() {
        assert_eq!(StmtType::parse("key upd"), Some(StmtType::KeyUpd));
        assert_eq!(StmtType::parse("pred_sel"), Some(StmtType::PredSel));
        assert_eq!(StmtType::parse("Key-Del"), Some(StmtType::KeyDel));
        assert_eq!(StmtType::parse("upd"), None);
        for t in StmtType::ALL {
            assert_eq!(StmtType::parse(t.name()), Some(t));
        }
    }
}
