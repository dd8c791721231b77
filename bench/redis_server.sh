# shellcheck shell=sh
# bench/redis_server.sh - sourced by test/redis.sh and bench/redis.sh, after
# bench/daemon.sh (daemon_need installs redis-server): start a private redis-server
# on loopback, stop it.
#
#   redis_start DIR                         redis-server on 127.0.0.1, a free port, no
#                                           persistence (--save '', --appendonly no),
#                                           its own working directory DIR/redis.d;
#                                           sets redis_port and redis_pid (log in DIR)
#   redis_restart DIR                       kill it (SIGKILL), reap it, and start a
#                                           new, empty one on the same port
#   redis_stop                              stop it (if still running) and reap it

# redis__start_on PORT DIR: redis-server on 127.0.0.1:PORT (redis_port, redis_pid); 1
# if it did not come up within 5 s (the port taken, say). In the foreground of a
# background job (--daemonize no), so its pid is ours to kill and reap; the package's
# own service (if one runs) is left alone.
redis__start_on() {
    redis_port=$1
    mkdir -p "$2/redis.d"
    redis-server --port "$1" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
        --dir "$2/redis.d" --logfile '' >>"$2/redis.log" 2>&1 &
    redis_pid=$!
    daemon_up "$redis_pid" "$1" && return 0
    redis_stop
    return 1
}

redis_start() {
    redis_pid=
    daemon_start redis-server "$1/redis.log" redis__start_on "$1"
}

redis_restart() {
    daemon_restart redis-server "$1/redis.log" redis__start_on "$redis_port" "$1" "$redis_pid"
}

redis_stop() {
    daemon_stop "${redis_pid:-}"
    redis_pid=
}
