#!/usr/bin/env bash
# Miri over a chosen subset of txmem's tests: undefined behaviour in the
# crate's unsafe code (aliasing under Tree Borrows, uninitialized reads, use
# after free, invalid deallocation) and data races on its non-atomic memory.
#
#   scripts/miri.sh            # the subset (under 10 minutes from nothing on 2 idle cores)
#   scripts/miri.sh --setup    # only install what it needs (before running it
#                              # beside other steps that use rustup)
#
# Installs the nightly toolchain with miri and rust-src through rustup when
# they are missing. Builds go to target/miri (cargo miri's own directory).
#
# The flags:
#  * -Zmiri-tree-borrows: Stacked Borrows stops at the first pin inside
#    crossbeam-epoch 0.9 (`Local::element_of`, internal.rs: a `&Entry` to a
#    `Local`'s first field is cast to a `&Local`, wider than the reference's
#    tag), before most of txmem's own code is checked.
#  * -Zmiri-ignore-leaks: crossbeam-epoch's global collector still holds
#    deferred garbage when a test process exits, and the Miri stand-in for
#    `atomic-maybe-uninit` never frees a replaced word (see types/cell.rs).
#  * one seed (no -Zmiri-many-seeds): the multi-threaded tests are
#    already the slowest part; Miri's default preemption and weak-memory
#    emulation still vary the schedule within a run.
# Isolation stays on: the subset needs no clock, file or randomness from the
# host.
#
# The subset covers item.rs, cell.rs and history.rs, the hash map, B+ tree
# and list collections, TBox, TArray and TCounter, a small multi-threaded
# bank, or_else and savepoints, read-only snapshot attempts (with
# history), and the word log (rollbacks, taken-over reads, concurrent
# increments). Tests left out are the long ones (thousands of keys, proptest
# models, concurrent churn); the tests shrink their own sizes under
# `cfg(miri)` where a smaller run still exercises the same paths.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! rustup +nightly component list --installed 2>/dev/null | grep -q '^miri'; then
    rustup toolchain install nightly --profile minimal --component miri,rust-src
fi
if ! rustup +nightly component list --installed 2>/dev/null | grep -q '^rust-src'; then
    rustup component add --toolchain nightly rust-src
fi
cargo +nightly miri setup
[ "${1:-}" = --setup ] && exit 0

export MIRIFLAGS="-Zmiri-tree-borrows -Zmiri-ignore-leaks ${MIRIFLAGS:-}"
# (Each run's heading carries the seconds since the start; test.sh shows them.)
miri() {
    echo "== [${SECONDS}s] cargo miri test -p txmem $*"
    cargo +nightly miri test -q -p txmem "$@"
}

# Every test crate of the subset built in one go (in parallel), then run.
miri --no-run --lib --test api --test bank --test read_only --test or_else --test word_log

# Unit tests: items, cells, the hash map's probe (a pending unlink against an
# older snapshot), resize and placeholders, the queue, versions, the index
# (not: 2048 inserts in one transaction).
miri --lib -- --skip a_map_grows_inside_one_large_transaction
# TBox (inline, padded, heap), TArray, TCounter, or_else, handlers, options.
miri --test api
# Two writers and an auditor over a TArray, in each opacity mode.
miri --test bank -- bank_total_is_conserved_in_every_opacity_mode
# Snapshot attempts, history, fold, read-only map lookups.
miri --test read_only
miri --test word_log
# or_else over the hash map's, the B+ tree's and the list set's inserts (a
# rolled-back insert's absence, a read before the or_else, a second branch
# inserting what the first rolled back): the collections' placeholders,
# node retirement and size counters.
miri --test or_else -- keeps_an_absence a_read_before_or_else \
    the_second_branch_may_insert
# The collections' own integration tests are left out (their crates cost
# minutes to build under Miri): or_else's and read_only's map and set tests
# reach the same insert, remove, lookup and retirement paths.
