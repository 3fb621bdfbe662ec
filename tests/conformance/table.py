"""Prints the conformance results side by side (tests/conformance/run.sh calls it).

Each argument is ``LABEL=FILE``, where FILE holds the JSON lines one client printed
(python_client.py or js_client.mjs). The table has one row per step, in the clients' order,
and one column per argument; a cell is ``ok``, ``FAIL`` or ``skip``, then the step's short
``value``. ``--markdown`` prints a Markdown table (for docs/CONFORMANCE.md), otherwise
fixed-width text. The last row counts ok / failed / skipped per column.

Usage: python3 table.py [--markdown] LABEL=FILE...
"""

import argparse
import json


def load(path):
    steps, summary = {}, None
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line.startswith("{"):
                    continue
                try:
                    row = json.loads(line)
                except ValueError:
                    continue
                if "summary" in row:
                    summary = row["summary"]
                elif "step" in row:
                    steps[row["step"]] = row
    except OSError:
        pass
    return steps, summary


def cell(row):
    if row is None:
        return "-"
    if row["detail"].startswith("skipped:"):
        mark = "skip"
    else:
        mark = "ok" if row["ok"] else "FAIL"
    value = row.get("value")
    return f"{mark} {value}" if value and value != "skip" else mark


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("columns", nargs="+", metavar="LABEL=FILE")
    args = parser.parse_args()
    columns = []
    order = []
    for spec in args.columns:
        label, _, path = spec.partition("=")
        steps, summary = load(path)
        columns.append((label, steps, summary))
        for name in steps:
            if name not in order:
                order.append(name)
    header = ["step"] + [label for label, _, _ in columns]
    rows = [[name] + [cell(steps.get(name)) for _, steps, _ in columns] for name in order]
    totals = ["ok / failed / skipped"]
    for _, steps, summary in columns:
        ran = [r for r in steps.values() if not r["detail"].startswith("skipped:")]
        ok = sum(r["ok"] for r in ran)
        skipped = len(steps) - len(ran)
        note = " (run timed out)" if summary and "error" in summary else ""
        totals.append(f"{ok} / {len(ran) - ok} / {skipped}{note}")
    rows.append(totals)
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for row in rows:
            print("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")
        return
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
    widths = [min(w, 40) for w in widths]
    for row in [header] + rows:
        print("  ".join(c[:w].ljust(w) for c, w in zip(row, widths)).rstrip())


if __name__ == "__main__":
    main()
