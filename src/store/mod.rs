//! Task stores: a per-pod memory store and a shared store served on the simulated network.
//!
//! Both keep the same [`StoreState`]: a [`TaskTable`] (tasks with a version and an event
//! log), the save log the checkers read, a `(contextId, messageId)` dedup table, push
//! configs and the push outbox. What differs is where the state lives:
//! - [`Placement::Memory`](crate::model::Placement): inside the replica, dropped when the pod
//!   dies and invisible to other replicas.
//! - [`Placement::Shared`](crate::model::Placement): inside the `store` host, reached over the
//!   network (so latency and partitions apply), durable across a restart of the store host
//!   (the state outlives the host's software, as a database's committed rows do).
//!
//! Saves come in three modes (A2A-BEHAVIOURS.md §2.1): compare-and-swap on the version read,
//! unconditional overwrite (the legacy adapter: last writer wins), and the cancel special
//! case that skips the version check unless the task is missing or already terminal.
//!
//! - [`table`]: the task table as a trait, and the built-in [`VersionedTable`];
//! - `state.rs`: everything a store holds around its table ([`StoreState`]);
//! - `wire.rs`: one request applied to a store, in a pod or in the host;
//! - `client.rs`: a replica's [`TaskStore`], local or remote;
//! - `host.rs`: the `store` host ([`serve`]).

mod client;
mod host;
mod state;
pub mod table;
mod tagged;
mod wire;

use std::cell::RefCell;
use std::fmt;
use std::rc::Rc;

use a2a::Task;
use serde::{Deserialize, Serialize};

pub use client::{Pool, StoreError, TaskStore};
pub use host::{serve, OpTimes, OP_TIMES};
pub use state::{OutboxEntry, StoreBounds, StoreState};
pub use table::{Stored, TableFactory, TaskTable, VersionedTable};
pub use wire::buggify_conflict;

/// Port the store host serves on.
pub const PORT: u16 = 7000;

/// The writer named in the save log for a BUGGIFY phantom write.
pub const PHANTOM_WRITER: &str = "buggify";

/// How a save treats the version it was based on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "mode", content = "prev")]
pub enum SaveMode {
    /// Compare-and-swap: `None` inserts a new task (conflicts if it exists), `Some(v)`
    /// conflicts unless the stored version is `v`.
    Cas(Option<u64>),
    /// Last writer wins.
    Overwrite,
    /// Write CANCELED onto the stored task unless it is missing or terminal; no version
    /// check, and what others wrote stays.
    Cancel,
    /// Write the given task (CANCELED) whole unless the stored one is missing or terminal;
    /// no version check, so a copy built on an older version undoes what others wrote
    /// since (a2a-sdk 1.3.0 `VersionedDatabaseTaskStore._save_once`).
    CancelWhole,
}

impl SaveMode {
    /// Either cancel mode: written without a version check.
    pub fn is_cancel(self) -> bool {
        matches!(self, SaveMode::Cancel | SaveMode::CancelWhole)
    }
}

/// The words a save's mode has in the trace (`Cas(Some(2))`, `Overwrite`): part of every
/// trace hash, so written out here rather than derived, and pinned by a test.
impl fmt::Display for SaveMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SaveMode::Cas(Some(v)) => write!(f, "Cas(Some({v}))"),
            SaveMode::Cas(None) => f.write_str("Cas(None)"),
            SaveMode::Overwrite => f.write_str("Overwrite"),
            SaveMode::Cancel => f.write_str("Cancel"),
            SaveMode::CancelWhole => f.write_str("CancelWhole"),
        }
    }
}

/// Why a save was refused or not answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum SaveError {
    /// The stored version is not the one the save was based on.
    Conflict { current: Option<u64> },
    /// A cancel found the task missing or terminal.
    NotCancelable,
    /// The store did not answer (timeout, partition, crash, a stale pooled connection).
    Unavailable(StoreError),
}

/// The words a refusal has in the trace (`Conflict { current: Some(2) }`): part of every
/// trace hash, so written out here rather than derived, and pinned by a test.
impl fmt::Display for SaveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SaveError::Conflict { current: Some(v) } => {
                write!(f, "Conflict {{ current: Some({v}) }}")
            }
            SaveError::Conflict { current: None } => f.write_str("Conflict { current: None }"),
            SaveError::NotCancelable => f.write_str("NotCancelable"),
            SaveError::Unavailable(why) => write!(f, "Unavailable({:?})", why.to_string()),
        }
    }
}

/// One accepted save, as the store saw it: ground truth for `versions-monotonic`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaveRecord {
    pub at_ms: u64,
    pub task_id: String,
    pub context_id: String,
    pub mode: SaveMode,
    /// The version stored before this save (`None`: the task did not exist).
    pub before: Option<u64>,
    /// The version the writer had read when it built this task (`None`: it created it).
    pub based_on: Option<u64>,
    /// The version this save created.
    pub version: u64,
    pub state: a2a::TaskState,
    pub replica: crate::host::Host,
    /// Artifact names in the task after this save.
    pub artifacts: Vec<String>,
    /// The message ids in the task's history after this save: with the artifact names,
    /// what the live observer reads a plain store's save's base from
    /// ([`crate::live::observer`]).
    pub history: Vec<String>,
}

/// What a dedup claim found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "claim")]
pub enum Claim {
    /// Nobody has this message: the caller now holds it.
    New,
    /// Another request holds it and its lease has not run out.
    InFlight,
    /// It completed; this is the task it produced.
    Done { task_id: String },
}

/// The words a claim has in the trace (`Done { task_id: "t1" }`): part of every trace
/// hash, so written out here rather than derived, and pinned by a test.
impl fmt::Display for Claim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Claim::New => f.write_str("New"),
            Claim::InFlight => f.write_str("InFlight"),
            Claim::Done { task_id } => write!(f, "Done {{ task_id: {task_id:?} }}"),
        }
    }
}

/// Whether the task's history holds the message with this messageId.
pub fn holds_message(task: &Task, message_id: &str) -> bool {
    task.history
        .iter()
        .flatten()
        .any(|m| m.message_id == message_id)
}

/// The names of a task's artifacts, in order, as the checkers read them: each artifact's
/// name (else its id), except a transcript of turns, which stands for the turns it holds. A
/// transcript is an artifact not itself named `turn-N` whose text is lines `turn-N` and
/// nothing else: Mastra keeps one `response.txt` whose text is a line per turn its run
/// performed (tests/peers/mastra/README.md), where other systems keep an artifact `turn-N`
/// per turn; both read as `turn-1`, `turn-2`, ...
pub fn artifact_names(task: &Task) -> Vec<String> {
    let mut names = Vec::new();
    for a in task.artifacts.iter().flatten() {
        let name = a.name.clone().unwrap_or_else(|| a.artifact_id.clone());
        match transcript(a).filter(|_| !is_turn_mark(&name)) {
            Some(turns) => names.extend(turns),
            None => names.push(name),
        }
    }
    names
}

/// Whether `text` is a turn's mark, `turn-N`.
fn is_turn_mark(text: &str) -> bool {
    text.strip_prefix("turn-")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The turn marks an artifact's text is made of, line by line; `None` when its text is
/// anything else (or empty).
fn transcript(artifact: &a2a::Artifact) -> Option<Vec<String>> {
    let mut marks = Vec::new();
    for part in &artifact.parts {
        let a2a::PartContent::Text(text) = &part.content else {
            return None;
        };
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            if !is_turn_mark(line.trim()) {
                return None;
            }
            marks.push(line.trim().to_string());
        }
    }
    (!marks.is_empty()).then_some(marks)
}

/// Shared handle to a store's state.
pub type SharedState = Rc<RefCell<StoreState>>;

/// A fresh store around a table from `factory`, or the built-in one.
pub fn shared(factory: Option<&TableFactory>) -> SharedState {
    let table = match factory {
        Some(make) => make(),
        None => Box::new(VersionedTable::default()) as Box<dyn TaskTable>,
    };
    Rc::new(RefCell::new(StoreState::new(table)))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_save_prints_the_words_every_trace_hash_was_made_with() {
        use super::{Claim, SaveError, SaveMode};
        let modes = [
            SaveMode::Cas(Some(2)),
            SaveMode::Cas(None),
            SaveMode::Overwrite,
            SaveMode::Cancel,
            SaveMode::CancelWhole,
        ];
        let words: Vec<String> = modes.iter().map(ToString::to_string).collect();
        assert_eq!(
            words,
            [
                "Cas(Some(2))",
                "Cas(None)",
                "Overwrite",
                "Cancel",
                "CancelWhole"
            ]
        );
        let errors = [
            SaveError::Conflict { current: Some(7) },
            SaveError::Conflict { current: None },
            SaveError::NotCancelable,
            SaveError::Unavailable(StoreError::Unanswered("store connect: \"refused\"".into())),
        ];
        let words: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            words,
            [
                "Conflict { current: Some(7) }",
                "Conflict { current: None }",
                "NotCancelable",
                r#"Unavailable("store connect: \"refused\"")"#,
            ]
        );
        let claims = [
            Claim::New,
            Claim::InFlight,
            Claim::Done {
                task_id: "task-\"1\"".into(),
            },
        ];
        let words: Vec<String> = claims.iter().map(ToString::to_string).collect();
        assert_eq!(
            words,
            ["New", "InFlight", r#"Done { task_id: "task-\"1\"" }"#]
        );
        // Each word is still what the derived Debug says, for the variants above.
        for m in modes {
            assert_eq!(m.to_string(), format!("{m:?}"));
        }
        // (An unanswered save's words are the plain string it carried before its reason
        // became a type: `Unavailable("...")`, not the Debug of the type.)
        for e in errors
            .into_iter()
            .filter(|e| !matches!(e, SaveError::Unavailable(_)))
        {
            assert_eq!(e.to_string(), format!("{e:?}"));
        }
        for c in claims {
            assert_eq!(c.to_string(), format!("{c:?}"));
        }
    }

    use super::*;

    fn task(id: &str) -> Task {
        Task {
            id: id.into(),
            context_id: "c".into(),
            status: a2a::TaskStatus {
                state: a2a::TaskState::Working,
                message: None,
                timestamp: None,
            },
            artifacts: None,
            history: None,
            metadata: None,
        }
    }

    #[test]
    fn a_transcript_of_turns_reads_as_the_turns_it_holds() {
        let artifact = |name: &str, text: &str| a2a::Artifact {
            artifact_id: format!("id-{name}"),
            name: Some(name.into()),
            description: None,
            parts: vec![a2a::Part::text(text)],
            metadata: None,
            extensions: None,
        };
        let mut t = task("t");
        t.artifacts = Some(vec![
            artifact("turn-1", "result of turn 1"),
            artifact("response.txt", "turn-2\nturn-3\n"),
            artifact("notes.txt", "turn-4\nand more"),
            artifact("turn-5", "turn-5\n"),
        ]);
        assert_eq!(
            artifact_names(&t),
            ["turn-1", "turn-2", "turn-3", "notes.txt", "turn-5"]
        );
    }

    #[test]
    fn cas_refuses_a_stale_version_and_overwrite_does_not() {
        let mut s = StoreState::default();
        let (r0, r1) = (
            &crate::host::Host::Replica(0),
            &crate::host::Host::Replica(1),
        );
        assert_eq!(s.save(task("t"), SaveMode::Cas(None), None, r0), Ok(1));
        assert_eq!(
            s.save(task("t"), SaveMode::Cas(None), None, r1),
            Err(SaveError::Conflict { current: Some(1) })
        );
        assert_eq!(
            s.save(task("t"), SaveMode::Cas(Some(1)), Some(1), r0),
            Ok(2)
        );
        assert_eq!(
            s.save(task("t"), SaveMode::Cas(Some(1)), Some(1), r1),
            Err(SaveError::Conflict { current: Some(2) })
        );
        assert_eq!(s.save(task("t"), SaveMode::Overwrite, Some(1), r1), Ok(3));
    }

    #[test]
    fn cancel_skips_the_version_but_not_terminal_states() {
        let mut s = StoreState::default();
        s.save(
            task("t"),
            SaveMode::Cas(None),
            None,
            &crate::host::Host::Replica(0),
        )
        .unwrap();
        let mut c = task("t");
        c.status.state = a2a::TaskState::Canceled;
        assert_eq!(
            s.save(
                c.clone(),
                SaveMode::Cancel,
                Some(1),
                &crate::host::Host::Replica(1)
            ),
            Ok(2)
        );
        assert_eq!(
            s.save(c, SaveMode::Cancel, Some(1), &crate::host::Host::Replica(1)),
            Err(SaveError::NotCancelable)
        );
    }

    #[test]
    fn a_claim_is_held_until_its_lease_runs_out() {
        let mut s = StoreState::default();
        assert_eq!(s.claim("k", 0, 100), Claim::New);
        assert_eq!(s.claim("k", 50, 100), Claim::InFlight);
        assert_eq!(s.claim("k", 150, 100), Claim::New);
        s.finish("k", Some("t".into()), 160, 1000);
        assert_eq!(
            s.claim("k", 170, 100),
            Claim::Done {
                task_id: "t".into()
            }
        );
    }
}
