/* lf_test.h - the small helper every test shares: checks that report where they
 * failed, a watchdog that turns a hang (deadlock, lost wake-up) into a failure, and
 * the scale factor that sanitizer builds use to shorten long stress runs. */
#ifndef LF_TEST_H_INCLUDED
#define LF_TEST_H_INCLUDED

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef __cplusplus
#include <atomic>
#define LFT_ATOMIC(T) std::atomic<T>
#define lft_load(p) std::atomic_load(p)
#define lft_store(p, v) std::atomic_store((p), (v))
#define lft_add(p, v) std::atomic_fetch_add((p), (v))
#else
#include <stdatomic.h>
#define LFT_ATOMIC(T) _Atomic(T)
#define lft_load(p) atomic_load(p)
#define lft_store(p, v) atomic_store((p), (v))
#define lft_add(p, v) atomic_fetch_add((p), (v))
#endif

#define CHECK(cond)                                                                     \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);   \
            exit(1);                                                                    \
        }                                                                               \
    } while (0)

#define CHECK_EQ(a, b)                                                                  \
    do {                                                                                \
        long long lft_a_ = (long long)(a), lft_b_ = (long long)(b);                     \
        if (lft_a_ != lft_b_) {                                                         \
            fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %lld, %s == %lld\n",         \
                    __FILE__, __LINE__, #a, lft_a_, #b, lft_b_);                        \
            exit(1);                                                                    \
        }                                                                               \
    } while (0)

/* Numbered 8-byte records (native byte order) over a byte stream, split across reads
 * anywhere: the receiving side's state, and the step that takes what one read
 * returned, checks every whole record against the number expected next and says how
 * many it completed. */
struct lft_records {
    uint64_t next_in;      /* the record expected next */
    unsigned char part[8]; /* a record split across reads */
    unsigned have;
};

static inline long long lft_records_take(struct lft_records *r, const unsigned char *buf,
                                         ssize_t n)
{
    long long whole = 0;
    for (ssize_t i = 0; i < n; i++) {
        r->part[r->have++] = buf[i];
        if (r->have == 8) {
            uint64_t seq;
            memcpy(&seq, r->part, 8);
            CHECK_EQ(seq, r->next_in);
            r->next_in++;
            r->have = 0;
            whole++;
        }
    }
    return whole;
}

static LFT_ATOMIC(unsigned long long) lft_progress_count;
static const char *lft_name = "test";

/* Call from the code under test whenever it makes progress. */
static inline void lft_progress(void)
{
    lft_add(&lft_progress_count, 1ULL);
}

static inline void lft_sleep_ms(long ms)
{
    struct timespec ts;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static inline double lft_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long lft_stall_s;

/* An integer setting from the environment: dflt when unset; a value that is not a
 * whole number fails the test rather than being read as 0. */
static inline long long lft_env(const char *name, long long dflt)
{
    /* getenv races only with setenv, which no test calls */
    const char *v = getenv(name); /* NOLINT(concurrency-mt-unsafe) */
    char *end;
    long long n;
    if (v == NULL || *v == '\0')
        return dflt;
    errno = 0;
    n = strtoll(v, &end, 10);
    if (errno != 0 || *end != '\0') {
        fprintf(stderr, "%s=%s: not a whole number\n", name, v);
        exit(2);
    }
    return n;
}

static void *lft_watchdog(void *arg)
{
    unsigned long long last = lft_load(&lft_progress_count);
    long still = 0;
    (void)arg;
    for (;;) {
        lft_sleep_ms(1000);
        unsigned long long now = lft_load(&lft_progress_count);
        if (now != last) {
            last = now;
            still = 0;
        } else if (++still >= lft_stall_s) {
            fprintf(stderr, "%s: watchdog: no progress for %ld s (deadlock or lost wake-up)\n",
                    lft_name, lft_stall_s);
            fflush(stderr);
            _exit(3);
        }
    }
    return NULL;
}

/* Start the watchdog: the test fails if lft_progress() is not called for stall_s
 * seconds. LF_TEST_STALL_S overrides (sanitizer builds are slower). */
static inline void lft_start(const char *name, long stall_s)
{
    pthread_t t;
    lft_name = name;
    lft_stall_s = (long)lft_env("LF_TEST_STALL_S", stall_s);
    if (lft_stall_s <= 0)
        lft_stall_s = stall_s;
    CHECK(pthread_create(&t, NULL, lft_watchdog, NULL) == 0);
    pthread_detach(t);
}

/* Work sizes are divided by LF_TEST_SCALE (set by the sanitizer builds) and
 * multiplied by LF_TEST_MULT (set by `make stress` for long runs). */
static inline long long lft_scaled(long long n)
{
    long long s = lft_env("LF_TEST_SCALE", 1), m = lft_env("LF_TEST_MULT", 1);
    if (s < 1)
        s = 1;
    if (m < 1)
        m = 1;
    return n * m / s > 0 ? n * m / s : 1;
}

/* Poll `cond` every millisecond for up to `ms` ms; `ok` says whether it became true.
 * Waiting counts as progress for the watchdog: the bound is the caller's. */
#define WAIT_FOR(ok, cond, ms)                                                          \
    do {                                                                                \
        double wf_end_ = lft_now() + (ms) / 1000.0;                                     \
        while (!((ok) = !!(cond)) && lft_now() < wf_end_) {                             \
            lft_sleep_ms(1);                                                            \
            lft_progress();                                                             \
        }                                                                               \
    } while (0)

/* Poll until cond holds, failing with `what` after AWAIT_S seconds. The bound only
 * turns a hang into a clear failure: what is awaited is due within milliseconds. */
#define AWAIT_S 10.0
#define AWAIT(cond, what)                                                               \
    do {                                                                                \
        double aw_t0_ = lft_now();                                                      \
        while (!(cond)) {                                                               \
            if (lft_now() - aw_t0_ > AWAIT_S) {                                         \
                fprintf(stderr, "%s:%d: gave up after %.0f s waiting for: %s\n",         \
                        __FILE__, __LINE__, AWAIT_S, what);                             \
                exit(1);                                                                \
            }                                                                           \
            lft_sleep_ms(1);                                                            \
        }                                                                               \
    } while (0)

/* Join t (counts as progress) and return what it returned: its value, or
 * PTHREAD_CANCELED. */
static inline void *lft_join(pthread_t t)
{
    void *rv = NULL;
    CHECK(pthread_join(t, &rv) == 0);
    lft_progress();
    return rv;
}

/* Cancel t and join it: it must end cancelled. */
static inline void lft_cancel_join(pthread_t t)
{
    CHECK(pthread_cancel(t) == 0);
    CHECK(lft_join(t) == PTHREAD_CANCELED);
}

/* A small deterministic PRNG (xorshift64*), one state per thread. */
static inline unsigned long long lft_rand(unsigned long long *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

/* 1 if fd has something to read now (or its end), without waiting. */
static inline int lft_readable(int fd)
{
    struct pollfd p;
    p.fd = fd;
    p.events = POLLIN;
    p.revents = 0;
    return poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

/* LFT_TSAN: defined in a ThreadSanitizer build (gcc says so with a macro, clang with
 * __has_feature), for the tests that must treat TSan's own machinery specially. */
#if defined(__SANITIZE_THREAD__)
#define LFT_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define LFT_TSAN 1
#endif
#endif

static inline void lft_pass(void)
{
    printf("%s: ok\n", lft_name);
}


#ifdef LFT_TCP
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

/* A connected TCP pair on loopback (define LFT_TCP before including this file):
 * sv[0] the reactor's end (non-blocking), sv[1] the peer's (blocking; with nodelay,
 * its small writes leave at once instead of waiting for an acknowledgement). */
static inline void lft_tcp_pair(int sv[2], int nodelay)
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(l >= 0 && bind(l, (struct sockaddr *)&a, sizeof a) == 0 && listen(l, 1) == 0);
    CHECK(getsockname(l, (struct sockaddr *)&a, &len) == 0);
    sv[1] = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(sv[1] >= 0 && connect(sv[1], (struct sockaddr *)&a, sizeof a) == 0);
    if (nodelay)
        CHECK(setsockopt(sv[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) == 0);
    sv[0] = accept(l, NULL, NULL);
    CHECK(sv[0] >= 0 && fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK) == 0);
    close(l);
}
#endif

#endif
