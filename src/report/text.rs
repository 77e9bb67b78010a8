//! Text for terminals: comfy-table tables and plain lines (`analyze`,
//! `check`, `subsets`, `btp`).

use super::{
    body_text, edge_line, edit_line, new_table, programs_of, subsets_inline, ASSUMPTION, DEPLOYED,
};
use crate::analysis::findings::{Against, Findings, Step, SubsetTable};
use crate::analysis::promote::Suggestion;
use crate::analysis::robustness::{Method, Reason, Witness};
use crate::model::btp::{Statement, Workload};
use crate::model::isolation::Level;
use crate::model::schema::AttrSet;

/// The level the verdicts are about.
const RC: Level = Level::ReadCommitted;

fn set_text(w: &Workload, s: &Statement, set: &Option<AttrSet>) -> String {
    match set {
        None => "⊥".into(),
        Some(set) => format!("{{{}}}", w.schema.rel(s.rel).names(set).join(", ")),
    }
}

fn origin_text(s: &Statement) -> String {
    s.origin
        .as_ref()
        .map(|o| format!("{}:{}", o.file, o.line))
        .unwrap_or_default()
}

/// Figure 2: the BTP of every program, with control structure and
/// constraints.
pub fn btp(w: &Workload) -> String {
    let mut out = String::new();
    for p in &w.programs {
        let title = match &p.abbrev {
            Some(a) => format!("{} ({a})", p.name),
            None => p.name.clone(),
        };
        out.push_str(&format!("{title}\n"));
        let with_source = p.statements.iter().any(|s| s.origin.is_some());
        let mut header = vec![
            "q",
            "type(q)",
            "rel(q)",
            "PReadSet(q)",
            "ReadSet(q)",
            "WriteSet(q)",
        ];
        if with_source {
            header.push("source");
        }
        let mut t = new_table(header);
        for s in &p.statements {
            let ty = if s.locking {
                format!("{} (locking)", s.ty)
            } else {
                s.ty.to_string()
            };
            let mut row = vec![
                s.id.clone(),
                ty,
                w.schema.rel(s.rel).name.clone(),
                set_text(w, s, &s.pread),
                set_text(w, s, &s.read),
                set_text(w, s, &s.write),
            ];
            if with_source {
                row.push(origin_text(s));
            }
            t.add_row(row);
        }
        out.push_str(&format!("{t}\n"));
        out.push_str(&format!("  program: {}\n", body_text(p, &p.body)));
        if !p.constraints.is_empty() {
            let cs: Vec<String> = p
                .constraints
                .iter()
                .map(|c| w.constraint_text(p, c))
                .collect();
            out.push_str(&format!("  constraints: {}\n", cs.join(", ")));
        }
        out.push('\n');
    }
    out
}

fn short_sql(sql: &Option<String>) -> String {
    match sql {
        Some(s) if s.chars().count() > 60 => format!("{}…", s.chars().take(59).collect::<String>()),
        Some(s) => s.clone(),
        None => String::new(),
    }
}

/// One dangerous cycle as a table, an edge per row.
pub fn cycle_table(steps: &[Step]) -> String {
    let mut t = new_table(vec![
        "#",
        "from",
        "statement",
        "dependency",
        "to",
        "statement",
    ]);
    for (i, s) in steps.iter().enumerate() {
        let stmt = |id: &str, origin: &Option<crate::model::btp::Origin>, sql: &Option<String>| {
            let mut x = id.to_string();
            if let Some(o) = origin {
                x.push_str(&format!(" ({o})"));
            }
            let sql = short_sql(sql);
            if !sql.is_empty() {
                x.push_str(&format!("\n{sql}"));
            }
            x
        };
        let dep = format!(
            "{}{}",
            s.kinds.join(", "),
            if s.counterflow { "\ncounterflow" } else { "" }
        );
        t.add_row(vec![
            (i + 1).to_string(),
            s.from.clone(),
            stmt(&s.from_stmt, &s.from_origin, &s.from_sql),
            dep,
            s.to.clone(),
            stmt(&s.to_stmt, &s.to_origin, &s.to_sql),
        ]);
    }
    format!("{t}\n")
}

/// `isolint analyze`.
pub fn analyze(w: &Workload, a: &Findings) -> String {
    let mut o = String::new();
    let g = &a.graph;
    o.push_str(&format!(
        "workload: {} ({} programs)\nsettings: {}{}; method: {}\nsummary graph: {} nodes, {} edges ({} counterflow)\n\n",
        w.name,
        w.programs.len(),
        a.settings.label(),
        if a.settings.same_tuple { ", same-tuple constraints" } else { "" },
        super::method_label(a.method),
        g.nodes.len(),
        a.edge_count(),
        a.counterflow_count()
    ));
    if a.robust {
        let level = a.method.level();
        o.push_str(&format!("ROBUST against {}: every schedule these programs can produce under {level} is serializable.\n", level.abbreviation()));
        o.push_str(&format!("This {ASSUMPTION}.\n"));
    } else {
        let level = a.method.level();
        o.push_str(&format!("NOT ROBUST against {}: the summary graph has a dangerous cycle, so {level} may produce non-serializable schedules.\n", level.abbreviation()));
        for (i, (wit, steps)) in a.witnesses.iter().zip(&a.cycles).enumerate() {
            o.push_str(&format!(
                "\nwitness {} ({}; programs: {}):\n",
                i + 1,
                super::reason_text(wit.reason),
                programs_of(steps).join(", ")
            ));
            o.push_str(&cycle_table(steps));
            if a.method != Method::TypeI {
                o.push_str("edges 1 and 2 are the adjacent pair that makes the cycle type-II.\n");
            }
            o.push_str(&confirmation(w, a, i, ""));
        }
    }
    if let Some(s) = &a.subsets {
        o.push_str(&format!(
            "\nmaximal robust subsets: {}\n",
            subsets_inline(w, s)
        ));
    }
    o
}

/// Figure 6/7 table: one row per setting, one column per method.
pub fn subsets(w: &Workload, table: &SubsetTable) -> String {
    let methods = &table.methods;
    let mut header = vec!["setting"];
    for m in methods {
        header.push(match m {
            Method::TypeII => "Alg 2 (type-II)",
            Method::TypeI => "method of [3] (type-I)",
            Method::Snapshot => "snapshot isolation",
        });
    }
    let mut t = new_table(header);
    for (settings, per_method) in &table.rows {
        let mut row = vec![settings.label()];
        row.extend(per_method.iter().map(|s| subsets_inline(w, s)));
        t.add_row(row);
    }
    format!("{}: maximal robust subsets\n{t}\n", w.name)
}

fn pair_explanation(w: &Witness, steps: &[Step], method: Method) -> String {
    match method {
        Method::TypeI => format!("type-I: edge 1 is counterflow ({})", steps[0].from_program),
        Method::TypeII | Method::Snapshot => {
            let (a, b) = (&steps[0], &steps[1 % steps.len()]);
            let why = match w.reason {
                Reason::AdjacentCounterflow => "both are counterflow".to_string(),
                Reason::OutgoingBeforeIncoming => format!(
                    "edge 2 is counterflow and leaves from {}, which runs before {} where edge 1 enters",
                    b.from_stmt, a.to_stmt
                ),
                Reason::IncomingFromRead => format!(
                    "edge 2 is counterflow and edge 1 comes from {} {}, which starts with a (predicate) read",
                    a.from_program, a.from_stmt
                ),
                Reason::Counterflow => super::reason_text(w.reason).to_string(),
            };
            format!(
                "type-II because edges 1 and 2 meet in {}: {why}",
                b.from_program
            )
        }
    }
}

/// `isolint check`; `pg`: per witness, what `--postgres-temp` /
/// `--postgres` found on PostgreSQL (empty without them).
pub fn check(w: &Workload, a: &Findings, pg: &[super::OnPostgres]) -> String {
    let deployed = a
        .isolation
        .deployed
        .as_ref()
        .filter(|d| !d.deployed.is_default());
    let against = match a.against() {
        Against::Deployed => DEPLOYED.to_string(),
        Against::ReadCommitted => RC.abbreviation().to_string(),
    };
    let mut o = format!(
        "isolint check: {} — {} against {} ({}, {})\n",
        w.name,
        if a.robust { "ROBUST" } else { "NOT ROBUST" },
        against,
        super::method_label(a.method),
        a.settings.label()
    );
    if let Some(d) = deployed {
        o.push_str(&deployed_lines(w, d));
    }
    if a.robust {
        if deployed.is_some() {
            o.push_str(&format!(
                "Every schedule these levels allow is serializable (docs/allocation.md).\nThis {ASSUMPTION}.\n"
            ));
        } else {
            o.push_str(&format!(
                "All programs may run under {RC}: every schedule is serializable.\nThis {ASSUMPTION}.\n"
            ));
        }
        return o;
    }
    match deployed {
        Some(d) => {
            for &(p, level) in &d.raise {
                o.push_str(&format!(
                    "raise {} to {level} (the lowest robust level; `isolint allocate` shows why) [{}]\n",
                    w.programs[p].name,
                    super::RuleId::LevelTooLow
                ));
            }
        }
        None => o.push_str(&format!(
            "Run these programs under {}, or apply the fix below, or deploy only a robust subset.\n",
            Level::Serializable
        )),
    }
    o.push_str(&format!(
        "lowest robust allocation: {}\n",
        w.programs
            .iter()
            .enumerate()
            .map(|(p, prog)| format!("{}={}", prog.name, a.isolation.as_is.level(p).key()))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    o.push_str(&format!(
        "{} dangerous cycle(s), one per strongly connected component:\n",
        a.witnesses.len()
    ));
    for (i, (wit, st)) in a.witnesses.iter().zip(&a.cycles).enumerate() {
        o.push_str(&format!(
            "\ncycle {}: {} [{}]\n",
            i + 1,
            programs_of(st).join(", "),
            super::RuleId::cycle(a.method)
        ));
        for (k, s) in st.iter().enumerate() {
            o.push_str(&format!("  {}. {}\n", k + 1, edge_line(s)));
        }
        o.push_str(&format!("  {}\n", pair_explanation(wit, st, a.method)));
        o.push_str(&confirmation(w, a, i, "  "));
        if let Some(p) = pg.get(i) {
            o.push_str(&format!("  {}\n", p.line));
            for d in &p.details {
                o.push_str(&format!("    {d}\n"));
            }
        }
    }
    match &a.suggestion {
        Some(Suggestion::Promote(_)) => {
            o.push_str(&format!("\nsuggested fix (verified: the promoted workload is robust; the smallest: no fewer promoted reads make it robust) [{}]:\n", super::RuleId::FixForUpdate));
            for e in &a.edits {
                o.push_str(&format!("  {}\n", edit_line(e)));
            }
        }
        Some(Suggestion::Minimal { reads, none_up_to }) => {
            o.push_str(&format!(
                "\nsuggested fix (verified: the promoted workload is robust; minimal: leaving out any one of these {} reads is not robust; not proven the smallest: no fix of at most {none_up_to} reads exists, larger sets were not all searched) [{}]:\n",
                reads.len(),
                super::RuleId::FixForUpdate
            ));
            for e in &a.edits {
                o.push_str(&format!("  {}\n", edit_line(e)));
            }
        }
        Some(Suggestion::NotFound { candidates, tried }) => {
            o.push_str(&format!(
                "\nno fix found by promoting key-based reads to FOR UPDATE: with all {candidates} candidate reads promoted the re-analysed workload is still not robust ({tried} combinations tried).\n"
            ));
        }
        Some(Suggestion::Impossible { candidates }) => {
            o.push_str(&format!(
                "\nno fix by promoting key-based reads to FOR UPDATE: a dangerous cycle remains even with all {candidates} candidate reads promoted (its counterflow dependencies start at predicate-based statements, whose predicate a row lock does not cover).\n"
            ));
        }
        None => {}
    }
    if let Some(s) = &a.subsets {
        o.push_str(&format!(
            "maximal robust subsets (safe to run together under {RC}): {}\n",
            subsets_inline(w, s)
        ));
    }
    o
}

/// The explorer's answer for witness `i`, each line indented (nothing
/// when confirmation was not asked for).
fn confirmation(w: &Workload, a: &Findings, i: usize, indent: &str) -> String {
    a.confirmations
        .get(i)
        .map(|c| {
            super::schedule::confirmation(w, c)
                .iter()
                .map(|l| format!("{indent}{l}\n"))
                .collect()
        })
        .unwrap_or_default()
}

/// How many raised programs' cycles `allocate`'s text shows unless asked
/// for all (`--all-cycles`); JSON lists every one.
pub const SHOWN_CYCLES: usize = 10;

/// `isolint allocate`: the lowest robust allocation as a table, then per
/// raised program the cycle that forces it (the first [`SHOWN_CYCLES`]),
/// then the allocation with the verified edits.
pub fn allocate(w: &Workload, a: &Findings) -> String {
    allocate_showing(w, a, Some(SHOWN_CYCLES))
}

/// [`allocate`] showing at most `shown` cycles (`None`: all), with a line
/// saying how many more there are and how to see them. Cycles not shown
/// are not built.
pub fn allocate_showing(w: &Workload, a: &Findings, shown: Option<usize>) -> String {
    let iso = &a.isolation;
    let mut o = format!(
        "isolint allocate: {} — lowest robust isolation level per program ({}{})\n",
        w.name,
        a.settings.label(),
        if a.settings.same_tuple {
            ", same-tuple constraints"
        } else {
            ""
        },
    );
    let mut t = new_table(vec!["program", "level", "why"]);
    // `raised` is by program index.
    let raised_of = |p: usize| {
        iso.raised
            .binary_search_by_key(&p, |r| r.program)
            .ok()
            .map(|i| &iso.raised[i])
    };
    for (p, prog) in w.programs.iter().enumerate() {
        let level = iso.as_is.level(p);
        let why = match raised_of(p) {
            Some(r) => super::raise_reason(w, r),
            None => "no dangerous cycle needs more".to_string(),
        };
        t.add_row(vec![prog.name.clone(), level.to_string(), why]);
    }
    o.push_str(&format!("{t}\n"));
    o.push_str("The lowest robust allocation is unique: every robust allocation is at least this level for every program (docs/allocation.md).\n");
    let shown = shown.unwrap_or(usize::MAX);
    for r in iso.raised.iter().take(shown) {
        let name = &w.programs[r.program].name;
        let cycle = iso.cycle(w, &a.graph, r);
        o.push_str(&format!(
            "\n{name} → {} (below it, this cycle is dangerous; programs: {}):\n",
            r.level,
            programs_of(cycle).join(", ")
        ));
        for (k, s) in cycle.iter().enumerate() {
            o.push_str(&format!("  {}. {}\n", k + 1, edge_line(s)));
        }
    }
    if iso.raised.len() > shown {
        o.push_str(&format!(
            "\n... and the cycles of {} more raised programs (--all-cycles shows every one; --format json lists them all)\n",
            iso.raised.len() - shown
        ));
    }
    match (&iso.with_edits, &a.suggestion) {
        (Some(alloc), Some(Suggestion::Promote(_) | Suggestion::Minimal { .. })) => {
            o.push_str(&format!(
                "\nwith the suggested edits (verified: the promoted workload is robust under READ COMMITTED), every program may run {}:\n",
                alloc.level(0)
            ));
            for e in &a.edits {
                o.push_str(&format!("  {}\n", edit_line(e)));
            }
        }
        (_, Some(Suggestion::NotFound { .. } | Suggestion::Impossible { .. })) => {
            o.push_str("\nno promotion of key-based reads to FOR UPDATE makes READ COMMITTED robust: the allocation above stands.\n");
        }
        _ => {}
    }
    o
}

/// The deployed level of each program and where it comes from.
fn deployed_lines(w: &Workload, d: &crate::analysis::findings::DeployedVerdict) -> String {
    use crate::model::isolation::LevelSource;
    let items: Vec<String> = w
        .programs
        .iter()
        .enumerate()
        .map(|(p, prog)| {
            let from = match &d.deployed.sources[p] {
                LevelSource::Default => "default".to_string(),
                LevelSource::Declared { file, line } => format!("{file}:{line}"),
                LevelSource::Manifest => "isolint.yaml".to_string(),
                LevelSource::Flag => "--levels".to_string(),
            };
            format!(
                "{}={} ({from})",
                prog.name,
                d.deployed.allocation.level(p).key()
            )
        })
        .collect();
    format!("deployed: {}\n", items.join(", "))
}
