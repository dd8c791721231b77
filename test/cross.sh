#!/bin/sh
# test/cross.sh OUTDIR [slice] - the tests built for ARM and run under qemu-user:
# aarch64 (arm64) and armhf (32-bit ARMv7), static, with liburcu from Debian's
# multiarch packages, compiled by clang (--target, linked by lld) against Debian's
# cross libc: Debian's cross gcc packages conflict with gcc-multilib, which the -m32
# runs need, so they are not used. `make cross` runs every lf.h and lf_bound.h test (LIFO with the
# futex synchronizer, CONDVAR) and every reactor test on epoll and poll (LIFO), and
# compiles each header for both targets with -fsanitize=thread where the toolchain
# has it (aarch64; armhf has no TSan). `make test` runs a slice (one test of each
# header, both targets).
#
# What emulation proves and what it does not: the code builds and runs for both ABIs
# (32-bit ARM: 32-bit time_t and long, 8-byte atomics by library call; 64-bit: ARM's
# atomics instructions), and the counted invariants of the tests hold there. qemu on
# an x86 host runs the guest threads on the host's strongly ordered memory, so a
# missing barrier that only ARM hardware would show (a load passing a store) is not
# found here; the spin models and TSan (which checks the C11 memory model, not the
# machine's) cover that, not this run.
set -u
[ $# -ge 1 ] || { echo "usage: test/cross.sh OUTDIR [slice]" >&2; exit 2; }
out=$1 slice=${2:-}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"

# what it needs, installed as root on Debian (one package at a time: the two
# multiarch liburcu packages and the cross libcs are refused when asked for at once)
need() { # need COMMAND-OR-FILE PACKAGE
    if [ -e "$1" ] || command -v "$1" >/dev/null 2>&1; then return 0; fi
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        # a foreign architecture added now has no package lists yet: update again
        case $2 in *:*)
            arch=${2##*:}
            if ! dpkg --print-foreign-architectures | grep -qx "$arch"; then
                dpkg --add-architecture "$arch"
                rm -f "$out/.apt-updated"
            fi ;;
        esac
        if [ ! -e "$out/.apt-updated" ]; then
            apt-get update -qq >/dev/null 2>&1 || true # a mirror mid-sync: use what came
            touch "$out/.apt-updated"
        fi
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null 2>&1 ||
            { apt-get update -qq >/dev/null 2>&1 || true
              DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null 2>&1; }
    fi
    [ -e "$1" ] || command -v "$1" >/dev/null 2>&1 || { echo "cross: cannot install $2"; exit 1; }
}
need clang clang
need ld.lld lld
need /usr/aarch64-linux-gnu/include/stdio.h libc6-dev-arm64-cross
need /usr/arm-linux-gnueabihf/include/stdio.h libc6-dev-armhf-cross
need /usr/lib/gcc-cross/aarch64-linux-gnu/12/libgcc.a libgcc-12-dev-arm64-cross
need /usr/lib/gcc-cross/arm-linux-gnueabihf/12/libgcc.a libgcc-12-dev-armhf-cross
need qemu-aarch64 qemu-user
need /usr/lib/aarch64-linux-gnu/liburcu-memb.a liburcu-dev:arm64
need /usr/lib/arm-linux-gnueabihf/liburcu-memb.a liburcu-dev:armhf

strict="-std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Wpedantic -Werror -O2 -static"
status=0 n=0
run() { # run TRIPLE QEMU NAME SRC FLAGS...
    triple=$1 qemu=$2 name=$3 src=$4
    shift 4
    n=$((n + 1))
    bin=$out/$name.$triple
    # shellcheck disable=SC2086
    if ! clang --target=$triple -fuse-ld=lld $strict "$@" -I/usr/include/$triple -o "$bin" "$src" \
            -L/usr/lib/$triple -lurcu-memb -lurcu-common -pthread > "$bin.log" 2>&1; then
        echo "cross: $name ($triple) does not build"; tail -5 "$bin.log"; status=1; return
    fi
    # (LF_TEST_NO_FORK: qemu-user aborts a child forked from a threaded guest)
    if ! LF_TEST_SCALE=4 LF_TEST_STALL_S=120 LF_TEST_NO_FORK=1 timeout 600 "$qemu" "$bin" >> "$bin.log" 2>&1; then
        echo "cross: $name ($triple) failed"; tail -5 "$bin.log"; status=1
    fi
}
for target in aarch64-linux-gnu:qemu-aarch64 arm-linux-gnueabihf:qemu-arm; do
    triple=${target%%:*} qemu=${target#*:}
    if [ -n "$slice" ]; then
        run "$triple" "$qemu" t_pool_order.LIFO "$root/test/t_pool_order.c" -DLF_PROMOTE=LF_PROMOTE_LIFO
        run "$triple" "$qemu" t_bound_replies.LIFO "$root/test/t_bound_replies.c" -DLF_PROMOTE=LF_PROMOTE_LIFO
        run "$triple" "$qemu" t_reactor_stress.LIFO+EPOLL "$root/test/t_reactor_stress.c" -DLF_PROMOTE=LF_PROMOTE_LIFO
        continue
    fi
    for v in LIFO CONDVAR; do
        for t in "$root"/test/t_pool_*.c "$root"/test/t_bound_*.c; do
            run "$triple" "$qemu" "$(basename "$t" .c).$v" "$t" -DLF_PROMOTE=LF_PROMOTE_$v
        done
    done
    for b in EPOLL POLL; do
        for t in "$root"/test/t_reactor_*.c; do
            case $(basename "$t") in
            t_reactor_fault.c | t_reactor_race.c | t_reactor_alloc.c) continue ;; # link-time wraps of x86 runs
            esac
            run "$triple" "$qemu" "$(basename "$t" .c).LIFO+$b" "$t" -DLF_PROMOTE=LF_PROMOTE_LIFO \
                -DLF_REACTOR_BACKEND=LF_REACTOR_$b
        done
    done
done
# the headers under TSan's instrumentation, for the target that has it
if [ -z "$slice" ]; then
    for h in lf.h lf_reactor.h lf_bound.h; do
        n=$((n + 1))
        # (through a file that includes it: clang calls a header's unused static
        # functions unused when the header itself is the file compiled)
        printf '#include "%s"\nint main(void) { return 0; }\n' "$root/$h" > "$out/tsan-$h.c"
        if ! clang --target=aarch64-linux-gnu -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Wpedantic -Werror \
                -fsanitize=thread -I/usr/include/aarch64-linux-gnu -fsyntax-only "$out/tsan-$h.c" \
                > "$out/tsan-$h.log" 2>&1; then
            echo "cross: $h does not compile with -fsanitize=thread for aarch64"; cat "$out/tsan-$h.log"; status=1
        fi
    done
fi
echo "cross: $n builds and runs (aarch64, armhf under qemu-user), $([ $status = 0 ] && echo all passed || echo FAILURES)"
exit $status
