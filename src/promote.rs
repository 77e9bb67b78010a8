//! Verified fix suggestions: promote key-based reads to `SELECT … FOR
//! UPDATE` (docs/locking-reads.md) until the workload is robust.
//!
//! Only a key sel that is the source of a counterflow edge inside a
//! strongly connected component can matter, so those are the candidates.
//! Sets are tried by increasing size, so the first robust one is a
//! smallest; every answer is re-verified by building the promoted
//! workload's summary graph from scratch and running the robustness test.

use crate::btp::{StmtType, Workload};
use crate::robustness::{components, is_robust, Method};
use crate::summary_graph::{build, Settings};

/// A statement of the workload: (program index, statement index).
pub type StmtRef = (usize, usize);

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Suggestion {
    /// Promoting these reads makes the workload robust (re-verified).
    Promote(Vec<StmtRef>),
    /// No set of at most `max_size` promotions (within the budget) works.
    NotFound { candidates: usize, tried: usize },
}

/// Limits of the search: largest promotion set and number of analyses.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    pub max_size: usize,
    pub max_tries: usize,
}

impl Default for Budget {
    fn default() -> Budget {
        Budget {
            max_size: 6,
            max_tries: 20_000,
        }
    }
}

/// `w` with the given statements turned into locking reads.
pub fn promoted(w: &Workload, reads: &[StmtRef]) -> Workload {
    let mut w = w.clone();
    for &(p, s) in reads {
        w.programs[p].statements[s].locking = true;
    }
    w
}

/// Key-based reads that start a counterflow edge of some dangerous
/// component: the only promotions that can remove a dangerous cycle.
pub fn candidates(w: &Workload, settings: Settings) -> Vec<StmtRef> {
    let g = build(w, settings);
    let mut out: Vec<StmtRef> = vec![];
    // Counterflow edges inside a component: both ends in one SCC, which
    // is exactly when the edge can lie on a cycle.
    let comp = components(&g, None);
    for e in g
        .edges
        .iter()
        .filter(|e| e.counterflow && comp[e.from as usize] == comp[e.to as usize])
    {
        let node = &g.nodes[e.from as usize];
        let p = node.ltp.program;
        let s = node.ltp.occurrences[e.from_pos as usize].stmt;
        let st = &w.programs[p].statements[s];
        if st.ty == StmtType::KeySel && !st.locking && !out.contains(&(p, s)) {
            out.push((p, s));
        }
    }
    out.sort_unstable();
    out
}

pub fn suggest(w: &Workload, settings: Settings, method: Method, budget: Budget) -> Suggestion {
    let cands = candidates(w, settings);
    let mut tried = 0;
    for size in 1..=budget.max_size.min(cands.len()) {
        let mut idx: Vec<usize> = (0..size).collect();
        loop {
            if tried >= budget.max_tries {
                return Suggestion::NotFound {
                    candidates: cands.len(),
                    tried,
                };
            }
            tried += 1;
            let set: Vec<StmtRef> = idx.iter().map(|&i| cands[i]).collect();
            if is_robust(&build(&promoted(w, &set), settings), None, method) {
                return Suggestion::Promote(set);
            }
            if !next_combination(&mut idx, cands.len()) {
                break;
            }
        }
    }
    Suggestion::NotFound {
        candidates: cands.len(),
        tried,
    }
}

/// Advance `idx` (strictly increasing indices below n) to the next
/// combination in lexicographic order; false when exhausted.
fn next_combination(idx: &mut [usize], n: usize) -> bool {
    let k = idx.len();
    for i in (0..k).rev() {
        if idx[i] < n - k + i {
            idx[i] += 1;
            for j in i + 1..k {
                idx[j] = idx[j - 1] + 1;
            }
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::next_combination;

    #[test]
    fn combinations_in_order() {
        let mut idx = vec![0, 1];
        let mut seen = vec![idx.clone()];
        while next_combination(&mut idx, 4) {
            seen.push(idx.clone());
        }
        assert_eq!(
            seen,
            vec![
                vec![0, 1],
                vec![0, 2],
                vec![0, 3],
                vec![1, 2],
                vec![1, 3],
                vec![2, 3]
            ]
        );
    }
}
