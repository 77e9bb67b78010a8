//! isolint: robustness of SQL transaction programs against multiversion
//! READ COMMITTED, after Vandevoort, Koch, Ketsman and Neven, "Detecting
//! Robustness against MVRC for Transaction Programs with Predicate Reads"
//! (EDBT 2023). See ARCHITECTURE.md for the pipeline.

pub mod analysis;
pub mod btp;
pub mod check;
pub mod cli;
pub mod error;
pub mod frontend;
pub mod generate;
pub mod load;
pub mod oracle;
pub mod progress;
pub mod promote;
pub mod report;
pub mod robustness;
pub mod schema;
pub mod subsets;
pub mod summary_graph;
pub mod unfold;

// The front-end's modules at their old paths, for the stages that have
// not moved into their folders yet.
pub use frontend::{lower, sql};
