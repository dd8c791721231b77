/* Timers say which fired, and how often: lf_timer_fired(t) takes t's expiries since
 * the last call; a restart or a cancel forgets the ones not taken.
 *   A coalesce (one thread, turns by hand): two timers of one handler that expire
 *     while nobody turns come in one LF_EV_TIMEOUT dispatch, each counted once.
 *   B many (threads): one handler with NTIMERS one-shot timers, each restarted from
 *     the handler when it fired, ROUNDS times: every expiry is taken exactly once
 *     (the counts add up to the reactor's expiry count) and no timer is lost.
 *   C restart race: another thread arms a timer to fire at once, then restarts it for
 *     an hour, again and again, while the handler takes expiries: an expiry is never
 *     taken during an hour-long arming (a take that starts after the restart
 *     returned and ends before the next arming finds 0), one arming gives at most 1.
 *   D cancel race: the same with lf_reactor_timer_cancel in place of the restart.
 *   E behind: a periodic timer whose handler blocks for 20 periods reports the
 *     periods it missed (one expiry event, many periods); and one whose handler
 *     takes 2.5 periods every time is counted in full over 60 periods (it lost the
 *     part period at every late expiry: 80% counted).
 * Compiled once per promotion policy x backend. */
#include "../lf_reactor.h"
#include "lf_test.h"

#include <sys/eventfd.h>

#define THREADS 3
#define NTIMERS 8
#define HOUR (3600LL * 1000000000LL)

static lf_reactor R;

static int turn(long ms)
{
    struct timespec dl;
    CHECK_EQ(lf_deadline_in(&dl, ms * 1000000LL), 0);
    return lf_reactor_handle_events(&R, &dl);
}

static void *runner(void *arg)
{
    (void)arg;
    CHECK_EQ(lf_reactor_run(&R, NULL), ECANCELED);
    return NULL;
}

static int quiet_fd(void)
{
    int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); /* never readable: timers only */
    CHECK(fd >= 0);
    return fd;
}

/* ------------------------------------------------------------------ A */

static lf_timer ta, tb;
static int a_calls;
static unsigned long long a_fa, a_fb;
static uint32_t a_ev;

static int a_event(lf_handler *h, int fd, uint32_t ev)
{
    (void)h;
    (void)fd;
    a_calls++;
    a_ev = ev;
    a_fa += lf_timer_fired(&ta);
    a_fb += lf_timer_fired(&tb);
    return LF_KEEP;
}

static void coalesce(void)
{
    lf_handler h;
    CHECK_EQ(lf_reactor_init(&R), 0);
    lf_handler_init(&h, a_event, NULL);
    lf_timer_init(&ta);
    lf_timer_init(&tb);
    CHECK_EQ(lf_reactor_register(&R, &h, quiet_fd(), LF_EV_READ), 0);
    CHECK_EQ(lf_timer_fired(&ta), 0);
    CHECK_EQ(lf_reactor_timer_start(&R, &ta, &h, 1000000, 0), 0);
    CHECK_EQ(lf_reactor_timer_start(&R, &tb, &h, 2000000, 0), 0);
    lft_sleep_ms(10); /* both due, nobody turns */
    CHECK_EQ(turn(2000), 0);
    CHECK_EQ(a_calls, 1);
    CHECK_EQ(a_ev, LF_EV_TIMEOUT);
    CHECK_EQ(a_fa, 1);
    CHECK_EQ(a_fb, 1);
    CHECK_EQ(turn(20), ETIMEDOUT); /* one dispatch for both */
    CHECK_EQ(a_calls, 1);
    /* taken once: nothing more to take */
    CHECK_EQ(lf_timer_fired(&ta), 0);
    CHECK_EQ(lf_reactor_timer_start(&R, &ta, &h, 0, 0), 0);
    lft_sleep_ms(2);
    CHECK_EQ(turn(2000), 0);
    CHECK_EQ(a_fa, 2);
    CHECK_EQ(a_calls, 2);
    /* a restart forgets an expiry not taken: it expires while its handler is
     * deactivated (the TIMEOUT waits), then the timer is restarted for an hour */
    CHECK_EQ(lf_reactor_deactivate(&R, &h), 0);
    CHECK_EQ(lf_reactor_timer_start(&R, &ta, &h, 0, 0), 0);
    lft_sleep_ms(2);
    CHECK_EQ(turn(20), ETIMEDOUT); /* expired and posted; nothing dispatched */
    CHECK_EQ(lf_reactor_timer_start(&R, &ta, &h, HOUR, 0), 0);
    CHECK_EQ(lf_reactor_reactivate(&R, &h), 0);
    CHECK_EQ(turn(2000), 0); /* the TIMEOUT that waited: the timer says 0 */
    CHECK_EQ(a_calls, 3);
    CHECK_EQ(a_ev, LF_EV_TIMEOUT);
    CHECK_EQ(a_fa, 2);
    CHECK_EQ(lf_reactor_timer_cancel(&R, &ta), 0);
    /* a removal cancels h's armed timers, and forgets as a cancel does */
    CHECK_EQ(lf_reactor_deactivate(&R, &h), 0);
    CHECK_EQ(lf_reactor_timer_start(&R, &ta, &h, 0, HOUR), 0); /* periodic: armed after */
    lft_sleep_ms(2);
    CHECK_EQ(turn(20), ETIMEDOUT); /* expired, posted, not dispatched */
    CHECK_EQ(lf_reactor_remove(&R, &h), 0);
    CHECK_EQ(lf_timer_fired(&ta), 0);
    CHECK_EQ(lf_reactor_destroy(&R), 0);
}

/* ------------------------------------------------------------------ B */

static lf_timer many[NTIMERS];
static unsigned long long many_taken[NTIMERS];
static LFT_ATOMIC(int) many_done;
static long long rounds;
static LFT_ATOMIC(int) many_inside;

static int b_event(lf_handler *h, int fd, uint32_t ev)
{
    static unsigned long long rnd = 99;
    (void)fd;
    CHECK_EQ(lft_add(&many_inside, 1), 0);
    CHECK(ev & LF_EV_TIMEOUT);
    for (int i = 0; i < NTIMERS; i++) {
        unsigned long long f = lf_timer_fired(&many[i]);
        CHECK(f <= 1); /* one-shot */
        if (f == 0)
            continue;
        many_taken[i]++;
        if ((long long)many_taken[i] < rounds)
            CHECK_EQ(lf_reactor_timer_start(&R, &many[i], h, (long long)(lft_rand(&rnd) % 500000), 0), 0);
        else
            lft_add(&many_done, 1);
    }
    lft_add(&many_inside, -1);
    lft_progress();
    return LF_KEEP;
}

static void many_timers(void)
{
    pthread_t th[THREADS];
    lf_handler h;
    struct lf_reactor_stats st;
    unsigned long long sum = 0;

    rounds = lft_scaled(400);
    CHECK_EQ(lf_reactor_init(&R), 0);
    lf_handler_init(&h, b_event, NULL);
    CHECK_EQ(lf_reactor_register(&R, &h, quiet_fd(), LF_EV_READ), 0);
    for (int i = 0; i < NTIMERS; i++) {
        lf_timer_init(&many[i]);
        CHECK_EQ(lf_reactor_timer_start(&R, &many[i], &h, 100000LL * i, 0), 0);
    }
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_create(&th[i], NULL, runner, NULL) == 0);
    while (lft_load(&many_done) < NTIMERS)
        lft_sleep_ms(1); /* a timer lost: the watchdog */
    CHECK_EQ(lf_reactor_stop(&R), 0);
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_join(th[i], NULL) == 0);
    CHECK_EQ(lf_reactor_stats(&R, &st), 0);
    for (int i = 0; i < NTIMERS; i++) {
        CHECK_EQ((long long)many_taken[i], rounds);
        sum += many_taken[i];
    }
    CHECK_EQ(st.timers, sum); /* every expiry taken once, by its own timer */
    CHECK_EQ(lf_reactor_destroy(&R), 0);
    printf("  B many: %d timers on one handler, %llu expiries, each taken once by its timer\n",
           NTIMERS, sum);
}

/* ------------------------------------------------------------------ C, D */

static lf_timer rt;
static LFT_ATOMIC(long long) phase; /* even: armed to fire at once; odd: hour / cancelled */
static LFT_ATOMIC(long long) taken_nonzero;

static int cd_event(lf_handler *h, int fd, uint32_t ev)
{
    long long p1, p2;
    unsigned long long f;
    (void)h;
    (void)fd;
    (void)ev;
    p1 = lft_load(&phase);
    f = lf_timer_fired(&rt);
    p2 = lft_load(&phase);
    CHECK(f <= 1);
    if (f && p1 == p2 && (p1 & 1)) {
        fprintf(stderr, "an expiry taken during phase %lld, after the restart or cancel\n", p1);
        exit(1);
    }
    if (f)
        lft_add(&taken_nonzero, 1);
    lft_progress();
    return LF_KEEP;
}

static void restart_race(int cancel)
{
    pthread_t th[THREADS];
    lf_handler h;
    long long iters = lft_scaled(4000);
    CHECK_EQ(lf_reactor_init(&R), 0);
    lf_handler_init(&h, cd_event, NULL);
    lf_timer_init(&rt);
    lft_store(&phase, 0);
    lft_store(&taken_nonzero, 0);
    CHECK_EQ(lf_reactor_register(&R, &h, quiet_fd(), LF_EV_READ), 0);
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_create(&th[i], NULL, runner, NULL) == 0);
    for (long long i = 0; i < iters; i++) {
        long long before = lft_load(&taken_nonzero);
        lft_store(&phase, 2 * i);
        CHECK_EQ(lf_reactor_timer_start(&R, &rt, &h, 0, 0), 0);
        if (i % 16 == 0) /* now and then: until the handler has taken it */
            AWAIT(lft_load(&taken_nonzero) > before, "an expiry to be taken");
        else
            for (volatile int k = (int)(i % 7) * 300; k > 0; k--) {
            }
        if (cancel)
            (void)lf_reactor_timer_cancel(&R, &rt); /* ENOENT: it had expired */
        else
            CHECK_EQ(lf_reactor_timer_start(&R, &rt, &h, HOUR, 0), 0);
        lft_store(&phase, 2 * i + 1);
        lft_progress();
    }
    CHECK_EQ(lf_reactor_stop(&R), 0);
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_join(th[i], NULL) == 0);
    CHECK_EQ(lf_reactor_destroy(&R), 0);
    CHECK(lft_load(&taken_nonzero) >= iters / 16);
    printf("  %s race: %lld armings, %lld expiries taken, none after the %s\n",
           cancel ? "D cancel" : "C restart", iters, (long long)lft_load(&taken_nonzero),
           cancel ? "cancel" : "restart");
}

/* ------------------------------------------------------------------ E */

static lf_timer pt;
static int e_calls;
static unsigned long long e_counts[2];

static int e_event(lf_handler *h, int fd, uint32_t ev)
{
    (void)h;
    (void)fd;
    (void)ev;
    if (e_calls < 2)
        e_counts[e_calls] = lf_timer_fired(&pt);
    if (e_calls++ == 0)
        lft_sleep_ms(100); /* 20 periods */
    return LF_KEEP;
}

static void behind(void)
{
    lf_handler h;
    CHECK_EQ(lf_reactor_init(&R), 0);
    lf_handler_init(&h, e_event, NULL);
    lf_timer_init(&pt);
    CHECK_EQ(lf_reactor_register(&R, &h, quiet_fd(), LF_EV_READ), 0);
    CHECK_EQ(lf_reactor_timer_start(&R, &pt, &h, 5000000, 5000000), 0);
    while (e_calls < 2)
        CHECK_EQ(turn(2000), 0);
    CHECK_EQ(e_counts[0], 1);
    CHECK(e_counts[1] >= 10); /* the periods missed while it blocked: about 20 */
    CHECK_EQ(lf_reactor_timer_cancel(&R, &pt), 0);
    CHECK_EQ(lf_timer_fired(&pt), 0);
    CHECK_EQ(lf_reactor_destroy(&R), 0);
    printf("  E behind: a 5 ms period blocked for 100 ms reported %llu expiries at once\n",
           e_counts[1]);
}

static lf_timer st;
static double st_t0, st_last;
static unsigned long long st_sum;

static int st_event(lf_handler *h, int fd, uint32_t ev)
{
    (void)h;
    (void)fd;
    (void)ev;
    st_last = lft_now() - st_t0; /* every period ended by now is counted by now */
    st_sum += lf_timer_fired(&st);
    lft_sleep_ms(25);
    return LF_KEEP;
}

static void slow_periodic(void)
{
    lf_handler h;
    long long periods;
    CHECK_EQ(lf_reactor_init(&R), 0);
    lf_handler_init(&h, st_event, NULL);
    lf_timer_init(&st);
    CHECK_EQ(lf_reactor_register(&R, &h, quiet_fd(), LF_EV_READ), 0);
    st_sum = 0;
    st_t0 = lft_now();
    CHECK_EQ(lf_reactor_timer_start(&R, &st, &h, 10000000, 10000000), 0);
    while (lft_now() - st_t0 < 0.6) {
        CHECK_EQ(turn(2000), 0);
        lft_progress();
    }
    periods = (long long)(st_last / 0.010); /* ended before the last take, at most */
    if ((long long)st_sum < periods - 2) {
        fprintf(stderr, "slow periodic: %llu counted, %lld periods ended\n", st_sum, periods);
        exit(1);
    }
    CHECK((long long)st_sum <= periods + 1);
    CHECK_EQ(lf_reactor_destroy(&R), 0);
    printf("  E slow handler: %llu expiries counted for %lld periods ended\n", st_sum, periods);
}

int main(void)
{
    lft_start("t_reactor_timer_id", 30);
    printf("t_reactor_timer_id %s/%s:\n", lf_reactor_backend_name(), lf_promote_name());
    coalesce();
    many_timers();
    restart_race(0);
    restart_race(1);
    behind();
    slow_periodic();
    lft_pass();
    return 0;
}
