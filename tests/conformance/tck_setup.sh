#!/usr/bin/env bash
# Checks out the a2a-tck suite (a2aproject/a2a-tck, its A2A 1.0 suite on branch 1.0-dev) into
# target/a2a-tck at the pinned commit and installs its Python dependencies into its own venv,
# target/tck-venv. The TCK's code stays under target/: it is never part of this repository.
#
# Usage: tests/conformance/tck_setup.sh [SOURCE]
#   SOURCE: a git URL or a local clone/mirror of a2aproject/a2a-tck; needed only when
#           target/a2a-tck does not exist yet (then it is cloned from SOURCE).
# Idempotent: an existing checkout at the pinned commit and a complete venv are kept.
# Needs git, python3 (3.11+) and PyPI.
set -euo pipefail
TCK_COMMIT=357c4a87afa2818731590647cccbea31c31733a2   # branch 1.0-dev, 2026-05-05
root="$(cd "$(dirname "$0")/../.." && pwd)"
tck="$root/target/a2a-tck"
venv="$root/target/tck-venv"
mkdir -p "$root/target"
if command -v flock >/dev/null 2>&1; then  # one install at a time
  exec 9>"$root/target/.tck-setup.lock"
  flock 9
fi
if [ ! -d "$tck/.git" ]; then
  [ $# -ge 1 ] || { echo "tck_setup.sh: no $tck yet; give a git URL or clone of a2aproject/a2a-tck" >&2; exit 2; }
  git clone --quiet "$1" "$tck"
fi
if [ "$(git -C "$tck" rev-parse HEAD)" != "$TCK_COMMIT" ]; then
  git -C "$tck" fetch --quiet origin 1.0-dev 2>/dev/null || true
  git -C "$tck" checkout --quiet "$TCK_COMMIT"
fi
if [ ! -f "$venv/.complete" ]; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -e "$tck"
  "$venv/bin/python" -c "import pytest, httpx, tck"
  touch "$venv/.complete"
fi
echo "a2a-tck $TCK_COMMIT in $tck, venv $venv"
