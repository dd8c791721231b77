/* bench/redis.h against a real redis-server: many threads, ONE connection, replies
 * matched by their order alone, every value checked. test/redis.sh starts Redis and
 * runs this:
 *
 *   t_redis -p PORT          8 threads x mixed GET/SET/DEL/INCR over one connection.
 *       Each thread has its own keys and keeps a model of them (the version of the
 *       value stored, or absent, and its counter): every GET must return exactly what
 *       the model says, byte for byte, ENOENT after a DEL, every INCR the next
 *       number. All threads also write and read a few shared keys whose values
 *       describe themselves (key, writer, sequence, a checksum): a GET must return a
 *       whole value written for that key. Values run from 1 byte to 40 KB, so
 *       replies straddle reads and the bound's 16 KB receive buffer. Mixed in: the
 *       server's errors (INCR of a key that holds text: EIO and Redis's message, and
 *       the next call gets its own reply), a value longer than the buffer (EMSGSIZE
 *       with its length), GETs with a deadline already past (0 with the right
 *       value, or ETIMEDOUT and their reply dropped in its turn: the calls after
 *       them still get their own). Before: SET with PX expires, INCR overflow, E2BIG,
 *       EINVAL, PING. After: the bound's counts (every reply delivered to a call
 *       that waited, or dropped as stray after a timeout; none failed).
 *   t_redis -p PORT -k PID   8 threads make calls without deadlines until Redis (PID)
 *       is killed with SIGKILL mid-run: every thread wakes with ECONNRESET, or EPIPE
 *       for a send that found the connection broken, and a later call fails the same
 *       way at once. A thread that never wakes trips the watchdog.
 *   t_redis -p PORT -r FILE  reconnect under load: 8 threads of mixed calls; when
 *       FILE appears (the test makes it mid-run) test/redis.sh kills Redis (SIGKILL)
 *       and starts a new, empty one on the same port. The threads meet connection
 *       errors, reconnect (one connection per dead one), and go on, each value
 *       checked against a model that forgets what a dead server held; the old
 *       connection is closed by its last call, no descriptor is left behind.
 *   t_redis -f               against a fake server on loopback: replies split byte
 *       by byte, nil, empty and 40 KB bulks, an error line cut for
 *       redis_last_error, a line of exactly LF_BOUND_HEADER_MAX bytes, the extreme
 *       integers: all delivered and the connection goes on. A line one byte longer,
 *       an array, an integer to a GET, "+QUEUED" to a SET, a bulk without its CRLF,
 *       a malformed integer or bulk length, one over REDIS_BULK_MAX, a reply with no
 *       request: EPROTO, and the connection is dead for every later call.
 *   t_redis -c               redis_open_until's results and a connection's life
 *       against the fake server: ECONNREFUSED, ETIMEDOUT (a listener whose queue is
 *       full), EINVAL; a call's deadline in the middle of the wire (its late reply
 *       dropped in its turn, the next call gets its own); reconnect (also from 8
 *       threads at once while the connect hangs: one connection), automatic mode,
 *       shutdown (also of a connect under way), close with a call in flight, and
 *       pthread_cancel in a call and in a connect. Every descriptor comes back. */
#include "../bench/redis.h"
#include "lf_test.h"
#include "lft_client.h"

#include <stdint.h>

#define THREADS 8
#define OWN_KEYS 32
#define SHARED_KEYS 8
#define BIG 40000

static redis R;
static long long ops;

/* ------------------------------------------------------------------ values */

/* Own keys: the value of version ver of key j of thread t, all derived from them.
 * It starts with 'v', so it is never an integer to INCR. */
static size_t own_len(int t, int j, unsigned ver)
{
    uint64_t h = mix((uint64_t)t << 40 | (uint64_t)j << 32 | ver);
    return h % 200 == 0 ? BIG : h % 50 == 0 ? 3000 : 1 + (size_t)(h % 300);
}

static void own_fill(unsigned char *v, size_t len, int t, int j, unsigned ver)
{
    uint64_t h = mix((uint64_t)t << 40 | (uint64_t)j << 32 | ver);
    v[0] = 'v';
    for (size_t i = 1; i < len; i++)
        v[i] = (unsigned char)(h + i * 131u);
}

/* (the shared keys' values, which describe themselves: lft_client.h's shared_make
 * and shared_check) */

/* ------------------------------------------------------------------ part 1 */

/* delivered: calls whose reply reached them (0, ENOENT, EIO); small: EMSGSIZE (a reply
 * refused by read_body); late: ETIMEDOUT (at most one stray reply each) */
static LFT_ATOMIC(long long) n_get, n_hit, n_set, n_del, n_incr, n_err, n_small, n_late,
    n_delivered;

static void *client(void *arg)
{
    int t = (int)(long)arg;
    unsigned ver[OWN_KEYS] = {0}; /* 0: absent; else the version stored */
    unsigned seq = 0;
    long long counter = 0;
    unsigned long long rnd = mix((uint64_t)t + 1);
    unsigned char v[BIG], got[BIG];
    char key[64], ckey[32];

    snprintf(ckey, sizeof ckey, "ctr:%d", t);
    for (int j = 0; j < OWN_KEYS; j++) { /* from a known state: absent */
        int rc;
        snprintf(key, sizeof key, "own:%d:%d", t, j);
        rc = redis_del(&R, key, NULL);
        CHECK(rc == 0 || rc == ENOENT);
        lft_add(&n_delivered, 1);
    }
    for (long long i = 0; i < ops; i++) {
        unsigned r = (unsigned)(lft_rand(&rnd) % 100);
        int j = (int)(lft_rand(&rnd) % OWN_KEYS), rc;
        size_t len = 0;
        snprintf(key, sizeof key, "own:%d:%d", t, j);
        if (r < 40) {
            /* now and then a deadline already past: the value, or ETIMEDOUT */
            struct timespec past = in_ms(0);
            int late = lft_rand(&rnd) % 32 == 0;
            rc = redis_get(&R, key, got, sizeof got, &len, late ? &past : NULL);
            lft_add(&n_get, 1);
            if (late && rc == ETIMEDOUT) {
                lft_add(&n_late, 1);
            } else if (ver[j] == 0) {
                CHECK_EQ(rc, ENOENT);
                lft_add(&n_delivered, 1);
            } else {
                size_t want = own_len(t, j, ver[j]);
                CHECK_EQ(rc, 0);
                CHECK_EQ(len, want);
                own_fill(v, want, t, j, ver[j]);
                CHECK(memcmp(v, got, want) == 0);
                lft_add(&n_hit, 1);
                lft_add(&n_delivered, 1);
                if (want > 8 && i % 97 == 0) { /* too long for the buffer: told so */
                    rc = redis_get(&R, key, got, 8, &len, NULL);
                    CHECK_EQ(rc, EMSGSIZE);
                    CHECK_EQ(len, want);
                    lft_add(&n_small, 1);
                }
            }
        } else if (r < 65) {
            unsigned nv = ver[j] + 1 + (unsigned)(lft_rand(&rnd) % 3);
            len = own_len(t, j, nv);
            own_fill(v, len, t, j, nv);
            CHECK_EQ(redis_set(&R, key, v, len, 0, NULL), 0);
            ver[j] = nv;
            lft_add(&n_set, 1);
            lft_add(&n_delivered, 1);
        } else if (r < 70) {
            CHECK_EQ(redis_del(&R, key, NULL), ver[j] ? 0 : ENOENT);
            ver[j] = 0;
            lft_add(&n_del, 1);
            lft_add(&n_delivered, 1);
        } else if (r < 80) {
            long long got_n = -1;
            if (r == 79 && ver[j] != 0) { /* a key holding text: the server's error */
                rc = redis_incr(&R, key, &got_n, NULL);
                CHECK_EQ(rc, EIO);
                CHECK(strcmp(redis_last_error(), "ERR value is not an integer or out of range") == 0);
                CHECK_EQ(got_n, -1); /* untouched */
                lft_add(&n_err, 1);
            } else {
                CHECK_EQ(redis_incr(&R, ckey, &got_n, NULL), 0);
                CHECK_EQ(got_n, ++counter);
                CHECK(redis_last_error()[0] == '\0');
            }
            lft_add(&n_incr, 1);
            lft_add(&n_delivered, 1);
        } else {
            int k = (int)(lft_rand(&rnd) % SHARED_KEYS);
            snprintf(key, sizeof key, "shared:%d", k);
            if (r < 92) {
                CHECK_EQ(redis_get(&R, key, got, sizeof got, &len, NULL), 0);
                shared_check(got, len, k);
                lft_add(&n_get, 1);
                lft_add(&n_hit, 1);
            } else {
                seq = (seq + 1) & 0xffffff;
                len = shared_make(v, k, t, seq);
                CHECK_EQ(redis_set(&R, key, v, len, 0, NULL), 0);
                lft_add(&n_set, 1);
            }
            lft_add(&n_delivered, 1);
        }
        lft_progress();
    }
    return NULL;
}

static void mixed(int port)
{
    pthread_t th[THREADS];
    struct redis_stats rs;
    struct lf_bound_stats s;
    unsigned char v[256];
    char key[64];
    size_t len = 0;
    long long n = 0, before;
    double t0;

    CHECK_EQ(redis_open(&R, "127.0.0.1", port), 0);
    CHECK_EQ(redis_ping(&R, NULL), 0);
    for (int k = 0; k < SHARED_KEYS; k++) { /* every shared key holds a value */
        snprintf(key, sizeof key, "shared:%d", k);
        len = shared_make(v, k, 99, 0);
        CHECK_EQ(redis_set(&R, key, v, len, 0, NULL), 0);
    }
    for (int t = 0; t < THREADS; t++) { /* the counters start from nothing */
        int rc;
        snprintf(key, sizeof key, "ctr:%d", t);
        rc = redis_del(&R, key, NULL);
        CHECK(rc == 0 || rc == ENOENT);
    }
    /* the results a caller can meet on a healthy connection */
    CHECK_EQ(redis_get(&R, "never-set", v, sizeof v, &len, NULL), ENOENT);
    CHECK_EQ(redis_del(&R, "never-set", NULL), ENOENT);
    CHECK_EQ(redis_set(&R, "expiring", "x", 1, 100, NULL), 0); /* PX 100 */
    CHECK_EQ(redis_get(&R, "expiring", v, sizeof v, &len, NULL), 0);
    CHECK(len == 1 && v[0] == 'x');
    CHECK_EQ(redis_set(&R, "empty", NULL, 0, 0, NULL), 0);
    CHECK_EQ(redis_get(&R, "empty", v, sizeof v, &len, NULL), 0);
    CHECK_EQ(len, 0);
    CHECK_EQ(redis_get(&R, "expiring", NULL, 0, &len, NULL), EMSGSIZE); /* its length */
    CHECK_EQ(len, 1);
    CHECK_EQ(redis_set(&R, "max", "9223372036854775806", 19, 0, NULL), 0);
    CHECK_EQ(redis_incr(&R, "max", &n, NULL), 0);
    CHECK_EQ(n, LLONG_MAX);
    CHECK_EQ(redis_incr(&R, "max", &n, NULL), EIO);
    CHECK(strcmp(redis_last_error(), "ERR increment or decrement would overflow") == 0);
    CHECK_EQ(redis_set(&R, "min", "-9223372036854775808", 20, 0, NULL), 0);
    CHECK_EQ(redis_incr(&R, "min", &n, NULL), 0);
    CHECK_EQ(n, LLONG_MIN + 1);
    CHECK(redis_last_error()[0] == '\0'); /* cleared by the next call */
    /* ours, nothing sent */
    CHECK_EQ(redis_set(&R, "k", v, REDIS_BULK_MAX + 1, 0, NULL), E2BIG);
    CHECK_EQ(redis_set(&R, "k", v, 1, -1, NULL), EINVAL);
    CHECK_EQ(redis_get(&R, NULL, v, sizeof v, &len, NULL), EINVAL);
    CHECK_EQ(redis_get(&R, "k", v, sizeof v, NULL, NULL), EINVAL);
    CHECK_EQ(redis_incr(NULL, "k", &n, NULL), EINVAL);
    lft_sleep_ms(250);
    CHECK_EQ(redis_get(&R, "expiring", v, sizeof v, &len, NULL), ENOENT); /* expired */
    before = 13 + SHARED_KEYS + THREADS; /* the replies so far (EMSGSIZE is refused) */
    CHECK_EQ(redis_stats(&R, &rs), 0);
    CHECK_EQ(rs.bound.replies, before);
    CHECK_EQ(rs.bound.refused, 1);

    t0 = lft_now();
    for (long i = 0; i < THREADS; i++)
        CHECK(pthread_create(&th[i], NULL, client, (void *)i) == 0);
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_join(th[i], NULL) == 0);
    CHECK_EQ(redis_stats(&R, &rs), 0);
    s = rs.bound;
    /* every reply went to the call it answered: the EMSGSIZE ones refused by
     * read_body, the calls that timed out before theirs came dropped it (stray; one
     * taken back before it was written has none), the rest delivered */
    CHECK_EQ(s.replies, before + lft_load(&n_delivered));
    CHECK_EQ(s.refused, 1 + lft_load(&n_small));
    CHECK(s.stray <= (unsigned long long)lft_load(&n_late));
    CHECK_EQ(s.failed, 0);
    CHECK_EQ(s.send_failed, 0);
    CHECK_EQ(s.in_flight, 0);
    printf("t_redis: %d threads x %lld calls over 1 connection in %.1f s: %lld GETs "
           "(%lld hits, every value checked), %lld SETs, %lld DELs, %lld INCRs (%lld "
           "server errors), %lld EMSGSIZE, %lld timed out (%llu replies dropped in their "
           "turn); %llu replies handed off, %llu read by their own waiter, %llu writes\n",
           THREADS, ops, lft_now() - t0, lft_load(&n_get), lft_load(&n_hit), lft_load(&n_set),
           lft_load(&n_del), lft_load(&n_incr), lft_load(&n_err), lft_load(&n_small),
           lft_load(&n_late), s.stray, s.handed_off, s.own, s.writes);
    CHECK_EQ(redis_close(&R), 0);
}

/* ------------------------------------------------------------------ part 2 */

static void *victim(void *arg)
{
    int t = (int)(long)arg, rc, again;
    char key[32];
    unsigned char v[64], got[64];
    size_t len;
    long long n;
    snprintf(key, sizeof key, "victim:%d", t);
    memset(v, 'a' + t, sizeof v);
    for (unsigned i = 0;; i++) {
        /* no deadline: only the connection's end can wake this call */
        rc = i % 3 == 0 ? redis_set(&R, key, v, sizeof v, 0, NULL)
             : i % 3 == 1 ? redis_get(&R, key, got, sizeof got, &len, NULL)
                          : redis_incr(&R, "victims", &n, NULL);
        if (rc != 0)
            break;
        lft_add(&done_ok, 1);
        lft_progress();
    }
    victim_woke(t, rc, redis_strerror(rc));
    /* and the connection stays dead: a later call fails at once, the same way */
    again = redis_get(&R, key, got, sizeof got, &len, NULL);
    CHECK(again == ECONNRESET || again == EPIPE);
    return NULL;
}

static void killed(int port, pid_t pid)
{
    pthread_t th[THREADS];
    struct redis_stats rs;
    unsigned in_flight;

    CHECK_EQ(redis_open(&R, "127.0.0.1", port), 0);
    for (long i = 0; i < THREADS; i++)
        CHECK(pthread_create(&th[i], NULL, victim, (void *)i) == 0);
    AWAIT(lft_load(&done_ok) >= 2000, "2,000 calls done before the kill");
    CHECK_EQ(redis_stats(&R, &rs), 0);
    in_flight = rs.bound.in_flight;
    victims_kill(pid);
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_join(th[i], NULL) == 0); /* a thread that never wakes: watchdog */
    CHECK_EQ(redis_stats(&R, &rs), 0);
    CHECK(rs.bound.failed == ECONNRESET || rs.bound.send_failed == EPIPE);
    CHECK_EQ(rs.bound.in_flight, 0);
    CHECK_EQ(rs.calls, 0);
    victims_all_woke("t_redis", "redis-server", THREADS, in_flight);
    CHECK_EQ(redis_close(&R), 0);
}

/* ------------------------------------------------------------------ helpers */

static unsigned long long generation(void)
{
    struct redis_stats st;
    CHECK_EQ(redis_stats(&R, &st), 0);
    return st.reconnects;
}

/* ------------------------------------------------------------------ part 3
 * Reconnect under load. A thread's model of its keys holds only while its calls go
 * to one server: each call notes the connection's generation (how many reconnects
 * were made) before and after it; a call that saw a change, or a connection error,
 * may have gone to a server that is gone, so the thread forgets what it knew (the
 * keys become unknown) and checks nothing about that call's result but that it is
 * one the contract allows. An unknown key is made known again by a DEL (0 or ENOENT
 * both fine) on a generation that holds. */

#define RKEYS 16
#define AFTER_MIN 300 /* calls each thread completes on a connection made by a reconnect */
#define UNKNOWN 0xffffffffu
static LFT_ATOMIC(long long) r_ok, r_errors, r_after;
static LFT_ATOMIC(int) kill_asked;

/* Reconnect until a new connection is in place: Redis is restarted by the script a
 * moment after the kill; until then ECONNREFUSED (or the connect's deadline). */
static void reconnect_until_up(void)
{
    for (;;) {
        struct timespec d = in_ms(500);
        int rc = redis_reconnect(&R, &d);
        if (rc == 0)
            return;
        if (rc != ECONNREFUSED && rc != ETIMEDOUT && rc != ECONNRESET)
            fprintf(stderr, "redis_reconnect: %d (%s)\n", rc, redis_strerror(rc));
        CHECK(rc == ECONNREFUSED || rc == ETIMEDOUT || rc == ECONNRESET);
        lft_sleep_ms(10);
    }
}

/* the length of a reloader's value (1 to 3,000 bytes) */
static size_t r_len(int t, int j, unsigned ver)
{
    return 1 + own_len(t, j, ver) % 2999;
}

static void *reloader(void *arg)
{
    int t = (int)(long)arg;
    unsigned ver[RKEYS], next = 0;
    long long counter = -1, after_ok = 0; /* -1: unknown */
    unsigned long long rnd = mix((uint64_t)t + 77), gen = generation();
    unsigned char v[3000], got[3000];
    char key[64], ckey[32];

    snprintf(ckey, sizeof ckey, "rctr:%d", t);
    for (int j = 0; j < RKEYS; j++)
        ver[j] = UNKNOWN;
    for (long long i = 0; i < ops || after_ok < AFTER_MIN; i++) {
        unsigned r = (unsigned)(lft_rand(&rnd) % 100);
        int j = (int)(lft_rand(&rnd) % RKEYS), rc, held;
        unsigned long long g0 = generation(), g1;
        size_t len = 0;
        long long n = 0;
        if (g0 != gen) { /* another thread reconnected: a new server, maybe */
            for (int k = 0; k < RKEYS; k++)
                ver[k] = UNKNOWN;
            counter = -1;
            gen = g0;
        }
        snprintf(key, sizeof key, "re:%d:%d", t, j);
        if (ver[j] == UNKNOWN) {
            rc = redis_del(&R, key, NULL);
            CHECK(rc == 0 || rc == ENOENT || conn_error(rc));
        } else if (r < 20 && counter < 0) {
            rc = redis_del(&R, ckey, NULL);
            CHECK(rc == 0 || rc == ENOENT || conn_error(rc));
        } else if (r < 20) {
            rc = redis_incr(&R, ckey, &n, NULL);
            CHECK(rc == 0 || conn_error(rc));
        } else if (r < 60) {
            rc = redis_get(&R, key, got, sizeof got, &len, NULL);
            CHECK(rc == 0 || rc == ENOENT || conn_error(rc));
        } else {
            next++;
            len = r_len(t, j, next);
            own_fill(v, len, t, j, next);
            rc = redis_set(&R, key, v, len, 0, NULL);
            CHECK(rc == 0 || conn_error(rc));
        }
        g1 = generation();
        held = g1 == g0 && !conn_error(rc); /* one server throughout: check, learn */
        if (held && ver[j] == UNKNOWN) {
            ver[j] = 0;
        } else if (held && r < 20 && counter < 0) {
            counter = 0;
        } else if (held && r < 20) {
            CHECK_EQ(n, ++counter);
        } else if (held && r < 60) {
            if (ver[j] == 0) {
                CHECK_EQ(rc, ENOENT);
            } else {
                size_t want = r_len(t, j, ver[j]);
                CHECK_EQ(rc, 0);
                CHECK_EQ(len, want);
                own_fill(v, len, t, j, ver[j]);
                CHECK(memcmp(v, got, len) == 0);
            }
        } else if (held) {
            ver[j] = next;
        }
        if (!held) { /* forget: the server may be another one now */
            for (int k = 0; k < RKEYS; k++)
                ver[k] = UNKNOWN;
            counter = -1;
            gen = g1;
        }
        if (conn_error(rc)) {
            CHECK(lft_load(&kill_asked));
            lft_add(&r_errors, 1);
            reconnect_until_up();
            continue;
        }
        if (held && g1 > 0)
            after_ok++;
        lft_add(&r_ok, 1);
        lft_progress();
    }
    lft_add(&r_after, after_ok);
    return NULL;
}

static void reconnect_load(int port, const char *killfile)
{
    pthread_t th[THREADS];
    struct redis_stats st;
    int fds0 = count_fds(), fds1;

    CHECK_EQ(redis_open(&R, "127.0.0.1", port), 0);
    fds1 = count_fds();
    for (long i = 0; i < THREADS; i++)
        CHECK(pthread_create(&th[i], NULL, reloader, (void *)i) == 0);
    AWAIT(lft_load(&r_ok) >= (long long)THREADS * ops / 4, "a quarter of the calls");
    lft_store(&kill_asked, 1);
    touch(killfile); /* the script kills redis-server now, and starts a new one */
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_join(th[i], NULL) == 0);
    CHECK_EQ(redis_stats(&R, &st), 0);
    CHECK(st.reconnects >= 1);
    CHECK_EQ(st.conns, 1);      /* the old ones went with their last calls */
    CHECK_EQ(st.calls, 0);
    CHECK_EQ(st.bound.failed, 0);
    CHECK_EQ(count_fds(), fds1); /* ... and their sockets and wake-up descriptors */
    printf("t_redis: redis-server killed and restarted under %d threads: %lld calls, "
           "%lld connection errors met, %llu connection(s) made, %lld checked calls on "
           "the new server; old connections closed by their last calls\n",
           THREADS, lft_load(&r_ok), lft_load(&r_errors), st.reconnects, lft_load(&r_after));
    CHECK_EQ(redis_close(&R), 0);
    CHECK_EQ(count_fds(), fds0);
}

/* ------------------------------------------------------------------ the fake server
 * lft_client.h's fk_loop polls a listener and up to 16 connections; here each
 * connection's RESP requests (arrays of bulk strings, many in one read, or split) are
 * read and answered as their key says (fake_answer). Paused, it accepts nobody, and a
 * connect hangs (fk_pause_full). */

static void send_all(int fd, const void *p, size_t n)
{
    const char *c = (const char *)p;
    while (n > 0) {
        ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return; /* the client went away: its test says what it saw */
        c += w;
        n -= (size_t)w;
    }
}

static void send_str(int fd, const char *s)
{
    send_all(fd, s, strlen(s));
}

/* A line of n bytes, CRLF included: type, then filler. */
static void send_line(int fd, char type, size_t n)
{
    char *b = (char *)malloc(n);
    CHECK(b != NULL && n >= 3);
    b[0] = type;
    memset(b + 1, 'x', n - 3);
    memcpy(b + 1, "ERR ", n - 3 >= 4 ? 4 : n - 3);
    b[n - 2] = '\r';
    b[n - 1] = '\n';
    send_all(fd, b, n);
    free(b);
}

/* Answer one request: cmd and key (NUL-ended). 0 done, -1 close the connection. */
static int fake_answer(int fd, const char *cmd, const char *key)
{
    if (strcmp(cmd, "PING") == 0) {
        send_str(fd, "+PONG\r\n");
    } else if (strcmp(key, "bye") == 0) {
        return -1;
    } else if (strcmp(key, "mute") == 0) {
        lft_add(&fk_mutes, 1); /* and no answer */
    } else if (strcmp(key, "late") == 0) {
        lft_sleep_ms(300); /* holds every later request of every connection back too */
        send_str(fd, "$4\r\nlate\r\n");
    } else if (strcmp(key, "slow") == 0) { /* "hello", a byte per segment */
        static const char r[] = "$5\r\nhello\r\n";
        for (size_t i = 0; i + 1 < sizeof r; i++) {
            send_all(fd, r + i, 1);
            lft_sleep_ms(1);
        }
    } else if (strcmp(key, "nil") == 0) {
        send_str(fd, "$-1\r\n");
    } else if (strcmp(key, "empty") == 0) {
        send_str(fd, "$0\r\n\r\n");
    } else if (strcmp(key, "big") == 0) { /* 40,000 bytes: over the receive buffer */
        char *b = (char *)malloc(BIG + 16);
        int h;
        CHECK(b != NULL);
        h = snprintf(b, 16, "$%d\r\n", BIG);
        for (int i = 0; i < BIG; i++)
            b[h + i] = (char)('a' + i % 26);
        b[h + BIG] = '\r';
        b[h + BIG + 1] = '\n';
        send_all(fd, b, (size_t)h + BIG + 2);
        free(b);
    } else if (strcmp(key, "longerr") == 0) {
        send_line(fd, '-', 900);
    } else if (strcmp(key, "exactline") == 0) { /* as long as a line may be */
        send_line(fd, '-', LF_BOUND_HEADER_MAX);
    } else if (strcmp(key, "overline") == 0) { /* one byte more */
        send_line(fd, '-', LF_BOUND_HEADER_MAX + 1);
    } else if (strcmp(key, "maxint") == 0) {
        send_str(fd, ":9223372036854775807\r\n");
    } else if (strcmp(key, "minint") == 0) {
        send_str(fd, ":-9223372036854775808\r\n");
    } else if (strcmp(key, "overint") == 0) {
        send_str(fd, ":9223372036854775808\r\n");
    } else if (strcmp(key, "badint") == 0) {
        send_str(fd, ":12a\r\n");
    } else if (strcmp(key, "wrongtype") == 0) { /* an integer to a GET */
        send_str(fd, ":5\r\n");
    } else if (strcmp(key, "queued") == 0) { /* not OK to a SET */
        send_str(fd, "+QUEUED\r\n");
    } else if (strcmp(key, "array") == 0) {
        send_str(fd, "*1\r\n$1\r\na\r\n");
    } else if (strcmp(key, "badcrlf") == 0) { /* the bulk's length is a lie */
        send_str(fd, "$3\r\nabcXY");
    } else if (strcmp(key, "hugebulk") == 0) { /* over REDIS_BULK_MAX */
        send_str(fd, "$999999999999\r\n");
    } else if (strcmp(key, "negzero") == 0) {
        send_str(fd, "$-0\r\n");
    } else if (strcmp(key, "bareLF") == 0) {
        send_str(fd, "+OK\n");
    } else if (strcmp(key, "extra") == 0) { /* two replies to one request */
        send_str(fd, "+OK\r\n+OK\r\n");
    } else if (strcmp(cmd, "GET") == 0) {
        send_str(fd, "$5\r\nhello\r\n");
    } else if (strcmp(cmd, "SET") == 0) {
        send_str(fd, "+OK\r\n");
    } else { /* DEL, INCR */
        send_str(fd, ":1\r\n");
    }
    return 0;
}

/* One RESP number line at *at ("*2", "$3"): its value, *at past its CRLF; -1: not
 * all there yet. */
static long fk_number(const struct fk_conn *c, size_t *at, char type)
{
    size_t i = *at;
    long v = 0;
    if (i >= c->have)
        return -1;
    CHECK_EQ(c->buf[i], type);
    for (i++; i < c->have && c->buf[i] != '\r'; i++)
        v = v * 10 + (c->buf[i] - '0');
    if (i + 1 >= c->have)
        return -1;
    *at = i + 2;
    return v;
}

/* Answer every whole request in c->buf. 0, or -1: close it. */
static int fk_requests(struct fk_conn *c)
{
    for (;;) {
        size_t at = 0;
        long argc = fk_number(c, &at, '*');
        char args[2][300];
        if (argc < 0)
            return 0;
        CHECK(argc >= 1);
        for (long a = 0; a < argc; a++) {
            long n = fk_number(c, &at, '$');
            if (n < 0 || at + (size_t)n + 2 > c->have)
                return 0; /* the rest is still to come */
            if (a < 2) {
                CHECK(n < 300);
                memcpy(args[a], c->buf + at, (size_t)n);
                args[a][n] = '\0';
            }
            at += (size_t)n + 2;
        }
        if (argc < 2)
            args[1][0] = '\0';
        memmove(c->buf, c->buf + at, c->have - at);
        c->have -= at;
        if (fake_answer(c->fd, args[0], args[1]) != 0)
            return -1;
    }
}

/* A connection's bytes, as they come: every whole request answered. 0, or -1: close it. */
static int fk_read(struct fk_conn *c)
{
    ssize_t got = read(c->fd, c->buf + c->have, sizeof c->buf - c->have);
    if (got <= 0)
        return -1;
    c->have += (size_t)got;
    return fk_requests(c);
}

static void *fake_server(void *arg)
{
    (void)arg;
    fk_loop(fk_read);
    return NULL;
}

static void expect_ok(void)
{
    unsigned char v[16];
    size_t len = 0;
    CHECK_EQ(redis_get(&R, "ok", v, sizeof v, &len, NULL), 0);
    CHECK(len == 5 && memcmp(v, "hello", 5) == 0);
}

/* ------------------------------------------------------------------ part 4 */

/* The RESULTS table's EPROTO cases: what this client reads and what it refuses. */
static void malformed(void)
{
    /* each fails the connection; the call it answers gets EPROTO */
    static const struct {
        const char *key;
        int cmd; /* 0 GET, 1 SET, 2 INCR */
    } fatal[] = {
        {"overline", 0}, {"array", 0},   {"wrongtype", 0}, {"queued", 1},  {"badcrlf", 0},
        {"badint", 2},   {"overint", 2}, {"hugebulk", 0},  {"negzero", 0}, {"bareLF", 1},
    };
    struct redis_stats rs;
    unsigned char v[64];
    size_t len;
    long long n;
    pthread_t th;

    fk_listen = listener(16, &fk_port);
    CHECK(pthread_create(&th, NULL, fake_server, NULL) == 0);
    CHECK_EQ(redis_open(&R, "127.0.0.1", fk_port), 0);
    /* the survivable ones, each followed by a good call */
    expect_ok();
    CHECK_EQ(redis_get(&R, "slow", v, sizeof v, &len, NULL), 0);
    CHECK(len == 5 && memcmp(v, "hello", 5) == 0);
    CHECK_EQ(redis_get(&R, "nil", v, sizeof v, &len, NULL), ENOENT);
    CHECK_EQ(redis_get(&R, "empty", v, sizeof v, &len, NULL), 0);
    CHECK_EQ(len, 0);
    CHECK_EQ(redis_get(&R, "big", v, sizeof v, &len, NULL), EMSGSIZE);
    CHECK_EQ(len, BIG);
    {
        unsigned char *b = (unsigned char *)malloc(BIG);
        CHECK(b != NULL);
        CHECK_EQ(redis_get(&R, "big", b, BIG, &len, NULL), 0);
        CHECK_EQ(len, BIG);
        for (int i = 0; i < BIG; i++)
            CHECK_EQ(b[i], 'a' + i % 26);
        free(b);
    }
    expect_ok();
    CHECK_EQ(redis_get(&R, "longerr", v, sizeof v, &len, NULL), EIO); /* cut to fit */
    CHECK_EQ(strlen(redis_last_error()), REDIS_ERROR_MAX);
    CHECK(strncmp(redis_last_error(), "ERR xxx", 7) == 0);
    expect_ok();
    CHECK(redis_last_error()[0] == '\0');
    CHECK_EQ(redis_set(&R, "exactline", "v", 1, 0, NULL), EIO); /* the longest line */
    expect_ok();
    CHECK_EQ(redis_incr(&R, "maxint", &n, NULL), 0);
    CHECK_EQ(n, LLONG_MAX);
    CHECK_EQ(redis_incr(&R, "minint", &n, NULL), 0);
    CHECK_EQ(n, LLONG_MIN);
    CHECK_EQ(redis_del(&R, "ok", NULL), 0);
    CHECK_EQ(redis_ping(&R, NULL), 0);
    CHECK_EQ(redis_stats(&R, &rs), 0);
    CHECK_EQ(rs.bound.stray, 0);
    CHECK_EQ(rs.bound.failed, 0);
    CHECK_EQ(redis_close(&R), 0);

    for (size_t f = 0; f < sizeof fatal / sizeof fatal[0]; f++) {
        int rc;
        CHECK_EQ(redis_open(&R, "127.0.0.1", fk_port), 0);
        expect_ok();
        rc = fatal[f].cmd == 0   ? redis_get(&R, fatal[f].key, v, sizeof v, &len, NULL)
             : fatal[f].cmd == 1 ? redis_set(&R, fatal[f].key, "v", 1, 0, NULL)
                                 : redis_incr(&R, fatal[f].key, &n, NULL);
        if (rc != EPROTO)
            fprintf(stderr, "%s: %d (%s)\n", fatal[f].key, rc, redis_strerror(rc));
        CHECK_EQ(rc, EPROTO);
        /* dead: every later call fails, nothing more is matched to a wrong reply */
        CHECK_EQ(redis_get(&R, "ok", v, sizeof v, &len, NULL), EPROTO);
        CHECK_EQ(redis_del(&R, "ok", NULL), EPROTO);
        CHECK_EQ(redis_close(&R), 0);
    }
    /* a reply with no request: taken for the next call's, which it does not answer */
    CHECK_EQ(redis_open(&R, "127.0.0.1", fk_port), 0);
    CHECK_EQ(redis_set(&R, "extra", "v", 1, 0, NULL), 0);
    CHECK_EQ(redis_get(&R, "ok", v, sizeof v, &len, NULL), EPROTO);
    CHECK_EQ(redis_get(&R, "ok", v, sizeof v, &len, NULL), EPROTO);
    CHECK_EQ(redis_close(&R), 0);

    lft_store(&fk_stop, 1);
    CHECK(pthread_join(th, NULL) == 0);
    close(fk_listen);
    printf("t_redis: fake server: split replies, nil, empty, 40 KB bulks (EMSGSIZE, then "
           "whole), an error cut to %d bytes, a line of LF_BOUND_HEADER_MAX (%d) bytes, "
           "the extreme integers: delivered; a longer line, an array, replies that do not "
           "answer their request, a bulk without its CRLF, malformed numbers, a bare LF, "
           "a reply with no request: EPROTO, the connection dead\n",
           REDIS_ERROR_MAX, LF_BOUND_HEADER_MAX);
}

/* ------------------------------------------------------------------ part 5 */

static void *get_mute(void *arg)
{
    unsigned char v[16];
    size_t len;
    (void)arg;
    return (void *)(intptr_t)redis_get(&R, "mute", v, sizeof v, &len, NULL);
}

static void *get_late(void *arg)
{
    unsigned char v[16];
    size_t len;
    (void)arg;
    return (void *)(intptr_t)redis_get(&R, "late", v, sizeof v, &len, NULL);
}

static void *reconnect_forever(void *arg)
{
    (void)arg;
    return (void *)(intptr_t)redis_reconnect(&R, NULL);
}

static void *open_forever(void *arg)
{
    redis r;
    int rc = redis_open_until(&r, "127.0.0.1", *(int *)arg, NULL);
    if (rc == 0)
        redis_close(&r);
    return (void *)(intptr_t)rc;
}

static pthread_barrier_t eight;

static void *reconnect_together(void *arg)
{
    struct timespec d = in_ms(5000);
    (void)arg;
    pthread_barrier_wait(&eight);
    return (void *)(intptr_t)redis_reconnect(&R, &d);
}

/* the calls hold the connection (redis_stats), and wait in the bound */
static int calls_in(unsigned n)
{
    struct redis_stats st;
    CHECK_EQ(redis_stats(&R, &st), 0);
    return st.calls == n && st.bound.in_flight == n;
}

/* Break the connection ("bye"), pause the fake server with its one backlog place
 * taken by a plain connection (so that a connect hangs), and start a thread in a
 * reconnect without deadline, which hangs there. Returns the queued socket. */
static int hang_reconnect(pthread_t *th)
{
    int queued;
    unsigned char v[8];
    size_t len;
    CHECK_EQ(redis_get(&R, "bye", v, sizeof v, &len, NULL), ECONNRESET);
    queued = fk_pause_full();
    CHECK(pthread_create(th, NULL, reconnect_forever, NULL) == 0);
    lft_sleep_ms(100);
    return queued;
}

static void connections(void)
{
    struct timespec d;
    pthread_t th[8], fk;
    int fds0 = count_fds(), fds, port, idle, queued, rc, accepted, mutes;
    char longhost[REDIS_HOST_MAX + 2];
    unsigned char v[16];
    size_t len;
    redis r;

    /* bad arguments */
    memset(longhost, 'h', sizeof longhost - 1);
    longhost[sizeof longhost - 1] = '\0';
    CHECK_EQ(redis_open_until(&r, NULL, 6379, NULL), EINVAL);
    CHECK_EQ(redis_open_until(&r, longhost, 6379, NULL), EINVAL);
    CHECK_EQ(redis_open_until(&r, "127.0.0.1", 0, NULL), EINVAL);
    CHECK_EQ(redis_open_until(&r, "127.0.0.1", 65536, NULL), EINVAL);
    d.tv_sec = 0;
    d.tv_nsec = 1000000000L;
    CHECK_EQ(redis_open_until(&r, "127.0.0.1", 6379, &d), EINVAL);
    CHECK_EQ(redis_close(NULL), EINVAL);

    /* a port with a socket bound and nobody listening: refused */
    idle = listener(-1, &port);
    d = in_ms(1000);
    CHECK_EQ(redis_open_until(&r, "127.0.0.1", port, &d), ECONNREFUSED);
    close(idle);

    /* a listener whose queue is full drops the SYN: ETIMEDOUT, on any machine. Its
     * queue holds one connection (backlog 0); it never accepts. */
    fk_listen = listener(0, &fk_port);
    queued = plain_connect(fk_port);
    d = in_ms(200);
    CHECK_EQ(redis_open_until(&r, "127.0.0.1", fk_port, &d), ETIMEDOUT);
    d = in_ms(0); /* a deadline already past: one attempt, which cannot complete */
    CHECK_EQ(redis_open_until(&r, "127.0.0.1", fk_port, &d), ETIMEDOUT);
    /* cancelled in its connect (no deadline): the socket is closed */
    fds = count_fds();
    CHECK(pthread_create(&th[0], NULL, open_forever, &fk_port) == 0);
    lft_sleep_ms(100);
    lft_cancel_join(th[0]);
    CHECK_EQ(count_fds(), fds);

    /* the fake server on that listener; a name for the address */
    CHECK(pthread_create(&fk, NULL, fake_server, NULL) == 0);
    AWAIT(lft_load(&fk_accepted) >= 1, "the queued connection accepted");
    close(queued);
    CHECK_EQ(redis_open(&R, "localhost", fk_port), 0); /* (::1 may be tried first) */
    expect_ok();
    CHECK_EQ(redis_reconnect(&R, NULL), 0); /* alive: nothing done */
    CHECK_EQ(generation(), 0);

    /* a call's deadline in the middle of the wire: "late" is answered 300 ms on; the
     * call gives up at 100, keeps its place, and its reply is dropped in its turn: the
     * next call gets its own */
    d = in_ms(100);
    CHECK_EQ(redis_get(&R, "late", v, sizeof v, &len, &d), ETIMEDOUT);
    expect_ok();
    {
        struct redis_stats st;
        CHECK_EQ(redis_stats(&R, &st), 0);
        CHECK_EQ(st.bound.stray, 1);
        CHECK_EQ(st.bound.timeouts, 1);
    }
    /* cancelled in a call: its reference is dropped, its reply dropped in its turn */
    CHECK(pthread_create(&th[0], NULL, get_late, NULL) == 0);
    AWAIT(calls_in(1), "the call waiting");
    lft_cancel_join(th[0]);
    CHECK(calls_in(0));
    expect_ok();

    /* a dead connection: every call on it fails at once; one reconnect replaces it */
    CHECK_EQ(redis_get(&R, "bye", v, sizeof v, &len, NULL), ECONNRESET);
    rc = redis_set(&R, "ok", "v", 1, 0, NULL);
    CHECK(rc == ECONNRESET || rc == EPIPE);
    d = in_ms(2000);
    CHECK_EQ(redis_reconnect(&R, &d), 0);
    CHECK_EQ(redis_reconnect(&R, &d), 0); /* alive again: nothing more */
    CHECK_EQ(generation(), 1);
    expect_ok();

    /* 8 threads reconnect at once, while the connect hangs (the listener paused with
     * its queue full): one connection is made, every thread returns 0 */
    CHECK_EQ(redis_get(&R, "bye", v, sizeof v, &len, NULL), ECONNRESET);
    queued = fk_pause_full();
    accepted = lft_load(&fk_accepted);
    CHECK(pthread_barrier_init(&eight, NULL, 8) == 0);
    for (int i = 0; i < 8; i++)
        CHECK(pthread_create(&th[i], NULL, reconnect_together, NULL) == 0);
    lft_sleep_ms(200);
    lft_store(&fk_paused, 0);
    for (int i = 0; i < 8; i++)
        CHECK(lft_join(th[i]) == (void *)0);
    pthread_barrier_destroy(&eight);
    close(queued);
    CHECK_EQ(generation(), 2);
    expect_ok();
    AWAIT(lft_load(&fk_accepted) >= accepted + 2, "the queued one and ours");
    lft_sleep_ms(50);
    CHECK_EQ(lft_load(&fk_accepted), accepted + 2); /* and no other */

    /* automatic: the call that meets the failure returns it, the next reconnects */
    CHECK_EQ(redis_auto_reconnect(&R, 1), 0);
    CHECK_EQ(redis_get(&R, "bye", v, sizeof v, &len, NULL), ECONNRESET);
    expect_ok();
    CHECK_EQ(generation(), 3);

    /* close with a call in flight: EBUSY; shutdown ends it (sent: ECONNABORTED; the
     * call is in before its request is written, so wait for the fake to read it) */
    mutes = lft_load(&fk_mutes);
    CHECK(pthread_create(&th[0], NULL, get_mute, NULL) == 0);
    AWAIT(calls_in(1) && lft_load(&fk_mutes) > mutes, "the call waiting, its request read");
    CHECK_EQ(redis_close(&R), EBUSY);
    CHECK_EQ(redis_shutdown(&R), 0);
    CHECK(lft_join(th[0]) == (void *)(intptr_t)ECONNABORTED);
    CHECK_EQ(redis_get(&R, "ok", v, sizeof v, &len, NULL), ECANCELED);
    CHECK_EQ(redis_reconnect(&R, NULL), ECANCELED);
    CHECK_EQ(redis_close(&R), 0);
    CHECK_EQ(redis_close(&R), EINVAL);

    /* shutdown ends a connect that hangs (no deadline) */
    CHECK_EQ(redis_open(&R, "127.0.0.1", fk_port), 0);
    queued = hang_reconnect(&th[0]);
    CHECK_EQ(redis_shutdown(&R), 0);
    CHECK(lft_join(th[0]) == (void *)(intptr_t)ECANCELED);
    CHECK_EQ(redis_close(&R), 0);
    close(queued);

    /* automatic, with nobody listening any more: the reconnect's error, nothing sent */
    lft_store(&fk_paused, 0);
    CHECK_EQ(redis_open(&R, "127.0.0.1", fk_port), 0);
    CHECK_EQ(redis_auto_reconnect(&R, 1), 0);
    CHECK_EQ(redis_get(&R, "bye", v, sizeof v, &len, NULL), ECONNRESET);
    lft_store(&fk_stop, 1);
    CHECK(pthread_join(fk, NULL) == 0);
    close(fk_listen);
    CHECK_EQ(redis_get(&R, "ok", v, sizeof v, &len, NULL), ECONNREFUSED);
    CHECK_EQ(redis_close(&R), 0);
    CHECK_EQ(count_fds(), fds0);
    printf("t_redis: connections: ECONNREFUSED, ETIMEDOUT (a full queue, also with a "
           "deadline past), EINVAL; a call timed out in the middle of the wire and one "
           "cancelled there: their replies dropped in their turn; reconnect once per dead "
           "connection (8 threads at once: 1), automatic mode, shutdown during a connect, "
           "close with a call in flight (EBUSY); nothing leaked\n");
}

int main(int argc, char **argv)
{
    long port = 0, pid = 0;
    const char *killfile = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "-p") == 0)
            port = strtol(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "-k") == 0)
            pid = strtol(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "-r") == 0)
            killfile = argv[i + 1];
    }
    if (argc == 2 && (strcmp(argv[1], "-f") == 0 || strcmp(argv[1], "-c") == 0)) {
        lft_start("t_redis", 10);
        if (argv[1][1] == 'f')
            malformed();
        else
            connections();
        lft_pass();
        return 0;
    }
    if (port <= 0 || port > 65535) {
        fprintf(stderr, "usage: t_redis -p PORT [-k REDIS_PID | -r KILLFILE] | -f | -c\n");
        return 2;
    }
    lft_start("t_redis", 10);
    ops = lft_scaled(killfile ? 3000 : 10000);
    if (pid > 0)
        killed((int)port, (pid_t)pid);
    else if (killfile)
        reconnect_load((int)port, killfile);
    else
        mixed((int)port);
    lft_pass();
    return 0;
}
