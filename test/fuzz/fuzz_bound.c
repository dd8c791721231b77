/* fuzz_bound.c - libFuzzer harness: any byte stream on lf_bound's connection.
 *
 * Four contexts (ids 1..4, reply buffers of 8..64 bytes with a guard after each)
 * wait on one connection whose peer writes the input and hangs up; one thread joins
 * them in turn (so it leads, and hands replies to the others' contexts). A small
 * reference parser reads the same bytes frame by frame and says what each context
 * must end with: its reply byte for byte, EPROTO (malformed stream, a body over
 * max_body in any frame, a stray reply under LF_BOUND_STRICT), EMSGSIZE (its reply
 * is longer than its buffer: c->len then says how long), EBADMSG (read_body refused
 * it) or ECONNRESET (the stream ended first). Every join must agree with it, no guard byte may change, the
 * counters must add up and the bound must destroy cleanly.
 *
 * Input: byte 0 options (bit 0 LF_BOUND_STRICT, bit 1 max_body 48, bit 2 a read_body
 * hook that refuses bodies starting with 0xbd), byte 1 the four buffer sizes (2 bits
 * each: 8 << k), then the stream: frames of a 16-byte header (magic, body length,
 * id; little-endian) and the body, as test/lf_frames.h writes them.
 *
 * Build and run: make fuzz (longer), or a short run inside make test. */
#include "../../lf_bound.h"

#include "fuzz_require.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>

#define MAGIC 0x4c464231u
#define HB_MAGIC 0x4c464248u
#define HDR 16
#define NCTX 4
#define GUARD 16
#define REFUSE 0xbd

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static int parse(void *user, const unsigned char *h, uint64_t *id, size_t *len)
{
    uint32_t m = get32(h);
    (void)user;
    *len = get32(h + 4);
    *id = get64(h + 8);
    if (m == HB_MAGIC)
        return ENOMSG;
    return m == MAGIC ? 0 : EPROTO;
}

static int refuse_marked(void *user, lf_bound_ctx *c, const unsigned char *bytes, size_t n,
                         size_t offset)
{
    (void)user;
    if (offset == 0 && n > 0 && bytes[0] == REFUSE)
        return EPROTO;
    memcpy((unsigned char *)c->buf + offset, bytes, n);
    return 0;
}

/* What each context must end with. want[k]: 0, EPROTO, EMSGSIZE, EBADMSG or
 * ECONNRESET; body[k]/len[k]: its reply (for 0), len[k] also for EMSGSIZE. */
struct expected {
    int want[NCTX];
    const uint8_t *body[NCTX];
    size_t len[NCTX];
};

static void fail_all(struct expected *e, const int *waiting, int err)
{
    for (int k = 0; k < NCTX; k++)
        if (waiting[k] && e->want[k] < 0)
            e->want[k] = err;
}

static void reference(const uint8_t *s, size_t n, int strict, size_t max_body, int hook,
                      const size_t *cap, struct expected *e)
{
    int waiting[NCTX] = {1, 1, 1, 1}, left = NCTX;
    size_t pos = 0;

    for (int k = 0; k < NCTX; k++)
        e->want[k] = -1;
    while (left > 0) {
        if (n - pos < HDR) {
            fail_all(e, waiting, ECONNRESET);
            return;
        }
        uint32_t magic = get32(s + pos), blen = get32(s + pos + 4);
        uint64_t id = get64(s + pos + 8);
        size_t avail;
        pos += HDR;
        avail = n - pos;
        if (magic != MAGIC && magic != HB_MAGIC) {
            fail_all(e, waiting, EPROTO);
            return;
        }
        if (max_body && blen > max_body) { /* skipped frames too */
            fail_all(e, waiting, EPROTO);
            return;
        }
        if (magic == MAGIC && id >= 1 && id <= NCTX && waiting[id - 1]) {
            int k = (int)id - 1;
            waiting[k] = 0; /* claimed: its result comes from this frame */
            left--;
            if (blen > cap[k]) {
                e->want[k] = EMSGSIZE; /* refused before a byte is copied */
                e->len[k] = blen;
            } else if (hook && blen > 0 && avail > 0 && s[pos] == REFUSE) {
                e->want[k] = EBADMSG;
            } else if (avail < blen) {
                e->want[k] = ECONNRESET; /* the body was cut off */
            } else {
                e->want[k] = 0;
                e->body[k] = s + pos;
                e->len[k] = blen;
            }
        } else if (magic == MAGIC && strict) {
            fail_all(e, waiting, EPROTO); /* nobody's reply */
            return;
        }
        if (avail < blen) {
            fail_all(e, waiting, ECONNRESET);
            return;
        }
        pos += blen;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct lf_bound_hooks h;
    struct lf_bound_stats st;
    struct expected e;
    lf_bound b;
    lf_bound_ctx c[NCTX];
    unsigned char buf[NCTX][64 + GUARD];
    size_t cap[NCTX];
    int sv[2], strict, hook, ok = 0;
    size_t max_body;

    if (size < 2 || size > 60000) /* the whole stream fits the socket's buffer */
        return -1;
    strict = data[0] & 1;
    max_body = data[0] & 2 ? 48 : 0;
    hook = (data[0] & 4) != 0;
    for (int k = 0; k < NCTX; k++)
        cap[k] = (size_t)8 << ((data[1] >> (2 * k)) & 3);
    reference(data + 2, size - 2, strict, max_body, hook, cap, &e);

    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    {
        int sz = 1 << 18;
        (void)setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
    }
    memset(&h, 0, sizeof h);
    h.header_len = HDR;
    h.parse_header = parse;
    h.read_body = hook ? refuse_marked : NULL;
    h.max_body = max_body;
    h.flags = strict ? LF_BOUND_STRICT : 0;
    REQUIRE(lf_bound_init(&b, sv[0], &h) == 0);
    for (int k = 0; k < NCTX; k++) {
        memset(buf[k], 0xcc, sizeof buf[k]);
        REQUIRE(lf_bound_ctx_init(&c[k], buf[k], cap[k], k) == 0);
        REQUIRE(lf_bound_expect(&b, &c[k], (uint64_t)k + 1) == 0);
    }
    /* the peer's whole stream, then EOF */
    for (size_t off = 2; off < size;) {
        ssize_t w = send(sv[1], data + off, size - off, MSG_NOSIGNAL);
        REQUIRE(w > 0);
        off += (size_t)w;
    }
    REQUIRE(shutdown(sv[1], SHUT_WR) == 0);

    for (int k = 0; k < NCTX; k++) {
        struct timespec dl;
        int rc;
        REQUIRE(lf_deadline_in(&dl, 5000000000LL) == 0); /* never needed: EOF comes */
        rc = lf_bound_join(&b, &c[k], &dl);
        if (rc != e.want[k]) {
            fprintf(stderr, "context %d: join says %d, the reference %d\n", k + 1, rc,
                    e.want[k]);
            abort();
        }
        if (rc == EMSGSIZE)
            REQUIRE(c[k].len == e.len[k]); /* the size it would need */
        if (rc == 0) {
            REQUIRE(c[k].len == e.len[k]);
            REQUIRE(e.len[k] == 0 || memcmp(buf[k], e.body[k], e.len[k]) == 0);
            ok++;
        }
        for (size_t g = cap[k]; g < sizeof buf[k]; g++)
            REQUIRE(buf[k][g] == 0xcc); /* nothing past the cap */
        lf_bound_ctx_destroy(&c[k]);
    }
    REQUIRE(lf_bound_stats(&b, &st) == 0);
    REQUIRE(st.replies == (unsigned long long)ok);
    REQUIRE(st.own + st.handed_off == st.replies);
    REQUIRE(st.in_flight == 0);
    REQUIRE(st.timeouts == 0 && st.cancels == 0);
    REQUIRE(lf_bound_destroy(&b) == 0);
    close(sv[0]);
    close(sv[1]);
    return 0;
}
