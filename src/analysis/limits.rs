//! What the analysis can take on: the size guard on the summary graph
//! (issue 13) and the warnings for programs analysed through an
//! over-approximation. Reads no files; the CLI applies these to what the
//! front-end loaded.

use super::unfold;
use crate::model::btp::Workload;
use crate::model::error::{Diag, Result, Warning};

/// Refuse workloads whose summary graph would not fit, with a clear
/// message instead of an allocation abort (issue 13). The guard is on the
/// estimated number of edges (Σ over relations of statement occurrences²,
/// from the bodies' structure, [`unfold::plan`]), after statement-free
/// branches are collapsed and identical alternatives merged, and after
/// programs with too many unfoldings are coarsened to a sound
/// over-approximation (which [`approximation_warnings`] reports).
pub fn check_size(w: &Workload) -> Result<()> {
    fits(w, &unfold::plan(w))
}

/// [`check_size`] on a plan of `w` already made, to build the graph from
/// the same plan (`graph::build_planned`) instead of planning twice.
pub fn check_planned(w: &Workload, plan: &unfold::Plan) -> Result<()> {
    fits(w, plan)
}

/// [`check_size`], then [`approximation_warnings`], from one plan.
pub fn admit(w: &Workload) -> Result<Vec<Warning>> {
    admit_planned(w).map(|(warnings, _)| warnings)
}

/// [`admit`], with the plan (to build the graph from it:
/// `unfold::reusing`).
pub fn admit_planned(w: &Workload) -> Result<(Vec<Warning>, unfold::Plan)> {
    let plan = unfold::plan(w);
    fits(w, &plan)?;
    Ok((approximated(w, &plan), plan))
}

/// The form of the summary graph a command runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// Every edge written (`graph::build`): what every command can use.
    Edges,
    /// Edges between statement classes with their multiplicities
    /// (`blocks`, `on_blocks`): verdicts, counts, witnesses and the lowest
    /// allocation of graphs too large to write.
    Blocks,
}

/// How [`admit_form`] picks the form.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Choose {
    /// Edges up to this many estimated edges ([`unfold::MAX_ESTIMATED_EDGES`]
    /// normally; tests lower it to cross the guard on small inputs).
    UpTo(f64),
    /// This form whatever the size (tests compare the two).
    Force(Form),
}

/// What [`admit_form`] admitted: the warnings, the form, and the
/// estimated number of edges (for the note saying why blocks).
pub struct Admitted {
    pub warnings: Vec<Warning>,
    pub form: Form,
    pub estimated_edges: f64,
    /// The plan the form was chosen on (to build from it:
    /// `unfold::reusing`).
    pub plan: unfold::Plan,
}

/// As [`admit`] for the commands that also run on the block form: a
/// workload over the edge guard is admitted on [`Form::Blocks`] instead
/// of refused. A linear program longer than the positions an edge can
/// name is still refused: the block form names edges too.
pub fn admit_form(w: &Workload, choose: Choose) -> Result<Admitted> {
    let plan = unfold::plan(w);
    if let Some(d) = too_long(w, &plan) {
        return Err(d);
    }
    let form = match choose {
        Choose::Force(f) => f,
        Choose::UpTo(max) if plan.estimated_edges <= max => Form::Edges,
        Choose::UpTo(_) => Form::Blocks,
    };
    Ok(Admitted {
        warnings: approximated(w, &plan),
        form,
        estimated_edges: plan.estimated_edges,
        plan,
    })
}

fn too_long(w: &Workload, plan: &unfold::Plan) -> Option<Box<Diag>> {
    let (pi, e) = plan
        .estimates
        .iter()
        .enumerate()
        .find(|(_, e)| e.longest > unfold::MAX_NODE_LENGTH)?;
    let p = &w.programs[pi];
    let mut d = Diag::new(format!(
        "program `{}` has a linear program of up to {:.0} statements (Unfold≤2, Section 6.1); isolint analyses at most {:.0}",
        p.name, e.longest, unfold::MAX_NODE_LENGTH
    ))
    .help("split the program: loops are unfolded twice, so nested loops double its length per level");
    if let Some(f) = &p.file {
        d.message = format!("{f}: {}", d.message);
    }
    Some(d)
}

fn fits(w: &Workload, plan: &unfold::Plan) -> Result<()> {
    if plan.fits() {
        return Ok(());
    }
    if let Some(d) = too_long(w, plan) {
        return Err(d);
    }
    // The programs with the most occurrences, for the message.
    let mut big: Vec<(usize, f64)> = plan
        .estimates
        .iter()
        .map(|e| e.total_occurrences())
        .enumerate()
        .collect();
    big.sort_by(|a, b| b.1.total_cmp(&a.1));
    let names: Vec<String> = big
        .iter()
        .take(3)
        .map(|&(i, n)| format!("`{}` ({n:.0} statement occurrences)", w.programs[i].name))
        .collect();
    let total: f64 = plan.estimates.iter().map(|e| e.total_occurrences()).sum();
    Err(Diag::new(format!(
        "the summary graph of `{}` ({} programs, {total:.0} statement occurrences after Unfold≤2) would have about {:.1e} edges (Σ over relations of occurrences²); isolint builds at most {:.0e}",
        w.name,
        w.programs.len(),
        plan.estimated_edges,
        unfold::MAX_ESTIMATED_EDGES
    ))
    .help(format!(
        "`isolint analyze`, `check`, `allocate`, `subsets` and `btp` take it (they decide on edges between statement classes instead); for this command, analyse fewer programs at a time, or split the largest: {}",
        names.join(", ")
    )))
}

/// One warning per program analysed through an over-approximation (its
/// literal unfoldings would not fit): a "robust" verdict stays sound, a
/// "not robust" one may be a false alarm.
pub fn approximation_warnings(w: &Workload) -> Vec<Warning> {
    approximated(w, &unfold::plan(w))
}

fn approximated(w: &Workload, plan: &unfold::Plan) -> Vec<Warning> {
    plan.approximated()
        .map(|pi| {
            let p = &w.programs[pi];
            Warning {
                file: p.file.clone().unwrap_or_else(|| w.name.clone()),
                line: 1,
                message: format!(
                    "program `{}` has about {:.0} unfoldings (Unfold≤2, Section 6.1), too many to analyse one by one; it is analysed through {} instead, which can report a dangerous cycle that no single unfolding has (never the reverse)",
                    p.name,
                    plan.literal_unfoldings[pi],
                    plan.modes[pi].label()
                ),
            }
        })
        .collect()
}
