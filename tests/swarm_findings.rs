//! Failures the reference swarm found (`experiments/reference-swarm.toml`), pinned by seed:
//! each seed once violated an invariant on `reference`, and must not again. A scripted
//! scenario pins a failure that shrinks to a readable script (`tests/scenarios/s*`); these
//! are pinned as swarm seeds because they need the swarm's timing to line up.

use std::path::Path;

use a2a_chaos::experiment::Experiment;
use a2a_chaos::sweep::runner::run_one;

/// `(seed, routing, invariant it violated, postmortem)`.
const FINDINGS: &[(u64, &str, &str, &str)] = &[
    (224, "round-robin", "liveness",
     "postmortem: a non-blocking turn 3 lost its effect's answer (replica-1 cut from the ledger) and stayed working; its runner lease ran out, and turn 4 arrived before the next sweep: the busy rule only held while the lease did, so turn 4 ran over turn 3 and completed the task with turn 3 never processed. The reference now answers 409 to any follow-up while the task is working; only the takeover (the replica itself) goes through."),
    (371, "context-affinity", "liveness",
     "postmortem: the same as seed 224, under affinity."),
    (891, "round-robin", "stream-continuity",
     "postmortem: a BUGGIFY slow event poll (2.7 s) held the subscriber's stream past the heal and past the client's stream timeout: a delay, not a loss. The checker counted progress from the heal; it now counts from the end of the last slowed poll."),
    (289, "context-affinity", "stream-continuity",
     "postmortem: the same as seed 891, under affinity."),
    (950, "context-affinity", "dedup-contract",
     "postmortem: a first turn's runner died after its final save but before it marked the dedup claim done; the claim's lease ran out, so the takeover of an older orphan task of the same message claimed it anew and ran the turn again (the ledger key absorbed the effect). An expired claim is now settled from the tasks: a settled task holding the message means the message completed, and the orphan is retired."),
    (735, "round-robin", "liveness",
     "postmortem: turn 2 of c4 reached replica-0 while turn 3 began on replica-1; replica-0's working save conflicted, and the re-applied save wrote turn 2 over the working task (the busy rule was checked on the first read only). The two turns interleaved their history, turn 3's runner died (a kill point), and every takeover re-ran the last user message in the history, turn 2's, which the dedup table knew as done: the task stayed working to the end. The busy rule now holds for the copy a conflict re-reads too."),
    (416, "round-robin", "stream-continuity",
     "postmortem: not a fault of the reference but of the checker. A subscriber's replica lost the store (so its poll missed v6) and then the router (2700 ms); the simulated network drops what a partitioned link carried and never retransmits, so the stream's connection was dead, and the checker still owed it every change until the client's timeout. Changes after a cut of the stream's own path (a partition of client-router or router-replica, a kill of either) are now owed to the next subscription, which here delivered v6."),
];

#[test]
fn the_reference_swarm_findings_stay_fixed() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/reference-swarm.toml");
    let exp = Experiment::load(&path).unwrap();
    let profile = exp.profiles[0].clone();
    let mut failures = Vec::new();
    for (seed, routing, invariant, postmortem) in FINDINGS {
        let summary = run_one(&exp, &profile, routing, *seed);
        let violated = summary.violated();
        if !violated.is_empty() || summary.error.is_some() {
            failures.push(format!(
                "seed {seed} ({routing}) violates {violated:?} {:?} (it once violated {invariant})\n  {postmortem}\n  reproduce: a2a-chaos replay experiments/reference-swarm.toml --seed {seed} --model reference --routing {routing}",
                summary.error
            ));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}
