#!/usr/bin/env bash
# The project's test command (the README's Quick start; `.ci/run` runs it).
# Needs a Rust toolchain (scripts/miri.sh adds nightly, miri and rust-src
# through rustup when missing); the client tests install libmemcached's tools
# (apt), pymemcache and Dask (a venv under target/) through scripts/client-deps.sh.
# gcc with libitm enables the libitm peer rows; TXMEM_GCC_SRC (a gcc source
# tree) adds GCC's libitm testsuite run on txmem-itm.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== the house: no import circle or upward arrow, ARCHITECTURE.md names every file, none over 600 lines"
python3 scripts/check-layers.py
python3 scripts/check-architecture.py

echo "== crates a project can adopt: cargo package, and a build with the declared rust-version (scripts/check-package.sh)"
./scripts/check-package.sh

echo "== unit, integration, property, stress and doc tests"
cargo test --workspace

echo "== fuzzing txmem serve's parsers and store, 20 s a target (scripts/fuzz-serve.sh)"
./scripts/fuzz-serve.sh 20

echo "== model checking of the commit protocols (loom: txmem, txmem-itm's sequence lock)"
RUSTFLAGS="--cfg txmem_loom" CARGO_TARGET_DIR=target/loom \
    cargo test -p txmem --release --test loom
RUSTFLAGS="--cfg txmem_loom" CARGO_TARGET_DIR=target/loom \
    cargo test -p txmem-itm --release --test loom

echo "== undefined behaviour in txmem's unsafe code (Miri, Tree Borrows, a subset of its tests)"
./scripts/miri.sh

if [ -n "${TXMEM_GCC_SRC:-}" ]; then
    echo "== GCC's libitm testsuite on txmem-itm, every method (TXMEM_GCC_SRC: a gcc source tree)"
    ./scripts/conformance-libitm.sh "$TXMEM_GCC_SRC"
fi

echo "== real memcached clients against txmem serve (pymemcache, libmemcached's tools)"
./scripts/client-deps.sh
cargo build -p txmem-cli
TXMEM_BIN=target/debug/txmem target/py/bin/pytest -q crates/txmem-server/tests/clients

echo "== a simulator sweep on a local Dask cluster (scripts/sim-dask.py)"
TXMEM_BIN=target/debug/txmem target/py/bin/pytest -q crates/txmem-cli/tests/dask
