//! From timed steps to a script's steps, in one of three [`Layout`]s: from the most
//! faithful (one timed sequence per lane, all concurrent) to the most readable (one step
//! after another).

use std::collections::BTreeMap;

use super::{tree, Timed};
use crate::scenario::Step;

/// How timed steps become a script's steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Layout {
    /// One step after another in time order, no waits: the most readable. Requests of one
    /// conversation that started together (a send and its duplicate) are `concurrent`.
    Sequential,
    /// One step after another, each at its original time (`until-ms`).
    Timed,
    /// One timed sequence per lane (per conversation, and one for faults), all concurrent:
    /// closest to the original run.
    Lanes,
}

impl Layout {
    /// The name used in messages.
    pub fn word(self) -> &'static str {
        match self {
            Layout::Sequential => "sequential",
            Layout::Timed => "timed",
            Layout::Lanes => "lanes",
        }
    }
}

/// Turns timed steps into a script's steps.
pub fn render(events: &[Timed], layout: Layout) -> Vec<Step> {
    let timed = |events: &[&Timed]| {
        let mut out = Vec::new();
        let mut last = None;
        for e in events {
            if e.at_ms > 0 && last != Some(e.at_ms) {
                out.push(Step::UntilMs(e.at_ms));
            }
            last = Some(e.at_ms);
            out.push(e.step.clone());
        }
        out
    };
    match layout {
        Layout::Sequential => {
            // Timed steps of one conversation at the same instant on different lanes start
            // together.
            let mut out = Vec::new();
            let mut i = 0;
            while i < events.len() {
                let e = &events[i];
                let mut j = i + 1;
                while e.conversation.is_some()
                    && events
                        .get(j)
                        .is_some_and(|n| n.at_ms == e.at_ms && n.conversation == e.conversation)
                {
                    j += 1;
                }
                let mut lanes: BTreeMap<u32, Vec<Step>> = BTreeMap::new();
                for n in &events[i..j] {
                    lanes.entry(n.lane).or_default().push(n.step.clone());
                }
                if lanes.len() == 1 {
                    out.extend(lanes.into_values().flatten());
                } else {
                    out.push(Step::Concurrent(
                        lanes.into_values().map(Step::Sequence).collect(),
                    ));
                }
                i = j;
            }
            tree::normalise(out)
        }
        Layout::Timed => timed(&events.iter().collect::<Vec<_>>()),
        Layout::Lanes => {
            let mut lanes: BTreeMap<(&Option<String>, u32), Vec<&Timed>> = BTreeMap::new();
            for e in events {
                lanes.entry((&e.conversation, e.lane)).or_default().push(e);
            }
            if lanes.len() <= 1 {
                return timed(&events.iter().collect::<Vec<_>>());
            }
            vec![Step::Concurrent(
                lanes
                    .values()
                    .map(|lane| Step::Sequence(timed(lane)))
                    .collect(),
            )]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::kill;
    use crate::scenario::SendStep;

    #[test]
    fn lanes_keep_each_conversation_in_order_and_duplicates_apart() {
        let send = |c: &str, t: u32| Step::Send(SendStep::new(c, t));
        let events = vec![
            Timed {
                at_ms: 10,
                conversation: Some("c1".into()),
                lane: 0,
                step: send("c1", 1),
            },
            Timed {
                at_ms: 20,
                conversation: None,
                lane: 0,
                step: Step::Fault(kill::Kill(crate::host::Host::Replica(0)).into()),
            },
            Timed {
                at_ms: 30,
                conversation: Some("c1".into()),
                lane: 0,
                step: send("c1", 2),
            },
            Timed {
                at_ms: 30,
                conversation: Some("c1".into()),
                lane: 1,
                step: send("c1", 2),
            },
        ];
        let sequential = render(&events, Layout::Sequential);
        assert_eq!(sequential.len(), 3);
        assert_eq!(
            sequential[2],
            Step::Concurrent(vec![send("c1", 2), send("c1", 2)])
        );
        assert_eq!(Step::count(&render(&events, Layout::Timed)), 7);
        let lanes = render(&events, Layout::Lanes);
        assert_eq!(lanes.len(), 1);
        let Step::Concurrent(v) = &lanes[0] else {
            panic!("{lanes:?}")
        };
        assert_eq!(v.len(), 3);
        assert_eq!(
            v[0],
            Step::Sequence(vec![
                Step::UntilMs(20),
                Step::Fault(kill::Kill(crate::host::Host::Replica(0)).into())
            ])
        );
    }
}
