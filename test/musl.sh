#!/bin/sh
# test/musl.sh OUTDIR - lf.h's and lf_bound.h's tests built with musl-gcc (static) for
# LIFO on both synchronizers (LF_SYNC_PTHREAD is musl's default; LF_SYNC_FUTEX parks
# in slices there) and CONDVAR, and run. musl-gcc leaves the kernel's headers off its
# path, so this is also where lf.h's own futex numbers are used.
# Needs musl-tools (make setup installs it).
set -u
[ $# -eq 1 ] || { echo "usage: test/musl.sh OUTDIR" >&2; exit 2; }
out=$1
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
command -v musl-gcc >/dev/null 2>&1 || { echo "musl: no musl-gcc (install musl-tools: make setup)"; exit 1; }
status=0 n=0
for v in LIFO-FUTEX LIFO-PTHREAD CONDVAR-PTHREAD; do
    for t in "$root"/test/t_pool_*.c "$root"/test/t_bound_*.c; do
        name=$(basename "$t" .c).$v
        n=$((n + 1))
        if ! musl-gcc -static -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Wpedantic -Werror -O2 \
            -DLF_PROMOTE=LF_PROMOTE_${v%-*} -DLF_SYNC=LF_SYNC_${v#*-} \
            -o "$out/$name" "$t" -pthread > "$out/$name.log" 2>&1; then
            echo "musl: $name does not build"
            tail -5 "$out/$name.log"
            status=1
            continue
        fi
        if ! LF_TEST_SCALE=2 timeout 300 "$out/$name" >> "$out/$name.log" 2>&1; then
            echo "musl: $name failed"
            tail -5 "$out/$name.log"
            status=1
        fi
    done
done
echo "musl: $n runs, $([ $status = 0 ] && echo all passed || echo FAILURES)"
exit $status
