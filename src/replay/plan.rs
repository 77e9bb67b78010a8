//! A witness made concrete ([`Plan`]: transactions with parameters, seed
//! rows, driver actions). Shared by `witness` (which makes plans) and
//! `solve` (which changes them), so that neither imports the other.

use super::run::{Action, SeedRow, Txn};
use super::value::Val;

/// The schedule made concrete.
#[derive(Debug, Clone)]
pub struct Plan {
    pub txns: Vec<Txn>,
    pub seed: Vec<SeedRow>,
    pub actions: Vec<Action>,
    /// Per transaction, the statements the schedule has it run, in order
    /// (as the BTP shows them), to check the program took that path.
    pub expected: Vec<Vec<String>>,
    /// What the values could not pin down.
    pub notes: Vec<String>,
    /// Per table, the columns the schedule's statements read or write
    /// (PostgreSQL's names, in table order): shown first in a seed row.
    pub touched: Vec<(String, Vec<String>)>,
}

/// A seed row's columns with their values.
pub type Cells<'r> = Vec<&'r (String, Val)>;

impl Plan {
    /// A seed row's values, the columns the schedule touches first, then
    /// the others.
    pub fn touched_first<'r>(&self, row: &'r SeedRow) -> (Cells<'r>, Cells<'r>) {
        let cols: &[String] = self
            .touched
            .iter()
            .find(|(t, _)| *t == row.table)
            .map_or(&[], |(_, c)| c.as_slice());
        row.values.iter().partition(|(c, _)| cols.contains(c))
    }
}
