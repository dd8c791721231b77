/* bench/dispatch.c - what the reactor itself costs per event, with no network: the
 * demultiplexing, the turn protocol (deactivate, promote, dispatch, reactivate) and
 * the ready queue, next to a plain epoll loop that does the same reads and writes.
 *
 * One source, compiled once per configuration (-DLF_PROMOTE=LF_PROMOTE_...
 * -DLF_REACTOR_BACKEND=LF_REACTOR_...); bench/dispatch.sh builds them, runs them
 * interleaved and prints the table.
 *
 *   dispatch [-m ring|raw|notify] [-n HANDLERS] [-k TOKENS] [-t THREADS]
 *            [-s SECONDS | -e EVENTS] [-c]
 *     -m ring    (default) HANDLERS handlers, each owning a non-blocking eventfd
 *                (semaphore mode) registered for LF_EV_READ. TOKENS tokens circulate:
 *                the handler of eventfd i reads it (8 bytes, one token; EAGAIN is a
 *                spurious dispatch, counted) and writes 1 to eventfd (i+1) % n.
 *                THREADS threads turn the reactor (lf_reactor_run).
 *        raw     the same ring and the same handler body driven by one thread in a
 *                plain level-triggered epoll loop (batch 64, no lf, no locks): what
 *                the kernel charges for the same reads and writes. lf minus raw, per
 *                event, is the reactor's overhead. -t and -c do not apply.
 *        notify  no descriptor events: the tokens travel by lf_reactor_notify(r, next,
 *                LF_EV_NOTIFY), with a token count per handler beside it
 *                (notifications coalesce, so the count, not the notification, is the
 *                token). Each handler is still registered on an eventfd that is never
 *                written, since notify needs a registered handler. What is left is
 *                the ready queue and the turn: the reactor's user-space cost per
 *                event, plus the leader's non-blocking look at the handles every
 *                other turn (lf__wait: it keeps notifications from starving I/O), one
 *                epoll_wait(0) or poll/select of every handle.
 *     -n         handlers, default 1000. Needs n + 64 descriptors: the soft
 *                RLIMIT_NOFILE is raised to the hard one.
 *     -k         tokens, default 8: enough that the leader has several events in hand
 *                per epoll_wait and that two threads always find work, few enough
 *                that tokens seldom queue on one handler (they would then take turns:
 *                one token per dispatch, so an event is always one token's hop).
 *     -t         threads in lf_reactor_run, default 2.
 *     -s / -e    measure SECONDS (default 1) or until EVENTS events, after a 50 ms
 *                warm-up.
 *     -c         lf_reactor_init_flags(LF_REACTOR_CONCURRENT) (epoll only).
 *
 * An event is a dispatch that found a token. The run prints one line:
 *   dispatch mode=ring policy=LIFO backend=epoll concurrent=0 threads=2 handlers=1000
 *       tokens=8 events=... secs=... events_per_s=... ns_per_event=...
 *       cpu_ns_per_event=... spurious=... wakeups=... kicks=... deferred=... check=ok
 * ns_per_event is wall time over events (the inverse of throughput, whatever the
 * thread count); cpu_ns_per_event is the process's CPU time (user + system, every
 * thread; clock_gettime(CLOCK_PROCESS_CPUTIME_ID)) over the same events. spurious
 * counts dispatches that found nothing, wakeups the promotions that woke a parked
 * follower, kicks the writes to the reactor's wake-up eventfd, deferred the events
 * that came while their handler was busy; all within the measured window.
 *
 * Accounting. When the window ends the handlers stop passing tokens on and absorb
 * them instead; the run waits (2 s at most) until all TOKENS were absorbed, so a
 * token whose event the reactor lost shows up as a token never absorbed. Then, after
 * lf_reactor_stop and the joins:
 *   - every token is accounted for: TOKENS + passed on == taken + left in the
 *     eventfds (or in the notify counts), and nothing is left;
 *   - no handler ever ran on two threads at once (a flag per handler);
 *   - lf_reactor_stats agrees: dispatched == the dispatches the handlers counted, no
 *     stale events, no dispatch errors; notify: notified == the notify calls made.
 * A failed check prints check=FAIL (and why, on stderr) and exits 1.
 *
 * Exit: 0 ok, 1 a check failed, 2 usage or system error, 3 skipped: the
 * configuration cannot run here (select and fds >= FD_SETSIZE, -c without epoll, too
 * few descriptors allowed).
 */
#include "../lf_reactor.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define WARM_NS 50000000LL   /* thread start-up stays out of the numbers */
#define DRAIN_NS 2000000000LL /* how long the absorbing of the tokens may take */
#define STALL_NS 1000000000LL /* no event for this long while measuring: stalled */
#define TICK_NS 10000000LL    /* the main thread looks at the counters this often */
#define RAW_BATCH 64          /* as LF_REACTOR_BATCH */
#define EXIT_SKIP 3

enum { MODE_RING, MODE_RAW, MODE_NOTIFY };
static const char *const mode_name[] = {"ring", "raw", "notify"};

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ------------------------------------------------------------------ counters
 * One block per thread, written only by its thread (a load and a store, no locked
 * instruction), read by the main thread at the edges of the window. */
struct tcount {
    atomic_ullong events;   /* dispatches that found tokens */
    atomic_ullong spurious; /* dispatches that found none */
    atomic_ullong given;    /* tokens passed on */
    atomic_ullong posted;   /* notify: lf_reactor_notify calls that returned 0 */
    char pad[128 - 4 * sizeof(atomic_ullong)]; /* a line (pair) each */
};

static _Thread_local struct tcount *my;

static void bump(atomic_ullong *c, unsigned long long v)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v,
                          memory_order_relaxed);
}

struct totals {
    unsigned long long events, spurious, given, posted;
};

/* ------------------------------------------------------------------ the ring */

struct node {
    lf_handler h;         /* first: a handler pointer is a node pointer */
    int efd;              /* its eventfd (notify: registered, never written) */
    struct node *next;
    atomic_int inside;    /* a thread runs this handler now */
    atomic_ullong tokens; /* notify: the tokens this handler holds */
};

#define NODE_OF(hp) ((struct node *)(void *)((char *)(hp) - offsetof(struct node, h)))

static struct bench {
    lf_reactor r;
    int mode, n, k, threads, concurrent;
    struct node *node;
    struct tcount *tc; /* threads + 1: the last one is the main thread's */
    atomic_int draining;
    atomic_ullong absorbed, violations, errors;
} B;

/* Two threads inside one handler is the one thing the reactor must never allow; the
 * flag costs an uncontended exchange per dispatch, in raw mode too. */
static void enter(struct node *n)
{
    if (atomic_exchange_explicit(&n->inside, 1, memory_order_acquire) != 0)
        atomic_fetch_add_explicit(&B.violations, 1ull, memory_order_relaxed);
}

static void leave(struct node *n)
{
    atomic_store_explicit(&n->inside, 0, memory_order_release);
}

static void error_once(const char *what, int err)
{
    if (atomic_fetch_add_explicit(&B.errors, 1ull, memory_order_relaxed) == 0)
        fprintf(stderr, "dispatch: %s: %s\n", what, strerror(err));
}

/* The handler body of ring and raw: take one token, pass it on. The eventfds count
 * in semaphore mode, so a read takes one token however many wait there: two tokens
 * that meet on one handler leave it one dispatch apart, and never merge into one
 * (merged tokens would never part again, and the ring would slowly lose its
 * parallelism: one event per token hop keeps "events" meaning the same thing). */
static void ring_body(struct node *n)
{
    static const uint64_t one = 1;
    uint64_t v;

    enter(n);
    if (read(n->efd, &v, sizeof v) == (ssize_t)sizeof v) {
        bump(&my->events, 1);
        if (atomic_load_explicit(&B.draining, memory_order_relaxed)) {
            atomic_fetch_add_explicit(&B.absorbed, 1ull, memory_order_relaxed);
        } else if (write(n->next->efd, &one, sizeof one) == (ssize_t)sizeof one) {
            bump(&my->given, 1);
        } else {
            error_once("write", errno); /* a token lost: the check fails */
        }
    } else if (errno == EAGAIN) {
        bump(&my->spurious, 1); /* readiness was a hint (see lf_reactor.h, HANDLERS) */
    } else {
        error_once("read", errno);
    }
    leave(n);
}

static int on_ring(lf_handler *h, int fd, uint32_t events)
{
    (void)fd;
    (void)events;
    ring_body(NODE_OF(h));
    return LF_KEEP;
}

/* notify: the same, with a token count per handler in place of the eventfd. A
 * handler left holding tokens after taking one notifies itself, as the semaphore
 * eventfd stays readable: the post lands while it is busy and the reactor queues the
 * handler again when this dispatch ends. */
static int on_notify(lf_handler *h, int fd, uint32_t events)
{
    struct node *n = NODE_OF(h);
    unsigned long long v;
    int rc;

    (void)fd;
    (void)events;
    enter(n);
    /* acquire: pairs with the predecessor's release add, though the notification's
     * own hand-over (the ready queue's mutex) already orders the two */
    v = atomic_load_explicit(&n->tokens, memory_order_acquire);
    while (v != 0 && !atomic_compare_exchange_weak_explicit(&n->tokens, &v, v - 1,
                                                            memory_order_acquire,
                                                            memory_order_acquire)) {
    }
    if (v == 0) {
        /* a notification that came while we ran, for a token that run already took */
        bump(&my->spurious, 1);
    } else {
        bump(&my->events, 1);
        if (atomic_load_explicit(&B.draining, memory_order_relaxed)) {
            atomic_fetch_add_explicit(&B.absorbed, 1ull, memory_order_relaxed);
        } else {
            /* the count first: the notification may be dispatched at once elsewhere */
            atomic_fetch_add_explicit(&n->next->tokens, 1ull, memory_order_release);
            bump(&my->given, 1);
            if ((rc = lf_reactor_notify(&B.r, &n->next->h, LF_EV_NOTIFY)) == 0)
                bump(&my->posted, 1);
            else
                error_once("lf_reactor_notify", rc); /* a token stranded */
        }
        if (v > 1) {
            if ((rc = lf_reactor_notify(&B.r, h, LF_EV_NOTIFY)) == 0)
                bump(&my->posted, 1);
            else
                error_once("lf_reactor_notify (self)", rc);
        }
    }
    leave(n);
    return LF_KEEP;
}

static void sum_counts(struct totals *t)
{
    memset(t, 0, sizeof *t);
    for (int i = 0; i <= B.threads; i++) {
        struct tcount *c = &B.tc[i];
        t->events += atomic_load_explicit(&c->events, memory_order_relaxed);
        t->spurious += atomic_load_explicit(&c->spurious, memory_order_relaxed);
        t->given += atomic_load_explicit(&c->given, memory_order_relaxed);
        t->posted += atomic_load_explicit(&c->posted, memory_order_relaxed);
    }
}

/* ------------------------------------------------------------------ set-up */

__attribute__((format(printf, 1, 2))) static void skip(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fprintf(stderr, "dispatch: skipped: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(EXIT_SKIP);
}

static void die(const char *what, int err)
{
    fprintf(stderr, "dispatch: %s: %s\n", what, strerror(err));
    exit(2);
}

/* Room for n eventfds plus the reactor's own and liburcu's. */
static void raise_nofile(int n)
{
    struct rlimit rl;
    rlim_t want = (rlim_t)n + 64;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        die("getrlimit", errno);
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want)
        skip("handlers=%d need %ld descriptors, more than the hard RLIMIT_NOFILE (%ld)", n,
             (long)want, (long)rl.rlim_max);
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
            die("setrlimit", errno);
    }
}

static void make_ring(void)
{
    int maxfd = -1;

    B.node = calloc((size_t)B.n, sizeof *B.node);
    if (B.node == NULL)
        die("calloc", ENOMEM);
    for (int i = 0; i < B.n; i++) {
        struct node *n = &B.node[i];
        n->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC | EFD_SEMAPHORE);
        if (n->efd < 0)
            die("eventfd", errno);
        if (n->efd > maxfd)
            maxfd = n->efd;
        n->next = &B.node[(i + 1) % B.n];
        atomic_init(&n->inside, 0);
        atomic_init(&n->tokens, 0ull);
    }
#if LF_REACTOR_BACKEND == LF_REACTOR_SELECT
    if (B.mode != MODE_RAW && maxfd >= FD_SETSIZE)
        skip("select watches fds < FD_SETSIZE (%d) only; handlers=%d need fds up to %d "
             "(use poll or epoll)",
             FD_SETSIZE, B.n, maxfd);
#endif
}

/* Token j starts at handler j * n / k (evenly spread; k > n doubles some up). */
static struct node *token_home(int j)
{
    return &B.node[(long long)j * B.n / B.k];
}

/* ------------------------------------------------------------------ the window */

struct snap {
    long long wall, cpu;
    struct totals t;
    struct lf_reactor_stats st;
};

static void take_snap(struct snap *s)
{
    s->wall = now_ns();
    s->cpu = cpu_ns();
    sum_counts(&s->t);
    if (B.mode != MODE_RAW)
        lf_reactor_stats(&B.r, &s->st);
    else
        memset(&s->st, 0, sizeof s->st);
}

static void sleep_ns(long long ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Main thread, lf modes: warm up, measure, then absorb the tokens. Returns 0, or 1
 * if the ring stalled (no event for STALL_NS) or the tokens did not all come back. */
static int watch(struct snap *s0, struct snap *s1, double seconds,
                 unsigned long long limit)
{
    long long t, last_move, end;
    unsigned long long seen;
    struct totals tt;
    int stalled = 0;

    sleep_ns(WARM_NS);
    take_snap(s0);
    end = s0->wall + (long long)(seconds * 1e9);
    seen = s0->t.events + s0->t.spurious;
    last_move = s0->wall;
    for (;;) {
        sleep_ns(TICK_NS);
        t = now_ns();
        sum_counts(&tt);
        if (tt.events + tt.spurious != seen) {
            seen = tt.events + tt.spurious;
            last_move = t;
        } else if (t - last_move > STALL_NS) {
            fprintf(stderr, "dispatch: stalled: no dispatch for %.1f s with %d tokens out\n",
                    (double)(t - last_move) / 1e9, B.k);
            stalled = 1;
            break;
        }
        if (limit ? tt.events - s0->t.events >= limit : t >= end)
            break;
    }
    take_snap(s1);
    atomic_store_explicit(&B.draining, 1, memory_order_relaxed);
    for (t = now_ns(); atomic_load_explicit(&B.absorbed, memory_order_relaxed) <
                           (unsigned long long)B.k;
         t = now_ns()) {
        if (t - s1->wall > DRAIN_NS) {
            fprintf(stderr,
                    "dispatch: only %llu of %d tokens came back within %.0f s: events lost\n",
                    atomic_load_explicit(&B.absorbed, memory_order_relaxed), B.k,
                    DRAIN_NS / 1e9);
            return 1;
        }
        sleep_ns(1000000);
    }
    return stalled;
}

static void *worker(void *arg)
{
    int rc;

    my = arg;
    rc = lf_reactor_run(&B.r, NULL);
    if (rc != ECANCELED)
        error_once("lf_reactor_run", rc);
    return NULL;
}

/* ------------------------------------------------------------------ lf modes */

static int run_lf(double seconds, unsigned long long limit, struct snap *s0,
                  struct snap *s1, unsigned long long *left, struct lf_reactor_stats *end)
{
    pthread_t *t = calloc((size_t)B.threads, sizeof *t);
    int rc, bad;

    if (t == NULL)
        die("calloc", ENOMEM);
    rc = lf_reactor_init_flags(&B.r, B.concurrent ? LF_REACTOR_CONCURRENT : 0u);
    if (rc == ENOTSUP)
        skip("LF_REACTOR_CONCURRENT needs the epoll backend, not %s",
             lf_reactor_backend_name());
    if (rc != 0)
        die("lf_reactor_init", rc);
    for (int i = 0; i < B.n; i++) {
        struct node *n = &B.node[i];
        lf_handler_init(&n->h, B.mode == MODE_RING ? on_ring : on_notify, NULL);
        if ((rc = lf_reactor_register(&B.r, &n->h, n->efd, LF_EV_READ)) != 0)
            die("lf_reactor_register", rc);
    }
    for (int j = 0; j < B.k; j++) {
        struct node *n = token_home(j);
        if (B.mode == MODE_RING) {
            uint64_t one = 1;
            if (write(n->efd, &one, sizeof one) != (ssize_t)sizeof one)
                die("write", errno);
        } else {
            atomic_fetch_add_explicit(&n->tokens, 1ull, memory_order_relaxed);
            if ((rc = lf_reactor_notify(&B.r, &n->h, LF_EV_NOTIFY)) != 0)
                die("lf_reactor_notify", rc);
        }
    }
    for (int i = 0; i < B.threads; i++)
        if ((rc = pthread_create(&t[i], NULL, worker, &B.tc[i])) != 0)
            die("pthread_create", rc);
    bad = watch(s0, s1, seconds, limit);
    lf_reactor_stop(&B.r);
    for (int i = 0; i < B.threads; i++)
        pthread_join(t[i], NULL);
    free(t);
    lf_reactor_stats(&B.r, end);

    /* what is left where the tokens live, before destroy closes the descriptors */
    *left = 0;
    for (int i = 0; i < B.n; i++) {
        if (B.mode == MODE_RING) {
            uint64_t v;
            while (read(B.node[i].efd, &v, sizeof v) == (ssize_t)sizeof v)
                *left += v; /* one token per read: semaphore mode */
        } else {
            *left += atomic_load_explicit(&B.node[i].tokens, memory_order_relaxed);
        }
    }
    if ((rc = lf_reactor_destroy(&B.r)) != 0)
        die("lf_reactor_destroy", rc);
    return bad;
}

/* ------------------------------------------------------------------ raw mode
 * One thread, level-triggered epoll, no EPOLLONESHOT (so no re-arm per event), the
 * same body. The clock is read once per epoll_wait, not per event. */

static int run_raw(double seconds, unsigned long long limit, struct snap *s0,
                   struct snap *s1, unsigned long long *left)
{
    struct epoll_event ev[RAW_BATCH];
    int ep = epoll_create1(EPOLL_CLOEXEC);
    int phase = 0; /* 0 warm-up, 1 measuring, 2 absorbing */
    long long start, end = 0, t;
    int bad = 0;

    if (ep < 0)
        die("epoll_create1", errno);
    for (int i = 0; i < B.n; i++) {
        struct epoll_event e;
        memset(&e, 0, sizeof e);
        e.events = EPOLLIN;
        e.data.ptr = &B.node[i];
        if (epoll_ctl(ep, EPOLL_CTL_ADD, B.node[i].efd, &e) != 0)
            die("epoll_ctl", errno);
    }
    for (int j = 0; j < B.k; j++) {
        uint64_t one = 1;
        if (write(token_home(j)->efd, &one, sizeof one) != (ssize_t)sizeof one)
            die("write", errno);
    }
    my = &B.tc[0];
    start = now_ns();
    for (;;) {
        int got = epoll_wait(ep, ev, RAW_BATCH, 100);
        if (got < 0 && errno != EINTR)
            die("epoll_wait", errno);
        for (int i = 0; i < got; i++)
            ring_body(ev[i].data.ptr);
        t = now_ns();
        if (phase == 0 && t - start >= WARM_NS) {
            take_snap(s0);
            end = s0->wall + (long long)(seconds * 1e9);
            phase = 1;
        } else if (phase == 1 &&
                   (limit ? atomic_load_explicit(&my->events, memory_order_relaxed) -
                                    s0->t.events >=
                                limit
                          : t >= end)) {
            take_snap(s1);
            atomic_store_explicit(&B.draining, 1, memory_order_relaxed);
            phase = 2;
        } else if (phase == 2) {
            if (atomic_load_explicit(&B.absorbed, memory_order_relaxed) ==
                (unsigned long long)B.k)
                break;
            if (t - s1->wall > DRAIN_NS) {
                fprintf(stderr, "dispatch: raw: tokens did not come back\n");
                bad = 1;
                break;
            }
        }
    }
    *left = 0;
    for (int i = 0; i < B.n; i++) {
        uint64_t v;
        while (read(B.node[i].efd, &v, sizeof v) == (ssize_t)sizeof v)
            *left += v;
        close(B.node[i].efd);
    }
    close(ep);
    return bad;
}

/* ------------------------------------------------------------------ main */

static void usage(void)
{
    fprintf(stderr, "usage: dispatch [-m ring|raw|notify] [-n HANDLERS] [-k TOKENS] "
                    "[-t THREADS] [-s SECONDS | -e EVENTS] [-c]\n");
    exit(2);
}

static int check(int ok, const char *what, unsigned long long a, unsigned long long b)
{
    if (!ok)
        fprintf(stderr, "dispatch: check failed: %s (%llu vs %llu)\n", what, a, b);
    return ok;
}

int main(int argc, char **argv)
{
    double seconds = 1.0;
    unsigned long long limit = 0, left = 0;
    struct snap s0, s1;
    struct lf_reactor_stats end;
    struct totals tot;
    int opt, bad, ok = 1;
    double secs, ev;

    B.mode = MODE_RING;
    B.n = 1000;
    B.k = 8;
    B.threads = 2;
    while ((opt = getopt(argc, argv, "m:n:k:t:s:e:ch")) != -1) {
        switch (opt) {
        case 'm':
            B.mode = strcmp(optarg, "ring") == 0     ? MODE_RING
                     : strcmp(optarg, "raw") == 0    ? MODE_RAW
                     : strcmp(optarg, "notify") == 0 ? MODE_NOTIFY
                                                     : -1;
            break;
        case 'n':
            B.n = atoi(optarg);
            break;
        case 'k':
            B.k = atoi(optarg);
            break;
        case 't':
            B.threads = atoi(optarg);
            break;
        case 's':
            seconds = atof(optarg);
            break;
        case 'e':
            limit = strtoull(optarg, NULL, 10);
            break;
        case 'c':
            B.concurrent = 1;
            break;
        default:
            usage();
        }
    }
    if (optind != argc || B.mode < 0 || B.n < 1 || B.n > 1000000 || B.k < 1 ||
        B.k > 1000000 || B.threads < 1 || B.threads > 1024 ||
        !(seconds > 0 && seconds < 3600) || (B.mode == MODE_RAW && B.concurrent))
        usage();
    if (B.mode == MODE_RAW)
        B.threads = 1;
    if (B.concurrent && LF_REACTOR_BACKEND != LF_REACTOR_EPOLL)
        skip("-c (LF_REACTOR_CONCURRENT) needs the epoll backend, not %s",
             lf_reactor_backend_name());
    /* a lost wake-up that hangs a join turns into a visible death (SIGALRM) */
    alarm((unsigned)seconds + (limit ? 600u : 60u));

    raise_nofile(B.n);
    B.tc = calloc((size_t)B.threads + 1, sizeof *B.tc);
    if (B.tc == NULL)
        die("calloc", ENOMEM);
    my = &B.tc[B.threads];
    atomic_init(&B.draining, 0);
    atomic_init(&B.absorbed, 0ull);
    atomic_init(&B.violations, 0ull);
    atomic_init(&B.errors, 0ull);
    make_ring();

    if (B.mode == MODE_RAW)
        bad = run_raw(seconds, limit, &s0, &s1, &left);
    else
        bad = run_lf(seconds, limit, &s0, &s1, &left, &end);
    sum_counts(&tot);

    /* -- the checks */
    ok &= !bad;
    ok &= check(atomic_load(&B.errors) == 0, "no system call failed", atomic_load(&B.errors),
                0);
    ok &= check(atomic_load(&B.violations) == 0, "one thread per handler at a time",
                atomic_load(&B.violations), 0);
    ok &= check(atomic_load(&B.absorbed) == (unsigned long long)B.k,
                "every token came back (absorbed == tokens)", atomic_load(&B.absorbed),
                (unsigned long long)B.k);
    ok &= check((unsigned long long)B.k + tot.given == tot.events + left,
                "tokens + passed on == taken + left", (unsigned long long)B.k + tot.given,
                tot.events + left);
    ok &= check(left == 0, "nothing left in flight after the absorbing", left, 0);
    if (B.mode != MODE_RAW) {
        ok &= check(end.dispatched == tot.events + tot.spurious,
                    "stats.dispatched == dispatches counted", end.dispatched,
                    tot.events + tot.spurious);
        ok &= check(end.stale == 0, "no stale events", end.stale, 0);
        ok &= check(end.pool.dispatch_errors == 0, "no dispatch errors",
                    end.pool.dispatch_errors, 0);
        ok &= check(end.registered == (unsigned long long)B.n, "stats.registered == handlers",
                    end.registered, (unsigned long long)B.n);
        if (B.mode == MODE_NOTIFY)
            ok &= check(end.notified == (unsigned long long)B.k + tot.posted,
                        "stats.notified == notify calls", end.notified,
                        (unsigned long long)B.k + tot.posted);
    }

    secs = (double)(s1.wall - s0.wall) / 1e9;
    ev = (double)(s1.t.events - s0.t.events);
    if (ev < 1)
        ev = 1;
    printf("dispatch mode=%s policy=%s backend=%s concurrent=%d threads=%d handlers=%d "
           "tokens=%d events=%llu secs=%.3f events_per_s=%.0f ns_per_event=%.1f "
           "cpu_ns_per_event=%.1f spurious=%llu wakeups=%llu kicks=%llu "
           "deferred=%llu check=%s\n",
           mode_name[B.mode], B.mode == MODE_RAW ? "-" : lf_promote_name(),
           B.mode == MODE_RAW ? "epoll" : lf_reactor_backend_name(), B.concurrent,
           B.threads, B.n, B.k, s1.t.events - s0.t.events, secs, ev / secs,
           (double)(s1.wall - s0.wall) / ev, (double)(s1.cpu - s0.cpu) / ev,
           s1.t.spurious - s0.t.spurious,
           s1.st.pool.promotions - s0.st.pool.promotions, s1.st.kicks - s0.st.kicks,
           s1.st.deferred - s0.st.deferred, ok ? "ok" : "FAIL");
    free(B.node);
    free(B.tc);
    return ok ? 0 : 1;
}
