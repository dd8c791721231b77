/* SPDX-License-Identifier: MIT (the licence text is at the end of this file) */
/* bench/memc.h - a memcached client on lf_bound.h: many threads share ONE connection
 * and speak memcached's binary protocol over it. The request's `opaque` field is the
 * bound's request id, so each reply finds the thread that waits for it, in whatever
 * order the replies come.
 *
 *   memc m;
 *   memc_open_until(&m, "127.0.0.1", 11211, &deadline);   (memc_open: no deadline)
 *   then, from any number of threads:
 *   rc = memc_set(&m, "k", val, len, flags, 0, NULL);
 *   rc = memc_get(&m, "k", buf, sizeof buf, &len, &flags, NULL);
 *   rc = memc_delete(&m, "k", NULL);
 *   memc_shutdown(&m) (wakes every waiter); join the threads; memc_close(&m);
 *
 * Deadlines are absolute CLOCK_MONOTONIC times, as lf_bound's; NULL waits for good.
 * Keys are C strings of 1..250 bytes.
 *
 * TO TAKE IT AWAY
 *   Copy memc.h, lf_bound.h and lf.h into one directory of your project (memc.h
 *   includes "lf_bound.h", found beside it or through -I). Nothing else: no liburcu,
 *   no other file of this repository. Build: cc -std=c11 -D_POSIX_C_SOURCE=200809L
 *   app.c -pthread (C11 and POSIX threads, as lf_bound.h needs). Every file that
 *   shares a memc includes it with the same LF_PROMOTE and LF_SYNC (lf.h).
 *
 * RESULTS: one meaning each.
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
 *   ECONNRESET  the connection ended (memcached went away) before the reply came:
 *               every waiter wakes with it, and later calls fail (ECONNRESET, or
 *               EPIPE if the write side broke first): memc_close, memc_open anew
 *   EPIPE       the request could not be sent: the write side broke, or an earlier
 *               request was cut off mid-way (its deadline passed while the socket
 *               was full, so the stream holds half a request). Every later call
 *               returns EPIPE too, even if replies still come: memc_close, memc_open
 *   EPROTO      the byte stream is not memcached's: a bad magic byte, a body length
 *               over MEMC_MAX_BODY (the connection is dead, and every waiter and
 *               later call gets EPROTO). Or one reply that does not answer this
 *               request: another opcode, extras and key longer than its body, a
 *               value in the reply to a set or a delete (that reply is skipped whole,
 *               buf is not written; the connection goes on)
 *   ETIMEDOUT   the deadline passed first (a late reply is dropped). The request
 *               may have been sent, even with a deadline already past: a set or a
 *               delete may have been applied
 *   ECANCELED   memc_shutdown came first: nothing of the request was sent
 *   ECONNABORTED
 *               memc_shutdown came after the request was sent, before its reply: a
 *               set or a delete may have been applied
 *   ENOMEM      (as above) also: no memory for a large request
 *
 * OPEN
 *   memc_open_until(m, host, port, deadline): host is an address (IPv4 or IPv6, no
 *   lookup) or a name (getaddrinfo: the resolver takes its own time, which the
 *   deadline does not bound; pass an address to keep it strict). Each address of the
 *   name is tried in turn with a non-blocking connect, polled until the deadline
 *   (absolute CLOCK_MONOTONIC; NULL: the kernel's own connect timeout, minutes);
 *   the socket is close-on-exec, TCP_NODELAY. 0, or:
 *     ECONNREFUSED  nothing listens there       ETIMEDOUT  the deadline passed first
 *     ENETUNREACH, EHOSTUNREACH  no route       ENXIO      the name has no address
 *     EAGAIN        the resolver failed for now EINVAL     host NULL or longer than
 *     ENOMEM, EMFILE, ...                                  MEMC_HOST_MAX, port not
 *                                                          1..65535, a bad deadline
 *   A deadline already past still makes one attempt: a connect that completes at
 *   once (loopback) succeeds.
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

typedef struct memc {
    lf_bound b;
    int fd;
    atomic_uint next_id; /* the next opaque */
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

/* ------------------------------------------------------------------ the calls */

/* weak: one variable for the program, however many files include memc.h */
__attribute__((weak)) _Thread_local unsigned memc__last_status;

/* The memcached status of this thread's last reply (0 when none came). */
static inline unsigned memc_last_status(void)
{
    return memc__last_status;
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

/* close is a cancellation point to libc, and a thread ended in it may or may not
 * have closed the descriptor: closes run with cancellation off */
static inline void memc__close(int fd)
{
    int cs;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cs);
    close(fd);
    pthread_setcancelstate(cs, &cs);
}

static void memc__dial_cancelled(void *arg)
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
        n = poll(&p, 1, ms < 0 || ms > 50 ? 50 : ms);
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

/* Contract: once, before any thread uses m. 0 or an errno (see OPEN AND RECONNECT). */
static inline int memc_open_until(memc *m, const char *host, int port,
                                  const struct timespec *deadline)
{
    struct lf_bound_hooks h;
    struct memc__dial d;
    int rc;

    if (m == NULL || host == NULL || strlen(host) > MEMC_HOST_MAX || port < 1 || port > 65535 ||
        !memc__deadline_ok(deadline))
        return EINVAL;
    memset(&d, 0, sizeof d);
    d.host = host;
    d.port = port;
    d.deadline = deadline;
    if ((rc = memc__dial(&d)) != 0)
        return rc;
    m->fd = d.fd;
    memset(&h, 0, sizeof h);
    h.frame_header = memc__frame;
    h.read_body = memc__body;
    h.max_body = MEMC_MAX_BODY;
    h.user = m;
    if ((rc = lf_bound_init(&m->b, m->fd, &h)) != 0) {
        memc__close(m->fd);
        return rc;
    }
    atomic_init(&m->next_id, 1);
    return 0;
}

/* Contract: as memc_open_until, with no deadline. */
static inline int memc_open(memc *m, const char *host, int port)
{
    return memc_open_until(m, host, port, NULL);
}

/* Contract: any thread. Every waiter returns ECONNABORTED, later calls ECANCELED. */
static inline void memc_shutdown(memc *m)
{
    (void)lf_bound_shutdown(&m->b);
}

/* Contract: no thread inside a call any more. */
static inline int memc_close(memc *m)
{
    int rc = lf_bound_destroy(&m->b);
    if (rc == 0)
        close(m->fd);
    return rc;
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

/* One request, one reply: encode, send, wait. */
static inline int memc__request(memc *m, struct memc__call *call, unsigned opcode,
                             const void *extras, size_t elen, const char *key, const void *val,
                             size_t vlen, const struct timespec *deadline)
{
    unsigned char small[MEMC_STACK_REQ], *req = small;
    size_t klen = strlen(key), len = memc_request_len(elen, klen, vlen);
    uint32_t id;
    int rc;

    memc__last_status = 0;
    call->op = opcode;
    /* the value's limit is the server's (E2BIG), the protocol's 32 bits ours */
    if (klen == 0 || klen > MEMC_KEY_MAX || vlen > UINT32_MAX - MEMC_HDR - elen - klen)
        return EINVAL;
    if (len > sizeof small && (req = (unsigned char *)malloc(len)) == NULL)
        return ENOMEM;
    /* relaxed: the id only has to be unique, and the bound's lock orders the rest */
    id = atomic_fetch_add_explicit(&m->next_id, 1, memory_order_relaxed);
    memc_encode(req, opcode, id, extras, elen, key, klen, val, vlen);
    /* buf: never written (read_body places the bytes), but lf_bound wants one for a
     * cap above 0, and the cap must let any legal reply through to read_body */
    if ((rc = lf_bound_ctx_init(&call->ctx, call, MEMC_MAX_BODY, 0)) == 0) {
        rc = lf_bound_call(&m->b, &call->ctx, id, req, len, deadline);
        lf_bound_ctx_destroy(&call->ctx);
        rc = memc__result(call, rc, opcode);
    }
    if (req != small)
        free(req);
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
