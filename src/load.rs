//! Loading a workload from a path: a BTP YAML file, or a directory of
//! `.sql` programs lowered by the SQL front-end (`lower`).

use std::path::Path;

use crate::btp::{yaml, Workload};
use crate::error::{Diag, Result, SourceFile, Warning};

/// A loaded workload with the front-end's warnings (empty for YAML).
pub struct Loaded {
    pub workload: Workload,
    pub warnings: Vec<Warning>,
}

/// Load `path`: a `.yaml`/`.yml` BTP file or a directory of SQL programs.
/// `schema` overrides the directory manifest's schema (SQL only).
pub fn load(path: &Path, schema: Option<&Path>) -> Result<Loaded> {
    if path.is_dir() {
        return load_sql_dir(path, schema);
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
    let file = SourceFile::read(path)?;
    let loaded = Loaded {
        workload: yaml::parse(&file)?,
        warnings: vec![],
    };
    check_size(&loaded.workload)?;
    Ok(loaded)
}

/// Refuse programs whose Unfold≤2 explodes (k optional statements in a
/// row give 2^k linear programs) with a clear message instead of
/// exhausting memory.
pub fn check_size(w: &Workload) -> Result<()> {
    for p in &w.programs {
        let n = crate::unfold::count_unfoldings(&p.body);
        if n > crate::unfold::MAX_UNFOLDINGS {
            let mut d = Diag::new(format!(
                "program `{}` has {n} unfoldings (Unfold≤2, Section 6.1); isolint analyses at most {}",
                p.name,
                crate::unfold::MAX_UNFOLDINGS
            ))
            .help("split the program, or merge branches that do the same thing: each IF without ELSE doubles the number of linear programs");
            if let Some(f) = &p.file {
                d.message = format!("{f}: {}", d.message);
            }
            return Err(d);
        }
    }
    Ok(())
}

fn load_sql_dir(path: &Path, schema: Option<&Path>) -> Result<Loaded> {
    crate::frontend::sql_dir::load_dir(path, schema)
}
