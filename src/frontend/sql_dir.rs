//! A directory of `.sql` programs with its manifest and schema → BTPs.
//! File I/O of the SQL front-end lives here (and in `load`).

use std::path::Path;

use serde::Deserialize;
use sqlparser::ast::Statement as Sql;

use super::lower::{lower_programs_with, Context};
use super::sql::ddl::{parse_ddl, FunctionDef};
use super::sql::Snippet;
use super::Loaded;
use crate::model::error::{Diag, Result, SourceFile};
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct Manifest {
    #[serde(default)]
    pub(super) name: Option<String>,
    #[serde(default)]
    pub(super) description: Option<String>,
    #[serde(default)]
    pub(super) schema: Option<String>,
    /// Program order (file stems); the rest follow by file name.
    #[serde(default)]
    pub(super) programs: Vec<String>,
    /// User functions that touch no table (calls of other unknown
    /// functions are errors).
    #[serde(default)]
    pub(super) pure_functions: Vec<String>,
}

/// Load a directory of `.sql` programs with its schema.
pub fn load_dir(dir: &Path, schema_override: Option<&Path>) -> Result<Loaded> {
    let manifest_path = dir.join("isolint.yaml");
    let manifest: Manifest = if manifest_path.exists() {
        let f = super::read_source(&manifest_path)?;
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
    let ddl = parse_ddl(&super::read_source(&schema_path)?)?;
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
        let f = super::read_source(p)?;
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
    lower_programs_with(
        name,
        manifest.description.clone(),
        schema,
        &sources,
        &context,
    )
}

/// The functions of a file that holds only `CREATE FUNCTION` statements.
pub(super) fn function_library(f: &SourceFile) -> Result<Option<Vec<FunctionDef>>> {
    let starts_with_create = f.text[crate::frontend::sql::procedural::blank_prefix(&f.text)..]
        .get(..6)
        .is_some_and(|w| w.eq_ignore_ascii_case("create"));
    if !starts_with_create {
        return Ok(None);
    }
    let snip = Snippet {
        text: f.text.to_string(),
        offset: 0,
    };
    let Ok(stmts) = crate::frontend::sql::parse_statements(f, &snip) else {
        return Ok(None);
    };
    if stmts.is_empty() || !stmts.iter().all(|s| matches!(s, Sql::CreateFunction(_))) {
        return Ok(None);
    }
    let mut defs = vec![];
    for s in &stmts {
        if let Sql::CreateFunction(cf) = s {
            defs.push(crate::frontend::sql::ddl::function_def(f, &snip, cf)?);
        }
    }
    Ok(Some(defs))
}
