//! A join on a CTE's row (issue 23, item 1): in `WITH j AS (UPDATE t …
//! WHERE id = :k RETURNING …) UPDATE u … FROM j WHERE u.id = j.c` the
//! join matches exactly the `u` rows whose `id` equals column `c` of the
//! one row the CTE wrote. The BTPs keep `u.id` a join column (predicate
//! based, as the lowering rules say); the provenance pins it to that
//! row's column (`Facts::value_pins`), so the explorer's values
//! (docs/explorer.md, "Values") instantiate the join on the joined row.

use super::clauses::ColumnUses;
use super::scope::TableRef;
use super::symbolic::Term;
use super::Lowerer;
use crate::frontend::sql::same_name;
use crate::model::btp::{Body, StmtType};
use crate::model::schema::RelId;

/// Does `body` run statement `q` whenever it runs (a sequence, no loop,
/// branch or option around it)?
fn always_runs(body: &Body, q: usize) -> bool {
    match body {
        Body::Stmt(x) => *x == q,
        Body::Seq(v) => v.iter().any(|b| always_runs(b, q)),
        Body::Branch(_) | Body::Opt(_) | Body::Loop(_) => false,
    }
}

impl Lowerer<'_> {
    /// The statement whose tuple is the one row a data-modifying CTE
    /// returns, lowered from statement `from` on as `body`: the CTE's
    /// snapshot scan (a key sel, before every write of the WITH), when the
    /// CTE is one key-based UPDATE or DELETE of `rel` that always runs.
    /// A predicate write, a loop (UNNEST keys), an INSERT (its row comes
    /// after the statement's snapshot reads) or an upsert: none (the join
    /// stays unpinned, and the explorer says so).
    pub(super) fn cte_row(&self, from: usize, body: &Body, rel: Option<RelId>) -> Option<usize> {
        let rel = rel?;
        let stmts = &self.out.statements;
        let writes: Vec<usize> = (from..stmts.len())
            .filter(|&q| stmts[q].rel == rel && stmts[q].ty != StmtType::KeySel)
            .filter(|&q| stmts[q].ty != StmtType::PredSel)
            .collect();
        let [w] = writes[..] else {
            return None;
        };
        if !matches!(stmts[w].ty, StmtType::KeyUpd | StmtType::KeyDel) || !always_runs(body, w) {
            return None;
        }
        let key = self.out.facts[w].key.clone()?;
        let path = self.out.facts[w].path.clone();
        (from..w).rev().find(|&s| {
            stmts[s].ty == StmtType::KeySel
                && stmts[s].rel == rel
                && self.out.facts[s].key.as_ref() == Some(&key)
                && !self.out.facts[s].may_miss
                && key
                    .iter()
                    .all(|&c| self.same_value(Term::Col(s, c), Term::Col(w, c), &path))
        })
    }

    /// `t.a = j.c` (either way round) with `t` a table and `j` a CTE whose
    /// rows are one key-based write's row (`Cte::row`): pins `t.a` to
    /// column `c` of that row, for the provenance only
    /// (`ColumnUses::joined`). Only when no statement of the workload
    /// assigns `c`: the row's `c` is then the same in every version the
    /// join may meet (the CTE returns the row as it wrote it).
    pub(super) fn cte_join(
        &self,
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
            if !real(t) || !tables[j].cte || self.cat.assigned.contains(&(tables[j].rel, c)) {
                continue;
            }
            let name = sqlparser::ast::Ident::new(tables[j].name.clone());
            let row = self
                .sql
                .ctes
                .iter()
                .rev()
                .find(|k| same_name(&k.name.value, &name))
                .and_then(|k| k.row);
            if let Some(row) = row {
                uses[t].joined.push((a, Term::Col(row, c)));
            }
        }
    }
}
