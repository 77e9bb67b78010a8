//! Unfold≤2 (Section 6.1): every BTP becomes the set of linear programs
//! (LTPs) obtained by taking each loop zero, one or two times and each
//! branch either way.
//!
//! Statement *occurrences* in different loop copies are distinct (they are
//! different operations of the transaction). A constraint `q_j = f(q_i)`
//! links an occurrence of q_i to an occurrence of q_j when both come from
//! the same iteration of every loop that encloses both statements. Two
//! unfoldings that are equal as statement sequences with equal links are
//! one LTP (one node of the summary graph); the empty unfolding is kept.

use std::collections::{HashMap, HashSet};

use crate::btp::{Body, ConstraintKind, Program, Statement, Workload};

/// One statement occurrence in an LTP.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Occurrence {
    /// Index into the program's statements.
    pub stmt: usize,
    /// Iteration number (1 or 2) of each enclosing loop, outermost first.
    pub iteration: Vec<u8>,
}

/// A constraint instantiated between two positions of an LTP:
/// `occurrences[parent] = kind(occurrences[child])`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Link {
    pub kind: ConstraintKind,
    pub child: usize,
    pub parent: usize,
}

/// A linear transaction program: a node of the summary graph.
#[derive(Debug, Clone)]
pub struct Ltp {
    /// Index of the application-level program in the workload.
    pub program: usize,
    /// 1-based number of this unfolding within its program.
    pub unfolding: usize,
    pub occurrences: Vec<Occurrence>,
    pub links: Vec<Link>,
}

impl Ltp {
    /// Node name: the program name, with `#k` when it has several
    /// unfoldings (the paper writes PlaceBid₁, PlaceBid₂).
    pub fn name(&self, w: &Workload, unfoldings_of_program: usize) -> String {
        let p = &w.programs[self.program];
        if unfoldings_of_program > 1 {
            format!("{}#{}", p.name, self.unfolding)
        } else {
            p.name.clone()
        }
    }

    /// Occurrence label: statement id, with `@i.j` for loop copies.
    pub fn occurrence_label(&self, w: &Workload, pos: usize) -> String {
        let o = &self.occurrences[pos];
        let id = &w.programs[self.program].statements[o.stmt].id;
        if o.iteration.is_empty() {
            id.clone()
        } else {
            let it: Vec<String> = o.iteration.iter().map(u8::to_string).collect();
            format!("{id}@{}", it.join("."))
        }
    }

    pub fn statement<'w>(&self, w: &'w Workload, pos: usize) -> &'w Statement {
        &w.programs[self.program].statements[self.occurrences[pos].stmt]
    }
}

/// Unfold≤2 of every program, in program order. Programs whose unfoldings
/// are all identical collapse to a single LTP.
pub fn unfold_workload(w: &Workload) -> Vec<Ltp> {
    let mut out = vec![];
    for (pi, p) in w.programs.iter().enumerate() {
        out.extend(unfold_program(pi, p));
    }
    out
}

pub fn unfold_program(pi: usize, p: &Program) -> Vec<Ltp> {
    let loops = loop_paths(p);
    let seqs = expand(&p.body, &[]);
    // Statements with identical content are interchangeable (e.g. the two
    // `UPDATE Checking` branches of WriteCheck): intern them for dedup.
    let mut content: HashMap<Statement, usize> = HashMap::new();
    let canon: Vec<usize> = p
        .statements
        .iter()
        .map(|s| {
            let key = Statement {
                id: String::new(),
                sql: None,
                origin: None,
                ..s.clone()
            };
            let n = content.len();
            *content.entry(key).or_insert(n)
        })
        .collect();
    let mut seen: HashSet<(Vec<usize>, Vec<Link>)> = HashSet::new();
    let mut ltps = vec![];
    for occ in seqs {
        let links = link(p, &loops, &occ);
        let key = (
            occ.iter().map(|o| canon[o.stmt]).collect::<Vec<_>>(),
            links.clone(),
        );
        if seen.insert(key) {
            ltps.push(Ltp {
                program: pi,
                unfolding: ltps.len() + 1,
                occurrences: occ,
                links,
            });
        }
    }
    ltps
}

/// All unfoldings of `body`; `iteration` tags the occurrences.
fn expand(body: &Body, iteration: &[u8]) -> Vec<Vec<Occurrence>> {
    match body {
        Body::Stmt(i) => vec![vec![Occurrence {
            stmt: *i,
            iteration: iteration.to_vec(),
        }]],
        Body::Seq(parts) => {
            let mut acc: Vec<Vec<Occurrence>> = vec![vec![]];
            for part in parts {
                let tails = expand(part, iteration);
                acc = acc
                    .iter()
                    .flat_map(|head| {
                        tails.iter().map(move |tail| {
                            let mut v = head.clone();
                            v.extend(tail.iter().cloned());
                            v
                        })
                    })
                    .collect();
            }
            acc
        }
        Body::Branch(alts) => alts.iter().flat_map(|a| expand(a, iteration)).collect(),
        Body::Opt(b) => {
            let mut v = expand(b, iteration);
            v.push(vec![]);
            v
        }
        Body::Loop(b) => {
            let copy = |k: u8| {
                let mut it = iteration.to_vec();
                it.push(k);
                expand(b, &it)
            };
            let (one, two) = (copy(1), copy(2));
            let mut v: Vec<Vec<Occurrence>> = vec![vec![]];
            v.extend(one.iter().cloned());
            for a in &one {
                for b in &two {
                    let mut s = a.clone();
                    s.extend(b.iter().cloned());
                    v.push(s);
                }
            }
            v
        }
    }
}

/// How many unfoldings `body` has before merging (saturating), so callers
/// can refuse programs whose Unfold≤2 would not fit in memory.
pub fn count_unfoldings(body: &Body) -> u64 {
    match body {
        Body::Stmt(_) => 1,
        Body::Seq(v) => v
            .iter()
            .fold(1u64, |acc, b| acc.saturating_mul(count_unfoldings(b))),
        Body::Branch(v) => v
            .iter()
            .fold(0u64, |acc, b| acc.saturating_add(count_unfoldings(b))),
        Body::Opt(b) => count_unfoldings(b).saturating_add(1),
        Body::Loop(b) => {
            let k = count_unfoldings(b);
            1u64.saturating_add(k).saturating_add(k.saturating_mul(k))
        }
    }
}

/// The most unfoldings of one program isolint accepts.
pub const MAX_UNFOLDINGS: u64 = 20_000;

/// For each statement, the ids of the loops enclosing it, outermost first.
fn loop_paths(p: &Program) -> Vec<Vec<usize>> {
    fn walk(b: &Body, path: &mut Vec<usize>, next: &mut usize, out: &mut Vec<Vec<usize>>) {
        match b {
            Body::Stmt(i) => out[*i] = path.clone(),
            Body::Seq(v) | Body::Branch(v) => v.iter().for_each(|b| walk(b, path, next, out)),
            Body::Opt(b) => walk(b, path, next, out),
            Body::Loop(b) => {
                path.push(*next);
                *next += 1;
                walk(b, path, next, out);
                path.pop();
            }
        }
    }
    let mut out = vec![vec![]; p.statements.len()];
    walk(&p.body, &mut vec![], &mut 0, &mut out);
    out
}

/// Instantiate the program's constraints on one unfolding.
fn link(p: &Program, loops: &[Vec<usize>], occ: &[Occurrence]) -> Vec<Link> {
    let mut links = vec![];
    for c in &p.constraints {
        let shared = loops[c.child]
            .iter()
            .zip(&loops[c.parent])
            .take_while(|(a, b)| a == b)
            .count();
        for (ci, co) in occ.iter().enumerate().filter(|(_, o)| o.stmt == c.child) {
            for (pj, po) in occ.iter().enumerate().filter(|(_, o)| o.stmt == c.parent) {
                if co.iteration[..shared] == po.iteration[..shared] {
                    links.push(Link {
                        kind: c.kind,
                        child: ci,
                        parent: pj,
                    });
                }
            }
        }
    }
    links.sort();
    links
}
