#!/usr/bin/env bash
# The default experiment on turmoil at 1, 2, 5 and 10 ms ticks, and on the event engine
# (which has no tick): wall time, seeds per second, the hazards found and every violation
# rate against the turmoil 1 ms run's 95% interval.
#
#   cargo build --release && experiments/tick-sweep.sh > results/tick-sweep.txt
#
# Sweeps go to target/tick-sweep/ (not results/). One sweep per tick, on every core.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=target/release/a2a-chaos
out=target/tick-sweep
mkdir -p "$out"
echo "# tick-sweep: the default experiment (600 runs) per tick; $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "engine,tick_ms,wall_s,cpu_s,seeds_per_s,seeds_per_cpu_s,hazards_found,hazards_per_wall_s"
for t in 1 2 5 10 events; do
  if [ "$t" = events ]; then
    engine=events
    cp experiments/default.toml "$out/default-tick$t.toml"
  else
    engine=turmoil
    sed -e "s/^name = \"default\"/name = \"default-tick$t\"/" \
        -e "s/^seeds = { start = 0, count = 100 }/&\ntick-ms = $t/" experiments/default.toml > "$out/default-tick$t.toml"
  fi
  /usr/bin/time -f "%e %U %S" -o "$out/time$t" "$bin" run "$out/default-tick$t.toml" --engine "$engine" --out "$out/tick$t" --quiet > "$out/tick$t.txt"
  read -r wall user sys < "$out/time$t"
  python3 - "$t" "$wall" "$user" "$sys" "$out/tick$t/summary.csv" <<'PY'
import csv, sys
t, wall, user, sys_s, path = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
rows = list(csv.DictReader(open(path)))
runs = sum(int(r['runs']) for r in rows if r['invariant'] == 'no-lost-writes')
found = sum(1 for r in rows if int(r['runs_violated']) > 0)
cpu = user + sys_s
engine, tick = ("events", "-") if t == "events" else ("turmoil", t)
print(f"{engine},{tick},{wall:.2f},{cpu:.2f},{runs / wall:.1f},{runs / cpu:.1f},{found},{found / wall:.2f}")
PY
done
for t in 2 5 10 events; do
  echo
  if [ "$t" = events ]; then
    echo "## the event engine against turmoil at 1 ms"
  else
    echo "## turmoil, tick $t ms against tick 1 ms"
  fi
  python3 experiments/compare-summaries.py "$out/tick1/summary.csv" "$out/tick$t/summary.csv"
done
