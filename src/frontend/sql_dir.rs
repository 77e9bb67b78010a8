//! A directory of `.sql` programs with its manifest and schema → BTPs.
//! File I/O of the SQL front-end lives here (and in `load`).

use std::path::Path;

use serde::Deserialize;
use sqlparser::ast::Statement as Sql;

use super::lower::{lower_units, Context, Unit};
use super::sql::ddl::{parse_ddl, FunctionDef};
use super::sql::pgbench::{is_pgbench, parse_script};
use super::sql::plpgsql::{
    blank_meta_commands, ddl_only, inline_calls, parse_routine, scan_routines,
    scan_schema_routines, shadow, skipped_ddl, Routine, Routines,
};
use super::sql::procedural::{abbreviation, parse_program};
use super::sql::Snippet;
use super::Loaded;
use crate::model::error::{Diag, Errors, Result, SourceFile, Warning};
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
    /// Programs (file stems) and PL/pgSQL routines not to analyse: they
    /// are not read, need not parse, and are no programs.
    #[serde(default)]
    pub(super) exclude: Vec<String>,
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
    /// Values of routine parameters (`routine.param: value`) that dynamic
    /// SQL is built from: with them, `EXECUTE format('… %I …', param)` is
    /// analysed as the statement it builds.
    #[serde(default)]
    pub(super) bind: std::collections::BTreeMap<String, BindValue>,
    /// Parameters the application decides anew at every visit (replay
    /// only; `Sources::choices`).
    #[serde(default)]
    pub(super) choices: Vec<String>,
    /// Invariants (name → boolean query), a file of them, and the seed
    /// data their search starts from: read by `invariants.rs` (issue 25).
    #[serde(default)]
    pub(super) invariants: Option<yaml_serde::Value>,
    #[serde(default)]
    pub(super) invariants_file: Option<String>,
    #[serde(default)]
    pub(super) invariants_seed: Option<String>,
}

/// A value under `bind:`: a string or a number, as PostgreSQL would see
/// it as text.
#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum BindValue {
    Text(String),
    Int(i64),
    Float(f64),
    Bool(bool),
}

impl BindValue {
    fn text(&self) -> String {
        match self {
            BindValue::Text(s) => s.clone(),
            BindValue::Int(i) => i.to_string(),
            BindValue::Float(f) => f.to_string(),
            BindValue::Bool(b) => b.to_string(),
        }
    }
}

/// Load a directory of `.sql` programs with its schema.
pub fn load_dir(dir: &Path, schema_override: Option<&Path>) -> Result<Loaded> {
    let manifest_path = dir.join("isolint.yaml");
    let mut manifest = read_manifest(&manifest_path)?;
    // The invariants' seed and SQL file are data, not programs.
    for f in [&manifest.invariants_seed, &manifest.invariants_file]
        .into_iter()
        .flatten()
    {
        if let Some(stem) = Path::new(f).file_stem().and_then(|s| s.to_str()) {
            let here = Path::new(f)
                .parent()
                .is_none_or(|p| p.as_os_str().is_empty());
            if here && f.ends_with(".sql") && !manifest.exclude.iter().any(|e| e == stem) {
                manifest.exclude.push(stem.to_string());
            }
        }
    }
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
    // Every error of the run, not only the first: each file, routine and
    // transaction is read on after an error in another.
    let mut errors = Errors::default();
    let files = Files::read(
        dir,
        &schema_path,
        &manifest.exclude,
        &mut context,
        &mut errors,
    )?;
    let mut files = files;
    let from_schema = errors.take(schema_routines(&schema_file, &manifest.programs));
    let lenient = from_schema.flatten().map(|(f, rs)| {
        let name = f.name.clone();
        files.routine_files.insert(0, (f, rs));
        name
    });
    errors.take(files.check_listed(&manifest, &manifest_path, &context.functions));
    let binds: std::collections::BTreeMap<String, String> = manifest
        .bind
        .iter()
        .map(|(k, v)| (k.to_lowercase(), v.text()))
        .collect();
    let units = files.units(
        &schema,
        (&manifest.programs, &manifest.exclude, lenient.as_deref()),
        &binds,
        &mut context,
        &mut errors,
    );
    if units.is_empty() && errors.is_empty() {
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
    let lowered = if units.is_empty() {
        None
    } else {
        errors.take(lower_with_sources(
            name,
            manifest.description.clone(),
            schema,
            schema_file,
            units,
            &context,
        ))
    };
    errors.finish()?;
    let Some(mut loaded) = lowered else {
        return Err(Diag::new("internal error: no programs and no error")
            .help("please report this with the workload that caused it"));
    };
    manifest_choices(&manifest, &files, &mut loaded, &manifest_path)?;
    loaded.warnings.splice(0..0, files.skipped);
    loaded.deployed = manifest_levels(&manifest, &loaded.workload, &manifest_path)?;
    // Invariants are checked at load (PostgreSQL's parser, the schema's
    // relations), whatever the command.
    if manifest.invariants.is_some()
        || manifest.invariants_file.is_some()
        || manifest.invariants_seed.is_some()
    {
        super::invariants::load(dir, &loaded.workload.schema)?;
    }
    if context.skip_referential_checks {
        loaded.warnings.insert(0, Warning {
            file: manifest_path.display().to_string(),
            line: 1,
            message: "`referential_checks: false`: the reads of PostgreSQL's foreign-key checks are left out, as in the paper's model; a robust verdict may not hold on a real database".into(),
        });
    }
    Ok(loaded)
}

/// `choices:` of the manifest into the replay's sources: each name must
/// be a word of some program's text (`:c1`, or a routine's parameter),
/// else an error (a typo would silently leave replay picking the value once).
fn manifest_choices(
    manifest: &Manifest,
    files: &Files,
    loaded: &mut Loaded,
    manifest_path: &Path,
) -> Result<()> {
    let Some(sources) = loaded.sources.as_mut() else {
        return Ok(());
    };
    let texts: Vec<&str> = files
        .sources
        .iter()
        .chain(files.routine_files.iter().map(|(f, _)| f))
        .chain(files.scripts.iter().map(|(f, _)| f))
        .map(|f| &*f.text)
        .collect();
    let is_word = |t: &str, w: &str| {
        let lower = t.to_lowercase();
        let word = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
        lower.match_indices(w).any(|(i, _)| {
            !lower[..i].chars().next_back().is_some_and(word)
                && !lower[i + w.len()..].chars().next().is_some_and(word)
        })
    };
    for c in &manifest.choices {
        let name = c.trim_start_matches(':').to_lowercase();
        if name.is_empty() || !texts.iter().any(|t| is_word(t, &name)) {
            return Err(Diag::new(format!(
                "{}: `choices:` names `{c}`, which no program mentions",
                manifest_path.display()
            ))
            .help("list the parameters the application decides anew at every visit, e.g. `choices: [c1, c2, done]` for `IF :c1 THEN … ELSIF :c2 THEN … END IF; EXIT WHEN :done`"));
        }
        sources.choices.push(name);
    }
    Ok(())
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
            .help("isolint.yaml may set `schema:` (path relative to the directory), `description:`, `name:`, `programs:`, `exclude:`, `pure_functions:`, `referential_checks:`, `isolation:`, `bind:`, `choices:`, `invariants:`, `invariants_file:` and `invariants_seed:`");
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
    /// pgbench scripts, read (`sql::pgbench`).
    scripts: Vec<(SourceFile, Vec<crate::frontend::sql::ast::Node>)>,
    skipped: Vec<Warning>,
}

impl Files {
    fn read(
        dir: &Path,
        schema_path: &Path,
        exclude: &[String],
        context: &mut Context,
        errors: &mut Errors,
    ) -> Result<Files> {
        let schema_canon = schema_path.canonicalize().ok();
        let mut paths: Vec<_> = std::fs::read_dir(dir)
            .map_err(|e| Diag::new(format!("cannot read directory {}: {e}", dir.display())))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "sql" || x == "pgbench"))
            // The schema may live beside the programs.
            .filter(|p| schema_canon.is_none() || p.canonicalize().ok() != schema_canon)
            .collect();
        paths.sort();
        // An excluded program file is not even read.
        let (excluded, paths): (Vec<_>, Vec<_>) = paths
            .into_iter()
            .partition(|p| exclude.iter().any(|n| n == &stem(p)));
        let mut sources = vec![];
        for p in &paths {
            sources.extend(errors.take(super::read_source(p)));
        }
        let mut files = Files::classify(sources, context, errors);
        files.paths.extend(excluded);
        Ok(files)
    }

    /// Sorts files by kind: programs, routine files, skipped DDL-only
    /// files; a library's functions join `context`. A file that cannot be
    /// classified is an error in `errors`, and left out.
    fn classify(sources: Vec<SourceFile>, context: &mut Context, errors: &mut Errors) -> Files {
        let mut files = Files {
            paths: sources.iter().map(|f| f.name.clone().into()).collect(),
            sources: vec![],
            routine_files: vec![],
            scripts: vec![],
            skipped: vec![],
        };
        for f in sources {
            // psql meta-commands (pg_dump's `\restrict`) are no SQL; a
            // pgbench script's are its own, read below from `f`.
            let blanked = blank_meta_commands(&f);
            let scanned = scan_routines(blanked.as_ref().unwrap_or(&f));
            let Some(routines) = errors.take(scanned) else {
                continue;
            };
            if let Some(rs) = routines {
                let f = blanked.unwrap_or(f);
                files.skipped.extend(skipped_ddl(&f));
                files.routine_files.push((f, rs));
                continue;
            }
            if is_pgbench(&f) {
                let script = parse_script(&f).and_then(|(n, w)| Ok((not_empty(&f, n)?, w)));
                if let Some((nodes, warnings)) = errors.take(script) {
                    files.skipped.extend(warnings);
                    files.scripts.push((f, nodes));
                }
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
            match errors.take(function_library(&f)) {
                Some(Some(defs)) => context.functions.extend(defs),
                Some(None) => files.sources.push(f),
                None => {}
            }
        }
        files
    }

    /// Every name under `programs:` is a file stem or a PL/pgSQL routine,
    /// and so is every name under `exclude:` (of any language); no name is
    /// under both.
    fn check_listed(
        &self,
        manifest: &Manifest,
        manifest_path: &Path,
        schema_functions: &[crate::frontend::sql::ddl::FunctionDef],
    ) -> Result<()> {
        let programs = &manifest.programs;
        for name in &manifest.exclude {
            let known = self.paths.iter().any(|f| &stem(f) == name)
                || self
                    .routine_files
                    .iter()
                    .flat_map(|(_, rs)| rs)
                    .any(|r| r.name.eq_ignore_ascii_case(name));
            if !known {
                return Err(Diag::new(format!("{} excludes `{name}`, but there is no {name}.sql and no routine {name}", manifest_path.display()))
                    .help("`exclude:` names .sql files of the directory (by file stem) or routines of its routine files"));
            }
            if programs.iter().any(|p| p.eq_ignore_ascii_case(name)) {
                return Err(Diag::new(format!(
                    "{} lists `{name}` under both `programs:` and `exclude:`",
                    manifest_path.display()
                ))
                .help("remove it from one of the two lists"));
            }
        }
        let routine_names: Vec<&str> = self
            .routine_files
            .iter()
            .flat_map(|(_, rs)| {
                rs.iter()
                    .filter(|r| r.language == "plpgsql")
                    .map(|r| r.name.as_str())
            })
            .collect();
        for key in manifest.bind.keys() {
            let known = key.split_once('.').is_some_and(|(r, p)| {
                self.routine_files.iter().flat_map(|(_, rs)| rs).any(|x| {
                    x.language == "plpgsql"
                        && x.name.eq_ignore_ascii_case(r)
                        && x.params
                            .iter()
                            .any(|q| q.name.as_deref().is_some_and(|n| n.eq_ignore_ascii_case(p)))
                })
            });
            if !known {
                return Err(Diag::new(format!(
                    "{} binds `{key}`, but no PL/pgSQL routine has that parameter",
                    manifest_path.display()
                ))
                .help("`bind:` keys are `routine.parameter` (a named parameter of a PL/pgSQL routine of the workload), each with the value dynamic SQL is built from"));
            }
        }
        let sql_function = |name: &str| {
            schema_functions
                .iter()
                .any(|d| d.language == "sql" && d.name.eq_ignore_ascii_case(name))
                || self.routine_files.iter().flat_map(|(_, rs)| rs).any(|r| {
                    r.language == "sql" && !r.procedure && r.name.eq_ignore_ascii_case(name)
                })
        };
        for name in programs {
            let known = self.paths.iter().any(|f| &stem(f) == name)
                || routine_names.iter().any(|r| r.eq_ignore_ascii_case(name))
                || sql_function(name);
            if !known {
                return Err(Diag::new(format!("{} lists program `{name}`, but there is no {name}.sql and no PL/pgSQL routine or LANGUAGE sql function {name}", manifest_path.display()))
                    .help("the `programs:` list of isolint.yaml names .sql files of the directory (by file stem), or PL/pgSQL routines and LANGUAGE sql functions of its routine files or schema"));
            }
        }
        Ok(())
    }

    /// The programs, parsed, in `programs:` order (the rest after it);
    /// one that does not parse is an error in `errors`, and left out.
    fn units(
        &self,
        schema: &crate::model::schema::Schema,
        (programs, exclude, lenient): (&[String], &[String], Option<&str>),
        binds: &std::collections::BTreeMap<String, String>,
        context: &mut Context,
        errors: &mut Errors,
    ) -> Vec<Unit> {
        let mut units = vec![];
        for f in &self.sources {
            if let Some(nodes) = errors.take(parse_program(f).and_then(|n| not_empty(f, n))) {
                units.push(Unit {
                    name: stem(Path::new(&f.name)),
                    abbrev: abbreviation(f),
                    nodes,
                    file: f.clone(),
                    typed: false,
                    routine: None,
                });
            }
        }
        for (f, nodes) in &self.scripts {
            units.push(Unit {
                name: stem(Path::new(&f.name)),
                abbrev: abbreviation(f),
                nodes: nodes.clone(),
                file: f.clone(),
                typed: false,
                routine: None,
            });
        }
        units.extend(routine_units(
            &self.routine_files,
            schema,
            (programs, exclude, lenient),
            binds,
            context,
            errors,
        ));
        units.extend(sql_function_units(&units, programs, context, errors));
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
        units
    }
}

/// A `LANGUAGE sql` function named under `programs:` (and no program file
/// or PL/pgSQL routine of that name) is a program: a call of it with one
/// parameter per argument (`SELECT f($1, …, $n);`), whose body is inlined
/// as every call is: its statements in order, its parameters bound to the
/// program's parameters. Overloads of the name: an error (which one?).
fn sql_function_units(
    units: &[Unit],
    programs: &[String],
    context: &Context,
    errors: &mut Errors,
) -> Vec<Unit> {
    let mut out = vec![];
    for name in programs {
        if units.iter().any(|u| u.name.eq_ignore_ascii_case(name)) {
            continue;
        }
        let defs: Vec<_> = context
            .functions
            .iter()
            .filter(|d| d.language == "sql" && d.name.eq_ignore_ascii_case(name))
            .collect();
        let [def] = defs.as_slice() else {
            if defs.len() > 1 {
                errors.push(
                    Diag::new(format!("program `{name}` names {} overloaded LANGUAGE sql functions", defs.len()))
                        .help("name a function with one signature under `programs:`, or write the call as a program file (`SELECT f(:a::int);`)")
                        .at(&defs[1].file, defs[1].at, defs[1].name.len(), "another one"),
                );
            }
            continue;
        };
        let args: Vec<String> = (1..=def.signature.len()).map(|k| format!("${k}")).collect();
        let file = SourceFile::new(
            format!("{} (LANGUAGE sql function {})", def.file.name, def.name),
            format!("SELECT {}({});\n", def.name, args.join(", ")),
        );
        if let Some(nodes) = errors.take(parse_program(&file)) {
            out.push(Unit {
                name: name.clone(),
                abbrev: None,
                nodes,
                file,
                // `SELECT f($1, …)`: `$k` takes f's declared type.
                typed: true,
                routine: Some(crate::model::btp::ProgramRoutine {
                    schema: None,
                    name: def.name.clone(),
                    params: def
                        .signature
                        .iter()
                        .map(|ty| crate::model::btp::RoutineParam {
                            name: None,
                            ty: ty.clone(),
                            input: true,
                        })
                        .collect(),
                    variables: Default::default(),
                }),
            });
        }
    }
    out
}

/// A program file without a statement is an error, not an empty
/// transaction (which would be robust): most likely an extraction that went
/// wrong.
fn not_empty(
    f: &SourceFile,
    nodes: Vec<crate::frontend::sql::ast::Node>,
) -> Result<Vec<crate::frontend::sql::ast::Node>> {
    if !nodes.is_empty() {
        return Ok(nodes);
    }
    Err(Diag::new(format!("{} holds no SQL statement", f.name))
        .help("a program file holds the statements of one transaction; if it was extracted from other code, check the extraction; to leave the file out, delete it or list its name under `exclude:` in isolint.yaml")
        .at(f, 0, 0, "empty program"))
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
    // A library: PostgreSQL must accept its CREATE FUNCTIONs too.
    crate::frontend::sql::gate::routine_file(f)?;
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
    (programs, exclude, lenient): (&[String], &[String], Option<&str>),
    binds: &std::collections::BTreeMap<String, String>,
    ctx: &mut Context,
    errors: &mut Errors,
) -> Vec<Unit> {
    let listed = |r: &Routine| programs.iter().any(|n| n.eq_ignore_ascii_case(&r.name));
    // Routines of the schema file (`lenient`) that are no program: their
    // errors count only where a program calls them (`deferred`).
    let mut deferred: Vec<(String, Box<Diag>)> = vec![];
    // `exclude:`d routines are not parsed: they need not be readable.
    let excluded = |r: &Routine| exclude.iter().any(|n| n.eq_ignore_ascii_case(&r.name));
    // A trigger function is no transaction program: it runs inside the
    // statements that fire it, and a CREATE TRIGGER of the schema makes
    // those statements located errors, so skipping it loses nothing.
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
    // When `programs:` picks routines, the others are read only as far as
    // a program calls them: their errors (dynamic SQL PostgreSQL runs only
    // when called, a construct not modelled) wait for such a call, as the
    // schema file's do.
    let picks = files
        .iter()
        .flat_map(|(_, rs)| pl_of(rs))
        .any(|r| listed(&r));
    let mut parsed = Routines::new();
    // Routines whose own error is reported: a call of one is no new error.
    let mut failed = std::collections::HashSet::new();
    let mut shadows = vec![];
    for (f, rs) in files {
        // The schema file's LANGUAGE sql functions are in `ctx` already
        // (read by the schema reader, with PostgreSQL's parser).
        if lenient != Some(f.name.as_str()) {
            sql_functions(f, rs, &excluded, ctx, errors);
        }
        let pl = pl_of(rs);
        let sh = shadow(f, &pl);
        for r in pl.iter().filter(|r| !excluded(r)) {
            // A later CREATE OR REPLACE of the same signature (name and
            // input types) replaces the earlier one; another signature is
            // an overload.
            let one = match super::sql::plpgsql::quoted_body_error(f, r) {
                Some(e) => Err(e),
                None => parse_routine(f, &sh, r, schema, &callable, binds),
            };
            match one {
                Ok(p) => {
                    failed.remove(&r.name);
                    parsed.insert(r.signature(), p);
                }
                Err(e) => {
                    if (picks || lenient == Some(f.name.as_str())) && !listed(r) {
                        deferred.push((r.name.clone(), e));
                    } else {
                        errors.push(e);
                    }
                    parsed.remove(&r.signature());
                    failed.insert(r.name.clone());
                }
            }
        }
        shadows.push((sh, pl));
    }
    sql_routine_clashes(files, ctx, errors);
    let any_listed = shadows.iter().flat_map(|(_, pl)| pl).any(listed);
    let mut units = vec![];
    for (sh, pl) in &shadows {
        for r in pl.iter().filter(|r| !any_listed || listed(r)) {
            // The definition in effect (a later file may have replaced it).
            let sig = r.signature();
            let Some(p) = parsed.get(&sig).filter(|p| p.file.name == sh.name) else {
                continue;
            };
            // Overloads are programs of their own, named by signature.
            let overloaded = parsed.values().filter(|q| q.routine.name == r.name).count() > 1;
            let name = if overloaded {
                sig.clone()
            } else {
                r.name.clone()
            };
            match inline_calls(sh, p.nodes.clone(), &parsed, &p.types, &mut vec![sig]) {
                Ok(nodes) => units.push(Unit {
                    name,
                    abbrev: r.abbrev.clone(),
                    nodes,
                    file: sh.clone(),
                    typed: true,
                    routine: Some(program_routine(r, p, &parsed)),
                }),
                Err(e) if calls_failed(&e, &failed) => {
                    // The callee is a routine of the schema file whose
                    // error was held back: reported now, once.
                    if let Some(k) = deferred
                        .iter()
                        .position(|(n, _)| e.message.contains(&format!("call of `{n}`")))
                    {
                        errors.push(deferred.swap_remove(k).1);
                    }
                }
                Err(e) => errors.push(calls_excluded(e, exclude)),
            }
        }
    }
    units
}

/// What replay needs of the routine a program runs: its identity (schema,
/// name, input types: `Routine::signature`'s parts) and its scalar
/// variables' declared types — its own, and those of the routines that
/// may be inlined into it as `f.v` (inlining renames a callee `f`'s `v`
/// so; the executor looks an inlined `g.f.v` up by its last two parts).
/// A name two overloads declare with different types is left out.
fn program_routine(
    r: &Routine,
    p: &crate::frontend::sql::plpgsql::ParsedRoutine,
    parsed: &Routines,
) -> crate::model::btp::ProgramRoutine {
    use crate::frontend::sql::plpgsql::Mode;
    let mut callees: std::collections::BTreeMap<String, Option<String>> = Default::default();
    for q in parsed
        .values()
        .filter(|q| q.routine.signature() != r.signature())
    {
        for (v, t) in &q.declared {
            let key = format!("{}.{v}", q.routine.name.to_lowercase());
            let e = callees.entry(key).or_insert_with(|| Some(t.clone()));
            if e.as_deref() != Some(t.as_str()) {
                *e = None;
            }
        }
    }
    let own = p.declared.iter().map(|(k, v)| (k.clone(), v.clone()));
    let inlined = callees.into_iter().filter_map(|(k, t)| Some((k, t?)));
    crate::model::btp::ProgramRoutine {
        schema: r.schema.clone(),
        name: r.name.clone(),
        params: r
            .params
            .iter()
            .map(|x| crate::model::btp::RoutineParam {
                name: x.name.clone(),
                ty: x.ty.clone(),
                input: r.procedure || x.mode != Mode::Out,
            })
            .collect(),
        variables: own.chain(inlined).collect(),
    }
}

/// The `LANGUAGE sql` functions of a routine file, into `ctx`.
fn sql_functions(
    f: &SourceFile,
    rs: &[Routine],
    excluded: &dyn Fn(&Routine) -> bool,
    ctx: &mut Context,
    errors: &mut Errors,
) {
    for r in rs.iter().filter(|r| r.language == "sql" && !excluded(r)) {
        let snip = Snippet {
            text: f.text[r.at..r.end].to_string(),
            offset: r.at,
            parsed: None,
        };
        if let Some(Sql::CreateFunction(cf)) =
            errors.take(crate::frontend::sql::parse_one(f, &snip))
        {
            let def = crate::frontend::sql::ddl::function_def(f, &snip, &cf);
            ctx.functions.extend(errors.take(def));
        }
    }
}

/// A LANGUAGE sql function with the name of a PL/pgSQL routine is an
/// overload isolint would not resolve (calls of the name are inlined as
/// the PL/pgSQL routine): rejected.
fn sql_routine_clashes(files: &[(SourceFile, Vec<Routine>)], ctx: &Context, errors: &mut Errors) {
    let pl_of = |rs: &[Routine]| -> Vec<Routine> {
        rs.iter()
            .filter(|r| r.language == "plpgsql" && !r.trigger)
            .cloned()
            .collect()
    };
    for (f, rs) in files {
        for r in pl_of(rs) {
            if let Some(d) = ctx
                .functions
                .iter()
                .find(|d| d.language == "sql" && d.name == r.name)
            {
                let (line, _) = d.file.line_col(d.at);
                errors.push(
                    Diag::new(format!(
                        "`{}` is both a PL/pgSQL routine and a LANGUAGE sql function ({}:{line})",
                        r.name, d.file.name
                    ))
                    .help("isolint resolves overloads among PL/pgSQL routines only: rename one of them")
                    .at(f, r.at, 6, "here"),
                );
            }
        }
    }
}

/// The schema file as a file of routines, when `programs:` names one of
/// its PL/pgSQL routines: one `pg_dump --schema-only` file is then the
/// whole input (its routines are the programs and the routines they
/// call). `None` otherwise: a schema's routines are no programs unless
/// named, so existing workloads keep their programs.
fn schema_routines(
    schema: &SourceFile,
    programs: &[String],
) -> Result<Option<(SourceFile, Vec<Routine>)>> {
    if programs.is_empty() {
        return Ok(None);
    }
    let f = blank_meta_commands(schema).unwrap_or_else(|| schema.clone());
    let Some(rs) = scan_schema_routines(&f)? else {
        return Ok(None);
    };
    let named = rs.iter().any(|r| {
        r.language == "plpgsql" && programs.iter().any(|n| n.eq_ignore_ascii_case(&r.name))
    });
    Ok(named.then_some((f, rs)))
}

/// A call of an `exclude:`d routine from a routine that is analysed: its
/// body runs in the caller's transaction, so it cannot be left out.
fn calls_excluded(mut e: Box<Diag>, exclude: &[String]) -> Box<Diag> {
    let not_found = "which is not a PL/pgSQL routine of the workload";
    for n in exclude {
        if e.message
            .contains(&format!("call of `{}`", n.to_lowercase()))
            && e.message.contains(not_found)
        {
            e.message = e
                .message
                .replace(not_found, "which `exclude:` in isolint.yaml leaves out");
            e.help = Some("a routine called by a program runs in the program's transaction: remove it from `exclude:` (or exclude its callers too)".into());
        }
    }
    e
}

/// Whether `e` is about a call of a routine whose own error is reported.
fn calls_failed(e: &Diag, failed: &std::collections::HashSet<String>) -> bool {
    failed
        .iter()
        .any(|n| e.message.contains(&format!("call of `{n}`")))
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
    let mut asts = vec![];
    let mut routines = vec![];
    for u in &units {
        for t in super::lower::transactions(u.nodes.clone()) {
            asts.push(t);
            // Each transaction of a routine (a procedure's COMMIT splits
            // it) runs that routine's body with its parameters.
            routines.push(u.routine.clone());
        }
    }
    let mut loaded = lower_units(name, description, schema, units, context)?;
    loaded.sources = Some(super::Sources {
        schema: schema_file,
        programs: asts,
        routines,
        choices: vec![],
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
    let mut errors = Errors::default();
    let files = Files::classify(files.to_vec(), &mut context, &mut errors);
    let units = files.units(
        &ddl.schema,
        (&[], &[], None),
        &Default::default(),
        &mut context,
        &mut errors,
    );
    errors.finish()?;
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
