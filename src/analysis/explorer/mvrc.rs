//! The schedules MVRC allows (Definition 3.3, Section 5.4), explored
//! depth-first over one instance, with the serialization graph SeG(s)
//! (Section 3.4) built as the schedule grows.
//!
//! Semantics. A statement is one atomic chunk (Section 3.3) that reads,
//! for every tuple, the last committed version at its start, or the
//! transaction's own uncommitted write (read-last-committed). A write of a
//! tuple that another uncommitted transaction wrote is not enabled (no
//! dirty writes; PostgreSQL blocks it until that one commits and then acts
//! on the latest committed version, which is the same as running the whole
//! statement after that commit). A locking read (`FOR UPDATE/SHARE`) waits
//! the same way and holds its row lock to commit, so writes of the tuple by
//! others wait for it (docs/locking-reads.md). Key-based statements need
//! their tuple visible (Section 5.4: otherwise the statement fails); a
//! predicate statement reads all tuples of its relation through its
//! predicate (PR[R]), reads every visible tuple it may, and updates or
//! deletes a chosen subset of them (all or none when its predicate reads
//! no attribute). A READ COMMITTED predicate update or delete may instead
//! wait for rows it matched that another transaction holds, and re-check
//! their new versions when they are free (PostgreSQL's EvalPlanQual,
//! `predicate` and `resume`): then it is two steps, and its snapshot
//! predicate read leaves the waited rows out. With values, the snapshot
//! scan of an UPDATE/DELETE target in a WITH (a separate part of the SQL
//! statement, `StepSpec::scan`) adds no dependency on a row the write part
//! later reads or re-checks (`superseded`): that part's own read decides,
//! on the snapshot or on the latest version after a wait. Versions are
//! installed in write order, which under no dirty writes is also commit
//! order.
//!
//! Dependencies are computed incrementally: a read depends (wr) on every
//! committed writer of the tuple with a common attribute and is
//! anti-depended (rw) by the uncommitted one; a write depends (ww) on the
//! committed writers and anti-depends (rw) on every earlier reader, whose
//! version is necessarily older. Predicate reads do the same over all
//! tuples of the relation, where an insert or delete conflicts whatever
//! the attributes. Only which transaction pairs are ordered matters for
//! the cycle, so the state keeps per tuple the attributes each transaction
//! read and wrote, not the operations.
//!
//! Reductions. (1) States reached by different interleavings are merged
//! (the future depends only on the state, which includes the edges so
//! far); interleavings that differ by the order of independent steps reach
//! the same state, so each is explored once — partial-order reduction by
//! state caching. (2) A step marked independent (see `instance`) runs
//! alone when enabled: it commutes with every step of the others and adds
//! no edge, so every schedule is equivalent to one where it runs now (an
//! ample set; the state space is acyclic, so no proviso is needed). The
//! first statement of a REPEATABLE READ transaction takes its snapshot, so
//! it is never run alone.
//!
//! REPEATABLE READ (PostgreSQL's snapshot isolation): a transaction's
//! statements read the versions committed before its first statement
//! (its snapshot) or its own writes, and a write or locking read of a
//! tuple that a transaction outside the snapshot has committed a write of
//! is not enabled (first updater wins: PostgreSQL aborts the writer with a
//! serialization failure, and schedules with aborts are not considered).

use std::collections::HashSet;
use std::hash::{Hash, Hasher};

use super::instance::{Instance, Mask, StepSpec};
use super::schedule::{DepKind, Dependency, Op, OpKind, Seen, Step};
use crate::model::btp::StmtType;
use crate::model::isolation::Level;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Life {
    Unborn,
    Alive,
    Dead,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Tup {
    /// The initial version: alive, or unborn for an inserted tuple.
    init: Life,
    /// Committed versions in order (writer, life after the write).
    history: Vec<(u8, Life)>,
    /// The uncommitted writer and its own view of the tuple.
    pending: Option<(u8, Life)>,
    /// Attributes written / read per transaction; `insdel` bit per txn.
    wrote: Vec<Mask>,
    insdel: u8,
    read: Vec<Mask>,
    /// Transactions holding a row lock from a locking read.
    locks: u8,
    /// READ COMMITTED predicate updates and deletes waiting for this
    /// tuple's row lock, in arrival order (PostgreSQL's tuple-lock queue:
    /// the first waiter goes first, later writers queue behind).
    queue: Vec<u8>,
    /// With values (`Instance::vals`): the value classes of the pinned
    /// columns of the initial version, of each committed version (as
    /// `history`) and of the pending one. Empty otherwise.
    v0: Vec<u16>,
    vh: Vec<Vec<u16>>,
    vp: Vec<u16>,
    /// With values: transactions holding a FOR KEY SHARE lock (a
    /// foreign-key existence read), and whether the pending write deletes
    /// the tuple or changes its key (which such a lock blocks, and which
    /// blocks such a read).
    kshare: u8,
    pkey: bool,
    /// With values: attributes per transaction that a limited read
    /// (`limits`) read of this tuple when it was not the read's only
    /// match: no SeG edge rests on them (empty until used).
    soft: Vec<Mask>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct State {
    /// Steps done per transaction; `steps.len() + 1` once committed.
    pc: Vec<u8>,
    tuples: Vec<Tup>,
    /// PReadSet union per (relation slot, transaction): `preads[r * k + i]`.
    preads: Vec<Option<Mask>>,
    /// SeG adjacency: bit j of `edges[i]` is an edge T_i → T_j.
    pub edges: Vec<u8>,
    /// REPEATABLE READ: the transactions committed when T_i's snapshot
    /// was taken (its first statement).
    snap: Vec<Option<u8>>,
    /// SERIALIZABLE present (`Search::ssi`): rw-antidependencies (bit j
    /// of `rw[i]`: T_i →rw T_j) and the commit rank of each transaction
    /// (1 = first, 0 = not yet), for PostgreSQL's SSI abort rule. Empty
    /// otherwise, so READ COMMITTED / REPEATABLE READ states merge as
    /// before.
    rw: Vec<u8>,
    order: Vec<u8>,
    /// Per transaction, the statement waiting for row locks (EvalPlanQual):
    /// each deferred tuple with the number of committed versions it had at
    /// the statement's start. Empty when not waiting.
    waits: Vec<Vec<(usize, usize)>>,
    /// READ COMMITTED: the transactions committed when T_i's current SQL
    /// statement took its snapshot (its first part), while later parts of
    /// it remain (`StepSpec::cont`, issue 23 item 2). `None` otherwise.
    stmt_snap: Vec<Option<u8>>,
    /// With values: the predicate steps (positions) each transaction ran
    /// per relation, `vpreads[r * k + i]`, whose pins say which versions
    /// they match.
    vpreads: Vec<Vec<u8>>,
    /// With values: the step wrote a value a row had before, which the
    /// untracked expression is not taken to give (the successor is dropped).
    dead: bool,
    /// With values: per limited read done (transaction, step), the tuples
    /// it matched (`limits::mask`).
    lim: Vec<(u8, u8, u128)>,
    /// With limited reads: the SeG adjacency of the soft dependencies
    /// (`Exec::soft_edge`), only to say why nothing was found.
    sedges: Vec<u8>,
}

impl State {
    /// Statements transaction `i` has done (one more once committed).
    pub(super) fn pc(&self, i: usize) -> usize {
        self.pc[i] as usize
    }

    /// Is transaction `i` between statements (not waiting for row locks
    /// in the middle of one, EvalPlanQual)?
    pub(super) fn idle(&self, i: usize) -> bool {
        self.waits[i].is_empty()
    }
}

pub(super) struct Search<'a> {
    inst: &'a Instance,
    nrel: usize,
    /// 128-bit fingerprints of the states seen (hash compaction: 16 bytes
    /// a state instead of the state; a collision could only hide a state,
    /// never invent a schedule, and is vanishingly unlikely).
    visited: HashSet<u128>,
    pub path: Vec<Step>,
    pub states: u64,
    pub schedules: u64,
    pub budget: u64,
    pub exhausted: bool,
    /// State merging and ample sets on.
    reduce: bool,
    /// A complete schedule had a cycle only through soft dependencies
    /// (`limits`): why the search with values found nothing.
    pub soft_cycle: bool,
    /// Some transaction runs SERIALIZABLE: complete schedules with a
    /// dangerous structure among SERIALIZABLE transactions are aborted
    /// (`ssi_aborts`), and ample sets are off (the abort rule reads the
    /// commit order, which an ample set may fix).
    ssi: bool,
}

/// Two independent 64-bit hashes of a state.
pub(super) fn fingerprint(st: &State) -> u128 {
    let half = |salt: u64| {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        salt.hash(&mut h);
        st.hash(&mut h);
        h.finish()
    };
    (u128::from(half(0x9E37_79B9_7F4A_7C15)) << 64) | u128::from(half(0xC2B2_AE3D_27D4_EB4F))
}

/// The attribute indices of a mask (⊥ and ∅ alike: no attribute).
fn indices(m: Option<Mask>) -> Vec<usize> {
    let m = m.unwrap_or(0);
    (0..128).filter(|i| m & (1 << i) != 0).collect()
}

/// Does the adjacency have a cycle? Returns one as a closed list of
/// transactions (first = last omitted).
pub(super) fn find_cycle(edges: &[u8]) -> Option<Vec<usize>> {
    let n = edges.len();
    // Shortest cycle through each start, by BFS (n ≤ 8).
    let mut best: Option<Vec<usize>> = None;
    for s in 0..n {
        let mut prev = vec![usize::MAX; n];
        let mut queue = std::collections::VecDeque::from([s]);
        let mut seen = vec![false; n];
        while let Some(v) = queue.pop_front() {
            for u in (0..n).filter(|&u| edges[v] & (1 << u) != 0) {
                if u == s {
                    let mut cyc = vec![v];
                    let mut x = v;
                    while x != s {
                        x = prev[x];
                        cyc.push(x);
                    }
                    cyc.reverse();
                    if best.as_ref().is_none_or(|b| cyc.len() < b.len()) {
                        best = Some(cyc);
                    }
                    queue.clear();
                    break;
                }
                if !seen[u] {
                    seen[u] = true;
                    prev[u] = v;
                    queue.push_back(u);
                }
            }
        }
    }
    best
}

impl<'a> Search<'a> {
    pub fn new(inst: &'a Instance, nrel: usize, budget: u64, reduce: bool) -> Search<'a> {
        Search {
            inst,
            nrel,
            visited: HashSet::new(),
            path: vec![],
            states: 0,
            schedules: 0,
            budget,
            exhausted: false,
            reduce,
            soft_cycle: false,
            ssi: inst.txns.iter().any(|t| t.level == Level::Serializable),
        }
    }

    pub fn initial(&self) -> State {
        let k = self.inst.txns.len();
        let tuples = self
            .inst
            .tuples
            .iter()
            .map(|t| Tup {
                init: match t.kind {
                    super::instance::TupleKind::Inserted(_) => Life::Unborn,
                    _ => Life::Alive,
                },
                history: vec![],
                pending: None,
                wrote: vec![0; k],
                insdel: 0,
                read: vec![0; k],
                locks: 0,
                queue: vec![],
                v0: vec![],
                vh: vec![],
                vp: vec![],
                kshare: 0,
                pkey: false,
                soft: vec![],
            })
            .collect::<Vec<Tup>>();
        let mut tuples = tuples;
        if let Some(v) = &self.inst.vals {
            for (t, tup) in tuples.iter_mut().enumerate() {
                tup.v0 = v.init[t].clone();
                // A row whose key is NULL does not exist (`values::nulls`).
                if v.absent[t] {
                    tup.init = Life::Unborn;
                }
            }
        }
        State {
            pc: vec![0; k],
            tuples,
            preads: vec![None; self.nrel * k],
            edges: vec![0; k],
            snap: vec![None; k],
            rw: if self.ssi { vec![0; k] } else { vec![] },
            order: if self.ssi { vec![0; k] } else { vec![] },
            waits: vec![vec![]; k],
            stmt_snap: vec![None; k],
            vpreads: vec![vec![]; self.nrel * k],
            dead: false,
            lim: vec![],
            sedges: if self
                .inst
                .txns
                .iter()
                .any(|t| t.steps.iter().any(|s| s.limited))
            {
                vec![0; k]
            } else {
                vec![]
            },
        }
    }

    /// Depth-first search for a complete schedule with a SeG cycle; on
    /// success `path` holds its steps and the final state is returned.
    pub fn run(&mut self, st: State) -> Option<State> {
        if self.states >= self.budget {
            self.exhausted = true;
            return None;
        }
        if self.reduce && !self.visited.insert(fingerprint(&st)) {
            return None;
        }
        self.states += 1;
        let k = self.inst.txns.len();
        if (0..k).all(|i| self.committed(&st, i)) {
            return self.accepts(&st).then_some(st);
        }
        for (next, step) in self.successors(&st) {
            self.path.push(step);
            if let Some(done) = self.run(next) {
                return Some(done);
            }
            self.path.pop();
        }
        None
    }

    /// A visit of state `st` by another search over this instance
    /// (`split`): counts it against the budget; false when the budget
    /// is spent (`exhausted` set).
    pub(super) fn visit(&mut self) -> bool {
        if self.states >= self.budget {
            self.exhausted = true;
            return false;
        }
        self.states += 1;
        true
    }

    /// A complete schedule's verdict, as `run` gives it: not aborted by
    /// SSI and with a SeG cycle (`soft_cycle` noted as there).
    pub(super) fn accepts(&mut self, st: &State) -> bool {
        self.schedules += 1;
        if self.ssi && self.ssi_aborts(st) {
            return false;
        }
        if find_cycle(&st.edges).is_some() {
            return true;
        }
        if !st.sedges.is_empty() {
            let both: Vec<u8> = st
                .edges
                .iter()
                .zip(&st.sedges)
                .map(|(a, b)| a | b)
                .collect();
            self.soft_cycle |= find_cycle(&both).is_some();
        }
        false
    }

    /// The steps transaction `i` alone may take from `st` (its next
    /// statement's instantiations, or its commit), with the semantics of
    /// `successors`; none once committed or while blocked.
    pub(super) fn steps_of(&self, st: &State, i: usize) -> Vec<(State, Step)> {
        let n = self.inst.txns[i].steps.len();
        match (st.pc[i] as usize).cmp(&n) {
            std::cmp::Ordering::Less => self.statement(st, i),
            std::cmp::Ordering::Equal => vec![self.commit(st, i)],
            std::cmp::Ordering::Greater => vec![],
        }
    }

    /// Has transaction `i` committed in `st`?
    pub(super) fn is_committed(&self, st: &State, i: usize) -> bool {
        self.committed(st, i)
    }

    /// PostgreSQL's SSI (Ports and Grittner 2012), as docs/allocation.md
    /// assumes it and no more: a schedule is aborted when T_in →rw T_pivot
    /// →rw T_out, all three SERIALIZABLE, each pair concurrent, and T_out
    /// commits before T_pivot and T_in (T_in = T_out allowed).
    fn ssi_aborts(&self, st: &State) -> bool {
        let k = st.pc.len();
        let ser = |i: usize| self.inst.txns[i].level == Level::Serializable;
        let concurrent = |a: usize, b: usize| {
            let (sa, sb) = (st.snap[a].unwrap_or(0), st.snap[b].unwrap_or(0));
            sa & (1 << b) == 0 && sb & (1 << a) == 0
        };
        (0..k).filter(|&p| ser(p)).any(|p| {
            (0..k)
                .filter(|&o| ser(o) && st.rw[p] & (1 << o) != 0 && concurrent(p, o))
                .any(|o| {
                    st.order[o] < st.order[p]
                        && (0..k).any(|n| {
                            ser(n)
                                && st.rw[n] & (1 << p) != 0
                                && concurrent(n, p)
                                && (n == o || st.order[o] < st.order[n])
                        })
                })
        })
    }

    /// With values: is step `pos` of transaction `i` the snapshot scan of
    /// an UPDATE/DELETE target (`StepSpec::scan`) whose read of `t` a later
    /// part of the same SQL statement makes again — a predicate update or
    /// delete of `t`'s relation (it reads every row on the same snapshot,
    /// or re-checks the row's latest version after a lock wait), or a
    /// key-based part on `t`? Then that part's read decides what the
    /// statement does with `t`, and the scan's read of `t` gives no
    /// dependency: PostgreSQL's EvalPlanQual re-fetches the target row and
    /// re-evaluates the WHERE on it, so a version the scan saw on the
    /// snapshot and the re-check replaced orders nothing (the scan's
    /// other tuples keep theirs).
    fn superseded(&self, i: usize, pos: usize, t: usize) -> bool {
        let steps = &self.inst.txns[i].steps;
        if self.inst.vals.is_none() || !steps.get(pos).is_some_and(|s| s.scan) {
            return false;
        }
        let rel = self.inst.tuples[t].rel;
        steps[pos + 1..]
            .iter()
            .take_while(|s| s.cont)
            .filter(|s| s.rel == rel)
            .any(|s| matches!(s.ty, StmtType::PredUpd | StmtType::PredDel) || s.tuple == Some(t))
    }

    fn committed(&self, st: &State, i: usize) -> bool {
        st.pc[i] as usize > self.inst.txns[i].steps.len()
    }

    /// Enabled steps; only one transaction's if its next step is
    /// independent (ample set).
    fn successors(&self, st: &State) -> Vec<(State, Step)> {
        let k = self.inst.txns.len();
        let mut all = vec![];
        for i in 0..k {
            let steps = &self.inst.txns[i].steps;
            let pc = st.pc[i] as usize;
            let succ = if pc < steps.len() {
                self.statement(st, i)
            } else if pc == steps.len() {
                vec![self.commit(st, i)]
            } else {
                continue;
            };
            // A REPEATABLE READ transaction's first statement takes its
            // snapshot, which depends on when it runs: never ample.
            // Nor one whose later parts read the snapshot it takes.
            let snapshot = (self.inst.txns[i].level != Level::ReadCommitted
                && st.snap[i].is_none())
                || steps.get(pc + 1).is_some_and(|s| s.cont);
            let ample = self.reduce && !self.ssi && steps.get(pc).is_some_and(|s| s.independent);
            if ample && !snapshot && !succ.is_empty() {
                return succ;
            }
            all.extend(succ);
        }
        all
    }

    fn commit(&self, st: &State, i: usize) -> (State, Step) {
        let mut next = st.clone();
        if self.ssi {
            let done = (0..st.pc.len()).filter(|&x| self.committed(st, x)).count();
            next.order[i] = done as u8 + 1;
        }
        for t in &mut next.tuples {
            if let Some((w, life)) = t.pending {
                if w as usize == i {
                    t.history.push((w, life));
                    t.pending = None;
                    t.pkey = false;
                    if self.inst.vals.is_some() {
                        let v = std::mem::take(&mut t.vp);
                        t.vh.push(v);
                    }
                }
            }
            t.locks &= !(1 << i);
            t.kshare &= !(1 << i);
        }
        next.pc[i] += 1;
        let step = Step {
            txn: i,
            pos: None,
            ops: vec![],
            deps: vec![],
            resumed: false,
        };
        (next, step)
    }

    /// The committed transactions whose writes statement-start reads of
    /// transaction `i` see: all committed now (READ COMMITTED), or those
    /// committed before its snapshot (REPEATABLE READ).
    fn view(&self, st: &State, i: usize) -> u8 {
        let now = (0..st.pc.len())
            .filter(|&x| self.committed(st, x))
            .fold(0u8, |m, x| m | (1 << x));
        match self.inst.txns[i].level {
            Level::ReadCommitted => now,
            _ => st.snap[i].unwrap_or(now),
        }
    }

    /// The version of `t` transaction `i` sees with view `view`: its own
    /// write, else the last committed version in the view (writer, life).
    fn seen(st: &State, i: usize, t: usize, view: u8) -> (Seen, Life) {
        let tup = &st.tuples[t];
        match tup.pending {
            Some((w, life)) if w as usize == i => (Seen::Own, life),
            _ => tup
                .history
                .iter()
                .rev()
                .find(|(x, _)| view & (1 << x) != 0)
                .map_or((Seen::Initial, tup.init), |&(x, l)| {
                    (Seen::Txn(x as usize), l)
                }),
        }
    }

    fn visible(st: &State, i: usize, t: usize, view: u8) -> bool {
        Self::seen(st, i, t, view).1 == Life::Alive
    }

    /// With values: the life and values of the version of `t` that
    /// transaction `i` sees with `view` (as `seen`).
    fn seen_vals(st: &State, i: usize, t: usize, view: u8) -> (Life, &[u16]) {
        let tup = &st.tuples[t];
        match tup.pending {
            Some((w, life)) if w as usize == i => (life, &tup.vp),
            _ => match tup.history.iter().rposition(|(x, _)| view & (1 << x) != 0) {
                Some(j) => (tup.history[j].1, &tup.vh[j]),
                None => (tup.init, &tup.v0),
            },
        }
    }

    /// With values: does predicate step `pos` of transaction `i` match a
    /// version?
    fn vmatch(&self, i: usize, pos: usize, life: Life, vals: &[u16]) -> bool {
        self.inst
            .vals
            .as_ref()
            .is_some_and(|v| v.matches(i, pos, life == Life::Alive, vals))
    }

    /// With values: the version before transaction `x`'s version of `t`,
    /// and `x`'s (pending or committed) version, if `x` wrote `t`.
    fn around(st: &State, x: usize, t: usize) -> Option<[(Life, &[u16]); 2]> {
        let tup = &st.tuples[t];
        let at = |j: Option<usize>| match j {
            Some(j) => (tup.history[j].1, tup.vh[j].as_slice()),
            None => (tup.init, tup.v0.as_slice()),
        };
        if let Some((w, life)) = tup.pending {
            if w as usize == x {
                return Some([at(tup.history.len().checked_sub(1)), (life, &tup.vp)]);
            }
        }
        let j = tup.history.iter().position(|&(w, _)| w as usize == x)?;
        Some([at(j.checked_sub(1)), at(Some(j))])
    }

    /// With values: does `x`'s write of `t` change whether predicate step
    /// `pos` of `i` matches `t` (Adya's "changes the matches": only then
    /// is there a predicate dependency)?
    fn changes(&self, st: &State, x: usize, t: usize, i: usize, pos: usize) -> bool {
        Self::around(st, x, t)
            .is_some_and(|[a, b]| self.vmatch(i, pos, a.0, a.1) != self.vmatch(i, pos, b.0, b.1))
    }

    /// May transaction `i` write (or lock) `t` now: no uncommitted write or
    /// row lock of another transaction, and (first updater wins, for
    /// REPEATABLE READ) no committed write outside its view.
    fn writable(st: &State, i: usize, t: usize, view: u8) -> bool {
        let tup = &st.tuples[t];
        tup.pending.is_none_or(|(w, _)| w as usize == i)
            && tup.locks & !(1 << i) == 0
            && Self::unqueued(st, i, t)
            && Self::current(st, t, view)
    }

    /// No other transaction holds a FOR KEY SHARE lock on `t`, or step `s`
    /// neither deletes it nor changes its key (PostgreSQL's lock
    /// conflict table: KEY SHARE blocks only FOR UPDATE).
    fn unshared(st: &State, i: usize, t: usize, s: &StepSpec) -> bool {
        !s.writes_key || st.tuples[t].kshare & !(1 << i) == 0
    }

    /// No statement waits for `t`'s row lock, or transaction `i` already
    /// holds it (a writer or locker the waiters wait for goes on): a new
    /// writer would queue behind the waiters.
    fn unqueued(st: &State, i: usize, t: usize) -> bool {
        let tup = &st.tuples[t];
        tup.queue.is_empty()
            || tup.pending.is_some_and(|(w, _)| w as usize == i)
            || tup.locks & (1 << i) != 0
    }

    /// No committed write of `t` outside `view` (always so under READ
    /// COMMITTED, whose view is every committed transaction).
    fn current(st: &State, t: usize, view: u8) -> bool {
        st.tuples[t]
            .history
            .iter()
            .all(|(x, _)| view & (1 << x) != 0)
    }

    /// Instantiations of the next statement of transaction `i`, with the
    /// statement snapshot recorded for the later parts of its SQL
    /// statement.
    fn statement(&self, st: &State, i: usize) -> Vec<(State, Step)> {
        let pc = st.pc[i] as usize;
        let steps = &self.inst.txns[i].steps;
        let s = &steps[pc];
        let now = self.view(st, i);
        // READ COMMITTED: a later part of a SQL statement reads the
        // statement's snapshot; so does a statement resuming after a lock
        // wait, for the parts after it (its re-checks read the latest).
        let snap = match st.stmt_snap[i] {
            Some(v) if s.cont || !st.waits[i].is_empty() => v,
            _ => now,
        };
        let mut out = self.run_statement(st, i, s, now, snap);
        out.retain(|(next, _)| !next.dead);
        let later = steps.get(pc + 1).is_some_and(|n| n.cont);
        let rc = self.inst.txns[i].level == Level::ReadCommitted;
        for (next, _) in &mut out {
            next.stmt_snap[i] = (rc && later).then_some(snap);
        }
        out
    }

    /// The next statement `s` of transaction `i`: `now` is what a
    /// statement starting now sees, `snap` what its SQL statement's
    /// snapshot holds (the same but for a later part of one).
    fn run_statement(
        &self,
        st: &State,
        i: usize,
        s: &StepSpec,
        now: u8,
        snap: u8,
    ) -> Vec<(State, Step)> {
        let pc = st.pc[i] as usize;
        if !st.waits[i].is_empty() {
            return self.resume(st, i, s);
        }
        let view = now;
        // With values: a key that is NULL finds no row; the statement does
        // nothing and the program goes on (`values::nulls`).
        if let (Some(t), Some(v)) = (s.tuple, &self.inst.vals) {
            if v.absent[t] {
                return vec![Exec::new(self, st, i, pc, view).finish()];
            }
        }
        if let (Some(t), Some(true)) = (s.tuple, s.cond) {
            return self.no_match(st, i, s, t, (snap, view));
        }
        if let Some(t) = s.tuple {
            // A later part finds its row on the statement's snapshot. A
            // write then acts on the latest version (EvalPlanQual follows
            // the update chain); a plain or locking read returns the
            // snapshot's version, so a locking read of a row changed
            // since is left out (PostgreSQL would lock the new version:
            // fewer schedules, never a false one).
            let found = Self::visible(st, i, t, snap);
            let ok = match s.ty {
                StmtType::Ins => {
                    Self::seen(st, i, t, u8::MAX).1 == Life::Unborn
                        && Self::writable(st, i, t, view)
                }
                StmtType::KeySel if s.locking => {
                    found
                        && st.tuples[t].pending.is_none_or(|(w, _)| w as usize == i)
                        && Self::unqueued(st, i, t)
                        && Self::current(st, t, snap)
                }
                // FOR KEY SHARE waits for a pending delete or key change.
                StmtType::KeySel if s.key_share => {
                    let tup = &st.tuples[t];
                    found && (tup.pending.is_none_or(|(w, _)| w as usize == i) || !tup.pkey)
                }
                StmtType::KeySel => found,
                _ => {
                    found
                        && Self::visible(st, i, t, view)
                        && Self::writable(st, i, t, view)
                        && Self::unshared(st, i, t, s)
                }
            };
            if !ok || !self.condition_holds(st, i, s, t, (snap, view)) {
                return vec![];
            }
            let read_view = if s.ty == StmtType::KeySel { snap } else { view };
            let mut exec = Exec::new(self, st, i, pc, read_view);
            if let Some(m) = s.cond_read {
                // The condition's evaluation: a predicate read of its row
                // (key and extra pins), a dependency only where a write
                // changes whether the row matches — not a read of the
                // columns, which a write keeping the match would make a
                // dependency no outcome shows (PostgreSQL 15.20:
                // tests/explorer_conditions.rs).
                let mut p = s.clone();
                p.acc.pread = Some(m);
                exec.pred_read(&p, &[]);
            }
            exec.key(s, t);
            return vec![exec.finish()];
        }
        // Rows changed since the snapshot are not writable at it: a
        // predicate update or delete waits for them and re-checks their
        // latest versions, as for rows another transaction holds.
        self.predicate(st, i, s, snap)
    }

    /// With values, a keyed UPDATE/DELETE with extra conjuncts
    /// (`StepSpec::cond`): PostgreSQL evaluates its whole WHERE on the
    /// row's version in the statement's snapshot; a row that matched there
    /// and was changed since is waited for and re-checked on its latest
    /// version (EvalPlanQual). So the write needs its extra pins to hold
    /// on the snapshot's version and on the latest one it acts on; the
    /// no-match branch (a key sel reading the snapshot's version) needs
    /// them to fail there. A row that matched on the snapshot and then
    /// stopped matching is the no-match branch run after the change
    /// committed, reading the new version (wr), as PostgreSQL's re-check
    /// reads it — never a read of the old version (rw) beside a writer
    /// PostgreSQL would have waited for.
    fn condition_holds(
        &self,
        st: &State,
        i: usize,
        s: &StepSpec,
        t: usize,
        (snap, view): (u8, u8),
    ) -> bool {
        let Some(miss) = s.cond else {
            return true;
        };
        let pc = st.pc[i] as usize;
        let (life, v) = Self::seen_vals(st, i, t, snap);
        let at_snap = self.vmatch(i, pc, life, v);
        if miss {
            return !at_snap;
        }
        let (life, v) = Self::seen_vals(st, i, t, view);
        at_snap && self.vmatch(i, pc, life, v)
    }

    /// The no-match branch of a keyed UPDATE/DELETE with extra conjuncts
    /// (`StepSpec::cond`): the statement found no row matching its whole
    /// WHERE on its snapshot — the row fails the extra conjuncts there, or
    /// is gone — and the program goes on. What it observed is that no row
    /// matched, so it is a predicate read over its pins (key and extra
    /// columns, `Valuation::pins`): a dependency only where a write
    /// changes whether the row matches (Adya), never on a version that
    /// matches neither way (a row deleted, or changed, while it did not
    /// match: PostgreSQL's outcome does not depend on it).
    fn no_match(
        &self,
        st: &State,
        i: usize,
        s: &StepSpec,
        t: usize,
        views: (u8, u8),
    ) -> Vec<(State, Step)> {
        // Its PReadSet: the extra columns the key sel reads.
        let mut p = s.clone();
        p.acc.pread = s.acc.read;
        let mut exec = Exec::new(self, st, i, st.pc[i] as usize, views.0);
        if self.condition_holds(st, i, s, t, views) {
            exec.pred_read(&p, &[]);
            return vec![exec.finish()];
        }
        if !self.rechecked(st, i, s, t, views) {
            return vec![];
        }
        // Waits, then re-checks the latest version (`resume`).
        exec.pred_read(&p, &[t]);
        vec![exec.wait(&[t])]
    }

    /// The no-match branch of a later part of a SQL statement (a WITH's
    /// UPDATE/DELETE after its snapshot scan) whose row matched on the
    /// statement's snapshot and has been written since (committed, or held
    /// by another transaction): PostgreSQL waits for the writer and
    /// re-checks the latest version (EvalPlanQual); no longer matching, it
    /// writes nothing — the no-match branch, reading that version
    /// (`resume`; checked on PG 15.20: `WITH j AS (UPDATE t … WHERE id = 2
    /// AND a < 3 RETURNING id) SELECT v, (SELECT count(*) FROM j) FROM u …`
    /// beside a pending `SET a = 5` waits, then gives the snapshot's `u`
    /// and no row). A first part takes its snapshot after the writer
    /// committed instead.
    fn rechecked(
        &self,
        st: &State,
        i: usize,
        s: &StepSpec,
        t: usize,
        (snap, view): (u8, u8),
    ) -> bool {
        let held = st.tuples[t].pending.is_some_and(|(w, _)| w as usize != i);
        if !s.cont || (snap == view && !held) {
            return false;
        }
        let pc = st.pc[i] as usize;
        let (life, v) = Self::seen_vals(st, i, t, snap);
        let (now_life, now) = Self::seen_vals(st, i, t, view);
        self.vmatch(i, pc, life, v) && (held || (now_life, now) != (life, v))
    }

    /// A predicate statement: PR[R], then reads of every eligible visible
    /// tuple (selection), or of a chosen subset of those not locked by
    /// others, each followed by its write or delete.
    fn predicate(&self, st: &State, i: usize, s: &StepSpec, view: u8) -> Vec<(State, Step)> {
        let pc = st.pc[i] as usize;
        if self.inst.vals.is_some() {
            return self.predicate_values(st, i, s, view);
        }
        let eligible: Vec<usize> = (0..self.inst.tuples.len())
            .filter(|&t| self.eligible(s, i, t) && Self::visible(st, i, t, view))
            .collect();
        if s.ty == StmtType::PredSel {
            let mut exec = Exec::new(self, st, i, pc, view);
            exec.pred_read(s, &[]);
            for &t in &eligible {
                exec.read(t, s.acc.read);
            }
            return vec![exec.finish()];
        }
        let (free, held): (Vec<usize>, Vec<usize>) = eligible
            .into_iter()
            .partition(|&t| Self::writable(st, i, t, view));
        let held_any = held.clone();
        // READ COMMITTED: a row another transaction holds is either not
        // matched on the snapshot (skipped, as the paper's atomic chunk
        // does), or matched there, and then the statement waits for the
        // lock and re-checks the row's new version (EvalPlanQual,
        // `resume`). REPEATABLE READ would abort on a changed row instead.
        let rc = self.inst.txns[i].level == Level::ReadCommitted;
        let held = if rc { held } else { vec![] };
        let mut out = vec![];
        for wait in 0u32..1 << held.len() {
            let deferred: Vec<usize> = (0..held.len())
                .filter(|b| wait & (1 << b) != 0)
                .map(|b| held[b])
                .collect();
            for set in 0u32..1 << free.len() {
                // A constant predicate matches all (waiting for the held
                // ones at READ COMMITTED; at REPEATABLE READ the statement
                // waits like a key-based write: not enabled) or nothing.
                let all = set.count_ones() as usize == free.len() && deferred.len() == held.len();
                let none = set == 0 && deferred.is_empty();
                let whole = rc || held_any.is_empty();
                if s.constant && !(none || (all && whole)) {
                    continue;
                }
                let mut exec = Exec::new(self, st, i, pc, view);
                exec.pred_read(s, &deferred);
                for (b, &t) in free.iter().enumerate() {
                    if set & (1 << b) != 0 {
                        exec.read(t, s.acc.read);
                        exec.write(s, t);
                    }
                }
                if deferred.is_empty() {
                    out.push(exec.finish());
                } else {
                    out.push(exec.wait(&deferred));
                }
            }
        }
        out
    }

    /// A predicate statement with values: it matches exactly the versions
    /// on its snapshot whose pinned columns hold its values; a selection
    /// reads them all, an update or delete writes every free one and, at
    /// READ COMMITTED, waits for the held ones (EvalPlanQual, `resume`).
    /// At REPEATABLE READ a held match is not enabled (PostgreSQL waits,
    /// then aborts the statement with a serialization failure).
    /// The result of a read ordered descending by a counter key
    /// (`Valuation::newest`): its one allocated row among `matched` when
    /// every other match is an initial row.
    fn newest(
        vals: &super::valuation::Valuation,
        i: usize,
        pc: usize,
        matched: &[usize],
    ) -> Option<usize> {
        let (_, _, fresh) = vals.newest.iter().find(|(a, p, _)| *a == i && *p == pc)?;
        let after = vals.allowed(i, pc);
        let mut new = matched.iter().filter(|t| fresh.contains(t));
        let t = *new.next()?;
        let rest_initial = matched.iter().all(|u| *u == t || after.contains(u));
        (new.next().is_none() && rest_initial).then_some(t)
    }

    fn predicate_values(&self, st: &State, i: usize, s: &StepSpec, view: u8) -> Vec<(State, Step)> {
        let pc = st.pc[i] as usize;
        let matched: Vec<usize> = (0..self.inst.tuples.len())
            .filter(|&t| self.inst.tuples[t].rel == s.rel)
            .filter(|&t| {
                let (life, v) = Self::seen_vals(st, i, t, view);
                self.vmatch(i, pc, life, v)
            })
            .collect();
        // A value the program takes from the row this step reads (`SELECT
        // c INTO v`, `min(c)`, `max(c)`): the valuation chose the row, and
        // the step must read exactly it.
        let Some(vals) = self.inst.vals.as_ref() else {
            return vec![];
        };
        let only: Vec<usize> = vals
            .only
            .iter()
            .filter(|&&(a, p, _)| a == i && p == pc)
            .map(|&(_, _, t)| t)
            .collect();
        // `NO_ROW`: the value read is NULL, the step matched nothing.
        let none = only == [super::valuation::NO_ROW];
        // A read whose order puts its row first may match others after it
        // (`values::ordered`); its result is then that row.
        let first = match only.as_slice() {
            [t] if !none && matched.contains(t) => {
                let after = vals.allowed(i, pc);
                matched.iter().all(|u| u == t || after.contains(u))
            }
            _ => false,
        };
        let fits = only.is_empty() || matched == only || first || (none && matched.is_empty());
        if !fits {
            return vec![];
        }
        let result = match only.as_slice() {
            [t] if !none => Some(*t),
            [] => Self::newest(vals, i, pc, &matched),
            _ => None,
        };
        let mut exec = Exec::new(self, st, i, pc, view);
        if s.ty == StmtType::PredSel {
            // A limited read: dependencies only where they change its
            // result (`limits`).
            let lim = s.limited.then(|| super::limits::mask(&matched));
            exec.lim = lim;
            exec.result = result;
            exec.pred_read(s, &[]);
            for &t in &matched {
                match lim {
                    Some(m) if !super::limits::certain(m, t) && result != Some(t) => {
                        exec.soft_read(t, s.acc.read)
                    }
                    _ => exec.read(t, s.acc.read),
                }
            }
            if let Some(m) = lim {
                exec.st.lim.push((i as u8, pc as u8, m));
            }
            return vec![exec.finish()];
        }
        let (free, held): (Vec<usize>, Vec<usize>) = matched
            .into_iter()
            .partition(|&t| Self::writable(st, i, t, view) && Self::unshared(st, i, t, s));
        if !held.is_empty() && self.inst.txns[i].level != Level::ReadCommitted {
            return vec![];
        }
        exec.pred_read(s, &held);
        for &t in &free {
            exec.read(t, s.acc.read);
            exec.write(s, t);
        }
        if held.is_empty() {
            vec![exec.finish()]
        } else {
            vec![exec.wait(&held)]
        }
    }

    /// The rest of a predicate update or delete that waited for row locks
    /// (PostgreSQL's EvalPlanQual), once every lock it waits for is free
    /// and it is first in line: each deferred tuple is re-checked on its
    /// latest committed version, and written if it still matches. A
    /// deleted tuple is skipped; one whose writers changed no attribute of
    /// the predicate still matches (as on the snapshot); otherwise the
    /// abstract predicate may or may not match the new version (both are
    /// tried). Other tuples stay judged on the snapshot; tuples inserted
    /// since are never seen.
    fn resume(&self, st: &State, i: usize, s: &StepSpec) -> Vec<(State, Step)> {
        let waits = &st.waits[i];
        let ready = waits.iter().all(|&(t, _)| {
            let tup = &st.tuples[t];
            tup.pending.is_none()
                && tup.locks & !(1 << i) == 0
                && Self::unshared(st, i, t, s)
                && tup.queue.first() == Some(&(i as u8))
        });
        if !ready {
            return vec![];
        }
        let view = self.view(st, i);
        let pread = s.acc.pread.unwrap_or(0);
        // Per deferred tuple: may it no longer match (it is alive and a
        // writer since the snapshot changed an attribute of the predicate)?
        let open: Vec<bool> = waits
            .iter()
            .map(|&(t, before)| {
                let tup = &st.tuples[t];
                !s.constant
                    && self.inst.vals.is_none()
                    && Self::visible(st, i, t, view)
                    && tup.history[before..]
                        .iter()
                        .any(|&(x, _)| tup.wrote[x as usize] & pread != 0)
            })
            .collect();
        let choices: Vec<usize> = (0..waits.len()).filter(|&b| open[b]).collect();
        let pc = st.pc[i] as usize;
        // No longer matching first: the manual's Hit/Purge schedule.
        (0u32..1 << choices.len())
            .rev()
            .map(|miss| {
                let mut exec = Exec::new(self, st, i, pc, view);
                exec.step.resumed = true;
                for (b, &(t, _)) in waits.iter().enumerate() {
                    // A no-match branch's PReadSet is its ReadSet (`no_match`).
                    let mut p = s.clone();
                    if s.cond == Some(true) {
                        p.acc.pread = s.acc.read;
                    }
                    exec.recheck(&p, t);
                    let dropped = choices
                        .iter()
                        .position(|&c| c == b)
                        .is_some_and(|c| miss & (1 << c) != 0);
                    // With values the new version matches or not.
                    let keep = match &self.inst.vals {
                        Some(_) => {
                            let (life, v) = Search::seen_vals(&exec.st, i, t, view);
                            self.vmatch(i, pc, life, v)
                        }
                        None => Search::visible(&exec.st, i, t, view) && !dropped,
                    };
                    // A no-match branch (`Search::rechecked`) whose row
                    // matches again is the write branch's schedule.
                    if keep && s.cond == Some(true) {
                        exec.st.dead = true;
                    } else if keep {
                        exec.read(t, s.acc.read);
                        exec.write(s, t);
                    }
                    exec.st.tuples[t].queue.retain(|&x| x as usize != i);
                }
                exec.st.waits[i].clear();
                exec.finish()
            })
            .collect()
    }

    /// May predicate statement `s` of transaction `i` touch tuple `t`: of
    /// its relation, not another transaction's private tuple (unless its
    /// predicate is constant: it matches every row, that one too), and
    /// with the parent its foreign-key constraints require.
    fn eligible(&self, s: &StepSpec, i: usize, t: usize) -> bool {
        let spec = &self.inst.tuples[t];
        if self.inst.vals.is_some() {
            return spec.rel == s.rel;
        }
        spec.rel == s.rel
            && (s.constant
                || !matches!(spec.kind, super::instance::TupleKind::Private(o) if o != i))
            && s.parents
                .iter()
                .all(|&(f, p)| self.inst.fk.get(&(f, t)) == Some(&p))
    }
}

/// One step being executed: the next state, its operations and the
/// dependencies it adds.
struct Exec<'s> {
    search: &'s Search<'s>,
    st: State,
    i: usize,
    /// The committed transactions this statement's reads see.
    view: u8,
    step: Step,
    /// A limited read's matches (`limits`): its predicate dependencies on
    /// a tuple are edges only when no other tuple matched.
    lim: Option<u128>,
    /// The row a limited read returns, when the values say which
    /// (`values::ordered`): its dependencies on it are edges.
    result: Option<usize>,
}

impl<'s> Exec<'s> {
    fn new(search: &'s Search<'s>, st: &State, i: usize, pos: usize, view: u8) -> Exec<'s> {
        let mut st = st.clone();
        if search.inst.txns[i].level != Level::ReadCommitted && st.snap[i].is_none() {
            st.snap[i] = Some(view);
        }
        Exec {
            search,
            st,
            i,
            view,
            step: Step {
                txn: i,
                pos: Some(pos),
                ops: vec![],
                deps: vec![],
                resumed: false,
            },
            lim: None,
            result: None,
        }
    }

    fn finish(mut self) -> (State, Step) {
        self.st.pc[self.i] += 1;
        (self.st, self.step)
    }

    fn edge(&mut self, from: usize, to: usize, kind: DepKind, tuple: Option<usize>) {
        if self.search.ssi && from != to && matches!(kind, DepKind::Rw | DepKind::PredRw) {
            self.st.rw[from] |= 1 << to;
        }
        if from != to && self.st.edges[from] & (1 << to) == 0 {
            self.st.edges[from] |= 1 << to;
            self.step.deps.push(Dependency {
                from,
                to,
                kind,
                tuple,
                op: self.step.ops.len().saturating_sub(1),
            });
        }
    }

    /// A dependency that does not change a limited read's result
    /// (`limits`): no SeG edge, but PostgreSQL's SSI still sees the
    /// rw-antidependency (it tracks every row the read scanned).
    fn soft_edge(&mut self, from: usize, to: usize, kind: DepKind) {
        if self.search.ssi && from != to && matches!(kind, DepKind::Rw | DepKind::PredRw) {
            self.st.rw[from] |= 1 << to;
        }
        if from != to && !self.st.sedges.is_empty() {
            self.st.sedges[from] |= 1 << to;
        }
    }

    /// R[t] of a limited read that matched more than `t`: `t` may not be
    /// the row it returns, so its dependencies are soft ones.
    fn soft_read(&mut self, t: usize, attrs: Option<Mask>) {
        let i = self.i;
        let (seen, _) = Search::seen(&self.st, i, t, self.view);
        self.step.ops.push(Op {
            kind: OpKind::Read,
            tuple: Some(t),
            rel: self.search.inst.tuples[t].rel,
            attrs: indices(attrs),
            seen: Some(seen),
            deferred: vec![],
        });
        if self.superseded(t) {
            return;
        }
        let m = attrs.unwrap_or(0);
        for x in self.others().collect::<Vec<_>>() {
            if self.st.tuples[t].wrote[x] & m != 0 {
                match self.in_view(x) {
                    true => self.soft_edge(x, i, DepKind::Wr),
                    false => self.soft_edge(i, x, DepKind::Rw),
                }
            }
        }
        let k = self.st.pc.len();
        let soft = &mut self.st.tuples[t].soft;
        soft.resize(k, 0);
        soft[i] |= m;
    }

    /// Is this step's read of `t` superseded by a later part of its SQL
    /// statement (`Search::superseded`)?
    fn superseded(&self, t: usize) -> bool {
        let pos = self.step.pos.unwrap_or(0);
        self.step.pos.is_some() && self.search.superseded(self.i, pos, t)
    }

    fn others(&self) -> impl Iterator<Item = usize> {
        let (i, k) = (self.i, self.st.pc.len());
        (0..k).filter(move |&x| x != i)
    }

    /// Are T_x's writes in the version this statement reads?
    fn in_view(&self, x: usize) -> bool {
        self.view & (1 << x) != 0
    }

    /// A key-based statement or insert on tuple `t` (Section 5.2).
    fn key(&mut self, s: &StepSpec, t: usize) {
        match s.ty {
            StmtType::KeySel => {
                self.read(t, s.acc.read);
                if s.locking {
                    self.st.tuples[t].locks |= 1 << self.i;
                }
                if s.key_share {
                    self.st.tuples[t].kshare |= 1 << self.i;
                }
            }
            StmtType::KeyUpd => {
                self.read(t, s.acc.read);
                self.write(s, t);
            }
            _ => self.write(s, t),
        }
    }

    /// R[t] with attributes `attrs`.
    fn read(&mut self, t: usize, attrs: Option<Mask>) {
        let i = self.i;
        let (seen, _) = Search::seen(&self.st, i, t, self.view);
        self.step.ops.push(Op {
            kind: OpKind::Read,
            tuple: Some(t),
            rel: self.search.inst.tuples[t].rel,
            attrs: indices(attrs),
            seen: Some(seen),
            deferred: vec![],
        });
        if self.superseded(t) {
            return;
        }
        let m = attrs.unwrap_or(0);
        for x in self.others().collect::<Vec<_>>() {
            // A writer outside the view (uncommitted, or committed after a
            // REPEATABLE READ snapshot) wrote a newer version: rw.
            let wrote = self.st.tuples[t].wrote[x] & m != 0;
            if wrote && self.in_view(x) {
                self.edge(x, i, DepKind::Wr, Some(t));
            } else if wrote {
                self.edge(i, x, DepKind::Rw, Some(t));
            }
        }
        self.st.tuples[t].read[i] |= m;
    }

    /// W[t], I[t] or D[t] as statement `s` does it.
    fn write(&mut self, s: &StepSpec, t: usize) {
        let i = self.i;
        let (kind, life) = match s.ty {
            StmtType::Ins => (OpKind::Insert, Life::Alive),
            StmtType::KeyDel | StmtType::PredDel => (OpKind::Delete, Life::Dead),
            _ => (OpKind::Write, Life::Alive),
        };
        let rel = self.search.inst.tuples[t].rel;
        self.step.ops.push(Op {
            kind,
            tuple: Some(t),
            rel,
            attrs: indices(s.acc.write),
            seen: None,
            deferred: vec![],
        });
        let m = s.acc.write.unwrap_or(0);
        let k = self.st.pc.len();
        let vals = self.new_vals(s, t, life);
        for x in self.others().collect::<Vec<_>>() {
            let tup = &self.st.tuples[t];
            let (ww, rw) = (tup.wrote[x] & m != 0, tup.read[x] & m != 0);
            let soft_rw = tup.soft.get(x).is_some_and(|r| r & m != 0);
            // A reader waiting for this tuple evaluates its predicate on the
            // version after this one (EvalPlanQual): no rw.
            let deferred = self.st.waits[x].iter().any(|&(d, _)| d == t);
            let (prw, soft_prw) = match &vals {
                _ if deferred => (false, false),
                // With values: only a write that changes whether x's
                // predicate matches the tuple (Adya); for a limited read,
                // its result (`limits`).
                Some(v) => match self.changes_for(x, rel, t, life, v) {
                    Some(certain) => (certain, !certain),
                    None => (false, false),
                },
                None => (
                    self.st.preads[rel * k + x].is_some_and(|p| s.acc.insdel || p & m != 0),
                    false,
                ),
            };
            if soft_rw && !rw {
                self.soft_edge(x, i, DepKind::Rw);
            }

            if soft_prw {
                self.soft_edge(x, i, DepKind::PredRw);
            }
            if ww {
                self.edge(x, i, DepKind::Ww, Some(t));
            }
            if rw {
                self.edge(x, i, DepKind::Rw, Some(t));
            }
            if prw {
                self.edge(x, i, DepKind::PredRw, Some(t));
            }
        }
        let tup = &mut self.st.tuples[t];
        tup.wrote[i] |= m;
        if s.acc.insdel {
            tup.insdel |= 1 << i;
        }
        tup.pending = Some((i as u8, life));
        tup.pkey |= s.writes_key;
        if let Some(v) = vals {
            tup.vp = v;
        }
    }

    /// With values: the values of the version this step writes of `t`
    /// (`None` without values). An insert writes the inserted values, a
    /// delete keeps the last ones; an update keeps them but for the
    /// columns its untracked expression writes (`Valuation::writes`),
    /// which never take a value the row had before (else the step is
    /// dropped: `State::dead`).
    fn new_vals(&mut self, s: &StepSpec, t: usize, life: Life) -> Option<Vec<u16>> {
        let v = self.search.inst.vals.as_ref()?;
        let tup = &self.st.tuples[t];
        if s.ty == StmtType::Ins {
            return Some(tup.v0.clone());
        }
        let mut out = match tup.pending {
            Some((w, _)) if w as usize == self.i => tup.vp.clone(),
            _ => tup.vh.last().unwrap_or(&tup.v0).clone(),
        };
        if life == Life::Dead {
            return Some(out);
        }
        let pos = self.step.pos.unwrap_or(0);
        if let Some(w) = v.written(self.i, pos, t) {
            for (slot, c) in w.iter().enumerate() {
                let Some(c) = *c else { continue };
                let had = tup.v0.get(slot) == Some(&c)
                    || tup.vh.iter().any(|h| h.get(slot) == Some(&c))
                    || (tup.pending.is_some() && tup.vp.get(slot) == Some(&c));
                if c != super::values::FRESH && had && !v.exact(self.i, pos, t, slot) {
                    self.st.dead = true;
                }
                if let Some(x) = out.get_mut(slot) {
                    *x = c;
                }
            }
        }
        Some(out)
    }

    /// With values: does a write of `t` giving version (`life`, `vals`)
    /// change whether a predicate step of `x` on `rel` matches it,
    /// compared with the latest committed version? `Some(certain)` when
    /// it does: certain unless every step it changes is a limited read
    /// that matched another tuple too (`limits`).
    fn changes_for(
        &self,
        x: usize,
        rel: usize,
        t: usize,
        life: Life,
        vals: &[u16],
    ) -> Option<bool> {
        let k = self.st.pc.len();
        let tup = &self.st.tuples[t];
        let (olife, old) = match tup.history.last() {
            Some(&(_, l)) => (l, tup.vh.last().map_or(&[][..], |v| v.as_slice())),
            None => (tup.init, tup.v0.as_slice()),
        };
        let mut changed = None;
        for &pos in &self.st.vpreads[rel * k + x] {
            let p = pos as usize;
            if self.search.superseded(x, p, t) {
                continue;
            }
            if self.search.vmatch(x, p, olife, old) == self.search.vmatch(x, p, life, vals) {
                continue;
            }
            let certain = self
                .st
                .lim
                .iter()
                .filter(|&&(a, q, _)| a as usize == x && q == pos)
                .all(|&(_, _, m)| super::limits::certain(m, t));
            changed = Some(changed.unwrap_or(false) || certain);
        }
        changed
    }

    /// PR[R] with PReadSet(q): every tuple of R, including unborn ones,
    /// except the `deferred` ones, which the statement re-checks after a
    /// lock wait (`recheck`).
    fn pred_read(&mut self, s: &StepSpec, deferred: &[usize]) {
        let (i, k, rel) = (self.i, self.st.pc.len(), s.rel);
        self.step.ops.push(Op {
            kind: OpKind::PredRead,
            tuple: None,
            rel,
            attrs: indices(s.acc.pread),
            seen: None,
            deferred: deferred.to_vec(),
        });
        let tuples: Vec<usize> = (0..self.st.tuples.len())
            .filter(|&t| self.search.inst.tuples[t].rel == rel && !deferred.contains(&t))
            .collect();
        for t in tuples {
            self.pred_edges(s, t);
        }
        let slot = &mut self.st.preads[rel * k + i];
        *slot = Some(slot.unwrap_or(0) | s.acc.pread.unwrap_or(0));
        if self.search.inst.vals.is_some() {
            let pos = self.step.pos.unwrap_or(0) as u8;
            let done = &mut self.st.vpreads[rel * k + i];
            if !done.contains(&pos) {
                done.push(pos);
            }
        }
    }

    /// The dependencies of a predicate read on tuple `t`'s version.
    fn pred_edges(&mut self, s: &StepSpec, t: usize) {
        let (i, p) = (self.i, s.acc.pread.unwrap_or(0));
        let pos = self.step.pos.unwrap_or(0);
        if self.superseded(t) {
            return;
        }
        for x in self.others().collect::<Vec<_>>() {
            let tup = &self.st.tuples[t];
            if self.search.inst.vals.is_some() {
                if !self.search.changes(&self.st, x, t, i, pos) {
                    continue;
                }
            } else if tup.insdel & (1 << x) == 0 && tup.wrote[x] & p == 0 {
                continue;
            }
            if self.lim.is_some_and(|m| !super::limits::certain(m, t)) && self.result != Some(t) {
                match self.in_view(x) {
                    true => self.soft_edge(x, i, DepKind::PredWr),
                    false => self.soft_edge(i, x, DepKind::PredRw),
                }
                continue;
            }
            if self.in_view(x) {
                self.edge(x, i, DepKind::PredWr, Some(t));
            } else {
                self.edge(i, x, DepKind::PredRw, Some(t));
            }
        }
    }

    /// The re-check of a deferred tuple after the lock wait: the predicate
    /// on its latest committed version (EvalPlanQual).
    fn recheck(&mut self, s: &StepSpec, t: usize) {
        let (seen, _) = Search::seen(&self.st, self.i, t, self.view);
        self.step.ops.push(Op {
            kind: OpKind::PredRead,
            tuple: Some(t),
            rel: s.rel,
            attrs: indices(s.acc.pread),
            seen: Some(seen),
            deferred: vec![],
        });
        self.pred_edges(s, t);
    }

    /// Ends the first part of a statement that waits for the row locks of
    /// `deferred`: it queues for each, and its program counter stays.
    fn wait(mut self, deferred: &[usize]) -> (State, Step) {
        for &t in deferred {
            let tup = &mut self.st.tuples[t];
            tup.queue.push(self.i as u8);
            // The versions the statement's snapshot holds (a prefix:
            // versions are installed in commit order).
            let view = self.view;
            let before = tup
                .history
                .iter()
                .take_while(|(x, _)| view & (1 << x) != 0)
                .count();
            self.st.waits[self.i].push((t, before));
        }
        (self.st, self.step)
    }
}

#[cfg(test)]
mod tests {
    use super::find_cycle;

    #[test]
    fn cycles_are_found_shortest_first() {
        // 0 → 1 → 2 → 0 and 1 ⇄ 2.
        let edges = [0b010, 0b100, 0b011];
        let c = find_cycle(&edges).expect("cyclic");
        assert_eq!(c.len(), 2);
        assert!(c.contains(&1) && c.contains(&2));
        assert_eq!(find_cycle(&[0b010, 0b100, 0b000]), None);
        assert_eq!(find_cycle(&[0, 0]), None);
    }
}
