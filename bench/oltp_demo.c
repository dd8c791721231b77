/* bench/oltp_demo.c - oltp demo: the two servers of bench/oltp.c started, driven and
 * checked, as the pattern's system runs them (bench/servers.sh measures it,
 * test/bench_smoke.sh runs it under ASan+UBSan).
 *
 *   oltp demo [-c CONNS] [-s SECONDS] [-t T] [-m MUX] [-w WORK] [-d DEADLINE_MS]
 *             [-L LOADGEN] [-K KILL_AFTER_S]
 *
 *   Starts the back-end and the front-end (fork + exec of this binary: separate
 *   processes, as the pattern's system has), then runs the clients against the
 *   front-end: the load generator at -L (bench/loadgen: -p -c -d -w -P are passed),
 *   or else the built-in client: CONNS closed-loop connections on one epoll thread,
 *   every reply checked with wire_check (id, connection and every byte), and after
 *   SECONDS the last replies awaited (5 s at most). Then SIGTERM to both servers, and
 *   one summary line. Exit 0 only if every reply checked out, none was lost, no
 *   connection was closed, both servers exited 0 on SIGTERM, the back-end's table is
 *   consistent and it ran exactly as many transactions as the front-end completed.
 *   -K S kills the back-end (SIGKILL) S seconds into the run: then the pass rule is
 *   that no request hangs: every client request either got its right reply or its
 *   connection was closed, the front-end counted exactly those closes, and it still
 *   exits cleanly on SIGTERM.
 */
#include "oltp.h"

#include <sys/epoll.h>

/* ------------------------------------------------------------------ >>client
 * The built-in closed-loop client: one epoll thread, CONNS connections, one request
 * outstanding on each, every reply checked. */

#define LAT_US 100000 /* latency histogram: 1 us steps up to 100 ms, then overflow */

struct cconn {
    int fd;
    uint32_t idx;
    int busy;          /* a request is outstanding */
    unsigned have;     /* reply bytes in rx */
    uint64_t id;       /* of the outstanding request */
    long long sent_ns;
    unsigned char rx[WIRE_SIZE];
};

struct client_result {
    unsigned long long replies, window_replies, errors, closed, lost;
    double secs;
    unsigned p50_us, p99_us, p999_us;
};

static unsigned lat_hist[LAT_US + 1];

static unsigned lat_pct(unsigned long long total, double p)
{
    unsigned long long want = (unsigned long long)(p * (double)total + 0.5), seen = 0;
    if (want == 0)
        want = 1;
    for (unsigned i = 0; i <= LAT_US; i++) {
        seen += lat_hist[i];
        if (seen >= want)
            return i;
    }
    return LAT_US;
}

static int client_send(struct cconn *c, uint32_t work)
{
    unsigned char m[WIRE_SIZE];
    wire_fill(m, c->id, c->idx, work);
    c->sent_ns = now_ns();
    c->busy = 1;
    c->have = 0;
    return write_all(c->fd, m, WIRE_SIZE, WRITE_WAIT_MS);
}

static void client_drop(int ep, struct cconn *c)
{
    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    c->fd = -1;
    c->busy = 0;
}

/* kill_after_ns > 0: SIGKILL kill_pid that long after the start (the -K test). */
static int run_client(int port, int conns, int secs, uint32_t work, pid_t kill_pid,
                      long long kill_after_ns, struct client_result *res)
{
    struct cconn *cc = (struct cconn *)calloc((size_t)conns, sizeof *cc);
    struct epoll_event evs[64];
    long long start, end, drain_end, kill_at;
    int ep = epoll_create1(EPOLL_CLOEXEC), live = 0, measuring = 1;

    memset(res, 0, sizeof *res);
    if (cc == NULL || ep < 0)
        return -1;
    for (int i = 0; i < conns; i++) {
        struct epoll_event ev;
        cc[i].idx = (uint32_t)i;
        if ((cc[i].fd = srv_connect(port)) < 0 || srv_nonblock(cc[i].fd) != 0) {
            perror("oltp demo: connect to the front-end");
            return -1;
        }
        ev.events = EPOLLIN;
        ev.data.ptr = &cc[i];
        if (epoll_ctl(ep, EPOLL_CTL_ADD, cc[i].fd, &ev) != 0)
            return -1;
    }
    start = now_ns();
    end = start + (long long)secs * 1000000000LL;
    drain_end = end + 5000000000LL;
    kill_at = kill_after_ns > 0 ? start + kill_after_ns : 0;
    for (int i = 0; i < conns; i++) {
        if (client_send(&cc[i], work) != 0) {
            res->closed++;
            client_drop(ep, &cc[i]);
        } else {
            live++;
        }
    }
    for (;;) {
        long long now = now_ns();
        int n;
        if (kill_at && now >= kill_at) {
            kill(kill_pid, SIGKILL);
            fprintf(stderr, "oltp demo: killed the back-end (pid %d) %.1f s into the run\n",
                    (int)kill_pid, (double)(now - start) / 1e9);
            kill_at = 0;
        }
        if (measuring && now >= end) {
            measuring = 0; /* from now on no new requests: collect the last replies */
            res->secs = (double)(now - start) / 1e9;
        }
        if (!measuring) {
            int busy = 0;
            for (int i = 0; i < conns; i++)
                busy += cc[i].busy;
            if (busy == 0 || now >= drain_end)
                break;
        } else if (live == 0) {
            res->secs = (double)(now - start) / 1e9;
            break; /* every connection is gone */
        }
        n = epoll_wait(ep, evs, 64, 10);
        for (int k = 0; k < n; k++) {
            struct cconn *c = (struct cconn *)evs[k].data.ptr;
            ssize_t got;
            if (c->fd < 0)
                continue;
            got = read(c->fd, c->rx + c->have, WIRE_SIZE - c->have);
            if (got < 0 && (errno == EAGAIN || errno == EINTR))
                continue;
            if (got <= 0) {
                /* closed by the server: an explicit failure if a request was out */
                if (c->busy)
                    res->closed++;
                client_drop(ep, c);
                live--;
                continue;
            }
            c->have += (unsigned)got;
            if (c->have < WIRE_SIZE)
                continue;
            if (!c->busy || wire_check(c->rx, c->id, c->idx) != 0) {
                res->errors++; /* the stream is out of step: stop using it */
                client_drop(ep, c);
                live--;
                continue;
            }
            now = now_ns();
            {
                long long us = (now - c->sent_ns) / 1000;
                lat_hist[us > LAT_US ? LAT_US : (us < 0 ? 0 : us)]++;
            }
            res->replies++;
            if (measuring)
                res->window_replies++;
            c->busy = 0;
            c->id++;
            if (measuring && client_send(c, work) != 0) {
                res->closed++;
                client_drop(ep, c);
                live--;
            }
        }
    }
    for (int i = 0; i < conns; i++) {
        if (cc[i].busy)
            res->lost++; /* neither a reply nor a close within the drain time: a hang */
        if (cc[i].fd >= 0)
            close(cc[i].fd);
    }
    close(ep);
    free(cc);
    res->p50_us = lat_pct(res->replies, 0.50);
    res->p99_us = lat_pct(res->replies, 0.99);
    res->p999_us = lat_pct(res->replies, 0.999);
    return 0;
}

/* ------------------------------------------------------------------ >>demo */

/* Run bench/loadgen against the front-end; its result line goes to *line. */
static int run_loadgen(const char *path, int port, int conns, int secs, int work, pid_t fe_pid,
                       pid_t kill_pid, long long kill_after_ns, char *line, size_t cap)
{
    struct child lg;
    char sp[16], sc[16], ss[16], sw[16], sfe[16];
    char *argv[] = { (char *)path, "-p", sp, "-c", sc, "-d", ss, "-w", sw, "-P", sfe, NULL };
    long long start = now_ns(), kill_at = kill_after_ns > 0 ? start + kill_after_ns : 0;
    long long until = start + ((long long)secs + 30) * 1000000000LL;
    size_t len = 0;
    int st = 0;

    snprintf(sp, sizeof sp, "%d", port);
    snprintf(sc, sizeof sc, "%d", conns);
    snprintf(ss, sizeof ss, "%d", secs);
    snprintf(sw, sizeof sw, "%d", work);
    snprintf(sfe, sizeof sfe, "%d", (int)fe_pid);
    memset(&lg, 0, sizeof lg);
    lg.name = "loadgen";
    if (spawn(&lg, path, argv) != 0)
        return -1;
    srv_nonblock(lg.out);
    line[0] = '\0';
    for (;;) {
        ssize_t n = read(lg.out, line + len, cap - 1 - len);
        if (n > 0) {
            len += (size_t)n;
            line[len] = '\0';
        }
        if (waitpid(lg.pid, &st, WNOHANG) == lg.pid)
            break;
        if (kill_at && now_ns() >= kill_at) {
            kill(kill_pid, SIGKILL);
            fprintf(stderr, "oltp demo: killed the back-end (pid %d)\n", (int)kill_pid);
            kill_at = 0;
        }
        if (now_ns() > until) {
            fprintf(stderr, "oltp demo: loadgen hangs: killing it\n");
            kill(lg.pid, SIGKILL);
        }
        usleep(10000);
    }
    for (ssize_t n; (n = read(lg.out, line + len, cap - 1 - len)) > 0;)
        len += (size_t)n;
    line[len] = '\0';
    line[strcspn(line, "\n")] = '\0';
    fclose(lg.err);
    close(lg.out);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int demo_main(int argc, char **argv)
{
    int conns = 16, secs = 5, threads = 4, nmux = 2, work = 0, deadline_ms = 5000, kill_s = -1;
    const char *loadgen = NULL, *self = "/proc/self/exe";
    char s_t[16], s_m[16], s_p[16], s_d[16];
    struct child bec, fec;
    struct client_result cr;
    char lgline[1024];
    int bport, fport, lg_rc = 0, pass;
    unsigned long long fe_ok, fe_closed, be_txns;

    for (int i = 0; i < argc; i += 2) {
        const char *o = i + 1 < argc ? argv[i] : "?";
        if (strcmp(o, "-c") == 0)
            parse_int(o, argv[i + 1], &conns);
        else if (strcmp(o, "-s") == 0)
            parse_int(o, argv[i + 1], &secs);
        else if (strcmp(o, "-t") == 0)
            parse_int(o, argv[i + 1], &threads);
        else if (strcmp(o, "-m") == 0)
            parse_int(o, argv[i + 1], &nmux);
        else if (strcmp(o, "-w") == 0)
            parse_int(o, argv[i + 1], &work);
        else if (strcmp(o, "-d") == 0)
            parse_int(o, argv[i + 1], &deadline_ms);
        else if (strcmp(o, "-K") == 0)
            parse_int(o, argv[i + 1], &kill_s);
        else if (strcmp(o, "-L") == 0)
            loadgen = argv[i + 1];
        else {
            fprintf(stderr, "usage: oltp demo [-c CONNS] [-s SECONDS] [-t THREADS] [-m MUX] "
                            "[-w WORK] [-d DEADLINE_MS] [-L LOADGEN] [-K KILL_AFTER_S]\n");
            return 2;
        }
    }
    if (conns < 1 || secs < 1 || threads < 1 || nmux < 1) {
        fprintf(stderr, "oltp demo: -c, -s, -t and -m must be at least 1\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    srv_raise_nofile();
    snprintf(s_t, sizeof s_t, "%d", threads);
    snprintf(s_m, sizeof s_m, "%d", nmux);
    snprintf(s_d, sizeof s_d, "%d", deadline_ms);

    memset(&bec, 0, sizeof bec);
    memset(&fec, 0, sizeof fec);
    bec.name = "backend";
    fec.name = "frontend";
    {
        char *bargv[] = { "oltp", "backend", "-p", "0", "-t", s_t, NULL };
        if (spawn(&bec, self, bargv) != 0 || (bport = read_port(&bec, 10000)) < 0) {
            fprintf(stderr, "oltp demo: the back-end did not start\n");
            return 2;
        }
    }
    snprintf(s_p, sizeof s_p, "%d", bport);
    {
        char *fargv[] = { "oltp", "frontend", "-p", "0", "-b", s_p, "-m", s_m, "-t", s_t,
                          "-d", s_d, NULL };
        if (spawn(&fec, self, fargv) != 0 || (fport = read_port(&fec, 10000)) < 0) {
            fprintf(stderr, "oltp demo: the front-end did not start\n");
            kill(bec.pid, SIGKILL);
            return 2;
        }
    }

    memset(&cr, 0, sizeof cr);
    lgline[0] = '\0';
    if (loadgen) {
        lg_rc = run_loadgen(loadgen, fport, conns, secs, work, fec.pid, bec.pid,
                            kill_s >= 0 ? kill_s * 1000000000LL + 1 : 0, lgline, sizeof lgline);
        fprintf(stderr, "oltp demo: loadgen exit %d: %s\n", lg_rc, lgline);
    } else if (run_client(fport, conns, secs, (uint32_t)work, bec.pid,
                          kill_s >= 0 ? kill_s * 1000000000LL + 1 : 0, &cr) != 0) {
        fprintf(stderr, "oltp demo: the client could not start\n");
        kill(fec.pid, SIGKILL);
        kill(bec.pid, SIGKILL);
        return 2;
    }

    kill(fec.pid, SIGTERM);
    reap(&fec, 10000);
    if (kill_s < 0)
        kill(bec.pid, SIGTERM);
    reap(&bec, 10000);

    fe_ok = stat_field(fec.stats, "ok");
    fe_closed = stat_field(fec.stats, "closed");
    be_txns = stat_field(bec.stats, "txns");
    if (kill_s < 0) {
        pass = fec.status == 0 && bec.status == 0 && fec.stats[0] && bec.stats[0] &&
               strstr(bec.stats, "consistent=yes") != NULL && be_txns == fe_ok &&
               stat_field(fec.stats, "failed") == 0;
        if (loadgen)
            pass = pass && lg_rc == 0;
        else
            pass = pass && cr.errors == 0 && cr.lost == 0 && cr.closed == 0 &&
                   cr.replies == fe_ok;
    } else {
        /* the back-end died: every request was answered right or failed explicitly */
        pass = fec.status == 0 && fec.stats[0] != '\0';
        if (loadgen) /* loadgen counts a closed connection as an error */
            pass = pass && stat_field(lgline, "errors") == fe_closed;
        else
            pass = pass && cr.errors == 0 && cr.lost == 0 && cr.closed == fe_closed &&
                   cr.replies == fe_ok;
    }
    if (loadgen)
        printf("oltp demo %s: conns=%d secs=%d threads=%d mux=%d work=%d loadgen: %s | %s | %s\n",
               pass ? "PASS" : "FAIL", conns, secs, threads, nmux, work, lgline, fec.stats,
               bec.stats[0] ? bec.stats : "be (killed)");
    else
        printf("oltp demo %s: conns=%d secs=%d threads=%d mux=%d work=%d requests=%llu "
               "replies/s=%.0f p50_us=%u p99_us=%u p999_us=%u errors=%llu lost=%llu closed=%llu "
               "| %s | %s\n",
               pass ? "PASS" : "FAIL", conns, secs, threads, nmux, work, cr.replies,
               cr.secs > 0 ? (double)cr.window_replies / cr.secs : 0.0, cr.p50_us, cr.p99_us,
               cr.p999_us, cr.errors, cr.lost, cr.closed, fec.stats,
               bec.stats[0] ? bec.stats : "be (killed)");
    return pass ? 0 : 1;
}
