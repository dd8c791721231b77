/* Hybrid lf_bound, nested calls: a call made from a handler that an outer call's wait
 * dispatched inherits the outer deadline when that is earlier (the server never
 * answers here, so only deadlines end the calls), keeps its own when that is earlier,
 * and lf_bound_depth() counts the hybrid joins on the thread's stack.
 *   A: outer deadline 300 ms, inner 60 s: the inner call ends with ETIMEDOUT long before
 *      its own deadline (it would have waited a minute before), then the outer too;
 *      depth is 1 in the handler, 0 outside.
 *   B: outer deadline 60 s, inner 100 ms: the inner ends by its own deadline and the
 *      outer goes on waiting, until another thread cancels it (lf_bound_cancel) once
 *      the inner call is done: ECANCELED, not ETIMEDOUT.
 * Elapsed times are compared with the 60 s deadline only (a margin of minutes), never
 * with the short one: the test asserts which deadline ended a wait, not how fast. */
#define LF_BOUND_REACTOR 1
#include "../lf_bound.h"
#include "lf_frames.h"

#include <sys/eventfd.h>
#include <sys/socket.h>

static lf_reactor r;
static lf_bound b;
static long long inner_ms; /* the handler's inner deadline */
static LFT_ATOMIC(int) inner_rc = -1, inner_depth = -1, inner_done;
static LFT_ATOMIC(long long) inner_waited_ms = -1;

static int on_ev(lf_handler *h, int fd, uint32_t ev)
{
    uint64_t x;
    lf_bound_ctx c;
    char buf[64];
    unsigned char req[12] = {2};
    struct timespec dl;
    double t0;
    (void)h;
    (void)ev;
    if (read(fd, &x, 8) != 8)
        return LF_KEEP;
    lft_store(&inner_depth, lf_bound_depth());
    CHECK_EQ(lf_bound_ctx_init(&c, buf, sizeof buf, 0), 0);
    CHECK_EQ(lf_deadline_in(&dl, inner_ms * 1000000LL), 0);
    t0 = lft_now();
    lft_store(&inner_rc, lf_bound_call(&b, &c, 2, req, sizeof req, &dl));
    lft_store(&inner_waited_ms, (long long)((lft_now() - t0) * 1000));
    CHECK_EQ(lf_bound_depth(), 1); /* back in the outer join's handler */
    lf_bound_ctx_destroy(&c);
    lft_store(&inner_done, 1);
    return LF_KEEP;
}

/* reads requests and never answers */
static void *server(void *a)
{
    char buf[256];
    int fd = *(int *)a;
    while (read(fd, buf, sizeof buf) > 0)
        lft_progress();
    return NULL;
}

static lf_bound_ctx outer;

static void *canceller(void *a)
{
    (void)a;
    AWAIT(lft_load(&inner_done), "the inner call to end");
    lft_sleep_ms(50);
    CHECK_EQ(lf_bound_cancel(&b, &outer), 0);
    return NULL;
}

static lf_handler handlers[2]; /* closed by lf_reactor_destroy (they outlive run) */

static void run(lf_handler *hp, const char *part, long long outer_ms, long long in_ms,
                int expect_outer)
{
    int efd;
    uint64_t one = 1;
    char buf[64];
    unsigned char req[12] = {1};
    struct timespec dl;
    pthread_t ct;
    double t0, waited;

    inner_ms = in_ms;
    lft_store(&inner_rc, -1);
    lft_store(&inner_depth, -1);
    lft_store(&inner_done, 0);
    CHECK((efd = eventfd(0, EFD_NONBLOCK)) >= 0);
    lf_handler_init(hp, on_ev, NULL);
    CHECK_EQ(lf_reactor_register(&r, hp, efd, LF_EV_READ), 0);
    CHECK(write(efd, &one, 8) == 8); /* ready: the outer join's first turn runs it */
    CHECK_EQ(lf_bound_depth(), 0);
    CHECK_EQ(lf_bound_ctx_init(&outer, buf, sizeof buf, 0), 0);
    CHECK_EQ(lf_deadline_in(&dl, outer_ms * 1000000LL), 0);
    if (expect_outer == ECANCELED)
        CHECK(pthread_create(&ct, NULL, canceller, NULL) == 0);
    t0 = lft_now();
    CHECK_EQ(lf_bound_call(&b, &outer, 1, req, sizeof req, &dl), expect_outer);
    waited = lft_now() - t0;
    if (expect_outer == ECANCELED)
        CHECK(pthread_join(ct, NULL) == 0);
    CHECK_EQ(lf_bound_depth(), 0);
    CHECK_EQ(lft_load(&inner_depth), 1);
    CHECK_EQ(lft_load(&inner_rc), ETIMEDOUT);
    CHECK(lft_load(&inner_waited_ms) < 30000); /* not the 60 s one (A: inherited) */
    CHECK(waited < 30.0);
    lf_bound_ctx_destroy(&outer);
    printf("t_reactor_bound_deadline %s %s: inner ETIMEDOUT after %lld ms at depth 1, "
           "outer %s after %.0f ms\n",
           lf_reactor_backend_name(), part, lft_load(&inner_waited_ms), expect_outer == ETIMEDOUT ? "ETIMEDOUT" : "ECANCELED",
           waited * 1000);
}

int main(void)
{
    int sv[2];
    struct lf_bound_hooks k;
    pthread_t st;

    lft_start("t_reactor_bound_deadline", 60);
    lft_pair(sv, 0);
    memset(&k, 0, sizeof k);
    k.header_len = 12;
    k.parse_header = lft_parse_short;
    lft_hybrid_open(&b, &r, sv[0], &k);
    CHECK(pthread_create(&st, NULL, server, &sv[1]) == 0);

    run(&handlers[0], "A (outer 300 ms, inner 60 s)", 300, 60000, ETIMEDOUT);
    run(&handlers[1], "B (outer 60 s, inner 100 ms)", 60000, 100, ECANCELED);

    shutdown(sv[0], SHUT_RDWR);
    CHECK(pthread_join(st, NULL) == 0);
    CHECK_EQ(lf_reactor_stop(&r), 0);
    lft_hybrid_close(&b, &r);
    close(sv[0]);
    close(sv[1]);
    printf("t_reactor_bound_deadline: ok\n");
    return 0;
}
