#!/usr/bin/env bash
# One-TBox increments against a parking_lot mutex and fast-stm, with the
# systems alternating run by run (criterion runs each system's row back to
# back, and this shared host drifts by more than the differences measured).
# Prints each system's median ns per increment and the medians of the
# per-round ratios.
#
#   scripts/alternate-increments.sh [ROUNDS]   # default 15
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p txmem --example incr_loop
rounds=${1:-15}
bin=target/release/examples/incr_loop
for _ in $(seq "$rounds"); do
    echo "atomically $($bin 3000000 | cut -d' ' -f1)"
    echo "update $($bin 3000000 update | cut -d' ' -f1)"
    echo "mutex $($bin 3000000 mutex | cut -d' ' -f1)"
    echo "fast-stm $($bin 300000 fast-stm | cut -d' ' -f1)"
done | python3 -c '
import sys, statistics
rounds, cur = [], {}
for line in sys.stdin:
    name, ns = line.split()
    cur[name] = float(ns)
    if name == "fast-stm":
        rounds.append(cur)
        cur = {}
med = lambda xs: statistics.median(xs)
for name in ("atomically", "update", "mutex", "fast-stm"):
    print(f"{name:<11} median {med([r[name] for r in rounds]):7.2f} ns")
for name in ("atomically", "update"):
    vs_fast = med([r["fast-stm"] / r[name] for r in rounds])
    vs_mutex = med([r[name] / r["mutex"] for r in rounds])
    print(f"{name:<11} {vs_fast:.2f}x faster than fast-stm, {vs_mutex:.2f}x the mutex time"
          f" (medians of {len(rounds)} per-round ratios)")
'
