#!/usr/bin/env bash
# Instructions per additional transactional read, from callgrind (repeatable):
# a read-only audit and reads after a write in the same transaction, with the
# read log (untracked reads, the default) and without it (`tracked`: every
# read finds or creates its item), and for the audit declared read-only
# (`read-only`: a snapshot attempt, which logs nothing). Each figure is the
# difference between runs of target/release/examples/read_cost with 256 and
# 1024 reads per transaction, divided by the 768 x 2,000 extra reads.
#
#   scripts/callgrind-reads.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p txmem --example read_cost
total() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null \
        target/release/examples/read_cost "$@" 2>&1 |
        sed -n 's/.*refs: *//p' | tr -d ,
}
for kind in audit after-write; do
    flags_list=("" tracked no-rmw)
    # A read-only declaration makes the audit a snapshot attempt (no log).
    [ "$kind" = audit ] && flags_list+=(read-only)
    for flags in "${flags_list[@]}"; do
        a=$(total "$kind" 256 $flags); b=$(total "$kind" 1024 $flags)
        printf '%-12s %-8s %6.1f instructions per read\n' "$kind" "${flags:-log}" \
            "$(echo "($b - $a) / (768 * 2000)" | bc -l)"
    done
done
