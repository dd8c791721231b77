/* lf_reactor_remove: what the caller may rely on once it returns, and when
 * handle_close runs.
 *   A: removal from ANOTHER thread while the handler is blocked inside handle_event:
 *      remove returns at once (the handler is still inside), handle_close waits for
 *      the handler to return and then runs exactly once, and no data written to the
 *      peer after remove returned is ever dispatched to the handler.
 *   B: removal from INSIDE the handler, by returning LF_REMOVE and by calling
 *      lf_reactor_remove(r, self) then returning LF_KEEP: no further dispatch although
 *      unread data is left, handle_close exactly once (and not while the handler is
 *      still inside), a second remove is ENOENT.
 *   C: several threads turn the reactor, many handlers receive data, a separate
 *      thread removes them all (often while they are inside): handle_close never runs
 *      while a thread is inside, each handler is closed exactly once, and none is
 *      dispatched long after its removal returned.
 *   D: removal of an idle handler while the leader is blocked waiting with it in its
 *      set: once handle_close has run, the peer sees EOF at once (the connection
 *      really closes: a poll/select leader must not keep the descriptor alive).
 * Compiled once per promotion policy x backend. */
#include "../lf_reactor.h"
#include "lf_test.h"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>

static lf_reactor R;

static void set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    CHECK(fl != -1);
    CHECK(fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0);
}

/* sv[0] goes to the reactor, sv[1] is the peer the test writes to; both non-blocking
 * so that neither a handler nor a writer can ever block on them. */
static void make_pair(int sv[2])
{
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    set_nonblock(sv[0]);
    set_nonblock(sv[1]);
}

/* Write n bytes to a peer. EAGAIN (buffer full), EPIPE (the reactor already closed
 * the other end) and ECONNRESET (it closed the other end with our earlier bytes still
 * unread: Linux then sets the error on this end) are fine: only readiness matters. */
static void poke(int peer, int n)
{
    char buf[16];
    memset(buf, 'x', sizeof buf);
    ssize_t w = send(peer, buf, (size_t)n, MSG_NOSIGNAL);
    CHECK(w == n || (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EPIPE ||
                               errno == ECONNRESET)));
}

/* ------------------------------------------------------------------ runners */

static void *runner(void *arg)
{
    (void)arg;
    CHECK_EQ(lf_reactor_run(&R, NULL), ECANCELED);
    lft_progress();
    return NULL;
}

static void start(pthread_t *t, int n)
{
    CHECK_EQ(lf_reactor_init(&R), 0);
    for (int i = 0; i < n; i++)
        CHECK(pthread_create(&t[i], NULL, runner, NULL) == 0);
}

static void finish(pthread_t *t, int n)
{
    CHECK_EQ(lf_reactor_stop(&R), 0);
    for (int i = 0; i < n; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
    CHECK_EQ(lf_reactor_destroy(&R), 0);
}

/* ------------------------------------------------------------------ witness
 * A handler that is never removed. A round trip through it proves the reactor has
 * turned (and harvested whatever was ready) since the test's previous writes, so
 * "not dispatched" below means "the reactor looked and did not dispatch", not
 * "the reactor had not got round to it yet". */

typedef struct witness {
    lf_handler h;
    int peer;
    LFT_ATOMIC(int) dispatches;
} witness;

static int witness_event(lf_handler *h, int fd, uint32_t events)
{
    witness *w = (witness *)h;
    char buf[64];
    (void)events;
    while (read(fd, buf, sizeof buf) > 0) {
    }
    lft_add(&w->dispatches, 1);
    lft_progress();
    return LF_KEEP;
}

static void witness_open(witness *w)
{
    int sv[2];
    memset((void *)w, 0, sizeof *w);
    make_pair(sv);
    w->peer = sv[1];
    w->h.handle_event = witness_event;
    w->h.handle_close = NULL;
    CHECK_EQ(lf_reactor_register(&R, &w->h, sv[0], LF_EV_READ), 0);
}

/* Every write the test made before this call has been seen by a leader by the time
 * it returns; the pause lets a (wrong) dispatch harvested in the same wait run. */
static void witness_roundtrip(witness *w)
{
    int ok, before = lft_load(&w->dispatches);
    poke(w->peer, 1);
    WAIT_FOR(ok, lft_load(&w->dispatches) > before, 5000);
    CHECK(ok);
    lft_sleep_ms(20);
}

/* ------------------------------------------------------------------ the probe */

enum { BLOCK, RETURN_REMOVE, SELF_REMOVE };

typedef struct probe {
    lf_handler h;
    int mode;
    int fd; /* the registered fd, kept to check that the reactor closes it */
    LFT_ATOMIC(int) inside;     /* threads inside handle_event now */
    LFT_ATOMIC(int) dispatches; /* handle_event calls */
    LFT_ATOMIC(int) closes;     /* handle_close calls */
    LFT_ATOMIC(int) release;    /* BLOCK: the test lets the handler return */
    LFT_ATOMIC(int) rc1, rc2;   /* SELF_REMOVE: the two remove calls */
    LFT_ATOMIC(int) closed_while_inside; /* SELF_REMOVE: handle_close seen inside */
} probe;

static int probe_event(lf_handler *h, int fd, uint32_t events)
{
    probe *p = (probe *)h;
    char c;
    int ok, rc = LF_KEEP;

    CHECK_EQ(lft_add(&p->inside, 1) + 1, 1);
    lft_add(&p->dispatches, 1);
    CHECK(events & LF_EV_READ);
    CHECK_EQ(fd, p->fd);
    /* read ONE byte: the test always leaves more, so the handle stays readable and
     * any re-arm after the removal would show up as a second dispatch */
    CHECK_EQ(read(fd, &c, 1), 1);
    switch (p->mode) {
    case BLOCK:
        WAIT_FOR(ok, lft_load(&p->release), 10000);
        CHECK(ok);
        break;
    case RETURN_REMOVE:
        rc = LF_REMOVE;
        break;
    case SELF_REMOVE:
        lft_store(&p->rc1, lf_reactor_remove(&R, h));
        lft_store(&p->rc2, lf_reactor_remove(&R, h));
        /* longer than a grace period: a handle_close that did not wait for us would
         * have run by now */
        lft_sleep_ms(50);
        lft_store(&p->closed_while_inside, lft_load(&p->closes));
        break;
    }
    lft_add(&p->inside, -1);
    lft_progress();
    return rc;
}

static void probe_close(lf_handler *h)
{
    probe *p = (probe *)h;
    CHECK_EQ(lft_load(&p->inside), 0); /* after the last thread left */
    lft_add(&p->closes, 1);
    lft_progress();
}

static void probe_open(probe *p, int mode, int *peer)
{
    int sv[2];
    memset((void *)p, 0, sizeof *p);
    make_pair(sv);
    p->mode = mode;
    p->fd = sv[0];
    *peer = sv[1];
    p->h.handle_event = probe_event;
    p->h.handle_close = probe_close;
    CHECK_EQ(lf_reactor_register(&R, &p->h, sv[0], LF_EV_READ), 0);
}

/* The reactor closes a removed handler's fd right after handle_close. Nothing else
 * in this test opens descriptors meanwhile, so the number stays free once closed. */
static void wait_fd_closed(int fd)
{
    int ok;
    WAIT_FOR(ok, fcntl(fd, F_GETFD) == -1 && errno == EBADF, 5000);
    CHECK(ok);
}

/* ------------------------------------------------------------------ A */

static void part_a(void)
{
    pthread_t t[2];
    probe p;
    witness w;
    int peer, ok;
    struct lf_reactor_stats st;

    start(t, 2);
    witness_open(&w);
    probe_open(&p, BLOCK, &peer);
    poke(peer, 1);
    WAIT_FOR(ok, lft_load(&p.inside) == 1, 5000);
    CHECK(ok);

    double t0 = lft_now();
    CHECK_EQ(lf_reactor_remove(&R, &p.h), 0);
    double took = lft_now() - t0;
    /* it returned without waiting for the handler, which cannot leave before we
     * release it */
    CHECK(took < 1.0);
    CHECK_EQ(lft_load(&p.inside), 1);
    CHECK_EQ(lf_reactor_remove(&R, &p.h), ENOENT); /* already removed */

    /* data written after the removal, while the handler is still inside */
    poke(peer, 4);
    witness_roundtrip(&w);
    lft_sleep_ms(30); /* grace periods take ~10-20 ms: handle_close must still wait */
    CHECK_EQ(lft_load(&p.closes), 0);
    CHECK_EQ(lft_load(&p.dispatches), 1);

    lft_store(&p.release, 1);
    WAIT_FOR(ok, lft_load(&p.closes) == 1, 5000);
    CHECK(ok);
    wait_fd_closed(p.fd);
    CHECK_EQ(lft_load(&p.inside), 0);

    /* the handler has returned LF_KEEP with unread data left: still no dispatch */
    poke(peer, 4);
    witness_roundtrip(&w);
    witness_roundtrip(&w);
    CHECK_EQ(lft_load(&p.dispatches), 1);
    CHECK_EQ(lft_load(&p.closes), 1);
    CHECK_EQ(lf_reactor_remove(&R, &p.h), ENOENT);
    CHECK_EQ(lf_reactor_stats(&R, &st), 0);
    CHECK_EQ(st.registered, 2);
    CHECK_EQ(st.removed, 1);

    finish(t, 2);
    CHECK_EQ(lft_load(&p.closes), 1); /* destroy does not close it again */
    close(peer);
    close(w.peer);
}

/* ------------------------------------------------------------------ B */

static void part_b(int mode)
{
    pthread_t t[2];
    probe p;
    witness w;
    int peer, ok;
    struct lf_reactor_stats st;

    start(t, 2);
    witness_open(&w);
    probe_open(&p, mode, &peer);
    poke(peer, 3); /* the handler reads one: two stay unread */
    WAIT_FOR(ok, lft_load(&p.closes) == 1, 5000);
    CHECK(ok);
    wait_fd_closed(p.fd);
    CHECK_EQ(lft_load(&p.dispatches), 1);
    if (mode == SELF_REMOVE) {
        CHECK_EQ(lft_load(&p.rc1), 0);
        CHECK_EQ(lft_load(&p.rc2), ENOENT);
        CHECK_EQ(lft_load(&p.closed_while_inside), 0);
    }
    CHECK_EQ(lf_reactor_remove(&R, &p.h), ENOENT);

    poke(peer, 4);
    witness_roundtrip(&w);
    witness_roundtrip(&w);
    CHECK_EQ(lft_load(&p.dispatches), 1);
    CHECK_EQ(lft_load(&p.closes), 1);
    CHECK_EQ(lf_reactor_stats(&R, &st), 0);
    CHECK_EQ(st.removed, 1);

    finish(t, 2);
    CHECK_EQ(lft_load(&p.closes), 1);
    close(peer);
    close(w.peer);
}

/* ------------------------------------------------------------------ C */

#define NH 64
#define C_RUNNERS 4
/* A dispatch that begins this long after remove returned is certainly a new one (a
 * dispatch that had already passed its checks when remove was called may still be
 * entering the handler for a few instructions, which no test can tell apart). */
#define LATE_NS 200000000LL

typedef struct counted {
    lf_handler h;
    int peer;
    LFT_ATOMIC(int) inside;
    LFT_ATOMIC(int) dispatches;
    LFT_ATOMIC(int) closes;
    LFT_ATOMIC(int) removing;        /* remove was called */
    LFT_ATOMIC(long long) removed_at; /* when remove returned (ns), 0: not yet */
    LFT_ATOMIC(int) late;             /* dispatches begun LATE_NS after that */
} counted;

static counted cs[NH];

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static LFT_ATOMIC(int) c_stop, caught_inside;

static int counted_event(lf_handler *h, int fd, uint32_t events)
{
    counted *c = (counted *)h;
    char buf[256];
    long long gone;
    int n;

    (void)events;
    CHECK_EQ(lft_add(&c->inside, 1) + 1, 1); /* one thread per handler */
    gone = lft_load(&c->removed_at);
    if (gone != 0 && now_ns() - gone > LATE_NS)
        lft_add(&c->late, 1);
    n = lft_add(&c->dispatches, 1) + 1;
    while (read(fd, buf, sizeof buf) > 0) {
    }
    if (n % 3 == 0)
        lft_sleep_ms(1); /* linger, so that removals often find a thread inside */
    lft_add(&c->inside, -1);
    lft_progress();
    return LF_KEEP;
}

static void counted_close(lf_handler *h)
{
    counted *c = (counted *)h;
    CHECK_EQ(lft_load(&c->inside), 0); /* the last thread has left */
    CHECK(lft_load(&c->removing));     /* and it was removed, not closed by accident */
    lft_add(&c->closes, 1);
    lft_progress();
}

static void *c_writer(void *arg)
{
    unsigned long long seed = 0x9e3779b97f4a7c15ULL;
    (void)arg;
    for (long k = 0; !lft_load(&c_stop); k++) {
        poke(cs[lft_rand(&seed) % NH].peer, 1);
        if (k % 32 == 0)
            lft_sleep_ms(1);
    }
    return NULL;
}

static void *c_remover(void *arg)
{
    unsigned long long seed = 12345;
    int order[NH], ok;
    (void)arg;
    for (int i = 0; i < NH; i++)
        order[i] = i;
    for (int i = NH - 1; i > 0; i--) {
        int j = (int)(lft_rand(&seed) % (unsigned long long)(i + 1)), x = order[i];
        order[i] = order[j];
        order[j] = x;
    }
    lft_sleep_ms(20); /* let data flow first */
    for (int i = 0; i < NH; i++) {
        counted *c = &cs[order[i]];
        if (i % 2 == 0) {
            /* try to catch it inside handle_event: the interesting case */
            WAIT_FOR(ok, lft_load(&c->inside) == 1, 300);
            (void)ok;
        }
        lft_store(&c->removing, 1);
        int in = lft_load(&c->inside);
        CHECK_EQ(lf_reactor_remove(&R, &c->h), 0);
        lft_store(&c->removed_at, now_ns());
        if (in)
            lft_add(&caught_inside, 1);
        CHECK_EQ(lf_reactor_remove(&R, &c->h), ENOENT);
        lft_sleep_ms((long)(lft_rand(&seed) % 3));
    }
    return NULL;
}

static int all_closed(void)
{
    for (int i = 0; i < NH; i++)
        if (lft_load(&cs[i].closes) == 0)
            return 0;
    return 1;
}

static int c_dispatches;

static void part_c(void)
{
    pthread_t t[C_RUNNERS], wr, rm;
    int ok, disp = 0;
    struct lf_reactor_stats st;

    start(t, C_RUNNERS);
    for (int i = 0; i < NH; i++) {
        int sv[2];
        counted *c = &cs[i];
        memset((void *)c, 0, sizeof *c);
        make_pair(sv);
        c->peer = sv[1];
        c->h.handle_event = counted_event;
        c->h.handle_close = counted_close;
        CHECK_EQ(lf_reactor_register(&R, &c->h, sv[0], LF_EV_READ), 0);
    }
    CHECK(pthread_create(&wr, NULL, c_writer, NULL) == 0);
    CHECK(pthread_create(&rm, NULL, c_remover, NULL) == 0);
    CHECK(pthread_join(rm, NULL) == 0);

    /* every handler closed, and exactly once, while the writer keeps going */
    WAIT_FOR(ok, all_closed(), 10000);
    CHECK(ok);
    lft_sleep_ms(50);
    lft_store(&c_stop, 1);
    CHECK(pthread_join(wr, NULL) == 0);
    for (int i = 0; i < NH; i++) {
        CHECK_EQ(lft_load(&cs[i].closes), 1);
        CHECK_EQ(lft_load(&cs[i].inside), 0);
        CHECK_EQ(lft_load(&cs[i].late), 0);
        disp += lft_load(&cs[i].dispatches);
    }
    CHECK_EQ(lf_reactor_stats(&R, &st), 0);
    CHECK_EQ(st.registered, NH);
    CHECK_EQ(st.removed, NH);
    CHECK(disp > NH);                     /* data did flow */
    CHECK(lft_load(&caught_inside) > 0); /* and removals did meet busy handlers */

    finish(t, C_RUNNERS);
    for (int i = 0; i < NH; i++) {
        CHECK_EQ(lft_load(&cs[i].closes), 1);
        close(cs[i].peer);
    }
    c_dispatches = disp;
}

/* ------------------------------------------------------------------ D */

static void part_d(void)
{
    pthread_t t[2];
    probe p;
    int peer, ok;
    char c;
    struct pollfd pfd;

    start(t, 2);
    probe_open(&p, BLOCK, &peer);
    lft_sleep_ms(20); /* the leader is blocked in its wait, p in the set */
    CHECK_EQ(lf_reactor_remove(&R, &p.h), 0);
    WAIT_FOR(ok, lft_load(&p.closes) == 1, 5000);
    CHECK(ok);
    wait_fd_closed(p.fd);
    /* the reactor closed its end: unless a blocked wait still holds the descriptor,
     * the peer reads end-of-file now, while the reactor stays idle */
    pfd.fd = peer;
    pfd.events = POLLIN;
    CHECK_EQ(poll(&pfd, 1, 5000), 1);
    CHECK_EQ(read(peer, &c, 1), 0);
    CHECK_EQ(lft_load(&p.dispatches), 0);
    finish(t, 2);
    close(peer);
}

int main(void)
{
    lft_start("t_reactor_remove", 30);
    signal(SIGPIPE, SIG_IGN); /* writes to peers whose other end the reactor closed */
    part_a();
    lft_progress();
    part_b(RETURN_REMOVE);
    lft_progress();
    part_b(SELF_REMOVE);
    lft_progress();
    part_c();
    lft_progress();
    part_d();
    printf("t_reactor_remove %s/%s: remove is prompt and final; handle_close once, after the "
           "last thread left (%d dispatches, %d/%d removals met a busy handler)\n",
           lf_promote_name(), lf_reactor_backend_name(), c_dispatches, lft_load(&caught_inside), NH);
    return 0;
}
