/* bench/memc.h against a real memcached: many threads, ONE connection, every value
 * checked. test/memcached.sh starts memcached and runs this:
 *
 *   t_memcached -p PORT          8 threads x 10^4 mixed calls over one connection.
 *       Each thread has its own keys and keeps a model of them (value, length, flags,
 *       or absent): every get must return exactly what the model says, byte for
 *       byte, or ENOENT after a delete. All threads also write and read a few shared
 *       keys whose values describe themselves (key, writer, sequence, a checksum of
 *       every byte): a get must return a whole value written for that key. Lengths
 *       go from 1 byte to 3 KiB, so replies straddle reads and the receive buffer.
 *       Also: a value longer than the buffer is EMSGSIZE with its length and the
 *       connection goes on; memcached's "too large" is E2BIG; a 251-byte key is
 *       EINVAL; no reply goes astray (the bound's counts).
 *   t_memcached -p PORT -k PID   8 threads make calls without deadlines until
 *       memcached (PID) is killed with SIGKILL mid-run: every thread wakes with the
 *       documented error (ECONNRESET, or EPIPE for a send that found the connection
 *       broken) and a later call fails the same way at once. A thread that never
 *       wakes trips the watchdog.
 *   t_memcached -f               against a fake server on loopback: a reply that does
 *       not answer its request (a value in a set's reply, extras and key longer than
 *       the body, another opcode) fails that call with EPROTO and the next call
 *       works; a body length that wraps 32 bits, one over the limit, or a bad magic
 *       fails the connection with EPROTO for every later call. */
#include "../bench/memc.h"
#include "lf_test.h"

#include <signal.h>
#include <stdint.h>

#define THREADS 8
#define OWN_KEYS 32
#define SHARED_KEYS 8
#define BIG 3000

static memc M;
static long long ops;

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
}

/* ------------------------------------------------------------------ values */

/* Own keys: the value of version ver of key j of thread t, all derived from them. */
static size_t own_len(int t, int j, unsigned ver)
{
    uint64_t h = mix((uint64_t)t << 40 | (uint64_t)j << 32 | ver);
    return h % 50 == 0 ? BIG : 1 + (size_t)(h % 300);
}

static void own_fill(unsigned char *v, size_t len, int t, int j, unsigned ver)
{
    uint64_t h = mix((uint64_t)t << 40 | (uint64_t)j << 32 | ver);
    for (size_t i = 0; i < len; i++)
        v[i] = (unsigned char)(h + i * 131u);
}

/* Shared keys: 16 bytes saying what the value is (key, writer, sequence, length,
 * checksum), then bytes derived from them. */
static size_t shared_make(unsigned char *v, int key, int writer, unsigned seq)
{
    size_t len = 16 + (size_t)(mix((uint64_t)writer << 32 | seq) % 200);
    uint32_t sum = 0;
    for (size_t i = 16; i < len; i++) {
        v[i] = (unsigned char)(writer * 7 + seq * 13 + i);
        sum = sum * 31 + v[i];
    }
    memc_put32(v, (uint32_t)key);
    memc_put32(v + 4, (uint32_t)writer << 24 | seq);
    memc_put32(v + 8, (uint32_t)len);
    memc_put32(v + 12, sum);
    return len;
}

static void shared_check(const unsigned char *v, size_t len, int key, uint32_t flags)
{
    uint32_t sum = 0, ws = memc_get32(v + 4);
    CHECK(len >= 16);
    CHECK_EQ(memc_get32(v), key);      /* a value written for this key */
    CHECK_EQ(memc_get32(v + 8), len);  /* whole */
    CHECK_EQ(flags, ws);               /* with its own flags */
    for (size_t i = 16; i < len; i++) {
        CHECK_EQ(v[i], (unsigned char)((ws >> 24) * 7 + (ws & 0xffffff) * 13 + i));
        sum = sum * 31 + v[i];
    }
    CHECK_EQ(sum, memc_get32(v + 12));
}

/* ------------------------------------------------------------------ part 1 */

static LFT_ATOMIC(long long) n_get, n_hit, n_set, n_del, n_small;

static void *client(void *arg)
{
    int t = (int)(long)arg;
    unsigned ver[OWN_KEYS] = {0}; /* 0: absent; else the version stored */
    unsigned seq = 0;
    unsigned long long rnd = mix((uint64_t)t + 1);
    unsigned char v[BIG], got[BIG];
    char key[64];

    for (int j = 0; j < OWN_KEYS; j++) { /* from a known state: absent */
        int rc;
        snprintf(key, sizeof key, "own:%d:%d", t, j);
        rc = memc_delete(&M, key, NULL);
        CHECK(rc == 0 || rc == ENOENT);
    }
    for (long long i = 0; i < ops; i++) {
        unsigned r = (unsigned)(lft_rand(&rnd) % 100);
        int j = (int)(lft_rand(&rnd) % OWN_KEYS), rc;
        size_t len = 0;
        uint32_t flags = 0;
        snprintf(key, sizeof key, "own:%d:%d", t, j);
        if (r < 45) {
            rc = memc_get(&M, key, got, sizeof got, &len, &flags, NULL);
            lft_add(&n_get, 1);
            if (ver[j] == 0) {
                CHECK_EQ(rc, ENOENT);
            } else {
                size_t want = own_len(t, j, ver[j]);
                CHECK_EQ(rc, 0);
                CHECK_EQ(len, want);
                CHECK_EQ(flags, ver[j]);
                own_fill(v, want, t, j, ver[j]);
                CHECK(memcmp(v, got, want) == 0);
                lft_add(&n_hit, 1);
                if (want > 8 && i % 97 == 0) { /* too long for the buffer: told so */
                    rc = memc_get(&M, key, got, 8, &len, NULL, NULL);
                    CHECK_EQ(rc, EMSGSIZE);
                    CHECK_EQ(len, want);
                    lft_add(&n_small, 1);
                }
            }
        } else if (r < 75) {
            unsigned nv = ver[j] + 1 + (unsigned)(lft_rand(&rnd) % 3);
            len = own_len(t, j, nv);
            own_fill(v, len, t, j, nv);
            CHECK_EQ(memc_set(&M, key, v, len, nv, 0, NULL), 0);
            ver[j] = nv;
            lft_add(&n_set, 1);
        } else if (r < 80) {
            CHECK_EQ(memc_delete(&M, key, NULL), ver[j] ? 0 : ENOENT);
            ver[j] = 0;
            lft_add(&n_del, 1);
        } else {
            int k = (int)(lft_rand(&rnd) % SHARED_KEYS);
            snprintf(key, sizeof key, "shared:%d", k);
            if (r < 92) {
                CHECK_EQ(memc_get(&M, key, got, sizeof got, &len, &flags, NULL), 0);
                shared_check(got, len, k, flags);
                lft_add(&n_get, 1);
                lft_add(&n_hit, 1);
            } else {
                seq = (seq + 1) & 0xffffff;
                len = shared_make(v, k, t, seq);
                CHECK_EQ(memc_set(&M, key, v, len, (uint32_t)t << 24 | seq, 0, NULL), 0);
                lft_add(&n_set, 1);
            }
        }
        lft_progress();
    }
    return NULL;
}

static void mixed(int port)
{
    pthread_t th[THREADS];
    struct memc_stats ms;
    struct lf_bound_stats s;
    unsigned char v[256];
    char key[300];
    size_t len = 0;
    long long calls;
    double t0;
    int rc;

    CHECK_EQ(memc_open(&M, "127.0.0.1", port), 0);
    for (int k = 0; k < SHARED_KEYS; k++) { /* every shared key holds a value */
        snprintf(key, sizeof key, "shared:%d", k);
        len = shared_make(v, k, 99, 0);
        CHECK_EQ(memc_set(&M, key, v, len, 99u << 24, 0, NULL), 0);
    }
    /* the errors a caller can meet on a healthy connection */
    memset(key, 'k', 251);
    key[251] = '\0';
    CHECK_EQ(memc_get(&M, key, v, sizeof v, &len, NULL, NULL), EINVAL); /* ours */
    {
        size_t big = MEMC_MAX_VALUE; /* over memcached's item limit with its overhead */
        unsigned char *huge = (unsigned char *)calloc(1, big);
        CHECK(huge != NULL);
        rc = memc_set(&M, "too-big", huge, big, 0, 0, NULL);
        free(huge);
        CHECK_EQ(rc, E2BIG);
        CHECK_EQ(memc_last_status(), 0x0003);
    }
    CHECK_EQ(memc_get(&M, "never-set", v, sizeof v, &len, NULL, NULL), ENOENT);
    CHECK_EQ(memc_delete(&M, "never-set", NULL), ENOENT);

    t0 = lft_now();
    for (long i = 0; i < THREADS; i++)
        CHECK(pthread_create(&th[i], NULL, client, (void *)i) == 0);
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_join(th[i], NULL) == 0);
    CHECK_EQ(memc_stats(&M, &ms), 0);
    s = ms.bound;
    /* every call sent had exactly one reply, each to its own caller: the EMSGSIZE
     * ones refused by read_body, the rest delivered (the 251-byte key is not sent) */
    calls = lft_load(&n_get) + lft_load(&n_set) + lft_load(&n_del) + (long long)THREADS * OWN_KEYS +
            SHARED_KEYS + 3;
    CHECK_EQ(s.replies, calls);
    CHECK_EQ(s.refused, lft_load(&n_small));
    CHECK_EQ(s.stray, 0);
    CHECK_EQ(s.failed, 0);
    CHECK_EQ(s.in_flight, 0);
    printf("t_memcached: %d threads x %lld calls over 1 connection in %.1f s: %lld gets "
           "(%lld hits, every value checked), %lld sets, %lld deletes, %lld EMSGSIZE; "
           "%llu replies handed off, %llu read by their own waiter, 0 stray\n",
           THREADS, ops, lft_now() - t0, lft_load(&n_get), lft_load(&n_hit), lft_load(&n_set),
           lft_load(&n_del), lft_load(&n_small), s.handed_off, s.own);
    CHECK_EQ(memc_close(&M), 0);
}

/* ------------------------------------------------------------------ part 2 */

static LFT_ATOMIC(long long) done_ok;
static LFT_ATOMIC(int) woke_reset, woke_pipe;
static double t_kill, last_woke;
static pthread_mutex_t woke_lock = PTHREAD_MUTEX_INITIALIZER;

static void *victim(void *arg)
{
    int t = (int)(long)arg, rc, again;
    char key[32];
    unsigned char v[64], got[64];
    size_t len;
    snprintf(key, sizeof key, "victim:%d", t);
    memset(v, t, sizeof v);
    for (unsigned i = 0;; i++) {
        /* no deadline: only the connection's end can wake this call */
        rc = (i & 1) ? memc_get(&M, key, got, sizeof got, &len, NULL, NULL)
                     : memc_set(&M, key, v, sizeof v, 0, 0, NULL);
        if (rc != 0)
            break;
        lft_add(&done_ok, 1);
        lft_progress();
    }
    pthread_mutex_lock(&woke_lock);
    if (lft_now() > last_woke)
        last_woke = lft_now();
    pthread_mutex_unlock(&woke_lock);
    if (rc != ECONNRESET && rc != EPIPE)
        fprintf(stderr, "victim %d: woke with %d (%s)\n", t, rc, memc_strerror(rc));
    CHECK(rc == ECONNRESET || rc == EPIPE);
    lft_add(rc == ECONNRESET ? &woke_reset : &woke_pipe, 1);
    /* and the connection stays dead: a later call fails at once, the same way */
    again = memc_get(&M, key, got, sizeof got, &len, NULL, NULL);
    CHECK(again == ECONNRESET || again == EPIPE);
    return NULL;
}

static void killed(int port, pid_t pid)
{
    pthread_t th[THREADS];
    struct memc_stats ms;
    struct lf_bound_stats s;
    unsigned in_flight;

    CHECK_EQ(memc_open(&M, "127.0.0.1", port), 0);
    for (long i = 0; i < THREADS; i++)
        CHECK(pthread_create(&th[i], NULL, victim, (void *)i) == 0);
    AWAIT(lft_load(&done_ok) >= 2000, "2,000 calls done before the kill");
    CHECK_EQ(memc_stats(&M, &ms), 0);
    s = ms.bound;
    in_flight = s.in_flight;
    t_kill = lft_now();
    CHECK(kill(pid, SIGKILL) == 0);
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_join(th[i], NULL) == 0); /* a thread that never wakes: watchdog */
    CHECK_EQ(memc_stats(&M, &ms), 0);
    s = ms.bound;
    CHECK(s.failed == ECONNRESET || s.send_failed == EPIPE);
    CHECK_EQ(s.in_flight, 0);
    CHECK_EQ(lft_load(&woke_reset) + lft_load(&woke_pipe), THREADS);
    CHECK(last_woke - t_kill < 5.0);
    printf("t_memcached: memcached killed after %lld calls, %u in flight: all %d threads "
           "woke (%d ECONNRESET, %d EPIPE), the last %.1f ms after the kill\n",
           lft_load(&done_ok), in_flight, THREADS, lft_load(&woke_reset), lft_load(&woke_pipe),
           (last_woke - t_kill) * 1000.0);
    CHECK_EQ(memc_close(&M), 0);
}

/* ------------------------------------------------------------------ part 3 */

/* A fake memcached on loopback that answers each request as its key says: "ok" a
 * good value, the others a malformed reply of one kind. One connection at a time. */
static int fake_fd;
#define BIGVAL 1500000

static int read_full(int fd, unsigned char *p, size_t n)
{
    while (n > 0) {
        ssize_t r = read(fd, p, n);
        if (r <= 0)
            return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

static void fake_reply(int fd, const unsigned char *req, unsigned opcode, unsigned klen,
                       unsigned elen, uint32_t total, unsigned char magic, const void *body,
                       size_t blen)
{
    unsigned char out[MEMC_HDR + 64];
    memset(out, 0, MEMC_HDR);
    out[0] = magic;
    out[1] = (unsigned char)opcode;
    memc_put16(out + 2, klen);
    out[4] = (unsigned char)elen;
    memc_put32(out + 8, total);
    memcpy(out + 12, req + 12, 4); /* the request's opaque */
    CHECK(blen <= 64);
    if (blen)
        memcpy(out + MEMC_HDR, body, blen);
    CHECK(write(fd, out, MEMC_HDR + blen) == (ssize_t)(MEMC_HDR + blen));
}

static void *fake_server(void *arg)
{
    int conns = (int)(intptr_t)arg;
    for (int c = 0; c < conns; c++) {
        int fd = accept(fake_fd, NULL, NULL), one = 1;
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); /* byte writes stay apart */
        unsigned char req[MEMC_HDR + 600], *body = req + MEMC_HDR;
        CHECK(fd >= 0);
        while (read_full(fd, req, MEMC_HDR) == 0) {
            uint32_t total = memc_get32(req + 8);
            unsigned klen = memc_get16(req + 2), elen = req[4], op = req[1];
            char key[300];
            CHECK(total <= 600 && read_full(fd, body, total) == 0);
            memcpy(key, body + elen, klen);
            key[klen] = '\0';
            if (strcmp(key, "ok") == 0) { /* flags 7, value "hello" */
                static const unsigned char v[] = {0, 0, 0, 7, 'h', 'e', 'l', 'l', 'o'};
                fake_reply(fd, req, op, 0, 4, sizeof v, MEMC_RESPONSE, v, sizeof v);
            } else if (strcmp(key, "okslow") == 0) {
                /* "ok" a byte at a time: the flags and the value reach read_body split
                 * (the header comes whole: the frame hook waits for all 24 bytes) */
                static const unsigned char v[] = {0, 0, 0, 7, 'h', 'e', 'l', 'l', 'o'};
                unsigned char out[MEMC_HDR + sizeof v];
                memset(out, 0, MEMC_HDR);
                out[0] = MEMC_RESPONSE;
                out[1] = (unsigned char)op;
                out[4] = 4;
                memc_put32(out + 8, sizeof v);
                memcpy(out + 12, req + 12, 4);
                memcpy(out + MEMC_HDR, v, sizeof v);
                for (size_t i = 0; i < sizeof out; i++) { /* each its own segment */
                    CHECK(write(fd, out + i, 1) == 1);
                    lft_sleep_ms(1);
                }
            } else if (strcmp(key, "setval") == 0) { /* a value in a set's reply */
                fake_reply(fd, req, op, 0, 0, 3, MEMC_RESPONSE, "xyz", 3);
            } else if (strcmp(key, "short") == 0) { /* extras + key > the body */
                fake_reply(fd, req, op, 10, 4, 5, MEMC_RESPONSE, "abcde", 5);
            } else if (strcmp(key, "opcode") == 0) { /* the answer to another request */
                fake_reply(fd, req, MEMC_OP_DELETE, 0, 0, 0, MEMC_RESPONSE, NULL, 0);
            } else if (strcmp(key, "opvalue") == 0) { /* the same, with a value */
                static const unsigned char v[] = {0, 0, 0, 7, 'w', 'r', 'o', 'n', 'g'};
                fake_reply(fd, req, MEMC_OP_SET, 0, 4, sizeof v, MEMC_RESPONSE, v, sizeof v);
            } else if (strcmp(key, "hdronly") == 0) { /* extras claimed, body empty */
                fake_reply(fd, req, op, 0, 4, 0, MEMC_RESPONSE, NULL, 0);
            } else if (strcmp(key, "status86") == 0) { /* an error status, with text */
                unsigned char out[MEMC_HDR + 4];
                memset(out, 0, sizeof out);
                out[0] = MEMC_RESPONSE;
                out[1] = (unsigned char)op;
                memc_put16(out + 6, 0x86);
                memc_put32(out + 8, 4);
                memcpy(out + 12, req + 12, 4);
                static const unsigned char text[] = {'b', 'u', 's', 'y'}; /* no NUL */
                memcpy(out + MEMC_HDR, text, sizeof text);
                CHECK(write(fd, out, sizeof out) == (ssize_t)sizeof out);
            } else if (strcmp(key, "bigval") == 0) { /* a value over 1 MiB (-I 2m) */
                static unsigned char big[BIGVAL + 4];
                size_t at = 0;
                big[3] = 9; /* flags */
                fake_reply(fd, req, op, 0, 4, sizeof big, MEMC_RESPONSE, NULL, 0);
                while (at < sizeof big) {
                    ssize_t w = write(fd, big + at, sizeof big - at);
                    CHECK(w > 0);
                    at += (size_t)w;
                }
            } else if (strcmp(key, "wrap") == 0) { /* 23 + total wraps 32 bits to 0 */
                fake_reply(fd, req, op, 0, 0, 0xffffffe9u, MEMC_RESPONSE, NULL, 0);
            } else if (strcmp(key, "huge") == 0) { /* over max_body */
                fake_reply(fd, req, op, 0, 0, 0x7fffffffu, MEMC_RESPONSE, NULL, 0);
            } else { /* "magic": not a response at all */
                fake_reply(fd, req, op, 0, 0, 0, 0x42, NULL, 0);
            }
        }
        close(fd);
    }
    return NULL;
}

/* The RESULTS table's EPROTO cases: a reply that does not answer its request fails
 * that call and the connection goes on; a stream that is not memcached's ends it. */
static void malformed(void)
{
    static const char *const fatal[] = {"wrap", "huge", "magic"};
    struct sockaddr_in a;
    socklen_t alen = sizeof a;
    struct memc_stats ms;
    struct lf_bound_stats s;
    unsigned char v[64];
    char key[300];
    size_t len;
    uint32_t flags;
    pthread_t th;
    int one = 1;

    CHECK((fake_fd = socket(AF_INET, SOCK_STREAM, 0)) >= 0);
    (void)setsockopt(fake_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(bind(fake_fd, (struct sockaddr *)&a, sizeof a) == 0);
    CHECK(listen(fake_fd, 4) == 0);
    CHECK(getsockname(fake_fd, (struct sockaddr *)&a, &alen) == 0);
    CHECK(pthread_create(&th, NULL, fake_server, (void *)(intptr_t)3) == 0);

    for (int c = 0; c < 3; c++) {
        CHECK_EQ(memc_open(&M, "127.0.0.1", ntohs(a.sin_port)), 0);
        CHECK_EQ(memc_get(&M, "ok", v, sizeof v, &len, &flags, NULL), 0);
        CHECK(len == 5 && memcmp(v, "hello", 5) == 0 && flags == 7);
        if (c == 0) { /* the survivable ones, each followed by a good call */
            CHECK_EQ(memc_get(&M, "okslow", v, sizeof v, &len, &flags, NULL), 0);
            CHECK(len == 5 && memcmp(v, "hello", 5) == 0 && flags == 7);
            CHECK_EQ(memc_set(&M, "setval", "v", 1, 0, 0, NULL), EPROTO);
            CHECK_EQ(memc_get(&M, "ok", v, sizeof v, &len, &flags, NULL), 0);
            CHECK_EQ(memc_get(&M, "short", v, sizeof v, &len, &flags, NULL), EPROTO);
            CHECK_EQ(memc_get(&M, "ok", v, sizeof v, &len, &flags, NULL), 0);
            CHECK_EQ(memc_get(&M, "opcode", v, sizeof v, &len, &flags, NULL), EPROTO);
            memset(v, 'c', sizeof v); /* a canary: a reply to another request leaves it */
            CHECK_EQ(memc_get(&M, "opvalue", v, sizeof v, &len, &flags, NULL), EPROTO);
            CHECK(v[0] == 'c' && v[4] == 'c');
            CHECK_EQ(memc_get(&M, "opvalue", v, 2, &len, &flags, NULL), EPROTO);
            CHECK_EQ(memc_get(&M, "hdronly", v, sizeof v, &len, &flags, NULL), EPROTO);
            CHECK_EQ(memc_get(&M, "ok", v, 2, &len, &flags, NULL), EMSGSIZE);
            CHECK_EQ(len, 5);
            /* a value longer than memcached's default item limit: EMSGSIZE, its length */
            CHECK_EQ(memc_get(&M, "bigval", v, sizeof v, &len, &flags, NULL), EMSGSIZE);
            CHECK_EQ(len, BIGVAL);
            {
                unsigned char *b = (unsigned char *)malloc(BIGVAL);
                CHECK(b != NULL);
                CHECK_EQ(memc_get(&M, "bigval", b, BIGVAL, &len, &flags, NULL), 0);
                CHECK(len == BIGVAL && flags == 9 && b[0] == 0 && b[BIGVAL - 1] == 0);
                free(b);
            }
            /* the status of the last reply, and 0 after a call that sent nothing */
            CHECK_EQ(memc_get(&M, "status86", v, sizeof v, &len, &flags, NULL), EIO);
            CHECK_EQ(memc_last_status(), 0x86);
            memset(key, 'k', 251);
            key[251] = '\0';
            CHECK_EQ(memc_get(&M, key, v, sizeof v, &len, &flags, NULL), EINVAL);
            CHECK_EQ(memc_last_status(), 0);
            CHECK_EQ(memc_get(&M, "ok", v, sizeof v, &len, &flags, NULL), 0);
            CHECK(len == 5 && memcmp(v, "hello", 5) == 0 && flags == 7);
        }
        /* the fatal one, then the connection is dead for every later call */
        CHECK_EQ(memc_get(&M, fatal[c], v, sizeof v, &len, &flags, NULL), EPROTO);
        CHECK_EQ(memc_get(&M, "ok", v, sizeof v, &len, &flags, NULL), EPROTO);
        CHECK_EQ(memc_delete(&M, "ok", NULL), EPROTO);
        CHECK_EQ(memc_stats(&M, &ms), 0);
        s = ms.bound;
        CHECK_EQ(s.stray, 0);
        CHECK_EQ(memc_close(&M), 0);
    }
    CHECK(pthread_join(th, NULL) == 0);
    close(fake_fd);
    printf("t_memcached: malformed replies: set with a value, extras+key over the body, "
           "another opcode: EPROTO and the connection goes on; a 32-bit-wrapping body "
           "length, one over MEMC_MAX_BODY, a bad magic: EPROTO and the connection is "
           "dead; a 1.5 MB value: EMSGSIZE, then read whole\n");
}

int main(int argc, char **argv)
{
    long port = 0, pid = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "-p") == 0)
            port = strtol(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "-k") == 0)
            pid = strtol(argv[i + 1], NULL, 10);
    }
    if (argc == 2 && strcmp(argv[1], "-f") == 0) {
        lft_start("t_memcached", 10);
        malformed();
        lft_pass();
        return 0;
    }
    if (port <= 0 || port > 65535) {
        fprintf(stderr, "usage: t_memcached -p PORT [-k MEMCACHED_PID] | -f\n");
        return 2;
    }
    lft_start("t_memcached", 10);
    ops = lft_scaled(10000);
    if (pid > 0)
        killed((int)port, (pid_t)pid);
    else
        mixed((int)port);
    lft_pass();
    return 0;
}
