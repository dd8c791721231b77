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

# -- the rows ------------------------------------------------------------------------
rows=$build/redis.rows
: >"$rows"
for t in $threads; do
    for v in $variants; do
        echo "$v $t" >>"$rows"
    done
done
nrows=$(wc -l <"$rows")

trap redis_stop EXIT INT TERM
redis_start "$build"
raw=$results/redis.raw
: >"$raw"
failed=0
round=1
while [ "$round" -le "$rounds" ]; do
    echo "bench: redis round $round of $rounds ($nrows rows, ${secs}s each), redis-server on port $redis_port" >&2
    skip=$(((round - 1) % nrows))
    { tail -n +$((skip + 1)) "$rows"; head -n "$skip" "$rows"; } >"$rows.order"
    while read -r v t; do
        bin=$build/redis_bench mode=$v
        [ "$v" = bound.fifo ] && bin=$build/redis_bench.fifo mode=bound
        if line=$("$bin" -m "$mode" -p "$redis_port" -t "$t" -d "$secs" -W "$warm"); then :; else
            echo "bench: redis: $v with $t threads failed ($line)" >&2
            failed=1
        fi
        [ -n "$line" ] || continue
        line="name=$v $line"
        echo "round=$round $line" >>"$raw"
        echo "$line" | awk '{
            for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
            printf "  %-13s %3d threads %9.0f req/s  p99 %8.1f us  %3d conns\n",
                v["name"], v["threads"], v["rps"], v["p99_us"], v["conns"] }' >&2
    done <"$rows.order"
    round=$((round + 1))
done
redis_stop

# -- summarize -----------------------------------------------------------------------
awk -v out="$results/redis.csv" '
function median(list,   n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) {
        t = a[j]; a[j] = a[j-1]; a[j-1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{
    delete f
    for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
    k = f["name"] SUBSEP f["threads"]
    if (!(k in runs)) { order[++n] = k }
    runs[k]++
    rps[k] = rps[k] " " f["rps"]; p50[k] = p50[k] " " f["p50_us"]
    p99[k] = p99[k] " " f["p99_us"]; conns[k] = conns[k] " " f["conns"]
    err[k] += f["errors"]
    if (runs[k] == 1 || f["rps"] + 0 < lo[k]) lo[k] = f["rps"] + 0
    if (runs[k] == 1 || f["rps"] + 0 > hi[k]) hi[k] = f["rps"] + 0
}
END {
    print "variant,threads,runs,rps,rps_spread,p50_us,p99_us,conns,rps_vs_hiredis,errors" > out
    printf "%-13s %7s %10s %7s %9s %9s %6s %10s\n", "", "threads", "req/s", "spread", "p50 us",
        "p99 us", "conns", "vs hiredis" > "/dev/stderr"
    for (i = 1; i <= n; i++) {
        k = order[i]; split(k, vt, SUBSEP)
        m = median(rps[k]); hk = "hiredis" SUBSEP vt[2]
        ratio = (hk in rps) ? sprintf("%.2f", m / median(rps[hk])) : ""
        printf "%s,%s,%d,%.0f,%.3f,%.1f,%.1f,%d,%s,%d\n", vt[1], vt[2], runs[k], m,
            (m > 0 ? (hi[k] - lo[k]) / m : 0), median(p50[k]), median(p99[k]), median(conns[k]),
            ratio, err[k] >> out
        printf "%-13s %7s %10.0f %6.0f%% %9.1f %9.1f %6d %10s\n", vt[1], vt[2], m,
            (m > 0 ? 100 * (hi[k] - lo[k]) / m : 0), median(p50[k]), median(p99[k]),
            median(conns[k]), ratio > "/dev/stderr"
    }
}' "$raw"
if command -v gnuplot >/dev/null; then
    gnuplot -e "dir='$results'" "$here/redis.gp" 2>"$build/redis.gnuplot.log" ||
        echo "bench: redis: gnuplot failed (see $build/redis.gnuplot.log)" >&2
fi
echo "bench: redis.sh took $(($(date +%s) - started)) s; machine: $(nproc) CPUs, $(uname -r)" >&2
exit "$failed"
