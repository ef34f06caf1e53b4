#!/usr/bin/env bash
# Instructions per transaction (callgrind, deterministic) with the item
# lookup always scanning versus always hashing, for growing transaction
# sizes: the crossover is the right cutoff for the hash index.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p txmem --example lookup_cost
bin=target/release/examples/lookup_cost
count() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" "$@" 2>&1 | awk '/refs:/ {gsub(",","",$4); print $4}'; }
printf "%6s %12s %12s\n" items scan/tx hash/tx
for n in 4 8 12 16 20 24 32 48 64 128; do
    base_scan=$(count "$n" 18446744073709551615 1)
    base_hash=$(count "$n" 0 1)
    scan=$(count "$n" 18446744073709551615 1001)
    hash=$(count "$n" 0 1001)
    printf "%6d %12d %12d\n" "$n" $(( (scan - base_scan) / 1000 )) $(( (hash - base_hash) / 1000 ))
done
