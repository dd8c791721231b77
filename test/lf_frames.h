/* lf_frames.h - the wire format the lf_bound tests speak, and blocking socket I/O
 * for their in-test servers. A frame is a 16-byte header (magic, body length, id;
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

#endif
