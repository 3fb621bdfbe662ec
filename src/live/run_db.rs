//! One live run's own PostgreSQL database.
//!
//! With the a2a-python preset and a PostgreSQL URL, each run gets a database of its own
//! ([`RunDatabase`]): created on that server before the replicas start (`server.py
//! --create-db`, from the peer's virtual environment) and dropped when the run ends, so runs
//! never see each other's tasks.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::peer::{root, venv_base};
use super::setup::SetupError;

/// Whether `url` is a SQLAlchemy URL of a PostgreSQL database (`postgresql://`,
/// `postgresql+asyncpg://`, ...).
pub fn is_postgres(url: &str) -> bool {
    url.split_once("://")
        .is_some_and(|(scheme, _)| scheme == "postgresql" || scheme.starts_with("postgresql+"))
}

/// The PostgreSQL database name of the run in `dir` (`a2a_chaos_` and the directory's name,
/// with `_` for `-`).
pub fn database_name(dir: &Path) -> String {
    let stem = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name: String = stem
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("a2a_chaos_{name}")
}

/// One run's own database on a PostgreSQL server, dropped (with its connections) when this
/// value is dropped.
pub struct RunDatabase {
    python: PathBuf,
    server: String,
    name: String,
    /// The run's database URL: the server's URL with [`database_name`] as its database.
    pub url: String,
}

impl RunDatabase {
    /// Creates database `name` on the PostgreSQL server of `server` (a URL whose role may
    /// create databases), with the a2a-python peer of SDK `sdk`.
    pub fn create(sdk: &str, server: &str, name: &str) -> Result<Self, SetupError> {
        let python = venv_base().join(format!("v{sdk}/bin/python"));
        let out = db_admin(&python, "--create-db", name, server)
            .map_err(SetupError::io(format!("cannot run {}", python.display())))?;
        if !out.status.success() {
            // The traceback's last line is the reason.
            let stderr = String::from_utf8_lossy(&out.stderr);
            let why = stderr
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty() && !l.starts_with("(Background"))
                .unwrap_or("");
            return Err(SetupError::Process(format!(
                "cannot create database {name} on the PostgreSQL server of --db (the role needs CREATEDB) ({}): {}",
                out.status,
                why.trim()
            )));
        }
        let url = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if url.is_empty() {
            return Err(SetupError::Process(format!(
                "creating database {name} printed no URL"
            )));
        }
        Ok(RunDatabase {
            python,
            server: server.to_string(),
            name: name.to_string(),
            url,
        })
    }

    /// The database's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// Runs the peer's database administration (`server.py --create-db` or `--drop-db`) for
/// database `name` on the PostgreSQL server of `server`.
fn db_admin(
    python: &Path,
    action: &str,
    name: &str,
    server: &str,
) -> std::io::Result<std::process::Output> {
    Command::new(python)
        .arg(root().join("tests/peers/a2a-python/server.py"))
        .args([action, name, "--db", server])
        .stdin(Stdio::null())
        .output()
}

impl Drop for RunDatabase {
    fn drop(&mut self) {
        let out = db_admin(&self.python, "--drop-db", &self.name, &self.server);
        match out {
            Ok(o) if o.status.success() => {}
            Ok(o) => eprintln!(
                "warning: cannot drop database {}: {}",
                self.name,
                String::from_utf8_lossy(&o.stderr).trim()
            ),
            Err(e) => eprintln!("warning: cannot drop database {}: {e}", self.name),
        }
    }
}
