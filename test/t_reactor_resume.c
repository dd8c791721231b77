/* The deactivation protocol and notifications.
 *
 *   A  lf_reactor_deactivate from outside: data written while the handler is
 *      deactivated is not dispatched (it is kept); lf_reactor_reactivate delivers
 *      it. Reactivating a handler that is not deactivated dispatches nothing.
 *   B  LF_RESUMED: a handler that reads ONE message, calls lf_reactor_reactivate on
 *      itself and returns LF_RESUMED lets another thread dispatch its next message
 *      while it is still inside: the first dispatch waits (bounded) until a second
 *      dispatch of the same handler has started, on another thread. Contrast: with
 *      LF_KEEP and no early reactivate, two dispatches of one handler never overlap,
 *      even when its next message is waiting and idle threads are there to take it.
 *   C  lf_reactor_notify: notifications to a busy handler are delivered after it
 *      returns, never concurrently, coalesced (1000 notifies while busy: exactly one
 *      more dispatch); the caller never blocks (100000 notifies to a deactivated
 *      handler all return, and reactivation brings one LF_EV_NOTIFY dispatch); under
 *      a stream of notifies and I/O a dispatch always sees the last notify posted.
 *   Q  (last) a dispatch that was already queued when lf_reactor_deactivate returned
 *      (here a notification) must not start while the handler is deactivated either:
 *      LF__SUSPENDED means "no dispatch may start", and such a dispatch would hand
 *      the handler data written after the deactivation.
 *   S  (last) a stream of notifications does not starve I/O: handlers that notify
 *      themselves on every dispatch keep the ready queue busy for good, and another
 *      handler's readable socket is still dispatched.
 *
 * Handlers count how many threads are inside them ('inside') and fail at once when
 * a promise is broken. No timing goals: waits that give a wrong dispatch its chance
 * are lower bounds, and waits for expected events are bounded only to turn a hang
 * into a clear failure (AWAIT's 10 s, the watchdog). */
#include "../lf_reactor.h"
#include "lf_test.h"

#include <sys/socket.h>

enum { MODE_KEEP, MODE_RESUMED };

typedef struct rh {
    lf_handler h;
    int peer;                     /* the other end of the socket, ours */
    int mode;                     /* B */
    LFT_ATOMIC(int) inside;       /* threads in handle_event now */
    LFT_ATOMIC(long) entries;     /* handle_event calls */
    LFT_ATOMIC(long) notes;       /* ... with LF_EV_NOTIFY */
    LFT_ATOMIC(long long) bytes;  /* read by the handler */
    LFT_ATOMIC(int) suspended;    /* the test's view: deactivated, not yet reactivated */
    LFT_ATOMIC(long) processed;   /* B: messages done */
    LFT_ATOMIC(long) overlaps;    /* B: dispatches that started while another was inside */
    LFT_ATOMIC(int) first_tid;    /* B: the thread of the waiting dispatch */
    LFT_ATOMIC(int) hold, entered, gate, returned; /* C: the busy dispatch */
    LFT_ATOMIC(unsigned) last_ev;
    LFT_ATOMIC(long) posted, max_seen; /* C: the notify stream */
    LFT_ATOMIC(int) closed;
} rh;

#define RH(lh) ((rh *)(void *)(lh))

static lf_reactor r;
static LFT_ATOMIC(int) tid_counter;
static _Thread_local int my_tid; /* 0: not a runner */

static void on_close(lf_handler *lh)
{
    rh *c = RH(lh);
    CHECK_EQ(lft_load(&c->inside), 0);
    CHECK_EQ(lft_add(&c->closed, 1), 0);
}

/* A handler on one end of a fresh AF_UNIX socketpair (datagrams for B, so one
 * read is one whole message). */
static void reg(rh *c, int type, int (*fn)(lf_handler *, int, uint32_t))
{
    int sv[2];
    memset((void *)c, 0, sizeof *c);
    CHECK(socketpair(AF_UNIX, type, 0, sv) == 0);
    CHECK(fcntl(sv[0], F_SETFL, O_NONBLOCK) == 0);
    c->peer = sv[1];
    c->h.handle_event = fn;
    c->h.handle_close = on_close;
    CHECK_EQ(lf_reactor_register(&r, &c->h, sv[0], LF_EV_READ), 0);
}

static void put(rh *c, const char *data, size_t n)
{
    CHECK(write(c->peer, data, n) == (ssize_t)n);
}

/* Read everything there is; returns the byte count. */
static long long drain(int fd)
{
    char buf[512];
    long long total = 0;
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n > 0) {
            total += n;
            continue;
        }
        CHECK(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)); /* no EOF here */
        return total;
    }
}

static void *runner(void *arg)
{
    my_tid = lft_add(&tid_counter, 1) + 1;
    CHECK_EQ(lf_reactor_run(&r, NULL), ECANCELED);
    return arg;
}

#define RUNNERS 3
static pthread_t run_t[RUNNERS];

static void up(void)
{
    CHECK_EQ(lf_reactor_init(&r), 0);
    for (int i = 0; i < RUNNERS; i++)
        CHECK(pthread_create(&run_t[i], NULL, runner, NULL) == 0);
}

static void down(void)
{
    CHECK_EQ(lf_reactor_stop(&r), 0);
    for (int i = 0; i < RUNNERS; i++)
        CHECK(pthread_join(run_t[i], NULL) == 0);
    CHECK_EQ(lf_reactor_destroy(&r), 0);
}

/* Entry bookkeeping shared by the handlers: fail on a dispatch that started while
 * the test had the handler deactivated, or while another thread was inside. */
static void enter(rh *c, uint32_t ev)
{
    if (lft_load(&c->suspended)) {
        fprintf(stderr, "dispatched while deactivated (events 0x%x)\n", (unsigned)ev);
        CHECK(!"no dispatch may start while the handler is deactivated");
    }
    CHECK_EQ(lft_add(&c->inside, 1), 0);
    lft_add(&c->entries, 1L);
    lft_store(&c->last_ev, (unsigned)ev);
    if (ev & LF_EV_NOTIFY)
        lft_add(&c->notes, 1L);
}

static void leave(rh *c)
{
    CHECK_EQ(lft_add(&c->inside, -1), 1);
    lft_progress();
}

/* ------------------------------------------------------------------ A */

static int a_event(lf_handler *lh, int fd, uint32_t ev)
{
    rh *c = RH(lh);
    enter(c, ev);
    if (ev & (LF_EV_READ | LF_EV_CLOSE))
        lft_add(&c->bytes, drain(fd));
    leave(c);
    return LF_KEEP;
}

static void part_a(void)
{
    static rh c, stray;
    long long expect = 0;
    long entries;

    up();
    reg(&c, SOCK_STREAM, a_event);
    stray.h.handle_event = a_event; /* never registered */
    CHECK_EQ(lf_reactor_deactivate(&r, &stray.h), ENOENT);
    CHECK_EQ(lf_reactor_reactivate(&r, &stray.h), ENOENT);

    for (int round = 0; round < 8; round++) {
        char msg[16];
        size_t n1 = 1 + (size_t)round, n2 = 3;
        memset(msg, 'a' + round, sizeof msg);
        /* idle: everything so far was read and no thread is inside */
        AWAIT(lft_load(&c.bytes) == expect && lft_load(&c.inside) == 0,
              "the handler to read what was written");
        entries = lft_load(&c.entries);
        CHECK_EQ(lf_reactor_deactivate(&r, &c.h), 0);
        if (round % 2)
            CHECK_EQ(lf_reactor_deactivate(&r, &c.h), 0); /* twice: still one state */
        lft_store(&c.suspended, 1);
        put(&c, msg, n1);
        lft_sleep_ms(15); /* every chance to dispatch it, wrongly */
        put(&c, msg, n2);
        lft_sleep_ms(10);
        CHECK_EQ(lft_load(&c.entries), entries); /* kept, not dispatched */
        CHECK_EQ(lft_load(&c.bytes), expect);
        lft_store(&c.suspended, 0);
        CHECK_EQ(lf_reactor_reactivate(&r, &c.h), 0);
        expect += (long long)(n1 + n2);
        AWAIT(lft_load(&c.bytes) == expect, "reactivation to deliver the kept data");
    }
    /* a timer that expires while the handler is deactivated is kept the same way */
    {
        lf_timer t;
        struct lf_reactor_stats s0, s1;
        long e0 = lft_load(&c.entries);
        lf_timer_init(&t);
        CHECK_EQ(lf_reactor_stats(&r, &s0), 0);
        CHECK_EQ(lf_reactor_deactivate(&r, &c.h), 0);
        lft_store(&c.suspended, 1);
        CHECK_EQ(lf_reactor_timer_start(&r, &t, &c.h, 2 * 1000000LL, 0), 0);
        do { /* the expiry happened (counted), but no dispatch may follow it yet */
            lft_sleep_ms(1);
            CHECK_EQ(lf_reactor_stats(&r, &s1), 0);
        } while (s1.timers == s0.timers);
        lft_sleep_ms(10);
        CHECK_EQ(lft_load(&c.entries), e0);
        lft_store(&c.suspended, 0);
        CHECK_EQ(lf_reactor_reactivate(&r, &c.h), 0);
        AWAIT(lft_load(&c.entries) == e0 + 1, "reactivation to deliver the kept expiry");
        CHECK_EQ(lft_load(&c.last_ev), LF_EV_TIMEOUT);
    }
    /* reactivating an active, idle handler with nothing pending dispatches nothing */
    AWAIT(lft_load(&c.inside) == 0, "the handler to go idle");
    entries = lft_load(&c.entries);
    CHECK_EQ(lf_reactor_reactivate(&r, &c.h), 0);
    lft_sleep_ms(20);
    CHECK_EQ(lft_load(&c.entries), entries);
    /* and it still works normally afterwards */
    put(&c, "zz", 2);
    AWAIT(lft_load(&c.bytes) == expect + 2, "a normal dispatch after all that");
    down();
    CHECK_EQ(lft_load(&c.closed), 1);
    close(c.peer);
}

/* ------------------------------------------------------------------ B */

static int b_event(lf_handler *lh, int fd, uint32_t ev)
{
    rh *c = RH(lh);
    /* 'inside' before 'entries': a dispatch that sees the next one counted in
     * 'entries' knows that one is already inside */
    int n = lft_add(&c->inside, 1) + 1;
    long my = lft_add(&c->entries, 1L) + 1;
    char m;
    ssize_t got;

    CHECK_EQ(ev, LF_EV_READ);
    got = read(fd, &m, 1); /* a datagram: exactly one message */
    if (got < 0) {
        CHECK(errno == EAGAIN || errno == EWOULDBLOCK);
        CHECK(!"readable handle without a message"); /* never seen; would confuse B */
    }
    CHECK_EQ(got, 1);
    if (n > 1)
        lft_add(&c->overlaps, 1L);
    if (c->mode == MODE_RESUMED) {
        if (m == 'A') {
            CHECK_EQ(n, 1);
            lft_store(&c->first_tid, my_tid);
            /* hand the handle back while still inside ... */
            CHECK_EQ(lf_reactor_reactivate(&r, lh), 0);
            /* ... so 'B', already queued in the socket, can be dispatched by another
             * thread now; wait until that dispatch has started */
            AWAIT(lft_load(&c->entries) > my,
                  "LF_RESUMED: a second dispatch of the handler while the first is inside");
        } else {
            CHECK_EQ(m, 'B');
            CHECK_EQ(n, 2); /* 'A' is still inside, waiting for us */
            CHECK(my_tid != lft_load(&c->first_tid));
            CHECK_EQ(lf_reactor_reactivate(&r, lh), 0);
        }
        lft_add(&c->processed, 1L);
        CHECK(lft_add(&c->inside, -1) >= 1);
        lft_progress();
        return LF_RESUMED;
    }
    /* LF_KEEP: the handle stays ours until we return, although 'B' is waiting in the
     * socket and two threads are idle */
    CHECK_EQ(n, 1);
    if (m == 'A') {
        for (int i = 0; i < 5; i++) {
            lft_sleep_ms(1);
            CHECK_EQ(lft_load(&c->inside), 1);
            CHECK_EQ(lft_load(&c->entries), my);
        }
    }
    lft_add(&c->processed, 1L);
    CHECK_EQ(lft_add(&c->inside, -1), 1);
    lft_progress();
    return LF_KEEP;
}

static long part_b(int mode)
{
    static rh c;
    const int rounds = 20;
    long overlaps;

    up();
    reg(&c, SOCK_DGRAM, b_event);
    c.mode = mode;
    for (int round = 0; round < rounds; round++) {
        /* both messages are there before (or just after) the first dispatch */
        put(&c, "A", 1);
        put(&c, "B", 1);
        /* and both have left: a 'B' that reactivated early may still be inside */
        AWAIT(lft_load(&c.processed) == 2L * (round + 1) && lft_load(&c.inside) == 0,
              "both messages to be handled");
    }
    overlaps = lft_load(&c.overlaps);
    if (mode == MODE_RESUMED)
        CHECK_EQ(overlaps, rounds); /* every 'B' ran while its 'A' was inside */
    else
        CHECK_EQ(overlaps, 0);
    CHECK_EQ(lft_load(&c.entries), 2L * rounds);
    down();
    close(c.peer);
    return overlaps;
}

/* ------------------------------------------------------------------ C */

static int c_event(lf_handler *lh, int fd, uint32_t ev)
{
    rh *c = RH(lh);
    enter(c, ev);
    if (ev & (LF_EV_READ | LF_EV_CLOSE))
        lft_add(&c->bytes, drain(fd));
    if (lft_load(&c->hold)) {
        lft_store(&c->hold, 0);
        lft_store(&c->entered, 1);
        AWAIT(lft_load(&c->gate), "the test to let the busy dispatch go");
        lft_store(&c->returned, 1); /* nothing of ours runs after this but leave() */
    } else if (ev & LF_EV_NOTIFY) {
        /* a notification posted while the busy dispatch ran comes after it */
        CHECK(lft_load(&c->returned));
    }
    leave(c);
    return LF_KEEP;
}

static void busy_round(rh *c, int by_io, int notifies)
{
    long e0 = lft_load(&c->entries), n0 = lft_load(&c->notes);
    struct lf_reactor_stats s0, s1;

    AWAIT(lft_load(&c->inside) == 0, "the handler to go idle");
    lft_store(&c->entered, 0);
    lft_store(&c->gate, 0);
    lft_store(&c->returned, 0);
    lft_store(&c->hold, 1);
    if (by_io)
        put(c, "x", 1);
    else
        CHECK_EQ(lf_reactor_notify(&r, &c->h, LF_EV_NOTIFY), 0);
    AWAIT(lft_load(&c->entered), "the busy dispatch to start");
    CHECK_EQ(lf_reactor_stats(&r, &s0), 0);
    for (int i = 0; i < notifies; i++)
        CHECK_EQ(lf_reactor_notify(&r, &c->h, LF_EV_NOTIFY), 0); /* returns: no wait */
    CHECK_EQ(lf_reactor_stats(&r, &s1), 0);
    CHECK(s1.notified - s0.notified >= (unsigned long long)notifies);
    CHECK(s1.deferred - s0.deferred >= (unsigned long long)notifies); /* all coalesced */
    lft_sleep_ms(20); /* two idle threads: every chance to run it concurrently */
    CHECK_EQ(lft_load(&c->entries), e0 + 1);
    lft_store(&c->gate, 1);
    AWAIT(lft_load(&c->entries) == e0 + 2, "the coalesced notification after the busy dispatch");
    lft_sleep_ms(20);
    /* all of them in one dispatch, which came after the last notify call */
    CHECK_EQ(lft_load(&c->entries), e0 + 2);
    CHECK_EQ(lft_load(&c->last_ev), LF_EV_NOTIFY);
    CHECK_EQ(lft_load(&c->notes), n0 + (by_io ? 1 : 2));
}

static void *c_spammer(void *arg)
{
    rh *c = (rh *)arg;
    for (long i = 0; i < 100000; i++) {
        CHECK_EQ(lf_reactor_notify(&r, &c->h, LF_EV_NOTIFY), 0);
        if (i % 4096 == 0)
            lft_progress(); /* a notify that blocks stalls this: the watchdog fires */
    }
    return NULL;
}

/* C3: a stream of notifies (and some I/O) against a handler that takes its time */
static LFT_ATOMIC(unsigned long) c3_spin;

static int c3_event(lf_handler *lh, int fd, uint32_t ev)
{
    rh *c = RH(lh);
    double until;
    enter(c, ev);
    if (ev & LF_EV_NOTIFY) {
        /* posted is stored before each notify: whatever this dispatch consumed was
         * posted no later than what we read here */
        long seen = lft_load(&c->posted);
        if (seen > lft_load(&c->max_seen))
            lft_store(&c->max_seen, seen); /* one thread inside: no race */
    }
    if (ev & (LF_EV_READ | LF_EV_CLOSE))
        lft_add(&c->bytes, drain(fd));
    until = lft_now() + (double)(lft_add(&c3_spin, 7919UL) % 31) * 1e-6;
    while (lft_now() < until) {
    }
    leave(c);
    return LF_KEEP;
}

static long long c3_written;

static void *c3_notifier(void *arg)
{
    rh *c = (rh *)arg;
    long n = (long)lft_scaled(20000);
    for (long i = 1; i <= n; i++) {
        lft_store(&c->posted, i);
        CHECK_EQ(lf_reactor_notify(&r, &c->h, LF_EV_NOTIFY), 0);
        if (i % 64 == 0) {
            put(c, "y", 1);
            c3_written++;
        }
        if (i % 1024 == 0)
            lft_progress();
    }
    return NULL;
}

static void part_c(long *dispatches, long *notifies)
{
    static rh c, s;
    pthread_t t;
    long e0;
    long n;

    up();
    reg(&c, SOCK_STREAM, c_event);
    CHECK_EQ(lf_reactor_notify(&r, &c.h, 0), EINVAL);
    CHECK_EQ(lf_reactor_notify(&r, &c.h, 0x1000u), EINVAL);
    /* C1: busy with a notification, then with I/O */
    busy_round(&c, 0, 1000);
    busy_round(&c, 1, 10);
    busy_round(&c, 0, 1);

    /* C2: 100000 notifies to a deactivated handler all return at once */
    AWAIT(lft_load(&c.inside) == 0, "the handler to go idle");
    e0 = lft_load(&c.entries);
    CHECK_EQ(lf_reactor_deactivate(&r, &c.h), 0);
    lft_store(&c.suspended, 1);
    CHECK(pthread_create(&t, NULL, c_spammer, &c) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    lft_sleep_ms(10);
    CHECK_EQ(lft_load(&c.entries), e0);
    lft_store(&c.suspended, 0);
    CHECK_EQ(lf_reactor_reactivate(&r, &c.h), 0);
    AWAIT(lft_load(&c.entries) == e0 + 1, "the kept notification after reactivation");
    lft_sleep_ms(20);
    CHECK_EQ(lft_load(&c.entries), e0 + 1); /* 100000 notifies, one dispatch */
    CHECK_EQ(lft_load(&c.last_ev), LF_EV_NOTIFY);

    /* C3 */
    reg(&s, SOCK_STREAM, c3_event);
    n = (long)lft_scaled(20000);
    CHECK(pthread_create(&t, NULL, c3_notifier, &s) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    /* a dispatch started after the last notify was posted, so it was not lost */
    AWAIT(lft_load(&s.max_seen) == n, "a dispatch that saw the last notify");
    AWAIT(lft_load(&s.bytes) == c3_written, "the stream's I/O");
    CHECK(lft_load(&s.notes) <= n); /* each dispatch consumed at least one notify */
    *dispatches = lft_load(&s.entries);
    *notifies = n;
    down();
    close(c.peer);
    close(s.peer);
}

/* ------------------------------------------------------------------ Q
 * A notification makes the handler own a dispatch that waits in the ready queue.
 * Deactivating it then must still keep that dispatch from starting: "no dispatch may
 * start" has no exception for one that was queued, and if it started it would also
 * carry data written after the deactivation (a handler reads its socket whenever it
 * runs). Deterministic: one thread, handle_events, no race involved. */

static void part_q(void)
{
    static rh q;
    struct timespec dl;
    int turns = 0;

    /* no runner threads: this thread turns the reactor, one event per call */
    CHECK_EQ(lf_reactor_init(&r), 0);
    reg(&q, SOCK_STREAM, c_event);
    CHECK_EQ(lf_reactor_notify(&r, &q.h, LF_EV_NOTIFY), 0); /* queued, not yet run */
    CHECK_EQ(lf_reactor_deactivate(&r, &q.h), 0);
    lft_store(&q.suspended, 1);
    put(&q, "late", 4); /* written after the deactivation */
    for (int i = 0; i < 3; i++) {
        int rc;
        CHECK_EQ(lf_deadline_in(&dl, 20 * 1000000LL), 0);
        rc = lf_reactor_handle_events(&r, &dl);
        CHECK(rc == 0 || rc == ETIMEDOUT);
    }
    CHECK_EQ(lft_load(&q.entries), 0);
    lft_store(&q.suspended, 0);
    lft_store(&q.returned, 1); /* c_event: no busy dispatch in this part */
    CHECK_EQ(lf_reactor_reactivate(&r, &q.h), 0);
    /* both the kept notification and the kept data arrive now */
    while (lft_load(&q.notes) < 1 || lft_load(&q.bytes) < 4) {
        CHECK(++turns <= 20);
        CHECK_EQ(lf_deadline_in(&dl, 1000 * 1000000LL), 0);
        CHECK_EQ(lf_reactor_handle_events(&r, &dl), 0);
    }
    CHECK_EQ(lf_reactor_destroy(&r), 0);
    close(q.peer);
}

/* ------------------------------------------------------------------ S
 * Notifications must not starve I/O. Handlers that re-post a notification to
 * themselves on every dispatch ("continue later"), one more than there are threads,
 * keep the ready queue from ever draining; another handler's socket that becomes
 * readable must still be dispatched, however long the loops go on. */

#define S_LOOPS (RUNNERS + 1)
static LFT_ATOMIC(int) s_stop;
static LFT_ATOMIC(long) s_spins;

static int s_loop_event(lf_handler *lh, int fd, uint32_t ev)
{
    (void)fd;
    CHECK(ev & LF_EV_NOTIFY);
    lft_add(&s_spins, 1L);
    if (!lft_load(&s_stop)) {
        int rc = lf_reactor_notify(&r, lh, LF_EV_NOTIFY);
        CHECK(rc == 0 || (rc == ECANCELED && lft_load(&s_stop))); /* stopped meanwhile */
    }
    return LF_KEEP;
}

static void part_s(void)
{
    static rh loop[S_LOOPS], c;

    up();
    for (int i = 0; i < S_LOOPS; i++)
        reg(&loop[i], SOCK_STREAM, s_loop_event);
    reg(&c, SOCK_STREAM, a_event);
    for (int i = 0; i < S_LOOPS; i++)
        CHECK_EQ(lf_reactor_notify(&r, &loop[i].h, LF_EV_NOTIFY), 0);
    AWAIT(lft_load(&s_spins) > 1000, "the notification loops to run");
    put(&c, "io", 2); /* readable from now on */
    AWAIT(lft_load(&c.bytes) == 2, "a readable socket to be dispatched while other "
                                   "handlers keep the ready queue busy (I/O starvation)");
    lft_store(&s_stop, 1);
    down();
    for (int i = 0; i < S_LOOPS; i++)
        close(loop[i].peer);
    close(c.peer);
}

int main(void)
{
    long resumed, kept, dispatches, notifies;

    lft_start("t_reactor_resume", 30);
    part_a();
    lft_progress();
    resumed = part_b(MODE_RESUMED);
    lft_progress();
    kept = part_b(MODE_KEEP);
    lft_progress();
    part_c(&dispatches, &notifies);
    lft_progress();
    part_q();
    lft_progress();
    part_s();
    printf("t_reactor_resume %s/%s: deactivated data kept until reactivate; LF_RESUMED "
           "overlapped %ld/20, LF_KEEP %ld/20; notify coalesced (%ld dispatches for %ld "
           "notifies), never blocks, never concurrent, does not starve I/O\n",
           lf_reactor_backend_name(), lf_promote_name(), resumed, kept, dispatches, notifies);
    return 0;
}
