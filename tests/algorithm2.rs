//! The fast per-SCC type-II test against a literal transcription of
//! Algorithm 2, on random workloads; and every reported witness checked to
//! be a real type-II (or type-I) cycle of the summary graph.

use isolint::analysis::graph::{build, Granularity, Settings, SummaryGraph};
use isolint::analysis::robustness::{check_witness, is_robust, witnesses, Method};
use isolint::model::btp::{
    validate, Body, Constraint, ConstraintKind, Program, Statement, StmtType, Workload,
};
use isolint::model::schema::{AttrSet, ForeignKey, Relation, Schema};
use proptest::prelude::*;

/// Reflexive-transitive reachability between nodes.
fn reachability(g: &SummaryGraph) -> Vec<Vec<bool>> {
    let n = g.nodes.len();
    let mut r = vec![vec![false; n]; n];
    for (i, row) in r.iter_mut().enumerate() {
        row[i] = true;
    }
    for e in &g.edges {
        r[e.from as usize][e.to as usize] = true;
    }
    for k in 0..n {
        let via = r[k].clone();
        for row in r.iter_mut().filter(|row| row[k]) {
            for (cell, &b) in row.iter_mut().zip(&via) {
                *cell |= b;
            }
        }
    }
    r
}

/// Algorithm 2, line by line (over the already constructed SuG).
fn literal_algorithm2(g: &SummaryGraph) -> bool {
    let reach = reachability(g);
    for e1 in g.edges.iter().filter(|e| !e.counterflow) {
        let (p1, p2) = (e1.from as usize, e1.to as usize);
        for e3 in &g.edges {
            let (p3, p4) = (e3.from as usize, e3.to as usize);
            if !reach[p2][p3] {
                continue;
            }
            for e4 in g
                .edges
                .iter()
                .filter(|e| e.counterflow && e.from as usize == p4)
            {
                let p5 = e4.to as usize;
                let q3_type = g.nodes[p3].types[e3.from_pos as usize];
                if reach[p5][p1]
                    && (e3.counterflow
                        || e4.from_pos < e3.to_pos
                        || matches!(
                            q3_type,
                            StmtType::KeySel
                                | StmtType::PredSel
                                | StmtType::PredUpd
                                | StmtType::PredDel
                        ))
                {
                    return false;
                }
            }
        }
    }
    true
}

/// Type-I: no cycle through a counterflow edge.
fn literal_type1(g: &SummaryGraph) -> bool {
    let reach = reachability(g);
    !g.edges
        .iter()
        .any(|e| e.counterflow && reach[e.to as usize][e.from as usize])
}

/// Small deterministic generator: xorshift over a seed.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, pct: u64) -> bool {
        self.next() % 100 < pct
    }
}

fn random_workload(seed: u64) -> Workload {
    let mut r = Rng(seed | 1);
    let nrel = 1 + r.below(3);
    let relations: Vec<Relation> = (0..nrel)
        .map(|i| Relation {
            name: format!("R{i}"),
            attributes: (0..2 + r.below(2)).map(|a| format!("a{a}")).collect(),
            primary_key: vec![0],
            unique_keys: vec![],
        })
        .collect();
    let mut fks = vec![];
    for d in 0..nrel {
        for g in 0..nrel {
            if d != g && r.chance(40) {
                fks.push(ForeignKey {
                    name: format!("f{d}{g}"),
                    domain: d,
                    range: g,
                    columns: vec![],
                });
            }
        }
    }
    let schema = Schema {
        relations,
        foreign_keys: fks,
    };
    let nprog = 1 + r.below(4);
    let mut programs = vec![];
    for p in 0..nprog {
        let nstmt = 1 + r.below(4);
        let mut statements = vec![];
        for s in 0..nstmt {
            let ty = StmtType::ALL[r.below(7)];
            let rel = r.below(nrel);
            let arity = schema.relations[rel].arity();
            let rand_set = |r: &mut Rng| {
                let mut set = AttrSet::empty(arity);
                for a in 0..arity {
                    if r.chance(40) {
                        set.insert(a);
                    }
                }
                Some(set)
            };
            use StmtType::*;
            let (pread, read, write) = match ty {
                Ins | KeyDel => (None, None, Some(AttrSet::full(arity))),
                PredDel => (rand_set(&mut r), None, Some(AttrSet::full(arity))),
                KeySel => (None, rand_set(&mut r), None),
                PredSel => (rand_set(&mut r), rand_set(&mut r), None),
                KeyUpd => (None, rand_set(&mut r), rand_set(&mut r)),
                PredUpd => (rand_set(&mut r), rand_set(&mut r), rand_set(&mut r)),
            };
            statements.push(Statement {
                id: format!("p{p}s{s}"),
                ty,
                rel,
                pread,
                read,
                write,
                sql: None,
                origin: None,
                locking: false,
            });
        }
        // Body: a sequence whose items are occasionally wrapped.
        let mut items = vec![];
        let mut i = 0;
        while i < nstmt {
            let b = Body::Stmt(i);
            let item = match r.below(6) {
                0 => Body::Opt(Box::new(b)),
                1 => Body::Loop(Box::new(b)),
                2 if i + 1 < nstmt => {
                    i += 1;
                    Body::Branch(vec![b, Body::Stmt(i)])
                }
                3 if i + 1 < nstmt => {
                    i += 1;
                    Body::Loop(Box::new(Body::Seq(vec![b, Body::Stmt(i)])))
                }
                _ => b,
            };
            items.push(item);
            i += 1;
        }
        let mut constraints = vec![];
        for c in 0..nstmt {
            for q in 0..nstmt {
                let (sc, sq) = (&statements[c], &statements[q]);
                if c == q || !r.chance(35) {
                    continue;
                }
                if let Some(f) = schema
                    .foreign_keys
                    .iter()
                    .position(|f| f.domain == sc.rel && f.range == sq.rel)
                {
                    if sq.ty.is_key_based() || sq.ty == StmtType::Ins {
                        constraints.push(Constraint {
                            kind: ConstraintKind::ForeignKey(f),
                            child: c,
                            parent: q,
                        });
                    }
                } else if sc.rel == sq.rel && sq.ty.is_key_write() && sc.ty.is_key_based() && q < c
                {
                    constraints.push(Constraint {
                        kind: ConstraintKind::SameTuple,
                        child: c,
                        parent: q,
                    });
                }
            }
        }
        programs.push(Program {
            name: format!("P{p}"),
            abbrev: None,
            statements,
            body: Body::Seq(items),
            constraints,
            file: None,
        });
    }
    let w = Workload {
        name: "random".into(),
        description: None,
        schema,
        programs,
    };
    assert_eq!(validate(&w), Ok(()), "generator must produce valid BTPs");
    w
}

fn settings(bits: u8) -> Settings {
    Settings {
        granularity: if bits & 1 == 0 {
            Granularity::Attribute
        } else {
            Granularity::Tuple
        },
        foreign_keys: bits & 2 == 0,
        same_tuple: bits & 4 == 0,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn fast_type2_agrees_with_literal_algorithm2(seed in any::<u64>(), bits in 0u8..8) {
        let w = random_workload(seed);
        let g = build(&w, settings(bits));
        prop_assert_eq!(is_robust(&g, None, Method::TypeII), literal_algorithm2(&g));
        prop_assert_eq!(is_robust(&g, None, Method::TypeI), literal_type1(&g));
    }

    #[test]
    fn every_witness_is_a_real_cycle(seed in any::<u64>(), bits in 0u8..8) {
        let w = random_workload(seed);
        let g = build(&w, settings(bits));
        for method in [Method::TypeII, Method::TypeI] {
            let ws = witnesses(&g, None, method);
            prop_assert_eq!(ws.is_empty(), is_robust(&g, None, method));
            for wit in &ws {
                prop_assert_eq!(check_witness(&g, wit, method), Ok(()));
            }
        }
    }
}

/// The generator must produce both verdicts, or the property tests above
/// would be vacuous.
#[test]
fn generator_covers_both_verdicts() {
    let (mut robust, mut not) = (0, 0);
    for seed in 1..300u64 {
        let g = build(&random_workload(seed * 7919), Settings::default());
        if literal_algorithm2(&g) {
            robust += 1;
        } else {
            not += 1;
        }
    }
    assert!(robust > 20 && not > 20, "robust {robust}, not robust {not}");
}

/// The bundled non-robust workloads: each witness is a real type-II cycle.
#[test]
fn bundled_witnesses_are_type2_cycles() {
    for name in ["smallbank", "tpcc-paper"] {
        let path = format!("{}/workloads/{name}.yaml", env!("CARGO_MANIFEST_DIR"));
        let file = isolint::frontend::read_source(std::path::Path::new(&path)).expect("readable");
        let w = isolint::frontend::yaml::parse(&file).expect("valid");
        let g = build(&w, Settings::default());
        let ws = witnesses(&g, None, Method::TypeII);
        assert!(!ws.is_empty(), "{name} is not robust");
        for wit in &ws {
            assert_eq!(check_witness(&g, wit, Method::TypeII), Ok(()), "{name}");
        }
    }
}
