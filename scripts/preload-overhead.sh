#!/usr/bin/env bash
# The cost of libtxmem_elide_preload.so when it adds nothing (TXMEM_ELIDE_HTM=off, no
# TXMEM_ELIDE_STATS): scripts/peers/lock_overhead.c run plain and preloaded, interleaved,
# RUNS times each (default 11); the median nanoseconds per section of each and their ratio,
# by wall time and by CPU time.
# A third column runs the library's default mode (RTM elision where the CPU has it).
#
#   scripts/preload-overhead.sh [RUNS]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
RUNS="${1:-11}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
(cd "$ROOT" && cargo build -q --release -p txmem-elide-preload)
LIB="$CARGO_TARGET_DIR/release/libtxmem_elide_preload.so"
BIN="$CARGO_TARGET_DIR/lock_overhead"
TMPD="$(mktemp -d)"
trap 'rm -rf "$TMPD"' EXIT
gcc -O2 -pthread -o "$BIN" "$ROOT/scripts/peers/lock_overhead.c"
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# Each run prints "wall_ns cpu_ns" per section; COL picks one.
col() { awk -v c="$1" '{ print $c }'; }
for COL in 1 2; do
    [ "$COL" = 1 ] && echo "# wall time per section (ns)" || echo "# CPU time per section (ns)"
    printf '%-6s %7s %10s %12s %8s %12s\n' mode threads plain preload-off ratio preload-rtm
    for spec in "bare 1 20000000" "work 1 5000000" "rw 1 10000000" "bare 2 5000000" "work 2 2000000"; do
        set -- $spec
        key="$1-$2"
        if [ "$COL" = 1 ]; then
            p="" o="" e=""
            for _ in $(seq "$RUNS"); do
                p+="$("$BIN" "$@")"$'\n'
                o+="$(TXMEM_ELIDE_HTM=off LD_PRELOAD="$LIB" "$BIN" "$@")"$'\n'
                e+="$(LD_PRELOAD="$LIB" "$BIN" "$@")"$'\n'
            done
            printf '%s' "$p" >"$TMPD/$key.p"; printf '%s' "$o" >"$TMPD/$key.o"; printf '%s' "$e" >"$TMPD/$key.e"
        fi
        mp="$(col "$COL" <"$TMPD/$key.p" | median)" mo="$(col "$COL" <"$TMPD/$key.o" | median)"
        me="$(col "$COL" <"$TMPD/$key.e" | median)"
        printf '%-6s %7s %10s %12s %8.3f %12s\n' "$1" "$2" "$mp" "$mo" "$(echo "$mo / $mp" | bc -l)" "$me"
    done
done
echo "(medians of $RUNS interleaved runs; ratio = preload-off / plain)"
