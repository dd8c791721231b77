#!/bin/sh
# test/fuzz.sh OUTDIR SECONDS [merge] - build each harness in test/fuzz/ with clang's
# libFuzzer (+ASan/UBSan), replay its corpus (test/fuzz/corpus_NAME/), then fuzz
# for SECONDS. New inputs go to OUTDIR; with "merge" the ones that add coverage are
# merged into the kept corpus (make fuzz). A crash leaves its input in OUTDIR and
# fails. Prints the executions per harness.
set -u
[ $# -ge 2 ] || { echo "usage: test/fuzz.sh OUTDIR SECONDS [merge]" >&2; exit 2; }
out=$1 secs=$2 merge=${3-}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 2
urcu=$(pkg-config --libs liburcu-memb 2>/dev/null || echo -lurcu-memb -lurcu-common)
status=0
for src in "$root"/test/fuzz/fuzz_*.c; do
    name=$(basename "$src" .c)
    kept=$root/test/fuzz/corpus_${name#fuzz_}
    bin=$out/$name
    mkdir -p "$kept" "$out/$name.new" "$out/$name.crashes"
    if ! clang -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Wpedantic -Werror -g -O1 \
        -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -I"$root" \
        -o "$bin" "$src" $urcu -pthread >"$out/$name.build.log" 2>&1; then
        echo "fuzz $name: does not build"; cat "$out/$name.build.log"; status=1; continue
    fi
    # the kept corpus first: every input that once found something must still pass
    if ! "$bin" -runs=0 "$kept" >"$out/$name.replay.log" 2>&1; then
        echo "fuzz $name: the kept corpus fails"; tail -20 "$out/$name.replay.log"; status=1
        continue
    fi
    if ! "$bin" -max_total_time="$secs" -timeout=10 -print_final_stats=1 \
        -artifact_prefix="$out/$name.crashes/" "$out/$name.new" "$kept" \
        >"$out/$name.log" 2>&1; then
        echo "fuzz $name: FAILED, input in $out/$name.crashes/"; tail -30 "$out/$name.log"
        status=1
        continue
    fi
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/$name.log")
    echo "fuzz $name: $execs executions in $secs s, no failure"
    if [ "$merge" = merge ]; then
        "$bin" -merge=1 "$kept" "$out/$name.new" >"$out/$name.merge.log" 2>&1 &&
            echo "fuzz $name: corpus now $(ls "$kept" | wc -l) inputs ($kept)"
    fi
done
exit $status
