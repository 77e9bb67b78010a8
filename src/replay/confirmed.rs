//! `isolint check --postgres-temp` / `--postgres URL` (issue 23, item 6):
//! which of `check`'s dangerous cycles are replayed on PostgreSQL, and
//! each one's answer. A cycle is replayed only when the explorer
//! confirmed it with a schedule; the schedule runs through
//! [`witness::replay`] exactly as `isolint replay` runs it. Nothing here
//! decides robustness: the verdict and the exit code stay the static
//! test's. When the values the replay derives give a serial outcome, a
//! small search tries the same interleaving with other values
//! ([`MAX_VARIANTS`] at most), each try a full replay with its own serial
//! runs.

use super::server::Server;
use super::value::Val;
use super::witness::{self, Plan, Verdict, WitnessReplay};
use crate::analysis::explorer::{Confirmation, Schedule};
use crate::analysis::graph::SummaryGraph;
use crate::frontend::Sources;
use crate::model::btp::Workload;
use crate::model::isolation::Level;
use crate::model::provenance::Provenance;

/// What happened on PostgreSQL for one dangerous cycle.
#[derive(Debug, Clone)]
pub enum OnServer {
    /// The explorer's schedule ran; its verdict says whether the outcome
    /// differs from every serial order.
    Replayed(Box<WitnessReplay>),
    /// The replay could not run (the server refused the schema, a
    /// connection failed): not reproduced, and the message says why.
    Failed(String),
    /// Nothing was run, and why (no confirming schedule, mixed levels).
    NotReplayed(String),
}

/// Does any dangerous cycle have a schedule to replay? (No server is
/// started when none has.)
pub fn any_to_replay(confirmations: &[Confirmation]) -> bool {
    confirmations
        .iter()
        .any(|c| matches!(c, Confirmation::Confirmed(_)))
}

/// The one level a schedule's transactions run at, or `None` when they
/// run at different levels (a deployed mixed allocation): the replay
/// driver begins every transaction at one level.
pub fn schedule_level(s: &Schedule) -> Option<Level> {
    let first = s.transactions.first()?.level;
    s.transactions
        .iter()
        .all(|t| t.level == first)
        .then_some(first)
}

/// Replays the schedule of each confirmed cycle on `server` (one answer
/// per confirmation, in order; `None` when [`any_to_replay`] said no and
/// no server was started). A replay that fails is that cycle's answer,
/// not an error of the whole check: the static verdict stands whatever
/// the server does.
pub fn replay_confirmed(
    server: Option<&Server>,
    sources: &Sources,
    w: &Workload,
    prov: &Provenance,
    g: &SummaryGraph,
    confirmations: &[Confirmation],
) -> Vec<OnServer> {
    confirmations
        .iter()
        .map(|c| match c {
            Confirmation::Confirmed(s) => match (server, schedule_level(s)) {
                (None, _) => OnServer::NotReplayed("no PostgreSQL server to replay on".into()),
                (Some(server), Some(level)) => match replay_searching(server, sources, w, prov, g, s, level) {
                    Ok(r) => OnServer::Replayed(Box::new(r)),
                    Err(d) => OnServer::Failed(d.message.clone()),
                },
                (Some(_), None) => OnServer::NotReplayed(
                    "its transactions run at different isolation levels, and the replay runs every transaction of a schedule at one level".into(),
                ),
            },
            Confirmation::NotWithinBounds { .. } => OnServer::NotReplayed(
                "the explorer found no schedule to replay (not confirmed)".into(),
            ),
            Confirmation::NotChecked(_) => OnServer::NotReplayed(
                "the explorer did not search this cycle, so there is no schedule to replay".into(),
            ),
        })
        .collect()
}

/// At most this many other value choices are tried for one schedule.
pub const MAX_VARIANTS: usize = 24;

/// One value changed in a plan.
#[derive(Debug, Clone)]
enum Change {
    /// Transaction `txn`'s parameter `name` takes another transaction's
    /// value of the same parameter.
    Param { txn: usize, name: String, val: Val },
    /// Seed row `row`'s column `col` takes a value a predicate compares
    /// that column with.
    Cell { row: usize, col: String, val: Val },
}

impl Change {
    fn apply(&self, p: &mut Plan) {
        match self {
            Change::Param { txn, name, val } => {
                if let Some(t) = p.txns.get_mut(*txn) {
                    t.params.insert(name.clone(), val.clone());
                }
            }
            Change::Cell { row, col, val } => {
                if let Some(r) = p.seed.get_mut(*row) {
                    for (c, v) in r.values.iter_mut() {
                        if c == col {
                            *v = Val {
                                text: val.text.clone(),
                                oid: v.oid,
                            };
                        }
                    }
                }
            }
        }
    }

    fn describe(&self, p: &Plan) -> String {
        match self {
            Change::Param { txn, name, val } => format!(
                "T{} {name} = {val} (as another transaction's {name})",
                txn + 1
            ),
            Change::Cell { row, col, val } => format!(
                "seed row {} ({}) {col} = {val} (a value a predicate compares it with)",
                row + 1,
                p.seed.get(*row).map_or("?", |r| r.table.as_str())
            ),
        }
    }
}

/// The replay of `s`, and when the made-up values do not show the
/// anomaly, the same interleaving with other values (issue 23, item 2):
/// a parameter equal to another transaction's parameter of the same name,
/// a seed cell equal to (or one off) a literal a statement of the schedule
/// compares its column with (the manual's `DELETE … WHERE hits = 10`
/// needs rows with 10 and 9 hits). Each try is a full replay with its own
/// serial runs, so a "reproduced" is as sound as the first one; the first
/// try's answer stands when none reproduces.
#[allow(clippy::too_many_arguments)]
fn replay_searching(
    server: &Server,
    sources: &Sources,
    w: &Workload,
    prov: &Provenance,
    g: &SummaryGraph,
    s: &Schedule,
    level: Level,
) -> crate::model::error::Result<WitnessReplay> {
    let first = witness::replay(server, sources, w, prov, g, s, level)?;
    let Some(plan) = first.plan.clone() else {
        return Ok(first);
    };
    if first.verdict == Verdict::Reproduced || first.outcome.is_none() {
        return Ok(first);
    }
    let changes = candidates(&plan, w, s);
    let mut tries = vec![];
    for (i, a) in changes.iter().enumerate() {
        tries.push(vec![a.clone()]);
        for b in &changes[i + 1..] {
            if !conflicts(a, b) {
                tries.push(vec![a.clone(), b.clone()]);
            }
        }
    }
    // Single changes first, then pairs.
    tries.sort_by_key(Vec::len);
    tries.truncate(MAX_VARIANTS);
    for t in &tries {
        let r = witness::replay_adjusted(server, sources, w, prov, g, s, level, &|p| {
            for c in t {
                c.apply(p);
            }
        })?;
        if r.verdict == Verdict::Reproduced {
            let mut r = r;
            let what: Vec<String> = t.iter().map(|c| c.describe(&plan)).collect();
            r.notes.insert(
                0,
                format!(
                    "the values derived first gave the outcome of a serial order; reproduced with {}",
                    what.join(" and ")
                ),
            );
            return Ok(r);
        }
    }
    let mut first = first;
    if !tries.is_empty() {
        first.notes.push(format!(
            "{} other choice(s) of values for the same interleaving (shared parameters, predicate literals) did not reproduce it either",
            tries.len()
        ));
    }
    Ok(first)
}

/// Two changes of the same parameter or cell cannot both hold.
fn conflicts(a: &Change, b: &Change) -> bool {
    match (a, b) {
        (
            Change::Param { txn, name, .. },
            Change::Param {
                txn: t2, name: n2, ..
            },
        ) => txn == t2 && name == n2,
        (
            Change::Cell { row, col, .. },
            Change::Cell {
                row: r2, col: c2, ..
            },
        ) => row == r2 && col == c2,
        _ => false,
    }
}

/// The value changes worth trying for `plan` (see [`replay_searching`]).
fn candidates(plan: &Plan, w: &Workload, s: &Schedule) -> Vec<Change> {
    let mut out = vec![];
    for (t, tx) in plan.txns.iter().enumerate() {
        for (name, v) in &tx.params {
            for (u, other) in plan.txns.iter().enumerate() {
                match other.params.get(name) {
                    Some(x) if u != t && x.text != v.text && x.text.is_some() => {
                        out.push(Change::Param {
                            txn: t,
                            name: name.clone(),
                            val: x.clone(),
                        })
                    }
                    _ => {}
                }
            }
        }
    }
    let mut programs: Vec<usize> = s.transactions.iter().map(|t| t.program).collect();
    programs.sort_unstable();
    programs.dedup();
    let mut lits: Vec<(String, String)> = vec![];
    for p in programs {
        for st in &w.programs[p].statements {
            if let Some(sql) = &st.sql {
                for x in compared_literals(sql) {
                    if !lits.contains(&x) {
                        lits.push(x);
                    }
                }
            }
        }
    }
    for (row, r) in plan.seed.iter().enumerate() {
        for (col, v) in &r.values {
            for (c, lit) in &lits {
                if !c.eq_ignore_ascii_case(col) {
                    continue;
                }
                for text in near(lit) {
                    if v.text.as_deref() != Some(text.as_str()) {
                        out.push(Change::Cell {
                            row,
                            col: col.clone(),
                            val: Val::untyped(text),
                        });
                    }
                }
            }
        }
    }
    out
}

/// A literal and, for an integer, its neighbours (a predicate `= 10`
/// beside an increment needs a row at 9 too).
fn near(lit: &str) -> Vec<String> {
    match lit.parse::<i64>() {
        Ok(n) => vec![
            n.to_string(),
            n.saturating_sub(1).to_string(),
            n.saturating_add(1).to_string(),
        ],
        Err(_) => vec![lit.to_string()],
    }
}

/// `(column, literal)` for every comparison of a column with a constant
/// in `sql` (PostgreSQL's parse; `:name` parameters read as `$1`). Text
/// PostgreSQL does not parse gives nothing.
fn compared_literals(sql: &str) -> Vec<(String, String)> {
    use crate::frontend::sql::pg::{self, protobuf::a_const::Val as C, NodeEnum, NodeRef};
    let text = without_into(&positional(sql));
    let Ok(parsed) = pg::parse(&text) else {
        return vec![];
    };
    let column =
        |n: &Option<Box<pg::protobuf::Node>>| match n.as_ref().and_then(|n| n.node.as_ref()) {
            Some(NodeEnum::ColumnRef(c)) => match c.fields.last().and_then(|f| f.node.as_ref()) {
                Some(NodeEnum::String(s)) => Some(s.sval.clone()),
                _ => None,
            },
            _ => None,
        };
    let constant =
        |n: &Option<Box<pg::protobuf::Node>>| match n.as_ref().and_then(|n| n.node.as_ref()) {
            Some(NodeEnum::AConst(c)) => match &c.val {
                Some(C::Ival(i)) => Some(i.ival.to_string()),
                Some(C::Fval(f)) => Some(f.fval.clone()),
                Some(C::Sval(s)) => Some(s.sval.clone()),
                _ => None,
            },
            _ => None,
        };
    let mut out = vec![];
    for (n, _, _) in parsed.tree.nodes() {
        if let NodeRef::AExpr(e) = n {
            // Comparisons only: `hits + 1` is no predicate.
            let op = match e.name.last().and_then(|x| x.node.as_ref()) {
                Some(NodeEnum::String(s)) => s.sval.as_str(),
                _ => "",
            };
            if !["=", "<>", "!=", "<", "<=", ">", ">="].contains(&op) {
                continue;
            }
            let pair = match (column(&e.lexpr), constant(&e.rexpr)) {
                (Some(c), Some(v)) => Some((c, v)),
                _ => column(&e.rexpr).zip(constant(&e.lexpr)),
            };
            if let Some(p) = pair {
                out.push(p);
            }
        }
    }
    out
}

/// `text` without `INTO [STRICT] $1, $1…` (the program's variables a
/// statement reads into, after [`positional`]): PostgreSQL's grammar has
/// no such target list.
fn without_into(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let Some(at) = lower.find("into ") else {
        return text.to_string();
    };
    let mut rest = lower[at + 5..].trim_start();
    rest = rest.strip_prefix("strict ").unwrap_or(rest).trim_start();
    if !rest.starts_with("$1") {
        return text.to_string();
    }
    while let Some(r) = rest.strip_prefix("$1") {
        rest = r.trim_start();
        match rest.strip_prefix(',') {
            Some(r) if r.trim_start().starts_with("$1") => rest = r.trim_start(),
            _ => break,
        }
    }
    let end = text.len() - rest.len();
    format!("{} {}", &text[..at], &text[end..])
}

/// `sql` with each `:name` parameter written `$1`, so PostgreSQL's
/// parser reads it (`::type` casts are left alone).
fn positional(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    let mut prev = ' ';
    while let Some(c) = chars.next() {
        let next_ident = chars
            .peek()
            .is_some_and(|n| n.is_ascii_alphabetic() || *n == '_');
        if c == ':' && prev != ':' && next_ident {
            out.push_str("$1");
            while chars
                .peek()
                .is_some_and(|n| n.is_ascii_alphanumeric() || *n == '_')
            {
                chars.next();
            }
            prev = '1';
            continue;
        }
        out.push(c);
        prev = c;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The comparisons PostgreSQL's parse shows, not arithmetic; `:name`
    /// parameters and `::` casts do not stop the parse.
    #[test]
    fn literals_of_comparisons_only() {
        assert_eq!(
            compared_literals("DELETE FROM website WHERE hits = 10"),
            vec![("hits".to_string(), "10".to_string())]
        );
        assert!(compared_literals("UPDATE website SET hits = hits + 1").is_empty());
        assert_eq!(
            compared_literals(
                "SELECT a FROM t WHERE id = :id AND 'open' = t.status AND x::int > 3"
            ),
            vec![("status".to_string(), "open".to_string())]
        );
        assert!(compared_literals("not sql at all").is_empty());
        // A statement reading into program variables.
        assert_eq!(
            compared_literals("SELECT seats INTO STRICT :s, :t FROM flight WHERE seats > 1000000"),
            vec![("seats".to_string(), "1000000".to_string())]
        );
    }

    #[test]
    fn named_parameters_read_as_positional() {
        assert_eq!(
            positional("WHERE a = :x AND b = c::int AND d = :y_2"),
            "WHERE a = $1 AND b = c::int AND d = $1"
        );
    }

    /// An integer literal with its neighbours: `= 10` beside `+ 1`.
    #[test]
    fn integers_with_neighbours() {
        assert_eq!(near("10"), vec!["10", "9", "11"]);
        assert_eq!(near("open"), vec!["open"]);
    }
}
