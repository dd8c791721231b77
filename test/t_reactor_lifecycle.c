/* A handler's life around its removal, in the calling contexts v1 never entered.
 * Each part is a regression test for an item of the reactor's second design; each
 * failed (or aborted, or hung) with the v1 header.
 *
 * 1. blocking: one handler blocks for as long as it likes while 200 others are
 *    removed: every one of them is closed (handle_close ran, fd closed) while it
 *    still blocks. (v1 ran handle_event inside an RCU read-side section, so every
 *    close waited for the blocker: 3 s of sleep held 208 fds open.)
 * 2. from_close: handle_close runs on a thread that runs the reactor, never on
 *    liburcu's, and may call the reactor: it registers a new handler, notifies
 *    another, starts a timer for it, removes a third. (v1 ran it on liburcu's call_rcu
 *    thread, and the first such call aborted the process in liburcu's registration.)
 * 3. busy_record: registering a record from another thread while its handle_close
 *    runs is EEXIST; from inside its own handle_close, and after it returned, it
 *    works. (v1 accepted it at once, and the new registration's handle_event ran
 *    beside the old handle_close.)
 * 4. same_fd: after lf_reactor_remove, the fd the reactor owns stays taken (EEXIST)
 *    until it is closed, and a new file that gets the number afterwards is never
 *    closed by the reactor (v1 accepted the registration and then closed the fd
 *    under it, and destroy closed the number again). With LF_EV_KEEPFD a handler
 *    hands its live connection to a new handler from its own handle_event, on the
 *    same fd, at once, and the reactor never closes it.
 * 7. queued_pair (LF_REACTOR_CONCURRENT, idle threads): two notifications posted
 *    back to back are dispatched at once by two threads, even when the first
 *    handler waits for the second. (v1 wrote one wake-up for both, so the second
 *    waited for the first handler to return: a dead-lock here.)
 * 8. fork: with lf_reactor_atfork_* around fork(), a child makes, runs and destroys a
 *    reactor of its own (under load with LF_RCU_BP; after the parent's threads
 *    returned with memb, as the doc says). (v1's child hung in rcu_barrier: liburcu's
 *    call_rcu thread does not exist in a child.)
 * 9. running: a thread inside lf_reactor_handle_events or lf_reactor_turn counts as
 *    running the reactor: lf_reactor_group_init and lf_reactor_destroy say EBUSY.
 *    (v1 counted lf_reactor_run only: a group could get a second leader.)
 * (5 and 6 need a delay injected between two system calls: t_reactor_race.c. 10 is
 * lf_bound's: t_reactor_hybrid.c.) */
#include "../lf_reactor.h"
#include "lf_test.h"

#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define RUNNERS 3

static lf_reactor r;
static _Thread_local int on_runner; /* set by the threads inside lf_reactor_run */

static void *runner(void *arg)
{
    on_runner = 1;
    CHECK_EQ(lf_reactor_run((lf_reactor *)arg, NULL), ECANCELED);
    return NULL;
}

static void start(lf_reactor *rr, unsigned flags, pthread_t *th, int n)
{
    CHECK_EQ(lf_reactor_init_flags(rr, flags), 0);
    for (int i = 0; i < n; i++)
        CHECK(pthread_create(&th[i], NULL, runner, rr) == 0);
}

static void finish(lf_reactor *rr, pthread_t *th, int n)
{
    CHECK_EQ(lf_reactor_stop(rr), 0);
    for (int i = 0; i < n; i++)
        CHECK(pthread_join(th[i], NULL) == 0);
    CHECK_EQ(lf_reactor_destroy(rr), 0);
}

static int fd_open(int fd)
{
    return fcntl(fd, F_GETFD) != -1;
}

static void nonblock(int fd)
{
    CHECK(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0);
}

/* A handler that counts its events and closes, and where they ran. */
typedef struct counted {
    lf_handler h;
    LFT_ATOMIC(int) events, closes, close_off_runner, last_ev, timeouts, notes;
    LFT_ATOMIC(int) inside;
} counted;

static int counted_event(lf_handler *h, int fd, uint32_t ev)
{
    counted *c = (counted *)h;
    char buf[256];
    CHECK_EQ(lft_add(&c->inside, 1), 0);
    while (read(fd, buf, sizeof buf) > 0) {
    }
    lft_store(&c->last_ev, (int)ev);
    if (ev & LF_EV_TIMEOUT)
        lft_add(&c->timeouts, 1);
    if (ev & LF_EV_NOTIFY)
        lft_add(&c->notes, 1);
    lft_add(&c->events, 1);
    lft_add(&c->inside, -1);
    lft_progress();
    return LF_KEEP;
}

static void counted_close(lf_handler *h)
{
    counted *c = (counted *)h;
    CHECK_EQ(lft_load(&c->inside), 0);
    if (!on_runner)
        lft_add(&c->close_off_runner, 1);
    lft_add(&c->closes, 1);
    lft_progress();
}

static void counted_init(counted *c)
{
    memset((void *)c, 0, sizeof *c);
    lf_handler_init(&c->h, counted_event, counted_close);
}

/* ------------------------------------------------------------------ 1 */

#define MANY 200

static LFT_ATOMIC(int) blocker_in, blocker_go, blocker_saw;

static int blocker_event(lf_handler *h, int fd, uint32_t ev)
{
    uint64_t v;
    double t0 = lft_now();
    (void)h;
    (void)ev;
    (void)!read(fd, &v, sizeof v);
    lft_store(&blocker_in, 1);
    /* block until told (at most 20 s: a hang becomes a failure below, not here) */
    while (!lft_load(&blocker_go) && lft_now() - t0 < 20)
        lft_sleep_ms(1);
    lft_store(&blocker_saw, lft_load(&blocker_go));
    return LF_KEEP;
}

static void blocking(void)
{
    pthread_t th[RUNNERS];
    lf_handler blocker;
    static counted many[MANY];
    int fds[MANY][2], ev, closed = 0;
    double t0, waited;

    lft_store(&blocker_in, 0);
    lft_store(&blocker_go, 0);
    start(&r, 0, th, RUNNERS);
    CHECK((ev = eventfd(0, EFD_NONBLOCK)) >= 0);
    lf_handler_init(&blocker, blocker_event, NULL);
    CHECK_EQ(lf_reactor_register(&r, &blocker, ev, LF_EV_READ), 0);
    for (int i = 0; i < MANY; i++) {
        counted_init(&many[i]);
        CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, fds[i]) == 0);
        nonblock(fds[i][0]);
        CHECK_EQ(lf_reactor_register(&r, &many[i].h, fds[i][0], LF_EV_READ), 0);
    }
    CHECK(write(ev, &(uint64_t){1}, 8) == 8);
    AWAIT(lft_load(&blocker_in), "the blocker to block");
    for (int i = 0; i < MANY; i++)
        CHECK_EQ(lf_reactor_remove(&r, &many[i].h), 0);
    /* every close while the blocker still blocks: a few grace periods, not 20 s */
    t0 = lft_now();
    while (lft_now() - t0 < 10) {
        closed = 0;
        for (int i = 0; i < MANY; i++)
            closed += lft_load(&many[i].closes) == 1 && !fd_open(fds[i][0]);
        if (closed == MANY)
            break;
        lft_sleep_ms(1);
        lft_progress();
    }
    waited = lft_now() - t0;
    if (closed != MANY)
        fprintf(stderr, "blocking: %d of %d closed after %.1f s with a handler blocked\n",
                closed, MANY, waited);
    CHECK_EQ(closed, MANY);
    CHECK_EQ(lft_load(&blocker_in), 1);
    for (int i = 0; i < MANY; i++) {
        CHECK_EQ(lft_load(&many[i].close_off_runner), 0);
        close(fds[i][1]);
    }
    lft_store(&blocker_go, 1);
    finish(&r, th, RUNNERS);
    CHECK_EQ(lft_load(&blocker_saw), 1); /* it blocked until we let it go */
    printf("  1 blocking: %d handlers removed and closed in %.0f ms while another blocked\n",
           MANY, waited * 1000);
}

/* ------------------------------------------------------------------ 2 */

static counted fc_victim, fc_notified, fc_timed, fc_new;
static lf_timer fc_timer;
static int fc_new_fd[2];
static LFT_ATOMIC(int) fc_rc_register = -1, fc_rc_notify = -1, fc_rc_timer = -1,
                       fc_rc_remove = -1, fc_rc_self = -1, fc_on_runner = -1, fc_done;

static void from_close_hook(lf_handler *h)
{
    counted_close(h);
    lft_store(&fc_on_runner, on_runner);
    lft_store(&fc_rc_register, lf_reactor_register(&r, &fc_new.h, fc_new_fd[0], LF_EV_READ));
    lft_store(&fc_rc_notify, lf_reactor_notify(&r, &fc_notified.h, LF_EV_NOTIFY));
    lft_store(&fc_rc_timer, lf_reactor_timer_start(&r, &fc_timer, &fc_timed.h, 1000000, 0));
    lft_store(&fc_rc_remove, lf_reactor_remove(&r, &fc_victim.h));
    lft_store(&fc_rc_self, lf_reactor_notify(&r, h, LF_EV_NOTIFY)); /* itself: not registered */
    lft_store(&fc_done, 1); /* last: the counts above are read once this is set */
}

static void from_close(void)
{
    pthread_t th[RUNNERS];
    counted closer;
    int a[2], b[2], c[2], tfd;

    start(&r, 0, th, RUNNERS);
    counted_init(&closer);
    closer.h.handle_close = from_close_hook;
    counted_init(&fc_victim);
    counted_init(&fc_notified);
    counted_init(&fc_timed);
    counted_init(&fc_new);
    lf_timer_init(&fc_timer);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, a) == 0);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, b) == 0);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, c) == 0);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, fc_new_fd) == 0);
    nonblock(a[0]);
    nonblock(b[0]);
    nonblock(c[0]);
    nonblock(fc_new_fd[0]);
    CHECK_EQ(lf_reactor_register(&r, &closer.h, a[0], LF_EV_READ), 0);
    CHECK_EQ(lf_reactor_register(&r, &fc_victim.h, b[0], LF_EV_READ), 0);
    CHECK_EQ(lf_reactor_register(&r, &fc_notified.h, c[0], LF_EV_READ), 0);
    CHECK((tfd = eventfd(0, EFD_NONBLOCK)) >= 0);
    CHECK_EQ(lf_reactor_register(&r, &fc_timed.h, tfd, LF_EV_READ), 0);
    CHECK_EQ(lf_reactor_remove(&r, &closer.h), 0);
    AWAIT(lft_load(&fc_done), "the closer's handle_close to return");
    CHECK_EQ(lft_load(&closer.closes), 1);
    CHECK_EQ(lft_load(&fc_on_runner), 1); /* a thread of lf_reactor_run, not liburcu's */
    CHECK_EQ(lft_load(&fc_rc_register), 0);
    CHECK_EQ(lft_load(&fc_rc_notify), 0);
    CHECK_EQ(lft_load(&fc_rc_timer), 0);
    CHECK_EQ(lft_load(&fc_rc_remove), 0);
    CHECK_EQ(lft_load(&fc_rc_self), ENOENT);
    /* and each call took effect: the notification and the timer reached their
     * handler, the new handler gets its data, the removed one is closed */
    AWAIT(lft_load(&fc_notified.notes) == 1, "the notification from handle_close");
    AWAIT(lft_load(&fc_timed.timeouts) == 1, "the timer started from handle_close");
    CHECK(write(fc_new_fd[1], "x", 1) == 1);
    AWAIT(lft_load(&fc_new.events) == 1, "an event for the handler registered in handle_close");
    AWAIT(lft_load(&fc_victim.closes) == 1, "the close of the handler removed in handle_close");
    CHECK(!fd_open(a[0]) || lft_load(&closer.closes) == 1);
    finish(&r, th, RUNNERS);
    CHECK_EQ(lft_load(&fc_new.closes), 1);
    CHECK_EQ(lft_load(&fc_notified.closes), 1);
    CHECK_EQ(lft_load(&fc_timed.closes), 1);
    CHECK_EQ(lft_load(&closer.close_off_runner) + lft_load(&fc_victim.close_off_runner), 0);
    close(a[1]);
    close(b[1]);
    close(c[1]);
    close(fc_new_fd[1]);
    printf("  2 from_close: handle_close on a reactor thread registered, notified, started "
           "a timer and removed, each with effect\n");
}

/* ------------------------------------------------------------------ 3 */

static counted br;
static LFT_ATOMIC(int) br_in_close, br_tried, br_close_done, br_self_rc = -1;
static int br_self_fd = -1;
static counted br_self;

static void br_close(lf_handler *h)
{
    counted_close(h);
    lft_store(&br_in_close, 1);
    AWAIT(lft_load(&br_tried), "the other thread's attempt");
    lft_store(&br_close_done, 1);
}

/* re-arms itself on a new fd from its own close hook (a listener that reopens) */
static void br_self_close(lf_handler *h)
{
    counted_close(h);
    if (lft_load(&br_self.closes) == 1)
        lft_store(&br_self_rc, lf_reactor_register(&r, h, br_self_fd, LF_EV_READ));
}

static void busy_record(void)
{
    pthread_t th[RUNNERS];
    int a[2], b[2], s1[2], s2[2], rc;
    double t0;

    start(&r, 0, th, RUNNERS);
    counted_init(&br);
    br.h.handle_close = br_close;
    lft_store(&br_in_close, 0);
    lft_store(&br_tried, 0);
    lft_store(&br_close_done, 0);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, a) == 0);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, b) == 0);
    nonblock(a[0]);
    nonblock(b[0]);
    CHECK_EQ(lf_reactor_register(&r, &br.h, a[0], LF_EV_READ), 0);
    CHECK_EQ(lf_reactor_remove(&r, &br.h), 0);
    CHECK_EQ(lf_reactor_register(&r, &br.h, b[0], LF_EV_READ), EEXIST); /* close pending */
    AWAIT(lft_load(&br_in_close), "handle_close to start");
    /* from another thread while handle_close runs: refused, and nothing changed */
    CHECK_EQ(lf_reactor_register(&r, &br.h, b[0], LF_EV_READ), EEXIST);
    CHECK_EQ(br.h.fd, a[0]);
    lft_store(&br_tried, 1);
    /* once it returned, the record is free: retry until then (the contract) */
    t0 = lft_now();
    while ((rc = lf_reactor_register(&r, &br.h, b[0], LF_EV_READ)) == EEXIST && lft_now() - t0 < 10)
        lft_sleep_ms(1);
    CHECK_EQ(rc, 0);
    CHECK_EQ(lft_load(&br_close_done), 1); /* never before its handle_close returned */
    CHECK(write(b[1], "y", 1) == 1);
    AWAIT(lft_load(&br.events) == 1, "the record's new registration to get its data");

    /* from inside its own handle_close */
    counted_init(&br_self);
    br_self.h.handle_close = br_self_close;
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, s1) == 0);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, s2) == 0);
    nonblock(s1[0]);
    nonblock(s2[0]);
    br_self_fd = s2[0];
    CHECK_EQ(lf_reactor_register(&r, &br_self.h, s1[0], LF_EV_READ), 0);
    CHECK_EQ(lf_reactor_remove(&r, &br_self.h), 0);
    AWAIT(lft_load(&br_self_rc) != -1, "the close hook's own registration");
    CHECK_EQ(lft_load(&br_self_rc), 0);
    CHECK(write(s2[1], "z", 1) == 1);
    AWAIT(lft_load(&br_self.events) == 1, "an event on the fd registered from handle_close");
    finish(&r, th, RUNNERS);
    CHECK_EQ(lft_load(&br.closes), 2);
    CHECK_EQ(lft_load(&br_self.closes), 2);
    close(a[1]);
    close(b[1]);
    close(s1[1]);
    close(s2[1]);
    printf("  3 busy_record: EEXIST while its handle_close runs; free from inside it and "
           "after it\n");
}

/* ------------------------------------------------------------------ 4 */

/* LF_EV_KEEPFD: the first handler reads one byte, then hands the connection to the
 * second, on the same fd, from its own handle_event */
static counted sf_second;
static LFT_ATOMIC(int) sf_switch_rc = -1, sf_remove_rc = -1;

static int sf_first_event(lf_handler *h, int fd, uint32_t ev)
{
    char ch;
    (void)ev;
    CHECK_EQ(read(fd, &ch, 1), 1);
    lft_store(&sf_remove_rc, lf_reactor_remove(&r, h));
    lft_store(&sf_switch_rc, lf_reactor_register(&r, &sf_second.h, fd, LF_EV_READ | LF_EV_KEEPFD));
    return LF_KEEP;
}

static void same_fd(void)
{
    pthread_t th[RUNNERS];
    counted a, b, first;
    int s[2], k[2], n, other;
    struct stat st;

    start(&r, 0, th, RUNNERS);
    /* the reactor's fd: taken until closed */
    counted_init(&a);
    counted_init(&b);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, s) == 0);
    nonblock(s[0]);
    n = s[0];
    CHECK_EQ(lf_reactor_register(&r, &a.h, n, LF_EV_READ), 0);
    CHECK_EQ(lf_reactor_remove(&r, &a.h), 0);
    CHECK_EQ(lf_reactor_register(&r, &b.h, n, LF_EV_READ), EEXIST); /* not closed yet */
    AWAIT(lft_load(&a.closes) == 1 && !fd_open(n), "the reactor to close a's fd");
    /* a new file on the number: the reactor has nothing more to do with it */
    CHECK((other = dup(s[1])) >= 0);
    if (other != n) {
        CHECK_EQ(dup2(other, n), n);
        close(other);
    }
    CHECK(fstat(n, &st) == 0);

    /* LF_EV_KEEPFD: a live connection changes handlers on its own fd */
    counted_init(&first);
    first.h.handle_event = sf_first_event;
    counted_init(&sf_second);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, k) == 0);
    nonblock(k[0]);
    CHECK_EQ(lf_reactor_register(&r, &first.h, k[0], LF_EV_READ | LF_EV_KEEPFD), 0);
    CHECK(write(k[1], "1", 1) == 1);
    AWAIT(lft_load(&sf_switch_rc) != -1, "the first handler's switch");
    CHECK_EQ(lft_load(&sf_remove_rc), 0);
    CHECK_EQ(lft_load(&sf_switch_rc), 0);
    AWAIT(lft_load(&first.closes) == 1, "the first handler's close");
    CHECK(fd_open(k[0])); /* its close left the fd alone */
    CHECK(write(k[1], "23", 2) == 2);
    AWAIT(lft_load(&sf_second.events) >= 1, "the second handler's event");
    finish(&r, th, RUNNERS);
    CHECK_EQ(lft_load(&sf_second.closes), 1);
    CHECK(fd_open(k[0])); /* LF_EV_KEEPFD: still ours after destroy */
    CHECK(fd_open(n));    /* the new file on the old number: never closed by the reactor */
    {
        struct stat now;
        CHECK(fstat(n, &now) == 0 && now.st_ino == st.st_ino && now.st_dev == st.st_dev);
    }
    close(n);
    close(s[1]);
    close(k[0]);
    close(k[1]);
    printf("  4 same_fd: the reactor's fd taken until closed; LF_EV_KEEPFD switches "
           "handlers on a live fd\n");
}

/* ------------------------------------------------------------------ 7 */
#if LF_REACTOR_BACKEND == LF_REACTOR_EPOLL

static counted qa, qb;
static LFT_ATOMIC(int) qa_waited_ok;

static int qa_event(lf_handler *h, int fd, uint32_t ev)
{
    double t0 = lft_now();
    (void)h;
    (void)fd;
    (void)ev;
    /* the first waits for the second: possible only if another thread runs it */
    while (lft_load(&qb.events) == 0 && lft_now() - t0 < 2)
        lft_sleep_ms(1);
    lft_store(&qa_waited_ok, lft_load(&qb.events) > 0);
    lft_add(&qa.events, 1);
    return LF_KEEP;
}

static void queued_pair(void)
{
    pthread_t th[RUNNERS];
    int ea, eb, trials = (int)lft_scaled(40), bad = 0;

    start(&r, LF_REACTOR_CONCURRENT, th, RUNNERS);
    counted_init(&qa);
    counted_init(&qb);
    qa.h.handle_event = qa_event;
    CHECK((ea = eventfd(0, EFD_NONBLOCK)) >= 0);
    CHECK((eb = eventfd(0, EFD_NONBLOCK)) >= 0);
    CHECK_EQ(lf_reactor_register(&r, &qa.h, ea, LF_EV_READ), 0);
    CHECK_EQ(lf_reactor_register(&r, &qb.h, eb, LF_EV_READ), 0);
    for (int t = 0; t < trials; t++) {
        struct lf_reactor_stats s;
        lft_store(&qa.events, 0);
        lft_store(&qb.events, 0);
        /* every thread idle in the wait before the pair is posted */
        AWAIT((lf_reactor_stats(&r, &s), s.waiting == RUNNERS), "every thread asleep");
        CHECK_EQ(lf_reactor_notify(&r, &qa.h, LF_EV_NOTIFY), 0);
        CHECK_EQ(lf_reactor_notify(&r, &qb.h, LF_EV_NOTIFY), 0);
        AWAIT(lft_load(&qa.events) == 1, "the first handler");
        bad += !lft_load(&qa_waited_ok);
        lft_progress();
    }
    finish(&r, th, RUNNERS);
    if (bad)
        fprintf(stderr, "queued_pair: in %d of %d trials the second notification waited "
                "for the first handler\n", bad, trials);
    CHECK_EQ(bad, 0);
    printf("  7 queued_pair: %d pairs of notifications, each taken by two idle threads at "
           "once\n", trials);
}
#endif

/* ------------------------------------------------------------------ 8 */
#ifndef LFT_TSAN

/* In the child: a reactor of its own, an event through it, a removal whose close
 * needs a grace period (liburcu's call_rcu thread), and destroy's rcu_barrier. */
static int child_reactor(void)
{
    lf_reactor cr;
    counted c;
    int p[2];
    struct timespec dl;

    if (lf_reactor_init(&cr) != 0 || pipe(p) != 0)
        return 10;
    nonblock(p[0]);
    counted_init(&c);
    if (lf_reactor_register(&cr, &c.h, p[0], LF_EV_READ) != 0)
        return 11;
    if (write(p[1], "f", 1) != 1)
        return 12;
    lf_deadline_in(&dl, 2000000000LL);
    if (lf_reactor_handle_events(&cr, &dl) != 0 || lft_load(&c.events) != 1)
        return 13;
    if (lf_reactor_remove(&cr, &c.h) != 0)
        return 14;
    for (int i = 0; i < 2000 && lft_load(&c.closes) == 0; i++) {
        lf_deadline_in(&dl, 1000000);
        (void)lf_reactor_handle_events(&cr, &dl);
    }
    if (lft_load(&c.closes) != 1)
        return 15; /* the grace period never ended */
    if (lf_reactor_destroy(&cr) != 0)
        return 16;
    return 0;
}

static LFT_ATOMIC(int) load_stop;
static void *load_writer(void *arg)
{
    int fd = *(int *)arg;
    while (!lft_load(&load_stop)) {
        (void)!write(fd, "L", 1);
        lft_sleep_ms(0);
    }
    return NULL;
}

static int fork_once(void)
{
    int st = 0;
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        alarm(20); /* a hang is a failure, not a stuck test */
        _exit(child_reactor());
    }
    for (int i = 0; i < 15000; i++) { /* 15 s */
        if (waitpid(pid, &st, WNOHANG) == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
        lft_sleep_ms(1);
        lft_progress();
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    return 99; /* hung */
}

#endif

static void forks(void)
{
#ifdef LFT_TSAN
    /* TSan cannot start threads in the child of a threaded process (its own limit:
     * "starting new threads after multi-threaded fork is not supported") */
    printf("  8 fork: not under TSan\n");
#else
    pthread_t th[RUNNERS], w;
    counted c;
    int p[2], rounds = (int)lft_scaled(6), rc;

    if (lft_env("LF_TEST_NO_FORK", 0)) {
        /* qemu-user aborts a child forked from a threaded guest (its own limit) */
        printf("  8 fork: skipped (LF_TEST_NO_FORK: under qemu-user)\n");
        return;
    }

    CHECK(pthread_atfork(lf_reactor_atfork_prepare, lf_reactor_atfork_parent,
                         lf_reactor_atfork_child) == 0);
    start(&r, 0, th, RUNNERS);
    counted_init(&c);
    CHECK(pipe(p) == 0);
    nonblock(p[0]);
    nonblock(p[1]);
    CHECK_EQ(lf_reactor_register(&r, &c.h, p[0], LF_EV_READ), 0);
    lft_store(&load_stop, 0);
    CHECK(pthread_create(&w, NULL, load_writer, &p[1]) == 0);
    AWAIT(lft_load(&c.events) > 10, "load on the parent's reactor");
#ifdef LF_RCU_BP
    /* bp: under load, as often as we like */
    for (int i = 0; i < rounds; i++) {
        rc = fork_once();
        if (rc)
            fprintf(stderr, "fork under load: the child said %d\n", rc);
        CHECK_EQ(rc, 0);
    }
#endif
    lft_store(&load_stop, 1);
    CHECK(pthread_join(w, NULL) == 0);
    finish(&r, th, RUNNERS); /* memb: the parent's threads returned before the fork */
    close(p[1]);
    for (int i = 0; i < rounds; i++) {
        rc = fork_once();
        if (rc)
            fprintf(stderr, "fork after the threads returned: the child said %d\n", rc);
        CHECK_EQ(rc, 0);
    }
    printf("  8 fork: %d children made, ran and destroyed a reactor of their own%s\n",
           rounds,
#ifdef LF_RCU_BP
           " (also under load, LF_RCU_BP)"
#else
           ""
#endif
    );
#endif
}

/* ------------------------------------------------------------------ 9 */

static LFT_ATOMIC(int) he_rc = -1, he_in;

static void *one_turn(void *arg)
{
    struct timespec dl;
    lf_follower f;
    (void)arg;
    lft_store(&he_in, 1);
    CHECK_EQ(lf_deadline_in(&dl, 600000000LL), 0);
    if (arg) {
        CHECK_EQ(lf_follower_init(&f, 0), 0);
        lft_store(&he_rc, lf_reactor_turn(&r, &f, &dl));
        lf_follower_destroy(&f);
    } else {
        lft_store(&he_rc, lf_reactor_handle_events(&r, &dl));
    }
    return NULL;
}

static void running(void)
{
    for (int how = 0; how < 2; how++) {
        pthread_t t;
        lf_reactor_group g;
        lf_reactor *sets[1] = {&r};
        struct lf_reactor_stats s;

        CHECK_EQ(lf_reactor_init(&r), 0);
        lft_store(&he_rc, -1);
        lft_store(&he_in, 0);
        CHECK(pthread_create(&t, NULL, one_turn, how ? (void *)1 : NULL) == 0);
        AWAIT(lft_load(&he_in) && (lf_reactor_stats(&r, &s), s.pool.leader == 1),
              "the turn to lead");
        CHECK_EQ(lf_reactor_group_init(&g, sets, 1), EBUSY); /* a second leader otherwise */
        CHECK_EQ(lf_reactor_destroy(&r), EBUSY);
        CHECK(pthread_join(t, NULL) == 0);
        CHECK_EQ(lft_load(&he_rc), ETIMEDOUT);
        /* and once it returned, the group takes the set, and the set refuses turns */
        CHECK_EQ(lf_reactor_group_init(&g, sets, 1), 0);
        CHECK_EQ(lf_reactor_handle_events(&r, NULL), EBUSY);
        CHECK_EQ(lf_reactor_destroy(&r), EBUSY);
        CHECK_EQ(lf_reactor_group_destroy(&g), 0);
        CHECK_EQ(lf_reactor_destroy(&r), 0);
    }
    printf("  9 running: handle_events and turn count as running (group_init, destroy: EBUSY)\n");
}

int main(void)
{
    long long part = lft_env("LF_TEST_PART", 0); /* 0: all; n: only part n */
    lft_start("t_reactor_lifecycle", 30);
    signal(SIGPIPE, SIG_IGN);
    printf("t_reactor_lifecycle %s/%s:\n", lf_reactor_backend_name(), lf_promote_name());
    if (!part || part == 1)
        blocking();
    if (!part || part == 2)
        from_close();
    if (!part || part == 3)
        busy_record();
    if (!part || part == 4)
        same_fd();
#if LF_REACTOR_BACKEND == LF_REACTOR_EPOLL
    if (!part || part == 7)
        queued_pair();
#endif
    if (!part || part == 9)
        running();
    if (!part || part == 8)
        forks();
    return 0;
}
