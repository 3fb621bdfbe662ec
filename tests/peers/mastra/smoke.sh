#!/usr/bin/env bash
# Smoke test of the Mastra peer: installs it if needed (setup.sh, idempotent), then runs
# smoke.mjs with the peer's Node: two real Mastra replicas and a ledger stub on loopback,
# raw JSON-RPC, one printed observation per check (see smoke.mjs's header).
#
# Bounded: the whole run is limited to $A2A_CHAOS_SMOKE_TIMEOUT seconds (default 300), and
# smoke.mjs has its own watchdog. Every process it starts is killed on exit: smoke.mjs kills
# its replicas itself, and records their pids in a file that this script's EXIT trap kills
# too (by pid, and only those), in case smoke.mjs itself was killed.
#
# Usage: tests/peers/mastra/smoke.sh [--verbose]   (exit 0 when every check held)
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
dir="${A2A_CHAOS_MASTRA_DIR:-$root/target/peer-mastra}"
limit="${A2A_CHAOS_SMOKE_TIMEOUT:-300}"

"$here/setup.sh" "$dir"

pids="$(mktemp "${TMPDIR:-/tmp}/a2a-chaos-mastra-smoke.XXXXXX")"
cleanup() {
  while read -r pid; do
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true
  done <"$pids"
  rm -f "$pids"
}
trap cleanup EXIT

A2A_CHAOS_SMOKE_PIDS="$pids" timeout --kill-after=10 "$limit" \
  "$dir/bin/node" "$here/smoke.mjs" --install-dir "$dir" "$@"
