//! The analysis settings of Section 7.2: dependencies on attributes or on
//! whole tuples, with or without foreign-key constraints, plus isolint's
//! same-tuple constraints. A value type; it decides nothing itself.

/// Attribute or tuple granularity of dependencies (Section 7.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Granularity {
    Attribute,
    Tuple,
}

/// The analysis settings: the paper's four ('attr dep', 'tpl dep', each
/// with or without '+ FK'), plus isolint's same-tuple constraints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Settings {
    pub granularity: Granularity,
    /// Use foreign-key constraints `q_j = f(q_i)` in CDEPCONDS.
    pub foreign_keys: bool,
    /// Use same-tuple constraints `q_k = id(q_i)` (not in the paper).
    pub same_tuple: bool,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            granularity: Granularity::Attribute,
            foreign_keys: true,
            same_tuple: true,
        }
    }
}

impl Settings {
    /// The paper's four settings in the row order of Figures 6 and 7.
    pub fn paper_rows(same_tuple: bool) -> [Settings; 4] {
        let s = |granularity, foreign_keys| Settings {
            granularity,
            foreign_keys,
            same_tuple,
        };
        [
            s(Granularity::Tuple, false),
            s(Granularity::Attribute, false),
            s(Granularity::Tuple, true),
            s(Granularity::Attribute, true),
        ]
    }

    /// The paper's row label, e.g. `attr dep + FK`.
    pub fn label(&self) -> String {
        let g = match self.granularity {
            Granularity::Attribute => "attr dep",
            Granularity::Tuple => "tpl dep",
        };
        let fk = if self.foreign_keys { " + FK" } else { "" };
        format!("{g}{fk}")
    }
}
