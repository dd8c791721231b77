/* bench/loadgen.c - closed-loop clients for every server in bench/ (see wire.h).
 *
 *   loadgen -p PORT [-c CONNS] [-t THREADS] [-w WORK] [-W WARMUP_S] [-d SECONDS]
 *           [-P SERVER_PID]... [-A ALLOC_FILE] [-e 1|0]
 *
 * CONNS connections, each with exactly one request outstanding (closed loop: the next
 * request leaves when the reply to the last one is in and checked). THREADS client
 * threads share the connections, each with its own epoll set. After WARMUP_S seconds
 * the measurement window opens for SECONDS seconds; then every connection's last
 * reply is awaited (5 s at most) and checked too.
 *
 * One result line on stdout:
 *   rps=  p50_us= p99_us= p999_us=  cs_per_req= cpu_us_per_req= allocs_per_req=
 *   fair= min= max= replies= errors=
 * cs and cpu are summed over every thread of every SERVER_PID (-P may be repeated, for
 * a server made of several processes; procfs: voluntary and involuntary context
 * switches, on-CPU nanoseconds from schedstat) across the window;
 * allocs come from bench/alloc_count.c preloaded into the server, which counts into
 * ALLOC_FILE. Without -P / -A those fields are -1. fair is the fewest replies any
 * connection got in the window divided by the most.
 *
 * The client's own epoll is edge-triggered (-e 1, the default; each dispatch reads to
 * EAGAIN), so it takes replies in the order they arrive and fair= measures the server.
 * -e 0 is level-triggered, as it was before: epoll puts every reported connection
 * back on its ready list, and one whose next reply comes before the next epoll_wait
 * keeps that old place, ahead of connections whose replies came earlier. The
 * connections that fall into that fast lane stay in it: against one and the same
 * server (lf one thread, 64 connections) fair= was 0.90-0.93 with -e 0 and 1.000
 * with -e 1.
 *
 * Exit status: 0 every reply was the right one and none was lost; 1 a wrong, missing
 * or late reply, or the server closed a connection (the count is in errors=); 2 set-up
 * failed (could not connect, ...).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "srv_common.h" /* wire.h, srv_connect */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "hist.h"

struct conn {
    int fd;
    uint32_t no;
    uint64_t id;           /* of the request outstanding */
    uint64_t sent_ns;
    unsigned have;         /* bytes of the reply read so far */
    int busy;              /* a request is outstanding */
    int dead;
    _Atomic uint64_t replies; /* written by the owner thread only */
    unsigned char buf[WIRE_SIZE];
};

enum { WARMUP, MEASURE, DRAIN };

static struct {
    int port, nconn, nthreads;
    int edge; /* -e: the connections' epoll mode */
    uint32_t work;
    double warmup, secs;
    struct conn *conns;
    _Atomic int phase;
    _Atomic uint64_t errors;
} G;

struct worker {
    pthread_t tid;
    int ep;
    unsigned first, step;
    struct hist hist;
    uint64_t measured;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void fail(struct conn *c, const char *why)
{
    if (!c->dead) {
        fprintf(stderr, "loadgen: connection %u: %s (request %llu)\n", c->no, why,
                (unsigned long long)c->id);
        atomic_fetch_add(&G.errors, 1);
    }
    c->dead = 1;
    c->busy = 0;
}

static void send_next(struct conn *c)
{
    unsigned char req[WIRE_SIZE];
    c->id++;
    wire_fill(req, c->id, c->no, G.work);
    c->sent_ns = now_ns();
    ssize_t n = write(c->fd, req, sizeof req);
    if (n != (ssize_t)sizeof req) {
        /* 64 bytes into an empty socket buffer cannot be short unless it failed */
        fail(c, n < 0 ? strerror(errno) : "short write");
        return;
    }
    c->busy = 1;
    c->have = 0;
}

/* Read what is there; on a whole reply check it, count it, send the next request. */
static void on_readable(struct worker *w, struct conn *c)
{
    for (;;) {
        ssize_t n = read(c->fd, c->buf + c->have, WIRE_SIZE - c->have);
        if (n == 0) {
            fail(c, "server closed the connection");
            return;
        }
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN)
                return; /* all read: edge-triggered, the next reply makes a new edge */
            fail(c, strerror(errno));
            return;
        }
        if (!c->busy) {
            fail(c, "reply nobody asked for");
            return;
        }
        c->have += (unsigned)n;
        if (c->have < WIRE_SIZE)
            continue;
        if (wire_check(c->buf, c->id, c->no) != 0) {
            fail(c, "wrong reply");
            return;
        }
        int phase = atomic_load_explicit(&G.phase, memory_order_relaxed);
        if (phase == MEASURE) {
            w->hist.n[hist_index(now_ns() - c->sent_ns)]++;
            w->measured++;
        }
        atomic_store_explicit(&c->replies, atomic_load_explicit(&c->replies,
                              memory_order_relaxed) + 1, memory_order_relaxed);
        c->busy = 0;
        if (phase == DRAIN) {
            c->have = 0; /* no next request; read on to EAGAIN, where a stray reply shows */
            continue;
        }
        send_next(c);
        if (c->dead)
            return;
    }
}

static unsigned busy_count(struct worker *w)
{
    unsigned busy = 0;
    for (unsigned i = w->first; i < (unsigned)G.nconn; i += w->step)
        busy += G.conns[i].busy && !G.conns[i].dead;
    return busy;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct epoll_event ev[64];
    for (unsigned i = w->first; i < (unsigned)G.nconn; i += w->step)
        send_next(&G.conns[i]);
    uint64_t drain_until = 0;
    for (;;) {
        if (atomic_load_explicit(&G.phase, memory_order_relaxed) == DRAIN) {
            if (drain_until == 0)
                drain_until = now_ns() + 5000000000u;
            if (busy_count(w) == 0)
                break;
            if (now_ns() > drain_until) {
                for (unsigned i = w->first; i < (unsigned)G.nconn; i += w->step)
                    if (G.conns[i].busy && !G.conns[i].dead)
                        fail(&G.conns[i], "no reply within 5 s (lost)");
                break;
            }
        }
        int n = epoll_wait(w->ep, ev, 64, 50);
        for (int i = 0; i < n; i++) {
            struct conn *c = ev[i].data.ptr;
            if (!c->dead)
                on_readable(w, c);
        }
    }
    return NULL;
}

/* --- the server's side of the window, from procfs and the allocation counter --- */

struct server_sample {
    uint64_t cpu_ns, cs, allocs;
};

static uint64_t read_u64_after(const char *path, const char *key)
{
    char line[256];
    uint64_t v = 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t klen = strlen(key);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, key, klen) == 0)
            v = strtoull(line + klen, NULL, 10);
    fclose(f);
    return v;
}

static void sample_process(int pid, struct server_sample *s)
{
    char path[128];
    snprintf(path, sizeof path, "/proc/%d/task", pid);
    DIR *d = opendir(path);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char p[300];
        snprintf(p, sizeof p, "/proc/%d/task/%s/schedstat", pid, e->d_name);
        FILE *f = fopen(p, "r");
        if (f) {
            unsigned long long ns = 0;
            if (fscanf(f, "%llu", &ns) == 1)
                s->cpu_ns += ns;
            fclose(f);
        }
        snprintf(p, sizeof p, "/proc/%d/task/%s/status", pid, e->d_name);
        s->cs += read_u64_after(p, "voluntary_ctxt_switches:");
        s->cs += read_u64_after(p, "nonvoluntary_ctxt_switches:");
    }
    closedir(d);
}

static void sample_server(const int *pids, int npids, _Atomic uint64_t *allocs,
                          struct server_sample *s)
{
    memset(s, 0, sizeof *s);
    if (allocs)
        s->allocs = atomic_load(allocs);
    for (int i = 0; i < npids; i++)
        sample_process(pids[i], s);
}

static int connect_one(int port)
{
    int fd = srv_connect(port);
    if (fd >= 0 && srv_nonblock(fd) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

int main(int argc, char **argv)
{
    int pids[8], npids = 0;
    const char *alloc_file = NULL;
    G.port = 0;
    G.nconn = 16;
    G.nthreads = 1;
    G.edge = 1;
    G.warmup = 0.5;
    G.secs = 2;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *o = argv[i], *v = argv[i + 1];
        if (!strcmp(o, "-p")) G.port = atoi(v);
        else if (!strcmp(o, "-c")) G.nconn = atoi(v);
        else if (!strcmp(o, "-t")) G.nthreads = atoi(v);
        else if (!strcmp(o, "-w")) G.work = (uint32_t)strtoul(v, NULL, 10);
        else if (!strcmp(o, "-W")) G.warmup = atof(v);
        else if (!strcmp(o, "-d")) G.secs = atof(v);
        else if (!strcmp(o, "-P") && npids < 8) pids[npids++] = atoi(v);
        else if (!strcmp(o, "-A")) alloc_file = v;
        else if (!strcmp(o, "-e")) G.edge = atoi(v) != 0;
        else {
            fprintf(stderr, "loadgen: unknown option %s\n", o);
            return 2;
        }
    }
    if (G.port <= 0 || G.nconn < 1 || G.nthreads < 1 || G.secs <= 0) {
        fprintf(stderr, "usage: loadgen -p PORT [-c CONNS] [-t THREADS] [-w WORK] "
                        "[-W WARMUP_S] [-d SECONDS] [-P PID] [-A ALLOC_FILE] [-e 1|0]\n");
        return 2;
    }
    if (G.nthreads > G.nconn)
        G.nthreads = G.nconn;

    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        rl.rlim_cur = rl.rlim_max;
        (void)setrlimit(RLIMIT_NOFILE, &rl);
    }
    _Atomic uint64_t *allocs = NULL;
    if (alloc_file) {
        int fd = open(alloc_file, O_RDONLY);
        void *p = fd < 0 ? MAP_FAILED : mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) {
            fprintf(stderr, "loadgen: %s: %s\n", alloc_file, strerror(errno));
            return 2;
        }
        close(fd);
        allocs = p;
    }

    G.conns = calloc((size_t)G.nconn, sizeof *G.conns);
    struct worker *ws = calloc((size_t)G.nthreads, sizeof *ws);
    if (!G.conns || !ws)
        return 2;
    for (int t = 0; t < G.nthreads; t++) {
        ws[t].ep = epoll_create1(EPOLL_CLOEXEC);
        ws[t].first = (unsigned)t;
        ws[t].step = (unsigned)G.nthreads;
        if (ws[t].ep < 0)
            return 2;
    }
    for (int i = 0; i < G.nconn; i++) {
        struct conn *c = &G.conns[i];
        c->no = (uint32_t)i;
        c->fd = connect_one(G.port);
        if (c->fd < 0) {
            fprintf(stderr, "loadgen: connection %d of %d: %s\n", i, G.nconn, strerror(errno));
            return 2;
        }
        struct epoll_event ev = {.events = G.edge ? EPOLLIN | EPOLLET : EPOLLIN, .data.ptr = c};
        if (epoll_ctl(ws[i % G.nthreads].ep, EPOLL_CTL_ADD, c->fd, &ev) != 0)
            return 2;
    }

    for (int t = 0; t < G.nthreads; t++)
        if (pthread_create(&ws[t].tid, NULL, worker_main, &ws[t]) != 0)
            return 2;
    sleep_s(G.warmup);

    uint64_t *start = calloc((size_t)G.nconn, sizeof *start);
    if (!start)
        return 2;
    struct server_sample s0, s1;
    sample_server(pids, npids, allocs, &s0);
    for (int i = 0; i < G.nconn; i++)
        start[i] = atomic_load_explicit(&G.conns[i].replies, memory_order_relaxed);
    uint64_t t0 = now_ns();
    atomic_store(&G.phase, MEASURE);
    sleep_s(G.secs);
    atomic_store(&G.phase, DRAIN);
    uint64_t t1 = now_ns();
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < G.nconn; i++) {
        uint64_t got = atomic_load_explicit(&G.conns[i].replies, memory_order_relaxed) - start[i];
        lo = got < lo ? got : lo;
        hi = got > hi ? got : hi;
    }
    sample_server(pids, npids, allocs, &s1);

    for (int t = 0; t < G.nthreads; t++)
        pthread_join(ws[t].tid, NULL);
    struct hist *h = calloc(1, sizeof *h);
    uint64_t total = 0;
    if (!h)
        return 2;
    for (int t = 0; t < G.nthreads; t++) {
        hist_add(h, &ws[t].hist);
        total += ws[t].measured;
    }
    double secs = (double)(t1 - t0) / 1e9;
    double req = total ? (double)total : 1;
    printf("rps=%.0f p50_us=%.1f p99_us=%.1f p999_us=%.1f", (double)total / secs,
           (double)hist_pct(h, total, 0.50) / 1e3, (double)hist_pct(h, total, 0.99) / 1e3,
           (double)hist_pct(h, total, 0.999) / 1e3);
    if (npids > 0)
        printf(" cs_per_req=%.3f cpu_us_per_req=%.2f", (double)(s1.cs - s0.cs) / req,
               (double)(s1.cpu_ns - s0.cpu_ns) / 1e3 / req);
    else
        printf(" cs_per_req=-1 cpu_us_per_req=-1");
    if (allocs)
        printf(" allocs_per_req=%.3f", (double)(s1.allocs - s0.allocs) / req);
    else
        printf(" allocs_per_req=-1");
    printf(" fair=%.3f min=%llu max=%llu replies=%llu errors=%llu\n",
           hi ? (double)lo / (double)hi : 0.0, (unsigned long long)lo,
           (unsigned long long)hi, (unsigned long long)total,
           (unsigned long long)atomic_load(&G.errors));
    /* Reset rather than close: an orderly close would leave every one of our ports in
     * TIME_WAIT for a minute, and the scaling rows open tens of thousands of them. */
    struct linger hard = {1, 0};
    for (int i = 0; i < G.nconn; i++) {
        (void)setsockopt(G.conns[i].fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
        close(G.conns[i].fd);
    }
    return atomic_load(&G.errors) ? 1 : 0;
}
