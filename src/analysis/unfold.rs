//! Unfold≤2 (Section 6.1): every BTP becomes the set of linear programs
//! (LTPs) obtained by taking each loop zero, one or two times and each
//! branch either way.
//!
//! Statement *occurrences* in different loop copies are distinct (they are
//! different operations of the transaction). A constraint `q_j = f(q_i)`
//! links an occurrence of q_i to an occurrence of q_j when both come from
//! the same iteration of every loop that encloses both statements. Two
//! unfoldings that are equal as statement sequences with equal links are
//! one LTP (one node of the summary graph); the empty unfolding is kept.
//!
//! # Subsumed unfoldings (loop-heavy programs, issue 26)
//!
//! A program with loops and branches in sequence has many unfoldings
//! (three loops of two statements: 27 LTPs, 162 occurrences; a generated
//! workload had 618 nodes and 2·10⁷ edges), most of them a part of a
//! longer one. For a program with more than [`SUBSUME_ABOVE`]
//! unfoldings, [`unfold_workload`] keeps only those not *subsumed* by another
//! ([`subsume`]). This gives the same verdict as the full Unfold≤2:
//!
//! The *key* of position i of an LTP L is the content of its statement
//! (all but id, SQL and origin, as `Canon::coarse`) with, for every link
//! whose child is i, the link's kind, the parent statement's content and
//! whether the parent comes before or after i ([`occurrence_keys`]).
//! `graph::effective` reads nothing else of the LTP (besides its mode,
//! literal here), so equal keys give equal `Effective` occurrences under
//! every `Settings`, and Algorithm 1 decides edges (and the snapshot
//! levels' rw/first-updater-wins bits) from the relation and the
//! `Effective` pair only. L ⊑ M when M belongs to the same program and
//! some strictly increasing h maps L's positions to M's with equal keys.
//!
//! Claim: let G' be the summary graph without the subsumed LTPs (each has
//! a kept M ⊒ it: ⊑ is transitive and the kept ones are compared first).
//! For every set of programs, every allocation and every method, the
//! induced subgraph of G has a dangerous cycle iff that of G' has one.
//! Proof. G' is an induced subgraph of G, so ⇐. For ⇒ map every removed
//! L to its M and its positions by h, every other node to itself. An edge
//! (P, i, c, j, Q) of G maps to (φP, h(i), c, h(j), φQ), an edge of G'
//! with the same kind and bits (same relation, same `Effective` pair). A
//! closed walk maps to a closed walk through the same programs (so the
//! same levels and the same subset), an edge that starts at a read still
//! does, and "q4' before q4" in L holds for h(q4'), h(q4) in M (h is
//! increasing). So the image of a type-II (type-I, snapshot-dangerous)
//! cycle is one of G'. ∎
//!
//! What changes: the node and edge counts (Table 2 is counted on
//! literal unfoldings, which is why small programs are left whole) and
//! which LTP a witness names (a longer one that contains the cycle).

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use crate::model::btp::{Body, ConstraintKind, Program, Statement, Workload};

/// One statement occurrence in an LTP.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Occurrence {
    /// Index into the program's statements.
    pub stmt: usize,
    /// Iteration number (1 or 2) of each enclosing loop, outermost first.
    pub iteration: Vec<u8>,
}

/// A constraint instantiated between two positions of an LTP:
/// `occurrences[parent] = kind(occurrences[child])`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Link {
    pub kind: ConstraintKind,
    pub child: usize,
    pub parent: usize,
}

/// A linear transaction program: a node of the summary graph.
#[derive(Debug, Clone)]
pub struct Ltp {
    /// Index of the application-level program in the workload.
    pub program: usize,
    /// 1-based number of this unfolding within its program.
    pub unfolding: usize,
    pub occurrences: Vec<Occurrence>,
    pub links: Vec<Link>,
    /// [`Mode::Literal`] for a real unfolding; otherwise this node stands
    /// for several unfoldings (an over-approximation, see [`Mode`]).
    pub mode: Mode,
}

impl Ltp {
    /// Node name: the program name, with `#k` when it has several
    /// unfoldings (the paper writes PlaceBid₁, PlaceBid₂).
    pub fn name(&self, w: &Workload, unfoldings_of_program: usize) -> String {
        let p = &w.programs[self.program];
        if unfoldings_of_program > 1 {
            format!("{}#{}", p.name, self.unfolding)
        } else {
            p.name.clone()
        }
    }

    /// Occurrence label: statement id, with `@i.j` for loop copies.
    pub fn occurrence_label(&self, w: &Workload, pos: usize) -> String {
        let o = &self.occurrences[pos];
        let id = &w.programs[self.program].statements[o.stmt].id;
        if o.iteration.is_empty() {
            id.clone()
        } else {
            let it: Vec<String> = o.iteration.iter().map(u8::to_string).collect();
            format!("{id}@{}", it.join("."))
        }
    }

    pub fn statement<'w>(&self, w: &'w Workload, pos: usize) -> &'w Statement {
        &w.programs[self.program].statements[self.occurrences[pos].stmt]
    }
}

/// How a program becomes nodes of the summary graph.
///
/// [`Mode::Literal`] is Unfold≤2 itself and is what the paper's workloads
/// always get (Table 2 counts nodes and edges per LTP). The two other modes
/// are sound over-approximations, used only when the literal unfoldings
/// would not fit (see [`plan`]); the argument is in the module comment of
/// `src/summary_graph.rs` ("Approximate nodes").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mode {
    /// Unfold≤2 (Section 6.1), identical unfoldings merged.
    Literal,
    /// One node per *maximal* unfolding: every optional part taken, every
    /// loop taken twice, one node per combination of branch alternatives.
    /// Every literal unfolding is a subsequence of one of these. Only the
    /// constraint links that hold in every unfolding containing the child
    /// are kept (a protector that may be absent does not protect).
    Maximal,
    /// One node: the whole body in textual order, all alternatives of a
    /// branch one after the other, loops twice. Every literal unfolding is
    /// a subsequence of it. Links as for `Maximal`.
    Full,
}

impl Mode {
    pub fn label(self) -> &'static str {
        match self {
            Mode::Literal => "Unfold≤2",
            Mode::Maximal => "maximal unfoldings",
            Mode::Full => "one node over all statements",
        }
    }

    fn coarser(self) -> Option<Mode> {
        match self {
            Mode::Literal => Some(Mode::Maximal),
            Mode::Maximal => Some(Mode::Full),
            Mode::Full => None,
        }
    }
}

/// Unfold≤2 of every program, in program order, each program in the mode
/// [`plan`] chooses (literal unless that would not fit). Programs whose
/// unfoldings are all identical collapse to a single LTP; a literal
/// program with more than [`SUBSUME_ABOVE`] LTPs keeps only those no
/// other one subsumes (module comment: the same verdict).
pub fn unfold_workload(w: &Workload) -> Vec<Ltp> {
    match reused(w) {
        Some(plan) => unfold_planned(w, &plan),
        None => unfold_planned(w, &plan(w)),
    }
}

thread_local! {
    /// The plan [`reusing`] lends, with the address of its workload.
    static REUSED: RefCell<Option<(usize, Rc<Plan>)>> = const { RefCell::new(None) };
}

/// Run `f` with `plan` (made by [`plan`] from `w`) used by every
/// [`unfold_workload`] of `w` on this thread instead of a new plan: the
/// CLI plans for its size guard, then builds the graph (and for `check`
/// and `report` the blocks, once per setting) of the same workload, and
/// a loop-heavy program's reduction is most of the cost. Exact: a plan
/// depends only on the workload (deterministic), and `w` stays borrowed
/// for the whole call, so no other workload can be at its address (a
/// promoted copy, say, is planned anew).
pub fn reusing<R>(w: &Workload, plan: Plan, f: impl FnOnce() -> R) -> R {
    /// Puts the outer plan back, also when `f` panics.
    struct Restore(Option<(usize, Rc<Plan>)>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let outer = self.0.take();
            REUSED.with(|r| *r.borrow_mut() = outer);
        }
    }
    let lent = (address(w), Rc::new(plan));
    let _restore = Restore(REUSED.with(|r| r.borrow_mut().replace(lent)));
    f()
}

fn address(w: &Workload) -> usize {
    std::ptr::from_ref(w) as usize
}

/// The plan [`reusing`] lends for `w`, if any.
fn reused(w: &Workload) -> Option<Rc<Plan>> {
    REUSED.with(|r| {
        r.borrow()
            .as_ref()
            .filter(|(at, _)| *at == address(w))
            .map(|(_, p)| Rc::clone(p))
    })
}

/// [`unfold_workload`] from a plan of `w` already made (the size guard
/// makes one before the graph is built): the programs the plan enumerated
/// are not enumerated again (a loop-heavy program's reduction is most of
/// its cost: 3⁹ unfoldings for nine loops in sequence).
pub fn unfold_planned(w: &Workload, plan: &Plan) -> Vec<Ltp> {
    let mut out = vec![];
    for (pi, p) in w.programs.iter().enumerate() {
        let mode = plan.modes.get(pi).copied().unwrap_or(Mode::Literal);
        if let (Mode::Literal, Some(Some(ltps))) = (mode, plan.reduced.get(pi)) {
            out.extend(ltps.iter().cloned());
            continue;
        }
        let ltps = unfold_program_with(pi, p, mode);
        // Decided on the body as written, not on the merged LTPs: read
        // promotion (`promote`) changes statement contents, and so how
        // many LTPs merge, but must not change which programs are reduced
        // (its claim that every node survives promotion needs it).
        if mode == Mode::Literal && count_unfoldings(&p.body) > SUBSUME_ABOVE {
            out.extend(subsume(p, ltps));
        } else {
            out.extend(ltps);
        }
    }
    out
}

/// Literal programs with more unfoldings than this ([`count_unfoldings`]
/// of the body as written) keep only the LTPs no other one subsumes
/// ([`subsume`]). Below it every unfolding is a node, so the paper's
/// workloads keep Table 2's counts.
pub const SUBSUME_ABOVE: u64 = 16;

/// The LTPs of one program (all literal) that no other one subsumes, in
/// their original order and with their original numbers; of several with
/// equal key sequences the first is kept. Longest first, each compared
/// with the kept ones only: a subsumed LTP is contained in a kept one
/// (⊑ is transitive), so the kept set is the same as comparing all pairs.
pub fn subsume(p: &Program, ltps: Vec<Ltp>) -> Vec<Ltp> {
    let keys = occurrence_keys(p, &ltps);
    let mut order: Vec<usize> = (0..ltps.len()).collect();
    // Stable: among equal lengths the earlier LTP comes first and is kept.
    order.sort_by_key(|&i| std::cmp::Reverse(keys[i].len()));
    // Equal lengths contain each other only when equal (a hash lookup);
    // longer kept ones are compared element by element, within a budget
    // of steps, beyond which the rest is kept (keeping a subsumed LTP
    // never changes a verdict, only the size).
    let mut kept: Vec<usize> = vec![];
    let mut seen: HashSet<&[u32]> = HashSet::new();
    let mut budget = SUBSUME_BUDGET;
    for i in order {
        let k = &keys[i];
        if seen.contains(k.as_slice()) {
            continue;
        }
        let contained = budget > 0
            && kept
                .iter()
                .take_while(|&&m| keys[m].len() > k.len())
                .any(|&m| {
                    budget = budget.saturating_sub(keys[m].len());
                    is_subsequence(k, &keys[m])
                });
        if !contained {
            seen.insert(k);
            kept.push(i);
        }
    }
    let mut keep = vec![false; ltps.len()];
    for i in kept {
        keep[i] = true;
    }
    ltps.into_iter()
        .zip(keep)
        .filter_map(|(l, k)| k.then_some(l))
        .collect()
}

/// Element steps [`subsume`] spends comparing one program's LTPs (about
/// a second in a release build); beyond it the LTPs not yet compared are
/// kept. Fourteen IF/ELSE blocks (16,384 equally long LTPs) need none.
const SUBSUME_BUDGET: usize = 200_000_000;

/// Is `a` a subsequence of `b`? Greedy matching is exact: matching each
/// element of `a` at its earliest possible place in `b` never hurts.
fn is_subsequence(a: &[u32], b: &[u32]) -> bool {
    if a.len() > b.len() {
        return false;
    }
    let mut rest = a.iter().peekable();
    for x in b {
        if rest.peek() == Some(&x) {
            rest.next();
        }
    }
    rest.peek().is_none()
}

/// The key of every position of every LTP (module comment), interned as
/// numbers per program: the statement's content and, per link into the
/// position, the link's kind, the parent's content and whether the parent
/// comes later.
pub fn occurrence_keys(p: &Program, ltps: &[Ltp]) -> Vec<Vec<u32>> {
    type LinkKey = (ConstraintKind, usize, bool);
    let coarse = Canon::of(p).coarse;
    let mut ids: HashMap<(usize, Vec<LinkKey>), u32> = HashMap::new();
    ltps.iter()
        .map(|l| {
            let mut into: Vec<Vec<LinkKey>> = vec![vec![]; l.occurrences.len()];
            for k in &l.links {
                let parent = coarse[l.occurrences[k.parent].stmt];
                if let Some(v) = into.get_mut(k.child) {
                    v.push((k.kind, parent, k.parent > k.child));
                }
            }
            l.occurrences
                .iter()
                .zip(into)
                .map(|(o, mut v)| {
                    v.sort_unstable();
                    v.dedup();
                    let n = ids.len() as u32;
                    *ids.entry((coarse[o.stmt], v)).or_insert(n)
                })
                .collect()
        })
        .collect()
}

/// Unfold every program in the given mode (`modes[p]` for program p).
pub fn unfold_workload_with(w: &Workload, modes: &[Mode]) -> Vec<Ltp> {
    let mut out = vec![];
    for (pi, p) in w.programs.iter().enumerate() {
        let mode = modes.get(pi).copied().unwrap_or(Mode::Literal);
        out.extend(unfold_program_with(pi, p, mode));
    }
    out
}

/// Unfold≤2 of one program, literally.
pub fn unfold_program(pi: usize, p: &Program) -> Vec<Ltp> {
    unfold_program_with(pi, p, Mode::Literal)
}

pub fn unfold_program_with(pi: usize, p: &Program, mode: Mode) -> Vec<Ltp> {
    let canon = Canon::of(p);
    let body = normalize_with(&p.body, p, &canon.coarse);
    let loops = loop_paths(p);
    let paths = static_paths(p, &body);
    let seqs = expand(&body, &[], mode, &canon.fine);
    let mut seen: HashSet<(Vec<usize>, Vec<Link>)> = HashSet::new();
    let mut ltps = vec![];
    for occ in seqs {
        let mut links = link(p, &loops, &occ);
        if mode != Mode::Literal {
            links.retain(|l| {
                l.parent < l.child && guaranteed(&paths, &occ[l.parent], &occ[l.child])
            });
        }
        let key = (
            occ.iter().map(|o| canon.coarse[o.stmt]).collect::<Vec<_>>(),
            links.clone(),
        );
        if seen.insert(key) {
            ltps.push(Ltp {
                program: pi,
                unfolding: ltps.len() + 1,
                occurrences: occ,
                links,
                mode,
            });
        }
    }
    ltps
}

/// Content ids of statements. `coarse`: statements equal up to id, SQL
/// text and origin share an id (the two `UPDATE Checking` branches of
/// WriteCheck); unfoldings equal as `coarse` sequences with equal links
/// are one LTP. `fine`: the same, except that a statement taking part in a
/// constraint gets an id of its own. Two parts of a body that are equal as
/// `fine` sequences produce equal links wherever they stand (links only
/// involve constrained statements, which are then the very same ones), so
/// merging them early never changes the final set of LTPs.
struct Canon {
    coarse: Vec<usize>,
    fine: Vec<usize>,
}

impl Canon {
    fn of(p: &Program) -> Canon {
        let mut content: HashMap<Statement, usize> = HashMap::new();
        let coarse: Vec<usize> = p
            .statements
            .iter()
            .map(|s| {
                let key = Statement {
                    id: String::new(),
                    sql: None,
                    origin: None,
                    ..s.clone()
                };
                let n = content.len();
                *content.entry(key).or_insert(n)
            })
            .collect();
        let n = p.statements.len();
        let fine = coarse
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                let constrained = p.constraints.iter().any(|k| k.child == i || k.parent == i);
                if constrained {
                    n + i
                } else {
                    c
                }
            })
            .collect();
        Canon { coarse, fine }
    }
}

fn is_empty(b: &Body) -> bool {
    matches!(b, Body::Seq(v) if v.is_empty())
}

/// Equal as bodies once statements are replaced by their content ids;
/// `pairs` collects the statement of `b` matched to each statement of `a`.
fn same(a: &Body, b: &Body, canon: &[usize], pairs: &mut Vec<(usize, usize)>) -> bool {
    match (a, b) {
        (Body::Stmt(i), Body::Stmt(j)) => {
            pairs.push((*j, *i));
            canon[*i] == canon[*j]
        }
        (Body::Seq(u), Body::Seq(v)) | (Body::Branch(u), Body::Branch(v)) => {
            u.len() == v.len() && u.iter().zip(v).all(|(x, y)| same(x, y, canon, pairs))
        }
        (Body::Opt(x), Body::Opt(y)) | (Body::Loop(x), Body::Loop(y)) => same(x, y, canon, pairs),
        _ => false,
    }
}

/// Can branch alternative `b` be dropped in favour of the earlier `a`?
/// They must be equal up to statement contents (`coarse`), and the
/// program's constraints must not tell them apart: renaming b's statements
/// to a's maps the constraints that involve b exactly onto those that
/// involve a (and none relates the two). Then every unfolding through b
/// has the same statement contents and, position for position, the same
/// links as the one through a (link instantiation depends only on the
/// constraints and the loop nesting, which is the same), so it is the
/// same LTP and dropping b changes no LTP.
fn interchangeable(a: &Body, b: &Body, p: &Program, coarse: &[usize]) -> bool {
    let mut pairs = vec![];
    if !same(a, b, coarse, &mut pairs) {
        return false;
    }
    if p.constraints.is_empty() {
        return true;
    }
    let n = p.statements.len();
    // side: 1 for a's statements, 2 for b's; sigma: b → a.
    let mut side = vec![0u8; n];
    let mut sigma: Vec<usize> = (0..n).collect();
    for &(j, i) in &pairs {
        if i >= n || j >= n {
            return false;
        }
        side[i] = 1;
        side[j] = 2;
        sigma[j] = i;
    }
    let mut from_b = vec![];
    let mut of_a = vec![];
    for c in &p.constraints {
        let (sc, sp) = (side[c.child], side[c.parent]);
        if (sc == 1 && sp == 2) || (sc == 2 && sp == 1) {
            return false;
        }
        if sc == 2 || sp == 2 {
            from_b.push((c.kind, sigma[c.child], sigma[c.parent]));
        }
        if sc == 1 || sp == 1 {
            of_a.push((c.kind, c.child, c.parent));
        }
    }
    from_b.sort();
    from_b.dedup();
    of_a.sort();
    of_a.dedup();
    from_b == of_a
}

/// The body with statement-free parts collapsed and identical branch
/// alternatives merged (issue 8 item 5, issue 13 item 4). A branch, option
/// or loop without a statement contributes only the empty sequence, so it
/// becomes the empty sequence; an alternative [`interchangeable`] with an
/// earlier one adds no LTP that the earlier one does not. The order of the
/// remaining unfoldings is unchanged, so LTP numbering is too.
pub fn normalize(b: &Body, p: &Program) -> Body {
    normalize_with(b, p, &Canon::of(p).coarse)
}

fn normalize_with(b: &Body, p: &Program, coarse: &[usize]) -> Body {
    match b {
        Body::Stmt(i) => Body::Stmt(*i),
        Body::Seq(parts) => {
            let mut out = vec![];
            for part in parts {
                match normalize_with(part, p, coarse) {
                    Body::Seq(inner) => out.extend(inner),
                    other => out.push(other),
                }
            }
            if out.len() == 1 {
                out.pop().unwrap_or(Body::Seq(vec![]))
            } else {
                Body::Seq(out)
            }
        }
        Body::Branch(alts) => {
            let mut out: Vec<Body> = vec![];
            for a in alts {
                let a = normalize_with(a, p, coarse);
                if !out.iter().any(|o| interchangeable(o, &a, p, coarse)) {
                    out.push(a);
                }
            }
            if out.iter().all(is_empty) {
                Body::Seq(vec![])
            } else if out.len() == 1 {
                out.pop().unwrap_or(Body::Seq(vec![]))
            } else {
                Body::Branch(out)
            }
        }
        Body::Opt(x) => match normalize_with(x, p, coarse) {
            e if is_empty(&e) => e,
            o @ Body::Opt(_) => o,
            x => Body::Opt(Box::new(x)),
        },
        Body::Loop(x) => match normalize_with(x, p, coarse) {
            e if is_empty(&e) => e,
            x => Body::Loop(Box::new(x)),
        },
    }
}

/// Drop repeated sequences (by `fine` content and loop iterations),
/// keeping the first of each: later duplicates would only produce LTPs
/// that the final merge drops anyway, and keeping first occurrences keeps
/// the final order (and so the numbering) of the LTPs.
fn dedup(seqs: Vec<Vec<Occurrence>>, canon: &[usize]) -> Vec<Vec<Occurrence>> {
    if seqs.len() < 2 {
        return seqs;
    }
    let mut seen: HashSet<Vec<(usize, Vec<u8>)>> = HashSet::new();
    seqs.into_iter()
        .filter(|s| {
            seen.insert(
                s.iter()
                    .map(|o| (canon[o.stmt], o.iteration.clone()))
                    .collect(),
            )
        })
        .collect()
}

/// All unfoldings of `body` in `mode`; `iteration` tags the occurrences.
/// Merges duplicates bottom up, so identical alternatives and loop copies
/// never multiply.
fn expand(body: &Body, iteration: &[u8], mode: Mode, canon: &[usize]) -> Vec<Vec<Occurrence>> {
    match body {
        Body::Stmt(i) => vec![vec![Occurrence {
            stmt: *i,
            iteration: iteration.to_vec(),
        }]],
        Body::Seq(parts) => {
            let mut acc: Vec<Vec<Occurrence>> = vec![vec![]];
            for part in parts {
                let tails = expand(part, iteration, mode, canon);
                acc = acc
                    .iter()
                    .flat_map(|head| {
                        tails.iter().map(move |tail| {
                            let mut v = head.clone();
                            v.extend(tail.iter().cloned());
                            v
                        })
                    })
                    .collect();
                acc = dedup(acc, canon);
            }
            acc
        }
        Body::Branch(alts) => match mode {
            Mode::Literal => dedup(
                alts.iter()
                    .flat_map(|a| expand(a, iteration, mode, canon))
                    .collect(),
                canon,
            ),
            // An empty alternative is a subsequence of any other.
            Mode::Maximal => dedup(
                alts.iter()
                    .filter(|a| !is_empty(a))
                    .flat_map(|a| expand(a, iteration, mode, canon))
                    .collect(),
                canon,
            ),
            Mode::Full => vec![alts
                .iter()
                .flat_map(|a| expand(a, iteration, mode, canon))
                .flatten()
                .collect()],
        },
        Body::Opt(b) => {
            let mut v = expand(b, iteration, mode, canon);
            if mode == Mode::Literal {
                v.push(vec![]);
            }
            dedup(v, canon)
        }
        Body::Loop(b) => {
            let copy = |k: u8| {
                let mut it = iteration.to_vec();
                it.push(k);
                expand(b, &it, mode, canon)
            };
            let (one, two) = (copy(1), copy(2));
            let mut v: Vec<Vec<Occurrence>> = vec![];
            if mode == Mode::Literal {
                v.push(vec![]);
                v.extend(one.iter().cloned());
            }
            for a in &one {
                for b in &two {
                    let mut s = a.clone();
                    s.extend(b.iter().cloned());
                    v.push(s);
                }
            }
            dedup(v, canon)
        }
    }
}

/// One step of a statement's path from the root of the normalized body:
/// the node (pre-order number), its kind, and which child the path takes
/// (for a loop: which copy, filled in per occurrence).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Step {
    node: u32,
    kind: StepKind,
    child: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StepKind {
    Seq,
    Branch,
    Opt,
    Loop,
}

fn static_paths(p: &Program, body: &Body) -> Vec<Vec<Step>> {
    fn walk(b: &Body, path: &mut Vec<Step>, next: &mut u32, out: &mut Vec<Vec<Step>>) {
        let node = *next;
        *next += 1;
        let mut down = |kind, child, b: &Body, path: &mut Vec<Step>, next: &mut u32| {
            path.push(Step { node, kind, child });
            walk(b, path, next, out);
            path.pop();
        };
        match b {
            Body::Stmt(i) => {
                if let Some(slot) = out.get_mut(*i) {
                    *slot = path.clone();
                }
            }
            Body::Seq(v) => {
                for (k, c) in v.iter().enumerate() {
                    down(StepKind::Seq, k as u32, c, path, next);
                }
            }
            Body::Branch(v) => {
                for (k, c) in v.iter().enumerate() {
                    down(StepKind::Branch, k as u32, c, path, next);
                }
            }
            Body::Opt(c) => down(StepKind::Opt, 0, c, path, next),
            Body::Loop(c) => down(StepKind::Loop, 0, c, path, next),
        }
    }
    let mut out = vec![vec![]; p.statements.len()];
    walk(body, &mut vec![], &mut 0, &mut out);
    out
}

/// The path of one occurrence: loop steps take the occurrence's copy.
fn occurrence_path(paths: &[Vec<Step>], o: &Occurrence) -> Vec<Step> {
    let mut it = o.iteration.iter();
    paths
        .get(o.stmt)
        .map(|p| {
            p.iter()
                .map(|s| match s.kind {
                    StepKind::Loop => Step {
                        child: it.next().copied().map_or(0, u32::from),
                        ..*s
                    },
                    _ => *s,
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Does every literal unfolding that contains occurrence `child` also
/// contain `parent` before it? Where the two paths part, the node must be
/// a sequence with `parent` on an earlier part, or a loop with `parent` in
/// copy 1 and `child` in copy 2 (copy 2 exists only with copy 1); below
/// that node, `parent` must be reached through sequences only (an option,
/// a loop or a branch alternative can be left out while `child` is kept).
/// At a branch the two never occur together.
fn guaranteed(paths: &[Vec<Step>], parent: &Occurrence, child: &Occurrence) -> bool {
    let (p, c) = (
        occurrence_path(paths, parent),
        occurrence_path(paths, child),
    );
    let Some(d) = p.iter().zip(&c).position(|(a, b)| a != b) else {
        return false;
    };
    let ordered = match p[d].kind {
        StepKind::Seq | StepKind::Loop => p[d].child < c[d].child,
        StepKind::Branch | StepKind::Opt => false,
    };
    ordered && p[d + 1..].iter().all(|s| s.kind == StepKind::Seq)
}

/// How many unfoldings `body` has before merging (saturating), for
/// messages. Planning uses [`estimate`] on the normalized body.
pub fn count_unfoldings(body: &Body) -> u64 {
    match body {
        Body::Stmt(_) => 1,
        Body::Seq(v) => v
            .iter()
            .fold(1u64, |acc, b| acc.saturating_mul(count_unfoldings(b))),
        Body::Branch(v) => v
            .iter()
            .fold(0u64, |acc, b| acc.saturating_add(count_unfoldings(b))),
        Body::Opt(b) => count_unfoldings(b).saturating_add(1),
        Body::Loop(b) => {
            let k = count_unfoldings(b);
            1u64.saturating_add(k).saturating_add(k.saturating_mul(k))
        }
    }
}

/// Upper bounds, computed from the body's structure without enumerating:
/// the number of nodes a program gives in a mode, the number of statement
/// occurrences per relation over all those nodes, and the longest node.
#[derive(Debug, Clone, Default)]
pub struct Estimate {
    pub nodes: f64,
    pub occurrences: HashMap<usize, f64>,
    pub longest: f64,
}

impl Estimate {
    pub fn total_occurrences(&self) -> f64 {
        self.occurrences.values().sum()
    }
}

fn scale(m: &HashMap<usize, f64>, k: f64) -> HashMap<usize, f64> {
    m.iter().map(|(&r, &v)| (r, v * k)).collect()
}

fn add_into(m: &mut HashMap<usize, f64>, other: &HashMap<usize, f64>) {
    for (&r, &v) in other {
        *m.entry(r).or_insert(0.0) += v;
    }
}

/// [`Estimate`] of a normalized body in `mode`. In `f64`: the numbers
/// only decide whether something fits, and never overflow.
pub fn estimate(p: &Program, body: &Body, mode: Mode) -> Estimate {
    match body {
        Body::Stmt(i) => Estimate {
            nodes: 1.0,
            occurrences: p
                .statements
                .get(*i)
                .map(|s| HashMap::from([(s.rel, 1.0)]))
                .unwrap_or_default(),
            longest: 1.0,
        },
        Body::Seq(parts) => {
            let mut acc = Estimate {
                nodes: 1.0,
                ..Estimate::default()
            };
            for part in parts {
                let e = estimate(p, part, mode);
                let mut occ = scale(&acc.occurrences, e.nodes);
                add_into(&mut occ, &scale(&e.occurrences, acc.nodes));
                acc = Estimate {
                    nodes: acc.nodes * e.nodes,
                    occurrences: occ,
                    longest: acc.longest + e.longest,
                };
            }
            acc
        }
        Body::Branch(alts) => {
            let es: Vec<Estimate> = alts
                .iter()
                .filter(|a| mode == Mode::Literal || !is_empty(a))
                .map(|a| estimate(p, a, mode))
                .collect();
            let mut occ = HashMap::new();
            for e in &es {
                add_into(&mut occ, &e.occurrences);
            }
            let longest = if mode == Mode::Full {
                es.iter().map(|e| e.longest).sum()
            } else {
                es.iter().map(|e| e.longest).fold(0.0, f64::max)
            };
            let nodes = if mode == Mode::Full {
                1.0
            } else {
                es.iter().map(|e| e.nodes).sum()
            };
            Estimate {
                nodes,
                occurrences: occ,
                longest,
            }
        }
        Body::Opt(b) => {
            let e = estimate(p, b, mode);
            Estimate {
                nodes: e.nodes + if mode == Mode::Literal { 1.0 } else { 0.0 },
                ..e
            }
        }
        Body::Loop(b) => {
            let e = estimate(p, b, mode);
            let k = e.nodes;
            // Copies 1 and 2: one copy alone (literal only) gives O
            // occurrences in all, the k² pairs give 2kO.
            let factor = if mode == Mode::Literal {
                1.0 + 2.0 * k
            } else {
                2.0 * k
            };
            Estimate {
                nodes: if mode == Mode::Literal {
                    1.0 + k + k * k
                } else {
                    k * k
                },
                occurrences: scale(&e.occurrences, factor),
                longest: 2.0 * e.longest,
            }
        }
    }
}

/// Unfoldings of one program beyond which it is not enumerated literally
/// (the old per-program cap). Above it the program is analysed through
/// its maximal unfoldings (or one node), a sound over-approximation.
pub const MAX_LITERAL_UNFOLDINGS: f64 = 20_000.0;

/// Programs with at most this many literal unfoldings keep them even when
/// the graph is too large (coarsening them would lose precision for
/// little gain; the edge guard then refuses the workload).
pub const MIN_COARSENED_UNFOLDINGS: f64 = 64.0;

/// Estimated edges (Σ over relations of occurrences², the number of
/// occurrence pairs Algorithm 1 looks at) beyond which isolint does not
/// build the summary graph. An edge is 16 bytes, written once; a pair
/// gives at most two edges and usually at most one, so 3·10⁸ pairs is
/// about 5 GB (10 GB at worst). Auction(1000) is 1.3·10⁷, Auction(3000)
/// 1.2·10⁸ (81 M edges, 1.3 GB), Auction(10000) 1.3·10⁹.
pub const MAX_ESTIMATED_EDGES: f64 = 3.0e8;

/// Longest node: positions are `u16` in [`crate::analysis::graph::Edge`].
pub const MAX_NODE_LENGTH: f64 = u16::MAX as f64;

/// The mode of each program, and what the summary graph will cost.
#[derive(Debug, Clone)]
pub struct Plan {
    pub modes: Vec<Mode>,
    /// Σ over relations of (occurrences in all nodes)².
    pub estimated_edges: f64,
    /// Estimate of each program in its mode.
    pub estimates: Vec<Estimate>,
    /// Literal unfoldings of each program (after normalization), an upper bound.
    pub literal_unfoldings: Vec<f64>,
    /// The reduced LTPs ([`subsume`]) of the literal programs the plan
    /// enumerated to measure them, for [`unfold_planned`].
    pub reduced: Vec<Option<Vec<Ltp>>>,
}

impl Plan {
    /// The programs analysed approximately.
    pub fn approximated(&self) -> impl Iterator<Item = usize> + '_ {
        self.modes
            .iter()
            .enumerate()
            .filter(|(_, m)| **m != Mode::Literal)
            .map(|(i, _)| i)
    }

    pub fn fits(&self) -> bool {
        self.estimated_edges <= MAX_ESTIMATED_EDGES
            && self.estimates.iter().all(|e| e.longest <= MAX_NODE_LENGTH)
    }
}

fn edges_of(estimates: &[Estimate]) -> f64 {
    let mut per_rel: HashMap<usize, f64> = HashMap::new();
    for e in estimates {
        add_into(&mut per_rel, &e.occurrences);
    }
    per_rel.values().map(|v| v * v).sum()
}

/// Choose each program's mode: literal when its (normalized) unfoldings
/// are at most [`MAX_LITERAL_UNFOLDINGS`] and the whole graph fits in
/// [`MAX_ESTIMATED_EDGES`]; otherwise the program with the most
/// occurrences is coarsened (literal → maximal → one node) until the graph
/// fits or nothing can be coarsened. When the structural bounds do not
/// fit, literal programs with more than [`SUBSUME_ABOVE`] unfoldings are
/// first enumerated and reduced and their real size counted (the bound
/// counts the subsumed unfoldings too: 3⁹ for nine loops in sequence,
/// where one node remains).
/// Deterministic: the same workload always gets the same plan.
pub fn plan(w: &Workload) -> Plan {
    let mut measured: Vec<Option<Vec<Ltp>>> = vec![None; w.programs.len()];
    let bodies: Vec<Body> = w.programs.iter().map(|p| normalize(&p.body, p)).collect();
    let literal: Vec<Estimate> = w
        .programs
        .iter()
        .zip(&bodies)
        .map(|(p, b)| estimate(p, b, Mode::Literal))
        .collect();
    let mut modes = vec![];
    let mut estimates = vec![];
    for ((p, b), lit) in w.programs.iter().zip(&bodies).zip(&literal) {
        let (mode, e) = if lit.nodes <= MAX_LITERAL_UNFOLDINGS {
            (Mode::Literal, lit.clone())
        } else {
            let m = estimate(p, b, Mode::Maximal);
            if m.nodes <= MAX_LITERAL_UNFOLDINGS {
                (Mode::Maximal, m)
            } else {
                (Mode::Full, estimate(p, b, Mode::Full))
            }
        };
        modes.push(mode);
        estimates.push(e);
    }
    let mut estimated_edges = edges_of(&estimates);
    if estimated_edges > MAX_ESTIMATED_EDGES {
        // `unfold_workload` reduces these programs, and the structural
        // bound counts every subsumed unfolding: measure before
        // coarsening anything.
        for (pi, p) in w.programs.iter().enumerate() {
            // Only where some unfolding is structurally part of another
            // (fewer maximal unfoldings than unfoldings): 14 IF/ELSE
            // blocks (16,384 equally long LTPs) would be enumerated for
            // nothing (0.75 ms → 210 ms in the unfold bench).
            let shrinks = || estimate(p, &bodies[pi], Mode::Maximal).nodes < literal[pi].nodes;
            if modes[pi] == Mode::Literal && count_unfoldings(&p.body) > SUBSUME_ABOVE && shrinks()
            {
                let ltps = subsume(p, unfold_program(pi, p));
                estimates[pi] = measure(p, &ltps);
                measured[pi] = Some(ltps);
            }
        }
        estimated_edges = edges_of(&estimates);
    }
    while estimated_edges > MAX_ESTIMATED_EDGES {
        // The coarsenable program with the most occurrences, first on ties.
        // Programs with few unfoldings are never coarsened: a workload of
        // many small programs (Auction(n)) is analysed literally or not at
        // all. Maximal mode is skipped when it would not shrink anything
        // (IF/ELSE blocks: as many maximal unfoldings as unfoldings).
        let pick = (0..modes.len())
            .filter(|&i| literal[i].nodes > MIN_COARSENED_UNFOLDINGS)
            .filter_map(|i| {
                let current = estimates[i].total_occurrences();
                let mut next = modes[i].coarser()?;
                loop {
                    let e = estimate(&w.programs[i], &bodies[i], next);
                    if e.total_occurrences() < current {
                        return Some((i, next, e));
                    }
                    next = next.coarser()?;
                }
            })
            .max_by(|a, b| {
                estimates[a.0]
                    .total_occurrences()
                    .total_cmp(&estimates[b.0].total_occurrences())
                    .then(b.0.cmp(&a.0))
            });
        let Some((i, next, e)) = pick else { break };
        modes[i] = next;
        estimates[i] = e;
        estimated_edges = edges_of(&estimates);
    }
    let plan = Plan {
        modes,
        estimated_edges,
        estimates,
        literal_unfoldings: literal.iter().map(|e| e.nodes).collect(),
        reduced: measured,
    };
    plan
}

/// The [`Estimate`] of actual nodes: their number, occurrences per
/// relation, the longest.
fn measure(p: &Program, ltps: &[Ltp]) -> Estimate {
    let mut e = Estimate {
        nodes: ltps.len() as f64,
        ..Estimate::default()
    };
    for l in ltps {
        for o in &l.occurrences {
            if let Some(s) = p.statements.get(o.stmt) {
                *e.occurrences.entry(s.rel).or_insert(0.0) += 1.0;
            }
        }
        e.longest = e.longest.max(l.occurrences.len() as f64);
    }
    e
}

/// For each statement, the ids of the loops enclosing it, outermost first.
fn loop_paths(p: &Program) -> Vec<Vec<usize>> {
    fn walk(b: &Body, path: &mut Vec<usize>, next: &mut usize, out: &mut Vec<Vec<usize>>) {
        match b {
            Body::Stmt(i) => out[*i] = path.clone(),
            Body::Seq(v) | Body::Branch(v) => v.iter().for_each(|b| walk(b, path, next, out)),
            Body::Opt(b) => walk(b, path, next, out),
            Body::Loop(b) => {
                path.push(*next);
                *next += 1;
                walk(b, path, next, out);
                path.pop();
            }
        }
    }
    let mut out = vec![vec![]; p.statements.len()];
    walk(&p.body, &mut vec![], &mut 0, &mut out);
    out
}

/// Instantiate the program's constraints on one unfolding.
fn link(p: &Program, loops: &[Vec<usize>], occ: &[Occurrence]) -> Vec<Link> {
    let mut links = vec![];
    for c in &p.constraints {
        let shared = loops[c.child]
            .iter()
            .zip(&loops[c.parent])
            .take_while(|(a, b)| a == b)
            .count();
        for (ci, co) in occ.iter().enumerate().filter(|(_, o)| o.stmt == c.child) {
            for (pj, po) in occ.iter().enumerate().filter(|(_, o)| o.stmt == c.parent) {
                if co.iteration[..shared] == po.iteration[..shared] {
                    links.push(Link {
                        kind: c.kind,
                        child: ci,
                        parent: pj,
                    });
                }
            }
        }
    }
    links.sort();
    links
}
