//! [`WorkloadSpec`], the `[workload]` table: the conversations' own settings as fields, and
//! every behaviour's [`Knob`]s, which each behaviour declares in its file
//! ([`super::Behaviour::knobs`]) and which `Default`, [`WorkloadSpec::validate`],
//! [`WorkloadSpec::resolve`], [`WorkloadSpec::describe`] and the table's reading and writing
//! go through.
//!
//! The table reads and writes as the struct it was before the behaviours declared their
//! own knobs (issue 40): the same keys, the same values, an unknown key refused where it
//! stands with the list of every key, and the keys written (and checked) in the order the
//! struct had them ([`KEY_ORDER`]); the knobs of a behaviour added since follow, in
//! registry order.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::OnceLock;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeStruct, Serializer};
use serde::{Deserialize, Serialize};

use super::BEHAVIOURS;
use crate::error::InputError;

/// Upper bounds that keep one run small (a sweep is many runs).
pub const CONVERSATIONS_MAX: u32 = 200;
/// See [`CONVERSATIONS_MAX`].
pub const TURNS_MAX: u32 = 50;
/// Longest time setting of a workload, in simulated ms (one hour).
pub const TIME_MS_MAX: u64 = 3_600_000;
/// Most retries of one turn.
pub const RETRIES_MAX: u32 = 20;

/// One key of the `[workload]` table that a behaviour reads, with everything `Default`,
/// [`WorkloadSpec::validate`], [`WorkloadSpec::resolve`] and [`WorkloadSpec::describe`]
/// need to know about it. A behaviour reads its value with [`WorkloadSpec::rate`],
/// [`WorkloadSpec::ms`] or [`WorkloadSpec::ms_range`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Knob {
    /// The key, as an experiment file writes it (`cancel-rate`): a rate's ends in `-rate`,
    /// a time's in `-ms`.
    pub key: &'static str,
    /// Its value when a file leaves it out; its kind decides the values it may take: a
    /// rate in [0, 1], a time at most [`TIME_MS_MAX`], a range `[min, max]` with
    /// `min <= max <= TIME_MS_MAX`.
    pub default: Setting,
    /// For a time: whether 0 is refused too (`poll-interval-ms`).
    pub positive: bool,
    /// What swarm testing does with it (a rate only).
    pub swarm: Swarm,
    /// What it means.
    pub doc: &'static str,
}

impl Knob {
    /// A probability in [0, 1].
    pub const fn rate(key: &'static str, default: f64, swarm: Swarm, doc: &'static str) -> Knob {
        Knob {
            key,
            default: Setting::Rate(default),
            positive: false,
            swarm,
            doc,
        }
    }

    /// A time in simulated ms, at most [`TIME_MS_MAX`]; with `positive`, above 0.
    pub const fn ms(key: &'static str, default: u64, positive: bool, doc: &'static str) -> Knob {
        Knob {
            key,
            default: Setting::Ms(default),
            positive,
            swarm: Swarm::Fixed,
            doc,
        }
    }

    /// A range `[min, max]` of simulated ms, `max` at most [`TIME_MS_MAX`].
    pub const fn ms_range(key: &'static str, default: [u64; 2], doc: &'static str) -> Knob {
        Knob {
            key,
            default: Setting::MsRange(default),
            positive: false,
            swarm: Swarm::Fixed,
            doc,
        }
    }
}

/// The value of a [`Knob`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Setting {
    /// A probability.
    Rate(f64),
    /// A time, simulated ms.
    Ms(u64),
    /// A range of times `[min, max]`, simulated ms.
    MsRange([u64; 2]),
}

impl Serialize for Setting {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Setting::Rate(r) => r.serialize(s),
            Setting::Ms(ms) => ms.serialize(s),
            Setting::MsRange(range) => range.serialize(s),
        }
    }
}

/// What swarm testing ([`WorkloadSpec::resolve`]) does with a rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Swarm {
    /// Nothing: every seed runs it as written (`double-cancel-rate`).
    Fixed,
    /// Each seed draws it from the stream `workload-shape/<name>`: kept with probability
    /// 3/4, scaled by a factor in [0.25, 1.75], at most 1. The drawn shape prints it as
    /// `name=value`: `always`, or (a knob added since `auth-required`: `always: false`)
    /// only above 0, so that the shapes of files without it print as they did before it.
    Drawn { name: &'static str, always: bool },
}

/// Every key of the table before behaviours declared their own knobs (issue 40), in the
/// order the struct had them: the spec writes its keys, names them in an unknown-key error
/// and checks them in this order, so that a written spec (and so a sweep's fingerprint) and
/// the first error a file gets stay as they were. The knobs of behaviours added since
/// follow in registry order: never add a key here.
pub const KEY_ORDER: &[&str] = &[
    "conversations",
    "turns",
    "request-timeout-ms",
    "retries",
    "retry-backoff-ms",
    "gap-ms",
    "start-spread-ms",
    "duplicate-rate",
    "cancel-rate",
    "cancel-delay-ms",
    "double-cancel-rate",
    "cancel-resend-rate",
    "subscribe-rate",
    "push-rate",
    "resubscribe-rate",
    "poll-rate",
    "poll-interval-ms",
    "poll-timeout-ms",
    "follow-up-rate",
    "swarm",
    "foreign-reader-rate",
    "context-mismatch-rate",
    "auth-required-rate",
];

/// The keys that are fields of [`WorkloadSpec`] rather than a behaviour's knobs.
const FIELDS: &[&str] = &[
    "conversations",
    "turns",
    "request-timeout-ms",
    "retries",
    "retry-backoff-ms",
    "gap-ms",
    "start-spread-ms",
    "duplicate-rate",
    "swarm",
];

/// Every key of the table: [`KEY_ORDER`] (those still read), then the knobs of later
/// behaviours in registry order.
pub fn keys() -> &'static [&'static str] {
    static KEYS: OnceLock<Vec<&'static str>> = OnceLock::new();
    KEYS.get_or_init(|| {
        let mut keys: Vec<&'static str> = KEY_ORDER
            .iter()
            .copied()
            .filter(|k| FIELDS.contains(k) || knob(k).is_some())
            .collect();
        for b in BEHAVIOURS {
            for k in b.knobs() {
                if !keys.contains(&k.key) {
                    keys.push(k.key);
                }
            }
        }
        keys
    })
}

/// The knob with this key, of whichever behaviour declares it.
pub fn knob(key: &str) -> Option<&'static Knob> {
    BEHAVIOURS
        .iter()
        .flat_map(|b| b.knobs())
        .find(|k| k.key == key)
}

/// Every behaviour's knobs, in [`keys`] order.
fn knobs() -> impl Iterator<Item = &'static Knob> {
    keys().iter().filter_map(|k| knob(k))
}

/// The `[workload]` table of an experiment: the conversations' own settings, and the
/// behaviours' [`Knob`]s (each behaviour's file says what its knobs do).
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadSpec {
    /// Concurrent conversations.
    pub conversations: u32,
    /// Turns per conversation.
    pub turns: u32,
    /// Client timeout per request, simulated ms.
    pub request_timeout_ms: u64,
    /// Retries of a turn whose outcome was unknown, with the same messageId.
    pub retries: u32,
    /// Wait before a retry, simulated ms.
    pub retry_backoff_ms: u64,
    /// Pause between turns (the user typing), drawn from [min, max] ms.
    pub gap_ms: [u64; 2],
    /// Conversations start spread over this many ms.
    pub start_spread_ms: u64,
    /// Probability that a send is fired twice at once (same messageId).
    pub duplicate_rate: f64,
    /// Each seed draws its own shape from this one (see [`WorkloadSpec::resolve`]).
    pub swarm: bool,
    /// Every behaviour's knob, by key (all of them, each of its knob's kind).
    knobs: BTreeMap<&'static str, Setting>,
}

impl Default for WorkloadSpec {
    fn default() -> Self {
        WorkloadSpec {
            conversations: 8,
            turns: 4,
            request_timeout_ms: 1500,
            retries: 2,
            retry_backoff_ms: 200,
            gap_ms: [50, 250],
            start_spread_ms: 500,
            duplicate_rate: 0.0,
            swarm: true,
            knobs: knobs().map(|k| (k.key, k.default)).collect(),
        }
    }
}

impl WorkloadSpec {
    /// The knob `key`'s value.
    ///
    /// # Panics
    ///
    /// When no behaviour declares a knob `key`.
    pub fn get(&self, key: &str) -> Setting {
        match self.knobs.get(key) {
            Some(setting) => *setting,
            None => panic!("no workload behaviour has a knob `{key}`"),
        }
    }

    /// The rate `key` (`cancel-rate`).
    ///
    /// # Panics
    ///
    /// When no behaviour declares a rate `key`.
    pub fn rate(&self, key: &str) -> f64 {
        match self.get(key) {
            Setting::Rate(r) => r,
            other => panic!("workload knob `{key}` is no rate: {other:?}"),
        }
    }

    /// The time `key` (`poll-interval-ms`), simulated ms.
    ///
    /// # Panics
    ///
    /// When no behaviour declares a time `key`.
    pub fn ms(&self, key: &str) -> u64 {
        match self.get(key) {
            Setting::Ms(ms) => ms,
            other => panic!("workload knob `{key}` is no time: {other:?}"),
        }
    }

    /// The range of times `key` (`cancel-delay-ms`), simulated ms.
    ///
    /// # Panics
    ///
    /// When no behaviour declares a range `key`.
    pub fn ms_range(&self, key: &str) -> [u64; 2] {
        match self.get(key) {
            Setting::MsRange(range) => range,
            other => panic!("workload knob `{key}` is no range: {other:?}"),
        }
    }

    /// Sets the knob `key` (unchecked: see [`WorkloadSpec::validate`]).
    ///
    /// # Panics
    ///
    /// When no behaviour declares a knob `key` of `value`'s kind.
    pub fn set(&mut self, key: &str, value: Setting) -> &mut Self {
        let knob = knob(key).unwrap_or_else(|| panic!("no workload behaviour has a knob `{key}`"));
        assert!(
            std::mem::discriminant(&knob.default) == std::mem::discriminant(&value),
            "workload knob `{key}` is {:?}, not {value:?}",
            knob.default
        );
        self.knobs.insert(knob.key, value);
        self
    }

    /// The longest a turn may take beyond its sends, simulated ms: what every behaviour
    /// adds ([`super::Behaviour::turn_extra_ms`]; a polled turn its poll timeout).
    pub fn turn_extra_ms(&self) -> u64 {
        BEHAVIOURS
            .iter()
            .fold(0u64, |sum, b| sum.saturating_add(b.turn_extra_ms(self)))
    }

    /// Refuses sizes and rates the simulator cannot honour.
    pub fn validate(&self, origin: &str) -> Result<(), InputError> {
        let bad = |m: String| Err(InputError::new(origin, format!("[workload] {m}")));
        if self.conversations == 0 || self.conversations > CONVERSATIONS_MAX {
            return bad(format!(
                "conversations = {} must be 1..={CONVERSATIONS_MAX}",
                self.conversations
            ));
        }
        if self.turns == 0 || self.turns > TURNS_MAX {
            return bad(format!("turns = {} must be 1..={TURNS_MAX}", self.turns));
        }
        if self.gap_ms[0] > self.gap_ms[1] {
            return bad(format!("gap-ms = {:?} must be [min, max]", self.gap_ms));
        }
        let settings = || knobs().map(|k| (k, self.get(k.key)));
        let rates = settings().filter_map(|(k, s)| match s {
            Setting::Rate(r) => Some((k.key, r)),
            _ => None,
        });
        for (name, rate) in [("duplicate-rate", self.duplicate_rate)]
            .into_iter()
            .chain(rates)
        {
            if !(0.0..=1.0).contains(&rate) {
                return bad(format!("{name} = {rate} must be in [0, 1]"));
            }
        }
        for (k, setting) in settings() {
            if let Setting::MsRange(range) = setting {
                if range[0] > range[1] {
                    return bad(format!("{} = {range:?} must be [min, max]", k.key));
                }
            }
        }
        let times = settings().filter_map(|(k, s)| match s {
            Setting::Ms(ms) => Some((k.key, ms)),
            Setting::MsRange(range) => Some((k.key, range[1])),
            Setting::Rate(_) => None,
        });
        for (name, ms) in [
            ("request-timeout-ms", self.request_timeout_ms),
            ("retry-backoff-ms", self.retry_backoff_ms),
            ("gap-ms", self.gap_ms[1]),
            ("start-spread-ms", self.start_spread_ms),
        ]
        .into_iter()
        .chain(times)
        {
            if ms > TIME_MS_MAX {
                return bad(format!(
                    "{name} = {ms} must be at most {TIME_MS_MAX} (one simulated hour)"
                ));
            }
        }
        if self.retries > RETRIES_MAX {
            return bad(format!(
                "retries = {} must be at most {RETRIES_MAX}",
                self.retries
            ));
        }
        if self.request_timeout_ms == 0 {
            return bad("request-timeout-ms must be > 0".into());
        }
        for (k, setting) in settings() {
            if k.positive && setting == Setting::Ms(0) {
                return bad(format!("{} must be > 0", k.key));
            }
        }
        Ok(())
    }

    /// The shape the run with `seed` uses: as written, or with `swarm` a draw from it. A
    /// drawn shape has between half and all of the conversations and turns, and keeps
    /// `duplicate-rate` and each [`Swarm::Drawn`] rate with probability 3/4, scaled by a
    /// factor in [0.25, 1.75] (at most 1).
    pub fn resolve(&self, seed: u64) -> WorkloadSpec {
        if !self.swarm {
            return self.clone();
        }
        // Each knob draws from a stream of its own (`workload-shape/<knob>`), so a new knob
        // leaves the others' draws alone.
        let knob = |name: &str| {
            ChaCha8Rng::seed_from_u64(crate::trace::derive_seed(
                seed,
                &format!("workload-shape/{name}"),
                0,
            ))
        };
        let drawn = |name: &str, rate: f64| {
            let mut rng = knob(name);
            let keep = rng.random_bool(0.75);
            let scale: f64 = rng.random_range(0.25..=1.75);
            if keep {
                (rate * scale).min(1.0)
            } else {
                0.0
            }
        };
        let mut out = self.clone();
        out.conversations =
            knob("conversations").random_range(self.conversations.div_ceil(2)..=self.conversations);
        out.turns = knob("turns").random_range(self.turns.div_ceil(2)..=self.turns);
        out.duplicate_rate = drawn("duplicate", self.duplicate_rate);
        for k in knobs() {
            if let (Swarm::Drawn { name, .. }, Setting::Rate(rate)) = (k.swarm, self.get(k.key)) {
                out.knobs.insert(k.key, Setting::Rate(drawn(name, rate)));
            }
        }
        out
    }

    /// The drawn shape as `name=value` pairs, for printing with the seed: the sizes,
    /// `duplicate` and every [`Swarm::Drawn`] rate (one that is not `always` only when
    /// drawn, so that shapes without it print as they always did).
    pub fn describe(&self) -> String {
        let mut out = format!(
            "workload: conversations={} turns={} duplicate={:.3}",
            self.conversations, self.turns, self.duplicate_rate
        );
        for k in knobs() {
            if let (Swarm::Drawn { name, always }, Setting::Rate(rate)) = (k.swarm, self.get(k.key))
            {
                if always || rate > 0.0 {
                    out += &format!(" {name}={rate:.3}");
                }
            }
        }
        out
    }
}

impl Serialize for WorkloadSpec {
    /// Every key, in [`keys`] order (the order the struct had its fields).
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut table = s.serialize_struct("WorkloadSpec", keys().len())?;
        for &key in keys() {
            match key {
                "conversations" => table.serialize_field(key, &self.conversations)?,
                "turns" => table.serialize_field(key, &self.turns)?,
                "request-timeout-ms" => table.serialize_field(key, &self.request_timeout_ms)?,
                "retries" => table.serialize_field(key, &self.retries)?,
                "retry-backoff-ms" => table.serialize_field(key, &self.retry_backoff_ms)?,
                "gap-ms" => table.serialize_field(key, &self.gap_ms)?,
                "start-spread-ms" => table.serialize_field(key, &self.start_spread_ms)?,
                "duplicate-rate" => table.serialize_field(key, &self.duplicate_rate)?,
                "swarm" => table.serialize_field(key, &self.swarm)?,
                _ => table.serialize_field(key, &self.get(key))?,
            }
        }
        table.end()
    }
}

/// A key of the table, read as serde's derived code reads a field name: an unknown key is
/// refused while it is read (so a TOML error points at it), naming every key.
struct Key(&'static str);

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("field identifier")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
                match keys().iter().find(|k| **k == v) {
                    Some(k) => Ok(Key(k)),
                    None => Err(E::unknown_field(v, keys())),
                }
            }
        }
        d.deserialize_identifier(KeyVisitor)
    }
}

impl<'de> Deserialize<'de> for WorkloadSpec {
    /// A table of [`keys`], each of its type (a knob's: its kind); a key left out keeps
    /// its default.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<WorkloadSpec, D::Error> {
        struct SpecVisitor;
        impl<'de> Visitor<'de> for SpecVisitor {
            type Value = WorkloadSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("struct WorkloadSpec")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<WorkloadSpec, A::Error> {
                let mut out = WorkloadSpec::default();
                let mut seen = Vec::new();
                while let Some(Key(key)) = map.next_key()? {
                    if seen.contains(&key) {
                        return Err(de::Error::duplicate_field(key));
                    }
                    seen.push(key);
                    match key {
                        "conversations" => out.conversations = map.next_value()?,
                        "turns" => out.turns = map.next_value()?,
                        "request-timeout-ms" => out.request_timeout_ms = map.next_value()?,
                        "retries" => out.retries = map.next_value()?,
                        "retry-backoff-ms" => out.retry_backoff_ms = map.next_value()?,
                        "gap-ms" => out.gap_ms = map.next_value()?,
                        "start-spread-ms" => out.start_spread_ms = map.next_value()?,
                        "duplicate-rate" => out.duplicate_rate = map.next_value()?,
                        "swarm" => out.swarm = map.next_value()?,
                        _ => {
                            let value = match out.get(key) {
                                Setting::Rate(_) => Setting::Rate(map.next_value()?),
                                Setting::Ms(_) => Setting::Ms(map.next_value()?),
                                Setting::MsRange(_) => Setting::MsRange(map.next_value()?),
                            };
                            out.knobs.insert(key, value);
                        }
                    }
                }
                Ok(out)
            }
        }
        d.deserialize_struct("WorkloadSpec", keys(), SpecVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The default spec as the struct of fields wrote it before issue 40 (a sweep's
    /// fingerprint hashes it): a spec still writes these keys first, in this order.
    const DEFAULT_JSON: &str = r#"{"conversations":8,"turns":4,"request-timeout-ms":1500,"retries":2,"retry-backoff-ms":200,"gap-ms":[50,250],"start-spread-ms":500,"duplicate-rate":0.0,"cancel-rate":0.0,"cancel-delay-ms":[0,80],"double-cancel-rate":0.5,"cancel-resend-rate":0.0,"subscribe-rate":0.0,"push-rate":0.0,"resubscribe-rate":0.0,"poll-rate":0.0,"poll-interval-ms":200,"poll-timeout-ms":6000,"follow-up-rate":0.0,"swarm":true,"foreign-reader-rate":0.0,"context-mismatch-rate":0.0,"auth-required-rate":0.0}"#;

    #[test]
    fn the_spec_writes_as_the_struct_did() {
        let spec = WorkloadSpec::default();
        let json = serde_json::to_string(&spec).unwrap();
        // The knobs of a behaviour added since follow.
        let old = &DEFAULT_JSON[..DEFAULT_JSON.len() - 1];
        assert!(json.starts_with(old), "{json}");
        assert!(json[old.len()..].starts_with([',', '}']), "{json}");
        let back: WorkloadSpec = serde_json::from_str(DEFAULT_JSON).unwrap();
        assert_eq!(back, spec);
        let text = toml::to_string(&spec).unwrap();
        assert_eq!(toml::from_str::<WorkloadSpec>(&text).unwrap(), spec);
    }

    #[test]
    fn every_knob_is_declared_once_and_well_formed() {
        let mut seen = std::collections::BTreeSet::new();
        for k in BEHAVIOURS.iter().flat_map(|b| b.knobs()) {
            assert!(seen.insert(k.key), "`{}` declared twice", k.key);
            assert!(!FIELDS.contains(&k.key), "`{}` is a field", k.key);
            assert!(!k.doc.is_empty(), "`{}` has no doc", k.key);
            let rate = matches!(k.default, Setting::Rate(_));
            assert_eq!(rate, k.key.ends_with("-rate"), "{k:?}");
            assert_eq!(!rate, k.key.ends_with("-ms"), "{k:?}");
            assert!(rate || k.swarm == Swarm::Fixed, "{k:?}");
            assert!(!k.positive || matches!(k.default, Setting::Ms(_)), "{k:?}");
        }
        // The historic keys are all still read, and every key is listed once.
        assert_eq!(keys()[..KEY_ORDER.len()], *KEY_ORDER);
        assert_eq!(keys().len(), FIELDS.len() + seen.len());
        WorkloadSpec::default().validate("default").unwrap();
    }

    #[test]
    fn values_are_read_by_their_knobs_kind() {
        let spec: WorkloadSpec =
            toml::from_str("cancel-rate = 1\ncancel-delay-ms = [5, 9]\npoll-interval-ms = 7\n")
                .unwrap();
        assert_eq!(spec.rate("cancel-rate"), 1.0);
        assert_eq!(spec.ms_range("cancel-delay-ms"), [5, 9]);
        assert_eq!(spec.ms("poll-interval-ms"), 7);
        for bad in [
            "poll-interval-ms = 1.5",
            "cancel-rate = \"x\"",
            "cancel-delay-ms = 3",
        ] {
            assert!(toml::from_str::<WorkloadSpec>(bad).is_err(), "{bad}");
        }
        let err = toml::from_str::<WorkloadSpec>("cancel-rat = 1").unwrap_err();
        assert!(
            err.to_string()
                .contains("unknown field `cancel-rat`, expected one of `conversations`, `turns`"),
            "{err}"
        );
    }

    #[test]
    fn the_first_error_is_as_before() {
        let mut spec = WorkloadSpec::default();
        spec.set("push-rate", Setting::Rate(2.0))
            .set("resubscribe-rate", Setting::Rate(3.0))
            .set("poll-interval-ms", Setting::Ms(0));
        let err = spec.validate("x").unwrap_err();
        assert!(err.message.contains("push-rate = 2"), "{err}");
        spec.set("push-rate", Setting::Rate(0.5))
            .set("resubscribe-rate", Setting::Rate(0.5));
        let err = spec.validate("x").unwrap_err();
        assert!(
            err.message.contains("poll-interval-ms must be > 0"),
            "{err}"
        );
    }

    #[test]
    fn the_drawn_shape_prints_as_before() {
        let mut spec = WorkloadSpec::default();
        assert_eq!(
            spec.describe(),
            "workload: conversations=8 turns=4 duplicate=0.000 cancel=0.000 subscribe=0.000 push=0.000 resubscribe=0.000 poll=0.000 follow-up=0.000 foreign-reader=0.000 context-mismatch=0.000"
        );
        spec.set("auth-required-rate", Setting::Rate(0.25));
        assert!(spec.describe().ends_with(" auth-required=0.250"));
    }
}
