/* bench/srv_common.h - what every benchmark server does the same way: its command
 * line, its listening socket and its descriptor limit (see wire.h for the contract).
 * Plain C that also compiles as C++ (the ACE and asio servers include it).
 */
#ifndef BENCH_SRV_COMMON_H
#define BENCH_SRV_COMMON_H

#include "wire.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

struct srv_args {
    int port;    /* -p, 0: any */
    int threads; /* -t */
    int flags;   /* -f, the server's own (srv_lf: 1 = LF_REACTOR_CONCURRENT) */
};

static inline void srv_die(const char *what)
{
    fprintf(stderr, "%s: %s\n", what, strerror(errno));
    exit(2);
}

static inline struct srv_args srv_parse(int argc, char **argv, int default_threads)
{
    struct srv_args a;
    a.port = 0;
    a.threads = default_threads;
    a.flags = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "-p") == 0)
            a.port = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "-t") == 0)
            a.threads = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "-f") == 0)
            a.flags = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "usage: %s [-p PORT] [-t THREADS] [-f FLAGS]\n", argv[0]);
            exit(2);
        }
    }
    if (a.threads < 1)
        a.threads = 1;
    return a;
}

/* As many descriptors as the hard limit allows (the scaling rows open 10,000). */
static inline void srv_raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        (void)setrlimit(RLIMIT_NOFILE, &rl);
    }
}

static inline int srv_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static inline void srv_nodelay(int fd)
{
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* Write all of p, also to a non-blocking socket (waiting for room with poll). 0, or
 * -1 when the connection is broken. The replies fit an empty socket buffer, so this
 * loops only for a client that pipelines more than the kernel buffers. */
static inline int srv_write_all(int fd, const unsigned char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
        } else if (w < 0 && errno == EAGAIN) {
            struct pollfd pfd;
            pfd.fd = fd;
            pfd.events = POLLOUT;
            pfd.revents = 0;
            if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
                return -1;
        } else if (!(w < 0 && errno == EINTR)) {
            return -1;
        }
    }
    return 0;
}

/* A blocking TCP connection to 127.0.0.1:port with TCP_NODELAY, or -1 (errno). */
static inline int srv_connect(int port)
{
    struct sockaddr_in sin;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    memset(&sin, 0, sizeof sin);
    sin.sin_family = AF_INET;
    sin.sin_port = htons((unsigned short)port);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sin, sizeof sin) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    srv_nodelay(fd);
    return fd;
}

/* Listen on 127.0.0.1:a->port, then print "port N" (the contract's ready line).
 * nonblocking: make the listening socket non-blocking (reactor servers). */
static inline int srv_listen(const struct srv_args *a, int nonblocking)
{
    struct sockaddr_in sin;
    socklen_t len = sizeof sin;
    int one = 1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        srv_die("socket");
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    memset(&sin, 0, sizeof sin);
    sin.sin_family = AF_INET;
    sin.sin_port = htons((unsigned short)a->port);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&sin, sizeof sin) != 0)
        srv_die("bind");
    if (listen(fd, SOMAXCONN) != 0)
        srv_die("listen");
    if (nonblocking && srv_nonblock(fd) != 0)
        srv_die("fcntl");
    if (getsockname(fd, (struct sockaddr *)&sin, &len) != 0)
        srv_die("getsockname");
    printf("port %d\n", ntohs(sin.sin_port));
    fflush(stdout);
    return fd;
}

#endif
