#!/usr/bin/env bash
# The project's test command (the README's Quick start; `.ci/run` runs it).
# Needs only a Rust toolchain; gcc with libitm enables the libitm peer rows.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== unit, integration, property, stress and doc tests"
cargo test --workspace

echo "== model checking of the commit protocol (loom)"
RUSTFLAGS="--cfg txmem_loom" CARGO_TARGET_DIR=target/loom \
    cargo test -p txmem --release --test loom
