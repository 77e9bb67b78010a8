//! [`Findings`]: the one result every report renders. The verdict, the
//! summary graph, each dangerous cycle resolved to programs, statements
//! and dependency kinds, the maximal robust subsets, the verified read
//! promotion, the isolation level each program needs, and (for the
//! Markdown report) the Figure 6/7 table over the paper's settings.
//!
//! Everything here is computed; `report` only formats it.

use super::allocation::{lowest_pairs, lowest_pairs_in, Cause, LowestPairs};
use super::explorer::Confirmation;
use super::graph::SummaryGraph;
use super::promote::Suggestion;
use super::robustness::{witness_through, Method, Reason, Witness};
use super::rules::Pivots;
use super::subsets::Subsets;
use crate::model::btp::{Origin, StmtType, Workload};
use crate::model::isolation::{Allocation, Deployed, Level};
use crate::model::schema::{meets, AttrSet};
use crate::model::settings::{Granularity, Settings};

pub struct Findings {
    pub settings: Settings,
    pub method: Method,
    pub graph: SummaryGraph,
    pub robust: bool,
    /// One per strongly connected component that has a dangerous cycle.
    pub witnesses: Vec<Witness>,
    /// Each witness's edges in source terms, in the order of `witnesses`.
    pub cycles: Vec<Vec<Step>>,
    /// Maximal robust subsets (sorted program-index lists), when asked
    /// for; `check` computes them when no promotion makes the whole robust.
    pub subsets: Option<Subsets>,
    /// `check` only: `None` when robust or not asked.
    pub suggestion: Option<Suggestion>,
    /// The promoted reads of a verified fix, in source terms.
    pub edits: Vec<Edit>,
    /// The level each program needs as the programs are, and after the
    /// verified edits (when there are some).
    pub isolation: Isolation,
    /// `report` only: Figures 6 and 7 over the paper's four settings.
    pub table: Option<SubsetTable>,
    /// Per witness (same order), whether the bounded explorer found a
    /// concrete non-serializable schedule among its programs; empty when
    /// not asked (`--no-confirm`).
    pub confirmations: Vec<Confirmation>,
    /// Table 2's (edges, counterflow edges) counted on the block form
    /// (`on_blocks`), where `graph` holds only the cycles' edges; `None`
    /// when `graph` is the whole summary graph.
    pub counted: Option<(u64, u64)>,
}

/// What a `check` verdict is against, decided once here so that every
/// output format says the same (SARIF and GitHub said "READ COMMITTED"
/// under `--levels` while the text was right).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Against {
    /// Every program at READ COMMITTED (the paper's question).
    ReadCommitted,
    /// The levels the team deploys (`--levels`, `isolation:`, SET TRANSACTION).
    Deployed,
}

impl Findings {
    /// Number of edges of the summary graph (Table 2).
    pub fn edge_count(&self) -> u64 {
        self.counted
            .map_or(self.graph.edges.len() as u64, |(e, _)| e)
    }

    /// Number of counterflow edges of the summary graph (Table 2).
    pub fn counterflow_count(&self) -> u64 {
        self.counted
            .map_or(self.graph.counterflow_edges() as u64, |(_, c)| c)
    }

    /// What the verdict is against.
    pub fn against(&self) -> Against {
        match &self.isolation.deployed {
            Some(d) if !d.deployed.is_default() => Against::Deployed,
            _ => Against::ReadCommitted,
        }
    }
}

/// The level each program needs: the lowest robust allocation over
/// READ COMMITTED < REPEATABLE READ < SERIALIZABLE (docs/allocation.md;
/// unique, see `allocation`), with the cycle that forces each raised
/// program; the allocation after the verified edits; and, for `check`,
/// the deployed levels and their verdict.
pub struct Isolation {
    pub as_is: Allocation,
    pub with_edits: Option<Allocation>,
    /// Programs above READ COMMITTED in `as_is`, with the cycle.
    pub raised: Vec<Raised>,
    /// `check`: the levels the team runs, where each came from, and
    /// which programs to raise.
    pub deployed: Option<DeployedVerdict>,
    /// Component per node of the graph `raised` comes from (empty when
    /// nothing is raised): [`Isolation::cycle`] builds from it.
    comp: Vec<u32>,
}

/// A raised program in source terms. Its cycle is built on first use
/// ([`Isolation::cycle`]): the text of `allocate` shows the first few
/// (issue 26), JSON every one.
pub struct Raised {
    pub program: usize,
    pub level: Level,
    pub cause: Cause,
    pub reason: Reason,
    /// The adjacent pair (e3, e4) that forces the level, as edge indices
    /// into the summary graph.
    pub pair: (usize, usize),
    cycle: std::cell::OnceCell<Vec<Step>>,
}

impl Raised {
    /// A raised program whose cycle is built (`pair`: the cycle's first
    /// two edges, as indices into the graph the cycle's steps name).
    pub fn with_cycle(
        program: usize,
        level: Level,
        cause: Cause,
        reason: Reason,
        pair: (usize, usize),
        cycle: Vec<Step>,
    ) -> Raised {
        Raised {
            program,
            level,
            cause,
            reason,
            pair,
            cycle: std::cell::OnceCell::from(cycle),
        }
    }
}

/// The deployed allocation's verdict.
pub struct DeployedVerdict {
    pub deployed: Deployed,
    pub robust: bool,
    /// Programs below their lowest robust level: raise each to the level
    /// given and the allocation is robust.
    pub raise: Vec<(usize, Level)>,
}

impl Isolation {
    /// Every program READ COMMITTED: the lowest allocation of a workload
    /// robust against READ COMMITTED.
    pub fn read_committed(programs: usize) -> Isolation {
        Isolation {
            as_is: Allocation::uniform(programs, Level::ReadCommitted),
            with_edits: None,
            raised: vec![],
            deployed: None,
            comp: vec![],
        }
    }

    /// An allocation whose raised programs' cycles are already built (the
    /// block form expands each pair on its hub graph: no component index
    /// of a per-edge graph to build them from later).
    pub fn with_cycles(as_is: Allocation, raised: Vec<Raised>) -> Isolation {
        debug_assert!(raised.iter().all(|r| r.cycle.get().is_some()));
        Isolation {
            as_is,
            with_edits: None,
            raised,
            deployed: None,
            comp: vec![],
        }
    }

    /// The cycle that forces `r` (its first two edges are the pair), in
    /// source terms; `g` is the graph this allocation was computed on.
    pub fn cycle<'r>(&self, w: &Workload, g: &SummaryGraph, r: &'r Raised) -> &'r [Step] {
        r.cycle
            .get_or_init(|| steps(w, g, &witness_through(g, &self.comp, r.pair, r.reason)))
    }

    /// The lowest allocation of `g` with its reasons; `fixed`: a verified
    /// promotion makes the workload robust under READ COMMITTED, so after
    /// the edits every program may run READ COMMITTED.
    pub fn lowest(w: &Workload, g: &SummaryGraph, fixed: bool) -> Isolation {
        Isolation::of_pairs(w, lowest_pairs(g), fixed)
    }

    /// [`Isolation::lowest`] (not fixed) from the components and pivots
    /// the type-II test already computed (`robustness::verdict`).
    pub(crate) fn lowest_in(
        w: &Workload,
        g: &SummaryGraph,
        comp: Vec<u32>,
        pivots: &Pivots,
    ) -> Isolation {
        Isolation::of_pairs(w, lowest_pairs_in(g, comp, pivots), false)
    }

    /// As [`Isolation::lowest`] with `fixed`: a verified promotion makes
    /// the workload robust, so after the edits every program may run READ
    /// COMMITTED (the allocation as is does not change).
    pub(crate) fn mark_fixed(&mut self, programs: usize) {
        self.with_edits = self
            .as_is
            .0
            .iter()
            .any(|&x| x != Level::ReadCommitted)
            .then(|| Allocation::uniform(programs, Level::ReadCommitted));
    }

    /// Component per node of the graph the allocation was computed on
    /// (empty when nothing was computed: every program READ COMMITTED).
    pub(crate) fn components(&self) -> &[u32] {
        &self.comp
    }

    fn of_pairs(w: &Workload, l: LowestPairs, fixed: bool) -> Isolation {
        let raised = l
            .raised
            .iter()
            .map(|r| Raised {
                program: r.program,
                level: r.level,
                cause: r.cause.clone(),
                reason: r.reason,
                pair: r.pair,
                cycle: std::cell::OnceCell::new(),
            })
            .collect();
        let with_edits = (fixed && l.allocation.0.iter().any(|&x| x != Level::ReadCommitted))
            .then(|| Allocation::uniform(w.programs.len(), Level::ReadCommitted));
        Isolation {
            as_is: l.allocation,
            with_edits,
            raised,
            deployed: None,
            comp: l.comp,
        }
    }
}

/// Maximal robust subsets per setting (rows) and method (columns).
pub struct SubsetTable {
    pub methods: Vec<Method>,
    pub rows: Vec<(Settings, Vec<Subsets>)>,
}

/// One read to promote to `FOR UPDATE`, located in the source.
pub struct Edit {
    pub program: String,
    pub statement: String,
    pub file: Option<String>,
    pub line: Option<usize>,
    pub sql: Option<String>,
}

/// One edge of a witness, resolved to programs and statements.
pub struct Step {
    pub from: String,
    pub from_program: String,
    pub from_stmt: String,
    pub from_sql: Option<String>,
    pub from_origin: Option<Origin>,
    pub to: String,
    pub to_program: String,
    pub to_stmt: String,
    pub to_sql: Option<String>,
    pub to_origin: Option<Origin>,
    pub counterflow: bool,
    pub kinds: Vec<&'static str>,
}

/// The edges of `wit` in source terms.
pub fn steps(w: &Workload, g: &SummaryGraph, wit: &Witness) -> Vec<Step> {
    wit.edges
        .iter()
        .map(|e| {
            let (a, b) = (&g.nodes[e.from as usize], &g.nodes[e.to as usize]);
            let (sa, sb) = (
                a.ltp.statement(w, e.from_pos as usize),
                b.ltp.statement(w, e.to_pos as usize),
            );
            let origin = |s: &crate::model::btp::Statement| s.origin.clone();
            Step {
                from: a.name.clone(),
                from_program: w.programs[a.ltp.program].name.clone(),
                from_stmt: a.ltp.occurrence_label(w, e.from_pos as usize),
                from_sql: sa.sql.clone(),
                from_origin: origin(sa),
                to: b.name.clone(),
                to_program: w.programs[b.ltp.program].name.clone(),
                to_stmt: b.ltp.occurrence_label(w, e.to_pos as usize),
                to_sql: sb.sql.clone(),
                to_origin: origin(sb),
                counterflow: e.counterflow,
                kinds: dependency_kinds(w, sa, sb, e.counterflow, g.settings),
            }
        })
        .collect()
}

/// The promoted reads of `set` with their locations.
pub fn edits(w: &Workload, set: &[(usize, usize)]) -> Vec<Edit> {
    set.iter()
        .map(|&(p, q)| {
            let prog = &w.programs[p];
            let st = &prog.statements[q];
            Edit {
                program: prog.name.clone(),
                statement: st.id.clone(),
                file: st
                    .origin
                    .as_ref()
                    .map(|o| o.file.clone())
                    .or_else(|| prog.file.clone()),
                line: st.origin.as_ref().map(|o| o.line),
                sql: st.sql.clone(),
            }
        })
        .collect()
}

/// What kinds of dependency an edge stands for (for people: the edge
/// itself is decided by `rules`), from the statements' sets after the
/// granularity setting.
pub fn dependency_kinds(
    w: &Workload,
    a: &crate::model::btp::Statement,
    b: &crate::model::btp::Statement,
    counterflow: bool,
    s: Settings,
) -> Vec<&'static str> {
    let arity = w.schema.rel(a.rel).arity();
    let widen = |x: &Option<AttrSet>| match s.granularity {
        Granularity::Attribute => x.clone(),
        Granularity::Tuple => x.as_ref().map(|_| AttrSet::full(arity)),
    };
    let (ap, ar, aw) = (widen(&a.pread), widen(&a.read), widen(&a.write));
    let (bp, br, bw) = (widen(&b.pread), widen(&b.read), widen(&b.write));
    let insdel = |t: StmtType| matches!(t, StmtType::Ins | StmtType::KeyDel | StmtType::PredDel);
    let mut kinds = vec![];
    if !counterflow && meets(&aw, &bw) {
        kinds.push("ww");
    }
    if !counterflow && meets(&aw, &br) {
        kinds.push("wr");
    }
    if !counterflow && bp.is_some() && aw.is_some() && (insdel(a.ty) || meets(&aw, &bp)) {
        kinds.push("predicate wr");
    }
    if meets(&ar, &bw) {
        kinds.push("rw");
    }
    if ap.is_some() && bw.is_some() && (insdel(b.ty) || meets(&ap, &bw)) {
        kinds.push("predicate rw");
    }
    if kinds.is_empty() {
        kinds.push("dependency");
    }
    kinds
}
