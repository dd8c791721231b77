/* bench/srv_floor.c - the floor: the cheapest server this workload allows.
 *
 * One thread, one level-triggered epoll loop, no locks, no atomics, no hand-offs.
 * Each readiness event costs one read(), the wire_serve() calls and one write(): no
 * threaded server can spend less per request, so its row is the line the others are
 * measured against. It uses one core at most; it is a floor for cost, not for
 * throughput on many cores.
 *
 *   srv_floor [-p PORT] [-t THREADS]     -t is accepted and ignored (always one thread)
 *
 * Follows the SERVER CONTRACT in wire.h.
 */
#include "wire.h"
#include "srv_common.h"

#include <signal.h>
#include <sys/epoll.h>

#define BATCH 64               /* events per epoll_wait */
#define BUF (64 * WIRE_SIZE)   /* per connection: up to 64 pipelined requests per read */

/* Requests are served in place, so one buffer holds both directions:
 *   [0, out_end)     replies; [out_off, out_end) not yet written (0, 0: none pending)
 *   [out_end, len)   the start of a request still arriving (< WIRE_SIZE bytes) */
struct conn {
    int fd;
    unsigned len;
    unsigned out_off;
    unsigned out_end;
    unsigned char buf[BUF];
};

static int ep;

static void conn_close(struct conn *c)
{
    close(c->fd); /* also removes it from the epoll set: nobody else holds the fd */
    free(c);
}

/* Drop the replies just written and keep the partial request behind them. */
static void conn_shift(struct conn *c)
{
    c->len -= c->out_end;
    memmove(c->buf, c->buf + c->out_end, c->len);
    c->out_off = c->out_end = 0;
}

/* Watch for EPOLLIN or EPOLLOUT, never both: while replies are stuck we stop reading,
 * which is the backpressure a client that does not read its replies deserves. */
static int conn_watch(struct conn *c, unsigned events)
{
    struct epoll_event ev;
    ev.events = events;
    ev.data.ptr = c;
    return epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
}

/* Write [out_off, out_end). 1: all written, 0: the socket is full, -1: error. */
static int conn_flush(struct conn *c)
{
    while (c->out_off < c->out_end) {
        ssize_t n = write(c->fd, c->buf + c->out_off, c->out_end - c->out_off);
        if (n > 0)
            c->out_off += (unsigned)n;
        else if (n < 0 && errno == EAGAIN)
            return 0;
        else if (n < 0 && errno == EINTR)
            continue;
        else
            return -1;
    }
    return 1;
}

/* EPOLLIN: one read (level-triggered: anything left over comes back next round),
 * serve every whole request in place, write all the replies with one write(). */
static void conn_readable(struct conn *c)
{
    ssize_t n = read(c->fd, c->buf + c->len, BUF - c->len);
    if (n <= 0) {
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        conn_close(c); /* 0: the client closed; <0: reset or worse */
        return;
    }
    c->len += (unsigned)n;

    unsigned whole = c->len - c->len % WIRE_SIZE;
    if (whole == 0)
        return; /* a split request: wait for the rest */
    for (unsigned off = 0; off < whole; off += WIRE_SIZE)
        wire_serve(c->buf + off);

    c->out_off = 0;
    c->out_end = whole;
    int r = conn_flush(c);
    if (r == 1)
        conn_shift(c);
    else if (r < 0 || conn_watch(c, EPOLLOUT) != 0)
        conn_close(c);
}

/* EPOLLOUT: only while replies are pending. */
static void conn_writable(struct conn *c)
{
    int r = conn_flush(c);
    if (r == 0)
        return;
    if (r < 0) {
        conn_close(c);
        return;
    }
    conn_shift(c); /* what stays is less than one request: nothing to serve yet */
    if (conn_watch(c, EPOLLIN) != 0)
        conn_close(c);
}

/* Accept everything pending; the listening socket is non-blocking. */
static void accept_all(int lfd)
{
    for (;;) {
        int fd = accept(lfd, NULL, NULL);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno != EAGAIN)
                perror("accept"); /* EMFILE and friends: the row is void anyway */
            return;
        }
        struct conn *c = malloc(sizeof *c);
        struct epoll_event ev;
        ev.events = EPOLLIN;
        ev.data.ptr = c;
        if (c == NULL || srv_nonblock(fd) != 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
            perror("srv_floor: dropping a connection");
            free(c);
            close(fd);
            continue;
        }
        srv_nodelay(fd);
        c->fd = fd;
        c->len = c->out_off = c->out_end = 0;
    }
}

int main(int argc, char **argv)
{
    struct srv_args a = srv_parse(argc, argv, 1);
    struct epoll_event ev, evs[BATCH];

    signal(SIGPIPE, SIG_IGN); /* a client gone mid-reply is an error return, not death */
    srv_raise_nofile();
    ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0)
        srv_die("epoll_create1");
    int lfd = srv_listen(&a, 1);
    ev.events = EPOLLIN;
    ev.data.ptr = NULL; /* NULL marks the listening socket */
    if (epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev) != 0)
        srv_die("epoll_ctl");

    for (;;) {
        int n = epoll_wait(ep, evs, BATCH, -1);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            srv_die("epoll_wait");
        }
        /* epoll reports a descriptor at most once per call, so a connection closed
         * while handling one event cannot appear later in the same batch. */
        for (int i = 0; i < n; i++) {
            struct conn *c = evs[i].data.ptr;
            if (c == NULL)
                accept_all(lfd);
            else if (c->out_end != 0)
                conn_writable(c);
            else
                conn_readable(c); /* EPOLLERR/EPOLLHUP too: the read reports them */
        }
    }
}
