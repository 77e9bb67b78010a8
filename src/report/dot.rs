//! The summary graph as Graphviz DOT (Figure 4: counterflow edges
//! dashed), through petgraph's writer.

use std::collections::BTreeMap;

use petgraph::dot::{Config, Dot};
use petgraph::graph::DiGraph;

use crate::analysis::graph::{Edge, SummaryGraph};
use crate::model::btp::Workload;

/// Edges grouped per (P_i, P_j, counterflow), labelled with the statement
/// pairs, counterflow edges dashed (Figure 4).
fn grouped(w: &Workload, g: &SummaryGraph) -> BTreeMap<(u32, u32, bool), Vec<String>> {
    let mut groups: BTreeMap<(u32, u32, bool), Vec<String>> = BTreeMap::new();
    for e in &g.edges {
        let Edge {
            from,
            to,
            from_pos,
            to_pos,
            counterflow,
        } = *e;
        let label = format!(
            "{}→{}",
            g.nodes[from as usize]
                .ltp
                .occurrence_label(w, from_pos as usize),
            g.nodes[to as usize]
                .ltp
                .occurrence_label(w, to_pos as usize)
        );
        groups
            .entry((from, to, counterflow))
            .or_default()
            .push(label);
    }
    groups
}

/// `isolint graph` (and the Markdown report's picture).
pub fn graph(w: &Workload, g: &SummaryGraph) -> String {
    let mut pg: DiGraph<String, (String, bool)> = DiGraph::new();
    let idx: Vec<_> = g
        .nodes
        .iter()
        .map(|n| pg.add_node(n.name.clone()))
        .collect();
    for ((a, b, cf), labels) in grouped(w, g) {
        pg.add_edge(idx[a as usize], idx[b as usize], (labels.join("\\n"), cf));
    }
    let dot = Dot::with_attr_getters(
        &pg,
        &[Config::EdgeNoLabel, Config::NodeNoLabel],
        &|_, e| {
            let (label, cf) = e.weight();
            let style = if *cf { ", style=dashed, color=red" } else { "" };
            format!("label=\"{label}\"{style}")
        },
        &|_, (_, name)| format!("label=\"{}\", shape=box", name.replace('"', "\\\"")),
    );
    format!(
        "// {}: summary graph ({}); dashed = counterflow\n{dot:?}",
        w.name,
        g.settings.label()
    )
}
