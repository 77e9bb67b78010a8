//! JSON for scripts (docs/json.md): `analyze`, `check`, `subsets`,
//! `graph`. Keys are a stable interface; add, never rename.

use serde_json::{json, Value};

use super::{method_key, subset_names, ASSUMPTION};
use crate::analysis::explorer::{Bounds, Confirmation, Schedule, Stats};
use crate::analysis::findings::{Edit, Findings, SubsetTable};
use crate::analysis::graph::SummaryGraph;
use crate::analysis::promote::Suggestion;
use crate::analysis::robustness::Method;
use crate::model::btp::Workload;
use crate::model::error::Warning;
use crate::model::isolation::{Allocation, LevelSource};
use crate::model::settings::{Granularity, Settings};

fn witness(w: &Workload, a: &Findings, i: usize) -> Value {
    let (wit, steps, method) = (&a.witnesses[i], &a.cycles[i], a.method);
    let edges: Vec<Value> = steps
        .iter()
        .map(|s| {
            json!({
                "from": s.from, "from_program": s.from_program, "from_statement": s.from_stmt,
                "from_sql": s.from_sql, "from_origin": s.from_origin.as_ref().map(|o| o.to_string()),
                "to": s.to, "to_program": s.to_program, "to_statement": s.to_stmt,
                "to_sql": s.to_sql, "to_origin": s.to_origin.as_ref().map(|o| o.to_string()),
                "counterflow": s.counterflow, "dependencies": s.kinds,
            })
        })
        .collect();
    let pair = match method {
        Method::TypeII | Method::Snapshot => json!([0, 1]),
        Method::TypeI => json!([0]),
    };
    let mut v = json!({
        "rule": super::RuleId::cycle(method).id(),
        "reason": super::reason_text(wit.reason),
        "distinguished_edges": pair,
        "edges": edges,
    });
    if let Some(c) = a.confirmations.get(i) {
        v["confirmation"] = confirmation(w, c);
    }
    v
}

/// The explorer's answer as data (docs/json.md): the status, the bounds,
/// what was searched, and for a confirmed cycle the schedule.
fn confirmation(w: &Workload, c: &Confirmation) -> Value {
    let stats = |s: &Stats| json!({"instances": s.instances, "states": s.states, "schedules": s.schedules, "budget_exhausted": s.exhausted, "cycles": s.cycles});
    let bounds = |b: &Bounds| json!({"max_txns": b.max_txns, "tuples_per_relation": b.tuples_per_relation, "max_states": b.max_states});
    match c {
        Confirmation::Confirmed(s) => json!({
            "status": "confirmed",
            "through_another_cycle": s.via.is_some(),
            // Issue 23: with values (program instances with parameters),
            // or in the BTP model only, with the reason.
            "with_values": s.values.is_some(),
            "model_only": s.model_only,
            "values": s.values.as_ref().map(|v| json!({"params": v.params, "rows": v.rows, "writes": v.writes})),
            "bounds": bounds(&s.bounds),
            "schedule": schedule(w, s),
            "description": super::schedule::confirmation(w, c),
        }),
        Confirmation::NotWithinBounds {
            bounds: b,
            explored,
        } => json!({
            "status": "not_confirmed_within_bounds",
            "bounds": bounds(b),
            "explored": stats(explored),
            "not_modelled": crate::analysis::explorer::NOT_MODELLED,
            "description": super::schedule::confirmation(w, c),
        }),
        Confirmation::NotChecked(why) => json!({"status": "not_checked", "why": why}),
    }
}

fn schedule(w: &Workload, s: &Schedule) -> Value {
    let transactions: Vec<Value> = s
        .transactions
        .iter()
        .map(|t| json!({"name": t.name, "program": w.programs[t.program].name, "level": t.level.sql()}))
        .collect();
    let steps: Vec<Value> = s
        .steps
        .iter()
        .map(|st| {
            let ops: Vec<Value> = st
                .ops
                .iter()
                .map(|op| {
                    let rel = w.schema.rel(op.rel);
                    let mut o = json!({
                        "op": op.kind.letter(),
                        "relation": rel.name,
                        "tuple": op.tuple.map(|t| s.tuples[t].name.clone()),
                        "attributes": op.attrs.iter().map(|&x| rel.attributes[x].clone()).collect::<Vec<_>>(),
                    });
                    // Tuples a predicate read waits for and re-checks later
                    // (EvalPlanQual, docs/explorer.md).
                    if !op.deferred.is_empty() {
                        o["waits_for"] = json!(op.deferred.iter().map(|&t| s.tuples[t].name.clone()).collect::<Vec<_>>());
                    }
                    o
                })
                .collect();
            let mut v = json!({
                "transaction": st.txn,
                "statement": st.pos.map(|p| s.statement_id(st.txn, p).to_string()),
                "ops": ops,
            });
            if st.resumed {
                v["resumed_after_lock_wait"] = json!(true);
            }
            v
        })
        .collect();
    let cycle: Vec<Value> = s
        .cycle_edges()
        .iter()
        .map(|d| json!({"from": d.from, "to": d.to, "dependency": d.kind.label(), "tuple": d.tuple.map(|t| s.tuples[t].name.clone())}))
        .collect();
    json!({"transactions": transactions, "steps": steps, "cycle": cycle})
}

pub fn settings(s: Settings) -> Value {
    json!({
        "granularity": match s.granularity { Granularity::Attribute => "attribute", Granularity::Tuple => "tuple" },
        "foreign_keys": s.foreign_keys,
        "same_tuple": s.same_tuple,
        "label": s.label(),
    })
}

fn warnings(ws: &[Warning]) -> Value {
    Value::Array(
        ws.iter()
            .map(|x| json!({"file": x.file, "line": x.line, "message": x.message}))
            .collect(),
    )
}

/// `isolint analyze --format json`.
pub fn analyze(w: &Workload, a: &Findings, warns: &[Warning]) -> Value {
    let mut v = json!({
        "workload": w.name,
        "settings": settings(a.settings),
        "method": method_key(a.method),
        "robust": a.robust,
        "summary_graph": {
            "nodes": a.graph.nodes.len(),
            "edges": a.edge_count(),
            "counterflow_edges": a.counterflow_count(),
        },
        "witness": (!a.witnesses.is_empty()).then(|| witness(w, a, 0)),
        "witnesses": witnesses(w, a),
        "warnings": warnings(warns),
        "assumptions": [ASSUMPTION],
    });
    if let Some(s) = &a.subsets {
        v["maximal_robust_subsets"] = json!(subset_names(w, &s.sets, false));
        v["maximal_robust_subsets_complete"] = json!(s.complete);
    }
    v
}

/// `isolint check --format json`.
/// `pg`: per witness, what `--postgres-temp`/`--postgres` found (empty
/// without those flags; then no witness has a `postgres` key).
pub fn check(w: &Workload, a: &Findings, warns: &[Warning], pg: &[super::OnPostgres]) -> Value {
    let suggestion = match &a.suggestion {
        Some(Suggestion::Promote(_)) => {
            json!({"verified": true, "edits": edits(&a.edits), "smallest": true})
        }
        Some(Suggestion::Minimal { none_up_to, .. }) => {
            json!({"verified": true, "edits": edits(&a.edits), "smallest": false, "none_up_to": none_up_to})
        }
        Some(Suggestion::NotFound { candidates, tried }) => {
            json!({"verified": false, "edits": [], "candidates": candidates, "tried": tried, "no_promotion_helps": false})
        }
        Some(Suggestion::Impossible { candidates }) => {
            json!({"verified": false, "edits": [], "candidates": candidates, "no_promotion_helps": true})
        }
        None => Value::Null,
    };
    let mut witnesses = witnesses(w, a);
    for (x, p) in witnesses.iter_mut().zip(pg) {
        x["postgres"] = p.json.clone();
    }
    json!({
        "workload": w.name,
        "robust": a.robust,
        "method": method_key(a.method),
        "settings": settings(a.settings),
        "summary_graph": {
            "nodes": a.graph.nodes.len(),
            "edges": a.edge_count(),
            "counterflow_edges": a.counterflow_count(),
        },
        "witnesses": witnesses,
        "suggestion": suggestion,
        "maximal_robust_subsets": a.subsets.as_ref().map(|s| subset_names(w, &s.sets, false)),
        "maximal_robust_subsets_complete": a.subsets.as_ref().map(|s| s.complete),
        "isolation": isolation(w, a),
        "warnings": warnings(warns),
        "assumptions": [ASSUMPTION],
    })
}

/// The isolation level each program needs, for CI (see
/// [`Isolation`](crate::analysis::findings::Isolation)): the lowest
/// robust allocation, after the verified edits, the reason per raised
/// program, and (`check`) the deployed levels' verdict.
fn isolation(w: &Workload, a: &Findings) -> Value {
    let per = |alloc: &Allocation| -> serde_json::Map<String, Value> {
        w.programs
            .iter()
            .enumerate()
            .map(|(i, p)| (p.name.clone(), json!(alloc.level(i).sql())))
            .collect()
    };
    let iso = &a.isolation;
    let reasons: Vec<Value> = iso
        .raised
        .iter()
        .map(|r| {
            let name = &w.programs[r.program].name;
            let cycle = iso.cycle(w, &a.graph, r);
            json!({
                "program": name,
                "level": r.level.sql(),
                "reason": super::raise_reason(w, r),
                "origin": super::raise_location(cycle, name).map(|o| o.to_string()),
                "cycle": steps_json(cycle),
            })
        })
        .collect();
    let deployed = iso.deployed.as_ref().map(|d| {
        let source = |s: &LevelSource| match s {
            LevelSource::Default => json!("default"),
            LevelSource::Declared { file, line } => json!(format!("{file}:{line}")),
            LevelSource::Manifest => json!("isolint.yaml"),
            LevelSource::Flag => json!("--levels"),
        };
        json!({
            "levels": per(&d.deployed.allocation),
            "sources": w.programs.iter().zip(&d.deployed.sources)
                .map(|(p, s)| (p.name.clone(), source(s)))
                .collect::<serde_json::Map<String, Value>>(),
            "robust": d.robust,
            "raise": d.raise.iter()
                .map(|&(p, l)| json!({"program": w.programs[p].name, "to": l.sql(), "rule": super::RuleId::LevelTooLow.id()}))
                .collect::<Vec<_>>(),
        })
    });
    json!({
        "as_is": per(&iso.as_is),
        "with_suggested_edits": iso.with_edits.as_ref().map(per),
        "unique": true,
        "reasons": reasons,
        "deployed": deployed,
    })
}

fn steps_json(steps: &[crate::analysis::findings::Step]) -> Vec<Value> {
    steps
        .iter()
        .map(|s| {
            json!({
                "from": s.from, "from_program": s.from_program, "from_statement": s.from_stmt,
                "from_sql": s.from_sql, "from_origin": s.from_origin.as_ref().map(|o| o.to_string()),
                "to": s.to, "to_program": s.to_program, "to_statement": s.to_stmt,
                "to_sql": s.to_sql, "to_origin": s.to_origin.as_ref().map(|o| o.to_string()),
                "counterflow": s.counterflow, "dependencies": s.kinds,
            })
        })
        .collect()
}

/// `isolint allocate --format json`.
pub fn allocate(w: &Workload, a: &Findings, warns: &[Warning]) -> Value {
    json!({
        "workload": w.name,
        "settings": settings(a.settings),
        "robust_under_read_committed": a.robust,
        "isolation": isolation(w, a),
        "edits": edits(&a.edits),
        "warnings": warnings(warns),
    })
}

/// The promoted reads of a verified fix.
fn edits(edits: &[Edit]) -> Vec<Value> {
    edits
        .iter()
        .map(|e| {
            json!({
                "program": e.program,
                "statement": e.statement,
                "file": e.file,
                "line": e.line,
                "sql": e.sql,
                "edit": "add FOR UPDATE",
                "rule": super::RuleId::FixForUpdate.id(),
            })
        })
        .collect()
}

fn witnesses(w: &Workload, a: &Findings) -> Vec<Value> {
    (0..a.witnesses.len()).map(|i| witness(w, a, i)).collect()
}

/// `isolint subsets --format json`.
pub fn subsets(w: &Workload, table: &SubsetTable) -> Value {
    let rows: Vec<Value> = table
        .rows
        .iter()
        .map(|(s, per)| {
            let mut row = json!({
                "settings": settings(*s),
                "complete": {},
            });
            for (m, subsets) in table.methods.iter().zip(per) {
                let key = method_key(*m);
                row[key] = json!(subset_names(w, &subsets.sets, false));
                row["complete"][key] = json!(subsets.complete);
            }
            row
        })
        .collect();
    let complete = table
        .rows
        .iter()
        .all(|(_, per)| per.iter().all(|s| s.complete));
    json!({
        "workload": w.name,
        "rows": rows,
        "maximal_robust_subsets_complete": complete,
    })
}

/// `isolint graph --format json`.
pub fn graph(w: &Workload, g: &SummaryGraph) -> Value {
    let nodes: Vec<Value> = g
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let stmts: Vec<String> = (0..n.ltp.occurrences.len()).map(|p| n.ltp.occurrence_label(w, p)).collect();
            json!({"id": i, "name": n.name, "program": w.programs[n.ltp.program].name, "statements": stmts})
        })
        .collect();
    let edges: Vec<Value> = g
        .edges
        .iter()
        .map(|e| {
            json!({
                "from": e.from, "from_statement": g.nodes[e.from as usize].ltp.occurrence_label(w, e.from_pos as usize),
                "to": e.to, "to_statement": g.nodes[e.to as usize].ltp.occurrence_label(w, e.to_pos as usize),
                "counterflow": e.counterflow,
            })
        })
        .collect();
    json!({
        "workload": w.name,
        "settings": settings(g.settings),
        "nodes": nodes,
        "edges": edges,
        "counts": {"nodes": g.nodes.len(), "edges": g.edges.len(), "counterflow_edges": g.counterflow_edges()},
    })
}
