//! The command line: parses arguments (`args`), runs a command by
//! composing the stages (`commands`), shows progress (`progress`), and is
//! the only place that prints, writes output files or picks exit codes.
//! Must not contain analysis logic or formatting of results.
//!
//! Exit codes: 0 success (check: robust; replay: nothing reproduced), 1
//! check: not robust (replay: an anomaly reproduced), 2 bad input.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::model::error::{Diag, Result};

pub mod args;
pub mod commands;
#[cfg(feature = "postgres")]
pub mod invariants;
pub mod progress;
#[cfg(feature = "postgres")]
pub mod replay;

pub use args::Cli;

/// Run a parsed command line; returns the process exit code.
pub fn run(cli: Cli) -> i32 {
    match commands::execute(cli) {
        Ok(code) => code,
        Err(diag) => {
            say(&format!("{:?}", miette::Report::new(*diag)));
            2
        }
    }
}

/// Write a line to standard error. A closed pipe (`isolint … 2>&1 | head
/// -1`) is no error worth a panic: the rest is dropped quietly and the
/// exit code stays the command's, as ripgrep does (`eprintln!` panics).
pub(crate) fn say(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{text}");
}

/// Write `text` to standard output.
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
