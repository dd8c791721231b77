/* Hybrid lf_bound: a send that waits for room (8 MiB to a server that starts reading
 * after 200 ms) runs no handler while it is the writer: a ready handler that sends on
 * the same bound would wait behind a request its own thread is writing (it used to, in
 * the reactor turn such a send took: for good), and would see the send's cancel
 * state. The handler runs afterwards (in the join's turns, or in the test's own if the
 * reply came first), with the caller's cancel state (enabled), and its own call on
 * the bound completes. */
#define LF_BOUND_REACTOR 1
#include "../lf_bound.h"
#include "lf_frames.h"

#include <sys/eventfd.h>
#include <sys/socket.h>

static lf_reactor r;
static lf_bound b;
static int peer;
static LFT_ATOMIC(int) inner_rc = -1;

static int on_ev(lf_handler *h, int fd, uint32_t ev)
{
    uint64_t x;
    lf_bound_ctx c;
    char buf[64];
    unsigned char req[12] = {2};
    (void)h;
    (void)ev;
    int st;
    if (read(fd, &x, 8) != 8)
        return LF_KEEP;
    /* run inside a send's wait for room: with the caller's cancel state, not the
     * library's (the send itself runs with cancellation off) */
    CHECK_EQ(pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &st), 0);
    CHECK_EQ(st, PTHREAD_CANCEL_ENABLE);
    CHECK_EQ(lf_bound_ctx_init(&c, buf, sizeof buf, 0), 0);
    lft_store(&inner_rc, lf_bound_call(&b, &c, 2, req, sizeof req, NULL));
    lf_bound_ctx_destroy(&c);
    return LF_KEEP;
}

static void *server(void *a)
{
    (void)a;
    lft_sleep_ms(200); /* the client's socket fills; its send waits for room */
    for (;;) {
        unsigned char hdr[12], rep[12] = {0};
        size_t got = 0;
        uint32_t l;
        while (got < 12) {
            ssize_t n = read(peer, hdr + got, 12 - got);
            if (n <= 0)
                return NULL;
            got += (size_t)n;
        }
        memcpy(&l, hdr + 8, 4);
        while (l > 0) {
            char body[65536];
            ssize_t n = read(peer, body, l < sizeof body ? l : sizeof body);
            if (n <= 0)
                return NULL;
            l -= (uint32_t)n;
            lft_progress();
        }
        memcpy(rep, hdr, 8);
        if (write(peer, rep, 12) != 12)
            return NULL;
    }
}

int main(void)
{
    int sv[2], efd;
    struct lf_bound_hooks k;
    lf_handler h;
    pthread_t st;
    size_t big = 8u << 20;
    unsigned char *req;
    uint32_t l = (uint32_t)big;
    lf_bound_ctx c;
    char buf[64];
    uint64_t one = 1;

    lft_start("t_reactor_bound_nested", 30);
    lft_pair(sv, 0);
    peer = sv[1];
    memset(&k, 0, sizeof k);
    k.header_len = 12;
    k.parse_header = lft_parse_short;
    lft_hybrid_open(&b, &r, sv[0], &k);
    CHECK((efd = eventfd(0, EFD_NONBLOCK)) >= 0);
    lf_handler_init(&h, on_ev, NULL);
    CHECK_EQ(lf_reactor_register(&r, &h, efd, LF_EV_READ), 0);
    CHECK(write(efd, &one, 8) == 8); /* ready before the send starts */
    CHECK(pthread_create(&st, NULL, server, NULL) == 0);
    CHECK((req = (unsigned char *)calloc(1, big + 12)) != NULL);
    req[0] = 1;
    memcpy(req + 8, &l, 4);
    CHECK_EQ(lf_bound_ctx_init(&c, buf, sizeof buf, 0), 0);
    CHECK_EQ(lf_bound_expect(&b, &c, 1), 0);
    CHECK_EQ(lf_bound_send(&b, req, big + 12), 0);
    CHECK_EQ(lft_load(&inner_rc), -1); /* the handler did not run in the send */
    CHECK_EQ(lf_bound_join(&b, &c, NULL), 0);
    while (lft_load(&inner_rc) == -1) { /* the reply may have come before a turn */
        int rc = lf_reactor_handle_events(&r, NULL);
        CHECK(rc == 0 || rc == ETIMEDOUT);
    }
    CHECK_EQ(lft_load(&inner_rc), 0); /* it ran after the send, and its call completed */
    lf_bound_ctx_destroy(&c);
    free(req);
    shutdown(sv[0], SHUT_RDWR);
    CHECK(pthread_join(st, NULL) == 0);
    CHECK_EQ(lf_reactor_stop(&r), 0);
    lft_hybrid_close(&b, &r);
    close(sv[1]);
    printf("t_reactor_bound_nested %s: an 8 MiB send waited for room and ran no handler; "
           "the handler ran in the join, its call completed\n", lf_reactor_backend_name());
    return 0;
}
