#!/bin/sh
# Extract every ```c block of README.md, bench/README.md and test/README.md, compile it
# strictly, and run each one that has a main(), so the documentation cannot rot.
# A block's file says where it came from (block-README-03.c: README.md's third).
#   readme.sh CC OUTDIR
set -u
cc=$1 out=$2
mkdir -p "$out"
rm -f "$out"/block-*.c
for md in README.md bench/README.md test/README.md; do
    awk -v out="$out" -v tag="$(echo "$md" | tr '/' '-' | sed 's/\.md$//')" '
        /^```c$/ { n++; file = sprintf("%s/block-%s-%02d.c", out, tag, n); inblock = 1; next }
        /^```/   { inblock = 0; next }
        inblock  { print > file }
    ' "$md"
done
urcu=$(pkg-config --libs liburcu-memb 2>/dev/null || echo -lurcu-memb -lurcu-common)
status=0
for src in "$out"/block-*.c; do
    [ -e "$src" ] || { echo "no C blocks found in the READMEs"; exit 1; }
    bin=${src%.c}
    if ! $cc -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Wpedantic -Werror -O2 -I. \
            "$src" -o "$bin" $urcu -pthread; then
        echo "README block $(basename "$src") does not compile"; status=1; continue
    fi
    # the server example runs until a signal: test/readme_server.sh drives it
    if head -1 "$src" | grep -q '^/\* echo_server\.c'; then
        continue
    fi
    if grep -q 'int main' "$src"; then
        timeout 60 "$bin" || { echo "README block $(basename "$src") failed when run"; status=1; }
    fi
done
exit $status
