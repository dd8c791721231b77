# bench/memc_server.sh - sourced by test/memcached.sh and bench/memc.sh: install what
# the memcached runs need, start a private memcached on loopback, stop it.
#
#   memc_need COMMAND-OR-FILE PACKAGE LOG   install PACKAGE (Debian, as root) unless
#                                           COMMAND-OR-FILE is there; 1 if it cannot
#   memc_start DIR                          memcached on 127.0.0.1, a free port, one
#                                           worker thread, 64 MiB, no UDP; sets
#                                           memc_port and memc_pid (log in DIR)
#   memc_restart DIR                        kill it (SIGKILL), reap it, and start a
#                                           new one on the same port (memc_pid)
#   memc_stop                               stop it (if still running) and reap it

memc_need() {
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

# memc__listening PID PORT: PID holds a socket listening on 127.0.0.1:PORT (Linux
# procfs: the socket's inode in /proc/net/tcp, among PID's descriptors)
memc__listening() {
    inode=$(awk -v a="0100007F:$(printf '%04X' "$2")" '$2 == a && $4 == "0A" { print $10 }' \
        /proc/net/tcp)
    [ -n "$inode" ] || return 1
    for fd in "/proc/$1/fd"/*; do
        [ "$(readlink "$fd" 2>/dev/null)" = "socket:[$inode]" ] && return 0
    done
    return 1
}

# memc__start_on PORT DIR: memcached on 127.0.0.1:PORT (memc_pid); 1 if it did not
# come up within 5 s (the port taken, say)
memc__start_on() {
    user=
    [ "$(id -u)" = 0 ] && user="-u root" # memcached refuses to run as root without it
    # shellcheck disable=SC2086 # user is one option or none
    memcached -l 127.0.0.1 -p "$1" -U 0 -t 1 -m 64 $user >>"$2/memcached.log" 2>&1 &
    memc_pid=$!
    i=0
    while [ $i -lt 100 ]; do # up to 5 s: ours on that port, or gone (port taken)
        memc__listening "$memc_pid" "$1" && return 0
        kill -0 "$memc_pid" 2>/dev/null || break
        sleep 0.05
        i=$((i + 1))
    done
    memc_stop
    return 1
}

memc_start() {
    memc_pid=
    tries=0
    while [ $tries -lt 20 ]; do
        tries=$((tries + 1))
        memc_port=$((20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 40000))
        memc__start_on "$memc_port" "$1" && return 0
    done
    echo "memcached did not start (see $1/memcached.log)" >&2
    return 1
}

memc_restart() {
    kill -KILL "$memc_pid" 2>/dev/null || true
    wait "$memc_pid" 2>/dev/null || true
    tries=0
    while [ $tries -lt 10 ]; do # (memcached binds with SO_REUSEADDR: at once, usually)
        tries=$((tries + 1))
        memc__start_on "$memc_port" "$1" && return 0
        sleep 0.2
    done
    echo "memcached did not restart on port $memc_port (see $1/memcached.log)" >&2
    return 1
}

memc_stop() {
    if [ -n "${memc_pid:-}" ]; then
        kill "$memc_pid" 2>/dev/null || true
        wait "$memc_pid" 2>/dev/null || true
        memc_pid=
    fi
}
