/* pthread_cancel of pool threads (lf.h, CANCELLATION): the pool's waits are
 * cancellation points that give back whatever role the thread held, so "cancel the
 * workers, then shut down and join" leaves a pool that works on and can be destroyed.
 *
 * The source: events are numbered by a counter that a producer raises, and a byte in
 * a pipe wakes the leader, which waits in poll (the wait's cancellation point, with
 * its own cleanup handler). An event is taken (the counter of taken events moves) at
 * a point after which no cancellation point comes before lf_pool_join hands it to
 * dispatch, so no cancel can lose one: every event produced is dispatched, and the
 * dispatch counts each event number once (CHECK: at most once). An atomic counts the
 * threads inside the source's wait: never two (the leader is alone). Dispatches that
 * must block wait in poll on a pipe nobody writes (a cancellation point).
 *
 *   A: 4 joined threads; cancelled one at a time where each kind of wait is: a parked
 *      follower, the leader in the source's wait, a thread blocked in dispatch, a
 *      bare lf_pool_lead follower, and a follower cancelled while its promotion is
 *      on the way (it leads and gives the slot back, or leaves the set first: either
 *      way the other follower ends up leading). After each: pthread_join gives
 *      PTHREAD_CANCELED, lf_pool_stats shows the roles of the threads left and
 *      counts the cancelled ones, and the threads left dispatch 100 more events, each
 *      once. Then lf_pool_shutdown: every join left returns ECANCELED, destroy 0.
 *   B: the reported scenario: every thread (2, then 5) cancelled, settled first or
 *      right after it started; then nobody leads or follows, shutdown and destroy 0.
 *   C: a cancel pending before the call (the thread cancelled itself with
 *      cancellation disabled, then enabled it): lf_pool_join and lf_pool_lead act on
 *      it at their first wait, parked or leading in the source; lf_pool_lead on a
 *      vacant slot, promote, leave, notify, stats and lf_pool_shutdown (whose
 *      interrupt writes to a pipe: a cancellation point, run with cancellation off)
 *      return normally, and the cancel acts at the thread's own next cancellation
 *      point.
 *   D: stress: a producer makes events in bursts while a killer cancels one of 6
 *      threads (two thirds in lf_pool_join, one third leading by hand with
 *      lf_pool_lead/promote and their own cleanup) at random moments and starts a
 *      new one in its place, lft_scaled(2000) times; most dispatches are short (many
 *      promotions for the cancels to land around), some sleep (a cancellation
 *      point). Never two threads in the source's wait, every event dispatched
 *      exactly once, the roles settle; then shutdown races more cancels: each thread
 *      ends cancelled or with its own return value, and stats.cancelled counts
 *      exactly those cancelled inside lf_pool_lead or lf_pool_join; destroy 0.
 * Compiled once per promotion policy x synchronizer. */
#include "../lf.h"
#include "lf_test.h"

#include <fcntl.h>
#include <poll.h>
#include <stdint.h>

/* Under ThreadSanitizer the source's waits are condition variables instead of poll,
 * read and nanosleep: TSan (gcc 12's libtsan) undoes its own state when a cancel acts
 * inside pthread_cond_wait or _timedwait, but not inside its other blocking
 * interceptors, whose destructors the cancel's unwinding skips: the thread's later
 * lock operations (the cleanup handlers', the pool's own) are then invisible to it,
 * and it reports races on data those locks protect. The pool's waits are the same in
 * both builds (a raw futex system call, which TSan does not intercept, or
 * pthread_cond_wait). -DT_SRC_CV chooses the condition variables in any build. */
#if defined(LFT_TSAN) && !defined(T_SRC_CV)
#define T_SRC_CV 1
#endif

static lf_pool pool;
static _Thread_local int my_id = -1;

/* ------------------------------------------------------------------ the source */

static struct {
    int wake[2]; /* producer -> leader, non-blocking */
    int stop[2]; /* the interrupt's sticky byte */
    int gate[2]; /* dispatches that block wait here; nothing is ever written */
    LFT_ATOMIC(long) produced;
    long taken; /* the leader's alone (the pool's lock orders one leader after another) */
    LFT_ATOMIC(int) in_wait; /* threads inside the source's wait now */
    LFT_ATOMIC(int) waiter;  /* id of the thread in the wait, -1 */
    LFT_ATOMIC(long) interrupts;
    LFT_ATOMIC(unsigned char) *hits; /* per event: dispatches */
    long cap;
    LFT_ATOMIC(long) entered, finished;
    LFT_ATOMIC(long) block_at; /* the event whose dispatch blocks (A), -1 */
    LFT_ATOMIC(int) blocked;   /* id of the thread blocked in that dispatch, -1 */
    int slow;                  /* D: some dispatches sleep */
#ifdef T_SRC_CV
    pthread_mutex_t m; /* guards produced's rises and stopped, for the waits */
    pthread_cond_t cv;
    int stopped;
#endif
} S;

static lf_source src;

static void pipe_nb(int p[2])
{
    CHECK(pipe(p) == 0);
    for (int i = 0; i < 2; i++)
        CHECK(fcntl(p[i], F_SETFL, fcntl(p[i], F_GETFL) | O_NONBLOCK) == 0);
}

static LFT_ATOMIC(long) cancelled_in_wait, cancelled_in_dispatch; /* (D reports them) */

static void wait_left(void *arg)
{
    (void)arg;
    lft_store(&S.waiter, -1);
    lft_add(&S.in_wait, -1);
}

static void wait_cancelled(void *arg)
{
    lft_add(&cancelled_in_wait, 1L);
    wait_left(arg);
}

#ifdef T_SRC_CV
static void unlock_m(void *arg)
{
    pthread_mutex_unlock(arg ? (pthread_mutex_t *)arg : &S.m);
}

/* a cancellation point that waits ns nanoseconds (-1: for ever) */
static void cv_sleep(long ns)
{
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t c;
    struct timespec d;
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&c, &a);
    pthread_condattr_destroy(&a);
    CHECK_EQ(lf_deadline_in(&d, ns < 0 ? 3600LL * 1000000000LL : ns), 0);
    pthread_mutex_lock(&m);
    pthread_cleanup_push(unlock_m, &m);
    while (pthread_cond_timedwait(&c, &m, &d) != ETIMEDOUT || ns < 0) {
    }
    pthread_cleanup_pop(1);
    pthread_cond_destroy(&c);
}
#endif

static void dispatch_cancelled(void *arg)
{
    (void)arg;
    lft_add(&cancelled_in_dispatch, 1L);
}

static int src_wait(void *ctx, lf_event *ev, const struct timespec *deadline)
{
    int rc = EAGAIN;
    (void)ctx;
    (void)deadline; /* every join here has none */
    CHECK_EQ(lft_add(&S.in_wait, 1), 0); /* never two leaders */
    lft_store(&S.waiter, my_id);
    pthread_cleanup_push(wait_cancelled, NULL);
#ifdef T_SRC_CV
    pthread_mutex_lock(&S.m);
    pthread_cleanup_push(unlock_m, NULL); /* (pthread_cond_wait took it back) */
    while (S.taken >= lft_load(&S.produced) && !S.stopped)
        pthread_cond_wait(&S.cv, &S.m); /* the wait's cancellation point */
    if (S.taken < lft_load(&S.produced)) {
        ev->u64 = (uint64_t)S.taken++; /* taken: no cancellation point follows */
        rc = 0;
    } else {
        rc = EINTR; /* stopped: lf_pool_join then sees the shutdown flag */
    }
    pthread_cleanup_pop(1);
#else
    for (;;) {
        char buf[64];
        struct pollfd pf[2];
        /* drain the wake-ups first (a cancel in this read loses only wake-up bytes:
         * the counter is the event), then look at the counter */
        while (read(S.wake[0], buf, sizeof buf) > 0) {
        }
        if (S.taken < lft_load(&S.produced)) {
            ev->u64 = (uint64_t)S.taken++; /* taken: no cancellation point follows */
            rc = 0;
            break;
        }
        pf[0].fd = S.wake[0];
        pf[1].fd = S.stop[0];
        pf[0].events = pf[1].events = POLLIN;
        pf[0].revents = pf[1].revents = 0;
        if (poll(pf, 2, -1) > 0 && (pf[1].revents & POLLIN)) {
            rc = EINTR; /* lf_pool_join then sees the shutdown flag */
            break;
        }
    }
#endif
    pthread_cleanup_pop(0);
    wait_left(NULL);
    return rc;
}

static int src_dispatch(void *ctx, lf_event *ev)
{
    long n = (long)ev->u64;
    (void)ctx;
    CHECK(n >= 0 && n < S.cap);
    CHECK_EQ(lft_add(&S.hits[n], 1), 0); /* at most once */
    lft_add(&S.entered, 1L);
    lft_progress();
    pthread_cleanup_push(dispatch_cancelled, NULL);
    if (n == lft_load(&S.block_at)) {
        lft_store(&S.blocked, my_id);
#ifdef T_SRC_CV
        cv_sleep(-1); /* only a cancel ends this */
#else
        struct pollfd pf;
        pf.fd = S.gate[0];
        pf.events = POLLIN;
        for (;;)
            poll(&pf, 1, -1); /* only a cancel ends this */
#endif
    }
#ifdef T_SRC_CV
    if (S.slow && n % 16 == 0)
        cv_sleep(1000);
    else if (S.slow && n % 256 == 1)
        cv_sleep(1000000);
#else
    if (S.slow && n % 16 == 0)
        lft_sleep_ms(0); /* nanosleep: a cancellation point */
    else if (S.slow && n % 256 == 1)
        lft_sleep_ms(1);
#endif
    pthread_cleanup_pop(0);
    lft_add(&S.finished, 1L);
    return 0;
}

static void src_interrupt(void *ctx)
{
    char c = 1;
    (void)ctx;
    lft_add(&S.interrupts, 1L);
#ifdef T_SRC_CV
    pthread_mutex_lock(&S.m);
    S.stopped = 1;
    pthread_cond_broadcast(&S.cv);
    pthread_mutex_unlock(&S.m);
#endif
    CHECK(write(S.stop[1], &c, 1) == 1); /* write: a cancellation point */
}

static void src_open(long cap, int slow)
{
    pipe_nb(S.wake);
    pipe_nb(S.stop);
    pipe_nb(S.gate);
    lft_store(&S.produced, 0L);
    S.taken = 0;
    lft_store(&S.in_wait, 0);
    lft_store(&S.waiter, -1);
    lft_store(&S.interrupts, 0L);
    S.hits = calloc((size_t)cap, sizeof *S.hits);
    CHECK(S.hits != NULL);
    S.cap = cap;
    lft_store(&S.entered, 0L);
    lft_store(&S.finished, 0L);
    lft_store(&S.block_at, -1L);
    lft_store(&S.blocked, -1);
    S.slow = slow;
#ifdef T_SRC_CV
    pthread_mutex_init(&S.m, NULL);
    pthread_cond_init(&S.cv, NULL);
    S.stopped = 0;
#endif
    src.ctx = NULL;
    src.wait = src_wait;
    src.dispatch = src_dispatch;
    src.interrupt = src_interrupt;
}

static void src_close(void)
{
    for (int i = 0; i < 2; i++) {
        close(S.wake[i]);
        close(S.stop[i]);
        close(S.gate[i]);
    }
    free((void *)S.hits);
    S.hits = NULL;
#ifdef T_SRC_CV
    pthread_mutex_destroy(&S.m);
    pthread_cond_destroy(&S.cv);
#endif
}

static void produce(long k)
{
    char c = 1;
    CHECK(lft_load(&S.produced) + k <= S.cap);
#ifdef T_SRC_CV
    pthread_mutex_lock(&S.m);
    lft_add(&S.produced, k);
    pthread_cond_signal(&S.cv);
    pthread_mutex_unlock(&S.m);
    (void)c;
    return;
#endif
    lft_add(&S.produced, k);
    /* EAGAIN: the pipe is full, so the leader has a wake-up already */
    CHECK(write(S.wake[1], &c, 1) == 1 || errno == EAGAIN);
}

/* produce k events and wait until every event so far was dispatched */
static void produce_all(long k)
{
    produce(k);
    AWAIT(lft_load(&S.entered) == lft_load(&S.produced), "every event dispatched");
}

/* ------------------------------------------------------------------ threads */

/* a thread in lf_pool_join; returns join's result */
static void follower_gone(void *arg)
{
    lf_follower_destroy((lf_follower *)arg); /* after the pool's own cleanup */
}

static void *join_main(void *arg)
{
    lf_follower f;
    int rc;
    my_id = (int)(intptr_t)arg;
    CHECK(lf_follower_init(&f, my_id % 3) == 0);
    pthread_cleanup_push(follower_gone, &f);
    rc = lf_pool_join(&pool, &f, &src, NULL);
    pthread_cleanup_pop(1);
    lft_progress();
    return (void *)(intptr_t)rc;
}

/* a thread that leads by hand: lf_pool_lead, the source's wait, promote, dispatch.
 * Outside lf_pool_lead its roles are its own to give back (CANCELLATION). */
typedef struct hand {
    lf_follower f;
    volatile int in_lead; /* inside lf_pool_lead: the pool cleans up and counts */
} hand;

static LFT_ATOMIC(long) hand_counted; /* hand threads cancelled inside lf_pool_lead */

static void hand_gone(void *arg)
{
    hand *h = (hand *)arg;
    if (h->in_lead)
        lft_add(&hand_counted, 1L);
    else
        CHECK_EQ(lf_pool_leave(&pool, &h->f), 0); /* leader or processing: give it back */
    lf_follower_destroy(&h->f);
}

static void *hand_main(void *arg)
{
    hand h;
    int rc;
    my_id = (int)(intptr_t)arg;
    CHECK(lf_follower_init(&h.f, my_id % 3) == 0);
    h.in_lead = 0;
    pthread_cleanup_push(hand_gone, &h);
    for (;;) {
        lf_event ev;
        h.in_lead = 1;
        rc = lf_pool_lead(&pool, &h.f, NULL);
        h.in_lead = 0;
        if (rc != 0)
            break;
        rc = src_wait(NULL, &ev, NULL);
        if (rc != 0) {
            CHECK_EQ(rc, EINTR);
            CHECK_EQ(lf_pool_leave(&pool, &h.f), 0);
            continue; /* the next lead says ECANCELED */
        }
        CHECK_EQ(lf_pool_promote(&pool, &h.f), 0);
        src_dispatch(NULL, &ev);
    }
    CHECK_EQ(rc, ECANCELED);
    pthread_cleanup_pop(1); /* (role none: the leave is a no-op) */
    lft_progress();
    return (void *)(intptr_t)rc;
}

static void start(pthread_t *t, void *(*fn)(void *), int id)
{
    CHECK(pthread_create(t, NULL, fn, (void *)(intptr_t)id) == 0);
}


static struct lf_pool_stats stats(void)
{
    struct lf_pool_stats s;
    CHECK(lf_pool_stats(&pool, &s) == 0);
    return s;
}

/* n threads in the pool, none of them busy: one leads (in the source's wait), the
 * others follow; `join` of them joined */
static int settled(unsigned n, unsigned join)
{
    struct lf_pool_stats s = stats();
    return s.leader == 1 && s.followers == n - 1 && s.processing == 0 && s.joined == join &&
           lft_load(&S.in_wait) == 1 && lft_load(&S.waiter) >= 0;
}

static void check_empty(unsigned long long cancelled)
{
    struct lf_pool_stats s = stats();
    CHECK_EQ(s.leader, 0);
    CHECK_EQ(s.followers, 0);
    CHECK_EQ(s.processing, 0);
    CHECK_EQ(s.joined, 0);
    CHECK_EQ(s.cancelled, cancelled);
}

/* ------------------------------------------------------------------ A */

/* A5's follower: leads by hand; tells whether lf_pool_lead returned 0 (then the
 * cancel had not acted inside: it gives the slot back and meets it afterwards) */
static LFT_ATOMIC(int) a5_led;

static void *a5_main(void *arg)
{
    lf_follower f;
    int rc;
    my_id = (int)(intptr_t)arg;
    CHECK(lf_follower_init(&f, 1) == 0); /* HEAP: first in line */
    pthread_cleanup_push(follower_gone, &f);
    rc = lf_pool_lead(&pool, &f, NULL);
    CHECK_EQ(rc, 0);
    lft_store(&a5_led, 1);
    CHECK_EQ(lf_pool_leave(&pool, &f), 0);
    for (;;)
        pthread_testcancel();
    pthread_cleanup_pop(1);
    return NULL;
}

/* A5's other follower: leads by hand once and reports it */
static LFT_ATOMIC(int) a5_other_led;
static lf_follower a5_other_f;

static void *a5_other(void *arg)
{
    (void)arg;
    CHECK_EQ(lf_pool_lead(&pool, &a5_other_f, NULL), 0);
    lft_store(&a5_other_led, 1);
    return NULL;
}

static void part_a(void)
{
    enum { K = 4 };
    pthread_t t[K + 2], lone;
    int alive[K + 2] = {0};
    unsigned n = K, cancelled = 0;
    struct lf_pool_stats s;

    src_open(4096, 0);
    CHECK_EQ(lf_pool_init(&pool), 0);
    for (int i = 0; i < K; i++) {
        start(&t[i], join_main, i);
        alive[i] = 1;
    }
    AWAIT(settled(n, n), "4 threads settle: a leader in the wait, 3 followers");
    produce_all(100);
    AWAIT(settled(n, n), "settled again");

    /* A1: a parked follower */
    int w = lft_load(&S.waiter), j = 0;
    while (j == w || !alive[j])
        j++;
    lft_cancel_join(t[j]);
    alive[j] = 0;
    n--;
    cancelled++;
    s = stats();
    CHECK_EQ(s.cancelled, cancelled);
    CHECK_EQ(s.joined, n);
    CHECK_EQ(s.followers, n - 1);
    CHECK_EQ(s.leader, 1);
    CHECK_EQ(lft_load(&S.waiter), w); /* the leader never noticed */
    produce_all(100);
    AWAIT(settled(n, n), "A1: the others settle");

    /* A2: the leader in the source's wait: the slot goes on */
    w = lft_load(&S.waiter);
    lft_cancel_join(t[w]);
    alive[w] = 0;
    n--;
    cancelled++;
    AWAIT(settled(n, n), "A2: another thread leads");
    CHECK(lft_load(&S.waiter) != w);
    CHECK_EQ(stats().cancelled, cancelled);
    produce_all(100);
    AWAIT(settled(n, n), "A2: settled after 100 events");

    /* A3: a thread blocked in dispatch (in poll): it stops counting as processing */
    lft_store(&S.block_at, lft_load(&S.produced));
    produce(1);
    AWAIT(lft_load(&S.blocked) >= 0, "A3: a dispatch blocks");
    int b = lft_load(&S.blocked);
    AWAIT(stats().processing == 1 && stats().leader == 1 && lft_load(&S.in_wait) == 1,
          "A3: the other thread leads");
    produce_all(100); /* the other one alone dispatches them */
    lft_cancel_join(t[b]);
    alive[b] = 0;
    n--;
    cancelled++;
    s = stats();
    CHECK_EQ(s.processing, 0);
    CHECK_EQ(s.cancelled, cancelled);
    AWAIT(lft_load(&S.finished) == lft_load(&S.entered) - 1, "A3: all but the cancelled finish");
    AWAIT(settled(n, n), "A3: one thread left, leading");
    produce_all(100);

    /* A4: a bare lf_pool_lead follower (the slot is the joined thread's) */
    start(&lone, hand_main, 50);
    AWAIT(stats().followers == 1, "A4: the bare lead parks");
    lft_cancel_join(lone);
    cancelled++;
    s = stats();
    CHECK_EQ(s.followers, 0);
    CHECK_EQ(s.leader, 1);
    CHECK_EQ(s.joined, n);
    CHECK_EQ(s.cancelled, cancelled);
    CHECK_EQ(lft_load(&hand_counted), 1);
    lft_store(&hand_counted, 0L);
    produce_all(100);

    /* two more joined threads for the end */
    for (int i = K; i < K + 2; i++) {
        start(&t[i], join_main, i);
        alive[i] = 1;
        n++;
    }
    AWAIT(settled(n, n), "A: 3 threads settle");
    produce_all(100);
    AWAIT(settled(n, n), "A: settled");

    CHECK_EQ(lf_pool_shutdown(&pool), 0);
    for (int i = 0; i < K + 2; i++)
        if (alive[i])
            CHECK_EQ((intptr_t)lft_join(t[i]), ECANCELED);
    CHECK_EQ(lft_load(&S.interrupts), 1);
    check_empty(cancelled);
    CHECK_EQ(lf_pool_destroy(&pool), 0);
    src_close();

    /* A5: a follower cancelled while a promotion comes its way (20 rounds). The
     * main thread leads by hand; X and the other follower park, X first in line
     * where the policy lets us say; the cancel and the promotion race. Whatever
     * won, the other follower leads once X is gone. */
    int inside = 0, passed_on = 0;
    for (int round = 0; round < 20; round++) {
        lf_follower me;
        pthread_t x, y;
        CHECK_EQ(lf_pool_init(&pool), 0);
        CHECK_EQ(lf_follower_init(&me, 0), 0);
        CHECK_EQ(lf_follower_init(&a5_other_f, 0), 0);
        lft_store(&a5_led, 0);
        lft_store(&a5_other_led, 0);
        CHECK_EQ(lf_pool_lead(&pool, &me, NULL), 0);
#if LF_PROMOTE == LF_PROMOTE_FIFO
        start(&x, a5_main, 60);
        AWAIT(stats().followers == 1, "A5: X parks");
        start(&y, a5_other, 61);
#else
        start(&y, a5_other, 61);
        AWAIT(stats().followers == 1, "A5: the other parks");
        start(&x, a5_main, 60);
#endif
        AWAIT(stats().followers == 2, "A5: both park");
        if (round % 2) { /* the cancel first, or the promotion first */
            CHECK(pthread_cancel(x) == 0);
            CHECK_EQ(lf_pool_promote(&pool, &me), 0);
        } else {
            CHECK_EQ(lf_pool_promote(&pool, &me), 0);
            CHECK(pthread_cancel(x) == 0);
        }
        CHECK(lft_join(x) == PTHREAD_CANCELED);
        CHECK(lft_join(y) == NULL);
        CHECK_EQ(lft_load(&a5_other_led), 1);
        s = stats();
        CHECK_EQ(s.leader, 1); /* the other follower's */
        CHECK_EQ(s.followers, 0);
        CHECK_EQ(s.processing, 1); /* this thread */
        CHECK_EQ(s.cancelled, lft_load(&a5_led) ? 0 : 1);
        inside += !lft_load(&a5_led);
        /* two promotions: X's and the one X passed on (as leader, or from its
         * cleanup); one: X had left the set, the other follower got the first */
        CHECK(s.promotions == 1 || s.promotions == 2);
        passed_on += !lft_load(&a5_led) && s.promotions == 2;
        CHECK_EQ(lf_pool_leave(&pool, &a5_other_f), 0);
        CHECK_EQ(lf_pool_leave(&pool, &me), 0);
        CHECK_EQ(lf_pool_destroy(&pool), 0);
        lf_follower_destroy(&me);
        lf_follower_destroy(&a5_other_f);
    }
    printf("  A5: X cancelled inside lf_pool_lead in %d of 20 rounds (%d of them after its "
           "promotion, which it passed on), led first in the rest\n",
           inside, passed_on);
}

/* ------------------------------------------------------------------ B */

static void part_b(void)
{
    for (int settle = 1; settle >= 0; settle--) {
        for (unsigned n = 2; n <= 5; n += 3) {
            pthread_t t[5];
            unsigned long long seed = 0x9e3779b97f4a7c15ULL + n + (unsigned)settle;
            int order[5];
            src_open(16, 0);
            CHECK_EQ(lf_pool_init(&pool), 0);
            for (unsigned i = 0; i < n; i++) {
                start(&t[i], join_main, (int)i);
                order[i] = (int)i;
            }
            if (settle)
                AWAIT(settled(n, n), "B: threads settle");
            for (unsigned i = n - 1; i > 0; i--) { /* cancel in a random order */
                unsigned k = (unsigned)(lft_rand(&seed) % (i + 1));
                int tmp = order[i];
                order[i] = order[k];
                order[k] = tmp;
            }
            for (unsigned i = 0; i < n; i++)
                CHECK(pthread_cancel(t[order[i]]) == 0);
            for (unsigned i = 0; i < n; i++)
                CHECK(lft_join(t[i]) == PTHREAD_CANCELED);
            /* nobody left in any role: the dead leader did not keep the slot */
            check_empty(n);
            CHECK_EQ(lft_load(&S.in_wait), 0);
            CHECK_EQ(lf_pool_shutdown(&pool), 0);
            CHECK_EQ(lf_pool_destroy(&pool), 0);
            src_close();
        }
    }
}

/* ------------------------------------------------------------------ C */

static void cancel_self_pending(void)
{
    int old;
    CHECK(pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old) == 0);
    CHECK(pthread_cancel(pthread_self()) == 0);
    CHECK(pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old) == 0);
    CHECK_EQ(old, PTHREAD_CANCEL_DISABLE);
}

static void *c_join(void *arg)
{
    lf_follower f;
    my_id = (int)(intptr_t)arg;
    CHECK(lf_follower_init(&f, 0) == 0);
    pthread_cleanup_push(follower_gone, &f);
    cancel_self_pending();
    lf_pool_join(&pool, &f, &src, NULL);
    CHECK(!"lf_pool_join returned with a cancel pending");
    pthread_cleanup_pop(1);
    return NULL;
}

static void *c_lead(void *arg)
{
    lf_follower f;
    my_id = (int)(intptr_t)arg;
    CHECK(lf_follower_init(&f, 0) == 0);
    pthread_cleanup_push(follower_gone, &f);
    cancel_self_pending();
    lf_pool_lead(&pool, &f, NULL);
    CHECK(!"lf_pool_lead returned from a wait with a cancel pending");
    pthread_cleanup_pop(1);
    return NULL;
}

/* with a cancel pending, every call that does not wait returns normally */
static LFT_ATOMIC(int) c_survived;
static int c_shutdown_too;

static void *c_calls(void *arg)
{
    lf_follower f, other;
    struct lf_pool_stats s;
    my_id = (int)(intptr_t)arg;
    CHECK(lf_follower_init(&f, 0) == 0);
    CHECK(lf_follower_init(&other, 0) == 0);
    cancel_self_pending();
    if (c_shutdown_too) {
        /* a leader waits in the source: the interrupt writes the stop pipe */
        CHECK_EQ(lf_pool_shutdown(&pool), 0);
        CHECK_EQ(lf_pool_shutdown(&pool), 0);
    } else {
        CHECK_EQ(lf_pool_try_lead(&pool, &f), 0); /* the slot is vacant */
        CHECK_EQ(lf_pool_stats(&pool, &s), 0);
        CHECK_EQ(s.leader, 1);
        CHECK_EQ(lf_pool_promote(&pool, &f), 0);
        CHECK_EQ(lf_pool_lead(&pool, &f, NULL), 0); /* vacant again: no wait */
        CHECK_EQ(lf_pool_notify(&pool, &other), EBUSY);
        CHECK_EQ(lf_pool_leave(&pool, &f), 0);
        CHECK_EQ(lf_pool_lead(&pool, &other, NULL), EINTR); /* the notification */
    }
    lft_store(&c_survived, 1);
    lf_follower_destroy(&f);
    lf_follower_destroy(&other);
    pthread_testcancel();
    CHECK(!"the pending cancel was lost");
    return NULL;
}

static void part_c(void)
{
    pthread_t t, l;
    unsigned long long cancelled = 0;
    struct lf_pool_stats s;

    src_open(256, 0);
    CHECK_EQ(lf_pool_init(&pool), 0);

    /* C1: the slot vacant: lf_pool_join leads and the cancel acts in the source's
     * wait; the slot is free again */
    start(&t, c_join, 1);
    CHECK(lft_join(t) == PTHREAD_CANCELED);
    check_empty(++cancelled);
    CHECK_EQ(lft_load(&S.in_wait), 0);

    /* C2: calls that do not wait, with a cancel pending */
    start(&t, c_calls, 2);
    CHECK(lft_join(t) == PTHREAD_CANCELED);
    CHECK_EQ(lft_load(&c_survived), 1);
    s = stats();
    CHECK_EQ(s.cancelled, cancelled); /* none of them was a cancellation point */
    CHECK_EQ(s.leader + s.followers + s.processing + s.joined, 0);

    /* C3, C4: a leader in the source; lf_pool_join and lf_pool_lead park and the
     * cancel acts there */
    start(&l, join_main, 3);
    AWAIT(settled(1, 1), "C: a leader waits");
    start(&t, c_join, 4);
    CHECK(lft_join(t) == PTHREAD_CANCELED);
    cancelled++;
    start(&t, c_lead, 5);
    CHECK(lft_join(t) == PTHREAD_CANCELED);
    cancelled++;
    s = stats();
    CHECK_EQ(s.cancelled, cancelled);
    CHECK(settled(1, 1));
    CHECK_EQ(lft_load(&S.waiter), 3);
    produce_all(50);

    /* C5: lf_pool_shutdown with a cancel pending: the interrupt (a write) runs with
     * cancellation off; shutdown returns; the cancel waits for the thread's own
     * cancellation point */
    lft_store(&c_survived, 0);
    c_shutdown_too = 1;
    start(&t, c_calls, 6);
    CHECK(lft_join(t) == PTHREAD_CANCELED);
    CHECK_EQ(lft_load(&c_survived), 1);
    CHECK_EQ(lft_load(&S.interrupts), 1);
    CHECK_EQ((intptr_t)lft_join(l), ECANCELED);
    check_empty(cancelled);
    CHECK_EQ(lf_pool_destroy(&pool), 0);
    src_close();
}

/* ------------------------------------------------------------------ D */

enum { D_THREADS = 6 };

static LFT_ATOMIC(int) d_producing;

static void *d_producer(void *arg)
{
    unsigned long long seed = 12345;
    (void)arg;
    while (lft_load(&d_producing)) {
        long k = 1 + (long)(lft_rand(&seed) % 8);
        if (lft_load(&S.produced) + k > S.cap) {
            lft_sleep_ms(1);
            continue;
        }
        produce(k);
        if (lft_rand(&seed) % 4 == 0)
            lft_sleep_ms(0);
    }
    return NULL;
}

static void part_d(void)
{
    pthread_t t[D_THREADS], prod;
    int kind[D_THREADS]; /* 1: joined, 0: by hand */
    long rounds = lft_scaled(2000), by_cancel = 0, by_return = 0;
    long join_cancelled = 0;
    unsigned long long seed = 0xfeedULL;
    int next_id = 0;
    double t0 = lft_now();

    src_open(4L << 20, 1);
    CHECK_EQ(lf_pool_init(&pool), 0);
    lft_store(&hand_counted, 0L);
    lft_store(&cancelled_in_wait, 0L);
    lft_store(&cancelled_in_dispatch, 0L);
    for (int i = 0; i < D_THREADS; i++) {
        kind[i] = i % 3 != 2;
        start(&t[i], kind[i] ? join_main : hand_main, next_id++);
    }
    lft_store(&d_producing, 1);
    CHECK(pthread_create(&prod, NULL, d_producer, NULL) == 0);
    for (long r = 0; r < rounds; r++) {
        int i = (int)(lft_rand(&seed) % D_THREADS);
        struct timespec ts = {0, (long)(lft_rand(&seed) % 400000)};
        nanosleep(&ts, NULL);
        CHECK(pthread_cancel(t[i]) == 0);
        CHECK(lft_join(t[i]) == PTHREAD_CANCELED);
        join_cancelled += kind[i];
        kind[i] = lft_rand(&seed) % 3 != 0;
        start(&t[i], kind[i] ? join_main : hand_main, next_id++ % 1000);
    }
    lft_store(&d_producing, 0);
    CHECK(pthread_join(prod, NULL) == 0);
    /* every event produced is dispatched (each exactly once: src_dispatch) */
    AWAIT(lft_load(&S.entered) == lft_load(&S.produced), "D: every event dispatched");
    unsigned nj = 0;
    for (int i = 0; i < D_THREADS; i++)
        nj += (unsigned)kind[i];
    AWAIT(settled(D_THREADS, nj), "D: the threads settle");
    struct lf_pool_stats s = stats();
    CHECK_EQ(s.cancelled, join_cancelled + lft_load(&hand_counted));
    long events = lft_load(&S.produced);
    produce_all(1000); /* still working */

    /* the end: shutdown, with cancels before and after it */
    for (int i = 0; i < D_THREADS; i += 2)
        CHECK(pthread_cancel(t[i]) == 0);
    CHECK_EQ(lf_pool_shutdown(&pool), 0);
    for (int i = 1; i < D_THREADS; i += 2)
        CHECK(pthread_cancel(t[i]) == 0);
    for (int i = 0; i < D_THREADS; i++) {
        void *rv = lft_join(t[i]);
        if (rv == PTHREAD_CANCELED) {
            by_cancel++;
            join_cancelled += kind[i];
        } else {
            CHECK_EQ((intptr_t)rv, ECANCELED); /* returned before the cancel acted */
            by_return++;
        }
    }
    CHECK_EQ(by_cancel + by_return, D_THREADS);
    check_empty((unsigned long long)join_cancelled + (unsigned long long)lft_load(&hand_counted));
    CHECK_EQ(lft_load(&S.in_wait), 0);
    CHECK_EQ(lf_pool_destroy(&pool), 0);
    printf("  D: %ld cancels (%ld in the source's wait, %ld in dispatch, the rest parked), "
           "%ld events, %ld threads cancelled at the end and %ld returned (%.2f s)\n",
           rounds, lft_load(&cancelled_in_wait), lft_load(&cancelled_in_dispatch), events,
           by_cancel, by_return, lft_now() - t0);
    src_close();
}

int main(void)
{
    lft_start("t_pool_cancel", 20);
    part_a();
    lft_progress();
    part_b();
    lft_progress();
    part_c();
    lft_progress();
    part_d();
    printf("t_pool_cancel %s/%s: cancelled threads give their roles back; the pool works on "
           "and shuts down\n",
           lf_promote_name(), lf_sync_name());
    return 0;
}
