#!/usr/bin/env bash
# Runs the user-store demonstration live: each kvstore store (tests/user-store/kvstore/) as the
# task store of the a2a-python test peer, on two real replicas, against the user-store
# scenario and the cluster-mode fidelity scenarios. Prints one line per run: the scenario,
# the store, the invariants violated, and live's exit code (0: [expect] met, 1: not met).
#
# Usage: tests/user-store/run.sh [STORE...]
#   default: BuggyKVTaskStore FixedKVTaskStore StreamingKVTaskStore (PlainKVTaskStore too, by name)
#   A2A_CHAOS=path/to/a2a-chaos   the binary (default target/release/a2a-chaos)
# Needs the peer's SDK 1.3.0 environment (tests/peers/a2a-python/setup.sh). Run from anywhere;
# each live run is bounded by `timeout` and stops its replicas itself.
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
bin="${A2A_CHAOS:-$root/target/release/a2a-chaos}"
stores=("$@")
[ ${#stores[@]} -eq 0 ] && stores=(BuggyKVTaskStore FixedKVTaskStore StreamingKVTaskStore)
scenarios=(
  tests/user-store/scenarios/u01-concurrent-continuations.toml
  tests/fidelity/h01-aba-continuation-a2a-python-1.3-versioned.toml
  tests/fidelity/h02-concurrent-continuations-a2a-python-1.3-versioned.toml
  tests/fidelity/h03-retry-after-lost-reply-a2a-python-1.3-versioned.toml
  tests/fidelity/h04-cancel-during-effect-a2a-python-1.3-versioned.toml
  tests/fidelity/h08-resubscribe-on-another-replica-a2a-python-1.3-versioned.toml
)
for store in "${stores[@]}"; do
  peer="{venv}/bin/python {root}/tests/peers/a2a-python/server.py --port {port} --name {name}"
  peer+=" --ledger {ledger} --db {db} --store kvstore:$store --pythonpath {root}/tests/user-store"
  for scenario in "${scenarios[@]}"; do
    out="$(timeout 300 "$bin" live "$scenario" --peer "$peer" 2>&1)"
    code=$?
    verdict="$(printf '%s\n' "$out" | sed -n 's/^expected violations: \(.*\); got: \(.*\)$/expected \1, got \2/p')"
    [ -n "$verdict" ] || verdict="no verdict: $(printf '%s' "$out" | tail -1)"
    printf '%-60s %-21s %s (exit %s)\n' "$(basename "$scenario" .toml)" "$store" "$verdict" "$code"
  done
done
