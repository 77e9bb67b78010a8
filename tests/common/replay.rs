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

/// `isolint check DIR --postgres URL ARGS`, which must find the workload
/// not robust and reproduce its first witness on PostgreSQL: that
/// witness's `postgres` answer.
pub fn reproduced(dir: &Path, url: &str, args: &[&str]) -> Value {
    let mut all = vec!["--postgres", url];
    all.extend_from_slice(args);
    let (code, v, err) = check_json(dir, &all);
    assert_eq!(code, 1, "not robust: {v} {err}");
    let pg = v["witnesses"][0]["postgres"].clone();
    assert_eq!(pg["status"], "reproduced", "{pg}");
    pg
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
