#!/usr/bin/env bash
# The project's test command (the README's Quick start; `.ci/run` runs it).
# Needs a Rust toolchain (scripts/miri.sh adds nightly, miri and rust-src
# through rustup when missing); the client tests install libmemcached's tools
# (apt), pymemcache and Dask (a venv under target/) through scripts/client-deps.sh.
# gcc with libitm enables the libitm peer rows; TXMEM_GCC_SRC (a gcc source
# tree) adds GCC's libitm testsuite run on txmem-itm; TXMEM_TRANSMEM_SRC (a
# checkout of mfs409/transmem) adds its stamp_c, built with scripts/transmem.sh,
# run small on txmem-itm under every method, each run's own check passing.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each step's heading carries the seconds since the start, so that a CI log
# shows where the time went (CI allows 20 minutes).
step() { echo "== [${SECONDS}s] $*"; }

step "the house: no import circle or upward arrow, ARCHITECTURE.md names every file, none over 600 lines"
python3 scripts/check-layers.py
python3 scripts/check-architecture.py

step "crates a project can adopt: cargo package, and a build with the declared rust-version (scripts/check-package.sh)"
./scripts/check-package.sh

# Miri interprets on one core for longer than any other step takes, so it
# starts as early as it can and runs beside every step below (its output
# goes to a log, shown when it ends); the script waits for it before it
# finishes. (Not beside check-package.sh: both may call rustup.)
step "undefined behaviour in txmem's unsafe code (Miri, Tree Borrows, a subset of its tests): started, beside the steps below"
./scripts/miri.sh --setup
mkdir -p target
miri_log=target/miri.log
./scripts/miri.sh >"$miri_log" 2>&1 &
miri_pid=$!
trap 'kill "$miri_pid" 2>/dev/null || true' EXIT

step "unit, integration, property, stress and doc tests"
cargo test --workspace

step "fuzzing txmem serve's parsers and store, 20 s a target (scripts/fuzz-serve.sh)"
./scripts/fuzz-serve.sh 20

step "model checking of the commit protocols (loom: txmem, txmem-itm's sequence lock)"
RUSTFLAGS="--cfg txmem_loom" CARGO_TARGET_DIR=target/loom \
    cargo test -p txmem --release --test loom
RUSTFLAGS="--cfg txmem_loom" CARGO_TARGET_DIR=target/loom \
    cargo test -p txmem-itm --release --test loom

if [ -n "${TXMEM_GCC_SRC:-}" ]; then
    step "GCC's libitm testsuite on txmem-itm, every method (TXMEM_GCC_SRC: a gcc source tree)"
    ./scripts/conformance-libitm.sh "$TXMEM_GCC_SRC"
fi

if [ -n "${TXMEM_TRANSMEM_SRC:-}" ]; then
    step "transmem's stamp_c on txmem-itm, every method (TXMEM_TRANSMEM_SRC: a transmem checkout)"
    ./scripts/transmem.sh "$TXMEM_TRANSMEM_SRC" target/transmem --only stamp
    cargo build -q -p txmem-itm
    stamp=target/transmem/bin/stamp
    for method in norec lazy eager; do
        export LD_PRELOAD=$(realpath "${CARGO_TARGET_DIR:-target}")/debug/libtxmem_itm.so TXMEM_ITM_METHOD=$method
        "$stamp/genome" -g256 -s16 -n16384 -t2 | grep "Sequence matches gene: yes" >/dev/null
        "$stamp/intruder" -a10 -l64 -n512 -s1 -t2 | awk '/Num attack/ {a=$NF} /Num found/ {f=$NF} END {exit !(a != "" && a == f)}'
        "$stamp/vacation" -n4 -q60 -u90 -r4096 -T8192 -t2 >/dev/null
        "$stamp/ssca2" -s12 -i1.0 -u1.0 -l3 -p3 -t2 >/dev/null
        "$stamp/bayes" -v12 -r256 -n4 -p40 -i2 -e4 -s1 -t2 >/dev/null
        unset LD_PRELOAD TXMEM_ITM_METHOD
        echo "   $method: genome, intruder, vacation, ssca2, bayes verified"
    done
fi

step "real memcached clients against txmem serve (pymemcache, libmemcached's tools)"
./scripts/client-deps.sh
cargo build -p txmem-cli
TXMEM_BIN=target/debug/txmem target/py/bin/pytest -q crates/txmem-server/tests/clients

step "a simulator sweep on a local Dask cluster (scripts/sim-dask.py)"
TXMEM_BIN=target/debug/txmem target/py/bin/pytest -q crates/txmem-cli/tests/dask

step "Miri's result (its output: $miri_log)"
if ! wait "$miri_pid"; then
    cat "$miri_log"
    echo "test.sh: Miri failed (above)" >&2
    exit 1
fi
grep -E "^test result|^== " "$miri_log" || true
trap - EXIT
echo "test.sh: every step passed in ${SECONDS}s"
