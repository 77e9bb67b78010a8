//! isolint: robustness of SQL transaction programs against multiversion
//! READ COMMITTED, after Vandevoort, Koch, Ketsman and Neven, "Detecting
//! Robustness against MVRC for Transaction Programs with Predicate Reads"
//! (EDBT 2023). See ARCHITECTURE.md for the stages and their rules:
//! `model` ← `frontend`, `analysis` ← `report` ← `cli`.

pub mod analysis;
pub mod cli;
pub mod frontend;
pub mod model;
#[cfg(feature = "postgres")]
pub mod replay;
pub mod report;
