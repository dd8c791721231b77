/* bench/gw_lf.c - the hybrid gateway: many TCP clients in front, a real memcached
 * behind, on lf_reactor.h and bench/memc.h (lf_bound.h attached to the reactor).
 *
 *   gw_lf [-p PORT] [-t THREADS] [-m HOST:PORT] [-d DEADLINE_MS] [-i IDLE_S]
 *         [-w WSTALL_MS] [-f FLAGS]          (bench/gw_proto.h: protocol, options)
 *
 * HOW IT IS WRITTEN, AND WHY THAT IS HOW lf'S USERS WRITE IT
 *   The README's "A complete server" with a blocking backend call in its handler:
 *   - THREADS threads (default 2) run lf_reactor_run on one reactor. Each client
 *     connection is a handler: it reads what is there, and for each whole request calls
 *     memcached with memc_get or memc_set, straight from the handler, as if the call
 *     were local. That is the point of the hybrid mode: the memcached connection
 *     (ONE, memc.h, shared by every thread) is attached to the reactor
 *     (memc_attach), so a thread that waits for its reply goes on serving the
 *     reactor's other handles meanwhile (other clients, the acceptor, timers),
 *     nested on its stack, up to LF_BOUND_NEST_MAX (4) levels; a call made at that
 *     depth waits without serving (lf_bound.h, NESTING). No callbacks, no per-request
 *     state machine: the request's state is the handler's stack frame.
 *   - Output is buffered per connection (the README's server): what the socket does
 *     not take is kept and sent on LF_EV_WRITE (lf_reactor_modify); past GW_BACKLOG
 *     (256 KiB) the handler stops taking requests from that client and drops READ;
 *     if its output does not move for -w ms it is dropped.
 *   - One lf_timer per connection for the idle timeout, one for the stalled writer;
 *     SIGTERM/SIGINT through a signalfd handle; accepting pauses when out of
 *     descriptors. Connections are one-shot handles answering LF_DRAINED after a
 *     short read, the library's default way.
 *   - Each call has its deadline (-d, 500 ms; a nested call also ends by the earliest
 *     deadline below it on the thread's stack, lf_bound.h). ETIMEDOUT -> ERR timeout;
 *     any other failure -> ERR backend.
 *
 * FLAGS (-f, added together)
 *   1  no fail-fast (below)
 *   2  calls never serve the reactor (memc_set_nest_max(&mc, 0), which holds for the
 *      connections a reconnect makes too): each call waits on the memcached
 *      connection alone, as a bare bound's would; for comparison
 *   4  asynchronous calls (the lf.async row; lf_bound.h, ASYNCHRONOUS CALLS): the
 *      handler starts the client's call (memc_get_start / memc_set_start, the
 *      client's own handler told) and returns; the client's next dispatch with
 *      LF_EV_NOTIFY takes the result (memc_finish) and writes the reply. Nothing
 *      waits and nothing nests (max_depth 0), so every busy client has its call in
 *      flight at once, each with its own deadline: a per-client lf_timer, whose
 *      LF_EV_TIMEOUT aborts the call (memc_abort: ERR timeout). The timer is
 *      restarted by each call's start and not cancelled when the call ends (a
 *      restart to a later time costs the reactor no heap work; an expiry with no
 *      call in flight is ignored), as the idle timer is restarted on every read.
 *      No fail-fast is needed (FAIL-FAST below is for blocking calls). A client
 *      takes one request at a time: its input is kept (up to 64 KiB, then READ is
 *      dropped) while its call is in flight. A GET's value lands in a buffer of the client's own (it
 *      must stay put while the call is in flight; 512 bytes, grown for a larger
 *      value, which is fetched again as the blocking GET does).
 *
 * FAIL-FAST (on by default; -f 1 turns it off)
 *   A thread holds at most LF_BOUND_NEST_MAX + 1 calls, so the gateway has at most
 *   THREADS x 5 calls in flight. While memcached answers that is plenty (a call takes
 *   tens of microseconds); while it is stalled (SIGSTOP, a hung server) every call
 *   waits its whole deadline, and the requests behind them wait in their sockets,
 *   unread: a client would see ERR timeout after 2, 3, 4 deadlines, not one. So the
 *   first call that times out marks the backend stalled, and until a probe (a get
 *   from the backend handler, every 10..500 ms) is answered again, requests get
 *   ERR backend at once instead of a call. The libuv and asio gateways need no such
 *   thing: they read every request at once and each waits on a timer of its own.
 *
 * RECONNECT
 *   One memc for the gateway's life; memc.h replaces a dead connection in place. A
 *   call that meets one (ECONNRESET, EPIPE, EPROTO) marks the backend down: requests
 *   get ERR backend at once, and the backend's own handler calls memc_reconnect (the
 *   deadline: -d), again after 10, 20, 40 .. 500 ms until it succeeds. Calls still on
 *   the old connection finish there and memc.h closes it after the last; the new one
 *   is attached to the reactor, with -f 2's limit, before any call takes it. If
 *   memcached is not there at start, the gateway listens anyway and the same handler
 *   makes the first connection (memc_open_until, memc_attach) the same way.
 *   Not memc_auto_reconnect: it would reconnect from the next call, in a client's
 *   handler, so while memcached is away every request would try a connect, with one
 *   reactor thread held in it and the others waiting in their handlers for its
 *   result; the fail-fast wants ERR backend at once and one attempt per backoff step,
 *   on one thread. The probe is a call like any other: a dead connection it meets
 *   starts the reconnect too.
 *
 * SIGTERM / SIGINT
 *   Stop accepting (the listening handle is removed), take no new requests, let the
 *   calls in flight finish (bounded by the deadline, plus 200 ms), then stop the
 *   reactor, and print one line on stdout, then exit 0:
 *     stats requests= errors= timeouts= backend= proto= failfast= reconnects=
 *           clients= idle_closed= stall_dropped= max_depth= deep= nest_max=
 *   reconnects: connections memc_reconnect made (memc_stats; the first is not one).
 *   max_depth: the deepest lf_bound_depth() a handler saw before its call (handlers
 *   run at depth <= nest_max; their call is one deeper); deep: lf_bound_stats' deep,
 *   the calls made at the limit, over every memcached connection the gateway had
 *   (memc_stats has the current one's: each one's count is kept as it is replaced).
 *
 * Build (from the repository root):
 *   cc -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -O2 -I. -Ibench
 *      bench/gw_lf.c -o gw_lf $(pkg-config --cflags --libs liburcu-memb) -pthread
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define LF_BOUND_REACTOR 1
/* the epoll harvest: libuv's loop takes up to 1024 events per epoll_wait; with
 * thousands of busy clients a harvest of 64 (the default) costs lf a wait per 64 */
#ifndef LF_REACTOR_BATCH
#define LF_REACTOR_BATCH 1024
#endif
#include "lf_reactor.h"
#include "memc.h"
#include "gw_proto.h"

#include <signal.h>
#include <stdatomic.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>

#define RELAXED memory_order_relaxed
#define PROBE_KEY "gw:probe"

static lf_reactor reactor;
static struct gw_args args;
static lf_handler listener, signals;
static lf_timer accept_pause, stop_tick;
static long long stop_at_ms;
static atomic_int draining; /* SIGTERM came: take no new requests */
static atomic_int busy;     /* connection dispatches running now */
static atomic_int calls;    /* -f 4: calls started and not finished */
/* -f 4: input kept while a call is in flight, before READ is dropped: a closed-loop
 * client sends nothing meanwhile, so READ stays on (no epoll_ctl per request) */
#define GW_ASYNC_INBUF (64u * 1024u)

static struct {
    _Atomic unsigned long long requests, timeouts, backend, proto, failfast, clients,
        idle_closed, stall_dropped;
    atomic_int max_depth;
} st;

static void count(_Atomic unsigned long long *c)
{
    atomic_fetch_add_explicit(c, 1, RELAXED);
}

/* ------------------------------------------------------------------ >>backend */

static memc mc; /* the one memcached client: every thread calls through it */

static struct {
    lf_handler h;            /* an eventfd with no interest: notifications, its timer */
    lf_timer tick;
    long long backoff_ms;    /* the next wait before a reconnect or probe */
    int opened;              /* mc is open (set by main alone, or by on_backend) */
    atomic_int down;         /* not open yet, or a call met a dead connection:
                              * requests get ERR backend, on_backend reconnects */
    atomic_int stalled;      /* fail-fast: a call timed out, no probe answered since */
    unsigned long long deep; /* stats.deep of the connections a reconnect replaced */
} be;

/* The first connection: opened, attached to the reactor (memc_attach: so will every
 * connection memc_reconnect makes be), with -f 2's nesting limit. In main before the
 * threads start, or in on_backend while be.down keeps every other thread off mc. */
static int backend_open(void)
{
    struct timespec dl;
    int rc;
    lf_deadline_in(&dl, args.deadline_ms * 1000000LL);
    if ((rc = memc_open_until(&mc, args.mc_host, args.mc_port, &dl)) != 0)
        return rc;
    if ((rc = memc_attach(&mc, &reactor)) != 0 ||
        ((args.flags & 2) && (rc = memc_set_nest_max(&mc, 0)) != 0)) {
        (void)memc_close(&mc);
        return rc;
    }
    be.opened = 1;
    return 0;
}

/* THE RECONNECT (see RECONNECT above): one call. The old connection stays with the
 * calls still on it and goes with the last of them; its deep count is kept first. */
static int backend_reconnect(void)
{
    struct memc_stats before, after;
    struct timespec dl;
    int rc;
    if (!be.opened)
        return backend_open();
    lf_deadline_in(&dl, args.deadline_ms * 1000000LL);
    (void)memc_stats(&mc, &before);
    if ((rc = memc_reconnect(&mc, &dl)) == 0 && memc_stats(&mc, &after) == 0 &&
        after.reconnects > before.reconnects)
        be.deep += before.bound.deep; /* (0 with nothing replaced: it was alive) */
    return rc;
}

/* A call ended with rc: a dead connection (memc.h: ECONNRESET, EPIPE, the stream's
 * EPROTO) sends requests to ERR backend and the backend handler to reconnect. The
 * first to see it notifies; the others find be.down set. */
static void backend_check(int rc)
{
    if ((rc == ECONNRESET || rc == EPIPE || rc == EPROTO) && !atomic_exchange(&be.down, 1))
        (void)lf_reactor_notify(&reactor, &be.h, LF_EV_NOTIFY);
}

static long long backoff_next(void)
{
    long long ms = be.backoff_ms;
    be.backoff_ms = ms * 2 > GW_BACKOFF_MAX_MS ? GW_BACKOFF_MAX_MS : ms * 2;
    return ms;
}

/* The backend's own handler (one thread at a time, like any handler): reconnects,
 * probes a stalled memcached; re-arms its timer until it succeeds. */
static int on_backend(lf_handler *h, int fd, uint32_t events)
{
    long long next_ms = -1;
    (void)fd;
    if (events & LF_EV_TIMEOUT)
        (void)lf_timer_fired(&be.tick);
    if (atomic_load(&draining))
        return LF_KEEP;
    if (atomic_load(&be.down)) {
        if (backend_reconnect() == 0) {
            be.backoff_ms = GW_BACKOFF_MIN_MS;
            atomic_store(&be.stalled, 0);
            /* after the open: a request that reads 0 finds mc ready (seq_cst, as the
             * loads; a connection dead again already is met by the next call) */
            atomic_store(&be.down, 0);
        } else {
            next_ms = backoff_next();
        }
    } else if (atomic_load(&be.stalled)) {
        /* the probe: any answer (the key is never set: ENOENT) says memcached serves */
        struct timespec dl;
        char v[8];
        size_t len;
        lf_deadline_in(&dl, args.deadline_ms * 1000000LL);
        int rc = memc_get(&mc, PROBE_KEY, v, sizeof v, &len, NULL, &dl);
        if (rc == 0 || rc == ENOENT || rc == EMSGSIZE) {
            atomic_store(&be.stalled, 0);
            be.backoff_ms = GW_BACKOFF_MIN_MS;
        } else {
            backend_check(rc);
            next_ms = backoff_next();
        }
    }
    if (next_ms >= 0)
        (void)lf_reactor_timer_start(&reactor, &be.tick, h, next_ms * 1000000LL, 0);
    return LF_KEEP;
}

/* ------------------------------------------------------------------ >>clients */

struct conn {
    lf_handler h;   /* first: the reactor hands us &c->h */
    lf_timer idle;  /* the client sent nothing for args.idle_ms */
    lf_timer stall; /* output waiting and none of it went out for args.wstall_ms */
    struct gw_buf in, out;
    size_t need;    /* bytes the request at in.off takes, when known (0: unknown) */
    uint32_t want;  /* the interest we asked for last */
    int started;    /* the idle timer runs */
    int eof;        /* the client sent all it will send */
    int drained;    /* the last read found the socket empty */
    int doomed;     /* ERR proto is queued: close once it is out */
    int stall_armed;
    /* -f 4 (ASYNCHRONOUS CALLS): the client's one call in flight */
    memc_op op;
    lf_timer dl;          /* its deadline */
    int inflight;         /* started, not finished: take no other request meanwhile */
    int is_get, tries;    /* a GET (else a SET); its round trips so far */
    unsigned char *vbuf;  /* where a GET's value lands (stable while in flight) */
    size_t vcap;
    char key[GW_KEY_MAX + 1];
};

static void put_str(struct conn *c, const char *s)
{
    (void)gw_buf_put(&c->out, s, strlen(s)); /* out of memory: the reply is lost */
}

/* Write what the socket takes: 0 all out, 1 some left, -1 the connection failed.
 * *moved: some bytes went. */
static int flush_out(struct conn *c, int *moved)
{
    while (c->out.off < c->out.len) {
        ssize_t n = send(c->h.fd, c->out.p + c->out.off, c->out.len - c->out.off, MSG_NOSIGNAL);
        if (n < 0)
            return errno == EAGAIN ? 1 : errno == EINTR ? 0 : -1;
        c->out.off += (size_t)n;
        *moved = 1;
    }
    gw_buf_consume(&c->out, 0);
    return 0;
}

static void note_depth(void)
{
    int d = lf_bound_depth(), m = atomic_load_explicit(&st.max_depth, RELAXED);
    while (d > m && !atomic_compare_exchange_weak_explicit(&st.max_depth, &m, d, RELAXED, RELAXED))
        ;
}

/* Append "VALUE <len>\r\n<value>\r\n" to the output. */
static int put_value(struct conn *c, const unsigned char *v, size_t len)
{
    char head[GW_VALUE_HEAD_MAX];
    size_t hl = gw_value_head(head, len);
    if (gw_buf_reserve(&c->out, hl + len + 2) != 0)
        return ENOMEM;
    memcpy(c->out.p + c->out.len, head, hl);
    memmove(c->out.p + c->out.len + hl, v, len); /* v may lie in the output's free room */
    memcpy(c->out.p + c->out.len + hl + len, "\r\n", 2);
    c->out.len += hl + len + 2;
    return 0;
}

/* A GET: into a buffer on the stack (the handler's frame; a thread holds at most
 * LF_BOUND_NEST_MAX + 1 of them), copied to the output. A value too large for it is
 * fetched again straight into the output, made large enough (memc_get says how
 * large): a second round trip for values over 8 KiB, and an output buffer that grows
 * only as large as the values it holds, which is what 10,000 connections' memory
 * comes to. */
static int do_get(struct conn *c, const char *key, const struct timespec *dl)
{
    unsigned char small[8192];
    size_t len = 0;
    int rc = memc_get(&mc, key, small, sizeof small, &len, NULL, dl);
    if (rc == 0)
        return put_value(c, small, len);
    for (int tries = 0; rc == EMSGSIZE && len <= GW_VALUE_MAX && tries < 3; tries++) {
        size_t want = len;
        if (gw_buf_reserve(&c->out, GW_VALUE_HEAD_MAX + want + 2) != 0)
            return ENOMEM;
        unsigned char *v = c->out.p + c->out.len + GW_VALUE_HEAD_MAX;
        rc = memc_get(&mc, key, v, want, &len, NULL, dl);
        if (rc == 0)
            return put_value(c, v, len);
    }
    return rc;
}

/* The request's key as a C string (GW_KEY_MAX + 1 bytes). */
static void key_of(char *key, const struct gw_req *r)
{
    memcpy(key, r->key, r->klen);
    key[r->klen] = '\0';
}

/* ERR backend now, without a call, if memcached is away (on_backend reconnects) or
 * stalled (FAIL-FAST; only blocking calls set it): 1, answered. */
static int refused(struct conn *c)
{
    if (!(args.flags & 1) && atomic_load_explicit(&be.stalled, RELAXED)) {
        count(&st.failfast);
    } else if (!atomic_load(&be.down)) {
        return 0;
    }
    count(&st.backend);
    put_str(c, GW_ERR_BACKEND);
    return 1;
}

/* A call failed with rc (not 0, not ENOENT): its ERR line; a dead connection is
 * noticed (backend_check). */
static void put_failure(struct conn *c, int rc)
{
    backend_check(rc);
    if (rc == ETIMEDOUT) {
        count(&st.timeouts);
        put_str(c, GW_ERR_TIMEOUT);
    } else {
        count(&st.backend);
        put_str(c, GW_ERR_BACKEND);
    }
}

static void serve_one(struct conn *c, const struct gw_req *r)
{
    char key[GW_KEY_MAX + 1];
    struct timespec dl;
    int rc;

    count(&st.requests);
    key_of(key, r);
    note_depth();
    if (refused(c))
        return;
    lf_deadline_in(&dl, args.deadline_ms * 1000000LL);
    if (r->op == GW_SET) {
        rc = memc_set(&mc, key, r->val, r->vlen, 0, 0, &dl);
        if (rc == 0)
            put_str(c, GW_STORED);
    } else {
        rc = do_get(c, key, &dl);
        if (rc == ENOENT)
            put_str(c, GW_MISS);
    }
    if (rc != 0 && rc != ENOENT)
        put_failure(c, rc);
    if (rc == ETIMEDOUT && !atomic_exchange(&be.stalled, 1) && !(args.flags & 1))
        (void)lf_reactor_notify(&reactor, &be.h, LF_EV_NOTIFY); /* start probing */
}

/* -f 4: start c's GET of c->key into c->vbuf (made large enough for want bytes). */
static int start_get(struct conn *c, size_t want, const struct timespec *dl)
{
    if (want > c->vcap) {
        unsigned char *p = (unsigned char *)realloc(c->vbuf, want);
        if (p == NULL)
            return ENOMEM;
        c->vbuf = p;
        c->vcap = want;
    }
    c->tries++;
    return memc_get_start(&mc, &c->op, c->key, c->vbuf, c->vcap, &c->h, dl);
}

/* -f 4: the call is in flight (rc 0: the deadline's timer armed, c takes no other
 * request until finish_call), or its start failed (rc: answered now). */
static void started(struct conn *c, int rc)
{
    if (rc == 0) {
        c->inflight = 1;
        atomic_fetch_add(&calls, 1);
        lf_reactor_timer_start(&reactor, &c->dl, &c->h, args.deadline_ms * 1000000LL, 0);
        return;
    }
    put_failure(c, rc); /* (ETIMEDOUT: the send's deadline, memcached took nothing) */
}

/* -f 4: one request, started (1: c waits for it now), or answered at once (0). */
static int start_one(struct conn *c, const struct gw_req *r)
{
    struct timespec dl;
    int rc;
    count(&st.requests);
    if (refused(c))
        return 0;
    lf_deadline_in(&dl, args.deadline_ms * 1000000LL); /* the send's: the timer the reply's */
    c->tries = 0;
    c->is_get = r->op == GW_GET;
    key_of(c->key, r); /* (a GET's: kept for a second round trip) */
    if (c->is_get)
        rc = start_get(c, c->vcap ? c->vcap : 512, &dl);
    else
        rc = memc_set_start(&mc, &c->op, c->key, r->val, r->vlen, 0, 0, &c->h, &dl);
    started(c, rc);
    return c->inflight;
}

/* -f 4: c's call has its result (rc, from memc_finish; timed_out: c's timer aborted
 * it); answer it, or start the second round trip of a large value. */
static void finish_call(struct conn *c, int rc, size_t len, int timed_out)
{
    c->inflight = 0;
    atomic_fetch_sub(&calls, 1);
    /* (the deadline's timer stays armed: the next call's start pushes it later, which
     * costs no heap work; one that fires with no call in flight is ignored) */
    if (c->is_get && rc == EMSGSIZE && len <= GW_VALUE_MAX && c->tries < 3) {
        struct timespec dl;
        lf_deadline_in(&dl, args.deadline_ms * 1000000LL);
        started(c, start_get(c, len, &dl));
        return;
    }
    if (rc == 0)
        rc = c->is_get ? put_value(c, c->vbuf, len) : (put_str(c, GW_STORED), 0);
    else if (rc == ENOENT && c->is_get)
        put_str(c, GW_MISS);
    if (timed_out && rc == ECANCELED)
        rc = ETIMEDOUT; /* our own timer ended it */
    if (rc != 0 && rc != ENOENT)
        put_failure(c, rc);
}

/* -f 4: a notification or the call's timer: its result, if it is in. */
static void look_call(struct conn *c, uint32_t events)
{
    int timed_out = 0, rc;
    size_t len = 0;
    if (!c->inflight)
        return;
    if ((events & LF_EV_TIMEOUT) && lf_timer_fired(&c->dl)) {
        timed_out = memc_abort(&mc, &c->op) == 0; /* ENOENT: the result won */
    } else if (!(events & LF_EV_NOTIFY)) {
        return;
    }
    if ((rc = memc_finish(&mc, &c->op, &len, NULL)) != EINPROGRESS)
        finish_call(c, rc, len, timed_out);
}

/* Serve the whole requests in c->in. 1: none left whole; 0: stopped with some left
 * (the backlog is full, SIGTERM, or -f 4's call in flight). */
static int serve(struct conn *c)
{
    while (!c->doomed) {
        struct gw_req r;
        int moved = 0;
        if (c->inflight || c->out.len - c->out.off >= GW_BACKLOG ||
            atomic_load_explicit(&draining, RELAXED))
            return 0;
        int k = gw_parse(c->in.p + c->in.off, c->in.len - c->in.off, &r, &c->need);
        if (k == 0)
            return 1;
        if (k < 0) {
            count(&st.proto);
            count(&st.requests);
            put_str(c, GW_ERR_PROTO);
            c->doomed = 1;
            return 1;
        }
        /* a pipelining client gets the replies it has before we wait for the next */
        if (c->out.len > c->out.off)
            (void)flush_out(c, &moved);
        if (args.flags & 4) /* (the request is out when started: its bytes may go) */
            (void)start_one(c, &r);
        else
            serve_one(c, &r);
        gw_buf_consume(&c->in, r.size);
        c->need = 0;
    }
    return 1;
}

static int on_conn_event(struct conn *c, int fd, uint32_t events)
{
    lf_handler *h = &c->h;
    int moved = 0, left, all;

    if (events & LF_EV_CLOSE)
        return LF_REMOVE; /* hung up or failed: nothing more goes either way */
    if (events & LF_EV_TIMEOUT) {
        if (lf_timer_fired(&c->idle)) {
            count(&st.idle_closed);
            return LF_REMOVE;
        }
        if (lf_timer_fired(&c->stall) && c->out.len > c->out.off) {
            count(&st.stall_dropped);
            return LF_REMOVE;
        }
    }
    look_call(c, events);
    if (!c->started) { /* the first dispatch (WRITE, see on_accept): the idle clock */
        c->started = 1;
        lf_reactor_timer_start(&reactor, &c->idle, h, args.idle_ms * 1000000LL, 0);
    }
    if (events & LF_EV_READ) {
        size_t have = c->in.len - c->in.off, want = 1024;
        if (c->need > have && c->need - have > want)
            want = c->need - have; /* the rest of a large SET in one go */
        if (gw_buf_reserve(&c->in, want) != 0)
            return LF_REMOVE;
        size_t room = c->in.cap - c->in.len;
        ssize_t n = read(fd, c->in.p + c->in.len, room);
        if (n < 0 && errno != EAGAIN && errno != EINTR)
            return LF_REMOVE;
        c->drained = n >= 0 && n < (ssize_t)room; /* a short read: the socket is empty */
        if (n < 0 && errno == EAGAIN)
            c->drained = 1;
        if (n == 0)
            c->eof = 1;
        if (n > 0) {
            c->in.len += (size_t)n;
            lf_reactor_timer_start(&reactor, &c->idle, h, args.idle_ms * 1000000LL, 0);
        }
    }
    all = serve(c);
    if ((left = flush_out(c, &moved)) < 0)
        return LF_REMOVE;
    if (left && (moved || !c->stall_armed)) {
        lf_reactor_timer_start(&reactor, &c->stall, h, args.wstall_ms * 1000000LL, 0);
        c->stall_armed = 1;
    } else if (!left && c->stall_armed) {
        lf_reactor_timer_cancel(&reactor, &c->stall);
        c->stall_armed = 0;
    }
    if (!left && (c->doomed || (c->eof && all)))
        return LF_REMOVE; /* ERR proto is out, or the client is done and has it all */
    /* READ while the backlog has room (and the client may send more); WRITE while
     * something is left: a client that does not read can neither make us keep more
     * than the backlog nor hold a thread */
    uint32_t want = (c->out.len - c->out.off < GW_BACKLOG && !c->eof && !c->doomed &&
                             (!c->inflight || c->in.len - c->in.off < GW_ASYNC_INBUF) &&
                             !atomic_load_explicit(&draining, RELAXED)
                         ? LF_EV_READ
                         : 0u) |
                    (left ? LF_EV_WRITE : 0u);
    if (want != c->want && lf_reactor_modify(&reactor, h, want) == 0)
        c->want = want;
    return c->drained ? LF_DRAINED : LF_KEEP;
}

static int on_conn(lf_handler *h, int fd, uint32_t events)
{
    atomic_fetch_add(&busy, 1);
    int rc = on_conn_event((struct conn *)h, fd, events);
    atomic_fetch_sub(&busy, 1);
    return rc;
}

static void on_conn_close(lf_handler *h) /* after the last dispatch; the fd is closed after */
{
    struct conn *c = (struct conn *)h;
    if (c->inflight) { /* -f 4: the call goes first (after the cancel nobody touches c) */
        size_t len;
        (void)memc_abort(&mc, &c->op);
        (void)memc_finish(&mc, &c->op, &len, NULL);
        atomic_fetch_sub(&calls, 1);
    }
    free(c->vbuf);
    gw_buf_free(&c->in);
    gw_buf_free(&c->out);
    free(c);
}

static int on_accept(lf_handler *h, int fd, uint32_t events)
{
    int s;
    if ((events & LF_EV_TIMEOUT) && lf_timer_fired(&accept_pause))
        lf_reactor_modify(&reactor, h, LF_EV_ACCEPT); /* the pause is over */
    while ((s = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
        struct conn *c = (struct conn *)calloc(1, sizeof *c);
        if (c == NULL) {
            close(s);
            continue;
        }
        srv_nodelay(s);
        lf_handler_init(&c->h, on_conn, on_conn_close);
        lf_timer_init(&c->idle);
        lf_timer_init(&c->stall);
        lf_timer_init(&c->dl);
        count(&st.clients);
        /* WRITE too: a new socket is writable, so the first dispatch comes at once and
         * starts the idle timer. From here on c is the reactor's. */
        c->want = LF_EV_READ | LF_EV_WRITE;
        if (lf_reactor_register(&reactor, &c->h, s, c->want) != 0) {
            on_conn_close(&c->h);
            close(s);
        }
    }
    if (errno == EMFILE || errno == ENFILE) { /* it would report again at once: pause */
        lf_reactor_modify(&reactor, h, 0);
        lf_reactor_timer_start(&reactor, &accept_pause, h, 100 * 1000000LL, 0);
    }
    return LF_KEEP;
}

/* ------------------------------------------------------------------ >>main */

static int on_signal(lf_handler *h, int fd, uint32_t events)
{
    struct signalfd_siginfo si;
    if (events & LF_EV_SIGNAL) {
        while (read(fd, &si, sizeof si) == (ssize_t)sizeof si)
            ;
        if (!atomic_exchange(&draining, 1)) {
            /* stop accepting (the reactor closes the listening socket), then look
             * every 10 ms whether the calls in flight are done */
            lf_reactor_remove(&reactor, &listener);
            stop_at_ms = gw_now_ms() + args.deadline_ms + 200;
            lf_reactor_timer_start(&reactor, &stop_tick, h, 10 * 1000000LL, 10 * 1000000LL);
        }
    }
    if ((events & LF_EV_TIMEOUT) && lf_timer_fired(&stop_tick) &&
        ((atomic_load(&busy) == 0 && atomic_load(&calls) == 0) || gw_now_ms() > stop_at_ms))
        lf_reactor_stop(&reactor); /* every thread returns from lf_reactor_run */
    return LF_KEEP;
}

static void *run(void *arg)
{
    (void)arg;
    lf_reactor_run(&reactor, NULL);
    return NULL;
}

static void die_rc(const char *what, int rc)
{
    errno = rc;
    srv_die(what);
}

int main(int argc, char **argv)
{
    struct srv_args sa;
    sigset_t set;
    int lfd, efd, rc;

    args = gw_parse_args(argc, argv, 2);
    /* SIGINT and SIGTERM come as events: block them before any thread starts
     * (liburcu's too) */
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    srv_raise_nofile();
    be.backoff_ms = GW_BACKOFF_MIN_MS;

    if ((rc = lf_reactor_init(&reactor)) != 0)
        die_rc("lf_reactor_init", rc);
    /* the backend's handler: an eventfd nothing writes (timers and notifications) */
    if ((efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
        srv_die("eventfd");
    lf_handler_init(&be.h, on_backend, NULL);
    lf_timer_init(&be.tick);
    if ((rc = lf_reactor_register(&reactor, &be.h, efd, LF_EV_READ)) != 0 ||
        (rc = lf_reactor_modify(&reactor, &be.h, 0)) != 0)
        die_rc("lf_reactor_register", rc);
    atomic_store(&be.down, 1);
    if ((rc = backend_open()) == 0) {
        atomic_store(&be.down, 0);
    } else {
        fprintf(stderr, "gw_lf: memcached at %s:%d: %s (retrying)\n", args.mc_host,
                args.mc_port, strerror(rc));
        lf_reactor_notify(&reactor, &be.h, LF_EV_NOTIFY);
    }

    sa.port = args.port;
    sa.threads = args.threads;
    sa.flags = args.flags;
    lfd = srv_listen(&sa, 1); /* prints "port N" */
    lf_handler_init(&listener, on_accept, NULL);
    lf_handler_init(&signals, on_signal, NULL);
    lf_timer_init(&accept_pause);
    lf_timer_init(&stop_tick);
    if ((rc = lf_reactor_register(&reactor, &listener, lfd, LF_EV_ACCEPT)) != 0 ||
        (rc = lf_reactor_register_signal(&reactor, &signals, &set)) != 0)
        die_rc("lf_reactor_register", rc);

    pthread_t *th = (pthread_t *)calloc((size_t)args.threads, sizeof *th);
    if (th == NULL)
        die_rc("calloc", ENOMEM);
    for (int i = 0; i < args.threads; i++)
        if ((rc = pthread_create(&th[i], NULL, run, NULL)) != 0)
            die_rc("pthread_create", rc);
    for (int i = 0; i < args.threads; i++)
        pthread_join(th[i], NULL);
    free(th);

    /* every thread is out: no call holds a connection */
    struct memc_stats ms;
    unsigned long long deep = be.deep, reconnects = 0;
    if (be.opened && memc_stats(&mc, &ms) == 0) {
        deep += ms.bound.deep;
        reconnects = ms.reconnects;
    }
    unsigned long long t = st.timeouts, b = st.backend, p = st.proto;
    printf("stats requests=%llu errors=%llu timeouts=%llu backend=%llu proto=%llu "
           "failfast=%llu reconnects=%llu clients=%llu idle_closed=%llu stall_dropped=%llu "
           "max_depth=%d deep=%llu nest_max=%d\n",
           (unsigned long long)st.requests, t + b + p, t, b, p,
           (unsigned long long)st.failfast, reconnects, (unsigned long long)st.clients,
           (unsigned long long)st.idle_closed, (unsigned long long)st.stall_dropped,
           atomic_load(&st.max_depth), deep, LF_BOUND_NEST_MAX);
    fflush(stdout);

    if ((rc = lf_reactor_destroy(&reactor)) != 0) /* closes the clients left */
        die_rc("lf_reactor_destroy", rc);
    if (be.opened && (rc = memc_close(&mc)) != 0) /* EBUSY: a call outlived its thread */
        die_rc("memc_close", rc);
    return 0;
}
