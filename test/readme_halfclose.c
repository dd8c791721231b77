/* The README's server (its echo_server.c block, included here with its main renamed)
 * against a client that half-closes: the client writes 50,000 bytes, shuts its write
 * side and reads only after 300 ms. The server's side of the socketpair has a 4 KiB
 * send buffer, so most of the echo is still in the server's own buffer when it reads
 * the end of the input: all 50,000 bytes must come back, then EOF.
 * Built by test/readme_server.sh: cc ... -DECHO_SERVER='"OUT/echo_server.c"' */
#define main echo_server_main
#include ECHO_SERVER
#undef main
#include "lf_test.h"

#define TOTAL 50000

int main(void)
{
    int sv[2], small = 4096;
    pthread_t th;
    unsigned char buf[8192];
    size_t sent = 0, got = 0;
    ssize_t n;
    struct conn *c = calloc(1, sizeof *c);

    lft_start("readme_halfclose", 30);
    (void)echo_server_main;
    CHECK(c != NULL && (c->out = malloc(2 * BACKLOG)) != NULL);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    CHECK(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small) == 0);
    CHECK(setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof small) == 0);
    CHECK(fcntl(sv[0], F_SETFL, O_NONBLOCK) == 0);
    CHECK(lf_reactor_init(&reactor) == 0);
    lf_handler_init(&c->h, on_conn, on_conn_close);
    lf_timer_init(&c->idle);
    c->want = LF_EV_READ | LF_EV_WRITE; /* as on_accept registers it */
    CHECK(lf_reactor_register(&reactor, &c->h, sv[0], c->want) == 0);
    CHECK(pthread_create(&th, NULL, run, NULL) == 0);

    while (sent < TOTAL) {
        for (size_t k = 0; k < sizeof buf; k++)
            buf[k] = (unsigned char)((sent + k) * 7 + ((sent + k) >> 9));
        n = write(sv[1], buf, TOTAL - sent < sizeof buf ? TOTAL - sent : sizeof buf);
        CHECK(n > 0);
        sent += (size_t)n;
        lft_progress();
    }
    CHECK(shutdown(sv[1], SHUT_WR) == 0);
    lft_sleep_ms(300); /* the server reads the EOF while its echo waits in c->out */
    while ((n = read(sv[1], buf, sizeof buf)) > 0) {
        for (ssize_t k = 0; k < n; k++)
            CHECK_EQ(buf[k], (unsigned char)((got + (size_t)k) * 7 + ((got + (size_t)k) >> 9)));
        got += (size_t)n;
        lft_progress();
    }
    CHECK_EQ(n, 0);
    CHECK_EQ(got, (size_t)TOTAL);
    lf_reactor_stop(&reactor);
    CHECK(pthread_join(th, NULL) == 0);
    CHECK(lf_reactor_destroy(&reactor) == 0);
    close(sv[1]);
    printf("readme_halfclose: %d bytes sent, half-closed, all %zu echoed back, then EOF\n", TOTAL,
           got);
    return 0;
}
