# shellcheck shell=sh disable=SC2034,SC2154 # sets and reads its sourcer's variables
# test/lft_server.sh - sourced by test/memcached.sh and test/redis.sh, which run their
# test program (t_memcached, t_redis) against a real server, plain and under the
# sanitizers, the same way: the one environment each build runs in, and the
# kill-and-restart the program asks for. Reads the sourcer's build and root.
#
#   lft_envs BIN              sets envs, the assignments BIN runs under: the watchdog's
#                             stall (LF_TEST_STALL_S), and for BIN.asan and BIN.tsan
#                             the sanitizer's options (TSan also a quarter of the
#                             work, LF_TEST_SCALE=4, as make test runs it)
#   lft_restarted RESTART CMD...   run CMD (the test) in the background; when it makes
#                             $build/kill.now (mid-run: its threads are busy), RESTART
#                             "$build" (a function that kills the server with SIGKILL
#                             and starts a new one on the same port); CMD's status

lft_envs() {
    envs="LF_TEST_STALL_S=10"
    case $1 in
    *.asan) envs="LF_TEST_STALL_S=30 ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1" ;;
    *.tsan) envs="LF_TEST_SCALE=4 LF_TEST_STALL_S=90 TSAN_OPTIONS=halt_on_error=1:exitcode=66:suppressions=$root/test/tsan.supp" ;;
    esac
}

lft_restarted() {
    restart=$1
    shift
    rm -f "$build/kill.now"
    "$@" &
    tpid=$!
    while kill -0 "$tpid" 2>/dev/null && [ ! -e "$build/kill.now" ]; do sleep 0.02; done
    if [ -e "$build/kill.now" ]; then "$restart" "$build"; fi
    wait "$tpid"
}
