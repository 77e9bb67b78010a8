//! The split-schedule pass: a cheap search of one (instance, valuation)
//! for the shape most anomalies have, before the full depth-first search
//! of `mvrc` (issue 23, item 3: TPC-C's anomaly under snapshot isolation
//! needs four transactions, and the full search spends ~8,500 states on
//! each of its 1,104 valuations).
//!
//! The shape. Vandevoort et al. (PVLDB 14(11) 2021, "Robustness against
//! Read Committed for Transaction Templates", reference [44] of the EDBT
//! 2023 paper this tool follows) show that for key-based templates a
//! workload is not robust against MVRC iff a *multiversion split
//! schedule* exists: for a cycle T1 → T2 → … → Tm → T1, T1's operations
//! up to and including b1, then T2, …, Tm each run serially to commit,
//! then the rest of T1. For snapshot isolation Beillahi et al.
//! ("Checking Robustness Against Snapshot Isolation", CAV 2019: "a
//! program admits an anomaly under SI iff it admits an anomaly containing
//! a single delayed transaction") give the same shape. Here: for each
//! choice of T1, each split point after one of its statements (never
//! between the parts of one SQL statement, `StepSpec::cont`), and each
//! order of the others (the meet graph's neighbours of the transaction
//! before first, `guide`), T1's prefix runs, each other transaction runs
//! alone to commit, then T1's rest. Every step is a step of `mvrc`'s
//! semantics (`Search::steps_of`): a step may still branch (a predicate's
//! subsets, a lock wait), and those branches are searched; a run is
//! accepted only by the same check as the full search's (`accepts`: a
//! SeG cycle, no SSI abort). So what the pass finds is an ordinary
//! explorer schedule, verified as every other; soundness is unchanged.
//!
//! Why it is only a heuristic here, and the full search stays. The
//! theorems are about their models: key-based reads and writes (MVRC) or
//! plain reads and writes (SI). This explorer models more: EvalPlanQual
//! (a READ COMMITTED predicate update that waits for a row another
//! transaction holds and re-checks it after that commit — the other
//! transaction cannot run "alone" then), locking reads that block,
//! foreign-key checks' FOR KEY SHARE locks, predicate reads, inserts and
//! deletes, SSI aborts. A schedule of those may need more interleaving
//! than one split, so when the pass finds nothing the full search runs
//! unchanged (docs/explorer.md, "The split-schedule pass").

use std::collections::HashSet;

use super::guide;
use super::instance::Instance;
use super::mvrc::{fingerprint, Search, State};
use crate::model::isolation::Level;

/// Searches split schedules of `search`'s instance, within its budget
/// (each state visited counts). On success `search.path` holds the steps
/// and the final state is returned.
pub(super) fn run<'a>(search: &mut Search<'a>, inst: &'a Instance) -> Option<State> {
    let k = inst.txns.len();
    let meet = guide::meet_graph(inst);
    let mut pass = Pass {
        search,
        inst,
        meet,
        visited: HashSet::new(),
    };
    for t1 in 0..k {
        let st = pass.search.initial();
        if let Some(end) = pass.prefix(st, t1) {
            return Some(end);
        }
        if pass.search.exhausted {
            return None;
        }
    }
    None
}

struct Pass<'p, 'a> {
    search: &'p mut Search<'a>,
    inst: &'a Instance,
    /// `guide::meet_graph`: which transactions may depend on each other.
    meet: Vec<u8>,
    /// (split transaction, phase, state) seen: the future of a state in a
    /// phase depends only on those.
    visited: HashSet<(u8, u8, u128)>,
}

const PREFIX: u8 = 0;
const REST: u8 = 1;
/// `ALONE + j`: transaction j (at most 8) alone.
const ALONE: u8 = 2;
/// `OTHERS + last`: the others after `last`.
const OTHERS: u8 = 16;

impl Pass<'_, '_> {
    /// A new (T1, phase, state), counted against the budget.
    fn fresh(&mut self, st: &State, t1: usize, phase: u8) -> bool {
        if self.search.exhausted || !self.visited.insert((t1 as u8, phase, fingerprint(st))) {
            return false;
        }
        self.search.visit()
    }

    /// T1's prefix: after each of its statements (not inside a SQL
    /// statement nor a lock wait) the others run; then its next statement.
    fn prefix(&mut self, st: State, t1: usize) -> Option<State> {
        if !self.fresh(&st, t1, PREFIX) {
            return None;
        }
        let steps = &self.inst.txns[t1].steps;
        let pc = st.pc(t1);
        let splits =
            pc > 0 && st.idle(t1) && steps.get(pc).is_none_or(|s| !s.cont) && pc <= steps.len();
        if splits {
            if let Some(end) = self.others(st.clone(), t1, t1) {
                return Some(end);
            }
            // At REPEATABLE READ and SERIALIZABLE T1 reads its snapshot,
            // taken at its first statement, wherever the split is: a
            // later split point changes no version it reads and only
            // holds more of its writes and locks while the others run
            // (each one that meets them blocks or, after the commit,
            // aborts T1: first updater wins). So the first split point
            // is the one to try (the full search after the pass tries
            // every interleaving anyway).
            if self.inst.txns[t1].level != Level::ReadCommitted {
                return None;
            }
        }
        if pc >= steps.len() {
            return None;
        }
        self.branch(&st, t1, &mut |p, next| p.prefix(next, t1))
    }

    /// The transactions other than T1 not yet committed, each run alone
    /// to commit; then T1's rest. Only orders that can close a cycle
    /// through every transaction: the others run one after another, each
    /// starting after the one before committed, so a dependency between
    /// two of them goes from the earlier to the later, and a cycle through
    /// all of them is T1 → S1 → … → Sm → T1 with each consecutive pair
    /// meeting (`guide`). A cycle through fewer transactions is a smaller
    /// set's, and the full search runs after the pass anyway.
    fn others(&mut self, st: State, t1: usize, last: usize) -> Option<State> {
        // Keyed by `last` too: it decides which orders are tried.
        if !self.fresh(&st, t1, OTHERS + last as u8) {
            return None;
        }
        let k = self.inst.txns.len();
        let todo: Vec<usize> = (0..k)
            .filter(|&j| j != t1 && !self.search.is_committed(&st, j))
            .collect();
        if todo.is_empty() {
            return self.rest(st, t1);
        }
        for &j in &todo {
            let next = self.meet[last] & (1 << j) != 0;
            let closes = todo.len() > 1 || self.meet[j] & (1 << t1) != 0;
            if !next || !closes {
                continue;
            }
            if let Some(end) = self.alone(st.clone(), t1, j) {
                return Some(end);
            }
        }
        None
    }

    /// Transaction `j` alone, to its commit.
    fn alone(&mut self, st: State, t1: usize, j: usize) -> Option<State> {
        if self.search.is_committed(&st, j) {
            return self.others(st, t1, j);
        }
        // Keyed by `j` too: before its first step the state is the same
        // for every choice of the next transaction.
        if !self.fresh(&st, t1, ALONE + j as u8) {
            return None;
        }
        self.branch(&st, j, &mut |p, next| p.alone(next, t1, j))
    }

    /// T1's rest, to its commit; then the schedule's verdict.
    fn rest(&mut self, st: State, t1: usize) -> Option<State> {
        if self.search.is_committed(&st, t1) {
            return self.search.accepts(&st).then_some(st);
        }
        if !self.fresh(&st, t1, REST) {
            return None;
        }
        self.branch(&st, t1, &mut |p, next| p.rest(next, t1))
    }

    /// Each step transaction `i` may take from `st`, on the path, then
    /// `go` on.
    fn branch(
        &mut self,
        st: &State,
        i: usize,
        go: &mut dyn FnMut(&mut Self, State) -> Option<State>,
    ) -> Option<State> {
        let succ = self.search.steps_of(st, i);
        for (next, step) in succ {
            self.search.path.push(step);
            if let Some(end) = go(self, next) {
                return Some(end);
            }
            self.search.path.pop();
            if self.search.exhausted {
                return None;
            }
        }
        None
    }
}
