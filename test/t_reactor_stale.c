/* Generation tags: an event the reactor harvested for one registration is never
 * delivered to a later registration that got the same fd number.
 *   A (deterministic, one thread, lf_reactor_handle_events = one event per call):
 *      handlers A and C are both ready, so one wait harvests both events. Whichever
 *      is dispatched first removes the other (its partner) and returns LF_KEEP; the
 *      partner's event is left in the leader's buffer. In the first round the
 *      handlers keep their fds (LF_EV_KEEPFD), so the partner's number is free at
 *      once: it is reused (dup2) for a new handler B that has no data while the event
 *      is still buffered. That event must be dropped as stale, not dispatched to B; B
 *      then gets exactly its own bytes. A second round lets the reactor own the fds:
 *      the number stays taken (closing) until the partner's close, and the buffered
 *      event finds no handler and is dropped as well.
 *   B (randomized churn): threads turn the reactor while writers send messages
 *      tagged with the id of the registration they were written for, and a churn
 *      loop removes handlers and registers new ones on the same fd numbers. Every
 *      handler reads only messages with its own id, is never dispatched for a
 *      readiness it does not have, and is closed exactly once.
 * Compiled once per promotion policy x backend. */
#include "../lf_reactor.h"
#include "lf_test.h"

#include <signal.h>
#include <sys/socket.h>

static lf_reactor R;
static int spare; /* an open descriptor to dup2 onto numbers we are holding */

static void set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    CHECK(fl != -1);
    CHECK(fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0);
}

/* The reactor closes a removed handler's fd right after its handle_close (on a
 * thread that runs it). Wait for that, then hold the number with a placeholder, so
 * that no socketpair made meanwhile takes it and the reactor can no longer close it.
 * Only the thread calling this creates descriptors in this test. */
static void hold_number(int n)
{
    int ok;
    WAIT_FOR(ok, fcntl(n, F_GETFD) == -1 && errno == EBADF, 5000);
    CHECK(ok);
    CHECK_EQ(dup2(spare, n), n);
}

/* A new socketpair whose reactor end gets the held number n (replacing the
 * placeholder), so the number is reused for sure. Both ends non-blocking. */
static int reuse_number(int n, int type)
{
    int t[2];
    CHECK(socketpair(AF_UNIX, type, 0, t) == 0);
    CHECK(t[0] != n && t[1] != n); /* n is held */
    CHECK_EQ(dup2(t[0], n), n);
    close(t[0]);
    set_nonblock(n);
    set_nonblock(t[1]);
    return t[1];
}

static struct lf_reactor_stats stats_now(void)
{
    struct lf_reactor_stats st;
    CHECK_EQ(lf_reactor_stats(&R, &st), 0);
    return st;
}

/* ------------------------------------------------------------------ A */

typedef struct tagged {
    lf_handler h;
    char name;
    int peer;
    struct tagged *partner;
    int dispatches;           /* the test thread is the only one dispatching */
    char got[64];
    size_t got_len;
    LFT_ATOMIC(int) closes;   /* handle_close calls */
} tagged;

static tagged *first;

static int tagged_event(lf_handler *h, int fd, uint32_t events)
{
    tagged *t = (tagged *)h;
    ssize_t n;

    t->dispatches++;
    CHECK(events & LF_EV_READ);
    CHECK_EQ(fd, h->fd);
    while ((n = read(fd, t->got + t->got_len, sizeof t->got - 1 - t->got_len)) > 0)
        t->got_len += (size_t)n;
    t->got[t->got_len] = '\0';
    if (first == NULL && t->partner) {
        /* the partner's event was harvested in the same wait and is still buffered */
        first = t;
        CHECK_EQ(lf_reactor_remove(&R, &t->partner->h), 0);
    }
    lft_progress();
    return LF_KEEP;
}

static void tagged_close(lf_handler *h)
{
    lft_add(&((tagged *)h)->closes, 1);
    lft_progress();
}

static void tagged_open(tagged *t, char name, int fd, int peer, uint32_t flags)
{
    memset((void *)t, 0, sizeof *t);
    t->name = name;
    t->peer = peer;
    t->h.handle_event = tagged_event;
    t->h.handle_close = tagged_close;
    CHECK_EQ(lf_reactor_register(&R, &t->h, fd, LF_EV_READ | flags), 0);
    CHECK_EQ(t->h.fd, fd);
}

static int turn(long long ns)
{
    struct timespec dl;
    CHECK_EQ(lf_deadline_in(&dl, ns), 0);
    int rc = lf_reactor_handle_events(&R, &dl);
    CHECK(rc == 0 || rc == ETIMEDOUT);
    lft_progress();
    return rc;
}

static unsigned long long part_a(int reuse)
{
    tagged a, c, b, *p;
    int sv[2], n, ok;
    struct lf_reactor_stats before, after;

    CHECK_EQ(lf_reactor_init(&R), 0);
    first = NULL;
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    set_nonblock(sv[0]);
    tagged_open(&a, 'A', sv[0], sv[1], reuse ? LF_EV_KEEPFD : 0);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    set_nonblock(sv[0]);
    tagged_open(&c, 'C', sv[0], sv[1], reuse ? LF_EV_KEEPFD : 0);
    a.partner = &c;
    c.partner = &a;
    CHECK_EQ(write(a.peer, "a", 1), 1);
    CHECK_EQ(write(c.peer, "c", 1), 1);

    /* one turn: both are ready, so the wait harvests both; one is dispatched */
    CHECK_EQ(turn(2000000000LL), 0);
    CHECK(first == &a || first == &c);
    p = first->partner;
    CHECK_EQ(first->dispatches, 1);
    CHECK_EQ(p->dispatches, 0);
    CHECK_EQ(first->got_len, 1);
    CHECK_EQ(first->got[0], first->name == 'A' ? 'a' : 'c');
    n = p->h.fd;
    before = stats_now();
    CHECK_EQ(before.removed, 1);

    if (reuse) {
        /* LF_EV_KEEPFD, removed by another handler while nobody dispatched it: the
         * number is ours at once. B on it, nothing written to it yet, while the
         * partner's event is still buffered */
        int bpeer;
        CHECK_EQ(dup2(spare, n), n); /* closes the partner's socket, holds the number */
        bpeer = reuse_number(n, SOCK_STREAM);
        tagged_open(&b, 'B', n, bpeer, 0);
    } else {
        /* the reactor owns the fd: until the close has run, the number is taken */
        lf_handler_init(&b.h, tagged_event, tagged_close);
        CHECK_EQ(lf_reactor_register(&R, &b.h, n, LF_EV_READ), EEXIST);
    }
    /* the buffered event comes out in the first of these turns: it must be dropped */
    for (int i = 0; i < 3; i++)
        turn(30000000LL);
    after = stats_now();
    CHECK_EQ(p->dispatches, 0);
    CHECK_EQ(first->dispatches, 1); /* drained and re-armed: nothing more for it */
    CHECK_EQ(after.dispatched, before.dispatched);
    CHECK(after.stale >= before.stale + 1);
    if (!reuse) {
        /* the partner's close ran in one of those turns, and closed its fd */
        WAIT_FOR(ok, (turn(1000000LL), lft_load(&p->closes) == 1), 5000);
        CHECK(ok);
        hold_number(n);
        close(n);
    }
    if (reuse) {
        CHECK_EQ(b.dispatches, 0); /* the old registration's event is not B's */

        /* B's own data: exactly its bytes, through its own fd */
        CHECK_EQ(write(b.peer, "B-only", 6), 6);
        for (int i = 0; i < 10 && b.dispatches == 0; i++)
            turn(1000000000LL);
        CHECK_EQ(b.dispatches, 1);
        CHECK_EQ(b.got_len, 6);
        CHECK(memcmp(b.got, "B-only", 6) == 0);
        CHECK_EQ(b.h.fd, n);
        CHECK_EQ(p->dispatches, 0);
        CHECK_EQ(first->dispatches, 1);
    }

    CHECK_EQ(lf_reactor_destroy(&R), 0);
    CHECK_EQ(lft_load(&a.closes), 1);
    CHECK_EQ(lft_load(&c.closes), 1);
    if (reuse)
        close(first->h.fd); /* LF_EV_KEEPFD: ours to close */
    close(a.peer);
    close(c.peer);
    if (reuse) {
        CHECK_EQ(lft_load(&b.closes), 1);
        close(b.peer);
    }
    return after.stale;
}

/* ------------------------------------------------------------------ B */

#define SLOTS 64
#define CH_RUNNERS 3
#define WRITERS 2
#define MAXREG 4096

typedef struct msg {
    uint32_t id; /* the registration it was written for */
    uint32_t seq;
} msg;

typedef struct reg {
    lf_handler h;
    uint32_t id;
    LFT_ATOMIC(int) live;   /* writers may write to its peer (set before they can) */
    LFT_ATOMIC(int) inside;
    LFT_ATOMIC(int) closes;
    LFT_ATOMIC(long) msgs;
    LFT_ATOMIC(int) unwritten; /* dispatches before anybody could write to it */
    LFT_ATOMIC(int) empty;     /* dispatches that found nothing to read */
} reg;

typedef struct slot {
    pthread_mutex_t lock; /* writers vs. churn: the peer and the id go together */
    int fd;               /* the reactor's end: the same number for every registration */
    int peer;
    uint32_t id; /* 0: writers skip the slot (between registrations, or quiet) */
    reg *cur;
} slot;

static reg regs[MAXREG];
static int nregs;
static slot slots[SLOTS];
static LFT_ATOMIC(int) b_stop;
static LFT_ATOMIC(long) b_sent;

static int reg_event(lf_handler *h, int fd, uint32_t events)
{
    reg *g = (reg *)h;
    msg m;
    ssize_t n;
    long got = 0;

    CHECK_EQ(lft_add(&g->inside, 1) + 1, 1);
    CHECK_EQ(fd, h->fd);
    CHECK(events & (LF_EV_READ | LF_EV_CLOSE));
    /* nothing was ever written to a quiet registration: only an event meant for the
     * fd number's previous registration could bring it here */
    if (!lft_load(&g->live))
        lft_add(&g->unwritten, 1);
    while ((n = read(fd, &m, sizeof m)) > 0) {
        CHECK_EQ(n, sizeof m); /* datagrams: whole messages */
        if (m.id != g->id)
            fprintf(stderr, "registration %u (fd %d) read message %u of registration %u\n",
                    g->id, fd, m.seq, m.id);
        CHECK_EQ(m.id, g->id); /* never another registration's data */
        got++;
    }
    CHECK(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
    /* the handler is the only reader and drains its socket, and a handle is armed
     * only between dispatches: an event of its own always finds data */
    if (got == 0)
        lft_add(&g->empty, 1);
    lft_add(&g->msgs, got);
    /* slow handlers: with every runner busy, the events the leader harvested (up to
     * SLOTS at a time) wait in its buffer for tens of milliseconds, longer than a
     * removal takes to reach handle_close and the number to be registered again. So
     * a removed registration's event is often still buffered when the new one exists:
     * the case the generation tags are for (without them, dozens of quiet handlers
     * per run get dispatched). */
    lft_sleep_ms(2);
    lft_add(&g->inside, -1);
    lft_progress();
    return LF_KEEP;
}

static void reg_close(lf_handler *h)
{
    reg *g = (reg *)h;
    CHECK_EQ(lft_load(&g->inside), 0);
    lft_add(&g->closes, 1);
    lft_progress();
}

/* Register a new, quiet handler on slot s's number, which the caller holds. */
static void slot_register(slot *s)
{
    reg *g;
    int peer;

    CHECK(nregs < MAXREG);
    g = &regs[nregs++];
    memset((void *)g, 0, sizeof *g);
    g->id = (uint32_t)nregs; /* 1, 2, ...: never 0 */
    g->h.handle_event = reg_event;
    g->h.handle_close = reg_close;
    peer = reuse_number(s->fd, SOCK_DGRAM);
    CHECK_EQ(lf_reactor_register(&R, &g->h, s->fd, LF_EV_READ), 0);
    pthread_mutex_lock(&s->lock);
    s->peer = peer;
    s->cur = g;
    pthread_mutex_unlock(&s->lock);
}

/* Let the writers at a quiet registration. */
static void slot_publish(slot *s)
{
    pthread_mutex_lock(&s->lock);
    if (s->cur && s->id == 0) {
        lft_store(&s->cur->live, 1);
        s->id = s->cur->id;
    }
    pthread_mutex_unlock(&s->lock);
}

static void *b_runner(void *arg)
{
    (void)arg;
    CHECK_EQ(lf_reactor_run(&R, NULL), ECANCELED);
    return NULL;
}

static void *b_writer(void *arg)
{
    unsigned long long seed = 0x51ed27ULL + (unsigned long long)(size_t)arg * 7919ULL;
    for (uint32_t k = 0; !lft_load(&b_stop); k++) {
        slot *s = &slots[lft_rand(&seed) % SLOTS];
        pthread_mutex_lock(&s->lock);
        if (s->id != 0) {
            msg m;
            m.id = s->id;
            m.seq = k;
            ssize_t w = send(s->peer, &m, sizeof m, MSG_NOSIGNAL);
            CHECK(w == (ssize_t)sizeof m || (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)));
            if (w > 0)
                lft_add(&b_sent, 1L);
        }
        pthread_mutex_unlock(&s->lock);
        if (k % 16 == 0)
            lft_sleep_ms(1);
    }
    return NULL;
}

static unsigned long long part_b(long rounds, int *bad_out)
{
    pthread_t run[CH_RUNNERS], wr[WRITERS];
    unsigned long long seed = 0xc0ffeeULL;
    struct lf_reactor_stats st;
    long msgs = 0;
    int quiet[SLOTS], nquiet = 0, bad = 0;

    CHECK_EQ(lf_reactor_init(&R), 0);
    for (int i = 0; i < SLOTS; i++) {
        slot *s = &slots[i];
        int t[2];
        CHECK(pthread_mutex_init(&s->lock, NULL) == 0);
        /* the slot's number: taken from a first socketpair, then held for good */
        CHECK(socketpair(AF_UNIX, SOCK_DGRAM, 0, t) == 0);
        close(t[1]);
        s->fd = t[0];
        slot_register(s);
        slot_publish(s);
    }
    for (long i = 0; i < CH_RUNNERS; i++)
        CHECK(pthread_create(&run[i], NULL, b_runner, NULL) == 0);
    for (long i = 0; i < WRITERS; i++)
        CHECK(pthread_create(&wr[i], NULL, b_writer, (void *)i) == 0);

    for (long round = 0; round < rounds; round++) {
        int pick[SLOTS], k = 1 + (int)(lft_rand(&seed) % 8), ok;
        reg *old[SLOTS];
        int oldpeer[SLOTS];

        /* k distinct slots */
        for (int i = 0; i < SLOTS; i++)
            pick[i] = i;
        for (int i = 0; i < k; i++) {
            int j = i + (int)(lft_rand(&seed) % (unsigned long long)(SLOTS - i)), x = pick[i];
            pick[i] = pick[j];
            pick[j] = x;
        }
        lft_sleep_ms((long)(lft_rand(&seed) % 3)); /* let messages arrive meanwhile */
        for (int i = 0; i < k; i++) {
            slot *s = &slots[pick[i]];
            pthread_mutex_lock(&s->lock);
            old[i] = s->cur;
            oldpeer[i] = s->peer;
            CHECK_EQ(lf_reactor_remove(&R, &s->cur->h), 0);
            s->id = 0;
            s->cur = NULL;
            pthread_mutex_unlock(&s->lock);
        }
        /* each number comes back once its old registration is closed */
        for (int i = 0; i < k; i++) {
            WAIT_FOR(ok, lft_load(&old[i]->closes) == 1, 5000);
            CHECK(ok);
            hold_number(slots[pick[i]].fd);
            close(oldpeer[i]);
        }
        /* last round's registrations stayed quiet for a whole round: open them up,
         * and register this round's, quiet in turn */
        for (int i = 0; i < nquiet; i++)
            slot_publish(&slots[quiet[i]]);
        nquiet = 0;
        for (int i = 0; i < k; i++) {
            slot_register(&slots[pick[i]]);
            quiet[nquiet++] = pick[i];
        }
        lft_progress();
    }

    lft_sleep_ms(20);
    st = stats_now();
    CHECK_EQ(st.registered, (unsigned long long)nregs);
    CHECK_EQ(st.removed, (unsigned long long)(nregs - SLOTS));
    lft_store(&b_stop, 1);
    for (int i = 0; i < WRITERS; i++)
        CHECK(pthread_join(wr[i], NULL) == 0);
    CHECK_EQ(lf_reactor_stop(&R), 0);
    for (int i = 0; i < CH_RUNNERS; i++)
        CHECK(pthread_join(run[i], NULL) == 0);
    CHECK_EQ(lf_reactor_destroy(&R), 0);

    for (int i = 0; i < nregs; i++) {
        reg *g = &regs[i];
        CHECK_EQ(lft_load(&g->closes), 1);
        if (lft_load(&g->unwritten) || lft_load(&g->empty)) {
            fprintf(stderr, "registration %u (fd %d): %d dispatches before any write, %d with "
                    "nothing to read\n", g->id, g->h.fd, lft_load(&g->unwritten),
                    lft_load(&g->empty));
            bad++;
        }
        msgs += lft_load(&g->msgs);
    }
    for (int i = 0; i < SLOTS; i++) {
        close(slots[i].peer);
        pthread_mutex_destroy(&slots[i].lock);
    }
    *bad_out = bad;
    CHECK(msgs > 0);
    CHECK(msgs <= lft_load(&b_sent));
    return st.stale;
}

int main(void)
{
    unsigned long long s1, s2, s3;
    int bad;
    lft_start("t_reactor_stale", 30);
    signal(SIGPIPE, SIG_IGN);
    CHECK((spare = open("/dev/null", O_RDONLY)) >= 0);
    s1 = part_a(1);
    s2 = part_a(0);
    s3 = part_b(lft_scaled(60), &bad);
    CHECK_EQ(bad, 0); /* no registration was dispatched for an event of another */
    close(spare);
    printf("t_reactor_stale %s/%s: stale events dropped (%llu, %llu), never given to a reused "
           "fd's new handler; churn: %d registrations, %llu stale\n",
           lf_promote_name(), lf_reactor_backend_name(), s1, s2, nregs, s3);
    return 0;
}
