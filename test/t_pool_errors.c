/* Bad arguments and role violations get their error codes and change nothing; a
 * failing dispatch does not lose its thread; a failing source ends the join with its
 * error after leadership is handed on. */
#include "../lf.h"
#include "lf_test.h"

static lf_pool pool;

static int count_wait(void *ctx, lf_event *ev, const struct timespec *deadline)
{
    int *n = (int *)ctx;
    (void)deadline;
    if (*n == 50) {
        CHECK_EQ(lf_pool_shutdown(&pool), 0);
        return EINTR;
    }
    ev->u64 = (uint64_t)(*n)++;
    return 0;
}

static pthread_t dispatcher;
static int dispatches;

static int failing_dispatch(void *ctx, lf_event *ev)
{
    (void)ctx;
    (void)ev;
    CHECK(pthread_equal(dispatcher, pthread_self())); /* the same, only thread */
    dispatches++;
    return EIO;
}

static int broken_wait(void *ctx, lf_event *ev, const struct timespec *deadline)
{
    (void)ctx;
    (void)ev;
    (void)deadline;
    return EBADF;
}

static int never_dispatch(void *ctx, lf_event *ev)
{
    (void)ctx;
    (void)ev;
    return 0;
}

/* A pool and a follower made on memory full of garbage (not zeroed, as malloc and
 * the stack give it): init sets every field. CONDVAR's reserved slot was left out
 * once, and the first thread into the empty pool then parked and nobody promoted it. */
static lf_pool gp;
static LFT_ATOMIC(int) gp_rc = -1;

static void *garbage_leader(void *arg)
{
    lf_follower f;
    memset((void *)&f, 0xA5, sizeof f);
    CHECK(lf_follower_init(&f, 0) == 0);
    lft_store(&gp_rc, lf_pool_lead(&gp, &f, NULL)); /* no deadline: blocks for good if wrong */
    if (lft_load(&gp_rc) == 0)
        CHECK_EQ(lf_pool_leave(&gp, &f), 0);
    lf_follower_destroy(&f);
    return arg;
}

static void on_garbage(void)
{
    pthread_t t;
    memset((void *)&gp, 0xA5, sizeof gp);
    CHECK_EQ(lf_pool_init(&gp), 0);
    CHECK(pthread_create(&t, NULL, garbage_leader, NULL) == 0);
    AWAIT(lft_load(&gp_rc) != -1, "the first thread into an empty pool to lead at once");
    CHECK(pthread_join(t, NULL) == 0);
    CHECK_EQ(lft_load(&gp_rc), 0);
    CHECK_EQ(lf_pool_destroy(&gp), 0);
}

/* A follower's deadline is never early: ETIMEDOUT only once CLOCK_MONOTONIC has
 * passed it (a 32-bit build with a 64-bit time_t once handed the kernel a timespec
 * in the wrong layout, which dropped the nanoseconds: up to a second early). */
static void *timed_follower(void *arg)
{
    lf_follower f;
    struct timespec dl, now;
    long long ms = *(long long *)arg;
    CHECK(lf_follower_init(&f, 0) == 0);
    CHECK_EQ(lf_deadline_in(&dl, ms * 1000000LL), 0);
    CHECK_EQ(lf_pool_lead(&gp, &f, &dl), ETIMEDOUT);
    CHECK(clock_gettime(CLOCK_MONOTONIC, &now) == 0);
    if (now.tv_sec < dl.tv_sec || (now.tv_sec == dl.tv_sec && now.tv_nsec < dl.tv_nsec))
        fprintf(stderr, "woke %.3f s before its deadline\n",
                (double)(dl.tv_sec - now.tv_sec) + (double)(dl.tv_nsec - now.tv_nsec) / 1e9);
    CHECK(now.tv_sec > dl.tv_sec || (now.tv_sec == dl.tv_sec && now.tv_nsec >= dl.tv_nsec));
    lf_follower_destroy(&f);
    return arg;
}

static void deadlines_never_early(void)
{
    lf_follower leader;
    long long ms[] = {130, 370, 610, 850};
    pthread_t t[4];
    CHECK_EQ(lf_pool_init(&gp), 0);
    CHECK(lf_follower_init(&leader, 0) == 0);
    CHECK_EQ(lf_pool_lead(&gp, &leader, NULL), 0); /* the slot is taken: they follow */
    for (int i = 0; i < 4; i++)
        CHECK(pthread_create(&t[i], NULL, timed_follower, &ms[i]) == 0);
    for (int i = 0; i < 4; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
    CHECK_EQ(lf_pool_leave(&gp, &leader), 0);
    CHECK_EQ(lf_pool_destroy(&gp), 0);
    lf_follower_destroy(&leader);
}

/* A source that always has work: join's deadline still ends the join (it was looked
 * at only when the wait would block, and a thread that found work forever stayed). */
static int busy_wait(void *ctx, lf_event *ev, const struct timespec *deadline)
{
    (void)ctx;
    (void)deadline;
    memset(ev, 0, sizeof *ev);
    return 0;
}

static int busy_dispatch(void *ctx, lf_event *ev)
{
    (void)ctx;
    (void)ev;
    return 0; /* no lft_progress: a join that never ends is the watchdog's */
}

static void deadline_under_work(void)
{
    lf_pool p;
    lf_follower f;
    lf_source s = {NULL, busy_wait, busy_dispatch, NULL};
    struct timespec dl;
    struct lf_pool_stats st;
    double t0 = lft_now();
    CHECK_EQ(lf_pool_init(&p), 0);
    CHECK_EQ(lf_follower_init(&f, 0), 0);
    CHECK_EQ(lf_deadline_in(&dl, 30 * 1000000LL), 0);
    CHECK_EQ(lf_pool_join(&p, &f, &s, &dl), ETIMEDOUT); /* (a hang: the watchdog) */
    CHECK(lft_now() - t0 >= 0.029);
    CHECK_EQ(lf_pool_stats(&p, &st), 0);
    CHECK_EQ(st.leader, 0);
    CHECK_EQ(st.processing, 0);
    CHECK_EQ(st.timeouts, 1);
    lf_follower_destroy(&f);
    CHECK_EQ(lf_pool_destroy(&p), 0);
}

int main(void)
{
    lf_follower a, b;
    lf_pool junk;
    lf_source s;
    struct lf_pool_stats st;
    struct timespec bad = {0, 1000000000L};
    int n = 0;

    lft_start("t_pool_errors", 20);
    on_garbage();
    deadlines_never_early();
    deadline_under_work();
    /* NULL and uninitialised objects */
    CHECK_EQ(lf_pool_init(NULL), EINVAL);
    CHECK_EQ(lf_follower_init(NULL, 0), EINVAL);
    memset(&junk, 0, sizeof junk);
    CHECK(lf_follower_init(&a, 0) == 0);
    CHECK(lf_follower_init(&b, 0) == 0);
    CHECK_EQ(lf_pool_lead(&junk, &a, NULL), EINVAL);
    CHECK_EQ(lf_pool_promote(&junk, &a), EINVAL);
    CHECK_EQ(lf_pool_shutdown(&junk), EINVAL);
    CHECK_EQ(lf_pool_destroy(&junk), EINVAL);
    CHECK_EQ(lf_pool_stats(&junk, &st), EINVAL);
    CHECK(lf_pool_init(&pool) == 0);
    CHECK_EQ(lf_pool_lead(NULL, &a, NULL), EINVAL);
    CHECK_EQ(lf_pool_lead(&pool, NULL, NULL), EINVAL);
    CHECK_EQ(lf_pool_promote(&pool, NULL), EINVAL);
    CHECK_EQ(lf_pool_leave(&pool, NULL), EINVAL);
    CHECK_EQ(lf_pool_stats(&pool, NULL), EINVAL);
    CHECK_EQ(lf_pool_lead(&pool, &a, &bad), EINVAL);

    /* role violations */
    CHECK_EQ(lf_pool_promote(&pool, &a), EPERM); /* nobody leads */
    CHECK_EQ(lf_pool_lead(&pool, &a, NULL), 0);
    CHECK_EQ(lf_pool_promote(&pool, &b), EPERM); /* b is not the leader */
    CHECK_EQ(lf_pool_lead(&pool, &a, NULL), EINVAL); /* already leads */
    CHECK_EQ(lf_pool_destroy(&pool), EBUSY);
    CHECK_EQ(lf_pool_promote(&pool, &a), 0);
    CHECK_EQ(lf_pool_promote(&pool, &a), EPERM); /* processing now, not leading */
    CHECK_EQ(lf_pool_destroy(&pool), EBUSY);     /* a processing thread is still out */
    CHECK(lf_pool_stats(&pool, &st) == 0);
    CHECK_EQ(st.processing, 1);
    CHECK_EQ(st.promotions_vacant, 1);
    CHECK_EQ(lf_pool_leave(&pool, &a), 0);
    CHECK_EQ(lf_pool_leave(&pool, &a), 0); /* leaving twice is harmless */
    CHECK(lf_pool_stats(&pool, &st) == 0);
    CHECK_EQ(st.leader + st.followers + st.processing + st.joined, 0);

    /* join argument checks */
    s.ctx = &n;
    s.wait = NULL;
    s.dispatch = failing_dispatch;
    s.interrupt = NULL;
    CHECK_EQ(lf_pool_join(&pool, &a, &s, NULL), EINVAL);
    CHECK_EQ(lf_pool_join(&pool, &a, NULL, NULL), EINVAL);
    s.wait = count_wait;
    CHECK_EQ(lf_pool_join(&pool, &a, &s, &bad), EINVAL);
    CHECK_EQ(lf_pool_lead(&pool, &b, NULL), 0);
    CHECK_EQ(lf_pool_join(&pool, &b, &s, NULL), EINVAL); /* b is leading already */
    CHECK_EQ(lf_pool_leave(&pool, &b), 0);

    /* a source that fails: the join returns its error and the slot is free again */
    s.wait = broken_wait;
    s.dispatch = never_dispatch;
    CHECK_EQ(lf_pool_join(&pool, &a, &s, NULL), EBADF);
    CHECK(lf_pool_stats(&pool, &st) == 0);
    CHECK_EQ(st.leader + st.followers + st.processing + st.joined, 0);

    /* every dispatch fails, and the one thread still handles all 50 events */
    s.wait = count_wait;
    s.dispatch = failing_dispatch;
    dispatcher = pthread_self();
    CHECK_EQ(lf_pool_join(&pool, &a, &s, NULL), ECANCELED);
    CHECK_EQ(dispatches, 50);
    CHECK(lf_pool_stats(&pool, &st) == 0);
    CHECK_EQ(st.dispatch_errors, 50);
    CHECK_EQ(lf_pool_destroy(&pool), 0);
    CHECK_EQ(lf_pool_destroy(&pool), EINVAL); /* twice */

    /* the names match the configuration this file was compiled with */
#if LF_PROMOTE == LF_PROMOTE_LIFO
    CHECK(strcmp(lf_promote_name(), "LIFO") == 0);
#elif LF_PROMOTE == LF_PROMOTE_FIFO
    CHECK(strcmp(lf_promote_name(), "FIFO") == 0);
#elif LF_PROMOTE == LF_PROMOTE_HEAP
    CHECK(strcmp(lf_promote_name(), "HEAP") == 0);
#else
    CHECK(strcmp(lf_promote_name(), "CONDVAR") == 0);
#endif
    lf_follower_destroy(&a);
    lf_follower_destroy(&b);
    printf("t_pool_errors %s/%s: bad input and role violations rejected\n", lf_promote_name(),
           lf_sync_name());
    return 0;
}
