#!/bin/sh
# bench/handoff.sh - lf_bound.h: how replies reach their threads, per promotion policy.
#
#   bench/handoff.sh [BUILD_DIR]       (default: build/bench under the repository)
#   env: CC (cc), ROUNDS (3), LF_TEST_MULT (1: 6 threads x 4,000 requests per order)
#
# Runs the workload of test/t_bound_replies.c (6 client threads share one socketpair;
# the server answers each batch of requests in arrival order, or shuffled) once per
# policy and round, interleaved, and reports the median per reply of:
#   hand-offs   replies a leader read for another thread (one wake-up each)
#   own         share of replies read by their own waiter, as leader
#   promotions  leadership passed to a parked waiter (one wake-up each)
# Hand-offs plus promotions is the wake-ups a reply costs. The pattern predicts that
# FIFO needs the fewest hand-offs when replies come in request order: the oldest
# waiter leads, its reply comes first, it promotes the next oldest, and so on.
# Writes bench/results/handoff.csv.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${1:-$root/build/bench}
cc=${CC:-cc}
rounds=${ROUNDS:-3}
mkdir -p "$build" "$here/results"
raw=$here/results/handoff.raw
: > "$raw"

for p in LIFO FIFO HEAP CONDVAR; do
    $cc -std=c11 -D_POSIX_C_SOURCE=200809L -O2 -DLF_PROMOTE=LF_PROMOTE_$p \
        -o "$build/handoff.$p" "$root/test/t_bound_replies.c" -pthread
done
r=1
while [ "$r" -le "$rounds" ]; do
    for p in LIFO FIFO HEAP CONDVAR; do
        "$build/handoff.$p" | grep '^t_bound_replies' >> "$raw"
    done
    printf 'round %d of %d done\n' "$r" "$rounds" >&2
    r=$((r + 1))
done

# t_bound_replies LIFO/futex in order: N replies exactly once; per reply: H hand-offs
# (P% read by their own waiter), Q promotions, R reads
awk '
function median(list,   n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) {
        t = a[j]; a[j] = a[j-1]; a[j-1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{
    split($2, pol, "/"); order = ($3 == "shuffled:") ? "shuffled" : "in order"
    key = pol[1] "," order
    for (i = 1; i <= NF; i++) {
        if ($i == "hand-offs") h[key] = h[key] " " $(i - 1)
        if ($i == "promotions,") pr[key] = pr[key] " " $(i - 1)
        if ($i ~ /^\(/) { v = $i; gsub(/[(%]/, "", v); own[key] = own[key] " " v }
    }
    if (!(key in seen)) { seen[key] = 1; keys[++nk] = key }
}
END {
    print "policy,order,handoffs_per_reply,own_percent,promotions_per_reply,wakeups_per_reply" > csv
    printf "%-8s %-9s %10s %6s %11s %9s\n", "policy", "order", "hand-offs", "own", "promotions", "wake-ups"
    for (k = 1; k <= nk; k++) {
        key = keys[k]; split(key, kk, ",")
        mh = median(h[key]); mp = median(pr[key]); mo = median(own[key])
        printf "%-8s %-9s %10.3f %5.1f%% %11.3f %9.3f\n", kk[1], kk[2], mh, mo, mp, mh + mp
        printf "%s,%s,%.3f,%.1f,%.3f,%.3f\n", kk[1], kk[2], mh, mo, mp, mh + mp >> csv
    }
}' csv="$here/results/handoff.csv" "$raw"
