//! `isolint replay`: its arguments and its composition — load, find and
//! confirm the dangerous cycles (as `check` does), replay each confirmed
//! schedule on PostgreSQL, optionally random rounds, render, exit code.

use super::args::{ReplayArgs, ServerArgs, TextOrJson};
use super::exit::Exit;
use super::progress::Spinner;
use super::{emit, json_text, load_workload, start_server};
use crate::analysis::explorer::{Bounds, Confirmation};
use crate::analysis::robustness::Method;
use crate::model::error::{Diag, Result};
use crate::model::isolation::{Allocation, Level};
use crate::replay::random::{self, RandomConfig};
use crate::replay::witness::{self, Verdict};
use crate::report;
use crate::report::replay::Item;

/// Exit 1 when an anomaly is reproduced, 0 when none.
pub fn replay(args: &ReplayArgs) -> Result<Exit> {
    let text = args.format == TextOrJson::Text;
    let mut loaded = load_workload(&args.input, text)?;
    // `--levels`: the deployed levels, resolved as `check` resolves them.
    let deployed = match &args.levels {
        Some(spec) => Some(super::deployed_levels(&mut loaded, Some(spec), text)?),
        None => None,
    };
    let loaded = loaded;
    let Some(sources) = &loaded.sources else {
        return Err(Diag::new(format!(
            "{} is a BTP file: it has no SQL to run",
            args.input.workload.display()
        ))
        .help("replay needs a directory of .sql programs with its schema DDL (e.g. workloads/smallbank)"));
    };
    let w = &loaded.workload;
    let server = start_server(&args.server)?;
    // The DDL first: a schema PostgreSQL rejects is bad input, whether or
    // not there is anything to replay.
    drop(crate::replay::scratch::Scratch::create(
        &server,
        &sources.schema,
    )?);
    let level = args.level.level();
    let (f, alloc) = findings(w, args, deployed.as_ref());
    let bounds = Bounds {
        max_states: 200_000,
        ..Bounds::default()
    };
    let mut replays = vec![];
    let mut skipped = vec![];
    for (n, x) in f.witnesses.iter().enumerate() {
        let cycle = cycle_name(w, &f.graph, x);
        // With the front-end's provenance, as `check` confirms (issue 23):
        // with values first, the BTP model's schedule only as a labelled
        // fallback (without it, Fekete's read-only workload replayed two
        // `savings` rows with one key instead of `check`'s anomaly).
        let prov = &loaded.provenance;
        match crate::analysis::explorer::confirm_in(w, prov, &f.graph, x, bounds, &alloc) {
            Confirmation::Confirmed(s) => {
                // The explorer's schedule is of READ COMMITTED transactions
                // unless levels are deployed: then each at its own.
                let levels: Vec<Level> = match deployed {
                    Some(_) => s.transactions.iter().map(|t| t.level).collect(),
                    None => vec![level; s.transactions.len()],
                };
                let r = witness::replay(&server, sources, w, &loaded.provenance, &f.graph, &s, &levels)?;
                let mut lines = report::schedule::lines(w, &s);
                let label = s.model_only.as_ref().map(|why| format!("in the model only: a schedule of the BTPs (Section 5), not of the programs with values: {why}"));
                lines.splice(0..0, label);
                replays.push((n, cycle, lines, s.model_only, r));
            }
            Confirmation::NotWithinBounds { bounds, .. } => skipped.push((
                n,
                cycle,
                format!("the explorer found no concrete schedule within its bounds ({bounds}); that does not show the alarm is false: the explorer does not model {}", crate::analysis::explorer::NOT_MODELLED.join("; ")),
            )),
            Confirmation::NotChecked(why) => skipped.push((n, cycle, format!("not confirmed: {why}"))),
        }
    }
    let random = if args.random > 0 {
        Some(random::replay(
            &server,
            sources,
            w,
            &loaded.provenance,
            RandomConfig {
                rounds: args.random,
                txns: args.random_txns as usize,
                keys: 2,
                seed: args.seed,
                level,
            },
        )?)
    } else {
        None
    };
    let mut items: Vec<(usize, Item)> = replays
        .iter()
        .map(|(n, cycle, schedule, model_only, r)| {
            (
                *n,
                Item::Replayed {
                    cycle: cycle.clone(),
                    schedule: schedule.clone(),
                    model_only: model_only.clone(),
                    replay: r,
                },
            )
        })
        .collect();
    items.extend(
        skipped
            .into_iter()
            .map(|(n, cycle, why)| (n, Item::Skipped { cycle, why })),
    );
    items.sort_by_key(|(n, _)| *n);
    let items: Vec<Item> = items.into_iter().map(|(_, i)| i).collect();
    let server_name = format!("{} ({})", server.version, server.display);
    let text = match args.format {
        TextOrJson::Json => json_text(&report::replay::json(&items, random.as_ref(), &server_name)),
        TextOrJson::Text => report::replay::text(&items, random.as_ref(), &server_name),
    };
    emit(&text)?;
    let reproduced = replays
        .iter()
        .any(|(_, _, _, _, r)| r.verdict == Verdict::Reproduced)
        || random.as_ref().is_some_and(|r| !r.anomalies.is_empty());
    Ok(Exit::finding_if(reproduced))
}

/// The findings replay confirms: every program at `--level`, or the
/// deployed allocation: the cycles dangerous under it (docs/allocation.md),
/// each transaction then replayed at its program's level.
fn findings(
    w: &crate::model::btp::Workload,
    args: &ReplayArgs,
    deployed: Option<&super::Deployed>,
) -> (crate::analysis::Findings, Allocation) {
    match deployed {
        Some(d) => (
            crate::analysis::check_deployed_with(
                w,
                args.settings.settings(),
                Method::TypeII,
                d,
                &Spinner::new(),
            ),
            d.allocation.clone(),
        ),
        None => (
            crate::analysis::analyze_with(
                w,
                args.settings.settings(),
                Method::TypeII,
                false,
                &Spinner::new(),
            ),
            Allocation::uniform(w.programs.len(), Level::ReadCommitted),
        ),
    }
}

/// `Amalgamate → Balance`: the programs on a witness cycle.
fn cycle_name(
    w: &crate::model::btp::Workload,
    g: &crate::analysis::graph::SummaryGraph,
    x: &crate::analysis::robustness::Witness,
) -> String {
    let names: Vec<String> = crate::analysis::explorer::witness_nodes(x)
        .iter()
        .map(|&v| w.programs[g.nodes[v].ltp.program].name.clone())
        .collect();
    names.join(" / ")
}

/// Per witness of `f`, what PostgreSQL says (empty without the flags).
/// The server is started (or connected to) only when a cycle has a
/// confirming schedule, and a temporary one is stopped when this returns,
/// also on an error (`Server`'s drop, and its watchdog on Ctrl-C).
pub fn check_on_postgres(
    pg: &ServerArgs,
    loaded: &crate::frontend::Loaded,
    f: &crate::analysis::Findings,
) -> Result<Vec<report::OnPostgres>> {
    use crate::replay::confirmed::{any_to_replay, replay_confirmed};
    if !pg.given() {
        return Ok(vec![]);
    }
    let Some(sources) = &loaded.sources else {
        return Err(Diag::new(format!(
            "{} is a BTP file: it has no SQL to replay on PostgreSQL",
            loaded.workload.name
        ))
        .help("--postgres-temp and --postgres need a directory of .sql programs with its schema DDL (e.g. workloads/smallbank); drop the flag to check a BTP file"));
    };
    // The server lives until the answers are in, and is stopped (a
    // temporary one removed) when it goes out of scope, error or not.
    let server = if any_to_replay(&f.confirmations) {
        Some(start_server(pg)?)
    } else {
        None
    };
    let answers = replay_confirmed(
        server.as_ref(),
        sources,
        &loaded.workload,
        &loaded.provenance,
        &f.graph,
        &f.confirmations,
    );
    Ok(answers.iter().map(report::replay::on_postgres).collect())
}
