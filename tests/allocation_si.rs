//! Issue 24 item 1: the lowest allocation on the 17 SmallBank promotion
//! variants of the artefact of [VLDB25] (Vandevoort, Fekete, Ketsman,
//! Neven, Vansummeren, PVLDB 18(9), 2025; repository
//! `UHasselt-DSI-Data-Systems-Lab/code-template-allocations-artifacts`,
//! `template_robustness/smallbank.py`, variant names as there), and the
//! first-updater-wins refinement of the snapshot levels it needs
//! (docs/allocation.md, Lemma 3; `rules::si::fuw_blocked`).
//!
//! The variants are the bundled `workloads/smallbank` with `FOR UPDATE`
//! on the reads the artefact promotes (`_pr1`: the Account lookups,
//! `pr_c_B_W`: Balance's (B) and WriteCheck's (W) Savings (2) and
//! Checking (3) reads). The artefact's allocations were taken from
//! running it (`optimal_alloc` per variant, Python 3.11); order below is
//! (Amalgamate, Balance, DepositChecking, TransactSavings, WriteCheck).
//! Result: isolint equals the artefact on 11 variants (the 6 former false
//! alarms among them), is lower on 2 (pr_c_2_0, pr_c_2_3) and higher on
//! the 4 where the artefact's allocation is not serializable.
//!
//! PostgreSQL 15 checks (two psql sessions, row Checking(1) = 100):
//!
//! * **Lemma 3** (schedule A): T1 `BEGIN ISOLATION LEVEL REPEATABLE READ;
//!   SELECT balance FROM savings WHERE customerid=1; SELECT balance FROM
//!   checking WHERE customerid=1;` — T2 (READ COMMITTED) `BEGIN; UPDATE
//!   checking SET balance = balance + 10 WHERE customerid=1; COMMIT;` —
//!   T1 `UPDATE checking SET balance = balance - 5 WHERE customerid=1;`
//!   → `ERROR: could not serialize access due to concurrent update`;
//!   the row is 110 (only T2 committed). So WriteCheck at REPEATABLE READ
//!   cannot commit after a DepositChecking that wrote its Checking row
//!   and committed after WriteCheck's snapshot, whatever DepositChecking's
//!   level: the counterflow rw WriteCheck →rw DepositChecking the old rule
//!   blamed cannot be part of a committed dangerous structure.
//! * **The artefact's modelling** (schedule B): the same, but T2 is
//!   `BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT balance FROM checking
//!   WHERE customerid=1 FOR UPDATE; COMMIT;` → T1's UPDATE succeeds and
//!   commits (row 95). A row only locked `FOR UPDATE` by a transaction
//!   that committed after T1's snapshot does not abort T1: the artefact's
//!   "promoted read = write" assumption (first-updater-wins against the
//!   lock) does not hold on PostgreSQL.
//! * **The artefact's pr_c_3_0 allocation** (schedule C, the schedule
//!   `artefact_wrong_variants_have_a_schedule` finds; savings = checking
//!   = 100): WriteCheck (RR) `BEGIN ISOLATION LEVEL REPEATABLE READ;
//!   SELECT customerid FROM account WHERE name='a';` — TransactSavings
//!   (RC) `UPDATE savings SET balance = balance + 50 …; COMMIT;` —
//!   Balance (RR) reads savings 150 and checking 100 `FOR UPDATE`,
//!   commits — WriteCheck reads savings 100, checking 100, `UPDATE
//!   checking SET balance = balance - 251` (V = 250, penalty), `COMMIT`
//!   succeeds. Final (150, -151) with Balance having seen (150, 100): in
//!   every serial order where Balance sees savings 150 and checking 100,
//!   WriteCheck runs after TransactSavings and sees 250, no penalty.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::{random_workload, Rng, Shape};
use isolint::analysis::allocation::lowest;
use isolint::analysis::explorer::{explore_at, verify, Bounds};
use isolint::analysis::graph::{build, Settings, SummaryGraph};
use isolint::analysis::robustness::{check_witness_under, is_robust_under, witnesses_under};
use isolint::model::btp::{Constraint, ConstraintKind, StmtType, Workload};
use isolint::model::isolation::{Allocation, Level};
use isolint::report::schedule::lines as schedule_lines;
use Level::{ReadCommitted as RC, RepeatableRead as RR, Serializable as SSI};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const FILES: [(&str, &str); 5] = [
    ("Am", "Amalgamate.sql"),
    ("Bal", "Balance.sql"),
    ("DC", "DepositChecking.sql"),
    ("TS", "TransactSavings.sql"),
    ("WC", "WriteCheck.sql"),
];

/// The bundled SmallBank with `FOR UPDATE` on the `SELECT … FROM rel` of
/// each (program abbreviation or `*`, rel) in `promote`.
fn variant(promote: &[(&str, &str)]) -> Workload {
    let d = tempfile::tempdir().expect("tempdir");
    let schema = std::fs::read_to_string(format!("{ROOT}/schemas/smallbank.sql")).expect("schema");
    std::fs::write(d.path().join("schema.sql"), schema).expect("write");
    std::fs::write(d.path().join("isolint.yaml"), "schema: schema.sql\n").expect("write");
    for (ab, f) in FILES {
        let text =
            std::fs::read_to_string(format!("{ROOT}/workloads/smallbank/{f}")).expect("program");
        let mut out = vec![];
        for line in text.lines() {
            let hit = promote.iter().any(|(p, rel)| {
                (*p == "*" || *p == ab)
                    && line.starts_with("SELECT")
                    && line.contains(&format!("FROM {rel} "))
            });
            out.push(if hit {
                format!("{} FOR UPDATE;", line.trim_end_matches(';'))
            } else {
                line.to_string()
            });
        }
        std::fs::write(d.path().join(f), out.join("\n")).expect("write");
    }
    isolint::frontend::load(Path::new(d.path()), None)
        .expect("loads")
        .workload
}

/// The promotions of an artefact variant name.
fn promotions(name: &str) -> Vec<(&'static str, &'static str)> {
    if name == "default" {
        return vec![];
    }
    if name == "prom_accounts" {
        return vec![("*", "Account")];
    }
    let rest = name.strip_prefix("pr_c_").expect("variant name");
    let (b, w) = rest.split_once('_').expect("pr_c_B_W");
    let mut p = vec![];
    for (prog, choice) in [("Bal", b), ("WC", w)] {
        if choice.contains('2') {
            p.push((prog, "Savings"));
        }
        if choice.contains('3') {
            p.push((prog, "Checking"));
        }
    }
    p
}

/// Levels by program name, in FILES order, as an allocation of `w`.
fn allocation(w: &Workload, levels: [Level; 5]) -> Allocation {
    let by_file: BTreeMap<&str, Level> = FILES
        .iter()
        .map(|(_, f)| f.trim_end_matches(".sql"))
        .zip(levels)
        .collect();
    Allocation(
        w.programs
            .iter()
            .map(|p| by_file[p.name.as_str()])
            .collect(),
    )
}

fn lowest_levels(w: &Workload, g: &SummaryGraph) -> [Level; 5] {
    let low = lowest(g).allocation;
    let mut out = [RC; 5];
    for (i, (_, f)) in FILES.iter().enumerate() {
        let p = w
            .programs
            .iter()
            .position(|p| p.name == f.trim_end_matches(".sql"))
            .expect("program");
        out[i] = low.level(p);
    }
    out
}

// The artefact's allocations (Am, Bal, DC, TS, WC), from running it
// (`optimal_alloc`, commit of the repository's default branch fetched on
// 2026-11-27; default, prom_accounts, pr_c_0_2 and pr_c_0_3 printed as
// above, the rest likewise, with `pt_conflict_graph` and its transitive
// closure memoised, which changes no result, only the time).
const ART_0_2: [Level; 5] = [RC, RR, RC, RC, RR];
const ART_2_2: [Level; 5] = [RC, RC, RC, RC, RR];
const ART_3_2: [Level; 5] = [RC, RR, RC, RC, RR];
const ART_23_2: [Level; 5] = [RC, RC, RC, RC, RR];
const ART_3_0: [Level; 5] = [RC, RR, RC, RC, RR];
const ART_3_3: [Level; 5] = [RC, RR, RC, RC, RR];
const ART_23_0: [Level; 5] = [RC, RC, RC, RC, RR];
const ART_23_3: [Level; 5] = [RC, RC, RC, RC, RR];
const ART_2_3: [Level; 5] = [SSI; 5];
const ART_0_3: [Level; 5] = [SSI, SSI, RC, SSI, SSI];
const ART_0_23: [Level; 5] = [RC, RR, RC, RC, RC];
const ART_2_0: [Level; 5] = [SSI; 5];
const ART_2_23: [Level; 5] = [RC; 5];
const ART_3_23: [Level; 5] = [RC, RR, RC, RC, RC];
const ART_23_23: [Level; 5] = [RC; 5];

/// (variant, the artefact's allocation, isolint's lowest allocation).
/// Order: Am, Bal, DC, TS, WC.
#[rustfmt::skip]
const VARIANTS: [(&str, [Level; 5], [Level; 5]); 17] = [
    // The 6 the old rule put higher through a false alarm (WriteCheck as
    // snapshot pivot whose counterflow target writes WriteCheck's own
    // Checking row): with Lemma 3 isolint now meets the artefact.
    ("default",       [SSI, SSI, RC, SSI, SSI], [SSI, SSI, RC, SSI, SSI]),
    ("prom_accounts", [SSI, SSI, RC, SSI, SSI], [SSI, SSI, RC, SSI, SSI]),
    ("pr_c_0_2",      ART_0_2,                   [RC, RR, RC, RC, RR]),
    ("pr_c_2_2",      ART_2_2,                   [RC, RC, RC, RC, RR]),
    ("pr_c_3_2",      ART_3_2,                   [RC, RR, RC, RC, RR]),
    ("pr_c_23_2",     ART_23_2,                  [RC, RC, RC, RC, RR]),
    // The 4 where the artefact is wrong (see `artefact_wrong_*`).
    ("pr_c_3_0",      ART_3_0,                   [SSI, SSI, RC, SSI, SSI]),
    ("pr_c_3_3",      ART_3_3,                   [SSI, SSI, RC, SSI, SSI]),
    ("pr_c_23_0",     ART_23_0,                  [SSI, SSI, RC, SSI, SSI]),
    ("pr_c_23_3",     ART_23_3,                  [SSI, SSI, RC, SSI, SSI]),
    // Lower, rightly: the artefact's counterexample needs a locking read
    // (Balance's Savings read, modelled as a write) to create a version.
    // pr_c_2_0 below is now lower too, for the same reason (DepositChecking
    // READ COMMITTED by Lemma 3; the explorer finds nothing under it).
    ("pr_c_2_3",      ART_2_3,                   [SSI, SSI, RC, SSI, SSI]),
    // Agreeing.
    ("pr_c_0_3",      ART_0_3,                   [SSI, SSI, RC, SSI, SSI]),
    ("pr_c_0_23",     ART_0_23,                  [RC, RR, RC, RC, RC]),
    ("pr_c_2_0",      ART_2_0,                   [SSI, SSI, RC, SSI, SSI]),
    ("pr_c_2_23",     ART_2_23,                  [RC, RC, RC, RC, RC]),
    ("pr_c_3_23",     ART_3_23,                  [RC, RR, RC, RC, RC]),
    ("pr_c_23_23",    ART_23_23,                 [RC, RC, RC, RC, RC]),
];

/// Adds, with chance `pct` per pair, the forward same-tuple links the
/// front-end now infers (a key sel and a later key upd/key del of the
/// same tuple): the random workloads of `tests/common` only draw links
/// whose write comes first, so the explorer cross-check below is the
/// one that exercises Lemma 3.
fn with_forward_links(w: &mut Workload, r: &mut Rng, pct: u64) -> usize {
    let mut added = 0;
    for p in &mut w.programs {
        let n = p.statements.len();
        for c in 0..n {
            for q in c + 1..n {
                let (sc, sq) = (&p.statements[c], &p.statements[q]);
                if sc.rel == sq.rel
                    && sc.ty == StmtType::KeySel
                    && matches!(sq.ty, StmtType::KeyUpd | StmtType::KeyDel)
                    && r.chance(pct)
                {
                    p.constraints.push(Constraint {
                        kind: ConstraintKind::SameTuple,
                        child: c,
                        parent: q,
                    });
                    added += 1;
                }
            }
        }
    }
    added
}

/// Explorer cross-check of Lemma 3: on random small workloads with
/// forward same-tuple links and random allocations over the three levels,
/// every non-serializable schedule the explorer finds (it simulates
/// first-updater-wins at REPEATABLE READ and SERIALIZABLE and honours
/// same-tuple links both ways) comes with "not robust" from the static
/// test. Not vacuous: it counts cases where a `fuw` edge removed the only
/// dangerous pair the old rule saw (robust now, not robust with the
/// refinement off = all-RC-style check on the same graph with `fuw`
/// cleared), and requires some of them.
#[test]
fn explorer_agrees_with_first_updater_wins_refinement() {
    let (mut cases, mut refined, mut confirmed) = (0, 0, 0);
    for seed in 0..400u64 {
        let mut w = random_workload(seed, Shape::small());
        common::as_accepted_input(&mut w);
        let mut r = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        if with_forward_links(&mut w, &mut r, 70) == 0 {
            continue;
        }
        let alloc = Allocation(
            (0..w.programs.len())
                .map(|_| Level::ALL[r.below(3)])
                .collect(),
        );
        let mut g = build(&w, Settings::default());
        if g.fuw.count_ones(..) == 0 {
            continue;
        }
        cases += 1;
        let robust = is_robust_under(&g, None, &alloc);
        for wit in witnesses_under(&g, None, &alloc) {
            assert_eq!(check_witness_under(&g, &wit, &alloc), Ok(()));
        }
        let nodes: Vec<usize> = (0..g.nodes.len()).collect();
        let b = Bounds {
            max_txns: 2 + (seed % 2) as usize,
            tuples_per_relation: 2,
            max_states: 30_000,
            reduce: true,
        };
        let e = explore_at(&w, &g, &nodes, b, &alloc);
        if let Some(s) = &e.found {
            confirmed += 1;
            assert_eq!(verify(s), Ok(()));
            assert!(
                !robust,
                "seed {seed}: robust under {alloc:?}, explorer found:\n{}",
                schedule_lines(&w, s).join("\n")
            );
        }
        if robust {
            g.fuw.clear();
            if !is_robust_under(&g, None, &alloc) {
                refined += 1;
            }
        }
    }
    println!("cases {cases}, refined {refined}, confirmed {confirmed}");
    assert!(
        cases >= 40 && refined > 0 && confirmed > 0,
        "cases {cases}, refined {refined}, confirmed {confirmed}"
    );
}

/// The 4 variants where the artefact is wrong: Balance's Checking read
/// promoted (with or without its Savings read), WriteCheck's reads
/// unpromoted or only its Checking read.
const ARTEFACT_WRONG: [&str; 4] = ["pr_c_3_0", "pr_c_3_3", "pr_c_23_0", "pr_c_23_3"];

/// Per variant: isolint's lowest allocation (the reasons are in the
/// VARIANTS comments); at or below the artefact's for every program where
/// no anomaly of the artefact's allocation is known, and the artefact's
/// allocation not robust in the other 4 (schedule B above: PostgreSQL
/// does not abort a REPEATABLE READ writer of a row another transaction
/// only locked `FOR UPDATE`, so the artefact's "promoted read = write"
/// does not stop the structure).
#[test]
fn smallbank_variants_against_the_artefact() {
    for (name, artefact, expected) in VARIANTS {
        let w = variant(&promotions(name));
        let g = build(&w, Settings::default());
        let got = lowest_levels(&w, &g);
        assert_eq!(got, expected, "{name}: isolint's lowest allocation");
        let art = allocation(&w, artefact);
        if ARTEFACT_WRONG.contains(&name) {
            assert!(
                !is_robust_under(&g, None, &art),
                "{name}: the artefact's allocation must stay not robust"
            );
            assert!(
                got.iter().zip(&artefact).any(|(a, b)| a > b),
                "{name}: above the artefact"
            );
        } else {
            assert!(
                got.iter().zip(&artefact).all(|(a, b)| a <= b),
                "{name}: isolint {got:?} above the artefact {artefact:?}"
            );
            assert!(
                is_robust_under(&g, None, &art),
                "{name}: the artefact's allocation is robust"
            );
        }
    }
}

/// Lemma 3 is what lowers the default variant: with the `fuw` edges
/// ignored (the old rule) WriteCheck's snapshot pair through
/// DepositChecking forces DepositChecking to SERIALIZABLE too.
#[test]
fn smallbank_default_lowered_by_first_updater_wins_only() {
    let w = variant(&[]);
    let mut g = build(&w, Settings::default());
    assert!(g.fuw.count_ones(..) > 0);
    assert_eq!(lowest_levels(&w, &g), [SSI, SSI, RC, SSI, SSI]);
    g.fuw.clear();
    assert_eq!(lowest_levels(&w, &g), [SSI; 5]);
}

/// WriteCheck as text, with its UPDATE replaced by `then`/`otherwise`.
fn write_check(then: &str, otherwise: &str) -> String {
    format!(
        "-- isolint: abbrev WC\n\
         SELECT CustomerID INTO :x FROM Account WHERE Name = :N;\n\
         SELECT Balance INTO :a FROM Savings WHERE CustomerID = :x;\n\
         SELECT Balance INTO :b FROM Checking WHERE CustomerID = :x;\n\
         IF :a + :b < :V THEN\n    {then}\nELSE\n    {otherwise}\nEND IF;\nCOMMIT;\n"
    )
}

fn smallbank_with_write_check(text: &str) -> Workload {
    let d = tempfile::tempdir().expect("tempdir");
    let schema = std::fs::read_to_string(format!("{ROOT}/schemas/smallbank.sql")).expect("schema");
    std::fs::write(d.path().join("schema.sql"), schema).expect("write");
    std::fs::write(d.path().join("isolint.yaml"), "schema: schema.sql\n").expect("write");
    for (_, f) in FILES {
        let t = if f == "WriteCheck.sql" {
            text.to_string()
        } else {
            std::fs::read_to_string(format!("{ROOT}/workloads/smallbank/{f}")).expect("program")
        };
        std::fs::write(d.path().join(f), t).expect("write");
    }
    isolint::frontend::load(Path::new(d.path()), None)
        .expect("loads")
        .workload
}

/// Controls: the refinement needs the later write on the path. When
/// WriteCheck writes its Checking row only on one branch (the other
/// bounces the check without writing), the path without the write keeps
/// the old dangerous structure; likewise when the UPDATE has another
/// conjunct (it may match no row of the snapshot, and then PostgreSQL
/// writes nothing and raises nothing). Both stay at the old allocation
/// (every program SERIALIZABLE), while the bundled text (writes on both
/// branches) gets DepositChecking READ COMMITTED.
#[test]
fn refinement_needs_the_write_on_every_path() {
    let upd = "UPDATE Checking SET Balance = Balance - :V WHERE CustomerID = :x;";
    let both = smallbank_with_write_check(&write_check(upd, upd));
    let g = build(&both, Settings::default());
    assert_eq!(lowest_levels(&both, &g), [SSI, SSI, RC, SSI, SSI]);
    // The ELSE path charges the penalty to Savings instead: it reads the
    // Checking row without writing it, so Balance →rw WriteCheck →rw
    // DepositChecking →wr Balance (Balance sees DepositChecking's Checking
    // but not WriteCheck's Savings; WriteCheck read the Checking row
    // before DepositChecking) is a real anomaly at REPEATABLE READ.
    // (An ELSE that writes nothing would not do: a read-only path has no
    // rw edge into it and is never a snapshot pivot.)
    let penalty = "UPDATE Savings SET Balance = Balance - 1 WHERE CustomerID = :x;";
    let one = smallbank_with_write_check(&write_check(upd, penalty));
    let g = build(&one, Settings::default());
    assert_eq!(lowest_levels(&one, &g), [SSI; 5]);
    let guarded =
        "UPDATE Checking SET Balance = Balance - :V WHERE CustomerID = :x AND Balance >= :V;";
    let cond = smallbank_with_write_check(&write_check(guarded, guarded));
    let g = build(&cond, Settings::default());
    assert_eq!(lowest_levels(&cond, &g), [SSI; 5]);
}

/// The explorer (first-updater-wins at REPEATABLE READ and SERIALIZABLE,
/// SSI's abort rule, same-tuple links both ways) finds no
/// non-serializable schedule of any variant under isolint's lowest
/// allocation (k ≤ 3 transactions, one customer). The control: with the
/// refinement the default variant's DepositChecking runs READ COMMITTED;
/// the same bounds confirm the read-only anomaly once WriteCheck drops
/// to REPEATABLE READ, so the bounds are not too small to see SmallBank's
/// anomaly.
#[test]
fn explorer_finds_nothing_under_the_new_lowest_allocations() {
    let b = Bounds {
        max_txns: 3,
        tuples_per_relation: 1,
        max_states: 200_000,
        reduce: true,
    };
    for (name, _, expected) in VARIANTS {
        let w = variant(&promotions(name));
        let g = build(&w, Settings::default());
        let nodes: Vec<usize> = (0..g.nodes.len()).collect();
        let e = explore_at(&w, &g, &nodes, b, &allocation(&w, expected));
        if let Some(s) = &e.found {
            panic!("{name}: {}", schedule_lines(&w, s).join("\n"));
        }
    }
    let w = variant(&[]);
    let g = build(&w, Settings::default());
    let nodes: Vec<usize> = (0..g.nodes.len()).collect();
    let e = explore_at(&w, &g, &nodes, b, &allocation(&w, [SSI, SSI, RC, SSI, RR]));
    assert!(e.found.is_some(), "control: WriteCheck at REPEATABLE READ");
}

/// The artefact's allocation of the 4 variants where it is wrong has a
/// non-serializable schedule: the explorer finds one (Balance with its
/// Checking read `FOR UPDATE`, WriteCheck at REPEATABLE READ: the lock
/// does not make WriteCheck's later UPDATE of that row fail, schedule B
/// above), where the artefact assumed first-updater-wins against the lock.
#[test]
fn artefact_wrong_variants_have_a_schedule() {
    let b = Bounds {
        max_txns: 3,
        tuples_per_relation: 1,
        max_states: 200_000,
        reduce: true,
    };
    for (name, artefact, _) in VARIANTS {
        if !ARTEFACT_WRONG.contains(&name) {
            continue;
        }
        let w = variant(&promotions(name));
        let g = build(&w, Settings::default());
        let nodes: Vec<usize> = (0..g.nodes.len()).collect();
        let e = explore_at(&w, &g, &nodes, b, &allocation(&w, artefact));
        let s = e.found.unwrap_or_else(|| panic!("{name}: no schedule"));
        assert_eq!(verify(&s), Ok(()));
        println!("{name}:\n{}", schedule_lines(&w, &s).join("\n"));
    }
}
