/* bench/kv_load.h - the load bench/memc_bench.c and bench/redis_bench.c put on their
 * server, written once so that the two clients measure the same thing the same way:
 * the command line, KEYS keys of VLEN-byte values (each written for its key, so a
 * get can be checked), T threads each in a closed loop over random keys (90% get, 10%
 * set), the warm-up and the measured window, each request's latency, the client's
 * connections to the server counted in /proc/self/fd, and the one line printed. The
 * client file brings what differs: its variants, and how each makes one get and one
 * set (struct kv_client).
 *
 *   kv_options(argc, argv, names, n, usage)  -m NAME (one of names[n]: its index is
 *                                 returned), -p port, -t nthreads, -d secs, -W warm;
 *                                 prints usage and exits 2 if they do not hold
 *   kv_run(&client, name)         the threads, the warm-up, the window; prints
 *                                 "variant=NAME threads= rps= p50_us= p99_us= conns=
 *                                 ops= errors=". 0, or -1 if it could not start them
 *
 * Plain C11 and POSIX, header-only like memc.h and redis.h, so that a client copied
 * with them builds with no -I.
 */
#ifndef BENCH_KV_LOAD_H
#define BENCH_KV_LOAD_H

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define KEYS 1000
#define VLEN 64

/* the command line's values (kv_options), read by the client's connect code too */
static int port, nthreads = 8;
static double secs = 2, warm = 0.5;
static atomic_int phase; /* 0 warm-up, 1 measuring, 2 stop */
static atomic_llong errors;

struct kv_client {
    const char *prog;                 /* its messages start with it: "memc_bench" */
    const char *(*strerror)(int rc);  /* what a request's error means */
    /* one get of key k into val (VLEN bytes; its length in *len), one set of key k to
     * value_of(k): 0 or an errno. own: what open returned, else NULL */
    int (*get)(void *own, unsigned k, unsigned char *val, size_t *len);
    int (*set)(void *own, unsigned k);
    /* optional: a thread's own connection, made before its loop and closed after it
     * (after the count of connections: the main thread counts before phase 2). A
     * thread whose open fails counts an error and does nothing */
    void *(*open)(void);
    void (*close)(void *own);
    /* optional: rc left the connection dead, and the thread ends (counted once, not
     * in a spin); without it a thread goes on after any error */
    int (*dead)(int rc);
};

static const struct kv_client *kv__client;

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

static void kv__usage(const char *usage)
{
    fputs(usage, stderr);
    exit(2);
}

static int kv_options(int argc, char **argv, const char *const *names, int n, const char *usage)
{
    int variant = -1, opt;
    while ((opt = getopt(argc, argv, "m:p:t:d:W:")) != -1) {
        switch (opt) {
        case 'm':
            variant = -1;
            for (int i = 0; i < n; i++)
                if (strcmp(optarg, names[i]) == 0)
                    variant = i;
            break;
        case 'p': port = (int)strtol(optarg, NULL, 10); break;
        case 't': nthreads = (int)strtol(optarg, NULL, 10); break;
        case 'd': secs = strtod(optarg, NULL); break;
        case 'W': warm = strtod(optarg, NULL); break;
        default: kv__usage(usage);
        }
    }
    if (variant < 0 || port <= 0 || port > 65535 || nthreads < 1 || secs <= 0)
        kv__usage(usage);
    return variant;
}

struct kv__worker {
    pthread_t th;
    unsigned long long rnd;
    uint32_t *lat; /* ns per measured request */
    size_t n, cap;
};

static void *kv__worker_main(void *arg)
{
    const struct kv_client *c = kv__client;
    struct kv__worker *w = (struct kv__worker *)arg;
    unsigned char val[VLEN];
    void *own = NULL;
    int ph;
    if (c->open && (own = c->open()) == NULL) {
        atomic_fetch_add(&errors, 1);
        return NULL;
    }
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
            rc = c->get(own, k, val, &len);
            if (rc == 0 && !value_ok(val, len, k))
                rc = EBADMSG;
        } else {
            rc = c->set(own, k);
        }
        t1 = now_s();
        if (rc != 0) {
            if (atomic_fetch_add(&errors, 1) < 5)
                fprintf(stderr, "%s: request failed: %s (%d)\n", c->prog, c->strerror(rc), rc);
            if (c->dead && c->dead(rc))
                break;
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
    if (own)
        c->close(own);
    return NULL;
}

/* The client's sockets connected to the server (the peer's port is ours to know). */
static int kv__count_conns(void)
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

static int kv__cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static int kv_run(const struct kv_client *c, const char *name)
{
    struct kv__worker *w;
    uint32_t *all;
    size_t total = 0;
    double t0, t1;
    int conns;

    kv__client = c;
    if ((w = (struct kv__worker *)calloc((size_t)nthreads, sizeof *w)) == NULL)
        return -1;
    for (int i = 0; i < nthreads; i++) {
        w[i].rnd = 0x9E3779B97F4A7C15ull * (unsigned)(i + 1);
        if (pthread_create(&w[i].th, NULL, kv__worker_main, &w[i]) != 0)
            return -1;
    }
    sleep_s(warm);
    atomic_store(&phase, 1);
    t0 = now_s();
    sleep_s(secs);
    conns = kv__count_conns(); /* every variant's connections are open and busy here */
    atomic_store(&phase, 2);
    t1 = now_s();
    for (int i = 0; i < nthreads; i++) {
        pthread_join(w[i].th, NULL);
        total += w[i].n;
    }

    if ((all = (uint32_t *)malloc((total ? total : 1) * sizeof *all)) == NULL)
        return -1;
    total = 0;
    for (int i = 0; i < nthreads; i++) {
        if (w[i].n)
            memcpy(all + total, w[i].lat, w[i].n * sizeof *all);
        total += w[i].n;
        free(w[i].lat);
    }
    qsort(all, total, sizeof *all, kv__cmp_u32);
    printf("variant=%s threads=%d rps=%.0f p50_us=%.1f p99_us=%.1f conns=%d ops=%zu errors=%lld\n",
           name, nthreads, (double)total / (t1 - t0), total ? all[total / 2] / 1e3 : 0.0,
           total ? all[total * 99 / 100] / 1e3 : 0.0, conns, total, atomic_load(&errors));
    free(all);
    free(w);
    return 0;
}

#endif
