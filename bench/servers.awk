# bench/servers.awk - servers.sh's table: medians per row, ratios, the targets.
#
#   awk -f servers.awk -v out=servers.csv -v rows=ROWS_FILE [-v conns=N]
#       [-v default_row=NAME] [-v shared=1] servers.raw
#
# Input: one line per run, "NAME round=R conns=C rps=... p50_us=... ... errors=E";
# with conns=N only the runs at N connections count. Output: the table on stdout,
# the same as CSV in `out`. Row order follows ROWS_FILE. The targets are checked for
# default_row (the configuration a user gets with no macros) and then for every lf
# row at once, against the best peer as written or under chrt -b 0; with -v shared=1
# (the table beside a CPU-bound process) the shared machine's targets: req/s and p99.

function median(list,    n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 2; i <= n; i++) {           # insertion sort: a handful of rounds
        t = a[i] + 0
        for (j = i - 1; j >= 1 && a[j] + 0 > t; j--)
            a[j + 1] = a[j]
        a[j + 1] = t
    }
    if (n == 0) return -1
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}

function spread(list,    n, a, i, lo, hi, m) {
    n = split(list, a, " ")
    lo = hi = a[1] + 0
    for (i = 2; i <= n; i++) {
        if (a[i] + 0 < lo) lo = a[i] + 0
        if (a[i] + 0 > hi) hi = a[i] + 0
    }
    m = median(list)
    return m > 0 ? (hi - lo) / m : 0
}

BEGIN {
    nm = split("rps p50_us p99_us p999_us cs_per_req cpu_us_per_req allocs_per_req fair errors", M, " ")
    while ((getline line < rows) > 0) {
        split(line, f, " ")
        order[++nrows] = f[1]
    }
}

conns != "" && $3 != "conns=" conns { next }

{
    name = $1
    runs[name]++
    for (i = 2; i <= NF; i++) {
        split($i, kv, "=")
        v[name, kv[1]] = v[name, kv[1]] " " kv[2]
    }
}

END {
    for (r = 1; r <= nrows; r++) {
        n = order[r]
        if (!runs[n]) continue
        for (k = 1; k <= nm; k++)
            med[n, M[k]] = median(v[n, M[k]])
        sp[n] = spread(v[n, "rps"])
    }
    floor_rps = med["floor", "rps"]; floor_cpu = med["floor", "cpu_us_per_req"]
    floor_p99 = med["floor", "p99_us"]; floor_p999 = med["floor", "p999_us"]
    # the peers as written and under chrt -b 0: the best of them, by req/s, is the
    # one to beat (ACE_TP_Reactor counts too, though it never is the best here)
    best_peer = ""
    npeers = split("ace.tp ace.devpoll asio ace.devpoll.batch asio.batch", P, " ")
    for (k = 1; k <= npeers; k++)
        if (runs[P[k]] && (best_peer == "" || med[P[k], "rps"] > med[best_peer, "rps"]))
            best_peer = P[k]
    best_lf = ""
    for (r = 1; r <= nrows; r++) {
        n = order[r]
        if (runs[n] && n ~ /^lf\./ && (best_lf == "" || med[n, "rps"] > med[best_lf, "rps"]))
            best_lf = n
    }

    printf "%-20s %9s %6s %7s %7s %8s %7s %7s %7s %6s %6s %6s %6s %6s %5s\n", "server", "req/s",
        "spread", "p50us", "p99us", "p99.9us", "cs/req", "cpu_us", "allocs", "fair",
        "x_flr", "x_peer", "x99", "x99.9", "runs"
    print "server,runs,rps,rps_spread,p50_us,p99_us,p999_us,cs_per_req,cpu_us_per_req,allocs_per_req,fair,rps_vs_floor,cpu_vs_floor,rps_vs_best_peer,errors,p99_vs_floor,p999_vs_floor" > out
    for (r = 1; r <= nrows; r++) {
        n = order[r]
        if (!runs[n]) { printf "%-20s unavailable\n", n; continue }
        xf = floor_rps > 0 ? med[n, "rps"] / floor_rps : 0
        xc = floor_cpu > 0 ? med[n, "cpu_us_per_req"] / floor_cpu : 0
        xp = best_peer != "" ? med[n, "rps"] / med[best_peer, "rps"] : 0
        x99 = floor_p99 > 0 ? med[n, "p99_us"] / floor_p99 : 0
        x999 = floor_p999 > 0 ? med[n, "p999_us"] / floor_p999 : 0
        printf "%-20s %9.0f %5.0f%% %7.1f %7.1f %8.1f %7.3f %7.2f %7.3f %6.3f %6.2f %6.2f %6.2f %6.2f %5d\n", n,
            med[n, "rps"], 100 * sp[n], med[n, "p50_us"], med[n, "p99_us"], med[n, "p999_us"],
            med[n, "cs_per_req"], med[n, "cpu_us_per_req"], med[n, "allocs_per_req"],
            med[n, "fair"], xf, xp, x99, x999, runs[n]
        printf "%s,%d,%.0f,%.3f,%.1f,%.1f,%.1f,%.3f,%.2f,%.3f,%.3f,%.3f,%.3f,%.3f,%d,%.3f,%.3f\n", n, runs[n],
            med[n, "rps"], sp[n], med[n, "p50_us"], med[n, "p99_us"], med[n, "p999_us"],
            med[n, "cs_per_req"], med[n, "cpu_us_per_req"], med[n, "allocs_per_req"],
            med[n, "fair"], xf, xc, xp, med[n, "errors"], x99, x999 > out
    }
    printf "x_flr: req/s over the floor's; x_peer: over the best peer's (%s); x99, x99.9: the\n", best_peer == "" ? "none" : best_peer
    printf "p99 and p99.9 latency over the floor's\n"
    target = (default_row != "" && runs[default_row]) ? default_row : best_lf
    if (target == "") exit
    printf "\ntargets for %s%s, against the best peer under either policy (%s):\n", target,
        (target == default_row ? " (the default configuration)" : " (lf's best row)"),
        best_peer == "" ? "none" : best_peer
    if (best_peer != "") {
        x = med[target, "rps"] / med[best_peer, "rps"]
        printf "  req/s vs best peer    %5.2fx  (>= 1.10x)  %s\n", x, (x >= 1.1 ? "met" : "MISSED")
    }
    if (shared) {
        # the shared machine: throughput and the tail against the best peer's
        if (best_peer != "" && med[best_peer, "p99_us"] > 0) {
            x = med[target, "p99_us"] / med[best_peer, "p99_us"]
            printf "  p99 vs best peer      %5.2fx  (<= 1.20x)  %s\n", x, (x <= 1.2 ? "met" : "MISSED")
        }
    } else {
        if (best_peer != "" && med[best_peer, "cpu_us_per_req"] > 0) {
            x = med[target, "cpu_us_per_req"] / med[best_peer, "cpu_us_per_req"]
            printf "  cpu/req vs best peer  %5.2fx  (<= 0.95x)  %s\n", x, (x <= 0.95 ? "met" : "MISSED")
        }
        if (floor_cpu > 0) {
            x = med[target, "cpu_us_per_req"] / floor_cpu
            printf "  cpu/req vs floor      %5.2fx  (<= 1.05x)  %s\n", x, (x <= 1.05 ? "met" : "MISSED")
        }
        if (floor_p999 > 0) {
            x = med[target, "p99_us"] / floor_p99
            printf "  p99 vs floor          %5.2fx  (watch)\n", x
            x = med[target, "p999_us"] / floor_p999
            printf "  p99.9 vs floor        %5.2fx  (<= 2.00x)  %s\n", x, (x <= 2 ? "met" : "MISSED")
        }
        if (runs["hshr"] && med["hshr", "cs_per_req"] > 0) {
            x = med[target, "cs_per_req"] / med["hshr", "cs_per_req"]
            printf "  cs/req vs HS/HR       %5.2fx  (watch)\n", x
        }
        x = med[target, "fair"]
        printf "  fairness              %5.3f   (>= 0.95)   %s\n", x, (x >= 0.95 ? "met" : "MISSED")
        x = med[target, "allocs_per_req"]
        printf "  allocations/req       %5.3f   (= 0)       %s\n", x, (x == 0 ? "met" : "MISSED")
    }
    # every lf row against every target at once
    all = ""
    for (r = 1; r <= nrows; r++) {
        n = order[r]
        if (!runs[n] || n !~ /^lf\./) continue
        ok = best_peer == "" || med[n, "rps"] >= 1.1 * med[best_peer, "rps"]
        if (shared) {
            if (best_peer != "" && med[n, "p99_us"] > 1.2 * med[best_peer, "p99_us"]) ok = 0
        } else {
            if (med[n, "fair"] < 0.95 || med[n, "allocs_per_req"] != 0) ok = 0
            if (best_peer != "" && med[n, "cpu_us_per_req"] > 0.95 * med[best_peer, "cpu_us_per_req"]) ok = 0
            if (floor_cpu > 0 && med[n, "cpu_us_per_req"] > 1.05 * floor_cpu) ok = 0
            if (floor_p999 > 0 && med[n, "p999_us"] > 2 * floor_p999) ok = 0
        }
        if (ok) all = all " " n
    }
    printf "lf rows that meet every target at once:%s\n", (all == "" ? " none" : all)
}
