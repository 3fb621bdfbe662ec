//! A recorded history: the JSONL lines `a2a-chaos proxy` writes and `check-history` reads.
//!
//! One JSON object per line, told apart by `type` (docs/PEERS.md, "History file"):
//! `start`, then per exchange a `request`, its `response` (for a stream, one `event` per
//! server-sent event and an `end`), the ledger's `effect` and `save` lines, the `final-task`
//! copies read when the proxy stops, and `stop`. Exchanges are linked by `seq`; times are
//! milliseconds since the recording began. Every field but `type`, `seq` and `at_ms` has a
//! default, so a history captured by other means needs only what it has.

use std::cell::RefCell;
use std::io::Write;
use std::path::Path;
use std::rc::Rc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ground::ledger::Effect;

/// The format's version, in the `start` line.
pub const VERSION: u32 = 1;

/// One line of a history file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Line {
    /// The recording's settings (first line).
    Start {
        #[serde(default)]
        version: u32,
        #[serde(default)]
        tool: String,
        #[serde(default)]
        upstreams: Vec<String>,
        #[serde(default)]
        routing: String,
        #[serde(default)]
        seed: u64,
        /// The faults injected, in words (`duplicate every 3rd request`).
        #[serde(default)]
        faults: Vec<String>,
    },
    /// A JSON-RPC request as it reached the proxy (or, with `duplicate_of`, a copy the proxy
    /// sent on its own).
    Request {
        seq: u64,
        at_ms: u64,
        /// The upstream it went to (`replica-0`, by its position in `--upstream`).
        #[serde(default)]
        replica: Option<String>,
        /// The `a2a-version` header, when sent.
        #[serde(default)]
        a2a_version: Option<String>,
        /// The JSON-RPC request.
        body: Value,
        /// This request is a duplicate the proxy injected of request `seq`.
        #[serde(default)]
        duplicate_of: Option<u64>,
        /// How long the proxy held it before forwarding.
        #[serde(default)]
        delayed_ms: u64,
    },
    /// The answer's head, and for a JSON answer its body.
    Response {
        seq: u64,
        at_ms: u64,
        #[serde(default)]
        status: u16,
        /// The replica that answered, as it named itself (`x-a2a-chaos-replica`), else the
        /// upstream's name.
        #[serde(default)]
        replica: Option<String>,
        /// The JSON-RPC response (`None` for a stream, or when there was no answer).
        #[serde(default)]
        body: Option<Value>,
        /// A server-sent-event stream follows as `event` lines and an `end`.
        #[serde(default)]
        stream: bool,
        /// The proxy dropped this reply (fault injection): the client never saw it.
        #[serde(default)]
        dropped: bool,
        /// No answer: the upstream could not be reached or broke off.
        #[serde(default)]
        error: Option<String>,
    },
    /// One server-sent event of a stream: its `data`, parsed.
    Event { seq: u64, at_ms: u64, data: Value },
    /// A stream ended (cleanly, or with `error`).
    End {
        seq: u64,
        at_ms: u64,
        #[serde(default)]
        error: Option<String>,
        #[serde(default)]
        dropped: bool,
    },
    /// A business effect a replica reported to the ledger (the live ledger's own record).
    Effect(Effect),
    /// A save a replica reported (`/save`), with the version the ledger gave it.
    Save(SaveLine),
    /// A task as one replica held it when the recording stopped (GetTask / tasks/get).
    FinalTask {
        at_ms: u64,
        replica: String,
        task: Value,
    },
    /// The recording's end.
    Stop {
        at_ms: u64,
        #[serde(default)]
        reason: String,
        #[serde(default)]
        requests: u64,
    },
}

/// A save line: the save log's record ([`crate::store::SaveRecord`]) in JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SaveLine {
    pub at_ms: u64,
    pub task_id: String,
    pub context_id: String,
    /// `overwrite`, `cas` or `cancel`.
    pub mode: String,
    #[serde(default)]
    pub before: Option<u64>,
    #[serde(default)]
    pub based_on: Option<u64>,
    pub version: u64,
    /// The state name without `TASK_STATE_`, kebab-case (`input-required`).
    pub state: String,
    pub replica: String,
    #[serde(default)]
    pub artifacts: Vec<String>,
}

impl SaveLine {
    /// The line of one save-log record.
    pub fn of(s: &crate::store::SaveRecord) -> SaveLine {
        use crate::store::SaveMode;
        let (mode, based_on) = match s.mode {
            SaveMode::Cas(prev) => ("cas", prev.or(s.based_on)),
            SaveMode::Overwrite => ("overwrite", s.based_on),
            SaveMode::Cancel | SaveMode::CancelWhole => ("cancel", s.based_on),
        };
        SaveLine {
            at_ms: s.at_ms,
            task_id: s.task_id.clone(),
            context_id: s.context_id.clone(),
            mode: mode.into(),
            before: s.before,
            based_on,
            version: s.version,
            state: state_word(&s.state),
            replica: s.replica.to_string(),
            artifacts: s.artifacts.clone(),
        }
    }

    /// Back to the save log's record; `Err` names a mode or state that is not one.
    pub fn record(&self) -> Result<crate::store::SaveRecord, super::observer::ReportError> {
        use crate::store::SaveMode;
        let mode = match self.mode.as_str() {
            "cas" => SaveMode::Cas(self.based_on),
            "overwrite" => SaveMode::Overwrite,
            "cancel" => SaveMode::Cancel,
            other => return Err(super::observer::ReportError::SaveMode(other.to_string())),
        };
        Ok(crate::store::SaveRecord {
            at_ms: self.at_ms,
            task_id: self.task_id.clone(),
            context_id: self.context_id.clone(),
            mode,
            before: self.before,
            based_on: self.based_on,
            version: self.version,
            state: super::observer::parse_state(&self.state)?,
            replica: crate::host::Host::parse(&self.replica),
            artifacts: self.artifacts.clone(),
            // A history file's save lines carry no message ids: nothing reads them back.
            history: Vec::new(),
        })
    }
}

pub use crate::protocol::state_word;

/// Appends lines to a history file, one write and flush per line, so a file cut short by a
/// crash still holds every exchange before it. Cloning shares the file.
#[derive(Clone)]
pub struct Recorder {
    out: Rc<RefCell<std::io::BufWriter<std::fs::File>>>,
    lines: Rc<RefCell<u64>>,
}

impl Recorder {
    /// Creates the file; one that exists is refused (`AlreadyExists`) unless `overwrite`.
    /// A symbolic link in its place is refused either way.
    pub fn create(path: &Path, overwrite: bool) -> std::io::Result<Recorder> {
        let file = if overwrite {
            crate::files::create_no_follow(path)?
        } else {
            crate::files::create_new(path)?
        };
        Ok(Recorder {
            out: Rc::new(RefCell::new(std::io::BufWriter::new(file))),
            lines: Rc::default(),
        })
    }

    /// Writes one line. A write error is reported once on stderr and the line is lost: the
    /// proxy keeps serving traffic.
    pub fn write(&self, line: &Line) {
        let mut text = serde_json::to_string(line).expect("history lines serialise");
        text.push('\n');
        let mut out = self.out.borrow_mut();
        if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
            eprintln!("warning: cannot write the history: {e}");
        }
        *self.lines.borrow_mut() += 1;
    }

    /// Lines written so far.
    pub fn lines(&self) -> u64 {
        *self.lines.borrow()
    }
}

/// A line of a history file and its line number (1-based).
#[derive(Debug, Clone, PartialEq)]
pub struct Numbered {
    pub number: usize,
    pub line: Line,
}

/// Why a recorded history cannot be read; each says so in the sentence `check-history`
/// prints.
#[derive(Debug, thiserror::Error)]
pub enum RecordingError {
    /// The file is missing, too large or not a regular file.
    #[error("{}", .0.message)]
    Unreadable(crate::error::InputError),
    /// A line is not a history line.
    #[error("line {line}: {why}")]
    BadLine {
        /// Its number, from 1.
        line: usize,
        why: serde_json::Error,
    },
    /// Two lines record one thing differently (two requests sharing a `seq`, two different
    /// `start` lines): the first few such pairs, and how many more there were.
    #[error(
        "a malformed recording: {}{}; no line of it was counted",
        collisions.join("; "),
        if *more > 0 { format!("; and {more} more such lines") } else { String::new() }
    )]
    Malformed {
        collisions: Vec<String>,
        more: usize,
    },
    /// A save line whose fields make no save.
    #[error("a save line: {0}")]
    BadSave(super::observer::ReportError),
    /// The profile the checkers take as the server's promises could not be loaded.
    #[error("{0}")]
    Profile(crate::error::InputError),
}

/// Reads a history file (through [`crate::input`]: a regular file within
/// [`crate::input::FileKind::History`]'s limit): its lines, in order, with their numbers;
/// `Err` names the first line that is not one.
pub fn read(path: &Path) -> Result<Vec<Numbered>, RecordingError> {
    let text = crate::input::read_text(path, crate::input::FileKind::History)
        .map_err(RecordingError::Unreadable)?;
    let mut lines = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        if raw.trim().is_empty() {
            continue;
        }
        let line: Line = serde_json::from_str(raw)
            .map_err(|why| RecordingError::BadLine { line: n + 1, why })?;
        lines.push(Numbered {
            number: n + 1,
            line,
        });
    }
    Ok(lines)
}

/// What identifies a line: two lines with one key are copies of one record (identical: a
/// duplicate, read once) or a collision (different: the recording is malformed). Events and
/// saves have no key of their own, so only identical copies of them are told apart.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    Start,
    Request(u64),
    Response(u64),
    End(u64),
    Effect(u64),
    FinalTask(String, String),
    Stop,
    /// An event or a save, by a hash of its whole content.
    Content(u8, u64),
}

impl Key {
    fn of(line: &Line) -> Key {
        let content = |kind: u8| {
            let mut h = crate::trace::Fnv::default();
            h.write(
                serde_json::to_string(line)
                    .expect("history lines serialise")
                    .as_bytes(),
            );
            Key::Content(kind, h.0)
        };
        match line {
            Line::Start { .. } => Key::Start,
            Line::Request { seq, .. } => Key::Request(*seq),
            Line::Response { seq, .. } => Key::Response(*seq),
            Line::End { seq, .. } => Key::End(*seq),
            Line::Effect(e) => Key::Effect(e.seq),
            Line::FinalTask { replica, task, .. } => Key::FinalTask(
                replica.clone(),
                task.get("id")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            ),
            Line::Stop { .. } => Key::Stop,
            Line::Event { .. } => content(0),
            Line::Save(_) => content(1),
        }
    }

    fn describe(&self) -> String {
        match self {
            Key::Start => "the start".into(),
            Key::Request(s) => format!("request {s}"),
            Key::Response(s) => format!("the response to request {s}"),
            Key::End(s) => format!("the end of stream {s}"),
            Key::Effect(s) => format!("ledger effect {s}"),
            Key::FinalTask(r, t) => format!("the final copy of task {t} on {r}"),
            Key::Stop => "the stop".into(),
            Key::Content(..) => "an event or save".into(),
        }
    }
}

/// Most collisions a malformed-recording message lists.
const COLLISIONS_SHOWN: usize = 5;

/// The lines of a recording with every identical copy of a line dropped; a note says how
/// many were (and where), or `Err` when two lines record one thing differently (48 requests
/// sharing a `seq`, two different `start` lines): a malformed recording, never counted as
/// events. The message names the line numbers.
pub fn deduplicate(
    lines: Vec<Numbered>,
) -> Result<(Vec<Numbered>, Option<String>), RecordingError> {
    let mut first: std::collections::BTreeMap<Key, usize> = Default::default();
    let mut kept: Vec<Numbered> = Vec::with_capacity(lines.len());
    let mut dropped: Vec<usize> = Vec::new();
    let mut collisions: Vec<String> = Vec::new();
    let mut collision_count = 0usize;
    for l in lines {
        let key = Key::of(&l.line);
        match first.get(&key) {
            Some(&i) if kept[i].line == l.line => dropped.push(l.number),
            Some(&i) if matches!(key, Key::Content(..)) => {
                // Two different events or saves with one hash: both are kept.
                let _ = i;
                kept.push(l);
            }
            Some(&i) => {
                collision_count += 1;
                if collisions.len() < COLLISIONS_SHOWN {
                    collisions.push(format!(
                        "lines {} and {} both record {}, differently",
                        kept[i].number,
                        l.number,
                        key.describe()
                    ));
                }
            }
            None => {
                first.insert(key, kept.len());
                kept.push(l);
            }
        }
    }
    if collision_count > 0 {
        let more = collision_count - collisions.len();
        return Err(RecordingError::Malformed { collisions, more });
    }
    let note = (!dropped.is_empty()).then(|| {
        let shown: Vec<String> = dropped.iter().take(10).map(usize::to_string).collect();
        format!(
            "{} duplicated line(s) were identical copies of an earlier line and were read once (line {}{})",
            dropped.len(),
            shown.join(", "),
            if dropped.len() > 10 { ", ..." } else { "" }
        )
    });
    Ok((kept, note))
}
