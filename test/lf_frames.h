/* lf_frames.h - the wire format the lf_bound tests speak, blocking socket I/O for
 * their in-test servers, and the set-up they share (after lf_bound.h, whose
 * configuration is the test's). A frame is a 16-byte header (magic, body length, id;
 * host byte order, both ends are this process) and then the body. */
#ifndef LF_FRAMES_H_INCLUDED
#define LF_FRAMES_H_INCLUDED

#include "lf_test.h"

#include <stdint.h>
#include <sys/socket.h>

#define MAGIC 0x4c464231u    /* a reply (or a request) */
#define HB_MAGIC 0x4c464248u /* a heartbeat: the parse hook says ENOMSG (skip it) */
#define HDR 16

static inline void lft_put_header(unsigned char *h, uint32_t magic, uint32_t len, uint64_t id)
{
    memcpy(h, &magic, 4);
    memcpy(h + 4, &len, 4);
    memcpy(h + 8, &id, 8);
}

/* The parse_header hook of every bound test. */
static inline int lft_parse(void *user, const unsigned char *h, uint64_t *id, size_t *len)
{
    uint32_t m, l;
    (void)user;
    memcpy(&m, h, 4);
    memcpy(&l, h + 4, 4);
    memcpy(id, h + 8, 8);
    *len = l;
    if (m == HB_MAGIC)
        return ENOMSG;
    return m == MAGIC ? 0 : EPROTO;
}

/* A shorter frame, for the hybrid tests whose servers only count bytes or echo ids:
 * a 12-byte header, the id (8 bytes) and the body length (4), no magic. */
static inline int lft_parse_short(void *user, const unsigned char *h, uint64_t *id,
                                  size_t *len)
{
    uint32_t l;
    (void)user;
    memcpy(id, h, 8);
    memcpy(&l, h + 8, 4);
    *len = l;
    return 0;
}

/* All n bytes, also to a non-blocking socket (waits out a full buffer). A peer gone
 * fails the test: use send() directly where that is expected. */
static inline void lft_write_all(int fd, const void *p, size_t n)
{
    const char *c = (const char *)p;
    while (n) {
        ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            lft_sleep_ms(1);
            continue;
        }
        CHECK(w > 0);
        c += w;
        n -= (size_t)w;
    }
}

/* All n bytes from a blocking socket: 1, or 0 when the peer hung up before the first
 * byte (ECONNRESET too: it closed with our bytes unread). Anything else fails. */
static inline int lft_read_all(int fd, void *p, size_t n)
{
    char *c = (char *)p;
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, c + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (got == 0 && (r == 0 || (r < 0 && errno == ECONNRESET)))
            return 0;
        CHECK(r > 0);
        got += (size_t)r;
    }
    return 1;
}

/* n bytes read and dropped (the filler lft_fill_socket left before the requests): 1,
 * or 0 when the peer hung up first, as lft_read_all. */
static inline int lft_skip(int fd, size_t n)
{
    unsigned char skip[4096];
    while (n) {
        size_t k = n < sizeof skip ? n : sizeof skip;
        if (!lft_read_all(fd, skip, k))
            return 0;
        n -= k;
    }
    return 1;
}

/* ------------------------------------------------------------------ the bound under test
 * A test file runs bare, and hybrid from its t_reactor_bound_* twin, which defines
 * LFT_HYBRID (and LF_BOUND_REACTOR): the bound is then attached to R, made and destroyed
 * with it, and MODE says which in what the test prints. */

#ifdef LFT_HYBRID
static lf_reactor R;
#define MODE "hybrid"
#else
#define MODE "bare"
#endif

/* The hooks of a bound that speaks these frames. */
static inline void lft_hooks(struct lf_bound_hooks *h)
{
    memset(h, 0, sizeof *h);
    h->header_len = HDR;
    h->parse_header = lft_parse;
}

/* A socketpair: sv[0] the bound's end, sv[1] the in-test server's. sndbuf > 0 caps
 * what the bound's end holds in flight (the kernel doubles it), so that a large
 * request, or a few queued ones, wait for room. */
static inline void lft_pair(int sv[2], int sndbuf)
{
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    if (sndbuf > 0)
        CHECK(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf) == 0);
}

#ifdef LF_BOUND_REACTOR
/* A hybrid bound on fd: r made, the bound made and attached to it. */
static inline void lft_hybrid_open(lf_bound *b, lf_reactor *r, int fd,
                                   const struct lf_bound_hooks *h)
{
    CHECK_EQ(lf_reactor_init(r), 0);
    CHECK_EQ(lf_bound_init(b, fd, h), 0);
    CHECK_EQ(lf_bound_attach(b, r), 0);
}

/* The bound destroyed (it fails with a context in flight), then r (which closes the
 * fds of the handlers still registered). */
static inline void lft_hybrid_close(lf_bound *b, lf_reactor *r)
{
    CHECK_EQ(lf_bound_destroy(b), 0);
    CHECK_EQ(lf_reactor_destroy(r), 0);
}
#endif

/* The bound on fd; hybrid: attached to R, made here. */
static inline void lft_bound_open(lf_bound *b, int fd, const struct lf_bound_hooks *h)
{
#ifdef LFT_HYBRID
    lft_hybrid_open(b, &R, fd, h);
#else
    CHECK_EQ(lf_bound_init(b, fd, h), 0);
#endif
}

/* lf_bound_destroy (it fails with a context in flight); hybrid: R's too. The fd stays
 * open: it is the test's. */
static inline void lft_bound_close(lf_bound *b)
{
#ifdef LFT_HYBRID
    lft_hybrid_close(b, &R);
#else
    CHECK_EQ(lf_bound_destroy(b), 0);
#endif
}

/* The bound on a new socketpair sv (lft_pair), and its undoing: the bound closed, then
 * both ends. */
static inline void lft_pair_open(lf_bound *b, int sv[2], int sndbuf,
                                 const struct lf_bound_hooks *h)
{
    lft_pair(sv, sndbuf);
    lft_bound_open(b, sv[0], h);
}

static inline void lft_pair_close(lf_bound *b, const int sv[2])
{
    lft_bound_close(b);
    close(sv[0]);
    close(sv[1]);
}

static inline struct lf_bound_stats lft_stats(lf_bound *b)
{
    struct lf_bound_stats s;
    CHECK_EQ(lf_bound_stats(b, &s), 0);
    return s;
}

/* Fill the bound's end fd (before the bound writes on it) until it takes no more:
 * what is in flight then is filler, whose length this returns for the server to skip
 * (lft_skip) before the requests. */
static inline size_t lft_fill_socket(int fd)
{
    static unsigned char z[512];
    size_t junk = 0;
    for (;;) {
        ssize_t n = send(fd, z, sizeof z, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0) {
            CHECK(errno == EAGAIN || errno == EWOULDBLOCK);
            break;
        }
        junk += (size_t)n;
    }
    CHECK(junk > 0);
    return junk;
}

/* An in-test server thread running fn(arg); most serve until they read EOF. */
static inline pthread_t lft_server_start(void *(*fn)(void *), void *arg)
{
    pthread_t t;
    CHECK(pthread_create(&t, NULL, fn, arg) == 0);
    return t;
}

/* The bound's end fd shut for writing: the server t reads EOF after the last request
 * and returns; joined, what it returned. */
static inline void *lft_server_end(pthread_t t, int fd)
{
    CHECK(shutdown(fd, SHUT_WR) == 0);
    return lft_join(t);
}

#endif
