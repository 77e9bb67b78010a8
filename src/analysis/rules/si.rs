//! The per-level part of the edge rules (docs/allocation.md). The edges
//! of the summary graph and their counterflow labels are the same for
//! every level (Algorithm 1 uses only that a counterflow dependency is an
//! rw-antidependency, Lemma 4.1, which holds under READ COMMITTED,
//! REPEATABLE READ and SERIALIZABLE alike: all three read committed
//! versions and forbid dirty writes). What snapshot isolation adds is
//! *when the edge into the pivot may be an rw-antidependency*: under a
//! snapshot, a ww or wr dependency T₃ → T₄ means T₃ committed before T₄
//! took its snapshot (docs/allocation.md, Lemma 2), so only an
//! rw-antidependency from an operation that does not write the object can
//! feed a dangerous structure (Fekete et al., TODS 2005, Theorem 2.1).

use super::Effective;
use crate::model::btp::StmtType;
use crate::model::schema::meets;

/// Can a dependency from an occurrence of `a` to one of `b` be an
/// rw-antidependency whose source operation does not write the object?
///
/// * key sel, pred sel: their R-operations read ReadSet of the tuple and
///   their PR-operation PReadSet; an rw needs `b` to write what was read,
///   or (phantom) to insert or delete a tuple the predicate may cover.
/// * pred upd, pred del: only the PR-operation; their U/D-operations
///   write the tuple they read, so a dependency from them is also a write
///   of that tuple: the next writer waits for the commit (no dirty
///   writes), and a snapshot transaction that sees the write, or writes
///   the tuple after it, started after that commit (first-updater-wins).
/// * ins, key upd, key del: write the object they touch (same argument).
pub(crate) fn rw_capable(a: &Effective, b: &Effective) -> bool {
    use StmtType::*;
    let phantom = a.pread.is_some() && matches!(b.ty, Ins | KeyDel | PredDel);
    match a.ty {
        KeySel | PredSel => phantom || meets(&a.read, &b.write) || meets(&a.pread, &b.write),
        PredUpd | PredDel => phantom || meets(&a.pread, &b.write),
        Ins | KeyUpd | KeyDel => false,
    }
}

/// Can a counterflow dependency from an occurrence of `a` to one of `b`
/// NOT occur when `a`'s transaction runs at REPEATABLE READ or
/// SERIALIZABLE? True when `a` is a key sel of a tuple t that its own
/// transaction writes later (`Effective::rewritten_later`) and the edge can
/// only come from that read of t (not from a predicate read): `b` writes t
/// and commits first, after `a`'s snapshot (it is missing from it), so
/// `a`'s later write of t is a serialization failure (first-updater-wins,
/// whatever `b`'s level) — or, if `a` writes t first, `b` waits for `a`'s
/// commit and the dependency is not counterflow. docs/allocation.md,
/// Lemma 3. Read COMMITTED sources are unaffected (no first-updater-wins:
/// EvalPlanQual re-reads the new version).
pub(crate) fn fuw_blocked(a: &Effective, b: &Effective) -> bool {
    a.ty == StmtType::KeySel && a.rewritten_later && !meets(&a.pread, &b.write)
}
