/* bench/promote.c - hand-off latency and turns per second of one lf promotion policy,
 * or of the raw two-thread ping-pong that is its floor.
 *
 * One source, compiled once per variant (-DLF_PROMOTE=... -DLF_SYNC=...);
 * bench/promote.sh builds every variant and runs them interleaved with the floors.
 *
 *   promote [MODE [SECONDS [THREADS [SPIN [PLACE]]]]]
 *     MODE      pool (default): THREADS threads in lf_pool_join on a source that is
 *               always ready, so a turn is wait, promote, dispatch, lead again. With
 *               LIFO/FIFO/HEAP the leader's promote wakes the parked follower, which
 *               owns the slot from then on: a hand-off. (A woken follower that gets
 *               going before the old leader has parked leads a few turns alone,
 *               promoting into an empty set; those turns are not hand-offs.) CONDVAR
 *               signals and reserves the slot for the parked followers, so it hands
 *               off too; "barged" counts promotions that nevertheless came back to
 *               the same thread (it should stay near zero for every policy).
 *               futex-pingpong: two threads pass a token, a futex word each.
 *               condvar-pingpong: two threads pass a token under one mutex + condvar.
 *     SECONDS   measured time, default 1, after a fixed 50 ms warm-up.
 *     THREADS   pool only, default 2.
 *     SPIN      pool only: empty loop iterations in each dispatch, default 0.
 *     PLACE     split (default): thread i pinned to the i-th CPU it may use; same:
 *               every thread on the first one; any: the scheduler decides. Why this
 *               matters so much is under "placement" below.
 *
 * Prints one line for the driver:
 *   row name=LIFO/futex threads=2 spin=0 place=split seconds=... turns=... handoffs=...
 *       turns_per_s=... handoffs_per_s=... lat_median_ns=... lat_mean_ns=...
 *       lat_p99_ns=... real_handoff_frac=... barged=... anomalies=...
 *
 * A hand-off is one thread giving the turn to another that is asleep and has to be
 * woken. Its latency runs from just before the giver starts giving (a timestamp it
 * leaves in shared state) to just after the taker holds the turn (read by the taker),
 * so it spans the wake-up and, for the pool, the lock and the bookkeeping of a
 * promotion. Turns where nobody had to be woken (the pool's promotions into an empty
 * set, a token that came back before its thread slept) are counted in turns but not
 * sampled: they are cheap for reasons that have nothing to do with the synchronizer.
 * real_handoff_frac = handoffs / turns says how much of the run was hand-offs.
 *
 * The floors use no lf code; the driver runs them from whichever binary it likes.
 */
#include "../lf.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* unistd.h declares syscall() only with _DEFAULT_SOURCE; lf.h repeats this line only in
 * futex builds, and an identical redeclaration is harmless in C. */
extern long syscall(long, ...);

#define WARM_NS 50000000LL /* thread start-up stays out of the numbers */

/* ------------------------------------------------------------------ time, samples */

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Latency samples. Allocated before the threads start (no allocation while timing);
 * when full, later samples still count towards the mean but not the percentiles. */
struct lat {
    uint32_t *v;
    size_t n, cap;
    unsigned long long count;
    double sum;
};

static void lat_init(struct lat *l, double seconds)
{
    /* a hand-off takes over a microsecond: 2 M/s leaves room on any machine */
    double want = seconds * 2e6 + 4096;
    l->cap = want > 64e6 ? (size_t)64e6 : (size_t)want;
    l->v = malloc(l->cap * sizeof *l->v);
    if (l->v == NULL) {
        fprintf(stderr, "promote: out of memory\n");
        exit(2);
    }
    memset(l->v, 0, l->cap * sizeof *l->v); /* fault the pages in now, not mid-turn */
    l->n = 0;
    l->count = 0;
    l->sum = 0;
}

static void lat_add(struct lat *l, long long ns)
{
    if (ns < 0)
        ns = 0;
    if (ns > (long long)UINT32_MAX)
        ns = UINT32_MAX;
    if (l->n < l->cap)
        l->v[l->n++] = (uint32_t)ns;
    l->count++;
    l->sum += (double)ns;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static double lat_pct(const struct lat *l, double q)
{
    if (l->n == 0)
        return 0;
    return l->v[(size_t)(q * (double)(l->n - 1) + 0.5)];
}

/* ------------------------------------------------------------------ meter
 * The counters every mode shares. Only the thread that holds the turn (the pool's
 * leader, the ping-pong's token holder) touches them, and passing the turn orders its
 * writes before the next holder's reads (the pool's mutex and the futex word's
 * release/acquire; the ping-pong's token), so they need no atomics of their own. */
struct meter {
    long long warm_until, stop_at; /* set before the threads start */
    int measuring, stopped;
    long long t_begin, t_end;
    long long t_give; /* when the last holder started to give the turn away */
    unsigned long long turns, handoffs;
    struct lat lat;
};

static void meter_init(struct meter *m, double seconds)
{
    long long t = now_ns();
    m->warm_until = t + WARM_NS;
    m->stop_at = m->warm_until + (long long)(seconds * 1e9);
    m->measuring = m->stopped = 0;
    m->t_begin = m->t_end = m->t_give = 0;
    m->turns = m->handoffs = 0;
    lat_init(&m->lat, seconds);
}

/* The turn has arrived at `now`; `real` says the new holder had to be woken for it. */
static void meter_turn(struct meter *m, long long now, int real)
{
    if (m->measuring) {
        m->turns++;
        if (real) {
            m->handoffs++;
            lat_add(&m->lat, now - m->t_give);
        }
        if (now >= m->stop_at) {
            m->stopped = 1;
            m->t_end = now;
        }
    } else if (now >= m->warm_until) {
        m->measuring = 1;
        m->t_begin = now;
    }
}

static void meter_print(struct meter *m, const char *name, int threads, long spin,
                        const char *place, unsigned long long barged,
                        unsigned long long anomalies)
{
    double s = (double)(m->t_end - m->t_begin) / 1e9;

    if (s <= 0)
        s = 1e-9;
    qsort(m->lat.v, m->lat.n, sizeof *m->lat.v, cmp_u32);
    printf("row name=%s threads=%d spin=%ld place=%s seconds=%.3f turns=%llu "
           "handoffs=%llu turns_per_s=%.0f handoffs_per_s=%.0f lat_median_ns=%.0f "
           "lat_mean_ns=%.0f lat_p99_ns=%.0f real_handoff_frac=%.4f barged=%llu "
           "anomalies=%llu\n",
           name, threads, spin, place, s, m->turns, m->handoffs, (double)m->turns / s,
           (double)m->handoffs / s, lat_pct(&m->lat, 0.5),
           m->lat.count ? m->lat.sum / (double)m->lat.count : 0.0, lat_pct(&m->lat, 0.99),
           m->turns ? (double)m->handoffs / (double)m->turns : 0.0, barged, anomalies);
    free(m->lat.v);
}

/* ------------------------------------------------------------------ placement
 * Where the two sides of a hand-off run decides what it costs, by an order of
 * magnitude on a VM whose idle vCPUs halt: waking a thread onto the waker's own CPU
 * is a context switch (~2 us here), waking it on another, idle CPU goes through the
 * hypervisor (4 to 30 us here, drifting over seconds). Left alone, the scheduler
 * picks one or the other per run, so "split" pins thread i to the i-th allowed CPU,
 * the same for every row, and the driver pairs each row with floors run just before
 * it. The pool needs the threads on different CPUs anyway: its source never blocks,
 * so on one CPU the leader keeps the CPU and promotes into an empty set until its
 * time slice ends.
 * Raw syscalls: the glibc wrappers need _GNU_SOURCE. */

#define CPU_WORDS 16 /* 1024 CPUs */
#define WORD_BITS (8 * (int)sizeof(unsigned long))

/* The CPUs this process may run on, in order; returns how many (0: unknown). */
static int allowed_cpus(int *cpu, int max)
{
    unsigned long mask[CPU_WORDS] = {0};
    long bytes = syscall(SYS_sched_getaffinity, 0, sizeof mask, mask);
    int n = 0;

    for (int i = 0; i < (int)bytes * 8 && n < max; i++)
        if ((mask[i / WORD_BITS] >> (i % WORD_BITS)) & 1ul)
            cpu[n++] = i;
    return n;
}

/* Pin the calling thread to one CPU (cpu < 0: leave it alone). */
static void pin_self(int cpu)
{
    unsigned long mask[CPU_WORDS] = {0};

    if (cpu < 0 || cpu >= CPU_WORDS * WORD_BITS)
        return;
    mask[cpu / WORD_BITS] = 1ul << (cpu % WORD_BITS);
    if (syscall(SYS_sched_setaffinity, 0, sizeof mask, mask) != 0)
        fprintf(stderr, "promote: cannot pin to CPU %d: %s\n", cpu, strerror(errno));
}

enum { PLACE_ANY, PLACE_SPLIT, PLACE_SAME };

/* cpu[i] for thread i: the allowed CPUs in turn (split), the first one (same), or -1,
 * no pinning (any). */
static void place_threads(int *cpu, int n, int place)
{
    int allowed[256];
    int k = place == PLACE_ANY ? 0 : allowed_cpus(allowed, 256);

    if (place == PLACE_SPLIT && k < 2)
        fprintf(stderr, "promote: fewer than 2 CPUs allowed; the threads share one\n");
    for (int i = 0; i < n; i++)
        cpu[i] = k == 0 ? -1 : allowed[place == PLACE_SAME ? 0 : i % k];
}

struct thread_arg {
    void *bench;
    int me, cpu;
};

static void start_threads(pthread_t *t, int n, void *(*fn)(void *), struct thread_arg *a)
{
    for (int i = 0; i < n; i++) {
        int rc = pthread_create(&t[i], NULL, fn, &a[i]);
        if (rc) {
            fprintf(stderr, "promote: pthread_create: %s\n", strerror(rc));
            exit(2);
        }
    }
}

/* ------------------------------------------------------------------ pool */

struct pool_bench {
    lf_pool pool;
    lf_source src;
    long spin;
    struct meter m;
    /* leader-only, like the meter */
    pthread_t last_leader;
    int have_last;
    unsigned long long last_promotions, last_vacant;
    unsigned long long barged, anomalies;
    /* not leader-only: it is what catches two leaders at once, if lf ever let them */
    atomic_int in_wait;
};

/* The leader's wait. The event is always ready; what it does is bookkeeping:
 * the previous leader's promote is over, so the pool's counters tell whether it woke
 * a follower, and the caller's identity tells whether that follower is the caller.
 * The stats call costs an uncontended lock (the old leader is parked or on its way),
 * taken after the sample ends and before the next one starts. */
static int pool_wait(void *ctx, lf_event *ev, const struct timespec *deadline)
{
    struct pool_bench *b = ctx;
    long long now = now_ns(); /* first: the latency sample ends here */
    pthread_t self = pthread_self();
    struct lf_pool_stats st;
    int real = 0, rc;

    (void)deadline;
    if (atomic_exchange_explicit(&b->in_wait, 1, memory_order_relaxed) != 0)
        b->anomalies++;
    if (b->m.stopped) {
        /* the stop event is out; a join that gets this leaves and returns it */
        atomic_store_explicit(&b->in_wait, 0, memory_order_relaxed);
        return ECANCELED;
    }
    if ((rc = lf_pool_stats(&b->pool, &st)) != 0) {
        atomic_store_explicit(&b->in_wait, 0, memory_order_relaxed);
        return rc; /* cannot happen on a live pool; join returns it, the thread says so */
    }
    if (b->have_last) {
        unsigned long long dp = st.promotions - b->last_promotions;
        unsigned long long dv = st.promotions_vacant - b->last_vacant;
        int other = !pthread_equal(self, b->last_leader);

        /* exactly one promote separates two waits: only a leader promotes */
        if (dp + dv != 1)
            b->anomalies++;
        /* a promotion counted but the same thread leads next: the slot came back
         * to the old leader instead of going to a follower (barging). lf reserves a
         * promoted slot for the followers, so this should stay near zero. With more
         * than two threads another follower may lead next, which this cannot tell
         * apart from a hand-off: the numbers are exact at two threads. */
        if (dp == 1 && !other)
            b->barged++;
        real = dp == 1 && other;
    }
    meter_turn(&b->m, now, real);
    b->last_leader = self;
    b->have_last = 1;
    b->last_promotions = st.promotions;
    b->last_vacant = st.promotions_vacant;
    ev->u64 = (uint64_t)b->m.stopped;
    atomic_store_explicit(&b->in_wait, 0, memory_order_relaxed);
    b->m.t_give = now_ns(); /* last: the stats call above is not part of a hand-off */
    return 0;
}

static int pool_dispatch(void *ctx, lf_event *ev)
{
    struct pool_bench *b = ctx;
    volatile long sink = 0;

    /* a volatile sink, so the compiler keeps the loop that stands for work */
    for (long i = 0; i < b->spin; i++)
        sink = sink + i;
    if (ev->u64)
        lf_pool_shutdown(&b->pool);
    return 0;
}

static void *pool_thread(void *arg)
{
    struct thread_arg *a = arg;
    struct pool_bench *b = a->bench;
    lf_follower self;
    int rc;

    pin_self(a->cpu);
    rc = lf_follower_init(&self, 0);
    if (rc == 0)
        rc = lf_pool_join(&b->pool, &self, &b->src, NULL);
    if (rc != ECANCELED)
        fprintf(stderr, "promote: lf_pool_join returned %d (%s)\n", rc, strerror(rc));
    lf_follower_destroy(&self);
    return NULL;
}

static int run_pool(double seconds, int threads, long spin, int place, const char *where)
{
    struct pool_bench b;
    pthread_t *t = calloc((size_t)threads, sizeof *t);
    struct thread_arg *args = calloc((size_t)threads, sizeof *args);
    int *cpu = calloc((size_t)threads, sizeof *cpu);
    char name[64];
    int rc;

    if (t == NULL || args == NULL || cpu == NULL)
        return 2;
    if ((rc = lf_pool_init(&b.pool)) != 0) {
        fprintf(stderr, "promote: lf_pool_init: %s\n", strerror(rc));
        return 2;
    }
    b.src.ctx = &b;
    b.src.wait = pool_wait;
    b.src.dispatch = pool_dispatch;
    b.src.interrupt = NULL; /* wait never blocks: there is nothing to interrupt */
    b.spin = spin;
    b.have_last = 0;
    b.barged = b.anomalies = 0;
    atomic_init(&b.in_wait, 0);
    meter_init(&b.m, seconds);
    place_threads(cpu, threads, place);
    for (int i = 0; i < threads; i++) {
        args[i].bench = &b;
        args[i].me = i;
        args[i].cpu = cpu[i];
    }
    start_threads(t, threads, pool_thread, args);
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);

    if ((rc = lf_pool_destroy(&b.pool)) != 0) {
        fprintf(stderr, "promote: lf_pool_destroy: %s\n", strerror(rc));
        b.anomalies++;
    }
    snprintf(name, sizeof name, "%s/%s", lf_promote_name(), lf_sync_name());
    meter_print(&b.m, name, threads, spin, where, b.barged, b.anomalies);
    free(t);
    free(args);
    free(cpu);
    return 0;
}

/* ------------------------------------------------------------------ futex ping-pong
 * The floor for LIFO/FIFO/HEAP: a futex word per thread, 1 = your turn. The least a
 * Specific Notification hand-off can cost: one store, one FUTEX_WAKE, one wake-up. */

struct futex_word {
    _Alignas(64) atomic_uint w; /* a line each, like followers on their own stacks */
};

struct pingpong {
    struct futex_word word[2];
    pthread_mutex_t lock; /* condvar ping-pong */
    pthread_cond_t cond;
    int turn;
    struct meter m;
};

static void *futex_thread(void *arg)
{
    struct thread_arg *a = arg;
    struct pingpong *b = a->bench;
    atomic_uint *mine = &b->word[a->me].w, *peer = &b->word[!a->me].w;

    pin_self(a->cpu);
    for (;;) {
        int slept = 0, last;
        long long now;

        /* acquire: pairs with the giver's release, so the meter it wrote is ours */
        while (atomic_load_explicit(mine, memory_order_acquire) == 0) {
            /* 0 = woken; EAGAIN = the token came before we slept (not a hand-off) */
            if (syscall(SYS_futex, (void *)mine, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 0u,
                        NULL, NULL, 0) == 0)
                slept = 1;
        }
        now = now_ns();
        /* relaxed: the peer writes this word only while it holds the token, and the
         * token is ours until the release store below */
        atomic_store_explicit(mine, 0u, memory_order_relaxed);
        if (b->m.stopped)
            break;
        meter_turn(&b->m, now, slept);
        last = b->m.stopped; /* now: once the token is passed, the meter is the peer's */
        b->m.t_give = now_ns();
        atomic_store_explicit(peer, 1u, memory_order_release);
        syscall(SYS_futex, (void *)peer, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, NULL, NULL,
                0);
        if (last)
            break; /* the token we just passed tells the peer to stop too */
    }
    return NULL;
}

/* ------------------------------------------------------------------ condvar ping-pong
 * The floor for CONDVAR: one mutex, one condvar, a turn variable. Signalled under the
 * lock, as lf's CONDVAR policy does; the giver then waits, which releases the lock
 * long before the woken thread needs it. */

static void *condvar_thread(void *arg)
{
    struct thread_arg *a = arg;
    struct pingpong *b = a->bench;

    pin_self(a->cpu);
    pthread_mutex_lock(&b->lock);
    for (;;) {
        int slept = 0;
        long long now;

        while (b->turn != a->me) {
            pthread_cond_wait(&b->cond, &b->lock);
            slept = 1;
        }
        now = now_ns();
        if (b->m.stopped)
            break;
        meter_turn(&b->m, now, slept);
        b->m.t_give = now_ns();
        b->turn = !a->me;
        pthread_cond_signal(&b->cond);
        if (b->m.stopped)
            break;
    }
    pthread_mutex_unlock(&b->lock);
    return NULL;
}

static int run_pingpong(double seconds, int use_futex, int place, const char *where)
{
    struct pingpong b;
    struct thread_arg args[2];
    pthread_t t[2];
    int cpu[2];

    place_threads(cpu, 2, place);
    for (int i = 0; i < 2; i++) {
        args[i].bench = &b;
        args[i].me = i;
        args[i].cpu = cpu[i];
    }
    atomic_init(&b.word[0].w, 1u); /* thread 0 holds the token first */
    atomic_init(&b.word[1].w, 0u);
    if (pthread_mutex_init(&b.lock, NULL) != 0 || pthread_cond_init(&b.cond, NULL) != 0)
        return 2;
    b.turn = 0;
    meter_init(&b.m, seconds);
    start_threads(t, 2, use_futex ? futex_thread : condvar_thread, args);
    pthread_join(t[0], NULL);
    pthread_join(t[1], NULL);
    pthread_cond_destroy(&b.cond);
    pthread_mutex_destroy(&b.lock);
    meter_print(&b.m, use_futex ? "floor/futex" : "floor/condvar", 2, 0, where, 0, 0);
    return 0;
}

/* ------------------------------------------------------------------ main */

static void usage(void)
{
    fprintf(stderr, "usage: promote [pool|futex-pingpong|condvar-pingpong [SECONDS "
                    "[THREADS [SPIN [split|same|any]]]]]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "pool";
    double seconds = argc > 2 ? atof(argv[2]) : 1.0;
    int threads = argc > 3 ? atoi(argv[3]) : 2;
    long spin = argc > 4 ? atol(argv[4]) : 0;
    const char *where = argc > 5 ? argv[5] : "split";
    int place = strcmp(where, "split") == 0  ? PLACE_SPLIT
                : strcmp(where, "same") == 0 ? PLACE_SAME
                : strcmp(where, "any") == 0  ? PLACE_ANY
                                             : -1;

    if (argc > 6 || place < 0 || !(seconds > 0 && seconds < 3600) || threads < 1 ||
        threads > 4096 || spin < 0)
        usage();
    /* a lost wake-up hangs the bench; this turns the hang into a visible death
     * (SIGALRM's default action), which the driver reports */
    alarm((unsigned)seconds + 30u);
    if (strcmp(mode, "pool") == 0)
        return run_pool(seconds, threads, spin, place, where);
    if (strcmp(mode, "futex-pingpong") == 0)
        return run_pingpong(seconds, 1, place, where);
    if (strcmp(mode, "condvar-pingpong") == 0)
        return run_pingpong(seconds, 0, place, where);
    usage();
    return 2;
}
