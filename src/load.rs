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
    let file = SourceFile::read(path)?;
    Ok(Loaded {
        workload: yaml::parse(&file)?,
        warnings: vec![],
    })
}

fn load_sql_dir(path: &Path, _schema: Option<&Path>) -> Result<Loaded> {
    Err(Diag::new(format!(
        "{} is a directory; SQL workloads are not supported yet",
        path.display()
    )))
}
