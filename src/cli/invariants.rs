//! `isolint invariants` and `isolint allocate --invariants` (issue 25):
//! arguments and composition — load (with the stated invariants), the
//! static cycles and the explorer's schedules, the search on PostgreSQL,
//! render, exit code.

use std::time::Duration;

use super::args::{InvariantsArgs, InvariantsFormat};
use super::exit::Exit;
use super::progress::Spinner;
use super::{emit, json_text, load_workload, start_server};
use crate::analysis::explorer::{Bounds, Confirmation};
use crate::analysis::robustness::Method;
use crate::frontend::{invariants as stated_invariants, Loaded};
use crate::model::error::{Diag, Result};
use crate::model::isolation::{parse_levels, Level};
use crate::replay::invariants::{search, Config, Report, Verdict};
use crate::replay::server::Server;
use crate::report;

/// What both commands need: the workload, its invariants, the server,
/// the explorer's schedules.
struct Prepared {
    loaded: Loaded,
    stated: stated_invariants::Stated,
    server: Server,
    schedules: Vec<crate::analysis::explorer::Schedule>,
    findings: crate::analysis::Findings,
}

fn prepare(args: &InvariantsArgs, text: bool) -> Result<Prepared> {
    let loaded = load_workload(&args.input, text)?;
    if loaded.sources.is_none() {
        return Err(Diag::new(format!(
            "{} is a BTP file: it has no SQL to run",
            args.input.workload.display()
        ))
        .help("invariants need a directory of .sql programs with its schema DDL and `invariants:` in isolint.yaml"));
    }
    let stated = stated_invariants::load(&args.input.workload, &loaded.workload.schema)?;
    if stated.invariants.is_empty() {
        return Err(Diag::new(format!("{} states no invariants", args.input.workload.display()))
            .help("add `invariants: {name: \"SELECT bool_and(…) FROM …\"}` to isolint.yaml, or `invariants_file:` (docs/invariants.md)"));
    }
    let server = start_server(&args.server)?;
    let bounds = Bounds {
        max_states: 200_000,
        ..Bounds::default()
    };
    let mut schedules = vec![];
    let g = crate::analysis::analyze_with(
        &loaded.workload,
        args.settings.settings(),
        Method::TypeII,
        false,
        &Spinner::new(),
    );
    for x in &g.witnesses {
        if let Confirmation::Confirmed(s) =
            crate::analysis::explorer::confirm(&loaded.workload, &g.graph, x, bounds)
        {
            schedules.push(s);
        }
    }
    // The schedules refer to `g`'s graph; keep its findings.
    Ok(Prepared {
        loaded,
        stated,
        server,
        schedules,
        findings: g,
    })
}

fn allocation(args: &InvariantsArgs, w: &crate::model::btp::Workload) -> Result<Vec<Level>> {
    let base = args.level.map_or(Level::ReadCommitted, |l| l.level());
    let mut levels = vec![base; w.programs.len()];
    if let Some(spec) = &args.levels {
        let pairs = parse_levels(spec).map_err(|e| {
            Diag::new(format!("--levels: {e}"))
                .help("write --levels PROGRAM=LEVEL,… with LEVEL read-committed, repeatable-read or serializable")
        })?;
        for (name, l) in pairs {
            let p = w.program(&name).ok_or_else(|| {
                Diag::new(format!(
                    "--levels names `{name}`, which is not a program of this workload"
                ))
            })?;
            levels[p] = l;
        }
    }
    Ok(levels)
}

fn run_search(p: &Prepared, args: &InvariantsArgs, levels: Vec<Level>) -> Result<Report> {
    let cfg = Config {
        k: args.k as usize,
        rows: args.rows as usize,
        levels,
        budget: Duration::from_secs(args.time_budget),
        instances: args.instances.max(1),
    };
    let graph = &p.findings.graph;
    let schedules: Vec<_> = p.schedules.iter().map(|s| (s.clone(), graph)).collect();
    let Some(sources) = &p.loaded.sources else {
        return Err(Diag::new("no SQL sources"));
    };
    search(
        &p.server,
        sources,
        &p.loaded.workload,
        &p.loaded.provenance,
        &p.stated,
        &schedules,
        &cfg,
        &Spinner::new(),
    )
}

/// Exit 1 when an invariant is broken (serially or concurrently), 0 when
/// every one held within bounds, 2 on bad input.
pub fn invariants(args: &InvariantsArgs) -> Result<Exit> {
    let format = args.format;
    let p = prepare(args, format == InvariantsFormat::Text)?;
    let levels = allocation(args, &p.loaded.workload)?;
    let r = run_search(&p, args, levels)?;
    let server = format!("{} ({})", p.server.version, p.server.display);
    let text = match format {
        InvariantsFormat::Json => json_text(&report::invariants::json(&r, &server)),
        InvariantsFormat::Markdown => report::invariants::markdown(&r, &server),
        InvariantsFormat::Text => report::invariants::text(&r, &server),
    };
    emit(&text)?;
    let broken = r
        .results
        .iter()
        .any(|x| !matches!(x.verdict, Verdict::Held));
    Ok(Exit::finding_if(broken))
}

/// `allocate --invariants`: from the robust allocation, lower one
/// program at a time (a step) while no invariant breaks within bounds.
pub fn allocate(args: &InvariantsArgs) -> Result<Exit> {
    // `allocate --format` offers text and json only.
    let format = args.format;
    let p = prepare(args, format == InvariantsFormat::Text)?;
    let w = &p.loaded.workload;
    let robust = p_robust(&p, args);
    let mut current = robust.clone();
    let mut last = run_search(&p, args, current.clone())?;
    let mut tried = 1;
    // A search the budget cut short is no ground to lower a level.
    let held =
        |r: &Report| r.complete && r.results.iter().all(|x| matches!(x.verdict, Verdict::Held));
    if held(&last) {
        // Programs that only read are left out of every search (a plain
        // read changes no committed state): their level cannot matter.
        for (prog, l) in current.iter_mut().enumerate() {
            if !crate::replay::invariants::writes(w, prog) {
                *l = Level::ReadCommitted;
            }
        }
        for prog in 0..w.programs.len() {
            while let Some(lower) = down(current[prog]) {
                let mut cand = current.clone();
                cand[prog] = lower;
                let r = run_search(&p, args, cand.clone())?;
                tried += 1;
                if held(&r) {
                    current = cand;
                    last = r;
                } else {
                    break;
                }
            }
        }
    }
    let names: Vec<String> = w.programs.iter().map(|p| p.name.clone()).collect();
    let text = match format {
        InvariantsFormat::Json => json_text(&report::invariants::allocate_json(
            &names, &robust, &current, &last, tried,
        )),
        _ => report::invariants::allocate_text(&names, &robust, &current, &last, tried),
    };
    emit(&text)?;
    Ok(Exit::Success)
}

fn p_robust(p: &Prepared, args: &InvariantsArgs) -> Vec<Level> {
    let f = crate::analysis::allocate_with(
        &p.loaded.workload,
        args.settings.settings(),
        &Spinner::new(),
    );
    f.isolation.as_is.0.clone()
}

fn down(l: Level) -> Option<Level> {
    match l {
        Level::Serializable => Some(Level::RepeatableRead),
        Level::RepeatableRead => Some(Level::ReadCommitted),
        Level::ReadCommitted => None,
    }
}
