#!/usr/bin/env bash
# memcached's own test suite (its t/*.t) against `txmem serve`.
#
#   scripts/conformance-memcached.sh DIR [--memcached BIN] [--only "a b"]
#
# DIR is a memcached 1.6.x checkout (e.g. `git clone -b 1.6.18
# https://github.com/memcached/memcached`); nothing of it is copied into
# this repository. The tests start `./memcached-debug` with memcached's
# flags; a scratch directory holds a copy of DIR's t/ (and doc/, which
# line-lengths.t reads) beside a shim of that name that translates the flags
# and starts `txmem serve` (with --memcached BIN, the shim starts that
# memcached instead, for comparison). Every protocol-level file runs under
# `prove`; the files testing memcached's internals are skipped, each with its
# reason below. Prints one line per file and the pass count; exits non-zero
# if any file failed.
#
# Needs perl with Test::More (installed with apt if missing), and
# memcached's tests reach the server on 127.0.0.1 only. Each file is bounded
# by a timeout.
set -euo pipefail

usage() {
    echo "usage: $0 DIR [--memcached BIN] [--only \"file ...\"] [--txmem BIN]" >&2
    exit 2
}
[ $# -ge 1 ] || usage
dir=$(cd "$1" && pwd)
shift
memcached=""
only=""
txmem=""
while [ $# -gt 0 ]; do
    case "$1" in
        --memcached) memcached=$(command -v "$2"); shift 2 ;;
        --only) only="$2"; shift 2 ;;
        --txmem) txmem=$(cd "$(dirname "$2")" && pwd)/$(basename "$2"); shift 2 ;;
        *) usage ;;
    esac
done
[ -f "$dir/t/lib/MemcachedTest.pm" ] || { echo "$dir has no t/lib/MemcachedTest.pm" >&2; exit 2; }

root=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "$memcached" ] && [ -z "$txmem" ]; then
    cargo build --release -q -p txmem-cli --manifest-path "$root/Cargo.toml"
    txmem="${CARGO_TARGET_DIR:-$root/target}/release/txmem"
fi

# perl's Test::More and prove come with perl-modules; install them if absent.
if ! perl -MTest::More -e1 2>/dev/null || ! command -v prove >/dev/null; then
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get update -q && $sudo apt-get install -y -q perl
fi

# The files that test memcached's internals rather than its protocol, and
# why. Everything else in t/ runs.
declare -A skip=(
    [binary-extstore.t]="extstore (external flash storage)"
    [chunked-extstore.t]="extstore"
    [error-extstore.t]="extstore"
    [extstore-buckets.t]="extstore"
    [extstore-jbod.t]="extstore"
    [extstore.t]="extstore"
    [lru-crawler.t]="the LRU crawler and its commands"
    [lru-maintainer.t]="the segmented LRU's queues (stats per slab class)"
    [lru.t]="the segmented LRU's queues (stats per slab class)"
    [slabhang.t]="slab page reassignment"
    [slabs-reassign-chunked.t]="slab page reassignment"
    [slabs-reassign2.t]="slab page reassignment"
    [slabs_reassign.t]="slab page reassignment"
    [chunked-items.t]="slab chunk sizes (-o slab_chunk_max, per-slab stats)"
    [evictions.t]="per-slab-class eviction stats (items:N:evicted_time and the like)"
    [dyn-maxbytes.t]="cache_memlimit resizing the slab allocator at run time"
    [refhang.t]="item reference counts held by a hung connection (debug build)"
    [misbehave.t]="the debug build's misbehave command (privilege dropping)"
    [proxy.t]="proxy mode"
    [ssl_cert_refresh.t]="TLS"
    [ssl_ports.t]="TLS"
    [ssl_proto_version.t]="TLS"
    [ssl_session_resumption.t]="TLS"
    [ssl_settings.t]="TLS"
    [ssl_verify_modes.t]="TLS"
    [stats-detail.t]="stats detail (per-prefix statistics)"
    [restart.t]="warm restart from a memory file"
    [watcher.t]="the watch command's log streams"
    [watcher_connid.t]="the watch command's log streams"
    [udp.t]="UDP (not served)"
    [unixsocket.t]="unix sockets (not served)"
    [daemonize.t]="daemon mode (-d) and pid files"
    [binary-sasl.t]="SASL (not served)"
    [ascii-auth.t]="authentication files (not served)"
    [whitespace.t]="memcached's own source style"
    [64bit.t]="slab preallocation of more than 4 GB (T_MEMD_INITIAL_MALLOC)"
    [stats-conns.t]="stats conns over unix sockets and UDP"
    [issue_14.t]="slab pages (stats slabs total_malloced)"
    [issue_163.t]="per-slab-class stats (31:mem_requested, items:31:reclaimed)"
    [issue_22.t]="per-slab-class eviction counts (items:31:evicted) under memcached's page allocation"
    [issue_42.t]="per-slab-class stats (items:1:mem_requested against 1:chunk_size)"
    [issue_67.t]="UDP ports and the MEMCACHED_PORT_FILENAME port file"
    [stats.t]="memcached's exact set of 83 general statistics (LRU, slab and thread internals among them) and stats cachedump of a slab class"
    [conn-limits.t]="the response-object and read-buffer pools (-o read_buf_mem_limit, response_obj_oom); txmem serve bounds a connection's memory by not reading while its replies back up"
)

scratch=$(mktemp -d /tmp/memcached-t.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
cp -r "$dir/t" "$scratch/t"
if [ -d "$dir/doc" ]; then cp -r "$dir/doc" "$scratch/doc"; fi

# timedrun N CMD...: memcached's helper, a time limit.
cat > "$scratch/timedrun" <<'EOF'
#!/bin/sh
limit=$1; shift
exec timeout "$limit" "$@"
EOF

if [ -n "$memcached" ]; then
    # A release build lacks the debug build's relaxed_privileges option,
    # which the tests always pass.
    cat > "$scratch/memcached-debug" <<EOF
#!/usr/bin/env bash
memcached=$(printf %q "$memcached")
EOF
    cat >> "$scratch/memcached-debug" <<'EOF'
args=()
while [ $# -gt 0 ]; do
    if [ "$1" = -o ]; then
        opts=$(echo ",$2," | sed 's/,relaxed_privileges,/,/g; s/^,//; s/,$//')
        [ -z "$opts" ] || args+=(-o "$opts")
        shift 2
    else
        args+=("$1"); shift
    fi
done
exec "$memcached" "${args[@]}"
EOF
else
    # memcached's flags to txmem serve's. Flags with no meaning here (UDP,
    # users, extended options) are dropped; -s (unix sockets) fails.
    cat > "$scratch/memcached-debug" <<EOF
#!/usr/bin/env bash
txmem=$(printf %q "$txmem")
EOF
    cat >> "$scratch/memcached-debug" <<'EOF'
args=()
while [ $# -gt 0 ]; do
    case "$1" in
        -h) echo "txmem serve (memcached's flags: -p -l -t -m -c -I -C -b -B -F -A -M -R)"; exit 0 ;;
        -p|-l|-t|-m|-c|-I|-b|-B|-R) args+=("$1" "$2"); shift 2 ;;
        -C|-F|-A|-M) args+=("$1"); shift ;;
        -o)
            # Of memcached's extended options, only idle_timeout has a
            # counterpart.
            for opt in ${2//,/ }; do
                case "$opt" in idle_timeout=*) args+=(--idle-timeout "${opt#idle_timeout=}") ;; esac
            done
            shift 2 ;;
        -U|-u|-e|-P|-f|-n|-D|-a|-X|-Y|-Z) shift 2 ;;
        -s) echo "unix sockets are not served" >&2; exit 1 ;;
        -*) shift ;;
        *) shift ;;
    esac
done
# --debug-time: the debug build's debugtime command, which expirations.t
# uses to move the clock.
exec "$txmem" serve --debug-time "${args[@]}"
EOF
fi
chmod +x "$scratch/timedrun" "$scratch/memcached-debug"

pass=0
fail=0
failed=()
cd "$scratch"
for t in t/*.t; do
    name=$(basename "$t")
    if [ -n "$only" ]; then
        case " $only " in *" ${name%.t} "*|*" $name "*) ;; *) continue ;; esac
    elif [ -n "${skip[$name]:-}" ]; then
        continue
    fi
    if timeout 300 prove "$t" > "$scratch/$name.log" 2>&1; then
        pass=$((pass + 1))
        echo "ok     $name"
    else
        fail=$((fail + 1))
        failed+=("$name")
        echo "FAILED $name"
        sed 's/^/    /' "$scratch/$name.log" | grep -v '^    \s*$' | head -20
    fi
done
echo "skipped (memcached internals): ${#skip[@]} files"
if [ -z "$only" ]; then
    for name in $(printf '%s\n' "${!skip[@]}" | sort); do
        echo "  $name: ${skip[$name]}"
    done
fi
echo "passed $pass of $((pass + fail)) protocol-level files"
[ "$fail" -eq 0 ]
