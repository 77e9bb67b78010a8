//! Bounded schedule explorer: looks for a concrete schedule allowed under
//! MVRC (Definition 3.3) that is not conflict serializable (Theorem 3.2:
//! its serialization graph has a cycle), over at most `k` transactions
//! instantiated from the LTPs of a summary graph and a small tuple domain.
//!
//! The static test (Algorithm 2) is sufficient, not necessary: a "not
//! robust" may be a false alarm. [`confirm`] searches the programs of one
//! witness cycle and returns a counterexample [`Schedule`] or "not
//! confirmed within bounds"; [`explore`] searches the whole workload
//! independently of the static test (the soundness harness compares the
//! two). A schedule found is a real counterexample (every step is allowed
//! by the semantics in `mvrc`); "nothing found" only speaks for the
//! bounds, which every answer carries. [`explore_at`] runs each program
//! at its own level (READ COMMITTED or REPEATABLE READ). [`verify`]
//! re-checks a schedule from the paper's definitions, independently of
//! the search. `docs/explorer.md` gives the semantics, the bounds and the
//! reductions.
//!
//! Modules: `instance` (transactions and tuples, Section 5.2, symmetry),
//! `mvrc` (the schedules a level allows and SeG(s), the search),
//! `schedule` (the answer as data), `verify` (the independent check),
//! `values` (instances with values), `limits` (reads that return fewer
//! rows than they match: only dependencies that change their result),
//! `guide` (valuations whose transactions can all meet on one cycle),
//! `split` (split schedules first: one transaction's prefix, the others
//! serially, its rest).
//!
//! Depends on `model` and the summary graph's nodes; never prints.

mod cycles;
mod guide;
mod instance;
mod limits;
mod mvrc;
mod schedule;
mod split;
mod unevaluated;
mod valuation;
mod values;
mod verify;
mod verify_values;

use std::fmt;
use std::ops::ControlFlow;

pub use schedule::TupleKind;
pub use schedule::{
    DepKind, Dependency, Final, Op, OpKind, Schedule, Seen, Step, StmtKind, Transaction, Tuple,
    ValueFacts, Values, FRESH_VALUE,
};
pub use verify::verify;
pub use verify_values::verify_values;

use crate::analysis::graph::SummaryGraph;
use crate::analysis::robustness::Witness;
use crate::model::btp::Workload;
use crate::model::isolation::{Allocation, Level};
use crate::model::provenance::Provenance;

/// How far the search goes. Every answer states them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Bounds {
    /// At most this many concurrent transactions (k; at least 2).
    pub max_txns: usize,
    /// Shared tuples per relation in the initial database (inserted tuples
    /// and tuples only one transaction touches come on top).
    pub tuples_per_relation: usize,
    /// Stop after visiting this many search states in total.
    pub max_states: u64,
    /// Partial-order reduction (state merging and ample sets, see `mvrc`).
    /// Off only to test that it loses nothing.
    pub reduce: bool,
}

impl Default for Bounds {
    fn default() -> Bounds {
        Bounds {
            max_txns: 3,
            tuples_per_relation: 2,
            max_states: 1_000_000,
            reduce: true,
        }
    }
}

impl fmt::Display for Bounds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "k ≤ {} transactions, {} shared tuples per relation, ≤ {} states",
            self.max_txns, self.tuples_per_relation, self.max_states
        )
    }
}

/// What a search covered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Transaction sets with their tuple assignments (after symmetry).
    pub instances: u64,
    /// Distinct search states (partial schedules up to reordering of
    /// independent steps).
    pub states: u64,
    /// Distinct complete schedules reached.
    pub schedules: u64,
    /// The state budget ran out: the bounds were not searched completely.
    pub exhausted: bool,
    /// `confirm`: the dangerous cycles of the witness's component whose
    /// programs were searched (the witness first, then up to
    /// [`FURTHER_CYCLES`] others with other program sets).
    pub cycles: u64,
    /// Nothing found, but a schedule exists when the parts of one SQL
    /// statement may read different snapshots (the BTP model's reading):
    /// it commits another transaction between them, which PostgreSQL's
    /// one snapshot per statement rules out (issue 23, item 2).
    pub split: bool,
    /// The schedule found is a split schedule, found by the cheap pass
    /// before the full search (`split`; docs/explorer.md).
    pub by_split_pass: bool,
    /// Sets of the alarm's programs with one of them repeated that k
    /// left out (a cycle through them may need two instances of one
    /// program, as TPC-C's anomaly under snapshot isolation needs two
    /// NewOrders): the smallest number of transactions that searches
    /// some of them (at most 8), 0 when none was left out.
    pub more_txns: usize,
}

impl Stats {
    fn add(&mut self, other: &Stats) {
        self.instances += other.instances;
        self.states += other.states;
        self.schedules += other.schedules;
        self.exhausted |= other.exhausted;
        self.cycles += other.cycles;
        self.split |= other.split;
        self.by_split_pass |= other.by_split_pass;
        if other.more_txns > 0 && (self.more_txns == 0 || other.more_txns < self.more_txns) {
            self.more_txns = other.more_txns;
        }
    }
}

/// How many dangerous cycles of a component besides the witness
/// `confirm` searches (issue 23, item 3), within one state budget.
pub const FURTHER_CYCLES: usize = 16;

/// What the explorer does not model: a real anomaly of these kinds may
/// exist although no schedule is found within the bounds
/// (docs/explorer.md, "What is modelled").
pub const NOT_MODELLED: &[&str] = &[
    "more transactions, more shared rows per relation or more loop iterations than the bounds",
    "a key-based statement that finds no row: the model ends the transaction there (Section 5.4; with values only a key that is NULL, read from no row, finds no row and goes on), PostgreSQL's UPDATE, DELETE or SELECT INTO goes on with no row, and a failing statement caught by an EXCEPTION handler goes on too",
    "a transaction that commits while another's statement runs without waiting for it (a statement runs at one instant, or waits for row locks and resumes)",
    "row locks of predicate SELECT … FOR UPDATE/SHARE (read as plain predicate reads), FOR UPDATE blocking FOR UPDATE (modelled as FOR SHARE), and REPEATABLE READ predicate updates waiting for a row lock",
    "lock-queue order: a writer that blocked on a row before a predicate UPDATE/DELETE started waiting for it is served after that statement",
    "predicate statements on a foreign key's children touch only the children of the parent the program fixed",
    "a FOR UPDATE/SHARE key read in a later part of a SQL statement (a subquery or CTE) of a row changed since the statement's snapshot: PostgreSQL locks and returns the new version, the model leaves that schedule out",
];

/// The answer of [`explore`].
#[derive(Debug, Clone)]
pub struct Exploration {
    /// A non-serializable MVRC schedule, if one was found.
    pub found: Option<Schedule>,
    pub explored: Stats,
    pub bounds: Bounds,
    /// Why the search did not run (a relation wider than 128 attributes).
    pub skipped: Option<String>,
}

/// The answer of [`confirm`] for one witness.
#[derive(Debug, Clone)]
pub enum Confirmation {
    Confirmed(Schedule),
    /// No counterexample among the programs of the witness, nor of up to
    /// [`FURTHER_CYCLES`] other dangerous cycles of its component, within
    /// the bounds: the cycle may be a false alarm of the static test, or
    /// need more than the bounds or what the explorer does not model
    /// ([`NOT_MODELLED`]).
    NotWithinBounds {
        bounds: Bounds,
        explored: Stats,
    },
    /// The search did not run (why: a program analysed through an
    /// over-approximation, a level the explorer does not model, …).
    NotChecked(String),
}

/// Searches all LTPs of the graph (independently of the static test).
pub fn explore(w: &Workload, g: &SummaryGraph, bounds: Bounds) -> Exploration {
    let nodes: Vec<usize> = (0..g.nodes.len()).collect();
    explore_nodes(w, g, &nodes, bounds)
}

/// The summary-graph nodes on a witness cycle, sorted, each once.
pub fn witness_nodes(witness: &Witness) -> Vec<usize> {
    let mut nodes: Vec<usize> = witness
        .edges
        .iter()
        .flat_map(|e| [e.from as usize, e.to as usize])
        .collect();
    nodes.sort_unstable();
    nodes.dedup();
    nodes
}

/// Searches the LTPs on the witness cycle: multisets of them of size 2 to
/// `k`, repeats allowed (two instances of one program).
pub fn confirm(w: &Workload, g: &SummaryGraph, witness: &Witness, bounds: Bounds) -> Confirmation {
    let alloc = Allocation::uniform(w.programs.len(), Level::ReadCommitted);
    confirm_at(w, g, witness, bounds, &alloc)
}

/// [`confirm`] with each program at its level in `alloc` (a cycle that
/// is dangerous under a deployed allocation, docs/allocation.md). Only
/// the levels of the cycle's programs matter.
pub fn confirm_at(
    w: &Workload,
    g: &SummaryGraph,
    witness: &Witness,
    bounds: Bounds,
    alloc: &Allocation,
) -> Confirmation {
    confirm_in(w, &Provenance::default(), g, witness, bounds, alloc)
}

/// [`confirm_at`] with the front-end's provenance: schedules of program
/// instances with values first (issue 23, item 1; `values`), the BTP
/// model's as the fallback, labelled `Schedule::model_only`. A cycle
/// confirmed in the model only does not stop the search of the other
/// cycles of the component, which may be confirmed with values.
pub fn confirm_in(
    w: &Workload,
    prov: &Provenance,
    g: &SummaryGraph,
    witness: &Witness,
    bounds: Bounds,
    alloc: &Allocation,
) -> Confirmation {
    let mut explored = Stats::default();
    // Why the witness itself could not be searched, if so.
    let mut unchecked: Option<String> = None;
    let mut further: Option<Vec<Witness>> = None;
    // With values first, over the sets of every cycle of the component at
    // once, cheapest first, within half the budget: the BTP model's
    // schedules (below, with the rest) are only the fallback.
    let mut why_model: Option<String> = None;
    if !prov.programs.is_empty() {
        let more = further
            .get_or_insert_with(|| cycles::further(g, witness, alloc, FURTHER_CYCLES))
            .clone();
        let cycles: Vec<&Witness> = std::iter::once(witness).chain(more.iter()).collect();
        let (found, why, spent) = confirm_values(w, prov, g, &cycles, bounds, alloc);
        if let Some(s) = found {
            return Confirmation::Confirmed(s);
        }
        why_model = Some(why);
        explored.add(&Stats {
            exhausted: false,
            ..spent
        });
    }
    let mut raised = bounds.max_txns;
    // First every cycle within the user's k (as before); then, with the
    // budget left, the cycles through more programs than k with k raised
    // to their number of programs (issue 23, item 3; TPC-C's anomaly
    // under snapshot isolation needs four). 8 is the search's limit.
    for raise in [false, true] {
        let mut searched: Vec<std::collections::BTreeSet<u32>> = vec![];
        let mut n = 0;
        loop {
            let wit = if n == 0 {
                witness.clone()
            } else {
                let more = further
                    .get_or_insert_with(|| cycles::further(g, witness, alloc, FURTHER_CYCLES));
                match more.get(n - 1) {
                    Some(x) => x.clone(),
                    None => break,
                }
            };
            n += 1;
            let set = cycles::nodes_of(&wit);
            let k = if raise {
                set.len().min(8)
            } else {
                bounds.max_txns
            };
            if (raise && k <= bounds.max_txns) || searched.iter().any(|s| set.is_subset(s)) {
                continue;
            }
            let budget = bounds.max_states.saturating_sub(explored.states);
            if budget == 0 {
                explored.exhausted = true;
                break;
            }
            let part = Bounds {
                max_states: budget,
                max_txns: k,
                ..bounds
            };
            let model = ModelPass {
                prov,
                why: why_model.as_deref(),
            };
            match confirm_one(w, model, g, &wit, part, alloc) {
                Confirmation::Confirmed(mut s) => {
                    s.bounds = Bounds {
                        max_txns: k,
                        ..bounds
                    };
                    if n > 1 {
                        s.via = Some(wit);
                    }
                    // With values or in the model only: the value pass
                    // already searched every cycle.
                    return Confirmation::Confirmed(s);
                }
                Confirmation::NotWithinBounds { explored: e, .. } => {
                    raised = raised.max(k);
                    explored.add(&e);
                    if !raise {
                        explored.cycles += 1;
                    }
                    if e.exhausted {
                        break;
                    }
                    searched.push(set);
                }
                Confirmation::NotChecked(why) => {
                    if n == 1 && !raise {
                        unchecked = Some(why);
                    }
                }
            }
        }
        if explored.exhausted {
            break;
        }
    }
    match unchecked {
        Some(why) => Confirmation::NotChecked(why),
        None => Confirmation::NotWithinBounds {
            bounds: Bounds {
                max_txns: raised,
                ..bounds
            },
            explored,
        },
    }
}

/// `confirm_in`'s model pass: the provenance (only to know the input had
/// values) and why the value pass found nothing.
#[derive(Clone, Copy)]
struct ModelPass<'a> {
    prov: &'a Provenance,
    why: Option<&'a str>,
}

/// The search of one cycle's programs, each at its level in `alloc`, in
/// the BTP model (the value pass ran before, over every cycle).
fn confirm_one(
    w: &Workload,
    model: ModelPass,
    g: &SummaryGraph,
    witness: &Witness,
    bounds: Bounds,
    alloc: &Allocation,
) -> Confirmation {
    let nodes = witness_nodes(witness);
    let mut on_cycle = Allocation::uniform(w.programs.len(), Level::ReadCommitted);
    for &v in &nodes {
        let p = g.nodes[v].ltp.program;
        on_cycle.0[p] = alloc.level(p);
    }
    // An approximate node joins several unfoldings (`unfold::Mode`): a
    // schedule of it need not be a schedule of the program.
    if let Some(&v) = nodes
        .iter()
        .find(|&&v| g.nodes[v].ltp.mode != crate::analysis::unfold::Mode::Literal)
    {
        return Confirmation::NotChecked(format!(
            "the cycle runs through `{}`, which is analysed through an over-approximation",
            g.nodes[v].name
        ));
    }
    let e = explore_model(w, model, g, &nodes, bounds, &on_cycle, true);
    match (e.found, e.skipped) {
        (Some(s), _) => Confirmation::Confirmed(s),
        (None, Some(why)) => Confirmation::NotChecked(why),
        (None, None) => {
            let mut explored = e.explored;
            // Why not: would the schedule need a commit inside a statement?
            let parts = nodes.iter().any(|&v| {
                let ltp = &g.nodes[v].ltp;
                (1..ltp.occurrences.len()).any(|p| instance::continues(w, ltp, p))
            });
            if parts && !explored.exhausted {
                let loose = explore_model(w, model, g, &nodes, bounds, &on_cycle, false);
                explored.split = loose.found.is_some();
            }
            Confirmation::NotWithinBounds { bounds, explored }
        }
    }
}

/// Searches transaction sets drawn from `nodes` (summary-graph node
/// indices), smallest sets first, at READ COMMITTED.
pub fn explore_nodes(
    w: &Workload,
    g: &SummaryGraph,
    nodes: &[usize],
    bounds: Bounds,
) -> Exploration {
    let alloc = Allocation::uniform(w.programs.len(), Level::ReadCommitted);
    explore_at(w, g, nodes, bounds, &alloc)
}

/// [`explore_nodes`] with each program at its level in `alloc`: READ
/// COMMITTED, REPEATABLE READ (snapshot isolation, first updater wins) or
/// SERIALIZABLE (snapshot isolation, plus PostgreSQL's SSI abort of a
/// dangerous structure among SERIALIZABLE transactions whose T_out
/// commits first — the rule docs/allocation.md relies on, not
/// PostgreSQL's extra, conservative aborts).
pub fn explore_at(
    w: &Workload,
    g: &SummaryGraph,
    nodes: &[usize],
    bounds: Bounds,
    alloc: &Allocation,
) -> Exploration {
    explore_with(w, &Provenance::default(), g, nodes, bounds, alloc, true)
}

/// [`explore_at`] with the front-end's provenance: with values first,
/// the BTP model as the fallback (`Schedule::model_only`), as
/// [`confirm_in`].
pub fn explore_in(
    w: &Workload,
    prov: &Provenance,
    g: &SummaryGraph,
    nodes: &[usize],
    bounds: Bounds,
    alloc: &Allocation,
) -> Exploration {
    explore_with(w, prov, g, nodes, bounds, alloc, true)
}

/// Searches exactly one multiset of LTPs (`set`, summary-graph nodes,
/// repeats for several instances of one program), with values first and
/// the BTP model as the fallback, as [`explore_in`]: for a cycle known to
/// need these transactions (TPC-C's four under snapshot isolation), where
/// searching every smaller set first would spend the budget.
pub fn explore_set(
    w: &Workload,
    prov: &Provenance,
    g: &SummaryGraph,
    set: &[usize],
    bounds: Bounds,
    alloc: &Allocation,
) -> Exploration {
    let mut set = set.to_vec();
    set.sort_unstable();
    let mut out = Exploration {
        found: None,
        explored: Stats::default(),
        bounds,
        skipped: skip_reason(w, g, &set),
    };
    if out.skipped.is_some() || set.len() > 8 {
        return out;
    }
    let sets = [set];
    let mut why: Option<String> = None;
    if !prov.programs.is_empty() {
        let half = Bounds {
            max_states: bounds.max_states / 2,
            ..bounds
        };
        spread(w, prov, g, &sets[0], half, alloc, &mut why, &mut out);
        if out.found.is_some() {
            return out;
        }
        if out.explored.exhausted {
            why = Some(out_of_budget(half));
        }
        out.explored.exhausted = false;
    }
    search_sets(w, g, &sets, bounds, alloc, true, None, &mut out);
    if let (Some(s), false) = (&mut out.found, prov.programs.is_empty()) {
        s.model_only = Some(why.unwrap_or_else(|| NO_VALUES.into()));
    }
    out
}

/// The value search of [`explore_set`]: every instance's valuations
/// first, then each (instance, valuation) searched with an equal share of
/// the states left, so that the first instances' valuations cannot spend
/// the budget of the one that holds the schedule.
#[allow(clippy::too_many_arguments)]
fn spread(
    w: &Workload,
    prov: &Provenance,
    g: &SummaryGraph,
    set: &[usize],
    bounds: Bounds,
    alloc: &Allocation,
    why: &mut Option<String>,
    out: &mut Exploration,
) {
    let mut work: Vec<instance::Instance> = vec![];
    let mut many = false;
    let walk = instance::instances(
        w,
        g,
        set,
        bounds.tuples_per_relation,
        alloc,
        bounds.max_states,
        &mut |inst| {
            let mut x = inst.clone();
            // Only valuations whose transactions can all meet on one
            // cycle count against the cap (`guide`).
            let meets = |v: &valuation::Valuation| guide::meets_all_with(&x, v);
            match values::valuations_where(w, g, prov, &x, &meets, &mut 0) {
                Ok(vs) => {
                    values::mark_key_share(g, prov, &mut x);
                    limits::mark_limited(g, prov, &mut x);
                    values::mark_parts(g, prov, &mut x);
                    for v in vs {
                        x.vals = Some(v);
                        work.push(x.clone());
                    }
                }
                Err(e) => {
                    why.get_or_insert(e);
                }
            }
            // Each (instance, valuation) is searched with a state at least.
            if work.len() as u64 >= bounds.max_states {
                many = true;
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        },
    );
    out.explored.states += walk.work;
    out.explored.exhausted |= walk.cut || many;
    let nrel = w.schema.relations.len();
    // Only pairs whose transactions can all meet on one cycle (`guide`).
    work.retain(guide::meets_all);
    // Split schedules of every pair first (`split`): cheap, and the pair
    // that holds one may come last.
    for x in &work {
        let left = bounds.max_states.saturating_sub(out.explored.states);
        let (found, spent) = split_pass(x, nrel, left, bounds.reduce);
        out.explored.add(&spent);
        if let Some((path, end)) = found {
            out.found = Some(build(w, g, x, path, &end, bounds));
            return;
        }
    }
    for (i, x) in work.iter().enumerate() {
        let left = bounds.max_states.saturating_sub(out.explored.states);
        let share = left / (work.len() - i) as u64;
        let mut search = mvrc::Search::new(x, nrel, share, bounds.reduce);
        let found = search.run(search.initial());
        out.explored.add(&Stats {
            instances: 1,
            states: search.states,
            schedules: search.schedules,
            exhausted: search.exhausted,
            ..Stats::default()
        });
        if let Some(end) = found {
            out.found = Some(build(w, g, x, search.path, &end, bounds));
            return;
        }
        if search.soft_cycle {
            *why = Some(limits::reason(w, g, x));
        }
    }
}

/// Why a search of `nodes` cannot run, if so.
fn skip_reason(w: &Workload, g: &SummaryGraph, nodes: &[usize]) -> Option<String> {
    if let Some(r) = w
        .schema
        .relations
        .iter()
        .find(|r| r.arity() > instance::MAX_ARITY)
    {
        return Some(format!(
            "relation `{}` has more than {} attributes",
            r.name,
            instance::MAX_ARITY
        ));
    }
    // Program counters are bytes; an LTP this long is out of reach anyway.
    nodes
        .iter()
        .find(|&&v| g.nodes[v].ltp.occurrences.len() > 250)
        .map(|&v| format!("`{}` has more than 250 statements", g.nodes[v].name))
}

/// Why a schedule of the BTP model is not one with values, when the
/// search with values covered its bounds.
const NO_VALUES: &str = "within the bounds no schedule of the programs with values is non-serializable; this one needs what PostgreSQL does not do (a predicate that matches a row its values cannot match, a predicate UPDATE/DELETE that writes only some of the rows it matches, a DELETE that a foreign-key check's FOR KEY SHARE lock would block, a dependency on a row that a MIN, LIMIT or one-row INTO read matches but need not return, a commit between the reads of a STABLE or IMMUTABLE function and those of the statement that calls it (one snapshot on PostgreSQL), or a computed value other than the one the program computes)";

/// [`explore_at`]; `one_snapshot` off lets the parts of one SQL statement
/// read different snapshots (the BTP model alone), to tell why nothing
/// was found. With provenance, a first pass searches program instances
/// with values (`values`); the BTP model's search runs only when it finds
/// nothing, and what it finds is labelled `model_only`.
fn explore_with(
    w: &Workload,
    prov: &Provenance,
    g: &SummaryGraph,
    nodes: &[usize],
    bounds: Bounds,
    alloc: &Allocation,
    one_snapshot: bool,
) -> Exploration {
    let mut out = Exploration {
        found: None,
        explored: Stats::default(),
        bounds,
        skipped: skip_reason(w, g, nodes),
    };
    if out.skipped.is_some() {
        return out;
    }
    let sets = sets_of(nodes, bounds.max_txns);
    // BTP input (no provenance): the BTPs are the programs, as before.
    if prov.programs.is_empty() {
        search_sets(w, g, &sets, bounds, alloc, one_snapshot, None, &mut out);
        return out;
    }
    // With values first, within half the budget, cheapest sets first; the
    // BTP model with the rest (its schedules are labelled).
    let mut why: Option<String> = None;
    let half = Bounds {
        max_states: bounds.max_states / 2,
        ..bounds
    };
    let cheap = by_cost(g, sets.clone(), &|_| 0);
    let valued = Some((prov, &mut why));
    search_sets(w, g, &cheap, half, alloc, one_snapshot, valued, &mut out);
    if out.found.is_some() {
        return out;
    }
    let cut = out.explored.exhausted;
    out.explored.exhausted = false;
    if cut {
        why = Some(out_of_budget(half));
    }
    search_sets(w, g, &sets, bounds, alloc, one_snapshot, None, &mut out);
    out.explored.exhausted |= cut && out.found.is_none();
    if let Some(s) = &mut out.found {
        s.model_only = Some(why.unwrap_or_else(|| NO_VALUES.into()));
    }
    out
}

/// What a search that left out the sets with a repeated program says
/// (`Stats::more_txns`).
pub fn more_txns_hint(n: usize) -> String {
    format!("the sets of {n} transactions of the cycle's programs (more instances of one program) were not searched: raise --max-txns to {n} to search them")
}

/// The reason given when the search with values stopped at its budget:
/// what it searched, and which flag gives it more.
fn out_of_budget(b: Bounds) -> String {
    format!(
        "the search with values ran out of its budget ({} states) first (k ≤ {} transactions, {} shared tuples per relation; raise --max-states to search further)",
        b.max_states, b.max_txns, b.tuples_per_relation
    )
}

/// The BTP model's search of `confirm_one`, after the value pass: what it
/// finds is labelled `model_only` when the input had values.
fn explore_model(
    w: &Workload,
    model: ModelPass,
    g: &SummaryGraph,
    nodes: &[usize],
    bounds: Bounds,
    alloc: &Allocation,
    one_snapshot: bool,
) -> Exploration {
    let mut out = Exploration {
        found: None,
        explored: Stats::default(),
        bounds,
        skipped: skip_reason(w, g, nodes),
    };
    if out.skipped.is_some() {
        return out;
    }
    let sets = sets_of(nodes, bounds.max_txns);
    search_sets(w, g, &sets, bounds, alloc, one_snapshot, None, &mut out);
    if let (Some(s), false) = (&mut out.found, model.prov.programs.is_empty()) {
        s.model_only = Some(model.why.unwrap_or(NO_VALUES).to_string());
    }
    out
}

/// The value pass of [`confirm_in`]: the transaction sets of every cycle
/// in `cycles` (the witness first), each set once, within half of
/// `bounds`' states. Returns the schedule found (`via` the cycle whose set
/// it is, when not the witness), else why the model's schedules are not
/// ones with values; and the states spent.
///
/// The order (issue 23, item 3). First the pairs of every cycle, with up
/// to an eighth of the value budget (below). Then, with three quarters,
/// the sets of three or more that *cover* a cycle through the alarm's programs
/// (the witness's, or another cycle of the component through the same
/// programs, other unfoldings of them: TPC-C's anomaly under snapshot
/// isolation runs through Delivery's two-iteration unfolding, the witness
/// through its one-iteration one): one instance of every node of the
/// cycle, then with repeats up to k (`covering`). A schedule of a set
/// that leaves a node out is a schedule of a smaller cycle, which the
/// smaller sets below search anyway; the alarm is about the cycle through
/// all of them. Then, with the rest, the witness's other sets and the
/// other cycles' (`by_cost`), as before. The quarter kept back is what a
/// pair of another cycle needed before (the website-hits Hit/Purge pair
/// beside the Hit/Hit witness): the covering sets of a short cycle are
/// few and cheap, those of a long one may each use their whole share.
fn confirm_values(
    w: &Workload,
    prov: &Provenance,
    g: &SummaryGraph,
    cycles: &[&Witness],
    bounds: Bounds,
    alloc: &Allocation,
) -> (Option<Schedule>, String, Stats) {
    let half = Bounds {
        max_states: bounds.max_states / 2,
        ..bounds
    };
    let programs = |nodes: &[usize]| -> std::collections::BTreeSet<usize> {
        nodes.iter().map(|&v| g.nodes[v].ltp.program).collect()
    };
    let alarm = programs(&witness_nodes(cycles[0]));
    let mut more: Option<usize> = None;
    let mut owner: std::collections::HashMap<Vec<usize>, usize> = Default::default();
    let (mut cover, mut rest): (Vec<Vec<usize>>, Vec<Vec<usize>>) = (vec![], vec![]);
    for (i, c) in cycles.iter().enumerate() {
        let nodes = witness_nodes(c);
        // An approximate node joins several unfoldings: not a program.
        let approximate = nodes
            .iter()
            .any(|&v| g.nodes[v].ltp.mode != crate::analysis::unfold::Mode::Literal);
        if approximate || skip_reason(w, g, &nodes).is_some() {
            continue;
        }
        if programs(&nodes) == alarm {
            // k as `confirm_in` raises it for this cycle; one more would
            // add the sets with a repeat.
            let k = bounds.max_txns.max(nodes.len());
            if k < 8 && covering(g, &nodes, k + 1).iter().any(|s| s.len() > k) {
                more = Some(more.map_or(k + 1, |m: usize| m.min(k + 1)));
            }
            for set in covering(g, &nodes, bounds.max_txns) {
                if let std::collections::hash_map::Entry::Vacant(e) = owner.entry(set.clone()) {
                    e.insert(i);
                    cover.push(set);
                }
            }
        }
        let mut mine = sets_of(&nodes, bounds.max_txns);
        if nodes.len() > bounds.max_txns && nodes.len() <= 8 {
            mine.push(nodes.clone());
        }
        for set in mine {
            if let std::collections::hash_map::Entry::Vacant(e) = owner.entry(set.clone()) {
                e.insert(i);
                rest.push(set);
            }
        }
    }
    let rank = |set: &[usize]| owner.get(set).copied().unwrap_or(0);
    // Pairs first, of every cycle (`by_cost`: the witness's first), with
    // up to an eighth of the value budget: a two-transaction schedule is
    // the easiest to read and the one replay follows best, and pairs are
    // cheap (no split pass, few valuations; TPC-C's Delivery/OrderStatus
    // pair at READ COMMITTED is found after 33 states).
    let (pairs, cover): (Vec<Vec<usize>>, Vec<Vec<usize>>) =
        cover.into_iter().partition(|s| s.len() == 2);
    let (more_pairs, rest): (Vec<Vec<usize>>, Vec<Vec<usize>>) =
        rest.into_iter().partition(|s| s.len() == 2);
    let pairs = by_cost(g, pairs.into_iter().chain(more_pairs).collect(), &rank);
    let cover = by_cover(g, cover, &rank);
    let rest = by_cost(g, rest, &rank);
    let mut out = Exploration {
        found: None,
        explored: Stats::default(),
        bounds: half,
        skipped: None,
    };
    let mut why: Option<String> = None;
    let v = half.max_states;
    let phases = [(&pairs, v / 8), (&cover, v / 8 * 7), (&rest, v)];
    let mut hit = None;
    for (n, (sets, cap)) in phases.into_iter().enumerate() {
        let part = Bounds {
            max_states: cap,
            ..half
        };
        let i = if n == 1 {
            search_cover(w, g, prov, sets, part, alloc, &mut why, &mut out)
        } else {
            let valued = Some((prov, &mut why));
            search_sets(w, g, sets, part, alloc, true, valued, &mut out)
        };
        hit = i.map(|i| &sets[i]);
        if out.found.is_some() {
            break;
        }
    }
    let mut why = if out.explored.exhausted {
        out_of_budget(half)
    } else {
        why.unwrap_or_else(|| NO_VALUES.into())
    };
    if let Some(n) = more {
        why.push_str(&format!("; {}", more_txns_hint(n)));
        out.explored.more_txns = n;
    }
    let found = out.found.take().map(|mut s| {
        s.bounds = Bounds {
            max_txns: bounds.max_txns.max(hit.map_or(0, Vec::len)),
            ..bounds
        };
        match hit.and_then(|set| owner.get(set)) {
            Some(&i) if i > 0 => s.via = Some(cycles[i].clone()),
            _ => {}
        }
        s
    });
    (found, why, out.explored)
}

/// The covering phase of `confirm_values`, in three rounds within
/// `bounds`' (cumulative) cap. A probe with a quarter of the phase's
/// states, shared equally, finishes the cheap sets; then the sets it cut
/// that had found valuations whose transactions all meet (`SetRun`) share
/// most of the rest, and the sets it cut before finding any get what is
/// left. Measured on TPC-C under snapshot isolation (k = 4, release): of
/// the 48 covering sets about half (OrderStatus by last name beside
/// NewOrder and Delivery) spend any share making candidate valuations the
/// guide rejects (87,132 states for one, none kept), while the anomaly's
/// set keeps one valuation in 70 and needs ~240,000 states of walk to
/// reach it; equal shares gave it a 48th. Returns the index in `sets` of
/// the set of the schedule found.
#[allow(clippy::too_many_arguments)]
fn search_cover(
    w: &Workload,
    g: &SummaryGraph,
    prov: &Provenance,
    sets: &[Vec<usize>],
    bounds: Bounds,
    alloc: &Allocation,
    why: &mut Option<String>,
    out: &mut Exploration,
) -> Option<usize> {
    let start = out.explored.states;
    let budget = bounds.max_states.saturating_sub(start);
    let probe = Bounds {
        max_states: start + budget / 4,
        ..bounds
    };
    let mut runs = vec![];
    let was = out.explored.exhausted;
    let valued = Some((prov, &mut *why));
    if let Some(i) = search_runs(w, g, sets, probe, alloc, true, valued, out, &mut runs) {
        return Some(i);
    }
    // The probe's cuts are not the phase's: every set it cut is searched
    // again below, and says so if it is cut there.
    out.explored.exhausted = was;
    let again = |i: &usize| runs.get(*i).is_none_or(|r| r.cut);
    let (fed, idle): (Vec<usize>, Vec<usize>) = (0..sets.len())
        .filter(again)
        .partition(|&i| runs.get(i).is_none_or(|r| r.items > 0));
    let rounds = [(fed, start + budget / 8 * 7), (idle, bounds.max_states)];
    for (ix, cap) in rounds {
        let part = Bounds {
            max_states: cap,
            ..bounds
        };
        let sub: Vec<Vec<usize>> = ix.iter().map(|&i| sets[i].clone()).collect();
        let valued = Some((prov, &mut *why));
        if let Some(j) = search_sets(w, g, &sub, part, alloc, true, valued, out) {
            return Some(ix[j]);
        }
    }
    None
}

/// The sets that cover every node of a cycle (`nodes`): each node once
/// (size = the cycle's length, even above k: k is raised to it, as in
/// `confirm_in`), then with repeats up to k. A repeat set is kept only
/// when its instances can be ordered into a cycle of summary-graph edges
/// (`guide::directed_cycle`): every dependency of a schedule is an edge
/// of the summary graph between the transactions' nodes (Section 6), so a
/// serialization-graph cycle through every instance needs one, and with a
/// repeated node a way from one of its instances to the other.
fn covering(g: &SummaryGraph, nodes: &[usize], k: usize) -> Vec<Vec<usize>> {
    if nodes.is_empty() || nodes.len() > 8 {
        return vec![];
    }
    let mut sets = vec![];
    if nodes.len() >= 2 {
        sets.push(nodes.to_vec());
    }
    for extra in 1..=k.min(8).saturating_sub(nodes.len()) {
        let _ = multisets(nodes, extra, 0, &mut vec![], &mut |more| {
            let mut set = nodes.to_vec();
            set.extend_from_slice(more);
            set.sort_unstable();
            if set.len() >= 2 && guide::directed_cycle(&edges_among(g, &set)) {
                sets.push(set);
            }
            ControlFlow::Continue(())
        });
    }
    sets
}

/// Bit b of entry a: the summary graph has an edge from `set[a]`'s node
/// to `set[b]`'s (a ≠ b; a node's instances need a self-edge).
fn edges_among(g: &SummaryGraph, set: &[usize]) -> Vec<u8> {
    let edge = |a: usize, b: usize| {
        g.edges[g.out_start[a]..g.out_start[a + 1]]
            .iter()
            .any(|e| e.to as usize == b)
    };
    (0..set.len())
        .map(|a| {
            (0..set.len())
                .filter(|&b| b != a && edge(set[a], set[b]))
                .fold(0u8, |m, b| m | 1 << b)
        })
        .collect()
}

/// The order of the covering sets: fewer transactions first (each node
/// once, then one repeat, …); the witness's own before other cycles';
/// then sets whose repeated nodes depend on themselves in the summary
/// graph (TPC-C's NewOrder → NewOrder on stock: the anomaly needs two
/// NewOrders meeting there; a repeat without a self-edge needs a longer
/// way round); then fewer statements.
fn by_cover(
    g: &SummaryGraph,
    mut sets: Vec<Vec<usize>>,
    rank: &dyn Fn(&[usize]) -> usize,
) -> Vec<Vec<usize>> {
    let looped = |v: usize| {
        g.edges[g.out_start[v]..g.out_start[v + 1]]
            .iter()
            .any(|e| e.to as usize == v)
    };
    sets.sort_by_cached_key(|set| {
        let statements: usize = set.iter().map(|&v| g.nodes[v].ltp.occurrences.len()).sum();
        let repeats_unlooped = set
            .windows(2)
            .filter(|p| p[0] == p[1] && !looped(p[0]))
            .count();
        (set.len(), rank(set).min(1), repeats_unlooped, statements)
    });
    sets
}

/// Every multiset of 2 to `k` (at most 8) elements of `nodes`, smallest
/// first.
fn sets_of(nodes: &[usize], k: usize) -> Vec<Vec<usize>> {
    let mut sets: Vec<Vec<usize>> = vec![];
    for size in 2..=k.clamp(2, 8) {
        let _ = multisets(nodes, size, 0, &mut vec![], &mut |set| {
            sets.push(set.to_vec());
            ControlFlow::Continue(())
        });
    }
    sets
}

/// The value search's order: the sets of the cycle shown (`rank` 0; the
/// alarm is about it) before the other cycles'; then fewer transactions;
/// then more distinct programs (two instances of one program use
/// up a share quickly); then fewer statements (a loop's one-iteration
/// unfolding before its two-iteration one: far fewer instances and
/// valuations). Stable.
fn by_cost(
    g: &SummaryGraph,
    mut sets: Vec<Vec<usize>>,
    rank: &dyn Fn(&[usize]) -> usize,
) -> Vec<Vec<usize>> {
    sets.sort_by_cached_key(|set| {
        let statements: usize = set.iter().map(|&v| g.nodes[v].ltp.occurrences.len()).sum();
        let mut p: Vec<usize> = set.iter().map(|&v| g.nodes[v].ltp.program).collect();
        p.sort_unstable();
        p.dedup();
        let other = rank(set).min(1);
        (other, set.len(), std::cmp::Reverse(p.len()), statements)
    });
    sets
}

/// One search over transaction sets in order: with values when `valued`
/// is given (recording in it why an instance could not be instantiated),
/// else in the BTP model. Returns the index of the set of the schedule
/// found.
#[allow(clippy::too_many_arguments)]
fn search_sets(
    w: &Workload,
    g: &SummaryGraph,
    sets: &[Vec<usize>],
    bounds: Bounds,
    alloc: &Allocation,
    one_snapshot: bool,
    valued: Option<(&Provenance, &mut Option<String>)>,
    out: &mut Exploration,
) -> Option<usize> {
    let mut runs = vec![];
    search_runs(
        w,
        g,
        sets,
        bounds,
        alloc,
        one_snapshot,
        valued,
        out,
        &mut runs,
    )
}

/// How the search of one transaction set ended (`search_runs`).
#[derive(Debug, Clone, Copy)]
struct SetRun {
    /// It stopped at its share: more states may find a schedule.
    cut: bool,
    /// (instance, valuation)s it found whose transactions can all meet on
    /// one cycle (`guide`): none means its share went to making
    /// candidate valuations the guide rejected.
    items: usize,
}

/// [`search_sets`], recording in `runs` how each set searched ended (in
/// order; sets after the one that found a schedule or spent the budget are
/// not searched and not recorded).
#[allow(clippy::too_many_arguments)]
fn search_runs(
    w: &Workload,
    g: &SummaryGraph,
    sets: &[Vec<usize>],
    bounds: Bounds,
    alloc: &Allocation,
    one_snapshot: bool,
    mut valued: Option<(&Provenance, &mut Option<String>)>,
    out: &mut Exploration,
    runs: &mut Vec<SetRun>,
) -> Option<usize> {
    // With values, each transaction set gets an equal share of the budget
    // left (one set's many valuations must not starve the others).
    let mut cut = false;
    let mut split_states = 0;
    for (i, set) in sets.iter().enumerate() {
        let left = bounds.max_states.saturating_sub(out.explored.states);
        let share = match valued {
            Some(_) => left / (sets.len() - i) as u64,
            None => left,
        };
        let cap = out.explored.states + share;
        let mut capped = false;
        // With values and three or more transactions, the split pass
        // (`split`) runs over every (instance, valuation) before any full
        // search: a full search takes thousands of states (TPC-C's four:
        // ~8,500), and after each valuation's pass it spent the set's
        // share before the pass reached the anomaly's (577th of 1,616).
        // Pairs as before, each valuation in full as it comes: cheap, and
        // the first schedule is the one replay follows (the pass's first,
        // on a HammerDB-like pay pair, took a path replay could not run).
        let valued_pass = valued.is_some();
        let collect = valued_pass && set.len() >= 3;
        let mut work: Vec<instance::Instance> = vec![];
        let mut items = 0;
        // Making the instances costs too (a canonical form each): at most
        // the set's share of assignments, and with values each counts as a
        // state of the budget (issue 23: before, generated workloads whose
        // instances had no valuation enumerated for minutes).
        let walk = instance::instances(
            w,
            g,
            set,
            bounds.tuples_per_relation,
            alloc,
            share,
            &mut |inst| {
                let mut x = inst.clone();
                if !one_snapshot {
                    x.txns
                        .iter_mut()
                        .for_each(|t| t.steps.iter_mut().for_each(|s| s.cont = false));
                }
                let mut made = 0;
                let vals = valuations_of(w, g, &mut x, &mut valued, one_snapshot, &mut made);
                // Making the valuations counts too (each candidate a state).
                if valued_pass && collect {
                    out.explored.states += made;
                    if out.explored.states >= cap {
                        capped = true;
                        return ControlFlow::Break(());
                    }
                }
                for v in vals {
                    x.vals = v;
                    // With values: only valuations whose transactions can
                    // all meet on one cycle (`guide`; the others' cycles
                    // are a smaller set's).
                    if valued_pass && !guide::meets_all(&x) {
                        continue;
                    }
                    items += 1;
                    if collect {
                        work.push(x.clone());
                        // Each is searched with a state at least.
                        if work.len() as u64 >= share {
                            capped = true;
                            return ControlFlow::Break(());
                        }
                        continue;
                    }
                    full_search(w, g, &x, cap, bounds, &mut valued, out, &mut capped)?;
                }
                ControlFlow::Continue(())
            },
        );
        if valued_pass {
            out.explored.states += walk.work;
        }
        split_states += split_all(w, g, &work, share, bounds, out);
        let work = if out.found.is_some() {
            &work[..0]
        } else {
            &work[..]
        };
        for x in work {
            if full_search(w, g, x, cap, bounds, &mut valued, out, &mut capped).is_break() {
                break;
            }
        }
        cut |= capped || (walk.cut && out.found.is_none());
        runs.push(SetRun {
            cut: capped || walk.cut,
            items,
        });
        if out.found.is_some() {
            out.explored.states += split_states;
            return Some(i);
        }
        // A set cut at its share: the next sets still get theirs.
        if out.explored.states >= bounds.max_states {
            break;
        }
    }
    out.explored.exhausted |= cut;
    out.explored.states += split_states;
    None
}

/// `work` in the split pass's order: the first (instance, valuation) of
/// every shape, then the second of every shape, and so on (stable within
/// a shape). A shape is what decides most whether a split schedule
/// exists: how many rows the valuation leaves absent (a MIN or key read
/// that finds nothing), how many rows two or more transactions touch by
/// key, and how many pairs of transactions meet on one. Valuations of one
/// shape mostly fail together: TPC-C's four-transaction anomaly under
/// snapshot isolation is the only one of its set's first 3,369 with
/// absent rows (Delivery's second iteration finds no NewOrder: T2's
/// insert is after its snapshot), and was tried 3,369th in walk order
/// (1.2 M split states; measured, release).
fn by_shape(work: &[instance::Instance]) -> Vec<&instance::Instance> {
    let shape = |x: &instance::Instance| {
        let mut touch = vec![0u64; x.tuples.len()];
        for (a, t) in x.txns.iter().enumerate().take(64) {
            for u in t.steps.iter().filter_map(|s| s.tuple) {
                touch[u] |= 1 << a;
            }
        }
        let shared: Vec<u64> = touch.into_iter().filter(|m| m.count_ones() >= 2).collect();
        let mut pairs: Vec<(u32, u32)> = vec![];
        for m in &shared {
            for a in 0..64u32 {
                for b in (a + 1..64u32).filter(|&b| m & (1 << a) != 0 && m & (1 << b) != 0) {
                    pairs.push((a, b));
                }
            }
        }
        pairs.sort_unstable();
        pairs.dedup();
        let absent = x
            .vals
            .as_ref()
            .map_or(0, |v| v.absent.iter().filter(|&&b| b).count());
        (absent, shared.len(), pairs.len())
    };
    let mut seen: std::collections::HashMap<(usize, usize, usize), usize> = Default::default();
    let mut keyed: Vec<(usize, usize, &instance::Instance)> = work
        .iter()
        .enumerate()
        .map(|(i, x)| {
            let n = seen.entry(shape(x)).or_insert(0);
            *n += 1;
            (*n, i, x)
        })
        .collect();
    keyed.sort_unstable_by_key(|&(n, i, _)| (n, i));
    keyed.into_iter().map(|(_, _, x)| x).collect()
}

/// The split pass (`split_pass`) over every collected (instance,
/// valuation) of one set, until one gives a schedule (put in `out`).
/// The pass has its own allowance (the set's `share`) and its states do
/// not count against the full search's: only the full search can say that
/// no schedule exists, and a pass that ate its share turned "no schedule
/// with values" into "ran out of its budget" (tests/replay_checks.rs).
/// Returns the states it spent.
fn split_all(
    w: &Workload,
    g: &SummaryGraph,
    work: &[instance::Instance],
    share: u64,
    bounds: Bounds,
    out: &mut Exploration,
) -> u64 {
    let nrel = w.schema.relations.len();
    let (mut left, mut spent_all) = (share, 0);
    for x in by_shape(work) {
        let (found, spent) = split_pass(x, nrel, left, bounds.reduce);
        left = left.saturating_sub(spent.states);
        spent_all += spent.states;
        out.explored.add(&Stats { states: 0, ..spent });
        if let Some((path, end)) = found {
            out.found = Some(build(w, g, x, path, &end, bounds));
            break;
        }
    }
    spent_all
}

/// The full search of one (instance, valuation) within the set's `cap`
/// (total states): `Break` when it found a schedule (put in `out`) or
/// reached the cap (`capped`).
#[allow(clippy::too_many_arguments)]
fn full_search(
    w: &Workload,
    g: &SummaryGraph,
    x: &instance::Instance,
    cap: u64,
    bounds: Bounds,
    valued: &mut Option<(&Provenance, &mut Option<String>)>,
    out: &mut Exploration,
    capped: &mut bool,
) -> ControlFlow<()> {
    let nrel = w.schema.relations.len();
    let budget = cap.saturating_sub(out.explored.states);
    let mut search = mvrc::Search::new(x, nrel, budget, bounds.reduce);
    let found = search.run(search.initial());
    out.explored.add(&Stats {
        instances: 1,
        states: search.states,
        schedules: search.schedules,
        ..Stats::default()
    });
    if let Some(end) = found {
        out.found = Some(build(w, g, x, search.path, &end, bounds));
        return ControlFlow::Break(());
    }
    if search.soft_cycle {
        if let Some((_, why)) = valued {
            **why = Some(limits::reason(w, g, x));
        }
    }
    if search.exhausted {
        *capped = true;
        return ControlFlow::Break(());
    }
    ControlFlow::Continue(())
}

/// The valuations to search `x` with: `None` alone without values; with
/// values those that let its transactions meet on one cycle (`guide`),
/// after marking the instance's key-share locks, limited reads and (for
/// one snapshot per statement) statement parts. Why there are none is
/// kept in `valued`'s reason. `made` counts the candidate valuations
/// made (`values::valuations_where`).
fn valuations_of(
    w: &Workload,
    g: &SummaryGraph,
    x: &mut instance::Instance,
    valued: &mut Option<(&Provenance, &mut Option<String>)>,
    one_snapshot: bool,
    made: &mut u64,
) -> Vec<Option<valuation::Valuation>> {
    let Some((prov, why)) = valued else {
        return vec![None];
    };
    // Without values a transaction's steps touch at least the tuples
    // they touch with any valuation (`guide`): an instance whose
    // transactions cannot all meet without values has no valuation that
    // the filter below keeps, and making its valuations is most of the
    // time of a set with many instances (TPC-C's sets with the
    // two-iteration Delivery: tens of thousands, at milliseconds each).
    // Pairs keep the old path (their "not instantiated" reasons).
    if x.txns.len() >= 3 && !guide::meets_all(x) {
        return vec![];
    }
    match values::valuations_where(w, g, prov, x, &|v| guide::meets_all_with(x, v), made) {
        Ok(vs) if !vs.is_empty() => {
            values::mark_key_share(g, prov, x);
            limits::mark_limited(g, prov, x);
            if one_snapshot {
                values::mark_parts(g, prov, x);
            }
            vs.into_iter().map(Some).collect()
        }
        Ok(vs) => vs.into_iter().map(Some).collect(),
        Err(e) => {
            why.get_or_insert(e);
            vec![]
        }
    }
}

/// The split-schedule pass (`split`) over one (instance, valuation),
/// within `budget` states: the schedule's steps and final state if found,
/// and what it spent (its budget running out is not the search's: the
/// full search runs after it with what is left).
fn split_pass(
    x: &instance::Instance,
    nrel: usize,
    budget: u64,
    reduce: bool,
) -> (Option<(Vec<Step>, mvrc::State)>, Stats) {
    let mut search = mvrc::Search::new(x, nrel, budget, reduce);
    let found = split::run(&mut search, x);
    let spent = Stats {
        states: search.states,
        schedules: search.schedules,
        by_split_pass: found.is_some(),
        ..Stats::default()
    };
    (found.map(|end| (search.path, end)), spent)
}

/// Calls `f` on every multiset of `size` elements of `nodes` (as sorted
/// lists: transactions of one LTP are interchangeable).
fn multisets(
    nodes: &[usize],
    size: usize,
    from: usize,
    chosen: &mut Vec<usize>,
    f: &mut dyn FnMut(&[usize]) -> ControlFlow<()>,
) -> ControlFlow<()> {
    if chosen.len() == size {
        return f(chosen);
    }
    for i in from..nodes.len() {
        chosen.push(nodes[i]);
        let flow = multisets(nodes, size, i, chosen, f);
        chosen.pop();
        flow?;
    }
    ControlFlow::Continue(())
}

/// The schedule found: names for transactions and tuples, the steps.
fn build(
    w: &Workload,
    g: &SummaryGraph,
    inst: &instance::Instance,
    steps: Vec<Step>,
    end: &mvrc::State,
    bounds: Bounds,
) -> Schedule {
    let transactions: Vec<Transaction> = inst
        .txns
        .iter()
        .map(|t| {
            let node = &g.nodes[t.node];
            Transaction {
                node: t.node,
                level: t.level,
                program: node.ltp.program,
                unfolding: node.ltp.unfolding,
                name: node.name.clone(),
                labels: (0..node.ltp.occurrences.len())
                    .map(|p| node.ltp.occurrence_label(w, p))
                    .collect(),
                continues: t.steps.iter().map(|s| s.cont).collect(),
            }
        })
        .collect();
    let mut count = vec![0usize; w.schema.relations.len()];
    let tuples = inst
        .tuples
        .iter()
        .map(|t| {
            count[t.rel] += 1;
            Tuple {
                rel: t.rel,
                name: format!("{}#{}", w.schema.rel(t.rel).name, count[t.rel]),
                kind: t.kind,
            }
        })
        .collect();
    Schedule {
        bounds,
        transactions: transactions.clone(),
        tuples,
        steps: steps.clone(),
        cycle: mvrc::find_cycle(&end.edges).unwrap_or_default(),
        via: None,
        values: inst
            .vals
            .as_ref()
            .map(|v| shown_values(w, inst, v, &steps, &transactions)),
        model_only: None,
    }
}

/// The values of a schedule found with values, for the report: each
/// transaction's parameters, each row's pinned columns, and the values
/// untracked expressions wrote (those of the steps that ran).
fn shown_values(
    w: &Workload,
    inst: &instance::Instance,
    v: &valuation::Valuation,
    steps: &[Step],
    txns: &[Transaction],
) -> Values {
    let mut count = vec![0usize; w.schema.relations.len()];
    let names: Vec<String> = inst
        .tuples
        .iter()
        .map(|t| {
            count[t.rel] += 1;
            format!("{}#{}", w.schema.rel(t.rel).name, count[t.rel])
        })
        .collect();
    let rows = v
        .rows
        .iter()
        .enumerate()
        .map(|(t, r)| {
            let rel = w.schema.rel(inst.tuples[t].rel);
            r.iter()
                .map(|(c, x)| (rel.attributes[*c].clone(), x.clone()))
                .collect()
        })
        .collect();
    let mut writes = vec![];
    for ((a, pos, t), slots) in &v.writes {
        let ran = steps.iter().any(|s| {
            s.txn == *a
                && s.pos == Some(*pos)
                && s.ops
                    .iter()
                    .any(|o| o.kind == OpKind::Write && o.tuple == Some(*t))
        });
        if !ran {
            continue;
        }
        let rel = inst.tuples[*t].rel;
        for (slot, c) in slots.iter().enumerate() {
            let Some(c) = c else { continue };
            // Truth slots (`unevaluated`) are no column.
            let Some(&col) = v.cols[rel].get(slot) else {
                continue;
            };
            let col = &w.schema.rel(rel).attributes[col];
            let value = if *c == values::FRESH {
                "a value no predicate pins".to_string()
            } else {
                v.shown[*c as usize].clone()
            };
            let label = txns[*a].labels.get(*pos).map_or("?", String::as_str);
            writes.push(format!(
                "T{} {label} writes {}.{col} = {value}",
                a + 1,
                names[*t]
            ));
        }
    }
    Values {
        params: v.params.clone(),
        rows,
        writes,
        facts: Some(Box::new(values::facts(inst, v))),
    }
}
