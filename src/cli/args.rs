//! The command line: clap's derive types. Input arguments (what to read)
//! are apart from setting arguments (how to analyse), and every command
//! shares one output-format enum.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::analysis::explorer::Bounds;
use crate::analysis::robustness::Method;
use crate::model::error::{Diag, Result};
use crate::model::settings::{Granularity, Settings};

#[derive(Parser, Debug)]
#[command(
    name = "isolint",
    version,
    about = "Can these SQL transactions run under READ COMMITTED and stay serializable?",
    long_about = "isolint decides whether a set of transaction programs is robust against multiversion \
READ COMMITTED (MVRC): every schedule allowed under MVRC is serializable. It implements Vandevoort, \
Koch, Ketsman and Neven, EDBT 2023: BTPs, Unfold≤2, the summary graph (Algorithm 1) and the type-II \
cycle test (Algorithm 2).\n\nA WORKLOAD is a directory of .sql programs with a schema (docs/sql-frontend.md) or a BTP YAML \
file (docs/btp-format.md).\n\nExit codes: 0 success (check: robust; replay: nothing reproduced), 1 check: not robust (replay: an anomaly reproduced on PostgreSQL), 2 no answer (bad input, a PostgreSQL server that failed, output that could not be written)."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Decide robustness against MVRC; print the verdict, a witness per dangerous component, and optionally the maximal robust subsets.
    Analyze {
        #[command(flatten)]
        args: AnalysisArgs,
        /// Also compute the maximal robust subsets of programs.
        #[arg(long)]
        subsets: bool,
        /// The level every program runs at: read-committed (MVRC, the paper) or repeatable-read (snapshot isolation, docs/allocation.md).
        #[arg(long, value_enum, default_value_t = LevelArg::ReadCommitted)]
        level: LevelArg,
        /// Output format; json keys are documented in docs/json.md.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Pre-deploy check for CI: exit 0 if robust, 1 if not, 2 when there is no answer (bad input, a failed server or write); explains each dangerous cycle and suggests a verified fix.
    Check {
        #[command(flatten)]
        args: AnalysisArgs,
        /// text for people; json (docs/json.md), sarif (SARIF 2.1.0) or github (Actions annotations) for CI.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// The levels deployed, e.g. `Balance=read-committed,WriteCheck=serializable`; overrides `isolation:` in isolint.yaml and the programs' own SET TRANSACTION lines (docs/allocation.md).
        #[arg(long, value_name = "PROG=LEVEL,…")]
        levels: Option<String>,
        #[cfg(feature = "postgres")]
        #[command(flatten)]
        postgres: super::replay::CheckPostgres,
    },
    /// The lowest robust isolation level per program (READ COMMITTED < REPEATABLE READ < SERIALIZABLE), with the cycle that forces each raised program (docs/allocation.md).
    Allocate {
        #[command(flatten)]
        input: InputArgs,
        #[command(flatten)]
        settings: SettingsArgs,
        /// text or json (docs/json.md).
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Also the lowest levels under which no stated invariant breaks within bounds, searched on PostgreSQL (needs --postgres or --postgres-temp; docs/invariants.md).
        #[arg(long)]
        invariants: bool,
        /// With --invariants: the server (postgresql://USER@HOST:PORT/DB).
        #[arg(long, value_name = "URL", requires = "invariants")]
        postgres: Option<String>,
        /// With --invariants: a throwaway local server.
        #[arg(long, requires = "invariants")]
        postgres_temp: bool,
        /// With --invariants: seconds per search.
        #[arg(long, value_name = "SECS", default_value_t = 60)]
        time_budget: u64,
        /// With --invariants: instances per program at most.
        #[arg(long, value_name = "N", default_value_t = 16)]
        instances: usize,
    },
    /// Check stated invariants on PostgreSQL: serial runs first, then concurrent executions at the given levels; each invariant broken (with the run) or held within bounds. Exit 1 if one is broken (docs/invariants.md).
    #[cfg(feature = "postgres")]
    Invariants(super::invariants::InvariantsArgs),
    /// Write a Markdown report (verdict, Table 2 statistics, Figures 6/7 table, witnesses, fix, graph as SVG).
    Report {
        #[command(flatten)]
        args: AnalysisArgs,
        /// Markdown file to write; the graph goes next to it.
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
    },
    /// Maximal robust subsets as in the paper's Figures 6 (type-II) and 7 (type-I).
    Subsets {
        #[command(flatten)]
        input: InputArgs,
        #[command(flatten)]
        settings: SettingsArgs,
        /// One row per setting of the paper: tpl dep, attr dep, tpl dep + FK, attr dep + FK.
        #[arg(long)]
        all_settings: bool,
        /// Which test's subsets: type2 (Figure 6), type1 (Figure 7) or both.
        #[arg(long, value_enum, default_value_t = MethodChoice::Type2)]
        method: MethodChoice,
        /// repeatable-read: subsets robust against snapshot isolation instead (replaces --method).
        #[arg(long, value_enum, default_value_t = LevelArg::ReadCommitted)]
        level: LevelArg,
        /// Output format; json keys are documented in docs/json.md.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// The summary graph (counterflow edges dashed, as in Figure 4).
    Graph {
        #[command(flatten)]
        input: InputArgs,
        #[command(flatten)]
        settings: SettingsArgs,
        /// dot (Graphviz, Figure 4) or json.
        #[arg(long, value_enum, default_value_t = Format::Dot)]
        format: Format,
    },
    /// The BTP of each program (Figure 2), with constraints; `--format yaml` emits BTP YAML.
    Btp {
        #[command(flatten)]
        input: InputArgs,
        /// text (Figure 2 tables) or yaml (BTP YAML that `analyze` reads back).
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Replay each confirmed counterexample on PostgreSQL (and, with --random, random interleavings): exit 1 if an anomaly is reproduced, 0 if none, 2 when there is no answer (docs/replay.md).
    #[cfg(feature = "postgres")]
    Replay(super::replay::ReplayArgs),
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
}

/// What `analyze`, `check` and `report` share: the input, the settings
/// and the test.
#[derive(Args, Debug, Clone)]
pub struct AnalysisArgs {
    #[command(flatten)]
    pub input: InputArgs,
    #[command(flatten)]
    pub settings: SettingsArgs,
    /// type2: Algorithm 2 (the paper); type1: any cycle with a counterflow edge (Alomari and Fekete).
    #[arg(long, value_enum, default_value_t = MethodArg::Type2)]
    pub method: MethodArg,
    /// Skip the search for a concrete non-serializable schedule that confirms each dangerous cycle (docs/explorer.md).
    #[arg(long)]
    pub no_confirm: bool,
    /// At most this many concurrent transactions in a confirming schedule (k; raised to the number of programs of a longer cycle, up to 8).
    #[arg(long, value_name = "K", default_value_t = 3, value_parser = clap::value_parser!(u32).range(2..=8))]
    pub max_txns: u32,
}

impl AnalysisArgs {
    /// The explorer's bounds, or `None` with `--no-confirm`.
    pub fn confirm_bounds(&self) -> Option<Bounds> {
        // About 1 s per unconfirmed cycle at ~200k states/s (release):
        // cheap enough to be on by default.
        (!self.no_confirm).then(|| Bounds {
            max_txns: self.max_txns as usize,
            max_states: 200_000,
            ..Bounds::default()
        })
    }
}

/// What to read: the workload and, for a SQL directory, its schema.
#[derive(Args, Debug, Clone)]
pub struct InputArgs {
    /// BTP YAML file, or directory of .sql programs.
    pub workload: PathBuf,
    /// Schema DDL for a SQL directory (overrides its isolint.yaml).
    #[arg(long, value_name = "FILE")]
    pub schema: Option<PathBuf>,
}

impl SettingsArgs {
    /// The analysis settings these flags select.
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

/// A uniform isolation level for `analyze` and `subsets`.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum LevelArg {
    ReadCommitted,
    RepeatableRead,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum MethodChoice {
    #[value(name = "type2")]
    Type2,
    #[value(name = "type1")]
    Type1,
    Both,
}

/// Output formats. Each command accepts the ones its help names;
/// [`Format::require`] rejects the others with the list.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
    /// SARIF 2.1.0 (`check`).
    Sarif,
    /// GitHub Actions annotations (`check`).
    Github,
    /// Graphviz (`graph`).
    Dot,
    /// BTP YAML (`btp`).
    Yaml,
    /// Markdown (`invariants`).
    Markdown,
}

impl Format {
    fn name(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Json => "json",
            Format::Sarif => "sarif",
            Format::Github => "github",
            Format::Dot => "dot",
            Format::Yaml => "yaml",
            Format::Markdown => "markdown",
        }
    }

    /// `self` if `command` offers it, else an error listing what it offers.
    pub fn require(self, command: &str, offered: &[Format]) -> Result<Format> {
        if offered.contains(&self) {
            return Ok(self);
        }
        let names: Vec<&str> = offered.iter().map(|f| f.name()).collect();
        Err(Diag::new(format!(
            "`isolint {command}` has no --format {}",
            self.name()
        ))
        .help(format!("use one of: {}", names.join(", "))))
    }
}
