//! What a host did, as data: the typed form of one trace line.
//!
//! Every host records [`Event`]s; printing is [`Display`](std::fmt::Display), which gives
//! the words the trace has always had, so the trace hash is a function of the events alone.
//! Anything that needs to know what happened (shrink, the timeline, fidelity) matches on
//! the variants — a forwarded request's target, a dropped reply, an applied fault — never on
//! the words. [`Event::Note`] carries the lines nothing reads back: what a replica decided,
//! why a step was skipped; each says how a timeline should colour it ([`Tone`]).

use std::fmt;

use crate::faults::{Action, KillPoint};
use crate::host::Host;

/// How a timeline colours an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tone {
    /// Something happened as asked.
    Plain,
    /// Something may or may not have happened, or happened twice (a duplicate, an `info`).
    Warn,
    /// Something was refused, lost or failed.
    Bad,
}

/// How a client call ended, as its trace line says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// `ok`.
    Ok,
    /// `fail`, with the JSON-RPC code or HTTP status.
    Fail { code: i64 },
    /// `info`: the outcome is unknown, and why.
    Info { why: String },
    /// A call the client refused to send: `fail`, nothing sent.
    NotSent,
}

/// One thing a host did.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The driver applied a fault action.
    Fault(Action),
    /// A replica reached an armed kill point; the driver will crash it.
    KillPointReached { host: Host, point: KillPoint },
    /// A replica's software started (its `boot`-th start in the run).
    Boot(u32),
    /// The router forwarded a request to a replica (`pinned`: the client named it).
    Forward {
        method: String,
        context: Option<String>,
        target: Host,
        pinned: bool,
    },
    /// The router could not reach a replica.
    Unreachable { target: Host, error: String },
    /// The router dropped a replica's reply (the `lost-reply` fault).
    DropReply { method: String, target: Host },
    /// A client call ended: its operation (`send c1#2`), how, and the card origin it went to.
    Answered {
        op: String,
        reply: Reply,
        /// Stream events received (streaming calls).
        events: Option<usize>,
        /// The execution origin the card named, in runs that simulate the card.
        via: Option<String>,
    },
    /// The store accepted a save.
    Save {
        task: String,
        version: u64,
        replica: Host,
        /// The save's mode, as the store prints it (`Cas(Some(2))`, `Overwrite`: the
        /// `Display` of `crate::store::SaveMode`).
        mode: String,
    },
    /// The store refused a save (a conflict, a terminal task).
    SaveRefused {
        task: String,
        replica: Host,
        mode: String,
        /// Why, as the store prints it (`Conflict { current: Some(2) }`: the `Display` of
        /// `crate::store::SaveError`).
        error: String,
    },
    /// An effect reached the ledger.
    Effect {
        conversation: String,
        turn: u32,
        task: String,
        replica: Host,
        key: Option<String>,
        /// False when an earlier effect with the same key was applied.
        applied: bool,
    },
    /// A push reached the webhook.
    Delivery { path: String, status: u16 },
    /// Anything else, in words, with the colour a timeline gives it.
    Note { tone: Tone, text: String },
}

impl Event {
    /// A note in words.
    pub fn note(tone: Tone, text: impl Into<String>) -> Event {
        Event::Note {
            tone,
            text: text.into(),
        }
    }

    /// A plain note.
    pub fn plain(text: impl Into<String>) -> Event {
        Event::note(Tone::Plain, text)
    }

    /// How a timeline colours it.
    pub fn tone(&self) -> Tone {
        match self {
            Event::Fault(Action::DropNextReply(_)) => Tone::Bad,
            Event::Unreachable { .. } | Event::DropReply { .. } | Event::SaveRefused { .. } => {
                Tone::Bad
            }
            Event::Answered { reply, events, .. } => match reply {
                Reply::Ok => Tone::Plain,
                Reply::Fail { .. } | Reply::NotSent => Tone::Bad,
                // A stream's line counts its events instead of giving the cause.
                Reply::Info { .. } if events.is_some() => Tone::Warn,
                Reply::Info { why } => cause_tone(why),
            },
            Event::Effect { applied: false, .. } => Tone::Warn,
            Event::Note { tone, .. } => *tone,
            _ => Tone::Plain,
        }
    }

    /// The replica this event talks to or hears from, for a timeline's message lines: the
    /// target of a forward or a dropped reply, the replica a save or an effect came from,
    /// the replica end of a fault on a link.
    pub fn peer(&self) -> Option<&Host> {
        let peer = match self {
            Event::Forward { target, .. } | Event::DropReply { target, .. } => target,
            Event::Save { replica, .. }
            | Event::SaveRefused { replica, .. }
            | Event::Effect { replica, .. } => replica,
            Event::Fault(action) => match action.hosts().as_slice() {
                [_, b] => *b,
                _ => return None,
            },
            _ => return None,
        };
        peer.is_replica().then_some(peer)
    }
}

/// The colour of an unknown outcome by its cause: red when the cause was a refusal, an
/// unreachable host, a dropped reply or an error; orange otherwise.
fn cause_tone(why: &str) -> Tone {
    match failure_tone(why) {
        Tone::Plain => Tone::Warn,
        bad => bad,
    }
}

/// The colour of a note that reports a failure's cause in the words of the transport or the
/// peer (`store connect: Connection refused`): red when the cause names a refusal, an
/// unreachable host, a dropped reply or an error; plain otherwise (a timeout, a slow reply).
pub fn failure_tone(cause: &str) -> Tone {
    let cause = cause.to_ascii_lowercase();
    if ["refuse", "unreachable", "drop", "error"]
        .iter()
        .any(|k| cause.contains(k))
    {
        Tone::Bad
    } else {
        Tone::Plain
    }
}

impl fmt::Display for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reply::Ok => write!(f, "ok"),
            Reply::Fail { .. } | Reply::NotSent => write!(f, "fail"),
            Reply::Info { .. } => write!(f, "info"),
        }
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Event::Fault(action) => write!(f, "{action}"),
            Event::KillPointReached { host, point } => {
                write!(f, "{host} reached kill point {}", point.name())
            }
            Event::Boot(b) => write!(f, "boot {b}"),
            Event::Forward {
                method,
                context,
                target,
                pinned,
            } => write!(
                f,
                "{method} ctx {} -> {target}{}",
                context.as_deref().unwrap_or("-"),
                if *pinned { " (pinned)" } else { "" }
            ),
            Event::Unreachable { target, error } => write!(f, "{target} unreachable: {error}"),
            Event::DropReply { method, target } => {
                write!(f, "drop reply of {method} from {target}")
            }
            Event::Answered {
                op,
                reply,
                events,
                via,
            } => {
                write!(f, "{op} -> {reply}")?;
                match (events, reply) {
                    (Some(n), _) => write!(f, " ({n} events)")?,
                    (None, Reply::Fail { code }) => write!(f, " {code}")?,
                    (None, Reply::Info { why }) => write!(f, " ({why})")?,
                    (None, Reply::Ok | Reply::NotSent) => {}
                }
                if let Some(origin) = via {
                    write!(f, " via {origin}")?;
                }
                Ok(())
            }
            Event::Save {
                task,
                version,
                replica,
                mode,
            } => write!(f, "save {task} v{version} from {replica} ({mode})"),
            Event::SaveRefused {
                task,
                replica,
                mode,
                error,
            } => write!(f, "refuse {task} from {replica} ({mode}): {error}"),
            Event::Effect {
                conversation,
                turn,
                task,
                replica,
                key,
                applied,
            } => write!(
                f,
                "effect {conversation}#{turn} task {task} from {replica} key {key:?}: {}",
                if *applied { "applied" } else { "deduplicated" }
            ),
            Event::Delivery { path, status } => write!(f, "delivery to {path}: answered {status}"),
            Event::Note { text, .. } => write!(f, "{text}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forward_prints_and_points_at_its_replica() {
        let e = Event::Forward {
            method: "SendMessage".into(),
            context: Some("ctx-c1-0000".into()),
            target: Host::Replica(2),
            pinned: true,
        };
        assert_eq!(
            e.to_string(),
            "SendMessage ctx ctx-c1-0000 -> replica-2 (pinned)"
        );
        assert_eq!(e.peer(), Some(&Host::Replica(2)));
    }

    #[test]
    fn an_answer_prints_its_outcome_and_route() {
        let e = Event::Answered {
            op: "send c1#1".into(),
            reply: Reply::Fail { code: -32001 },
            events: None,
            via: Some("http://router:8080".into()),
        };
        assert_eq!(
            e.to_string(),
            "send c1#1 -> fail -32001 via http://router:8080"
        );
        assert_eq!(e.tone(), Tone::Bad);
        let streamed = Event::Answered {
            op: "subscribe c1".into(),
            reply: Reply::Info {
                why: crate::client::history::ENDED_BEFORE_FINAL.into(),
            },
            events: Some(3),
            via: None,
        };
        assert_eq!(streamed.to_string(), "subscribe c1 -> info (3 events)");
        assert_eq!(streamed.tone(), Tone::Warn);
    }
}
