/* SPDX-License-Identifier: MIT (the licence text is at the end of this file) */
/* redis.h - a Redis client on lf_bound.h: many threads share ONE connection and
 * speak RESP2 over it. Redis answers a connection's commands in the order it read
 * them and its replies carry no id, so the bound runs in LF_BOUND_IN_ORDER mode: a
 * call's place on the wire is its id, and whoever leads hands each reply to the
 * oldest call still on the wire. When the connection breaks, redis_reconnect puts a
 * new one in its place while other threads go on calling. That connection
 * (dialling, sharing, replacing) is lf_conn.h's, which bench/memc.h shares; this
 * file is Redis's protocol on it.
 *
 * QUICK START
 *   redis r;
 *   redis_open_until(&r, "127.0.0.1", 6379, &deadline);     (redis_open: no deadline)
 *   then, from any number of threads (a deadline, or NULL to wait for good):
 *   rc = redis_set(&r, "k", val, len, 0, deadline);        (ttl_ms 0: no expiry)
 *   rc = redis_get(&r, "k", buf, sizeof buf, &len, deadline);
 *   rc = redis_incr(&r, "n", &value, deadline);
 *   rc = redis_del(&r, "k", deadline);
 *   if (rc == EIO) puts(redis_last_error());     the server's error, e.g. "ERR value
 *                                                is not an integer or out of range"
 *   if (rc == ECONNRESET || rc == EPIPE || rc == EPROTO)    the connection is dead:
 *       redis_reconnect(&r, deadline);  (any thread; many at once make one connection)
 *   at the end: redis_shutdown(&r) (wakes every waiter); join the threads;
 *   redis_close(&r);
 *
 *   Deadlines are absolute CLOCK_MONOTONIC times (lf_deadline_in(&d, ns) makes one).
 *   Keys are C strings (no NUL inside; the empty key too); values are any bytes.
 *
 * TO TAKE IT AWAY
 *   Copy redis.h, lf_conn.h, lf_bound.h and lf.h into one directory of your project
 *   (redis.h includes "lf_conn.h", which includes "lf_bound.h": found beside it or
 *   through -I). Nothing else: no liburcu, no hiredis, no other file of this
 *   repository. Build: cc -std=c11 -D_POSIX_C_SOURCE=200809L app.c -pthread (C11 and
 *   POSIX threads, as lf_bound.h needs; it also compiles as C++17). Every file that
 *   shares a redis includes it with the same LF_PROMOTE and LF_SYNC (lf.h) and the
 *   same LF_BOUND_HEADER_MAX (FRAMING below). LF_PROMOTE_FIFO suits a server that
 *   answers in order: the oldest waiter leads and usually reads its own reply first
 *   (bench/redis.sh measures both).
 *
 * RESULTS of redis_get, redis_set, redis_del, redis_incr, redis_ping: one meaning each.
 *   0           done (get: the value is in buf, *len bytes; incr: *value is the new
 *               value; del: the key existed and is gone)
 *   ENOENT      get: no such key (the nil reply, $-1); del: no such key (:0)
 *   EIO         the server answered with an error reply (-ERR ..., -WRONGTYPE ...):
 *               redis_last_error() gives this thread its text. The command was
 *               refused; the connection goes on
 *   EMSGSIZE    get: the value does not fit in buf; *len says how long it is (its
 *               bytes were read and dropped). The connection goes on
 *   E2BIG       the key or the value is longer than REDIS_BULK_MAX: nothing sent
 *   EINVAL      our own refusal, nothing sent: r or key NULL, get's len NULL or its
 *               buf NULL with cap above 0, set's val NULL with len above 0, a
 *               negative ttl_ms, a malformed deadline
 *   ECONNRESET  the connection ended (Redis went away) before the reply came: a set,
 *               del or incr may have been applied. Every waiter on it wakes with it,
 *               and calls fail on it from now on (ECONNRESET, or EPIPE if the write
 *               side broke first): the connection is dead: redis_reconnect
 *   EPIPE       the request could not be sent: the write side broke, or an earlier
 *               request was cut off mid-way (its deadline passed while the socket
 *               was full, so the stream holds half a request). Nothing of this
 *               request was applied. The connection is dead (redis_reconnect)
 *   EPROTO      the byte stream is not RESP2 as this client reads it: a type byte
 *               it does not know (arrays '*' and RESP3's types included: see
 *               LIMITS), a line longer than LF_BOUND_HEADER_MAX, a bulk length over
 *               REDIS_BULK_MAX, a bulk not ended by CRLF, a reply with no request
 *               on the wire; or a reply that does not answer its request (an
 *               integer to a get, "+QUEUED" to a set): with no id in a reply, that
 *               means the stream is out of step, so the connection is failed too.
 *               Every waiter on it and every later call gets EPROTO: it is dead
 *   ETIMEDOUT   the deadline passed first. The request may have been sent (even
 *               with a deadline already past): a set, del or incr may have been
 *               applied; its reply is read and dropped in its turn
 *   ECANCELED   redis_shutdown came first: nothing of the request was sent
 *   ECONNABORTED
 *               redis_shutdown came after the request was sent, before its reply:
 *               a set, del or incr may have been applied
 *   ENOMEM      no memory for a large request, or for the bound's ring
 *   With automatic reconnection (redis_auto_reconnect), also what redis_reconnect
 *   returns (ECONNREFUSED, ETIMEDOUT, ...): the new connection could not be made,
 *   and nothing of the request was sent.
 *   A call never retries by itself: a set, del or incr that met an error may have
 *   been applied, and only the caller knows whether doing it twice is harmless (an
 *   incr done twice counts twice).
 *
 * THE COMMANDS (every one: any thread, any number at once; results above)
 *   int redis_get(redis *r, const char *key, void *buf, size_t cap, size_t *len,
 *                 const struct timespec *deadline)
 *       GET key: the value into buf (cap bytes; buf may be NULL with cap 0 to learn
 *       the length: EMSGSIZE and *len), *len its length (len: not NULL).
 *   int redis_set(redis *r, const char *key, const void *val, size_t len,
 *                 long long ttl_ms, const struct timespec *deadline)
 *       SET key val, and PX ttl_ms when ttl_ms > 0 (the key expires that many
 *       milliseconds later; 0: never). val may be NULL when len is 0.
 *   int redis_del(redis *r, const char *key, const struct timespec *deadline)
 *       DEL key: 0 it was there, ENOENT it was not.
 *   int redis_incr(redis *r, const char *key, long long *value, deadline)
 *       INCR key: *value (may be NULL) the value after the increment. A key that
 *       holds no integer, or an overflow: EIO ("ERR value is not an integer or out
 *       of range", "ERR increment or decrement would overflow").
 *   int redis_ping(redis *r, const struct timespec *deadline)
 *       PING: 0 when "+PONG" came back (a round trip through the queue).
 *   const char *redis_last_error(void)
 *       The text of this thread's last server error (EIO), without its '-' and
 *       CRLF, NUL-terminated, cut to REDIS_ERROR_MAX bytes; "" after a call that
 *       got none. The first word is the error's kind (ERR, WRONGTYPE, NOAUTH, OOM,
 *       ...). Thread-local: valid until this thread's next call.
 *   const char *redis_strerror(int rc)   what a result means, in a few words.
 *
 * OPEN AND RECONNECT
 *   int redis_open_until(redis *r, const char *host, int port, deadline)
 *   int redis_open(redis *r, const char *host, int port)             (no deadline)
 *       host is an address (IPv4 or IPv6, no lookup) or a name (getaddrinfo: the
 *       resolver takes its own time, which the deadline does not bound; pass an
 *       address to keep it strict). Each address of the name is tried in turn with a
 *       non-blocking connect, polled until the deadline (NULL: the kernel's own
 *       connect timeout, minutes); the socket is close-on-exec, TCP_NODELAY. A
 *       deadline already past still makes one attempt: a connect that completes at
 *       once (loopback) succeeds. Nothing is sent: a server that refuses clients
 *       ("max number of clients") is learnt by the first call. host and port are
 *       kept for redis_reconnect. 0, or:
 *         ECONNREFUSED  nothing listens there       ETIMEDOUT  the deadline passed
 *         ENETUNREACH, EHOSTUNREACH  no route       ENXIO      the name has no address
 *         EAGAIN        the resolver failed for now EINVAL     r or host NULL, host
 *         ENOMEM, EMFILE, ...                           longer than REDIS_HOST_MAX,
 *                                                       port not 1..65535, a bad
 *                                                       deadline
 *   int redis_reconnect(redis *r, deadline)
 *       A connection is DEAD once a call on it returned ECONNRESET, EPIPE or EPROTO
 *       (or a deadline cut a request off half sent), or lf_bound saw it fail.
 *       redis_reconnect then opens a new one to the same host and port (as
 *       redis_open_until) and puts it in the dead one's place: calls that start
 *       after that use the new one; calls still on the old one finish there (with
 *       their replies or the error), and the last of them shuts the old connection
 *       down, destroys its bound and closes its socket. Any thread, any time, many
 *       at once: one new connection is made per dead one. A thread that finds one
 *       being made waits for it (up to its own deadline: ETIMEDOUT) and returns its
 *       result; with the current connection alive, 0 at once and nothing done. 0 (a
 *       live connection is in place), the errors of redis_open_until (the dead
 *       connection stays in place: calls on it fail at once; call again later),
 *       ECANCELED after redis_shutdown (one under way gives up within 50 ms), EINVAL
 *       r NULL, a bad deadline.
 *       A new connection is a new server session: it has not run AUTH or SELECT
 *       (this client sends neither: LIMITS).
 *   int redis_auto_reconnect(redis *r, int on)
 *       on: the first call to find the current connection dead calls
 *       redis_reconnect first, with its own deadline (as many calls at once make one
 *       connection). The call that MET the failure still returns it: nothing is
 *       retried. Off by default. Any thread, any time; calls that start later see it.
 *       0, or EINVAL r NULL.
 *
 * THE OTHER FUNCTIONS
 *   int redis_shutdown(redis *r)        Final: every call waiting, on any connection,
 *       returns ECONNABORTED (or ECANCELED if nothing of it was sent), later calls
 *       and reconnects ECANCELED. Any thread, any time. 0, or EINVAL r NULL.
 *   int redis_close(redis *r)           After redis_shutdown or not: closes the
 *       connection and frees everything. 0; EBUSY (nothing done) while a call or a
 *       reconnect is under way, or an old connection is still held by a call (join
 *       the threads first); EINVAL r NULL or closed already. No thread may start a call
 *       once it returned 0.
 *   int redis_stats(redis *r, struct redis_stats *out)   the current connection's
 *       lf_bound_stats (replies, stray: replies of calls that had given up, ...), how
 *       many connections redis_reconnect made, how many are open (the current one,
 *       and old ones that calls still hold) and the calls holding one. Any thread,
 *       any time. 0, or EINVAL (out NULL, or r NULL or not open: *out zeroed).
 *
 * CALLING CONTEXTS
 *   get, set, del, incr, ping
 *     many threads at once       each call takes the current connection, uses it,
 *                                lets it go: no lock is held while it waits
 *     during a reconnect         a call that started before the swap finishes on the
 *                                old connection, one after it on the new one
 *     after redis_shutdown       ECANCELED, nothing sent
 *     cancelled (pthread_cancel) in its wait (lf_bound.h, CANCELLATION): a cleanup
 *                                handler lets the connection go and frees the request
 *                                (the last call to let an old connection go closes
 *                                it); the call's reply is read and dropped in its turn
 *   redis_reconnect              any thread, many at once (one new connection per
 *                                dead one); current connection alive: 0 at once;
 *                                after redis_shutdown ECANCELED; cancelled in its
 *                                connect or its wait: the socket is closed, a thread
 *                                waiting for it makes its own
 *   redis_shutdown, redis_stats, redis_auto_reconnect, redis_last_error,
 *   redis_strerror: any thread, any time. redis_open*: before any other thread uses
 *   r. redis_close: once no call is under way (EBUSY otherwise); nothing after it.
 *   No callback runs user code: nothing here calls into the caller.
 *
 * FRAMING (how a RESP2 reply becomes an lf_bound frame)
 *   Every reply starts with a line: a type byte, text, CRLF ("+OK", "-ERR ...",
 *   ":42", "$5" then 5 bytes and CRLF, "$-1" for nil). lf_bound hands a call only
 *   the BODY of its frame, so the frame hook (redis__frame) reports a header of one
 *   byte, the type, and a body of everything after it: the rest of the line, its
 *   CRLF and, for a bulk, the value and its CRLF. The hook reads the whole first
 *   line to learn the body's length, and keeps what it parsed (the type, the bulk's
 *   length or nil, the integer) in the connection for the read_body hook
 *   (redis__body), which runs next for the same frame on the reader of the moment:
 *   it checks the reply against its request, places a bulk's bytes straight into
 *   the caller's buffer, and keeps a status or error line's text with the call.
 *   lf_bound shows the frame hook at most LF_BOUND_HEADER_MAX bytes while it
 *   waits for a header, so that is the longest first line this client reads (type
 *   and CRLF included); a longer one fails the connection (EPROTO). Redis's error
 *   lines run to a few hundred bytes (MISCONF's explanation, an unknown command
 *   with its arguments, a NOPERM with a long user name), so redis.h sets
 *   LF_BOUND_HEADER_MAX to 1024 when the program has not set it, and refuses to
 *   compile below 512 (include redis.h before lf_bound.h, or define it larger
 *   before both). It costs the bound only an earlier compaction of its receive
 *   buffer (LF_BOUND_RXBUF must stay >= 2 x LF_BOUND_HEADER_MAX: lf_bound.h checks).
 *   Values are not lines: a bulk's length is on its first line, its bytes may be
 *   any size up to REDIS_BULK_MAX and straddle any number of reads.
 *
 * HOW THE CONNECTION IS SHARED
 *   r holds its current connection (lf_conn.h's struct lf_conn_link: lf_bound,
 *   socket, a count of references, the frame hook's findings) behind a pointer. A
 *   call takes a reference to it under r's mutex (load the pointer, add one), makes
 *   its request with no lock held, and drops the reference (under the mutex again,
 *   marking the connection dead after a connection error). r holds one reference of
 *   its own on the current connection, so a connection is freed exactly when it is
 *   no longer current and its last call has let it go, by that call. (bench/memc.h,
 *   the memcached client this one follows, measured the mutex against atomics: 30 ns
 *   a call, under 0.6% of one.)
 *
 * LIMITS
 *   - RESP2 only, and only the replies of the five commands here: simple strings,
 *     errors, integers and bulk strings. Arrays ('*', MGET, KEYS, ...) and RESP3
 *     types are refused as a broken stream (EPROTO, the connection is dead): a
 *     client that needs them parses nested replies in the frame hook. Never sent:
 *     MULTI, SUBSCRIBE, MONITOR, CLIENT REPLY OFF (each changes which requests get
 *     replies, which the in-order matching depends on).
 *   - Replies are matched by their position alone. A server (or a proxy) that
 *     dropped a reply or answered one command twice would shift every later reply
 *     onto the wrong call: redis.h sees it when a reply does not fit its request
 *     (EPROTO, the connection dead), not when it happens to fit (a GET answered
 *     with another GET's value). Redis answers each command exactly once.
 *   - No AUTH, SELECT or HELLO: the server's default user and database 0. A server
 *     with requirepass answers every command "-NOAUTH ...": EIO. (To add them: send
 *     them as calls on each new connection after it is made and before it is put
 *     in place, for which lf_conn.h has no hook yet.)
 *   - Keys are C strings; values may hold any bytes. A key or value longer than
 *     REDIS_BULK_MAX (512 MiB, the server's default proto-max-bulk-len) is E2BIG:
 *     a server given a smaller proto-max-bulk-len closes the connection on a longer
 *     one (ECONNRESET for every waiter), so set REDIS_BULK_MAX to match it.
 *   - Requests up to REDIS_STACK_REQ bytes are built on the stack, larger ones in
 *     one heap block: lf_bound writes one whole buffer per request, never
 *     interleaved.
 *   - One server per redis (no cluster: a -MOVED or -ASK reply is an EIO like any
 *     other error), and no hybrid mode (calls from lf_reactor handlers block the
 *     handler's thread; memc.h's memc_attach shows how lf_conn_attach adds it).
 *   - A dead connection is noticed by a call that meets the failure: with no call
 *     under way, nothing reads the socket, so nothing sees Redis go.
 *   - A reconnect's host name is looked up again each time (getaddrinfo, no deadline).
 *   - A reconnect made the moment Redis dies can land in the dying server's accept
 *     queue, which the kernel then resets: that connection dies too, and the next
 *     reconnect replaces it. Waiting a little before reconnecting makes it rarer.
 */
#ifndef REDIS_H_INCLUDED
#define REDIS_H_INCLUDED

/* The longest reply line this client reads (FRAMING): set before lf_bound.h sees it */
#ifndef LF_BOUND_HEADER_MAX
#define LF_BOUND_HEADER_MAX 1024
#endif
#if LF_BOUND_HEADER_MAX < 512
#error "redis.h: LF_BOUND_HEADER_MAX is below 512, too short for Redis's error lines: include redis.h before lf_bound.h and lf_conn.h, or define LF_BOUND_HEADER_MAX 1024"
#endif

#include "lf_conn.h" /* (and through it lf_bound.h and lf.h) */

#include <limits.h>

/* The longest key or value sent, and bulk reply believed (FRAMING, LIMITS) */
#ifndef REDIS_BULK_MAX
#define REDIS_BULK_MAX ((size_t)512 << 20)
#endif
#ifndef REDIS_ERROR_MAX
#define REDIS_ERROR_MAX 255 /* bytes of an error's text kept for redis_last_error */
#endif
#define REDIS_STACK_REQ 1024 /* requests up to this many bytes are built on the stack */
#define REDIS_HOST_MAX LF_CONN_HOST_MAX /* the longest host name redis_open takes (255) */

struct redis_stats {
    struct lf_bound_stats bound;   /* the current connection's (lf_bound_stats) */
    unsigned long long reconnects; /* connections redis_reconnect made and put in place */
    unsigned conns;                /* open now: the current one, and old ones still held */
    unsigned calls;                /* calls holding a connection now */
};

typedef struct redis {
    /* private: redis_open_until sets every field */
    lf_conn conn;                  /* the connection, shared and replaced (lf_conn.h) */
} redis;

static inline const char *redis_strerror(int rc)
{
    switch (rc) {
    case 0: return "ok";
    case ENOENT: return "no such key";
    case EIO: return "the server answered with an error (redis_last_error)";
    case EMSGSIZE: return "value longer than the buffer";
    case E2BIG: return "key or value longer than REDIS_BULK_MAX";
    case EINVAL: return "invalid arguments";
    case ENOMEM: return "out of memory";
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

/* ------------------------------------------------------------------ the wire
 * A request is an array of bulk strings: "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n". */

/* decimal digits of v */
static inline size_t redis__digits(unsigned long long v)
{
    size_t n = 1;
    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

static inline char *redis__put_uint(char *p, unsigned long long v)
{
    size_t n = redis__digits(v), i = n;
    while (i-- > 0) {
        p[i] = (char)('0' + v % 10);
        v /= 10;
    }
    return p + n;
}

/* bytes of one argument on the wire: "$<n>\r\n<bytes>\r\n" */
static inline size_t redis__arg_len(size_t n)
{
    return 1 + redis__digits(n) + 2 + n + 2;
}

static inline char *redis__put_arg(char *p, const void *s, size_t n)
{
    *p++ = '$';
    p = redis__put_uint(p, n);
    *p++ = '\r';
    *p++ = '\n';
    if (n)
        memcpy(p, s, n);
    p += n;
    *p++ = '\r';
    *p++ = '\n';
    return p;
}

/* ------------------------------------------------------------------ the hooks */

/* What a call expects (a '-' error answers any of them) */
enum { REDIS__WANT_BULK = 1, REDIS__WANT_INT, REDIS__WANT_OK, REDIS__WANT_PONG };

/* One call in flight: the bound's context first (read_body gets a pointer to it),
 * then what read_body fills in from the reply. */
struct redis__call {
    lf_bound_ctx ctx;
    int want;               /* REDIS__WANT_* */
    void *val;              /* get: the caller's buffer */
    size_t cap;
    /* from the reply (read_body, at its first byte; type 0: no reply delivered) */
    unsigned char type;     /* '+', '-', ':', '$' */
    int nil;                /* '$': the nil bulk ($-1) */
    size_t vlen;            /* '$': the value's length */
    size_t line;            /* the first line's text, without type and CRLF */
    long long integer;      /* ':' */
    int why;                /* read_body refused: EMSGSIZE, or EPROTO */
    char text[REDIS_ERROR_MAX + 1]; /* '+' or '-': the line's text (cut), NUL-ended */
};

/* The hooks' state in one connection (lf_conn.h keeps one per connection, the hooks'
 * user pointer): it belongs to the reader of the moment (lf_bound's leader), which
 * runs both hooks of a frame in turn. The frame hook's findings about the reply
 * being read, for read_body: */
struct redis__rx {
    unsigned char rx_type;
    int rx_nil;
    size_t rx_vlen, rx_line;
    long long rx_int;
    int rx_bad; /* read_body found the stream out of step: the next header fails it */
};

/* A RESP integer, whole text p[0..n): 0 and *out, or EPROTO. */
static inline int redis__parse_int(const unsigned char *p, size_t n, long long *out)
{
    unsigned long long v = 0, lim = (unsigned long long)LLONG_MAX;
    size_t i = 0;
    int neg = 0;
    if (n > 0 && p[0] == '-') {
        neg = 1;
        i = 1;
        lim += 1; /* -LLONG_MIN */
    }
    if (i == n || n - i > 19)
        return EPROTO;
    for (; i < n; i++) {
        unsigned d = (unsigned)p[i] - '0';
        if (d > 9 || v > (lim - d) / 10)
            return EPROTO;
        v = v * 10 + d;
    }
    /* (two's complement: -(LLONG_MAX + 1) written without overflow) */
    *out = neg ? (v == 0 ? 0 : -(long long)(v - 1) - 1) : (long long)v;
    return 0;
}

/* The frame hook (FRAMING): one byte of header, the type; the body is the rest. */
static int redis__frame(void *user, const unsigned char *p, size_t avail, size_t *hlen,
                        uint64_t *id, size_t *blen)
{
    struct redis__rx *c = (struct redis__rx *)user;
    /* the line, CRLF included, must fit in LF_BOUND_HEADER_MAX bytes */
    size_t lim = avail < LF_BOUND_HEADER_MAX - 1 ? avail : LF_BOUND_HEADER_MAX - 1, e;
    long long n = 0;

    *id = 0; /* (ignored: in order) */
    if (c->rx_bad)
        return EPROTO; /* a reply before this one did not answer its request */
    if (p[0] != '+' && p[0] != '-' && p[0] != ':' && p[0] != '$')
        return EPROTO; /* '*' arrays, RESP3's types, or bytes out of step */
    for (e = 1; e < lim && p[e] != '\r'; e++)
        if (p[e] == '\n')
            return EPROTO; /* a bare LF: not RESP */
    if (e == lim)
        return avail >= LF_BOUND_HEADER_MAX - 1 ? EPROTO : EAGAIN; /* too long, or more */
    if (e + 1 == avail)
        return EAGAIN; /* its LF is still to come */
    if (p[e + 1] != '\n')
        return EPROTO;
    c->rx_type = p[0];
    c->rx_line = e - 1;
    c->rx_nil = 0;
    c->rx_vlen = 0;
    *hlen = 1;
    *blen = (e - 1) + 2;
    if (p[0] == ':' && redis__parse_int(p + 1, e - 1, &c->rx_int) != 0)
        return EPROTO;
    if (p[0] == '$') {
        if (redis__parse_int(p + 1, e - 1, &n) != 0 || (p[1] == '-' && n != -1) ||
            (n >= 0 && (unsigned long long)n > REDIS_BULK_MAX))
            return EPROTO; /* "-0", "-2", a length over our limit */
        if (n == -1) {
            c->rx_nil = 1;
        } else {
            c->rx_vlen = (size_t)n;
            *blen += (size_t)n + 2;
        }
    }
    return 0;
}

/* Copy what part of bytes [off, off + n) of the body falls in [at, at + len) to dst. */
static inline void redis__take(void *dst, size_t at, size_t len, const unsigned char *bytes,
                               size_t n, size_t off)
{
    size_t lo = off > at ? off : at, hi = off + n < at + len ? off + n : at + len;
    if (lo < hi)
        memcpy((unsigned char *)dst + (lo - at), bytes + (lo - off), hi - lo);
}

/* The reply does not answer the request: the stream is out of step (no id says
 * otherwise): the bound fails the connection at once (EPROTO for this call and every
 * other); rx_bad makes any header still read fail it too. */
static inline int redis__out_of_step(struct redis__rx *c, struct redis__call *call)
{
    call->why = EPROTO;
    c->rx_bad = 1;
    return LF_BOUND_BROKEN;
}

/* The read_body hook: body bytes [off, off + n) of the call's reply, in any split. */
static int redis__body(void *user, lf_bound_ctx *ctx, const unsigned char *bytes, size_t n,
                       size_t off)
{
    struct redis__rx *c = (struct redis__rx *)user;
    struct redis__call *call = (struct redis__call *)(void *)ctx; /* ctx is the first member */
    size_t keep, vat;

    if (off == 0) { /* the first bytes: the frame hook's findings are this reply's */
        int ok;
        call->type = c->rx_type;
        call->nil = c->rx_nil;
        call->vlen = c->rx_vlen;
        call->line = c->rx_line;
        call->integer = c->rx_int;
        switch (call->want) {
        case REDIS__WANT_BULK: ok = call->type == '$'; break;
        case REDIS__WANT_INT: ok = call->type == ':'; break;
        default: ok = call->type == '+'; break;
        }
        if (!ok && call->type != '-')
            return redis__out_of_step(c, call);
        if (call->type == '$' && !call->nil && call->vlen > call->cap) {
            call->why = EMSGSIZE; /* the rest is skipped; *len says how long it is */
            return EMSGSIZE;
        }
    }
    if (call->type == '+' || call->type == '-') {
        keep = call->line < REDIS_ERROR_MAX ? call->line : REDIS_ERROR_MAX;
        redis__take(call->text, 0, keep, bytes, n, off);
        if (off + n == call->line + 2) { /* the whole line is in */
            call->text[keep] = '\0';
            if (call->type == '+') {
                const char *want = call->want == REDIS__WANT_OK ? "OK" : "PONG";
                if (call->line != strlen(want) || memcmp(call->text, want, call->line) != 0)
                    return redis__out_of_step(c, call); /* "+QUEUED" to a set, say */
            }
        }
    } else if (call->type == '$' && !call->nil) {
        vat = call->line + 2; /* after the length's line */
        if (call->val)
            redis__take(call->val, vat, call->vlen, bytes, n, off);
        /* the value's CRLF: anything else means its length was a lie */
        for (size_t i = vat + call->vlen; i < vat + call->vlen + 2; i++)
            if (i >= off && i < off + n && bytes[i - off] != (i == vat + call->vlen ? '\r' : '\n'))
                return redis__out_of_step(c, call);
    }
    return 0;
}

/* ------------------------------------------------------------------ the connection
 * lf_conn.h dials Redis, shares the connection and replaces a dead one (HOW THE
 * CONNECTION IS SHARED): each function here is lf_conn's, under redis's name and
 * contract. */

/* r's lf_conn; NULL for an r that is NULL (lf_conn's functions say EINVAL) */
#define REDIS__CONN(r) ((r) != NULL ? &(r)->conn : NULL)

/* Contract: once, before any thread uses r. 0 or an errno (see OPEN AND RECONNECT). */
static inline int redis_open_until(redis *r, const char *host, int port,
                                   const struct timespec *deadline)
{
    struct lf_bound_hooks h;
    memset(&h, 0, sizeof h);
    h.frame_header = redis__frame;
    h.read_body = redis__body;
    /* the longest body a frame may claim: length line, value, two CRLFs */
    h.max_body = LF_BOUND_HEADER_MAX + REDIS_BULK_MAX + 2;
    h.flags = LF_BOUND_IN_ORDER;
    /* the hooks keep their findings in the connection (FRAMING): lf_conn gives each
     * connection a struct redis__rx of its own, as the hooks' user pointer. A call
     * never goes out on a connection marked dead (RESULTS: ECONNRESET, EPIPE). */
    return lf_conn_open_until(REDIS__CONN(r), host, port, &h, sizeof(struct redis__rx),
                              LF_CONN_REFUSE_DEAD, deadline);
}

/* Contract: as redis_open_until, with no deadline. */
static inline int redis_open(redis *r, const char *host, int port)
{
    return redis_open_until(r, host, port, NULL);
}

/* Contract: any thread, any time, many at once (see OPEN AND RECONNECT). */
static inline int redis_reconnect(redis *r, const struct timespec *deadline)
{
    return lf_conn_reconnect(REDIS__CONN(r), deadline);
}

/* Contract: any thread, any time (see OPEN AND RECONNECT). */
static inline int redis_auto_reconnect(redis *r, int on)
{
    return lf_conn_auto_reconnect(REDIS__CONN(r), on);
}

/* Contract: any thread, any time. Final: waiters on every connection return
 * ECONNABORTED, later calls and reconnects ECANCELED. */
static inline int redis_shutdown(redis *r)
{
    return lf_conn_shutdown(REDIS__CONN(r));
}

/* Contract: once no call and no reconnect is under way (else EBUSY, nothing done). */
static inline int redis_close(redis *r)
{
    return lf_conn_close(REDIS__CONN(r));
}

/* Contract: any thread, any time. */
static inline int redis_stats(redis *r, struct redis_stats *out)
{
    struct lf_conn_stats s;
    int rc;
    if (out == NULL)
        return EINVAL;
    rc = lf_conn_stats(REDIS__CONN(r), &s); /* (zeroed on EINVAL) */
    out->bound = s.bound;
    out->reconnects = s.reconnects;
    out->conns = s.conns;
    out->calls = s.calls;
    return rc;
}

/* ------------------------------------------------------------------ the calls */

/* weak: one buffer per thread for the program, however many files include redis.h */
#ifdef __cplusplus
#define REDIS__THREAD_LOCAL thread_local
#else
#define REDIS__THREAD_LOCAL _Thread_local
#endif
extern REDIS__THREAD_LOCAL char redis__last_error[REDIS_ERROR_MAX + 1];
__attribute__((weak)) REDIS__THREAD_LOCAL char redis__last_error[REDIS_ERROR_MAX + 1];

/* Contract: any thread. The text of its last server error, or "". */
static inline const char *redis_last_error(void)
{
    return redis__last_error;
}

/* What a call's bound result and its reply mean together (RESULTS). */
static inline int redis__result(struct redis__call *call, int rc)
{
    if (rc == EBADMSG) /* read_body refused: too long for the buffer, or out of step */
        return call->why ? call->why : EPROTO;
    if (rc != 0)
        return rc;
    switch (call->type) {
    case '-':
        memcpy(redis__last_error, call->text, sizeof call->text);
        return EIO;
    case '$':
        return call->nil ? ENOENT : 0;
    case ':':
    case '+':
        return 0;
    default:
        return EPROTO; /* no reply reached read_body: cannot happen (every body has its
                        * CRLF), kept so the call never reads what was not written */
    }
}

/* One command, one reply: take the connection, encode, send, wait, let it go. argv
 * holds argc arguments (lens[i] bytes each). */
static inline int redis__command(redis *r, struct redis__call *call, int argc,
                                 const void *const *argv, const size_t *lens,
                                 const struct timespec *deadline)
{
    char small[REDIS_STACK_REQ], *req = small, *p;
    size_t len = 1 + redis__digits((size_t)argc) + 2;
    struct lf_conn_guard g;
    int rc;

    redis__last_error[0] = '\0';
    if (r == NULL || !lf_conn_deadline_ok(deadline))
        return EINVAL;
    for (int i = 0; i < argc; i++) {
        if (lens[i] > REDIS_BULK_MAX)
            return E2BIG; /* the server would close the connection on it */
        len += redis__arg_len(lens[i]);
    }
    if ((rc = lf_conn_hold(&r->conn, &g.c, deadline)) != 0)
        return rc; /* nothing sent (dead: the error it died of) */
    g.cn = &r->conn;
    g.ctx = &call->ctx;
    g.heap = NULL;
    g.rc = 0;
    if (len > sizeof small && (req = (char *)(g.heap = malloc(len))) == NULL) {
        rc = ENOMEM;
    } else if ((rc = lf_bound_ctx_init(&call->ctx, call, LF_BOUND_HEADER_MAX + REDIS_BULK_MAX + 2,
                                       0)) == 0) {
        /* buf: never written (read_body places the bytes), but lf_bound wants one for
         * a cap above 0, and the cap must let any legal reply through to read_body */
        *req = '*';
        p = redis__put_uint(req + 1, (size_t)argc);
        *p++ = '\r';
        *p++ = '\n';
        for (int i = 0; i < argc; i++)
            p = redis__put_arg(p, argv[i], lens[i]);
        lf_conn_call(&g, 0, req, len, deadline); /* (id: ignored, in order) */
        lf_bound_ctx_destroy(&call->ctx);
        rc = redis__result(call, g.rc);
    }
    /* the call's result: its EPROTO is also a reply out of step (FRAMING), which
     * failed the bound: the connection is dead */
    lf_conn_drop(&r->conn, g.c, rc);
    free(g.heap);
    return rc;
}

/* Contract: any thread. The value of key into buf (cap bytes), *len its length.
 * EMSGSIZE: *len says how long it is. */
static inline int redis_get(redis *r, const char *key, void *buf, size_t cap, size_t *len,
                            const struct timespec *deadline)
{
    struct redis__call call;
    const void *argv[2];
    size_t lens[2];
    int rc;
    if (key == NULL || len == NULL || (buf == NULL && cap != 0)) {
        redis__last_error[0] = '\0';
        return EINVAL;
    }
    memset((void *)&call, 0, sizeof call);
    call.want = REDIS__WANT_BULK;
    call.val = buf;
    call.cap = buf ? cap : 0;
    argv[0] = "GET";
    lens[0] = 3;
    argv[1] = key;
    lens[1] = strlen(key);
    rc = redis__command(r, &call, 2, argv, lens, deadline);
    if (rc == 0 || rc == EMSGSIZE)
        *len = call.vlen;
    return rc;
}

/* Contract: any thread. Store len bytes under key; ttl_ms > 0: it expires then. */
static inline int redis_set(redis *r, const char *key, const void *val, size_t len,
                            long long ttl_ms, const struct timespec *deadline)
{
    struct redis__call call;
    const void *argv[5];
    size_t lens[5];
    char ms[24];
    if (key == NULL || (val == NULL && len != 0) || ttl_ms < 0) {
        redis__last_error[0] = '\0';
        return EINVAL;
    }
    memset((void *)&call, 0, sizeof call);
    call.want = REDIS__WANT_OK;
    argv[0] = "SET";
    lens[0] = 3;
    argv[1] = key;
    lens[1] = strlen(key);
    argv[2] = val ? val : "";
    lens[2] = len;
    if (ttl_ms == 0)
        return redis__command(r, &call, 3, argv, lens, deadline);
    argv[3] = "PX";
    lens[3] = 2;
    argv[4] = ms;
    lens[4] = (size_t)(redis__put_uint(ms, (unsigned long long)ttl_ms) - ms);
    return redis__command(r, &call, 5, argv, lens, deadline);
}

/* Contract: any thread. 0 the key was deleted, ENOENT there was none. */
static inline int redis_del(redis *r, const char *key, const struct timespec *deadline)
{
    struct redis__call call;
    const void *argv[2];
    size_t lens[2];
    int rc;
    if (key == NULL) {
        redis__last_error[0] = '\0';
        return EINVAL;
    }
    memset((void *)&call, 0, sizeof call);
    call.want = REDIS__WANT_INT;
    argv[0] = "DEL";
    lens[0] = 3;
    argv[1] = key;
    lens[1] = strlen(key);
    rc = redis__command(r, &call, 2, argv, lens, deadline);
    return rc == 0 && call.integer == 0 ? ENOENT : rc;
}

/* Contract: any thread. *value (may be NULL): the value after the increment. */
static inline int redis_incr(redis *r, const char *key, long long *value,
                             const struct timespec *deadline)
{
    struct redis__call call;
    const void *argv[2];
    size_t lens[2];
    int rc;
    if (key == NULL) {
        redis__last_error[0] = '\0';
        return EINVAL;
    }
    memset((void *)&call, 0, sizeof call);
    call.want = REDIS__WANT_INT;
    argv[0] = "INCR";
    lens[0] = 4;
    argv[1] = key;
    lens[1] = strlen(key);
    rc = redis__command(r, &call, 2, argv, lens, deadline);
    if (rc == 0 && value != NULL)
        *value = call.integer;
    return rc;
}

/* Contract: any thread. 0: the server answered +PONG. */
static inline int redis_ping(redis *r, const struct timespec *deadline)
{
    struct redis__call call;
    const void *argv[1];
    size_t lens[1];
    memset((void *)&call, 0, sizeof call);
    call.want = REDIS__WANT_PONG;
    argv[0] = "PING";
    lens[0] = 4;
    return redis__command(r, &call, 1, argv, lens, deadline);
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
