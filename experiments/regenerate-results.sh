#!/usr/bin/env bash
# Regenerates everything under results/ that is derived from the experiments and the
# default swarm, in one command, printing progress to stderr:
#
#   experiments/regenerate-results.sh            # every step below
#   experiments/regenerate-results.sh sweeps     # only some steps, in the order given
#
# Steps:
#   sweeps     every experiments/*.toml with `run --quiet` into results/<name>/ (the old
#              runs.csv, summary.csv, chart.svg and timelines are removed first, so no
#              timeline of an earlier first-failing seed stays behind); the old summary.csv
#              of each is kept in target/regenerate/before/<name>/ and compared with the new
#              one (experiments/compare-summaries.py, then experiments/violation-changes.py
#              for every count that changed); every row of the `reference` model
#              must stay at 0 violations (a violation there is a finding: a reference-model
#              or checker bug, reported, never hidden)
#   matrix     experiments/hazard-matrix.sh > results/hazard-matrix.csv
#   ticks      experiments/tick-sweep.sh > results/tick-sweep.txt
#   discovery  bench --hazards --hazard-seeds 300 --hazard-wall-s 20 (one core) >
#              results/hazard-discovery.txt
#   bench      bench > results/bench.csv (speed figures: run it on an otherwise idle machine)
#
# Not regenerated here: results/fidelity-generated/ (live runs against the real SDKs,
# `fidelity --generate`; its scenarios come from src/strategies, not the swarm) and
# results/slurm-selftest.txt (experiments/slurm-selftest.sh, a batch-system self-test).
#
# Exit 1 when a `reference` row has a violation or a sweep failed, else 0.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=target/release/a2a-chaos
before=target/regenerate/before
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(sweeps matrix ticks discovery bench)
say() { echo "[regenerate $(date -u +%H:%M:%S)] $*" >&2; }
status=0

say "cargo build --release"
cargo build --release --quiet

for step in "${steps[@]}"; do
  case "$step" in
  sweeps)
    mkdir -p "$before"
    for f in experiments/*.toml; do
      name=$(sed -n 's/^name = "\(.*\)"/\1/p' "$f" | head -1)
      out=results/$name
      if [ -f "$out/summary.csv" ]; then
        mkdir -p "$before/$name"
        cp "$out/summary.csv" "$before/$name/summary.csv"
      fi
      rm -f "$out"/runs.csv "$out"/summary.csv "$out"/chart.svg "$out"/timeline-*.html
      say "sweep $name ($f)"
      start=$(date +%s)
      if ! "$bin" run "$f" --out "$out" --quiet >&2; then
        say "sweep $name: run failed"
        status=1
        continue
      fi
      say "sweep $name: $(($(date +%s) - start)) s"
      if [ -f "$before/$name/summary.csv" ]; then
        python3 experiments/compare-summaries.py "$before/$name/summary.csv" "$out/summary.csv" |
          sed "s/^/  $name: /" >&2
      fi
      bad=$(awk -F, 'NR > 1 && $1 == "reference" && $5 > 0 { print $2 "/" $3 ": " $5 "/" $4 }' \
        "$out/summary.csv")
      if [ -n "$bad" ]; then
        say "FINDING: the reference model has violations in $name:"
        echo "$bad" | sed 's/^/    /' >&2
        status=1
      fi
    done
    say "violated-run counts that changed, per experiment (experiments/violation-changes.py):"
    python3 experiments/violation-changes.py "$before" results >&2
    ;;
  matrix)
    say "hazard matrix -> results/hazard-matrix.csv"
    experiments/hazard-matrix.sh > results/hazard-matrix.csv
    ;;
  ticks)
    say "tick sweep -> results/tick-sweep.txt"
    experiments/tick-sweep.sh > results/tick-sweep.txt
    ;;
  discovery)
    say "hazard discovery (one core, up to 300 seeds or 20 s per model) -> results/hazard-discovery.txt"
    {
      echo "# a2a-chaos bench --hazards --hazard-seeds 300 --hazard-wall-s 20"
      echo "# written by experiments/regenerate-results.sh, $(date -u +%Y-%m-%d), commit" \
        "$(git rev-parse --short HEAD)$(git diff --quiet -- src || echo " with uncommitted changes to src/"), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)."
      echo "# Per model, from seed 0 under the default experiment plus the card faults (no hint"
      echo "# where to look): the first seed, runs (seeds x routings), wall- and CPU-seconds until"
      echo "# each §6 hazard appears; then each hazard reported upstream, on the model or SDK"
      echo "# version that has it (src/bench/upstream.rs). On a busy machine the CPU-seconds are"
      echo "# the comparable figure (the search runs on one thread). docs/PERFORMANCE.md reads it."
      echo
      "$bin" bench --hazards --hazard-seeds 300 --hazard-wall-s 20 | grep -v '^- '
    } > results/hazard-discovery.txt
    ;;
  bench)
    say "bench -> results/bench.csv (speed figures: noisy unless the machine is idle)"
    "$bin" bench >&2
    ;;
  *)
    say "unknown step $step (sweeps, matrix, ticks, discovery, bench)"
    exit 2
    ;;
  esac
done
say "done"
exit $status
