#!/bin/sh
# test/m32.sh CC OUTDIR - lf.h's and lf_bound.h's tests built for 32-bit x86 (gcc
# -m32), once with the ABI's 32-bit time_t and once with a 64-bit one (the time64
# ABI: -D_TIME_BITS=64), for two policies, and run. The time64 build is where a
# futex wait handed the kernel a timespec in the wrong layout. Needs gcc-multilib
# (make setup installs it).
set -u
[ $# -eq 2 ] || { echo "usage: test/m32.sh CC OUTDIR" >&2; exit 2; }
cc=$1 out=$2
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
printf 'int main(void) { return 0; }\n' > "$out/probe.c"
if ! $cc -m32 -o "$out/probe" "$out/probe.c" 2>"$out/probe.log"; then
    echo "m32: $cc cannot build for -m32 (install gcc-multilib: make setup)"
    cat "$out/probe.log"
    exit 1
fi
status=0 n=0
for time in 32 64; do
    tb=
    [ $time = 64 ] && tb="-D_TIME_BITS=64 -D_FILE_OFFSET_BITS=64"
    for v in LIFO-FUTEX CONDVAR-FUTEX; do
        for t in "$root"/test/t_pool_*.c "$root"/test/t_bound_*.c; do
            name=$(basename "$t" .c).$v.time$time
            n=$((n + 1))
            # shellcheck disable=SC2086
            if ! $cc -m32 $tb -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Wpedantic -Werror -O2 \
                -DLF_PROMOTE=LF_PROMOTE_${v%-*} -DLF_SYNC=LF_SYNC_${v#*-} \
                -o "$out/$name" "$t" -pthread > "$out/$name.log" 2>&1; then
                echo "m32: $name does not build"
                tail -5 "$out/$name.log"
                status=1
                continue
            fi
            if ! LF_TEST_SCALE=2 timeout 300 "$out/$name" >> "$out/$name.log" 2>&1; then
                echo "m32: $name failed"
                tail -5 "$out/$name.log"
                status=1
            fi
        done
    done
done
echo "m32: $n runs (32- and 64-bit time_t), $([ $status = 0 ] && echo all passed || echo FAILURES)"
exit $status
