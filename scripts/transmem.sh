#!/usr/bin/env bash
# Build the programs of the GCC-TM memcached study from a checkout of
# mfs409/transmem, with the installed gcc, into a folder outside it:
#
#   scripts/transmem.sh DIR [BUILD] [--tinystm TINYSTM_DIR] [--only memcached|stamp]
#
# DIR    a checkout of https://github.com/mfs409/transmem (not modified)
# BUILD  where to build (default: ./transmem-build); must not be inside DIR
# --tinystm  also build TinySTM's libitm-compatible library (abi/gcc) from a
#            checkout of patrickmarlier/tinystm, in BUILD/tinystm
# --only     build only the memcached versions, or only stamp_c
#
# What it builds, into BUILD/bin:
#   memcached-semaphore   apps/memcached_1.4.15_semaphore (the paper's version)
#   memcached-condvar     apps/memcached_1.4.15_condvar with libs/libtmcondvar
#                         (a warning, not a failure, if it does not build)
#   stamp/<app>           benchmarks/stamp_c, all eight applications, 64-bit
#   tinystm/libitm.so.1   with --tinystm
#
# The code was written for GCC 4.9, which let a function be declared
# transaction_safe and defined without the attribute (or the other way
# round); GCC 12 makes the attribute part of the type and stops. The copies
# in BUILD/src get one `__attribute__((transaction_safe))` line in front of
# each such definition or declaration, added by scripts/transmem-attrs.py
# from the compiler's own errors, and nothing else; BUILD/transmem-gcc12.diff
# records the change. memcached's -Werror is kept off in the copies' build
# flags (glibc now marks its sigignore() deprecated).
#
# Needs gcc with -fgnu-tm, g++ (libtmcondvar), make, python3 and libevent's
# headers (Debian: libevent-dev; installed with apt when missing and run as
# root, else the script stops and says so).
set -euo pipefail

usage() {
    echo "usage: $0 TRANSMEM_DIR [BUILD] [--tinystm TINYSTM_DIR] [--only memcached|stamp]" >&2
    exit 2
}
root=$(cd "$(dirname "$0")/.." && pwd)
src=""
build=""
tinystm=""
only=""
while [ $# -gt 0 ]; do
    case "$1" in
        --tinystm) [ $# -ge 2 ] || usage; tinystm=$2; shift 2 ;;
        --only) [ $# -ge 2 ] || usage; only=$2; shift 2
                case "$only" in memcached|stamp) ;; *) usage ;; esac ;;
        -h|--help) usage ;;
        *) if [ -z "$src" ]; then src=$1; elif [ -z "$build" ]; then build=$1; else usage; fi; shift ;;
    esac
done
[ -n "$src" ] || usage
build=${build:-transmem-build}

die() { echo "$0: $*" >&2; exit 1; }

[ -d "$src" ] || die "$src: no such directory (expected a checkout of https://github.com/mfs409/transmem)"
src=$(cd "$src" && pwd)
for f in apps/memcached_1.4.15_semaphore/memcached.c apps/memcached_1.4.15_semaphore/configure \
         benchmarks/stamp_c/Makefile benchmarks/stamp_c/yada/yada.c; do
    [ -f "$src/$f" ] || die "$src is not a transmem checkout: no $f (git clone https://github.com/mfs409/transmem)"
done
build=$(realpath -m "$build")
case "$build/" in
    "$src"/*) die "the build folder $build is inside the checkout $src: give one outside it" ;;
esac
mkdir -p "$build"
if [ -n "$tinystm" ]; then
    [ -f "$tinystm/abi/gcc/Makefile" ] && [ -f "$tinystm/src/stm.c" ] ||
        die "$tinystm is not a TinySTM checkout (no abi/gcc/Makefile or src/stm.c)"
    tinystm=$(cd "$tinystm" && pwd)
fi

# What the build needs.
for tool in gcc g++ make python3; do
    command -v "$tool" >/dev/null || die "needs $tool"
done
echo 'int main(void) { int x = 0; __transaction_atomic { x++; } return x - 1; }' |
    gcc -fgnu-tm -x c - -o /dev/null 2>/dev/null || die "gcc cannot build -fgnu-tm programs (libitm missing?)"
if ! echo '#include <event.h>' | gcc -E -x c - >/dev/null 2>&1; then
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
        echo "installing libevent-dev (memcached needs libevent's headers)" >&2
        apt-get install -y -q libevent-dev >/dev/null || { apt-get update -q >/dev/null && apt-get install -y -q libevent-dev >/dev/null; }
    fi
    echo '#include <event.h>' | gcc -E -x c - >/dev/null 2>&1 ||
        die "needs libevent's headers: apt-get install libevent-dev"
fi

jobs=$(nproc 2>/dev/null || echo 2)
log=$build/build.log
: >"$log"
mkdir -p "$build/bin/stamp" "$build/src/apps" "$build/src/libs" "$build/src/benchmarks"
pristine=$build/pristine
rm -rf "$pristine"
mkdir -p "$pristine"

# copy PATH: DIR/PATH to BUILD/src/PATH (fresh), and to the pristine tree for the diff.
copy() {
    rm -rf "${build:?}/src/$1" "$pristine/$1"
    mkdir -p "$(dirname "$build/src/$1")" "$(dirname "$pristine/$1")"
    cp -r "$src/$1" "$build/src/$1"
    cp -r "$src/$1" "$pristine/$1"
}

# memcached's flags, without -Werror; what configure adds besides is kept.
mc_cflags="-g -O2 -pthread -fgnu-tm -Wall -Wno-deprecated-declarations"

build_memcached() { # APP_DIR_NAME OUT_NAME [configure args...]
    local name=$1 out=$2
    shift 2
    local dir=$build/src/apps/$name
    # git does not keep timestamps: make the generated autotools files newer
    # than their sources so that make does not try to regenerate them.
    touch "$dir/aclocal.m4"
    sleep 1
    touch "$dir/configure" "$dir/Makefile.in" "$dir/config.h.in" "$dir"/doc/Makefile.in 2>/dev/null || true
    (cd "$dir" && ./configure "$@") >>"$log" 2>&1 || return 1
    python3 "$root/scripts/transmem-attrs.py" "$dir" memcached CFLAGS="$mc_cflags" >>"$log" 2>&1 || return 1
    make -C "$dir" -j"$jobs" memcached CFLAGS="$mc_cflags" >>"$log" 2>&1 || return 1
    cp "$dir/memcached" "$build/bin/$out"
}

if [ "$only" != stamp ]; then
echo "== memcached 1.4.15, semaphore version (the paper's)"
copy apps/memcached_1.4.15_semaphore
build_memcached memcached_1.4.15_semaphore memcached-semaphore ||
    die "memcached (semaphore) did not build: see $log"
echo "   $build/bin/memcached-semaphore"

echo "== memcached 1.4.15, condvar version (libtmcondvar)"
condvar_ok=0
if [ -d "$src/apps/memcached_1.4.15_condvar" ] && [ -d "$src/libs/libtmcondvar" ]; then
    copy apps/memcached_1.4.15_condvar
    copy libs/libtmcondvar
    # Its Makefile links ../../libs/libtmcondvar/obj64: build that archive
    # only (the 32-bit one needs a multilib compiler).
    if make -C "$build/src/libs/libtmcondvar" obj64/libtmcondvar.a >>"$log" 2>&1 &&
        build_memcached memcached_1.4.15_condvar memcached-condvar LIBS="-lstdc++"; then
        condvar_ok=1
        echo "   $build/bin/memcached-condvar"
    fi
fi
[ $condvar_ok -eq 1 ] || echo "   warning: the condvar version did not build (see $log); the semaphore one did" >&2
fi

if [ "$only" != memcached ]; then
echo "== STAMP in C (benchmarks/stamp_c), BITS=64"
copy benchmarks/stamp_c
stamp=$build/src/benchmarks/stamp_c
apps="bayes genome intruder kmeans labyrinth ssca2 vacation yada"
for app in $apps; do
    python3 "$root/scripts/transmem-attrs.py" "$stamp/$app" BITS=64 >>"$log" 2>&1 ||
        die "stamp_c/$app: the attribute fix failed: see $log"
done
make -C "$stamp" -j"$jobs" BITS=64 >>"$log" 2>&1 || die "stamp_c did not build: see $log"
for app in $apps; do
    cp "$stamp/obj64/$app/$app" "$build/bin/stamp/$app"
done
echo "   $build/bin/stamp/{${apps// /,}}"
fi

if [ -n "$tinystm" ]; then
    echo "== TinySTM, abi/gcc (libitm-compatible)"
    rm -rf "$build/tinystm"
    cp -r "$tinystm" "$build/tinystm"
    make -C "$build/tinystm/abi/gcc" >>"$log" 2>&1 || die "TinySTM's abi/gcc did not build: see $log"
    mkdir -p "$build/bin/tinystm"
    cp "$build/tinystm/abi/gcc/libitm.so" "$build/bin/tinystm/libitm.so.1"
    echo "   $build/bin/tinystm/libitm.so.1"
fi

# The record of what was changed: only added attribute lines.
(cd "$build" && [ -d pristine/apps ] && diff -ru pristine/apps src/apps -x '*.o' -x '*.a' -x .deps -x Makefile \
    -x 'config.*' -x stamp-h1 -x memcached -x doc -x obj32 -x obj64 || true
 cd "$build" && [ -d pristine/benchmarks ] && diff -ru pristine/benchmarks src/benchmarks -x obj32 -x obj64 || true) >"$build/transmem-gcc12.diff"
other=$(grep -E '^[+-][^+-]' "$build/transmem-gcc12.diff" | grep -vc '^+__attribute__((transaction_safe))$' || true)
added=$(grep -c '^+__attribute__((transaction_safe))$' "$build/transmem-gcc12.diff" || true)
[ "$other" -eq 0 ] || die "the copies differ from the checkout by more than attributes: see $build/transmem-gcc12.diff"
echo "== $added attribute line(s) added to the copies, nothing else: $build/transmem-gcc12.diff"
