//! What the sweep tests (`outputs`, `shards`) share: a scratch directory per test process,
//! the experiment file they sweep written into it, and the binary with no batch-system
//! variable of the environment the tests run in (so a test run inside a Slurm job or a
//! Kubernetes pod sweeps as written).

use std::path::PathBuf;
use std::process::Command;

/// `$TMPDIR/a2a-chaos-<tag>-<pid>`, created.
pub fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("a2a-chaos-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A fresh (removed) directory `name` under the scratch directory.
pub fn fresh(tag: &str, name: &str) -> PathBuf {
    let dir = scratch(tag).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// `text` written once as `<tag>-test.toml` in the scratch directory; its path.
pub fn experiment_file(tag: &str, text: &str) -> String {
    let path = scratch(tag).join(format!("{tag}-test.toml"));
    if !path.exists() {
        std::fs::write(&path, text).unwrap();
    }
    path.display().to_string()
}

/// The binary, run from the repository root, with every `SLURM_*`, `A2A_CHAOS_*` and
/// `JOB_COMPLETION_INDEX` variable removed.
pub fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_a2a-chaos"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    for (k, _) in std::env::vars() {
        if k.starts_with("SLURM_") || k.starts_with("A2A_CHAOS_") || k == "JOB_COMPLETION_INDEX" {
            c.env_remove(k);
        }
    }
    c
}
