/* REAL TIME in lf.h: under LF_PROMOTE_HEAP the pool's lock inherits priority, so a
 * thread of high priority that needs it waits for the critical section of a thread
 * of low priority, never for a thread of middle priority that has nothing to do with
 * the pool.
 *
 * Three SCHED_FIFO threads pinned to one CPU: L (priority 10) takes the pool's lock
 * through the public API, M (20) spins for 20 ms now and then without touching the
 * pool, H (30) needs the lock while M spins. On one CPU under SCHED_FIFO the order is
 * the scheduler's contract, not a matter of timing: while M spins, L runs only if
 * something lends it a priority above M's. With inheritance, H blocked on the lock
 * lends L its own, L finishes its critical section, and H holds the lock before M's
 * spin has ended. With a plain lock L waits for the end of M's spin, and H with it.
 * So H records, when its calls return, whether M's spin is over; M marks the end of
 * each spin with its number.
 *
 * A. Every round, L holds the lock for sure: it leads in lf_pool_join, and its
 *    source's wait calls lf_pool_shutdown, which calls the source's interrupt under
 *    the pool's lock (the doc block says so); the interrupt wakes M, which preempts
 *    L there. M wakes H as its spin begins; H calls lf_pool_stats. Checked each
 *    round: L was inside its critical section when H asked (the round tests
 *    something) and had left it when H's call returned (H waited for it); HEAP: M's
 *    spin had not ended, and L ran while H waited (below).
 * B. Wherever L is: from a few ms before each of M's spins until the spin is over, L
 *    goes round lf_pool_lead, lf_pool_stats and lf_pool_promote without a pause, and
 *    M's spins start on a timer, so M preempts L inside the lock in some rounds and
 *    outside it in others. H, woken as each spin begins, calls lf_pool_stats and
 *    lf_pool_try_lead (and lf_pool_leave when it led). Checked each round (HEAP): M's
 *    spin had not ended when H's calls returned. Counted: the rounds in which H waited
 *    for L's critical section.
 * "L ran while H waited" is read off L's CPU-time clock, before and after H's calls:
 * H reads it on L's CPU, where L is not running then, so it stands still in between
 * unless L ran; and L, below M, runs while M's spin goes on only at a priority lent.
 *
 * Policies: HEAP checks all of it (and stats.prio_inherit == 1). LIFO, FIFO and
 * CONDVAR keep a plain lock (stats.prio_inherit == 0, checked): they run the same
 * rounds and every check but the order against M's spin, and print how many rounds H
 * waited for M's whole spin (A: every one; the inversion that HEAP removes). Built
 * against a copy of lf.h whose HEAP lock drops the attribute but still says 1, the
 * test fails in every run, in part A's first round (part B alone: in every run too,
 * within its first few rounds).
 * Skipped, with a message: not Linux (CPU affinity); SCHED_FIFO refused (not root,
 * EPERM); a HEAP pool whose system refused the inheriting lock (stats.prio_inherit 0:
 * a kernel without PI futexes). Real-time work takes at most about 80% of the CPU
 * at any time and the test about 1.3 s (Linux throttles real-time threads at 95% of
 * each second, and a throttled CPU would make M's spins late and back to back); the
 * main thread and the watchdog run on another CPU where there is one, and on the
 * same one otherwise (they only sleep and look). Each thread drops SCHED_FIFO before
 * it returns (see rt_leave). Under ThreadSanitizer its deadlock detector is off (see
 * __tsan_default_options). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier): sched_setaffinity, CPU_* */
#endif
#include "../lf.h"
#include "lf_test.h"

#ifdef __linux__
#include <sched.h>
#include <semaphore.h>

#define PRIO_L 10
#define PRIO_M 20
#define PRIO_H 30
#define SPIN_MS 20      /* M's spin */
#define ROUNDS_A 10     /* part A: a fresh pool each, about 25 ms */
#define ROUNDS_B 32     /* part B: one spin per period */
#define PERIOD_B_MS 28  /* part B: 20 ms spin, 8 ms gap (about 0.9 s) */
#define LEAD_B_MS 3     /* part B: L's calls begin this long before each spin */
#define GAP_A_MS 6      /* part A: between rounds */

#if LF_PROMOTE == LF_PROMOTE_HEAP
#define HEAP 1
#else
#define HEAP 0
#endif

#ifdef LFT_TSAN
/* ThreadSanitizer's deadlock detector keeps its books for every pthread_mutex_lock
 * and unlock under locks of its own, which inherit nothing: L preempted there makes H
 * wait for M whatever the pool's lock does (part B met it in every run). This test
 * takes one lock, so there is no order of locks to check; TSAN_OPTIONS still wins. */
const char *__tsan_default_options(void); /* NOLINT(bugprone-reserved-identifier) */
const char *__tsan_default_options(void)  /* NOLINT(bugprone-reserved-identifier) */
{
    return "detect_deadlocks=0";
}
#endif

static int rt_cpu; /* L, M and H run here */
static cpu_set_t all_cpus; /* the CPUs the process may use */
static pthread_t l_thread;
static lf_pool pool;
static sem_t l_go, m_go, h_go;
static LFT_ATOMIC(int) round_no;  /* the round under way (1-based) */
static LFT_ATOMIC(int) m_spin;    /* the spin M has begun */
static LFT_ATOMIC(int) m_done;    /* the spin M has ended */
static LFT_ATOMIC(int) l_done;    /* part A: the round whose join L has left */
static LFT_ATOMIC(int) h_done;    /* the round H has finished */
static LFT_ATOMIC(int) l_inside;  /* part A: L is inside the interrupt (lock held) */
static LFT_ATOMIC(long) l_steps;  /* part B: rounds of public calls L has completed */
static LFT_ATOMIC(int) stop;
static LFT_ATOMIC(int) ready;     /* threads on rt_cpu at their priority */

/* what H saw in each round */
static struct {
    int asked_inside;    /* A: L held the lock when H asked */
    int returned_after;  /* A: L had left its critical section when H's call returned */
    int lent;            /* L ran while H was inside its calls, before M's spin ended */
    int m_ended;         /* M's spin was over when H's calls returned */
    unsigned inherits;   /* H's snapshot: stats.prio_inherit */
} seen[ROUNDS_B + 1];

static void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    CHECK(sched_setaffinity(0, sizeof set, &set) == 0);
}

static int set_fifo(int prio)
{
    struct sched_param sp;
    memset(&sp, 0, sizeof sp);
    sp.sched_priority = prio;
    return pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
}

static void rt_enter(int prio)
{
    pin(rt_cpu);
    CHECK_EQ(set_fifo(prio), 0);
    lft_add(&ready, 1);
}

/* Before a thread returns: its exit runs spin locks of the C library and the
 * sanitizers (ASan's quarantine), and a SCHED_FIFO thread that spins, yielding only to
 * its equals, on a lock a lower one holds on its CPU never lets it go. */
static void rt_leave(void)
{
    struct sched_param sp;
    memset(&sp, 0, sizeof sp);
    CHECK_EQ(pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp), 0);
    CHECK(sched_setaffinity(0, sizeof all_cpus, &all_cpus) == 0);
}

static void sem_take(sem_t *s)
{
    while (sem_wait(s) != 0)
        CHECK(errno == EINTR);
}

/* L's CPU time so far: read by H, on L's CPU, so L is not running then */
static long long l_cpu_ns(void)
{
    clockid_t c;
    struct timespec ts;
    CHECK_EQ(pthread_getcpuclockid(l_thread, &c), 0);
    CHECK(clock_gettime(c, &ts) == 0);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void spin_ms(int ms)
{
    double end = lft_now() + ms / 1000.0;
    while (lft_now() < end) {
    }
}

/* ---- part A: L holds the lock in its source's interrupt */

static int a_wait(void *ctx, lf_event *ev, const struct timespec *deadline)
{
    (void)ctx;
    (void)ev;
    (void)deadline;
    CHECK_EQ(lf_pool_shutdown(&pool), 0); /* runs a_interrupt under the pool's lock */
    return ECANCELED;
}

static void a_interrupt(void *ctx)
{
    (void)ctx;
    lft_store(&l_inside, 1);
    CHECK_EQ(sem_post(&m_go), 0); /* M preempts us here, the lock held */
    lft_store(&l_inside, 0);
}

static int a_dispatch(void *ctx, lf_event *ev)
{
    (void)ctx;
    (void)ev;
    CHECK(0); /* a_wait never yields an event */
    return 0;
}

static void *a_low(void *arg)
{
    lf_follower f;
    lf_source src;
    (void)arg;
    rt_enter(PRIO_L);
    memset(&src, 0, sizeof src);
    src.wait = a_wait;
    src.dispatch = a_dispatch;
    src.interrupt = a_interrupt;
    CHECK_EQ(lf_follower_init(&f, PRIO_L), 0);
    for (;;) {
        sem_take(&l_go);
        if (lft_load(&stop))
            break;
        CHECK_EQ(lf_pool_join(&pool, &f, &src, NULL), ECANCELED);
        lft_store(&l_done, lft_load(&round_no));
    }
    lf_follower_destroy(&f);
    rt_leave();
    return NULL;
}

/* M, both parts: a spin of SPIN_MS per go (A) or per period (B). */
static void m_round(int k)
{
    lft_store(&m_spin, k);
    CHECK_EQ(sem_post(&h_go), 0); /* H preempts us here */
    spin_ms(SPIN_MS);
    lft_store(&m_done, k);
}

static void *a_mid(void *arg)
{
    (void)arg;
    rt_enter(PRIO_M);
    for (;;) {
        sem_take(&m_go);
        if (lft_load(&stop))
            break;
        m_round(lft_load(&round_no));
    }
    rt_leave();
    return NULL;
}

static void *a_high(void *arg)
{
    (void)arg;
    rt_enter(PRIO_H);
    for (;;) {
        struct lf_pool_stats st;
        long long before;
        int k;
        sem_take(&h_go);
        if (lft_load(&stop))
            break;
        k = lft_load(&m_spin);
        seen[k].asked_inside = lft_load(&l_inside);
        before = l_cpu_ns();
        CHECK_EQ(lf_pool_stats(&pool, &st), 0); /* the lock L holds */
        seen[k].m_ended = lft_load(&m_done) >= k;
        seen[k].lent = l_cpu_ns() > before && !seen[k].m_ended;
        seen[k].returned_after = !lft_load(&l_inside);
        seen[k].inherits = st.prio_inherit;
        lft_store(&h_done, k);
    }
    rt_leave();
    return NULL;
}

static void start(pthread_t t[3], void *(*low)(void *), void *(*mid)(void *),
                  void *(*high)(void *))
{
    lft_store(&stop, 0);
    lft_store(&round_no, 0);
    lft_store(&m_spin, 0);
    lft_store(&m_done, 0);
    lft_store(&l_done, 0);
    lft_store(&h_done, 0);
    lft_store(&ready, 0);
    memset(seen, 0, sizeof seen);
    CHECK(pthread_create(&t[0], NULL, low, NULL) == 0);
    l_thread = t[0]; /* (H, made below, reads it) */
    CHECK(pthread_create(&t[1], NULL, mid, NULL) == 0);
    CHECK(pthread_create(&t[2], NULL, high, NULL) == 0);
    /* a round begun before then would run part of it elsewhere, or as SCHED_OTHER */
    AWAIT(lft_load(&ready) == 3, "L, M and H on their CPU at their priorities");
}

static void stop_all(pthread_t t[3])
{
    lft_store(&stop, 1);
    CHECK_EQ(sem_post(&l_go), 0);
    CHECK_EQ(sem_post(&m_go), 0);
    CHECK_EQ(sem_post(&h_go), 0);
    for (int i = 0; i < 3; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
}

static int part_a(unsigned inherits)
{
    pthread_t t[3];
    int late = 0;

    start(t, a_low, a_mid, a_high);
    for (int k = 1; k <= ROUNDS_A; k++) {
        struct lf_pool_stats st;
        CHECK_EQ(lf_pool_init(&pool), 0);
        CHECK_EQ(lf_pool_stats(&pool, &st), 0);
        CHECK_EQ(st.prio_inherit, inherits);
        lft_store(&round_no, k);
        CHECK_EQ(sem_post(&l_go), 0);
        AWAIT(lft_load(&l_done) == k && lft_load(&m_done) == k && lft_load(&h_done) == k,
              "part A: L, M and H through the round");
        CHECK_EQ(lf_pool_destroy(&pool), 0); /* nobody left in it */
        lft_sleep_ms(GAP_A_MS);
        CHECK_EQ(seen[k].inherits, inherits);
        CHECK(seen[k].asked_inside);  /* H met the lock held: the round tests something */
        CHECK(seen[k].returned_after); /* and got it only after L had let go */
        if (seen[k].m_ended) {
            late++;
            if (HEAP && inherits)
                fprintf(stderr, "part A round %d: H got the pool's lock only after M's %d ms "
                        "spin had ended: priority inversion\n", k, SPIN_MS);
        }
        if (HEAP && inherits) {
            CHECK(!seen[k].m_ended);
            CHECK(seen[k].lent); /* L ran at H's priority while M's spin went on */
        }
        lft_progress();
    }
    stop_all(t);
    return late;
}

/* ---- part B: L goes round the public calls, M's spins come on a timer */

static LFT_ATOMIC(long long) b_base; /* CLOCK_MONOTONIC ns: round k's spin is due at
                                     * b_base + k * PERIOD_B_MS */

static long long due_ns(int k, int early_ms)
{
    long long base;
    while ((base = lft_load(&b_base)) == 0) /* part_b sets it once all are ready */
        lft_sleep_ms(1);
    return base + (k * PERIOD_B_MS - early_ms) * 1000000LL;
}

static void sleep_until(long long ns)
{
    struct timespec ts;
    int rc;
    ts.tv_sec = (time_t)(ns / 1000000000LL);
    ts.tv_nsec = (long)(ns % 1000000000LL);
    while ((rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL)) == EINTR) {
    }
    CHECK_EQ(rc, 0);
}

/* From LEAD_B_MS before each spin until the spin is over: L sleeps the rest of the
 * period, so the CPU is not all real-time work (which Linux would throttle) and
 * the main thread and the kernel's own threads get their turn on it. */
static void *b_low(void *arg)
{
    lf_follower f;
    (void)arg;
    rt_enter(PRIO_L);
    CHECK_EQ(lf_follower_init(&f, PRIO_L), 0);
    for (int k = 1; k <= ROUNDS_B && !lft_load(&stop); k++) {
        sleep_until(due_ns(k, LEAD_B_MS));
        while (lft_load(&m_spin) < k && !lft_load(&stop)) {
            struct lf_pool_stats st;
            CHECK_EQ(lf_pool_lead(&pool, &f, NULL), 0); /* (vacant, or taken by L) */
            CHECK_EQ(lf_pool_stats(&pool, &st), 0);
            CHECK_EQ(lf_pool_promote(&pool, &f), 0);
            lft_add(&l_steps, 1L);
        }
    }
    CHECK_EQ(lf_pool_leave(&pool, &f), 0);
    lf_follower_destroy(&f);
    rt_leave();
    return NULL;
}

static void *b_mid(void *arg)
{
    (void)arg;
    rt_enter(PRIO_M);
    for (int k = 1; k <= ROUNDS_B && !lft_load(&stop); k++) {
        sleep_until(due_ns(k, 0));
        m_round(k); /* preempts L wherever it is */
    }
    sem_take(&m_go); /* until stop_all */
    rt_leave();
    return NULL;
}

static void *b_high(void *arg)
{
    lf_follower f;
    (void)arg;
    rt_enter(PRIO_H);
    CHECK_EQ(lf_follower_init(&f, PRIO_H), 0);
    for (;;) {
        struct lf_pool_stats st;
        long long before;
        int k, rc;
        sem_take(&h_go);
        if (lft_load(&stop))
            break;
        k = lft_load(&m_spin);
        before = l_cpu_ns();
        CHECK_EQ(lf_pool_stats(&pool, &st), 0);
        rc = lf_pool_try_lead(&pool, &f); /* 0 while L processes */
        if (rc == 0)
            CHECK_EQ(lf_pool_leave(&pool, &f), 0);
        else
            CHECK_EQ(rc, EBUSY);
        seen[k].m_ended = lft_load(&m_done) >= k;
        seen[k].lent = l_cpu_ns() > before && !seen[k].m_ended;
        seen[k].inherits = st.prio_inherit;
        lft_store(&h_done, k);
    }
    lf_follower_destroy(&f);
    rt_leave();
    return NULL;
}

static void part_b(unsigned inherits, int *late, int *lent)
{
    pthread_t t[3];

    *late = *lent = 0;
    CHECK_EQ(lf_pool_init(&pool), 0);
    lft_store(&l_steps, 0L);
    lft_store(&b_base, 0LL);
    start(t, b_low, b_mid, b_high);
    {
        struct timespec now;
        CHECK(clock_gettime(CLOCK_MONOTONIC, &now) == 0);
        lft_store(&b_base, (long long)now.tv_sec * 1000000000LL + now.tv_nsec);
    }
    for (int k = 1; k <= ROUNDS_B; k++) {
        AWAIT(lft_load(&m_done) >= k && lft_load(&h_done) >= k,
              "part B: M and H through the round");
        CHECK_EQ(seen[k].inherits, inherits);
        if (seen[k].m_ended) {
            ++*late;
            if (HEAP && inherits)
                fprintf(stderr, "part B round %d: H got the pool's lock only after M's %d ms "
                        "spin had ended: priority inversion\n", k, SPIN_MS);
        }
        if (HEAP && inherits)
            CHECK(!seen[k].m_ended);
        *lent += seen[k].lent;
        lft_progress();
    }
    CHECK(lft_load(&l_steps) > 0);
    stop_all(t);
    CHECK_EQ(lf_pool_destroy(&pool), 0);
}

static void *try_fifo(void *arg)
{
    *(int *)arg = set_fifo(PRIO_L);
    if (*(int *)arg == 0)
        rt_leave();
    return NULL;
}

int main(void)
{
    pthread_t probe;
    struct lf_pool_stats st;
    unsigned inherits;
    int err = EPERM, other = -1, late_a, late_b, lent_b;

    printf("t_pool_inversion %s/%s:\n", lf_promote_name(), lf_sync_name());
    CPU_ZERO(&all_cpus);
    CHECK(sched_getaffinity(0, sizeof all_cpus, &all_cpus) == 0);
    rt_cpu = -1;
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, &all_cpus))
            continue;
        if (rt_cpu < 0)
            rt_cpu = c; /* the first CPU we may use for L, M and H */
        else if (other < 0)
            other = c; /* the next for everybody else */
    }
    CHECK(rt_cpu >= 0);
    if (other >= 0)
        pin(other); /* before the watchdog starts: it inherits this */
    lft_start("t_pool_inversion", 30);

    CHECK(pthread_create(&probe, NULL, try_fifo, &err) == 0);
    CHECK(pthread_join(probe, NULL) == 0);
    if (err != 0) {
        printf("t_pool_inversion: SCHED_FIFO refused (error %d%s); skipped\n", err,
               err != EPERM ? "" : geteuid() != 0 ? ", EPERM: not root" : ", EPERM: refused here");
        return 0;
    }
    CHECK_EQ(lf_pool_init(&pool), 0);
    CHECK_EQ(lf_pool_stats(&pool, &st), 0);
    CHECK_EQ(lf_pool_destroy(&pool), 0);
    inherits = st.prio_inherit;
    if (!HEAP)
        CHECK_EQ(inherits, 0u); /* LIFO, FIFO, CONDVAR: a plain lock */
    if (HEAP && !inherits) {
        printf("t_pool_inversion: this system refused the pool's lock PTHREAD_PRIO_INHERIT "
               "(stats.prio_inherit 0); skipped\n");
        return 0;
    }
    CHECK(sem_init(&l_go, 0, 0) == 0 && sem_init(&m_go, 0, 0) == 0 && sem_init(&h_go, 0, 0) == 0);

    late_a = part_a(inherits);
    printf("  A: L preempted by M with the lock held, %d rounds: H waited for L's critical "
           "section every time; for the end of M's %d ms spin %d times%s\n",
           ROUNDS_A, SPIN_MS, late_a, HEAP ? "" : " (a plain lock: expected)");
    part_b(inherits, &late_b, &lent_b);
    printf("  B: M's spins on a timer over L's calls, %d rounds: L ran at H's priority to "
           "finish its critical section in %d, H waited for the end of M's spin in %d%s\n",
           ROUNDS_B, lent_b, late_b, HEAP ? "" : " (a plain lock: expected)");
    if (other < 0)
        printf("  (one CPU: the main thread shared it with L, M and H)\n");
    sem_destroy(&l_go);
    sem_destroy(&m_go);
    sem_destroy(&h_go);
    lft_pass();
    return 0;
}
#else
int main(void)
{
    printf("t_pool_inversion: Linux only (CPU affinity, SCHED_FIFO); skipped\n");
    return 0;
}
#endif
