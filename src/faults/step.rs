//! Step-value helpers shared by the action kinds: where a scenario step's TOML value
//! becomes a host, a pair of hosts, a probability or a typed table, and back.

use super::ActionError;
use crate::host::Host;

/// A host name: where a scenario's text becomes a [`Host`].
pub fn host(value: &toml::Value) -> Result<Host, ActionError> {
    value
        .as_str()
        .map(Host::parse)
        .ok_or_else(|| ActionError::Malformed(format!("expected a host name, found `{value}`")))
}

/// Two host names, `["replica-0", "store"]`.
pub fn pair(value: &toml::Value) -> Result<(Host, Host), ActionError> {
    match value.as_array().map(Vec::as_slice) {
        Some([a, b]) => Ok((host(a)?, host(b)?)),
        _ => Err(ActionError::Malformed(format!(
            "expected two host names such as [\"replica-0\", \"store\"], found `{value}`"
        ))),
    }
}

/// The value `["a", "b"]`.
pub fn pair_value(a: &Host, b: &Host) -> toml::Value {
    toml::Value::Array(vec![a.to_string().into(), b.to_string().into()])
}

/// The value `"a"`.
pub fn host_value(host: &Host) -> toml::Value {
    host.to_string().into()
}

/// A probability in [0, 1].
pub fn probability(what: &str, p: f64) -> Result<(), ActionError> {
    if (0.0..=1.0).contains(&p) {
        Ok(())
    } else {
        Err(ActionError::Invalid(format!(
            "{what} probability = {p} must be in [0, 1]"
        )))
    }
}

/// A typed value read with serde (a step's inline table): the error in the words of
/// the TOML reader.
pub fn table<T: serde::de::DeserializeOwned>(value: &toml::Value) -> Result<T, ActionError> {
    value.clone().try_into().map_err(|e: toml::de::Error| {
        let text = e.to_string();
        ActionError::Malformed(text.trim().to_string())
    })
}

/// A serde value as a TOML value.
pub fn value_of<T: serde::Serialize>(t: &T) -> toml::Value {
    toml::Value::try_from(t).expect("a step's fields serialise")
}
