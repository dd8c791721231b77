#!/bin/sh
# test/gateway.sh CC BUILD_DIR [full] - the hybrid gateway (bench/gw_lf.c: lf_reactor.h and
# bench/memc.h, each client request a blocking memcached call from its handler) against
# a real memcached that this script installs if missing (Debian, as root) and starts on
# loopback. Built under ASan+UBSan (its frames are larger than a plain build's, so the
# stacks are tested harder), and with `full` plain too; each build, one gateway process, default
# thread stacks, driven by bench/gw_load.c (every reply checked: values carry their
# key, a version some SET sent and a checksum; MISS only where a key may be missing):
#   0. the protocol, exchange by exchange (gw_load -X 1: pipelining, large and empty
#      values, MISS, and ERR proto plus a close for each kind of malformed request);
#   1. 4,000 busy closed-loop connections for 2 s: no wrong reply, no crash;
#   2. memcached SIGSTOPped for 1.5 s under 200 connections: ERR replies come, the
#      gateway survives and serves again after SIGCONT (nothing wrong meanwhile);
#   3. memcached SIGKILLed and restarted on its port: ERR replies, then the gateway
#      reconnects and serves again (keys may MISS after the restart, nothing else);
#   4. SIGTERM: exit 0 with its stats line, and the deepest nesting a handler saw is
#      at most LF_BOUND_NEST_MAX + 1 (a join at the limit is one deeper than the
#      handlers); a sanitizer report anywhere fails the test.
# All of it twice: blocking calls (the default), and asynchronous ones (gw_lf -f 4:
# lf_bound_start, the result taken on LF_EV_NOTIFY, a timer per call), where no
# handler nests at all (max_depth 0) and a client dropped with its call in flight
# hands the call back in its handle_close (ASan sees any use after the free).
# No timing asserts. About 45 s.
set -eu
[ $# -eq 2 ] || [ $# -eq 3 ] || { echo "usage: test/gateway.sh CC BUILD_DIR [full]" >&2; exit 2; }
cc=$1
build=$2
runs="gw_lf.asan gw_lf.asan+async"
if [ "${3-}" = full ]; then runs="gw_lf gw_lf+async $runs"; fi
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$build"
build=$(cd "$build" && pwd)
gw_bin=$build
# shellcheck source=bench/daemon.sh
. "$root/bench/daemon.sh"
# shellcheck source=bench/memc_server.sh
. "$root/bench/memc_server.sh"
# shellcheck source=bench/gw_run.sh
. "$root/bench/gw_run.sh"
daemon_need memcached memcached "$build/apt.log"

strict="-std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Wall -Wextra -Wpedantic -Werror -I$root -I$root/bench"
san="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all"
urcu=$(pkg-config --cflags --libs liburcu-memb)
$cc $strict -O2 -g -o "$build/gw_load" "$root/bench/gw_load.c" -pthread
# shellcheck disable=SC2086 # urcu, san: lists of options
[ "${3-}" != full ] || $cc $strict -O2 -g -o "$build/gw_lf" "$root/bench/gw_lf.c" $urcu -pthread
# shellcheck disable=SC2086
$cc $strict $san -o "$build/gw_lf.asan" "$root/bench/gw_lf.c" $urcu -pthread

trap gw_cleanup EXIT INT TERM

fail() {
    echo "gateway: $bin: $*" >&2
    for f in "$build/$bin.out.err" "$build/load.out.err"; do
        [ -s "$f" ] && { echo "--- $f" >&2; tail -n 20 "$f" >&2; }
    done
    exit 1
}

# the ERR replies of the last load line
errs() {
    echo $(($(gw_field err_timeout "$load_line") + $(gw_field err_backend "$load_line")))
}

# fault NAME PROCEDURE: 200 connections, PROCEDURE half a second into the window
fault() {
    gw_load_start "$build/load.out" -p "$gw_port" -c 200 -s 4 -W 0.3
    gw_measuring || fail "$1: gw_load did not start measuring"
    sleep 0.5
    $2 || fail "$1: could not break memcached"
    gw_load_wait
    [ "$load_status" = 0 ] || fail "$1: wrong replies ($load_line)"
    [ "$(errs)" -gt 0 ] || fail "$1: no ERR reply while memcached was away ($load_line)"
    [ "$(gw_field recover_ms "$load_line")" != "-1.0" ] ||
        fail "$1: no good reply after memcached came back ($load_line)"
    kill -0 "$gw_pid" 2>/dev/null || fail "$1: the gateway died"
    echo "  $1: $(errs) ERR replies, served again $(gw_field recover_ms "$load_line") ms after memcached was back"
}

memc_start "$build"
for run in $runs; do
    bin=${run%+async}
    envs= flags=
    case $bin in *.asan) envs="ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1" ;; esac
    [ "$run" = "$bin" ] || flags="-f 4"
    echo "$run:"
    # shellcheck disable=SC2086 # envs, flags: lists
    gw_start "$build/$bin.out" env $envs "$build/$bin" -p 0 -t 2 -m "127.0.0.1:$memc_port" \
        $flags || fail "did not start"

    "$build/gw_load" -p "$gw_port" -X 1 >"$build/proto.out" 2>&1 ||
        { cat "$build/proto.out" >&2; fail "the protocol"; }
    echo "  the protocol: every exchange as bench/gw_proto.h says"

    gw_load_start "$build/load.out" -p "$gw_port" -c 4000 -s 2 -W 0.5
    gw_load_wait
    [ "$load_status" = 0 ] || fail "4,000 connections: wrong replies or set-up failed ($load_line)"
    [ "$(gw_field replies "$load_line")" -gt 0 ] || fail "4,000 connections: no replies"
    echo "  4,000 connections: $(gw_field replies "$load_line") replies checked, $(errs) ERR"

    fault "memcached stopped 1.5 s" gw_stall
    fault "memcached killed, restarted" gw_kill

    gw_stop
    [ "$gw_status" = 0 ] || fail "SIGTERM: exit status $gw_status"
    [ -n "$gw_stats" ] || fail "SIGTERM: no stats line"
    depth=$(gw_field max_depth "$gw_stats")
    nest=$(gw_field nest_max "$gw_stats")
    [ "$depth" -le $((nest + 1)) ] || fail "nesting $depth deep, the limit is $nest (+1)"
    [ -z "$flags" ] || [ "$depth" = 0 ] || fail "asynchronous calls nested $depth deep"
    if grep -q -e 'Sanitizer' -e 'runtime error' "$build/$bin.out.err"; then
        fail "sanitizer report"
    fi
    echo "  SIGTERM: exit 0; $gw_stats"
done
memc_stop
echo "gateway: all passed"
