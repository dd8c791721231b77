#!/bin/sh
# test/fuzz.sh OUTDIR SECONDS [merge] - build each harness in test/fuzz/ with clang's
# libFuzzer (+ASan/UBSan), replay its corpus (test/fuzz/corpus_NAME/), then fuzz
# for SECONDS. New inputs go to OUTDIR; with "merge" the ones that add coverage are
# merged into the kept corpus (make fuzz). A crash leaves its input in OUTDIR and
# fails. Prints the executions per harness. fuzz_reactor runs once per backend: epoll
# for SECONDS, poll and select for half as long each, all on the one kept corpus.
set -u
[ $# -ge 2 ] || { echo "usage: test/fuzz.sh OUTDIR SECONDS [merge]" >&2; exit 2; }
out=$1 secs=$2 merge=${3-}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 2
urcu=$(pkg-config --libs liburcu-memb 2>/dev/null || echo -lurcu-memb -lurcu-common)
status=0
# one harness build: NAME SRC KEPT SECONDS [CFLAGS...] (sh has no locals: h* names)
run_one() {
    h=$1 hsrc=$2 hkept=$3 t=$4
    shift 4
    bin=$out/$h
    mkdir -p "$hkept" "$out/$h.new" "$out/$h.crashes"
    if ! clang -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Wpedantic -Werror -g -O1 \
        -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -I"$root" "$@" \
        -o "$bin" "$hsrc" $urcu -pthread >"$out/$h.build.log" 2>&1; then
        echo "fuzz $h: does not build"; cat "$out/$h.build.log"; status=1; return
    fi
    # the kept corpus first: every input that once found something must still pass
    if ! "$bin" -runs=0 "$hkept" >"$out/$h.replay.log" 2>&1; then
        echo "fuzz $h: the kept corpus fails"; tail -20 "$out/$h.replay.log"; status=1
        return
    fi
    if ! "$bin" -max_total_time="$t" -timeout=10 -print_final_stats=1 \
        -artifact_prefix="$out/$h.crashes/" "$out/$h.new" "$hkept" \
        >"$out/$h.log" 2>&1; then
        echo "fuzz $h: FAILED, input in $out/$h.crashes/"; tail -30 "$out/$h.log"
        status=1
        return
    fi
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/$h.log")
    echo "fuzz $h: $execs executions in $t s, no failure"
    if [ "$merge" = merge ]; then
        "$bin" -merge=1 "$hkept" "$out/$h.new" >"$out/$h.merge.log" 2>&1 &&
            echo "fuzz $h: corpus now $(ls "$hkept" | wc -l) inputs ($hkept)"
    fi
}

half=$(( secs / 2 > 0 ? secs / 2 : 1 ))
for src in "$root"/test/fuzz/fuzz_*.c; do
    name=$(basename "$src" .c)
    kept=$root/test/fuzz/corpus_${name#fuzz_}
    run_one "$name" "$src" "$kept" "$secs"
    if [ "$name" = fuzz_reactor ]; then
        for b in POLL SELECT; do
            run_one "$name.$(echo $b | tr '[:upper:]' '[:lower:]')" "$src" "$kept" "$half" \
                -DLF_REACTOR_BACKEND=LF_REACTOR_$b
        done
    fi
done
exit $status
