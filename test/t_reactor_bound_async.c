/* Asynchronous calls on a hybrid bound (lf_bound.h, ASYNCHRONOUS CALLS):
 * lf_bound_start sends and returns, the reply is read by whichever reactor thread
 * the connection is given to, the starting handler gets LF_EV_NOTIFY, and
 * lf_bound_collect takes the result. CLIENTS handlers (eventfds, no interest once
 * registered: they live on notifications and timers) each make calls one after another, from
 * their own handler, while 2 threads run the reactor. The peer is a thread on the
 * other end of a socketpair that answers every frame (test/lf_frames.h) with a body
 * made from its id, a read's worth at a time in reverse order, and holds the "mute"
 * ids until told. Parts (argument A..E runs those; none: all):
 *
 * - A, every call completes exactly once: CALLS calls per client, none mute; every
 *   result is 0 with the body made from its own id; the number of results collected
 *   is the number of calls started (a lost notification hangs the part: AWAIT);
 *   stats.in_flight is 0 at the end, and lf_bound_destroy succeeds.
 * - B, the deadline is a timer of the handler's own: one call in four is mute; its
 *   handler arms a 5 ms timer, and on LF_EV_TIMEOUT lf_bound_cancel (0) and
 *   lf_bound_collect (ECANCELED). The others end 0. Once the peer answers the mute
 *   ones, each late reply is stray (stats.stray == the mute calls) and none lands in
 *   a context (the bodies of later calls stay right).
 * - C, lf_bound_shutdown with a call in flight in every client: each handler is
 *   told, and collects ECONNABORTED; a start after it says ECANCELED and leaves
 *   nothing in flight.
 * - D, handles that go away with calls in flight: half the clients are removed
 *   (lf_reactor_remove) while their mute call waits; their handle_close cancels (0)
 *   and collects (ECANCELED) and frees the client (ASan: nothing touches it after).
 *   Then the reactor is stopped with the other half's calls in flight: nobody is
 *   told; lf_reactor_destroy runs their handle_close, whose collect says ECANCELED
 *   or ECONNABORTED. The bound is destroyed last (EBUSY before the collects).
 * - E, misuse, each with its error and nothing changed: start on a bare bound
 *   (ENOTSUP), with h NULL or len 0 (EINVAL); lf_bound_join on a started context
 *   (EINVAL; the call stays in flight and is collected after); collect on a context
 *   that has no call (ENOENT) and before the reply (EINPROGRESS); the same context
 *   started twice (EBUSY); lf_bound_destroy with a result not collected (EBUSY).
 * - F, a start from a thread that is not h's handler, whose request waits for room
 *   (the peer does not read): the context stays the starter's until lf_bound_start
 *   returns. A cancel meanwhile (from a third thread) waits for the start, tells h
 *   nothing before it, and lets nobody collect; once the peer reads, the start
 *   returns 0, the cancel 0, and h is told and collects ECANCELED. A shutdown
 *   meanwhile makes the start return ECANCELED (nothing was written), and h is
 *   never told of that call: its start's error is its one result.
 * - G, many calls in flight at once: GMANY calls started from the main thread (no
 *   reactor thread; the peer answers only once all are out, in reverse order), so
 *   the id map grows several times (THE MAP) with contexts in it; then the main
 *   thread turns the reactor until every result is in: each collected once, with
 *   the body made from its own id. */
#define LF_BOUND_REACTOR 1
#include "../lf_bound.h"
#include "lf_frames.h"

#include <poll.h>
#include <sys/eventfd.h>

#define CLIENTS 32
#define RUNNERS 2
#define BODY 8
#define MAXHELD 4096

static lf_reactor r;
static lf_bound b;
static int sv[2];

/* ------------------------------------------------------------------ the peer */

static struct {
    pthread_t t;
    LFT_ATOMIC(int) mute_mod;   /* ids with id % mute_mod == 0 are held (0: none) */
    LFT_ATOMIC(int) hold_all;   /* every id is held */
    LFT_ATOMIC(int) release;    /* answer what is held (and what comes later) */
    LFT_ATOMIC(long) held_now;  /* ids held at the moment */
    uint64_t held[MAXHELD];
    int nheld;
} pr;

static void body_of(uint64_t id, unsigned char *out)
{
    uint64_t v = id * 0x9E3779B97F4A7C15ull ^ 0x5a5a5a5aull;
    memcpy(out, &v, BODY);
}

static void reply(uint64_t id)
{
    unsigned char f[HDR + BODY];
    lft_put_header(f, MAGIC, BODY, id);
    body_of(id, f + HDR);
    lft_write_all(sv[1], f, sizeof f);
}

static int is_mute(uint64_t id)
{
    int m = lft_load(&pr.mute_mod);
    return lft_load(&pr.hold_all) || (m > 0 && id % (uint64_t)m == 0);
}

static void *peer_main(void *arg)
{
    static unsigned char buf[1 << 16];
    size_t have = 0;
    (void)arg;
    for (;;) {
        struct pollfd p = {sv[1], POLLIN, 0};
        uint64_t batch[1024];
        int n = 0;
        if (lft_load(&pr.release) && pr.nheld) {
            for (int i = 0; i < pr.nheld; i++)
                reply(pr.held[i]);
            pr.nheld = 0;
            lft_store(&pr.held_now, 0L);
        }
        if (poll(&p, 1, 2) <= 0)
            continue;
        ssize_t got = read(sv[1], buf + have, sizeof buf - have);
        if (got <= 0)
            return NULL; /* the test closed its end */
        have += (size_t)got;
        size_t off = 0;
        while (have - off >= HDR) {
            uint32_t m, len;
            uint64_t id;
            memcpy(&m, buf + off, 4);
            memcpy(&len, buf + off + 4, 4);
            memcpy(&id, buf + off + 8, 8);
            CHECK_EQ(m, MAGIC);
            CHECK_EQ(len, BODY);
            if (have - off < HDR + len)
                break;
            off += HDR + len;
            if (is_mute(id) && !lft_load(&pr.release)) {
                CHECK(pr.nheld < MAXHELD);
                pr.held[pr.nheld++] = id;
                lft_store(&pr.held_now, (long)pr.nheld);
            } else {
                CHECK(n < 1024);
                batch[n++] = id;
            }
        }
        memmove(buf, buf + off, have - off);
        have -= off;
        while (n > 0) /* in reverse: the map, not the order, matches replies */
            reply(batch[--n]);
    }
}

/* ------------------------------------------------------------------ the clients */

struct client {
    lf_handler h; /* first: the reactor hands us &cl->h */
    lf_timer t;   /* B: the mute call's deadline */
    lf_bound_ctx c;
    unsigned char reply[BODY];
    uint64_t id;  /* of the call in flight */
    int inflight, timed, calls, limit;
};

static struct client *cls[CLIENTS];
static LFT_ATOMIC(unsigned long long) next_id, started, ok, cancelled, aborted, closed_ok;
static LFT_ATOMIC(int) no_more; /* stop starting calls */

static void start_call(struct client *cl)
{
    unsigned char req[HDR + BODY];
    uint64_t id = lft_add(&next_id, 1ULL);
    lft_put_header(req, MAGIC, BODY, id);
    body_of(id, req + HDR);
    cl->id = id;
    int rc = lf_bound_start(&b, &cl->c, id, req, sizeof req, NULL, &cl->h);
    if (rc == ECANCELED && lft_load(&no_more))
        return; /* C: the shutdown came first */
    CHECK_EQ(rc, 0);
    lft_add(&started, 1ULL);
    cl->inflight = 1;
    cl->calls++;
    if (lft_load(&pr.mute_mod) > 0 && is_mute(id) && !lft_load(&pr.hold_all)) {
        CHECK_EQ(lf_reactor_timer_start(&r, &cl->t, &cl->h, 5000000LL, 0), 0);
        cl->timed = 1;
    }
}

/* c's result is in: rc as collect returned it */
static void finished(struct client *cl, int rc)
{
    cl->inflight = 0;
    if (cl->timed) {
        (void)lf_reactor_timer_cancel(&r, &cl->t);
        cl->timed = 0;
    }
    if (rc == 0) {
        unsigned char want[BODY];
        CHECK(!is_mute(cl->id) || lft_load(&pr.release));
        CHECK_EQ(cl->c.len, BODY);
        CHECK_EQ(cl->c.id, cl->id);
        body_of(cl->id, want);
        CHECK(memcmp(cl->reply, want, BODY) == 0);
        lft_add(&ok, 1ULL);
    } else if (rc == ECANCELED) {
        lft_add(&cancelled, 1ULL);
    } else {
        CHECK_EQ(rc, ECONNABORTED);
        lft_add(&aborted, 1ULL);
    }
}

static int on_client(lf_handler *h, int fd, uint32_t events)
{
    struct client *cl = (struct client *)h;
    (void)fd;
    if ((events & LF_EV_TIMEOUT) && lf_timer_fired(&cl->t) && cl->inflight && cl->timed) {
        int rc = lf_bound_cancel(&b, &cl->c);
        int got = lf_bound_collect(&b, &cl->c);
        CHECK(rc == 0 || rc == ENOENT); /* ENOENT: the result won the race */
        CHECK(got != EINPROGRESS && got != ENOENT);
        if (rc == 0)
            CHECK_EQ(got, ECANCELED);
        cl->timed = 0;
        finished(cl, got);
    }
    if ((events & LF_EV_NOTIFY) && cl->inflight) {
        int got = lf_bound_collect(&b, &cl->c);
        CHECK(got != ENOENT);
        if (got != EINPROGRESS) /* (a notification can come for a collected call) */
            finished(cl, got);
    }
    if (!cl->inflight && cl->calls < cl->limit && !lft_load(&no_more))
        start_call(cl);
    return LF_KEEP;
}

static void on_client_close(lf_handler *h)
{
    struct client *cl = (struct client *)h;
    if (cl->inflight) {
        int rc = lf_bound_cancel(&b, &cl->c);
        int got = lf_bound_collect(&b, &cl->c);
        CHECK(rc == 0 || rc == ENOENT);
        CHECK(got == ECANCELED || got == ECONNABORTED);
        lft_add(&closed_ok, 1ULL);
    }
    lf_bound_ctx_destroy(&cl->c);
    free(cl);
}

/* ------------------------------------------------------------------ set-up */

static pthread_t runners[RUNNERS];

static void *runner(void *arg)
{
    (void)arg;
    int rc = lf_reactor_run(&r, NULL);
    CHECK_EQ(rc, ECANCELED);
    return NULL;
}

/* h on an eventfd with no interest: a handle that lives on notifications and timers */
static void quiet_handle(lf_handler *h, int (*fn)(lf_handler *, int, uint32_t),
                         void (*close_fn)(lf_handler *))
{
    int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    CHECK(fd >= 0);
    lf_handler_init(h, fn, close_fn);
    CHECK_EQ(lf_reactor_register(&r, h, fd, LF_EV_READ), 0);
    CHECK_EQ(lf_reactor_modify(&r, h, 0), 0);
}

static void open_all(int limit, int mute_mod, int hold_all)
{
    struct lf_bound_hooks hk;
    lft_hooks(&hk);
    lft_store(&pr.mute_mod, mute_mod);
    lft_store(&pr.hold_all, hold_all);
    lft_store(&pr.release, 0);
    lft_store(&no_more, 0);
    pr.nheld = 0;
    lft_store(&pr.held_now, 0L);
    lft_pair(sv, 0);
    lft_hybrid_open(&b, &r, sv[0], &hk);
    CHECK(pthread_create(&pr.t, NULL, peer_main, NULL) == 0);
    lft_store(&started, 0ULL);
    lft_store(&ok, 0ULL);
    lft_store(&cancelled, 0ULL);
    lft_store(&aborted, 0ULL);
    lft_store(&closed_ok, 0ULL);
    for (int i = 0; i < CLIENTS; i++) {
        struct client *cl = (struct client *)calloc(1, sizeof *cl);
        CHECK(cl != NULL);
        lf_timer_init(&cl->t);
        CHECK_EQ(lf_bound_ctx_init(&cl->c, cl->reply, sizeof cl->reply, 0), 0);
        cl->limit = limit;
        quiet_handle(&cl->h, on_client, on_client_close);
        cls[i] = cl;
    }
    for (int i = 0; i < RUNNERS; i++)
        CHECK(pthread_create(&runners[i], NULL, runner, NULL) == 0);
    for (int i = 0; i < CLIENTS; i++) /* go */
        CHECK_EQ(lf_reactor_notify(&r, &cls[i]->h, LF_EV_NOTIFY), 0);
}

/* stop, join, the bound (every call collected), the reactor (closes the clients) */
static void close_all(void)
{
    lf_reactor_stop(&r);
    for (int i = 0; i < RUNNERS; i++)
        lft_join(runners[i]);
    CHECK_EQ(lf_bound_destroy(&b), 0);
    CHECK_EQ(lf_reactor_destroy(&r), 0);
    close(sv[0]); /* the peer reads its end */
    lft_join(pr.t);
    close(sv[1]);
}

static struct lf_bound_stats stats(void)
{
    return lft_stats(&b);
}

/* ------------------------------------------------------------------ the parts */

static void part_a(void)
{
    const int calls = (int)lft_scaled(400);
    open_all(calls, 0, 0);
    AWAIT(lft_load(&ok) == (unsigned long long)CLIENTS * (unsigned long long)calls,
          "every call's result");
    CHECK_EQ(lft_load(&started), (unsigned long long)CLIENTS * calls);
    CHECK_EQ(lft_load(&cancelled) + lft_load(&aborted), 0);
    struct lf_bound_stats s = stats();
    CHECK_EQ(s.in_flight, 0);
    CHECK_EQ(s.replies, (unsigned long long)CLIENTS * calls);
    CHECK_EQ(s.stray, 0);
    printf("  A: %d x %d calls, each collected once, %llu reads, %llu writes\n", CLIENTS,
           calls, s.reads, s.writes);
    close_all();
}

static void part_b(void)
{
    const int calls = (int)lft_scaled(100);
    open_all(calls, 4, 0);
    AWAIT(lft_load(&ok) + lft_load(&cancelled) ==
              (unsigned long long)CLIENTS * (unsigned long long)calls,
          "every call's result or its cancel");
    unsigned long long muted = lft_load(&cancelled);
    CHECK(muted > 0);
    CHECK_EQ(lft_load(&aborted), 0);
    CHECK_EQ(stats().in_flight, 0);
    lft_store(&pr.release, 1);
    AWAIT(stats().stray == muted, "the late replies, read and counted as stray");
    printf("  B: %llu of %llu calls timed out by their handler's timer; their late replies "
           "were stray\n", muted, lft_load(&started));
    close_all();
}

static void part_c(void)
{
    open_all(1, 0, 1);
    AWAIT(lft_load(&pr.held_now) == CLIENTS, "a request from every client at the peer");
    lft_store(&no_more, 1);
    CHECK_EQ(lf_bound_shutdown(&b), 0);
    AWAIT(lft_load(&aborted) == CLIENTS, "ECONNABORTED in every client");
    CHECK_EQ(lft_load(&ok) + lft_load(&cancelled), 0);
    /* a start after the shutdown */
    {
        lf_bound_ctx c;
        unsigned char buf[BODY], req[HDR + BODY];
        lft_put_header(req, MAGIC, BODY, 99999);
        CHECK_EQ(lf_bound_ctx_init(&c, buf, sizeof buf, 0), 0);
        CHECK_EQ(lf_bound_start(&b, &c, 99999, req, sizeof req, NULL, &cls[0]->h), ECANCELED);
        CHECK_EQ(lf_bound_collect(&b, &c), ENOENT);
        lf_bound_ctx_destroy(&c);
    }
    CHECK_EQ(stats().in_flight, 0);
    printf("  C: shutdown: %d calls in flight, each told ECONNABORTED\n", CLIENTS);
    close_all();
}

static void part_d(void)
{
    open_all(1, 0, 1);
    AWAIT(lft_load(&pr.held_now) == CLIENTS, "a request from every client at the peer");
    for (int i = 0; i < CLIENTS / 2; i++)
        CHECK_EQ(lf_reactor_remove(&r, &cls[i]->h), 0);
    AWAIT(lft_load(&closed_ok) == CLIENTS / 2, "the removed clients' handle_close");
    CHECK_EQ(stats().in_flight, CLIENTS - CLIENTS / 2);
    lf_reactor_stop(&r);
    for (int i = 0; i < RUNNERS; i++)
        lft_join(runners[i]);
    CHECK_EQ(lf_bound_destroy(&b), EBUSY); /* the other half, not collected yet */
    CHECK_EQ(lf_reactor_destroy(&r), 0);   /* their handle_close collects */
    CHECK_EQ(lft_load(&closed_ok), CLIENTS);
    CHECK_EQ(lft_load(&ok) + lft_load(&aborted) + lft_load(&cancelled), 0);
    CHECK_EQ(lf_bound_destroy(&b), 0);
    close(sv[0]);
    lft_join(pr.t);
    close(sv[1]);
    printf("  D: %d handles removed and %d destroyed with calls in flight: each collected "
           "by its handle_close\n", CLIENTS / 2, CLIENTS - CLIENTS / 2);
}

/* E: on the main thread, with no reactor thread; h counts its notifications */
static LFT_ATOMIC(int) e_told;

static int on_told(lf_handler *h, int fd, uint32_t events)
{
    (void)h;
    (void)fd;
    if (events & LF_EV_NOTIFY)
        lft_add(&e_told, 1);
    return LF_KEEP;
}

static void part_e(void)
{
    struct lf_bound_hooks hk;
    lf_bound bare;
    lf_bound_ctx c;
    lf_handler h;
    unsigned char buf[BODY], req[HDR + BODY];
    int pv[2];

    lft_hooks(&hk);
    lft_pair(pv, 0);
    CHECK_EQ(lf_bound_init(&bare, pv[0], &hk), 0);
    CHECK_EQ(lf_bound_ctx_init(&c, buf, sizeof buf, 0), 0);
    lft_put_header(req, MAGIC, BODY, 1);
    CHECK_EQ(lf_reactor_init(&r), 0);
    quiet_handle(&h, on_told, NULL);
    CHECK_EQ(lf_bound_start(&bare, &c, 1, req, sizeof req, NULL, &h), ENOTSUP);
    CHECK_EQ(lf_bound_collect(&bare, &c), ENOENT);
    CHECK_EQ(lf_bound_destroy(&bare), 0);
    close(pv[0]);
    close(pv[1]);

    lft_pair(sv, 0);
    CHECK_EQ(lf_bound_init(&b, sv[0], &hk), 0);
    CHECK_EQ(lf_bound_attach(&b, &r), 0);
    CHECK_EQ(lf_bound_start(&b, &c, 1, req, sizeof req, NULL, NULL), EINVAL);
    CHECK_EQ(lf_bound_start(&b, &c, 1, req, 0, NULL, &h), EINVAL);
    CHECK_EQ(lf_bound_collect(&b, &c), ENOENT);
    CHECK_EQ(lf_bound_start(&b, &c, 1, req, sizeof req, NULL, &h), 0);
    CHECK_EQ(lf_bound_start(&b, &c, 2, req, sizeof req, NULL, &h), EBUSY);
    CHECK_EQ(lf_bound_collect(&b, &c), EINPROGRESS);
    CHECK_EQ(lf_bound_join(&b, &c, NULL), EINVAL); /* started: collect takes it */
    CHECK_EQ(stats().in_flight, 1);
    /* the reply, read by a turn of the main thread */
    {
        unsigned char got[HDR + BODY];
        CHECK(lft_read_all(sv[1], got, sizeof got));
        uint64_t id;
        memcpy(&id, got + 8, 8);
        CHECK_EQ(id, 1);
        reply(1);
    }
    for (int i = 0; i < 1000 && lft_load(&e_told) == 0; i++) {
        struct timespec dl;
        lf_deadline_in(&dl, 10000000LL);
        (void)lf_reactor_handle_events(&r, &dl);
    }
    CHECK(lft_load(&e_told) >= 1); /* h was told */
    CHECK_EQ(lf_bound_collect(&b, &c), 0);
    CHECK_EQ(c.len, BODY);
    {
        unsigned char want[BODY];
        body_of(1, want);
        CHECK(memcmp(buf, want, BODY) == 0);
    }
    CHECK_EQ(lf_bound_collect(&b, &c), ENOENT); /* collected */
    CHECK_EQ(stats().in_flight, 0);
    /* a result not collected holds the bound */
    CHECK_EQ(lf_bound_start(&b, &c, 3, req, sizeof req, NULL, &h), 0);
    CHECK_EQ(lf_bound_destroy(&b), EBUSY);
    CHECK_EQ(lf_bound_cancel(&b, &c), 0);
    CHECK_EQ(lf_bound_collect(&b, &c), ECANCELED);
    CHECK_EQ(lf_bound_destroy(&b), 0);
    lf_bound_ctx_destroy(&c);
    CHECK_EQ(lf_reactor_destroy(&r), 0);
    close(sv[0]);
    close(sv[1]);
    printf("  E: misuse answered with its error, nothing changed\n");
}

/* F */
static lf_bound_ctx fc;
static lf_handler fh;
static unsigned char fbuf[BODY];
static LFT_ATOMIC(int) f_told, f_got = -1, f_start = -1, f_cancel = -1;
static unsigned char *f_req; /* the request f_starter starts (FREQ bytes) */
static size_t f_len;

static int on_f(lf_handler *h, int fd, uint32_t events)
{
    (void)h;
    (void)fd;
    if (events & LF_EV_NOTIFY) {
        int rc = lf_bound_collect(&b, &fc);
        lft_add(&f_told, 1);
        if (rc != EINPROGRESS && rc != ENOENT)
            lft_store(&f_got, rc);
    }
    return LF_KEEP;
}

static void *f_canceller(void *arg)
{
    (void)arg;
    lft_store(&f_cancel, lf_bound_cancel(&b, &fc));
    return NULL;
}

static void *f_starter(void *arg)
{
    (void)arg;
    lft_store(&f_start, lf_bound_start(&b, &fc, 7, f_req, f_len, NULL, &fh));
    return NULL;
}

/* start fc from another thread, on a socket the peer does not read: it returns at
 * once, its request queued, the context held */
static void f_start_queued(size_t body)
{
    static unsigned char req[HDR + 65536];
    int told = lft_load(&f_told);
    pthread_t st;
    lft_put_header(req, MAGIC, (uint32_t)body, 7);
    memset(req + HDR, 'q', body);
    f_req = req;
    f_len = HDR + body;
    lft_store(&f_start, -1);
    lft_store(&f_got, -1);
    lft_store(&f_cancel, -1);
    CHECK(pthread_create(&st, NULL, f_starter, NULL) == 0);
    lft_join(st); /* it never waits for room */
    CHECK_EQ(lft_load(&f_start), 0);
    memset(req, 0, sizeof req); /* copied: the caller's buffer is its own again */
    CHECK_EQ(lft_stats(&b).in_flight, 1);
    CHECK_EQ(lf_bound_collect(&b, &fc), EINPROGRESS);
    CHECK_EQ(lft_load(&f_told), told); /* nothing finished it: nobody told */
}

/* the peer: skip junk bytes, then read one whole request of f_len bytes, 'q's */
static void f_peer_reads_request(size_t junk)
{
    static unsigned char got[HDR + 65536];
    CHECK(lft_skip(sv[1], junk));
    uint32_t len;
    CHECK(lft_read_all(sv[1], got, f_len));
    memcpy(&len, got + 4, 4);
    CHECK_EQ(len, f_len - HDR);
    for (size_t i = HDR; i < f_len; i++)
        CHECK(got[i] == 'q');
}

/* nothing more comes from the bound (the socket is drained and stays empty) */
static void f_peer_gets_nothing(void)
{
    unsigned char one;
    lft_sleep_ms(20);
    CHECK(recv(sv[1], &one, 1, MSG_DONTWAIT) < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
}

static void part_f(void)
{
    struct lf_bound_hooks hk;
    pthread_t rt, ct;
    size_t junk;

    lft_hooks(&hk);
    lft_pair(sv, 4096);
    lft_hybrid_open(&b, &r, sv[0], &hk);
    CHECK_EQ(lf_bound_ctx_init(&fc, fbuf, sizeof fbuf, 0), 0);
    quiet_handle(&fh, on_f, NULL);
    CHECK(pthread_create(&rt, NULL, runner, NULL) == 0);

    /* 1. a start on a full socket: queued; the bound's handler writes it once the
     * peer makes room (no thread of ours is in a call), and h gets the reply */
    junk = lft_fill_socket(sv[0]); /* the peer reads nothing until told */
    f_start_queued(BODY);
    f_peer_reads_request(junk);
    {
        unsigned char rep[HDR + BODY];
        lft_put_header(rep, MAGIC, BODY, 7);
        memset(rep + HDR, 'r', BODY);
        lft_write_all(sv[1], rep, sizeof rep);
    }
    AWAIT(lft_load(&f_got) == 0, "h told, and its collect 0");
    CHECK_EQ(fc.len, BODY);
    CHECK(fbuf[0] == 'r' && fbuf[BODY - 1] == 'r');
    CHECK_EQ(lft_stats(&b).in_flight, 0);

    /* 2. a cancel from another thread takes a queued request back: not sent, h told
     * ECANCELED after the cancel returned */
    junk = lft_fill_socket(sv[0]);
    f_start_queued(BODY);
    CHECK(pthread_create(&ct, NULL, f_canceller, NULL) == 0);
    lft_join(ct);
    CHECK_EQ(lft_load(&f_cancel), 0);
    AWAIT(lft_load(&f_got) == ECANCELED, "h told, and its collect ECANCELED");
    CHECK(lft_skip(sv[1], junk));
    f_peer_gets_nothing();
    CHECK_EQ(lft_stats(&b).queued, 0);

    /* 3. a request larger than the socket holds goes out part-way: a cancel returns
     * without waiting for the peer (the rest is moved out of the context), and the
     * rest still goes out when the peer reads (the stream stays whole) */
    f_start_queued(60000);
    CHECK(pthread_create(&ct, NULL, f_canceller, NULL) == 0);
    lft_join(ct);
    CHECK_EQ(lft_load(&f_cancel), 0);
    AWAIT(lft_load(&f_got) == ECANCELED, "h told, and its collect ECANCELED");
    memset(fc.lf__abuf, 'x', fc.lf__acap); /* (white box: the context's copy is free) */
    f_peer_reads_request(0);
    f_peer_gets_nothing();
    CHECK_EQ(lft_stats(&b).send_failed, 0); /* nothing was cut */
    CHECK_EQ(lft_stats(&b).queued, 0);

    /* 4. a deadline passes while the request waits in the queue (the socket full,
     * the peer reads nothing): ETIMEDOUT, not sent, h told without the peer */
    junk = lft_fill_socket(sv[0]);
    {
        static unsigned char req[HDR + BODY];
        struct timespec dl;
        int told = lft_load(&f_told);
        lft_put_header(req, MAGIC, BODY, 8);
        memset(req + HDR, 'q', BODY);
        lf_deadline_in(&dl, 20 * 1000000LL);
        lft_store(&f_got, -1);
        CHECK_EQ(lf_bound_start(&b, &fc, 8, req, sizeof req, &dl, &fh), 0);
        AWAIT(lft_load(&f_got) == ETIMEDOUT, "h told, and its collect ETIMEDOUT");
        CHECK(lft_load(&f_told) > told);
    }
    CHECK(lft_skip(sv[1], junk));
    f_peer_gets_nothing();

    /* 5. a shutdown with a started request queued: not sent (ECANCELED), h is told */
    junk = lft_fill_socket(sv[0]);
    f_start_queued(BODY);
    CHECK_EQ(lf_bound_shutdown(&b), 0);
    AWAIT(lft_load(&f_got) == ECANCELED, "h told, and its collect ECANCELED");
    CHECK_EQ(lft_stats(&b).queued, 0);
    CHECK(lft_skip(sv[1], junk));
    f_peer_gets_nothing(); /* (it never went out) */

    lf_reactor_stop(&r);
    lft_join(rt);
    CHECK_EQ(lf_bound_destroy(&b), 0);
    CHECK_EQ(lf_reactor_destroy(&r), 0);
    lf_bound_ctx_destroy(&fc);
    close(sv[0]);
    close(sv[1]);
    printf("  F: starts from another thread on a full socket returned at once; the bound's "
           "handler wrote the request when room came; a cancel took one back, and let "
           "one cut part-way go on without waiting; a shutdown failed one, not sent\n");
}

/* G */
#define GMANY 3000
static lf_bound_ctx gc[GMANY];
static unsigned char gbuf[GMANY][BODY];

static void part_g(void)
{
    struct lf_bound_hooks hk;
    lf_handler h;
    int left = GMANY, loops = 0;
    static unsigned char seen[GMANY];

    lft_hooks(&hk);
    lft_pair(sv, 0);
    lft_hybrid_open(&b, &r, sv[0], &hk);
    lft_store(&e_told, 0);
    quiet_handle(&h, on_told, NULL); /* (E's: it counts what it is told) */
    lft_store(&pr.mute_mod, 0);
    lft_store(&pr.hold_all, 1); /* the peer holds every request ... */
    lft_store(&pr.release, 0);
    lft_store(&pr.held_now, 0L);
    pr.nheld = 0;
    CHECK(pthread_create(&pr.t, NULL, peer_main, NULL) == 0);
    for (int i = 0; i < GMANY; i++) {
        unsigned char req[HDR + BODY];
        uint64_t id = 1000000 + (uint64_t)i * 7919; /* spread over the hash */
        CHECK_EQ(lf_bound_ctx_init(&gc[i], gbuf[i], BODY, 0), 0);
        lft_put_header(req, MAGIC, BODY, id);
        body_of(id, req + HDR);
        CHECK_EQ(lf_bound_start(&b, &gc[i], id, req, sizeof req, NULL, &h), 0);
    }
    CHECK_EQ(lft_stats(&b).in_flight, GMANY);
    CHECK(b.lf__nmap >= 4 * LF_BOUND_BUCKETS); /* (white box: it grew) */
    /* (what a start left queued, the socket full meanwhile, is written by the bound's
     * handler: this thread turns the reactor for it) */
    while (lft_load(&pr.held_now) < GMANY) {
        struct timespec dl;
        lf_deadline_in(&dl, 10000000LL);
        (void)lf_reactor_handle_events(&r, &dl);
        CHECK(++loops < 100000);
        lft_progress();
    }
    loops = 0;
    lft_store(&pr.release, 1); /* ... and answers them all, in the order they came */
    while (left > 0) {
        struct timespec dl;
        lf_deadline_in(&dl, 10000000LL);
        (void)lf_reactor_handle_events(&r, &dl);
        for (int i = 0; i < GMANY; i++) {
            if (seen[i])
                continue;
            int rc = lf_bound_collect(&b, &gc[i]);
            if (rc == EINPROGRESS)
                continue;
            CHECK_EQ(rc, 0);
            unsigned char want[BODY];
            body_of(gc[i].id, want);
            CHECK_EQ(gc[i].id, 1000000 + (uint64_t)i * 7919);
            CHECK(memcmp(gbuf[i], want, BODY) == 0);
            seen[i] = 1;
            left--;
        }
        CHECK(++loops < 100000);
        lft_progress();
    }
    /* (the loop collects without waiting to be told: the notifications may still be
     * queued in the reactor, and are delivered by later turns) */
    for (int i = 0; i < 1000 && lft_load(&e_told) == 0; i++) {
        struct timespec dl;
        lf_deadline_in(&dl, 10000000LL);
        (void)lf_reactor_handle_events(&r, &dl);
    }
    CHECK(lft_load(&e_told) >= 1);
    struct lf_bound_stats st = lft_stats(&b);
    CHECK_EQ(st.in_flight, 0);
    CHECK_EQ(st.replies, GMANY);
    CHECK_EQ(st.stray, 0);
    for (int i = 0; i < GMANY; i++)
        lf_bound_ctx_destroy(&gc[i]);
    CHECK_EQ(lf_bound_destroy(&b), 0);
    CHECK_EQ(lf_reactor_destroy(&r), 0);
    close(sv[0]);
    lft_join(pr.t);
    close(sv[1]);
    printf("  G: %d calls in flight at once (the id map grew under them), each collected once\n",
           GMANY);
}

/* H: two cancels of one started context at once, and a cancel that waited for a
 * start which then failed. Each cancel returns only when no cancel holds the context
 * any more (a collect right after it has the result), and a cancel acts on the call
 * it was made for, never on the next call started on the same context. */
static lf_bound_ctx hc;
static lf_handler hh;
static unsigned char hreq[HDR + BODY];
static LFT_ATOMIC(int) h_go_s, h_go_a, h_done_s, h_done_a, h_quit;
static LFT_ATOMIC(int) h_rc1 = -1, h_rc2 = -1;

static int on_h(lf_handler *h, int fd, uint32_t events)
{
    (void)h;
    (void)fd;
    (void)events;
    return LF_KEEP;
}

static void *h_starter(void *arg)
{
    (void)arg;
    for (;;) {
        while (!lft_load(&h_go_s)) {
            if (lft_load(&h_quit))
                return NULL;
            sched_yield();
        }
        lft_store(&h_go_s, 0);
        CHECK_EQ(lf_bound_start(&b, &hc, 1, hreq, sizeof hreq, NULL, &hh), 0);
        lft_store(&h_done_s, 1);
    }
}

static void *h_canceller(void *arg)
{
    (void)arg;
    for (;;) {
        while (!lft_load(&h_go_a)) {
            if (lft_load(&h_quit))
                return NULL;
            sched_yield();
        }
        lft_store(&h_go_a, 0);
        int rc = lf_bound_cancel(&b, &hc);
        CHECK(rc == 0 || rc == ENOENT);
        lft_store(&h_done_a, 1);
    }
}

static void *h_drain(void *arg)
{
    unsigned char buf[4096];
    (void)arg;
    while (read(sv[1], buf, sizeof buf) > 0) {
    }
    return NULL;
}

/* a start that fails (its deadline passed), then the context started again at once */
static void *h_restarter(void *arg)
{
    struct timespec past;
    (void)arg;
    lf_deadline_in(&past, 0);
    lft_store(&h_rc1, lf_bound_start(&b, &hc, 1, hreq, sizeof hreq, &past, &hh));
    lft_store(&h_rc2, lf_bound_start(&b, &hc, 2, hreq, sizeof hreq, NULL, &hh));
    return NULL;
}

static void *h_cancel_once(void *arg)
{
    (void)arg;
    lft_store(&h_done_a, lf_bound_cancel(&b, &hc) + 1);
    return NULL;
}

static void part_h(void)
{
    struct lf_bound_hooks hk;
    unsigned char buf[BODY];
    pthread_t st, at, dt;
    long iters = lft_scaled(3000);

    lft_hooks(&hk);
    lft_pair(sv, 0);
    lft_hybrid_open(&b, &r, sv[0], &hk);
    quiet_handle(&hh, on_h, NULL);
    CHECK_EQ(lf_bound_ctx_init(&hc, buf, sizeof buf, 0), 0);
    lft_put_header(hreq, MAGIC, BODY, 1);
    memset(hreq + HDR, 'h', BODY);
    CHECK(pthread_create(&dt, NULL, h_drain, NULL) == 0); /* the peer reads, never answers */
    CHECK(pthread_create(&st, NULL, h_starter, NULL) == 0);
    CHECK(pthread_create(&at, NULL, h_canceller, NULL) == 0);
    for (long i = 0; i < iters; i++) {
        lft_store(&h_done_s, 0);
        lft_store(&h_done_a, 0);
        lft_store(&h_go_s, 1);
        lft_store(&h_go_a, 1); /* (it may come before the start: ENOENT) */
        while (!lft_load(&h_done_s))
            sched_yield();
        int rc = lf_bound_cancel(&b, &hc);
        CHECK(rc == 0 || rc == ENOENT);
        CHECK_EQ(lf_bound_collect(&b, &hc), ECANCELED); /* never EINPROGRESS */
        while (!lft_load(&h_done_a))
            sched_yield();
        CHECK_EQ(lf_bound_collect(&b, &hc), ENOENT);
        lft_progress();
    }
    lft_store(&h_quit, 1);
    lft_join(st);
    lft_join(at);

    /* the stale cancel: the socket full, so that the second call stays queued; the
     * cancel is made while the first start is held at its send (white box: the
     * write queue's lock), so it waits for that start, which then fails */
    shutdown(sv[1], SHUT_RD); /* (the drain ends) */
    lft_join(dt);
    CHECK_EQ(lf_bound_destroy(&b), 0);
    CHECK_EQ(lf_reactor_destroy(&r), 0);
    close(sv[0]);
    close(sv[1]);
    lft_pair(sv, 4096);
    lft_hybrid_open(&b, &r, sv[0], &hk);
    quiet_handle(&hh, on_h, NULL);
    (void)lft_fill_socket(sv[0]);
    for (int i = 0; i < 50; i++) {
        lft_store(&h_rc1, -1);
        lft_store(&h_rc2, -1);
        lft_store(&h_done_a, 0);
        pthread_mutex_lock(&b.lf__send); /* (white box) the start stops at its send */
        CHECK(pthread_create(&st, NULL, h_restarter, NULL) == 0);
        for (int starting = 0; !starting; sched_yield()) {
            pthread_mutex_lock(&b.lf__lock);
            starting = hc.lf__starting;
            pthread_mutex_unlock(&b.lf__lock);
        }
        CHECK(pthread_create(&at, NULL, h_cancel_once, NULL) == 0);
        for (int cancels = 0; !cancels; sched_yield()) {
            pthread_mutex_lock(&b.lf__lock);
            cancels = hc.lf__cancels;
            pthread_mutex_unlock(&b.lf__lock);
        }
        pthread_mutex_unlock(&b.lf__send);
        lft_join(st);
        lft_join(at);
        CHECK_EQ(lft_load(&h_rc1), ETIMEDOUT); /* the first start failed: no call */
        CHECK_EQ(lft_load(&h_done_a), 0 + 1);  /* the cancel withdrew the first call */
        CHECK_EQ(lft_load(&h_rc2), 0);         /* the second is in flight, queued ... */
        CHECK_EQ(lf_bound_collect(&b, &hc), EINPROGRESS); /* ... and nobody cancelled it */
        CHECK_EQ(lf_bound_cancel(&b, &hc), 0);
        CHECK_EQ(lf_bound_collect(&b, &hc), ECANCELED);
        lft_progress();
    }
    CHECK_EQ(lft_stats(&b).queued, 0);
    CHECK_EQ(lf_bound_destroy(&b), 0);
    CHECK_EQ(lf_reactor_destroy(&r), 0);
    lf_bound_ctx_destroy(&hc);
    close(sv[0]);
    close(sv[1]);
    printf("  H: %ld pairs of cancels at once: each collect after a cancel had the result; "
           "a cancel that waited for a failed start left the next call alone\n", iters);
}

/* I: a failure found by a join that reads the connection itself (at the nesting
 * limit: LF_BOUND_STRICT and a reply nobody waits for) fails the started requests
 * still queued too, and tells their handler. The one reactor thread is held by a
 * handler meanwhile, so that the join, not the bound's handler, reads the reply. */
static LFT_ATOMIC(int) i_told, i_hold;

static int on_i(lf_handler *h, int fd, uint32_t events)
{
    (void)h;
    (void)fd;
    if (events & LF_EV_NOTIFY)
        lft_add(&i_told, 1);
    return LF_KEEP;
}

static int on_i_hold(lf_handler *h, int fd, uint32_t events)
{
    (void)h;
    (void)fd;
    if (events & LF_EV_NOTIFY) {
        lft_store(&i_hold, 1);
        while (lft_load(&i_hold) == 1)
            lft_sleep_ms(1); /* until the test lets go */
    }
    return LF_KEEP;
}

static void part_i(void)
{
    struct lf_bound_hooks hk;
    lf_handler h, hold;
    lf_bound_ctx c, j;
    unsigned char buf[BODY], jb[BODY], req[HDR + BODY], f[HDR + BODY];
    pthread_t rt;
    struct timespec dl;
    size_t junk;

    lft_hooks(&hk);
    hk.flags = LF_BOUND_STRICT;
    lft_pair(sv, 4096);
    lft_hybrid_open(&b, &r, sv[0], &hk);
    CHECK_EQ(lf_bound_set_nest_max(&b, 0), 0); /* every join reads for itself */
    quiet_handle(&h, on_i, NULL);
    quiet_handle(&hold, on_i_hold, NULL);
    CHECK(pthread_create(&rt, NULL, runner, NULL) == 0);
    CHECK_EQ(lf_bound_ctx_init(&c, buf, BODY, 0), 0);
    CHECK_EQ(lf_bound_ctx_init(&j, jb, BODY, 0), 0);
    junk = lft_fill_socket(sv[0]);
    lft_put_header(req, MAGIC, BODY, 1);
    memset(req + HDR, 'i', BODY);
    CHECK_EQ(lf_bound_start(&b, &c, 1, req, sizeof req, NULL, &h), 0); /* queued */
    AWAIT(lft_stats(&b).queued == 1, "the start's request queued");
    CHECK_EQ(lf_reactor_notify(&r, &hold, LF_EV_NOTIFY), 0);
    AWAIT(lft_load(&i_hold) == 1, "the reactor thread held");
    CHECK_EQ(lf_bound_expect(&b, &j, 5000), 0);
    lft_put_header(f, MAGIC, BODY, 777); /* a reply nobody waits for: EPROTO */
    memset(f + HDR, 0, BODY);
    lft_write_all(sv[1], f, sizeof f);
    lf_deadline_in(&dl, 5000000000LL);
    CHECK_EQ(lf_bound_join(&b, &j, &dl), EPROTO);
    lft_store(&i_hold, 2);
    AWAIT(lft_load(&i_told) > 0, "the started call's handler told of the failure");
    CHECK_EQ(lf_bound_collect(&b, &c), EPROTO);
    CHECK_EQ(lft_stats(&b).queued, 0);
    CHECK(lft_skip(sv[1], junk));
    lf_reactor_stop(&r);
    lft_join(rt);
    CHECK_EQ(lf_bound_destroy(&b), 0);
    CHECK_EQ(lf_reactor_destroy(&r), 0);
    lf_bound_ctx_destroy(&c);
    lf_bound_ctx_destroy(&j);
    close(sv[0]);
    close(sv[1]);
    printf("  I: a failure read by a join at the nesting limit failed the queued start too, "
           "and its handler was told\n");
}

/* J: a cancelled request cut part-way, left queued by a peer that never reads, goes
 * with the bound: lf_bound_destroy frees its block (the ASan run checks for leaks). */
static void part_j(void)
{
    struct lf_bound_hooks hk;
    lf_handler h;
    lf_bound_ctx c;
    unsigned char buf[BODY];
    static unsigned char req[HDR + 60000];
    pthread_t rt;
    lf_bound *bp = (lf_bound *)malloc(sizeof *bp); /* (on the heap: a block only it
                                                     * points to is a leak to ASan) */

    CHECK(bp != NULL);
    lft_hooks(&hk);
    lft_pair(sv, 4096);
    lft_hybrid_open(bp, &r, sv[0], &hk);
    quiet_handle(&h, on_h, NULL);
    CHECK(pthread_create(&rt, NULL, runner, NULL) == 0);
    CHECK_EQ(lf_bound_ctx_init(&c, buf, BODY, 0), 0);
    lft_put_header(req, MAGIC, 60000, 1);
    memset(req + HDR, 'j', 60000);
    CHECK_EQ(lf_bound_start(bp, &c, 1, req, sizeof req, NULL, &h), 0); /* part-way */
    CHECK_EQ(lf_bound_cancel(bp, &c), 0);
    CHECK_EQ(lf_bound_collect(bp, &c), ECANCELED);
    lf_bound_ctx_destroy(&c); /* (its copy is not the block's) */
    CHECK_EQ(lft_stats(bp).in_flight, 0);
    CHECK_EQ(lft_stats(bp).queued, 1); /* the rest, in a block of the bound's own */
    lf_reactor_stop(&r);
    lft_join(rt);
    CHECK_EQ(lf_bound_destroy(bp), 0);
    CHECK(bp->lf__q_head == NULL); /* (white box: nothing left for nobody to free) */
    free(bp);
    CHECK_EQ(lf_reactor_destroy(&r), 0);
    close(sv[0]);
    close(sv[1]);
    printf("  J: a cancelled request cut part-way went with the bound\n");
}

int main(int argc, char **argv)
{
    const char *parts = argc > 1 ? argv[1] : "ABCDEFGHIJ";
    double t0 = lft_now();
    lft_start("t_reactor_bound_async", 30);
    printf("t_reactor_bound_async %s/%s:\n", lf_reactor_backend_name(), lf_promote_name());
    if (strchr(parts, 'A'))
        part_a();
    if (strchr(parts, 'B'))
        part_b();
    if (strchr(parts, 'C'))
        part_c();
    if (strchr(parts, 'D'))
        part_d();
    if (strchr(parts, 'E'))
        part_e();
    if (strchr(parts, 'F'))
        part_f();
    if (strchr(parts, 'H'))
        part_h();
    if (strchr(parts, 'I'))
        part_i();
    if (strchr(parts, 'J'))
        part_j();
    if (strchr(parts, 'G'))
        part_g();
    printf("  in %.2f s\n", lft_now() - t0);
    lft_pass();
    return 0;
}
