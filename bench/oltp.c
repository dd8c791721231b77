/* bench/oltp.c - the POSA2 Leader/Followers example as a runnable system:
 *
 *   remote clients --> FRONT-END communication server --MUX connections--> BACK-END
 *   (closed loop,      (lf_reactor + lf_bound, HYBRID:       (lf_reactor, a small
 *    64-byte wire.h)    waiting threads serve the reactor)    table of accounts)
 *
 * This file is the two servers (and main, which picks the command); the clients that
 * drive them are beside it: bench/oltp_demo.c (demo: measured, every reply checked)
 * and bench/oltp_soak.c (soak: churn, resets and stalls, every request accounted
 * for). bench/oltp.h holds what they share. One binary:
 *
 *   oltp backend  [-p PORT] [-t T] [-R STALL_MS]
 *   oltp frontend [-p PORT] -b BACKEND_PORT [-m MUX] [-t T] [-d DEADLINE_MS] [-R IDLE_MS]
 *   oltp demo     [-c CONNS] [-s SECONDS] [-t T] [-m MUX] [-w WORK] [-d DEADLINE_MS]
 *                 [-L LOADGEN] [-K KILL_AFTER_S]
 *   oltp soak     -s SECONDS [-c CONNS] [-t T] [-m MUX] [-w WORK] [-S SEED]
 *                 [-d DEADLINE_MS] [-i IDLE_MS]
 *
 * Build (from the repository root):
 *   gcc -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -O2 -Wall -Wextra
 *       -Wpedantic -Werror -I. -Ibench bench/oltp.c bench/oltp_demo.c bench/oltp_soak.c
 *       -o oltp $(pkg-config --cflags --libs liburcu-memb) -pthread
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
 *   -R STALL_MS (the soak's; off by default): SIGUSR1 shuts one front-end connection
 *   down, as a network fault would (the front-end must fail its calls and re-open
 *   it); SIGUSR2 makes the next transaction sleep STALL_MS first (its call times out,
 *   its reply comes late). The stats line gets breaks= and stalls=.
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
 *   client sees EOF) and counts it. It never retries a request it has sent: the
 *   transaction may have run (at most once, not at least once). A connection found
 *   failed before the request went out (lf_bound_expect refuses it) is skipped for
 *   the next one, since nothing was sent ("retried"). With no connection left,
 *   requests fail at once ("no_backend").
 *
 *   RESILIENCE (-R IDLE_MS: what the soak runs; off by default)
 *   - Failed back-end connections are re-opened by a maintenance thread (see
 *     RE-OPENING at struct mux); SIGUSR1 makes it break one itself (shutdown on its
 *     own dup of the socket), as a network fault would; SIGUSR2 all of them (until
 *     they are back, requests fail with no_backend).
 *   - A client connection quiet for IDLE_MS is closed: one lf_timer per connection,
 *     armed when it is accepted, re-armed when it fires on a connection that was
 *     busy, cancelled when the connection closes. A 100 ms periodic timer counts
 *     ticks and samples the calls in flight.
 *   - Before it closes a client's connection the front-end says why: a 64-byte
 *     NOTICE (id and conn all ones, the reason in the work field: reset, timeout,
 *     no_backend, other, idle), so that the client can account for every request.
 *   - Calls of requests whose conn field has the top bit set (SOAK_DOOMED: the soak's
 *     client will reset under them) are also counted apart (d_*).
 *   The stats line gets more fields: notices by reason, timers, re-opens, ...
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
 * CAVEATS
 *   - Writes to clients block the thread (poll, 1 s at most, then the client is
 *     dropped) when a client does not read its replies: a thread in that poll does
 *     not serve the reactor. lf_bound_send does the same towards the back-end.
 *   - The back-end's reply write waits 1 s at most for room, then fails that
 *     connection (the front-end fails its calls): a mutual stall (both sides' socket
 *     buffers full) ends in explicit failures, not a hang. Closed-loop clients keep
 *     in-flight bytes far below socket buffer sizes.
 *   - Without -R a failed back-end connection is not re-opened (a reconnect needs a new
 *     lf_bound, and lf_bound_destroy may not run in a handler: -R has a thread for it).
 */
#define LF_BOUND_REACTOR 1
#include "lf_bound.h"
#include "oltp.h"

#include <stdatomic.h>
#include <stddef.h>
#include <sys/signalfd.h>

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


/* ------------------------------------------------------------------ >>server
 * What both servers share: a reactor, its acceptor, SIGTERM/SIGINT as a signalfd
 * handle, T threads running the reactor. */

struct server {
    lf_reactor r;
    lf_handler acceptor;
    lf_handler sig;
    void (*on_usr)(int signo); /* -R: SIGUSR1/SIGUSR2 from the soak, else NULL */
};

static int on_signal(lf_handler *h, int fd, uint32_t events)
{
    struct server *s = CONTAINER(h, struct server, sig);
    struct signalfd_siginfo si;
    (void)events;
    while (read(fd, &si, sizeof si) == (ssize_t)sizeof si) {
        if ((si.ssi_signo == SIGUSR1 || si.ssi_signo == SIGUSR2) && s->on_usr != NULL)
            s->on_usr((int)si.ssi_signo);
        else /* SIGTERM, SIGINT: every thread returns from lf_reactor_run; main reports */
            lf_reactor_stop(&s->r);
    }
    return LF_KEEP;
}

static void server_sigset(sigset_t *set, int usr)
{
    sigemptyset(set);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGINT);
    if (usr) {
        sigaddset(set, SIGUSR1);
        sigaddset(set, SIGUSR2);
    }
}

/* Before any thread exists (liburcu's too): the signals go to the signalfd only.
 * usr: SIGUSR1 and SIGUSR2 too (-R), else they keep their default action. */
static void server_block_signals(int usr)
{
    sigset_t set;
    server_sigset(&set, usr);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    srv_raise_nofile();
}

static void server_register(struct server *s, int lfd, int (*on_accept)(lf_handler *, int, uint32_t))
{
    sigset_t set;
    int rc;
    server_sigset(&set, s->on_usr != NULL);
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

/* ------------------------------------------------------------------ >>backend */

struct account {
    _Alignas(64) pthread_mutex_t lock;
    long long balance;
    unsigned long long touches; /* transfers that involved this account */
};

struct bconn {
    lf_handler h;
    pthread_mutex_t wlock; /* one reply on the wire at a time */
    int fd;                          /* -R: for be_break (h.fd is the reactor's to set) */
    struct bconn *prev, *next;       /* -R: on be.live, under be.live_lock */
    /* the dispatch owner's only: frames read and not yet taken, in[start, end) */
    unsigned start, end;
    unsigned char in[BE_INBUF];
};

static struct {
    struct server s;
    struct account acct[ACCOUNTS];
    counter txns, conns, errors;
    /* -R */
    long long stall_ns;       /* > 0: resilience mode (SIGUSR1, SIGUSR2) */
    _Atomic int stall_next;   /* SIGUSR2 came: the next transaction stalls */
    pthread_mutex_t live_lock;
    struct bconn *live;       /* the connections whose handle_close has not run */
    unsigned nlive, pick;
    counter breaks, stalls;
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

/* -R, SIGUSR1: break one front-end connection, as a network fault would. Its fd is
 * open while c is on the list: the reactor closes it after handle_close, which takes
 * c off the list under the same lock first. */
static void be_break(void)
{
    pthread_mutex_lock(&be.live_lock);
    if (be.nlive > 0) {
        struct bconn *c = be.live;
        for (unsigned k = be.pick++ % be.nlive; k > 0; k--)
            c = c->next;
        shutdown(c->fd, SHUT_RDWR); /* both sides see it: reads end, writes fail */
        count(&be.breaks);
    }
    pthread_mutex_unlock(&be.live_lock);
}

static void be_on_usr(int signo)
{
    if (signo == SIGUSR1)
        be_break();
    else
        atomic_store_explicit(&be.stall_next, 1, RELAXED);
}

static void be_live_unlink(struct bconn *c)
{
    pthread_mutex_lock(&be.live_lock);
    if (c->prev)
        c->prev->next = c->next;
    else
        be.live = c->next;
    if (c->next)
        c->next->prev = c->prev;
    be.nlive--;
    pthread_mutex_unlock(&be.live_lock);
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
    if (be.stall_ns > 0 && atomic_exchange_explicit(&be.stall_next, 0, RELAXED)) {
        count(&be.stalls); /* -R, SIGUSR2: this call will time out in the front-end */
        sleep_ns(be.stall_ns);
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
    if (be.stall_ns > 0)
        be_live_unlink(c);
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
        if (be.stall_ns > 0) {
            /* on the list before it is registered: its handle_close may run at once */
            c->fd = fd;
            pthread_mutex_lock(&be.live_lock);
            c->next = be.live;
            if (be.live)
                be.live->prev = c;
            be.live = c;
            be.nlive++;
            pthread_mutex_unlock(&be.live_lock);
        }
        if (register_conn(&be.s.r, &c->h, fd) != 0) {
            if (be.stall_ns > 0)
                be_live_unlink(c);
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
    int lfd, rc, ok, stall_ms = 0;

    a.port = 0;
    a.threads = 4;
    for (int i = 0; i < argc; i += 2) {
        if (i + 1 < argc && strcmp(argv[i], "-p") == 0)
            parse_int("-p", argv[i + 1], &a.port);
        else if (i + 1 < argc && strcmp(argv[i], "-t") == 0)
            parse_int("-t", argv[i + 1], &a.threads);
        else if (i + 1 < argc && strcmp(argv[i], "-R") == 0)
            parse_int("-R", argv[i + 1], &stall_ms);
        else {
            fprintf(stderr, "usage: oltp backend [-p PORT] [-t THREADS] [-R STALL_MS]\n");
            return 2;
        }
    }
    if (a.threads < 1)
        a.threads = 1;
    be.stall_ns = (long long)stall_ms * 1000000LL;
    pthread_mutex_init(&be.live_lock, NULL);
    be.s.on_usr = stall_ms > 0 ? be_on_usr : NULL;
    server_block_signals(stall_ms > 0);
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
            "touches=%llu consistent=%s",
            get(&be.txns), get(&be.conns), get(&be.errors), sum,
            (long long)ACCOUNTS * OPENING_BALANCE, touches, ok ? "yes" : "NO");
    if (be.stall_ns > 0)
        fprintf(stderr, " breaks=%llu stalls=%llu", get(&be.breaks), get(&be.stalls));
    fprintf(stderr, "\n");
    fflush(stderr);
    if ((rc = lf_reactor_destroy(&be.s.r)) != 0)
        die_rc("lf_reactor_destroy", rc);
    pthread_mutex_destroy(&be.live_lock);
    return ok ? 0 : 1;
}

/* ------------------------------------------------------------------ >>frontend */

/* RE-OPENING (-R). A failed back-end connection is replaced by fe_maintain, a plain
 * thread: lf_bound_destroy may not run in a handler (it waits for the connection's
 * handle_close, which waits for the handlers to return). The slot's lf_bound is
 * destroyed and initialised again in place, so no thread may still be inside it:
 *   a call PINS its slot: users + 1, then state == MUX_LIVE? (else users - 1 and try
 *   the next slot), and unpins it (users - 1) once its lf_bound_* calls returned;
 *   fe_maintain RETIRES a slot the other way round: state = MUX_RETIRING, then it
 *   waits until users == 0, then shutdown + destroy + init + attach a new connection
 *   in place, then state = MUX_LIVE.
 * Both pairs are seq_cst, a Dekker handshake: either the caller sees MUX_RETIRING and
 * never touches b, or fe_maintain sees the pin and waits; nobody can pin in between.
 * The unpin is a release and fe_maintain's load that sees users == 0 an acquire, so
 * everything a caller did to the old bound happens before its destroy; the MUX_LIVE
 * store publishes the new one. (An RCU-like epoch in one counter per slot, with a
 * writer that waits instead of deferring.) The wait is short: the bound has failed,
 * so every call on it returns at once (join wakes with ECONNRESET, expect and send
 * refuse, with EPIPE when its write side broke), except a call whose thread is inside a nested upcall: it returns when the
 * inner call does, within that one's deadline. Without -R slots stay MUX_LIVE and
 * calls neither pin nor unpin: the benchmark's path is the same as before. */
enum { MUX_LIVE, MUX_RETIRING, MUX_CLOSED };

struct mux {
    lf_bound b;               /* attached to the front-end's reactor */
    _Atomic unsigned long long seq; /* request ids on this connection, never reused */
    _Atomic int dead;         /* a call saw the connection fail: pick another */
    _Atomic int state;        /* MUX_*: b may be used only while MUX_LIVE */
    _Atomic int users;        /* -R: calls that pinned the slot */
    int fd2;                  /* -R, fe_maintain's only: its own dup of the socket, or -1 */
};

struct fconn {
    lf_handler h;
    unsigned have;              /* bytes in in[] */
    struct fconn *next_deferred; /* on its deferring thread's list */
    /* -R */
    lf_timer idle;              /* the idle timeout */
    long long last_ns;          /* the last request in or reply out (the dispatch's) */
    _Atomic int refs;           /* the reactor's, and fe_on_accept's until it arms idle */
    unsigned char in[FE_INBUF];
};

#define TICK_NS 100000000LL /* -R: the period of the front-end's periodic timer */

static struct {
    struct server s;
    struct mux *mux;
    int nmux;
    long long deadline_ns;
    _Atomic unsigned rr;
    counter calls, ok, f_reset, f_timeout, f_other, no_backend, closed, clients, deferred;
    counter send_timeouts; /* calls whose send timed out: nothing of it was written */
    counter retried; /* connections found failed before the request went out */
    _Atomic unsigned max_nest;
    /* -R */
    long long idle_ns; /* > 0: resilience mode */
    int bport;
    struct lf_bound_hooks hooks;
    pthread_t maint;
    _Atomic int maint_stop;
    _Atomic unsigned breaks_req;   /* SIGUSR1s received: break one connection */
    _Atomic unsigned breaks_all_req; /* SIGUSR2s received: break them all */
    struct lf_bound_stats retired; /* the destroyed bounds' stats, summed (fe_mux_close) */
    lf_handler tick;
    lf_timer tick_timer;
    long long start_ns;
    counter notes[NOTE_N], note_lost, reply_lost, idle_closed, client_eof, client_err;
    counter tm_started, tm_fired, tm_rearmed, tm_cancel_ok, tm_cancel_none, ticks;
    counter breaks, retires, reopens, reopen_failed;
    counter d_calls, d_ok, d_fail[NOTE_N]; /* calls of doomed requests (SOAK_DOOMED) */
    _Atomic unsigned max_inflight;
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

static void note_max(_Atomic unsigned *max, unsigned v)
{
    unsigned seen = atomic_load_explicit(max, RELAXED);
    while (v > seen && !atomic_compare_exchange_weak_explicit(max, &seen, v, RELAXED, RELAXED)) {
    }
}

/* Pin slot m (RE-OPENING above): 1 if its bound may be used until fe_mux_put. */
static int fe_mux_pin(struct mux *m)
{
    if (fe.idle_ns == 0)
        return 1;
    atomic_fetch_add(&m->users, 1); /* seq_cst, then the state (seq_cst): Dekker */
    if (atomic_load(&m->state) == MUX_LIVE)
        return 1;
    atomic_fetch_sub(&m->users, 1);
    return 0;
}

static void fe_mux_put(struct mux *m)
{
    if (fe.idle_ns > 0)
        atomic_fetch_sub(&m->users, 1); /* seq_cst, a release: our uses come first */
}

/* A connection for one call, round robin, skipping failed ones; NULL: none left. */
static struct mux *fe_mux_get(void)
{
    unsigned start = atomic_fetch_add_explicit(&fe.rr, 1u, RELAXED);
    for (int i = 0; i < fe.nmux; i++) {
        struct mux *m = &fe.mux[(start + (unsigned)i) % (unsigned)fe.nmux];
        if (!atomic_load_explicit(&m->dead, RELAXED) && fe_mux_pin(m))
            return m; /* dead is a hint (relaxed); with -R the pin decides */
    }
    return NULL;
}

/* Forward one request to the back-end and wait for its reply (hybrid: this thread
 * serves the reactor meanwhile). 0, or why it failed: NOTE_RESET, NOTE_TIMEOUT,
 * NOTE_NO_BACKEND or NOTE_OTHER. */
static int fe_forward(const unsigned char *req, unsigned char *reply)
{
    unsigned char f[FRAME];
    lf_bound_ctx ctx;
    struct timespec dl;
    struct mux *m;
    int rc, tries = 0;

    count(&fe.calls);
    if ((rc = lf_bound_ctx_init(&ctx, reply, WIRE_SIZE, 0)) != 0) {
        count(&fe.f_other);
        return NOTE_OTHER;
    }
    for (;;) {
        uint64_t id;
        if (tries++ == 2 * fe.nmux || (m = fe_mux_get()) == NULL) {
            lf_bound_ctx_destroy(&ctx);
            count(&fe.no_backend);
            return NOTE_NO_BACKEND;
        }
        id = atomic_fetch_add_explicit(&m->seq, 1ULL, RELAXED);
        if (lf_bound_expect(&m->b, &ctx, id) == 0) {
            frame_header(f, id);
            break;
        }
        /* failed (or shut down) before the request went out: nothing was sent on it,
         * so the next connection may take it */
        atomic_store_explicit(&m->dead, 1, RELAXED);
        count(&fe.retried);
        fe_mux_put(m);
    }
    memcpy(f + HDR, req, WIRE_SIZE);
    lf_deadline_in(&dl, fe.deadline_ns);
    note_max(&fe.max_nest, ++fe_depth);
    if ((rc = lf_bound_send(&m->b, f, FRAME)) != 0) {
        /* the send failed the connection, which completed ctx already, or (nested in
         * a handler that a call's join dispatched) it waited past that join's deadline,
         * which it inherits, and wrote nothing: cancel in case ctx is not complete,
         * and collect it without waiting */
        if (rc == ETIMEDOUT)
            count(&fe.send_timeouts);
        (void)lf_bound_cancel(&m->b, &ctx);
        (void)lf_bound_join(&m->b, &ctx, NULL);
    } else {
        rc = lf_bound_join(&m->b, &ctx, &dl);
    }
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
    /* the connection is finished: ended, corrupt (max_body = cap: a bad length fails it
     * whole) or unable to carry another request */
    if (rc == ECONNRESET || rc == EPROTO || rc == EPIPE)
        atomic_store_explicit(&m->dead, 1, RELAXED);
    fe_mux_put(m);
    if (rc == 0) {
        count(&fe.ok);
        return 0;
    }
    if (rc == ETIMEDOUT) {
        count(&fe.f_timeout);
        return NOTE_TIMEOUT;
    }
    if (rc == ECONNRESET || rc == EPROTO || rc == EPIPE) {
        count(&fe.f_reset);
        return NOTE_RESET;
    }
    count(&fe.f_other); /* ECANCELED, ECONNABORTED: the reactor was stopped under us */
    return NOTE_OTHER;
}

/* -R: (re)arm c's idle timer; ENOENT once c is removed, ECANCELED after stop. */
static void fe_idle_arm(struct fconn *c, long long after_ns, counter *n)
{
    if (lf_reactor_timer_start(&fe.s.r, &c->idle, &c->h, after_ns, 0) == 0)
        count(n);
}

static void fe_conn_unref(struct fconn *c)
{
    /* acq_rel: whoever frees c comes after everything the other did with it */
    if (atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) == 1)
        free(c);
}

/* A client connection ends, from its handler (which then returns LF_REMOVE). -R: tell
 * the client why first (why != 0), and cancel the idle timer (removal would too; we
 * count what the cancel finds). The caller shuts the socket down if the client is
 * still there: it sees the end now, the fd is closed after handle_close. */
static void fe_close_client(struct fconn *c, int fd, uint32_t why)
{
    if (fe.idle_ns == 0)
        return;
    if (why != 0) {
        unsigned char note[WIRE_SIZE];
        notice_fill(note, why);
        if (write_all(fd, note, WIRE_SIZE, WRITE_WAIT_MS) == 0)
            count(&fe.notes[why]);
        else
            count(&fe.note_lost); /* the client is gone already */
    }
    if (lf_reactor_timer_cancel(&fe.s.r, &c->idle) == 0)
        count(&fe.tm_cancel_ok);
    else
        count(&fe.tm_cancel_none); /* it fired (this dispatch may be it) */
}

/* Nothing (more) to read. -R: if the idle timer fired and the connection has been
 * quiet for IDLE_MS (no request in, no reply out), close it; if not that long (it
 * fired while we were busy, or bytes came since), arm it for the rest. */
static int fe_idle(struct fconn *c, int fd, uint32_t events)
{
    long long quiet;
    if (fe.idle_ns == 0 || !(events & LF_EV_TIMEOUT))
        return LF_KEEP;
    quiet = now_ns() - c->last_ns;
    if (quiet < fe.idle_ns) {
        fe_idle_arm(c, fe.idle_ns - quiet, &fe.tm_rearmed);
        return LF_KEEP;
    }
    count(&fe.idle_closed);
    fe_close_client(c, fd, NOTE_IDLE);
    shutdown(fd, SHUT_RDWR);
    return LF_REMOVE;
}

static int fe_on_client(lf_handler *h, int fd, uint32_t events)
{
    struct fconn *c = CONTAINER(h, struct fconn, h);
    unsigned off = 0;
    ssize_t n;

    if (fe.idle_ns > 0 && (events & LF_EV_TIMEOUT))
        count(&fe.tm_fired);
    if (fe_depth >= OLTP_MAX_NEST) {
        /* too deep to take a request: park the handle until our innermost call
         * returns (fe_forward reactivates it); the request stays in the socket */
        if (lf_reactor_deactivate(&fe.s.r, h) == 0) {
            c->next_deferred = fe_deferred;
            fe_deferred = c;
            count(&fe.deferred);
        }
        if (fe.idle_ns > 0 && (events & LF_EV_TIMEOUT))
            fe_idle_arm(c, fe.idle_ns, &fe.tm_rearmed); /* we took its expiry */
        return LF_KEEP;
    }
    n = read(fd, c->in + c->have, sizeof c->in - c->have);
    if (n == 0) {
        count(&fe.client_eof); /* the client left */
        fe_close_client(c, fd, 0);
        return LF_REMOVE;
    }
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
            return fe_idle(c, fd, events);
        count(&fe.client_err); /* the client reset its connection */
        fe_close_client(c, fd, 0);
        return LF_REMOVE;
    }
    c->have += (unsigned)n;
    while (c->have - off >= WIRE_SIZE) {
        unsigned char reply[WIRE_SIZE];
        int why = fe_forward(c->in + off, reply);
        if (fe.idle_ns > 0 && (wire_get32(c->in + off + 8) & SOAK_DOOMED)) {
            count(&fe.d_calls);
            count(why == 0 ? &fe.d_ok : &fe.d_fail[why]);
        }
        if (why != 0 || write_all(fd, reply, WIRE_SIZE, WRITE_WAIT_MS) != 0) {
            /* explicit failure: the client sees its connection end, now */
            count(&fe.closed);
            if (why == 0)
                count(&fe.reply_lost); /* the client is gone (or reads nothing) */
            fe_close_client(c, fd, (uint32_t)why);
            shutdown(fd, SHUT_RDWR);
            return LF_REMOVE;
        }
        off += WIRE_SIZE;
    }
    memmove(c->in, c->in + off, c->have - off);
    c->have -= off;
    if (fe.idle_ns > 0) {
        c->last_ns = now_ns();
        if (events & LF_EV_TIMEOUT)
            fe_idle_arm(c, fe.idle_ns, &fe.tm_rearmed); /* it fired while we were busy */
    }
    return LF_KEEP; /* one dispatch at a time: replies leave in request order */
}

static void fe_on_client_close(lf_handler *h)
{
    struct fconn *c = CONTAINER(h, struct fconn, h);
    if (fe.idle_ns > 0)
        fe_conn_unref(c);
    else
        free(c);
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
        if (fe.idle_ns > 0) {
            lf_timer_init(&c->idle);
            c->last_ns = now_ns();
            atomic_init(&c->refs, 2);
        }
        if (register_conn(&fe.s.r, &c->h, fd) != 0) {
            free(c);
            close(fd);
            continue;
        }
        count(&fe.clients);
        if (fe.idle_ns > 0) {
            /* c may have been dispatched, removed and closed already: our reference
             * keeps the record, and the timer start then finds it removed (ENOENT) */
            fe_idle_arm(c, fe.idle_ns, &fe.tm_started);
            fe_conn_unref(c);
        }
    }
    return LF_KEEP;
}

static void fe_stats_add(struct lf_bound_stats *sum, const struct lf_bound_stats *st)
{
    sum->replies += st->replies;
    sum->handed_off += st->handed_off;
    sum->own += st->own;
    sum->stray += st->stray;
    sum->timeouts += st->timeouts;
    sum->cancels += st->cancels;
    sum->reads += st->reads;
}

/* Connect slot m to the back-end: at start, or from fe_maintain while m is
 * MUX_CLOSED. 0, or why not (m stays closed). */
static int fe_mux_open(struct mux *m)
{
    int fd = srv_connect(fe.bport), fd2 = -1, rc;
    if (fd < 0)
        return errno != 0 ? errno : ECONNREFUSED;
    if (fe.idle_ns > 0 && (fd2 = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0) {
        rc = errno;
        close(fd);
        return rc;
    }
    if ((rc = lf_bound_init(&m->b, fd, &fe.hooks)) == 0 &&
        (rc = lf_bound_attach(&m->b, &fe.s.r)) != 0) /* ECANCELED: we are stopping */
        (void)lf_bound_destroy(&m->b);
    if (rc != 0) {
        close(fd);
        if (fd2 >= 0)
            close(fd2);
        return rc;
    }
    m->fd2 = fd2; /* the reactor owns fd now */
    atomic_store_explicit(&m->dead, 0, RELAXED);
    atomic_store(&m->state, MUX_LIVE); /* seq_cst, a release: publishes b */
    return 0;
}

/* Take slot m out of service: from fe_maintain once nobody has it pinned, or at exit
 * once the threads are gone. Its stats go to fe.retired. */
static void fe_mux_close(struct mux *m)
{
    struct lf_bound_stats st;
    int rc;
    lf_bound_shutdown(&m->b);
    lf_bound_stats(&m->b, &st);
    fe_stats_add(&fe.retired, &st);
    if ((rc = lf_bound_destroy(&m->b)) != 0) /* waits for its handle_close */
        die_rc("lf_bound_destroy", rc);
    if (m->fd2 >= 0)
        close(m->fd2);
    m->fd2 = -1;
    atomic_store(&m->state, MUX_CLOSED);
}

/* -R, SIGUSR1: break a live connection (all: SIGUSR2), as a network fault would: its
 * readers see EOF, its writers an error, and its calls must fail. Through our own
 * descriptor: the reactor's may have been closed (and its number reused) after a
 * failure. */
static void fe_break(unsigned k, int all)
{
    for (int i = 0; i < fe.nmux; i++) {
        struct mux *m = &fe.mux[(k + (unsigned)i) % (unsigned)fe.nmux];
        if (atomic_load(&m->state) == MUX_LIVE && !atomic_load_explicit(&m->dead, RELAXED)) {
            shutdown(m->fd2, SHUT_RDWR);
            count(&fe.breaks);
            if (!all)
                return;
        }
    }
}

/* -R: one look at slot m. Only this thread changes state (and destroys bounds), so it
 * may read m->b's stats without a pin. */
static void fe_mux_step(struct mux *m)
{
    int st = atomic_load(&m->state), rc;
    if (st == MUX_LIVE) {
        struct lf_bound_stats bs;
        lf_bound_stats(&m->b, &bs);
        if (!atomic_load_explicit(&m->dead, RELAXED) && bs.failed == 0)
            return;
        atomic_store_explicit(&m->dead, 1, RELAXED);
        atomic_store(&m->state, MUX_RETIRING); /* seq_cst, then users: Dekker */
        st = MUX_RETIRING;
    }
    if (st == MUX_RETIRING) {
        if (atomic_load(&m->users) != 0)
            return; /* calls still inside: look again next round */
        fe_mux_close(m);
        count(&fe.retires);
    }
    if ((rc = fe_mux_open(m)) == 0)
        count(&fe.reopens);
    else if (rc != ECANCELED)
        count(&fe.reopen_failed);
}

/* -R: the maintenance thread (no handler: lf_bound_destroy may wait here). */
static void *fe_maintain(void *arg)
{
    unsigned done = 0, done_all = 0;
    (void)arg;
    while (!atomic_load(&fe.maint_stop)) {
        unsigned want = atomic_load_explicit(&fe.breaks_req, RELAXED);
        unsigned want_all = atomic_load_explicit(&fe.breaks_all_req, RELAXED);
        if (want != done) {
            fe_break(done, 0);
            done = want;
        }
        if (want_all != done_all) {
            fe_break(0, 1);
            done_all = want_all;
        }
        for (int i = 0; i < fe.nmux; i++)
            fe_mux_step(&fe.mux[i]);
        sleep_ns(5000000LL);
    }
    return NULL;
}

static void fe_on_usr(int signo)
{
    atomic_fetch_add_explicit(signo == SIGUSR1 ? &fe.breaks_req : &fe.breaks_all_req, 1u,
                              RELAXED);
}

/* -R: the periodic timer. Counts ticks (the soak checks their number against the
 * time) and samples the calls in flight on the pinned live connections. */
static int fe_on_tick(lf_handler *h, int fd, uint32_t events)
{
    (void)h;
    if (events & LF_EV_READ) {
        uint64_t v;
        ssize_t n = read(fd, &v, sizeof v); /* nobody writes it; a hint is harmless */
        (void)n;
    }
    if (events & LF_EV_TIMEOUT) {
        unsigned inflight = 0;
        count(&fe.ticks);
        for (int i = 0; i < fe.nmux; i++) {
            struct mux *m = &fe.mux[i];
            struct lf_bound_stats st;
            if (fe_mux_pin(m)) {
                if (lf_bound_stats(&m->b, &st) == 0)
                    inflight += st.in_flight;
                fe_mux_put(m);
            }
        }
        note_max(&fe.max_inflight, inflight);
    }
    return LF_KEEP;
}

static int frontend_main(int argc, char **argv)
{
    struct srv_args a;
    struct lf_reactor_stats rs;
    int nmux = 2, deadline_ms = 5000, idle_ms = 0, lfd, rc;
    long long elapsed;

    a.port = 0;
    a.threads = 4;
    fe.bport = -1;
    for (int i = 0; i < argc; i += 2) {
        const char *o = argv[i];
        if (i + 1 >= argc)
            o = "?";
        if (strcmp(o, "-p") == 0)
            parse_int(o, argv[i + 1], &a.port);
        else if (strcmp(o, "-t") == 0)
            parse_int(o, argv[i + 1], &a.threads);
        else if (strcmp(o, "-b") == 0)
            parse_int(o, argv[i + 1], &fe.bport);
        else if (strcmp(o, "-m") == 0)
            parse_int(o, argv[i + 1], &nmux);
        else if (strcmp(o, "-d") == 0)
            parse_int(o, argv[i + 1], &deadline_ms);
        else if (strcmp(o, "-R") == 0)
            parse_int(o, argv[i + 1], &idle_ms);
        else {
            fprintf(stderr, "usage: oltp frontend [-p PORT] -b BACKEND_PORT [-m MUX] "
                            "[-t THREADS] [-d DEADLINE_MS] [-R IDLE_MS]\n");
            return 2;
        }
    }
    if (fe.bport <= 0 || nmux < 1) {
        fprintf(stderr, "oltp frontend: -b BACKEND_PORT is required, -m at least 1\n");
        return 2;
    }
    if (a.threads < 1)
        a.threads = 1;
    fe.deadline_ns = (long long)deadline_ms * 1000000LL;
    fe.idle_ns = (long long)idle_ms * 1000000LL;
    fe.s.on_usr = idle_ms > 0 ? fe_on_usr : NULL;
    server_block_signals(idle_ms > 0);
    if ((rc = lf_reactor_init(&fe.s.r)) != 0)
        die_rc("lf_reactor_init", rc);

    memset(&fe.hooks, 0, sizeof fe.hooks);
    fe.hooks.header_len = HDR;
    fe.hooks.parse_header = fe_parse;
    fe.hooks.max_body = WIRE_SIZE; /* = the contexts' cap: a wrong length fails the connection */
    fe.nmux = nmux;
    if ((fe.mux = (struct mux *)calloc((size_t)nmux, sizeof *fe.mux)) == NULL)
        die_rc("calloc", ENOMEM);
    for (int i = 0; i < nmux; i++)
        if ((rc = fe_mux_open(&fe.mux[i])) != 0)
            die_rc("connect to the back-end", rc);
    if (fe.idle_ns > 0) {
        int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); /* a handle for the tick */
        if (efd < 0)
            srv_die("eventfd");
        lf_handler_init(&fe.tick, fe_on_tick, NULL);
        if ((rc = lf_reactor_register(&fe.s.r, &fe.tick, efd, LF_EV_READ)) != 0)
            die_rc("lf_reactor_register", rc);
        fe.start_ns = now_ns();
        if ((rc = lf_reactor_timer_start(&fe.s.r, &fe.tick_timer, &fe.tick, TICK_NS, TICK_NS)) != 0)
            die_rc("lf_reactor_timer_start", rc);
    }
    lfd = srv_listen(&a, 1); /* "port N": the back-end connections are up */
    server_register(&fe.s, lfd, fe_on_accept);
    if (fe.idle_ns > 0 && (rc = pthread_create(&fe.maint, NULL, fe_maintain, NULL)) != 0)
        die_rc("pthread_create", rc);
    server_run(&fe.s, a.threads);
    if (fe.idle_ns > 0) {
        atomic_store(&fe.maint_stop, 1);
        pthread_join(fe.maint, NULL);
    }
    elapsed = now_ns() - fe.start_ns;

    /* every thread is gone: no call holds a slot; the stats of all the bounds ever
     * used (fe_maintain's retired ones too) end up in fe.retired */
    for (int i = 0; i < nmux; i++)
        if (atomic_load(&fe.mux[i].state) != MUX_CLOSED)
            fe_mux_close(&fe.mux[i]);
    lf_reactor_stats(&fe.s.r, &rs);
    fprintf(stderr, "fe calls=%llu ok=%llu failed=%llu reset=%llu timedout=%llu no_backend=%llu "
            "closed=%llu clients=%llu max_nest=%u deferred=%llu bound_replies=%llu "
            "handed_off=%llu own=%llu stray=%llu timeouts=%llu reads=%llu promotions=%llu "
            "dispatched=%llu stale=%llu busy_events=%llu kicks=%llu",
            get(&fe.calls), get(&fe.ok), get(&fe.calls) - get(&fe.ok), get(&fe.f_reset),
            get(&fe.f_timeout), get(&fe.no_backend), get(&fe.closed), get(&fe.clients),
            atomic_load_explicit(&fe.max_nest, RELAXED), get(&fe.deferred), fe.retired.replies,
            fe.retired.handed_off, fe.retired.own, fe.retired.stray, fe.retired.timeouts,
            fe.retired.reads, rs.pool.promotions, rs.dispatched, rs.stale, rs.deferred, rs.kicks);
    if (fe.idle_ns > 0)
        fprintf(stderr, " retried=%llu notes_reset=%llu notes_timeout=%llu notes_no_backend=%llu "
                "notes_other=%llu notes_idle=%llu note_lost=%llu reply_lost=%llu "
                "idle_closed=%llu client_eof=%llu client_err=%llu bound_cancels=%llu "
                "tm_started=%llu tm_fired=%llu tm_rearmed=%llu tm_cancel_ok=%llu "
                "tm_cancel_none=%llu ticks=%llu tick_expected=%lld max_inflight=%u "
                "breaks=%llu retires=%llu reopens=%llu reopen_failed=%llu d_calls=%llu d_ok=%llu "
                "d_reset=%llu d_timeout=%llu d_no_backend=%llu d_other=%llu send_timeouts=%llu",
                get(&fe.retried), get(&fe.notes[NOTE_RESET]), get(&fe.notes[NOTE_TIMEOUT]),
                get(&fe.notes[NOTE_NO_BACKEND]), get(&fe.notes[NOTE_OTHER]),
                get(&fe.notes[NOTE_IDLE]), get(&fe.note_lost), get(&fe.reply_lost),
                get(&fe.idle_closed), get(&fe.client_eof), get(&fe.client_err),
                fe.retired.cancels, get(&fe.tm_started), get(&fe.tm_fired), get(&fe.tm_rearmed),
                get(&fe.tm_cancel_ok), get(&fe.tm_cancel_none), get(&fe.ticks),
                elapsed / TICK_NS, atomic_load_explicit(&fe.max_inflight, RELAXED),
                get(&fe.breaks), get(&fe.retires), get(&fe.reopens), get(&fe.reopen_failed),
                get(&fe.d_calls), get(&fe.d_ok), get(&fe.d_fail[NOTE_RESET]),
                get(&fe.d_fail[NOTE_TIMEOUT]), get(&fe.d_fail[NOTE_NO_BACKEND]),
                get(&fe.d_fail[NOTE_OTHER]), get(&fe.send_timeouts));
    fprintf(stderr, "\n");
    fflush(stderr);

    free(fe.mux);
    if ((rc = lf_reactor_destroy(&fe.s.r)) != 0)
        die_rc("lf_reactor_destroy", rc);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "backend") == 0)
        return backend_main(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "frontend") == 0)
        return frontend_main(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "demo") == 0)
        return demo_main(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "soak") == 0)
        return soak_main(argc - 2, argv + 2);
    fprintf(stderr, "usage: oltp backend [-p PORT] [-t T] [-R STALL_MS]\n"
                    "       oltp frontend [-p PORT] -b BACKEND_PORT [-m MUX] [-t T] "
                    "[-d DEADLINE_MS] [-R IDLE_MS]\n"
                    "       oltp demo [-c CONNS] [-s SECONDS] [-t T] [-m MUX] [-w WORK] "
                    "[-d DEADLINE_MS] [-L LOADGEN] [-K KILL_AFTER_S]\n"
                    "       oltp soak -s SECONDS [-c CONNS] [-t T] [-m MUX] [-w WORK] [-S SEED] "
                    "[-d DEADLINE_MS] [-i IDLE_MS]\n");
    return 2;
}
