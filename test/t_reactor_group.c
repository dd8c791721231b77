/* lf_reactor_group: several handle sets, each with its own leader, one pool.
 *
 * - Traffic on SETS sets (one of them quiet) served by RUNNERS shared threads: every
 *   message exactly once and in order, one thread per handler, timers and
 *   notifications on every set, and the threads really are shared (some thread
 *   dispatched for more than one set; the pool hands leadership on).
 * - A quiet set holds one thread at most: the busy sets are still served.
 * - One set stopped alone: the others go on; the group's stop ends every thread.
 * - Bad input: init refuses NULL, repeated and concurrent sets, and sets of another
 *   group; a grouped set cannot be run, handled or destroyed on its own; a running
 *   group cannot be destroyed; a deadline ends run with ETIMEDOUT. */
#include "../lf_reactor.h"
#include "lf_test.h"

#include <sys/socket.h>

#define SETS 4 /* the last one is quiet: timers only */
#define CONNS 6 /* per busy set */
#define RUNNERS (SETS + 2)
#define PER_DISPATCH 3

typedef struct conn {
    lf_handler h;
    lf_timer timer;
    int set, peer;
    uint32_t next_seq; /* handler-only */
    LFT_ATOMIC(int) inside;
    LFT_ATOMIC(int) closes;
    int written; /* writer-only */
} conn;

static lf_reactor sets[SETS];
static lf_reactor *set_ptrs[SETS];
static lf_reactor_group g;
static conn conns[SETS][CONNS];
static long long msgs; /* per connection */
static LFT_ATOMIC(long long) received, ticks[SETS], notes, closed;
static LFT_ATOMIC(unsigned) served_mask[RUNNERS]; /* which sets each runner dispatched */
static _Thread_local int runner_id = -1;

static int on_event(lf_handler *h, int fd, uint32_t events)
{
    conn *c = (conn *)h;
    CHECK_EQ(lft_add(&c->inside, 1), 0); /* one thread per handler */
    if (runner_id >= 0)
        lft_add(&served_mask[runner_id], 1u << c->set);
    if (events & LF_EV_TIMEOUT)
        lft_add(&ticks[c->set], 1LL);
    if (events & LF_EV_NOTIFY)
        lft_add(&notes, 1LL);
    if (events & LF_EV_READ) {
        for (int k = 0; k < PER_DISPATCH; k++) {
            uint32_t m;
            ssize_t got = read(fd, &m, sizeof m);
            if (got < 0) {
                CHECK(errno == EAGAIN || errno == EWOULDBLOCK);
                break;
            }
            CHECK_EQ(got, (ssize_t)sizeof m); /* 4-byte writes on a stream: never split here */
            CHECK_EQ(m, c->next_seq);         /* exactly once, in order */
            c->next_seq++;
            lft_add(&received, 1LL);
        }
    }
    lft_add(&c->inside, -1);
    lft_progress();
    return LF_KEEP;
}

static void on_close(lf_handler *h)
{
    conn *c = (conn *)h;
    CHECK_EQ(lft_add(&c->closes, 1), 0);
    lft_add(&closed, 1LL);
}

static void *runner(void *arg)
{
    runner_id = (int)(long)arg;
    CHECK_EQ(lf_reactor_group_run(&g, NULL), ECANCELED);
    return NULL;
}

static void open_conn(int s, int i)
{
    int sv[2];
    conn *c = &conns[s][i];
    memset((void *)c, 0, sizeof *c);
    c->set = s;
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    CHECK(fcntl(sv[0], F_SETFL, O_NONBLOCK) == 0);
    c->peer = sv[1];
    lf_handler_init(&c->h, on_event, on_close);
    CHECK_EQ(lf_reactor_register(&sets[s], &c->h, sv[0], LF_EV_READ), 0);
}

static void setup(void)
{
    for (int s = 0; s < SETS; s++) {
        CHECK_EQ(lf_reactor_init(&sets[s]), 0);
        set_ptrs[s] = &sets[s];
    }
    CHECK_EQ(lf_reactor_group_init(&g, set_ptrs, SETS), 0);
    for (int s = 0; s < SETS; s++) {
        for (int i = 0; i < (s == SETS - 1 ? 1 : CONNS); i++)
            open_conn(s, i);
        /* a periodic timer in every set, the quiet one included */
        lf_timer_init(&conns[s][0].timer);
        CHECK_EQ(lf_reactor_timer_start(&sets[s], &conns[s][0].timer, &conns[s][0].h, 1000000,
                                        1000000),
                 0);
    }
}

static void teardown(int conns_per_busy_set)
{
    CHECK_EQ(lf_reactor_group_destroy(&g), 0);
    for (int s = 0; s < SETS; s++)
        CHECK_EQ(lf_reactor_destroy(&sets[s]), 0);
    CHECK_EQ(lft_load(&closed), (long long)(SETS - 1) * conns_per_busy_set + 1);
    for (int s = 0; s < SETS; s++)
        for (int i = 0; i < (s == SETS - 1 ? 1 : conns_per_busy_set); i++)
            close(conns[s][i].peer);
}

/* Write to the busy sets' connections, in rounds, with notifications between. */
static void write_all(int first_set, int last_set, long long count)
{
    unsigned long long rnd = 12345;
    for (long long k = 0; k < count; k++) {
        for (int s = first_set; s <= last_set; s++)
            for (int i = 0; i < CONNS; i++) {
                conn *c = &conns[s][i];
                uint32_t m = (uint32_t)c->written++;
                CHECK(write(c->peer, &m, sizeof m) == (ssize_t)sizeof m);
                if (lft_rand(&rnd) % 64 == 0)
                    CHECK_EQ(lf_reactor_notify(&sets[s], &c->h, LF_EV_NOTIFY), 0);
            }
        if (k % 64 == 0)
            lft_sleep_ms(1); /* let the sets drain: keep the socket buffers small */
    }
}

static void shared_traffic(void)
{
    pthread_t run[RUNNERS];
    struct lf_pool_stats ps;
    int ok, multi = 0;

    lft_store(&received, 0LL);
    lft_store(&closed, 0LL);
    setup();
    for (long i = 0; i < RUNNERS; i++)
        CHECK(pthread_create(&run[i], NULL, runner, (void *)i) == 0);
    write_all(0, SETS - 2, msgs);
    WAIT_FOR(ok, lft_load(&received) == (long long)(SETS - 1) * CONNS * msgs, 20000);
    CHECK(ok);
    /* every set's timer fires: the quiet set is led as well */
    for (int s = 0; s < SETS; s++)
        AWAIT(lft_load(&ticks[s]) >= 3, "ticks on every set");
    CHECK_EQ(lf_reactor_group_stop(&g), 0);
    for (int i = 0; i < RUNNERS; i++)
        CHECK(pthread_join(run[i], NULL) == 0);
    CHECK_EQ(lft_load(&received), (long long)(SETS - 1) * CONNS * msgs);
    for (int s = 0; s < SETS - 1; s++)
        for (int i = 0; i < CONNS; i++)
            CHECK_EQ(conns[s][i].next_seq, (uint32_t)msgs);
    for (int i = 0; i < RUNNERS; i++) {
        unsigned m = lft_load(&served_mask[i]);
        if (m & (m - 1))
            multi++; /* dispatched for two sets or more */
    }
    CHECK(multi > 0); /* the threads are shared, not one pool per set */
    CHECK_EQ(lf_pool_stats(&g.pool, &ps), 0);
    CHECK(ps.promotions > 0); /* set leadership came through the pool's promotions */
    CHECK_EQ(ps.leader + ps.followers + ps.processing + ps.joined, 0);
    CHECK(lft_load(&notes) > 0);
    teardown(CONNS);
    printf("t_reactor_group %s/%s: %d sets, %d threads, %lld messages exactly once; "
           "%d threads served several sets; %llu promotions, %llu vacant\n",
           lf_reactor_backend_name(), lf_promote_name(), SETS, RUNNERS, lft_load(&received), multi,
           ps.promotions, ps.promotions_vacant);
}

/* Stop one set alone: it gets nothing more, the others go on; then stop the group. */
static void stop_one_set(void)
{
    pthread_t run[RUNNERS];
    long long before;
    int ok;

    lft_store(&received, 0LL);
    lft_store(&closed, 0LL);
    for (int i = 0; i < RUNNERS; i++)
        lft_store(&served_mask[i], 0u);
    setup();
    for (long i = 0; i < RUNNERS; i++)
        CHECK(pthread_create(&run[i], NULL, runner, (void *)i) == 0);
    CHECK_EQ(lf_reactor_stop(&sets[0]), 0);
    /* set 0 takes nothing any more; sets 1 and 2 are served in full */
    CHECK_EQ(lf_reactor_notify(&sets[0], &conns[0][0].h, LF_EV_NOTIFY), ECANCELED);
    before = lft_load(&received);
    write_all(1, SETS - 2, 50);
    WAIT_FOR(ok, lft_load(&received) - before == (long long)(SETS - 2) * CONNS * 50, 20000);
    CHECK(ok);
    for (int i = 0; i < CONNS; i++)
        CHECK_EQ(conns[0][i].next_seq, 0u);
    CHECK_EQ(lf_reactor_group_stop(&g), 0);
    for (int i = 0; i < RUNNERS; i++)
        CHECK(pthread_join(run[i], NULL) == 0);
    teardown(CONNS);
}

static void bad_input(void)
{
    lf_reactor a, b;
    lf_reactor *two[2] = {&a, &b}, *twice[2] = {&a, &a}, *hole[2] = {&a, NULL};
    lf_reactor_group g2, g3;
    struct timespec dl;

    CHECK_EQ(lf_reactor_init(&a), 0);
    CHECK_EQ(lf_reactor_init(&b), 0);
    CHECK_EQ(lf_reactor_group_init(NULL, two, 2), EINVAL);
    CHECK_EQ(lf_reactor_group_init(&g2, NULL, 2), EINVAL);
    CHECK_EQ(lf_reactor_group_init(&g2, two, 0), EINVAL);
    CHECK_EQ(lf_reactor_group_init(&g2, twice, 2), EINVAL);
    CHECK_EQ(lf_reactor_group_init(&g2, hole, 2), EINVAL);
#if LF_REACTOR_BACKEND == LF_REACTOR_EPOLL
    {
        lf_reactor c;
        lf_reactor *conc[1] = {&c};
        CHECK_EQ(lf_reactor_init_flags(&c, LF_REACTOR_CONCURRENT), 0);
        CHECK_EQ(lf_reactor_group_init(&g2, conc, 1), EINVAL); /* it has no leader to give */
        CHECK_EQ(lf_reactor_destroy(&c), 0);
    }
#endif
    CHECK_EQ(lf_reactor_group_init(&g2, two, 2), 0);
    CHECK_EQ(lf_reactor_group_init(&g3, two + 1, 1), EBUSY); /* b is in g2 */
    /* a grouped set is led by its group only */
    CHECK_EQ(lf_reactor_run(&a, NULL), EBUSY);
    CHECK_EQ(lf_reactor_handle_events(&a, NULL), EBUSY);
    CHECK_EQ(lf_reactor_destroy(&a), EBUSY);
    /* a deadline ends the run */
    CHECK_EQ(lf_deadline_in(&dl, 20 * 1000000LL), 0);
    CHECK_EQ(lf_reactor_group_run(&g2, &dl), ETIMEDOUT);
    CHECK_EQ(lf_reactor_group_destroy(&g2), 0);
    CHECK_EQ(lf_reactor_group_destroy(&g2), EINVAL); /* destroyed already */
    /* free again: the sets can be run alone, or grouped anew */
    CHECK_EQ(lf_deadline_in(&dl, 1000000LL), 0);
    CHECK_EQ(lf_reactor_handle_events(&a, &dl), ETIMEDOUT);
    CHECK_EQ(lf_reactor_group_init(&g3, two + 1, 1), 0);
    CHECK_EQ(lf_reactor_group_destroy(&g3), 0);
    CHECK_EQ(lf_reactor_destroy(&a), 0);
    CHECK_EQ(lf_reactor_destroy(&b), 0);
}

static unsigned joined(lf_reactor_group *grp)
{
    struct lf_pool_stats ps;
    CHECK_EQ(lf_pool_stats(&grp->pool, &ps), 0);
    return ps.joined;
}

/* A running group cannot be destroyed; stop ends the thread; then it can. */
static void destroy_busy(void)
{
    lf_reactor a;
    lf_reactor *one[1] = {&a};
    pthread_t t;

    CHECK_EQ(lf_reactor_init(&a), 0);
    CHECK_EQ(lf_reactor_group_init(&g, one, 1), 0);
    CHECK(pthread_create(&t, NULL, runner, (void *)0L) == 0);
    AWAIT(joined(&g) == 1, "the runner joined");
    CHECK_EQ(lf_reactor_group_destroy(&g), EBUSY);
    CHECK_EQ(lf_reactor_group_stop(&g), 0);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK_EQ(lf_reactor_group_destroy(&g), 0);
    CHECK_EQ(lf_reactor_destroy(&a), 0);
}

int main(void)
{
    lft_start("t_reactor_group", 30);
    msgs = lft_scaled(2000);
    bad_input();
    destroy_busy();
    shared_traffic();
    stop_one_set();
    return 0;
}
