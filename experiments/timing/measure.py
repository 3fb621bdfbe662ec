#!/usr/bin/env python3
"""The request path's time and the store round trip, live against simulated (issue 38).

Usage, from the repository root, with a release build and the peers installed
(tests/peers/a2a-python/setup.sh, tests/peers/postgres/setup.sh):

    experiments/timing/measure.py experiments/timing/probe-*.toml [more scenarios ...]

Each scenario runs simulated (`replay`) and live (`live --trace`, one run, on the command's
own PostgreSQL), and from both traces it takes:
- `save`: the gap between two saves of one task by one replica 30 ms apart or less (the
  consumer's bookkeeping within a turn, no think in between);
- `CancelTask`, `GetTask`: from the router's forward to the client's answer (the replica's
  work, its store round trips and two router hops).
It prints each one's count, 10th percentile, median, 90th percentile and maximum per world.
Run it on an idle machine: a build beside it slows the live side.
"""
import json, os, re, statistics, subprocess, sys
BIN = os.environ.get('A2A_CHAOS_BIN', 'target/release/a2a-chaos')
line_re = re.compile(r'^\s*(\d+) ms\s+(\S+)\s+(.*)$')
def parse(text):
    out = []
    for l in text.splitlines():
        m = line_re.match(l)
        if m: out.append((int(m.group(1)), m.group(2), m.group(3)))
    return out
def save_gaps(ev):
    last = {}  # (task, replica) -> time
    gaps = []
    for t, who, what in ev:
        if who != 'store' or not what.startswith('save '): continue
        m = re.match(r'save (\S+) .*?(?:from|by) (replica-\d+)', what)
        if not m: continue
        key = (m.group(1), m.group(2))
        if key in last and t - last[key] <= 30: gaps.append(t - last[key])
        last[key] = t
    return gaps
def paths(ev):
    pending = {}
    out = {'CancelTask': [], 'GetTask': []}
    for t, who, what in ev:
        if who == 'router':
            m = re.match(r'(CancelTask|GetTask) ctx ctx-(c\d+)-', what)
            if m: pending.setdefault((m.group(1), m.group(2)), []).append(t)
        elif who == 'client':
            m = re.match(r'(cancel|get) (c\d+) -> ', what)
            if m:
                k = ({'cancel': 'CancelTask', 'get': 'GetTask'}[m.group(1)], m.group(2))
                if pending.get(k): out[k[0]].append(t - pending[k].pop(0))
    return out
files = sys.argv[1:]
agg = {w: {'save': [], 'CancelTask': [], 'GetTask': []} for w in ('sim', 'live')}
for f in files:
    seed = re.search(r'^seed = (\d+)', open(f).read(), re.M)
    seed = seed.group(1) if seed else '0'
    sim = subprocess.run([BIN, 'replay', '--seed', seed, f], capture_output=True, text=True).stdout
    live = subprocess.run(['timeout', '300', BIN, 'live', f, '--trace'], capture_output=True, text=True).stdout
    for w, text in (('sim', sim), ('live', live)):
        ev = parse(text)
        agg[w]['save'] += save_gaps(ev)
        for k, v in paths(ev).items(): agg[w][k] += v
    print(f.split('/')[-1], {w: {k: len(v) for k, v in agg[w].items()} for w in agg}, flush=True)
def q(v, p): 
    v = sorted(v); return v[min(len(v) - 1, int(p * len(v)))] if v else None
for k in ('save', 'CancelTask', 'GetTask'):
    for w in ('live', 'sim'):
        v = agg[w][k]
        if v: print(f'{k:10} {w:4} n={len(v):4} p10={q(v,.1)} median={statistics.median(v)} p90={q(v,.9)} max={max(v)}')
