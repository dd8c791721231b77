/* Output that never blocks a thread: an echo server whose handlers write what the
 * socket takes, keep the rest, ask for WRITE (lf_reactor_modify) until it is out,
 * and stop reading a client whose backlog is full (back-pressure), on 2 threads.
 *   STUCK clients send LOTS bytes each and read nothing; meanwhile an active client
 *   makes ROUNDS round trips, each of which needs a thread of the server. With
 *   output written by blocking (our old bench server polled inside its handler) the
 *   two threads sit in the stuck clients' handlers and the active client never gets
 *   an answer (the watchdog fails the test). Then the stuck clients read: each gets
 *   back every byte it sent, in order. Compiled once per promotion policy x backend. */
#include "../lf_reactor.h"
#include "lf_test.h"

#include <signal.h>
#include <sys/socket.h>

#define THREADS 2
#define STUCK 4
#define BACKLOG ((size_t)64 * 1024) /* a connection's output kept before it stops reading */

static lf_reactor R;

struct conn {
    lf_handler h;
    unsigned char *out;
    size_t len, off;
    uint32_t want;
};

/* write what the socket takes: 0 all out, 1 some left, -1 the connection failed */
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

static int on_conn(lf_handler *h, int fd, uint32_t ev)
{
    struct conn *c = (struct conn *)h;
    uint32_t want;
    int left;
    if ((ev & LF_EV_READ) && c->len < BACKLOG) {
        ssize_t n = read(fd, c->out + c->len, 2 * BACKLOG - c->len);
        if (n == 0 || (n < 0 && errno != EAGAIN))
            return LF_REMOVE;
        if (n > 0)
            c->len += (size_t)n;
    }
    if ((left = flush_out(c)) < 0)
        return LF_REMOVE;
    want = (c->len < BACKLOG ? LF_EV_READ : 0u) | (left ? LF_EV_WRITE : 0u);
    if (want != c->want) {
        CHECK_EQ(lf_reactor_modify(&R, h, want), 0);
        c->want = want;
    }
    lft_progress();
    return LF_KEEP;
}

static void on_close(lf_handler *h)
{
    struct conn *c = (struct conn *)h;
    free(c->out);
    free(c);
}

static void serve(int fd)
{
    struct conn *c = (struct conn *)calloc(1, sizeof *c);
    CHECK(c != NULL);
    CHECK((c->out = (unsigned char *)malloc(2 * BACKLOG)) != NULL);
    CHECK(fcntl(fd, F_SETFL, O_NONBLOCK) == 0);
    lf_handler_init(&c->h, on_conn, on_close);
    c->want = LF_EV_READ;
    CHECK_EQ(lf_reactor_register(&R, &c->h, fd, LF_EV_READ), 0);
}

static void *runner(void *arg)
{
    (void)arg;
    CHECK_EQ(lf_reactor_run(&R, NULL), ECANCELED);
    return NULL;
}

static unsigned char pattern(long long i, int who)
{
    return (unsigned char)(i * 7 + (long long)who * 13 + (i >> 9));
}

int main(void)
{
    pthread_t th[THREADS];
    int stuck[STUCK], active, s[2];
    long long lots = lft_scaled(4LL << 20), rounds = lft_scaled(2000);
    long long sent[STUCK] = {0};

    signal(SIGPIPE, SIG_IGN);
    lft_start("t_reactor_output", 30);
    CHECK_EQ(lf_reactor_init(&R), 0);
    for (int i = 0; i < STUCK; i++) {
        int buf = 16 * 1024;
        CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, s) == 0);
        CHECK(setsockopt(s[1], SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf) == 0);
        CHECK(fcntl(s[1], F_SETFL, O_NONBLOCK) == 0);
        stuck[i] = s[1];
        serve(s[0]);
    }
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, s) == 0);
    active = s[1];
    serve(s[0]);
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_create(&th[i], NULL, runner, NULL) == 0);

    /* the stuck clients write until the server stops taking (its backlog and both
     * sockets' buffers full), reading nothing */
    for (int progress = 1; progress;) {
        progress = 0;
        for (int i = 0; i < STUCK; i++) {
            unsigned char b[4096];
            ssize_t n;
            if (sent[i] >= lots)
                continue;
            for (int k = 0; k < (int)sizeof b; k++)
                b[k] = pattern(sent[i] + k, i);
            n = send(stuck[i], b, sizeof b, MSG_NOSIGNAL);
            if (n > 0) {
                sent[i] += n;
                progress = 1;
            } else {
                CHECK(n < 0 && errno == EAGAIN);
            }
        }
        if (!progress) { /* maybe the server is still catching up: look again */
            lft_sleep_ms(20);
            for (int i = 0; i < STUCK && !progress; i++) {
                unsigned char b[1] = {pattern(sent[i], i)};
                if (send(stuck[i], b, 1, MSG_NOSIGNAL) == 1) {
                    sent[i]++;
                    progress = 1;
                }
            }
        }
        lft_progress();
    }
    for (int i = 0; i < STUCK; i++)
        CHECK(sent[i] > (long long)BACKLOG); /* the server took more than one backlog: it flowed */

    /* every stuck connection is now full both ways: the active client still gets
     * every answer */
    for (long long k = 0; k < rounds; k++) {
        unsigned char q[32], a[32];
        size_t got = 0;
        for (int j = 0; j < (int)sizeof q; j++)
            q[j] = pattern(k + j, 9);
        CHECK(send(active, q, sizeof q, MSG_NOSIGNAL) == (ssize_t)sizeof q);
        while (got < sizeof a) {
            ssize_t n = read(active, a + got, sizeof a - got);
            CHECK(n > 0);
            got += (size_t)n;
        }
        CHECK(memcmp(q, a, sizeof q) == 0);
        lft_progress();
    }

    /* now the stuck clients read: every byte they sent comes back, in order */
    for (int i = 0; i < STUCK; i++)
        CHECK(fcntl(stuck[i], F_SETFL, 0) == 0);
    for (int i = 0; i < STUCK; i++) {
        long long got = 0;
        unsigned char b[8192];
        while (got < sent[i]) {
            ssize_t n = read(stuck[i], b, sizeof b);
            CHECK(n > 0);
            for (ssize_t k = 0; k < n; k++)
                CHECK_EQ(b[k], pattern(got + k, i));
            got += n;
            lft_progress();
        }
        CHECK_EQ(got, sent[i]);
        close(stuck[i]);
    }
    close(active);
    CHECK_EQ(lf_reactor_stop(&R), 0);
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_join(th[i], NULL) == 0);
    CHECK_EQ(lf_reactor_destroy(&R), 0);
    printf("t_reactor_output %s: %d clients stopped reading with %lld KiB sent each; "
           "%lld round trips of another client went on; then every byte came back\n",
           lf_reactor_backend_name(), STUCK, sent[0] / 1024, rounds);
    lft_pass();
    return 0;
}
