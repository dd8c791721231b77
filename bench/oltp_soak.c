/* bench/oltp_soak.c - oltp soak: the servers of bench/oltp.c under churn, resets and
 * stalls, with every request accounted for (test/soak.sh runs it under ASan+UBSan).
 *
 *   oltp soak -s SECONDS [-c CONNS] [-t T] [-m MUX] [-w WORK] [-S SEED]
 *             [-d DEADLINE_MS] [-i IDLE_MS]
 *
 *   Starts both servers as the demo does, with -R, and drives the front-end with
 *   CONNS churning clients for SECONDS, every choice drawn from one seeded generator
 *   (-S; the seed is printed: the schedule of choices repeats, interleavings do not):
 *   - a client connection lives for a random number of requests, then closes cleanly,
 *     or resets (SO_LINGER 0) idle, with a request in flight, or after part of one,
 *     or goes quiet until the front-end's idle timer closes it, or sends one more
 *     request just when that timer is due (a race: served, or met by the idle
 *     notice); a new connection replaces it at once (handlers and their timers churn
 *     in the front-end);
 *   - every 0.5-2 s: SIGUSR1 to the back-end (it breaks a MUX connection) or to the
 *     front-end (it breaks one itself), SIGUSR2 to the front-end (it breaks them all:
 *     no_backend for a moment), or SIGUSR2 to the back-end (a stall: a call times
 *     out, and its reply comes back late, a stray).
 *   Every request ends in exactly one client outcome: ok (wire_check), wrong, failed
 *   for a reason (self_reset, partial, srv_reset, srv_timeout, srv_no_backend,
 *   srv_other: the front-end's notice; idle_race: the idle close crossed our request;
 *   connect), unexplained (a close without a notice) or lost (no outcome by the end:
 *   a hang). After SIGTERM to both servers it checks sent = ok + wrong + failed + lost,
 *   that nothing is wrong, lost or unexplained, and that the three processes' counts
 *   agree (soak_check lists the equations). Progress every 10 s on stderr, one
 *   summary line on stdout, exit 0 only if every equation holds.
 */
#include "oltp.h"

#include <stdarg.h>
#include <sys/epoll.h>

/* ------------------------------------------------------------------ >>soak
 * See the top of this file. One thread: CONNS client connections on one epoll set,
 * every choice from one seeded generator, plain counters. */

static uint64_t soak_rng; /* splitmix64: small, and the same on every platform */

static uint64_t soak_rand64(void)
{
    uint64_t z = (soak_rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static unsigned soak_rand(unsigned n)
{
    return (unsigned)(soak_rand64() % n);
}

/* a connection's phase, and how it ends once its requests are done */
enum { SC_DOWN, SC_ACTIVE, SC_RESET_WAIT, SC_PARTIAL_WAIT, SC_IDLE_WAIT, SC_LATE_WAIT };
enum { END_CLOSE, END_RESET, END_RESET_INFLIGHT, END_PARTIAL, END_IDLE, END_LATE };

struct sconn {
    int fd;          /* -1: not connected */
    int phase;       /* SC_* */
    int plan;        /* END_* */
    int busy;        /* a whole request is out and has no outcome yet */
    int doomed;      /* ... and it is the one we reset under (SOAK_DOOMED) */
    int hard;        /* END_PARTIAL: end with a reset, not a clean close */
    uint32_t conn;   /* this connection's number: a new one per connection */
    uint64_t id;     /* the outstanding (or next) request's id */
    unsigned left;   /* ordinary requests before the end */
    unsigned have;   /* bytes in rx */
    long long at;    /* when the timed phase (all but ACTIVE) ends */
    unsigned char rx[WIRE_SIZE];
};

/* The fate of every request (outcomes), and the churn. d_*: the doomed subset. */
static struct {
    unsigned long long sent, ok, wrong, lost;
    unsigned long long connect, partial, self_reset, srv[NOTE_N], unexplained;
    unsigned long long d_sent, d_ok, d_srv[NOTE_N];
    /* anomalies that are not a request's fate: each must stay 0 */
    unsigned long long stray_reply, bad_notice, eof_idle, idle_expired;
    /* churn */
    unsigned long long opened, closes, resets, idle_notices, idle_waits, idle_cut, late;
    unsigned long long be_breaks, fe_breaks, fe_breaks_all, stalls; /* signals sent */
} sk;

static struct {
    int port, ep, stopping;
    uint32_t work, next_conn;
    long long idle_ns;
} so;

static unsigned long long soak_failed(void)
{
    unsigned long long n = sk.connect + sk.partial + sk.self_reset + sk.unexplained;
    for (int r = 1; r < NOTE_N; r++)
        n += sk.srv[r];
    return n;
}

/* Close c (reset: SO_LINGER 0, an RST instead of a FIN); a new connection replaces it
 * on the next turn of the loop. Whatever was out has its outcome counted already. */
static void soak_drop(struct sconn *c, int reset)
{
    if (reset) {
        struct linger lg;
        lg.l_onoff = 1;
        lg.l_linger = 0;
        (void)setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        sk.resets++;
    } else {
        sk.closes++;
    }
    epoll_ctl(so.ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    c->fd = -1;
    c->busy = 0;
    c->have = 0;
    c->phase = SC_DOWN;
    c->at = now_ns();
}

/* The first n bytes of the next request; doomed: marked SOAK_DOOMED. */
static int soak_write(struct sconn *c, size_t n, int doomed)
{
    unsigned char m[WIRE_SIZE];
    wire_fill(m, c->id, c->conn | (doomed ? SOAK_DOOMED : 0u), so.work);
    return write_all(c->fd, m, n, WRITE_WAIT_MS);
}

static void soak_read(struct sconn *c);

/* Send a whole request. A write that fails means the front-end closed the
 * connection first: its reason (an idle notice) must be in the socket. */
static void soak_request(struct sconn *c, int doomed)
{
    sk.sent++;
    if (doomed)
        sk.d_sent++;
    c->busy = 1;
    c->doomed = doomed;
    if (soak_write(c, WIRE_SIZE, doomed) != 0) {
        soak_read(c);
        if (c->fd >= 0 && c->busy) { /* no notice, no end: nothing explains it */
            sk.unexplained++;
            soak_drop(c, 0);
        }
    }
}

/* Nothing is out on c: the next request, or the connection's end. */
static void soak_next(struct sconn *c, long long now)
{
    if (so.stopping)
        return; /* no new requests: it is closed at the end */
    if (c->left > 0) {
        c->left--;
        soak_request(c, 0);
        return;
    }
    switch (c->plan) {
    case END_CLOSE:
        soak_drop(c, 0);
        break;
    case END_RESET:
        soak_drop(c, 1);
        break;
    case END_RESET_INFLIGHT: /* a request, and a reset 0-3 ms later: often under it */
        soak_request(c, 1);
        if (c->fd >= 0 && c->busy) {
            c->phase = SC_RESET_WAIT;
            c->at = now + (long long)soak_rand(3000) * 1000LL;
        }
        break;
    case END_PARTIAL: /* part of a request, then a reset or a close 0-3 ms later */
        sk.sent++;
        if (soak_write(c, 1 + soak_rand(WIRE_SIZE - 1), 0) != 0) {
            sk.partial++; /* its fate: never whole */
            soak_drop(c, 0);
            break;
        }
        c->phase = SC_PARTIAL_WAIT;
        c->hard = (int)soak_rand(2);
        c->at = now + (long long)soak_rand(3000) * 1000LL;
        break;
    case END_IDLE: /* quiet until the front-end's idle timer closes it */
        sk.idle_waits++;
        c->phase = SC_IDLE_WAIT;
        c->at = now + so.idle_ns + 5000000000LL;
        break;
    default: /* END_LATE: quiet for IDLE_MS +- 2 ms, then one more request: it races
              * the idle close (either it is served, or it meets the idle notice) */
        c->phase = SC_LATE_WAIT;
        c->at = now + so.idle_ns - 2000000LL + (long long)soak_rand(4000) * 1000LL;
        break;
    }
}

static void soak_open(struct sconn *c, long long now)
{
    struct epoll_event ev;
    unsigned r;
    int fd = srv_connect(so.port);
    if (fd < 0 || srv_nonblock(fd) != 0) {
        if (fd >= 0)
            close(fd);
        sk.sent++; /* the request this connection was for */
        sk.connect++;
        c->phase = SC_DOWN;
        c->at = now + 10000000LL;
        return;
    }
    ev.events = EPOLLIN;
    ev.data.ptr = c;
    if (epoll_ctl(so.ep, EPOLL_CTL_ADD, fd, &ev) != 0)
        srv_die("oltp soak: epoll_ctl");
    c->fd = fd;
    c->conn = so.next_conn++;
    if (so.next_conn >= SOAK_DOOMED - 1u) /* never the top bit, never a notice's ~0 */
        so.next_conn = 1;
    c->id = 0;
    c->have = 0;
    c->busy = 0;
    c->left = soak_rand(2) ? 1 + soak_rand(10) : 1 + soak_rand(400); /* at least one */
    r = soak_rand(100);
    c->plan = r < 25 ? END_CLOSE : r < 43 ? END_RESET : r < 65 ? END_RESET_INFLIGHT
            : r < 80 ? END_PARTIAL : r < 90 ? END_IDLE : END_LATE;
    c->phase = SC_ACTIVE;
    sk.opened++;
    soak_next(c, now);
}

/* The front-end closed c without a notice. */
static void soak_eof(struct sconn *c)
{
    if (c->busy || c->phase == SC_PARTIAL_WAIT)
        sk.unexplained++; /* a request's fate nobody can explain */
    else
        sk.eof_idle++;    /* an idle connection closed for no reason given */
    soak_drop(c, 0);
}

static void soak_notice(struct sconn *c, uint32_t why)
{
    if (why >= NOTE_N) {
        sk.bad_notice++;
        if (c->busy)
            sk.unexplained++;
    } else {
        if (why == NOTE_IDLE)
            sk.idle_notices++;
        if (c->busy) {
            sk.srv[why]++; /* srv[NOTE_IDLE]: the idle close crossed our request */
            if (c->doomed)
                sk.d_srv[why]++;
        } else if (c->phase == SC_PARTIAL_WAIT) {
            sk.partial++;
            if (why != NOTE_IDLE)
                sk.bad_notice++; /* only an idle close may end a partial request */
        } else if (why != NOTE_IDLE) {
            sk.bad_notice++; /* a failure notice with no request out */
        }
    }
    soak_drop(c, 0);
}

/* c is readable: one message (a reply or a notice), or its end. */
static void soak_read(struct sconn *c)
{
    for (;;) {
        ssize_t got = read(c->fd, c->rx + c->have, WIRE_SIZE - c->have);
        uint32_t why;
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (got <= 0) {
            soak_eof(c);
            return;
        }
        c->have += (unsigned)got;
        if (c->have < WIRE_SIZE)
            continue;
        c->have = 0;
        if ((why = notice_reason(c->rx)) != 0) {
            soak_notice(c, why);
            return;
        }
        if (!c->busy) {
            sk.stray_reply++; /* a reply to nothing */
            soak_drop(c, 0);
            return;
        }
        c->busy = 0;
        if (wire_check(c->rx, c->id, c->conn | (c->doomed ? SOAK_DOOMED : 0u)) != 0) {
            sk.wrong++;
            soak_drop(c, 0);
            return;
        }
        sk.ok++;
        if (c->doomed)
            sk.d_ok++;
        c->id++;
        if (c->phase == SC_RESET_WAIT)
            soak_drop(c, 1); /* the reply beat our reset: reset with nothing out */
        else
            soak_next(c, now_ns());
        return;
    }
}

/* c's timed phase is over. */
static void soak_timed(struct sconn *c, long long now)
{
    switch (c->phase) {
    case SC_RESET_WAIT: /* still no reply: reset under the request */
        sk.self_reset++;
        soak_drop(c, 1);
        break;
    case SC_PARTIAL_WAIT:
        sk.partial++;
        soak_drop(c, c->hard);
        break;
    case SC_IDLE_WAIT:
        sk.idle_expired++; /* the front-end's idle timer never closed it */
        soak_drop(c, 0);
        break;
    case SC_LATE_WAIT: /* the late request; after its reply the connection closes */
        sk.late++;
        c->phase = SC_ACTIVE;
        c->plan = END_CLOSE;
        soak_request(c, 0);
        break;
    case SC_DOWN:
        if (!so.stopping)
            soak_open(c, now);
        break;
    default:
        break;
    }
}

static void soak_progress(long long secs)
{
    fprintf(stderr,
            "oltp soak: %4llds sent=%llu ok=%llu failed=%llu (connect=%llu partial=%llu "
            "self_reset=%llu srv_reset=%llu srv_timeout=%llu srv_no_backend=%llu srv_other=%llu "
            "idle_race=%llu unexplained=%llu) wrong=%llu | conns opened=%llu closed=%llu "
            "reset=%llu idle_closed=%llu late=%llu | be_breaks=%llu fe_breaks=%llu "
            "fe_breaks_all=%llu stalls=%llu\n",
            secs, sk.sent, sk.ok, soak_failed(), sk.connect, sk.partial, sk.self_reset,
            sk.srv[NOTE_RESET], sk.srv[NOTE_TIMEOUT], sk.srv[NOTE_NO_BACKEND], sk.srv[NOTE_OTHER],
            sk.srv[NOTE_IDLE], sk.unexplained, sk.wrong, sk.opened, sk.closes, sk.resets,
            sk.idle_notices, sk.late, sk.be_breaks, sk.fe_breaks, sk.fe_breaks_all, sk.stalls);
}

/* 1 if the child has exited (it stays waitable for reap). */
static int soak_child_gone(pid_t pid)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid;
}

/* The clients, for secs seconds, then until every request has its fate (drain_ns at
 * most). 0, or -1 if a server died under us. */
static int soak_clients(int conns, int secs, long long drain_ns, pid_t fe_pid, pid_t be_pid)
{
    struct sconn *cc = (struct sconn *)calloc((size_t)conns, sizeof *cc);
    struct epoll_event evs[64];
    long long start = now_ns(), end = start + (long long)secs * 1000000000LL, drain_end = 0;
    long long next_chaos, next_progress = start + 10000000000LL, next_check = start;
    int rc = 0;

    if (cc == NULL || (so.ep = epoll_create1(EPOLL_CLOEXEC)) < 0)
        srv_die("oltp soak");
    next_chaos = start + 500000000LL + (long long)soak_rand(1500) * 1000000LL;
    for (int i = 0; i < conns; i++) {
        cc[i].fd = -1;
        soak_open(&cc[i], start);
    }
    for (;;) {
        long long now = now_ns(), next = now + 10000000LL;
        int n, pending = 0;

        if (!so.stopping && now >= end) {
            so.stopping = 1; /* no new requests, no new connections */
            drain_end = now + drain_ns;
            for (int i = 0; i < conns; i++)
                if (cc[i].phase == SC_IDLE_WAIT || cc[i].phase == SC_LATE_WAIT) {
                    sk.idle_cut++;
                    soak_drop(&cc[i], 0);
                }
        }
        if (so.stopping) {
            for (int i = 0; i < conns; i++)
                pending += cc[i].busy || cc[i].phase == SC_RESET_WAIT ||
                           cc[i].phase == SC_PARTIAL_WAIT;
            if (pending == 0 || now >= drain_end)
                break;
        } else if (now >= next_chaos) {
            unsigned r = soak_rand(10);
            if (r < 3) {
                kill(be_pid, SIGUSR1); /* the back-end breaks a MUX connection */
                sk.be_breaks++;
            } else if (r < 6) {
                kill(fe_pid, SIGUSR1); /* the front-end breaks one itself */
                sk.fe_breaks++;
            } else if (r < 7) {
                kill(fe_pid, SIGUSR2); /* ... or all of them: no_backend until re-opened */
                sk.fe_breaks_all++;
            } else {
                kill(be_pid, SIGUSR2); /* a transaction stalls: its call times out */
                sk.stalls++;
            }
            next_chaos = now + 500000000LL + (long long)soak_rand(1500) * 1000000LL;
        }
        if (now >= next_progress) {
            soak_progress((now - start) / 1000000000LL);
            next_progress += 10000000000LL;
        }
        if (now >= next_check) {
            if (soak_child_gone(fe_pid) || soak_child_gone(be_pid)) {
                fprintf(stderr, "oltp soak: a server exited during the run\n");
                rc = -1;
                break;
            }
            next_check = now + 100000000LL;
        }
        for (int i = 0; i < conns; i++) {
            struct sconn *c = &cc[i];
            if (c->phase == SC_ACTIVE || (c->phase == SC_DOWN && so.stopping))
                continue;
            if (now >= c->at)
                soak_timed(c, now);
            if (c->phase != SC_ACTIVE && c->at < next)
                next = c->at;
        }
        n = epoll_wait(so.ep, evs, 64, next > now ? (int)((next - now + 999999) / 1000000) : 0);
        for (int k = 0; k < n; k++) {
            struct sconn *c = (struct sconn *)evs[k].data.ptr;
            if (c->fd >= 0) /* (a stale event of a replaced connection reads EAGAIN) */
                soak_read(c);
        }
    }
    for (int i = 0; i < conns; i++) {
        if (cc[i].busy || cc[i].phase == SC_PARTIAL_WAIT)
            sk.lost++; /* no fate within the drain time: a hang */
        if (cc[i].fd >= 0)
            close(cc[i].fd);
    }
    close(so.ep);
    free(cc);
    sleep_ns(200000000LL); /* let the front-end see those last closes before SIGTERM */
    return rc;
}

static int soak_bad;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void soak_require(int ok, const char *fmt, ...)
{
    va_list ap;
    if (ok)
        return;
    soak_bad++;
    va_start(ap, fmt);
    fprintf(stderr, "oltp soak: FAILED: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
}

/* The equations. C: the clients (sk), F: the front-end's line, B: the back-end's. */
static void soak_check(const struct child *fec, const struct child *bec, int conns, int nmux,
                       int secs)
{
    const char *f = fec->stats, *b = bec->stats;
#define F(k) stat_field(f, k)
#define B(k) stat_field(b, k)
    unsigned long long f_ok = F("ok"), f_calls = F("calls"), f_failed = F("failed");
    unsigned long long f_fail[NOTE_N], d_fail[NOTE_N], d_ok = F("d_ok"), notes = 0, unseen = 0;
    unsigned long long closes = F("client_eof") + F("client_err") + F("idle_closed") + F("closed");
    unsigned long long ticks = F("ticks"), tick_exp = F("tick_expected"), txns = B("txns");

    f_fail[NOTE_RESET] = F("reset");
    f_fail[NOTE_TIMEOUT] = F("timedout");
    f_fail[NOTE_NO_BACKEND] = F("no_backend");
    f_fail[NOTE_OTHER] = f_failed - f_fail[NOTE_RESET] - f_fail[NOTE_TIMEOUT] -
                         f_fail[NOTE_NO_BACKEND];
    d_fail[NOTE_RESET] = F("d_reset");
    d_fail[NOTE_TIMEOUT] = F("d_timeout");
    d_fail[NOTE_NO_BACKEND] = F("d_no_backend");
    d_fail[NOTE_OTHER] = F("d_other");
    for (int r = 1; r < NOTE_N; r++)
        notes += F(r == NOTE_RESET ? "notes_reset" : r == NOTE_TIMEOUT ? "notes_timeout"
                   : r == NOTE_NO_BACKEND ? "notes_no_backend" : r == NOTE_OTHER ? "notes_other"
                   : "notes_idle");

    /* the processes */
    soak_require(fec->status == 0 && fec->stats[0] != '\0',
                 "the front-end exited %d on SIGTERM (stats line: %s)", fec->status,
                 fec->stats[0] ? "yes" : "none");
    soak_require(bec->status == 0 && bec->stats[0] != '\0',
                 "the back-end exited %d on SIGTERM (stats line: %s)", bec->status,
                 bec->stats[0] ? "yes" : "none");
    soak_require(strstr(b, "consistent=yes") != NULL, "the back-end's table is inconsistent");
    /* the clients: every request has exactly one fate, and it is explained */
    soak_require(sk.sent == sk.ok + sk.wrong + soak_failed() + sk.lost,
                 "sent %llu != ok %llu + wrong %llu + failed %llu + lost %llu", sk.sent, sk.ok,
                 sk.wrong, soak_failed(), sk.lost);
    soak_require(sk.wrong == 0, "%llu replies failed wire_check", sk.wrong);
    soak_require(sk.lost == 0, "%llu requests had no outcome after the drain (a hang)", sk.lost);
    soak_require(sk.unexplained == 0, "%llu requests ended by a close without a notice",
                 sk.unexplained);
    soak_require(sk.stray_reply + sk.bad_notice + sk.eof_idle + sk.idle_expired == 0,
                 "anomalies: stray_reply=%llu bad_notice=%llu eof_idle=%llu idle_expired=%llu",
                 sk.stray_reply, sk.bad_notice, sk.eof_idle, sk.idle_expired);
    soak_require(sk.d_sent == sk.d_ok + sk.self_reset + sk.d_srv[NOTE_RESET] +
                                  sk.d_srv[NOTE_TIMEOUT] + sk.d_srv[NOTE_NO_BACKEND] +
                                  sk.d_srv[NOTE_OTHER] + sk.d_srv[NOTE_IDLE],
                 "doomed requests: sent %llu != ok + self_reset + notified", sk.d_sent);
    /* client <-> front-end, exactly, for the requests nobody reset under */
    soak_require(f_ok - d_ok == sk.ok - sk.d_ok,
                 "calls that succeeded (not doomed) %llu != replies the clients checked %llu",
                 f_ok - d_ok, sk.ok - sk.d_ok);
    for (int r = 1; r < NOTE_IDLE; r++)
        soak_require(f_fail[r] - d_fail[r] == sk.srv[r] - sk.d_srv[r],
                     "calls that failed with %s (not doomed) %llu != notices the clients got %llu",
                     note_name[r], f_fail[r] - d_fail[r], sk.srv[r] - sk.d_srv[r]);
    /* ... and within bounds for the doomed ones: what the clients missed went to
     * connections they reset under the request */
    for (int r = 1; r < NOTE_IDLE; r++)
        unseen += d_fail[r] - sk.d_srv[r];
    unseen += d_ok - sk.d_ok;
    soak_require(d_ok >= sk.d_ok && F("d_calls") <= sk.d_sent && unseen <= sk.self_reset,
                 "doomed: calls %llu ok %llu, clients sent %llu got %llu ok, %llu unseen > "
                 "%llu self resets",
                 F("d_calls"), d_ok, sk.d_sent, sk.d_ok, unseen, sk.self_reset);
    soak_require(f_fail[NOTE_OTHER] == 0, "%llu calls failed for no reason we can name",
                 f_fail[NOTE_OTHER]);
    soak_require(sk.idle_notices <= F("notes_idle"),
                 "the clients got %llu idle notices, the front-end sent %llu", sk.idle_notices,
                 F("notes_idle"));
    /* the front-end's own books */
    soak_require(notes + F("note_lost") == f_failed + F("idle_closed"),
                 "notices %llu + lost %llu != failed calls %llu + idle closes %llu", notes,
                 F("note_lost"), f_failed, F("idle_closed"));
    soak_require(F("closed") == f_failed + F("reply_lost"),
                 "failure closes %llu != failed calls %llu + replies lost %llu", F("closed"),
                 f_failed, F("reply_lost"));
    soak_require(F("clients") == sk.opened,
                 "the front-end accepted %llu connections, the clients opened %llu", F("clients"),
                 sk.opened);
    soak_require(closes <= F("clients") && closes + (unsigned long long)conns >= F("clients"),
                 "client connections closed %llu, accepted %llu", closes, F("clients"));
    soak_require(F("tm_cancel_ok") + F("tm_cancel_none") == closes,
                 "idle timers cancelled %llu + %llu != connections closed %llu", F("tm_cancel_ok"),
                 F("tm_cancel_none"), closes);
    soak_require(F("tm_fired") >= F("idle_closed"), "idle closes %llu > idle timer expiries %llu",
                 F("idle_closed"), F("tm_fired"));
    soak_require(F("bound_replies") == f_ok, "lf_bound delivered %llu replies, calls ok %llu",
                 F("bound_replies"), f_ok);
    /* a call times out in its join, or (nested: the send inherits the deadline of the
     * join below it) in its send, which then wrote nothing */
    soak_require(F("timeouts") + F("send_timeouts") == f_fail[NOTE_TIMEOUT],
                 "lf_bound timed out %llu joins and %llu sends, calls timed out %llu",
                 F("timeouts"), F("send_timeouts"), f_fail[NOTE_TIMEOUT]);
    /* a stray reply (its id nobody waits for) is one whose call ended without it: a
     * timeout, a cancel, or a connection failure with the reply already on its way
     * (lf_bound reads what is buffered before it sees the end) */
    soak_require(F("stray") <= F("timeouts") + F("bound_cancels") + f_fail[NOTE_RESET] &&
                     F("stray") <= txns - f_ok,
                 "stray replies %llu > calls that ended without their reply %llu, or > "
                 "transactions whose reply no call took %llu",
                 F("stray"), F("timeouts") + F("bound_cancels") + f_fail[NOTE_RESET], txns - f_ok);
    soak_require(tick_exp < 8 || (ticks * 4 >= tick_exp && ticks <= tick_exp + 1),
                 "%llu ticks of the 100 ms timer in %llu periods", ticks, tick_exp);
    soak_require(F("reopen_failed") == 0 && F("reopens") <= F("retires") &&
                     F("retires") <= F("reopens") + (unsigned long long)nmux,
                 "re-opens %llu, failed %llu, retired %llu", F("reopens"), F("reopen_failed"),
                 F("retires"));
    /* front-end <-> back-end: a transaction whose reply was lost belongs to a call
     * that failed by a reset or a timeout */
    soak_require(txns >= f_ok && txns <= f_calls - f_fail[NOTE_NO_BACKEND] &&
                     txns - f_ok <= f_fail[NOTE_RESET] + f_fail[NOTE_TIMEOUT],
                 "back-end transactions %llu, calls %llu ok %llu reset %llu timed out %llu", txns,
                 f_calls, f_ok, f_fail[NOTE_RESET], f_fail[NOTE_TIMEOUT]);
    /* and the soak did what it says (over a minute, missing a kind is not luck) */
    if (secs >= 60) {
        soak_require(sk.opened > (unsigned long long)conns && sk.resets > 0 &&
                         sk.self_reset > 0 && sk.partial > 0 && sk.idle_notices > 0,
                     "too little client churn: opened %llu resets %llu self_reset %llu partial "
                     "%llu idle closes %llu",
                     sk.opened, sk.resets, sk.self_reset, sk.partial, sk.idle_notices);
        soak_require(B("breaks") + F("breaks") > 0 && F("reopens") > 0 && B("stalls") > 0,
                     "too little chaos: breaks %llu+%llu, re-opens %llu, stalls %llu", B("breaks"),
                     F("breaks"), F("reopens"), B("stalls"));
    }
#undef F
#undef B
}

int soak_main(int argc, char **argv)
{
    int conns = 32, secs = -1, threads = 4, nmux = 2, work = 200, deadline_ms = 500,
        idle_ms = 200, have_seed = 0;
    unsigned long long seed = 0;
    const char *self = "/proc/self/exe";
    char s_t[16], s_m[16], s_p[16], s_d[16], s_i[16], s_x[16];
    struct child bec, fec;
    int bport, fport, rc;

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
        else if (strcmp(o, "-i") == 0)
            parse_int(o, argv[i + 1], &idle_ms);
        else if (strcmp(o, "-S") == 0) {
            char *end;
            seed = strtoull(argv[i + 1], &end, 0);
            if (argv[i + 1][0] == '\0' || *end != '\0') {
                fprintf(stderr, "oltp: bad value for -S: %s\n", argv[i + 1]);
                return 2;
            }
            have_seed = 1;
        } else {
            fprintf(stderr, "usage: oltp soak -s SECONDS [-c CONNS] [-t THREADS] [-m MUX] "
                            "[-w WORK] [-S SEED] [-d DEADLINE_MS] [-i IDLE_MS]\n");
            return 2;
        }
    }
    if (secs < 1 || conns < 1 || threads < 1 || nmux < 1 || deadline_ms < 1 || idle_ms < 1) {
        fprintf(stderr, "oltp soak: -s is required; -s, -c, -t, -m, -d and -i must be "
                        "at least 1\n");
        return 2;
    }
    if (!have_seed)
        seed = (unsigned long long)time(NULL) ^ ((unsigned long long)getpid() << 32);
    soak_rng = seed;
    so.work = (uint32_t)work;
    so.idle_ns = (long long)idle_ms * 1000000LL;
    so.next_conn = 1;
    signal(SIGPIPE, SIG_IGN);
    srv_raise_nofile();
    snprintf(s_t, sizeof s_t, "%d", threads);
    snprintf(s_m, sizeof s_m, "%d", nmux);
    snprintf(s_d, sizeof s_d, "%d", deadline_ms);
    snprintf(s_i, sizeof s_i, "%d", idle_ms);
    snprintf(s_x, sizeof s_x, "%d", 3 * deadline_ms); /* a stall: its call times out */
    fprintf(stderr, "oltp soak: seed=%llu secs=%d conns=%d threads=%d mux=%d work=%d "
                    "deadline_ms=%d idle_ms=%d (rerun: -S %llu)\n",
            seed, secs, conns, threads, nmux, work, deadline_ms, idle_ms, seed);

    memset(&bec, 0, sizeof bec);
    memset(&fec, 0, sizeof fec);
    bec.name = "backend";
    fec.name = "frontend";
    {
        char *bargv[] = { "oltp", "backend", "-p", "0", "-t", s_t, "-R", s_x, NULL };
        if (spawn(&bec, self, bargv) != 0 || (bport = read_port(&bec, 10000)) < 0) {
            fprintf(stderr, "oltp soak: the back-end did not start\n");
            return 2;
        }
    }
    snprintf(s_p, sizeof s_p, "%d", bport);
    {
        char *fargv[] = { "oltp", "frontend", "-p", "0", "-b", s_p, "-m", s_m, "-t", s_t,
                          "-d", s_d, "-R", s_i, NULL };
        if (spawn(&fec, self, fargv) != 0 || (fport = read_port(&fec, 10000)) < 0) {
            fprintf(stderr, "oltp soak: the front-end did not start\n");
            kill(bec.pid, SIGKILL);
            return 2;
        }
    }
    so.port = fport;
    rc = soak_clients(conns, secs, 2LL * deadline_ms * 1000000LL + 5000000000LL, fec.pid,
                      bec.pid);

    kill(fec.pid, SIGTERM);
    reap(&fec, 30000);
    kill(bec.pid, SIGTERM);
    reap(&bec, 30000);

    soak_require(rc == 0, "the run was cut short");
    soak_check(&fec, &bec, conns, nmux, secs);
    printf("oltp soak %s: seed=%llu secs=%d conns=%d threads=%d mux=%d work=%d sent=%llu "
           "ok=%llu failed=%llu (connect=%llu partial=%llu self_reset=%llu srv_reset=%llu "
           "srv_timeout=%llu srv_no_backend=%llu srv_other=%llu idle_race=%llu "
           "unexplained=%llu) wrong=%llu lost=%llu doomed=%llu conns_opened=%llu "
           "closed=%llu reset=%llu idle_closed=%llu late=%llu be_breaks=%llu fe_breaks=%llu "
           "fe_breaks_all=%llu stalls=%llu | %s | %s\n",
           soak_bad ? "FAIL" : "PASS", seed, secs, conns, threads, nmux, work, sk.sent, sk.ok,
           soak_failed(), sk.connect, sk.partial, sk.self_reset, sk.srv[NOTE_RESET],
           sk.srv[NOTE_TIMEOUT], sk.srv[NOTE_NO_BACKEND], sk.srv[NOTE_OTHER], sk.srv[NOTE_IDLE],
           sk.unexplained, sk.wrong, sk.lost, sk.d_sent, sk.opened, sk.closes, sk.resets,
           sk.idle_notices, sk.late, sk.be_breaks, sk.fe_breaks, sk.fe_breaks_all, sk.stalls,
           fec.stats[0] ? fec.stats : "fe (no stats)", bec.stats[0] ? bec.stats : "be (no stats)");
    return soak_bad ? 1 : 0;
}
