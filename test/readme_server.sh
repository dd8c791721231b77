#!/bin/sh
# The README's server example (the ```c block that starts with "/* echo_server.c"),
# built as the README says and under ASan+UBSan, run with a 1 s idle timeout and
# driven by test/readme_client.c; then SIGTERM: it must exit 0. Its connection handler
# also serves a client that half-closes (test/readme_halfclose.c).
#   readme_server.sh CC OUTDIR
set -u
cc=$1 out=$2
mkdir -p "$out"
awk '/^```c$/ { inblock = 1; n = 0; next }
     /^```/   { inblock = 0; next }
     inblock && n++ == 0 && /^\/\* echo_server\.c/ { take = 1 }
     inblock && take { print }
     !inblock { take = 0 }' README.md > "$out/echo_server.c"
[ -s "$out/echo_server.c" ] || { echo "README.md has no echo_server.c block"; exit 1; }
urcu=$(pkg-config --libs liburcu-memb 2>/dev/null || echo -lurcu-memb -lurcu-common)
strict="-std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Wpedantic -Werror -I."
san="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all"
$cc $strict -O2 -o "$out/readme_client" test/readme_client.c -pthread || exit 1
status=0
for v in plain asan; do
    flags="-O2"
    [ $v = asan ] && flags=$san
    bin=$out/echo_server.$v
    if ! $cc $strict $flags -o "$bin" "$out/echo_server.c" $urcu -pthread; then
        echo "the README's echo_server.c does not compile ($v)"; status=1; continue
    fi
    "$bin" 0 1000 > "$out/server.$v.out" 2> "$out/server.$v.err" &
    pid=$!
    port=
    for _ in $(seq 100); do
        port=$(awk '/^listening on port/ { print $4 }' "$out/server.$v.out")
        [ -n "$port" ] && break
        sleep 0.1
    done
    if [ -z "$port" ]; then
        echo "echo_server ($v) did not start"; kill -9 $pid 2>/dev/null; status=1; continue
    fi
    timeout 120 "$out/readme_client" "$port" 1000 || { echo "the client failed against echo_server ($v)"; status=1; }
    kill -TERM $pid
    wait $pid
    rc=$?
    if [ $rc -ne 0 ] || ! grep -q "dispatches" "$out/server.$v.out"; then
        echo "echo_server ($v) did not exit 0 on SIGTERM (rc $rc)"; cat "$out/server.$v.err"; status=1
    fi
    # its connection handler against a client that half-closes (test/readme_halfclose.c)
    if ! $cc $strict $flags -Wno-unused-function -Itest -DECHO_SERVER="\"$out/echo_server.c\"" \
            -o "$out/halfclose.$v" test/readme_halfclose.c $urcu -pthread ||
        ! timeout 60 "$out/halfclose.$v"; then
        echo "the README's server lost output to a client that half-closed ($v)"; status=1
    fi
done
exit $status
