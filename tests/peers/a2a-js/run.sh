#!/usr/bin/env bash
# Runs the hazard scenarios live against the @a2a-js/sdk peer (server.mjs, InMemoryTaskStore
# per process) and prints one line per scenario: the invariants violated and live's exit
# code (0: the file's [expect] met, 1: not met, 2: refused, e.g. a push or card step).
# The files' [expect] lists were written for their simulated model, not for this peer: a
# line that "does not meet" its [expect] is the peer behaving differently, which is the point.
#
# Usage: tests/peers/a2a-js/run.sh [SCENARIO.toml...]
#   default: tests/scenarios/h*.toml and tests/fidelity/h*.toml but the long horizons
#   A2A_CHAOS=path/to/a2a-chaos   the binary (default target/release/a2a-chaos)
# Needs tests/peers/a2a-js/setup.sh first. Each live run is bounded by `timeout` and stops its
# replicas itself.
set -uo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
cd "$root"
bin="${A2A_CHAOS:-$root/target/release/a2a-chaos}"
peer="a2a-js"
files=("$@")
if [ ${#files[@]} -eq 0 ]; then
  # Every hazard scenario but the long horizons (minutes of real waiting live).
  for f in tests/scenarios/h*.toml tests/fidelity/h*.toml; do
    case "$f" in *-ttl-*|*-nine-minutes-*) continue ;; esac
    files+=("$f")
  done
fi
for scenario in "${files[@]}"; do
  out="$(timeout 300 "$bin" live "$scenario" --peer "$peer" 2>&1)"
  code=$?
  verdict="$(printf '%s\n' "$out" | sed -n 's/^expected violations: \(.*\); got: \(.*\)$/expected \1, got \2/p')"
  [ -n "$verdict" ] || verdict="$(printf '%s' "$out" | tail -1 | cut -c1-150)"
  printf '%-72s %s (exit %s)\n' "$scenario" "$verdict" "$code"
done
