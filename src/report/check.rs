//! Output of `isolint check`: text, JSON, SARIF 2.1.0 and GitHub Actions
//! annotations. Witness edges are printed in source terms: program,
//! statement, `file:line`, SQL, dependency kind, counterflow or not.

use serde_json::{json, Value};

use super::{
    method_key, settings_json, steps, subset_names, subsets_inline, warnings_json, witness_json,
    Step,
};
use crate::analysis::check::CheckResult;
use crate::analysis::promote::Suggestion;
use crate::analysis::robustness::{Method, Reason, Witness};
use crate::model::btp::Workload;
use crate::model::error::Warning;

fn stmt_text(program: &str, stmt: &str, origin: &Option<String>, sql: &Option<String>) -> String {
    let mut s = format!("{program} {stmt}");
    if let Some(o) = origin {
        s.push_str(&format!(" ({o})"));
    }
    if let Some(q) = sql {
        let q: String = if q.chars().count() > 70 {
            format!("{}…", q.chars().take(69).collect::<String>())
        } else {
            q.clone()
        };
        s.push_str(&format!(" {q}"));
    }
    s
}

/// `A q1 (A.sql:3) SELECT …  --rw, counterflow-->  B q4 (B.sql:7) UPDATE …`
pub fn edge_line(s: &Step) -> String {
    format!(
        "{}  --{}{}-->  {}",
        stmt_text(&s.from_program, &s.from_stmt, &s.from_origin, &s.from_sql),
        s.kinds.join("/"),
        if s.counterflow { ", counterflow" } else { "" },
        stmt_text(&s.to_program, &s.to_stmt, &s.to_origin, &s.to_sql)
    )
}

fn programs_of(steps: &[Step]) -> Vec<String> {
    let mut v: Vec<String> = steps.iter().map(|s| s.from_program.clone()).collect();
    v.sort();
    v.dedup();
    v
}

fn pair_explanation(w: &Witness, steps: &[Step], method: Method) -> String {
    match method {
        Method::TypeI => format!("type-I: edge 1 is counterflow ({})", steps[0].from_program),
        Method::TypeII => {
            let (a, b) = (&steps[0], &steps[1 % steps.len()]);
            let why = match w.reason {
                Reason::AdjacentCounterflow => "both are counterflow".to_string(),
                Reason::OutgoingBeforeIncoming => format!(
                    "edge 2 is counterflow and leaves from {}, which runs before {} where edge 1 enters",
                    b.from_stmt, a.to_stmt
                ),
                Reason::IncomingFromRead => format!(
                    "edge 2 is counterflow and edge 1 comes from {} {}, which starts with a (predicate) read",
                    a.from_program, a.from_stmt
                ),
                Reason::Counterflow => w.reason.describe().to_string(),
            };
            format!(
                "type-II because edges 1 and 2 meet in {}: {why}",
                b.from_program
            )
        }
    }
}

/// Edits that promote the suggested reads, with their locations.
pub fn edits(w: &Workload, set: &[(usize, usize)]) -> Vec<Value> {
    set.iter()
        .map(|&(p, q)| {
            let st = &w.programs[p].statements[q];
            json!({
                "program": w.programs[p].name,
                "statement": st.id,
                "file": st.origin.as_ref().map(|o| o.file.clone()).or_else(|| w.programs[p].file.clone()),
                "line": st.origin.as_ref().map(|o| o.line),
                "sql": st.sql,
                "edit": "add FOR UPDATE",
            })
        })
        .collect()
}

/// `file:line` of an edit, or `Program statement` without a source file.
pub fn edit_location(e: &Value) -> String {
    match (e["file"].as_str(), e["line"].as_u64()) {
        (Some(f), Some(l)) => format!("{f}:{l}"),
        _ => format!(
            "{} {}",
            e["program"].as_str().unwrap_or(""),
            e["statement"].as_str().unwrap_or("")
        ),
    }
}

fn edit_line(e: &Value) -> String {
    let loc = edit_location(e);
    let sql = e["sql"]
        .as_str()
        .map(|s| format!("   ({s})"))
        .unwrap_or_default();
    format!("{loc}: add FOR UPDATE{sql}")
}

pub fn text(w: &Workload, r: &CheckResult) -> String {
    let a = &r.analysis;
    let mut o = format!(
        "isolint check: {} — {} against MVRC ({}, {})\n",
        w.name,
        if a.robust { "ROBUST" } else { "NOT ROBUST" },
        a.method.label(),
        a.settings.label()
    );
    if a.robust {
        o.push_str("All programs may run under READ COMMITTED: every schedule is serializable.\n");
        return o;
    }
    o.push_str("Run these programs under SERIALIZABLE, or apply the fix below, or deploy only a robust subset.\n");
    o.push_str(&format!(
        "{} dangerous cycle(s), one per strongly connected component:\n",
        a.witnesses.len()
    ));
    for (i, wit) in a.witnesses.iter().enumerate() {
        let st = steps(w, &a.graph, wit);
        o.push_str(&format!(
            "\ncycle {}: {}\n",
            i + 1,
            programs_of(&st).join(", ")
        ));
        for (k, s) in st.iter().enumerate() {
            o.push_str(&format!("  {}. {}\n", k + 1, edge_line(s)));
        }
        o.push_str(&format!("  {}\n", pair_explanation(wit, &st, a.method)));
    }
    match &r.suggestion {
        Some(Suggestion::Promote(set)) => {
            o.push_str("\nsuggested fix (verified: the promoted workload is robust):\n");
            for e in edits(w, set) {
                o.push_str(&format!("  {}\n", edit_line(&e)));
            }
        }
        Some(Suggestion::NotFound { candidates, tried }) => {
            o.push_str(&format!(
                "\nno fix by promoting key-based reads to FOR UPDATE ({candidates} candidate reads, {tried} combinations tried).\n"
            ));
        }
        Some(Suggestion::Impossible { candidates }) => {
            o.push_str(&format!(
                "\nno fix by promoting key-based reads to FOR UPDATE: a dangerous cycle remains even with all {candidates} candidate reads promoted (its counterflow dependencies start at predicate-based statements, whose predicate a row lock does not cover).\n"
            ));
        }
        None => {}
    }
    if let Some(s) = &r.subsets {
        o.push_str(&format!(
            "maximal robust subsets (safe to run together under READ COMMITTED): {}\n",
            subsets_inline(w, s)
        ));
    }
    o
}

pub fn json(w: &Workload, r: &CheckResult, warnings: &[Warning]) -> Value {
    let a = &r.analysis;
    let suggestion = match &r.suggestion {
        Some(Suggestion::Promote(set)) => json!({"verified": true, "edits": edits(w, set)}),
        Some(Suggestion::NotFound { candidates, tried }) => {
            json!({"verified": false, "edits": [], "candidates": candidates, "tried": tried, "no_promotion_helps": false})
        }
        Some(Suggestion::Impossible { candidates }) => {
            json!({"verified": false, "edits": [], "candidates": candidates, "no_promotion_helps": true})
        }
        None => Value::Null,
    };
    json!({
        "workload": w.name,
        "robust": a.robust,
        "method": method_key(a.method),
        "settings": settings_json(a.settings),
        "summary_graph": {
            "nodes": a.graph.nodes.len(),
            "edges": a.graph.edges.len(),
            "counterflow_edges": a.graph.counterflow_edges(),
        },
        "witnesses": a.witnesses.iter().map(|x| witness_json(w, &a.graph, x, a.method)).collect::<Vec<_>>(),
        "suggestion": suggestion,
        "maximal_robust_subsets": r.subsets.as_ref().map(|s| subset_names(w, &s.sets, false)),
        "maximal_robust_subsets_complete": r.subsets.as_ref().map(|s| s.complete),
        "isolation": isolation_json(w, r),
        "warnings": warnings_json(warnings),
    })
}

/// The isolation level each program needs, for CI. The analysis covers a
/// workload that runs entirely under READ COMMITTED; it says nothing about
/// mixing levels (an RC transaction next to SERIALIZABLE ones can still
/// take part in an anomaly), so the answer is uniform: READ COMMITTED for
/// every program when robust (or after the verified edits), SERIALIZABLE for
/// every program otherwise.
fn isolation_json(w: &Workload, r: &CheckResult) -> Value {
    let level = |robust: bool| {
        if robust {
            "READ COMMITTED"
        } else {
            "SERIALIZABLE"
        }
    };
    let per = |robust: bool| -> serde_json::Map<String, Value> {
        w.programs
            .iter()
            .map(|p| (p.name.clone(), json!(level(robust))))
            .collect()
    };
    let fixed = matches!(r.suggestion, Some(Suggestion::Promote(_)));
    json!({
        "as_is": per(r.analysis.robust),
        "with_suggested_edits": if r.analysis.robust { Value::Null } else if fixed { json!(per(true)) } else { Value::Null },
    })
}

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
pub fn sarif(w: &Workload, r: &CheckResult, workload_path: &str) -> Value {
    let a = &r.analysis;
    let rule_id = match a.method {
        Method::TypeII => "mvrc-type2-cycle",
        Method::TypeI => "mvrc-type1-cycle",
    };
    let mut results = vec![];
    for wit in &a.witnesses {
        let st = steps(w, &a.graph, wit);
        let primary = st.iter().find(|s| s.counterflow).unwrap_or(&st[0]);
        let (file, line) = split_origin(&primary.from_origin, workload_path);
        let mut message = format!(
            "Not robust against READ COMMITTED: dangerous cycle through {}. ",
            programs_of(&st).join(", ")
        );
        message.push_str(&st.iter().map(edge_line).collect::<Vec<_>>().join(" ; "));
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
        results.push(json!({
            "ruleId": rule_id,
            "level": "error",
            "message": {"text": message},
            "locations": [sarif_location(&file, line, &format!("{} {} starts a counterflow dependency", primary.from_program, primary.from_stmt))],
            "relatedLocations": related,
        }));
    }
    if let Some(Suggestion::Promote(set)) = &r.suggestion {
        for e in edits(w, set) {
            let file = e["file"].as_str().unwrap_or(workload_path).to_string();
            let line = e["line"].as_u64().map(|l| l as usize);
            results.push(json!({
                "ruleId": "mvrc-fix-for-update",
                "level": "note",
                "message": {"text": format!("Verified fix: {}", edit_line(&e))},
                "locations": [sarif_location(&file, line, "add FOR UPDATE")],
            }));
        }
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
                    {"id": "mvrc-fix-for-update", "help": {"text": "See docs/rules.md#mvrc-fix-for-update in isolint: what the finding means and how to fix it."}, "shortDescription": {"text": "Promoting these key-based reads to SELECT ... FOR UPDATE makes the workload robust (re-verified)"}},
                ],
            }},
            "results": results,
        }],
    })
}

fn split_origin(origin: &Option<String>, fallback: &str) -> (String, Option<usize>) {
    match origin.as_deref().and_then(|o| o.rsplit_once(':')) {
        Some((f, l)) => (f.to_string(), l.parse().ok()),
        None => (fallback.to_string(), None),
    }
}

/// GitHub Actions workflow commands: one `::error` per witness at the
/// statement that starts its counterflow dependency, `::notice` per fix.
pub fn github(w: &Workload, r: &CheckResult, workload_path: &str) -> String {
    let a = &r.analysis;
    let esc = |s: &str| {
        s.replace('%', "%25")
            .replace('\r', "%0D")
            .replace('\n', "%0A")
    };
    let mut o = String::new();
    for wit in &a.witnesses {
        let st = steps(w, &a.graph, wit);
        let primary = st.iter().find(|s| s.counterflow).unwrap_or(&st[0]);
        let (file, line) = split_origin(&primary.from_origin, workload_path);
        let line = line.map(|l| format!(",line={l}")).unwrap_or_default();
        let body: Vec<String> = st.iter().map(edge_line).collect();
        o.push_str(&format!(
            "::error file={file}{line},title=isolint%3A not robust against READ COMMITTED::{}\n",
            esc(&format!(
                "Dangerous cycle through {}:\n{}",
                programs_of(&st).join(", "),
                body.join("\n")
            ))
        ));
    }
    if let Some(Suggestion::Promote(set)) = &r.suggestion {
        for e in edits(w, set) {
            let file = e["file"].as_str().unwrap_or(workload_path);
            let line = e["line"]
                .as_u64()
                .map(|l| format!(",line={l}"))
                .unwrap_or_default();
            o.push_str(&format!(
                "::notice file={file}{line},title=isolint fix::{}\n",
                esc(&edit_line(&e))
            ));
        }
    }
    if a.robust {
        o.push_str(&format!(
            "isolint: {} is robust against READ COMMITTED\n",
            w.name
        ));
    }
    o
}
