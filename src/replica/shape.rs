//! The agent's shape for one turn, as the turn's message asks for it ([`AgentShape`]):
//! whether the turn performs its business effect, and how many progress updates the agent
//! saves while it thinks.
//!
//! Real agents differ from the scripted default (one effect a turn, no word until the
//! result): a question-answering agent performs no effect at all, and a long-running one
//! reports progress, each report one more save of its task, and one more moment a save can
//! meet a conflict, a cancel or a terminal task. A scenario asks for either per turn
//! (`effect = false`, `progress = N` on a `send`); the client writes the ask into the
//! scripted data part next to the turn ([`AgentShape::apply`]), where the simulated
//! replicas and the real peers alike read it ([`AgentShape::of`]).

use a2a::{Message, PartContent};
use serde_json::Value;

use super::{integral, TurnInfo};

/// The data-part key by which a turn performs no business effect (`"effect": false`).
pub const EFFECT_KEY: &str = "effect";

/// The data-part key by which a turn saves this many progress updates while it thinks
/// (`"progress": 2`).
pub const PROGRESS_KEY: &str = "progress";

/// The most progress updates a turn may ask for.
pub const MAX_PROGRESS: u32 = 10;

/// What one turn of the scripted agent does besides its think and its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgentShape {
    /// The turn performs its business effect at the ledger (the default).
    pub effect: bool,
    /// The agent sets its task working again this many times while it thinks, spread evenly
    /// over the think, each a status event its server saves like any other
    /// (`handler.saves = "per-event"`; a server that saves per step saves none of them).
    pub progress: u32,
}

impl Default for AgentShape {
    fn default() -> AgentShape {
        AgentShape {
            effect: true,
            progress: 0,
        }
    }
}

impl AgentShape {
    /// The shape `message` asks for, read from the object its turn rides in
    /// ([`TurnInfo::scripted`]); the default for a message without one. `progress` is any
    /// JSON number with an integral value (protobuf-based clients send `2.0`), at most
    /// [`MAX_PROGRESS`].
    pub fn of(message: &Message) -> AgentShape {
        TurnInfo::scripted(message)
            .map_or_else(AgentShape::default, |(_, v)| AgentShape::from_data(&v))
    }

    /// The shape the scripted data part's object `v` asks for.
    pub fn from_data(v: &Value) -> AgentShape {
        AgentShape {
            effect: v.get(EFFECT_KEY).and_then(Value::as_bool) != Some(false),
            progress: v
                .get(PROGRESS_KEY)
                .and_then(integral)
                .unwrap_or(0)
                .min(MAX_PROGRESS),
        }
    }

    /// Writes the shape into `message`'s scripted data part (nothing for the default, so a
    /// default turn's message is what it always was).
    pub fn apply(&self, message: &mut Message) {
        for p in &mut message.parts {
            if let PartContent::Data(Value::Object(map)) = &mut p.content {
                if !self.effect {
                    map.insert(EFFECT_KEY.to_string(), Value::Bool(false));
                }
                if self.progress > 0 {
                    map.insert(PROGRESS_KEY.to_string(), Value::from(self.progress));
                }
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::Client;
    use serde_json::json;

    fn turn_message() -> Message {
        let info = TurnInfo {
            conversation: "c1".into(),
            turn: 1,
            turns: 2,
        };
        Client::turn_message(&info, "m1", "ctx-1", None)
    }

    #[test]
    fn a_shape_round_trips_through_the_data_part() {
        let mut message = turn_message();
        assert_eq!(AgentShape::of(&message), AgentShape::default());
        let shape = AgentShape {
            effect: false,
            progress: 3,
        };
        shape.apply(&mut message);
        assert_eq!(AgentShape::of(&message), shape);
        // The turn itself still reads as before.
        assert_eq!(TurnInfo::from_message(&message).unwrap().turn, 1);
    }

    #[test]
    fn the_default_shape_leaves_the_message_as_it_was() {
        let mut message = turn_message();
        let before = message.clone();
        AgentShape::default().apply(&mut message);
        assert_eq!(message, before);
    }

    #[test]
    fn protobuf_doubles_and_large_counts_are_read_as_whole_and_bounded() {
        let v = json!({"conversation": "c1", "turn": 1.0, "turns": 2.0, "progress": 2.0});
        assert_eq!(AgentShape::from_data(&v).progress, 2);
        let v = json!({"conversation": "c1", "turn": 1, "turns": 2, "progress": 1000});
        assert_eq!(AgentShape::from_data(&v).progress, MAX_PROGRESS);
        let v = json!({"conversation": "c1", "turn": 1, "turns": 2, "effect": true});
        assert!(AgentShape::from_data(&v).effect);
    }
}
