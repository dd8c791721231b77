/* lf_pool_notify: Specific Notification for a reason other than leadership.
 *
 * - A notification that comes before the thread parks is kept: its next lead
 *   returns EINTR at once, then the one after leads as usual.
 * - A parked follower that is notified leaves the follower set: the next promotion
 *   goes to another follower, never to it.
 * - No lost wake-up: a leader that never leaves delivers MAIL messages to W
 *   followers, notifying each addressee; a follower sleeps only in lf_pool_lead, so
 *   one lost notification leaves mail unread forever and the watchdog fails. */
#include "../lf.h"
#include "lf_test.h"

#include <sched.h>

#define W 4

static lf_pool pool;
static LFT_ATOMIC(long long) mailbox[W], consumed[W], wakeups[W];
static lf_follower fol[W];
static LFT_ATOMIC(int) parked_once[W];

static unsigned followers_now(void)
{
    struct lf_pool_stats s;
    CHECK(lf_pool_stats(&pool, &s) == 0);
    return s.followers;
}

/* A follower's life: read its mail, sleep in lf_pool_lead, repeat until shutdown. */
static void *reader(void *arg)
{
    int id = (int)(long)arg;
    for (;;) {
        long long m = lft_load(&mailbox[id]);
        if (m > 0) {
            lft_add(&mailbox[id], -m);
            lft_add(&consumed[id], m);
            continue;
        }
        lft_store(&parked_once[id], 1);
        int rc = lf_pool_lead(&pool, &fol[id], NULL);
        if (rc == ECANCELED)
            return NULL;
        CHECK_EQ(rc, EINTR); /* the leader never leaves: only a notification wakes us */
        lft_add(&wakeups[id], 1LL);
    }
}

static void no_lost_wakeup(void)
{
    lf_follower lead;
    pthread_t t[W];
    long long mail = lft_scaled(40000), total = 0, sent[W] = {0};
    unsigned long long rnd = 42;
    struct lf_pool_stats s;

    CHECK_EQ(lf_pool_init(&pool), 0);
    CHECK_EQ(lf_follower_init(&lead, 0), 0);
    CHECK_EQ(lf_pool_lead(&pool, &lead, NULL), 0); /* the slot is ours for good */
    for (long i = 0; i < W; i++) {
        CHECK_EQ(lf_follower_init(&fol[i], 0), 0);
        lft_store(&mailbox[i], 0LL);
        lft_store(&consumed[i], 0LL);
        CHECK(pthread_create(&t[i], NULL, reader, (void *)i) == 0);
    }
    for (long long k = 0; k < mail; k++) {
        int to = (int)(lft_rand(&rnd) % W);
        lft_add(&mailbox[to], 1LL);
        sent[to]++;
        int nrc = lf_pool_notify(&pool, &fol[to]);
        CHECK(nrc == 0 || nrc == EBUSY); /* parked (woken), or not parked (kept) */
        /* every other message: wait until it is read, so the reader goes back to
         * sleep and the next notification races with its parking */
        if (k % 2 == 0)
            while (lft_load(&consumed[to]) < sent[to])
                sched_yield();
        if (k % 1024 == 0)
            lft_progress();
    }
    /* every message is read: a lost notification would leave one unread (watchdog) */
    for (;;) {
        total = 0;
        for (int i = 0; i < W; i++)
            total += lft_load(&consumed[i]);
        if (total == mail)
            break;
        lft_sleep_ms(1);
    }
    lft_progress();
    CHECK_EQ(lf_pool_stats(&pool, &s), 0);
    CHECK_EQ(s.notifications, (unsigned long long)mail);
    CHECK_EQ(s.promotions, 0ULL); /* nobody was woken to lead */
    CHECK_EQ(lf_pool_shutdown(&pool), 0);
    for (int i = 0; i < W; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
    CHECK_EQ(lf_pool_leave(&pool, &lead), 0);
    long long wk = 0;
    for (int i = 0; i < W; i++) {
        wk += lft_load(&wakeups[i]);
        lf_follower_destroy(&fol[i]);
    }
    lf_follower_destroy(&lead);
    CHECK_EQ(lf_pool_destroy(&pool), 0);
    printf("t_pool_notify %s/%s: %lld messages read after %lld wake-ups, none lost\n",
           lf_promote_name(), lf_sync_name(), mail, wk);
}

/* Notified before it parks: the next lead says EINTR at once; the one after leads. */
static void sticky(void)
{
    lf_follower a;
    struct lf_pool_stats s;

    CHECK_EQ(lf_pool_init(&pool), 0);
    CHECK_EQ(lf_follower_init(&a, 0), 0);
    CHECK_EQ(lf_pool_notify(&pool, &a), EBUSY); /* not parked: kept */
    CHECK_EQ(lf_pool_notify(&pool, &a), EBUSY); /* two before a wait: one EINTR */
    CHECK_EQ(lf_pool_lead(&pool, &a, NULL), EINTR);
    CHECK_EQ(lf_pool_lead(&pool, &a, NULL), 0);
    CHECK_EQ(lf_pool_notify(&pool, &a), EBUSY); /* while leading: kept for later */
    CHECK_EQ(lf_pool_stats(&pool, &s), 0);
    CHECK_EQ(s.leader, 1u); /* still the leader */
    CHECK_EQ(lf_pool_leave(&pool, &a), 0);
    CHECK_EQ(lf_pool_lead(&pool, &a, NULL), EINTR);
    CHECK_EQ(lf_pool_notify(NULL, &a), EINVAL);
    CHECK_EQ(lf_pool_notify(&pool, NULL), EINVAL);
    lf_follower_destroy(&a);
    CHECK_EQ(lf_pool_destroy(&pool), 0);
}

static int rc_b, rc_c;
static lf_follower fb, fc;

static void *park_b(void *arg)
{
    rc_b = lf_pool_lead(&pool, &fb, NULL);
    if (rc_b == 0)
        CHECK_EQ(lf_pool_leave(&pool, &fb), 0);
    return arg;
}

static void *park_c(void *arg)
{
    rc_c = lf_pool_lead(&pool, &fc, NULL);
    if (rc_c == 0)
        CHECK_EQ(lf_pool_leave(&pool, &fc), 0);
    return arg;
}

/* A notified follower leaves the set: the promotion goes to the other one. */
static void leaves_the_set(void)
{
    lf_follower a;
    pthread_t tb, tc;
    struct lf_pool_stats s;

    CHECK_EQ(lf_pool_init(&pool), 0);
    CHECK_EQ(lf_follower_init(&a, 0), 0);
    CHECK_EQ(lf_follower_init(&fb, 5), 0); /* HEAP would pick b first: notified instead */
    CHECK_EQ(lf_follower_init(&fc, 1), 0);
    CHECK_EQ(lf_pool_lead(&pool, &a, NULL), 0);
    CHECK(pthread_create(&tc, NULL, park_c, NULL) == 0);
    AWAIT(followers_now() == 1, "c parked");
    CHECK(pthread_create(&tb, NULL, park_b, NULL) == 0);
    AWAIT(followers_now() == 2, "b parked");
    CHECK_EQ(lf_pool_notify(&pool, &fb), 0);
    CHECK(pthread_join(tb, NULL) == 0);
    CHECK_EQ(rc_b, EINTR);
    CHECK_EQ(followers_now(), 1u); /* c still waits */
    CHECK_EQ(lf_pool_leave(&pool, &a), 0); /* hands the slot to c, the only one left */
    CHECK(pthread_join(tc, NULL) == 0);
    CHECK_EQ(rc_c, 0);
    CHECK_EQ(lf_pool_stats(&pool, &s), 0);
    CHECK_EQ(s.leader + s.followers + s.processing, 0u);
    CHECK_EQ(s.promotions, 1ULL);
    lf_follower_destroy(&a);
    lf_follower_destroy(&fb);
    lf_follower_destroy(&fc);
    CHECK_EQ(lf_pool_destroy(&pool), 0);
}

int main(void)
{
    lft_start("t_pool_notify", 30);
    sticky();
    leaves_the_set();
    no_lost_wakeup();
    return 0;
}
