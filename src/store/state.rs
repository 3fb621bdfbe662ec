//! Everything a store holds: its task table, the save log, dedup claims, push configs
//! and the push outbox. A shared store keeps one in the `store` host; each pod keeps its
//! own for a per-pod memory store.

use std::collections::BTreeMap;

use a2a::Task;
use serde::{Deserialize, Serialize};

use crate::trace::now_ms;

use super::table::{Stored, TaskTable, VersionedTable};
use super::{artifact_names, Claim, SaveError, SaveMode, SaveRecord, PHANTOM_WRITER};

#[derive(Debug, Clone)]
enum DedupEntry {
    InFlight { until_ms: u64 },
    Done { task_id: String, until_ms: u64 },
}

/// Everything a store holds.
#[derive(Debug)]
pub struct StoreState {
    table: Box<dyn TaskTable>,
    saves: Vec<SaveRecord>,
    dedup: BTreeMap<String, DedupEntry>,
    push_configs: BTreeMap<String, Vec<String>>,
    outbox: BTreeMap<u64, OutboxEntry>,
    next_outbox_id: u64,
    /// Per task: the version last weighed and its JSON size ([`StoreState::evict`] only).
    sizes: BTreeMap<String, (u64, usize)>,
}

impl Default for StoreState {
    /// A store around the built-in [`VersionedTable`].
    fn default() -> StoreState {
        StoreState::new(Box::new(VersionedTable::default()))
    }
}

/// The bounds a long-lived store keeps (`a2a-chaos serve`, [`StoreState::evict`]); a
/// simulation sets none and its store is never evicted from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreBounds {
    /// Most tasks kept; beyond it the tasks at rest (terminal, or waiting for input) that
    /// were saved least recently go first.
    pub tasks_max: usize,
    /// Most versions of one task kept in its event log (what a subscription replays).
    pub events_per_task: usize,
    /// Most bytes the tasks may weigh, each weighed as its JSON size times the copies kept
    /// of it (the current one and its event log); beyond it the same order of eviction.
    pub bytes_max: usize,
}

/// A push waiting in the outbox: what to send where, and who holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutboxEntry {
    pub task: Task,
    pub url: String,
    /// Deliveries tried so far.
    pub attempts: u32,
    /// A claim holds the entry until then (simulated ms).
    pub held_until_ms: u64,
}

impl StoreState {
    /// A store around `table`.
    pub fn new(table: Box<dyn TaskTable>) -> StoreState {
        StoreState {
            table,
            saves: Vec::new(),
            dedup: BTreeMap::new(),
            push_configs: BTreeMap::new(),
            outbox: BTreeMap::new(),
            next_outbox_id: 0,
            sizes: BTreeMap::new(),
        }
    }

    /// The task and its version.
    pub fn get(&self, task_id: &str) -> Option<(Task, u64)> {
        self.table.get(task_id)
    }

    /// The task's version (`None`: no such task), without copying the task.
    pub fn version(&self, task_id: &str) -> Option<u64> {
        self.table.version(task_id)
    }

    /// Whether every task is at rest ([`crate::protocol::at_rest`]), without copying any.
    pub fn all_at_rest(&self) -> bool {
        self.table
            .tasks()
            .all(|(t, _)| crate::protocol::at_rest(&t.status.state))
    }

    /// Whether no push waits in the outbox.
    pub fn outbox_empty(&self) -> bool {
        self.outbox.is_empty()
    }

    /// Every task and its version, by id.
    pub fn tasks(&self) -> BTreeMap<String, (Task, u64)> {
        self.table
            .tasks()
            .map(|(t, v)| (t.id.clone(), (t.clone(), v)))
            .collect()
    }

    /// Every task, the most recently saved first (by the save log; a task with no logged
    /// save, put in a user's table by other means, comes last, by id).
    pub fn recent(&self) -> Vec<Task> {
        let mut seen = std::collections::BTreeSet::new();
        let mut out = Vec::new();
        for id in self.saves.iter().rev().map(|s| &s.task_id) {
            if seen.insert(id.clone()) {
                if let Some((task, _)) = self.get(id) {
                    out.push(task);
                }
            }
        }
        for (id, (task, _)) in self.tasks() {
            if !seen.contains(&id) {
                out.push(task);
            }
        }
        out
    }

    /// Every accepted save, in order.
    pub fn saves(&self) -> &[SaveRecord] {
        &self.saves
    }

    /// Snapshots of a task at each version after `after`, in version order.
    pub fn events_after(&self, task_id: &str, after: u64) -> Vec<(u64, Task)> {
        self.table.events_after(task_id, after)
    }

    /// Applies a save through the table and logs it; returns the new version. `based_on`
    /// is the version the writer read.
    pub fn save(
        &mut self,
        task: Task,
        mode: SaveMode,
        based_on: Option<u64>,
        replica: &crate::host::Host,
    ) -> Result<u64, SaveError> {
        let Stored {
            task,
            version,
            before,
        } = self.table.save(task, mode, based_on)?;
        self.saves.push(SaveRecord {
            at_ms: now_ms(),
            task_id: task.id.clone(),
            context_id: task.context_id.clone(),
            mode,
            before,
            based_on,
            version,
            state: task.status.state.clone(),
            replica: replica.clone(),
            artifacts: artifact_names(&task),
            history: task
                .history
                .iter()
                .flatten()
                .map(|m| m.message_id.clone())
                .collect(),
        });
        Ok(version)
    }

    /// A phantom writer (the `conflict-on-save` BUGGIFY point) rewrites a task as it is,
    /// which bumps its version: a CAS save based on the old version then conflicts. Returns
    /// the new version, or `None` when the task does not exist.
    pub fn phantom_write(&mut self, task_id: &str) -> Option<u64> {
        let (task, version) = self.table.get(task_id)?;
        self.save(
            task,
            SaveMode::Cas(Some(version)),
            Some(version),
            &crate::host::Host::parse(PHANTOM_WRITER),
        )
        .ok()
    }

    /// Registers a push URL for a task (a config without an id adds one more URL).
    pub fn add_push(&mut self, task_id: &str, url: &str) {
        let urls = self.push_configs.entry(task_id.to_string()).or_default();
        if !urls.iter().any(|u| u == url) {
            urls.push(url.to_string());
        }
    }

    /// Unregisters a push URL of a task.
    pub fn remove_push(&mut self, task_id: &str, url: &str) {
        if let Some(urls) = self.push_configs.get_mut(task_id) {
            urls.retain(|u| u != url);
            if urls.is_empty() {
                self.push_configs.remove(task_id);
            }
        }
    }

    /// The push URLs registered for a task.
    pub fn push_urls(&self, task_id: &str) -> Vec<String> {
        self.push_configs.get(task_id).cloned().unwrap_or_default()
    }

    /// Queues a push for every URL registered for `task`.
    pub fn enqueue_push(&mut self, task: &Task) -> usize {
        let urls = self.push_urls(&task.id);
        for url in &urls {
            self.next_outbox_id += 1;
            self.outbox.insert(
                self.next_outbox_id,
                OutboxEntry {
                    task: task.clone(),
                    url: url.clone(),
                    attempts: 0,
                    held_until_ms: 0,
                },
            );
        }
        urls.len()
    }

    /// Claims the outbox entries nobody holds, for `lease_ms`.
    pub fn claim_outbox(&mut self, now_ms: u64, lease_ms: u64) -> Vec<(u64, OutboxEntry)> {
        let mut out = Vec::new();
        for (id, entry) in self.outbox.iter_mut() {
            if entry.held_until_ms <= now_ms {
                entry.held_until_ms = now_ms.saturating_add(lease_ms);
                entry.attempts += 1;
                out.push((*id, entry.clone()));
            }
        }
        out
    }

    /// Pushes still owed: `(task id, state)` of every outbox entry.
    pub fn outbox_pending(&self) -> Vec<(String, a2a::TaskState)> {
        self.outbox
            .values()
            .map(|e| (e.task.id.clone(), e.task.status.state.clone()))
            .collect()
    }

    /// Removes an outbox entry (delivered, or given up).
    pub fn ack_outbox(&mut self, id: u64) {
        self.outbox.remove(&id);
    }

    /// Working or submitted tasks whose runner lease (the replica's marker
    /// `a2aChaos.runnerUntilMs`) ran out before `now_ms`.
    pub fn abandoned(&self, now_ms: u64) -> Vec<(Task, u64)> {
        self.table
            .tasks()
            .filter(|(t, _)| {
                matches!(
                    t.status.state,
                    a2a::TaskState::Working | a2a::TaskState::Submitted
                )
            })
            .filter(|(t, _)| {
                t.metadata
                    .as_ref()
                    .and_then(|m| m.get("a2aChaos"))
                    .and_then(|m| m.get("runnerUntilMs"))
                    .and_then(serde_json::Value::as_u64)
                    .is_some_and(|until| until < now_ms)
            })
            .map(|(t, v)| (t.clone(), v))
            .collect()
    }

    /// Brings the store within `bounds` at `now_ms`: evicts the tasks at rest beyond
    /// `tasks_max`, the least recently saved first (a working task is never evicted), with
    /// their save records, push URLs and finished dedup claims; trims every event log to
    /// `events_per_task` versions and forgets expired finished claims; keeps one save record
    /// per task once the log is much longer than the table. Returns the ids evicted.
    pub fn evict(&mut self, bounds: &StoreBounds, now_ms: u64) -> Vec<String> {
        self.table.trim_events(bounds.events_per_task.max(1));
        self.dedup.retain(|_, e| match e {
            DedupEntry::Done { until_ms, .. } => *until_ms > now_ms,
            DedupEntry::InFlight { .. } => true,
        });
        let count = self.table.tasks().count();
        // Weigh what changed since the last sweep; forget the weights of tasks now gone.
        let mut weights: BTreeMap<String, usize> = BTreeMap::new();
        for (t, v) in self.table.tasks() {
            let size = match self.sizes.get(&t.id) {
                Some((seen, size)) if *seen == v => *size,
                _ => serde_json::to_vec(t).map_or(0, |b| b.len()),
            };
            weights.insert(t.id.clone(), size);
        }
        self.sizes.retain(|id, _| weights.contains_key(id));
        let mut total = 0usize;
        for (t, v) in self.table.tasks() {
            let size = weights[&t.id];
            self.sizes.insert(t.id.clone(), (v, size));
            weights.insert(
                t.id.clone(),
                size.saturating_mul(1 + self.table.events_kept(&t.id)),
            );
            total = total.saturating_add(weights[&t.id]);
        }
        let mut evicted = Vec::new();
        if count > bounds.tasks_max || total > bounds.bytes_max {
            // The position of each task's last save: lower is older.
            let mut last: BTreeMap<&str, usize> = BTreeMap::new();
            for (i, s) in self.saves.iter().enumerate() {
                last.insert(&s.task_id, i);
            }
            let mut at_rest: Vec<(Option<usize>, String)> = self
                .table
                .tasks()
                .filter(|(t, _)| crate::protocol::at_rest(&t.status.state))
                .map(|(t, _)| (last.get(t.id.as_str()).copied(), t.id.clone()))
                .collect();
            at_rest.sort();
            let mut left = count;
            for (_, id) in at_rest {
                if left <= bounds.tasks_max && total <= bounds.bytes_max {
                    break;
                }
                left -= 1;
                total = total.saturating_sub(weights[&id]);
                evicted.push(id);
            }
        }
        if !evicted.is_empty() {
            let gone: std::collections::BTreeSet<&str> =
                evicted.iter().map(String::as_str).collect();
            for id in &gone {
                self.table.remove(id);
                self.push_configs.remove(*id);
                self.sizes.remove(*id);
            }
            self.saves.retain(|s| !gone.contains(s.task_id.as_str()));
            self.dedup.retain(|_, e| match e {
                DedupEntry::Done { task_id, .. } => !gone.contains(task_id.as_str()),
                DedupEntry::InFlight { .. } => true,
            });
        }
        let tasks = count - evicted.len();
        if self.saves.len() > 4 * tasks + 64 {
            // Only the order of the last saves is read back ([`StoreState::recent`]).
            let mut seen = std::collections::BTreeSet::new();
            let mut kept: Vec<SaveRecord> = Vec::new();
            for s in self.saves.drain(..).rev() {
                if seen.insert(s.task_id.clone()) {
                    kept.push(s);
                }
            }
            kept.reverse();
            self.saves = kept;
        }
        evicted
    }

    /// Claims a message for processing (see [`Claim`]).
    pub fn claim(&mut self, key: &str, now_ms: u64, lease_ms: u64) -> Claim {
        match self.dedup.get(key) {
            Some(DedupEntry::Done { task_id, until_ms }) if *until_ms > now_ms => {
                return Claim::Done {
                    task_id: task_id.clone(),
                }
            }
            Some(DedupEntry::InFlight { until_ms }) if *until_ms > now_ms => {
                return Claim::InFlight
            }
            Some(DedupEntry::InFlight { .. }) => {
                // The claim's holder died between its final save and marking the claim done.
                // The tasks are the durable record: a task past this message's turn (its
                // state settled, the message in its history) means the message completed.
                if let Some(task_id) = self.settled_with(key) {
                    return Claim::Done { task_id };
                }
            }
            _ => {}
        }
        self.dedup.insert(
            key.to_string(),
            DedupEntry::InFlight {
                until_ms: now_ms.saturating_add(lease_ms),
            },
        );
        Claim::New
    }

    /// A settled task (not working or submitted) whose context and history hold the message
    /// of dedup key `contextId/messageId`.
    fn settled_with(&self, key: &str) -> Option<String> {
        let (context, message) = key.rsplit_once('/')?;
        self.table
            .tasks()
            .find(|(t, _)| {
                t.context_id == context
                    && !matches!(
                        t.status.state,
                        a2a::TaskState::Working | a2a::TaskState::Submitted
                    )
                    && super::holds_message(t, message)
            })
            .map(|(t, _)| t.id.clone())
    }

    /// Marks a claimed message done, remembered for `ttl_ms`; `None` releases the claim.
    pub fn finish(&mut self, key: &str, task_id: Option<String>, now_ms: u64, ttl_ms: u64) {
        match task_id {
            Some(task_id) if ttl_ms > 0 => {
                self.dedup.insert(
                    key.to_string(),
                    DedupEntry::Done {
                        task_id,
                        until_ms: now_ms.saturating_add(ttl_ms),
                    },
                );
            }
            _ => {
                self.dedup.remove(key);
            }
        }
    }
}
