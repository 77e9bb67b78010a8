//! The analysis: BTPs → Unfold≤2 (`unfold`, Section 6.1) → summary graph
//! (`graph` with the edge rules of `rules`, Algorithm 1) → type-II cycle
//! test and witnesses (`robustness`, Algorithm 2) → maximal robust
//! subsets (`subsets`, Section 7.2) and verified read promotion
//! (`promote`). This file runs the pipeline as one call.
//!
//! Depends on `model` only. Must not: read files, print, or format text
//! for people (progress goes through the `progress` trait).

pub mod check;
pub mod explorer;
pub mod graph;
pub mod limits;
pub mod oracle;
pub mod progress;
pub mod promote;
pub mod robustness;
pub mod rules;
pub mod subsets;
pub mod unfold;

use crate::analysis::graph::{build, Settings, SummaryGraph};
use crate::analysis::progress::{Progress, Silent};
use crate::analysis::robustness::{is_robust, witnesses, Method, Witness};
use crate::analysis::subsets::{search, Subsets, MAX_SUBSETS};
use crate::model::btp::Workload;

pub struct Analysis {
    pub settings: Settings,
    pub method: Method,
    pub graph: SummaryGraph,
    pub robust: bool,
    /// One per strongly connected component that has a dangerous cycle.
    pub witnesses: Vec<Witness>,
    /// Sorted program-index lists, when asked for.
    pub subsets: Option<Subsets>,
}

/// [`analyze_with`] without progress reports. The flag is ignored (the
/// library never draws); it stays so existing callers compile.
pub fn analyze(
    w: &Workload,
    settings: Settings,
    method: Method,
    subsets: bool,
    _show_progress: bool,
) -> Analysis {
    analyze_with(w, settings, method, subsets, &Silent)
}

/// The pipeline, with the subset search's progress reported to `progress`.
pub fn analyze_with(
    w: &Workload,
    settings: Settings,
    method: Method,
    subsets: bool,
    progress: &dyn Progress,
) -> Analysis {
    let graph = build(w, settings);
    let robust = is_robust(&graph, None, method);
    let witnesses = if robust {
        vec![]
    } else {
        witnesses(&graph, None, method)
    };
    // The subset search starts from the verdict on the whole workload
    // instead of testing it again.
    let subsets = subsets.then(|| search(&graph, method, MAX_SUBSETS, Some(robust), progress));
    Analysis {
        settings,
        method,
        graph,
        robust,
        witnesses,
        subsets,
    }
}
