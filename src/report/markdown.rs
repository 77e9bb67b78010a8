//! `isolint report`: a Markdown report people read — verdict, Table 2
//! statistics, the Figure 6/7 table over the four settings, witnesses,
//! the fix suggestion, and a link to the summary graph (the CLI writes
//! it as SVG with Graphviz `dot`, or as a DOT file without Graphviz).

use super::{edge_line, edit_location, subsets_inline};
use crate::analysis::findings::Findings;
use crate::analysis::promote::Suggestion;
use crate::model::btp::Workload;
use crate::model::isolation::Level;

/// The report, linking the summary graph as `graph_name` (the CLI writes
/// both files).
pub fn render(w: &Workload, a: &Findings, graph_name: &str) -> String {
    let mut m = format!("# isolint report: {}\n\n", w.name);
    if let Some(d) = &w.description {
        m.push_str(&format!("{d}\n\n"));
    }
    m.push_str(&format!(
        "**Verdict: {}** against multiversion {} ({}, {}).\n\n",
        if a.robust { "robust" } else { "not robust" },
        Level::ReadCommitted,
        super::method_label(a.method),
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
        a.edge_count(),
        a.counterflow_count()
    ));
    m.push_str("## Maximal robust subsets (Figures 6 and 7)\n\n| setting | Algorithm 2 (type-II) | method of [3] (type-I) |\n|---|---|---|\n");
    for (s, per) in a.table.iter().flat_map(|t| &t.rows) {
        let cell = |i: usize| per.get(i).map(|x| subsets_inline(w, x)).unwrap_or_default();
        m.push_str(&format!("| {} | {} | {} |\n", s.label(), cell(0), cell(1)));
    }
    m.push('\n');
    if !a.robust {
        m.push_str("## Dangerous cycles\n\nOne witness per strongly connected component of the summary graph; edges 1 and 2 are the adjacent pair that makes the cycle dangerous.\n\n");
        for (i, (wit, steps)) in a.witnesses.iter().zip(&a.cycles).enumerate() {
            m.push_str(&format!(
                "### Cycle {} ({})\n\n",
                i + 1,
                super::reason_text(wit.reason)
            ));
            for (k, s) in steps.iter().enumerate() {
                m.push_str(&format!(
                    "{}. `{}`\n",
                    k + 1,
                    edge_line(s).replace('`', "'")
                ));
            }
            m.push('\n');
            if let Some(c) = a.confirmations.get(i) {
                m.push_str(&format!(
                    "```\n{}\n```\n\n",
                    super::schedule::confirmation(w, c).join("\n")
                ));
            }
        }
        m.push_str("## Suggested fix\n\n");
        match &a.suggestion {
            Some(Suggestion::Promote(_) | Suggestion::Minimal { .. }) => {
                m.push_str("Promoting these key-based reads to `SELECT … FOR UPDATE` makes the workload robust (re-verified by a fresh analysis of the promoted workload):\n\n");
                if let Some(Suggestion::Minimal { none_up_to, .. }) = &a.suggestion {
                    m.push_str(&format!("Leaving out any one of them is not robust; no fix of at most {none_up_to} reads exists, and larger sets were not all searched, so a smaller fix than this one may exist.\n\n"));
                }
                for e in &a.edits {
                    m.push_str(&format!(
                        "- `{}`: add `FOR UPDATE` to `{}`\n",
                        edit_location(e),
                        e.sql.as_deref().unwrap_or("")
                    ));
                }
            }
            _ => {
                m.push_str(match &a.suggestion {
                    Some(Suggestion::NotFound { .. }) => "No set of key-based reads promoted to `FOR UPDATE` was found to make the workload robust: with every candidate promoted, the re-analysed workload still is not.\n",
                    _ => "No set of key-based reads promoted to `FOR UPDATE` makes the workload robust: a dangerous cycle remains even with every candidate promoted.\n",
                });
                if let Some(s) = &a.subsets {
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
    m
}
