//! The front-end: workload files → BTPs (Section 5). The only stage that
//! reads files.
//!
//! - `yaml`: BTP YAML (docs/btp-format.md) → a validated [`Workload`].
//! - `sql`: parses SQL programs (the procedural layer by hand, every
//!   statement and expression by sqlparser) and schema DDL; knows nothing
//!   about BTPs.
//! - `lower`: turns the parsed programs into BTPs with their constraints;
//!   knows nothing about files beyond the ones it is given.
//! - `builtins`: PostgreSQL's built-in functions from its catalogue.
//! - `sql_dir`: a directory of `.sql` programs with its manifest.
//!
//! Must not: build graphs, decide robustness, print.

use std::path::Path;

use crate::model::btp::Workload;
use crate::model::error::{Diag, Result, SourceFile, Warning};
use crate::model::isolation::{Declared, Level};
use crate::model::provenance::Provenance;

pub mod builtins;
pub mod invariants;
pub mod lower;
pub mod sql;
pub mod sql_dir;
pub mod yaml;

/// Read a text file as a [`SourceFile`] (for spans in diagnostics).
pub fn read_source(path: &Path) -> Result<SourceFile> {
    let text = read_text(path)?;
    let name = path.display().to_string();
    // `BEGIN ATOMIC` bodies read as `AS $$ … $$` (same positions);
    // diagnostics show the file as written.
    Ok(match sql::lex::atomic_as_dollar(&text) {
        Some(rewritten) => {
            let mut f = SourceFile::new(name, rewritten);
            f.shown = Some(text.into());
            f
        }
        None => SourceFile::new(name, text),
    })
}

/// A BTP YAML file as written: no SQL function bodies to rewrite (lexing
/// it as SQL, with two copies of the text, was a share of loading
/// Auction(100000)'s 100 MB, issue 26), and a `sql:` or `description:`
/// string saying `BEGIN ATOMIC` stays as the user wrote it.
fn read_yaml(path: &Path) -> Result<SourceFile> {
    Ok(SourceFile::new(
        path.display().to_string(),
        read_text(path)?,
    ))
}

fn read_text(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|e| {
        Diag::new(format!("cannot read {}: {e}", path.display()))
            .help("check that the path exists and is a readable UTF-8 text file")
    })
}

/// A loaded workload: the BTPs, the front-end's warnings about what it
/// over-approximated or assumed, and the provenance of each statement's
/// pinned columns (both empty for BTP YAML).
pub struct Loaded {
    pub workload: Workload,
    pub warnings: Vec<Warning>,
    pub provenance: Provenance,
    /// Per program, the isolation level its SQL declares (none for BTP
    /// YAML).
    pub declared: Vec<Option<Declared>>,
    /// `isolation:` of the manifest: (program, level) pairs.
    pub deployed: Vec<(usize, Level)>,
    /// The schema DDL and each program's AST, for `isolint replay`
    /// (`None` for BTP YAML, which has neither).
    pub sources: Option<Sources>,
}

/// What replaying a workload on a database needs beyond its BTPs.
#[derive(Debug, Clone)]
pub struct Sources {
    /// The schema file, as read (its DDL creates the scratch schema).
    pub schema: SourceFile,
    /// Per workload program (indexed like `Workload::programs`; a program
    /// that COMMIT splits gives one entry per transaction): its AST.
    pub programs: Vec<Vec<sql::ast::Node>>,
    /// Per workload program (indexed like `programs`): the routine it
    /// runs, when it is a routine's body (`Unit::routine`).
    pub routines: Vec<Option<crate::model::btp::ProgramRoutine>>,
    /// `choices:` of the manifest (lower case, without `:`): parameters
    /// the application decides anew at every visit (BenchBase's Java
    /// picks the next statement). Replay only: a condition that is exactly
    /// such a parameter follows the schedule's path (docs/replay.md). The
    /// analysis never reads it: its BTPs already take every path.
    pub choices: Vec<String>,
}

/// Load `path`: a `.yaml`/`.yml` BTP file or a directory of SQL programs.
/// `schema` overrides the directory manifest's schema (SQL only).
pub fn load(path: &Path, schema: Option<&Path>) -> Result<Loaded> {
    if path.is_dir() {
        return sql_dir::load_dir(path, schema);
    }
    if !path.exists() {
        return Err(Diag::new(format!("no such file or directory: {}", path.display()))
            .help("give a BTP YAML file (e.g. workloads/auction.yaml) or a directory of .sql programs (e.g. workloads/smallbank)"));
    }
    if schema.is_some() {
        return Err(Diag::new(format!(
            "--schema applies to a directory of SQL programs, and {} is a file",
            path.display()
        ))
        .help("a BTP YAML file declares its relations under `schema:`; drop --schema"));
    }
    let file = read_yaml(path)?;
    let workload = yaml::parse(&file)?;
    let n = workload.programs.len();
    Ok(Loaded {
        workload,
        warnings: vec![],
        provenance: Provenance::default(),
        declared: vec![None; n],
        deployed: vec![],
        sources: None,
    })
}
