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

use std::collections::HashSet;

use super::server::Server;
use super::value::Val;
use super::witness::{self, Plan, Verdict, WitnessReplay};
use crate::analysis::explorer::{Confirmation, Schedule};
use crate::analysis::graph::SummaryGraph;
use crate::frontend::sql::ast::Node;
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
pub const MAX_VARIANTS: usize = 32;

/// One value changed in a plan.
#[derive(Debug, Clone)]
enum Change {
    /// Transaction `txn`'s parameter `name` takes another transaction's
    /// value of the same parameter.
    Param { txn: usize, name: String, val: Val },
    /// Seed row `row`'s column `col` takes a value a predicate compares
    /// that column with.
    Cell { row: usize, col: String, val: Val },
    /// The parameters one statement compares with columns take seed row
    /// `row`'s values of those columns, in every transaction running it
    /// (`(txn, parameter, value)`): the statement meets that row.
    Row {
        row: usize,
        set: Vec<(usize, String, Val)>,
    },
}

impl Change {
    fn apply(&self, p: &mut Plan) {
        match self {
            Change::Param { txn, name, val } => {
                if let Some(t) = p.txns.get_mut(*txn) {
                    t.params.insert(name.clone(), val.clone());
                }
            }
            Change::Row { set, .. } => {
                for (txn, name, val) in set {
                    if let Some(t) = p.txns.get_mut(*txn) {
                        let oid = t.params.get(name).map_or(val.oid, |v| v.oid);
                        let val = Val {
                            text: val.text.clone(),
                            oid,
                        };
                        t.params.insert(name.clone(), val);
                    }
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
            Change::Row { row, set } => format!(
                "{} (seed row {} of {}, which the statement comparing them meets)",
                set.iter()
                    .map(|(t, n, v)| format!("T{} {n} = {v}", t + 1))
                    .collect::<Vec<_>>()
                    .join(", "),
                row + 1,
                p.seed.get(*row).map_or("?", |r| r.table.as_str())
            ),
        }
    }

    /// The (transaction, parameter) pairs or seed cells it sets.
    fn targets(&self) -> Vec<String> {
        match self {
            Change::Param { txn, name, .. } => vec![format!("{txn}:{name}")],
            Change::Row { set, .. } => set.iter().map(|(t, n, _)| format!("{t}:{n}")).collect(),
            Change::Cell { row, col, .. } => vec![format!("{row}.{col}")],
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
    let changes = candidates(&plan, w, s, sources);
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
    let tb = b.targets();
    a.targets().iter().any(|x| tb.contains(x))
}

/// The value changes worth trying for `plan` (see [`replay_searching`]).
fn candidates(plan: &Plan, w: &Workload, s: &Schedule, sources: &Sources) -> Vec<Change> {
    let mut programs: Vec<usize> = s.transactions.iter().map(|t| t.program).collect();
    programs.sort_unstable();
    programs.dedup();
    let names: HashSet<String> = plan
        .txns
        .iter()
        .flat_map(|t| t.params.keys().cloned())
        .collect();
    let mut lits: Vec<(String, String)> = vec![];
    let mut rows = vec![];
    // Parameters some statement compares with a column: the ones that
    // decide which rows a statement meets.
    let mut compared: HashSet<String> = HashSet::new();
    for p in programs {
        // A local the program copies a parameter into (`p_c_id :=
        // p_c_id_in`) stands for that parameter (issue 23, HammerDB).
        let copies = sources.programs.get(p).map(|a| copies_of(a, &names));
        let copies = copies.unwrap_or_default();
        let mut known = names.clone();
        known.extend(copies.iter().map(|(v, _)| v.clone()));
        for st in &w.programs[p].statements {
            let Some(sql) = &st.sql else { continue };
            let mut params = vec![];
            for (col, other) in comparisons(sql, &known) {
                let other = match other {
                    Other::Param(n) => Other::Param(
                        copies
                            .iter()
                            .find(|(v, _)| *v == n)
                            .map_or(n, |(_, p)| p.clone()),
                    ),
                    o => o,
                };
                match other {
                    Other::Lit(l) if !lits.contains(&(col.clone(), l.clone())) => {
                        lits.push((col, l))
                    }
                    Other::Param(n) => {
                        compared.insert(n.clone());
                        params.push((col, n));
                    }
                    Other::Lit(_) => {}
                }
            }
            rows.extend(row_changes(plan, s, p, &params));
        }
    }
    // First: a statement meets a seeded row, the statements pinning most
    // parameters first (a customer's warehouse, district and id).
    rows.sort_by_key(|c| match c {
        Change::Row { set, .. } => std::cmp::Reverse(set.len()),
        _ => std::cmp::Reverse(0),
    });
    let mut out: Vec<Change> = vec![];
    for c in rows {
        let dup = out.iter().any(|x| match (x, &c) {
            (Change::Row { set: a, .. }, Change::Row { set: b, .. }) => {
                a.len() == b.len()
                    && a.iter()
                        .zip(b)
                        .all(|(p, q)| p.0 == q.0 && p.1 == q.1 && p.2.text == q.2.text)
            }
            _ => false,
        });
        if !dup {
            out.push(c);
        }
    }
    // Then: a seeded cell at a literal a predicate compares it with.
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
    // Last: a compared parameter equal to another transaction's.
    for (t, tx) in plan.txns.iter().enumerate() {
        for (name, v) in tx.params.iter().filter(|(n, _)| compared.contains(*n)) {
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
    out
}

/// `(variable, parameter)` for each `variable := parameter` of `ast` (the
/// whole expression one parameter among `names`, as PL/pgSQL writes a
/// copy: `p_c_id := p_c_id_in`), names lower-case without `:`. Only a
/// variable every assignment of which is such a copy of one parameter
/// (an `INTO` elsewhere may overwrite it: the value search tries the
/// parameter's values, and each try is a full replay, so a wrong guess
/// costs a try, never a false "reproduced").
fn copies_of(ast: &[Node], names: &HashSet<String>) -> Vec<(String, String)> {
    fn walk(nodes: &[Node], out: &mut Vec<(String, Option<String>)>, names: &HashSet<String>) {
        for n in nodes {
            match n {
                Node::Assign { var, expr } => {
                    let v = bare(var);
                    let e = bare(&expr.expr.to_string());
                    // A declaration without a default (`p_c_id INTEGER;`).
                    if e == "null" {
                        continue;
                    }
                    let p = names.iter().find(|k| bare(k) == e && bare(k) != v).cloned();
                    out.push((v, p));
                }
                Node::If(arms) => arms.iter().for_each(|(_, b)| walk(b, out, names)),
                Node::Loop { body, .. } | Node::Prefix(body) => walk(body, out, names),
                Node::Block { body, handlers, .. } => {
                    walk(body, out, names);
                    for h in handlers.iter().flatten() {
                        walk(h, out, names);
                    }
                }
                _ => {}
            }
        }
    }
    fn bare(x: &str) -> String {
        x.trim().trim_start_matches(':').to_ascii_lowercase()
    }
    let mut all = vec![];
    walk(ast, &mut all, names);
    let mut out: Vec<(String, String)> = vec![];
    for (v, p) in &all {
        let Some(p) = p else { continue };
        let same = all
            .iter()
            .filter(|(w, _)| w == v)
            .all(|(_, q)| q.as_ref() == Some(p));
        if same && !out.iter().any(|(w, _)| w == v) && !names.iter().any(|k| bare(k) == *v) {
            out.push((v.clone(), p.clone()));
        }
    }
    out
}

/// For a statement of program `p` comparing columns with parameters
/// (`params`: column, parameter), one change per seed row that has those
/// columns: every transaction of `p` takes the row's values.
fn row_changes(plan: &Plan, s: &Schedule, p: usize, params: &[(String, String)]) -> Vec<Change> {
    let mut out = vec![];
    for (row, r) in plan.seed.iter().enumerate() {
        let mut set: Vec<(usize, String, Val)> = vec![];
        for (t, tr) in s.transactions.iter().enumerate() {
            let Some(tx) = plan.txns.get(t).filter(|_| tr.program == p) else {
                continue;
            };
            for (col, name) in params {
                let Some((_, v)) = r.values.iter().find(|(c, _)| c.eq_ignore_ascii_case(col))
                else {
                    continue;
                };
                let known = set.iter().any(|(u, n, _)| *u == t && n == name);
                if v.text.is_some() && !known && tx.params.contains_key(name) {
                    set.push((t, name.clone(), v.clone()));
                }
            }
        }
        let changes = set
            .iter()
            .any(|(t, n, v)| plan.txns[*t].params.get(n).map(|x| &x.text) != Some(&v.text));
        if changes {
            out.push(Change::Row { row, set });
        }
    }
    out
}

/// What a statement compares a column with.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Other {
    Lit(String),
    Param(String),
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

/// `(column, what it is compared with)` for every comparison in `sql` of
/// a column with a constant or with a parameter (`:name`, or a bare
/// identifier among `params`, as PL/pgSQL writes them), from PostgreSQL's
/// parse. Text PostgreSQL does not parse gives nothing.
fn comparisons(sql: &str, params: &HashSet<String>) -> Vec<(String, Other)> {
    use crate::frontend::sql::pg::{self, protobuf::a_const::Val as C, NodeEnum, NodeRef};
    type N = Option<Box<pg::protobuf::Node>>;
    let (text, names) = positional(sql);
    let Ok(parsed) = pg::parse(&without_into(&text)) else {
        return vec![];
    };
    let name = |n: &N| match n.as_ref().and_then(|n| n.node.as_ref()) {
        Some(NodeEnum::ColumnRef(c)) => match c.fields.last().and_then(|f| f.node.as_ref()) {
            Some(NodeEnum::String(s)) => Some((s.sval.clone(), c.fields.len())),
            _ => None,
        },
        _ => None,
    };
    let param = |n: &N| match n.as_ref().and_then(|n| n.node.as_ref()) {
        Some(NodeEnum::ParamRef(p)) => names.get((p.number as usize).wrapping_sub(1)).cloned(),
        _ => name(n)
            .filter(|(x, k)| *k == 1 && params.contains(&x.to_ascii_lowercase()))
            .map(|(x, _)| x.to_ascii_lowercase()),
    };
    let column = |n: &N| name(n).map(|(x, _)| x).filter(|_| param(n).is_none());
    let other = |n: &N| match n.as_ref().and_then(|n| n.node.as_ref()) {
        Some(NodeEnum::AConst(c)) => match &c.val {
            Some(C::Ival(i)) => Some(Other::Lit(i.ival.to_string())),
            Some(C::Fval(f)) => Some(Other::Lit(f.fval.clone())),
            Some(C::Sval(s)) => Some(Other::Lit(s.sval.clone())),
            _ => None,
        },
        _ => param(n).map(Other::Param),
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
            let pair = match (column(&e.lexpr), other(&e.rexpr)) {
                (Some(c), Some(v)) => Some((c, v)),
                _ => column(&e.rexpr).zip(other(&e.lexpr)),
            };
            if let Some(p) = pair {
                out.push(p);
            }
        }
    }
    out
}

/// `text` without the `INTO [STRICT] target, …` lists of a statement
/// reading into program variables (`$k` after [`positional`], or PL/pgSQL's
/// bare names), wherever they stand (`SELECT … INTO … FROM`, `RETURNING …
/// INTO …`): PostgreSQL's grammar has no such list. `INSERT INTO` stays.
fn without_into(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b == b'.';
    let mut out = String::with_capacity(text.len());
    let mut from = 0;
    let mut search = 0;
    while let Some(k) = lower[search..].find("into") {
        let at = search + k;
        search = at + 4;
        let standalone = (at == 0 || !word(bytes[at - 1]))
            && bytes.get(at + 4).is_some_and(|b| b.is_ascii_whitespace());
        let before = lower[..at].trim_end();
        if !standalone || before.ends_with("insert") || before.ends_with("merge") {
            continue;
        }
        // The targets: names or `$k`, separated by commas.
        let mut end = at + 4;
        let skip_ws = |mut e: usize| {
            while bytes.get(e).is_some_and(|b| b.is_ascii_whitespace()) {
                e += 1;
            }
            e
        };
        end = skip_ws(end);
        if lower[end..].starts_with("strict ") {
            end = skip_ws(end + 7);
        }
        let mut targets = 0;
        loop {
            let start = end;
            while bytes.get(end).copied().is_some_and(word) {
                end += 1;
            }
            if end == start {
                break;
            }
            targets += 1;
            let after = skip_ws(end);
            if bytes.get(after) == Some(&b',') {
                end = skip_ws(after + 1);
            } else {
                end = after;
                break;
            }
        }
        if targets == 0 {
            continue;
        }
        out.push_str(&text[from..at]);
        out.push(' ');
        from = end;
        search = end;
    }
    out.push_str(&text[from..]);
    out
}

/// `sql` with each `:name` parameter written `$k` (one number per name,
/// `names[k - 1]`), so PostgreSQL's parser reads it (`::type` casts are
/// left alone).
fn positional(sql: &str) -> (String, Vec<String>) {
    let mut out = String::with_capacity(sql.len());
    let mut names: Vec<String> = vec![];
    let mut chars = sql.chars().peekable();
    let mut prev = ' ';
    while let Some(c) = chars.next() {
        let next_ident = chars
            .peek()
            .is_some_and(|n| n.is_ascii_alphabetic() || *n == '_');
        if c == ':' && prev != ':' && next_ident {
            let mut name = String::new();
            while let Some(n) = chars.next_if(|n| n.is_ascii_alphanumeric() || *n == '_') {
                name.push(n.to_ascii_lowercase());
            }
            let k = match names.iter().position(|x| *x == name) {
                Some(k) => k + 1,
                None => {
                    names.push(name);
                    names.len()
                }
            };
            out.push_str(&format!("${k}"));
            prev = '0';
            continue;
        }
        out.push(c);
        prev = c;
    }
    (out, names)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn literals(sql: &str) -> Vec<(String, String)> {
        comparisons(sql, &HashSet::new())
            .into_iter()
            .filter_map(|(c, o)| match o {
                Other::Lit(l) => Some((c, l)),
                Other::Param(_) => None,
            })
            .collect()
    }

    fn pair(c: &str, l: &str) -> (String, String) {
        (c.to_string(), l.to_string())
    }

    /// The comparisons PostgreSQL's parse shows, not arithmetic; `:name`
    /// parameters and `::` casts do not stop the parse.
    #[test]
    fn literals_of_comparisons_only() {
        assert_eq!(
            literals("DELETE FROM website WHERE hits = 10"),
            vec![pair("hits", "10")]
        );
        assert!(literals("UPDATE website SET hits = hits + 1").is_empty());
        assert_eq!(
            literals("SELECT a FROM t WHERE id = :id AND 'open' = t.status AND x::int > 3"),
            vec![pair("status", "open")]
        );
        assert!(literals("not sql at all").is_empty());
        // Statements reading into program variables.
        assert_eq!(
            literals("SELECT seats INTO STRICT :s, :t FROM flight WHERE seats > 1000000"),
            vec![pair("seats", "1000000")]
        );
        assert_eq!(
            literals("UPDATE c SET b = b - 1 WHERE id = 7 RETURNING b, d INTO p_b, p_d"),
            vec![pair("id", "7")]
        );
        assert_eq!(
            literals("INSERT INTO c (id) SELECT 1 WHERE 2 = x"),
            vec![pair("x", "2")]
        );
    }

    /// Parameters by name, and PL/pgSQL's bare parameter identifiers.
    #[test]
    fn columns_compared_with_parameters() {
        let names: HashSet<String> = ["p_c_id".to_string()].into();
        assert_eq!(
            comparisons(
                "SELECT c INTO :x FROM customer WHERE c_w_id = :w AND c_id = p_c_id AND c_d_id = :w",
                &names
            ),
            vec![
                ("c_w_id".to_string(), Other::Param("w".into())),
                ("c_id".to_string(), Other::Param("p_c_id".into())),
                ("c_d_id".to_string(), Other::Param("w".into())),
            ]
        );
    }

    #[test]
    fn named_parameters_read_as_positional() {
        assert_eq!(
            positional("WHERE a = :x AND b = c::int AND d = :Y_2 AND e = :x"),
            (
                "WHERE a = $1 AND b = c::int AND d = $2 AND e = $1".to_string(),
                vec!["x".to_string(), "y_2".to_string()]
            )
        );
    }

    /// An integer literal with its neighbours: `= 10` beside `+ 1`.
    #[test]
    fn integers_with_neighbours() {
        assert_eq!(near("10"), vec!["10", "9", "11"]);
        assert_eq!(near("open"), vec!["open"]);
    }
}
