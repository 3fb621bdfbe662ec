"""Puts two probe.py recordings side by side, as Markdown (for docs/CONFORMANCE.md).

For each probe (matched by name, in the first file's order): the request as the first
recording sent it, then each recording's answer (HTTP status, the headers probe.py kept,
the JSON body, or the SSE events with their arrival times and whether the stream closed),
and a one-word verdict: ``same`` when status, JSON-RPC error code and result keys agree,
``differs`` otherwise. Volatile values (ids, timestamps) are not compared.

Usage: python3 compare_probes.py LABEL_A=probe.json LABEL_B=probe.json [--only-differences]
"""

import argparse
import json


def load(spec):
    label, _, path = spec.partition("=")
    with open(path) as f:
        return label, {p["name"]: p for p in json.load(f)["probes"]}, [p["name"] for p in json.load(open(path))["probes"]]


def shape(answer):
    """What is compared: status, error code, result's top-level keys, event kinds."""
    if "error" in answer and "status" not in answer:
        return ("no answer",)
    body = answer.get("body")
    if "events" in answer:
        kinds = []
        for e in answer["events"]:
            data = e.get("data")
            result = data.get("result") if isinstance(data, dict) else None
            kinds.append(next(iter(result), "?") if isinstance(result, dict) else ("error" if isinstance(data, dict) and "error" in data else "?"))
        return (answer["status"], "sse", tuple(kinds), answer.get("closed"))
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict):
            return (answer["status"], "error", err.get("code"), "data" in err)
        result = body.get("result")
        keys = tuple(sorted(result)) if isinstance(result, dict) else type(result).__name__
        return (answer["status"], "result", keys)
    return (answer.get("status"), "text")


def block(obj):
    return "```json\n" + json.dumps(obj, indent=1, ensure_ascii=False) + "\n```"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--only-differences", action="store_true")
    args = parser.parse_args()
    label_a, a, order = load(args.a)
    label_b, b, order_b = load(args.b)
    names = order + [n for n in order_b if n not in a]
    for name in names:
        pa, pb = a.get(name), b.get(name)
        verdict = "same" if pa and pb and shape(pa["answer"]) == shape(pb["answer"]) else "differs"
        if args.only_differences and verdict == "same":
            continue
        print(f"### {name} ({verdict})\n")
        request = (pa or pb)["request"]
        print(f"Request: `{request['method']} {request['path']}` headers `{json.dumps(request['headers'])}`\n")
        if request.get("body") is not None:
            print(block(request["body"]) + "\n")
        for label, p in ((label_a, pa), (label_b, pb)):
            print(f"{label}:\n")
            print((block(p["answer"]) if p else "(not sent: an earlier probe it needs failed)") + "\n")


if __name__ == "__main__":
    main()
