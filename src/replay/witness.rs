//! An explorer counterexample ([`Schedule`]) on PostgreSQL: concrete
//! parameters and seed rows from the front-end's provenance, the
//! schedule's interleaving as driver actions, and the verdict against
//! every serial order.
//!
//! Values (Section 5.2 forgets them; provenance brings them back): every
//! column a key-based statement or insert pins is equated with what it is
//! pinned to — a parameter of that transaction, a literal, or a column of
//! the tuple an earlier statement of the same transaction touched — on
//! the tuple the schedule says the statement touches. Each class of equal
//! cells gets one value: its literal, else a fresh one of the column's
//! type, distinct from every other (so distinct tuples get distinct keys
//! and a lost update or a read skew changes numbers one can see).
//! Columns nothing pins get fresh values too, parameters nothing pins
//! fresh integers. A key column pinned to an expression isolint does not
//! follow (`MIN(…)`, arithmetic) is computed by the program at run time:
//! the replay says so in a note, and the path check and the outcome
//! comparison say what the run did.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use postgres::types::Type;

use super::executor::Halt;
use super::run::{compare, run, Action, Comparison, End, Outcome, SeedRow, Txn};
use super::scratch::{Column, Scratch};
use super::server::Server;
use super::value::{is_number, is_text, Val};
use crate::analysis::explorer::{OpKind, Schedule, TupleKind};
use crate::analysis::graph::SummaryGraph;
use crate::frontend::sql::ast::{LoopHead, Node};
use crate::frontend::Sources;
use crate::model::btp::{StmtType, Workload};
use crate::model::error::Result;
use crate::model::isolation::Level;
use crate::model::provenance::{Provenance, Value};

/// The schedule made concrete.
#[derive(Debug, Clone)]
pub struct Plan {
    pub txns: Vec<Txn>,
    pub seed: Vec<SeedRow>,
    pub actions: Vec<Action>,
    /// Per transaction, the statements the schedule has it run, in order
    /// (as the BTP shows them), to check the program took that path.
    pub expected: Vec<Vec<String>>,
    /// What the values could not pin down.
    pub notes: Vec<String>,
    /// Per table, the columns the schedule's statements read or write
    /// (PostgreSQL's names, in table order): shown first in a seed row.
    pub touched: Vec<(String, Vec<String>)>,
}

/// A seed row's columns with their values.
pub type Cells<'r> = Vec<&'r (String, Val)>;

impl Plan {
    /// A seed row's values, the columns the schedule touches first, then
    /// the others.
    pub fn touched_first<'r>(&self, row: &'r SeedRow) -> (Cells<'r>, Cells<'r>) {
        let cols: &[String] = self
            .touched
            .iter()
            .find(|(t, _)| *t == row.table)
            .map_or(&[], |(_, c)| c.as_slice());
        row.values.iter().partition(|(c, _)| cols.contains(c))
    }
}

/// Per table, the columns the statements the schedule runs read,
/// predicate-read or write.
fn touched(
    w: &Workload,
    prov: &Provenance,
    g: &SummaryGraph,
    s: &Schedule,
    scratch: &Scratch,
) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = vec![];
    for tr in &s.transactions {
        let ltp = &g.nodes[tr.node].ltp;
        for occ in &ltp.occurrences {
            let st = &w.programs[ltp.program].statements[occ.stmt];
            let rel = w.schema.rel(st.rel);
            let Some(table) = scratch.table(&rel.name) else {
                continue;
            };
            let at = match out.iter().position(|(t, _)| *t == table.name) {
                Some(i) => i,
                None => {
                    out.push((table.name.clone(), vec![]));
                    out.len() - 1
                }
            };
            // The key columns a statement finds its row by are pinned,
            // not read.
            let pinned: Vec<usize> = prov
                .pins(ltp.program, occ.stmt)
                .iter()
                .map(|(a, _)| *a)
                .collect();
            let sets = [&st.pread, &st.read, &st.write];
            let attrs = sets.into_iter().flatten().flat_map(|x| x.iter());
            for a in pinned.into_iter().chain(attrs) {
                {
                    let name = rel.attributes.get(a).map_or("", |n| n.trim_matches('"'));
                    if let Some(c) = table
                        .columns
                        .iter()
                        .find(|c| c.name.eq_ignore_ascii_case(name))
                    {
                        if !out[at].1.contains(&c.name) {
                            out[at].1.push(c.name.clone());
                        }
                    }
                }
            }
        }
    }
    for (t, cols) in &mut out {
        if let Some(table) = scratch.table(t) {
            cols.sort_by_key(|c| table.columns.iter().position(|x| x.name == *c));
        }
    }
    out
}

/// The verdict on one schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// No serial order gives the same outcome.
    Reproduced,
    /// Why not: the outcome equals a serial order's, a statement
    /// blocked, the database aborted a transaction, or no concrete
    /// values could be derived.
    NotReproduced(String),
}

/// One schedule replayed.
#[derive(Debug, Clone)]
pub struct WitnessReplay {
    pub server_version: String,
    pub level: Level,
    pub plan: Option<Plan>,
    pub outcome: Option<Outcome>,
    pub comparison: Option<Comparison>,
    pub verdict: Verdict,
    /// Where the run differed from the schedule (paths, blocking).
    pub notes: Vec<String>,
}

/// Replays `s` (found on the summary graph `g` of `w`) on `server` at
/// `level`, on a scratch schema that is dropped before this returns.
pub fn replay(
    server: &Server,
    sources: &Sources,
    w: &Workload,
    prov: &Provenance,
    g: &SummaryGraph,
    s: &Schedule,
    level: Level,
) -> Result<WitnessReplay> {
    replay_adjusted(server, sources, w, prov, g, s, level, &|_| {})
}

/// [`replay`] with `adjust` applied to the plan before anything runs
/// (`confirmed`'s search over other values for the same interleaving);
/// the verdict is reached exactly as [`replay`] reaches it.
#[allow(clippy::too_many_arguments)]
pub fn replay_adjusted(
    server: &Server,
    sources: &Sources,
    w: &Workload,
    prov: &Provenance,
    g: &SummaryGraph,
    s: &Schedule,
    level: Level,
    adjust: &dyn Fn(&mut Plan),
) -> Result<WitnessReplay> {
    let mut scratch = Scratch::create(server, &sources.schema)?;
    let mut out = WitnessReplay {
        server_version: server.version.clone(),
        level,
        plan: None,
        outcome: None,
        comparison: None,
        verdict: Verdict::NotReproduced(String::new()),
        notes: vec![],
    };
    let mut p = match plan(sources, w, prov, g, s, &mut scratch) {
        Ok(mut p) => {
            adjust(&mut p);
            p
        }
        Err(why) => {
            out.verdict = Verdict::NotReproduced(why);
            return Ok(out);
        }
    };
    out.notes.extend(p.notes.iter().cloned());
    // Seed rows PostgreSQL refuses (a CHECK constraint, a value isolint
    // made up that does not fit) mean this schedule cannot be set up.
    // The pinned seed (defaults evaluated once) is what every run starts
    // from.
    match super::run::reset(&mut scratch, &p.seed) {
        Ok(pinned) => p.seed = pinned,
        Err(d) => {
            out.verdict = Verdict::NotReproduced(d.message.clone());
            out.plan = Some(p);
            return Ok(out);
        }
    }
    let mut k = 0;
    let c = run(&mut scratch, &p.seed, &p.txns, level, &mut |_| {
        let a = p.actions.get(k).copied();
        k += 1;
        a
    })?;
    out.notes.extend(c.notes.iter().cloned());
    for (i, want) in p.expected.iter().enumerate() {
        let got: Vec<&str> = c.observed[i].iter().map(|r| r.source.as_str()).collect();
        if got != want.iter().map(String::as_str).collect::<Vec<_>>() {
            out.notes.push(format!(
                "{} ran {} where the schedule has {} (the program took another path)",
                p.txns[i].name,
                listing(&got),
                listing(&want.iter().map(String::as_str).collect::<Vec<_>>())
            ));
        }
    }
    let halted: Vec<String> = c
        .ends
        .iter()
        .enumerate()
        .filter_map(|(i, e)| match e {
            End::Committed => None,
            End::RolledBack => Some(format!("{} rolled back", p.txns[i].name)),
            End::Halted(h @ Halt::Db { .. }) if h.is_concurrency_abort() => {
                Some(format!("the database aborted {}: {h}", p.txns[i].name))
            }
            End::Halted(h) => Some(format!("{} stopped: {h}", p.txns[i].name)),
        })
        .collect();
    if !halted.is_empty() {
        out.verdict = Verdict::NotReproduced(halted.join("; "));
    } else {
        let cmp = compare(&mut scratch, &p.seed, &p.txns, level, &c)?;
        out.verdict = match &cmp.equivalent {
            Some(order) => Verdict::NotReproduced(format!(
                "the outcome equals the serial order {}",
                order
                    .iter()
                    .map(|&i| p.txns[i].name.split(' ').next().unwrap_or("?").to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            None => Verdict::Reproduced,
        };
        out.comparison = Some(cmp);
    }
    out.outcome = Some(c);
    out.plan = Some(p);
    Ok(out)
}

fn listing(v: &[&str]) -> String {
    if v.is_empty() {
        return "nothing".into();
    }
    v.iter()
        .map(|s| format!("`{s}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A cell of the equations: a parameter of a transaction, a column of a
/// tuple, or a literal.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Cell {
    Param(usize, String),
    Col(usize, usize),
    Lit(String),
}

#[derive(Default)]
struct Classes {
    index: HashMap<Cell, usize>,
    cells: Vec<Cell>,
    parent: Vec<usize>,
}

impl Classes {
    fn id(&mut self, c: Cell) -> usize {
        if let Some(&i) = self.index.get(&c) {
            return i;
        }
        let i = self.cells.len();
        self.index.insert(c.clone(), i);
        self.cells.push(c);
        self.parent.push(i);
        i
    }

    fn find(&mut self, mut i: usize) -> usize {
        while self.parent[i] != i {
            self.parent[i] = self.parent[self.parent[i]];
            i = self.parent[i];
        }
        i
    }

    fn union(&mut self, a: Cell, b: Cell) {
        let (a, b) = (self.id(a), self.id(b));
        let (ra, rb) = (self.find(a), self.find(b));
        self.parent[ra] = rb;
    }

    fn root_of(&mut self, c: &Cell) -> Option<usize> {
        let i = *self.index.get(c)?;
        Some(self.find(i))
    }
}

/// The tuple occurrence `pos` of transaction `t` touches by key (its
/// first operation on one tuple).
fn tuple_of(s: &Schedule, t: usize, pos: usize) -> Option<usize> {
    s.steps
        .iter()
        .filter(|st| st.txn == t && st.pos == Some(pos))
        .flat_map(|st| &st.ops)
        .find(|o| o.kind != OpKind::PredRead)
        .and_then(|o| o.tuple)
}

/// Fresh values: a counter, shaped to the column's type.
struct Fresh(u64);

impl Fresh {
    fn value(&mut self, col: Option<&Column>) -> std::result::Result<Val, String> {
        self.0 += 1;
        let n = self.0;
        let Some(col) = col else {
            return Ok(Val::untyped(n.to_string()));
        };
        let Some(text) = made_up(col, n) else {
            return Err(format!(
                "isolint cannot make up a value of type {} (column {})",
                col.type_name, col.name
            ));
        };
        Ok(Val {
            text: Some(text),
            oid: col.oid,
        })
    }
}

/// Value number `n` of column `col`'s type as PostgreSQL's text input,
/// within the type: an enum's labels in turn, a domain's base type, an
/// array of one element, numbers within `smallint`/`integer`/`numeric(p,
/// s)`, strings within `char(n)`/`varchar(n)`, jsonb, uuid, time,
/// interval. `None` for a type isolint does not know. A domain with a
/// CHECK takes the values the server accepted for it
/// (`Scratch::solve_domains`).
pub(crate) fn made_up(col: &Column, n: u64) -> Option<String> {
    let sh = &col.shape;
    let (base, base_name) = if sh.base != 0 {
        (sh.base, sh.base_name.as_str())
    } else {
        (col.oid, col.type_name.as_str())
    };
    if sh.elem != 0 {
        let elem = Column::of_type(&col.name, sh.elem, &sh.elem_name);
        let elem = Column {
            shape: super::scratch::Shape {
                labels: sh.labels.clone(),
                ..elem.shape.clone()
            },
            ..elem
        };
        let v = made_up(&elem, n)?;
        return Some(format!(
            "{{\"{}\"}}",
            v.replace('\\', "\\\\").replace('"', "\\\"")
        ));
    }
    if !sh.accepted.is_empty() {
        return Some(sh.accepted[n as usize % sh.accepted.len()].clone());
    }
    if !sh.labels.is_empty() {
        return Some(sh.labels[n as usize % sh.labels.len()].clone());
    }
    let t = Type::from_oid(base)?;
    Some(match t {
        _ if is_number(base) => fit_number(n, base_name),
        _ if is_text(base) => fit_text(n, base_name),
        Type::BOOL => "t".into(),
        Type::DATE => format!("2001-01-{:02}", n % 28 + 1),
        Type::TIMESTAMP | Type::TIMESTAMPTZ => {
            format!("2001-01-{:02} 00:00:{:02}", n % 28 + 1, n % 60)
        }
        Type::TIME | Type::TIMETZ => format!("00:{:02}:{:02}", n / 60 % 60, n % 60),
        Type::INTERVAL => format!("{n} seconds"),
        Type::UUID => format!("00000000-0000-4000-8000-{:012x}", n),
        Type::JSON | Type::JSONB => format!("{{\"isolint\": {n}}}"),
        Type::BYTEA => format!("\\x{n:016x}"),
        _ => return None,
    })
}

/// The `(a[, b])` of a type name like `numeric(4,4)` or `character(2)`.
fn type_args(type_name: &str) -> Vec<u32> {
    type_name
        .split_once('(')
        .and_then(|(_, r)| r.split_once(')'))
        .map(|(a, _)| a.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_default()
}

/// `n` as a number that fits `numeric(p, s)`: at most p − s integer
/// digits (a pure fraction when that is 0), and `smallint`/`integer`
/// within their range (PostgreSQL refused the random replay's key
/// 1000002 for a smallint), so seeding never overflows. Distinct for n
/// below the type's range.
pub(crate) fn fit_number(n: u64, type_name: &str) -> String {
    match type_name {
        "smallint" => return (n % i16::MAX as u64).to_string(),
        "integer" => return (n % i32::MAX as u64).to_string(),
        _ => {}
    }
    match type_args(type_name).as_slice() {
        [p, s] if p <= s => {
            let s = (*s).min(18);
            format!("0.{:0w$}", n % 10u64.pow(s), w = s as usize)
        }
        [p, s] => (n % 10u64.pow((p - s).min(18))).to_string(),
        _ => n.to_string(),
    }
}

/// `v<n>`, or `n` in base 36 when that does not fit `char(k)` /
/// `varchar(k)`.
pub(crate) fn fit_text(n: u64, type_name: &str) -> String {
    let v = format!("v{n}");
    match type_args(type_name).first() {
        Some(&k) if (k as usize) < v.len() => {
            let digits = b"0123456789abcdefghijklmnopqrstuvwxyz";
            let mut out = vec![];
            let mut m = n;
            for _ in 0..k {
                out.push(digits[(m % 36) as usize]);
                m /= 36;
            }
            out.reverse();
            String::from_utf8(out).unwrap_or(v)
        }
        _ => v,
    }
}

/// Parameters of a program: the `:names` (and positional `$n`) it may read before it assigns
/// them (a definite-assignment pass: after an IF only what every branch,
/// ELSE included, assigns counts as assigned; what a loop body assigns
/// counts inside it only). TPC-C's OrderStatus assigns `:c` on its
/// by-name branch and reads it as a parameter on the other: a parameter.
pub fn parameters(nodes: &[Node]) -> Vec<String> {
    let mut params = vec![];
    walk(nodes, &mut HashSet::new(), &mut params);
    params.sort();
    params.dedup();
    params
}

fn placeholders<T: sqlparser::ast::Visit>(
    node: &T,
    assigned: &HashSet<String>,
    params: &mut Vec<String>,
) {
    let _ = sqlparser::ast::visit_expressions(node, |e| {
        if let sqlparser::ast::Expr::Value(v) = e {
            if let sqlparser::ast::Value::Placeholder(p) = &v.value {
                // `:name`, or a routine's parameter by position (`$1`, and
                // what `x ALIAS FOR $1` names): the executor binds both
                // by their name without the colon.
                let positional =
                    p.len() > 1 && p.starts_with('$') && p[1..].bytes().all(|b| b.is_ascii_digit());
                if p.starts_with(':') || positional {
                    let name = p.trim_start_matches(':').to_lowercase();
                    let base = name.split('$').next().unwrap_or(&name).to_string();
                    if !assigned.contains(&base) && name != "found" {
                        params.push(name);
                    }
                }
            }
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
}

fn walk(nodes: &[Node], assigned: &mut HashSet<String>, params: &mut Vec<String>) {
    let var = |v: &str| v.trim_start_matches(':').to_lowercase();
    for n in nodes {
        match n {
            Node::Sql(s) | Node::Open(s) => {
                placeholders(&s.sql, assigned, params);
                assigned.extend(s.into.iter().map(|v| var(v)));
            }
            Node::If(bs) => {
                let mut after: Option<HashSet<String>> = None;
                for (c, b) in bs {
                    if let Some(c) = c {
                        placeholders(&c.expr, assigned, params);
                    }
                    let mut a = assigned.clone();
                    walk(b, &mut a, params);
                    after = Some(match after {
                        None => a,
                        Some(x) => x.intersection(&a).cloned().collect(),
                    });
                }
                let has_else = bs.last().is_some_and(|(c, _)| c.is_none());
                if let (true, Some(a)) = (has_else, after) {
                    *assigned = a;
                }
            }
            Node::Loop { head, body, .. } => {
                match head {
                    LoopHead::While(c) | LoopHead::Array { expr: c, .. } => {
                        placeholders(&c.expr, assigned, params)
                    }
                    LoopHead::Range { bounds, .. } => bounds
                        .iter()
                        .for_each(|c| placeholders(&c.expr, assigned, params)),
                    LoopHead::Query { query, .. } => placeholders(&query.sql, assigned, params),
                    LoopHead::Plain => {}
                }
                let mut a = assigned.clone();
                if let Some(v) = head.var() {
                    a.insert(var(v));
                }
                walk(body, &mut a, params);
            }
            Node::Exit { when: Some(c), .. } => placeholders(&c.expr, assigned, params),
            Node::Eval(cs) => cs
                .iter()
                .for_each(|c| placeholders(&c.expr, assigned, params)),
            Node::Assign { var: v, expr } => {
                placeholders(&expr.expr, assigned, params);
                assigned.insert(var(v));
            }
            Node::Block { body, handlers, .. } => {
                walk(body, assigned, params);
                for h in handlers.iter().flatten() {
                    walk(h, &mut assigned.clone(), params);
                }
            }
            Node::Prefix(b) => walk(b, &mut assigned.clone(), params),
            Node::Call { call, result, .. } => {
                placeholders(&call.expr, assigned, params);
                if let Some(r) = result {
                    assigned.insert(var(r));
                }
            }
            _ => {}
        }
    }
}

/// The schedule made concrete, or why it cannot be.
pub fn plan(
    sources: &Sources,
    w: &Workload,
    prov: &Provenance,
    g: &SummaryGraph,
    s: &Schedule,
    scratch: &mut Scratch,
) -> std::result::Result<Plan, String> {
    let mut cls = Classes::default();
    let mut notes = vec![];
    for (t, tr) in s.transactions.iter().enumerate() {
        let ltp = &g.nodes[tr.node].ltp;
        if ltp.program >= sources.programs.len() || prov.programs.len() <= ltp.program {
            return Err(format!("no SQL source for `{}`", tr.name));
        }
        for pos in 0..ltp.occurrences.len() {
            let stmt = ltp.occurrences[pos].stmt;
            let st = &w.programs[ltp.program].statements[stmt];
            if !(st.ty.is_key_based() || st.ty == StmtType::Ins) {
                continue;
            }
            let Some(tuple) = tuple_of(s, t, pos) else {
                continue;
            };
            let rel = w.schema.rel(st.rel);
            for (attr, value) in prov.pins(ltp.program, stmt) {
                let key_col = rel.primary_key.contains(attr)
                    || rel.unique_keys.iter().any(|k| k.contains(attr));
                let cell = match value {
                    Value::Param(p) => Cell::Param(t, p.clone()),
                    Value::Literal(l) => Cell::Lit(l.clone()),
                    Value::Column { stmt: s2, attr: a2 } => {
                        // The occurrence of that statement before this one.
                        let pos2 = (0..pos).rev().find(|&q| ltp.occurrences[q].stmt == *s2);
                        match pos2.and_then(|q| tuple_of(s, t, q)) {
                            Some(tp) => Cell::Col(tp, *a2),
                            None if key_col => {
                                notes.push(format!(
                                    "{} {}: its key column {} comes from a row read by a predicate; the program computes it, and only the seeded data can lead it to {}",
                                    tr.name,
                                    tr.labels[pos],
                                    rel.attributes[*attr],
                                    s.tuples[tuple].name
                                ));
                                continue;
                            }
                            None => continue,
                        }
                    }
                    Value::Unknown(_) | Value::Element { .. } if key_col => {
                        // No parameter decides it: the program computes
                        // it at run time. Not a guess: the run either
                        // touches the schedule's tuple or the path check
                        // and the outcome comparison say what happened.
                        notes.push(format!(
                            "{} {}: its key column {} is computed by the program (an expression isolint does not follow); only the seeded data can lead it to {}",
                            tr.name,
                            tr.labels[pos],
                            rel.attributes[*attr],
                            s.tuples[tuple].name
                        ));
                        continue;
                    }
                    Value::Unknown(_) | Value::Element { .. } => continue,
                };
                cls.union(Cell::Col(tuple, *attr), cell);
            }
        }
    }
    let column = |rel: usize, attr: usize| -> Option<&Column> {
        let r = w.schema.rel(rel);
        let t = scratch.table(&r.name)?;
        let name = r.attributes.get(attr)?;
        let bare = name.trim_matches('"');
        t.columns
            .iter()
            .find(|c| c.name == bare)
            .or_else(|| t.columns.iter().find(|c| c.name.eq_ignore_ascii_case(bare)))
    };
    // One value per class.
    let mut fresh = Fresh(0);
    let mut value: HashMap<usize, Val> = HashMap::new();
    for i in 0..cls.cells.len() {
        let root = cls.find(i);
        if value.contains_key(&root) {
            continue;
        }
        let in_class: Vec<usize> = (0..cls.cells.len())
            .filter(|&j| cls.find(j) == root)
            .collect();
        let members: Vec<Cell> = in_class.iter().map(|&j| cls.cells[j].clone()).collect();
        let lits: HashSet<&String> = members
            .iter()
            .filter_map(|c| match c {
                Cell::Lit(l) => Some(l),
                _ => None,
            })
            .collect();
        if lits.len() > 1 {
            return Err(format!(
                "the schedule needs one value to equal the literals {}",
                lits.iter()
                    .map(|l| l.as_str())
                    .collect::<Vec<_>>()
                    .join(" and ")
            ));
        }
        let col = members.iter().find_map(|c| match c {
            Cell::Col(t, a) => column(s.tuples[*t].rel, *a),
            _ => None,
        });
        let v = match lits.into_iter().next() {
            Some(l) => {
                let text = l
                    .strip_prefix('\'')
                    .and_then(|x| x.strip_suffix('\''))
                    .map_or(l.clone(), |x| x.replace("''", "'"));
                Val {
                    text: Some(text),
                    oid: col.map_or(0, |c| c.oid),
                }
            }
            None => fresh.value(col)?,
        };
        value.insert(root, v);
    }
    // Seed rows: every tuple of the initial database.
    let mut seed: Vec<(usize, SeedRow)> = vec![];
    for (k, tu) in s.tuples.iter().enumerate() {
        if matches!(tu.kind, TupleKind::Inserted(_)) {
            continue;
        }
        let rel = w.schema.rel(tu.rel);
        let table = table_of(scratch, rel)?;
        let mut values = vec![];
        for c in &table.columns {
            let attr = attr_of(rel, &c.name);
            let pinned = match attr {
                Some(a) => cls
                    .root_of(&Cell::Col(k, a))
                    .and_then(|r| value.get(&r).cloned()),
                None => None,
            };
            match pinned {
                Some(v) => values.push((c.name.clone(), Val { oid: c.oid, ..v })),
                None if c.has_default => {}
                None => values.push((c.name.clone(), fresh.value(Some(c))?)),
            }
        }
        seed.push((
            tu.rel,
            SeedRow {
                table: table.name.clone(),
                values,
            },
        ));
    }
    add_parents(w, scratch, &mut seed, &mut fresh)?;
    // Parents first.
    let depth = fk_depth(w);
    seed.sort_by_key(|(rel, _)| depth[*rel]);
    // The transactions with their parameters.
    let mut txns = vec![];
    for (t, tr) in s.transactions.iter().enumerate() {
        let program = &sources.programs[tr.program];
        // A parameter nothing pins gets a value of the type PostgreSQL
        // infers for it (a timestamp where one goes), else an integer.
        let types = super::executor::param_types(scratch.admin(), program);
        let mut params = BTreeMap::new();
        for p in parameters(program) {
            let v = match cls.root_of(&Cell::Param(t, p.clone())) {
                Some(r) => value.get(&r).cloned().unwrap_or_else(Val::null),
                None => {
                    let col = types
                        .get(&p)
                        .map(|ty| Column::of_type(&p, ty.oid(), ty.name()));
                    fresh.value(col.as_ref()).or_else(|_| fresh.value(None))?
                }
            };
            params.insert(p, v);
        }
        txns.push(Txn {
            name: format!("T{} = {}", t + 1, tr.name),
            program: Arc::new(program.clone()),
            // A condition that reads is a BTP statement, so a step of the
            // schedule.
            observe_conditions: true,
            params,
        });
    }
    // The interleaving. Several BTP statements of one SQL statement (an
    // insert and its foreign-key check) run as that one statement.
    let mut actions = vec![];
    let mut expected = vec![vec![]; s.transactions.len()];
    for st in &s.steps {
        let Some(pos) = st.pos else {
            actions.push(Action::Commit(st.txn));
            continue;
        };
        // The rest of a statement that waited for a row lock: PostgreSQL
        // resumes it by itself when the holder commits (EvalPlanQual).
        if st.resumed {
            continue;
        }
        let tr = &s.transactions[st.txn];
        let ltp = &g.nodes[tr.node].ltp;
        let stmt_of = |q: usize| &w.programs[ltp.program].statements[ltp.occurrences[q].stmt];
        let same_sql = pos > 0
            && ltp.occurrences[pos].stmt != ltp.occurrences[pos - 1].stmt
            && ltp.occurrences[pos].iteration == ltp.occurrences[pos - 1].iteration
            && stmt_of(pos).origin == stmt_of(pos - 1).origin
            && stmt_of(pos).sql == stmt_of(pos - 1).sql;
        if same_sql {
            continue;
        }
        actions.push(Action::Step(st.txn));
        expected[st.txn].push(stmt_of(pos).sql.clone().unwrap_or_default());
    }
    Ok(Plan {
        txns,
        seed: seed.into_iter().map(|(_, r)| r).collect(),
        actions,
        expected,
        notes,
        touched: touched(w, prov, g, s, scratch),
    })
}

/// Adds a parent row for every seed row whose foreign key points at no
/// seeded row (the schedule's tuples need not include the parents it does
/// not touch, and PostgreSQL checks them).
fn add_parents(
    w: &Workload,
    scratch: &Scratch,
    seed: &mut Vec<(usize, SeedRow)>,
    fresh: &mut Fresh,
) -> std::result::Result<(), String> {
    let get = |row: &SeedRow, rel: usize, attr: usize| -> Option<Val> {
        let name = w
            .schema
            .rel(rel)
            .attributes
            .get(attr)?
            .trim_matches('"')
            .to_string();
        row.values
            .iter()
            .find(|(c, _)| c.eq_ignore_ascii_case(&name))
            .map(|(_, v)| v.clone())
    };
    let mut i = 0;
    // Bounded: each pass adds rows of relations further up.
    while i < seed.len() && seed.len() < 1000 {
        let (rel, row) = seed[i].clone();
        for fk in w
            .schema
            .foreign_keys
            .iter()
            .filter(|f| f.domain == rel && !f.columns.is_empty())
        {
            let want: Vec<(usize, Option<Val>)> = fk
                .columns
                .iter()
                .map(|&(d, r)| (r, get(&row, rel, d)))
                .collect();
            if want
                .iter()
                .any(|(_, v)| v.as_ref().is_none_or(|v| v.text.is_none()))
            {
                continue;
            }
            let exists = seed.iter().any(|(r2, p)| {
                *r2 == fk.range
                    && want.iter().all(|(ra, v)| {
                        get(p, fk.range, *ra).map(|x| x.text) == v.as_ref().map(|v| v.text.clone())
                    })
            });
            if exists {
                continue;
            }
            let prel = w.schema.rel(fk.range);
            let table = table_of(scratch, prel)?;
            let mut values = vec![];
            for c in &table.columns {
                let attr = attr_of(prel, &c.name);
                let v = attr
                    .and_then(|a| want.iter().find(|(ra, _)| *ra == a))
                    .and_then(|(_, v)| v.clone());
                match v {
                    Some(v) => values.push((c.name.clone(), Val { oid: c.oid, ..v })),
                    None if c.has_default => {}
                    None => values.push((c.name.clone(), fresh.value(Some(c))?)),
                }
            }
            seed.push((
                fk.range,
                SeedRow {
                    table: table.name.clone(),
                    values,
                },
            ));
        }
        i += 1;
    }
    Ok(())
}

/// Per relation, how many foreign-key hops lead up from it (parents are
/// seeded first; self-references and cycles are cut off).
fn fk_depth(w: &Workload) -> Vec<usize> {
    let n = w.schema.relations.len();
    let mut depth = vec![0usize; n];
    for _ in 0..n {
        for fk in &w.schema.foreign_keys {
            if fk.domain != fk.range && depth[fk.domain] < depth[fk.range] + 1 {
                depth[fk.domain] = (depth[fk.range] + 1).min(n);
            }
        }
    }
    depth
}

/// The table PostgreSQL made for `rel`.
fn table_of<'s>(
    scratch: &'s Scratch,
    rel: &crate::model::schema::Relation,
) -> std::result::Result<&'s super::scratch::Table, String> {
    scratch
        .table(&rel.name)
        .ok_or_else(|| format!("the DDL makes no table {}", rel.name))
}

/// The attribute of `rel` that is PostgreSQL's column `column`.
fn attr_of(rel: &crate::model::schema::Relation, column: &str) -> Option<usize> {
    rel.attributes
        .iter()
        .position(|a| a.trim_matches('"').eq_ignore_ascii_case(column))
}
