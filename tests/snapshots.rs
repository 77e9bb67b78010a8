//! Snapshots of outputs that reproduce the paper's figures. Each snapshot
//! was checked by hand against the paper before it was accepted:
//! - `btp_auction`: Figure 2 (types and sets of q1–q6, `(q5 | ε)`, the FK
//!   constraints q3 = f1(q4), q3 = f1(q5), q3 = f2(q6) of Section 5.1);
//! - `graph_auction`: Figure 4 (three nodes, the single counterflow edge
//!   FindBids q2 → PlaceBid₁ q5);
//! - `subsets_smallbank`: the SmallBank columns of Figures 6 and 7.

use assert_cmd::Command;

fn stdout(args: &[&str]) -> String {
    let out = Command::cargo_bin("isolint")
        .expect("binary")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("NO_COLOR", "1")
        .args(args)
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn btp_auction() {
    insta::assert_snapshot!(stdout(&["btp", "workloads/auction.yaml"]));
}

#[test]
fn graph_auction() {
    insta::assert_snapshot!(stdout(&["graph", "workloads/auction.yaml"]));
}

#[test]
fn subsets_smallbank() {
    insta::assert_snapshot!(stdout(&[
        "subsets",
        "workloads/smallbank",
        "--all-settings",
        "--method",
        "both",
        "--no-same-tuple"
    ]));
}
