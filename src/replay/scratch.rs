//! A scratch schema: `isolint_replay_<pid>_<n>`, created from the
//! workload's DDL, seeded, read back, and dropped (`DROP SCHEMA … CASCADE`)
//! when the [`Scratch`] is dropped — on success, on error and on panic
//! alike, so a replay leaves nothing behind on the user's server.

use std::sync::atomic::{AtomicUsize, Ordering};

use postgres::Client;

use super::server::Server;
use super::value::Val;
use crate::frontend::sql::lex::lexeme_end;
use crate::frontend::sql::procedural::split_statements;
use crate::model::error::{Diag, Result, SourceFile};

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// A table of the scratch schema as PostgreSQL created it.
#[derive(Debug, Clone)]
pub struct Table {
    /// The name as PostgreSQL stores it (folded to lower case unless the
    /// DDL quoted it).
    pub name: String,
    /// Columns in order: name, type oid, type name, NOT NULL, has a default.
    pub columns: Vec<Column>,
}

pub use super::value::{Column, Shape};

/// How far from its start a sequence is moved for a run (see
/// [`Scratch::reset_sequences`]), and how many numbers a run may draw.
const SEQ_BASE: i64 = 1_000_000_000;
const SEQ_SPAN: i64 = 100_000;

/// The rows of every table, each row as text values, sorted: the state to
/// compare between runs.
pub type State = Vec<(String, Vec<Vec<Val>>)>;

pub struct Scratch<'s> {
    pub server: &'s Server,
    pub name: String,
    admin: Client,
    pub tables: Vec<Table>,
    /// The numbers the scratch schema's sequences hand out during a run
    /// (inclusive ranges), set by [`Scratch::reset_sequences`].
    pub seq_ranges: Vec<(i64, i64)>,
    /// The schema DDL calls `random` (a default, a trigger, a function):
    /// floating-point values a run makes up are not compared.
    pub random_in_ddl: bool,
    /// The schemas the DDL created (`CREATE SCHEMA app`, pg_dump's
    /// schema-qualified objects): made for this scratch, on the search_path
    /// after the scratch schema, dropped with it.
    pub created: Vec<String>,
}

impl<'s> Scratch<'s> {
    /// Creates the schema and runs the DDL of `ddl` in it, statement by
    /// statement so an error points at the statement PostgreSQL rejected.
    pub fn create(server: &'s Server, ddl: &SourceFile) -> Result<Scratch<'s>> {
        let name = format!(
            "isolint_replay_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let mut admin = server.connect()?;
        admin
            .batch_execute(&format!("CREATE SCHEMA {name}; SET search_path TO {name}"))
            .map_err(|e| db_diag(&format!("cannot create the scratch schema {name}"), &e))?;
        // From here on, Drop removes the schema.
        let mut s = Scratch {
            server,
            name,
            admin,
            tables: vec![],
            seq_ranges: vec![],
            random_in_ddl: ddl.text.to_ascii_lowercase().contains("random("),
            created: vec![],
        };
        s.admin
            .batch_execute(SESSION)
            .map_err(|e| db_diag("cannot set the session's time zone and date style", &e))?;
        let text = blank_meta_commands(&ddl.text);
        for (from, to) in split_statements(&text) {
            let sql = match keep(&text[from..to]) {
                Keep::Skip => continue,
                Keep::Refuse(why) => {
                    let lead = text[from..to].len() - text[from..to].trim_start().len();
                    return Err(Diag::new(why)
                        .at(ddl, from + lead, text[from..to].trim().len(), "here")
                        .help("replay creates the workload's tables in one scratch schema and drops it afterwards; objects in other schemas would stay behind"));
                }
                Keep::Run(sql) => sql,
                Keep::Schema(schema) => {
                    let lead = text[from..to].len() - text[from..to].trim_start().len();
                    let here = (from + lead, text[from..to].trim().len());
                    s.create_schema(&schema, &text[from..to])
                        .map_err(|d| d.at(ddl, here.0, here.1, "here"))?;
                    continue;
                }
            };
            let sql = sql.as_str();
            // The DDL may not move the search_path (pg_dump empties it):
            // every statement runs in the scratch schema.
            let _ = s.admin.batch_execute(&s.search_path());
            if let Err(e) = s.admin.batch_execute(sql) {
                let lead = sql.len() - sql.trim_start().len();
                let (at, len) = match e.as_db_error().and_then(|d| d.position()) {
                    Some(postgres::error::ErrorPosition::Original(p)) => {
                        // A character position, 1-based, within `sql`.
                        let byte = sql
                            .char_indices()
                            .nth((*p as usize).saturating_sub(1))
                            .map_or(lead, |(b, _)| b);
                        (from + byte, 1)
                    }
                    _ => (from + lead, sql.trim().len()),
                };
                return Err(db_diag("PostgreSQL rejected the schema DDL", &e)
                    .at(ddl, at, len, "rejected here")
                    .help("isolint replays on a scratch schema made from this file: it must be DDL that PostgreSQL accepts"));
            }
        }
        s.tables = s.read_tables()?;
        s.probe_defaults()?;
        s.solve_domains();
        Ok(s)
    }

    /// `SET search_path TO` the scratch schema, then the schemas the DDL
    /// created (so unqualified names resolve as in the dump's database).
    fn search_path(&self) -> String {
        format!("SET search_path TO {}", self.schemas().join(", "))
    }

    /// The scratch schema and the schemas its DDL created, as identifiers.
    pub fn schemas(&self) -> Vec<String> {
        let mut v = vec![self.name.clone()];
        v.extend(self.created.iter().map(|n| ident(n)));
        v
    }

    /// The schema names to read tables, keys and sequences from.
    pub fn namespaces(&self) -> Vec<String> {
        let mut v = vec![self.name.clone()];
        v.extend(self.created.iter().cloned());
        v
    }

    /// Runs the DDL's `CREATE SCHEMA name` (issue 23: graphile-worker's
    /// dump qualifies every object with its schema). Only a schema that
    /// does not exist yet is created, so dropping it afterwards removes
    /// nothing of the server's own; one that exists is refused.
    fn create_schema(&mut self, schema: &str, sql: &str) -> Result<()> {
        let exists = self
            .admin
            .query_one(
                "SELECT count(*) FROM pg_namespace WHERE nspname = $1",
                &[&schema],
            )
            .map(|r| r.get::<_, i64>(0) > 0)
            .map_err(|e| db_diag("cannot read the server's schemas", &e))?;
        if exists {
            return Err(Diag::new(format!(
                "the schema DDL creates the schema `{schema}`, which already exists on this server"
            ))
            .help("replay creates the DDL's schemas for the replay and drops them afterwards; it never touches a schema it did not create: use --postgres-temp, or a database without this schema"));
        }
        // Recorded first: Drop removes it even if a later statement fails.
        self.created.push(schema.to_string());
        if let Err(e) = self.admin.batch_execute(sql) {
            self.created.pop();
            return Err(db_diag("PostgreSQL rejected the schema DDL", &e));
        }
        Ok(())
    }

    /// A new connection whose `search_path` is the scratch schema.
    pub fn connect(&self) -> Result<Client> {
        let mut c = self.server.connect()?;
        c.batch_execute(&format!("{}; {SESSION}", self.search_path()))
            .map_err(|e| db_diag("cannot set the search_path", &e))?;
        Ok(c)
    }

    /// The admin connection (search_path set), for seeding and reading.
    pub fn admin(&mut self) -> &mut Client {
        &mut self.admin
    }

    /// Columns whose default PostgreSQL cannot store (BenchBase
    /// wikipedia's `user_touched varchar(14) DEFAULT '\0\0…'`: 28
    /// characters, "value too long" on every insert that leaves it out)
    /// count as having none, so a seed row gets a made-up value there; so
    /// do unique columns with a default other than a sequence's.
    /// Each default is stored into a temporary column of the same type
    /// (assignment, as an INSERT does), in a transaction rolled back.
    fn probe_defaults(&mut self) -> Result<()> {
        let rows = self
            .admin
            .query(
                "SELECT c.relname::text, a.attname::text, format_type(a.atttypid, a.atttypmod),
                        pg_get_expr(d.adbin, d.adrelid),
                        EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid
                                AND i.indisunique AND a.attnum = ANY(i.indkey))
                 FROM pg_attrdef d JOIN pg_class c ON c.oid = d.adrelid
                 JOIN pg_namespace n ON n.oid = c.relnamespace
                 JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
                 WHERE n.nspname = ANY($1) AND c.relkind IN ('r', 'p') AND a.attgenerated = ''",
                &[&self.namespaces()],
            )
            .map_err(|e| db_diag("cannot read the scratch schema's defaults", &e))?;
        if rows.is_empty() {
            return Ok(());
        }
        self.admin
            .batch_execute("BEGIN")
            .map_err(|e| db_diag("cannot probe the defaults", &e))?;
        for r in rows {
            let (t, c, ty, expr): (String, String, String, String) =
                (r.get(0), r.get(1), r.get(2), r.get(3));
            // A constant default of a unique column (`user_name … DEFAULT
            // ''`, UNIQUE) collides as soon as two seed rows use it.
            let unique: bool = r.get(4);
            let ok = (!unique || expr.contains("nextval("))
                && self
                    .admin
                    .batch_execute(&format!(
                    "SAVEPOINT isolint_probe; CREATE TEMP TABLE isolint_default_probe (x {ty}); \
                     INSERT INTO isolint_default_probe VALUES (({expr}))"
                ))
                    .is_ok();
            let _ = self
                .admin
                .batch_execute("ROLLBACK TO SAVEPOINT isolint_probe");
            if !ok {
                let col = self
                    .tables
                    .iter_mut()
                    .filter(|x| x.name == t)
                    .flat_map(|x| x.columns.iter_mut())
                    .find(|x| x.name == c);
                if let Some(col) = col {
                    col.has_default = false;
                }
            }
        }
        self.admin
            .batch_execute("ROLLBACK")
            .map_err(|e| db_diag("cannot probe the defaults", &e))
    }

    /// The tables of the scratch schema: partitions and inheritance
    /// children left out (the model merges them into their root, whose
    /// rows they hold).
    fn read_tables(&mut self) -> Result<Vec<Table>> {
        let rows = self
            .admin
            .query(
                "SELECT c.relname::text, a.attname::text, a.atttypid::oid, format_type(a.atttypid, a.atttypmod), a.attnotnull, a.atthasdef,
                        a.attgenerated <> '', a.attidentity = 'a',
                        b.oid::oid, format_type(b.oid, CASE WHEN t.typtype = 'd' THEN t.typtypmod ELSE a.atttypmod END),
                        coalesce(e.oid, 0)::oid, coalesce(format_type(e.oid, a.atttypmod), ''),
                        coalesce((SELECT array_agg(l.enumlabel::text ORDER BY l.enumsortorder) FROM pg_enum l
                                  WHERE l.enumtypid = coalesce(e.oid, b.oid)), '{}')
                 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                 JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
                 JOIN pg_type t ON t.oid = a.atttypid
                 JOIN pg_type b ON b.oid = CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE t.oid END
                 LEFT JOIN pg_type e ON e.oid = b.typelem AND b.typcategory = 'A'
                 WHERE n.nspname = ANY($1) AND c.relkind IN ('r', 'p')
                   AND NOT EXISTS (SELECT 1 FROM pg_inherits i WHERE i.inhrelid = c.oid)
                 ORDER BY c.relname, a.attnum",
                &[&self.namespaces()],
            )
            .map_err(|e| db_diag("cannot read the scratch schema's tables", &e))?;
        let mut out: Vec<Table> = vec![];
        for r in rows {
            let (t, c): (String, String) = (r.get(0), r.get(1));
            let col = Column {
                name: c,
                oid: r.get(2),
                type_name: r.get(3),
                not_null: r.get(4),
                has_default: r.get(5),
                generated: r.get(6),
                identity_always: r.get(7),
                shape: Shape {
                    base: r.get(8),
                    base_name: r.get(9),
                    elem: r.get(10),
                    elem_name: r.get(11),
                    labels: r.get(12),
                    accepted: vec![],
                },
            };
            match out.last_mut() {
                Some(last) if last.name == t => last.columns.push(col),
                _ => out.push(Table {
                    name: t,
                    columns: vec![col],
                }),
            }
        }
        Ok(out)
    }

    /// The tables, each after the tables its foreign keys reference
    /// (seeding order); cycles and self-references are cut.
    pub fn parents_first(&self) -> Vec<String> {
        let mut edges: Vec<(String, String)> = vec![];
        if let Ok(rows) = self.server.connect().and_then(|mut c| {
            c.query(
                "SELECT k.relname::text, p.relname::text FROM pg_constraint f
                 JOIN pg_class k ON k.oid = f.conrelid JOIN pg_class p ON p.oid = f.confrelid
                 JOIN pg_namespace n ON n.oid = k.relnamespace
                 WHERE f.contype = 'f' AND n.nspname = ANY($1)",
                &[&self.namespaces()],
            )
            .map_err(|e| db_diag("cannot read the foreign keys", &e))
        }) {
            edges = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        }
        let mut depth: Vec<(String, usize)> =
            self.tables.iter().map(|t| (t.name.clone(), 0)).collect();
        let n = depth.len();
        for _ in 0..n {
            for (child, parent) in &edges {
                if child == parent {
                    continue;
                }
                let dp = depth
                    .iter()
                    .find(|(t, _)| t == parent)
                    .map_or(0, |(_, d)| *d);
                if let Some((_, dc)) = depth.iter_mut().find(|(t, _)| t == child) {
                    if *dc < dp + 1 {
                        *dc = (dp + 1).min(n);
                    }
                }
            }
        }
        depth.sort_by_key(|(_, d)| *d);
        depth.into_iter().map(|(t, _)| t).collect()
    }

    /// The table PostgreSQL made for relation `rel` of the model (names
    /// match as PostgreSQL folds them: exactly, else ignoring case).
    pub fn table(&self, rel: &str) -> Option<&Table> {
        let bare = rel.trim_matches('"');
        self.tables.iter().find(|t| t.name == bare).or_else(|| {
            self.tables
                .iter()
                .find(|t| t.name.eq_ignore_ascii_case(bare))
        })
    }

    /// Every table's rows, sorted (the final state of a run).
    pub fn state(&mut self) -> Result<State> {
        let mut out = vec![];
        for t in self.tables.clone() {
            // As text (PostgreSQL's output functions), typed as the
            // column: every type reads back, arrays and jsonb included.
            let cols: Vec<String> = t
                .columns
                .iter()
                .map(|c| format!("{}::text", ident(&c.name)))
                .collect();
            let rows = self
                .admin
                .query(
                    &format!("SELECT {} FROM {}", cols.join(", "), ident(&t.name)),
                    &[],
                )
                .map_err(|e| db_diag(&format!("cannot read back table {}", t.name), &e))?;
            let mut vals: Vec<Vec<Val>> = vec![];
            for r in &rows {
                let mut row = vec![];
                for (i, c) in t.columns.iter().enumerate() {
                    let text: Option<String> = r
                        .try_get(i)
                        .map_err(|e| Diag::new(format!("reading back {}: {e}", t.name)))?;
                    row.push(Val { text, oid: c.oid });
                }
                vals.push(row);
            }
            vals.sort();
            out.push((t.name.clone(), vals));
        }
        Ok(out)
    }
}

impl Scratch<'_> {
    /// For every column whose type is a domain with CHECK constraints:
    /// values it accepts, found by trying candidates on the server (`SELECT
    /// $1::text::<domain>` runs the CHECKs) — the base type's made-up
    /// values, then the literals of the constraints
    /// and their neighbours (`VALUE IN ('open', 'closed')`, `VALUE < -5`). A domain none
    /// is found for keeps the base type's values (PostgreSQL refusing the
    /// seed row then says why).
    fn solve_domains(&mut self) {
        let mut found: std::collections::HashMap<u32, Vec<String>> = Default::default();
        let mut tables = std::mem::take(&mut self.tables);
        for c in tables.iter_mut().flat_map(|t| t.columns.iter_mut()) {
            if c.shape.base == c.oid || c.shape.base == 0 || c.shape.elem != 0 {
                continue;
            }
            if let Some(a) = found.get(&c.oid) {
                c.shape.accepted = a.clone();
                continue;
            }
            let defs: Vec<String> = self
                .admin
                .query(
                    "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE contypid = $1 AND contype = 'c'",
                    &[&c.oid],
                )
                .map(|rows| rows.iter().map(|r| r.get(0)).collect())
                .unwrap_or_default();
            let mut accepted = vec![];
            if !defs.is_empty() {
                let base = Column::of_type(&c.name, c.shape.base, &c.shape.base_name);
                // Made-up values first: distinct and non-zero where the
                // CHECK allows them.
                let mut cands: Vec<String> = (1..=60)
                    .filter_map(|n| super::value::made_up(&base, n))
                    .collect();
                cands.extend(defs.iter().flat_map(|d| check_literals(d)));
                let sql = format!("SELECT ($1::text)::{}", c.type_name);
                for cand in cands {
                    if accepted.len() >= 40 {
                        break;
                    }
                    if !accepted.contains(&cand) && self.admin.query(&sql, &[&cand]).is_ok() {
                        accepted.push(cand);
                    }
                }
            }
            found.insert(c.oid, accepted.clone());
            c.shape.accepted = accepted;
        }
        self.tables = tables;
    }

    /// Puts every sequence of the scratch schema where each run starts
    /// it: far from the values isolint makes up (a positive sequence at
    /// min(10^9, max − span), a negative one mirrored), so that the
    /// numbers a run draws (`nextval`, `serial`, identity columns) are the
    /// same in every run and recognisable in [`Self::seq_ranges`]. A
    /// sequence too short for that restarts at its start and is not
    /// masked. Sequences are not transactional: which transaction drew
    /// which number is not an isolation anomaly.
    pub fn reset_sequences(&mut self) -> Result<()> {
        let rows = self
            .admin
            .query(
                "SELECT format('%I.%I', n.nspname, c.relname), s.seqstart, s.seqincrement, s.seqmin, s.seqmax
                 FROM pg_sequence s JOIN pg_class c ON c.oid = s.seqrelid
                 JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = ANY($1)",
                &[&self.namespaces()],
            )
            .map_err(|e| db_diag("cannot read the scratch schema's sequences", &e))?;
        let mut ranges = vec![];
        for r in rows {
            let (name, start, inc, min, max): (String, i64, i64, i64, i64) =
                (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4));
            let at = if inc > 0 {
                let base = SEQ_BASE.min(max.saturating_sub(SEQ_SPAN));
                (base > start.saturating_add(SEQ_SPAN)).then(|| {
                    ranges.push((base, base.saturating_add(SEQ_SPAN)));
                    base
                })
            } else {
                let base = (-SEQ_BASE).max(min.saturating_add(SEQ_SPAN));
                (base < start.saturating_sub(SEQ_SPAN)).then(|| {
                    ranges.push((base.saturating_sub(SEQ_SPAN), base));
                    base
                })
            };
            let at = at.unwrap_or(start);
            self.admin
                .query(
                    "SELECT setval(($1::text)::regclass, $2, false)",
                    &[&name, &at],
                )
                .map_err(|e| db_diag(&format!("cannot reset the sequence {name}"), &e))?;
        }
        self.seq_ranges = ranges;
        Ok(())
    }
}

/// The string and number literals of a constraint's definition, numbers
/// with their neighbours (x − 1, x + 1): candidates that meet `VALUE IN
/// (…)`, `VALUE > 0`, `VALUE BETWEEN 1 AND 5`.
fn check_literals(def: &str) -> Vec<String> {
    let b = def.as_bytes();
    let mut out = vec![];
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\'' {
            let mut s = String::new();
            i += 1;
            while i < b.len() {
                if b[i] == b'\'' && b.get(i + 1) == Some(&b'\'') {
                    s.push('\'');
                    i += 2;
                } else if b[i] == b'\'' {
                    break;
                } else {
                    let ch = def[i..].chars().next().unwrap_or(' ');
                    s.push(ch);
                    i += ch.len_utf8();
                }
            }
            // PostgreSQL prints a negative bound as `'-5'::integer`.
            if let Ok(x) = s.parse::<i64>() {
                out.extend([x + 1, x - 1].map(|v| v.to_string()));
            }
            out.push(s);
            i += 1;
        } else if b[i].is_ascii_digit()
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'))
        {
            let start = if i > 0 && b[i - 1] == b'-' { i - 1 } else { i };
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            if let Ok(x) = def[start..i].parse::<i64>() {
                out.extend([x, x + 1, x - 1].map(|v| v.to_string()));
            }
        } else {
            i += 1;
        }
    }
    out
}

/// Every connection's settings: the text of a timestamptz (what runs
/// compare) must not depend on the server's or the user's time zone.
const SESSION: &str = "SET TimeZone = 'UTC'; SET DateStyle = 'ISO, MDY'";

impl Drop for Scratch<'_> {
    fn drop(&mut self) {
        // A connection left in a failed transaction cannot run DDL.
        let _ = self.admin.batch_execute("ROLLBACK");
        let drop = format!(
            "DROP SCHEMA IF EXISTS {} CASCADE",
            self.schemas().join(", ")
        );
        if self.admin.batch_execute(&drop).is_err() {
            // The admin connection may be broken: try a fresh one.
            if let Ok(mut c) = self.server.connect() {
                let _ = c.batch_execute(&drop);
            }
        }
    }
}

/// psql meta-commands (`\restrict …` in pg_dump output) blanked out,
/// offsets kept: lines that start (after blanks) with `\` outside a
/// string, dollar quote or comment (a function body may hold such a line).
fn blank_meta_commands(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let (mut i, mut line_start) = (0, true);
    while i < b.len() {
        if line_start && b[i] == b'\\' {
            let e = text[i..].find('\n').map_or(b.len(), |k| i + k);
            out[i..e].fill(b' ');
            i = e;
            continue;
        }
        if let Some(e) = lexeme_end(text, i) {
            (i, line_start) = (e, false);
            continue;
        }
        line_start = b[i] == b'\n' || line_start && (b[i] == b' ' || b[i] == b'\t');
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_string())
}

enum Keep {
    Run(String),
    Skip,
    Refuse(String),
    /// `CREATE SCHEMA name`: created for the replay (see `create_schema`).
    Schema(String),
}

/// What to do with one DDL statement: session settings run as written
/// (pg_dump's `SET check_function_bodies = false` lets a function refer to
/// a table created after it; skipping it made PostgreSQL reject the
/// dump), except those that would move the search_path out of the scratch
/// schema or change the role (`SET search_path`, `set_config('search_path',
/// …)`, `SET ROLE`, `SET SESSION AUTHORIZATION`, `RESET ALL`,
/// `client_encoding`); ownership,
/// grants and comments are skipped (they say nothing about the data);
/// `CREATE SCHEMA name` is run for the replay, then dropped with the
/// scratch schema (`Scratch::create_schema`); `public.` qualifiers (pg_dump writes them) are blanked so the
/// objects land in the scratch schema, offsets kept.
fn keep(sql: &str) -> Keep {
    let words: Vec<String> = code_words(sql);
    let w = |i: usize| words.get(i).map_or("", String::as_str);
    let has = |x: &str| words.iter().any(|v| v == x);
    // client_encoding too: the client library speaks UTF-8 only.
    let moves_path = has("search_path")
        || has("client_encoding")
        || sql.to_ascii_lowercase().contains("'search_path'")
        || has("role")
        || has("authorization")
        || (w(0) == "reset" && w(1) == "all");
    let setting = matches!(w(0), "set" | "reset")
        || (w(0) == "select" && sql.to_ascii_lowercase().contains("set_config"));
    let skip = (setting && moves_path)
        || matches!(w(0), "grant" | "revoke" | "comment")
        || (w(0) == "alter" && words.windows(2).any(|p| p[0] == "owner" && p[1] == "to"));
    if skip {
        return Keep::Skip;
    }
    if w(0) == "create" && w(1) == "schema" {
        return match schema_name(sql) {
            Some(n) => Keep::Schema(n),
            None => Keep::Refuse(
                "the schema DDL creates a schema isolint cannot name (`CREATE SCHEMA AUTHORIZATION role`)".into(),
            ),
        };
    }
    Keep::Run(blank_public(sql))
}

/// The name `CREATE SCHEMA [IF NOT EXISTS] name …` creates, as PostgreSQL
/// folds it (PostgreSQL's own parse); `None` for `CREATE SCHEMA
/// AUTHORIZATION role` (named after a role) and anything else.
fn schema_name(sql: &str) -> Option<String> {
    use crate::frontend::sql::pg;
    use pg_query::protobuf::node::Node;
    let parsed = pg::parse(sql).ok()?;
    let stmt = parsed.tree.stmts.first()?.stmt.as_ref()?.node.as_ref()?;
    match stmt {
        Node::CreateSchemaStmt(c) if !c.schemaname.is_empty() => Some(c.schemaname.clone()),
        _ => None,
    }
}

/// The lower-case words of `sql` outside comments and quotes (as
/// PostgreSQL lexes them: `E'…'`, nested comments, dollar quotes).
fn code_words(sql: &str) -> Vec<String> {
    let mut out = vec![];
    let b = sql.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if let Some(e) = lexeme_end(sql, i) {
            i = e;
            continue;
        }
        if b[i].is_ascii_alphabetic() || b[i] == b'_' {
            let s = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(sql[s..i].to_ascii_lowercase());
        } else {
            i += 1;
        }
    }
    out
}

/// `public.x` and `"public".x` → `x` padded with blanks (outside string
/// literals and comments).
fn blank_public(sql: &str) -> String {
    let b = sql.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    while i < b.len() {
        let boundary =
            i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_' || b[i - 1] == b'.');
        let rest = &sql[i..];
        let len = if rest.len() >= 7
            && rest.is_char_boundary(7)
            && rest[..7].eq_ignore_ascii_case("public.")
        {
            7
        } else if rest.starts_with("\"public\".") {
            9
        } else {
            0
        };
        if boundary && len > 0 {
            out[i..i + len].fill(b' ');
            i += len;
        } else if let Some(e) = lexeme_end(sql, i) {
            i = e;
        } else {
            i += 1;
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| sql.to_string())
}

pub fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// An error from the database as a diagnostic: PostgreSQL's message, its
/// detail and hint.
pub fn db_diag(what: &str, e: &postgres::Error) -> Box<Diag> {
    match e.as_db_error() {
        Some(d) => {
            let mut m = format!("{what}: {}", d.message());
            if let Some(detail) = d.detail() {
                m.push_str(&format!(" ({detail})"));
            }
            let d2 = Diag::new(m);
            match d.hint() {
                Some(h) => d2.help(h.to_string()),
                None => d2,
            }
        }
        None => Diag::new(format!("{what}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::{blank_meta_commands, blank_public, code_words, keep, Keep};

    #[test]
    fn check_literals_of_a_constraint() {
        assert_eq!(
            super::check_literals("CHECK ((VALUE = ANY (ARRAY['open'::text, 'it''s'::text])))"),
            ["open", "it's"]
        );
        assert_eq!(
            super::check_literals("CHECK (((VALUE > 10) AND (VALUE < -3)))"),
            ["10", "11", "9", "-3", "-2", "-4"]
        );
    }

    #[test]
    fn pg_dump_statements() {
        assert!(matches!(
            keep("SELECT pg_catalog.set_config('search_path', '', false)"),
            Keep::Skip
        ));
        assert!(matches!(
            keep("-- c\nSET statement_timeout = 0"),
            Keep::Run(_)
        ));
        assert!(matches!(
            keep("SET check_function_bodies = false"),
            Keep::Run(_)
        ));
        assert!(matches!(keep("SET search_path = ''"), Keep::Skip));
        assert!(matches!(keep("SET SESSION AUTHORIZATION x"), Keep::Skip));
        assert!(matches!(
            keep("ALTER TABLE public.account OWNER TO postgres"),
            Keep::Skip
        ));
        assert!(matches!(keep("CREATE SCHEMA app"), Keep::Schema(n) if n == "app"));
        assert!(
            matches!(keep("CREATE SCHEMA IF NOT EXISTS \"App\""), Keep::Schema(n) if n == "App")
        );
        assert!(matches!(
            keep("CREATE SCHEMA AUTHORIZATION joe"),
            Keep::Refuse(_)
        ));
        assert_eq!(
            blank_public("REFERENCES public.account(id) DEFAULT 'public.x'"),
            "REFERENCES        account(id) DEFAULT 'public.x'"
        );
        assert_eq!(
            blank_public("\"public\".t, mypublic.t"),
            "         t, mypublic.t"
        );
        // An `E'…'` string with `\'` and a nested comment stay intact: the
        // scratch DDL must create what the schema file says.
        assert_eq!(
            blank_public("DEFAULT E'it\\'s public.x' /* /* */ public.y */, public.t"),
            "DEFAULT E'it\\'s public.x' /* /* */ public.y */,        t"
        );
        assert_eq!(code_words("x E'\\' set' $a$ grant $a$ y"), ["x", "y"]);
        assert_eq!(
            blank_meta_commands("\\restrict x\nSET a;"),
            "           \nSET a;"
        );
        // Inside a function body the line is the function's.
        let body =
            "CREATE FUNCTION f() RETURNS text LANGUAGE sql AS $$\n\\x$$;\n  \\unrestrict k\n";
        assert_eq!(
            blank_meta_commands(body),
            format!(
                "CREATE FUNCTION f() RETURNS text LANGUAGE sql AS $$\n\\x$$;\n{}\n",
                " ".repeat("  \\unrestrict k".len())
            )
        );
    }
}
