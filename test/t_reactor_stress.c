/* The reactor under churn: every message dispatched exactly once, in order, and never
 * two threads inside one handler, while handlers come and go, fd numbers are reused,
 * periodic timers fire and notifications arrive.
 *
 * SLOTS connection slots cycle through lifecycles: open a socketpair, register the
 * read end, arm a 0.5 ms periodic timer, write MSGS tagged messages (with
 * notifications in between), the handler reads them (at most 4 per dispatch, so the
 * handle is re-armed and dispatched many times), checks each tag and sequence number,
 * and removes itself after the last one; handle_close frees the slot for its next
 * lifecycle, whose socketpair usually gets the same fd numbers back. */
#include "../lf_reactor.h"
#include "lf_test.h"

#include <sys/socket.h>

#define SLOTS 48
#define WRITERS 2
#define RUNNERS 4
#define MSGS 200
#define PER_DISPATCH 4 /* messages read per dispatch at most; LF_TEST_PER_DISPATCH sets it */

enum { FREE, WRITING, DRAINING, CLOSED };

typedef struct msg {
    uint32_t tag; /* (lifecycle << 8) | slot */
    uint32_t seq;
} msg;

typedef struct conn {
    lf_handler h;
    lf_timer timer;
    int slot, peer;
    uint32_t tag;
    uint32_t next_seq;   /* handler-only (one thread inside at a time) */
    unsigned char part[sizeof(msg)];
    size_t part_len;     /* bytes of a message split across reads */
    LFT_ATOMIC(int) inside;
    LFT_ATOMIC(int) state;
    LFT_ATOMIC(int) closes; /* handle_close calls for the current lifecycle */
    long lifecycles;        /* writer-only */
    int written;            /* writer-only */
} conn;

static lf_reactor r;
static conn slots[SLOTS];
static long long quota; /* lifecycles per slot */
static int per_dispatch = PER_DISPATCH;
static unsigned long long min_dispatched; /* LF_TEST_MIN_DISPATCH: fail below it */
static LFT_ATOMIC(long long) received, ticks, notes, lifecycles_closed, reregister_early;

static int on_event(lf_handler *h, int fd, uint32_t events)
{
    conn *c = (conn *)h;
    int n = lft_add(&c->inside, 1) + 1;
    int rc = LF_KEEP;

    CHECK_EQ(n, 1); /* the protocol's promise: one thread per handler */
    if (events & LF_EV_TIMEOUT)
        lft_add(&ticks, 1LL);
    if (events & LF_EV_NOTIFY)
        lft_add(&notes, 1LL);
    if (events & (LF_EV_READ | LF_EV_CLOSE)) {
        for (int k = 0; k < per_dispatch && rc == LF_KEEP; k++) {
            ssize_t got = read(fd, c->part + c->part_len, sizeof(msg) - c->part_len);
            if (got <= 0) {
                CHECK(got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
                break; /* spurious readiness is allowed; EOF is not expected here */
            }
            c->part_len += (size_t)got;
            if (c->part_len < sizeof(msg))
                continue;
            c->part_len = 0;
            msg m;
            memcpy(&m, c->part, sizeof m);
            if (m.tag != c->tag || m.seq != c->next_seq)
                fprintf(stderr, "slot %d: got tag %x seq %u, expected tag %x seq %u\n", c->slot,
                        m.tag, m.seq, c->tag, c->next_seq);
            CHECK_EQ(m.tag, c->tag);      /* never another registration's data */
            CHECK_EQ(m.seq, c->next_seq); /* exactly once, in order */
            c->next_seq++;
            lft_add(&received, 1LL);
            if (c->next_seq == MSGS)
                rc = LF_REMOVE; /* the last one: remove ourselves from inside */
        }
    }
    lft_add(&c->inside, -1);
    lft_progress();
    return rc;
}

static void on_close(lf_handler *h)
{
    conn *c = (conn *)h;
    CHECK_EQ(lft_load(&c->inside), 0); /* after the last thread left */
    CHECK_EQ(c->next_seq, MSGS);        /* removed only after the last message */
    CHECK_EQ(lft_add(&c->closes, 1), 0); /* exactly once */
    lft_add(&lifecycles_closed, 1LL);
    lft_store(&c->state, CLOSED);
}

static void start_lifecycle(conn *c)
{
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    CHECK(fcntl(sv[0], F_SETFL, O_NONBLOCK) == 0);
    c->peer = sv[1];
    c->tag = ((uint32_t)c->lifecycles << 8) | (uint32_t)c->slot;
    c->lifecycles++;
    c->next_seq = 0;
    c->part_len = 0;
    c->written = 0;
    lft_store(&c->closes, 0);
    lft_store(&c->state, WRITING);
    c->h.handle_event = on_event;
    c->h.handle_close = on_close;
    lf_timer_init(&c->timer);
    /* handle_close stored CLOSED as its last step; until it has returned, the record
     * is refused (EEXIST): try again, as the contract says */
    int rc;
    while ((rc = lf_reactor_register(&r, &c->h, sv[0], LF_EV_READ)) == EEXIST)
        lft_add(&reregister_early, 1LL);
    CHECK_EQ(rc, 0);
    CHECK_EQ(lf_reactor_timer_start(&r, &c->timer, &c->h, 500000, 500000), 0);
}

static void *writer(void *arg)
{
    long w = (long)arg;
    unsigned long long rnd = (unsigned long long)w * 7919 + 1;
    for (;;) {
        int busy = 0, wrote = 0;
        for (int i = (int)w; i < SLOTS; i += WRITERS) {
            conn *c = &slots[i];
            int st = lft_load(&c->state);
            if (st == CLOSED) {
                close(c->peer);
                lft_store(&c->state, FREE);
                st = FREE;
            }
            if (st == FREE && c->lifecycles < quota) {
                start_lifecycle(c);
                st = WRITING;
            }
            if (st == WRITING) {
                msg batch[16];
                int n = 1 + (int)(lft_rand(&rnd) % 16);
                if (n > MSGS - c->written)
                    n = MSGS - c->written;
                for (int k = 0; k < n; k++) {
                    batch[k].tag = c->tag;
                    batch[k].seq = (uint32_t)(c->written + k);
                }
                /* notify while the handler cannot have removed itself yet */
                if (lft_rand(&rnd) % 4 == 0)
                    CHECK_EQ(lf_reactor_notify(&r, &c->h, LF_EV_NOTIFY), 0);
                /* DRAINING before the last write: once it is written the handler may
                 * remove itself and handle_close store CLOSED at any moment */
                if (c->written + n == MSGS)
                    lft_store(&c->state, DRAINING);
                CHECK(write(c->peer, batch, (size_t)n * sizeof(msg)) == (ssize_t)(n * sizeof(msg)));
                c->written += n;
                wrote = 1;
            }
            if (st != FREE || c->lifecycles < quota)
                busy = 1;
        }
        if (!busy)
            return NULL;
        if (!wrote)
            lft_sleep_ms(1); /* only draining lifecycles left: do not spin */
    }
}

static void *runner(void *arg)
{
    CHECK_EQ(lf_reactor_run(&r, NULL), ECANCELED);
    return arg;
}

static void scenario(unsigned flags, const char *mode)
{
    pthread_t run[RUNNERS], wr[WRITERS];
    struct lf_reactor_stats s;

    lft_store(&received, 0LL);
    lft_store(&ticks, 0LL);
    lft_store(&notes, 0LL);
    lft_store(&lifecycles_closed, 0LL);
    for (int i = 0; i < SLOTS; i++) {
        memset((void *)&slots[i], 0, sizeof slots[i]);
        slots[i].slot = i;
        lft_store(&slots[i].state, FREE);
    }
    CHECK_EQ(lf_reactor_init_flags(&r, flags), 0);
    double t0 = lft_now();
    for (long i = 0; i < RUNNERS; i++)
        CHECK(pthread_create(&run[i], NULL, runner, (void *)i) == 0);
    for (long i = 0; i < WRITERS; i++)
        CHECK(pthread_create(&wr[i], NULL, writer, (void *)i) == 0);
    for (int i = 0; i < WRITERS; i++)
        CHECK(pthread_join(wr[i], NULL) == 0);
    CHECK_EQ(lf_reactor_stop(&r), 0);
    for (int i = 0; i < RUNNERS; i++)
        CHECK(pthread_join(run[i], NULL) == 0);
    double el = lft_now() - t0;

    CHECK_EQ(lf_reactor_stats(&r, &s), 0);
    CHECK_EQ(lft_load(&received), (long long)SLOTS * quota * MSGS);
    CHECK_EQ(lft_load(&lifecycles_closed), (long long)SLOTS * quota);
    CHECK_EQ(s.registered, (unsigned long long)SLOTS * quota);
    CHECK_EQ(s.removed, (unsigned long long)SLOTS * quota);
    CHECK(s.timers > 0 && lft_load(&ticks) > 0);
    CHECK(s.notified > 0 && lft_load(&notes) > 0);
    CHECK_EQ(s.pool.leader + s.pool.followers + s.pool.processing + s.pool.joined, 0);
    if (s.dispatched < min_dispatched)
        fprintf(stderr, "only %llu dispatches, %llu wanted\n", s.dispatched, min_dispatched);
    CHECK(s.dispatched >= min_dispatched);
    CHECK_EQ(lf_reactor_destroy(&r), 0);
    for (int i = 0; i < SLOTS; i++)
        if (lft_load(&slots[i].state) == CLOSED)
            close(slots[i].peer);
    printf("t_reactor_stress %s/%s %s: %lld lifecycles, %lld messages exactly once in %.2f s; "
           "%llu dispatches, %llu timer expiries, %llu notifications, %llu deferred, "
           "%llu stale, %llu kicks\n",
           lf_reactor_backend_name(), lf_promote_name(), mode, (long long)SLOTS * quota,
           lft_load(&received), el, s.dispatched, s.timers, s.notified, s.deferred, s.stale,
           s.kicks);
}

int main(void)
{
    lft_start("t_reactor_stress", 30);
    quota = lft_scaled(40);
    per_dispatch = (int)lft_env("LF_TEST_PER_DISPATCH", per_dispatch);
    if (per_dispatch < 1)
        per_dispatch = 1;
    min_dispatched = (unsigned long long)lft_env("LF_TEST_MIN_DISPATCH", (long long)min_dispatched);
    scenario(0, "single leader");
#if LF_REACTOR_BACKEND == LF_REACTOR_EPOLL
    /* the relaxed variant must keep every promise the single leader keeps */
    scenario(LF_REACTOR_CONCURRENT, "concurrent leaders");
#else
    lf_reactor test;
    CHECK_EQ(lf_reactor_init_flags(&test, LF_REACTOR_CONCURRENT), ENOTSUP);
#endif
    return 0;
}
