#!/bin/sh
# test/redis.sh CC BUILD_DIR [full] - bench/redis.h (a Redis client on lf_bound.h's
# in-order mode) against a real redis-server that this script installs if missing
# (Debian, as root) and starts on loopback: test/t_redis.c's parts, built plain and
# under TSan (the shared connection, its references, reconnects and cancellations are
# concurrency code); with `full` (make test-full) also FIFO and under ASan+UBSan:
#   1. 8 threads x 10^4 (TSan: a quarter) mixed GET/SET/DEL/INCR over ONE connection, every value
#      checked, server errors and calls past their deadline mixed in;
#   2. redis-server killed (SIGKILL) mid-run: every waiting thread wakes with
#      ECONNRESET or EPIPE, none hangs (the test's watchdog, and timeout here);
#   3. redis-server killed and restarted on the same port mid-run (the test asks by
#      making a file; this script kills and restarts): 8 threads reconnect and carry
#      on, every value checked; no descriptor leaked;
#   4. the framing's edges and malformed replies from a fake server in the test;
#   5. redis_open_until's errors and a connection's life (reconnect, automatic mode,
#      shutdown, close, pthread_cancel) against the fake server.
# Also: redis.h copied with lf_conn.h, lf_bound.h and lf.h alone builds a program (no
# -I), and compiles as C++17.
# About 30 s.
set -eu
[ $# -eq 2 ] || [ $# -eq 3 ] || { echo "usage: test/redis.sh CC BUILD_DIR [full]" >&2; exit 2; }
cc=$1
build=$2
# make test: plain (redis.h's shared-connection code is memc.h's, which make test runs
# under TSan, and the bound's in-order mode runs under TSan in t_bound_inorder); the
# full run: TSan, FIFO and ASan+UBSan too
bins="t_redis"
if [ "${3-}" = full ]; then bins="$bins t_redis.tsan t_redis.asan t_redis.fifo"; fi
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$build"
build=$(cd "$build" && pwd)
# shellcheck source=bench/daemon.sh # (daemon_need, and what redis_server.sh uses)
. "$root/bench/daemon.sh"
# shellcheck source=bench/redis_server.sh # (redis_start, redis_restart, redis_stop)
. "$root/bench/redis_server.sh"
# shellcheck source=test/lft_server.sh # (lft_envs, lft_restarted)
. "$root/test/lft_server.sh"
daemon_need redis-server redis-server "$build/apt.log"

base="-std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Wpedantic -Werror"
strict="$base -I$root" # redis.h includes "lf_conn.h" (beside it), which includes
# "lf_bound.h": beside it, or through -I
# redis.h taken away as its doc block says: copied with lf_conn.h, lf_bound.h and lf.h
# alone, next to a program of the user's (bench/redis_bench.c, without hiredis, with
# its own kv_load.h), it builds with no -I at all
rm -rf "$build/copy"
mkdir -p "$build/copy"
cp "$root/bench/redis.h" "$root/bench/lf_conn.h" "$root/lf_bound.h" "$root/lf.h" \
    "$root/bench/redis_bench.c" "$root/bench/kv_load.h" "$build/copy/"
# shellcheck disable=SC2086 # base is a list of flags
$cc $base -O2 -o "$build/copy/redis_bench" "$build/copy/redis_bench.c" -pthread
# and it compiles as C++17 (the C++ compiler of the same family, when there is one)
case $cc in *clang*) cxx=clang++ ;; *) cxx=g++ ;; esac
if command -v "$cxx" >/dev/null 2>&1; then
    printf '#include "redis.h"\n' >"$build/copy/cxx.cc"
    $cxx -std=c++17 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Wpedantic -Werror -fsyntax-only \
        "$build/copy/cxx.cc"
fi
san="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all"
# shellcheck disable=SC2086
$cc $strict -O2 -g -o "$build/t_redis" "$root/test/t_redis.c" -pthread
# shellcheck disable=SC2086
[ "${3-}" != full ] || $cc $strict -O2 -g -DLF_PROMOTE=LF_PROMOTE_FIFO \
    -o "$build/t_redis.fifo" "$root/test/t_redis.c" -pthread
# shellcheck disable=SC2086
[ "${3-}" != full ] || $cc $strict $san -o "$build/t_redis.asan" "$root/test/t_redis.c" -pthread
# shellcheck disable=SC2086
[ "${3-}" != full ] || $cc $strict -O1 -g -fsanitize=thread -o "$build/t_redis.tsan" \
    "$root/test/t_redis.c" -pthread

trap redis_stop EXIT
for bin in $bins; do
    lft_envs "$bin"
    echo "$bin:"
    # shellcheck disable=SC2086 # envs is a list of assignments
    env $envs timeout 60 "$build/$bin" -f # the framing, against a fake server
    # shellcheck disable=SC2086
    env $envs timeout 60 "$build/$bin" -c # connections, against a fake server
    redis_start "$build"
    # shellcheck disable=SC2086
    env $envs timeout 120 "$build/$bin" -p "$redis_port"
    redis_stop
    redis_start "$build"
    # shellcheck disable=SC2086
    env $envs timeout 60 "$build/$bin" -p "$redis_port" -k "$redis_pid"
    redis_stop # reaps the killed one
    redis_start "$build"
    # shellcheck disable=SC2086
    lft_restarted redis_restart env $envs timeout 120 "$build/$bin" -p "$redis_port" -r \
        "$build/kill.now"
    redis_stop
done
echo "redis: all passed"
