//! Random BTP workloads for the differential tests (and the benchmarks,
//! which include this file). Deterministic: a seed gives one workload.
#![allow(dead_code)]

use isolint::analysis::graph::{Granularity, Settings};
use isolint::model::btp::{
    validate, Body, Constraint, ConstraintKind, Program, Statement, StmtType, Workload,
};
use isolint::model::schema::{AttrSet, ForeignKey, Relation, Schema};

/// xorshift over a seed.
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub fn chance(&mut self, pct: u64) -> bool {
        self.next() % 100 < pct
    }
}

/// Shape of a random workload.
#[derive(Clone, Copy)]
pub struct Shape {
    pub relations: usize,
    pub programs: usize,
    pub statements: usize,
    /// Percentage of key sel among statement types (the rest uniform).
    pub key_sel_pct: u64,
    /// Percentage of programs with a branch between two identical
    /// statements (a "twin": `unfold` merges the two unfoldings).
    pub twin_pct: u64,
    /// Exactly `programs` programs (else 1 to `programs`).
    pub exact: bool,
}

impl Shape {
    pub fn small() -> Shape {
        Shape {
            relations: 3,
            programs: 4,
            statements: 4,
            key_sel_pct: 30,
            twin_pct: 25,
            exact: false,
        }
    }

    /// `n` programs of 1–4 statements over 12 relations: the "random
    /// programs" of the subset-search benchmarks.
    pub fn programs(n: usize) -> Shape {
        Shape {
            relations: 12,
            programs: n,
            statements: 4,
            key_sel_pct: 30,
            twin_pct: 0,
            exact: true,
        }
    }
}

/// Up to `shape.programs` programs of up to `shape.statements` statements
/// over up to `shape.relations` relations, with FKs, FK and same-tuple
/// constraints, optional statements, loops and branches.
pub fn random_workload(seed: u64, shape: Shape) -> Workload {
    let mut r = Rng(seed | 1);
    let nrel = if shape.exact {
        shape.relations
    } else {
        1 + r.below(shape.relations)
    };
    let schema = random_schema(&mut r, nrel, 40);
    let nprog = if shape.exact {
        shape.programs
    } else {
        1 + r.below(shape.programs)
    };
    let mut programs = vec![];
    for p in 0..nprog {
        let nstmt = 1 + r.below(shape.statements);
        let mut statements = vec![];
        for s in 0..nstmt {
            let ty = if r.chance(shape.key_sel_pct) {
                StmtType::KeySel
            } else {
                StmtType::ALL[r.below(7)]
            };
            statements.push(random_statement(
                &mut r,
                &schema,
                format!("p{p}s{s}"),
                ty,
                None,
            ));
        }
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
        // Twins: two copies of a statement as the two sides of a branch;
        // `unfold` merges the unfoldings that differ only in the choice.
        if r.chance(shape.twin_pct) {
            let t = r.below(nstmt);
            let a = statements.len();
            for k in ["a", "b"] {
                let mut twin = statements[t].clone();
                twin.id = format!("p{p}t{t}{k}");
                statements.push(twin);
            }
            let pos = r.below(items.len() + 1);
            items.insert(pos, Body::Branch(vec![Body::Stmt(a), Body::Stmt(a + 1)]));
        }
        let constraints = random_constraints(&mut r, &schema, &statements, 35);
        programs.push(random_program(p, statements, Body::Seq(items), constraints));
    }
    finish(schema, programs)
}

/// `nrel` relations `R0…` of 2–3 attributes keyed by the first, and a
/// foreign key between each ordered pair with chance `fk_pct`.
pub fn random_schema(r: &mut Rng, nrel: usize, fk_pct: u64) -> Schema {
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
            if d != g && r.chance(fk_pct) {
                fks.push(ForeignKey {
                    name: format!("f{d}_{g}"),
                    domain: d,
                    range: g,
                    columns: vec![],
                });
            }
        }
    }
    Schema {
        relations,
        foreign_keys: fks,
    }
}

/// A statement of type `ty` on a random relation with random sets (the
/// ones Figure 5 allows); a key sel locks with chance `locking_pct`.
pub fn random_statement(
    r: &mut Rng,
    schema: &Schema,
    id: String,
    ty: StmtType,
    locking_pct: Option<u64>,
) -> Statement {
    let rel = r.below(schema.relations.len());
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
        PredDel => (rand_set(r), None, Some(AttrSet::full(arity))),
        KeySel => (None, rand_set(r), None),
        PredSel => (rand_set(r), rand_set(r), None),
        KeyUpd => (None, rand_set(r), rand_set(r)),
        PredUpd => (rand_set(r), rand_set(r), rand_set(r)),
    };
    let locking = match locking_pct {
        Some(pct) => ty == KeySel && r.chance(pct),
        None => false,
    };
    Statement {
        id,
        ty,
        rel,
        pread,
        read,
        write,
        sql: None,
        origin: None,
        locking,
        held: None,
    }
}

/// FK constraints `q = f(c)` where a foreign key joins the relations and
/// q is key-based or an insert, else same-tuple `q = id(c)` where q is an
/// earlier key-based write of c's relation; each pair with chance `pct`.
pub fn random_constraints(
    r: &mut Rng,
    schema: &Schema,
    statements: &[Statement],
    pct: u64,
) -> Vec<Constraint> {
    let n = statements.len();
    let mut constraints = vec![];
    for c in 0..n {
        for q in 0..n {
            let (sc, sq) = (&statements[c], &statements[q]);
            if c == q || !r.chance(pct) {
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
            } else if sc.rel == sq.rel && sq.ty.is_key_write() && sc.ty.is_key_based() && q < c {
                constraints.push(Constraint {
                    kind: ConstraintKind::SameTuple,
                    child: c,
                    parent: q,
                });
            }
        }
    }
    constraints
}

pub fn random_program(
    p: usize,
    statements: Vec<Statement>,
    body: Body,
    constraints: Vec<Constraint>,
) -> Program {
    Program {
        name: format!("P{p}"),
        abbrev: None,
        statements,
        body,
        constraints,
        file: None,
    }
}

/// The workload, checked against Figure 5 and the FK rules.
pub fn finish(schema: Schema, programs: Vec<Program>) -> Workload {
    let w = Workload {
        name: "random".into(),
        description: None,
        schema,
        programs,
    };
    assert_eq!(validate(&w), Ok(()), "generator must produce valid BTPs");
    w
}

/// The eight combinations of granularity, FK and same-tuple.
pub fn settings(bits: u8) -> Settings {
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

/// A bundled YAML workload.
pub fn bundled(name: &str) -> Workload {
    let path = format!("{}/workloads/{name}.yaml", env!("CARGO_MANIFEST_DIR"));
    let file = isolint::frontend::read_source(std::path::Path::new(&path)).expect("readable");
    isolint::frontend::yaml::parse(&file).expect("valid")
}
pub mod app;
pub mod programs;

/// Make a random workload one that isolint's inputs can produce: a `pred
/// upd` writes at least one attribute. The BTP reader refuses a pred upd
/// with an empty WriteSet (a predicate locking read, which PostgreSQL
/// re-checks after a lock wait: src/frontend/yaml.rs), and the SQL
/// front-end lowers `SELECT … FOR UPDATE` as two pred sels, so the static
/// test is never asked about one; the explorer harnesses compare on the
/// workloads it is asked about.
pub fn as_accepted_input(w: &mut Workload) {
    for p in &mut w.programs {
        for s in &mut p.statements {
            if s.ty == StmtType::PredUpd {
                if let Some(write) = s.write.as_mut().filter(|ws| ws.is_empty()) {
                    write.insert(0);
                }
            }
        }
    }
}
