#!/bin/sh
# Make sure this machine has what `make test` and `make bench` need; `setup.sh full`
# adds what only `make test-full` uses (gcc -m32, musl). As root on Debian it
# installs what is missing; otherwise it prints the command to run.
set -u
full=${1:-}
pkgs="gcc g++ clang lld libclang-rt-dev make pkg-config cmake cppcheck clang-tidy spin liburcu-dev memcached redis-server"
[ "$full" = full ] && pkgs="$pkgs gcc-multilib musl-tools"
missing=""
for tool in gcc g++ clang clang++ make pkg-config cmake cppcheck clang-tidy spin timeout memcached redis-server; do
    command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
pkg-config --exists 'liburcu-memb >= 0.13' 2>/dev/null || missing="$missing liburcu"
if [ "$full" = full ]; then
    command -v musl-gcc >/dev/null 2>&1 || missing="$missing musl-gcc"
    probe=$(mktemp -d)
    printf 'int main(void){return 0;}\n' > "$probe/p.c"
    gcc -m32 "$probe/p.c" -o "$probe/p" >/dev/null 2>&1 || missing="$missing gcc-multilib"
    rm -rf "$probe"
fi
if command -v clang >/dev/null 2>&1; then
    # clang's sanitizer runtimes come in their own package on Debian
    probe=$(mktemp -d)
    printf 'int main(void){return 0;}\n' > "$probe/p.c"
    clang -fsanitize=thread "$probe/p.c" -o "$probe/p" >/dev/null 2>&1 || missing="$missing clang-sanitizer-runtime"
    rm -rf "$probe"
fi
[ -z "$missing" ] && exit 0

echo "setup: missing:$missing"
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: apt-get install -y $pkgs"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null && apt-get install -y -qq $pkgs >/dev/null || {
        echo "setup: apt-get failed"; exit 1; }
    exit 0
fi
echo "setup: run as root:  apt-get update && apt-get install -y $pkgs"
exit 1
