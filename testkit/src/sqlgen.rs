//! Random small workloads in isolint's input languages (issue 15): a
//! schema of 2–4 tables (primary keys, a UNIQUE column `u`, a column `c`
//! that a `CREATE UNIQUE INDEX` makes unique in about half the tables,
//! foreign keys with ON DELETE CASCADE, SET NULL or neither, `LANGUAGE
//! sql` functions of default, STABLE and VOLATILE volatility) and 2–3
//! programs of 1–5 items drawn from the catalogue of PostgreSQL features
//! (docs/postgres-features.md, issue 21), written as `.sql` programs
//! or, for about a third of the seeds, as PL/pgSQL routines. Programs take
//! the parameters `k`, `k2` (keys) and `x` (a value); the data and the
//! parameter values are the replay's (`replay::random`: a few rows per
//! table, parameters drawn from their keys, so instances conflict). Text
//! only: nothing here parses, reads files or runs SQL.
//!
//! The grammar is this file: a construct added to the front-end gets a
//! `Form` and a template here, and `tests/sqlgen.rs` checks that every
//! form appears in the fixed-seed batch.

use std::collections::BTreeSet;

pub use isolint::model::rng::Rng;

/// One construct of the front-end's input language.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Form {
    KeySelect,
    PredSelect,
    KeyUpdate,
    PredUpdate,
    KeyDelete,
    PredDelete,
    InsertValues,
    InsertSelect,
    OnConflictNothing,
    OnConflictUpdate,
    SubqueryWhere,
    SubquerySet,
    SubqueryValues,
    SubquerySelectList,
    SelectWithoutFrom,
    If,
    Elsif,
    Case,
    While,
    ForRange,
    ForQuery,
    ExitWhen,
    RaiseNotice,
    RaiseException,
    ForUpdate,
    ForShare,
    ForNoKeyUpdate,
    ForKeyShare,
    LockExtraConjunct,
    FunctionCall,
    Cte,
    CteDml,
    UpdateFrom,
    DeleteUsing,
    Assign,
    Cascade,
    /// The programs as PL/pgSQL routines (`CREATE FUNCTION … LANGUAGE
    /// plpgsql`), one per file, instead of `.sql` programs.
    PlpgsqlRoutine,
    CaseSimple,
    ContinueWhen,
    ForRangeQueryBounds,
    ForArray,
    RaiseDebug,
    RaiseLog,
    RaiseInfo,
    RaiseWarning,
    RaiseUsing,
    RaiseSqlstate,
    Assert,
    AssignQuery,
    GroupByHaving,
    JoinOn,
    Returning,
    OnConflictWhere,
    InsertWhereNotExists,
    SetNull,
    Commit,
    RoutineCall,
    /// `WITH w AS (UPDATE t … RETURNING …) SELECT … FROM u`: the SELECT
    /// reads the statement's snapshot, before the UPDATE's lock wait.
    CteUpdateOther,
    /// `SELECT … FROM t JOIN u … FOR UPDATE OF t` (or a comma join): only
    /// `t` is re-read after a lock wait.
    JoinForUpdateOf,
    /// A call of a `STABLE` `LANGUAGE sql` function that reads a table.
    StableFunctionCall,
    /// A call, once per row, of a `VOLATILE` `LANGUAGE sql` function that
    /// reads a table (fresh snapshot per statement of its body).
    VolatileFunctionCall,
    /// `ON CONFLICT (u) DO NOTHING` on a UNIQUE column that is not the key.
    OnConflictUniqueNothing,
    /// `ON CONFLICT (u) DO UPDATE`: the action is on the conflicting row.
    OnConflictUniqueUpdate,
    /// `ON CONFLICT DO NOTHING` without a target (any unique key).
    OnConflictNoTarget,
    /// `ON CONFLICT (c)` where `c` is unique by `CREATE UNIQUE INDEX`.
    OnConflictUniqueIndex,
    /// A plain INSERT giving a UNIQUE non-key column a value.
    InsertUniqueColumn,
    /// An UPDATE assigning a UNIQUE non-key column.
    UpdateUniqueColumn,
    /// `IF [NOT] FOUND` right after an UPDATE/DELETE (the program goes on
    /// when the row is missing: a predicate read of the key).
    FoundAfterWrite,
    /// `IF NOT FOUND THEN RAISE` / `IF v IS NULL THEN RAISE` right after a
    /// key-based read: the path with a missing row aborts.
    AbortIdiom,
    /// `RETURNING … INTO v` tested with `IS NULL` (issue 21, class 5).
    ReturningIntoNull,
    /// A PL/pgSQL block with an EXCEPTION handler whose body may fail (a
    /// duplicate key, a RAISE): the handler runs after the block's writes
    /// are rolled back (issue 21, class 4). PL/pgSQL routines only: the
    /// `.sql` dialect has no handlers.
    ExceptionBlock,
    /// `GET DIAGNOSTICS n = ROW_COUNT` after an UPDATE/DELETE, n tested
    /// (issue 21, class 5). PL/pgSQL routines only.
    GetDiagnostics,
    /// `kk ALIAS FOR $1` / `ALIAS FOR k`: the key parameter under another
    /// name (issue 21, class 6). PL/pgSQL routines only.
    AliasFor,
    /// An `E'…'` string with a backslash-escaped quote and a `;` in it
    /// (issue 21, class 7).
    EString,
    /// A nested block comment `/* … /* … */ …; */` before a statement.
    NestedComment,
    /// A column `DEFAULT` calling a `LANGUAGE sql` function that reads t0
    /// (issue 21, class 1): inserts read t0.
    DefaultCallsFunction,
    /// A table `CHECK` calling that function: inserts and updates read t0.
    CheckCallsFunction,
    /// `gen INT GENERATED ALWAYS AS (a + b) STORED`: written with a or b.
    GeneratedColumn,
    /// A foreign key `DEFERRABLE INITIALLY DEFERRED`: checked at COMMIT.
    DeferredForeignKey,
}

impl Form {
    pub const ALL: [Form; 79] = [
        Form::KeySelect,
        Form::PredSelect,
        Form::KeyUpdate,
        Form::PredUpdate,
        Form::KeyDelete,
        Form::PredDelete,
        Form::InsertValues,
        Form::InsertSelect,
        Form::OnConflictNothing,
        Form::OnConflictUpdate,
        Form::SubqueryWhere,
        Form::SubquerySet,
        Form::SubqueryValues,
        Form::SubquerySelectList,
        Form::SelectWithoutFrom,
        Form::If,
        Form::Elsif,
        Form::Case,
        Form::While,
        Form::ForRange,
        Form::ForQuery,
        Form::ExitWhen,
        Form::RaiseNotice,
        Form::RaiseException,
        Form::ForUpdate,
        Form::ForShare,
        Form::ForNoKeyUpdate,
        Form::ForKeyShare,
        Form::LockExtraConjunct,
        Form::FunctionCall,
        Form::Cte,
        Form::CteDml,
        Form::UpdateFrom,
        Form::DeleteUsing,
        Form::Assign,
        Form::Cascade,
        Form::PlpgsqlRoutine,
        Form::CaseSimple,
        Form::ContinueWhen,
        Form::ForRangeQueryBounds,
        Form::ForArray,
        Form::RaiseDebug,
        Form::RaiseLog,
        Form::RaiseInfo,
        Form::RaiseWarning,
        Form::RaiseUsing,
        Form::RaiseSqlstate,
        Form::Assert,
        Form::AssignQuery,
        Form::GroupByHaving,
        Form::JoinOn,
        Form::Returning,
        Form::OnConflictWhere,
        Form::InsertWhereNotExists,
        Form::SetNull,
        Form::Commit,
        Form::RoutineCall,
        Form::CteUpdateOther,
        Form::JoinForUpdateOf,
        Form::StableFunctionCall,
        Form::VolatileFunctionCall,
        Form::OnConflictUniqueNothing,
        Form::OnConflictUniqueUpdate,
        Form::OnConflictNoTarget,
        Form::OnConflictUniqueIndex,
        Form::InsertUniqueColumn,
        Form::UpdateUniqueColumn,
        Form::FoundAfterWrite,
        Form::AbortIdiom,
        Form::ReturningIntoNull,
        Form::ExceptionBlock,
        Form::GetDiagnostics,
        Form::AliasFor,
        Form::EString,
        Form::NestedComment,
        Form::DefaultCallsFunction,
        Form::CheckCallsFunction,
        Form::GeneratedColumn,
        Form::DeferredForeignKey,
    ];
}

/// A generated workload: texts and what they contain.
#[derive(Debug, Clone)]
pub struct SqlWorkload {
    pub seed: u64,
    /// `CREATE TABLE …` and `CREATE FUNCTION …`.
    pub schema: String,
    /// `(name, text)` of each program's file (`P0.sql`, …): the program
    /// itself, or a routine `p0` that is it.
    pub programs: Vec<(String, String)>,
    pub dialect: Dialect,
    /// Each program's top-level items (its text is their concatenation):
    /// what `shrink` removes.
    pub items: Vec<Vec<String>>,
    pub forms: BTreeSet<Form>,
}

/// The input language the programs are written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// isolint's `.sql` dialect: `:name` parameters and variables.
    Sql,
    /// One PL/pgSQL routine per file, taking the parameters as arguments.
    Plpgsql,
}

struct Table {
    name: String,
    /// The parent table's index, and what deleting a parent does.
    parent: Option<(usize, OnDelete)>,
    /// Column `c` is unique by a `CREATE UNIQUE INDEX` (otherwise a plain
    /// column).
    unique_index: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum OnDelete {
    Refuse,
    Cascade,
    SetNull,
}

struct Gen {
    rng: Rng,
    /// 0: one key-based write or insert per program; 1: a few key-based
    /// statements (locking reads included); 2: anything. Most random
    /// workloads of the general kind are not robust, and the check needs
    /// robust ones.
    profile: usize,
    tables: Vec<Table>,
    forms: BTreeSet<Form>,
    /// Variables assigned so far in the program being generated.
    vars: usize,
    depth: usize,
    dialect: Dialect,
}

/// The workload for `seed` (the same seed gives the same text).
pub fn workload(seed: u64) -> SqlWorkload {
    let mut rng = Rng::new(seed);
    let n = 2 + rng.below(3);
    let mut tables = vec![];
    for i in 0..n {
        let parent = (i > 0 && rng.chance(60)).then(|| {
            let p = rng.below(i);
            let action = *rng.pick(&[OnDelete::Refuse, OnDelete::Cascade, OnDelete::SetNull]);
            (p, action)
        });
        let unique_index = rng.chance(50);
        tables.push(Table {
            name: format!("t{i}"),
            parent,
            unique_index,
        });
    }
    let profile = match rng.below(10) {
        0..=2 => 0,
        3..=5 => 1,
        _ => 2,
    };
    // Drawn from its own stream, so a `.sql` workload's text does not
    // depend on whether routines exist.
    let dialect = if Rng::new(seed ^ 0x5151).chance(30) {
        Dialect::Plpgsql
    } else {
        Dialect::Sql
    };
    let mut forms = BTreeSet::new();
    if dialect == Dialect::Plpgsql {
        forms.insert(Form::PlpgsqlRoutine);
    }
    let mut g = Gen {
        rng,
        profile,
        tables,
        forms,
        vars: 0,
        depth: 0,
        dialect,
    };
    let schema = g.schema();
    let nprog = 2 + g.rng.below(2);
    let mut items = vec![];
    for _ in 0..nprog {
        g.vars = 0;
        let n = match g.profile {
            0 => 1,
            1 => 1 + g.rng.below(3),
            _ => 1 + g.rng.below(5),
        };
        let its = (0..n).map(|_| g.item()).collect::<Vec<_>>();
        items.push(match dialect {
            Dialect::Sql => its,
            Dialect::Plpgsql => its.iter().map(|i| unsigil(i)).collect(),
        });
    }
    SqlWorkload {
        seed,
        schema,
        programs: texts(&items, dialect),
        dialect,
        items,
        forms: g.forms,
    }
}

fn texts(items: &[Vec<String>], dialect: Dialect) -> Vec<(String, String)> {
    items
        .iter()
        .enumerate()
        .map(|(i, its)| {
            let body = its.concat();
            let text = match dialect {
                Dialect::Sql => body,
                Dialect::Plpgsql => routine(i, &body),
            };
            (format!("P{i}"), text)
        })
        .collect()
}

/// Program `i` as a PL/pgSQL routine: the parameters are its arguments,
/// the variables `v1`, … (as many as `body` uses) and the loop record `r`
/// are declared.
fn routine(i: usize, body: &str) -> String {
    let b = body.as_bytes();
    let mut vars = 0;
    for (at, _) in body.match_indices('v') {
        let word_start = at == 0 || !(b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_');
        let digits: String = body[at + 1..]
            .chars()
            .take_while(|c| c.is_ascii_digit())
            .collect();
        if word_start {
            if let Ok(n) = digits.parse::<usize>() {
                vars = vars.max(n);
            }
        }
    }
    let mut decl = String::new();
    for v in 1..=vars {
        decl += &format!("  v{v} BIGINT;\n");
    }
    // `kk` is the key parameter under another name (`Form::AliasFor`):
    // by position in even programs, by name in odd ones.
    if body.contains("kk") {
        decl += if i % 2 == 0 {
            "  kk ALIAS FOR $1;\n"
        } else {
            "  kk ALIAS FOR k;\n"
        };
    }
    // A routine the program calls (PERFORM, `:=`): the same text in every
    // file that calls it (a later definition replaces an earlier one).
    let helper = if body.contains("bump(") {
        "CREATE OR REPLACE FUNCTION bump(tid INT) RETURNS BIGINT LANGUAGE plpgsql AS $$\nBEGIN\nUPDATE t0 SET a = a + 1 WHERE id = tid;\nRETURN (SELECT a FROM t0 WHERE id = tid);\nEND;\n$$;\n"
    } else {
        ""
    };
    format!(
        "{helper}CREATE FUNCTION p{i}(k INT, k2 INT, x INT) RETURNS void LANGUAGE plpgsql AS $$\nDECLARE\n{decl}  r RECORD;\n  e INT;\nBEGIN\n{body}END;\n$$;\n"
    )
}

/// `.sql` text with `:name` written as `name` (PL/pgSQL's variables);
/// `::type` casts and `:=` stay.
fn unsigil(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut prev = ' ';
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        let next_is_name = chars.peek().is_some_and(|n| n.is_ascii_alphabetic());
        if c == ':' && prev != ':' && next_is_name {
            prev = c;
            continue;
        }
        out.push(c);
        prev = c;
    }
    out
}

impl SqlWorkload {
    /// The same workload with program `p`'s item `i` removed (`None`: the
    /// whole program), or `None` when that would leave nothing.
    pub fn without(&self, p: usize, i: Option<usize>) -> Option<SqlWorkload> {
        let mut items = self.items.clone();
        match i {
            None if items.len() > 1 && p < items.len() => {
                items.remove(p);
            }
            Some(i) if p < items.len() && i < items[p].len() && items[p].len() > 1 => {
                items[p].remove(i);
            }
            _ => return None,
        }
        let mut w = self.clone();
        w.programs = texts(&items, self.dialect);
        w.items = items;
        Some(w)
    }

    /// Greedy shrinking: drop programs, then items, while `fails` holds
    /// (each candidate is tried once per pass, until a pass changes
    /// nothing). `fails` decides validity too: a candidate the front-end
    /// rejects does not fail.
    pub fn shrink(&self, fails: &mut dyn FnMut(&SqlWorkload) -> bool) -> SqlWorkload {
        let mut cur = self.clone();
        loop {
            let mut changed = false;
            let mut p = 0;
            while p < cur.items.len() {
                match cur.without(p, None) {
                    Some(c) if fails(&c) => {
                        cur = c;
                        changed = true;
                    }
                    _ => p += 1,
                }
            }
            for p in 0..cur.items.len() {
                let mut i = 0;
                while i < cur.items[p].len() {
                    match cur.without(p, Some(i)) {
                        Some(c) if fails(&c) => {
                            cur = c;
                            changed = true;
                        }
                        _ => i += 1,
                    }
                }
            }
            if !changed {
                return cur;
            }
        }
    }
}

impl Gen {
    fn schema(&mut self) -> String {
        let mut out = String::new();
        for i in 0..self.tables.len() {
            let deferred = if self.rng.chance(35) {
                " DEFERRABLE INITIALLY DEFERRED"
            } else {
                ""
            };
            let fk = match self.tables[i].parent {
                Some((p, action)) => {
                    if !deferred.is_empty() {
                        self.forms.insert(Form::DeferredForeignKey);
                    }
                    format!(
                        ", p INT REFERENCES t{p}(id){}{deferred}",
                        match action {
                            OnDelete::Refuse => "",
                            OnDelete::Cascade => " ON DELETE CASCADE",
                            OnDelete::SetNull => " ON DELETE SET NULL",
                        }
                    )
                }
                None => String::new(),
            };
            // Schema objects that read or write for a statement (issue 21,
            // class 1); `cnt0` reads t0, so only later tables call it.
            let mut extra = String::new();
            if self.rng.chance(35) {
                self.forms.insert(Form::GeneratedColumn);
                extra += ", gen INT GENERATED ALWAYS AS (a + b) STORED";
            }
            if i > 0 && self.rng.chance(40) {
                if self.rng.chance(50) {
                    self.forms.insert(Form::DefaultCallsFunction);
                    extra += ", d BIGINT DEFAULT cnt0()";
                } else {
                    self.forms.insert(Form::CheckCallsFunction);
                    extra += ", CHECK (cnt0() >= 0)";
                }
            }
            let t = &self.tables[i];
            out += &format!(
                "CREATE TABLE {} (id INT PRIMARY KEY, a INT NOT NULL DEFAULT 0, b INT NOT NULL DEFAULT 0, u INT UNIQUE, c INT{fk}{extra});\n",
                t.name
            );
            if i == 0 {
                out += "CREATE FUNCTION cnt0() RETURNS BIGINT LANGUAGE sql STABLE AS $$ SELECT count(*) FROM t0 WHERE a >= 0 $$;\n";
            }
            if t.unique_index {
                out += &format!("CREATE UNIQUE INDEX {0}_c ON {0} (c);\n", t.name);
            }
        }
        // `sum_a` is VOLATILE by default; `cnt_s` and `cnt_v` read the last
        // table with a declared volatility (issue 21: where the body's reads
        // stand in the calling statement depends on it).
        let last = self.tables.len() - 1;
        out += "CREATE FUNCTION sum_a(g INT) RETURNS BIGINT LANGUAGE sql AS $$ SELECT coalesce(sum(a), 0) FROM t0 WHERE b = g $$;\n";
        out += &format!("CREATE FUNCTION cnt_s(g INT) RETURNS BIGINT LANGUAGE sql STABLE AS $$ SELECT count(*) FROM t{last} WHERE a > g $$;\n");
        out += &format!("CREATE FUNCTION cnt_v(g INT) RETURNS BIGINT LANGUAGE sql VOLATILE AS $$ SELECT coalesce(max(b), 0) FROM t{last} WHERE a >= g $$;\n");
        out
    }

    fn table(&mut self) -> String {
        let i = self.rng.below(self.tables.len());
        self.tables[i].name.clone()
    }

    fn new_var(&mut self) -> String {
        self.vars += 1;
        format!(":v{}", self.vars)
    }

    /// An earlier variable (NULL-safe), or a parameter.
    fn value(&mut self) -> String {
        if self.vars > 0 && self.rng.chance(50) {
            format!("coalesce(:v{}, 0)", 1 + self.rng.below(self.vars))
        } else {
            self.rng.pick(&[":x", ":k", "1"]).to_string()
        }
    }

    fn key(&mut self) -> &'static str {
        if self.rng.chance(50) {
            if self.dialect == Dialect::Plpgsql && self.rng.chance(30) {
                self.forms.insert(Form::AliasFor);
                return ":kk";
            }
            ":k"
        } else {
            ":k2"
        }
    }

    /// One item: a statement, or a control structure around items.
    fn item(&mut self) -> String {
        // One level of control structure: nested loops make Unfold≤2
        // explode (`replay::soundness::MAX_OCCURRENCES`).
        if self.profile == 2 && self.depth < 1 && self.rng.chance(30) {
            self.depth += 1;
            let s = self.control();
            self.depth -= 1;
            return s;
        }
        self.statement()
    }

    fn body(&mut self) -> String {
        let n = 1 + self.rng.below(2);
        (0..n).map(|_| self.item()).collect()
    }

    fn condition(&mut self) -> String {
        let t = self.table();
        let k = self.key();
        match self.rng.below(4) {
            0 => format!("(SELECT a FROM {t} WHERE id = {k}) > :x"),
            1 => format!("EXISTS (SELECT 1 FROM {t} WHERE b = :x)"),
            2 if self.vars > 0 => format!("coalesce(:v{}, 0) > 0", 1 + self.rng.below(self.vars)),
            _ => ":x > 0".into(),
        }
    }

    fn control(&mut self) -> String {
        // One draw picks the form; the families are functions of their own.
        let n = self.rng.below(26);
        match n {
            0 | 1 | 2 | 8 => self.branch(n),
            3 | 4 | 5 | 9 | 10 | 11 => self.looping(n),
            6 | 7 | 12 | 13 | 20 => self.raise(n),
            _ => self.other_control(n),
        }
    }

    /// IF/ELSIF/ELSE, searched and simple CASE.
    fn branch(&mut self, n: usize) -> String {
        match n {
            0 | 1 => {
                self.forms.insert(Form::If);
                let c = self.condition();
                let mut s = format!("IF {c} THEN\n{}", self.body());
                if self.rng.chance(40) {
                    self.forms.insert(Form::Elsif);
                    let c = self.condition();
                    s += &format!("ELSIF {c} THEN\n{}", self.body());
                }
                if self.rng.chance(60) {
                    s += &format!("ELSE\n{}", self.body());
                }
                s + "END IF;\n"
            }
            2 => {
                self.forms.insert(Form::Case);
                let c = self.condition();
                format!(
                    "CASE WHEN {c} THEN\n{}ELSE\n{}END CASE;\n",
                    self.body(),
                    self.body()
                )
            }
            _ => {
                self.forms.insert(Form::CaseSimple);
                format!(
                    "CASE :x WHEN 0 THEN\n{}WHEN 1 THEN\n{}ELSE\n{}END CASE;\n",
                    self.body(),
                    self.body(),
                    self.body()
                )
            }
        }
    }

    /// WHILE, FOR over a range, a query or an array, CONTINUE WHEN.
    fn looping(&mut self, n: usize) -> String {
        match n {
            3 => {
                self.forms.insert(Form::While);
                self.forms.insert(Form::Assign);
                let i = self.new_var();
                let mut s = format!("{i} := 0;\nWHILE {i} < 2 LOOP\n{}", self.body());
                s += &self.maybe_exit();
                s + &format!("{i} := {i} + 1;\nEND LOOP;\n")
            }
            4 => {
                self.forms.insert(Form::ForRange);
                let mut s = format!("FOR i IN 1..2 LOOP\n{}", self.body());
                s += &self.maybe_exit();
                s + "END LOOP;\n"
            }
            5 => {
                self.forms.insert(Form::ForQuery);
                let t = self.table();
                let mut s = format!(
                    "FOR r IN SELECT id FROM {t} WHERE b = :x LOOP\n{}",
                    self.body()
                );
                s += &self.maybe_exit();
                s + "END LOOP;\n"
            }
            9 => {
                self.forms.insert(Form::ForRange);
                self.forms.insert(Form::ContinueWhen);
                let c = self.condition();
                format!(
                    "FOR i IN 1..2 LOOP\n{}CONTINUE WHEN {c};\n{}END LOOP;\n",
                    self.body(),
                    self.body()
                )
            }
            10 => {
                self.forms.insert(Form::ForRangeQueryBounds);
                let t = self.table();
                format!(
                    "FOR i IN 1..(SELECT count(*) FROM {t} WHERE a > :x) BY 2 LOOP\n{}END LOOP;\n",
                    self.body()
                )
            }
            _ => {
                self.forms.insert(Form::ForArray);
                let t = self.table();
                let head = match self.dialect {
                    Dialect::Sql => "FOR e IN ARRAY",
                    Dialect::Plpgsql => "FOREACH e IN ARRAY",
                };
                // An empty array, not NULL: FOREACH refuses NULL.
                format!(
                    "{head} coalesce((SELECT array_agg(id) FROM {t} WHERE b = :x), '{{}}') LOOP\n{}END LOOP;\n",
                    self.body()
                )
            }
        }
    }

    /// RAISE at every level, SQLSTATE forms, ASSERT.
    fn raise(&mut self, n: usize) -> String {
        match n {
            6 => {
                self.forms.insert(Form::RaiseException);
                let c = self.condition();
                format!("IF {c} THEN\nRAISE EXCEPTION 'refused';\nEND IF;\n")
            }
            7 | 20 => {
                let (form, level) = *self.rng.pick(&[
                    (Form::RaiseDebug, "DEBUG"),
                    (Form::RaiseLog, "LOG"),
                    (Form::RaiseInfo, "INFO"),
                    (Form::RaiseNotice, "NOTICE"),
                    (Form::RaiseWarning, "WARNING"),
                ]);
                self.forms.insert(form);
                let t = self.table();
                let using = if self.rng.chance(40) {
                    self.forms.insert(Form::RaiseUsing);
                    let t2 = self.table();
                    format!(" USING HINT = (SELECT count(*) FROM {t2} WHERE b = :x)::text")
                } else {
                    String::new()
                };
                format!("RAISE {level} 'n %', (SELECT count(*) FROM {t} WHERE a > :x){using};\n")
            }
            12 => {
                self.forms.insert(Form::RaiseSqlstate);
                let c = self.condition();
                let raise = *self.rng.pick(&[
                    "RAISE SQLSTATE 'P0001'",
                    "RAISE 'refused'",
                    "RAISE check_violation",
                ]);
                format!("IF {c} THEN\n{raise};\nEND IF;\n")
            }
            _ => {
                self.forms.insert(Form::Assert);
                let t = self.table();
                format!("ASSERT (SELECT count(*) FROM {t} WHERE b = :x) >= 0, 'never';\n")
            }
        }
    }

    /// Assignments, COMMIT, routine calls, FOUND and ROW_COUNT idioms,
    /// EXCEPTION blocks, comments; else a plain statement.
    fn other_control(&mut self, n: usize) -> String {
        match n {
            14 => {
                self.forms.insert(Form::AssignQuery);
                self.forms.insert(Form::Assign);
                let t = self.table();
                let v = self.new_var();
                format!("{v} := (SELECT coalesce(sum(a), 0) FROM {t} WHERE b = :x);\n")
            }
            15 if self.dialect == Dialect::Sql => {
                // A top-level COMMIT splits the program into two
                // transactions (PL/pgSQL functions cannot commit).
                self.forms.insert(Form::Commit);
                format!("{}COMMIT;\n{}", self.statement(), self.statement())
            }
            16 | 25 if self.dialect == Dialect::Plpgsql => {
                self.forms.insert(Form::RoutineCall);
                let k = self.key();
                if self.rng.chance(50) {
                    format!("PERFORM bump({k});\n")
                } else {
                    self.forms.insert(Form::Assign);
                    let v = self.new_var();
                    format!("{v} := bump({k});\n")
                }
            }
            17 => {
                self.forms.insert(Form::FoundAfterWrite);
                let t = self.table();
                let k = self.key();
                let write = self.key_write(&t, k);
                let test = *self.rng.pick(&["NOT FOUND", "FOUND"]);
                format!("{write}IF {test} THEN\n{}END IF;\n", self.body())
            }
            18 => {
                self.forms.insert(Form::AbortIdiom);
                self.forms.insert(Form::KeySelect);
                let t = self.table();
                let k = self.key();
                let v = self.new_var();
                let test = if self.rng.chance(50) {
                    "NOT FOUND".to_string()
                } else {
                    format!("{v} IS NULL")
                };
                format!("SELECT a INTO {v} FROM {t} WHERE id = {k};\nIF {test} THEN\nRAISE EXCEPTION 'missing';\nEND IF;\n")
            }
            19 => {
                self.forms.insert(Form::ReturningIntoNull);
                self.forms.insert(Form::Returning);
                let t = self.table();
                let k = self.key();
                let v = self.new_var();
                format!(
                    "UPDATE {t} SET a = a + 1 WHERE id = {k} RETURNING a INTO {v};\nIF {v} IS NULL THEN\n{}END IF;\n",
                    self.body()
                )
            }
            15 | 21 if self.dialect == Dialect::Plpgsql => self.exception_block(),
            22 | 24 if self.dialect == Dialect::Plpgsql => {
                self.forms.insert(Form::GetDiagnostics);
                let t = self.table();
                let k = self.key();
                let write = self.key_write(&t, k);
                let n = self.new_var();
                // The abort idiom (n = 0 aborts) or a program that goes on.
                let then = if self.rng.chance(30) {
                    "RAISE EXCEPTION 'missing';\n".to_string()
                } else {
                    self.body()
                };
                format!("{write}GET DIAGNOSTICS {n} = ROW_COUNT;\nIF {n} = 0 THEN\n{then}END IF;\n")
            }
            23 => {
                self.forms.insert(Form::NestedComment);
                format!(
                    "/* skipped /* nested */ UPDATE t0 SET a = 0; */\n{}",
                    self.statement()
                )
            }
            _ => self.statement(),
        }
    }

    /// `BEGIN … EXCEPTION WHEN … THEN … END;` whose body may fail: a plain
    /// insert of a key that may exist, or a RAISE.
    fn exception_block(&mut self) -> String {
        self.forms.insert(Form::ExceptionBlock);
        let t = self.table();
        let mut body = self.body();
        if self.rng.chance(50) {
            self.forms.insert(Form::InsertValues);
            let (cols, vals) = self.insert_cols(&t);
            body += &format!("INSERT INTO {t} ({cols}) VALUES ({vals});\n");
        } else {
            let c = self.condition();
            body += &format!("IF {c} THEN\nRAISE EXCEPTION 'refused';\nEND IF;\n");
        }
        if self.rng.chance(50) {
            body += &self.item();
        }
        let handler = self.body();
        format!("BEGIN\n{body}EXCEPTION WHEN integrity_constraint_violation OR raise_exception THEN\n{handler}END;\n")
    }

    fn maybe_exit(&mut self) -> String {
        if !self.rng.chance(40) {
            return String::new();
        }
        self.forms.insert(Form::ExitWhen);
        let t = self.table();
        format!("EXIT WHEN (SELECT count(*) FROM {t}) > 2;\n")
    }

    /// A new primary key value: sometimes an existing row's, so inserts
    /// conflict.
    fn new_key(&mut self) -> String {
        self.rng.pick(&[":k + 3", ":k2 + 3", ":k"]).to_string()
    }

    /// Columns and values of an insert into `t` (the FK column when `t`
    /// has a parent: an existing parent most of the time).
    fn insert_cols(&mut self, t: &str) -> (String, String) {
        let has_parent = self
            .tables
            .iter()
            .find(|x| x.name == t)
            .is_some_and(|x| x.parent.is_some());
        let id = self.new_key();
        let v = self.value();
        if has_parent {
            let p = self.rng.pick(&["1", "2", ":k"]).to_string();
            ("id, a, b, p".into(), format!("{id}, {v}, :x, {p}"))
        } else {
            ("id, a, b".into(), format!("{id}, {v}, :x"))
        }
    }

    fn on_conflict(&mut self, t: &str) -> String {
        match self.rng.below(3) {
            0 => String::new(),
            1 => {
                self.forms.insert(Form::OnConflictNothing);
                " ON CONFLICT (id) DO NOTHING".into()
            }
            _ => {
                self.forms.insert(Form::OnConflictUpdate);
                format!(" ON CONFLICT (id) DO UPDATE SET a = {t}.a + 1")
            }
        }
    }

    fn statement(&mut self) -> String {
        let t = self.table();
        let t2 = self.table();
        let k = self.key();
        let choice = match self.profile {
            0 => *self.rng.pick(&[3, 4, 8, 9, 29]),
            1 => *self.rng.pick(&[0, 2, 3, 4, 8, 26, 27, 29]),
            _ => self.rng.below(32),
        };
        // One draw picks the statement; the families are functions of
        // their own (choice 20 and above 31: DELETE … USING).
        match choice {
            0..=9 => self.plain_statement(choice, &t, k),
            10..=19 => self.subquery_statement(choice, &t, &t2, k),
            _ => self.other_statement(choice, &t, &t2, k),
        }
    }

    /// Key and predicate reads, writes and inserts.
    fn plain_statement(&mut self, choice: usize, t: &str, k: &str) -> String {
        match choice {
            0 => {
                self.forms.insert(Form::KeySelect);
                let v = self.new_var();
                format!("SELECT a INTO {v} FROM {t} WHERE id = {k};\n")
            }
            1 => {
                self.forms.insert(Form::PredSelect);
                let v = self.new_var();
                let agg = self
                    .rng
                    .pick(&["count(*)", "coalesce(sum(a), 0)", "coalesce(max(b), 0)"])
                    .to_string();
                if self.rng.chance(25) {
                    // `E'\';'` is one string: a lexer that ends it at `\'`
                    // splits the statement at the `;`.
                    self.forms.insert(Form::EString);
                    return format!(
                        "SELECT {agg} INTO {v} FROM {t} WHERE b = :x AND length(E'\\';') = 2;\n"
                    );
                }
                format!("SELECT {agg} INTO {v} FROM {t} WHERE b = :x;\n")
            }
            2 => {
                let (form, lock) = *self.rng.pick(&[
                    (Form::ForUpdate, "FOR UPDATE"),
                    (Form::ForShare, "FOR SHARE"),
                    (Form::ForNoKeyUpdate, "FOR NO KEY UPDATE"),
                    (Form::ForKeyShare, "FOR KEY SHARE"),
                ]);
                self.forms.insert(Form::KeySelect);
                self.forms.insert(form);
                let extra = if self.rng.chance(30) {
                    self.forms.insert(Form::LockExtraConjunct);
                    " AND b >= :x"
                } else {
                    ""
                };
                let v = self.new_var();
                format!("SELECT a INTO {v} FROM {t} WHERE id = {k}{extra} {lock};\n")
            }
            3 | 4 => {
                self.forms.insert(Form::KeyUpdate);
                let v = self.value();
                let set = self
                    .rng
                    .pick(&["a = a + 1".to_string(), format!("b = {v}")])
                    .clone();
                format!("UPDATE {t} SET {set} WHERE id = {k};\n")
            }
            5 => {
                self.forms.insert(Form::PredUpdate);
                format!("UPDATE {t} SET a = a + 1 WHERE b = :x;\n")
            }
            6 => {
                self.forms.insert(Form::KeyDelete);
                self.note_cascade(t);
                format!("DELETE FROM {t} WHERE id = {k};\n")
            }
            7 => {
                self.forms.insert(Form::PredDelete);
                self.note_cascade(t);
                format!("DELETE FROM {t} WHERE a > :x + 1;\n")
            }
            _ => {
                self.forms.insert(Form::InsertValues);
                let (cols, vals) = self.insert_cols(t);
                let oc = self.on_conflict(t);
                format!("INSERT INTO {t} ({cols}) VALUES ({vals}){oc};\n")
            }
        }
    }

    /// Subqueries, CTEs, INSERT … SELECT, UPDATE … FROM.
    fn subquery_statement(&mut self, choice: usize, t: &str, t2: &str, k: &str) -> String {
        match choice {
            10 => {
                self.forms.insert(Form::InsertSelect);
                let oc = self.on_conflict(t);
                if self
                    .tables
                    .iter()
                    .any(|x| x.name == t && x.parent.is_some())
                {
                    format!("INSERT INTO {t} (id, a, b, p) SELECT id + 3, a, b, 1 FROM {t2} WHERE id = {k}{oc};\n")
                } else {
                    format!("INSERT INTO {t} (id, a, b) SELECT id + 3, a, b FROM {t2} WHERE id = {k}{oc};\n")
                }
            }
            11 => {
                self.forms.insert(Form::SubqueryWhere);
                format!("UPDATE {t} SET a = a + 1 WHERE id = (SELECT min(id) FROM {t2} WHERE b = :x);\n")
            }
            12 => {
                self.forms.insert(Form::SubquerySet);
                format!("UPDATE {t} SET a = (SELECT coalesce(max(a), 0) FROM {t2}) + 1 WHERE id = {k};\n")
            }
            13 => {
                self.forms.insert(Form::SubqueryValues);
                self.forms.insert(Form::InsertValues);
                let (cols, vals) = self.insert_cols(t);
                let vals = vals.replacen(", ", &format!(", (SELECT count(*) FROM {t2}) + "), 1);
                let oc = self.on_conflict(t);
                format!("INSERT INTO {t} ({cols}) VALUES ({vals}){oc};\n")
            }
            14 => {
                self.forms.insert(Form::SubquerySelectList);
                let v = self.new_var();
                format!("SELECT a + (SELECT count(*) FROM {t2} WHERE a > :x) INTO {v} FROM {t} WHERE id = {k};\n")
            }
            15 => {
                self.forms.insert(Form::SelectWithoutFrom);
                let v = self.new_var();
                if self.rng.chance(50) {
                    format!("SELECT (SELECT b FROM {t} WHERE id = {k}) INTO {v};\n")
                } else {
                    // A boolean does not assign to a PL/pgSQL BIGINT.
                    format!("SELECT (EXISTS (SELECT 1 FROM {t} WHERE a = :x))::int INTO {v};\n")
                }
            }
            16 => {
                self.forms.insert(Form::FunctionCall);
                format!("UPDATE {t} SET a = sum_a(:x)::int WHERE id = {k};\n")
            }
            17 => {
                self.forms.insert(Form::Cte);
                format!("WITH c AS (SELECT a FROM {t2} WHERE id = {k})\nUPDATE {t} SET a = coalesce((SELECT a FROM c), 0) + 1 WHERE id = {k};\n")
            }
            18 => {
                self.forms.insert(Form::CteDml);
                let oc = if self
                    .tables
                    .iter()
                    .any(|x| x.name == t2 && x.parent.is_some())
                {
                    return format!("WITH w AS (UPDATE {t} SET a = a + 1 WHERE id = {k} RETURNING id, a)\nUPDATE {t2} SET b = coalesce((SELECT a FROM w), 0) WHERE id = {k};\n");
                } else {
                    " ON CONFLICT (id) DO NOTHING"
                };
                format!("WITH w AS (UPDATE {t} SET a = a + 1 WHERE id = {k} RETURNING id, a)\nINSERT INTO {t2} (id, a, b) SELECT id + 3, a, 0 FROM w{oc};\n")
            }
            _ => {
                self.forms.insert(Form::UpdateFrom);
                format!(
                    "UPDATE {t} SET a = s.a + 1 FROM {t2} s WHERE {t}.id = s.id AND s.b = :x;\n"
                )
            }
        }
    }

    /// GROUP BY, joins, RETURNING, ON CONFLICT, functions, UNIQUE columns, DELETE … USING.
    fn other_statement(&mut self, choice: usize, t: &str, t2: &str, k: &str) -> String {
        match choice {
            21 => {
                self.forms.insert(Form::GroupByHaving);
                let v = self.new_var();
                format!("SELECT coalesce(max(b), 0) INTO {v} FROM {t} WHERE a >= 0 GROUP BY b HAVING count(*) > (SELECT count(*) FROM {t2} WHERE a > :x) ORDER BY 1;\n")
            }
            22 => {
                self.forms.insert(Form::JoinOn);
                let v = self.new_var();
                format!("SELECT s.a INTO {v} FROM {t} s JOIN {t2} q ON q.id = s.id AND q.b <= (SELECT count(*) FROM {t2}) WHERE s.id = {k};\n")
            }
            23 => {
                self.forms.insert(Form::KeyUpdate);
                self.forms.insert(Form::Returning);
                let v = self.new_var();
                format!("UPDATE {t} SET a = a + 1 WHERE id = {k} RETURNING a + (SELECT count(*) FROM {t2}) INTO {v};\n")
            }
            24 => {
                self.forms.insert(Form::InsertValues);
                self.forms.insert(Form::OnConflictWhere);
                let (cols, vals) = self.insert_cols(t);
                format!("INSERT INTO {t} ({cols}) VALUES ({vals}) ON CONFLICT (id) DO UPDATE SET a = {t}.a + 1 WHERE {t}.b < (SELECT count(*) FROM {t2}) + 1;\n")
            }
            25 => {
                self.forms.insert(Form::InsertWhereNotExists);
                let (cols, vals) = self.insert_cols(t);
                let id = vals.split(", ").next().unwrap_or(":k").to_string();
                format!("INSERT INTO {t} ({cols}) SELECT {vals} WHERE NOT EXISTS (SELECT 1 FROM {t} WHERE id = {id});\n")
            }
            26 => {
                self.forms.insert(Form::CteUpdateOther);
                let v = self.new_var();
                let sel = if self.rng.chance(50) {
                    format!("SELECT s.b + coalesce((SELECT max(a) FROM w), 0) INTO {v} FROM {t2} s WHERE s.id = {k}")
                } else {
                    format!("SELECT count(*) INTO {v} FROM {t2} WHERE b = :x")
                };
                format!("WITH w AS (UPDATE {t} SET a = a + 1 WHERE id = {k} RETURNING a)\n{sel};\n")
            }
            27 => {
                self.forms.insert(Form::JoinForUpdateOf);
                let v = self.new_var();
                let (of, lock) = *self.rng.pick(&[
                    ("s", "FOR UPDATE"),
                    ("s", "FOR NO KEY UPDATE"),
                    ("q", "FOR UPDATE"),
                    ("s", "FOR SHARE"),
                ]);
                if self.rng.chance(50) {
                    format!("SELECT s.a INTO {v} FROM {t} s JOIN {t2} q ON q.id = s.id WHERE s.id = {k} AND q.b >= 0 {lock} OF {of};\n")
                } else {
                    format!("SELECT q.a INTO {v} FROM {t} s, {t2} q WHERE q.id = s.id AND s.id = {k} {lock} OF {of};\n")
                }
            }
            28 => {
                let (form, f) = *self.rng.pick(&[
                    (Form::StableFunctionCall, "cnt_s"),
                    (Form::VolatileFunctionCall, "cnt_v"),
                ]);
                self.forms.insert(form);
                match self.rng.below(3) {
                    0 => format!("UPDATE {t} SET a = {f}(:x)::int WHERE id = {k};\n"),
                    1 => {
                        let v = self.new_var();
                        format!(
                            "SELECT coalesce(sum(a + {f}(b)), 0) INTO {v} FROM {t} WHERE b = :x;\n"
                        )
                    }
                    _ => format!("UPDATE {t} SET b = {f}(a)::int WHERE id = {k};\n"),
                }
            }
            29 => self.upsert_unique(t),
            30 => {
                self.forms.insert(Form::InsertValues);
                self.forms.insert(Form::InsertUniqueColumn);
                let (cols, vals) = self.insert_cols(t);
                let u = self.unique_value();
                format!("INSERT INTO {t} ({cols}, u) VALUES ({vals}, {u});\n")
            }
            31 => {
                self.forms.insert(Form::UpdateUniqueColumn);
                let u = self.unique_value();
                let col = if self.unique_index(t) && self.rng.chance(50) {
                    "c"
                } else {
                    "u"
                };
                format!("UPDATE {t} SET {col} = {u} WHERE id = {k};\n")
            }
            _ => {
                self.forms.insert(Form::DeleteUsing);
                self.note_cascade(t);
                format!("DELETE FROM {t} USING {t2} s WHERE {t}.id = s.id AND s.a > :x + 1;\n")
            }
        }
    }

    /// A value for a UNIQUE column: often an existing row's (the seed rows
    /// have `u = c = id`), so inserts conflict on it.
    fn unique_value(&mut self) -> String {
        self.rng.pick(&[":k", ":k2", ":k + 3", ":x"]).to_string()
    }

    fn unique_index(&self, t: &str) -> bool {
        self.tables.iter().any(|x| x.name == t && x.unique_index)
    }

    /// An upsert whose arbiter is a UNIQUE column that is not the key (issue
    /// 21, class 3): `ON CONFLICT (u)`, the unique index's `(c)`, or no
    /// target (any unique key).
    fn upsert_unique(&mut self, t: &str) -> String {
        self.forms.insert(Form::InsertValues);
        let (cols, vals) = self.insert_cols(t);
        let u = self.unique_value();
        let target = match self.rng.below(4) {
            0 => {
                self.forms.insert(Form::OnConflictNoTarget);
                self.forms.insert(Form::InsertUniqueColumn);
                return format!(
                    "INSERT INTO {t} ({cols}, u) VALUES ({vals}, {u}) ON CONFLICT DO NOTHING;\n"
                );
            }
            1 if self.unique_index(t) => {
                self.forms.insert(Form::OnConflictUniqueIndex);
                "c"
            }
            _ => "u",
        };
        let action = if self.rng.chance(50) {
            self.forms.insert(Form::OnConflictUniqueUpdate);
            format!("DO UPDATE SET a = {t}.a + 1")
        } else {
            self.forms.insert(Form::OnConflictUniqueNothing);
            "DO NOTHING".to_string()
        };
        format!("INSERT INTO {t} ({cols}, {target}) VALUES ({vals}, {u}) ON CONFLICT ({target}) {action};\n")
    }

    /// A delete of a table some child references with ON DELETE CASCADE
    /// or SET NULL.
    /// A key-based write that may match no row (the FOUND and ROW_COUNT
    /// forms test it): an UPDATE, or a DELETE with its cascades noted.
    fn key_write(&mut self, t: &str, k: &str) -> String {
        if self.rng.chance(70) {
            format!("UPDATE {t} SET a = a + 1 WHERE id = {k};\n")
        } else {
            self.note_cascade(t);
            format!("DELETE FROM {t} WHERE id = {k};\n")
        }
    }

    fn note_cascade(&mut self, t: &str) {
        let Some(i) = self.tables.iter().position(|x| x.name == t) else {
            return;
        };
        for x in &self.tables {
            match x.parent {
                Some((p, OnDelete::Cascade)) if p == i => {
                    self.forms.insert(Form::Cascade);
                }
                Some((p, OnDelete::SetNull)) if p == i => {
                    self.forms.insert(Form::SetNull);
                }
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_text() {
        let a = workload(7);
        let b = workload(7);
        assert_eq!(a.schema, b.schema);
        assert_eq!(a.programs, b.programs);
        assert!((2..=3).contains(&a.programs.len()));
    }

    /// Shrinking keeps what the predicate needs and nothing more: with
    /// "some program has a DELETE", one program of one DELETE item is left
    /// (a seed whose workload has a top-level DELETE item).
    #[test]
    fn shrink_to_the_needed_item() {
        let has_delete = |w: &SqlWorkload| w.programs.iter().any(|(_, t)| t.contains("DELETE"));
        let seed = (0..200)
            .find(|&s| {
                workload(s)
                    .items
                    .iter()
                    .flatten()
                    .any(|i| i.starts_with("DELETE"))
            })
            .expect("a seed with a DELETE item");
        let w = workload(seed);
        let small = w.shrink(&mut |c| has_delete(c));
        assert_eq!(small.items.len(), 1, "{:?}", small.items);
        assert_eq!(small.items[0].len(), 1, "{:?}", small.items);
        assert!(has_delete(&small));
    }
}
