//! Systematic interleavings of a fixed set of transactions on PostgreSQL,
//! stateless (each interleaving is run from the seed: PostgreSQL cannot
//! fork a state): a depth-first search over the driver's choices, one
//! choice per SQL statement or commit, so transactions only interleave
//! at statement boundaries (a statement is atomic to the others under
//! every level PostgreSQL has, save for the row locks it waits for,
//! which the driver observes as replay does).
//!
//! Reduction (docs/invariants.md, "what the search skips"). Two adjacent
//! steps of different transactions commute when neither is a commit and
//! one of them is a plain read (a SELECT without a locking clause, or the
//! no-op step at the end of a program that then committed): no commit lies between them, so every
//! snapshot either takes is the same in both orders, a plain read takes
//! no row lock and waits for none, and the other step's effect does not
//! depend on a read of another transaction. Steps of two transactions
//! whose programs touch disjoint tables commute always. Interleavings are
//! equivalent when one turns into the other by such swaps (Mazurkiewicz
//! traces); each class has a lexicographically least member (by
//! transaction index), and that member has no adjacent commuting pair
//! with the larger index first. The search only runs interleavings
//! without such a pair (pruning a choice when the step just before it
//! commutes with it and belongs to a later transaction), so every class
//! keeps its least member: nothing is lost within the bounds.

use std::collections::BTreeSet;

use super::super::executor::Ran;
use super::super::run::{Action, End, Outcome, Status};

/// What a step did, for the commutation test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A plain SELECT, or a step that ran no statement.
    Read,
    /// Anything else: writes, locking reads, conditions (conservatively).
    Write,
    Commit,
}

/// A statement's kind, from PostgreSQL's parse of what was sent: a read
/// is a SELECT without a locking clause that writes nothing (no
/// data-modifying WITH) and calls only built-ins that touch nothing but
/// their arguments (a user function may write; `nextval` draws from a
/// sequence). Anything else, or a text that does not parse, is a write.
pub fn classify(r: &Ran) -> Kind {
    let lower = r.sent.to_ascii_lowercase();
    let locking = [
        " for update",
        " for share",
        " for no key update",
        " for key share",
    ]
    .iter()
    .any(|l| lower.contains(l));
    let Ok(t) = crate::frontend::sql::pg::touches(&r.sent) else {
        return Kind::Write;
    };
    let pure = t.functions.iter().all(|f| {
        let bare = f.rsplit('.').next().unwrap_or(f).to_ascii_lowercase();
        crate::frontend::builtins::lookup(&bare)
            .is_some_and(|b| b.access == crate::frontend::builtins::Access::None)
    });
    if lower.trim_start().starts_with("select") && !locking && !t.writes && pure {
        Kind::Read
    } else {
        Kind::Write
    }
}

/// One decision point of the search.
#[derive(Debug, Clone)]
struct Node {
    enabled: Vec<usize>,
    tried: BTreeSet<usize>,
}

/// The depth-first search over the driver's choices.
#[derive(Debug, Clone)]
pub struct Dfs {
    stack: Vec<Node>,
    /// The choices of the interleaving to run next (a prefix; the rest is
    /// chosen greedily).
    prefix: Vec<usize>,
    /// Per pair of transactions: their programs touch disjoint tables.
    disjoint: Vec<Vec<bool>>,
    pub done: bool,
    /// Interleavings the reduction skipped (choices pruned).
    pub pruned: usize,
}

/// The choices one run made.
#[derive(Debug, Clone, Default)]
pub struct Choices {
    pub picks: Vec<(usize, bool)>,
    enabled: Vec<Vec<usize>>,
}

impl Choices {
    /// The driver actions this run took, to run it again.
    pub fn actions(&self) -> Vec<Action> {
        self.picks
            .iter()
            .map(|&(i, commit)| {
                if commit {
                    Action::Commit(i)
                } else {
                    Action::Step(i)
                }
            })
            .collect()
    }
}

impl Dfs {
    pub fn new(disjoint: Vec<Vec<bool>>) -> Dfs {
        Dfs {
            stack: vec![],
            prefix: vec![],
            disjoint,
            done: false,
            pruned: 0,
        }
    }

    /// The driver's choice at a decision point (`depth` = choices made
    /// so far in this run). `None` when every transaction ended.
    pub fn choose(&self, st: &[Status], made: &mut Choices) -> Option<Action> {
        let enabled: Vec<usize> = (0..st.len())
            .filter(|&i| !st[i].ended && !st[i].pending)
            .collect();
        if enabled.is_empty() {
            return None;
        }
        let depth = made.picks.len();
        let prev = made.picks.last().map(|p| p.0);
        let pick = match self.prefix.get(depth) {
            Some(&i) if enabled.contains(&i) => i,
            // Off the prefix: continue with the same or a later
            // transaction where one can (no inversion), else the first.
            _ => prev
                .and_then(|p| enabled.iter().copied().find(|&i| i >= p))
                .unwrap_or(enabled[0]),
        };
        made.picks.push((pick, st[pick].finished));
        made.enabled.push(enabled);
        Some(if st[pick].finished {
            Action::Commit(pick)
        } else {
            Action::Step(pick)
        })
    }

    /// After a run: record its decision points, pick the next prefix.
    pub fn advance(&mut self, made: &Choices, out: &Outcome) {
        let kinds = kinds(made, out);
        let d0 = self.prefix.len().min(self.stack.len());
        self.stack.truncate(d0);
        for d in d0..made.picks.len() {
            let mut tried = BTreeSet::new();
            tried.insert(made.picks[d].0);
            self.stack.push(Node {
                enabled: made.enabled[d].clone(),
                tried,
            });
        }
        // Deepest decision point with an untried choice the reduction keeps.
        while let Some(d) = self.stack.len().checked_sub(1) {
            let alts: Vec<usize> = self.stack[d]
                .enabled
                .iter()
                .copied()
                .filter(|a| !self.stack[d].tried.contains(a))
                .collect();
            let mut next = None;
            for a in alts {
                self.stack[d].tried.insert(a);
                if d > 0 && self.commutes_back(made, &kinds, d, a) {
                    self.pruned += 1;
                    continue;
                }
                next = Some(a);
                break;
            }
            if let Some(a) = next {
                self.prefix = made.picks[..d].iter().map(|p| p.0).collect();
                self.prefix.push(a);
                return;
            }
            self.stack.pop();
        }
        self.done = true;
    }

    /// Does choosing `a` at depth `d` put it right after a step of a later
    /// transaction it commutes with?
    fn commutes_back(&self, made: &Choices, kinds: &[Kind], d: usize, a: usize) -> bool {
        let (j, _) = made.picks[d - 1];
        if a >= j {
            return false;
        }
        if self.disjoint.get(a).and_then(|r| r.get(j)).copied() == Some(true) {
            return true;
        }
        let kj = kinds[d - 1];
        // a's next step: its m-th choice, the same statement in every run
        // with this prefix (its own history is in the prefix).
        let m = made.picks[..d].iter().filter(|p| p.0 == a).count();
        let ka = made
            .picks
            .iter()
            .enumerate()
            .filter(|(_, p)| p.0 == a)
            .nth(m)
            .map(|(x, _)| kinds[x]);
        match ka {
            Some(ka) => {
                kj != Kind::Commit && ka != Kind::Commit && (kj == Kind::Read || ka == Kind::Read)
            }
            None => false,
        }
    }
}

/// The kind of each choice of a run: the statement it ran (a
/// transaction's n-th step choice ran its n-th statement, if any).
fn kinds(made: &Choices, out: &Outcome) -> Vec<Kind> {
    let mut steps = vec![0usize; out.observed.len()];
    made.picks
        .iter()
        .map(|&(i, commit)| {
            if commit {
                return Kind::Commit;
            }
            let m = steps[i];
            steps[i] += 1;
            match out.observed.get(i).and_then(|o| o.get(m)) {
                Some(r) => classify(r),
                // No statement: the program's end (a no-op before the
                // commit) when it committed; else the step that failed,
                // was aborted or rolled back — treated as a write.
                None if out.ends.get(i) == Some(&End::Committed) => Kind::Read,
                None => Kind::Write,
            }
        })
        .collect()
}
