//! Output for people and scripts: comfy-table text, JSON, Graphviz DOT.
//! Turns analysis results into text; computes nothing about robustness.

use std::collections::BTreeMap;

use comfy_table::{presets::UTF8_FULL_CONDENSED, ContentArrangement, Table};
use petgraph::dot::{Config, Dot};
use petgraph::graph::DiGraph;
use serde_json::{json, Value};

use crate::analysis::graph::{Edge, Granularity, Settings, SummaryGraph};
use crate::analysis::robustness::{Method, Witness};
use crate::analysis::subsets::Subsets;
use crate::analysis::Analysis;
use crate::model::btp::{Body, Program, Statement, StmtType, Workload};
use crate::model::error::Warning;
use crate::model::schema::AttrSet;

pub fn new_table(header: Vec<&str>) -> Table {
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_header(header);
    t
}

fn set_text(w: &Workload, s: &Statement, set: &Option<AttrSet>) -> String {
    match set {
        None => "⊥".into(),
        Some(set) => format!("{{{}}}", w.schema.rel(s.rel).names(set).join(", ")),
    }
}

/// The control structure in the paper's notation: `q3; q4; (q5 | ε); q6`.
pub fn body_text(p: &Program, b: &Body) -> String {
    match b {
        Body::Stmt(i) => p.statements[*i].id.clone(),
        Body::Seq(v) if v.is_empty() => "ε".into(),
        Body::Seq(v) => v
            .iter()
            .map(|b| body_text(p, b))
            .collect::<Vec<_>>()
            .join("; "),
        Body::Branch(v) => format!(
            "({})",
            v.iter()
                .map(|b| body_text(p, b))
                .collect::<Vec<_>>()
                .join(" | ")
        ),
        Body::Opt(b) => format!("({} | ε)", body_text(p, b)),
        Body::Loop(b) => format!("loop({})", body_text(p, b)),
    }
}

fn origin_text(s: &Statement) -> String {
    s.origin
        .as_ref()
        .map(|o| format!("{}:{}", o.file, o.line))
        .unwrap_or_default()
}

/// Figure 2: the BTP of every program, with control structure and
/// constraints.
pub fn btp_text(w: &Workload) -> String {
    let mut out = String::new();
    for p in &w.programs {
        let title = match &p.abbrev {
            Some(a) => format!("{} ({a})", p.name),
            None => p.name.clone(),
        };
        out.push_str(&format!("{title}\n"));
        let with_source = p.statements.iter().any(|s| s.origin.is_some());
        let mut header = vec![
            "q",
            "type(q)",
            "rel(q)",
            "PReadSet(q)",
            "ReadSet(q)",
            "WriteSet(q)",
        ];
        if with_source {
            header.push("source");
        }
        let mut t = new_table(header);
        for s in &p.statements {
            let ty = if s.locking {
                format!("{} (locking)", s.ty)
            } else {
                s.ty.to_string()
            };
            let mut row = vec![
                s.id.clone(),
                ty,
                w.schema.rel(s.rel).name.clone(),
                set_text(w, s, &s.pread),
                set_text(w, s, &s.read),
                set_text(w, s, &s.write),
            ];
            if with_source {
                row.push(origin_text(s));
            }
            t.add_row(row);
        }
        out.push_str(&format!("{t}\n"));
        out.push_str(&format!("  program: {}\n", body_text(p, &p.body)));
        if !p.constraints.is_empty() {
            let cs: Vec<String> = p
                .constraints
                .iter()
                .map(|c| w.constraint_text(p, c))
                .collect();
            out.push_str(&format!("  constraints: {}\n", cs.join(", ")));
        }
        out.push('\n');
    }
    out
}

/// What kinds of dependency an edge stands for (display only), from the
/// statements' sets after the granularity setting.
pub fn dependency_kinds(
    w: &Workload,
    a: &Statement,
    b: &Statement,
    counterflow: bool,
    s: Settings,
) -> Vec<&'static str> {
    let arity = w.schema.rel(a.rel).arity();
    let widen = |x: &Option<AttrSet>| match s.granularity {
        Granularity::Attribute => x.clone(),
        Granularity::Tuple => x.as_ref().map(|_| AttrSet::full(arity)),
    };
    let (ap, ar, aw) = (widen(&a.pread), widen(&a.read), widen(&a.write));
    let (bp, br, bw) = (widen(&b.pread), widen(&b.read), widen(&b.write));
    let meets = crate::model::schema::meets;
    let insdel = |t: StmtType| matches!(t, StmtType::Ins | StmtType::KeyDel | StmtType::PredDel);
    let mut kinds = vec![];
    if !counterflow && meets(&aw, &bw) {
        kinds.push("ww");
    }
    if !counterflow && meets(&aw, &br) {
        kinds.push("wr");
    }
    if !counterflow && bp.is_some() && aw.is_some() && (insdel(a.ty) || meets(&aw, &bp)) {
        kinds.push("predicate wr");
    }
    if meets(&ar, &bw) {
        kinds.push("rw");
    }
    if ap.is_some() && bw.is_some() && (insdel(b.ty) || meets(&ap, &bw)) {
        kinds.push("predicate rw");
    }
    if kinds.is_empty() {
        kinds.push("dependency");
    }
    kinds
}

/// One edge of a witness, resolved to programs and statements.
pub struct Step {
    pub from: String,
    pub from_program: String,
    pub from_stmt: String,
    pub from_sql: Option<String>,
    pub from_origin: Option<String>,
    pub to: String,
    pub to_program: String,
    pub to_stmt: String,
    pub to_sql: Option<String>,
    pub to_origin: Option<String>,
    pub counterflow: bool,
    pub kinds: Vec<&'static str>,
}

pub fn steps(w: &Workload, g: &SummaryGraph, wit: &Witness) -> Vec<Step> {
    wit.edges
        .iter()
        .map(|e| {
            let (a, b) = (&g.nodes[e.from as usize], &g.nodes[e.to as usize]);
            let (sa, sb) = (
                a.ltp.statement(w, e.from_pos as usize),
                b.ltp.statement(w, e.to_pos as usize),
            );
            Step {
                from: a.name.clone(),
                from_program: w.programs[a.ltp.program].name.clone(),
                from_stmt: a.ltp.occurrence_label(w, e.from_pos as usize),
                from_sql: sa.sql.clone(),
                from_origin: sa.origin.as_ref().map(|o| format!("{}:{}", o.file, o.line)),
                to: b.name.clone(),
                to_program: w.programs[b.ltp.program].name.clone(),
                to_stmt: b.ltp.occurrence_label(w, e.to_pos as usize),
                to_sql: sb.sql.clone(),
                to_origin: sb.origin.as_ref().map(|o| format!("{}:{}", o.file, o.line)),
                counterflow: e.counterflow,
                kinds: dependency_kinds(w, sa, sb, e.counterflow, g.settings),
            }
        })
        .collect()
}

fn short_sql(sql: &Option<String>) -> String {
    match sql {
        Some(s) if s.chars().count() > 60 => format!("{}…", s.chars().take(59).collect::<String>()),
        Some(s) => s.clone(),
        None => String::new(),
    }
}

pub fn witness_text(w: &Workload, g: &SummaryGraph, wit: &Witness) -> String {
    let mut t = new_table(vec![
        "#",
        "from",
        "statement",
        "dependency",
        "to",
        "statement",
    ]);
    for (i, s) in steps(w, g, wit).iter().enumerate() {
        let stmt = |id: &str, origin: &Option<String>, sql: &Option<String>| {
            let mut x = id.to_string();
            if let Some(o) = origin {
                x.push_str(&format!(" ({o})"));
            }
            let sql = short_sql(sql);
            if !sql.is_empty() {
                x.push_str(&format!("\n{sql}"));
            }
            x
        };
        let dep = format!(
            "{}{}",
            s.kinds.join(", "),
            if s.counterflow { "\ncounterflow" } else { "" }
        );
        t.add_row(vec![
            (i + 1).to_string(),
            s.from.clone(),
            stmt(&s.from_stmt, &s.from_origin, &s.from_sql),
            dep,
            s.to.clone(),
            stmt(&s.to_stmt, &s.to_origin, &s.to_sql),
        ]);
    }
    format!("{t}\n")
}

pub fn witness_json(w: &Workload, g: &SummaryGraph, wit: &Witness, method: Method) -> Value {
    let edges: Vec<Value> = steps(w, g, wit)
        .into_iter()
        .map(|s| {
            json!({
                "from": s.from, "from_program": s.from_program, "from_statement": s.from_stmt,
                "from_sql": s.from_sql, "from_origin": s.from_origin,
                "to": s.to, "to_program": s.to_program, "to_statement": s.to_stmt,
                "to_sql": s.to_sql, "to_origin": s.to_origin,
                "counterflow": s.counterflow, "dependencies": s.kinds,
            })
        })
        .collect();
    let pair = match method {
        Method::TypeII => json!([0, 1]),
        Method::TypeI => json!([0]),
    };
    json!({ "reason": wit.reason.describe(), "distinguished_edges": pair, "edges": edges })
}

pub fn settings_json(s: Settings) -> Value {
    json!({
        "granularity": match s.granularity { Granularity::Attribute => "attribute", Granularity::Tuple => "tuple" },
        "foreign_keys": s.foreign_keys,
        "same_tuple": s.same_tuple,
        "label": s.label(),
    })
}

pub fn method_key(m: Method) -> &'static str {
    match m {
        Method::TypeII => "type2",
        Method::TypeI => "type1",
    }
}

/// Program names of each subset, sorted within the subset and overall.
pub fn subset_names(w: &Workload, subsets: &[Vec<usize>], short: bool) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = subsets
        .iter()
        .map(|s| {
            let mut names: Vec<String> = s
                .iter()
                .map(|&p| {
                    if short {
                        w.programs[p].short().to_string()
                    } else {
                        w.programs[p].name.clone()
                    }
                })
                .collect();
            names.sort();
            names
        })
        .collect();
    out.sort();
    out
}

pub fn subsets_inline(w: &Workload, subsets: &Subsets) -> String {
    let mut text = subset_names(w, &subsets.sets, true)
        .iter()
        .map(|s| format!("{{{}}}", s.join(", ")))
        .collect::<Vec<_>>()
        .join(", ");
    if !subsets.complete {
        text.push_str(&format!(
            ", … (search stopped after {} sets; there are more)",
            subsets.sets.len()
        ));
    }
    text
}

pub fn warnings_json(ws: &[Warning]) -> Value {
    Value::Array(
        ws.iter()
            .map(|x| json!({"file": x.file, "line": x.line, "message": x.message}))
            .collect(),
    )
}

pub fn analysis_json(w: &Workload, a: &Analysis, warnings: &[Warning]) -> Value {
    let mut v = json!({
        "workload": w.name,
        "settings": settings_json(a.settings),
        "method": method_key(a.method),
        "robust": a.robust,
        "summary_graph": {
            "nodes": a.graph.nodes.len(),
            "edges": a.graph.edges.len(),
            "counterflow_edges": a.graph.counterflow_edges(),
        },
        "witness": a.witnesses.first().map(|x| witness_json(w, &a.graph, x, a.method)),
        "witnesses": a.witnesses.iter().map(|x| witness_json(w, &a.graph, x, a.method)).collect::<Vec<_>>(),
        "warnings": warnings_json(warnings),
    });
    if let Some(s) = &a.subsets {
        v["maximal_robust_subsets"] = json!(subset_names(w, &s.sets, false));
        v["maximal_robust_subsets_complete"] = json!(s.complete);
    }
    v
}

pub fn analysis_text(w: &Workload, a: &Analysis) -> String {
    let mut o = String::new();
    let g = &a.graph;
    o.push_str(&format!(
        "workload: {} ({} programs)\nsettings: {}{}; method: {}\nsummary graph: {} nodes, {} edges ({} counterflow)\n\n",
        w.name,
        w.programs.len(),
        a.settings.label(),
        if a.settings.same_tuple { ", same-tuple constraints" } else { "" },
        a.method.label(),
        g.nodes.len(),
        g.edges.len(),
        g.counterflow_edges()
    ));
    if a.robust {
        o.push_str("ROBUST against MVRC: every schedule these programs can produce under READ COMMITTED is serializable.\n");
    } else {
        o.push_str("NOT ROBUST against MVRC: the summary graph has a dangerous cycle, so READ COMMITTED may produce non-serializable schedules.\n");
        for (i, wit) in a.witnesses.iter().enumerate() {
            let programs: std::collections::BTreeSet<String> = wit
                .edges
                .iter()
                .map(|e| {
                    w.programs[g.nodes[e.from as usize].ltp.program]
                        .name
                        .clone()
                })
                .collect();
            o.push_str(&format!(
                "\nwitness {} ({}; programs: {}):\n",
                i + 1,
                wit.reason.describe(),
                programs.into_iter().collect::<Vec<_>>().join(", ")
            ));
            o.push_str(&witness_text(w, g, wit));
            if a.method == Method::TypeII {
                o.push_str("edges 1 and 2 are the adjacent pair that makes the cycle type-II.\n");
            }
        }
    }
    if let Some(s) = &a.subsets {
        o.push_str(&format!(
            "\nmaximal robust subsets: {}\n",
            subsets_inline(w, s)
        ));
    }
    o
}

/// Figure 6/7 table: one row per setting, one column per method.
pub fn subsets_table(w: &Workload, rows: &[(String, Vec<Subsets>)], methods: &[Method]) -> String {
    let mut header = vec!["setting"];
    for m in methods {
        header.push(match m {
            Method::TypeII => "Alg 2 (type-II)",
            Method::TypeI => "method of [3] (type-I)",
        });
    }
    let mut t = new_table(header);
    for (label, per_method) in rows {
        let mut row = vec![label.clone()];
        row.extend(per_method.iter().map(|s| subsets_inline(w, s)));
        t.add_row(row);
    }
    format!("{}: maximal robust subsets\n{t}\n", w.name)
}

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

pub fn graph_dot(w: &Workload, g: &SummaryGraph) -> String {
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

pub fn graph_json(w: &Workload, g: &SummaryGraph) -> Value {
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
        "settings": settings_json(g.settings),
        "nodes": nodes,
        "edges": edges,
        "counts": {"nodes": g.nodes.len(), "edges": g.edges.len(), "counterflow_edges": g.counterflow_edges()},
    })
}

pub mod check;
pub mod markdown;
pub mod yaml;
