# bench/scaling.awk - servers.sh's scaling rows: server CPU per request against the
# number of connections. O(1) demultiplexing keeps a row flat.
#
#   awk -f scaling.awk -v out=scaling.csv scaling.raw
#
# Input lines as servers.awk's. Output: per server and connection count the median
# CPU microseconds per request and requests/s; "growth" is the CPU per request at the
# most connections over that at the fewest.

function median(list,    n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 2; i <= n; i++) {
        t = a[i] + 0
        for (j = i - 1; j >= 1 && a[j] + 0 > t; j--)
            a[j + 1] = a[j]
        a[j + 1] = t
    }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}

{
    name = $1
    for (i = 2; i <= NF; i++) {
        split($i, kv, "=")
        f[kv[1]] = kv[2]
    }
    c = f["conns"] + 0
    if (!((name) in seen)) { seen[name] = 1; names[++nn] = name }
    if (!((c) in cseen)) { cseen[c] = 1; cs[++nc] = c }
    cpu[name, c] = cpu[name, c] " " f["cpu_us_per_req"]
    rps[name, c] = rps[name, c] " " f["rps"]
}

END {
    for (i = 2; i <= nc; i++) {          # connection counts ascending
        t = cs[i]
        for (j = i - 1; j >= 1 && cs[j] > t; j--)
            cs[j + 1] = cs[j]
        cs[j + 1] = t
    }
    printf "\nCPU microseconds per request (server, all threads) by connections:\n"
    printf "%-20s", "server"
    for (j = 1; j <= nc; j++) printf " %12s", cs[j] " conns"
    printf " %8s\n", "growth"
    print "server,conns,cpu_us_per_req,rps" > out
    for (i = 1; i <= nn; i++) {
        n = names[i]
        printf "%-20s", n
        first = last = 0
        for (j = 1; j <= nc; j++) {
            if (cpu[n, cs[j]] == "") { printf " %12s", "-"; continue }
            m = median(cpu[n, cs[j]])
            if (!first) first = m
            last = m
            printf " %12.2f", m
            printf "%s,%d,%.2f,%.0f\n", n, cs[j], m, median(rps[n, cs[j]]) > out
        }
        printf " %7.2fx\n", (first > 0 ? last / first : 0)
    }
}
