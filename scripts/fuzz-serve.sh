#!/usr/bin/env bash
# A short libFuzzer run of each of txmem serve's fuzz targets (the text,
# meta and binary protocols, the store's operations):
#
#   scripts/fuzz-serve.sh [SECONDS_PER_TARGET]      (default 20)
#
# Starts from the committed seed corpus (crates/txmem-server/fuzz/corpus/);
# what a run finds goes to target/fuzz-corpus/<target>, so the tree stays
# clean; `cargo fuzz cmin` there merges finds worth keeping into the seeds.
# A crash leaves its input under crates/txmem-server/fuzz/artifacts/ and
# fails the run. Installs the nightly toolchain and cargo-fuzz if missing.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
root=$(pwd)

if ! rustup toolchain list | grep -q '^nightly'; then
    rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi

export CARGO_TARGET_DIR="$root/target/fuzz"
cd crates/txmem-server/fuzz
for t in text meta binary store; do
    mkdir -p "$root/target/fuzz-corpus/$t"
    echo "-- $t, ${seconds}s"
    cargo +nightly fuzz run -O "$t" "$root/target/fuzz-corpus/$t" "corpus/$t" -- \
        -max_total_time="$seconds" -rss_limit_mb=2048 -print_final_stats=0 2>&1 |
        grep -E '^(Done|INFO: seed corpus)|ERROR|panicked|SUMMARY' || true
    # libFuzzer's exit status is lost in the pipe; a crash leaves an artifact.
    if compgen -G "artifacts/$t/*" >/dev/null; then
        echo "fuzz target $t failed; inputs in crates/txmem-server/fuzz/artifacts/$t" >&2
        exit 1
    fi
done
