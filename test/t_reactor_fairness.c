/* No low-fd bias: when every handle is ready all the time, each one still gets its
 * share of the dispatches.
 *
 * 64 socketpairs; the read side of each is registered, and its peer has far more
 * data queued than the whole run consumes, so every handle is readable from start
 * to finish. Each dispatch reads exactly one byte and returns LF_KEEP, so the handle
 * is ready again the moment it is re-armed. Two threads turn the reactor until
 * 64 * 200 dispatches have been counted. A reactor that always scans its descriptor
 * set from fd 0 and hands out the first ready handle (ACE_TP_Reactor over a select
 * reactor does this) starves every handle but the lowest ones: their minimum would
 * be 0. We require every handle to get at least a third of the mean.
 *
 * On the side it also checks that one handler never runs on two threads at once
 * (every handle is ready all the time, so both threads would love to). */
#include "../lf_reactor.h"
#include "lf_test.h"

#include <sys/socket.h>

#define NH 64
#define PER 200
#define TOTAL ((long)NH * PER)
/* bytes queued per handle: more than the whole run could read from one handle, so
 * none ever runs dry, however unfair the reactor is */
#define FILL (TOTAL + 1024)

struct h {
    lf_handler h;
    int peer;                   /* the writing end, ours to close */
    long count;                 /* dispatches counted for this handle */
    LFT_ATOMIC(int) inside;     /* a thread is in handle_event right now */
};

static lf_reactor r;
static struct h hs[NH];
static LFT_ATOMIC(long) tickets;

static void sleep_us(long us)
{
    struct timespec ts = {0, us * 1000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static int on_event(lf_handler *lh, int fd, uint32_t ev)
{
    struct h *c = (struct h *)(void *)lh;
    char b;
    long t;

    /* exclusivity: no other thread may be inside this handler now */
    CHECK(atomic_exchange(&c->inside, 1) == 0);
    CHECK(ev & LF_EV_READ);
    /* the handle was reported readable and its peer holds plenty: a byte is there */
    CHECK_EQ(read(fd, &b, 1), 1);
    /* A short sleep: the threads would otherwise be CPU-bound on a shared machine,
     * and a thread preempted inside a handler keeps that handle out of every round
     * until it runs again, a deficit the scheduler causes, not the reactor. Sleeping
     * threads are rarely preempted, and a round now takes long enough that a lost
     * time slice costs few rounds. The reactor's choice is unchanged: the handle
     * stays readable, and the other thread leads meanwhile. */
    sleep_us(10);
    t = lft_add(&tickets, 1L);
    if (t < TOTAL) {
        c->count++; /* only counted dispatches: the totals add up to TOTAL exactly */
        lft_progress();
    }
    if (t == TOTAL - 1)
        CHECK_EQ(lf_reactor_stop(&r), 0); /* from inside a handler, as allowed */
    atomic_store(&c->inside, 0);
    return LF_KEEP;
}

static void *runner(void *arg)
{
    (void)arg;
    CHECK_EQ(lf_reactor_run(&r, NULL), ECANCELED);
    return NULL;
}

int main(void)
{
    static char fill[FILL];
    pthread_t th[2];
    long min = -1, max = 0, sum = 0;
    int minfd = -1, maxfd = -1;
    struct lf_reactor_stats st;
    double mean;

    lft_start("t_reactor_fairness", 30);
    memset(fill, 'x', sizeof fill);
    CHECK_EQ(lf_reactor_init(&r), 0);
    for (int i = 0; i < NH; i++) {
        int sv[2];
        size_t off = 0;
        CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
        CHECK(fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK) == 0);
        /* all the data up front, before any thread runs: nothing is written later,
         * so every handle's readiness is constant and the only variable is the
         * reactor's choice */
        while (off < sizeof fill) {
            ssize_t n = write(sv[1], fill + off, sizeof fill - off);
            CHECK(n > 0);
            off += (size_t)n;
        }
        hs[i].peer = sv[1];
        hs[i].h.handle_event = on_event;
        hs[i].h.handle_close = NULL;
        CHECK_EQ(lf_reactor_register(&r, &hs[i].h, sv[0], LF_EV_READ), 0);
    }
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&th[i], NULL, runner, NULL) == 0);
    for (int i = 0; i < 2; i++)
        CHECK(pthread_join(th[i], NULL) == 0);

    for (int i = 0; i < NH; i++) {
        sum += hs[i].count;
        if (min < 0 || hs[i].count < min) {
            min = hs[i].count;
            minfd = hs[i].h.fd;
        }
        if (hs[i].count > max) {
            max = hs[i].count;
            maxfd = hs[i].h.fd;
        }
    }
    mean = (double)sum / NH;
    CHECK_EQ(sum, TOTAL);
    CHECK(lf_reactor_stats(&r, &st) == 0);
    CHECK(st.dispatched >= (unsigned long long)TOTAL);
    if ((double)min < mean / 3) {
        fprintf(stderr, "t_reactor_fairness: fd %d got %ld dispatches, fd %d got %ld (mean %.1f)\n",
                minfd, min, maxfd, max, mean);
        for (int i = 0; i < NH; i++)
            fprintf(stderr, "  fd %d: %ld\n", hs[i].h.fd, hs[i].count);
    }
    CHECK((double)min >= mean / 3);

    CHECK_EQ(lf_reactor_destroy(&r), 0); /* closes the 64 registered read sides */
    for (int i = 0; i < NH; i++)
        close(hs[i].peer);
    printf("t_reactor_fairness %s/%s: %d handles, %ld dispatches, per handle min %ld "
           "(fd %d) max %ld (fd %d) mean %.1f\n",
           lf_promote_name(), lf_reactor_backend_name(), NH, TOTAL, min, minfd, max, maxfd,
           mean);
    return 0;
}
