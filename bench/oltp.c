/* bench/oltp.c - the POSA2 Leader/Followers example as a runnable system:
 *
 *   remote clients --> FRONT-END communication server --MUX connections--> BACK-END
 *   (closed loop,      (lf_reactor + lf_bound, HYBRID:       (lf_reactor, a small
 *    64-byte wire.h)    waiting threads serve the reactor)    table of accounts)
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
 * SOAK (oltp soak; test/soak.sh runs it under ASan+UBSan)
 *   Starts both servers as the demo does, with -R, and drives the front-end with
 *   CONNS churning clients for SECONDS, every choice drawn from one seeded generator
 *   (-S; the seed is printed: the schedule of choices repeats, interleavings do not):
 *   - a client connection lives for a random number of requests, then closes cleanly,
 *     or resets (SO_LINGER 0) idle, with a request in flight, or after part of one,
 *     or goes quiet until the front-end's idle timer closes it, or sends one more
 *     request just when that timer is due (a race: served, or met by the idle
 *     notice); a new connection replaces it at once (handlers and their timers churn
 *     in the front-end);
 *   - every 0.5-2 s: SIGUSR1 to the back-end (it breaks a MUX connection) or to the
 *     front-end (it breaks one itself), SIGUSR2 to the front-end (it breaks them all:
 *     no_backend for a moment), or SIGUSR2 to the back-end (a stall: a call times
 *     out, and its reply comes back late, a stray).
 *   Every request ends in exactly one client outcome: ok (wire_check), wrong, failed
 *   for a reason (self_reset, partial, srv_reset, srv_timeout, srv_no_backend,
 *   srv_other: the front-end's notice; idle_race: the idle close crossed our request;
 *   connect), unexplained (a close without a notice) or lost (no outcome by the end:
 *   a hang). After SIGTERM to both servers it checks sent = ok + wrong + failed + lost,
 *   that nothing is wrong, lost or unexplained, and that the three processes' counts
 *   agree (soak_check lists the equations). Progress every 10 s on stderr, one
 *   summary line on stdout, exit 0 only if every equation holds.
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
#include "srv_common.h"
#include "wire.h"

#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
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

static void sleep_ns(long long ns)
{
    struct timespec ts;
    ts.tv_sec = (time_t)(ns / 1000000000LL);
    ts.tv_nsec = (long)(ns % 1000000000LL);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* -R: the NOTICE a front-end sends a client before it closes the connection, and why.
 * A reply can never look like one: request ids count up from 0, conn ids skip ~0. */
enum { NOTE_RESET = 1, NOTE_TIMEOUT, NOTE_NO_BACKEND, NOTE_OTHER, NOTE_IDLE, NOTE_N };
static const char *const note_name[NOTE_N] = { "?", "reset", "timeout", "no_backend", "other",
                                               "idle" };

static void notice_fill(unsigned char *m, uint32_t why)
{
    uint64_t id = ~(uint64_t)0;
    uint32_t conn = ~(uint32_t)0;
    memset(m, 0, WIRE_SIZE);
    memcpy(m, &id, 8);
    memcpy(m + 8, &conn, 4);
    memcpy(m + 12, &why, 4);
}

/* The reason of a NOTICE, or 0 if m is not one. */
static uint32_t notice_reason(const unsigned char *m)
{
    return wire_get64(m) == ~(uint64_t)0 && wire_get32(m + 8) == ~(uint32_t)0 ? wire_get32(m + 12)
                                                                             : 0;
}

/* The soak's bookkeeping: the top bit of a request's conn field marks a DOOMED request,
 * one its client will reset its connection under before it reads the reply. A -R
 * front-end counts those calls apart, so that every other request can be accounted
 * for exactly (a doomed call's outcome may never reach anybody). */
#define SOAK_DOOMED 0x80000000u

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
        /* the send failed the connection, which completed ctx already (cancel: in
         * case it did not); collect it without waiting */
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
    count(&fe.f_other); /* ECANCELED: the reactor was stopped under us */
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
                "d_reset=%llu d_timeout=%llu d_no_backend=%llu d_other=%llu",
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
                get(&fe.d_fail[NOTE_OTHER]));
    fprintf(stderr, "\n");
    fflush(stderr);

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
        if ((cc[i].fd = srv_connect(port)) < 0 || srv_nonblock(cc[i].fd) != 0) {
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

/* ------------------------------------------------------------------ >>soak
 * See SOAK at the top. One thread: CONNS client connections on one epoll set, every
 * choice from one seeded generator, plain counters. */

static uint64_t soak_rng; /* splitmix64: small, and the same on every platform */

static uint64_t soak_rand64(void)
{
    uint64_t z = (soak_rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static unsigned soak_rand(unsigned n)
{
    return (unsigned)(soak_rand64() % n);
}

/* a connection's phase, and how it ends once its requests are done */
enum { SC_DOWN, SC_ACTIVE, SC_RESET_WAIT, SC_PARTIAL_WAIT, SC_IDLE_WAIT, SC_LATE_WAIT };
enum { END_CLOSE, END_RESET, END_RESET_INFLIGHT, END_PARTIAL, END_IDLE, END_LATE };

struct sconn {
    int fd;          /* -1: not connected */
    int phase;       /* SC_* */
    int plan;        /* END_* */
    int busy;        /* a whole request is out and has no outcome yet */
    int doomed;      /* ... and it is the one we reset under (SOAK_DOOMED) */
    int hard;        /* END_PARTIAL: end with a reset, not a clean close */
    uint32_t conn;   /* this connection's number: a new one per connection */
    uint64_t id;     /* the outstanding (or next) request's id */
    unsigned left;   /* ordinary requests before the end */
    unsigned have;   /* bytes in rx */
    long long at;    /* when the timed phase (all but ACTIVE) ends */
    unsigned char rx[WIRE_SIZE];
};

/* The fate of every request (outcomes), and the churn. d_*: the doomed subset. */
static struct {
    unsigned long long sent, ok, wrong, lost;
    unsigned long long connect, partial, self_reset, srv[NOTE_N], unexplained;
    unsigned long long d_sent, d_ok, d_srv[NOTE_N];
    /* anomalies that are not a request's fate: each must stay 0 */
    unsigned long long stray_reply, bad_notice, eof_idle, idle_expired;
    /* churn */
    unsigned long long opened, closes, resets, idle_notices, idle_waits, idle_cut, late;
    unsigned long long be_breaks, fe_breaks, fe_breaks_all, stalls; /* signals sent */
} sk;

static struct {
    int port, ep, stopping;
    uint32_t work, next_conn;
    long long idle_ns;
} so;

static unsigned long long soak_failed(void)
{
    unsigned long long n = sk.connect + sk.partial + sk.self_reset + sk.unexplained;
    for (int r = 1; r < NOTE_N; r++)
        n += sk.srv[r];
    return n;
}

/* Close c (reset: SO_LINGER 0, an RST instead of a FIN); a new connection replaces it
 * on the next turn of the loop. Whatever was out has its outcome counted already. */
static void soak_drop(struct sconn *c, int reset)
{
    if (reset) {
        struct linger lg;
        lg.l_onoff = 1;
        lg.l_linger = 0;
        (void)setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        sk.resets++;
    } else {
        sk.closes++;
    }
    epoll_ctl(so.ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    c->fd = -1;
    c->busy = 0;
    c->have = 0;
    c->phase = SC_DOWN;
    c->at = now_ns();
}

/* The first n bytes of the next request; doomed: marked SOAK_DOOMED. */
static int soak_write(struct sconn *c, size_t n, int doomed)
{
    unsigned char m[WIRE_SIZE];
    wire_fill(m, c->id, c->conn | (doomed ? SOAK_DOOMED : 0u), so.work);
    return write_all(c->fd, m, n, WRITE_WAIT_MS);
}

static void soak_read(struct sconn *c);

/* Send a whole request. A write that fails means the front-end closed the
 * connection first: its reason (an idle notice) must be in the socket. */
static void soak_request(struct sconn *c, int doomed)
{
    sk.sent++;
    if (doomed)
        sk.d_sent++;
    c->busy = 1;
    c->doomed = doomed;
    if (soak_write(c, WIRE_SIZE, doomed) != 0) {
        soak_read(c);
        if (c->fd >= 0 && c->busy) { /* no notice, no end: nothing explains it */
            sk.unexplained++;
            soak_drop(c, 0);
        }
    }
}

/* Nothing is out on c: the next request, or the connection's end. */
static void soak_next(struct sconn *c, long long now)
{
    if (so.stopping)
        return; /* no new requests: it is closed at the end */
    if (c->left > 0) {
        c->left--;
        soak_request(c, 0);
        return;
    }
    switch (c->plan) {
    case END_CLOSE:
        soak_drop(c, 0);
        break;
    case END_RESET:
        soak_drop(c, 1);
        break;
    case END_RESET_INFLIGHT: /* a request, and a reset 0-3 ms later: often under it */
        soak_request(c, 1);
        if (c->fd >= 0 && c->busy) {
            c->phase = SC_RESET_WAIT;
            c->at = now + (long long)soak_rand(3000) * 1000LL;
        }
        break;
    case END_PARTIAL: /* part of a request, then a reset or a close 0-3 ms later */
        sk.sent++;
        if (soak_write(c, 1 + soak_rand(WIRE_SIZE - 1), 0) != 0) {
            sk.partial++; /* its fate: never whole */
            soak_drop(c, 0);
            break;
        }
        c->phase = SC_PARTIAL_WAIT;
        c->hard = (int)soak_rand(2);
        c->at = now + (long long)soak_rand(3000) * 1000LL;
        break;
    case END_IDLE: /* quiet until the front-end's idle timer closes it */
        sk.idle_waits++;
        c->phase = SC_IDLE_WAIT;
        c->at = now + so.idle_ns + 5000000000LL;
        break;
    default: /* END_LATE: quiet for IDLE_MS +- 2 ms, then one more request: it races
              * the idle close (either it is served, or it meets the idle notice) */
        c->phase = SC_LATE_WAIT;
        c->at = now + so.idle_ns - 2000000LL + (long long)soak_rand(4000) * 1000LL;
        break;
    }
}

static void soak_open(struct sconn *c, long long now)
{
    struct epoll_event ev;
    unsigned r;
    int fd = srv_connect(so.port);
    if (fd < 0 || srv_nonblock(fd) != 0) {
        if (fd >= 0)
            close(fd);
        sk.sent++; /* the request this connection was for */
        sk.connect++;
        c->phase = SC_DOWN;
        c->at = now + 10000000LL;
        return;
    }
    ev.events = EPOLLIN;
    ev.data.ptr = c;
    if (epoll_ctl(so.ep, EPOLL_CTL_ADD, fd, &ev) != 0)
        srv_die("oltp soak: epoll_ctl");
    c->fd = fd;
    c->conn = so.next_conn++;
    if (so.next_conn >= SOAK_DOOMED - 1u) /* never the top bit, never a notice's ~0 */
        so.next_conn = 1;
    c->id = 0;
    c->have = 0;
    c->busy = 0;
    c->left = soak_rand(2) ? 1 + soak_rand(10) : 1 + soak_rand(400); /* at least one */
    r = soak_rand(100);
    c->plan = r < 25 ? END_CLOSE : r < 43 ? END_RESET : r < 65 ? END_RESET_INFLIGHT
            : r < 80 ? END_PARTIAL : r < 90 ? END_IDLE : END_LATE;
    c->phase = SC_ACTIVE;
    sk.opened++;
    soak_next(c, now);
}

/* The front-end closed c without a notice. */
static void soak_eof(struct sconn *c)
{
    if (c->busy || c->phase == SC_PARTIAL_WAIT)
        sk.unexplained++; /* a request's fate nobody can explain */
    else
        sk.eof_idle++;    /* an idle connection closed for no reason given */
    soak_drop(c, 0);
}

static void soak_notice(struct sconn *c, uint32_t why)
{
    if (why >= NOTE_N) {
        sk.bad_notice++;
        if (c->busy)
            sk.unexplained++;
    } else {
        if (why == NOTE_IDLE)
            sk.idle_notices++;
        if (c->busy) {
            sk.srv[why]++; /* srv[NOTE_IDLE]: the idle close crossed our request */
            if (c->doomed)
                sk.d_srv[why]++;
        } else if (c->phase == SC_PARTIAL_WAIT) {
            sk.partial++;
            if (why != NOTE_IDLE)
                sk.bad_notice++; /* only an idle close may end a partial request */
        } else if (why != NOTE_IDLE) {
            sk.bad_notice++; /* a failure notice with no request out */
        }
    }
    soak_drop(c, 0);
}

/* c is readable: one message (a reply or a notice), or its end. */
static void soak_read(struct sconn *c)
{
    for (;;) {
        ssize_t got = read(c->fd, c->rx + c->have, WIRE_SIZE - c->have);
        uint32_t why;
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (got <= 0) {
            soak_eof(c);
            return;
        }
        c->have += (unsigned)got;
        if (c->have < WIRE_SIZE)
            continue;
        c->have = 0;
        if ((why = notice_reason(c->rx)) != 0) {
            soak_notice(c, why);
            return;
        }
        if (!c->busy) {
            sk.stray_reply++; /* a reply to nothing */
            soak_drop(c, 0);
            return;
        }
        c->busy = 0;
        if (wire_check(c->rx, c->id, c->conn | (c->doomed ? SOAK_DOOMED : 0u)) != 0) {
            sk.wrong++;
            soak_drop(c, 0);
            return;
        }
        sk.ok++;
        if (c->doomed)
            sk.d_ok++;
        c->id++;
        if (c->phase == SC_RESET_WAIT)
            soak_drop(c, 1); /* the reply beat our reset: reset with nothing out */
        else
            soak_next(c, now_ns());
        return;
    }
}

/* c's timed phase is over. */
static void soak_timed(struct sconn *c, long long now)
{
    switch (c->phase) {
    case SC_RESET_WAIT: /* still no reply: reset under the request */
        sk.self_reset++;
        soak_drop(c, 1);
        break;
    case SC_PARTIAL_WAIT:
        sk.partial++;
        soak_drop(c, c->hard);
        break;
    case SC_IDLE_WAIT:
        sk.idle_expired++; /* the front-end's idle timer never closed it */
        soak_drop(c, 0);
        break;
    case SC_LATE_WAIT: /* the late request; after its reply the connection closes */
        sk.late++;
        c->phase = SC_ACTIVE;
        c->plan = END_CLOSE;
        soak_request(c, 0);
        break;
    case SC_DOWN:
        if (!so.stopping)
            soak_open(c, now);
        break;
    default:
        break;
    }
}

static void soak_progress(long long secs)
{
    fprintf(stderr,
            "oltp soak: %4llds sent=%llu ok=%llu failed=%llu (connect=%llu partial=%llu "
            "self_reset=%llu srv_reset=%llu srv_timeout=%llu srv_no_backend=%llu srv_other=%llu "
            "idle_race=%llu unexplained=%llu) wrong=%llu | conns opened=%llu closed=%llu "
            "reset=%llu idle_closed=%llu late=%llu | be_breaks=%llu fe_breaks=%llu "
            "fe_breaks_all=%llu stalls=%llu\n",
            secs, sk.sent, sk.ok, soak_failed(), sk.connect, sk.partial, sk.self_reset,
            sk.srv[NOTE_RESET], sk.srv[NOTE_TIMEOUT], sk.srv[NOTE_NO_BACKEND], sk.srv[NOTE_OTHER],
            sk.srv[NOTE_IDLE], sk.unexplained, sk.wrong, sk.opened, sk.closes, sk.resets,
            sk.idle_notices, sk.late, sk.be_breaks, sk.fe_breaks, sk.fe_breaks_all, sk.stalls);
}

/* 1 if the child has exited (it stays waitable for reap). */
static int soak_child_gone(pid_t pid)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid;
}

/* The clients, for secs seconds, then until every request has its fate (drain_ns at
 * most). 0, or -1 if a server died under us. */
static int soak_clients(int conns, int secs, long long drain_ns, pid_t fe_pid, pid_t be_pid)
{
    struct sconn *cc = (struct sconn *)calloc((size_t)conns, sizeof *cc);
    struct epoll_event evs[64];
    long long start = now_ns(), end = start + (long long)secs * 1000000000LL, drain_end = 0;
    long long next_chaos, next_progress = start + 10000000000LL, next_check = start;
    int rc = 0;

    if (cc == NULL || (so.ep = epoll_create1(EPOLL_CLOEXEC)) < 0)
        srv_die("oltp soak");
    next_chaos = start + 500000000LL + (long long)soak_rand(1500) * 1000000LL;
    for (int i = 0; i < conns; i++) {
        cc[i].fd = -1;
        soak_open(&cc[i], start);
    }
    for (;;) {
        long long now = now_ns(), next = now + 10000000LL;
        int n, pending = 0;

        if (!so.stopping && now >= end) {
            so.stopping = 1; /* no new requests, no new connections */
            drain_end = now + drain_ns;
            for (int i = 0; i < conns; i++)
                if (cc[i].phase == SC_IDLE_WAIT || cc[i].phase == SC_LATE_WAIT) {
                    sk.idle_cut++;
                    soak_drop(&cc[i], 0);
                }
        }
        if (so.stopping) {
            for (int i = 0; i < conns; i++)
                pending += cc[i].busy || cc[i].phase == SC_RESET_WAIT ||
                           cc[i].phase == SC_PARTIAL_WAIT;
            if (pending == 0 || now >= drain_end)
                break;
        } else if (now >= next_chaos) {
            unsigned r = soak_rand(10);
            if (r < 3) {
                kill(be_pid, SIGUSR1); /* the back-end breaks a MUX connection */
                sk.be_breaks++;
            } else if (r < 6) {
                kill(fe_pid, SIGUSR1); /* the front-end breaks one itself */
                sk.fe_breaks++;
            } else if (r < 7) {
                kill(fe_pid, SIGUSR2); /* ... or all of them: no_backend until re-opened */
                sk.fe_breaks_all++;
            } else {
                kill(be_pid, SIGUSR2); /* a transaction stalls: its call times out */
                sk.stalls++;
            }
            next_chaos = now + 500000000LL + (long long)soak_rand(1500) * 1000000LL;
        }
        if (now >= next_progress) {
            soak_progress((now - start) / 1000000000LL);
            next_progress += 10000000000LL;
        }
        if (now >= next_check) {
            if (soak_child_gone(fe_pid) || soak_child_gone(be_pid)) {
                fprintf(stderr, "oltp soak: a server exited during the run\n");
                rc = -1;
                break;
            }
            next_check = now + 100000000LL;
        }
        for (int i = 0; i < conns; i++) {
            struct sconn *c = &cc[i];
            if (c->phase == SC_ACTIVE || (c->phase == SC_DOWN && so.stopping))
                continue;
            if (now >= c->at)
                soak_timed(c, now);
            if (c->phase != SC_ACTIVE && c->at < next)
                next = c->at;
        }
        n = epoll_wait(so.ep, evs, 64, next > now ? (int)((next - now + 999999) / 1000000) : 0);
        for (int k = 0; k < n; k++) {
            struct sconn *c = (struct sconn *)evs[k].data.ptr;
            if (c->fd >= 0) /* (a stale event of a replaced connection reads EAGAIN) */
                soak_read(c);
        }
    }
    for (int i = 0; i < conns; i++) {
        if (cc[i].busy || cc[i].phase == SC_PARTIAL_WAIT)
            sk.lost++; /* no fate within the drain time: a hang */
        if (cc[i].fd >= 0)
            close(cc[i].fd);
    }
    close(so.ep);
    free(cc);
    sleep_ns(200000000LL); /* let the front-end see those last closes before SIGTERM */
    return rc;
}

static int soak_bad;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void soak_require(int ok, const char *fmt, ...)
{
    va_list ap;
    if (ok)
        return;
    soak_bad++;
    va_start(ap, fmt);
    fprintf(stderr, "oltp soak: FAILED: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
}

/* The equations. C: the clients (sk), F: the front-end's line, B: the back-end's. */
static void soak_check(const struct child *fec, const struct child *bec, int conns, int nmux,
                       int secs)
{
    const char *f = fec->stats, *b = bec->stats;
#define F(k) stat_field(f, k)
#define B(k) stat_field(b, k)
    unsigned long long f_ok = F("ok"), f_calls = F("calls"), f_failed = F("failed");
    unsigned long long f_fail[NOTE_N], d_fail[NOTE_N], d_ok = F("d_ok"), notes = 0, unseen = 0;
    unsigned long long closes = F("client_eof") + F("client_err") + F("idle_closed") + F("closed");
    unsigned long long ticks = F("ticks"), tick_exp = F("tick_expected"), txns = B("txns");

    f_fail[NOTE_RESET] = F("reset");
    f_fail[NOTE_TIMEOUT] = F("timedout");
    f_fail[NOTE_NO_BACKEND] = F("no_backend");
    f_fail[NOTE_OTHER] = f_failed - f_fail[NOTE_RESET] - f_fail[NOTE_TIMEOUT] -
                         f_fail[NOTE_NO_BACKEND];
    d_fail[NOTE_RESET] = F("d_reset");
    d_fail[NOTE_TIMEOUT] = F("d_timeout");
    d_fail[NOTE_NO_BACKEND] = F("d_no_backend");
    d_fail[NOTE_OTHER] = F("d_other");
    for (int r = 1; r < NOTE_N; r++)
        notes += F(r == NOTE_RESET ? "notes_reset" : r == NOTE_TIMEOUT ? "notes_timeout"
                   : r == NOTE_NO_BACKEND ? "notes_no_backend" : r == NOTE_OTHER ? "notes_other"
                   : "notes_idle");

    /* the processes */
    soak_require(fec->status == 0 && fec->stats[0] != '\0',
                 "the front-end exited %d on SIGTERM (stats line: %s)", fec->status,
                 fec->stats[0] ? "yes" : "none");
    soak_require(bec->status == 0 && bec->stats[0] != '\0',
                 "the back-end exited %d on SIGTERM (stats line: %s)", bec->status,
                 bec->stats[0] ? "yes" : "none");
    soak_require(strstr(b, "consistent=yes") != NULL, "the back-end's table is inconsistent");
    /* the clients: every request has exactly one fate, and it is explained */
    soak_require(sk.sent == sk.ok + sk.wrong + soak_failed() + sk.lost,
                 "sent %llu != ok %llu + wrong %llu + failed %llu + lost %llu", sk.sent, sk.ok,
                 sk.wrong, soak_failed(), sk.lost);
    soak_require(sk.wrong == 0, "%llu replies failed wire_check", sk.wrong);
    soak_require(sk.lost == 0, "%llu requests had no outcome after the drain (a hang)", sk.lost);
    soak_require(sk.unexplained == 0, "%llu requests ended by a close without a notice",
                 sk.unexplained);
    soak_require(sk.stray_reply + sk.bad_notice + sk.eof_idle + sk.idle_expired == 0,
                 "anomalies: stray_reply=%llu bad_notice=%llu eof_idle=%llu idle_expired=%llu",
                 sk.stray_reply, sk.bad_notice, sk.eof_idle, sk.idle_expired);
    soak_require(sk.d_sent == sk.d_ok + sk.self_reset + sk.d_srv[NOTE_RESET] +
                                  sk.d_srv[NOTE_TIMEOUT] + sk.d_srv[NOTE_NO_BACKEND] +
                                  sk.d_srv[NOTE_OTHER] + sk.d_srv[NOTE_IDLE],
                 "doomed requests: sent %llu != ok + self_reset + notified", sk.d_sent);
    /* client <-> front-end, exactly, for the requests nobody reset under */
    soak_require(f_ok - d_ok == sk.ok - sk.d_ok,
                 "calls that succeeded (not doomed) %llu != replies the clients checked %llu",
                 f_ok - d_ok, sk.ok - sk.d_ok);
    for (int r = 1; r < NOTE_IDLE; r++)
        soak_require(f_fail[r] - d_fail[r] == sk.srv[r] - sk.d_srv[r],
                     "calls that failed with %s (not doomed) %llu != notices the clients got %llu",
                     note_name[r], f_fail[r] - d_fail[r], sk.srv[r] - sk.d_srv[r]);
    /* ... and within bounds for the doomed ones: what the clients missed went to
     * connections they reset under the request */
    for (int r = 1; r < NOTE_IDLE; r++)
        unseen += d_fail[r] - sk.d_srv[r];
    unseen += d_ok - sk.d_ok;
    soak_require(d_ok >= sk.d_ok && F("d_calls") <= sk.d_sent && unseen <= sk.self_reset,
                 "doomed: calls %llu ok %llu, clients sent %llu got %llu ok, %llu unseen > "
                 "%llu self resets",
                 F("d_calls"), d_ok, sk.d_sent, sk.d_ok, unseen, sk.self_reset);
    soak_require(f_fail[NOTE_OTHER] == 0, "%llu calls failed for no reason we can name",
                 f_fail[NOTE_OTHER]);
    soak_require(sk.idle_notices <= F("notes_idle"),
                 "the clients got %llu idle notices, the front-end sent %llu", sk.idle_notices,
                 F("notes_idle"));
    /* the front-end's own books */
    soak_require(notes + F("note_lost") == f_failed + F("idle_closed"),
                 "notices %llu + lost %llu != failed calls %llu + idle closes %llu", notes,
                 F("note_lost"), f_failed, F("idle_closed"));
    soak_require(F("closed") == f_failed + F("reply_lost"),
                 "failure closes %llu != failed calls %llu + replies lost %llu", F("closed"),
                 f_failed, F("reply_lost"));
    soak_require(F("clients") == sk.opened,
                 "the front-end accepted %llu connections, the clients opened %llu", F("clients"),
                 sk.opened);
    soak_require(closes <= F("clients") && closes + (unsigned long long)conns >= F("clients"),
                 "client connections closed %llu, accepted %llu", closes, F("clients"));
    soak_require(F("tm_cancel_ok") + F("tm_cancel_none") == closes,
                 "idle timers cancelled %llu + %llu != connections closed %llu", F("tm_cancel_ok"),
                 F("tm_cancel_none"), closes);
    soak_require(F("tm_fired") >= F("idle_closed"), "idle closes %llu > idle timer expiries %llu",
                 F("idle_closed"), F("tm_fired"));
    soak_require(F("bound_replies") == f_ok, "lf_bound delivered %llu replies, calls ok %llu",
                 F("bound_replies"), f_ok);
    soak_require(F("timeouts") == f_fail[NOTE_TIMEOUT],
                 "lf_bound timed out %llu joins, calls timed out %llu", F("timeouts"),
                 f_fail[NOTE_TIMEOUT]);
    /* a stray reply (its id nobody waits for) is one whose call ended without it: a
     * timeout, a cancel, or a connection failure with the reply already on its way
     * (lf_bound reads what is buffered before it sees the end) */
    soak_require(F("stray") <= F("timeouts") + F("bound_cancels") + f_fail[NOTE_RESET] &&
                     F("stray") <= txns - f_ok,
                 "stray replies %llu > calls that ended without their reply %llu, or > "
                 "transactions whose reply no call took %llu",
                 F("stray"), F("timeouts") + F("bound_cancels") + f_fail[NOTE_RESET], txns - f_ok);
    soak_require(tick_exp < 8 || (ticks * 4 >= tick_exp && ticks <= tick_exp + 1),
                 "%llu ticks of the 100 ms timer in %llu periods", ticks, tick_exp);
    soak_require(F("reopen_failed") == 0 && F("reopens") <= F("retires") &&
                     F("retires") <= F("reopens") + (unsigned long long)nmux,
                 "re-opens %llu, failed %llu, retired %llu", F("reopens"), F("reopen_failed"),
                 F("retires"));
    /* front-end <-> back-end: a transaction whose reply was lost belongs to a call
     * that failed by a reset or a timeout */
    soak_require(txns >= f_ok && txns <= f_calls - f_fail[NOTE_NO_BACKEND] &&
                     txns - f_ok <= f_fail[NOTE_RESET] + f_fail[NOTE_TIMEOUT],
                 "back-end transactions %llu, calls %llu ok %llu reset %llu timed out %llu", txns,
                 f_calls, f_ok, f_fail[NOTE_RESET], f_fail[NOTE_TIMEOUT]);
    /* and the soak did what it says (over a minute, missing a kind is not luck) */
    if (secs >= 60) {
        soak_require(sk.opened > (unsigned long long)conns && sk.resets > 0 &&
                         sk.self_reset > 0 && sk.partial > 0 && sk.idle_notices > 0,
                     "too little client churn: opened %llu resets %llu self_reset %llu partial "
                     "%llu idle closes %llu",
                     sk.opened, sk.resets, sk.self_reset, sk.partial, sk.idle_notices);
        soak_require(B("breaks") + F("breaks") > 0 && F("reopens") > 0 && B("stalls") > 0,
                     "too little chaos: breaks %llu+%llu, re-opens %llu, stalls %llu", B("breaks"),
                     F("breaks"), F("reopens"), B("stalls"));
    }
#undef F
#undef B
}

static int soak_main(int argc, char **argv)
{
    int conns = 32, secs = -1, threads = 4, nmux = 2, work = 200, deadline_ms = 500,
        idle_ms = 200, have_seed = 0;
    unsigned long long seed = 0;
    const char *self = "/proc/self/exe";
    char s_t[16], s_m[16], s_p[16], s_d[16], s_i[16], s_x[16];
    struct child bec, fec;
    int bport, fport, rc;

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
        else if (strcmp(o, "-i") == 0)
            parse_int(o, argv[i + 1], &idle_ms);
        else if (strcmp(o, "-S") == 0) {
            char *end;
            seed = strtoull(argv[i + 1], &end, 0);
            if (argv[i + 1][0] == '\0' || *end != '\0') {
                fprintf(stderr, "oltp: bad value for -S: %s\n", argv[i + 1]);
                return 2;
            }
            have_seed = 1;
        } else {
            fprintf(stderr, "usage: oltp soak -s SECONDS [-c CONNS] [-t THREADS] [-m MUX] "
                            "[-w WORK] [-S SEED] [-d DEADLINE_MS] [-i IDLE_MS]\n");
            return 2;
        }
    }
    if (secs < 1 || conns < 1 || threads < 1 || nmux < 1 || deadline_ms < 1 || idle_ms < 1) {
        fprintf(stderr, "oltp soak: -s is required; -s, -c, -t, -m, -d and -i must be "
                        "at least 1\n");
        return 2;
    }
    if (!have_seed)
        seed = (unsigned long long)time(NULL) ^ ((unsigned long long)getpid() << 32);
    soak_rng = seed;
    so.work = (uint32_t)work;
    so.idle_ns = (long long)idle_ms * 1000000LL;
    so.next_conn = 1;
    signal(SIGPIPE, SIG_IGN);
    srv_raise_nofile();
    snprintf(s_t, sizeof s_t, "%d", threads);
    snprintf(s_m, sizeof s_m, "%d", nmux);
    snprintf(s_d, sizeof s_d, "%d", deadline_ms);
    snprintf(s_i, sizeof s_i, "%d", idle_ms);
    snprintf(s_x, sizeof s_x, "%d", 3 * deadline_ms); /* a stall: its call times out */
    fprintf(stderr, "oltp soak: seed=%llu secs=%d conns=%d threads=%d mux=%d work=%d "
                    "deadline_ms=%d idle_ms=%d (rerun: -S %llu)\n",
            seed, secs, conns, threads, nmux, work, deadline_ms, idle_ms, seed);

    memset(&bec, 0, sizeof bec);
    memset(&fec, 0, sizeof fec);
    bec.name = "backend";
    fec.name = "frontend";
    {
        char *bargv[] = { "oltp", "backend", "-p", "0", "-t", s_t, "-R", s_x, NULL };
        if (spawn(&bec, self, bargv) != 0 || (bport = read_port(&bec, 10000)) < 0) {
            fprintf(stderr, "oltp soak: the back-end did not start\n");
            return 2;
        }
    }
    snprintf(s_p, sizeof s_p, "%d", bport);
    {
        char *fargv[] = { "oltp", "frontend", "-p", "0", "-b", s_p, "-m", s_m, "-t", s_t,
                          "-d", s_d, "-R", s_i, NULL };
        if (spawn(&fec, self, fargv) != 0 || (fport = read_port(&fec, 10000)) < 0) {
            fprintf(stderr, "oltp soak: the front-end did not start\n");
            kill(bec.pid, SIGKILL);
            return 2;
        }
    }
    so.port = fport;
    rc = soak_clients(conns, secs, 2LL * deadline_ms * 1000000LL + 5000000000LL, fec.pid,
                      bec.pid);

    kill(fec.pid, SIGTERM);
    reap(&fec, 30000);
    kill(bec.pid, SIGTERM);
    reap(&bec, 30000);

    soak_require(rc == 0, "the run was cut short");
    soak_check(&fec, &bec, conns, nmux, secs);
    printf("oltp soak %s: seed=%llu secs=%d conns=%d threads=%d mux=%d work=%d sent=%llu "
           "ok=%llu failed=%llu (connect=%llu partial=%llu self_reset=%llu srv_reset=%llu "
           "srv_timeout=%llu srv_no_backend=%llu srv_other=%llu idle_race=%llu "
           "unexplained=%llu) wrong=%llu lost=%llu doomed=%llu conns_opened=%llu "
           "closed=%llu reset=%llu idle_closed=%llu late=%llu be_breaks=%llu fe_breaks=%llu "
           "fe_breaks_all=%llu stalls=%llu | %s | %s\n",
           soak_bad ? "FAIL" : "PASS", seed, secs, conns, threads, nmux, work, sk.sent, sk.ok,
           soak_failed(), sk.connect, sk.partial, sk.self_reset, sk.srv[NOTE_RESET],
           sk.srv[NOTE_TIMEOUT], sk.srv[NOTE_NO_BACKEND], sk.srv[NOTE_OTHER], sk.srv[NOTE_IDLE],
           sk.unexplained, sk.wrong, sk.lost, sk.d_sent, sk.opened, sk.closes, sk.resets,
           sk.idle_notices, sk.late, sk.be_breaks, sk.fe_breaks, sk.fe_breaks_all, sk.stalls,
           fec.stats[0] ? fec.stats : "fe (no stats)", bec.stats[0] ? bec.stats : "be (no stats)");
    return soak_bad ? 1 : 0;
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
