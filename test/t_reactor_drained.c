/* LF_DRAINED: a handler registered the default way (one-shot) that says it found its
 * handle empty spares the re-arm, and keeps every promise LF_KEEP makes.
 *   A (threads, churn; lft_stream.h): 3 threads run the reactor (on epoll also with
 *     LF_REACTOR_CONCURRENT); writers send numbered records in bursts to 16
 *     connections. Each handler reads once into a small buffer (records split across
 *     reads) and returns LF_DRAINED when the read came up short, LF_KEEP when it
 *     filled the buffer; records must come exactly once and in order, and no two
 *     threads are ever inside one handler. Now and then a handler deactivates itself
 *     and a third party reactivates it later: what arrived meanwhile must still come.
 *   B (the end of file that comes with the last data): on a handle that is edge-
 *     triggered after LF_DRAINED, data and the peer's shutdown arrive as one report;
 *     the handler's short read takes the data but not the end of file, and returns
 *     LF_DRAINED. The end of file must still be reported.
 *   C (what it costs and what it promises): epoll's re-arm system calls (stats.rearmed)
 *     are one per LF_KEEP and none per LF_DRAINED once the handle is edge-triggered;
 *     LF_KEEP after a partial read is called again for the rest without new data;
 *     after LF_DRAINED that left data behind (a broken promise) epoll reports nothing
 *     until more arrives, while poll and select, level-triggered, ignore the word.
 *   D (what a dispatch queued behind LF_DRAINED leaves): on an edge-triggered handle a
 *     report comes while the handler is busy (deferred to it), the handler says
 *     LF_DRAINED (true of its own read), and the queued dispatch reads a full buffer
 *     and answers LF_KEEP or LF_RESUMED: the rest must still come, with no new data.
 *     Over a UNIX socket pair and over TCP, also with LF_REACTOR_CONCURRENT.
 *   E (where LF_DRAINED counts as LF_KEEP): with LF_EV_WRITE in the interest a
 *     writable socket is still reported on every turn; an interest changed inside an
 *     edge-triggered LF_DRAINED dispatch reaches the kernel; a pipe's hang-up that
 *     came with its last data keeps reporting LF_EV_CLOSE until the handler goes.
 * Compiled once per promotion policy x backend. */
#include "../lf_reactor.h"
#define LFT_TCP /* lft_tcp_pair */
#include "lf_test.h"
#include "lft_stream.h"

#include <sys/socket.h>

static lf_reactor R;

/* A: one read into a small buffer (records split across reads, and full reads) */
static int on_conn(lf_handler *h, int fd, uint32_t events)
{
    struct lft_stream *s = lft_stream_enter(h);
    unsigned char buf[20];
    ssize_t n;
    (void)events;
    n = read(fd, buf, sizeof buf);
    CHECK(n > 0 || (n < 0 && errno == EAGAIN)); /* readiness is a hint */
    lft_stream_take(s, buf, n);
    lft_stream_leave(s);
    return n == (ssize_t)sizeof buf ? LF_KEEP : LF_DRAINED;
}

static int nonblocking_pair(int sv[2])
{
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        return -1;
    return fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK);
}

static void part_a(unsigned flags)
{
    long long sent = lft_stream_run(&R, flags, on_conn, LF_EV_READ);
    printf("t_reactor_drained %s%s: %lld records over %d connections, each once and in "
           "order\n", lf_reactor_backend_name(), flags ? " concurrent" : "", sent, LFT_STREAMS);
}

/* B and C: one handler turned by hand (lf_reactor_handle_events), reading up to
 * `take` bytes per dispatch and answering `answer`. */
static struct {
    int take, answer, calls, eof;
    char got[64];
    int have;
} one;

static int on_one(lf_handler *h, int fd, uint32_t events)
{
    char buf[64];
    ssize_t n;
    (void)h;
    (void)events;
    one.calls++;
    n = read(fd, buf, (size_t)one.take);
    if (n == 0)
        one.eof = 1;
    for (ssize_t i = 0; i < n && one.have < (int)sizeof one.got; i++)
        one.got[one.have++] = buf[i];
    return one.answer;
}

/* one turn: 0 (a dispatch) or ETIMEDOUT after ms */
static int turn_ms(long ms)
{
    struct timespec dl;
    CHECK_EQ(lf_deadline_in(&dl, ms * 1000000LL), 0);
    return lf_reactor_handle_events(&R, &dl);
}

static unsigned long long rearmed(void)
{
    struct lf_reactor_stats st;
    CHECK_EQ(lf_reactor_stats(&R, &st), 0);
    return st.rearmed;
}

static void part_b(void)
{
    lf_handler h;
    int sv[2];
    memset(&one, 0, sizeof one);
    CHECK_EQ(lf_reactor_init(&R), 0);
    CHECK(nonblocking_pair(sv) == 0);
    lf_handler_init(&h, on_one, NULL);
    CHECK_EQ(lf_reactor_register(&R, &h, sv[0], LF_EV_READ), 0);
    one.take = 64;
    one.answer = LF_DRAINED;
    CHECK_EQ(write(sv[1], "a", 1), 1);
    CHECK_EQ(turn_ms(2000), 0); /* "a", short: drained, now edge-triggered (epoll) */
    CHECK_EQ(one.have, 1);
    /* both before anyone looks: one report with the data and the end of file. The
     * handler takes exactly the data (a short read that stops before the end of
     * file) and says LF_DRAINED */
    CHECK_EQ(write(sv[1], "bc", 2), 2);
    CHECK(shutdown(sv[1], SHUT_WR) == 0);
    one.take = 2;
    CHECK_EQ(turn_ms(2000), 0);
    CHECK_EQ(one.have, 3);
    CHECK_EQ(one.eof, 0);
    one.take = 64;
    for (int i = 0; i < 5 && !one.eof; i++)
        if (turn_ms(2000) != 0)
            break;
    CHECK_EQ(one.eof, 1); /* epoll without the end-of-file mark: ETIMEDOUT, no eof */
    CHECK(memcmp(one.got, "abc", 3) == 0);
    CHECK_EQ(lf_reactor_destroy(&R), 0);
    close(sv[1]);
}

static void part_c(void)
{
    lf_handler h;
    int sv[2];
    unsigned long long before;
    memset(&one, 0, sizeof one);
    CHECK_EQ(lf_reactor_init(&R), 0);
    CHECK(nonblocking_pair(sv) == 0);
    lf_handler_init(&h, on_one, NULL);
    CHECK_EQ(lf_reactor_register(&R, &h, sv[0], LF_EV_READ), 0);

    /* LF_KEEP: one re-arm per dispatch, and the rest of a partial read comes */
    one.take = 1;
    one.answer = LF_KEEP;
    CHECK_EQ(write(sv[1], "0123", 4), 4);
    before = rearmed();
    for (int i = 0; i < 4; i++)
        CHECK_EQ(turn_ms(2000), 0);
    CHECK_EQ(one.have, 4);
#if LF_REACTOR_BACKEND == LF_REACTOR_EPOLL
    CHECK_EQ(rearmed() - before, 4);
#else
    CHECK_EQ(rearmed() - before, 0); /* no system call re-arms a handle there */
#endif
    CHECK_EQ(turn_ms(30), ETIMEDOUT); /* empty: nothing more */

    /* LF_DRAINED: the first switches the handle to edge-triggered (one re-arm), the
     * next ones cost none */
    one.take = 64;
    one.answer = LF_DRAINED;
    before = rearmed();
    for (int i = 0; i < 5; i++) {
        CHECK_EQ(write(sv[1], "x", 1), 1);
        CHECK_EQ(turn_ms(2000), 0);
    }
    CHECK_EQ(one.have, 9);
#if LF_REACTOR_BACKEND == LF_REACTOR_EPOLL
    CHECK_EQ(rearmed() - before, 1);
#else
    CHECK_EQ(rearmed() - before, 0);
#endif

    /* LF_KEEP after a partial read on the edge-triggered handle: back to one-shot,
     * and the rest comes without new data */
    one.take = 1;
    one.answer = LF_KEEP;
    CHECK_EQ(write(sv[1], "yyy", 3), 3);
    for (int i = 0; i < 3; i++)
        CHECK_EQ(turn_ms(2000), 0);
    CHECK_EQ(one.have, 12);
    CHECK_EQ(turn_ms(30), ETIMEDOUT);

    /* the promise broken: LF_DRAINED with data left behind, on a handle that is
     * edge-triggered already (the switch's own re-arm would still report the rest) */
    one.take = 64;
    one.answer = LF_DRAINED;
    CHECK_EQ(write(sv[1], "q", 1), 1);
    CHECK_EQ(turn_ms(2000), 0);
    one.take = 1;
    CHECK_EQ(write(sv[1], "zz", 2), 2);
    CHECK_EQ(turn_ms(2000), 0); /* one "z" */
    CHECK_EQ(one.have, 14);
    int rc = turn_ms(50);
#if LF_REACTOR_BACKEND == LF_REACTOR_EPOLL
    CHECK_EQ(rc, ETIMEDOUT); /* the second "z" is not reported: no new edge */
    CHECK_EQ(write(sv[1], "w", 1), 1);
    CHECK_EQ(turn_ms(2000), 0); /* new data: a new edge, and the handler reads "z" */
#else
    CHECK_EQ(rc, 0); /* level-triggered: LF_DRAINED acts as LF_KEEP */
#endif
    CHECK_EQ(one.have, 15);
    CHECK(memcmp(one.got + 12, "qzz", 3) == 0);
    CHECK_EQ(lf_reactor_destroy(&R), 0);
    close(sv[1]);
}

/* D: one handler, three threads; the handler blocks inside a chosen dispatch */
static struct {
    LFT_ATOMIC(int) got, inside, gate; /* gate: 0 pass, 1 block the next read, 2 blocked, 3 go */
    int resumed;
} d;

static int on_d(lf_handler *h, int fd, uint32_t events)
{
    char buf[16];
    ssize_t n;
    (void)events;
    CHECK_EQ(lft_add(&d.inside, 1), 0);
    n = read(fd, buf, sizeof buf);
    if (n > 0) {
        lft_add(&d.got, (int)n);
        if (lft_load(&d.gate) == 1) {
            lft_store(&d.gate, 2);
            AWAIT(lft_load(&d.gate) == 3, "the test to let the handler go");
        }
    }
    CHECK_EQ(lft_add(&d.inside, -1), 1);
    if (n == 0 || (n < 0 && errno != EAGAIN))
        return LF_REMOVE;
    if (n == (ssize_t)sizeof buf) {
        if (!d.resumed)
            return LF_KEEP;
        CHECK_EQ(lf_reactor_reactivate(&R, h), 0);
        return LF_RESUMED;
    }
    return LF_DRAINED;
}

static void part_d(unsigned flags, int tcp, int resumed)
{
    lf_handler h;
    pthread_t th[LFT_STREAM_THREADS];
    int sv[2];
    char big[100];
    struct lf_reactor_stats st;
    unsigned long long deferred;
    memset(big, 'x', sizeof big);
    lft_store(&d.got, 0);
    lft_store(&d.gate, 0);
    d.resumed = resumed;
    CHECK_EQ(lf_reactor_init_flags(&R, flags), 0);
    if (tcp)
        lft_tcp_pair(sv, 0);
    else
        CHECK(nonblocking_pair(sv) == 0);
    lf_handler_init(&h, on_d, NULL);
    CHECK_EQ(lf_reactor_register(&R, &h, sv[0], LF_EV_READ | LF_EV_KEEPFD), 0);
    for (int i = 0; i < LFT_STREAM_THREADS; i++)
        CHECK(pthread_create(&th[i], NULL, lft_stream_runner, &R) == 0);
    CHECK_EQ(write(sv[1], "a", 1), 1); /* short: LF_DRAINED, edge-triggered from now */
    AWAIT(lft_load(&d.got) == 1, "the first byte");
    lft_store(&d.gate, 1);
    CHECK_EQ(write(sv[1], "b", 1), 1); /* its dispatch blocks after the read */
    AWAIT(lft_load(&d.gate) == 2, "the handler to block");
    CHECK_EQ(lf_reactor_stats(&R, &st), 0);
    deferred = st.deferred;
    CHECK_EQ(write(sv[1], big, sizeof big), (ssize_t)sizeof big);
#if LF_REACTOR_BACKEND == LF_REACTOR_EPOLL
    /* a new edge, harvested and left to the busy owner */
    AWAIT(lf_reactor_stats(&R, &st) == 0 && st.deferred > deferred, "the deferred report");
#else
    (void)deferred; /* level-triggered: the busy handle is not in the set */
#endif
    lft_store(&d.gate, 3); /* LF_DRAINED: its own read was short */
    AWAIT(lft_load(&d.got) == 2 + (int)sizeof big, "the rest, with no new data");
    CHECK_EQ(lf_reactor_stop(&R), 0);
    for (int i = 0; i < LFT_STREAM_THREADS; i++)
        CHECK(pthread_join(th[i], NULL) == 0);
    CHECK_EQ(lf_reactor_destroy(&R), 0);
    close(sv[0]);
    close(sv[1]);
}

/* E: a handler that empties its handle (LF_DRAINED is true), and may change its
 * interest once */
static struct {
    int calls, modify_to; /* -1: no modify */
    uint32_t last;
} e;

static int on_e(lf_handler *h, int fd, uint32_t events)
{
    char buf[64];
    e.calls++;
    e.last = events;
    while (read(fd, buf, sizeof buf) > 0) {
    }
    if (e.modify_to >= 0) {
        CHECK_EQ(lf_reactor_modify(&R, h, (uint32_t)e.modify_to), 0);
        e.modify_to = -1;
    }
    return LF_DRAINED;
}

/* a fresh reactor with h registered for events on sv[0] (a socket pair, or a pipe) */
static void e_begin(lf_handler *h, int sv[2], uint32_t events, int use_pipe)
{
    memset(&e, 0, sizeof e);
    e.modify_to = -1;
    CHECK_EQ(lf_reactor_init(&R), 0);
    if (use_pipe)
        CHECK(pipe(sv) == 0 && fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK) == 0);
    else
        CHECK(nonblocking_pair(sv) == 0);
    lf_handler_init(h, on_e, NULL);
    CHECK_EQ(lf_reactor_register(&R, h, sv[0], events), 0);
}

static void part_e(void)
{
    lf_handler h;
    int sv[2], closes = 0;

    /* WRITE in the interest: LF_DRAINED speaks of reading, a writable socket makes
     * no new edge, so it is LF_KEEP: reported again on every turn */
    e_begin(&h, sv, LF_EV_READ | LF_EV_WRITE, 0);
    for (int i = 0; i < 3; i++)
        CHECK_EQ(turn_ms(2000), 0);
    CHECK_EQ(e.calls, 3);
    CHECK(e.last & LF_EV_WRITE);
    CHECK_EQ(lf_reactor_destroy(&R), 0);
    close(sv[1]);

    /* edge-triggered after LF_DRAINED; a third party drops READ; a notification's
     * dispatch asks for READ again and says LF_DRAINED: new data is reported */
    e_begin(&h, sv, LF_EV_READ, 0);
    CHECK_EQ(write(sv[1], "a", 1), 1);
    CHECK_EQ(turn_ms(2000), 0);
    CHECK_EQ(lf_reactor_modify(&R, &h, 0), 0); /* (not from the handler) */
    e.modify_to = LF_EV_READ;
    CHECK_EQ(lf_reactor_notify(&R, &h, LF_EV_NOTIFY), 0);
    CHECK_EQ(turn_ms(2000), 0);
    CHECK_EQ(e.last, LF_EV_NOTIFY);
    CHECK_EQ(write(sv[1], "b", 1), 1);
    CHECK_EQ(turn_ms(2000), 0);
    CHECK_EQ(e.last, LF_EV_READ);
    CHECK_EQ(e.calls, 3);
    CHECK_EQ(lf_reactor_destroy(&R), 0);
    close(sv[1]);

    /* a pipe: data and the writer's close in one report, on an edge-triggered
     * handle; the hang-up keeps reporting after LF_DRAINED, as after LF_KEEP */
    e_begin(&h, sv, LF_EV_READ, 1);
    CHECK_EQ(write(sv[1], "a", 1), 1);
    CHECK_EQ(turn_ms(2000), 0);
    CHECK_EQ(write(sv[1], "bc", 2), 2);
    close(sv[1]);
    for (int i = 0; i < 3; i++)
        if (turn_ms(2000) == 0)
            closes++;
    CHECK_EQ(closes, 3);
#if LF_REACTOR_BACKEND != LF_REACTOR_SELECT
    CHECK(e.last & LF_EV_CLOSE); /* (select has no hang-up: it reports it readable) */
#endif
    CHECK_EQ(lf_reactor_destroy(&R), 0);
}

int main(void)
{
    lft_start("t_reactor_drained", 30);
    part_a(0);
#if LF_REACTOR_BACKEND == LF_REACTOR_EPOLL
    part_a(LF_REACTOR_CONCURRENT); /* every thread in epoll_wait: LF__BUSY still rules */
#endif
    part_b();
    part_c();
    part_e();
    for (int tcp = 0; tcp < 2; tcp++)
        for (int resumed = 0; resumed < 2; resumed++) {
            part_d(0, tcp, resumed);
#if LF_REACTOR_BACKEND == LF_REACTOR_EPOLL
            part_d(LF_REACTOR_CONCURRENT, tcp, resumed);
#endif
        }
    printf("t_reactor_drained %s: a dispatch queued behind LF_DRAINED that answers LF_KEEP "
           "or LF_RESUMED gets the rest (UNIX and TCP)\n", lf_reactor_backend_name());
    lft_pass();
    return 0;
}
