#!/bin/sh
# test/lint.sh OUTDIR [full] - static analysis of the headers and the tests (`make lint`).
#
# Two tools, each over every configuration that compiles different code:
#   cppcheck    --enable=warning,performance,portability, with --library=posix, inline
#               suppressions (/* cppcheck-suppress id ; reason */) and test/cppcheck.supp.
#   clang-tidy  the reviewed check list in test/clang-tidy.yaml (which says what is on and why).
# Targets:
#   lf.h          LIFO, FIFO, HEAP, CONDVAR (futex synchronizer) and LIFO with
#                 LF_SYNC_PTHREAD (the synchronizer code is the same for LIFO/FIFO/HEAP)
#   lf_reactor.h  EPOLL, POLL, SELECT backends
#   lf_bound.h    bare, and hybrid (LF_BOUND_REACTOR=1, which pulls in lf_reactor.h)
#   test/*.c      every test, with the default configuration (as `make test` builds it
#                 first). cppcheck sees every test; with `full` (make test-full, make
#                 lint) clang-tidy's AST checks do too, and the clang static analyzer,
#                 which costs 95% of the time, runs on the tests in ANALYZE_TESTS
#                 below (see there why). make test's run analyses one configuration
#                 of each header, the others get the AST checks.
# Each header is given to the tools as the main file (clang-tidy: -x c), so the
# analyzer takes every one of its functions as an entry point, not only those a test
# happens to call.
#
# Prints one line per finding, "file:line:col: tool [check] message (where)", the same
# finding from several configurations once (where: the first three), and exits 1 if there is any (2 if a tool is
# missing or fails). Logs of every run are left in OUTDIR. LINT_JOBS (default 2) runs
# that many tools at once. Never writes into the source tree.
set -u

if [ "${1-}" = --job ]; then
    # --job OUTDIR N TOOL LABEL FILE [DEFINE...]: one tool on one target, from xargs.
    out=$2 n=$3 tool=$4 label=$5 file=$6
    shift 6
    log=$out/$n.$tool.log
    case $tool in
    cppcheck)
        # No system headers: CLOCK_MONOTONIC stands in for <time.h> (lf.h #errors
        # without it), __GNUC__ for the compiler lf_reactor.h requires (weak symbols).
        cppcheck --quiet --language=c --std=c11 --platform=unix64 \
            --enable=warning,performance,portability --library=posix \
            --inline-suppr --suppressions-list=test/cppcheck.supp --error-exitcode=1 \
            -D_POSIX_C_SOURCE=200809L -D__linux__=1 -D__GNUC__=12 -DCLOCK_MONOTONIC=1 \
            -I. "$@" --template='{file}:{line}:{column}: cppcheck [{id}] {message}' \
            "$file" >"$log" 2>&1
        rc=$?
        pattern='^[^ :]+:[0-9]+:[0-9]+: cppcheck \['
        ;;
    clang-tidy | clang-tidy-ast) # -ast: without the static analyzer
        checks=
        [ "$tool" = clang-tidy-ast ] && checks='--checks=-clang-analyzer-*'
        clang-tidy --quiet --config-file=test/clang-tidy.yaml $checks "$file" -- \
            -x c -std=c11 -D_POSIX_C_SOURCE=200809L -I. "$@" >"$log" 2>&1
        rc=$?
        pattern='^[^ :]+:[0-9]+:[0-9]+: (warning|error): .*\]$'
        ;;
    *)
        echo "lint: unknown tool $tool" >&2
        exit 255
        ;;
    esac
    here=$(pwd)/
    found=$(grep -E "$pattern" "$log" |
        sed -E -e "s|^$here||" -e 's|^\./||' -e 's|^[a-z]+/\.\./||' -e 's|/\./|/|' \
            -e 's/^([^ ]+) (warning|error): (.*) \[([^],]+)[^]]*\]$/\1 clang-tidy [\4] \3/' |
        sed "s|\$|	$label|")
    if [ -n "$found" ]; then
        printf '%s\n' "$found" >"$out/$n.$tool.found"
    elif [ "$rc" -ne 0 ]; then
        # a failure without a finding: a compile error in another form, or a crash
        printf '%s: %s [failed] exit %s, see %s\t%s\n' "$file" "$tool" "$rc" "$log" "$label" \
            >"$out/$n.$tool.found"
    fi
    exit 0
fi

[ $# -eq 1 ] || [ $# -eq 2 ] || { echo "usage: test/lint.sh OUTDIR [full]" >&2; exit 2; }
full=${2-}
mkdir -p "$1" || exit 2
out=$(cd "$1" && pwd) || exit 2
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
cd "$(dirname "$self")/.." || exit 2
for t in cppcheck clang-tidy; do
    command -v $t >/dev/null 2>&1 || { echo "lint: $t not found (make setup)" >&2; exit 2; }
done
rm -f "$out"/*.log "$out"/*.found "$out/jobs"
start=$(date +%s)

# The clang static analyzer on a test repeats most of the header analysis above (with
# the test's concrete arguments). It runs on the tests that reach header paths no other
# target does as concretely: NULL and bad-argument paths (*_errors), shutdown and
# notification of parked followers, the bound's failure paths, and the reactor's
# removal, resume (the concurrent EPOLL variant) and hybrid paths. The rest (stress,
# order, timers, fairness...) drive the same calls in loops: they get the AST checks.
ANALYZE_TESTS="t_pool_errors t_pool_notify t_pool_shutdown t_bound_errors t_bound_replies
t_reactor_errors t_reactor_remove t_reactor_resume t_reactor_hybrid"
[ "$full" = full ] || ANALYZE_TESTS=

# One job per line: TOOL LABEL FILE [DEFINES]. Slowest first, so the tail is short.
# Without `full`, the static analyzer takes one configuration of each header (the
# default ones, and the hybrid bound) and the AST checks the others.
an=clang-tidy
[ "$full" = full ] || an=clang-tidy-ast
{
    for tool in clang-tidy cppcheck; do
        other=$tool
        [ "$tool" = clang-tidy ] && other=$an
        for b in EPOLL POLL SELECT; do
            t=$other
            [ $b = EPOLL ] && t=$tool
            echo "$t lf_reactor.h+$b lf_reactor.h -DLF_REACTOR_BACKEND=LF_REACTOR_$b"
        done
        echo "$tool lf_bound.h+REACTOR lf_bound.h -DLF_BOUND_REACTOR=1"
        echo "$other lf_bound.h lf_bound.h"
        for p in LIFO FIFO HEAP CONDVAR; do
            t=$other
            [ $p = LIFO ] && t=$tool
            echo "$t lf.h+$p lf.h -DLF_PROMOTE=LF_PROMOTE_$p"
        done
        echo "$other lf.h+LIFO-PTHREAD lf.h -DLF_PROMOTE=LF_PROMOTE_LIFO -DLF_SYNC=LF_SYNC_PTHREAD"
    done
    # the tests: cppcheck every time; clang-tidy (AST checks, the analyzer on
    # ANALYZE_TESTS) only with `full`, which keeps make test inside its time
    for f in test/t_*.c; do
        t=$(basename "$f" .c)
        if [ "$full" = full ]; then
            case " $(echo $ANALYZE_TESTS) " in
            *" $t "*) echo "clang-tidy $t.c $f" ;;
            *) echo "clang-tidy-ast $t.c $f" ;;
            esac
        fi
        echo "cppcheck $t.c $f"
    done
} | awk '{ print NR, $0 }' >"$out/jobs"

xargs -P "${LINT_JOBS:-2}" -L 1 sh "$self" --job "$out" <"$out/jobs"

# one line per finding; the configurations it was seen in, in brackets
findings=$(cat "$out"/*.found 2>/dev/null |
    awk -F '\t' '{ if (!($1 in w)) { order[++n] = $1; w[$1] = $2 }
                   else if (index(", " w[$1] ", ", ", " $2 ", ") == 0) w[$1] = w[$1] ", " $2 }
                 END { for (i = 1; i <= n; i++) {
                           k = split(w[order[i]], v, ", ")
                           s = v[1]; for (j = 2; j <= k && j <= 3; j++) s = s ", " v[j]
                           if (k > 3) s = s " +" (k - 3) " more"
                           print order[i] " (" s ")" } }' |
    sort -t: -k1,1 -k2,2n -k3,3n)
count=0
[ -n "$findings" ] && count=$(printf '%s\n' "$findings" | wc -l)
[ -n "$findings" ] && printf '%s\n' "$findings"
printf 'lint: %s finding(s), %s runs in %ss; logs in %s\n' "$count" \
    "$(wc -l <"$out/jobs")" $(($(date +%s) - start)) "$out" >&2
if grep -q ' \[failed\] ' "$out"/*.found 2>/dev/null; then
    exit 2
fi
[ "$count" -eq 0 ]
