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

/// Where a program's deployed level comes from, weakest claim first: a
/// later source overrides an earlier one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LevelSource {
    /// Nothing says: PostgreSQL's default, READ COMMITTED.
    Default,
    /// The program's own `BEGIN ISOLATION LEVEL …` / `SET TRANSACTION
    /// ISOLATION LEVEL …` line.
    Declared { file: String, line: usize },
    /// `isolation:` in the workload's `isolint.yaml`.
    Manifest,
    /// `--levels` on the command line.
    Flag,
}

/// A level a program declares in its SQL, located.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declared {
    pub level: Level,
    pub file: String,
    pub line: usize,
}

/// The levels a team runs, one per program, with where each came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deployed {
    pub allocation: Allocation,
    pub sources: Vec<LevelSource>,
}

impl Deployed {
    /// PostgreSQL's default for every program, then each program's
    /// declared level, then `overrides` in order (manifest, then flag);
    /// `conflicts` receives (program, message) when an override replaces
    /// a different declared level.
    pub fn resolve(
        declared: &[Option<Declared>],
        overrides: &[(LevelSource, Vec<(usize, Level)>)],
        conflicts: &mut Vec<(usize, String)>,
    ) -> Deployed {
        let n = declared.len();
        let mut d = Deployed {
            allocation: Allocation::uniform(n, Level::ReadCommitted),
            sources: vec![LevelSource::Default; n],
        };
        for (p, decl) in declared.iter().enumerate() {
            if let Some(x) = decl {
                d.allocation.0[p] = x.level;
                d.sources[p] = LevelSource::Declared {
                    file: x.file.clone(),
                    line: x.line,
                };
            }
        }
        for (source, levels) in overrides {
            for &(p, level) in levels {
                if p >= n {
                    continue;
                }
                if let LevelSource::Declared { file, line } = &d.sources[p] {
                    if d.allocation.0[p] != level {
                        conflicts.push((
                            p,
                            format!(
                                "declares {} at {file}:{line}, overridden by {}",
                                d.allocation.0[p], level
                            ),
                        ));
                    }
                }
                d.allocation.0[p] = level;
                d.sources[p] = source.clone();
            }
        }
        d
    }

    /// Every program at READ COMMITTED by default: nothing deployed was
    /// stated.
    pub fn is_default(&self) -> bool {
        self.sources.iter().all(|s| *s == LevelSource::Default)
    }
}

/// Parse `Prog=read-committed,Other=serializable` (the `--levels` flag)
/// into (name, level) pairs; the error names the bad entry.
pub fn parse_levels(spec: &str) -> Result<Vec<(String, Level)>, String> {
    spec.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|entry| {
            let (name, level) = entry
                .split_once('=')
                .ok_or_else(|| format!("`{entry}`: expected PROGRAM=LEVEL"))?;
            let level = Level::parse(level).ok_or_else(|| {
                format!(
                    "`{entry}`: unknown level `{}` (read-committed, repeatable-read or serializable)",
                    level.trim()
                )
            })?;
            Ok((name.trim().to_string(), level))
        })
        .collect()
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

    #[test]
    fn deployed_levels_override_declared_ones_and_report_the_conflict() {
        let declared = vec![
            Some(Declared {
                level: Level::Serializable,
                file: "a.sql".into(),
                line: 1,
            }),
            None,
            Some(Declared {
                level: Level::RepeatableRead,
                file: "c.sql".into(),
                line: 2,
            }),
        ];
        let mut conflicts = vec![];
        let d = Deployed::resolve(
            &declared,
            &[(
                LevelSource::Flag,
                vec![(0, Level::ReadCommitted), (2, Level::RepeatableRead)],
            )],
            &mut conflicts,
        );
        assert_eq!(
            d.allocation.0,
            vec![
                Level::ReadCommitted,
                Level::ReadCommitted,
                Level::RepeatableRead
            ]
        );
        // Only program 0's override changes its declared level.
        assert_eq!(conflicts.len(), 1);
        assert_eq!(conflicts[0].0, 0);
        assert_eq!(d.sources[1], LevelSource::Default);
    }

    #[test]
    fn levels_flag_parses_and_names_the_bad_entry() {
        assert_eq!(
            parse_levels("A=read-committed, B = SERIALIZABLE"),
            Ok(vec![
                ("A".into(), Level::ReadCommitted),
                ("B".into(), Level::Serializable)
            ])
        );
        assert!(parse_levels("A").unwrap_err().contains("PROGRAM=LEVEL"));
        assert!(parse_levels("A=snapshot").unwrap_err().contains("snapshot"));
    }
}
