/* Bad input gets a clear error code and loses nothing.
 *
 * Every rejected call (bad fd, duplicate registration, bad mask or hook, unknown
 * handler or timer, negative times, calls after stop, destroy while running, an fd
 * select cannot watch) returns its documented errno and leaves the reactor as it
 * was: the registrations that exist keep delivering, a handler that failed to
 * register can still be registered, an fd the reactor refused is still open and
 * ours. And destroy cleans up what is left: every handler still registered gets
 * handle_close exactly once and its fd is closed; handlers removed earlier are not
 * closed a second time. Runs under ASan/LSan too, so nothing may leak. */
#include "../lf_reactor.h"
#include "lf_test.h"

#include <limits.h>
#include <sys/resource.h>
#include <sys/select.h> /* FD_SETSIZE */
#include <sys/socket.h>
#include <sys/stat.h>

struct th {
    lf_handler h;
    LFT_ATOMIC(int) events_n;    /* handle_event calls */
    LFT_ATOMIC(unsigned) last_ev; /* events of the last one */
    LFT_ATOMIC(int) last_fd;     /* fd of the last one */
    LFT_ATOMIC(int) closed;      /* handle_close calls */
};

static lf_reactor r;

static int on_event(lf_handler *lh, int fd, uint32_t ev)
{
    struct th *c = (struct th *)(void *)lh;
    if (ev & LF_EV_READ) {
        char buf[64];
        ssize_t n = read(fd, buf, sizeof buf); /* drain: level-triggered otherwise */
        (void)n;
    }
    lft_store(&c->last_fd, fd);
    lft_store(&c->last_ev, ev);
    lft_add(&c->events_n, 1);
    lft_progress();
    return LF_KEEP;
}

static void on_close(lf_handler *lh)
{
    struct th *c = (struct th *)(void *)lh;
    lft_add(&c->closed, 1); /* runs in a turn of the reactor */
}

static void th_init(struct th *c)
{
    memset((void *)c, 0, sizeof *c);
    c->h.handle_event = on_event;
    c->h.handle_close = on_close;
}

/* Turn the reactor on this thread (one event per call) until c has seen `want`
 * events; fails the test after about two seconds without them. */
static void pump_until(struct th *c, int want)
{
    for (int i = 0; i < 2000 && lft_load(&c->events_n) < want; i++) {
        struct timespec dl;
        int rc;
        CHECK(lf_deadline_in(&dl, 1000000) == 0);
        rc = lf_reactor_handle_events(&r, &dl);
        CHECK(rc == 0 || rc == ETIMEDOUT);
    }
    CHECK_EQ(lft_load(&c->events_n), want);
}

/* fd still refers to the file it referred to when *was was taken */
static int same_file(int fd, const struct stat *was)
{
    struct stat now;
    return fstat(fd, &now) == 0 && now.st_dev == was->st_dev && now.st_ino == was->st_ino;
}

/* The socket once at fd (identity *was) is closed for good: the number is free
 * (EBADF) or no longer that socket, and its peer reads end-of-file, which happens
 * only after the last descriptor of the socket is gone. Not EBADF alone: the number
 * may be taken again at once by a runtime's own file (TSan's background thread
 * reopens /proc/self/maps now and then). */
static int closed_for_good(int fd, const struct stat *was, int peer)
{
    char ch;
    if (!((fcntl(fd, F_GETFD) == -1 && errno == EBADF) || !same_file(fd, was)))
        return 0;
    return read(peer, &ch, 1) == 0; /* peers are non-blocking: -1 (EAGAIN) if open */
}

/* One turn of rr, at most 1 ms. */
static void turn_once(lf_reactor *rr)
{
    struct timespec dl;
    int rc;
    CHECK(lf_deadline_in(&dl, 1000000) == 0);
    rc = lf_reactor_handle_events(rr, &dl);
    CHECK(rc == 0 || rc == ETIMEDOUT);
}

/* Turn the reactor until c's handle_close ran and the reactor closed its fd after
 * it: both happen after a grace period, in a turn (as one turn's event). */
static void wait_closed(struct th *c, int fd, const struct stat *was, int peer)
{
    for (int i = 0; i < 5000; i++) {
        if (lft_load(&c->closed) == 1 && closed_for_good(fd, was, peer))
            return;
        turn_once(&r);
        lft_progress();
    }
    CHECK(!"handle_close and close(fd) did not follow the removal");
}

/* A socketpair: [0] for the reactor, [1] ours; both non-blocking. */
static void pair(int sv[2], struct stat *id)
{
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    for (int k = 0; k < 2; k++)
        CHECK(fcntl(sv[k], F_SETFL, fcntl(sv[k], F_GETFL) | O_NONBLOCK) == 0);
    CHECK(fstat(sv[0], id) == 0);
}

static void *runner(void *arg)
{
    (void)arg;
    CHECK_EQ(lf_reactor_run(&r, NULL), ECANCELED);
    return NULL;
}

/* A handler is in use from its registration until its handle_close runs:
 * registering it again before that, after a remove whose close is still pending or
 * with another reactor, is EEXIST and disturbs nothing; afterwards it is free. (Both
 * were accepted once, and the pending close then closed the new registration's fd.)
 * The retry happens inside the handler's own dispatch, where the grace period that
 * handle_close waits for cannot end: deterministic. */
static lf_reactor r2, r3;
static struct th reuse;
static int reuse_fd2 = -1, reuse_rc_inside = -1;

static int reuse_event(lf_handler *lh, int fd, uint32_t ev)
{
    char buf[64];
    ssize_t n = read(fd, buf, sizeof buf);
    (void)n;
    (void)ev;
    CHECK_EQ(lf_reactor_remove(&r2, lh), 0);
    reuse_rc_inside = lf_reactor_register(&r2, lh, reuse_fd2, LF_EV_READ);
    lft_add(&((struct th *)(void *)lh)->events_n, 1);
    return LF_KEEP;
}

static void in_use_until_closed(void)
{
    int s1[2], s2[2], s3[2];
    struct stat i1, i2, i3;

    CHECK_EQ(lf_reactor_init(&r2), 0);
    CHECK_EQ(lf_reactor_init(&r3), 0);
    th_init(&reuse);
    reuse.h.handle_event = reuse_event;
    pair(s1, &i1);
    pair(s2, &i2);
    pair(s3, &i3);
    CHECK_EQ(lf_reactor_register(&r2, &reuse.h, s1[0], LF_EV_READ), 0);
    CHECK_EQ(lf_reactor_register(&r3, &reuse.h, s3[0], LF_EV_READ), EEXIST); /* elsewhere */
    reuse_fd2 = s2[0];
    CHECK(write(s1[1], "x", 1) == 1);
    for (int i = 0; i < 2000 && lft_load(&reuse.events_n) < 1; i++) {
        struct timespec dl;
        CHECK(lf_deadline_in(&dl, 1000000) == 0);
        int rc = lf_reactor_handle_events(&r2, &dl);
        CHECK(rc == 0 || rc == ETIMEDOUT);
    }
    CHECK_EQ(lft_load(&reuse.events_n), 1);
    CHECK_EQ(reuse_rc_inside, EEXIST); /* removal pending: not yet free */
    for (int i = 0; i < 2000 && lft_load(&reuse.closed) < 1; i++)
        turn_once(&r2);
    CHECK_EQ(lft_load(&reuse.closed), 1);
    CHECK(closed_for_good(s1[0], &i1, s1[1])); /* its own fd, not another's */
    CHECK(same_file(s2[0], &i2));              /* the refused fd is untouched */
    /* closed: free again, for any reactor */
    reuse.h.handle_event = on_event;
    CHECK_EQ(lf_reactor_register(&r3, &reuse.h, s2[0], LF_EV_READ), 0);
    CHECK_EQ(lf_reactor_destroy(&r3), 0);
    CHECK_EQ(lft_load(&reuse.closed), 2);
    CHECK(closed_for_good(s2[0], &i2, s2[1]));
    CHECK_EQ(lf_reactor_destroy(&r2), 0);
    CHECK(close(s3[0]) == 0); /* never registered: ours */
    CHECK(close(s1[1]) == 0);
    CHECK(close(s2[1]) == 0);
    CHECK(close(s3[1]) == 0);
}

/* Values at the ends of their range and objects in the wrong state: each of these
 * crashed, spun, fired at once or wrote where it must not in v1. */
static lf_reactor rm, rm2;
static LFT_ATOMIC(int) far_rc = -1;

static void *far_turn(void *arg)
{
    struct timespec far;
    far.tv_sec = sizeof(time_t) >= 8 ? (time_t)((long long)1 << 62) : (time_t)INT32_MAX;
    far.tv_nsec = 0;
    lft_store(&far_rc, lf_reactor_handle_events(&rm, &far));
    return arg;
}

static void turns_until(lf_reactor *rr, struct th *c, int want)
{
    for (int i = 0; i < 2000 && lft_load(&c->events_n) < want; i++)
        turn_once(rr);
    CHECK_EQ(lft_load(&c->events_n), want);
}

static void misuse(void)
{
    struct th a, b, f;
    lf_timer t;
    int sa[2], sb[2], sx[4][2], file, spare, rc;
    struct stat ida, idb;
    struct timespec dl;
    char path[] = "/tmp/lf-reactor-errors-XXXXXX";
    pthread_t th;

    th_init(&b);
    th_init(&f);
    pair(sa, &ida);
    pair(sb, &idb);
    /* a reactor, a handler and a timer on garbage: their init makes them whole */
    memset((void *)&rm, 0xA5, sizeof rm);
    CHECK_EQ(lf_reactor_init(&rm), 0);
    memset((void *)&a, 0xA5, sizeof a);
    lft_store(&a.events_n, 0);
    lft_store(&a.closed, 0);
    lf_handler_init(&a.h, on_event, on_close);
    memset((void *)&t, 0xA5, sizeof t);
    lf_timer_init(&t);
    CHECK_EQ(lf_reactor_register(&rm, &a.h, sa[0], LF_EV_READ), 0);

    /* times at the end of time saturate: "never", not an overflow into the past */
    CHECK_EQ(lf_reactor_timer_start(&rm, &t, &a.h, LLONG_MAX, 0), 0); /* never fires */
    CHECK_EQ(lf_deadline_in(&dl, 30 * 1000000LL), 0);
    CHECK_EQ(lf_reactor_handle_events(&rm, &dl), ETIMEDOUT);
    CHECK_EQ(lft_load(&a.events_n), 0);
    CHECK_EQ(lf_reactor_timer_start(&rm, &t, &a.h, 0, LLONG_MAX), 0); /* now, then never */
    turns_until(&rm, &a, 1);
    CHECK_EQ(lft_load(&a.last_ev), LF_EV_TIMEOUT);
    CHECK_EQ(lf_deadline_in(&dl, 30 * 1000000LL), 0);
    CHECK_EQ(lf_reactor_handle_events(&rm, &dl), ETIMEDOUT); /* no spin, no second expiry */
    CHECK_EQ(lft_load(&a.events_n), 1);
    CHECK_EQ(lf_reactor_timer_cancel(&rm, &t), 0); /* still armed, for "never" */
    /* a deadline centuries away is a deadline, not one already past */
    CHECK(pthread_create(&th, NULL, far_turn, NULL) == 0);
    lft_sleep_ms(20);
    CHECK_EQ(lf_reactor_notify(&rm, &a.h, LF_EV_NOTIFY), 0);
    CHECK(pthread_join(th, NULL) == 0);
    CHECK_EQ(lft_load(&far_rc), 0);
    CHECK_EQ(lft_load(&a.events_n), 2);

    /* a timer armed in one reactor is not another's to start or cancel */
    CHECK_EQ(lf_reactor_init(&rm2), 0);
    CHECK_EQ(lf_reactor_register(&rm2, &b.h, sb[0], LF_EV_READ), 0);
    CHECK_EQ(lf_reactor_timer_start(&rm, &t, &a.h, 60000000000LL, 0), 0);
    CHECK_EQ(lf_reactor_timer_start(&rm2, &t, &b.h, 1000, 0), EINVAL);
    CHECK_EQ(lf_reactor_timer_cancel(&rm2, &t), EINVAL);
    CHECK_EQ(lf_reactor_timer_cancel(&rm, &t), 0); /* untouched, still rm's */
    CHECK_EQ(lf_reactor_timer_start(&rm2, &t, &b.h, 60000000000LL, 0), 0); /* free: rm2's */
    CHECK_EQ(lf_reactor_timer_cancel(&rm2, &t), 0);

    /* a regular file is always "ready": refused on every backend, and still ours */
    CHECK((file = mkstemp(path)) >= 0);
    unlink(path);
    CHECK_EQ(lf_reactor_register(&rm, &f.h, file, LF_EV_READ), EPERM);
    CHECK(fcntl(file, F_GETFD) != -1);
    close(file);

    /* after destroy, stop and notify write nothing into the files that took the old
     * descriptors' numbers (v1 wrote 8 bytes into one) */
    CHECK_EQ(lf_reactor_destroy(&rm2), 0);
    for (int i = 0; i < 4; i++) {
        CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sx[i]) == 0);
        CHECK(fcntl(sx[i][0], F_SETFL, O_NONBLOCK) == 0);
        CHECK(fcntl(sx[i][1], F_SETFL, O_NONBLOCK) == 0);
    }
    CHECK_EQ(lf_reactor_stop(&rm2), EINVAL);
    CHECK_EQ(lf_reactor_notify(&rm2, &b.h, LF_EV_NOTIFY), EINVAL);
    CHECK_EQ(lf_reactor_register(&rm2, &f.h, sa[1], LF_EV_READ), EINVAL);
    for (int i = 0; i < 4; i++) {
        char ch;
        for (int k = 0; k < 2; k++) /* nothing arrived at either end */
            CHECK(read(sx[i][k], &ch, 1) == -1 && errno == EAGAIN);
        close(sx[i][0]);
        close(sx[i][1]);
    }

#if LF_REACTOR_BACKEND == LF_REACTOR_SELECT
    /* select: our own wake-up descriptor must be below FD_SETSIZE too */
    {
        struct rlimit rl;
        lf_reactor rs;
        CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0);
        if (rl.rlim_cur >= (rlim_t)FD_SETSIZE + 8) {
            CHECK((spare = open("/dev/null", O_RDONLY)) >= 0);
            for (int fd = 0; fd < FD_SETSIZE; fd++)
                if (fcntl(fd, F_GETFD) == -1)
                    CHECK_EQ(dup2(spare, fd), fd); /* every number below it taken */
            rc = lf_reactor_init(&rs);
            for (int fd = 0; fd < FD_SETSIZE; fd++) { /* give back what we took */
                struct stat st, sp;
                if (fd != spare && fstat(fd, &st) == 0 && fstat(spare, &sp) == 0 &&
                    st.st_ino == sp.st_ino && st.st_dev == sp.st_dev)
                    close(fd);
            }
            close(spare);
            if (rc == 0)
                lf_reactor_destroy(&rs);
            CHECK_EQ(rc, EMFILE);
        }
    }
#else
    (void)spare;
    (void)rc;
#endif
    CHECK_EQ(lf_reactor_destroy(&rm), 0);
    CHECK_EQ(lft_load(&a.closed), 1);
    close(sa[1]);
    close(sb[1]);
}

/* A turn whose deadline has passed still looks at the handles once without
 * blocking, so lf_reactor_handle_events(r, now) polls: what is ready is dispatched,
 * and with nothing ready the turn says ETIMEDOUT at once. (It used to time out
 * before it looked: found by test/fuzz/fuzz_reactor.c.) */
static void past_deadline_polls(unsigned flags)
{
    lf_reactor rp;
    struct th f;
    struct timespec past;
    int sv[2];
    struct stat id;

    th_init(&f);
    pair(sv, &id);
    CHECK_EQ(lf_reactor_init_flags(&rp, flags), 0);
    CHECK_EQ(lf_reactor_register(&rp, &f.h, sv[0], LF_EV_READ), 0);
    CHECK(lf_deadline_in(&past, 0) == 0);
    CHECK_EQ(lf_reactor_handle_events(&rp, &past), ETIMEDOUT);
    CHECK_EQ(write(sv[1], "p", 1), 1);
    CHECK_EQ(lf_reactor_handle_events(&rp, &past), 0);
    CHECK_EQ(lft_load(&f.events_n), 1);
    CHECK(lft_load(&f.last_ev) & LF_EV_READ);
    CHECK_EQ(lf_reactor_notify(&rp, &f.h, LF_EV_NOTIFY), 0);
    CHECK_EQ(lf_reactor_handle_events(&rp, &past), 0);
    CHECK_EQ(lft_load(&f.last_ev), LF_EV_NOTIFY);
    CHECK_EQ(lf_reactor_handle_events(&rp, &past), ETIMEDOUT);
    CHECK_EQ(lf_reactor_destroy(&rp), 0);
    CHECK(close(sv[1]) == 0);
}

int main(void)
{
    struct th a, b, c, d, e, z;
    int sa[2], sb[2], sc[2], sd[2], se[2], p[2], hi = -1;
    struct stat ida, idb, idc, idd, ide, idp;
    lf_timer t, t2;
    struct lf_reactor_stats st;
    pthread_t th;
    int registered_hi = 0;

    lft_start("t_reactor_errors", 30);
    th_init(&a);
    th_init(&b);
    th_init(&c);
    th_init(&d);
    th_init(&e);
    th_init(&z); /* never registered */
    lf_timer_init(&t);
    lf_timer_init(&t2);
    pair(sa, &ida);
    pair(sb, &idb);
    pair(sc, &idc);
    pair(sd, &idd);
    pair(se, &ide);

    /* NULL everywhere */
    CHECK_EQ(lf_reactor_init(NULL), EINVAL);
    CHECK_EQ(lf_reactor_init(&r), 0);
    CHECK_EQ(lf_reactor_register(NULL, &a.h, sa[0], LF_EV_READ), EINVAL);
    CHECK_EQ(lf_reactor_register(&r, NULL, sa[0], LF_EV_READ), EINVAL);
    CHECK_EQ(lf_reactor_remove(NULL, &a.h), EINVAL);
    CHECK_EQ(lf_reactor_remove(&r, NULL), EINVAL);
    CHECK_EQ(lf_reactor_notify(NULL, &a.h, LF_EV_NOTIFY), EINVAL);
    CHECK_EQ(lf_reactor_notify(&r, NULL, LF_EV_NOTIFY), EINVAL);
    CHECK_EQ(lf_reactor_timer_start(&r, NULL, &a.h, 0, 0), EINVAL);
    CHECK_EQ(lf_reactor_timer_start(&r, &t, NULL, 0, 0), EINVAL);
    CHECK_EQ(lf_reactor_timer_cancel(&r, NULL), EINVAL);
    CHECK_EQ(lf_reactor_timer_cancel(NULL, &t), EINVAL);
    CHECK_EQ(lf_reactor_run(NULL, NULL), EINVAL);
    CHECK_EQ(lf_reactor_stats(&r, NULL), EINVAL);
    CHECK_EQ(lf_reactor_destroy(NULL), EINVAL);

    /* registration: bad fds */
    CHECK_EQ(lf_reactor_register(&r, &a.h, -1, LF_EV_READ), EBADF);
    CHECK(pipe(p) == 0);
    CHECK(close(p[0]) == 0); /* p[0] is now a closed fd number (nothing reopens it) */
    CHECK_EQ(lf_reactor_register(&r, &a.h, p[0], LF_EV_READ), EBADF);
    CHECK(close(p[1]) == 0);
    /* bad hooks and masks */
    a.h.handle_event = NULL;
    CHECK_EQ(lf_reactor_register(&r, &a.h, sa[0], LF_EV_READ), EINVAL);
    a.h.handle_event = on_event;
    CHECK_EQ(lf_reactor_register(&r, &a.h, sa[0], 0), EINVAL);
    CHECK_EQ(lf_reactor_register(&r, &a.h, sa[0], LF_EV_READ | 0x100u), EINVAL); /* unknown (0x40 is LF_EV_EDGE, 0x80 LF_EV_KEEPFD) */
    CHECK_EQ(lf_reactor_register(&r, &a.h, sa[0], 0x80000000u), EINVAL);
    CHECK_EQ(lf_reactor_register(&r, &a.h, sa[0], LF_EV_TIMEOUT), EINVAL); /* not I/O */
    CHECK_EQ(lf_reactor_register(&r, &a.h, sa[0], LF_EV_NOTIFY), EINVAL);
    /* none of that claimed anything: the fd is still open and ours, and the same
     * handler registers on it now */
    CHECK(same_file(sa[0], &ida));
    CHECK(lf_reactor_stats(&r, &st) == 0);
    CHECK_EQ(st.registered, 0);
    CHECK_EQ(lf_reactor_register(&r, &a.h, sa[0], LF_EV_READ), 0);
    CHECK_EQ(a.h.fd, sa[0]);

    /* duplicates: the fd taken (by another handler, by the same one), and a handler
     * that is registered already (on another fd) */
    CHECK_EQ(lf_reactor_register(&r, &b.h, sa[0], LF_EV_READ), EEXIST);
    CHECK_EQ(lf_reactor_register(&r, &a.h, sa[0], LF_EV_READ), EEXIST);
    CHECK_EQ(lf_reactor_register(&r, &a.h, sb[0], LF_EV_READ), EEXIST);
    CHECK_EQ(a.h.fd, sa[0]); /* a was not moved to sb[0] */
    /* the failed attempts did not claim sb[0] either: b takes it */
    CHECK_EQ(lf_reactor_register(&r, &b.h, sb[0], LF_EV_READ), 0);
    CHECK(lf_reactor_stats(&r, &st) == 0);
    CHECK_EQ(st.registered, 2);
    /* and a still owns sa[0]: its data goes to a, not to b */
    CHECK_EQ(write(sa[1], "x", 1), 1);
    pump_until(&a, 1);
    CHECK_EQ(lft_load(&a.last_fd), sa[0]);
    CHECK(lft_load(&a.last_ev) & LF_EV_READ);
    CHECK_EQ(lft_load(&b.events_n), 0);

    /* removal: unknown handlers */
    CHECK_EQ(lf_reactor_remove(&r, &z.h), ENOENT); /* never registered */
    CHECK_EQ(lf_reactor_remove(&r, &b.h), 0);
    CHECK_EQ(lf_reactor_remove(&r, &b.h), ENOENT); /* already removed */
    CHECK_EQ(lf_reactor_notify(&r, &b.h, LF_EV_NOTIFY), ENOENT);
    CHECK_EQ(lf_reactor_timer_start(&r, &t, &b.h, 1000000, 0), ENOENT);
    CHECK_EQ(lf_reactor_timer_cancel(&r, &t), ENOENT); /* the failed start armed nothing */
    CHECK_EQ(lf_reactor_deactivate(&r, &b.h), ENOENT);
    CHECK_EQ(lf_reactor_reactivate(&r, &b.h), ENOENT);
    wait_closed(&b, sb[0], &idb, sb[1]); /* b's handle_close ran, then the reactor closed sb[0] */
    CHECK_EQ(lf_reactor_remove(&r, &b.h), ENOENT); /* and after its close as well */

    /* notifications */
    CHECK_EQ(lf_reactor_notify(&r, &a.h, 0), EINVAL);
    CHECK_EQ(lf_reactor_notify(&r, &a.h, 0x40u), EINVAL); /* unknown bit */
    CHECK_EQ(lf_reactor_notify(&r, &z.h, LF_EV_NOTIFY), ENOENT);
    CHECK_EQ(lft_load(&a.events_n), 1); /* the rejected ones posted nothing... */
    CHECK_EQ(lf_reactor_notify(&r, &a.h, LF_EV_NOTIFY), 0);
    pump_until(&a, 2); /* ...and a good one is delivered, alone */
    CHECK_EQ(lft_load(&a.last_ev), LF_EV_NOTIFY);

    /* timers */
    CHECK_EQ(lf_reactor_timer_cancel(&r, &t), ENOENT); /* initialised, never armed */
    CHECK_EQ(lf_reactor_timer_start(&r, &t, &a.h, -1, 0), EINVAL);
    CHECK_EQ(lf_reactor_timer_start(&r, &t, &a.h, 0, -1), EINVAL);
    CHECK_EQ(lf_reactor_timer_start(&r, &t, &a.h, -5, -5), EINVAL);
    CHECK_EQ(lf_reactor_timer_start(&r, &t, &z.h, 1000000, 0), ENOENT); /* unregistered */
    CHECK_EQ(lf_reactor_timer_cancel(&r, &t), ENOENT); /* no failed start armed it */
    CHECK_EQ(lf_reactor_timer_start(&r, &t, &a.h, 60000000000LL, 0), 0);
    CHECK_EQ(lf_reactor_timer_cancel(&r, &t), 0);
    CHECK_EQ(lf_reactor_timer_cancel(&r, &t), ENOENT); /* cancelled already */
    CHECK_EQ(lf_reactor_timer_start(&r, &t, &a.h, 1000000, 0), 0); /* one-shot, 1 ms */
    pump_until(&a, 3);
    CHECK_EQ(lft_load(&a.last_ev), LF_EV_TIMEOUT);
    CHECK_EQ(lf_reactor_timer_cancel(&r, &t), ENOENT); /* a fired one-shot is unarmed */
    /* removing a handler cancels its timers */
    CHECK_EQ(lf_reactor_register(&r, &c.h, sc[0], LF_EV_READ), 0);
    CHECK_EQ(lf_reactor_timer_start(&r, &t2, &c.h, 60000000000LL, 1000000000LL), 0);
    CHECK_EQ(lf_reactor_remove(&r, &c.h), 0);
    CHECK_EQ(lf_reactor_timer_cancel(&r, &t2), ENOENT);
    wait_closed(&c, sc[0], &idc, sc[1]);
    CHECK_EQ(lft_load(&c.events_n), 0);

    /* an fd select cannot watch: select refuses it (and leaves it open), the others
     * take it (the fd table grows) and deliver its events */
    {
        struct rlimit rl;
        int want = FD_SETSIZE + 8;
        CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0);
        if (rl.rlim_cur < (rlim_t)want + 1 && (rl.rlim_max == RLIM_INFINITY ||
                                                rl.rlim_max >= (rlim_t)want + 1)) {
            rl.rlim_cur = (rlim_t)want + 1;
            CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
        }
        if (rl.rlim_cur >= (rlim_t)want + 1) {
            CHECK_EQ(dup2(sd[0], want), want);
            hi = want;
        } else {
            printf("t_reactor_errors: RLIMIT_NOFILE too low for an fd >= FD_SETSIZE: "
                   "check skipped\n");
        }
    }
    if (hi >= 0) {
#if LF_REACTOR_BACKEND == LF_REACTOR_SELECT
        CHECK_EQ(lf_reactor_register(&r, &d.h, hi, LF_EV_READ), EINVAL);
        CHECK(same_file(hi, &idd)); /* still ours */
        CHECK(close(hi) == 0);
#else
        CHECK_EQ(lf_reactor_register(&r, &d.h, hi, LF_EV_READ), 0);
        registered_hi = 1;
        CHECK_EQ(write(sd[1], "y", 1), 1); /* sd[0] and hi are the same socket */
        pump_until(&d, 1);
        CHECK_EQ(lft_load(&d.last_fd), hi);
#endif
    }
    CHECK(close(sd[0]) == 0); /* the original of the dup: never registered */

    /* destroy while a thread runs the reactor: EBUSY, and nothing changed */
    CHECK_EQ(lf_reactor_register(&r, &e.h, se[0], LF_EV_READ), 0);
    CHECK(pthread_create(&th, NULL, runner, NULL) == 0);
    for (;;) {
        CHECK(lf_reactor_stats(&r, &st) == 0);
        if (st.pool.joined == 1)
            break;
        lft_sleep_ms(1);
    }
    CHECK_EQ(lf_reactor_destroy(&r), EBUSY);
    CHECK_EQ(write(se[1], "z", 1), 1); /* the running thread still delivers */
    for (int i = 0; i < 5000 && lft_load(&e.events_n) == 0; i++)
        lft_sleep_ms(1);
    CHECK_EQ(lft_load(&e.events_n), 1);
    CHECK_EQ(lft_load(&e.last_fd), se[0]);
    CHECK_EQ(lf_reactor_notify(&r, &a.h, LF_EV_NOTIFY), 0);
    for (int i = 0; i < 5000 && lft_load(&a.events_n) == 3; i++)
        lft_sleep_ms(1);
    CHECK_EQ(lft_load(&a.events_n), 4);

    /* after stop: the thread returns ECANCELED (in runner), and so does everything
     * that would start something new */
    CHECK_EQ(lf_reactor_stop(&r), 0);
    CHECK_EQ(lf_reactor_stop(&r), 0); /* idempotent */
    CHECK(pthread_join(th, NULL) == 0);
    CHECK(pipe(p) == 0);
    CHECK(fstat(p[0], &idp) == 0);
    CHECK_EQ(lf_reactor_register(&r, &z.h, p[0], LF_EV_READ), ECANCELED);
    CHECK(same_file(p[0], &idp)); /* refused: still ours */
    CHECK(close(p[0]) == 0);
    CHECK(close(p[1]) == 0);
    CHECK_EQ(lf_reactor_run(&r, NULL), ECANCELED);
    CHECK_EQ(lf_reactor_handle_events(&r, NULL), ECANCELED);
    CHECK_EQ(lf_reactor_notify(&r, &a.h, LF_EV_NOTIFY), ECANCELED); /* none would come */
    {
        lf_timer late;
        lf_timer_init(&late);
        CHECK_EQ(lf_reactor_timer_start(&r, &late, &a.h, 0, 0), ECANCELED);
    }

    /* destroy: a, e (and d on epoll/poll) are still registered; b and c were removed */
    CHECK(lf_reactor_stats(&r, &st) == 0);
    CHECK_EQ(st.registered - st.removed, 2 + registered_hi);
    CHECK_EQ(lf_reactor_destroy(&r), 0);
    CHECK_EQ(lft_load(&a.closed), 1);
    CHECK_EQ(lft_load(&e.closed), 1);
    CHECK_EQ(lft_load(&d.closed), registered_hi);
    CHECK_EQ(lft_load(&b.closed), 1); /* not a second time */
    CHECK_EQ(lft_load(&c.closed), 1);
    CHECK_EQ(lft_load(&z.closed), 0);
    CHECK(closed_for_good(sa[0], &ida, sa[1]));
    CHECK(closed_for_good(se[0], &ide, se[1]));
    if (registered_hi)
        CHECK(closed_for_good(hi, &idd, sd[1]));
    CHECK_EQ(lf_reactor_destroy(&r), EINVAL); /* twice */

    /* the peers were never registered: ours to close (and still open) */
    CHECK(close(sa[1]) == 0);
    CHECK(close(sb[1]) == 0);
    CHECK(close(sc[1]) == 0);
    CHECK(close(sd[1]) == 0);
    CHECK(close(se[1]) == 0);
    in_use_until_closed();
    misuse();
    past_deadline_polls(0);
#if LF_REACTOR_BACKEND == LF_REACTOR_EPOLL
    past_deadline_polls(LF_REACTOR_CONCURRENT);
#endif
    printf("t_reactor_errors %s/%s: bad input rejected with its errno, nothing lost%s\n",
           lf_promote_name(), lf_reactor_backend_name(),
           hi < 0 ? " (fd >= FD_SETSIZE not tried)" : "");
    return 0;
}
