/* Hybrid lf_bound, bounded nesting: a join serves the reactor only while the thread
 * is inside fewer than the bound's limit (lf_bound_set_nest_max) of hybrid waits; a
 * join past it reads the connection itself and serves nothing (NESTING in the doc).
 * The server answers every request with its id, so each reply is checked.
 *   A: one thread, limit 2, 40 request events pending. The server answers nothing
 *      until 3 requests are out at once (the outer call, a call from a handler at
 *      depth 1 and one at depth 2: only nesting can bring them), so every schedule
 *      reaches the limit; from then on it answers whatever is out, in random order.
 *      Checked: no handler runs deeper than 2, no more than 3 requests are out at any
 *      time (one thread holds at most limit + 1 calls), the deep join was counted,
 *      every reply is the request's own.
 *   B: the same with two lf_reactor_run threads beside the calling one: at most
 *      3 x 3 requests out, no handler deeper than 2, every event served once.
 *   C: limit 0: a call serves nothing; the handlers run only once the caller turns
 *      the reactor itself (lf_reactor_handle_events), their calls deep too.
 *   D: limit 0, a server that never answers: lf_reactor_stop ends a deep waiter's
 *      call (ECONNABORTED: its request went out); the bound refuses later calls.
 *   E: limit 0, never answered: a thread cancelled in its deep wait leaves the
 *      bound consistent (nothing in flight, stats.cancelled 1, destroy succeeds).
 *   F: limit 1, never answered: a deep join inherits the outer call's deadline
 *      (ETIMEDOUT for both, not the inner's 60 s).
 *   G: a server that reads nothing: a 4 MiB send with no deadline, from a handler
 *      that a call with a 300 ms deadline dispatched, waits for room only until that
 *      deadline (ETIMEDOUT; part of it went out, so the write side is broken: EPIPE).
 *   The deep joins counted are those that waited: a join that collects at once is
 *   not one. */
#define LF_BOUND_REACTOR 1
#include "../lf_bound.h"
#include "lf_frames.h"

#include <sys/eventfd.h>
#include <sys/socket.h>

#define NEV 40
#define NONE_OUT 0xffffffffu

/* ---------------------------------------------------------------- the server */

struct server {
    int fd;
    int answer;            /* 0: read and never answer */
    int deaf;              /* read nothing at all */
    LFT_ATOMIC(int) stop;  /* teardown: a deaf server ends */
    int hold;              /* answer nothing until this many are out at once (0: none) */
    LFT_ATOMIC(int) max_out;
    LFT_ATOMIC(int) requests;
    pthread_t t;
};

static void *serve(void *a)
{
    struct server *s = (struct server *)a;
    uint64_t out[64];
    int n = 0, held = s->hold > 0;
    unsigned long long seed = 0x1234567;
    if (s->deaf) { /* until the test tears down */
        while (!lft_load(&s->stop)) {
            lft_sleep_ms(5);
            lft_progress();
        }
        return NULL;
    }
    for (;;) {
        struct pollfd p;
        p.fd = s->fd;
        p.events = POLLIN;
        p.revents = 0;
        /* answer when something is out and nothing more comes for 1 ms (or hold) */
        int ready = poll(&p, 1, n > 0 && !held ? 1 : 100);
        lft_progress();
        if (ready > 0) {
            unsigned char h[HDR];
            uint32_t m, l;
            uint64_t id;
            if (!lft_read_all(s->fd, h, HDR))
                return NULL;
            memcpy(&m, h, 4);
            memcpy(&l, h + 4, 4);
            memcpy(&id, h + 8, 8);
            CHECK_EQ(m, MAGIC);
            CHECK_EQ(l, 0);
            CHECK(n < 64);
            out[n++] = id;
            lft_add(&s->requests, 1);
            if (n > lft_load(&s->max_out))
                lft_store(&s->max_out, n);
            if (held && n >= s->hold)
                held = 0;
            continue;
        }
        if (!s->answer || n == 0 || held)
            continue;
        {
            int i = (int)(lft_rand(&seed) % (unsigned)n);
            unsigned char h[HDR + 8];
            uint64_t body = out[i] ^ 0x5a5a5a5a5a5a5a5aull;
            lft_put_header(h, MAGIC, 8, out[i]);
            memcpy(h + HDR, &body, 8);
            out[i] = out[--n];
            lft_write_all(s->fd, h, sizeof h);
        }
    }
}

/* ---------------------------------------------------------------- the client side */

static lf_reactor r;
static lf_bound b;
static int sv[2];
static struct server srv;
static LFT_ATOMIC(unsigned) next_id;
static LFT_ATOMIC(int) served, max_depth, handler_fail;
static LFT_ATOMIC(long long) inner_ms = -1; /* F: the handler's call's deadline */
static LFT_ATOMIC(int) inner_rc = -1;
static LFT_ATOMIC(int) inner_send; /* G: the handler sends 4 MiB instead of calling */

/* one call, its reply checked: 0 or the error */
static int call(const struct timespec *dl)
{
    lf_bound_ctx c;
    uint64_t body = 0, id = lft_add(&next_id, 1);
    unsigned char req[HDR];
    int rc;
    lft_put_header(req, MAGIC, 0, id);
    CHECK_EQ(lf_bound_ctx_init(&c, &body, sizeof body, 0), 0);
    rc = lf_bound_call(&b, &c, id, req, sizeof req, dl);
    if (rc == 0) {
        CHECK_EQ(c.len, 8);
        CHECK_EQ(body, id ^ 0x5a5a5a5a5a5a5a5aull);
    }
    lf_bound_ctx_destroy(&c);
    return rc;
}

static int on_request(lf_handler *h, int fd, uint32_t ev)
{
    uint64_t x;
    int d = lf_bound_depth(), m;
    (void)h;
    (void)ev;
    if (read(fd, &x, 8) != 8)
        return LF_KEEP;
    while (d > (m = lft_load(&max_depth)) && !atomic_compare_exchange_weak(&max_depth, &m, d))
        ;
    if (lft_load(&inner_send)) {
        size_t big = 4u << 20;
        unsigned char *req = (unsigned char *)calloc(1, big);
        CHECK(req != NULL);
        lft_put_header(req, MAGIC, (uint32_t)(big - HDR), 7);
        lft_store(&inner_rc, lf_bound_send(&b, req, big));
        free(req);
    } else if (lft_load(&inner_ms) >= 0) {
        struct timespec dl;
        CHECK_EQ(lf_deadline_in(&dl, lft_load(&inner_ms) * 1000000LL), 0);
        lft_store(&inner_rc, call(&dl));
    } else if (call(NULL) != 0) {
        lft_add(&handler_fail, 1);
    }
    lft_add(&served, 1);
    return LF_KEEP;
}

static void setup(int levels, int answer, int hold, int deaf)
{
    struct lf_bound_hooks k;
    lft_pair(sv, 0);
    CHECK_EQ(lf_reactor_init(&r), 0);
    lft_hooks(&k);
    CHECK_EQ(lf_bound_init(&b, sv[0], &k), 0);
    CHECK_EQ(lf_bound_set_nest_max(&b, levels), 0);
    CHECK_EQ(lf_bound_attach(&b, &r), 0);
    memset(&srv, 0, sizeof srv);
    srv.fd = sv[1];
    srv.answer = answer;
    srv.hold = hold;
    srv.deaf = deaf;
    lft_store(&served, 0);
    lft_store(&max_depth, 0);
    lft_store(&handler_fail, 0);
    CHECK(pthread_create(&srv.t, NULL, serve, &srv) == 0);
}

static void teardown(void)
{
    lft_store(&srv.stop, 1);
    shutdown(sv[0], SHUT_RDWR);
    lft_join(srv.t);
    (void)lf_reactor_stop(&r);
    CHECK_EQ(lf_bound_destroy(&b), 0);
    CHECK_EQ(lf_reactor_destroy(&r), 0); /* closes the request eventfds */
    close(sv[0]);
    close(sv[1]);
}

static lf_handler hs[NEV];

/* NEV request events, each signalled once */
static void requests(void)
{
    for (int i = 0; i < NEV; i++) {
        int efd;
        uint64_t one = 1;
        CHECK((efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) >= 0);
        lf_handler_init(&hs[i], on_request, NULL);
        CHECK_EQ(lf_reactor_register(&r, &hs[i], efd, LF_EV_READ), 0);
        CHECK(write(efd, &one, 8) == 8);
    }
}

static void *runner(void *a)
{
    (void)a;
    int rc = lf_reactor_run(&r, NULL);
    CHECK(rc == 0 || rc == ECANCELED); /* ended by lf_reactor_stop */
    return NULL;
}

static void part_ab(const char *part, int threads)
{
    struct lf_bound_stats st;
    pthread_t t[2];
    setup(2, 1, 3, 0);
    requests();
    for (int i = 0; i < threads; i++)
        CHECK(pthread_create(&t[i], NULL, runner, NULL) == 0);
    while (lft_load(&served) < NEV) {
        CHECK_EQ(call(NULL), 0); /* the outer call: serves while it waits */
        CHECK_EQ(lf_bound_depth(), 0);
        lft_progress();
    }
    CHECK_EQ(lft_load(&handler_fail), 0);
    CHECK(lft_load(&max_depth) <= 2);
    CHECK(lft_load(&srv.max_out) <= 3 * (threads + 1));
    CHECK(lft_load(&srv.max_out) >= 3); /* the hold was released: the limit was reached */
    CHECK_EQ(lf_bound_stats(&b, &st), 0);
    CHECK(st.deep >= 1);
    CHECK_EQ(st.in_flight, 0);
    CHECK_EQ(lft_load(&served), NEV);
    if (threads == 0)
        CHECK_EQ(lft_load(&max_depth), 2);
    CHECK_EQ(lf_reactor_stop(&r), 0);
    for (int i = 0; i < threads; i++)
        lft_join(t[i]);
    printf("t_reactor_bound_nest %s %s: %d events, deepest handler %d, most out %d, "
           "%llu deep joins, %llu replies\n",
           lf_reactor_backend_name(), part, NEV, lft_load(&max_depth), lft_load(&srv.max_out),
           st.deep, st.replies);
    teardown();
}

static void part_c(void)
{
    struct lf_bound_stats st;
    setup(0, 1, 0, 0);
    requests();
    CHECK_EQ(call(NULL), 0);
    CHECK_EQ(lft_load(&served), 0); /* the call served nothing */
    while (lft_load(&served) < NEV) {
        int rc = lf_reactor_handle_events(&r, NULL);
        CHECK(rc == 0 || rc == ETIMEDOUT);
    }
    CHECK_EQ(lft_load(&handler_fail), 0);
    CHECK_EQ(lft_load(&max_depth), 0);
    CHECK_EQ(lft_load(&srv.max_out), 1);
    CHECK_EQ(lf_bound_stats(&b, &st), 0);
    CHECK_EQ(st.deep, NEV + 1);
    printf("t_reactor_bound_nest %s C (limit 0): the call served none of %d events; "
           "%llu deep joins\n", lf_reactor_backend_name(), NEV, st.deep);
    teardown();
}

static LFT_ATOMIC(int) waiter_rc = -1;

static void *waiter(void *a)
{
    (void)a;
    lft_store(&waiter_rc, call(NULL));
    return NULL;
}

static void await_deep_waiter(void)
{
    struct lf_bound_stats st;
    AWAIT(lft_load(&srv.requests) == 1, "the request on the wire");
    AWAIT(lf_bound_stats(&b, &st) == 0 && st.deep == 1, "the deep join");
}

static void part_d(void)
{
    pthread_t t;
    setup(0, 0, 0, 0);
    CHECK(pthread_create(&t, NULL, waiter, NULL) == 0);
    await_deep_waiter();
    CHECK_EQ(lf_reactor_stop(&r), 0);
    lft_join(t);
    CHECK_EQ(lft_load(&waiter_rc), ECONNABORTED);
    CHECK_EQ(call(NULL), ECANCELED); /* finished: nothing is sent */
    CHECK_EQ(lft_load(&srv.requests), 1);
    printf("t_reactor_bound_nest %s D: a deep waiter saw the stop (ECONNABORTED)\n",
           lf_reactor_backend_name());
    teardown();
}

static void part_e(void)
{
    pthread_t t;
    struct lf_bound_stats st;
    setup(0, 0, 0, 0);
    CHECK(pthread_create(&t, NULL, waiter, NULL) == 0);
    await_deep_waiter();
    lft_cancel_join(t);
    CHECK_EQ(lf_bound_stats(&b, &st), 0);
    CHECK_EQ(st.in_flight, 0);
    CHECK_EQ(st.cancelled, 1);
    CHECK_EQ(lf_bound_depth(), 0);
    printf("t_reactor_bound_nest %s E: a deep waiter cancelled, the bound consistent\n",
           lf_reactor_backend_name());
    teardown(); /* destroy succeeds: nothing in flight */
}

static void part_f(void)
{
    struct timespec dl;
    int efd;
    uint64_t one = 1;
    double t0;
    setup(1, 0, 0, 0);
    CHECK((efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) >= 0);
    lf_handler_init(&hs[0], on_request, NULL);
    CHECK_EQ(lf_reactor_register(&r, &hs[0], efd, LF_EV_READ), 0);
    CHECK(write(efd, &one, 8) == 8);
    lft_store(&inner_ms, 60000);
    CHECK_EQ(lf_deadline_in(&dl, 300 * 1000000LL), 0);
    t0 = lft_now();
    CHECK_EQ(call(&dl), ETIMEDOUT);
    CHECK_EQ(lft_load(&inner_rc), ETIMEDOUT);
    CHECK(lft_now() - t0 < 30.0); /* not the inner 60 s */
    CHECK_EQ(lft_load(&max_depth), 1);
    lft_store(&inner_ms, -1);
    printf("t_reactor_bound_nest %s F: a deep join took the outer deadline\n",
           lf_reactor_backend_name());
    teardown();
}

static void part_g(void)
{
    struct timespec dl;
    struct lf_bound_stats st;
    int efd;
    uint64_t one = 1;
    setup(1, 0, 0, 1);
    CHECK((efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) >= 0);
    lf_handler_init(&hs[0], on_request, NULL);
    CHECK_EQ(lf_reactor_register(&r, &hs[0], efd, LF_EV_READ), 0);
    CHECK(write(efd, &one, 8) == 8);
    lft_store(&inner_send, 1);
    CHECK_EQ(lf_deadline_in(&dl, 300 * 1000000LL), 0);
    CHECK_EQ(call(&dl), ETIMEDOUT);
    CHECK_EQ(lft_load(&inner_rc), ETIMEDOUT);
    CHECK_EQ(lf_bound_stats(&b, &st), 0);
    CHECK_EQ(st.send_failed, EPIPE); /* cut part-way: nothing may follow */
    CHECK_EQ(call(NULL), EPIPE);
    CHECK_EQ(lf_bound_stats(&b, &st), 0);
    CHECK_EQ(st.deep, 0); /* neither join at the limit waited deep */
    lft_store(&inner_send, 0);
    printf("t_reactor_bound_nest %s G: a nested send took the outer deadline\n",
           lf_reactor_backend_name());
    teardown();
}

int main(void)
{
    lft_start("t_reactor_bound_nest", 60);
    part_ab("A (one thread, limit 2)", 0);
    part_ab("B (two lf_reactor_run threads beside, limit 2)", 2);
    part_c();
    part_d();
    part_e();
    part_f();
    part_g();
    lft_pass();
    return 0;
}
