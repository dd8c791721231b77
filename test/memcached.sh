#!/bin/sh
# test/memcached.sh CC BUILD_DIR - bench/memc.h (a memcached client on lf_bound.h)
# against a real memcached that this script installs if missing (Debian, as root)
# and starts on loopback: test/t_memcached.c's two parts, built plain (default
# policy, and FIFO) and under ASan+UBSan:
#   1. 8 threads x 10^4 mixed get/set/delete over ONE connection, every value checked;
#   2. memcached killed (SIGKILL) mid-run: every waiting thread wakes with ECONNRESET
#      or EPIPE, none hangs (the test's watchdog, and timeout here);
#   3. malformed replies from a fake server in the test: EPROTO for the call, and for
#      the connection when the stream itself is broken.
# About 10 s.
set -eu
[ $# -eq 2 ] || { echo "usage: test/memcached.sh CC BUILD_DIR" >&2; exit 2; }
cc=$1
build=$2
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$build"
build=$(cd "$build" && pwd)
. "$root/bench/memc_server.sh"
memc_need memcached memcached "$build/apt.log"

base="-std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Wpedantic -Werror"
strict="$base -I$root" # memc.h includes "lf_bound.h": beside it, or through -I
# memc.h taken away as its doc block says: copied with lf_bound.h and lf.h alone, next
# to a program of the user's (bench/memc_bench.c), it builds with no -I at all
rm -rf "$build/copy"
mkdir -p "$build/copy"
cp "$root/bench/memc.h" "$root/lf_bound.h" "$root/lf.h" "$root/bench/memc_bench.c" "$build/copy/"
$cc $base -O2 -o "$build/copy/memc_bench" "$build/copy/memc_bench.c" -pthread
san="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all"
$cc $strict -O2 -g -o "$build/t_memcached" "$root/test/t_memcached.c" -pthread
$cc $strict -O2 -g -DLF_PROMOTE=LF_PROMOTE_FIFO -o "$build/t_memcached.fifo" \
    "$root/test/t_memcached.c" -pthread
$cc $strict $san -o "$build/t_memcached.asan" "$root/test/t_memcached.c" -pthread

trap memc_stop EXIT
for bin in t_memcached t_memcached.fifo t_memcached.asan; do
    envs="LF_TEST_STALL_S=10"
    case $bin in *.asan) envs="LF_TEST_STALL_S=30 ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1" ;; esac
    echo "$bin:"
    # shellcheck disable=SC2086
    env $envs timeout 60 "$build/$bin" -f # malformed replies from a fake server
    memc_start "$build"
    # shellcheck disable=SC2086 # envs is a list of assignments
    env $envs timeout 120 "$build/$bin" -p "$memc_port"
    memc_stop
    memc_start "$build"
    # shellcheck disable=SC2086
    env $envs timeout 60 "$build/$bin" -p "$memc_port" -k "$memc_pid"
    memc_stop # reaps the killed one
done
echo "memcached: all passed"
