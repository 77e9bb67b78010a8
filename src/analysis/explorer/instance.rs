//! Instantiation (Section 5.2): from a choice of LTPs, concrete
//! transactions whose key-based statements and inserts touch chosen
//! tuples of a small domain, respecting the constraints `q_j = f(q_i)` and
//! `q_k = id(q_i)` of each LTP.
//!
//! Only *hot* occurrences (those that may conflict, Section 3.4, with an
//! occurrence of another chosen transaction) pick among the shared
//! tuples; a cold key-based occurrence gets a tuple of its own. That is
//! dominant, not a loss: a cold operation creates no dependency wherever
//! it lands, and on a tuple nobody else touches it can neither block nor
//! be blocked (no dirty writes is per tuple), nor find the tuple deleted.
//! Shared tuples are unlabelled until first used, so they are picked in
//! restricted-growth order (tuple symmetry), and transactions of the same
//! LTP whose choices are a permutation of each other are explored once
//! (transaction symmetry): see `Enumerator::canonical`.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::ops::ControlFlow;

use crate::analysis::graph::{Granularity, SummaryGraph};
use crate::analysis::unfold::Link;
use crate::model::btp::{ConstraintKind, StmtType, Workload};
use crate::model::isolation::{Allocation, Level};
use crate::model::schema::{AttrSet, FkId, RelId};

/// Attribute set of one relation as a bit mask (relations of up to 128
/// attributes; `explore` refuses wider ones rather than fold bits).
pub(super) type Mask = u128;

pub(super) const MAX_ARITY: usize = 128;

/// The operations' attribute sets of one statement occurrence (Figure 5),
/// after the granularity setting; `None` is ⊥.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct Access {
    pub pread: Option<Mask>,
    pub read: Option<Mask>,
    pub write: Option<Mask>,
    /// An I- or D-operation: conflicts with every predicate read of the
    /// relation, whatever its attributes (Section 3.4).
    pub insdel: bool,
}

fn meet(a: Option<Mask>, b: Option<Mask>) -> bool {
    matches!((a, b), (Some(a), Some(b)) if a & b != 0)
}

impl Access {
    /// Can an operation of `self` and one of `other` on the same relation
    /// ever give a dependency (Section 3.4), in either direction?
    pub fn may_conflict(&self, other: &Access) -> bool {
        let pred = |p: Option<Mask>, x: &Access| {
            p.is_some() && x.write.is_some() && (x.insdel || meet(p, x.write))
        };
        meet(self.write, other.write)
            || meet(self.write, other.read)
            || meet(self.read, other.write)
            || pred(self.pread, other)
            || pred(other.pread, self)
    }
}

pub use super::schedule::TupleKind;

#[derive(Debug, Clone)]
pub(super) struct TupleSpec {
    pub rel: RelId,
    pub kind: TupleKind,
}

/// One statement occurrence of a transaction, ready to execute.
#[derive(Debug, Clone)]
pub(super) struct StepSpec {
    pub ty: StmtType,
    pub rel: RelId,
    pub acc: Access,
    pub locking: bool,
    /// A predicate statement whose predicate reads no attribute of its
    /// relation (no WHERE, or one on parameters and other tables only):
    /// it matches every tuple or none, at any granularity.
    pub constant: bool,
    /// The tuple of a key-based statement or insert.
    pub tuple: Option<usize>,
    /// For a predicate statement that is the child of `q_j = f(q_i)`: the
    /// tuples it touches must have `f(t)` = the given parent tuple.
    pub parents: Vec<(FkId, usize)>,
    /// May conflict with an occurrence of another transaction.
    pub hot: bool,
    /// Independent of every other transaction (touches nothing they
    /// touch): the search runs it alone (an ample set of size one).
    pub independent: bool,
    /// A later part of the previous step's SQL statement (issue 23, item
    /// 2): PostgreSQL takes one snapshot per statement, so its reads see
    /// the snapshot the statement's first part took (`continues`).
    pub cont: bool,
    /// With values: a foreign-key existence read that holds PostgreSQL's
    /// FOR KEY SHARE lock to commit (`Provenance::key_share`).
    pub key_share: bool,
    /// Deletes its tuple or writes a primary-key column: blocked by a
    /// FOR KEY SHARE lock of another transaction.
    pub writes_key: bool,
    /// With values: a predicate selection whose result is not every row it
    /// matches (MIN, LIMIT, one row INTO; `limits`).
    pub limited: bool,
    /// With values: the snapshot scan of an UPDATE/DELETE target in a
    /// WITH (`Provenance::scans`): its reads of a row a later part of the
    /// statement reads or re-checks are superseded (`Search::superseded`).
    pub scan: bool,
    /// With values: a keyed UPDATE/DELETE with extra conjuncts pinned to
    /// values (`Some(false)`), or its no-match key sel (`Some(true)`,
    /// only when every extra conjunct is such a pin): the extra pins are
    /// checked on the row's snapshot version (`Provenance::conditions`,
    /// `mvrc::Search::condition_holds`).
    pub cond: Option<bool>,
    /// With values, a keyed UPDATE whose extra conjuncts are evaluated on
    /// versions (`StepSpec::cond` `Some(false)`): the columns it read only
    /// for them, taken out of its ReadSet: their evaluation is a predicate
    /// read of its row (`mvrc::Search::run_statement`).
    pub cond_read: Option<Mask>,
}

#[derive(Debug, Clone)]
pub(super) struct TxnSpec {
    /// Summary-graph node (LTP) this transaction instantiates.
    pub node: usize,
    /// The isolation level it runs at.
    pub level: Level,
    pub steps: Vec<StepSpec>,
}

/// Transactions over a tuple domain, with the foreign-key map `f(t)`.
#[derive(Debug, Clone)]
pub(super) struct Instance {
    pub txns: Vec<TxnSpec>,
    pub tuples: Vec<TupleSpec>,
    pub fk: HashMap<(FkId, usize), usize>,
    /// The values of the transactions and tuples (issue 23, item 1), when
    /// the instance is searched with values (`values`); `None`: the BTP
    /// model alone.
    pub vals: Option<super::valuation::Valuation>,
}

fn mask_of(set: &Option<AttrSet>, arity: usize, g: Granularity) -> Option<Mask> {
    set.as_ref().map(|s| match g {
        // Tuple granularity: every defined set is all attributes (Section
        // 7.2, as `graph` does it).
        Granularity::Tuple => Mask::MAX >> (128 - arity.max(1)),
        Granularity::Attribute => s.iter().fold(0, |m, i| m | (1 << i)),
    })
}

/// Is occurrence `pos` of `ltp` a later part of the SQL statement of
/// occurrence `pos - 1`? The front-end lowers a statement's subqueries,
/// CTEs and joined tables as several BTP statements, in program order
/// (`frontend::lower::order`), each with the statement's text and line:
/// the same text and origin, a later statement index and the same loop
/// iteration mean the same execution of one SQL statement. Two identical
/// statements on one line are taken as one (fewer schedules: never a
/// false "confirmed"). BTP YAML statements without `sql` and `origin`
/// stand alone (`isolint btp --format yaml` keeps both, and the grouping).
///
/// A loop inside the statement (the per-element writes of `= ANY(:ids)`
/// or `unnest(:ids)`) gives its parts longer iterations than the others:
/// the loops every part of the statement is in (the shortest iteration
/// among its occurrences) are the program's, around the statement; two
/// occurrences in the same iterations of those are one execution, whatever
/// the inner loop's iterations (a statement lowered as one BTP statement
/// has no inner loop: each iteration of a program loop is its own).
pub(super) fn continues(w: &Workload, ltp: &crate::analysis::unfold::Ltp, pos: usize) -> bool {
    let (a, b) = (&ltp.occurrences[pos - 1], &ltp.occurrences[pos]);
    let (sa, sb) = (ltp.statement(w, pos - 1), ltp.statement(w, pos));
    let same =
        sa.sql.is_some() && sa.origin.is_some() && sa.sql == sb.sql && sa.origin == sb.origin;
    if !same {
        return false;
    }
    if a.iteration == b.iteration {
        return a.stmt < b.stmt;
    }
    let outer = (0..ltp.occurrences.len())
        .filter(|&p| {
            let s = ltp.statement(w, p);
            s.sql == sa.sql && s.origin == sa.origin
        })
        .map(|p| ltp.occurrences[p].iteration.len())
        .min()
        .unwrap_or(0);
    a.iteration.len() >= outer
        && b.iteration.len() >= outer
        && a.iteration[..outer] == b.iteration[..outer]
}

/// The steps of one transaction instantiating node `v`, tuples unset.
fn skeleton(w: &Workload, g: &SummaryGraph, v: usize, alloc: &Allocation) -> TxnSpec {
    let ltp = &g.nodes[v].ltp;
    let gran = g.settings.granularity;
    let steps = (0..ltp.occurrences.len())
        .map(|pos| {
            let s = ltp.statement(w, pos);
            let arity = w.schema.rel(s.rel).arity();
            StepSpec {
                ty: s.ty,
                rel: s.rel,
                acc: Access {
                    pread: mask_of(&s.pread, arity, gran),
                    read: mask_of(&s.read, arity, gran),
                    write: mask_of(&s.write, arity, gran),
                    insdel: matches!(s.ty, StmtType::Ins | StmtType::KeyDel | StmtType::PredDel),
                },
                locking: s.locking,
                constant: s.pread.as_ref().is_some_and(|p| p.is_empty()),
                tuple: None,
                parents: vec![],
                hot: false,
                independent: false,
                cont: pos > 0 && continues(w, ltp, pos),
                key_share: false,
                scan: false,
                cond: None,
                cond_read: None,
                limited: false,
                writes_key: matches!(s.ty, StmtType::KeyDel | StmtType::PredDel)
                    || (matches!(s.ty, StmtType::KeyUpd | StmtType::PredUpd)
                        && s.write.as_ref().is_some_and(|ws| {
                            w.schema
                                .rel(s.rel)
                                .primary_key
                                .iter()
                                .any(|&c| ws.contains(c))
                        })),
            }
        })
        .collect();
    TxnSpec {
        node: v,
        level: alloc.level(ltp.program),
        steps,
    }
}

/// Marks the occurrences that may conflict with another transaction's,
/// and those a constraint ties to a hot one (the parent of a shared tuple
/// is shared too: two transactions touching one child tuple meet at its
/// parent, which is what CDEPCONDS's foreign-key rule is about).
fn mark_hot(txns: &mut [TxnSpec], links: &[&[Link]]) {
    let n = txns.len();
    for a in 0..n {
        for i in 0..txns[a].steps.len() {
            let s = &txns[a].steps[i];
            let hot = (0..n).filter(|&b| b != a).any(|b| {
                txns[b]
                    .steps
                    .iter()
                    .any(|o| o.rel == s.rel && s.acc.may_conflict(&o.acc))
            });
            txns[a].steps[i].hot = hot;
        }
        let steps = &mut txns[a].steps;
        let mut changed = true;
        while changed {
            changed = false;
            for l in links[a] {
                if steps[l.child].hot != steps[l.parent].hot {
                    steps[l.child].hot = true;
                    steps[l.parent].hot = true;
                    changed = true;
                }
            }
        }
    }
}

/// Could the chosen transactions form a serialization-graph cycle in
/// which every one of them takes part? Two must conflict; with three or
/// more, each must conflict with at least two others (its neighbours on
/// the cycle). A cycle through fewer of them is found at the smaller size.
pub(super) fn may_cycle(txns: &[TxnSpec]) -> bool {
    let conflict = |a: &TxnSpec, b: &TxnSpec| {
        a.steps.iter().any(|s| {
            b.steps
                .iter()
                .any(|o| o.rel == s.rel && s.acc.may_conflict(&o.acc))
        })
    };
    let n = txns.len();
    (0..n).all(|a| {
        let partners = (0..n)
            .filter(|&b| b != a && conflict(&txns[a], &txns[b]))
            .count();
        partners >= (n - 1).min(2)
    })
}

/// A tuple choice for a key-based occurrence.
#[derive(Debug, Clone, Copy)]
enum Candidate {
    Existing(usize),
    NewShared,
    NewPrivate,
}

/// Depth-first assignment of tuples to the key-based occurrences and
/// inserts of every transaction, in transaction then position order.
struct Enumerator<'a> {
    links: Vec<&'a [Link]>,
    /// Per foreign key: is `f` injective? It is when its columns include
    /// the whole primary key of dom(f) (SmallBank's Checking → Account):
    /// two child tuples then never share a parent.
    injective: Vec<bool>,
    per_rel: usize,
    inst: Instance,
    /// Shared tuples in use, per relation (restricted growth).
    shared: HashMap<RelId, Vec<usize>>,
    order: Vec<(usize, usize)>,
    seen: HashSet<Vec<usize>>,
    /// Complete assignments made (symmetric duplicates included), and
    /// at most how many: the enumeration itself costs time (a canonical
    /// form per assignment), which the search's state budget must cover
    /// too (issue 23: generated workloads whose instances are never
    /// searched enumerated for minutes).
    work: u64,
    limit: u64,
    /// The enumeration stopped at `limit`.
    cut: bool,
}

/// How [`instances`] ended: `cut` when it stopped at its limit before
/// every instance was given.
pub(super) struct Enumerated {
    pub cut: bool,
    /// Complete assignments made (symmetric duplicates included).
    pub work: u64,
}

/// Calls `f` on every instance of the transactions `nodes` (summary-graph
/// nodes, sorted) over at most `per_rel` shared tuples per relation, up to
/// symmetry. Stops early when `f` breaks, or after `limit` complete
/// assignments (`Enumerated::cut`).
pub(super) fn instances(
    w: &Workload,
    g: &SummaryGraph,
    nodes: &[usize],
    per_rel: usize,
    alloc: &Allocation,
    limit: u64,
    f: &mut dyn FnMut(&Instance) -> ControlFlow<()>,
) -> Enumerated {
    let mut txns: Vec<TxnSpec> = nodes.iter().map(|&v| skeleton(w, g, v, alloc)).collect();
    if !may_cycle(&txns) {
        return Enumerated {
            cut: false,
            work: 0,
        };
    }
    let links: Vec<&[Link]> = nodes.iter().map(|&v| &g.nodes[v].ltp.links[..]).collect();
    mark_hot(&mut txns, &links);
    let mut tuples = vec![];
    let mut order = vec![];
    for (a, t) in txns.iter_mut().enumerate() {
        for (pos, s) in t.steps.iter_mut().enumerate() {
            if s.ty == StmtType::Ins {
                // Every insert creates its own tuple: at most one
                // I-operation per tuple in a schedule (Section 3.3).
                s.tuple = Some(tuples.len());
                tuples.push(TupleSpec {
                    rel: s.rel,
                    kind: TupleKind::Inserted(a),
                });
            }
            if s.ty.is_key_based() || s.ty == StmtType::Ins {
                order.push((a, pos));
            }
        }
    }
    let mut e = Enumerator {
        links,
        injective: w
            .schema
            .foreign_keys
            .iter()
            .map(|f| {
                let pk = &w.schema.rel(f.domain).primary_key;
                !pk.is_empty() && pk.iter().all(|a| f.columns.iter().any(|(d, _)| d == a))
            })
            .collect(),
        per_rel,
        inst: Instance {
            txns,
            tuples,
            fk: HashMap::new(),
            vals: None,
        },
        shared: HashMap::new(),
        order,
        seen: HashSet::new(),
        work: 0,
        limit,
        cut: false,
    };
    let _ = e.assign(0, f);
    Enumerated {
        cut: e.cut,
        work: e.work,
    }
}

impl Enumerator<'_> {
    fn assign(
        &mut self,
        i: usize,
        f: &mut dyn FnMut(&Instance) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let Some(&(a, pos)) = self.order.get(i) else {
            return self.finish(f);
        };
        for choice in self.candidates(a, pos) {
            let saved_tuples = self.inst.tuples.len();
            let saved_shared = self.shared.clone();
            let saved_fk = self.inst.fk.clone();
            let rel = self.inst.txns[a].steps[pos].rel;
            let cand = match choice {
                Candidate::Existing(t) => t,
                Candidate::NewShared => {
                    self.shared.entry(rel).or_default().push(saved_tuples);
                    self.new_tuple(rel, TupleKind::Shared)
                }
                Candidate::NewPrivate => self.new_tuple(rel, TupleKind::Private(a)),
            };
            let prev = self.inst.txns[a].steps[pos].tuple;
            self.inst.txns[a].steps[pos].tuple = Some(cand);
            if self.consistent(a, pos) {
                self.assign(i + 1, f)?;
            }
            self.inst.txns[a].steps[pos].tuple = prev;
            self.inst.tuples.truncate(saved_tuples);
            self.shared = saved_shared;
            self.inst.fk = saved_fk;
        }
        ControlFlow::Continue(())
    }

    fn new_tuple(&mut self, rel: RelId, kind: TupleKind) -> usize {
        self.inst.tuples.push(TupleSpec { rel, kind });
        self.inst.tuples.len() - 1
    }

    /// Tuples occurrence `pos` of transaction `a` may touch: for a hot
    /// occurrence the shared tuples in use, a new shared one (up to the
    /// bound), the inserted ones, and, when another transaction reads its
    /// relation by predicate, a tuple of its own: it still meets that
    /// predicate read, and leaves the shared tuples to the occurrences
    /// that need them.
    fn candidates(&self, a: usize, pos: usize) -> Vec<Candidate> {
        let s = &self.inst.txns[a].steps[pos];
        if let Some(t) = s.tuple {
            return vec![Candidate::Existing(t)]; // an insert's own tuple
        }
        if let Some(t) = self.forced(a, pos) {
            return vec![Candidate::Existing(t)];
        }
        if !s.hot {
            return vec![Candidate::NewPrivate];
        }
        let shared = self.shared.get(&s.rel).map_or(&[][..], Vec::as_slice);
        let mut out: Vec<Candidate> = shared.iter().map(|&t| Candidate::Existing(t)).collect();
        if shared.len() < self.per_rel {
            out.push(Candidate::NewShared);
        }
        out.extend(
            self.inst
                .tuples
                .iter()
                .enumerate()
                .filter(|(_, t)| t.rel == s.rel && matches!(t.kind, TupleKind::Inserted(_)))
                .map(|(i, _)| Candidate::Existing(i)),
        );
        let predicate_read = self.inst.txns.iter().enumerate().any(|(b, t)| {
            b != a
                && t.steps
                    .iter()
                    .any(|o| o.rel == s.rel && o.acc.pread.is_some())
        });
        if predicate_read {
            out.push(Candidate::NewPrivate);
        }
        out
    }

    /// The tuple a constraint fixes for `pos`, given the other end.
    fn forced(&self, a: usize, pos: usize) -> Option<usize> {
        let steps = &self.inst.txns[a].steps;
        self.links[a].iter().find_map(|l| match l.kind {
            ConstraintKind::SameTuple if l.child == pos => steps[l.parent].tuple,
            ConstraintKind::SameTuple if l.parent == pos => steps[l.child].tuple,
            ConstraintKind::ForeignKey(f) if l.parent == pos => steps[l.child]
                .tuple
                .and_then(|c| self.inst.fk.get(&(f, c)).copied()),
            _ => None,
        })
    }

    /// Checks (and records in the FK map) the constraints between `pos`
    /// and the already assigned occurrences of transaction `a`.
    fn consistent(&mut self, a: usize, pos: usize) -> bool {
        let steps = &self.inst.txns[a].steps;
        let Some(me) = steps[pos].tuple else {
            return true;
        };
        let mut pairs = vec![];
        for l in self.links[a] {
            let other = if l.child == pos { l.parent } else { l.child };
            if (l.child != pos && l.parent != pos) || other == pos {
                continue;
            }
            let Some(t) = steps[other].tuple else {
                continue;
            };
            match l.kind {
                ConstraintKind::SameTuple => {
                    if t != me {
                        return false;
                    }
                }
                ConstraintKind::ForeignKey(f) => {
                    let (child, parent) = if l.child == pos { (me, t) } else { (t, me) };
                    pairs.push((f, child, parent));
                }
            }
        }
        for (f, child, parent) in pairs {
            match self.inst.fk.get(&(f, child)) {
                Some(&p) if p != parent => return false,
                Some(_) => {}
                None => {
                    let taken = self.injective[f]
                        && self
                            .inst
                            .fk
                            .iter()
                            .any(|(&(g, _), &p)| g == f && p == parent);
                    if taken {
                        return false;
                    }
                    self.inst.fk.insert((f, child), parent);
                }
            }
        }
        true
    }

    /// Completes an assignment: predicate children learn their parents,
    /// independence is decided, and symmetric duplicates are dropped.
    fn finish(&mut self, f: &mut dyn FnMut(&Instance) -> ControlFlow<()>) -> ControlFlow<()> {
        if self.work >= self.limit {
            self.cut = true;
            return ControlFlow::Break(());
        }
        self.work += 1;
        if !self.seen.insert(self.canonical()) {
            return ControlFlow::Continue(());
        }
        let mut inst = self.inst.clone();
        // Predicate statements range over the whole relation: the shared
        // tuples no key-based statement picked exist too. In relation
        // order (a BTreeSet): the tuples' numbering decides the search's
        // order, hence what a search cut by its budget finds (a HashSet's
        // order changed between runs: issue 23, the once-in-121 result).
        let pred_rels: BTreeSet<RelId> = inst
            .txns
            .iter()
            .flat_map(|t| &t.steps)
            .filter(|s| s.hot && s.tuple.is_none())
            .map(|s| s.rel)
            .collect();
        for rel in pred_rels {
            let used = self.shared.get(&rel).map_or(0, Vec::len);
            for _ in used..self.per_rel {
                inst.tuples.push(TupleSpec {
                    rel,
                    kind: TupleKind::Shared,
                });
            }
        }
        for (a, t) in inst.txns.iter_mut().enumerate() {
            for l in self.links[a] {
                if let ConstraintKind::ForeignKey(fk) = l.kind {
                    if t.steps[l.child].tuple.is_none() {
                        if let Some(p) = t.steps[l.parent].tuple {
                            t.steps[l.child].parents.push((fk, p));
                        }
                    }
                }
            }
        }
        mark_independent(&mut inst);
        f(&inst)
    }

    /// The instance up to renaming tuples and permuting transactions of the
    /// same LTP: the smallest encoding over those permutations, tuples
    /// numbered by first use.
    fn canonical(&self) -> Vec<usize> {
        let txns = &self.inst.txns;
        let mut best: Option<Vec<usize>> = None;
        for perm in permutations(txns.len()) {
            if perm
                .iter()
                .enumerate()
                .any(|(i, &p)| txns[i].node != txns[p].node)
            {
                continue;
            }
            let mut names: HashMap<usize, usize> = HashMap::new();
            let mut code = vec![];
            for &p in &perm {
                for s in &txns[p].steps {
                    let n = s.tuple.map_or(usize::MAX, |t| {
                        let next = names.len();
                        *names.entry(t).or_insert(next)
                    });
                    code.push(n);
                }
            }
            let mut fk: Vec<(usize, usize, usize)> = self
                .inst
                .fk
                .iter()
                .map(|(&(f, c), &p)| {
                    let name = |t: usize| names.get(&t).copied().unwrap_or(usize::MAX);
                    (f, name(c), name(p))
                })
                .collect();
            fk.sort_unstable();
            code.extend(fk.into_iter().flat_map(|(f, c, p)| [f, c, p]));
            if best.as_ref().is_none_or(|b| code < *b) {
                best = Some(code);
            }
        }
        best.unwrap_or_default()
    }
}

/// All permutations of `0..n` (n ≤ a handful of transactions).
fn permutations(n: usize) -> Vec<Vec<usize>> {
    if n == 0 {
        return vec![vec![]];
    }
    let mut out = vec![];
    for p in permutations(n - 1) {
        for i in 0..=p.len() {
            let mut q = p.clone();
            q.insert(i, n - 1);
            out.push(q);
        }
    }
    out
}

/// A step is independent when no other transaction touches its tuple (a
/// key-based step) or its relation at all (a predicate step), and no other
/// transaction reads its relation by predicate: it then creates no
/// dependency, and neither blocks nor is blocked by anyone.
fn mark_independent(inst: &mut Instance) {
    let n = inst.txns.len();
    for a in 0..n {
        for i in 0..inst.txns[a].steps.len() {
            let s = &inst.txns[a].steps[i];
            let others = (0..n).filter(|&b| b != a).flat_map(|b| &inst.txns[b].steps);
            let independent = !s.hot
                && others.clone().all(|o| {
                    o.rel != s.rel
                        || (s.tuple.is_some()
                            && o.tuple.is_some()
                            && o.tuple != s.tuple
                            && o.acc.pread.is_none())
                });
            inst.txns[a].steps[i].independent = independent;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{permutations, Access};

    fn acc(pread: Option<u128>, read: Option<u128>, write: Option<u128>, insdel: bool) -> Access {
        Access {
            pread,
            read,
            write,
            insdel,
        }
    }

    /// Section 3.4 on attributes: ∅ and ⊥ never conflict; inserts and
    /// deletes meet every predicate read, whatever its attributes.
    #[test]
    fn conflicts_follow_section_3_4() {
        let key_sel = |r| acc(None, Some(r), None, false);
        let key_upd = |r, w| acc(None, Some(r), Some(w), false);
        let ins = acc(None, None, Some(0b11), true);
        let pred_sel = |p, r| acc(Some(p), Some(r), None, false);
        assert!(key_sel(0b01).may_conflict(&key_upd(0b10, 0b01)));
        assert!(!key_sel(0b10).may_conflict(&key_upd(0b10, 0b01)));
        assert!(!key_sel(0).may_conflict(&ins));
        assert!(!key_sel(0b01).may_conflict(&key_sel(0b01)));
        assert!(pred_sel(0, 0).may_conflict(&ins));
        assert!(!pred_sel(0b10, 0).may_conflict(&key_upd(0b01, 0b01)));
        assert!(pred_sel(0b01, 0).may_conflict(&key_upd(0, 0b01)));
        assert!(key_upd(0, 0b01).may_conflict(&key_upd(0, 0b01)));
        // Disjoint writes, but each writes what the other reads.
        assert!(key_upd(0b10, 0b01).may_conflict(&key_upd(0b01, 0b10)));
        assert!(!key_upd(0b10, 0b01).may_conflict(&key_upd(0b100, 0b1000)));
    }

    #[test]
    fn permutations_are_all_orders() {
        let p = permutations(3);
        assert_eq!(p.len(), 6);
        let mut q = p.clone();
        q.sort();
        q.dedup();
        assert_eq!(q.len(), 6);
    }
}
