/* Shutdown under load: stopping a reactor or a bound while requests are in flight
 * answers or explicitly fails every one of them, every thread returns, and nothing
 * leaks (ASan; descriptors too: as many are open after each round as after the first).
 *
 * - A, the server stops. An lf_reactor (THREADS threads in lf_reactor_run) serves
 *   CONNS socketpair connections; on each, PER_CONN client threads share one bare
 *   lf_bound and call in a loop, each call with a deadline, each reply checked byte for
 *   byte. Mid-run, lf_reactor_stop: every server thread returns ECANCELED and no
 *   handle_close has run. The calls in flight then end at their deadline (ETIMEDOUT:
 *   awaited, so the path is taken every round) until lf_reactor_destroy runs each
 *   handle_close exactly once and closes the server's ends: every client's next
 *   result is its last, ECONNRESET (a read saw the close) or EPIPE (its send met the
 *   closed end first: both are how a reset connection ends, and which one a client
 *   sees is the scheduler's choice). Every call counts once, as ok, timed out or
 *   ended (anything else fails); per connection the bound's stats agree (replies ==
 *   ok, timeouts == timed out, stray <= timed out, failed ECONNRESET once a client
 *   saw it, send_failed EPIPE once a client saw that, no context left), and the
 *   server wrote at least every reply the clients read.
 * - B, the client shuts down. WAITERS threads call on one bare bound against a peer
 *   thread that answers at once; then it holds every answer back until all of them
 *   wait (one leads, the others follow), and lets the held ones out 1 ms apart. After
 *   the first is delivered, lf_bound_shutdown. Every call returns 0 with its reply,
 *   or ends the thread's loop: ECONNABORTED (its request was out when the shutdown
 *   came) or ECANCELED (its next call found the bound shut down before it wrote a
 *   byte); after it expect and send say ECANCELED. A context expected but never
 *   joined makes lf_bound_destroy EBUSY before and joins with ECONNABORTED after
 *   (the bound cannot tell that nothing was sent for it). Stats: replies == ok, no
 *   timeouts, no cancels (shutdown is not lf_bound_cancel), stray <= the calls it
 *   ended, nothing in flight, nobody leading or following; destroy 0 once every
 *   thread is out.
 * - C, hybrid. The same with the bound attached to an lf_reactor (LF_BOUND_REACTOR):
 *   the waiters and RUNNERS threads in lf_reactor_run lead and follow in the
 *   reactor's pool, and lf_reactor_stop comes under them. Each call returns 0 with
 *   its reply or ends as in B, the runners ECANCELED, every thread returns, the
 *   expected context joins with ECONNABORTED; the stop finished the bound as a
 *   shutdown does (expect and send say ECANCELED, failed ECANCELED, no cancels
 *   counted); lf_bound_destroy, then lf_reactor_destroy, both 0.
 * Rounds of A, B and C: lft_scaled(4). Timing decides only when the stop comes; the
 * assertions hold whatever the interleaving. Deadlines: A's end the waits nobody will
 * answer; B waits without one, C with one far away (both only bound a hang). */
#define LF_BOUND_REACTOR 1
#include "../lf_bound.h"
#include "lf_frames.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>

#define THREADS 3  /* A: server threads in lf_reactor_run */
#define CONNS 3    /* A: connections to the server */
#define PER_CONN 3 /* A: client threads sharing each connection's bound */
#define WAITERS 6  /* B, C: client threads on one bound */
#define RUNNERS 1  /* C: lf_reactor_run threads beside the waiters */

#define MAXREQ 29  /* request body bytes, at most */
#define REPLY_MAX (8 + MAXREQ)
#define BUFSZ 64   /* a client's reply buffer */
#define FILL 0xee  /* what it holds before each call */
#define A_DEADLINE_MS 100L
#define C_DEADLINE_MS 60000L

/* ------------------------------------------------------------------ frames
 * A request for id carries 1..MAXREQ bytes made from id. The server's work: the
 * reply is a checksum of the body (8 bytes), then the body reversed, each byte
 * xor 0xa5. The server computes it from what it read, the client from what it sent. */

static size_t request(unsigned char *f, uint64_t id)
{
    uint32_t n = 1u + (uint32_t)(id % MAXREQ);
    lft_put_header(f, MAGIC, n, id);
    for (uint32_t i = 0; i < n; i++)
        f[HDR + i] = (unsigned char)(id * 131u + (uint64_t)i * 7u + 3u);
    return HDR + (size_t)n;
}

static size_t answer(unsigned char *f, uint64_t id, const unsigned char *body, size_t n)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++)
        sum = sum * 31u + body[i];
    lft_put_header(f, MAGIC, (uint32_t)(n + 8), id);
    memcpy(f + HDR, &sum, 8);
    for (size_t i = 0; i < n; i++)
        f[HDR + 8 + i] = (unsigned char)(body[n - 1 - i] ^ 0xa5u);
    return HDR + 8 + n;
}

/* The reply in buf is id's answer, byte for byte, and nothing was written past it. */
static void check_reply(uint64_t id, const lf_bound_ctx *c, const unsigned char *buf)
{
    unsigned char req[HDR + MAXREQ], want[HDR + REPLY_MAX];
    size_t n = request(req, id) - HDR;
    size_t m = answer(want, id, req + HDR, n) - HDR;
    CHECK_EQ(c->len, m);
    CHECK(memcmp(buf, want + HDR, m) == 0);
    for (size_t i = m; i < BUFSZ; i++)
        CHECK_EQ(buf[i], FILL);
}

static struct lf_bound_stats bst(lf_bound *b)
{
    struct lf_bound_stats s;
    CHECK_EQ(lf_bound_stats(b, &s), 0);
    return s;
}

static struct lf_reactor_stats rst(lf_reactor *r)
{
    struct lf_reactor_stats s;
    CHECK_EQ(lf_reactor_stats(r, &s), 0);
    return s;
}

static lf_bound *bound_up(lf_bound *b, int fd)
{
    struct lf_bound_hooks hooks;
    memset(&hooks, 0, sizeof hooks);
    hooks.header_len = HDR;
    hooks.parse_header = lft_parse;
    CHECK_EQ(lf_bound_init(b, fd, &hooks), 0);
    return b;
}

/* Descriptors open now (below 1024: more than this test ever has). */
static int open_fds(void)
{
    int n = 0;
    for (int fd = 0; fd < 1024; fd++)
        n += fcntl(fd, F_GETFD) != -1;
    return n;
}

/* ------------------------------------------------------------------ a client thread
 * Calls on b in a loop until a result other than 0 or ETIMEDOUT; counts each. */

struct client {
    lf_bound *b;
    uint64_t tag;      /* the ids are tag << 32 | sequence: never reused */
    long deadline_ms;  /* 0: none */
    int probe;         /* B: after the last call, expect and send must fail the same way */
    long long started, ok, timedout;
    int last;          /* the result that ended the loop */
    int probe_expect, probe_send;
    pthread_t t;
};

static LFT_ATOMIC(long long) total_ok, total_timedout;

static void *client_main(void *arg)
{
    struct client *cl = (struct client *)arg;
    unsigned char buf[BUFSZ], req[HDR + MAXREQ];
    lf_bound_ctx c;
    int rc;

    /* HEAP: different priorities, so the heap really orders the followers */
    CHECK_EQ(lf_bound_ctx_init(&c, buf, sizeof buf, (int)(cl->tag % 3)), 0);
    for (uint64_t seq = 0;; seq++) {
        uint64_t id = cl->tag << 32 | seq;
        size_t n = request(req, id);
        struct timespec dl;
        memset(buf, FILL, sizeof buf);
        if (cl->deadline_ms)
            CHECK_EQ(lf_deadline_in(&dl, cl->deadline_ms * 1000000LL), 0);
        rc = lf_bound_call(cl->b, &c, id, req, n, cl->deadline_ms ? &dl : NULL);
        cl->started++;
        lft_progress();
        if (rc == 0) {
            check_reply(id, &c, buf);
            cl->ok++;
            lft_add(&total_ok, 1LL);
        } else if (rc == ETIMEDOUT) {
            cl->timedout++;
            lft_add(&total_timedout, 1LL);
        } else {
            break;
        }
    }
    cl->last = rc;
    if (cl->probe) {
        cl->probe_expect = lf_bound_expect(cl->b, &c, cl->tag << 32 | 0xffffffffu);
        cl->probe_send = lf_bound_send(cl->b, req, request(req, cl->tag << 32));
    }
    lf_bound_ctx_destroy(&c);
    return NULL;
}

static void client_start(struct client *cl, lf_bound *b, uint64_t tag, long deadline_ms,
                         int probe)
{
    memset(cl, 0, sizeof *cl);
    cl->b = b;
    cl->tag = tag;
    cl->deadline_ms = deadline_ms;
    cl->probe = probe;
    cl->last = -1;
    CHECK(pthread_create(&cl->t, NULL, client_main, cl) == 0);
}

/* ------------------------------------------------------------------ A: the server stops */

typedef struct srv_conn {
    lf_handler h; /* first: the reactor hands us &h */
    int idx;
    size_t have; /* bytes of an incomplete request in rx (one thread at a time) */
    unsigned char rx[4096];
} srv_conn;

static lf_reactor r;
static LFT_ATOMIC(int) closes[CONNS];
static LFT_ATOMIC(long long) served;

/* Read what is there, answer every whole request. Level-triggered, so stopping at
 * EAGAIN or at any other point loses nothing. */
static int srv_event(lf_handler *h, int fd, uint32_t events)
{
    srv_conn *s = (srv_conn *)(void *)h;
    (void)events;
    for (;;) {
        ssize_t n = read(fd, s->rx + s->have, sizeof s->rx - s->have);
        size_t off = 0;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return LF_KEEP;
        if (n <= 0)
            return LF_REMOVE; /* the client hung up (never in this test: checked) */
        s->have += (size_t)n;
        for (;;) {
            unsigned char out[HDR + REPLY_MAX];
            uint64_t id;
            size_t len;
            if (s->have - off < HDR)
                break;
            CHECK_EQ(lft_parse(NULL, s->rx + off, &id, &len), 0);
            CHECK(len >= 1 && len <= MAXREQ);
            if (s->have - off < HDR + len)
                break;
            lft_write_all(fd, out, answer(out, id, s->rx + off + HDR, len));
            lft_add(&served, 1LL);
            off += HDR + len;
        }
        memmove(s->rx, s->rx + off, s->have - off);
        s->have -= off;
    }
}

static void srv_close(lf_handler *h)
{
    srv_conn *s = (srv_conn *)(void *)h;
    lft_add(&closes[s->idx], 1);
    free(s);
}

static int run_rc[THREADS + RUNNERS];

static void *runner(void *arg)
{
    long i = (long)arg;
    run_rc[i] = lf_reactor_run(&r, NULL);
    lft_progress();
    return NULL;
}

struct conn {
    lf_bound b;
    int cli, srv;
};

static struct conn conns[CONNS];
static struct client acl[CONNS * PER_CONN];
static long long a_calls, a_ok, a_timedout, a_reset, a_stray;

static void server_stops(void)
{
    pthread_t th[THREADS];
    long long ok0, timedout0, ok = 0, timedout = 0, stray = 0;
    struct lf_reactor_stats rs;

    lft_store(&total_ok, 0LL);
    lft_store(&total_timedout, 0LL);
    lft_store(&served, 0LL);
    CHECK_EQ(lf_reactor_init(&r), 0);
    for (int i = 0; i < CONNS; i++) {
        int sv[2];
        srv_conn *s = (srv_conn *)calloc(1, sizeof *s);
        CHECK(s != NULL);
        CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
        conns[i].cli = sv[0];
        conns[i].srv = sv[1];
        CHECK(fcntl(sv[1], F_SETFL, fcntl(sv[1], F_GETFL) | O_NONBLOCK) == 0);
        s->idx = i;
        lft_store(&closes[i], 0);
        lf_handler_init(&s->h, srv_event, srv_close);
        CHECK_EQ(lf_reactor_register(&r, &s->h, sv[1], LF_EV_READ), 0);
        bound_up(&conns[i].b, sv[0]);
    }
    for (long i = 0; i < THREADS; i++) {
        run_rc[i] = -1;
        CHECK(pthread_create(&th[i], NULL, runner, (void *)i) == 0);
    }
    for (int i = 0; i < CONNS * PER_CONN; i++)
        client_start(&acl[i], &conns[i / PER_CONN].b, (uint64_t)i + 1, A_DEADLINE_MS, 0);

    ok0 = lft_scaled(1000);
    AWAIT(lft_load(&total_ok) >= ok0, "the clients to get replies from the server");
    CHECK_EQ(lf_reactor_stop(&r), 0); /* under load: requests in flight everywhere */
    for (int i = 0; i < THREADS; i++) {
        CHECK(pthread_join(th[i], NULL) == 0);
        CHECK_EQ(run_rc[i], ECANCELED);
    }
    /* stopped, not destroyed: every connection is still registered and open */
    for (int i = 0; i < CONNS; i++)
        CHECK_EQ(lft_load(&closes[i]), 0);
    rs = rst(&r);
    CHECK(rs.dispatched > 0);
    CHECK_EQ(rs.pool.leader + rs.pool.followers + rs.pool.processing + rs.pool.joined, 0u);
    /* nobody answers now: the calls in flight end at their deadline */
    timedout0 = lft_load(&total_timedout);
    AWAIT(lft_load(&total_timedout) > timedout0, "a call to time out after the stop");

    CHECK_EQ(lf_reactor_destroy(&r), 0); /* handle_close each, the server's ends closed */
    for (int i = 0; i < CONNS; i++)
        CHECK_EQ(lft_load(&closes[i]), 1);
    for (int i = 0; i < CONNS * PER_CONN; i++) {
        struct client *cl = &acl[i];
        CHECK(pthread_join(cl->t, NULL) == 0);
        /* the one explicit end, either way a reset connection ends: nothing else came */
        CHECK(cl->last == ECONNRESET || cl->last == EPIPE);
        CHECK_EQ(cl->started, cl->ok + cl->timedout + 1);
        a_calls += cl->started;
        a_reset++;
    }
    for (int k = 0; k < CONNS; k++) {
        long long kok = 0, ktimedout = 0;
        int kreset = 0, kpipe = 0;
        struct lf_bound_stats s = bst(&conns[k].b);
        for (int j = 0; j < PER_CONN; j++) {
            kok += acl[k * PER_CONN + j].ok;
            ktimedout += acl[k * PER_CONN + j].timedout;
            kreset += acl[k * PER_CONN + j].last == ECONNRESET;
            kpipe += acl[k * PER_CONN + j].last == EPIPE;
        }
        CHECK_EQ(s.replies, kok);
        CHECK_EQ(s.own + s.handed_off, s.replies);
        CHECK_EQ(s.timeouts, ktimedout);
        CHECK(s.stray <= (unsigned long long)ktimedout); /* late replies only */
        CHECK_EQ(s.cancels + s.refused + s.skipped, 0ULL);
        /* the read side failed if a client saw it; if every client's send met the
         * closed end first, nobody had to read the close */
        CHECK(s.failed == ECONNRESET || (kreset == 0 && s.failed == 0));
        CHECK(s.send_failed == EPIPE || (kpipe == 0 && s.send_failed == 0));
        CHECK_EQ(s.in_flight, 0u);
        CHECK_EQ(s.pool.leader + s.pool.followers + s.pool.processing + s.pool.joined, 0u);
        CHECK_EQ(lf_bound_destroy(&conns[k].b), 0);
        close(conns[k].cli);
        ok += kok;
        timedout += ktimedout;
        stray += (long long)s.stray;
    }
    CHECK_EQ(ok, lft_load(&total_ok));
    CHECK_EQ(timedout, lft_load(&total_timedout));
    CHECK(ok + stray <= lft_load(&served)); /* each reply read at most once */
    a_ok += ok;
    a_timedout += timedout;
    a_stray += stray;
}

/* ------------------------------------------------------------------ B, C: a peer
 * Answers every request at once (FLOW); in HOLD it reads the requests and keeps their
 * answers; back in FLOW it writes the held answers newest first, 1 ms apart, so that
 * the shutdown lands while they still arrive. */

enum { FLOW, HOLD, QUIT };

struct peer {
    int fd; /* blocking */
    LFT_ATOMIC(int) mode;
    LFT_ATOMIC(int) held;
    unsigned char q[WAITERS][HDR + REPLY_MAX];
    size_t qlen[WAITERS];
    long long answered;
    pthread_t t;
};

static struct peer pr;

static void *peer_main(void *arg)
{
    struct peer *p = (struct peer *)arg;
    for (;;) {
        int mode = lft_load(&p->mode), held = lft_load(&p->held);
        unsigned char h[HDR], body[MAXREQ], out[HDR + REPLY_MAX];
        struct pollfd pfd;
        uint64_t id;
        size_t len;
        if (mode == QUIT)
            return NULL;
        if (mode == FLOW && held > 0) {
            for (int i = held - 1; i >= 0; i--) {
                lft_write_all(p->fd, p->q[i], p->qlen[i]);
                p->answered++;
                lft_sleep_ms(1);
            }
            lft_store(&p->held, 0);
            continue;
        }
        pfd.fd = p->fd;
        pfd.events = POLLIN;
        pfd.revents = 0;
        if (poll(&pfd, 1, 1) <= 0)
            continue;
        CHECK(lft_read_all(p->fd, h, HDR)); /* requests come whole, the client stays */
        CHECK_EQ(lft_parse(NULL, h, &id, &len), 0);
        CHECK(len >= 1 && len <= MAXREQ);
        CHECK(lft_read_all(p->fd, body, len));
        if (mode == HOLD) {
            /* each waiter has one call in flight: never more than WAITERS held */
            CHECK(held < WAITERS);
            p->qlen[held] = answer(p->q[held], id, body, len);
            lft_store(&p->held, held + 1);
        } else {
            lft_write_all(p->fd, out, answer(out, id, body, len));
            p->answered++;
        }
    }
}

/* ------------------------------------------------------------------ B, C */

static lf_bound bb;
static struct client wcl[WAITERS];
static long long b_calls, b_ok, b_canceled, b_aborted, b_stray;
static long long c_calls, c_ok, c_canceled, c_aborted, c_stray;

/* Every waiter leads or follows, with its request held by the peer. */
static int all_waiting(int hybrid)
{
    struct lf_bound_stats s = bst(&bb);
    if (s.in_flight != WAITERS || lft_load(&pr.held) != WAITERS)
        return 0;
    if (hybrid) {
        struct lf_reactor_stats rs = rst(&r);
        return rs.pool.leader == 1 && rs.pool.followers == WAITERS + RUNNERS - 1 &&
               rs.pool.processing == 0;
    }
    return s.pool.leader == 1 && s.pool.followers == WAITERS - 1;
}

static void bound_stops(int hybrid)
{
    int sv[2];
    pthread_t run[RUNNERS];
    lf_bound_ctx x;
    unsigned char xbuf[BUFSZ];
    unsigned long long base;
    long long ok = 0, calls = 0, ended, aborted = 0;
    struct lf_bound_stats s;

    lft_store(&total_ok, 0LL);
    lft_store(&total_timedout, 0LL);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    bound_up(&bb, sv[0]);
    if (hybrid) {
        CHECK_EQ(lf_reactor_init(&r), 0);
        CHECK_EQ(lf_bound_attach(&bb, &r), 0); /* sv[0] stays ours */
    }
    pr.fd = sv[1];
    lft_store(&pr.mode, FLOW);
    lft_store(&pr.held, 0);
    pr.answered = 0;
    CHECK(pthread_create(&pr.t, NULL, peer_main, &pr) == 0);
    if (hybrid) {
        for (long i = 0; i < RUNNERS; i++) {
            run_rc[i] = -1;
            CHECK(pthread_create(&run[i], NULL, runner, (void *)i) == 0);
        }
    }
    for (int i = 0; i < WAITERS; i++)
        client_start(&wcl[i], &bb, (uint64_t)i + 1, hybrid ? C_DEADLINE_MS : 0, 1);

    AWAIT(bst(&bb).replies >= (unsigned long long)lft_scaled(500), "replies under load");
    lft_store(&pr.mode, HOLD);
    AWAIT(all_waiting(hybrid), "every waiter to lead or follow, its answer held");
    /* a context expected but not joined (id 0: no client's) keeps the bound busy */
    CHECK_EQ(lf_bound_ctx_init(&x, xbuf, sizeof xbuf, 0), 0);
    CHECK_EQ(lf_bound_expect(&bb, &x, 0), 0);
    CHECK_EQ(lf_bound_destroy(&bb), EBUSY);
    base = bst(&bb).replies;
    lft_store(&pr.mode, FLOW); /* the held answers start to arrive, 1 ms apart */
    AWAIT(bst(&bb).replies > base, "the first held answer to be delivered");
    if (hybrid)
        CHECK_EQ(lf_reactor_stop(&r), 0);
    else
        CHECK_EQ(lf_bound_shutdown(&bb), 0);

    for (int i = 0; i < WAITERS; i++) {
        struct client *cl = &wcl[i];
        CHECK(pthread_join(cl->t, NULL) == 0);
        /* the one end of the loop (0s before it): abandoned in flight, or not sent */
        CHECK(cl->last == ECONNABORTED || cl->last == ECANCELED);
        aborted += cl->last == ECONNABORTED;
        CHECK_EQ(cl->timedout, 0);
        CHECK_EQ(cl->started, cl->ok + 1);
        CHECK_EQ(cl->probe_expect, ECANCELED); /* hybrid: the stop finished the bound */
        CHECK_EQ(cl->probe_send, ECANCELED);
        ok += cl->ok;
        calls += cl->started;
    }
    ended = WAITERS; /* each thread's last call */
    if (hybrid) {
        for (int i = 0; i < RUNNERS; i++) {
            CHECK(pthread_join(run[i], NULL) == 0);
            CHECK_EQ(run_rc[i], ECANCELED);
        }
    }
    CHECK_EQ(lf_bound_join(&bb, &x, NULL), ECONNABORTED);
    lf_bound_ctx_destroy(&x);
    lft_store(&pr.mode, QUIT);
    CHECK(pthread_join(pr.t, NULL) == 0);

    s = bst(&bb);
    CHECK_EQ(ok, lft_load(&total_ok));
    CHECK_EQ(s.replies, ok); /* a reply delivered is a call that returned 0 */
    CHECK_EQ(s.own + s.handed_off, s.replies);
    CHECK(ok <= pr.answered);
    CHECK_EQ(s.timeouts + s.refused + s.skipped, 0ULL);
    CHECK(s.stray <= (unsigned long long)ended);
    CHECK_EQ(s.in_flight, 0u);
    if (hybrid) {
        struct lf_reactor_stats rs = rst(&r);
        /* the reactor was the connection's only reader: its stop finishes the bound
         * as lf_bound_shutdown does (it used to leave it open: later calls sent
         * requests whose replies nobody could read) */
        CHECK_EQ(s.failed, ECANCELED);
        CHECK_EQ(s.cancels, 0ULL); /* a stop is not lf_bound_cancel */
        CHECK_EQ(rs.pool.leader + rs.pool.followers + rs.pool.processing + rs.pool.joined, 0u);
        CHECK_EQ(lf_bound_destroy(&bb), 0); /* first the bound (it leaves the reactor) */
        CHECK_EQ(lf_reactor_destroy(&r), 0);
        close(sv[0]);
        c_calls += calls;
        c_ok += ok;
        c_canceled += ended - aborted;
        c_aborted += aborted;
        c_stray += (long long)s.stray;
    } else {
        CHECK_EQ(s.failed, ECANCELED);
        CHECK_EQ(s.cancels, 0ULL); /* shutdown is not lf_bound_cancel */
        CHECK_EQ(s.pool.leader + s.pool.followers + s.pool.processing + s.pool.joined, 0u);
        CHECK_EQ(lf_bound_destroy(&bb), 0);
        close(sv[0]);
        b_calls += calls;
        b_ok += ok;
        b_canceled += ended - aborted;
        b_aborted += aborted;
        b_stray += (long long)s.stray;
    }
    close(sv[1]);
}

int main(void)
{
    long long rounds = lft_scaled(4);
    int fds = -1;
    double t0 = lft_now();

    lft_start("t_reactor_shutdown", 30);
    for (long long i = 0; i < rounds; i++) {
        server_stops();
        lft_progress();
        bound_stops(0);
        lft_progress();
        bound_stops(1);
        lft_progress();
        /* the first round may open what a library keeps for later; then no change */
        if (fds < 0)
            fds = open_fds();
        else
            CHECK_EQ(open_fds(), fds);
    }
    printf("t_reactor_shutdown %s/%s: %lld rounds in %.2f s; server stop: %lld calls = "
           "%lld ok + %lld timed out + %lld reset (%lld late replies stray); bound "
           "shutdown: %lld calls = %lld ok + %lld aborted + %lld cancelled (%lld stray); "
           "hybrid stop: %lld calls = %lld ok + %lld aborted + %lld cancelled (%lld stray)\n",
           lf_reactor_backend_name(), lf_promote_name(), rounds, lft_now() - t0, a_calls,
           a_ok, a_timedout, a_reset, a_stray, b_calls, b_ok, b_aborted, b_canceled, b_stray,
           c_calls, c_ok, c_aborted, c_canceled, c_stray);
    lft_pass();
    return 0;
}
