/* Races that need a thread delayed between two system calls (a preempted leader),
 * widened here on purpose: linked with -Wl,--wrap for read, select, poll and
 * epoll_wait (RACE_WRAP in the Makefile), so the header's calls, inlined into this
 * file, go through the hooks below. Regression tests for two items of the reactor's
 * second design; each hung or failed with the v1 header.
 *
 * 5. closed_under_wait: the leader collected a handle, and before its wait ran the
 *    handle was removed and its fd closed (LF_EV_KEEPFD: the owner closes it right
 *    after lf_reactor_remove), or closed while still registered. The leader never
 *    leaves the reactor over it (v1, select: lf_reactor_run returned EBADF); a
 *    registered handler whose fd was closed hears LF_EV_CLOSE (select and poll; epoll
 *    forgets a closed fd by itself), and the other handles go on.
 * 6. stop_concurrent: LF_REACTOR_CONCURRENT, stop while the waiters keep draining
 *    wake-ups (a notification storm), with each drain and each blocking wait
 *    delayed: every thread returns. (v1: a waiter that had looked at the stop flag
 *    drained the stop's wake-up, and the waiters that had looked at it too but were
 *    not in epoll_wait yet slept on for good.)
 * 7. modify_vs_rearm (epoll): a handler drops its interest from inside, and its
 *    owner's re-arm (epoll_ctl) is held up until another thread has asked for READ
 *    again through lf_reactor_modify. The re-arm carries the interest it read
 *    before: it must see that it changed, and re-arm with READ (else the handle is
 *    deaf with READ wanted, and the data written after never arrives). Linked with
 *    epoll_ctl wrapped too.
 * 8. grow_under_collect (poll/select): the handle table grows (a registration of a
 *    high fd) while a leader is between growing its own arrays for the table it saw
 *    and collecting the handles (linked with realloc wrapped, to hold it there).
 *    The collection grows them again; the leader must not go on writing into the
 *    array it held a pointer to (found by TSan in the lifecycle test: a write into
 *    freed memory). The handler on the high fd gets its data. */
#include "../lf_reactor.h"
#include "lf_test.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>

/* ------------------------------------------------------------------ the hooks */

static LFT_ATOMIC(int) delay_drain_us; /* > 0: reads of an eventfd sleep this long first */
static LFT_ATOMIC(int) delay_wait_us;  /* > 0: blocking epoll_waits sleep this long first */

static void sleep_us(long us)
{
    struct timespec ts;
    ts.tv_sec = us / 1000000;
    ts.tv_nsec = (us % 1000000) * 1000;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}
static void (*before_wait)(void);      /* run once, by the next wait (then cleared) */
static pthread_mutex_t hook_lock = PTHREAD_MUTEX_INITIALIZER;

/* The linker's names for the wrapped and the real calls (-Wl,--wrap).
 * NOLINTBEGIN(bugprone-reserved-identifier) */
ssize_t __real_read(int fd, void *buf, size_t n);
int __real_select(int nfds, fd_set *r, fd_set *w, fd_set *e, struct timeval *tv);
int __real_poll(struct pollfd *fds, nfds_t n, int ms);
int __real_epoll_wait(int ep, struct epoll_event *ev, int max, int ms);
ssize_t __wrap_read(int fd, void *buf, size_t n);
void *__real_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n);
#if LF_REACTOR_BACKEND == LF_REACTOR_EPOLL
int __real_epoll_ctl(int ep, int op, int fd, struct epoll_event *ev);
int __wrap_epoll_ctl(int ep, int op, int fd, struct epoll_event *ev);
#endif
int __wrap_select(int nfds, fd_set *r, fd_set *w, fd_set *e, struct timeval *tv);
int __wrap_poll(struct pollfd *fds, nfds_t n, int ms);
int __wrap_epoll_wait(int ep, struct epoll_event *ev, int max, int ms);

ssize_t __wrap_read(int fd, void *buf, size_t n)
{
    int us = lft_load(&delay_drain_us);
    struct stat st;
    /* an anonymous inode that is read: the reactor's wake-up eventfd */
    if (us > 0 && fstat(fd, &st) == 0 && (st.st_mode & S_IFMT) == 0)
        sleep_us(us);
    return __real_read(fd, buf, n);
}

static void run_hook(void)
{
    void (*f)(void);
    pthread_mutex_lock(&hook_lock);
    f = before_wait;
    before_wait = NULL;
    pthread_mutex_unlock(&hook_lock);
    if (f)
        f();
}

int __wrap_select(int nfds, fd_set *r, fd_set *w, fd_set *e, struct timeval *tv)
{
    run_hook();
    return __real_select(nfds, r, w, e, tv);
}

int __wrap_poll(struct pollfd *fds, nfds_t n, int ms)
{
    run_hook();
    return __real_poll(fds, n, ms);
}

int __wrap_epoll_wait(int ep, struct epoll_event *ev, int max, int ms)
{
    int us = lft_load(&delay_wait_us);
    run_hook();
    if (us > 0 && ms != 0)
        sleep_us(us);
    return __real_epoll_wait(ep, ev, max, ms);
}
/* 8: the next realloc by a reactor thread waits until let go */
static LFT_ATOMIC(int) grow_hold, grow_held, grow_go;
static _Thread_local int is_main;

void *__wrap_realloc(void *p, size_t n)
{
    int expect = 1;
    if (!is_main && lft_load(&grow_hold) &&
        atomic_compare_exchange_strong(&grow_hold, &expect, 0)) {
        lft_store(&grow_held, 1);
        while (!lft_load(&grow_go))
            sleep_us(200);
    }
    return __real_realloc(p, n);
}
#if LF_REACTOR_BACKEND == LF_REACTOR_EPOLL
/* 7: the next EPOLL_CTL_MOD of hold_fd by a reactor thread waits until let go */
static LFT_ATOMIC(int) hold_fd = -1, held, hold_go;

static LFT_ATOMIC(int) mods_of_fd = -1, mods_counted; /* EPOLL_CTL_MODs of one fd */

int __wrap_epoll_ctl(int ep, int op, int fd, struct epoll_event *ev)
{
    int expect = fd;
    if (op == EPOLL_CTL_MOD && lft_load(&mods_of_fd) == fd)
        lft_add(&mods_counted, 1);
    if (op == EPOLL_CTL_MOD && !is_main && lft_load(&hold_fd) == fd &&
        atomic_compare_exchange_strong(&hold_fd, &expect, -1)) {
        lft_store(&held, 1);
        while (!lft_load(&hold_go))
            sleep_us(200);
    }
    return __real_epoll_ctl(ep, op, fd, ev);
}
#endif
/* NOLINTEND(bugprone-reserved-identifier) */

static void set_hook(void (*f)(void))
{
    pthread_mutex_lock(&hook_lock);
    before_wait = f;
    pthread_mutex_unlock(&hook_lock);
}

static int hook_pending(void)
{
    int p;
    pthread_mutex_lock(&hook_lock);
    p = before_wait != NULL;
    pthread_mutex_unlock(&hook_lock);
    return p;
}

/* ------------------------------------------------------------------ handlers */

static lf_reactor r;

typedef struct counted {
    lf_handler h;
    LFT_ATOMIC(int) events, closes, close_events;
    int remove_on_close_event;
} counted;

static int counted_event(lf_handler *h, int fd, uint32_t ev)
{
    counted *c = (counted *)h;
    char buf[64];
    while (read(fd, buf, sizeof buf) > 0) {
    }
    lft_add(&c->events, 1);
    if (ev & LF_EV_CLOSE) {
        lft_add(&c->close_events, 1);
        if (c->remove_on_close_event)
            return LF_REMOVE;
    }
    lft_progress();
    return LF_KEEP;
}

static void counted_close(lf_handler *h)
{
    lft_add(&((counted *)h)->closes, 1);
}

static void counted_init(counted *c)
{
    memset((void *)c, 0, sizeof *c);
    lf_handler_init(&c->h, counted_event, counted_close);
}

static void nonblock(int fd)
{
    CHECK(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0);
}

static LFT_ATOMIC(int) run_rc;

static void *runner(void *arg)
{
    (void)arg;
    lft_store(&run_rc, lf_reactor_run(&r, NULL));
    return NULL;
}

/* ------------------------------------------------------------------ 5 */

static counted victim, live, canary;
static int victim_fd, live_fd;

static void remove_and_close_victim(void)
{
    CHECK_EQ(lf_reactor_remove(&r, &victim.h), 0);
    CHECK_EQ(close(victim_fd), 0); /* LF_EV_KEEPFD: ours, closed right after */
}

static void close_live_fd(void)
{
    CHECK_EQ(close(live_fd), 0); /* closed while registered: the handler must hear it */
}

static void closed_under_wait(void)
{
    pthread_t t;
    int v[2], l[2], c[2];

    CHECK_EQ(lf_reactor_init(&r), 0);
    counted_init(&victim);
    counted_init(&live);
    counted_init(&canary);
    live.remove_on_close_event = 1;
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, v) == 0);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, l) == 0);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, c) == 0);
    nonblock(v[0]);
    nonblock(l[0]);
    nonblock(c[0]);
    victim_fd = v[0];
    live_fd = l[0];
    CHECK_EQ(lf_reactor_register(&r, &victim.h, v[0], LF_EV_READ | LF_EV_KEEPFD), 0);
    CHECK_EQ(lf_reactor_register(&r, &live.h, l[0], LF_EV_READ | LF_EV_KEEPFD), 0);
    CHECK_EQ(lf_reactor_register(&r, &canary.h, c[0], LF_EV_READ), 0);
    lft_store(&run_rc, -1);
    CHECK(pthread_create(&t, NULL, runner, NULL) == 0);

    /* the next wait has collected the victim: remove it and close its fd first */
    set_hook(remove_and_close_victim);
    CHECK(write(c[1], "k", 1) == 1); /* wake the leader, so a new wait starts */
    AWAIT(!hook_pending(), "a wait to run the hook");
    CHECK(write(c[1], "k", 1) == 1);
    AWAIT(lft_load(&canary.events) >= 1, "the other handles to go on");
    CHECK_EQ(lft_load(&run_rc), -1); /* still running */
    CHECK_EQ(lft_load(&victim.events), 0);

    /* a registered handle's fd closed under the wait */
    set_hook(close_live_fd);
    CHECK(write(c[1], "k", 1) == 1);
    AWAIT(!hook_pending(), "a wait to run the second hook");
#if LF_REACTOR_BACKEND != LF_REACTOR_EPOLL
    AWAIT(lft_load(&live.close_events) >= 1, "LF_EV_CLOSE for the closed fd");
    AWAIT(lft_load(&live.closes) == 1, "the handler to remove itself");
#endif
    {
        int before = lft_load(&canary.events);
        CHECK(write(c[1], "k", 1) == 1);
        AWAIT(lft_load(&canary.events) > before, "the other handles to go on");
    }
    CHECK_EQ(lft_load(&run_rc), -1);
    CHECK_EQ(lf_reactor_stop(&r), 0);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK_EQ(lft_load(&run_rc), ECANCELED); /* not EBADF */
    CHECK_EQ(lf_reactor_destroy(&r), 0);
    CHECK_EQ(lft_load(&victim.closes), 1);
    CHECK_EQ(lft_load(&live.closes), 1);
    close(v[1]);
    close(l[1]);
    close(c[1]);
    printf("  5 closed_under_wait: fds closed between the collection and the wait: the "
           "leader stays, the handler hears LF_EV_CLOSE\n");
}

/* ------------------------------------------------------------------ 6 */
#if LF_REACTOR_BACKEND == LF_REACTOR_EPOLL

static LFT_ATOMIC(int) storm_stop;
static counted noisy;

static void *storm(void *arg)
{
    (void)arg;
    while (!lft_load(&storm_stop)) {
        int rc = lf_reactor_notify(&r, &noisy.h, LF_EV_NOTIFY);
        CHECK(rc == 0 || rc == ECANCELED);
        sleep_us(50);
    }
    return NULL;
}

#define WAITERS 3

static void *waiter(void *arg)
{
    (void)arg;
    CHECK_EQ(lf_reactor_run(&r, NULL), ECANCELED);
    return NULL;
}

static void stop_concurrent(void)
{
    int rounds = (int)lft_scaled(20);
    for (int k = 0; k < rounds; k++) {
        pthread_t w[WAITERS], s;
        int e;
        CHECK_EQ(lf_reactor_init_flags(&r, LF_REACTOR_CONCURRENT), 0);
        counted_init(&noisy);
        CHECK((e = eventfd(0, EFD_NONBLOCK)) >= 0);
        CHECK_EQ(lf_reactor_register(&r, &noisy.h, e, LF_EV_READ), 0);
        for (int i = 0; i < WAITERS; i++)
            CHECK(pthread_create(&w[i], NULL, waiter, NULL) == 0);
        lft_store(&storm_stop, 0);
        lft_store(&delay_drain_us, 1000);
        lft_store(&delay_wait_us, 3000);
        CHECK(pthread_create(&s, NULL, storm, NULL) == 0);
        lft_sleep_ms(10 + k % 7);
        CHECK_EQ(lf_reactor_stop(&r), 0);
        for (int i = 0; i < WAITERS; i++) /* the watchdog turns a lost stop into a failure */
            CHECK(pthread_join(w[i], NULL) == 0);
        lft_store(&storm_stop, 1);
        CHECK(pthread_join(s, NULL) == 0);
        lft_store(&delay_drain_us, 0);
        lft_store(&delay_wait_us, 0);
        CHECK_EQ(lf_reactor_destroy(&r), 0);
        lft_progress();
    }
    printf("  6 stop_concurrent: %d stops during notification storms with slow drains, "
           "every waiter returned\n", rounds);
}
#endif

#if LF_REACTOR_BACKEND != LF_REACTOR_EPOLL
/* ------------------------------------------------------------------ 8 */

static void grow_under_collect(void)
{
    pthread_t t;
    counted first, high;
    int c[2], a[2], b[2];
    const int fd_a = 200, fd_b = 900; /* each one a larger table */

    CHECK_EQ(lf_reactor_init(&r), 0);
    counted_init(&first);
    counted_init(&high);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, c) == 0);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, a) == 0);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, b) == 0);
    CHECK_EQ(dup2(a[0], fd_a), fd_a);
    CHECK_EQ(dup2(b[0], fd_b), fd_b);
    close(a[0]);
    close(b[0]);
    nonblock(c[0]);
    nonblock(fd_a);
    nonblock(fd_b);
    CHECK_EQ(lf_reactor_register(&r, &first.h, c[0], LF_EV_READ), 0);
    lft_store(&run_rc, -1);
    CHECK(pthread_create(&t, NULL, runner, NULL) == 0);
    CHECK(write(c[1], "k", 1) == 1);
    AWAIT(lft_load(&first.events) >= 1, "the leader to run");
    /* a larger table: the leader's next wait grows its arrays, and is held there */
    lft_store(&grow_held, 0);
    lft_store(&grow_go, 0);
    lft_store(&grow_hold, 1);
    CHECK_EQ(lf_reactor_register(&r, &high.h, fd_a, LF_EV_READ), 0);
    AWAIT(lft_load(&grow_held), "the leader to grow its arrays");
    {
        counted higher;
        counted_init(&higher);
        /* a larger table again, while it is held: its collection grows them again */
        CHECK_EQ(lf_reactor_register(&r, &higher.h, fd_b, LF_EV_READ), 0);
        lft_store(&grow_go, 1);
        CHECK(write(b[1], "h", 1) == 1);
        AWAIT(lft_load(&higher.events) >= 1, "the handler on the high fd");
        CHECK_EQ(lft_load(&run_rc), -1);
        CHECK_EQ(lf_reactor_stop(&r), 0);
        CHECK(pthread_join(t, NULL) == 0);
        CHECK_EQ(lf_reactor_destroy(&r), 0); /* closes fd_a, fd_b and c[0] */
    }
    close(a[1]);
    close(b[1]);
    close(c[1]);
    printf("  8 grow_under_collect: the table grew twice under a leader's collection; "
           "the high fd's handler was served\n");
}
#endif

#if LF_REACTOR_BACKEND == LF_REACTOR_EPOLL
/* ------------------------------------------------------------------ 7 */

static LFT_ATOMIC(int) mv_reads;

static int mv_event(lf_handler *h, int fd, uint32_t ev)
{
    char buf[16];
    (void)ev;
    while (read(fd, buf, sizeof buf) > 0) {
    }
    if (lft_add(&mv_reads, 1) == 0)
        CHECK_EQ(lf_reactor_modify(&r, h, 0), 0); /* the re-arm after us is held */
    return LF_KEEP;
}

static void modify_vs_rearm(void)
{
    static const uint32_t modes[2] = {0, LF_EV_EDGE};
    for (int m = 0; m < 2; m++) {
        pthread_t th;
        lf_handler h;
        int s[2];

        lft_store(&mv_reads, 0);
        lft_store(&held, 0);
        lft_store(&hold_go, 0);
        CHECK_EQ(lf_reactor_init(&r), 0);
        CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, s) == 0);
        nonblock(s[0]);
        lf_handler_init(&h, mv_event, NULL);
        CHECK_EQ(lf_reactor_register(&r, &h, s[0], LF_EV_READ | modes[m]), 0);
        CHECK(pthread_create(&th, NULL, runner, NULL) == 0);
        lft_store(&hold_fd, s[0]);
        CHECK(write(s[1], "a", 1) == 1);
        AWAIT(lft_load(&held), "the owner's re-arm to be held");
        CHECK_EQ(lf_reactor_modify(&r, &h, LF_EV_READ), 0); /* goes through at once */
        lft_store(&hold_go, 1);
        CHECK(write(s[1], "b", 1) == 1);
        AWAIT(lft_load(&mv_reads) == 2, "the READ asked for while the re-arm was held");
        CHECK_EQ(lf_reactor_stop(&r), 0);
        CHECK(pthread_join(th, NULL) == 0);
        CHECK_EQ(lf_reactor_destroy(&r), 0);
        close(s[1]);
    }
    printf("  7 modify_vs_rearm: READ asked for during a held re-arm was heard "
           "(one-shot and edge)\n");
}

/* 9: modify from the own handler with the interest it already has costs no
 * epoll_ctl on an edge-triggered handle; a real change costs one. */
static LFT_ATOMIC(int) same_dispatches;
static LFT_ATOMIC(uint32_t) same_next; /* what the handler asks for */

static int same_event(lf_handler *h, int fd, uint32_t events)
{
    char b[16];
    (void)events;
    while (read(fd, b, sizeof b) > 0) {
    }
    CHECK_EQ(lf_reactor_modify(&r, h, lft_load(&same_next)), 0);
    lft_add(&same_dispatches, 1);
    return LF_KEEP;
}

static void modify_same(void)
{
    pthread_t th;
    lf_handler h;
    int s[2], n = 200, unchanged;

    lft_store(&same_dispatches, 0);
    lft_store(&mods_counted, 0);
    lft_store(&same_next, LF_EV_READ);
    CHECK_EQ(lf_reactor_init(&r), 0);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, s) == 0);
    nonblock(s[0]);
    lf_handler_init(&h, same_event, NULL);
    CHECK_EQ(lf_reactor_register(&r, &h, s[0], LF_EV_READ | LF_EV_EDGE), 0);
    lft_store(&mods_of_fd, s[0]);
    CHECK(pthread_create(&th, NULL, runner, NULL) == 0);
    for (int i = 0; i < n; i++) {
        CHECK(write(s[1], "x", 1) == 1);
        AWAIT(lft_load(&same_dispatches) == i + 1, "an edge dispatch");
    }
    unchanged = lft_load(&mods_counted);
    CHECK_EQ(unchanged, 0);
    lft_store(&same_next, LF_EV_READ | LF_EV_WRITE); /* a change: one epoll_ctl */
    CHECK(write(s[1], "y", 1) == 1);
    AWAIT(lft_load(&same_dispatches) > n, "the dispatch that changes the interest");
    AWAIT(lft_load(&mods_counted) >= 1, "the epoll_ctl of the change");
    lft_store(&mods_of_fd, -1);
    CHECK_EQ(lf_reactor_stop(&r), 0);
    CHECK(pthread_join(th, NULL) == 0);
    CHECK_EQ(lf_reactor_destroy(&r), 0);
    close(s[1]);
    printf("  9 modify_same: %d edge dispatches asking for the interest they had: %d epoll_ctl; "
           "a change: one\n", n, unchanged);
}
#endif

int main(void)
{
    lft_start("t_reactor_race", 20);
    printf("t_reactor_race %s/%s:\n", lf_reactor_backend_name(), lf_promote_name());
    is_main = 1;
    closed_under_wait();
#if LF_REACTOR_BACKEND != LF_REACTOR_EPOLL
    grow_under_collect();
#endif
#if LF_REACTOR_BACKEND == LF_REACTOR_EPOLL
    stop_concurrent();
    modify_vs_rearm();
    modify_same();
#endif
    return 0;
}
