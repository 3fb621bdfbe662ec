//! The `[push]` knob group: which states are pushed, where configs live, how targets are
//! checked, and how deliveries are sent and retried.

use serde::{Deserialize, Serialize};

/// Which task states are pushed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PushOn {
    /// After every persisted event (a2a-python).
    EverySave,
    /// Only on a change into a terminal or interrupted state (Mastra).
    TerminalOrInterrupted,
}

/// Where push URLs are validated against private targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PushValidate {
    None,
    Registration,
    Send,
    RegistrationAndSend,
}

/// Push-notification knobs.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PushKnobs {
    /// Push configs are accepted at all (otherwise `-32003`).
    pub supported: bool,
    /// Configs live in the pod that took them (`false`) or in the shared store.
    pub shared_configs: bool,
    /// Which states are pushed.
    pub on: PushOn,
    /// Where URLs are checked against private, loopback and link-local targets.
    pub validate: PushValidate,
    /// The checked address is the one connected to (no second DNS answer).
    pub pin_dns: bool,
    /// 3xx answers are followed (to wherever they point).
    pub follow_redirects: bool,
    /// Tries after a failed delivery.
    pub retries: u32,
    /// Timeout of one delivery, simulated ms.
    pub timeout_ms: u64,
    /// Failures (refused targets included) are logged.
    pub log_failures: bool,
    /// Deliveries are awaited inside the turn (holding its lock and its answer) rather than
    /// sent in the background.
    pub inline: bool,
    /// Pushes are written to an outbox in the shared store with the task's save, and any
    /// replica delivers them (a leased claim, retried until delivered or out of retries), so
    /// a pod that dies mid-delivery loses nothing.
    pub outbox: bool,
    /// The sender looks configs up as the anonymous owner rather than across owners: a
    /// process-wide sender holding a dummy call context, so a config that a signed-in caller
    /// registered (under that caller's owner) is never found and its push is dropped without a
    /// log line. Modelled for per-pod configs only.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dispatch_as_anonymous: bool,
}
