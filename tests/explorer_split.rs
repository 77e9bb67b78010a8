//! Issue 23, item 3: the split-schedule pass (src/analysis/explorer/
//! split.rs). Before the full depth-first search of an (instance,
//! valuation), the explorer tries split schedules (Vandevoort et al.,
//! PVLDB 2021; Beillahi et al., CAV 2019: one transaction's prefix, the
//! others serially to commit, its rest). TPC-C's four-transaction anomaly
//! under snapshot isolation is one; the full search alone did not reach
//! it within any test budget.

#[path = "common/workdir.rs"]
mod workdir;
use workdir::{nodes, workload};
#[path = "common/split_fixtures.rs"]
mod split_fixtures;
use split_fixtures::{BANK, DEPOSIT, DOCTORS, LEAVE, REPORT, WITHDRAW};

use isolint::analysis::explorer::{explore_in, explore_set, verify, Bounds, Exploration};
use isolint::analysis::graph::{build, Settings};
use isolint::frontend::Loaded;
use isolint::model::isolation::{Allocation, Level};

/// TPC-C's programs trimmed to the statements of the four-transaction
/// anomaly (the schema is `schemas/tpcc.sql`): Delivery over two districts
/// (MIN, DELETE, carrier, customer credit), NewOrder (counter, order, new
/// order, stock), OrderStatus by customer id (balance, last order).
const T_DELIVERY: &str = "FOR d IN 1..2 LOOP
    SELECT MIN(NO_O_ID) INTO :o FROM NewOrder WHERE NO_W_ID = :w AND NO_D_ID = :d;
    DELETE FROM NewOrder WHERE NO_W_ID = :w AND NO_D_ID = :d AND NO_O_ID = :o;
    UPDATE \"Order\" SET O_CARRIER_ID = :carrier
     WHERE O_W_ID = :w AND O_D_ID = :d AND O_ID = :o
     RETURNING O_C_ID INTO :c;
    UPDATE Customer SET C_BALANCE = C_BALANCE + :total, C_DELIVERY_CNT = C_DELIVERY_CNT + 1
     WHERE C_W_ID = :w AND C_D_ID = :d AND C_ID = :c;
END LOOP;
COMMIT;
";
const T_NEW_ORDER: &str = "UPDATE District SET D_NEXT_O_ID = D_NEXT_O_ID + 1
 WHERE D_W_ID = :w AND D_ID = :d
 RETURNING D_TAX, D_NEXT_O_ID - 1 INTO :d_tax, :o_id;
INSERT INTO \"Order\" (O_ID, O_D_ID, O_W_ID, O_C_ID, O_ENTRY_D, O_CARRIER_ID, O_OL_CNT, O_ALL_LOCAL)
  VALUES (:o_id, :d, :w, :c, :now, NULL, 1, 1);
INSERT INTO NewOrder (NO_O_ID, NO_D_ID, NO_W_ID) VALUES (:o_id, :d, :w);
UPDATE Stock SET S_QUANTITY = S_QUANTITY - :ol_quantity
 WHERE S_I_ID = :ol_i_id AND S_W_ID = :w;
COMMIT;
";
const T_ORDER_STATUS: &str = "SELECT C_BALANCE INTO :c_balance FROM Customer WHERE C_W_ID = :w AND C_D_ID = :d AND C_ID = :c;
SELECT O_ID, O_CARRIER_ID INTO :o_id, :o_carrier_id
  FROM \"Order\" WHERE O_W_ID = :w AND O_D_ID = :d AND O_C_ID = :c
 ORDER BY O_ID DESC LIMIT 1;
COMMIT;
";

fn tpcc_trimmed() -> Loaded {
    let schema = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/tpcc.sql"),
    )
    .expect("schema");
    workload(
        &schema,
        &[
            ("Delivery.sql", T_DELIVERY),
            ("NewOrder.sql", T_NEW_ORDER),
            ("OrderStatus.sql", T_ORDER_STATUS),
        ],
    )
}

/// Issue 24 item 4(a), met since session 7 (see the end of this comment). TPC-C's four-transaction anomaly at
/// REPEATABLE READ (tests/tpcc_si.rs runs it on PostgreSQL 15: D begins,
/// district 1's MIN is NULL; N1 (district 1) and N2 (district 2) commit on
/// one stock row; OS (district 2) sees N2's order and the balance before
/// D's credit; D delivers district 2's order 1) on these trimmed programs.
/// Its three pieces are modelled now: the empty district (a NULL key),
/// the counter order ids, and OrderStatus's `ORDER BY O_ID DESC LIMIT 1`
/// returning N2's new order beside the customer's order 1. Measured
/// (debug, 2026-11-27): with 2 shared tuples per relation no instance
/// holds it (the absent customer of D's empty district takes one of the
/// two shared customers, N1's FK customer needs another); with 3 there
/// are 8,064 (instance, valuation) pairs, of which the meet-graph test
/// (`explorer/guide.rs`: the four can all meet on one cycle) keeps 1,104;
/// searched alone, each of the first 30 of those took 8,520 states to
/// the end (complete, nothing found; 5–13 s each on a loaded machine):
/// about 9.4 million states for all, far beyond a test's budget. At
/// REPEATABLE READ D's two MINs read one snapshot, so the empty district
/// may be either iteration. Still ignored: the search needs an order that
/// reaches the anomaly's valuation among those 1,104 first (or a cheaper
/// search per valuation).
///
/// Session 7 (this file): with the split-schedule pass before the full
/// search and the guide before the valuation cap, still nothing — 1,612
/// meeting valuations, the pass over each (400–2,000 states), then the
/// full search (172 s debug, 1.1 M states at `max_states` 2 M; at 400,000
/// the value pass runs out and the BTP model's schedule, "in the model
/// only", is what remains). With no valuation cap, the 128 valuations of
/// the anomaly's shape get no split schedule either (docs/explorer.md,
/// "The split-schedule pass"). Still ignored.
///
/// Found (session 7, `values::newest`): OrderStatus's `ORDER BY O_ID
/// DESC LIMIT 1` now returns the one allocated order it matches beside
/// initial ones, so NewOrder → OrderStatus is an edge. The split pass
/// finds the 4-cycle with values (D's first MIN delivers, its second
/// district is empty on D's snapshot; the other NewOrder, N2 on the
/// stock, OS on N2's order, D's credit after OS's balance): 948,854
/// states, 102.6 s debug on a loaded machine, hence `max_states` 2 M.
/// Ignored only for its time (over the ~60 s a test may take).
///
/// Un-ignored (h23-k4, session 8): the split pass now tries only orders of
/// the others that can close a cycle through all four (each meets the one
/// before, the last meets T1) and, for a REPEATABLE READ T1, only its
/// first split point (its snapshot is taken there; a later split changes
/// no version it reads). Measured, debug, beside a release build on 2
/// cores: 161,627 states, 23.8 s (was 948,854 states, ~100 s). The budget
/// (1 M, half for values) leaves room on a slower machine.
#[test]
fn tpcc_four_transaction_anomaly_trimmed() {
    let l = tpcc_trimmed();
    let w = &l.workload;
    let g = build(w, Settings::default());
    let find = |n: &str| (0..g.nodes.len()).find(|&v| g.nodes[v].name == n).expect(n);
    let set = [
        find("Delivery#3"),
        find("NewOrder"),
        find("NewOrder"),
        find("OrderStatus"),
    ];
    let alloc = Allocation::uniform(w.programs.len(), Level::RepeatableRead);
    let b = Bounds {
        max_txns: 4,
        tuples_per_relation: 3,
        max_states: 1_000_000,
        ..Bounds::default()
    };
    let t = std::time::Instant::now();
    let e = explore_set(w, &l.provenance, &g, &set, b, &alloc);
    println!("{:?} in {:?}", e.explored, t.elapsed());
    let s = e.found.expect("a schedule");
    for x in isolint::report::schedule::lines(w, &s) {
        println!("  {x}");
    }
    assert!(s.model_only.is_none(), "{:?}", s.model_only);
    assert_eq!(verify(&s), Ok(()));
    assert_eq!(s.cycle.len(), 4);
}

/// The programs `names` searched together at `level` (values first, the
/// BTP model as the fallback); every schedule found passes `verify`.
fn search(l: &Loaded, names: &[&str], level: Level) -> Exploration {
    let w = &l.workload;
    let g = build(w, Settings::default());
    let alloc = Allocation::uniform(w.programs.len(), level);
    let e = explore_in(
        w,
        &l.provenance,
        &g,
        &nodes(&g, names),
        Bounds::default(),
        &alloc,
    );
    assert!(!e.explored.exhausted, "budget ran out: {:?}", e.explored);
    if let Some(s) = &e.found {
        for x in isolint::report::schedule::lines(w, s) {
            println!("  {x}");
        }
        assert_eq!(verify(s), Ok(()));
    }
    e
}

/// Found with values (not "in the model only").
fn with_values(e: &Exploration) -> bool {
    e.found.as_ref().is_some_and(|s| s.model_only.is_none())
}

/// Two transactions: write skew (two doctors each leave after seeing
/// the other on call), the textbook snapshot-isolation anomaly
/// (Berenson et al. 1995, A5B). A split schedule: T1 counts (its
/// prefix), T2 runs to commit, T1 updates. At REPEATABLE READ it is
/// found with values — by the full search: the pass runs for three or
/// more transactions only (a pair's full search is cheap, and its first
/// schedule is the one replay was built to follow; the lead's merge,
/// session 7: the pass's first schedule of a HammerDB-like pair took a
/// path replay could not run). At SERIALIZABLE PostgreSQL's SSI aborts
/// one of the two (T1 →rw T2 →rw T1), so nothing with values.
#[test]
fn write_skew_is_a_split_schedule() {
    let l = workload(DOCTORS, &[("Leave.sql", LEAVE)]);
    let e = search(&l, &["Leave"], Level::RepeatableRead);
    assert!(with_values(&e), "{:?}", e.found.map(|s| s.model_only));
    assert!(
        !e.explored.by_split_pass,
        "pairs: the full search {:?}",
        e.explored
    );
    let s = e.found.expect("a schedule");
    assert_eq!(s.cycle.len(), 2);
    let e = search(&l, &["Leave"], Level::Serializable);
    assert!(!with_values(&e), "{:?}", e.found.map(|s| s.steps));
}

/// Three transactions: Fekete, O'Neil and O'Neil's read-only anomaly
/// (SIGMOD Record 2004). Withdraw reads both balances (its prefix),
/// Deposit commits, Report reads both (sees the deposit, not the
/// withdrawal), Withdraw writes checking: Withdraw →rw Deposit →wr
/// Report →rw Withdraw. A split schedule of three; Report alone beside
/// either other program has no cycle. At REPEATABLE READ the split pass
/// finds it; at SERIALIZABLE (SSI: Report →rw Withdraw →rw Deposit with
/// Deposit committing first) nothing with values.
#[test]
fn read_only_anomaly_is_a_split_schedule_of_three() {
    let l = workload(
        BANK,
        &[
            ("Withdraw.sql", WITHDRAW),
            ("Deposit.sql", DEPOSIT),
            ("Report.sql", REPORT),
        ],
    );
    let e = search(
        &l,
        &["Withdraw", "Deposit", "Report"],
        Level::RepeatableRead,
    );
    assert!(with_values(&e), "{:?}", e.found.map(|s| s.model_only));
    assert!(e.explored.by_split_pass, "{:?}", e.explored);
    let s = e.found.expect("a schedule");
    assert_eq!(s.cycle.len(), 3, "{:?}", s.cycle);
    let e = search(&l, &["Withdraw", "Deposit", "Report"], Level::Serializable);
    assert!(!with_values(&e), "{:?}", e.found.map(|s| s.steps));
}

/// The fallback: PostgreSQL's manual Hit/Purge pair (workloads/website-hits,
/// run on PostgreSQL 15 in tests/explorer_epq.rs) at READ COMMITTED needs
/// Purge's DELETE to wait for Hit's row lock and re-check after Hit's
/// commit (EvalPlanQual): Hit cannot run "alone" inside Purge's statement,
/// so no split schedule exists in this model and the full search finds
/// it, with values.
#[test]
fn evalplanqual_wait_is_found_by_the_full_search() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/website-hits");
    let l = isolint::frontend::load(&dir, None).expect("website-hits");
    let e = search(&l, &["Hit", "Purge"], Level::ReadCommitted);
    assert!(with_values(&e), "{:?}", e.found.map(|s| s.model_only));
    assert!(!e.explored.by_split_pass, "{:?}", e.explored);
    let s = e.found.expect("a schedule");
    assert!(
        s.steps.iter().any(|st| st.resumed),
        "an EvalPlanQual re-check"
    );
}

const QUEUES: &str =
    "CREATE TABLE job (id int PRIMARY KEY, q int NOT NULL, seen int NOT NULL DEFAULT 0);
CREATE TABLE counter (q int PRIMARY KEY, next int NOT NULL);
";
/// The newest job's id is read INTO a value no later statement uses (as
/// TPC-C OrderStatus's `ORDER BY O_ID DESC LIMIT 1`).
const NEWEST_UNUSED: &str = "SELECT q INTO :q FROM job WHERE id = :first;
SELECT next INTO :n FROM counter WHERE q = :q;
SELECT id INTO :j FROM job WHERE q = :q ORDER BY id DESC LIMIT 1;
COMMIT;
";
const ALLOCATE_JOB: &str =
    "UPDATE counter SET next = next + 1 WHERE q = :q RETURNING next - 1 INTO :id;
INSERT INTO job (id, q, seen) VALUES (:id, :q, 0);
COMMIT;
";

/// Issue 23 item 3 (`values::newest`): a descending LIMIT read ordered by
/// a counter key gets the allocated row as its result even when its INTO
/// value is unused. The read matches job `:first` (an initial row of the
/// queue) and the new job; before, with no result row named, both
/// dependencies were soft and nothing was found with values. The
/// schedule is the one run on PostgreSQL 15 for
/// tests/explorer_si.rs::allocated_row_is_first_in_descending_order (the
/// same statements; there `:j` is used): READ COMMITTED, job (1, q 1),
/// counter (1, next 2): Reader reads job 1's queue and next → 2;
/// Allocate takes 2, inserts job 2, COMMIT; Reader's newest → 2. Serially
/// (n, j) is (2, 1) or (3, 2); (2, 2) is neither. Control: ascending, the
/// oldest job is job 1 whatever Allocate does (PostgreSQL: (2, 1) =
/// Reader, Allocate): nothing with values.
#[test]
fn unused_newest_row_read_gets_its_result_row() {
    let l = workload(
        QUEUES,
        &[
            ("Reader.sql", NEWEST_UNUSED),
            ("Allocate.sql", ALLOCATE_JOB),
        ],
    );
    let e = search(&l, &["Reader", "Allocate"], Level::ReadCommitted);
    assert!(with_values(&e), "{:?}", e.found.map(|s| s.model_only));
    let asc = NEWEST_UNUSED.replace("ORDER BY id DESC", "ORDER BY id");
    let l = workload(
        QUEUES,
        &[("Reader.sql", &asc), ("Allocate.sql", ALLOCATE_JOB)],
    );
    let e = search(&l, &["Reader", "Allocate"], Level::ReadCommitted);
    assert!(!with_values(&e), "ascending: the result is job :first");
}
