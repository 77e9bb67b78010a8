//! The vocabulary every stage shares: BTPs (Section 5), schemas, the
//! analysis settings (Section 7.2), isolation levels, diagnostics, and the
//! synthetic Auction(n) workload (Section 7.3), and the seedable generator
//! `rng`. (The random SQL workloads of the tests, `sqlgen`, are in the
//! test kit, `testkit/`.)
//!
//! Depends on nothing else in the crate. Does no I/O, parses no SQL,
//! computes no graph.

pub mod btp;
pub mod error;
pub mod generate;
pub mod isolation;
pub mod provenance;
pub mod rng;
pub mod schema;
pub mod settings;
