#!/bin/sh
# bench/gw.sh - the gateway table: many TCP clients in front, a real memcached behind;
# lf's hybrid gateway beside libuv and boost.asio gateways, on one protocol
# (bench/gw_proto.h) and one load generator (bench/gw_load.c).
#
#   bench/gw.sh [BUILD_DIR]             (default: build/gw under the repository)
#   env: QUICK (0; 1: one round, 1 s per run), ROUNDS (3), SECS (3 s measured per
#        run, after WARM 0.5 s), CONNS ("64 1000 4000 10000" client connections),
#        THREADS (2: lf's threads, asio's run() threads, uv.N's loops), FAULT_CONNS
#        (1000: the fault rows' clients), HOG_SECS (5: the never-reading row's run),
#        CC (cc), CXX (c++)
#
# The gateways (each file's opening comment says how it is written and why):
#   lf     bench/gw_lf.c: lf_reactor.h + bench/memc.h in hybrid mode, THREADS threads,
#          each request a blocking memc_get/memc_set from the client's handler
#   lf.async  the same gateway with asynchronous calls (gw_lf -f 4: memc_get_start /
#          memc_set_start, the result taken on the client's LF_EV_NOTIFY)
#   uv     bench/gw_uv.c: libuv, one loop
#   uv.N   the same with THREADS loops in THREADS threads (SO_REUSEPORT listeners, a
#          memcached connection per loop)
#   asio   bench/gw_asio.cc: boost.asio, one io_context run from THREADS threads, one
#          shared memcached connection
# A gateway whose library cannot be installed or which does not build is listed as
# unavailable. Installs (Debian, as root) what is missing: memcached, libuv1-dev,
# libboost-dev (liburcu, which lf_reactor.h needs, is the repository's own
# prerequisite, see test/setup.sh). One memcached (bench/memc_server.sh: loopback, one worker
# thread, 64 MiB) serves every run; deadline 500 ms per call, everything else at the
# gateways' defaults.
#
# First every gateway must answer gw_load -X 1's exchanges (the protocol, errors
# included) byte for byte alike. A run: start the gateway, run gw_load against it (CONNS closed-loop connections,
# 90% GET / 10% SET over 1000 keys of 100 bytes, pre-populated, every reply checked),
# SIGTERM the gateway (it must exit 0 and print its stats line). Figures: req/s, p99,
# the gateway's CPU per request (utime + stime from /proc/PID/stat over the window,
# divided by the replies), its peak RSS (VmHWM), ERR replies, and for lf the deepest
# nesting (max_depth: lf_bound_depth() in a handler, at most LF_BOUND_NEST_MAX; deep:
# calls made at the limit, lf_bound_stats). A round runs every row at every CONNS, the
# row order rotating from round to round (as bench/servers.sh does); each figure is
# the median over the rounds.
#
# The fault rows, at FAULT_CONNS connections, one second into the window:
#   stall   memcached SIGSTOPped for 1.5 s: err_max_ms is the slowest ERR reply (the
#           deadline must hold: target <= 520 ms with 500 ms deadlines), recover_ms
#           the first good reply after SIGCONT. Also lf.plain: gw_lf without its
#           fail-fast (-f 1), to show what the fail-fast is for.
#   kill    memcached SIGKILLed, restarted on its port 0.5 s later: ERR replies meanwhile,
#           recover_ms from its restart to the first good reply, gap_ms the longest
#           time without a good reply (the outage the clients saw)
#   noread  4 more clients pipeline GETs and never read; the gateway runs with -w 1000
#           (drop a client whose output does not move for 1 s) for HOG_SECS: hog_drop_ms
#           when the last of them was dropped, req/s of the others meanwhile, peak RSS
#
# Writes bench/results/gw.csv (test, gateway, conns, runs, rps, p50_us, p99_us,
# cpu_us_per_req, rss_kb, errors, wrong, max_depth, deep, err_max_ms, recover_ms,
# gap_ms, hog_dropped, hog_drop_ms) and gw.raw (every run's line). Exits 1 if a run saw
# a wrong reply, a gateway did not start or did not exit 0 on SIGTERM.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${1:-$root/build/gw}
cc=${CC:-cc}
cxx=${CXX:-c++}
if [ "${QUICK:-0}" = 1 ]; then
    rounds=${ROUNDS:-1}; secs=${SECS:-1}; warm=${WARM:-0.3}
else
    rounds=${ROUNDS:-3}; secs=${SECS:-3}; warm=${WARM:-0.5}
fi
conns_list=${CONNS:-64 1000 4000 10000}
threads=${THREADS:-2}
fault_conns=${FAULT_CONNS:-1000}
hog_secs=${HOG_SECS:-5}
results=$here/results
mkdir -p "$build" "$results"
build=$(cd "$build" && pwd)
gw_bin=$build
started=$(date +%s)
# shellcheck source=bench/daemon.sh # (daemon_need, and what memc_server.sh uses)
. "$here/daemon.sh"
# shellcheck source=bench/memc_server.sh # (memc_start, memc_stop)
. "$here/memc_server.sh"
# shellcheck source=bench/gw_run.sh # (gw_start, gw_stop, gw_load_*, gw_stall, gw_kill)
. "$here/gw_run.sh"

# -- what it needs (Debian, as root) ---------------------------------------------------
daemon_need memcached memcached "$build/apt.log" || exit 1
pkg-config --exists liburcu-memb 2>/dev/null ||
    { echo "bench: gw: liburcu not found (apt-get install liburcu-dev pkg-config)" >&2; exit 1; }
daemon_need /usr/include/uv.h libuv1-dev "$build/apt.log" || true
daemon_need /usr/include/boost/asio.hpp libboost-dev "$build/apt.log" || true

# -- build -------------------------------------------------------------------------------
cflags="-std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -O2 -Wall -Wextra -I$root -I$here"
unavailable=
$cc $cflags -o "$build/gw_load" "$here/gw_load.c" -pthread
# shellcheck disable=SC2046 # pkg-config prints a list of options
$cc $cflags -o "$build/gw_lf" "$here/gw_lf.c" $(pkg-config --cflags --libs liburcu-memb) -pthread
$cc $cflags -o "$build/gw_uv" "$here/gw_uv.c" -luv -pthread 2>"$build/uv.log" ||
    unavailable="$unavailable uv uv.$threads"
$cxx -std=c++17 -O2 -Wall -Wextra -I"$here" -o "$build/gw_asio" "$here/gw_asio.cc" -pthread \
    2>"$build/asio.log" || unavailable="$unavailable asio"

# -- the rows: name, then the gateway's command line ---------------------------------------
rows=$build/gw.rows
cat >"$rows" <<EOF
lf $build/gw_lf -t $threads
lf.async $build/gw_lf -t $threads -f 4
uv $build/gw_uv -t 1
uv.$threads $build/gw_uv -t $threads
asio $build/gw_asio -t $threads
EOF
for u in $unavailable; do
    echo "bench: gw: $u is unavailable (see $build/*.log)" >&2
    grep -v "^$u " "$rows" >"$rows.tmp" || true
    mv "$rows.tmp" "$rows"
done
nrows=$(wc -l <"$rows")

raw=$results/gw.raw
: >"$raw"
failed=0
trap gw_cleanup EXIT INT TERM
memc_start "$build"

# run TEST NAME CONNS EXTRA_GW_ARGS LOAD_ARGS CMD...: one run, one line into gw.raw
run() {
    r_test=$1 r_name=$2 r_conns=$3 r_gwx=$4 r_lx=$5
    shift 5
    # shellcheck disable=SC2086 # r_gwx: a list of options
    if ! gw_start "$build/gw.out" "$@" -m "127.0.0.1:$memc_port" $r_gwx; then
        failed=1
        return
    fi
    r_secs=$secs
    [ "$r_test" = load ] || r_secs=5
    [ "$r_test" = noread ] && r_secs=$hog_secs
    # shellcheck disable=SC2086 # r_lx: a list of options
    gw_load_start "$build/load.out" -p "$gw_port" -c "$r_conns" -s "$r_secs" -W "$warm" \
        -P "$gw_pid" $r_lx
    case $r_test in
    stall | kill)
        if gw_measuring; then
            sleep 1
            if [ "$r_test" = stall ]; then gw_stall; else gw_kill || failed=1; fi
        fi
        ;;
    esac
    gw_load_wait
    gw_stop
    if [ "$load_status" != 0 ]; then
        echo "bench: gw: $r_test $r_name $r_conns: gw_load failed ($load_status; see $build/load.out.err)" >&2
        head -n 5 "$build/load.out.err" >&2
        failed=1
    fi
    if [ "$gw_status" != 0 ] || [ -z "$gw_stats" ]; then
        echo "bench: gw: $r_test $r_name $r_conns: the gateway exited $gw_status on SIGTERM (see $build/gw.out.err)" >&2
        failed=1
    fi
    [ -n "$load_line" ] || return 0
    md=$(gw_field max_depth "$gw_stats")
    dp=$(gw_field deep "$gw_stats")
    line="test=$r_test name=$r_name $load_line max_depth=${md:--1} deep=${dp:--1} gw_exit=$gw_status"
    echo "round=$round $line" >>"$raw"
    echo "$line" | awk '{
        for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
        printf "  %-6s %-8s %5d conns %8.0f req/s  p99 %9.1f us  cpu %6.2f us/req  rss %6.1f MB  err %6d",
            v["test"], v["name"], v["conns"], v["rps"], v["p99_us"], v["cpu_us_per_req"],
            v["rss_kb"] / 1024, v["err_timeout"] + v["err_backend"]
        if (v["test"] == "stall" || v["test"] == "kill")
            printf "  err_max %6.1f ms  recover %6.1f ms  gap %6.1f ms", v["err_max_ms"], v["recover_ms"], v["gap_ms"]
        if (v["test"] == "noread")
            printf "  hogs dropped %d, last at %d ms", v["hog_dropped"], v["hog_drop_ms"]
        if (v["max_depth"] >= 0) printf "  depth %d deep %d", v["max_depth"], v["deep"]
        printf "\n" }' >&2
}

# -- one protocol: every gateway answers gw_load -X's exchanges alike, or is not measured --
while read -r name cmd; do
    # shellcheck disable=SC2086 # cmd is a command line
    if gw_start "$build/gw.out" $cmd -m "127.0.0.1:$memc_port" </dev/null; then
        if "$build/gw_load" -p "$gw_port" -X 1 >"$build/proto.out" 2>&1; then
            echo "bench: gw: $name speaks the protocol" >&2
        else
            echo "bench: gw: $name does not speak the protocol:" >&2
            cat "$build/proto.out" >&2
            failed=1
        fi
        gw_stop
    else
        failed=1
    fi
done <"$rows"

# -- the rounds: every row at every CONNS, then the fault rows; the order rotates ---------
faults=$build/gw.faults
: >"$faults"
while read -r name cmd; do
    echo "stall $name $cmd" >>"$faults"
    [ "$name" = lf ] && echo "stall lf.plain $cmd -f 1" >>"$faults"
    echo "kill $name $cmd" >>"$faults"
    echo "noread $name $cmd" >>"$faults"
done <"$rows"
nfaults=$(wc -l <"$faults")
round=1
while [ "$round" -le "$rounds" ]; do
    for c in $conns_list; do
        echo "bench: gw round $round of $rounds: $c connections ($nrows rows, ${secs}s each), memcached on port $memc_port" >&2
        skip=$(((round - 1) % nrows))
        { tail -n +$((skip + 1)) "$rows"; head -n "$skip" "$rows"; } >"$rows.order"
        while read -r name cmd; do
            # shellcheck disable=SC2086 # cmd is a command line
            run load "$name" "$c" "" "" $cmd </dev/null
        done <"$rows.order"
    done
    echo "bench: gw round $round of $rounds: the fault rows ($fault_conns connections)" >&2
    skip=$(((round - 1) % nfaults))
    { tail -n +$((skip + 1)) "$faults"; head -n "$skip" "$faults"; } >"$faults.order"
    while read -r t name cmd; do
        gwx='' lx=''
        [ "$t" = noread ] && gwx="-w 1000" lx="-n 4"
        # shellcheck disable=SC2086
        run "$t" "$name" "$fault_conns" "$gwx" "$lx" $cmd </dev/null
    done <"$faults.order"
    round=$((round + 1))
done
memc_stop

# -- summarize -----------------------------------------------------------------------------
awk -v out="$results/gw.csv" '
function median(list,   n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) {
        t = a[j]; a[j] = a[j-1]; a[j-1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
BEGIN { nf = split("rps p50_us p99_us cpu_us_per_req rss_kb errors wrong max_depth deep err_max_ms recover_ms gap_ms hog_dropped hog_drop_ms", F, " ") }
{
    delete f
    for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
    f["errors"] = f["err_timeout"] + f["err_backend"]
    k = f["test"] SUBSEP f["name"] SUBSEP f["conns"]
    if (!(k in runs)) order[++n] = k
    runs[k]++
    for (j = 1; j <= nf; j++) v[k, F[j]] = v[k, F[j]] " " f[F[j]]
}
END {
    printf "test,gateway,conns,runs" > out
    for (j = 1; j <= nf; j++) printf ",%s", F[j] > out
    printf "\n" > out
    printf "%-6s %-8s %6s %9s %9s %8s %8s %6s %5s %7s %8s %8s %8s\n", "test", "gateway", "conns",
        "req/s", "p99 us", "cpu us", "RSS MB", "errors", "depth", "deep", "err_max", "recover",
        "hog ms" > "/dev/stderr"
    # the load rows first, then the fault rows, each in the order they first ran
    for (pass = 1; pass <= 2; pass++) for (i = 1; i <= n; i++) {
        k = order[i]; split(k, t, SUBSEP)
        if ((pass == 1) != (t[1] == "load")) continue
        printf "%s,%s,%s,%d", t[1], t[2], t[3], runs[k] >> out
        for (j = 1; j <= nf; j++) { m[F[j]] = median(v[k, F[j]]); printf ",%s", m[F[j]] >> out }
        printf "\n" >> out
        depth = deep = emax = rec = hog = ""
        if (m["max_depth"] + 0 >= 0) { depth = m["max_depth"]; deep = m["deep"] }
        if (t[1] == "stall" || t[1] == "kill") {
            emax = sprintf("%.0f", m["err_max_ms"]); rec = sprintf("%.0f", m["recover_ms"]) }
        if (t[1] == "noread") hog = sprintf("%.0f", m["hog_drop_ms"])
        printf "%-6s %-8s %6d %9.0f %9.0f %8.2f %8.1f %6d %5s %7s %8s %8s %8s\n", t[1], t[2], t[3],
            m["rps"], m["p99_us"], m["cpu_us_per_req"], m["rss_kb"] / 1024, m["errors"],
            depth, deep, emax, rec, hog > "/dev/stderr"
    }
}' "$raw"
# -- the targets: lf against the best of the other gateways of the same run --------------
awk -F, '
NR == 1 { next }
$1 == "load" { rps[$2, $3] = $5; p99[$2, $3] = $7; cpu[$2, $3] = $8; gws[$2] = 1; conns[$3] = 1 }
$1 == "stall" && ($2 == "lf" || $2 == "lf.async") { stall[$2] = $14 }
END {
    for (c in conns) for (l in gws) {
        if (l !~ /^lf/ || !(((l, c) in rps))) continue
        best = bp = bc = ""
        for (g in gws) if (g !~ /^lf/ && ((g, c) in rps) && rps[g, c] > 0) {
            if (best == "" || rps[g, c] > rps[best, c]) best = g
            if (bp == "" || p99[g, c] < bp) bp = p99[g, c]
            if (bc == "" || cpu[g, c] < bc) bc = cpu[g, c]
        }
        if (best == "") continue
        r = rps[l, c] / rps[best, c]; p = p99[l, c] / bp; u = cpu[l, c] / bc
        printf "bench: gw target at %d conns, %s: req/s %.2fx the best other (%s; >= 1.20 %s), p99 %.2fx the best other'"'"'s (<= 1.00 %s), CPU/req %.2fx the best other'"'"'s (<= 0.90 %s)\n", \
            c, l, r, best, (r >= 1.2 ? "met" : "NOT met"), p, (p <= 1.0 ? "met" : "NOT met"), u, (u <= 0.9 ? "met" : "NOT met") > "/dev/stderr"
    }
    for (l in stall)
        printf "bench: gw target, memcached stopped 1.5 s, 500 ms deadlines: %s slowest ERR %.0f ms (<= 520 %s)\n", \
            l, stall[l], (stall[l] <= 520 ? "met" : "NOT met") > "/dev/stderr"
}' "$results/gw.csv"
if command -v gnuplot >/dev/null; then
    gnuplot -e "dir='$results'" "$here/gw.gp" 2>"$build/gw.gnuplot.log" ||
        echo "bench: gw: gnuplot failed (see $build/gw.gnuplot.log)" >&2
fi
echo "bench: gw.sh took $(($(date +%s) - started)) s; machine: $(nproc) CPUs, $(uname -r)" >&2
exit "$failed"
