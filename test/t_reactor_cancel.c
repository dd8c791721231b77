/* pthread_cancel of threads that turn a reactor (lf_reactor.h, CANCELLATION): the
 * waits (the backend's, a follower's park, the group's) are cancellation points that
 * put things right, a cancel inside handle_event removes the handler as LF_REMOVE
 * would, one inside handle_close lets the close complete.
 *
 *   A: the reported scenario: 2 (then 4) threads in lf_reactor_run, settled or just
 *      started, all cancelled; pthread_join gives PTHREAD_CANCELED, nobody is left in
 *      a role, lf_reactor_stop and lf_reactor_destroy return 0.
 *   B: 6 connections carry numbered records (at least lft_scaled(20,000) each, and
 *      on for as long as the cancels go on) from writer threads to handlers that count them (with cancellation disabled: they have no
 *      cancellation point) while a killer cancels one of 4 lf_reactor_run threads at
 *      random moments lft_scaled(400) times and starts another in its place: every
 *      record arrives exactly once and in order (lft_records_take), every end of file
 *      is seen (handle_close once per connection), no handler was removed by a cancel
 *      (stats.cancelled 0); stop, joins, destroy 0. Also with LF_REACTOR_CONCURRENT
 *      (epoll only).
 *   C: a thread blocked inside handle_event (in a cancellation point), also after it
 *      reactivated its handler: cancelled, the handler is removed, handle_close runs
 *      exactly once and only after the thread is out, the fd is closed (the peer
 *      reads end of file), no later data is dispatched to it, stats.cancelled counts
 *      it, and a witness handler keeps making round trips.
 *   D: a thread blocked inside handle_close: cancelled, the close completes (the fd
 *      is closed, stats.closed counts it, handle_close is not run again); destroy 0.
 *   E: threads looping on lf_reactor_handle_events and on lf_reactor_turn, cancelled
 *      one at a time: the others go on (round trips), the pool's roles agree.
 *   F: a group of two sets: one of 4 lf_reactor_group_run threads cancelled, round
 *      trips on both sets; then the other 3, and 3 new threads serve both sets; group
 *      stop, joins, group destroy and the sets' destroys 0.
 *   G: LF_REACTOR_CONCURRENT (epoll; skipped elsewhere): A and B's records.
 * Timing decides only where a cancel lands; every assertion holds wherever it does.
 * Compiled once per promotion policy x backend. */
#include "../lf_reactor.h"
#include "lf_test.h"

#include <poll.h>
#include <sys/socket.h>

/* Under ThreadSanitizer the handlers' own cancellation points are condition-variable
 * waits: TSan undoes its interceptor state for a cancel inside pthread_cond_wait, not
 * inside its other blocking interceptors (poll), after which it no longer sees the
 * thread's lock operations (the reactor's cleanup) and reports races. The library's
 * own waits take care of that themselves (LF__TSAN_WAITS in lf.h). */
#if defined(LFT_TSAN) && !defined(T_CV_BLOCK)
#define T_CV_BLOCK 1
#endif

static lf_reactor R;

#ifdef T_CV_BLOCK
static void unlock_m(void *m)
{
    pthread_mutex_unlock((pthread_mutex_t *)m);
}
#endif

/* a cancellation point that only a cancel ends */
static void block_forever(void)
{
#ifdef T_CV_BLOCK
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t c = PTHREAD_COND_INITIALIZER;
    pthread_mutex_lock(&m);
    pthread_cleanup_push(unlock_m, &m);
    for (;;)
        pthread_cond_wait(&c, &m);
    pthread_cleanup_pop(1);
#else
    for (;;)
        poll(NULL, 0, -1);
#endif
}

static void set_nonblock(int fd)
{
    CHECK(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0);
}

static struct lf_reactor_stats rstats(lf_reactor *r)
{
    struct lf_reactor_stats s;
    CHECK_EQ(lf_reactor_stats(r, &s), 0);
    return s;
}

/* the peer has seen the reactor's end close (end of file, or a reset) */
static int peer_sees_close(int peer)
{
    char c;
    ssize_t n;
    if (!lft_readable(peer))
        return 0;
    n = recv(peer, &c, 1, MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno == ECONNRESET);
}

/* ------------------------------------------------------------------ threads */

static void *runner(void *arg)
{
    int rc = lf_reactor_run((lf_reactor *)arg, NULL);
    lft_progress();
    return (void *)(intptr_t)rc;
}

static void *events_loop(void *arg)
{
    int rc;
    (void)arg;
    while ((rc = lf_reactor_handle_events(&R, NULL)) == 0)
        lft_progress();
    return (void *)(intptr_t)rc;
}

static void destroy_follower(void *f)
{
    lf_follower_destroy((lf_follower *)f);
}

static void *turn_loop(void *arg)
{
    lf_follower f;
    int rc;
    (void)arg;
    CHECK_EQ(lf_follower_init(&f, 0), 0);
    pthread_cleanup_push(destroy_follower, &f);
    while ((rc = lf_reactor_turn(&R, &f, NULL)) == 0 || rc == EINTR)
        lft_progress();
    pthread_cleanup_pop(1);
    return (void *)(intptr_t)rc;
}

static lf_reactor_group G;

static void *group_runner(void *arg)
{
    int rc;
    (void)arg;
    rc = lf_reactor_group_run(&G, NULL);
    lft_progress();
    return (void *)(intptr_t)rc;
}


/* ------------------------------------------------------------------ witness
 * A handler that is never removed: a round trip through it shows the reactor turns. */

typedef struct witness {
    lf_handler h;
    int peer;
    LFT_ATOMIC(int) dispatches;
} witness;

static int witness_event(lf_handler *h, int fd, uint32_t events)
{
    witness *w = (witness *)h;
    char buf[64];
    int cs;
    (void)events;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cs); /* no cancellation point here */
    while (read(fd, buf, sizeof buf) > 0) {
    }
    pthread_setcancelstate(cs, &cs);
    lft_add(&w->dispatches, 1);
    lft_progress();
    return LF_KEEP;
}

static void witness_open(lf_reactor *r, witness *w)
{
    int sv[2];
    memset((void *)w, 0, sizeof *w);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    set_nonblock(sv[0]);
    w->peer = sv[1];
    lf_handler_init(&w->h, witness_event, NULL);
    CHECK_EQ(lf_reactor_register(r, &w->h, sv[0], LF_EV_READ), 0);
}

static void witness_roundtrip(witness *w)
{
    int before = lft_load(&w->dispatches);
    char c = 'w';
    CHECK(write(w->peer, &c, 1) == 1);
    AWAIT(lft_load(&w->dispatches) > before, "a round trip through the witness");
    lft_progress();
}

/* ------------------------------------------------------------------ A */

static void part_a(unsigned flags)
{
    for (int settle = 1; settle >= 0; settle--) {
        for (int n = 2; n <= 4; n += 2) {
            pthread_t t[4];
            witness w;
            struct lf_reactor_stats s;
            CHECK_EQ(lf_reactor_init_flags(&R, flags), 0);
            witness_open(&R, &w);
            for (int i = 0; i < n; i++)
                CHECK(pthread_create(&t[i], NULL, runner, &R) == 0);
            if (settle) {
                witness_roundtrip(&w);
                if (!flags)
                    AWAIT(rstats(&R).pool.leader == 1 &&
                              rstats(&R).pool.followers == (unsigned)n - 1,
                          "A: a leader and its followers");
                else
                    AWAIT(rstats(&R).waiting == (unsigned)n, "A: every thread waits");
            }
            for (int i = n - 1; i >= 0; i--)
                CHECK(pthread_cancel(t[i]) == 0);
            for (int i = 0; i < n; i++)
                CHECK(lft_join(t[i]) == PTHREAD_CANCELED);
            s = rstats(&R);
            CHECK_EQ(s.pool.leader + s.pool.followers + s.pool.processing + s.pool.joined, 0);
            CHECK_EQ(s.waiting, 0);
            CHECK_EQ(s.cancelled, 0); /* no handler was running */
            CHECK_EQ(lf_reactor_stop(&R), 0);
            CHECK_EQ(lf_reactor_destroy(&R), 0);
            close(w.peer);
        }
    }
}

/* ------------------------------------------------------------------ B */

enum { B_CONNS = 6, B_THREADS = 4 };

typedef struct conn {
    lf_handler h;
    int peer;
    LFT_ATOMIC(long long) n; /* records sent, once the writer is done (else -1) */
    struct lft_records rec;
    LFT_ATOMIC(long long) got;
    LFT_ATOMIC(int) inside, closes, eof;
    pthread_t writer;
} conn;

static int conn_event(lf_handler *h, int fd, uint32_t events)
{
    conn *c = (conn *)h;
    unsigned char buf[4096];
    ssize_t n;
    int cs, rc = LF_KEEP;
    (void)events;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cs); /* no cancellation point here */
    CHECK_EQ(lft_add(&c->inside, 1), 0);
    while ((n = read(fd, buf, sizeof buf)) > 0)
        lft_add(&c->got, lft_records_take(&c->rec, buf, n));
    if (n == 0) {
        lft_store(&c->eof, 1);
        rc = LF_REMOVE;
    } else {
        CHECK(errno == EAGAIN || errno == EWOULDBLOCK);
    }
    lft_add(&c->inside, -1);
    pthread_setcancelstate(cs, &cs);
    lft_progress();
    return rc;
}

static void conn_close(lf_handler *h)
{
    conn *c = (conn *)h;
    CHECK_EQ(lft_load(&c->inside), 0);
    lft_add(&c->closes, 1);
}

static LFT_ATOMIC(int) b_killing; /* the writers go on while the killer does */

static void *conn_writer(void *arg)
{
    conn *c = (conn *)arg;
    uint64_t buf[64];
    long long next = 0, least = lft_scaled(20000);
    unsigned long long seed = (unsigned long long)(uintptr_t)c | 1;
    while (next < least || lft_load(&b_killing)) {
        long long k = 1 + (long long)(lft_rand(&seed) % 64);
        for (long long i = 0; i < k; i++)
            buf[i] = (uint64_t)(next + i);
        const char *p = (const char *)buf;
        size_t left = (size_t)k * 8;
        while (left > 0) { /* a blocking socket: split anywhere */
            ssize_t w = write(c->peer, p, left);
            CHECK(w > 0);
            p += w;
            left -= (size_t)w;
        }
        next += k;
        if (lft_rand(&seed) % 4 == 0) {
            struct timespec ts = {0, 200000};
            nanosleep(&ts, NULL);
        }
    }
    lft_store(&c->n, next);
    CHECK(shutdown(c->peer, SHUT_WR) == 0); /* the end of file the handler sees */
    return NULL;
}

static void part_b(unsigned flags)
{
    static conn cs[B_CONNS];
    pthread_t t[B_THREADS];
    long cancels = lft_scaled(400);
    unsigned long long seed = 0xc0ffeeULL;
    double t0 = lft_now();
    struct lf_reactor_stats s;

    CHECK_EQ(lf_reactor_init_flags(&R, flags), 0);
    for (int i = 0; i < B_CONNS; i++) {
        int sv[2];
        conn *c = &cs[i];
        memset((void *)c, 0, sizeof *c);
        CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
        set_nonblock(sv[0]);
        c->peer = sv[1];
        lft_store(&c->n, -1LL);
        lf_handler_init(&c->h, conn_event, conn_close);
        CHECK_EQ(lf_reactor_register(&R, &c->h, sv[0], LF_EV_READ), 0);
    }
    for (int i = 0; i < B_THREADS; i++)
        CHECK(pthread_create(&t[i], NULL, runner, &R) == 0);
    lft_store(&b_killing, 1);
    for (int i = 0; i < B_CONNS; i++)
        CHECK(pthread_create(&cs[i].writer, NULL, conn_writer, &cs[i]) == 0);
    for (long k = 0; k < cancels; k++) {
        int i = (int)(lft_rand(&seed) % B_THREADS);
        struct timespec ts = {0, (long)(lft_rand(&seed) % 2000000)};
        nanosleep(&ts, NULL);
        lft_cancel_join(t[i]);
        CHECK(pthread_create(&t[i], NULL, runner, &R) == 0);
    }
    lft_store(&b_killing, 0);
    long long records = 0;
    for (int i = 0; i < B_CONNS; i++) {
        CHECK(pthread_join(cs[i].writer, NULL) == 0);
        records += lft_load(&cs[i].n);
        AWAIT(lft_load(&cs[i].closes) == 1, "B: every connection read to its end and closed");
        CHECK_EQ(lft_load(&cs[i].got), cs[i].n); /* each once, in order: lft_records_take */
        CHECK_EQ(lft_load(&cs[i].eof), 1);
        CHECK_EQ(cs[i].rec.have, 0);
    }
    /* (a close is counted once its handle_close has returned: a moment after the
     * hook's own count above) */
    AWAIT(rstats(&R).closed == B_CONNS, "B: every close counted");
    s = rstats(&R);
    CHECK_EQ(s.cancelled, 0); /* the handlers had no cancellation point */
    CHECK_EQ(s.closed, B_CONNS);
    CHECK_EQ(lf_reactor_stop(&R), 0);
    for (int i = 0; i < B_THREADS; i++)
        CHECK_EQ((intptr_t)lft_join(t[i]), ECANCELED);
    CHECK_EQ(lf_reactor_destroy(&R), 0);
    for (int i = 0; i < B_CONNS; i++)
        close(cs[i].peer);
    printf("  B%s: %ld cancels among %d threads, %lld records on %d connections (%.2f s)\n",
           flags ? " (concurrent)" : "", cancels, B_THREADS, records, B_CONNS, lft_now() - t0);
}

/* ------------------------------------------------------------------ C, D */

typedef struct probe {
    lf_handler h;
    int peer;
    int reactivate; /* C: reactivate before blocking (LF_RESUMED's way) */
    int block_in_close;
    LFT_ATOMIC(int) inside, dispatches, closes, close_entered;
    LFT_ATOMIC(int) blocked; /* a thread blocks now (its id is in who) */
    pthread_t who;
} probe;

static void probe_left(void *arg)
{
    lft_add(&((probe *)arg)->inside, -1); /* runs before the reactor's cleanup */
}

static int probe_event(lf_handler *h, int fd, uint32_t events)
{
    probe *p = (probe *)h;
    char c;
    (void)events;
    CHECK_EQ(lft_add(&p->inside, 1), 0);
    lft_add(&p->dispatches, 1);
    CHECK(read(fd, &c, 1) == 1);
    pthread_cleanup_push(probe_left, p);
    if (p->reactivate)
        CHECK_EQ(lf_reactor_reactivate(&R, h), 0);
    p->who = pthread_self();
    lft_store(&p->blocked, 1);
    block_forever();
    pthread_cleanup_pop(1);
    return LF_KEEP;
}

static void probe_close(lf_handler *h)
{
    probe *p = (probe *)h;
    CHECK_EQ(lft_load(&p->inside), 0); /* only once the cancelled thread is out */
    lft_add(&p->close_entered, 1);
    if (p->block_in_close) {
        p->who = pthread_self();
        lft_store(&p->blocked, 1);
        block_forever();
    }
    lft_add(&p->closes, 1);
}

static void probe_open(probe *p, int reactivate, int block_in_close)
{
    int sv[2];
    memset((void *)p, 0, sizeof *p);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    set_nonblock(sv[0]);
    set_nonblock(sv[1]);
    p->peer = sv[1];
    p->reactivate = reactivate;
    p->block_in_close = block_in_close;
    lf_handler_init(&p->h, probe_event, probe_close);
    CHECK_EQ(lf_reactor_register(&R, &p->h, sv[0], LF_EV_READ), 0);
}

static void part_c(void)
{
    enum { N = 4 };
    pthread_t t[N];
    int alive[N];
    witness w;
    unsigned long long cancelled = 0;

    CHECK_EQ(lf_reactor_init(&R), 0);
    witness_open(&R, &w);
    for (int i = 0; i < N; i++) {
        CHECK(pthread_create(&t[i], NULL, runner, &R) == 0);
        alive[i] = 1;
    }
    for (int reactivate = 0; reactivate <= 1; reactivate++) {
        probe p;
        int k;
        probe_open(&p, reactivate, 0);
        /* without reactivate, one byte is left: the handle stays readable, and a
         * dispatch after the removal would show; with it, nothing is left (another
         * thread may take h's events once it reactivated) */
        CHECK(write(p.peer, "ab", reactivate ? 1 : 2) == (reactivate ? 1 : 2));
        AWAIT(lft_load(&p.blocked), "C: the handler blocks");
        witness_roundtrip(&w); /* the others go on meanwhile */
        for (k = 0; k < N && !(alive[k] && pthread_equal(t[k], p.who)); k++) {
        }
        CHECK(k < N);
        lft_cancel_join(t[k]);
        alive[k] = 0;
        cancelled++;
        AWAIT(lft_load(&p.closes) == 1, "C: handle_close after the cancel");
        AWAIT(peer_sees_close(p.peer), "C: the reactor closed the fd");
        CHECK_EQ(rstats(&R).cancelled, cancelled);
        (void)!send(p.peer, "c", 1, MSG_NOSIGNAL); /* (may fail: the other end is closed) */
        witness_roundtrip(&w);
        witness_roundtrip(&w);
        CHECK_EQ(lft_load(&p.dispatches), 1); /* nothing after the removal */
        CHECK_EQ(lft_load(&p.closes), 1);
        CHECK_EQ(lft_load(&p.inside), 0);
        close(p.peer);
    }
    CHECK_EQ(lf_reactor_stop(&R), 0);
    for (int i = 0; i < N; i++)
        if (alive[i])
            CHECK_EQ((intptr_t)lft_join(t[i]), ECANCELED);
    CHECK_EQ(lf_reactor_destroy(&R), 0);
    close(w.peer);
}

static void part_d(void)
{
    enum { N = 3 };
    pthread_t t[N];
    int alive[N], k;
    witness w;
    probe q;
    unsigned long long closed;

    CHECK_EQ(lf_reactor_init(&R), 0);
    witness_open(&R, &w);
    probe_open(&q, 0, 1);
    for (int i = 0; i < N; i++) {
        CHECK(pthread_create(&t[i], NULL, runner, &R) == 0);
        alive[i] = 1;
    }
    witness_roundtrip(&w);
    closed = rstats(&R).closed;
    CHECK_EQ(lf_reactor_remove(&R, &q.h), 0);
    AWAIT(lft_load(&q.blocked), "D: handle_close blocks");
    for (k = 0; k < N && !pthread_equal(t[k], q.who); k++) {
    }
    CHECK(k < N); /* a thread that turns the reactor runs it */
    witness_roundtrip(&w);
    lft_cancel_join(t[k]);
    alive[k] = 0;
    AWAIT(peer_sees_close(q.peer), "D: the close completed: fd closed");
    AWAIT(rstats(&R).closed == closed + 1, "D: the close counted");
    witness_roundtrip(&w);
    CHECK_EQ(rstats(&R).cancelled, 0); /* not a handle_event */
    CHECK_EQ(lf_reactor_stop(&R), 0);
    for (int i = 0; i < N; i++)
        if (alive[i])
            CHECK_EQ((intptr_t)lft_join(t[i]), ECANCELED);
    CHECK_EQ(lf_reactor_destroy(&R), 0);
    CHECK_EQ(lft_load(&q.close_entered), 1); /* never run again, also not by destroy */
    CHECK_EQ(lft_load(&q.closes), 0);
    close(q.peer);
    close(w.peer);
}

/* ------------------------------------------------------------------ E */

static void part_e(void)
{
    enum { N = 4 };
    pthread_t t[N];
    witness w;
    struct lf_reactor_stats s;

    CHECK_EQ(lf_reactor_init(&R), 0);
    witness_open(&R, &w);
    for (int i = 0; i < N; i++)
        CHECK(pthread_create(&t[i], NULL, i % 2 ? turn_loop : events_loop, NULL) == 0);
    witness_roundtrip(&w);
    for (int i = 0; i < N; i++) {
        unsigned left = (unsigned)(N - 1 - i);
        lft_cancel_join(t[i]);
        if (left > 0) {
            witness_roundtrip(&w);
            AWAIT(rstats(&R).pool.leader == 1 && rstats(&R).pool.followers == left - 1,
                  "E: the threads left settle");
        }
        s = rstats(&R);
        CHECK_EQ(s.pool.processing, 0);
        CHECK(s.pool.leader + s.pool.followers <= left);
    }
    s = rstats(&R);
    CHECK_EQ(s.pool.leader + s.pool.followers + s.pool.processing, 0);
    CHECK_EQ(s.waiting, 0);
    /* a thread that comes later turns it as before */
    CHECK(pthread_create(&t[0], NULL, events_loop, NULL) == 0);
    witness_roundtrip(&w);
    CHECK_EQ(lf_reactor_stop(&R), 0);
    CHECK_EQ((intptr_t)lft_join(t[0]), ECANCELED);
    CHECK_EQ(lf_reactor_destroy(&R), 0);
    close(w.peer);
}

/* ------------------------------------------------------------------ F */

static void part_f(void)
{
    enum { N = 4 };
    static lf_reactor s1, s2;
    lf_reactor *sets[2] = {&s1, &s2};
    witness w1, w2;
    pthread_t t[N];

    CHECK_EQ(lf_reactor_init(&s1), 0);
    CHECK_EQ(lf_reactor_init(&s2), 0);
    witness_open(&s1, &w1);
    witness_open(&s2, &w2);
    CHECK_EQ(lf_reactor_group_init(&G, sets, 2), 0);
    for (int i = 0; i < N; i++)
        CHECK(pthread_create(&t[i], NULL, group_runner, NULL) == 0);
    witness_roundtrip(&w1);
    witness_roundtrip(&w2);
    lft_cancel_join(t[0]);
    witness_roundtrip(&w1);
    witness_roundtrip(&w2);
    for (int i = 1; i < N; i++)
        CHECK(pthread_cancel(t[i]) == 0);
    for (int i = 1; i < N; i++)
        CHECK(lft_join(t[i]) == PTHREAD_CANCELED);
    struct lf_pool_stats ps;
    CHECK_EQ(lf_pool_stats(&G.pool, &ps), 0);
    CHECK_EQ(ps.leader + ps.followers + ps.processing + ps.joined, 0);
    for (int i = 0; i < 3; i++)
        CHECK(pthread_create(&t[i], NULL, group_runner, NULL) == 0);
    witness_roundtrip(&w1);
    witness_roundtrip(&w2);
    witness_roundtrip(&w1);
    CHECK_EQ(lf_reactor_group_stop(&G), 0);
    for (int i = 0; i < 3; i++)
        CHECK_EQ((intptr_t)lft_join(t[i]), ECANCELED);
    CHECK_EQ(lf_reactor_group_destroy(&G), 0);
    CHECK_EQ(lf_reactor_destroy(&s1), 0);
    CHECK_EQ(lf_reactor_destroy(&s2), 0);
    close(w1.peer);
    close(w2.peer);
}

/* ------------------------------------------------------------------ H
 * A cancel inside a handle_close that lf_reactor_destroy runs: the destroy stops
 * there (the thread is gone), that close completes, and a second lf_reactor_destroy
 * from another thread finishes: every handler closed once, every fd closed. */

static LFT_ATOMIC(int) h_closes, h_blocked;

static int h_event(lf_handler *h, int fd, uint32_t events)
{
    (void)h;
    (void)fd;
    (void)events;
    return LF_KEEP;
}

static void h_close(lf_handler *h)
{
    (void)h;
    lft_add(&h_closes, 1);
    /* the first one blocks in a cancellation point (no local whose address is taken:
     * gcc 12's ASan aborts when a cancel unwinds through such a frame) */
    if (lft_add(&h_blocked, 1) == 0)
        block_forever();
}

static void *h_destroyer(void *arg)
{
    return (void *)(intptr_t)lf_reactor_destroy((lf_reactor *)arg);
}

static void part_h(void)
{
    enum { N = 4 };
    lf_reactor R;
    lf_handler hs[N];
    int sv[N][2];
    pthread_t t;

    CHECK_EQ(lf_reactor_init(&R), 0);
    for (int i = 0; i < N; i++) {
        CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv[i]) == 0);
        lf_handler_init(&hs[i], h_event, h_close);
        CHECK_EQ(lf_reactor_register(&R, &hs[i], sv[i][0], LF_EV_READ), 0);
    }
    CHECK(pthread_create(&t, NULL, h_destroyer, &R) == 0);
    AWAIT(lft_load(&h_blocked) == 1, "destroy to block in the first handle_close");
    lft_cancel_join(t);
    CHECK_EQ(lft_load(&h_closes), 1);
    CHECK(pthread_create(&t, NULL, h_destroyer, &R) == 0);
    CHECK(lft_join(t) == (void *)0); /* the second destroy finishes */
    CHECK_EQ(lft_load(&h_closes), N);
    for (int i = 0; i < N; i++) {
        char c;
        CHECK(read(sv[i][1], &c, 1) == 0); /* the reactor closed its end */
        close(sv[i][1]);
    }
    printf("  H: destroy cancelled in a handle_close, called again: %d closes\n", N);
}

int main(void)
{
    lft_start("t_reactor_cancel", 20);
    part_a(0);
    lft_progress();
    part_b(0);
    lft_progress();
    part_c();
    lft_progress();
    part_d();
    lft_progress();
    part_e();
    lft_progress();
    part_f();
    lft_progress();
    part_h();
    lft_progress();
#if LF_REACTOR_BACKEND == LF_REACTOR_EPOLL
    part_a(LF_REACTOR_CONCURRENT);
    lft_progress();
    part_b(LF_REACTOR_CONCURRENT);
#else
    printf("  G: LF_REACTOR_CONCURRENT is epoll's only: skipped on %s\n",
           lf_reactor_backend_name());
#endif
    printf("t_reactor_cancel %s/%s: cancelled threads and handlers are put right; the "
           "reactor works on, stops and is destroyed\n",
           lf_promote_name(), lf_reactor_backend_name());
    return 0;
}
