/* lf_bound with LF_BOUND_IN_ORDER: a protocol whose replies carry no id and come in
 * request order (Redis, memcached's text protocol, HTTP/1.1 pipelining). The replies
 * here carry id 0 always; the bound matches each to the oldest request on the wire.
 * (t_reactor_bound_inorder.c runs the same file in hybrid mode.)
 *
 * 1. storm: 6 threads, many calls each, against an in-order echo server: every thread
 *    gets its own reply, byte for byte, each once; c.id is the request's place.
 * 2. timeout in the middle: a call whose reply the server holds back 300 ms times out
 *    at 100 ms; the calls of another thread queued behind it on the wire get their
 *    own replies (the held-back one is read and dropped in its turn: stray 1).
 * 3. cancel in the middle: the same with lf_bound_cancel.
 * 4. a plain lf_bound_send is a request with no reply: it takes no place, and the
 *    calls after it get their own replies.
 * 5. calls queued behind a full socket (their places given back after a write that
 *    took nothing, taken again when they go out) and a queued call that times out
 *    before it is written (it never takes a place): the others get their own replies.
 * 6. misuse: lf_bound_expect says ENOTSUP (the place is the id), a call with no
 *    request EINVAL.
 * 7. hybrid only (a reactor thread reads while nothing waits): a reply with no
 *    request before it fails the connection with EPROTO.
 * 8. a read_body hook that finds a reply out of step (LF_BOUND_BROKEN) fails the
 *    connection: that call, and the calls after it, say EPROTO.
 * 9. lf_bound_shutdown racing 6 threads' calls, many rounds, small socket buffers:
 *    every call returns (calls queued and not placed yet were left waiting for good),
 *    each 0 with its own reply, or the shutdown's ECANCELED / ECONNABORTED; nothing
 *    left in flight, destroy succeeds. */
#include "../lf_bound.h"
#include "lf_frames.h"

#include <signal.h>
#include <sys/socket.h>

#define BODY 24
#define NT 6

static lf_bound B;
static int SV[2];
static size_t junk; /* bytes the server skips first (part 5) */

/* the id in a reply is always 0 here: the bound must not need it */
static int parse(void *user, const unsigned char *h, uint64_t *id, size_t *len)
{
    int rc = lft_parse(user, h, id, len);
    *id = 0;
    return rc;
}

static int checked_body(void *user, lf_bound_ctx *c, const unsigned char *bytes, size_t n,
                        size_t offset)
{
    (void)user;
    if (offset == 0 && n > 0 && bytes[0] == 'P')
        return LF_BOUND_BROKEN; /* "this reply does not answer its request" */
    memcpy((char *)c->buf + offset, bytes, n);
    return 0;
}

static int with_read_body;

static void open_pair(int sndbuf)
{
    struct lf_bound_hooks h;
    lft_hooks(&h);
    h.parse_header = parse;
    h.flags = LF_BOUND_IN_ORDER;
    if (with_read_body)
        h.read_body = checked_body;
    lft_pair_open(&B, SV, sndbuf, &h);
}

/* The server: skips the junk, then answers each request in order with its body and
 * id 0. Body[0]: 'S' hold the reply back 300 ms; 'N' no reply; 'X' the reply and
 * then one more, for nothing. Returns at EOF. */
static void *server(void *arg)
{
    unsigned char h[HDR], body[256];
    (void)arg;
    if (!lft_skip(SV[1], junk))
        return NULL;
    for (;;) {
        uint64_t id;
        size_t len;
        if (!lft_read_all(SV[1], h, HDR))
            return NULL;
        CHECK_EQ(lft_parse(NULL, h, &id, &len), 0);
        CHECK(len >= 1 && len <= sizeof body);
        CHECK(lft_read_all(SV[1], body, len));
        if (body[0] == 'N')
            continue;
        if (body[0] == 'S')
            lft_sleep_ms(300);
        for (int k = 0; k < (body[0] == 'X' ? 2 : 1); k++) {
            lft_put_header(h, MAGIC, (uint32_t)len, 0);
            lft_write_all(SV[1], h, HDR);
            lft_write_all(SV[1], body, len);
        }
    }
}

static void deadline_in(struct timespec *dl, long ms)
{
    clock_gettime(CLOCK_MONOTONIC, dl);
    dl->tv_sec += ms / 1000;
    dl->tv_nsec += (ms % 1000) * 1000000L;
    if (dl->tv_nsec >= 1000000000L) {
        dl->tv_sec++;
        dl->tv_nsec -= 1000000000L;
    }
}

/* One call with body tag + who/seq; its reply must be that body. */
static int call(lf_bound_ctx *c, char tag, unsigned who, unsigned seq, long ms)
{
    unsigned char req[HDR + BODY];
    struct timespec dl;
    int rc;
    memset(req + HDR, 0, BODY);
    req[HDR] = (unsigned char)tag;
    memcpy(req + HDR + 4, &who, sizeof who);
    memcpy(req + HDR + 8, &seq, sizeof seq);
    lft_put_header(req, MAGIC, BODY, 12345); /* an id the bound does not look at */
    deadline_in(&dl, ms);
    rc = lf_bound_call(&B, c, 999, req, sizeof req, &dl);
    if (rc == 0) {
        CHECK_EQ(c->len, (size_t)BODY);
        CHECK(memcmp(c->buf, req + HDR, BODY) == 0); /* its own reply */
    }
    return rc;
}

struct worker {
    unsigned who;
    int n;
    char tag;
    long ms;
    int rc;
    unsigned long long last_id;
};

static void *worker(void *arg)
{
    struct worker *w = (struct worker *)arg;
    unsigned char reply[BODY];
    lf_bound_ctx c;
    CHECK_EQ(lf_bound_ctx_init(&c, reply, sizeof reply, 0), 0);
    w->rc = 0;
    for (int i = 0; i < w->n && w->rc == 0; i++) {
        w->rc = call(&c, w->tag, w->who, (unsigned)i, w->ms);
        if (w->rc == 0 && i > 0)
            CHECK(c.id > w->last_id); /* places grow */
        w->last_id = c.id;
        if (i % 64 == 0)
            lft_progress();
    }
    lf_bound_ctx_destroy(&c);
    return NULL;
}

static void storm(int n)
{
    pthread_t th[NT], srv;
    struct worker w[NT];
    open_pair(65536);
    junk = 0;
    srv = lft_server_start(server, NULL);
    for (int t = 0; t < NT; t++) {
        w[t].who = (unsigned)t;
        w[t].n = n;
        w[t].tag = 'E';
        w[t].ms = 60000;
        CHECK(pthread_create(&th[t], NULL, worker, &w[t]) == 0);
    }
    for (int t = 0; t < NT; t++) {
        lft_join(th[t]);
        CHECK_EQ(w[t].rc, 0);
    }
    CHECK_EQ(lft_stats(&B).replies, (unsigned long long)n * NT);
    CHECK_EQ(lft_stats(&B).stray, 0ull);
    lft_server_end(srv, SV[0]);
    lft_pair_close(&B, SV);
}

static lf_bound_ctx held;
static unsigned char held_buf[BODY];

static void *held_call(void *arg)
{
    long ms = (long)(intptr_t)arg;
    return (void *)(intptr_t)call(&held, 'S', 100, 0, ms);
}

/* 2 and 3: a held-back reply; by its deadline (ms > 0) or by lf_bound_cancel */
static void held_back(long ms)
{
    pthread_t a, srv;
    struct worker w;
    int rc;
    open_pair(65536);
    junk = 0;
    srv = lft_server_start(server, NULL);
    CHECK_EQ(lf_bound_ctx_init(&held, held_buf, sizeof held_buf, 0), 0);
    CHECK(pthread_create(&a, NULL, held_call, (void *)(intptr_t)(ms > 0 ? ms : 60000)) == 0);
    AWAIT(lft_stats(&B).in_flight == 1 && lft_stats(&B).queued == 0, "the held-back request on the wire");
    w.who = 7; /* behind it on the wire */
    w.n = 20;
    w.tag = 'E';
    w.ms = 60000;
    {
        pthread_t b;
        CHECK(pthread_create(&b, NULL, worker, &w) == 0);
        if (ms <= 0) {
            AWAIT(lf_bound_cancel(&B, &held) == 0, "the held-back call cancelled");
        }
        rc = (int)(intptr_t)lft_join(a);
        CHECK_EQ(rc, ms > 0 ? ETIMEDOUT : ECANCELED);
        lft_join(b);
    }
    CHECK_EQ(w.rc, 0);
    CHECK_EQ(lft_stats(&B).stray, 1ull); /* the held-back reply, dropped in its turn */
    CHECK_EQ(lft_stats(&B).replies, 20ull);
    lf_bound_ctx_destroy(&held);
    lft_server_end(srv, SV[0]);
    lft_pair_close(&B, SV);
}

/* 4 */
static void no_reply(void)
{
    pthread_t srv;
    unsigned char req[HDR + BODY], reply[BODY];
    lf_bound_ctx c;
    open_pair(65536);
    junk = 0;
    srv = lft_server_start(server, NULL);
    CHECK_EQ(lf_bound_ctx_init(&c, reply, sizeof reply, 0), 0);
    memset(req, 0, sizeof req);
    lft_put_header(req, MAGIC, BODY, 0);
    req[HDR] = 'N';
    for (unsigned i = 0; i < 10; i++) {
        CHECK_EQ(lf_bound_send(&B, req, sizeof req), 0);
        CHECK_EQ(call(&c, 'E', 8, i, 60000), 0);
    }
    CHECK_EQ(lft_stats(&B).replies, 10ull);
    lf_bound_ctx_destroy(&c);
    lft_server_end(srv, SV[0]);
    lft_pair_close(&B, SV);
}

/* 5 */
static void queued(void)
{
    pthread_t th[NT], late, srv;
    struct worker w[NT], wl;
    open_pair(16384);
    junk = lft_fill_socket(SV[0]);
    for (int t = 0; t < NT; t++) {
        w[t].who = 20 + (unsigned)t;
        w[t].n = 3;
        w[t].tag = 'E';
        w[t].ms = 60000;
        CHECK(pthread_create(&th[t], NULL, worker, &w[t]) == 0);
    }
    AWAIT(lft_stats(&B).queued == NT, "every call queued behind the full socket");
    wl.who = 30;
    wl.n = 1;
    wl.tag = 'E';
    wl.ms = 100;
    CHECK(pthread_create(&late, NULL, worker, &wl) == 0);
    lft_join(late);
    CHECK_EQ(wl.rc, ETIMEDOUT); /* never written: it takes no place */
    srv = lft_server_start(server, NULL);
    for (int t = 0; t < NT; t++) {
        lft_join(th[t]);
        CHECK_EQ(w[t].rc, 0);
    }
    CHECK_EQ(lft_stats(&B).replies, 3ull * NT);
    CHECK_EQ(lft_stats(&B).stray, 0ull);
    lft_server_end(srv, SV[0]);
    lft_pair_close(&B, SV);
}

/* 6 */
static void misuse(void)
{
    unsigned char reply[BODY];
    lf_bound_ctx c;
    open_pair(65536);
    CHECK_EQ(lf_bound_ctx_init(&c, reply, sizeof reply, 0), 0);
    CHECK_EQ(lf_bound_expect(&B, &c, 1), ENOTSUP);
    CHECK_EQ(lf_bound_call(&B, &c, 1, NULL, 0, NULL), EINVAL);
    CHECK_EQ(lft_stats(&B).in_flight, 0u);
    lf_bound_ctx_destroy(&c);
    lft_pair_close(&B, SV);
}

#ifdef LFT_HYBRID
static void *run_reactor(void *arg)
{
    (void)arg;
    return (void *)(intptr_t)lf_reactor_run(&R, NULL);
}

/* 7 */
static void unsolicited(void)
{
    pthread_t srv, rt;
    unsigned char reply[BODY];
    lf_bound_ctx c;
    open_pair(65536);
    junk = 0;
    srv = lft_server_start(server, NULL);
    CHECK(pthread_create(&rt, NULL, run_reactor, NULL) == 0);
    CHECK_EQ(lf_bound_ctx_init(&c, reply, sizeof reply, 0), 0);
    CHECK_EQ(call(&c, 'X', 9, 0, 60000), 0); /* its reply, then one for nobody */
    AWAIT(lft_stats(&B).failed == EPROTO, "the reply for nobody fails the connection");
    CHECK_EQ(call(&c, 'E', 9, 1, 60000), EPROTO);
    lf_bound_ctx_destroy(&c);
    CHECK_EQ(lf_reactor_stop(&R), 0);
    lft_join(rt);
    lft_server_end(srv, SV[0]);
    lft_pair_close(&B, SV);
}
#endif

/* 8 */
static void out_of_step(void)
{
    pthread_t srv;
    unsigned char reply[BODY];
    lf_bound_ctx c;
    with_read_body = 1;
    open_pair(65536);
    junk = 0;
    srv = lft_server_start(server, NULL);
    CHECK_EQ(lf_bound_ctx_init(&c, reply, sizeof reply, 0), 0);
    CHECK_EQ(call(&c, 'E', 10, 0, 60000), 0);
    CHECK_EQ(call(&c, 'P', 10, 1, 60000), EPROTO);
    CHECK_EQ(lft_stats(&B).failed, EPROTO);
    CHECK_EQ(call(&c, 'E', 10, 2, 60000), EPROTO);
    lf_bound_ctx_destroy(&c);
    lft_server_end(srv, SV[0]);
    lft_pair_close(&B, SV);
    with_read_body = 0;
}

/* 9 */
static void shutdown_race(int rounds)
{
    unsigned long long seed = 0x9e3779b97f4a7c15ull;
    for (int r = 0; r < rounds; r++) {
        pthread_t th[NT], srv;
        struct worker w[NT];
        open_pair(4096);
        junk = 0;
        srv = lft_server_start(server, NULL);
        for (int t = 0; t < NT; t++) {
            w[t].who = 40 + (unsigned)t;
            w[t].n = 1 << 30; /* until the shutdown */
            w[t].tag = 'E';
            w[t].ms = 60000;
            CHECK(pthread_create(&th[t], NULL, worker, &w[t]) == 0);
        }
        lft_sleep_ms((long)(lft_rand(&seed) % 4));
        CHECK_EQ(lf_bound_shutdown(&B), 0);
        for (int t = 0; t < NT; t++) {
            lft_join(th[t]);
            CHECK(w[t].rc == ECANCELED || w[t].rc == ECONNABORTED);
        }
        CHECK_EQ(lft_stats(&B).in_flight, 0u);
        CHECK_EQ(lft_stats(&B).queued, 0u);
        lft_server_end(srv, SV[0]);
        lft_pair_close(&B, SV);
    }
}

int main(void)
{
    int n = (int)lft_scaled(2000);
    lft_start("t_bound_inorder", 30);
    signal(SIGPIPE, SIG_IGN);
    storm(n);
    lft_progress();
    held_back(100);
    lft_progress();
    held_back(0);
    lft_progress();
    no_reply();
    queued();
    lft_progress();
    misuse();
    out_of_step();
    shutdown_race((int)lft_scaled(60));
    lft_progress();
#ifdef LFT_HYBRID
    unsolicited();
#endif
    printf("t_bound_inorder %s %s/%s: %d x %d calls matched in order with no ids; a "
           "timed-out and a cancelled call's replies dropped in their turn; requests with "
           "no reply; calls queued behind a full socket; a reply out of step failed the "
           "connection; %d rounds of a shutdown racing calls%s\n",
           MODE, lf_promote_name(), lf_sync_name(), NT, n, (int)lft_scaled(60),
#ifdef LFT_HYBRID
           "; a reply for nobody failed the connection (EPROTO)"
#else
           ""
#endif
    );
    return 0;
}
