#!/bin/sh
# bench/memc.sh - lf_bound against a real memcached: T threads sharing ONE connection
# (bench/memc.h; with the default promotion policy, and as bound.fifo with FIFO),
# beside a connection per thread (libmemcached's memcached_pool) and one connection
# under a mutex, on the same memcached in the same run.
#
#   bench/memc.sh [BUILD_DIR]           (default: build/bench under the repository)
#   env: QUICK (0; 1: one round of 1 s per row), ROUNDS (3), SECS (2 s measured per
#        run, after WARM 0.5 s), THREADS ("2 8 32" client threads), CC (cc)
#
# Installs memcached and libmemcached-dev when missing (Debian, as root); without
# libmemcached the pool rows are listed as unavailable. One memcached (one worker
# thread, 64 MiB, loopback, a free port) serves every run; bench/memc_bench.c is the
# client (its opening comment says what each variant does). A round runs every row
# once, the row order rotating from round to round; each figure is the median over
# the rounds, "spread" is (max - min) / median of requests/s.
#
# Writes bench/results/memc.csv (variant, threads, runs, rps, rps_spread, p50_us,
# p99_us, conns, rps_vs_pool, errors), memc.raw (every run's line), and memc.png
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
# shellcheck source=bench/daemon.sh # (daemon_need, and what memc_server.sh uses)
. "$here/daemon.sh"
# shellcheck source=bench/memc_server.sh # (sets memc_port, memc_pid)
. "$here/memc_server.sh"
# shellcheck source=bench/kv_bench.sh # (kv_rows, kv_rounds, kv_summary, kv_plot)
. "$here/kv_bench.sh"

daemon_need memcached memcached "$build/apt.log" || exit 1
daemon_need /usr/include/libmemcached/memcached.h libmemcached-dev "$build/apt.log" || true

# -- build ---------------------------------------------------------------------------
cflags="-std=c11 -D_POSIX_C_SOURCE=200809L -O2 -Wall -Wextra -I$root -I$here"
variants="bound bound.fifo pool mutex"
if ! $cc $cflags -DMEMC_WITH_LIBMEMCACHED -o "$build/memc_bench" "$here/memc_bench.c" \
    -lmemcachedutil -lmemcached -pthread 2>"$build/memc_bench.log"; then
    echo "bench: memc: libmemcached unavailable (see $build/memc_bench.log): no pool rows" >&2
    $cc $cflags -o "$build/memc_bench" "$here/memc_bench.c" -pthread
    variants="bound bound.fifo mutex"
fi
# the bound with FIFO promotion: memcached answers a connection's requests in order,
# the case where the pattern says the oldest waiter should lead
$cc $cflags -DLF_PROMOTE=LF_PROMOTE_FIFO -o "$build/memc_bench.fifo" "$here/memc_bench.c" -pthread

# -- the runs ------------------------------------------------------------------------
kv_rows memc "$variants"
trap memc_stop EXIT INT TERM
memc_start "$build"
kv_rounds memc memcached "$memc_port" 10 # (10 columns: bound.fifo fits)
memc_stop

# -- summarize -----------------------------------------------------------------------
kv_summary memc pool 10 8 # (the variants in 10 columns, "vs pool" in 8)
kv_plot memc
echo "bench: memc.sh took $(($(date +%s) - started)) s; machine: $(nproc) CPUs, $(uname -r)" >&2
exit "$kv_failed"
