/* Timers: caller-owned lf_timer records armed with lf_reactor_timer_start.
 *
 *   A  one-shot timers fire exactly once and never before their time (measured with
 *      CLOCK_MONOTONIC against a start time taken before the start call); an expired
 *      one-shot is no longer armed (cancel: ENOENT); restarting an armed timer moves
 *      it (the old deadline never fires); a cancelled timer never fires.
 *   B  a periodic timer fires again and again, the k-th expiry never before
 *      after + (k-1) * period, until it is cancelled; after the cancel returned only
 *      what was already under way may still arrive (from outside: one dispatch in
 *      flight plus one coalesced pending expiry; from inside the handler: at most the
 *      one pending expiry).
 *   C  200 timers with random deadlines, some cancelled and some restarted, handled
 *      by ONE thread through lf_reactor_handle_events, fire in deadline order, each
 *      exactly once, one per turn. Every timer has its own handler, because several
 *      timers of one handler coalesce into one LF_EV_TIMEOUT dispatch.
 *   D  a timer started by another thread while the only leader is blocked with no
 *      timer at all (it would sleep forever), or with only a far-away one, fires:
 *      the start must wake the leader. A lost wake-up hangs (AWAIT or the watchdog).
 *   E  a timer and I/O of the same handler never run at once: a 1 ms periodic timer
 *      and a writer flooding the handler's socket, three threads in lf_reactor_run,
 *      and an 'inside' counter in the handler.
 *   F  removing a handler cancels its timers: cancel afterwards says ENOENT, start
 *      on the removed handler says ENOENT, nothing but the one dispatch that may
 *      already have been in flight runs after the removal returned, nothing at all
 *      after handle_close; the timer records are reusable on another handler. Also
 *      removal from inside (LF_REMOVE) with a periodic timer armed.
 *   G  (last) a timer fires although the ready queue never drains: three handlers
 *      re-post a notification to themselves on every dispatch ("continue later"),
 *      two threads turn the reactor. Expiry must not wait for an idle moment.
 *
 * No timing goals: only lower bounds ("not before its time") and upper bounds that
 * are hang detectors (AWAIT's 10 s, the watchdog). */
#include "../lf_reactor.h"
#include "lf_test.h"

#include <sys/socket.h>

#define MS 1000000LL

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* One handler with a timer (or three) and its own counters. */
typedef struct th {
    lf_handler h;
    lf_timer t, t2, t3;
    int peer;                      /* the other end of the handler's pipe/socket */
    int idx;
    long long lo_ns;               /* the timer's deadline lies in [lo_ns, hi_ns] */
    long long hi_ns;
    int armed;                     /* C: expected to fire */
    LFT_ATOMIC(int) inside;
    LFT_ATOMIC(long) fires;        /* LF_EV_TIMEOUT dispatches */
    LFT_ATOMIC(long) io;           /* LF_EV_READ dispatches */
    LFT_ATOMIC(long long) fire_ns; /* when the latest one came */
    LFT_ATOMIC(int) after_mark;    /* dispatches that started after mark was set */
    LFT_ATOMIC(int) mark;          /* set by the test right after a cancel/remove */
    LFT_ATOMIC(int) closed;
} th;

#define TH(lh) ((th *)(void *)(lh))

static void on_close(lf_handler *lh)
{
    th *c = TH(lh);
    CHECK_EQ(lft_load(&c->inside), 0); /* after the last dispatch left */
    CHECK_EQ(lft_add(&c->closed, 1), 0); /* exactly once */
}

/* A handler on the read end of a pipe whose write end stays open and unused: the
 * handle never becomes ready, so every dispatch it gets comes from its timers. */
static void reg_pipe(lf_reactor *r, th *c, int (*fn)(lf_handler *, int, uint32_t))
{
    int p[2];
    CHECK(pipe(p) == 0);
    CHECK(fcntl(p[0], F_SETFL, O_NONBLOCK) == 0);
    c->peer = p[1];
    c->h.handle_event = fn;
    c->h.handle_close = on_close;
    lf_timer_init(&c->t);
    lf_timer_init(&c->t2);
    lf_timer_init(&c->t3);
    CHECK_EQ(lf_reactor_register(r, &c->h, p[0], LF_EV_READ), 0);
}

static void *runner(void *arg)
{
    CHECK_EQ(lf_reactor_run((lf_reactor *)arg, NULL), ECANCELED);
    return NULL;
}

static void start_runners(lf_reactor *r, pthread_t *t, int n)
{
    for (int i = 0; i < n; i++)
        CHECK(pthread_create(&t[i], NULL, runner, r) == 0);
}

static void stop_runners(lf_reactor *r, pthread_t *t, int n)
{
    CHECK_EQ(lf_reactor_stop(r), 0);
    for (int i = 0; i < n; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
}

/* ------------------------------------------------------------------ A: one-shot */

static int a_event(lf_handler *lh, int fd, uint32_t ev)
{
    th *c = TH(lh);
    long long now = now_ns();
    (void)fd;
    CHECK_EQ(lft_add(&c->inside, 1), 0);
    CHECK_EQ(ev, LF_EV_TIMEOUT); /* the pipe is never readable: only the timer */
    lft_add(&c->fires, 1L);
    lft_store(&c->fire_ns, now); /* the latest one */
    lft_add(&c->inside, -1);
    lft_progress();
    return LF_KEEP;
}

static void part_a(void)
{
    static const long long delay[] = {0, 1 * MS, 15 * MS, 40 * MS};
    enum { N = sizeof delay / sizeof delay[0] };
    static th c[N], moved, gone, pushed, pushed_gone, pulled;
    lf_reactor r;
    pthread_t run[2];
    long long t0[N], t_moved, t_pushed, t_pulled;

    CHECK_EQ(lf_reactor_init(&r), 0);
    for (int i = 0; i < N; i++)
        reg_pipe(&r, &c[i], a_event);
    reg_pipe(&r, &moved, a_event);
    reg_pipe(&r, &gone, a_event);
    reg_pipe(&r, &pushed, a_event);
    reg_pipe(&r, &pushed_gone, a_event);
    reg_pipe(&r, &pulled, a_event);
    CHECK_EQ(lf_reactor_timer_start(&r, &c[0].t, &c[0].h, -1, 0), EINVAL);
    CHECK_EQ(lf_reactor_timer_start(&r, &c[0].t, &c[0].h, 0, -1), EINVAL);
    CHECK_EQ(lf_reactor_timer_cancel(&r, &c[0].t), ENOENT); /* never armed */
    start_runners(&r, run, 2);

    for (int i = 0; i < N; i++) {
        t0[i] = now_ns(); /* before the start: the real deadline is no earlier */
        CHECK_EQ(lf_reactor_timer_start(&r, &c[i].t, &c[i].h, delay[i], 0), 0);
    }
    /* restart an armed timer: the hour-long deadline is replaced by 5 ms */
    CHECK_EQ(lf_reactor_timer_start(&r, &moved.t, &moved.h, 3600LL * 1000 * MS, 0), 0);
    t_moved = now_ns();
    CHECK_EQ(lf_reactor_timer_start(&r, &moved.t, &moved.h, 5 * MS, 0), 0);
    /* cancel an armed one before it is due: it must never fire */
    CHECK_EQ(lf_reactor_timer_start(&r, &gone.t, &gone.h, 10 * MS, 0), 0);
    CHECK_EQ(lf_reactor_timer_cancel(&r, &gone.t), 0);
    CHECK_EQ(lf_reactor_timer_cancel(&r, &gone.t), ENOENT);
    /* a one-shot pushed later again and again (an idle timeout restarted on every
     * read): it fires once, and not before the last restart's time, though its
     * first time passes meanwhile */
    CHECK_EQ(lf_reactor_timer_start(&r, &pushed.t, &pushed.h, 4 * MS, 0), 0);
    t_pushed = now_ns();
    for (int i = 0; i < 12; i++) {
        lft_sleep_ms(1);
        t_pushed = now_ns();
        CHECK_EQ(lf_reactor_timer_start(&r, &pushed.t, &pushed.h, 4 * MS, 0), 0);
    }
    /* pushed later, then cancelled: never fires */
    CHECK_EQ(lf_reactor_timer_start(&r, &pushed_gone.t, &pushed_gone.h, 2 * MS, 0), 0);
    CHECK_EQ(lf_reactor_timer_start(&r, &pushed_gone.t, &pushed_gone.h, 8 * MS, 0), 0);
    CHECK_EQ(lf_reactor_timer_cancel(&r, &pushed_gone.t), 0);
    /* pushed later, then pulled earlier than its first time: the earlier one holds */
    CHECK_EQ(lf_reactor_timer_start(&r, &pulled.t, &pulled.h, 30 * MS, 0), 0);
    CHECK_EQ(lf_reactor_timer_start(&r, &pulled.t, &pulled.h, 3600LL * 1000 * MS, 0), 0);
    t_pulled = now_ns();
    CHECK_EQ(lf_reactor_timer_start(&r, &pulled.t, &pulled.h, 3 * MS, 0), 0);

    for (int i = 0; i < N; i++)
        AWAIT(lft_load(&c[i].fires) >= 1, "a one-shot timer to fire");
    AWAIT(lft_load(&moved.fires) >= 1, "the restarted timer to fire");
    AWAIT(lft_load(&pushed.fires) >= 1, "the pushed timer to fire");
    AWAIT(lft_load(&pulled.fires) >= 1, "the pulled timer to fire");
    /* give a duplicate expiry, or the cancelled timer, every chance to show up */
    lft_sleep_ms(60);
    for (int i = 0; i < N; i++) {
        CHECK_EQ(lft_load(&c[i].fires), 1);
        CHECK(lft_load(&c[i].fire_ns) - t0[i] >= delay[i]); /* not before its time */
        CHECK_EQ(lf_reactor_timer_cancel(&r, &c[i].t), ENOENT); /* expired: not armed */
    }
    CHECK_EQ(lft_load(&moved.fires), 1);
    CHECK(lft_load(&moved.fire_ns) - t_moved >= 5 * MS);
    CHECK_EQ(lft_load(&gone.fires), 0);
    CHECK_EQ(lft_load(&pushed.fires), 1);
    CHECK(lft_load(&pushed.fire_ns) - t_pushed >= 4 * MS);
    CHECK_EQ(lft_load(&pushed_gone.fires), 0);
    CHECK_EQ(lft_load(&pulled.fires), 1);
    CHECK(lft_load(&pulled.fire_ns) - t_pulled >= 3 * MS);

    /* an expired one-shot record can be started again */
    t0[0] = now_ns();
    CHECK_EQ(lf_reactor_timer_start(&r, &c[0].t, &c[0].h, 2 * MS, 0), 0);
    AWAIT(lft_load(&c[0].fires) >= 2, "a re-used one-shot timer to fire");
    CHECK(lft_load(&c[0].fire_ns) - t0[0] >= 2 * MS);

    stop_runners(&r, run, 2);
    CHECK_EQ(lf_reactor_destroy(&r), 0);
    for (int i = 0; i < N; i++) {
        CHECK_EQ(lft_load(&c[i].closed), 1);
        close(c[i].peer);
    }
    close(moved.peer);
    close(gone.peer);
    close(pushed.peer);
    close(pushed_gone.peer);
    close(pulled.peer);
}

/* ------------------------------------------------------------------ B: periodic */

static long long b_t0;
static lf_reactor *b_r; /* for the handler that cancels its own timer */
static const long long b_after = 5 * MS, b_period = 2 * MS;

static int b_event(lf_handler *lh, int fd, uint32_t ev)
{
    th *c = TH(lh);
    int late = lft_load(&c->mark); /* read first: did this dispatch start after? */
    long long now = now_ns();
    long k;
    (void)fd;
    CHECK_EQ(lft_add(&c->inside, 1), 0);
    CHECK_EQ(ev, LF_EV_TIMEOUT);
    k = lft_add(&c->fires, 1L) + 1;
    /* the k-th dispatch consumed at least k expiries, and expiry k is due at
     * after + (k-1) * period at the earliest (a late timer is pushed back, never
     * forward) */
    CHECK(now - b_t0 >= b_after + (k - 1) * b_period);
    if (late)
        lft_add(&c->after_mark, 1);
    lft_store(&c->fire_ns, now);
    lft_add(&c->inside, -1);
    lft_progress();
    return LF_KEEP;
}

/* cancels its own timer on the 10th tick */
static int b_self_event(lf_handler *lh, int fd, uint32_t ev)
{
    th *c = TH(lh);
    int late = lft_load(&c->mark);
    (void)fd;
    CHECK_EQ(lft_add(&c->inside, 1), 0);
    CHECK_EQ(ev, LF_EV_TIMEOUT);
    if (late)
        lft_add(&c->after_mark, 1);
    if (lft_add(&c->fires, 1L) + 1 == 10) {
        CHECK_EQ(lf_reactor_timer_cancel(b_r, &c->t), 0);
        lft_store(&c->mark, 1);
    }
    lft_add(&c->inside, -1);
    lft_progress();
    return LF_KEEP;
}

static void part_b(void)
{
    static th c, self;
    lf_reactor r;
    pthread_t run[2];
    long before;

    CHECK_EQ(lf_reactor_init(&r), 0);
    b_r = &r;
    reg_pipe(&r, &c, b_event);
    reg_pipe(&r, &self, b_self_event);
    start_runners(&r, run, 2);

    b_t0 = now_ns();
    CHECK_EQ(lf_reactor_timer_start(&r, &c.t, &c.h, b_after, b_period), 0);
    CHECK_EQ(lf_reactor_timer_start(&r, &self.t, &self.h, 1 * MS, 1 * MS), 0);
    AWAIT(lft_load(&c.fires) >= 20, "a periodic timer to fire 20 times");
    /* still armed while periodic: cancel succeeds exactly once */
    CHECK_EQ(lf_reactor_timer_cancel(&r, &c.t), 0);
    lft_store(&c.mark, 1);
    CHECK_EQ(lf_reactor_timer_cancel(&r, &c.t), ENOENT);
    before = lft_load(&c.fires);
    /* 50 ms is 25 periods: a timer that kept running would show up many times */
    lft_sleep_ms(50);
    /* after the cancel returned, only a dispatch already in flight (its expiry
     * consumed) and one coalesced pending expiry may still arrive */
    CHECK(lft_load(&c.after_mark) <= 2);
    CHECK(lft_load(&c.fires) - before <= 2);

    AWAIT(lft_load(&self.mark) == 1, "the handler to cancel its own timer");
    lft_sleep_ms(30);
    /* cancelled inside a dispatch, which owns the handler: at most the one expiry
     * that was posted (coalesced) while it ran is still delivered */
    CHECK(lft_load(&self.after_mark) <= 1);
    CHECK(lft_load(&self.fires) <= 11);
    CHECK_EQ(lf_reactor_timer_cancel(&r, &self.t), ENOENT);

    stop_runners(&r, run, 2);
    CHECK_EQ(lf_reactor_destroy(&r), 0);
    close(c.peer);
    close(self.peer);
}

/* ------------------------------------------------------------------ C: order */

#define C_N 200
static th c_h[C_N];
static int c_log[C_N + 1];
static int c_logged;

static int c_event(lf_handler *lh, int fd, uint32_t ev)
{
    th *c = TH(lh);
    long long now = now_ns();
    (void)fd;
    CHECK_EQ(ev, LF_EV_TIMEOUT);
    CHECK(c->armed);                    /* a cancelled timer never fires */
    CHECK_EQ(lft_add(&c->fires, 1L), 0); /* exactly once */
    CHECK(now >= c->lo_ns);             /* not before its time */
    CHECK(c_logged < C_N);
    c_log[c_logged++] = c->idx;
    lft_progress();
    return LF_KEEP;
}

static void c_arm(lf_reactor *r, th *c, unsigned long long *rnd, long long lo_ms)
{
    /* microsecond-grained random delays: ties are (almost) impossible, and the
     * start order is unrelated to the deadline order */
    long long after = lo_ms * MS + (long long)(lft_rand(rnd) % 100000) * 1000;
    c->lo_ns = now_ns() + after;
    CHECK_EQ(lf_reactor_timer_start(r, &c->t, &c->h, after, 0), 0);
    c->hi_ns = now_ns() + after;
    c->armed = 1;
}

static void part_c(void)
{
    lf_reactor r;
    unsigned long long rnd = 0x9e3779b97f4a7c15ULL;
    int expected = 0, turns = 0;
    struct timespec dl;
    long long max_lo = 0;

    CHECK_EQ(lf_reactor_init(&r), 0);
    for (int i = 0; i < C_N; i++) {
        c_h[i].idx = i;
        reg_pipe(&r, &c_h[i], c_event);
    }
    /* No thread turns the reactor yet, so nothing expires while we set up: every
     * timer sits in the heap, and the first turns take them out in one go. */
    for (int i = 0; i < C_N; i++)
        c_arm(&r, &c_h[i], &rnd, 10);
    for (int k = 0; k < 20; k++) { /* cancel some: heap removal from anywhere */
        th *c = &c_h[lft_rand(&rnd) % C_N];
        if (c->armed) {
            CHECK_EQ(lf_reactor_timer_cancel(&r, &c->t), 0);
            c->armed = 0;
        }
    }
    for (int k = 0; k < 30; k++) /* restart some: earlier or later than before */
        c_arm(&r, &c_h[lft_rand(&rnd) % C_N], &rnd, 0);
    for (int i = 0; i < C_N; i++)
        expected += c_h[i].armed;

    while (c_logged < expected) {
        int before = c_logged;
        CHECK_EQ(lf_reactor_handle_events(&r, NULL), 0);
        turns++;
        CHECK_EQ(c_logged, before + 1); /* one event per turn, and it is a timer */
    }
    /* nothing else is armed: a turn now ends at its deadline */
    CHECK_EQ(lf_deadline_in(&dl, 30 * MS), 0);
    CHECK_EQ(lf_reactor_handle_events(&r, &dl), ETIMEDOUT);
    CHECK_EQ(c_logged, expected);

    /* Deadline order. Timer j's deadline lies in [lo_j, hi_j]; if a timer logged
     * after i certainly had an earlier deadline (hi_j < lo_i), the order is wrong. */
    for (int k = 0; k < c_logged; k++) {
        th *c = &c_h[c_log[k]];
        if (c->hi_ns < max_lo) {
            fprintf(stderr, "timer %d (due by %lld) fired after one due at %lld\n", c->idx,
                    c->hi_ns, max_lo);
            CHECK(!"timers fired out of deadline order");
        }
        if (c->lo_ns > max_lo)
            max_lo = c->lo_ns;
    }
    for (int i = 0; i < C_N; i++)
        CHECK_EQ(lft_load(&c_h[i].fires), c_h[i].armed);
    CHECK_EQ(lf_reactor_destroy(&r), 0);
    for (int i = 0; i < C_N; i++)
        close(c_h[i].peer);
}

/* ------------------------------------------------------------------ D: wake on start */

static void await_blocked_leader(lf_reactor *r)
{
    struct lf_reactor_stats s;
    for (;;) {
        CHECK_EQ(lf_reactor_stats(r, &s), 0);
        if (s.pool.leader == 1 && s.pool.processing == 0)
            return; /* the only thread is back in the wait, about to block or blocked */
        lft_sleep_ms(1);
    }
}

static void part_d(void)
{
    static th c, far;
    lf_reactor r;
    pthread_t run[1];
    long long t0;

    CHECK_EQ(lf_reactor_init(&r), 0);
    reg_pipe(&r, &c, a_event);
    reg_pipe(&r, &far, a_event);
    start_runners(&r, run, 1);
    /* no timer at all: the leader waits without a timeout */
    for (int round = 0; round < 20; round++) {
        await_blocked_leader(&r);
        lft_sleep_ms((long)(round % 5) * 2); /* round 0: race the leader going to sleep */
        t0 = now_ns();
        CHECK_EQ(lf_reactor_timer_start(&r, &c.t, &c.h, 1 * MS, 0), 0);
        AWAIT(lft_load(&c.fires) == round + 1,
              "a timer started while the leader slept forever (lost wake-up)");
        CHECK(lft_load(&c.fire_ns) - t0 >= 1 * MS);
    }
    /* only a far timer: the leader sleeps until it; a nearer one must cut that short */
    CHECK_EQ(lf_reactor_timer_start(&r, &far.t, &far.h, 3600LL * 1000 * MS, 0), 0);
    for (int round = 0; round < 10; round++) {
        await_blocked_leader(&r);
        lft_sleep_ms((long)(round % 5) * 2);
        CHECK_EQ(lf_reactor_timer_start(&r, &c.t, &c.h, 1 * MS, 0), 0);
        AWAIT(lft_load(&c.fires) == 20 + round + 1,
              "a timer earlier than the one the leader sleeps until (lost wake-up)");
    }
    CHECK_EQ(lft_load(&far.fires), 0);
    CHECK_EQ(lf_reactor_timer_cancel(&r, &far.t), 0);
    stop_runners(&r, run, 1);
    CHECK_EQ(lf_reactor_destroy(&r), 0);
    close(c.peer);
    close(far.peer);
}

/* ------------------------------------------------------------------ E: timer vs I/O */

static LFT_ATOMIC(int) e_stop;
static LFT_ATOMIC(long long) e_written, e_read;
static LFT_ATOMIC(long) e_both;

static int e_event(lf_handler *lh, int fd, uint32_t ev)
{
    th *c = TH(lh);
    double until;
    /* the promise under test: no other thread is inside this handler */
    CHECK_EQ(lft_add(&c->inside, 1), 0);
    if (ev & LF_EV_TIMEOUT)
        lft_add(&c->fires, 1L);
    if (ev & LF_EV_READ) {
        char buf[256];
        ssize_t n = read(fd, buf, sizeof buf); /* a little per turn: many dispatches */
        CHECK(n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)));
        if (n > 0)
            lft_add(&e_read, (long long)n);
        lft_add(&c->io, 1L);
    }
    if ((ev & LF_EV_TIMEOUT) && (ev & LF_EV_READ))
        lft_add(&e_both, 1L);
    /* stay a little while, so that an overlapping dispatch would be caught inside */
    until = lft_now() + 20e-6;
    while (lft_now() < until) {
    }
    CHECK_EQ(lft_add(&c->inside, -1), 1);
    lft_progress();
    return LF_KEEP;
}

static void *e_writer(void *arg)
{
    th *c = (th *)arg;
    char buf[64];
    memset(buf, 'x', sizeof buf);
    while (!lft_load(&e_stop)) {
        /* blocking: when the socket is full we wait for the handler to drain it */
        ssize_t n = write(c->peer, buf, sizeof buf);
        CHECK(n > 0);
        lft_add(&e_written, (long long)n);
    }
    return NULL;
}

static void part_e(void)
{
    static th c;
    lf_reactor r;
    pthread_t run[3], wr;
    int sv[2];
    long long need_ticks = lft_scaled(200), need_io = lft_scaled(4000);

    CHECK_EQ(lf_reactor_init(&r), 0);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    CHECK(fcntl(sv[0], F_SETFL, O_NONBLOCK) == 0);
    c.peer = sv[1];
    c.h.handle_event = e_event;
    c.h.handle_close = on_close;
    lf_timer_init(&c.t);
    CHECK_EQ(lf_reactor_register(&r, &c.h, sv[0], LF_EV_READ), 0);
    CHECK_EQ(lf_reactor_timer_start(&r, &c.t, &c.h, 1 * MS, 1 * MS), 0);
    start_runners(&r, run, 3);
    CHECK(pthread_create(&wr, NULL, e_writer, &c) == 0);
    AWAIT(lft_load(&c.fires) >= need_ticks && lft_load(&c.io) >= need_io,
          "enough timer and I/O dispatches of the flooded handler");
    lft_store(&e_stop, 1);
    CHECK(pthread_join(wr, NULL) == 0); /* the handler keeps draining meanwhile */
    CHECK_EQ(lf_reactor_remove(&r, &c.h), 0);
    stop_runners(&r, run, 3);
    CHECK_EQ(lf_reactor_destroy(&r), 0);
    CHECK_EQ(lft_load(&c.closed), 1);
    CHECK(lft_load(&e_read) > 0 && lft_load(&e_read) <= lft_load(&e_written));
    close(c.peer);
}

/* ------------------------------------------------------------------ F: removal */

static int f_event(lf_handler *lh, int fd, uint32_t ev)
{
    th *c = TH(lh);
    int late = lft_load(&c->mark);
    (void)fd;
    CHECK(!lft_load(&c->closed)); /* nothing runs after handle_close */
    CHECK_EQ(lft_add(&c->inside, 1), 0);
    CHECK_EQ(ev, LF_EV_TIMEOUT);
    if (late)
        lft_add(&c->after_mark, 1);
    lft_add(&c->fires, 1L);
    lft_add(&c->inside, -1);
    lft_progress();
    return LF_KEEP;
}

/* removes itself (LF_REMOVE) on its 5th tick; nothing may follow that dispatch */
static int f_self_event(lf_handler *lh, int fd, uint32_t ev)
{
    th *c = TH(lh);
    (void)fd;
    CHECK(!lft_load(&c->mark));
    CHECK_EQ(lft_add(&c->inside, 1), 0);
    CHECK_EQ(ev, LF_EV_TIMEOUT);
    if (lft_add(&c->fires, 1L) + 1 == 5) {
        lft_store(&c->mark, 1);
        lft_add(&c->inside, -1);
        return LF_REMOVE;
    }
    lft_add(&c->inside, -1);
    lft_progress();
    return LF_KEEP;
}

static void part_f(void)
{
    static th a, b, self;
    lf_reactor r;
    pthread_t run[2];

    CHECK_EQ(lf_reactor_init(&r), 0);
    reg_pipe(&r, &a, f_event);
    reg_pipe(&r, &b, f_event);
    reg_pipe(&r, &self, f_self_event);
    start_runners(&r, run, 2);
    CHECK_EQ(lf_reactor_timer_start(&r, &a.t, &a.h, 1 * MS, 1 * MS), 0);   /* periodic */
    CHECK_EQ(lf_reactor_timer_start(&r, &a.t2, &a.h, 30 * MS, 0), 0);      /* soon */
    CHECK_EQ(lf_reactor_timer_start(&r, &a.t3, &a.h, 3600LL * 1000 * MS, 0), 0); /* far */
    CHECK_EQ(lf_reactor_timer_start(&r, &self.t, &self.h, 1 * MS, 1 * MS), 0);
    AWAIT(lft_load(&a.fires) >= 10, "the periodic timer to tick 10 times");

    CHECK_EQ(lf_reactor_remove(&r, &a.h), 0);
    lft_store(&a.mark, 1);
    /* every timer of the removed handler is disarmed by the removal */
    CHECK_EQ(lf_reactor_timer_cancel(&r, &a.t), ENOENT);
    CHECK_EQ(lf_reactor_timer_cancel(&r, &a.t2), ENOENT);
    CHECK_EQ(lf_reactor_timer_cancel(&r, &a.t3), ENOENT);
    CHECK_EQ(lf_reactor_timer_start(&r, &a.t, &a.h, 1 * MS, 0), ENOENT);
    CHECK_EQ(lf_reactor_remove(&r, &a.h), ENOENT);
    AWAIT(lft_load(&a.closed) == 1, "handle_close of the removed handler");
    /* 50 ms: the periodic timer (1 ms) and the 30 ms one would both have fired */
    lft_sleep_ms(50);
    /* remove does not wait for a dispatch under way: one that had already started
     * may still enter the handler, and nothing else */
    CHECK(lft_load(&a.after_mark) <= 1);

    /* the records are free again: arm them for another handler */
    CHECK_EQ(lf_reactor_timer_start(&r, &a.t, &b.h, 1 * MS, 0), 0);
    CHECK_EQ(lf_reactor_timer_start(&r, &a.t3, &b.h, 2 * MS, 0), 0);
    AWAIT(lft_load(&b.fires) >= 1, "a re-used timer record to fire for its new handler");

    AWAIT(lft_load(&self.closed) == 1, "handle_close of the handler that removed itself");
    lft_sleep_ms(20);
    CHECK_EQ(lft_load(&self.fires), 5);
    CHECK_EQ(lf_reactor_timer_cancel(&r, &self.t), ENOENT);

    stop_runners(&r, run, 2);
    CHECK_EQ(lf_reactor_destroy(&r), 0);
    CHECK_EQ(lft_load(&b.closed), 1);
    close(a.peer);
    close(b.peer);
    close(self.peer);
}

/* ------------------------------------------------------------------ G: no starvation */

#define G_LOOPS 3
static lf_reactor *g_r;
static LFT_ATOMIC(int) g_stop;
static LFT_ATOMIC(long) g_spins;

/* "continue later": every dispatch posts the next one to itself */
static int g_loop_event(lf_handler *lh, int fd, uint32_t ev)
{
    (void)fd;
    CHECK(ev & LF_EV_NOTIFY);
    lft_add(&g_spins, 1L);
    if (!lft_load(&g_stop)) {
        /* the stop may come between the look at g_stop and the notify: ECANCELED then,
         * and g_stop (set before the stop) is visible by that time */
        int rc = lf_reactor_notify(g_r, lh, LF_EV_NOTIFY);
        CHECK(rc == 0 || (rc == ECANCELED && lft_load(&g_stop)));
    }
    return LF_KEEP;
}

static void part_g(void)
{
    static th loop[G_LOOPS], c;
    lf_reactor r;
    pthread_t run[2];
    long long t0;

    g_r = &r;
    CHECK_EQ(lf_reactor_init(&r), 0);
    for (int i = 0; i < G_LOOPS; i++)
        reg_pipe(&r, &loop[i], g_loop_event);
    reg_pipe(&r, &c, a_event);
    start_runners(&r, run, 2);
    /* more self-notifying handlers than threads: the ready queue is never empty */
    for (int i = 0; i < G_LOOPS; i++)
        CHECK_EQ(lf_reactor_notify(&r, &loop[i].h, LF_EV_NOTIFY), 0);
    AWAIT(lft_load(&g_spins) > 1000, "the notification loops to run");
    t0 = now_ns();
    CHECK_EQ(lf_reactor_timer_start(&r, &c.t, &c.h, 2 * MS, 0), 0);
    AWAIT(lft_load(&c.fires) == 1, "a 2 ms timer to fire while other handlers keep the "
                                   "ready queue busy (timer starvation)");
    CHECK(lft_load(&c.fire_ns) - t0 >= 2 * MS);
    lft_store(&g_stop, 1);
    stop_runners(&r, run, 2);
    CHECK_EQ(lf_reactor_destroy(&r), 0);
    for (int i = 0; i < G_LOOPS; i++)
        close(loop[i].peer);
    close(c.peer);
}

/* ------------------------------------------------------------------ H: pushed, in order */

/* A one-shot pushed later keeps its old place in the heap; when both its old time and
 * its new one have passed before anybody looks, it still fires in expiry order. */
static char h_log[4];
static int h_n;

static int h_event(lf_handler *lh, int fd, uint32_t ev)
{
    th *c = TH(lh);
    (void)fd;
    if ((ev & LF_EV_TIMEOUT) && lf_timer_fired(&c->t) && h_n < 4)
        h_log[h_n++] = (char)('A' + c->idx);
    return LF_KEEP;
}

static void part_h(void)
{
    static th a, b;
    lf_reactor r;
    CHECK_EQ(lf_reactor_init(&r), 0);
    reg_pipe(&r, &a, h_event);
    reg_pipe(&r, &b, h_event);
    a.idx = 0;
    b.idx = 1;
    CHECK_EQ(lf_reactor_timer_start(&r, &a.t, &a.h, 100 * MS, 0), 0);
    CHECK_EQ(lf_reactor_timer_start(&r, &a.t, &a.h, 250 * MS, 0), 0); /* pushed */
    CHECK_EQ(lf_reactor_timer_start(&r, &b.t, &b.h, 200 * MS, 0), 0);
    lft_sleep_ms(300); /* nobody turns until both are due: one expiry pass for both */
    while (h_n < 2)
        CHECK_EQ(lf_reactor_handle_events(&r, NULL), 0);
    /* (b is due 200 ms after its start, a 250 ms after its push, made first: b is
     * earlier unless 50 ms passed between two calls) */
    CHECK(h_log[0] == 'B' && h_log[1] == 'A');
    CHECK_EQ(lf_reactor_destroy(&r), 0);
    close(a.peer);
    close(b.peer);
}

int main(void)
{
    lft_start("t_reactor_timers", 30);
    part_a();
    lft_progress();
    part_b();
    lft_progress();
    part_c();
    lft_progress();
    part_d();
    lft_progress();
    part_e();
    lft_progress();
    part_f();
    lft_progress();
    part_g();
    lft_progress();
    part_h();
    printf("t_reactor_timers %s/%s: one-shot once and on time, periodic until cancel, "
           "%d timers in deadline order, start wakes the leader, timer/I-O exclusive "
           "(%ld dispatches with both), removal cancels, no starvation\n",
           lf_reactor_backend_name(), lf_promote_name(), C_N, lft_load(&e_both));
    return 0;
}
