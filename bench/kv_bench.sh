# shellcheck shell=sh disable=SC2034,SC2154 # sets and reads its sourcer's variables
# bench/kv_bench.sh - sourced by bench/memc.sh and bench/redis.sh: the rounds, the
# medians and the plot of a client benchmark against one server, which the two run
# the same way (their clients, memc_bench and redis_bench, take the same options and
# print the same line). Each script keeps what is its own: the server, the build and
# which variants there are. POSIX sh.
#
# Reads the sourcer's here (bench/), build, results, threads, rounds, secs and warm.
# NAME is memc or redis: the client is $build/NAME_bench (NAME_bench.fifo for the
# variant bound.fifo, run as -m bound), its files $build/NAME.* and $results/NAME.*.
#
#   kv_rows NAME VARIANTS     $build/NAME.rows, the runs of a round: each variant at
#                             each number of $threads, one "variant threads" a line
#   kv_rounds NAME SERVER PORT WIDTH   $rounds rounds of every row (the order
#                             rotating from round to round), each run $secs s after
#                             $warm s against PORT; every run's line, after round=N
#                             name=VARIANT, to $results/NAME.raw, and a line to
#                             stderr (the variant in WIDTH columns; SERVER names the
#                             server). Sets kv_failed to 1 if a run failed
#   kv_summary NAME BASE WIDTH BASE_WIDTH   $results/NAME.csv from NAME.raw: per
#                             variant and threads, the runs, the medians, the spread
#                             of requests/s ((max - min) / median), the errors, and
#                             rps_vs_BASE (the median over BASE's at the same threads,
#                             empty without BASE rows); the same table to stderr,
#                             the "vs BASE" column BASE_WIDTH wide
#   kv_plot NAME              $results/NAME.png from bench/NAME.gp, when gnuplot is there

kv_rows() {
    : >"$build/$1.rows"
    for t in $threads; do
        for v in $2; do
            echo "$v $t" >>"$build/$1.rows"
        done
    done
}

kv_rounds() {
    rows=$build/$1.rows
    nrows=$(wc -l <"$rows")
    raw=$results/$1.raw
    : >"$raw"
    kv_failed=0
    round=1
    while [ "$round" -le "$rounds" ]; do
        echo "bench: $1 round $round of $rounds ($nrows rows, ${secs}s each), $2 on port $3" >&2
        skip=$(((round - 1) % nrows))
        { tail -n +$((skip + 1)) "$rows"; head -n "$skip" "$rows"; } >"$rows.order"
        while read -r v t; do
            bin=$build/$1_bench mode=$v
            [ "$v" = bound.fifo ] && bin=$build/$1_bench.fifo mode=bound
            if line=$("$bin" -m "$mode" -p "$3" -t "$t" -d "$secs" -W "$warm"); then :; else
                echo "bench: $1: $v with $t threads failed ($line)" >&2
                kv_failed=1
            fi
            [ -n "$line" ] || continue
            line="name=$v $line"
            echo "round=$round $line" >>"$raw"
            echo "$line" | awk -v w="$4" '{
                for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
                printf "  %-" w "s %3d threads %9.0f req/s  p99 %8.1f us  %3d conns\n",
                    v["name"], v["threads"], v["rps"], v["p99_us"], v["conns"] }' >&2
        done <"$rows.order"
        round=$((round + 1))
    done
}

kv_summary() {
    awk -v out="$results/$1.csv" -v base="$2" -v w="$3" -v bw="$4" '
    function median(list,   n, a, i, j, t) {
        n = split(list, a, " ")
        for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) {
            t = a[j]; a[j] = a[j-1]; a[j-1] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    {
        delete f
        for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
        k = f["name"] SUBSEP f["threads"]
        if (!(k in runs)) { order[++n] = k }
        runs[k]++
        rps[k] = rps[k] " " f["rps"]; p50[k] = p50[k] " " f["p50_us"]
        p99[k] = p99[k] " " f["p99_us"]; conns[k] = conns[k] " " f["conns"]
        err[k] += f["errors"]
        if (runs[k] == 1 || f["rps"] + 0 < lo[k]) lo[k] = f["rps"] + 0
        if (runs[k] == 1 || f["rps"] + 0 > hi[k]) hi[k] = f["rps"] + 0
    }
    END {
        print "variant,threads,runs,rps,rps_spread,p50_us,p99_us,conns,rps_vs_" base ",errors" > out
        printf "%-" w "s %7s %10s %7s %9s %9s %6s %" bw "s\n", "", "threads", "req/s", "spread",
            "p50 us", "p99 us", "conns", "vs " base > "/dev/stderr"
        for (i = 1; i <= n; i++) {
            k = order[i]; split(k, vt, SUBSEP)
            m = median(rps[k]); bk = base SUBSEP vt[2]
            ratio = (bk in rps) ? sprintf("%.2f", m / median(rps[bk])) : ""
            printf "%s,%s,%d,%.0f,%.3f,%.1f,%.1f,%d,%s,%d\n", vt[1], vt[2], runs[k], m,
                (m > 0 ? (hi[k] - lo[k]) / m : 0), median(p50[k]), median(p99[k]),
                median(conns[k]), ratio, err[k] >> out
            printf "%-" w "s %7s %10.0f %6.0f%% %9.1f %9.1f %6d %" bw "s\n", vt[1], vt[2], m,
                (m > 0 ? 100 * (hi[k] - lo[k]) / m : 0), median(p50[k]), median(p99[k]),
                median(conns[k]), ratio > "/dev/stderr"
        }
    }' "$results/$1.raw"
}

kv_plot() {
    if command -v gnuplot >/dev/null; then
        gnuplot -e "dir='$results'" "$here/$1.gp" 2>"$build/$1.gnuplot.log" ||
            echo "bench: $1: gnuplot failed (see $build/$1.gnuplot.log)" >&2
    fi
}
