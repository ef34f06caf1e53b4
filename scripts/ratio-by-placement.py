#!/usr/bin/env python3
"""Splits 2+-thread ratios of `txmem bench --json` reports by CPU placement.

Each round of a multi-thread row records the thread-to-thread cache-line
round trip measured just before it (`round_trip_ns`). On a virtual machine
that figure jumps between a few tens of nanoseconds (the two vCPUs share a
physical core) and a hundred or more (they do not), and ratios between
systems follow it. This script pairs every round's txmem-over-peer ratio
with that round's round trip and reports the median per placement class.

usage: ratio-by-placement.py [--near-below NS] REPORT.json...
"""

import argparse
import json
import statistics
from collections import defaultdict


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("reports", nargs="+", help="JSON reports of txmem bench")
    ap.add_argument(
        "--near-below",
        type=float,
        default=60.0,
        help="round trips below this many ns count as 'near' (default 60)",
    )
    args = ap.parse_args()

    # (workload, threads, peer) -> class -> [txmem/peer per round]
    split = defaultdict(lambda: defaultdict(list))
    for path in args.reports:
        with open(path) as f:
            report = json.load(f)
        rows = [r for r in report["results"] if r["status"] == "ok"]
        base = {(r["workload"], r["threads"]): r for r in rows if r["system"] == "txmem"}
        for r in rows:
            b = base.get((r["workload"], r["threads"]))
            trips = r.get("round_trip_ns") or []
            if r["system"] == "txmem" or b is None or not trips:
                continue
            if not (len(r["samples"]) == len(b["samples"]) == len(trips)):
                continue  # an incomplete row: rounds do not line up
            for peer, own, trip in zip(r["samples"], b["samples"], trips):
                if trip is None or peer <= 0:
                    continue
                cls = "near" if trip < args.near_below else "far"
                split[(r["workload"], r["threads"], r["system"])][cls].append(own / peer)
                split[(r["workload"], r["threads"], r["system"])]["all"].append(own / peer)

    if not split:
        raise SystemExit("no multi-thread rows with round trips in these reports")
    print(f"txmem over peer, median of per-round ratios (near: round trip < {args.near_below:g} ns)")
    for (workload, threads, peer), classes in sorted(split.items()):
        cells = []
        for cls in ("all", "far", "near"):
            xs = classes.get(cls, [])
            cells.append(f"{cls} {statistics.median(xs):.2f}x ({len(xs)})" if xs else f"{cls} -")
        print(f"{workload} t={threads} vs {peer}: " + ", ".join(cells))


if __name__ == "__main__":
    main()
