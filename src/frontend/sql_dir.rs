//! A directory of `.sql` programs with its manifest and schema → BTPs.
//! File I/O of the SQL front-end lives here (and in `load`).

use std::path::Path;

use serde::Deserialize;
use sqlparser::ast::Statement as Sql;

use super::lower::{lower_units, Context, Unit};
use super::sql::ddl::{parse_ddl, FunctionDef};
use super::sql::plpgsql::{
    ddl_only, inline_calls, parse_routine, scan_routines, shadow, Routine, Routines,
};
use super::sql::procedural::{abbreviation, parse_program};
use super::sql::Snippet;
use super::Loaded;
use crate::model::error::{Diag, Result, SourceFile, Warning};
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
    /// `false`: leave out the reads of PostgreSQL's foreign-key checks,
    /// as the paper's model does (to reproduce its BTPs; unsound for a
    /// real database, and said so in a warning).
    #[serde(default)]
    pub(super) referential_checks: Option<bool>,
    /// The isolation level each program is deployed at (program name →
    /// `read-committed` | `repeatable-read` | `serializable`), for
    /// `check` (docs/allocation.md).
    #[serde(default)]
    pub(super) isolation: std::collections::BTreeMap<String, String>,
}

/// Load a directory of `.sql` programs with its schema.
pub fn load_dir(dir: &Path, schema_override: Option<&Path>) -> Result<Loaded> {
    let manifest_path = dir.join("isolint.yaml");
    let manifest = read_manifest(&manifest_path)?;
    let schema_path = schema_path(dir, schema_override, &manifest, &manifest_path)?;
    let schema_file = super::read_source(&schema_path)?;
    let ddl = parse_ddl(&schema_file)?;
    let schema = ddl.schema;
    let mut context = Context {
        functions: ddl.functions,
        fk_actions: ddl.fk_actions,
        views: ddl.views,
        extras: ddl.extras,
        pure_functions: manifest
            .pure_functions
            .iter()
            .map(|f| f.to_lowercase())
            .collect(),
        skip_referential_checks: manifest.referential_checks == Some(false),
    };
    let files = Files::read(dir, &schema_path, &mut context)?;
    files.check_listed(&manifest.programs, &manifest_path)?;
    let units = files.units(&schema, &manifest.programs, &mut context)?;
    if units.is_empty() {
        return Err(Diag::new(format!("{} contains no .sql programs", dir.display()))
            .help("a workload directory holds one .sql file per transaction program (program name = file stem), or files of PL/pgSQL routines"));
    }
    let name = manifest
        .name
        .clone()
        .or_else(|| {
            let d = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
            d.file_name().map(|n| n.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| "workload".into());
    let mut loaded = lower_with_sources(
        name,
        manifest.description.clone(),
        schema,
        schema_file,
        units,
        &context,
    )?;
    loaded.warnings.splice(0..0, files.skipped);
    loaded.deployed = manifest_levels(&manifest, &loaded.workload, &manifest_path)?;
    if context.skip_referential_checks {
        loaded.warnings.insert(0, Warning {
            file: manifest_path.display().to_string(),
            line: 1,
            message: "`referential_checks: false`: the reads of PostgreSQL's foreign-key checks are left out, as in the paper's model; a robust verdict may not hold on a real database".into(),
        });
    }
    Ok(loaded)
}

/// `isolation:` of the manifest as (program, level) pairs; an unknown
/// program or level is an error that names it.
fn manifest_levels(
    manifest: &Manifest,
    w: &crate::model::btp::Workload,
    manifest_path: &Path,
) -> Result<Vec<(usize, crate::model::isolation::Level)>> {
    let names: Vec<&str> = w.programs.iter().map(|p| p.name.as_str()).collect();
    manifest
        .isolation
        .iter()
        .map(|(name, level)| {
            let p = w.program(name).ok_or_else(|| {
                Diag::new(format!(
                    "{}: `isolation:` names `{name}`, which is not a program of this workload",
                    manifest_path.display()
                ))
                .help(format!("programs: {}", names.join(", ")))
            })?;
            let l = crate::model::isolation::Level::parse(level).ok_or_else(|| {
                Diag::new(format!(
                    "{}: `isolation:` gives `{name}` the unknown level `{level}`",
                    manifest_path.display()
                ))
                .help("use read-committed, repeatable-read or serializable")
            })?;
            Ok((p, l))
        })
        .collect()
}

/// `isolint.yaml`, or the defaults without one.
fn read_manifest(path: &Path) -> Result<Manifest> {
    if !path.exists() {
        return Ok(Manifest::default());
    }
    let f = super::read_source(path)?;
    yaml_serde::from_str(&f.text).map_err(|e| {
        let d = Diag::new(format!("malformed manifest: {}", e.to_string().split(" at line ").next().unwrap_or("")))
            .help("isolint.yaml may set `schema:` (path relative to the directory), `description:`, `name:`, `programs:`, `pure_functions:`, `referential_checks:` and `isolation:`");
        match e.location() {
            Some(l) => d.at_line_col(&f, l.line(), l.column(), "here"),
            None => d,
        }
    })
}

/// `--schema`, else the manifest's `schema:`; it must exist.
fn schema_path(
    dir: &Path,
    schema_override: Option<&Path>,
    manifest: &Manifest,
    manifest_path: &Path,
) -> Result<std::path::PathBuf> {
    let path = match (schema_override, &manifest.schema) {
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
    if !path.exists() {
        return Err(Diag::new(format!("schema file {} does not exist", path.display()))
            .help("check the `schema:` path in isolint.yaml (relative to the workload directory) or the --schema argument"));
    }
    Ok(path)
}

fn stem(p: &Path) -> String {
    p.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The `.sql` files of a workload directory, by kind: programs in the
/// `.sql` dialect, files of routines, skipped DDL-only files (libraries
/// of `LANGUAGE sql` functions go into the context).
struct Files {
    /// Every file read (by name), of whatever kind: what `programs:` may list.
    paths: Vec<std::path::PathBuf>,
    sources: Vec<SourceFile>,
    routine_files: Vec<(SourceFile, Vec<Routine>)>,
    skipped: Vec<Warning>,
}

impl Files {
    fn read(dir: &Path, schema_path: &Path, context: &mut Context) -> Result<Files> {
        let schema_canon = schema_path.canonicalize().ok();
        let mut paths: Vec<_> = std::fs::read_dir(dir)
            .map_err(|e| Diag::new(format!("cannot read directory {}: {e}", dir.display())))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "sql"))
            // The schema may live beside the programs.
            .filter(|p| schema_canon.is_none() || p.canonicalize().ok() != schema_canon)
            .collect();
        paths.sort();
        let mut sources = vec![];
        for p in &paths {
            sources.push(super::read_source(p)?);
        }
        Files::classify(sources, context)
    }

    /// Sorts files by kind: programs, routine files, skipped DDL-only
    /// files; a library's functions join `context`.
    fn classify(sources: Vec<SourceFile>, context: &mut Context) -> Result<Files> {
        let mut files = Files {
            paths: sources.iter().map(|f| f.name.clone().into()).collect(),
            sources: vec![],
            routine_files: vec![],
            skipped: vec![],
        };
        for f in sources {
            if let Some(rs) = scan_routines(&f)? {
                files.routine_files.push((f, rs));
                continue;
            }
            // A migration that only creates tables: the schema file has them.
            if ddl_only(&f) {
                files.skipped.push(Warning {
                    file: f.name.clone(),
                    line: 1,
                    message: "holds only schema DDL: not a program, skipped (isolint reads the schema from the schema file)".into(),
                });
                continue;
            }
            // A file of CREATE FUNCTIONs only is a library, not a program.
            match function_library(&f)? {
                Some(defs) => context.functions.extend(defs),
                None => files.sources.push(f),
            }
        }
        Ok(files)
    }

    /// Every name under `programs:` is a file stem or a PL/pgSQL routine.
    fn check_listed(&self, programs: &[String], manifest_path: &Path) -> Result<()> {
        let routine_names: Vec<&str> = self
            .routine_files
            .iter()
            .flat_map(|(_, rs)| {
                rs.iter()
                    .filter(|r| r.language == "plpgsql")
                    .map(|r| r.name.as_str())
            })
            .collect();
        for name in programs {
            let known = self.paths.iter().any(|f| &stem(f) == name)
                || routine_names.iter().any(|r| r.eq_ignore_ascii_case(name));
            if !known {
                return Err(Diag::new(format!("{} lists program `{name}`, but there is no {name}.sql and no PL/pgSQL routine {name}", manifest_path.display()))
                    .help("the `programs:` list of isolint.yaml names .sql files of the directory (by file stem) or PL/pgSQL routines of its routine files"));
            }
        }
        Ok(())
    }

    /// The programs, parsed, in `programs:` order (the rest after it).
    fn units(
        &self,
        schema: &crate::model::schema::Schema,
        programs: &[String],
        context: &mut Context,
    ) -> Result<Vec<Unit>> {
        let mut units = vec![];
        for f in &self.sources {
            units.push(Unit {
                name: stem(Path::new(&f.name)),
                abbrev: abbreviation(f),
                nodes: parse_program(f)?,
                file: f.clone(),
            });
        }
        units.extend(routine_units(
            &self.routine_files,
            schema,
            programs,
            context,
        )?);
        // A routine redefined later (CREATE OR REPLACE in a later migration)
        // replaces the earlier one.
        let mut seen = std::collections::HashSet::new();
        units.reverse();
        units.retain(|u| seen.insert(u.name.to_lowercase()));
        units.reverse();
        units.sort_by_key(|u| {
            programs
                .iter()
                .position(|n| n.eq_ignore_ascii_case(&u.name))
                .unwrap_or(usize::MAX)
        });
        Ok(units)
    }
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
        parsed: None,
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

/// The programs of a file of PL/pgSQL routines: the routines `programs:`
/// names (all of them when it names none of this file), each with the
/// calls of the file's other routines inlined. Its `LANGUAGE sql`
/// functions join `ctx` for inlining like a library's.
fn routine_units(
    files: &[(SourceFile, Vec<Routine>)],
    schema: &crate::model::schema::Schema,
    programs: &[String],
    ctx: &mut Context,
) -> Result<Vec<Unit>> {
    // A trigger function is no transaction program: it runs inside the
    // statements that fire it, and a CREATE TRIGGER (in the schema or a
    // migration) is a located error, so skipping it loses nothing.
    let pl_of = |rs: &[Routine]| -> Vec<Routine> {
        rs.iter()
            .filter(|r| r.language == "plpgsql" && !r.trigger)
            .cloned()
            .collect()
    };
    // Every routine of every routine file can be called from any other
    // (migrations define helpers in one file and use them in a later one).
    let callable: std::collections::HashSet<String> = files
        .iter()
        .flat_map(|(_, rs)| pl_of(rs))
        .map(|r| r.name)
        .collect();
    let mut parsed = Routines::new();
    let mut shadows = vec![];
    for (f, rs) in files {
        for r in rs.iter().filter(|r| r.language == "sql") {
            let snip = Snippet {
                text: f.text[r.at..r.end].to_string(),
                offset: r.at,
                parsed: None,
            };
            if let Sql::CreateFunction(cf) = crate::frontend::sql::parse_one(f, &snip)? {
                ctx.functions
                    .push(crate::frontend::sql::ddl::function_def(f, &snip, &cf)?);
            }
        }
        let pl = pl_of(rs);
        let sh = shadow(f, &pl);
        for r in &pl {
            // A later file's CREATE OR REPLACE replaces the earlier one.
            parsed.insert(r.name.clone(), parse_routine(f, &sh, r, schema, &callable)?);
        }
        shadows.push((sh, pl));
    }
    let listed = |r: &Routine| programs.iter().any(|n| n.eq_ignore_ascii_case(&r.name));
    let any_listed = shadows.iter().flat_map(|(_, pl)| pl).any(listed);
    let mut units = vec![];
    for (sh, pl) in &shadows {
        for r in pl.iter().filter(|r| !any_listed || listed(r)) {
            // The definition in effect (a later file may have replaced it).
            let Some(p) = parsed.get(&r.name).filter(|p| p.file.name == sh.name) else {
                continue;
            };
            units.push(Unit {
                name: r.name.clone(),
                abbrev: r.abbrev.clone(),
                nodes: inline_calls(sh, p.nodes.clone(), &parsed, &mut vec![r.name.clone()])?,
                file: sh.clone(),
            });
        }
    }
    Ok(units)
}

/// `lower_units`, keeping each transaction's AST for replay.
fn lower_with_sources(
    name: String,
    description: Option<String>,
    schema: crate::model::schema::Schema,
    schema_file: SourceFile,
    units: Vec<Unit>,
    context: &Context,
) -> Result<Loaded> {
    // The transactions in the order `lower_units` makes programs of them.
    let asts: Vec<Vec<crate::frontend::sql::ast::Node>> = units
        .iter()
        .flat_map(|u| super::lower::transactions(u.nodes.clone()))
        .collect();
    let mut loaded = lower_units(name, description, schema, units, context)?;
    loaded.sources = Some(super::Sources {
        schema: schema_file,
        programs: asts,
    });
    Ok(loaded)
}

/// Lower one file of PL/pgSQL routines against a schema file, in memory
/// (every routine a program). For tests and fuzzing; `load_dir` is the
/// way in for users.
pub fn lower_routine_file(schema: &SourceFile, routines: &SourceFile) -> Result<Loaded> {
    if scan_routines(routines)?.is_none() {
        return Err(
            Diag::new(format!("{} defines no PL/pgSQL routine", routines.name))
                .help("write CREATE FUNCTION … LANGUAGE plpgsql AS $$ … $$;"),
        );
    }
    lower_texts(schema, std::slice::from_ref(routines))
}

/// Lower in-memory files against a schema, as `load_dir` lowers a
/// directory's: `.sql` programs (named by file stem), files of PL/pgSQL
/// routines (every routine a program), libraries of `LANGUAGE sql`
/// functions. For generated workloads and tests; `load_dir` is the way in
/// for users.
pub fn lower_texts(schema: &SourceFile, files: &[SourceFile]) -> Result<Loaded> {
    let ddl = parse_ddl(schema)?;
    let mut context = Context {
        functions: ddl.functions,
        fk_actions: ddl.fk_actions,
        views: ddl.views,
        extras: ddl.extras,
        pure_functions: vec![],
        skip_referential_checks: false,
    };
    let files = Files::classify(files.to_vec(), &mut context)?;
    let units = files.units(&ddl.schema, &[], &mut context)?;
    let mut loaded = lower_with_sources(
        "generated".into(),
        None,
        ddl.schema,
        schema.clone(),
        units,
        &context,
    )?;
    loaded.warnings.splice(0..0, files.skipped);
    Ok(loaded)
}
