//! `isolint check --postgres-temp` / `--postgres URL` (issue 23, item 6):
//! which of `check`'s dangerous cycles are replayed on PostgreSQL, and
//! each one's answer. A cycle is replayed only when the explorer
//! confirmed it with a schedule; the schedule runs through
//! [`witness::replay`] exactly as `isolint replay` runs it. Nothing here
//! decides robustness: the verdict and the exit code stay the static
//! test's. The values are searched as `isolint replay` searches them
//! (`solve`: one search for both commands).

use super::server::Server;
use super::witness::{self, WitnessReplay};
use crate::analysis::explorer::Confirmation;
use crate::analysis::graph::SummaryGraph;
use crate::frontend::Sources;
use crate::model::btp::Workload;
use crate::model::isolation::Level;
use crate::model::provenance::Provenance;

/// What happened on PostgreSQL for one dangerous cycle.
#[derive(Debug, Clone)]
pub enum OnServer {
    /// The explorer's schedule ran; its verdict says whether the outcome
    /// differs from every serial order.
    Replayed(Box<WitnessReplay>),
    /// The replay could not run (the server refused the schema, a
    /// connection failed): not reproduced, and the message says why.
    Failed(String),
    /// Nothing was run, and why (no confirming schedule, no server).
    NotReplayed(String),
}

/// Does any dangerous cycle have a schedule to replay? (No server is
/// started when none has.)
pub fn any_to_replay(confirmations: &[Confirmation]) -> bool {
    confirmations
        .iter()
        .any(|c| matches!(c, Confirmation::Confirmed(_)))
}

/// Replays the schedule of each confirmed cycle on `server` (one answer
/// per confirmation, in order; `None` when [`any_to_replay`] said no and
/// no server was started). A replay that fails is that cycle's answer,
/// not an error of the whole check: the static verdict stands whatever
/// the server does.
pub fn replay_confirmed(
    server: Option<&Server>,
    sources: &Sources,
    w: &Workload,
    prov: &Provenance,
    g: &SummaryGraph,
    confirmations: &[Confirmation],
) -> Vec<OnServer> {
    confirmations
        .iter()
        .map(|c| match c {
            // Each transaction at the level the explorer gave it: the
            // deployed allocation's level of its program (issue 23).
            Confirmation::Confirmed(s) => match server {
                None => OnServer::NotReplayed("no PostgreSQL server to replay on".into()),
                Some(server) => {
                    let levels: Vec<Level> = s.transactions.iter().map(|t| t.level).collect();
                    match witness::replay(server, sources, w, prov, g, s, &levels) {
                        Ok(r) => OnServer::Replayed(Box::new(r)),
                        Err(d) => OnServer::Failed(d.message.clone()),
                    }
                }
            },
            Confirmation::NotWithinBounds { .. } => OnServer::NotReplayed(
                "the explorer found no schedule to replay (not confirmed)".into(),
            ),
            Confirmation::NotChecked(_) => OnServer::NotReplayed(
                "the explorer did not search this cycle, so there is no schedule to replay".into(),
            ),
        })
        .collect()
}
