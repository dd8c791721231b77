/* bench/srv_hshr.c - Half-Sync/Half-Reactive: the thread pool that Leader/Followers
 * replaces (POSA2).
 *
 * One I/O thread runs an epoll loop over every connection, reads whole requests and
 * pushes them onto ONE shared queue (a preallocated bounded ring under a mutex and
 * two condition variables). -t worker threads (default 2) pop a request, serve it and
 * write the reply to its connection themselves. So every request pays what L/F
 * avoids: a copy into the queue, a queue lock on each side, and usually a wake-up of
 * a sleeping worker (a context switch) between the thread that read it and the
 * thread that serves it.
 *
 *   srv_hshr [-p PORT] [-t WORKERS]
 *
 * Written as a competent engineer would, not as a strawman:
 *   - the I/O thread pushes everything one read() brought in under one lock, and
 *     signals only workers that are actually waiting (no signal when all are busy);
 *   - a worker signals the I/O thread only when it is blocked on a full queue;
 *   - no allocation per request: items are copied into the ring.
 *
 * Replies on a connection leave in request order, as with every other server in the
 * table (L/F suspends a handle while it is served, so it is in order by
 * construction). Here two workers may hold two pipelined requests of one connection,
 * so the I/O thread numbers each request and a worker writes reply k only after
 * reply k-1 (a ticket under the connection's write mutex). That mutex also keeps
 * the 64-byte replies from interleaving. Without pipelining the ticket is always
 * already due and costs one comparison.
 *
 * A connection is reference-counted: one reference while the I/O thread watches it,
 * one per request in the queue or in a worker. The I/O thread takes it out of epoll
 * when the client closes; the last reference closes the descriptor and frees the
 * memory, so a worker never writes to a descriptor number that was reused.
 *
 * Limit: a worker blocks (poll for POLLOUT) on a client that stops reading its
 * replies; if every worker does, the queue fills and the I/O thread waits too.
 * The benchmark's clients always read, so this is a limit, not a bug in the row.
 *
 * Follows the SERVER CONTRACT in wire.h.
 */
#include "wire.h"
#include "srv_common.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/epoll.h>

#define BATCH 64               /* events per epoll_wait */
#define BUF (64 * WIRE_SIZE)   /* per connection: up to 64 pipelined requests per read */
#define QCAP 16384             /* queue items (about 1.3 MB); power of two */

struct conn {
    int fd;
    atomic_uint refs;
    /* I/O thread only */
    unsigned len;              /* bytes in buf: less than one request between reads */
    uint64_t seq_in;           /* ticket of the next request read */
    unsigned char buf[BUF];
    /* under wlock */
    pthread_mutex_t wlock;
    pthread_cond_t turn;       /* seq_out moved and someone waits for it */
    uint64_t seq_out;          /* ticket of the next reply to write */
    unsigned turn_waiters;
    int broken;                /* a write failed: drop the remaining replies */
};

struct item {
    struct conn *c;
    uint64_t seq;
    unsigned char msg[WIRE_SIZE];
};

/* The one shared queue. */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t nonempty;   /* workers wait here */
    pthread_cond_t nonfull;    /* the I/O thread waits here */
    unsigned head, count;      /* items [head, head + count) mod QCAP */
    unsigned idle;             /* workers waiting on nonempty */
    int full_wait;             /* the I/O thread waits on nonfull */
    struct item ring[QCAP];
} q = { .lock = PTHREAD_MUTEX_INITIALIZER,
        .nonempty = PTHREAD_COND_INITIALIZER,
        .nonfull = PTHREAD_COND_INITIALIZER };

static int ep;

static void conn_release(struct conn *c, unsigned n)
{
    /* acq_rel: whoever frees must see every other holder's writes to the
     * connection (its broken flag, its buffer) as finished. */
    if (atomic_fetch_sub_explicit(&c->refs, n, memory_order_acq_rel) != n)
        return;
    close(c->fd);
    pthread_cond_destroy(&c->turn);
    pthread_mutex_destroy(&c->wlock);
    free(c);
}

/* >>io: the I/O thread (the half-reactive layer) */

/* Push n whole requests from c->buf, in order; waits while the queue is full. */
static void queue_push(struct conn *c, unsigned n)
{
    const unsigned char *m = c->buf;
    unsigned wake = 0;

    /* The I/O thread owns a reference for as long as it can call this, so the
     * count cannot reach zero meanwhile: relaxed is enough. */
    atomic_fetch_add_explicit(&c->refs, n, memory_order_relaxed);
    pthread_mutex_lock(&q.lock);
    for (;;) {
        while (n > 0 && q.count < QCAP) {
            struct item *it = &q.ring[(q.head + q.count) & (QCAP - 1)];
            it->c = c;
            it->seq = c->seq_in++;
            memcpy(it->msg, m, WIRE_SIZE);
            m += WIRE_SIZE;
            q.count++;
            n--;
            /* Wake one waiting worker per item and no more: with all of them busy
             * a signal is wasted work, and a surplus wake-up finds nothing to do. */
            if (wake < q.idle)
                wake++;
        }
        if (n == 0)
            break;
        /* Full: the workers must be running before we sleep on them. */
        for (; wake > 0; wake--)
            pthread_cond_signal(&q.nonempty);
        q.full_wait = 1;
        while (q.count == QCAP)
            pthread_cond_wait(&q.nonfull, &q.lock);
    }
    pthread_mutex_unlock(&q.lock);
    /* Signal after unlocking, so a woken worker does not run straight into the
     * mutex we hold. Safe: a worker only sleeps after seeing the queue empty under
     * the lock, so an item is never left behind with every worker asleep. */
    for (; wake > 0; wake--)
        pthread_cond_signal(&q.nonempty);
}

static void conn_close(struct conn *c)
{
    /* Workers may still hold requests, so the descriptor stays open until the last
     * reference goes; take it out of epoll now or it would be reported forever. */
    (void)epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
    conn_release(c, 1);
}

/* One read per event (level-triggered: the rest comes back next round). */
static void conn_readable(struct conn *c)
{
    ssize_t n = read(c->fd, c->buf + c->len, BUF - c->len);
    if (n <= 0) {
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        conn_close(c);
        return;
    }
    c->len += (unsigned)n;
    unsigned whole = c->len / WIRE_SIZE;
    if (whole == 0)
        return;
    queue_push(c, whole);
    c->len -= whole * WIRE_SIZE;
    memmove(c->buf, c->buf + whole * WIRE_SIZE, c->len);
}

static void accept_all(int lfd)
{
    for (;;) {
        int fd = accept(lfd, NULL, NULL);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno != EAGAIN)
                perror("accept");
            return;
        }
        struct conn *c = malloc(sizeof *c);
        if (c == NULL || srv_nonblock(fd) != 0) {
            perror("srv_hshr: dropping a connection");
            free(c);
            close(fd);
            continue;
        }
        srv_nodelay(fd);
        c->fd = fd;
        atomic_init(&c->refs, 1); /* the I/O thread's */
        c->len = 0;
        c->seq_in = c->seq_out = 0;
        c->turn_waiters = 0;
        c->broken = 0;
        pthread_mutex_init(&c->wlock, NULL);
        pthread_cond_init(&c->turn, NULL);
        /* Published to no worker before it is in the queue, and the queue's mutex
         * orders these writes before any worker's reads. */
        struct epoll_event ev;
        ev.events = EPOLLIN;
        ev.data.ptr = c;
        if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
            perror("srv_hshr: dropping a connection");
            conn_release(c, 1);
        }
    }
}

static void io_loop(int lfd)
{
    struct epoll_event ev, evs[BATCH];
    ev.events = EPOLLIN;
    ev.data.ptr = NULL; /* NULL marks the listening socket */
    if (epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev) != 0)
        srv_die("epoll_ctl");
    for (;;) {
        int n = epoll_wait(ep, evs, BATCH, -1);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            srv_die("epoll_wait");
        }
        /* A descriptor is reported at most once per call, so a connection closed
         * here cannot come back later in the same batch. */
        for (int i = 0; i < n; i++) {
            struct conn *c = evs[i].data.ptr;
            if (c == NULL)
                accept_all(lfd);
            else
                conn_readable(c);
        }
    }
}

/* >>workers: the half-sync layer */

/* Write reply `seq` of c after every earlier one, then let the next one go. */
static void conn_reply(struct conn *c, uint64_t seq, const unsigned char *m)
{
    pthread_mutex_lock(&c->wlock);
    while (c->seq_out != seq) {
        c->turn_waiters++;
        pthread_cond_wait(&c->turn, &c->wlock);
        c->turn_waiters--;
    }
    /* After a failed write the client is gone or going: the I/O thread will see the
     * close; until then, skipping the write keeps a worker from polling a dead peer. */
    if (!c->broken && srv_write_all(c->fd, m, WIRE_SIZE) != 0)
        c->broken = 1;
    c->seq_out++;
    if (c->turn_waiters > 0)
        pthread_cond_broadcast(&c->turn); /* several may wait, each for its own seq */
    pthread_mutex_unlock(&c->wlock);
}

static void *worker(void *arg)
{
    (void)arg;
    for (;;) {
        struct conn *c;
        uint64_t seq;
        unsigned char m[WIRE_SIZE];

        pthread_mutex_lock(&q.lock);
        while (q.count == 0) {
            q.idle++;
            pthread_cond_wait(&q.nonempty, &q.lock);
            q.idle--;
        }
        struct item *it = &q.ring[q.head];
        c = it->c;
        seq = it->seq;
        memcpy(m, it->msg, WIRE_SIZE);
        q.head = (q.head + 1) & (QCAP - 1);
        q.count--;
        int unblock = q.full_wait; /* one free slot is enough for the producer */
        q.full_wait = 0;
        pthread_mutex_unlock(&q.lock);
        if (unblock)
            pthread_cond_signal(&q.nonfull);

        wire_serve(m);
        conn_reply(c, seq, m);
        conn_release(c, 1);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    struct srv_args a = srv_parse(argc, argv, 2);

    signal(SIGPIPE, SIG_IGN); /* a client gone mid-reply is an error return, not death */
    srv_raise_nofile();
    ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0)
        srv_die("epoll_create1");
    for (int i = 0; i < a.threads; i++) {
        pthread_t t;
        int e = pthread_create(&t, NULL, worker, NULL);
        if (e != 0) {
            errno = e;
            srv_die("pthread_create");
        }
        pthread_detach(t);
    }
    int lfd = srv_listen(&a, 1);
    io_loop(lfd); /* the main thread is the I/O thread */
    return 0;
}
