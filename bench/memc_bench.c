/* bench/memc_bench.c - T client threads against one memcached, three ways:
 *
 *   -m bound   bench/memc.h: lf_bound over ONE connection. Every thread sends its
 *              request and waits; whoever leads reads the replies and hands each to
 *              its thread (opaque = request id). Requests from many threads are in
 *              flight on the connection at once.
 *   -m pool    libmemcached's memcached_pool, as its documentation uses it: one
 *              pool made from an option string (--BINARY-PROTOCOL, --TCP-NODELAY,
 *              POOL-MIN = POOL-MAX = T), and per request memcached_pool_fetch, then
 *              memcached_get or memcached_set, then memcached_pool_release. Each
 *              memcached_st holds its own connection: T threads, T connections,
 *              one request in flight on each. (Built with -DMEMC_WITH_LIBMEMCACHED.)
 *   -m mutex   ONE connection under a mutex: lock, write the request, read its
 *              reply, unlock (blocking I/O, the same wire code as memc.h). One
 *              request in flight in all.
 *
 * Workload (the same for each): KEYS keys of 64-byte values, stored before the run;
 * each thread loops over random keys, 90% get and 10% set, closed loop (its next
 * request leaves when its reply is in). Every get is checked (64 bytes, written for
 * that key); any failure is counted as an error and makes the exit status 1.
 *
 *   memc_bench -m bound|pool|mutex -p PORT [-t THREADS] [-d SECS] [-W WARM_SECS]
 *
 * Prints one line: variant, threads, rps (in the measured window, after the
 * warm-up), p50_us and p99_us (per request, from each request's start to its reply),
 * conns (the client's sockets connected to memcached's port at the end of the
 * window, counted in /proc/self/fd: what each variant really holds open), ops, errors.
 */
#include "memc.h"

#include <dirent.h>
#include <stdio.h>

#ifdef MEMC_WITH_LIBMEMCACHED
#include <libmemcached/memcached.h>
#include <libmemcachedutil-1.0/pool.h>
#endif

#define KEYS 1000
#define VLEN 64

enum { V_BOUND, V_POOL, V_MUTEX };

static int variant, port, nthreads = 8;
static double secs = 2, warm = 0.5;
static atomic_int phase; /* 0 warm-up, 1 measuring, 2 stop */
static atomic_llong errors;

static memc M; /* bound */
static struct { /* mutex */
    pthread_mutex_t lock;
    int fd;
    uint32_t next_id;
} X = {PTHREAD_MUTEX_INITIALIZER, -1, 1};
#ifdef MEMC_WITH_LIBMEMCACHED
static memcached_pool_st *P; /* pool */
#endif

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_s(double s)
{
    struct timespec ts;
    ts.tv_sec = (time_t)s;
    ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void key_of(char *key, size_t cap, unsigned k)
{
    snprintf(key, cap, "bench:%u", k);
}

/* the value stored under key k: its number, then filler (any writer writes the same) */
static void value_of(unsigned char *v, unsigned k)
{
    memset(v, 'v', VLEN);
    snprintf((char *)v, VLEN, "%u:", k);
}

static int value_ok(const unsigned char *v, size_t len, unsigned k)
{
    unsigned char want[VLEN];
    value_of(want, k);
    return len == VLEN && memcmp(v, want, VLEN) == 0;
}

/* ------------------------------------------------------------------ mutex variant */

static int write_all(int fd, const unsigned char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return EPIPE;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int read_all(int fd, unsigned char *p, size_t n)
{
    while (n) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return ECONNRESET;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

/* One request and its reply with the connection held: get (val != NULL, *len) or set. */
static int mutex_call(unsigned opcode, const char *key, const unsigned char *setval,
                      unsigned char *val, size_t *len)
{
    unsigned char req[MEMC_HDR + 8 + MEMC_KEY_MAX + VLEN], hdr[MEMC_HDR], body[512];
    unsigned char extras[8] = {0};
    size_t klen = strlen(key), elen = opcode == MEMC_OP_SET ? 8 : 0;
    size_t vlen = opcode == MEMC_OP_SET ? VLEN : 0, total, skip;
    int rc;

    pthread_mutex_lock(&X.lock);
    memc_encode(req, opcode, X.next_id, extras, elen, key, klen, setval, vlen);
    rc = write_all(X.fd, req, memc_request_len(elen, klen, vlen));
    if (rc == 0)
        rc = read_all(X.fd, hdr, MEMC_HDR);
    total = rc == 0 ? memc_get32(hdr + 8) : 0;
    if (rc == 0 && (hdr[0] != MEMC_RESPONSE || memc_get32(hdr + 12) != X.next_id ||
                    total > sizeof body))
        rc = EPROTO;
    if (rc == 0)
        rc = read_all(X.fd, body, total);
    X.next_id++;
    pthread_mutex_unlock(&X.lock);
    if (rc != 0)
        return rc;
    if ((rc = memc_status_errno(memc_get16(hdr + 6))) != 0)
        return rc;
    if (val) {
        skip = (size_t)hdr[4] + memc_get16(hdr + 2); /* extras and key */
        *len = total - skip;
        if (*len > VLEN)
            return EMSGSIZE;
        memcpy(val, body + skip, *len);
    }
    return 0;
}

/* ------------------------------------------------------------------ one request */

static int do_get(unsigned k, unsigned char *val, size_t *len)
{
    char key[32];
    key_of(key, sizeof key, k);
    switch (variant) {
    case V_BOUND:
        return memc_get(&M, key, val, VLEN, len, NULL, NULL);
    case V_MUTEX:
        return mutex_call(MEMC_OP_GET, key, NULL, val, len);
    default: {
#ifdef MEMC_WITH_LIBMEMCACHED
        struct timespec wait = {5, 0};
        memcached_return_t mrc;
        uint32_t flags;
        char *v;
        memcached_st *mc = memcached_pool_fetch(P, &wait, &mrc);
        if (mc == NULL)
            return EAGAIN;
        v = memcached_get(mc, key, strlen(key), len, &flags, &mrc);
        memcached_pool_release(P, mc);
        if (v == NULL)
            return mrc == MEMCACHED_NOTFOUND ? ENOENT : EIO;
        if (*len <= VLEN)
            memcpy(val, v, *len);
        free(v);
        return *len <= VLEN ? 0 : EMSGSIZE;
#else
        return ENOTSUP;
#endif
    }
    }
}

static int do_set(unsigned k)
{
    char key[32];
    unsigned char v[VLEN];
    key_of(key, sizeof key, k);
    value_of(v, k);
    switch (variant) {
    case V_BOUND:
        return memc_set(&M, key, v, VLEN, 0, 0, NULL);
    case V_MUTEX:
        return mutex_call(MEMC_OP_SET, key, v, NULL, NULL);
    default: {
#ifdef MEMC_WITH_LIBMEMCACHED
        struct timespec wait = {5, 0};
        memcached_return_t mrc;
        memcached_st *mc = memcached_pool_fetch(P, &wait, &mrc);
        if (mc == NULL)
            return EAGAIN;
        mrc = memcached_set(mc, key, strlen(key), (const char *)v, VLEN, 0, 0);
        memcached_pool_release(P, mc);
        return memcached_success(mrc) ? 0 : EIO;
#else
        return ENOTSUP;
#endif
    }
    }
}

/* ------------------------------------------------------------------ the threads */

struct worker {
    pthread_t th;
    unsigned long long rnd;
    uint32_t *lat; /* ns per measured request */
    size_t n, cap;
};

static void *worker_main(void *arg)
{
    struct worker *w = (struct worker *)arg;
    unsigned char val[VLEN];
    int ph;
    while ((ph = atomic_load(&phase)) != 2) {
        unsigned r, k;
        size_t len = 0;
        double t0, t1;
        int rc;
        w->rnd ^= w->rnd << 13;
        w->rnd ^= w->rnd >> 7;
        w->rnd ^= w->rnd << 17;
        r = (unsigned)(w->rnd % 100);
        k = (unsigned)((w->rnd >> 8) % KEYS);
        t0 = now_s();
        if (r < 90) {
            rc = do_get(k, val, &len);
            if (rc == 0 && !value_ok(val, len, k))
                rc = EBADMSG;
        } else {
            rc = do_set(k);
        }
        t1 = now_s();
        if (rc != 0) {
            if (atomic_fetch_add(&errors, 1) < 5)
                fprintf(stderr, "memc_bench: request failed: %s (%d)\n", memc_strerror(rc), rc);
            continue;
        }
        if (ph == 1 && atomic_load(&phase) == 1) {
            if (w->n == w->cap) {
                w->cap = w->cap ? 2 * w->cap : 65536;
                if ((w->lat = (uint32_t *)realloc(w->lat, w->cap * sizeof *w->lat)) == NULL)
                    abort();
            }
            w->lat[w->n++] = (uint32_t)((t1 - t0) * 1e9);
        }
    }
    return NULL;
}

/* The client's sockets connected to memcached (the peer's port is ours to know). */
static int count_conns(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int n = 0;
    if (d == NULL)
        return -1;
    while ((e = readdir(d)) != NULL) {
        struct sockaddr_in a;
        socklen_t alen = sizeof a;
        int fd = atoi(e->d_name);
        if (e->d_name[0] == '.' || fd == dirfd(d))
            continue;
        if (getpeername(fd, (struct sockaddr *)&a, &alen) == 0 && a.sin_family == AF_INET &&
            ntohs(a.sin_port) == port)
            n++;
    }
    closedir(d);
    return n;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static void usage(void)
{
    fprintf(stderr, "usage: memc_bench -m bound|pool|mutex -p PORT [-t THREADS] [-d SECS] "
                    "[-W WARM_SECS]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    struct worker *w;
    uint32_t *all;
    size_t total = 0;
    double t0, t1;
    int conns, opt;

    variant = -1;
    while ((opt = getopt(argc, argv, "m:p:t:d:W:")) != -1) {
        switch (opt) {
        case 'm':
            variant = strcmp(optarg, "bound") == 0   ? V_BOUND
                      : strcmp(optarg, "pool") == 0  ? V_POOL
                      : strcmp(optarg, "mutex") == 0 ? V_MUTEX
                                                     : -1;
            break;
        case 'p': port = (int)strtol(optarg, NULL, 10); break;
        case 't': nthreads = (int)strtol(optarg, NULL, 10); break;
        case 'd': secs = strtod(optarg, NULL); break;
        case 'W': warm = strtod(optarg, NULL); break;
        default: usage();
        }
    }
    if (variant < 0 || port <= 0 || port > 65535 || nthreads < 1 || secs <= 0)
        usage();

    /* the keys, stored through a connection of our own, closed before the run */
    {
        memc pre;
        unsigned char v[VLEN];
        char key[32];
        int rc = memc_open(&pre, "127.0.0.1", port);
        if (rc != 0) {
            fprintf(stderr, "memc_bench: connect to port %d: %s\n", port, strerror(rc));
            return 1;
        }
        for (unsigned k = 0; k < KEYS; k++) {
            key_of(key, sizeof key, k);
            value_of(v, k);
            if ((rc = memc_set(&pre, key, v, VLEN, 0, 0, NULL)) != 0) {
                fprintf(stderr, "memc_bench: preload: %s\n", memc_strerror(rc));
                return 1;
            }
        }
        memc_close(&pre);
    }

    if (variant == V_BOUND) {
        if (memc_open(&M, "127.0.0.1", port) != 0)
            return 1;
    } else if (variant == V_MUTEX) {
        struct sockaddr_in a;
        int one = 1;
        memset(&a, 0, sizeof a);
        a.sin_family = AF_INET;
        a.sin_port = htons((uint16_t)port);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if ((X.fd = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
            connect(X.fd, (struct sockaddr *)&a, sizeof a) != 0)
            return 1;
        (void)setsockopt(X.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    } else {
#ifdef MEMC_WITH_LIBMEMCACHED
        char conf[256];
        snprintf(conf, sizeof conf,
                 "--SERVER=127.0.0.1:%d --BINARY-PROTOCOL --TCP-NODELAY --POOL-MIN=%d --POOL-MAX=%d",
                 port, nthreads, nthreads);
        if ((P = memcached_pool(conf, strlen(conf))) == NULL) {
            fprintf(stderr, "memc_bench: memcached_pool(%s) failed\n", conf);
            return 1;
        }
#else
        fprintf(stderr, "memc_bench: built without libmemcached\n");
        return 1;
#endif
    }

    if ((w = (struct worker *)calloc((size_t)nthreads, sizeof *w)) == NULL)
        return 1;
    for (int i = 0; i < nthreads; i++) {
        w[i].rnd = 0x9E3779B97F4A7C15ull * (unsigned)(i + 1);
        if (pthread_create(&w[i].th, NULL, worker_main, &w[i]) != 0)
            return 1;
    }
    sleep_s(warm);
    atomic_store(&phase, 1);
    t0 = now_s();
    sleep_s(secs);
    conns = count_conns(); /* every variant's connections are open and busy here */
    atomic_store(&phase, 2);
    t1 = now_s();
    for (int i = 0; i < nthreads; i++) {
        pthread_join(w[i].th, NULL);
        total += w[i].n;
    }

    if ((all = (uint32_t *)malloc((total ? total : 1) * sizeof *all)) == NULL)
        return 1;
    total = 0;
    for (int i = 0; i < nthreads; i++) {
        if (w[i].n)
            memcpy(all + total, w[i].lat, w[i].n * sizeof *all);
        total += w[i].n;
        free(w[i].lat);
    }
    qsort(all, total, sizeof *all, cmp_u32);
    printf("variant=%s threads=%d rps=%.0f p50_us=%.1f p99_us=%.1f conns=%d ops=%zu errors=%lld\n",
           variant == V_BOUND ? "bound" : variant == V_POOL ? "pool" : "mutex", nthreads,
           (double)total / (t1 - t0), total ? all[total / 2] / 1e3 : 0.0,
           total ? all[total * 99 / 100] / 1e3 : 0.0, conns, total, atomic_load(&errors));

    if (variant == V_BOUND) {
        memc_close(&M);
    } else if (variant == V_MUTEX) {
        close(X.fd);
    } else {
#ifdef MEMC_WITH_LIBMEMCACHED
        memcached_pool_destroy(P);
#endif
    }
    free(all);
    free(w);
    return atomic_load(&errors) ? 1 : 0;
}
