//! The command line: parses arguments (`args`), runs a command by
//! composing the stages (`commands`), shows progress (`progress`), and is
//! the only place that prints, writes output files or picks exit codes.
//! Must not contain analysis logic or formatting of results.
//!
//! Exit codes: one enum, [`exit::Exit`].

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::analysis::limits::{admit_form, admit_planned, Choose, Form};
use crate::analysis::unfold::Plan;
use crate::frontend::{load, Loaded};
use crate::model::error::{Diag, Result, Warning};
use crate::model::isolation::{parse_levels, Deployed, LevelSource};

pub mod args;
pub mod commands;
pub mod exit;
#[cfg(feature = "postgres")]
pub mod invariants;
pub mod progress;
#[cfg(feature = "postgres")]
pub mod replay;

pub use args::Cli;
pub use exit::Exit;

/// `--quiet`: set once, before the command runs, read by [`emit`] and
/// [`warn`] (a process-wide switch, as ripgrep's, rather than a flag
/// threaded through every command).
static QUIET: AtomicBool = AtomicBool::new(false);

fn quiet() -> bool {
    QUIET.load(Ordering::Relaxed)
}

/// Run a parsed command line; returns the process exit code.
pub fn run(cli: Cli) -> Exit {
    QUIET.store(cli.quiet, Ordering::Relaxed);
    match commands::execute(cli.command) {
        Ok(code) => code,
        Err(diag) => {
            say(&format!("{:?}", miette::Report::new(*diag)));
            Exit::Error
        }
    }
}

/// A panic is a bug of isolint, never of the input: say so, and where to
/// report it, before the default message (ripgrep and rustc do the same).
pub fn install_panic_hook() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        say(&format!(
            "isolint {} hit an internal error (a bug, not a problem of your input). \
             Please report it with the command line and, if you can, the input.",
            env!("CARGO_PKG_VERSION")
        ));
        default(info);
    }));
}

/// Write a line to standard error. A closed pipe (`isolint … 2>&1 | head
/// -1`) is no error worth a panic: the rest is dropped quietly and the
/// exit code stays the command's, as ripgrep does (`eprintln!` panics).
pub(crate) fn say(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{text}");
}

/// A warning or a note on standard error: as [`say`], but not with
/// `--quiet`.
pub(crate) fn warn(text: &str) {
    if !quiet() {
        say(text);
    }
}

/// The one load step of every command: read the workload (front-end),
/// admit it to the analysis (size guard, warnings for over-approximated
/// programs). The warnings go to stderr for text output; the JSON formats
/// carry them in a `warnings` key instead.
fn load_workload(input: &args::InputArgs, text: bool) -> Result<Loaded> {
    load_planned(input, text).map(|(loaded, _)| loaded)
}

/// [`load_workload`], with the guard's plan, for the commands that build
/// the graph from it (`unfold::reusing`: a loop-heavy program is reduced
/// once per run, not once per build).
fn load_planned(input: &args::InputArgs, text: bool) -> Result<(Loaded, Plan)> {
    let mut loaded = load(&input.workload, input.schema.as_deref())?;
    let (approximated, plan) = admit_planned(&loaded.workload)?;
    loaded.warnings.extend(approximated);
    if text {
        for w in &loaded.warnings {
            warn(&w.to_string());
        }
    }
    Ok((loaded, plan))
}

/// [`load_workload`] for the commands that also run on the block form
/// (`analyze`, `check`, `allocate`, `subsets`, `btp`): a workload over the edge guard
/// is admitted on [`Form::Blocks`] instead of refused, with a note.
/// Testing hooks: `ISOLINT_FORM=blocks` (or `edges`) forces a form, and
/// `ISOLINT_EDGE_GUARD=N` lowers the guard, so that tests compare the two
/// forms and cross the guard on small inputs.
/// With the plan the form was chosen on (as [`load_planned`]).
fn load_scalable(input: &args::InputArgs, text: bool) -> Result<(Loaded, Form, Plan)> {
    let mut loaded = load(&input.workload, input.schema.as_deref())?;
    let choose = match std::env::var("ISOLINT_FORM").as_deref() {
        Ok("blocks") => Choose::Force(Form::Blocks),
        Ok("edges") => Choose::Force(Form::Edges),
        _ => Choose::UpTo(
            std::env::var("ISOLINT_EDGE_GUARD")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(crate::analysis::unfold::MAX_ESTIMATED_EDGES),
        ),
    };
    let admitted = admit_form(&loaded.workload, choose)?;
    loaded.warnings.extend(admitted.warnings);
    if text {
        for w in &loaded.warnings {
            warn(&w.to_string());
        }
    }
    if admitted.form == Form::Blocks && matches!(choose, Choose::UpTo(_)) {
        warn(&format!(
            "note: the summary graph would have about {:.1e} edges, too many to write one by one; isolint decides on the block form (edges between statement classes, counted exactly)",
            admitted.estimated_edges
        ));
    }
    Ok((loaded, admitted.form, admitted.plan))
}

/// Connect to `--postgres URL` or start `--postgres-temp`'s server.
#[cfg(feature = "postgres")]
fn start_server(s: &args::ServerArgs) -> Result<crate::replay::server::Server> {
    use crate::replay::server::Server;
    match &s.postgres {
        Some(url) => Server::connect_url(url),
        None => Server::temporary(),
    }
}

/// Write `text` to standard output (nothing with `--quiet`). A closed pipe (`isolint … | head`)
/// ends the output quietly, as ripgrep does; any other write error (a
/// full disk, a closed file) is an error: a truncated SARIF file must not
/// pass for a complete one.
fn emit(text: &str) -> Result<Exit> {
    if quiet() {
        return Ok(Exit::Success);
    }
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Diag::new(format!("cannot write to standard output: {e}"))
                .help("check the file or pipe standard output goes to (disk space, permissions)"))
        }
        _ => Ok(Exit::Success),
    }
}

fn json_text(v: &serde_json::Value) -> String {
    let mut s = serde_json::to_string_pretty(v).unwrap_or_default();
    s.push('\n');
    s
}

/// Write a text file, with an error that says which file and why.
fn write_text(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|e| {
        Diag::new(format!("cannot write {}: {e}", path.display()))
            .help("check that the directory exists and is writable")
    })
}

/// Render `graph.dot` text to SVG with Graphviz, if installed.
fn render_svg(dot: &str) -> Option<String> {
    let mut child = Command::new("dot")
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    {
        use std::io::Write;
        child.stdin.take()?.write_all(dot.as_bytes()).ok()?;
    }
    let out = child.wait_with_output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The levels a team runs: PostgreSQL's default, the programs' own
/// declarations, the manifest's `isolation:`, then `--levels`; an
/// override of a declared level is a warning.
pub(crate) fn deployed_levels(
    loaded: &mut Loaded,
    flag: Option<&str>,
    text: bool,
) -> Result<Deployed> {
    let w = &loaded.workload;
    let mut overrides = vec![(LevelSource::Manifest, loaded.deployed.clone())];
    if let Some(spec) = flag {
        let pairs = parse_levels(spec).map_err(|e| {
            Diag::new(format!("--levels: {e}"))
                .help("write --levels PROGRAM=LEVEL,… with LEVEL read-committed, repeatable-read or serializable")
        })?;
        let mut flagged = vec![];
        for (name, level) in pairs {
            let p = w.program(&name).ok_or_else(|| {
                let names: Vec<&str> = w.programs.iter().map(|p| p.name.as_str()).collect();
                Diag::new(format!(
                    "--levels names `{name}`, which is not a program of this workload"
                ))
                .help(format!("programs: {}", names.join(", ")))
            })?;
            flagged.push((p, level));
        }
        overrides.push((LevelSource::Flag, flagged));
    }
    let mut conflicts = vec![];
    let deployed = Deployed::resolve(&loaded.declared, &overrides, &mut conflicts);
    for (p, message) in conflicts {
        let warning = Warning {
            file: w.programs[p].file.clone().unwrap_or_else(|| w.name.clone()),
            line: 1,
            message: format!("{} {message}", w.programs[p].name),
        };
        if text {
            warn(&warning.to_string());
        }
        loaded.warnings.push(warning);
    }
    Ok(deployed)
}
