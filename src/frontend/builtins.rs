//! PostgreSQL 15's built-in functions, from its own catalogue (`pg_proc`):
//! name, volatility, kind, and what a call touches besides its arguments.
//! `scripts/pg_builtins.sh` writes `pg_builtins.tsv` from a throwaway
//! server; the classification of the few functions that reach user data
//! or have side effects is in that script, with its reasons.

use std::sync::OnceLock;

/// `pg_proc.provolatile`, as `CREATE FUNCTION … IMMUTABLE | STABLE |
/// VOLATILE` declares it. Ordered: a higher one may do more.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Volatility {
    /// Same result for the same arguments, reads no table.
    Immutable,
    /// Same result within a statement; may read tables (a user function
    /// that does reads them on the statement's snapshot).
    Stable,
    /// Anything: may write, may see a new snapshot per statement.
    Volatile,
}

impl Volatility {
    /// The keyword (any case): `immutable`, `stable`, `volatile`, or the
    /// letter `pg_proc.provolatile` stores (`i`, `s`, `v`).
    pub fn parse(word: &str) -> Option<Volatility> {
        match word.to_ascii_lowercase().as_str() {
            "immutable" | "i" => Some(Volatility::Immutable),
            "stable" | "s" => Some(Volatility::Stable),
            "volatile" | "v" => Some(Volatility::Volatile),
            _ => None,
        }
    }
}

/// What a call of a built-in touches besides its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Nothing: a value computed from the arguments (or the clock, the
    /// session, the catalogue).
    None,
    /// A sequence (`nextval`, `setval`, …): outside transactions, a fresh
    /// value, never a conflict.
    Sequence,
    /// Advisory locks: they only ever order more.
    Lock,
    /// `pg_notify`: a notification sent at commit.
    Notify,
    /// `set_config`: a setting of the session or transaction.
    Config,
    /// `txid_current` & co.: assigns the transaction an id.
    Xid,
    /// Runs a query given as text (`query_to_xml`, `ts_stat`).
    SqlText,
    /// Reads whole tables, schemas or a cursor named by an argument
    /// (`table_to_xml`, `cursor_to_xml`).
    Tables,
    /// Reads or writes large objects (`lo_*`, `loread`, `lowrite`).
    LargeObject,
    /// Logical decoding: other transactions' committed changes.
    LogicalDecoding,
    /// `dblink`: SQL run in another session.
    Remote,
}

impl Access {
    fn parse(s: &str) -> Option<Access> {
        Some(match s {
            "-" => Access::None,
            "sequence" => Access::Sequence,
            "lock" => Access::Lock,
            "notify" => Access::Notify,
            "config" => Access::Config,
            "xid" => Access::Xid,
            "sql-text" => Access::SqlText,
            "tables" => Access::Tables,
            "large-object" => Access::LargeObject,
            "logical-decoding" => Access::LogicalDecoding,
            "remote" => Access::Remote,
            _ => return None,
        })
    }

    /// Why isolint cannot model a call that reaches this, if it cannot: a
    /// call of such a function is a located error, never a pure value.
    pub fn rejection(self) -> Option<&'static str> {
        Some(match self {
            Access::SqlText => "runs the query it is given as text, which isolint cannot see: the tables it reads are not modelled",
            Access::Tables => "reads whole tables (or a cursor's rows) named by its arguments, which isolint does not model",
            Access::LargeObject => "reads or writes large objects (pg_largeobject), data isolint does not model",
            Access::LogicalDecoding => "reads the changes other transactions committed (logical decoding), outside any snapshot isolint models",
            Access::Remote => "runs SQL in another session (another transaction), which isolint does not see",
            _ => return None,
        })
    }
}

/// One built-in function name (its overloads merged).
#[derive(Debug, Clone, Copy)]
pub struct Builtin {
    pub name: &'static str,
    /// The most volatile of its overloads.
    pub volatility: Volatility,
    /// `pg_proc.prokind` letters of its overloads: `f` function, `a`
    /// aggregate, `w` window, `p` procedure.
    pub kinds: &'static str,
    pub access: Access,
}

impl Builtin {
    pub fn is_aggregate(&self) -> bool {
        self.kinds.contains('a')
    }
}

const TSV: &str = include_str!("pg_builtins.tsv");

fn table() -> &'static [Builtin] {
    static TABLE: OnceLock<Vec<Builtin>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut v: Vec<Builtin> = TSV
            .lines()
            .filter_map(|l| {
                let mut f = l.split('\t');
                Some(Builtin {
                    name: f.next()?,
                    volatility: Volatility::parse(f.next()?)?,
                    kinds: f.next()?,
                    access: Access::parse(f.next()?)?,
                })
            })
            .collect();
        v.sort_by_key(|b| b.name);
        v
    })
}

/// The built-in function `name` (lower case, unqualified), if PostgreSQL
/// 15 has one.
pub fn lookup(name: &str) -> Option<Builtin> {
    let t = table();
    t.binary_search_by_key(&name, |b| b.name).ok().map(|k| t[k])
}

/// The volatility of the built-in `name`, if it is one.
pub fn volatility(name: &str) -> Option<Volatility> {
    lookup(name).map(|b| b.volatility)
}

/// A built-in whose calls isolint models as values: it exists and reaches
/// no user data (the rejected ones say why in [`rejection`]).
pub fn modelled(name: &str) -> bool {
    lookup(name).is_some_and(|b| b.access.rejection().is_none())
}

/// Why a call of the built-in `name` cannot be modelled, if it cannot.
pub fn rejection(name: &str) -> Option<&'static str> {
    lookup(name).and_then(|b| b.access.rejection())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_of_the_catalogue_parses() {
        let lines = TSV.lines().filter(|l| !l.is_empty()).count();
        assert_eq!(table().len(), lines);
        assert!(lines > 2000, "PostgreSQL 15 has ~2600 function names");
    }

    #[test]
    fn catalogue_facts() {
        // Volatility as PostgreSQL 15's pg_proc states it.
        assert_eq!(volatility("now"), Some(Volatility::Stable));
        assert_eq!(volatility("random"), Some(Volatility::Volatile));
        assert_eq!(volatility("lower"), Some(Volatility::Immutable));
        assert!(lookup("count").is_some_and(|b| b.is_aggregate()));
        for f in [
            "current_schema",
            "pg_notify",
            "jsonb_typeof",
            "get_bit",
            "xpath",
        ] {
            assert!(modelled(f), "{f}");
        }
        for f in [
            "query_to_xml",
            "table_to_xml",
            "lo_get",
            "ts_stat",
            "dblink_exec",
        ] {
            assert!(rejection(f).is_some(), "{f}");
        }
        assert!(lookup("no_such_function").is_none());
    }
}
