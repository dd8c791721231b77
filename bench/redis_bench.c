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
 * that key); any failure is counted as an error and makes the exit status 1. The
 * load, its window and its line are bench/kv_load.h's, which memc_bench.c runs too:
 * this file is the three ways of making a request.
 *
 *   redis_bench -m bound|hiredis|hiredis.mutex -p PORT [-t THREADS] [-d SECS]
 *               [-W WARM_SECS]
 *
 * Prints one line: variant, threads, rps (in the measured window, after the
 * warm-up), p50_us and p99_us (per request, from each request's start to its reply),
 * conns (the client's sockets connected to Redis's port at the end of the window,
 * counted in /proc/self/fd: what each variant really holds open), ops, errors. */
#include "redis.h"
#include "kv_load.h"

#include <stdio.h>

#ifdef REDIS_WITH_HIREDIS
#include <hiredis/hiredis.h>
#endif

enum { V_BOUND, V_HIREDIS, V_HIREDIS_MUTEX };
static const char *const variant_name[] = {"bound", "hiredis", "hiredis.mutex"};

static int variant;
static redis R; /* bound */
#ifdef REDIS_WITH_HIREDIS
static struct { /* hiredis.mutex */
    pthread_mutex_t lock;
    redisContext *c;
} X = {PTHREAD_MUTEX_INITIALIZER, NULL};
#endif

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

#ifdef REDIS_WITH_HIREDIS
/* hiredis: each thread's own context */
static void *thread_open(void)
{
    return hiredis_connect();
}

static void thread_close(void *own)
{
    redisFree((redisContext *)own);
}
#endif

/* a dead connection: its thread ends, the error counted once, not in a spin */
static int dead(int rc)
{
    return rc == ECONNRESET || rc == EPIPE || rc == EPROTO;
}

int main(int argc, char **argv)
{
    struct kv_client client = {"redis_bench", redis_strerror, do_get, do_set, NULL, NULL, dead};

    variant = kv_options(argc, argv, variant_name, 3,
                         "usage: redis_bench -m bound|hiredis|hiredis.mutex -p PORT "
                         "[-t THREADS] [-d SECS] [-W WARM_SECS]\n");
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

#ifdef REDIS_WITH_HIREDIS
    if (variant == V_HIREDIS) {
        client.open = thread_open;
        client.close = thread_close;
    }
#endif
    if (kv_run(&client, variant_name[variant]) != 0)
        return 1;

    if (variant == V_BOUND)
        redis_close(&R);
#ifdef REDIS_WITH_HIREDIS
    else if (variant == V_HIREDIS_MUTEX)
        redisFree(X.c);
#endif
    return atomic_load(&errors) ? 1 : 0;
}
