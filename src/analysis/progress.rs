//! Progress of the long searches (fix search, maximal robust subsets),
//! reported through a trait so that the library never draws: the CLI
//! decides whether and how to show it (indicatif on a terminal only).

/// What is being searched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// `check`'s search for reads to promote to `FOR UPDATE`; `done`
    /// counts candidate sets tested.
    FixSearch,
    /// The maximal robust subsets; `done` counts program sets tested.
    Subsets,
    /// `isolint invariants`: executions run on PostgreSQL (issue 25).
    Invariants,
}

impl Stage {
    pub fn label(self) -> &'static str {
        match self {
            Stage::FixSearch => "fix search: candidate sets tested",
            Stage::Subsets => "maximal robust subsets: program sets tested",
            Stage::Invariants => "invariant search: executions run on PostgreSQL",
        }
    }
}

/// Receives progress reports. Calls are frequent (one per test), so an
/// implementation should be cheap; the searches call `finish` when done.
pub trait Progress {
    fn update(&self, stage: Stage, done: u64);
    fn finish(&self, _stage: Stage) {}
}

/// Reports nothing.
pub struct Silent;

impl Progress for Silent {
    fn update(&self, _: Stage, _: u64) {}
}
