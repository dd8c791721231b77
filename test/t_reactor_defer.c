/* Deferred promotions (lf.h, DEFERRAL): lf_reactor_run's leader may leave the follower
 * it promotes asleep while what it holds is young, and takes the promotion back when
 * it returns; the follower's own tick (LF_DEFER_NS) bounds how long.
 *
 * A. busy: two threads in lf_reactor_run, one client doing round trips one at a time.
 *    Every reply comes back; the counters add up (a deferred promotion is a promotion;
 *    with LF_DEFER_NS=0, or CONDVAR, none is deferred and no follower ticks; with it,
 *    some are).
 * B. the fallback: right after A (the pool is busy), a handler blocks until a second
 *    connection's handler has run. The second one must run while the first blocks:
 *    whether the first one's promotion was deferred (its follower leads at its tick)
 *    or not (the follower was woken at once).
 * C. idle: once the load stops, the follower's ticks stop (an idle pool has none).
 * D. long handlers: a handler busy for 200 us, while an event comes on another
 *    connection. If its promotion was deferred, the handles went unwatched that
 *    long, so the next wait (which returns at once) counts what it finds as a
 *    backlog and its promotion wakes the follower: promotions that woke the
 *    follower at once come in most rounds (before that rule, in none).
 * E. stop: right after a burst, lf_reactor_stop ends both threads (a leader promoted
 *    but asleep is woken for it).
 */
#include "../lf_reactor.h"
#include "lf_test.h"

#include <sys/socket.h>

#define RUNNERS 2

static lf_reactor r;
static LFT_ATOMIC(int) blocked, released;
static int poke_fd = -1; /* part D: the client's end of the second connection */

struct conn {
    lf_handler h;
};

/* 'b': block until released (at most 10 s); 'r': release; else echo the byte */
static int on_event(lf_handler *h, int fd, uint32_t events)
{
    unsigned char c;
    (void)h;
    if (events & LF_EV_CLOSE)
        return LF_REMOVE;
    if (read(fd, &c, 1) != 1)
        return LF_KEEP;
    if (c == 'b') {
        double t0 = lft_now();
        lft_store(&blocked, 1);
        while (!lft_load(&released) && lft_now() - t0 < 10.0)
            lft_sleep_ms(1);
    } else if (c == 'r') {
        lft_store(&released, 1);
    } else if (c == 'w') { /* a long handler (200 us) during which an event comes */
        unsigned char x = 'x';
        double t0 = lft_now();
        CHECK(write(poke_fd, &x, 1) == 1);
        while (lft_now() - t0 < 0.0002)
            ;
        CHECK(write(fd, &c, 1) == 1);
    } else {
        CHECK(write(fd, &c, 1) == 1);
    }
    return LF_KEEP;
}

static void *runner(void *arg)
{
    (void)arg;
    CHECK_EQ(lf_reactor_run(&r, NULL), ECANCELED);
    return NULL;
}

static struct lf_pool_stats pool_stats(void)
{
    struct lf_pool_stats s;
    CHECK_EQ(lf_pool_stats(&r.pool, &s), 0);
    return s;
}

static void round_trips(int fd, long n)
{
    for (long i = 0; i < n; i++) {
        unsigned char c = (unsigned char)('0' + i % 10), back = 0;
        CHECK(write(fd, &c, 1) == 1);
        CHECK(read(fd, &back, 1) == 1);
        CHECK_EQ(back, c);
        if (i % 256 == 0)
            lft_progress();
    }
}

int main(void)
{
    pthread_t th[RUNNERS];
    struct conn cn[2];
    int sv[2][2];
    struct lf_pool_stats s0, s1, s2;
    long n = (long)lft_scaled(20000);

    lft_start("t_reactor_defer", 60);
    CHECK_EQ(lf_reactor_init(&r), 0);
    for (int i = 0; i < 2; i++) {
        CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv[i]) == 0);
        lf_handler_init(&cn[i].h, on_event, NULL);
        CHECK_EQ(lf_reactor_register(&r, &cn[i].h, sv[i][1], LF_EV_READ), 0);
    }
    for (int i = 0; i < RUNNERS; i++)
        CHECK(pthread_create(&th[i], NULL, runner, NULL) == 0);

    /* A */
    s0 = pool_stats();
    round_trips(sv[0][0], n);
    s1 = pool_stats();
    CHECK(s1.deferred - s0.deferred <= s1.promotions - s0.promotions);
    CHECK(s1.tick_leads <= s1.deferred);
    if (!LF_DEFER_NS || LF_PROMOTE == LF_PROMOTE_CONDVAR) {
        CHECK_EQ(s1.deferred, 0);
        CHECK_EQ(s1.ticks, 0);
        CHECK_EQ(s1.tick_leads, 0);
    } else {
        /* a busy pool's next follower parks with a tick, and one request at a time
         * leaves nothing in hand: promotions are deferred (all but a few) */
        CHECK(s1.deferred - s0.deferred > 0);
    }
    printf("  A busy: %ld round trips; promotions %llu, deferred %llu, takeovers %llu, "
           "ticks %llu\n",
           n, s1.promotions - s0.promotions, s1.deferred - s0.deferred,
           s1.takeovers - s0.takeovers, s1.ticks - s0.ticks);

    /* B */
    round_trips(sv[0][0], 100); /* busy again, whatever A's end looked like */
    {
        unsigned char b = 'b', rr = 'r';
        CHECK(write(sv[0][0], &b, 1) == 1);
        AWAIT(lft_load(&blocked), "B: the first handler to block");
        CHECK(write(sv[1][0], &rr, 1) == 1);
        AWAIT(lft_load(&released), "B: the second handler to run while the first blocks");
    }
    s2 = pool_stats();
    printf("  B fallback: the second handler ran while the first blocked (tick leads %llu)\n",
           s2.tick_leads - s1.tick_leads);

    /* C */
    {
        unsigned long long before;
        double t0 = lft_now();
        do {
            before = pool_stats().ticks;
            lft_sleep_ms(100);
            lft_progress();
            CHECK(lft_now() - t0 < 30.0);
        } while (pool_stats().ticks != before);
        printf("  C idle: no tick for 100 ms after %.0f ms\n", (lft_now() - t0) * 1000);
    }

    /* D */
    poke_fd = sv[1][0];
    {
        struct lf_pool_stats a = pool_stats(), b;
        for (int i = 0; i < 30; i++) {
            unsigned char w = 'w', back0 = 0, back1 = 0;
            CHECK(write(sv[0][0], &w, 1) == 1);
            CHECK(read(sv[0][0], &back0, 1) == 1);
            CHECK(read(sv[1][0], &back1, 1) == 1);
            CHECK(back0 == 'w' && back1 == 'x');
            lft_progress();
        }
        b = pool_stats();
        /* each round: the promotion before the long handler woke the follower, or it
         * was deferred, and then the next wait returns at once after 200 us unwatched
         * and its promotion wakes it. (A round whose handler outlasts the tick may
         * count none: its follower leads by itself.) Before the rule, none did. */
        CHECK(b.promotions - a.promotions - (b.deferred - a.deferred) >= 3);
        printf("  D long handlers: 30 of 200 us; promotions %llu, of them deferred %llu\n",
               b.promotions - a.promotions, b.deferred - a.deferred);
    }

    /* E */
    round_trips(sv[0][0], 200);
    CHECK_EQ(lf_reactor_stop(&r), 0);
    for (int i = 0; i < RUNNERS; i++)
        lft_join(th[i]);
    CHECK_EQ(lf_reactor_destroy(&r), 0);
    for (int i = 0; i < 2; i++)
        close(sv[i][0]);
    printf("  E stop: right after a burst, both threads returned\n");
    printf("t_reactor_defer: ok\n");
    return 0;
}
