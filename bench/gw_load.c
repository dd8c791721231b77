/* bench/gw_load.c - the load generator for the gateways (bench/gw_proto.h's protocol),
 * the same for every row of bench/gw.sh and for test/gateway.sh.
 *
 *   gw_load -p PORT [-c CONNS] [-t THREADS] [-s SECONDS] [-W WARMUP_S] [-k KEYS]
 *           [-v VALUE_BYTES] [-P GATEWAY_PID] [-n HOGS] [-E 1] [-D DRAIN_S]
 *   gw_load -p PORT -X 1      the protocol, exchange by exchange (pipelining, values
 *           of 0 and 100,000 bytes, a 250-byte key, MISS; then each kind of malformed
 *           request must get ERR proto and a close); "protocol ok", exit 0, or what
 *           differed on stderr and exit 1
 *
 * CONNS connections (64 .. 10,000; RLIMIT_NOFILE is raised to what they need), each a
 * closed loop: one request in flight, the next sent when its reply is in and checked.
 * 90% GET, 10% SET, keys "k0".."k<KEYS-1>" (default 1000) picked uniformly. THREADS
 * client threads (default 2), each with its own epoll set (edge-triggered).
 *
 * Before the clock starts every key is SET once (pre-population), so a MISS is an
 * error from then on. Values are self-describing: "<key>:<version>:<filler>:<fnv>",
 * VALUE_BYTES long (default 100), version a per-key count of the SETs sent, fnv a
 * checksum of all before it: a GET's value must carry its own key, a version some SET
 * of that key was sent with, and a right checksum. Every reply is checked: a SET gets
 * STORED, a GET a VALUE or (only before the key was set) MISS; ERR timeout and
 * ERR backend are counted, not wrong (the backend's failures are the gateway's to
 * report); anything else, ERR proto, a closed connection or a reply that never came
 * (DRAIN_S, default 5 s, after the window) is wrong.
 *
 * FAULTS (the driver's; the loader only watches)
 *   SIGUSR1  memcached was killed: its data is gone. Every key may MISS again until a
 *            SET of it sent after the next SIGUSR2 is STORED.
 *   SIGUSR2  memcached is back (restarted, or SIGCONT after a SIGSTOP): recover_ms is
 *            from here to the first good reply.
 *   err_max_ms is the slowest ERR reply (request sent to reply read): with the
 *   gateway's 500 ms deadline it should stay near 500 whatever memcached does.
 *   gap_ms is the longest stretch with no good reply on a client thread.
 *   -n HOGS: that many more connections that SET a 64 KiB value under the key "hog",
 *   then pipeline GETs of it as fast as their socket takes them, and never read a
 *   byte (their receive buffer is 4 KiB: a client that does not read has a closed
 *   window, whatever buffer it started with). A gateway must drop them (its -w) and go on
 *   serving the others; hog_dropped= and hog_drop_ms= (the latest drop, from the
 *   hog's start) say when, rps= is the others' meanwhile.
 *
 * "gw_load: measuring" on stderr says the window opened (the fault rows' cue).
 *
 * OUTPUT: one line on stdout,
 *   rps= p50_us= p99_us= p999_us= replies= ok= err_timeout= err_backend= wrong=
 *   err_max_ms= gap_ms= recover_ms= cpu_us_per_req= rss_kb= hog_dropped= hog_drop_ms=
 * (latencies over every reply in the window, ERRs too). -P: cpu_us_per_req is the
 * gateway's utime + stime (/proc/PID/stat) over the window divided by the replies,
 * rss_kb its VmHWM at the end; -1 without -P. The first wrong replies are described
 * on stderr.
 *
 * EXIT: 0 no reply was wrong (and, with -E 1, no ERR either); 1 some were; 2 set-up
 * failed (could not connect, pre-population failed, ...).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "gw_proto.h" /* srv_common.h; GW_LINE_MAX */

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <time.h>

#define RELAXED memory_order_relaxed
#define MAXV 65536 /* the largest -v */

#include "hist.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------------ keys and values */

struct key {
    atomic_uint sent;      /* SETs sent: the highest version a value may carry */
    atomic_uint set_gen;   /* the generation in which a SET of it was STORED (+1; 0 none) */
    _Atomic uint64_t set_ns; /* when the first STORED of that generation was read */
};

enum { PREP, WARM, MEASURE, DRAIN };

static struct {
    int port, nconn, nthreads, nkeys, vbytes, nhogs, err_fails, proto;
    double secs, warm, drain;
    int pid;
    struct key *keys;
    atomic_int phase;
    atomic_uint gen;        /* SIGUSR1 and (after it) SIGUSR2 each add one */
    atomic_int killed;      /* SIGUSR1 came, SIGUSR2 not yet */
    _Atomic uint64_t back_ns; /* the last SIGUSR2 */
    atomic_ulong wrong_said;
} G;

static uint32_t fnv1a(const unsigned char *p, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 16777619u;
    return h;
}

/* The value version ver of key k: "<key>:<10-digit version>:<filler>:<8 hex fnv>". */
static size_t make_value(unsigned char *out, unsigned k, unsigned ver)
{
    int n = snprintf((char *)out, 64, "k%u:%010u:", k, ver);
    size_t len = (size_t)G.vbytes, at = (size_t)n;
    uint32_t x = k * 2654435761u ^ ver;
    while (at < len - 9) {
        x = x * 1103515245u + 12345u;
        out[at++] = (unsigned char)('a' + (x >> 16) % 26);
    }
    char tail[10];
    snprintf(tail, sizeof tail, ":%08x", (unsigned)fnv1a(out, at));
    memcpy(out + at, tail, 9);
    return len;
}

/* 0: v is a value some SET of key k could have written; else why not. */
static const char *check_value(unsigned k, const unsigned char *v, size_t n)
{
    char head[32];
    int hl = snprintf(head, sizeof head, "k%u:", k);
    if (n != (size_t)G.vbytes || n < (size_t)hl + 11 + 9)
        return "value of the wrong length";
    if (memcmp(v, head, (size_t)hl) != 0)
        return "value of another key";
    unsigned ver = 0;
    for (int i = 0; i < 10; i++) {
        unsigned char d = v[hl + i];
        if (d < '0' || d > '9')
            return "value with a garbled version";
        ver = ver * 10 + (unsigned)(d - '0');
    }
    if (v[hl + 10] != ':' || v[n - 9] != ':')
        return "value with a garbled layout";
    char sum[10];
    snprintf(sum, sizeof sum, "%08x", (unsigned)fnv1a(v, n - 9));
    if (memcmp(v + n - 8, sum, 8) != 0)
        return "value with a wrong checksum";
    if (ver == 0 || ver > atomic_load_explicit(&G.keys[k].sent, memory_order_acquire))
        return "value of a version no SET sent";
    return NULL;
}

/* ------------------------------------------------------------------ connections */

struct conn {
    int fd, no, busy, dead, hog;
    int op;            /* 'G', 'S' */
    unsigned key, gen; /* the request's key; G.gen when it was sent */
    uint64_t sent_ns;
    size_t have;
    unsigned prep_next; /* PREP: the next key this connection sets */
    uint64_t hog_at;    /* hog: the offset in the hog stream */
    uint64_t hog_start;
    unsigned char *buf; /* the reply being read */
};

struct worker {
    pthread_t tid;
    int ep, no;
    struct hist hist;
    uint64_t replies, ok, err_timeout, err_backend, wrong, prep_done, prep_failed;
    uint64_t err_max_ns, last_good, gap_ns, first_good_after_back, hog_dropped, hog_drop_ns;
    unsigned rng;
};

static struct conn *conns;
static struct worker *workers;
#define HOG_VALUE (64 * 1024)
static unsigned char *hog_stream;
static size_t hog_head, hog_len; /* the SET, once; then hog_len bytes of GETs, cycled */
static size_t bufcap;

static unsigned rnd(struct worker *w)
{
    w->rng = w->rng * 1103515245u + 12345u;
    return w->rng >> 8;
}

static void wrong(struct worker *w, struct conn *c, const char *why)
{
    w->wrong++;
    if (atomic_fetch_add(&G.wrong_said, 1) < 10)
        fprintf(stderr, "gw_load: connection %d, %s k%u: %s\n", c->no, c->op == 'S' ? "SET" : "GET",
                c->key, why);
}

static void kill_conn(struct worker *w, struct conn *c, const char *why)
{
    if (!c->dead) {
        if (why != NULL)
            wrong(w, c, why);
        c->dead = 1;
        c->busy = 0;
    }
}

static int send_req(struct worker *w, struct conn *c, int op, unsigned k)
{
    unsigned char req[GW_LINE_MAX + MAXV + 2];
    size_t n;
    c->op = op;
    c->key = k;
    c->gen = atomic_load(&G.gen);
    if (op == 'S') {
        unsigned ver = atomic_fetch_add_explicit(&G.keys[k].sent, 1, memory_order_release) + 1;
        n = (size_t)snprintf((char *)req, GW_LINE_MAX, "SET k%u %d\r\n", k, G.vbytes);
        n += make_value(req + n, k, ver);
        memcpy(req + n, "\r\n", 2);
        n += 2;
    } else {
        n = (size_t)snprintf((char *)req, GW_LINE_MAX, "GET k%u\r\n", k);
    }
    c->sent_ns = now_ns();
    ssize_t r = write(c->fd, req, n);
    if (r != (ssize_t)n) { /* one request into an otherwise empty socket */
        kill_conn(w, c, r < 0 ? strerror(errno) : "short write");
        return -1;
    }
    c->busy = 1;
    return 0;
}

static void next_req(struct worker *w, struct conn *c)
{
    int phase = atomic_load_explicit(&G.phase, RELAXED);
    if (phase == PREP) {
        if (c->prep_next < (unsigned)G.nkeys) {
            unsigned k = c->prep_next;
            c->prep_next += (unsigned)G.nconn;
            send_req(w, c, 'S', k);
        }
        return;
    }
    if (phase == DRAIN)
        return;
    unsigned r = rnd(w);
    send_req(w, c, r % 10 == 0 ? 'S' : 'G', (r / 10) % (unsigned)G.nkeys);
}

/* Check and count a whole reply (kind: its line; a VALUE's value at v, vlen bytes). */
static void on_reply(struct worker *w, struct conn *c, const char *kind, const unsigned char *v,
                     size_t vlen)
{
    uint64_t t = now_ns(), lat = t - c->sent_ns;
    int phase = atomic_load_explicit(&G.phase, RELAXED);
    int good = 0;
    struct key *k = &G.keys[c->key];
    c->busy = 0;
    if (strcmp(kind, "ERR timeout") == 0 || strcmp(kind, "ERR backend") == 0) {
        if (phase == PREP)
            w->prep_failed++;
        else if (kind[4] == 't')
            w->err_timeout++;
        else
            w->err_backend++;
        if (phase != PREP && lat > w->err_max_ns)
            w->err_max_ns = lat;
    } else if (c->op == 'S') {
        if (strcmp(kind, "STORED") != 0) {
            wrong(w, c, kind);
        } else {
            good = 1;
            /* STORED counts for MISS-checking only if no kill came since it was sent */
            if (c->gen == atomic_load(&G.gen) && !atomic_load(&G.killed) &&
                atomic_load(&k->set_gen) != c->gen + 1) {
                atomic_store(&k->set_ns, t);
                atomic_store(&k->set_gen, c->gen + 1);
            }
            if (phase == PREP)
                w->prep_done++;
        }
    } else if (strcmp(kind, "MISS") == 0) {
        /* wrong only if the key was surely there when the GET left: STORED read
         * before it was sent, no kill since */
        if (atomic_load(&k->set_gen) == atomic_load(&G.gen) + 1 && !atomic_load(&G.killed) &&
            c->gen == atomic_load(&G.gen) && atomic_load(&k->set_ns) < c->sent_ns)
            wrong(w, c, "MISS for a key that was set");
        else
            good = 1;
    } else if (strcmp(kind, "VALUE") == 0) {
        const char *why = check_value(c->key, v, vlen);
        if (why) {
            char msg[128];
            snprintf(msg, sizeof msg, "%s: \"%.*s...\"", why, vlen < 24 ? (int)vlen : 24, (const char *)v);
            wrong(w, c, msg);
        }
        else
            good = 1;
    } else {
        wrong(w, c, kind);
    }
    if (phase == MEASURE) {
        w->hist.n[hist_index(lat)]++;
        w->replies++;
        w->ok += (uint64_t)good;
        if (good) {
            if (w->last_good && t - w->last_good > w->gap_ns)
                w->gap_ns = t - w->last_good;
            w->last_good = t;
        }
    }
    if (good && phase != PREP) {
        uint64_t back = atomic_load(&G.back_ns);
        if (back && t > back && (w->first_good_after_back == 0 || w->first_good_after_back < back))
            w->first_good_after_back = t;
    }
}

/* Parse what c->buf holds: 1 a reply was taken (and the next request sent), 0 more
 * is needed, -1 the connection is dead. A reply with no request outstanding is wrong:
 * the buffer holds at most one reply's bytes unless the gateway sent extra. */
static int parse_reply(struct worker *w, struct conn *c)
{
    unsigned char *nl = memchr(c->buf, '\n', c->have);
    if (nl == NULL) {
        if (c->have > 64)
            kill_conn(w, c, "reply line too long");
        return c->dead ? -1 : 0;
    }
    size_t line = (size_t)(nl - c->buf) + 1;
    if (line < 2 || nl[-1] != '\r') {
        kill_conn(w, c, "reply line without CRLF");
        return -1;
    }
    char kind[64];
    size_t kl = line - 2 < sizeof kind - 1 ? line - 2 : sizeof kind - 1;
    memcpy(kind, c->buf, kl);
    kind[kl] = '\0';
    size_t used = line;
    if (strncmp(kind, "VALUE ", 6) == 0) {
        char *end;
        unsigned long vlen = strtoul(kind + 6, &end, 10);
        if (*end != '\0' || vlen > MAXV) {
            kill_conn(w, c, "garbled VALUE line");
            return -1;
        }
        if (c->have < line + vlen + 2)
            return 0;
        if (c->buf[line + vlen] != '\r' || c->buf[line + vlen + 1] != '\n') {
            kill_conn(w, c, "VALUE without CRLF after the value");
            return -1;
        }
        used = line + vlen + 2;
        if (!c->busy) {
            kill_conn(w, c, "a reply nobody asked for");
            return -1;
        }
        on_reply(w, c, "VALUE", c->buf + line, vlen);
    } else {
        if (!c->busy) {
            kill_conn(w, c, "a reply nobody asked for");
            return -1;
        }
        if (strcmp(kind, "ERR proto") == 0) {
            kill_conn(w, c, "ERR proto");
            return -1;
        }
        on_reply(w, c, kind, NULL, 0);
    }
    if (c->dead)
        return -1;
    c->have -= used;
    if (c->have)
        memmove(c->buf, c->buf + used, c->have);
    next_req(w, c);
    return c->dead ? -1 : 1;
}

static void on_readable(struct worker *w, struct conn *c)
{
    for (;;) {
        ssize_t n = read(c->fd, c->buf + c->have, bufcap - c->have);
        if (n == 0) {
            kill_conn(w, c, "the gateway closed the connection");
            return;
        }
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN)
                kill_conn(w, c, strerror(errno));
            return;
        }
        c->have += (size_t)n;
        int r;
        while (c->have > 0 && (r = parse_reply(w, c)) == 1)
            ;
        if (c->dead)
            return;
    }
}

/* A hog pipelines GETs and never reads: write what the socket takes. */
static void hog_write(struct worker *w, struct conn *c, uint32_t ev)
{
    if (ev & (EPOLLERR | EPOLLHUP)) {
        if (!c->dead) {
            c->dead = 1;
            w->hog_dropped++;
            uint64_t d = now_ns() - c->hog_start;
            if (d > w->hog_drop_ns)
                w->hog_drop_ns = d;
        }
        return;
    }
    for (;;) {
        size_t at = c->hog_at < hog_head ? (size_t)c->hog_at
                                         : hog_head + (size_t)((c->hog_at - hog_head) % hog_len);
        size_t end = at < hog_head ? hog_head : hog_head + hog_len;
        ssize_t n = write(c->fd, hog_stream + at, end - at);
        if (n > 0) {
            c->hog_at += (uint64_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno != EAGAIN)
            hog_write(w, c, EPOLLERR);
        return;
    }
}

static unsigned busy_count(struct worker *w)
{
    unsigned busy = 0;
    for (int i = w->no; i < G.nconn; i += G.nthreads)
        busy += conns[i].busy && !conns[i].dead;
    return busy;
}

static void *worker_main(void *arg)
{
    struct worker *w = (struct worker *)arg;
    struct epoll_event ev[64];
    int prep = atomic_load(&G.phase) == PREP;
    for (int i = w->no; i < G.nconn; i += G.nthreads)
        if (!conns[i].dead)
            next_req(w, &conns[i]);
    /* pre-population: 30 s at most */
    uint64_t drain_until = prep ? now_ns() + 30000000000u : 0;
    for (;;) {
        int phase = atomic_load_explicit(&G.phase, RELAXED);
        if (prep || phase == DRAIN) {
            if (phase == DRAIN && drain_until == 0)
                drain_until = now_ns() + (uint64_t)(G.drain * 1e9);
            if (busy_count(w) == 0)
                break;
            if (drain_until && now_ns() > drain_until) {
                for (int i = w->no; i < G.nconn; i += G.nthreads)
                    if (conns[i].busy && !conns[i].dead)
                        kill_conn(w, &conns[i], "no reply (lost)");
                break;
            }
        }
        int n = epoll_wait(w->ep, ev, 64, 20);
        for (int i = 0; i < n; i++) {
            struct conn *c = (struct conn *)ev[i].data.ptr;
            if (c->hog)
                hog_write(w, c, ev[i].events);
            else if (!c->dead)
                on_readable(w, c);
        }
    }
    return NULL;
}

/* ------------------------------------------------------------------ the gateway's side */

static long long proc_cpu_ticks(int pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the command may hold spaces */
    if (!p)
        return -1;
    unsigned long long ut = 0, stt = 0;
    /* after ")": state(3) ppid pgrp session tty_nr tpgid flags minflt cminflt majflt
     * cmajflt utime(14) stime(15) */
    if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &stt) != 2)
        return -1;
    return (long long)(ut + stt);
}

static long proc_hwm_kb(int pid)
{
    char path[64], line[256];
    long kb = -1;
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0)
            kb = strtol(line + 6, NULL, 10);
    fclose(f);
    return kb;
}

static void on_usr(int sig)
{
    if (sig == SIGUSR1) {
        atomic_store(&G.killed, 1);
        atomic_fetch_add(&G.gen, 1);
    } else {
        if (atomic_exchange(&G.killed, 0))
            atomic_fetch_add(&G.gen, 1);
        atomic_store(&G.back_ns, now_ns());
    }
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static int open_conn(void)
{
    int fd = srv_connect(G.port);
    if (fd >= 0 && srv_nonblock(fd) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* A hog's connection: a small receive buffer, as a client that never reads ends up
 * with (its window closes), so the gateway's output backs up within seconds. */
static int open_hog(void)
{
    struct sockaddr_in sin;
    int rcv = 4096, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof rcv);
    memset(&sin, 0, sizeof sin);
    sin.sin_family = AF_INET;
    sin.sin_port = htons((unsigned short)G.port);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sin, sizeof sin) != 0 || srv_nonblock(fd) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* ------------------------------------------------------------------ -X: the protocol */

/* One exchange on a fresh connection: send `req`, expect exactly `want` back, and then
 * (closes) the gateway's close. 0 or -1 (said on stderr). */
static int exchange(const char *name, const unsigned char *req, size_t rlen,
                    const unsigned char *want, size_t wlen, int closes)
{
    struct timeval tv = {3, 0};
    size_t cap = wlen + 64, have = 0;
    unsigned char *got = malloc(cap);
    int fd = srv_connect(G.port), eof = 0, rc = -1;
    if (fd < 0 || got == NULL) {
        fprintf(stderr, "gw_load: protocol, %s: connect: %s\n", name, strerror(errno));
        goto out;
    }
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    for (size_t off = 0; off < rlen;) {
        ssize_t n = write(fd, req + off, rlen - off);
        if (n <= 0) {
            if (!closes)
                fprintf(stderr, "gw_load: protocol, %s: write: %s\n", name, strerror(errno));
            if (!closes)
                goto out;
            break; /* the gateway may close before it has read everything */
        }
        off += (size_t)n;
    }
    /* read what comes: until the expected bytes are in (and, when a close is due,
     * until it comes), a timeout, or the end */
    while (!eof && (have < wlen || closes)) {
        ssize_t n = read(fd, got + have, cap - have);
        if (n > 0) {
            have += (size_t)n;
            if (have == cap)
                break;
        } else if (n == 0 || errno == ECONNRESET) {
            eof = 1;
        } else {
            break; /* the timeout */
        }
    }
    if (have != wlen || memcmp(got, want, wlen) != 0) {
        fprintf(stderr, "gw_load: protocol, %s: got %zu bytes \"%.*s\", want %zu \"%.*s\"\n", name,
                have, have < 60 ? (int)have : 60, (const char *)got, wlen,
                wlen < 60 ? (int)wlen : 60, (const char *)want);
    } else if (closes && !eof) {
        fprintf(stderr, "gw_load: protocol, %s: the gateway did not close the connection\n", name);
    } else {
        rc = 0;
    }
out:
    if (fd >= 0)
        close(fd);
    free(got);
    return rc;
}

/* The protocol, exchange by exchange (bench/gw_proto.h): what every gateway must
 * answer alike before its figures mean anything. */
static int proto_check(void)
{
    static unsigned char req[(1u << 20) + 512], want[(1u << 20) + 512];
    char miss[64], key[300];
    unsigned char big[100000];
    size_t r, w;
    int bad = 0;
    snprintf(miss, sizeof miss, "gw:miss:%d:%llu", (int)getpid(), (unsigned long long)now_ns());
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (unsigned char)(i % 251 == '\r' ? 'x' : i % 251);

    r = (size_t)snprintf((char *)req, 512, "SET gw:a 3\r\nabc\r\nGET gw:a\r\nGET %s\r\n", miss);
    w = (size_t)snprintf((char *)want, 512, "STORED\r\nVALUE 3\r\nabc\r\nMISS\r\n");
    bad |= exchange("pipelined SET, GET, GET of a missing key", req, r, want, w, 0);

    r = (size_t)snprintf((char *)req, 512, "SET gw:big %zu\r\n", sizeof big);
    memcpy(req + r, big, sizeof big);
    r += sizeof big;
    r += (size_t)snprintf((char *)req + r, 512, "\r\nGET gw:big\r\n");
    w = (size_t)snprintf((char *)want, 512, "STORED\r\nVALUE %zu\r\n", sizeof big);
    memcpy(want + w, big, sizeof big);
    w += sizeof big;
    w += (size_t)snprintf((char *)want + w, 512, "\r\n");
    bad |= exchange("a 100,000-byte value", req, r, want, w, 0);

    r = (size_t)snprintf((char *)req, 512, "SET gw:empty 0\r\n\r\nGET gw:empty\r\n");
    w = (size_t)snprintf((char *)want, 512, "STORED\r\nVALUE 0\r\n\r\n");
    bad |= exchange("an empty value", req, r, want, w, 0);

    memset(key, 'k', 250);
    r = (size_t)snprintf((char *)req, 512, "GET %.250s\r\n", key);
    bad |= exchange("a 250-byte key", req, r, (const unsigned char *)GW_MISS, strlen(GW_MISS), 0);

    const char *proto = GW_ERR_PROTO;
    r = (size_t)snprintf((char *)req, 512, "GET gw:a\r\nPUT gw:a\r\nGET gw:a\r\n");
    w = (size_t)snprintf((char *)want, 512, "VALUE 3\r\nabc\r\n%s", proto);
    bad |= exchange("an unknown verb after a GET", req, r, want, w, 1);
    memset(key, 'k', 251);
    r = (size_t)snprintf((char *)req, 512, "GET %.251s\r\n", key);
    bad |= exchange("a 251-byte key", req, r, (const unsigned char *)proto, strlen(proto), 1);
    r = (size_t)snprintf((char *)req, 512, "SET gw:a 1048577\r\n");
    bad |= exchange("a value over 1 MiB", req, r, (const unsigned char *)proto, strlen(proto), 1);
    r = (size_t)snprintf((char *)req, 512, "GET gw:a\n");
    bad |= exchange("a line without CR", req, r, (const unsigned char *)proto, strlen(proto), 1);
    r = (size_t)snprintf((char *)req, 512, "SET gw:a 3\r\nabcd\r\n");
    bad |= exchange("a value longer than said", req, r, (const unsigned char *)proto, strlen(proto), 1);
    memset(req, 'G', 400);
    bad |= exchange("a line of 400 bytes", req, 400, (const unsigned char *)proto, strlen(proto), 1);
    r = (size_t)snprintf((char *)req, 512, "GET gw:a b\r\n");
    bad |= exchange("a space in a key", req, r, (const unsigned char *)proto, strlen(proto), 1);
    printf("protocol %s\n", bad ? "FAILED" : "ok");
    return bad ? 1 : 0;
}

static void run_threads(void)
{
    for (int t = 0; t < G.nthreads; t++)
        if (pthread_create(&workers[t].tid, NULL, worker_main, &workers[t]) != 0)
            exit(2);
}

int main(int argc, char **argv)
{
    G.nconn = 64;
    G.nthreads = 2;
    G.secs = 2;
    G.warm = 0.5;
    G.drain = 5;
    G.nkeys = 1000;
    G.vbytes = 100;
    G.pid = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *o = argv[i], *v = argv[i + 1];
        if (!strcmp(o, "-p")) G.port = atoi(v);
        else if (!strcmp(o, "-c")) G.nconn = atoi(v);
        else if (!strcmp(o, "-t")) G.nthreads = atoi(v);
        else if (!strcmp(o, "-s")) G.secs = atof(v);
        else if (!strcmp(o, "-W")) G.warm = atof(v);
        else if (!strcmp(o, "-D")) G.drain = atof(v);
        else if (!strcmp(o, "-k")) G.nkeys = atoi(v);
        else if (!strcmp(o, "-v")) G.vbytes = atoi(v);
        else if (!strcmp(o, "-P")) G.pid = atoi(v);
        else if (!strcmp(o, "-n")) G.nhogs = atoi(v);
        else if (!strcmp(o, "-E")) G.err_fails = atoi(v);
        else if (!strcmp(o, "-X")) G.proto = atoi(v);
        else {
            fprintf(stderr, "gw_load: unknown option %s\n", o);
            return 2;
        }
    }
    if (G.port <= 0 || G.nconn < 1 || G.nthreads < 1 || G.secs <= 0 || G.nkeys < 1 ||
        G.vbytes < 40 || G.vbytes > MAXV || G.nhogs < 0) {
        fprintf(stderr, "usage: gw_load -p PORT [-c CONNS] [-t THREADS] [-s SECONDS] "
                        "[-W WARMUP_S] [-k KEYS] [-v VALUE_BYTES 40..65536] [-P PID] "
                        "[-n HOGS] [-E 1] [-D DRAIN_S] | -p PORT -X 1\n");
        return 2;
    }
    if (G.proto) {
        signal(SIGPIPE, SIG_IGN);
        return proto_check();
    }
    if (G.nthreads > G.nconn)
        G.nthreads = G.nconn;
    bufcap = (size_t)G.vbytes + 64;

    struct rlimit rl;
    rlim_t need = (rlim_t)G.nconn + (rlim_t)G.nhogs + 64;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < need) {
        if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need) {
            fprintf(stderr, "gw_load: %d connections need %lu descriptors, the hard limit is %lu\n",
                    G.nconn + G.nhogs, (unsigned long)need, (unsigned long)rl.rlim_max);
            return 2;
        }
        rl.rlim_cur = need;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
            perror("gw_load: setrlimit");
            return 2;
        }
    }
    signal(SIGPIPE, SIG_IGN);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGUSR2, &sa, NULL);

    G.keys = calloc((size_t)G.nkeys, sizeof *G.keys);
    conns = calloc((size_t)(G.nconn + G.nhogs), sizeof *conns);
    workers = calloc((size_t)G.nthreads, sizeof *workers);
    if (!G.keys || !conns || !workers)
        return 2;
    for (int t = 0; t < G.nthreads; t++) {
        workers[t].no = t;
        workers[t].rng = 0x9e3779b9u * (unsigned)(t + 1) ^ (unsigned)getpid();
        if ((workers[t].ep = epoll_create1(EPOLL_CLOEXEC)) < 0)
            return 2;
    }
    for (int i = 0; i < G.nconn; i++) {
        struct conn *c = &conns[i];
        c->no = i;
        c->prep_next = (unsigned)i;
        c->buf = malloc(bufcap);
        if (!c->buf)
            return 2;
        for (int tries = 0; (c->fd = open_conn()) < 0; tries++) {
            if (tries == 50) { /* a full accept queue at 10,000: give it time */
                fprintf(stderr, "gw_load: connection %d of %d: %s\n", i, G.nconn, strerror(errno));
                return 2;
            }
            sleep_s(0.02);
        }
        struct epoll_event ev = {.events = EPOLLIN | EPOLLET, .data.ptr = c};
        if (epoll_ctl(workers[i % G.nthreads].ep, EPOLL_CTL_ADD, c->fd, &ev) != 0)
            return 2;
    }

    /* pre-population: every key SET once, through the gateway */
    atomic_store(&G.phase, PREP);
    run_threads();
    uint64_t stored = 0, failed = 0, wrongs = 0;
    for (int t = 0; t < G.nthreads; t++) {
        pthread_join(workers[t].tid, NULL);
        stored += workers[t].prep_done;
        failed += workers[t].prep_failed;
        wrongs += workers[t].wrong;
    }
    if (stored != (uint64_t)G.nkeys) {
        fprintf(stderr, "gw_load: pre-population stored %llu of %d keys (%llu ERR, %llu wrong)\n",
                (unsigned long long)stored, G.nkeys, (unsigned long long)failed,
                (unsigned long long)wrongs);
        return 2;
    }
    for (int t = 0; t < G.nthreads; t++)
        workers[t].wrong = 0;

    /* the hogs' stream: one SET of a HOG_VALUE-byte value under a key of their own,
     * then GETs of it, back to back, for ever (each reply is large: a client that
     * fetches large objects and stops reading fills a gateway's output quickly) */
    if (G.nhogs > 0) {
        size_t loop = 16 * 1024, head;
        hog_stream = malloc(64 + HOG_VALUE + 2 + loop);
        if (!hog_stream)
            return 2;
        head = (size_t)snprintf((char *)hog_stream, 64, "SET hog %d\r\n", HOG_VALUE);
        memset(hog_stream + head, 'h', HOG_VALUE);
        memcpy(hog_stream + head + HOG_VALUE, "\r\n", 2);
        hog_head = head + HOG_VALUE + 2;
        for (hog_len = 0; hog_len + 9 <= loop; hog_len += 9)
            memcpy(hog_stream + hog_head + hog_len, "GET hog\r\n", 9);
    }

    atomic_store(&G.phase, WARM);
    run_threads();
    sleep_s(G.warm);
    for (int i = G.nconn; i < G.nconn + G.nhogs; i++) {
        struct conn *c = &conns[i];
        c->no = i;
        c->hog = 1;
        if ((c->fd = open_hog()) < 0) {
            fprintf(stderr, "gw_load: hog %d: %s\n", i - G.nconn, strerror(errno));
            return 2;
        }
        c->hog_start = now_ns();
        struct epoll_event ev = {.events = EPOLLOUT | EPOLLET, .data.ptr = c};
        if (epoll_ctl(workers[0].ep, EPOLL_CTL_ADD, c->fd, &ev) != 0)
            return 2;
    }
    long long cpu0 = G.pid ? proc_cpu_ticks(G.pid) : -1;
    uint64_t t0 = now_ns();
    atomic_store(&G.phase, MEASURE);
    fprintf(stderr, "gw_load: measuring\n"); /* the fault rows' cue */
    fflush(stderr);
    sleep_s(G.secs);
    atomic_store(&G.phase, DRAIN);
    uint64_t t1 = now_ns();
    long long cpu1 = G.pid ? proc_cpu_ticks(G.pid) : -1;
    for (int t = 0; t < G.nthreads; t++)
        pthread_join(workers[t].tid, NULL);
    long hwm = G.pid ? proc_hwm_kb(G.pid) : -1;

    struct hist *h = calloc(1, sizeof *h);
    uint64_t replies = 0, ok = 0, et = 0, eb = 0, wr = 0, emax = 0, gap = 0, hogd = 0, hogns = 0;
    uint64_t first_back = 0;
    if (!h)
        return 2;
    for (int t = 0; t < G.nthreads; t++) {
        struct worker *w = &workers[t];
        hist_add(h, &w->hist);
        replies += w->replies;
        ok += w->ok;
        et += w->err_timeout;
        eb += w->err_backend;
        wr += w->wrong;
        emax = w->err_max_ns > emax ? w->err_max_ns : emax;
        gap = w->gap_ns > gap ? w->gap_ns : gap;
        hogd += w->hog_dropped;
        hogns = w->hog_drop_ns > hogns ? w->hog_drop_ns : hogns;
        if (w->first_good_after_back && (!first_back || w->first_good_after_back < first_back))
            first_back = w->first_good_after_back;
    }
    uint64_t back = atomic_load(&G.back_ns);
    double secs = (double)(t1 - t0) / 1e9;
    double cpu_us = -1;
    if (cpu0 >= 0 && cpu1 >= 0 && replies > 0)
        cpu_us = (double)(cpu1 - cpu0) * 1e6 / (double)sysconf(_SC_CLK_TCK) / (double)replies;
    printf("rps=%.0f p50_us=%.1f p99_us=%.1f p999_us=%.1f replies=%llu ok=%llu "
           "err_timeout=%llu err_backend=%llu wrong=%llu err_max_ms=%.1f gap_ms=%.1f "
           "recover_ms=%.1f cpu_us_per_req=%.2f rss_kb=%ld hog_dropped=%llu hog_drop_ms=%.0f "
           "conns=%d\n",
           (double)replies / secs, (double)hist_pct(h, replies, 0.50) / 1e3,
           (double)hist_pct(h, replies, 0.99) / 1e3, (double)hist_pct(h, replies, 0.999) / 1e3,
           (unsigned long long)replies, (unsigned long long)ok, (unsigned long long)et,
           (unsigned long long)eb, (unsigned long long)wr, (double)emax / 1e6, (double)gap / 1e6,
           back && first_back ? (double)(first_back - back) / 1e6 : -1.0, cpu_us, hwm,
           (unsigned long long)hogd, (double)hogns / 1e6, G.nconn);
    fflush(stdout);
    /* a reset, not a close: 10,000 orderly closes would leave as many ports in
     * TIME_WAIT for a minute */
    struct linger hard = {1, 0};
    for (int i = 0; i < G.nconn + G.nhogs; i++) {
        if (conns[i].fd > 0) {
            (void)setsockopt(conns[i].fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
            close(conns[i].fd);
        }
    }
    return wr > 0 || (G.err_fails && et + eb > 0) ? 1 : 0;
}
