#!/bin/sh
# test/memcached.sh CC BUILD_DIR [full] - bench/memc.h (a memcached client on lf_bound.h)
# against a real memcached that this script installs if missing (Debian, as root)
# and starts on loopback: test/t_memcached.c's parts, built plain and under TSan (the
# connection references, reconnects and cancellations are concurrency code); with
# `full` (make test-full) also FIFO and under ASan+UBSan (make test's gateway check
# runs memc.h's reconnect under ASan):
#   1. 8 threads x 10^4 (TSan: a quarter) mixed get/set/delete over ONE connection,
#      every value checked;
#   2. memcached killed (SIGKILL) mid-run: every waiting thread wakes with ECONNRESET
#      or EPIPE, none hangs (the test's watchdog, and timeout here);
#   3. malformed replies from a fake server in the test: EPROTO for the call, and for
#      the connection when the stream itself is broken;
#   4. memc_open_until's errors and a connection's life (reconnect, automatic mode,
#      shutdown, close, pthread_cancel) against a fake server in the test;
#   5. reconnect under load: memcached killed and restarted on the same port mid-run
#      (the test asks by making a file; this script kills and restarts), 8 threads
#      reconnect and carry on with every value checked; no descriptor leaked;
#   6. the same from the handlers of an lf_reactor, through memc_attach; a nesting
#      limit set with memc_set_nest_max holds over a reconnect.
# Also: memc.h copied with lf_conn.h, lf_bound.h and lf.h alone builds a program (no
# -I) and compiles as C++17, and bench/memc_refs.c builds. About 50 s.
set -eu
[ $# -eq 2 ] || [ $# -eq 3 ] || { echo "usage: test/memcached.sh CC BUILD_DIR [full]" >&2; exit 2; }
cc=$1
build=$2
bins="t_memcached t_memcached.tsan"
if [ "${3-}" = full ]; then bins="$bins t_memcached.asan t_memcached.fifo"; fi
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$build"
build=$(cd "$build" && pwd)
# shellcheck source=bench/daemon.sh # (daemon_need, and what memc_server.sh uses)
. "$root/bench/daemon.sh"
# shellcheck source=bench/memc_server.sh # (memc_start, memc_restart, memc_stop)
. "$root/bench/memc_server.sh"
# shellcheck source=test/lft_server.sh # (lft_envs, lft_restarted)
. "$root/test/lft_server.sh"
daemon_need memcached memcached "$build/apt.log"

base="-std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Wpedantic -Werror"
strict="$base -I$root" # memc.h includes "lf_conn.h" (beside it), which includes
# "lf_bound.h": beside it, or through -I
# memc.h taken away as its doc block says: copied with lf_conn.h, lf_bound.h and lf.h
# alone, next to a program of the user's (bench/memc_bench.c, with its own kv_load.h),
# it builds with no -I
rm -rf "$build/copy"
mkdir -p "$build/copy"
cp "$root/bench/memc.h" "$root/bench/lf_conn.h" "$root/lf_bound.h" "$root/lf.h" \
    "$root/bench/memc_bench.c" "$root/bench/kv_load.h" "$build/copy/"
# shellcheck disable=SC2086 # base is a list of flags
$cc $base -O2 -o "$build/copy/memc_bench" "$build/copy/memc_bench.c" -pthread
# and it compiles as C++17 (the C++ compiler of the same family, when there is one)
case $cc in *clang*) cxx=clang++ ;; *) cxx=g++ ;; esac
if command -v "$cxx" >/dev/null 2>&1; then
    printf '#include "memc.h"\n' >"$build/copy/cxx.cc"
    $cxx -std=c++17 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Wpedantic -Werror -fsyntax-only \
        "$build/copy/cxx.cc"
fi
# shellcheck disable=SC2086
$cc $base -O2 -o "$build/memc_refs" "$root/bench/memc_refs.c" -pthread
san="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all"
# the test includes lf_reactor.h (memc_attach): liburcu
urcu=$(pkg-config --cflags --libs liburcu-memb 2>/dev/null || echo -lurcu-memb -lurcu-common)
# shellcheck disable=SC2086 # urcu is a list of flags
$cc $strict -O2 -g -o "$build/t_memcached" "$root/test/t_memcached.c" $urcu -pthread
# shellcheck disable=SC2086
[ "${3-}" != full ] || $cc $strict -O2 -g -DLF_PROMOTE=LF_PROMOTE_FIFO \
    -o "$build/t_memcached.fifo" "$root/test/t_memcached.c" $urcu -pthread
# shellcheck disable=SC2086
[ "${3-}" != full ] || $cc $strict $san -o "$build/t_memcached.asan" "$root/test/t_memcached.c" $urcu -pthread
# shellcheck disable=SC2086
$cc $strict -O1 -g -fsanitize=thread -o "$build/t_memcached.tsan" "$root/test/t_memcached.c" \
    $urcu -pthread

trap memc_stop EXIT
for bin in $bins; do
    lft_envs "$bin"
    echo "$bin:"
    # shellcheck disable=SC2086
    env $envs timeout 60 "$build/$bin" -f # malformed replies from a fake server
    # shellcheck disable=SC2086
    env $envs timeout 60 "$build/$bin" -c # connections, against a fake server
    memc_start "$build"
    # shellcheck disable=SC2086 # envs is a list of assignments
    env $envs timeout 120 "$build/$bin" -p "$memc_port"
    memc_stop
    memc_start "$build"
    # shellcheck disable=SC2086
    env $envs timeout 60 "$build/$bin" -p "$memc_port" -k "$memc_pid"
    memc_stop # reaps the killed one
    for mode in -r -H; do # reconnect under load: threads, then reactor handlers
        memc_start "$build"
        # shellcheck disable=SC2086
        lft_restarted memc_restart env $envs timeout 120 "$build/$bin" -p "$memc_port" $mode \
            "$build/kill.now"
        memc_stop
    done
done
echo "memcached: all passed"
