# shellcheck shell=sh
# bench/memc_server.sh - sourced by test/memcached.sh and bench/memc.sh (and the
# gateway's scripts), after bench/daemon.sh (daemon_need installs memcached): start a
# private memcached on loopback, stop it.
#
#   memc_start DIR                          memcached on 127.0.0.1, a free port, one
#                                           worker thread, 64 MiB, no UDP; sets
#                                           memc_port and memc_pid (log in DIR)
#   memc_restart DIR                        kill it (SIGKILL), reap it, and start a
#                                           new one on the same port (memc_pid)
#   memc_stop                               stop it (if still running) and reap it

# memc__start_on PORT DIR: memcached on 127.0.0.1:PORT (memc_port, memc_pid); 1 if it
# did not come up within 5 s (the port taken, say)
memc__start_on() {
    memc_port=$1
    user=
    [ "$(id -u)" = 0 ] && user="-u root" # memcached refuses to run as root without it
    # shellcheck disable=SC2086 # user is one option or none
    memcached -l 127.0.0.1 -p "$1" -U 0 -t 1 -m 64 $user >>"$2/memcached.log" 2>&1 &
    memc_pid=$!
    daemon_up "$memc_pid" "$1" && return 0
    memc_stop
    return 1
}

memc_start() {
    memc_pid=
    daemon_start memcached "$1/memcached.log" memc__start_on "$1"
}

memc_restart() {
    daemon_restart memcached "$1/memcached.log" memc__start_on "$memc_port" "$1" "$memc_pid"
}

memc_stop() {
    daemon_stop "${memc_pid:-}"
    memc_pid=
}
