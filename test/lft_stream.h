/* lft_stream.h - the record-stream harness reactor tests share (after lf_reactor.h and
 * lf_test.h). LFT_STREAMS connections (UNIX stream pairs); LFT_STREAM_WRITERS threads
 * send numbered records to them in bursts; LFT_STREAM_THREADS threads run the
 * reactor; the calling thread, a third party, reactivates every handler that parked
 * itself until every record is in. The test brings the handler, which reads in its own
 * way between lft_stream_enter and lft_stream_leave; the harness checks that records
 * come exactly once and in order and that no two threads are ever inside one handler. */
#ifndef LFT_STREAM_H_INCLUDED
#define LFT_STREAM_H_INCLUDED

#include <fcntl.h>
#include <sys/socket.h>

#define LFT_STREAMS 16
#define LFT_STREAM_THREADS 3
#define LFT_STREAM_WRITERS 2

struct lft_stream {
    lf_handler h;                /* first: the handler's pointer is the stream's */
    int peer;                    /* the writers' end */
    pthread_mutex_t wlock;       /* one writer at a time per connection */
    uint64_t next_out;           /* writers: the next record number, under wlock */
    struct lft_records in;       /* handler: the records read so far */
    LFT_ATOMIC(int) inside;
    LFT_ATOMIC(int) parked;      /* deactivated by itself, to be reactivated */
    unsigned dispatches;
};

static struct lft_stream lft_streams[LFT_STREAMS];
static lf_reactor *lft_stream_r;
static LFT_ATOMIC(long long) lft_stream_received;
static LFT_ATOMIC(int) lft_stream_writers_done;
static long long lft_stream_per_writer;

static inline struct lft_stream *lft_stream_enter(lf_handler *h)
{
    struct lft_stream *s = (struct lft_stream *)h;
    CHECK_EQ(lft_add(&s->inside, 1), 0);
    return s;
}

/* What one read returned (n < 0: nothing). */
static inline void lft_stream_take(struct lft_stream *s, const unsigned char *buf, ssize_t n)
{
    lft_add(&lft_stream_received, lft_records_take(&s->in, buf, n));
    lft_progress();
}

/* Every seventh dispatch the handler deactivates itself, for the third party to undo. */
static inline void lft_stream_leave(struct lft_stream *s)
{
    if (++s->dispatches % 7 == 0) {
        CHECK_EQ(lf_reactor_deactivate(lft_stream_r, &s->h), 0);
        lft_store(&s->parked, 1);
    }
    CHECK_EQ(lft_add(&s->inside, -1), 1);
}

/* A thread that runs the reactor arg until it is stopped. */
static void *lft_stream_runner(void *arg)
{
    CHECK_EQ(lf_reactor_run((lf_reactor *)arg, NULL), ECANCELED);
    return NULL;
}

static void *lft_stream_writer(void *arg)
{
    unsigned long long seed = 0x9e3779b97f4a7c15ULL * (unsigned long long)((long)arg + 1);
    for (long long i = 0; i < lft_stream_per_writer;) {
        struct lft_stream *s = &lft_streams[lft_rand(&seed) % LFT_STREAMS];
        int burst = 1 + (int)(lft_rand(&seed) % 6);
        pthread_mutex_lock(&s->wlock);
        for (int k = 0; k < burst && i < lft_stream_per_writer; k++, i++) {
            uint64_t seq = s->next_out++;
            CHECK_EQ(write(s->peer, &seq, 8), 8);
        }
        pthread_mutex_unlock(&s->wlock);
        if (lft_rand(&seed) % 8 == 0)
            lft_sleep_ms(0);
    }
    lft_add(&lft_stream_writers_done, 1);
    return NULL;
}

/* One run on a reactor made with flags: every handler registered with events.
 * Returns the records sent, each of which came once and in order. */
static long long lft_stream_run(lf_reactor *r, unsigned flags,
                                int (*handle_event)(lf_handler *, int, uint32_t),
                                uint32_t events)
{
    pthread_t th[LFT_STREAM_THREADS], wr[LFT_STREAM_WRITERS];
    long long want, sent = 0;
    lft_stream_r = r;
    lft_stream_per_writer = lft_scaled(40000);
    want = LFT_STREAM_WRITERS * lft_stream_per_writer;
    lft_store(&lft_stream_received, 0);
    lft_store(&lft_stream_writers_done, 0);
    CHECK_EQ(lf_reactor_init_flags(r, flags), 0);
    for (int i = 0; i < LFT_STREAMS; i++) {
        struct lft_stream *s = &lft_streams[i];
        int sv[2];
        CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
        CHECK(fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK) == 0);
        memset((void *)s, 0, sizeof *s);
        pthread_mutex_init(&s->wlock, NULL);
        s->peer = sv[1];
        lf_handler_init(&s->h, handle_event, NULL);
        CHECK_EQ(lf_reactor_register(r, &s->h, sv[0], events), 0);
    }
    for (long i = 0; i < LFT_STREAM_THREADS; i++)
        CHECK(pthread_create(&th[i], NULL, lft_stream_runner, r) == 0);
    for (long i = 0; i < LFT_STREAM_WRITERS; i++)
        CHECK(pthread_create(&wr[i], NULL, lft_stream_writer, (void *)i) == 0);

    /* the third party: reactivate parked handlers until everything arrived (a stall
     * is the watchdog's to report) */
    while (lft_load(&lft_stream_writers_done) < LFT_STREAM_WRITERS ||
           lft_load(&lft_stream_received) < want) {
        for (int i = 0; i < LFT_STREAMS; i++)
            if (lft_load(&lft_streams[i].parked)) {
                lft_store(&lft_streams[i].parked, 0);
                CHECK_EQ(lf_reactor_reactivate(r, &lft_streams[i].h), 0);
            }
        lft_sleep_ms(0);
    }
    for (int i = 0; i < LFT_STREAM_WRITERS; i++)
        CHECK(pthread_join(wr[i], NULL) == 0);
    CHECK_EQ(lf_reactor_stop(r), 0);
    for (int i = 0; i < LFT_STREAM_THREADS; i++)
        CHECK(pthread_join(th[i], NULL) == 0);
    for (int i = 0; i < LFT_STREAMS; i++) {
        CHECK_EQ(lft_streams[i].in.next_in, lft_streams[i].next_out);
        CHECK_EQ(lft_streams[i].in.have, 0);
        sent += (long long)lft_streams[i].next_out;
    }
    CHECK_EQ(sent, want);
    CHECK_EQ(lft_load(&lft_stream_received), sent);
    CHECK_EQ(lf_reactor_destroy(r), 0);
    for (int i = 0; i < LFT_STREAMS; i++) {
        close(lft_streams[i].peer);
        pthread_mutex_destroy(&lft_streams[i].wlock);
    }
    return sent;
}

#endif
