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
 * that key); any failure is counted as an error and makes the exit status 1. The
 * load, its window and its line are bench/kv_load.h's, which redis_bench.c runs too:
 * this file is the three ways of making a request.
 *
 *   memc_bench -m bound|pool|mutex -p PORT [-t THREADS] [-d SECS] [-W WARM_SECS]
 *
 * Prints one line: variant, threads, rps (in the measured window, after the
 * warm-up), p50_us and p99_us (per request, from each request's start to its reply),
 * conns (the client's sockets connected to memcached's port at the end of the
 * window, counted in /proc/self/fd: what each variant really holds open), ops, errors.
 */
#include "memc.h"
#include "kv_load.h"

#include <stdio.h>

#ifdef MEMC_WITH_LIBMEMCACHED
#include <libmemcached/memcached.h>
#include <libmemcachedutil-1.0/pool.h>
#endif

enum { V_BOUND, V_POOL, V_MUTEX };
static const char *const variant_name[] = {"bound", "pool", "mutex"};

static int variant;
static memc M; /* bound */
static struct { /* mutex */
    pthread_mutex_t lock;
    int fd;
    uint32_t next_id;
} X = {PTHREAD_MUTEX_INITIALIZER, -1, 1};
#ifdef MEMC_WITH_LIBMEMCACHED
static memcached_pool_st *P; /* pool */
#endif

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

static int do_get(void *own, unsigned k, unsigned char *val, size_t *len)
{
    char key[32];
    (void)own;
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

static int do_set(void *own, unsigned k)
{
    char key[32];
    unsigned char v[VLEN];
    (void)own;
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

int main(int argc, char **argv)
{
    static const struct kv_client client = {"memc_bench", memc_strerror, do_get, do_set,
                                            NULL, NULL, NULL};

    variant = kv_options(argc, argv, variant_name, 3,
                         "usage: memc_bench -m bound|pool|mutex -p PORT [-t THREADS] "
                         "[-d SECS] [-W WARM_SECS]\n");

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

    if (kv_run(&client, variant_name[variant]) != 0)
        return 1;

    if (variant == V_BOUND) {
        memc_close(&M);
    } else if (variant == V_MUTEX) {
        close(X.fd);
    } else {
#ifdef MEMC_WITH_LIBMEMCACHED
        memcached_pool_destroy(P);
#endif
    }
    return atomic_load(&errors) ? 1 : 0;
}
