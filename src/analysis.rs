//! The whole pipeline as one call: BTPs → Unfold≤2 → summary graph →
//! robustness test, witnesses and (optionally) maximal robust subsets.

use crate::btp::Workload;
use crate::robustness::{is_robust, witnesses, Method, Witness};
use crate::subsets::{maximal_robust_subsets, Subsets};
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

pub fn analyze(
    w: &Workload,
    settings: Settings,
    method: Method,
    subsets: bool,
    progress: bool,
) -> Analysis {
    let graph = build(w, settings);
    let robust = is_robust(&graph, None, method);
    let witnesses = if robust {
        vec![]
    } else {
        witnesses(&graph, None, method)
    };
    let subsets = subsets.then(|| maximal_robust_subsets(&graph, method, progress));
    Analysis {
        settings,
        method,
        graph,
        robust,
        witnesses,
        subsets,
    }
}
