//! A join on a CTE's row (issue 23, item 1): in `WITH j AS (UPDATE t …
//! WHERE id = :k RETURNING …) UPDATE u … FROM j WHERE u.id = j.c` the
//! join matches exactly the `u` rows whose `id` equals column `c` of the
//! one row the CTE wrote. The BTPs keep `u.id` a join column (predicate
//! based, as the lowering rules say); the provenance pins it to that
//! row's column (`Facts::value_pins`), so the explorer's values
//! (docs/explorer.md, "Values") instantiate the join on the joined row.

use super::vocab::{ColumnUses, TableRef, Term};
use super::Lowerer;
use crate::frontend::sql::same_name;
use crate::model::btp::{Body, StmtType};
use crate::model::schema::RelId;

/// The IF id of the phi a join on a CTE's row with extra conjuncts gets
/// (`cte_join`): no IF has it, so no path resolves the phi. Its values are
/// the snapshot scan's column (branch 0: the CTE's row) and the no-match
/// key sel's (branch 1), statements the renumbering follows; the
/// provenance marks branch 1 by that key sel and gives it NULL
/// (`Lowerer::alternatives`). Branch 0 has no mark: the scan runs before
/// the write, and the join's own reads may too.
pub(super) const CTE_MATCH: usize = usize::MAX;

/// Does `body` run statement `q` whenever it runs (a sequence, no loop,
/// branch or option around it)?
fn always_runs(body: &Body, q: usize) -> bool {
    match body {
        Body::Stmt(x) => *x == q,
        Body::Seq(v) => v.iter().any(|b| always_runs(b, q)),
        Body::Branch(_) | Body::Opt(_) | Body::Loop(_) => false,
    }
}

/// Does `body` run statement `q` in every iteration of one loop (the
/// per-element loop of an UPDATE/DELETE keyed by array elements)?
fn runs_per_iteration(body: &Body, q: usize) -> bool {
    match body {
        Body::Loop(x) => always_runs(x, q),
        Body::Seq(v) => v.iter().any(|b| runs_per_iteration(b, q)),
        _ => false,
    }
}

/// `(w | s)` where it always runs (a sequence, no loop, option or other
/// branch around it): a keyed write whose extra conjuncts may match
/// nothing (`WHERE id = :k AND locked_by = :w`), `s` the key sel of the
/// extra columns that stands for "they did not" (statements.rs). Returns
/// `s`.
fn missed_by(body: &Body, w: usize) -> Option<usize> {
    match body {
        Body::Branch(v) => match v.as_slice() {
            [Body::Stmt(x), Body::Stmt(s)] if *x == w => Some(*s),
            _ => None,
        },
        Body::Seq(v) => v.iter().find_map(|b| missed_by(b, w)),
        Body::Stmt(_) | Body::Opt(_) | Body::Loop(_) => None,
    }
}

impl Lowerer<'_> {
    /// The statement whose tuple is the one row a data-modifying CTE
    /// returns, lowered from statement `from` on as `body`: the CTE's
    /// snapshot scan (a key sel, before every write of the WITH), when the
    /// CTE is one key-based UPDATE or DELETE of `rel` that always runs.
    /// With extra conjuncts (`AND locked_by = :w`) also the key sel that
    /// stands for "they matched nothing" (then the CTE returns no row): the
    /// extra conjuncts only remove the key's one row. Keyed by array
    /// elements (a loop of keyed writes): the loop's write. A predicate
    /// write, an INSERT (its row comes after the statement's snapshot
    /// reads) or an upsert: none (the join stays unpinned, and the
    /// explorer says so).
    pub(super) fn cte_row(
        &self,
        from: usize,
        body: &Body,
        rel: Option<RelId>,
    ) -> Option<(usize, Option<usize>)> {
        let rel = rel?;
        let stmts = &self.out.statements;
        let writes: Vec<usize> = (from..stmts.len())
            .filter(|&q| stmts[q].rel == rel && stmts[q].ty != StmtType::KeySel)
            .filter(|&q| stmts[q].ty != StmtType::PredSel)
            .collect();
        let [w] = writes[..] else {
            return None;
        };
        if !matches!(stmts[w].ty, StmtType::KeyUpd | StmtType::KeyDel) {
            return None;
        }
        // Keyed by array elements: one write per element, each its row.
        // The join meets the rows of every iteration; the explorer pins
        // it only where the loop runs once (`values.rs`, `loop_value`).
        if runs_per_iteration(body, w) {
            return Some((w, None));
        }
        let key = self.out.facts[w].key.clone()?;
        let miss = missed_by(body, w);
        let same_key = |s: usize| {
            stmts[s].ty == StmtType::KeySel
                && stmts[s].rel == rel
                && self.out.facts[s].key.as_ref() == Some(&key)
        };
        if !miss.map_or(always_runs(body, w), same_key) {
            return None;
        }
        let path = self.out.facts[w].path.clone();
        (from..w)
            .rev()
            .find(|&s| {
                same_key(s)
                    && !self.out.facts[s].may_miss
                    && key
                        .iter()
                        .all(|&c| self.same_value(Term::Col(s, c), Term::Col(w, c), &path))
            })
            .map(|s| (s, miss))
    }

    /// The snapshot scan (statements `scans`) of an UPDATE/DELETE keyed
    /// by array elements (`USING unnest(:ids) n WHERE id = n`, lowered as
    /// a loop of keyed writes, `body`): it reads the rows of every
    /// element, so the BTP makes the key a join column. For the provenance
    /// it pins the key to the loop's write's key (`Value::Column` of the
    /// statement in the loop): the explorer instantiates it where the loop
    /// runs once (`values.rs`, `loop_value`).
    pub(super) fn pin_element_scan(
        &mut self,
        scans: std::ops::Range<usize>,
        body: &Body,
        u: &ColumnUses,
    ) {
        if u.elem.is_empty() || scans.is_empty() {
            return;
        }
        let keyed = |q: usize| {
            matches!(
                self.out.statements[q].ty,
                StmtType::KeyUpd | StmtType::KeyDel
            )
        };
        let w = (scans.end..self.out.statements.len())
            .find(|&q| keyed(q) && runs_per_iteration(body, q));
        // With extra conjuncts (`WHERE id = ANY(:ids) AND locked_by = :w`)
        // the write is a branch (key upd | key sel) in the loop, neither
        // runs every iteration: the scan is pinned to the element itself,
        // the `Source::RangeLoop` value both alternatives' keys are pinned
        // to (the explorer takes the one iteration's value, `loop_value`).
        let Some(rel) = w
            .or_else(|| (scans.end..self.out.statements.len()).find(|&q| keyed(q)))
            .map(|q| self.out.statements[q].rel)
        else {
            return;
        };
        for s in scans {
            if self.out.statements[s].ty != StmtType::PredSel || self.out.statements[s].rel != rel {
                continue;
            }
            for &c in &u.elem {
                let term = match w {
                    Some(w) => Term::Col(w, c),
                    None => match u.eq.iter().find(|(x, _)| *x == c) {
                        Some((_, t @ Term::Fresh(_))) => t.clone(),
                        _ => continue,
                    },
                };
                if !self.out.facts[s].value_pins.iter().any(|(x, _)| *x == c) {
                    self.out.facts[s].value_pins.push((c, term));
                }
            }
        }
    }

    /// `t.a = j.c` (either way round) with `t` a table and `j` a CTE whose
    /// rows are one key-based write's row (`Cte::row`): pins `t.a` to
    /// column `c` of that row, for the provenance only
    /// (`ColumnUses::joined`). When the write has extra conjuncts
    /// (`Cte::miss`), the pin is the row's column where the no-match
    /// alternative did not run and NULL — no row matches — where it did (a
    /// phi of the branch, `CTE_MATCH`). `unwritten_joins` drops the pin when
    /// a statement of the workload writes `c`.
    pub(super) fn cte_join(
        &mut self,
        tables: &[TableRef],
        cols: &[ColumnUses],
        uses: &mut [ColumnUses],
    ) {
        let sides: Vec<(usize, usize)> = cols
            .iter()
            .enumerate()
            .flat_map(|(t, u)| u.pred.iter().map(move |a| (t, *a)))
            .collect();
        let [x, y] = sides[..] else {
            return;
        };
        let real = |t: usize| tables[t].virt.is_none() && !tables[t].cte && !tables[t].pseudo;
        for ((t, a), (j, c)) in [(x, y), (y, x)] {
            if !real(t) || !tables[j].cte {
                continue;
            }
            let name = sqlparser::ast::Ident::new(tables[j].name.clone());
            let cte = self
                .sql
                .ctes
                .iter()
                .rev()
                .find(|k| same_name(&k.name.value, &name));
            let Some((row, miss)) = cte.and_then(|k| Some((k.row?, k.miss))) else {
                continue;
            };
            let term = match miss {
                None => Term::Col(row, c),
                Some(s) => {
                    let values = vec![Term::Col(row, c), Term::Col(s, c)];
                    self.vars.phis.push((CTE_MATCH, values));
                    Term::Phi(self.vars.phis.len() - 1)
                }
            };
            uses[t].joined.push((a, term));
        }
    }
}

/// Drops the join pins (`Facts::joined`, per program (statement,
/// attribute)) whose joined column some UPDATE of the workload writes: the
/// CTE returns its row's column as it is when the CTE writes the row,
/// which another transaction may have changed since the value the pin
/// stands for. Only a column no statement writes has one value in every
/// version. (Functions the workload never calls do not count: they are no
/// part of it.)
pub(super) fn unwritten_joins(
    w: &crate::model::btp::Workload,
    provenance: &mut crate::model::provenance::Provenance,
    joined: &[Vec<(usize, usize)>],
) {
    use crate::model::provenance::Value;
    let written = |rel: RelId, c: usize| {
        w.programs.iter().flat_map(|p| &p.statements).any(|s| {
            s.rel == rel
                && matches!(s.ty, StmtType::KeyUpd | StmtType::PredUpd)
                && s.write.as_ref().is_some_and(|x| x.contains(c))
        })
    };
    let moved = |p: usize, v: &Value| match v {
        Value::Column { stmt, attr } => written(w.programs[p].statements[*stmt].rel, *attr),
        _ => false,
    };
    for (p, list) in joined.iter().enumerate() {
        for &(q, attr) in list {
            // A pin with extra conjuncts is a branch's result: its
            // alternatives name the row's column (`cte_join`).
            let alts = provenance.alternatives(p, q, attr);
            let branch_moved = alts.iter().any(|(_, v)| moved(p, v));
            if branch_moved {
                provenance.alternatives[p].retain(|(s, a, _)| (*s, *a) != (q, attr));
            }
            let Some(pins) = provenance.programs.get_mut(p).and_then(|v| v.get_mut(q)) else {
                continue;
            };
            pins.retain(|(c, v)| match v {
                Value::Column { .. } if *c == attr => !moved(p, v),
                Value::Unknown(usize::MAX) if *c == attr => !branch_moved,
                _ => true,
            });
        }
    }
}
