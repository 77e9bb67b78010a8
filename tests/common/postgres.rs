//! The throwaway PostgreSQL server of the tests that need one (included
//! with `#[path]` by tests/replay.rs and tests/pg_soundness.rs).

use isolint::replay::server::{temporary_available, Server};

/// A throwaway server, or `None` (with the reason printed) when this
/// machine has no PostgreSQL server binaries. Binaries that exist but
/// start no server are a failure, not a skip.
pub fn server() -> Option<Server> {
    if !temporary_available() {
        eprintln!("skipped: no PostgreSQL server binaries (initdb, pg_ctl) on this machine");
        return None;
    }
    match Server::temporary() {
        Ok(s) => Some(s),
        Err(e) => panic!("the binaries exist but no server started: {e:?}"),
    }
}
