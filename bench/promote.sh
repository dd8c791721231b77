#!/bin/sh
# bench/promote.sh - hand-off latency of every promotion policy beside its floors.
#
#   bench/promote.sh [BUILD_DIR]       (default: build/bench under the repository)
#   env: CC (cc), CFLAGS (-O2 -Wall -Wextra -Wpedantic), ROUNDS (5), DURATION (0.25 s
#        per run), THREADS (2), SPIN (0), PLACE (split; see bench/promote.c)
#
# Builds bench/promote.c once per variant (LIFO, FIFO, HEAP with each synchronizer,
# CONDVAR once), then runs ROUNDS rounds. A round is
#     F C V1 F C V2 ... F C V7 F C
# F and C are the floors (a raw futex and a raw condvar ping-pong), V the variants,
# each round starting one variant further down the list so that none always comes
# first. Every variant is bracketed by floor runs a moment before and after it, and
# its ratio is its median latency over the geometric mean of the two. Bracketing is
# the point: on these VMs the cost of waking another CPU jumps between levels (4, 15,
# 20, 27 us were all seen) from one second to the next, the same for floor and pool,
# so only runs close in time compare, and a bracket whose two floors differ by more
# than 1.5x saw such a jump: it is left out of the ratios ("pairs" counts the ones
# kept). Round 1 also runs both floors with their two threads on one CPU ("@same"):
# the 2 us context-switch hand-off, for reference only, since the pool cannot be
# measured there (see "placement" in bench/promote.c).
#
# The table shows, per row, the median over its runs, and the median of its kept
# ratios. Target: LIFO/FIFO/HEAP within 1.3x of the futex floor, CONDVAR within 1.3x
# of the condvar floor. A row whose promotions mostly did not reach a follower
# (barged > handoffs: the old leader took the freed slot back) has no hand-off
# latency to judge and says n/a.
#
# Writes the table as CSV to bench/results/promote.csv, and the rows of every run,
# in the order they ran, to bench/results/promote.raw. Exits 1 if a run failed or
# saw an anomaly (two leaders at once, a turn without exactly one promotion); a MISS
# is a result, not a failure.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${1:-$root/build/bench}
cc=${CC:-cc}
cflags=${CFLAGS:--O2 -Wall -Wextra -Wpedantic}
rounds=${ROUNDS:-5}
duration=${DURATION:-0.25}
threads=${THREADS:-2}
spin=${SPIN:-0}
place=${PLACE:-split}
results=$here/results
target=1.3

variants="LIFO:futex LIFO:pthread FIFO:futex FIFO:pthread HEAP:futex HEAP:pthread
CONDVAR:"

mkdir -p "$build" "$results"
started=$(date +%s)

binary() { # LIFO:futex -> $build/promote-lifo-futex, CONDVAR: -> $build/promote-condvar
    b_sync=${1#*:}
    b_name=$(echo "${1%%:*}${b_sync:+-$b_sync}" | tr '[:upper:]' '[:lower:]')
    echo "$build/promote-$b_name"
}

# -- build: one binary per variant; the floors run from the first one.
for v in $variants; do
    sync=${v#*:}
    # CONDVAR has no per-follower synchronizer; it is built with the default LF_SYNC.
    # shellcheck disable=SC2086 # $cc and $cflags are word lists on purpose
    # Takeover and SCHED_BATCH off: this measures the hand-off itself, which a
    # takeover exists to skip (the promoter takes the slot back before the woken
    # follower runs, so nearly every turn would "barge").
    $cc $cflags -std=c11 -D_POSIX_C_SOURCE=200809L -pthread \
        -DLF_TAKEOVER=0 -DLF_SCHED_BATCH=0 -DLF_PROMOTE="LF_PROMOTE_${v%%:*}" \
        ${sync:+-DLF_SYNC=LF_SYNC_$(echo "$sync" | tr '[:lower:]' '[:upper:]')} \
        -o "$(binary "$v")" "$here/promote.c"
done
floor_bin=$(binary LIFO:futex)

# -- run. A run that dies (its alarm fires on a hang, or it crashes) is reported and
# left out; the others go on.
raw=$results/promote.raw
: >"$raw"
failed=0
run() {
    if out=$("$@"); then
        echo "$out" | sed "s/^row /row round=$r /" >>"$raw"
    else
        echo "promote.sh: round $r: '$*' failed (exit $?)" >&2
        failed=1
    fi
}
floors() {
    run "$floor_bin" futex-pingpong "$duration" 2 0 "$place"
    run "$floor_bin" condvar-pingpong "$duration" 2 0 "$place"
}
variant() {
    run "$(binary "$1")" pool "$duration" "$threads" "$spin" "$place"
    floors
}
nvariants=$(echo "$variants" | wc -w)
r=1
while [ "$r" -le "$rounds" ]; do
    floors
    skip=$(((r - 1) % nvariants))
    i=0
    for v in $variants; do # from position skip to the end ...
        [ "$i" -ge "$skip" ] && variant "$v"
        i=$((i + 1))
    done
    i=0
    for v in $variants; do # ... then the ones before it
        [ "$i" -lt "$skip" ] && variant "$v"
        i=$((i + 1))
    done
    if [ "$r" -eq 1 ]; then
        run "$floor_bin" futex-pingpong "$duration" 2 0 same
        run "$floor_bin" condvar-pingpong "$duration" 2 0 same
    fi
    r=$((r + 1))
done
elapsed=$(($(date +%s) - started))

# -- summarise: medians per row; ratios against the bracketing floor runs.
status=0
awk -v place="$place" -v target="$target" -v csv="$results/promote.csv" \
    -v elapsed="$elapsed" -v cc="$($cc --version | head -n 1)" '
function median(list,    v, n, i, j, t) {
    n = split(list, v, " ")
    if (n == 0)
        return ""
    for (i = 2; i <= n; i++)    # insertion sort: a few dozen values at most
        for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) {
            t = v[j]; v[j] = v[j - 1]; v[j - 1] = t
        }
    return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
function add(key, field, value) {
    vals[key, field] = vals[key, field] (vals[key, field] == "" ? "" : " ") value
}
# The floor for run i: the geometric mean of the nearest runs of floor `fl` before
# and after it in the same round; 0 when they differ by more than 1.5x; the one
# there is when only one side has a run.
function bracket(i, fl,    j, b, a) {
    b = a = 0
    for (j = i - 1; j >= 1 && round[j] == round[i]; j--)
        if (key_of[j] == fl) { b = lat_of[j]; break }
    for (j = i + 1; j <= nrows && round[j] == round[i]; j++)
        if (key_of[j] == fl) { a = lat_of[j]; break }
    if (b > 0 && a > 0)
        return (b > a ? b / a : a / b) > 1.5 ? 0 : sqrt(a * b)
    return b > 0 ? b : a
}
$1 == "row" {
    split("", f)
    for (i = 2; i <= NF; i++) {
        eq = index($i, "=")
        f[substr($i, 1, eq - 1)] = substr($i, eq + 1)
    }
    key = f["name"] (f["place"] == place ? "" : "@" f["place"])
    if (!(key in seen)) {
        seen[key] = 1
        # floors first, then the reference floors, then the variants as they came
        group = key !~ /^floor\// ? 3 : key ~ /@/ ? 2 : 1
        ingroup[group, ++count[group]] = key
    }
    nrows++
    key_of[nrows] = key
    lat_of[nrows] = f["lat_median_ns"] + 0
    round[nrows] = f["round"]
    add(key, "turns", f["turns_per_s"])
    add(key, "handoffs", f["handoffs_per_s"])
    add(key, "real", f["real_handoff_frac"])
    add(key, "med", f["lat_median_ns"])
    add(key, "mean", f["lat_mean_ns"])
    add(key, "p99", f["lat_p99_ns"])
    anomalies[key] += f["anomalies"]
    barged[key] += f["barged"]
    handoffs[key] += f["handoffs"]
    runs[key]++
}
END {
    for (i = 1; i <= nrows; i++) {
        key = key_of[i]
        if (lat_of[i] <= 0)
            continue
        if (key == "floor/futex")
            ff = lat_of[i]  # a floor against itself: 1 by definition
        else
            ff = bracket(i, "floor/futex")
        if (key == "floor/condvar")
            fc = lat_of[i]
        else
            fc = bracket(i, "floor/condvar")
        if (ff > 0)
            add(key, "vf", lat_of[i] / ff)
        if (fc > 0)
            add(key, "vc", lat_of[i] / fc)
        # the pair that decides the verdict: the row'"'"'s own floor
        if ((key ~ /^CONDVAR\// ? fc : ff) > 0)
            pairs[key]++
    }
    for (g = 1; g <= 3; g++)
        for (i = 1; i <= count[g]; i++)
            order[++nkeys] = ingroup[g, i]
    printf "%-20s %5s %9s %10s %6s %8s %8s %8s %7s %8s  %s\n", "row", "pairs",
        "turns/s", "handoffs/s", "hand%", "lat_med", "lat_mean", "lat_p99",
        "/futex", "/condvar", "verdict (target " target "x)"
    print "row,place,runs,pairs,turns_per_s,handoffs_per_s,real_handoff_frac," \
        "lat_median_ns,lat_mean_ns,lat_p99_ns,ratio_vs_futex,ratio_vs_condvar,floor," \
        "verdict,barged,anomalies" > csv
    for (k = 1; k <= nkeys; k++) {
        key = order[k]
        real = median(vals[key, "real"])
        vf = median(vals[key, "vf"])
        vc = median(vals[key, "vc"])
        name = key
        sub(/@.*/, "", name)
        kplace = key ~ /@/ ? substr(key, index(key, "@") + 1) : place
        floor = ""
        if (key ~ /^floor\// && key ~ /@/)
            verdict = "reference"
        else if (key ~ /^floor\//)
            verdict = "floor"
        else {
            floor = name ~ /^CONDVAR\// ? "condvar" : "futex"
            ratio = floor == "condvar" ? vc : vf
            if (barged[key] > handoffs[key] || handoffs[key] == 0)
                verdict = "n/a"
            else if (ratio == "")
                verdict = "no stable pair"
            else
                verdict = ratio <= target ? "PASS" : "MISS"
        }
        shown = verdict
        if (verdict == "PASS" || verdict == "MISS")
            shown = verdict sprintf(" %.2fx %s", ratio, floor)
        if (anomalies[key])
            shown = shown " ANOMALIES=" anomalies[key]
        if (verdict == "n/a" && barged[key] > handoffs[key])
            barging_note = 1
        printf "%-20s %2d/%-2d %9.0f %10.0f %5.1f%% %8.0f %8.0f %8.0f %7s %8s  %s\n",
            key, pairs[key], runs[key], median(vals[key, "turns"]),
            median(vals[key, "handoffs"]), 100 * real, median(vals[key, "med"]),
            median(vals[key, "mean"]), median(vals[key, "p99"]),
            vf == "" ? "-" : sprintf("%.2f", vf), vc == "" ? "-" : sprintf("%.2f", vc),
            shown
        printf "%s,%s,%d,%d,%.0f,%.0f,%.4f,%.0f,%.0f,%.0f,%s,%s,%s,%s,%d,%d\n",
            name, kplace, runs[key], pairs[key], median(vals[key, "turns"]),
            median(vals[key, "handoffs"]), real, median(vals[key, "med"]),
            median(vals[key, "mean"]), median(vals[key, "p99"]),
            vf == "" ? "" : sprintf("%.3f", vf), vc == "" ? "" : sprintf("%.3f", vc),
            floor, verdict, barged[key], anomalies[key] > csv
    }
    print "latencies in ns, medians over all runs; ratios: medians over the runs whose " \
        "bracketing floors agreed (pairs/runs)"
    printf "place=%s: thread i on the i-th CPU; @same: both threads on one CPU " \
        "(reference, not a target)\n", place
    if (barging_note)
        print "n/a: barged > handoffs: the old leader took the freed slot back before " \
            "the signalled follower woke, so few turns were hand-offs"
    printf "%s; %d s in all\n", cc, elapsed
    for (key in anomalies)
        if (anomalies[key])
            exit 1
}' "$raw" || status=1
echo "wrote $results/promote.csv"
[ "$failed" -eq 0 ] && [ "$status" -eq 0 ]
