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
use super::run::{compare, run_levels, Action, Comparison, End, Outcome, SeedRow, Txn};
use super::scratch::{Column, Scratch};
use super::server::Server;
use super::solve;
// Re-exported where they were (random replay and invariants import them
// from here): the plan and the value makers live in `plan` and `value`
// since the import circle scratch → witness → scratch was broken.
pub use super::params::parameters;
pub use super::plan::{Cells, Plan};
pub(crate) use super::value::{fit_number, fit_text, made_up};
use super::value::{is_number, Val};
use crate::analysis::explorer::{OpKind, Schedule, TupleKind};
use crate::analysis::graph::SummaryGraph;
use crate::frontend::Sources;
use crate::model::btp::{StmtType, Workload};
use crate::model::error::Result;
use crate::model::isolation::Level;
use crate::model::provenance::{Provenance, Source, Value};

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
    /// Per transaction of the schedule, the level it began at (`BEGIN
    /// ISOLATION LEVEL …`): one for all, or a deployed mixed allocation's.
    pub levels: Vec<Level>,
    pub plan: Option<Plan>,
    pub outcome: Option<Outcome>,
    pub comparison: Option<Comparison>,
    pub verdict: Verdict,
    /// Where the run differed from the schedule (paths, blocking).
    pub notes: Vec<String>,
}

impl WitnessReplay {
    /// The level the transactions ran at, for people: `READ COMMITTED`,
    /// or per transaction when they differ (`T1 READ COMMITTED, T2
    /// SERIALIZABLE`).
    pub fn level_text(&self) -> String {
        match self.levels.first() {
            Some(&l) if self.levels.iter().all(|&x| x == l) => l.to_string(),
            Some(_) => self
                .levels
                .iter()
                .enumerate()
                .map(|(i, l)| format!("T{} {l}", i + 1))
                .collect::<Vec<_>>()
                .join(", "),
            None => Level::ReadCommitted.to_string(),
        }
    }
}

/// At most this many value combinations are run for one schedule …
const MAX_TRIES: usize = 24;
/// … and for at most this long.
const BUDGET: std::time::Duration = std::time::Duration::from_secs(40);

/// Replays `s` (found on the summary graph `g` of `w`) on `server`, its
/// transaction i at `levels[i]` (READ COMMITTED where missing), on a scratch schema that is dropped before this returns.
/// The value choices of [`solve::Space`] are tried in order until one
/// run is reproduced, then [`solve::changes`] of the first choice's plan
/// (one search for `replay` and `check --postgres…`); otherwise the
/// attempt that came closest to the schedule (no transaction stopped, the
/// schedule's statements run) is the answer.
pub fn replay(
    server: &Server,
    sources: &Sources,
    w: &Workload,
    prov: &Provenance,
    g: &SummaryGraph,
    s: &Schedule,
    levels: &[Level],
) -> Result<WitnessReplay> {
    let levels: Vec<Level> = (0..s.transactions.len())
        .map(|i| levels.get(i).copied().unwrap_or(Level::ReadCommitted))
        .collect();
    let levels = levels.as_slice();
    let mut scratch = Scratch::create(server, &sources.schema)?;
    let space = solve::Space::of(sources, w, prov, g, s);
    let choices = space.choices();
    let start = std::time::Instant::now();
    let mut best: Option<(usize, WitnessReplay)> = None;
    let mut first: Option<WitnessReplay> = None;
    let mut tried = 0;
    for choice in &choices {
        if tried >= MAX_TRIES || (tried > 0 && start.elapsed() > BUDGET) {
            break;
        }
        tried += 1;
        let mut r = attempt(
            &mut scratch,
            sources,
            w,
            prov,
            g,
            s,
            levels,
            &space,
            choice,
            &|_| {},
        )?;
        if r.verdict == Verdict::Reproduced {
            if tried > 1 {
                r.notes.push(format!(
                    "values: combination {tried} of those tried ({})",
                    describe(&space, choice)
                ));
            }
            return Ok(r);
        }
        first.get_or_insert_with(|| r.clone());
        let score = closeness(&r);
        if best.as_ref().is_none_or(|(b, _)| score > *b) {
            best = Some((score, r));
        }
    }
    let Some((_, mut r)) = best else {
        return Ok(WitnessReplay {
            server_version: server.version.clone(),
            levels: levels.to_vec(),
            plan: None,
            outcome: None,
            comparison: None,
            verdict: Verdict::NotReproduced("no value combination to try".into()),
            notes: vec![],
        });
    };
    if tried > 1 {
        r.notes.push(format!(
            "values: {tried} combinations of predicate matches, computed values and branch parameters tried, none reproduced; shown: the closest to the schedule"
        ));
    }
    // Then changes of the first combination's plan (`solve::changes`),
    // when it ran and gave a serial order's outcome.
    let Some((plan, choice)) = first
        .filter(|f| f.outcome.is_some())
        .and_then(|f| f.plan)
        .zip(choices.first())
    else {
        return Ok(r);
    };
    let tries = solve::changes(&plan, w, s, sources);
    let start = std::time::Instant::now();
    let mut ran = 0;
    for t in &tries {
        if ran > 0 && start.elapsed() > BUDGET {
            break;
        }
        ran += 1;
        let adjust = |p: &mut Plan| t.iter().for_each(|c| c.apply(p));
        let mut x = attempt(
            &mut scratch,
            sources,
            w,
            prov,
            g,
            s,
            levels,
            &space,
            choice,
            &adjust,
        )?;
        if x.verdict == Verdict::Reproduced {
            let what: Vec<String> = t.iter().map(|c| c.describe(&plan)).collect();
            x.notes.insert(
                0,
                format!(
                    "the values derived first gave the outcome of a serial order; reproduced with {}",
                    what.join(" and ")
                ),
            );
            return Ok(x);
        }
    }
    if ran > 0 {
        r.notes.push(format!(
            "{ran} other choice(s) of values for the same interleaving (shared parameters, predicate literals) did not reproduce it either"
        ));
    }
    Ok(r)
}

/// How close a run came to the schedule: every transaction committed
/// (2 points), each transaction that ran the schedule's statements in
/// order (1 point each).
fn closeness(r: &WitnessReplay) -> usize {
    let (Some(p), Some(o)) = (&r.plan, &r.outcome) else {
        return 0;
    };
    let all = o.ends.iter().all(|e| *e == End::Committed);
    let paths = p
        .expected
        .iter()
        .enumerate()
        .filter(|(i, want)| {
            let got: Vec<&str> = o.observed[*i].iter().map(|r| r.source.as_str()).collect();
            subsequence(want, &got)
        })
        .count();
    2 * usize::from(all) + paths
}

/// `want` appears in `got` in order (further loop iterations may run
/// statements the schedule's unfolding does not have).
fn subsequence(want: &[String], got: &[&str]) -> bool {
    let mut it = got.iter();
    want.iter().all(|w| it.any(|g| *g == w.as_str()))
}

/// A choice for people.
fn describe(space: &solve::Space, c: &solve::Choice) -> String {
    let mut out = vec![match c.soft {
        solve::Soft::Cycle => "predicates match the cycle's tuples".to_string(),
        solve::Soft::All => "predicates match every tuple the schedule reads".to_string(),
        solve::Soft::None => "no predicate matches".to_string(),
    }];
    if c.small {
        out.push("computed values 1, 2, …".into());
    }
    for ((t, p, cands), &k) in space.branch.iter().zip(&c.branch) {
        if let Some(v) = k.checked_sub(1).and_then(|k| cands.get(k)) {
            out.push(format!("T{} :{p} = {}", t + 1, v.literal()));
        }
    }
    for (&m, &d) in space.offsets.iter().zip(&c.offset) {
        if d != 0 {
            let m = &space.matches[m];
            out.push(format!(
                "T{}'s predicate matches tuple {} after a write (offset {d:+})",
                m.txn + 1,
                m.tuple + 1
            ));
        }
    }
    out.join("; ")
}

/// One value combination: plan, seed, run, compare.
#[allow(clippy::too_many_arguments)]
fn attempt(
    scratch: &mut Scratch,
    sources: &Sources,
    w: &Workload,
    prov: &Provenance,
    g: &SummaryGraph,
    s: &Schedule,
    levels: &[Level],
    space: &solve::Space,
    choice: &solve::Choice,
    adjust: &dyn Fn(&mut Plan),
) -> Result<WitnessReplay> {
    let mut out = WitnessReplay {
        server_version: scratch.server.version.clone(),
        levels: levels.to_vec(),
        plan: None,
        outcome: None,
        comparison: None,
        verdict: Verdict::NotReproduced(String::new()),
        notes: vec![],
    };
    let mut p = match plan_with(sources, w, prov, g, s, scratch, space, choice) {
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
    match super::run::reset(scratch, &p.seed) {
        Ok(pinned) => p.seed = pinned,
        Err(d) => {
            out.verdict = Verdict::NotReproduced(d.message.clone());
            out.plan = Some(p);
            return Ok(out);
        }
    }
    let mut k = 0;
    let c = run_levels(scratch, &p.seed, &p.txns, levels, &mut |_| {
        let a = p.actions.get(k).copied();
        k += 1;
        a
    })?;
    out.notes.extend(c.notes.iter().cloned());
    path_notes(&p, &c, &mut out.notes);
    let halted: Vec<String> = c
        .ends
        .iter()
        .enumerate()
        .filter_map(|(i, e)| match e {
            End::Committed => None,
            End::RolledBack(why) => Some(format!("{} rolled back: {why}", p.txns[i].name)),
            End::Halted(h @ Halt::Db { .. }) if h.is_concurrency_abort() => {
                Some(format!("the database aborted {}: {h}", p.txns[i].name))
            }
            End::Halted(h) => Some(format!("{} stopped: {h}", p.txns[i].name)),
        })
        .collect();
    if !halted.is_empty() {
        out.verdict = Verdict::NotReproduced(halted.join("; "));
    } else {
        // Serial runs: each transaction commits before the next begins,
        // so the level they run at does not change their outcome.
        let serial_level = levels.first().copied().unwrap_or(Level::ReadCommitted);
        let cmp = compare(scratch, &p.seed, &p.txns, serial_level, &c)?;
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

/// Where a program took another path than the schedule's LTP. Further
/// loop iterations after the schedule's statements are said in one line.
fn path_notes(p: &Plan, c: &Outcome, notes: &mut Vec<String>) {
    for (i, want) in p.expected.iter().enumerate() {
        let got: Vec<&str> = c.observed[i].iter().map(|r| r.source.as_str()).collect();
        let wanted: Vec<&str> = want.iter().map(String::as_str).collect();
        if got == wanted {
            continue;
        }
        if subsequence(want, &got) {
            notes.push(format!(
                "{} ran the schedule's statements and {} more (loop iterations or statements the schedule's unfolding leaves out)",
                p.txns[i].name,
                got.len() - want.len()
            ));
        } else {
            notes.push(format!(
                "{} ran {} where the schedule has {} (the program took another path)",
                p.txns[i].name,
                listing(&got),
                listing(&wanted)
            ));
        }
    }
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
    /// A value transaction `t` computes (`Value::Unknown`), in one
    /// iteration of its loops.
    Unk(usize, usize, Vec<u8>),
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

/// The tuple a keyed statement that touched no row stands for (the
/// no-match branch of `UPDATE … WHERE id = :k AND lk IS NOT NULL`: a
/// predicate read of its row, no tuple in its operations): the one row of
/// its relation whose values in the explorer's instance equal the
/// statement's pins (`ValueFacts`). Without it the statement's key got a
/// fresh value and met no row the other transactions write.
fn keyed_tuple(s: &Schedule, t: usize, pos: usize, rel: usize) -> Option<usize> {
    use crate::analysis::explorer::{StmtKind, FRESH_VALUE};
    let f = s.values.as_ref()?.facts.as_deref()?;
    let (kind, pins) = f.stmts.get(t)?.get(pos)?;
    if *kind != StmtKind::Key || pins.is_empty() || pins.iter().any(|p| p.1 == FRESH_VALUE) {
        return None;
    }
    let value = |k: usize, c: usize| -> Option<u16> {
        let slot = f.cols.get(rel)?.iter().position(|&x| x == c);
        match slot {
            Some(i) => f.init.get(k)?.get(i).copied(),
            None => f.known.get(k)?.iter().find(|x| x.0 == c).map(|x| x.1),
        }
    };
    let mut found = (0..s.tuples.len()).filter(|&k| {
        s.tuples[k].rel == rel
            && !matches!(s.tuples[k].kind, TupleKind::Inserted(_))
            && pins.iter().all(|&(c, v)| value(k, c) == Some(v))
    });
    let k = found.next()?;
    found.next().is_none().then_some(k)
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

/// A parameter of type `ty` as a column, with what PostgreSQL's type says
/// of its shape: an array's element type (`$1::bigint[]` is `{"10"}`, not
/// `10`), an enum's labels, a domain's base type.
fn param_column(name: &str, ty: &Type) -> Column {
    use postgres::types::Kind;
    let mut col = Column::of_type(name, ty.oid(), ty.name());
    let sh = &mut col.shape;
    match ty.kind() {
        Kind::Array(e) => {
            sh.elem = e.oid();
            sh.elem_name = e.name().to_string();
            if let Kind::Enum(labels) = e.kind() {
                sh.labels = labels.clone();
            }
        }
        Kind::Enum(labels) => sh.labels = labels.clone(),
        Kind::Domain(b) => {
            sh.base = b.oid();
            sh.base_name = b.name().to_string();
        }
        _ => {}
    }
    col
}

/// The schedule made concrete, or why it cannot be: the first
/// combination of value choices ([`solve::Space::first`]).
pub fn plan(
    sources: &Sources,
    w: &Workload,
    prov: &Provenance,
    g: &SummaryGraph,
    s: &Schedule,
    scratch: &mut Scratch,
) -> std::result::Result<Plan, String> {
    let space = solve::Space::of(sources, w, prov, g, s);
    let first = space.first();
    plan_with(sources, w, prov, g, s, scratch, &space, &first)
}

/// The cell a pinned value stands for in transaction `t` at position
/// `pos`: a parameter, a literal, a column of the tuple an earlier
/// statement touched, or a value the program computes (equal `Unknown`
/// numbers within one iteration of one transaction are one value).
fn cell_of(
    s: &Schedule,
    occs: &[crate::analysis::unfold::Occurrence],
    t: usize,
    pos: usize,
    value: &Value,
) -> Option<Cell> {
    match value {
        Value::Param(p) => Some(Cell::Param(t, p.clone())),
        Value::Literal(l) => Some(Cell::Lit(l.clone())),
        Value::Column { stmt: s2, attr: a2 } => {
            let q = (0..pos).rev().find(|&q| occs[q].stmt == *s2)?;
            tuple_of(s, t, q).map(|tp| Cell::Col(tp, *a2))
        }
        Value::Unknown(n) if *n != usize::MAX => {
            Some(Cell::Unk(t, *n, occs[pos].iteration.clone()))
        }
        Value::Unknown(_) | Value::Element { .. } => None,
    }
}

/// The values of statements the explorer's valuation makes equal
/// (`ValueFacts::stmts`: one number per value) equated, also where no
/// tuple joins them: a predicate that matched no row in the schedule
/// (TPC-C's Delivery, whose second iteration's `MIN` finds no NewOrder in
/// the district a concurrent NewOrder inserts into, after its snapshot)
/// must still be on the other's value, or the run never meets it.
fn same_values(prov: &Provenance, g: &SummaryGraph, s: &Schedule, cls: &mut Classes) {
    use crate::analysis::explorer::FRESH_VALUE;
    let Some(f) = s.values.as_ref().and_then(|v| v.facts.as_deref()) else {
        return;
    };
    let mut first: HashMap<u16, Cell> = HashMap::new();
    for (t, tr) in s.transactions.iter().enumerate() {
        let ltp = &g.nodes[tr.node].ltp;
        for pos in 0..ltp.occurrences.len() {
            let Some((_, pins)) = f.stmts.get(t).and_then(|x| x.get(pos)) else {
                continue;
            };
            let stmt = ltp.occurrences[pos].stmt;
            for (attr, value) in prov.pins(ltp.program, stmt) {
                let Some(&(_, v)) = pins.iter().find(|p| p.0 == *attr) else {
                    continue;
                };
                if v == FRESH_VALUE || Some(v) == f.null {
                    continue;
                }
                let Some(cell) = cell_of(s, &ltp.occurrences, t, pos, value) else {
                    continue;
                };
                match first.get(&v) {
                    Some(c) => cls.union(c.clone(), cell),
                    None => {
                        first.insert(v, cell);
                    }
                }
            }
        }
    }
}

/// What key-based statements and inserts pin, equated with the tuple the
/// schedule says they touch (always), and what predicate-based statements
/// pin, equated with the tuples `choice` makes them match. Offsets (a
/// tuple that matches only after another transaction's write) are
/// returned, not equated.
#[allow(clippy::too_many_arguments)]
fn equations(
    w: &Workload,
    prov: &Provenance,
    g: &SummaryGraph,
    s: &Schedule,
    space: &solve::Space,
    choice: &solve::Choice,
    cls: &mut Classes,
    notes: &mut Vec<String>,
) -> Vec<(usize, usize, Cell, i64)> {
    for (t, tr) in s.transactions.iter().enumerate() {
        let ltp = &g.nodes[tr.node].ltp;
        for pos in 0..ltp.occurrences.len() {
            let stmt = ltp.occurrences[pos].stmt;
            let st = &w.programs[ltp.program].statements[stmt];
            if !(st.ty.is_key_based() || st.ty == StmtType::Ins) {
                continue;
            }
            let Some(tuple) = tuple_of(s, t, pos).or_else(|| keyed_tuple(s, t, pos, st.rel)) else {
                continue;
            };
            let rel = w.schema.rel(st.rel);
            for (attr, value) in prov.pins(ltp.program, stmt) {
                let key_col = rel.primary_key.contains(attr)
                    || rel.unique_keys.iter().any(|k| k.contains(attr));
                let cell = cell_of(s, &ltp.occurrences, t, pos, value);
                if key_col && !matches!(cell, Some(Cell::Param(..) | Cell::Lit(_) | Cell::Col(..)))
                {
                    notes.push(format!(
                        "{} {}: its key column {} is computed by the program; the replay seeds {} so that the values the program computes meet it, and tries small values for them",
                        tr.name, tr.labels[pos], rel.attributes[*attr], s.tuples[tuple].name
                    ));
                }
                if let Some(cell) = cell {
                    cls.union(Cell::Col(tuple, *attr), cell);
                }
            }
        }
    }
    let mut offsets = vec![];
    for (i, m) in space.matches.iter().enumerate() {
        let on = match choice.soft {
            solve::Soft::Cycle => m.strong,
            solve::Soft::All => true,
            solve::Soft::None => false,
        };
        if !on {
            continue;
        }
        let delta = space
            .offsets
            .iter()
            .position(|&k| k == i)
            .and_then(|k| choice.offset.get(k).copied())
            .unwrap_or(0);
        let ltp = &g.nodes[s.transactions[m.txn].node].ltp;
        let stmt = ltp.occurrences[m.pos].stmt;
        for (attr, value) in prov.pins(ltp.program, stmt) {
            let Some(cell) = cell_of(s, &ltp.occurrences, m.txn, m.pos, value) else {
                continue;
            };
            let col = Cell::Col(m.tuple, *attr);
            if delta != 0 && m.written.contains(attr) && cls.root_of(&col).is_none() {
                cls.id(cell.clone());
                offsets.push((m.tuple, *attr, cell, delta));
            } else {
                cls.union(col, cell);
            }
        }
    }
    offsets
}

/// One value per class of equal cells: its literal, else a fresh value of
/// the column's type (computed values: 1, 2, 3, … with `small`, a loop
/// variable its iteration number: `loop_iter`).
fn class_values(
    cls: &mut Classes,
    column: &dyn Fn(&Cell) -> Option<Column>,
    loop_iter: &dyn Fn(&Cell) -> Option<u8>,
    fresh: &mut Fresh,
    small: bool,
) -> std::result::Result<HashMap<usize, Val>, String> {
    let mut value: HashMap<usize, Val> = HashMap::new();
    let mut next_small = 0u64;
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
        let col = members.iter().find_map(column);
        let computed = members.iter().any(|c| matches!(c, Cell::Unk(..)))
            && !members.iter().any(|c| matches!(c, Cell::Param(..)));
        let iteration = members.iter().find_map(loop_iter);
        let v = match lits.into_iter().next() {
            Some(l) => {
                let text = l
                    .strip_prefix('\'')
                    .and_then(|x| x.strip_suffix('\''))
                    .map_or(l.clone(), |x| x.replace("''", "'"));
                Val {
                    text: Some(text),
                    oid: col.as_ref().map_or(0, |c| c.oid),
                }
            }
            // `FOR d IN 1..10` meets the schedule's k-th unfolded
            // iteration at d = k (TPC-C's Delivery: its first iteration
            // finds the seeded new order only when the district is 1; 1,
            // 2, … in the order the classes come gave it 2, and the
            // interleaving met another district). Also when a parameter
            // is in the class (a NewOrder's `:d` equal to the second
            // iteration's district, TPC-C's four-transaction anomaly
            // under snapshot isolation): a fresh value there is one the
            // loop never visits.
            None if iteration.is_some() && col.as_ref().is_none_or(|c| is_number(c.oid)) => Val {
                text: iteration.map(|k| k.to_string()),
                oid: col.as_ref().map_or(0, |c| c.oid),
            },
            None if small && computed && col.as_ref().is_none_or(|c| is_number(c.oid)) => {
                next_small += 1;
                Val {
                    text: Some(next_small.to_string()),
                    oid: col.as_ref().map_or(0, |c| c.oid),
                }
            }
            None => fresh.value(col.as_ref())?,
        };
        value.insert(root, v);
    }
    Ok(value)
}

/// The schedule made concrete with the value choices `choice` of `space`.
#[allow(clippy::too_many_arguments)]
pub fn plan_with(
    sources: &Sources,
    w: &Workload,
    prov: &Provenance,
    g: &SummaryGraph,
    s: &Schedule,
    scratch: &mut Scratch,
    space: &solve::Space,
    choice: &solve::Choice,
) -> std::result::Result<Plan, String> {
    let mut cls = Classes::default();
    let mut notes = vec![];
    for tr in &s.transactions {
        let ltp = &g.nodes[tr.node].ltp;
        if ltp.program >= sources.programs.len() || prov.programs.len() <= ltp.program {
            return Err(format!("no SQL source for `{}`", tr.name));
        }
    }
    let offsets = equations(w, prov, g, s, space, choice, &mut cls, &mut notes);
    same_values(prov, g, s, &mut cls);
    let column = |c: &Cell| -> Option<Column> {
        let Cell::Col(t, attr) = c else { return None };
        let r = w.schema.rel(s.tuples[*t].rel);
        let table = scratch.table(&r.name)?;
        let bare = r.attributes.get(*attr)?.trim_matches('"');
        table
            .columns
            .iter()
            .find(|c| c.name == bare)
            .or_else(|| {
                table
                    .columns
                    .iter()
                    .find(|c| c.name.eq_ignore_ascii_case(bare))
            })
            .cloned()
    };
    // The iteration of a loop variable (`Source::RangeLoop`) computed in
    // one loop (the unfolding's 1 or 2).
    let loop_iter = |c: &Cell| -> Option<u8> {
        let Cell::Unk(t, n, it) = c else { return None };
        let program = g.nodes[s.transactions.get(*t)?.node].ltp.program;
        let ranged = prov
            .sources
            .get(program)?
            .iter()
            .any(|(m, so)| m == n && matches!(so, Source::RangeLoop));
        match it.as_slice() {
            [k] if ranged => Some(*k),
            _ => None,
        }
    };
    let mut fresh = Fresh(0);
    let value = class_values(&mut cls, &column, &loop_iter, &mut fresh, choice.small)?;
    // A tuple that matches a predicate only after another transaction's
    // write: its column is the predicate's value minus the offset.
    let mut over: HashMap<(usize, usize), Val> = HashMap::new();
    for (tuple, attr, cell, delta) in offsets {
        let v = cls.root_of(&cell).and_then(|r| value.get(&r));
        if let Some(n) = v.and_then(|v| v.text.as_deref()?.parse::<i64>().ok()) {
            over.insert((tuple, attr), Val::untyped((n + delta).to_string()));
        }
    }
    let tested = tested_values(w, prov, g, s);
    let known = Known {
        cls: &mut cls,
        value: &value,
        over: &over,
        tested: &tested,
    };
    let seed = seed_rows(w, s, scratch, known, &mut fresh)?;
    let elems = array_elements(w, prov, g, s);
    let txns = transactions(
        (w, sources, prov),
        s,
        scratch,
        (&mut cls, &value, &elems),
        space,
        choice,
        &mut fresh,
    )?;
    let (actions, expected) = interleaving(w, prov, g, s, &mut notes);
    let mut txns = txns;
    if !sources.choices.is_empty() {
        // Application choices follow the schedule's path (`choices:`).
        for (t, path) in txns.iter_mut().zip(&expected) {
            t.choices = Some(Arc::new(super::executor::Choices {
                names: sources.choices.clone(),
                path: path.clone(),
                random: None,
            }));
        }
    }
    Ok(Plan {
        txns,
        seed,
        actions,
        expected,
        notes,
        touched: touched(w, prov, g, s, scratch),
    })
}

/// What the seed rows' values come from: the classes of equal cells and
/// their values, offsets (`over`), tested columns (`tested_values`).
struct Known<'a> {
    cls: &'a mut Classes,
    value: &'a HashMap<usize, Val>,
    over: &'a HashMap<(usize, usize), Val>,
    tested: &'a HashMap<(usize, usize), Tested>,
}

/// Seed rows: every tuple of the initial database, with a parent row for
/// any foreign key no seeded row satisfies; parents first.
fn seed_rows(
    w: &Workload,
    s: &Schedule,
    scratch: &Scratch,
    known: Known,
    fresh: &mut Fresh,
) -> std::result::Result<Vec<SeedRow>, String> {
    let Known {
        cls,
        value,
        over,
        tested,
    } = known;
    let mut seed: Vec<(usize, SeedRow)> = vec![];
    // The schedule's tuple each row stands for (before the parents).
    let mut names: Vec<&str> = vec![];
    // A tuple the explorer's valuation leaves absent (a key read as NULL:
    // TPC-C Delivery's second iteration finds no NewOrder) is no row.
    let absent = |k: usize| {
        let f = s.values.as_ref().and_then(|v| v.facts.as_deref());
        f.is_some_and(|f| f.absent.get(k) == Some(&true))
    };
    for (k, tu) in s.tuples.iter().enumerate() {
        if matches!(tu.kind, TupleKind::Inserted(_)) || absent(k) {
            continue;
        }
        names.push(&tu.name);
        let rel = w.schema.rel(tu.rel);
        let table = table_of(scratch, rel)?;
        let mut values = vec![];
        for c in &table.columns {
            let attr = attr_of(rel, &c.name);
            let pinned = match attr {
                Some(a) => over.get(&(k, a)).cloned().or_else(|| {
                    cls.root_of(&Cell::Col(k, a))
                        .and_then(|r| value.get(&r).cloned())
                }),
                None => None,
            };
            let test = attr.and_then(|a| tested.get(&(k, a)));
            match (pinned, test) {
                (Some(v), _) => values.push((c.name.clone(), Val { oid: c.oid, ..v })),
                (None, Some(Tested::Null)) => values.push((
                    c.name.clone(),
                    Val {
                        oid: c.oid,
                        ..Val::null()
                    },
                )),
                (None, Some(Tested::NotNull)) => {
                    values.push((c.name.clone(), fresh.value(Some(c))?));
                }
                (None, Some(Tested::Text(n))) => values.push((
                    c.name.clone(),
                    Val {
                        text: Some(n.clone()),
                        oid: c.oid,
                    },
                )),
                (None, None) => {
                    if let Some(v) = unpinned(w, tu.rel, c, attr, fresh)? {
                        values.push((c.name.clone(), v));
                    }
                }
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
    if let Some(why) = key_clash(w, &seed, &names) {
        return Err(why);
    }
    add_parents(w, scratch, &mut seed, fresh)?;
    let depth = fk_depth(w);
    seed.sort_by_key(|(rel, _)| depth[*rel]);
    Ok(seed.into_iter().map(|(_, r)| r).collect())
}

/// A tested column's initial value (`Provenance::tests`: `lk IS NULL`,
/// `a < 3` of a keyed UPDATE/DELETE), as the explorer's values print it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Tested {
    Null,
    NotNull,
    Text(String),
}

/// Per (tuple, attribute) of a column the schedule's keyed writes test
/// against a constant, the initial value the explorer's schedule needs:
/// its `values:` line for the row (`lk = NULL`, `a = 3`; made from the
/// truth the explorer chose, `explorer::unevaluated`), read back rather
/// than recomputed. Without it the seed's fresh value gave the test
/// whatever truth it happened to have (a timestamp for `lk IS NOT NULL`
/// where the schedule needs NULL: not reproduced).
fn tested_values(
    w: &Workload,
    prov: &Provenance,
    g: &SummaryGraph,
    s: &Schedule,
) -> HashMap<(usize, usize), Tested> {
    let mut out = HashMap::new();
    let Some(values) = &s.values else { return out };
    let mut cols: HashSet<(usize, usize)> = HashSet::new();
    for tr in &s.transactions {
        let ltp = &g.nodes[tr.node].ltp;
        for occ in &ltp.occurrences {
            let rel = w.programs[ltp.program].statements[occ.stmt].rel;
            for (a, _) in prov.tests(ltp.program, occ.stmt).unwrap_or_default() {
                cols.insert((rel, *a));
            }
        }
    }
    for (k, row) in values.rows.iter().enumerate() {
        let Some(tu) = s.tuples.get(k) else { continue };
        let rel = w.schema.rel(tu.rel);
        for (name, text) in row {
            let Some(a) = attr_of(rel, name.trim_matches('"')) else {
                continue;
            };
            if !cols.contains(&(tu.rel, a)) {
                continue;
            }
            if let Some(v) = tested(text) {
                out.insert((k, a), v);
            }
        }
    }
    out
}

/// The printed example value (`explorer::unevaluated::example`) as a seed
/// value: `NULL`, `a value other than NULL`, a number, `a number below
/// 2.5`.
fn tested(text: &str) -> Option<Tested> {
    let near = |n: &str, d: f64| -> Option<Tested> {
        let x: f64 = n.trim().parse().ok()?;
        let y = if d < 0.0 { x.floor() + d } else { x.ceil() + d };
        Some(Tested::Text(format!("{y}")))
    };
    match text {
        "NULL" => Some(Tested::Null),
        "a value other than NULL" => Some(Tested::NotNull),
        _ => match (
            text.strip_prefix("a number below "),
            text.strip_prefix("a number above "),
        ) {
            (Some(n), _) => near(n, -1.0),
            (_, Some(n)) => near(n, 1.0),
            _ => text.parse::<f64>().ok().map(|_| Tested::Text(text.into())),
        },
    }
}

/// Two of the schedule's tuples of one relation that the values make
/// equal on a primary or unique key (no NULL among them): the schedule
/// needs two rows PostgreSQL's key does not allow, so it cannot run with
/// these values. Said as the reason, not left to the seed's INSERT (a
/// "duplicate key" error reads as a failure of the replay). Fekete's
/// read-only workload in the BTP model: two Withdraws on one checking row
/// read two different `savings` rows, although both read `savings WHERE
/// id = :c` with the same `:c`.
fn key_clash(w: &Workload, seed: &[(usize, SeedRow)], names: &[&str]) -> Option<String> {
    let cell = |row: &SeedRow, rel: usize, a: usize| -> Option<String> {
        let name = w.schema.rel(rel).attributes.get(a)?.trim_matches('"');
        row.values
            .iter()
            .find(|(c, _)| c.eq_ignore_ascii_case(name))
            .and_then(|(_, v)| v.text.clone())
    };
    for (i, (rel, a)) in seed.iter().enumerate() {
        let r = w.schema.rel(*rel);
        let keys = std::iter::once(&r.primary_key).chain(&r.unique_keys);
        for key in keys.filter(|k| !k.is_empty()) {
            let of = |row: &SeedRow| -> Option<Vec<String>> {
                key.iter().map(|&c| cell(row, *rel, c)).collect()
            };
            let Some(mine) = of(a) else { continue };
            let other = seed[i + 1..]
                .iter()
                .enumerate()
                .find(|(_, (r2, b))| r2 == rel && of(b).as_ref() == Some(&mine));
            if let Some((j, _)) = other {
                let cols: Vec<String> = key
                    .iter()
                    .zip(&mine)
                    .map(|(&c, v)| format!("{} = {v}", r.attributes[c].trim_matches('"')))
                    .collect();
                let what = if *key == r.primary_key {
                    "primary key"
                } else {
                    "unique key"
                };
                return Some(format!(
                    "the schedule needs two rows of {} with {} ({} and {}: the values the programs pin make them equal), which its {what} does not allow: PostgreSQL cannot run this schedule with the programs' values",
                    r.name,
                    cols.join(", "),
                    names.get(i).copied().unwrap_or("?"),
                    names.get(i + 1 + j).copied().unwrap_or("?"),
                ));
            }
        }
    }
    None
}

/// The transactions with their parameters: a class's value, else the
/// choice's value for a branch parameter, else a fresh value of the type
/// PostgreSQL infers for it (a timestamp where one goes), else an
/// integer.
fn transactions(
    (w, sources, prov): (&Workload, &Sources, &Provenance),
    s: &Schedule,
    scratch: &mut Scratch,
    (cls, value, elems): (&mut Classes, &HashMap<usize, Val>, &[Element]),
    space: &solve::Space,
    choice: &solve::Choice,
    fresh: &mut Fresh,
) -> std::result::Result<Vec<Txn>, String> {
    let mut txns = vec![];
    for (t, tr) in s.transactions.iter().enumerate() {
        let program = &sources.programs[tr.program];
        let mut types = super::executor::param_types(scratch.admin(), program);
        // A routine's declared parameter types over what its statements
        // let PostgreSQL infer: its own call converts to them.
        // The routine the front-end says the program runs (not its name:
        // an overload's is its signature, a quoted name may hold `#`).
        let routine = sources.routines.get(tr.program).and_then(Option::as_ref);
        let mut declared = BTreeMap::new();
        if let Some(r) = routine {
            types.extend(super::retype::routine_types(scratch.admin(), r));
            declared = super::retype::variable_types(scratch.admin(), r);
        }
        let file = w.programs.get(tr.program).and_then(|p| p.file.as_deref());
        let qmarks = super::params::qmark_names(program, file);
        let mut params = BTreeMap::new();
        for p in parameters(program) {
            // A JDBC `?` is `?N` in the equations (the front-end's name).
            let cell = qmarks.get(&p).unwrap_or(&p).clone();
            let chosen = space
                .branch
                .iter()
                .zip(&choice.branch)
                .find(|((t2, p2, _), _)| *t2 == t && *p2 == p)
                .and_then(|((_, _, c), &k)| k.checked_sub(1).and_then(|k| c.get(k)));
            let mine: Vec<&Cell> = elems
                .iter()
                .filter(|(t2, p2, _)| *t2 == t && *p2 == p)
                .map(|(_, _, c)| c)
                .collect();
            let v = match (cls.root_of(&Cell::Param(t, cell.clone())), chosen) {
                (Some(r), _) => value.get(&r).cloned().unwrap_or_else(Val::null),
                (None, Some(v)) => v.clone(),
                (None, None) if !mine.is_empty() => {
                    let oid = types.get(&p).map_or(0, |ty| ty.oid());
                    array_of(&mine, cls, value, oid)
                }
                (None, None) => {
                    let col = types.get(&p).map(|ty| param_column(&p, ty));
                    // A bound nothing pins brackets every row, as the
                    // explorer assumed (`explorer::values`, `covering`).
                    let side = prov.range_side(tr.program, &cell);
                    match (side, col.as_ref()) {
                        (Some(upper), Some(c)) if extreme(c.oid, upper).is_some() => Val {
                            text: extreme(c.oid, upper),
                            oid: c.oid,
                        },
                        _ => fresh.value(col.as_ref()).or_else(|_| fresh.value(None))?,
                    }
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
            choices: None,
            declared: Arc::new(declared),
        });
    }
    Ok(txns)
}

/// A value of type `oid` at or beyond every other (`upper`) or at or
/// below every other: the bound of a range that must match every row
/// (issue 23; `i_start_date BETWEEN :a AND :b` with `:a` = -infinity).
/// `None` for types without one (text has no greatest value).
fn extreme(oid: u32, upper: bool) -> Option<String> {
    use postgres::types::Type;
    let pick = |lo: &str, hi: &str| Some(if upper { hi } else { lo }.to_string());
    match Type::from_oid(oid)? {
        Type::INT2 => pick("-32768", "32767"),
        Type::INT4 => pick("-2147483648", "2147483647"),
        Type::INT8 => pick("-9223372036854775808", "9223372036854775807"),
        // PostgreSQL 14 and later: numeric has infinities too.
        Type::FLOAT4 | Type::FLOAT8 | Type::NUMERIC => pick("-Infinity", "Infinity"),
        Type::DATE | Type::TIMESTAMP | Type::TIMESTAMPTZ => pick("-infinity", "infinity"),
        Type::TEXT | Type::VARCHAR | Type::BPCHAR if !upper => Some(String::new()),
        _ => None,
    }
}

/// An element of an array parameter: (transaction, parameter, the cell
/// whose value it is).
type Element = (usize, String, Cell);

/// The array parameters whose elements are the keys of the rows a keyed
/// write meets (`UPDATE|DELETE t … FROM|USING unnest(:ids) n WHERE id =
/// n`, the front-end's `Source::RangeLoop` value; graphile-worker's
/// `completeJobs`): per transaction, the parameter and the cell of each
/// row the schedule has such a statement touch, in schedule order. The
/// parameter is found in the statement's text (`unnest(:ids…)`), and only
/// when one parameter is unnested there.
fn array_elements(w: &Workload, prov: &Provenance, g: &SummaryGraph, s: &Schedule) -> Vec<Element> {
    let mut out: Vec<Element> = vec![];
    for (t, tr) in s.transactions.iter().enumerate() {
        let ltp = &g.nodes[tr.node].ltp;
        let ranged: Vec<usize> = prov
            .sources
            .get(ltp.program)
            .map(|src| {
                src.iter()
                    .filter(|(_, so)| matches!(so, Source::RangeLoop))
                    .map(|(n, _)| *n)
                    .collect()
            })
            .unwrap_or_default();
        for pos in 0..ltp.occurrences.len() {
            let stmt = ltp.occurrences[pos].stmt;
            let st = &w.programs[ltp.program].statements[stmt];
            let Some(param) = st.sql.as_deref().and_then(unnested_param) else {
                continue;
            };
            let Some(tuple) = tuple_of(s, t, pos) else {
                continue;
            };
            for (attr, value) in prov.pins(ltp.program, stmt) {
                let Value::Unknown(n) = value else { continue };
                let cell = (t, param.clone(), Cell::Col(tuple, *attr));
                if ranged.contains(n) && !out.contains(&cell) {
                    out.push(cell);
                }
            }
        }
    }
    out
}

/// `p` of the only parameter a statement unnests (`unnest(:p)`,
/// `unnest(:p::bigint[])`), lower case; `$1` of `unnest($1::bigint[])`.
fn unnested_param(sql: &str) -> Option<String> {
    let lower = sql.to_lowercase();
    let mut found: Option<String> = None;
    // `unnest(:p)` and `= ANY(:p)` (the front-end pins both per element).
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut opens = vec![];
    for word in ["unnest", "any"] {
        for (i, _) in lower.match_indices(word) {
            let after = lower[i + word.len()..].trim_start();
            let whole = !lower[..i].ends_with(ident);
            if whole && after.starts_with('(') {
                opens.push(lower.len() - after.len() + 1);
            }
        }
    }
    for i in opens {
        let rest = lower[i..].trim_start();
        // `:name`, or a positional `$n` (named so by `params::parameters`).
        let name: String = match rest.strip_prefix('$') {
            Some(n) => {
                let digits: String = n.chars().take_while(char::is_ascii_digit).collect();
                if digits.is_empty() {
                    return None;
                }
                format!("${digits}")
            }
            None => rest
                .strip_prefix(':')?
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect(),
        };
        if name.is_empty() || found.as_ref().is_some_and(|f| *f != name) {
            return None;
        }
        found = Some(name);
    }
    found
}

/// An array of the cells' values, in PostgreSQL's text form
/// (`{"1","2"}`), typed `oid` (the array type PostgreSQL inferred).
fn array_of(cells: &[&Cell], cls: &mut Classes, value: &HashMap<usize, Val>, oid: u32) -> Val {
    let items: Vec<String> = cells
        .iter()
        .map(|c| {
            match cls
                .root_of(c)
                .and_then(|r| value.get(&r))
                .and_then(|v| v.text.clone())
            {
                Some(t) => format!("\"{}\"", t.replace('\\', "\\\\").replace('"', "\\\"")),
                None => "NULL".to_string(),
            }
        })
        .collect();
    Val {
        text: Some(format!("{{{}}}", items.join(","))),
        oid,
    }
}

/// The interleaving as driver actions, and per transaction the
/// statements the schedule has it run. Several BTP statements of one SQL
/// statement (an insert and its foreign-key check, a statement and the
/// bodies of the LANGUAGE sql functions it calls) run as that one
/// statement; `notes` says where the schedule puts another
/// transaction's work inside one.
fn interleaving(
    w: &Workload,
    prov: &Provenance,
    g: &SummaryGraph,
    s: &Schedule,
    notes: &mut Vec<String>,
) -> (Vec<Action>, Vec<Vec<String>>) {
    let mut actions = vec![];
    let mut expected = vec![vec![]; s.transactions.len()];
    // Per transaction, the index of its last step in `actions`.
    let mut last: Vec<usize> = vec![0; s.transactions.len()];
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
        let program = ltp.program;
        let stmt_of = |q: usize| &w.programs[program].statements[ltp.occurrences[q].stmt];
        // An integrity check read (a foreign-key check before its INSERT,
        // a unique check after it) is part of that statement: the
        // executor runs the INSERT at the first's step. The front-end
        // says which reads are checks, and of what SQL
        // (`Provenance::inside`); the BTP's `sql` is only a label. So
        // does it of a function body's statements.
        let sql_of = |q: usize| {
            prov.inside(program, ltp.occurrences[q].stmt)
                .unwrap_or_else(|| stmt_of(q).sql.as_deref().unwrap_or_default())
        };
        let same_sql = pos > 0
            && ltp.occurrences[pos].stmt != ltp.occurrences[pos - 1].stmt
            && ltp.occurrences[pos].iteration == ltp.occurrences[pos - 1].iteration
            && stmt_of(pos).origin == stmt_of(pos - 1).origin
            && sql_of(pos) == sql_of(pos - 1);
        if same_sql || same_part(prov, ltp, pos, false) {
            if actions.len() > last[st.txn] + 1 {
                let part = |q: usize| prov.part(program, ltp.occurrences[q].stmt);
                let own = match (part(pos - 1), part(pos)) {
                    (Some(a), Some(b)) if a.snap != b.snap => "the queries of a VOLATILE function it calls take snapshots of their own: PostgreSQL can run this, a commit while the statement runs",
                    _ => "they read one snapshot on PostgreSQL",
                };
                notes.push(format!(
                    "the schedule runs other transactions' steps inside T{}'s statement `{}`, between its parts ({own}); replay runs a SQL statement as one step, at its first part",
                    st.txn + 1,
                    expected[st.txn].last().map_or("", String::as_str)
                ));
            }
            continue;
        }
        expected[st.txn].push(sql_of(pos).to_string());
        // A STABLE routine's next query reads the snapshot of its last on
        // PostgreSQL: a commit the schedule puts between them cannot
        // happen there (the explorer's "in the model only" schedules
        // have them). Run it right after, as PostgreSQL would.
        let t = st.txn;
        let committed_between = actions
            .get(last[t] + 1..)
            .is_some_and(|a| a.iter().any(|a| matches!(a, Action::Commit(_))));
        if same_part(prov, ltp, pos, true) && committed_between {
            notes.push(format!(
                "the schedule commits another transaction between two queries of T{}'s that read one snapshot on PostgreSQL (a STABLE routine's, `{}`): not a schedule PostgreSQL can run; replay ran them one after the other",
                t + 1,
                sql_of(pos)
            ));
            let at = last[t] + 1;
            actions.insert(at, Action::Step(t));
            last.iter_mut().filter(|l| **l >= at).for_each(|l| *l += 1);
            last[t] = at;
            continue;
        }
        last[t] = actions.len();
        actions.push(Action::Step(t));
    }
    (actions, expected)
}

/// Occurrence `pos` of `ltp` runs in the same execution of a SQL
/// statement as occurrence `pos - 1` (`snap` false: `Provenance::parts`'
/// `exec`, a statement and the bodies of the LANGUAGE sql functions it
/// calls), or reads its snapshot (`snap`: a STABLE routine's queries
/// too); within the same iterations of the loops around them.
fn same_part(
    prov: &Provenance,
    ltp: &crate::analysis::unfold::Ltp,
    pos: usize,
    snap: bool,
) -> bool {
    if pos == 0 {
        return false;
    }
    let (a, b) = (&ltp.occurrences[pos - 1], &ltp.occurrences[pos]);
    let (Some(pa), Some(pb)) = (
        prov.part(ltp.program, a.stmt),
        prov.part(ltp.program, b.stmt),
    ) else {
        return false;
    };
    let (ga, gb, d, db) = if snap {
        (pa.snap, pb.snap, pa.snap_depth, pb.snap_depth)
    } else {
        (pa.exec, pb.exec, pa.depth, pb.depth)
    };
    ga == gb
        && d == db
        && a.iteration.len() >= d
        && b.iteration.len() >= d
        && a.iteration[..d] == b.iteration[..d]
        && (a.stmt, &a.iteration) != (b.stmt, &b.iteration)
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
        let mut parent_first = false;
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
                    None => {
                        if let Some(v) = unpinned(w, fk.range, c, attr, fresh)? {
                            values.push((c.name.clone(), v));
                        }
                    }
                }
            }
            self_parent(w, fk.range, &want, &mut values);
            let parent = (
                fk.range,
                SeedRow {
                    table: table.name.clone(),
                    values,
                },
            );
            if fk.range == rel {
                // A self-reference (a category's parent category): the
                // parent goes before the row, and is looked at next.
                seed.insert(i, parent);
                parent_first = true;
                break;
            }
            seed.push(parent);
        }
        if !parent_first {
            i += 1;
        }
    }
    Ok(())
}

/// A made-up parent row whose own NOT NULL self-reference nothing pins
/// references itself (PostgreSQL accepts a row that is its own parent),
/// rather than a further made-up parent, and so on.
fn self_parent(
    w: &Workload,
    rel: usize,
    want: &[(usize, Option<Val>)],
    values: &mut [(String, Val)],
) {
    let name = |a: usize| {
        w.schema
            .rel(rel)
            .attributes
            .get(a)
            .map(|n| n.trim_matches('"').to_lowercase())
    };
    for f in w
        .schema
        .foreign_keys
        .iter()
        .filter(|f| f.domain == rel && f.range == rel)
    {
        for &(d, r) in &f.columns {
            if want.iter().any(|(a, _)| *a == d) {
                continue;
            }
            let (Some(dn), Some(rn)) = (name(d), name(r)) else {
                continue;
            };
            let own = values
                .iter()
                .find(|(c, _)| c.to_lowercase() == rn)
                .map(|(_, v)| v.text.clone());
            if let (Some(own), Some(cell)) =
                (own, values.iter_mut().find(|(c, _)| c.to_lowercase() == dn))
            {
                if cell.1.text.is_some() {
                    cell.1.text = own;
                }
            }
        }
    }
}

/// A seed cell nothing pins: `None` (left to the column's default), NULL
/// in a nullable foreign-key column (no parent to make up, and no chain
/// of made-up parents through a self-reference: auctionmark's
/// `category.c_parent_id`), else a fresh value of the column's type.
fn unpinned(
    w: &Workload,
    rel: usize,
    c: &super::scratch::Column,
    attr: Option<usize>,
    fresh: &mut Fresh,
) -> std::result::Result<Option<Val>, String> {
    if c.has_default {
        return Ok(None);
    }
    let fk_column = attr.is_some_and(|a| {
        w.schema
            .foreign_keys
            .iter()
            .any(|f| f.domain == rel && f.columns.iter().any(|&(d, _)| d == a))
    });
    if fk_column && !c.not_null {
        return Ok(Some(Val {
            oid: c.oid,
            ..Val::null()
        }));
    }
    fresh.value(Some(c)).map(Some)
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

#[cfg(test)]
mod tests {
    use super::{key_clash, tested, unnested_param, SeedRow, Tested, Val};

    /// The values `explorer::unevaluated::example` prints, read back.
    #[test]
    fn the_printed_example_values_are_read_back() {
        let text = |t: &str| Some(Tested::Text(t.into()));
        assert_eq!(tested("NULL"), Some(Tested::Null));
        assert_eq!(tested("a value other than NULL"), Some(Tested::NotNull));
        assert_eq!(tested("3"), text("3"));
        assert_eq!(tested("-1"), text("-1"));
        assert_eq!(tested("a number below 2.5"), text("1"));
        assert_eq!(tested("a number above 2.5"), text("4"));
        assert_eq!(tested("'abc'"), None);
    }

    fn row(table: &str, cells: &[(&str, Option<&str>)]) -> SeedRow {
        SeedRow {
            table: table.into(),
            values: cells
                .iter()
                .map(|(c, v)| {
                    let v = Val {
                        text: v.map(str::to_string),
                        oid: 23,
                    };
                    (c.to_string(), v)
                })
                .collect(),
        }
    }

    /// Two rows of one table equal on its primary key, or on a UNIQUE
    /// key, clash; equal keys in two tables, a NULL in a unique key
    /// (PostgreSQL's UNIQUE allows many NULLs) and keys that differ in
    /// one column of two do not.
    #[test]
    fn only_rows_equal_on_a_key_of_one_table_clash() {
        use crate::model::error::SourceFile;
        let schema = SourceFile::new(
            "s.sql",
            "CREATE TABLE a (id int PRIMARY KEY, v int);\nCREATE TABLE b (x int, y int, u int UNIQUE, PRIMARY KEY (x, y));\n",
        );
        let prog = SourceFile::new("P.sql", "SELECT v INTO :v FROM a WHERE id = :k;\n");
        let l = crate::frontend::sql_dir::lower_texts(&schema, &[prog]).expect("lowers");
        let w = &l.workload;
        let (ra, rb) = (
            w.schema.relation("a").expect("a"),
            w.schema.relation("b").expect("b"),
        );
        let a1 = || row("a", &[("id", Some("1")), ("v", Some("5"))]);
        let clash = key_clash(w, &[(ra, a1()), (ra, a1())], &["a#1", "a#2"]).expect("a clash");
        assert!(
            clash.contains("two rows of a with id = 1 (a#1 and a#2"),
            "{clash}"
        );
        assert!(clash.contains("primary key"), "{clash}");
        let b = |x: &str, y: &str, u: Option<&str>| {
            row("b", &[("x", Some(x)), ("y", Some(y)), ("u", u)])
        };
        let seed = [(ra, a1()), (rb, b("1", "1", None)), (rb, b("1", "2", None))];
        assert_eq!(key_clash(w, &seed, &["a#1", "b#1", "b#2"]), None);
        let seed = [(rb, b("1", "1", Some("7"))), (rb, b("1", "2", Some("7")))];
        let u = key_clash(w, &seed, &["b#1", "b#2"]).expect("a unique clash");
        assert!(u.contains("with u = 7") && u.contains("unique key"), "{u}");
        let seed = [(rb, b("1", "2", None)), (rb, b("1", "2", None))];
        let pk = key_clash(w, &seed, &["b#1", "b#2"]).expect("a key clash");
        assert!(pk.contains("with x = 1, y = 2"), "{pk}");
    }

    #[test]
    fn the_unnested_parameter_is_found_only_when_it_is_one() {
        assert_eq!(
            unnested_param("UPDATE t SET a = 1 FROM unnest(:IDS::bigint[]) n(n) WHERE id = n"),
            Some("ids".into())
        );
        assert_eq!(
            unnested_param(
                "DELETE FROM t USING unnest( :ids ) n WHERE id = n AND k IN (SELECT unnest(:ids))"
            ),
            Some("ids".into())
        );
        // Two arrays: which one keys the row is not said.
        assert_eq!(
            unnested_param("SELECT * FROM unnest(:a) x, unnest(:b) y"),
            None
        );
        assert_eq!(unnested_param("SELECT * FROM unnest(ARRAY[1, 2]) x"), None);
        assert_eq!(
            unnested_param("DELETE FROM jobs USING unnest($1::bigint[]) n(n) WHERE id = n"),
            Some("$1".into())
        );
        assert_eq!(unnested_param("UPDATE t SET a = 1 WHERE id = :id"), None);
        assert_eq!(
            unnested_param("UPDATE t SET a = 1 WHERE id = ANY (:ids) AND b = :w"),
            Some("ids".into())
        );
        assert_eq!(
            unnested_param("update t set a = 1 where id = any($1::bigint[])"),
            Some("$1".into())
        );
        assert_eq!(unnested_param("SELECT company(:x)"), None);
    }
}
