#!/usr/bin/env bash
# GCC's own libitm testsuite on GCC's libitm and on libtxmem_itm.so, under every method.
#
#   scripts/conformance-libitm.sh [--out DIR] [--timeout SECONDS] [--default-flags FLAGS] GCC_SRC
#
# GCC_SRC is a gcc source tree (only libitm/testsuite and libitm/libitm.h are read). Each test
# of libitm/testsuite/libitm.c/*.c and libitm.c++/*.C is built as its DejaGnu directives say
# (dg-do, dg-options, dg-additional-options, dg-skip-if, dg-xfail-run-if,
# dg-set-target-env-var), with the flags libitm.exp always adds (-fgnu-tm, -I for libitm.h).
# A test without dg-options gets the default flags of its .exp driver: -O2 for C, none for C++
# (c++.exp passes only libstdc++'s build-tree includes); --default-flags replaces both.
#
# Every test that runs is run on GCC's libitm (as linked) and with
# LD_PRELOAD=libtxmem_itm.so and TXMEM_ITM_METHOD=norec, lazy, eager, serial, each run under
# a timeout (default 60 s). A txmem run proves it ran on txmem by the TXMEM_ITM_STATS report;
# one run is also checked with LD_DEBUG=bindings.
#
# Prints a table (test x {gcc-libitm, norec, lazy, eager, serial}) of PASS, FAIL, XFAIL
# (failed as the test expects), XPASS (passed though expected to fail), UNSUPPORTED (skipped
# by its directives), COMPILE-FAIL and NOT-BOUND (passed without a txmem report), and a
# summary. Builds, logs and table.md go to --out (default target/conformance-libitm).
#
# Exit status: 0 if no test that passes on GCC's libitm fails under a txmem-itm method, 1 if
# one does, 2 if an input is missing.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$ROOT/target/conformance-libitm
TIMEOUT=60
DEFAULT_FLAGS_C="-O2"
DEFAULT_FLAGS_CXX=""
SRC=""
COLS=(gcc-libitm norec lazy eager serial)

die() {
    echo "conformance-libitm: $*" >&2
    exit 2
}

usage() {
    sed -n '4p' "$0" | sed 's/^#   //' >&2
    exit 2
}

while [ $# -gt 0 ]; do
    case $1 in
    --out) [ $# -ge 2 ] || usage; OUT=$2; shift 2 ;;
    --timeout) [ $# -ge 2 ] || usage; TIMEOUT=$2; shift 2 ;;
    --default-flags) [ $# -ge 2 ] || usage; DEFAULT_FLAGS_C=$2; DEFAULT_FLAGS_CXX=$2; shift 2 ;;
    -h | --help) usage ;;
    -*) echo "unknown option $1" >&2; usage ;;
    *) [ -z "$SRC" ] || usage; SRC=$1; shift ;;
    esac
done

# ---------------------------------------------------------------- inputs

[ -n "$SRC" ] || { echo "no gcc source directory given" >&2; usage; }
[ -d "$SRC" ] || die "gcc source directory '$SRC' does not exist"
SRC=$(cd "$SRC" && pwd)
SUITE=$SRC/libitm/testsuite
[ -d "$SUITE" ] || die "'$SRC' has no libitm/testsuite: not a gcc source tree"
[ -d "$SUITE/libitm.c" ] || die "'$SUITE' has no libitm.c directory"
[ -d "$SUITE/libitm.c++" ] || die "'$SUITE' has no libitm.c++ directory"
[ -f "$SRC/libitm/libitm.h" ] || die "'$SRC/libitm' has no libitm.h (the tests include it)"
OUT=$(realpath -m "$OUT")
case $OUT/ in "$SRC"/*) die "--out '$OUT' is inside the gcc tree; build outside it" ;; esac
if ! [[ $TIMEOUT =~ ^[1-9][0-9]*$ ]]; then die "--timeout wants a number of seconds"; fi
command -v timeout >/dev/null || die "no 'timeout' command (coreutils)"

mkdir -p "$OUT/probe" || die "cannot create '$OUT'"
for cc in gcc g++; do
    command -v $cc >/dev/null || die "no $cc on PATH"
    ext=c; [ $cc = g++ ] && ext=cc
    echo 'int x; int main(void) { __transaction_atomic { x++; } return x - 1; }' >"$OUT/probe/p.$ext"
    $cc -fgnu-tm "$OUT/probe/p.$ext" -o "$OUT/probe/p-$ext" 2>"$OUT/probe/$cc.err" ||
        die "$cc cannot build a -fgnu-tm program (is GCC's libitm installed?): $(head -3 "$OUT/probe/$cc.err")"
    "$OUT/probe/p-$ext" || die "a $cc -fgnu-tm program does not run on GCC's libitm"
done

if [ -n "${TXMEM_ITM_LIB:-}" ]; then
    LIB=$TXMEM_ITM_LIB
    [ -f "$LIB" ] || die "TXMEM_ITM_LIB='$LIB' does not exist"
else
    command -v cargo >/dev/null || die "no cargo to build libtxmem_itm.so (or set TXMEM_ITM_LIB)"
    echo "building libtxmem_itm.so (cargo build --release -p txmem-itm)" >&2
    (cd "$ROOT" && cargo build --release -q -p txmem-itm) || die "cargo could not build txmem-itm"
    LIB=${CARGO_TARGET_DIR:-$ROOT/target}/release/libtxmem_itm.so
    case $LIB in /*) ;; *) LIB=$ROOT/$LIB ;; esac
    [ -f "$LIB" ] || die "libtxmem_itm.so not found at '$LIB' after the build"
fi
LIB=$(cd "$(dirname "$LIB")" && pwd)/$(basename "$LIB")

# The target triplet DejaGnu would use (config.guess style: x86_64-pc-linux-gnu).
TRIPLET=$(gcc -dumpmachine | sed -E 's/^([^-]+)-linux-/\1-pc-linux-/')

# ---------------------------------------------------------------- directives

# Splits a directive's arguments into ARGS: "quoted strings", { brace groups } (their
# contents), bare words.
split_args() {
    local s=$1 i=0 n=${#1} c depth cur
    ARGS=()
    while [ $i -lt "$n" ]; do
        c=${s:i:1}
        if [ "$c" = '"' ]; then
            cur=""; i=$((i + 1))
            while [ $i -lt "$n" ] && [ "${s:i:1}" != '"' ]; do cur+=${s:i:1}; i=$((i + 1)); done
            ARGS+=("$cur"); i=$((i + 1))
        elif [ "$c" = '{' ]; then
            cur=""; depth=1; i=$((i + 1))
            while [ $i -lt "$n" ]; do
                c=${s:i:1}
                [ "$c" = '{' ] && depth=$((depth + 1))
                [ "$c" = '}' ] && depth=$((depth - 1))
                [ $depth -eq 0 ] && break
                cur+=$c; i=$((i + 1))
            done
            ARGS+=("$cur"); i=$((i + 1))
        elif [ "$c" = ' ' ] || [ "$c" = $'\t' ]; then
            i=$((i + 1))
        else
            cur=""
            while [ $i -lt "$n" ] && [ "${s:i:1}" != ' ' ]; do cur+=${s:i:1}; i=$((i + 1)); done
            ARGS+=("$cur")
        fi
    done
}

# Evaluates a target selector (the contents of its braces) for TRIPLET: globs (any match),
# `target LIST`, `! { LIST }`, `{ A } && { B }`, `{ A } || { B }`. Prints 1 or 0; prints
# "?" for what it cannot judge (effective-target keywords).
eval_selector() {
    local - # set -f below stays in this function: globs are patterns, not file names
    set -f
    local -a a
    split_args "$1"
    a=("${ARGS[@]}")
    [ ${#a[@]} -eq 0 ] && { echo 0; return; }
    if [ "${a[0]}" = target ] && [ ${#a[@]} -eq 2 ]; then eval_selector "${a[1]}"; return; fi
    if [ "${a[0]}" = '!' ] && [ ${#a[@]} -eq 2 ]; then
        case $(eval_selector "${a[1]}") in 1) echo 0 ;; 0) echo 1 ;; *) echo '?' ;; esac
        return
    fi
    if [ ${#a[@]} -eq 3 ] && { [ "${a[1]}" = '&&' ] || [ "${a[1]}" = '||' ]; }; then
        local l r
        l=$(eval_selector "${a[0]}"); r=$(eval_selector "${a[2]}")
        if [ "$l" = '?' ] || [ "$r" = '?' ]; then echo '?'
        elif [ "${a[1]}" = '&&' ]; then echo $((l && r))
        else echo $((l || r)); fi
        return
    fi
    local g hit=0
    for g in $1; do
        case $g in *-*) ;; *) echo '?'; return ;; esac
        # shellcheck disable=SC2053 # a glob, on purpose
        [[ $TRIPLET == $g ]] && hit=1
    done
    echo $hit
}

# Reads a test's directives into DO, FLAGS, XFAIL, SKIP, ENVS, NOTE.
read_directives() {
    local file=$1 lang=$2 line body name sel
    DO=run; XFAIL=0; SKIP=""; ENVS=(); NOTE=""
    if [ "$lang" = c ]; then FLAGS=$DEFAULT_FLAGS_C; else FLAGS=$DEFAULT_FLAGS_CXX; fi
    local extra=""
    while IFS= read -r line; do
        body=${line#*\{ dg-}
        body=${body%\}*}
        name=dg-${body%% *}
        [ "$name" = "dg-$body" ] && body="" || body=${body#* }
        split_args "$body"
        case $name in
        dg-do)
            DO=${ARGS[0]}
            local kind="" rest=""
            [ ${#ARGS[@]} -ge 2 ] && read -r kind rest <<<"${ARGS[1]}"
            if [ "$kind" = xfail ]; then
                # `{ dg-do run { xfail SELECTOR } }`: runs, and is expected to fail there.
                sel=$(eval_selector "$rest")
                [ "$sel" = 1 ] && XFAIL=1 && NOTE="expected to fail: dg-do $DO { xfail $rest }"
                [ "$sel" = '?' ] && NOTE="dg-do selector '${ARGS[1]}' not understood"
            elif [ ${#ARGS[@]} -ge 2 ]; then
                sel=$(eval_selector "${ARGS[1]}")
                [ "$sel" = 1 ] || SKIP="dg-do $DO not for $TRIPLET"
                [ "$sel" = '?' ] && SKIP="dg-do selector '${ARGS[1]}' not understood"
            fi ;;
        dg-options)
            if [ ${#ARGS[@]} -lt 2 ] || [ "$(eval_selector "${ARGS[1]}")" = 1 ]; then FLAGS=${ARGS[0]}; fi ;;
        dg-additional-options)
            if [ ${#ARGS[@]} -lt 2 ] || [ "$(eval_selector "${ARGS[1]}")" = 1 ]; then extra+=" ${ARGS[0]}"; fi ;;
        dg-skip-if)
            sel=$(eval_selector "${ARGS[1]:-}")
            [ "$sel" = 1 ] && SKIP="dg-skip-if: ${ARGS[0]}"
            [ "$sel" = '?' ] && SKIP="dg-skip-if selector '${ARGS[1]}' not understood" ;;
        dg-xfail-run-if)
            sel=$(eval_selector "${ARGS[1]:-}")
            [ "$sel" = 1 ] && XFAIL=1 && NOTE="expected to fail: ${ARGS[0]}"
            [ "$sel" = '?' ] && NOTE="dg-xfail-run-if selector '${ARGS[1]}' not understood" ;;
        dg-set-target-env-var)
            ENVS+=("${ARGS[0]}=${ARGS[1]}") ;;
        *)
            NOTE="directive $name ignored" ;;
        esac
    done < <(grep -E '\{ *dg-[a-z-]+' "$file")
    FLAGS+=$extra
}

# ---------------------------------------------------------------- runs

# Runs an executable once; prints PASS, FAIL, XFAIL, XPASS or NOT-BOUND. $1: exe, $2: column,
# $3: log prefix. ENVS and XFAIL from the test's directives.
run_one() {
    local exe=$1 col=$2 log=$3 rc
    local -a env=(env -u LD_PRELOAD -u TXMEM_ITM_METHOD "${ENVS[@]}")
    if [ "$col" != gcc-libitm ]; then
        env+=(LD_PRELOAD="$LIB" TXMEM_ITM_METHOD="$col" TXMEM_ITM_STATS=1)
    fi
    echo "${env[*]} $exe" >"$log.cmd"
    # The outer redirection catches the shell's own "Aborted" report of a crashed program.
    (cd "$(dirname "$exe")" && timeout -k 5 "$TIMEOUT" "${env[@]}" "$exe" >"$log.out" 2>"$log.err") 2>>"$log.err"
    rc=$?
    local why=""
    [ $rc -eq 124 ] && why=" (timed out after ${TIMEOUT}s)"
    [ $rc -gt 128 ] && [ $rc -ne 124 ] && why=" (killed by signal $((rc - 128)))"
    echo "exit status $rc$why" >>"$log.err"
    if [ $rc -eq 0 ]; then
        if [ "$col" != gcc-libitm ] && ! grep -q "^txmem-itm stats: method=$col " "$log.err"; then
            echo NOT-BOUND
        elif [ "$XFAIL" = 1 ]; then echo XPASS
        else echo PASS; fi
    elif [ "$XFAIL" = 1 ]; then echo XFAIL
    else echo FAIL; fi
}

mkdir -p "$OUT/bin" "$OUT/logs"
rm -f "$OUT"/bin/* "$OUT"/logs/*
declare -A RESULT
TESTS=()
NOTES=()
BOUND_CHECKED=""

for file in "$SUITE"/libitm.c/*.c "$SUITE"/libitm.c++/*.C; do
    [ -e "$file" ] || continue
    case $file in *.c) lang=c; cc=gcc; dir=libitm.c ;; *) lang="c++"; cc="g++"; dir="libitm.c++" ;; esac
    test=$dir/$(basename "$file")
    TESTS+=("$test")
    key=$(echo "$test" | tr '/+' '_p')
    read_directives "$file" "$lang"
    [ -n "$NOTE" ] && NOTES+=("$test: $NOTE")
    if [ -n "$SKIP" ]; then
        for col in "${COLS[@]}"; do RESULT[$test,$col]=UNSUPPORTED; done
        NOTES+=("$test: $SKIP")
        continue
    fi
    exe=$OUT/bin/$key
    # The options split at blanks, as DejaGnu splits them; then what libitm.exp always adds.
    read -ra flags <<<"$FLAGS"
    cmd=("$cc" "${flags[@]}" -fgnu-tm -I"$SRC/libitm" -fmessage-length=0 -fdiagnostics-color=never "$file")
    case $DO in
    run | link) cmd+=(-o "$exe") ;;
    compile) cmd+=(-S -o "$exe.s") ;;
    *) NOTES+=("$test: dg-do $DO not handled"); for col in "${COLS[@]}"; do RESULT[$test,$col]=UNSUPPORTED; done; continue ;;
    esac
    echo "${cmd[*]}" >"$OUT/logs/$key.compile"
    if ! "${cmd[@]}" >>"$OUT/logs/$key.compile" 2>&1; then
        for col in "${COLS[@]}"; do RESULT[$test,$col]=COMPILE-FAIL; done
        NOTES+=("$test: $cc: $(grep -m1 -E 'error|internal' "$OUT/logs/$key.compile" | sed "s|$SRC/||")")
        continue
    fi
    if [ "$(wc -l <"$OUT/logs/$key.compile")" -gt 1 ]; then
        NOTES+=("$test: compiler output (DejaGnu counts it as excess errors): see logs/$key.compile")
    fi
    if [ "$DO" != run ]; then
        # Compile- and link-only tests: nothing runs, so every column shows the build.
        for col in "${COLS[@]}"; do RESULT[$test,$col]=PASS; done
        NOTES+=("$test: dg-do $DO: built, not run")
        continue
    fi
    differ=""
    for col in "${COLS[@]}"; do
        RESULT[$test,$col]=$(run_one "$exe" "$col" "$OUT/logs/$key.$col")
        status=$(sed -n 's/^exit status \([0-9]*\).*/\1/p' "$OUT/logs/$key.$col.err" | tail -1)
        [ "$col" = gcc-libitm ] && gcc_status=$status
        [ "$status" != "$gcc_status" ] && differ+=" $col $status,"
    done
    # The same verdict can hide another way of failing (an abort where GCC exits cleanly).
    [ -n "$differ" ] && NOTES+=("$test: exit status gcc-libitm $gcc_status, but${differ%,}")
    # Proof of binding, once: the dynamic linker resolves the program's TM calls to txmem.
    if [ -z "$BOUND_CHECKED" ] && [ "${RESULT[$test,norec]}" = PASS ]; then
        LD_DEBUG=bindings LD_DEBUG_OUTPUT="$OUT/logs/bindings" LD_PRELOAD="$LIB" \
            TXMEM_ITM_METHOD=norec "$exe" >/dev/null 2>&1
        line=$(cat "$OUT"/logs/bindings.* 2>/dev/null | grep -m1 "to $LIB .*symbol \`_ITM_beginTransaction'")
        [ -n "$line" ] || die "LD_DEBUG=bindings: $test's _ITM_beginTransaction is not bound to $LIB"
        BOUND_CHECKED="$test: $(echo "$line" | sed -E 's/^ *[0-9]+: *//')"
    fi
done

# ---------------------------------------------------------------- report

printf '%-32s' test
for col in "${COLS[@]}"; do printf ' %-12s' "$col"; done
echo
{
    printf '| test |'; for col in "${COLS[@]}"; do printf ' %s |' "$col"; done; echo
    printf '|---|'; for _ in "${COLS[@]}"; do printf -- '---|'; done; echo
} >"$OUT/table.md"
REGRESSIONS=()
declare -A COUNT
for test in "${TESTS[@]}"; do
    printf '%-32s' "$test"
    printf '| %s |' "$test" >>"$OUT/table.md"
    for col in "${COLS[@]}"; do
        r=${RESULT[$test,$col]}
        printf ' %-12s' "$r"
        printf ' %s |' "$r" >>"$OUT/table.md"
        COUNT[$col,$r]=$((${COUNT[$col,$r]:-0} + 1))
        if [ "$col" != gcc-libitm ] && [ "${RESULT[$test,gcc-libitm]}" = PASS ] && [ "$r" != PASS ]; then
            REGRESSIONS+=("$test under $col: $r (logs/$(echo "$test" | tr '/+' '_p').$col.*)")
        fi
    done
    echo
    echo >>"$OUT/table.md"
done
echo
for n in "${NOTES[@]}"; do echo "note: $n"; done
echo "binding: ${BOUND_CHECKED:-not checked (no test passed under norec)}"
for col in "${COLS[@]}"; do
    line=""
    for r in PASS FAIL XFAIL XPASS UNSUPPORTED COMPILE-FAIL NOT-BOUND; do
        [ -n "${COUNT[$col,$r]:-}" ] && line+=" ${COUNT[$col,$r]} $r,"
    done
    printf 'summary %-10s %s\n' "$col:" "${line%,}"
done
for r in "${REGRESSIONS[@]}"; do echo "REGRESSION: $r"; done
echo "summary: ${#TESTS[@]} tests; ${#REGRESSIONS[@]} runs fail on txmem-itm where GCC's libitm passes (gcc $(gcc -dumpfullversion), $LIB)"
[ ${#REGRESSIONS[@]} -eq 0 ]
