//! What schema objects do on a statement's behalf (issue 21, class 1):
//! functions called by DEFAULT, CHECK and domain CHECK expressions (their
//! reads are the statement's, before its write), stored generated columns
//! (written with their inputs), and the checks of deferred foreign keys
//! (run at COMMIT). docs/sql-frontend.md, "Schema objects".

use super::*;
use crate::frontend::sql::ddl::HookKind;

/// Which check of a foreign key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FkCheck {
    /// The parent row of an inserted or updated referencing row.
    Parent,
    /// No referencing row left for a deleted (re-keyed) parent.
    OnDelete,
    OnUpdate,
}

/// Where a check runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum When {
    Now,
    Commit,
    /// Either, depending on the path: lowered at both places.
    Both,
}

/// How the transaction's `SET CONSTRAINTS` set a foreign key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FkMode {
    Schema,
    Deferred,
    Both,
}

/// Every `SET CONSTRAINTS` node in `nodes`, at any depth.
fn each_set_constraints(nodes: &[Node], f: &mut dyn FnMut(&Node)) {
    for n in nodes {
        match n {
            Node::SetConstraints { .. } => f(n),
            Node::If(bs) => bs.iter().for_each(|(_, b)| each_set_constraints(b, f)),
            Node::Loop { body, .. } | Node::Prefix(body) => each_set_constraints(body, f),
            Node::Block { body, handlers, .. } => {
                each_set_constraints(body, f);
                handlers
                    .iter()
                    .flatten()
                    .for_each(|h| each_set_constraints(h, f));
            }
            _ => {}
        }
    }
}

impl Lowerer<'_> {
    /// The reads of the functions that the schema's DEFAULT / CHECK /
    /// domain CHECK expressions of `rel` call, for the hooks `applies`
    /// selects, in `pre` (before the write). Each call is inlined like a
    /// call in the program (`per_row`: once per row of a statement that
    /// may write several, a loop), its arguments unknown values; errors point at
    /// the call in the schema file. Calls of built-ins that read nothing
    /// (`now()`, `nextval(…)`) add nothing.
    pub(super) fn hook_reads(
        &mut self,
        rel: RelId,
        per_row: bool,
        applies: &dyn Fn(HookKind) -> bool,
        pre: &mut Vec<Body>,
    ) -> Result<()> {
        let extras: &Extras = self.extras;
        let Some(file) = extras.file.clone() else {
            return Ok(());
        };
        for h in extras
            .hooks
            .iter()
            .filter(|h| h.rel == rel && applies(h.kind))
        {
            let name: Vec<String> = h
                .call
                .name
                .iter()
                .map(|p| format!("\"{}\"", p.replace('"', "\"\"")))
                .collect();
            let args = vec!["NULL"; h.call.nargs].join(", ");
            let snip = Snippet {
                text: format!("{}({args})", name.join(".")),
                offset: h.call.at,
                parsed: None,
            };
            let parsed = sqlparser::parser::Parser::new(&crate::frontend::sql::DIALECT)
                .try_with_sql(&snip.text)
                .and_then(|mut p| p.parse_expr());
            let Ok(Expr::Function(f)) = parsed else {
                return Err(
                    Diag::new("isolint cannot read this function call of the schema")
                        .at(&file, h.call.at, 1, "here"),
                );
            };
            // The inlined body's reads are this statement's; the audit of
            // the statement's own calls must not count them.
            let saved = (
                std::mem::replace(&mut self.file, file.clone()),
                self.inlined,
            );
            let r = self.call(&f, per_row, &snip, pre);
            (self.file, self.inlined) = saved;
            r?;
        }
        Ok(())
    }

    /// Exclusion constraints and partial or expression unique indexes of
    /// `rel`: an INSERT (`writes` None) or an UPDATE writing their columns
    /// succeeds only if no other row conflicts, so it observes the other
    /// rows' values of those columns: a predicate read before the write.
    pub(super) fn conflict_reads(
        &mut self,
        rel: RelId,
        writes: Option<&BTreeSet<usize>>,
        snip: &Snippet,
        pre: &mut Vec<Body>,
    ) {
        let checks: Vec<BTreeSet<usize>> = self
            .extras
            .conflict_checks
            .iter()
            .filter(|(r, cols)| {
                *r == rel && writes.is_none_or(|w| cols.iter().any(|c| w.contains(c)))
            })
            .map(|(_, cols)| cols.iter().copied().collect())
            .collect();
        for cols in checks {
            let q = self.new_statement(StmtType::PredSel, rel, snip);
            self.statements[q].pread = self.set(rel, &cols);
            self.statements[q].read = self.set(rel, &cols);
            if let Some(sql) = &mut self.statements[q].sql {
                *sql = format!("exclusion / partial unique check of: {sql}");
            }
            pre.push(Body::Stmt(q));
        }
    }

    /// Add to `writes` the stored generated columns of `rel` whose inputs
    /// it writes: PostgreSQL recomputes them in the same row version.
    pub(super) fn with_generated(&self, rel: RelId, writes: &mut BTreeSet<usize>) {
        for g in self.extras.generated.iter().filter(|g| g.rel == rel) {
            if g.inputs.iter().any(|i| writes.contains(i)) {
                writes.insert(g.column);
            }
        }
    }

    /// When PostgreSQL runs check `check` of foreign key `fi` in this
    /// transaction: its schema deferral, or as a `SET CONSTRAINTS … DEFERRED`
    /// of the program set it (`constraint_modes`).
    pub(super) fn when(&self, fi: usize, check: FkCheck) -> When {
        let d = self.extras.deferred.get(fi).copied().unwrap_or_default();
        let restrict = match check {
            FkCheck::Parent => false,
            FkCheck::OnDelete => d.restrict_on_delete,
            FkCheck::OnUpdate => d.restrict_on_update,
        };
        if restrict || !d.deferrable {
            return When::Now;
        }
        match self.fk_modes.get(fi) {
            Some(FkMode::Deferred) => When::Commit,
            Some(FkMode::Both) => When::Both,
            _ if d.initially_deferred => When::Commit,
            _ => When::Now,
        }
    }

    /// How the transaction's `SET CONSTRAINTS … DEFERRED` statements set
    /// each foreign key: one before every other statement of the
    /// transaction defers the checks of the statements after it; one
    /// anywhere else (a branch, a loop, after a statement) may or may not
    /// have run before a check, so the check is lowered at both places
    /// (more reads, sound). `SET CONSTRAINTS … IMMEDIATE` runs the pending
    /// checks where it stands: not modelled, an error.
    pub(super) fn constraint_modes(&self, nodes: &[Node]) -> Result<Vec<FkMode>> {
        let mut modes = vec![FkMode::Schema; self.schema.foreign_keys.len()];
        let mut leading = true;
        for n in nodes {
            match n {
                // A SET CONSTRAINTS before BEGIN ran in a transaction of
                // its own in psql: it may not hold for this one.
                Node::Begin { .. } => modes
                    .iter_mut()
                    .filter(|m| **m == FkMode::Deferred)
                    .for_each(|m| *m = FkMode::Both),
                Node::SetConstraints { .. } => self.set_mode(n, leading, &mut modes)?,
                n => {
                    leading = false;
                    let mut err = Ok(());
                    each_set_constraints(std::slice::from_ref(n), &mut |s| {
                        if err.is_ok() {
                            err = self.set_mode(s, false, &mut modes);
                        }
                    });
                    err?;
                }
            }
        }
        Ok(modes)
    }

    fn set_mode(&self, n: &Node, leading: bool, modes: &mut [FkMode]) -> Result<()> {
        let Node::SetConstraints {
            names,
            deferred,
            at,
        } = n
        else {
            return Ok(());
        };
        if !deferred {
            return Err(Diag::new("SET CONSTRAINTS … IMMEDIATE is not modelled")
                .help("PostgreSQL runs the pending checks of deferred constraints where it stands; declare the foreign key NOT DEFERRABLE or INITIALLY IMMEDIATE instead")
                .at(&self.file, *at, 3, "here"));
        }
        let fks = &self.schema.foreign_keys;
        // A name isolint does not know (an unnamed key's PostgreSQL name):
        // every foreign key may be meant.
        let all = names.as_ref().is_none_or(|v| {
            v.iter()
                .any(|n| !fks.iter().any(|f| f.name.eq_ignore_ascii_case(n)))
        });
        for (fi, f) in fks.iter().enumerate() {
            let named = all
                || names
                    .iter()
                    .flatten()
                    .any(|n| f.name.eq_ignore_ascii_case(n));
            if named {
                modes[fi] = if leading && modes[fi] != FkMode::Both {
                    FkMode::Deferred
                } else {
                    FkMode::Both
                };
            }
        }
        Ok(())
    }

    /// Queue check `q` for COMMIT.
    pub(super) fn defer(&mut self, q: usize) {
        let once = self.path.is_empty()
            && self.loops.is_empty()
            && self.prefix == 0
            && self.sub_depth == 0
            && self.inline_stack.is_empty();
        self.at_commit.push((q, once));
    }

    /// The transaction's body followed by the checks PostgreSQL runs at
    /// COMMIT. A check queued on one path, in a loop or in a function body
    /// may run any number of times: a loop (more executions than
    /// PostgreSQL's, so sound).
    pub(super) fn commit_checks(&mut self, body: Body) -> Body {
        if self.at_commit.is_empty() {
            return body;
        }
        let mut parts = vec![body];
        for (q, once) in std::mem::take(&mut self.at_commit) {
            parts.push(if once {
                Body::Stmt(q)
            } else {
                Body::Loop(Box::new(Body::Stmt(q)))
            });
        }
        Body::Seq(parts)
    }
}
