//! Why a live run could not set up what it runs on: a server this machine lacks, an
//! operating-system call that failed, a process that refused or died. The command prints
//! the sentence and exits 2 ([`crate::error::InputError`] at the CLI's edge).

/// What went wrong while starting a live run's processes, database or ports.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// A server or peer is not installed here; the sentence names the script that installs
    /// it, or the option that does without it.
    #[error("{0}")]
    NotInstalled(String),
    /// An operating-system call failed while doing `what` (`cannot run …`, a path).
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// A process ran but failed, or did not come up: what it said, or where its log is.
    #[error("{0}")]
    Process(String),
}

impl SetupError {
    /// A mapper for `map_err`: an I/O error while doing `what`.
    pub fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> SetupError {
        let what = what.into();
        move |source| SetupError::Io { what, source }
    }
}
