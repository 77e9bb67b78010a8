//! `isolint report`: a Markdown report people read — verdict, Table 2
//! statistics, the Figure 6/7 table over the four settings, witnesses,
//! the fix suggestion, and the summary graph as SVG (Graphviz `dot`) or,
//! without Graphviz, as a DOT file.

use std::path::Path;
use std::process::{Command, Stdio};

use super::check::{edge_line, edit_location, edits};
use super::{graph_dot, steps, subsets_inline};
use crate::analysis::check::CheckResult;
use crate::analysis::graph::{build, Settings};
use crate::analysis::promote::Suggestion;
use crate::analysis::robustness::Method;
use crate::analysis::subsets::maximal_robust_subsets;
use crate::cli::write_text;
use crate::model::btp::Workload;
use crate::model::error::Result;

/// Render `graph.dot` text to SVG with Graphviz, if installed.
fn render_svg(dot: &str) -> Option<String> {
    let mut child = Command::new("dot")
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    {
        use std::io::Write;
        child.stdin.take()?.write_all(dot.as_bytes()).ok()?;
    }
    let out = child.wait_with_output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Writes the report to `out` and the graph next to it; returns the
/// graph file's name.
pub fn write(w: &Workload, r: &CheckResult, out: &Path) -> Result<String> {
    let a = &r.analysis;
    let stem = out.file_stem().and_then(|s| s.to_str()).unwrap_or("report");
    let dir = out.parent().unwrap_or(Path::new(""));
    let dot = graph_dot(w, &a.graph);
    let (graph_name, graph_text) = match render_svg(&dot) {
        Some(svg) => (format!("{stem}-graph.svg"), svg),
        None => (format!("{stem}-graph.dot"), dot),
    };
    write_text(&dir.join(&graph_name), &graph_text)?;

    let mut m = format!("# isolint report: {}\n\n", w.name);
    if let Some(d) = &w.description {
        m.push_str(&format!("{d}\n\n"));
    }
    m.push_str(&format!(
        "**Verdict: {}** against multiversion READ COMMITTED ({}, {}).\n\n",
        if a.robust { "robust" } else { "not robust" },
        a.method.label(),
        a.settings.label()
    ));
    let rels = &w.schema.relations;
    let (amin, amax) = rels
        .iter()
        .map(|r| r.arity())
        .fold((usize::MAX, 0), |(lo, hi), n| (lo.min(n), hi.max(n)));
    let attrs = if amin == amax {
        amin.to_string()
    } else {
        format!("{amin}–{amax}")
    };
    m.push_str("## Benchmark characteristics (Table 2)\n\n| relations | attributes per relation | transaction programs | nodes / unfolded programs | edges (counterflow) |\n|---|---|---|---|---|\n");
    m.push_str(&format!(
        "| {} | {} | {} | {} | {} ({}) |\n\n",
        rels.len(),
        attrs,
        w.programs.len(),
        a.graph.nodes.len(),
        a.graph.edges.len(),
        a.graph.counterflow_edges()
    ));
    m.push_str("## Maximal robust subsets (Figures 6 and 7)\n\n| setting | Algorithm 2 (type-II) | method of [3] (type-I) |\n|---|---|---|\n");
    for s in Settings::paper_rows(a.settings.same_tuple) {
        let g = build(w, s);
        let t2 = maximal_robust_subsets(&g, Method::TypeII, false);
        let t1 = maximal_robust_subsets(&g, Method::TypeI, false);
        m.push_str(&format!(
            "| {} | {} | {} |\n",
            s.label(),
            subsets_inline(w, &t2),
            subsets_inline(w, &t1)
        ));
    }
    m.push('\n');
    if !a.robust {
        m.push_str("## Dangerous cycles\n\nOne witness per strongly connected component of the summary graph; edges 1 and 2 are the adjacent pair that makes the cycle dangerous.\n\n");
        for (i, wit) in a.witnesses.iter().enumerate() {
            m.push_str(&format!(
                "### Cycle {} ({})\n\n",
                i + 1,
                wit.reason.describe()
            ));
            for (k, s) in steps(w, &a.graph, wit).iter().enumerate() {
                m.push_str(&format!(
                    "{}. `{}`\n",
                    k + 1,
                    edge_line(s).replace('`', "'")
                ));
            }
            m.push('\n');
        }
        m.push_str("## Suggested fix\n\n");
        match &r.suggestion {
            Some(Suggestion::Promote(set)) => {
                m.push_str("Promoting these key-based reads to `SELECT … FOR UPDATE` makes the workload robust (re-verified by a fresh analysis of the promoted workload):\n\n");
                for e in edits(w, set) {
                    let loc = edit_location(&e);
                    m.push_str(&format!(
                        "- `{loc}`: add `FOR UPDATE` to `{}`\n",
                        e["sql"].as_str().unwrap_or("")
                    ));
                }
            }
            _ => {
                m.push_str(match &r.suggestion {
                    Some(Suggestion::NotFound { .. }) => "No set of at most 6 key-based reads promoted to `FOR UPDATE` was found to make the workload robust (the search stopped at its limits).\n",
                    _ => "No set of key-based reads promoted to `FOR UPDATE` makes the workload robust: a dangerous cycle remains even with every candidate promoted.\n",
                });
                if let Some(s) = &r.subsets {
                    m.push_str(&format!(
                        "\nMaximal robust subsets in this setting: {}\n",
                        subsets_inline(w, s)
                    ));
                }
            }
        }
        m.push('\n');
    }
    m.push_str(&format!(
        "## Summary graph\n\nDashed red edges are counterflow (Figure 4).\n\n![summary graph]({graph_name})\n"
    ));
    write_text(out, &m)?;
    Ok(graph_name)
}
