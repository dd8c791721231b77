/* The library changes nothing of what the user's threads and processes carry
 * (scheduling policy and priority, nice, CPU affinity, signal mask, cancel state and
 * type; here also the thread's name and timer slack and the process's signal
 * dispositions), neither while it runs a thread nor after.
 *
 * A thread of ours first sets what a process may set without asking anybody: nice +3
 * (on its own tid: per thread on Linux), SIGUSR1 blocked, pinned to one CPU when it
 * may run on more, cancellation enabled explicitly (the type left at its default), a
 * name and a timer slack of its own; and a policy: SCHED_OTHER, SCHED_IDLE (which
 * needs no privilege) and, as root, SCHED_FIFO priority 1 (skipped, with a message,
 * where that is refused). It reads all of it back from the kernel (system calls where
 * glibc keeps a cache of its own) and enters one of
 *   lf_pool_join          with a source of ours that yields one event,
 *   lf_reactor_run        one reactor, a pipe with one byte in it (and on epoll the
 *                         same with LF_REACTOR_CONCURRENT, which does not join the pool),
 *   lf_reactor_group_run  a group of two reactors, one such pipe each,
 *   lf_bound_join         a hybrid bound (LF_BOUND_REACTOR): a pipe's handler on the
 *                         bound's reactor writes the reply the join waits for;
 * the only thread that turns them, so every handler runs on it (checked by tid). Each
 * handler compares what it sees on that thread, what a thread it makes with default
 * attributes sees (pthread_create(NULL attributes) inherits the policy, nice, mask,
 * affinity, name and slack; its cancel state and type must be the defaults), and what
 * a child it forks sees (policy, priority, nice, mask, affinity, name, slack, sent
 * back through a pipe: the child runs system calls only, then _exit); and the thread
 * compares again when the call has returned. The main thread's own attributes and the
 * process's signal dispositions are compared before and after all of it. Every
 * difference is reported with where it was seen; the test fails if there is any.
 * Built with -DLF_SCHED_BATCH=1, which asks lf.h by name to run a joined SCHED_OTHER
 * thread as SCHED_BATCH, it fails: the handlers of lf_pool_join, lf_reactor_run and
 * lf_reactor_group_run, the threads they make and the children they fork see
 * SCHED_BATCH (four handlers, three places each; the thread itself is restored on
 * return, and the hybrid join, which turns the reactor without lf_pool_join, is not
 * touched). Linux gives a SCHED_FIFO thread no timer slack: its snapshot says 0.
 * Linux only; under qemu-user (LF_TEST_NO_FORK) without the child process. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier): sched_getaffinity, CPU_*, SCHED_IDLE */
#endif
#define LF_BOUND_REACTOR 1
#include "../lf_bound.h"
#include "lf_frames.h"

#ifdef __linux__
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define NICE 3
#define SLACK_NS 123457UL /* a timer slack nobody else picks */
#define SIGS 64           /* the signals a Linux mask holds: 1..64 */
#define REPLY_ID 42u
#define REPLY_BODY 4242u

/* What a thread (or a child process) carries, as the kernel says it. */
typedef struct attrs {
    long policy;                /* with SCHED_RESET_ON_FORK when set */
    int rtprio;                 /* sched_param.sched_priority */
    int nice;
    int err;                    /* the first failed system call's errno, else 0 */
    cpu_set_t cpus;
    unsigned long long blocked; /* bit s-1: signal s is blocked */
    char name[16];
    long slack;
    int cancel_state, cancel_type; /* -1: not read (a child process) */
} attrs;

static long tid_now(void)
{
    return syscall(SYS_gettid);
}

/* The calling thread, by system call, so that a fork child may use it too (nothing
 * here allocates or takes a lock). */
static void read_kernel(attrs *a)
{
    struct sched_param sp;
    sigset_t set;
    memset(a, 0, sizeof *a);
    a->cancel_state = a->cancel_type = -1;
    if ((a->policy = syscall(SYS_sched_getscheduler, 0)) < 0)
        a->err = errno;
    sp.sched_priority = -1;
    if (syscall(SYS_sched_getparam, 0, &sp) != 0 && a->err == 0)
        a->err = errno;
    a->rtprio = sp.sched_priority;
    errno = 0; /* getpriority may return -1 */
    a->nice = getpriority(PRIO_PROCESS, (id_t)tid_now());
    if (errno != 0 && a->err == 0)
        a->err = errno;
    CPU_ZERO(&a->cpus);
    if (sched_getaffinity(0, sizeof a->cpus, &a->cpus) != 0 && a->err == 0)
        a->err = errno;
    sigemptyset(&set);
    if (pthread_sigmask(SIG_BLOCK, NULL, &set) != 0 && a->err == 0)
        a->err = EINVAL;
    for (int s = 1; s <= SIGS; s++)
        if (sigismember(&set, s) == 1)
            a->blocked |= 1ULL << (s - 1);
    if (prctl(PR_GET_NAME, (unsigned long)a->name, 0UL, 0UL, 0UL) != 0 && a->err == 0)
        a->err = errno;
    if ((a->slack = prctl(PR_GET_TIMERSLACK, 0UL, 0UL, 0UL, 0UL)) < 0 && a->err == 0)
        a->err = errno;
}

/* A thread's: the kernel's view, and its cancel state and type (round trips: POSIX
 * has no call that only reads them). */
static void read_thread(attrs *a)
{
    int old, back;
    read_kernel(a);
    CHECK_EQ(a->err, 0);
    CHECK(pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old) == 0);
    CHECK(pthread_setcancelstate(old, &back) == 0);
    a->cancel_state = old;
    CHECK(pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, &old) == 0);
    CHECK(pthread_setcanceltype(old, &back) == 0);
    a->cancel_type = old;
}

/* ------------------------------------------------------------------ comparing */

static LFT_ATOMIC(int) differences;

static const char *policy_name(long p)
{
    switch (p & ~(long)SCHED_RESET_ON_FORK) {
    case SCHED_OTHER: return "SCHED_OTHER";
    case SCHED_FIFO: return "SCHED_FIFO";
    case SCHED_RR: return "SCHED_RR";
    case SCHED_BATCH: return "SCHED_BATCH";
    case SCHED_IDLE: return "SCHED_IDLE";
    default: return "another policy";
    }
}

static void differs(const char *ctx, const char *where, const char *what, const char *was,
                    const char *is)
{
    fprintf(stderr, "%s: %s: %s: %s is %s, was %s\n", lft_name, ctx, where, what, is, was);
    lft_add(&differences, 1);
}

static void differs_ll(const char *ctx, const char *where, const char *what, long long was,
                       long long is)
{
    char w[32], i[32];
    snprintf(w, sizeof w, "%lld", was);
    snprintf(i, sizeof i, "%lld", is);
    differs(ctx, where, what, w, i);
}

enum { NO_CANCEL, SAME_CANCEL, DEFAULT_CANCEL };

/* got against want; cancel: not compared (a process), the same, or a new thread's
 * defaults (enabled, deferred: what pthread_create gives every thread). */
static void compare(const char *ctx, const char *where, const attrs *want, const attrs *got,
                    int cancel)
{
    if (got->err != 0)
        differs_ll(ctx, where, "a failed system call's errno", 0, got->err);
    if (got->policy != want->policy) {
        char w[48], i[48];
        snprintf(w, sizeof w, "%s (%ld)", policy_name(want->policy), want->policy);
        snprintf(i, sizeof i, "%s (%ld)", policy_name(got->policy), got->policy);
        differs(ctx, where, "the scheduling policy", w, i);
    }
    if (got->rtprio != want->rtprio)
        differs_ll(ctx, where, "the scheduling priority", want->rtprio, got->rtprio);
    if (got->nice != want->nice)
        differs_ll(ctx, where, "nice", want->nice, got->nice);
    if (!CPU_EQUAL(&got->cpus, &want->cpus))
        differs_ll(ctx, where, "the affinity (CPUs in it)", CPU_COUNT(&want->cpus),
                   CPU_COUNT(&got->cpus));
    if (got->blocked != want->blocked) {
        char w[32], i[32];
        snprintf(w, sizeof w, "%#llx", want->blocked);
        snprintf(i, sizeof i, "%#llx", got->blocked);
        differs(ctx, where, "the signal mask", w, i);
    }
    if (strncmp(got->name, want->name, sizeof got->name) != 0)
        differs(ctx, where, "the thread's name", want->name, got->name);
    if (got->slack != want->slack)
        differs_ll(ctx, where, "the timer slack", want->slack, got->slack);
    if (cancel != NO_CANCEL) {
        int state = cancel == SAME_CANCEL ? want->cancel_state : PTHREAD_CANCEL_ENABLE;
        int type = cancel == SAME_CANCEL ? want->cancel_type : PTHREAD_CANCEL_DEFERRED;
        if (got->cancel_state != state)
            differs_ll(ctx, where, "the cancel state", state, got->cancel_state);
        if (got->cancel_type != type)
            differs_ll(ctx, where, "the cancel type", type, got->cancel_type);
    }
}

/* The process's signal dispositions. */
typedef struct dispositions {
    int ok[SIGS + 1], flags[SIGS + 1];
    void (*handler[SIGS + 1])(int);
} dispositions;

static void read_dispositions(dispositions *d)
{
    memset((void *)d, 0, sizeof *d);
    for (int s = 1; s <= SIGS; s++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        d->ok[s] = sigaction(s, NULL, &sa) == 0; /* glibc refuses its own two */
        d->flags[s] = sa.sa_flags;
        d->handler[s] = sa.sa_handler;
    }
}

static void disposition_name(char *buf, size_t len, const dispositions *d, int s)
{
    if (!d->ok[s])
        snprintf(buf, len, "unreadable");
    else
        snprintf(buf, len, "%s, flags %#x",
                 d->handler[s] == SIG_DFL   ? "SIG_DFL"
                 : d->handler[s] == SIG_IGN ? "SIG_IGN"
                                            : "a handler",
                 (unsigned)d->flags[s]);
}

static void compare_dispositions(const dispositions *was, const dispositions *is)
{
    for (int s = 1; s <= SIGS; s++) {
        if (was->ok[s] != is->ok[s] || was->flags[s] != is->flags[s] ||
            was->handler[s] != is->handler[s]) {
            char what[48], w[64], i[64];
            snprintf(what, sizeof what, "the disposition of signal %d", s);
            disposition_name(w, sizeof w, was, s);
            disposition_name(i, sizeof i, is, s);
            differs("the process", "after everything", what, w, i);
        }
    }
}

/* ------------------------------------------------------------------ one run */

typedef struct variant {
    const char *name;
    int policy, rtprio;
} variant;

typedef struct scenario {
    char ctx[96];       /* "entry point, variant", for the messages */
    const variant *v;
    int (*enter)(void); /* the entry point, on the thread under test */
    attrs want;         /* that thread's, before it entered */
    long tid;
    int rc;
    LFT_ATOMIC(int) probed; /* handlers that compared */
} scenario;

static scenario sc; /* the run going on: set before its thread starts */
static int pin_cpu = -1, no_fork;

static void *probe_thread(void *arg)
{
    read_thread((attrs *)arg);
    return NULL;
}

/* In a child process of the handler: what it carries, through the pipe. */
static void child_report(int fd)
{
    attrs a;
    ssize_t w;
    alarm(20); /* a hang is a failure (the parent reads EOF), not a stuck test */
    read_kernel(&a);
    w = write(fd, &a, sizeof a);
    _exit(w == (ssize_t)sizeof a ? 0 : 1);
}

static void child_attrs(attrs *out)
{
    int p[2], st = 0;
    size_t got = 0;
    pid_t pid;
    CHECK(pipe(p) == 0);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0)
        child_report(p[1]);
    close(p[1]);
    while (got < sizeof *out) {
        ssize_t n = read(p[0], (char *)out + got, sizeof *out - got);
        if (n < 0 && errno == EINTR)
            continue;
        CHECK(n > 0); /* the child died before it reported */
        got += (size_t)n;
    }
    close(p[0]);
    while (waitpid(pid, &st, 0) < 0)
        CHECK(errno == EINTR);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* Every handler's checks, on the thread under test. */
static void probe_here(void)
{
    attrs a, t;
    pthread_t th;
    CHECK_EQ(tid_now(), sc.tid); /* the only thread that runs it */
    read_thread(&a);
    compare(sc.ctx, "in the handler", &sc.want, &a, SAME_CANCEL);
    CHECK(pthread_create(&th, NULL, probe_thread, &t) == 0);
    CHECK(pthread_join(th, NULL) == 0);
    compare(sc.ctx, "a thread the handler made", &sc.want, &t, DEFAULT_CANCEL);
    if (!no_fork) {
        attrs c;
        child_attrs(&c);
        compare(sc.ctx, "a child the handler forked", &sc.want, &c, NO_CANCEL);
    }
    lft_add(&sc.probed, 1);
    lft_progress();
}

/* The thread under test: set, read, enter, read again. */
static void *under_test(void *arg)
{
    const variant *v = sc.v;
    sigset_t usr1;
    struct sched_param sp;
    attrs after;
    int old;
    (void)arg;
    CHECK(prctl(PR_SET_NAME, (unsigned long)"lf-sidefx", 0UL, 0UL, 0UL) == 0);
    CHECK(prctl(PR_SET_TIMERSLACK, SLACK_NS, 0UL, 0UL, 0UL) == 0);
    CHECK(setpriority(PRIO_PROCESS, (id_t)tid_now(), NICE) == 0);
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    CHECK(pthread_sigmask(SIG_BLOCK, &usr1, NULL) == 0);
    if (pin_cpu >= 0) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(pin_cpu, &one);
        CHECK(sched_setaffinity(0, sizeof one, &one) == 0);
    }
    CHECK(pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old) == 0);
    sp.sched_priority = v->rtprio;
    CHECK(syscall(SYS_sched_setscheduler, 0, v->policy, &sp) == 0);

    sc.tid = tid_now();
    read_thread(&sc.want);
    CHECK_EQ(sc.want.policy, v->policy); /* what we set is what we compare with */
    CHECK_EQ(sc.want.nice, NICE);
    CHECK(sc.want.blocked & (1ULL << (SIGUSR1 - 1)));
    sc.rc = sc.enter();
    read_thread(&after);
    compare(sc.ctx, "after it returned", &sc.want, &after, SAME_CANCEL);
    return NULL;
}

static void run(const variant *v, const char *entry, int (*enter)(void), int rc, int probes)
{
    pthread_t th;
    snprintf(sc.ctx, sizeof sc.ctx, "%s, %s", entry, v->name);
    sc.v = v;
    sc.enter = enter;
    sc.tid = 0;
    sc.rc = -1;
    lft_store(&sc.probed, 0);
    CHECK(pthread_create(&th, NULL, under_test, NULL) == 0);
    CHECK(pthread_join(th, NULL) == 0);
    CHECK_EQ(sc.rc, rc);
    CHECK_EQ(lft_load(&sc.probed), probes);
    lft_progress();
}

/* ------------------------------------------------------------------ lf_pool_join */

static lf_pool pool;
static int pool_waits; /* the leader's only */

static int src_wait(void *ctx, lf_event *ev, const struct timespec *deadline)
{
    (void)ctx;
    (void)deadline;
    if (pool_waits++ > 0)
        return ESRCH; /* the join goes on after the shutdown: CHECK_EQ(rc) says so */
    memset(ev, 0, sizeof *ev);
    return 0;
}

static int src_dispatch(void *ctx, lf_event *ev)
{
    (void)ctx;
    (void)ev;
    probe_here();
    CHECK_EQ(lf_pool_shutdown(&pool), 0);
    return 0;
}

static int enter_pool(void)
{
    static const lf_source src = {NULL, src_wait, src_dispatch, NULL};
    lf_follower f;
    int rc;
    CHECK_EQ(lf_follower_init(&f, 0), 0);
    rc = lf_pool_join(&pool, &f, &src, NULL);
    lf_follower_destroy(&f);
    return rc;
}

static void via_pool(const variant *v)
{
    CHECK_EQ(lf_pool_init(&pool), 0);
    pool_waits = 0;
    run(v, "lf_pool_join", enter_pool, ECANCELED, 1);
    CHECK_EQ(lf_pool_destroy(&pool), 0);
}

/* ------------------------------------------------------------------ the reactors */

/* A pipe with one byte in it, registered with a reactor: its handler checks, then
 * does what the run needs next. */
typedef struct ping {
    lf_handler h;
    int fd[2];
    void (*then)(void);
} ping;

static int on_ping(lf_handler *h, int fd, uint32_t events)
{
    ping *p = (ping *)h;
    char c;
    (void)events;
    if (read(fd, &c, 1) != 1)
        return LF_KEEP; /* readiness is a hint */
    probe_here();
    p->then();
    return LF_KEEP;
}

static void ping_open(ping *p, lf_reactor *r, void (*then)(void))
{
    CHECK(pipe(p->fd) == 0);
    CHECK(fcntl(p->fd[0], F_SETFL, O_NONBLOCK) == 0);
    lf_handler_init(&p->h, on_ping, NULL);
    p->then = then;
    CHECK_EQ(lf_reactor_register(r, &p->h, p->fd[0], LF_EV_READ | LF_EV_KEEPFD), 0);
    CHECK(write(p->fd[1], "x", 1) == 1);
}

static void ping_close(ping *p)
{
    close(p->fd[0]);
    close(p->fd[1]);
}

static lf_reactor ra, rb;
static lf_reactor *sets[2] = {&ra, &rb};
static lf_reactor_group group;
static ping pa, pb;

static void stop_ra(void)
{
    CHECK_EQ(lf_reactor_stop(&ra), 0);
}

static int enter_reactor(void)
{
    return lf_reactor_run(&ra, NULL);
}

static void via_reactor(const variant *v)
{
    CHECK_EQ(lf_reactor_init(&ra), 0);
    ping_open(&pa, &ra, stop_ra);
    run(v, "lf_reactor_run", enter_reactor, ECANCELED, 1);
    CHECK_EQ(lf_reactor_destroy(&ra), 0);
    ping_close(&pa);
}

/* LF_REACTOR_CONCURRENT (epoll only): lf_reactor_run waits in epoll_wait itself,
 * without the pool's join; it must leave the thread alone all the same. */
static int via_concurrent(const variant *v)
{
    int rc = lf_reactor_init_flags(&ra, LF_REACTOR_CONCURRENT);
    if (rc == ENOTSUP)
        return 0; /* poll, select: no concurrent mode */
    CHECK_EQ(rc, 0);
    ping_open(&pa, &ra, stop_ra);
    run(v, "lf_reactor_run (LF_REACTOR_CONCURRENT)", enter_reactor, ECANCELED, 1);
    CHECK_EQ(lf_reactor_destroy(&ra), 0);
    ping_close(&pa);
    return 1;
}

/* One thread runs the group: it leads one set, dispatches its byte, then leads the
 * other (round robin), whose byte is there too; the second handler stops the group. */
static void stop_group_second(void)
{
    if (lft_load(&sc.probed) == 2)
        CHECK_EQ(lf_reactor_group_stop(&group), 0);
}

static int enter_group(void)
{
    return lf_reactor_group_run(&group, NULL);
}

static void via_group(const variant *v)
{
    CHECK_EQ(lf_reactor_init(&ra), 0);
    CHECK_EQ(lf_reactor_init(&rb), 0);
    ping_open(&pa, &ra, stop_group_second);
    ping_open(&pb, &rb, stop_group_second);
    CHECK_EQ(lf_reactor_group_init(&group, sets, 2), 0);
    run(v, "lf_reactor_group_run", enter_group, ECANCELED, 2);
    CHECK_EQ(lf_reactor_group_destroy(&group), 0);
    CHECK_EQ(lf_reactor_destroy(&ra), 0);
    CHECK_EQ(lf_reactor_destroy(&rb), 0);
    ping_close(&pa);
    ping_close(&pb);
}

/* ------------------------------------------------------------------ hybrid lf_bound_join */

static lf_bound bound;
static int conn[2]; /* [0] the bound's, [1] the peer's */

/* The peer's reply, written by the pipe's handler on the joined thread: the join
 * returns only after its own thread ran the handler. */
static void reply(void)
{
    unsigned char f[HDR + 8];
    uint64_t body = REPLY_BODY;
    lft_put_header(f, MAGIC, 8, REPLY_ID);
    memcpy(f + HDR, &body, 8);
    lft_write_all(conn[1], f, sizeof f);
}

static int enter_bound(void)
{
    lf_bound_ctx c;
    unsigned char buf[8], req[HDR];
    uint64_t body;
    int rc;
    CHECK_EQ(lf_bound_ctx_init(&c, buf, sizeof buf, 0), 0);
    CHECK_EQ(lf_bound_expect(&bound, &c, REPLY_ID), 0);
    lft_put_header(req, MAGIC, 0, REPLY_ID);
    CHECK_EQ(lf_bound_send(&bound, req, sizeof req), 0);
    rc = lf_bound_join(&bound, &c, NULL);
    if (rc == 0) {
        CHECK_EQ(c.len, 8u);
        memcpy(&body, buf, 8);
        CHECK_EQ(body, REPLY_BODY);
    }
    lf_bound_ctx_destroy(&c);
    return rc;
}

static void via_bound(const variant *v)
{
    struct lf_bound_hooks hooks;
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, conn) == 0);
    CHECK_EQ(lf_reactor_init(&ra), 0);
    memset(&hooks, 0, sizeof hooks);
    hooks.header_len = HDR;
    hooks.parse_header = lft_parse;
    CHECK_EQ(lf_bound_init(&bound, conn[0], &hooks), 0);
    CHECK_EQ(lf_bound_attach(&bound, &ra), 0);
    ping_open(&pa, &ra, reply);
    run(v, "lf_bound_join (hybrid)", enter_bound, 0, 1);
    CHECK_EQ(lf_reactor_stop(&ra), 0);
    CHECK_EQ(lf_bound_destroy(&bound), 0);
    CHECK_EQ(lf_reactor_destroy(&ra), 0);
    ping_close(&pa);
    close(conn[0]);
    close(conn[1]);
}

/* ------------------------------------------------------------------ main */

static void *try_fifo(void *arg)
{
    struct sched_param sp;
    sp.sched_priority = 1;
    *(int *)arg = syscall(SYS_sched_setscheduler, 0, SCHED_FIFO, &sp) == 0 ? 0 : errno;
    return NULL;
}

int main(void)
{
    static const variant variants[] = {
        {"SCHED_OTHER", SCHED_OTHER, 0},
        {"SCHED_IDLE", SCHED_IDLE, 0},
        {"SCHED_FIFO 1", SCHED_FIFO, 1},
    };
    attrs main_before, main_after;
    dispositions disp_before, disp_after;
    cpu_set_t all;
    int runs = 0;

    lft_start("t_reactor_sidefx", 30);
    read_thread(&main_before);
    read_dispositions(&disp_before);
    no_fork = (int)lft_env("LF_TEST_NO_FORK", 0); /* qemu-user: no child of a threaded guest */
    CPU_ZERO(&all);
    CHECK(sched_getaffinity(0, sizeof all, &all) == 0);
    if (CPU_COUNT(&all) > 1)
        for (int c = CPU_SETSIZE - 1; c >= 0; c--)
            if (CPU_ISSET(c, &all))
                pin_cpu = c; /* the lowest we may use: CPU 0 where it is ours */

    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
        const variant *v = &variants[i];
        if (v->policy == SCHED_FIFO) {
            pthread_t th;
            int err = EPERM;
            if (geteuid() != 0) {
                printf("  %s: skipped (not root)\n", v->name);
                continue;
            }
            CHECK(pthread_create(&th, NULL, try_fifo, &err) == 0);
            CHECK(pthread_join(th, NULL) == 0);
            if (err == EPERM) {
                printf("  %s: skipped (EPERM: refused here)\n", v->name);
                continue;
            }
            CHECK_EQ(err, 0);
        }
        via_pool(v);
        via_reactor(v);
        via_group(v);
        via_bound(v);
        runs += 4 + via_concurrent(v);
        printf("  %s, nice %d, SIGUSR1 blocked, %s: 5 entry points compared (the concurrent "
               "reactor where the backend has it)\n", v->name, NICE,
               pin_cpu >= 0 ? "pinned to one CPU" : "one CPU");
    }

    read_thread(&main_after);
    compare("the main thread", "after everything", &main_before, &main_after, SAME_CANCEL);
    read_dispositions(&disp_after);
    compare_dispositions(&disp_before, &disp_after);
    CHECK_EQ(lft_load(&differences), 0);
    printf("t_reactor_sidefx %s/%s: %d runs; in the handler, a thread it made%s and after "
           "the call: policy, priority, nice, affinity, signal mask, cancel state and type, "
           "name, timer slack unchanged\n",
           lf_promote_name(), lf_reactor_backend_name(), runs,
           no_fork ? "" : ", a child it forked");
    return 0;
}

#else

int main(void)
{
    printf("t_reactor_sidefx: Linux only (per-thread nice, affinity, policies); skipped\n");
    return 0;
}

#endif
