/* bench/oltp.c - the POSA2 Leader/Followers example as a runnable system:
 *
 *   remote clients --> FRONT-END communication server --MUX connections--> BACK-END
 *   (closed loop,      (lf_reactor + lf_bound, HYBRID:       (lf_reactor, a small
 *    64-byte wire.h)    waiting threads serve the reactor)    table of accounts)
 *
 *   oltp backend  [-p PORT] [-t T]
 *   oltp frontend [-p PORT] -b BACKEND_PORT [-m MUX] [-t T] [-d DEADLINE_MS]
 *   oltp demo     [-c CONNS] [-s SECONDS] [-t T] [-m MUX] [-w WORK] [-d DEADLINE_MS]
 *                 [-L LOADGEN] [-K KILL_AFTER_S]
 *
 * Build (from the repository root):
 *   gcc -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -O2 -Wall -Wextra
 *       -Wpedantic -Werror -I. -Ibench bench/oltp.c -o oltp
 *       $(pkg-config --cflags --libs liburcu-memb) -pthread
 *   Optional: -DLF_PROMOTE=LF_PROMOTE_FIFO (the pools' promotion order), -DOLTP_MAX_NEST=N.
 *
 * BACK-END ("the database")
 *   An unbound pool: T threads run lf_reactor_run. Each front-end connection carries
 *   frames of a 16-byte header (request id u64, body length u32 = 64, magic u32
 *   "OLTP") and a 64-byte wire.h request. Per frame, the "transaction": wire_serve()
 *   (the request's CPU work), then a transfer of one unit between two of 1024
 *   accounts, both locked in index order (no dead-lock), and the reply: the same
 *   header and the 64-byte reply. At exit it checks the table: the balances still
 *   sum to what they started with and every transfer touched exactly two accounts.
 *   Frames of one connection run concurrently (the front-end multiplexes many client
 *   requests onto few connections): the handler takes ONE whole frame out of the
 *   connection's receive buffer, posts a notification to itself if another whole
 *   frame is buffered, reactivates the handle (lf_reactor_reactivate, then returns
 *   LF_RESUMED) and only then runs the transaction, so the next frame goes to
 *   another thread meanwhile. The receive buffer is touched only by the thread that
 *   holds the dispatch; replies leave in any order, each written whole under the
 *   connection's write mutex, so two replies never interleave.
 *
 * FRONT-END ("the communication server")
 *   Follows wire.h's SERVER CONTRACT towards the clients. It opens MUX connections
 *   to the back-end, each an lf_bound ATTACHED to the front-end's reactor (HYBRID,
 *   lf_bound.h): a thread waiting for a back-end reply keeps turning the reactor, so
 *   it serves other clients' requests, new connections and the back-end's replies
 *   meanwhile. However many requests are in flight, a waiting thread is not lost to
 *   the server, and nothing can dead-lock for want of threads.
 *   A client's handler reads what is there, and for each whole 64-byte request
 *   picks a connection round robin (skipping failed ones), calls lf_bound_call with
 *   a fresh id (the connection's atomic sequence number, never reused, so a late
 *   reply can never be taken for a new one), and writes the reply back. The frame,
 *   the context and the reply buffer are on the stack: no allocation per request.
 *   The handler returns LF_KEEP: one dispatch at a time per client connection, so a
 *   pipelined client gets its replies in request order.
 *
 *   NESTING. In hybrid mode a handler's lf_bound_call may dispatch another client's
 *   handler on the same stack (a nested upcall), which may call again, and so on.
 *   Bounded twice:
 *   - structurally: a client handle stays deactivated for its whole dispatch
 *     (LF_KEEP, never LF_RESUMED), so each client connection is on at most one
 *     thread's stack at most once: the depth is at most the number of client
 *     connections (with closed-loop clients, also the number of requests in flight);
 *   - explicitly, since the scaling rows open 10,000 connections: a thread already
 *     OLTP_MAX_NEST calls deep does not take a new request. It deactivates that
 *     client's handle, keeps it on a per-thread list and returns LF_KEEP; when its
 *     innermost call returns it reactivates the list (events that came meanwhile are
 *     kept by the reactor and delivered then, to whichever thread is free). The
 *     list is empty whenever the thread is not OLTP_MAX_NEST deep, so it never
 *     outlives the handlers on the stack. Counted in "deferred".
 *   A nested call also delays its outer request's reply until the inner one is in
 *   (the outer reply waits in its context): a latency cost, not a correctness one.
 *
 *   FAILURE. A back-end connection that closes or breaks fails every call in flight
 *   on it at once (lf_bound: ECONNRESET, EPROTO); a call can also time out (-d, 5 s
 *   by default). Either way the front-end shuts that client's connection down (the
 *   client sees EOF) and counts it. It never retries: the transaction may have run
 *   (at most once, not at least once). Later requests go to the connections left;
 *   with none left they fail the same way, at once.
 *
 *   SIGTERM / SIGINT (a signalfd handle of the reactor): both servers stop their
 *   reactor, join their threads, print one stats line on stderr and exit 0:
 *     fe calls= ok= failed= reset= timedout= no_backend= closed= clients= max_nest=
 *        deferred= bound_replies= handed_off= own= stray= timeouts= reads=
 *        promotions= dispatched= stale= busy_events= kicks=
 *     (bound_*..reads: the MUX bounds' lf_bound_stats summed; promotions..kicks: the
 *     front-end reactor's lf_reactor_stats)
 *     be txns= conns= errors= balance_sum= expected_sum= touches= consistent=
 *   handed_off: replies the reading thread handed to another waiting thread; own:
 *   replies read by the thread that waited for them (the hybrid's cheap case).
 *
 * DEMO
 *   Starts the back-end and the front-end (fork + exec of this binary: separate
 *   processes, as the pattern's system has), then runs the clients against the
 *   front-end: the load generator at -L (bench/loadgen: -p -c -d -w -P are passed),
 *   or else the built-in client: CONNS closed-loop connections on one epoll thread,
 *   every reply checked with wire_check (id, connection and every byte), and after
 *   SECONDS the last replies awaited (5 s at most). Then SIGTERM to both servers, and
 *   one summary line. Exit 0 only if every reply checked out, none was lost, no
 *   connection was closed, both servers exited 0 on SIGTERM, the back-end's table is
 *   consistent and it ran exactly as many transactions as the front-end completed.
 *   -K S kills the back-end (SIGKILL) S seconds into the run: then the pass rule is
 *   that no request hangs: every client request either got its right reply or its
 *   connection was closed, the front-end counted exactly those closes, and it still
 *   exits cleanly on SIGTERM.
 *
 * CAVEATS
 *   - Writes to clients block the thread (poll, 1 s at most, then the client is
 *     dropped) when a client does not read its replies: a thread in that poll does
 *     not serve the reactor. lf_bound_send does the same towards the back-end.
 *   - The back-end's reply write waits 1 s at most for room, then fails that
 *     connection (the front-end fails its calls): a mutual stall (both sides' socket
 *     buffers full) ends in explicit failures, not a hang. Closed-loop clients keep
 *     in-flight bytes far below socket buffer sizes.
 *   - A failed back-end connection is not re-opened (a reconnect needs a new lf_bound,
 *     and lf_bound_destroy may not run in a handler).
 */
#define LF_BOUND_REACTOR 1
#include "lf_bound.h"
#include "srv_common.h"
#include "wire.h"

#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>

#ifndef OLTP_MAX_NEST
#define OLTP_MAX_NEST 32 /* lf_bound_call frames on one thread's stack, at most */
#endif
#if OLTP_MAX_NEST < 1
#error "oltp.c: OLTP_MAX_NEST must be at least 1"
#endif

#define OLTP_MAGIC 0x50544C4Fu /* "OLTP" in memory, little endian */
#define HDR 16
#define FRAME (HDR + WIRE_SIZE)
#define ACCOUNTS 1024          /* a power of two */
#define OPENING_BALANCE 1000
#define BE_INBUF (64 * FRAME)      /* per back-end connection */
#define FE_INBUF (16 * WIRE_SIZE)  /* per client connection: 16 pipelined requests */
#define WRITE_WAIT_MS 1000         /* a peer that reads nothing for this long is dropped */

#define CONTAINER(p, type, member) ((type *)(void *)((char *)(p) - offsetof(type, member)))

#define RELAXED memory_order_relaxed
typedef _Atomic unsigned long long counter;

static void count(counter *c)
{
    atomic_fetch_add_explicit(c, 1ULL, RELAXED);
}

static unsigned long long get(counter *c)
{
    return atomic_load_explicit(c, RELAXED);
}

static void die_rc(const char *what, int rc)
{
    errno = rc;
    srv_die(what);
}

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void frame_header(unsigned char *f, uint64_t id)
{
    uint32_t len = WIRE_SIZE, magic = OLTP_MAGIC;
    memcpy(f, &id, 8);
    memcpy(f + 8, &len, 4);
    memcpy(f + 12, &magic, 4);
}

static int frame_ok(const unsigned char *f)
{
    return wire_get32(f + 8) == WIRE_SIZE && wire_get32(f + 12) == OLTP_MAGIC;
}

/* All n bytes to a non-blocking socket, waiting at most ms for room each time it is
 * full. 0, ETIMEDOUT, or the error. */
static int write_all(int fd, const void *buf, size_t n, int ms)
{
    const char *p = (const char *)buf;
    while (n > 0) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k > 0) {
            p += k;
            n -= (size_t)k;
        } else if (k < 0 && errno == EINTR) {
            continue;
        } else if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd pfd;
            int r;
            pfd.fd = fd;
            pfd.events = POLLOUT;
            pfd.revents = 0;
            r = poll(&pfd, 1, ms);
            if (r == 0)
                return ETIMEDOUT;
            if (r < 0 && errno != EINTR)
                return errno;
        } else {
            return k < 0 ? errno : EIO;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ >>server
 * What both servers share: a reactor, its acceptor, SIGTERM/SIGINT as a signalfd
 * handle, T threads running the reactor. */

struct server {
    lf_reactor r;
    lf_handler acceptor;
    lf_handler sig;
};

static int on_signal(lf_handler *h, int fd, uint32_t events)
{
    struct server *s = CONTAINER(h, struct server, sig);
    struct signalfd_siginfo si;
    (void)events;
    while (read(fd, &si, sizeof si) == (ssize_t)sizeof si) {
    }
    lf_reactor_stop(&s->r); /* every thread returns from lf_reactor_run; main reports */
    return LF_KEEP;
}

/* Before any thread exists (liburcu's too): the signals go to the signalfd only. */
static void server_block_signals(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    srv_raise_nofile();
}

static void server_register(struct server *s, int lfd, int (*on_accept)(lf_handler *, int, uint32_t))
{
    sigset_t set;
    int rc;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    lf_handler_init(&s->acceptor, on_accept, NULL);
    lf_handler_init(&s->sig, on_signal, NULL);
    if ((rc = lf_reactor_register(&s->r, &s->acceptor, lfd, LF_EV_ACCEPT)) != 0)
        die_rc("lf_reactor_register", rc);
    if ((rc = lf_reactor_register_signal(&s->r, &s->sig, &set)) != 0)
        die_rc("lf_reactor_register_signal", rc);
}

static void *server_thread(void *arg)
{
    struct server *s = (struct server *)arg;
    int rc = lf_reactor_run(&s->r, NULL);
    if (rc != ECANCELED)
        fprintf(stderr, "lf_reactor_run: %s\n", strerror(rc));
    return NULL;
}

/* Run the reactor on `threads` threads until SIGTERM/SIGINT stops it. */
static void server_run(struct server *s, int threads)
{
    pthread_t *th = (pthread_t *)calloc((size_t)threads, sizeof *th);
    if (th == NULL)
        die_rc("calloc", ENOMEM);
    for (int i = 0; i < threads; i++)
        if (pthread_create(&th[i], NULL, server_thread, s) != 0)
            die_rc("pthread_create", EAGAIN);
    for (int i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    free(th);
}

/* Accept every pending connection: non-blocking, TCP_NODELAY; -1 on a hard error. */
static int accept_one(int lfd)
{
    for (;;) {
        int fd = accept(lfd, NULL, NULL);
        if (fd >= 0) {
            if (srv_nonblock(fd) != 0) {
                close(fd);
                continue;
            }
            srv_nodelay(fd);
            return fd;
        }
        if (errno == EINTR || errno == ECONNABORTED)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            perror("accept");
        return -1;
    }
}

/* Register an accepted connection for reading (from the acceptor's handler). Its
 * client has usually sent the first request already: lf_reactor_register publishes
 * the handler before the backend watches the fd, so that first event finds it (an
 * earlier version of the header did not; this demo found it, t_reactor_ready keeps
 * it fixed). */
static int register_conn(lf_reactor *r, lf_handler *h, int fd)
{
    return lf_reactor_register(r, h, fd, LF_EV_READ);
}

static void parse_int(const char *opt, const char *v, int *out)
{
    char *end;
    long x = strtol(v, &end, 10);
    if (*v == '\0' || *end != '\0' || x < 0 || x > 1000000000L) {
        fprintf(stderr, "oltp: bad value for %s: %s\n", opt, v);
        exit(2);
    }
    *out = (int)x;
}

/* ------------------------------------------------------------------ >>backend */

struct account {
    _Alignas(64) pthread_mutex_t lock;
    long long balance;
    unsigned long long touches; /* transfers that involved this account */
};

struct bconn {
    lf_handler h;
    pthread_mutex_t wlock; /* one reply on the wire at a time */
    /* the dispatch owner's only: frames read and not yet taken, in[start, end) */
    unsigned start, end;
    unsigned char in[BE_INBUF];
};

static struct {
    struct server s;
    struct account acct[ACCOUNTS];
    counter txns, conns, errors;
} be;

/* The transaction: the request's CPU work, then one unit moves between two
 * accounts chosen by the request, both locked in index order. */
static void be_transaction(unsigned char *m)
{
    uint64_t id = wire_get64(m);
    uint32_t conn = wire_get32(m + 8);
    unsigned from = (unsigned)((id * 31u + conn * 7919u) & (ACCOUNTS - 1));
    unsigned to = (unsigned)((from + 1u + id % (ACCOUNTS - 1)) & (ACCOUNTS - 1)); /* != from */
    struct account *lo = &be.acct[from < to ? from : to], *hi = &be.acct[from < to ? to : from];

    wire_serve(m);
    pthread_mutex_lock(&lo->lock);
    pthread_mutex_lock(&hi->lock);
    be.acct[from].balance -= 1;
    be.acct[to].balance += 1;
    lo->touches++;
    hi->touches++;
    pthread_mutex_unlock(&hi->lock);
    pthread_mutex_unlock(&lo->lock);
    count(&be.txns);
}

static void be_fail(struct bconn *c, int fd)
{
    count(&be.errors);
    shutdown(fd, SHUT_RDWR); /* the front-end sees it now; the fd closes after handle_close */
    (void)lf_reactor_remove(&be.s.r, &c->h); /* ENOENT: another thread did it already */
}

static int be_on_conn(lf_handler *h, int fd, uint32_t events)
{
    struct bconn *c = CONTAINER(h, struct bconn, h);
    unsigned char f[FRAME];
    int rc;
    (void)events;

    if (c->end - c->start < FRAME) {
        ssize_t n;
        if (c->start > 0) {
            memmove(c->in, c->in + c->start, c->end - c->start);
            c->end -= c->start;
            c->start = 0;
        }
        n = read(fd, c->in + c->end, sizeof c->in - c->end);
        if (n == 0)
            return LF_REMOVE; /* the front-end hung up */
        if (n < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? LF_KEEP : LF_REMOVE;
        c->end += (unsigned)n;
        if (c->end - c->start < FRAME)
            return LF_KEEP; /* a partial frame: wait for the rest */
    }
    memcpy(f, c->in + c->start, FRAME);
    c->start += FRAME;
    /* Another whole frame is already buffered: the socket may never be readable
     * again for it, so post it as a notification while we still hold the dispatch
     * (it stays pending), and the reactivation below queues it for the next free
     * thread. After the reactivation c->in, start and end belong to that thread. */
    if (c->end - c->start >= FRAME)
        (void)lf_reactor_notify(&be.s.r, h, LF_EV_NOTIFY);
    (void)lf_reactor_reactivate(&be.s.r, h);

    /* From here on other threads may run this handler too: only f (ours), wlock
     * and fd (open until handle_close, which waits for us to return) are used. */
    if (!frame_ok(f)) {
        be_fail(c, fd);
        return LF_RESUMED;
    }
    be_transaction(f + HDR);
    pthread_mutex_lock(&c->wlock);
    rc = write_all(fd, f, FRAME, WRITE_WAIT_MS);
    pthread_mutex_unlock(&c->wlock);
    if (rc != 0)
        be_fail(c, fd);
    return LF_RESUMED;
}

static void be_on_close(lf_handler *h)
{
    struct bconn *c = CONTAINER(h, struct bconn, h);
    pthread_mutex_destroy(&c->wlock);
    free(c);
}

static int be_on_accept(lf_handler *h, int lfd, uint32_t events)
{
    int fd;
    (void)h;
    (void)events;
    while ((fd = accept_one(lfd)) >= 0) {
        struct bconn *c = (struct bconn *)calloc(1, sizeof *c);
        if (c == NULL) {
            close(fd);
            continue;
        }
        pthread_mutex_init(&c->wlock, NULL);
        lf_handler_init(&c->h, be_on_conn, be_on_close);
        if (register_conn(&be.s.r, &c->h, fd) != 0) {
            pthread_mutex_destroy(&c->wlock);
            free(c);
            close(fd);
            continue;
        }
        count(&be.conns);
    }
    return LF_KEEP;
}

static int backend_main(int argc, char **argv)
{
    struct srv_args a;
    long long sum = 0;
    unsigned long long touches = 0;
    int lfd, rc, ok;

    a.port = 0;
    a.threads = 4;
    for (int i = 0; i < argc; i += 2) {
        if (i + 1 < argc && strcmp(argv[i], "-p") == 0)
            parse_int("-p", argv[i + 1], &a.port);
        else if (i + 1 < argc && strcmp(argv[i], "-t") == 0)
            parse_int("-t", argv[i + 1], &a.threads);
        else {
            fprintf(stderr, "usage: oltp backend [-p PORT] [-t THREADS]\n");
            return 2;
        }
    }
    if (a.threads < 1)
        a.threads = 1;
    server_block_signals();
    for (int i = 0; i < ACCOUNTS; i++) {
        pthread_mutex_init(&be.acct[i].lock, NULL);
        be.acct[i].balance = OPENING_BALANCE;
    }
    if ((rc = lf_reactor_init(&be.s.r)) != 0)
        die_rc("lf_reactor_init", rc);
    lfd = srv_listen(&a, 1);
    server_register(&be.s, lfd, be_on_accept);
    server_run(&be.s, a.threads);

    /* every thread has returned: the table is quiet */
    for (int i = 0; i < ACCOUNTS; i++) {
        sum += be.acct[i].balance;
        touches += be.acct[i].touches;
        pthread_mutex_destroy(&be.acct[i].lock);
    }
    ok = sum == (long long)ACCOUNTS * OPENING_BALANCE && touches == 2 * get(&be.txns);
    fprintf(stderr, "be txns=%llu conns=%llu errors=%llu balance_sum=%lld expected_sum=%lld "
            "touches=%llu consistent=%s\n",
            get(&be.txns), get(&be.conns), get(&be.errors), sum,
            (long long)ACCOUNTS * OPENING_BALANCE, touches, ok ? "yes" : "NO");
    fflush(stderr);
    if ((rc = lf_reactor_destroy(&be.s.r)) != 0)
        die_rc("lf_reactor_destroy", rc);
    return ok ? 0 : 1;
}

/* ------------------------------------------------------------------ >>frontend */

struct mux {
    lf_bound b;               /* attached to the front-end's reactor */
    _Atomic unsigned long long seq; /* request ids on this connection, never reused */
    _Atomic int dead;         /* a call saw the connection fail: pick another */
};

struct fconn {
    lf_handler h;
    unsigned have;              /* bytes in in[] */
    struct fconn *next_deferred; /* on its deferring thread's list */
    unsigned char in[FE_INBUF];
};

static struct {
    struct server s;
    struct mux *mux;
    int nmux;
    long long deadline_ns;
    _Atomic unsigned rr;
    counter calls, ok, f_reset, f_timeout, f_other, no_backend, closed, clients, deferred;
    _Atomic unsigned max_nest;
} fe;

/* lf_bound_call frames on this thread's stack, and the client handles this thread
 * deactivated because it was OLTP_MAX_NEST deep (see NESTING above) */
static _Thread_local unsigned fe_depth;
static _Thread_local struct fconn *fe_deferred;

static int fe_parse(void *user, const unsigned char *hdr, uint64_t *id, size_t *len)
{
    (void)user;
    if (wire_get32(hdr + 12) != OLTP_MAGIC)
        return EPROTO;
    *id = wire_get64(hdr);
    *len = wire_get32(hdr + 8);
    return 0;
}

static struct mux *fe_pick(void)
{
    unsigned start = atomic_fetch_add_explicit(&fe.rr, 1u, RELAXED);
    for (int i = 0; i < fe.nmux; i++) {
        struct mux *m = &fe.mux[(start + (unsigned)i) % (unsigned)fe.nmux];
        if (!atomic_load_explicit(&m->dead, RELAXED))
            return m;
    }
    return NULL;
}

static void fe_note_depth(unsigned d)
{
    unsigned seen = atomic_load_explicit(&fe.max_nest, RELAXED);
    while (d > seen && !atomic_compare_exchange_weak_explicit(&fe.max_nest, &seen, d, RELAXED,
                                                              RELAXED)) {
    }
}

/* Forward one request to the back-end and wait for its reply (hybrid: this thread
 * serves the reactor meanwhile). 0, or why it failed. */
static int fe_forward(const unsigned char *req, unsigned char *reply)
{
    unsigned char f[FRAME];
    lf_bound_ctx ctx;
    struct timespec dl;
    struct mux *m = fe_pick();
    uint64_t id;
    int rc;

    count(&fe.calls);
    if (m == NULL) {
        count(&fe.no_backend);
        return ECONNRESET;
    }
    id = atomic_fetch_add_explicit(&m->seq, 1ULL, RELAXED);
    frame_header(f, id);
    memcpy(f + HDR, req, WIRE_SIZE);
    if ((rc = lf_bound_ctx_init(&ctx, reply, WIRE_SIZE, 0)) != 0) {
        count(&fe.f_other);
        return rc;
    }
    lf_deadline_in(&dl, fe.deadline_ns);
    fe_note_depth(++fe_depth);
    rc = lf_bound_call(&m->b, &ctx, id, f, FRAME, &dl);
    fe_depth--;
    /* Handles deferred while this call was the OLTP_MAX_NEST-th: give them back.
     * A suspended handle keeps the events that arrived meanwhile; reactivation
     * queues it for the next free thread (maybe this one, one level less deep). */
    while (fe_deferred != NULL) {
        struct fconn *d = fe_deferred;
        fe_deferred = d->next_deferred;
        d->next_deferred = NULL;
        (void)lf_reactor_reactivate(&fe.s.r, &d->h);
    }
    if (rc == 0 && ctx.len != WIRE_SIZE)
        rc = EPROTO;
    lf_bound_ctx_destroy(&ctx);
    if (rc == 0) {
        count(&fe.ok);
    } else if (rc == ETIMEDOUT) {
        count(&fe.f_timeout);
    } else if (rc == ECONNRESET || rc == EPROTO) {
        /* the connection failed (max_body = cap: a bad length fails it whole) */
        atomic_store_explicit(&m->dead, 1, RELAXED);
        count(&fe.f_reset);
    } else {
        count(&fe.f_other); /* ECANCELED: the reactor was stopped under us */
    }
    return rc;
}

static int fe_on_client(lf_handler *h, int fd, uint32_t events)
{
    struct fconn *c = CONTAINER(h, struct fconn, h);
    unsigned off = 0;
    ssize_t n;
    (void)events;

    if (fe_depth >= OLTP_MAX_NEST) {
        /* too deep to take a request: park the handle until our innermost call
         * returns (fe_forward reactivates it); the request stays in the socket */
        if (lf_reactor_deactivate(&fe.s.r, h) == 0) {
            c->next_deferred = fe_deferred;
            fe_deferred = c;
            count(&fe.deferred);
        }
        return LF_KEEP;
    }
    n = read(fd, c->in + c->have, sizeof c->in - c->have);
    if (n == 0)
        return LF_REMOVE; /* the client left */
    if (n < 0)
        return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? LF_KEEP : LF_REMOVE;
    c->have += (unsigned)n;
    while (c->have - off >= WIRE_SIZE) {
        unsigned char reply[WIRE_SIZE];
        if (fe_forward(c->in + off, reply) != 0 ||
            write_all(fd, reply, WIRE_SIZE, WRITE_WAIT_MS) != 0) {
            /* explicit failure: the client sees its connection end, now */
            count(&fe.closed);
            shutdown(fd, SHUT_RDWR);
            return LF_REMOVE;
        }
        off += WIRE_SIZE;
    }
    memmove(c->in, c->in + off, c->have - off);
    c->have -= off;
    return LF_KEEP; /* one dispatch at a time: replies leave in request order */
}

static void fe_on_client_close(lf_handler *h)
{
    free(CONTAINER(h, struct fconn, h));
}

static int fe_on_accept(lf_handler *h, int lfd, uint32_t events)
{
    int fd;
    (void)h;
    (void)events;
    while ((fd = accept_one(lfd)) >= 0) {
        struct fconn *c = (struct fconn *)calloc(1, sizeof *c);
        if (c == NULL) {
            close(fd);
            continue;
        }
        lf_handler_init(&c->h, fe_on_client, fe_on_client_close);
        if (register_conn(&fe.s.r, &c->h, fd) != 0) {
            free(c);
            close(fd);
            continue;
        }
        count(&fe.clients);
    }
    return LF_KEEP;
}

static int connect_local(int port)
{
    struct sockaddr_in sin;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    memset(&sin, 0, sizeof sin);
    sin.sin_family = AF_INET;
    sin.sin_port = htons((unsigned short)port);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sin, sizeof sin) != 0) {
        close(fd);
        return -1;
    }
    srv_nodelay(fd);
    return fd;
}

static int frontend_main(int argc, char **argv)
{
    struct srv_args a;
    struct lf_bound_hooks hooks;
    struct lf_bound_stats st, sum;
    struct lf_reactor_stats rs;
    int bport = -1, nmux = 2, deadline_ms = 5000, lfd, rc;

    a.port = 0;
    a.threads = 4;
    for (int i = 0; i < argc; i += 2) {
        const char *o = argv[i];
        if (i + 1 >= argc)
            o = "?";
        if (strcmp(o, "-p") == 0)
            parse_int(o, argv[i + 1], &a.port);
        else if (strcmp(o, "-t") == 0)
            parse_int(o, argv[i + 1], &a.threads);
        else if (strcmp(o, "-b") == 0)
            parse_int(o, argv[i + 1], &bport);
        else if (strcmp(o, "-m") == 0)
            parse_int(o, argv[i + 1], &nmux);
        else if (strcmp(o, "-d") == 0)
            parse_int(o, argv[i + 1], &deadline_ms);
        else {
            fprintf(stderr, "usage: oltp frontend [-p PORT] -b BACKEND_PORT [-m MUX] "
                            "[-t THREADS] [-d DEADLINE_MS]\n");
            return 2;
        }
    }
    if (bport <= 0 || nmux < 1) {
        fprintf(stderr, "oltp frontend: -b BACKEND_PORT is required, -m at least 1\n");
        return 2;
    }
    if (a.threads < 1)
        a.threads = 1;
    fe.deadline_ns = (long long)deadline_ms * 1000000LL;
    server_block_signals();
    if ((rc = lf_reactor_init(&fe.s.r)) != 0)
        die_rc("lf_reactor_init", rc);

    memset(&hooks, 0, sizeof hooks);
    hooks.header_len = HDR;
    hooks.parse_header = fe_parse;
    hooks.max_body = WIRE_SIZE; /* = the contexts' cap: a wrong length fails the connection */
    fe.nmux = nmux;
    if ((fe.mux = (struct mux *)calloc((size_t)nmux, sizeof *fe.mux)) == NULL)
        die_rc("calloc", ENOMEM);
    for (int i = 0; i < nmux; i++) {
        int fd = connect_local(bport);
        if (fd < 0)
            srv_die("connect to the back-end");
        if ((rc = lf_bound_init(&fe.mux[i].b, fd, &hooks)) != 0)
            die_rc("lf_bound_init", rc);
        if ((rc = lf_bound_attach(&fe.mux[i].b, &fe.s.r)) != 0) /* the reactor owns fd now */
            die_rc("lf_bound_attach", rc);
    }
    lfd = srv_listen(&a, 1); /* "port N": the back-end connections are up */
    server_register(&fe.s, lfd, fe_on_accept);
    server_run(&fe.s, a.threads);

    memset(&sum, 0, sizeof sum);
    for (int i = 0; i < nmux; i++) {
        lf_bound_stats(&fe.mux[i].b, &st);
        sum.replies += st.replies;
        sum.handed_off += st.handed_off;
        sum.own += st.own;
        sum.stray += st.stray;
        sum.timeouts += st.timeouts;
        sum.reads += st.reads;
    }
    lf_reactor_stats(&fe.s.r, &rs);
    fprintf(stderr, "fe calls=%llu ok=%llu failed=%llu reset=%llu timedout=%llu no_backend=%llu "
            "closed=%llu clients=%llu max_nest=%u deferred=%llu bound_replies=%llu "
            "handed_off=%llu own=%llu stray=%llu timeouts=%llu reads=%llu promotions=%llu "
            "dispatched=%llu stale=%llu busy_events=%llu kicks=%llu\n",
            get(&fe.calls), get(&fe.ok), get(&fe.calls) - get(&fe.ok), get(&fe.f_reset),
            get(&fe.f_timeout), get(&fe.no_backend), get(&fe.closed), get(&fe.clients),
            atomic_load_explicit(&fe.max_nest, RELAXED), get(&fe.deferred), sum.replies,
            sum.handed_off, sum.own, sum.stray, sum.timeouts, sum.reads, rs.pool.promotions,
            rs.dispatched, rs.stale, rs.deferred, rs.kicks);
    fflush(stderr);

    for (int i = 0; i < nmux; i++) {
        lf_bound_shutdown(&fe.mux[i].b);
        if ((rc = lf_bound_destroy(&fe.mux[i].b)) != 0) /* waits for its handle_close */
            die_rc("lf_bound_destroy", rc);
    }
    free(fe.mux);
    if ((rc = lf_reactor_destroy(&fe.s.r)) != 0)
        die_rc("lf_reactor_destroy", rc);
    return 0;
}

/* ------------------------------------------------------------------ >>client
 * The built-in closed-loop client: one epoll thread, CONNS connections, one request
 * outstanding on each, every reply checked. */

#define LAT_US 100000 /* latency histogram: 1 us steps up to 100 ms, then overflow */

struct cconn {
    int fd;
    uint32_t idx;
    int busy;          /* a request is outstanding */
    unsigned have;     /* reply bytes in rx */
    uint64_t id;       /* of the outstanding request */
    long long sent_ns;
    unsigned char rx[WIRE_SIZE];
};

struct client_result {
    unsigned long long replies, window_replies, errors, closed, lost;
    double secs;
    unsigned p50_us, p99_us, p999_us;
};

static unsigned lat_hist[LAT_US + 1];

static unsigned lat_pct(unsigned long long total, double p)
{
    unsigned long long want = (unsigned long long)(p * (double)total + 0.5), seen = 0;
    if (want == 0)
        want = 1;
    for (unsigned i = 0; i <= LAT_US; i++) {
        seen += lat_hist[i];
        if (seen >= want)
            return i;
    }
    return LAT_US;
}

static int client_send(struct cconn *c, uint32_t work)
{
    unsigned char m[WIRE_SIZE];
    wire_fill(m, c->id, c->idx, work);
    c->sent_ns = now_ns();
    c->busy = 1;
    c->have = 0;
    return write_all(c->fd, m, WIRE_SIZE, WRITE_WAIT_MS);
}

static void client_drop(int ep, struct cconn *c)
{
    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    c->fd = -1;
    c->busy = 0;
}

/* kill_after_ns > 0: SIGKILL kill_pid that long after the start (the -K test). */
static int run_client(int port, int conns, int secs, uint32_t work, pid_t kill_pid,
                      long long kill_after_ns, struct client_result *res)
{
    struct cconn *cc = (struct cconn *)calloc((size_t)conns, sizeof *cc);
    struct epoll_event evs[64];
    long long start, end, drain_end, kill_at;
    int ep = epoll_create1(EPOLL_CLOEXEC), live = 0, measuring = 1;

    memset(res, 0, sizeof *res);
    if (cc == NULL || ep < 0)
        return -1;
    for (int i = 0; i < conns; i++) {
        struct epoll_event ev;
        cc[i].idx = (uint32_t)i;
        if ((cc[i].fd = connect_local(port)) < 0 || srv_nonblock(cc[i].fd) != 0) {
            perror("oltp demo: connect to the front-end");
            return -1;
        }
        ev.events = EPOLLIN;
        ev.data.ptr = &cc[i];
        if (epoll_ctl(ep, EPOLL_CTL_ADD, cc[i].fd, &ev) != 0)
            return -1;
    }
    start = now_ns();
    end = start + (long long)secs * 1000000000LL;
    drain_end = end + 5000000000LL;
    kill_at = kill_after_ns > 0 ? start + kill_after_ns : 0;
    for (int i = 0; i < conns; i++) {
        if (client_send(&cc[i], work) != 0) {
            res->closed++;
            client_drop(ep, &cc[i]);
        } else {
            live++;
        }
    }
    for (;;) {
        long long now = now_ns();
        int n;
        if (kill_at && now >= kill_at) {
            kill(kill_pid, SIGKILL);
            fprintf(stderr, "oltp demo: killed the back-end (pid %d) %.1f s into the run\n",
                    (int)kill_pid, (double)(now - start) / 1e9);
            kill_at = 0;
        }
        if (measuring && now >= end) {
            measuring = 0; /* from now on no new requests: collect the last replies */
            res->secs = (double)(now - start) / 1e9;
        }
        if (!measuring) {
            int busy = 0;
            for (int i = 0; i < conns; i++)
                busy += cc[i].busy;
            if (busy == 0 || now >= drain_end)
                break;
        } else if (live == 0) {
            res->secs = (double)(now - start) / 1e9;
            break; /* every connection is gone */
        }
        n = epoll_wait(ep, evs, 64, 10);
        for (int k = 0; k < n; k++) {
            struct cconn *c = (struct cconn *)evs[k].data.ptr;
            ssize_t got;
            if (c->fd < 0)
                continue;
            got = read(c->fd, c->rx + c->have, WIRE_SIZE - c->have);
            if (got < 0 && (errno == EAGAIN || errno == EINTR))
                continue;
            if (got <= 0) {
                /* closed by the server: an explicit failure if a request was out */
                if (c->busy)
                    res->closed++;
                client_drop(ep, c);
                live--;
                continue;
            }
            c->have += (unsigned)got;
            if (c->have < WIRE_SIZE)
                continue;
            if (!c->busy || wire_check(c->rx, c->id, c->idx) != 0) {
                res->errors++; /* the stream is out of step: stop using it */
                client_drop(ep, c);
                live--;
                continue;
            }
            now = now_ns();
            {
                long long us = (now - c->sent_ns) / 1000;
                lat_hist[us > LAT_US ? LAT_US : (us < 0 ? 0 : us)]++;
            }
            res->replies++;
            if (measuring)
                res->window_replies++;
            c->busy = 0;
            c->id++;
            if (measuring && client_send(c, work) != 0) {
                res->closed++;
                client_drop(ep, c);
                live--;
            }
        }
    }
    for (int i = 0; i < conns; i++) {
        if (cc[i].busy)
            res->lost++; /* neither a reply nor a close within the drain time: a hang */
        if (cc[i].fd >= 0)
            close(cc[i].fd);
    }
    close(ep);
    free(cc);
    res->p50_us = lat_pct(res->replies, 0.50);
    res->p99_us = lat_pct(res->replies, 0.99);
    res->p999_us = lat_pct(res->replies, 0.999);
    return 0;
}

/* ------------------------------------------------------------------ >>demo */

struct child {
    const char *name;
    pid_t pid;
    int out;   /* its stdout */
    FILE *err; /* its stderr, an unlinked temporary file */
    int status;
    char stats[1024]; /* its stats line ("fe ..." / "be ..."), if any */
};

static void cloexec(int fd)
{
    fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC);
}

static int spawn(struct child *ch, const char *path, char *const argv[])
{
    int p[2];
    if (pipe(p) != 0 || (ch->err = tmpfile()) == NULL)
        return -1;
    cloexec(p[0]);
    cloexec(p[1]);
    cloexec(fileno(ch->err));
    fflush(NULL);
    if ((ch->pid = fork()) < 0)
        return -1;
    if (ch->pid == 0) {
        dup2(p[1], 1); /* dup2 clears close-on-exec on the copies */
        dup2(fileno(ch->err), 2);
        execv(path, argv);
        _exit(127);
    }
    close(p[1]);
    ch->out = p[0];
    return 0;
}

/* The "port N" line (within timeout_ms), or -1. */
static int read_port(struct child *ch, int timeout_ms)
{
    char buf[256];
    size_t len = 0;
    long long until = now_ns() + (long long)timeout_ms * 1000000LL;
    while (len < sizeof buf - 1) {
        struct pollfd pfd;
        ssize_t n;
        int port;
        char *nl;
        pfd.fd = ch->out;
        pfd.events = POLLIN;
        pfd.revents = 0;
        if (poll(&pfd, 1, (int)((until - now_ns()) / 1000000LL) + 1) <= 0 || now_ns() > until)
            return -1;
        if ((n = read(ch->out, buf + len, sizeof buf - 1 - len)) <= 0)
            return -1;
        len += (size_t)n;
        buf[len] = '\0';
        if ((nl = strchr(buf, '\n')) != NULL)
            return sscanf(buf, "port %d", &port) == 1 ? port : -1;
    }
    return -1;
}

/* Wait for ch to exit within timeout_ms (after SIGKILL if it does not): its exit
 * status, or -1 if it had to be killed. Then collect its stderr. */
static int reap(struct child *ch, int timeout_ms)
{
    long long until = now_ns() + (long long)timeout_ms * 1000000LL;
    int st = 0, hung = 0;
    char line[1024];
    for (;;) {
        pid_t w = waitpid(ch->pid, &st, WNOHANG);
        if (w == ch->pid)
            break;
        if (w < 0 && errno != EINTR)
            break;
        if (now_ns() > until && !hung) {
            fprintf(stderr, "oltp demo: %s did not exit in time: killing it\n", ch->name);
            kill(ch->pid, SIGKILL);
            hung = 1;
        }
        usleep(10000);
    }
    ch->status = hung ? -1 : (WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    rewind(ch->err);
    while (fgets(line, sizeof line, ch->err) != NULL) {
        if ((strncmp(line, "fe ", 3) == 0 || strncmp(line, "be ", 3) == 0) &&
            ch->stats[0] == '\0') {
            line[strcspn(line, "\n")] = '\0';
            snprintf(ch->stats, sizeof ch->stats, "%s", line);
        } else {
            fprintf(stderr, "[%s] %s", ch->name, line);
        }
    }
    fclose(ch->err);
    close(ch->out);
    return ch->status;
}

static unsigned long long stat_field(const char *stats, const char *key)
{
    char pat[64];
    const char *p;
    snprintf(pat, sizeof pat, " %s=", key);
    p = strstr(stats, pat);
    return p ? strtoull(p + strlen(pat), NULL, 10) : 0ULL;
}

/* Run bench/loadgen against the front-end; its result line goes to *line. */
static int run_loadgen(const char *path, int port, int conns, int secs, int work, pid_t fe_pid,
                       pid_t kill_pid, long long kill_after_ns, char *line, size_t cap)
{
    struct child lg;
    char sp[16], sc[16], ss[16], sw[16], sfe[16];
    char *argv[] = { (char *)path, "-p", sp, "-c", sc, "-d", ss, "-w", sw, "-P", sfe, NULL };
    long long start = now_ns(), kill_at = kill_after_ns > 0 ? start + kill_after_ns : 0;
    long long until = start + ((long long)secs + 30) * 1000000000LL;
    size_t len = 0;
    int st = 0;

    snprintf(sp, sizeof sp, "%d", port);
    snprintf(sc, sizeof sc, "%d", conns);
    snprintf(ss, sizeof ss, "%d", secs);
    snprintf(sw, sizeof sw, "%d", work);
    snprintf(sfe, sizeof sfe, "%d", (int)fe_pid);
    memset(&lg, 0, sizeof lg);
    lg.name = "loadgen";
    if (spawn(&lg, path, argv) != 0)
        return -1;
    srv_nonblock(lg.out);
    line[0] = '\0';
    for (;;) {
        ssize_t n = read(lg.out, line + len, cap - 1 - len);
        if (n > 0) {
            len += (size_t)n;
            line[len] = '\0';
        }
        if (waitpid(lg.pid, &st, WNOHANG) == lg.pid)
            break;
        if (kill_at && now_ns() >= kill_at) {
            kill(kill_pid, SIGKILL);
            fprintf(stderr, "oltp demo: killed the back-end (pid %d)\n", (int)kill_pid);
            kill_at = 0;
        }
        if (now_ns() > until) {
            fprintf(stderr, "oltp demo: loadgen hangs: killing it\n");
            kill(lg.pid, SIGKILL);
        }
        usleep(10000);
    }
    for (ssize_t n; (n = read(lg.out, line + len, cap - 1 - len)) > 0;)
        len += (size_t)n;
    line[len] = '\0';
    line[strcspn(line, "\n")] = '\0';
    fclose(lg.err);
    close(lg.out);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int demo_main(int argc, char **argv)
{
    int conns = 16, secs = 5, threads = 4, nmux = 2, work = 0, deadline_ms = 5000, kill_s = -1;
    const char *loadgen = NULL, *self = "/proc/self/exe";
    char s_t[16], s_m[16], s_p[16], s_d[16];
    struct child bec, fec;
    struct client_result cr;
    char lgline[1024];
    int bport, fport, lg_rc = 0, pass;
    unsigned long long fe_ok, fe_closed, be_txns;

    for (int i = 0; i < argc; i += 2) {
        const char *o = i + 1 < argc ? argv[i] : "?";
        if (strcmp(o, "-c") == 0)
            parse_int(o, argv[i + 1], &conns);
        else if (strcmp(o, "-s") == 0)
            parse_int(o, argv[i + 1], &secs);
        else if (strcmp(o, "-t") == 0)
            parse_int(o, argv[i + 1], &threads);
        else if (strcmp(o, "-m") == 0)
            parse_int(o, argv[i + 1], &nmux);
        else if (strcmp(o, "-w") == 0)
            parse_int(o, argv[i + 1], &work);
        else if (strcmp(o, "-d") == 0)
            parse_int(o, argv[i + 1], &deadline_ms);
        else if (strcmp(o, "-K") == 0)
            parse_int(o, argv[i + 1], &kill_s);
        else if (strcmp(o, "-L") == 0)
            loadgen = argv[i + 1];
        else {
            fprintf(stderr, "usage: oltp demo [-c CONNS] [-s SECONDS] [-t THREADS] [-m MUX] "
                            "[-w WORK] [-d DEADLINE_MS] [-L LOADGEN] [-K KILL_AFTER_S]\n");
            return 2;
        }
    }
    if (conns < 1 || secs < 1 || threads < 1 || nmux < 1) {
        fprintf(stderr, "oltp demo: -c, -s, -t and -m must be at least 1\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    srv_raise_nofile();
    snprintf(s_t, sizeof s_t, "%d", threads);
    snprintf(s_m, sizeof s_m, "%d", nmux);
    snprintf(s_d, sizeof s_d, "%d", deadline_ms);

    memset(&bec, 0, sizeof bec);
    memset(&fec, 0, sizeof fec);
    bec.name = "backend";
    fec.name = "frontend";
    {
        char *bargv[] = { "oltp", "backend", "-p", "0", "-t", s_t, NULL };
        if (spawn(&bec, self, bargv) != 0 || (bport = read_port(&bec, 10000)) < 0) {
            fprintf(stderr, "oltp demo: the back-end did not start\n");
            return 2;
        }
    }
    snprintf(s_p, sizeof s_p, "%d", bport);
    {
        char *fargv[] = { "oltp", "frontend", "-p", "0", "-b", s_p, "-m", s_m, "-t", s_t,
                          "-d", s_d, NULL };
        if (spawn(&fec, self, fargv) != 0 || (fport = read_port(&fec, 10000)) < 0) {
            fprintf(stderr, "oltp demo: the front-end did not start\n");
            kill(bec.pid, SIGKILL);
            return 2;
        }
    }

    memset(&cr, 0, sizeof cr);
    lgline[0] = '\0';
    if (loadgen) {
        lg_rc = run_loadgen(loadgen, fport, conns, secs, work, fec.pid, bec.pid,
                            kill_s >= 0 ? kill_s * 1000000000LL + 1 : 0, lgline, sizeof lgline);
        fprintf(stderr, "oltp demo: loadgen exit %d: %s\n", lg_rc, lgline);
    } else if (run_client(fport, conns, secs, (uint32_t)work, bec.pid,
                          kill_s >= 0 ? kill_s * 1000000000LL + 1 : 0, &cr) != 0) {
        fprintf(stderr, "oltp demo: the client could not start\n");
        kill(fec.pid, SIGKILL);
        kill(bec.pid, SIGKILL);
        return 2;
    }

    kill(fec.pid, SIGTERM);
    reap(&fec, 10000);
    if (kill_s < 0)
        kill(bec.pid, SIGTERM);
    reap(&bec, 10000);

    fe_ok = stat_field(fec.stats, "ok");
    fe_closed = stat_field(fec.stats, "closed");
    be_txns = stat_field(bec.stats, "txns");
    if (kill_s < 0) {
        pass = fec.status == 0 && bec.status == 0 && fec.stats[0] && bec.stats[0] &&
               strstr(bec.stats, "consistent=yes") != NULL && be_txns == fe_ok &&
               stat_field(fec.stats, "failed") == 0;
        if (loadgen)
            pass = pass && lg_rc == 0;
        else
            pass = pass && cr.errors == 0 && cr.lost == 0 && cr.closed == 0 &&
                   cr.replies == fe_ok;
    } else {
        /* the back-end died: every request was answered right or failed explicitly */
        pass = fec.status == 0 && fec.stats[0] != '\0';
        if (loadgen) /* loadgen counts a closed connection as an error */
            pass = pass && stat_field(lgline, "errors") == fe_closed;
        else
            pass = pass && cr.errors == 0 && cr.lost == 0 && cr.closed == fe_closed &&
                   cr.replies == fe_ok;
    }
    if (loadgen)
        printf("oltp demo %s: conns=%d secs=%d threads=%d mux=%d work=%d loadgen: %s | %s | %s\n",
               pass ? "PASS" : "FAIL", conns, secs, threads, nmux, work, lgline, fec.stats,
               bec.stats[0] ? bec.stats : "be (killed)");
    else
        printf("oltp demo %s: conns=%d secs=%d threads=%d mux=%d work=%d requests=%llu "
               "replies/s=%.0f p50_us=%u p99_us=%u p999_us=%u errors=%llu lost=%llu closed=%llu "
               "| %s | %s\n",
               pass ? "PASS" : "FAIL", conns, secs, threads, nmux, work, cr.replies,
               cr.secs > 0 ? (double)cr.window_replies / cr.secs : 0.0, cr.p50_us, cr.p99_us,
               cr.p999_us, cr.errors, cr.lost, cr.closed, fec.stats,
               bec.stats[0] ? bec.stats : "be (killed)");
    return pass ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "backend") == 0)
        return backend_main(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "frontend") == 0)
        return frontend_main(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "demo") == 0)
        return demo_main(argc - 2, argv + 2);
    fprintf(stderr, "usage: oltp backend [-p PORT] [-t T]\n"
                    "       oltp frontend [-p PORT] -b BACKEND_PORT [-m MUX] [-t T] "
                    "[-d DEADLINE_MS]\n"
                    "       oltp demo [-c CONNS] [-s SECONDS] [-t T] [-m MUX] [-w WORK] "
                    "[-d DEADLINE_MS] [-L LOADGEN] [-K KILL_AFTER_S]\n");
    return 2;
}
