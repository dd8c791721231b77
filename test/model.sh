#!/bin/sh
# test/model.sh OUTDIR - exhaustive model checking of the protocols in test/model/
# (spin). Each model is checked as the header is (FIXED=1: spin must find no error)
# and broken on purpose (FIXED=0: spin must find the error), so a model that could
# not fail does not pass. Prints the states explored per model. MODEL_JOBS (default
# 2) runs that many verifications at once, as LINT_JOBS does for test/lint.sh.
set -u

if [ "${1-}" = --job ]; then
    # --job SRC NAME FIXED: one verification, in its own directory; prints its verdict
    # and exits 1 if it is not the expected one.
    m=$2/$3.pml name=$3 fixed=$4
    dir=$name.$fixed
    rm -rf "$dir" && mkdir "$dir" && cd "$dir" || exit 2
    # The broken protocol is searched breadth first where spin allows it (no hidden
    # variables): the shortest error, found at once; every model checks safety only
    # (assertions and end states), which a breadth-first search covers.
    bfs=; [ "$fixed" = 0 ] && ! grep -q '^hidden' "$m" && bfs=-DBFS
    if ! spin -DFIXED="$fixed" -a "$m" >spin.log 2>&1 ||
        ! ${CC:-cc} -O2 -DVECTORSZ=4096 $bfs -o pan pan.c >cc.log 2>&1; then
        echo "model $name FIXED=$fixed: does not build (see $(pwd))"
        exit 1
    fi
    opt=-a; [ -n "$bfs" ] && opt=  # (pan takes no -a breadth first)
    ./pan $opt -m100000 >pan.log 2>&1
    errors=$(sed -n 's/.*errors: \([0-9][0-9]*\).*/\1/p' pan.log)
    states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' pan.log)
    if [ -z "$errors" ]; then
        echo "model $name FIXED=$fixed: no verdict (see $(pwd)/pan.log)"
        exit 1
    elif [ "$fixed" = 1 ] &&
        grep -q "max search depth too small\|Search not completed\|out of memory" pan.log; then
        echo "model $name: the search was cut short, it proves nothing (see $(pwd)/pan.log)"
        exit 1
    elif [ "$fixed" = 1 ] && [ "$errors" -ne 0 ]; then
        echo "model $name: $errors error(s) in the header's protocol (see $(pwd)/pan.log)"
        exit 1
    elif [ "$fixed" = 0 ] && [ "$errors" -eq 0 ]; then
        echo "model $name: the broken protocol passed: the model cannot fail"
        exit 1
    elif [ "$fixed" = 0 ] && ! grep -q "^pan:1: \(assertion violated\|invalid end state\)" pan.log; then
        # an error, but not one the model checks for: a slip in the model (an index
        # out of range, say) or pan's own trouble, which proves nothing either
        echo "model $name FIXED=0: the error found is not a broken check: $(grep -m1 '^pan:1:' pan.log)"
        exit 1
    fi
    echo "model $name FIXED=$fixed: $errors error(s) as expected, $states states"
    exit 0
fi

[ $# -eq 1 ] || { echo "usage: test/model.sh OUTDIR" >&2; exit 2; }
command -v spin >/dev/null 2>&1 || { echo "model: spin not found (make setup)" >&2; exit 2; }
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
src=$(cd "$(dirname "$0")/model" && pwd)
mkdir -p "$1" && cd "$1" || exit 2
# one job per line: SRC NAME FIXED, the largest models first (the tail is short);
# xargs exits non-zero if any job did
# shellcheck disable=SC2045 # our own file names, no spaces: ls -S orders by size
for m in $(ls -S "$src"/*.pml); do
    for fixed in 1 0; do
        echo "$src $(basename "$m" .pml) $fixed"
    done
done | xargs -P "${MODEL_JOBS:-2}" -L 1 sh "$self" --job
