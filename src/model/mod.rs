//! The vocabulary every stage shares: BTPs (Section 5), schemas, the
//! analysis settings (Section 7.2), isolation levels, diagnostics, and the
//! synthetic Auction(n) workload (Section 7.3) and random SQL workloads
//! (`sqlgen`, text only).
//!
//! Depends on nothing else in the crate. Does no I/O, parses no SQL,
//! computes no graph.

pub mod btp;
pub mod error;
pub mod generate;
pub mod isolation;
pub mod provenance;
pub mod schema;
pub mod settings;
pub mod sqlgen;
