//! The process exit codes, in one place (README "Exit codes", `--help`).
//! As ripgrep: 0 and 1 are answers, 2 is "no answer".

/// What a run tells its caller through the exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// The answer is "nothing found": check robust, replay nothing
    /// reproduced, invariants none broken; or a command that only prints.
    Success,
    /// The answer is a finding: check not robust, replay an anomaly
    /// reproduced on PostgreSQL, invariants one broken.
    Finding,
    /// No answer: bad input, a PostgreSQL server that could not be
    /// started or reached, or output that could not be written.
    Error,
}

impl Exit {
    /// `Finding` when `found`, else `Success`.
    pub fn finding_if(found: bool) -> Exit {
        if found {
            Exit::Finding
        } else {
            Exit::Success
        }
    }

    /// The status the process ends with.
    pub fn code(self) -> u8 {
        match self {
            Exit::Success => 0,
            Exit::Finding => 1,
            Exit::Error => 2,
        }
    }
}

impl From<Exit> for std::process::ExitCode {
    fn from(e: Exit) -> std::process::ExitCode {
        std::process::ExitCode::from(e.code())
    }
}
