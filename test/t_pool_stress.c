/* Invariants under stress: THREADS threads run lf_pool_join over one event source for
 * EVENTS events (10^6 in the plain build).
 *   - at most one leader: the source's wait() counts the threads inside it with an
 *     atomic and fails on a second one;
 *   - every event dispatched exactly once: wait() hands out sequence numbers from a
 *     plain (non-atomic) counter that only the leader touches, dispatch() counts each;
 *   - no lost wake-up: some events are gated on a producer thread so the leader really
 *     blocks, one thread keeps timing out and rejoining, and the watchdog fails the
 *     test if progress stops;
 *   - a failing dispatch does not lose its thread: every 1000th dispatch fails, and
 *     every thread must still be inside lf_pool_join when the pool shuts down.
 * Afterwards the pool must be empty and its counters must add up. */
#include "../lf.h"
#include "lf_test.h"

#define THREADS 5
#define GATE_EVERY 64 /* every 64th event waits for the producer */

static lf_pool pool;
static long long events;
static unsigned char *seen; /* per event: times dispatched, at most 1 expected */
static LFT_ATOMIC(int) inside_wait;
static LFT_ATOMIC(int) inside_dispatch;
static LFT_ATOMIC(int) max_dispatch;
static LFT_ATOMIC(long long) dispatched;
static LFT_ATOMIC(long long) failures;
static long long next_event; /* leader-only: a second leader is a data race (TSan) */

/* the gate: the producer hands out tickets; the leader needs one per gated event */
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static long long tickets;
static int interrupted;

static int src_wait(void *ctx, lf_event *ev, const struct timespec *deadline)
{
    int rc = 0;
    (void)ctx;
    (void)deadline;
    CHECK_EQ(lft_add(&inside_wait, 1), 0); /* never two leaders */
    if (next_event >= events) {
        /* all handed out: block until shutdown interrupts us */
        pthread_mutex_lock(&gate_lock);
        while (!interrupted)
            pthread_cond_wait(&gate_cond, &gate_lock);
        pthread_mutex_unlock(&gate_lock);
        rc = EINTR;
    } else if (next_event % GATE_EVERY == 0) {
        pthread_mutex_lock(&gate_lock);
        while (tickets == 0 && !interrupted)
            pthread_cond_wait(&gate_cond, &gate_lock);
        if (tickets > 0) {
            tickets--;
            pthread_cond_broadcast(&gate_cond); /* the producer may post the next */
        } else {
            rc = EINTR;
        }
        pthread_mutex_unlock(&gate_lock);
    }
    if (rc == 0) {
        ev->u64 = (uint64_t)next_event++;
        ev->ptr = NULL;
    }
    lft_add(&inside_wait, -1);
    return rc;
}

static void src_interrupt(void *ctx)
{
    (void)ctx;
    pthread_mutex_lock(&gate_lock);
    interrupted = 1;
    pthread_cond_broadcast(&gate_cond);
    pthread_mutex_unlock(&gate_lock);
}

static int src_dispatch(void *ctx, lf_event *ev)
{
    unsigned long long r = ev->u64 * 0x9e3779b97f4a7c15ULL + 1;
    int n = lft_add(&inside_dispatch, 1) + 1, m = lft_load(&max_dispatch);
    (void)ctx;
    if (n > m)
        lft_store(&max_dispatch, n); /* a racy maximum is fine: it is only reported */
    CHECK(ev->u64 < (uint64_t)events);
    /* plain increment of this event's own byte: a second dispatch of the same event
     * is caught below even if it runs concurrently (the sum check) and by TSan */
    seen[ev->u64]++;
    for (unsigned long long i = 0, spin = lft_rand(&r) % 256; i < spin; i++)
        __asm__ __volatile__("" ::: "memory");
    if (lft_rand(&r) % 97 == 0)
        sched_yield();
    lft_add(&inside_dispatch, -1);
    if (lft_add(&dispatched, 1) + 1 == events)
        CHECK(lf_pool_shutdown(&pool) == 0);
    if ((lft_add(&dispatched, 0) & 1023) == 0)
        lft_progress();
    if (ev->u64 % 1000 == 999) {
        lft_add(&failures, 1);
        return EIO; /* the thread must survive this */
    }
    return 0;
}

static lf_source src;
static int join_rc[THREADS];
static long long rejoins;

static void *worker(void *arg)
{
    lf_follower f;
    struct timespec dl;
    int rc;

    int my_id = (int)(long)arg;
    CHECK(lf_follower_init(&f, my_id % 3) == 0);
    if (my_id == THREADS - 1) {
        /* the restless one: short deadlines, so timeouts race with promotions */
        do {
            CHECK(lf_deadline_in(&dl, 100000) == 0);
            rc = lf_pool_join(&pool, &f, &src, &dl);
            rejoins++;
        } while (rc == ETIMEDOUT);
    } else {
        rc = lf_pool_join(&pool, &f, &src, NULL);
    }
    join_rc[my_id] = rc;
    lf_follower_destroy(&f);
    return NULL;
}

/* At most one ticket outstanding, and some 20 us between tickets: the leader really
 * blocks at every gate, long enough for the processing threads to finish and park as
 * followers, so promotions reach them and the restless thread's deadlines expire. */
static void *producer(void *arg)
{
    struct timespec gap = {0, 20000};
    (void)arg;
    pthread_mutex_lock(&gate_lock);
    while (!interrupted) {
        if (tickets == 0) {
            pthread_mutex_unlock(&gate_lock);
            nanosleep(&gap, NULL);
            pthread_mutex_lock(&gate_lock);
            tickets++;
            pthread_cond_broadcast(&gate_cond);
        }
        if (!interrupted)
            pthread_cond_wait(&gate_cond, &gate_lock);
    }
    pthread_mutex_unlock(&gate_lock);
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS], prod;
    struct lf_pool_stats s;
    long long total = 0;

    lft_start("t_pool_stress", 30);
    events = lft_scaled(1000000);
    seen = (unsigned char *)calloc((size_t)events, 1);
    CHECK(seen != NULL);
    src.ctx = NULL;
    src.wait = src_wait;
    src.dispatch = src_dispatch;
    src.interrupt = src_interrupt;
    CHECK(lf_pool_init(&pool) == 0);
    double t0 = lft_now();
    CHECK(pthread_create(&prod, NULL, producer, NULL) == 0);
    for (long i = 0; i < THREADS; i++)
        CHECK(pthread_create(&t[i], NULL, worker, (void *)i) == 0);
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
    src_interrupt(NULL); /* shutdown may have found no leader to interrupt */
    CHECK(pthread_join(prod, NULL) == 0);
    double el = lft_now() - t0;

    for (long long i = 0; i < events; i++) {
        if (seen[i] != 1)
            fprintf(stderr, "event %lld dispatched %d times\n", i, seen[i]);
        CHECK_EQ(seen[i], 1);
        total += seen[i];
    }
    CHECK_EQ(total, events);
    CHECK_EQ(lft_load(&dispatched), events);
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(join_rc[i], ECANCELED); /* every thread was still joined at shutdown */
    CHECK(lf_pool_stats(&pool, &s) == 0);
    CHECK_EQ(s.dispatch_errors, lft_load(&failures));
    CHECK_EQ(s.dispatch_errors, events / 1000);
    CHECK_EQ(s.leader + s.followers + s.processing + s.joined, 0);
    /* every dispatched event came from one promotion (to a follower or to nobody);
     * the restless thread's timeouts hand leadership on as well */
    CHECK(s.promotions + s.promotions_vacant >= (unsigned long long)events);
    /* the run exercised what it claims to: hand-offs to parked followers, and
     * followers whose deadline passed */
    CHECK(s.promotions > 0);
    CHECK(s.timeouts > 0);
    CHECK(s.leads >= (unsigned long long)events);
    if (!LF_TAKEOVER)
        CHECK_EQ(s.takeovers, 0ULL); /* a strict hand-off on every promotion */
    CHECK(lf_pool_destroy(&pool) == 0);
    printf("t_pool_stress %s/%s: %lld events x %d threads in %.2f s, exactly once; "
           "promotions %llu (vacant %llu), takeovers %llu, timeouts %llu, rejoins %lld, "
           "max concurrent dispatch %d\n",
           lf_promote_name(), lf_sync_name(), events, THREADS, el, s.promotions,
           s.promotions_vacant, s.takeovers, s.timeouts, rejoins, lft_load(&max_dispatch));
    free(seen);
    return 0;
}
