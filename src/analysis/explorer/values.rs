//! Values (issue 23, item 1): an abstract instance (`instance`) made
//! concrete. The BTP abstraction (Section 5) forgets which rows a
//! statement's WHERE selects; the front-end's provenance
//! (`model::provenance`) keeps what each statement pins, to which
//! parameter, literal or earlier tuple's column. Here each transaction of
//! an instance gets values for its parameters and each tuple values for
//! the columns predicates pin, so that
//!
//! - a key-based statement's tuple has the key values the statement pins
//!   (two transactions on one tuple have equal parameters; distinct tuples
//!   of a relation differ in a key);
//! - a predicate statement `course_id = :c` matches exactly the tuple
//!   versions whose `course_id` equals that transaction's `:c` (`mvrc`
//!   then writes every match, as PostgreSQL does, and adds a predicate
//!   dependency only where a write changes the match, Adya's definition);
//! - an UPDATE that writes a pinned column with an expression the
//!   provenance does not follow (`hits = hits + 1`) gives a value chosen
//!   among the pinned values and a fresh one, never one the row had before
//!   (realisable by `hits + 1` when the values are placed along the row's
//!   sequence: 9, 10, 11).
//!
//! Values are classes of a union-find over variables (parameters per
//! transaction, literals, tuple columns); a valuation also chooses which
//! unconstrained classes of one column are equal (small domains: enough
//! values to make instances collide or not). A predicate whose WHERE reads
//! a column it does not pin to a value (a join, a LIKE, a range other than
//! one whose bounds can bracket every row: `Pinned::covering`) is not
//! instantiated: the instance is searched in the BTP model only.

use std::collections::HashMap;

use super::instance::Instance;
use crate::analysis::graph::SummaryGraph;
use crate::model::btp::{StmtType, Workload};
use crate::model::provenance::{Provenance, Source, Value};

/// The value class of a version written by an untracked expression that
/// equals no pinned value.
pub(super) const FRESH: u16 = u16::MAX;

/// At most this many valuations per abstract instance.
const MAX_VALUATIONS: usize = 256;

use super::valuation::{Valuation, NO_ROW};

/// A step's pin as (attribute, variable).
type PinVar = (usize, usize);

/// (transaction, step, attribute) of a plain SET value (`Pinned::set_values`).
type SetAt = (usize, usize, usize);

/// A variable of the union-find.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Var {
    Lit(String),
    Param(usize, String),
    /// A value the program computes (`Value::Unknown`), per transaction
    /// and loop iteration.
    Computed(usize, usize, Vec<u8>),
    Col(usize, usize),
    /// Column of the tuple a predicate statement read (txn, pos, attr).
    Read(usize, usize, usize),
    Other(usize, String),
    /// SQL NULL: a value read from no row (`nulls`).
    Null,
    /// A number allocated from a counter (`Source::Counter`), per
    /// transaction and loop iteration: new, above every initial row's.
    Fresh(usize, usize, Vec<u8>),
}

/// The variables, shared by the union-finds a valuation's enumeration
/// clones (only `parent` differs between them).
#[derive(Clone, Default)]
struct Names {
    ids: HashMap<Var, usize>,
    vars: Vec<Var>,
}

#[derive(Clone, Default)]
struct Classes {
    names: std::rc::Rc<Names>,
    parent: Vec<usize>,
}

impl Classes {
    fn id(&mut self, v: Var) -> usize {
        if let Some(&i) = self.names.ids.get(&v) {
            return i;
        }
        let names = std::rc::Rc::make_mut(&mut self.names);
        let i = names.vars.len();
        names.ids.insert(v.clone(), i);
        names.vars.push(v);
        self.parent.push(i);
        i
    }
    fn find(&self, mut i: usize) -> usize {
        while self.parent[i] != i {
            i = self.parent[i];
        }
        i
    }
    fn union(&mut self, a: usize, b: usize) {
        let (a, b) = (self.find(a), self.find(b));
        if a != b {
            self.parent[a.max(b)] = a.min(b);
        }
    }
    fn root_of(&self, v: &Var) -> Option<usize> {
        self.names.ids.get(v).map(|&i| self.find(i))
    }
    /// No class holds two literals, nor two iterations' values of one
    /// computed value (a loop variable takes a new value per iteration).
    fn consistent(&self) -> bool {
        let mut lit: HashMap<usize, &Var> = HashMap::new();
        for (i, v) in self.names.vars.iter().enumerate() {
            let r = self.find(i);
            if let Var::Lit(_) | Var::Computed(..) | Var::Fresh(..) = v {
                if let Some(prev) = lit.insert(r, v) {
                    let clash = match (prev, v) {
                        (Var::Lit(a), Var::Lit(b)) => a != b,
                        (Var::Computed(t, n, a), Var::Computed(u, m, b))
                        | (Var::Fresh(t, n, a), Var::Fresh(u, m, b)) => t == u && n == m && a != b,
                        _ => false,
                    };
                    if clash {
                        return false;
                    }
                    // Keep a literal as the class's witness.
                    if let Var::Lit(_) = prev {
                        lit.insert(r, prev);
                    }
                }
            }
        }
        true
    }
}

/// A value read from a row: `var` is column `attr` of the one row that
/// predicate step `pos` of transaction `txn` (on `rel`) reads.
#[derive(Debug, Clone, Copy)]
struct ReadVal {
    var: usize,
    txn: usize,
    pos: usize,
    rel: usize,
    attr: usize,
    /// A read of no row gives NULL and the program goes on untested
    /// (`Source::Read::nullable`).
    nullable: bool,
}

/// The pins of an instance as union-find variables.
struct Pinned<'a> {
    w: &'a Workload,
    g: &'a SummaryGraph,
    prov: &'a Provenance,
    inst: &'a Instance,
    cl: Classes,
    /// Per txn, per step: a predicate step's pins as (attr, variable).
    pins: Vec<Vec<Vec<(usize, usize)>>>,
    /// Per txn, per step: a key-based step's pins as (attr, variable).
    keyed: Vec<Vec<Vec<(usize, usize)>>>,
    /// Predicate steps over the rows of a loop that did not run.
    empty: Vec<(usize, usize)>,
    reads: Vec<ReadVal>,
    /// Values the explorer does not follow: (variable, transaction, why).
    loose: Vec<(usize, usize, String)>,
    /// (tuple, column) a key-based statement on the tuple pins: for an
    /// absent tuple these are the statement's own values, not the row's.
    key_cols: Vec<(usize, usize)>,
    /// Parameters that bound a range taken to match every row
    /// (`covering`): (transaction, name).
    bounds: Vec<(usize, String)>,
    /// The same, kept after `collect` (`set_values`).
    bounds_all: Vec<(usize, String)>,
    /// `Valuation::conds`.
    conds: Vec<(usize, usize, bool)>,
}

/// (transaction, predicate step, tuple) triples of `Valuation::only`.
type Only = Vec<(usize, usize, usize)>;

/// The valuations of `inst` (empty: no values make it; the abstract
/// instance is not one PostgreSQL can run), or why a predicate of it is
/// not instantiated. Only those `keep` accepts are kept, and the cap
/// (`MAX_VALUATIONS`) counts only kept ones (issue 23, item 3: with the
/// `guide` test as `keep`, TPC-C's four-transaction valuation was among
/// those the cap cut before the guide dropped most of the others).
/// `made` counts the candidate valuations made: making them is work
/// outside any search (issue 23, item 3: on TPC-C's sets with the
/// two-iteration Delivery, most of the time), so the search with values
/// counts each as a state.
pub(super) fn valuations_where(
    w: &Workload,
    g: &SummaryGraph,
    prov: &Provenance,
    inst: &Instance,
    keep: &dyn Fn(&Valuation) -> bool,
    made: &mut u64,
) -> Result<Vec<Valuation>, String> {
    let mut p = Pinned {
        w,
        g,
        prov,
        inst,
        cl: Classes::default(),
        pins: vec![],
        keyed: vec![],
        empty: vec![],
        reads: vec![],
        loose: vec![],
        key_cols: vec![],
        bounds: vec![],
        bounds_all: vec![],
        conds: vec![],
    };
    p.collect()?;
    // The slots: columns some predicate pins, per relation.
    let mut cols: Vec<Vec<usize>> = vec![vec![]; w.schema.relations.len()];
    for (a, t) in inst.txns.iter().enumerate() {
        for (pos, s) in t.steps.iter().enumerate() {
            for &(c, _) in &p.pins[a][pos] {
                if !cols[s.rel].contains(&c) {
                    cols[s.rel].push(c);
                }
            }
        }
    }
    cols.iter_mut().for_each(|c| c.sort_unstable());
    for (t, spec) in inst.tuples.iter().enumerate() {
        for &c in &cols[spec.rel] {
            p.cl.id(Var::Col(t, c));
        }
    }
    p.check_loose(&cols)?;
    let truths = super::unevaluated::check(w, g, prov, inst, &cols)?;
    if !p.cl.consistent() || !distinct(w, inst, &p.cl) {
        return Ok(vec![]);
    }
    // A value read from a row is that row's column: one choice per row
    // (the columns' variables made first, so the enumeration shares them).
    for r in &p.reads {
        for t in (0..inst.tuples.len()).filter(|&t| inst.tuples[t].rel == r.rel) {
            p.cl.id(Var::Col(t, r.attr));
        }
    }
    p.cl.id(Var::Null);
    let sets = p.set_values();
    let mut chosen = vec![];
    choose_reads(w, inst, &p.reads, 0, p.cl.clone(), &mut vec![], &mut chosen);
    let mut out = vec![];
    let mut merged = vec![];
    for (cl, only) in chosen {
        let Some(cl) = nulls(w, inst, cl, &p.key_cols) else {
            continue;
        };
        let groups = groups(inst, &cl, &cols, &p.pins);
        merged.clear();
        merge(w, inst, &groups, 0, cl, &mut merged);
        *made += merged.len() as u64;
        for cl in merged.drain(..) {
            let mut base = finish(inst, &cl, &cols, &p.pins);
            base.only = only.clone();
            base.conds = p.conds.clone();
            key_classes(inst, &cl, &cols, &p.keyed, &mut base);
            base.empty = p.empty.clone();
            absent_rows(w, inst, &cl, &mut base);
            let number = number_classes(&cl).0;
            let fixed: Vec<(SetAt, u16)> = (sets.iter())
                .map(|&(site, v)| (site, v.map_or(FRESH, |v| number[&cl.find(v)])))
                .collect();
            ordered(g, prov, inst, &cl, &mut base);
            newest(g, prov, inst, &cl, &mut base);
            for base in truths.apply(inst, &base) {
                with_writes(w, g, inst, &base, &fixed, keep, &mut out);
            }
            if out.len() >= MAX_VALUATIONS {
                out.truncate(MAX_VALUATIONS);
                return Ok(out);
            }
        }
    }
    Ok(out)
}

impl Pinned<'_> {
    /// Every step's pins: a key-based step's tuple has the values it
    /// pins; a predicate step must pin every column its WHERE reads.
    fn collect(&mut self) -> Result<(), String> {
        let (w, g, inst) = (self.w, self.g, self.inst);
        for (a, t) in inst.txns.iter().enumerate() {
            let ltp = &g.nodes[t.node].ltp;
            let (mut per, mut keyed) = (vec![], vec![]);
            for (pos, s) in t.steps.iter().enumerate() {
                let stmt = ltp.statement(w, pos);
                let mut got: Vec<(usize, usize)> = vec![];
                let stmt_ix = ltp.occurrences[pos].stmt;
                for (c, v) in self.prov.pins(ltp.program, stmt_ix) {
                    let v = self.branch_value(a, stmt_ix, *c, v);
                    got.push((*c, self.eval(a, pos, &v)?));
                }
                let predicate = s.tuple.is_none();
                if predicate && self.prov.inexact(ltp.program, stmt_ix) {
                    return Err(format!(
                        "predicate not instantiated: the WHERE of {} of {} has conditions beyond its equalities to values",
                        ltp.occurrence_label(w, pos),
                        w.programs[ltp.program].name
                    ));
                }
                if predicate {
                    let pread: Vec<usize> =
                        stmt.pread.as_ref().map_or(vec![], |p| p.iter().collect());
                    let loose: Vec<usize> = (pread.iter().copied())
                        .filter(|&c| !got.iter().any(|&(p, _)| p == c))
                        .collect();
                    if let Some(&c) = loose.iter().find(|&&c| !self.covering(a, pos, c)) {
                        return Err(format!(
                            "predicate not instantiated: {} of {} reads {}.{} other than by an equality to a value",
                            ltp.occurrence_label(w, pos),
                            w.programs[ltp.program].name,
                            w.schema.rel(s.rel).name,
                            w.schema.rel(s.rel).attributes[c]
                        ));
                    }
                }
                let (got, cond) = self.conditions(a, pos, got);
                if let Some(tu) = s.tuple {
                    for &(c, v) in &got {
                        let col = self.cl.id(Var::Col(tu, c));
                        self.cl.union(col, v);
                        self.key_cols.push((tu, c));
                    }
                }
                keyed.push(if predicate { vec![] } else { got.clone() });
                per.push(if predicate { got } else { cond });
            }
            self.pins.push(per);
            self.keyed.push(keyed);
        }
        // A range's bounds bracket every row only if nothing else fixes
        // them: a bound pinned anywhere in its transaction has a value.
        self.bounds_all = self.bounds.clone();
        for (a, name) in std::mem::take(&mut self.bounds) {
            if self.cl.names.ids.contains_key(&Var::Param(a, name.clone())) {
                let program = self.g.nodes[inst.txns[a].node].ltp.program;
                return Err(format!(
                    "predicate not instantiated: :{name} of {} bounds a range and is also pinned to a value",
                    w.programs[program].name
                ));
            }
        }
        // The foreign-key map: a child's columns are its parent's key.
        for (&(f, child), &parent) in &inst.fk {
            for &(dc, rc) in &w.schema.foreign_keys[f].columns {
                let x = self.cl.id(Var::Col(child, dc));
                let y = self.cl.id(Var::Col(parent, rc));
                self.cl.union(x, y);
            }
        }
        Ok(())
    }

    /// A keyed write's extra conjuncts (`flag = 1`) hold of the version it
    /// acts on, not of the row: they are split from step `pos`'s pins
    /// `got` (returned first) as slot pins checked per version
    /// (`StepSpec::cond`, `Valuation::conds`), for a no-match branch only
    /// when its conditions are all such pins. Where no transaction of the
    /// instance writes the column, the write's row has the value in every
    /// version: it is tied to the row as before (fewer valuations to
    /// enumerate; `conditions_possible` drops the rest).
    fn conditions(
        &mut self,
        a: usize,
        pos: usize,
        got: Vec<(usize, usize)>,
    ) -> (Vec<PinVar>, Vec<PinVar>) {
        let (w, inst) = (self.w, self.inst);
        let ltp = &self.g.nodes[inst.txns[a].node].ltp;
        let stmt = ltp.occurrences[pos].stmt;
        let s = &inst.txns[a].steps[pos];
        let Some((extra, _)) = self.prov.condition(ltp.program, stmt) else {
            return (got, vec![]);
        };
        let (got, cond): (Vec<_>, Vec<_>) = got.into_iter().partition(|(c, _)| !extra.contains(c));
        let (Some(t), Some(miss)) = (s.tuple, condition(self.prov, ltp.program, stmt)) else {
            return (got, vec![]);
        };
        self.conds.push((a, pos, miss));
        let written = |c: usize| {
            inst.txns.iter().any(|x| {
                let l = &self.g.nodes[x.node].ltp;
                x.steps.iter().enumerate().any(|(p, u)| {
                    u.rel == s.rel
                        && matches!(u.ty, StmtType::KeyUpd | StmtType::PredUpd)
                        && l.statement(w, p)
                            .write
                            .as_ref()
                            .is_none_or(|ws| ws.contains(c))
                })
            })
        };
        if miss {
            // A predicate read of the row: its key pins too (`mvrc::no_match`).
            let all = got.iter().chain(&cond).copied().collect();
            return (got, all);
        }
        for &(c, v) in cond.iter().filter(|&&(c, _)| !written(c)) {
            let col = self.cl.id(Var::Col(t, c));
            self.cl.union(col, v);
        }
        // Its evaluation is a predicate read of its row too (key pins).
        let all = got.iter().chain(&cond).copied().collect();
        (got, all)
    }

    /// The written value of each plain SET (`Provenance::sets`) of a slot
    /// column, per (transaction, step, attribute): the variable of its
    /// literal, NULL or parameter, or `None` for a value that equals no
    /// pinned one (a literal nothing pins, a range bound at the type's
    /// extreme). A parameter nothing pins is left out: it can be chosen to
    /// equal any value, as the enumeration does.
    fn set_values(&self) -> Vec<(SetAt, Option<usize>)> {
        let mut out = vec![];
        for (a, t) in self.inst.txns.iter().enumerate() {
            let ltp = &self.g.nodes[t.node].ltp;
            for (pos, s) in t.steps.iter().enumerate() {
                if !matches!(s.ty, StmtType::KeyUpd | StmtType::PredUpd) {
                    continue;
                }
                let stmt = ltp.occurrences[pos].stmt;
                for (st, attr, v) in self.prov.sets.get(ltp.program).into_iter().flatten() {
                    if *st != stmt {
                        continue;
                    }
                    let var = match v {
                        Value::Literal(l) if l.trim().eq_ignore_ascii_case("null") => Var::Null,
                        Value::Literal(l) => Var::Lit(literal(l)),
                        Value::Param(p) => Var::Param(a, p.clone()),
                        _ => continue,
                    };
                    let bound =
                        matches!(v, Value::Param(p) if self.bounds_all.contains(&(a, p.clone())));
                    match self.cl.names.ids.get(&var) {
                        Some(&id) => out.push(((a, pos, *attr), Some(id))),
                        None if bound || !matches!(var, Var::Param(..)) => {
                            out.push(((a, pos, *attr), None))
                        }
                        None => {}
                    }
                }
            }
        }
        out
    }

    /// Does predicate step `pos` of transaction `a` test column `c` only
    /// by ranges whose bounds can bracket every row (issue 23)? Each bound
    /// must be a parameter that bounds ranges on one side only
    /// (`Provenance::range_side`) and that nothing pins (checked in
    /// `collect` when all pins are known: `bounds`), and no transaction of
    /// the instance may write the column (an insert or an update could
    /// give a row NULL or a value at the bound; the rows of the initial
    /// database take values inside). Then `:a` below and `:b` above every
    /// value make `c BETWEEN :a AND :b` (or `c < :b`, `c >= :a`) true of
    /// every row, and the predicate matches as its equalities say. The
    /// other choices (bounds that exclude some rows) are not searched:
    /// fewer schedules, never a false one. The replay picks such bounds
    /// (the type's extremes, `replay::witness`).
    fn covering(&mut self, a: usize, pos: usize, c: usize) -> bool {
        let (w, inst) = (self.w, self.inst);
        let ltp = &self.g.nodes[inst.txns[a].node].ltp;
        let (program, stmt) = (ltp.program, ltp.occurrences[pos].stmt);
        let rel = inst.txns[a].steps[pos].rel;
        let mut names = vec![];
        for (_, attr, v, upper) in self.prov.ranges(program, stmt) {
            if *attr != c {
                continue;
            }
            match v {
                Value::Param(p) if self.prov.range_side(program, p) == Some(*upper) => {
                    names.push(p.clone())
                }
                _ => return false,
            }
        }
        let written = inst.txns.iter().any(|t| {
            let l = &self.g.nodes[t.node].ltp;
            t.steps.iter().enumerate().any(|(p, s)| {
                s.rel == rel
                    && (s.ty == StmtType::Ins
                        || (matches!(s.ty, StmtType::KeyUpd | StmtType::PredUpd)
                            && l.statement(w, p)
                                .write
                                .as_ref()
                                .is_none_or(|ws| ws.contains(c))))
            })
        });
        if names.is_empty() || written {
            return false;
        }
        self.bounds.extend(names.into_iter().map(|n| (a, n)));
        true
    }

    /// An IF's result (`Unknown(usize::MAX)`): the value of the branch
    /// this transaction's unfolding ran (`Provenance::alternatives`); the
    /// pin unchanged when that is not known.
    fn branch_value(&self, a: usize, stmt: usize, attr: usize, v: &Value) -> Value {
        if *v != Value::Unknown(usize::MAX) {
            return v.clone();
        }
        let ltp = &self.g.nodes[self.inst.txns[a].node].ltp;
        let ran = |s: &usize| ltp.occurrences.iter().any(|o| o.stmt == *s);
        let options = self.prov.alternatives(ltp.program, stmt, attr);
        let taken: Vec<&Value> = options
            .iter()
            .filter(|(marks, _)| marks.iter().any(ran))
            .map(|(_, x)| x)
            .collect();
        let quiet: Vec<&Value> = options
            .iter()
            .filter(|(marks, _)| marks.is_empty())
            .map(|(_, x)| x)
            .collect();
        match (taken.as_slice(), quiet.as_slice()) {
            ([x], _) | ([], [x]) => (*x).clone(),
            _ => v.clone(),
        }
    }

    /// The variable a pinned value denotes in transaction `a` at step
    /// `pos`. A value the program computes is instantiated when its
    /// source is known (a range loop's variable, a column of the one row
    /// a predicate read) or when the step cannot meet another
    /// transaction; otherwise the instance is not instantiated.
    /// Records a value the explorer does not follow (its variable is set
    /// by `eval` right after).
    fn unfollowed(&mut self, a: usize, why: String) {
        self.loose.push((usize::MAX, a, why));
    }

    /// A value the explorer does not follow is harmless only where no
    /// other transaction can see it: its class holds nothing but columns
    /// no predicate pins, of tuples no other transaction touches (a key
    /// the program computes for a row of its own). Otherwise the instance
    /// is not instantiated, with the reason.
    fn check_loose(&self, cols: &[Vec<usize>]) -> Result<(), String> {
        let inst = self.inst;
        for (id, a, why) in &self.loose {
            let root = self.cl.find(*id);
            for (i, v) in self.cl.names.vars.iter().enumerate() {
                if i == *id || self.cl.find(i) != root {
                    continue;
                }
                let fine = match v {
                    Var::Col(t, c) => {
                        !cols[inst.tuples[*t].rel].contains(c)
                            && inst.txns.iter().enumerate().all(|(b, x)| {
                                b == *a || x.steps.iter().all(|s| s.tuple != Some(*t))
                            })
                    }
                    _ => false,
                };
                if !fine {
                    return Err(why.clone());
                }
            }
        }
        Ok(())
    }

    fn eval(&mut self, a: usize, pos: usize, v: &Value) -> Result<usize, String> {
        if let Some(var) = self.loop_value(a, pos, v)? {
            if let Var::Other(..) = var {
                self.empty.push((a, pos));
            }
            return Ok(self.cl.id(var));
        }
        let (w, inst) = (self.w, self.inst);
        let ltp = &self.g.nodes[inst.txns[a].node].ltp;
        let iteration = ltp.occurrences[pos].iteration.clone();
        // The occurrence of statement `stmt` last before `pos`, when it is
        // a predicate step (a value read from its row).
        let before = |stmt: usize| (0..pos).rev().find(|&p| ltp.occurrences[p].stmt == stmt);
        let read = |p: Option<usize>| p.filter(|&p| inst.txns[a].steps[p].tuple.is_none());
        let unknown = |why: &str| {
            format!(
                "predicate not instantiated: {} of {} pins a value {why}",
                ltp.occurrence_label(w, pos),
                w.programs[ltp.program].name
            )
        };
        let (var, from) = match v {
            Value::Param(p) => (Var::Param(a, p.clone()), None),
            // `= NULL` holds of no row (a join on a CTE that returned no
            // row, `cte_rows.rs`): NULL, which matches nothing.
            Value::Literal(l) if l.trim().eq_ignore_ascii_case("null") => (Var::Null, None),
            Value::Literal(l) => (Var::Lit(literal(l)), None),
            Value::Column { stmt, attr } => match before(*stmt) {
                Some(p) => match inst.txns[a].steps[p].tuple {
                    Some(t) => (Var::Col(t, *attr), None),
                    None => (Var::Read(a, p, *attr), Some((p, *attr, false))),
                },
                None => {
                    self.unfollowed(a, unknown("of a statement that did not run"));
                    (Var::Other(a, format!("{v:?}@{pos}")), None)
                }
            },
            Value::Unknown(n) => match self.prov.source(ltp.program, *n) {
                Some(Source::RangeLoop) => (Var::Computed(a, *n, iteration), None),
                // The allocation's own iteration: one number for every use.
                Some(Source::Counter { stmt, .. }) => match before(stmt) {
                    Some(p) => (
                        Var::Fresh(a, *n, ltp.occurrences[p].iteration.clone()),
                        None,
                    ),
                    None => {
                        self.unfollowed(a, unknown("allocated by a statement that did not run"));
                        (Var::Fresh(a, *n, iteration), None)
                    }
                },
                Some(Source::Read {
                    stmt,
                    attr,
                    nullable,
                }) => match read(before(stmt)) {
                    Some(p) => (Var::Computed(a, *n, iteration), Some((p, attr, nullable))),
                    None => {
                        self.unfollowed(a, unknown("read by a statement that did not run"));
                        (Var::Computed(a, *n, iteration), None)
                    }
                },
                None => {
                    self.unfollowed(a, unknown("the program computes (an expression, an aggregate, a branch's result), which the explorer does not follow"));
                    (Var::Computed(a, *n, iteration), None)
                }
            },
            Value::Element { .. } => {
                self.unfollowed(
                    a,
                    unknown("of an array element, which the explorer does not follow"),
                );
                (Var::Other(a, format!("{v:?}")), None)
            }
        };
        let id = self.cl.id(var);
        if let Some(u) = self.loose.last_mut().filter(|u| u.0 == usize::MAX) {
            u.0 = id;
        }
        if let Some((p, attr, nullable)) = from {
            if !self.reads.iter().any(|r| r.var == id) {
                let rel = inst.txns[a].steps[p].rel;
                let r = ReadVal {
                    var: id,
                    txn: a,
                    pos: p,
                    rel,
                    attr,
                    nullable,
                };
                self.reads.push(r);
            }
        }
        Ok(id)
    }
}

/// For each value read from a row, the row (a tuple of the reading
/// statement's relation): its class joins that row's column, and the
/// valuation requires the statement to read exactly that row (`only`).
fn choose_reads(
    w: &Workload,
    inst: &Instance,
    reads: &[ReadVal],
    i: usize,
    cl: Classes,
    only: &mut Only,
    out: &mut Vec<(Classes, Only)>,
) {
    if out.len() >= MAX_VALUATIONS {
        return;
    }
    let Some(r) = reads.get(i) else {
        out.push((cl, only.clone()));
        return;
    };
    // Or no row: the value is NULL (MIN of nothing, INTO of no row).
    let rows = (0..inst.tuples.len()).filter(|&t| inst.tuples[t].rel == r.rel);
    let none = r.nullable.then_some(NO_ROW);
    for t in rows.chain(none) {
        // Two values read by one step come from its one row.
        if only
            .iter()
            .any(|&(a, p, u)| a == r.txn && p == r.pos && u != t)
        {
            continue;
        }
        let mut c = cl.clone();
        let col = c.id(match t {
            NO_ROW => Var::Null,
            t => Var::Col(t, r.attr),
        });
        c.union(col, r.var);
        if c.consistent() && distinct(w, inst, &c) {
            only.push((r.txn, r.pos, t));
            choose_reads(w, inst, reads, i + 1, c, only, out);
            only.pop();
        }
    }
}

/// A group of classes a valuation may merge: the predicates' pinned
/// classes and the tuples' classes of one column.
type Group = (Vec<usize>, Vec<usize>);

/// The groups whose classes a valuation may merge: per (relation, column
/// slot), the predicates' pinned classes and the tuples' classes.
fn groups(
    inst: &Instance,
    cl: &Classes,
    cols: &[Vec<usize>],
    pins: &[Vec<Vec<(usize, usize)>>],
) -> Vec<Group> {
    let mut groups: Vec<Group> = vec![];
    for (rel, cs) in cols.iter().enumerate() {
        for &c in cs {
            let rows: Vec<usize> = inst
                .tuples
                .iter()
                .enumerate()
                .filter(|(_, s)| s.rel == rel)
                .filter_map(|(t, _)| cl.root_of(&Var::Col(t, c)))
                .collect();
            let mut g = vec![];
            for (a, t) in inst.txns.iter().enumerate() {
                for (pos, s) in t.steps.iter().enumerate() {
                    if s.rel == rel {
                        g.extend(
                            pins[a][pos]
                                .iter()
                                .filter(|(p, _)| *p == c)
                                .map(|&(_, v)| cl.find(v)),
                        );
                    }
                }
            }
            g.sort_unstable();
            g.dedup();
            groups.push((g, rows));
        }
    }
    groups
}

/// Can every step of `v.only` read exactly its row? Not when the row's
/// values never match the step's pins, or when another row always does
/// (alive from the start, never deleted, its pinned values never
/// written): such a valuation has no schedule, and searching it would
/// only cost states.
fn reads_possible(inst: &Instance, v: &Valuation) -> bool {
    let stable = |t: usize| {
        !v.writes
            .iter()
            .any(|((_, _, u), slots)| *u == t && slots.iter().any(Option::is_some))
    };
    let deleted = |t: usize| {
        inst.txns.iter().flat_map(|x| &x.steps).any(|s| {
            (s.ty == StmtType::KeyDel && s.tuple == Some(t))
                || (s.ty == StmtType::PredDel && s.rel == inst.tuples[t].rel)
        })
    };
    v.only.iter().all(|&(a, pos, t)| {
        if t != NO_ROW && stable(t) && !v.matches(a, pos, true, &v.init[t]) {
            return false;
        }
        let rel = inst.txns[a].steps[pos].rel;
        (0..inst.tuples.len()).all(|u| {
            u == t
                || inst.tuples[u].rel != rel
                || v.absent[u]
                || v.allowed(a, pos).contains(&u)
                || matches!(inst.tuples[u].kind, super::instance::TupleKind::Inserted(_))
                || !stable(u)
                || deleted(u)
                || !v.matches(a, pos, true, &v.init[u])
        })
    })
}

/// Can every keyed write with checked extra pins match, and every
/// no-match branch fail (`Valuation::conds`)? Not when the row's pinned
/// columns keep their initial values (no write of the instance changes
/// them; for a no-match branch, nothing deletes the row either) and those
/// decide the other way: such a valuation has no
/// schedule through that step, and searching it would only cost states.
fn conditions_possible(inst: &Instance, v: &Valuation) -> bool {
    v.conds.iter().all(|&(a, pos, miss)| {
        let Some(t) = inst.txns[a].steps[pos].tuple else {
            return true;
        };
        let slots: Vec<usize> = v.pins[a][pos].iter().map(|&(s, _)| s).collect();
        let written = v.writes.iter().any(|((_, _, u), w)| {
            *u == t && slots.iter().any(|&s| w.get(s).is_some_and(Option::is_some))
        });
        // A no-match branch also fails on a row deleted, or not yet
        // inserted, when it runs.
        let gone = miss
            && (matches!(inst.tuples[t].kind, super::instance::TupleKind::Inserted(_))
                || inst.txns.iter().flat_map(|x| &x.steps).any(|u| {
                    (u.ty == StmtType::KeyDel && u.tuple == Some(t))
                        || (u.ty == StmtType::PredDel && u.rel == inst.tuples[t].rel)
                }));
        written || gone || v.absent[t] || v.matches(a, pos, true, &v.init[t]) != miss
    })
}

/// Marks the foreign-key existence reads (FOR KEY SHARE until commit,
/// `Provenance::key_share`) among the instance's key selections, and the
/// snapshot scans of UPDATE/DELETE targets (`Provenance::scans`).
pub(super) fn mark_key_share(g: &SummaryGraph, prov: &Provenance, inst: &mut Instance) {
    for t in &mut inst.txns {
        let ltp = &g.nodes[t.node].ltp;
        for (pos, s) in t.steps.iter_mut().enumerate() {
            let stmt = ltp.occurrences[pos].stmt;
            s.key_share = s.ty == StmtType::KeySel && prov.key_share(ltp.program, stmt);
            s.scan = prov.scan(ltp.program, stmt);
            s.cond = condition(prov, ltp.program, stmt).filter(|_| s.tuple.is_some());
            let only = prov.cond_only(ltp.program, stmt);
            if s.cond == Some(false) && evaluated(prov, ltp.program, stmt) && !only.is_empty() {
                let m = (only.iter().filter(|&&c| c < 128)).fold(0, |m, &c| m | 1 << c);
                s.acc.read = s.acc.read.map(|r| r & !m);
                s.cond_read = Some(m);
            }
        }
    }
}

/// Is the keyed write `stmt` of `program`'s condition evaluated on the
/// versions: every extra conjunct an equality to a value or a test
/// against a constant (`Provenance::tests`)?
fn evaluated(prov: &Provenance, program: usize, stmt: usize) -> bool {
    let Some((extra, _)) = prov.condition(program, stmt) else {
        return false;
    };
    let pins = prov.pins(program, stmt);
    let exact =
        !prov.inexact(program, stmt) && extra.iter().all(|c| pins.iter().any(|(p, _)| p == c));
    exact || prov.tests(program, stmt).is_some()
}

/// A keyed UPDATE/DELETE with extra conjuncts (`Some(false)`) or its
/// no-match branch (`Some(true)`), as `StepSpec::cond` marks it: the
/// no-match branch only when every extra conjunct is an equality to a
/// value (else the row may fail a condition the values do not see, and
/// its pins decide nothing).
fn condition(prov: &Provenance, program: usize, stmt: usize) -> Option<bool> {
    use crate::model::provenance::Role;
    let (extra, role) = prov.condition(program, stmt)?;
    let pins = prov.pins(program, stmt);
    let exact =
        !prov.inexact(program, stmt) && extra.iter().all(|c| pins.iter().any(|(p, _)| p == c));
    match role {
        Role::Write => Some(false),
        // Tests of columns against constants are evaluated on versions
        // (`unevaluated::Truths`).
        Role::NoMatch => (exact || prov.tests(program, stmt).is_some()).then_some(true),
        Role::Scan => None,
    }
}

/// With values: a step is a later part of the previous step's SQL
/// statement, reading its snapshot, also where their texts differ: the
/// body of a STABLE or IMMUTABLE function the statement calls
/// (`Provenance::parts`; the text-based `instance::continues` sees only
/// parts with the statement's own text). Both occurrences are in one
/// execution of the statement: the same iterations of the loops around
/// it (a per-row call's loop is inside it).
pub(super) fn mark_parts(g: &SummaryGraph, prov: &Provenance, inst: &mut Instance) {
    for t in &mut inst.txns {
        let ltp = &g.nodes[t.node].ltp;
        for pos in 1..t.steps.len().min(ltp.occurrences.len()) {
            let (a, b) = (&ltp.occurrences[pos - 1], &ltp.occurrences[pos]);
            let (Some(pa), Some(pb)) = (
                prov.part(ltp.program, a.stmt),
                prov.part(ltp.program, b.stmt),
            ) else {
                continue;
            };
            let d = pa.snap_depth;
            let one = pa.snap == pb.snap
                && pa.snap_depth == pb.snap_depth
                && a.iteration.len() >= d
                && b.iteration.len() >= d
                && a.iteration[..d] == b.iteration[..d]
                && (a.stmt, &a.iteration) != (b.stmt, &b.iteration);
            if one {
                t.steps[pos].cont = true;
            }
        }
    }
}

/// A literal as a value: `'10'` and `10` differ in SQL only by type; a
/// quoted number is kept quoted (fewer equalities, never a false one).
fn literal(l: &str) -> String {
    l.trim().to_string()
}

/// Distinct tuples of a relation differ in every key whose columns both
/// pin: not all of a key's columns in the same classes. And a number
/// allocated from a counter equals no column of a row that exists
/// initially (`Source::Counter`: it is above them all).
fn distinct(w: &Workload, inst: &Instance, cl: &Classes) -> bool {
    let fresh: Vec<usize> = (cl.names.vars.iter().enumerate())
        .filter(|(_, v)| matches!(v, Var::Fresh(..)))
        .map(|(i, _)| cl.find(i))
        .collect();
    let old_row = cl.names.vars.iter().enumerate().any(|(i, v)| {
        matches!(v, Var::Col(t, _) if !matches!(inst.tuples[*t].kind, super::instance::TupleKind::Inserted(_)))
            && fresh.contains(&cl.find(i))
    });
    if old_row {
        return false;
    }
    let n = inst.tuples.len();
    for t1 in 0..n {
        for t2 in t1 + 1..n {
            let rel = inst.tuples[t1].rel;
            if inst.tuples[t2].rel != rel {
                continue;
            }
            let r = w.schema.rel(rel);
            if is_absent(w, inst, cl, t1) || is_absent(w, inst, cl, t2) {
                continue;
            }
            let keys = std::iter::once(&r.primary_key).chain(r.unique_keys.iter());
            for key in keys.filter(|k| !k.is_empty()) {
                let same = key.iter().all(|&c| {
                    match (cl.root_of(&Var::Col(t1, c)), cl.root_of(&Var::Col(t2, c))) {
                        (Some(x), Some(y)) => x == y,
                        _ => false,
                    }
                });
                if same {
                    return false;
                }
            }
        }
    }
    parents_exist(w, inst, cl)
}

/// A row of the initial database satisfies its foreign keys: its parent
/// existed before any transaction ran, so it is no row a transaction of
/// the instance inserts (that row's key was free). Without this a join
/// on a child's foreign-key column (`queues.id = j.queue_id`) could meet
/// a parent inserted later, which PostgreSQL's foreign key forbids. (A
/// schedule that deletes the parent and inserts it again is lost: fewer
/// schedules, never a false one.)
fn parents_exist(w: &Workload, inst: &Instance, cl: &Classes) -> bool {
    use super::instance::TupleKind;
    for f in w
        .schema
        .foreign_keys
        .iter()
        .filter(|f| !f.columns.is_empty())
    {
        for (t, child) in inst.tuples.iter().enumerate() {
            if child.rel != f.domain || matches!(child.kind, TupleKind::Inserted(_)) {
                continue;
            }
            for (u, parent) in inst.tuples.iter().enumerate() {
                if parent.rel != f.range || !matches!(parent.kind, TupleKind::Inserted(_)) {
                    continue;
                }
                let same = f.columns.iter().all(|&(dc, rc)| {
                    match (cl.root_of(&Var::Col(t, dc)), cl.root_of(&Var::Col(u, rc))) {
                        (Some(x), Some(y)) => x == y,
                        _ => false,
                    }
                });
                if same {
                    return false;
                }
            }
        }
    }
    true
}

/// Every way of merging classes within each group, consistent: the
/// predicates' pinned classes in restricted growth (each joins an earlier
/// block or starts a new one), then each tuple's class alone or in a
/// block of pinned ones (equalities among tuples' classes alone change
/// no match: they are left out).
fn merge(
    w: &Workload,
    inst: &Instance,
    groups: &[Group],
    gi: usize,
    cl: Classes,
    out: &mut Vec<Classes>,
) {
    if out.len() >= MAX_VALUATIONS {
        return;
    }
    let Some((pinned, rows)) = groups.get(gi) else {
        out.push(cl);
        return;
    };
    // The group's classes as they are now (earlier merges may join some).
    let now = |v: &[usize]| {
        let mut x: Vec<usize> = v.iter().map(|&c| cl.find(c)).collect();
        x.sort_unstable();
        x.dedup();
        x
    };
    let mut items = now(pinned);
    let npins = items.len();
    items.extend(
        now(rows)
            .into_iter()
            .filter(|r| !items.contains(r))
            .collect::<Vec<_>>(),
    );
    blocks(
        w,
        inst,
        groups,
        gi,
        (&items, npins),
        0,
        &mut vec![],
        cl,
        out,
    );
}

#[allow(clippy::too_many_arguments)]
fn blocks(
    w: &Workload,
    inst: &Instance,
    groups: &[Group],
    gi: usize,
    (items, npins): (&[usize], usize),
    i: usize,
    heads: &mut Vec<usize>,
    cl: Classes,
    out: &mut Vec<Classes>,
) {
    let Some(&x) = items.get(i) else {
        merge(w, inst, groups, gi + 1, cl, out);
        return;
    };
    // Alone first (the finest valuation: fewest equalities); only pinned
    // classes head blocks.
    let pin = i < npins;
    if pin {
        heads.push(x);
    }
    blocks(
        w,
        inst,
        groups,
        gi,
        (items, npins),
        i + 1,
        heads,
        cl.clone(),
        out,
    );
    if pin {
        heads.pop();
    }
    let null = cl.root_of(&Var::Null);
    for h in heads.clone() {
        if null.is_some_and(|n| cl.find(h) == n || cl.find(x) == n) {
            continue; // NULL equals nothing
        }
        let mut c = cl.clone();
        c.union(h, x);
        if c.consistent() && distinct(w, inst, &c) {
            blocks(w, inst, groups, gi, (items, npins), i + 1, heads, c, out);
        }
    }
}

/// Every class of the union-find gets a number and a printable value: a
/// literal class prints as the literal, the others as small numbers no
/// literal uses.
fn number_classes(cl: &Classes) -> (HashMap<usize, u16>, Vec<String>) {
    let mut number: HashMap<usize, u16> = HashMap::new();
    let mut lits: HashMap<usize, String> = HashMap::new();
    for (i, v) in cl.names.vars.iter().enumerate() {
        let r = cl.find(i);
        let next = number.len() as u16;
        number.entry(r).or_insert(next);
        match v {
            Var::Lit(l) => {
                lits.insert(r, l.clone());
            }
            Var::Null => {
                lits.insert(r, "NULL".into());
            }
            _ => {}
        }
    }
    let mut shown = vec![String::new(); number.len()];
    let mut used: Vec<String> = lits.values().cloned().collect();
    let mut k = 0;
    let mut order: Vec<(usize, u16)> = number.iter().map(|(&r, &c)| (r, c)).collect();
    order.sort_unstable_by_key(|&(_, c)| c);
    for (root, c) in order {
        shown[c as usize] = match lits.get(&root) {
            Some(l) => l.clone(),
            None => loop {
                k += 1;
                if !used.contains(&k.to_string()) {
                    used.push(k.to_string());
                    break k.to_string();
                }
            },
        };
    }
    (number, shown)
}

/// Class numbers, pins per slot and the printable values of one merged
/// union-find.
fn finish(
    inst: &Instance,
    cl: &Classes,
    cols: &[Vec<usize>],
    pins: &[Vec<Vec<(usize, usize)>>],
) -> Valuation {
    let (number, shown) = number_classes(cl);
    let class = |v: usize| number[&cl.find(v)];
    let init: Vec<Vec<u16>> = inst
        .tuples
        .iter()
        .enumerate()
        .map(|(t, s)| {
            cols[s.rel]
                .iter()
                .map(|&c| {
                    cl.names
                        .ids
                        .get(&Var::Col(t, c))
                        .map_or(FRESH, |&v| class(v))
                })
                .collect()
        })
        .collect();
    let pins: Vec<Vec<Vec<(usize, u16)>>> = pins
        .iter()
        .enumerate()
        .map(|(a, per)| {
            per.iter()
                .enumerate()
                .map(|(pos, ps)| {
                    let rel = inst.txns[a].steps[pos].rel;
                    ps.iter()
                        .filter_map(|&(c, v)| {
                            let slot = cols[rel].iter().position(|&x| x == c)?;
                            Some((slot, class(v)))
                        })
                        .collect()
                })
                .collect()
        })
        .collect();
    // Parameters and computed values, per transaction.
    let mut params: Vec<Vec<(String, String)>> = vec![vec![]; inst.txns.len()];
    for (i, v) in cl.names.vars.iter().enumerate() {
        let (a, n) = match v {
            Var::Param(a, p) => (*a, format!(":{p}")),
            Var::Computed(a, n, it) | Var::Fresh(a, n, it) if *n != usize::MAX => {
                let at = match it.as_slice() {
                    [] => String::new(),
                    it => format!(" (loop iteration {it:?})"),
                };
                (*a, format!("computed value #{n}{at}"))
            }
            _ => continue,
        };
        if !params[a].iter().any(|(x, _)| *x == n) {
            params[a].push((n, shown[class(i) as usize].clone()));
        }
    }
    params.iter_mut().for_each(|p| p.sort());
    let mut rows: Vec<Vec<(usize, String)>> = init
        .iter()
        .enumerate()
        .map(|(t, vals)| {
            let rel = inst.tuples[t].rel;
            cols[rel]
                .iter()
                .zip(vals)
                .map(|(&c, &v)| (c, shown.get(v as usize).cloned().unwrap_or_default()))
                .collect()
        })
        .collect();
    // Columns that are no slot but equal a value of the schedule (a joined
    // row's foreign key, a key-based row's key): printed too.
    let mut size: HashMap<usize, usize> = HashMap::new();
    for i in 0..cl.names.vars.len() {
        *size.entry(cl.find(i)).or_default() += 1;
    }
    for (i, v) in cl.names.vars.iter().enumerate() {
        if let Var::Col(t, c) = *v {
            let tied = size.get(&cl.find(i)).is_some_and(|&n| n > 1);
            if tied && !rows[t].iter().any(|(x, _)| *x == c) {
                rows[t].push((c, shown[class(i) as usize].clone()));
            }
        }
    }
    rows.iter_mut().for_each(|r| r.sort());
    Valuation {
        cols: cols.to_vec(),
        init,
        pins,
        writes: vec![],
        params,
        rows,
        shown,
        only: vec![],
        keyed: vec![],
        known: vec![],
        empty: vec![],
        null: cl.names.ids.get(&Var::Null).map(|&v| class(v)),
        absent: vec![false; inst.tuples.len()],
        after: vec![],
        newest: vec![],
        exact: vec![],
        conds: vec![],
    }
}

/// The valuation with every choice for the values untracked writes of
/// pinned columns give (one of the column's pinned classes, or fresh).
fn with_writes(
    w: &Workload,
    g: &SummaryGraph,
    inst: &Instance,
    base: &Valuation,
    fixed: &[(SetAt, u16)],
    keep: &dyn Fn(&Valuation) -> bool,
    out: &mut Vec<Valuation>,
) {
    let mut exact_at = vec![];
    // (txn, pos, tuple, slot, options)
    let mut points: Vec<(usize, usize, usize, usize, Vec<u16>)> = vec![];
    for (a, t) in inst.txns.iter().enumerate() {
        let ltp = &g.nodes[t.node].ltp;
        for (pos, s) in t.steps.iter().enumerate() {
            if !matches!(s.ty, StmtType::KeyUpd | StmtType::PredUpd) {
                continue;
            }
            // The statement's own WriteSet, whatever the granularity.
            let Some(ws) = ltp.statement(w, pos).write.clone() else {
                continue;
            };
            for (slot, &c) in base.cols[s.rel].iter().enumerate() {
                if !ws.contains(c) {
                    continue;
                }
                let mut opts: Vec<u16> = (0..inst.txns.len())
                    .flat_map(|b| {
                        (0..inst.txns[b].steps.len())
                            .filter(move |&p| inst.txns[b].steps[p].rel == s.rel)
                            .flat_map(move |p| base.pins[b][p].iter())
                    })
                    .filter(|(sl, _)| *sl == slot)
                    .map(|&(_, c)| c)
                    .collect();
                opts.sort_unstable();
                opts.dedup();
                opts.insert(0, FRESH);
                // A literal or parameter SET value is that value.
                if let Some(&(_, v)) = fixed.iter().find(|(site, _)| *site == (a, pos, c)) {
                    opts = vec![v];
                }
                let targets: Vec<usize> = match s.tuple {
                    Some(t) => vec![t],
                    None => (0..inst.tuples.len())
                        .filter(|&t| inst.tuples[t].rel == s.rel)
                        .collect(),
                };
                let exact = fixed.iter().any(|(site, _)| *site == (a, pos, c));
                for t in targets {
                    points.push((a, pos, t, slot, opts.clone()));
                    if exact {
                        exact_at.push(((a, pos, t), slot));
                    }
                }
            }
        }
    }
    let mut base = base.clone();
    base.exact.extend(exact_at);
    let base = &base;
    let mut pick = vec![0usize; points.len()];
    loop {
        let mut v = base.clone();
        for (i, (a, pos, t, slot, opts)) in points.iter().enumerate() {
            let n = base.cols[inst.tuples[*t].rel].len();
            let entry = match v.writes.iter().position(|(k, _)| *k == (*a, *pos, *t)) {
                Some(e) => e,
                None => {
                    v.writes.push(((*a, *pos, *t), vec![None; n]));
                    v.writes.len() - 1
                }
            };
            v.writes[entry].1[*slot] = Some(opts[pick[i]]);
        }
        if reads_possible(inst, &v) && conditions_possible(inst, &v) && keep(&v) {
            out.push(v);
        }
        if out.len() >= MAX_VALUATIONS {
            return;
        }
        // Next combination (mixed radix).
        let mut i = 0;
        loop {
            if i == points.len() {
                return;
            }
            pick[i] += 1;
            if pick[i] < points[i].4.len() {
                break;
            }
            pick[i] = 0;
            i += 1;
        }
    }
}

/// The class numbers `finish` gives: per union-find root, in the order of
/// the variables.
fn numbering(cl: &Classes) -> HashMap<usize, u16> {
    let mut number: HashMap<usize, u16> = HashMap::new();
    for i in 0..cl.names.vars.len() {
        let next = number.len() as u16;
        number.entry(cl.find(i)).or_insert(next);
    }
    number
}

/// For `verify_values`: each key-based step's pins and each tuple's
/// classes of the columns outside the slots (`Valuation::keyed`,
/// `Valuation::known`), numbered as `finish` numbers them.
fn key_classes(
    inst: &Instance,
    cl: &Classes,
    cols: &[Vec<usize>],
    keyed: &[Vec<Vec<(usize, usize)>>],
    v: &mut Valuation,
) {
    let number = numbering(cl);
    let class = |i: usize| number[&cl.find(i)];
    v.keyed = keyed
        .iter()
        .map(|per| {
            per.iter()
                .map(|ps| ps.iter().map(|&(c, x)| (c, class(x))).collect())
                .collect()
        })
        .collect();
    v.known = vec![vec![]; inst.tuples.len()];
    for (i, var) in cl.names.vars.iter().enumerate() {
        if let Var::Col(t, c) = *var {
            if !cols[inst.tuples[t].rel].contains(&c) {
                v.known[t].push((c, class(i)));
            }
        }
    }
    v.known.iter_mut().for_each(|k| k.sort_unstable());
}

/// The valuation as data for `verify_values` (columns, not slots).
pub(super) fn facts(inst: &Instance, v: &Valuation) -> super::schedule::ValueFacts {
    use super::schedule::StmtKind;
    let stmts = inst
        .txns
        .iter()
        .enumerate()
        .map(|(a, t)| {
            t.steps
                .iter()
                .enumerate()
                .map(|(pos, s)| {
                    let kind = match s.ty {
                        _ if s.tuple.is_some() => StmtKind::Key,
                        StmtType::PredSel => StmtKind::PredSel,
                        _ => StmtKind::PredWrite,
                    };
                    let pins = match kind {
                        StmtKind::Key => v.keyed.get(a).and_then(|k| k.get(pos)).cloned(),
                        _ => Some(
                            v.pins[a][pos]
                                .iter()
                                .map(|&(slot, c)| (v.cols[s.rel][slot], c))
                                .collect(),
                        ),
                    };
                    let mut pins = pins.unwrap_or_default();
                    if v.empty.contains(&(a, pos)) {
                        pins.iter_mut()
                            .for_each(|p| p.1 = super::schedule::FRESH_VALUE);
                    }
                    (kind, pins)
                })
                .collect()
        })
        .collect();
    // Truth slots (`unevaluated`) are no column's value: left out.
    let real =
        |t: usize, vals: &[u16]| vals[..vals.len().min(v.cols[inst.tuples[t].rel].len())].to_vec();
    super::schedule::ValueFacts {
        cols: v.cols.clone(),
        init: (v.init.iter().enumerate())
            .map(|(t, x)| real(t, x))
            .collect(),
        known: v.known.clone(),
        stmts,
        writes: (v.writes.iter())
            .map(|(site, x)| {
                let n = x.len().min(v.cols[inst.tuples[site.2].rel].len());
                (*site, x[..n].to_vec())
            })
            .collect(),
        only: v.only.clone(),
        after: v.after.clone(),
        null: v.null,
        absent: v.absent.clone(),
        // A condition with truth slots (`unevaluated`) is not re-checked:
        // its truths are no column's value.
        conds: (v.conds.iter())
            .filter_map(|&(a, pos, miss)| {
                let rel = inst.txns[a].steps[pos].rel;
                let pins = (v.pins[a][pos].iter())
                    .map(|&(slot, c)| Some((*v.cols[rel].get(slot)?, c)))
                    .collect::<Option<Vec<_>>>()?;
                Some((a, pos, miss, pins))
            })
            .collect(),
    }
}

/// The loop depth of statement `q` in `body` (`None`: not in it).
fn loop_depth(body: &crate::model::btp::Body, q: usize, d: usize) -> Option<usize> {
    use crate::model::btp::Body;
    match body {
        Body::Stmt(x) => (*x == q).then_some(d),
        Body::Seq(v) | Body::Branch(v) => v.iter().find_map(|b| loop_depth(b, q, d)),
        Body::Opt(x) => loop_depth(x, q, d),
        Body::Loop(x) => loop_depth(x, q, d + 1),
    }
}

impl Pinned<'_> {
    /// A value a statement outside a loop takes from the loop's rows: a
    /// join on the rows of a CTE's loop of keyed writes (`Value::Column`
    /// of the statement in the loop), or the snapshot scan of an
    /// UPDATE/DELETE keyed by array elements (the element, a `RangeLoop`
    /// value the loop's statements pin). PostgreSQL matches the rows of
    /// every iteration: one value per iteration. Instantiated where the
    /// loop ran exactly once in this unfolding (the value of that
    /// iteration) or not at all (no row: the predicate matches nothing, a
    /// `Var::Other` marked `empty`); not where it ran twice (a set of
    /// values). `None`: not such a value (`eval` goes on).
    fn loop_value(&self, a: usize, pos: usize, v: &Value) -> Result<Option<Var>, String> {
        let (w, inst) = (self.w, self.inst);
        let ltp = &self.g.nodes[inst.txns[a].node].ltp;
        let body = &w.programs[ltp.program].body;
        let here = loop_depth(body, ltp.occurrences[pos].stmt, 0).unwrap_or(0);
        let nstmts = w.programs[ltp.program].statements.len();
        // The program's statements deeper in loops that give the value.
        let (from, attr): (Vec<usize>, Option<usize>) = match v {
            Value::Column { stmt, attr } => (vec![*stmt], Some(*attr)),
            Value::Unknown(n) if self.prov.source(ltp.program, *n) == Some(Source::RangeLoop) => (
                (0..nstmts)
                    .filter(|&q| self.prov.pins(ltp.program, q).iter().any(|(_, x)| x == v))
                    .collect(),
                None,
            ),
            _ => return Ok(None),
        };
        let deeper: Vec<usize> = from
            .into_iter()
            .filter(|&q| loop_depth(body, q, 0).is_some_and(|d| d > here))
            .collect();
        if deeper.is_empty() {
            return Ok(None);
        }
        let occ: Vec<usize> = (0..ltp.occurrences.len())
            .filter(|&p| deeper.contains(&ltp.occurrences[p].stmt))
            .collect();
        let mut its: Vec<&Vec<u8>> = occ.iter().map(|&p| &ltp.occurrences[p].iteration).collect();
        its.sort();
        its.dedup();
        let why = |what: &str| {
            format!(
                "predicate not instantiated: {} of {} matches the rows of a loop that {what}",
                ltp.occurrence_label(w, pos),
                w.programs[ltp.program].name
            )
        };
        if its.is_empty() {
            return Ok(Some(Var::Other(a, format!("no row@{pos}"))));
        }
        let [it] = its[..] else {
            return Err(why("ran more than once (a set of values)"));
        };
        match (v, attr) {
            (Value::Unknown(n), _) => Ok(Some(Var::Computed(a, *n, it.clone()))),
            (_, Some(attr)) => match occ.as_slice() {
                [p] => match inst.txns[a].steps[*p].tuple {
                    Some(t) => Ok(Some(Var::Col(t, attr))),
                    None => Err(why("reads by predicate")),
                },
                _ => Err(why("ran more than once (a set of values)")),
            },
            _ => Ok(None),
        }
    }
}

/// Is tuple `t` absent: a column of its primary key is NULL (its key
/// statements pin a value read from no row)?
fn is_absent(w: &Workload, inst: &Instance, cl: &Classes, t: usize) -> bool {
    let Some(null) = cl.root_of(&Var::Null) else {
        return false;
    };
    w.schema
        .rel(inst.tuples[t].rel)
        .primary_key
        .iter()
        .any(|&c| cl.root_of(&Var::Col(t, c)) == Some(null))
}

/// A value read from no row is NULL (issue 24 item 4: Delivery's
/// district without a new order): a key-based statement whose key is
/// NULL finds no row and the program goes on, as PostgreSQL's UPDATE,
/// DELETE and SELECT INTO do; its tuple is absent, and every value read
/// from it is NULL too (`RETURNING O_C_ID INTO :c` of an UPDATE that found
/// nothing), which may make more tuples absent. The columns the key
/// statements on an absent tuple pin (`keyed`: `O_W_ID = :w`) are their
/// values, not the row's. `None` when NULL meets what cannot be NULL: a
/// literal or parameter, a column of a row that exists, or an inserted
/// row's key (PostgreSQL would reject the insert).
fn nulls(
    w: &Workload,
    inst: &Instance,
    mut cl: Classes,
    keyed: &[(usize, usize)],
) -> Option<Classes> {
    let null = cl.names.ids.get(&Var::Null).copied()?;
    loop {
        let absent: Vec<usize> = (0..inst.tuples.len())
            .filter(|&t| is_absent(w, inst, &cl, t))
            .collect();
        let mut grew = false;
        for (i, v) in cl.names.vars.clone().iter().enumerate() {
            if let Var::Col(t, c) = v {
                let own = keyed.contains(&(*t, *c));
                if absent.contains(t) && !own && cl.find(i) != cl.find(null) {
                    cl.union(i, null);
                    grew = true;
                }
            }
        }
        if !grew {
            break;
        }
    }
    let root = cl.find(null);
    let ok = cl.names.vars.iter().enumerate().all(|(i, v)| {
        cl.find(i) != root
            || match v {
                Var::Lit(_) | Var::Param(..) | Var::Other(..) => false,
                Var::Col(t, _) => {
                    !matches!(
                        inst.tuples[*t].kind,
                        super::instance::TupleKind::Inserted(_)
                    ) && is_absent(w, inst, &cl, *t)
                }
                Var::Computed(..) | Var::Read(..) | Var::Null => true,
                Var::Fresh(..) => false,
            }
    });
    ok.then_some(cl)
}

/// Records the absent tuples of a valuation (they print no values).
fn absent_rows(w: &Workload, inst: &Instance, cl: &Classes, v: &mut Valuation) {
    for t in 0..inst.tuples.len() {
        if is_absent(w, inst, cl, t) {
            v.absent[t] = true;
            v.rows[t].clear();
        }
    }
}

/// Is column `c` of tuple `t` a number a counter allocated in the
/// schedule (`Source::Counter`)?
fn is_fresh(cl: &Classes, t: usize, c: usize) -> bool {
    cl.root_of(&Var::Col(t, c)).is_some_and(|r| {
        (cl.names.vars.iter().enumerate())
            .any(|(i, x)| matches!(x, Var::Fresh(..)) && cl.find(i) == r)
    })
}

/// The limited reads ordered descending by a counter key (`ORDER BY c
/// DESC LIMIT`, `MAX(c)`) that no used value gave a row (`only`): their
/// rows whose `c` a counter allocated (`Valuation::newest`), and the
/// initial rows, which come after them (`after`). When such a read
/// matches exactly one allocated row and otherwise initial rows, that
/// row is its result on PostgreSQL: an allocated number is above every
/// initial one (`Source::Counter`); with two allocated rows, or none, its
/// dependencies stay soft (`limits`). Without this, TPC-C's OrderStatus
/// (`ORDER BY O_ID DESC LIMIT 1`, its INTO values unused) made every
/// dependency through the new order soft, and the four-transaction
/// anomaly under snapshot isolation had no edge NewOrder → OrderStatus
/// (issue 23, item 3). Unlike `only`, no schedule is dropped.
fn newest(g: &SummaryGraph, prov: &Provenance, inst: &Instance, cl: &Classes, v: &mut Valuation) {
    for (a, txn) in inst.txns.iter().enumerate() {
        let ltp = &g.nodes[txn.node].ltp;
        for (pos, s) in txn.steps.iter().enumerate() {
            let stmt = ltp.occurrences[pos].stmt;
            let Some((c, true)) = prov.order(ltp.program, stmt) else {
                continue;
            };
            if s.ty != StmtType::PredSel
                || !prov.limited(ltp.program, stmt)
                || v.only.iter().any(|&(b, p, _)| b == a && p == pos)
            {
                continue;
            }
            let rel = |t: usize| inst.tuples[t].rel == s.rel;
            let initial = |t: usize| {
                !matches!(inst.tuples[t].kind, super::instance::TupleKind::Inserted(_))
                    && !is_fresh(cl, t, c)
            };
            let fresh: Vec<usize> = (0..inst.tuples.len())
                .filter(|&t| rel(t) && is_fresh(cl, t, c))
                .collect();
            if fresh.is_empty() {
                continue;
            }
            let others = (0..inst.tuples.len()).filter(|&t| rel(t) && initial(t));
            v.after.push((a, pos, others.collect()));
            v.newest.push((a, pos, fresh));
        }
    }
}

/// The rows a limited read with a known order (`Provenance::orders`) may
/// match besides the row its value came from (`only`), because the order
/// puts that row first: with `ORDER BY c DESC` / `MAX(c)` a row whose `c`
/// a counter allocated in the schedule comes before every initial row;
/// with `MIN(c)` / ascending an initial row comes before every allocated
/// one (`Source::Counter`: allocations are above every initial value).
/// Anything else is not ordered by the values: the read must match its
/// row alone, as before.
fn ordered(g: &SummaryGraph, prov: &Provenance, inst: &Instance, cl: &Classes, v: &mut Valuation) {
    let fresh = |t: usize, c: usize| is_fresh(cl, t, c);
    let initial =
        |t: usize| !matches!(inst.tuples[t].kind, super::instance::TupleKind::Inserted(_));
    for &(a, pos, t) in &v.only {
        let ltp = &g.nodes[inst.txns[a].node].ltp;
        let stmt = ltp.occurrences[pos].stmt;
        let Some((c, desc)) = prov.order(ltp.program, stmt) else {
            continue;
        };
        if t == NO_ROW || !prov.limited(ltp.program, stmt) {
            continue;
        }
        let rel = inst.tuples[t].rel;
        let others: Vec<usize> = (0..inst.tuples.len())
            .filter(|&u| u != t && inst.tuples[u].rel == rel)
            .filter(|&u| match desc {
                true => fresh(t, c) && initial(u) && !fresh(u, c),
                false => initial(t) && !fresh(t, c) && fresh(u, c),
            })
            .collect();
        if !others.is_empty() {
            v.after.push((a, pos, others));
        }
    }
}
