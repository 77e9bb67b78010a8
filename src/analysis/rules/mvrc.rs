//! Which dependencies between two statement occurrences become summary-
//! graph edges under multiversion READ COMMITTED: Tables 1a/1b with
//! NCDEPCONDS / CDEPCONDS of Algorithm 1 (Section 6.2), plus isolint's
//! locking-read and same-tuple rules. Builds no graph.

use super::Effective;
use crate::model::schema::meets;

/// One entry of Tables 1a/1b: `Some(b)` is a fixed answer, `None` is the
/// table's ⊥ (decided by NCDEPCONDS / CDEPCONDS).
type Cell = Option<bool>;
const T: Cell = Some(true);
const F: Cell = Some(false);
const U: Cell = None;

/// Table 1a, NCDEPTABLE[q_i][q_j]. Rows and columns in the paper's order:
/// ins, key sel, pred sel, key upd, pred upd, key del, pred del.
#[rustfmt::skip]
pub const NCDEPTABLE: [[Cell; 7]; 7] = [
    /* ins      */ [F, U, T, U, T, U, T],
    /* key sel  */ [F, F, F, U, U, U, U],
    /* pred sel */ [T, F, F, U, U, T, T],
    /* key upd  */ [F, U, U, U, U, U, U],
    /* pred upd */ [T, U, U, U, U, T, T],
    /* key del  */ [F, F, T, F, T, F, T],
    /* pred del */ [T, F, T, U, T, T, T],
];

/// Table 1b, CDEPTABLE[q_i][q_j], same order.
#[rustfmt::skip]
pub const CDEPTABLE: [[Cell; 7]; 7] = [
    /* ins      */ [F, F, F, F, F, F, F],
    /* key sel  */ [F, F, F, U, U, U, U],
    /* pred sel */ [T, F, F, U, U, T, T],
    /* key upd  */ [F, F, F, F, F, F, F],
    /* pred upd */ [T, F, F, U, U, T, T],
    /* key del  */ [F, F, F, F, F, F, F],
    /* pred del */ [T, F, F, U, U, T, T],
];

/// NCDEPCONDS(q_i, q_j) of Algorithm 1.
fn ncdep_conds(a: &Effective, b: &Effective) -> bool {
    meets(&a.write, &b.write)
        || meets(&a.write, &b.read)
        || meets(&a.write, &b.pread)
        || meets(&a.read, &b.write)
        || meets(&a.pread, &b.write)
}

/// CDEPCONDS(q_i, q_j) of Algorithm 1, with the FK rule, plus the
/// same-tuple rule (docs/same-tuple.md): a read of a tuple this
/// transaction already wrote cannot be the source of a counterflow
/// rw-antidependency.
fn cdep_conds(a: &Effective, b: &Effective) -> bool {
    if meets(&a.pread, &b.write) {
        return true;
    }
    if meets(&a.read, &b.write) {
        // A read under a row lock, or of a tuple this transaction already
        // wrote, is ordered against every writer of the tuple by the
        // writer's lock (docs/locking-reads.md, docs/same-tuple.md).
        if a.same_tuple || a.locking {
            return false;
        }
        // Both programs wrote f(t) before touching t: they are ordered by
        // the write on the parent tuple.
        if a.protected_by.iter().any(|f| b.protected_by.contains(f)) {
            return false;
        }
        return true;
    }
    false
}

fn decide(
    table: &[[Cell; 7]; 7],
    a: &Effective,
    b: &Effective,
    conds: fn(&Effective, &Effective) -> bool,
) -> bool {
    match table[a.ty.index()][b.ty.index()] {
        Some(v) => v,
        None => conds(a, b),
    }
}

/// `(non-counterflow edge?, counterflow edge?)` for q_i → q_j. Issue 24's
/// refinements (docs/rules.md, "Refinements") remove counterflow edges
/// only: a read of rows its own transaction inserted has none
/// (`own_inserts`), and a parent row's lock orders two more kinds.
pub(crate) fn edge_kinds(a: &Effective, b: &Effective) -> (bool, bool) {
    (
        decide(&NCDEPTABLE, a, b, ncdep_conds),
        decide(&CDEPTABLE, a, b, cdep_conds) && !parent_lock_orders(a, b) && !a.own_inserts,
    )
}

/// A counterflow rw q_i → q_j that the parent row's lock rules out
/// (docs/rules.md, "Foreign-key checks and the parent row's lock"): both
/// transactions hold conflicting locks on one parent row until commit, so
/// the reader's read comes after the writer's commit or the writer's
/// commit after the reader's.
/// * q_i a FK check's KEY SHARE read of t, q_j a delete (of t): the delete
///   waits for the reader's commit, or the read for the delete's commit
///   (and then finds no row: the reader aborts).
/// * q_i the NO ACTION check of f for a row its transaction deleted, q_j
///   an insert of a child under f whose parent row its transaction locks:
///   the child can match only if that parent is the deleted row.
fn parent_lock_orders(a: &Effective, b: &Effective) -> bool {
    use crate::model::btp::StmtType::{Ins, KeyDel, PredDel, PredSel};
    (a.key_share && matches!(b.ty, KeyDel | PredDel))
        || (a.ty == PredSel
            && b.ty == Ins
            && a.children_of.is_some_and(|f| b.parent_locked.contains(&f)))
}
