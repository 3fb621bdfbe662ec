//! The one door every input file comes through: regular files only, each kind with a size
//! limit.
//!
//! A file the tool reads (a model profile, a scenario, an experiment, a recorded history, a
//! sweep's journal, a shard's manifest and runs.csv) is checked before a byte is read: its
//! metadata must say it is a regular file (a FIFO, a device such as `/dev/zero`, a socket or
//! a directory is refused at once, never opened for reading in a way that could block), and
//! its size must be within the limit of its [`FileKind`]. It is then opened with
//! `O_NONBLOCK` (so a file swapped for a FIFO between the check and the open cannot hang the
//! open), checked again on the open handle, and read through a cap of `limit + 1` bytes, so a
//! file that grows while it is read (or lies about its size, as `/proc` files do) is still
//! refused at the limit. Every refusal is an [`InputError`] naming the file and the limit:
//! exit 2.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use crate::error::InputError;

/// What a file is, and so how large it may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A model profile (`models/*.toml`, `--model FILE.toml`).
    Model,
    /// A scenario file (steps are bounded too: [`crate::scenario::STEPS_MAX`]).
    Scenario,
    /// An experiment file.
    Experiment,
    /// A file that is a scenario or an experiment (`check`, `replay`, `shrink`).
    ScenarioOrExperiment,
    /// A recorded history (`check-history`, JSONL).
    History,
    /// A sweep's journal (JSONL), read line by line: the limit is per line.
    JournalLine,
    /// A shard's manifest (`shard.json`, which holds its experiment's text).
    Manifest,
    /// A shard's `runs.csv`.
    RunsCsv,
    /// A log or status file the tool or the system wrote (a peer's log, `/proc`).
    Log,
}

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

impl FileKind {
    /// The most bytes a file of this kind may hold.
    pub fn limit_bytes(self) -> u64 {
        match self {
            FileKind::Model | FileKind::Experiment => MIB,
            FileKind::Scenario | FileKind::ScenarioOrExperiment => 4 * MIB,
            FileKind::History => GIB,
            FileKind::JournalLine => MIB,
            FileKind::Manifest => 4 * MIB,
            FileKind::RunsCsv => 4 * GIB,
            FileKind::Log => 16 * MIB,
        }
    }

    /// The kind in words, for messages (`a model file`).
    pub fn words(self) -> &'static str {
        match self {
            FileKind::Model => "a model file",
            FileKind::Scenario => "a scenario file",
            FileKind::Experiment => "an experiment file",
            FileKind::ScenarioOrExperiment => "a scenario or experiment file",
            FileKind::History => "a history file",
            FileKind::JournalLine => "a journal line",
            FileKind::Manifest => "a shard manifest",
            FileKind::RunsCsv => "a runs.csv",
            FileKind::Log => "a log file",
        }
    }
}

/// A byte count in the unit that reads best (`1 MiB`, `4 GiB`, `512 KiB`, `17 bytes`).
pub fn bytes_in_words(n: u64) -> String {
    for (unit, name) in [(GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB")] {
        if n >= unit && n % unit == 0 {
            return format!("{} {name}", n / unit);
        }
    }
    format!("{n} bytes")
}

/// What a path is, when it is not a regular file (`a FIFO (named pipe)`).
fn not_regular(meta: &std::fs::Metadata) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_file() {
        None
    } else if t.is_dir() {
        Some("a directory")
    } else if t.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if t.is_char_device() {
        Some("a character device")
    } else if t.is_block_device() {
        Some("a block device")
    } else if t.is_socket() {
        Some("a socket")
    } else {
        Some("not a regular file")
    }
}

fn too_large(origin: &str, kind: FileKind, size: Option<u64>) -> InputError {
    let limit = bytes_in_words(kind.limit_bytes());
    InputError::new(
        origin,
        match size {
            Some(n) => format!("is {n} bytes, over the {limit} limit for {}", kind.words()),
            None => format!("is over the {limit} limit for {}", kind.words()),
        },
    )
}

/// Opens `path` for reading as a file of `kind`: a regular file within the kind's limit, or
/// an error naming the file. The open never blocks (`O_NONBLOCK`; a FIFO is refused first).
pub fn open(path: &Path, kind: FileKind) -> Result<File, InputError> {
    let origin = path.display().to_string();
    let meta = std::fs::metadata(path)
        .map_err(|e| InputError::new(&origin, format!("cannot read: {e}")))?;
    check_meta(&origin, kind, &meta)?;
    let file = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
            .map_err(|e| InputError::new(&origin, format!("cannot read: {e}")))?
    };
    // The same check on what was opened: the path may have changed in between.
    let meta = file
        .metadata()
        .map_err(|e| InputError::new(&origin, format!("cannot read: {e}")))?;
    check_meta(&origin, kind, &meta)?;
    Ok(file)
}

fn check_meta(origin: &str, kind: FileKind, meta: &std::fs::Metadata) -> Result<(), InputError> {
    if let Some(what) = not_regular(meta) {
        return Err(InputError::new(
            origin,
            format!(
                "is {what}, not a regular file: {} must be a regular file",
                kind.words()
            ),
        ));
    }
    if kind != FileKind::JournalLine && meta.len() > kind.limit_bytes() {
        return Err(too_large(origin, kind, Some(meta.len())));
    }
    Ok(())
}

/// Reads a whole file of `kind` (see the module docs).
pub fn read_bytes(path: &Path, kind: FileKind) -> Result<Vec<u8>, InputError> {
    let origin = path.display().to_string();
    let file = open(path, kind)?;
    let limit = kind.limit_bytes();
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| InputError::new(&origin, format!("cannot read: {e}")))?;
    if bytes.len() as u64 > limit {
        return Err(too_large(&origin, kind, None));
    }
    Ok(bytes)
}

/// Reads a whole text file of `kind`; one that is not UTF-8 is refused.
pub fn read_text(path: &Path, kind: FileKind) -> Result<String, InputError> {
    let origin = path.display().to_string();
    let bytes = read_bytes(path, kind)?;
    String::from_utf8(bytes).map_err(|e| {
        InputError::new(
            &origin,
            format!(
                "is not UTF-8 text (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

/// Reads a file line by line, each line at most the kind's limit (a longer one is an error
/// naming its line number); the lines come without their `\n`, and the last is `complete:
/// false` when the file does not end in one.
pub struct Lines {
    reader: BufReader<File>,
    origin: String,
    kind: FileKind,
    line_no: usize,
}

/// One line of [`Lines`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// 1-based.
    pub number: usize,
    pub bytes: Vec<u8>,
    /// Whether it ended in `\n` (the last line of a file cut short does not).
    pub complete: bool,
}

impl Lines {
    /// Opens `path` as a file of lines of `kind`.
    pub fn open(path: &Path, kind: FileKind) -> Result<Lines, InputError> {
        Ok(Lines {
            reader: BufReader::new(open(path, kind)?),
            origin: path.display().to_string(),
            kind,
            line_no: 0,
        })
    }

    /// Whether nothing is left to read (a read error counts as the end).
    pub fn at_end(&mut self) -> bool {
        self.reader.fill_buf().map_or(true, |b| b.is_empty())
    }

    /// The next line, `Ok(None)` at the end.
    pub fn next_line(&mut self) -> Result<Option<Line>, InputError> {
        let limit = self.kind.limit_bytes();
        let mut bytes = Vec::new();
        let read = (&mut self.reader)
            .take(limit + 2)
            .read_until(b'\n', &mut bytes)
            .map_err(|e| InputError::new(&self.origin, format!("cannot read: {e}")))?;
        if read == 0 {
            return Ok(None);
        }
        self.line_no += 1;
        let complete = bytes.last() == Some(&b'\n');
        if complete {
            bytes.pop();
        }
        if bytes.len() as u64 > limit {
            return Err(InputError::new(
                format!("{}:{}", self.origin, self.line_no),
                format!(
                    "the line is over the {} limit for {}",
                    bytes_in_words(limit),
                    self.kind.words()
                ),
            ));
        }
        Ok(Some(Line {
            number: self.line_no,
            bytes,
            complete,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("a2a-chaos-input-{}-{name}", std::process::id()))
    }

    #[test]
    fn a_device_is_refused_without_reading() {
        let err = read_text(Path::new("/dev/zero"), FileKind::Model).unwrap_err();
        assert_eq!(err.origin, "/dev/zero");
        assert!(err.message.contains("a character device"), "{err}");
        assert!(err.message.contains("a model file"), "{err}");
    }

    #[test]
    fn a_directory_is_refused() {
        let err = read_text(Path::new("/tmp"), FileKind::Scenario).unwrap_err();
        assert!(err.message.contains("a directory"), "{err}");
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let path = temp("fifo");
        let _ = std::fs::remove_file(&path);
        let c = std::ffi::CString::new(path.display().to_string()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let err = read_text(&path, FileKind::Scenario).unwrap_err();
        let _ = std::fs::remove_file(&path);
        assert!(err.message.contains("FIFO"), "{err}");
    }

    #[test]
    fn a_file_over_its_limit_is_refused_by_its_size() {
        let path = temp("big");
        let f = File::create(&path).unwrap();
        f.set_len(FileKind::Experiment.limit_bytes() + 1).unwrap();
        drop(f);
        let err = read_text(&path, FileKind::Experiment).unwrap_err();
        let _ = std::fs::remove_file(&path);
        assert!(
            err.message
                .contains("is 1048577 bytes, over the 1 MiB limit for an experiment file"),
            "{err}"
        );
    }

    #[test]
    fn lines_are_bounded_one_by_one() {
        let path = temp("lines");
        let long = "x".repeat(MIB as usize + 1);
        std::fs::write(&path, format!("a\nb\n{long}\n")).unwrap();
        let mut lines = Lines::open(&path, FileKind::JournalLine).unwrap();
        assert_eq!(lines.next_line().unwrap().unwrap().bytes, b"a");
        assert_eq!(lines.next_line().unwrap().unwrap().number, 2);
        let err = lines.next_line().unwrap_err();
        let _ = std::fs::remove_file(&path);
        assert!(err.origin.ends_with(":3"), "{err}");
        assert!(err.message.contains("1 MiB"), "{err}");
    }

    #[test]
    fn byte_counts_read_well() {
        assert_eq!(bytes_in_words(4 * MIB), "4 MiB");
        assert_eq!(bytes_in_words(GIB), "1 GiB");
        assert_eq!(bytes_in_words(1000), "1000 bytes");
    }
}
