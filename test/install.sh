#!/bin/sh
# `make install` into a temporary prefix, then build and run consumers the three ways
# users do: flags from pkg-config (lf: threads only; lf-reactor: liburcu-memb;
# lf-reactor-bp: liburcu-bp), CMake's find_package(lf) (lf::lf, lf::reactor, lf::reactor_bp),
# and lf.h alone copied into a bare directory with the README's own quick start and
# command (C11 and pthreads, nothing else). The README's Install lines are the ones
# run, so they cannot rot. Last, a DESTDIR install is staged and
# `make uninstall` must leave nothing behind.      install.sh CC OUTDIR
set -u
cc=$1
out=$(realpath -m "$2")
rm -rf "$out"
mkdir -p "$out"
fail() { echo "install test: $*"; exit 1; }
version=$(sed -n 's/^#define LF_VERSION "\(.*\)"/\1/p' lf.h)
[ -n "$version" ] || fail "no LF_VERSION in lf.h"

prefix=$out/prefix
make --no-print-directory install PREFIX="$prefix" BUILD="$out/build" > "$out/make-install.log" 2>&1 ||
    fail "make install PREFIX=$prefix failed (see $out/make-install.log)"
for f in include/lf/lf.h include/lf/lf_reactor.h include/lf/lf_bound.h share/pkgconfig/lf.pc \
         share/pkgconfig/lf-reactor.pc share/pkgconfig/lf-reactor-bp.pc \
         share/cmake/lf/lfConfig.cmake share/cmake/lf/lfConfigVersion.cmake; do
    [ -f "$prefix/$f" ] || fail "make install did not write $f"
done

echo "1. pkg-config"
export PKG_CONFIG_PATH="$prefix/share/pkgconfig"
[ "$(pkg-config --modversion lf)" = "$version" ] || fail "lf.pc's version is not $version"
# each module with the program that needs it; lf brings no liburcu
for m in lf:consumer_pool lf-reactor:consumer lf-reactor-bp:consumer; do
    mod=${m%%:*} src=${m#*:}
    [ "$(pkg-config --modversion "$mod")" = "$version" ] || fail "$mod.pc's version is not $version"
    # shellcheck disable=SC2046 # the flags are words
    $cc -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Wpedantic -Werror \
        -DLF_EXPECT_VERSION="\"$version\"" "test/install/$src.c" -o "$out/pc-$mod" \
        $(pkg-config --cflags --libs "$mod") || fail "$src.c does not build with $mod's flags"
    "$out/pc-$mod" || fail "the $mod build does not run"
done
pkg-config --libs --cflags lf | grep -q urcu && fail "lf.pc asks for liburcu: lf.h and lf_bound.h need threads only"
ldd "$out/pc-lf" | grep -q urcu && fail "the lf.h/lf_bound.h consumer linked liburcu"
pkg-config --cflags lf-reactor-bp | grep -q -- -DLF_RCU_BP || fail "lf-reactor-bp.pc does not define LF_RCU_BP"
# the README's own line, on the same program called server.c
cmd=$(awk '/^## Install/ { s = 1 } s && /pkg-config --cflags --libs lf-reactor/ { print; exit }' README.md)
[ -n "$cmd" ] || fail "no pkg-config line in README.md's Install section"
mkdir -p "$out/readme-pc"
cp test/install/consumer.c "$out/readme-pc/server.c"
(cd "$out/readme-pc" && eval "$(printf '%s' "$cmd" | sed "s|^cc |$cc -Werror |")" && ./server) ||
    fail "the README's pkg-config line does not give a working server: $cmd"
unset PKG_CONFIG_PATH

echo "2. CMake find_package(lf)"
cmake -S test/install -B "$out/cmake" -DCMAKE_C_COMPILER="$cc" -DCMAKE_PREFIX_PATH="$prefix" \
      -DLF_EXPECT_VERSION="$version" > "$out/cmake.log" 2>&1 ||
    { cat "$out/cmake.log"; fail "cmake cannot configure the consumer"; }
cmake --build "$out/cmake" >> "$out/cmake.log" 2>&1 ||
    { cat "$out/cmake.log"; fail "the consumers do not build with lf::lf, lf::reactor, lf::reactor_bp"; }
for p in consumer consumer_bp consumer_pool; do
    "$out/cmake/$p" || fail "the CMake build of $p does not run"
done
ldd "$out/cmake/consumer_pool" | grep -q urcu && fail "lf::lf linked liburcu"
# without pkg-config, lfConfig.cmake finds liburcu's libraries itself
cmake -S test/install -B "$out/cmake-nopc" -DCMAKE_C_COMPILER="$cc" -DCMAKE_PREFIX_PATH="$prefix" \
      -DLF_EXPECT_VERSION="$version" -DCMAKE_DISABLE_FIND_PACKAGE_PkgConfig=ON \
      > "$out/cmake-nopc.log" 2>&1 && cmake --build "$out/cmake-nopc" >> "$out/cmake-nopc.log" 2>&1 ||
    { cat "$out/cmake-nopc.log"; fail "lf::lf does not build without pkg-config"; }
for p in consumer consumer_bp consumer_pool; do
    "$out/cmake-nopc/$p" || fail "the CMake build of $p without pkg-config does not run"
done
# the README's two CMake lines, in the smallest project around them
mkdir -p "$out/readme-cmake"
cp test/install/consumer.c "$out/readme-cmake/server.c"
{
    printf 'cmake_minimum_required(VERSION 3.13)\nproject(server C)\nadd_executable(server server.c)\n'
    awk '/^## Install/ { s = 1 } s && /^```cmake$/ { c = 1; next } c && /^```/ { exit } c' README.md
} > "$out/readme-cmake/CMakeLists.txt"
grep -q 'lf::' "$out/readme-cmake/CMakeLists.txt" || fail "no CMake block in README.md's Install section"
cmake -S "$out/readme-cmake" -B "$out/readme-cmake/build" -DCMAKE_C_COMPILER="$cc" \
      -DCMAKE_PREFIX_PATH="$prefix" > "$out/readme-cmake.log" 2>&1 &&
    cmake --build "$out/readme-cmake/build" >> "$out/readme-cmake.log" 2>&1 &&
    "$out/readme-cmake/build/server" ||
    { cat "$out/readme-cmake.log"; fail "the README's CMake lines do not give a working server"; }
# a version nobody installed is refused, not silently taken
if cmake -S test/install -B "$out/cmake-v9" -DCMAKE_C_COMPILER="$cc" \
         -DCMAKE_PREFIX_PATH="$prefix" -DLF_WANT=9.0 > "$out/cmake-v9.log" 2>&1; then
    fail "find_package(lf 9.0) succeeded against $version"
fi

echo "3. lf.h alone in a bare directory, the README's quick start and command"
mkdir -p "$out/bare"
cp lf.h "$out/bare/"
awk '/^## Quick start: `lf.h`/ { s = 1 } s && /^```c$/ { c = 1; next } c && /^```/ { exit } c' \
    README.md > "$out/bare/quick.c"
cmd=$(awk '/^## Quick start: `lf.h`/ { s = 1 } s && /^```sh$/ { c = 1; next } c { print; exit }' README.md)
[ -s "$out/bare/quick.c" ] && [ -n "$cmd" ] || fail "no lf.h quick start found in README.md"
(cd "$out/bare" && eval "$(printf '%s' "$cmd" | sed "s|^cc |$cc |")") ||
    fail "the README's lf.h quick start does not build or run with lf.h alone: $cmd"

echo "4. DESTDIR staging, then make uninstall"
stage=$out/stage
make --no-print-directory install DESTDIR="$stage" PREFIX=/opt/lf BUILD="$out/build" \
    > "$out/stage.log" 2>&1 || fail "make install DESTDIR=$stage failed"
[ -f "$stage/opt/lf/include/lf/lf.h" ] || fail "DESTDIR install did not land under $stage/opt/lf"
grep -qx 'prefix=/opt/lf' "$stage/opt/lf/share/pkgconfig/lf.pc" ||
    fail "lf.pc must name the final prefix, not the staging directory"
for p in "$stage:/opt/lf" ":$prefix"; do
    make --no-print-directory uninstall DESTDIR="${p%%:*}" PREFIX="${p#*:}" > /dev/null 2>&1
done
left=$(find "$stage" "$prefix" -type f | head -5)
[ -z "$left" ] || fail "make uninstall left: $left"
echo "install test: ok (lf $version: pkg-config, CMake, lf.h alone, DESTDIR, uninstall)"
