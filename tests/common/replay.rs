//! The server-and-CLI setup the replay tests share: `isolint check DIR
//! --format json` (with `--postgres URL` and other arguments), and the
//! reading of its `postgres` answer. Included with `#[path]`.
#![allow(dead_code)]

use std::path::Path;

use assert_cmd::Command;
use serde_json::Value;

/// `isolint CMD DIR ARGS --format json`: (exit code, JSON — `Null` when
/// the output is none —, stderr).
pub fn isolint_json(cmd: &str, dir: &Path, args: &[&str]) -> (i32, Value, String) {
    let out = Command::cargo_bin("isolint")
        .expect("binary")
        .args([cmd, &dir.display().to_string()])
        .args(["--format", "json"])
        .args(args)
        .output()
        .expect("run isolint");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), v, err)
}

/// `isolint check DIR ARGS --format json`: (exit code, JSON, stderr).
pub fn check_json(dir: &Path, args: &[&str]) -> (i32, Value, String) {
    isolint_json("check", dir, args)
}

/// `isolint check DIR ARGS`, which must find the workload not robust:
/// its JSON.
pub fn not_robust(dir: &Path, args: &[&str]) -> Value {
    let (code, v, err) = check_json(dir, args);
    assert_eq!(code, 1, "not robust: {v} {err}");
    v
}

/// `isolint check DIR ARGS`, which must find the workload robust.
pub fn robust(dir: &Path, args: &[&str]) {
    let (code, v, err) = check_json(dir, args);
    assert_eq!(code, 0, "robust: {v} {err}");
}

/// The explorer's confirmation of the first witness of a `check` JSON.
pub fn confirmation(v: &Value) -> &Value {
    &v["witnesses"][0]["confirmation"]
}

/// `isolint check DIR --postgres URL ARGS`, which must find the workload
/// not robust and reproduce its first witness on PostgreSQL: the JSON.
pub fn reproduced_json(dir: &Path, url: &str, args: &[&str]) -> Value {
    let mut all = vec!["--postgres", url];
    all.extend_from_slice(args);
    let v = not_robust(dir, &all);
    let pg = &v["witnesses"][0]["postgres"];
    assert_eq!(pg["status"], "reproduced", "{pg}");
    v
}

/// As [`reproduced_json`]: that witness's `postgres` answer.
pub fn reproduced(dir: &Path, url: &str, args: &[&str]) -> Value {
    reproduced_json(dir, url, args)["witnesses"][0]["postgres"].clone()
}

/// Any order, repetition and subset of a read and a write of one row,
/// one per iteration, as scripts/real_code_extract.py writes BenchBase's
/// procedures (`acct (id, v)`).
pub const INC: &str = "
LOOP
  IF :c1 THEN
    SELECT v INTO :x FROM acct WHERE id = :k;
  ELSIF :c2 THEN
    UPDATE acct SET v = :x + 1 WHERE id = :k;
  END IF;
  EXIT WHEN :done;
END LOOP;
";

/// `INC`'s application choices (isolint.yaml).
pub const CHOICES: &str = "choices: [c1, c2, done]\n";

/// Up to `rounds` random rounds (`isolint replay --random`, READ
/// COMMITTED) of two transactions over `keys` rows per table of the
/// workload in `dir`, seed `seed`, stopped at the first anomaly: the
/// anomalies found (0 or 1).
pub fn random_anomalies(
    s: &isolint::replay::server::Server,
    dir: &Path,
    (rounds, keys, seed): (usize, usize, u64),
) -> usize {
    use isolint::model::isolation::Level;
    use isolint::replay::random::{replay_with, Options, RandomConfig};
    let l = isolint::frontend::load(dir, None).expect("load");
    let cfg = RandomConfig {
        rounds,
        txns: 2,
        keys,
        seed,
        level: Level::ReadCommitted,
    };
    let sources = l.sources.as_ref().expect("SQL sources");
    let stop = Options {
        stop_at_anomaly: true,
        ..Options::default()
    };
    let r = replay_with(s, sources, &l.workload, &l.provenance, cfg, stop).expect("random");
    r.anomalies.len()
}

/// The strings of array `key` of `v` (a replay's `trace`, `transactions`).
pub fn strings<'v>(v: &'v Value, key: &str) -> Vec<&'v str> {
    v[key]
        .as_array()
        .unwrap_or_else(|| panic!("no array `{key}` in {v}"))
        .iter()
        .filter_map(Value::as_str)
        .collect()
}
