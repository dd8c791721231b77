# shellcheck shell=sh
# bench/daemon.sh - sourced before bench/memc_server.sh and bench/redis_server.sh (and
# by the scripts that source those): what starting a private server on loopback takes
# whichever server it is, so that each of those files says only how its own server is
# started. POSIX sh, Linux (procfs).
#
#   daemon_need COMMAND-OR-FILE PACKAGE LOG  install PACKAGE (Debian, as root) unless
#                                           COMMAND-OR-FILE is there; 1 if it cannot
#   daemon_listening PID PORT               PID holds a socket listening on
#                                           127.0.0.1:PORT
#   daemon_up PID PORT                      wait (5 s at most) until PID listens on
#                                           127.0.0.1:PORT; 1 if it exits first (the
#                                           port taken, say) or never does
#   daemon_start NAME LOG START_ON DIR      START_ON PORT DIR (a function that starts
#                                           the server and waits for it) on a random
#                                           port from 20000 to 59999, up to 20 ports;
#                                           1, and NAME and LOG in a message, if none
#   daemon_restart NAME LOG START_ON PORT DIR PID   kill PID (SIGKILL), reap it, and
#                                           START_ON PORT DIR again, up to 10 times
#                                           0.2 s apart (the port may still be held)
#   daemon_stop PID                         stop PID (if not empty, and still running)
#                                           and reap it

daemon_need() {
    if [ -e "$1" ] || command -v "$1" >/dev/null 2>&1; then return 0; fi
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing $2" >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$2" >>"$3" 2>&1 ||
            { apt-get update -q >>"$3" 2>&1 &&
              DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$2" >>"$3" 2>&1; } || true
    else
        echo "not root: cannot install $2 (apt-get install $2)" >&2
    fi
    [ -e "$1" ] || command -v "$1" >/dev/null 2>&1 || { echo "cannot install $2 (see $3)" >&2; return 1; }
}

# the socket's inode in /proc/net/tcp, among PID's descriptors: the server we started
# is the one listening, not another process that has the port
daemon_listening() {
    inode=$(awk -v a="0100007F:$(printf '%04X' "$2")" '$2 == a && $4 == "0A" { print $10 }' \
        /proc/net/tcp)
    [ -n "$inode" ] || return 1
    for fd in "/proc/$1/fd"/*; do
        [ "$(readlink "$fd" 2>/dev/null)" = "socket:[$inode]" ] && return 0
    done
    return 1
}

daemon_up() {
    i=0
    while [ $i -lt 100 ]; do # up to 5 s: ours on that port, or gone (port taken)
        daemon_listening "$1" "$2" && return 0
        kill -0 "$1" 2>/dev/null || return 1
        sleep 0.05
        i=$((i + 1))
    done
    return 1
}

daemon_start() {
    tries=0
    while [ $tries -lt 20 ]; do
        tries=$((tries + 1))
        "$3" $((20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 40000)) "$4" && return 0
    done
    echo "$1 did not start (see $2)" >&2
    return 1
}

daemon_restart() {
    kill -KILL "$6" 2>/dev/null || true
    wait "$6" 2>/dev/null || true
    tries=0
    while [ $tries -lt 10 ]; do # (the servers bind with SO_REUSEADDR: at once, usually)
        tries=$((tries + 1))
        "$3" "$4" "$5" && return 0
        sleep 0.2
    done
    echo "$1 did not restart on port $4 (see $2)" >&2
    return 1
}

daemon_stop() {
    if [ -n "$1" ]; then
        kill "$1" 2>/dev/null || true
        wait "$1" 2>/dev/null || true
    fi
}
