//! The findings `check` reports, by rule id (docs/rules.md): one enum for
//! every format — SARIF's `ruleId` and rule list, GitHub's annotation
//! title, JSON's `rule` key, the text output's `[id]` tag — so a new
//! finding is a new variant, and no format can spell an id its own way.

use crate::analysis::robustness::Method;

/// A kind of finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleId {
    /// A type-II cycle (Algorithm 2): not robust.
    Type2Cycle,
    /// A type-I cycle (`--method type1`).
    Type1Cycle,
    /// A deployed level below the lowest robust allocation.
    LevelTooLow,
    /// A verified fix: promote key-based reads to `FOR UPDATE`.
    FixForUpdate,
}

impl RuleId {
    /// Every rule, in the order SARIF lists them.
    pub const ALL: [RuleId; 4] = [
        RuleId::Type2Cycle,
        RuleId::Type1Cycle,
        RuleId::LevelTooLow,
        RuleId::FixForUpdate,
    ];

    /// The rule of a dangerous cycle found by `method`. Snapshot
    /// isolation's dangerous structures are type-II cycles whose pair
    /// condition is the snapshot one (docs/allocation.md).
    pub fn cycle(method: Method) -> RuleId {
        match method {
            Method::TypeII | Method::Snapshot => RuleId::Type2Cycle,
            Method::TypeI => RuleId::Type1Cycle,
        }
    }

    /// The id (docs/rules.md's headings).
    pub fn id(self) -> &'static str {
        match self {
            RuleId::Type2Cycle => "mvrc-type2-cycle",
            RuleId::Type1Cycle => "mvrc-type1-cycle",
            RuleId::LevelTooLow => "isolation-level-too-low",
            RuleId::FixForUpdate => "mvrc-fix-for-update",
        }
    }

    /// `error` for findings, `note` for the fix (SARIF's `level`).
    pub fn level(self) -> &'static str {
        match self {
            RuleId::FixForUpdate => "note",
            _ => "error",
        }
    }

    /// One line on what the rule finds (SARIF `shortDescription`).
    pub fn short_description(self) -> &'static str {
        match self {
            RuleId::Type2Cycle => "Type-II cycle in the summary graph: not robust against multiversion READ COMMITTED (Algorithm 2)",
            RuleId::Type1Cycle => "Type-I cycle (cycle with a counterflow edge), Alomari and Fekete's test",
            RuleId::LevelTooLow => "This program's isolation level is below the lowest robust allocation (docs/allocation.md)",
            RuleId::FixForUpdate => "Promoting these key-based reads to SELECT ... FOR UPDATE makes the workload robust (re-verified)",
        }
    }

    /// Where to read more (SARIF `help`).
    pub fn help(self) -> String {
        match self {
            RuleId::LevelTooLow => "See docs/allocation.md in isolint: the lowest robust isolation level per program, and why.".to_string(),
            r => format!(
                "See docs/rules.md#{} in isolint: what the finding means and how to fix it.",
                r.id()
            ),
        }
    }
}

impl std::fmt::Display for RuleId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}
