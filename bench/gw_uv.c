/* bench/gw_uv.c - the libuv gateway: the same clients and the same memcached as
 * bench/gw_lf.c, written the way libuv's documentation and its users write it.
 *
 *   gw_uv [-p PORT] [-t LOOPS] [-m HOST:PORT] [-d DEADLINE_MS] [-i IDLE_S] [-w WSTALL_MS]
 *         (bench/gw_proto.h: protocol, options)
 *
 * HOW IT IS WRITTEN, AND WHY THAT IS HOW libuv'S USERS WRITE IT
 *   - One uv_loop_t, everything a callback on it (libuv's design: "one loop per
 *     thread", handles and requests are not thread-safe). The server is a uv_tcp_t
 *     with uv_listen; each client a uv_tcp_t read with uv_read_start and written
 *     with uv_write, one uv_write_t and its bytes malloc'd per reply and freed in the
 *     write callback (the uvbook's echo server does just that). The read buffer
 *     alloc_cb hands out is the client's own growable input buffer, so requests that
 *     arrive split are put back together in place.
 *   - memcached: ONE uv_tcp_t per loop, requests pipelined on it, each with an
 *     opaque id (a counter) and a hash map from the id to the waiting client request
 *     (struct call). memcached answers in order, but nothing here depends on it.
 *   - Timers are uv_timer_t: per client one for the idle timeout (uv_timer_again on
 *     every read, as the docs suggest for idle timeouts), one for the deadline of its
 *     oldest call (its calls' deadlines come in the order they were made), one for a
 *     client whose output does not move. A call that misses its deadline is taken
 *     out of the map (its late reply is dropped) and answered ERR timeout.
 *   - Replies go out in request order: a client's calls wait in a FIFO, and the
 *     answered ones at its head are written. Past GW_BACKLOG bytes queued for a
 *     client (uv_stream_get_write_queue_size) reading stops (uv_read_stop) until its
 *     writes drain; if none completes for -w ms it is dropped.
 *   - ERR proto and a client's end of file: the rest goes out, then uv_shutdown and
 *     uv_close, libuv's orderly close.
 *   - memcached fails (read or write error, end of file): every call in the map is
 *     answered ERR backend, the handle is closed, and a uv_timer_t retries the
 *     connection with a backoff of 10, 20, 40 .. 500 ms; meanwhile requests are
 *     answered ERR backend at once.
 *   - SIGTERM/SIGINT with uv_signal_t: close the server (no more accepts), stop
 *     reading clients, let the calls in flight finish (bounded by the deadline +
 *     200 ms), close every handle, and let uv_run return.
 *
 * -t LOOPS > 1: libuv's way to use several cores, N loops in N threads, each a
 *   whole gateway of its own: its own listening socket bound to the same port with
 *   SO_REUSEPORT (made with socket(2), then uv_tcp_open: libuv 1.44 has no
 *   UV_TCP_REUSEPORT, which came in 1.49 to do the same), so the kernel spreads the
 *   connections over the loops, and its own memcached connection. Nothing is shared
 *   between loops but the counters summed at exit. With -t 1 (the default) the one
 *   loop runs in main and listens with uv_tcp_bind, as the docs show.
 *
 * Exit on SIGTERM: one line on stdout, exit 0:
 *   stats requests= errors= timeouts= backend= proto= reconnects= clients=
 *         idle_closed= stall_dropped= loops=
 *
 * Build: cc -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -O2 -Ibench
 *        bench/gw_uv.c -o gw_uv -luv -pthread
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "gw_proto.h"

#include <pthread.h>
#include <signal.h>
#include <uv.h>

#define MAP_SIZE 16384 /* buckets of a loop's id -> call map (a power of two) */

static struct gw_args args;
static struct sockaddr_in mc_addr;

struct client;

/* One reply or one memcached request on its way out: the write and its bytes. */
struct wreq {
    uv_write_t req;
    uv_buf_t buf;
    unsigned char data[];
};

/* One client request: in its client's FIFO from when it is read until its reply is
 * written; in the backend's map while memcached owes the reply. */
struct call {
    struct client *c;
    struct call *next;  /* the client's FIFO */
    struct call *hnext; /* the map's chain */
    uint32_t opaque;
    int in_map;
    uint64_t deadline;  /* uv_now() ms */
    struct wreq *reply; /* NULL while waiting */
};

enum { BE_DOWN, BE_CONNECTING, BE_UP, BE_CLOSING };

struct worker;

struct backend {
    struct worker *w;
    uv_tcp_t tcp;
    uv_connect_t creq;
    uv_timer_t retry;
    int state;
    uint64_t backoff;
    struct gw_buf in;
    size_t need; /* bytes the frame at in.off takes, when known */
    uint32_t next_opaque;
    unsigned inflight; /* calls in the map */
    struct call *map[MAP_SIZE];
};

struct client {
    uv_tcp_t tcp; /* tcp.data, and the timers' data: this client */
    uv_timer_t idle, deadline, stall;
    uv_shutdown_t sreq;
    struct worker *w;
    struct gw_buf in;
    size_t need;
    struct call *head, *tail;
    unsigned ncalls; /* in the FIFO: at most GW_PIPELINE_MAX */
    int handles; /* open handles: freed when the last one is closed */
    int closing, reading, eof, doomed, shutting;
    struct client *prev, *next; /* the worker's clients */
};

struct worker {
    uv_loop_t loop;
    uv_tcp_t server;
    uv_signal_t sigterm, sigint;
    uv_timer_t drain;
    struct backend be;
    pthread_t tid;
    int lfd; /* -t > 1: this loop's SO_REUSEPORT socket */
    int draining;
    uint64_t stop_at;
    struct client *clients;
    unsigned long long requests, timeouts, backend_errs, proto, reconnects, accepted,
        idle_closed, stall_dropped;
};

static struct wreq *wreq_new(size_t n)
{
    struct wreq *r = (struct wreq *)malloc(sizeof *r + n);
    if (r != NULL)
        r->buf = uv_buf_init((char *)r->data, (unsigned)n);
    return r;
}

static struct wreq *wreq_str(const char *s)
{
    size_t n = strlen(s);
    struct wreq *r = wreq_new(n);
    if (r != NULL)
        memcpy(r->data, s, n);
    return r;
}

/* ------------------------------------------------------------------ the map */

static void map_put(struct backend *be, struct call *k)
{
    struct call **b = &be->map[k->opaque & (MAP_SIZE - 1)];
    k->hnext = *b;
    *b = k;
    k->in_map = 1;
    be->inflight++;
}

static struct call *map_take(struct backend *be, uint32_t opaque)
{
    for (struct call **p = &be->map[opaque & (MAP_SIZE - 1)]; *p != NULL; p = &(*p)->hnext) {
        if ((*p)->opaque == opaque) {
            struct call *k = *p;
            *p = k->hnext;
            k->in_map = 0;
            be->inflight--;
            return k;
        }
    }
    return NULL;
}

/* ------------------------------------------------------------------ clients */

static void client_close(struct client *c);
static void client_progress(struct client *c);
static void on_client_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

static void on_client_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct client *c = (struct client *)h->data;
    size_t have = c->in.len - c->in.off, want = 1024;
    (void)suggested;
    if (c->need > have && c->need - have > want)
        want = c->need - have;
    if (gw_buf_reserve(&c->in, want) != 0) {
        *buf = uv_buf_init(NULL, 0); /* libuv reports UV_ENOBUFS */
        return;
    }
    *buf = uv_buf_init((char *)c->in.p + c->in.len, (unsigned)(c->in.cap - c->in.len));
}

static void answer(struct call *k, const char *s)
{
    k->reply = wreq_str(s);
}

/* Answer the calls that missed their deadline; arm the timer for the next one. */
static void on_deadline(uv_timer_t *t)
{
    struct client *c = (struct client *)t->data;
    uint64_t now = uv_now(&c->w->loop);
    for (struct call *k = c->head; k != NULL; k = k->next) {
        if (k->reply == NULL && k->deadline <= now) {
            map_take(&c->w->be, k->opaque);
            c->w->timeouts++;
            answer(k, GW_ERR_TIMEOUT);
        }
    }
    client_progress(c);
}

static void arm_deadline(struct client *c)
{
    for (struct call *k = c->head; k != NULL; k = k->next) {
        if (k->reply == NULL) {
            uint64_t now = uv_now(&c->w->loop);
            uv_timer_start(&c->deadline, on_deadline, k->deadline > now ? k->deadline - now : 0, 0);
            return;
        }
    }
    uv_timer_stop(&c->deadline);
}

static void on_stall(uv_timer_t *t)
{
    struct client *c = (struct client *)t->data;
    if (uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp) > 0) {
        c->w->stall_dropped++;
        client_close(c);
    }
}

static void on_idle(uv_timer_t *t)
{
    struct client *c = (struct client *)t->data;
    c->w->idle_closed++;
    client_close(c);
}

/* Room for more requests: the client's output is below the backlog, and fewer than
 * GW_PIPELINE_MAX of its requests are in the gateway. */
static int has_room(struct client *c)
{
    return !c->closing && !c->doomed && !c->w->draining && c->ncalls < GW_PIPELINE_MAX &&
           uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp) < GW_BACKLOG;
}

static void on_client_write(uv_write_t *req, int status)
{
    struct client *c = (struct client *)req->handle->data;
    free(req); /* the wreq: its uv_write_t is its first member */
    if (c->closing)
        return;
    if (status < 0) {
        client_close(c);
        return;
    }
    if (uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp) == 0)
        uv_timer_stop(&c->stall);
    else /* progress: the client reads */
        uv_timer_start(&c->stall, on_stall, (uint64_t)args.wstall_ms, 0);
    client_progress(c); /* the backlog may have room again */
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
    (void)status;
    client_close((struct client *)req->handle->data);
}

/* Write the answered calls at the head of the FIFO, in order. */
static void client_flush(struct client *c)
{
    struct call *k;
    while ((k = c->head) != NULL && k->reply != NULL) {
        c->head = k->next;
        if (c->head == NULL)
            c->tail = NULL;
        struct wreq *r = k->reply;
        free(k);
        c->ncalls--;
        if (uv_write(&r->req, (uv_stream_t *)&c->tcp, &r->buf, 1, on_client_write) != 0) {
            free(r);
            client_close(c);
            return;
        }
    }
    size_t queued = uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp);
    if (queued > 0 && !uv_is_active((uv_handle_t *)&c->stall))
        uv_timer_start(&c->stall, on_stall, (uint64_t)args.wstall_ms, 0);
    arm_deadline(c);
    if (c->head == NULL && (c->doomed || c->eof) && !c->shutting) {
        c->shutting = 1; /* what is queued goes out first, then the close */
        if (uv_shutdown(&c->sreq, (uv_stream_t *)&c->tcp, on_shutdown) != 0)
            client_close(c);
    }
}

static void backend_fail(struct backend *be);

static void on_be_write(uv_write_t *req, int status)
{
    struct backend *be = (struct backend *)req->handle->data;
    free(req); /* the wreq */
    if (status < 0 && status != UV_ECANCELED)
        backend_fail(be);
}

static void start_call(struct client *c, const struct gw_req *r)
{
    struct worker *w = c->w;
    struct backend *be = &w->be;
    struct call *k = (struct call *)calloc(1, sizeof *k);
    if (k == NULL) {
        client_close(c);
        return;
    }
    k->c = c;
    if (c->tail)
        c->tail->next = k;
    else
        c->head = k;
    c->tail = k;
    c->ncalls++;
    w->requests++;
    if (be->state != BE_UP) {
        w->backend_errs++;
        answer(k, GW_ERR_BACKEND);
        return;
    }
    size_t n = r->op == GW_GET ? GW_MC_HDR + r->klen : GW_MC_HDR + 8 + r->klen + r->vlen;
    struct wreq *q = wreq_new(n);
    if (q == NULL) {
        w->backend_errs++;
        answer(k, GW_ERR_BACKEND);
        return;
    }
    k->opaque = be->next_opaque++;
    if (r->op == GW_GET)
        gw_mc_get(q->data, k->opaque, r->key, r->klen);
    else
        gw_mc_set(q->data, k->opaque, r->key, r->klen, r->val, r->vlen);
    k->deadline = uv_now(&w->loop) + (uint64_t)args.deadline_ms;
    map_put(be, k);
    if (uv_write(&q->req, (uv_stream_t *)&be->tcp, &q->buf, 1, on_be_write) != 0) {
        /* only for a handle that cannot write at all (a failed write reports in
         * on_be_write, which fails the connection): not from here, where c is half
         * way through its input */
        free(q);
        map_take(be, k->opaque);
        w->backend_errs++;
        answer(k, GW_ERR_BACKEND);
    }
}

/* Take the whole requests out of c->in while there is room for them. */
static void client_take(struct client *c)
{
    while (has_room(c)) {
        struct gw_req r;
        int k = gw_parse(c->in.p + c->in.off, c->in.len - c->in.off, &r, &c->need);
        if (k == 0)
            break;
        if (k < 0) {
            struct call *e = (struct call *)calloc(1, sizeof *e);
            c->w->proto++;
            c->w->requests++;
            c->doomed = 1;
            if (e != NULL) {
                e->c = c;
                answer(e, GW_ERR_PROTO);
                if (c->tail)
                    c->tail->next = e;
                else
                    c->head = e;
                c->tail = e;
                c->ncalls++;
            }
            break;
        }
        start_call(c, &r);
        gw_buf_consume(&c->in, r.size);
        c->need = 0;
    }
}

/* After anything that can move a client on (a read, a reply, a deadline, a write):
 * start what it sent, write what is answered, and read while there is room. */
static void client_progress(struct client *c)
{
    for (;;) {
        client_take(c);
        if (c->closing)
            return;
        unsigned before = c->ncalls;
        client_flush(c);
        if (c->closing)
            return;
        if (c->ncalls == before) /* nothing went out: nothing more to take */
            break;
    }
    int want = has_room(c) && !c->eof;
    if (want && !c->reading &&
        uv_read_start((uv_stream_t *)&c->tcp, on_client_alloc, on_client_read) == 0)
        c->reading = 1;
    else if (!want && c->reading) {
        uv_read_stop((uv_stream_t *)&c->tcp);
        c->reading = 0;
    }
}

static void on_client_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct client *c = (struct client *)s->data;
    (void)buf;
    if (nread == UV_EOF) {
        uv_read_stop(s);
        c->reading = 0;
        c->eof = 1;
        client_progress(c); /* closes when nothing is owed */
        return;
    }
    if (nread < 0) {
        client_close(c);
        return;
    }
    if (nread == 0)
        return;
    c->in.len += (size_t)nread;
    uv_timer_again(&c->idle);
    client_progress(c);
}

static void on_client_handle_closed(uv_handle_t *h)
{
    struct client *c = (struct client *)h->data;
    if (--c->handles == 0) {
        gw_buf_free(&c->in);
        free(c);
    }
}

static void client_close(struct client *c)
{
    struct worker *w = c->w;
    if (c->closing)
        return;
    c->closing = 1;
    if (c->prev)
        c->prev->next = c->next;
    else
        w->clients = c->next;
    if (c->next)
        c->next->prev = c->prev;
    for (struct call *k = c->head, *next; k != NULL; k = next) {
        next = k->next;
        if (k->in_map)
            map_take(&w->be, k->opaque); /* its late reply is dropped */
        free(k->reply);
        free(k);
    }
    c->head = c->tail = NULL;
    uv_close((uv_handle_t *)&c->tcp, on_client_handle_closed);
    uv_close((uv_handle_t *)&c->idle, on_client_handle_closed);
    uv_close((uv_handle_t *)&c->deadline, on_client_handle_closed);
    uv_close((uv_handle_t *)&c->stall, on_client_handle_closed);
}

static void on_connection(uv_stream_t *server, int status)
{
    struct worker *w = (struct worker *)server->data;
    if (status < 0)
        return;
    struct client *c = (struct client *)calloc(1, sizeof *c);
    if (c == NULL)
        return;
    c->w = w;
    uv_tcp_init(&w->loop, &c->tcp);
    c->tcp.data = c;
    c->handles = 1;
    if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0) {
        uv_close((uv_handle_t *)&c->tcp, on_client_handle_closed);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    uv_timer_init(&w->loop, &c->idle);
    uv_timer_init(&w->loop, &c->deadline);
    uv_timer_init(&w->loop, &c->stall);
    c->idle.data = c->deadline.data = c->stall.data = c;
    c->handles = 4;
    c->next = w->clients;
    if (w->clients)
        w->clients->prev = c;
    w->clients = c;
    w->accepted++;
    uv_timer_start(&c->idle, on_idle, (uint64_t)args.idle_ms, (uint64_t)args.idle_ms);
    if (uv_read_start((uv_stream_t *)&c->tcp, on_client_alloc, on_client_read) == 0)
        c->reading = 1;
    else
        client_close(c);
}

/* ------------------------------------------------------------------ memcached */

static void backend_connect(struct backend *be);

static void on_retry(uv_timer_t *t)
{
    backend_connect((struct backend *)t->data);
}

static void on_be_closed(uv_handle_t *h)
{
    struct backend *be = (struct backend *)h->data;
    be->state = BE_DOWN;
    gw_buf_free(&be->in);
    be->need = 0;
    if (!be->w->draining) {
        uv_timer_start(&be->retry, on_retry, be->backoff, 0);
        be->backoff = be->backoff * 2 > GW_BACKOFF_MAX_MS ? GW_BACKOFF_MAX_MS : be->backoff * 2;
    }
}

/* The connection is gone: every call it owes is answered ERR backend. */
static void backend_fail(struct backend *be)
{
    if (be->state != BE_UP && be->state != BE_CONNECTING)
        return;
    be->state = BE_CLOSING;
    for (unsigned i = 0; i < MAP_SIZE; i++) {
        struct call *k;
        while ((k = be->map[i]) != NULL) {
            be->map[i] = k->hnext;
            k->in_map = 0;
            be->inflight--;
            be->w->backend_errs++;
            answer(k, GW_ERR_BACKEND);
            client_progress(k->c);
        }
    }
    uv_close((uv_handle_t *)&be->tcp, on_be_closed);
}

static void on_be_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct backend *be = (struct backend *)h->data;
    size_t have = be->in.len - be->in.off, want = suggested;
    if (be->need > have && be->need - have > want)
        want = be->need - have;
    if (gw_buf_reserve(&be->in, want) != 0) {
        *buf = uv_buf_init(NULL, 0);
        return;
    }
    *buf = uv_buf_init((char *)be->in.p + be->in.len, (unsigned)(be->in.cap - be->in.len));
}

static void on_be_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct backend *be = (struct backend *)s->data;
    struct gw_mc_reply r;
    int k;
    (void)buf;
    if (nread < 0) {
        backend_fail(be);
        return;
    }
    be->in.len += (size_t)nread;
    while ((k = gw_mc_frame(be->in.p + be->in.off, be->in.len - be->in.off, &r)) == 1) {
        struct call *c = map_take(be, r.opaque);
        if (c != NULL) {
            if (r.status == 0 && r.op == 0x00) {
                char head[GW_VALUE_HEAD_MAX];
                size_t hl = gw_value_head(head, r.vlen);
                c->reply = wreq_new(hl + r.vlen + 2);
                if (c->reply != NULL) {
                    memcpy(c->reply->data, head, hl);
                    memcpy(c->reply->data + hl, r.val, r.vlen);
                    memcpy(c->reply->data + hl + r.vlen, "\r\n", 2);
                }
            } else if (r.status == 0) {
                answer(c, GW_STORED);
            } else if (r.status == 0x0001 && r.op == 0x00) {
                answer(c, GW_MISS);
            } else {
                be->w->backend_errs++;
                answer(c, GW_ERR_BACKEND);
            }
            client_progress(c->c);
        }
        gw_buf_consume(&be->in, r.size);
    }
    be->need = 0;
    if (k < 0) {
        backend_fail(be);
        return;
    }
    if (be->in.len - be->in.off >= GW_MC_HDR)
        be->need = GW_MC_HDR + gw__get32(be->in.p + be->in.off + 8);
}

static void on_be_connect(uv_connect_t *req, int status)
{
    struct backend *be = (struct backend *)req->data;
    if (status == UV_ECANCELED)
        return; /* closed under it: on_be_closed follows */
    if (status < 0 || be->state != BE_CONNECTING) {
        if (be->state == BE_CONNECTING) {
            be->state = BE_CLOSING;
            uv_close((uv_handle_t *)&be->tcp, on_be_closed);
        }
        return;
    }
    be->state = BE_UP;
    be->backoff = GW_BACKOFF_MIN_MS;
    be->w->reconnects++;
    uv_tcp_nodelay(&be->tcp, 1);
    if (uv_read_start((uv_stream_t *)&be->tcp, on_be_alloc, on_be_read) != 0)
        backend_fail(be);
}

static void backend_connect(struct backend *be)
{
    if (be->state != BE_DOWN || be->w->draining)
        return;
    uv_tcp_init(&be->w->loop, &be->tcp);
    be->tcp.data = be;
    be->creq.data = be;
    be->state = BE_CONNECTING;
    if (uv_tcp_connect(&be->creq, &be->tcp, (const struct sockaddr *)&mc_addr, on_be_connect) != 0) {
        be->state = BE_CLOSING;
        uv_close((uv_handle_t *)&be->tcp, on_be_closed);
    }
}

/* ------------------------------------------------------------------ shutdown */

static void on_plain_closed(uv_handle_t *h)
{
    (void)h;
}

static void on_drain(uv_timer_t *t)
{
    struct worker *w = (struct worker *)t->data;
    int busy = w->be.inflight > 0;
    for (struct client *c = w->clients; c != NULL && !busy; c = c->next)
        busy = c->head != NULL || uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp) > 0;
    if (busy && uv_now(&w->loop) < w->stop_at)
        return;
    /* the calls in flight are answered (or their time is up): close everything, and
     * uv_run returns when the last handle is closed */
    while (w->clients)
        client_close(w->clients);
    if (w->be.state == BE_UP || w->be.state == BE_CONNECTING) {
        w->be.state = BE_CLOSING;
        uv_close((uv_handle_t *)&w->be.tcp, on_be_closed);
    }
    uv_close((uv_handle_t *)&w->be.retry, on_plain_closed);
    uv_close((uv_handle_t *)&w->drain, on_plain_closed);
    uv_close((uv_handle_t *)&w->sigterm, on_plain_closed);
    uv_close((uv_handle_t *)&w->sigint, on_plain_closed);
}

static void on_signal(uv_signal_t *s, int signum)
{
    struct worker *w = (struct worker *)s->data;
    (void)signum;
    if (w->draining)
        return;
    w->draining = 1;
    uv_close((uv_handle_t *)&w->server, on_plain_closed); /* no more accepts */
    for (struct client *c = w->clients; c != NULL; c = c->next)
        if (c->reading) {
            uv_read_stop((uv_stream_t *)&c->tcp);
            c->reading = 0;
        }
    w->stop_at = uv_now(&w->loop) + (uint64_t)args.deadline_ms + 200;
    uv_timer_start(&w->drain, on_drain, 10, 10);
}

/* ------------------------------------------------------------------ main */

static void *worker_run(void *arg)
{
    struct worker *w = (struct worker *)arg;
    uv_run(&w->loop, UV_RUN_DEFAULT);
    uv_loop_close(&w->loop);
    return NULL;
}

/* -t > 1: a listening socket on 127.0.0.1:port with SO_REUSEPORT. */
static int reuseport_socket(int port)
{
    struct sockaddr_in sin;
    int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        srv_die("socket");
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0)
        srv_die("SO_REUSEPORT");
    memset(&sin, 0, sizeof sin);
    sin.sin_family = AF_INET;
    sin.sin_port = htons((unsigned short)port);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&sin, sizeof sin) != 0)
        srv_die("bind");
    return fd;
}

static int bound_port(uv_tcp_t *t)
{
    struct sockaddr_in sin;
    int len = sizeof sin;
    if (uv_tcp_getsockname(t, (struct sockaddr *)&sin, &len) != 0)
        return -1;
    return ntohs(sin.sin_port);
}

int main(int argc, char **argv)
{
    args = gw_parse_args(argc, argv, 1);
    int n = args.threads, port = args.port, rc;
    signal(SIGPIPE, SIG_IGN);
    srv_raise_nofile();
    if (uv_ip4_addr(args.mc_host, args.mc_port, &mc_addr) != 0) {
        fprintf(stderr, "gw_uv: bad memcached address %s\n", args.mc_host);
        return 2;
    }
    struct worker *ws = (struct worker *)calloc((size_t)n, sizeof *ws);
    if (ws == NULL)
        return 2;
    for (int i = 0; i < n; i++) {
        struct worker *w = &ws[i];
        uv_loop_init(&w->loop);
        uv_tcp_init(&w->loop, &w->server);
        w->server.data = w;
        if (n == 1) {
            struct sockaddr_in a;
            uv_ip4_addr("127.0.0.1", port, &a);
            if ((rc = uv_tcp_bind(&w->server, (const struct sockaddr *)&a, 0)) != 0) {
                fprintf(stderr, "gw_uv: bind: %s\n", uv_strerror(rc));
                return 2;
            }
        } else {
            w->lfd = reuseport_socket(port);
            if ((rc = uv_tcp_open(&w->server, w->lfd)) != 0) {
                fprintf(stderr, "gw_uv: uv_tcp_open: %s\n", uv_strerror(rc));
                return 2;
            }
        }
        if ((rc = uv_listen((uv_stream_t *)&w->server, SOMAXCONN, on_connection)) != 0) {
            fprintf(stderr, "gw_uv: listen: %s\n", uv_strerror(rc));
            return 2;
        }
        if (port == 0)
            port = bound_port(&w->server); /* the other loops bind the same one */
        w->be.w = w;
        w->be.backoff = GW_BACKOFF_MIN_MS;
        w->be.next_opaque = 1;
        uv_timer_init(&w->loop, &w->be.retry);
        w->be.retry.data = &w->be;
        uv_timer_init(&w->loop, &w->drain);
        w->drain.data = w;
        uv_signal_init(&w->loop, &w->sigterm);
        uv_signal_init(&w->loop, &w->sigint);
        w->sigterm.data = w->sigint.data = w;
        uv_signal_start(&w->sigterm, on_signal, SIGTERM);
        uv_signal_start(&w->sigint, on_signal, SIGINT);
        backend_connect(&w->be);
    }
    printf("port %d\n", port);
    fflush(stdout);
    for (int i = 1; i < n; i++)
        if (pthread_create(&ws[i].tid, NULL, worker_run, &ws[i]) != 0)
            return 2;
    worker_run(&ws[0]);
    for (int i = 1; i < n; i++)
        pthread_join(ws[i].tid, NULL);

    unsigned long long req = 0, t = 0, b = 0, p = 0, rec = 0, acc = 0, idle = 0, stall = 0;
    for (int i = 0; i < n; i++) {
        req += ws[i].requests;
        t += ws[i].timeouts;
        b += ws[i].backend_errs;
        p += ws[i].proto;
        rec += ws[i].reconnects;
        acc += ws[i].accepted;
        idle += ws[i].idle_closed;
        stall += ws[i].stall_dropped;
    }
    printf("stats requests=%llu errors=%llu timeouts=%llu backend=%llu proto=%llu "
           "reconnects=%llu clients=%llu idle_closed=%llu stall_dropped=%llu loops=%d\n",
           req, t + b + p, t, b, p, rec, acc, idle, stall, n);
    fflush(stdout);
    free(ws);
    return 0;
}
