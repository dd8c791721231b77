/* The roles of the pattern, observed:
 *   - the leader promotes a follower *before* it processes: while the first event is
 *     being dispatched, the next leader is already waiting in the source;
 *   - processing threads run concurrently: two dispatches meet inside dispatch();
 *   - the role counts reported by lf_pool_stats match what the threads are doing.
 * Each wait is bounded (10 s) so a broken pool fails instead of hanging. */
#include "../lf.h"
#include "lf_test.h"

#define THREADS 3

static lf_pool pool;
static LFT_ATOMIC(int) waits;     /* calls of wait() so far */
static LFT_ATOMIC(int) arrived;   /* events 1 and 2 that entered dispatch() */
static LFT_ATOMIC(int) met;       /* events 1 and 2 saw each other in dispatch */
static LFT_ATOMIC(int) snapped;   /* event 0 took its snapshot of the roles */
static long next_event;
static struct lf_pool_stats during;

static int until(LFT_ATOMIC(int) *v, int at_least)
{
    for (int i = 0; i < 10000; i++) {
        if (lft_load(v) >= at_least)
            return 1;
        lft_sleep_ms(1);
    }
    return 0;
}

static int roles_wait(void *ctx, lf_event *ev, const struct timespec *deadline)
{
    (void)ctx;
    (void)deadline;
    lft_add(&waits, 1);
    if (next_event == 3) { /* three events are enough */
        CHECK(lf_pool_shutdown(&pool) == 0);
        return EINTR;
    }
    ev->u64 = (uint64_t)next_event++;
    return 0;
}

static int roles_dispatch(void *ctx, lf_event *ev)
{
    (void)ctx;
    if (ev->u64 == 0) {
        /* promoted before processing: someone else is now the leader and has
         * entered wait() (for event 1) although event 0 is not processed yet */
        CHECK(until(&waits, 2));
        CHECK(lf_pool_stats(&pool, &during) == 0);
        lft_store(&snapped, 1);
        /* event 0 is still here; do not return until events 1 and 2 met, so the
         * threads that handle them cannot be this one */
        CHECK(until(&met, 1));
    } else {
        /* events 1 and 2: neither leaves before both arrived, and event 0 does not
         * leave before that either, so three dispatches run at once */
        lft_add(&arrived, 1);
        CHECK(until(&arrived, 2));
        CHECK(until(&snapped, 1)); /* nobody leaves the pool before the snapshot */
        lft_store(&met, 1);
    }
    lft_progress();
    return 0;
}

static lf_source src;

static void *worker(void *arg)
{
    lf_follower f;
    CHECK(lf_follower_init(&f, 0) == 0);
    CHECK_EQ(lf_pool_join(&pool, &f, &src, NULL), ECANCELED);
    lf_follower_destroy(&f);
    return arg;
}

int main(void)
{
    pthread_t t[THREADS];
    struct lf_pool_stats s;

    lft_start("t_pool_roles", 30);
    src.ctx = NULL;
    src.wait = roles_wait;
    src.dispatch = roles_dispatch;
    src.interrupt = NULL;
    CHECK(lf_pool_init(&pool) == 0);
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_create(&t[i], NULL, worker, NULL) == 0);
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
    /* the snapshot taken while event 0 was processed: at most one leader, at least
     * one processing thread (event 0's), the thread that entered the second wait in
     * a role too, and nobody in a role who has not joined. (A thread counts as joined
     * from its entry into lf_pool_join, a moment before it takes its first role: the
     * third thread may be there, or not joined yet, or in a role.) */
    CHECK(during.leader <= 1);
    CHECK(during.processing >= 1);
    CHECK(during.joined >= 2);
    CHECK(during.leader + during.followers + during.processing >= 2);
    CHECK(during.leader + during.followers + during.processing <= during.joined);
    CHECK(lf_pool_stats(&pool, &s) == 0);
    CHECK_EQ(s.leader + s.followers + s.processing + s.joined, 0);
    CHECK(lf_pool_destroy(&pool) == 0);
    printf("t_pool_roles %s/%s: promotion precedes processing; processing is concurrent\n",
           lf_promote_name(), lf_sync_name());
    return 0;
}
