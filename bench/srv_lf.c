/* bench/srv_lf.c - the benchmark's request/reply server on lf_reactor.h (wire.h).
 *
 *   srv_lf [-p PORT] [-t THREADS] [-f FLAGS]
 *
 * THREADS threads (default 2) run one reactor: one leader waits, promotes a follower,
 * then reads, serves and answers the request it was handed, and joins the followers
 * again. The promotion policy and the backend are the header's macros, chosen when
 * this file is compiled (LF_PROMOTE, LF_REACTOR_BACKEND). FLAGS, added together:
 *   1  open the reactor with LF_REACTOR_CONCURRENT (every thread waits in epoll_wait)
 *   2  register connections as the quick start does (without LF_EV_EDGE): the
 *      handler reads once, and returns LF_DRAINED when the read came up short (the
 *      socket is empty: epoll keeps the handle armed edge-triggered, no re-arm) or
 *      LF_KEEP when it filled the buffer (the re-arm reports the rest)
 *   4  with 2: always LF_KEEP (one-shot, one epoll_ctl per request)
 *
 * By default connections are registered with LF_EV_EDGE: the handler empties the
 * socket on every dispatch (reads until EAGAIN or end of file), so epoll keeps it
 * armed and no epoll_ctl is spent per request. That costs a read per dispatch that
 * finds nothing: with LF_EV_EDGE a short read is not enough, since a client's close
 * that comes with its last request makes no second edge (LF_DRAINED is told of that
 * close by the report, and re-arms).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* accept4 */
#endif
#include "lf_reactor.h"
#include "srv_common.h"

#include <sys/socket.h>

struct conn {
    lf_handler h;                     /* first: the handler is the connection */
    unsigned have;                    /* bytes of an unfinished request in buf */
    unsigned char buf[64 * WIRE_SIZE];
};

static lf_reactor reactor;
static uint32_t conn_events = LF_EV_READ | LF_EV_EDGE;
static int keep_only; /* -f 4 */

static int on_conn(lf_handler *h, int fd, uint32_t events)
{
    struct conn *c = (struct conn *)h;
    (void)events;
    for (;;) {
        size_t room = sizeof c->buf - c->have;
        ssize_t n = read(fd, c->buf + c->have, room);
        if (n == 0)
            return LF_REMOVE;
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN)
                return LF_REMOVE;
            /* empty: say so (an LF_EV_EDGE handle takes it as LF_KEEP) */
            return keep_only ? LF_KEEP : LF_DRAINED;
        }
        size_t end = c->have + (size_t)n, whole = end - end % WIRE_SIZE;
        for (size_t off = 0; off < whole; off += WIRE_SIZE)
            wire_serve(c->buf + off);
        if (whole && srv_write_all(fd, c->buf, whole) != 0)
            return LF_REMOVE;
        c->have = (unsigned)(end - whole);
        if (c->have)
            memmove(c->buf, c->buf + whole, c->have);
        /* without LF_EV_EDGE: a short read found the socket empty; a full one leaves
         * the rest to the re-arm. With it: read on to EAGAIN or 0 */
        if (!(conn_events & LF_EV_EDGE))
            return keep_only || (size_t)n == room ? LF_KEEP : LF_DRAINED;
    }
}

static void on_conn_close(lf_handler *h)
{
    free(h);
}

/* Accept everything that is waiting: one turn for a burst of connections. */
static int on_accept(lf_handler *h, int fd, uint32_t events)
{
    (void)h;
    (void)events;
    for (;;) {
        int s = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (s < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno != EAGAIN)
                fprintf(stderr, "srv_lf: accept: %s\n", strerror(errno));
            return LF_KEEP;
        }
        srv_nodelay(s);
        struct conn *c = calloc(1, sizeof *c);
        if (!c) {
            close(s);
            continue;
        }
        lf_handler_init(&c->h, on_conn, on_conn_close);
        int rc = lf_reactor_register(&reactor, &c->h, s, conn_events);
        if (rc != 0) {
            fprintf(stderr, "srv_lf: register: %s\n", strerror(rc));
            close(s);
            free(c);
        }
    }
}

/* SRV_STATS=1: counters on stderr once a second, to see how leadership moves under a
 * load (leads, promotions, takeovers) and what dispatches cost (re-arms, reports left
 * to a busy handler) */
static void *stats(void *arg)
{
    (void)arg;
    for (;;) {
        struct lf_reactor_stats s;
        sleep(1);
        lf_reactor_stats(&reactor, &s);
        fprintf(stderr,
                "srv_lf: leads %llu promotions %llu vacant %llu takeovers %llu "
                "dispatched %llu deferred %llu rearmed %llu; promotions deferred %llu "
                "ticks %llu tick_leads %llu\n",
                s.pool.leads, s.pool.promotions, s.pool.promotions_vacant, s.pool.takeovers,
                s.dispatched, s.deferred, s.rearmed, s.pool.deferred, s.pool.ticks,
                s.pool.tick_leads);
    }
    return NULL;
}

static void *run(void *arg)
{
    (void)arg;
    lf_reactor_run(&reactor, NULL);
    return NULL;
}

int main(int argc, char **argv)
{
    struct srv_args a = srv_parse(argc, argv, 2);
    static lf_handler acceptor;
    srv_raise_nofile();
    if (a.flags & 2)
        conn_events = LF_EV_READ;
    keep_only = (a.flags & 4) != 0;
    int rc = lf_reactor_init_flags(&reactor, a.flags & 1 ? LF_REACTOR_CONCURRENT : 0);
    if (rc != 0) {
        fprintf(stderr, "srv_lf: lf_reactor_init: %s\n", strerror(rc));
        return 2;
    }
    lf_handler_init(&acceptor, on_accept, NULL);
    int lfd = srv_listen(&a, 1);
    rc = lf_reactor_register(&reactor, &acceptor, lfd, LF_EV_READ);
    if (rc != 0) {
        fprintf(stderr, "srv_lf: register listener: %s\n", strerror(rc));
        return 2;
    }
    if (getenv("SRV_STATS")) {
        pthread_t t;
        if (pthread_create(&t, NULL, stats, NULL) != 0)
            srv_die("pthread_create");
    }
    for (int i = 1; i < a.threads; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, run, NULL) != 0)
            srv_die("pthread_create");
    }
    run(NULL); /* until killed */
    return 0;
}
