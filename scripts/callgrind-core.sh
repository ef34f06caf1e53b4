#!/usr/bin/env bash
# Instructions per transaction of the core runtime's fixed paths, from callgrind
# (repeatable, unlike timings on a shared machine): the difference between runs
# of 200k and 100k transactions of target/release/examples/incr_loop, per mode.
#
#   scripts/callgrind-core.sh [MODE ...]   # default: empty read incr update
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p txmem --example incr_loop
modes=("$@")
[ ${#modes[@]} -eq 0 ] && modes=(empty read incr update)
for mode in "${modes[@]}"; do
    arg=$mode
    [ "$mode" = incr ] && arg=""
    total() {
        valgrind --tool=callgrind --callgrind-out-file=/dev/null \
            target/release/examples/incr_loop "$1" $arg 2>&1 |
            sed -n 's/.*refs: *//p' | tr -d ,
    }
    a=$(total 100000); b=$(total 200000)
    printf '%-8s %6d instructions per transaction\n' "$mode" $(( (b - a) / 100000 ))
done
