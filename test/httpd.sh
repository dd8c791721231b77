#!/bin/sh
# The benchmark's HTTP server (bench/httpd.c), built plain and under ASan+UBSan, run
# on a directory of test files with short timeouts and driven by test/httpd_client.c:
# GET and HEAD byte for byte, pipelining, the errors, truncated requests, huge
# headers, a slowloris, clients that stop reading, the idle timeout, empty lines,
# a request fuzzer, and (plain) a server out of descriptors; then SIGTERM: it must exit 0 (ASan: nothing leaked). The thread-per-
# connection server (bench/httpd_tpc.c, the same file code) gets the checks that do
# not need its timeouts, plain.
#   httpd.sh CC OUTDIR        (env FUZZ_MS: the fuzzer's time per build, 3000)
set -u
cc=$1 out=$2
fuzz_ms=${FUZZ_MS:-3000}
idle_ms=2000 req_ms=1000
mkdir -p "$out/www/sub"
urcu=$(pkg-config --libs liburcu-memb 2>/dev/null || echo -lurcu-memb -lurcu-common)
strict="-std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Wpedantic -Werror -I. -Ibench"
san="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all"

# the files: a small text, 64 KiB and 3 MiB of bytes of every value, two index pages
head -c 100 /dev/urandom | od -An -tx1 | tr -d ' \n' | head -c 100 >"$out/www/small.txt"
head -c 65536 /dev/urandom >"$out/www/big.bin"
head -c 3145728 /dev/urandom >"$out/www/large.bin"
echo '<html><body>lf httpd test</body></html>' >"$out/www/index.html"
cp "$out/www/index.html" "$out/www/sub/index.html"

$cc $strict -O2 -o "$out/httpd_client" test/httpd_client.c -pthread || exit 1
status=0
pid=
trap '[ -n "$pid" ] && kill -KILL $pid 2>/dev/null' EXIT

# start NAME BINARY ARGS...: run it, wait for its "port N" line, set $pid and $port
start() {
    name=$1
    shift
    : >"$out/$name.out" # before the start: the shell truncates it only in the child
    "$@" >"$out/$name.out" 2>"$out/$name.err" &
    pid=$!
    port=
    for _ in $(seq 100); do
        port=$(awk '/^port / { print $2; exit }' "$out/$name.out")
        [ -n "$port" ] && return 0
        sleep 0.1
    done
    echo "$name did not start"; cat "$out/$name.err"; kill -KILL $pid 2>/dev/null; pid=
    return 1
}

for v in plain asan; do
    flags="-O2"
    [ $v = asan ] && flags=$san
    bin=$out/httpd.$v
    if ! $cc $strict $flags -o "$bin" bench/httpd.c $urcu -pthread; then
        echo "bench/httpd.c does not compile ($v)"; status=1; continue
    fi
    start "httpd.$v" "$bin" -t 2 -i $idle_ms -r $req_ms "$out/www" || { status=1; continue; }
    if ! timeout 120 "$out/httpd_client" "$port" "$out/www" $idle_ms $req_ms "$fuzz_ms"; then
        echo "the checks failed against httpd ($v)"; status=1
    fi
    kill -TERM $pid
    wait $pid
    rc=$?
    pid=
    if [ $rc -ne 0 ]; then
        echo "httpd ($v) did not exit 0 on SIGTERM (rc $rc)"; status=1
    fi
    if grep -q 'ERROR\|runtime error' "$out/httpd.$v.err"; then
        echo "httpd ($v) reported errors:"; cat "$out/httpd.$v.err"; status=1
    fi
done

# drive WHAT SECONDS FUZZ_MS [MODE]: the client against the server just started, then
# stop the server
drive() {
    what=$1 secs=$2
    shift 2
    timeout "$secs" "$out/httpd_client" "$port" "$out/www" $idle_ms $req_ms "$@" ||
        { echo "the checks failed against $what"; status=1; }
    kill -TERM $pid
    wait $pid 2>/dev/null
    pid=
}

# out of descriptors: 40 for the server, 80 clients; a file it cannot open is a 500
if start httpd.emfile sh -c 'ulimit -n 40 && exec "$0" "$@"' "$out/httpd.plain" -t 2 \
    -i $idle_ms -r $req_ms "$out/www"; then
    drive "httpd out of descriptors" 60 0 emfile
else
    status=1
fi

if $cc $strict -O2 -o "$out/httpd_tpc" bench/httpd_tpc.c -pthread; then
    if start httpd_tpc "$out/httpd_tpc" -i $idle_ms "$out/www"; then
        drive httpd_tpc 120 1000 basic
    else
        status=1
    fi
else
    echo "bench/httpd_tpc.c does not compile"; status=1
fi
exit $status
