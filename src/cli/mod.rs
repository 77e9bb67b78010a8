//! Command-line interface: argument types (clap derive) and the commands,
//! each a thin composition of library calls. Exit codes follow ripgrep's
//! spirit: 0 success, 1 "not robust" (only `check`), 2 bad input.

use std::cell::{Cell, RefCell};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::{Args, Parser, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::analysis::analyze_with;
use crate::analysis::graph::{build, Granularity, Settings};
use crate::analysis::limits::{approximation_warnings, check_size};
use crate::analysis::progress::{Progress, Stage};
use crate::analysis::robustness::Method;
use crate::analysis::subsets::{search, MAX_SUBSETS};
use crate::frontend::{load, Loaded};
use crate::model::error::{Diag, Result};
use crate::report;

#[derive(Parser, Debug)]
#[command(
    name = "isolint",
    version,
    about = "Can these SQL transactions run under READ COMMITTED and stay serializable?",
    long_about = "isolint decides whether a set of transaction programs is robust against multiversion \
READ COMMITTED (MVRC): every schedule allowed under MVRC is serializable. It implements Vandevoort, \
Koch, Ketsman and Neven, EDBT 2023: BTPs, Unfold≤2, the summary graph (Algorithm 1) and the type-II \
cycle test (Algorithm 2).\n\nA WORKLOAD is a directory of .sql programs with a schema (docs/sql-frontend.md) or a BTP YAML \
file (docs/btp-format.md).\n\nExit codes: 0 success (check: robust), 1 check: not robust, 2 bad input."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Decide robustness against MVRC; print the verdict, a witness per dangerous component, and optionally the maximal robust subsets.
    Analyze {
        /// BTP YAML file, or directory of .sql programs.
        workload: PathBuf,
        #[command(flatten)]
        settings: SettingsArgs,
        /// type2: Algorithm 2 (the paper); type1: any cycle with a counterflow edge (Alomari and Fekete).
        #[arg(long, value_enum, default_value_t = MethodArg::Type2)]
        method: MethodArg,
        /// Also compute the maximal robust subsets of programs.
        #[arg(long)]
        subsets: bool,
        /// Output format; json keys are documented in docs/json.md.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Pre-deploy check for CI: exit 0 if robust, 1 if not, 2 on bad input; explains each dangerous cycle and suggests a verified fix.
    Check {
        /// BTP YAML file, or directory of .sql programs.
        workload: PathBuf,
        #[command(flatten)]
        settings: SettingsArgs,
        /// type2: Algorithm 2 (the paper); type1: any cycle with a counterflow edge (Alomari and Fekete).
        #[arg(long, value_enum, default_value_t = MethodArg::Type2)]
        method: MethodArg,
        /// text for people; json (docs/json.md), sarif (SARIF 2.1.0) or github (Actions annotations) for CI.
        #[arg(long, value_enum, default_value_t = CheckFormat::Text)]
        format: CheckFormat,
    },
    /// Write a Markdown report (verdict, Table 2 statistics, Figures 6/7 table, witnesses, fix, graph as SVG).
    Report {
        /// BTP YAML file, or directory of .sql programs.
        workload: PathBuf,
        #[command(flatten)]
        settings: SettingsArgs,
        /// type2: Algorithm 2 (the paper); type1: any cycle with a counterflow edge (Alomari and Fekete).
        #[arg(long, value_enum, default_value_t = MethodArg::Type2)]
        method: MethodArg,
        /// Markdown file to write; the graph goes next to it.
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
    },
    /// Maximal robust subsets as in the paper's Figures 6 (type-II) and 7 (type-I).
    Subsets {
        /// BTP YAML file, or directory of .sql programs.
        workload: PathBuf,
        #[command(flatten)]
        settings: SettingsArgs,
        /// One row per setting of the paper: tpl dep, attr dep, tpl dep + FK, attr dep + FK.
        #[arg(long)]
        all_settings: bool,
        /// Which test's subsets: type2 (Figure 6), type1 (Figure 7) or both.
        #[arg(long, value_enum, default_value_t = MethodChoice::Type2)]
        method: MethodChoice,
        /// Output format; json keys are documented in docs/json.md.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// The summary graph (counterflow edges dashed, as in Figure 4).
    Graph {
        /// BTP YAML file, or directory of .sql programs.
        workload: PathBuf,
        #[command(flatten)]
        settings: SettingsArgs,
        #[arg(long, value_enum, default_value_t = GraphFormat::Dot)]
        format: GraphFormat,
    },
    /// The BTP of each program (Figure 2), with constraints; `--format yaml` emits BTP YAML.
    Btp {
        /// BTP YAML file, or directory of .sql programs.
        workload: PathBuf,
        /// Schema DDL for a SQL directory (overrides its isolint.yaml).
        #[arg(long, value_name = "FILE")]
        schema: Option<PathBuf>,
        #[arg(long, value_enum, default_value_t = BtpFormat::Text)]
        format: BtpFormat,
    },
    /// Generate a synthetic workload as BTP YAML.
    Generate {
        #[command(subcommand)]
        what: Generate,
    },
}

#[derive(Subcommand, Debug)]
pub enum Generate {
    /// Auction(n) of Section 7.3: 2n programs, 3n unfolded programs.
    Auction {
        /// Number of items n (≥ 1).
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=100_000))]
        n: u32,
        /// Write to FILE instead of standard output.
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

#[derive(Args, Debug, Clone)]
pub struct SettingsArgs {
    /// Dependencies on individual attributes or on whole tuples (Section 7.2).
    #[arg(long, value_enum, default_value_t = GranularityArg::Attribute)]
    pub granularity: GranularityArg,
    /// Ignore foreign-key constraints (the paper's settings without '+ FK').
    #[arg(long)]
    pub no_fk: bool,
    /// Ignore same-tuple constraints (isolint's extension): the paper's exact semantics.
    #[arg(long)]
    pub no_same_tuple: bool,
    /// Schema DDL for a SQL directory (overrides its isolint.yaml).
    #[arg(long, value_name = "FILE")]
    pub schema: Option<PathBuf>,
}

impl SettingsArgs {
    pub fn settings(&self) -> Settings {
        Settings {
            granularity: match self.granularity {
                GranularityArg::Attribute => Granularity::Attribute,
                GranularityArg::Tuple => Granularity::Tuple,
            },
            foreign_keys: !self.no_fk,
            same_tuple: !self.no_same_tuple,
        }
    }
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum GranularityArg {
    #[value(alias = "attr")]
    Attribute,
    #[value(alias = "tpl")]
    Tuple,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum MethodArg {
    #[value(name = "type2")]
    Type2,
    #[value(name = "type1")]
    Type1,
}

impl MethodArg {
    pub fn method(self) -> Method {
        match self {
            MethodArg::Type2 => Method::TypeII,
            MethodArg::Type1 => Method::TypeI,
        }
    }
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum MethodChoice {
    #[value(name = "type2")]
    Type2,
    #[value(name = "type1")]
    Type1,
    Both,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckFormat {
    Text,
    Json,
    Sarif,
    Github,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum GraphFormat {
    Dot,
    Json,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum BtpFormat {
    Text,
    Yaml,
}

/// Run a parsed command line; returns the process exit code.
pub fn run(cli: Cli) -> i32 {
    match execute(cli) {
        Ok(code) => code,
        Err(diag) => {
            eprintln!("{:?}", miette::Report::new(*diag));
            2
        }
    }
}

/// Load a workload; front-end warnings go to stderr for text output (the
/// JSON formats carry them in a `warnings` key instead).
fn load_workload(
    path: &std::path::Path,
    schema: Option<&std::path::Path>,
    text: bool,
) -> Result<Loaded> {
    let mut loaded = load(path, schema)?;
    check_size(&loaded.workload)?;
    let approximated = approximation_warnings(&loaded.workload);
    loaded.warnings.extend(approximated);
    if text {
        for w in &loaded.warnings {
            eprintln!("{w}");
        }
    }
    Ok(loaded)
}

/// Progress of the searches as an indicatif spinner on stderr: only when
/// stderr is a terminal, and only once a search has run for half a second
/// (most finish sooner, and CI logs must not fill with redraws).
struct Spinner {
    enabled: bool,
    started: Instant,
    bar: RefCell<Option<ProgressBar>>,
    stage: Cell<Option<Stage>>,
}

impl Spinner {
    fn new() -> Spinner {
        Spinner {
            enabled: std::io::stderr().is_terminal(),
            started: Instant::now(),
            bar: RefCell::new(None),
            stage: Cell::new(None),
        }
    }
}

impl Progress for Spinner {
    fn update(&self, stage: Stage, done: u64) {
        if !self.enabled {
            return;
        }
        let mut bar = self.bar.borrow_mut();
        if bar.is_none() {
            if self.started.elapsed() < Duration::from_millis(500) {
                return;
            }
            let pb = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            if let Ok(style) = ProgressStyle::with_template("{spinner} {elapsed} {msg}: {pos}") {
                pb.set_style(style);
            }
            pb.enable_steady_tick(Duration::from_millis(120));
            *bar = Some(pb);
        }
        if let Some(pb) = bar.as_ref() {
            if self.stage.get() != Some(stage) {
                self.stage.set(Some(stage));
                pb.set_message(stage.label());
            }
            pb.set_position(done);
        }
    }

    fn finish(&self, _stage: Stage) {
        if let Some(pb) = self.bar.borrow_mut().take() {
            pb.finish_and_clear();
        }
        self.stage.set(None);
    }
}

fn run_check(
    w: &crate::model::btp::Workload,
    settings: &SettingsArgs,
    method: MethodArg,
) -> crate::analysis::check::CheckResult {
    crate::analysis::check::check_with(w, settings.settings(), method.method(), &Spinner::new())
}

fn emit(text: &str) -> Result<i32> {
    let mut out = std::io::stdout().lock();
    // A closed pipe (`isolint … | head`) is not an error worth a message.
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
    Ok(0)
}

fn json_text(v: &serde_json::Value) -> String {
    let mut s = serde_json::to_string_pretty(v).unwrap_or_default();
    s.push('\n');
    s
}

fn execute(cli: Cli) -> Result<i32> {
    match cli.command {
        Command::Analyze {
            workload,
            settings,
            method,
            subsets,
            format,
        } => {
            let loaded = load_workload(
                &workload,
                settings.schema.as_deref(),
                format == Format::Text,
            )?;
            let a = analyze_with(
                &loaded.workload,
                settings.settings(),
                method.method(),
                subsets,
                &Spinner::new(),
            );
            match format {
                Format::Text => emit(&report::analysis_text(&loaded.workload, &a)),
                Format::Json => emit(&json_text(&report::analysis_json(
                    &loaded.workload,
                    &a,
                    &loaded.warnings,
                ))),
            }
        }
        Command::Check {
            workload,
            settings,
            method,
            format,
        } => {
            let loaded = load_workload(
                &workload,
                settings.schema.as_deref(),
                format == CheckFormat::Text,
            )?;
            let w = &loaded.workload;
            let r = run_check(w, &settings, method);
            let path = workload.display().to_string();
            let text = match format {
                CheckFormat::Text => report::check::text(w, &r),
                CheckFormat::Json => json_text(&report::check::json(w, &r, &loaded.warnings)),
                CheckFormat::Sarif => json_text(&report::check::sarif(w, &r, &path)),
                CheckFormat::Github => report::check::github(w, &r, &path),
            };
            emit(&text)?;
            Ok(if r.analysis.robust { 0 } else { 1 })
        }
        Command::Report {
            workload,
            settings,
            method,
            output,
        } => {
            let loaded = load_workload(&workload, settings.schema.as_deref(), true)?;
            let w = &loaded.workload;
            let r = run_check(w, &settings, method);
            let graph = report::markdown::write(w, &r, &output)?;
            eprintln!("wrote {} and {graph}", output.display());
            Ok(0)
        }
        Command::Subsets {
            workload,
            settings,
            all_settings,
            method,
            format,
        } => {
            let loaded = load_workload(
                &workload,
                settings.schema.as_deref(),
                format == Format::Text,
            )?;
            let w = &loaded.workload;
            let methods: Vec<Method> = match method {
                MethodChoice::Type2 => vec![Method::TypeII],
                MethodChoice::Type1 => vec![Method::TypeI],
                MethodChoice::Both => vec![Method::TypeII, Method::TypeI],
            };
            let rows: Vec<Settings> = if all_settings {
                Settings::paper_rows(!settings.no_same_tuple).to_vec()
            } else {
                vec![settings.settings()]
            };
            let spinner = Spinner::new();
            let table: Vec<(Settings, Vec<crate::analysis::subsets::Subsets>)> = rows
                .iter()
                .map(|&s| {
                    let g = build(w, s);
                    (
                        s,
                        methods
                            .iter()
                            .map(|&m| search(&g, m, MAX_SUBSETS, None, &spinner))
                            .collect(),
                    )
                })
                .collect();
            match format {
                Format::Text => {
                    let rows: Vec<(String, Vec<crate::analysis::subsets::Subsets>)> =
                        table.into_iter().map(|(s, r)| (s.label(), r)).collect();
                    emit(&report::subsets_table(w, &rows, &methods))
                }
                Format::Json => {
                    let rows: Vec<serde_json::Value> = table
                        .iter()
                        .map(|(s, per)| {
                            let mut row = serde_json::json!({
                                "settings": report::settings_json(*s),
                                "complete": {},
                            });
                            for (m, subsets) in methods.iter().zip(per) {
                                let key = report::method_key(*m);
                                row[key] = serde_json::json!(report::subset_names(
                                    w,
                                    &subsets.sets,
                                    false
                                ));
                                row["complete"][key] = serde_json::json!(subsets.complete);
                            }
                            row
                        })
                        .collect();
                    let complete = table.iter().all(|(_, per)| per.iter().all(|s| s.complete));
                    emit(&json_text(&serde_json::json!({
                        "workload": w.name,
                        "rows": rows,
                        "maximal_robust_subsets_complete": complete,
                    })))
                }
            }
        }
        Command::Graph {
            workload,
            settings,
            format,
        } => {
            let loaded = load_workload(&workload, settings.schema.as_deref(), false)?;
            let g = build(&loaded.workload, settings.settings());
            match format {
                GraphFormat::Dot => emit(&report::graph_dot(&loaded.workload, &g)),
                GraphFormat::Json => emit(&json_text(&report::graph_json(&loaded.workload, &g))),
            }
        }
        Command::Btp {
            workload,
            schema,
            format,
        } => {
            let loaded = load_workload(&workload, schema.as_deref(), format == BtpFormat::Text)?;
            match format {
                BtpFormat::Text => emit(&report::btp_text(&loaded.workload)),
                BtpFormat::Yaml => emit(&report::yaml::to_yaml(&loaded.workload)),
            }
        }
        Command::Generate {
            what: Generate::Auction { n, output },
        } => {
            let text = report::yaml::to_yaml(&crate::model::generate::auction(n as usize));
            match output {
                Some(path) => write_text(&path, &text).map(|_| 0),
                None => emit(&text),
            }
        }
    }
}

/// Write a text file, with an error that says which file and why.
pub(crate) fn write_text(path: &std::path::Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|e| {
        Diag::new(format!("cannot write {}: {e}", path.display()))
            .help("check that the directory exists and is writable")
    })
}
