/* The client that drives the README's echo server (test/readme_server.sh starts
 * it with a short idle timeout and gives us its port):
 *   1. a client that sends nothing is closed by the server's idle timeout;
 *   2. STUCK clients send until the server stops taking, reading nothing;
 *   3. meanwhile another client makes ROUNDS round trips (each needs a server thread:
 *      a server that blocked its threads on the stuck clients' output would stall);
 *   4. the stuck clients read (within the idle timeout): every byte they sent comes
 *      back, in order.
 * readme_client PORT IDLE_MS; exit 0 when all of it held. */
#include "lf_test.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#define STUCK 3
#define ROUNDS 500

static int dial(int port)
{
    struct sockaddr_in a;
    int fd = socket(AF_INET, SOCK_STREAM, 0), buf = 16 * 1024;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(fd >= 0);
    CHECK(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf) == 0);
    CHECK(connect(fd, (struct sockaddr *)&a, sizeof a) == 0);
    return fd;
}

static unsigned char pattern(long long i, int who)
{
    return (unsigned char)(i * 7 + (long long)who * 13 + (i >> 9));
}

int main(int argc, char **argv)
{
    int port, stuck[STUCK], active, quiet;
    long long sent[STUCK] = {0}, idle_ms;
    double t0;
    char c;

    CHECK(argc == 3);
    port = atoi(argv[1]);
    idle_ms = atoll(argv[2]);
    signal(SIGPIPE, SIG_IGN);
    lft_start("readme_client", 30);

    /* 1 */
    quiet = dial(port);
    t0 = lft_now();
    CHECK_EQ(read(quiet, &c, 1), 0); /* the server hung up on us */
    CHECK((lft_now() - t0) * 1000 >= idle_ms * 0.9);
    close(quiet);
    idle_ms = (long long)((lft_now() - t0) * 1000);
    /* 2 */
    for (int i = 0; i < STUCK; i++) {
        stuck[i] = dial(port);
        CHECK(fcntl(stuck[i], F_SETFL, O_NONBLOCK) == 0);
    }
    for (int idle_rounds = 0; idle_rounds < 5;) {
        int progress = 0;
        for (int i = 0; i < STUCK; i++) {
            unsigned char b[4096];
            ssize_t n;
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
        idle_rounds = progress ? 0 : idle_rounds + 1;
        if (!progress)
            lft_sleep_ms(10); /* the server may still be taking: look again */
        lft_progress();
    }
    /* 3 */
    active = dial(port);
    for (int k = 0; k < ROUNDS; k++) {
        unsigned char q[64], a[64];
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
    /* 4 (the first one half-closes first: it must still get every byte, then EOF) */
    for (int i = 0; i < STUCK; i++) {
        long long got = 0;
        unsigned char b[8192];
        CHECK(fcntl(stuck[i], F_SETFL, 0) == 0);
        if (i == 0)
            CHECK(shutdown(stuck[i], SHUT_WR) == 0);
        while (got < sent[i]) {
            ssize_t n = read(stuck[i], b, sizeof b);
            CHECK(n > 0);
            for (ssize_t k = 0; k < n; k++)
                CHECK_EQ(b[k], pattern(got + k, i));
            got += n;
            lft_progress();
        }
        if (i == 0)
            CHECK_EQ(read(stuck[i], b, sizeof b), 0); /* then the server closes */
        close(stuck[i]);
    }
    close(active);
    printf("readme_client: %d clients stopped reading (%lld KiB sent each), %d round trips "
           "of another went on, an idle one was closed after %.0f ms, every byte came back "
           "(also to one that half-closed first)\n",
           STUCK, sent[0] / 1024, ROUNDS, (double)idle_ms);
    return 0;
}
