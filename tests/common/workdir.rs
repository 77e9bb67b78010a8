//! A workload directory written from strings (`schema.sql`, `isolint.yaml`
//! and program files), loaded as `isolint check DIR` would: the one helper
//! the front-end soundness tests share.
#![allow(dead_code)]

use isolint::frontend::Loaded;
use isolint::model::error::Diag;

/// Writes `schema.sql`, `isolint.yaml` (`schema: schema.sql` followed by
/// `manifest`) and `files` to a fresh directory.
pub fn dir(schema: &str, manifest: &str, files: &[(&str, &str)]) -> tempfile::TempDir {
    let d = tempfile::tempdir().expect("tempdir");
    std::fs::write(d.path().join("schema.sql"), schema).expect("write schema.sql");
    std::fs::write(
        d.path().join("isolint.yaml"),
        format!("schema: schema.sql\n{manifest}"),
    )
    .expect("write isolint.yaml");
    for (n, t) in files {
        std::fs::write(d.path().join(n), t).expect("write a program");
    }
    d
}

/// Loads such a directory: the lowered workload, or the front-end's error.
pub fn load(schema: &str, manifest: &str, files: &[(&str, &str)]) -> Result<Loaded, Box<Diag>> {
    let d = dir(schema, manifest, files);
    isolint::frontend::load(d.path(), None)
}

/// The type-II verdict (Algorithm 2) with the default settings.
pub fn robust_of(l: &Loaded) -> bool {
    use isolint::analysis::{analyze, graph::Settings, robustness::Method};
    analyze(&l.workload, Settings::default(), Method::TypeII, false).robust
}

/// Loads such a directory; an error is every error of the run, each
/// with its hint, one per line (what a user reads).
pub fn load_text(schema: &str, manifest: &str, files: &[(&str, &str)]) -> Result<Loaded, String> {
    load(schema, manifest, files).map_err(|e| {
        std::iter::once(&*e)
            .chain(e.related.iter())
            .map(|d| format!("{} ({})", d.message, d.help.as_deref().unwrap_or("")))
            .collect::<Vec<_>>()
            .join("\n")
    })
}

/// Program `p`'s statements as `type rel P{..} R{..} W{..}`.
pub fn stmt_shapes(l: &Loaded, p: usize) -> Vec<String> {
    stmt_shapes_marked(l, p, "-")
}

/// As [`stmt_shapes`], with `none` for an absent set (some files write ⊥).
pub fn stmt_shapes_marked(l: &Loaded, p: usize, none: &str) -> Vec<String> {
    let w = &l.workload;
    let set = |rel, s: &Option<isolint::model::schema::AttrSet>| match s {
        None => none.to_string(),
        Some(a) => format!("{{{}}}", w.schema.rel(rel).names(a).join(",")),
    };
    w.programs[p]
        .statements
        .iter()
        .map(|s| {
            format!(
                "{} {} P{} R{} W{}",
                s.ty.name(),
                w.schema.rel(s.rel).name,
                set(s.rel, &s.pread),
                set(s.rel, &s.read),
                set(s.rel, &s.write)
            )
        })
        .collect()
}

/// Loads a directory of `schema.sql` and `files` (no manifest keys); a
/// front-end error fails the test with its message.
pub fn workload(schema: &str, files: &[(&str, &str)]) -> Loaded {
    load(schema, "", files).unwrap_or_else(|e| panic!("{}", e.message))
}

/// The summary-graph nodes of the named programs: `Name` itself or its
/// unfoldings `Name#…`; a name with no node fails the test.
pub fn nodes(g: &isolint::analysis::graph::SummaryGraph, names: &[&str]) -> Vec<usize> {
    names
        .iter()
        .flat_map(|n| {
            let all: Vec<usize> = (0..g.nodes.len())
                .filter(|&v| g.nodes[v].name == *n || g.nodes[v].name.starts_with(&format!("{n}#")))
                .collect();
            assert!(!all.is_empty(), "no node {n}");
            all
        })
        .collect()
}
