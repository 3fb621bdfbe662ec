"""Summarises a2a-tck runs from their JUnit XML (tests/conformance/run.sh --tck writes it).

For each run: the outcome of every test (passed, failed, error, skipped, xfailed: the TCK
marks SHOULD-level checks expected-to-fail, which pytest reports as skipped with type
``pytest.xfail``), counted per category (the directory under ``tests/compatibility/``:
agent_card, core_operations, jsonrpc, ...). With two or more runs it also lists every test
that failed on the first run but passed on a later one, with the first line of the TCK's
failure message (the ``reason``).

Output is Markdown (for docs/CONFORMANCE.md and the reports).

Usage: python3 tck_summary.py LABEL=JUNIT.xml [LABEL=JUNIT.xml ...]
"""

import argparse
import xml.etree.ElementTree as ET
from collections import Counter, OrderedDict

OUTCOMES = ["passed", "failed", "error", "xfailed", "skipped"]


def outcome(case):
    for child in case:
        if child.tag == "failure":
            return "failed", child.get("message") or (child.text or "")
        if child.tag == "error":
            return "error", child.get("message") or (child.text or "")
        if child.tag == "skipped":
            kind = "xfailed" if child.get("type") == "pytest.xfail" else "skipped"
            return kind, child.get("message") or ""
    return "passed", ""


def load(path):
    """OrderedDict test id -> (category, outcome, message)."""
    cases = OrderedDict()
    for case in ET.parse(path).getroot().iter("testcase"):
        classname = case.get("classname", "")
        parts = classname.split(".")
        category = parts[2] if len(parts) > 2 and parts[1] == "compatibility" else parts[0]
        test_id = f"{classname}::{case.get('name')}"
        kind, message = outcome(case)
        cases[test_id] = (category, kind, message)
    return cases


def first_line(message, limit=300):
    for line in message.splitlines():
        line = line.strip()
        if line:
            return line if len(line) <= limit else line[: limit - 3] + "..."
    return ""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", metavar="LABEL=JUNIT")
    args = parser.parse_args()
    runs = []
    for spec in args.runs:
        label, _, path = spec.partition("=")
        runs.append((label, load(path)))

    categories = []
    for _, cases in runs:
        for category, _, _ in cases.values():
            if category not in categories:
                categories.append(category)

    print("| category | " + " | ".join(label for label, _ in runs) + " |")
    print("|---|" + "---|" * len(runs))
    for category in categories + ["total"]:
        cells = []
        for _, cases in runs:
            counts = Counter(k for c, k, _ in cases.values() if category in ("total", c))
            cells.append(" / ".join(str(counts[o]) for o in OUTCOMES))
        name = f"**{category}**" if category == "total" else category
        print(f"| {name} | " + " | ".join(cells) + " |")
    print()
    print("Cells: " + " / ".join(OUTCOMES) + ".")

    for label, cases in runs:
        failed = [(t, m) for t, (_, k, m) in cases.items() if k in ("failed", "error")]
        print(f"\n#### Failing on {label} ({len(failed)})\n")
        for test_id, message in failed:
            print(f"- `{test_id.split('compatibility.', 1)[-1]}`: {first_line(message)}")

    if len(runs) >= 2:
        base_label, base = runs[0]
        for label, other in runs[1:]:
            rows = [
                (t, m)
                for t, (_, k, m) in base.items()
                if k in ("failed", "error") and other.get(t, (None, None, None))[1] == "passed"
            ]
            print(f"\n#### Failing on {base_label}, passing on {label} ({len(rows)})\n")
            for test_id, message in rows:
                print(f"- `{test_id.split('compatibility.', 1)[-1]}`: {first_line(message)}")


if __name__ == "__main__":
    main()
