//! Reading a little of a JSON-RPC request without building it: how many parts its message
//! has, and its id. A bounded server ([`crate::replica::Replica::limit_parts`]) refuses a
//! message of too many parts before the request becomes a tree of values: a 1 MiB body of
//! 85,000 empty parts is tens of MB as `serde_json::Value`s, and nothing here allocates per
//! part.

use std::fmt;

use serde::de::{Deserializer, IgnoredAny, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

/// The id of a JSON-RPC request (null when it has none).
#[derive(Deserialize)]
pub struct RequestId {
    #[serde(default)]
    pub id: Value,
}

#[derive(Deserialize)]
struct Probe {
    #[serde(default)]
    params: Option<ProbeParams>,
}

#[derive(Deserialize)]
struct ProbeParams {
    #[serde(default)]
    message: Option<ProbeMessage>,
}

#[derive(Deserialize)]
struct ProbeMessage {
    #[serde(default)]
    parts: Option<Count>,
}

/// The length of a JSON array, its elements skipped unread.
struct Count(usize);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Count, D::Error> {
        struct Counter;
        impl<'de> Visitor<'de> for Counter {
            type Value = Count;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Count, A::Error> {
                let mut n = 0;
                while seq.next_element::<IgnoredAny>()?.is_some() {
                    n += 1;
                }
                Ok(Count(n))
            }
        }
        d.deserialize_seq(Counter)
    }
}

/// How many parts `params.message.parts` holds, when the body is a JSON object with that
/// array (either A2A wire); `None` otherwise (the request's own parse reports what is wrong).
pub fn count_message_parts(body: &[u8]) -> Option<usize> {
    let probe: Probe = serde_json::from_slice(body).ok()?;
    Some(probe.params?.message?.parts?.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_counted_without_reading_them() {
        let body = br#"{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":{"message":{"messageId":"m","parts":[{"text":""},{"text":"x"},{"data":{"a":[1,2]}}]}}}"#;
        assert_eq!(count_message_parts(body), Some(3));
        assert_eq!(count_message_parts(br#"{"params":{"id":"t"}}"#), None);
        assert_eq!(count_message_parts(b"not json"), None);
        let id: RequestId = serde_json::from_slice(body).unwrap();
        assert_eq!(id.id, serde_json::json!(7));
    }
}
