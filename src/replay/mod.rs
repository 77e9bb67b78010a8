//! Replay on PostgreSQL (issue 11): runs the explorer's counterexample
//! schedules, and random interleavings, on a real server and compares the
//! outcome with every serial order of the same transactions.
//!
//! Modules: `server` (a server by URL, or a throwaway one), `scratch` (a
//! scratch schema from the workload's DDL, always dropped), `value`
//! (values as PostgreSQL text), `executor` (a client-side interpreter of
//! the program AST, one SQL statement per step), `session` (one executor
//! on its own connection and thread, so a blocked statement never hangs
//! the driver), `run` (drive k sessions through an interleaving, run the
//! serial orders, compare), `witness` (an explorer `Schedule` with the
//! front-end's provenance → parameters, seed rows and an interleaving),
//! `solve` (the value choices a witness replay searches), `retype`
//! (types for NULLs and values PostgreSQL cannot type), `srf` (the
//! rows of a set-returning routine called in FROM),
//! `random` (random interleavings of random program instances),
//! `confirmed` (which of `check`'s cycles are replayed, for `check
//! --postgres…`).
//!
//! Depends on `model`, `frontend`'s AST and `analysis`; never prints. This
//! stage does I/O (a database, and `initdb`/`pg_ctl` for the throwaway
//! server): it is the one exception to "only `cli` spawns processes".

pub mod confirmed;
pub mod errcodes;
pub mod executor;
pub mod invariants;
pub mod params;
pub mod plan;
pub mod random;
pub mod retype;
pub mod run;
pub mod scratch;
pub mod server;
pub mod session;
pub mod solve;
pub mod srf;
pub mod value;
pub mod witness;
