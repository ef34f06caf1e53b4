#!/usr/bin/env bash
# Instructions per transaction of txmem's fixed paths beside TinySTM's, from
# callgrind (repeatable): an empty transaction, one read, one increment, and
# ten reads then ten writes. txmem runs target/release/examples/incr_loop
# (TBox and TArray); TinySTM runs scripts/peers/tinystm_fixed_cost.c, built
# here against the TinySTM checkout DIR (its default design: write-back,
# encounter-time locking), without -march=native (valgrind cannot run every
# native instruction).
#
#   scripts/callgrind-tinystm.sh DIR      # DIR: a checkout of patrickmarlier/tinystm
#
# Needs valgrind and a C compiler. Output: one line per mode, with the ratio.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=${1:-}
if [ -z "$dir" ]; then
    echo "usage: $0 TINYSTM_DIR   (a checkout of patrickmarlier/tinystm)" >&2
    exit 2
fi
if [ ! -f "$dir/src/stm.c" ] || [ ! -f "$dir/include/stm.h" ]; then
    echo "$0: $dir is not a TinySTM checkout (no src/stm.c or include/stm.h)" >&2
    exit 2
fi
for tool in valgrind "${CC:-cc}"; do
    command -v "$tool" >/dev/null || { echo "$0: needs $tool" >&2; exit 2; }
done

out=target/peers
mkdir -p "$out"
"${CC:-cc}" -O2 -w -DNDEBUG -D_REENTRANT -DDESIGN=WRITE_BACK_ETL -DCM=CM_SUICIDE \
    -DIRREVOCABLE_ENABLED -DTLS_COMPILER -fno-strict-aliasing -fno-stack-protector \
    -I"$dir/include" -I"$dir/src" -I"$dir/src/atomic_ops" \
    "$dir/src/stm.c" "$dir/src/wrappers.c" scripts/peers/tinystm_fixed_cost.c \
    -lpthread -o "$out/tinystm_fixed_cost"
cargo build --release -q -p txmem --example incr_loop
txmem_bin=${CARGO_TARGET_DIR:-target}/release/examples/incr_loop

# Instructions of `$@ N` for N = 100k and 200k: the difference cancels
# start-up, per transaction.
per_tx() {
    local a b
    a=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null "$1" 100000 "${@:2}" 2>&1 |
        sed -n 's/.*refs: *//p' | tr -d ,)
    b=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null "$1" 200000 "${@:2}" 2>&1 |
        sed -n 's/.*refs: *//p' | tr -d ,)
    echo $(((b - a) / 100000))
}

printf '%-6s %8s %8s %8s\n' mode txmem tinystm ratio
for mode in empty read incr rw10; do
    txmem_arg=$mode
    [ "$mode" = incr ] && txmem_arg=""
    t=$(per_tx "$txmem_bin" $txmem_arg)
    s=$(per_tx "$out/tinystm_fixed_cost" "$mode")
    printf '%-6s %8d %8d %8s\n' "$mode" "$t" "$s" "$(awk -v t="$t" -v s="$s" 'BEGIN { printf "%.2f", t / s }')"
done
