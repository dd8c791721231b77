#!/bin/sh
# test/model.sh OUTDIR - exhaustive model checking of the protocols in test/model/
# (spin). Each model is checked as the header is (FIXED=1: spin must find no error)
# and broken on purpose (FIXED=0: spin must find the error), so a model that could
# not fail does not pass. Prints the states explored per model.
set -u
[ $# -eq 1 ] || { echo "usage: test/model.sh OUTDIR" >&2; exit 2; }
command -v spin >/dev/null 2>&1 || { echo "model: spin not found (make setup)" >&2; exit 2; }
src=$(cd "$(dirname "$0")/model" && pwd)
mkdir -p "$1" && cd "$1" || exit 2
status=0
for m in "$src"/*.pml; do
    name=$(basename "$m" .pml)
    for fixed in 1 0; do
        dir=$name.$fixed
        rm -rf "$dir" && mkdir "$dir" && cd "$dir" || exit 2
        if ! spin -DFIXED=$fixed -a "$m" >spin.log 2>&1 ||
            ! ${CC:-cc} -O2 -DVECTORSZ=4096 -o pan pan.c >cc.log 2>&1; then
            echo "model $name FIXED=$fixed: does not build (see $(pwd))"
            status=1
            cd ..
            continue
        fi
        ./pan -a -m100000 >pan.log 2>&1
        errors=$(sed -n 's/.*errors: \([0-9][0-9]*\).*/\1/p' pan.log)
        states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' pan.log)
        if [ -z "$errors" ]; then
            echo "model $name FIXED=$fixed: no verdict (see $(pwd)/pan.log)"
            status=1
        elif [ "$fixed" = 1 ] && [ "$errors" -ne 0 ]; then
            echo "model $name: $errors error(s) in the header's protocol (see $(pwd)/pan.log)"
            status=1
        elif [ "$fixed" = 0 ] && [ "$errors" -eq 0 ]; then
            echo "model $name: the broken protocol passed: the model cannot fail"
            status=1
        else
            echo "model $name FIXED=$fixed: $errors error(s) as expected, $states states"
        fi
        cd ..
    done
done
exit $status
