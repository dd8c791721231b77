/* bench/redis_bench.c - T client threads against one redis-server, three ways:
 *
 *   -m bound          bench/redis.h: lf_bound over ONE connection in its in-order
 *                     mode. Every thread sends its command and waits; whoever leads
 *                     reads the replies and hands each to the oldest call on the
 *                     wire. Commands from many threads are in flight on the
 *                     connection at once.
 *   -m hiredis        hiredis as its users write a threaded client: a redisContext
 *                     per thread (redisConnect when the thread starts, which turns
 *                     on TCP_NODELAY), and per request redisCommand(c, "GET %s") or
 *                     redisCommand(c, "SET %s %b"), then freeReplyObject. T
 *                     threads, T connections, one command in flight on each.
 *   -m hiredis.mutex  ONE redisContext under a mutex: lock, redisCommand, unlock. One
 *                     command in flight in all.
 *   (the hiredis rows need -DREDIS_WITH_HIREDIS and -lhiredis)
 *
 * Workload (the same for each): KEYS keys of 64-byte values, stored before the run;
 * each thread loops over random keys, 90% GET and 10% SET, closed loop (its next
 * command leaves when its reply is in). Every GET is checked (64 bytes, written for
 * that key); any failure is counted as an error and makes the exit status 1.
 *
 *   redis_bench -m bound|hiredis|hiredis.mutex -p PORT [-t THREADS] [-d SECS]
 *               [-W WARM_SECS]
 *
 * Prints one line: variant, threads, rps (in the measured window, after the
 * warm-up), p50_us and p99_us (per request, from each request's start to its reply),
 * conns (the client's sockets connected to Redis's port at the end of the window,
 * counted in /proc/self/fd: what each variant really holds open), ops, errors. */
#include "redis.h"

#include <dirent.h>
#include <stdatomic.h>
#include <stdio.h>

#ifdef REDIS_WITH_HIREDIS
#include <hiredis/hiredis.h>
#endif

#define KEYS 1000
#define VLEN 64

enum { V_BOUND, V_HIREDIS, V_HIREDIS_MUTEX };
static const char *const variant_name[] = {"bound", "hiredis", "hiredis.mutex"};

static int variant, port, nthreads = 8;
static double secs = 2, warm = 0.5;
static atomic_int phase; /* 0 warm-up, 1 measuring, 2 stop */
static atomic_llong errors;

static redis R; /* bound */
#ifdef REDIS_WITH_HIREDIS
static struct { /* hiredis.mutex */
    pthread_mutex_t lock;
    redisContext *c;
} X = {PTHREAD_MUTEX_INITIALIZER, NULL};
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

/* ------------------------------------------------------------------ hiredis */

#ifdef REDIS_WITH_HIREDIS
static redisContext *hiredis_connect(void)
{
    redisContext *c = redisConnect("127.0.0.1", port);
    if (c == NULL || c->err) {
        fprintf(stderr, "redis_bench: redisConnect: %s\n", c ? c->errstr : "no memory");
        if (c)
            redisFree(c);
        return NULL;
    }
    return c;
}

/* One GET (val != NULL, *len) or SET on c: 0, or an errno like redis.h's. */
static int hiredis_call(redisContext *c, const char *key, const unsigned char *setval,
                        unsigned char *val, size_t *len)
{
    redisReply *rep;
    int rc = 0;
    if (val)
        rep = (redisReply *)redisCommand(c, "GET %s", key);
    else
        rep = (redisReply *)redisCommand(c, "SET %s %b", key, setval, (size_t)VLEN);
    if (rep == NULL)
        return c->err == REDIS_ERR_EOF ? ECONNRESET : EPROTO; /* the context is dead */
    if (rep->type == REDIS_REPLY_ERROR) {
        rc = EIO;
    } else if (val) {
        if (rep->type == REDIS_REPLY_NIL) {
            rc = ENOENT;
        } else if (rep->type != REDIS_REPLY_STRING) {
            rc = EPROTO;
        } else {
            *len = rep->len;
            if (*len <= VLEN)
                memcpy(val, rep->str, *len);
            else
                rc = EMSGSIZE;
        }
    } else if (rep->type != REDIS_REPLY_STATUS || strcmp(rep->str, "OK") != 0) {
        rc = EPROTO;
    }
    freeReplyObject(rep);
    return rc;
}
#endif

/* ------------------------------------------------------------------ one request */

static int do_get(void *own, unsigned k, unsigned char *val, size_t *len)
{
    char key[32];
    key_of(key, sizeof key, k);
    (void)own;
    switch (variant) {
    case V_BOUND:
        return redis_get(&R, key, val, VLEN, len, NULL);
#ifdef REDIS_WITH_HIREDIS
    case V_HIREDIS:
        return hiredis_call((redisContext *)own, key, NULL, val, len);
    case V_HIREDIS_MUTEX: {
        int rc;
        pthread_mutex_lock(&X.lock);
        rc = hiredis_call(X.c, key, NULL, val, len);
        pthread_mutex_unlock(&X.lock);
        return rc;
    }
#endif
    default:
        return ENOTSUP;
    }
}

static int do_set(void *own, unsigned k)
{
    char key[32];
    unsigned char v[VLEN];
    key_of(key, sizeof key, k);
    value_of(v, k);
    (void)own;
    switch (variant) {
    case V_BOUND:
        return redis_set(&R, key, v, VLEN, 0, NULL);
#ifdef REDIS_WITH_HIREDIS
    case V_HIREDIS:
        return hiredis_call((redisContext *)own, key, v, NULL, NULL);
    case V_HIREDIS_MUTEX: {
        int rc;
        pthread_mutex_lock(&X.lock);
        rc = hiredis_call(X.c, key, v, NULL, NULL);
        pthread_mutex_unlock(&X.lock);
        return rc;
    }
#endif
    default:
        return ENOTSUP;
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
    void *own = NULL; /* hiredis: this thread's own context */
    int ph;
#ifdef REDIS_WITH_HIREDIS
    if (variant == V_HIREDIS && (own = hiredis_connect()) == NULL) {
        atomic_fetch_add(&errors, 1);
        return NULL;
    }
#endif
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
            rc = do_get(own, k, val, &len);
            if (rc == 0 && !value_ok(val, len, k))
                rc = EBADMSG;
        } else {
            rc = do_set(own, k);
        }
        t1 = now_s();
        if (rc != 0) {
            if (atomic_fetch_add(&errors, 1) < 5)
                fprintf(stderr, "redis_bench: request failed: %s (%d)\n", redis_strerror(rc), rc);
            if (rc == ECONNRESET || rc == EPIPE || rc == EPROTO)
                break; /* a dead connection: counted once, not in a spin */
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
#ifdef REDIS_WITH_HIREDIS
    /* (after the count of connections: the main thread counts before phase 2) */
    if (own)
        redisFree((redisContext *)own);
#endif
    return NULL;
}

/* The client's sockets connected to Redis (the peer's port is ours to know). */
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
    fprintf(stderr, "usage: redis_bench -m bound|hiredis|hiredis.mutex -p PORT [-t THREADS] "
                    "[-d SECS] [-W WARM_SECS]\n");
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
            for (int i = 0; i < 3; i++)
                if (strcmp(optarg, variant_name[i]) == 0)
                    variant = i;
            if (variant < 0)
                usage();
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
#ifndef REDIS_WITH_HIREDIS
    if (variant != V_BOUND) {
        fprintf(stderr, "redis_bench: built without hiredis\n");
        return 1;
    }
#endif

    /* the keys, stored through a connection of our own, closed before the run */
    {
        redis pre;
        unsigned char v[VLEN];
        char key[32];
        int rc = redis_open(&pre, "127.0.0.1", port);
        if (rc != 0) {
            fprintf(stderr, "redis_bench: connect to port %d: %s\n", port, strerror(rc));
            return 1;
        }
        for (unsigned k = 0; k < KEYS; k++) {
            key_of(key, sizeof key, k);
            value_of(v, k);
            if ((rc = redis_set(&pre, key, v, VLEN, 0, NULL)) != 0) {
                fprintf(stderr, "redis_bench: preload: %s\n", redis_strerror(rc));
                return 1;
            }
        }
        redis_close(&pre);
    }

    if (variant == V_BOUND) {
        if (redis_open(&R, "127.0.0.1", port) != 0)
            return 1;
    }
#ifdef REDIS_WITH_HIREDIS
    else if (variant == V_HIREDIS_MUTEX && (X.c = hiredis_connect()) == NULL) {
        return 1;
    }
#endif

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
           variant_name[variant], nthreads, (double)total / (t1 - t0),
           total ? all[total / 2] / 1e3 : 0.0, total ? all[total * 99 / 100] / 1e3 : 0.0, conns,
           total, atomic_load(&errors));

    if (variant == V_BOUND)
        redis_close(&R);
#ifdef REDIS_WITH_HIREDIS
    else if (variant == V_HIREDIS_MUTEX)
        redisFree(X.c);
#endif
    free(all);
    free(w);
    return atomic_load(&errors) ? 1 : 0;
}
