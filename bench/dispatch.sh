#!/bin/sh
# bench/dispatch.sh - the reactor's own cost per event next to the kernel's, for every
# promotion policy and backend (bench/dispatch.c; no network, eventfds only).
#
#   bench/dispatch.sh [BUILD_DIR]      (default: build/bench under the repository)
#   env: CC (cc), CFLAGS (-O2 -Wall -Wextra -Wpedantic), ROUNDS (3), DURATION (1 s per
#        run), TOKENS (8), THREADS (2), QUICK (1: one round of 0.3 s runs)
#
# Builds bench/dispatch.c once per configuration it runs, then runs every row below
# ROUNDS times, interleaved (each round starts one row further down the list, so no
# row always comes first), and prints the median of each row's runs:
#   raw floor     a plain epoll loop, one thread, same reads and writes: n = 100,
#                 1,000, 10,000 handlers
#   policies      the ring on epoll, THREADS threads, n = 1,000, every LF_PROMOTE
#                 (and LIFO with one thread: no hand-off at all)
#   backends      the ring with LIFO and THREADS threads on epoll, poll and select at
#                 n = 100, 1,000, 10,000: epoll's demultiplexing is O(1) per event,
#                 poll's and select's O(n) per wait (select stops at FD_SETSIZE: its
#                 n = 10,000 row says skipped)
#   concurrent    the ring on epoll with LF_REACTOR_CONCURRENT, n = 1,000
#   notify        tokens passed by lf_reactor_notify, no descriptor events, every
#                 policy (and LIFO with one thread)
# Columns: ns/ev is wall time per event (1 / throughput), spread the slowest run's
# over the fastest (a row far above 1 changed regime between runs, e.g. a convoy of
# hand-offs in one and none in the other: see wake/ev), cpu/ev the process's CPU
# time per event (all threads, user + system), cores their ratio (the CPUs the run
# kept busy: a raw row well under 1.00 shared its CPU with another process, and its
# wall times say little); +ns and +cpu the same minus the raw floor at the same n
# (ring rows only): the reactor's overhead per event. spur/ev counts dispatches that
# found nothing, wake/ev the promotions that woke a parked follower (a futex
# hand-off each), kick/ev the wake-ups of a leader blocked in the backend.
#
# Every run checks that all its tokens are accounted for, that no handler ran on two
# threads at once, and that lf_reactor_stats agrees with the handlers' own counts
# (see bench/dispatch.c); a run that fails a check or dies makes the row FAIL and
# the script exit 1. Writes the table as CSV to bench/results/dispatch.csv, and every
# run's line, in the order they ran, to bench/results/dispatch.raw.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${1:-$root/build/bench}
cc=${CC:-cc}
cflags=${CFLAGS:--O2 -Wall -Wextra -Wpedantic}
rounds=${ROUNDS:-3}
duration=${DURATION:-1}
tokens=${TOKENS:-8}
threads=${THREADS:-2}
if [ "${QUICK:-0}" = 1 ]; then
    rounds=1
    duration=0.3
fi
results=$here/results

mkdir -p "$build" "$results"
started=$(date +%s)

# -- the rows: section|binary|arguments. A row that appears in two sections (LIFO on
# epoll at n = 1,000) runs once and is shown in both.
t=$threads
rows="raw floor|lifo-epoll|-m raw -n 100
raw floor|lifo-epoll|-m raw -n 1000
raw floor|lifo-epoll|-m raw -n 10000
policies|lifo-epoll|-m ring -n 1000 -t $t
policies|fifo-epoll|-m ring -n 1000 -t $t
policies|heap-epoll|-m ring -n 1000 -t $t
policies|condvar-epoll|-m ring -n 1000 -t $t
policies|lifo-epoll|-m ring -n 1000 -t 1
backends|lifo-epoll|-m ring -n 100 -t $t
backends|lifo-epoll|-m ring -n 1000 -t $t
backends|lifo-epoll|-m ring -n 10000 -t $t
backends|lifo-poll|-m ring -n 100 -t $t
backends|lifo-poll|-m ring -n 1000 -t $t
backends|lifo-poll|-m ring -n 10000 -t $t
backends|lifo-select|-m ring -n 100 -t $t
backends|lifo-select|-m ring -n 1000 -t $t
backends|lifo-select|-m ring -n 10000 -t $t
concurrent|lifo-epoll|-m ring -n 1000 -t $t -c
notify|lifo-epoll|-m notify -n 1000 -t $t
notify|fifo-epoll|-m notify -n 1000 -t $t
notify|heap-epoll|-m notify -n 1000 -t $t
notify|condvar-epoll|-m notify -n 1000 -t $t
notify|lifo-epoll|-m notify -n 1000 -t 1"

# the runs: each distinct binary + arguments once
runs=$(echo "$rows" | cut -d'|' -f2,3 | awk '!seen[$0]++')
nruns=$(echo "$runs" | wc -l)

# -- build: one binary per policy-backend pair used above
for b in $(echo "$runs" | cut -d'|' -f1 | sort -u); do
    policy=$(echo "${b%-*}" | tr '[:lower:]' '[:upper:]')
    backend=$(echo "${b#*-}" | tr '[:lower:]' '[:upper:]')
    printf 'dispatch.sh: building %s\n' "$b" >&2
    # shellcheck disable=SC2046,SC2086 # word lists on purpose
    $cc $cflags -std=c11 -D_POSIX_C_SOURCE=200809L -DLF_PROMOTE="LF_PROMOTE_$policy" \
        -DLF_REACTOR_BACKEND="LF_REACTOR_$backend" -o "$build/dispatch-$b" \
        "$here/dispatch.c" $(pkg-config --cflags --libs liburcu-memb) -pthread
done

# -- run. Exit 3 is a skip (the configuration cannot run here), kept as a "skip" line;
# any other failure is kept as a "fail" line and the run goes on.
raw=$results/dispatch.raw
: >"$raw"
err=$build/dispatch.err
failed=0
one() { # $1 = binary|arguments
    bin=$build/dispatch-${1%%|*}
    args=${1#*|}
    # shellcheck disable=SC2086 # $args is a word list
    if out=$("$bin" $args -k "$tokens" -s "$duration" 2>"$err"); then
        rc=0
    else
        rc=$?
    fi
    line=$(echo "$out" | grep '^dispatch ' || true)
    id=$(echo "$1" | tr ' ' '_') # one word: the last field of every line below
    case $rc in
    0)
        echo "$line round=$r id=$id" >>"$raw"
        summary=$(echo "$line" | awk '{ for (i = 1; i <= NF; i++) {
            split($i, kv, "="); f[kv[1]] = kv[2] }
            printf "%.0f ns/event, %.0f cpu ns/event", f["ns_per_event"],
                f["cpu_ns_per_event"] }')
        ;;
    3)
        echo "skip round=$r id=$id" >>"$raw"
        summary="skipped: $(sed -n 's/^dispatch: skipped: //p' "$err" | head -n 1)"
        ;;
    *)
        echo "fail round=$r rc=$rc id=$id" >>"$raw"
        summary="FAILED (exit $rc): $(head -n 3 "$err" | tr '\n' ' ')"
        failed=1
        ;;
    esac
    printf 'dispatch.sh: round %d/%d [%2d/%d] %-13s %-34s %s\n' "$r" "$rounds" "$k" \
        "$nruns" "${1%%|*}" "$args" "$summary" >&2
}
r=1
while [ "$r" -le "$rounds" ]; do
    skip=$(((r - 1) % nruns))
    k=0
    # from position skip to the end, then the ones before it
    for pass in 1 2; do
        i=0
        while IFS= read -r run; do
            if { [ "$pass" = 1 ] && [ "$i" -ge "$skip" ]; } ||
                { [ "$pass" = 2 ] && [ "$i" -lt "$skip" ]; }; then
                k=$((k + 1))
                one "$run"
            fi
            i=$((i + 1))
        done <<EOF
$runs
EOF
    done
    r=$((r + 1))
done
rm -f "$err"
elapsed=$(($(date +%s) - started))

# -- summarise: medians per run id; the table follows $rows, the CSV has each id once.
status=0
echo "$rows" >"$build/dispatch.rows"
awk -v csv="$results/dispatch.csv" -v elapsed="$elapsed" -v rawfile="$raw" \
    -v rounds="$rounds" -v duration="$duration" -v tokens="$tokens" \
    -v cc="$($cc --version | head -n 1)" '
function median(list,    v, n, i, j, t) {
    n = split(list, v, " ")
    if (n == 0)
        return ""
    for (i = 2; i <= n; i++)
        for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) {
            t = v[j]; v[j] = v[j - 1]; v[j - 1] = t
        }
    return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
function add(id, field, value) {
    vals[id, field] = vals[id, field] (vals[id, field] == "" ? "" : " ") value
}
function extreme(list, want_max,    v, n, i, m) {
    n = split(list, v, " ")
    for (i = 1; i <= n; i++)
        if (i == 1 || (want_max ? v[i] + 0 > m : v[i] + 0 < m))
            m = v[i] + 0
    return n ? m : ""
}
function fmt(v, f) { return v == "" ? "-" : sprintf(f, v) }
function cfmt(v, f) { return v == "" ? "" : sprintf(f, v) }
FILENAME == rawfile {      # dispatch.raw: one line per run
    id = $NF
    sub(/^id=/, "", id)
    if ($1 == "skip") { skipped[id]++; next }
    if ($1 == "fail") { failed[id]++; next }
    split("", f)
    for (i = 2; i <= NF; i++) {
        eq = index($i, "=")
        f[substr($i, 1, eq - 1)] = substr($i, eq + 1)
    }
    ev = f["events"] > 0 ? f["events"] : 1
    add(id, "eps", f["events_per_s"])
    add(id, "ns", f["ns_per_event"])
    add(id, "cpu", f["cpu_ns_per_event"])
    add(id, "cores", f["ns_per_event"] > 0 ? f["cpu_ns_per_event"] / f["ns_per_event"] : 0)
    add(id, "spur", f["spurious"] / ev)
    add(id, "wake", f["wakeups"] / ev)
    add(id, "kick", f["kicks"] / ev)
    runs[id]++
    if (f["mode"] == "raw") {
        rawns[f["handlers"]] = rawns[f["handlers"]] " " f["ns_per_event"]
        rawcpu[f["handlers"]] = rawcpu[f["handlers"]] " " f["cpu_ns_per_event"]
    }
    next
}
{                          # dispatch.rows: section|binary|arguments
    split($0, p, "|")
    nrows++
    sect[nrows] = p[1]
    id = p[2] "|" p[3]
    gsub(/ /, "_", id)
    rid[nrows] = id
    binof[id] = p[2]
    argsof[id] = p[3] # they name the row when no run produced a line
}
# What a row asked for, from its binary and arguments (and the defaults of
# dispatch.c): M mode, P policy, BK backend, C concurrent, T threads, N handlers.
function parse(id,    a, n, i, b) {
    split(binof[id], b, "-")
    P = toupper(b[1]); BK = b[2]
    M = "ring"; N = 1000; T = 2; C = 0
    n = split(argsof[id], a, " ")
    for (i = 1; i <= n; i++) {
        if (a[i] == "-m") M = a[++i]
        else if (a[i] == "-n") N = a[++i]
        else if (a[i] == "-t") T = a[++i]
        else if (a[i] == "-c") C = 1
    }
    if (M == "raw") { P = "-"; BK = "epoll"; T = 1 }
}
function label(id) {
    parse(id)
    if (M == "raw")
        return sprintf("raw epoll n=%d", N)
    return sprintf("%s %s %s%s t=%d n=%d", M, P, BK, C ? " conc" : "", T, N)
}
END {
    for (n in rawns) {
        floor_ns[n] = median(rawns[n])
        floor_cpu[n] = median(rawcpu[n])
    }
    hdr = sprintf("%-33s %4s %8s %7s %6s %7s %5s %7s %7s %7s %7s %7s  %s", "row",
        "runs", "events/s", "ns/ev", "spread", "cpu/ev", "cores", "+ns", "+cpu", "spur/ev",
        "wake/ev", "kick/ev", "status")
    print "section,mode,policy,backend,concurrent,threads,handlers,tokens,runs," \
        "events_per_s,ns_per_event,ns_per_event_min,ns_per_event_max," \
        "cpu_ns_per_event,cores,overhead_ns,overhead_cpu_ns,spurious_per_event," \
        "wakeups_per_event,kicks_per_event,status" > csv
    for (i = 1; i <= nrows; i++) {
        id = rid[i]
        if (sect[i] != last) {
            printf "%s-- %s\n", (i > 1 ? "\n" : ""), sect[i]
            if (i == 1)
                print hdr
            last = sect[i]
        }
        name = label(id) # and parse(id)
        ns = median(vals[id, "ns"]); cpu = median(vals[id, "cpu"])
        lo = extreme(vals[id, "ns"], 0); hi = extreme(vals[id, "ns"], 1)
        spread = lo > 0 ? hi / lo : ""
        dns = dcpu = ""
        if (M == "ring" && ns != "" && floor_ns[N] != "") {
            dns = ns - floor_ns[N]
            dcpu = cpu - floor_cpu[N]
        }
        st = failed[id] ? "FAIL " failed[id] "/" (failed[id] + runs[id] + skipped[id]) \
            : skipped[id] ? "skipped" : "ok"
        if (failed[id])
            bad = 1
        printf "%-33s %4d %8s %7s %6s %7s %5s %7s %7s %7s %7s %7s  %s\n", name,
            runs[id], fmt(median(vals[id, "eps"]), "%.0f"), fmt(ns, "%.0f"),
            fmt(spread, "%.1fx"), fmt(cpu, "%.0f"),
            fmt(median(vals[id, "cores"]), "%.2f"), fmt(dns, "%+.0f"), fmt(dcpu, "%+.0f"),
            fmt(median(vals[id, "spur"]), "%.3f"),
            fmt(median(vals[id, "wake"]), "%.3f"), fmt(median(vals[id, "kick"]), "%.3f"),
            st
        if (id in done)
            continue
        done[id] = 1
        printf "%s,%s,%s,%s,%d,%d,%d,%d,%d,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n",
            sect[i], M, P, BK, C, T, N, tokens, runs[id],
            cfmt(median(vals[id, "eps"]), "%.0f"), cfmt(ns, "%.1f"), cfmt(lo, "%.1f"),
            cfmt(hi, "%.1f"), cfmt(cpu, "%.1f"), cfmt(median(vals[id, "cores"]), "%.3f"),
            cfmt(dns, "%.1f"), cfmt(dcpu, "%.1f"),
            cfmt(median(vals[id, "spur"]), "%.4f"), cfmt(median(vals[id, "wake"]), "%.4f"),
            cfmt(median(vals[id, "kick"]), "%.4f"), st > csv
    }
    printf "\nmedians of %d round(s) of %s s per run, %d tokens; ns in nanoseconds per " \
        "event; +ns/+cpu: minus the raw floor at the same n\n", rounds, duration, tokens
    printf "%s; %d s in all\n", cc, elapsed
    exit bad
}' "$raw" "$build/dispatch.rows" || status=1
echo "wrote $results/dispatch.csv"
[ "$failed" -eq 0 ] && [ "$status" -eq 0 ]
