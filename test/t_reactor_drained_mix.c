/* LF_DRAINED among every other calling context at once. THREADS threads run the
 * reactor (on epoll also with LF_REACTOR_CONCURRENT), over UNIX socket pairs and over
 * TCP. Writers send numbered records in bursts, some split over two writes. Each
 * handler reads a random amount, once or until the socket is empty, and answers
 * LF_DRAINED only when it is true (EAGAIN or a short read), otherwise LF_KEEP or
 * LF_RESUMED at random; it turns its own LF_EV_WRITE on and off and now and then
 * deactivates itself. Two third parties drop and restore LF_EV_READ, add
 * LF_EV_WRITE, deactivate and reactivate, and notify; every handler has a periodic
 * timer. At the end the writers shut down and every handler must see its end of file.
 * Invariants: every record exactly once and in order, never two threads inside one
 * handler, no stall (the watchdog). A second round keeps the handles edge-triggered
 * most of the time (handlers read to EAGAIN and always answer LF_DRAINED, the third
 * parties act rarely), the mode in which epoll reports arrivals to busy handlers.
 * Compiled once per promotion policy x backend (poll and select take LF_DRAINED as
 * LF_KEEP: the same invariants hold). */
#include "../lf_reactor.h"
#define LFT_TCP /* lft_tcp_pair */
#include "lf_test.h"

#define THREADS 3
#define NCONN 12
#define WRITERS 2
#define THIRD 2

struct conn {
    lf_handler h;
    lf_timer t;
    int peer;
    pthread_mutex_t wlock;
    uint64_t next_out;           /* writers: the next record number, under wlock */
    struct lft_records in;       /* handler: the records read so far */
    unsigned long long rng;      /* handler's own */
    int write_on;                /* handler: it asked for LF_EV_WRITE itself */
    LFT_ATOMIC(int) inside;
    LFT_ATOMIC(int) parked;      /* deactivated, to be reactivated by a third party */
    LFT_ATOMIC(int) eof;
    LFT_ATOMIC(int) dropped;     /* a third party dropped LF_EV_READ */
};

static lf_reactor R;
static struct conn conns[NCONN];
static LFT_ATOMIC(long long) received;
static LFT_ATOMIC(int) stop_third, ending;
static long long per_writer;
static int mostly_et;

static int on_conn(lf_handler *h, int fd, uint32_t events)
{
    struct conn *c = (struct conn *)h;
    unsigned char buf[64];
    int did_read = 0, empty = 0, answer;
    CHECK_EQ(lft_add(&c->inside, 1), 0);
    if (events & LF_EV_TIMEOUT)
        (void)lf_timer_fired(&c->t);
    /* read when told to, and sometimes when not (readiness is a hint either way) */
    if ((events & LF_EV_READ) || lft_rand(&c->rng) % 3 == 0) {
        int loops = mostly_et || lft_rand(&c->rng) % 4 == 0 ? 1000 : 1;
        did_read = 1;
        for (int l = 0; l < loops; l++) {
            size_t ask = 1 + lft_rand(&c->rng) % sizeof buf;
            ssize_t n = read(fd, buf, ask);
            if (n == 0) { /* the writers are done: everything must be in */
                CHECK_EQ(c->in.next_in, c->next_out);
                CHECK_EQ(c->in.have, 0);
                lft_store(&c->eof, 1);
                lft_progress();
                CHECK_EQ(lft_add(&c->inside, -1), 1);
                return LF_REMOVE;
            }
            if (n < 0) {
                CHECK_EQ(errno, EAGAIN);
                empty = 1;
                break;
            }
            lft_add(&received, lft_records_take(&c->in, buf, n));
            lft_progress();
            if ((size_t)n < ask) { /* a short read on a stream: empty */
                empty = 1;
                break;
            }
        }
    }
    /* its own interest: LF_EV_WRITE on now and then, off again soon */
    if (c->write_on && (events & LF_EV_WRITE) && lft_rand(&c->rng) % 2 == 0) {
        CHECK_EQ(lf_reactor_modify(&R, h, LF_EV_READ), 0);
        c->write_on = 0;
    } else if (!c->write_on && lft_rand(&c->rng) % 50 == 0) {
        CHECK_EQ(lf_reactor_modify(&R, h, LF_EV_READ | LF_EV_WRITE), 0);
        c->write_on = 1;
    }
    if (!mostly_et && lft_rand(&c->rng) % 40 == 0) {
        CHECK_EQ(lf_reactor_deactivate(&R, h), 0);
        lft_store(&c->parked, 1);
    }
    unsigned long long r = lft_rand(&c->rng) % 10;
    if (did_read && empty)
        answer = mostly_et || r < 8 ? LF_DRAINED : r < 9 ? LF_KEEP : LF_RESUMED;
    else
        answer = r < 8 ? LF_KEEP : LF_RESUMED;
    CHECK_EQ(lft_add(&c->inside, -1), 1);
    if (answer == LF_RESUMED)
        CHECK_EQ(lf_reactor_reactivate(&R, h), 0);
    return answer;
}

static void sleep_us(unsigned long long us)
{
    struct timespec ts = {0, (long)(us * 1000)};
    nanosleep(&ts, NULL);
}

static void *runner(void *arg)
{
    (void)arg;
    CHECK_EQ(lf_reactor_run(&R, NULL), ECANCELED);
    return NULL;
}

static void *writer(void *arg)
{
    unsigned long long s = 0x9e3779b97f4a7c15ULL * (unsigned long long)((long)arg + 7);
    for (long long i = 0; i < per_writer;) {
        struct conn *c = &conns[lft_rand(&s) % NCONN];
        int burst = 1 + (int)(lft_rand(&s) % 8);
        pthread_mutex_lock(&c->wlock);
        for (int k = 0; k < burst && i < per_writer; k++, i++) {
            uint64_t seq = c->next_out++;
            if (lft_rand(&s) % 5 == 0) { /* a record over two writes */
                int cut = 1 + (int)(lft_rand(&s) % 7);
                CHECK_EQ(write(c->peer, &seq, (size_t)cut), cut);
                CHECK_EQ(write(c->peer, (char *)&seq + cut, (size_t)(8 - cut)), 8 - cut);
            } else {
                CHECK_EQ(write(c->peer, &seq, 8), 8);
            }
        }
        pthread_mutex_unlock(&c->wlock);
        if (lft_rand(&s) % 4 == 0)
            sleep_us(lft_rand(&s) % 50);
    }
    return NULL;
}

static void reactivate_parked(void)
{
    for (int i = 0; i < NCONN; i++)
        if (lft_load(&conns[i].parked)) {
            lft_store(&conns[i].parked, 0);
            int rc = lf_reactor_reactivate(&R, &conns[i].h);
            CHECK(rc == 0 || rc == ENOENT);
        }
}

/* A third party: every call a handler may meet from another thread. ENOENT: the
 * handler removed itself at its end of file. */
static void *third(void *arg)
{
    unsigned long long s = 0x1234567ULL * (unsigned long long)((long)arg + 3);
    while (!lft_load(&stop_third)) {
        struct conn *c = &conns[lft_rand(&s) % NCONN];
        int rc = 0, end = lft_load(&ending);
        switch (lft_rand(&s) % 8) {
        case 0:
            if (lft_load(&c->parked)) {
                lft_store(&c->parked, 0);
                rc = lf_reactor_reactivate(&R, &c->h);
            }
            break;
        case 1:
            if (!end && !lft_load(&c->dropped)) {
                lft_store(&c->dropped, 1);
                rc = lf_reactor_modify(&R, &c->h, 0);
            }
            break;
        case 2:
            if (lft_load(&c->dropped)) {
                lft_store(&c->dropped, 0);
                rc = lf_reactor_modify(&R, &c->h, LF_EV_READ);
            }
            break;
        case 3:
            rc = lf_reactor_notify(&R, &c->h, LF_EV_NOTIFY);
            break;
        case 4:
            rc = lf_reactor_modify(&R, &c->h,
                                   !end && lft_rand(&s) % 4 == 0 ? LF_EV_READ | LF_EV_WRITE
                                                                 : LF_EV_READ);
            break;
        case 5:
            if (!end && lf_reactor_deactivate(&R, &c->h) == 0)
                lft_store(&c->parked, 1);
            break;
        default:
            reactivate_parked();
            break;
        }
        CHECK(rc == 0 || rc == ENOENT);
        if (mostly_et)
            sleep_us(500 + lft_rand(&s) % 1000);
        else if (lft_rand(&s) % 4 == 0)
            sleep_us(lft_rand(&s) % 200);
    }
    return NULL;
}

static void run(unsigned flags, int tcp, int et)
{
    pthread_t th[THREADS], wr[WRITERS], tp[THIRD];
    mostly_et = et;
    lft_store(&received, 0);
    lft_store(&stop_third, 0);
    lft_store(&ending, 0);
    CHECK_EQ(lf_reactor_init_flags(&R, flags), 0);
    for (int i = 0; i < NCONN; i++) {
        struct conn *c = &conns[i];
        int sv[2];
        if (tcp) {
            lft_tcp_pair(sv, 1);
        } else {
            CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
            CHECK(fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK) == 0);
        }
        memset((void *)c, 0, sizeof *c);
        c->peer = sv[1];
        c->rng = 0x2545F4914F6CDD1DULL * (unsigned long long)(i + 1);
        pthread_mutex_init(&c->wlock, NULL);
        lf_handler_init(&c->h, on_conn, NULL);
        lf_timer_init(&c->t);
        CHECK_EQ(lf_reactor_register(&R, &c->h, sv[0], LF_EV_READ), 0);
        CHECK_EQ(lf_reactor_timer_start(&R, &c->t, &c->h, 1000000LL * (1 + i % 5),
                                        1000000LL * (2 + i % 7)),
                 0);
    }
    for (long i = 0; i < THREADS; i++)
        CHECK(pthread_create(&th[i], NULL, runner, NULL) == 0);
    for (long i = 0; i < WRITERS; i++)
        CHECK(pthread_create(&wr[i], NULL, writer, (void *)i) == 0);
    for (long i = 0; i < THIRD; i++)
        CHECK(pthread_create(&tp[i], NULL, third, (void *)i) == 0);
    for (int i = 0; i < WRITERS; i++)
        CHECK(pthread_join(wr[i], NULL) == 0);

    /* the end: the third parties stop taking things away, then stop; the timers
     * stop, so that from now on only the reactor's own reports bring what is left
     * (a timer's dispatch may read, and would hide data left unreported); every
     * handler gets its interest back and is reactivated until every record is in */
    lft_store(&ending, 1);
    lft_sleep_ms(20);
    lft_store(&stop_third, 1);
    for (int i = 0; i < THIRD; i++)
        CHECK(pthread_join(tp[i], NULL) == 0);
    for (int i = 0; i < NCONN; i++) {
        int rc = lf_reactor_timer_cancel(&R, &conns[i].t);
        CHECK(rc == 0 || rc == ENOENT);
        lft_store(&conns[i].dropped, 0);
        CHECK_EQ(lf_reactor_modify(&R, &conns[i].h, LF_EV_READ), 0);
    }
    while (lft_load(&received) < WRITERS * per_writer) {
        reactivate_parked();
        lft_sleep_ms(1);
    }
    for (int i = 0; i < NCONN; i++)
        CHECK(shutdown(conns[i].peer, SHUT_WR) == 0);
    for (int done = 0; done < NCONN;) {
        reactivate_parked();
        done = 0;
        for (int i = 0; i < NCONN; i++)
            done += lft_load(&conns[i].eof);
        lft_sleep_ms(1);
    }
    struct lf_reactor_stats st;
    CHECK_EQ(lf_reactor_stats(&R, &st), 0);
    CHECK_EQ(lf_reactor_stop(&R), 0);
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_join(th[i], NULL) == 0);
    long long sent = 0;
    for (int i = 0; i < NCONN; i++) {
        CHECK_EQ(conns[i].in.next_in, conns[i].next_out);
        sent += (long long)conns[i].next_out;
    }
    CHECK_EQ(sent, WRITERS * per_writer);
    CHECK_EQ(lft_load(&received), sent);
    CHECK_EQ(lf_reactor_destroy(&R), 0);
    for (int i = 0; i < NCONN; i++) {
        close(conns[i].peer);
        pthread_mutex_destroy(&conns[i].wlock);
    }
    printf("t_reactor_drained_mix %s%s %s%s: %lld records once and in order, every end of "
           "file seen (%llu dispatches, %llu re-arms, %llu reports deferred)\n",
           lf_reactor_backend_name(), flags ? " concurrent" : "", tcp ? "TCP" : "UNIX",
           et ? " mostly edge-triggered" : "", sent, st.dispatched, st.rearmed, st.deferred);
}

int main(void)
{
    lft_start("t_reactor_drained_mix", 30);
    per_writer = lft_scaled(20000);
    for (int et = 0; et < 2; et++)
        for (int tcp = 0; tcp < 2; tcp++) {
            run(0, tcp, et);
#if LF_REACTOR_BACKEND == LF_REACTOR_EPOLL
            run(LF_REACTOR_CONCURRENT, tcp, et);
#endif
        }
    lft_pass();
    return 0;
}
