//! The front-end against the real database (issue 15): random workloads
//! (`isolint_testkit::sqlgen`: `.sql` programs and PL/pgSQL routines) run
//! concurrently on PostgreSQL at READ COMMITTED must never contradict a
//! "robust" verdict. Runs against a throwaway server (the code behind
//! `--postgres-temp`) and skips, saying why, only when this machine has no
//! PostgreSQL server binaries.
//!
//! `cargo test` runs a fixed-seed batch of 300; the documented release run
//! is `ISOLINT_PG_WORKLOADS=10000 cargo test --release --test pg_soundness
//! -- --nocapture`. Knobs: `ISOLINT_PG_FROM` (first seed),
//! `ISOLINT_PG_ROUNDS` (per workload), `ISOLINT_PG_THREADS` (workloads at
//! once), `ISOLINT_PG_SECONDS` (stop after S seconds with the counts so
//! far), `ISOLINT_PG_DEBUG` (print each stop that is no integrity
//! violation). A violation is shrunk and written to
//! `target/tmp/pg-soundness/seed-N/` as a workload directory with the
//! schedule that showed it; once fixed it is kept under `tests/soundness/`
//! (`recorded_cases_hold`).
//!
//! How often the alarms are seen (issue 23). Parameters meet on one row
//! (`ISOLINT_PG_FOCUS`, percent, default 60: each round draws one value
//! that every parameter takes with that probability), a transaction the
//! database aborted for its data (duplicate key, missing parent) is left
//! out of the comparison instead of voiding the round, and each
//! not-robust workload small enough (`GUIDED_OCCURRENCES`) gets
//! `ISOLINT_PG_GUIDED` (default 2) witness-guided rounds: the explorer's
//! schedule of a witness cycle with `isolint replay`'s solved values. Seeds
//! 0–299 in debug (2026-11-27, PostgreSQL 15.20, shared machine): 107
//! robust, 193 not robust, **0 violations**; an anomaly seen for 34–35 of
//! the not-robust ones by the 6 random rounds (18%; 26 = 13.5% before),
//! 41–42 (21–22%) with the guided rounds; 188 s (the old batch: 141 s,
//! each alone on the machine). The batch fails below `MIN_SHARE`.
//! `ISOLINT_PG_BREAKDOWN=1` sorts every round by why it showed no
//! anomaly (`replay::random::Breakdown`; per workload in
//! `target/tmp/pg-soundness/breakdown.txt`); `ISOLINT_PG_ALARM_ROUNDS=N`
//! gives not-robust workloads up to N random rounds, stopping at the
//! first anomaly (the larger run: `ISOLINT_PG_GUIDED=6
//! ISOLINT_PG_ALARM_ROUNDS=12`).
#![cfg(feature = "postgres")]

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use isolint::model::isolation::Level;
use isolint::replay::random::{Breakdown, GuidedConfig, Options, RandomConfig};
use isolint::replay::server::Server;
use isolint_testkit::sqlgen::{workload, SqlWorkload};

#[path = "common/postgres.rs"]
mod postgres;
use isolint_testkit::soundness::{check, check_loaded, check_with, regression_files, Check, Extra};
use postgres::server;

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn config(seed: u64, rounds: usize) -> RandomConfig {
    RandomConfig {
        rounds,
        // k = 2–3 transactions over 2–3 rows per table, by seed.
        txns: 2 + (seed % 2) as usize,
        keys: 2 + (seed / 2 % 2) as usize,
        seed,
        level: Level::ReadCommitted,
    }
}

/// Shrinks a violation (a candidate counts only if it still lowers, is
/// still robust and still shows an anomaly with the same interleaving
/// seed) and writes it out.
fn record(server: &Server, w: &SqlWorkload, rounds: usize) -> String {
    let mut fails =
        |c: &SqlWorkload| check(server, c, config(w.seed, rounds)).is_ok_and(|r| r.violation());
    let small = w.shrink(&mut fails);
    let c = check(server, &small, config(w.seed, rounds)).expect("the shrunk case still runs");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("pg-soundness")
        .join(format!("seed-{}", w.seed));
    let _ = std::fs::create_dir_all(&dir);
    for (name, text) in regression_files(&small, &c) {
        let _ = std::fs::write(dir.join(name), text);
    }
    format!("seed {}: written to {}", w.seed, dir.display())
}

/// What a batch saw, summed over its workers.
#[derive(Default)]
struct Tally {
    done: u64,
    robust: u64,
    alarms: u64,
    /// Not-robust workloads for which some round showed an anomaly.
    seen: u64,
    /// Not-robust workloads for which a witness-guided round showed an
    /// anomaly, and those seen by either kind of round.
    seen_guided: u64,
    seen_any: u64,
    /// … by a random round among the first `ISOLINT_PG_ROUNDS` (the
    /// extra rounds of not-robust workloads left out).
    seen_base: u64,
    /// Guided: schedules found, rounds run, rounds void.
    guided: [usize; 3],
    compared: usize,
    failed: usize,
    skipped: u64,
    violations: Vec<String>,
    /// The first program error of each workload that had one, by kind
    /// (SQLSTATE or what the executor does not run): to see that the
    /// harness runs what the generator writes.
    stops: std::collections::BTreeMap<String, u64>,
    /// `ISOLINT_PG_BREAKDOWN`: the rounds of robust and of not-robust
    /// workloads by kind, and per not-robust workload a line
    /// `seed met serializable anomalous void lone aborted-rounds`.
    kinds: [Breakdown; 2],
    /// Not-robust workloads none of whose rounds had two transactions
    /// meet (all rounds void, lone or apart).
    never_met: u64,
    lines: Vec<String>,
}

/// `duplicate key … (SQLSTATE 23505) at …` → `23505`; what the executor
/// does not run → `not run: …`.
fn stop_kind(f: &str) -> String {
    match f.find("SQLSTATE ") {
        Some(i) => f[i + 9..].chars().take(5).collect(),
        None => format!("not run: {}", f.chars().take(60).collect::<String>()),
    }
}

/// The batch: every workload isolint calls robust shows no anomaly; the
/// counts of the other direction are printed. Workloads run on
/// `ISOLINT_PG_THREADS` connections' worth of workers at once (each on its
/// own scratch schema): a round mostly waits on locks and pauses, so the
/// server has room for several.
#[test]
fn generated_workloads_never_contradict_a_robust_verdict() {
    let Some(server) = server() else { return };
    let from = env_or("ISOLINT_PG_FROM", 0);
    let n = env_or("ISOLINT_PG_WORKLOADS", 300);
    let rounds = env_or("ISOLINT_PG_ROUNDS", 6) as usize;
    let threads = env_or("ISOLINT_PG_THREADS", 4).max(1);
    let budget = env_or("ISOLINT_PG_SECONDS", u64::MAX);
    let start = std::time::Instant::now();
    let next = AtomicU64::new(from);
    let tally = Mutex::new(Tally::default());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let seed = next.fetch_add(1, Ordering::SeqCst);
                if seed >= from + n || start.elapsed().as_secs() >= budget {
                    return;
                }
                let w = workload(seed);
                let opts = Options {
                    breakdown: std::env::var("ISOLINT_PG_BREAKDOWN").is_ok(),
                    focus: env_or("ISOLINT_PG_FOCUS", 60),
                    stop_at_anomaly: false,
                };
                let guided = env_or("ISOLINT_PG_GUIDED", 2) as usize;
                let guided = (guided > 0).then_some(GuidedConfig {
                    rounds: guided,
                    witnesses: 2,
                    max_states: env_or("ISOLINT_PG_GUIDED_STATES", 20_000),
                    level: Level::ReadCommitted,
                    keys: config(seed, rounds).keys,
                });
                let extra = Extra {
                    opts,
                    alarm_rounds: env_or("ISOLINT_PG_ALARM_ROUNDS", 0) as usize,
                    guided,
                };
                let c: Check = check_with(&server, &w, config(seed, rounds), &extra)
                    .unwrap_or_else(|e| panic!("seed {seed}: {}", e.message));
                let violation = c.violation().then(|| record(&server, &w, rounds));
                let mut t = tally.lock().unwrap_or_else(|e| e.into_inner());
                t.done += 1;
                match &c.report {
                    None => t.skipped += 1,
                    Some(report) => {
                        t.compared += report.rounds;
                        t.failed += report.failed;
                        if let Some(f) = &report.first_failure {
                            *t.stops.entry(stop_kind(f)).or_default() += 1;
                            if std::env::var("ISOLINT_PG_DEBUG").is_ok()
                                && !f.contains("SQLSTATE 23")
                            {
                                eprintln!("seed {seed}: {f}");
                            }
                        }
                        if c.robust {
                            t.robust += 1;
                        } else {
                            t.alarms += 1;
                            t.seen += u64::from(!report.anomalies.is_empty());
                            t.seen_base +=
                                u64::from(report.anomalies.first().is_some_and(|a| a.round < rounds));
                            let g = c.guided.as_ref().is_some_and(|g| g.anomaly.is_some());
                            t.seen_guided += u64::from(g);
                            t.seen_any += u64::from(g || !report.anomalies.is_empty());
                            if let Some(g) = &c.guided {
                                if std::env::var("ISOLINT_PG_DEBUG").is_ok() {
                                    eprintln!(
                                        "seed {seed}: guided {} schedules, {} rounds, {} void ({:?}), anomaly: {}, explorer {:?} of {:?}",
                                        g.schedules,
                                        g.rounds,
                                        g.void,
                                        g.first_void,
                                        g.anomaly.is_some(),
                                        g.explore,
                                        g.total
                                    );
                                }
                                t.guided[0] += g.schedules;
                                t.guided[1] += g.rounds;
                                t.guided[2] += g.void;
                            }
                        }
                        if let Some(b) = &report.breakdown {
                            t.kinds[usize::from(!c.robust)].add(b);
                            if !c.robust {
                                t.never_met += u64::from(b.met() == 0);
                                t.lines.push(format!(
                                    "{seed} {} {} {} {} {} {}",
                                    b.met(),
                                    b.serializable,
                                    b.anomalous,
                                    b.void,
                                    b.lone,
                                    b.with_abort
                                ));
                            }
                        }
                    }
                }
                t.violations.extend(violation);
                if t.done % 500 == 0 {
                    eprintln!(
                        "pg_soundness: {} workloads, {} robust, {} violations, {:.0} s",
                        t.done,
                        t.robust,
                        t.violations.len(),
                        start.elapsed().as_secs_f64()
                    );
                }
            });
        }
    });
    let t = tally.into_inner().unwrap_or_else(|e| e.into_inner());
    eprintln!(
        "pg_soundness: seeds {from}.. : {} workloads ({} robust, {} not robust; an anomaly seen for {} of the not-robust ones; {} skipped as too large), {} rounds, {} transactions stopped by a program error, {:.1} s",
        t.done,
        t.robust,
        t.alarms,
        t.seen,
        t.skipped,
        t.compared,
        t.failed,
        start.elapsed().as_secs_f64()
    );
    eprintln!(
        "pg_soundness: not robust, an anomaly seen in the first {rounds} random rounds: {}",
        t.seen_base
    );
    eprintln!(
        "pg_soundness: witness-guided rounds: an anomaly seen for {} of the not-robust ones ({} by random or guided rounds); {} schedules, {} rounds, {} void",
        t.seen_guided, t.seen_any, t.guided[0], t.guided[1], t.guided[2]
    );
    eprintln!(
        "pg_soundness: first program error per workload, by kind: {:?}",
        t.stops
    );
    if std::env::var("ISOLINT_PG_BREAKDOWN").is_ok() {
        eprintln!(
            "pg_soundness: rounds of robust workloads by kind: {:?}",
            t.kinds[0]
        );
        eprintln!(
            "pg_soundness: rounds of not-robust workloads by kind: {:?}; {} not-robust workloads had no round in which two transactions met",
            t.kinds[1], t.never_met
        );
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("pg-soundness");
        let _ = std::fs::create_dir_all(&dir);
        let mut lines = t.lines.clone();
        lines.sort_by_key(|l| l.split(' ').next().and_then(|n| n.parse::<u64>().ok()));
        let _ = std::fs::write(
            dir.join("breakdown.txt"),
            format!(
                "# seed met serializable anomalous void lone aborted\n{}\n",
                lines.join("\n")
            ),
        );
    }
    // Integrity violations (23…: a duplicate key, a missing parent) are
    // what random parameters cause; anything else (42…: a type the
    // harness bound wrongly; `not run`) means the harness did not run what
    // the generator wrote, and the check would be blind there.
    // `ISOLINT_PG_DEBUG=1` prints each such stop.
    assert!(
        t.stops.keys().all(|k| k.starts_with("23")),
        "the harness did not run what the generator wrote: {:?}",
        t.stops
    );
    assert!(
        t.violations.is_empty(),
        "soundness violations:\n{}",
        t.violations.join("\n")
    );
    // The generator and the replay reach the anomalies of the not-robust
    // workloads at least this often (percent; see the module comment for
    // the measured share): a regression of either shows here. Only over
    // enough alarms for the share to mean something.
    let min_share = env_or("ISOLINT_PG_MIN_SHARE", MIN_SHARE);
    assert!(
        t.alarms < 100 || t.seen_any * 100 >= min_share * t.alarms,
        "an anomaly seen for only {} of {} not-robust workloads (at least {min_share}% expected)",
        t.seen_any,
        t.alarms
    );
}

/// The lower bound on the share of not-robust workloads with an anomaly
/// seen (random or guided rounds), in percent.
const MIN_SHARE: u64 = 15;

/// Every recorded case under `tests/soundness/` (a violation found by the
/// batch, shrunk, and kept once fixed; `regression_files` writes them)
/// still loads, gets the verdict its `replay.yaml` expects, and shows no
/// soundness violation when replayed as recorded. The first one is a
/// false alarm of the harness itself (see its SCHEDULE.md).
#[test]
fn recorded_cases_hold() {
    let Some(server) = server() else { return };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/soundness");
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .expect("tests/soundness exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(!dirs.is_empty(), "no recorded case");
    for dir in dirs {
        let name = dir.display().to_string();
        let text = std::fs::read_to_string(dir.join("replay.yaml")).expect("replay.yaml");
        let field = |key: &str| -> String {
            text.lines()
                .find_map(|l| l.strip_prefix(&format!("{key}: ")))
                .unwrap_or_else(|| panic!("{name}: replay.yaml has no `{key}:`"))
                .trim()
                .to_string()
        };
        let num = |key: &str| -> u64 {
            field(key)
                .parse()
                .unwrap_or_else(|_| panic!("{name}: `{key}:` is no number"))
        };
        let cfg = RandomConfig {
            rounds: num("rounds") as usize,
            txns: num("txns") as usize,
            keys: num("keys") as usize,
            seed: num("seed"),
            level: Level::ReadCommitted,
        };
        let loaded = isolint::frontend::sql_dir::load_dir(&dir, None)
            .unwrap_or_else(|e| panic!("{name}: {}", e.message));
        let c = check_loaded(&server, &loaded, cfg.seed, cfg)
            .unwrap_or_else(|e| panic!("{name}: {}", e.message));
        assert_eq!(
            if c.robust { "robust" } else { "not-robust" },
            field("expect"),
            "{name}: the verdict"
        );
        let report = c.report.as_ref().expect("small enough to run");
        assert_eq!(report.rounds, cfg.rounds, "{name}");
        assert!(
            !c.violation(),
            "{name}: robust, yet round {} is not serializable",
            report.anomalies[0].round
        );
        // `anomaly: seen`: the replay of this seed shows what SCHEDULE.md
        // ran by hand, so the case checks the executor as well as the
        // verdict.
        let optional = text
            .lines()
            .find_map(|l| l.strip_prefix("anomaly: "))
            .map(str::trim);
        eprintln!(
            "{name}: {} of {} rounds not serializable{}",
            report.anomalies.len(),
            report.rounds,
            report
                .anomalies
                .first()
                .map_or(String::new(), |a| format!(" (first: round {})", a.round))
        );
        if optional == Some("seen") {
            assert!(
                !report.anomalies.is_empty(),
                "{name}: no anomaly in {} rounds ({} aborted, {} failed: {:?})",
                report.rounds,
                report.aborted,
                report.failed,
                report.first_failure
            );
        }
    }
}

/// The replay runs what `sqlgen` writes in routines as PostgreSQL runs it:
/// an EXCEPTION block whose INSERT hits a duplicate key (or whose body
/// RAISEs) loses its writes and runs its handler, ALIAS FOR names the
/// parameter, GET DIAGNOSTICS gives the row count. The expected table is
/// what PostgreSQL 15 left after `SELECT p0(1, 2, 1)` on the same schema
/// and rows (psql, run by hand): row 1 `a = 0` (the +10 rolled back),
/// `b = 1` (handler), `c = 50` (ROW_COUNT 0); row 2 `a = 1` (the +100
/// rolled back by the RAISE), `b = 20`, `c = 41` (ROW_COUNT 1). Without
/// the savepoint the program would stop at the duplicate key.
#[test]
fn the_replay_runs_exception_blocks_as_postgres_does() {
    use isolint::model::error::SourceFile;
    use isolint::replay::executor::{Executor, Step};
    use isolint::replay::value::Val;
    let Some(server) = server() else { return };
    let schema = SourceFile::new(
        "schema.sql",
        "CREATE TABLE t0 (id INT PRIMARY KEY, a INT NOT NULL DEFAULT 0, b INT NOT NULL DEFAULT 0, c INT);\n",
    );
    let routine = SourceFile::new(
        "P0.sql",
        "CREATE FUNCTION p0(k INT, k2 INT, x INT) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  n BIGINT;
  kk ALIAS FOR $1;
BEGIN
BEGIN
UPDATE t0 SET a = a + 10 WHERE id = kk;
INSERT INTO t0 (id, a, b) VALUES (k, 0, 0);
EXCEPTION WHEN integrity_constraint_violation OR raise_exception THEN
UPDATE t0 SET b = b + 1 WHERE id = k;
END;
BEGIN
UPDATE t0 SET a = a + 100 WHERE id = k2;
IF x > 0 THEN
RAISE EXCEPTION 'refused';
END IF;
EXCEPTION WHEN integrity_constraint_violation OR raise_exception THEN
UPDATE t0 SET b = b + 20 WHERE id = k2;
END;
UPDATE t0 SET a = a + 1 WHERE id = k2 OR id = 7;
GET DIAGNOSTICS n = ROW_COUNT;
UPDATE t0 SET c = n + 40 WHERE id = k2;
UPDATE t0 SET a = a + 1 WHERE id = 9;
GET DIAGNOSTICS n = ROW_COUNT;
UPDATE t0 SET c = n + 50 WHERE id = k;
END $$;
",
    );
    let loaded = isolint::frontend::sql_dir::lower_texts(&schema, &[routine])
        .unwrap_or_else(|e| panic!("{}", e.message));
    let program = &loaded.sources.as_ref().expect("sources").programs[0];
    let scratch = isolint::replay::scratch::Scratch::create(&server, &schema)
        .unwrap_or_else(|e| panic!("{}", e.message));
    let mut c = scratch
        .connect()
        .unwrap_or_else(|e| panic!("{}", e.message));
    c.batch_execute("INSERT INTO t0 (id, c) VALUES (1, 1), (2, 2); BEGIN")
        .expect("rows");
    let int = |v: &str| Val::typed(v, &::postgres::types::Type::INT4);
    let params = [("k", "1"), ("k2", "2"), ("x", "1")]
        .into_iter()
        .map(|(n, v)| (n.to_string(), int(v)))
        .collect();
    let mut ex = Executor::new(program, params);
    loop {
        match ex.step(&mut c) {
            Ok(Step::Ran(_)) => {}
            Ok(Step::Finished) => break,
            other => panic!("the program stopped: {other:?}"),
        }
    }
    c.batch_execute("COMMIT").expect("commit");
    let rows: Vec<(i32, i32, i32, Option<i32>)> = c
        .query("SELECT id, a, b, c FROM t0 ORDER BY id", &[])
        .expect("state")
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
        .collect();
    assert_eq!(rows, vec![(1, 0, 1, Some(50)), (2, 1, 20, Some(41))]);
}

/// Lowers a one-table workload written here.
fn lowered(program: &str) -> isolint::frontend::Loaded {
    use isolint::model::error::SourceFile;
    let schema = SourceFile::new(
        "schema.sql",
        "CREATE TABLE t0 (id INT PRIMARY KEY, a INT NOT NULL DEFAULT 0);\n",
    );
    let p = SourceFile::new("P0.sql", program);
    isolint::frontend::sql_dir::lower_texts(&schema, &[p])
        .unwrap_or_else(|e| panic!("{}", e.message))
}

/// Witness-guided rounds (issue 23) reach the anomaly the static witness
/// names. The lost update of a read and a write computed on the client:
/// two instances of `SELECT a INTO :v … ; UPDATE … SET a = :v + 1` on one
/// row, run as the explorer's schedule orders them (T1 reads, T2 reads,
/// T1 writes and commits, T2 writes and commits), end with `a` raised
/// once and both reads equal; every serial order raises it twice and the
/// second read sees the first write (PostgreSQL 15 at READ COMMITTED:
/// T2's UPDATE waits for T1's row lock, then sets the value it computed
/// from its own read). Control: the program that writes `a = a + 1`
/// first and reads after is robust (the write takes the row lock before
/// the read, which then sees its own write), so no witness and no guided
/// round; its random rounds show no anomaly.
#[test]
fn guided_rounds_reach_the_witness_anomaly() {
    use isolint_testkit::soundness::check_loaded_with;
    let Some(server) = server() else { return };
    let guided = GuidedConfig {
        rounds: 6,
        witnesses: 2,
        max_states: 20_000,
        level: Level::ReadCommitted,
        keys: 2,
    };
    let extra = Extra {
        guided: Some(guided),
        ..Extra::default()
    };
    let cfg = config(0, 4);
    let lost = lowered(
        "SELECT a INTO :v FROM t0 WHERE id = :k;\nUPDATE t0 SET a = :v + 1 WHERE id = :k;\n",
    );
    let c = check_loaded_with(&server, &lost, 0, cfg, &extra).expect("runs");
    assert!(!c.robust, "the lost update is not robust");
    let g = c.guided.expect("guided rounds for a not-robust workload");
    assert!(g.schedules >= 1, "the explorer gives a schedule");
    assert!(
        g.anomaly.is_some(),
        "no guided round showed the lost update: {} rounds, {} void ({:?})",
        g.rounds,
        g.void,
        g.first_void
    );
    let safe = lowered(
        "UPDATE t0 SET a = a + 1 WHERE id = :k;\nSELECT a INTO :v FROM t0 WHERE id = :k;\n",
    );
    let c = check_loaded_with(&server, &safe, 0, cfg, &extra).expect("runs");
    assert!(c.robust, "the control is robust");
    assert!(c.guided.is_none());
    assert!(!c.violation());
}

/// Which stops leave a random round uncompared: the database's aborts
/// for the data (a duplicate key 23505, a missing parent 23503, a RAISE
/// P0001, a deadlock 40P01) do not — the aborted transaction's writes
/// were never visible, so the committed ones must still match a serial
/// order of theirs; a harness error (42P08: a parameter typed wrongly) or
/// a construct the executor does not run does.
#[test]
fn only_harness_stops_void_a_round() {
    use isolint::replay::executor::Halt;
    use isolint::replay::random::voids;
    let db = |code: &str| Halt::Db {
        code: code.into(),
        message: String::new(),
        source: None,
    };
    for code in ["23505", "23503", "P0001", "40P01", "40001", "22012"] {
        assert!(!voids(&db(code)), "{code}");
    }
    for code in ["42P08", "08000", "57014"] {
        assert!(voids(&db(code)), "{code}");
    }
    assert!(!voids(&Halt::Unsupported("blocked".into())));
    assert!(voids(&Halt::Unsupported("a cursor".into())));
}
