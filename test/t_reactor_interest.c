/* lf_reactor_modify: a handler's interest changes after registration, from its own
 * handle_event and from other threads, on every backend, one-shot and edge.
 *   A (own, one thread, each turn by hand): a handler that asks for WRITE gets it;
 *     one that drops WRITE stops getting it (a turn then waits out its deadline on a
 *     socket that is always writable); one that drops all interest leaves its data
 *     where it is, and hears it once another thread asks for READ again.
 *   B (another thread): an interest changed before a turn is the one the turn
 *     dispatches for: READ that is ready but no longer wanted is not handed on.
 *   C (bad input, and the other contexts): EINVAL for bits other than READ and
 *     WRITE, a NULL handler, a zeroed reactor, a signal handler; ENOENT for a
 *     handler not registered, removed, or being closed (from its own handle_close).
 *   D (threads, churn): THREADS threads run the reactor (on epoll also with
 *     LF_REACTOR_CONCURRENT) while writers stream numbered records to NCONN
 *     connections, a toggler thread changes their interest at random (READ, WRITE,
 *     both, none) and the handlers change their own. Every record arrives exactly
 *     once and in order, no two threads are ever inside one handler, and once the
 *     changes stop with READ wanted everywhere, everything left is delivered: an
 *     interest lost between the handler's re-arm and another thread's change would
 *     leave a connection deaf (the watchdog), or hearing WRITE it no longer wants.
 * Compiled once per promotion policy x backend. */
#include "../lf_reactor.h"
#include "lf_test.h"

#include <signal.h>
#include <sys/socket.h>

static lf_reactor R;

static void nonblock(int fd)
{
    CHECK(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0);
}

/* one turn on this thread: 0 (something ran) or ETIMEDOUT after ms */
static int turn(long ms)
{
    struct timespec dl;
    CHECK_EQ(lf_deadline_in(&dl, ms * 1000000LL), 0);
    return lf_reactor_handle_events(&R, &dl);
}

/* ------------------------------------------------------------------ A, B */

struct probe {
    lf_handler h;
    uint32_t next;   /* what handle_event asks for next (UINT32_MAX: nothing) */
    int read_it;     /* read what is there */
    uint32_t seen;   /* events of the last dispatch */
    int calls, rc;
};

static int probe_event(lf_handler *h, int fd, uint32_t ev)
{
    struct probe *p = (struct probe *)h;
    char buf[64];
    p->seen = ev;
    p->calls++;
    if (p->read_it)
        while (read(fd, buf, sizeof buf) > 0) {
        }
    if (p->next != UINT32_MAX)
        p->rc = lf_reactor_modify(&R, h, p->next);
    return LF_KEEP;
}

static void own_and_other(uint32_t flags)
{
    struct probe p;
    int s[2];

    CHECK_EQ(lf_reactor_init(&R), 0);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, s) == 0);
    nonblock(s[0]);
    memset(&p, 0, sizeof p);
    lf_handler_init(&p.h, probe_event, NULL);
    CHECK_EQ(lf_reactor_register(&R, &p.h, s[0], LF_EV_READ | flags), 0);

    /* A: READ, and ask for WRITE from inside */
    CHECK(write(s[1], "x", 1) == 1);
    p.read_it = 1;
    p.next = LF_EV_READ | LF_EV_WRITE;
    CHECK_EQ(turn(2000), 0);
    CHECK_EQ(p.calls, 1);
    CHECK(p.seen & LF_EV_READ);
    CHECK_EQ(p.rc, 0);
    /* WRITE comes (always writable); drop it from inside */
    p.next = LF_EV_READ;
    CHECK_EQ(turn(2000), 0);
    CHECK_EQ(p.calls, 2);
    CHECK_EQ(p.seen, LF_EV_WRITE);
    CHECK_EQ(p.rc, 0);
    /* no more WRITE: the turn finds nothing */
    p.next = UINT32_MAX;
    CHECK_EQ(turn(30), ETIMEDOUT);
    CHECK_EQ(p.calls, 2);
    /* data, not read, and all interest dropped from inside */
    CHECK(write(s[1], "y", 1) == 1);
    p.read_it = 0;
    p.next = 0;
    CHECK_EQ(turn(2000), 0);
    CHECK_EQ(p.calls, 3);
    CHECK_EQ(p.seen, LF_EV_READ);
    p.next = UINT32_MAX;
    CHECK_EQ(turn(30), ETIMEDOUT); /* the "y" is there, nobody asks */
    CHECK_EQ(p.calls, 3);
    /* another thread (this one, outside any handler) asks for READ again */
    CHECK_EQ(lf_reactor_modify(&R, &p.h, LF_EV_READ), 0);
    p.read_it = 1;
    CHECK_EQ(turn(2000), 0);
    CHECK_EQ(p.calls, 4);
    CHECK_EQ(p.seen, LF_EV_READ);

    /* B: data ready, but WRITE only wanted now: WRITE is what comes */
    CHECK(write(s[1], "z", 1) == 1);
    CHECK_EQ(lf_reactor_modify(&R, &p.h, LF_EV_WRITE), 0);
    p.read_it = 0;
    CHECK_EQ(turn(2000), 0);
    CHECK_EQ(p.calls, 5);
    CHECK_EQ(p.seen, LF_EV_WRITE);
    /* both */
    CHECK_EQ(lf_reactor_modify(&R, &p.h, LF_EV_READ | LF_EV_WRITE), 0);
    p.read_it = 1;
    {
        uint32_t all = 0;
        for (int i = 0; i < 4 && all != (LF_EV_READ | LF_EV_WRITE); i++) {
            CHECK_EQ(turn(2000), 0);
            all |= p.seen;
        }
        CHECK_EQ(all, LF_EV_READ | LF_EV_WRITE);
    }
    /* the same interest again changes nothing */
    CHECK_EQ(lf_reactor_modify(&R, &p.h, LF_EV_READ), 0);
    CHECK_EQ(lf_reactor_modify(&R, &p.h, LF_EV_READ), 0);
    CHECK_EQ(turn(30), ETIMEDOUT); /* read empty, no WRITE */

    CHECK_EQ(lf_reactor_remove(&R, &p.h), 0);
    CHECK_EQ(lf_reactor_modify(&R, &p.h, LF_EV_READ), ENOENT);
    CHECK_EQ(lf_reactor_destroy(&R), 0);
    close(s[1]);
}

/* ------------------------------------------------------------------ C */

static int close_rc = -1;

static void closing(lf_handler *h)
{
    close_rc = lf_reactor_modify(&R, h, LF_EV_READ);
}

static int never(lf_handler *h, int fd, uint32_t ev)
{
    (void)h;
    (void)fd;
    (void)ev;
    return LF_KEEP;
}

static void bad_input(void)
{
    lf_handler h, sig;
    lf_reactor zero;
    int s[2];
    sigset_t set;

    memset(&zero, 0, sizeof zero);
    CHECK_EQ(lf_reactor_init(&R), 0);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, s) == 0);
    lf_handler_init(&h, never, closing);
    CHECK_EQ(lf_reactor_modify(&R, &h, LF_EV_READ), ENOENT); /* not registered */
    CHECK_EQ(lf_reactor_register(&R, &h, s[0], LF_EV_READ), 0);
    CHECK_EQ(lf_reactor_modify(&R, &h, LF_EV_EDGE), EINVAL);
    CHECK_EQ(lf_reactor_modify(&R, &h, LF_EV_KEEPFD), EINVAL);
    CHECK_EQ(lf_reactor_modify(&R, &h, LF_EV_READ | LF_EV_TIMEOUT), EINVAL);
    CHECK_EQ(lf_reactor_modify(&R, &h, LF_EV_NOTIFY), EINVAL);
    CHECK_EQ(lf_reactor_modify(&R, NULL, LF_EV_READ), EINVAL);
    CHECK_EQ(lf_reactor_modify(NULL, &h, LF_EV_READ), EINVAL);
    CHECK_EQ(lf_reactor_modify(&zero, &h, LF_EV_READ), EINVAL);
    CHECK_EQ(lf_reactor_modify(&R, &h, 0), 0);
    CHECK_EQ(lf_reactor_modify(&R, &h, LF_EV_WRITE), 0);
#if defined(__linux__) && !defined(LF_PORTABLE)
    sigemptyset(&set);
    sigaddset(&set, SIGUSR2);
    CHECK(pthread_sigmask(SIG_BLOCK, &set, NULL) == 0);
    lf_handler_init(&sig, never, NULL);
    CHECK_EQ(lf_reactor_register_signal(&R, &sig, &set), 0);
    CHECK_EQ(lf_reactor_modify(&R, &sig, LF_EV_WRITE), EINVAL); /* its interest: the set */
    CHECK_EQ(lf_reactor_remove(&R, &sig), 0);
#else
    (void)sig;
    (void)set;
#endif
    CHECK_EQ(lf_reactor_remove(&R, &h), 0);
    CHECK_EQ(lf_reactor_modify(&R, &h, LF_EV_READ), ENOENT);
    CHECK_EQ(lf_reactor_destroy(&R), 0); /* runs handle_close: modify there */
    CHECK_EQ(close_rc, ENOENT);
    CHECK_EQ(lf_reactor_modify(&R, &h, LF_EV_READ), EINVAL); /* destroyed */
    close(s[1]);
}

/* ------------------------------------------------------------------ D */

#define THREADS 3
#define NCONN 8
#define WRITERS 2

struct conn {
    lf_handler h;
    int peer;
    pthread_mutex_t wlock;
    uint64_t next_out;
    struct lft_records in; /* handler: the records read so far */
    unsigned long long rnd;
    LFT_ATOMIC(int) inside;
    LFT_ATOMIC(long long) writes;
};

static struct conn conns[NCONN];
static LFT_ATOMIC(long long) received;
static LFT_ATOMIC(int) writers_done, settle;
static long long per_writer;
static uint32_t edge_flag;

static const uint32_t masks[4] = {LF_EV_READ, LF_EV_WRITE, LF_EV_READ | LF_EV_WRITE, 0};

static int on_conn(lf_handler *h, int fd, uint32_t ev)
{
    struct conn *c = (struct conn *)h;
    unsigned char buf[24];
    CHECK_EQ(lft_add(&c->inside, 1), 0);
    if (ev & LF_EV_WRITE)
        lft_add(&c->writes, 1);
    if (ev & LF_EV_READ) {
        /* edge: drain (the promise); one-shot: one small read, the rest comes again */
        for (;;) {
            ssize_t n = read(fd, buf, sizeof buf);
            if (n < 0 && errno == EAGAIN)
                break;
            CHECK(n > 0);
            lft_add(&received, lft_records_take(&c->in, buf, n));
            if (!edge_flag)
                break;
        }
    }
    /* its own changes, until the end */
    if (!lft_load(&settle)) {
        unsigned long long x = lft_rand(&c->rnd);
        if ((x & 3) == 0)
            CHECK_EQ(lf_reactor_modify(&R, h, masks[(x >> 2) & 3]), 0);
    }
    lft_add(&c->inside, -1);
    lft_progress();
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
    unsigned long long rnd = 0x9e3779b97f4a7c15ULL + (uintptr_t)arg;
    for (long long k = 0; k < per_writer; k++) {
        struct conn *c = &conns[lft_rand(&rnd) % NCONN];
        unsigned char rec[8];
        pthread_mutex_lock(&c->wlock);
        memcpy(rec, &c->next_out, 8);
        for (size_t off = 0; off < 8;) {
            ssize_t w = write(c->peer, rec + off, 8 - off);
            if (w < 0 && errno == EAGAIN) { /* full: the reader may be deaf for now */
                lft_sleep_ms(1); /* (holding the lock: a record is never split by another) */
                continue;
            }
            CHECK(w > 0);
            off += (size_t)w;
        }
        c->next_out++;
        pthread_mutex_unlock(&c->wlock);
    }
    lft_add(&writers_done, 1);
    return NULL;
}

static void *toggler(void *arg)
{
    unsigned long long rnd = 12345;
    (void)arg;
    while (lft_load(&writers_done) < WRITERS) {
        unsigned long long x = lft_rand(&rnd);
        CHECK_EQ(lf_reactor_modify(&R, &conns[x % NCONN].h, masks[(x >> 8) & 3]), 0);
        if ((x >> 16) % 8 == 0)
            sched_yield();
    }
    return NULL;
}

static void churn(unsigned flags, uint32_t edge)
{
    pthread_t th[THREADS], wr[WRITERS], tg;
    long long total, writes = 0;

    edge_flag = edge;
    per_writer = lft_scaled(40000);
    lft_store(&received, 0);
    lft_store(&writers_done, 0);
    lft_store(&settle, 0);
    CHECK_EQ(lf_reactor_init_flags(&R, flags), 0);
    for (int i = 0; i < NCONN; i++) {
        int s[2];
        struct conn *c = &conns[i];
        memset(c, 0, sizeof *c);
        CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, s) == 0);
        nonblock(s[0]);
        nonblock(s[1]);
        c->peer = s[1];
        c->rnd = 777 + (unsigned long long)i;
        pthread_mutex_init(&c->wlock, NULL);
        lf_handler_init(&c->h, on_conn, NULL);
        CHECK_EQ(lf_reactor_register(&R, &c->h, s[0], LF_EV_READ | edge), 0);
    }
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_create(&th[i], NULL, runner, NULL) == 0);
    CHECK(pthread_create(&tg, NULL, toggler, NULL) == 0);
    for (int i = 0; i < WRITERS; i++)
        CHECK(pthread_create(&wr[i], NULL, writer, (void *)(uintptr_t)i) == 0);
    for (int i = 0; i < WRITERS; i++)
        CHECK(pthread_join(wr[i], NULL) == 0);
    CHECK(pthread_join(tg, NULL) == 0);
    /* the end: no handler changes itself once it sees settle; wait out those that
     * are inside now, then READ everywhere, from this (another) thread */
    lft_store(&settle, 1);
    for (int i = 0; i < NCONN; i++)
        AWAIT(lft_load(&conns[i].inside) == 0, "a handler to leave");
    for (int i = 0; i < NCONN; i++)
        CHECK_EQ(lf_reactor_modify(&R, &conns[i].h, LF_EV_READ), 0);
    total = per_writer * WRITERS;
    while (lft_load(&received) < total) {
        lft_sleep_ms(1); /* the watchdog fails a connection left deaf */
    }
    CHECK_EQ(lft_load(&received), total);
    CHECK_EQ(lf_reactor_stop(&R), 0);
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_join(th[i], NULL) == 0);
    for (int i = 0; i < NCONN; i++) {
        CHECK_EQ(conns[i].in.next_in, conns[i].next_out);
        writes += lft_load(&conns[i].writes);
        close(conns[i].peer);
        pthread_mutex_destroy(&conns[i].wlock);
    }
    CHECK(writes > 0); /* the WRITE interest was heard, too */
    CHECK_EQ(lf_reactor_destroy(&R), 0);
    printf("  D %s%s: %lld records through %d connections whose interest changed "
           "under them, %lld WRITE dispatches\n",
           edge ? "edge" : "one-shot", flags ? ", concurrent" : "", total, NCONN, writes);
}

/* ------------------------------------------------------------------ E */

/* A peer's half-close is LF_EV_READ with the data first, then EOF, on every backend
 * (epoll reported it as LF_EV_CLOSE with the request still unread). */
static void half_close(void)
{
    struct probe p;
    int s[2];
    char buf[8];

    CHECK_EQ(lf_reactor_init(&R), 0);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, s) == 0);
    nonblock(s[0]);
    memset(&p, 0, sizeof p);
    p.next = UINT32_MAX;
    lf_handler_init(&p.h, probe_event, NULL);
    CHECK_EQ(lf_reactor_register(&R, &p.h, s[0], LF_EV_READ), 0);
    CHECK(write(s[1], "req", 3) == 3);
    CHECK_EQ(shutdown(s[1], SHUT_WR), 0);
    CHECK_EQ(turn(2000), 0);
    CHECK_EQ(p.seen, LF_EV_READ);
    CHECK_EQ(read(s[0], buf, sizeof buf), 3); /* the request is all there */
    CHECK_EQ(read(s[0], buf, sizeof buf), 0); /* then EOF */
    CHECK_EQ(lf_reactor_remove(&R, &p.h), 0);
    CHECK_EQ(lf_reactor_destroy(&R), 0);
    close(s[1]);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    lft_start("t_reactor_interest", 30);
    printf("t_reactor_interest %s:\n", lf_reactor_backend_name());
    own_and_other(0);
    own_and_other(LF_EV_EDGE);
    bad_input();
    half_close();
    churn(0, 0);
    churn(0, LF_EV_EDGE);
#if LF_REACTOR_BACKEND == LF_REACTOR_EPOLL
    churn(LF_REACTOR_CONCURRENT, 0);
    churn(LF_REACTOR_CONCURRENT, LF_EV_EDGE);
#endif
    lft_pass();
    return 0;
}
