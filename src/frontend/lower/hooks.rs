//! What schema objects do on a statement's behalf (issue 21, class 1):
//! functions called by DEFAULT, CHECK and domain CHECK expressions (their
//! reads are the statement's, before its write), stored generated columns
//! (written with their inputs), and the checks of deferred foreign keys
//! (run at COMMIT). docs/sql-frontend.md, "Schema objects".

use super::*;
use crate::frontend::sql::ddl::HookKind;

impl Lowerer<'_> {
    /// The reads of the functions that the schema's DEFAULT / CHECK /
    /// domain CHECK expressions of `rel` call, for the hooks `applies`
    /// selects, in `pre` (before the write). Each call is inlined like a
    /// call in the program, its arguments unknown values; errors point at
    /// the call in the schema file. Calls of built-ins that read nothing
    /// (`now()`, `nextval(…)`) add nothing.
    pub(super) fn hook_reads(
        &mut self,
        rel: RelId,
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
            let r = self.call(&f, false, &snip, pre);
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

    /// Whether a check of foreign key `fi` runs at COMMIT.
    pub(super) fn deferred(
        &self,
        fi: usize,
        which: fn(&crate::frontend::sql::ddl::Deferral) -> bool,
    ) -> bool {
        self.extras.deferred.get(fi).is_some_and(which)
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
