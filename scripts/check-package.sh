#!/usr/bin/env bash
# Crates a project can adopt: every crate of the workspace packages (`cargo
# package`: its manifest's metadata, its file list, and dependencies that
# resolve without the workspace's paths), and the workspace builds with the
# oldest Rust it declares (`rust-version`), installed through rustup when
# missing.
#
#   scripts/check-package.sh            # both checks
#   scripts/check-package.sh --verify   # also compile each packaged crate on
#                                       # its own (minutes: a second build)
set -euo pipefail
cd "$(dirname "$0")/.."

verify=--no-verify
[ "${1:-}" = --verify ] && verify=
echo "-- cargo package --workspace ${verify}"
# (--allow-dirty: a working tree with edits packages too; CI's is clean.)
cargo package --workspace $verify --allow-dirty --quiet

msrv=$(sed -n 's/^rust-version = "\(.*\)"$/\1/p' Cargo.toml)
if [ -z "$msrv" ]; then
    echo "check-package: no rust-version in the workspace's Cargo.toml" >&2
    exit 1
fi
if ! rustup run "$msrv" rustc --version >/dev/null 2>&1; then
    echo "-- installing Rust $msrv (the declared rust-version) through rustup"
    rustup toolchain install "$msrv" --profile minimal
fi
echo "-- cargo check with Rust $msrv (the declared rust-version)"
CARGO_TARGET_DIR=target/msrv cargo "+$msrv" check --workspace --lib --bins --quiet
echo "check-package: every crate packages; the workspace builds with Rust $msrv"
