/* bench/srv_tpc.c - thread per connection: the synchronous model of JAWS.
 *
 * The main thread blocks in accept(); each connection gets its own detached thread
 * that blocks in read(), serves every whole request and blocks in write() until the
 * client closes. No queue and no hand-off: the kernel's scheduler is the dispatcher,
 * and its cost grows with the number of threads (one per connection, so 10,000 in
 * the scaling rows), which is what this row is there to show.
 *
 *   srv_tpc [-p PORT] [-t THREADS]     -t is accepted and ignored
 *
 * Stacks are STACK bytes (the thread needs one buffer and a few frames), so 10,000
 * threads reserve about 700 MB of address space with their guard pages and touch
 * far less (about 120 MB resident with 10,000 connections). When a thread cannot be
 * created (EAGAIN: RLIMIT_NPROC, threads-max, memory) that connection is closed, a
 * warning goes to stderr (rate-limited) and the server goes on serving the others.
 *
 * Follows the SERVER CONTRACT in wire.h.
 */
#include "wire.h"
#include "srv_common.h"

#include <pthread.h>
#include <signal.h>
#include <stdint.h>

#define STACK (64 * 1024)
#define BUF (64 * WIRE_SIZE) /* up to 64 pipelined requests per read */

static void *conn_thread(void *arg)
{
    int fd = (int)(intptr_t)arg;
    unsigned char buf[BUF]; /* 4 KiB of the 64 KiB stack */
    size_t len = 0;

    for (;;) {
        ssize_t n = read(fd, buf + len, sizeof buf - len);
        if (n <= 0) {
            if (n < 0 && errno == EINTR)
                continue;
            break; /* 0: the client closed; <0: reset */
        }
        len += (size_t)n;
        size_t whole = len - len % WIRE_SIZE;
        for (size_t off = 0; off < whole; off += WIRE_SIZE)
            wire_serve(buf + off);
        if (whole > 0 && srv_write_all(fd, buf, whole) != 0)
            break;
        len -= whole; /* less than one request: the start of the next */
        memmove(buf, buf + whole, len);
    }
    close(fd);
    return NULL;
}

int main(int argc, char **argv)
{
    struct srv_args a = srv_parse(argc, argv, 1);
    pthread_attr_t attr;
    unsigned long failed = 0;

    signal(SIGPIPE, SIG_IGN); /* a client gone mid-reply is an error return, not death */
    srv_raise_nofile();
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_attr_setstacksize(&attr, STACK) != 0)
        fprintf(stderr, "srv_tpc: cannot use %d-byte stacks, using the default\n", STACK);
    int lfd = srv_listen(&a, 0);

    for (;;) {
        int fd = accept(lfd, NULL, NULL);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            /* EMFILE and friends: retrying at once would spin; the clients that
             * still hold connections will free descriptors, so wait a little. */
            perror("srv_tpc: accept");
            usleep(10000);
            continue;
        }
        srv_nodelay(fd);
        pthread_t t;
        int e = pthread_create(&t, &attr, conn_thread, (void *)(intptr_t)fd);
        if (e != 0) {
            close(fd);
            /* One line for the first failure and then at each power of two, so
             * 10,000 failed connections still leave a readable log. */
            failed++;
            if ((failed & (failed - 1)) == 0)
                fprintf(stderr, "srv_tpc: pthread_create: %s: connection closed (%lu so far)\n",
                        strerror(e), failed);
        }
    }
}
