#!/bin/sh
# bench/httpd.sh - JAWS on Leader/Followers: the lf HTTP server beside nginx and a
# thread per connection, under wrk.
#
#   bench/httpd.sh [BUILD_DIR]          (default: build/bench under the repository)
#   env: QUICK (0; 1: one round of 1 s per run), ROUNDS (3), SECS (3 s per run, after
#        a WARM 1 s run), CONNS ("16 256 1024"), THREADS (2: lf's threads), CC (cc)
#
# One directory, two files: small.txt (100 bytes) and 64k.bin (65,536). Rows:
#   lf       bench/httpd.c: lf_reactor, THREADS threads, sendfile, keep-alive
#   nginx.1  nginx (Debian's), 1 worker, sendfile on, tcp_nopush on, access log off
#   nginx.2  the same, 2 workers
#   tpc      bench/httpd_tpc.c: a thread per connection on the same file code as lf
# For each file and each number of connections, a run starts the server, runs
# `wrk -t2 -cN -dSECS --latency` against it, and stops it. The server's CPU is
# utime + stime from /proc/PID/stat, summed over its processes (nginx's master and
# workers), before and after wrk's run; divided by wrk's request count it is CPU us
# per request. A round runs every (file, connections) for every row, the row order
# rotating from round to round; each figure is the median over the rounds.
#
# nginx runs from our own configuration and a temporary prefix, on a loopback port,
# in the foreground (daemon off): the system's nginx service is never used. wrk,
# nginx and gnuplot are installed when missing (root, Debian); the package's own
# service is kept from starting (policy-rc.d during the install) and stopped if it
# runs. A row that cannot run is reported missing.
#
# Writes bench/results/httpd.csv (server,file,conns,rps,p99_us,cpu_us_per_req,
# errors,timeouts), httpd.raw (every run) and httpd.png when gnuplot is there. Exits 1
# if a run failed (a server did not start, wrk failed, or saw connect, read or write
# errors or non-2xx answers). A request that took over wrk's 2 s is a timeout: the
# server's tail, counted in its own column, not a failure.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${1:-$root/build/bench}
cc=${CC:-cc}
if [ "${QUICK:-0}" = 1 ]; then
    rounds=${ROUNDS:-1}; secs=${SECS:-1}; warm=${WARM:-0}
else
    rounds=${ROUNDS:-3}; secs=${SECS:-3}; warm=${WARM:-1}
fi
conns_list=${CONNS:-16 256 1024}
threads=${THREADS:-2}
results=$here/results
mkdir -p "$build" "$results"
started=$(date +%s)

# -- what it needs: wrk, nginx, gnuplot (Debian), installed as root ----------------------
missing=
command -v wrk >/dev/null 2>&1 || missing="$missing wrk"
[ -x /usr/sbin/nginx ] || command -v nginx >/dev/null 2>&1 || missing="$missing nginx-light"
command -v gnuplot >/dev/null 2>&1 || missing="$missing gnuplot-nox"
if [ -n "$missing" ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "httpd bench: installing$missing" >&2
        # nginx's package starts a system server on port 80 when it may: forbid
        # service starts during the install, and stop the service if it runs anyway
        policy=
        if [ ! -e /usr/sbin/policy-rc.d ]; then
            printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
            chmod 755 /usr/sbin/policy-rc.d
            policy=1
        fi
        # shellcheck disable=SC2086 # a list of packages
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing >"$build/apt-httpd.log" 2>&1 ||
            DEBIAN_FRONTEND=noninteractive sh -c "apt-get update -q && apt-get install -y -q $missing" \
                >>"$build/apt-httpd.log" 2>&1 ||
            echo "httpd bench: could not install$missing (see $build/apt-httpd.log)" >&2
        [ -z "$policy" ] || rm -f /usr/sbin/policy-rc.d
        if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet nginx 2>/dev/null; then
            systemctl stop nginx || true
            systemctl disable nginx >/dev/null 2>&1 || true
        fi
    else
        echo "httpd bench: not root, cannot install$missing (apt-get install$missing)" >&2
    fi
fi
if ! command -v wrk >/dev/null 2>&1; then
    echo "httpd bench: no wrk, nothing to measure with" >&2
    exit 1
fi
nginx=$(command -v nginx 2>/dev/null || echo /usr/sbin/nginx)

# 1,024 connections: wrk's sockets and the server's (the servers raise their own
# soft limit to the hard one, nginx through worker_rlimit_nofile)
# shellcheck disable=SC3045 # dash and bash have -n and -H
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

# -- build, and the files -----------------------------------------------------------------
cflags="-std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -O2 -Wall -Wextra -I$root -I$here"
urcu=$(pkg-config --cflags --libs liburcu-memb)
$cc $cflags -o "$build/httpd" "$here/httpd.c" $urcu -pthread
$cc $cflags -o "$build/httpd_tpc" "$here/httpd_tpc.c" -pthread
# a directory nginx's unprivileged workers may read
tmp=$(mktemp -d /tmp/lf-httpd-bench.XXXXXX)
www=$tmp/www
mkdir -p "$www"
head -c 100 /dev/zero | tr '\0' 'x' >"$www/small.txt"
head -c 65536 /dev/urandom >"$www/64k.bin"
chmod 755 "$tmp" "$www"
chmod 644 "$www"/*

# nginx's configuration for W workers on PORT, in its own prefix
nginx_conf() { # nginx_conf W PORT -> prefix directory
    p=$tmp/nginx.$1
    mkdir -p "$p"
    cat >"$p/nginx.conf" <<EOF
worker_processes $1;
daemon off;
pid $p/nginx.pid;
error_log $p/error.log warn;
worker_rlimit_nofile 65536;
events { worker_connections 8192; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 100000000;
    keepalive_timeout 15s;
    default_type application/octet-stream;
    types { text/plain txt; }
    client_body_temp_path $p/body;
    proxy_temp_path $p/proxy;
    fastcgi_temp_path $p/fastcgi;
    uwsgi_temp_path $p/uwsgi;
    scgi_temp_path $p/scgi;
    server {
        listen 127.0.0.1:$2;
        root $www;
    }
}
EOF
    echo "$p"
}

# a loopback port for nginx that no socket uses, below the ephemeral range (wrk's
# closing connections hold ports there, and nginx's bind would fail on one)
free_port() {
    n=$((12000 + $$ % 8000))
    while ss -tan 2>/dev/null | awk '{print $4}' | grep -q ":$n\$"; do n=$((n + 1)); done
    echo $n
}

pids=
stop_all() {
    for p in $pids; do kill -TERM "$p" 2>/dev/null || true; done
    for p in $pids; do wait "$p" 2>/dev/null || true; done
    pids=
}
trap 'stop_all; rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM

# start ROW: start the row's server, set $pid and $port
start() {
    out=$tmp/server.out
    : >"$out"
    case $1 in
    lf) "$build/httpd" -t "$threads" "$www" >"$out" 2>>"$build/httpd.err" & ;;
    tpc) "$build/httpd_tpc" "$www" >"$out" 2>>"$build/httpd.err" & ;;
    nginx.*)
        port=$(free_port)
        prefix=$(nginx_conf "${1#nginx.}" "$port")
        "$nginx" -p "$prefix" -c "$prefix/nginx.conf" -e "$prefix/error.log" \
            >"$out" 2>>"$build/httpd.err" &
        ;;
    esac
    pid=$!
    pids="$pids $pid"
    i=0
    while [ $i -lt 100 ]; do
        case $1 in
        nginx.*) ss -ltn 2>/dev/null | awk '{print $4}' | grep -q "^127.0.0.1:$port\$" && return 0 ;;
        *) port=$(awk '/^port /{print $2; exit}' "$out"); [ -n "$port" ] && return 0 ;;
        esac
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
        i=$((i + 1))
    done
    echo "httpd bench: $1 did not start" >&2
    return 1
}

# the CPU ticks of pid and its children (nginx's workers), threads included
ticks() {
    t=0
    for p in $1 $(pgrep -P "$1" 2>/dev/null); do
        # fields after the command's closing parenthesis: utime is the 12th, stime the 13th
        v=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | awk '{print $12 + $13}') || v=0
        t=$((t + ${v:-0}))
    done
    echo $t
}

raw=$results/httpd.raw
: >"$raw"
failed=0
hz=$(getconf CLK_TCK)
rows="lf nginx.1 nginx.2 tpc"
[ -x "$nginx" ] || { echo "httpd bench: nginx is missing, its rows too" >&2; rows="lf tpc"; }
nrows=$(echo $rows | wc -w)

# run ROW FILE CONNS ROUND: one run, one line into httpd.raw
run() {
    start "$1" || { failed=1; stop_all; return; }
    url=http://127.0.0.1:$port/$2
    [ "$warm" = 0 ] || wrk -t2 -c"$3" -d"$warm" "$url" >/dev/null 2>&1 || true
    t0=$(ticks "$pid")
    if ! wrk -t2 -c"$3" -d"$secs" --latency "$url" >"$tmp/wrk.out" 2>&1; then
        echo "httpd bench: wrk failed against $1" >&2
        failed=1
    fi
    t1=$(ticks "$pid")
    stop_all
    awk -v row="$1" -v file="$2" -v c="$3" -v r="$4" -v dt=$((t1 - t0)) -v hz="$hz" '
        function us(s) { v = s + 0; if (s ~ /us$/) return v; if (s ~ /ms$/) return v * 1000;
                         if (s ~ /[0-9]s$/) return v * 1000000; return v }
        /^ +99%/ { p99 = us($2) }
        / requests in / { n = $1 }
        /^Requests\/sec:/ { rps = $2 }
        /Socket errors:/ { gsub(/,/, ""); err += $4 + $6 + $8; to += $10 }
        /Non-2xx or 3xx responses:/ { err += $NF }
        END { printf "row=%s file=%s conns=%d round=%d rps=%.0f p99_us=%.0f cpu_us_per_req=%.2f requests=%d timeouts=%d errors=%d\n",
                     row, file, c, r, rps, p99, (n > 0 ? dt * 1000000 / hz / n : 0), n, to, err }' \
        "$tmp/wrk.out" | tee -a "$raw" | awk '{
        for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
        printf "  %-8s %-9s %5s conns %9.0f req/s  p99 %8.0f us  cpu %6.2f us/req  errors %d  timeouts %d\n",
            v["row"], v["file"], v["conns"], v["rps"], v["p99_us"], v["cpu_us_per_req"], v["errors"],
            v["timeouts"] }' >&2
    if tail -n 1 "$raw" | grep -qv ' errors=0$'; then
        echo "httpd bench: $1 answered with errors (wrk: $(grep -i 'error\|non-2xx' "$tmp/wrk.out" | tr '\n' ' '))" >&2
        failed=1
    fi
}

round=1
while [ "$round" -le "$rounds" ]; do
    echo "httpd bench: round $round of $rounds (rows: $rows; ${secs}s per run)" >&2
    skip=$(((round - 1) % nrows))
    order=$(echo $rows | tr ' ' '\n' | { tail -n +$((skip + 1)); } | tr '\n' ' ')
    order="$order $(echo $rows | tr ' ' '\n' | head -n "$skip" | tr '\n' ' ')"
    for file in small.txt 64k.bin; do
        for c in $conns_list; do
            for row in $order; do
                run "$row" "$file" "$c" "$round"
            done
        done
    done
    round=$((round + 1))
done

# -- the table: medians over the rounds ---------------------------------------------------
awk -v out="$results/httpd.csv" -v rows="$rows" '
    function median(list,   a, n, i, j, t) {
        n = split(list, a, " ")
        for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] + 0 > t + 0; j--) a[j + 1] = a[j]; a[j + 1] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    {
        for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
        k = v["row"] SUBSEP v["file"] SUBSEP v["conns"]
        if (!(k in rps)) { keys[++nk] = k }
        rps[k] = rps[k] " " v["rps"]; p99[k] = p99[k] " " v["p99_us"]
        cpu[k] = cpu[k] " " v["cpu_us_per_req"]; err[k] += v["errors"]; tmo[k] += v["timeouts"]
    }
    END {
        print "server,file,conns,rps,p99_us,cpu_us_per_req,errors,timeouts" > out
        printf "%-8s %-9s %6s %10s %10s %12s %7s %8s\n", "server", "file", "conns", "req/s", "p99 us", "CPU us/req", "errors", "timeouts"
        for (i = 1; i <= nk; i++) {
            split(keys[i], f, SUBSEP)
            line = sprintf("%s,%s,%s,%.0f,%.0f,%.2f,%d,%d", f[1], f[2], f[3], median(rps[keys[i]]),
                           median(p99[keys[i]]), median(cpu[keys[i]]), err[keys[i]], tmo[keys[i]])
            print line > out
            printf "%-8s %-9s %6s %10.0f %10.0f %12.2f %7d %8d\n", f[1], f[2], f[3], median(rps[keys[i]]),
                   median(p99[keys[i]]), median(cpu[keys[i]]), err[keys[i]], tmo[keys[i]]
        }
    }' "$raw" >&2
if command -v gnuplot >/dev/null 2>&1; then
    gnuplot -e "dir='$results'" "$here/httpd.gp" 2>"$build/httpd-gnuplot.log" ||
        echo "httpd bench: gnuplot failed (see $build/httpd-gnuplot.log)" >&2
fi
echo "httpd bench: took $(($(date +%s) - started)) s; machine: $(nproc) CPUs, $(uname -r)" >&2
exit "$failed"
