/* lf_bound attached to an lf_reactor (hybrid client/server): threads waiting for
 * their replies keep turning the reactor.
 *
 * - No dead-lock: every thread of our server waits for a reply from a peer, and the
 *   peer answers each request only after our server has served a call-back for it
 *   on another connection. Without the reactor (control: the same set-up with a
 *   bare bound) the call times out; with it, every call completes, and a periodic
 *   timer keeps firing although no thread runs lf_reactor_run.
 * - Nested upcall: a handler dispatched by a waiting thread makes its own call; the
 *   inner call completes first, then the outer one (the policy is "allow").
 * - A deadline, lf_reactor_stop and a peer that hangs up end the waits with
 *   ETIMEDOUT, ECONNABORTED and ECONNRESET (a stop abandons the waits: the bound
 *   cannot tell that their requests were never sent, so not ECANCELED, "not sent");
 *   lf_bound_destroy waits for its handler, and after a failed connection touches
 *   nothing its handle_close freed.
 * - The connection's fd stays the caller's: after the connection failed and the
 *   reactor closed the bound's handler, the fd is still open (v1 closed it one grace
 *   period later, and a send could then write into a file that reused the number),
 *   and the bound and the reactor may be destroyed in either order. */
#define LF_BOUND_REACTOR 1
#include "../lf_bound.h"
#include "lf_frames.h"

#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>

#define THREADS 3

static lf_reactor r;
static lf_bound b;

static void put_frame(unsigned char *f, uint64_t id, uint64_t body)
{
    lft_put_header(f, MAGIC, 8, id);
    memcpy(f + HDR, &body, 8);
}

/* blocking read of one frame: 1, or 0 at EOF */
static int read_frame(int fd, uint64_t *id, uint64_t *body)
{
    unsigned char f[HDR + 8];
    if (!lft_read_all(fd, f, sizeof f))
        return 0; /* hung up (with our request unread: ECONNRESET) */
    memcpy(id, f + 8, 8);
    memcpy(body, f + HDR, 8);
    return 1;
}

static void bound_up_as(lf_bound *x, int fd, int attach)
{
    struct lf_bound_hooks hooks;
    memset(&hooks, 0, sizeof hooks);
    hooks.header_len = HDR;
    hooks.parse_header = lft_parse;
    CHECK_EQ(lf_bound_init(x, fd, &hooks), 0);
    if (attach)
        CHECK_EQ(lf_bound_attach(x, &r), 0);
}

static void bound_up(int fd, int attach)
{
    bound_up_as(&b, fd, attach);
}

/* ------------------------------------------------------------------ no dead-lock */

static int peer_c1, peer_c2; /* the peer's ends of the call and call-back connections */
static long long peer_quota;
static LFT_ATOMIC(long long) callbacks, ticks;

/* The peer: for each request, first a call-back to our server, then the reply. */
static void *peer(void *arg)
{
    (void)arg;
    for (long long k = 0; k < peer_quota; k++) {
        uint64_t id, body, cid, cbody;
        unsigned char f[HDR + 8];
        if (!read_frame(peer_c1, &id, &body))
            return NULL;
        CHECK_EQ(body, id * 2);
        put_frame(f, id, id * 3); /* "call me back about id" */
        lft_write_all(peer_c2, f, sizeof f);
        if (!read_frame(peer_c2, &cid, &cbody))
            return NULL; /* the control run: nobody answers, then we hang up */
        CHECK_EQ(cid, id);
        CHECK_EQ(cbody, id * 5);
        put_frame(f, id, id * 7); /* the reply */
        lft_write_all(peer_c1, f, sizeof f);
    }
    return NULL;
}

/* Our server's call-back service, a plain handler of the reactor. */
typedef struct service {
    lf_handler h;
    lf_timer t;
} service;

static int on_callback(lf_handler *h, int fd, uint32_t events)
{
    (void)h;
    if (events & LF_EV_TIMEOUT)
        lft_add(&ticks, 1LL);
    if (events & LF_EV_READ) {
        for (;;) {
            unsigned char f[HDR + 8];
            uint64_t id, body;
            ssize_t n = read(fd, f, sizeof f); /* 24-byte frames, written whole */
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                break;
            if (n == 0)
                return LF_REMOVE;
            CHECK_EQ(n, (ssize_t)sizeof f);
            memcpy(&id, f + 8, 8);
            memcpy(&body, f + HDR, 8);
            CHECK_EQ(body, id * 3);
            put_frame(f, id, id * 5);
            lft_write_all(fd, f, sizeof f);
            lft_add(&callbacks, 1LL);
        }
    }
    return LF_KEEP;
}

static long long calls_per_thread;

static void *caller(void *arg)
{
    long t = (long)arg;
    lf_bound_ctx c;
    unsigned char buf[8];
    CHECK_EQ(lf_bound_ctx_init(&c, buf, sizeof buf, 0), 0);
    for (long long k = 0; k < calls_per_thread; k++) {
        uint64_t id = ((uint64_t)(t + 1) << 32) | (uint64_t)k, got;
        unsigned char f[HDR + 8];
        put_frame(f, id, id * 2);
        CHECK_EQ(lf_bound_call(&b, &c, id, f, sizeof f, NULL), 0);
        CHECK_EQ(c.len, 8u);
        memcpy(&got, buf, 8);
        CHECK_EQ(got, id * 7);
        lft_progress();
    }
    lf_bound_ctx_destroy(&c);
    return NULL;
}

/* The control: a bare bound in the same set-up cannot serve the call-back. */
static void bare_would_deadlock(void)
{
    int c1[2], c2[2];
    pthread_t p;
    lf_bound_ctx c;
    unsigned char buf[8], f[HDR + 8];
    struct timespec dl;

    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, c1) == 0);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, c2) == 0);
    peer_c1 = c1[1];
    peer_c2 = c2[1];
    peer_quota = 1;
    bound_up(c1[0], 0);
    CHECK(pthread_create(&p, NULL, peer, NULL) == 0);
    CHECK_EQ(lf_bound_ctx_init(&c, buf, sizeof buf, 0), 0);
    put_frame(f, 1, 2);
    CHECK_EQ(lf_deadline_in(&dl, 200 * 1000000LL), 0);
    CHECK_EQ(lf_bound_call(&b, &c, 1, f, sizeof f, &dl), ETIMEDOUT);
    close(c2[0]); /* the peer gives up waiting for its call-back */
    CHECK(pthread_join(p, NULL) == 0);
    lf_bound_ctx_destroy(&c);
    CHECK_EQ(lf_bound_destroy(&b), 0);
    close(c1[0]);
    close(c1[1]);
    close(c2[1]);
}

static void no_deadlock(void)
{
    int c1[2], c2[2];
    pthread_t p, th[THREADS];
    service svc;
    struct lf_bound_stats s;

    lft_store(&callbacks, 0LL);
    lft_store(&ticks, 0LL);
    CHECK_EQ(lf_reactor_init(&r), 0);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, c1) == 0);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, c2) == 0);
    CHECK(fcntl(c2[0], F_SETFL, O_NONBLOCK) == 0);
    peer_c1 = c1[1];
    peer_c2 = c2[1];
    calls_per_thread = lft_scaled(400);
    peer_quota = THREADS * calls_per_thread;
    bound_up(c1[0], 1);
    memset(&svc, 0, sizeof svc);
    lf_handler_init(&svc.h, on_callback, NULL);
    CHECK_EQ(lf_reactor_register(&r, &svc.h, c2[0], LF_EV_READ), 0);
    lf_timer_init(&svc.t);
    CHECK_EQ(lf_reactor_timer_start(&r, &svc.t, &svc.h, 1000000, 1000000), 0);

    CHECK(pthread_create(&p, NULL, peer, NULL) == 0);
    for (long i = 0; i < THREADS; i++) /* the server's only threads: all of them call */
        CHECK(pthread_create(&th[i], NULL, caller, (void *)i) == 0);
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_join(th[i], NULL) == 0);
    CHECK(pthread_join(p, NULL) == 0);

    CHECK_EQ(lft_load(&callbacks), peer_quota);
    CHECK(lft_load(&ticks) > 0); /* timers were served by the waiting threads too */
    CHECK_EQ(lf_bound_stats(&b, &s), 0);
    CHECK_EQ(s.replies, (unsigned long long)peer_quota);
    CHECK_EQ(s.own + s.handed_off, s.replies);
    CHECK_EQ(s.stray + s.timeouts + s.cancels, 0ULL);
    CHECK_EQ(lf_bound_destroy(&b), 0); /* removes its handler */
    CHECK_EQ(lf_reactor_destroy(&r), 0);  /* closes c2[0], registered without LF_EV_KEEPFD */
    close(c1[0]);                         /* the bound's fd is ours */
    close(c1[1]);
    close(c2[1]);
    printf("t_reactor_hybrid %s/%s: %d threads, all waiting, made %lld calls that each "
           "needed a call-back first; %lld timer ticks meanwhile; %llu replies read by "
           "their own waiter, %llu handed off\n",
           lf_reactor_backend_name(), lf_promote_name(), THREADS, peer_quota,
           lft_load(&ticks), s.own, s.handed_off);
}

/* ------------------------------------------------------------------ nested upcall */

static int echo_fd; /* the peer's end */
static LFT_ATOMIC(int) nested_ok;
static _Thread_local int inside_outer_call;

/* Echo peer: gets the outer request, then the nested one; answers nested, then outer. */
static void *echo_peer(void *arg)
{
    uint64_t outer, inner, body;
    unsigned char f[HDR + 8];
    (void)arg;
    CHECK(read_frame(echo_fd, &outer, &body));
    CHECK(read_frame(echo_fd, &inner, &body));
    put_frame(f, inner, inner + 1);
    lft_write_all(echo_fd, f, sizeof f);
    put_frame(f, outer, outer + 1);
    lft_write_all(echo_fd, f, sizeof f);
    return NULL;
}

static int on_nested(lf_handler *h, int fd, uint32_t events)
{
    lf_bound_ctx c;
    unsigned char buf[8], f[HDR + 8];
    uint64_t got;
    (void)h;
    (void)fd;
    (void)events;
    CHECK_EQ(inside_outer_call, 1); /* dispatched by the thread that waits */
    CHECK_EQ(lf_bound_ctx_init(&c, buf, sizeof buf, 0), 0);
    put_frame(f, 99, 0);
    CHECK_EQ(lf_bound_call(&b, &c, 99, f, sizeof f, NULL), 0);
    memcpy(&got, buf, 8);
    CHECK_EQ(got, 100u);
    lf_bound_ctx_destroy(&c);
    lft_store(&nested_ok, 1);
    return LF_KEEP;
}

static void nested_upcall(void)
{
    int e[2], ev;
    pthread_t p;
    lf_handler h;
    lf_bound_ctx c;
    unsigned char buf[8], f[HDR + 8];
    uint64_t got;

    lft_store(&nested_ok, 0);
    CHECK_EQ(lf_reactor_init(&r), 0);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, e) == 0);
    echo_fd = e[1];
    bound_up(e[0], 1);
    CHECK((ev = eventfd(0, EFD_NONBLOCK)) >= 0);
    lf_handler_init(&h, on_nested, NULL);
    CHECK_EQ(lf_reactor_register(&r, &h, ev, LF_EV_READ), 0);
    CHECK(pthread_create(&p, NULL, echo_peer, NULL) == 0);
    CHECK_EQ(lf_bound_ctx_init(&c, buf, sizeof buf, 0), 0);
    /* the notification is queued before we wait: our own turn dispatches it */
    CHECK_EQ(lf_reactor_notify(&r, &h, LF_EV_NOTIFY), 0);
    put_frame(f, 7, 0);
    inside_outer_call = 1;
    CHECK_EQ(lf_bound_call(&b, &c, 7, f, sizeof f, NULL), 0);
    inside_outer_call = 0;
    memcpy(&got, buf, 8);
    CHECK_EQ(got, 8u);
    CHECK_EQ(lft_load(&nested_ok), 1); /* the inner call completed inside the outer one */
    CHECK(pthread_join(p, NULL) == 0);
    lf_bound_ctx_destroy(&c);
    CHECK_EQ(lf_bound_destroy(&b), 0);
    CHECK_EQ(lf_reactor_destroy(&r), 0);
    close(e[0]); /* the bound's fd is ours */
    close(e[1]);
}

/* ------------------------------------------------------------------ ends of waiting */

static LFT_ATOMIC(int) ended[THREADS];

static void *waiter(void *arg)
{
    long t = (long)arg;
    lf_bound_ctx c;
    unsigned char buf[8];
    CHECK_EQ(lf_bound_ctx_init(&c, buf, sizeof buf, 0), 0);
    CHECK_EQ(lf_bound_expect(&b, &c, (uint64_t)t), 0);
    lft_store(&ended[t], lf_bound_join(&b, &c, NULL));
    lf_bound_ctx_destroy(&c);
    return NULL;
}

static unsigned waiting_now(void)
{
    struct lf_reactor_stats s;
    CHECK_EQ(lf_reactor_stats(&r, &s), 0);
    return s.pool.leader + s.pool.followers;
}

/* rc ECANCELED: stop the reactor under the waiters (they get ECONNABORTED);
 * ECONNRESET: the peer hangs up.
 * lone_first: before them, a lone waiter leads and times out. */
static void ends(int how, int lone_first)
{
    int e[2];
    pthread_t th[THREADS];
    lf_bound_ctx c;
    unsigned char buf[8];
    struct timespec dl;

    CHECK_EQ(lf_reactor_init(&r), 0);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, e) == 0);
    bound_up(e[0], 1);
    if (lone_first) {
        CHECK_EQ(lf_bound_ctx_init(&c, buf, sizeof buf, 0), 0);
        CHECK_EQ(lf_bound_expect(&b, &c, 1000), 0);
        CHECK_EQ(lf_deadline_in(&dl, 30 * 1000000LL), 0);
        CHECK_EQ(lf_bound_join(&b, &c, &dl), ETIMEDOUT);
        lf_bound_ctx_destroy(&c);
    }
    for (long i = 0; i < THREADS; i++) {
        lft_store(&ended[i], -1);
        CHECK(pthread_create(&th[i], NULL, waiter, (void *)i) == 0);
    }
    AWAIT(waiting_now() == THREADS, "every waiter leads or follows in the reactor's pool");
    if (how == ECANCELED)
        CHECK_EQ(lf_reactor_stop(&r), 0);
    else
        close(e[1]); /* EOF on the connection */
    for (int i = 0; i < THREADS; i++) {
        CHECK(pthread_join(th[i], NULL) == 0);
        CHECK_EQ(lft_load(&ended[i]), how == ECANCELED ? ECONNABORTED : how);
    }
    CHECK_EQ(lf_bound_destroy(&b), 0);
    CHECK_EQ(lf_reactor_destroy(&r), 0);
    close(e[0]); /* the bound's fd is ours */
    if (how == ECANCELED)
        close(e[1]);
}

/* lf_bound_destroy after the connection failed. The reactor ran the bound's
 * handle_close long before; destroy must not touch anything that freed. It did: the
 * record holding the bound's handler was freed in handle_close, and destroy then
 * removed that handler by its address (ASan: use after free), so a handler
 * registered since at the same address could be removed instead. Found by the OLTP
 * demo in bench/ (killing its back-end). Here a second bound is attached after the
 * first one's handle_close ran, and must still get its reply after the first one's
 * destroy. */
static struct lf_reactor_stats rst(lf_reactor *x)
{
    struct lf_reactor_stats st;
    CHECK_EQ(lf_reactor_stats(x, &st), 0);
    return st;
}

static void destroy_after_failure(void)
{
    unsigned long long closed_before;
    int e[2], f[2];
    lf_bound other;
    lf_bound_ctx c;
    unsigned char buf[8], frame[HDR + 8];
    uint64_t got;
    struct timespec dl;

    CHECK_EQ(lf_reactor_init(&r), 0);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, e) == 0);
    bound_up(e[0], 1);
    close(e[1]); /* the peer hangs up: the handler reads EOF and removes itself */
    closed_before = rst(&r).closed;
    for (int i = 0; i < 5000 && rst(&r).closed == closed_before; i++) {
        CHECK_EQ(lf_deadline_in(&dl, 1000000LL), 0);
        (void)lf_reactor_handle_events(&r, &dl); /* its handle_close runs in a turn */
    }
    CHECK(rst(&r).closed > closed_before);

    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, f) == 0);
    bound_up_as(&other, f[0], 1);
    CHECK_EQ(lf_bound_destroy(&b), 0);

    CHECK_EQ(lf_bound_ctx_init(&c, buf, sizeof buf, 0), 0);
    CHECK_EQ(lf_bound_expect(&other, &c, 7), 0);
    put_frame(frame, 7, 0x1234);
    lft_write_all(f[1], frame, sizeof frame);
    CHECK_EQ(lf_deadline_in(&dl, 10 * 1000000000LL), 0);
    CHECK_EQ(lf_bound_join(&other, &c, &dl), 0); /* other's handler still works */
    memcpy(&got, buf, 8);
    CHECK_EQ(got, 0x1234);
    lf_bound_ctx_destroy(&c);
    CHECK_EQ(lf_bound_destroy(&other), 0);
    CHECK_EQ(lf_reactor_destroy(&r), 0);
    close(e[0]); /* ours, in both modes */
    close(f[0]);
    close(f[1]);
}

/* The bound's fd after a failure, and both teardown orders. */
static void fd_stays_ours(int reactor_first)
{
    int e[2];
    struct stat was, now;
    struct timespec dl;
    unsigned char frame[HDR + 8];
    unsigned long long closed_before;

    CHECK_EQ(lf_reactor_init(&r), 0);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, e) == 0);
    CHECK(fstat(e[0], &was) == 0);
    bound_up(e[0], 1);
    closed_before = rst(&r).closed;
    close(e[1]); /* the connection fails: EOF */
    for (int i = 0; i < 5000 && rst(&r).closed == closed_before; i++) {
        CHECK_EQ(lf_deadline_in(&dl, 1000000LL), 0);
        (void)lf_reactor_handle_events(&r, &dl);
    }
    CHECK(rst(&r).closed > closed_before); /* the reactor is done with the handler */
    /* the fd is still the one we gave: nothing closed it, so no other file can have
     * its number, and a send goes nowhere but here (and is refused: it failed) */
    CHECK(fcntl(e[0], F_GETFD) != -1);
    CHECK(fstat(e[0], &now) == 0 && now.st_ino == was.st_ino && now.st_dev == was.st_dev);
    put_frame(frame, 1, 1);
    CHECK_EQ(lf_bound_send(&b, frame, sizeof frame), ECONNRESET);
    if (reactor_first) {
        CHECK_EQ(lf_reactor_destroy(&r), 0);
        CHECK_EQ(lf_bound_destroy(&b), 0);
    } else {
        CHECK_EQ(lf_bound_destroy(&b), 0);
        CHECK_EQ(lf_reactor_destroy(&r), 0);
    }
    CHECK(fstat(e[0], &now) == 0 && now.st_ino == was.st_ino); /* still ours */
    close(e[0]);

    /* a live connection too: destroy the reactor first, then the bound */
    CHECK_EQ(lf_reactor_init(&r), 0);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, e) == 0);
    bound_up(e[0], 1);
    if (reactor_first) {
        CHECK_EQ(lf_reactor_destroy(&r), 0); /* closes the bound's handler, not its fd */
        CHECK_EQ(lf_bound_destroy(&b), 0);
    } else {
        CHECK_EQ(lf_bound_destroy(&b), 0); /* removes its handler */
        CHECK_EQ(lf_reactor_destroy(&r), 0);
    }
    CHECK(fcntl(e[0], F_GETFD) != -1);
    close(e[0]);
    close(e[1]);
}

int main(void)
{
    lft_start("t_reactor_hybrid", 30);
    { /* attach to a reactor that is not initialised: EINVAL, nothing dereferenced */
        static lf_reactor zr;
        int e[2];
        CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, e) == 0);
        bound_up(e[0], 0);
        memset((void *)&zr, 0, sizeof zr);
        CHECK_EQ(lf_bound_attach(&b, &zr), EINVAL);
        memset((void *)&zr, 0xA5, sizeof zr);
        CHECK_EQ(lf_bound_attach(&b, &zr), EINVAL);
        CHECK_EQ(lf_bound_destroy(&b), 0);
        close(e[0]);
        close(e[1]);
    }
    bare_would_deadlock();
    no_deadlock();
    nested_upcall();
    ends(ECANCELED, 1);
    ends(ECONNRESET, 0);
    destroy_after_failure();
    fd_stays_ours(0);
    fd_stays_ours(1);
    /* Again and again: a failure's wake-up (or the stop) could come just as the
     * leader drained an older wake-up from its harvested batch, which it took for
     * the new one and then slept on. Before lf__wait looked at its flags again after
     * such a drain, this loop hung in 3 of 6 runs under TSan (epoll). */
    for (int i = 60; i > 0; i--) { /* not scaled: the sanitizers widen the window */
        ends(i % 2 ? ECONNRESET : ECANCELED, 0);
        lft_progress();
    }
    return 0;
}
