/* The three headers from C++17, in one translation unit: a C++ user calls the C API
 * directly (C structs as base classes, std::thread, std::atomic, captureless lambdas
 * as C call-backs).
 *
 *   A  lf_pool, 3 threads taking turns by hand (lf_pool_lead / promote / leave): at
 *      most one leader at a time, every work item taken exactly once, and the pool's
 *      counters agree with what the threads did (leads, hand-offs).
 *   B  lf_reactor, 3 runners, one handler on a SOCK_SEQPACKET socketpair that reads
 *      ONE message per dispatch: N messages, each dispatched exactly once and in
 *      order, never two threads inside the handler; a one-shot timer fires once; a
 *      periodic one ticks until cancelled; a notification arrives once;
 *      lf_reactor_remove -> handle_close exactly once, then the reactor closes the fd
 *      (the peer reads EOF); stop; destroy.
 *   C  lf_bound on a socketpair with an echo server thread, bare and then attached
 *      to an lf_reactor (hybrid): several threads make calls at once, the server
 *      answers each batch in reverse order, and every thread gets exactly its own
 *      bytes back. Hybrid: nobody runs the reactor but the callers, and the server
 *      holds back its first reply until a reactor timer has been dispatched, so the
 *      calls complete only if waiting threads really turn the reactor.
 *
 * Build: c++ -std=c++17 ... test/t_cpp.cc $(pkg-config --libs liburcu-memb) -pthread */
#define LF_BOUND_REACTOR 1
#include "../lf_bound.h"
/* again, in the other order: the include guards hold in C++ as well */
#include "../lf_reactor.h"
#include "../lf.h"
#include "lf_test.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

/* ------------------------------------------------------------------ A: the pool */

namespace pool_part {

constexpr int THREADS = 3;

lf_pool pool;
long long items;                    /* work items to hand out */
long long next_item;                /* leader-only state: no lock, no atomic */
std::unique_ptr<std::atomic<int>[]> taken;
std::atomic<int> leaders{0};
std::atomic<long long> lead_ok{0}, promoted{0};
std::atomic<int> first_turn{1};
unsigned long long handoffs; /* for the summary */

void worker(int t, long long *my_items)
{
    lf_follower f;
    CHECK_EQ(lf_follower_init(&f, t), 0); /* distinct priorities: HEAP orders them */
    for (;;) {
        int rc = lf_pool_lead(&pool, &f, nullptr);
        if (rc == ECANCELED)
            break;
        CHECK_EQ(rc, 0);
        lead_ok++;
        CHECK_EQ(leaders.fetch_add(1), 0); /* nobody else leads */
        if (first_turn.exchange(0)) {
            /* the first leader waits for the other two to park, so the first promote
             * is a real hand-off to a waiting follower */
            struct lf_pool_stats s;
            bool ok;
            WAIT_FOR(ok, lf_pool_stats(&pool, &s) == 0 && s.followers == THREADS - 1, 10000);
            CHECK(ok);
            CHECK_EQ(s.leader, 1u);
        }
        long long item = next_item;
        if (item == items) {
            /* all handed out: end the pool; the followers wake with ECANCELED */
            CHECK_EQ(leaders.fetch_sub(1), 1);
            CHECK_EQ(lf_pool_shutdown(&pool), 0);
            CHECK_EQ(lf_pool_leave(&pool, &f), 0);
            break;
        }
        next_item = item + 1;
        for (volatile int spin = 0; spin < 1000; spin = spin + 1) { /* lead a while */
        }
        CHECK_EQ(leaders.fetch_sub(1), 1);
        CHECK_EQ(lf_pool_promote(&pool, &f), 0);
        promoted++;
        CHECK_EQ(lf_pool_promote(&pool, &f), EPERM); /* processing now, not leading */

        /* processing, concurrently with the next leader and other processors */
        CHECK_EQ(taken[item].fetch_add(1), 0); /* exactly once */
        for (volatile int spin = 0; spin < 200; spin = spin + 1) {
        }
        (*my_items)++;
        lft_progress();
    }
    /* shut down: every later lead says so at once */
    CHECK_EQ(lf_pool_lead(&pool, &f, nullptr), ECANCELED);
    lf_follower_destroy(&f);
}

void run()
{
    items = lft_scaled(20000);
    next_item = 0;
    taken.reset(new std::atomic<int>[items]());
    CHECK_EQ(lf_pool_init(&pool), 0);

    long long per_thread[THREADS] = {};
    std::vector<std::thread> th;
    for (int t = 0; t < THREADS; t++)
        th.emplace_back(worker, t, &per_thread[t]);
    for (auto &x : th)
        x.join();

    long long sum = 0;
    for (long long i = 0; i < items; i++)
        CHECK_EQ(taken[i].load(), 1);
    for (long long n : per_thread)
        sum += n;
    CHECK_EQ(sum, items);
    CHECK_EQ(next_item, items);

    struct lf_pool_stats s;
    CHECK_EQ(lf_pool_stats(&pool, &s), 0);
    CHECK_EQ(s.leads, (unsigned long long)lead_ok.load()); /* each lead counted once */
    CHECK_EQ(promoted.load(), items);
    /* every promote and the final leave handed the slot on (or left it vacant) */
    CHECK_EQ(s.promotions + s.promotions_vacant, (unsigned long long)items + 1);
    CHECK(s.promotions >= 1); /* at least the first one went to a parked follower */
    CHECK_EQ(s.leader + s.followers + s.processing + s.joined, 0u);
    CHECK_EQ(lf_pool_destroy(&pool), 0);
    {
        lf_follower f;
        CHECK_EQ(lf_follower_init(&f, 0), 0);
        CHECK_EQ(lf_pool_lead(&pool, &f, nullptr), EINVAL); /* destroyed: refused */
        lf_follower_destroy(&f);
    }

    handoffs = s.promotions;
}

} // namespace pool_part

/* ------------------------------------------------------------------ B: the reactor */

namespace reactor_part {

constexpr int RUNNERS = 3;

struct Conn : lf_handler { /* the C record as a base class: static_cast finds us */
    int peer = -1;
    long long n = 0;
    long long next_seq = 0; /* touched inside handle_event only: serialized for us */
    std::unique_ptr<std::atomic<int>[]> seen;
    std::atomic<int> inside{0}, closed{0};
    std::atomic<long long> msgs{0}, empty{0}, timeouts{0}, notes{0};
};

lf_reactor r;
long long messages, periodic; /* for the summary */

int on_event(lf_handler *lh, int fd, uint32_t ev)
{
    Conn *c = static_cast<Conn *>(lh);
    CHECK_EQ(c->inside.fetch_add(1), 0); /* one thread at a time in a handler */
    CHECK(fd == c->fd);
    if (ev & LF_EV_TIMEOUT)
        c->timeouts++;
    if (ev & LF_EV_NOTIFY)
        c->notes++;
    if (ev & LF_EV_READ) {
        unsigned long long msg[2];
        ssize_t got = recv(fd, msg, sizeof msg, 0); /* one message per dispatch */
        if (got < 0) {
            CHECK(errno == EAGAIN || errno == EWOULDBLOCK); /* readiness is a hint */
            c->empty++;
        } else {
            CHECK_EQ(got, (ssize_t)sizeof msg);
            CHECK_EQ(msg[1], ~msg[0]);
            CHECK_EQ(msg[0], (unsigned long long)c->next_seq); /* in order */
            CHECK((long long)msg[0] < c->n);
            CHECK_EQ(c->seen[msg[0]].fetch_add(1), 0);
            c->next_seq++;
            c->msgs++;
        }
    }
    CHECK(!(ev & LF_EV_CLOSE)); /* the peer stays open until the end */
    lft_progress();
    c->inside--;
    return LF_KEEP; /* re-armed: the next message is a new dispatch */
}

void on_close(lf_handler *lh)
{
    Conn *c = static_cast<Conn *>(lh);
    CHECK_EQ(c->inside.load(), 0);
    CHECK_EQ(c->closed.fetch_add(1), 0);
}

/* a value that stays put for `ms`: nothing more is coming */
template <class F> long long settled(F read, int ms)
{
    long long v;
    do {
        v = read();
        lft_sleep_ms(ms);
    } while (read() != v);
    return v;
}

void run()
{
    static Conn c;
    static lf_timer once, tick;
    int sv[2];
    struct lf_reactor_stats st;

    CHECK_EQ(lf_reactor_init(&r), 0);
    std::vector<std::thread> runners;
    for (int i = 0; i < RUNNERS; i++)
        runners.emplace_back([] { CHECK_EQ(lf_reactor_run(&r, nullptr), ECANCELED); });

    CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == 0);
    CHECK(fcntl(sv[0], F_SETFL, O_NONBLOCK) == 0);
    lf_handler_init(&c, on_event, on_close);
    c.peer = sv[1];
    c.n = lft_scaled(3000);
    c.seen.reset(new std::atomic<int>[c.n]());
    CHECK_EQ(lf_reactor_register(&r, &c, sv[0], LF_EV_READ), 0);
    CHECK_EQ(c.fd, sv[0]);
    CHECK_EQ(lf_reactor_register(&r, &c, sv[0], LF_EV_READ), EEXIST);

    /* N messages, each one dispatch */
    for (long long i = 0; i < c.n; i++) {
        unsigned long long msg[2] = {(unsigned long long)i, ~(unsigned long long)i};
        CHECK(send(c.peer, msg, sizeof msg, 0) == (ssize_t)sizeof msg);
        if (i % 64 == 0)
            lft_progress();
    }
    AWAIT(c.msgs.load() == c.n, "every message to be dispatched");
    CHECK_EQ(settled([] { return c.msgs.load(); }, 20), c.n);
    for (long long i = 0; i < c.n; i++)
        CHECK_EQ(c.seen[i].load(), 1);

    /* a one-shot timer: exactly one LF_EV_TIMEOUT */
    lf_timer_init(&once);
    CHECK_EQ(lf_reactor_timer_start(&r, &once, &c, 5 * 1000000LL, 0), 0);
    AWAIT(c.timeouts.load() == 1, "the one-shot timer");
    CHECK_EQ(settled([] { return c.timeouts.load(); }, 30), 1);
    CHECK_EQ(lf_reactor_timer_cancel(&r, &once), ENOENT); /* expired: not armed */

    /* a periodic timer ticks until cancelled */
    lf_timer_init(&tick);
    CHECK_EQ(lf_reactor_timer_start(&r, &tick, &c, 1000000LL, 1000000LL), 0);
    AWAIT(c.timeouts.load() >= 5, "four ticks of the periodic timer");
    CHECK_EQ(lf_reactor_timer_cancel(&r, &tick), 0);
    CHECK_EQ(lf_reactor_timer_cancel(&r, &tick), ENOENT);
    long long ticks = settled([] { return c.timeouts.load(); }, 20);
    lft_sleep_ms(30);
    CHECK_EQ(c.timeouts.load(), ticks); /* cancelled means no more */

    /* a notification */
    CHECK_EQ(lf_reactor_notify(&r, &c, LF_EV_NOTIFY), 0);
    AWAIT(c.notes.load() == 1, "the notification");

    /* remove: handle_close exactly once, then the fd is closed (the peer sees EOF) */
    CHECK_EQ(lf_reactor_remove(&r, &c), 0);
    AWAIT(c.closed.load() == 1, "handle_close after remove");
    CHECK_EQ(lf_reactor_remove(&r, &c), ENOENT);
    CHECK_EQ(lf_reactor_notify(&r, &c, LF_EV_NOTIFY), ENOENT);
    CHECK_EQ(lf_reactor_timer_start(&r, &once, &c, 1000000LL, 0), ENOENT);
    {
        /* holds with epoll (the Linux default), which drops the fd from its set at
         * once. poll/select leave it in the set of a leader blocked in its wait, and
         * the kernel keeps the file open until that wait returns: there the peer
         * sees no EOF while the reactor is idle, and this check fails. */
        struct pollfd p = {c.peer, POLLIN, 0};
        char byte;
        CHECK(poll(&p, 1, 10000) == 1);
        CHECK(recv(c.peer, &byte, 1, 0) == 0);
    }

    CHECK_EQ(lf_reactor_stop(&r), 0);
    for (auto &x : runners)
        x.join();
    CHECK_EQ(lf_reactor_stats(&r, &st), 0);
    CHECK(st.dispatched >= (unsigned long long)(c.n + ticks + 1));
    CHECK(st.timers >= (unsigned long long)ticks);
    CHECK_EQ(st.notified, 1ULL);
    CHECK_EQ(st.registered, 1ULL);
    CHECK_EQ(st.removed, 1ULL);
    CHECK_EQ(st.pool.leader + st.pool.followers + st.pool.processing + st.pool.joined, 0u);
    CHECK_EQ(lf_reactor_destroy(&r), 0);
    CHECK_EQ(c.closed.load(), 1); /* destroy did not close it again */
    close(c.peer);

    messages = c.n;
    periodic = ticks - 1;
}

} // namespace reactor_part

/* ------------------------------------------------------------------ C: the bound */

namespace bound_part {

constexpr int CLIENTS = 4;
constexpr size_t HDR = 16;
constexpr uint32_t MAGIC = 0x4c464331u;
constexpr size_t MAXBODY = 300;

lf_bound b;
lf_reactor r;
int srv_fd;
long long calls;
std::atomic<int> gate{0}; /* hybrid: a reactor handler ran */
std::atomic<long long> ok{0};
unsigned long long handed_off[2]; /* for the summary: bare, hybrid */

void put_header(unsigned char *h, uint32_t len, uint64_t id)
{
    memcpy(h, &MAGIC, 4);
    memcpy(h + 4, &len, 4);
    memcpy(h + 8, &id, 8);
}

/* a C hook, written as a captureless lambda */
int (*const parse)(void *, const unsigned char *, uint64_t *, size_t *) =
    [](void *, const unsigned char *h, uint64_t *id, size_t *len) -> int {
    uint32_t m, l;
    memcpy(&m, h, 4);
    memcpy(&l, h + 4, 4);
    memcpy(id, h + 8, 8);
    *len = l;
    return m == MAGIC ? 0 : EPROTO;
};

size_t body_len(uint64_t id) { return 1 + (size_t)(id * 2654435761u % MAXBODY); }
unsigned char body_byte(uint64_t id, size_t i)
{
    return (unsigned char)(id * 131u + i * 7u + (id >> 32) * 59u);
}

void read_all(int fd, void *p, size_t n)
{
    char *c = static_cast<char *>(p);
    while (n) {
        ssize_t got = read(fd, c, n);
        CHECK(got > 0);
        c += got;
        n -= (size_t)got;
    }
}

void write_all(int fd, const void *p, size_t n)
{
    const char *c = static_cast<const char *>(p);
    while (n) {
        ssize_t w = write(fd, c, n);
        CHECK(w > 0);
        c += w;
        n -= (size_t)w;
    }
}

/* The echo server: read what has arrived (each client has one call in flight), echo
 * the batch back in reverse order, until every call is answered. */
void server(bool hybrid)
{
    struct Frame {
        uint64_t id;
        std::vector<unsigned char> body;
    };
    long long answered = 0, total = CLIENTS * calls;
    while (answered < total) {
        std::vector<Frame> batch;
        struct pollfd p = {srv_fd, POLLIN, 0};
        do {
            unsigned char h[HDR];
            Frame f;
            size_t len;
            read_all(srv_fd, h, HDR);
            CHECK_EQ(parse(nullptr, h, &f.id, &len), 0);
            CHECK(len <= MAXBODY);
            f.body.resize(len);
            read_all(srv_fd, f.body.data(), len);
            batch.push_back(std::move(f));
        } while (batch.size() < (size_t)CLIENTS && poll(&p, 1, 0) == 1);
        if (hybrid && answered == 0)
            AWAIT(gate.load(), "a waiting caller to dispatch the reactor's timer");
        std::reverse(batch.begin(), batch.end());
        for (const Frame &f : batch) {
            std::vector<unsigned char> out(HDR + f.body.size());
            put_header(out.data(), (uint32_t)f.body.size(), f.id);
            std::copy(f.body.begin(), f.body.end(), out.begin() + HDR);
            write_all(srv_fd, out.data(), out.size());
        }
        answered += (long long)batch.size();
    }
}

void client(int t)
{
    unsigned char req[HDR + MAXBODY], reply[MAXBODY + 1];
    lf_bound_ctx c;
    CHECK_EQ(lf_bound_ctx_init(&c, reply, sizeof reply, t % 3), 0);
    for (long long k = 0; k < calls; k++) {
        uint64_t id = ((uint64_t)(t + 1) << 32) | (uint64_t)k;
        size_t len = body_len(id);
        put_header(req, (uint32_t)len, id);
        for (size_t i = 0; i < len; i++)
            req[HDR + i] = body_byte(id, i);
        memset(reply, 0xee, sizeof reply);
        CHECK_EQ(lf_bound_call(&b, &c, id, req, HDR + len, nullptr), 0);
        CHECK_EQ(c.id, id);
        CHECK_EQ(c.len, len);
        CHECK(memcmp(reply, req + HDR, len) == 0); /* exactly our own bytes */
        CHECK_EQ(reply[len], 0xee);                /* and nothing past them */
        ok++;
        lft_progress();
    }
    lf_bound_ctx_destroy(&c);
}

void run(bool hybrid)
{
    int sv[2], ev = -1;
    lf_handler gate_h;
    lf_timer gate_t;
    struct lf_bound_hooks hooks = {}; /* value-initialised: no designated initialisers in C++17 */
    struct lf_bound_stats s;

    calls = lft_scaled(1500);
    ok = 0;
    gate = 0;
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    srv_fd = sv[1];
    hooks.header_len = HDR;
    hooks.parse_header = parse;
    hooks.max_body = MAXBODY;
    hooks.flags = LF_BOUND_STRICT; /* nothing here times out: a stray reply is a bug */
    CHECK_EQ(lf_bound_init(&b, sv[0], &hooks), 0);
    if (hybrid) {
        CHECK_EQ(lf_reactor_init(&r), 0);
        CHECK_EQ(lf_bound_attach(&b, &r), 0); /* the reactor owns sv[0] from now on */
        CHECK_EQ(lf_bound_attach(&b, &r), EBUSY);
        /* a second handle of the reactor: a timer on an idle eventfd, served only by
         * threads waiting in lf_bound_call (nobody runs lf_reactor_run) */
        CHECK((ev = eventfd(0, EFD_NONBLOCK)) >= 0);
        lf_handler_init(&gate_h, [](lf_handler *, int, uint32_t events) -> int {
            if (events & LF_EV_TIMEOUT)
                gate = 1;
            return LF_KEEP;
        }, nullptr);
        CHECK_EQ(lf_reactor_register(&r, &gate_h, ev, LF_EV_READ), 0);
        lf_timer_init(&gate_t);
        CHECK_EQ(lf_reactor_timer_start(&r, &gate_t, &gate_h, 2 * 1000000LL, 0), 0);
    }

    std::thread srv(server, hybrid);
    std::vector<std::thread> th;
    for (int t = 0; t < CLIENTS; t++)
        th.emplace_back(client, t);
    for (auto &x : th)
        x.join();
    srv.join();

    long long total = CLIENTS * calls;
    CHECK_EQ(ok.load(), total);
    CHECK_EQ(gate.load(), hybrid ? 1 : 0);
    CHECK_EQ(lf_bound_stats(&b, &s), 0);
    CHECK_EQ(s.replies, (unsigned long long)total);
    CHECK_EQ(s.own + s.handed_off, s.replies); /* each reply delivered exactly once */
    CHECK_EQ(s.stray + s.skipped + s.refused + s.timeouts + s.cancels, 0ULL);
    CHECK_EQ(s.in_flight, 0u);
    CHECK_EQ(s.failed, 0);
    CHECK_EQ(lf_bound_destroy(&b), 0);
    if (hybrid) {
        CHECK_EQ(lf_reactor_destroy(&r), 0); /* closes sv[0] and the eventfd */
    } else {
        close(sv[0]);
    }
    close(sv[1]);

    handed_off[hybrid] = s.handed_off;
}

} // namespace bound_part

int main()
{
    lft_start("t_cpp", 30);
    pool_part::run();
    reactor_part::run();
    bound_part::run(false);
    bound_part::run(true);
    printf("t_cpp %s/%s/%s: C++17, one TU: pool %lld items once each (%llu hand-offs); "
           "reactor %lld messages once each in order, 1+%lld timeouts, 1 notify, 1 close; "
           "bound %lld calls bare + %lld hybrid, each its own reply (%llu/%llu handed off)\n",
           lf_promote_name(), lf_sync_name(), lf_reactor_backend_name(), pool_part::items,
           pool_part::handoffs, reactor_part::messages, reactor_part::periodic,
           bound_part::CLIENTS * bound_part::calls, bound_part::CLIENTS * bound_part::calls,
           bound_part::handed_off[0], bound_part::handed_off[1]);
    return 0;
}
