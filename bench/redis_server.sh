# shellcheck shell=sh
# bench/redis_server.sh - sourced by test/redis.sh and bench/redis.sh: install what
# the Redis runs need, start a private redis-server on loopback, stop it.
#
#   redis_need COMMAND-OR-FILE PACKAGE LOG  install PACKAGE (Debian, as root) unless
#                                           COMMAND-OR-FILE is there; 1 if it cannot
#   redis_start DIR                         redis-server on 127.0.0.1, a free port, no
#                                           persistence (--save '', --appendonly no),
#                                           its own working directory DIR/redis.d;
#                                           sets redis_port and redis_pid (log in DIR)
#   redis_restart DIR                       kill it (SIGKILL), reap it, and start a
#                                           new, empty one on the same port
#   redis_stop                              stop it (if still running) and reap it

redis_need() {
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

# redis__listening PID PORT: PID holds a socket listening on 127.0.0.1:PORT (Linux
# procfs: the socket's inode in /proc/net/tcp, among PID's descriptors)
redis__listening() {
    inode=$(awk -v a="0100007F:$(printf '%04X' "$2")" '$2 == a && $4 == "0A" { print $10 }' \
        /proc/net/tcp)
    [ -n "$inode" ] || return 1
    for fd in "/proc/$1/fd"/*; do
        [ "$(readlink "$fd" 2>/dev/null)" = "socket:[$inode]" ] && return 0
    done
    return 1
}

# redis__start_on PORT DIR: redis-server on 127.0.0.1:PORT (redis_pid); 1 if it did
# not come up within 5 s (the port taken, say). In the foreground of a background
# job (--daemonize no), so its pid is ours to kill and reap; the package's own
# service (if one runs) is left alone.
redis__start_on() {
    mkdir -p "$2/redis.d"
    redis-server --port "$1" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
        --dir "$2/redis.d" --logfile '' >>"$2/redis.log" 2>&1 &
    redis_pid=$!
    i=0
    while [ $i -lt 100 ]; do # up to 5 s: ours on that port, or gone (port taken)
        redis__listening "$redis_pid" "$1" && return 0
        kill -0 "$redis_pid" 2>/dev/null || break
        sleep 0.05
        i=$((i + 1))
    done
    redis_stop
    return 1
}

redis_start() {
    redis_pid=
    tries=0
    while [ $tries -lt 20 ]; do
        tries=$((tries + 1))
        redis_port=$((20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 40000))
        redis__start_on "$redis_port" "$1" && return 0
    done
    echo "redis-server did not start (see $1/redis.log)" >&2
    return 1
}

redis_restart() {
    kill -KILL "$redis_pid" 2>/dev/null || true
    wait "$redis_pid" 2>/dev/null || true
    tries=0
    while [ $tries -lt 10 ]; do # (Redis binds with SO_REUSEADDR: at once, usually)
        tries=$((tries + 1))
        redis__start_on "$redis_port" "$1" && return 0
        sleep 0.2
    done
    echo "redis-server did not restart on port $redis_port (see $1/redis.log)" >&2
    return 1
}

redis_stop() {
    if [ -n "${redis_pid:-}" ]; then
        kill "$redis_pid" 2>/dev/null || true
        wait "$redis_pid" 2>/dev/null || true
        redis_pid=
    fi
}
