/* echo_server.c - an echo server on 4 threads: buffered output, idle timeouts,
 * SIGINT/SIGTERM shutdown. Usage: echo_server [port [idle-ms]] (make test drives it) */
#include "lf_reactor.h"
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define THREADS 4
#define BACKLOG (64 * 1024) /* output kept for a client before we stop reading it */

static lf_reactor reactor;
static long long idle_ns = 30LL * 1000000000LL;
static lf_timer accept_pause; /* out of descriptors: accept again after a while */

struct conn {
    lf_handler h;     /* first: the reactor hands us &c->h */
    lf_timer idle;    /* fires when the client has been quiet for idle_ns */
    char *out;        /* what the socket did not take yet */
    size_t len, off;
    uint32_t want;    /* the interest we asked for last */
};

/* Write what the socket takes: 0 all out, 1 some left, -1 the connection failed. */
static int flush_out(struct conn *c)
{
    while (c->off < c->len) {
        ssize_t n = send(c->h.fd, c->out + c->off, c->len - c->off, MSG_NOSIGNAL);
        if (n < 0)
            return errno == EAGAIN ? 1 : -1;
        c->off += (size_t)n;
    }
    c->off = c->len = 0;
    return 0;
}

static int on_conn(lf_handler *h, int fd, uint32_t events)
{
    struct conn *c = (struct conn *)h;
    uint32_t want;
    int left;

    if ((events & LF_EV_TIMEOUT) && lf_timer_fired(&c->idle))
        return LF_REMOVE; /* nothing moved for idle_ns (a restart forgets a stale one) */
    if (events & (LF_EV_READ | LF_EV_WRITE)) /* the client reads or writes: not idle */
        lf_reactor_timer_start(&reactor, &c->idle, h, idle_ns, 0);
    if (events & LF_EV_READ) {
        /* an echo: what we read is what we will write */
        ssize_t n = read(fd, c->out + c->len, 2 * BACKLOG - c->len);
        if (n == 0 || (n < 0 && errno != EAGAIN))
            return LF_REMOVE; /* the client left, or the connection failed */
        if (n > 0)
            c->len += (size_t)n;
    }
    if ((left = flush_out(c)) < 0)
        return LF_REMOVE;
    /* WRITE while something is left; READ while the backlog has room: a client that
     * does not read cannot make us keep more, nor hold a thread */
    want = (c->len < BACKLOG ? LF_EV_READ : 0u) | (left ? LF_EV_WRITE : 0u);
    if (want != c->want && lf_reactor_modify(&reactor, h, want) == 0)
        c->want = want;
    return LF_KEEP;
}

static void on_conn_close(lf_handler *h) /* after the last dispatch; the fd is closed after */
{
    struct conn *c = (struct conn *)h;
    free(c->out);
    free(c);
}

static int on_accept(lf_handler *h, int fd, uint32_t events)
{
    int s;
    if ((events & LF_EV_TIMEOUT) && lf_timer_fired(&accept_pause))
        lf_reactor_modify(&reactor, h, LF_EV_ACCEPT); /* the pause is over */
    while ((s = accept(fd, NULL, NULL)) >= 0) {
        struct conn *c = calloc(1, sizeof *c);
        if (c == NULL || (c->out = malloc(2 * BACKLOG)) == NULL ||
            fcntl(s, F_SETFL, O_NONBLOCK) != 0) {
            free(c ? c->out : NULL);
            free(c);
            close(s);
            continue;
        }
        lf_handler_init(&c->h, on_conn, on_conn_close);
        lf_timer_init(&c->idle);
        c->want = LF_EV_READ;
        if (lf_reactor_register(&reactor, &c->h, s, LF_EV_READ) != 0) {
            on_conn_close(&c->h);
            close(s);
            continue;
        }
        lf_reactor_timer_start(&reactor, &c->idle, &c->h, idle_ns, 0);
    }
    if (errno == EMFILE || errno == ENFILE) { /* it would report again at once: pause */
        lf_reactor_modify(&reactor, h, 0);
        lf_reactor_timer_start(&reactor, &accept_pause, h, 100 * 1000000LL, 0);
    }
    return LF_KEEP; /* EAGAIN: nobody else waits to connect */
}

static int on_signal(lf_handler *h, int fd, uint32_t events)
{
    struct signalfd_siginfo si;
    (void)h;
    (void)events;
    while (read(fd, &si, sizeof si) == (ssize_t)sizeof si)
        fprintf(stderr, "signal %u: stopping\n", si.ssi_signo);
    lf_reactor_stop(&reactor); /* every thread returns from lf_reactor_run */
    return LF_KEEP;
}

static void *run(void *arg)
{
    (void)arg;
    lf_reactor_run(&reactor, NULL);
    return NULL;
}

int main(int argc, char **argv)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    lf_handler listener, signals;
    struct lf_reactor_stats st;
    pthread_t th[THREADS];
    sigset_t set;
    int fd, one = 1;

    a.sin_port = htons((uint16_t)(argc > 1 ? atoi(argv[1]) : 7000));
    if (argc > 2)
        idle_ns = atoll(argv[2]) * 1000000LL; /* milliseconds */
    /* SIGINT and SIGTERM come as events: block them before any thread starts */
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);

    if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0)) < 0 ||
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 128) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &alen) != 0) {
        perror("listen");
        return 1;
    }
    if (lf_reactor_init(&reactor) != 0)
        return 1;
    lf_handler_init(&listener, on_accept, NULL);
    lf_handler_init(&signals, on_signal, NULL);
    if (lf_reactor_register(&reactor, &listener, fd, LF_EV_ACCEPT) != 0 ||
        lf_reactor_register_signal(&reactor, &signals, &set) != 0)
        return 1;
    printf("listening on port %d\n", ntohs(a.sin_port));
    fflush(stdout);

    for (int i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, run, NULL);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    lf_reactor_stats(&reactor, &st);
    printf("%llu dispatches, %llu connections closed\n", st.dispatched, st.closed);
    return lf_reactor_destroy(&reactor); /* closes what is left, listener included */
}
