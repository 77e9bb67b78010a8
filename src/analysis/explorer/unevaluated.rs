//! Keyed UPDATE/DELETE conditions beyond equalities to values (issue 23):
//! `WHERE id = :k AND attempts < 3`, `… AND locked_at IS NULL`, `… AND v
//! <> :x`. PostgreSQL 15 treats them as it treats an equality
//! (`Provenance::conditions`; checked on PG 15.20 with two psql sessions,
//! docs/explorer.md): the whole WHERE on the row's snapshot version; a
//! row that matched there and is held by another transaction is waited
//! for and re-checked on its latest version (EvalPlanQual); a row that did
//! not match is not waited for.
//!
//! The explorer's values are classes with equality only. A condition whose
//! conjuncts are tests of columns against constants (`Provenance::tests`)
//! gets its truth tracked per version instead: one *truth slot* per
//! (column, test) after the relation's value slots, `TRUE` or `FALSE` per
//! version. The initial version's truth is chosen (both are tried: the
//! column is pinned by nothing, so some data gives either); a write that
//! sets the column to a literal or NULL gives the truth the test has of
//! that value; a write of other columns keeps it. The statement then needs
//! its truth slots `TRUE` like pins (`Valuation::matches`), so the write
//! rule, the no-match branch as a predicate read of its row and "does a
//! write change whether it matches" all read them.
//!
//! Any other such condition is not evaluated: the write runs whenever its
//! key matches, the no-match branch is a plain read of the condition's
//! columns. That stands for some data only while the condition's truth
//! cannot change under the schedule: nothing else writes its columns of
//! the row, nothing deletes or inserts the row beside a no-match branch
//! (a no-match and a delete leave the same outcome in either order),
//! no other statement's such condition meets it on the row, and no
//! predicate pins the columns. Otherwise — and for a tested column written
//! with a value the test cannot evaluate (`a = a + 1`, `lk = now()` against
//! `lk < 5`) where another statement evaluates it — the instance gets no
//! valuation, with the reason: its schedules stay "in the model only".

use super::instance::{Instance, Mask, TupleKind};
use super::valuation::{Site, Valuation};
use crate::analysis::graph::SummaryGraph;
use crate::model::btp::{StmtType, Workload};
use crate::model::provenance::{Provenance, Role, Test, Tests, Value, Written};

/// A truth slot's class: the test holds of the version's value.
pub(super) const TRUE: u16 = u16::MAX - 1;
/// A truth slot's class: the test fails.
pub(super) const FALSE: u16 = u16::MAX - 2;

/// A step's condition beyond equalities: (program, statement, role, its
/// columns as a mask, its tests when all are tests against constants).
type Open = (usize, usize, Role, Mask, Option<Tests>);

/// The truth slots of an instance (see the module comment).
#[derive(Debug, Default)]
pub(super) struct Truths {
    /// Per relation: the truth slots' (column, test), in slot order after
    /// the relation's value slots.
    slots: Vec<Vec<(usize, Test)>>,
    /// (transaction, step, truth slot): the step's condition needs it.
    needs: Vec<(usize, usize, usize)>,
    /// (site, truth slot, truth): the version a write makes.
    sets: Vec<(Site, usize, bool)>,
    /// (tuple, truth slot): initial truths to choose.
    free: Vec<(usize, usize)>,
}

/// The columns of statement `stmt` of `program`'s condition beyond
/// equalities to values: a keyed write's extra columns that no equality
/// pins (all of them when its WHERE is inexact); a no-match branch's extra
/// columns unless every one is pinned (then `values::condition` checks it
/// on versions). With the tests, when they are all of them.
fn open(prov: &Provenance, program: usize, stmt: usize) -> Option<(Role, Mask, Option<Tests>)> {
    let (extra, role) = prov.condition(program, stmt)?;
    let pins = prov.pins(program, stmt);
    let inexact = prov.inexact(program, stmt);
    let pinned = |c: &usize| !inexact && pins.iter().any(|(p, _)| p == c);
    let cols: Vec<usize> = match role {
        Role::Scan => return None,
        Role::Write => extra.iter().copied().filter(|c| !pinned(c)).collect(),
        Role::NoMatch if extra.iter().all(pinned) => return None,
        Role::NoMatch => extra.iter().copied().filter(|c| !pinned(c)).collect(),
    };
    let mask = mask_of(&cols);
    let tests = prov.tests(program, stmt).map(<[_]>::to_vec);
    (mask != 0).then_some((role, mask, tests))
}

fn mask_of(cols: &[usize]) -> Mask {
    cols.iter()
        .filter(|&&c| c < 128)
        .fold(0, |m, &c| m | 1 << c)
}

/// The truth slots of instance `inst`, or why it has no valuation because
/// of a condition the values do not evaluate (see the module comment).
/// `slots`: per relation, the columns some predicate pins.
pub(super) fn check(
    w: &Workload,
    g: &SummaryGraph,
    prov: &Provenance,
    inst: &Instance,
    slots: &[Vec<usize>],
) -> Result<Truths, String> {
    let at = |a: usize, pos: usize| {
        let ltp = &g.nodes[inst.txns[a].node].ltp;
        (ltp.program, ltp.occurrences[pos].stmt)
    };
    let opens: Vec<Vec<Option<Open>>> = (inst.txns.iter().enumerate())
        .map(|(a, x)| {
            (0..x.steps.len())
                .map(|pos| {
                    let (p, q) = at(a, pos);
                    x.steps[pos].tuple?;
                    open(prov, p, q).map(|(r, m, t)| (p, q, r, m, t))
                })
                .collect()
        })
        .collect();
    let label = |a: usize, pos: usize| {
        let ltp = &g.nodes[inst.txns[a].node].ltp;
        format!(
            "{} of {}",
            ltp.occurrence_label(w, pos),
            w.programs[ltp.program].name
        )
    };
    let mut truths = Truths {
        slots: vec![vec![]; w.schema.relations.len()],
        ..Truths::default()
    };
    for (a, x) in inst.txns.iter().enumerate() {
        for (pos, s) in x.steps.iter().enumerate() {
            let (Some(t), Some(o)) = (s.tuple, &opens[a][pos]) else {
                continue;
            };
            let why = |what: String| {
                let rel = w.schema.rel(s.rel);
                let cols: Vec<&str> = (0..rel.attributes.len())
                    .filter(|&c| c < 128 && o.3 & (1 << c) != 0)
                    .map(|c| rel.attributes[c].as_str())
                    .collect();
                format!(
                    "not instantiated: the condition of {} on {}.{} is not an equality to a value, and {what} (the values cannot say whether it holds)",
                    label(a, pos),
                    rel.name,
                    cols.join(", ")
                )
            };
            if slots[s.rel].iter().any(|&c| c < 128 && o.3 & (1 << c) != 0) {
                return Err(why("a predicate pins that column".into()));
            }
            if matches!(inst.tuples[t].kind, TupleKind::Inserted(_)) {
                return Err(why("the row is inserted".into()));
            }
            match &o.4 {
                Some(tests) => {
                    for (c, test) in tests {
                        let k = truths.slot(s.rel, *c, test);
                        truths.needs.push((a, pos, k));
                        if !truths.free.contains(&(t, k)) {
                            truths.free.push((t, k));
                        }
                    }
                }
                None => unevaluated(inst, &opens, (a, pos, t), o, &label).map_err(why)?,
            }
        }
    }
    truths.effects(w, g, prov, inst, &label)?;
    Ok(truths)
}

/// The rules for a condition the values do not evaluate, of step `pos`
/// of transaction `a` on tuple `t` (see the module comment).
fn unevaluated(
    inst: &Instance,
    opens: &[Vec<Option<Open>>],
    (a, pos, t): (usize, usize, usize),
    o: &Open,
    label: &dyn Fn(usize, usize) -> String,
) -> Result<(), String> {
    let rel = inst.txns[a].steps[pos].rel;
    for (b, y) in inst.txns.iter().enumerate() {
        for (q, u) in y.steps.iter().enumerate() {
            if (b, q) == (a, pos) || u.rel != rel || u.tuple.is_some_and(|v| v != t) {
                continue;
            }
            let writes = matches!(u.ty, StmtType::KeyUpd | StmtType::PredUpd)
                && u.acc.write.is_some_and(|m| m & o.3 != 0);
            if writes {
                return Err(format!("{} writes it", label(b, q)));
            }
            let deletes = matches!(u.ty, StmtType::KeyDel | StmtType::PredDel);
            if deletes && o.2 == Role::NoMatch {
                return Err(format!("{} deletes the row", label(b, q)));
            }
            if let Some(p) = &opens[b][q] {
                if (p.0, p.1, p.2) != (o.0, o.1, o.2) || p.4.is_some() {
                    return Err(format!(
                        "{} has another such condition on the row",
                        label(b, q)
                    ));
                }
            }
        }
    }
    Ok(())
}

impl Truths {
    /// The truth slot of (`col`, `test`) of relation `rel`, made if new.
    fn slot(&mut self, rel: usize, col: usize, test: &Test) -> usize {
        let s = &mut self.slots[rel];
        match s.iter().position(|(c, x)| *c == col && x == test) {
            Some(k) => k,
            None => {
                s.push((col, test.clone()));
                s.len() - 1
            }
        }
    }

    /// The truth each write of a tested column of a tested row gives
    /// (`sets`); an error where it cannot be evaluated and another step
    /// evaluates the test on the row, or where two tests of one column
    /// meet on a row (their initial truths are not independent).
    fn effects(
        &mut self,
        w: &Workload,
        g: &SummaryGraph,
        prov: &Provenance,
        inst: &Instance,
        label: &dyn Fn(usize, usize) -> String,
    ) -> Result<(), String> {
        for (i, &(t, k)) in self.free.iter().enumerate() {
            let rel = inst.tuples[t].rel;
            let col = self.slots[rel][k].0;
            if let Some(&(_, j)) =
                (self.free[..i].iter()).find(|&&(u, j)| u == t && self.slots[rel][j].0 == col)
            {
                let name = &w.schema.rel(rel).attributes[col];
                return Err(format!(
                    "not instantiated: two tests of {}.{name} (`{}`, `{}`) meet on one row",
                    w.schema.rel(rel).name,
                    shown(name, &self.slots[rel][j].1),
                    shown(name, &self.slots[rel][k].1)
                ));
            }
        }
        for &(t, k) in &self.free.clone() {
            let rel = inst.tuples[t].rel;
            let (col, test) = self.slots[rel][k].clone();
            let evaluators: Vec<(usize, usize)> = (self.needs.iter())
                .filter(|&&(a, pos, j)| j == k && inst.txns[a].steps[pos].tuple == Some(t))
                .map(|&(a, pos, _)| (a, pos))
                .collect();
            for (b, y) in inst.txns.iter().enumerate() {
                for (q, u) in y.steps.iter().enumerate() {
                    let writes = u.rel == rel
                        && u.tuple.is_none_or(|v| v == t)
                        && matches!(u.ty, StmtType::KeyUpd | StmtType::PredUpd)
                        && u.acc
                            .write
                            .is_some_and(|m| col < 128 && m & (1 << col) != 0);
                    if !writes {
                        continue;
                    }
                    let ltp = &g.nodes[y.node].ltp;
                    let stmt = ltp.occurrences[q].stmt;
                    let value = match prov.set_value(ltp.program, stmt, col) {
                        Some(Value::Literal(l)) if l.eq_ignore_ascii_case("NULL") => {
                            Some(Written::Null)
                        }
                        Some(Value::Literal(l)) => Some(Written::Literal(l)),
                        _ if prov.sets_not_null(ltp.program, stmt, col) => Some(Written::NotNull),
                        _ => None,
                    };
                    match value.and_then(|v| test.eval(v)) {
                        Some(truth) => self.sets.push(((b, q, t), k, truth)),
                        None if evaluators.iter().all(|&e| e == (b, q)) => {}
                        None => {
                            let name = &w.schema.rel(rel).attributes[col];
                            return Err(format!(
                                "not instantiated: {} writes {}.{name} with a value the test `{}` of {} cannot evaluate",
                                label(b, q),
                                w.schema.rel(rel).name,
                                shown(name, &test),
                                label(evaluators[0].0, evaluators[0].1)
                            ));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// `base` with the truth slots, one valuation per choice of the
    /// initial truths (`free`).
    pub(super) fn apply(&self, inst: &Instance, base: &Valuation) -> Vec<Valuation> {
        if self.needs.is_empty() {
            return vec![base.clone()];
        }
        let mut v = base.clone();
        let at = |rel: usize, k: usize| base.cols[rel].len() + k;
        for (t, init) in v.init.iter_mut().enumerate() {
            let rel = inst.tuples[t].rel;
            init.extend(self.slots[rel].iter().map(|_| TRUE));
        }
        for &(a, pos, k) in &self.needs {
            let rel = inst.txns[a].steps[pos].rel;
            v.pins[a][pos].push((at(rel, k), TRUE));
        }
        for &(site, k, truth) in &self.sets {
            let rel = inst.tuples[site.2].rel;
            let n = base.cols[rel].len() + self.slots[rel].len();
            let e = match v.writes.iter().position(|(s, _)| *s == site) {
                Some(e) => e,
                None => {
                    v.writes.push((site, vec![]));
                    v.writes.len() - 1
                }
            };
            let slots = &mut v.writes[e].1;
            slots.resize(n, None);
            slots[at(rel, k)] = Some(if truth { TRUE } else { FALSE });
            v.exact.push((site, at(rel, k)));
        }
        // Every choice of the initial truths (a handful: one per tested
        // row and test).
        let mut out = vec![];
        for bits in 0u32..1 << self.free.len().min(8) {
            let mut x = v.clone();
            for (i, &(t, k)) in self.free.iter().enumerate().take(8) {
                let rel = inst.tuples[t].rel;
                let truth = bits & (1 << i) == 0;
                x.init[t][at(rel, k)] = if truth { TRUE } else { FALSE };
                // Printed: a value of the column with that truth.
                let (col, test) = &self.slots[rel][k];
                x.rows[t].push((*col, example(test, truth)));
            }
            out.push(x);
        }
        out
    }
}

/// A value for which `test` gives `truth` (`a < 3` false: `3`), as the
/// schedule's values print a row's initial values.
fn example(test: &Test, truth: bool) -> String {
    use crate::model::provenance::Cmp;
    match test {
        Test::Null(is) if *is == truth => "NULL".into(),
        Test::Null(_) => "a value other than NULL".into(),
        Test::Cmp(op, n) => {
            let step = match (op, truth) {
                (Cmp::Lt, true) | (Cmp::Ge, false) => -1,
                (Cmp::Le, false) | (Cmp::Gt, true) | (Cmp::Ne, true) => 1,
                _ => 0,
            };
            match n.trim().parse::<i64>() {
                Ok(n) => (n + step).to_string(),
                Err(_) => match step {
                    0 => n.clone(),
                    -1 => format!("a number below {n}"),
                    _ => format!("a number above {n}"),
                },
            }
        }
    }
}

/// A test as SQL (`attempts < 3`, `locked_at IS NULL`), for reasons.
fn shown(col: &str, test: &Test) -> String {
    use crate::model::provenance::Cmp;
    match test {
        Test::Null(true) => format!("{col} IS NULL"),
        Test::Null(false) => format!("{col} IS NOT NULL"),
        Test::Cmp(op, n) => {
            let op = match op {
                Cmp::Lt => "<",
                Cmp::Le => "<=",
                Cmp::Gt => ">",
                Cmp::Ge => ">=",
                Cmp::Ne => "<>",
            };
            format!("{col} {op} {n}")
        }
    }
}
