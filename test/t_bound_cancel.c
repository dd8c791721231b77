/* lf_bound: threads cancelled (pthread_cancel, deferred) while they wait inside
 * lf_bound_call leave a bound that works on. A fake server on a socketpair reads the
 * requests (checking every byte: a request cut in the middle would show) and, in the
 * first parts, answers only when the test says, so each thread is known to wait
 * where the part cancels it. Each part ends with lf_bound_shutdown and
 * lf_bound_destroy returning 0, and every cancelled thread's pthread_join says
 * PTHREAD_CANCELED.
 *
 * 1. leader: A leads (in poll), B follows; A is cancelled: B leads and gets its
 *    reply; A's reply, written later, is skipped and counted as stray.
 * 2. follower: A leads, B and C follow; B is cancelled: no longer in flight; C's
 *    reply (read by A) and A's come; B's is stray.
 * 3. half read: A leads and has read half of B's reply when it is cancelled: B
 *    leads and gets its reply whole. Then a leader cancelled half-way through its
 *    own reply: the next leader skips the rest and gets its own.
 * 4. send: S is inside a send of 1 MiB that the server does not read yet (it is the
 *    writer, waiting for room); T's request queues behind it and T is cancelled
 *    while it waits (bare: in its join; hybrid: for its request to go out), not in
 *    flight any more, its request taken back unsent. S is cancelled mid-request:
 *    its request still goes out whole (the
 *    server checks it), S is cancelled in its join, and a later call gets its reply
 *    through the same stream.
 * 5. shutdown: with the leader cancelled and a follower still waiting,
 *    lf_bound_shutdown ends the follower's wait (ECONNABORTED).
 * 6. stress: client threads call without pause (some requests large enough to wait
 *    for room) while the test cancels one at a random moment and starts another in
 *    its place. Every call that returns has the reply of its own id, byte for byte;
 *    every reply the server wrote was delivered or counted as stray; every cancel is
 *    counted once in stats.cancelled; nothing hangs (watchdog).
 * With lf_bound.h before its cleanup handlers, part 1 hangs (the dead leader keeps
 * the slot), part 2 fails (the context stays in flight: destroy says EBUSY), and
 * part 4 hangs (the send token, as it was then, died with S, half a request on the
 * wire).
 * t_reactor_bound_cancel.c runs the same file in hybrid mode (the waiters turn an
 * lf_reactor; "leads" there means leads the reactor's pool). */
#include "../lf_bound.h"
#include "lf_frames.h"

#include <sys/socket.h>

#define REPLY_MAX 1024
#define BIG (1u << 20) /* part 4's request body */

static lf_bound B;
static int cli_fd, srv_fd;
static pthread_t srv_th;

static size_t reply_len(uint64_t id)
{
    return 40 + (size_t)(id * 2654435761u % 900); /* 40..939: at least two halves */
}

static unsigned char reply_byte(uint64_t id, size_t i)
{
    return (unsigned char)(id * 131u + i * 7u + (id >> 32));
}

static unsigned char req_byte(uint64_t id, size_t i)
{
    return (unsigned char)(id * 29u + i * 3u + 1u);
}

/* ------------------------------------------------------------------ the server */

static LFT_ATOMIC(int) srv_hold;         /* 1: answer nothing (the test does) */
static LFT_ATOMIC(int) srv_paused;       /* 1: read nothing */
static LFT_ATOMIC(long long) srv_got;    /* requests read whole, every byte right */
static LFT_ATOMIC(long long) srv_sent;   /* replies written */

/* Write bytes [from, to) of id's reply as a frame (to 0: to its end). */
static void answer_part(uint64_t id, size_t from, size_t to)
{
    unsigned char out[HDR + REPLY_MAX];
    size_t len = reply_len(id);
    lft_put_header(out, MAGIC, (uint32_t)len, id);
    for (size_t k = 0; k < len; k++)
        out[HDR + k] = reply_byte(id, k);
    if (to == 0 || to > HDR + len)
        to = HDR + len;
    /* counted before the write: once a later reply is read, this one is counted */
    if (to == HDR + len)
        lft_add(&srv_sent, 1LL);
    lft_write_all(srv_fd, out + from, to - from);
}

static void answer(uint64_t id)
{
    answer_part(id, 0, 0);
}

static void *server(void *arg)
{
    static unsigned char chunk[65536];
    unsigned char hdr[HDR];
    (void)arg;
    for (;;) {
        uint64_t id;
        size_t len;
        if (lft_load(&srv_paused) || !lft_readable(srv_fd)) {
            lft_sleep_ms(1);
            continue;
        }
        if (!lft_read_all(srv_fd, hdr, HDR))
            return NULL; /* the test is done with this connection */
        CHECK_EQ(lft_parse(NULL, hdr, &id, &len), 0);
        CHECK(len <= BIG);
        for (size_t off = 0; off < len;) {
            size_t n = len - off < sizeof chunk ? len - off : sizeof chunk;
            CHECK(lft_read_all(srv_fd, chunk, n));
            for (size_t i = 0; i < n; i++)
                if (chunk[i] != req_byte(id, off + i)) {
                    fprintf(stderr, "request %llx: byte %zu is %u, want %u (a torn request?)\n",
                            (unsigned long long)id, off + i, chunk[i], req_byte(id, off + i));
                    CHECK(0);
                }
            off += n;
        }
        if (!lft_load(&srv_hold))
            answer(id);
        lft_add(&srv_got, 1LL);
    }
}

static void bound_open(int hold)
{
    struct lf_bound_hooks h;
    int sv[2], small = 16384;
    /* small buffers: a large request waits for room (parts 4 and 6) */
    lft_pair(sv, small);
    cli_fd = sv[0];
    srv_fd = sv[1];
    CHECK(setsockopt(srv_fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof small) == 0);
    lft_hooks(&h);
    h.max_body = REPLY_MAX;
    lft_bound_open(&B, cli_fd, &h);
    lft_store(&srv_hold, hold);
    lft_store(&srv_paused, 0);
    lft_store(&srv_got, 0LL);
    lft_store(&srv_sent, 0LL);
    srv_th = lft_server_start(server, NULL);
}

/* Every part ends here: the bound shuts down and is destroyed (no context left in
 * flight, no thread left in its pool). */
static void bound_close(void)
{
    struct lf_bound_stats s = lft_stats(&B);
    CHECK_EQ(s.pool.leader + s.pool.followers + s.pool.processing, 0u);
    CHECK_EQ(lf_bound_shutdown(&B), 0);
    lft_bound_close(&B);
    lft_store(&srv_paused, 0);
    lft_server_end(srv_th, cli_fd); /* the server sees EOF */
    close(cli_fd);
    close(srv_fd);
}

/* ------------------------------------------------------------------ one call */

static void fill_request(unsigned char *req, uint64_t id, size_t len)
{
    lft_put_header(req, MAGIC, (uint32_t)len, id);
    for (size_t i = 0; i < len; i++)
        req[HDR + i] = req_byte(id, i);
}

/* lf_bound_call; a reply must be id's own, byte for byte, and nothing past it. */
static int call_checked(lf_bound_ctx *c, unsigned char *reply, uint64_t id,
                        const unsigned char *req, size_t len)
{
    int rc;
    memset(reply, 0xee, REPLY_MAX + 1);
    rc = lf_bound_call(&B, c, id, req, HDR + len, NULL);
    if (rc == 0) {
        CHECK_EQ(c->id, id);
        CHECK_EQ(c->len, reply_len(id));
        for (size_t k = 0; k < c->len; k++)
            if (reply[k] != reply_byte(id, k)) {
                fprintf(stderr, "reply to %llx: byte %zu is %u, want %u\n",
                        (unsigned long long)id, k, reply[k], reply_byte(id, k));
                CHECK(0);
            }
        CHECK_EQ(reply[c->len], 0xee);
    }
    return rc;
}

/* What a client gives back in its own cleanup handler, after the bound's ran. */
struct client_mem {
    lf_bound_ctx *c;
    unsigned char *req;
};

static void client_cleanup(void *arg)
{
    struct client_mem *m = (struct client_mem *)arg;
    lf_bound_ctx_destroy(m->c);
    free(m->req);
}

struct client {
    pthread_t th;
    uint64_t id;
    size_t req_len;
    int rc; /* lf_bound_call's result, if it returned */
};

static void *client(void *arg)
{
    struct client *cl = (struct client *)arg;
    unsigned char reply[REPLY_MAX + 1];
    lf_bound_ctx c;
    struct client_mem m;
    m.c = &c;
    m.req = (unsigned char *)malloc(HDR + cl->req_len);
    CHECK(m.req != NULL);
    fill_request(m.req, cl->id, cl->req_len);
    CHECK_EQ(lf_bound_ctx_init(&c, reply, REPLY_MAX, (int)(cl->id % 3)), 0);
    pthread_cleanup_push(client_cleanup, &m);
    cl->rc = call_checked(&c, reply, cl->id, m.req, cl->req_len);
    pthread_cleanup_pop(1);
    return NULL;
}

static void start(struct client *cl, uint64_t id, size_t req_len)
{
    cl->id = id;
    cl->req_len = req_len;
    cl->rc = -1;
    CHECK(pthread_create(&cl->th, NULL, client, cl) == 0);
}

static void cancel_and_join(struct client *cl)
{
    void *ret = NULL;
    CHECK(pthread_cancel(cl->th) == 0);
    CHECK(pthread_join(cl->th, &ret) == 0);
    CHECK(ret == PTHREAD_CANCELED);
    CHECK_EQ(cl->rc, -1); /* its call never returned */
}

static void join_ok(struct client *cl, int want)
{
    void *ret = (void *)&ret;
    CHECK(pthread_join(cl->th, &ret) == 0);
    CHECK(ret == NULL);
    CHECK_EQ(cl->rc, want);
}

/* the bound's pool: one leader, n parked followers (a follower counts from just
 * before it parks: a cancel that comes first acts when it does) */
#define POOL_IS(lead, fol)                                                              \
    (lft_stats(&B).pool.leader == (lead) && lft_stats(&B).pool.followers == (fol))

/* ------------------------------------------------------------------ 1 */

static void leader_cancelled(void)
{
    struct client a, b;
    struct lf_bound_stats s;
    bound_open(1);
    start(&a, 101, 10);
    AWAIT(lft_load(&srv_got) == 1 && POOL_IS(1u, 0u), "A leads");
    start(&b, 102, 20);
    AWAIT(lft_load(&srv_got) == 2 && POOL_IS(1u, 1u), "B follows");
    cancel_and_join(&a);
    s = lft_stats(&B);
    CHECK_EQ(s.cancelled, 1ULL);
    CHECK_EQ(s.in_flight, 1u);
    AWAIT(POOL_IS(1u, 0u), "B leads after A was cancelled");
    answer(101); /* late: nobody waits for it */
    answer(102);
    join_ok(&b, 0);
    s = lft_stats(&B);
    CHECK_EQ(s.replies, 1ULL);
    CHECK_EQ(s.stray, 1ULL);
    CHECK_EQ(s.cancels, 0ULL); /* lf_bound_cancel's count, not this one */
    CHECK_EQ(s.in_flight, 0u);
    bound_close();
}

/* ------------------------------------------------------------------ 2 */

static void follower_cancelled(void)
{
    struct client a, b, c;
    struct lf_bound_stats s;
    bound_open(1);
    start(&a, 201, 1);
    AWAIT(lft_load(&srv_got) == 1 && POOL_IS(1u, 0u), "A leads");
    start(&b, 202, 2);
    AWAIT(lft_load(&srv_got) == 2 && POOL_IS(1u, 1u), "B follows");
    start(&c, 203, 3);
    AWAIT(lft_load(&srv_got) == 3 && POOL_IS(1u, 2u), "C follows");
    cancel_and_join(&b);
    s = lft_stats(&B);
    CHECK_EQ(s.cancelled, 1ULL);
    CHECK_EQ(s.in_flight, 2u);
    CHECK_EQ(s.pool.followers, 1u);
    answer(202); /* late */
    answer(203); /* read by A, handed to C */
    answer(201);
    join_ok(&c, 0);
    join_ok(&a, 0);
    s = lft_stats(&B);
    CHECK_EQ(s.replies, 2ULL);
    CHECK_EQ(s.stray, 1ULL);
    CHECK_EQ(s.in_flight, 0u);
    bound_close();
}

/* ------------------------------------------------------------------ 3 */

/* The first half of id's reply (its header and half its body) written, and read by
 * the leader: returns where the rest starts. */
static size_t answer_half(uint64_t id, const char *what)
{
    unsigned long long reads = lft_stats(&B).reads;
    size_t half = HDR + reply_len(id) / 2;
    answer_part(id, 0, half);
    AWAIT(lft_stats(&B).reads > reads, what);
    return half;
}

static void half_read(void)
{
    struct client a, b, d, e, f;
    struct lf_bound_stats s;
    size_t half;
    bound_open(1);

    /* the leader is half-way through another waiter's reply */
    start(&a, 301, 5);
    AWAIT(lft_load(&srv_got) == 1 && POOL_IS(1u, 0u), "A leads");
    start(&b, 302, 6);
    AWAIT(lft_load(&srv_got) == 2 && POOL_IS(1u, 1u), "B follows");
    half = answer_half(302, "A read half of B's reply");
    /* whatever A read it took in before it could wait again: the cancel acts
     * in that wait, with the frame half done in the bound's receive state */
    cancel_and_join(&a);
    AWAIT(POOL_IS(1u, 0u), "B leads after A was cancelled");
    answer_part(302, half, 0);
    join_ok(&b, 0); /* whole and right: call_checked compared every byte */
    start(&d, 303, 7);
    AWAIT(lft_load(&srv_got) == 3, "D's request");
    answer(301); /* A's, late */
    answer(303);
    join_ok(&d, 0);
    s = lft_stats(&B);
    CHECK_EQ(s.replies, 2ULL);
    CHECK_EQ(s.stray, 1ULL);
    CHECK_EQ(s.cancelled, 1ULL);

    /* the leader is half-way through its own reply */
    start(&e, 304, 8);
    AWAIT(lft_load(&srv_got) == 4 && POOL_IS(1u, 0u), "E leads");
    start(&f, 305, 9);
    AWAIT(lft_load(&srv_got) == 5 && POOL_IS(1u, 1u), "F follows");
    half = answer_half(304, "E read half of its reply");
    cancel_and_join(&e);
    AWAIT(POOL_IS(1u, 0u), "F leads after E was cancelled");
    answer_part(304, half, 0); /* F skips the rest of it */
    answer(305);
    join_ok(&f, 0);
    s = lft_stats(&B);
    CHECK_EQ(s.replies, 3ULL);
    CHECK_EQ(s.stray, 2ULL); /* 301, and 304 (claimed, then withdrawn) */
    CHECK_EQ(s.cancelled, 2ULL);
    CHECK_EQ(s.in_flight, 0u);
    bound_close();
}

/* ------------------------------------------------------------------ 4 */

static void send_cancelled(void)
{
    struct client sender, t, u;
    struct lf_bound_stats s;
    bound_open(1);
    lft_store(&srv_paused, 1);
    start(&sender, 401, BIG);
    /* bytes arrived: S is the writer, and stays inside the send (its request is
     * far larger than the socket holds) until the server reads */
    AWAIT(lft_readable(srv_fd), "S's first bytes");
    start(&t, 402, 4);
    AWAIT(lft_stats(&B).in_flight == 2u, "T expects (its request queues behind S's next)");
    cancel_and_join(&t);
    s = lft_stats(&B);
    CHECK_EQ(s.cancelled, 1ULL);
    CHECK_EQ(s.in_flight, 1u);
    /* S is mid-request: the cancel waits until the request is out whole */
    CHECK(pthread_cancel(sender.th) == 0);
    lft_store(&srv_paused, 0);
    {
        void *ret = NULL;
        CHECK(pthread_join(sender.th, &ret) == 0);
        CHECK(ret == PTHREAD_CANCELED);
        CHECK_EQ(sender.rc, -1);
    }
    AWAIT(lft_load(&srv_got) == 1, "S's request, whole");
    s = lft_stats(&B);
    CHECK_EQ(s.cancelled, 2ULL);
    CHECK_EQ(s.in_flight, 0u);
    CHECK_EQ(s.send_failed, 0);
    CHECK_EQ(s.send_failures, 0ULL);
    start(&u, 403, 11);
    AWAIT(lft_load(&srv_got) == 2, "U's request"); /* T's never went out */
    answer(401); /* late */
    answer(403);
    join_ok(&u, 0);
    s = lft_stats(&B);
    CHECK_EQ(s.replies, 1ULL);
    CHECK_EQ(s.stray, 1ULL);
    bound_close();
}

/* ------------------------------------------------------------------ 5 */

static void shutdown_after(void)
{
    struct client a, b;
    bound_open(1);
    start(&a, 501, 1);
    AWAIT(lft_load(&srv_got) == 1 && POOL_IS(1u, 0u), "A leads");
    start(&b, 502, 2);
    AWAIT(lft_load(&srv_got) == 2 && POOL_IS(1u, 1u), "B follows");
    cancel_and_join(&a);
    CHECK_EQ(lf_bound_shutdown(&B), 0);
    join_ok(&b, ECONNABORTED);
    CHECK_EQ(lft_stats(&B).in_flight, 0u);
    bound_close(); /* a second shutdown: idempotent */
}

/* ------------------------------------------------------------------ 6 */

#define SLOTS 6
static LFT_ATOMIC(int) stress_stop;
static LFT_ATOMIC(long long) stress_ok;
static LFT_ATOMIC(unsigned) next_gen;

static void stress_loop(lf_bound_ctx *c, unsigned char *reply, unsigned char *req, unsigned gen)
{
    unsigned long long rnd = 0x9E3779B97F4A7C15ull * (gen + 1u);
    for (uint64_t seq = 0; !lft_load(&stress_stop); seq++) {
        uint64_t id = ((uint64_t)gen << 32) | seq; /* never reused */
        size_t len = lft_rand(&rnd) % 8 == 0 ? 32768 + (size_t)(lft_rand(&rnd) % 32768)
                                              : (size_t)(lft_rand(&rnd) % 64);
        fill_request(req, id, len);
        CHECK_EQ(call_checked(c, reply, id, req, len), 0);
        lft_add(&stress_ok, 1LL);
        lft_progress();
    }
}

static void *stress_client(void *arg)
{
    unsigned char reply[REPLY_MAX + 1];
    lf_bound_ctx c;
    struct client_mem m;
    unsigned gen = lft_add(&next_gen, 1u);
    (void)arg;
    m.c = &c;
    m.req = (unsigned char *)malloc(HDR + 65536);
    CHECK(m.req != NULL);
    CHECK_EQ(lf_bound_ctx_init(&c, reply, REPLY_MAX, (int)(gen % 3)), 0);
    pthread_cleanup_push(client_cleanup, &m);
    stress_loop(&c, reply, m.req, gen);
    pthread_cleanup_pop(1);
    return NULL;
}

static void stress(void)
{
    pthread_t th[SLOTS];
    unsigned long long rnd = 0x5eedULL;
    long long cancels = lft_scaled(160), ok_before;
    struct lf_bound_stats s;
    unsigned char reply[REPLY_MAX + 1], req[HDR];
    lf_bound_ctx c;

    bound_open(0); /* the server answers each request as it reads it, in order */
    lft_store(&stress_stop, 0);
    lft_store(&stress_ok, 0LL);
    lft_store(&next_gen, 1u);
    for (int i = 0; i < SLOTS; i++)
        CHECK(pthread_create(&th[i], NULL, stress_client, NULL) == 0);
    for (long long k = 0; k < cancels; k++) {
        int i = (int)(lft_rand(&rnd) % SLOTS);
        void *ret = NULL;
        struct timespec ts;
        ts.tv_sec = 0;
        ts.tv_nsec = (long)(lft_rand(&rnd) % 2000000); /* 0..2 ms */
        nanosleep(&ts, NULL);
        CHECK(pthread_cancel(th[i]) == 0);
        CHECK(pthread_join(th[i], &ret) == 0);
        CHECK(ret == PTHREAD_CANCELED);
        CHECK(pthread_create(&th[i], NULL, stress_client, NULL) == 0);
        lft_progress();
    }
    lft_store(&stress_stop, 1);
    for (int i = 0; i < SLOTS; i++) {
        void *ret = (void *)&ret;
        CHECK(pthread_join(th[i], &ret) == 0);
        CHECK(ret == NULL);
    }
    /* a last call: the server answers in order, so once its reply is in, every
     * reply written before it was read (delivered or skipped) */
    ok_before = lft_load(&stress_ok);
    CHECK_EQ(lf_bound_ctx_init(&c, reply, REPLY_MAX, 0), 0);
    fill_request(req, 0xFFFFFFFF00000000ull, 0);
    CHECK_EQ(call_checked(&c, reply, 0xFFFFFFFF00000000ull, req, 0), 0);
    lf_bound_ctx_destroy(&c);

    s = lft_stats(&B);
    CHECK_EQ(s.cancelled, (unsigned long long)cancels); /* each cancel acted in a call */
    CHECK_EQ(s.replies + s.stray, (unsigned long long)lft_load(&srv_sent));
    CHECK(s.replies >= (unsigned long long)ok_before + 1ULL);
    /* a reply delivered to a context whose thread was cancelled before it looked:
     * at most one per cancel */
    CHECK(s.replies - (unsigned long long)ok_before - 1ULL <= (unsigned long long)cancels);
    CHECK_EQ(s.in_flight, 0u);
    CHECK_EQ(s.failed, 0);
    CHECK_EQ(s.send_failed, 0);
    CHECK_EQ(s.timeouts + s.cancels + s.refused + s.skipped, 0ULL);
    bound_close();
    printf("t_bound_cancel " MODE " %s/%s stress: %lld cancels, %lld calls answered, %llu replies "
           "delivered, %llu stray\n",
           lf_promote_name(), lf_sync_name(), cancels, ok_before, s.replies, s.stray);
}

/* argument: run that part alone (1..6); none: all of them */
int main(int argc, char **argv)
{
    static void (*const parts[])(void) = {leader_cancelled, follower_cancelled, half_read,
                                          send_cancelled,   shutdown_after,     stress};
    int only = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 0;
    lft_start("t_bound_cancel", 30);
    for (int i = 0; i < (int)(sizeof parts / sizeof parts[0]); i++)
        if (only == 0 || only == i + 1)
            parts[i]();
    lft_pass();
    return 0;
}
