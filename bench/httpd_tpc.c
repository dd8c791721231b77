/* bench/httpd_tpc.c - the same file server, a thread per connection: the design
 * the JAWS paper measured its asynchronous servers against.
 *
 *   httpd_tpc [-p PORT] [-t THREADS] [-i IDLE_MS] DIR      (-t accepted, ignored)
 *
 * The main thread blocks in accept(); each connection gets its own detached thread
 * that blocks in read(), answers every whole request it has with bench/httpd_core.h
 * (the same parser, lookup and heads as bench/httpd.c), writes the head and
 * sendfile()s the body with blocking calls, and goes back to read(). The kernel's
 * scheduler is the dispatcher: no reactor, no hand-off, one stack per connection.
 *
 * Timeouts are the socket's own (SO_RCVTIMEO, SO_SNDTIMEO = IDLE_MS, default 15 s):
 * each blocking call gives up after that long. That bounds an idle client and one
 * that stops reading, but not a slow one: a byte per second keeps every read short,
 * so a slowloris holds its thread as long as it likes. (The reactor server has a
 * request timer for that; a thread per connection would need a watchdog thread.)
 * Stacks are 64 KiB; a connection whose thread cannot be created is closed.
 * Prints "port N" when it listens; runs until killed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* MSG_MORE, sendfile */
#endif
#include "httpd_core.h"
#include "srv_common.h"

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/time.h>

#define STACK (64 * 1024)

static int dirfd_root;
static long idle_ms = 15000;

static int send_all(int fd, const char *p, size_t n, int more)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL | (more ? MSG_MORE : 0));
        if (w > 0) {
            p += w;
            n -= (size_t)w;
        } else if (!(w < 0 && errno == EINTR)) {
            return -1; /* also EAGAIN: SO_SNDTIMEO ran out */
        }
    }
    return 0;
}

static void *conn_thread(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char in[HTTPD_REQ_MAX], out[HTTPD_HEAD_MAX];
    struct httpd_req r;
    size_t len = 0, n;

    for (;;) {
        if ((n = httpd_parse(in, len, &r)) == 0) {
            size_t blank = httpd_blank(in, len); /* no request started yet */
            len -= blank;
            memmove(in, in + blank, len);
            ssize_t got = read(fd, in + len, sizeof in - len);
            if (got < 0 && errno == EINTR)
                continue;
            if (got <= 0)
                break; /* closed, reset, or idle for too long */
            len += (size_t)got;
            continue;
        }
        int file;
        off_t off = 0, left;
        size_t hl = httpd_respond(dirfd_root, &r, out, &file, &left);
        int rc = send_all(fd, out, hl, file >= 0);
        if (rc == 0 && file >= 0)
            rc = httpd_sendfile(fd, file, &off, &left) == 0 ? 0 : -1;
        if (file >= 0)
            close(file);
        len -= n;
        memmove(in, in + n, len);
        if (rc != 0)
            break;
        if (!r.keep_alive) {
            /* shut our side, drop what the client still sends, then close: an
             * unread input would reset the connection under the answer */
            shutdown(fd, SHUT_WR);
            while (read(fd, in, sizeof in) > 0) {
            }
            break;
        }
    }
    close(fd);
    return NULL;
}

int main(int argc, char **argv)
{
    struct srv_args a = {0, 1, 0};
    const char *dir = NULL;
    pthread_attr_t attr;
    unsigned long failed = 0;

    for (int i = 1; i < argc; i++) {
        if (argv[i][0] != '-') {
            dir = argv[i];
        } else if (i + 1 < argc && strchr("pti", argv[i][1]) && argv[i][1]) {
            long v = atol(argv[++i]);
            if (argv[i - 1][1] == 'p')
                a.port = (int)v;
            else if (argv[i - 1][1] == 'i')
                idle_ms = v;
        } else {
            dir = NULL;
            break;
        }
    }
    if (dir == NULL) {
        fprintf(stderr, "usage: httpd_tpc [-p PORT] [-t THREADS] [-i IDLE_MS] DIR\n");
        return 2;
    }
    if ((dirfd_root = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        srv_die(dir);
    signal(SIGPIPE, SIG_IGN); /* sendfile to a client gone: EPIPE, not death */
    srv_raise_nofile();
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_attr_setstacksize(&attr, STACK) != 0)
        fprintf(stderr, "httpd_tpc: cannot use %d-byte stacks, using the default\n", STACK);
    int lfd = srv_listen(&a, 0);
    struct timeval tv = {idle_ms / 1000, (idle_ms % 1000) * 1000};

    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            perror("httpd_tpc: accept"); /* EMFILE: the clients will free some */
            usleep(10000);
            continue;
        }
        srv_nodelay(fd);
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        (void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        pthread_t t;
        int e = pthread_create(&t, &attr, conn_thread, (void *)(intptr_t)fd);
        if (e != 0) {
            close(fd);
            failed++;
            if ((failed & (failed - 1)) == 0) /* the first, then at powers of two */
                fprintf(stderr, "httpd_tpc: pthread_create: %s: connection closed (%lu so far)\n",
                        strerror(e), failed);
        }
    }
}
