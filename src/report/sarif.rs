//! SARIF 2.1.0 for code-scanning UIs: one result per dangerous cycle,
//! located at the statement its counterflow dependency leaves from.

use serde_json::{json, Value};

use super::{edge_line, edit_line, programs_of, split_origin};
use crate::analysis::findings::Findings;
use crate::analysis::robustness::Method;
use crate::model::btp::Workload;

fn sarif_location(file: &str, line: Option<usize>, message: &str) -> Value {
    let mut phys = json!({"artifactLocation": {"uri": file}});
    if let Some(l) = line {
        phys["region"] = json!({"startLine": l});
    }
    json!({"physicalLocation": phys, "message": {"text": message}})
}

/// SARIF 2.1.0: one result per witness, located at the statement the
/// counterflow edge leaves from, with every statement of the cycle as a
/// related location.
/// `isolint check --format sarif`.
/// `pg`: per witness, what `--postgres-temp`/`--postgres` found (a
/// message suffix and a `postgres` property; empty without those flags).
pub fn check(w: &Workload, a: &Findings, workload_path: &str, pg: &[super::OnPostgres]) -> Value {
    let rule_id = match a.method {
        Method::TypeII => "mvrc-type2-cycle",
        Method::TypeI => "mvrc-type1-cycle",
        Method::Snapshot => "mvrc-type2-cycle",
    };
    let mut results = vec![];
    for (i, st) in a.cycles.iter().enumerate() {
        let primary = st.iter().find(|s| s.counterflow).unwrap_or(&st[0]);
        let (file, line) = split_origin(&primary.from_origin, workload_path);
        let mut message = format!(
            "Not robust against {}: dangerous cycle through {}. ",
            super::against(a),
            programs_of(st).join(", ")
        );
        message.push_str(&st.iter().map(edge_line).collect::<Vec<_>>().join(" ; "));
        let confirmation = a
            .confirmations
            .get(i)
            .map(|c| super::schedule::confirmation(w, c));
        if let Some(first) = confirmation.as_ref().and_then(|c| c.first()) {
            message.push_str(&format!(" — {first}"));
        }
        if let Some(p) = pg.get(i) {
            message.push_str(&format!(" — {}", p.line));
        }
        let related: Vec<Value> = st
            .iter()
            .enumerate()
            .flat_map(|(k, s)| {
                let (f1, l1) = split_origin(&s.from_origin, workload_path);
                let (f2, l2) = split_origin(&s.to_origin, workload_path);
                let mut a = sarif_location(
                    &f1,
                    l1,
                    &format!("edge {}: from {} {}", k + 1, s.from_program, s.from_stmt),
                );
                let mut b = sarif_location(
                    &f2,
                    l2,
                    &format!("edge {}: to {} {}", k + 1, s.to_program, s.to_stmt),
                );
                a["id"] = json!(2 * k);
                b["id"] = json!(2 * k + 1);
                [a, b]
            })
            .collect();
        let mut result = json!({
            "ruleId": rule_id,
            "level": "error",
            "message": {"text": message},
            "locations": [sarif_location(&file, line, &format!("{} {} starts a counterflow dependency", primary.from_program, primary.from_stmt))],
            "relatedLocations": related,
        });
        if let Some(c) = confirmation {
            result["properties"] = json!({"confirmation": c});
        }
        if let Some(p) = pg.get(i) {
            result["properties"]["postgres"] = p.json.clone();
        }
        results.push(result);
    }
    for site in super::raise_sites(w, a, workload_path) {
        results.push(json!({
            "ruleId": "isolation-level-too-low",
            "level": "error",
            "message": {"text": site.message},
            "locations": [sarif_location(&site.file, site.line, "raise this program's isolation level")],
        }));
    }
    for e in &a.edits {
        let file = e.file.as_deref().unwrap_or(workload_path);
        results.push(json!({
            "ruleId": "mvrc-fix-for-update",
            "level": "note",
            "message": {"text": format!("Verified fix: {}", edit_line(e))},
            "locations": [sarif_location(file, e.line, "add FOR UPDATE")],
        }));
    }
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "isolint",
                "version": env!("CARGO_PKG_VERSION"),
                "informationUri": "https://doi.org/10.48786/edbt.2023.02",
                "rules": [
                    {"id": "mvrc-type2-cycle", "help": {"text": "See docs/rules.md#mvrc-type2-cycle in isolint: what the finding means and how to fix it."}, "shortDescription": {"text": "Type-II cycle in the summary graph: not robust against multiversion READ COMMITTED (Algorithm 2)"}},
                    {"id": "mvrc-type1-cycle", "help": {"text": "See docs/rules.md#mvrc-type1-cycle in isolint: what the finding means and how to fix it."}, "shortDescription": {"text": "Type-I cycle (cycle with a counterflow edge), Alomari and Fekete's test"}},
                    {"id": "isolation-level-too-low", "help": {"text": "See docs/allocation.md in isolint: the lowest robust isolation level per program, and why."}, "shortDescription": {"text": "This program's isolation level is below the lowest robust allocation (docs/allocation.md)"}},
                    {"id": "mvrc-fix-for-update", "help": {"text": "See docs/rules.md#mvrc-fix-for-update in isolint: what the finding means and how to fix it."}, "shortDescription": {"text": "Promoting these key-based reads to SELECT ... FOR UPDATE makes the workload robust (re-verified)"}},
                ],
            }},
            "results": results,
        }],
    })
}
