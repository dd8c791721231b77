#!/bin/sh
# test/warnings.sh OUTDIR - the headers under wide warning sets, as people who paste
# them into their own code compile: clang's -Weverything and a long gcc list, C and
# C++, every policy x synchronizer x backend, all three headers in one file, -Werror.
# Every warning left out is listed below with the reason.
set -u
[ $# -eq 1 ] || { echo "usage: test/warnings.sh OUTDIR" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
out=$1
mkdir -p "$out"
printf '#define LF_BOUND_REACTOR 1\n#include "lf_bound.h"\n' > "$out/all.c"
cp "$out/all.c" "$out/all.cc"

posix="-D_POSIX_C_SOURCE=200809L"
# clang, C: everything, but
#   -Wpadded                       a struct's padding is ours to choose (and reported
#                                  for every struct with a pointer after an int)
#   -Wdeclaration-after-statement  C99 and later allow it; the headers are C11
clang_c="-std=c11 $posix -Weverything -Wno-padded -Wno-declaration-after-statement"
# clang, C++: everything, but -Wpadded (as above) and
#   -Wc++98-compat(-pedantic)      the C++ we compile as is C++11 and later
#   -Wold-style-cast               a C header casts the C way
#   -Wzero-as-null-pointer-constant   a C header says NULL (glibc's is __null in C++)
#   -Wreserved-identifier, -Wreserved-macro-identifier
#                                  our private names are lf__*: C++ reserves every
#                                  name with a double underscore, C only leading ones
clang_cxx="-std=c++17 $posix -Weverything -Wno-padded -Wno-c++98-compat -Wno-c++98-compat-pedantic
  -Wno-old-style-cast -Wno-zero-as-null-pointer-constant -Wno-reserved-identifier
  -Wno-reserved-macro-identifier"
# gcc: the useful warnings outside -Wall -Wextra, C and C++ (C++: not -Wold-style-cast,
# as above, nor -Wuseless-cast, whose verdict changes with the ABI's type widths)
gcc_both="-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion -Wcast-qual
  -Wcast-align -Wlogical-op -Wredundant-decls -Wduplicated-cond -Wduplicated-branches
  -Wnull-dereference -Wdouble-promotion -Wformat=2 -Wundef -Wwrite-strings -Wvla
  -Wmissing-declarations -Wswitch-enum -Wfloat-equal"
gcc_c="-std=c11 $posix $gcc_both -Wstrict-prototypes -Wmissing-prototypes
  -Wold-style-definition -Wjump-misses-init -Wbad-function-cast -Wnested-externs"
gcc_cxx="-std=c++17 $posix $gcc_both -Wzero-as-null-pointer-constant"

status=0 runs=0
for b in EPOLL POLL SELECT; do
    for v in LIFO-FUTEX LIFO-PTHREAD FIFO-FUTEX FIFO-PTHREAD HEAP-FUTEX HEAP-PTHREAD CONDVAR-FUTEX; do
        d="-DLF_PROMOTE=LF_PROMOTE_${v%-*} -DLF_SYNC=LF_SYNC_${v#*-} -DLF_REACTOR_BACKEND=LF_REACTOR_$b"
        for c in "clang $clang_c -x c" "clang++ $clang_cxx -x c++" "gcc $gcc_c -x c" "g++ $gcc_cxx -x c++"; do
            set -- $c
            cc=$1
            src=$out/all.c
            case $cc in *++) src=$out/all.cc ;; esac
            runs=$((runs + 1))
            # shellcheck disable=SC2086
            if ! $c -Werror $d -fsyntax-only -I"$root" "$src" > "$out/last.log" 2>&1; then
                echo "warnings: $cc, $v, $b:"
                head -20 "$out/last.log"
                status=1
            fi
        done
    done
done
echo "warnings: $runs compilations, $([ $status = 0 ] && echo quiet || echo NOT quiet)"
exit $status
