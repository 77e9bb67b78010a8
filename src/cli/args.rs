//! The command line: clap's derive types, every one of them (the
//! commands' modules import from here, never the reverse). Input
//! arguments (what to read) are apart from setting arguments (how to
//! analyse) and from the server arguments ([`ServerArgs`]); each command
//! has its own output-format enum, so its `--help` lists only the formats
//! it accepts.

use std::path::PathBuf;

use clap::{ArgGroup, Args, Parser, Subcommand, ValueEnum};

use crate::analysis::explorer::Bounds;
use crate::analysis::robustness::Method;
use crate::model::isolation::Level;
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
    /// Print nothing on standard output and no warnings: the exit code is the answer (errors still go to standard error; files named by --output are still written).
    #[arg(short, long, global = true)]
    pub quiet: bool,
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
        #[arg(long, value_enum, default_value_t = UniformLevel::ReadCommitted)]
        level: UniformLevel,
        /// Output format; json keys are documented in docs/json.md.
        #[arg(long, value_enum, default_value_t = TextOrJson::Text)]
        format: TextOrJson,
    },
    /// Pre-deploy check for CI: exit 0 if robust, 1 if not, 2 when there is no answer (bad input, a failed server or write); explains each dangerous cycle and suggests a verified fix. With --postgres-temp or --postgres URL, each confirmed cycle is then replayed on PostgreSQL and the answer said beside it (docs/replay.md); the exit code stays the static verdict's.
    #[cfg_attr(feature = "postgres", command(mut_arg("postgres", |a| a.conflicts_with("no_confirm"))))]
    #[cfg_attr(feature = "postgres", command(mut_arg("postgres_temp", |a| a.conflicts_with("no_confirm"))))]
    Check {
        #[command(flatten)]
        args: AnalysisArgs,
        /// text for people; json (docs/json.md), sarif (SARIF 2.1.0) or github (Actions annotations) for CI.
        #[arg(long, value_enum, default_value_t = CheckFormat::Text)]
        format: CheckFormat,
        /// The levels deployed, e.g. `Balance=read-committed,WriteCheck=serializable`; overrides `isolation:` in isolint.yaml and the programs' own SET TRANSACTION lines (docs/allocation.md).
        #[arg(long, value_name = "PROG=LEVEL,…")]
        levels: Option<String>,
        #[cfg(feature = "postgres")]
        #[command(flatten)]
        server: ServerArgs,
    },
    /// The lowest robust isolation level per program (READ COMMITTED < REPEATABLE READ < SERIALIZABLE), with the cycle that forces each raised program (docs/allocation.md).
    #[command(mut_arg("postgres", |a| a.requires("invariants")))]
    #[command(mut_arg("postgres_temp", |a| a.requires("invariants")))]
    Allocate {
        #[command(flatten)]
        input: InputArgs,
        #[command(flatten)]
        settings: SettingsArgs,
        /// text or json (docs/json.md).
        #[arg(long, value_enum, default_value_t = TextOrJson::Text)]
        format: TextOrJson,
        /// Text: show the cycle of every raised program (by default the first 10; JSON lists every one).
        #[arg(long)]
        all_cycles: bool,
        /// Also the lowest levels under which no stated invariant breaks within bounds, searched on PostgreSQL (needs --postgres or --postgres-temp; docs/invariants.md).
        #[arg(long)]
        invariants: bool,
        // With --invariants: the server.
        #[command(flatten)]
        server: ServerArgs,
        /// With --invariants: seconds per search.
        #[arg(long, value_name = "SECS", default_value_t = 60)]
        time_budget: u64,
        /// With --invariants: instances per program at most.
        #[arg(long, value_name = "N", default_value_t = 16)]
        instances: usize,
    },
    /// Check stated invariants on PostgreSQL: serial runs first, then concurrent executions at the given levels; each invariant broken (with the run) or held within bounds. Exit 1 if one is broken (docs/invariants.md).
    #[cfg(feature = "postgres")]
    Invariants(InvariantsArgs),
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
        #[arg(long, value_enum, default_value_t = UniformLevel::ReadCommitted)]
        level: UniformLevel,
        /// Output format; json keys are documented in docs/json.md.
        #[arg(long, value_enum, default_value_t = TextOrJson::Text)]
        format: TextOrJson,
    },
    /// The summary graph (counterflow edges dashed, as in Figure 4).
    Graph {
        #[command(flatten)]
        input: InputArgs,
        #[command(flatten)]
        settings: SettingsArgs,
        /// dot (Graphviz, Figure 4) or json.
        #[arg(long, value_enum, default_value_t = GraphFormat::Dot)]
        format: GraphFormat,
    },
    /// The BTP of each program (Figure 2), with constraints; `--format yaml` emits BTP YAML.
    Btp {
        #[command(flatten)]
        input: InputArgs,
        /// text (Figure 2 tables) or yaml (BTP YAML that `analyze` reads back).
        #[arg(long, value_enum, default_value_t = BtpFormat::Text)]
        format: BtpFormat,
    },
    /// Replay each confirmed counterexample on PostgreSQL (and, with --random, random interleavings): exit 1 if an anomaly is reproduced, 0 if none, 2 when there is no answer (docs/replay.md).
    #[cfg(feature = "postgres")]
    Replay(ReplayArgs),
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
    /// The confirming search's budget in states (about 1 s per 200,000 in a release build);
    /// raise it for long cycles (TPC-C's four-transaction anomaly under snapshot isolation
    /// needs about a million, docs/explorer.md).
    #[arg(long, value_name = "N", default_value_t = 200_000, value_parser = clap::value_parser!(u64).range(1_000..=1_000_000_000))]
    pub max_states: u64,
    /// Tuples per relation the confirming search's instances share (TPC-C's
    /// four-transaction anomaly needs 3).
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=4))]
    pub shared_tuples: u32,
}

impl AnalysisArgs {
    /// The explorer's bounds, or `None` with `--no-confirm`.
    pub fn confirm_bounds(&self) -> Option<Bounds> {
        // About 1 s per unconfirmed cycle at ~200k states/s (release):
        // cheap enough to be on by default.
        (!self.no_confirm).then(|| Bounds {
            max_txns: self.max_txns as usize,
            max_states: self.max_states,
            tuples_per_relation: self.shared_tuples as usize,
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
pub enum UniformLevel {
    ReadCommitted,
    RepeatableRead,
}

/// The level transactions run at on PostgreSQL (`replay`, `invariants`).
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunLevel {
    ReadCommitted,
    RepeatableRead,
    Serializable,
}

impl RunLevel {
    pub fn level(self) -> Level {
        match self {
            RunLevel::ReadCommitted => Level::ReadCommitted,
            RunLevel::RepeatableRead => Level::RepeatableRead,
            RunLevel::Serializable => Level::Serializable,
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

/// `--format` of `analyze`, `allocate`, `subsets` and `replay`.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextOrJson {
    Text,
    Json,
}

/// `--format` of `check`.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckFormat {
    Text,
    Json,
    /// SARIF 2.1.0.
    Sarif,
    /// GitHub Actions annotations.
    Github,
}

/// `--format` of `graph`.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum GraphFormat {
    /// Graphviz (Figure 4).
    Dot,
    Json,
}

/// `--format` of `btp`.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum BtpFormat {
    /// Figure 2 tables.
    Text,
    /// BTP YAML that `analyze` reads back.
    Yaml,
}

/// `--format` of `invariants`.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum InvariantsFormat {
    Text,
    Json,
    /// A report section.
    Markdown,
}

impl From<TextOrJson> for InvariantsFormat {
    fn from(f: TextOrJson) -> InvariantsFormat {
        match f {
            TextOrJson::Text => InvariantsFormat::Text,
            TextOrJson::Json => InvariantsFormat::Json,
        }
    }
}

/// The PostgreSQL server of `replay`, `invariants`, `check` and
/// `allocate --invariants`; each command adds its own constraints
/// (required, or only with another flag).
#[derive(Args, Debug, Clone, Default)]
pub struct ServerArgs {
    /// The server: postgresql://USER@HOST:PORT/DB or `host=… dbname=…`. isolint works in a scratch schema it drops afterwards.
    #[arg(long, value_name = "URL", conflicts_with = "postgres_temp")]
    pub postgres: Option<String>,
    /// A throwaway local server started with the installed PostgreSQL binaries (initdb, pg_ctl), on a Unix socket, removed afterwards.
    #[arg(long)]
    pub postgres_temp: bool,
}

impl ServerArgs {
    /// Whether a server was asked for.
    pub fn given(&self) -> bool {
        self.postgres.is_some() || self.postgres_temp
    }
}

/// `isolint replay`.
#[derive(Args, Debug, Clone)]
#[command(group(ArgGroup::new("server").required(true).args(["postgres", "postgres_temp"])))]
pub struct ReplayArgs {
    #[command(flatten)]
    pub input: InputArgs,
    #[command(flatten)]
    pub settings: SettingsArgs,
    // The server to replay on.
    #[command(flatten)]
    pub server: ServerArgs,
    /// The isolation level the transactions run at.
    #[arg(long, value_enum, default_value_t = RunLevel::ReadCommitted)]
    pub level: RunLevel,
    /// The levels deployed, as `check --levels` (e.g. `Balance=read-committed,WriteCheck=serializable`, over the programs' own declarations and isolint.yaml's `isolation:`): the cycles dangerous under them are confirmed and each transaction replayed at its program's level (docs/replay.md).
    #[arg(long, value_name = "PROG=LEVEL,…", conflicts_with = "level")]
    pub levels: Option<String>,
    /// Also run N random interleavings of random program instances over a few rows.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub random: usize,
    /// Transactions per random round.
    #[arg(long, value_name = "K", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=6))]
    pub random_txns: u32,
    /// Seed of the random rounds.
    #[arg(long, value_name = "S", default_value_t = 0)]
    pub seed: u64,
    /// text, or json (docs/replay.md).
    #[arg(long, value_enum, default_value_t = TextOrJson::Text)]
    pub format: TextOrJson,
}

/// `isolint invariants` (and, built from `allocate`'s flags,
/// `allocate --invariants`).
#[derive(Args, Debug, Clone)]
#[command(group(ArgGroup::new("server").required(true).args(["postgres", "postgres_temp"])))]
pub struct InvariantsArgs {
    #[command(flatten)]
    pub input: InputArgs,
    #[command(flatten)]
    pub settings: SettingsArgs,
    #[command(flatten)]
    pub server: ServerArgs,
    /// Every program at this level (default read-committed).
    #[arg(long, value_enum, conflicts_with = "levels")]
    pub level: Option<RunLevel>,
    /// A level per program, e.g. `WriteCheck=serializable,TransactSavings=serializable` (the others read-committed).
    #[arg(long, value_name = "PROG=LEVEL,…")]
    pub levels: Option<String>,
    /// Program instances per execution.
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=4))]
    pub k: u32,
    /// Rows per table of the made-up seed (without `invariants_seed:`) and size of the numeric parameter domain.
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=8))]
    pub rows: u32,
    /// Instances per program at most (from its parameter domain).
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub instances: usize,
    /// Stop searching after this many seconds (the answer then says the bounds were not exhausted).
    #[arg(long, value_name = "SECS", default_value_t = 120)]
    pub time_budget: u64,
    /// text, json (docs/json.md) or markdown (a report section).
    #[arg(long, value_enum, default_value_t = InvariantsFormat::Text)]
    pub format: InvariantsFormat,
}
