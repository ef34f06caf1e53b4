#!/usr/bin/env bash
# Builds google/leveldb's db_bench from a checkout the user gives, outside the project,
# and (with `run`) compares it plain and under libtxmem_elide_preload.so.
#
#   scripts/leveldb.sh DIR            # build DIR/build-txmem/db_bench (nothing written here)
#   scripts/leveldb.sh DIR run ["1 2 4 8" [REPS]]   # and the side-by-side table
#   scripts/leveldb.sh DIR ycsb ["session a b c d e" [THREADS [SECONDS [REPS]]]]
#                                     # our YCSB driver (scripts/peers/ycsb_leveldb.cc)
#
# DIR is an unmodified LevelDB checkout (its googletest/benchmark submodules may be empty).
# LevelDB's own CMake builds the library (tests and benchmarks off, so no submodule is
# needed); db_bench is then compiled against it with the system's googletest headers,
# which db_bench's util/testutil.h includes (Debian: googletest, libgtest-dev; installed
# here if missing). RelWithDebInfo keeps the symbols that the lock profile names.
#
# Output of `run`: per (benchmark, threads), the throughput plain, preloaded as a pass-through
# and preloaded with elision (medians of REPS runs, default 3), then the lock profile
# (TXMEM_ELIDE_STATS=1) of fillrandom at the largest thread count, without and with RTM.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DIR="$(cd "${1:?usage: scripts/leveldb.sh LEVELDB_DIR [run [THREADS]]}" && pwd)"
case "$DIR/" in
"$ROOT"/*) echo "put the LevelDB checkout beside the project, not inside it" >&2; exit 2 ;;
esac
BUILD="$DIR/build-txmem"
GT=/usr/src/googletest

if [ ! -d "$GT/googlemock/include" ] || [ ! -f /usr/lib/x86_64-linux-gnu/libgtest.a ]; then
    apt-get install -y -q googletest libgtest-dev >/dev/null
fi

cmake -S "$DIR" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_STANDARD=17 \
    -DLEVELDB_BUILD_TESTS=OFF -DLEVELDB_BUILD_BENCHMARKS=OFF -DLEVELDB_INSTALL=OFF >/dev/null
cmake --build "$BUILD" --target leveldb -j "$(nproc)" >/dev/null
if [ ! -x "$BUILD/db_bench" ] || [ "$BUILD/libleveldb.a" -nt "$BUILD/db_bench" ]; then
    # gmock-all.cc supplies the matcher machinery MATCHER(IsOK) needs; gtest the rest.
    g++ -std=c++17 -O2 -g -fno-rtti -DLEVELDB_PLATFORM_POSIX=1 -DLEVELDB_HAS_PORT_CONFIG_H=1 \
        -I"$DIR" -I"$DIR/include" -I"$BUILD/include" \
        -I"$GT/googlemock/include" -I"$GT/googlemock" -I"$GT/googletest/include" \
        "$DIR/benchmarks/db_bench.cc" "$DIR/util/histogram.cc" "$DIR/util/testutil.cc" \
        "$GT/googlemock/src/gmock-all.cc" \
        "$BUILD/libleveldb.a" -lgtest -lpthread -o "$BUILD/db_bench"
fi
if [ ! -x "$BUILD/ycsb_leveldb" ] || [ "$ROOT/scripts/peers/ycsb_leveldb.cc" -nt "$BUILD/ycsb_leveldb" ] ||
    [ "$BUILD/libleveldb.a" -nt "$BUILD/ycsb_leveldb" ]; then
    g++ -std=c++17 -O2 -g -fno-rtti -I"$DIR/include" "$ROOT/scripts/peers/ycsb_leveldb.cc" \
        "$BUILD/libleveldb.a" -lpthread -o "$BUILD/ycsb_leveldb"
fi
echo "built $BUILD/db_bench $BUILD/ycsb_leveldb"

if [ "${2:-}" = ycsb ]; then
    # scripts/leveldb.sh DIR ycsb ["session a b c d e" [THREADS [SECONDS [REPS]]]]: each
    # workload plain, preloaded as a pass-through and preloaded with elision, REPS times
    # interleaved (default 3); a table of median throughputs, then the first repetition's
    # full output (throughput per second, latency percentiles) of each workload and mode.
    CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
    (cd "$ROOT" && cargo build -q --release -p txmem-elide-preload)
    LIB="$CARGO_TARGET_DIR/release/libtxmem_elide_preload.so"
    OUT="$(mktemp -d)"
    trap 'rm -rf "$OUT"' EXIT
    median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
    WORKLOADS="${3:-session a b c d e}"
    for w in $WORKLOADS; do
        for rep in $(seq "${6:-3}"); do
            for mode in plain preload elided; do
                pre=()
                case "$mode" in
                preload) pre=(env TXMEM_ELIDE_HTM=off LD_PRELOAD="$LIB") ;;
                elided) pre=(env LD_PRELOAD="$LIB") ;;
                esac
                "${pre[@]}" "$BUILD/ycsb_leveldb" --db="$OUT/db" --workload="$w" \
                    --threads="${4:-4}" --seconds="${5:-10}" >"$OUT/$w-$mode-$rep.txt"
            done
        done
    done
    echo "# ycsb_leveldb, ${4:-4} threads, ${5:-10} s a run, median of ${6:-3} interleaved runs (ops/s)"
    printf '%-8s %10s %10s %10s %9s %9s\n' workload plain preload elided pre/plain eli/plain
    for w in $WORKLOADS; do
        declare -A m=()
        for mode in plain preload elided; do
            m[$mode]="$(cat "$OUT/$w-$mode-"*.txt | awk '$1 == "throughput_ops_per_s" { print $2 }' | median)"
        done
        printf '%-8s %10s %10s %10s %9.3f %9.3f\n' "$w" "${m[plain]}" "${m[preload]}" "${m[elided]}" \
            "$(echo "${m[preload]} / ${m[plain]}" | bc -l)" "$(echo "${m[elided]} / ${m[plain]}" | bc -l)"
    done
    for w in $WORKLOADS; do
        for mode in plain preload elided; do
            echo
            echo "## workload $w, $mode (repetition 1)"
            cat "$OUT/$w-$mode-1.txt"
        done
    done
    exit 0
fi

[ "${2:-}" = run ] || exit 0
THREADS="${3:-1 2 4 8}"
REPS="${4:-3}"
CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
(cd "$ROOT" && cargo build -q --release -p txmem-elide-preload)
LIB="$CARGO_TARGET_DIR/release/libtxmem_elide_preload.so"
DB="${TMPDIR:-/tmp}/txmem-leveldb-$$"
trap 'rm -rf "$DB" "$DB.profile"' EXIT
COMMON=(--num=100000 --value_size=50 --db="$DB")
one() { # mode bench threads -> micros/op of bench (db_bench's, averaged over its threads)
    local mode="$1" bench="$2" t="$3" pre=() list="$2"
    case "$mode" in
    preload) pre=(env TXMEM_ELIDE_HTM=off LD_PRELOAD="$LIB") ;;
    elided) pre=(env LD_PRELOAD="$LIB") ;;
    esac
    # Reads need a database: fill it first in the same run (only the reader's line counts).
    case "$bench" in readrandom | readwhilewriting) list="fillrandom,$bench" ;; esac
    "${pre[@]}" "$BUILD/db_bench" "${COMMON[@]}" --threads="$t" --benchmarks="$list" |
        awk -v b="$bench" '$1 == b { for (i = 1; i <= NF; i++) if ($i == "micros/op;") print $(i-1) }'
}
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo "# db_bench: 100,000 pairs per thread, 16-byte keys, 50-byte values; median of $REPS interleaved runs"
echo "# kops/s = threads / (micros/op) * 1000; preload = TXMEM_ELIDE_HTM=off (pass-through),"
echo "# elided = the library's default (RTM elision if usable: $(grep -qw rtm /proc/cpuinfo && echo 'cpuinfo lists rtm' || echo 'no rtm in cpuinfo'))"
printf '%-17s %7s %10s %10s %10s %9s %9s\n' benchmark threads plain preload elided pre/plain eli/plain
for bench in ${BENCHES:-fillseq fillrandom readrandom readwhilewriting}; do
    for t in $THREADS; do
        # Interleaved: each repetition runs every mode once, so drift in the machine's load
        # reaches the three alike.
        declare -A v=() k=()
        for _ in $(seq "$REPS"); do
            for mode in plain preload elided; do v[$mode]+="$(one "$mode" "$bench" "$t")"$'\n'; done
        done
        for mode in plain preload elided; do
            k[$mode]="$(echo "$t / $(printf '%s' "${v[$mode]}" | median) * 1000" | bc -l)"
        done
        printf '%-17s %7s %10.1f %10.1f %10.1f %9.3f %9.3f\n' "$bench" "$t" "${k[plain]}" \
            "${k[preload]}" "${k[elided]}" "$(echo "${k[preload]} / ${k[plain]}" | bc -l)" \
            "$(echo "${k[elided]} / ${k[plain]}" | bc -l)"
    done
done
LAST="${THREADS##* }"
for htm in off on; do
    echo
    echo "== lock profile: fillrandom, $LAST threads, TXMEM_ELIDE_STATS=1 TXMEM_ELIDE_HTM=$htm"
    TXMEM_ELIDE_STATS=1 TXMEM_ELIDE_STATS_TOP=3 TXMEM_ELIDE_STATS_FILE="$DB.profile" \
        TXMEM_ELIDE_HTM="$htm" LD_PRELOAD="$LIB" \
        "$BUILD/db_bench" "${COMMON[@]}" --threads="$LAST" --benchmarks=fillrandom >/dev/null 2>&1
    cat "$DB.profile"
done
