#!/bin/sh
# bench/servers.sh - the request/reply table: lf beside its peers and its baselines.
#
#   bench/servers.sh [BUILD_DIR]        (default: build/bench under the repository)
#   env: QUICK (0; 1: one round of 1 s per row), ROUNDS (5), SECS (2 s measured per
#        run, after WARM 0.5 s), CONNS ("16 64": a table per number of client
#        connections; every row at the first, the core rows at the others), THREADS
#        (2 server threads), WORK (0: CPU work per request, wire.h), WORK_SHAPE
#        (10000: the CPU work of the core rows' extra table, about 10 us), SCALE
#        ("100 1000 10000" connections for the scaling rows; QUICK: 1000), CC (cc),
#        CXX (c++)
#
# Every server speaks bench/wire.h's 64-byte request/reply; bench/loadgen.c drives it
# with CONNS closed-loop connections on loopback and checks every reply. A run is:
# start the server (bench/alloc_count.so preloaded, counting its allocations), wait
# for its "port N" line, run loadgen against it, kill it. A round runs every row once;
# the row order rotates from round to round, so no row always runs first or last on
# a machine whose speed drifts. Each figure is the median over the rounds; "spread"
# is (max - min) / median of requests/s.
#
# Rows: lf_reactor in every promotion policy x backend with one leader, with
# LF_REACTOR_CONCURRENT (epoll), with one thread (no hand-offs: the reactor's own
# cost), and with handles registered one-shot instead of LF_EV_EDGE (bench/srv_lf.c):
# lf.oneshot.epoll (LIFO, epoll, the handler answers LF_DRAINED after a short read)
# is the default configuration (no macros, the README's quick start); lf.keep.epoll
# the same with a handler that always answers LF_KEEP (one epoll_ctl re-arm per
# request); lf.oneshot.takeover the default built with LF_TAKEOVER=1 (a thread back
# from processing takes over a promotion whose follower has not run yet: on by default
# only with LF_SCHED_BATCH); lf.oneshot.defer the default built with LF_DEFER_NS=1000000
# (deferred promotions, opt-in); lf.batch the default built with LF_SCHED_BATCH=1
# (the opt-in: joined threads run as SCHED_BATCH); ACE_TP_Reactor and
# ACE_Dev_Poll_Reactor (libace-dev); boost.asio io_context::run on THREADS threads
# (libboost-dev); the peers again under `chrt -b 0` (ace.devpoll.batch, asio.batch:
# the policy lf.batch asks for, given to them the way any user could, so a lead counts
# only against the best peer under either policy); Half-Sync/Half-
# Reactive (one I/O thread, a queue, THREADS workers); thread per connection; the
# single-threaded epoll loop without locks (the floor); the OLTP demo (clients ->
# front-end -> 2 multiplexed connections -> back-end, bench/oltp.c). A peer whose
# package cannot be installed or whose server does not build is listed as
# unavailable. The tables: every row at the first CONNS, the core rows (lf's default
# and its variants, the peers, HS/HR, thread per connection, the floor) at the other
# CONNS, with WORK_SHAPE of CPU work per request, and beside one CPU-bound process (a
# busy loop at nice 0: the shared machine). Then the scaling rows: server CPU per
# request at SCALE connections.
#
# Writes bench/results/servers.csv (the table at the first CONNS), servers-cN.csv
# (the core rows at N connections), servers-work.csv (with CPU work), servers-hog.csv
# (beside the busy loop), servers.raw
# (every run's line), scaling.csv, and servers.png / scaling.png when gnuplot is
# there. Exits 1 if any
# run saw a wrong, lost or late reply (or a server failed to start).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${1:-$root/build/bench}
cc=${CC:-cc}
cxx=${CXX:-c++}
if [ "${QUICK:-0}" = 1 ]; then
    rounds=${ROUNDS:-1}; secs=${SECS:-1}; warm=${WARM:-0.3}; scale=${SCALE:-1000}
else
    rounds=${ROUNDS:-5}; secs=${SECS:-2}; warm=${WARM:-0.5}; scale=${SCALE:-100 1000 10000}
fi
conns_list=${CONNS:-16 64}
work_shape=${WORK_SHAPE:-10000}
threads=${THREADS:-2}
work=${WORK:-0}
results=$here/results
mkdir -p "$build" "$results"
started=$(date +%s)

# -- peers: install what is missing (Debian), or carry on without it -------------------
missing=
for pkg in libace-dev libboost-dev gnuplot-nox; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing="$missing $pkg"
done
if [ -n "$missing" ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "bench: installing$missing" >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing >"$build/apt.log" 2>&1 ||
            DEBIAN_FRONTEND=noninteractive sh -c "apt-get update -q && apt-get install -y -q $missing" \
                >>"$build/apt.log" 2>&1 ||
            echo "bench: could not install$missing (see $build/apt.log); those rows are skipped" >&2
    else
        echo "bench: not root, cannot install$missing; those rows are skipped" >&2
    fi
fi

# -- build -------------------------------------------------------------------------------
cflags="-std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -O2 -Wall -Wextra -I$root -I$here"
urcu=$(pkg-config --cflags --libs liburcu-memb)
unavailable=
$cc -O2 -fPIC -shared -o "$build/alloc_count.so" "$here/alloc_count.c"
$cc $cflags -o "$build/loadgen" "$here/loadgen.c" -pthread
for p in LIFO FIFO HEAP CONDVAR; do
    for b in EPOLL POLL SELECT; do
        $cc $cflags -DLF_PROMOTE=LF_PROMOTE_$p -DLF_REACTOR_BACKEND=LF_REACTOR_$b \
            -o "$build/srv_lf.$p.$b" "$here/srv_lf.c" $urcu -pthread
    done
done
$cc $cflags -DLF_TAKEOVER=1 -o "$build/srv_lf.takeover" "$here/srv_lf.c" $urcu -pthread
$cc $cflags -DLF_DEFER_NS=1000000 -o "$build/srv_lf.defer" "$here/srv_lf.c" $urcu -pthread
$cc $cflags -DLF_SCHED_BATCH=1 -o "$build/srv_lf.batch" "$here/srv_lf.c" $urcu -pthread
for s in floor hshr tpc; do
    $cc $cflags -o "$build/srv_$s" "$here/srv_$s.c" -pthread
done
$cc $cflags -o "$build/oltp" "$here/oltp.c" "$here/oltp_demo.c" "$here/oltp_soak.c" $urcu -pthread
$cxx -std=c++17 -O2 -I"$here" -DACE_REACTOR_KIND=1 -o "$build/srv_ace_tp" "$here/srv_ace.cc" \
    -lACE -pthread 2>"$build/ace.log" || unavailable="$unavailable ace.tp"
$cxx -std=c++17 -O2 -I"$here" -DACE_REACTOR_KIND=2 -o "$build/srv_ace_dp" "$here/srv_ace.cc" \
    -lACE -pthread 2>>"$build/ace.log" || unavailable="$unavailable ace.devpoll"
$cxx -std=c++17 -O2 -I"$here" -o "$build/srv_asio" "$here/srv_asio.cc" -pthread \
    2>"$build/asio.log" || unavailable="$unavailable asio"

# -- the rows: name, then the server's command line (OLTP is special) --------------------
rows="$build/rows"
: >"$rows"
for p in LIFO FIFO HEAP CONDVAR; do
    for b in EPOLL POLL SELECT; do
        lb=$(echo "$b" | tr '[:upper:]' '[:lower:]')
        echo "lf.$p.$lb $build/srv_lf.$p.$b -t $threads" >>"$rows"
    done
done
cat >>"$rows" <<EOF
lf.concurrent.epoll $build/srv_lf.LIFO.EPOLL -t $threads -f 1
lf.1thread.epoll $build/srv_lf.LIFO.EPOLL -t 1
lf.oneshot.epoll $build/srv_lf.LIFO.EPOLL -t $threads -f 2
lf.keep.epoll $build/srv_lf.LIFO.EPOLL -t $threads -f 6
lf.oneshot.takeover $build/srv_lf.takeover -t $threads -f 2
lf.oneshot.defer $build/srv_lf.defer -t $threads -f 2
lf.batch $build/srv_lf.batch -t $threads -f 2
ace.tp $build/srv_ace_tp -t $threads
ace.devpoll $build/srv_ace_dp -t $threads
ace.devpoll.batch chrt -b 0 $build/srv_ace_dp -t $threads
asio $build/srv_asio -t $threads
asio.batch chrt -b 0 $build/srv_asio -t $threads
hshr $build/srv_hshr -t $threads
tpc $build/srv_tpc
floor $build/srv_floor
oltp oltp
EOF
for u in $unavailable; do
    echo "bench: $u is unavailable (see $build/*.log)" >&2
    grep -v -e "^$u " -e "^$u.batch " "$rows" >"$rows.tmp" || true
    mv "$rows.tmp" "$rows"
done
nrows=$(wc -l <"$rows")

# -- one run -----------------------------------------------------------------------------
raw=$results/servers.raw
scale_raw=$results/scaling.raw
: >"$raw"
: >"$scale_raw"
failed=0
pids=

# start NAME ARGS...: start a server in the background, set $port and append its pid
start() {
    s_out=$build/run.$$.$1.out
    shift
    : >"$s_out"
    BENCH_ALLOC_FILE=$build/allocs.cnt LD_PRELOAD=$build/alloc_count.so "$@" >"$s_out" \
        2>>"$build/servers.err" &
    pids="$pids $!"
    s_pid=$!
    i=0
    port=
    while [ $i -lt 100 ]; do
        port=$(awk '/^port /{print $2; exit}' "$s_out")
        [ -n "$port" ] && return 0
        kill -0 "$s_pid" 2>/dev/null || break
        sleep 0.05
        i=$((i + 1))
    done
    echo "bench: server did not start: $*" >&2
    return 1
}

stop_all() {
    for p in $pids; do kill "$p" 2>/dev/null || true; done
    for p in $pids; do wait "$p" 2>/dev/null || true; done
    pids=
}
trap 'stop_all' EXIT INT TERM

# run NAME NCONNS OUTFILE TAG CMD...: one run of a row, one line into OUTFILE
run() {
    r_name=$1 r_conns=$2 r_out=$3 r_tag=$4
    shift 4
    rm -f "$build/allocs.cnt"
    : >"$build/allocs.cnt"
    r_pids=
    if [ "$1" = oltp ]; then
        start back "$build/oltp" backend -p 0 -t "$threads" || { failed=1; stop_all; return; }
        bport=$port
        r_pids="-P $s_pid"
        start front "$build/oltp" frontend -p 0 -b "$bport" -m 2 -t "$threads" ||
            { failed=1; stop_all; return; }
        r_pids="$r_pids -P $s_pid"
    else
        start srv "$@" || { failed=1; stop_all; return; }
        r_pids="-P $s_pid"
    fi
    # shellcheck disable=SC2086 # r_pids is a list of options
    if line=$("$build/loadgen" -p "$port" -c "$r_conns" -w "${work_now:-$work}" -W "$warm" -d "$secs" \
        $r_pids -A "$build/allocs.cnt"); then :; else
        echo "bench: $r_name: loadgen failed ($line)" >&2
        failed=1
    fi
    stop_all
    echo "$r_name $r_tag conns=$r_conns $line" >>"$r_out"
    echo "$line" | awk -v n="$r_name" -v t="$r_tag" -v c="$r_conns" '{
        for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
        printf "  %-20s %-9s %5s conns %9.0f req/s  p99 %7.1f us  cpu %6.2f us/req\n",
            n, t, c, v["rps"], v["p99_us"], v["cpu_us_per_req"] }' >&2
}

# -- the tables: ROUNDS rounds each, each round starting one row further down -----------
# table CONNS WORK ROWS_FILE RAW_FILE
table() {
    t_conns=$1 t_work=$2 t_rows=$3 t_raw=$4
    t_n=$(wc -l <"$t_rows")
    round=1
    while [ "$round" -le "$rounds" ]; do
        echo "bench: round $round of $rounds ($t_n rows, $t_conns connections, work $t_work, ${secs}s each)" >&2
        skip=$(((round - 1) % t_n))
        { tail -n +$((skip + 1)) "$t_rows"; head -n "$skip" "$t_rows"; } >"$t_rows.order"
        while read -r name cmd; do
            work_now=$t_work
            # shellcheck disable=SC2086 # cmd is a command line
            run "$name" "$t_conns" "$t_raw" "round=$round" $cmd
        done <"$t_rows.order"
        round=$((round + 1))
    done
    work_now=
}
# the core rows: lf's default and its variants, the peers, the baselines
core="lf.oneshot.epoll lf.keep.epoll lf.oneshot.takeover lf.oneshot.defer lf.batch lf.LIFO.epoll lf.1thread.epoll ace.tp ace.devpoll ace.devpoll.batch asio asio.batch hshr tpc floor"
awk -v keep="$core" 'BEGIN { n = split(keep, k, " "); for (i = 1; i <= n; i++) want[k[i]] = 1 }
    want[$1]' "$rows" >"$rows.core"
first=
for c in $conns_list; do
    if [ -z "$first" ]; then
        first=$c
        table "$c" "$work" "$rows" "$raw"
    else
        : >"$results/servers-c$c.raw"
        table "$c" "$work" "$rows.core" "$results/servers-c$c.raw"
    fi
done
: >"$results/servers-work.raw"
table "$first" "$work_shape" "$rows.core" "$results/servers-work.raw"
# the shared machine: the core rows again with one CPU-bound process beside them (a
# busy loop at nice 0, as a log shipper, a compile or a batch job would be)
sh -c 'while :; do :; done' &
hog=$!
trap 'kill $hog 2>/dev/null; stop_all' EXIT INT TERM
: >"$results/servers-hog.raw"
table "$first" "$work" "$rows.core" "$results/servers-hog.raw"
kill "$hog"
wait "$hog" 2>/dev/null || true
trap 'stop_all' EXIT INT TERM

# -- the scaling rows: CPU per request as connections grow -------------------------------
scale_rows="lf.oneshot.epoll lf.LIFO.epoll lf.LIFO.poll lf.concurrent.epoll asio ace.devpoll hshr floor"
round=1
srounds=$(( rounds < 3 ? rounds : 3 ))
while [ "$round" -le "$srounds" ]; do
    for n in $scale; do
        for name in $scale_rows; do
            cmd=$(awk -v n="$name" '$1 == n { $1 = ""; print }' "$rows")
            [ -n "$cmd" ] || continue
            # shellcheck disable=SC2086
            run "$name" "$n" "$scale_raw" "round=$round" $cmd
        done
    done
    round=$((round + 1))
done

# -- summarize ---------------------------------------------------------------------------
dflt=lf.oneshot.epoll
echo "== $first connections, work $work, every row" >&2
awk -f "$here/servers.awk" -v out="$results/servers.csv" -v rows="$rows" -v default_row=$dflt "$raw"
for c in $conns_list; do
    [ "$c" = "$first" ] && continue
    echo "== $c connections, work $work, the core rows" >&2
    awk -f "$here/servers.awk" -v out="$results/servers-c$c.csv" -v rows="$rows.core" \
        -v default_row=$dflt "$results/servers-c$c.raw"
done
echo "== $first connections, work $work_shape (about $((work_shape / 1000)) us of CPU per request), the core rows" >&2
awk -f "$here/servers.awk" -v out="$results/servers-work.csv" -v rows="$rows.core" \
    -v default_row=$dflt "$results/servers-work.raw"
echo "== $first connections, work $work, beside a CPU-bound process (nice 0), the core rows" >&2
awk -f "$here/servers.awk" -v out="$results/servers-hog.csv" -v rows="$rows.core" \
    -v default_row=$dflt -v shared=1 "$results/servers-hog.raw"
awk -f "$here/scaling.awk" -v out="$results/scaling.csv" "$scale_raw"
if command -v gnuplot >/dev/null; then
    gnuplot -e "dir='$results'" "$here/servers.gp" 2>"$build/gnuplot.log" ||
        echo "bench: gnuplot failed (see $build/gnuplot.log)" >&2
fi
echo "bench: servers.sh took $(($(date +%s) - started)) s; machine: $(nproc) CPUs, $(uname -r)" >&2
exit "$failed"
