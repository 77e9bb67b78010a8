//! The analysis: BTPs → Unfold≤2 (`unfold`, Section 6.1) → summary graph
//! (`graph` with the edge rules of `rules`, Algorithm 1) → type-II cycle
//! test and witnesses (`robustness`, Algorithm 2) → maximal robust
//! subsets (`subsets`, Section 7.2) and verified read promotion
//! (`promote`). This file runs the pipeline per command and returns
//! [`Findings`], the one result the reports render.
//!
//! Depends on `model` only. Must not: read files, print, or format text
//! for people (progress goes through the `progress` trait).

pub mod allocation;
pub mod blocks;
pub mod explorer;
pub mod findings;
pub mod graph;
pub mod limits;
pub mod on_blocks;
pub mod oracle;
pub mod progress;
pub mod promote;
pub mod robustness;
pub mod rules;
pub mod scc;
pub mod subsets;
pub mod unfold;

pub use findings::Findings;

use crate::model::btp::Workload;
use crate::model::isolation::{Deployed, Level};
use crate::model::provenance::Provenance;
use crate::model::settings::Settings;
use findings::{edits, steps, DeployedVerdict, Isolation, SubsetTable};
use graph::build;
use progress::{Progress, Silent};
use promote::{suggest_in_components, Budget};
use robustness::{is_robust_under, verdict, witnesses_under, Method};
use subsets::Subsets;

/// [`analyze_with`] without progress reports.
pub fn analyze(w: &Workload, settings: Settings, method: Method, subsets: bool) -> Findings {
    analyze_with(w, settings, method, subsets, &Silent)
}

/// `isolint analyze`: verdict, one witness per dangerous component, and
/// (when asked) the maximal robust subsets, with the subset search's
/// progress reported to `progress`.
pub fn analyze_with(
    w: &Workload,
    settings: Settings,
    method: Method,
    subsets: bool,
    progress: &dyn Progress,
) -> Findings {
    let graph = build(w, settings);
    // Components and pivots once, for the verdict, the witnesses and the
    // lowest allocation.
    let v = verdict(&graph, method);
    let robust = v.witnesses.is_empty();
    let witnesses = v.witnesses;
    let cycles = witnesses.iter().map(|x| steps(w, &graph, x)).collect();
    // The subset search starts from the verdict on the whole workload
    // instead of testing it again.
    let subsets = subsets.then(|| block_subsets(w, settings, method, Some(robust), progress));
    // Robust under READ COMMITTED (type II, or the stricter type I): the
    // lowest allocation is READ COMMITTED everywhere, no search needed.
    let isolation = if robust && method != Method::Snapshot {
        Isolation::read_committed(w.programs.len())
    } else {
        // Type I computes no pivots; the allocation reads the type-II ones.
        let pivots = match v.pivots {
            Some(p) => p,
            None => rules::Pivots::of_graph(&graph, &v.comp, |_| false),
        };
        Isolation::lowest_in(w, &graph, v.comp, &pivots)
    };
    Findings {
        settings,
        method,
        graph,
        robust,
        witnesses,
        cycles,
        subsets,
        suggestion: None,
        edits: vec![],
        isolation,
        table: None,
        confirmations: vec![],
        counted: None,
    }
}

/// [`check_with`] without progress reports.
pub fn check(w: &Workload, settings: Settings, method: Method) -> Findings {
    check_with(w, settings, method, &Silent)
}

/// `isolint check`: the verdict, a verified fix (read promotion) or,
/// failing that, the maximal robust subsets. The summary graph is built
/// once: the fix search masks it (see `promote`); the subset search runs
/// on the block form ([`block_subsets`]).
pub fn check_with(
    w: &Workload,
    settings: Settings,
    method: Method,
    progress: &dyn Progress,
) -> Findings {
    let mut f = analyze_with(w, settings, method, false, progress);
    if f.robust {
        return f;
    }
    let comp = f.isolation.components();
    let suggestion = suggest_in_components(
        w,
        &f.graph,
        comp,
        &f.witnesses,
        method,
        Budget::default(),
        progress,
    );
    if let Some(set) = suggestion.reads() {
        f.edits = edits(w, set);
        // The allocation as is was computed by `analyze_with` on the
        // same graph: only the one after the edits changes.
        f.isolation.mark_fixed(w.programs.len());
    } else {
        f.subsets = Some(block_subsets(w, settings, method, Some(false), progress));
    }
    f.suggestion = Some(suggestion);
    f
}

/// `isolint allocate`: the lowest robust allocation with its reasons
/// (`Findings::isolation`), the READ COMMITTED verdict and witnesses, and
/// the verified `FOR UPDATE` promotion with the allocation after it. No
/// subset search.
pub fn allocate_with(w: &Workload, settings: Settings, progress: &dyn Progress) -> Findings {
    let mut f = analyze_with(w, settings, Method::TypeII, false, progress);
    if f.robust {
        return f;
    }
    let comp = f.isolation.components();
    let suggestion = suggest_in_components(
        w,
        &f.graph,
        comp,
        &f.witnesses,
        Method::TypeII,
        Budget::default(),
        progress,
    );
    if let Some(set) = suggestion.reads() {
        f.edits = edits(w, set);
        // The allocation as is was computed by `analyze_with` on the
        // same graph: only the one after the edits changes.
        f.isolation.mark_fixed(w.programs.len());
    }
    f.suggestion = Some(suggestion);
    f
}

/// `isolint check` with the levels a team deploys (docs/allocation.md):
/// the verdict is robustness under `deployed` (with every program at
/// READ COMMITTED, exactly [`check_with`]), the witnesses are cycles
/// dangerous under it, and `isolation.deployed` names the programs to
/// raise. The fix search and the subsets stay those of READ COMMITTED: a
/// promotion that makes READ COMMITTED robust makes every allocation
/// robust (robust allocations are closed upwards).
pub fn check_deployed_with(
    w: &Workload,
    settings: Settings,
    method: Method,
    deployed: &Deployed,
    progress: &dyn Progress,
) -> Findings {
    let mut f = check_with(w, settings, method, progress);
    let all_rc = deployed
        .allocation
        .0
        .iter()
        .all(|&l| l == Level::ReadCommitted);
    if !all_rc {
        f.robust = is_robust_under(&f.graph, None, &deployed.allocation);
        f.witnesses = if f.robust {
            vec![]
        } else {
            witnesses_under(&f.graph, None, &deployed.allocation)
        };
        f.cycles = f.witnesses.iter().map(|x| steps(w, &f.graph, x)).collect();
        if f.robust {
            f.suggestion = None;
            f.edits = vec![];
            f.subsets = None;
        }
    }
    let raise = allocation::to_raise(&deployed.allocation, &f.isolation.as_is);
    f.isolation.deployed = Some(DeployedVerdict {
        deployed: deployed.clone(),
        robust: f.robust,
        raise: if f.robust { vec![] } else { raise },
    });
    f
}

/// `isolint report`: the check, plus the Figure 6/7 table over the
/// paper's four settings (with the same-tuple setting of `settings`).
pub fn report_with(
    w: &Workload,
    settings: Settings,
    method: Method,
    progress: &dyn Progress,
) -> Findings {
    let mut f = check_with(w, settings, method, progress);
    f.table = Some(subset_table(
        w,
        &Settings::paper_rows(settings.same_tuple),
        &[Method::TypeII, Method::TypeI],
        progress,
    ));
    f
}

/// Maximal robust subsets for each setting and method (`isolint subsets`,
/// Figures 6 and 7).
pub fn subset_table(
    w: &Workload,
    rows: &[Settings],
    methods: &[Method],
    progress: &dyn Progress,
) -> SubsetTable {
    let rows = rows
        .iter()
        .map(|&s| {
            // On blocks (`block_subsets`): the table never needs an edge.
            let b = blocks::Blocks::build(w, s);
            let per = methods
                .iter()
                .map(|&m| on_blocks::subsets(&b, m, None, progress))
                .collect();
            (s, per)
        })
        .collect();
    SubsetTable {
        methods: methods.to_vec(),
        rows,
    }
}

/// The maximal robust subsets, searched on the block form whatever the
/// form of the rest of the command: the search's answer depends only on
/// the verdicts of its tests, and each block verdict is Algorithm 2's on
/// the induced subgraph (`blocks` module comment (3)), so these are the
/// sets `subsets::search` lists on the summary graph, in the same order
/// and cut at the same place (`on_blocks::subsets_up_to`); a test costs
/// the mask's statement occurrences instead of its edges (issue 26).
/// `whole_robust`: the verdict on the whole workload, when known.
pub fn block_subsets(
    w: &Workload,
    settings: Settings,
    method: Method,
    whole_robust: Option<bool>,
    progress: &dyn Progress,
) -> Subsets {
    if whole_robust == Some(true) {
        // The workload is its own only maximal robust subset.
        return Subsets::whole(w.programs.len());
    }
    on_blocks::subsets(
        &blocks::Blocks::build(w, settings),
        method,
        whole_robust,
        progress,
    )
}

/// Confirm each dangerous cycle with the bounded schedule explorer
/// (issue 11): a concrete non-serializable READ COMMITTED schedule of the
/// cycle's programs, or "not confirmed within `bounds`".
pub fn confirm(w: &Workload, f: &mut Findings, bounds: explorer::Bounds) {
    confirm_with(w, &Provenance::default(), f, bounds);
}

/// [`confirm`] with the front-end's provenance: confirmed with values,
/// or in the BTP model only (issue 23, item 1; `explorer::confirm_in`).
pub fn confirm_with(w: &Workload, prov: &Provenance, f: &mut Findings, bounds: explorer::Bounds) {
    // `check` with deployed levels: confirm under those levels; `analyze
    // --level repeatable-read`: under snapshot isolation.
    let rc = crate::model::isolation::Allocation::uniform(w.programs.len(), f.method.level());
    let alloc = f
        .isolation
        .deployed
        .as_ref()
        .map_or(&rc, |d| &d.deployed.allocation);
    f.confirmations = f
        .witnesses
        .iter()
        .map(|x| explorer::confirm_in(w, prov, &f.graph, x, bounds, alloc))
        .collect();
}
