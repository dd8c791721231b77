/* LF_EV_EDGE: a handle registered edge-triggered (kept armed, no re-arm per event)
 * keeps every promise a one-shot handle makes.
 *   A (threads, churn of events): THREADS threads run the reactor (on epoll also with
 *     LF_REACTOR_CONCURRENT); writers send
 *     numbered records in bursts to NCONN connections. Each handler drains its socket
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

#include <sys/socket.h>

#define THREADS 3
#define NCONN 16
#define WRITERS 2

struct edge {
    lf_handler h;
    int peer;                    /* the writers' end */
    pthread_mutex_t wlock;       /* one writer at a time per connection */
    uint64_t next_out;           /* writers: the next record number, under wlock */
    struct lft_records in;       /* handler: the records read so far */
    LFT_ATOMIC(int) inside;
    LFT_ATOMIC(int) parked;      /* deactivated by itself, to be reactivated */
    unsigned dispatches;
};

static lf_reactor R;
static struct edge conns[NCONN];
static LFT_ATOMIC(long long) received;
static LFT_ATOMIC(int) writers_done;
static long long per_writer;

static int on_edge(lf_handler *h, int fd, uint32_t events)
{
    struct edge *e = (struct edge *)h;
    unsigned char buf[20]; /* small: records split across reads */
    CHECK_EQ(lft_add(&e->inside, 1), 0);
    (void)events;
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EAGAIN)
            break;
        CHECK(n > 0);
        lft_add(&received, lft_records_take(&e->in, buf, n));
    }
    lft_progress();
    if (++e->dispatches % 7 == 0) {
        CHECK_EQ(lf_reactor_deactivate(&R, h), 0);
        lft_store(&e->parked, 1);
    }
    CHECK_EQ(lft_add(&e->inside, -1), 1);
    return LF_KEEP;
}

static void *runner(void *arg)
{
    (void)arg;
    CHECK_EQ(lf_reactor_run(&R, NULL), ECANCELED);
    return NULL;
}

static void *writer(void *arg)
{
    unsigned long long seed = 0x9e3779b97f4a7c15ULL * (uint64_t)((long)arg + 1);
    for (long long i = 0; i < per_writer;) {
        struct edge *e = &conns[lft_rand(&seed) % NCONN];
        int burst = 1 + (int)(lft_rand(&seed) % 5);
        pthread_mutex_lock(&e->wlock);
        for (int k = 0; k < burst && i < per_writer; k++, i++) {
            uint64_t seq = e->next_out++;
            CHECK_EQ(write(e->peer, &seq, 8), 8);
        }
        pthread_mutex_unlock(&e->wlock);
        if (lft_rand(&seed) % 8 == 0)
            lft_sleep_ms(0);
    }
    lft_add(&writers_done, 1);
    return NULL;
}

static void part_a(unsigned flags)
{
    pthread_t th[THREADS], wr[WRITERS];
    per_writer = lft_scaled(40000);
    lft_store(&received, 0);
    lft_store(&writers_done, 0);
    CHECK_EQ(lf_reactor_init_flags(&R, flags), 0);
    for (int i = 0; i < NCONN; i++) {
        int sv[2];
        CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
        CHECK(fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK) == 0);
        memset((void *)&conns[i], 0, sizeof conns[i]);
        pthread_mutex_init(&conns[i].wlock, NULL);
        conns[i].peer = sv[1];
        lf_handler_init(&conns[i].h, on_edge, NULL);
        CHECK_EQ(lf_reactor_register(&R, &conns[i].h, sv[0], LF_EV_READ | LF_EV_EDGE), 0);
    }
    for (long i = 0; i < THREADS; i++)
        CHECK(pthread_create(&th[i], NULL, runner, NULL) == 0);
    for (long i = 0; i < WRITERS; i++)
        CHECK(pthread_create(&wr[i], NULL, writer, (void *)i) == 0);

    /* the third party: reactivate parked handlers until everything arrived */
    double t0 = lft_now();
    while (lft_load(&writers_done) < WRITERS || lft_load(&received) < WRITERS * per_writer) {
        for (int i = 0; i < NCONN; i++)
            if (lft_load(&conns[i].parked)) {
                lft_store(&conns[i].parked, 0);
                CHECK_EQ(lf_reactor_reactivate(&R, &conns[i].h), 0);
            }
        if (lft_now() - t0 > 60) {
            fprintf(stderr, "t_reactor_edge: %lld of %lld records after 60 s\n",
                    (long long)lft_load(&received), WRITERS * per_writer);
            exit(1);
        }
        lft_sleep_ms(0);
    }
    for (int i = 0; i < WRITERS; i++)
        CHECK(pthread_join(wr[i], NULL) == 0);
    CHECK_EQ(lf_reactor_stop(&R), 0);
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_join(th[i], NULL) == 0);
    long long sent = 0, got = 0;
    for (int i = 0; i < NCONN; i++) {
        sent += (long long)conns[i].next_out;
        got += (long long)conns[i].in.next_in;
        CHECK_EQ(conns[i].in.next_in, conns[i].next_out);
        CHECK_EQ(conns[i].in.have, 0);
    }
    CHECK_EQ(sent, WRITERS * per_writer);
    CHECK_EQ(got, sent);
    CHECK_EQ(lf_reactor_destroy(&R), 0);
    for (int i = 0; i < NCONN; i++) {
        close(conns[i].peer);
        pthread_mutex_destroy(&conns[i].wlock);
    }
    printf("t_reactor_edge %s%s: %lld records over %d edge-triggered connections, each once "
           "and in order\n", lf_reactor_backend_name(), flags ? " concurrent" : "", sent, NCONN);
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
