/* SPDX-License-Identifier: MIT (the licence text is at the end of this file) */
/* memc.h - a memcached client on lf_bound.h: many threads share ONE connection and
 * speak memcached's binary protocol over it. The request's `opaque` field is the
 * bound's request id, so each reply finds the thread that waits for it, in whatever
 * order the replies come. When the connection breaks, memc_reconnect puts a new one
 * in its place while other threads go on calling.
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
 *   Copy memc.h, lf_bound.h and lf.h into one directory of your project (memc.h
 *   includes "lf_bound.h", found beside it or through -I). Nothing else: no liburcu,
 *   no other file of this repository. Build: cc -std=c11 -D_POSIX_C_SOURCE=200809L
 *   app.c -pthread (C11 and POSIX threads, as lf_bound.h needs). For memc_attach,
 *   lf_reactor.h too, and liburcu as that header says. Every file that shares a memc
 *   includes it with the same LF_PROMOTE and LF_SYNC (lf.h).
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
 *   take it. Offered where lf_reactor.h was included before memc.h (as
 *   lf_bound_attach is); r: not LF_REACTOR_CONCURRENT, not in a group. r's storage
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
 *   memc_shutdown, memc_stats, memc_auto_reconnect, memc_set_nest_max,
 *   memc_last_status: any thread, any time. memc_open*, memc_attach: before any other
 *   thread uses m. memc_close: once no call is under way (EBUSY otherwise); nothing
 *   after it.
 *
 * HOW THE CONNECTION IS SHARED, AND WHAT IT COSTS
 *   m holds its current connection (a struct memc__conn: lf_bound, socket, a count of
 *   references) behind a pointer. A call takes a reference to it (under m's mutex:
 *   load the pointer, add one), makes its request with no lock held, and drops the
 *   reference (under the mutex again; it also marks the connection dead after a
 *   connection error). The mutex is held for those few instructions only, and the
 *   memc holds one reference of its own on the current connection, so a connection
 *   is freed exactly when it is no longer current and its last call has let it go,
 *   by that call. The mutex costs a call 47 ns of CPU for its two lock/unlock
 *   pairs, against 16 ns for the two atomic operations that any lock-free scheme
 *   needs at least (bench/memc_refs.c: 8 threads taking and dropping with nothing
 *   in between, on a 2-vCPU x86-64 VM); a call costs the client 5 to 20 us of CPU
 *   (bench/memc_bench.c, 8 threads; 7 the median), so the difference is under 0.6%,
 *   well inside memc_bench's spread from run to run. A lock-free scheme would also
 *   have to keep a thread that loaded the pointer from counting on a connection
 *   being freed (hazard pointers, or memory that is never freed while m lives): more
 *   code than 30 ns buy here.
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

#include "lf_bound.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdatomic.h>
#include <stdio.h>

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
#define MEMC_HOST_MAX 255 /* the longest host name memc_open takes */

enum { MEMC_OP_GET = 0x00, MEMC_OP_SET = 0x01, MEMC_OP_DELETE = 0x04 };
enum { MEMC_REQUEST = 0x80, MEMC_RESPONSE = 0x81 };

struct memc__conn; /* one connection: see HOW THE CONNECTION IS SHARED */

struct memc_stats {
    struct lf_bound_stats bound;   /* the current connection's (lf_bound_stats) */
    unsigned long long reconnects; /* connections memc_reconnect made and put in place */
    unsigned conns;                /* open now: the current one, and old ones still held */
    unsigned calls;                /* calls holding a connection now */
};

typedef struct memc {
    /* private: memc_open_until sets every field */
    pthread_mutex_t lock;         /* what follows but next_id, and every connection's
                                   * refs, dead and next */
    pthread_cond_t ended;         /* an attempt to reconnect ended (CLOCK_MONOTONIC) */
    struct memc__conn *cur;       /* the connection calls take (NULL: closed) */
    struct memc__conn *conns;     /* the open ones: cur first, then old ones still held */
    int shut;                     /* memc_shutdown was called: final */
    int automatic;                /* memc_auto_reconnect */
    int connecting;               /* a thread is making the next connection */
    int inside;                   /* threads inside memc_reconnect */
    unsigned long long attempts;  /* attempts to reconnect that ended */
    int attempt_rc;               /* the last one's result (MEMC__GAVE_UP: cancelled) */
    unsigned long long reconnects;
    int nest_max;                 /* memc_set_nest_max's, for every connection */
    void *reactor;                /* memc_attach's lf_reactor, or NULL */
    /* lf_bound_attach as compiled where memc_attach was (a file with lf_reactor.h),
     * for the connections memc_reconnect makes in any file; NULL: bare */
    int (*attach)(lf_bound *b, void *reactor);
    atomic_uint next_id;          /* the next opaque */
    int port;
    char host[MEMC_HOST_MAX + 1];
} memc;

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

/* ------------------------------------------------------------------ connecting
 * A non-blocking connect that a deadline ends: getaddrinfo, then each address in
 * turn (a name may have an IPv6 and an IPv4 one), polled for POLLOUT and asked
 * SO_ERROR. CANCELLATION: getaddrinfo, connect and poll are cancellation points, and
 * the cleanup closes the socket and frees the address list. */

static inline int memc__deadline_ok(const struct timespec *d)
{
    return d == NULL || (d->tv_sec >= 0 && d->tv_nsec >= 0 && d->tv_nsec < 1000000000L);
}

/* Milliseconds until deadline, rounded up (a wait never ends before it): -1 none. */
static inline int memc__ms_until(const struct timespec *deadline)
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

/* getaddrinfo's errors as errno values (see OPEN AND RECONNECT). */
static inline int memc__gai_errno(int rc)
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

struct memc__dial {
    const char *host;
    int port;
    const struct timespec *deadline;
    int (*stop)(void *arg); /* non-zero: give up (ECANCELED); asked every 50 ms */
    void *stop_arg;
    struct addrinfo *ai;    /* the addresses, until freed */
    int fd;                 /* the socket being connected, or -1 */
    int rc;
};

/* ThreadSanitizer cannot follow a thread cancelled inside a system call it
 * intercepts (lf.h says why, at LF__TSAN_WAITS): in a TSan build the connect's poll
 * runs with cancellation off, 10 ms at a time, and pthread_testcancel before it is
 * the cancellation point (the same contract, acted on up to 10 ms later). */
#if defined(__SANITIZE_THREAD__)
#define MEMC__TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MEMC__TSAN 1
#endif
#endif

static inline int memc__poll(struct pollfd *p, int ms)
{
#ifdef MEMC__TSAN
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
static inline void memc__close(int fd)
{
    int cs;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cs);
    close(fd);
    pthread_setcancelstate(cs, &cs);
}

static inline void memc__dial_cancelled(void *arg)
{
    struct memc__dial *d = (struct memc__dial *)arg;
    if (d->fd >= 0)
        close(d->fd); /* (cancellation is off in a cleanup handler) */
    if (d->ai)
        freeaddrinfo(d->ai);
}

/* One address: 0 connected (d->fd), else why not (d->fd is closed by the caller). */
static inline int memc__dial_one(struct memc__dial *d, const struct addrinfo *a)
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
        int ms = memc__ms_until(d->deadline), n;
        socklen_t len = sizeof err;
        p.fd = d->fd;
        p.events = POLLOUT;
        p.revents = 0;
        /* in slices of 50 ms, to see memc_shutdown */
        n = memc__poll(&p, ms < 0 || ms > 50 ? 50 : ms);
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
        if (d->stop && d->stop(d->stop_arg))
            return ECANCELED;
    }
}

static inline void memc__dial_steps(struct memc__dial *d)
{
    struct addrinfo hints, *a;
    char service[16];
    int one = 1;

    snprintf(service, sizeof service, "%d", d->port);
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV; /* an address: no lookup */
    d->rc = getaddrinfo(d->host, service, &hints, &d->ai);
    if (d->rc == EAI_NONAME) { /* a name, then: the resolver's own time, no deadline */
        hints.ai_flags = AI_NUMERICSERV;
        d->rc = getaddrinfo(d->host, service, &hints, &d->ai);
    }
    if (d->rc != 0) {
        d->ai = NULL;
        d->rc = memc__gai_errno(d->rc);
        return;
    }
    d->rc = ENXIO;
    for (a = d->ai; a != NULL; a = a->ai_next) {
        if ((d->rc = memc__dial_one(d, a)) == 0)
            break;
        if (d->fd >= 0) {
            memc__close(d->fd);
            d->fd = -1;
        }
        if (d->rc == ETIMEDOUT || d->rc == ECANCELED)
            break; /* the deadline is spent for every address */
    }
    if (d->rc == 0) /* many small requests from many threads: Nagle would hold them */
        (void)setsockopt(d->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* A connected, non-blocking, close-on-exec TCP socket to d's host and port: 0 and
 * d->fd, or an errno (d->fd -1). getaddrinfo, connect and the poll are the
 * cancellation points. */
static inline int memc__dial(struct memc__dial *d)
{
    int cs;
    d->ai = NULL;
    d->fd = -1;
    pthread_cleanup_push(memc__dial_cancelled, d);
    memc__dial_steps(d);
    pthread_cleanup_pop(0);
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cs);
    if (d->ai)
        freeaddrinfo(d->ai);
    d->ai = NULL;
    pthread_setcancelstate(cs, &cs);
    return d->rc;
}

/* ------------------------------------------------------------------ connections
 * m->cur is the connection calls take. Each connection counts its references under
 * m->lock: one of m's own while it is m->cur, one per call that holds it. Whoever
 * drops the last one (the last call on an old connection, or memc_close) has the
 * only pointer left to it, and frees it outside the lock. Lock order: m->lock, then
 * a bound's own locks (the hooks never take m->lock). */

struct memc__conn {
    lf_bound b;
    int fd;
    unsigned refs;           /* under m->lock (see above) */
    int dead;                /* under m->lock: 0, or the connection error a call met */
    struct memc__conn *next; /* m->conns */
};

#define MEMC__GAVE_UP (-1) /* attempt_rc: the thread making it was cancelled */

/* memc__dial's stop: memc_shutdown came (a connect under way gives up) */
static inline int memc__stopped(void *arg)
{
    memc *m = (memc *)arg;
    int shut;
    pthread_mutex_lock(&m->lock);
    shut = m->shut;
    pthread_mutex_unlock(&m->lock);
    return shut;
}

/* A new connection to m's server: connected, its bound set up, attached to m's
 * reactor after memc_attach (before any call can take it). Not m's yet: refs 0. */
static inline int memc__conn_open(memc *m, const struct timespec *deadline,
                                  struct memc__conn **out)
{
    struct lf_bound_hooks h;
    struct memc__dial d;
    struct memc__conn *c;
    int rc, cs;

    memset(&d, 0, sizeof d);
    d.host = m->host;
    d.port = m->port;
    d.deadline = deadline;
    d.stop = memc__stopped;
    d.stop_arg = m;
    if ((rc = memc__dial(&d)) != 0)
        return rc;
    /* nothing below waits: with cancellation off no cancel can leave the socket open */
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cs);
    memset(&h, 0, sizeof h);
    h.frame_header = memc__frame;
    h.read_body = memc__body;
    h.max_body = MEMC_MAX_BODY;
    if ((c = (struct memc__conn *)calloc(1, sizeof *c)) == NULL)
        rc = ENOMEM;
    else if ((rc = lf_bound_init(&c->b, d.fd, &h)) == 0 && m->attach != NULL &&
             (rc = m->attach(&c->b, m->reactor)) != 0)
        (void)lf_bound_destroy(&c->b);
    if (rc == 0) {
        c->fd = d.fd;
        *out = c;
    } else {
        close(d.fd);
        free(c);
    }
    pthread_setcancelstate(cs, &cs);
    return rc;
}

/* Nobody can reach c any more (its last reference is gone): shut it down, destroy
 * its bound, close its socket, free it. Nothing here waits; cancellation is off for
 * the closes (a cancelled call's cleanup handler may run this). */
static inline void memc__conn_free(struct memc__conn *c)
{
    int cs;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cs);
    (void)lf_bound_shutdown(&c->b);
    /* 0: every call let go of c after its lf_bound_call returned, so none is inside */
    if (lf_bound_destroy(&c->b) == 0) {
        close(c->fd);
        free(c);
    }
    pthread_setcancelstate(cs, &cs);
}

/* m->lock held: drop one reference to c. 1: it was the last, c is off m's list, and
 * the caller frees it (memc__conn_free) once the lock is released. */
static inline int memc__put_locked(memc *m, struct memc__conn *c)
{
    struct memc__conn **p = &m->conns;
    if (--c->refs != 0)
        return 0;
    while (*p != c)
        p = &(*p)->next;
    *p = c->next;
    return 1;
}

/* m->lock held: is c dead (memc_reconnect in the doc block)? Also what lf_bound saw
 * that no call has reported yet; its ECANCELED is a shutdown or a stopped reactor,
 * which no new connection cures. */
static inline int memc__dead_locked(struct memc__conn *c)
{
    struct lf_bound_stats s;
    if (c->dead)
        return 1;
    return lf_bound_stats(&c->b, &s) == 0 &&
           ((s.failed != 0 && s.failed != ECANCELED) || s.send_failed != 0);
}

/* A call lets go of c; failed: the connection error it met (c is dead), or 0. */
static inline void memc__drop(memc *m, struct memc__conn *c, int failed)
{
    int last;
    pthread_mutex_lock(&m->lock);
    if (failed != 0 && c->dead == 0)
        c->dead = failed;
    last = memc__put_locked(m, c);
    pthread_mutex_unlock(&m->lock);
    if (last)
        memc__conn_free(c);
}

/* The connection error an lf_bound_call result shows (a dead connection), or 0. */
static inline int memc__conn_error(lf_bound *b, int rc)
{
    struct lf_bound_stats s;
    if (rc == ECONNRESET || rc == EPIPE || rc == EPROTO) /* (a reply's own EPROTO is
                                                          * lf_bound's EBADMSG) */
        return rc;
    /* a deadline that cut the request off half sent: no request can follow it */
    if (rc == ETIMEDOUT && lf_bound_stats(b, &s) == 0 && s.send_failed != 0)
        return s.send_failed;
    return 0;
}

/* Contract: once, before any thread uses m. 0 or an errno (see OPEN AND RECONNECT). */
static inline int memc_open_until(memc *m, const char *host, int port,
                                  const struct timespec *deadline)
{
    pthread_condattr_t ca;
    int rc;

    if (m == NULL || host == NULL || strlen(host) > MEMC_HOST_MAX || port < 1 || port > 65535 ||
        !memc__deadline_ok(deadline))
        return EINVAL;
    memset((void *)m, 0, sizeof *m);
    memcpy(m->host, host, strlen(host) + 1);
    m->port = port;
    m->nest_max = LF_BOUND_NEST_MAX; /* (lf_bound_init's too) */
    atomic_init(&m->next_id, 1);
    if ((rc = pthread_condattr_init(&ca)) != 0)
        return rc;
    if ((rc = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC)) == 0 &&
        (rc = pthread_cond_init(&m->ended, &ca)) == 0 &&
        (rc = pthread_mutex_init(&m->lock, NULL)) != 0)
        pthread_cond_destroy(&m->ended);
    pthread_condattr_destroy(&ca);
    if (rc != 0)
        return rc;
    if ((rc = memc__conn_open(m, deadline, &m->cur)) != 0) {
        pthread_mutex_destroy(&m->lock);
        pthread_cond_destroy(&m->ended);
        m->cur = NULL;
        return rc;
    }
    m->cur->refs = 1; /* m's own */
    m->conns = m->cur;
    return 0;
}

/* Contract: as memc_open_until, with no deadline. */
static inline int memc_open(memc *m, const char *host, int port)
{
    return memc_open_until(m, host, port, NULL);
}

/* The thread making a new connection was cancelled (memc__dial's cleanup has closed
 * its socket): the attempt ends with no result, and a thread that waited for it
 * looks again (and may make its own). */
static inline void memc__attempt_cancelled(void *arg)
{
    memc *m = (memc *)arg;
    pthread_mutex_lock(&m->lock);
    m->connecting = 0;
    m->attempts++;
    m->attempt_rc = MEMC__GAVE_UP;
    m->inside--;
    pthread_cond_broadcast(&m->ended);
    pthread_mutex_unlock(&m->lock);
}

struct memc__attempt {
    memc *m;
    const struct timespec *deadline;
    struct memc__conn *c;
    int rc;
};

/* (its own function: the cleanup is pushed around it, and nothing it reads changes
 * between push and pop, so gcc's -Wclobbered stays quiet) */
static inline void memc__attempt(struct memc__attempt *a)
{
    pthread_cleanup_push(memc__attempt_cancelled, a->m);
    a->rc = memc__conn_open(a->m, a->deadline, &a->c);
    pthread_cleanup_pop(0);
}

/* A thread waiting for another's attempt was cancelled (the wait took the lock back). */
static inline void memc__wait_cancelled(void *arg)
{
    memc *m = (memc *)arg;
    m->inside--;
    pthread_mutex_unlock(&m->lock);
}

struct memc__waiting {
    memc *m;
    const struct timespec *deadline;
    int rc;
};

static inline void memc__wait(struct memc__waiting *w)
{
    pthread_cleanup_push(memc__wait_cancelled, w->m);
    w->rc = w->deadline ? pthread_cond_timedwait(&w->m->ended, &w->m->lock, w->deadline)
                        : pthread_cond_wait(&w->m->ended, &w->m->lock);
    pthread_cleanup_pop(0);
}

/* Contract: any thread, any time, many at once (see OPEN AND RECONNECT). */
static inline int memc_reconnect(memc *m, const struct timespec *deadline)
{
    struct memc__attempt a;
    struct memc__conn *old = NULL;
    int rc = 0, ours = 0;

    if (m == NULL || !memc__deadline_ok(deadline))
        return EINVAL;
    pthread_mutex_lock(&m->lock);
    m->inside++;
    for (;;) {
        struct memc__waiting w;
        unsigned long long seen = m->attempts;
        if (m->shut) {
            rc = ECANCELED;
            break;
        }
        if (!memc__dead_locked(m->cur))
            break; /* alive (another thread's reconnect, say): 0, nothing to do */
        if (!m->connecting) {
            ours = 1;
            break;
        }
        /* one is being made for this dead connection: wait for it, take its result */
        w.m = m;
        w.deadline = deadline;
        w.rc = 0;
        while (w.rc == 0 && m->attempts == seen && !m->shut)
            memc__wait(&w);
        if (m->shut)
            continue; /* ECANCELED */
        if (m->attempts == seen) {
            rc = w.rc; /* ETIMEDOUT: our deadline came first */
            break;
        }
        if (m->attempt_rc != MEMC__GAVE_UP) {
            rc = m->attempt_rc;
            break;
        }
        /* its thread was cancelled: look again */
    }
    if (!ours) {
        m->inside--;
        pthread_mutex_unlock(&m->lock);
        return rc;
    }
    m->connecting = 1;
    pthread_mutex_unlock(&m->lock);

    a.m = m;
    a.deadline = deadline;
    a.c = NULL;
    memc__attempt(&a); /* (dialled with no lock held: calls go on meanwhile) */

    pthread_mutex_lock(&m->lock);
    m->connecting = 0;
    m->attempts++;
    if (a.rc == 0 && m->shut)
        a.rc = ECANCELED; /* made, but too late: freed below */
    if (a.rc == 0) {
        /* the swap: calls that take the connection from now on get the new one; the
         * old one loses m's reference, and goes with its last call's (or now) */
        a.c->refs = 1;
        /* under the lock, as memc_set_nest_max sets it: none can fall in between */
        (void)lf_bound_set_nest_max(&a.c->b, m->nest_max);
        a.c->next = m->conns;
        m->conns = a.c;
        old = m->cur;
        m->cur = a.c;
        m->reconnects++;
        if (!memc__put_locked(m, old))
            old = NULL;
    }
    m->attempt_rc = a.rc;
    m->inside--;
    pthread_cond_broadcast(&m->ended);
    pthread_mutex_unlock(&m->lock);
    if (old != NULL)
        memc__conn_free(old);
    if (a.rc == ECANCELED && a.c != NULL)
        memc__conn_free(a.c);
    return a.rc;
}

/* Contract: any thread, any time (see OPEN AND RECONNECT). */
static inline int memc_auto_reconnect(memc *m, int on)
{
    if (m == NULL)
        return EINVAL;
    pthread_mutex_lock(&m->lock);
    m->automatic = on != 0;
    pthread_mutex_unlock(&m->lock);
    return 0;
}

/* Contract: any thread, any time (see HYBRID). Calls that start later use it. */
static inline int memc_set_nest_max(memc *m, int levels)
{
    struct memc__conn *c;
    if (m == NULL || m->cur == NULL || levels < 0)
        return EINVAL;
    pthread_mutex_lock(&m->lock);
    m->nest_max = levels;
    for (c = m->conns; c != NULL; c = c->next) /* old ones too: one limit for m */
        (void)lf_bound_set_nest_max(&c->b, levels);
    pthread_mutex_unlock(&m->lock);
    return 0;
}

/* Contract: any thread, any time. Final: waiters on every connection return
 * ECONNABORTED, later calls and reconnects ECANCELED. */
static inline int memc_shutdown(memc *m)
{
    struct memc__conn *c;
    if (m == NULL)
        return EINVAL;
    pthread_mutex_lock(&m->lock);
    m->shut = 1;
    /* old connections too: calls still on them wake. Each is alive while it is on
     * the list (it leaves the list under this lock, before it is freed). */
    for (c = m->conns; c != NULL; c = c->next)
        (void)lf_bound_shutdown(&c->b);
    pthread_cond_broadcast(&m->ended); /* threads waiting for another's reconnect */
    pthread_mutex_unlock(&m->lock);
    return 0;
}

/* Contract: once no call and no reconnect is under way (else EBUSY, nothing done). */
static inline int memc_close(memc *m)
{
    int busy;
    if (m == NULL || m->cur == NULL)
        return EINVAL;
    pthread_mutex_lock(&m->lock);
    busy = m->inside != 0 || m->conns != m->cur || m->cur->next != NULL || m->cur->refs != 1;
    pthread_mutex_unlock(&m->lock);
    if (busy)
        return EBUSY;
    memc__conn_free(m->cur);
    m->cur = m->conns = NULL;
    pthread_cond_destroy(&m->ended);
    pthread_mutex_destroy(&m->lock);
    return 0;
}

/* Contract: any thread, any time. */
static inline int memc_stats(memc *m, struct memc_stats *out)
{
    struct memc__conn *c;
    if (out == NULL)
        return EINVAL;
    memset((void *)out, 0, sizeof *out);
    if (m == NULL || m->cur == NULL)
        return EINVAL;
    pthread_mutex_lock(&m->lock);
    out->reconnects = m->reconnects;
    for (c = m->conns; c != NULL; c = c->next) {
        out->conns++;
        out->calls += c->refs - (c == m->cur); /* (m's own is no call) */
    }
    c = m->cur;
    c->refs++; /* held while lf_bound_stats reads it: a reconnect may put it away */
    pthread_mutex_unlock(&m->lock);
    (void)lf_bound_stats(&c->b, &out->bound);
    memc__drop(m, c, 0);
    return 0;
}

#ifdef LF_REACTOR_H_INCLUDED
static inline int memc__attach(lf_bound *b, void *reactor)
{
    return lf_bound_attach(b, (lf_reactor *)reactor);
}

/* Contract: once, before any thread uses m (see HYBRID). 0, EBUSY attached already,
 * or what lf_bound_attach says (ENOTSUP, ECANCELED, ...). */
static inline int memc_attach(memc *m, lf_reactor *r)
{
    int rc;
    if (m == NULL || m->cur == NULL || r == NULL)
        return EINVAL;
    pthread_mutex_lock(&m->lock);
    if (m->reactor != NULL) {
        rc = EBUSY;
    } else if ((rc = lf_bound_attach(&m->cur->b, r)) == 0) {
        m->reactor = r; /* for the connections memc_reconnect makes */
        m->attach = memc__attach;
    }
    pthread_mutex_unlock(&m->lock);
    return rc;
}
#endif

/* ------------------------------------------------------------------ the calls */

/* weak: one variable for the program, however many files include memc.h */
__attribute__((weak)) _Thread_local unsigned memc__last_status;

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

/* A call takes the current connection (*c, one reference), or says why not. */
static inline int memc__hold(memc *m, struct memc__conn **c, const struct timespec *deadline)
{
    int rc, reconnect;
    for (int tries = 0;; tries++) {
        rc = reconnect = 0;
        pthread_mutex_lock(&m->lock);
        *c = m->cur;
        if (m->shut)
            rc = ECANCELED;
        else if (m->automatic && (*c)->dead && tries == 0)
            reconnect = 1; /* see memc_auto_reconnect */
        else
            (*c)->refs++;
        pthread_mutex_unlock(&m->lock);
        if (!reconnect)
            return rc;
        if ((rc = memc_reconnect(m, deadline)) != 0)
            return rc; /* nothing sent */
    }
}

/* What a cancelled call gives back. lf_bound's cleanup has withdrawn the context
 * first (lf_bound.h, CANCELLATION); then this frees it, the request's memory, and
 * lets go of the connection (which may free an old one). */
struct memc__guard {
    memc *m;
    struct memc__conn *c;
    lf_bound_ctx *ctx;
    void *heap; /* a large request's block, or NULL */
    int rc;
};

static inline void memc__call_cancelled(void *arg)
{
    struct memc__guard *g = (struct memc__guard *)arg;
    lf_bound_ctx_destroy(g->ctx);
    free(g->heap);
    memc__drop(g->m, g->c, 0);
}

static inline void memc__call_guarded(struct memc__guard *g, uint32_t id,
                                      const unsigned char *req, size_t len,
                                      const struct timespec *deadline)
{
    pthread_cleanup_push(memc__call_cancelled, g);
    g->rc = lf_bound_call(&g->c->b, g->ctx, id, req, len, deadline);
    pthread_cleanup_pop(0);
}

/* One request, one reply: take the connection, encode, send, wait, let it go. */
static inline int memc__request(memc *m, struct memc__call *call, unsigned opcode,
                                const void *extras, size_t elen, const char *key, const void *val,
                                size_t vlen, const struct timespec *deadline)
{
    unsigned char small[MEMC_STACK_REQ], *req = small;
    size_t klen = strlen(key), len = memc_request_len(elen, klen, vlen);
    struct memc__guard g;
    uint32_t id;
    int rc;

    memc__last_status = 0;
    call->op = opcode;
    /* the value's limit is the server's (E2BIG), the protocol's 32 bits ours */
    if (m == NULL || klen == 0 || klen > MEMC_KEY_MAX ||
        vlen > UINT32_MAX - MEMC_HDR - elen - klen || !memc__deadline_ok(deadline))
        return EINVAL;
    if ((rc = memc__hold(m, &g.c, deadline)) != 0)
        return rc;
    g.m = m;
    g.ctx = &call->ctx;
    g.heap = NULL;
    g.rc = 0;
    if (len > sizeof small && (req = (unsigned char *)(g.heap = malloc(len))) == NULL) {
        rc = ENOMEM;
    } else if ((rc = lf_bound_ctx_init(&call->ctx, call, MEMC_MAX_BODY, 0)) == 0) {
        /* buf: never written (read_body places the bytes), but lf_bound wants one for
         * a cap above 0, and the cap must let any legal reply through to read_body.
         * relaxed: the id only has to be unique, and the bound's lock orders the rest */
        id = atomic_fetch_add_explicit(&m->next_id, 1, memory_order_relaxed);
        memc_encode(req, opcode, id, extras, elen, key, klen, val, vlen);
        memc__call_guarded(&g, id, req, len, deadline);
        lf_bound_ctx_destroy(&call->ctx);
        rc = memc__result(call, g.rc, opcode);
    }
    memc__drop(m, g.c, memc__conn_error(&g.c->b, g.rc));
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
    memset(&call, 0, sizeof call);
    call.val = buf;
    call.cap = buf ? cap : 0;
    rc = memc__request(m, &call, MEMC_OP_GET, NULL, 0, key, NULL, 0, deadline);
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
    memset(&call, 0, sizeof call);
    memc_put32(extras, flags);
    memc_put32(extras + 4, exptime);
    return memc__request(m, &call, MEMC_OP_SET, extras, sizeof extras, key, val, len, deadline);
}

/* Contract: any thread. */
static inline int memc_delete(memc *m, const char *key, const struct timespec *deadline)
{
    struct memc__call call;
    memset(&call, 0, sizeof call);
    return memc__request(m, &call, MEMC_OP_DELETE, NULL, 0, key, NULL, 0, deadline);
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
