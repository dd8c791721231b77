/* Shutdown and deadlines.
 *   A: shutdown wakes every parked follower and interrupts a leader blocked in its
 *      source; all joins return ECANCELED; later calls return ECANCELED; destroy is
 *      EBUSY while threads are joined and succeeds after.
 *   B: shutdown from inside a dispatch while the other threads are busy (under load).
 *   C: lf_pool_lead with a deadline times out (also one already in the past).
 *   D: a leader whose join deadline passes hands leadership to a follower. */
#include "../lf.h"
#include "lf_test.h"

#define K 6

/* a source whose wait blocks until interrupted or until the deadline */
typedef struct blocker {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int interrupted;
    int interrupts;
    int waits;
    long last_waiter;
} blocker;

static _Thread_local long my_id;

static void blocker_init(blocker *b)
{
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_mutex_init(&b->lock, NULL);
    pthread_cond_init(&b->cond, &a);
    pthread_condattr_destroy(&a);
    b->interrupted = b->interrupts = b->waits = 0;
    b->last_waiter = -1;
}

static int blocker_wait(void *ctx, lf_event *ev, const struct timespec *deadline)
{
    blocker *b = (blocker *)ctx;
    int rc = 0;
    (void)ev;
    pthread_mutex_lock(&b->lock);
    b->waits++;
    b->last_waiter = my_id;
    while (!b->interrupted && rc == 0)
        rc = deadline ? pthread_cond_timedwait(&b->cond, &b->lock, deadline)
                      : pthread_cond_wait(&b->cond, &b->lock);
    pthread_mutex_unlock(&b->lock);
    return rc ? rc : EINTR;
}

static int blocker_dispatch(void *ctx, lf_event *ev)
{
    (void)ctx;
    (void)ev;
    CHECK(!"no event was ever produced");
    return 0;
}

static void blocker_interrupt(void *ctx)
{
    blocker *b = (blocker *)ctx;
    pthread_mutex_lock(&b->lock);
    b->interrupted = 1;
    b->interrupts++;
    pthread_cond_broadcast(&b->cond);
    pthread_mutex_unlock(&b->lock);
}

static int blocker_waits(blocker *b)
{
    pthread_mutex_lock(&b->lock);
    int n = b->waits;
    pthread_mutex_unlock(&b->lock);
    return n;
}

static lf_pool pool;
static lf_source src;
static int rc_of[K];
static struct timespec deadline_of[K];
static int has_deadline[K];

static void *joiner(void *arg)
{
    lf_follower f;
    my_id = (long)arg;
    CHECK(lf_follower_init(&f, 0) == 0);
    rc_of[my_id] = lf_pool_join(&pool, &f, &src, has_deadline[my_id] ? &deadline_of[my_id] : NULL);
    lf_follower_destroy(&f);
    lft_progress();
    return NULL;
}

static void stats_now(struct lf_pool_stats *s)
{
    CHECK(lf_pool_stats(&pool, s) == 0);
}

static void part_a(void)
{
    blocker b;
    pthread_t t[K];
    struct lf_pool_stats s;
    lf_follower f;

    blocker_init(&b);
    src.ctx = &b;
    src.wait = blocker_wait;
    src.dispatch = blocker_dispatch;
    src.interrupt = blocker_interrupt;
    CHECK(lf_pool_init(&pool) == 0);
    for (long i = 0; i < K; i++) {
        has_deadline[i] = 0;
        CHECK(pthread_create(&t[i], NULL, joiner, (void *)i) == 0);
    }
    do {
        lft_sleep_ms(2);
        stats_now(&s);
    } while (!(s.leader == 1 && s.followers == K - 1 && blocker_waits(&b) == 1));
    CHECK_EQ(s.joined, K);
    CHECK_EQ(lf_pool_destroy(&pool), EBUSY);
    CHECK_EQ(lf_pool_shutdown(&pool), 0);
    for (int i = 0; i < K; i++) {
        CHECK(pthread_join(t[i], NULL) == 0);
        CHECK_EQ(rc_of[i], ECANCELED);
    }
    CHECK_EQ(b.interrupts, 1);
    CHECK_EQ(blocker_waits(&b), 1); /* the retry saw the flag instead of waiting again */
    stats_now(&s);
    CHECK_EQ(s.leader + s.followers + s.processing + s.joined, 0);
    /* shutdown released the followers itself: none was handed leadership on the way
     * out (a leader leaving after shutdown must not promote anybody) */
    CHECK_EQ(s.promotions, 0);
    /* after shutdown: every entry refuses, shutdown stays idempotent */
    CHECK(lf_follower_init(&f, 0) == 0);
    CHECK_EQ(lf_pool_lead(&pool, &f, NULL), ECANCELED);
    CHECK_EQ(lf_pool_join(&pool, &f, &src, NULL), ECANCELED);
    CHECK_EQ(lf_pool_shutdown(&pool), 0);
    CHECK_EQ(b.interrupts, 1);
    CHECK_EQ(lf_pool_destroy(&pool), 0);
    CHECK_EQ(lf_pool_lead(&pool, &f, NULL), EINVAL); /* destroyed */
    lf_follower_destroy(&f);
    src.ctx = NULL; /* b ends here */
}

/* B: a source that always has an event; the 5000th dispatch shuts the pool down */
static LFT_ATOMIC(long) b_dispatched;
static long b_next;

static int busy_wait(void *ctx, lf_event *ev, const struct timespec *deadline)
{
    (void)ctx;
    (void)deadline;
    ev->u64 = (uint64_t)b_next++;
    return 0;
}

static int busy_dispatch(void *ctx, lf_event *ev)
{
    (void)ctx;
    if (ev->u64 == 5000)
        CHECK_EQ(lf_pool_shutdown(&pool), 0);
    lft_sleep_ms(ev->u64 % 7 == 0); /* some dispatches are slow: shutdown under load */
    lft_add(&b_dispatched, 1L);
    return 0;
}

static void part_b(void)
{
    pthread_t t[K];
    struct lf_pool_stats s;

    src.ctx = NULL;
    src.wait = busy_wait;
    src.dispatch = busy_dispatch;
    src.interrupt = NULL; /* the wait never blocks, so nothing to interrupt */
    CHECK(lf_pool_init(&pool) == 0);
    for (long i = 0; i < K; i++) {
        has_deadline[i] = 0;
        CHECK(pthread_create(&t[i], NULL, joiner, (void *)i) == 0);
    }
    for (int i = 0; i < K; i++) {
        CHECK(pthread_join(t[i], NULL) == 0);
        CHECK_EQ(rc_of[i], ECANCELED);
    }
    /* every event taken by a leader was dispatched: none is lost at shutdown */
    CHECK_EQ(lft_load(&b_dispatched), b_next);
    CHECK(b_next > 5000);
    stats_now(&s);
    CHECK_EQ(s.leader + s.followers + s.processing + s.joined, 0);
    CHECK_EQ(lf_pool_destroy(&pool), 0);
}

static void part_c(void)
{
    lf_follower me, other;
    struct timespec dl;
    struct lf_pool_stats s;

    CHECK(lf_pool_init(&pool) == 0);
    CHECK(lf_follower_init(&me, 0) == 0);
    CHECK(lf_follower_init(&other, 0) == 0);
    CHECK_EQ(lf_pool_lead(&pool, &me, NULL), 0);
    /* other follows until its deadline (this thread is still the leader) */
    CHECK(lf_deadline_in(&dl, 50 * 1000000LL) == 0);
    double t0 = lft_now();
    CHECK_EQ(lf_pool_lead(&pool, &other, &dl), ETIMEDOUT);
    CHECK(lft_now() - t0 >= 0.049); /* not before the deadline */
    CHECK(lf_deadline_in(&dl, -1000000LL) == 0); /* already past */
    CHECK_EQ(lf_pool_lead(&pool, &other, &dl), ETIMEDOUT);
    stats_now(&s);
    CHECK_EQ(s.timeouts, 2);
    CHECK_EQ(s.followers, 0);
    CHECK_EQ(s.leader, 1);
    CHECK_EQ(lf_pool_leave(&pool, &me), 0);
    CHECK_EQ(lf_pool_destroy(&pool), 0);
    lf_follower_destroy(&me);
    lf_follower_destroy(&other);
}

static void part_d(void)
{
    blocker b;
    pthread_t t[2];
    struct lf_pool_stats s;

    blocker_init(&b);
    src.ctx = &b;
    src.wait = blocker_wait;
    src.dispatch = blocker_dispatch;
    src.interrupt = blocker_interrupt;
    CHECK(lf_pool_init(&pool) == 0);
    has_deadline[0] = 1;
    CHECK(lf_deadline_in(&deadline_of[0], 200 * 1000000LL) == 0);
    CHECK(pthread_create(&t[0], NULL, joiner, (void *)0L) == 0);
    while (blocker_waits(&b) < 1)
        lft_sleep_ms(1);
    has_deadline[1] = 0;
    CHECK(pthread_create(&t[1], NULL, joiner, (void *)1L) == 0);
    CHECK(pthread_join(t[0], NULL) == 0);
    CHECK_EQ(rc_of[0], ETIMEDOUT);
    /* leadership went on to thread 1, which now waits in the source */
    while (blocker_waits(&b) < 2)
        lft_sleep_ms(1);
    pthread_mutex_lock(&b.lock);
    CHECK_EQ(b.last_waiter, 1);
    pthread_mutex_unlock(&b.lock);
    stats_now(&s);
    CHECK_EQ(s.timeouts, 1);
    CHECK_EQ(s.leader, 1);
    CHECK_EQ(s.joined, 1);
    CHECK_EQ(lf_pool_shutdown(&pool), 0);
    CHECK(pthread_join(t[1], NULL) == 0);
    CHECK_EQ(rc_of[1], ECANCELED);
    CHECK_EQ(lf_pool_destroy(&pool), 0);
    src.ctx = NULL; /* b ends here */
}

int main(void)
{
    lft_start("t_pool_shutdown", 20);
    part_a();
    lft_progress();
    part_b();
    lft_progress();
    part_c();
    lft_progress();
    part_d();
    printf("t_pool_shutdown %s/%s: shutdown wakes all and interrupts the leader; deadlines hold\n",
           lf_promote_name(), lf_sync_name());
    return 0;
}
