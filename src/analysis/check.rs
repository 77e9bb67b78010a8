//! The pre-deploy check: verdict, one witness per dangerous component, and
//! a verified fix (read promotion) or, failing that, the maximal robust
//! subsets. The output formats live in `report`.

use crate::analysis::graph::Settings;
use crate::analysis::progress::{Progress, Silent};
use crate::analysis::promote::{suggest_in, Budget, Suggestion};
use crate::analysis::robustness::Method;
use crate::analysis::subsets::{search, Subsets, MAX_SUBSETS};
use crate::analysis::{analyze_with, Analysis};
use crate::model::btp::Workload;

pub struct CheckResult {
    pub analysis: Analysis,
    /// `None` when robust.
    pub suggestion: Option<Suggestion>,
    /// Maximal robust subsets, when no promotion makes the whole robust.
    pub subsets: Option<Subsets>,
}

/// [`check_with`] without progress reports. The flag is ignored (the
/// library never draws); it stays so existing callers compile.
pub fn check(
    w: &Workload,
    settings: Settings,
    method: Method,
    _show_progress: bool,
) -> CheckResult {
    check_with(w, settings, method, &Silent)
}

/// The check, with progress of the fix search and the subset search
/// reported to `progress`. The summary graph is built once: the fix
/// search masks it (see `promote`) and the subset search groups it.
pub fn check_with(
    w: &Workload,
    settings: Settings,
    method: Method,
    progress: &dyn Progress,
) -> CheckResult {
    let analysis = analyze_with(w, settings, method, false, progress);
    if analysis.robust {
        return CheckResult {
            analysis,
            suggestion: None,
            subsets: None,
        };
    }
    let suggestion = suggest_in(w, &analysis.graph, method, Budget::default(), progress);
    let subsets = (!matches!(suggestion, Suggestion::Promote(_)))
        .then(|| search(&analysis.graph, method, MAX_SUBSETS, Some(false), progress));
    CheckResult {
        analysis,
        suggestion: Some(suggestion),
        subsets,
    }
}
