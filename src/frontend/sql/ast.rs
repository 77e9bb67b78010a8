//! The program AST both procedural parsers produce and the lowering
//! walks once: statements and expressions parsed by sqlparser with their
//! spans, and the control structure around them.

use super::Snippet;

/// An SQL statement of a program, parsed once, with its text and place.
#[derive(Debug, Clone)]
pub struct Stmt {
    pub snip: Snippet,
    pub sql: sqlparser::ast::Statement,
    /// `INTO :a, :b` targets (cut out of the text before parsing).
    pub into: Vec<String>,
    /// The lock clause is FOR KEY SHARE, which orders no UPDATE.
    pub weak_lock: bool,
    /// PL/pgSQL `RETURN QUERY`: its rows are the routine's result. The
    /// lowering reads it as any statement; the replay's executor keeps
    /// the rows for a call of the routine in FROM (issue 23).
    pub returned: bool,
    /// What PostgreSQL's parse tree of the statement references (the
    /// gate, `super::gate`), for the lowering's audit.
    pub pg: super::gate::PgRefs,
}

/// An expression of the procedural code, outside any SQL statement
/// (condition, bound, argument, assigned value), parsed once, with its text
/// and place. (Was `Cond`, though most are no condition.)
#[derive(Debug, Clone)]
pub struct ProcExpr {
    pub snip: Snippet,
    pub expr: sqlparser::ast::Expr,
    /// What PostgreSQL's parse tree of `SELECT expr` references; None for
    /// expressions isolint builds (arguments bound to parameters).
    pub pg: Option<super::gate::PgRefs>,
}

/// A program as a tree of SQL statements and control structure.
#[derive(Debug, Clone)]
pub enum Node {
    Sql(Box<Stmt>),
    /// IF / ELSIF … / ELSE, and the CASE statement: `(condition, body)`,
    /// `None` for ELSE. Conditions are evaluated in order, each only when
    /// the ones before it were false.
    If(Vec<(Option<ProcExpr>, Vec<Node>)>),
    Loop {
        head: LoopHead,
        body: Vec<Node>,
        at: usize,
        /// `<<label>>` before the loop (PL/pgSQL).
        label: Option<String>,
    },
    /// EXIT [label] [WHEN cond] or CONTINUE [label] [WHEN cond].
    Exit {
        when: Option<ProcExpr>,
        at: usize,
        /// CONTINUE, not EXIT.
        is_continue: bool,
        label: Option<String>,
    },
    /// Expressions evaluated for their side effects on the path: the
    /// arguments of RAISE DEBUG … WARNING, ASSERT's condition and message.
    Eval(Vec<ProcExpr>),
    /// `:v := expr;` (or `v := expr;`).
    Assign {
        var: String,
        expr: ProcExpr,
    },
    /// `BEGIN [ISOLATION LEVEL …];`, `START TRANSACTION …;`,
    /// `SET TRANSACTION ISOLATION LEVEL …;`: the declared level, if any.
    Begin {
        level: Option<String>,
        at: usize,
    },
    /// `SET CONSTRAINTS { ALL | name, … } { DEFERRED | IMMEDIATE };`:
    /// `names` None for ALL (lower-case names otherwise).
    SetConstraints {
        names: Option<Vec<String>>,
        deferred: bool,
        at: usize,
    },
    /// COMMIT (or PostgreSQL's `END;`) at the top level: a transaction
    /// boundary. The lowering splits the program there.
    Commit {
        at: usize,
    },
    /// ROLLBACK or RAISE [EXCEPTION]: this path never commits.
    Abort,
    /// PL/pgSQL RETURN: the path leaves the routine (`plpgsql::hoist_returns`
    /// moves what follows into the other branches where it can).
    Return {
        at: usize,
    },
    /// A PL/pgSQL block `[<<label>>] [DECLARE …] BEGIN … [EXCEPTION WHEN …
    /// THEN …] END`: its declarations are assignments at the start of
    /// `body`; `handlers` make it a subtransaction.
    Block {
        label: Option<String>,
        body: Vec<Node>,
        handlers: Option<Vec<Vec<Node>>>,
        /// The body of a routine inlined from another routine file: the
        /// file its positions refer to (`None`: the enclosing one).
        file: Option<crate::model::error::SourceFile>,
    },
    /// A call of a workload routine (CALL, PERFORM f(…), `v := f(…)`),
    /// inlined by `plpgsql::inline_calls` before lowering.
    Call {
        call: ProcExpr,
        result: Option<String>,
        at: usize,
    },
    /// OPEN of a cursor: its query runs here, on the snapshot of OPEN, and
    /// may return no row.
    Open(Box<Stmt>),
    /// Made by the lowering only: the rolled-back prefix of an EXCEPTION
    /// block, every statement optional.
    Prefix(Vec<Node>),
}

/// How a loop starts and what it evaluates before its first iteration.
#[derive(Debug, Clone)]
pub enum LoopHead {
    /// LOOP … END LOOP.
    Plain,
    /// WHILE cond LOOP: cond is evaluated before every iteration and once
    /// more when the loop ends.
    While(ProcExpr),
    /// FOR v IN [REVERSE] lo .. hi [BY step]: the bounds are evaluated once.
    Range { var: String, bounds: Vec<ProcExpr> },
    /// FOR v IN SELECT …: the query runs once, before the first iteration.
    Query { var: String, query: Box<Stmt> },
    /// FOR v IN ARRAY expr (isolint's per-element loop).
    Array { var: String, expr: ProcExpr },
}

impl LoopHead {
    pub fn var(&self) -> Option<&str> {
        match self {
            LoopHead::Plain | LoopHead::While(_) => None,
            LoopHead::Range { var, .. }
            | LoopHead::Query { var, .. }
            | LoopHead::Array { var, .. } => Some(var),
        }
    }
}
