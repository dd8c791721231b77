# shellcheck shell=sh disable=SC2034,SC2154 # sets and reads its sourcer's variables
# bench/gw_run.sh - sourced by bench/gw.sh and test/gateway.sh, after bench/daemon.sh
# and bench/memc_server.sh (memc_port, memc_pid): run a gateway, drive it, break
# memcached under it. POSIX sh.
#
#   gw_start OUT CMD...     start a gateway (CMD with all its options) in the
#                           background, stdout to OUT, stderr to OUT.err; wait (30 s at
#                           most: an ASan build on a busy machine is slow) for its
#                           "port N" line. Sets gw_pid, gw_port; 1 if it never said it
#   gw_stop                 SIGTERM, then wait (10 s at most; then SIGKILL) and reap.
#                           Sets gw_status (its exit status; 137 after the SIGKILL)
#                           and gw_stats (its "stats ..." line, without "stats ")
#   gw_load_start OUT ARGS...   gw_load (in $gw_bin) in the background with ARGS, its
#                           line to OUT, stderr to OUT.err; sets load_pid
#   gw_load_wait            wait for it; sets load_status and load_line
#   gw_measuring            wait (60 s at most) until the loader's window is open
#   gw_stall                memcached SIGSTOPped for 1.5 s, the loader told SIGUSR2
#                           when it is back (SIGCONT)
#   gw_kill                 memcached SIGKILLed (the loader told SIGUSR1), restarted on
#                           the same port 0.5 s later (memc_restart), the loader told
#                           SIGUSR2 once it listens
#   memc_restart            start memcached again on $memc_port, as memc_start does
#   gw_cleanup              for the sourcer's trap: kill the loader and the gateway,
#                           let a stopped memcached go on, and stop it (memc_stop)

gw_start() {
    gw_out=$1
    shift
    rm -f "$gw_out"
    "$@" >"$gw_out" 2>"$gw_out.err" &
    gw_pid=$!
    gw_port=
    i=0
    while [ $i -lt 600 ]; do
        gw_port=$(awk '/^port /{print $2; exit}' "$gw_out" 2>/dev/null)
        [ -n "$gw_port" ] && return 0
        kill -0 "$gw_pid" 2>/dev/null || break
        sleep 0.05
        i=$((i + 1))
    done
    echo "gateway did not start: $* (see $gw_out.err)" >&2
    kill "$gw_pid" 2>/dev/null || true
    wait "$gw_pid" 2>/dev/null || true
    gw_pid=
    return 1
}

# gw__exited PID: the process is gone or a zombie (waiting to be reaped)
gw__exited() {
    [ ! -e "/proc/$1/stat" ] && return 0
    [ "$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)" = Z ]
}

gw_stop() {
    gw_status=
    gw_stats=
    [ -n "${gw_pid:-}" ] || return 0
    kill -TERM "$gw_pid" 2>/dev/null || true
    i=0
    while ! gw__exited "$gw_pid" && [ $i -lt 200 ]; do
        sleep 0.05
        i=$((i + 1))
    done
    gw__exited "$gw_pid" || kill -KILL "$gw_pid" 2>/dev/null || true
    gw_status=0
    wait "$gw_pid" || gw_status=$?
    gw_pid=
    gw_stats=$(sed -n 's/^stats //p' "$gw_out" | tail -n 1)
}

gw_load_start() {
    load_out=$1
    shift
    rm -f "$load_out" "$load_out.err"
    "$gw_bin/gw_load" "$@" >"$load_out" 2>"$load_out.err" &
    load_pid=$!
}

gw_load_wait() {
    load_status=0
    wait "$load_pid" || load_status=$?
    load_pid=
    load_line=$(tail -n 1 "$load_out")
}

gw_measuring() {
    i=0
    while ! grep -q '^gw_load: measuring' "$load_out.err" 2>/dev/null; do
        kill -0 "$load_pid" 2>/dev/null || return 1
        [ $i -lt 1200 ] || return 1
        sleep 0.05
        i=$((i + 1))
    done
}

memc_restart() {
    user=
    [ "$(id -u)" = 0 ] && user="-u root"
    # shellcheck disable=SC2086 # user is one option or none
    memcached -l 127.0.0.1 -p "$memc_port" -U 0 -t 1 -m 64 $user >>"$gw_bin/memcached.log" 2>&1 &
    memc_pid=$!
    i=0
    while [ $i -lt 100 ]; do
        daemon_listening "$memc_pid" "$memc_port" && return 0
        sleep 0.05
        i=$((i + 1))
    done
    echo "memcached did not start again on port $memc_port" >&2
    return 1
}

gw_stall() {
    kill -STOP "$memc_pid"
    sleep 1.5
    kill -CONT "$memc_pid"
    kill -USR2 "$load_pid" 2>/dev/null || true
}

gw_kill() {
    kill -KILL "$memc_pid"
    kill -USR1 "$load_pid" 2>/dev/null || true
    wait "$memc_pid" 2>/dev/null || true
    sleep 0.5
    memc_restart || return 1
    kill -USR2 "$load_pid" 2>/dev/null || true
}

gw_cleanup() {
    [ -z "${load_pid:-}" ] || kill "$load_pid" 2>/dev/null || true
    [ -z "${gw_pid:-}" ] || kill -KILL "$gw_pid" 2>/dev/null || true
    [ -z "${memc_pid:-}" ] || kill -CONT "$memc_pid" 2>/dev/null || true
    memc_stop
}

# gw_field NAME LINE: the value of NAME=... in LINE (empty if absent)
gw_field() {
    echo "$2" | tr ' ' '\n' | sed -n "s/^$1=//p" | head -n 1
}
