//! Rendering: turns [`Findings`](crate::analysis::Findings), graphs and
//! workloads into text for people (`text`, `markdown`), for scripts
//! (`json`, `yaml`) and for CI (`sarif`, `github`), and the summary graph
//! into Graphviz (`dot`). Computes nothing: every number, cycle and
//! subset comes from `analysis`; this stage picks words and layout.
//!
//! Must not: call into `analysis` beyond reading its result types, read
//! or write files, print.

use comfy_table::{presets::UTF8_FULL_CONDENSED, ContentArrangement, Table};

use crate::analysis::findings::{Edit, Step};
use crate::analysis::robustness::{Method, Reason};
use crate::analysis::subsets::Subsets;
use crate::model::btp::{Body, Origin, Program, Workload};

pub use rules::RuleId;

/// What every "robust" rests on besides the SQL itself: the paper's model
/// of READ COMMITTED (Section 5.4), in particular that a key-based
/// statement finds its row or its transaction aborts. The front-end lowers
/// a read whose missing row the program handles as predicate-based, so
/// the assumption is only relied on where the program does not go on
/// without the row.
/// The words for what a check verdict is against when the levels are the
/// team's own.
pub const DEPLOYED: &str = "the deployed isolation levels";

/// What `a`'s verdict is against, in words (SARIF, GitHub).
pub fn against(a: &crate::analysis::findings::Findings) -> String {
    match a.against() {
        crate::analysis::findings::Against::Deployed => DEPLOYED.to_string(),
        crate::analysis::findings::Against::ReadCommitted => {
            crate::model::isolation::Level::ReadCommitted.to_string()
        }
    }
}

pub const ASSUMPTION: &str = "assumes, as the paper's Section 5.4, that each statement reads the last committed versions at its start, that writes wait for uncommitted writes of the same row, and that a key-based statement finds its row or its transaction aborts (reads whose missing row the program handles are analysed as predicate reads)";

/// Per dangerous cycle, what `check --postgres-temp`/`--postgres URL`
/// found on PostgreSQL (issue 23, item 6), in words and as data; built
/// from the replay stage's answer by `replay::on_postgres`, rendered
/// beside the cycle by `text`, `json`, `sarif` and `github`. Plain data,
/// so those renderers need no PostgreSQL client.
#[derive(Debug, Clone)]
pub struct OnPostgres {
    /// `reproduced`, `not_reproduced` or `not_replayed`.
    pub status: &'static str,
    /// The sentence beside the cycle: `reproduced on PostgreSQL 15.8 …`.
    pub line: String,
    /// What ran (calls, seed rows, trace, serial runs, notes), for text.
    pub details: Vec<String>,
    /// The witness's `postgres` key (docs/json.md).
    pub json: serde_json::Value,
}

pub mod dot;
pub mod github;
#[cfg(feature = "postgres")]
pub mod invariants;
pub mod json;
pub mod markdown;
#[cfg(feature = "postgres")]
pub mod replay;
pub mod rules;
pub mod sarif;
pub mod schedule;
pub mod text;
pub mod yaml;

pub fn new_table(header: Vec<&str>) -> Table {
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_header(header);
    t
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

pub fn stmt_text(
    program: &str,
    stmt: &str,
    origin: &Option<Origin>,
    sql: &Option<String>,
) -> String {
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

pub fn programs_of(steps: &[Step]) -> Vec<String> {
    let mut v: Vec<String> = steps.iter().map(|s| s.from_program.clone()).collect();
    v.sort();
    v.dedup();
    v
}

/// The test a verdict comes from, in words (text, Markdown).
pub fn method_label(m: Method) -> &'static str {
    match m {
        Method::TypeII => "type-II (Algorithm 2)",
        Method::TypeI => "type-I (Alomari & Fekete)",
        Method::Snapshot => "snapshot isolation (docs/allocation.md)",
    }
}

/// Why a witness's distinguished pair makes it dangerous, in words
/// (Theorem 6.4's conditions; text, JSON, Markdown).
pub fn reason_text(r: Reason) -> &'static str {
    match r {
        Reason::AdjacentCounterflow => "two adjacent counterflow edges",
        Reason::OutgoingBeforeIncoming => {
            "ordered-counterflow pair: the counterflow edge leaves from a statement that precedes the one the incoming edge enters"
        }
        Reason::IncomingFromRead => {
            "ordered-counterflow pair: the incoming edge comes from a read (key sel, pred sel, pred upd or pred del)"
        }
        Reason::Counterflow => "cycle with a counterflow edge",
    }
}

pub fn method_key(m: Method) -> &'static str {
    match m {
        Method::TypeII => "type2",
        Method::TypeI => "type1",
        Method::Snapshot => "snapshot",
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

/// File and line to annotate: the origin's, else the workload's path.
pub fn locate(origin: Option<&Origin>, fallback: &str) -> (String, Option<usize>) {
    match origin {
        Some(o) => (o.file.clone(), Some(o.line)),
        None => (fallback.to_string(), None),
    }
}

/// `file:line` of an edit, or `Program statement` without a source file.
pub fn edit_location(e: &Edit) -> String {
    match (&e.file, e.line) {
        (Some(f), Some(l)) => format!("{f}:{l}"),
        _ => format!("{} {}", e.program, e.statement),
    }
}

/// `file:line: add FOR UPDATE   (SELECT …)`
pub fn edit_line(e: &Edit) -> String {
    let sql = e
        .sql
        .as_ref()
        .map(|s| format!("   ({s})"))
        .unwrap_or_default();
    format!("{}: add FOR UPDATE{sql}", edit_location(e))
}

/// Why a program sits at its level in the lowest allocation, in words
/// (docs/allocation.md).
pub fn raise_reason(w: &Workload, r: &crate::analysis::findings::Raised) -> String {
    use crate::analysis::allocation::Cause;
    use crate::model::isolation::Level;
    let pair = match r.reason {
        Reason::OutgoingBeforeIncoming => "counterflow edge leaves before the incoming edge enters",
        Reason::AdjacentCounterflow => "two adjacent counterflow rw edges",
        _ => "rw edge in, counterflow rw edge out",
    };
    match (&r.cause, r.level) {
        (Cause::Pivot, Level::RepeatableRead) => {
            format!("dangerous under READ COMMITTED ({pair}); a snapshot prevents it")
        }
        (Cause::Pivot, _) => {
            format!("pivot of a dangerous structure under REPEATABLE READ ({pair})")
        }
        (Cause::Neighbour { pivot }, _) => format!(
            "on {}'s dangerous structure: SSI detects it only if all its transactions are SERIALIZABLE",
            w.programs[*pivot].name
        ),
    }
}

/// Where the first statement of `program` on a raised program's cycle
/// (`Isolation::cycle`) is.
pub fn raise_location(cycle: &[crate::analysis::findings::Step], program: &str) -> Option<Origin> {
    cycle
        .iter()
        .find(|s| s.from_program == program)
        .and_then(|s| s.from_origin.clone())
        .or_else(|| {
            cycle
                .iter()
                .find(|s| s.to_program == program)
                .and_then(|s| s.to_origin.clone())
        })
}

/// A program whose deployed level is below its lowest robust level, for
/// the CI annotations: where to point and what to say.
pub struct RaiseSite {
    pub file: String,
    pub line: Option<usize>,
    pub message: String,
}

/// One [`RaiseSite`] per program `check` says to raise: at the program's
/// own `SET TRANSACTION` line when it declares one, else at its first
/// statement on the cycle that forces the level, else its file.
pub fn raise_sites(
    w: &Workload,
    a: &crate::analysis::findings::Findings,
    workload_path: &str,
) -> Vec<RaiseSite> {
    use crate::model::isolation::LevelSource;
    let Some(d) = &a.isolation.deployed else {
        return vec![];
    };
    d.raise
        .iter()
        .map(|&(p, level)| {
            let prog = &w.programs[p];
            let raised = a.isolation.raised.iter().find(|r| r.program == p);
            let (file, line) = match &d.deployed.sources[p] {
                LevelSource::Declared { file, line } => (file.clone(), Some(*line)),
                _ => {
                    let origin = raised.and_then(|r| {
                        raise_location(a.isolation.cycle(w, &a.graph, r), &prog.name)
                    });
                    match origin {
                        Some(o) => locate(Some(&o), workload_path),
                        None => (
                            prog.file
                                .clone()
                                .unwrap_or_else(|| workload_path.to_string()),
                            None,
                        ),
                    }
                }
            };
            let why = raised
                .map(|r| format!(": {}", raise_reason(w, r)))
                .unwrap_or_default();
            RaiseSite {
                file,
                line,
                message: format!(
                    "{} runs {} but needs at least {level}{why}",
                    prog.name,
                    d.deployed.allocation.level(p)
                ),
            }
        })
        .collect()
}
