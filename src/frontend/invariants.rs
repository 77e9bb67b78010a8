//! Invariants a team states for a workload (issue 25): boolean queries
//! over the schema, in `isolint.yaml` (`invariants: {name: query}`) or in
//! a file the manifest names (`invariants_file:`, YAML `name: query` or
//! SQL with a `-- invariant: name` line before each query), and the seed
//! data the search starts from (`invariants_seed:`, INSERT statements).
//!
//! Each query is read with PostgreSQL's parser here, at load: it must be
//! one SELECT (no `INTO`, no locking clause, no data-modifying CTE) over
//! relations of the schema. Whether it yields one boolean is checked on
//! the server, where its type is known (`replay::invariants`).

use std::path::Path;

use super::sql::pg::{self, protobuf, NodeEnum};
use crate::model::error::{Diag, Errors, Result, SourceFile};
use crate::model::schema::Schema;

/// One stated invariant.
#[derive(Debug, Clone)]
pub struct Invariant {
    pub name: String,
    /// The query as written.
    pub query: String,
    /// Where it is written (for located errors on the server's side).
    pub file: SourceFile,
    /// Byte offset of the query (or of its key, when the query's text is
    /// not found verbatim in the file) in `file`.
    pub offset: usize,
}

/// What the manifest states for invariant checking.
#[derive(Debug, Clone, Default)]
pub struct Stated {
    pub invariants: Vec<Invariant>,
    /// `invariants_seed:`: SQL (INSERTs) giving the initial database.
    pub seed: Option<SourceFile>,
}

/// The keys of `isolint.yaml` this module reads.
#[derive(Debug, Clone, Default)]
pub struct Keys {
    pub invariants: Vec<(String, String)>,
    pub invariants_file: Option<String>,
    pub invariants_seed: Option<String>,
}

/// Reads and checks the invariants of workload directory `dir` (none for
/// a BTP file or a directory without them).
pub fn load(dir: &Path, schema: &Schema) -> Result<Stated> {
    let manifest_path = dir.join("isolint.yaml");
    if !dir.is_dir() || !manifest_path.exists() {
        return Ok(Stated::default());
    }
    let manifest = super::read_source(&manifest_path)?;
    let keys = read_keys(&manifest)?;
    read(dir, &manifest, &keys, schema)
}

/// The invariant keys of a manifest's text (the manifest's shape is
/// checked by `sql_dir`).
fn read_keys(manifest: &SourceFile) -> Result<Keys> {
    let v: yaml_serde::Value = yaml_serde::from_str(&manifest.text)
        .map_err(|e| Diag::new(format!("malformed manifest: {e}")))?;
    let mut k = Keys::default();
    let Some(map) = v.as_mapping() else {
        return Ok(k);
    };
    let text_of = |key: &str| -> Result<Option<String>> {
        match map.get(key) {
            None | Some(yaml_serde::Value::Null) => Ok(None),
            Some(yaml_serde::Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(at_key(
                manifest,
                key,
                format!("`{key}:` must be a file name"),
            )),
        }
    };
    k.invariants_file = text_of("invariants_file")?;
    k.invariants_seed = text_of("invariants_seed")?;
    match map.get("invariants") {
        None | Some(yaml_serde::Value::Null) => {}
        Some(yaml_serde::Value::Mapping(m)) => {
            for (name, q) in m {
                let (Some(name), Some(q)) = (name.as_str(), q.as_str()) else {
                    return Err(at_key(
                        manifest,
                        "invariants",
                        "`invariants:` maps a name to a SQL query (a string)".into(),
                    ));
                };
                k.invariants.push((name.to_string(), q.to_string()));
            }
        }
        Some(_) => {
            return Err(at_key(
                manifest,
                "invariants",
                "`invariants:` maps a name to a SQL query".into(),
            ))
        }
    }
    Ok(k)
}

fn at_key(file: &SourceFile, key: &str, message: String) -> Box<Diag> {
    let d = Diag::new(message).help("e.g. `invariants: {no_overdraft: \"SELECT bool_and(c.balance + s.balance >= 0) FROM checking c JOIN savings s USING (customerid)\"}` (docs/invariants.md)");
    match find_key(&file.text, key) {
        Some(off) => d.at(file, off, key.len(), "here"),
        None => d,
    }
}

/// Byte offset of `key:` at the start of a line (after indentation).
fn find_key(text: &str, key: &str) -> Option<usize> {
    let mut off = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim_start();
        let quoted = [
            format!("{key}:"),
            format!("\"{key}\":"),
            format!("'{key}':"),
        ];
        if quoted.iter().any(|q| t.starts_with(q.as_str())) {
            return Some(off + line.len() - t.len());
        }
        off += line.len();
    }
    None
}

/// Reads the files the keys name and checks every query.
pub fn read(dir: &Path, manifest: &SourceFile, keys: &Keys, schema: &Schema) -> Result<Stated> {
    let mut out = Stated::default();
    let mut errors = Errors::default();
    for (name, q) in &keys.invariants {
        let offset = manifest
            .text
            .find(q.as_str())
            .or_else(|| find_key(&manifest.text, name))
            .unwrap_or(0);
        errors.take(checked(name, q, manifest, offset, schema).map(|i| out.invariants.push(i)));
    }
    if let Some(f) = &keys.invariants_file {
        let path = dir.join(f);
        if !path.exists() {
            return Err(at_key(
                manifest,
                "invariants_file",
                format!("invariants file {} does not exist", path.display()),
            ));
        }
        let file = super::read_source(&path)?;
        let yaml = f.ends_with(".yaml") || f.ends_with(".yml");
        let listed = if yaml {
            read_keys(&SourceFile::new(
                file.name.clone(),
                format!("invariants:\n{}", indent(&file.text)),
            ))
            .map(|k| k.invariants)?
        } else {
            sql_file(&file)?
        };
        for (name, q) in listed {
            let offset = file.text.find(q.as_str()).unwrap_or(0);
            errors.take(checked(&name, &q, &file, offset, schema).map(|i| out.invariants.push(i)));
        }
    }
    if let Some(s) = &keys.invariants_seed {
        let path = dir.join(s);
        if !path.exists() {
            return Err(at_key(
                manifest,
                "invariants_seed",
                format!("seed file {} does not exist", path.display()),
            ));
        }
        let file = super::read_source(&path)?;
        if let Err(e) = pg::split(&file.text) {
            errors.push(
                Diag::new(format!("PostgreSQL does not parse the seed: {}", e.message)).at(
                    &file,
                    e.at.unwrap_or(0),
                    1,
                    "here",
                ),
            );
        }
        out.seed = Some(file);
    }
    let mut seen = std::collections::HashSet::new();
    for i in &out.invariants {
        if !seen.insert(i.name.clone()) {
            errors.push(
                Diag::new(format!("invariant `{}` is stated twice", i.name))
                    .at(&i.file, i.offset, 1, "here")
                    .help("give each invariant its own name"),
            );
        }
    }
    errors.finish()?;
    Ok(out)
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("  {l}\n")).collect()
}

/// The queries of an SQL invariants file: each named by a `-- invariant:
/// NAME` line before it (else `invariant_N`).
fn sql_file(file: &SourceFile) -> Result<Vec<(String, String)>> {
    let parts = pg::split(&file.text).map_err(|e| {
        Diag::new(format!(
            "PostgreSQL does not parse {}: {}",
            file.name, e.message
        ))
        .at(file, e.at.unwrap_or(0), 1, "here")
    })?;
    let mut out = vec![];
    let mut prev = 0;
    for (n, (start, end)) in parts.into_iter().enumerate() {
        // PostgreSQL's split keeps the comments before a statement in it:
        // the name is in the leading comment lines, the query after them.
        let text = &file.text[start..end];
        let mut body = 0;
        for line in text.split_inclusive('\n') {
            let t = line.trim();
            if t.is_empty() || t.starts_with("--") {
                body += line.len();
            } else {
                break;
            }
        }
        let head = format!("{}{}", &file.text[prev..start], &text[..body]);
        let name = head
            .lines()
            .filter_map(|l| l.trim().strip_prefix("--"))
            .filter_map(|l| l.trim().strip_prefix("invariant:"))
            .map(|l| l.trim().to_string())
            .next_back()
            .unwrap_or_else(|| format!("invariant_{}", n + 1));
        out.push((name, text[body..].trim().to_string()));
        prev = end;
    }
    Ok(out)
}

/// One query through PostgreSQL's parser: a single SELECT over relations
/// of the schema.
fn checked(
    name: &str,
    query: &str,
    file: &SourceFile,
    offset: usize,
    schema: &Schema,
) -> Result<Invariant> {
    let hint = "an invariant is one SELECT returning one boolean, true when the data is consistent, e.g. `SELECT bool_and(balance >= 0) FROM checking`";
    let parsed = pg::parse(query).map_err(|e| {
        Diag::new(format!(
            "invariant `{name}`: PostgreSQL does not parse it: {}",
            e.message
        ))
        .at(file, offset + e.at.unwrap_or(0), 1, "here")
        .help(hint)
    })?;
    let bad = |what: &str| {
        Diag::new(format!("invariant `{name}` {what}"))
            .at(file, offset, query.len().clamp(1, 40), "this query")
            .help(hint)
    };
    let stmts = &parsed.tree.stmts;
    if stmts.len() != 1 {
        return Err(bad(&format!(
            "is {} statements, not one SELECT",
            stmts.len()
        )));
    }
    let node = stmts[0].stmt.as_ref().and_then(|n| n.node.as_ref());
    let Some(NodeEnum::SelectStmt(sel)) = node else {
        return Err(bad("is not a SELECT"));
    };
    if sel.into_clause.is_some() {
        return Err(bad("is SELECT … INTO, which creates a table"));
    }
    if !sel.locking_clause.is_empty() {
        return Err(bad(
            "takes row locks (FOR UPDATE/SHARE); an invariant only reads",
        ));
    }
    if writes(sel) {
        return Err(bad(
            "modifies data in a WITH clause; an invariant only reads",
        ));
    }
    for t in &parsed.tables {
        let bare = t.rsplit('.').next().unwrap_or(t);
        let known = schema.relations.iter().any(|r| {
            r.name
                .trim_matches('"')
                .eq_ignore_ascii_case(bare.trim_matches('"'))
        });
        if !known {
            return Err(bad(&format!(
                "reads `{t}`, which is not a table of the schema"
            )));
        }
    }
    Ok(Invariant {
        name: name.to_string(),
        query: query.trim().trim_end_matches(';').to_string(),
        file: file.clone(),
        offset,
    })
}

/// Does a WITH clause of `sel` hold an INSERT, UPDATE or DELETE?
fn writes(sel: &protobuf::SelectStmt) -> bool {
    let Some(w) = &sel.with_clause else {
        return false;
    };
    w.ctes.iter().any(|c| {
        let Some(NodeEnum::CommonTableExpr(cte)) = c.node.as_ref() else {
            return false;
        };
        !matches!(
            cte.ctequery.as_ref().and_then(|q| q.node.as_ref()),
            Some(NodeEnum::SelectStmt(_))
        )
    })
}
