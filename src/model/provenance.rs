//! Where a BTP statement's tuple comes from: for each statement, the
//! columns it pins (WHERE equalities, INSERT VALUES, key lookups) and to
//! which symbolic values — program parameters, literals, columns of
//! tuples earlier statements touched. The BTP abstraction (Section 5)
//! forgets these values; a counterexample schedule needs them back to
//! instantiate programs with concrete parameters (issue 11).
//!
//! Produced by the SQL front-end; empty for BTP YAML, which has no values.

/// A symbolic value, as the front-end's lowering tracks it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Value {
    /// A program parameter (`:name`, `$1`) never assigned before.
    Param(String),
    /// A literal, as written (`42`, `'open'`).
    Literal(String),
    /// A value the lowering does not follow (an expression, a value read
    /// by a predicate-based statement, a loop variable). Equal numbers
    /// within one program are equal values.
    Unknown(usize),
    /// Column `attr` of the tuple statement `stmt` (same program) touches.
    Column { stmt: usize, attr: usize },
    /// Element `index` of array `array`.
    Element {
        array: Box<Value>,
        index: Box<Value>,
    },
}

/// The columns one statement pins, by attribute index, in ascending order.
pub type Pins = Vec<(usize, Value)>;

/// Pins per program and statement, indexed like `Workload::programs` and
/// `Program::statements`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Provenance {
    pub programs: Vec<Vec<Pins>>,
}

impl Provenance {
    /// What statement `stmt` of program `program` pins (nothing when the
    /// workload came without provenance).
    pub fn pins(&self, program: usize, stmt: usize) -> &[(usize, Value)] {
        self.programs
            .get(program)
            .and_then(|p| p.get(stmt))
            .map_or(&[], |v| v.as_slice())
    }
}
