//! `isolint replay`: the replays of the explorer's schedules and the
//! random rounds, as text and JSON. Computes nothing: verdicts, values,
//! traces and the serial runs come from `replay`.

use serde_json::{json, Value as Json};

use crate::replay::confirmed::OnServer;
use crate::replay::executor::{Halt, Ran};
use crate::replay::random::RandomReport;
use crate::replay::run::{Comparison, End, Mask, Outcome, SeedRow, Txn};
use crate::replay::witness::{Plan, Verdict, WitnessReplay};

/// One replayed witness, or why there was nothing to replay.
pub enum Item<'a> {
    Replayed {
        /// e.g. `Amalgamate → Balance → Amalgamate`.
        cycle: String,
        /// The explorer's schedule, as `report::schedule::lines` prints it.
        schedule: Vec<String>,
        /// Why the schedule is one of the BTP model only (not of the
        /// programs with values), when it is (`Schedule::model_only`).
        model_only: Option<String>,
        replay: &'a WitnessReplay,
    },
    Skipped {
        cycle: String,
        why: String,
    },
}

fn call(t: &Txn) -> String {
    let args: Vec<String> = t
        .shown_params()
        .iter()
        .map(|(k, v)| format!("{k} = {v}"))
        .collect();
    format!("{}({})", t.name, args.join(", "))
}

fn row(r: &[crate::replay::value::Val]) -> String {
    let v: Vec<String> = r.iter().map(|v| v.literal()).collect();
    format!("({})", v.join(", "))
}

fn observed(r: &Ran) -> String {
    if r.rows.is_empty() {
        format!("{} row(s) affected", r.affected)
    } else {
        r.rows.iter().map(|x| row(x)).collect::<Vec<_>>().join(" ")
    }
}

/// One seed row: the columns the schedule touches first, the others
/// after a `|` (a wide table's row no longer hides the key in a line of
/// thousands of characters).
fn seed_line(p: &Plan, r: &SeedRow) -> String {
    let (touched, other) = p.touched_first(r);
    let list = |xs: &[&(String, crate::replay::value::Val)]| {
        xs.iter()
            .map(|(c, v)| format!("{c} = {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match (touched.is_empty(), other.is_empty()) {
        (_, true) => format!("{}({})", r.table, list(&touched)),
        (true, false) => format!("{}({})", r.table, list(&other)),
        (false, false) => format!("{}({} | {})", r.table, list(&touched), list(&other)),
    }
}

/// The run in the order things happened.
fn trace(txns: &[Txn], o: &Outcome) -> Vec<String> {
    let short = |i: usize| format!("T{}", i + 1);
    let mut out = vec![];
    for &(i, k) in &o.trace {
        match k {
            Some(k) => {
                let r = &o.observed[i][k];
                out.push(format!("{}: {} → {}", short(i), r.source, observed(r)));
            }
            None => out.push(format!("C{}", i + 1)),
        }
    }
    for (i, e) in o.ends.iter().enumerate() {
        match e {
            End::Committed => {}
            End::RolledBack(why) => out.push(format!("{} rolled back: {why}", txns[i].name)),
            End::Halted(h) => out.push(format!("{} stopped: {h}", txns[i].name)),
        }
    }
    out
}

/// Each transaction that did not commit: how it ended, and for an error
/// PostgreSQL raised its SQLSTATE, message and statement (JSON `stopped`).
fn stops(txns: &[Txn], o: &Outcome) -> Vec<Json> {
    o.ends
        .iter()
        .enumerate()
        .filter_map(|(i, e)| {
            let name = txns.get(i).map_or("?", |t| t.name.as_str());
            match e {
                End::Committed => None,
                End::RolledBack(why) => Some(json!({"transaction": name, "end": "rolled_back", "why": why})),
                End::Halted(Halt::Db { code, message, source }) => Some(json!({"transaction": name, "end": "stopped", "sqlstate": code, "message": message, "statement": source})),
                End::Halted(h) => Some(json!({"transaction": name, "end": "stopped", "why": h.to_string()})),
            }
        })
        .collect()
}

/// How serial order `k` differs from the concurrent run (values the runs
/// made up masked, as the comparison masks them).
fn difference(txns: &[Txn], c: &Outcome, s: &Outcome, mask: &Mask) -> String {
    for i in c.committed() {
        for (j, r) in c.observed[i].iter().enumerate() {
            match s.observed[i].get(j) {
                Some(x) if mask.same_ran(x, r) => {}
                Some(x) if x.source == r.source => {
                    return format!(
                        "T{} `{}` gives {} (concurrently: {})",
                        i + 1,
                        r.source,
                        observed(x),
                        observed(r)
                    )
                }
                _ => return format!("{} takes another path", txns[i].name),
            }
        }
    }
    let (cs, ss) = (mask.state(&c.state), mask.state(&s.state));
    if cs != ss {
        for ((t, a), (_, b)) in cs.iter().zip(&ss) {
            if a != b {
                let show = |rows: &Vec<Vec<crate::replay::value::Val>>| {
                    rows.iter().map(|r| row(r)).collect::<Vec<_>>().join(" ")
                };
                return format!("final {t}: {} (concurrently: {})", show(b), show(a));
            }
        }
    }
    "same outcome".into()
}

fn serial_lines(txns: &[Txn], c: &Outcome, cmp: &Comparison) -> Vec<String> {
    cmp.orders
        .iter()
        .zip(&cmp.serial)
        .map(|(o, s)| {
            let order: Vec<String> = o.iter().map(|i| format!("T{}", i + 1)).collect();
            format!(
                "serial {}: {}",
                order.join(", "),
                difference(txns, c, s, &cmp.mask)
            )
        })
        .collect()
}

/// The text of `isolint replay`.
pub fn text(items: &[Item], random: Option<&RandomReport>, server: &str) -> String {
    let mut out = String::new();
    let mut push = |s: String| {
        out.push_str(&s);
        out.push('\n');
    };
    push(format!("server: {server}"));
    if items.is_empty() && random.is_none() {
        push("nothing to replay: isolint finds the workload robust (no dangerous cycle, so no counterexample schedule); use --random N to try random interleavings".into());
    }
    for (n, it) in items.iter().enumerate() {
        push(String::new());
        match it {
            Item::Skipped { cycle, why } => {
                push(format!("witness {}: {cycle}", n + 1));
                push(format!("  not replayed: {why}"));
            }
            Item::Replayed {
                cycle,
                schedule,
                replay,
                ..
            } => {
                push(format!("witness {}: {cycle}", n + 1));
                push("  the explorer's schedule:".into());
                for l in schedule {
                    push(format!("    {l}"));
                }
                if let Some(p) = &replay.plan {
                    push(format!("  on PostgreSQL at {}:", replay.level_text()));
                    for t in &p.txns {
                        push(format!("    {}", call(t)));
                    }
                    push("    seed (the columns the schedule touches first):".into());
                    for r in &p.seed {
                        push(format!("      {}", seed_line(p, r)));
                    }
                    if let Some(o) = &replay.outcome {
                        for l in trace(&p.txns, o) {
                            push(format!("    {l}"));
                        }
                        if let Some(cmp) = &replay.comparison {
                            for l in serial_lines(&p.txns, o, cmp) {
                                push(format!("    {l}"));
                            }
                        }
                    }
                }
                for note in &replay.notes {
                    push(format!("  note: {note}"));
                }
                push(format!("  {}", verdict_line(replay)));
            }
        }
    }
    if let Some(r) = random {
        push(String::new());
        push(format!(
            "random replay at {}: {} rounds of {} transactions over {} rows per table (seed {})",
            r.config.level, r.rounds, r.config.txns, r.config.keys, r.config.seed
        ));
        push(format!(
            "  {} transaction(s) aborted by the database, {} stopped otherwise, {} blocked statement(s)",
            r.aborted, r.failed, r.blocked
        ));
        if let Some(f) = &r.first_failure {
            push(format!("  first stop: {f}"));
        }
        match r.anomalies.first() {
            None => push(format!(
                "  no anomaly: every round's outcome equals a serial order's ({})",
                r.server_version
            )),
            Some(a) => {
                push(format!(
                    "  reproduced on {}: {} of {} rounds not serializable; the first (round {}):",
                    r.server_version,
                    r.anomalies.len(),
                    r.rounds,
                    a.round + 1
                ));
                for t in &a.txns {
                    push(format!("    {}", call(t)));
                }
                for l in trace(&a.txns, &a.outcome) {
                    push(format!("    {l}"));
                }
                for l in serial_lines(&a.txns, &a.outcome, &a.comparison) {
                    push(format!("    {l}"));
                }
            }
        }
    }
    out
}

fn verdict_line(r: &WitnessReplay) -> String {
    match &r.verdict {
        Verdict::Reproduced => format!(
            "reproduced on {}: not serializable (no serial order gives the same reads and final state)",
            r.server_version
        ),
        Verdict::NotReproduced(why) => format!("not reproduced on {}: {why}", r.server_version),
    }
}

/// The JSON of `isolint replay` (keys in docs/replay.md).
pub fn json(items: &[Item], random: Option<&RandomReport>, server: &str) -> Json {
    let witnesses: Vec<Json> = items
        .iter()
        .map(|it| match it {
            Item::Skipped { cycle, why } => json!({"cycle": cycle, "replayed": false, "why": why}),
            Item::Replayed {
                cycle,
                replay,
                model_only,
                ..
            } => {
                let (reproduced, why) = match &replay.verdict {
                    Verdict::Reproduced => (true, None),
                    Verdict::NotReproduced(w) => (false, Some(w.clone())),
                };
                let txns: Vec<Json> = replay
                    .plan
                    .iter()
                    .flat_map(|p| &p.txns)
                    .map(|t| {
                        json!({"name": t.name, "params": t.shown_params().into_iter().map(|(k, v)| (k, json!(v.text))).collect::<serde_json::Map<_, _>>()})
                    })
                    .collect();
                let trace: Vec<String> = match (&replay.plan, &replay.outcome) {
                    (Some(p), Some(o)) => trace(&p.txns, o),
                    _ => vec![],
                };
                json!({
                    "cycle": cycle,
                    "replayed": true,
                    "model_only": model_only,
                    "level": replay.level_text(),
                    "levels": replay.levels.iter().map(|l| l.sql()).collect::<Vec<_>>(),
                    "server": replay.server_version,
                    "reproduced": reproduced,
                    "why_not": why,
                    "transactions": txns,
                    "trace": trace,
                    "stopped": match (&replay.plan, &replay.outcome) {
                        (Some(p), Some(o)) => stops(&p.txns, o),
                        _ => vec![],
                    },
                    "notes": replay.notes,
                })
            }
        })
        .collect();
    let random = random.map(|r| {
        json!({
            "level": r.config.level.to_string(),
            "rounds": r.rounds,
            "txns": r.config.txns,
            "keys": r.config.keys,
            "seed": r.config.seed,
            "aborted": r.aborted,
            "failed": r.failed,
            "blocked": r.blocked,
            "anomalies": r.anomalies.len(),
        })
    });
    json!({"server": server, "witnesses": witnesses, "random": random})
}

/// Seed rows and trace lines `check` prints at most (a TPC-C Delivery
/// runs its loop ten times); `isolint replay` prints them all.
const CHECK_LINES: usize = 12;

/// What `check` prints under a replayed cycle: the calls, and for a
/// reproduced anomaly the seed, the run and how each serial order
/// differs; then the notes, each cut to one screen line.
fn check_details(replay: &WitnessReplay) -> Vec<String> {
    let cap = |v: Vec<String>| -> Vec<String> {
        let n = v.len();
        let mut v: Vec<String> = v.into_iter().take(CHECK_LINES).collect();
        if n > CHECK_LINES {
            v.push(format!(
                "… {} more (isolint replay shows all)",
                n - CHECK_LINES
            ));
        }
        v
    };
    let mut out = vec![];
    if let Some(p) = &replay.plan {
        out.extend(p.txns.iter().map(call));
        if replay.verdict == Verdict::Reproduced {
            out.push("seed (the columns the schedule touches first):".into());
            out.extend(cap(p
                .seed
                .iter()
                .map(|r| format!("  {}", seed_line(p, r)))
                .collect()));
            if let Some(o) = &replay.outcome {
                out.extend(cap(trace(&p.txns, o)));
                if let Some(cmp) = &replay.comparison {
                    out.extend(serial_lines(&p.txns, o, cmp));
                }
            }
        }
    }
    for n in &replay.notes {
        let short: String = n.chars().take(200).collect();
        let more = if short.len() < n.len() { "…" } else { "" };
        out.push(format!("note: {short}{more}"));
    }
    out
}

/// `check --postgres…`: one cycle's answer from PostgreSQL in words
/// (issue 23, item 6). "reproduced" only when the replay's verdict is
/// [`Verdict::Reproduced`]; a replay that could not run, or ran and found
/// a serial order with the same outcome, is "not reproduced" with why.
pub fn on_postgres(r: &OnServer) -> super::OnPostgres {
    match r {
        OnServer::Replayed(replay) => {
            let (status, line, why) = match &replay.verdict {
                Verdict::Reproduced => (
                    "reproduced",
                    format!(
                        "reproduced on {} at {}: no serial order gives the same reads and final state",
                        replay.server_version, replay.level_text()
                    ),
                    None,
                ),
                Verdict::NotReproduced(why) => (
                    "not_reproduced",
                    format!("not reproduced on {} ({why})", replay.server_version),
                    Some(why.clone()),
                ),
            };
            let details = check_details(replay);
            let json = json!({
                "status": status,
                "server": replay.server_version,
                "level": replay.level_text(),
                "levels": replay.levels.iter().map(|l| l.sql()).collect::<Vec<_>>(),
                "why": why,
                "description": line,
                "transactions": replay.plan.iter().flat_map(|p| &p.txns).map(call).collect::<Vec<_>>(),
                "trace": match (&replay.plan, &replay.outcome) {
                    (Some(p), Some(o)) => trace(&p.txns, o),
                    _ => vec![],
                },
                "stopped": match (&replay.plan, &replay.outcome) {
                    (Some(p), Some(o)) => stops(&p.txns, o),
                    _ => vec![],
                },
                "notes": replay.notes,
            });
            super::OnPostgres {
                status,
                line,
                details,
                json,
            }
        }
        OnServer::Failed(why) => {
            let line = format!("not reproduced: the replay could not run ({why})");
            super::OnPostgres {
                status: "not_reproduced",
                json: json!({"status": "not_reproduced", "why": format!("the replay could not run: {why}"), "description": line}),
                line,
                details: vec![],
            }
        }
        OnServer::NotReplayed(why) => {
            let line = format!("not replayed on PostgreSQL: {why}");
            super::OnPostgres {
                status: "not_replayed",
                json: json!({"status": "not_replayed", "why": why, "description": line}),
                line,
                details: vec![],
            }
        }
    }
}
