//! The live run's ground truth on loopback: the project's ledger, plus the save log.
//!
//! `POST /effect` is the ledger of [`crate::ground::ledger`]: the same [`EffectRequest`], the same
//! [`LedgerState`] (applied unless its key was applied before). Its `sent_ms` is set to the
//! arrival time, since a real replica does not share the run's clock.
//!
//! `POST /save` is the save log the simulator's store host keeps and the checkers read
//! (`versions-monotonic`, `terminal-is-final`, `stream-continuity`, `liveness`). A real
//! replica reports each save its store accepted: the test peer wraps the SDK's store and
//! reports, without changing what the SDK reads or writes. A report either carries the
//! store's own versions (a versioned store) or none (a plain store has no versions): then
//! this log numbers the saves of each task 1, 2, 3, ... in arrival order, and the version a
//! save was built on is read from its content: the latest version whose artifacts and
//! message ids it all still holds. A save that drops what the stored version holds was
//! built on an older one: a lost update, which `versions-monotonic` reports as it does for
//! the simulator's overwrites.
//!
//! Content alone cannot see a lost update that dropped nothing (the version overwritten
//! differed only in its state), so the peer also reports each read (`POST /read`): a replica
//! builds on what it last read or saved, and a plain save is taken to be built on the older
//! of that version and the one its content names. Reads are reported after they return,
//! and saves before they land, so the version a read is booked at is never older than the
//! one it saw: the rule can miss a stale save but never invents one.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use a2a::TaskState;
use http::StatusCode;
use serde::Deserialize;

use crate::faults::KillPoint;
use crate::ground::ledger::{self, EffectRequest, LedgerState};
use crate::host::Host;

use super::kill_points::Points;
use crate::net;
use crate::store::{SaveMode, SaveRecord};
use crate::trace::{now_ms, Event, Trace};

/// What the live run's ledger host holds.
///
/// A pool of replicas serves one scenario after another ([`crate::live::pool`]): each
/// [`Ground::begin`]s with the contexts of its conversations, and an effect or save of any
/// other context (late work of an earlier scenario) is answered from a scratch ledger and
/// forgotten, unless the effect is on a task this scenario's saves made (a turn run with a
/// foreign contextId on the scenario's own task is the scenario's).
#[derive(Clone, Default)]
pub struct Ground {
    pub ledger: Rc<RefCell<LedgerState>>,
    saves: Rc<RefCell<Vec<SaveRecord>>>,
    versions: Rc<RefCell<BTreeMap<String, u64>>>,
    /// Per task: each plain-store version's artifacts and message ids.
    contents: Rc<RefCell<BTreeMap<String, Vec<Content>>>>,
    /// Per (task, replica): the version it last read or saved.
    seen: Rc<RefCell<BTreeMap<(String, String), u64>>>,
    /// The contexts of the scenario being served; `None`: every context is.
    contexts: Rc<RefCell<Option<BTreeSet<String>>>>,
    /// The trace of the scenario being served, when a pool set one.
    trace: Rc<RefCell<Option<Trace>>>,
    /// The scenario's armed kill points ([`super::kill_points`]), reached at `/effect`.
    pub points: super::kill_points::SharedPoints,
}

/// What one stored version held.
#[derive(Debug, Clone)]
struct Content {
    version: u64,
    artifacts: BTreeSet<String>,
    history: BTreeSet<String>,
}

/// Reported saves in the order the store applied them: by arrival, and by the store's own
/// version within a task when it has versions (two replicas may report their saves in the
/// other order than they landed).
pub fn in_store_order(mut saves: Vec<SaveRecord>) -> Vec<SaveRecord> {
    saves.sort_by_key(|s| s.at_ms);
    let mut by_task: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, s) in saves.iter().enumerate() {
        by_task.entry(s.task_id.clone()).or_default().push(i);
    }
    let mut out = saves.clone();
    for slots in by_task.values() {
        let mut these: Vec<SaveRecord> = slots.iter().map(|i| saves[*i].clone()).collect();
        if these.iter().all(|s| s.mode != SaveMode::Overwrite) {
            these.sort_by_key(|s| s.version);
        }
        for (slot, s) in slots.iter().zip(these) {
            out[*slot] = s;
        }
    }
    out
}

impl Ground {
    /// Forgets everything and serves the scenario whose conversations use `contexts`,
    /// recording into `trace`.
    pub fn begin(&self, contexts: BTreeSet<String>, trace: Trace) {
        *self.ledger.borrow_mut() = LedgerState::default();
        self.saves.borrow_mut().clear();
        self.versions.borrow_mut().clear();
        self.contents.borrow_mut().clear();
        self.seen.borrow_mut().clear();
        *self.contexts.borrow_mut() = Some(contexts);
        *self.trace.borrow_mut() = Some(trace);
    }

    /// Whether an effect or save of `context` belongs to the scenario being served.
    fn serves(&self, context: &str) -> bool {
        self.contexts
            .borrow()
            .as_ref()
            .is_none_or(|c| c.contains(context))
    }

    /// Whether an effect belongs to the scenario being served: by its contextId, or by its
    /// task, one this scenario's saves made. A turn that runs with another conversation's
    /// contextId on this scenario's task (a2a-sdk 1.1 runs a mismatched message queued
    /// behind a running turn: tests/fidelity/h10-context-mismatch-joins-a-running-turn-
    /// a2a-python-1.1.toml) reports the foreign contextId; its effect is this run's.
    fn serves_effect(&self, request: &EffectRequest) -> bool {
        self.serves(&request.context_id) || self.versions.borrow().contains_key(&request.task_id)
    }

    /// Every reported save, in the order the store applied them: by arrival, and by the
    /// store's own version within a task when it has versions (two replicas may report
    /// their saves in the other order than they landed).
    pub fn saves(&self) -> Vec<SaveRecord> {
        in_store_order(self.saves.borrow().clone())
    }

    /// The saves reported since the first `start`, in arrival order (what a recording
    /// writes as they come; [`in_store_order`] orders them again when it is read).
    pub fn saves_from(&self, start: usize) -> Vec<SaveRecord> {
        self.saves
            .borrow()
            .get(start..)
            .unwrap_or_default()
            .to_vec()
    }

    /// Books a read: `replica` now holds the latest version of `task_id` it was told of.
    pub fn record_read(&self, task_id: &str, replica: &str) {
        if let Some(v) = self.versions.borrow().get(task_id) {
            self.seen
                .borrow_mut()
                .insert((task_id.to_string(), replica.to_string()), *v);
        }
    }

    /// Records one reported save; returns its version.
    pub fn record_save(&self, report: SaveReport) -> Result<u64, ReportError> {
        let state = parse_state(&report.state)?;
        let seen_key = (report.task_id.clone(), report.replica.clone());
        let mut versions = self.versions.borrow_mut();
        let last = versions.get(&report.task_id).copied();
        let (mode, before, based_on, version) = match (report.mode.as_str(), report.version) {
            ("overwrite", None) => {
                let v = last.unwrap_or(0) + 1;
                let artifacts: BTreeSet<String> = report.artifacts.iter().cloned().collect();
                let history: BTreeSet<String> = report.history.iter().cloned().collect();
                let mut contents = self.contents.borrow_mut();
                let list = contents.entry(report.task_id.clone()).or_default();
                let by_content = list
                    .iter()
                    .rev()
                    .find(|c| c.artifacts.is_subset(&artifacts) && c.history.is_subset(&history))
                    .map(|c| c.version);
                let seen = self.seen.borrow().get(&seen_key).copied();
                let based_on = match (by_content, seen) {
                    (Some(c), Some(s)) => Some(c.min(s)),
                    (c, s) => c.or(s),
                };
                list.push(Content {
                    version: v,
                    artifacts,
                    history,
                });
                (SaveMode::Overwrite, last, based_on, v)
            }
            ("cas", Some(v)) => (
                SaveMode::Cas(report.based_on),
                report.before,
                report.based_on,
                v,
            ),
            ("cancel", Some(v)) => (
                SaveMode::Cancel,
                v.checked_sub(1).filter(|b| *b > 0),
                report.based_on,
                v,
            ),
            (mode, version) => {
                return Err(ReportError::Mode {
                    mode: mode.to_string(),
                    version,
                })
            }
        };
        versions.insert(report.task_id.clone(), last.unwrap_or(0).max(version));
        self.seen.borrow_mut().insert(seen_key, version);
        let at_ms = match (report.at_unix_ms, net::real()) {
            (Some(unix), Some(real)) => real.ms_at_unix(unix),
            _ => now_ms(),
        };
        self.saves.borrow_mut().push(SaveRecord {
            at_ms,
            task_id: report.task_id,
            context_id: report.context_id,
            mode,
            before,
            based_on,
            version,
            state,
            // The peer's own report: its replica's name becomes a host here.
            replica: Host::parse(&report.replica),
            artifacts: report.artifacts,
            history: report.history,
        });
        Ok(version)
    }
}

/// One read as a real replica reports it (after the store answered a task).
#[derive(Debug, Clone, Deserialize)]
pub struct ReadReport {
    pub task_id: String,
    pub context_id: String,
    pub replica: String,
}

/// One save as a real replica reports it.
#[derive(Debug, Clone, Deserialize)]
pub struct SaveReport {
    pub task_id: String,
    pub context_id: String,
    /// `working`, `input-required`, ... (the 1.0 state name without `TASK_STATE_`, kebab-case).
    pub state: String,
    /// Artifact names after the save.
    pub artifacts: Vec<String>,
    /// The messageIds in the task's history after the save.
    #[serde(default)]
    pub history: Vec<String>,
    pub replica: String,
    /// `overwrite` (plain store), `cas` or `cancel` (versioned store).
    pub mode: String,
    /// The version stored before (versioned stores).
    #[serde(default)]
    pub before: Option<u64>,
    /// The version the replica built this task on (versioned stores: the `prev_version` it
    /// passed; ignored for a plain store).
    #[serde(default)]
    pub based_on: Option<u64>,
    /// The store's new version (versioned stores); absent for a plain store.
    #[serde(default)]
    pub version: Option<u64>,
    /// When the store applied the save, by the replica's wall clock (ms since the Unix
    /// epoch, same machine): the save is booked then rather than at the report's arrival. A
    /// peer that reports after the store applied a save (Mastra's, whose listeners hear of
    /// the save at once) sends it, or its saves would look later than what they caused.
    #[serde(default)]
    pub at_unix_ms: Option<f64>,
}

/// Why a save report (or a recording's save line) is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReportError {
    /// A state name A2A does not have.
    #[error("save report: unknown task state `{0}`")]
    State(String),
    /// A mode and version that do not go together.
    #[error("save report: mode `{mode}` with version {version:?} is not one of overwrite (no version), cas or cancel (a version)")]
    Mode { mode: String, version: Option<u64> },
    /// A recording's save mode that is not one.
    #[error("save mode `{0}` is not cas, overwrite or cancel")]
    SaveMode(String),
}

/// A save report's state name (`input-required`) as a task state.
pub fn parse_state(name: &str) -> Result<TaskState, ReportError> {
    Ok(match name {
        "submitted" => TaskState::Submitted,
        "working" => TaskState::Working,
        "input-required" => TaskState::InputRequired,
        "auth-required" => TaskState::AuthRequired,
        "completed" => TaskState::Completed,
        "canceled" => TaskState::Canceled,
        "failed" => TaskState::Failed,
        "rejected" => TaskState::Rejected,
        other => return Err(ReportError::State(other.to_string())),
    })
}

fn bad(why: String) -> http::Response<net::BoxBody> {
    net::json_response(
        StatusCode::BAD_REQUEST,
        &serde_json::json!({ "error": why }),
    )
}

/// The `ledger` host of a live run: `/effect` and `/save`.
pub async fn serve(ground: Ground, trace: Trace) -> turmoil::Result {
    net::serve(
        crate::ground::ledger::PORT,
        move |req: http::Request<hyper::body::Incoming>| {
            let ground = ground.clone();
            let trace = ground
                .trace
                .borrow()
                .clone()
                .unwrap_or_else(|| trace.clone());
            async move {
                let path = req.uri().path().to_string();
                let body = match net::read_request(req.into_body()).await {
                    Ok(b) => b,
                    Err(e) => return Ok(bad(e.to_string())),
                };
                match path.as_str() {
                    "/effect" => {
                        let mut request: EffectRequest = match serde_json::from_slice(&body) {
                            Ok(r) => r,
                            Err(e) => return Ok(bad(e.to_string())),
                        };
                        request.sent_ms = now_ms();
                        if !ground.serves_effect(&request) {
                            let scratch = Rc::new(RefCell::new(LedgerState::default()));
                            let quiet = Trace::new(false);
                            return Ok(ledger::arrive_and_answer(&scratch, &quiet, request).await);
                        }
                        // `kill-at` points: killed with its effect on the wire, it never
                        // lands; killed after it, the effect stands and no answer goes back.
                        let replica = request.replica.clone();
                        let reached =
                            |point| Points::reached(&ground.points, &replica, point, now_ms());
                        if reached(KillPoint::Effect) {
                            return Ok(bad("the replica was killed at its effect".into()));
                        }
                        let answer =
                            ledger::arrive_and_answer(&ground.ledger, &trace, request).await;
                        if reached(KillPoint::AfterEffect) {
                            return Ok(bad("the replica was killed after its effect".into()));
                        }
                        Ok(answer)
                    }
                    "/save" => {
                        let report: SaveReport = match serde_json::from_slice(&body) {
                            Ok(r) => r,
                            Err(e) => return Ok(bad(e.to_string())),
                        };
                        if !ground.serves(&report.context_id) {
                            return Ok(net::json_response(
                                StatusCode::OK,
                                &serde_json::json!({ "version": report.version.unwrap_or(0) }),
                            ));
                        }
                        let what = format!(
                            "save {} as {} by {}",
                            report.task_id, report.state, report.replica
                        );
                        match ground.record_save(report) {
                            Ok(v) => {
                                trace.record(Host::Store, Event::plain(format!("{what}: v{v}")));
                                Ok(net::json_response(
                                    StatusCode::OK,
                                    &serde_json::json!({ "version": v }),
                                ))
                            }
                            Err(e) => Ok(bad(e.to_string())),
                        }
                    }
                    "/read" => {
                        let report: ReadReport = match serde_json::from_slice(&body) {
                            Ok(r) => r,
                            Err(e) => return Ok(bad(e.to_string())),
                        };
                        if ground.serves(&report.context_id) {
                            ground.record_read(&report.task_id, &report.replica);
                        }
                        Ok(net::json_response(StatusCode::OK, &serde_json::json!({})))
                    }
                    _ => Ok(net::json_response(
                        StatusCode::NOT_FOUND,
                        &serde_json::json!({ "error": "not found" }),
                    )),
                }
            }
        },
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(mode: &str, based_on: Option<u64>, version: Option<u64>) -> SaveReport {
        SaveReport {
            task_id: "t".into(),
            context_id: "c".into(),
            state: "working".into(),
            artifacts: vec![],
            history: vec![],
            replica: "replica-0".into(),
            mode: mode.into(),
            before: version.and_then(|v| v.checked_sub(1)).filter(|b| *b > 0),
            based_on,
            version,
            at_unix_ms: None,
        }
    }

    fn plain(artifacts: &[&str], history: &[&str]) -> SaveReport {
        let mut r = report("overwrite", None, None);
        r.artifacts = artifacts.iter().map(|s| s.to_string()).collect();
        r.history = history.iter().map(|s| s.to_string()).collect();
        r
    }

    #[test]
    fn an_effect_with_a_foreign_context_on_a_served_task_is_the_runs() {
        let g = Ground::default();
        g.begin(BTreeSet::from(["c".to_string()]), Trace::new(false));
        g.record_save(plain(&[], &["m1"])).unwrap();
        let effect = |task: &str, context: &str| EffectRequest {
            task_id: task.into(),
            context_id: context.into(),
            conversation: "c1".into(),
            turn: 3,
            message_id: "m3".into(),
            replica: crate::host::Host::Replica(0),
            key: None,
            sent_ms: 0,
        };
        assert!(g.serves_effect(&effect("t", "c")));
        // The run's task, run with another conversation's contextId: still this run's.
        assert!(g.serves_effect(&effect("t", "elsewhere")));
        // Another scenario's task and context (a pool serves one scenario at a time).
        assert!(!g.serves_effect(&effect("u", "elsewhere")));
    }

    #[test]
    fn a_plain_save_is_built_on_the_latest_version_it_still_holds() {
        let g = Ground::default();
        assert_eq!(g.record_save(plain(&[], &["m1"])), Ok(1));
        assert_eq!(g.record_save(plain(&["turn-1"], &["m1"])), Ok(2));
        assert_eq!(
            g.record_save(plain(&["turn-1", "turn-2"], &["m1", "m2"])),
            Ok(3)
        );
        // Built on the turn-1 snapshot: turn 2 is dropped.
        assert_eq!(
            g.record_save(plain(&["turn-1", "turn-3"], &["m1", "m3"])),
            Ok(4)
        );
        let saves = g.saves();
        assert_eq!((saves[2].before, saves[2].based_on), (Some(2), Some(2)));
        assert_eq!((saves[3].before, saves[3].based_on), (Some(3), Some(2)));
    }

    #[test]
    fn a_plain_save_is_built_on_no_newer_version_than_its_replica_last_saw() {
        let g = Ground::default();
        let by = |replica: &str, r: SaveReport| SaveReport {
            replica: replica.into(),
            ..r
        };
        g.record_save(by("replica-0", plain(&[], &["m1"]))).unwrap();
        g.record_save(by("replica-0", plain(&["turn-1"], &["m1"])))
            .unwrap();
        // replica-1 reads v2 and saves v3, a state change only (same content).
        g.record_read("t", "replica-1");
        g.record_save(by("replica-1", plain(&["turn-1"], &["m1"])))
            .unwrap();
        // replica-0 saves again on its own v2: the content names v3, the replica saw v2.
        g.record_save(by("replica-0", plain(&["turn-1"], &["m1"])))
            .unwrap();
        let saves = g.saves();
        assert_eq!((saves[2].before, saves[2].based_on), (Some(2), Some(2)));
        assert_eq!((saves[3].before, saves[3].based_on), (Some(3), Some(2)));
    }

    #[test]
    fn versioned_reports_are_ordered_by_the_stores_versions() {
        let g = Ground::default();
        g.record_save(report("cas", Some(1), Some(2))).unwrap();
        g.record_save(report("cas", None, Some(1))).unwrap();
        let versions: Vec<u64> = g.saves().iter().map(|s| s.version).collect();
        assert_eq!(versions, vec![1, 2]);
        assert!(g.record_save(report("sideways", None, None)).is_err());
    }
}
