//! Why the rounds of a random replay show no anomaly (issue 23): each
//! round sorted into one kind, from what the round ran and from extra
//! runs made only for this count (each transaction alone, every serial
//! order). Nothing here decides an anomaly: that stays [`super::replay`]'s
//! comparison.

use std::collections::BTreeSet;

use super::super::run::{permutations, run, same_outcome, serial, Action, End, Outcome, Txn};
use super::super::run::{Comparison, Mask, SeedRow};
use super::super::scratch::{Scratch, State};
use super::super::value::Val;
use crate::model::error::Result;
use crate::model::isolation::Level;

/// The rounds of a random replay by kind. Every round has exactly one of
/// the first six kinds; `with_abort` overlaps them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Breakdown {
    /// A transaction stopped by something other than the database's
    /// concurrency control (a duplicate key, a missing parent, a RAISE of
    /// the program): the round is not compared.
    pub void: usize,
    /// Fewer than two transactions committed (a deadlock victim, a
    /// program's own ROLLBACK): one transaction is always serializable.
    pub lone: usize,
    /// No two committed transactions wrote a common row (by primary key),
    /// and every serial order gives the same outcome: they did not meet.
    pub apart: usize,
    /// They wrote a common row, yet every serial order gives the same
    /// outcome (commuting writes such as `a = a + 1` on both sides).
    pub commuting: usize,
    /// The serial orders differ (one transaction's writes change what
    /// another reads or writes), and the concurrent run equals one.
    pub serializable: usize,
    /// The concurrent run equals no serial order.
    pub anomalous: usize,
    /// Rounds in which the database aborted a transaction (deadlock,
    /// serialization failure).
    pub with_abort: usize,
}

impl Breakdown {
    pub fn add(&mut self, o: &Breakdown) {
        self.void += o.void;
        self.lone += o.lone;
        self.apart += o.apart;
        self.commuting += o.commuting;
        self.serializable += o.serializable;
        self.anomalous += o.anomalous;
        self.with_abort += o.with_abort;
    }

    /// Rounds in which two committed transactions met: wrote a common
    /// row, or one's writes changed what another observed.
    pub fn met(&self) -> usize {
        self.commuting + self.serializable + self.anomalous
    }
}

/// The key of each row of `state`, per table: the first column of a
/// unique index in table order (`id` in generated workloads), else the
/// whole row.
fn written(
    seed: &State,
    after: &State,
    key: &dyn Fn(&str) -> Option<usize>,
) -> BTreeSet<(String, Vec<Val>)> {
    let mut out = BTreeSet::new();
    for ((t, before), (_, now)) in seed.iter().zip(after) {
        let k = |r: &Vec<Val>| match key(t) {
            Some(i) if i < r.len() => vec![r[i].clone()],
            _ => r.clone(),
        };
        // Rows in one state and not the other: inserted, deleted, or
        // updated (both versions, one key).
        for r in before.iter().filter(|r| !now.contains(r)) {
            out.insert((t.clone(), k(r)));
        }
        for r in now.iter().filter(|r| !before.contains(r)) {
            out.insert((t.clone(), k(r)));
        }
    }
    out
}

/// Sorts one compared round (`c`, `cmp`: its concurrent run and the
/// comparison [`super::replay`] made) into `b`, running each committed
/// transaction alone and every serial order the comparison did not run.
#[allow(clippy::too_many_arguments)]
pub(super) fn classify(
    scratch: &mut Scratch,
    seed: &[SeedRow],
    txns: &[Txn],
    level: Level,
    c: &Outcome,
    cmp: &Comparison,
    key: &dyn Fn(&str) -> Option<usize>,
    b: &mut Breakdown,
) -> Result<()> {
    let committed = c.committed();
    if committed.len() < 2 {
        b.lone += 1;
        return Ok(());
    }
    if cmp.equivalent.is_none() {
        b.anomalous += 1;
        return Ok(());
    }
    // Every serial order's outcome (those the comparison ran, then the rest).
    let mut outs: Vec<Outcome> = cmp.serial.clone();
    for order in permutations(&committed)
        .into_iter()
        .filter(|o| !cmp.orders.contains(o))
    {
        outs.push(serial(scratch, seed, txns, level, &order)?);
    }
    let mask: &Mask = &cmp.mask;
    let all_same = outs
        .windows(2)
        .all(|w| same_outcome(&w[0], &w[1], &committed, mask));
    if !all_same {
        b.serializable += 1;
        return Ok(());
    }
    // Alone: each transaction's written rows.
    let base = {
        let o = run(scratch, seed, &[], level, &mut |_| None::<Action>)?;
        mask.state(&o.state)
    };
    let mut sets = vec![];
    for &i in &committed {
        let o = serial(scratch, seed, txns, level, &[i])?;
        if o.ends[i] != End::Committed {
            sets.push(BTreeSet::new());
            continue;
        }
        sets.push(written(&base, &mask.state(&o.state), key));
    }
    let overlap = (0..sets.len())
        .any(|i| (i + 1..sets.len()).any(|j| sets[i].intersection(&sets[j]).next().is_some()));
    if overlap {
        b.commuting += 1;
    } else {
        b.apart += 1;
    }
    Ok(())
}
