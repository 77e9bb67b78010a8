//! Unfold≤2 (Section 6.1) on hand-checked cases, and the maximal-subset
//! search on a 30-program workload whose answer is small.

use isolint::analysis::graph::{build, Settings};
use isolint::analysis::robustness::Method;
use isolint::analysis::subsets::maximal_robust_subsets;
use isolint::analysis::unfold::{unfold_program, unfold_workload};
use isolint::frontend::yaml;
use isolint::model::btp::{Body, ConstraintKind, Program, Statement, StmtType, Workload};
use isolint::model::schema::{AttrSet, Relation, Schema};

fn load(name: &str) -> Workload {
    let path = format!("{}/workloads/{name}.yaml", env!("CARGO_MANIFEST_DIR"));
    yaml::parse(&isolint::frontend::read_source(std::path::Path::new(&path)).expect("readable"))
        .expect("valid")
}

#[test]
fn tpcc_unfolds_to_13_ltps() {
    let w = load("tpcc-paper");
    let per_program: Vec<usize> = (0..w.programs.len())
        .map(|p| unfold_program(p, &w.programs[p]).len())
        .collect();
    // NewOrder: loop → 0/1/2 copies; Payment: two optionals → 4;
    // OrderStatus: a branch → 2; Delivery: loop → 3 (one empty); StockLevel: 1.
    assert_eq!(per_program, vec![3, 4, 2, 3, 1]);
    assert_eq!(unfold_workload(&w).len(), 13);
}

#[test]
fn loop_copies_are_distinct_and_constraints_link_within_an_iteration() {
    let w = load("tpcc-paper");
    let delivery = w.program("Delivery").expect("Delivery");
    let ltps = unfold_program(delivery, &w.programs[delivery]);
    let sizes: Vec<usize> = ltps.iter().map(|l| l.occurrences.len()).collect();
    assert_eq!(sizes, vec![0, 6, 12], "empty unfolding kept as a node");
    let two = &ltps[2];
    let labels: Vec<String> = (0..12).map(|p| two.occurrence_label(&w, p)).collect();
    assert_eq!(labels[0], "q20@1");
    assert_eq!(labels[6], "q20@2");
    // 4 constraints, each linked once per iteration: 8 links, never across.
    assert_eq!(two.links.len(), 8);
    for l in &two.links {
        assert_eq!(
            two.occurrences[l.child].iteration,
            two.occurrences[l.parent].iteration
        );
    }
    // NewOrder: q8 (in the loop) = fLO child of q4 (outside): both copies link to q4.
    let no = w.program("NewOrder").expect("NewOrder");
    let ltps = unfold_program(no, &w.programs[no]);
    let two = &ltps[2];
    let q4 = w.programs[no].stmt("q4").expect("q4");
    let flo = w.schema.foreign_key("fLO").expect("fLO");
    let to_q4: Vec<_> = two
        .links
        .iter()
        .filter(|l| {
            l.kind == ConstraintKind::ForeignKey(flo) && two.occurrences[l.parent].stmt == q4
        })
        .collect();
    assert_eq!(to_q4.len(), 2);
}

fn stmt(id: &str, ty: StmtType, read: &[usize], write: &[usize]) -> Statement {
    let set = |v: &[usize]| Some(AttrSet::from_indices(2, v.iter().copied()));
    Statement {
        id: id.into(),
        ty,
        rel: 0,
        pread: None,
        read: set(read),
        write: if ty == StmtType::KeySel {
            None
        } else {
            set(write)
        },
        sql: None,
        origin: None,
        locking: false,
        held: None,
    }
}

#[test]
fn identical_unfoldings_merge() {
    // loop((q | ε)) gives [], [q], [q], [q q]…: as sequences, three LTPs.
    let p = Program {
        name: "P".into(),
        abbrev: None,
        statements: vec![stmt("q", StmtType::KeyUpd, &[1], &[1])],
        body: Body::Loop(Box::new(Body::Opt(Box::new(Body::Stmt(0))))),
        constraints: vec![],
        file: None,
    };
    let lens: Vec<usize> = unfold_program(0, &p)
        .iter()
        .map(|l| l.occurrences.len())
        .collect();
    assert_eq!(lens, vec![0, 1, 2]);
    // Two branches with identical statements (WriteCheck's two UPDATEs).
    let p = Program {
        statements: vec![
            stmt("a", StmtType::KeyUpd, &[1], &[1]),
            stmt("b", StmtType::KeyUpd, &[1], &[1]),
        ],
        body: Body::Branch(vec![Body::Stmt(0), Body::Stmt(1)]),
        ..p
    };
    assert_eq!(unfold_program(0, &p).len(), 1);
}

/// 15 readers (read X, then Y) and 15 writers (update X, then Y): readers
/// alone and writers alone are robust, every reader–writer pair has the
/// SmallBank Balance/Amalgamate type-II cycle. Answer: exactly two sets,
/// found without enumerating 2^30 subsets.
#[test]
fn thirty_programs_small_answer() {
    let rel = |name: &str| Relation {
        name: name.into(),
        attributes: vec!["k".into(), "v".into()],
        primary_key: vec![0],
        unique_keys: vec![],
    };
    let schema = Schema {
        relations: vec![rel("X"), rel("Y")],
        foreign_keys: vec![],
    };
    let mk = |name: String, ty: StmtType| {
        let mut a = stmt("q1", ty, &[1], &[1]);
        let mut b = stmt("q2", ty, &[1], &[1]);
        a.rel = 0;
        b.rel = 1;
        Program {
            name,
            abbrev: None,
            statements: vec![a, b],
            body: Body::Seq(vec![Body::Stmt(0), Body::Stmt(1)]),
            constraints: vec![],
            file: None,
        }
    };
    let mut programs = vec![];
    for i in 0..15 {
        programs.push(mk(format!("Reader{i:02}"), StmtType::KeySel));
        programs.push(mk(format!("Writer{i:02}"), StmtType::KeyUpd));
    }
    let w = Workload {
        name: "rw".into(),
        description: None,
        schema,
        programs,
    };
    let g = build(&w, Settings::default());
    let subsets = maximal_robust_subsets(&g, Method::TypeII);
    let readers: Vec<usize> = (0..30).step_by(2).collect();
    let writers: Vec<usize> = (1..30).step_by(2).collect();
    assert!(subsets.complete);
    assert_eq!(subsets.sets, vec![readers, writers]);
}

/// Under type-I, Auction(n) has 2^n maximal robust subsets (FindBids_i or
/// PlaceBid_i for every item i: only the pair of the same item forms a
/// cycle with a counterflow edge). The search must stop, say so, and list
/// only genuine maximal robust sets.
#[test]
fn exponential_answers_are_cut_off_and_flagged() {
    let w = isolint::model::generate::auction(12);
    let g = build(&w, Settings::default());
    let found = isolint::analysis::subsets::maximal_robust_subsets_up_to(&g, Method::TypeI, 50);
    assert!(!found.complete);
    assert_eq!(found.sets.len(), 50);
    for set in found.sets.iter().take(20) {
        assert_eq!(set.len(), 12, "one program per item");
        let items: std::collections::BTreeSet<usize> = set.iter().map(|p| p / 2).collect();
        assert_eq!(items.len(), 12);
    }
    // Small n: all 2^n found and complete.
    let g = build(&isolint::model::generate::auction(4), Settings::default());
    let found = maximal_robust_subsets(&g, Method::TypeI);
    assert!(found.complete);
    assert_eq!(found.sets.len(), 16);
}
