//! `isolint invariants` and `isolint allocate --invariants` (issue 25):
//! the words. Every number comes from `replay::invariants::Report`.

use serde_json::{json, Value};

use crate::model::isolation::Level;
use crate::replay::invariants::{Counterexample, Report, Verdict};

/// The bounds a "held" answer is relative to, in one paragraph.
pub fn bounds(r: &Report) -> Vec<String> {
    let mut out = vec![];
    out.push(format!(
        "k = {} program instances per execution; seed: {} ({})",
        r.k,
        r.seed_from,
        r.seed_rows
            .iter()
            .map(|(t, n)| format!("{t}: {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    for (p, params) in &r.domain {
        let ps: Vec<String> = params.iter().map(|(n, d)| format!(":{n} ∈ {d}")).collect();
        let names: Vec<&str> = params.iter().map(|(n, _)| n.as_str()).collect();
        let insts: Vec<String> = r
            .instances
            .iter()
            .find(|(q, _)| q == p)
            .map(|(_, l)| l.iter().map(|v| format!("({})", v.join(", "))).collect())
            .unwrap_or_default();
        out.push(format!(
            "  {p}({}): {} instances (at most {}) of ({}): {}",
            ps.join(", "),
            insts.len(),
            r.instances_cap,
            names.join(", "),
            insts.join(" ")
        ));
    }
    if !r.read_only.is_empty() {
        out.push(format!(
            "left out (they only read, and a plain read changes no committed state): {}",
            r.read_only.join(", ")
        ));
    }
    out.push(format!(
        "ran {} serial executions ({}), {} explorer schedules, {} interleavings ({} choices pruned as equivalent), {} aborted by PostgreSQL, in {:.1} s of a {} s budget{}",
        r.serial_runs,
        if r.serial_complete { "all sequences" } else { "budget reached before all sequences" },
        r.witness_runs,
        r.interleavings,
        r.pruned,
        r.aborted,
        r.elapsed.as_secs_f64(),
        r.budget.as_secs(),
        if r.complete { "" } else { " — the budget ran out before every execution within these bounds was run" }
    ));
    if !r.coverage.is_empty() {
        let c: Vec<String> = r
            .coverage
            .iter()
            .map(|(p, done, all)| format!("{p} {done}/{all}"))
            .collect();
        out.push(format!(
            "instance tuples whose every interleaving ran, per program multiset: {}",
            c.join(", ")
        ));
    }
    if r.failed > 0 {
        out.push(format!(
            "{} transactions stopped for another reason than concurrency (first: {})",
            r.failed,
            r.first_failure.as_deref().unwrap_or("?")
        ));
    }
    out
}

fn levels_line(r: &Report) -> String {
    let ls: Vec<String> = r
        .levels
        .iter()
        .map(|(p, l)| format!("{p}={}", level_name(*l)))
        .collect();
    ls.join(", ")
}

pub fn level_name(l: Level) -> &'static str {
    match l {
        Level::ReadCommitted => "READ COMMITTED",
        Level::RepeatableRead => "REPEATABLE READ",
        Level::Serializable => "SERIALIZABLE",
    }
}

fn run_lines(c: &Counterexample) -> Vec<String> {
    let mut out = vec![format!("    from {}", c.origin)];
    for t in &c.txns {
        let ps: Vec<String> = t.params.iter().map(|(n, v)| format!("{n} = {v}")).collect();
        out.push(format!(
            "    {}({}) at {} — {}",
            t.name,
            ps.join(", "),
            level_name(t.level),
            t.end
        ));
    }
    for s in &c.steps {
        let name = format!("T{}", s.txn + 1);
        match &s.sql {
            None => out.push(format!("    C{}", s.txn + 1)),
            Some(sql) => {
                let seen = if s.rows.is_empty() {
                    format!("{} row(s) affected", s.affected)
                } else {
                    let rs: Vec<String> = s
                        .rows
                        .iter()
                        .map(|r| format!("({})", r.join(", ")))
                        .collect();
                    rs.join(" ")
                };
                out.push(format!("    {name}: {sql} → {seen}"));
            }
        }
    }
    out.push(match c.after {
        Some(i) => format!(
            "    after T{} ended, the invariant's query gives {}:",
            i + 1,
            c.result
        ),
        None => format!("    at the end, the invariant's query gives {}:", c.result),
    });
    for (t, rows) in &c.state {
        out.push(format!("      {t}: {}", rows.join(" ")));
    }
    for n in &c.notes {
        out.push(format!("    note: {n}"));
    }
    if c.replayed {
        out.push("    run again with the same driver actions: broken again on PostgreSQL".into());
    }
    out
}

pub fn text(r: &Report, server: &str) -> String {
    let mut out = vec![
        format!("server: {server}"),
        format!("levels: {}", levels_line(r)),
        String::new(),
    ];
    for res in &r.results {
        out.push(format!("invariant {}: {}", res.name, res.query));
        match &res.verdict {
            Verdict::FalseOnSeed { result } => out.push(format!(
                "  false on the seed data (the query gives {result}): not searched — give a seed that satisfies it (`invariants_seed:`)"
            )),
            Verdict::BrokenSerially(c) => {
                out.push("  broken by a SERIAL execution: a property the programs do not have, whatever the isolation level".into());
                out.extend(run_lines(c));
            }
            Verdict::Broken(c) => {
                out.push("  BROKEN by a concurrent execution (no serial order of its transactions breaks it):".into());
                out.extend(run_lines(c));
            }
            Verdict::Held => out.push(
                "  held within bounds: no execution run broke it (bounded search, not a proof)".into(),
            ),
        }
        out.push(String::new());
    }
    out.push("bounds:".into());
    out.extend(bounds(r).into_iter().map(|l| format!("  {l}")));
    out.join("\n") + "\n"
}

fn cx_json(c: &Counterexample) -> Value {
    json!({
        "origin": c.origin,
        "transactions": c.txns.iter().map(|t| json!({
            "name": t.name, "level": level_name(t.level), "end": t.end,
            "params": t.params.iter().map(|(n, v)| (n.clone(), Value::String(v.clone()))).collect::<serde_json::Map<_, _>>(),
        })).collect::<Vec<_>>(),
        "steps": c.steps.iter().map(|s| json!({
            "txn": s.txn + 1, "sql": s.sql, "rows": s.rows, "affected": s.affected,
        })).collect::<Vec<_>>(),
        "after_txn": c.after.map(|i| i + 1),
        "result": c.result,
        "state": c.state.iter().map(|(t, rows)| json!({"table": t, "rows": rows})).collect::<Vec<_>>(),
        "notes": c.notes,
        "replayed": c.replayed,
    })
}

pub fn report_json(r: &Report) -> Value {
    json!({
        "levels": r.levels.iter().map(|(p, l)| (p.clone(), Value::String(level_name(*l).into()))).collect::<serde_json::Map<_, _>>(),
        "invariants": r.results.iter().map(|res| {
            let (verdict, cx) = match &res.verdict {
                Verdict::FalseOnSeed { .. } => ("false_on_seed", None),
                Verdict::BrokenSerially(c) => ("broken_serially", Some(cx_json(c))),
                Verdict::Broken(c) => ("broken", Some(cx_json(c))),
                Verdict::Held => ("held_within_bounds", None),
            };
            json!({"name": res.name, "query": res.query, "verdict": verdict, "counterexample": cx})
        }).collect::<Vec<_>>(),
        "bounds": {
            "k": r.k,
            "seed": r.seed_from,
            "seed_rows": r.seed_rows.iter().map(|(t, n)| (t.clone(), json!(n))).collect::<serde_json::Map<_, _>>(),
            "domain": r.domain.iter().map(|(p, ps)| (p.clone(), ps.iter().map(|(n, d)| (n.clone(), Value::String(d.clone()))).collect::<serde_json::Map<_, _>>().into())).collect::<serde_json::Map<_, Value>>(),
            "instances_per_program": r.instances_cap,
            "instances": r.instances.iter().map(|(p, l)| (p.clone(), json!(l))).collect::<serde_json::Map<_, _>>(),
            "read_only_left_out": r.read_only,
            "serial_runs": r.serial_runs,
            "serial_complete": r.serial_complete,
            "explorer_runs": r.witness_runs,
            "interleavings": r.interleavings,
            "pruned": r.pruned,
            "coverage": r.coverage.iter().map(|(p, d, a)| json!({"programs": p, "done": d, "tuples": a})).collect::<Vec<_>>(),
            "complete": r.complete,
            "aborted": r.aborted,
            "failed": r.failed,
            "seconds": r.elapsed.as_secs_f64(),
            "budget_seconds": r.budget.as_secs(),
        },
    })
}

pub fn json(r: &Report, server: &str) -> Value {
    let mut v = report_json(r);
    v["server"] = Value::String(server.into());
    v
}

/// `allocate --invariants`: the robust allocation beside the lowest
/// allocation found under which no invariant broke within bounds.
pub fn allocate_text(
    programs: &[String],
    robust: &[Level],
    lowest: &[Level],
    last: &Report,
    tried: usize,
) -> String {
    let mut out = vec![
        "program levels: robust (every execution serializable) vs. enough for the stated invariants within bounds".into(),
    ];
    for (i, p) in programs.iter().enumerate() {
        out.push(format!(
            "  {p:<24} robust: {:<16} invariants: {}",
            level_name(robust[i]),
            level_name(lowest[i])
        ));
    }
    out.push(String::new());
    out.push(format!(
        "The invariant levels are BOUNDED, not proven: {tried} allocations searched (starting from the robust one, lowering one program at a time while no invariant broke); under them no execution within the bounds below broke an invariant. No program can be lowered one step further without a counterexample within bounds."
    ));
    out.push("bounds of the last search:".into());
    out.extend(bounds(last).into_iter().map(|l| format!("  {l}")));
    out.join("\n") + "\n"
}

pub fn allocate_json(
    programs: &[String],
    robust: &[Level],
    lowest: &[Level],
    last: &Report,
    tried: usize,
) -> Value {
    json!({
        "programs": programs.iter().enumerate().map(|(i, p)| json!({
            "name": p, "robust": level_name(robust[i]), "invariants": level_name(lowest[i]),
        })).collect::<Vec<_>>(),
        "bounded": true,
        "allocations_searched": tried,
        "last_search": report_json(last),
    })
}

/// The same as [`text`], as a Markdown section (for a report or a PR).
pub fn markdown(r: &Report, server: &str) -> String {
    let mut out = vec![
        "## Invariants under weak isolation".to_string(),
        String::new(),
        format!("Checked on {server} at {}.", levels_line(r)),
        String::new(),
        "| invariant | answer |".into(),
        "|---|---|".into(),
    ];
    for res in &r.results {
        let answer = match &res.verdict {
            Verdict::FalseOnSeed { .. } => "false on the seed data (not searched)",
            Verdict::BrokenSerially(_) => {
                "**broken by a serial execution** (a property the programs do not have)"
            }
            Verdict::Broken(_) => "**broken** by a concurrent execution",
            Verdict::Held => "held within bounds (not a proof)",
        };
        out.push(format!("| `{}` | {answer} |", res.name));
    }
    for res in &r.results {
        if let Verdict::Broken(c) | Verdict::BrokenSerially(c) = &res.verdict {
            out.push(String::new());
            out.push(format!("### `{}`", res.name));
            out.push(String::new());
            out.push(format!("```sql\n{}\n```", res.query));
            out.push(String::new());
            out.push("```text".into());
            out.extend(run_lines(c).into_iter().map(|l| l.trim_start().to_string()));
            out.push("```".into());
        }
    }
    out.push(String::new());
    out.push("### Bounds".into());
    out.push(String::new());
    out.extend(
        bounds(r)
            .into_iter()
            .map(|l| format!("- {}", l.trim_start())),
    );
    out.join("\n") + "\n"
}
