//! SARIF 2.1.0 for code-scanning UIs: one result per dangerous cycle,
//! located at the statement its counterflow dependency leaves from.

use serde_json::{json, Value};

use super::{edge_line, edit_line, locate, programs_of, RuleId};
use crate::analysis::findings::Findings;
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
    let rule = RuleId::cycle(a.method);
    let mut results = vec![];
    for (i, st) in a.cycles.iter().enumerate() {
        let primary = st.iter().find(|s| s.counterflow).unwrap_or(&st[0]);
        let (file, line) = locate(primary.from_origin.as_ref(), workload_path);
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
                let (f1, l1) = locate(s.from_origin.as_ref(), workload_path);
                let (f2, l2) = locate(s.to_origin.as_ref(), workload_path);
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
            "ruleId": rule.id(),
            "level": rule.level(),
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
            "ruleId": RuleId::LevelTooLow.id(),
            "level": RuleId::LevelTooLow.level(),
            "message": {"text": site.message},
            "locations": [sarif_location(&site.file, site.line, "raise this program's isolation level")],
        }));
    }
    for e in &a.edits {
        let file = e.file.as_deref().unwrap_or(workload_path);
        results.push(json!({
            "ruleId": RuleId::FixForUpdate.id(),
            "level": RuleId::FixForUpdate.level(),
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
                "rules": RuleId::ALL.iter().map(|r| json!({
                    "id": r.id(),
                    "help": {"text": r.help()},
                    "shortDescription": {"text": r.short_description()},
                })).collect::<Vec<_>>(),
            }},
            "results": results,
        }],
    })
}
