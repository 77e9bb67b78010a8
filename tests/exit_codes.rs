//! Exit codes and output errors (issue 26, "a CLI that behaves like
//! ripgrep"): one enum, a closed pipe is no error, any other write error
//! is exit 2 with a message — a full disk must not leave a truncated SARIF
//! file behind an exit code that CI reads as an answer.

use assert_cmd::Command;

fn isolint() -> Command {
    Command::cargo_bin("isolint").expect("binary")
}

/// The binary as a plain process, whose standard output can be a file.
fn plain() -> std::process::Command {
    std::process::Command::new(env!("CARGO_BIN_EXE_isolint"))
}

/// `/dev/full` fails every write with ENOSPC: the SARIF cannot be written,
/// so the run has no answer (2), and says why.
#[test]
fn a_full_disk_is_exit_2_with_a_message() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        eprintln!("no /dev/full here: skipped");
        return;
    };
    let out = plain()
        .args([
            "check",
            "workloads/smallbank",
            "--no-confirm",
            "--format",
            "sarif",
        ])
        .stdout(full)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot write to standard output"), "{err}");
}

/// Control: the same command to a real file answers 1 (SmallBank is not
/// robust, the paper's Figure 6) and the file is complete JSON.
#[test]
fn the_same_run_to_a_file_answers_1() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("out.sarif");
    let file = std::fs::File::create(&path).expect("create");
    let out = plain()
        .args([
            "check",
            "workloads/smallbank",
            "--no-confirm",
            "--format",
            "sarif",
        ])
        .stdout(file)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let text = std::fs::read_to_string(&path).expect("read");
    let v: serde_json::Value = serde_json::from_str(&text).expect("complete SARIF");
    assert_eq!(v["version"], "2.1.0");
}

/// A robust workload answers 0 (FusionTicket is robust: Figure 6), and bad
/// input 2.
#[test]
fn robust_is_0_and_bad_input_is_2() {
    isolint()
        .args(["check", "workloads/fusionticket", "--no-confirm"])
        .assert()
        .code(0);
    isolint()
        .args(["check", "workloads/no-such-workload"])
        .assert()
        .code(2);
}
