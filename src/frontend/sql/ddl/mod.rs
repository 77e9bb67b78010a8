//! Schema DDL → [`Schema`], read with PostgreSQL's own parser (`pg`), so
//! that the schema isolint analyses is the one PostgreSQL runs. The reader
//! fails closed: every statement kind and every clause of CREATE TABLE /
//! ALTER TABLE / CREATE DOMAIN / CREATE INDEX / CREATE FUNCTION is either
//! modelled (keys, foreign keys with their actions and deferral, function
//! calls in DEFAULT / CHECK / domain CHECK, generated columns, inheritance
//! and partitions, exclusion and partial unique constraints), or listed in
//! docs/sql-frontend.md ("Schema DDL: every clause") as unable to add a
//! read or a write, or rejected with a located error.

mod alter;
mod expr;
mod table;

pub use expr::Call;
use expr::{names, skip_blank, sval, written_name, ExprUses};

use super::pg::{self, protobuf as pb, NodeEnum};
use super::Snippet;
use crate::model::error::{Diag, Result, SourceFile};
use crate::model::schema::{RelId, Schema};

/// What a foreign key does to the referencing rows when the referenced
/// row is deleted or its key updated. RESTRICT and NO ACTION change no
/// data (the statement fails instead).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FkAction {
    #[default]
    NoAction,
    Cascade,
    SetNull,
    SetDefault,
}

impl FkAction {
    /// PostgreSQL's action letter (`a` NO ACTION, `r` RESTRICT, `c`, `n`,
    /// `d`).
    fn of(letter: &str) -> FkAction {
        match letter {
            "c" => FkAction::Cascade,
            "n" => FkAction::SetNull,
            "d" => FkAction::SetDefault,
            _ => FkAction::NoAction,
        }
    }

    pub fn sql(self) -> &'static str {
        match self {
            FkAction::NoAction => "NO ACTION",
            FkAction::Cascade => "CASCADE",
            FkAction::SetNull => "SET NULL",
            FkAction::SetDefault => "SET DEFAULT",
        }
    }
}

/// A `CREATE FUNCTION` of the schema (or of a workload file), inlined
/// where a program calls it.
#[derive(Debug, Clone)]
pub struct FunctionDef {
    /// Lower-case name.
    pub name: String,
    /// Lower-case parameter names in order (empty for unnamed ones).
    pub params: Vec<String>,
    /// The input parameters' types as PostgreSQL resolves them
    /// (`plpgsql::norm_type`): with the name, the function's identity
    /// (`CREATE OR REPLACE` of the same signature replaces it; another
    /// signature is an overload).
    pub signature: Vec<String>,
    /// Lower-case language (`sql`, `plpgsql`, …).
    pub language: String,
    pub file: SourceFile,
    /// The body text and where it starts in `file`.
    pub body: Snippet,
    /// Offset of the function's name, for messages.
    pub at: usize,
    /// VOLATILE (PostgreSQL's default): each statement of the body takes
    /// a fresh snapshot. STABLE and IMMUTABLE share the caller's.
    pub volatile: bool,
}

/// Everything the front-end takes from DDL.
pub struct Ddl {
    pub schema: Schema,
    pub functions: Vec<FunctionDef>,
    /// (ON DELETE, ON UPDATE) per foreign key, indexed like
    /// `schema.foreign_keys`.
    pub fk_actions: Vec<(FkAction, FkAction)>,
    /// Names of views (programs may not use them: isolint does not expand
    /// their queries).
    pub views: Vec<String>,
    /// What schema objects do on a statement's behalf.
    pub extras: Extras,
}

/// What schema objects add to the statements that touch a table (issue
/// 21, class 1), for the lowering.
#[derive(Debug, Clone, Default)]
pub struct Extras {
    /// Calls of functions in DEFAULT, CHECK and domain CHECK expressions.
    pub hooks: Vec<Hook>,
    /// `GENERATED ALWAYS AS (…) STORED` columns and their inputs.
    pub generated: Vec<Generated>,
    /// Per foreign key (indexed like `schema.foreign_keys`): which of its
    /// checks PostgreSQL runs at COMMIT (DEFERRABLE INITIALLY DEFERRED).
    pub deferred: Vec<Deferral>,
    /// Exclusion constraints and partial or expression unique indexes:
    /// an INSERT (or an UPDATE of these columns) that may fail on them
    /// observes other rows' values of these columns.
    pub conflict_checks: Vec<(RelId, Vec<usize>)>,
    /// Partitions and inheritance children, as written, and the relation
    /// they are merged into (their root).
    pub aliases: Vec<(String, RelId)>,
    /// Triggers (name, line of its CREATE TRIGGER) per relation: a
    /// statement that writes the relation runs the trigger, which isolint
    /// does not model, so lowering such a statement is an error.
    pub triggers: Vec<(RelId, String, usize)>,
    /// The schema file (where the hooks' positions point).
    pub file: Option<SourceFile>,
    /// What the reader over-approximated (partitions merged).
    pub warnings: Vec<crate::model::error::Warning>,
}

/// When PostgreSQL evaluates a hook's expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookKind {
    /// The column's DEFAULT (its own or its domain's): an INSERT that does
    /// not give the column, or gives it as DEFAULT.
    Default(usize),
    /// A table CHECK: every INSERT and UPDATE of the table.
    Check,
    /// A CHECK of the column's domain: an INSERT, an UPDATE assigning it.
    Domain(usize),
}

/// A function call in a schema expression evaluated for a statement.
#[derive(Debug, Clone)]
pub struct Hook {
    pub rel: RelId,
    pub kind: HookKind,
    pub call: Call,
    /// A table CHECK: the columns of its whole expression. An UPDATE that
    /// does not assign them evaluates the CHECK on the row's values: it
    /// reads them (the called function may answer otherwise for another
    /// value).
    pub columns: Vec<usize>,
}

/// A stored generated column: written whenever one of `inputs` is.
#[derive(Debug, Clone)]
pub struct Generated {
    pub rel: RelId,
    pub column: usize,
    pub inputs: Vec<usize>,
}

/// When PostgreSQL checks a foreign key.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Deferral {
    /// DEFERRABLE: `SET CONSTRAINTS … DEFERRED` can move its checks to
    /// COMMIT.
    pub deferrable: bool,
    /// INITIALLY DEFERRED: its checks run at COMMIT unless set otherwise.
    pub initially_deferred: bool,
    /// ON DELETE / ON UPDATE RESTRICT: that check is never deferred.
    pub restrict_on_delete: bool,
    pub restrict_on_update: bool,
}

pub fn parse_schema(file: &SourceFile) -> Result<Schema> {
    parse_ddl(file).map(|d| d.schema)
}

/// A `CREATE FUNCTION` statement as a [`FunctionDef`] (`None` for a body
/// that is not a string, e.g. `BEGIN ATOMIC`).
pub fn function_def(
    file: &SourceFile,
    snip: &Snippet,
    cf: &sqlparser::ast::CreateFunction,
) -> Result<FunctionDef> {
    use sqlparser::ast::{CreateFunctionBody, Expr, Spanned, Value};
    let name = last_ident(&cf.name)
        .map(|i| i.value.to_lowercase())
        .unwrap_or_default();
    let at = snip.file_offset(cf.name.span().start.line, cf.name.span().start.column);
    let unsupported = || {
        Diag::new(format!("cannot read the body of function `{name}`"))
            .help("write the body as a string: AS $$ … $$ or AS '…'")
            .at(file, at, name.len().max(1), "here")
    };
    let body = match &cf.function_body {
        Some(
            CreateFunctionBody::AsBeforeOptions { body, .. }
            | CreateFunctionBody::AsAfterOptions(body),
        ) => body,
        _ => return Err(unsupported()),
    };
    let Expr::Value(v) = body else {
        return Err(unsupported());
    };
    let start = snip.file_offset(v.span.start.line, v.span.start.column);
    let (text, open) = match &v.value {
        Value::DollarQuotedString(d) => {
            (d.value.clone(), d.tag.as_ref().map_or(2, |t| t.len() + 2))
        }
        // A single-quoted body with '' escapes: positions inside it are
        // only approximate after the first escape.
        Value::SingleQuotedString(t) => (t.clone(), 1),
        _ => return Err(unsupported()),
    };
    Ok(FunctionDef {
        name,
        params: cf
            .args
            .iter()
            .flatten()
            .map(|a| {
                a.name
                    .as_ref()
                    .map(|n| n.value.to_lowercase())
                    .unwrap_or_default()
            })
            .collect(),
        signature: cf
            .args
            .iter()
            .flatten()
            .filter(|a| !matches!(a.mode, Some(sqlparser::ast::ArgMode::Out)))
            .map(|a| crate::frontend::sql::plpgsql::norm_type(&a.data_type.to_string()))
            .collect(),
        language: cf
            .language
            .as_ref()
            .map_or_else(|| "sql".into(), |l| l.value.to_lowercase()),
        file: file.clone(),
        body: Snippet {
            text,
            offset: start + open,
            parsed: None,
        },
        at,
        volatile: !matches!(
            cf.behavior,
            Some(
                sqlparser::ast::FunctionBehavior::Stable
                    | sqlparser::ast::FunctionBehavior::Immutable
            )
        ),
    })
}

/// `cf.name`'s last part.
fn last_ident(n: &sqlparser::ast::ObjectName) -> Option<sqlparser::ast::Ident> {
    n.0.last().and_then(|p| p.as_ident()).cloned()
}

/// A table while the schema is read: names as PostgreSQL folds them, with
/// the user's spelling kept for reports.
struct Table {
    name: String,
    /// Offset of its CREATE TABLE.
    at: usize,
    folded: String,
    /// (as written, folded).
    cols: Vec<(String, String)>,
    pk: Vec<String>,
    uniques: Vec<Vec<String>>,
    /// The parent it is a partition (`true`) or an inheritance child of.
    parent: Option<(usize, bool)>,
}

/// A foreign key as written, resolved once every table is known.
struct PendingFk {
    name: Option<String>,
    table: usize,
    columns: Vec<String>,
    target: String,
    target_at: usize,
    referred: Vec<String>,
    actions: (FkAction, FkAction),
    /// PostgreSQL's ON DELETE and ON UPDATE letters.
    letters: [String; 2],
    deferral: Deferral,
    at: usize,
}

#[derive(Clone)]
enum PendingHook {
    Default(String),
    /// The columns of the CHECK's expression.
    Check(Vec<String>),
    Domain(String),
}

/// A `CREATE DOMAIN`: calls in its CHECKs and in its DEFAULT.
struct Domain {
    name: String,
    checks: Vec<Call>,
    default: Vec<Call>,
}

struct Reader<'f> {
    file: &'f SourceFile,
    tables: Vec<Table>,
    functions: Vec<FunctionDef>,
    views: Vec<String>,
    /// Views, materialized views and sequences, as PostgreSQL folds their
    /// names: pg_dump writes `ALTER TABLE v OWNER TO …` for them too.
    relations: Vec<String>,
    /// `CREATE TRIGGER` on a table: (table, trigger name, offset).
    triggers: Vec<(usize, String, usize)>,
    fks: Vec<PendingFk>,
    hooks: Vec<(usize, PendingHook, Call)>,
    generated: Vec<(usize, String, Vec<String>)>,
    conflicts: Vec<(usize, Vec<String>)>,
    domains: Vec<Domain>,
    /// Unique indexes by name (for `ADD CONSTRAINT … USING INDEX`).
    indexes: Vec<(String, usize, Vec<String>)>,
    /// Calls in generated columns and index expressions, where PostgreSQL
    /// requires IMMUTABLE functions: built-ins read no table, but a
    /// function of the schema file is only declared so (PostgreSQL does
    /// not verify it) and is rejected.
    immutable_calls: Vec<(Call, &'static str)>,
}

fn loc(l: i32) -> usize {
    usize::try_from(l).unwrap_or(0)
}

/// The text with psql meta-commands (`\connect`, `\restrict`: a line
/// starting with a backslash, which pg_dump writes) blanked, positions kept.
fn blank_meta_commands(text: &str) -> String {
    text.split_inclusive('\n')
        .map(|l| {
            if l.starts_with('\\') {
                l.chars().map(|c| if c == '\n' { c } else { ' ' }).collect()
            } else {
                l.to_string()
            }
        })
        .collect()
}

pub fn parse_ddl(file: &SourceFile) -> Result<Ddl> {
    let text = blank_meta_commands(&file.text);
    let parsed = pg::parse(&text).map_err(|e| {
        Diag::new(format!("PostgreSQL does not accept this schema: {}", e.message))
            .help("isolint reads the schema with PostgreSQL 15's parser: the schema file must be what psql would run")
            .at(file, e.at.unwrap_or(0), 1, "here")
    })?;
    let mut r = Reader {
        file,
        tables: vec![],
        functions: vec![],
        views: vec![],
        relations: vec![],
        triggers: vec![],
        fks: vec![],
        hooks: vec![],
        generated: vec![],
        conflicts: vec![],
        domains: vec![],
        indexes: vec![],
        immutable_calls: vec![],
    };
    for raw in &parsed.tree.stmts {
        let at = skip_blank(&file.text, loc(raw.stmt_location));
        if let Some(n) = raw.stmt.as_ref().and_then(|n| n.node.as_ref()) {
            r.statement(n, at)?;
        }
    }
    // A schema without tables is the schema of routines that read none
    // (a statement naming a table is then an "unknown table" error where
    // it stands): said, not refused.
    let no_tables = r.tables.is_empty();
    let mut ddl = r.finish()?;
    if no_tables {
        ddl.extras.warnings.push(crate::model::error::Warning {
            file: file.name.clone(),
            line: 1,
            message: "the schema defines no tables".into(),
        });
    }
    Ok(ddl)
}

impl Reader<'_> {
    fn reject(&self, at: usize, len: usize, what: &str, help: &str) -> Box<Diag> {
        Diag::new(what.to_string())
            .help(help.to_string())
            .at(self.file, at, len, "here")
    }

    /// One top-level statement of the schema file.
    fn statement(&mut self, n: &NodeEnum, at: usize) -> Result<()> {
        match n {
            NodeEnum::CreateStmt(c) => self.create_table(c, at),
            NodeEnum::AlterTableStmt(a) => self.alter_table(a, at),
            NodeEnum::IndexStmt(i) => self.index(i, at),
            NodeEnum::CreateDomainStmt(d) => self.domain(d, at),
            NodeEnum::AlterDomainStmt(d) => self.alter_domain(d, at),
            NodeEnum::CreateFunctionStmt(f) if !f.is_procedure => {
                let def = self.function(f, at)?;
                self.functions.push(def);
                Ok(())
            }
            NodeEnum::ViewStmt(v) => {
                let rv = v.view.as_ref();
                self.views.extend(rv.map(|rv| self.written(rv)));
                self.relations.extend(rv.map(|rv| rv.relname.clone()));
                Ok(())
            }
            NodeEnum::CreateTableAsStmt(c) if c.objtype() == pb::ObjectType::ObjectMatview => {
                let rv = c.into.as_ref().and_then(|i| i.rel.as_ref());
                self.views.extend(rv.map(|rv| self.written(rv)));
                self.relations.extend(rv.map(|rv| rv.relname.clone()));
                Ok(())
            }
            NodeEnum::CreateSeqStmt(c) => {
                self.relations
                    .extend(c.sequence.as_ref().map(|rv| rv.relname.clone()));
                Ok(())
            }
            NodeEnum::CreateTableAsStmt(_) => Err(self.reject(at, 6, "CREATE TABLE … AS is not modelled", "isolint needs the table's columns: write CREATE TABLE with its column list")),
            NodeEnum::CreateSchemaStmt(s) => {
                for e in &s.schema_elts {
                    if let Some(n) = e.node.as_ref() {
                        self.statement(n, at)?;
                    }
                }
                Ok(())
            }
            NodeEnum::CreateTrigStmt(t) => self.trigger(t, at),
            NodeEnum::RuleStmt(_) => Err(self.reject(at, 11, "CREATE RULE is not modelled", "rules change what statements read and write; isolint cannot see them")),
            NodeEnum::CreatePolicyStmt(_) | NodeEnum::AlterPolicyStmt(_) => Err(self.reject(at, 13, "CREATE POLICY is not modelled", "row-level security policies add conditions (which may read tables) to statements; isolint cannot see them")),
            NodeEnum::CreateForeignTableStmt(_) | NodeEnum::ImportForeignSchemaStmt(_) => Err(self.reject(at, 6, "foreign tables are not modelled", "a foreign table's rows live on another server, outside PostgreSQL's isolation of this database")),
            NodeEnum::DefineStmt(d) if d.kind() == pb::ObjectType::ObjectOperator => Err(self.reject(at, 15, "CREATE OPERATOR is not modelled", "an operator calls its function where the operator is used, which isolint does not see; call the function by name")),
            NodeEnum::DropStmt(d) => self.drop(d, at),
            NodeEnum::RenameStmt(r) => self.rename(r, at),
            n if harmless(n) => Ok(()),
            other => {
                let kind = format!("{other:?}");
                let kind = kind.split('(').next().unwrap_or("?");
                Err(self.reject(at, 6, &format!("this statement ({kind}) is not modelled in a schema file"), "a schema file holds CREATE TABLE / ALTER TABLE / CREATE INDEX / CREATE DOMAIN / CREATE FUNCTION and statements that change no table's data (docs/sql-frontend.md, \"Schema DDL: every clause\")"))
            }
        }
    }

    /// A trigger fires only for writes of its table (INSERT, UPDATE,
    /// DELETE, TRUNCATE; of a partition or child: of rows of the merged
    /// root): kept, so that lowering rejects the statements that write
    /// the table and reads everything else. An INSTEAD OF trigger of a
    /// view adds nothing (programs cannot use views).
    fn trigger(&mut self, t: &pb::CreateTrigStmt, at: usize) -> Result<()> {
        let Some(rv) = t.relation.as_ref() else {
            return Ok(());
        };
        if self.table(&rv.relname).is_none() && self.relations.contains(&rv.relname) {
            return Ok(());
        }
        let ti = self.table_of(rv, "trigger on", "create the table before its trigger")?;
        self.triggers.push((ti, t.trigname.clone(), at));
        Ok(())
    }

    /// DROP of a table defined earlier: the schema would not be the one
    /// read. Other drops (pg_dump --clean writes them first) remove
    /// nothing isolint keeps.
    fn drop(&self, d: &pb::DropStmt, at: usize) -> Result<()> {
        use pb::ObjectType as O;
        if matches!(d.remove_type(), O::ObjectTable | O::ObjectForeignTable) {
            for o in &d.objects {
                if let Some(NodeEnum::List(l)) = o.node.as_ref() {
                    if let Some(name) = names(&l.items).last() {
                        if self.table(name).is_some() {
                            return Err(self.reject(at, 4, &format!("DROP of table `{name}` defined earlier"), "give isolint the schema as it is after the file runs: remove the table's CREATE and DROP"));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Renaming a table or a column: isolint would know it by its old name.
    fn rename(&self, r: &pb::RenameStmt, at: usize) -> Result<()> {
        use pb::ObjectType as O;
        if matches!(
            r.rename_type(),
            O::ObjectTable
                | O::ObjectColumn
                | O::ObjectDomain
                | O::ObjectFunction
                | O::ObjectType
                | O::ObjectView
        ) {
            return Err(self.reject(
                at,
                6,
                "ALTER … RENAME is not modelled",
                "write the schema with the final names",
            ));
        }
        Ok(())
    }

    /// The table named `folded` (as PostgreSQL folds names).
    fn table(&self, folded: &str) -> Option<usize> {
        self.tables.iter().position(|t| t.folded == folded)
    }

    /// A relation's name as written (quotes removed), else as folded.
    fn written(&self, rv: &pb::RangeVar) -> String {
        written_name(&self.file.text, loc(rv.location)).unwrap_or_else(|| rv.relname.clone())
    }

    /// The table `rv` names, or the located error.
    fn table_of(&self, rv: &pb::RangeVar, what: &str, help: &str) -> Result<usize> {
        self.table(&rv.relname).ok_or_else(|| {
            let name = self.written(rv);
            let known: Vec<&str> = self.tables.iter().map(|t| t.name.as_str()).collect();
            Diag::new(format!("{what} unknown table `{name}`"))
                .help(
                    crate::model::error::did_you_mean(&name, known)
                        .unwrap_or_else(|| help.to_string()),
                )
                .at(
                    self.file,
                    loc(rv.location),
                    name.len().max(1),
                    "unknown table",
                )
        })
    }

    /// `CREATE FUNCTION` → [`FunctionDef`]: the body is the `AS` string.
    fn function(&self, f: &pb::CreateFunctionStmt, at: usize) -> Result<FunctionDef> {
        let text = &self.file.text;
        let fname = names(&f.funcname).pop().unwrap_or_default();
        let name_at = text[at..]
            .to_ascii_lowercase()
            .find("function")
            .map_or(at, |k| skip_blank(text, at + k + "function".len()));
        let unsupported = || {
            Diag::new(format!("cannot read the body of function `{fname}`"))
                .help("write the body as a string: AS $$ … $$ or AS '…'")
                .at(self.file, name_at, fname.len().max(1), "here")
        };
        let mut language = "sql".to_string();
        let mut volatile = true;
        let mut body = None;
        for o in &f.options {
            let Some(NodeEnum::DefElem(d)) = o.node.as_ref() else {
                continue;
            };
            let arg = d.arg.as_deref();
            match d.defname.as_str() {
                "language" => language = arg.and_then(sval).unwrap_or("sql").to_lowercase(),
                // STABLE and IMMUTABLE share the caller's snapshot.
                "volatility" => {
                    volatile = !matches!(arg.and_then(sval), Some("stable" | "immutable"))
                }
                "as" => {
                    let items = match arg.and_then(|a| a.node.as_ref()) {
                        Some(NodeEnum::List(l)) => names(&l.items),
                        _ => vec![],
                    };
                    // `AS 'file', 'symbol'` (LANGUAGE C): no body isolint
                    // can read; a call of it is an error where it stands.
                    match items.as_slice() {
                        [b] => body = Some((b.clone(), loc(d.location))),
                        [_, _] => body = Some((String::new(), loc(d.location))),
                        _ => {}
                    }
                }
                _ => {}
            }
        }
        if f.sql_body.is_some() {
            return Err(unsupported());
        }
        let Some((body, as_at)) = body else {
            return Err(unsupported());
        };
        // The string starts after `AS`: `$tag$…` or `'…`.
        let s = skip_blank(text, as_at + 2);
        let open = if text[s..].starts_with('$') {
            text[s + 1..].find('$').map_or(1, |k| k + 2)
        } else {
            1
        };
        let inputs: Vec<&Box<pb::FunctionParameter>> = f
            .parameters
            .iter()
            .filter_map(|p| match p.node.as_ref() {
                Some(NodeEnum::FunctionParameter(p)) => Some(p),
                _ => None,
            })
            .filter(|p| {
                !matches!(
                    p.mode(),
                    pb::FunctionParameterMode::FuncParamOut
                        | pb::FunctionParameterMode::FuncParamTable
                )
            })
            .collect();
        let params = inputs.iter().map(|p| p.name.to_lowercase()).collect();
        let signature = inputs
            .iter()
            .map(|p| {
                p.arg_type.as_ref().map_or(String::new(), |t| {
                    let arr = if t.array_bounds.is_empty() { "" } else { "[]" };
                    format!(
                        "{}{arr}",
                        crate::frontend::sql::plpgsql::norm_type(&names(&t.names).join("."))
                    )
                })
            })
            .collect();
        Ok(FunctionDef {
            name: fname.to_lowercase(),
            params,
            signature,
            language,
            file: self.file.clone(),
            body: Snippet {
                text: body,
                offset: s + open,
                parsed: None,
            },
            at: name_at,
            volatile,
        })
    }
}

/// Statements that change no table, key or data a program sees: session
/// settings, privileges, comments, owners, extensions, sequences, types
/// other than domains, statistics, maintenance, and data loading (which
/// runs once, before the workload). docs/sql-frontend.md lists each with
/// the reason.
fn harmless(n: &NodeEnum) -> bool {
    use NodeEnum as N;
    matches!(
        n,
        N::VariableSetStmt(_)
            | N::VariableShowStmt(_)
            | N::SelectStmt(_)
            | N::InsertStmt(_)
            | N::UpdateStmt(_)
            | N::DeleteStmt(_)
            | N::CopyStmt(_)
            | N::TransactionStmt(_)
            | N::CommentStmt(_)
            | N::SecLabelStmt(_)
            | N::GrantStmt(_)
            | N::GrantRoleStmt(_)
            | N::AlterDefaultPrivilegesStmt(_)
            | N::AlterOwnerStmt(_)
            | N::CreateRoleStmt(_)
            | N::AlterRoleStmt(_)
            | N::AlterRoleSetStmt(_)
            | N::DropRoleStmt(_)
            | N::CreateExtensionStmt(_)
            | N::AlterExtensionStmt(_)
            | N::AlterExtensionContentsStmt(_)
            | N::CreateSeqStmt(_)
            | N::AlterSeqStmt(_)
            | N::CompositeTypeStmt(_)
            | N::CreateEnumStmt(_)
            | N::AlterEnumStmt(_)
            | N::CreateRangeStmt(_)
            | N::DefineStmt(_)
            | N::AlterTypeStmt(_)
            | N::CreateCastStmt(_)
            | N::CreateConversionStmt(_)
            | N::CreateOpClassStmt(_)
            | N::CreateOpFamilyStmt(_)
            | N::AlterOpFamilyStmt(_)
            | N::AlterOperatorStmt(_)
            | N::AlterCollationStmt(_)
            | N::AlterTsdictionaryStmt(_)
            | N::AlterTsconfigurationStmt(_)
            | N::CreateStatsStmt(_)
            | N::AlterStatsStmt(_)
            | N::CreatePublicationStmt(_)
            | N::AlterPublicationStmt(_)
            | N::CreateSubscriptionStmt(_)
            | N::AlterSubscriptionStmt(_)
            | N::DropSubscriptionStmt(_)
            | N::CreateTableSpaceStmt(_)
            | N::DropTableSpaceStmt(_)
            | N::AlterTableSpaceOptionsStmt(_)
            | N::CreateFdwStmt(_)
            | N::AlterFdwStmt(_)
            | N::CreateForeignServerStmt(_)
            | N::AlterForeignServerStmt(_)
            | N::CreateUserMappingStmt(_)
            | N::AlterUserMappingStmt(_)
            | N::DropUserMappingStmt(_)
            | N::CreateEventTrigStmt(_)
            | N::AlterEventTrigStmt(_)
            | N::AlterFunctionStmt(_)
            | N::AlterObjectSchemaStmt(_)
            | N::AlterObjectDependsStmt(_)
            | N::CreatePlangStmt(_)
            | N::CreateAmStmt(_)
            | N::CreateTransformStmt(_)
            | N::CreateFunctionStmt(_)
            | N::DoStmt(_)
            | N::CreatedbStmt(_)
            | N::AlterDatabaseStmt(_)
            | N::AlterDatabaseSetStmt(_)
            | N::AlterSystemStmt(_)
            | N::DropdbStmt(_)
            | N::DropOwnedStmt(_)
            | N::ReassignOwnedStmt(_)
            | N::VacuumStmt(_)
            | N::ClusterStmt(_)
            | N::ReindexStmt(_)
            | N::CheckPointStmt(_)
            | N::DiscardStmt(_)
            | N::LockStmt(_)
            | N::NotifyStmt(_)
            | N::ListenStmt(_)
            | N::UnlistenStmt(_)
            | N::RefreshMatViewStmt(_)
            | N::ExplainStmt(_)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(text: &str) -> Result<Schema> {
        parse_schema(&SourceFile::new("s.sql", text))
    }

    #[test]
    fn keys_and_foreign_keys() {
        let s = schema(
            "CREATE TABLE Buyer (id INT PRIMARY KEY, calls INT);
             CREATE TABLE Bids (buyerId INT REFERENCES Buyer, bid INT, PRIMARY KEY (buyerId));
             CREATE TABLE Log (id INT, buyerId INT, bid INT, PRIMARY KEY (id), UNIQUE (buyerId, bid));
             ALTER TABLE Log ADD CONSTRAINT f2 FOREIGN KEY (buyerId) REFERENCES Buyer (id);
             CREATE INDEX i ON Log (bid);",
        )
        .expect("valid");
        assert_eq!(s.relations[1].primary_key, vec![0]);
        assert_eq!(s.relations[2].unique_keys, vec![vec![1, 2]]);
        assert_eq!(s.foreign_keys.len(), 2);
        assert_eq!(s.foreign_keys[0].name, "fk_Bids_Buyer");
        assert_eq!((s.foreign_keys[0].domain, s.foreign_keys[0].range), (1, 0));
        assert_eq!(s.foreign_keys[1].name, "f2");
        assert_eq!(s.foreign_keys[1].columns, vec![(1, 0)]);
    }

    #[test]
    fn unknown_referenced_table_and_column() {
        let e = schema("CREATE TABLE A (id INT PRIMARY KEY, b INT REFERENCES Bx (id));\nCREATE TABLE B (id INT PRIMARY KEY);").expect_err("unknown");
        assert!(
            e.message.contains("s.sql:1:") && e.message.contains("unknown table `Bx`"),
            "{}",
            e.message
        );
        assert_eq!(e.help.as_deref(), Some("did you mean `B`?"));
        let e = schema("CREATE TABLE A (id INT, PRIMARY KEY (idd));").expect_err("unknown col");
        assert!(e.message.contains("no column `idd`"), "{}", e.message);
    }

    /// What `pg_dump --schema-only` writes, in the shape HammerDB's
    /// schema has (keys added later by ALTER TABLE … WITH (fillfactor)).
    #[test]
    fn pg_dump_schema_keeps_its_keys() {
        let d = parse_ddl(&SourceFile::new(
            "dump.sql",
            "--\n-- PostgreSQL database dump\n--\n\\restrict abc\nSET statement_timeout = 0;\nSELECT pg_catalog.set_config('search_path', '', false);\n\
             CREATE EXTENSION IF NOT EXISTS pgcrypto WITH SCHEMA public;\nCOMMENT ON EXTENSION pgcrypto IS 'x';\n\
             CREATE TABLE public.warehouse (\n    w_id integer NOT NULL,\n    w_name character varying(10)\n)\nWITH (fillfactor='100');\n\
             ALTER TABLE public.warehouse OWNER TO postgres;\n\
             CREATE TABLE public.district (d_id smallint NOT NULL, d_w_id integer NOT NULL, d_next integer);\n\
             CREATE SEQUENCE public.s\n    START WITH 1\n    INCREMENT BY 1\n    NO MINVALUE\n    CACHE 1;\n\
             ALTER SEQUENCE public.s OWNED BY public.district.d_id;\n\
             CREATE VIEW public.v AS SELECT w_id FROM public.warehouse;\n\
             ALTER TABLE public.v OWNER TO postgres;\n\
             ALTER TABLE ONLY public.warehouse\n    ADD CONSTRAINT warehouse_i1 PRIMARY KEY (w_id) WITH (fillfactor='100');\n\
             ALTER TABLE ONLY public.district ADD CONSTRAINT district_i1 PRIMARY KEY (d_w_id, d_id) USING INDEX TABLESPACE fast;\n\
             CREATE UNIQUE INDEX wn ON public.warehouse USING btree (w_name);\n\
             CREATE UNIQUE INDEX partial ON public.district USING btree (d_next) WHERE d_next > 0;\n\
             CREATE INDEX plain ON public.district (d_next);\n\
             ALTER TABLE ONLY public.district ADD CONSTRAINT d_fk FOREIGN KEY (d_w_id) REFERENCES public.warehouse(w_id) ON DELETE CASCADE;\n\
             GRANT ALL ON TABLE public.warehouse TO PUBLIC;\nREVOKE ALL ON SCHEMA public FROM PUBLIC;\n",
        ))
        .expect("a pg_dump schema loads");
        let s = &d.schema;
        assert_eq!(s.relations[0].primary_key, vec![0]);
        assert_eq!(s.relations[0].unique_keys, vec![vec![1]]);
        assert_eq!(s.relations[1].primary_key, vec![1, 0]);
        // Neither the partial nor the plain index is a key.
        assert!(s.relations[1].unique_keys.is_empty());
        assert_eq!(s.foreign_keys.len(), 1);
        assert_eq!(d.fk_actions, vec![(FkAction::Cascade, FkAction::NoAction)]);
        assert_eq!(d.views, vec!["v".to_string()]);
    }

    #[test]
    fn rules_policies_and_triggers_are_errors() {
        for (ddl, what) in [
            (
                "CREATE RULE r AS ON INSERT TO A DO INSTEAD NOTHING;",
                "CREATE RULE",
            ),
            ("CREATE POLICY p ON A USING (id > 0);", "CREATE POLICY"),
            // A trigger is kept per table (lowering rejects the statements
            // that write it): here only an unknown table is an error.
            (
                "CREATE TRIGGER t AFTER INSERT ON B FOR EACH ROW EXECUTE FUNCTION f();",
                "trigger on unknown table `B`",
            ),
        ] {
            let e = schema(&format!("CREATE TABLE A (id INT PRIMARY KEY);\n{ddl}"))
                .expect_err("rejected");
            assert!(
                e.message.contains(what) && e.message.contains("s.sql:2:"),
                "{}",
                e.message
            );
        }
    }

    #[test]
    fn names_keep_their_spelling() {
        assert_eq!(
            expr::written_name("public.Buyer (", 0).as_deref(),
            Some("Buyer")
        );
        assert_eq!(
            expr::written_name("\"My \"\"T\"\"\" . \"X\"", 0).as_deref(),
            Some("X")
        );
        let s = schema("CREATE TABLE \"Acc\" (\"Id\" INT PRIMARY KEY, Bal INT);").expect("valid");
        assert_eq!(s.relations[0].name, "Acc");
        assert_eq!(s.relations[0].attributes, ["Id", "Bal"]);
        // Multi-byte text around names and constraints.
        let s = schema("-- Ärger\nCREATE TABLE \"Ä\" (é INT CONSTRAINT ü PRIMARY KEY CHECK (é > 0), x INT CONSTRAINT ¥¥¥¥¥ REFERENCES \"Ä\");\nCREATE FUNCTION ß() RETURNS INT LANGUAGE sql AS $$ SELECT 1 $$;")
            .expect("valid");
        assert_eq!(s.relations[0].attributes, ["é", "x"]);
        assert_eq!(s.foreign_keys[0].name, "¥¥¥¥¥");
    }

    #[test]
    fn c_functions_load_and_calls_find_them() {
        let d = parse_ddl(&SourceFile::new(
            "s.sql",
            "CREATE TABLE a (id INT PRIMARY KEY);\nCREATE FUNCTION f(x INT) RETURNS INT LANGUAGE c AS 'lib', 'f';\nCREATE FUNCTION g(x INT, OUT y INT) LANGUAGE sql AS $b$ SELECT x $b$;",
        ))
        .expect("loads");
        assert_eq!(d.functions[0].language, "c");
        assert_eq!(d.functions[1].params, ["x"]);
        assert_eq!(d.functions[1].body.text, " SELECT x ");
        let off = d.functions[1].body.offset;
        assert_eq!(&d.functions[1].file.text[off..off + 9], " SELECT x");
    }

    #[test]
    fn syntax_error_has_position() {
        let e = schema("CREATE TABLE A (id INT PRIMARY KEY);\nCREATE TABLE B (id INT,, x INT);")
            .expect_err("syntax");
        assert!(e.message.starts_with("s.sql:2:"), "{}", e.message);
    }
}
