/* lf_bound's write queue (PIPELINING in lf_bound.h): requests of many threads go out
 * in few writes, whole, in queue order, and a failure or a deadline in the middle
 * costs only what the contract says. Built with LF_BOUND_WRITE_ROUNDS 1, so a writer
 * whose own request is out hands the queue on after one more write, and the hand-on
 * (the queue orphaned, a queued caller writing on) runs often in part 4.
 * (t_reactor_bound_pipeline.c runs the same file in hybrid mode.)
 *
 * 1. batched: the socket is full (filled before the bound takes it, with bytes the
 *    peer skips); 8 threads call: one writes and waits for room, 7 queue behind it
 *    (stats.queued says 8). The peer then drains: every request arrives whole, each
 *    reply is right, and fewer writes than requests carried them.
 * 2. taken back: the socket full, a writer waits for room; a call queued behind it
 *    with a 100 ms deadline returns ETIMEDOUT and its request never reaches the peer;
 *    the write side is not broken, the writer's call and a later one complete.
 * 3. cut: a 1 MiB request is cut part-way by its deadline; the calls queued behind it
 *    (60 s deadlines) fail with EPIPE at once, not at their deadlines: nothing may
 *    follow a cut request. The peer got a prefix of the cut request and nothing
 *    else; one send failure is counted; later calls say EPIPE.
 * 4. storm: 8 threads, many calls each, against an echo server: every reply right
 *    (exactly once), as many replies as calls, never more writes than requests.
 * 5. not held: the writer's own request is out and a 1 MiB request of another call
 *    is cut part-way by a full socket; the peer answers the writer and then reads no
 *    more until the writer's call returned. It returns (0): the cut request is handed
 *    on to its own caller, who finishes it once the peer reads again (it was held
 *    until the peer read the rest: a dead-lock here).
 * 6. hybrid: requests encoded in a thread-local buffer that a handler reuses for a
 *    nested call: a call's request is out before its join runs a handler, so every
 *    request reaches the peer as it was encoded (the queued one was overwritten). */
#ifndef LF_BOUND_WRITE_ROUNDS
#define LF_BOUND_WRITE_ROUNDS 1
#endif
#include "../lf_bound.h"
#include "lf_frames.h"

#include <signal.h>
#include <sys/socket.h>

#define BODY 32
#define NT 8

static lf_bound B;
static int SV[2];
static size_t junk;                      /* bytes the peer skips first */
static LFT_ATOMIC(int) peer_errors;      /* frames that arrived damaged */
static LFT_ATOMIC(int) peer_frames;      /* whole requests the peer read */
static LFT_ATOMIC(unsigned long long) peer_seen_mask; /* ids 0..63 the peer read */

static void fill_body(unsigned char *p, uint64_t id)
{
    for (int i = 0; i < BODY; i++)
        p[i] = (unsigned char)(id * 7 + (uint64_t)i);
}

/* a socket pair whose client end holds at most about `sndbuf` bytes in flight */
static void open_pair(int sndbuf)
{
    struct lf_bound_hooks h;
    lft_hooks(&h);
    lft_pair_open(&B, SV, sndbuf, &h);
}

/* One reply: id's body (fill_body's, which every request of id carries). */
static void echo_one(uint64_t id)
{
    unsigned char h[HDR], body[BODY];
    fill_body(body, id);
    lft_put_header(h, MAGIC, BODY, id);
    lft_write_all(SV[1], h, HDR);
    lft_write_all(SV[1], body, BODY);
}

/* The peer: skips the junk, then reads requests and echoes each body under its id,
 * until EOF. Checks every body against its id. With an argument (a uint64_t id) it
 * holds every reply back until it has read that id's request, then sends them all in
 * the order it read them. */
static void *echo_server(void *arg)
{
    unsigned char h[HDR], body[BODY];
    uint64_t held[8];
    int nheld = 0, holding = arg != NULL;
    uint64_t release = arg != NULL ? *(const uint64_t *)arg : 0;
    if (!lft_skip(SV[1], junk))
        return NULL;
    for (;;) {
        uint64_t id;
        size_t len;
        unsigned char want[BODY];
        if (!lft_read_all(SV[1], h, HDR))
            return NULL;
        if (lft_parse(NULL, h, &id, &len) != 0 || len != BODY) {
            lft_add(&peer_errors, 1);
            return NULL;
        }
        CHECK(lft_read_all(SV[1], body, BODY));
        fill_body(want, id);
        if (memcmp(body, want, BODY) != 0)
            lft_add(&peer_errors, 1);
        lft_add(&peer_frames, 1);
        if (id < 64)
            atomic_fetch_or(&peer_seen_mask, 1ull << id);
        if (holding && id != release && nheld < 8) {
            held[nheld++] = id;
            continue;
        }
        for (int i = 0; holding && i < nheld; i++)
            echo_one(held[i]);
        holding = 0;
        echo_one(id);
    }
}

struct call {
    uint64_t id;
    double secs; /* deadline from the start of the call */
    int n;       /* calls to make (ids id, id + NT, ...) */
    int rc;      /* the first result that was not 0, or 0 */
    double took; /* of the last call */
};

static void *caller(void *arg)
{
    struct call *k = (struct call *)arg;
    unsigned char req[HDR + BODY], reply[BODY];
    lf_bound_ctx c;
    CHECK_EQ(lf_bound_ctx_init(&c, reply, sizeof reply, 0), 0);
    k->rc = 0;
    for (int i = 0; i < k->n; i++) {
        uint64_t id = k->id + (uint64_t)i * NT;
        struct timespec dl;
        double t0 = lft_now();
        int rc;
        lft_put_header(req, MAGIC, BODY, id);
        fill_body(req + HDR, id);
        clock_gettime(CLOCK_MONOTONIC, &dl);
        dl.tv_sec += (time_t)k->secs;
        dl.tv_nsec += (long)((k->secs - (double)(time_t)k->secs) * 1e9);
        if (dl.tv_nsec >= 1000000000L) {
            dl.tv_sec++;
            dl.tv_nsec -= 1000000000L;
        }
        rc = lf_bound_call(&B, &c, id, req, sizeof req, &dl);
        k->took = lft_now() - t0;
        if (rc == 0) {
            CHECK_EQ(c.len, (size_t)BODY);
            CHECK(memcmp(reply, req + HDR, BODY) == 0); /* its own reply, whole */
        } else if (k->rc == 0) {
            k->rc = rc;
            break;
        }
        if (i % 64 == 0)
            lft_progress();
    }
    lf_bound_ctx_destroy(&c);
    return NULL;
}

static void reset_peer(void)
{
    lft_store(&peer_errors, 0);
    lft_store(&peer_frames, 0);
    lft_store(&peer_seen_mask, 0ull);
}

/* 1 */
static unsigned long long batched(void)
{
    pthread_t th[NT], srv;
    struct call k[NT];
    struct lf_bound_stats st;
    open_pair(16384);
    junk = lft_fill_socket(SV[0]);
    reset_peer();
    for (int t = 0; t < NT; t++) {
        k[t].id = (uint64_t)t + 1;
        k[t].secs = 60;
        k[t].n = 1;
        CHECK(pthread_create(&th[t], NULL, caller, &k[t]) == 0);
    }
    AWAIT(lft_stats(&B).queued == NT, "every request queued behind the full socket");
    CHECK_EQ(lft_stats(&B).writes, 0ull); /* nothing went out yet */
    srv = lft_server_start(echo_server, NULL);
    for (int t = 0; t < NT; t++) {
        lft_join(th[t]);
        CHECK_EQ(k[t].rc, 0);
    }
    st = lft_stats(&B);
    CHECK_EQ(st.replies, (unsigned long long)NT);
    CHECK(st.writes >= 1 && st.writes < NT); /* many requests per write */
    CHECK_EQ(st.queued, 0u);
    CHECK_EQ(st.send_failed, 0);
    lft_server_end(srv, SV[0]); /* the peer sees EOF */
    CHECK_EQ(lft_load(&peer_errors), 0);
    CHECK_EQ(lft_load(&peer_frames), NT);
    lft_pair_close(&B, SV);
    return st.writes;
}

/* 2 */
static void taken_back(void)
{
    pthread_t w, q, srv;
    struct call kw, kq;
    struct lf_bound_stats st;
    open_pair(16384);
    junk = lft_fill_socket(SV[0]);
    reset_peer();
    kw.id = 20;
    kw.secs = 60;
    kw.n = 1;
    CHECK(pthread_create(&w, NULL, caller, &kw) == 0);
    AWAIT(lft_stats(&B).queued == 1, "the writer's request queued");
    kq.id = 21;
    kq.secs = 0.1;
    kq.n = 1;
    CHECK(pthread_create(&q, NULL, caller, &kq) == 0);
    lft_join(q);
    CHECK_EQ(kq.rc, ETIMEDOUT);
    st = lft_stats(&B);
    CHECK_EQ(st.queued, 1u); /* the writer's, still waiting for room */
    CHECK_EQ(st.send_failed, 0);
    CHECK_EQ(st.in_flight, 1u);
    srv = lft_server_start(echo_server, NULL);
    lft_join(w);
    CHECK_EQ(kw.rc, 0);
    kq.id = 22; /* the stream is whole: the next call goes through */
    kq.secs = 60;
    caller(&kq);
    CHECK_EQ(kq.rc, 0);
    lft_server_end(srv, SV[0]);
    CHECK_EQ(lft_load(&peer_errors), 0);
    CHECK_EQ(lft_load(&peer_frames), 2);
    CHECK_EQ(lft_load(&peer_seen_mask), (1ull << 20) | (1ull << 22)); /* never 21 */
    lft_pair_close(&B, SV);
}

/* 3 */
#define BIG (1 << 20)
static unsigned char *big;
static LFT_ATOMIC(int) big_rc;

static void *big_caller(void *arg)
{
    lf_bound_ctx c;
    unsigned char reply[8];
    struct timespec dl;
    (void)arg;
    CHECK_EQ(lf_bound_ctx_init(&c, reply, sizeof reply, 0), 0);
    clock_gettime(CLOCK_MONOTONIC, &dl);
    dl.tv_nsec += 300 * 1000000L;
    if (dl.tv_nsec >= 1000000000L) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000L;
    }
    lft_store(&big_rc, lf_bound_call(&B, &c, 30, big, BIG, &dl));
    lf_bound_ctx_destroy(&c);
    return NULL;
}

static int cut(void)
{
    pthread_t h, q[4];
    struct call k[4];
    struct lf_bound_stats st;
    unsigned char buf[4096];
    size_t got = 0;
    unsigned queued_max = 0;
    big = (unsigned char *)malloc(BIG);
    CHECK(big != NULL);
    lft_put_header(big, MAGIC, BIG - HDR, 30);
    for (size_t i = HDR; i < BIG; i++)
        big[i] = (unsigned char)(i * 13);
    open_pair(16384);
    CHECK(pthread_create(&h, NULL, big_caller, NULL) == 0);
    AWAIT(lft_stats(&B).writes >= 1, "the big request part-way out");
    for (int t = 0; t < 4; t++) {
        k[t].id = 31 + (uint64_t)t;
        k[t].secs = 60;
        k[t].n = 1;
        CHECK(pthread_create(&q[t], NULL, caller, &k[t]) == 0);
    }
    for (int t = 0; t < 4; t++) { /* queued behind it, or refused after the cut */
        unsigned n = lft_stats(&B).queued;
        queued_max = n > queued_max ? n : queued_max;
        lft_join(q[t]);
        CHECK_EQ(k[t].rc, EPIPE);
        CHECK(k[t].took < 30); /* at the cut, not at their own deadlines */
    }
    lft_join(h);
    CHECK_EQ(lft_load(&big_rc), ETIMEDOUT);
    st = lft_stats(&B);
    CHECK_EQ(st.send_failed, EPIPE);
    CHECK_EQ(st.send_failures, 1ull);
    CHECK_EQ(st.queued, 0u);
    CHECK_EQ(st.in_flight, 0u);
    /* what the peer got: a prefix of the big request, and nothing after it */
    for (;;) {
        ssize_t n = recv(SV[1], buf, sizeof buf, MSG_DONTWAIT);
        if (n <= 0)
            break;
        CHECK(got + (size_t)n < BIG);
        CHECK(memcmp(buf, big + got, (size_t)n) == 0);
        got += (size_t)n;
    }
    CHECK(got > 0);
    k[0].id = 40; /* later calls: EPIPE at once */
    caller(&k[0]);
    CHECK_EQ(k[0].rc, EPIPE);
    lft_pair_close(&B, SV);
    free(big);
    return (int)queued_max;
}

/* 4 */
static double storm(unsigned long long *writes)
{
    pthread_t th[NT], srv;
    struct call k[NT];
    struct lf_bound_stats st;
    int n = (int)lft_scaled(3000);
    open_pair(65536);
    junk = 0;
    reset_peer();
    srv = lft_server_start(echo_server, NULL);
    for (int t = 0; t < NT; t++) {
        k[t].id = 100 + (uint64_t)t;
        k[t].secs = 60;
        k[t].n = n;
        CHECK(pthread_create(&th[t], NULL, caller, &k[t]) == 0);
    }
    for (int t = 0; t < NT; t++) {
        lft_join(th[t]);
        CHECK_EQ(k[t].rc, 0);
    }
    st = lft_stats(&B);
    CHECK_EQ(st.replies, (unsigned long long)n * NT);
    CHECK_EQ(st.stray, 0ull);
    CHECK(st.writes >= 1 && st.writes <= (unsigned long long)n * NT);
    CHECK_EQ(st.queued, 0u);
    lft_server_end(srv, SV[0]);
    CHECK_EQ(lft_load(&peer_errors), 0);
    CHECK_EQ(lft_load(&peer_frames), n * NT);
    lft_pair_close(&B, SV);
    *writes = st.writes;
    return (double)n * NT / (double)st.writes;
}

/* 5 */
static LFT_ATOMIC(int) writer_back;

static void *held_peer(void *arg)
{
    unsigned char skip[4096], h[HDR], body[BODY];
    uint64_t id;
    size_t len;
    (void)arg;
    CHECK(lft_skip(SV[1], junk));
    CHECK(lft_read_all(SV[1], h, HDR)); /* the writer's request, first in the queue */
    CHECK_EQ(lft_parse(NULL, h, &id, &len), 0);
    CHECK(id == 50 && len == BODY);
    CHECK(lft_read_all(SV[1], body, BODY));
    lft_write_all(SV[1], h, HDR);
    lft_write_all(SV[1], body, BODY);
    AWAIT(lft_load(&writer_back), "the writer's call to return while the peer reads nothing");
    CHECK(lft_read_all(SV[1], h, HDR)); /* now the big one, whole */
    CHECK_EQ(lft_parse(NULL, h, &id, &len), 0);
    CHECK(id == 51 && len == BIG - HDR);
    for (size_t got = 0; got < len;) {
        size_t n = len - got < sizeof skip ? len - got : sizeof skip;
        CHECK(lft_read_all(SV[1], skip, n));
        CHECK(memcmp(skip, big + HDR + got, n) == 0);
        got += n;
    }
    lft_put_header(h, MAGIC, 0, 51);
    lft_write_all(SV[1], h, HDR);
    return NULL;
}

static void *big51(void *arg)
{
    lf_bound_ctx c;
    unsigned char reply[8];
    (void)arg;
    CHECK_EQ(lf_bound_ctx_init(&c, reply, sizeof reply, 0), 0);
    lft_store(&big_rc, lf_bound_call(&B, &c, 51, big, BIG, NULL));
    lf_bound_ctx_destroy(&c);
    return NULL;
}

static void not_held(void)
{
    pthread_t w, bt, peer;
    struct call kw;
    big = (unsigned char *)malloc(BIG);
    CHECK(big != NULL);
    lft_put_header(big, MAGIC, BIG - HDR, 51);
    for (size_t i = HDR; i < BIG; i++)
        big[i] = (unsigned char)(i * 17);
    open_pair(16384);
    junk = lft_fill_socket(SV[0]);
    lft_store(&writer_back, 0);
    kw.id = 50;
    kw.secs = 60; /* far away: the writer must not need it to get back */
    kw.n = 1;
    CHECK(pthread_create(&w, NULL, caller, &kw) == 0);
    AWAIT(lft_stats(&B).queued == 1, "the writer waiting for room");
    CHECK(pthread_create(&bt, NULL, big51, NULL) == 0);
    AWAIT(lft_stats(&B).queued == 2, "the big request queued behind it");
    peer = lft_server_start(held_peer, NULL);
    lft_join(w);
    CHECK_EQ(kw.rc, 0);
    lft_store(&writer_back, 1);
    lft_join(bt);
    CHECK_EQ(lft_load(&big_rc), 0);
    lft_join(peer);
    CHECK_EQ(lft_stats(&B).send_failures, 0ull);
    CHECK_EQ(lft_stats(&B).queued, 0u);
    lft_pair_close(&B, SV);
    free(big);
}

#ifdef LFT_HYBRID
/* 6 */
static _Thread_local unsigned char scratch[HDR + BODY]; /* an encoder's buffer */
static int pipefd[2];

static int scratch_call(uint64_t id)
{
    unsigned char reply[BODY], want[BODY];
    lf_bound_ctx c;
    int rc;
    CHECK_EQ(lf_bound_ctx_init(&c, reply, sizeof reply, 0), 0);
    lft_put_header(scratch, MAGIC, BODY, id);
    fill_body(scratch + HDR, id);
    rc = lf_bound_call(&B, &c, id, scratch, sizeof scratch, NULL);
    fill_body(want, id); /* (scratch may hold a nested call's request by now) */
    if (rc == 0)
        CHECK(c.len == BODY && memcmp(reply, want, BODY) == 0);
    lf_bound_ctx_destroy(&c);
    return rc;
}

static LFT_ATOMIC(int) nested_rc = -1;
static LFT_ATOMIC(int) handler_in; /* on_pipe has begun its call */

static int on_pipe(lf_handler *h, int fd, uint32_t events)
{
    char ch;
    (void)h;
    (void)events;
    if (read(fd, &ch, 1) == 1) {
        lft_store(&handler_in, 1);
        lft_store(&nested_rc, scratch_call(62)); /* the same thread-local buffer */
    }
    return LF_KEEP;
}

static void on_pipe_close(lf_handler *h)
{
    (void)h;
}

static void *scratch_caller(void *arg)
{
    return (void *)(intptr_t)scratch_call((uint64_t)(intptr_t)arg);
}

static void reused_buffer(void)
{
    pthread_t w, t, srv;
    lf_handler ph;
    static uint64_t release = 62; /* the handler's call: the peer holds the rest till then */
    open_pair(16384);
    junk = lft_fill_socket(SV[0]);
    reset_peer();
    CHECK(pipe(pipefd) == 0);
    lf_handler_init(&ph, on_pipe, on_pipe_close);
    CHECK_EQ(lf_reactor_register(&R, &ph, pipefd[0], LF_EV_READ | LF_EV_KEEPFD), 0);
    CHECK(pthread_create(&w, NULL, scratch_caller, (void *)(intptr_t)60) == 0);
    AWAIT(lft_stats(&B).queued == 1, "the writer waiting for room");
    CHECK(write(pipefd[1], "x", 1) == 1); /* a handler that calls, for whoever turns */
    CHECK(pthread_create(&t, NULL, scratch_caller, (void *)(intptr_t)61) == 0);
    AWAIT(lft_stats(&B).queued == 2, "the second call queued");
    /* The peer answers 60 and 61 only once it has read 62, the handler's request: so
     * the calls cannot end before a turn of theirs ran the handler (with both replies
     * in at once, a turn could hand both out and leave the pipe's event, harvested
     * beside them, to a turn nobody takes). A queued call does not turn the reactor:
     * the handler runs once 60 and 61 are out and their callers wait for replies. */
    srv = lft_server_start(echo_server, (void *)&release);
    CHECK_EQ((int)(intptr_t)lft_join(w), 0);
    CHECK_EQ((int)(intptr_t)lft_join(t), 0);
    CHECK(lft_load(&handler_in)); /* in a waiting caller's turn: nested, so done by now */
    CHECK_EQ(lft_load(&nested_rc), 0);
    CHECK_EQ(lft_load(&peer_errors), 0); /* every request as it was encoded */
    CHECK_EQ(lft_load(&peer_seen_mask), (1ull << 60) | (1ull << 61) | (1ull << 62));
    CHECK_EQ(lf_reactor_remove(&R, &ph), 0);
    lft_server_end(srv, SV[0]);
    lft_pair_close(&B, SV);
    close(pipefd[0]);
    close(pipefd[1]);
}
#endif

int main(void)
{
    unsigned long long w1, w4;
    int queued;
    double per_write;
    lft_start("t_bound_pipeline", 30);
    signal(SIGPIPE, SIG_IGN);
    w1 = batched();
    lft_progress();
    taken_back();
    lft_progress();
    queued = cut();
    lft_progress();
    per_write = storm(&w4);
    lft_progress();
    not_held();
#ifdef LFT_HYBRID
    reused_buffer();
#endif
    printf("t_bound_pipeline %s %s/%s: %d requests queued behind a full socket went out in "
           "%llu write(s); a queued call's deadline took it back unsent; a cut request failed "
           "the %d queued behind it with EPIPE at once; storm: %.2f requests per write "
           "(%llu writes); a writer not held by a request cut part-way%s\n",
           MODE, lf_promote_name(), lf_sync_name(), NT, w1, queued, per_write, w4,
#ifdef LFT_HYBRID
           "; a request in a buffer a handler reuses went out as encoded"
#else
           ""
#endif
    );
    return 0;
}
