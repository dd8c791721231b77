/* LF_EV_EDGE: a handle registered edge-triggered (kept armed, no re-arm per event)
 * keeps every promise a one-shot handle makes.
 *   A (threads, churn of events; lft_stream.h): 3 threads run the reactor (on epoll
 *     also with LF_REACTOR_CONCURRENT); writers send numbered records in bursts to 16
 *     connections. Each handler drains its socket
 *     (reads until EAGAIN, in small pieces, records split across reads) and checks
 *     that records come exactly once and in order; a flag shows that no two threads
 *     are ever inside one handler. Now and then a handler deactivates itself and a
 *     third party reactivates it later: what arrived meanwhile must still come.
 *   B (the promise it rests on): epoll does not report a handle again whose handler
 *     left data behind until more arrives; poll and select ignore the flag and do.
 *   C (bad input): LF_EV_EDGE without READ or WRITE, or posted as an event: EINVAL.
 * Compiled once per promotion policy x backend. */
#include "../lf_reactor.h"
#include "lf_test.h"
#include "lft_stream.h"

#include <sys/socket.h>

static lf_reactor R;

/* A: the handler drains its socket in small pieces (records split across reads) */
static int on_edge(lf_handler *h, int fd, uint32_t events)
{
    struct lft_stream *s = lft_stream_enter(h);
    unsigned char buf[20];
    (void)events;
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EAGAIN)
            break;
        CHECK(n > 0);
        lft_stream_take(s, buf, n);
    }
    lft_stream_leave(s);
    return LF_KEEP;
}

static void part_a(unsigned flags)
{
    long long sent = lft_stream_run(&R, flags, on_edge, LF_EV_READ | LF_EV_EDGE);
    printf("t_reactor_edge %s%s: %lld records over %d edge-triggered connections, each once "
           "and in order\n", lf_reactor_backend_name(), flags ? " concurrent" : "", sent,
           LFT_STREAMS);
}

/* B: one byte read of two; is the handle reported again without new data? */
static int lazy_calls;

static int on_lazy(lf_handler *h, int fd, uint32_t events)
{
    char c;
    (void)h;
    (void)events;
    CHECK_EQ(read(fd, &c, 1), 1);
    lazy_calls++;
    return LF_KEEP;
}

static void part_b(void)
{
    lf_handler h;
    int sv[2];
    struct timespec dl;
    CHECK_EQ(lf_reactor_init(&R), 0);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    CHECK(fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK) == 0);
    lf_handler_init(&h, on_lazy, NULL);
    CHECK_EQ(lf_reactor_register(&R, &h, sv[0], LF_EV_READ | LF_EV_EDGE), 0);
    CHECK_EQ(write(sv[1], "ab", 2), 2);
    CHECK_EQ(lf_deadline_in(&dl, 2000000000LL), 0);
    CHECK_EQ(lf_reactor_handle_events(&R, &dl), 0);
    CHECK_EQ(lazy_calls, 1);
    CHECK_EQ(lf_deadline_in(&dl, 50000000LL), 0);
    int rc = lf_reactor_handle_events(&R, &dl);
#if LF_REACTOR_BACKEND == LF_REACTOR_EPOLL
    CHECK_EQ(rc, ETIMEDOUT); /* "b" is left, but no new edge: the promise was broken */
    CHECK_EQ(write(sv[1], "c", 1), 1);
    CHECK_EQ(lf_deadline_in(&dl, 2000000000LL), 0);
    CHECK_EQ(lf_reactor_handle_events(&R, &dl), 0); /* new data: a new edge */
#else
    CHECK_EQ(rc, 0); /* level-triggered: the flag is ignored */
#endif
    CHECK_EQ(lazy_calls, 2);
    CHECK_EQ(lf_reactor_destroy(&R), 0);
    close(sv[1]);
}

static void part_c(void)
{
    lf_handler h;
    int sv[2];
    CHECK_EQ(lf_reactor_init(&R), 0);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    lf_handler_init(&h, on_lazy, NULL);
    CHECK_EQ(lf_reactor_register(&R, &h, sv[0], LF_EV_EDGE), EINVAL);
    CHECK_EQ(lf_reactor_register(&R, &h, sv[0], LF_EV_READ | LF_EV_EDGE), 0);
    CHECK_EQ(lf_reactor_notify(&R, &h, LF_EV_EDGE), EINVAL);
    CHECK_EQ(lf_reactor_notify(&R, &h, LF_EV_NOTIFY | LF_EV_EDGE), EINVAL);
    CHECK_EQ(lf_reactor_destroy(&R), 0);
    close(sv[1]);
}

int main(void)
{
    lft_start("t_reactor_edge", 30);
    part_a(0);
#if LF_REACTOR_BACKEND == LF_REACTOR_EPOLL
    part_a(LF_REACTOR_CONCURRENT); /* every thread in epoll_wait: LF__BUSY still rules */
#endif
    part_b();
    part_c();
    lft_pass();
    return 0;
}
