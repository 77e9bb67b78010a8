//! isolint's test machinery, beside the tests (issue 26): nothing in the
//! shipped binary uses it. `sqlgen` writes random workloads in isolint's
//! input languages (tests/sqlgen.rs, tests/pg_soundness.rs);
//! `soundness` lowers, analyses and replays them on PostgreSQL
//! (tests/pg_soundness.rs). isolint dev-depends on this crate, so `cargo
//! test` builds it with no flag.

pub mod soundness;
pub mod sqlgen;
