//! The finite world the invariant search runs in: the seed rows (the
//! manifest's `invariants_seed:` SQL, else replay's made-up rows, row i
//! holding i), and per program the parameter values an instance may take.
//!
//! Parameter domain (docs/invariants.md): a boolean takes `t` and `f`; a
//! date or timestamp one value; a parameter an INSERT puts into a key
//! column, and that no other statement compares with a column, a fresh
//! value per instance (a duplicate key aborts, which says
//! nothing about isolation); a text parameter the values the seed holds
//! in the columns it is compared with (else `k1…k<rows>`); any other
//! parameter the values the seed holds in the columns it is compared
//! with (at most `rows` of them), else 1…rows. Small on purpose:
//! instances collide on rows.

use std::collections::{BTreeMap, BTreeSet};

use postgres::types::Type;

use super::super::run::SeedRow;
use super::super::scratch::{db_diag, Scratch};
use super::super::value::{is_number, is_text, Val};
use super::super::witness::parameters;
use crate::frontend::invariants::Stated;
use crate::frontend::sql::pg;
use crate::frontend::Sources;
use crate::model::btp::{StmtType, Workload};
use crate::model::error::{Diag, Result};
use crate::model::provenance::{Provenance, Value};

/// The values one parameter ranges over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Domain {
    Values(Vec<Val>),
    /// A fresh value per instance (an inserted key), of this type.
    Fresh {
        number: bool,
        type_name: String,
    },
}

/// Per program: its parameters and their domains.
pub type Domains = Vec<Vec<(String, Domain)>>;

/// The seed rows: the manifest's SQL run on the emptied scratch schema
/// and read back, else `rows` made-up rows per table.
pub fn seed(scratch: &mut Scratch, stated: &Stated, rows: usize) -> Result<Vec<SeedRow>> {
    let Some(file) = &stated.seed else {
        return Ok(super::super::random::seed_rows(scratch, rows));
    };
    super::super::run::reset(scratch, &[])?;
    let parts = pg::split(&file.text).map_err(|e| {
        Diag::new(format!("PostgreSQL does not parse the seed: {}", e.message)).at(
            file,
            e.at.unwrap_or(0),
            1,
            "here",
        )
    })?;
    for (start, end) in parts {
        let sql = &file.text[start..end];
        if let Err(e) = scratch.admin().batch_execute(sql) {
            let d = db_diag("PostgreSQL refused a statement of the seed", &e);
            return Err(d.at(file, start, end - start, "this statement"));
        }
    }
    let tables = scratch.tables.clone();
    let state = scratch.state()?;
    let mut out = vec![];
    for (name, rows) in state {
        let Some(t) = tables.iter().find(|t| t.name == name) else {
            continue;
        };
        for r in rows {
            let values = t
                .columns
                .iter()
                .zip(r)
                .map(|(c, v)| (c.name.clone(), v))
                .collect();
            out.push(SeedRow {
                table: name.clone(),
                values,
            });
        }
    }
    let order = scratch.parents_first();
    out.sort_by_key(|r| {
        order
            .iter()
            .position(|t| *t == r.table)
            .unwrap_or(usize::MAX)
    });
    Ok(out)
}

/// How a program uses a parameter (from the front-end's provenance).
#[derive(Default)]
struct Use {
    /// Columns (table, column) it is compared with or written to.
    columns: BTreeSet<(String, String)>,
    inserted_key: Option<(bool, String)>,
    /// Also compared with a column by a statement other than an INSERT
    /// (then it must collide with seeded rows, not be fresh).
    compared: bool,
}

fn uses(w: &Workload, prov: &Provenance, scratch: &Scratch, p: usize) -> BTreeMap<String, Use> {
    let mut out: BTreeMap<String, Use> = BTreeMap::new();
    let Some(prog) = w.programs.get(p) else {
        return out;
    };
    for (q, st) in prog.statements.iter().enumerate() {
        let rel = w.schema.rel(st.rel);
        for (attr, v) in prov.pins(p, q) {
            let Value::Param(name) = v else { continue };
            let Some(t) = scratch.table(&rel.name) else {
                continue;
            };
            let a = rel
                .attributes
                .get(*attr)
                .map_or("", |n| n.trim_matches('"'));
            let Some(col) = t.columns.iter().find(|c| c.name.eq_ignore_ascii_case(a)) else {
                continue;
            };
            let u = out.entry(name.clone()).or_default();
            u.columns.insert((t.name.clone(), col.name.clone()));
            let key =
                rel.primary_key.contains(attr) || rel.unique_keys.iter().any(|k| k.contains(attr));
            if st.ty == StmtType::Ins && key {
                u.inserted_key = Some((is_number(col.oid), col.type_name.clone()));
            } else if st.ty != StmtType::Ins {
                u.compared = true;
            }
        }
    }
    out
}

/// The distinct values `seed` holds in `columns`, in seed order.
fn seeded(seed: &[SeedRow], columns: &BTreeSet<(String, String)>) -> Vec<String> {
    let mut out: Vec<String> = vec![];
    for r in seed {
        for (c, v) in &r.values {
            if columns.contains(&(r.table.clone(), c.clone())) {
                if let Some(t) = &v.text {
                    if !out.contains(t) {
                        out.push(t.clone());
                    }
                }
            }
        }
    }
    out
}

/// Every program's parameters with their domains.
pub fn domains(
    scratch: &mut Scratch,
    sources: &Sources,
    w: &Workload,
    prov: &Provenance,
    seed: &[SeedRow],
    rows: usize,
) -> Domains {
    let mut out = vec![];
    for (p, nodes) in sources.programs.iter().enumerate() {
        let u = uses(w, prov, scratch, p);
        let types = super::super::executor::param_types(scratch.admin(), nodes);
        let mut list = vec![];
        for name in parameters(nodes) {
            let use_ = u.get(&name);
            let ty = types.get(&name);
            let col_text = use_.is_some_and(|u| {
                u.columns.iter().any(|(t, c)| {
                    scratch
                        .table(t)
                        .and_then(|t| t.columns.iter().find(|x| x.name == *c))
                        .is_some_and(|c| is_text(c.oid))
                })
            });
            let from_seed = use_.map(|u| seeded(seed, &u.columns)).unwrap_or_default();
            let fresh = use_
                .filter(|u| !u.compared)
                .and_then(|u| u.inserted_key.clone());
            let d = if let Some((number, type_name)) = fresh {
                Domain::Fresh { number, type_name }
            } else if ty == Some(&Type::BOOL) {
                Domain::Values(vec![Val::untyped("t"), Val::untyped("f")])
            } else if ty
                .is_some_and(|t| [Type::DATE, Type::TIMESTAMP, Type::TIMESTAMPTZ].contains(t))
            {
                Domain::Values(vec![Val::untyped("2001-01-01 00:00:00")])
            } else if col_text || ty.is_some_and(|t| is_text(t.oid())) {
                let mut v: Vec<String> = from_seed.into_iter().take(rows).collect();
                if v.is_empty() {
                    v = (1..=rows).map(|i| format!("k{i}")).collect();
                }
                Domain::Values(v.into_iter().map(Val::untyped).collect())
            } else if !from_seed.is_empty() {
                // Compared with columns: the rows the seed has there.
                let v: Vec<String> = from_seed.into_iter().take(rows).collect();
                Domain::Values(v.into_iter().map(Val::untyped).collect())
            } else {
                let v: Vec<String> = (1..=rows).map(|i| i.to_string()).collect();
                Domain::Values(v.into_iter().map(Val::untyped).collect())
            };
            list.push((name, d));
        }
        out.push(list);
    }
    out
}

/// The instances (parameter bindings) of one program, fewest values
/// other than each domain's first first, at most `cap` of them. Fresh
/// values come from `fresh`, distinct across every call.
pub fn instances(
    params: &[(String, Domain)],
    cap: usize,
    fresh: &mut u64,
) -> Vec<BTreeMap<String, Val>> {
    // Index vectors over the finite domains.
    let sizes: Vec<usize> = params
        .iter()
        .map(|(_, d)| match d {
            Domain::Values(v) => v.len().max(1),
            Domain::Fresh { .. } => 1,
        })
        .collect();
    let mut idx: Vec<Vec<usize>> = vec![vec![]];
    for &n in &sizes {
        let mut next = vec![];
        for v in &idx {
            for i in 0..n {
                let mut w = v.clone();
                w.push(i);
                next.push(w);
            }
            if next.len() > cap * 64 {
                break;
            }
        }
        idx = next;
    }
    idx.sort_by_key(|v| (v.iter().filter(|&&i| i > 0).count(), v.clone()));
    idx.truncate(cap);
    idx.into_iter()
        .map(|v| {
            params
                .iter()
                .zip(v)
                .map(|((name, d), i)| {
                    let val = match d {
                        Domain::Values(vals) => vals.get(i).cloned().unwrap_or_else(Val::null),
                        Domain::Fresh { number, type_name } => {
                            *fresh += 1;
                            if *number {
                                Val::untyped(super::super::witness::fit_number(*fresh, type_name))
                            } else {
                                Val::untyped(super::super::witness::fit_text(*fresh, type_name))
                            }
                        }
                    };
                    (name.clone(), val)
                })
                .collect()
        })
        .collect()
}
