//! Whether a run simulates the agent card, and which extra hosts it needs.

use std::collections::BTreeSet;

use crate::card::CardSetup;
use crate::faults::{Action, FaultSpec, Scheduled};
use crate::host::Host;

use super::{RunSpec, Workload};

/// Refuses a run that simulates the card with a model that has no `[card]` knobs (a
/// `--model` given on the command line).
pub fn check_card_profile(spec: &RunSpec) -> Result<(), crate::error::InputError> {
    match card_setup(&spec.workload, &spec.faults, &[]) {
        Some(_) => crate::card::check_profile(&spec.profile, "--model"),
        None => Ok(()),
    }
}

/// Whether a run simulates the card, its setup, and the extra hosts its changes name.
///
/// A scripted run's hosts are the ones its card steps name. A generated run simulates the
/// card when any card fault is configured, but only the hosts named by the card changes
/// this seed's `plan` actually schedules get a host: each host is one more runtime the
/// simulation steps every tick, and most seeds never name them.
pub fn card_setup(
    workload: &Workload,
    faults: &FaultSpec,
    plan: &[Scheduled],
) -> Option<(CardSetup, BTreeSet<Host>)> {
    match workload {
        Workload::Scripted(script) => {
            let setup = script.card_setup()?;
            Some((setup, script.card_hosts()))
        }
        Workload::Generated(_) => {
            if !crate::faults::any_card_fault(faults.rates.keys()) {
                return None;
            }
            let hosts = plan
                .iter()
                .filter_map(|s| match &s.action {
                    Action::Card(c) => c.0.names_host(),
                    _ => None,
                })
                .collect();
            Some((CardSetup::default(), hosts))
        }
    }
}
