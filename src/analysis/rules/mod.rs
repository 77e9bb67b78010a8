//! Edge rules: for an isolation level, which dependencies between two
//! statement occurrences become summary-graph edges, and whether they are
//! counterflow. The graph builder (`graph`) asks here and nowhere else, so
//! a new level (snapshot isolation, issue 12) is a new module beside
//! `mvrc` and no change to the builder.

use crate::model::btp::StmtType;
use crate::model::schema::{AttrSet, FkId};

pub mod mvrc;
pub mod pair;
pub mod si;

pub(crate) use mvrc::edge_kinds;
pub use pair::Reason;
pub(crate) use pair::{dangerous, dangerous_pair, InEdge, Incoming, OutEdge, Outgoing, Pivots};
pub(crate) use si::{fuw_blocked, rw_capable};

/// A statement occurrence as Algorithm 1 sees it: its sets after the
/// granularity setting, and which constraints protect it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Effective {
    pub(crate) ty: StmtType,
    pub(crate) pread: Option<AttrSet>,
    pub(crate) read: Option<AttrSet>,
    pub(crate) write: Option<AttrSet>,
    /// Foreign keys f with a constraint q_k = f(q_i), q_k earlier in the
    /// LTP and of type key upd, key del or ins (CDEPCONDS).
    pub(crate) protected_by: Vec<usize>,
    /// q_i has a same-tuple constraint q_k = id(q_i) with such a q_k.
    pub(crate) same_tuple: bool,
    /// q_i takes row locks on what it reads (`FOR UPDATE`/`FOR SHARE`).
    pub(crate) locking: bool,
    /// q_i is a key sel whose tuple a later key upd/key del of the same
    /// literal LTP writes (a forward same-tuple link): first-updater-wins
    /// then stops a counterflow rw from q_i when the transaction runs on a
    /// snapshot (`si::fuw_blocked`, docs/allocation.md Lemma 3).
    pub(crate) rewritten_later: bool,
    /// q_i is a foreign-key check's KEY SHARE read of the parent row
    /// (`Held::KeyShare`): it blocks that row's deletion until commit.
    pub(crate) key_share: bool,
    /// q_i is the NO ACTION check of foreign key f for a parent row its
    /// transaction has deleted (`Held::Children`).
    pub(crate) children_of: Option<FkId>,
    /// q_i is an insert whose parent row under foreign key f its
    /// transaction locks or writes (a link q_k = f(q_i) with q_k a KEY
    /// SHARE check, a key upd, key del or ins, anywhere in the LTP).
    pub(crate) parent_locked: Vec<FkId>,
    /// q_i reads only rows its transaction inserted (`Held::OwnInserts`).
    pub(crate) own_inserts: bool,
}
