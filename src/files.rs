//! Opening output files so that they cannot be hijacked: never through a symbolic link, and
//! an output folder held by one run at a time.
//!
//! Every file the tool writes (the journal, `runs.csv` and the other results, timelines, the
//! proxy's history, a shrunk scenario) is opened with `O_NOFOLLOW`: when its name is a
//! symbolic link, the open fails and the error says so, rather than writing to wherever the
//! link points (a journal linked out of `--out` must not overwrite the file it names).
//! Temporary files are created exclusively (`O_EXCL`, which never follows a link either).
//!
//! [`OutLock`] is an exclusive `flock` on an output folder itself (its directory handle, so
//! no lock file is left behind), held while a sweep writes there: a second run on the same
//! folder is refused at once with a clear message instead of truncating the first one's
//! journal. The kernel releases it when the process ends, however it ends.

use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::error::InputError;

/// Open options that refuse a symbolic link as the last component of the path.
pub fn options_no_follow() -> OpenOptions {
    let mut o = OpenOptions::new();
    o.custom_flags(libc::O_NOFOLLOW);
    o
}

/// The error of an open that met a symbolic link, in words; other errors unchanged.
fn explain(path: &Path, e: std::io::Error) -> std::io::Error {
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    if is_link || e.raw_os_error() == Some(libc::ELOOP) {
        std::io::Error::other(format!(
            "{} is a symbolic link: output files are never written through a link (remove it, or choose another path)",
            path.display()
        ))
    } else {
        e
    }
}

/// Creates (or truncates) `path` for writing, refusing a symbolic link.
pub fn create_no_follow(path: &Path) -> std::io::Result<File> {
    options_no_follow()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .map_err(|e| explain(path, e))
}

/// Creates `path`, which must not exist yet (a link in its place is refused too).
pub fn create_new(path: &Path) -> std::io::Result<File> {
    options_no_follow()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| explain(path, e))
}

/// Opens `path` to append (creating it), refusing a symbolic link.
pub fn append_no_follow(path: &Path) -> std::io::Result<File> {
    options_no_follow()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| explain(path, e))
}

/// Writes `contents` to `path` atomically: to `<name>.tmp-<pid>` beside it (created
/// exclusively), synced, then renamed into place, so a reader (or a run killed half-way)
/// never sees half a file. A symbolic link at `path` is refused, not replaced.
pub fn write_atomic(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        if !dir.as_os_str().is_empty() {
            std::fs::create_dir_all(dir)?;
        }
    }
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(explain(
            path,
            std::io::Error::from_raw_os_error(libc::ELOOP),
        ));
    }
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp-{}", std::process::id()));
    let tmp = path.with_file_name(name);
    // A stale temporary of this process id (or anything planted under its name) goes first.
    let _ = std::fs::remove_file(&tmp);
    let result = (|| {
        let mut file = create_new(&tmp)?;
        file.write_all(contents)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// An exclusive lock on an output folder, held until dropped (or the process ends: the
/// kernel releases a `flock` with its descriptor).
#[derive(Debug)]
pub struct OutLock {
    _dir: File,
    path: PathBuf,
}

impl OutLock {
    /// Takes the lock on `dir` (created if missing), or refuses at once when another process
    /// holds it.
    pub fn take(dir: &Path) -> Result<OutLock, InputError> {
        let origin = dir.display().to_string();
        std::fs::create_dir_all(dir)
            .map_err(|e| InputError::new(&origin, format!("cannot create: {e}")))?;
        let file = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY)
            .open(dir)
            .map_err(|e| InputError::new(&origin, format!("cannot lock: {e}")))?;
        use std::os::fd::AsRawFd;
        // SAFETY: flock on a descriptor this function owns.
        let taken = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if taken != 0 {
            let e = std::io::Error::last_os_error();
            return Err(InputError::new(
                &origin,
                if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
                    "another a2a-chaos process is writing to this folder (it holds the folder's lock); wait for it to finish, or choose another --out".to_string()
                } else {
                    format!("cannot lock: {e}")
                },
            ));
        }
        Ok(OutLock {
            _dir: file,
            path: dir.to_path_buf(),
        })
    }

    /// The locked folder.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("a2a-chaos-files-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_link_in_place_of_an_output_is_refused_and_its_target_untouched() {
        let d = dir("link");
        let target = d.join("precious");
        std::fs::write(&target, b"keep me").unwrap();
        let link = d.join("journal.jsonl");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let err = create_no_follow(&link).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        let err = write_atomic(&link, b"x").unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert!(append_no_follow(&link).is_err());
        assert_eq!(std::fs::read(&target).unwrap(), b"keep me");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_second_lock_on_a_folder_is_refused_until_the_first_is_dropped() {
        let d = dir("lock");
        let first = OutLock::take(&d).unwrap();
        let err = OutLock::take(&d).unwrap_err();
        assert!(err.message.contains("another a2a-chaos process"), "{err}");
        drop(first);
        assert!(OutLock::take(&d).is_ok());
        let _ = std::fs::remove_dir_all(&d);
    }
}
