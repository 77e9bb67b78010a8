//! Randomized replay: many random interleavings of k random program
//! instances over a few keys, each compared with the serial orders of the
//! transactions that committed. A workload isolint proves robust must
//! never show an anomaly here (Definition 3.1: every schedule allowed
//! under MVRC is serializable); a non-robust one may, by chance.
//!
//! The data: `keys` rows per table. In even rounds row i holds i in every
//! integer or numeric column, `k<i>` in every text column (so a foreign
//! key of row i finds row i of its parent, and `a > :x` has a row at its
//! boundary). Odd rounds draw the rows afresh so that values spread: row
//! i holds i in every column of a unique index (primary keys), each
//! foreign key of row i points at a parent row drawn from 1..=keys
//! (several children may share one, some parents have none), and every
//! other column holds r of its type, r drawn per cell — 1 with
//! probability 2/3, else from 1..=keys — and so are that round's
//! parameters: a predicate `b = :x` matches several rows, one, or none,
//! and instances meet on the same rows more often (issue 23). A round
//! whose drawn rows PostgreSQL refuses (a CHECK constraint) runs on the
//! row i = i data.
//! Columns with a default keep it. The parameters: a parameter a program
//! compares with a text column is `k<r>`, any other one r, with r drawn
//! from 1..=keys, so instances collide on rows; a parameter an INSERT puts
//! into a key column is fresh per instance (a duplicate key would abort,
//! which says nothing about isolation). With [`Options::focus`] (the
//! generated batch, tests/pg_soundness.rs) each round draws one value
//! and every parameter takes it with that probability, so the instances'
//! key reads, key writes and `b = :x` predicates meet on one row (issue
//! 23: in about half the rounds of not-robust workloads no two
//! transactions wrote a common row and no serial order differed from
//! another — [`Breakdown`]).
//!
//! What a round says: a transaction the database aborted for what it
//! found (a deadlock, a duplicate key, a missing parent, a RAISE of the
//! program; [`voids`]) is left out, and the committed ones are compared
//! with every serial order of theirs, the order they committed in first;
//! a run whose transactions ran one after the other without blocking is
//! serial and needs no comparison. A stop of the harness (a construct the
//! executor does not run, a wrongly typed parameter) voids the round.
//! [`guided`] runs rounds aimed at a static witness instead (the
//! explorer's schedule with `isolint replay`'s solved values).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use postgres::types::Type;

use super::executor::Halt;
use super::run::{
    compare, permutations, run, same_outcome, serial, Action, Comparison, End, Mask, Outcome,
    SeedRow, Txn,
};
use super::scratch::{Column, Scratch};
use super::server::Server;
use super::value::{is_number, is_text, Val};
use super::witness::parameters;
use crate::frontend::Sources;
use crate::model::btp::{StmtType, Workload};
use crate::model::error::Result;
use crate::model::isolation::Level;
use crate::model::provenance::{Provenance, Value};
use crate::model::rng::Rng;

mod breakdown;
mod guided;
pub use breakdown::Breakdown;
pub use guided::{guided, Guided, GuidedConfig};

/// What to run.
#[derive(Debug, Clone, Copy)]
pub struct RandomConfig {
    pub rounds: usize,
    /// Transactions per round (k).
    pub txns: usize,
    /// Rows per table.
    pub keys: usize,
    pub seed: u64,
    pub level: Level,
}

/// A round whose outcome matched no serial order.
#[derive(Debug, Clone)]
pub struct Anomaly {
    pub round: usize,
    pub txns: Vec<Txn>,
    pub outcome: Outcome,
    pub comparison: Comparison,
}

/// What the random replay saw.
#[derive(Debug, Clone)]
pub struct RandomReport {
    pub config: RandomConfig,
    pub server_version: String,
    pub rounds: usize,
    /// Transactions the database aborted (serialization failure, deadlock).
    pub aborted: usize,
    /// Transactions that stopped otherwise (an error of the program, a
    /// construct the executor does not run), with the first reason.
    pub failed: usize,
    pub first_failure: Option<String>,
    /// Statements that blocked on a lock at least once.
    pub blocked: usize,
    pub anomalies: Vec<Anomaly>,
    /// The rounds by kind, when [`Options::breakdown`] asked for it.
    pub breakdown: Option<Breakdown>,
}

/// What [`replay_with`] does beyond [`replay`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Sort every round into a [`Breakdown`] kind (extra runs: each
    /// transaction alone, every serial order).
    pub breakdown: bool,
    /// Percent: each round draws one value (as it draws a parameter) and
    /// every parameter takes it with this probability, else its own; 0
    /// draws none (the random stream of `isolint replay --random`).
    pub focus: u64,
    /// Stop at the first round that shows an anomaly (when only whether
    /// one is seen matters).
    pub stop_at_anomaly: bool,
}

/// Row `i`'s value for column `c` (see the module comment).
fn cell(c: &Column, i: usize) -> Option<Val> {
    let t = Type::from_oid(c.oid).unwrap_or(Type::UNKNOWN);
    // An OID column is left to its default.
    let text = if is_number(c.oid) && t != Type::OID {
        super::witness::fit_number(i as u64, &c.type_name)
    } else if is_text(c.oid) {
        // `k<i>` where it fits (`char(1)`: what fits).
        let k = format!("k{i}");
        let fits = super::witness::fit_text(i as u64, &c.type_name).starts_with('v');
        if fits {
            k
        } else {
            super::witness::fit_text(i as u64, &c.type_name)
        }
    } else if t == Type::BOOL {
        "t".into()
    } else if t == Type::DATE {
        format!("2001-01-{:02}", i % 28 + 1)
    } else if t == Type::TIMESTAMP || t == Type::TIMESTAMPTZ {
        format!("2001-01-{:02} 00:00:00", i % 28 + 1)
    } else {
        // Enums, domains, arrays, jsonb, uuid, …: row i's value of the
        // type (issue 23: "cannot make up a value of type jsonb").
        super::witness::made_up(c, i as u64)?
    };
    Some(Val {
        text: Some(text),
        oid: c.oid,
    })
}

/// How a program uses a parameter: compared with a text column, put into
/// an inserted key column.
#[derive(Default, Clone)]
struct Use {
    text: bool,
    inserted_key: bool,
    /// The inserted key column's type (oid, `format_type`): fresh keys
    /// are made to fit it (a smallint key refused 1000002).
    key_type: Option<(u32, String)>,
    /// The type PostgreSQL infers for it, when that is not a number or
    /// text (a timestamp, a date, a boolean).
    other: Option<u32>,
}

/// Runs `cfg.rounds` random rounds on a scratch schema.
pub fn replay(
    server: &Server,
    sources: &Sources,
    w: &Workload,
    prov: &Provenance,
    cfg: RandomConfig,
) -> Result<RandomReport> {
    replay_with(server, sources, w, prov, cfg, Options::default())
}

/// [`replay`] with [`Options`].
pub fn replay_with(
    server: &Server,
    sources: &Sources,
    w: &Workload,
    prov: &Provenance,
    cfg: RandomConfig,
    opts: Options,
) -> Result<RandomReport> {
    let mut scratch = Scratch::create(server, &sources.schema)?;
    // Pinned: every serial run of a round starts from the same rows,
    // defaults evaluated once.
    let rows = seed_rows(&scratch, cfg.keys);
    let base = super::run::reset(&mut scratch, &rows)?;
    let keys = Keys::of(&mut scratch);
    let params = param_uses(&mut scratch, sources, w, prov);
    let mut rng = Rng::with_state(cfg.seed);
    let mut report = RandomReport {
        config: cfg,
        server_version: server.version.clone(),
        rounds: 0,
        aborted: 0,
        failed: 0,
        first_failure: None,
        blocked: 0,
        anomalies: vec![],
        breakdown: opts.breakdown.then(Breakdown::default),
    };
    let key_of = key_columns(&scratch, &keys);
    let key = |t: &str| key_of.get(t).copied();
    let programs = sources.programs.len().min(w.programs.len());
    if programs == 0 {
        return Ok(report);
    }
    let declared = declared_types(&mut scratch, sources, programs);
    let mut fresh = 1_000_000u64;
    for round in 0..cfg.rounds {
        // Every other round on row i = i (a predicate `a > :x` finds its
        // boundary row there), the others on drawn rows.
        let seed = if round % 2 == 0 {
            base.clone()
        } else {
            let drawn = spread_rows(&scratch, &keys, cfg.keys, &mut rng);
            super::run::reset(&mut scratch, &drawn).unwrap_or_else(|_| base.clone())
        };
        let focus = round_focus(opts.focus, round, cfg.keys, &mut rng);
        let draw = Draw {
            cfg: &cfg,
            round,
            programs,
            params: &params,
            declared: &declared,
            focus: (opts.focus, focus),
        };
        let txns = draw.txns(sources, w, &mut rng, &mut fresh);
        let c = run(&mut scratch, &seed, &txns, cfg.level, &mut |st| {
            let open: Vec<usize> = (0..st.len())
                .filter(|&i| !st[i].ended && !st[i].pending)
                .collect();
            if open.is_empty() {
                return None;
            }
            // A STABLE routine's next query reads the snapshot of its
            // last: no other action comes between them.
            let i = match open.iter().find(|&&i| st[i].held) {
                Some(&i) => i,
                None => open[rng.below(open.len())],
            };
            Some(if st[i].finished {
                Action::Commit(i)
            } else {
                Action::Step(i)
            })
        })?;
        // A round where something other than the database stopped a
        // transaction says nothing ([`voids`]).
        let aborted = c
            .ends
            .iter()
            .any(|e| matches!(e, End::Halted(h) if h.is_concurrency_abort()));
        if let Some(b) = report.breakdown.as_mut() {
            b.with_abort += usize::from(aborted);
        }
        if !tally(&mut report, &c) {
            if let Some(b) = report.breakdown.as_mut() {
                b.void += 1;
            }
            continue;
        }
        // The serial runs take the paths the concurrent run's choices took.
        let serial_txns = on_paths(&txns, &c);
        let txns_s = serial_txns.as_slice();
        let cmp = match judge(&mut scratch, &seed, txns_s, cfg.level, &c)? {
            Some(cmp) => cmp,
            // A serial run; the breakdown still wants the serial orders.
            None if report.breakdown.is_some() => {
                compare(&mut scratch, &seed, txns_s, cfg.level, &c)?
            }
            None => continue,
        };
        if let Some(b) = report.breakdown.as_mut() {
            breakdown::classify(&mut scratch, &seed, txns_s, cfg.level, &c, &cmp, &key, b)?;
        }
        if cmp.equivalent.is_none() {
            report.anomalies.push(Anomaly {
                round,
                txns,
                outcome: c,
                comparison: cmp,
            });
            if opts.stop_at_anomaly {
                break;
            }
        }
    }
    Ok(report)
}

/// `txns` for the serial runs: a transaction whose application choices
/// were drawn at random follows the path it took in the concurrent run
/// `c` (the statements it ran, in order), as a witness's serial runs
/// follow the schedule's path.
fn on_paths(txns: &[Txn], c: &Outcome) -> Vec<Txn> {
    let mut out = txns.to_vec();
    for (i, t) in out.iter_mut().enumerate() {
        let Some(ch) = t.choices.as_deref().filter(|ch| ch.random.is_some()) else {
            continue;
        };
        let path = c.observed[i].iter().map(|r| r.source.clone()).collect();
        t.choices = Some(Arc::new(super::executor::Choices {
            names: ch.names.clone(),
            path,
            random: None,
        }));
    }
    out
}

/// Counts a round's aborts, failures and blocks into `report`; `false`
/// when the round says nothing ([`voids`]).
fn tally(report: &mut RandomReport, c: &Outcome) -> bool {
    report.rounds += 1;
    report.blocked += c.notes.iter().filter(|n| n.contains("blocked")).count();
    for e in &c.ends {
        if let End::Halted(h) = e {
            if h.is_concurrency_abort() {
                report.aborted += 1;
            } else {
                report.failed += 1;
                report.first_failure.get_or_insert_with(|| h.to_string());
            }
        }
    }
    !c.ends
        .iter()
        .any(|e| matches!(e, End::Halted(h) if voids(h)))
}

/// Does `h` stopping a transaction leave its round saying nothing? Not
/// when the database aborted the transaction for what it found (a
/// duplicate key, a missing parent, a RAISE or failed ASSERT of the
/// program, a data error, a deadlock): its writes were never visible to
/// the others (READ COMMITTED reads committed rows only, and a waiter on
/// its row lock goes on as if it never wrote), so the committed
/// transactions' outcome must still be some serial order's of theirs.
/// A construct the executor does not run, or an error of the harness
/// itself (a value bound with a wrong type: 42…, the client: 08…), voids
/// the round: the program was not run as PostgreSQL runs it.
pub fn voids(h: &Halt) -> bool {
    match h {
        Halt::Db { code, .. } => !["21", "22", "23", "40", "P0"]
            .iter()
            .any(|class| code.starts_with(class)),
        Halt::Unsupported(m) => m != "blocked",
    }
}

/// Compares a round's run with the serial orders of its committed
/// transactions, the order they committed in first (the likeliest
/// equal). `None` when the run was serial itself: every transaction's
/// statements ran, none blocked, and it committed before the next began
/// (at READ COMMITTED each statement's snapshot then saw exactly the
/// serial order's data).
fn judge(
    scratch: &mut Scratch,
    seed: &[SeedRow],
    txns: &[Txn],
    level: Level,
    c: &Outcome,
) -> Result<Option<Comparison>> {
    let committed = c.committed();
    let by_commit: Vec<usize> = c
        .trace
        .iter()
        .filter(|(_, i)| i.is_none())
        .map(|&(t, _)| t)
        .filter(|t| committed.contains(t))
        .collect();
    let mut runs: Vec<usize> = c.trace.iter().map(|&(t, _)| t).collect();
    runs.dedup();
    let serial_trace = c.notes.is_empty()
        && c.ends.iter().all(|e| *e == End::Committed)
        && runs.len() == txns.len()
        && runs == by_commit;
    if serial_trace {
        return Ok(None);
    }
    let mut orders = vec![by_commit.clone()];
    orders.extend(
        permutations(&committed)
            .into_iter()
            .filter(|o| *o != by_commit),
    );
    let mut cmp = Comparison {
        orders: vec![],
        equivalent: None,
        serial: vec![],
        mask: Mask::new(scratch, seed, txns),
    };
    for order in orders {
        let s = serial(scratch, seed, txns, level, &order)?;
        let same = same_outcome(c, &s, &committed, &cmp.mask);
        cmp.orders.push(order.clone());
        cmp.serial.push(s);
        if same {
            cmp.equivalent = Some(order);
            break;
        }
    }
    Ok(Some(cmp))
}

/// Per program: its parameters and how each is used (compared with a
/// text column, put into an inserted key, of a date or boolean type).
fn param_uses(
    scratch: &mut Scratch,
    sources: &Sources,
    w: &Workload,
    prov: &Provenance,
) -> Vec<Vec<(String, Use)>> {
    let mut params: Vec<Vec<(String, Use)>> = vec![];
    for (p, nodes) in sources.programs.iter().enumerate() {
        let mut uses: HashMap<String, Use> = HashMap::new();
        if let Some(prog) = w.programs.get(p) {
            for (q, st) in prog.statements.iter().enumerate() {
                let rel = w.schema.rel(st.rel);
                for (attr, v) in prov.pins(p, q) {
                    let Value::Param(name) = v else { continue };
                    let col = scratch.table(&rel.name).and_then(|t| {
                        let a = rel.attributes.get(*attr)?.trim_matches('"').to_string();
                        t.columns.iter().find(|c| c.name.eq_ignore_ascii_case(&a))
                    });
                    let u = uses.entry(name.clone()).or_default();
                    u.text |= col.is_some_and(|c| is_text(c.oid));
                    let key = rel.primary_key.contains(attr)
                        || rel.unique_keys.iter().any(|k| k.contains(attr));
                    if st.ty == StmtType::Ins && key {
                        u.inserted_key = true;
                        u.key_type = col.map(|c| (c.oid, c.type_name.clone()));
                    }
                }
            }
        }
        let types = super::executor::param_types(scratch.admin(), nodes);
        params.push(
            parameters(nodes)
                .into_iter()
                .map(|n| {
                    let mut u = uses.get(&n).cloned().unwrap_or_default();
                    u.other = types
                        .get(&n)
                        .filter(|t| {
                            [Type::DATE, Type::TIMESTAMP, Type::TIMESTAMPTZ, Type::BOOL].contains(t)
                        })
                        .map(|t| t.oid());
                    (n, u)
                })
                .collect(),
        );
    }
    params
}

/// The value a round's parameters lean to (`Options::focus`): none,
/// a skewed draw on drawn-row rounds, else a uniform one.
fn round_focus(percent: u64, round: usize, keys: usize, rng: &mut Rng) -> usize {
    if percent == 0 {
        0
    } else if round % 2 == 1 {
        skewed(rng, keys)
    } else {
        rng.below(keys.max(1)) + 1
    }
}

/// Per program, its routine's DECLAREd variables with their types (as
/// witness replay converts them; empty for a program that is no routine).
fn declared_types(
    scratch: &mut super::scratch::Scratch,
    sources: &Sources,
    programs: usize,
) -> Vec<Arc<BTreeMap<String, super::retype::Declared>>> {
    (0..programs)
        .map(|p| match sources.routines.get(p).and_then(Option::as_ref) {
            Some(r) => Arc::new(super::retype::variable_types(scratch.admin(), r)),
            None => Arc::default(),
        })
        .collect()
}

/// What one round draws its transactions from.
struct Draw<'a> {
    cfg: &'a RandomConfig,
    round: usize,
    programs: usize,
    params: &'a [Vec<(String, Use)>],
    declared: &'a [Arc<BTreeMap<String, super::retype::Declared>>],
    /// (percent, value): a parameter takes the round's value with that
    /// probability.
    focus: (u64, usize),
}

impl Draw<'_> {
    /// `cfg.txns` random program instances.
    fn txns(&self, sources: &Sources, w: &Workload, rng: &mut Rng, fresh: &mut u64) -> Vec<Txn> {
        let mut txns = vec![];
        for t in 0..self.cfg.txns.max(1) {
            let p = rng.below(self.programs);
            let mut bound = BTreeMap::new();
            for (name, u) in &self.params[p] {
                bound.insert(name.clone(), self.value(name, u, rng, fresh));
            }
            // Application choices (`choices:`): drawn anew at every
            // condition, from a seed of this instance's.
            let choices = (!sources.choices.is_empty()).then(|| {
                Arc::new(super::executor::Choices {
                    names: sources.choices.clone(),
                    path: vec![],
                    random: Some(rng.next_u64()),
                })
            });
            txns.push(Txn {
                name: format!("T{} = {}", t + 1, w.programs[p].name),
                program: Arc::new(sources.programs[p].clone()),
                params: bound,
                observe_conditions: true,
                choices,
                declared: self.declared.get(p).cloned().unwrap_or_default(),
            });
        }
        txns
    }

    /// A value for parameter `name`: a fresh key for an inserted key,
    /// else one of the seeded rows' (skewed on drawn-row rounds).
    fn value(&self, name: &str, u: &Use, rng: &mut Rng, fresh: &mut u64) -> Val {
        if u.inserted_key {
            *fresh += 1;
            return match &u.key_type {
                Some((oid, ty)) if is_number(*oid) => {
                    Val::untyped(super::witness::fit_number(*fresh, ty))
                }
                Some((oid, ty)) if is_text(*oid) => {
                    Val::untyped(super::witness::fit_text(*fresh, ty))
                }
                _ => Val::untyped(fresh.to_string()),
            };
        }
        let r = if self.focus.0 > 0 && rng.chance(self.focus.0) {
            self.focus.1
        } else if self.round % 2 == 1 {
            skewed(rng, self.cfg.keys)
        } else {
            rng.below(self.cfg.keys) + 1
        };
        let other = u.other.and_then(|oid| {
            let col = Column::of_type(name, oid, "");
            cell(&col, r)
        });
        if let Some(v) = other {
            v
        } else if u.text {
            Val::untyped(format!("k{r}"))
        } else {
            Val::untyped(r.to_string())
        }
    }
}

/// `keys` rows per table, parents first (tables ordered by their
/// foreign keys as PostgreSQL reports them).
pub(crate) fn seed_rows(scratch: &Scratch, keys: usize) -> Vec<SeedRow> {
    let mut out = vec![];
    for t in &scratch.tables {
        for i in 1..=keys {
            let values = t
                .columns
                .iter()
                .filter(|c| !c.has_default)
                .filter_map(|c| cell(c, i).map(|v| (c.name.clone(), v)))
                .collect();
            out.push(SeedRow {
                table: t.name.clone(),
                values,
            });
        }
    }
    let order = scratch.parents_first();
    out.sort_by_key(|r| {
        order
            .iter()
            .position(|t| *t == r.table)
            .unwrap_or(usize::MAX)
    });
    out
}

/// The columns of the scratch schema's unique indexes (primary keys
/// included) and its foreign keys, from the catalog.
#[derive(Default)]
struct Keys {
    /// (table, column).
    unique: Vec<(String, String)>,
    /// (table, columns, parent table, parent columns).
    foreign: Vec<(String, Vec<String>, String, Vec<String>)>,
    /// The tables, parents first.
    order: Vec<String>,
}

impl Keys {
    fn of(scratch: &mut Scratch) -> Keys {
        let order = scratch.parents_first();
        let schema = scratch.namespaces();
        let c = scratch.admin();
        let unique = c
            .query(
                "SELECT t.relname::text, a.attname::text FROM pg_index i
                 JOIN pg_class t ON t.oid = i.indrelid
                 JOIN pg_namespace n ON n.oid = t.relnamespace
                 JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = ANY(i.indkey)
                 WHERE i.indisunique AND n.nspname = ANY($1)",
                &[&schema],
            )
            .map(|rows| rows.iter().map(|r| (r.get(0), r.get(1))).collect())
            .unwrap_or_default();
        let cols = |key: &str, rel: &str| {
            format!(
                "ARRAY(SELECT a.attname::text FROM unnest(f.{key}) WITH ORDINALITY u(k, o)
                 JOIN pg_attribute a ON a.attrelid = f.{rel} AND a.attnum = u.k ORDER BY u.o)"
            )
        };
        let foreign = c
            .query(
                &format!(
                    "SELECT k.relname::text, {}, p.relname::text, {} FROM pg_constraint f
                     JOIN pg_class k ON k.oid = f.conrelid JOIN pg_class p ON p.oid = f.confrelid
                     JOIN pg_namespace n ON n.oid = k.relnamespace
                     WHERE f.contype = 'f' AND n.nspname = ANY($1)",
                    cols("conkey", "conrelid"),
                    cols("confkey", "confrelid")
                ),
                &[&schema],
            )
            .map(|rows| {
                rows.iter()
                    .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
                    .collect()
            })
            .unwrap_or_default();
        Keys {
            unique,
            foreign,
            order,
        }
    }

    fn is_unique(&self, table: &str, column: &str) -> bool {
        self.unique.iter().any(|(t, c)| t == table && c == column)
    }
}

/// Per table, the position of its first column (in table order) that a
/// unique index covers: what identifies a row in [`Breakdown`].
fn key_columns(scratch: &Scratch, keys: &Keys) -> HashMap<String, usize> {
    scratch
        .tables
        .iter()
        .filter_map(|t| {
            let i = t
                .columns
                .iter()
                .position(|c| keys.is_unique(&t.name, &c.name))?;
            Some((t.name.clone(), i))
        })
        .collect()
}

/// 1 with probability 2/3, else a number drawn from 1..=n: drawn rows
/// and parameters meet on 1 often (a predicate matches several rows),
/// and rows holding another value match none of those predicates.
fn skewed(rng: &mut Rng, n: usize) -> usize {
    if rng.below(3) < 2 {
        1
    } else {
        rng.below(n.max(1)) + 1
    }
}

/// `keys` rows per table whose values spread (see the module comment),
/// parents first.
fn spread_rows(scratch: &Scratch, keys: &Keys, n: usize, rng: &mut Rng) -> Vec<SeedRow> {
    let mut out = vec![];
    for t in &scratch.tables {
        for i in 1..=n {
            // Per foreign key: the parent row this row points at. A key
            // column in it keeps row i's parent (i), as it must stay i;
            // a self-reference points at a row already inserted.
            let mut parent: HashMap<&str, usize> = HashMap::new();
            for (_, cols, p, _) in keys.foreign.iter().filter(|f| f.0 == t.name) {
                let j = if cols.iter().any(|c| keys.is_unique(&t.name, c)) {
                    i
                } else if *p == t.name {
                    rng.below(i) + 1
                } else {
                    skewed(rng, n)
                };
                for c in cols {
                    parent.entry(c.as_str()).or_insert(j);
                }
            }
            let values = t
                .columns
                .iter()
                .filter(|c| !c.has_default)
                .filter_map(|c| {
                    let r = if keys.is_unique(&t.name, &c.name) {
                        i
                    } else if let Some(&j) = parent.get(c.name.as_str()) {
                        j
                    } else {
                        skewed(rng, n)
                    };
                    cell(c, r).map(|v| (c.name.clone(), v))
                })
                .collect();
            out.push(SeedRow {
                table: t.name.clone(),
                values,
            });
        }
    }
    out.sort_by_key(|r| {
        keys.order
            .iter()
            .position(|t| *t == r.table)
            .unwrap_or(usize::MAX)
    });
    out
}
