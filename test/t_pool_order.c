/* Followers parked in a known order are promoted in exactly the policy's order:
 * LIFO newest first, FIFO oldest first, HEAP by priority then age, CONDVAR: each one
 * exactly once. A second round lets every other follower time out first, so the
 * policy's removal from the middle of its set is checked too. */
#include "../lf.h"
#include "lf_test.h"

#define K 24

static lf_pool pool;
static LFT_ATOMIC(int) order_len;
static int order[K];
static int prio[K];
static int rc_of[K];
static long timeout_ms[K];

static void *follower(void *arg)
{
    int id = (int)(long)arg;
    lf_follower f;
    struct timespec dl;

    CHECK(lf_follower_init(&f, prio[id]) == 0);
    if (timeout_ms[id])
        CHECK(lf_deadline_in(&dl, timeout_ms[id] * 1000000LL) == 0);
    rc_of[id] = lf_pool_lead(&pool, &f, timeout_ms[id] ? &dl : NULL);
    if (rc_of[id] == 0) {
        /* leader now: only one thread at a time gets here, so the list is ours */
        order[lft_add(&order_len, 1)] = id;
        lft_progress();
        CHECK(lf_pool_promote(&pool, &f) == 0);
        CHECK(lf_pool_leave(&pool, &f) == 0);
    }
    lf_follower_destroy(&f);
    return NULL;
}

static unsigned followers_now(void)
{
    struct lf_pool_stats s;
    CHECK(lf_pool_stats(&pool, &s) == 0);
    return s.followers;
}

#if LF_PROMOTE != LF_PROMOTE_CONDVAR
/* Does a come before b in this policy's promotion order? (park order = index) */
static int goes_first(int a, int b)
{
#if LF_PROMOTE == LF_PROMOTE_LIFO
    return a > b;
#elif LF_PROMOTE == LF_PROMOTE_FIFO
    return a < b;
#else
    return prio[a] != prio[b] ? prio[a] > prio[b] : a < b;
#endif
}
#endif

static void round_trip(int with_timeouts)
{
    pthread_t t[K];
    lf_follower self;
    struct lf_pool_stats s;
    int expected[K], n = 0, seen[K];

    lft_store(&order_len, 0);
    for (int i = 0; i < K; i++) {
        prio[i] = (int)((i * 7) % 5); /* repeats, so HEAP must break ties by age */
        timeout_ms[i] = with_timeouts && (i % 2) ? 300 : 0;
        rc_of[i] = -1;
    }
    CHECK(lf_pool_init(&pool) == 0);
    CHECK(lf_follower_init(&self, 0) == 0);
    CHECK(lf_pool_lead(&pool, &self, NULL) == 0);

    /* park the followers one at a time so their arrival order is known */
    for (int i = 0; i < K; i++) {
        CHECK(pthread_create(&t[i], NULL, follower, (void *)(long)i) == 0);
        while (followers_now() != (unsigned)i + 1)
            lft_sleep_ms(1);
        lft_progress();
    }
    if (with_timeouts) {
        while (followers_now() != K / 2)
            lft_sleep_ms(5);
        CHECK(lf_pool_stats(&pool, &s) == 0);
        CHECK_EQ(s.timeouts, K / 2);
    }
    CHECK(lf_pool_promote(&pool, &self) == 0);
    CHECK(lf_pool_leave(&pool, &self) == 0);
    for (int i = 0; i < K; i++)
        CHECK(pthread_join(t[i], NULL) == 0);

    for (int i = 0; i < K; i++) {
        if (timeout_ms[i]) {
            CHECK_EQ(rc_of[i], ETIMEDOUT);
        } else {
            CHECK_EQ(rc_of[i], 0);
            expected[n++] = i;
        }
    }
    CHECK_EQ(lft_load(&order_len), n);
#if LF_PROMOTE == LF_PROMOTE_CONDVAR
    /* no order is promised: each waiting follower led exactly once */
    memset(seen, 0, sizeof seen);
    for (int i = 0; i < n; i++)
        seen[order[i]]++;
    for (int i = 0; i < n; i++)
        CHECK_EQ(seen[expected[i]], 1);
#else
    (void)seen;
    for (int i = 1; i < n; i++) /* insertion sort by the policy's order */
        for (int j = i; j > 0 && goes_first(expected[j], expected[j - 1]); j--) {
            int x = expected[j];
            expected[j] = expected[j - 1];
            expected[j - 1] = x;
        }
    for (int i = 0; i < n; i++) {
        if (order[i] != expected[i])
            fprintf(stderr, "position %d: promoted %d, policy says %d\n", i, order[i], expected[i]);
        CHECK_EQ(order[i], expected[i]);
    }
#endif
    CHECK(lf_pool_stats(&pool, &s) == 0);
    CHECK_EQ(s.promotions, n);      /* the main thread's and every follower's but the last */
    CHECK_EQ(s.promotions_vacant, 1); /* the last leader found nobody */
    CHECK_EQ(s.leads, n + 1);
    CHECK_EQ(s.leader + s.followers + s.processing + s.joined, 0);
    lf_follower_destroy(&self);
    CHECK(lf_pool_destroy(&pool) == 0);
}

int main(void)
{
    lft_start("t_pool_order", 20);
    round_trip(0);
    round_trip(1);
    printf("t_pool_order %s/%s: %d followers promoted in policy order, with and without timeouts\n",
           lf_promote_name(), lf_sync_name(), K);
    return 0;
}
