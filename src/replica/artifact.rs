//! The artifact a turn's result leaves on its task, as the model's `handler.artifacts` says:
//! one `turn-N` per turn beside the earlier ones, or Mastra's one `response.txt`, replaced at
//! each run end with the run's text ([`Artifacts`]).
//!
//! A run-text artifact holds a line `turn-N` per turn, so the checkers read it as the turns it
//! holds ([`crate::store::artifact_names`]), as they read per-turn artifacts.

use a2a::{Artifact, Part, Task};

use super::{Replica, TurnInfo};
use crate::model::Artifacts;

/// The name of a run-text artifact (Mastra's).
const RUN_TEXT_NAME: &str = "response.txt";

impl Replica {
    /// The artifact turn `info` of `task` leaves, `None` when it leaves none (a run-text
    /// send that suspends on its run's first turn). `run`: the run the turn belongs to
    /// ([`super::follow_up::run_of`]); `streaming`: the turn runs on a stream; `suspends`: it
    /// ends input-required. Books the turn in its run's text.
    pub(super) fn result_artifact(
        &self,
        task: &Task,
        info: &TurnInfo,
        run: u32,
        streaming: bool,
        suspends: bool,
    ) -> Option<Artifact> {
        match self.profile.handler.artifacts.unwrap_or_default() {
            Artifacts::PerTurn => Some(Artifact {
                artifact_id: format!("{}-turn-{}", task.id, info.turn),
                name: Some(format!("turn-{}", info.turn)),
                description: None,
                parts: vec![Part::text(format!("result of turn {}", info.turn))],
                metadata: None,
                extensions: None,
            }),
            Artifacts::RunText => {
                let mut runs = self.tasks.run_text.borrow_mut();
                // A turn the run performs twice (a resent message) is in its text twice; a
                // run started beside another (a follow-up before the first suspends) has a
                // text of its own.
                let text = runs.entry((task.id.clone(), run)).or_default();
                text.push(info.turn);
                // A stream's text is its own; the send path's is the run's, without the
                // step that suspended it (this turn's own line, the last one it booked).
                let lines: Vec<u32> = if streaming {
                    vec![info.turn]
                } else {
                    let mut lines = text.clone();
                    if suspends {
                        if let Some(own) = lines.iter().rposition(|t| *t == info.turn) {
                            lines.remove(own);
                        }
                    }
                    lines
                };
                if lines.is_empty() {
                    return None;
                }
                let text: String = lines.iter().map(|t| format!("turn-{t}\n")).collect();
                Some(Artifact {
                    artifact_id: format!("{}:response", task.id),
                    name: Some(RUN_TEXT_NAME.into()),
                    description: None,
                    parts: vec![Part::text(text)],
                    metadata: None,
                    extensions: None,
                })
            }
        }
    }
}

impl Replica {
    /// Puts `artifact` on `task`: beside the others ([`Artifacts::PerTurn`], once), or in
    /// place of the run's earlier text ([`Artifacts::RunText`]). Idempotent, so a save
    /// re-applied on a fresh copy after a conflict adds nothing twice.
    pub(super) fn put_artifact(&self, task: &mut Task, artifact: &Artifact) {
        let artifacts = task.artifacts.get_or_insert_with(Vec::new);
        match self.profile.handler.artifacts.unwrap_or_default() {
            Artifacts::RunText => {
                artifacts.retain(|a| a.name != artifact.name);
                artifacts.push(artifact.clone());
            }
            Artifacts::PerTurn => {
                if !artifacts
                    .iter()
                    .any(|a| a.artifact_id == artifact.artifact_id)
                {
                    artifacts.push(artifact.clone());
                }
            }
        }
    }
}
