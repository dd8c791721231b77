/* SPDX-License-Identifier: MIT (the licence text is at the end of this file) */
/* lf_conn.h - the shared connection under a client on lf_bound.h: many threads share
 * ONE TCP connection to one host:port, and when it breaks a new one takes its place
 * while the others go on calling. bench/memc.h (memcached) and bench/redis.h (Redis)
 * are built on it. It knows no protocol and sends nothing of its own: the client
 * brings its lf_bound hooks (the framing and read_body, flags such as
 * LF_BOUND_IN_ORDER) and the size of the state those hooks keep per connection;
 * lf_conn.h brings the rest: a non-blocking dial with a deadline, the current
 * connection and the references calls hold on it, one new connection per dead one,
 * automatic reconnection, shutdown, close, an lf_reactor to attach every connection
 * to, and cancellation (pthread_cancel) anywhere in it. A client's own doc block
 * states its public contract (memc.h's OPEN AND RECONNECT, say) in its own names;
 * this one states what a client is built on.
 *
 * A CLIENT ON IT
 *   typedef struct myc { lf_conn conn; ...the protocol's own fields... } myc;
 *   open:    lf_conn_open_until(&m->conn, host, port, &hooks, state_size, flags,
 *                               deadline)   (hooks: the protocol's, copied)
 *   a call:  struct lf_conn_guard g;
 *            if ((rc = lf_conn_hold(&m->conn, &g.c, deadline)) != 0)
 *                return rc;                                        nothing was sent
 *            g.cn = &m->conn; g.ctx = &ctx; g.heap = a large request's block or NULL;
 *            lf_bound_ctx_init(&ctx, ...); encode the request;
 *            lf_conn_call(&g, id, req, len, deadline);  g.rc: lf_bound_call's result
 *            lf_bound_ctx_destroy(&ctx); rc = what g.rc and the reply mean;
 *            lf_conn_drop(&m->conn, g.c, rc); free(g.heap);
 *   Between lf_conn_hold and lf_conn_call, and between the call's return and
 *   lf_conn_drop, nothing may be a cancellation point (a log line's fprintf, say):
 *   a thread cancelled there keeps its reference, and lf_conn_close says EBUSY for
 *   good. If lf_bound_ctx_init fails, drop with rc 0 and do not destroy ctx. id is
 *   lf_bound_call's: unique among the requests in flight (a counter), or ignored
 *   under LF_BOUND_IN_ORDER. A reply that shows the stream out of step belongs in
 *   read_body (LF_BOUND_BROKEN fails the connection at once): found after the call,
 *   as EPROTO to lf_conn_drop, it marks the connection dead, but calls already in
 *   flight on an in-order stream keep taking the shifted replies meanwhile.
 *   the rest: the client's reconnect, auto_reconnect, shutdown, close and stats (and
 *   attach and set_nest_max, where it offers lf_bound's hybrid mode) each call
 *   lf_conn's, which have the contracts below.
 *
 * TO TAKE IT AWAY
 *   It goes with its client: lf_conn.h, lf_bound.h and lf.h beside the client's
 *   header (lf_conn.h includes "lf_bound.h", found beside it or through -I). C11 and
 *   POSIX threads, as lf_bound.h needs; it also compiles as C++17. lf_conn_attach:
 *   lf_reactor.h included before lf_conn.h (as for lf_bound_attach), and liburcu as
 *   that header says.
 *
 * THE FUNCTIONS (those that return an int: 0 or an errno, EINVAL also for cn NULL.
 * All but lf_conn_open_until want cn open: lf_conn_close, lf_conn_stats,
 * lf_conn_set_nest_max and lf_conn_attach say EINVAL for a cn closed or never
 * opened, the others must not be given one)
 *   int lf_conn_open_until(lf_conn *cn, const char *host, int port,
 *                          const struct lf_bound_hooks *hooks, size_t state_size,
 *                          unsigned flags, const struct timespec *deadline)
 *       Once, before any thread uses cn. host is an address (IPv4 or IPv6, no
 *       lookup) or a name (getaddrinfo: the resolver takes its own time, which the
 *       deadline does not bound; pass an address to keep it strict). Each address of
 *       the name is tried in turn with a non-blocking connect, polled until the
 *       deadline (NULL: the kernel's own connect timeout, minutes); the socket is
 *       close-on-exec, TCP_NODELAY. A deadline already past still makes one attempt:
 *       a connect that completes at once (loopback) succeeds. Nothing is sent. Then
 *       an lf_bound on the socket (lf_bound_init with the hooks). host, port and the
 *       hooks are kept for lf_conn_reconnect: every connection gets its own bound,
 *       made with the same hooks, and when state_size > 0 its own state_size zeroed
 *       bytes, which its hooks get as their user pointer (the hooks' findings about
 *       the reply being read belong to the connection that reads it; state_size 0:
 *       hooks->user as given). flags: 0, or LF_CONN_REFUSE_DEAD (lf_conn_hold).
 *       0, or:
 *         ECONNREFUSED  nothing listens there       ETIMEDOUT  the deadline passed
 *         ENETUNREACH, EHOSTUNREACH  no route       ENXIO      the name has no address
 *         EAGAIN        the resolver failed for now EINVAL     host or hooks NULL,
 *         ENOMEM, EMFILE, ...; lf_bound_init's                  host longer than
 *                                                       LF_CONN_HOST_MAX, port not
 *                                                       1..65535, a bad deadline
 *   int lf_conn_reconnect(lf_conn *cn, const struct timespec *deadline)
 *       A connection is DEAD once a call on it met ECONNRESET, EPIPE or EPROTO (or a
 *       deadline cut its request off half sent: lf_conn_drop), or lf_bound saw it
 *       fail. lf_conn_reconnect then opens a new one to the same host and port (as
 *       lf_conn_open_until, and attached to the same reactor after lf_conn_attach)
 *       and puts it in the dead one's place: calls that start after that use the new
 *       one; calls still on the old one finish there (with their replies or the
 *       error), and the last of them shuts the old connection down, destroys its
 *       bound and closes its socket. Any thread, any time, many at once: one new
 *       connection is made per dead one. A thread that finds one being made waits
 *       for it (up to its own deadline: ETIMEDOUT) and returns its result; with the
 *       current connection alive, 0 at once and nothing done. 0 (a live connection
 *       is in place), the errors of lf_conn_open_until (the dead connection stays in
 *       place: calls on it fail at once; call again later), ECANCELED after
 *       lf_conn_shutdown (one under way gives up within 50 ms) or, attached, when
 *       the reactor was stopped and there is a dead connection to replace (no new
 *       connection cures that; a live one still gives 0), EINVAL a bad deadline.
 *   int lf_conn_auto_reconnect(lf_conn *cn, int on)
 *       on: the first call to find the current connection dead (lf_conn_hold) calls
 *       lf_conn_reconnect first, with its own deadline (as many calls at once make
 *       one connection). The call that MET the failure still returns it: nothing is
 *       retried. Off by default. Any thread, any time; calls that start later see it.
 *   int lf_conn_set_nest_max(lf_conn *cn, int levels)
 *       Hybrid: the nesting limit (lf_bound_set_nest_max; LF_BOUND_NEST_MAX by
 *       default) is cn's, not one connection's: it is set on every open connection,
 *       and on each new one lf_conn_reconnect makes before any call can take it, so
 *       a limit set once holds over reconnects. Any thread, any time: calls that
 *       start later use it. EINVAL: levels < 0.
 *   int lf_conn_attach(lf_conn *cn, lf_reactor *r)
 *       Once, before any thread uses cn: every connection becomes a handle of r
 *       (lf_bound_attach): the current one now, each new one before any call can
 *       take it. Offered where lf_reactor.h was included before lf_conn.h. r as
 *       lf_bound_attach wants it (not LF_REACTOR_CONCURRENT, not in a group), and
 *       its storage must outlive lf_conn_close. EBUSY attached already, or what
 *       lf_bound_attach says (ENOTSUP, ECANCELED, ...).
 *   int lf_conn_shutdown(lf_conn *cn)
 *       Final: every call waiting, on any connection, returns ECONNABORTED (or
 *       ECANCELED if nothing of it was sent: lf_bound_shutdown), later holds and
 *       reconnects ECANCELED, a reconnect under way gives up. Any thread, any time,
 *       reactor handlers too.
 *   int lf_conn_close(lf_conn *cn)
 *       After lf_conn_shutdown or not: closes the connection and frees everything.
 *       EBUSY (nothing done) while a call or a reconnect is under way, or an old
 *       connection is still held by a call: join the threads first. EINVAL: closed
 *       already. Nothing may use cn once it returned 0.
 *   int lf_conn_stats(lf_conn *cn, struct lf_conn_stats *out)
 *       The current connection's lf_bound_stats, how many connections
 *       lf_conn_reconnect made, how many are open (the current one, and old ones
 *       that calls still hold) and the calls holding one. Any thread, any time.
 *       EINVAL: out NULL, or cn NULL or closed (*out zeroed).
 *   int lf_conn_hold(lf_conn *cn, struct lf_conn_link **c, deadline)
 *       A call takes the current connection: *c, with a reference that keeps it
 *       (and its bound, c->b) alive until lf_conn_drop. 0, or nothing was taken
 *       (*c NULL: there is nothing to drop) and nothing must be sent: EINVAL cn or
 *       c NULL; ECANCELED after lf_conn_shutdown; in automatic mode,
 *       what lf_conn_reconnect returned; with LF_CONN_REFUSE_DEAD, a dead current
 *       connection is refused with the error it died of (without the flag the call
 *       goes on to lf_bound_call, which fails as the bound's state says).
 *   void lf_conn_call(struct lf_conn_guard *g, uint64_t id, const void *req,
 *                     size_t len, const struct timespec *deadline)
 *       lf_bound_call(&g->c->b, g->ctx, id, req, len, deadline) into g->rc, with a
 *       cleanup handler for a thread cancelled in its wait (lf_bound.h,
 *       CANCELLATION): lf_bound's own cleanup withdraws the context first, then this
 *       one destroys it, frees g->heap (a request's block, or NULL) and lets go of
 *       the connection (lf_conn_drop, which may free an old one). g->cn, g->c (from
 *       lf_conn_hold), g->ctx (initialised) and g->heap set before.
 *   void lf_conn_start(struct lf_conn_guard *g, uint64_t id, const void *req,
 *                      size_t len, const struct timespec *deadline, lf_handler *h)
 *       Attached (lf_reactor.h included first): lf_bound_start instead of
 *       lf_bound_call, the same cleanup. g->rc 0: the call is in flight, and the
 *       reference and g->ctx stay with it: keep g->c, and once
 *       lf_bound_collect(&g->c->b, g->ctx) says anything but EINPROGRESS (h is told,
 *       lf_bound.h ASYNCHRONOUS CALLS), destroy the context and lf_conn_drop(cn,
 *       g->c, that result). Otherwise as after lf_conn_call.
 *   void lf_conn_drop(lf_conn *cn, struct lf_conn_link *c, int rc)
 *       A call lets go of c (the last reference to an old connection frees it).
 *       rc: the call's result. ECONNRESET, EPIPE and EPROTO mark c dead, and so
 *       does ETIMEDOUT when the bound's write side failed (a deadline cut a request
 *       off half sent: no request can follow it). So pass EPROTO for a broken
 *       stream only: a reply that merely does not suit its call is lf_bound's
 *       EBADMSG, which the client maps as it likes.
 *   int lf_conn_deadline_ok(const struct timespec *d)
 *       1: d is NULL or a valid time (what every function here checks: EINVAL).
 *
 * HOW THE CONNECTION IS SHARED
 *   cn holds its current connection (a struct lf_conn_link: the lf_bound, its
 *   socket, a count of references) behind a pointer. A call takes a reference to it
 *   (under cn's mutex: load the pointer, add one), makes its request with no lock
 *   held, and drops the reference (under the mutex again; it also marks the
 *   connection dead after a connection error). The mutex is held for those few
 *   instructions only, and cn holds one reference of its own on the current
 *   connection, so a connection is freed exactly when it is no longer current and
 *   its last call has let it go, by that call. (bench/memc.h measured the mutex
 *   against the atomics of a lock-free scheme: 30 ns a call, under 0.6% of one.)
 *   Lock order: cn's mutex, then a bound's own locks: the hooks must never call
 *   into lf_conn.
 *
 * CALLING CONTEXTS
 *   lf_conn_hold, lf_conn_call, lf_conn_drop: any thread, many at once; from a
 *   reactor handler too (attached, the call's wait serves the reactor). A call that
 *   started before a reconnect's swap finishes on the old connection, one after it
 *   on the new one. lf_conn_reconnect: any thread, many at once; cancelled in its
 *   connect or its wait, the socket is closed and the attempt given up (a thread
 *   waiting for it makes its own). lf_conn_shutdown, lf_conn_stats,
 *   lf_conn_auto_reconnect, lf_conn_set_nest_max: any thread, any time.
 *   lf_conn_open_until, lf_conn_attach: before any other thread uses cn.
 *   lf_conn_close: once no call is under way (EBUSY otherwise); nothing after it.
 *
 * LIMITS
 *   - A dead connection is noticed by a call that meets the failure: with no call
 *     under way, nothing reads the socket, so nothing sees the server go.
 *   - A reconnect's host name is looked up again each time (getaddrinfo, no
 *     deadline).
 *   - A reconnect made the moment the server dies can land in the dying server's
 *     accept queue, which the kernel then resets: that connection dies too, and the
 *     next reconnect replaces it (one per dead one). Waiting a little before
 *     reconnecting (a timer, a sleep) makes it rarer.
 *   - Nothing is sent on a new connection before calls take it (no login, no
 *     database to select): a protocol that needs a session set up has no hook for it
 *     here yet.
 */
#ifndef LF_CONN_H_INCLUDED
#define LF_CONN_H_INCLUDED

#include "lf_bound.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>

#define LF_CONN_HOST_MAX 255 /* the longest host name lf_conn_open_until takes */

/* lf_conn_open_until's flags (see lf_conn_hold) */
#define LF_CONN_REFUSE_DEAD 1u

/* One connection: see HOW THE CONNECTION IS SHARED. */
struct lf_conn_link {
    lf_bound b;                 /* the bound a call makes its request on */
    /* private */
    int fd;
    unsigned refs;              /* under cn->lock (see below) */
    int dead;                   /* under cn->lock: 0, or the connection error a call met */
    struct lf_conn_link *next;  /* cn->conns */
    void *state;                /* the hooks' state_size bytes, or NULL */
};

struct lf_conn_stats {
    struct lf_bound_stats bound;   /* the current connection's (lf_bound_stats) */
    unsigned long long reconnects; /* connections lf_conn_reconnect made and put in place */
    unsigned conns;                /* open now: the current one, and old ones still held */
    unsigned calls;                /* calls holding a connection now */
};

typedef struct lf_conn {
    /* private: lf_conn_open_until sets every field */
    pthread_mutex_t lock;          /* what follows, and every connection's refs, dead
                                    * and next */
    pthread_cond_t ended;          /* an attempt to reconnect ended (CLOCK_MONOTONIC) */
    struct lf_conn_link *cur;      /* the connection calls take (NULL: closed) */
    /* 1 from a successful lf_conn_open_until to lf_conn_close: the closed-or-not test
     * of the functions that say EINVAL for a closed cn, made without the lock (which
     * a closed cn no longer has) and without reading cur, which reconnects write */
    LF__ATOMIC(int) open;
    struct lf_conn_link *conns;    /* the open ones: cur first, then old ones still held */
    int shut;                      /* lf_conn_shutdown was called: final */
    int automatic;                 /* lf_conn_auto_reconnect */
    int connecting;                /* a thread is making the next connection */
    int inside;                    /* threads inside lf_conn_reconnect */
    unsigned long long attempts;   /* attempts to reconnect that ended */
    int attempt_rc;                /* the last one's result (LF_CONN__GAVE_UP: cancelled) */
    unsigned long long reconnects;
    int nest_max;                  /* lf_conn_set_nest_max's, for every connection */
    void *reactor;                 /* lf_conn_attach's lf_reactor, or NULL */
    /* lf_bound_attach as compiled where lf_conn_attach was (a file with lf_reactor.h),
     * for the connections lf_conn_reconnect makes in any file; NULL: bare */
    int (*attach)(lf_bound *b, void *reactor);
    struct lf_bound_hooks hooks;   /* every connection's (user: its state, if any) */
    size_t state_size;
    unsigned flags;                /* LF_CONN_REFUSE_DEAD */
    int port;
    char host[LF_CONN_HOST_MAX + 1];
} lf_conn;

/* ------------------------------------------------------------------ connecting
 * A non-blocking connect that a deadline ends: getaddrinfo, then each address in
 * turn (a name may have an IPv6 and an IPv4 one), polled for POLLOUT and asked
 * SO_ERROR. CANCELLATION: getaddrinfo, connect and poll are cancellation points, and
 * the cleanup closes the socket and frees the address list. */

static inline int lf_conn_deadline_ok(const struct timespec *d)
{
    return d == NULL || (d->tv_sec >= 0 && d->tv_nsec >= 0 && d->tv_nsec < 1000000000L);
}

/* Milliseconds until deadline, rounded up (a wait never ends before it): -1 none. */
static inline int lf_conn__ms_until(const struct timespec *deadline)
{
    struct timespec now;
    long long ms;
    if (deadline == NULL)
        return -1;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (deadline->tv_sec - now.tv_sec > 1000000) /* (a year and more: no overflow) */
        return 0x7fffffff;
    ms = ((long long)(deadline->tv_sec - now.tv_sec) * 1000000000LL + deadline->tv_nsec -
          now.tv_nsec + 999999) / 1000000;
    return ms <= 0 ? 0 : ms > 0x7fffffff ? 0x7fffffff : (int)ms;
}

/* getaddrinfo's errors as errno values (see lf_conn_open_until). */
static inline int lf_conn__gai_errno(int rc)
{
    switch (rc) {
    case EAI_AGAIN: return EAGAIN;
    case EAI_MEMORY: return ENOMEM;
    case EAI_SYSTEM: return errno ? errno : EIO;
    case EAI_FAMILY:
    case EAI_SOCKTYPE:
    case EAI_BADFLAGS:
    case EAI_SERVICE: return EINVAL;
    default: return ENXIO; /* EAI_NONAME, EAI_FAIL, ...: the name has no address */
    }
}

struct lf_conn__dial {
    lf_conn *cn;            /* its host and port; asked every 50 ms whether
                             * lf_conn_shutdown came */
    const struct timespec *deadline;
    struct addrinfo *ai;    /* the addresses, until freed */
    int fd;                 /* the socket being connected, or -1 */
    int rc;
};

/* ThreadSanitizer cannot follow a thread cancelled inside a system call it
 * intercepts (lf.h says why, at LF__TSAN_WAITS): in a TSan build the connect's poll
 * runs with cancellation off, 10 ms at a time, and pthread_testcancel before it is
 * the cancellation point (the same contract, acted on up to 10 ms later). */
#if defined(__SANITIZE_THREAD__)
#define LF_CONN__TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define LF_CONN__TSAN 1
#endif
#endif

static inline int lf_conn__poll(struct pollfd *p, int ms)
{
#ifdef LF_CONN__TSAN
    int cs, n;
    pthread_testcancel();
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cs);
    n = poll(p, 1, ms < 0 || ms > 10 ? 10 : ms); /* (early: the caller polls again) */
    pthread_setcancelstate(cs, &cs);
    return n;
#else
    return poll(p, 1, ms);
#endif
}

/* close is a cancellation point to libc, and a thread ended in it may or may not
 * have closed the descriptor: closes run with cancellation off */
static inline void lf_conn__close(int fd)
{
    int cs;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cs);
    close(fd);
    pthread_setcancelstate(cs, &cs);
}

static inline void lf_conn__dial_cancelled(void *arg)
{
    struct lf_conn__dial *d = (struct lf_conn__dial *)arg;
    if (d->fd >= 0)
        close(d->fd); /* (cancellation is off in a cleanup handler) */
    if (d->ai)
        freeaddrinfo(d->ai);
}

/* lf_conn_shutdown came (a connect under way gives up) */
static inline int lf_conn__stopped(lf_conn *cn)
{
    int shut;
    pthread_mutex_lock(&cn->lock);
    shut = cn->shut;
    pthread_mutex_unlock(&cn->lock);
    return shut;
}

/* One address: 0 connected (d->fd), else why not (d->fd is closed by the caller). */
static inline int lf_conn__dial_one(struct lf_conn__dial *d, const struct addrinfo *a)
{
    int err;
#if defined(SOCK_NONBLOCK) && defined(SOCK_CLOEXEC)
    d->fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (d->fd < 0)
        return errno;
#else
    if ((d->fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol)) < 0)
        return errno;
    (void)fcntl(d->fd, F_SETFD, FD_CLOEXEC); /* (a fork in between may inherit it) */
    (void)fcntl(d->fd, F_SETFL, fcntl(d->fd, F_GETFL) | O_NONBLOCK);
#endif
    if (connect(d->fd, a->ai_addr, a->ai_addrlen) == 0)
        return 0;
    if (errno != EINPROGRESS && errno != EINTR) /* EINTR: it goes on, as EINPROGRESS */
        return errno;
    for (;;) {
        struct pollfd p;
        int ms = lf_conn__ms_until(d->deadline), n;
        socklen_t len = sizeof err;
        p.fd = d->fd;
        p.events = POLLOUT;
        p.revents = 0;
        /* in slices of 50 ms, to see lf_conn_shutdown */
        n = lf_conn__poll(&p, ms < 0 || ms > 50 ? 50 : ms);
        if (n > 0) {
            err = 0;
            if (getsockopt(d->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
                err = errno;
            return err; /* 0: connected */
        }
        if (n < 0 && errno != EINTR)
            return errno;
        if (ms == 0)
            return ETIMEDOUT;
        if (lf_conn__stopped(d->cn))
            return ECANCELED;
    }
}

static inline void lf_conn__dial_steps(struct lf_conn__dial *d)
{
    struct addrinfo hints, *a;
    char service[16];
    int one = 1;

    snprintf(service, sizeof service, "%d", d->cn->port);
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV; /* an address: no lookup */
    d->rc = getaddrinfo(d->cn->host, service, &hints, &d->ai);
    if (d->rc == EAI_NONAME) { /* a name, then: the resolver's own time, no deadline */
        hints.ai_flags = AI_NUMERICSERV;
        d->rc = getaddrinfo(d->cn->host, service, &hints, &d->ai);
    }
    if (d->rc != 0) {
        d->ai = NULL;
        d->rc = lf_conn__gai_errno(d->rc);
        return;
    }
    d->rc = ENXIO;
    for (a = d->ai; a != NULL; a = a->ai_next) {
        if ((d->rc = lf_conn__dial_one(d, a)) == 0)
            break;
        if (d->fd >= 0) {
            lf_conn__close(d->fd);
            d->fd = -1;
        }
        if (d->rc == ETIMEDOUT || d->rc == ECANCELED)
            break; /* the deadline is spent for every address */
    }
    if (d->rc == 0) /* many small requests from many threads: Nagle would hold them */
        (void)setsockopt(d->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* A connected, non-blocking, close-on-exec TCP socket to cn's host and port: 0 and
 * d->fd, or an errno (d->fd -1). getaddrinfo, connect and the poll are the
 * cancellation points. */
static inline int lf_conn__dial(struct lf_conn__dial *d)
{
    int cs;
    d->ai = NULL;
    d->fd = -1;
    pthread_cleanup_push(lf_conn__dial_cancelled, d);
    lf_conn__dial_steps(d);
    pthread_cleanup_pop(0);
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cs);
    if (d->ai)
        freeaddrinfo(d->ai);
    d->ai = NULL;
    pthread_setcancelstate(cs, &cs);
    return d->rc;
}

/* ------------------------------------------------------------------ connections
 * cn->cur is the connection calls take. Each connection counts its references under
 * cn->lock: one of cn's own while it is cn->cur, one per call that holds it. Whoever
 * drops the last one (the last call on an old connection, or lf_conn_close) has the
 * only pointer left to it, and frees it outside the lock. Lock order: cn->lock, then
 * a bound's own locks (the hooks never take cn->lock). */

#define LF_CONN__GAVE_UP (-1) /* attempt_rc: the thread making it was cancelled */

/* A new connection to cn's server: connected, its bound set up (with its own state
 * for the hooks), attached to cn's reactor after lf_conn_attach (before any call can
 * take it). Not cn's yet: refs 0. */
static inline int lf_conn__link_open(lf_conn *cn, const struct timespec *deadline,
                                     struct lf_conn_link **out)
{
    struct lf_bound_hooks h;
    struct lf_conn__dial d;
    struct lf_conn_link *c;
    int rc, cs;

    memset(&d, 0, sizeof d);
    d.cn = cn;
    d.deadline = deadline;
    if ((rc = lf_conn__dial(&d)) != 0)
        return rc;
    /* nothing below waits: with cancellation off no cancel can leave the socket open */
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cs);
    h = cn->hooks;
    if ((c = (struct lf_conn_link *)calloc(1, sizeof *c)) == NULL ||
        (cn->state_size != 0 && (c->state = calloc(1, cn->state_size)) == NULL)) {
        rc = ENOMEM;
    } else {
        if (c->state != NULL)
            h.user = c->state; /* the hooks keep their findings in the connection */
        if ((rc = lf_bound_init(&c->b, d.fd, &h)) == 0 && cn->attach != NULL &&
            (rc = cn->attach(&c->b, cn->reactor)) != 0)
            (void)lf_bound_destroy(&c->b);
    }
    if (rc == 0) {
        c->fd = d.fd;
        *out = c;
    } else {
        close(d.fd);
        if (c != NULL)
            free(c->state);
        free(c);
    }
    pthread_setcancelstate(cs, &cs);
    return rc;
}

/* Nobody can reach c any more (its last reference is gone): shut it down, destroy
 * its bound, close its socket, free it. Nothing here waits; cancellation is off for
 * the closes (a cancelled call's cleanup handler may run this). */
static inline void lf_conn__link_free(struct lf_conn_link *c)
{
    int cs;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cs);
    (void)lf_bound_shutdown(&c->b);
    /* 0: every call let go of c after its lf_bound_call returned, so none is inside */
    if (lf_bound_destroy(&c->b) == 0) {
        close(c->fd);
        free(c->state);
        free(c);
    }
    pthread_setcancelstate(cs, &cs);
}

/* cn->lock held: drop one reference to c. 1: it was the last, c is off cn's list,
 * and the caller frees it (lf_conn__link_free) once the lock is released. */
static inline int lf_conn__put_locked(lf_conn *cn, struct lf_conn_link *c)
{
    struct lf_conn_link **p = &cn->conns;
    if (--c->refs != 0)
        return 0;
    while (*p != c)
        p = &(*p)->next;
    *p = c->next;
    return 1;
}

/* cn->lock held: is c dead (lf_conn_reconnect in the doc block)? Also what lf_bound
 * saw that no call has reported yet; its ECANCELED is a shutdown or a stopped
 * reactor, which no new connection cures. */
static inline int lf_conn__dead_locked(struct lf_conn_link *c)
{
    struct lf_bound_stats s;
    if (c->dead)
        return 1;
    return lf_bound_stats(&c->b, &s) == 0 &&
           ((s.failed != 0 && s.failed != ECANCELED) || s.send_failed != 0);
}

/* The connection error a call's result shows (the connection is dead), or 0. */
static inline int lf_conn__error(lf_bound *b, int rc)
{
    struct lf_bound_stats s;
    if (rc == ECONNRESET || rc == EPIPE || rc == EPROTO) /* (EPROTO: the stream is
                                                          * broken, lf_conn_drop) */
        return rc;
    /* a deadline that cut the request off half sent: no request can follow it */
    if (rc == ETIMEDOUT && lf_bound_stats(b, &s) == 0 && s.send_failed != 0)
        return s.send_failed;
    return 0;
}

/* Contract: any thread; once per lf_conn_hold that returned 0 (see THE FUNCTIONS). */
static inline void lf_conn_drop(lf_conn *cn, struct lf_conn_link *c, int rc)
{
    int failed = rc != 0 ? lf_conn__error(&c->b, rc) : 0, last;
    pthread_mutex_lock(&cn->lock);
    if (failed != 0 && c->dead == 0)
        c->dead = failed;
    last = lf_conn__put_locked(cn, c);
    pthread_mutex_unlock(&cn->lock);
    if (last)
        lf_conn__link_free(c);
}

/* Contract: once, before any thread uses cn. 0 or an errno (see THE FUNCTIONS). */
static inline int lf_conn_open_until(lf_conn *cn, const char *host, int port,
                                     const struct lf_bound_hooks *hooks, size_t state_size,
                                     unsigned flags, const struct timespec *deadline)
{
    pthread_condattr_t ca;
    int rc;

    if (cn == NULL || host == NULL || hooks == NULL || strlen(host) > LF_CONN_HOST_MAX ||
        port < 1 || port > 65535 || !lf_conn_deadline_ok(deadline))
        return EINVAL;
    memset((void *)cn, 0, sizeof *cn);
    memcpy(cn->host, host, strlen(host) + 1);
    cn->port = port;
    cn->hooks = *hooks;
    cn->state_size = state_size;
    cn->flags = flags;
    cn->nest_max = LF_BOUND_NEST_MAX; /* (lf_bound_init's too) */
    if ((rc = pthread_condattr_init(&ca)) != 0)
        return rc;
    if ((rc = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC)) == 0 &&
        (rc = pthread_cond_init(&cn->ended, &ca)) == 0 &&
        (rc = pthread_mutex_init(&cn->lock, NULL)) != 0)
        pthread_cond_destroy(&cn->ended);
    pthread_condattr_destroy(&ca);
    if (rc != 0)
        return rc;
    if ((rc = lf_conn__link_open(cn, deadline, &cn->cur)) != 0) {
        pthread_mutex_destroy(&cn->lock);
        pthread_cond_destroy(&cn->ended);
        cn->cur = NULL;
        return rc;
    }
    cn->cur->refs = 1; /* cn's own */
    cn->conns = cn->cur;
    lf__store(&cn->open, 1, release);
    return 0;
}

/* 1 if cn is open (see lf_conn's open). */
static inline int lf_conn__is_open(lf_conn *cn)
{
    return cn != NULL && lf__load(&cn->open, acquire) == 1;
}

/* The thread making a new connection was cancelled (lf_conn__dial's cleanup has
 * closed its socket): the attempt ends with no result, and a thread that waited for
 * it looks again (and may make its own). */
static inline void lf_conn__attempt_cancelled(void *arg)
{
    lf_conn *cn = (lf_conn *)arg;
    pthread_mutex_lock(&cn->lock);
    cn->connecting = 0;
    cn->attempts++;
    cn->attempt_rc = LF_CONN__GAVE_UP;
    cn->inside--;
    pthread_cond_broadcast(&cn->ended);
    pthread_mutex_unlock(&cn->lock);
}

struct lf_conn__attempt {
    lf_conn *cn;
    const struct timespec *deadline;
    struct lf_conn_link *c;
    int rc;
};

/* (its own function: the cleanup is pushed around it, and nothing it reads changes
 * between push and pop, so gcc's -Wclobbered stays quiet) */
static inline void lf_conn__attempt(struct lf_conn__attempt *a)
{
    pthread_cleanup_push(lf_conn__attempt_cancelled, a->cn);
    a->rc = lf_conn__link_open(a->cn, a->deadline, &a->c);
    pthread_cleanup_pop(0);
}

/* A thread waiting for another's attempt was cancelled (the wait took the lock back). */
static inline void lf_conn__wait_cancelled(void *arg)
{
    lf_conn *cn = (lf_conn *)arg;
    cn->inside--;
    pthread_mutex_unlock(&cn->lock);
}

struct lf_conn__waiting {
    lf_conn *cn;
    const struct timespec *deadline;
    int rc;
};

static inline void lf_conn__wait(struct lf_conn__waiting *w)
{
    pthread_cleanup_push(lf_conn__wait_cancelled, w->cn);
    w->rc = w->deadline ? pthread_cond_timedwait(&w->cn->ended, &w->cn->lock, w->deadline)
                        : pthread_cond_wait(&w->cn->ended, &w->cn->lock);
    pthread_cleanup_pop(0);
}

/* Contract: any thread, any time, many at once (see THE FUNCTIONS). */
static inline int lf_conn_reconnect(lf_conn *cn, const struct timespec *deadline)
{
    struct lf_conn__attempt a;
    struct lf_conn_link *old = NULL;
    int rc = 0, ours = 0;

    if (cn == NULL || !lf_conn_deadline_ok(deadline))
        return EINVAL;
    pthread_mutex_lock(&cn->lock);
    cn->inside++;
    for (;;) {
        struct lf_conn__waiting w;
        unsigned long long seen = cn->attempts;
        if (cn->shut) {
            rc = ECANCELED;
            break;
        }
        if (!lf_conn__dead_locked(cn->cur))
            break; /* alive (another thread's reconnect, say): 0, nothing to do */
        if (!cn->connecting) {
            ours = 1;
            break;
        }
        /* one is being made for this dead connection: wait for it, take its result */
        w.cn = cn;
        w.deadline = deadline;
        w.rc = 0;
        while (w.rc == 0 && cn->attempts == seen && !cn->shut)
            lf_conn__wait(&w);
        if (cn->shut)
            continue; /* ECANCELED */
        if (cn->attempts == seen) {
            rc = w.rc; /* ETIMEDOUT: our deadline came first */
            break;
        }
        if (cn->attempt_rc != LF_CONN__GAVE_UP) {
            rc = cn->attempt_rc;
            break;
        }
        /* its thread was cancelled: look again */
    }
    if (!ours) {
        cn->inside--;
        pthread_mutex_unlock(&cn->lock);
        return rc;
    }
    cn->connecting = 1;
    pthread_mutex_unlock(&cn->lock);

    a.cn = cn;
    a.deadline = deadline;
    a.c = NULL;
    lf_conn__attempt(&a); /* (dialled with no lock held: calls go on meanwhile) */

    pthread_mutex_lock(&cn->lock);
    cn->connecting = 0;
    cn->attempts++;
    if (a.rc == 0 && cn->shut)
        a.rc = ECANCELED; /* made, but too late: freed below */
    if (a.rc == 0) {
        /* the swap: calls that take the connection from now on get the new one; the
         * old one loses cn's reference, and goes with its last call's (or now) */
        a.c->refs = 1;
        /* under the lock, as lf_conn_set_nest_max sets it: none can fall in between */
        (void)lf_bound_set_nest_max(&a.c->b, cn->nest_max);
        a.c->next = cn->conns;
        cn->conns = a.c;
        old = cn->cur;
        cn->cur = a.c;
        cn->reconnects++;
        if (!lf_conn__put_locked(cn, old))
            old = NULL;
    }
    cn->attempt_rc = a.rc;
    cn->inside--;
    pthread_cond_broadcast(&cn->ended);
    pthread_mutex_unlock(&cn->lock);
    if (old != NULL)
        lf_conn__link_free(old);
    if (a.rc == ECANCELED && a.c != NULL)
        lf_conn__link_free(a.c);
    return a.rc;
}

/* Contract: any thread, any time (see THE FUNCTIONS). */
static inline int lf_conn_auto_reconnect(lf_conn *cn, int on)
{
    if (cn == NULL)
        return EINVAL;
    pthread_mutex_lock(&cn->lock);
    cn->automatic = on != 0;
    pthread_mutex_unlock(&cn->lock);
    return 0;
}

/* Contract: any thread, any time. Calls that start later use it. */
static inline int lf_conn_set_nest_max(lf_conn *cn, int levels)
{
    struct lf_conn_link *c;
    if (!lf_conn__is_open(cn) || levels < 0)
        return EINVAL;
    pthread_mutex_lock(&cn->lock);
    cn->nest_max = levels;
    for (c = cn->conns; c != NULL; c = c->next) /* old ones too: one limit for cn */
        (void)lf_bound_set_nest_max(&c->b, levels);
    pthread_mutex_unlock(&cn->lock);
    return 0;
}

/* Contract: any thread, any time. Final: waiters on every connection return
 * ECONNABORTED, later calls and reconnects ECANCELED. */
static inline int lf_conn_shutdown(lf_conn *cn)
{
    struct lf_conn_link *c;
    if (cn == NULL)
        return EINVAL;
    pthread_mutex_lock(&cn->lock);
    cn->shut = 1;
    /* old connections too: calls still on them wake. Each is alive while it is on
     * the list (it leaves the list under this lock, before it is freed). */
    for (c = cn->conns; c != NULL; c = c->next)
        (void)lf_bound_shutdown(&c->b);
    pthread_cond_broadcast(&cn->ended); /* threads waiting for another's reconnect */
    pthread_mutex_unlock(&cn->lock);
    return 0;
}

/* Contract: once no call and no reconnect is under way (else EBUSY, nothing done). */
static inline int lf_conn_close(lf_conn *cn)
{
    int busy;
    if (!lf_conn__is_open(cn))
        return EINVAL;
    pthread_mutex_lock(&cn->lock);
    busy = cn->inside != 0 || cn->conns != cn->cur || cn->cur->next != NULL ||
           cn->cur->refs != 1;
    pthread_mutex_unlock(&cn->lock);
    if (busy)
        return EBUSY;
    lf__store(&cn->open, 0, relaxed);
    lf_conn__link_free(cn->cur);
    cn->cur = cn->conns = NULL;
    pthread_cond_destroy(&cn->ended);
    pthread_mutex_destroy(&cn->lock);
    return 0;
}

/* Contract: any thread, any time. */
static inline int lf_conn_stats(lf_conn *cn, struct lf_conn_stats *out)
{
    struct lf_conn_link *c;
    if (out == NULL)
        return EINVAL;
    memset((void *)out, 0, sizeof *out);
    if (!lf_conn__is_open(cn))
        return EINVAL;
    pthread_mutex_lock(&cn->lock);
    out->reconnects = cn->reconnects;
    for (c = cn->conns; c != NULL; c = c->next) {
        out->conns++;
        out->calls += c->refs - (c == cn->cur); /* (cn's own is no call) */
    }
    c = cn->cur;
    c->refs++; /* held while lf_bound_stats reads it: a reconnect may put it away */
    pthread_mutex_unlock(&cn->lock);
    (void)lf_bound_stats(&c->b, &out->bound);
    lf_conn_drop(cn, c, 0);
    return 0;
}

#ifdef LF_REACTOR_H_INCLUDED
static inline int lf_conn__attach(lf_bound *b, void *reactor)
{
    return lf_bound_attach(b, (lf_reactor *)reactor);
}

/* Contract: once, before any thread uses cn (see THE FUNCTIONS). 0, EBUSY attached
 * already, or what lf_bound_attach says (ENOTSUP, ECANCELED, ...). */
static inline int lf_conn_attach(lf_conn *cn, lf_reactor *r)
{
    int rc;
    if (!lf_conn__is_open(cn) || r == NULL)
        return EINVAL;
    pthread_mutex_lock(&cn->lock);
    if (cn->reactor != NULL) {
        rc = EBUSY;
    } else if ((rc = lf_bound_attach(&cn->cur->b, r)) == 0) {
        cn->reactor = r; /* for the connections lf_conn_reconnect makes */
        cn->attach = lf_conn__attach;
    }
    pthread_mutex_unlock(&cn->lock);
    return rc;
}
#endif

/* ------------------------------------------------------------------ a call */

/* Contract: any thread (see THE FUNCTIONS). A call takes the current connection (*c,
 * one reference), or says why not (nothing taken, nothing to send). */
static inline int lf_conn_hold(lf_conn *cn, struct lf_conn_link **c,
                               const struct timespec *deadline)
{
    int rc, reconnect;
    if (c != NULL)
        *c = NULL;
    if (cn == NULL || c == NULL)
        return EINVAL;
    for (int tries = 0;; tries++) {
        struct lf_conn_link *cur;
        rc = reconnect = 0;
        pthread_mutex_lock(&cn->lock);
        cur = cn->cur;
        if (cn->shut)
            rc = ECANCELED;
        else if (cn->automatic && cur->dead && tries == 0)
            reconnect = 1; /* see lf_conn_auto_reconnect */
        else if (cur->dead && (cn->flags & LF_CONN_REFUSE_DEAD))
            rc = cur->dead; /* dead: nothing more goes out on it */
        else
            cur->refs++;
        if (rc == 0 && !reconnect)
            *c = cur; /* taken: only then does the caller see it */
        pthread_mutex_unlock(&cn->lock);
        if (!reconnect)
            return rc;
        if ((rc = lf_conn_reconnect(cn, deadline)) != 0)
            return rc; /* nothing sent */
    }
}

/* What a cancelled call gives back (lf_conn_call). */
struct lf_conn_guard {
    lf_conn *cn;
    struct lf_conn_link *c; /* held: lf_conn_hold */
    lf_bound_ctx *ctx;
    void *heap;             /* a large request's block, or NULL */
    int rc;                 /* lf_bound_call's result */
};

/* lf_bound's cleanup has withdrawn the context first (lf_bound.h, CANCELLATION);
 * then this frees it, the request's memory, and lets go of the connection (which
 * may free an old one). */
static inline void lf_conn__call_cancelled(void *arg)
{
    struct lf_conn_guard *g = (struct lf_conn_guard *)arg;
    lf_bound_ctx_destroy(g->ctx);
    free(g->heap);
    lf_conn_drop(g->cn, g->c, 0);
}

/* Contract: any thread, on the connection it holds (see THE FUNCTIONS). */
static inline void lf_conn_call(struct lf_conn_guard *g, uint64_t id, const void *req,
                                size_t len, const struct timespec *deadline)
{
    pthread_cleanup_push(lf_conn__call_cancelled, g);
    g->rc = lf_bound_call(&g->c->b, g->ctx, id, req, len, deadline);
    pthread_cleanup_pop(0);
}

#ifdef LF_REACTOR_H_INCLUDED
/* Contract: any thread, on the connection it holds (see THE FUNCTIONS). */
static inline void lf_conn_start(struct lf_conn_guard *g, uint64_t id, const void *req,
                                 size_t len, const struct timespec *deadline, lf_handler *h)
{
    pthread_cleanup_push(lf_conn__call_cancelled, g);
    g->rc = lf_bound_start(&g->c->b, g->ctx, id, req, len, deadline, h);
    pthread_cleanup_pop(0);
}
#endif

#endif /* LF_CONN_H_INCLUDED */

/*
 * MIT License
 *
 * Copyright (c) 2026 the lf authors
 *
 * Permission is hereby granted, free of charge, to any person obtaining a copy
 * of this software and associated documentation files (the "Software"), to deal
 * in the Software without restriction, including without limitation the rights
 * to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
 * copies of the Software, and to permit persons to whom the Software is
 * furnished to do so, subject to the following conditions:
 *
 * The above copyright notice and this permission notice shall be included in all
 * copies or substantial portions of the Software.
 *
 * THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
 * IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
 * FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
 * AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
 * LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
 * OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
 * SOFTWARE.
 */
