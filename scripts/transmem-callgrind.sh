#!/usr/bin/env bash
# Instructions per memcached operation of the transactional memcached 1.4.15 (the GCC-TM
# study's, built by scripts/transmem.sh), under callgrind, for each TM runtime named:
# the difference between a run of N2 and one of N1 memaslap operations (one client, one
# worker thread, --binary), divided by N2 - N1, so start-up and warm-up cancel. Counts the
# server's user-space instructions only (the kernel's are not seen by callgrind).
#
#   scripts/transmem-callgrind.sh BUILD [RUNTIME ...]      # RUNTIME: ml_wt norec lazy eager
#
# BUILD is scripts/transmem.sh's build folder. ml_wt is GCC's libitm; the others are
# libtxmem_itm.so's methods (from $CARGO_TARGET_DIR/release or target/release; build it
# first with `cargo build --release -p txmem-itm`). N1 and N2 come from the environment
# (default 5000 and 15000). Needs valgrind, memcaslap (libmemcached-tools) and gcc.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "$0: $*" >&2; exit 1; }
[ $# -ge 1 ] || die "usage: $0 BUILD [ml_wt|norec|lazy|eager ...]"
build=$1; shift
runtimes=("$@")
[ ${#runtimes[@]} -gt 0 ] || runtimes=(ml_wt norec lazy eager)
server=$build/bin/memcached-semaphore
[ -x "$server" ] || die "$server: not built (run scripts/transmem.sh TRANSMEM_DIR $build)"
lib=${CARGO_TARGET_DIR:-$root/target}/release/libtxmem_itm.so
for tool in valgrind memcaslap gcc callgrind_annotate; do
    command -v $tool >/dev/null || die "needs $tool"
done
n1=${N1:-5000}
n2=${N2:-15000}
[ "$n2" -gt "$n1" ] || die "N2 ($n2) must be larger than N1 ($n1)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# memcached sets its open-file limit to its connection limit; under valgrind, which keeps
# file descriptors of its own, that call fails and memcached stops. The shim makes it a no-op.
printf '#include <sys/resource.h>\nint setrlimit(int r, const struct rlimit *l) { (void)r; (void)l; return 0; }\n' \
    > "$work/rl.c"
gcc -shared -fPIC -O2 "$work/rl.c" -o "$work/rl.so"

port=$(( 20000 + RANDOM % 20000 ))
# Prints the instructions of one run of N operations under runtime $1.
run() {
    local rt=$1 n=$2 out=$work/$1.$2.out pre env=()
    if [ "$rt" = ml_wt ]; then
        pre=$work/rl.so; env=(ITM_DEFAULT_METHOD=ml_wt)
    else
        [ -f "$lib" ] || die "$lib: missing (cargo build --release -p txmem-itm)"
        pre="$work/rl.so $lib"; env=(TXMEM_ITM_METHOD=$rt)
    fi
    env "${env[@]}" LD_PRELOAD="$pre" valgrind --tool=callgrind --callgrind-out-file="$out" \
        "$server" -u root -U 0 -l 127.0.0.1 -p $port -t 1 -m 1024 -c 256 >"$work/server.log" 2>&1 &
    local pid=$!
    for _ in $(seq 100); do
        (echo >/dev/tcp/127.0.0.1/$port) 2>/dev/null && break
        sleep 0.2
    done
    memcaslap -s 127.0.0.1:$port -T 1 -c 1 -x "$n" -B >"$work/client.log" 2>&1 ||
        die "memcaslap failed under $rt: $(tail -3 "$work/client.log")"
    kill -INT $pid
    wait $pid 2>/dev/null || true
    callgrind_annotate "$out" | sed -n 's/^ *\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' | tr -d ,
}
printf '%-8s %12s\n' runtime 'instr/op'
for rt in "${runtimes[@]}"; do
    a=$(run "$rt" "$n1"); b=$(run "$rt" "$n2")
    printf '%-8s %12d\n' "$rt" $(( (b - a) / (n2 - n1) ))
done
