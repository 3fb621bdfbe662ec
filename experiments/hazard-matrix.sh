#!/usr/bin/env bash
# Every pinned hazard scenario (tests/scenarios/h*.toml, one file per hazard variant) run
# against every built-in model: which invariants each model violates on each hazard's script.
# The pinned files fix one model per hazard; this sweep shows which other models share it.
#
#   cargo build --release && experiments/hazard-matrix.sh > results/hazard-matrix.csv
#
# Columns: scenario, model, the invariants `check` reports violated ("-" for none;
# "refused" where the model cannot run the script: a drain on a model that does not say what
# its streams do after SIGTERM).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=target/release/a2a-chaos
models=$($bin list | awk '/^models/ { on = 1; next } /^[a-z]/ { on = 0 } on && /^  / { print $1 }')
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "scenario,model,violated"
for f in tests/scenarios/h*.toml; do
  case "$f" in *-reference.toml) continue ;; esac
  scenario=$(basename "$f" .toml)
  for m in $models; do
    sed "s/^model = .*/model = \"$m\"/" "$f" > "$tmp/s.toml"
    # `check` exits 1 when the file's [expect] does not hold: expected here.
    violated=$({ $bin check "$tmp/s.toml" --json 2>/dev/null || true; } | tail -1 | python3 -c '
import json, sys
text = sys.stdin.read().strip()
if not text:
    print("refused")  # exit 2: the model cannot run this script
    sys.exit()
d = json.loads(text)
print(" ".join(sorted(k for k, v in d["invariants"].items() if v["verdict"] == "fail")) or "-")')
    echo "$scenario,$m,$violated"
  done
done
