/* lf_bound: every result code but 0, and the counters that go with it. The connection
 * is a socketpair; the test's main thread plays a scripted server on the other end
 * and writes crafted reply frames once the waiting threads are where it wants them
 * (a leader, or parked followers: seen in lf_bound_stats().pool). What is proved:
 *
 * - Bad input: init refuses NULL hooks, header_len 0 or above LF_BOUND_HEADER_MAX, a
 *   NULL parse_header, fd -1 (EINVAL) and a closed fd (EBADF). expect refuses an id in
 *   flight (EEXIST) and a context in flight (EBUSY); join of a context never expected
 *   is EINVAL; cancel of a context not waiting (never expected, or its result in) is
 *   ENOENT; destroy is EBUSY while a context is in flight and succeeds once it is
 *   collected. A call whose send refuses its arguments returns EINVAL with its
 *   context collected (it does not wait for a reply to a request never sent).
 * - ETIMEDOUT withdraws the context: the late reply (whole, or the rest of a body
 *   whose start came before the deadline) is skipped and counted in stray, and never
 *   lands in the same context reused for the next id (its bytes past the new reply
 *   are untouched). The late body holds a whole frame for the new id: had it been
 *   parsed instead of skipped, the new id would have got junk.
 * - lf_bound_cancel ends a parked follower's join and a leader's (blocked in poll)
 *   with ECANCELED; the remaining waiter leads and gets its reply after the late
 *   replies of both (stray 2, cancels 2).
 * - EOF on the connection (clean, after half a header, in the middle of a follower's
 *   or of the leader's own body) gives ECONNRESET to every waiter, and to later
 *   expect/send/call; stats.failed says ECONNRESET. A send that fails (the server
 *   hung up before anyone read the EOF) says EPIPE, and so do later sends and
 *   expects; the call that sent it collects its context. The read side is not failed
 *   by it (t_bound_failure: the replies already on their way are delivered).
 * - A bad magic or a body above max_body gives EPROTO to every waiter still waiting
 *   (a reply delivered just before stays delivered); later expect says EPROTO.
 * - A reply longer than one context's cap (EMSGSIZE, and c->len says how long), or
 *   refused by read_body (EBADMSG), fails that context only (refused 1, nothing
 *   written into it); its body is skipped
 *   (a frame hidden in it is not parsed) and the connection carries on: the next
 *   replies are delivered, one of them split over two reads (read_body's offset).
 * - parse_header's ENOMSG skips a heartbeat and its body (skipped); LF_BOUND_STRICT
 *   turns a reply for an id nobody waits for into EPROTO for every waiter.
 * - A leader whose deadline passes while two followers wait hands leadership on: it
 *   returns ETIMEDOUT, one follower leads, and both get the replies written only
 *   after the timeout was seen (timeouts 1, promotions >= 1).
 * - lf_bound_shutdown: parked waiters, the leader, a context expected but not yet
 *   joined, and a call blocked in lf_bound_send on a full socket (its request part
 *   written) all get ECONNABORTED (abandoned; ECANCELED would say "not sent"); later
 *   expect/send/call get ECANCELED, and nothing more reaches the server. Under load
 *   (clients calling in a loop against an echo server) every client's last call says
 *   ECONNABORTED (in flight) or ECANCELED (not sent) and every thread returns.
 *   Shutdown is not counted as cancels. (t_reactor_bound_stop checks each result
 *   against what the server received.) */
#include "../lf_bound.h"
#include "lf_frames.h"

#include <fcntl.h>
#include <sys/socket.h>

#define BUFSZ 256
#define FILL 0xee   /* what a reply buffer holds before anything is written */
#define REFUSE 0xbd /* a body starting with it is refused by the read_body hook */

/* ------------------------------------------------------------------ frames */

static unsigned char body_byte(uint64_t id, size_t i)
{
    return (unsigned char)(id * 37u + i * 11u + 1u);
}

static LFT_ATOMIC(long long) body_calls;

/* read_body that copies like the default, but refuses a body starting with REFUSE */
static int read_body_refusing(void *user, lf_bound_ctx *c, const unsigned char *bytes, size_t n,
                              size_t offset)
{
    (void)user;
    lft_add(&body_calls, 1LL);
    if (offset == 0 && n > 0 && bytes[0] == REFUSE)
        return EPROTO;
    CHECK(offset + n <= c->cap);
    memcpy((unsigned char *)c->buf + offset, bytes, n);
    return 0;
}

/* A frame into out: the header, then the body (NULL: id's reply pattern). */
static size_t frame(unsigned char *out, uint32_t magic, uint64_t id, uint32_t len,
                    const unsigned char *body)
{
    lft_put_header(out, magic, len, id);
    for (uint32_t i = 0; i < len; i++)
        out[HDR + i] = body ? body[i] : body_byte(id, i);
    return HDR + (size_t)len;
}

/* A body that starts with a whole, valid frame for `victim` (4 junk bytes): if the
 * bound parsed this body instead of skipping it, victim would get that junk. */
static void decoy_body(unsigned char *body, uint32_t len, uint64_t victim)
{
    static const unsigned char junk[4] = {0xa5, 0xa5, 0xa5, 0xa5};
    CHECK(len >= HDR + 4);
    memset(body, 0x5a, len);
    frame(body, MAGIC, victim, 4, junk);
}

/* The server writes one whole frame (body NULL: id's pattern). */
static void send_frame(int fd, uint32_t magic, uint64_t id, uint32_t len,
                       const unsigned char *body)
{
    unsigned char f[HDR + BUFSZ];
    size_t n;
    CHECK(len <= BUFSZ);
    n = frame(f, magic, id, len, body);
    lft_write_all(fd, f, n);
}

/* The server writes id's reply: len bytes of its pattern. */
static void reply(int fd, uint64_t id, uint32_t len)
{
    send_frame(fd, MAGIC, id, len, NULL);
}

/* The server reads one request and checks it: header for id, then `body`. */
static void expect_request(int fd, uint64_t id, const char *body)
{
    unsigned char h[HDR], got[64];
    uint64_t rid;
    size_t len;
    CHECK(lft_read_all(fd, h, HDR));
    CHECK_EQ(lft_parse(NULL, h, &rid, &len), 0);
    CHECK_EQ(rid, id);
    CHECK_EQ(len, strlen(body));
    CHECK(len <= sizeof got);
    CHECK(lft_read_all(fd, got, len));
    CHECK(memcmp(got, body, len) == 0);
}

/* ------------------------------------------------------------------ a connection */

struct conn {
    lf_bound b;
    int cli, srv; /* cli: the bound's end; srv: the scripted server's (-1: closed) */
};

static void conn_open(struct conn *k, const struct lf_bound_hooks *h)
{
    int sv[2];
    lft_pair(sv, 0);
    k->cli = sv[0];
    k->srv = sv[1];
    lft_bound_open(&k->b, k->cli, h);
}

static void conn_close(struct conn *k)
{
    lft_bound_close(&k->b);
    close(k->cli);
    if (k->srv >= 0)
        close(k->srv);
}

/* ------------------------------------------------------------------ a client thread
 * expect(id), then join with its deadline (0: none); rc is the join's result. */

struct client {
    lf_bound *b;
    uint64_t id;
    long deadline_ms;
    size_t cap;
    int rc;
    LFT_ATOMIC(int) done;
    lf_bound_ctx c;
    unsigned char buf[BUFSZ];
    pthread_t t;
};

static void *client_main(void *arg)
{
    struct client *cl = (struct client *)arg;
    struct timespec dl;

    memset(cl->buf, FILL, sizeof cl->buf);
    /* HEAP: different priorities, so the heap really orders the followers */
    CHECK_EQ(lf_bound_ctx_init(&cl->c, cl->buf, cl->cap, (int)(cl->id % 3)), 0);
    CHECK_EQ(lf_bound_expect(cl->b, &cl->c, cl->id), 0);
    if (cl->deadline_ms)
        CHECK_EQ(lf_deadline_in(&dl, cl->deadline_ms * 1000000LL), 0);
    cl->rc = lf_bound_join(cl->b, &cl->c, cl->deadline_ms ? &dl : NULL);
    lft_progress();
    lft_store(&cl->done, 1);
    return NULL;
}

static void start(struct client *cl, struct conn *k, uint64_t id, size_t cap, long deadline_ms)
{
    cl->b = &k->b;
    cl->id = id;
    cl->cap = cap;
    cl->deadline_ms = deadline_ms;
    cl->rc = -1;
    lft_store(&cl->done, 0);
    CHECK(pthread_create(&cl->t, NULL, client_main, cl) == 0);
}

/* Wait until the client's join returned, and check what it returned. */
static void finish(struct client *cl, int want)
{
    AWAIT(lft_load(&cl->done), "a client's lf_bound_join to return");
    CHECK(pthread_join(cl->t, NULL) == 0);
    lf_bound_ctx_destroy(&cl->c);
    if (cl->rc != want)
        fprintf(stderr, "client for id %llu: join returned %d, want %d\n",
                (unsigned long long)cl->id, cl->rc, want);
    CHECK_EQ(cl->rc, want);
}

/* The client holds exactly id's reply of len bytes, and nothing past it. */
static void check_buf(const unsigned char *buf, size_t len_got, uint64_t id, size_t len)
{
    CHECK_EQ(len_got, len);
    for (size_t i = 0; i < len; i++)
        if (buf[i] != body_byte(id, i)) {
            fprintf(stderr, "reply for id %llu: byte %zu is %u, want %u\n",
                    (unsigned long long)id, i, buf[i], body_byte(id, i));
            CHECK(0);
        }
    for (size_t i = len; i < BUFSZ; i++)
        if (buf[i] != FILL) {
            fprintf(stderr, "reply for id %llu: byte %zu past the body was written (%u)\n",
                    (unsigned long long)id, i, buf[i]);
            CHECK(0);
        }
}

static void check_reply(const struct client *cl, size_t len)
{
    check_buf(cl->buf, cl->c.len, cl->id, len);
}

static void check_untouched(const struct client *cl)
{
    for (size_t i = 0; i < BUFSZ; i++)
        CHECK_EQ(cl->buf[i], FILL);
}

/* Three waiters: a (id 1) leads, b (id 2) and c (id 3) are parked followers. */
static void three_waiters(struct conn *k, struct client *a, struct client *b, struct client *c,
                          size_t cap_b)
{
    start(a, k, 1, BUFSZ, 0);
    AWAIT(lft_stats(&k->b).pool.leader == 1, "the first client to lead");
    start(b, k, 2, cap_b, 0);
    start(c, k, 3, BUFSZ, 0);
    AWAIT(lft_stats(&k->b).pool.followers == 2, "two clients parked as followers");
    CHECK_EQ(lft_stats(&k->b).in_flight, 3u);
}

/* ------------------------------------------------------------------ 1. bad input */

/* a reply 20 ms from now */
static int late_fd;
static uint64_t late_id;
static void *late_reply(void *arg)
{
    lft_sleep_ms(20);
    reply(late_fd, late_id, 9);
    return arg;
}

static void bad_input(void)
{
    struct lf_bound_hooks h, bad;
    struct conn k;
    lf_bound_ctx c1, c2, c3;
    unsigned char b1[BUFSZ], b2[BUFSZ], b3[BUFSZ];
    struct lf_bound_stats s;
    int sv[2], dead;

    lft_progress();
    lft_hooks(&h);
    lft_pair(sv, 0);
    k.cli = sv[0];
    k.srv = sv[1];

    CHECK_EQ(lf_bound_init(&k.b, k.cli, NULL), EINVAL);
    CHECK_EQ(lf_bound_init(NULL, k.cli, &h), EINVAL);
    bad = h;
    bad.header_len = 0;
    CHECK_EQ(lf_bound_init(&k.b, k.cli, &bad), EINVAL);
    bad = h;
    bad.header_len = LF_BOUND_HEADER_MAX + 1;
    CHECK_EQ(lf_bound_init(&k.b, k.cli, &bad), EINVAL);
    bad = h;
    bad.parse_header = NULL;
    CHECK_EQ(lf_bound_init(&k.b, k.cli, &bad), EINVAL);
    CHECK_EQ(lf_bound_init(&k.b, -1, &h), EINVAL);
    {
        int tmp[2];
        CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, tmp) == 0);
        dead = tmp[0];
        close(tmp[0]);
        close(tmp[1]);
    }
    CHECK_EQ(lf_bound_init(&k.b, dead, &h), EBADF);
    /* zeroed, garbage and destroyed bounds: EINVAL from every call, nothing touched */
    {
        static lf_bound z;
        lf_bound_ctx cz;
        unsigned char bz[8];
        struct lf_bound_stats sz;
        CHECK_EQ(lf_bound_ctx_init(&cz, bz, sizeof bz, 0), 0);
        for (int round = 0; round < 3; round++) {
            if (round == 0)
                memset((void *)&z, 0, sizeof z);
            else if (round == 1)
                memset((void *)&z, 0xA5, sizeof z);
            else {
                memset((void *)&z, 0xA5, sizeof z); /* made on garbage, then destroyed */
                CHECK_EQ(lf_bound_init(&z, k.cli, &h), 0);
                CHECK_EQ(lf_bound_destroy(&z), 0);
            }
            CHECK_EQ(lf_bound_expect(&z, &cz, 1), EINVAL);
            CHECK_EQ(lf_bound_send(&z, "x", 1), EINVAL);
            CHECK_EQ(lf_bound_join(&z, &cz, NULL), EINVAL);
            CHECK_EQ(lf_bound_call(&z, &cz, 1, "x", 1, NULL), EINVAL);
            CHECK_EQ(lf_bound_cancel(&z, &cz), EINVAL);
            CHECK_EQ(lf_bound_shutdown(&z), EINVAL);
            CHECK_EQ(lf_bound_stats(&z, &sz), EINVAL);
            CHECK_EQ(lf_bound_destroy(&z), EINVAL);
        }
        lf_bound_ctx_destroy(&cz);
        /* a context on garbage: its init makes it whole */
        memset((void *)&cz, 0xA5, sizeof cz);
        CHECK_EQ(lf_bound_ctx_init(&cz, bz, sizeof bz, 0), 0);
        memset((void *)&z, 0xA5, sizeof z);
        CHECK_EQ(lf_bound_init(&z, k.cli, &h), 0);
        CHECK_EQ(lf_bound_expect(&z, &cz, 3), 0);
        CHECK_EQ(lf_bound_cancel(&z, &cz), 0);
        CHECK_EQ(lf_bound_join(&z, &cz, NULL), ECANCELED);
        CHECK_EQ(lf_bound_destroy(&z), 0);
        lf_bound_ctx_destroy(&cz);
    }
    bad = h;
    bad.header_len = LF_BOUND_HEADER_MAX; /* the largest accepted */
    CHECK_EQ(lf_bound_init(&k.b, k.cli, &bad), 0);
    CHECK_EQ(lf_bound_destroy(&k.b), 0);

    CHECK_EQ(lf_bound_init(&k.b, k.cli, &h), 0);
    CHECK(fcntl(k.cli, F_GETFL) & O_NONBLOCK); /* made non-blocking */
    CHECK_EQ(lf_bound_ctx_init(NULL, b1, sizeof b1, 0), EINVAL);
    CHECK_EQ(lf_bound_ctx_init(&c1, NULL, 8, 0), EINVAL);
    CHECK_EQ(lf_bound_ctx_init(&c1, b1, sizeof b1, 0), 0);
    CHECK_EQ(lf_bound_ctx_init(&c2, b2, sizeof b2, 0), 0);
    CHECK_EQ(lf_bound_ctx_init(&c3, b3, sizeof b3, 0), 0);
    memset(b1, FILL, sizeof b1);

    CHECK_EQ(lf_bound_expect(&k.b, &c1, 7), 0);
    CHECK_EQ(lf_bound_expect(&k.b, &c2, 7), EEXIST); /* id 7 is in flight */
    CHECK_EQ(lf_bound_expect(&k.b, &c1, 8), EBUSY);  /* c1 is in flight */
    CHECK_EQ(lf_bound_join(&k.b, &c3, NULL), EINVAL); /* never expected */
    CHECK_EQ(lf_bound_join(&k.b, &c2, NULL), EINVAL); /* its expect failed */
    CHECK_EQ(lf_bound_cancel(&k.b, &c3), ENOENT);
    CHECK_EQ(lf_bound_cancel(&k.b, &c2), ENOENT);
    CHECK_EQ(lf_bound_expect(NULL, &c2, 9), EINVAL);
    CHECK_EQ(lf_bound_expect(&k.b, NULL, 9), EINVAL);
    s = lft_stats(&k.b);
    CHECK_EQ(s.in_flight, 1u);
    CHECK_EQ(lf_bound_destroy(&k.b), EBUSY); /* c1 is in flight */

    /* a deadline centuries away is a deadline, not one already past (v1's arithmetic
     * overflowed into the past and the join said ETIMEDOUT at once) */
    {
        struct timespec far;
        pthread_t lt;
        far.tv_sec = sizeof(time_t) >= 8 ? (time_t)((long long)1 << 62) : (time_t)INT32_MAX;
        far.tv_nsec = 0;
        memset(b3, FILL, sizeof b3);
        CHECK_EQ(lf_bound_expect(&k.b, &c3, 11), 0);
        late_fd = k.srv;
        late_id = 11;
        CHECK(pthread_create(&lt, NULL, late_reply, NULL) == 0);
        CHECK_EQ(lf_bound_join(&k.b, &c3, &far), 0);
        CHECK(pthread_join(lt, NULL) == 0);
        check_buf(b3, c3.len, 11, 9);
    }

    /* still usable: c1's reply comes, the main thread leads and collects it */
    reply(k.srv, 7, 33);
    CHECK_EQ(lf_bound_join(&k.b, &c1, NULL), 0);
    check_buf(b1, c1.len, 7, 33);
    CHECK_EQ(c1.id, 7u);
    CHECK_EQ(lf_bound_join(&k.b, &c1, NULL), EINVAL); /* collected: nothing expected */
    CHECK_EQ(lf_bound_cancel(&k.b, &c1), ENOENT);

    /* cancel before the join: the result is in, a second cancel finds nothing */
    CHECK_EQ(lf_bound_expect(&k.b, &c2, 7), 0); /* id 7 is free again */
    CHECK_EQ(lf_bound_cancel(&k.b, &c2), 0);
    CHECK_EQ(lf_bound_cancel(&k.b, &c2), ENOENT); /* its result is already in */
    CHECK_EQ(lf_bound_destroy(&k.b), EBUSY);      /* in flight until collected */
    CHECK_EQ(lf_bound_join(&k.b, &c2, NULL), ECANCELED);

    s = lft_stats(&k.b);
    CHECK_EQ(s.replies, 2ULL);
    CHECK_EQ(s.own, 2ULL);
    CHECK_EQ(s.handed_off, 0ULL);
    CHECK_EQ(s.cancels, 1ULL);
    CHECK_EQ(s.stray + s.skipped + s.refused + s.timeouts, 0ULL);
    CHECK_EQ(s.in_flight, 0u);
    CHECK_EQ(s.failed, 0);
    CHECK_EQ(s.pool.leader + s.pool.followers, 0u);

    /* a call whose send refuses its arguments: c3 is collected, the send's error
     * returned (no hang waiting for a reply to a request never sent) */
    CHECK_EQ(lf_bound_send(&k.b, NULL, 5), EINVAL);
    CHECK_EQ(lf_bound_call(&k.b, &c3, 50, NULL, 5, NULL), EINVAL);
    CHECK_EQ(lft_stats(&k.b).in_flight, 0u);
    CHECK_EQ(lft_stats(&k.b).cancels, 1ULL); /* withdrawing c3 is not a user's cancel */
    CHECK_EQ(lf_bound_join(&k.b, &c3, NULL), EINVAL); /* collected already */
    CHECK_EQ(lf_bound_expect(&k.b, &c3, 50), 0);      /* c3 and id 50 are free */
    CHECK_EQ(lf_bound_cancel(&k.b, &c3), 0);
    CHECK_EQ(lf_bound_join(&k.b, &c3, NULL), ECANCELED);
    CHECK_EQ(lft_stats(&k.b).cancels, 2ULL);
    lf_bound_ctx_destroy(&c1);
    lf_bound_ctx_destroy(&c2);
    lf_bound_ctx_destroy(&c3);
    conn_close(&k);
}

/* ------------------------------------------------------------------ 2. timeout, late reply */

static struct conn *s2_k;
static lf_bound_ctx s2_c;
static unsigned char s2_buf[BUFSZ];
static int s2_rc1, s2_rc2;
static LFT_ATOMIC(int) s2_phase;

static void *s2_client(void *arg)
{
    unsigned char req[HDR + 8];
    struct timespec dl;
    size_t n;
    (void)arg;
    memset(s2_buf, FILL, sizeof s2_buf);
    CHECK_EQ(lf_bound_ctx_init(&s2_c, s2_buf, sizeof s2_buf, 0), 0);
    /* id 1: expect, send, join with a short deadline (the server holds the reply) */
    CHECK_EQ(lf_bound_expect(&s2_k->b, &s2_c, 1), 0);
    n = frame(req, MAGIC, 1, 5, (const unsigned char *)"req-1");
    CHECK_EQ(lf_bound_send(&s2_k->b, req, n), 0);
    CHECK_EQ(lf_deadline_in(&dl, 30 * 1000000LL), 0);
    s2_rc1 = lf_bound_join(&s2_k->b, &s2_c, &dl);
    lft_store(&s2_phase, 1);
    /* the same context, id 2, in one call */
    n = frame(req, MAGIC, 2, 5, (const unsigned char *)"req-2");
    s2_rc2 = lf_bound_call(&s2_k->b, &s2_c, 2, req, n, NULL);
    lft_progress();
    lft_store(&s2_phase, 2);
    return NULL;
}

/* mid_body: the header and the first 10 body bytes of id 1's reply come before the
 * deadline (the leader is reading into the context when it times out), the rest after. */
static void timeout_then_late_reply(int mid_body)
{
    struct lf_bound_hooks h;
    struct conn k;
    struct lf_bound_stats s;
    pthread_t t;
    unsigned char late[HDR + 100];
    size_t late_n, early_n = mid_body ? HDR + 10 : 0;

    lft_progress();
    lft_hooks(&h);
    conn_open(&k, &h);
    s2_k = &k;
    lft_store(&s2_phase, 0);
    /* the late reply for id 1: 100 bytes whose start is a whole frame for id 2 */
    decoy_body(late + HDR, 100, 2);
    late_n = frame(late, MAGIC, 1, 100, late + HDR);

    CHECK(pthread_create(&t, NULL, s2_client, NULL) == 0);
    expect_request(k.srv, 1, "req-1");
    if (early_n)
        lft_write_all(k.srv, late, early_n);
    AWAIT(lft_load(&s2_phase) >= 1, "the join for id 1 to time out");
    CHECK_EQ(s2_rc1, ETIMEDOUT);
    s = lft_stats(&k.b);
    CHECK_EQ(s.timeouts, 1ULL);
    CHECK_EQ(s.replies, 0ULL);

    expect_request(k.srv, 2, "req-2"); /* sent after the expect for id 2 */
    AWAIT(lft_stats(&k.b).pool.leader == 1, "the client to lead for id 2");
    lft_write_all(k.srv, late + early_n, late_n - early_n); /* the (rest of the) late reply */
    reply(k.srv, 2, 20);
    AWAIT(lft_load(&s2_phase) == 2, "the call for id 2 to return");
    CHECK(pthread_join(t, NULL) == 0);
    CHECK_EQ(s2_rc2, 0);
    CHECK_EQ(s2_c.id, 2u);
    /* id 2's 20 bytes, and past them nothing of id 1's late body (its first 10 bytes,
     * written before the deadline, are under id 2's now) */
    check_buf(s2_buf, s2_c.len, 2, 20);
    lf_bound_ctx_destroy(&s2_c);

    s = lft_stats(&k.b);
    CHECK_EQ(s.timeouts, 1ULL);
    CHECK_EQ(s.stray, 1ULL);
    CHECK_EQ(s.replies, 1ULL);
    CHECK_EQ(s.own, 1ULL);
    CHECK_EQ(s.refused + s.cancels + s.skipped, 0ULL);
    CHECK_EQ(s.in_flight, 0u);
    CHECK_EQ(s.failed, 0);
    conn_close(&k);
}

/* ------------------------------------------------------------------ 3. cancel */

static void cancel_follower_and_leader(void)
{
    struct lf_bound_hooks h;
    struct conn k;
    struct client a, b, c;
    struct lf_bound_stats s;

    lft_progress();
    lft_hooks(&h);
    conn_open(&k, &h);
    three_waiters(&k, &a, &b, &c, BUFSZ);

    CHECK_EQ(lf_bound_cancel(&k.b, &b.c), 0); /* a parked follower */
    finish(&b, ECANCELED);
    s = lft_stats(&k.b);
    CHECK_EQ(s.cancels, 1ULL);
    CHECK_EQ(s.in_flight, 2u);

    lft_sleep_ms(5); /* most likely in poll by now; if not, in it soon */
    CHECK_EQ(lf_bound_cancel(&k.b, &a.c), 0); /* the leader */
    finish(&a, ECANCELED);
    AWAIT(lft_stats(&k.b).pool.leader == 1 && lft_stats(&k.b).pool.followers == 0,
          "the last waiter to lead after the leader was cancelled");
    s = lft_stats(&k.b);
    CHECK_EQ(s.cancels, 2ULL);
    CHECK_EQ(s.in_flight, 1u);

    /* the late replies for both, then c's: c gets its own, the others are stray */
    reply(k.srv, 1, 40);
    reply(k.srv, 2, 50);
    reply(k.srv, 3, 60);
    finish(&c, 0);
    check_reply(&c, 60);
    check_untouched(&a);
    check_untouched(&b);

    s = lft_stats(&k.b);
    CHECK_EQ(s.cancels, 2ULL);
    CHECK_EQ(s.stray, 2ULL);
    CHECK_EQ(s.replies, 1ULL);
    CHECK_EQ(s.own, 1ULL);
    CHECK_EQ(s.timeouts + s.refused + s.skipped, 0ULL);
    CHECK_EQ(s.in_flight, 0u);
    CHECK_EQ(s.failed, 0);
    conn_close(&k);
}

/* ------------------------------------------------------------------ 4. connection closed
 * how: 0 clean EOF; 1 half a header; 2 a follower's header and part of its body;
 *      3 the leader's own header and part of its body. Then the server closes. */

static void connection_closed(int how)
{
    struct lf_bound_hooks h;
    struct conn k;
    struct client a, b, c;
    struct lf_bound_stats s;
    unsigned char f[HDR + BUFSZ], buf[16];
    lf_bound_ctx x;

    lft_progress();
    lft_hooks(&h);
    conn_open(&k, &h);
    three_waiters(&k, &a, &b, &c, BUFSZ);
    if (how == 1) {
        frame(f, MAGIC, 3, 10, NULL);
        lft_write_all(k.srv, f, HDR / 2);
    } else if (how >= 2) {
        frame(f, MAGIC, how == 2 ? 2 : 1, 50, NULL);
        lft_write_all(k.srv, f, HDR + 20);
        /* the leader reads it before it sees the EOF: the owner is being filled */
        AWAIT(lft_stats(&k.b).reads >= 1, "the leader to read the partial frame");
    }
    close(k.srv);
    k.srv = -1;
    finish(&a, ECONNRESET);
    finish(&b, ECONNRESET);
    finish(&c, ECONNRESET);

    s = lft_stats(&k.b);
    CHECK_EQ(s.failed, ECONNRESET);
    CHECK_EQ(s.replies + s.stray + s.refused + s.timeouts + s.cancels + s.skipped, 0ULL);
    CHECK_EQ(s.in_flight, 0u);
    CHECK_EQ(s.pool.leader + s.pool.followers, 0u);

    /* later calls say it too */
    CHECK_EQ(lf_bound_ctx_init(&x, buf, sizeof buf, 0), 0);
    CHECK_EQ(lf_bound_expect(&k.b, &x, 42), ECONNRESET);
    CHECK_EQ(lf_bound_send(&k.b, "x", 1), ECONNRESET);
    CHECK_EQ(lf_bound_call(&k.b, &x, 43, "y", 1, NULL), ECONNRESET);
    CHECK_EQ(lf_bound_join(&k.b, &x, NULL), EINVAL); /* nothing was expected */
    lf_bound_ctx_destroy(&x);
    CHECK_EQ(lft_stats(&k.b).in_flight, 0u);
    conn_close(&k);
}

/* The server hangs up while nobody reads: the call's send fails, which breaks the
 * write side (EPIPE, for later sends and expects too); the call collects its context
 * and says so. The read side is not failed by it: its EOF is the next reader's. */
static void send_fails_connection(void)
{
    struct lf_bound_hooks h;
    struct conn k;
    struct lf_bound_stats s;
    unsigned char buf[16], req[HDR + 8];
    lf_bound_ctx x;
    size_t n;

    lft_progress();
    lft_hooks(&h);
    conn_open(&k, &h);
    close(k.srv);
    k.srv = -1;
    CHECK_EQ(lf_bound_ctx_init(&x, buf, sizeof buf, 0), 0);
    n = frame(req, MAGIC, 1, 4, (const unsigned char *)"ping");
    CHECK_EQ(lf_bound_call(&k.b, &x, 1, req, n, NULL), EPIPE);
    s = lft_stats(&k.b);
    CHECK_EQ(s.send_failed, EPIPE);
    CHECK_EQ(s.send_failures, 1ULL);
    CHECK_EQ(s.failed, 0);
    CHECK_EQ(s.in_flight, 0u);
    CHECK_EQ(s.cancels, 0ULL); /* the failure completed the context, not a cancel */
    CHECK_EQ(lf_bound_join(&k.b, &x, NULL), EINVAL); /* collected by the call */
    CHECK_EQ(lf_bound_expect(&k.b, &x, 2), EPIPE);
    CHECK_EQ(lf_bound_send(&k.b, req, n), EPIPE);
    lf_bound_ctx_destroy(&x);
    conn_close(&k);
}

/* ------------------------------------------------------------------ 5. malformed frame
 * how: 0 a bad magic; 1 b's reply, then a body above max_body (b keeps its reply). */

static void malformed(int how)
{
    struct lf_bound_hooks h;
    struct conn k;
    struct client a, b, c;
    struct lf_bound_stats s;
    unsigned char f[HDR + BUFSZ], buf[16];
    lf_bound_ctx x;

    lft_progress();
    lft_hooks(&h);
    h.max_body = 128;
    conn_open(&k, &h);
    three_waiters(&k, &a, &b, &c, BUFSZ);
    if (how == 0) {
        send_frame(k.srv, 0xdeadbeefu, 2, 4, NULL);
    } else {
        reply(k.srv, 2, 10);
        frame(f, MAGIC, 3, 129, NULL); /* one byte above max_body */
        lft_write_all(k.srv, f, HDR + 40);
    }
    finish(&a, EPROTO);
    finish(&b, how == 0 ? EPROTO : 0);
    finish(&c, EPROTO);
    if (how == 1)
        check_reply(&b, 10);

    s = lft_stats(&k.b);
    CHECK_EQ(s.failed, EPROTO);
    CHECK_EQ(s.replies, how == 0 ? 0ULL : 1ULL);
    CHECK_EQ(s.stray + s.refused + s.timeouts + s.cancels + s.skipped, 0ULL);
    CHECK_EQ(s.in_flight, 0u);
    CHECK_EQ(lf_bound_ctx_init(&x, buf, sizeof buf, 0), 0);
    CHECK_EQ(lf_bound_expect(&k.b, &x, 42), EPROTO);
    lf_bound_ctx_destroy(&x);
    conn_close(&k);
}

/* ------------------------------------------------------------------ 6. one context refused
 * use_hook: 0 b's reply is longer than b's cap; 1 the read_body hook refuses it. */

static void oversize_and_refused(int use_hook)
{
    struct lf_bound_hooks h;
    struct conn k;
    struct client a, b, c;
    struct lf_bound_stats s;
    unsigned char f[HDR + BUFSZ], body[40];
    size_t n;

    lft_progress();
    lft_hooks(&h);
    if (use_hook)
        h.read_body = read_body_refusing;
    lft_store(&body_calls, 0LL);
    conn_open(&k, &h);
    three_waiters(&k, &a, &b, &c, use_hook ? BUFSZ : 8);

    /* b's bad reply hides a whole frame for c in its body; c's real reply follows */
    decoy_body(body, sizeof body, 3);
    if (use_hook)
        body[0] = REFUSE; /* (the hidden frame's magic loses a byte: still junk) */
    send_frame(k.srv, MAGIC, 2, sizeof body, body);
    reply(k.srv, 3, 30);
    finish(&b, use_hook ? EBADMSG : EMSGSIZE);
    if (!use_hook)
        CHECK_EQ(b.c.len, sizeof body); /* the size it would need */
    finish(&c, 0);
    check_reply(&c, 30);
    check_untouched(&b); /* refused before a byte was copied */

    /* the connection is still good, and the leader still waits for its own */
    s = lft_stats(&k.b);
    CHECK_EQ(s.failed, 0);
    CHECK_EQ(s.refused, 1ULL);
    CHECK_EQ(s.replies, 1ULL);
    CHECK_EQ(s.in_flight, 1u);
    CHECK_EQ(s.pool.leader, 1u);
    /* a's reply in two reads: the second part lands at offset 25 */
    n = frame(f, MAGIC, 1, 50, NULL);
    lft_write_all(k.srv, f, HDR + 25);
    AWAIT(lft_stats(&k.b).reads >= s.reads + 1, "the leader to read the first part of its reply");
    lft_write_all(k.srv, f + HDR + 25, n - HDR - 25);
    finish(&a, 0);
    check_reply(&a, 50);

    s = lft_stats(&k.b);
    CHECK_EQ(s.failed, 0);
    CHECK_EQ(s.refused, 1ULL);
    CHECK_EQ(s.replies, 2ULL);
    CHECK_EQ(s.own, 1ULL);
    CHECK_EQ(s.handed_off, 1ULL);
    CHECK_EQ(s.stray + s.timeouts + s.cancels + s.skipped, 0ULL);
    CHECK_EQ(s.in_flight, 0u);
    if (use_hook)
        CHECK(lft_load(&body_calls) >= 4); /* b's refusal, c's, a's two parts */
    conn_close(&k);
}

/* ------------------------------------------------------------------ 7. skip, strict */

static void heartbeat_skipped(void)
{
    struct lf_bound_hooks h;
    struct conn k;
    struct client a, b;
    struct lf_bound_stats s;
    unsigned char body[100];

    lft_progress();
    lft_hooks(&h);
    h.flags = LF_BOUND_STRICT; /* skipping is not "a reply for nobody" */
    conn_open(&k, &h);
    start(&a, &k, 1, BUFSZ, 0);
    AWAIT(lft_stats(&k.b).pool.leader == 1, "a to lead");
    start(&b, &k, 2, BUFSZ, 0);
    AWAIT(lft_stats(&k.b).pool.followers == 1, "b to follow");

    decoy_body(body, sizeof body, 1); /* a heartbeat whose body looks like a's reply */
    send_frame(k.srv, HB_MAGIC, 1, sizeof body, body);
    reply(k.srv, 2, 12);
    send_frame(k.srv, HB_MAGIC, 0, 0, NULL); /* an empty one */
    reply(k.srv, 1, 70);
    finish(&b, 0);
    finish(&a, 0);
    check_reply(&b, 12);
    check_reply(&a, 70);

    s = lft_stats(&k.b);
    CHECK_EQ(s.skipped, 2ULL);
    CHECK_EQ(s.replies, 2ULL);
    CHECK_EQ(s.stray + s.refused + s.timeouts + s.cancels, 0ULL);
    CHECK_EQ(s.failed, 0);
    CHECK_EQ(s.in_flight, 0u);
    conn_close(&k);
}

static void strict_unknown_id(void)
{
    struct lf_bound_hooks h;
    struct conn k;
    struct client a, b, c;
    struct lf_bound_stats s;

    lft_progress();
    lft_hooks(&h);
    h.flags = LF_BOUND_STRICT;
    conn_open(&k, &h);
    three_waiters(&k, &a, &b, &c, BUFSZ);
    reply(k.srv, 3, 9); /* a known id: delivered as usual */
    finish(&c, 0);
    check_reply(&c, 9);
    reply(k.srv, 99, 5); /* nobody waits for 99 */
    finish(&a, EPROTO);
    finish(&b, EPROTO);

    s = lft_stats(&k.b);
    CHECK_EQ(s.failed, EPROTO);
    CHECK_EQ(s.stray, 1ULL);
    CHECK_EQ(s.replies, 1ULL);
    CHECK_EQ(s.refused + s.timeouts + s.cancels + s.skipped, 0ULL);
    CHECK_EQ(s.in_flight, 0u);
    conn_close(&k);
}

/* ------------------------------------------------------------------ 8. leader times out
 * a leads with a deadline, b and c follow without. If a scheduling stall lets a's
 * deadline pass before both followers parked, the attempt proves nothing: it is
 * wound up and repeated with a longer deadline (returns 0). */

static int leader_timeout_attempt(long a_ms)
{
    struct lf_bound_hooks h;
    struct conn k;
    struct client a, b, c;
    struct lf_bound_stats s;
    int parked;

    lft_progress();
    lft_hooks(&h);
    conn_open(&k, &h);
    start(&a, &k, 1, BUFSZ, a_ms);
    AWAIT(lft_stats(&k.b).pool.leader == 1 || lft_load(&a.done), "a to lead");
    start(&b, &k, 2, BUFSZ, 0);
    start(&c, &k, 3, BUFSZ, 0);
    AWAIT((parked = lft_stats(&k.b).pool.followers == 2) || lft_load(&a.done),
          "b and c to follow (or a to time out first)");
    if (!parked) {
        reply(k.srv, 2, 20);
        reply(k.srv, 3, 30);
        finish(&b, 0);
        finish(&c, 0);
        finish(&a, ETIMEDOUT);
        conn_close(&k);
        return 0;
    }
    /* b and c parked while a led: a times out; the replies are held until then */
    finish(&a, ETIMEDOUT);
    AWAIT(lft_stats(&k.b).pool.leader == 1 && lft_stats(&k.b).pool.followers == 1,
          "a follower to lead after the leader timed out");
    s = lft_stats(&k.b);
    CHECK_EQ(s.timeouts, 1ULL);
    CHECK(s.pool.promotions >= 1);
    CHECK_EQ(s.in_flight, 2u);
    reply(k.srv, 2, 20);
    reply(k.srv, 3, 30);
    finish(&b, 0);
    finish(&c, 0);
    check_reply(&b, 20);
    check_reply(&c, 30);
    check_untouched(&a);

    s = lft_stats(&k.b);
    CHECK_EQ(s.timeouts, 1ULL);
    CHECK_EQ(s.replies, 2ULL);
    CHECK_EQ(s.own + s.handed_off, 2ULL);
    CHECK_EQ(s.stray + s.refused + s.cancels + s.skipped, 0ULL);
    CHECK_EQ(s.in_flight, 0u);
    CHECK_EQ(s.failed, 0);
    CHECK(s.pool.promotions >= 1);
    conn_close(&k);
    return 1;
}

static int leader_timeout_retries;

static void leader_times_out(void)
{
    long ms = 50;
    while (!leader_timeout_attempt(ms)) {
        leader_timeout_retries++;
        ms *= 4;
        CHECK(ms <= 50L * 256); /* four stalls in a row: something else is wrong */
    }
}

/* ------------------------------------------------------------------ 9. shutdown */

#define PARKED 5
#define BIG (4 << 20) /* a request far larger than the socket buffers: its send blocks */

static unsigned char big_req[BIG];
static lf_bound *big_b;
static int big_rc;
static LFT_ATOMIC(int) big_done;

/* A call whose request the server never reads: its send blocks on the full socket. */
static void *big_caller(void *arg)
{
    unsigned char buf[16];
    lf_bound_ctx c;
    (void)arg;
    CHECK_EQ(lf_bound_ctx_init(&c, buf, sizeof buf, 0), 0);
    frame(big_req, MAGIC, 500, BIG - HDR, big_req + HDR);
    big_rc = lf_bound_call(big_b, &c, 500, big_req, BIG, NULL);
    lf_bound_ctx_destroy(&c);
    lft_progress();
    lft_store(&big_done, 1);
    return NULL;
}

static void drain(int fd)
{
    unsigned char sink[65536];
    while (recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0) {
    }
}

static void shutdown_parked(void)
{
    struct lf_bound_hooks h;
    struct conn k;
    struct client cl[PARKED];
    struct lf_bound_stats s;
    lf_bound_ctx x, y;
    unsigned char bx[16], by[16];
    pthread_t big;

    lft_progress();
    lft_hooks(&h);
    conn_open(&k, &h);
    /* a caller stuck in lf_bound_send: the socket is full, the server does not read */
    big_b = &k.b;
    lft_store(&big_done, 0);
    CHECK(pthread_create(&big, NULL, big_caller, NULL) == 0);
    AWAIT(lft_readable(k.srv), "the big request to start arriving");
    start(&cl[0], &k, 100, BUFSZ, 0);
    AWAIT(lft_stats(&k.b).pool.leader == 1, "the first client to lead");
    for (int i = 1; i < PARKED; i++)
        start(&cl[i], &k, 100 + (uint64_t)i, BUFSZ, 0);
    AWAIT(lft_stats(&k.b).pool.followers == PARKED - 1, "the others to park");
    /* expected, not joined yet */
    CHECK_EQ(lf_bound_ctx_init(&x, bx, sizeof bx, 0), 0);
    CHECK_EQ(lf_bound_expect(&k.b, &x, 1), 0);

    CHECK_EQ(lft_stats(&k.b).in_flight, PARKED + 2u);

    CHECK_EQ(lf_bound_shutdown(&k.b), 0);
    for (int i = 0; i < PARKED; i++)
        finish(&cl[i], ECONNABORTED);
    AWAIT(lft_load(&big_done), "the blocked send to notice the shutdown");
    CHECK(pthread_join(big, NULL) == 0);
    /* part of it is out: the send's error says so; its context collected */
    CHECK_EQ(big_rc, ECONNABORTED);
    CHECK_EQ(lf_bound_join(&k.b, &x, NULL), ECONNABORTED);
    /* from now on nothing reaches the server: send and call fail at once */
    drain(k.srv);
    CHECK_EQ(lf_bound_ctx_init(&y, by, sizeof by, 0), 0);
    CHECK_EQ(lf_bound_expect(&k.b, &y, 2), ECANCELED);
    CHECK_EQ(lf_bound_send(&k.b, "z", 1), ECANCELED);
    CHECK_EQ(lf_bound_call(&k.b, &y, 3, "z", 1, NULL), ECANCELED);
    CHECK(!lft_readable(k.srv));
    lf_bound_ctx_destroy(&x);
    lf_bound_ctx_destroy(&y);

    s = lft_stats(&k.b);
    CHECK_EQ(s.failed, ECANCELED);
    CHECK_EQ(s.cancels, 0ULL); /* shutdown is not lf_bound_cancel */
    CHECK_EQ(s.replies + s.stray + s.refused + s.timeouts + s.skipped, 0ULL);
    CHECK_EQ(s.in_flight, 0u);
    CHECK_EQ(s.pool.leader + s.pool.followers, 0u);
    conn_close(&k);
}

#define LOADERS 4

struct loader {
    lf_bound *b;
    uint64_t idx;
    int rc;
    long long ok;
    LFT_ATOMIC(int) done;
    pthread_t t;
};

static void *loader_main(void *arg)
{
    struct loader *ld = (struct loader *)arg;
    unsigned char buf[BUFSZ], req[HDR + 8];
    lf_bound_ctx c;
    int rc;

    CHECK_EQ(lf_bound_ctx_init(&c, buf, sizeof buf, (int)ld->idx), 0);
    for (uint64_t m = 0;; m++) {
        uint64_t id = (ld->idx << 32) | m;
        size_t n = frame(req, MAGIC, id, 4, (const unsigned char *)"load");
        memset(buf, FILL, sizeof buf);
        rc = lf_bound_call(ld->b, &c, id, req, n, NULL);
        if (rc != 0)
            break;
        check_buf(buf, c.len, id, (size_t)(id % 97));
        ld->ok++;
        if (m % 64 == 0)
            lft_progress();
    }
    lf_bound_ctx_destroy(&c);
    ld->rc = rc;
    lft_store(&ld->done, 1);
    return NULL;
}

static int echo_fd;
static LFT_ATOMIC(int) echo_stop;

/* Answers every request with id's pattern (id % 97 bytes) until told to stop. */
static void *echo_server(void *arg)
{
    (void)arg;
    while (!lft_load(&echo_stop)) {
        struct pollfd p;
        unsigned char hd[HDR], body[64];
        uint64_t id;
        size_t len;
        p.fd = echo_fd;
        p.events = POLLIN;
        p.revents = 0;
        if (poll(&p, 1, 10) <= 0)
            continue;
        CHECK(lft_read_all(echo_fd, hd, HDR)); /* requests come whole */
        CHECK_EQ(lft_parse(NULL, hd, &id, &len), 0);
        CHECK(len <= sizeof body);
        CHECK(lft_read_all(echo_fd, body, len));
        reply(echo_fd, id, (uint32_t)(id % 97));
    }
    return NULL;
}

static long long load_calls;

static void shutdown_under_load(void)
{
    struct lf_bound_hooks h;
    struct conn k;
    struct loader ld[LOADERS];
    struct lf_bound_stats s;
    pthread_t srv;

    lft_progress();
    lft_hooks(&h);
    conn_open(&k, &h);
    echo_fd = k.srv;
    lft_store(&echo_stop, 0);
    CHECK(pthread_create(&srv, NULL, echo_server, NULL) == 0);
    for (int i = 0; i < LOADERS; i++) {
        ld[i].b = &k.b;
        ld[i].idx = (uint64_t)i + 1;
        ld[i].rc = -1;
        ld[i].ok = 0;
        lft_store(&ld[i].done, 0);
        CHECK(pthread_create(&ld[i].t, NULL, loader_main, &ld[i]) == 0);
    }
    AWAIT(lft_stats(&k.b).replies >= 200, "200 replies under load");
    CHECK_EQ(lf_bound_shutdown(&k.b), 0);
    for (int i = 0; i < LOADERS; i++) {
        AWAIT(lft_load(&ld[i].done), "a loaded client to return after shutdown");
        CHECK(pthread_join(ld[i].t, NULL) == 0);
        CHECK(ld[i].rc == ECONNABORTED || ld[i].rc == ECANCELED);
        load_calls += ld[i].ok;
    }
    lft_store(&echo_stop, 1);
    CHECK(pthread_join(srv, NULL) == 0);

    s = lft_stats(&k.b);
    CHECK_EQ(s.failed, ECANCELED);
    CHECK_EQ(s.cancels, 0ULL);
    CHECK_EQ(s.replies, (unsigned long long)load_calls);
    /* a reply for a context the shutdown ended is late: the leader, woken by the
     * shutdown, may still read it (stray). Each loader had at most one in flight. */
    CHECK(s.stray <= LOADERS);
    CHECK_EQ(s.refused + s.timeouts + s.skipped, 0ULL);
    CHECK_EQ(s.in_flight, 0u);
    CHECK_EQ(s.pool.leader + s.pool.followers, 0u);
    conn_close(&k);
}

int main(void)
{
    lft_start("t_bound_errors", 30);
    bad_input();
    timeout_then_late_reply(0);
    timeout_then_late_reply(1);
    cancel_follower_and_leader();
    for (int how = 0; how < 4; how++)
        connection_closed(how);
    send_fails_connection();
    malformed(0);
    malformed(1);
    oversize_and_refused(0);
    oversize_and_refused(1);
    heartbeat_skipped();
    strict_unknown_id();
    leader_times_out();
    shutdown_parked();
    shutdown_under_load();
    printf("t_bound_errors %s/%s: EINVAL/EEXIST/EBUSY/ENOENT, ETIMEDOUT + stray, ECANCELED, "
           "ECONNRESET x5, EPIPE, EPROTO (magic, max_body, strict), EMSGSIZE, EBADMSG, ENOMSG skip, "
           "leader timeout handed on (%d retries), shutdown (%lld calls under load): ok\n",
           lf_promote_name(), lf_sync_name(), leader_timeout_retries, load_calls);
    return 0;
}
