#!/bin/sh
# One check of `make test`: compile, run, record the verdict. Never fails itself, so
# make goes on to the next check; the verdicts are counted at the end.
#   check.sh RESULT LABEL ENV BINARY -- compile command...   build and run BINARY
#   check.sh RESULT LABEL compiles -- compile command...     must compile
#   check.sh RESULT LABEL rejects:PATTERN -- compile command...
#                                         must fail to compile, with PATTERN in the output
set -u
result=$1 label=$2 what=$3
shift 3
mkdir -p "$(dirname "$result")"
log=$result.log
verdict() {
    echo "$1" > "$result"
    if [ "$1" = pass ]; then
        printf 'PASS  %s%s\n' "$label" "${2:-}"
    else
        printf 'FAIL  %s%s\n' "$label" "${2:-}"
        sed 's/^/      | /' "$log" | tail -n 25
    fi
    exit 0
}
case $what in
compiles)
    shift
    start=$(date +%s.%N)
    "$@" > "$log" 2>&1
    rc=$?
    secs=$(echo "$start $(date +%s.%N)" | awk '{printf "%.1f", $2 - $1}')
    [ $rc -eq 0 ] && verdict pass "  (${secs} s)"
    verdict fail "  (${secs} s)"
    ;;
rejects:*)
    shift
    pattern=${what#rejects:}
    if "$@" > "$log" 2>&1; then
        echo "compiled, but must not" >> "$log"
        verdict fail
    fi
    grep -q -- "$pattern" "$log" && verdict pass
    echo "failed without the expected message: $pattern" >> "$log"
    verdict fail
    ;;
*)
    envs=$what bin=$1
    shift 2
    mkdir -p "$(dirname "$bin")"
    # built already by make's prebuild step (its mark, and the binary), or build now
    if [ -f "$bin.pre" ] && [ -x "$bin" ]; then
        echo "built by prebuild: $*" > "$log"
    else
        "$@" > "$log" 2>&1 || verdict fail "  (build)"
    fi
    start=$(date +%s.%N)
    env $envs timeout 600 "$bin" >> "$log" 2>&1
    rc=$?
    secs=$(echo "$start $(date +%s.%N)" | awk '{printf "%.1f", $2 - $1}')
    [ $rc -eq 0 ] && verdict pass "  (${secs} s)"
    echo "exit status $rc" >> "$log"
    verdict fail "  (${secs} s)"
    ;;
esac
