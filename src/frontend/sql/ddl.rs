//! Schema DDL → [`Schema`]: CREATE TABLE with column- and table-level
//! PRIMARY KEY, UNIQUE, REFERENCES and FOREIGN KEY (with their ON DELETE /
//! ON UPDATE actions), ALTER TABLE … ADD [CONSTRAINT …] FOREIGN KEY, and
//! `CREATE FUNCTION` (kept for inlining at call sites). Triggers are
//! rejected: their writes would belong to every statement that fires them.
//! Other DDL (indexes, drops, …) changes no data and is ignored.

use super::{parse_statements, same_name, Snippet};
use crate::model::error::{did_you_mean, Diag, Result, SourceFile};
use crate::model::schema::{ForeignKey, Relation, Schema};
use sqlparser::ast::{
    AlterTableOperation, ColumnOption, ForeignKeyConstraint, Ident, ObjectName, Statement,
    TableConstraint,
};

/// A foreign key as written, resolved once every table is known.
struct PendingFk {
    name: Option<String>,
    table: usize,
    columns: Vec<Ident>,
    foreign_table: ObjectName,
    referred: Vec<Ident>,
    actions: (FkAction, FkAction),
}

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
    fn of(a: &Option<sqlparser::ast::ReferentialAction>) -> FkAction {
        use sqlparser::ast::ReferentialAction as R;
        match a {
            Some(R::Cascade) => FkAction::Cascade,
            Some(R::SetNull) => FkAction::SetNull,
            Some(R::SetDefault) => FkAction::SetDefault,
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
}

/// The file's text with what `pg_dump --schema-only` adds around the
/// tables blanked out (positions kept): statements that change neither
/// tables, keys nor data (SET, set_config, sequences, grants, comments,
/// owners, extensions, types, non-unique indexes …), psql meta-commands,
/// and an index's storage options after a PRIMARY KEY / UNIQUE
/// constraint. Rules and row-level security policies change what
/// statements read and write: an error.
fn clean_dump(file: &SourceFile) -> Result<String> {
    let mut text: Vec<u8> = file.text.as_bytes().to_vec();
    let blank = |t: &mut Vec<u8>, from: usize, to: usize| {
        for b in &mut t[from..to] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
    };
    // psql meta-commands (`\connect`, `\restrict`) take a whole line.
    let mut line_start = 0;
    for (i, b) in file.text.bytes().enumerate() {
        if b == b'\n' {
            if file.text.as_bytes().get(line_start) == Some(&b'\\') {
                blank(&mut text, line_start, i);
            }
            line_start = i + 1;
        }
    }
    let view = String::from_utf8_lossy(&text).into_owned();
    for (s, e) in super::procedural::split_statements(&view) {
        let stmt = &view[s..e];
        let lead = s + super::procedural::blank_prefix(stmt);
        let words: Vec<String> = view[lead..e]
            .split_whitespace()
            .take(4)
            .map(|w| w.to_uppercase())
            .collect();
        let w = |k: usize| words.get(k).map_or("", String::as_str);
        let skip = match w(0) {
            "SET" | "RESET" | "SELECT" | "GRANT" | "REVOKE" | "COMMENT" | "SECURITY" | "BEGIN"
            | "COMMIT" | "START" | "ANALYZE" | "VACUUM" => true,
            "CREATE" => {
                let kind = if w(1) == "OR" { w(3) } else { w(1) };
                match kind {
                    "SEQUENCE" | "EXTENSION" | "SCHEMA" | "TYPE" | "DOMAIN" | "COLLATION"
                    | "AGGREGATE" | "OPERATOR" | "PUBLICATION" | "STATISTICS" | "CAST"
                    | "TEXT" | "CONVERSION" | "ROLE" | "USER" | "EVENT" | "SERVER"
                    | "PROCEDURE" => true,
                    "INDEX" => true,
                    "RULE" | "POLICY" => {
                        return Err(Diag::new(format!("CREATE {kind} is not modelled"))
                            .help("rules and row-level security policies change what statements read and write; isolint cannot see them")
                            .at(file, lead, 6, "here"))
                    }
                    _ => false,
                }
            }
            "ALTER" => match w(1) {
                "TABLE" => view[lead..e].to_uppercase().contains(" OWNER TO "),
                "SEQUENCE" | "SCHEMA" | "TYPE" | "DOMAIN" | "FUNCTION" | "PROCEDURE" | "INDEX"
                | "DEFAULT" | "EXTENSION" | "VIEW" | "ROLE" | "DATABASE" | "AGGREGATE" => true,
                _ => false,
            },
            "DROP" => true,
            _ => false,
        };
        if skip {
            blank(&mut text, lead, e);
            // Keep the `;` so the statement list stays well formed.
        } else if w(0) == "ALTER" && w(1) == "TABLE" {
            strip_index_options(&view, lead, e, &mut text);
        }
    }
    Ok(String::from_utf8_lossy(&text).into_owned())
}

/// Blank ` WITH (…)` and `USING INDEX TABLESPACE name` after a constraint
/// in an ALTER TABLE (sqlparser does not take index storage options there).
fn strip_index_options(view: &str, from: usize, to: usize, text: &mut [u8]) {
    let upper = view[from..to].to_uppercase();
    for pat in [") WITH (", " USING INDEX TABLESPACE "] {
        let mut search = 0;
        while let Some(k) = upper[search..].find(pat) {
            let start = from + search + k + usize::from(pat.starts_with(')'));
            let mut end = start + pat.len() - usize::from(pat.starts_with(')'));
            if pat.ends_with('(') {
                let mut depth = 1;
                while end < to && depth > 0 {
                    match view.as_bytes()[end] {
                        b'(' => depth += 1,
                        b')' => depth -= 1,
                        _ => {}
                    }
                    end += 1;
                }
            } else {
                while end < to && !view.as_bytes()[end].is_ascii_whitespace() {
                    end += 1;
                }
            }
            for b in &mut text[start..end.min(to)] {
                if *b != b'\n' {
                    *b = b' ';
                }
            }
            search = end - from;
        }
    }
}

/// A PRIMARY KEY, UNIQUE or FOREIGN KEY constraint of `rel` (index `ti`).
fn add_constraint(
    rel: &mut Relation,
    tc: &TableConstraint,
    ti: usize,
    pending: &mut Vec<PendingFk>,
    unknown_col: &dyn Fn(&Relation, &Ident) -> Box<Diag>,
) -> Result<()> {
    match tc {
        TableConstraint::PrimaryKey(pk) => {
            let mut cols = vec![];
            for ic in &pk.columns {
                let id = index_column_ident(&ic.column.expr);
                match id.as_ref().and_then(|i| col_index(rel, i)) {
                    Some(c) => cols.push(c),
                    None => {
                        return Err(match id {
                            Some(i) => unknown_col(rel, &i),
                            None => Diag::new("PRIMARY KEY must list column names"),
                        })
                    }
                }
            }
            rel.primary_key = cols;
        }
        TableConstraint::Unique(u) => {
            let mut cols = vec![];
            for ic in &u.columns {
                if let Some(c) =
                    index_column_ident(&ic.column.expr).and_then(|i| col_index(rel, &i))
                {
                    cols.push(c);
                }
            }
            if cols.len() == u.columns.len() {
                rel.unique_keys.push(cols);
            }
        }
        TableConstraint::ForeignKey(fk) => pending.push(pending_fk(fk, ti)),
        _ => {}
    }
    Ok(())
}

fn last_ident(n: &ObjectName) -> Option<Ident> {
    n.0.last().and_then(|p| p.as_ident()).cloned()
}

fn span_of(file: &SourceFile, snip: &Snippet, i: &Ident) -> (usize, usize) {
    let at = snip.file_offset(i.span.start.line, i.span.start.column);
    (at.min(file.text.len()), i.value.len().max(1))
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

pub fn parse_ddl(file: &SourceFile) -> Result<Ddl> {
    let snip = Snippet {
        text: file.text.to_string(),
        offset: 0,
        parsed: None,
    };
    let cleaned = Snippet {
        text: clean_dump(file)?,
        offset: 0,
        parsed: None,
    };
    let stmts = parse_statements(file, &cleaned)?;
    let mut schema = Schema::default();
    let mut views = vec![];
    let mut functions = vec![];
    let mut fk_actions = vec![];
    let mut pending: Vec<PendingFk> = vec![];
    let unknown_col = |rel: &Relation, i: &Ident| unknown_column(file, &snip, rel, i);
    for stmt in &stmts {
        match stmt {
            Statement::CreateTable(ct) => create_table(file, &snip, ct, &mut schema, &mut pending)?,
            Statement::AlterTable(at) => {
                let Some(name) = last_ident(&at.name) else {
                    continue;
                };
                let ti = table_of(
                    file,
                    &snip,
                    &schema,
                    &name,
                    "ALTER TABLE of",
                    "create the table before altering it",
                )?;
                for op in &at.operations {
                    if let AlterTableOperation::AddConstraint { constraint, .. } = op {
                        let rel = &mut schema.relations[ti];
                        add_constraint(rel, constraint, ti, &mut pending, &unknown_col)?;
                    }
                }
            }
            // A unique index is a unique key (not a partial or an
            // expression index: they do not make the columns a key).
            Statement::CreateIndex(ci) if ci.unique && ci.predicate.is_none() => {
                let Some(name) = last_ident(&ci.table_name) else {
                    continue;
                };
                let ti = table_of(
                    file,
                    &snip,
                    &schema,
                    &name,
                    "index on",
                    "create the table before its indexes",
                )?;
                let rel = &schema.relations[ti];
                let cols: Vec<usize> = ci
                    .columns
                    .iter()
                    .filter_map(|ic| {
                        index_column_ident(&ic.column.expr).and_then(|i| col_index(rel, &i))
                    })
                    .collect();
                if cols.len() == ci.columns.len() && !cols.is_empty() {
                    schema.relations[ti].unique_keys.push(cols);
                }
            }
            Statement::CreateView(v) => {
                views.extend(last_ident(&v.name).map(|i| i.value));
            }
            Statement::CreateFunction(cf) => functions.push(function_def(file, &snip, cf)?),
            Statement::CreateTrigger(t) => {
                let (at, len) = t
                    .name
                    .0
                    .last()
                    .and_then(|p| p.as_ident())
                    .map_or((0, 1), |i| span_of(file, &snip, i));
                return Err(Diag::new("triggers are not modelled")
                    .help("a trigger's reads and writes belong to every statement that fires it; isolint cannot see them. Remove the trigger from the schema given to isolint only if its function touches no table")
                    .at(file, at, len, "trigger"));
            }
            _ => {}
        }
    }
    if schema.relations.is_empty() {
        return Err(Diag::new("the schema defines no tables")
            .help("the schema file must contain CREATE TABLE statements")
            .at(file, 0, 0, "in this file"));
    }
    resolve_foreign_keys(file, &snip, &mut schema, pending, &mut fk_actions)?;
    Ok(Ddl {
        schema,
        functions,
        fk_actions,
        views,
    })
}

/// CREATE TABLE: columns, column- and table-level keys, foreign keys
/// (resolved later).
fn create_table(
    file: &SourceFile,
    snip: &Snippet,
    ct: &sqlparser::ast::CreateTable,
    schema: &mut Schema,
    pending: &mut Vec<PendingFk>,
) -> Result<()> {
    let unknown_col = |rel: &Relation, i: &Ident| unknown_column(file, snip, rel, i);
    let Some(name) = last_ident(&ct.name) else {
        return Ok(());
    };
    if schema.relations.iter().any(|r| same_name(&r.name, &name)) {
        let (at, len) = span_of(file, snip, &name);
        return Err(
            Diag::new(format!("table `{}` is defined twice", name.value)).at(
                file,
                at,
                len,
                "second definition",
            ),
        );
    }
    let ti = schema.relations.len();
    let mut rel = Relation {
        name: name.value.clone(),
        attributes: ct.columns.iter().map(|c| c.name.value.clone()).collect(),
        primary_key: vec![],
        unique_keys: vec![],
    };
    for (ci, c) in ct.columns.iter().enumerate() {
        for opt in &c.options {
            match &opt.option {
                ColumnOption::PrimaryKey(_) => rel.primary_key = vec![ci],
                ColumnOption::Unique(_) => rel.unique_keys.push(vec![ci]),
                ColumnOption::ForeignKey(fk) => pending.push(PendingFk {
                    name: opt
                        .name
                        .as_ref()
                        .or(fk.name.as_ref())
                        .map(|n| n.value.clone()),
                    table: ti,
                    columns: vec![c.name.clone()],
                    foreign_table: fk.foreign_table.clone(),
                    referred: fk.referred_columns.clone(),
                    actions: (FkAction::of(&fk.on_delete), FkAction::of(&fk.on_update)),
                }),
                _ => {}
            }
        }
    }
    for tc in &ct.constraints {
        add_constraint(&mut rel, tc, ti, pending, &unknown_col)?;
    }
    schema.relations.push(rel);
    Ok(())
}

/// Resolve the foreign keys once every table is known: referenced table
/// and columns (the primary key when none are listed), names made unique.
fn resolve_foreign_keys(
    file: &SourceFile,
    snip: &Snippet,
    schema: &mut Schema,
    pending: Vec<PendingFk>,
    fk_actions: &mut Vec<(FkAction, FkAction)>,
) -> Result<()> {
    let unknown_col = |rel: &Relation, i: &Ident| unknown_column(file, snip, rel, i);
    for p in pending {
        let dom = &schema.relations[p.table];
        let Some(target) = last_ident(&p.foreign_table) else {
            continue;
        };
        let Some(range) = schema
            .relations
            .iter()
            .position(|r| same_name(&r.name, &target))
        else {
            let (at, len) = span_of(file, snip, &target);
            return Err(Diag::new(format!(
                "foreign key of `{}` references unknown table `{}`",
                dom.name, target.value
            ))
            .help(
                did_you_mean(
                    &target.value,
                    schema.relations.iter().map(|r| r.name.as_str()),
                )
                .unwrap_or_else(|| "declare the referenced table in the schema".into()),
            )
            .at(file, at, len, "unknown table"));
        };
        let rrel = &schema.relations[range];
        let mut dcols = vec![];
        for c in &p.columns {
            dcols.push(col_index(dom, c).ok_or_else(|| unknown_col(dom, c))?);
        }
        let rcols: Vec<usize> = if p.referred.is_empty() {
            rrel.primary_key.clone()
        } else {
            let mut v = vec![];
            for c in &p.referred {
                v.push(col_index(rrel, c).ok_or_else(|| unknown_col(rrel, c))?);
            }
            v
        };
        if rcols.len() != dcols.len() {
            let (at, len) = span_of(file, snip, &target);
            return Err(Diag::new(format!(
                "foreign key of `{}` has {} column(s) but references {} column(s) of `{}`",
                dom.name,
                dcols.len(),
                rcols.len(),
                rrel.name
            ))
            .help("list the referenced columns, or give the referenced table a PRIMARY KEY")
            .at(file, at, len, "here"));
        }
        let base = p
            .name
            .unwrap_or_else(|| format!("fk_{}_{}", dom.name, rrel.name));
        let mut name = base.clone();
        let mut k = 2;
        while schema.foreign_keys.iter().any(|f| f.name == name) {
            name = format!("{base}_{k}");
            k += 1;
        }
        schema.foreign_keys.push(ForeignKey {
            name,
            domain: p.table,
            range,
            columns: dcols.into_iter().zip(rcols).collect(),
        });
        fk_actions.push(p.actions);
    }
    Ok(())
}

/// The index of the table a statement names, or the located error
/// "`what` unknown table".
fn table_of(
    file: &SourceFile,
    snip: &Snippet,
    schema: &Schema,
    name: &Ident,
    what: &str,
    help: &str,
) -> Result<usize> {
    schema
        .relations
        .iter()
        .position(|r| same_name(&r.name, name))
        .ok_or_else(|| {
            let (off, len) = span_of(file, snip, name);
            Diag::new(format!("{what} unknown table `{}`", name.value))
                .help(help)
                .at(file, off, len, "unknown table")
        })
}

fn col_index(rel: &Relation, i: &Ident) -> Option<usize> {
    rel.attributes.iter().position(|a| same_name(a, i))
}

fn unknown_column(file: &SourceFile, snip: &Snippet, rel: &Relation, i: &Ident) -> Box<Diag> {
    let (at, len) = span_of(file, snip, i);
    Diag::new(format!("table `{}` has no column `{}`", rel.name, i.value))
        .help(
            did_you_mean(&i.value, rel.attributes.iter().map(String::as_str))
                .unwrap_or_else(|| format!("its columns are: {}", rel.attributes.join(", "))),
        )
        .at(file, at, len, "unknown column")
}

fn pending_fk(fk: &ForeignKeyConstraint, table: usize) -> PendingFk {
    PendingFk {
        name: fk.name.as_ref().map(|n| n.value.clone()),
        table,
        columns: fk.columns.clone(),
        foreign_table: fk.foreign_table.clone(),
        referred: fk.referred_columns.clone(),
        actions: (FkAction::of(&fk.on_delete), FkAction::of(&fk.on_update)),
    }
}

fn index_column_ident(e: &sqlparser::ast::Expr) -> Option<Ident> {
    match e {
        sqlparser::ast::Expr::Identifier(i) => Some(i.clone()),
        sqlparser::ast::Expr::CompoundIdentifier(v) => v.last().cloned(),
        _ => None,
    }
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
            (
                "CREATE TRIGGER t AFTER INSERT ON A FOR EACH ROW EXECUTE FUNCTION f();",
                "triggers",
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
    fn syntax_error_has_position() {
        let e = schema("CREATE TABLE A (id INT PRIMARY KEY);\nCREATE TABLE B (id INT,, x INT);")
            .expect_err("syntax");
        assert!(e.message.starts_with("s.sql:2:"), "{}", e.message);
    }
}
