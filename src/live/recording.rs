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
            replica: s.replica.clone(),
            artifacts: s.artifacts.clone(),
        }
    }

    /// Back to the save log's record; `Err` names a mode or state that is not one.
    pub fn record(&self) -> Result<crate::store::SaveRecord, String> {
        use crate::store::SaveMode;
        let mode = match self.mode.as_str() {
            "cas" => SaveMode::Cas(self.based_on),
            "overwrite" => SaveMode::Overwrite,
            "cancel" => SaveMode::Cancel,
            other => {
                return Err(format!(
                    "save mode `{other}` is not cas, overwrite or cancel"
                ))
            }
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
            replica: self.replica.clone(),
            artifacts: self.artifacts.clone(),
            // A history file's save lines carry no message ids: nothing reads them back.
            history: Vec::new(),
        })
    }
}

/// `input-required` for [`a2a::TaskState::InputRequired`]: the save reports' state names.
pub fn state_word(state: &a2a::TaskState) -> String {
    use a2a::TaskState::*;
    match state {
        Submitted => "submitted",
        Working => "working",
        InputRequired => "input-required",
        AuthRequired => "auth-required",
        Completed => "completed",
        Canceled => "canceled",
        Failed => "failed",
        Rejected => "rejected",
        Unspecified => "unspecified",
    }
    .into()
}

/// Appends lines to a history file, one write and flush per line, so a file cut short by a
/// crash still holds every exchange before it. Cloning shares the file.
#[derive(Clone)]
pub struct Recorder {
    out: Rc<RefCell<std::io::BufWriter<std::fs::File>>>,
    lines: Rc<RefCell<u64>>,
}

impl Recorder {
    /// Creates (or truncates) the file.
    pub fn create(path: &Path) -> std::io::Result<Recorder> {
        let file = std::fs::File::create(path)?;
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

/// Reads a history file: its lines, in order; `Err` names the first line that is not one.
pub fn read(path: &Path) -> Result<Vec<Line>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read: {e}"))?;
    let mut lines = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        if raw.trim().is_empty() {
            continue;
        }
        let line: Line = serde_json::from_str(raw).map_err(|e| format!("line {}: {e}", n + 1))?;
        lines.push(line);
    }
    Ok(lines)
}
