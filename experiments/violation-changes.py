#!/usr/bin/env python3
"""violation-changes.py BEFORE_DIR AFTER_DIR

Per experiment (a folder holding summary.csv in both), every (model, routing, invariant) whose
violated-run count changed, as one markdown table: experiment, rows compared, rows changed,
and the changes (`model / routing / invariant: before -> after of runs`). What
experiments/regenerate-results.sh prints after the sweeps, and docs/PERFORMANCE.md quotes.
"""
import csv
import os
import sys


def load(path):
    with open(path) as f:
        return {(r['model'], r['routing'], r['invariant']): r for r in csv.DictReader(f)}


before_dir, after_dir = sys.argv[1], sys.argv[2]
print("| experiment | rows | changed | violated runs, before -> after |")
print("|---|---:|---:|---|")
for name in sorted(os.listdir(after_dir)):
    b_path = os.path.join(before_dir, name, 'summary.csv')
    a_path = os.path.join(after_dir, name, 'summary.csv')
    if not (os.path.exists(b_path) and os.path.exists(a_path)):
        continue
    b, a = load(b_path), load(a_path)
    changes = []
    for key in sorted(set(a) | set(b)):
        vb = int(b[key]['runs_violated']) if key in b else None
        va = int(a[key]['runs_violated']) if key in a else None
        if vb != va:
            runs = (a.get(key) or b.get(key))['runs']
            changes.append(f"{' / '.join(key)}: {vb} -> {va} of {runs}")
    print(f"| {name} | {len(a)} | {len(changes)} | {'; '.join(changes) or '-'} |")
