#!/usr/bin/env python3
"""Prints the lock-elision ratios (docs/results/) from criterion's saved estimates.

Usage: python3 crates/txmem-elide/benches/ratios.py [CRITERION_DIR]
(default: $CARGO_TARGET_DIR/criterion, else target/criterion). A ratio above 1 means txmem
is faster: ratio = peer time / txmem time.
"""
import json, os, sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.environ.get("CARGO_TARGET_DIR", "target"), "criterion")

def mean(group, bench):
    path = os.path.join(root, group, bench, "new", "estimates.json")
    with open(path) as f:
        e = json.load(f)
    # Criterion reports the slope of the linear fit when it has one, else the mean.
    return (e.get("slope") or e["mean"])["point_estimate"]

g = "uncontended_lock_unlock"
ours, pl = mean(g, "txmem_elided"), mean(g, "parking_lot")
print(f"{g}: txmem {ours:.2f} ns, parking_lot {pl:.2f} ns, txmem/parking_lot = {ours / pl:.3f}x")
print()
print("| writes | threads | txmem ns/iter | parking_lot | std | crossbeam ShardedLock |")
print("|---|---|---|---|---|---|")
for w in (1, 10, 90):
    for t in (1, 2):
        # criterion turns the "/" in group names into "_" for directories
        grp = f"rwlock_map_writes_{w}pct_threads_{t}"
        o = mean(grp, "txmem_elided")
        cells = []
        for peer in ("parking_lot", "std", "crossbeam_sharded"):
            p = mean(grp, peer)
            cells.append(f"{p:.1f} ns ({p / o:.2f}x)")
        print(f"| {w}% | {t} | {o:.1f} | " + " | ".join(cells) + " |")
