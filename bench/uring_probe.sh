#!/bin/sh
# bench/uring_probe.sh [BUILD_DIR] - would an io_uring backend pay for itself? The
# one-shot re-arm (an EPOLL_CTL_MOD per event) is what lf's one-shot handles pay over
# LF_EV_EDGE; io_uring could submit every re-arm with the next wait instead. This runs
# bench/srv_uring_probe.c's three modes side by side on one thread, the best case for
# the batching (every re-arm rides on a wait), and prints the medians:
#   uring     POLL_ADD re-arms submitted with the wait (no system call of their own)
#   oneshot   epoll, EPOLLONESHOT, EPOLL_CTL_MOD after each event (lf's one-shot)
#   level     epoll, level-triggered, no re-arm (the floor's loop)
# env: ROUNDS (9), SECS (2 per row), CONNS (16). The server runs on CPU 1 and the load
# generator on CPU 0 when there are two, so their scheduling does not mix. Installs
# liburing-dev (Debian) when run as root. Writes bench/results/uring_probe.csv.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$(dirname "$here")/build/bench}
rounds=${ROUNDS:-9} secs=${SECS:-2} conns=${CONNS:-16}
cc=${CC:-cc}
mkdir -p "$build" "$here/results"

if ! dpkg -s liburing-dev >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q liburing-dev >"$build/apt-uring.log" 2>&1 ||
            { echo "uring_probe: could not install liburing-dev (see $build/apt-uring.log)" >&2; exit 2; }
    else
        echo "uring_probe: needs liburing-dev (apt-get install liburing-dev)" >&2
        exit 2
    fi
fi
# shellcheck disable=SC2086 # $cc and $cflags are word lists on purpose
cflags="-std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -O2 -Wall -Wextra -I$here"
# shellcheck disable=SC2086
$cc $cflags -o "$build/loadgen" "$here/loadgen.c" -pthread
# shellcheck disable=SC2086
$cc $cflags -o "$build/srv_uring_probe" "$here/srv_uring_probe.c" -luring

pin_srv='' pin_lg=''
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
    pin_srv="taskset -c 1" pin_lg="taskset -c 0"
fi
raw=$build/uring_probe.raw
: >"$raw"
for r in $(seq "$rounds"); do
    for m in 0:uring 1:oneshot 2:level; do
        out=$build/uring_probe.out
        : >"$out"
        # shellcheck disable=SC2086 # empty, or taskset and its CPU
        $pin_srv "$build/srv_uring_probe" -f "${m%%:*}" >"$out" 2>&1 &
        sp=$!
        port=
        for _ in $(seq 100); do
            port=$(awk '/^port /{print $2; exit}' "$out")
            [ -n "$port" ] && break
            sleep 0.05
        done
        # shellcheck disable=SC2086
        line=$($pin_lg "$build/loadgen" -p "$port" -c "$conns" -W 0.3 -d "$secs" -P "$sp" || true)
        kill "$sp" 2>/dev/null || true
        wait "$sp" 2>/dev/null || true
        echo "${m#*:} $line" >>"$raw"
    done
    echo "round $r of $rounds" >&2
done

# medians per mode, and each mode's CPU per request over the level-triggered loop's
awk '
function med(list, n,   a, i, j, t) {
    n = split(list, a, " ")
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{
    for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
    if (v["errors"] != 0 || v["rps"] == "") { bad[$1]++; next }
    rps[$1] = rps[$1] " " v["rps"]; cpu[$1] = cpu[$1] " " v["cpu_us_per_req"]
    p99[$1] = p99[$1] " " v["p99_us"]
}
END {
    print "mode,runs,rps,cpu_us_per_req,p99_us,cpu_vs_level"
    lv = med(cpu["level"])
    n = split("uring oneshot level", m, " ")
    for (i = 1; i <= n; i++) {
        k = m[i]; c = med(cpu[k])
        printf "%s,%d,%.0f,%.2f,%.1f,%.3f\n", k, split(cpu[k], x, " "), med(rps[k]), c, med(p99[k]), (lv > 0 ? c / lv : 0)
    }
}' "$raw" | tee "$here/results/uring_probe.csv"
