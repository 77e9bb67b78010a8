//! The pre-deploy check: verdict, one witness per dangerous component, and
//! a verified fix (read promotion) or, failing that, the maximal robust
//! subsets. The output formats live in `report`.

use crate::analysis::{analyze, Analysis};
use crate::btp::Workload;
use crate::promote::{suggest, Budget, Suggestion};
use crate::robustness::Method;
use crate::subsets::{maximal_robust_subsets, Subsets};
use crate::summary_graph::Settings;

pub struct CheckResult {
    pub analysis: Analysis,
    /// `None` when robust.
    pub suggestion: Option<Suggestion>,
    /// Maximal robust subsets, when no promotion makes the whole robust.
    pub subsets: Option<Subsets>,
}

pub fn check(w: &Workload, settings: Settings, method: Method, progress: bool) -> CheckResult {
    let analysis = analyze(w, settings, method, false, progress);
    if analysis.robust {
        return CheckResult {
            analysis,
            suggestion: None,
            subsets: None,
        };
    }
    let suggestion = suggest(w, settings, method, Budget::default());
    let subsets = matches!(suggestion, Suggestion::NotFound { .. })
        .then(|| maximal_robust_subsets(&analysis.graph, method, progress));
    CheckResult {
        analysis,
        suggestion: Some(suggestion),
        subsets,
    }
}
