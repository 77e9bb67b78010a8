//! Isolation levels as PostgreSQL offers them, and an allocation of a
//! level to each program. The robustness test of the paper is for
//! [`Level::ReadCommitted`] (multiversion READ COMMITTED, "MVRC"); the
//! other levels are named here so that a verdict, a suggestion and a
//! deployed configuration speak one vocabulary.

use std::fmt;

/// A transaction isolation level, weakest first (the derived order is
/// the strength order: RC < RR (snapshot isolation) < SERIALIZABLE (SSI)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Level {
    /// Multiversion READ COMMITTED: each statement reads the last
    /// committed version at its start (Section 5.4).
    ReadCommitted,
    /// PostgreSQL's REPEATABLE READ: snapshot isolation.
    RepeatableRead,
    /// PostgreSQL's SERIALIZABLE: serializable snapshot isolation.
    Serializable,
}

impl Level {
    pub const ALL: [Level; 3] = [
        Level::ReadCommitted,
        Level::RepeatableRead,
        Level::Serializable,
    ];

    /// The SQL spelling, as in `SET TRANSACTION ISOLATION LEVEL …`.
    pub fn sql(self) -> &'static str {
        match self {
            Level::ReadCommitted => "READ COMMITTED",
            Level::RepeatableRead => "REPEATABLE READ",
            Level::Serializable => "SERIALIZABLE",
        }
    }

    /// The short name the literature uses for the level's semantics.
    pub fn abbreviation(self) -> &'static str {
        match self {
            Level::ReadCommitted => "MVRC",
            Level::RepeatableRead => "SI",
            Level::Serializable => "SSI",
        }
    }

    /// The command-line and JSON spelling (`read-committed`, …).
    pub fn key(self) -> &'static str {
        match self {
            Level::ReadCommitted => "read-committed",
            Level::RepeatableRead => "repeatable-read",
            Level::Serializable => "serializable",
        }
    }

    /// Parse the SQL spelling (any case, any spacing) or the key.
    pub fn parse(s: &str) -> Option<Level> {
        let norm: String = s
            .split(|c: char| c.is_whitespace() || c == '-' || c == '_')
            .filter(|w| !w.is_empty())
            .map(|w| w.to_ascii_lowercase())
            .collect::<Vec<_>>()
            .join(" ");
        Level::ALL
            .into_iter()
            .find(|l| l.sql().eq_ignore_ascii_case(&norm))
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.sql())
    }
}

/// A level per program (indexed like `Workload::programs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allocation(pub Vec<Level>);

impl Allocation {
    /// Every one of `n` programs at `level`.
    pub fn uniform(n: usize, level: Level) -> Allocation {
        Allocation(vec![level; n])
    }

    pub fn level(&self, program: usize) -> Level {
        self.0[program]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_parse_in_sql_and_key_spellings_and_order_by_strength() {
        assert_eq!(Level::parse("read committed"), Some(Level::ReadCommitted));
        assert_eq!(
            Level::parse("REPEATABLE  READ"),
            Some(Level::RepeatableRead)
        );
        assert_eq!(Level::parse("serializable"), Some(Level::Serializable));
        assert_eq!(Level::parse("read-committed"), Some(Level::ReadCommitted));
        assert_eq!(Level::parse("read uncommitted"), None);
        assert!(Level::ReadCommitted < Level::RepeatableRead);
        assert!(Level::RepeatableRead < Level::Serializable);
    }
}
