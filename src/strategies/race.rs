//! Races: two or three calls on one conversation's task at the same instant, the
//! concurrency multi-replica users make (issue 38): two continuations of one task, the same
//! message twice (a duplicate delivery or an impatient client), a cancel or a subscription
//! beside a running turn, each call to its own replica, to the same one, or to the router.
//!
//! Nothing holds a turn inside its effect here, so the real system may serve the calls in
//! either order; `fidelity` compares a live run with the simulation of every order a small
//! stagger reaches ([`crate::fidelity::patterns::order_variants`]).

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::strategy::BoxedStrategy;

/// One call of a race.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Member {
    /// The conversation's next turn (a second `Next` in one race is the turn after it: two
    /// different follow-ups of one task at once), blocking or over the streaming method.
    Next { streaming: bool },
    /// The same message as the race's first `Next` (a duplicate delivery), or, when the race
    /// has none before it, the conversation's last turn again (a retry).
    Again,
    /// CancelTask.
    Cancel,
    /// SubscribeToTask.
    Subscribe,
    /// GetTask.
    Get,
}

/// Two or three calls, each with its replica (`None`: the router picks).
pub(super) fn members() -> BoxedStrategy<Vec<(Member, Option<Index>)>> {
    let member = prop_oneof![
        3 => Just(Member::Next { streaming: false }),
        1 => Just(Member::Next { streaming: true }),
        2 => Just(Member::Again),
        2 => Just(Member::Cancel),
        1 => Just(Member::Subscribe),
        1 => Just(Member::Get),
    ];
    let weighted = prop_oneof![3 => Just(2usize), 1 => Just(3usize)];
    weighted
        .prop_flat_map(move |n| {
            proptest::collection::vec(
                (member.clone(), proptest::option::of(any::<Index>())),
                n..=n,
            )
        })
        .boxed()
}
