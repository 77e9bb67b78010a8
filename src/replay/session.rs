//! One transaction program on its own connection and thread. The driver
//! sends commands and waits for the answer only so long: a statement that
//! waits for a row lock (PostgreSQL blocks a write of a row another open
//! transaction wrote, Section 5.4's "no dirty writes") leaves its session
//! pending while the driver goes on with the others, and answers once the
//! lock holder commits or aborts.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use postgres::{CancelToken, Client, NoTls};

use super::executor::{Executor, Halt, Step};
use super::value::Val;
use crate::frontend::sql::ast::Node;
use crate::model::isolation::Level;

enum Cmd {
    Step,
    Commit,
    Quit,
}

/// A session's answer to a command.
#[derive(Debug, Clone)]
pub enum Reply {
    Step(Result<Step, Halt>),
    Commit(Result<(), Halt>),
}

pub struct Session {
    tx: Sender<Cmd>,
    rx: Receiver<Reply>,
    cancel: CancelToken,
    handle: Option<JoinHandle<()>>,
    /// A command was sent and its answer has not come (blocked).
    pub pending: bool,
    /// The server process of the connection (to ask whether it waits
    /// for a lock).
    pub pid: i32,
    /// After its last step the program is inside a block that reads one
    /// snapshot on PostgreSQL (`Executor::holds_snapshot`).
    held: Arc<AtomicBool>,
}

/// The SQL that starts a transaction at `level`.
pub fn begin_sql(level: Level) -> &'static str {
    match level {
        Level::ReadCommitted => "BEGIN ISOLATION LEVEL READ COMMITTED",
        Level::RepeatableRead => "BEGIN ISOLATION LEVEL REPEATABLE READ",
        Level::Serializable => "BEGIN ISOLATION LEVEL SERIALIZABLE",
    }
}

impl Session {
    /// Starts `program` with `params` on connection `client`, at `level`
    /// (the transaction begins with the first step).
    pub fn start(
        mut client: Client,
        program: Arc<Vec<Node>>,
        params: BTreeMap<String, Val>,
        observe_conditions: bool,
        choices: Option<Arc<super::executor::Choices>>,
        declared: Arc<BTreeMap<String, super::retype::Declared>>,
        level: Level,
    ) -> crate::model::error::Result<Session> {
        let pid: i32 = client
            .query_one("SELECT pg_backend_pid()", &[])
            .and_then(|r| r.try_get(0))
            .map_err(|e| super::scratch::db_diag("cannot start a session", &e))?;
        let (tx, cmd_rx) = channel::<Cmd>();
        let (reply_tx, rx) = channel::<Reply>();
        let cancel = client.cancel_token();
        let held = Arc::new(AtomicBool::new(false));
        let held_by = held.clone();
        let handle = std::thread::spawn(move || {
            let mut ex = Executor::new(&program, params)
                .observing(observe_conditions)
                .with_choices(choices)
                .with_declared(declared);
            let mut begun = false;
            while let Ok(cmd) = cmd_rx.recv() {
                let reply = match cmd {
                    Cmd::Quit => break,
                    Cmd::Step => {
                        if !begun {
                            begun = true;
                            if let Err(e) = client.batch_execute(begin_sql(level)) {
                                let _ = reply_tx.send(Reply::Step(Err(Halt::from_db(&e, None))));
                                continue;
                            }
                        }
                        let r = ex.step(&mut client);
                        held_by.store(ex.holds_snapshot(), Ordering::SeqCst);
                        if r.is_err() || matches!(r, Ok(Step::RolledBack(_))) {
                            let _ = client.batch_execute("ROLLBACK");
                        }
                        Reply::Step(r)
                    }
                    Cmd::Commit => Reply::Commit(if begun {
                        client
                            .batch_execute("COMMIT")
                            .map_err(|e| Halt::from_db(&e, Some("COMMIT".into())))
                    } else {
                        Ok(())
                    }),
                };
                if reply_tx.send(reply).is_err() {
                    break;
                }
            }
            // Dropping the connection rolls back whatever is open.
        });
        Ok(Session {
            tx,
            rx,
            cancel,
            handle: Some(handle),
            pending: false,
            pid,
            held,
        })
    }

    /// See [`Session::held`]: its next step must come before any other
    /// transaction's action.
    pub fn holds_snapshot(&self) -> bool {
        !self.pending && self.held.load(Ordering::SeqCst)
    }

    /// Sends a step (`commit = false`) or a commit, and waits up to
    /// `wait` for the answer; `None` means it is blocked (pending).
    pub fn send(&mut self, commit: bool, wait: Duration) -> Option<Reply> {
        let cmd = if commit { Cmd::Commit } else { Cmd::Step };
        if self.tx.send(cmd).is_err() {
            return Some(Reply::Step(Err(Halt::Unsupported(
                "the session thread ended".into(),
            ))));
        }
        self.pending = true;
        self.wait(wait)
    }

    /// Waits up to `wait` for the answer to the pending command.
    pub fn wait(&mut self, wait: Duration) -> Option<Reply> {
        match self.rx.recv_timeout(wait) {
            Ok(r) => {
                self.pending = false;
                Some(r)
            }
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => {
                self.pending = false;
                Some(Reply::Step(Err(Halt::Unsupported(
                    "the session thread ended".into(),
                ))))
            }
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if self.pending {
            // Unblock a statement still waiting for a lock.
            let _ = self.cancel.cancel_query(NoTls);
        }
        let _ = self.tx.send(Cmd::Quit);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}
