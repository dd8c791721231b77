#!/bin/sh
# bench/redis.sh - lf_bound against a real Redis: T threads sharing ONE connection in
# lf_bound's in-order mode (bench/redis.h; with the default promotion policy, and as
# bound.fifo with FIFO), beside hiredis with a connection per thread and one hiredis
# connection under a mutex, on the same redis-server in the same run.
#
#   bench/redis.sh [BUILD_DIR]          (default: build/bench under the repository)
#   env: QUICK (0; 1: one round of 1 s per row), ROUNDS (3), SECS (2 s measured per
#        run, after WARM 0.5 s), THREADS ("2 8 32" client threads), CC (cc)
#
# Installs redis-server and libhiredis-dev when missing (Debian, as root); without
# hiredis the hiredis rows are listed as unavailable. One redis-server (loopback, a
# free port, no persistence: --save '' --appendonly no, its io-threads default) serves
# every run; bench/redis_bench.c is the client (its opening comment says what each
# variant does). A round runs every row once, the row order rotating from round to
# round; each figure is the median over the rounds, "spread" is (max - min) / median
# of requests/s.
#
# Writes bench/results/redis.csv (variant, threads, runs, rps, rps_spread, p50_us,
# p99_us, conns, rps_vs_hiredis, errors), redis.raw (every run's line), and redis.png
# when gnuplot is there. Exits 1 if a run failed or saw a wrong reply.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${1:-$root/build/bench}
cc=${CC:-cc}
if [ "${QUICK:-0}" = 1 ]; then
    rounds=${ROUNDS:-1}; secs=${SECS:-1}; warm=${WARM:-0.3}
else
    rounds=${ROUNDS:-3}; secs=${SECS:-2}; warm=${WARM:-0.5}
fi
threads=${THREADS:-2 8 32}
results=$here/results
mkdir -p "$build" "$results"
build=$(cd "$build" && pwd)
started=$(date +%s)
# shellcheck source=bench/daemon.sh # (daemon_need, and what redis_server.sh uses)
. "$here/daemon.sh"
# shellcheck source=bench/redis_server.sh # (sets redis_port, redis_pid)
. "$here/redis_server.sh"
# shellcheck source=bench/kv_bench.sh # (kv_rows, kv_rounds, kv_summary, kv_plot)
. "$here/kv_bench.sh"

daemon_need redis-server redis-server "$build/apt.log" || exit 1
daemon_need /usr/include/hiredis/hiredis.h libhiredis-dev "$build/apt.log" || true

# -- build ---------------------------------------------------------------------------
cflags="-std=c11 -D_POSIX_C_SOURCE=200809L -O2 -Wall -Wextra -I$root -I$here"
variants="bound bound.fifo hiredis hiredis.mutex"
# shellcheck disable=SC2086 # cflags is a list of flags
if ! $cc $cflags -DREDIS_WITH_HIREDIS -o "$build/redis_bench" "$here/redis_bench.c" \
    -lhiredis -pthread 2>"$build/redis_bench.log"; then
    echo "bench: redis: hiredis unavailable (see $build/redis_bench.log): no hiredis rows" >&2
    # shellcheck disable=SC2086
    $cc $cflags -o "$build/redis_bench" "$here/redis_bench.c" -pthread
    variants="bound bound.fifo"
fi
# the bound with FIFO promotion: Redis answers a connection's commands in order, the
# case where the pattern says the oldest waiter should lead
# shellcheck disable=SC2086
$cc $cflags -DLF_PROMOTE=LF_PROMOTE_FIFO -o "$build/redis_bench.fifo" "$here/redis_bench.c" -pthread

# -- the runs ------------------------------------------------------------------------
kv_rows redis "$variants"
trap redis_stop EXIT INT TERM
redis_start "$build"
kv_rounds redis redis-server "$redis_port" 13 # (13 columns: hiredis.mutex fits)
redis_stop

# -- summarize -----------------------------------------------------------------------
kv_summary redis hiredis 13 10 # (the variants in 13 columns, "vs hiredis" in 10)
kv_plot redis
echo "bench: redis.sh took $(($(date +%s) - started)) s; machine: $(nproc) CPUs, $(uname -r)" >&2
exit "$kv_failed"
