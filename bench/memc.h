/* SPDX-License-Identifier: MIT (the licence text is at the end of this file) */
/* memc.h - a memcached client on lf_bound.h: many threads share ONE connection and
 * speak memcached's binary protocol over it. The request's `opaque` field is the
 * bound's request id, so each reply finds the thread that waits for it, in whatever
 * order the replies come. When the connection breaks, memc_reconnect puts a new one
 * in its place while other threads go on calling. That connection (dialling,
 * sharing, replacing) is lf_conn.h's, which bench/redis.h shares; this file is
 * memcached's protocol on it.
 *
 * QUICK START
 *   memc m;
 *   memc_open_until(&m, "127.0.0.1", 11211, &deadline);     (memc_open: no deadline)
 *   then, from any number of threads (a deadline, or NULL to wait for good):
 *   rc = memc_set(&m, "k", val, len, flags, 0, deadline);
 *   rc = memc_get(&m, "k", buf, sizeof buf, &len, &flags, deadline);
 *   rc = memc_delete(&m, "k", deadline);
 *   if (rc == ECONNRESET || rc == EPIPE || rc == EPROTO)    the connection is dead:
 *       memc_reconnect(&m, deadline);  (any thread; many at once make one connection)
 *   at the end: memc_shutdown(&m) (wakes every waiter); join the threads; memc_close(&m);
 *
 *   In a server built on lf_reactor.h, calls made from its handlers can wait by
 *   serving the reactor (HYBRID below): include lf_reactor.h before memc.h, then
 *   memc_attach(&m, &reactor) once, before the threads start.
 *
 *   Deadlines are absolute CLOCK_MONOTONIC times (lf_deadline_in(&d, ns) makes one).
 *   Keys are C strings of 1..250 bytes.
 *
 * TO TAKE IT AWAY
 *   Copy memc.h, lf_conn.h, lf_bound.h and lf.h into one directory of your project
 *   (memc.h includes "lf_conn.h", which includes "lf_bound.h": found beside it or
 *   through -I). Nothing else: no liburcu, no other file of this repository. Build:
 *   cc -std=c11 -D_POSIX_C_SOURCE=200809L app.c -pthread (C11 and POSIX threads, as
 *   lf_bound.h needs; it also compiles as C++17). For memc_attach, lf_reactor.h too,
 *   and liburcu as that header says. Every file that shares a memc includes it with
 *   the same LF_PROMOTE and LF_SYNC (lf.h).
 *
 * RESULTS of memc_get, memc_set, memc_delete: one meaning each.
 *   0           done (get: the value is in buf, *len bytes, *flags its flags: 0 if
 *               the reply carried none)
 *   ENOENT      no such key (get, delete)             memcached status 0x0001
 *   EEXIST      the key exists (a CAS mismatch)       0x0002
 *   E2BIG       the value is too large for the server 0x0003
 *   EINVAL      invalid arguments: ours (a key of 0 or over 250 bytes, say: then
 *               memc_last_status() is 0), or the server's 0x0004
 *   ENOMEM      the server is out of memory           0x0082
 *   EIO         any other status (memc_last_status() of the thread says which)
 *   EMSGSIZE    get: the value does not fit in buf; *len says how long it is. The
 *               connection goes on. (Any length the protocol allows, up to
 *               MEMC_MAX_BODY: memcached started with -I above 1m may hold them.)
 *   ECONNRESET  the connection ended (memcached went away) before the reply came: a
 *               set or a delete may have been applied. Every waiter on it wakes with
 *               it, and calls fail on it from now on (ECONNRESET, or EPIPE if the
 *               write side broke first): the connection is dead: memc_reconnect
 *   EPIPE       the request could not be sent: the write side broke, or an earlier
 *               request was cut off mid-way (its deadline passed while the socket
 *               was full, so the stream holds half a request). Nothing of this
 *               request was applied. Calls fail on that connection from now on, even
 *               if replies still come: it is dead (memc_reconnect)
 *   EPROTO      the byte stream is not memcached's: a bad magic byte, a body length
 *               over MEMC_MAX_BODY (the connection is dead, and every waiter and
 *               later call on it gets EPROTO: memc_reconnect). Or one reply that does
 *               not answer this request: another opcode, extras and key longer than
 *               its body, a value in the reply to a set or a delete (that reply is
 *               skipped whole, buf is not written; the connection goes on)
 *   ETIMEDOUT   the deadline passed first (a late reply is dropped). The request
 *               may have been sent, even with a deadline already past: a set or a
 *               delete may have been applied
 *   ECANCELED   memc_shutdown came first (hybrid: or the reactor was stopped):
 *               nothing of the request was sent
 *   ECONNABORTED
 *               memc_shutdown (or the reactor's stop) came after the request was
 *               sent, before its reply: a set or a delete may have been applied
 *   ENOMEM      (as above) also: no memory for a large request
 *   With automatic reconnection (memc_auto_reconnect), also what memc_reconnect
 *   returns (ECONNREFUSED, ETIMEDOUT, ...): the new connection could not be made,
 *   and nothing of the request was sent.
 *   A call never retries by itself: a set or a delete that met an error may have
 *   been applied, and only the caller knows whether doing it twice is harmless.
 *
 * OPEN AND RECONNECT
 *   int memc_open_until(memc *m, const char *host, int port, deadline)
 *   int memc_open(memc *m, const char *host, int port)             (no deadline)
 *       host is an address (IPv4 or IPv6, no lookup) or a name (getaddrinfo: the
 *       resolver takes its own time, which the deadline does not bound; pass an
 *       address to keep it strict). Each address of the name is tried in turn with a
 *       non-blocking connect, polled until the deadline (NULL: the kernel's own
 *       connect timeout, minutes); the socket is close-on-exec, TCP_NODELAY. A
 *       deadline already past still makes one attempt: a connect that completes at
 *       once (loopback) succeeds. host and port are kept for memc_reconnect. 0, or:
 *         ECONNREFUSED  nothing listens there       ETIMEDOUT  the deadline passed
 *         ENETUNREACH, EHOSTUNREACH  no route       ENXIO      the name has no address
 *         EAGAIN        the resolver failed for now EINVAL     host NULL or longer
 *         ENOMEM, EMFILE, ...                           than MEMC_HOST_MAX, port not
 *                                                       1..65535, a bad deadline
 *   int memc_reconnect(memc *m, deadline)
 *       A connection is DEAD once a call on it returned ECONNRESET, EPIPE or the
 *       stream's EPROTO (or a deadline cut a request off half sent), or lf_bound saw
 *       it fail. memc_reconnect then opens a new one to the same host and port (as
 *       memc_open_until, and attached to the same reactor after memc_attach) and
 *       puts it in the dead one's place: calls that start after that use the new
 *       one; calls still on the old one finish there (with their replies or the
 *       error), and the last of them shuts the old connection down, destroys its
 *       bound and closes its socket. Any thread, any time, many at once: one new
 *       connection is made per dead one. A thread that finds one being made waits
 *       for it (up to its own deadline: ETIMEDOUT) and returns its result; with the
 *       current connection alive, 0 at once and nothing done. 0 (a live connection
 *       is in place), the errors of memc_open_until (the dead connection stays in
 *       place: calls on it fail at once; call again later), ECANCELED after
 *       memc_shutdown (one under way gives up within 50 ms), EINVAL a bad deadline.
 *   int memc_auto_reconnect(memc *m, int on)
 *       on: the first call to find the current connection dead calls memc_reconnect
 *       first, with its own deadline (as many calls at once make one connection).
 *       The call that MET the failure still returns it: nothing is retried. Off by
 *       default. Any thread, any time; calls that start later see it.
 *
 * THE OTHER FUNCTIONS
 *   int memc_shutdown(memc *m)        Final: every call waiting, on any connection,
 *       returns ECONNABORTED (or ECANCELED if nothing of it was sent), later calls
 *       and reconnects ECANCELED. Any thread, any time, handlers too.
 *   int memc_close(memc *m)           After memc_shutdown or not: closes the
 *       connection and frees everything. EBUSY (nothing done) while a call or a
 *       reconnect is under way, or an old connection is still held by a call; join
 *       the threads first. No thread may start a call once it returned 0.
 *   int memc_stats(memc *m, struct memc_stats *out)   the current connection's
 *       lf_bound_stats, how many connections memc_reconnect made, how many are open
 *       (the current one, and old ones that calls still hold) and the calls holding
 *       one. Any thread, any time.
 *   unsigned memc_last_status(void)   the memcached status of this thread's last
 *       reply (0 when none came).
 *   const char *memc_strerror(int rc)  what a result means, in a few words.
 *   int memc_attach(memc *m, lf_reactor *r)     (with lf_reactor.h: see HYBRID)
 *   int memc_set_nest_max(memc *m, int levels)  hybrid: how many nested waits on one
 *       thread serve the reactor (lf_bound_set_nest_max), for every open connection
 *       and every one memc_reconnect makes. Any thread, any time: calls that start
 *       later use it. EINVAL: levels < 0, or m not open. See HYBRID.
 *
 * HYBRID (lf_bound.h's Hybrid Thread Associations)
 *   memc_attach(m, r) makes the connection a handle of the reactor r
 *   (lf_bound_attach), before any thread uses m: then a call waits by turning r, so
 *   a handler of r that calls memc_get serves r's other handles while its reply is
 *   on the way, and a server whose threads all wait for memcached cannot dead-lock.
 *   Every connection memc_reconnect makes is attached to r too, before any call can
 *   take it. Offered where lf_reactor.h was included before memc.h and before
 *   anything that includes lf_bound.h or lf_conn.h (redis.h too), as
 *   lf_bound_attach is; r: not LF_REACTOR_CONCURRENT, not in a group. r's storage
 *   must outlive memc_close (as for lf_bound_destroy). lf_reactor_stop makes calls
 *   return ECANCELED or ECONNABORTED (as memc_shutdown does), and a reconnect that
 *   has a connection to replace ECANCELED.
 *   A reconnect made in a handler (memc_reconnect, or a call in automatic mode)
 *   holds that thread in its connect, up to its deadline; the reactor's other
 *   threads go on. Calls nest as lf_bound.h's NESTING says.
 *   memc_set_nest_max(m, levels): the nesting limit (LF_BOUND_NEST_MAX by default)
 *   is m's, not one connection's: it is set on every open connection, and on each
 *   new one memc_reconnect makes before any call can take it, so a limit set once
 *   holds over reconnects. levels 0: calls never serve the reactor (each waits on
 *   its connection alone, and a thread holds one call at most). Without memc_attach
 *   it is kept but changes nothing (a bare call serves nothing).
 *
 * ASYNCHRONOUS CALLS (attached m; lf_bound.h, ASYNCHRONOUS CALLS)
 *   A blocking call holds its thread until the reply (hybrid: a nesting level of its
 *   stack). A server that wants a call in flight for every busy client starts it
 *   instead, and takes the result when its handler is told:
 *     memc_op op;      (the caller's, e.g. in its connection's struct: it belongs to
 *                       m from a start that returned 0 until memc_finish takes it)
 *     rc = memc_get_start(&m, &op, key, buf, cap, &handler, deadline);
 *     rc = memc_set_start(&m, &op, key, val, len, flags, exptime, &handler, deadline);
 *         0: the request is queued, a copy of it (val and key may go at once; buf
 *         must stay put until finish): the start never waits for room; handler
 *         gets LF_EV_NOTIFY when the result is in (never before the start returns;
 *         started from another thread, op is that thread's until then: handler must
 *         not finish it before, keep a flag of your own). A send that fails later
 *         is the call's result (EPIPE; ETIMEDOUT: not sent by its deadline;
 *         ECANCELED, not sent, or ECONNABORTED: a shutdown). Anything else:
 *         nothing is in flight, the result is a blocking call's (ECANCELED after
 *         memc_shutdown or the reactor's stop, ECONNRESET, EPIPE, ENOMEM, EINVAL
 *         also for op in flight or handler NULL, ...).
 *     in handler, on LF_EV_NOTIFY:
 *     rc = memc_finish(&m, &op, &len, &flags);     (len, flags: a get's; may be NULL)
 *         EINPROGRESS: not in yet (a notification may stand for another call, or come
 *         for one already taken); else the result, with RESULTS' meanings, and op is
 *         free again (the connection let go). EINVAL: op has no call in flight.
 *     rc = memc_abort(&m, &op);   ends the wait (not the request: it may be applied):
 *         0, and memc_finish then says ECANCELED; ENOENT: the result is in already
 *         (memc_finish takes it); EINVAL: nothing in flight. The deadline after the
 *         send: an lf_timer on handler, whose LF_EV_TIMEOUT aborts and finishes.
 *   handler's handle_close (which lf_reactor_destroy also runs) aborts and finishes a
 *   call still in flight before op's memory goes. A start from a thread other than
 *   handler's uses op until it returns (memc_abort waits for its lf_bound_start, but
 *   op is written once more after that): handle_close must not free op while such a
 *   start may be under way; synchronise with that thread, as for any memory two
 *   threads share (or start from handler alone, as bench/gw_lf.c does). memc_close says EBUSY until every
 *   op is finished. Without lf_reactor.h included first there are no starts
 *   (memc_finish and memc_abort are there, and say EINVAL).
 *
 * CALLING CONTEXTS
 *   get, set, delete
 *     many threads at once       each call takes the current connection, uses it,
 *                                lets it go: no lock is held while it waits
 *     from a reactor handler     hybrid: the wait serves the reactor; else it blocks
 *                                the handler's thread
 *     during a reconnect         a call that started before the swap finishes on the
 *                                old connection, one after it on the new one
 *     after memc_shutdown        ECANCELED, nothing sent
 *     cancelled (pthread_cancel) in its wait (lf_bound.h, CANCELLATION): a cleanup
 *                                handler lets the connection go and frees the request
 *                                (the last call to let an old connection go closes it)
 *   memc_reconnect
 *     many threads at once       one new connection per dead one; the others wait
 *     from a reactor handler     yes (see HYBRID)
 *     current connection alive   0 at once
 *     after memc_shutdown        ECANCELED
 *     cancelled in its connect   the socket is closed and the attempt given up: a
 *     or its wait                thread waiting for it makes its own
 *   memc_get_start, memc_set_start: as get and set (no wait but the send's); from
 *     handler itself, another handler, a handle_close or any thread.
 *   memc_finish: the owner of op (handler, on LF_EV_NOTIFY or LF_EV_TIMEOUT, or its
 *     handle_close); never waits. memc_abort: any thread, while op is in flight.
 *   memc_shutdown, memc_stats, memc_auto_reconnect, memc_set_nest_max,
 *   memc_last_status: any thread, any time. memc_open*, memc_attach: before any other
 *   thread uses m. memc_close: once no call is under way (EBUSY otherwise); nothing
 *   after it.
 *
 * HOW THE CONNECTION IS SHARED, AND WHAT IT COSTS
 *   m holds its current connection (lf_conn.h's struct lf_conn_link: lf_bound,
 *   socket, a count of references) behind a pointer. A call takes a reference to it
 *   (under m's mutex: load the pointer, add one), makes its request with no lock
 *   held, and drops the reference (under the mutex again; it also marks the
 *   connection dead after a connection error). The mutex is held for those few
 *   instructions only, and the memc holds one reference of its own on the current
 *   connection, so a connection is freed exactly when it is no longer current and
 *   its last call has let it go, by that call. The mutex costs a call 47 ns of CPU
 *   for its two lock/unlock pairs, against 16 ns for the two atomic operations that
 *   any lock-free scheme needs at least (bench/memc_refs.c: 8 threads taking and
 *   dropping with nothing in between, on a 2-vCPU x86-64 VM); a call costs the
 *   client 5 to 20 us of CPU (bench/memc_bench.c, 8 threads; 7 the median), so the
 *   difference is under 0.6%, well inside memc_bench's spread from run to run. A
 *   lock-free scheme would also have to keep a thread that loaded the pointer from
 *   counting on a connection being freed (hazard pointers, or memory that is never
 *   freed while m lives): more code than 30 ns buy here.
 *
 * WHY THE HEADER HOOK SAYS "ONE BYTE OF HEADER"
 *   A memcached reply carries its status (and the extras' and key's lengths) in its
 *   24-byte header, and lf_bound hands a context its body only: what the header
 *   hook learns (id, body length) is all that reaches the waiting thread. So the
 *   hook reads the whole 24-byte header (total body length at offset 8, opaque at
 *   12), but reports a header of 1 byte (the magic) and a body of 23 + total bytes:
 *   the other 23 header bytes then reach this reply's read_body hook, which keeps
 *   them with the call and places the value straight into the caller's buffer.
 *
 * LIMITS
 *   - Request ids are 32 bits (opaque) and wrap: an id is not reused while 2^32
 *     requests have not been sent since, which covers any late reply of a timed-out
 *     call in practice.
 *   - Only get, set and delete, never the quiet variants (each request here has
 *     exactly one reply) nor multi-packet replies (stat).
 *   - Requests up to MEMC_STACK_REQ bytes are built on the stack, larger ones in one
 *     heap block: lf_bound_send writes one whole buffer, never interleaved.
 *   - One server per memc (no key distribution over several), and a dead connection
 *     is noticed by a call that meets the failure: with no call under way, nothing
 *     reads the socket, so nothing sees memcached go.
 *   - A reconnect's host name is looked up again each time (getaddrinfo, no deadline).
 *   - A reconnect made the moment memcached dies can land in the dying server's
 *     accept queue, which the kernel then resets: that connection dies too, and the
 *     next reconnect replaces it (one per dead one; test/memcached.sh sees it happen).
 *     Waiting a little before reconnecting (a timer, a sleep) makes it rarer.
 */
#ifndef MEMC_H_INCLUDED
#define MEMC_H_INCLUDED

#include "lf_conn.h" /* (and through it lf_bound.h and lf.h) */

#define MEMC_KEY_MAX 250
#define MEMC_HDR 24
#define MEMC_MAX_VALUE (1u << 20) /* memcached's default item size limit (-I 1m) */
/* The longest reply body (header after the magic, extras, key, value) believed: a
 * longer one means a stream out of step, and fails the connection (EPROTO). The
 * default covers memcached's largest item size, -I 1024m. */
#ifndef MEMC_MAX_BODY
#define MEMC_MAX_BODY ((size_t)(MEMC_HDR - 1 + 8 + MEMC_KEY_MAX) + ((size_t)1 << 30))
#endif
#define MEMC_STACK_REQ 1024
#define MEMC_HOST_MAX LF_CONN_HOST_MAX /* the longest host name memc_open takes (255) */

enum { MEMC_OP_GET = 0x00, MEMC_OP_SET = 0x01, MEMC_OP_DELETE = 0x04 };
enum { MEMC_REQUEST = 0x80, MEMC_RESPONSE = 0x81 };

struct memc_stats {
    struct lf_bound_stats bound;   /* the current connection's (lf_bound_stats) */
    unsigned long long reconnects; /* connections memc_reconnect made and put in place */
    unsigned conns;                /* open now: the current one, and old ones still held */
    unsigned calls;                /* calls holding a connection now */
};

typedef struct memc {
    /* private: memc_open_until sets every field */
    lf_conn conn;                 /* the connection, shared and replaced (lf_conn.h) */
    LF__ATOMIC(unsigned) next_id; /* the next opaque (lf.h's atomics: C11, or C++'s) */
} memc;

struct memc_op; /* an asynchronous call (ASYNCHRONOUS CALLS): the caller's storage */

/* ------------------------------------------------------------------ the wire
 * Shared with code that speaks the protocol without lf_bound (the benchmark's
 * mutex variant). Big-endian throughout. */

static inline void memc_put16(unsigned char *p, unsigned v)
{
    p[0] = (unsigned char)(v >> 8);
    p[1] = (unsigned char)v;
}

static inline void memc_put32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static inline unsigned memc_get16(const unsigned char *p)
{
    return (unsigned)p[0] << 8 | p[1];
}

static inline uint32_t memc_get32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Bytes a request needs: header, extras, key, value. */
static inline size_t memc_request_len(size_t elen, size_t klen, size_t vlen)
{
    return MEMC_HDR + elen + klen + vlen;
}

/* Write one request into out (memc_request_len bytes). */
static inline void memc_encode(unsigned char *out, unsigned opcode, uint32_t opaque,
                               const void *extras, size_t elen, const char *key, size_t klen,
                               const void *val, size_t vlen)
{
    memset(out, 0, MEMC_HDR);
    out[0] = MEMC_REQUEST;
    out[1] = (unsigned char)opcode;
    memc_put16(out + 2, (unsigned)klen);
    out[4] = (unsigned char)elen;
    memc_put32(out + 8, (uint32_t)(elen + klen + vlen)); /* total body length */
    memc_put32(out + 12, opaque);
    if (elen)
        memcpy(out + MEMC_HDR, extras, elen);
    memcpy(out + MEMC_HDR + elen, key, klen);
    if (vlen)
        memcpy(out + MEMC_HDR + elen + klen, val, vlen);
}

/* A reply's status as our result (see RESULTS). */
static inline int memc_status_errno(unsigned status)
{
    switch (status) {
    case 0x0000: return 0;
    case 0x0001: return ENOENT;
    case 0x0002: return EEXIST;
    case 0x0003: return E2BIG;
    case 0x0004: return EINVAL;
    case 0x0082: return ENOMEM;
    default: return EIO;
    }
}

static inline const char *memc_strerror(int rc)
{
    switch (rc) {
    case 0: return "ok";
    case ENOENT: return "no such key";
    case EEXIST: return "key exists";
    case E2BIG: return "value too large for the server";
    case EINVAL: return "invalid arguments";
    case ENOMEM: return "out of memory";
    case EIO: return "other server status";
    case EMSGSIZE: return "value longer than the buffer";
    case ECONNRESET: return "connection ended";
    case EPIPE: return "could not send";
    case EPROTO: return "protocol error";
    case ETIMEDOUT: return "timed out";
    case ECONNREFUSED: return "refused: nothing listens there";
    case EHOSTUNREACH: return "host unreachable";
    case ENETUNREACH: return "network unreachable";
    case ENXIO: return "no such host";
    case ECANCELED: return "shut down";
    case ECONNABORTED: return "shut down after sending";
    default: return "error";
    }
}

/* ------------------------------------------------------------------ the hooks */

/* One call in flight: the bound's context first (read_body gets a pointer to it),
 * then what read_body fills in from the reply. */
struct memc__call {
    lf_bound_ctx ctx;
    unsigned char hdr[MEMC_HDR - 1]; /* the reply's header without its magic byte */
    void *val;                       /* get: the caller's buffer */
    size_t cap;
    size_t vlen;                     /* the value's length in the reply */
    unsigned op;                     /* the request's opcode */
    unsigned char flags[4];          /* get: the item's flags (the reply's extras) */
};

/* header bytes as hdr[] holds them: header offset i is hdr[i - 1] */
#define MEMC__H(call, i) ((call)->hdr[(i) - 1])

static int memc__frame(void *user, const unsigned char *p, size_t avail, size_t *hlen,
                       uint64_t *id, size_t *blen)
{
    (void)user;
    if (avail < MEMC_HDR)
        return EAGAIN;
    if (p[0] != MEMC_RESPONSE)
        return EPROTO;
    *id = memc_get32(p + 12);
    *hlen = 1; /* the magic only: the rest of the header goes to read_body (see above) */
    /* in size_t: a 32-bit sum would wrap a total near 2^32 to a small length that
     * passes max_body. Where size_t is 32 bits too, the wrap is caught here. */
    *blen = (size_t)(MEMC_HDR - 1) + (size_t)memc_get32(p + 8);
    return *blen < (size_t)memc_get32(p + 8) ? EPROTO : 0;
}

/* Copy what part of bytes [off, off + n) of the body falls in [at, at + len) to dst. */
static inline void memc__take(void *dst, size_t at, size_t len, const unsigned char *bytes,
                              size_t n, size_t off)
{
    size_t lo = off > at ? off : at, hi = off + n < at + len ? off + n : at + len;
    if (lo < hi)
        memcpy((unsigned char *)dst + (lo - at), bytes + (lo - off), hi - lo);
}

/* The body as lf_bound sees it: 23 header bytes, extras, key, value; any split. */
static int memc__body(void *user, lf_bound_ctx *c, const unsigned char *bytes, size_t n,
                      size_t off)
{
    struct memc__call *call = (struct memc__call *)(void *)c; /* ctx is the first member */
    size_t elen, klen, total, vat;
    (void)user;
    memc__take(call->hdr, 0, sizeof call->hdr, bytes, n, off);
    if (off + n < sizeof call->hdr)
        return 0; /* not the whole header yet: cannot happen today (memc__frame waits
                   * for all 24 bytes, and lf_bound hands over what it holds), kept
                   * so that the hook does not depend on it */
    elen = MEMC__H(call, 4);
    klen = memc_get16(&MEMC__H(call, 2));
    total = memc_get32(&MEMC__H(call, 8));
    if (elen + klen > total || MEMC__H(call, 1) != call->op)
        return EPROTO; /* the call fails with EBADMSG; memc__result says EPROTO */
    vat = sizeof call->hdr + elen + klen;
    call->vlen = total - elen - klen;
    if (elen >= 4)
        memc__take(call->flags, sizeof call->hdr, 4, bytes, n, off);
    if (memc_get16(&MEMC__H(call, 6)) != 0)
        return 0; /* an error's text: not wanted */
    if (call->vlen > call->cap)
        return EMSGSIZE; /* EBADMSG from the bound; memc__result says EMSGSIZE */
    if (call->val)
        memc__take(call->val, vat, call->vlen, bytes, n, off);
    return 0;
}

/* ------------------------------------------------------------------ the connection
 * lf_conn.h dials memcached, shares the connection and replaces a dead one (HOW THE
 * CONNECTION IS SHARED): each function here is lf_conn's, under memc's name and
 * contract. */

/* m's lf_conn; NULL for an m that is NULL (lf_conn's functions say EINVAL) */
#define MEMC__CONN(m) ((m) != NULL ? &(m)->conn : NULL)

/* Contract: once, before any thread uses m. 0 or an errno (see OPEN AND RECONNECT). */
static inline int memc_open_until(memc *m, const char *host, int port,
                                  const struct timespec *deadline)
{
    struct lf_bound_hooks h;
    int rc;
    memset(&h, 0, sizeof h);
    h.frame_header = memc__frame;
    h.read_body = memc__body;
    h.max_body = MEMC_MAX_BODY;
    /* no state per connection: each reply's findings go with its call (memc__body) */
    if ((rc = lf_conn_open_until(MEMC__CONN(m), host, port, &h, 0, 0, deadline)) == 0)
        lf__store(&m->next_id, 1u, relaxed); /* (no other thread has m yet) */
    return rc;
}

/* Contract: as memc_open_until, with no deadline. */
static inline int memc_open(memc *m, const char *host, int port)
{
    return memc_open_until(m, host, port, NULL);
}

/* Contract: any thread, any time, many at once (see OPEN AND RECONNECT). */
static inline int memc_reconnect(memc *m, const struct timespec *deadline)
{
    return lf_conn_reconnect(MEMC__CONN(m), deadline);
}

/* Contract: any thread, any time (see OPEN AND RECONNECT). */
static inline int memc_auto_reconnect(memc *m, int on)
{
    return lf_conn_auto_reconnect(MEMC__CONN(m), on);
}

/* Contract: any thread, any time (see HYBRID). Calls that start later use it. */
static inline int memc_set_nest_max(memc *m, int levels)
{
    return lf_conn_set_nest_max(MEMC__CONN(m), levels);
}

/* Contract: any thread, any time. Final: waiters on every connection return
 * ECONNABORTED, later calls and reconnects ECANCELED. */
static inline int memc_shutdown(memc *m)
{
    return lf_conn_shutdown(MEMC__CONN(m));
}

/* Contract: once no call and no reconnect is under way (else EBUSY, nothing done). */
static inline int memc_close(memc *m)
{
    return lf_conn_close(MEMC__CONN(m));
}

/* Contract: any thread, any time. */
static inline int memc_stats(memc *m, struct memc_stats *out)
{
    struct lf_conn_stats s;
    int rc;
    if (out == NULL)
        return EINVAL;
    rc = lf_conn_stats(MEMC__CONN(m), &s); /* (zeroed on EINVAL) */
    out->bound = s.bound;
    out->reconnects = s.reconnects;
    out->conns = s.conns;
    out->calls = s.calls;
    return rc;
}

#ifdef LF_REACTOR_H_INCLUDED
/* Contract: once, before any thread uses m (see HYBRID). 0, EBUSY attached already,
 * or what lf_bound_attach says (ENOTSUP, ECANCELED, ...). */
static inline int memc_attach(memc *m, lf_reactor *r)
{
    return lf_conn_attach(MEMC__CONN(m), r);
}
#endif

/* ------------------------------------------------------------------ the calls */

/* weak: one variable for the program, however many files include memc.h */
#ifdef __cplusplus
#define MEMC__THREAD_LOCAL thread_local
#else
#define MEMC__THREAD_LOCAL _Thread_local
#endif
extern MEMC__THREAD_LOCAL unsigned memc__last_status;
__attribute__((weak)) MEMC__THREAD_LOCAL unsigned memc__last_status;

/* Contract: any thread. The memcached status of its last reply (0 when none came). */
static inline unsigned memc_last_status(void)
{
    return memc__last_status;
}

/* What a call's bound result and the reply's header mean together. */
static inline int memc__result(struct memc__call *call, int rc, unsigned opcode)
{
    memc__last_status = 0;
    if (rc == EBADMSG) /* read_body refused: too long for the buffer, or nonsense */
        return opcode == MEMC_OP_GET && call->vlen > call->cap &&
                       memc_get16(&MEMC__H(call, 6)) == 0
                   ? EMSGSIZE
                   : EPROTO; /* set, delete: a value where none belongs; another opcode
                              * (memc__body refused it before setting vlen) */
    if (rc != 0)
        return rc; /* (a delivered reply answers this opcode: memc__body checked) */
    memc__last_status = memc_get16(&MEMC__H(call, 6));
    return memc_status_errno(memc__last_status);
}

/* a start cancelled in its send (lf_conn_start's cleanup let the connection go) */
static inline void memc__unkeep(void *keep)
{
    *(struct lf_conn_link **)keep = NULL;
}

#ifdef LF_REACTOR_H_INCLUDED
/* The start of an asynchronous call: the op names its connection before it (its
 * handler may look at it as soon as the start returns, which is before
 * memc__request does), and again none if the start fails or is cancelled. (A
 * function of its own: nothing changes between the cleanup's push and pop.) */
static inline void memc__start(struct lf_conn_guard *g, uint32_t id, const void *req,
                               size_t len, const struct timespec *deadline, lf_handler *h,
                               struct lf_conn_link **keep)
{
    *keep = g->c;
    pthread_cleanup_push(memc__unkeep, keep);
    lf_conn_start(g, id, req, len, deadline, h);
    pthread_cleanup_pop(0);
    if (g->rc != 0)
        *keep = NULL;
}
#endif

/* One request, one reply: take the connection, encode, send, wait, let it go. With
 * h (an lf_handler, attached): start the call instead, and on 0 leave the connection
 * held in *keep, for memc_finish. */
static inline int memc__request(memc *m, struct memc__call *call, unsigned opcode,
                                const void *extras, size_t elen, const char *key, const void *val,
                                size_t vlen, const struct timespec *deadline, void *h,
                                struct lf_conn_link **keep)
{
    unsigned char small[MEMC_STACK_REQ], *req = small;
    size_t klen = strlen(key), len = memc_request_len(elen, klen, vlen);
    struct lf_conn_guard g;
    uint32_t id;
    int rc;

    (void)h; /* (no reactor: no asynchronous call) */
    (void)keep;
    memc__last_status = 0;
    call->op = opcode;
    /* the value's limit is the server's (E2BIG), the protocol's 32 bits ours */
    if (m == NULL || klen == 0 || klen > MEMC_KEY_MAX ||
        vlen > UINT32_MAX - MEMC_HDR - elen - klen || !lf_conn_deadline_ok(deadline))
        return EINVAL;
    if ((rc = lf_conn_hold(&m->conn, &g.c, deadline)) != 0)
        return rc; /* nothing sent */
    g.cn = &m->conn;
    g.ctx = &call->ctx;
    g.heap = NULL;
    g.rc = 0;
    if (len > sizeof small && (req = (unsigned char *)(g.heap = malloc(len))) == NULL) {
        rc = ENOMEM;
    } else if ((rc = lf_bound_ctx_init(&call->ctx, call, MEMC_MAX_BODY, 0)) == 0) {
        /* buf: never written (read_body places the bytes), but lf_bound wants one for
         * a cap above 0, and the cap must let any legal reply through to read_body.
         * relaxed: the id only has to be unique, and the bound's lock orders the rest */
        id = lf__fetch_add(&m->next_id, 1u, relaxed);
        memc_encode(req, opcode, id, extras, elen, key, klen, val, vlen);
#ifdef LF_REACTOR_H_INCLUDED
        if (h != NULL) {
            memc__start(&g, id, req, len, deadline, (lf_handler *)h, keep);
            if (g.rc == 0) { /* in flight: the request is out, the rest is finish's */
                free(g.heap);
                return 0;
            }
        } else
#endif
            lf_conn_call(&g, id, req, len, deadline);
        lf_bound_ctx_destroy(&call->ctx);
        rc = memc__result(call, g.rc, opcode);
    }
    /* the bound's own result: a reply's own EPROTO is lf_bound's EBADMSG, which does
     * not mark the connection dead */
    lf_conn_drop(&m->conn, g.c, g.rc);
    free(g.heap);
    return rc;
}

/* Contract: any thread. The value of key into buf (cap bytes): *len its length, and
 * *flags (may be NULL) its flags. EMSGSIZE: *len says how long it is. */
static inline int memc_get(memc *m, const char *key, void *buf, size_t cap, size_t *len,
                           uint32_t *flags, const struct timespec *deadline)
{
    struct memc__call call;
    int rc;
    memset((void *)&call, 0, sizeof call);
    call.val = buf;
    call.cap = buf ? cap : 0;
    rc = memc__request(m, &call, MEMC_OP_GET, NULL, 0, key, NULL, 0, deadline, NULL, NULL);
    if (rc == 0 || rc == EMSGSIZE)
        *len = call.vlen;
    if (rc == 0 && flags)
        *flags = memc_get32(call.flags);
    return rc;
}

/* Contract: any thread. Store len bytes under key (exptime: seconds, 0 = never). */
static inline int memc_set(memc *m, const char *key, const void *val, size_t len, uint32_t flags,
                           uint32_t exptime, const struct timespec *deadline)
{
    struct memc__call call;
    unsigned char extras[8];
    memset((void *)&call, 0, sizeof call);
    memc_put32(extras, flags);
    memc_put32(extras + 4, exptime);
    return memc__request(m, &call, MEMC_OP_SET, extras, sizeof extras, key, val, len, deadline,
                         NULL, NULL);
}

/* Contract: any thread. */
static inline int memc_delete(memc *m, const char *key, const struct timespec *deadline)
{
    struct memc__call call;
    memset((void *)&call, 0, sizeof call);
    return memc__request(m, &call, MEMC_OP_DELETE, NULL, 0, key, NULL, 0, deadline, NULL,
                         NULL);
}

/* ------------------------------------------------------------------ asynchronous calls */

struct memc_op {
    /* private: the call (its context, what read_body finds) and the connection it is
     * in flight on (NULL: none) */
    struct memc__call call;
    struct lf_conn_link *link;
};
typedef struct memc_op memc_op;

#ifdef LF_REACTOR_H_INCLUDED
/* Contract: any thread, attached m (see ASYNCHRONOUS CALLS). op: not in flight. */
static inline int memc_get_start(memc *m, memc_op *op, const char *key, void *buf, size_t cap,
                                 lf_handler *h, const struct timespec *deadline)
{
    if (op == NULL || h == NULL || op->link != NULL)
        return EINVAL;
    memset((void *)op, 0, sizeof *op);
    op->call.val = buf;
    op->call.cap = buf ? cap : 0;
    return memc__request(m, &op->call, MEMC_OP_GET, NULL, 0, key, NULL, 0, deadline, h,
                         &op->link);
}

/* Contract: as memc_get_start. The value is copied before it returns 0. */
static inline int memc_set_start(memc *m, memc_op *op, const char *key, const void *val,
                                 size_t len, uint32_t flags, uint32_t exptime, lf_handler *h,
                                 const struct timespec *deadline)
{
    unsigned char extras[8];
    if (op == NULL || h == NULL || op->link != NULL)
        return EINVAL;
    memset((void *)op, 0, sizeof *op);
    memc_put32(extras, flags);
    memc_put32(extras + 4, exptime);
    return memc__request(m, &op->call, MEMC_OP_SET, extras, sizeof extras, key, val, len,
                         deadline, h, &op->link);
}
#endif

/* Contract: the owner of op, never waits (see ASYNCHRONOUS CALLS). */
static inline int memc_finish(memc *m, memc_op *op, size_t *len, uint32_t *flags)
{
    int rc;
    if (m == NULL || op == NULL || op->link == NULL)
        return EINVAL; /* no call in flight */
    rc = lf_bound_collect(&op->link->b, &op->call.ctx);
    if (rc == EINPROGRESS)
        return rc;
    if (rc == ENOENT) /* no call: a start that failed, its thread not back yet */
        return EINVAL;
    lf_bound_ctx_destroy(&op->call.ctx);
    lf_conn_drop(&m->conn, op->link, rc);
    op->link = NULL;
    rc = memc__result(&op->call, rc, op->call.op);
    if (op->call.op == MEMC_OP_GET && (rc == 0 || rc == EMSGSIZE) && len != NULL)
        *len = op->call.vlen;
    if (op->call.op == MEMC_OP_GET && rc == 0 && flags != NULL)
        *flags = memc_get32(op->call.flags);
    return rc;
}

/* Contract: any thread. */
static inline int memc_abort(memc *m, memc_op *op)
{
    if (m == NULL || op == NULL || op->link == NULL)
        return EINVAL;
    return lf_bound_cancel(&op->link->b, &op->call.ctx);
}

#endif

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
