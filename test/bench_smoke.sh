#!/bin/sh
# test/bench_smoke.sh - make test's guard on bench/: our own benchmark servers answer
# every request correctly, and the OLTP demo (clients -> front-end -> multiplexed
# connections -> back-end) passes its reply checks, under ASan+UBSan. The peers (ACE,
# asio) are left to make bench, which installs them.
#
#   test/bench_smoke.sh CC BUILD_DIR
set -eu
cc=$1
build=$2
root=$(cd "$(dirname "$0")/.." && pwd)
bench=$root/bench
mkdir -p "$build"
san="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all"
cflags="-std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Wall -Wextra -Wpedantic -Werror -I$root -I$bench"
urcu=$(pkg-config --cflags --libs liburcu-memb)

$cc $cflags -O2 -o "$build/loadgen" "$bench/loadgen.c" -pthread
$cc $cflags $san -o "$build/srv_lf" "$bench/srv_lf.c" $urcu -pthread
$cc $cflags $san -DLF_REACTOR_BACKEND=LF_REACTOR_POLL -DLF_PROMOTE=LF_PROMOTE_FIFO \
    -o "$build/srv_lf.poll" "$bench/srv_lf.c" $urcu -pthread
for s in floor hshr tpc; do
    $cc $cflags $san -o "$build/srv_$s" "$bench/srv_$s.c" -pthread
done
$cc $cflags $san -o "$build/oltp" "$bench/oltp.c" "$bench/oltp_demo.c" "$bench/oltp_soak.c" \
    $urcu -pthread

pid=
cleanup() { [ -z "$pid" ] || kill "$pid" 2>/dev/null || true; }
trap cleanup EXIT

# serve NAME CMD...: start the server, drive it with 8 and then 300 connections
serve() {
    name=$1
    shift
    "$@" >"$build/$name.out" 2>"$build/$name.err" &
    pid=$!
    # up to 120 s: an ASan binary on a busy machine may take seconds to say its port
    # (once, in make stress-ci beside other builds, one said nothing for 30 s; if it
    # happens again, the threads' states below say where it was)
    i=0
    while ! grep -q '^port ' "$build/$name.out" && kill -0 "$pid" 2>/dev/null && [ $i -lt 2400 ]; do
        sleep 0.05
        i=$((i + 1))
    done
    port=$(awk '/^port /{print $2}' "$build/$name.out")
    [ -n "$port" ] || {
        if kill -0 "$pid" 2>/dev/null; then
            echo "$name did not say its port in 120 s; its threads:"
            for t in /proc/"$pid"/task/*; do
                echo "  $(cat "$t/comm") $(grep State "$t/status") wchan=$(cat "$t/wchan")"
                cat "$t/stack" 2>/dev/null | sed 's/^/    /'
            done
            kill -9 "$pid"
        else
            echo "$name exited before it said its port"
        fi
        cat "$build/$name.err"
        exit 1
    }
    for c in 8 300; do
        line=$("$build/loadgen" -p "$port" -c $c -w 50 -W 0.1 -d 0.4 -P "$pid") ||
            { echo "$name, $c connections: $line"; exit 1; }
        echo "$name, $c connections: $line"
    done
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    pid=
    if grep -q 'ERROR: \|runtime error' "$build/$name.err"; then
        cat "$build/$name.err"
        exit 1
    fi
}

serve srv_lf "$build/srv_lf" -t 3
serve srv_lf.concurrent "$build/srv_lf" -t 3 -f 1
serve srv_lf.poll "$build/srv_lf.poll" -t 3
serve srv_floor "$build/srv_floor"
serve srv_hshr "$build/srv_hshr" -t 3
serve srv_tpc "$build/srv_tpc"
"$build/oltp" demo -c 16 -s 1 -L "$build/loadgen"
echo "bench smoke: every server answered every request correctly"
