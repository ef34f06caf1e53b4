#!/usr/bin/env bash
# Builds google/leveldb's db_bench from a checkout the user gives, outside the project,
# and (with `run`) compares it plain and under libtxmem_elide_preload.so.
#
#   scripts/leveldb.sh DIR            # build DIR/build-txmem/db_bench (nothing written here)
#   scripts/leveldb.sh DIR run [N]    # and run the side-by-side table, 1..N threads (N=2)
#
# DIR is an unmodified LevelDB checkout (its googletest/benchmark submodules may be empty).
# LevelDB's own CMake builds the library (tests and benchmarks off, so no submodule is
# needed); db_bench is then compiled against it with the system's googletest headers,
# which db_bench's util/testutil.h includes (Debian: googletest, libgtest-dev; installed
# here if missing). RelWithDebInfo keeps the symbols that the lock profile names.
#
# Output of `run`: one line per (benchmark, threads, mode) with db_bench's micros/op and
# MB/s, then the lock profile (TXMEM_ELIDE_STATS=1) of fillrandom at N threads.
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
echo "built $BUILD/db_bench"

[ "${2:-}" = run ] || exit 0
MAXT="${3:-2}"
CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
(cd "$ROOT" && cargo build -q --release -p txmem-elide-preload)
LIB="$CARGO_TARGET_DIR/release/libtxmem_elide_preload.so"
DB="${TMPDIR:-/tmp}/txmem-leveldb-$$"
trap 'rm -rf "$DB"' EXIT
COMMON=(--num=100000 --value_size=50 --db="$DB")
one() { # mode bench threads -> "micros/op MB/s"
    local mode="$1" bench="$2" t="$3" pre=() out
    [ "$mode" = preload ] && pre=(env LD_PRELOAD="$LIB")
    if [ "$bench" = fillseq ] || [ "$bench" = fillrandom ]; then
        out="$("${pre[@]}" "$BUILD/db_bench" "${COMMON[@]}" --threads="$t" --benchmarks="$bench")"
    else
        # Reads need a database: fill it once (one thread), then run the reader.
        out="$("${pre[@]}" "$BUILD/db_bench" "${COMMON[@]}" --threads="$t" \
            --benchmarks="fillrandom,$bench")"
    fi
    echo "$out" | awk -v b="$bench" '$1 == b { for (i = 1; i <= NF; i++) if ($i == "micros/op;") m = $(i-1); mb = "-"; for (i = 1; i <= NF; i++) if ($i == "MB/s") mb = $(i-1); print m, mb }'
}
printf '%-17s %7s %8s %12s %8s\n' benchmark threads mode micros/op MB/s
for bench in fillseq fillrandom readrandom readwhilewriting; do
    for t in $(seq 1 "$MAXT"); do
        for mode in plain preload; do
            read -r us mb <<<"$(one "$mode" "$bench" "$t")"
            printf '%-17s %7s %8s %12s %8s\n' "$bench" "$t" "$mode" "$us" "$mb"
        done
    done
done
echo
echo "== lock profile: fillrandom, $MAXT threads, TXMEM_ELIDE_STATS=1"
TXMEM_ELIDE_STATS=1 LD_PRELOAD="$LIB" "$BUILD/db_bench" "${COMMON[@]}" --threads="$MAXT" \
    --benchmarks=fillrandom 2>&1 >/dev/null
