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
 *       fails the connection with EPROTO for every later call.
 *   t_memcached -p PORT -r FILE  reconnect under load: 8 threads of mixed calls, each
 *       value checked against a model of what the contract allows; when FILE
 *       appears (the test makes it mid-run), test/memcached.sh kills memcached
 *       (SIGKILL) and starts a new, empty one on the same port. The threads meet
 *       connection errors, call memc_reconnect (one connection is made for all),
 *       and go on to completion with every value on the new memcached checked; the
 *       old connection is closed by its last call, no descriptor is left behind.
 *   t_memcached -p PORT -H FILE  the same through memc_attach: the calls are made by
 *       handlers of a reactor with 2 lf_reactor_run threads, which reconnect from
 *       the handlers; a call's wait serves another handler (lf_bound_depth 1) on the
 *       first connection and on the one memc_reconnect made. A second memc, idle
 *       through the kill with memc_set_nest_max(0), is reconnected afterwards: the
 *       limit came with the new connection (its calls wait deep, lf_bound_stats).
 *       Then asynchronous calls on the reconnected memc: handlers start sets and gets
 *       of their own keys (memc_set_start, memc_get_start) and take each result on
 *       LF_EV_NOTIFY (memc_finish: the value they set, byte for byte); a get aborted
 *       at once ends ECANCELED (or with its value, if the reply won); misuse says
 *       EINVAL; nothing is left in flight (memc_close succeeds).
 *   t_memcached -c               memc_open_until's results (ECONNREFUSED, ETIMEDOUT
 *       from a listener whose queue is full, a non-routable address, EINVAL), and a
 *       connection's life against a fake memcached in the test: reconnect (also 8
 *       threads at once, while the connect hangs: one connection), automatic mode,
 *       shutdown (also of a connect under way), close with a call in flight, and
 *       pthread_cancel in a call, in a connect, in a wait for another's connect. */
#define LF_BOUND_REACTOR 1 /* lf_reactor.h too: memc_attach (the hybrid part) */
#include "../bench/memc.h"
#include "lf_test.h"
#include "lft_client.h"

#include <stdint.h>
#include <sys/eventfd.h>

#define THREADS 8
#define OWN_KEYS 32
#define SHARED_KEYS 8
#define BIG 3000

static memc M;
static long long ops;

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

/* (the shared keys' values, which describe themselves: lft_client.h's shared_make
 * and shared_check) */

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
                CHECK_EQ(flags, shared_check(got, len, k)); /* with its own flags */
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
    victim_woke(t, rc, memc_strerror(rc));
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
    victims_kill(pid);
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_join(th[i], NULL) == 0); /* a thread that never wakes: watchdog */
    CHECK_EQ(memc_stats(&M, &ms), 0);
    s = ms.bound;
    CHECK(s.failed == ECONNRESET || s.send_failed == EPIPE);
    CHECK_EQ(s.in_flight, 0);
    victims_all_woke("t_memcached", "memcached", THREADS, in_flight);
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

/* ------------------------------------------------------------------ helpers */

/* Reconnect until a new connection is in place: memcached is restarted by the script
 * a moment after the kill; until then ECONNREFUSED (or the connect's deadline). A
 * restart that never comes trips the watchdog (no progress here). */
static void reconnect_until_up(void)
{
    for (;;) {
        struct timespec d = in_ms(500);
        int rc = memc_reconnect(&M, &d);
        if (rc == 0)
            return;
        if (rc != ECONNREFUSED && rc != ETIMEDOUT)
            fprintf(stderr, "memc_reconnect: %d (%s)\n", rc, memc_strerror(rc));
        CHECK(rc == ECONNREFUSED || rc == ETIMEDOUT);
        lft_sleep_ms(10);
    }
}

/* ------------------------------------------------------------------ the model
 * What a get of one of a thread's own keys may find when memcached may be killed and
 * restarted (empty) under the calls: the versions it may hold (0: absent). Every set
 * writes a new version (the value's flags say which, its bytes derive from it). */
#define MAYBE 16
struct model {
    unsigned v[MAYBE]; /* v[0]: what a live memcached holds if it never died */
    int n;
};

static int model_has(const struct model *k, unsigned v)
{
    for (int i = 0; i < k->n; i++)
        if (k->v[i] == v)
            return 1;
    return 0;
}

static void model_is(struct model *k, unsigned v)
{
    k->v[0] = v;
    k->n = 1;
}

static void model_may(struct model *k, unsigned v)
{
    if (!model_has(k, v)) {
        CHECK(k->n < MAYBE);
        k->v[k->n++] = v;
    }
}

/* The current connection was made after the restart (a call that starts now takes
 * it): the reconnect count went up. */
static int on_new_server(void)
{
    struct memc_stats st;
    CHECK_EQ(memc_stats(&M, &st), 0);
    return st.reconnects > 0;
}

static LFT_ATOMIC(int) kill_asked; /* set before the kill is asked for */

/* One call on key j of owner t, checked against its model; the outcomes the
 * contract allows, no others:
 *   set  0: the key holds nv from now on; if the call may have gone to the old
 *        memcached (it started before a new connection was in place), the restart
 *        may lose it (absent). A connection error: nv may or may not have been
 *        applied, and may be lost (absent).
 *   delete  0: absent. A connection error: absent, or as before.
 *   get  0: a version the model allows, byte for byte; ENOENT: absent allowed.
 *        Before the kill was asked for, the server is the first one, alive: only
 *        v[0]. On a connection made after the restart the answer is the truth
 *        from then on.
 * Returns the call's result (conn_error: the caller reconnects); *began_after: the
 * call took a connection memc_reconnect made. */
static int model_call(struct model *k, const char *key, int t, int j, unsigned *ver,
                      unsigned r, long long *after_ok, int *began_after)
{
    unsigned char v[BIG], got[BIG];
    size_t len = 0;
    uint32_t flags = 0;
    int after = on_new_server(), killed = lft_load(&kill_asked), rc;

    *began_after = after;

    if (r < 50) {
        rc = memc_get(&M, key, got, sizeof got, &len, &flags, NULL);
        if (conn_error(rc)) {
            CHECK(lft_load(&kill_asked)); /* (asked for during the call, maybe) */
            return rc;
        }
        if (rc == 0) {
            CHECK(flags != 0);
            CHECK(killed ? model_has(k, flags) : k->v[0] == flags);
            CHECK_EQ(len, own_len(t, j, flags));
            own_fill(v, len, t, j, flags);
            CHECK(memcmp(v, got, len) == 0);
        } else {
            CHECK_EQ(rc, ENOENT);
            CHECK(killed ? model_has(k, 0) : k->v[0] == 0);
            flags = 0;
        }
        if (after)
            model_is(k, flags);
    } else if (r < 90) {
        unsigned nv = ++*ver;
        len = own_len(t, j, nv);
        own_fill(v, len, t, j, nv);
        rc = memc_set(&M, key, v, len, nv, 0, NULL);
        if (conn_error(rc)) {
            CHECK(lft_load(&kill_asked));
            model_may(k, nv);
            model_may(k, 0);
            return rc;
        }
        CHECK_EQ(rc, 0);
        model_is(k, nv);
        if (!after)
            model_may(k, 0);
    } else {
        rc = memc_delete(&M, key, NULL);
        if (conn_error(rc)) {
            CHECK(lft_load(&kill_asked));
            model_may(k, 0);
            return rc;
        }
        CHECK(rc == 0 || rc == ENOENT);
        CHECK(rc == 0 || model_has(k, 0));
        model_is(k, 0);
    }
    if (after)
        (*after_ok)++;
    return 0;
}

/* ------------------------------------------------------------------ reconnect under load */

#define RKEYS 16
#define AFTER_MIN 300 /* calls each thread completes on the new memcached */
static LFT_ATOMIC(long long) r_ok, r_errors, r_after, r_new_died;

static void *reloader(void *arg)
{
    int t = (int)(long)arg;
    struct model k[RKEYS];
    unsigned ver = 0;
    unsigned long long rnd = mix((uint64_t)t + 77);
    long long after_ok = 0;
    char key[64];
    int after;

    for (int j = 0; j < RKEYS; j++) { /* from a known state: absent (first memcached) */
        int rc;
        snprintf(key, sizeof key, "re:%d:%d", t, j);
        rc = memc_delete(&M, key, NULL);
        CHECK(rc == 0 || rc == ENOENT);
        model_is(&k[j], 0);
    }
    for (long long i = 0; i < ops || after_ok < AFTER_MIN; i++) {
        unsigned r = (unsigned)(lft_rand(&rnd) % 100);
        int j = (int)(lft_rand(&rnd) % RKEYS), rc;
        snprintf(key, sizeof key, "re:%d:%d", t, j);
        rc = model_call(&k[j], key, t, j, &ver, r, &after_ok, &after);
        if (rc != 0) {
            lft_add(after ? &r_new_died : &r_errors, 1);
            reconnect_until_up();
            continue;
        }
        lft_add(&r_ok, 1);
        lft_progress();
    }
    lft_add(&r_after, after_ok);
    return NULL;
}

/* 8 threads, mixed calls with every value checked against the model; memcached is
 * killed (SIGKILL) and restarted on the same port by test/memcached.sh when killfile
 * appears. Every thread meets the failure or not, reconnects (many at once: one new
 * connection), carries on, and completes AFTER_MIN calls on the new memcached. At the
 * end one connection was made per dead one: one, or more only if a connection made
 * by memc_reconnect died too (a reconnect made at once can land in the dying
 * memcached's accept queue, which resets it a moment later: seen here); the old ones
 * are closed (their descriptors too), and memc_close leaves the process's descriptors
 * as they were. */
static void reconnect_load(int port, const char *killfile)
{
    pthread_t th[THREADS];
    struct memc_stats st;
    int fds0 = count_fds(), fds1;

    CHECK_EQ(memc_open(&M, "127.0.0.1", port), 0);
    fds1 = count_fds();
    for (long i = 0; i < THREADS; i++)
        CHECK(pthread_create(&th[i], NULL, reloader, (void *)i) == 0);
    AWAIT(lft_load(&r_ok) >= (long long)THREADS * ops / 4, "a quarter of the calls");
    lft_store(&kill_asked, 1);
    touch(killfile); /* the script kills memcached now, and starts a new one */
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_join(th[i], NULL) == 0);
    CHECK_EQ(memc_stats(&M, &st), 0);
    /* one new connection for each dead one, however many threads asked for it: the
     * first one's, and one per failure of a connection memc_reconnect made */
    CHECK(st.reconnects >= 1);
    CHECK(st.reconnects <= 1 + (unsigned long long)lft_load(&r_new_died));
    CHECK_EQ(st.conns, 1);      /* the old ones went with their last calls */
    CHECK_EQ(st.calls, 0);
    CHECK_EQ(st.bound.failed, 0);
    CHECK_EQ(count_fds(), fds1); /* ... and its socket and wake-up descriptor with it */
    printf("t_memcached: memcached killed and restarted under %d threads: %lld calls "
           "checked, %lld connection errors met (%lld on a new connection), %llu "
           "connection(s) made, %lld calls on the new memcached; old connections closed "
           "by their last calls\n",
           THREADS, lft_load(&r_ok), lft_load(&r_errors) + lft_load(&r_new_died),
           lft_load(&r_new_died), st.reconnects, lft_load(&r_after));
    CHECK_EQ(memc_close(&M), 0);
    CHECK_EQ(count_fds(), fds0);
}

/* ------------------------------------------------------------------ hybrid */

#define WORKERS 4
#define HKEYS 8
#define BATCH 8

static lf_reactor R;
static LFT_ATOMIC(int) h_done;
static LFT_ATOMIC(long long) h_ok, h_errors, h_after, h_reconnects, h_new_died;

struct hworker {
    lf_handler h;
    lf_timer retry;
    int id, efd;
    struct model k[HKEYS];
    unsigned ver;
    long long ok, after_ok;
    unsigned long long rnd;
    int dead; /* a call met a connection error: reconnect before the next one */
};

static struct hworker W[WORKERS];

static void poke(int efd)
{
    uint64_t one = 1;
    CHECK(write(efd, &one, sizeof one) == (ssize_t)sizeof one);
}

/* A worker's turn, in a reactor handler: a batch of calls through memc_attach (each
 * waits by turning the reactor, so other workers' turns run nested in it). After a
 * connection error it reconnects, from the handler; while memcached is not back it
 * tries again from a timer, 10 ms later, instead of holding the thread. */
static int worker_event(lf_handler *h, int fd, uint32_t ev)
{
    struct hworker *w = (struct hworker *)(void *)h;
    uint64_t n;
    (void)fd;
    if (ev & LF_EV_READ)
        CHECK(read(w->efd, &n, sizeof n) == (ssize_t)sizeof n);
    if (ev & LF_EV_TIMEOUT)
        (void)lf_timer_fired(&w->retry);
    if (w->dead) {
        struct timespec d = in_ms(100);
        int rc = memc_reconnect(&M, &d); /* from a handler: held up to 100 ms */
        CHECK(rc == 0 || rc == ECONNREFUSED || rc == ETIMEDOUT);
        if (rc != 0) { /* not back yet: again in 10 ms, the thread free meanwhile */
            CHECK_EQ(lf_reactor_timer_start(&R, &w->retry, &w->h, 10000000LL, 0), 0);
            return LF_KEEP;
        }
        w->dead = 0;
        lft_add(&h_reconnects, 1);
    }
    for (int b = 0; b < BATCH; b++) {
        unsigned r = (unsigned)(lft_rand(&w->rnd) % 100);
        int j = (int)(lft_rand(&w->rnd) % HKEYS), rc;
        char key[64];
        int after;
        if (w->ok >= ops && w->after_ok >= AFTER_MIN) {
            lft_add(&h_done, 1);
            return LF_KEEP; /* done: no more pokes */
        }
        snprintf(key, sizeof key, "hy:%d:%d", w->id, j);
        rc = model_call(&w->k[j], key, 100 + w->id, j, &w->ver, r, &w->after_ok, &after);
        if (rc != 0) {
            lft_add(after ? &h_new_died : &h_errors, 1);
            w->dead = 1;
            poke(w->efd); /* reconnect in the next turn */
            return LF_KEEP;
        }
        w->ok++;
        lft_add(&h_ok, 1);
        lft_progress();
    }
    poke(w->efd); /* the next batch, after everybody else's turn */
    return LF_KEEP;
}

/* The proof that a call waits by serving the reactor: both reactor threads sit in
 * X handlers (a barrier), so Y, poked meanwhile, can only run inside the wait of one
 * of their memc_get calls: at depth 1 (lf_bound_depth). With the connection not
 * attached the X calls would block, Y would never run, and X would give up. */
static pthread_barrier_t both_in_x;
static LFT_ATOMIC(int) y_ran, y_depth;
static struct xy {
    lf_handler h;
    int efd;
} X[2], Y;

static int x_event(lf_handler *h, int fd, uint32_t ev)
{
    struct xy *x = (struct xy *)(void *)h;
    unsigned char v[64];
    uint64_t n;
    size_t len;
    int calls = 0;
    (void)fd;
    (void)ev;
    CHECK(read(x->efd, &n, sizeof n) == (ssize_t)sizeof n);
    pthread_barrier_wait(&both_in_x); /* each reactor thread holds one X now */
    if (x == &X[0])
        poke(Y.efd);
    while (!lft_load(&y_ran) && calls++ < 20000) {
        int rc = memc_get(&M, "hy:probe", v, sizeof v, &len, NULL, NULL);
        CHECK(rc == 0 || rc == ENOENT);
    }
    CHECK(lft_load(&y_ran));
    pthread_barrier_wait(&both_in_x); /* neither leaves before Y ran */
    return LF_KEEP;
}

static int y_event(lf_handler *h, int fd, uint32_t ev)
{
    uint64_t n;
    (void)h;
    (void)fd;
    (void)ev;
    CHECK(read(Y.efd, &n, sizeof n) == (ssize_t)sizeof n);
    lft_store(&y_depth, lf_bound_depth());
    lft_store(&y_ran, 1);
    return LF_KEEP;
}

/* memc_set_nest_max reaches the connections memc_reconnect makes: M2 was opened with
 * M, attached, given the limit 0, and left idle while memcached was killed and
 * restarted; its connection died with the old memcached. Reconnected, calls from this
 * thread (depth 0) wait DEEP on the new connection, which at the default limit (4)
 * no call at depth 0 does; set back to the default, none does. */
static memc M2;

static unsigned long long deep_after(int calls)
{
    struct memc_stats st;
    unsigned char v[64];
    size_t len;
    for (int i = 0; i < calls; i++) {
        int rc = memc_get(&M2, "hy:probe", v, sizeof v, &len, NULL, NULL);
        CHECK(rc == 0 || rc == ENOENT);
    }
    CHECK_EQ(memc_stats(&M2, &st), 0);
    return st.bound.deep;
}

static void nest_limit_kept(void)
{
    struct memc_stats st;
    struct timespec d = in_ms(2000);
    unsigned long long deep;
    unsigned char v[64];
    size_t len;
    int rc = memc_get(&M2, "hy:probe", v, sizeof v, &len, NULL, NULL);
    CHECK(rc == ECONNRESET || rc == EPIPE); /* the old memcached's connection */
    CHECK_EQ(memc_reconnect(&M2, &d), 0);
    CHECK_EQ(memc_stats(&M2, &st), 0);
    CHECK_EQ(st.reconnects, 1);
    CHECK((deep = deep_after(50)) >= 1); /* (one of 50 replies came before its join) */
    CHECK_EQ(memc_set_nest_max(&M2, LF_BOUND_NEST_MAX), 0);
    CHECK_EQ(deep_after(50), deep);
    CHECK_EQ(memc_close(&M2), 0);
}

/* Asynchronous calls (memc_get_start, memc_set_start, memc_finish, memc_abort):
 * ASYNC handlers, each ROUNDS x (set a value of its own, get it back), started from
 * the handler and taken on LF_EV_NOTIFY, then one get aborted at once. */
#define ASYNC 4
#define AROUNDS 50
static struct aworker {
    lf_handler h;
    int efd, id, round, stage; /* stage 0: start a set; 1: set in flight; 2: get; 3: done */
    memc_op op;
    unsigned char v[64], want[64];
    size_t wlen;
} A[ASYNC];
static LFT_ATOMIC(int) a_done, a_aborted;

static void a_value(struct aworker *a)
{
    a->wlen = (size_t)snprintf((char *)a->want, sizeof a->want, "async:%d:%d", a->id, a->round);
}

static int a_event(lf_handler *h, int fd, uint32_t ev)
{
    struct aworker *a = (struct aworker *)(void *)h;
    char key[32];
    size_t len = 0;
    uint64_t n;
    int rc;
    (void)fd;
    if (ev & LF_EV_READ)
        CHECK(read(a->efd, &n, sizeof n) == (ssize_t)sizeof n);
    snprintf(key, sizeof key, "as:%d", a->id);
    if (a->stage == 1 || a->stage == 2) {
        if ((rc = memc_finish(&M, &a->op, &len, NULL)) == EINPROGRESS)
            return LF_KEEP; /* told for nothing (a notification may come for a taken call) */
        CHECK_EQ(rc, 0);
        if (a->stage == 1) { /* stored: get it back */
            CHECK_EQ(memc_get_start(&M, &a->op, key, a->v, sizeof a->v, h, NULL), 0);
            a->stage = 2;
            return LF_KEEP;
        }
        CHECK_EQ(len, a->wlen);
        CHECK(memcmp(a->v, a->want, len) == 0);
        a->round++;
        a->stage = 0;
    }
    if (a->stage == 0 && a->round == AROUNDS) { /* the last: a get, aborted at once */
        CHECK_EQ(memc_get_start(&M, &a->op, key, a->v, sizeof a->v, h, NULL), 0);
        CHECK_EQ(memc_get_start(&M, &a->op, key, a->v, sizeof a->v, h, NULL), EINVAL);
        rc = memc_abort(&M, &a->op);
        CHECK(rc == 0 || rc == ENOENT); /* ENOENT: the reply is in already */
        rc = memc_finish(&M, &a->op, &len, NULL);
        CHECK(rc == ECANCELED || (rc == 0 && len == a->wlen));
        if (rc == ECANCELED)
            lft_add(&a_aborted, 1);
        CHECK_EQ(memc_finish(&M, &a->op, &len, NULL), EINVAL); /* nothing in flight */
        CHECK_EQ(memc_abort(&M, &a->op), EINVAL);
        a->stage = 3;
        lft_add(&a_done, 1);
    } else if (a->stage == 0) {
        a_value(a);
        CHECK_EQ(memc_set_start(&M, &a->op, key, a->want, a->wlen, 0, 0, h, NULL), 0);
        a->stage = 1;
    }
    return LF_KEEP;
}

static void async_calls(void)
{
    memc_op op;
    memset(&op, 0, sizeof op);
    CHECK_EQ(memc_get_start(&M, &op, "as:x", NULL, 0, NULL, NULL), EINVAL); /* no handler */
    CHECK_EQ(memc_finish(&M, &op, NULL, NULL), EINVAL);
    for (int i = 0; i < ASYNC; i++) {
        A[i].id = i;
        CHECK((A[i].efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) >= 0);
        lf_handler_init(&A[i].h, a_event, NULL);
        CHECK_EQ(lf_reactor_register(&R, &A[i].h, A[i].efd, LF_EV_READ), 0);
    }
    for (int i = 0; i < ASYNC; i++)
        poke(A[i].efd);
    AWAIT(lft_load(&a_done) == ASYNC, "every asynchronous worker's last call");
}

static void served_while_waiting(void)
{
    lft_store(&y_ran, 0);
    lft_store(&y_depth, 0);
    poke(X[0].efd);
    poke(X[1].efd);
    AWAIT(lft_load(&y_ran), "Y to run inside an X's call");
    CHECK(lft_load(&y_depth) >= 1);
}

static void *run_reactor(void *arg)
{
    (void)arg;
    CHECK_EQ(lf_reactor_run(&R, NULL), ECANCELED);
    return NULL;
}

static void xy_up(struct xy *x, int (*fn)(lf_handler *, int, uint32_t))
{
    CHECK((x->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) >= 0);
    lf_handler_init(&x->h, fn, NULL);
    CHECK_EQ(lf_reactor_register(&R, &x->h, x->efd, LF_EV_READ), 0);
}

/* A reactor with 2 lf_reactor_run threads whose handlers make the calls, through
 * memc_attach; memcached killed and restarted mid-run (killfile, as above): the
 * handlers reconnect (memc_reconnect from a handler, many at once: one connection;
 * while memcached is not back, again from a timer), the values stay checked, and the new connection is attached
 * too (the X/Y proof runs before the kill and after the restart). */
static void hybrid(int port, const char *killfile)
{
    pthread_t th[2];
    struct memc_stats st;
    int fds0 = count_fds();

    CHECK_EQ(lf_reactor_init(&R), 0);
    CHECK_EQ(memc_open(&M, "127.0.0.1", port), 0);
    CHECK_EQ(memc_attach(&M, &R), 0);
    CHECK_EQ(memc_attach(&M, &R), EBUSY);
    CHECK_EQ(memc_open(&M2, "127.0.0.1", port), 0); /* see nest_limit_kept */
    CHECK_EQ(memc_attach(&M2, &R), 0);
    CHECK_EQ(memc_set_nest_max(&M2, -1), EINVAL);
    CHECK_EQ(memc_set_nest_max(NULL, 0), EINVAL);
    CHECK_EQ(memc_set_nest_max(&M2, 0), 0);
    CHECK(pthread_barrier_init(&both_in_x, NULL, 2) == 0);
    xy_up(&X[0], x_event);
    xy_up(&X[1], x_event);
    xy_up(&Y, y_event);
    for (int i = 0; i < WORKERS; i++) {
        struct hworker *w = &W[i];
        w->id = i;
        w->rnd = mix((uint64_t)i + 991);
        for (int j = 0; j < HKEYS; j++) { /* from a known state: absent */
            char key[64];
            int rc;
            snprintf(key, sizeof key, "hy:%d:%d", i, j);
            rc = memc_delete(&M, key, NULL);
            CHECK(rc == 0 || rc == ENOENT);
            model_is(&w->k[j], 0);
        }
        CHECK((w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) >= 0);
        lf_handler_init(&w->h, worker_event, NULL);
        lf_timer_init(&w->retry);
        CHECK_EQ(lf_reactor_register(&R, &w->h, w->efd, LF_EV_READ), 0);
    }
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&th[i], NULL, run_reactor, NULL) == 0);
    served_while_waiting(); /* the first connection is attached */
    for (int i = 0; i < WORKERS; i++)
        poke(W[i].efd);
    AWAIT(lft_load(&h_ok) >= (long long)WORKERS * ops / 4, "a quarter of the calls");
    lft_store(&kill_asked, 1);
    touch(killfile);
    while (lft_load(&h_done) < WORKERS) { /* (the workers' progress feeds the watchdog) */
        lft_sleep_ms(10);
    }
    served_while_waiting(); /* and so is the one memc_reconnect made, in a handler */
    CHECK_EQ(memc_stats(&M, &st), 0);
    CHECK(st.reconnects >= 1); /* one per dead connection (see reconnect_load) */
    CHECK(st.reconnects <= 1 + (unsigned long long)lft_load(&h_new_died));
    CHECK_EQ(st.conns, 1);
    for (int i = 0; i < WORKERS; i++)
        lft_add(&h_after, W[i].after_ok);
    nest_limit_kept();
    async_calls();
    CHECK_EQ(lf_reactor_stop(&R), 0);
    for (int i = 0; i < 2; i++)
        CHECK(pthread_join(th[i], NULL) == 0);
    CHECK_EQ(memc_get(&M, "hy:probe", NULL, 0, NULL, NULL, NULL), ECANCELED); /* stopped */
    CHECK_EQ(memc_close(&M), 0);
    CHECK_EQ(lf_reactor_destroy(&R), 0); /* (closes the eventfds) */
    pthread_barrier_destroy(&both_in_x);
    CHECK_EQ(count_fds(), fds0);
    printf("t_memcached: hybrid, %d workers in reactor handlers on 2 threads: %lld calls "
           "checked, %lld connection errors met (%lld on a new connection), %lld "
           "memc_reconnect from handlers, %llu connection(s) made, %lld calls on the new "
           "memcached; a call's wait served another handler (depth 1) before the kill "
           "and after the restart; a nesting limit of 0 held over a reconnect; %d x %d "
           "asynchronous set and get checked, %d of %d aborted gets ended ECANCELED\n",
           WORKERS, lft_load(&h_ok), lft_load(&h_errors) + lft_load(&h_new_died),
           lft_load(&h_new_died), lft_load(&h_reconnects), st.reconnects,
           lft_load(&h_after), ASYNC, AROUNDS, lft_load(&a_aborted), ASYNC);
}

/* ------------------------------------------------------------------ connections */

/* The fake memcached for the lifecycle checks, on lft_client.h's fake server: "ok" is
 * answered (get: flags 7, "hello"), "mute" never, "bye" closes the connection. */
static int fake_memcached_request(struct fk_conn *c)
{
    unsigned char req[MEMC_HDR + 600];
    char key[300];
    uint32_t total;
    unsigned klen, elen, op;
    if (read_full(c->fd, req, MEMC_HDR) != 0 || (total = memc_get32(req + 8)) > 600 ||
        read_full(c->fd, req + MEMC_HDR, total) != 0)
        return -1;
    klen = memc_get16(req + 2);
    elen = req[4];
    op = req[1];
    memcpy(key, req + MEMC_HDR + elen, klen);
    key[klen] = '\0';
    if (strcmp(key, "bye") == 0) {
        return -1;
    } else if (strcmp(key, "mute") == 0) {
        lft_add(&fk_mutes, 1);
    } else {
        static const unsigned char v[] = {0, 0, 0, 7, 'h', 'e', 'l', 'l', 'o'};
        if (op == MEMC_OP_GET)
            fake_reply(c->fd, req, op, 0, 4, sizeof v, MEMC_RESPONSE, v, sizeof v);
        else
            fake_reply(c->fd, req, op, 0, 0, 0, MEMC_RESPONSE, NULL, 0);
    }
    return 0;
}

static void *fake_memcached(void *arg)
{
    (void)arg;
    fk_loop(fake_memcached_request);
    return NULL;
}

static void expect_ok(void)
{
    unsigned char v[16];
    size_t len = 0;
    uint32_t flags = 0;
    CHECK_EQ(memc_get(&M, "ok", v, sizeof v, &len, &flags, NULL), 0);
    CHECK(len == 5 && memcmp(v, "hello", 5) == 0 && flags == 7);
}

static void *get_mute(void *arg)
{
    unsigned char v[16];
    size_t len;
    (void)arg;
    return (void *)(intptr_t)memc_get(&M, "mute", v, sizeof v, &len, NULL, NULL);
}

static void *reconnect_forever(void *arg)
{
    (void)arg;
    return (void *)(intptr_t)memc_reconnect(&M, NULL);
}

/* Break the connection ("bye"), pause the fake server with its one backlog place
 * taken by a plain connection (so that a connect hangs), and start a thread in a
 * reconnect without deadline, which hangs there. Returns the queued socket. */
static int hang_reconnect(pthread_t *th)
{
    int queued;
    CHECK_EQ(memc_get(&M, "bye", NULL, 0, NULL, NULL, NULL), ECONNRESET);
    queued = fk_pause_full();
    CHECK(pthread_create(th, NULL, reconnect_forever, NULL) == 0);
    lft_sleep_ms(100);
    return queued;
}

static void *reconnect_5s(void *arg)
{
    struct timespec d = in_ms(5000);
    (void)arg;
    return (void *)(intptr_t)memc_reconnect(&M, &d);
}

static void *open_forever(void *arg)
{
    memc m;
    int rc = memc_open_until(&m, "127.0.0.1", *(int *)arg, NULL);
    if (rc == 0)
        memc_close(&m);
    return (void *)(intptr_t)rc;
}

static pthread_barrier_t eight;

static void *reconnect_together(void *arg)
{
    struct timespec d = in_ms(5000);
    (void)arg;
    pthread_barrier_wait(&eight);
    return (void *)(intptr_t)memc_reconnect(&M, &d);
}

/* the calls hold the connection (memc_stats), and wait in the bound */
static int calls_in(unsigned n)
{
    struct memc_stats st;
    CHECK_EQ(memc_stats(&M, &st), 0);
    return st.calls == n && st.bound.in_flight == n;
}

static unsigned reconnects(void)
{
    struct memc_stats st;
    CHECK_EQ(memc_stats(&M, &st), 0);
    return (unsigned)st.reconnects;
}

/* memc_open_until's results, and the connection's life against the fake memcached:
 * reconnect (once per dead connection, also from 8 threads at once, also while a
 * connect hangs), automatic mode, shutdown, close with calls in flight, and
 * pthread_cancel in a call, in a connect and in a wait for another thread's connect.
 * Every descriptor comes back. */
static void connections(void)
{
    struct timespec d;
    pthread_t th[8], fk;
    int fds0 = count_fds(), fds, port, idle, queued, rc;
    char longhost[MEMC_HOST_MAX + 2];
    memc m;

    /* bad arguments */
    memset(longhost, 'h', sizeof longhost - 1);
    longhost[sizeof longhost - 1] = '\0';
    CHECK_EQ(memc_open_until(&m, NULL, 11211, NULL), EINVAL);
    CHECK_EQ(memc_open_until(&m, longhost, 11211, NULL), EINVAL);
    CHECK_EQ(memc_open_until(&m, "127.0.0.1", 0, NULL), EINVAL);
    CHECK_EQ(memc_open_until(&m, "127.0.0.1", 65536, NULL), EINVAL);
    d.tv_sec = 0;
    d.tv_nsec = 1000000000L;
    CHECK_EQ(memc_open_until(&m, "127.0.0.1", 11211, &d), EINVAL);

    /* a port with a socket bound and nobody listening: refused */
    idle = listener(-1, &port);
    d = in_ms(1000);
    CHECK_EQ(memc_open_until(&m, "127.0.0.1", port, &d), ECONNREFUSED);
    close(idle);

    /* a non-routable address: the deadline ends it, or there is no route at all (or,
     * on a network that answers for every address, a connection: not assumed) */
    d = in_ms(200);
    rc = memc_open_until(&m, "10.255.255.1", 11211, &d);
    if (rc == 0)
        CHECK_EQ(memc_close(&m), 0);
    else if (rc != ETIMEDOUT && rc != ENETUNREACH && rc != EHOSTUNREACH)
        fprintf(stderr, "10.255.255.1: %d (%s)\n", rc, memc_strerror(rc));
    CHECK(rc == 0 || rc == ETIMEDOUT || rc == ENETUNREACH || rc == EHOSTUNREACH);

    /* a listener whose queue is full drops the SYN: ETIMEDOUT, on any machine. Its
     * queue holds one connection (backlog 0); it never accepts. */
    fk_listen = listener(0, &fk_port);
    queued = plain_connect(fk_port);
    d = in_ms(200);
    CHECK_EQ(memc_open_until(&m, "127.0.0.1", fk_port, &d), ETIMEDOUT);
    d = in_ms(0); /* a deadline already past: one attempt, which cannot complete */
    CHECK_EQ(memc_open_until(&m, "127.0.0.1", fk_port, &d), ETIMEDOUT);
    /* cancelled in its connect (no deadline): the socket is closed */
    fds = count_fds();
    CHECK(pthread_create(&th[0], NULL, open_forever, &fk_port) == 0);
    lft_sleep_ms(100);
    lft_cancel_join(th[0]);
    CHECK_EQ(count_fds(), fds);

    /* the fake memcached on that listener; a name for the address */
    CHECK(pthread_create(&fk, NULL, fake_memcached, NULL) == 0);
    AWAIT(lft_load(&fk_accepted) >= 1, "the queued connection accepted");
    close(queued);
    CHECK_EQ(memc_open(&M, "localhost", fk_port), 0); /* (::1 may be tried first) */
    expect_ok();
    CHECK_EQ(memc_reconnect(&M, NULL), 0); /* alive: nothing done */
    CHECK_EQ(reconnects(), 0);

    /* a dead connection: every call on it fails at once; one reconnect replaces it */
    CHECK_EQ(memc_get(&M, "bye", NULL, 0, NULL, NULL, NULL), ECONNRESET);
    rc = memc_set(&M, "ok", "v", 1, 0, 0, NULL);
    CHECK(rc == ECONNRESET || rc == EPIPE);
    d = in_ms(2000);
    CHECK_EQ(memc_reconnect(&M, &d), 0);
    CHECK_EQ(memc_reconnect(&M, &d), 0); /* alive again: nothing more */
    CHECK_EQ(reconnects(), 1);
    expect_ok();

    /* 8 threads reconnect at once, while the connect hangs (the listener paused with
     * its queue full): one connection is made, every thread returns 0 */
    CHECK_EQ(memc_get(&M, "bye", NULL, 0, NULL, NULL, NULL), ECONNRESET);
    queued = fk_pause_full();
    rc = lft_load(&fk_accepted);
    CHECK(pthread_barrier_init(&eight, NULL, 8) == 0);
    for (int i = 0; i < 8; i++)
        CHECK(pthread_create(&th[i], NULL, reconnect_together, NULL) == 0);
    lft_sleep_ms(200);
    lft_store(&fk_paused, 0);
    for (int i = 0; i < 8; i++)
        CHECK(lft_join(th[i]) == (void *)0);
    pthread_barrier_destroy(&eight);
    close(queued);
    CHECK_EQ(reconnects(), 2);
    expect_ok();
    AWAIT(lft_load(&fk_accepted) >= rc + 2, "the queued one and memc's");
    lft_sleep_ms(50);
    CHECK_EQ(lft_load(&fk_accepted), rc + 2); /* and no other */

    /* cancelled in a call: its reference is dropped, the connection goes on */
    CHECK(pthread_create(&th[0], NULL, get_mute, NULL) == 0);
    AWAIT(calls_in(1), "the call waiting");
    lft_cancel_join(th[0]);
    CHECK(calls_in(0));
    expect_ok();

    /* cancelled making a connection, and another thread waiting for it: the waiter
     * makes its own; the socket of the cancelled one is closed */
    queued = hang_reconnect(&th[0]);
    CHECK(pthread_create(&th[1], NULL, reconnect_5s, NULL) == 0);
    lft_sleep_ms(100);
    lft_cancel_join(th[0]);
    lft_store(&fk_paused, 0);
    CHECK(lft_join(th[1]) == (void *)0); /* (a socket the cancelled connect left open
                                          * would show in the count at the end) */
    close(queued);
    CHECK_EQ(reconnects(), 3);
    expect_ok();

    /* automatic: the call that meets the failure returns it, the next reconnects */
    CHECK_EQ(memc_auto_reconnect(&M, 1), 0);
    CHECK_EQ(memc_get(&M, "bye", NULL, 0, NULL, NULL, NULL), ECONNRESET);
    expect_ok();
    CHECK_EQ(reconnects(), 4);

    /* close with a call in flight: EBUSY; shutdown ends it (sent: ECONNABORTED; the
     * call is in before its request is written, so wait for the fake to read it) */
    rc = lft_load(&fk_mutes);
    CHECK(pthread_create(&th[0], NULL, get_mute, NULL) == 0);
    AWAIT(calls_in(1) && lft_load(&fk_mutes) > rc, "the call waiting, its request read");
    CHECK_EQ(memc_close(&M), EBUSY);
    CHECK_EQ(memc_shutdown(&M), 0);
    CHECK(lft_join(th[0]) == (void *)(intptr_t)ECONNABORTED);
    CHECK_EQ(memc_get(&M, "ok", NULL, 0, NULL, NULL, NULL), ECANCELED);
    CHECK_EQ(memc_reconnect(&M, NULL), ECANCELED);
    CHECK_EQ(memc_close(&M), 0);

    /* shutdown ends a connect that hangs (no deadline) */
    CHECK_EQ(memc_open(&M, "127.0.0.1", fk_port), 0);
    queued = hang_reconnect(&th[0]);
    CHECK_EQ(memc_shutdown(&M), 0);
    CHECK(lft_join(th[0]) == (void *)(intptr_t)ECANCELED);
    CHECK_EQ(memc_close(&M), 0);
    close(queued);

    /* automatic, with nobody listening any more: the reconnect's error, nothing sent */
    lft_store(&fk_paused, 0);
    CHECK_EQ(memc_open(&M, "127.0.0.1", fk_port), 0);
    CHECK_EQ(memc_auto_reconnect(&M, 1), 0);
    CHECK_EQ(memc_get(&M, "bye", NULL, 0, NULL, NULL, NULL), ECONNRESET);
    lft_store(&fk_stop, 1);
    CHECK(pthread_join(fk, NULL) == 0);
    close(fk_listen);
    CHECK_EQ(memc_get(&M, "ok", NULL, 0, NULL, NULL, NULL), ECONNREFUSED);
    CHECK_EQ(memc_close(&M), 0);
    CHECK_EQ(count_fds(), fds0);
    printf("t_memcached: connections: ECONNREFUSED, ETIMEDOUT (a full queue, also with "
           "a deadline past), EINVAL; reconnect once per dead connection (8 threads at "
           "once: 1), automatic mode, shutdown during a connect, close with a call in "
           "flight (EBUSY); cancelled in a call, a connect and a wait for another's "
           "connect: nothing leaked\n");
}

int main(int argc, char **argv)
{
    long port = 0, pid = 0;
    const char *killfile = NULL;
    int hybrid_mode = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "-p") == 0)
            port = strtol(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "-k") == 0)
            pid = strtol(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "-r") == 0 || strcmp(argv[i], "-H") == 0) {
            killfile = argv[i + 1];
            hybrid_mode = argv[i][1] == 'H';
        }
    }
    if (argc == 2 && (strcmp(argv[1], "-f") == 0 || strcmp(argv[1], "-c") == 0)) {
        lft_start("t_memcached", 10);
        if (argv[1][1] == 'f')
            malformed();
        else
            connections();
        lft_pass();
        return 0;
    }
    if (port <= 0 || port > 65535) {
        fprintf(stderr, "usage: t_memcached -p PORT [-k MEMCACHED_PID | -r KILLFILE | "
                        "-H KILLFILE] | -f | -c\n");
        return 2;
    }
    lft_start("t_memcached", 10);
    ops = lft_scaled(killfile ? 3000 : 10000);
    if (pid > 0)
        killed((int)port, (pid_t)pid);
    else if (killfile && hybrid_mode)
        hybrid((int)port, killfile);
    else if (killfile)
        reconnect_load((int)port, killfile);
    else
        mixed((int)port);
    lft_pass();
    return 0;
}
