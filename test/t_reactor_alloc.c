/* No heap allocation per dispatched event: once everything that is allocated lazily
 * exists, a reactor in steady state (I/O, periodic and re-armed one-shot timers,
 * notifications from a foreign thread, handlers that resume themselves early)
 * dispatches 100000 events without a single malloc, calloc, realloc or free.
 *
 * The test replaces the allocator entry points in this executable (ELF symbol
 * interposition: liburcu's and libc's own internal calls land here too) and forwards
 * them to glibc's __libc_* functions, counting each call. Before trusting the count
 * it proves the interposition is live, including for calls made inside libc.
 *
 * Plain builds only: the sanitizers own malloc (the Makefile does not build this
 * test with them; if it is built so anyway, it says so and skips). */
#include "../lf_reactor.h"
#include "lf_test.h"

#include <sys/socket.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define SANITIZED 1
#endif
#endif

#ifndef SANITIZED
/* ------------------------------------------------------------ counting allocator
 * Not static: an object this file's malloc touches must be one the compiler cannot
 * assume private to the file (libc declares malloc "leaf"). */
LFT_ATOMIC(unsigned long long) alloc_calls, free_calls;

/* glibc's own allocator, which ours forwards to: reserved names, on purpose.
 * NOLINTBEGIN(bugprone-reserved-identifier) */
void *__libc_malloc(size_t n);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t n);
void *__libc_memalign(size_t align, size_t n);
void __libc_free(void *p);
/* NOLINTEND(bugprone-reserved-identifier) */
void *memalign(size_t align, size_t n);

void *malloc(size_t n)
{
    lft_add(&alloc_calls, 1ULL);
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
    lft_add(&alloc_calls, 1ULL);
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
    lft_add(&alloc_calls, 1ULL);
    return __libc_realloc(p, n);
}

void free(void *p)
{
    if (p)
        lft_add(&free_calls, 1ULL);
    __libc_free(p);
}

/* the aligned variants too, so no allocation path escapes the count */
void *memalign(size_t align, size_t n)
{
    lft_add(&alloc_calls, 1ULL);
    return __libc_memalign(align, n);
}

void *aligned_alloc(size_t align, size_t n)
{
    lft_add(&alloc_calls, 1ULL);
    return __libc_memalign(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
    void *p;
    if (align < sizeof(void *) || (align & (align - 1)) != 0)
        return EINVAL;
    lft_add(&alloc_calls, 1ULL);
    if ((p = __libc_memalign(align, n)) == NULL)
        return ENOMEM;
    *out = p;
    return 0;
}

/* ------------------------------------------------------------ the reactor load */

#define NPAIRS 16
#define NH (2 * NPAIRS) /* both ends of every socketpair are registered */
#define TOKENS 4        /* bytes in flight each way on each pair */
#define WARMUP 20000
#define MEASURED 100000

struct hd {
    lf_handler h;
    int idx;
    lf_timer periodic; /* idx % 4 == 0 */
    lf_timer oneshot;  /* idx % 4 == 2: re-armed by the handler on every expiry */
};

static lf_reactor r;
static struct hd hs[NH];
static LFT_ATOMIC(unsigned long long) n_dispatch, n_io, n_timer, n_notify, n_closed;
static LFT_ATOMIC(int) notifier_stop;

/* Every kind of work the steady state has: an I/O event moves a token (read one
 * byte, send it back to the other end, whose handler does the same), a timer expiry
 * may re-arm a timer, a notification is counted; a quarter of the handlers end their
 * exclusive hold early with lf_reactor_reactivate + LF_RESUMED. */
static int on_event(lf_handler *lh, int fd, uint32_t ev)
{
    struct hd *c = (struct hd *)(void *)lh;

    CHECK((ev & ~(LF_EV_READ | LF_EV_TIMEOUT | LF_EV_NOTIFY)) == 0);
    if (ev & LF_EV_READ) {
        char b;
        /* readiness may be reported twice for one byte (an event that came while we
         * were busy, and the re-arm after), so the second read finds nothing: the
         * token is passed on only when one was really read */
        ssize_t n = read(fd, &b, 1);
        if (n == 1) {
            CHECK_EQ(write(fd, &b, 1), 1);
            lft_add(&n_io, 1ULL);
        } else {
            CHECK(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
        }
    }
    if (ev & LF_EV_TIMEOUT) {
        lft_add(&n_timer, 1ULL);
        if (c->idx % 4 == 2) { /* timer_start from inside a handler is steady-state work */
            int rc = lf_reactor_timer_start(&r, &c->oneshot, lh, 300000, 0);
            /* ECANCELED only once main has begun to stop the reactor */
            CHECK(rc == 0 || (rc == ECANCELED && lft_load(&notifier_stop)));
        }
    }
    if (ev & LF_EV_NOTIFY)
        lft_add(&n_notify, 1ULL);
    lft_add(&n_dispatch, 1ULL);
    lft_progress();
    if (c->idx % 4 == 1) {
        /* counted above: after this call another thread may already run c */
        CHECK_EQ(lf_reactor_reactivate(&r, lh), 0);
        return LF_RESUMED;
    }
    return LF_KEEP;
}

static void on_close(lf_handler *lh)
{
    (void)lh;
    lft_add(&n_closed, 1ULL);
}

static void *runner(void *arg)
{
    (void)arg;
    CHECK_EQ(lf_reactor_run(&r, NULL), ECANCELED);
    return NULL;
}

/* A foreign thread: posts to every handler, then naps (it registers with RCU lazily
 * on its first call, during the warm-up). */
static void *notifier(void *arg)
{
    (void)arg;
    while (!lft_load(&notifier_stop)) {
        for (int i = 0; i < NH; i++)
            CHECK_EQ(lf_reactor_notify(&r, &hs[i].h, LF_EV_NOTIFY), 0);
        lft_sleep_ms(1);
    }
    return NULL;
}

int main(void)
{
    pthread_t run[2], nt;
    unsigned long long a0, f0, allocs, frees, d0, io0, t0, nf0, d, io, t, nf;
    char *volatile probe;
    double start, secs;

    lft_start("t_reactor_alloc", 30);

    /* the interposition is live, also for calls libc makes internally (strdup calls
     * malloc inside libc): otherwise a 0 below would prove nothing */
    a0 = lft_load(&alloc_calls);
    f0 = lft_load(&free_calls);
    probe = strdup("probe");
    CHECK(probe != NULL);
    CHECK(lft_load(&alloc_calls) > a0);
    free(probe);
    CHECK(lft_load(&free_calls) > f0);

    CHECK_EQ(lf_reactor_init(&r), 0);
    for (int p = 0; p < NPAIRS; p++) {
        int sv[2];
        CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
        for (int k = 0; k < 2; k++) {
            struct hd *c = &hs[2 * p + k];
            CHECK(fcntl(sv[k], F_SETFL, fcntl(sv[k], F_GETFL) | O_NONBLOCK) == 0);
            CHECK_EQ(write(sv[k], "tttt", TOKENS), TOKENS);
            c->idx = 2 * p + k;
            c->h.handle_event = on_event;
            c->h.handle_close = on_close;
            lf_timer_init(&c->periodic);
            lf_timer_init(&c->oneshot);
            CHECK_EQ(lf_reactor_register(&r, &c->h, sv[k], LF_EV_READ), 0);
        }
    }
    for (int i = 0; i < NH; i++) {
        if (i % 4 == 0)
            CHECK_EQ(lf_reactor_timer_start(&r, &hs[i].periodic, &hs[i].h, 1000000, 1000000), 0);
        else if (i % 4 == 2)
            CHECK_EQ(lf_reactor_timer_start(&r, &hs[i].oneshot, &hs[i].h, 300000, 0), 0);
    }
    /* every thread exists before the count starts: creating one allocates */
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&run[i], NULL, runner, NULL) == 0);
    CHECK(pthread_create(&nt, NULL, notifier, NULL) == 0);

    /* warm-up: every path has run at least a few times */
    while (lft_load(&n_dispatch) < WARMUP || lft_load(&n_timer) < 100 ||
           lft_load(&n_notify) < 100 || lft_load(&n_io) < WARMUP / 2)
        lft_sleep_ms(5);

    /* steady state: from here on nothing may allocate (this thread only sleeps and
     * reads counters until the phase ends) */
    lft_store(&alloc_calls, 0ULL);
    lft_store(&free_calls, 0ULL);
    d0 = lft_load(&n_dispatch);
    io0 = lft_load(&n_io);
    t0 = lft_load(&n_timer);
    nf0 = lft_load(&n_notify);
    start = lft_now();
    do {
        lft_sleep_ms(5);
        d = lft_load(&n_dispatch) - d0;
        io = lft_load(&n_io) - io0;
        t = lft_load(&n_timer) - t0;
        nf = lft_load(&n_notify) - nf0;
    } while (d < MEASURED || io < MEASURED / 2 || t < 100 || nf < 100);
    allocs = lft_load(&alloc_calls);
    frees = lft_load(&free_calls);
    secs = lft_now() - start;

    lft_store(&notifier_stop, 1);
    CHECK(pthread_join(nt, NULL) == 0);
    CHECK_EQ(lf_reactor_stop(&r), 0);
    for (int i = 0; i < 2; i++)
        CHECK(pthread_join(run[i], NULL) == 0);
    CHECK_EQ(lf_reactor_destroy(&r), 0); /* closes both ends of every pair */
    CHECK_EQ(lft_load(&n_closed), NH);

    if (allocs || frees)
        fprintf(stderr, "t_reactor_alloc: %llu allocations and %llu frees in %llu dispatches\n",
                allocs, frees, d);
    CHECK_EQ(allocs, 0);
    CHECK_EQ(frees, 0);
    printf("t_reactor_alloc %s/%s: %llu allocations, %llu frees in %llu dispatches "
           "(io %llu, timer %llu, notify %llu) in %.2f s\n",
           lf_promote_name(), lf_reactor_backend_name(), allocs, frees, d, io, t, nf, secs);
    return 0;
}

#else /* SANITIZED */

int main(void)
{
    printf("t_reactor_alloc: skipped (sanitizer build: the sanitizer owns malloc)\n");
    return 0;
}

#endif
