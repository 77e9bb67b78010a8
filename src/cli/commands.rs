//! One function per subcommand: load (front-end), admit (size guard),
//! analyse, render (report), emit. Only composition lives here.

use super::exit::Exit;
use std::path::Path;

use super::args::{
    AnalysisArgs, BtpFormat, CheckFormat, Command, Generate, GraphFormat, InputArgs, MethodChoice,
    ServerArgs, SettingsArgs, TextOrJson, UniformLevel,
};
use super::progress::Spinner;
use super::{emit, json_text, load_planned, load_scalable, render_svg, write_text};
use crate::analysis::limits::Form;
use crate::analysis::robustness::Method;
use crate::analysis::unfold::reusing;
use crate::analysis::{self, graph};
use crate::frontend::Loaded;
use crate::model::error::{Diag, Result};
use crate::model::settings::Settings;
use crate::report;

/// Run one subcommand; returns the exit code.
pub fn execute(command: Command) -> Result<Exit> {
    match command {
        Command::Analyze {
            args,
            subsets,
            level,
            format,
        } => analyze(&args, subsets, level, format),
        Command::Check {
            args,
            format,
            levels,
            #[cfg(feature = "postgres")]
            server,
        } => {
            #[cfg(feature = "postgres")]
            let replay = |l: &Loaded, f: &analysis::Findings| {
                super::replay::check_on_postgres(&server, l, f)
            };
            #[cfg(not(feature = "postgres"))]
            let replay = |_: &Loaded, _: &analysis::Findings| Ok(vec![]);
            check(&args, format, levels.as_deref(), &replay)
        }
        Command::Allocate {
            input,
            settings,
            format,
            all_cycles,
            invariants,
            server,
            time_budget,
            instances,
        } => {
            if invariants {
                allocate_invariants(input, settings, format, server, time_budget, instances)
            } else {
                allocate(&input, &settings, format, all_cycles)
            }
        }
        #[cfg(feature = "postgres")]
        Command::Invariants(args) => super::invariants::invariants(&args),
        Command::Report { args, output } => write_report(&args, &output),
        Command::Subsets {
            input,
            settings,
            all_settings,
            method,
            level,
            format,
        } => {
            let methods: Vec<Method> = match (level, method) {
                (UniformLevel::RepeatableRead, _) => vec![Method::Snapshot],
                (_, MethodChoice::Type2) => vec![Method::TypeII],
                (_, MethodChoice::Type1) => vec![Method::TypeI],
                (_, MethodChoice::Both) => vec![Method::TypeII, Method::TypeI],
            };
            let rows: Vec<Settings> = if all_settings {
                Settings::paper_rows(!settings.no_same_tuple).to_vec()
            } else {
                vec![settings.settings()]
            };
            subsets(&input, &rows, &methods, format)
        }
        Command::Graph {
            input,
            settings,
            format,
        } => {
            let (loaded, plan) = load_planned(&input, false)?;
            let g = graph::build_planned(&loaded.workload, &plan, settings.settings());
            match format {
                GraphFormat::Json => emit(&json_text(&report::json::graph(&loaded.workload, &g))),
                GraphFormat::Dot => emit(&report::dot::graph(&loaded.workload, &g)),
            }
        }
        Command::Btp { input, format } => {
            let (loaded, _, _) = load_scalable(&input, format == BtpFormat::Text)?;
            match format {
                BtpFormat::Yaml => emit(&report::yaml::to_yaml(&loaded.workload)),
                BtpFormat::Text => emit(&report::text::btp(&loaded.workload)),
            }
        }
        #[cfg(feature = "postgres")]
        Command::Replay(args) => super::replay::replay(&args),
        Command::Generate {
            what: Generate::Auction { n, output },
        } => {
            let text = report::yaml::to_yaml(&crate::model::generate::auction(n as usize));
            match output {
                Some(path) => write_text(&path, &text).map(|_| Exit::Success),
                None => emit(&text),
            }
        }
    }
}

fn analyze(
    args: &AnalysisArgs,
    subsets: bool,
    level: UniformLevel,
    format: TextOrJson,
) -> Result<Exit> {
    let (loaded, form, plan) = load_scalable(&args.input, format == TextOrJson::Text)?;
    let w = &loaded.workload;
    let method = match level {
        UniformLevel::RepeatableRead => Method::Snapshot,
        UniformLevel::ReadCommitted => args.method.method(),
    };
    let settings = args.settings.settings();
    let analyze = match form {
        Form::Edges => analysis::analyze_with,
        Form::Blocks => analysis::on_blocks::analyze_with,
    };
    let mut f = reusing(w, plan, || {
        analyze(w, settings, method, subsets, &Spinner::new())
    });
    confirm(&loaded, &mut f, args);
    match format {
        TextOrJson::Json => emit(&json_text(&report::json::analyze(w, &f, &loaded.warnings))),
        TextOrJson::Text => emit(&report::text::analyze(w, &f)),
    }
}

/// What `check --postgres…` found per witness (empty without the flags).
type OnPostgres<'a> = dyn Fn(&Loaded, &analysis::Findings) -> Result<Vec<report::OnPostgres>> + 'a;

/// Exit 0 when robust, 1 when not (whatever PostgreSQL says: the replay
/// only annotates the cycles).
fn check(
    args: &AnalysisArgs,
    format: CheckFormat,
    levels: Option<&str>,
    replay: &OnPostgres,
) -> Result<Exit> {
    let text = format == CheckFormat::Text;
    let (mut loaded, form, plan) = load_scalable(&args.input, text)?;
    let deployed = super::deployed_levels(&mut loaded, levels, text)?;
    let w = &loaded.workload;
    let (settings, method) = (args.settings.settings(), args.method.method());
    let check = match form {
        Form::Edges => analysis::check_deployed_with,
        Form::Blocks => analysis::on_blocks::check_deployed_with,
    };
    let mut f = reusing(w, plan, || {
        check(w, settings, method, &deployed, &Spinner::new())
    });
    confirm(&loaded, &mut f, args);
    let pg = replay(&loaded, &f)?;
    let path = args.input.workload.display().to_string();
    let text = match format {
        CheckFormat::Json => json_text(&report::json::check(w, &f, &loaded.warnings, &pg)),
        CheckFormat::Sarif => json_text(&report::sarif::check(w, &f, &path, &pg)),
        CheckFormat::Github => report::github::check(w, &f, &path, &pg),
        CheckFormat::Text => report::text::check(w, &f, &pg),
    };
    emit(&text)?;
    Ok(Exit::finding_if(!f.robust))
}

/// `isolint allocate`: the lowest robust allocation, with and without
/// the verified read promotion.
fn allocate(
    input: &InputArgs,
    settings: &SettingsArgs,
    format: TextOrJson,
    all_cycles: bool,
) -> Result<Exit> {
    let (loaded, form, plan) = load_scalable(input, format == TextOrJson::Text)?;
    let w = &loaded.workload;
    let allocate = match form {
        Form::Edges => analysis::allocate_with,
        Form::Blocks => analysis::on_blocks::allocate_with,
    };
    let f = reusing(w, plan, || {
        allocate(w, settings.settings(), &Spinner::new())
    });
    match format {
        TextOrJson::Json => emit(&json_text(&report::json::allocate(w, &f, &loaded.warnings))),
        TextOrJson::Text => {
            let shown = (!all_cycles).then_some(report::text::SHOWN_CYCLES);
            emit(&report::text::allocate_showing(w, &f, shown))
        }
    }
}

fn subsets(
    input: &InputArgs,
    rows: &[Settings],
    methods: &[Method],
    format: TextOrJson,
) -> Result<Exit> {
    // The table is searched on blocks on either form: admitted over the
    // edge guard too.
    let (loaded, _, plan) = load_scalable(input, format == TextOrJson::Text)?;
    let w = &loaded.workload;
    let table = reusing(w, plan, || {
        analysis::subset_table(w, rows, methods, &Spinner::new())
    });
    match format {
        TextOrJson::Json => emit(&json_text(&report::json::subsets(w, &table))),
        TextOrJson::Text => emit(&report::text::subsets(w, &table)),
    }
}

/// Confirm each dangerous cycle with a concrete schedule, unless
/// `--no-confirm`.
fn confirm(loaded: &Loaded, f: &mut analysis::Findings, args: &AnalysisArgs) {
    if let Some(bounds) = args.confirm_bounds() {
        analysis::confirm_with(&loaded.workload, &loaded.provenance, f, bounds);
    }
}

/// Writes the Markdown report to `out` and the summary graph next to it
/// (SVG when Graphviz is installed, DOT otherwise).
fn write_report(args: &AnalysisArgs, out: &Path) -> Result<Exit> {
    let (loaded, plan) = load_planned(&args.input, true)?;
    let w = &loaded.workload;
    let (settings, method) = (args.settings.settings(), args.method.method());
    let mut f = reusing(w, plan, || {
        analysis::report_with(w, settings, method, &Spinner::new())
    });
    confirm(&loaded, &mut f, args);
    let stem = out.file_stem().and_then(|s| s.to_str()).unwrap_or("report");
    let dir = out.parent().unwrap_or(Path::new(""));
    let dot = report::dot::graph(w, &f.graph);
    let (graph_name, graph_text) = match render_svg(&dot) {
        Some(svg) => (format!("{stem}-graph.svg"), svg),
        None => (format!("{stem}-graph.dot"), dot),
    };
    write_text(&dir.join(&graph_name), &graph_text)?;
    write_text(out, &report::markdown::render(w, &f, &graph_name))?;
    super::warn(&format!("wrote {} and {graph_name}", out.display()));
    Ok(Exit::Success)
}

/// `allocate --invariants` (issue 25, docs/invariants.md).
#[cfg(feature = "postgres")]
fn allocate_invariants(
    input: InputArgs,
    settings: SettingsArgs,
    format: TextOrJson,
    server: ServerArgs,
    time_budget: u64,
    instances: usize,
) -> Result<Exit> {
    if !server.given() {
        return Err(
            Diag::new("allocate --invariants runs the search on PostgreSQL")
                .help("add --postgres-temp (a throwaway server) or --postgres URL"),
        );
    }
    super::invariants::allocate(&super::args::InvariantsArgs {
        input,
        settings,
        server,
        level: None,
        levels: None,
        k: 2,
        rows: 2,
        instances,
        time_budget,
        format: format.into(),
    })
}

#[cfg(not(feature = "postgres"))]
fn allocate_invariants(
    _: InputArgs,
    _: SettingsArgs,
    _: TextOrJson,
    _: ServerArgs,
    _: u64,
    _: usize,
) -> Result<Exit> {
    Err(Diag::new(
        "allocate --invariants needs isolint built with the `postgres` feature",
    ))
}
