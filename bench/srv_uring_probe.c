/* bench/srv_uring_probe.c - what would an io_uring backend save? One thread, the
 * benchmark's wire protocol (wire.h), and one-shot readiness per connection three
 * ways, so the cost of the one-shot re-arm can be read off side by side:
 *
 *   srv_uring_probe -f 0   io_uring POLL_ADD (one-shot by nature): after serving a
 *                          connection its next POLL_ADD goes into the submission
 *                          queue, and every queued re-arm is submitted by the same
 *                          io_uring_enter that waits for the next completions. This
 *                          is the best case for batching the re-arm: no re-arm ever
 *                          costs a system call of its own.
 *   srv_uring_probe -f 1   epoll with EPOLLONESHOT, re-armed by EPOLL_CTL_MOD after
 *                          each event: what lf_reactor.h's one-shot handles do.
 *   srv_uring_probe -f 2   epoll level-triggered, never re-armed: the floor's loop.
 *
 * Each readiness event costs one read() and one write() in every mode; only the
 * re-arm differs. bench/uring_probe.sh runs the three side by side. Needs liburing
 * (Debian liburing-dev) and a kernel with IORING_SETUP_SINGLE_ISSUER (6.0).
 * Follows the SERVER CONTRACT in wire.h. Not a server to copy: it never closes
 * cleanly and has no write backpressure (a reply is one write of <= 4 KiB).
 */
#include "wire.h"
#include "srv_common.h"

#include <liburing.h>
#include <signal.h>
#include <sys/epoll.h>

#define BUF (64 * WIRE_SIZE)

struct conn {
    int fd;
    unsigned len;
    unsigned char buf[BUF];
};

static int mode, ep;
static struct io_uring ring;
static struct conn listener; /* marks the listening socket's events */

/* Watch c for input: a queued POLL_ADD (submitted with the next wait), or epoll. */
static void arm(struct conn *c, int first)
{
    if (mode == 0) {
        struct io_uring_sqe *s = io_uring_get_sqe(&ring);
        if (s == NULL) { /* the queue is full: submit what is there */
            io_uring_submit(&ring);
            s = io_uring_get_sqe(&ring);
        }
        io_uring_prep_poll_add(s, c->fd, POLLIN);
        io_uring_sqe_set_data(s, c);
    } else if (first || mode == 1) {
        struct epoll_event ev;
        ev.events = EPOLLIN | (mode == 1 ? EPOLLONESHOT : 0);
        ev.data.ptr = c;
        if (epoll_ctl(ep, first ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, c->fd, &ev) != 0)
            srv_die("epoll_ctl");
    }
}

/* One read, every whole request served in place, one write. 0: watch it again. */
static int serve(struct conn *c)
{
    ssize_t n = read(c->fd, c->buf + c->len, BUF - c->len);
    if (n <= 0) {
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return 0;
        goto gone;
    }
    c->len += (unsigned)n;
    unsigned whole = c->len - c->len % WIRE_SIZE;
    for (unsigned off = 0; off < whole; off += WIRE_SIZE)
        wire_serve(c->buf + off);
    if (whole && write(c->fd, c->buf, whole) != (ssize_t)whole)
        goto gone;
    c->len -= whole;
    memmove(c->buf, c->buf + whole, c->len);
    return 0;
gone:
    close(c->fd);
    free(c);
    return -1;
}

static void accept_all(int lfd)
{
    for (;;) {
        int fd = accept(lfd, NULL, NULL);
        if (fd < 0)
            return;
        struct conn *c = (struct conn *)calloc(1, sizeof *c);
        if (c == NULL || srv_nonblock(fd) != 0) {
            free(c);
            close(fd);
            continue;
        }
        srv_nodelay(fd);
        c->fd = fd;
        arm(c, 1);
    }
}

static void run_uring(int lfd)
{
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    if (io_uring_queue_init_params(4096, &ring, &p) < 0)
        srv_die("io_uring_queue_init_params");
    for (;;) {
        struct io_uring_cqe *cqe;
        unsigned head, seen = 0;
        if (listener.fd >= 0) { /* (re)arm the listener, multishot */
            struct io_uring_sqe *s = io_uring_get_sqe(&ring);
            io_uring_prep_poll_multishot(s, lfd, POLLIN);
            io_uring_sqe_set_data(s, &listener);
            listener.fd = -1;
        }
        if (io_uring_submit_and_wait(&ring, 1) < 0 && errno != EINTR)
            srv_die("io_uring_submit_and_wait");
        io_uring_for_each_cqe(&ring, head, cqe) {
            struct conn *c = (struct conn *)io_uring_cqe_get_data(cqe);
            seen++;
            if (c == &listener) {
                accept_all(lfd);
                if (!(cqe->flags & IORING_CQE_F_MORE))
                    listener.fd = lfd; /* the multishot poll ended: arm it again */
            } else if (serve(c) == 0) {
                arm(c, 0);
            }
        }
        io_uring_cq_advance(&ring, seen);
    }
}

static void run_epoll(int lfd)
{
    struct epoll_event ev, evs[64];
    if ((ep = epoll_create1(EPOLL_CLOEXEC)) < 0)
        srv_die("epoll_create1");
    ev.events = EPOLLIN;
    ev.data.ptr = &listener;
    if (epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev) != 0)
        srv_die("epoll_ctl");
    for (;;) {
        int n = epoll_wait(ep, evs, 64, -1);
        for (int i = 0; i < n; i++) {
            struct conn *c = (struct conn *)evs[i].data.ptr;
            if (c == &listener)
                accept_all(lfd);
            else if (serve(c) == 0)
                arm(c, 0);
        }
    }
}

int main(int argc, char **argv)
{
    struct srv_args a = srv_parse(argc, argv, 1);
    mode = a.flags;
    signal(SIGPIPE, SIG_IGN);
    srv_raise_nofile();
    int lfd = srv_listen(&a, 1);
    listener.fd = lfd;
    if (mode == 0)
        run_uring(lfd);
    else
        run_epoll(lfd);
    return 0;
}
