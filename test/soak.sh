#!/bin/sh
# test/soak.sh - the OLTP demo soaked: oltp soak (bench/oltp_soak.c) under ASan+UBSan.
# Client connections churn (clean closes, resets idle, under a request, after part of
# one, idle closes by the front-end's timers), back-end connections break and are
# re-opened, transactions stall into timeouts; every request must end answered and
# right, or failed for a reason, and the three processes' counts must agree.
#
#   test/soak.sh CC BUILD_DIR [SECONDS]      (default 600)
#
#   SOAK_SAN=address,undefined (default) | thread | none    the sanitizers
#   SOAK_ARGS="-S 42 -c 64"                  more oltp soak options (-S: replay a seed)
#
# Exit 0 only if oltp soak passes (its equations, both servers exit 0 on SIGTERM) and
# no sanitizer said anything, in any of the three processes (the servers' stderr is
# echoed by oltp soak with a [frontend] / [backend] prefix). Log: BUILD_DIR/soak.log.
set -eu
cc=$1
build=$2
secs=${3:-600}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$build"
cflags="-std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Wall -Wextra -Wpedantic -Werror -I$root -I$root/bench"
urcu=$(pkg-config --cflags --libs liburcu-memb)
san=${SOAK_SAN:-address,undefined}
case $san in
address,undefined) flags="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all" ;;
thread) flags="-O1 -g -fsanitize=thread" ;;
none) flags="-O2 -g" ;;
*) echo "soak.sh: SOAK_SAN must be address,undefined, thread or none" >&2; exit 2 ;;
esac
bin=$build/oltp.soak
log=$build/soak.log
rcfile=$build/soak.rc
# shellcheck disable=SC2086
$cc $cflags $flags -o "$bin" "$root/bench/oltp.c" "$root/bench/oltp_demo.c" \
    "$root/bench/oltp_soak.c" $urcu -pthread

# leaks are checked at each process's normal exit (the servers exit on SIGTERM)
ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1}
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:exitcode=66:suppressions=$root/test/tsan.supp}
export ASAN_OPTIONS UBSAN_OPTIONS TSAN_OPTIONS

echo "soak: $bin soak -s $secs ${SOAK_ARGS:-} ($san)"
# the exit status goes through a file: a pipe into tee would hide it from sh
rm -f "$rcfile"
# shellcheck disable=SC2086
{
    st=0
    "$bin" soak -s "$secs" ${SOAK_ARGS:-} || st=$?
    echo "$st" >"$rcfile"
} 2>&1 | tee "$log"
rc=$(cat "$rcfile" 2>/dev/null || echo "none")
if grep -q 'Sanitizer\|runtime error:' "$log"; then
    echo "soak: FAIL: a sanitizer reported (see $log)"
    exit 1
fi
if [ "$rc" != 0 ]; then
    echo "soak: FAIL: oltp soak exited $rc (see $log)"
    exit 1
fi
echo "soak: PASS ($secs s, $san)"
