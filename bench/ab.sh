#!/bin/sh
# bench/ab.sh - A/B of a header change: bench/srv_lf.c built twice, from the headers of
# a git revision (A, default HEAD) and from the working tree (B), driven by
# bench/loadgen.c in the same run, the rows interleaved and their order rotating from
# round to round, so both sides see the same machine. Prints, per row, the medians of
# both sides and B/A.
#
#   bench/ab.sh [REV] [BUILD_DIR]
#   env: ROUNDS (7), SECS (1.5 s per run, after WARM 0.3 s), CONNS (16), THREADS (2),
#        ROWS (the rows below, by name), CC (cc)
#
# Rows (srv_lf.c's -f flags): edge = LIFO/epoll with LF_EV_EDGE (the default build);
# oneshot = LIFO/epoll one-shot; concurrent = LF_REACTOR_CONCURRENT; poll = LIFO/poll;
# condvar = CONDVAR/epoll; one = one thread (the reactor's cost without hand-offs).
# Measure on a quiet machine: a busy neighbour moves these figures by 30%.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
rev=${1:-HEAD}
build=${2:-$root/build/ab}
cc=${CC:-cc}
rounds=${ROUNDS:-7}
secs=${SECS:-1.5}
warm=${WARM:-0.3}
conns=${CONNS:-16}
threads=${THREADS:-2}
rows=${ROWS:-edge oneshot concurrent poll condvar one}
mkdir -p "$build/a"

# A's headers from the revision, B's from the tree; the same server and load source
for h in lf.h lf_reactor.h lf_bound.h; do
    git -C "$root" show "$rev:$h" > "$build/a/$h"
done
cflags="-std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -O2 -Wall -Wextra -I$here"
urcu=$(pkg-config --cflags --libs liburcu-memb)
$cc $cflags -o "$build/loadgen" "$here/loadgen.c" -pthread
for side in a b; do
    inc=$root
    [ $side = a ] && inc=$build/a
    $cc $cflags -I"$inc" -o "$build/srv.$side" "$here/srv_lf.c" $urcu -pthread
    $cc $cflags -I"$inc" -DLF_REACTOR_BACKEND=LF_REACTOR_POLL -o "$build/srv.$side.poll" \
        "$here/srv_lf.c" $urcu -pthread
    $cc $cflags -I"$inc" -DLF_PROMOTE=LF_PROMOTE_CONDVAR -o "$build/srv.$side.condvar" \
        "$here/srv_lf.c" $urcu -pthread
done

# cmd SIDE ROW: the server's command line
cmd() {
    case $2 in
    edge) echo "$build/srv.$1 -t $threads" ;;
    oneshot) echo "$build/srv.$1 -t $threads -f 2" ;;
    concurrent) echo "$build/srv.$1 -t $threads -f 1" ;;
    poll) echo "$build/srv.$1.poll -t $threads" ;;
    condvar) echo "$build/srv.$1.condvar -t $threads" ;;
    one) echo "$build/srv.$1 -t 1" ;;
    esac
}

raw=$build/ab.raw
: > "$raw"
pid=
trap '[ -z "$pid" ] || kill "$pid" 2>/dev/null || true' EXIT
runs=
for row in $rows; do runs="$runs a:$row b:$row"; done
n=$(echo $runs | wc -w)
for round in $(seq 1 "$rounds"); do
    # rotate the order by the round number
    k=$(( (round - 1) % n ))
    order=$(echo $runs | tr ' ' '\n' | awk -v k="$k" -v n="$n" '{r[NR-1]=$0} END {for (i=0;i<n;i++) print r[(i+k)%n]}')
    for run in $order; do
        side=${run%%:*} row=${run#*:}
        $(cmd "$side" "$row") > "$build/out" 2>"$build/err" &
        pid=$!
        i=0
        while ! grep -q '^port ' "$build/out" && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
        port=$(awk '/^port /{print $2}' "$build/out")
        line=$("$build/loadgen" -p "$port" -c "$conns" -W "$warm" -d "$secs" -P "$pid") ||
            { echo "ab: $side $row: $line" >&2; exit 1; }
        kill "$pid"
        wait "$pid" 2>/dev/null || true
        pid=
        echo "$side $row $line" >> "$raw"
    done
    echo "ab: round $round of $rounds" >&2
done

# medians per side and row, then B/A
awk -v rows="$rows" '
function med(a, n,   i, j, t) {
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{
    key = $1 " " $2; n[key]++
    for (f = 3; f <= NF; f++) { split($f, kv, "="); v[key, kv[1], n[key]] = kv[2] }
}
END {
    split("rps cpu_us_per_req p99_us p999_us cs_per_req fair", fields, " ")
    printf "%-11s %-15s %12s %12s %7s\n", "row", "figure", "A (rev)", "B (tree)", "B/A"
    nr = split(rows, R, " ")
    for (r = 1; r <= nr; r++) {
        for (f = 1; f <= 6; f++) {
            for (s = 0; s < 2; s++) {
                side = s ? "b" : "a"; key = side " " R[r]
                for (i = 1; i <= n[key]; i++) x[i] = v[key, fields[f], i]
                m[s] = med(x, n[key])
            }
            printf "%-11s %-15s %12.2f %12.2f %7.3f\n", R[r], fields[f], m[0], m[1], m[0] ? m[1] / m[0] : 0
        }
    }
}' "$raw"
