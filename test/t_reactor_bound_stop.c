/* What went out when a bound is shut down: lf_bound_shutdown (bare) and, hybrid,
 * lf_reactor_stop. The contract (lf_bound.h, RESULTS): ECANCELED says that nothing
 * of the request was written; a request written wholly or in part and then
 * abandoned ends with ECONNABORTED (or 0, if its reply came first); and a call made
 * after the shutdown or stop returned writes nothing. The peer is a thread on the
 * other end of a socketpair that parses every frame (test/lf_frames.h), answers or
 * holds it, and at the end says exactly which requests it received, whole or as a
 * cut-off tail. Three parts (argument A, B or C runs one; none: all):
 *
 * - A, the bug this test was written for. A hybrid bound whose reactor is stopped while no
 *   waiter of the bound is inside it (lf_reactor_run threads, or nobody, turn it;
 *   the usual case): the bound used to learn of the stop only when one of its own
 *   waiters turned the reactor, so lf_bound_expect and lf_bound_send returned 0 and
 *   the bytes reached the peer, and lf_bound_call reported ECANCELED for a request
 *   the peer received. Now, with each of expect, send, send_until and call as the
 *   first call after the stop (and stats before any of them): ECANCELED from every
 *   one, stats.failed ECANCELED, and the peer receives zero bytes after the stop.
 *   The same after lf_reactor_destroy without a stop first (bound and reactor may
 *   be destroyed in either order), and for a bare bound after lf_bound_shutdown.
 * - B, what a shutdown or stop says to requests that went out, bare and hybrid: a
 *   call whose request the peer holds (received, not answered) returns ECONNABORTED,
 *   not ECANCELED; a context expected and never sent for joins with ECONNABORTED
 *   too (the bound cannot tell that no send came: it says the safe thing); a call
 *   whose 4 MiB request is cut part-way (the peer does not read, the sender waits
 *   for room) returns ECONNABORTED, the peer holds a cut-off tail of it and nothing
 *   after it, and later calls say ECANCELED.
 * - C, the race. SENDERS threads call lf_bound_call in a loop (no deadline; bodies
 *   of 1 to 64 bytes, one in eight of 8 to 48 KiB through a small send buffer, so
 *   sends wait for room and can be cut) while the main thread shuts the bound down
 *   (bare) or stops the reactor (hybrid, with a thread in lf_reactor_run beside
 *   them) after a random number of replies; each sender then makes one more call,
 *   after the stop returned. Every call's result is 0, ECONNABORTED or ECANCELED;
 *   against what the peer received: 0 was received whole (and its reply checked),
 *   ECANCELED not a byte of it (not whole, not the tail), ECONNABORTED whole or as
 *   the tail; everything received was answered 0 or ECONNABORTED; nothing twice;
 *   a cut-off tail belongs to an ECONNABORTED call; the call after the stop is
 *   ECANCELED. Rounds: lft_scaled(12) each way. Only properties are asserted: when
 *   the stop lands decides which outcome each call has, never whether it holds. */
#define LF_BOUND_REACTOR 1
#include "../lf_bound.h"
#include "lf_frames.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>

#define SENDERS 6
#define MAXCALLS 65536      /* calls per sender per round, at most (checked) */
#define SMALL_MAX 64        /* small bodies: 1..SMALL_MAX bytes */
#define LARGE_MIN 8192      /* one in eight: LARGE_MIN..LARGE_MAX bytes */
#define LARGE_MAX 49152
#define BIG (4 << 20)       /* B: a request larger than any socket buffer */
#define SMALL_SNDBUF 8192   /* C: the client's send buffer (the kernel doubles it) */
#define REPLY_LEN 8

static lf_reactor r;
static lf_bound b;

/* ------------------------------------------------------------------ frames
 * A request for id: HDR, then n body bytes made from id. The reply: 8 bytes that the
 * peer computes from what it read, the client from what it sent. Ids: the slot
 * (0 for the main thread, 1..SENDERS for C's senders) << 32 | sequence. */

static unsigned char body_byte(uint64_t id, size_t i)
{
    return (unsigned char)(id * 131u + (uint64_t)i * 7u + 3u);
}

static size_t request(unsigned char *f, uint64_t id, size_t n)
{
    lft_put_header(f, MAGIC, (uint32_t)n, id);
    for (size_t i = 0; i < n; i++)
        f[HDR + i] = body_byte(id, i);
    return HDR + n;
}

static uint64_t reply_value(uint64_t id, size_t n)
{
    return (id * 0x9E3779B97F4A7C15ull) ^ (uint64_t)n;
}

/* ------------------------------------------------------------------ the peer
 * Reads frames until EOF (or ECONNRESET), checks each body, marks each request it
 * received whole, and answers it while `answer` is set. While `reading` is clear it
 * reads nothing (B: the client's send buffer fills). A frame cut off by the EOF is
 * the tail: its length so far and, with a whole header, its id. */

struct peer {
    int fd; /* blocking */
    LFT_ATOMIC(int) reading, answer;
    LFT_ATOMIC(long long) bytes, whole; /* received so far */
    LFT_ATOMIC(int) done;
    unsigned char *got[SENDERS + 1];    /* [slot][seq]: received whole (0 or 1) */
    size_t tail;                        /* bytes of a cut-off frame at the end (0: none) */
    int tail_id_known;
    uint64_t tail_id;
    pthread_t t;
};

static struct peer pr;

/* Up to n bytes from a blocking socket: fewer only at EOF. */
static size_t read_upto(struct peer *p, unsigned char *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t k = read(p->fd, buf + got, n - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k == 0 || (k < 0 && errno == ECONNRESET))
            break;
        CHECK(k > 0);
        got += (size_t)k;
        lft_add(&p->bytes, (long long)k);
    }
    return got;
}

static void *peer_main(void *arg)
{
    struct peer *p = (struct peer *)arg;
    static unsigned char body[BIG];
    for (;;) {
        unsigned char h[HDR], out[HDR + REPLY_LEN];
        uint64_t id, v;
        size_t len, got;
        if (!lft_load(&p->reading)) {
            lft_sleep_ms(1);
            continue;
        }
        if ((got = read_upto(p, h, HDR)) < HDR) {
            p->tail = got; /* 0: a clean end between frames */
            break;
        }
        CHECK_EQ(lft_parse(NULL, h, &id, &len), 0);
        CHECK(len >= 1 && len <= BIG - HDR);
        CHECK((id >> 32) <= SENDERS);
        CHECK((id & 0xffffffffu) < MAXCALLS);
        if ((got = read_upto(p, body, len)) < len) {
            p->tail = HDR + got;
            p->tail_id_known = 1;
            p->tail_id = id;
            break;
        }
        for (size_t i = 0; i < len; i++)
            CHECK_EQ(body[i], body_byte(id, i));
        CHECK_EQ(p->got[id >> 32][id & 0xffffffffu], 0); /* never twice */
        p->got[id >> 32][id & 0xffffffffu] = 1;
        lft_add(&p->whole, 1LL);
        if (lft_load(&p->answer)) {
            v = reply_value(id, len);
            lft_put_header(out, MAGIC, REPLY_LEN, id);
            memcpy(out + HDR, &v, REPLY_LEN);
            /* the client may have stopped reading for good: a full buffer is drained
             * by the main thread at the end, a gone client is no error */
            (void)send(p->fd, out, sizeof out, MSG_NOSIGNAL);
        }
    }
    lft_store(&p->done, 1);
    return NULL;
}

static int sv[2]; /* sv[0] the bound's end, sv[1] the peer's */

static void peer_start(int reading, int answer)
{
    pr.fd = sv[1];
    lft_store(&pr.reading, reading);
    lft_store(&pr.answer, answer);
    lft_store(&pr.bytes, 0LL);
    lft_store(&pr.whole, 0LL);
    lft_store(&pr.done, 0);
    for (int i = 0; i <= SENDERS; i++)
        memset(pr.got[i], 0, MAXCALLS);
    pr.tail = 0;
    pr.tail_id_known = 0;
    pr.tail_id = 0;
    CHECK(pthread_create(&pr.t, NULL, peer_main, &pr) == 0);
}

/* After lf_bound_destroy: end the stream, let the peer read all of it (draining its
 * replies meanwhile, so it never blocks on a full buffer), join it. */
static void peer_finish(void)
{
    unsigned char sink[4096];
    lft_store(&pr.reading, 1);
    CHECK(shutdown(sv[0], SHUT_WR) == 0);
    while (!lft_load(&pr.done)) {
        struct pollfd p;
        p.fd = sv[0];
        p.events = POLLIN;
        p.revents = 0;
        if (poll(&p, 1, 1) > 0)
            while (recv(sv[0], sink, sizeof sink, MSG_DONTWAIT) > 0) {
            }
        lft_progress();
    }
    CHECK(pthread_join(pr.t, NULL) == 0);
    close(sv[0]);
    close(sv[1]);
}

/* ------------------------------------------------------------------ set-up */

#define RUNNERS_MAX 2
static pthread_t run_t[RUNNERS_MAX];
static int run_rc[RUNNERS_MAX];
static int nrunners;

static void *runner(void *arg)
{
    long i = (long)arg;
    run_rc[i] = lf_reactor_run(&r, NULL);
    lft_progress();
    return NULL;
}

/* A socketpair, the bound on sv[0] (hybrid: attached, and `runners` threads in
 * lf_reactor_run), the peer on sv[1]. */
static void up(int hybrid, int runners, int sndbuf, int reading, int answer)
{
    struct lf_bound_hooks hooks;
    lft_pair(sv, sndbuf);
    lft_hooks(&hooks);
    CHECK_EQ(lf_bound_init(&b, sv[0], &hooks), 0);
    nrunners = 0;
    if (hybrid) {
        CHECK_EQ(lf_reactor_init(&r), 0);
        CHECK_EQ(lf_bound_attach(&b, &r), 0);
        for (long i = 0; i < runners; i++) {
            run_rc[i] = -1;
            CHECK(pthread_create(&run_t[i], NULL, runner, (void *)i) == 0);
        }
        nrunners = runners;
    }
    peer_start(reading, answer);
}

/* The stop (hybrid: every runner returns ECANCELED) or the shutdown. */
static void stop(int hybrid)
{
    if (hybrid) {
        CHECK_EQ(lf_reactor_stop(&r), 0);
        for (int i = 0; i < nrunners; i++) {
            CHECK(pthread_join(run_t[i], NULL) == 0);
            CHECK_EQ(run_rc[i], ECANCELED);
        }
        nrunners = 0;
    } else {
        CHECK_EQ(lf_bound_shutdown(&b), 0);
    }
}

static void down(int hybrid)
{
    CHECK_EQ(lft_stats(&b).in_flight, 0u);
    CHECK_EQ(lf_bound_destroy(&b), 0);
    if (hybrid)
        CHECK_EQ(lf_reactor_destroy(&r), 0);
    peer_finish();
}

/* ------------------------------------------------------------------ A */

enum { F_EXPECT, F_SEND, F_SEND_UNTIL, F_CALL, F_STATS, F_N };
static const char *const first_name[F_N] = {"expect", "send", "send_until", "call", "stats"};

static void a_round(int hybrid, int runners, int first)
{
    unsigned char req[HDR + SMALL_MAX], buf[16];
    lf_bound_ctx c;
    struct timespec dl;
    long long before;
    size_t n;
    int rc;

    up(hybrid, runners, 0, 1, 1);
    CHECK_EQ(lf_bound_ctx_init(&c, buf, sizeof buf, 0), 0);
    /* traffic first: the connection is in use when the stop comes */
    for (uint64_t id = 1; id <= 20; id++) {
        n = request(req, id, 1 + id % SMALL_MAX);
        CHECK_EQ(lf_bound_call(&b, &c, id, req, n, NULL), 0);
        CHECK_EQ(c.len, REPLY_LEN);
    }
    AWAIT(lft_load(&pr.whole) == 20, "the peer to have read the 20 requests");
    before = lft_load(&pr.bytes);

    stop(hybrid); /* no thread of the bound inside the reactor (or the bound) now */

    n = request(req, 100, 10);
    CHECK_EQ(lf_deadline_in(&dl, 10 * 1000000000LL), 0);
    switch (first) { /* each path must see the stop by itself */
    case F_EXPECT: rc = lf_bound_expect(&b, &c, 100); break;
    case F_SEND: rc = lf_bound_send(&b, req, n); break;
    case F_SEND_UNTIL: rc = lf_bound_send_until(&b, req, n, &dl); break;
    case F_CALL: rc = lf_bound_call(&b, &c, 100, req, n, NULL); break;
    default: rc = lft_stats(&b).failed; break; /* stats say so before any call */
    }
    if (rc != ECANCELED)
        fprintf(stderr, "A (%s, %d runners): first call after the stop, %s: %d\n",
                hybrid ? "hybrid" : "bare", runners, first_name[first], rc);
    CHECK_EQ(rc, ECANCELED);
    CHECK_EQ(lf_bound_expect(&b, &c, 101), ECANCELED);
    CHECK_EQ(lf_bound_send(&b, req, n), ECANCELED);
    CHECK_EQ(lf_bound_send_until(&b, req, n, &dl), ECANCELED);
    CHECK_EQ(lf_bound_call(&b, &c, 102, req, n, NULL), ECANCELED);
    CHECK_EQ(lf_bound_call(&b, &c, 103, req, n, &dl), ECANCELED);
    {
        struct lf_bound_stats s = lft_stats(&b);
        CHECK_EQ(s.failed, ECANCELED);
        CHECK_EQ(s.in_flight, 0u);
        CHECK_EQ(s.cancels, 0ULL); /* a stop is not lf_bound_cancel */
        CHECK_EQ(s.replies, 20ULL);
    }
    lf_bound_ctx_destroy(&c);
    down(hybrid);
    /* the peer read to the end: not one byte came after the stop */
    CHECK_EQ(lft_load(&pr.bytes), before);
    CHECK_EQ(lft_load(&pr.whole), 20);
    CHECK_EQ(pr.tail, 0u);
}

/* A hybrid bound that answered one call, its reactor then ended by how (0: destroyed,
 * 1: put in a group after the attach and stopped, grouped or not a stopped reactor
 * is stopped): the bound writes nothing after it. */
static void a_ended(int how)
{
    unsigned char req[HDR + SMALL_MAX], buf[16];
    lf_reactor *sets[1];
    lf_reactor_group g;
    lf_bound_ctx c;
    long long before;
    size_t n;

    up(1, 0, 0, 1, 1);
    CHECK_EQ(lf_bound_ctx_init(&c, buf, sizeof buf, 0), 0);
    n = request(req, 1, 10);
    CHECK_EQ(lf_bound_call(&b, &c, 1, req, n, NULL), 0);
    AWAIT(lft_load(&pr.whole) == 1, "the peer to have read the request");
    before = lft_load(&pr.bytes);
    if (how == 0) {
        CHECK_EQ(lf_reactor_destroy(&r), 0);
    } else {
        sets[0] = &r;
        CHECK_EQ(lf_reactor_group_init(&g, sets, 1), 0);
        CHECK_EQ(lf_reactor_stop(&r), 0);
    }
    CHECK_EQ(lf_bound_send(&b, req, n), ECANCELED);
    CHECK_EQ(lf_bound_expect(&b, &c, 2), ECANCELED);
    CHECK_EQ(lf_bound_call(&b, &c, 3, req, n, NULL), ECANCELED);
    lf_bound_ctx_destroy(&c);
    if (how == 1)
        CHECK_EQ(lf_reactor_group_destroy(&g), 0);
    CHECK_EQ(lf_bound_destroy(&b), 0);
    if (how == 1)
        CHECK_EQ(lf_reactor_destroy(&r), 0);
    peer_finish();
    CHECK_EQ(lft_load(&pr.bytes), before);
}

static void part_a(void)
{
    for (int hybrid = 1; hybrid >= 0; hybrid--)
        for (int runners = 0; runners <= (hybrid ? 2 : 0); runners += 2)
            for (int first = 0; first < F_N; first++) {
                a_round(hybrid, runners, first);
                lft_progress();
            }
    a_ended(0);
    a_ended(1);
    printf("  A: after the stop (hybrid, 0 and 2 runners; also a destroy, and a stop of a "
           "reactor grouped after the attach) and the "
           "shutdown (bare), expect/send/send_until/call say ECANCELED and write "
           "nothing\n");
}

/* ------------------------------------------------------------------ B */

static lf_bound_ctx b_ctx;
static unsigned char b_buf[16];
static LFT_ATOMIC(int) b_rc;
static uint64_t b_id;
static size_t b_len;

static void *b_caller(void *arg)
{
    static unsigned char req[BIG];
    size_t n = request(req, b_id, b_len);
    (void)arg;
    lft_store(&b_rc, lf_bound_call(&b, &b_ctx, b_id, req, n, NULL));
    lft_progress();
    return NULL;
}

/* held: the peer received the request and holds its answer; cut: the request is
 * cut part-way (the peer reads nothing until the call returned). */
static void b_round(int hybrid, int cut)
{
    pthread_t t;
    lf_bound_ctx x;
    unsigned char xbuf[16], req[HDR + 8];
    struct lf_bound_stats s;

    up(hybrid, hybrid ? 1 : 0, 0, !cut, 0);
    CHECK_EQ(lf_bound_ctx_init(&b_ctx, b_buf, sizeof b_buf, 0), 0);
    CHECK_EQ(lf_bound_ctx_init(&x, xbuf, sizeof xbuf, 0), 0);
    CHECK_EQ(lf_bound_expect(&b, &x, 7), 0); /* expected; its request never sent */
    b_id = 5;
    b_len = cut ? BIG - HDR : 8;
    lft_store(&b_rc, -1);
    CHECK(pthread_create(&t, NULL, b_caller, NULL) == 0);
    if (cut)
        AWAIT(lft_readable(sv[1]), "the big request to start arriving");
    else
        AWAIT(lft_load(&pr.whole) == 1 && lft_stats(&b).in_flight == 2,
              "the peer to hold the request, its caller to wait");
    stop(hybrid);
    CHECK(pthread_join(t, NULL) == 0);
    if (lft_load(&b_rc) != ECONNABORTED)
        fprintf(stderr, "B (%s, %s): the call returned %d\n", hybrid ? "hybrid" : "bare",
                cut ? "cut part-way" : "held", lft_load(&b_rc));
    CHECK_EQ(lft_load(&b_rc), ECONNABORTED); /* it went out: never ECANCELED */
    CHECK_EQ(lf_bound_join(&b, &x, NULL), ECONNABORTED);
    lf_bound_ctx_destroy(&x);
    /* later calls: nothing written */
    CHECK_EQ(lf_bound_call(&b, &b_ctx, 6, req, request(req, 6, 8), NULL), ECANCELED);
    CHECK_EQ(lf_bound_send(&b, req, request(req, 6, 8)), ECANCELED);
    lf_bound_ctx_destroy(&b_ctx);
    s = lft_stats(&b);
    CHECK_EQ(s.failed, ECANCELED);
    CHECK_EQ(s.cancels, 0ULL);
    CHECK_EQ(s.send_failures, (unsigned long long)cut); /* the cut-off request */
    CHECK_EQ(s.send_failed, cut ? EPIPE : 0);
    down(hybrid);
    if (cut) {
        /* part of it, and nothing after it */
        CHECK_EQ(lft_load(&pr.whole), 0);
        CHECK(pr.tail > 0 && pr.tail < BIG);
        CHECK(pr.tail < HDR || (pr.tail_id_known && pr.tail_id == 5));
        CHECK_EQ(lft_load(&pr.bytes), (long long)pr.tail);
    } else {
        CHECK_EQ(lft_load(&pr.whole), 1);
        CHECK_EQ(pr.tail, 0u);
        CHECK_EQ(lft_load(&pr.bytes), HDR + 8);
    }
}

static void part_b(void)
{
    for (int hybrid = 0; hybrid <= 1; hybrid++)
        for (int cut = 0; cut <= 1; cut++) {
            b_round(hybrid, cut);
            lft_progress();
        }
    printf("  B: a request held by the peer and one cut part-way return ECONNABORTED, "
           "bare and hybrid\n");
}

/* ------------------------------------------------------------------ C */

struct sender {
    int slot;            /* 1..SENDERS */
    unsigned long long seed;
    int *rc;             /* [seq]: each call's result */
    size_t *len;         /* [seq]: its body length */
    uint32_t calls;      /* made, the one after the stop included */
    uint32_t after;      /* the sequence number of the call after the stop */
    pthread_t t;
};

static struct sender snd[SENDERS];
static LFT_ATOMIC(int) stopped;             /* the stop (shutdown) has returned */
static LFT_ATOMIC(long long) c_replies;

static size_t pick_len(unsigned long long *seed)
{
    unsigned long long x = lft_rand(seed);
    if (x % 8 == 0)
        return LARGE_MIN + (size_t)((x >> 8) % (LARGE_MAX - LARGE_MIN + 1));
    return 1 + (size_t)((x >> 8) % SMALL_MAX);
}

static int one_call(struct sender *s, lf_bound_ctx *c, unsigned char *req,
                    unsigned char *buf)
{
    uint32_t seq = s->calls++;
    uint64_t id = (uint64_t)s->slot << 32 | seq;
    size_t n = pick_len(&s->seed);
    int rc;
    CHECK(seq < MAXCALLS);
    request(req, id, n);
    memset(buf, 0, REPLY_LEN);
    rc = lf_bound_call(&b, c, id, req, HDR + n, NULL);
    s->rc[seq] = rc;
    s->len[seq] = n;
    if (rc == 0) {
        uint64_t v;
        CHECK_EQ(c->len, REPLY_LEN);
        memcpy(&v, buf, 8);
        CHECK(v == reply_value(id, n));
        lft_add(&c_replies, 1LL);
    }
    return rc;
}

static void *sender_main(void *arg)
{
    struct sender *s = (struct sender *)arg;
    static _Thread_local unsigned char req[HDR + LARGE_MAX];
    unsigned char buf[REPLY_LEN];
    lf_bound_ctx c;
    CHECK_EQ(lf_bound_ctx_init(&c, buf, sizeof buf, s->slot % 3), 0);
    while (one_call(s, &c, req, buf) == 0)
        lft_progress();
    AWAIT(lft_load(&stopped), "the stop to return");
    s->after = s->calls;
    CHECK_EQ(one_call(s, &c, req, buf), ECANCELED); /* made after it: nothing sent */
    lf_bound_ctx_destroy(&c);
    return NULL;
}

static long long c_ok, c_aborted, c_canceled, c_tails, c_rounds;

static void c_round(int hybrid, unsigned long long seed)
{
    long long threshold = 1 + (long long)(lft_rand(&seed) % (unsigned long long)lft_scaled(400));
    long long ok = 0, aborted = 0, unreceived_aborted = 0, whole = 0;
    struct lf_bound_stats s;
    int tail_owner = 0;

    up(hybrid, hybrid ? 1 : 0, SMALL_SNDBUF, 1, 1);
    lft_store(&stopped, 0);
    lft_store(&c_replies, 0LL);
    for (int i = 0; i < SENDERS; i++) {
        snd[i].slot = i + 1;
        snd[i].seed = seed * 7919u + (unsigned long long)i + 1;
        snd[i].calls = 0;
        snd[i].after = 0;
        CHECK(pthread_create(&snd[i].t, NULL, sender_main, &snd[i]) == 0);
    }
    AWAIT(lft_load(&c_replies) >= threshold, "replies before the stop");
    stop(hybrid);
    lft_store(&stopped, 1);
    for (int i = 0; i < SENDERS; i++)
        CHECK(pthread_join(snd[i].t, NULL) == 0);
    s = lft_stats(&b);
    CHECK_EQ(s.failed, ECANCELED);
    CHECK_EQ(s.cancels, 0ULL);
    down(hybrid);

    /* what the peer received against what each caller was told */
    for (int i = 0; i < SENDERS; i++) {
        struct sender *x = &snd[i];
        for (uint32_t q = 0; q < x->calls; q++) {
            int rc = x->rc[q];
            int got = pr.got[x->slot][q];
            int is_tail = pr.tail >= HDR && pr.tail_id_known &&
                          pr.tail_id == ((uint64_t)x->slot << 32 | q);
            if (rc != 0 && rc != ECONNABORTED && rc != ECANCELED)
                fprintf(stderr, "C: call %d/%u returned %d\n", x->slot, q, rc);
            CHECK(rc == 0 || rc == ECONNABORTED || rc == ECANCELED);
            /* 0s, then the one that ended the loop, then the one after the stop */
            CHECK(rc == 0 || q + 1 == x->after || q == x->after);
            if (rc == ECANCELED && (got || is_tail))
                fprintf(stderr, "C (%s): call %d/%u returned ECANCELED, and the peer "
                        "received %s of it\n", hybrid ? "hybrid" : "bare", x->slot, q,
                        got ? "all" : "part");
            CHECK(!(rc == ECANCELED && (got || is_tail))); /* not a byte of it went out */
            if (rc == 0)
                CHECK(got); /* its reply came: the peer read it whole */
            if (got && rc != 0 && rc != ECONNABORTED)
                fprintf(stderr, "C: call %d/%u was received, and returned %d\n", x->slot,
                        q, rc);
            CHECK(!got || rc == 0 || rc == ECONNABORTED);
            if (is_tail) {
                CHECK_EQ(rc, ECONNABORTED); /* cut off: it went out in part */
                CHECK(pr.tail < HDR + x->len[q]);
                tail_owner = 1;
            }
            if (rc == ECONNABORTED && !got)
                unreceived_aborted++;
            ok += rc == 0;
            aborted += rc == ECONNABORTED;
            whole += got;
        }
    }
    /* an ECONNABORTED call that the peer did not receive whole is the cut-off tail:
     * at most one, and only if there is a tail */
    CHECK_EQ(unreceived_aborted, pr.tail > 0 ? 1 : 0);
    CHECK(pr.tail < HDR || tail_owner); /* a tail with a whole header is a call's */
    CHECK_EQ(whole, lft_load(&pr.whole)); /* nothing received that nobody sent */
    CHECK_EQ(s.replies, (unsigned long long)ok);
    c_ok += ok;
    c_aborted += aborted;
    for (int i = 0; i < SENDERS; i++)
        for (uint32_t q = 0; q < snd[i].calls; q++)
            c_canceled += snd[i].rc[q] == ECANCELED;
    c_tails += pr.tail > 0;
    c_rounds++;
}

static void part_c(void)
{
    long long rounds = lft_scaled(12);
    for (int i = 0; i < SENDERS; i++) {
        snd[i].rc = (int *)calloc(MAXCALLS, sizeof(int));
        snd[i].len = (size_t *)calloc(MAXCALLS, sizeof(size_t));
        CHECK(snd[i].rc != NULL && snd[i].len != NULL);
    }
    for (int hybrid = 0; hybrid <= 1; hybrid++) {
        c_ok = c_aborted = c_canceled = c_tails = c_rounds = 0;
        for (long long k = 0; k < rounds; k++) {
            c_round(hybrid, 0x5eedull + (unsigned long long)k * 1000003u +
                                (unsigned long long)hybrid);
            lft_progress();
        }
        printf("  C (%s): %lld rounds: %lld replied, %lld ECONNABORTED, %lld ECANCELED "
               "(%lld tails cut off), each as the peer saw it\n",
               hybrid ? "hybrid stop" : "bare shutdown", c_rounds, c_ok, c_aborted,
               c_canceled, c_tails);
    }
    for (int i = 0; i < SENDERS; i++) {
        free(snd[i].rc);
        free(snd[i].len);
    }
}

int main(int argc, char **argv)
{
    const char *parts = argc > 1 ? argv[1] : "ABC";
    double t0 = lft_now();

    lft_start("t_reactor_bound_stop", 30);
    for (int i = 0; i <= SENDERS; i++) {
        pr.got[i] = (unsigned char *)malloc(MAXCALLS);
        CHECK(pr.got[i] != NULL);
    }
    printf("t_reactor_bound_stop %s/%s:\n", lf_reactor_backend_name(), lf_promote_name());
    if (strchr(parts, 'A'))
        part_a();
    if (strchr(parts, 'B'))
        part_b();
    if (strchr(parts, 'C'))
        part_c();
    for (int i = 0; i <= SENDERS; i++)
        free(pr.got[i]);
    printf("  in %.2f s\n", lft_now() - t0);
    lft_pass();
    return 0;
}
