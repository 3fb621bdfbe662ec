#!/usr/bin/env python3
"""compare-summaries.py BASE/summary.csv OTHER/summary.csv

Compares two sweeps of the same experiment (two ticks, two builds): which (model, routing,
invariant) each found violated at least once, and every violation rate of OTHER that falls
outside BASE's 95% Wilson interval, marked DISJOINT when the two intervals do not overlap.
"""
import csv, sys
def load(p):
    return {(r['model'], r['routing'], r['invariant']): r for r in csv.DictReader(open(p))}
a, b = load(sys.argv[1]), load(sys.argv[2])
found_a = {k for k, r in a.items() if int(r['runs_violated']) > 0}
found_b = {k for k, r in b.items() if int(r['runs_violated']) > 0}
outside = []
for k in sorted(a):
    ra, rb = a[k], b[k]
    pa, pb = float(ra['violation_rate']), float(rb['violation_rate'])
    lo, hi = float(ra['ci95_low']), float(ra['ci95_high'])
    lo2, hi2 = float(rb['ci95_low']), float(rb['ci95_high'])
    if not (lo <= pb <= hi):
        outside.append((k, f"{ra['runs_violated']}/{ra['runs']} [{lo:.3f},{hi:.3f}]", f"{rb['runs_violated']}/{rb['runs']} [{lo2:.3f},{hi2:.3f}]", 'overlap' if lo2 <= hi and lo <= hi2 else 'DISJOINT'))
print(f"hazards (model,routing,invariant violated at least once): base {len(found_a)}, other {len(found_b)}; lost {sorted(found_a-found_b)}; new {sorted(found_b-found_a)}")
print(f"rates outside base's 95% interval: {len(outside)} of {len(a)}")
for o in outside: print('  ', *o)
