/* lft_client.h - what t_memcached.c and t_redis.c share (after lf_test.h and the
 * client's header): both test a client of bench/ whose threads share one connection
 * to a real server, and both check it the same way. Here: the values' mixing and the
 * shared keys' self-describing values; descriptors, deadlines and files; the threads
 * woken by the server's death (part 2 of both); the loopback sockets and the poll
 * loop of a fake server, which each test completes with its own protocol. What the
 * two do differently (the protocols, the calls, the models) stays in each test. */
#ifndef LFT_CLIENT_H_INCLUDED
#define LFT_CLIENT_H_INCLUDED

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/types.h>

static inline uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
}

static inline void put32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static inline uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* ------------------------------------------------------------------ shared keys */

/* 16 bytes saying what the value is (key, writer, sequence, length, checksum), then
 * bytes derived from them: whatever thread wrote it last, a get can check it whole. */
static inline size_t shared_make(unsigned char *v, int key, int writer, unsigned seq)
{
    size_t len = 16 + (size_t)(mix((uint64_t)writer << 32 | seq) % 200);
    uint32_t sum = 0;
    for (size_t i = 16; i < len; i++) {
        v[i] = (unsigned char)(writer * 7 + seq * 13 + i);
        sum = sum * 31 + v[i];
    }
    put32(v, (uint32_t)key);
    put32(v + 4, (uint32_t)writer << 24 | seq);
    put32(v + 8, (uint32_t)len);
    put32(v + 12, sum);
    return len;
}

/* Checks a value read from a shared key; returns its writer << 24 | sequence. */
static inline uint32_t shared_check(const unsigned char *v, size_t len, int key)
{
    uint32_t sum = 0, ws = get32(v + 4);
    CHECK(len >= 16);
    CHECK_EQ(get32(v), key);     /* a value written for this key */
    CHECK_EQ(get32(v + 8), len); /* whole */
    for (size_t i = 16; i < len; i++) {
        CHECK_EQ(v[i], (unsigned char)((ws >> 24) * 7 + (ws & 0xffffff) * 13 + i));
        sum = sum * 31 + v[i];
    }
    CHECK_EQ(sum, get32(v + 12));
    return ws;
}

/* ------------------------------------------------------------------ helpers */

/* Descriptors open in this process (Linux: /proc/self/fd, less the one reading it). */
static inline int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int n = 0;
    CHECK(d != NULL);
    /* one thread reads its own DIR: readdir's shared state is per stream */
    // cppcheck-suppress readdirCalled ; per stream, and this stream is ours alone
    while ((e = readdir(d)) != NULL) // NOLINT(concurrency-mt-unsafe)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n - 1;
}

static inline struct timespec in_ms(long ms)
{
    struct timespec d;
    CHECK_EQ(lf_deadline_in(&d, ms * 1000000LL), 0);
    return d;
}

static inline void touch(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    CHECK(fd >= 0);
    close(fd);
}

/* A connection error, as the RESULTS tables say a server's death shows: the read
 * side ended (ECONNRESET) or the write side broke first (EPIPE). */
static inline int conn_error(int rc)
{
    return rc == ECONNRESET || rc == EPIPE;
}

/* ------------------------------------------------------------------ the server killed
 * Part 2: threads make calls without deadlines until the server is killed; each
 * notes how its call woke (victim_woke), and victims_all_woke checks, once they are
 * joined, that every one did, soon after the kill (victims_kill). */

static LFT_ATOMIC(long long) done_ok;
static LFT_ATOMIC(int) woke_reset, woke_pipe;
static double t_kill, last_woke;
static pthread_mutex_t woke_lock = PTHREAD_MUTEX_INITIALIZER;

/* Thread t's call woke with rc (what: its error's words): the documented ECONNRESET,
 * or EPIPE for a send that found the connection broken. */
static inline void victim_woke(int t, int rc, const char *what)
{
    pthread_mutex_lock(&woke_lock);
    if (lft_now() > last_woke)
        last_woke = lft_now();
    pthread_mutex_unlock(&woke_lock);
    if (rc != ECONNRESET && rc != EPIPE)
        fprintf(stderr, "victim %d: woke with %d (%s)\n", t, rc, what);
    CHECK(rc == ECONNRESET || rc == EPIPE);
    lft_add(rc == ECONNRESET ? &woke_reset : &woke_pipe, 1);
}

static inline void victims_kill(pid_t pid)
{
    t_kill = lft_now();
    CHECK(kill(pid, SIGKILL) == 0);
}

/* All threads woke, the last within 5 s of the kill; the test's line (test: its name,
 * server: the server's, in_flight: the calls in flight before the kill). */
static inline void victims_all_woke(const char *test, const char *server, int threads,
                                    unsigned in_flight)
{
    CHECK_EQ(lft_load(&woke_reset) + lft_load(&woke_pipe), threads);
    CHECK(last_woke - t_kill < 5.0);
    printf("%s: %s killed after %lld calls, %u in flight: all %d threads woke (%d "
           "ECONNRESET, %d EPIPE), the last %.1f ms after the kill\n",
           test, server, lft_load(&done_ok), in_flight, threads, lft_load(&woke_reset),
           lft_load(&woke_pipe), (last_woke - t_kill) * 1000.0);
}

/* ------------------------------------------------------------------ a fake server */

/* A loopback listener (backlog: listen's, or none for -1), its port in *port. */
static inline int listener(int backlog, int *port)
{
    struct sockaddr_in a;
    socklen_t alen = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    CHECK(fd >= 0);
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(bind(fd, (struct sockaddr *)&a, sizeof a) == 0);
    if (backlog >= 0)
        CHECK(listen(fd, backlog) == 0);
    CHECK(getsockname(fd, (struct sockaddr *)&a, &alen) == 0);
    *port = ntohs(a.sin_port);
    return fd;
}

/* A plain blocking connect to 127.0.0.1:port (fills a listener's queue). */
static inline int plain_connect(int port)
{
    struct sockaddr_in a;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(fd >= 0);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(connect(fd, (struct sockaddr *)&a, sizeof a) == 0);
    return fd;
}

/* The fake server of a test's connection checks: one thread (fk_loop) polls the
 * listener fk_listen and up to 16 connections, and hands each connection with
 * something to read to the test's own code, which answers in its protocol. Paused
 * (fk_paused), it accepts nobody: with a backlog of 0 and one connection queued, the
 * kernel then drops new SYNs, and a connect hangs (until unpaused and the SYN is sent
 * again, about 1 s later). fk_mutes is for the test's code: requests it read and
 * never answers. */
static int fk_listen, fk_port;
static LFT_ATOMIC(int) fk_paused, fk_stop, fk_accepted, fk_mutes;

/* One connection: its bytes not yet parsed, for a protocol whose requests the test
 * reads as they come (buf and have are the test's code's, and start empty). */
struct fk_conn {
    int fd;
    size_t have;
    char buf[4096];
};

/* Until fk_stop: serve(c) for each connection c with something to read, or closed
 * by its peer; it returns 0 to keep c, -1 to have it closed. */
static inline void fk_loop(int (*serve)(struct fk_conn *c))
{
    struct pollfd p[17];
    static struct fk_conn conns[17];
    int n = 1;
    p[0].fd = fk_listen;
    while (!lft_load(&fk_stop)) {
        p[0].events = lft_load(&fk_paused) ? 0 : POLLIN;
        for (int i = 0; i < n; i++)
            p[i].revents = 0;
        for (int i = 1; i < n; i++)
            p[i].events = POLLIN;
        if (poll(p, (nfds_t)n, 10) <= 0)
            continue;
        if ((p[0].revents & POLLIN) && n < 17) {
            int fd = accept(fk_listen, NULL, NULL), one = 1;
            if (fd >= 0) {
                (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                p[n].fd = fd;
                conns[n].fd = fd;
                conns[n].have = 0;
                n++;
                lft_add(&fk_accepted, 1);
            }
        }
        for (int i = 1; i < n; i++) {
            if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            if (serve(&conns[i]) == 0)
                continue;
            close(p[i].fd);
            p[i] = p[n - 1];
            conns[i] = conns[n - 1];
            n--;
            i--;
        }
    }
    for (int i = 1; i < n; i++)
        close(p[i].fd);
}

/* Pause the fake server and take its one backlog place with a plain connection, so
 * that a connect to it hangs. Returns the queued socket. */
static inline int fk_pause_full(void)
{
    lft_store(&fk_paused, 1);
    lft_sleep_ms(30); /* (the fake's poll no longer includes the listener) */
    return plain_connect(fk_port);
}

#endif
