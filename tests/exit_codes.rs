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

/// With `--levels`, every format says the verdict is against the deployed
/// levels (SARIF and GitHub said "READ COMMITTED" while the text was
/// right; issue 26, a typed boundary). SmallBank with Balance SERIALIZABLE
/// is still not robust (WriteCheck is the pivot at READ COMMITTED,
/// Figure 6), so there are findings to word.
#[test]
fn every_format_says_what_the_verdict_is_against() {
    let run = |levels: Option<&str>, format: &str| {
        let mut args = vec![
            "check",
            "workloads/smallbank",
            "--no-confirm",
            "--format",
            format,
        ];
        if let Some(l) = levels {
            args.extend(["--levels", l]);
        }
        let out = plain().args(&args).output().expect("runs");
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    for format in ["text", "sarif", "github"] {
        let deployed = run(Some("Balance=serializable"), format);
        assert!(
            deployed.contains("the deployed isolation levels"),
            "{format}: {deployed}"
        );
        assert!(
            !deployed.contains("against READ COMMITTED"),
            "{format}: {deployed}"
        );
        // Control: without --levels the question is the paper's.
        let rc = run(None, format);
        assert!(
            !rc.contains("the deployed isolation levels"),
            "{format}: {rc}"
        );
    }
}
