/* bench/httpd.c - a static-file HTTP/1.1 server on lf_reactor.h: JAWS on
 * Leader/Followers.
 *
 *   httpd [-p PORT] [-t THREADS] [-i IDLE_MS] [-r REQUEST_MS] DIR
 *
 * GET and HEAD of the files under DIR (bench/httpd_core.h parses, looks up and
 * writes the heads), keep-alive and pipelining, bodies by sendfile. THREADS threads
 * (default 2) turn one reactor; a connection is one handler, registered with
 * LF_EV_EDGE: every dispatch reads until the socket is empty (a short read says it
 * is), answers every whole request it holds, and writes what the socket takes. What
 * it does not take stays with the connection (the heads in out[], the file's offset)
 * and the handler asks for LF_EV_WRITE instead of LF_EV_READ with lf_reactor_modify
 * (free from the handler itself); when it is out, READ again. So a client that stops
 * reading holds no thread and makes the server keep no more than one response, and
 * its next requests wait in its own socket.
 *
 * Timeouts, with two timers per connection:
 *   idle      IDLE_MS (default 15,000) without any progress (a whole request read, or
 *             response bytes written; empty lines are not progress): close. Not
 *             while a request has begun: then the request timer alone decides (so
 *             with REQUEST_MS above IDLE_MS, a begun request may take the longer).
 *             Armed once; each expiry looks at the time of the last progress and
 *             re-arms for the rest, so a busy connection costs no timer operation
 *             per request.
 *   request   a request begun and not complete after REQUEST_MS (default 5,000):
 *             answered 408 and closed (a slow client, one byte at a time, cannot
 *             hold a connection by staying busy). Armed only while a partial request
 *             waits for more bytes, cancelled when it completes. After an error the
 *             same timer bounds the graceful close (below).
 * An error that closes the connection (httpd_core.h) is answered, then the sending
 * side is shut and what the client still sends is read and dropped until it closes
 * too (or the request timer ends it): closing with unread input would reset the
 * connection and could destroy the answer before the client reads it.
 * SIGINT and SIGTERM stop it (exit 0, everything freed); prints "port N" when it
 * listens (bench/wire.h's contract for the command line and the ready line).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* accept4, MSG_MORE, sendfile */
#endif
#include "lf_reactor.h"
#include "httpd_core.h"
#include "srv_common.h"

#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>

#define OUT_MAX 4096 /* response heads waiting for the socket (several when pipelined) */

struct conn {
    lf_handler h; /* first: the reactor hands us &c->h */
    lf_timer idle, req;
    long long last;   /* CLOCK_MONOTONIC ns of the last progress */
    uint32_t want;    /* the interest asked for last */
    int started;      /* the idle timer runs */
    int req_armed;    /* the request timer runs */
    int drained;      /* a read found the socket empty: no read until READ comes */
    int eof;          /* the client sent all it will */
    int closing;      /* close once the output is out */
    int lingering;    /* closing: reading and dropping until the client closes */
    int file;         /* the body being sent, or -1 */
    off_t foff, fleft;
    size_t in_len, out_off, out_len;
    char in[HTTPD_REQ_MAX];
    char out[OUT_MAX];
};

static lf_reactor reactor;
static int dirfd_root;
static long long idle_ns = 15000LL * 1000000;
static long long req_ns = 5000LL * 1000000;
static lf_timer accept_pause;

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The end of a connection. Shut it now: the reactor closes the fd only after
 * handle_close, a grace period later (10 to 20 ms), and the client would wait that
 * long for the FIN. */
static int drop(int fd)
{
    shutdown(fd, SHUT_RDWR);
    return LF_REMOVE;
}

/* Ask for READ or WRITE: free from the handler itself (its re-arm carries it). */
static void want(struct conn *c, uint32_t w)
{
    if (w != c->want && lf_reactor_modify(&reactor, &c->h, w) == 0)
        c->want = w;
}

static void req_timer(struct conn *c, int on, long long ns)
{
    if (on && !c->req_armed)
        c->req_armed = lf_reactor_timer_start(&reactor, &c->req, &c->h, ns, 0) == 0;
    else if (!on && c->req_armed) {
        lf_reactor_timer_cancel(&reactor, &c->req);
        c->req_armed = 0;
    }
}

/* Answer every whole request in in[] while out[] has room and no body is pending. */
static int answer(struct conn *c)
{
    struct httpd_req r;
    size_t used = 0, n;
    int any = 0;
    while (c->file < 0 && !c->closing && c->out_len + HTTPD_HEAD_MAX <= OUT_MAX &&
           (n = httpd_parse(c->in + used, c->in_len - used, &r)) > 0) {
        used += n;
        req_timer(c, 0, 0); /* the request is complete: not slow */
        c->last = now_ns();  /* and progress: empty lines and pieces of one are not */
        c->out_len += httpd_respond(dirfd_root, &r, c->out + c->out_len, &c->file, &c->fleft);
        c->foff = 0;
        c->closing = !r.keep_alive;
        any = 1;
    }
    used += httpd_blank(c->in + used, c->in_len - used); /* no request started yet */
    if (used) {
        c->in_len -= used;
        memmove(c->in, c->in + used, c->in_len);
    }
    return any;
}

/* Move bytes until the socket or the client has nothing more for us. */
static int pump(struct conn *c, int fd)
{
    for (;;) {
        while (c->out_off < c->out_len) {
            ssize_t n = send(fd, c->out + c->out_off, c->out_len - c->out_off,
                             MSG_NOSIGNAL | (c->file >= 0 ? MSG_MORE : 0));
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0 && errno == EAGAIN)
                goto wait_write;
            if (n <= 0)
                return drop(fd);
            c->out_off += (size_t)n;
        }
        c->out_off = c->out_len = 0;
        if (c->file >= 0) {
            int rc = httpd_sendfile(fd, c->file, &c->foff, &c->fleft);
            if (rc > 0)
                goto wait_write;
            if (rc < 0)
                return drop(fd);
            close(c->file);
            c->file = -1;
        }
        if (c->closing && !c->lingering) {
            /* all is out: shut our side, then drop what the client still sends */
            shutdown(fd, SHUT_WR);
            c->lingering = 1;
            c->in_len = 0;
            req_timer(c, 0, 0);
            req_timer(c, 1, req_ns);
        }
        if (c->lingering) {
            ssize_t n;
            while ((n = read(fd, c->in, sizeof c->in)) > 0) {
            }
            if (n < 0 && errno == EAGAIN) {
                c->drained = 0;
                want(c, LF_EV_READ);
                return LF_KEEP;
            }
            return drop(fd);
        }
        if (answer(c))
            continue; /* something to write */
        if (c->eof)
            return drop(fd); /* all answered; a partial request stays unanswered */
        if (c->drained) {
            /* LF_EV_EDGE's promise holds: the last read said EAGAIN */
            want(c, LF_EV_READ);
            req_timer(c, c->in_len > 0, req_ns);
            return LF_KEEP;
        }
        size_t room = sizeof c->in - c->in_len; /* > 0: a full buffer is an error */
        ssize_t n = read(fd, c->in + c->in_len, room);
        if (n > 0) {
            /* not drained yet, even after a short read: a FIN that came with the
             * data makes no new edge, and only the next read sees it (EOF) */
            c->in_len += (size_t)n;
        } else if (n == 0) {
            c->eof = 1;
        } else if (errno == EAGAIN) {
            c->drained = 1;
        } else if (errno != EINTR) {
            return drop(fd);
        }
    }
wait_write:
    /* not READ meanwhile: the client's next requests wait in its socket */
    c->drained = 0;
    want(c, LF_EV_WRITE);
    return LF_KEEP;
}

static int on_conn(lf_handler *h, int fd, uint32_t events)
{
    struct conn *c = (struct conn *)h;
    long long now = now_ns();

    if (!c->started) { /* the first dispatch: the registration asked for WRITE to get it */
        c->started = lf_reactor_timer_start(&reactor, &c->idle, h, idle_ns, 0) == 0;
        c->last = now;
    }
    if (events & LF_EV_TIMEOUT) {
        int answering = 0; /* a 408 just queued: both timers may fire in one dispatch */
        if (lf_timer_fired(&c->req)) {
            c->req_armed = 0;
            if (c->lingering || c->out_len > 0 || c->file >= 0)
                return drop(fd);
            /* a request begun and not finished in time: say so, and close */
            c->out_len = httpd_error(c->out, 408, 0, 0);
            c->closing = 1;
            c->in_len = 0;
            answering = 1;
        }
        if (lf_timer_fired(&c->idle)) {
            /* a request begun is the request timer's to judge (408), not idleness;
             * a 408 being sent gets one more idle period to be read */
            int busy = c->req_armed || answering;
            if (now - c->last >= idle_ns && !busy)
                return drop(fd);
            lf_reactor_timer_start(&reactor, &c->idle, h,
                                   busy ? idle_ns : idle_ns - (now - c->last), 0);
        }
    }
    if (events & LF_EV_CLOSE)
        return drop(fd); /* hang-up or error: nobody to answer */
    if (events & LF_EV_WRITE) /* the client reads: progress (a request is, in answer) */
        c->last = now;
    if (events & LF_EV_READ)
        c->drained = 0;
    return pump(c, fd);
}

static void on_conn_close(lf_handler *h) /* after the last dispatch; the fd is closed after */
{
    struct conn *c = (struct conn *)h;
    if (c->file >= 0)
        close(c->file);
    free(c);
}

static int on_accept(lf_handler *h, int fd, uint32_t events)
{
    int s;
    if ((events & LF_EV_TIMEOUT) && lf_timer_fired(&accept_pause))
        lf_reactor_modify(&reactor, h, LF_EV_ACCEPT); /* the pause is over */
    for (;;) {
        s = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (s < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            break;
        }
        srv_nodelay(s);
        struct conn *c = malloc(sizeof *c);
        if (c == NULL) {
            close(s);
            continue;
        }
        memset(c, 0, offsetof(struct conn, in)); /* not the buffers: 12 KiB per accept */
        c->file = -1;
        lf_handler_init(&c->h, on_conn, on_conn_close);
        lf_timer_init(&c->idle);
        lf_timer_init(&c->req);
        /* WRITE too: a new socket is writable, so the first dispatch comes at once and
         * starts the idle timer (a timer needs a registered handler, and after
         * lf_reactor_register c is the reactor's: we touch it no more here). */
        c->want = LF_EV_READ | LF_EV_WRITE;
        if (lf_reactor_register(&reactor, &c->h, s, c->want | LF_EV_EDGE) != 0) {
            free(c);
            close(s);
        }
    }
    if (errno == EMFILE || errno == ENFILE) { /* it would report again at once: pause */
        lf_reactor_modify(&reactor, h, 0);
        lf_reactor_timer_start(&reactor, &accept_pause, h, 100 * 1000000LL, 0);
    }
    return LF_KEEP;
}

static int on_signal(lf_handler *h, int fd, uint32_t events)
{
    struct signalfd_siginfo si;
    (void)h;
    (void)events;
    while (read(fd, &si, sizeof si) == (ssize_t)sizeof si) {
    }
    lf_reactor_stop(&reactor);
    return LF_KEEP;
}

static void *run(void *arg)
{
    (void)arg;
    lf_reactor_run(&reactor, NULL);
    return NULL;
}

static void usage(void)
{
    fprintf(stderr, "usage: httpd [-p PORT] [-t THREADS] [-i IDLE_MS] [-r REQUEST_MS] DIR\n");
    exit(2);
}

int main(int argc, char **argv)
{
    struct srv_args a = {0, 2, 0};
    static lf_handler listener, signals;
    struct lf_reactor_stats st;
    const char *dir = NULL;
    sigset_t set;
    int i, rc;

    for (i = 1; i < argc; i++) {
        if (argv[i][0] != '-') {
            dir = argv[i];
            continue;
        }
        if (i + 1 >= argc)
            usage();
        long long v = atoll(argv[++i]);
        switch (argv[i - 1][1]) {
        case 'p': a.port = (int)v; break;
        case 't': a.threads = v < 1 ? 1 : (int)v; break;
        case 'i': idle_ns = v * 1000000LL; break;
        case 'r': req_ns = v * 1000000LL; break;
        default: usage();
        }
    }
    if (dir == NULL)
        usage();
    if ((dirfd_root = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        srv_die(dir);
    srv_raise_nofile();
    /* SIGINT and SIGTERM come as events; SIGPIPE never (sendfile raises it) */
    signal(SIGPIPE, SIG_IGN);
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    if ((rc = lf_reactor_init(&reactor)) != 0) {
        fprintf(stderr, "httpd: lf_reactor_init: %s\n", strerror(rc));
        return 2;
    }
    lf_handler_init(&listener, on_accept, NULL);
    lf_handler_init(&signals, on_signal, NULL);
    lf_timer_init(&accept_pause);
    int lfd = srv_listen(&a, 1);
    if ((rc = lf_reactor_register(&reactor, &listener, lfd, LF_EV_ACCEPT)) != 0 ||
        (rc = lf_reactor_register_signal(&reactor, &signals, &set)) != 0) {
        fprintf(stderr, "httpd: register: %s\n", strerror(rc));
        return 2;
    }
    pthread_t *th = calloc((size_t)a.threads, sizeof *th);
    if (th == NULL)
        srv_die("calloc");
    for (i = 0; i < a.threads; i++)
        if (pthread_create(&th[i], NULL, run, NULL) != 0)
            srv_die("pthread_create");
    for (i = 0; i < a.threads; i++)
        pthread_join(th[i], NULL);
    free(th);
    lf_reactor_stats(&reactor, &st);
    fprintf(stderr, "httpd: %llu dispatches, %llu connections closed\n", st.dispatched,
            st.closed);
    rc = lf_reactor_destroy(&reactor); /* closes what is left, the listener too */
    close(dirfd_root);
    return rc;
}
