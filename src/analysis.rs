//! The whole pipeline as one call: BTPs → Unfold≤2 → summary graph →
//! robustness test, witnesses and (optionally) maximal robust subsets.

use crate::btp::Workload;
use crate::progress::{Progress, Silent};
use crate::robustness::{is_robust, witnesses, Method, Witness};
use crate::subsets::{search, Subsets, MAX_SUBSETS};
use crate::summary_graph::{build, Settings, SummaryGraph};

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
