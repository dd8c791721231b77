/* bench/gw_proto.h - what the four gateways (gw_lf.c, gw_uv.c, gw_asio.cc) share: the
 * client protocol, the command line, and the few bytes of memcached's binary protocol
 * the libuv and asio gateways write by hand (gw_lf.c speaks it through bench/memc.h).
 * Shared, as bench/httpd_core.h is for the HTTP servers, so that the rows differ only
 * in how the gateway waits for memcached. Plain C that also compiles as C++.
 *
 * CLIENT PROTOCOL (client <-> gateway), line based, pipelining allowed, replies in
 * request order per connection:
 *   GET <key>\r\n               -> VALUE <len>\r\n<len bytes>\r\n  or  MISS\r\n
 *   SET <key> <len>\r\n<bytes>\r\n -> STORED\r\n
 *   the backend failed, or its deadline passed  -> ERR backend\r\n / ERR timeout\r\n
 *                                                  (the connection goes on)
 *   a malformed line, a key over 250 bytes, a value over 1 MiB -> ERR proto\r\n, and
 *                                                  the gateway closes the connection
 *   A key is 1..250 bytes from 0x21..0x7e (what memcached's text protocol allows, so
 *   the same keys work over both of its protocols).
 *
 * COMMAND LINE (every gateway; srv_common.h's contract plus the gateway's own):
 *   -p PORT  (0: any; prints "port N" once listening)    -t THREADS
 *   -m HOST:PORT  memcached (IPv4)                         -d MS deadline per call (500)
 *   -i SECONDS idle clients are closed after (30)          -w MS a client whose output
 *   -f FLAGS the gateway's own (gw_lf.c: 1 = no fail-fast)    does not move for this
 *                                                             long is dropped (5000)
 *   Output kept per client before the gateway stops reading its requests: GW_BACKLOG.
 *   Requests of one client inside the gateway at once (read, not yet answered), before
 *   it stops reading that client: GW_PIPELINE_MAX (gw_lf.c's handler takes one at a
 *   time by construction). Without it a client that pipelines and never reads would
 *   have the libuv and asio gateways send memcached everything it writes.
 */
#ifndef BENCH_GW_PROTO_H
#define BENCH_GW_PROTO_H

#include "srv_common.h"

#include <stdint.h>
#include <time.h>

#define GW_KEY_MAX 250
#define GW_VALUE_MAX (1u << 20)
#define GW_LINE_MAX (4 + GW_KEY_MAX + 1 + 7 + 2) /* "SET " key " " 1048576 "\r\n" */
#define GW_BACKLOG (256u * 1024u) /* output kept for a client before we stop reading it */
#define GW_PIPELINE_MAX 64         /* requests of one client in the gateway at once */
#define GW_VALUE_HEAD_MAX 16      /* "VALUE 1048576\r\n" and its NUL */
#define GW_BACKOFF_MIN_MS 10      /* reconnects to memcached: 10, 20, 40 .. 500 ms */
#define GW_BACKOFF_MAX_MS 500

#define GW_MISS "MISS\r\n"
#define GW_STORED "STORED\r\n"
#define GW_ERR_TIMEOUT "ERR timeout\r\n"
#define GW_ERR_BACKEND "ERR backend\r\n"
#define GW_ERR_PROTO "ERR proto\r\n"

struct gw_args {
    int port, threads, flags;
    char mc_host[64];
    int mc_port;
    long long deadline_ms, idle_ms, wstall_ms;
};

static inline struct gw_args gw_parse_args(int argc, char **argv, int default_threads)
{
    struct gw_args a;
    memset(&a, 0, sizeof a);
    a.threads = default_threads;
    a.deadline_ms = 500;
    a.idle_ms = 30000;
    a.wstall_ms = 5000;
    strcpy(a.mc_host, "127.0.0.1");
    a.mc_port = 11211;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *o = argv[i], *v = argv[i + 1];
        if (strcmp(o, "-p") == 0) {
            a.port = atoi(v);
        } else if (strcmp(o, "-t") == 0) {
            a.threads = atoi(v);
        } else if (strcmp(o, "-f") == 0) {
            a.flags = atoi(v);
        } else if (strcmp(o, "-d") == 0) {
            a.deadline_ms = atoll(v);
        } else if (strcmp(o, "-i") == 0) {
            a.idle_ms = (long long)(atof(v) * 1000.0);
        } else if (strcmp(o, "-w") == 0) {
            a.wstall_ms = atoll(v);
        } else if (strcmp(o, "-m") == 0) {
            const char *colon = strrchr(v, ':');
            size_t hl = colon ? (size_t)(colon - v) : 0;
            if (!colon || hl == 0 || hl >= sizeof a.mc_host)
                goto usage;
            memcpy(a.mc_host, v, hl);
            a.mc_host[hl] = '\0';
            a.mc_port = atoi(colon + 1);
        } else {
            goto usage;
        }
    }
    if (a.threads < 1)
        a.threads = 1;
    if (a.deadline_ms < 1 || a.idle_ms < 1 || a.wstall_ms < 1 || a.mc_port <= 0)
        goto usage;
    return a;
usage:
    fprintf(stderr, "usage: %s [-p PORT] [-t THREADS] [-m HOST:PORT] [-d DEADLINE_MS] "
                    "[-i IDLE_S] [-w WSTALL_MS] [-f FLAGS]\n", argv[0]);
    exit(2);
}

/* ------------------------------------------------------------------ requests */

enum { GW_GET = 1, GW_SET = 2 };

struct gw_req {
    int op;                   /* GW_GET, GW_SET */
    const char *key;          /* not NUL-terminated: klen bytes */
    size_t klen;
    const unsigned char *val; /* SET: vlen bytes */
    size_t vlen;
    size_t size;              /* bytes the whole request takes */
};

static inline int gw__key_ok(const unsigned char *k, size_t n)
{
    if (n == 0 || n > GW_KEY_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (k[i] < 0x21 || k[i] > 0x7e)
            return 0;
    return 1;
}

/* The request at the start of p[0..n). 1: whole, *r says what it is. 0: not all of it
 * is there yet; *need is how many bytes it takes when the line says so (a SET's
 * value), else 0. -1: malformed (ERR proto, then close). */
static inline int gw_parse(const unsigned char *p, size_t n, struct gw_req *r, size_t *need)
{
    size_t lim = n < GW_LINE_MAX ? n : GW_LINE_MAX;
    const unsigned char *nl;
    *need = 0;
    if (n == 0)
        return 0; /* p may be NULL then: an empty buffer has no memory yet */
    nl = (const unsigned char *)memchr(p, '\n', lim);
    if (nl == NULL)
        return n >= GW_LINE_MAX ? -1 : 0;
    size_t line = (size_t)(nl - p) + 1; /* with its \r\n */
    if (line < 6 || nl[-1] != '\r')
        return -1;
    const unsigned char *end = nl - 1; /* the \r */
    if (memcmp(p, "GET ", 4) == 0) {
        if (!gw__key_ok(p + 4, (size_t)(end - (p + 4))))
            return -1;
        r->op = GW_GET;
        r->key = (const char *)p + 4;
        r->klen = (size_t)(end - (p + 4));
        r->val = NULL;
        r->vlen = 0;
        r->size = line;
        return 1;
    }
    if (memcmp(p, "SET ", 4) != 0)
        return -1;
    const unsigned char *sp = (const unsigned char *)memchr(p + 4, ' ', (size_t)(end - (p + 4)));
    if (sp == NULL || !gw__key_ok(p + 4, (size_t)(sp - (p + 4))))
        return -1;
    size_t vlen = 0, digits = (size_t)(end - (sp + 1));
    if (digits < 1 || digits > 7)
        return -1;
    for (const unsigned char *d = sp + 1; d < end; d++) {
        if (*d < '0' || *d > '9')
            return -1;
        vlen = vlen * 10 + (size_t)(*d - '0');
    }
    if (vlen > GW_VALUE_MAX)
        return -1;
    *need = line + vlen + 2;
    if (n < *need)
        return 0;
    if (p[line + vlen] != '\r' || p[line + vlen + 1] != '\n')
        return -1;
    r->op = GW_SET;
    r->key = (const char *)p + 4;
    r->klen = (size_t)(sp - (p + 4));
    r->val = p + line;
    r->vlen = vlen;
    r->size = *need;
    return 1;
}

/* "VALUE <len>\r\n" into out (GW_VALUE_HEAD_MAX bytes): its length. */
static inline size_t gw_value_head(char *out, size_t vlen)
{
    return (size_t)snprintf(out, GW_VALUE_HEAD_MAX, "VALUE %zu\r\n", vlen);
}

/* ------------------------------------------------------------------ growable bytes */

/* A buffer for a connection's input or output: bytes [off, len) are live. */
struct gw_buf {
    unsigned char *p;
    size_t off, len, cap;
};

/* Room for `more` bytes after len (moving the live bytes to the front first). 0, or
 * -1 out of memory. */
static inline int gw_buf_reserve(struct gw_buf *b, size_t more)
{
    if (b->off > 0 && b->cap - b->len < more) {
        memmove(b->p, b->p + b->off, b->len - b->off);
        b->len -= b->off;
        b->off = 0;
    }
    if (b->cap - b->len >= more)
        return 0;
    size_t cap = b->cap ? b->cap : 1024;
    while (cap - b->len < more)
        cap *= 2;
    unsigned char *p = (unsigned char *)realloc(b->p, cap);
    if (p == NULL)
        return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

static inline int gw_buf_put(struct gw_buf *b, const void *data, size_t n)
{
    if (gw_buf_reserve(b, n) != 0)
        return -1;
    memcpy(b->p + b->len, data, n);
    b->len += n;
    return 0;
}

/* Bytes [off, off + n) are used up. An empty buffer that grew for a large request
 * gives its memory back, so 10,000 idle clients keep little. */
static inline void gw_buf_consume(struct gw_buf *b, size_t n)
{
    b->off += n;
    if (b->off == b->len) {
        b->off = b->len = 0;
        if (b->cap > 64 * 1024) {
            free(b->p);
            b->p = NULL;
            b->cap = 0;
        }
    }
}

static inline void gw_buf_free(struct gw_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

/* ------------------------------------------------------------------ memcached, binary
 * What the libuv and asio gateways need of memcached's binary protocol: get and set
 * requests, and the replies' frames. Big-endian; a 24-byte header. */

#define GW_MC_HDR 24

static inline void gw__put32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static inline uint32_t gw__get32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline void gw__mc_head(unsigned char *out, unsigned op, uint32_t opaque, size_t klen,
                               size_t elen, size_t vlen)
{
    memset(out, 0, GW_MC_HDR);
    out[0] = 0x80; /* request */
    out[1] = (unsigned char)op;
    out[2] = (unsigned char)(klen >> 8);
    out[3] = (unsigned char)klen;
    out[4] = (unsigned char)elen;
    gw__put32(out + 8, (uint32_t)(elen + klen + vlen));
    gw__put32(out + 12, opaque);
}

/* A get of key: GW_MC_HDR + klen bytes into out. */
static inline size_t gw_mc_get(unsigned char *out, uint32_t opaque, const char *key, size_t klen)
{
    gw__mc_head(out, 0x00, opaque, klen, 0, 0);
    memcpy(out + GW_MC_HDR, key, klen);
    return GW_MC_HDR + klen;
}

/* A set of key to val (flags 0, no expiry): GW_MC_HDR + 8 + klen + vlen bytes. */
static inline size_t gw_mc_set(unsigned char *out, uint32_t opaque, const char *key, size_t klen,
                               const void *val, size_t vlen)
{
    gw__mc_head(out, 0x01, opaque, klen, 8, vlen);
    memset(out + GW_MC_HDR, 0, 8);
    memcpy(out + GW_MC_HDR + 8, key, klen);
    if (vlen)
        memcpy(out + GW_MC_HDR + 8 + klen, val, vlen);
    return GW_MC_HDR + 8 + klen + vlen;
}

struct gw_mc_reply {
    unsigned op, status;
    uint32_t opaque;
    const unsigned char *val; /* the value (a get's), vlen bytes */
    size_t vlen;
    size_t size;              /* bytes the whole frame takes */
};

/* The reply frame at the start of p[0..n). 1 whole, 0 not yet, -1 not memcached's
 * (a bad magic byte, extras and key longer than the body, a body over 2 MiB). */
static inline int gw_mc_frame(const unsigned char *p, size_t n, struct gw_mc_reply *r)
{
    if (n < GW_MC_HDR)
        return 0;
    uint32_t body = gw__get32(p + 8);
    size_t klen = (size_t)p[2] << 8 | p[3], elen = p[4];
    if (p[0] != 0x81 || body > 2 * GW_VALUE_MAX || elen + klen > body)
        return -1;
    r->size = GW_MC_HDR + body;
    if (n < r->size)
        return 0;
    r->op = p[1];
    r->status = (unsigned)p[6] << 8 | p[7];
    r->opaque = gw__get32(p + 12);
    r->val = p + GW_MC_HDR + elen + klen;
    r->vlen = body - elen - klen;
    return 1;
}

/* ------------------------------------------------------------------ time */

static inline long long gw_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#endif
