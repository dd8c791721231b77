/* test/httpd_client.c - drives bench/httpd.c (test/httpd.sh starts it) and checks
 * what comes back, byte for byte.
 *
 *   httpd_client PORT DIR IDLE_MS REQUEST_MS FUZZ_MS [basic]
 *
 * DIR is the server's directory, holding small.txt, big.bin, large.bin (a few MiB)
 * and index.html and sub/index.html; IDLE_MS and REQUEST_MS are the server's
 * timeouts. "basic" leaves out the timeout checks (the thread-per-connection server
 * has no request timer). Exit status 0 when every check passed.
 */
#define _GNU_SOURCE /* MSG_NOSIGNAL, usleep */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static int port, failures;
static long idle_ms, req_ms, fuzz_ms;
static char *small, *big, *large, *index_html;
static const char *wwwdir;
static size_t small_n, big_n, large_n, index_n;

static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    failures++;
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static char *slurp(const char *dir, const char *name, size_t *n)
{
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_RDONLY);
    if (fd < 0 || fstat(fd, &st) != 0) {
        perror(path);
        exit(2);
    }
    char *p = malloc((size_t)st.st_size + 1);
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t r = read(fd, p + got, (size_t)st.st_size - got);
        if (r <= 0)
            exit(2);
        got += (size_t)r;
    }
    close(fd);
    *n = got;
    return p;
}

static int connect_to(void)
{
    struct sockaddr_in a;
    struct timeval tv = {10, 0}; /* a check that waits longer has failed */
    int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((unsigned short)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        perror("connect");
        exit(2);
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

static int send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* A buffered reader over one connection: responses come back to back. */
struct rd {
    int fd;
    size_t len;
    char buf[1 << 16];
};

struct resp {
    int status;
    long clen;
    int close;
    int keep_hdr; /* Connection: keep-alive */
    char *body;
    size_t blen;
};

static int fill(struct rd *r)
{
    if (r->len == sizeof r->buf)
        return -1;
    ssize_t n = read(r->fd, r->buf + r->len, sizeof r->buf - r->len);
    if (n <= 0)
        return -1;
    r->len += (size_t)n;
    return 0;
}

/* One response: 0, or -1 (the connection closed or timed out first). The body is
 * read unless head (a HEAD request's response has none). */
static int read_resp(struct rd *r, int head, struct resp *out)
{
    char *e;
    memset(out, 0, sizeof *out);
    out->clen = -1;
    while ((e = memmem(r->buf, r->len, "\r\n\r\n", 4)) == NULL)
        if (fill(r) != 0)
            return -1;
    size_t hl = (size_t)(e - r->buf) + 4;
    char *h = strndup(r->buf, hl);
    if (sscanf(h, "HTTP/1.1 %d ", &out->status) != 1)
        out->status = -1;
    for (char *l = strstr(h, "\r\n"); l && l[2] != '\r'; l = strstr(l + 2, "\r\n")) {
        if (strncasecmp(l + 2, "Content-Length:", 15) == 0)
            out->clen = atol(l + 17);
        if (strncasecmp(l + 2, "Connection: close", 17) == 0)
            out->close = 1;
        if (strncasecmp(l + 2, "Connection: keep-alive", 22) == 0)
            out->keep_hdr = 1;
    }
    free(h);
    memmove(r->buf, r->buf + hl, r->len - hl);
    r->len -= hl;
    if (head || out->clen <= 0)
        return 0;
    out->body = malloc((size_t)out->clen);
    while (out->blen < (size_t)out->clen) {
        if (r->len == 0 && fill(r) != 0) {
            free(out->body);
            out->body = NULL;
            return -1;
        }
        size_t k = r->len < (size_t)out->clen - out->blen ? r->len : (size_t)out->clen - out->blen;
        memcpy(out->body + out->blen, r->buf, k);
        out->blen += k;
        memmove(r->buf, r->buf + k, r->len - k);
        r->len -= k;
    }
    return 0;
}

/* The server closed: EOF within wait_ms, nothing more (a reset counts as closed). */
static int closed(struct rd *r, long wait_ms)
{
    struct pollfd p = {r->fd, POLLIN, 0};
    if (r->len > 0)
        return 0;
    if (poll(&p, 1, (int)wait_ms) != 1)
        return 0;
    char c;
    ssize_t n = read(r->fd, &c, 1);
    return n == 0 || (n < 0 && errno == ECONNRESET);
}

static struct rd *rd_open(void)
{
    struct rd *r = malloc(sizeof *r);
    r->fd = connect_to();
    r->len = 0;
    return r;
}

static void rd_close(struct rd *r)
{
    close(r->fd);
    free(r);
}

static const char *want_body(const char *path, size_t *n)
{
    size_t len = strlen(path);
    if (len > 1 && path[len - 1] == '/' && strcmp(path, "/sub/") != 0)
        return NULL; /* a file named as a directory */
    if (strncmp(path, "/small.txt", 10) == 0)
        return *n = small_n, small;
    if (strcmp(path, "/big.bin") == 0)
        return *n = big_n, big;
    if (strcmp(path, "/large.bin") == 0)
        return *n = large_n, large;
    if (strcmp(path, "/") == 0 || strncmp(path, "/sub", 4) == 0) /* both index.html */
        return *n = index_n, index_html;
    return NULL;
}

/* A request for path and its response checked: the file's bytes, or 404. */
static void check_get(struct rd *r, const char *what, const char *method, const char *path)
{
    struct resp s;
    size_t n = 0;
    const char *body = want_body(path, &n);
    int head = strcmp(method, "HEAD") == 0;
    if (read_resp(r, head, &s) != 0) {
        fail("%s: %s %s: no response", what, method, path);
        return;
    }
    if (body == NULL) {
        if (s.status != 404)
            fail("%s: %s %s: status %d, want 404", what, method, path, s.status);
    } else if (s.status != 200 || s.clen != (long)n) {
        fail("%s: %s %s: status %d length %ld, want 200 and %zu", what, method, path, s.status,
             s.clen, n);
    } else if (!head && (s.blen != n || memcmp(s.body, body, n) != 0)) {
        fail("%s: %s %s: the body differs from the file", what, method, path);
    }
    free(s.body);
}

static void request(struct rd *r, const char *method, const char *path)
{
    char q[512];
    int n = snprintf(q, sizeof q, "%s %s HTTP/1.1\r\nHost: test\r\n\r\n", method, path);
    send_all(r->fd, q, (size_t)n);
}

static void roundtrip(struct rd *r, const char *what, const char *method, const char *path)
{
    request(r, method, path);
    check_get(r, what, method, path);
}

static const char *const paths[] = {"/small.txt", "/big.bin", "/nope", "/", "/sub/",
                                    "/small.txt?x=1", "/sub", "/sub//index.html/",
                                    "/small.txt/", "/sub//index.html"};

static void t_basic(void)
{
    struct rd *r = rd_open();
    roundtrip(r, "basic", "GET", "/small.txt");
    roundtrip(r, "basic", "HEAD", "/big.bin");
    roundtrip(r, "basic", "GET", "/big.bin"); /* HEAD sent no body: this one is intact */
    roundtrip(r, "basic", "GET", "/");
    roundtrip(r, "basic", "GET", "/sub/");
    roundtrip(r, "basic", "GET", "/small.txt?x=1");
    roundtrip(r, "basic", "GET", "/nope");      /* 404 keeps the connection */
    roundtrip(r, "basic", "HEAD", "/small.txt");
    roundtrip(r, "basic", "GET", "/large.bin");
    rd_close(r);
}

/* 40 requests in one write, then 40 more in pieces of 1 to 40 bytes: every response
 * in order. */
static void t_pipeline(void)
{
    static const char *const m[] = {"GET", "HEAD"};
    char *q = malloc(40 * 128);
    size_t len = 0;
    struct rd *r = rd_open();
    for (int round = 0; round < 2; round++) {
        len = 0;
        for (int i = 0; i < 40; i++)
            len += (size_t)sprintf(q + len, "%s %s HTTP/1.1\r\nHost: t\r\n\r\n", m[i % 7 == 3],
                                   paths[i % 10]);
        if (round == 0) {
            send_all(r->fd, q, len);
        } else {
            for (size_t off = 0; off < len;) {
                size_t k = 1 + (size_t)rand() % 40;
                k = k > len - off ? len - off : k;
                send_all(r->fd, q + off, k);
                off += k;
                if (rand() % 4 == 0)
                    usleep(200);
            }
        }
        for (int i = 0; i < 40; i++)
            check_get(r, round ? "pipelined in pieces" : "pipelined", m[i % 7 == 3], paths[i % 10]);
    }
    rd_close(r);
    free(q);
}

/* req on a fresh connection: the status wanted, and the connection closed after it
 * (unless keep: then a valid request must work on it). */
static void expect_status(const char *what, const char *req, size_t len, int status, int keep)
{
    struct rd *r = rd_open();
    struct resp s;
    send_all(r->fd, req, len);
    if (read_resp(r, 0, &s) != 0) {
        fail("%s: no response", what);
    } else if (s.status != status) {
        fail("%s: status %d, want %d", what, s.status, status);
    } else if (keep) {
        roundtrip(r, what, "GET", "/small.txt");
    } else if (!s.close || !closed(r, 3000)) {
        fail("%s: the connection was not closed after %d", what, status);
    }
    free(s.body);
    rd_close(r);
}

#define EXPECT(what, req, status, keep) expect_status(what, req, sizeof req - 1, status, keep)

static void t_errors(void)
{
    EXPECT("garbage", "GARBAGE\r\n\r\n", 400, 0);
    EXPECT("no Host", "GET /small.txt HTTP/1.1\r\n\r\n", 400, 0);
    EXPECT("two Hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, 0);
    EXPECT("space before colon", "GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400, 0);
    EXPECT("folded header", "GET / HTTP/1.1\r\nHost: a\r\n x\r\n\r\n", 400, 0);
    EXPECT("bad version", "GET / HTTP/x.1\r\nHost: a\r\n\r\n", 400, 0);
    EXPECT("HTTP/2.0", "GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505, 0);
    EXPECT("not a path", "GET small.txt HTTP/1.1\r\nHost: a\r\n\r\n", 400, 0);
    EXPECT("bad escape", "GET /small%2.txt HTTP/1.1\r\nHost: a\r\n\r\n", 400, 0);
    EXPECT("NUL escape", "GET /small.txt%00 HTTP/1.1\r\nHost: a\r\n\r\n", 400, 0);
    EXPECT("POST", "POST /small.txt HTTP/1.1\r\nHost: a\r\n\r\n", 405, 0);
    EXPECT("DELETE", "DELETE /small.txt HTTP/1.1\r\nHost: a\r\n\r\n", 405, 0);
    EXPECT("a body", "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello", 413, 0);
    EXPECT("chunked", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 413, 0);
    EXPECT("traversal", "GET /../etc/passwd HTTP/1.1\r\nHost: a\r\n\r\n", 400, 0);
    EXPECT("traversal deeper", "GET /sub/../../etc/passwd HTTP/1.1\r\nHost: a\r\n\r\n", 400, 0);
    EXPECT("traversal escaped", "GET /%2e%2e/etc/passwd HTTP/1.1\r\nHost: a\r\n\r\n", 400, 0);
    EXPECT("traversal slash", "GET /..%2fetc/passwd HTTP/1.1\r\nHost: a\r\n\r\n", 400, 0);
    EXPECT("404 keeps", "GET /nope HTTP/1.1\r\nHost: a\r\n\r\n", 404, 1);
    { /* a socket in the directory: no regular file (open says ENXIO), 404 and keep */
        struct sockaddr_un a;
        int u = socket(AF_UNIX, SOCK_STREAM, 0);
        memset(&a, 0, sizeof a);
        a.sun_family = AF_UNIX;
        int n = snprintf(a.sun_path, sizeof a.sun_path, "%s/sock", wwwdir);
        unlink(a.sun_path);
        if (n < 0 || (size_t)n >= sizeof a.sun_path || u < 0 ||
            bind(u, (struct sockaddr *)&a, sizeof a) != 0)
            fail("errors: cannot make the socket %s", a.sun_path);
        EXPECT("a socket", "GET /sock HTTP/1.1\r\nHost: a\r\n\r\n", 404, 1);
        unlink(a.sun_path);
        close(u);
    }
    EXPECT("bare LF", "GET /small.txt HTTP/1.1\nHost: a\n\n", 200, 1);
    EXPECT("HTTP/1.0 closes", "GET /small.txt HTTP/1.0\r\n\r\n", 200, 0);
    EXPECT("Connection: close", "GET /small.txt HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", 200, 0);
    EXPECT("HTTP/1.0 keep-alive", "GET /small.txt HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", 200, 1);
    EXPECT("HTTP/1.0 keep-alive 404", "GET /nope HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", 404, 1);
    { /* an HTTP/1.0 client keeps the connection only if the response says so too */
        static const char *const reqs[] = {
            "GET /small.txt HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
            "GET /nope HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
            "GET /small.txt HTTP/1.1\r\nHost: a\r\n\r\n"}; /* 1.1: implied, not said */
        for (int i = 0; i < 3; i++) {
            struct rd *r = rd_open();
            struct resp s;
            send_all(r->fd, reqs[i], strlen(reqs[i]));
            if (read_resp(r, 0, &s) != 0 || s.close || s.keep_hdr != (i < 2))
                fail("keep-alive header: request %d: Connection: keep-alive %s", i,
                     s.keep_hdr ? "said" : "not said");
            free(s.body);
            rd_close(r);
        }
    }

    /* a target over 2,048 bytes: 414; no end of line in 8 KiB: 414; a head over 8 KiB: 431 */
    char *q = malloc(40000);
    int n = sprintf(q, "GET /");
    memset(q + n, 'a', 3000);
    n += 3000;
    n += sprintf(q + n, " HTTP/1.1\r\nHost: a\r\n\r\n");
    expect_status("long target", q, (size_t)n, 414, 0);
    n = sprintf(q, "GET /"); /* a segment longer than a file name can be: no such file */
    memset(q + n, 'a', 300);
    n += 300;
    n += sprintf(q + n, " HTTP/1.1\r\nHost: a\r\n\r\n");
    expect_status("long segment", q, (size_t)n, 404, 1);
    n = sprintf(q, "GET /");
    memset(q + n, 'a', 12000);
    expect_status("endless request line", q, (size_t)n + 12000, 414, 0);
    n = sprintf(q, "GET / HTTP/1.1\r\nHost: a\r\n");
    for (int i = 0; i < 800; i++)
        n += sprintf(q + n, "X-Filler-%d: %s\r\n", i, "0123456789abcdef0123456789");
    n += sprintf(q + n, "\r\n");
    expect_status("huge headers", q, (size_t)n, 431, 0);
    free(q);
}

/* A FIFO in the directory: 404, and never opened (opening one is an act: it would
 * release a writer waiting in open). The writer here must still wait after the GET. */
static volatile int fifo_opened;
static char fifo_path[4096];

static void *fifo_writer(void *arg)
{
    (void)arg;
    int fd = open(fifo_path, O_WRONLY); /* blocks until somebody opens it to read */
    fifo_opened = 1;
    if (fd >= 0)
        close(fd);
    return NULL;
}

static void t_fifo(void)
{
    pthread_t th;
    snprintf(fifo_path, sizeof fifo_path, "%s/fifo", wwwdir);
    unlink(fifo_path);
    if (mkfifo(fifo_path, 0644) != 0) {
        fail("fifo: mkfifo %s: %s", fifo_path, strerror(errno));
        return;
    }
    fifo_opened = 0;
    pthread_create(&th, NULL, fifo_writer, NULL);
    usleep(100000); /* the writer waits in open */
    EXPECT("a FIFO", "GET /fifo HTTP/1.1\r\nHost: a\r\n\r\n", 404, 1);
    usleep(100000);
    if (fifo_opened)
        fail("fifo: the server opened the FIFO (its writer was released)");
    int r = open(fifo_path, O_RDONLY | O_NONBLOCK); /* release it ourselves */
    pthread_join(th, NULL);
    if (r >= 0)
        close(r);
    unlink(fifo_path);
}

/* A request cut short, then the client's close: no answer, the connection ends. */
static void t_truncated(void)
{
    static const char *const cuts[] = {"GET /sma", "GET /small.txt HTTP/1.1\r\nHo", "G"};
    for (int i = 0; i < 3; i++) {
        struct rd *r = rd_open();
        send_all(r->fd, cuts[i], strlen(cuts[i]));
        shutdown(r->fd, SHUT_WR);
        if (!closed(r, 3000))
            fail("truncated \"%s\": the server did not close", cuts[i]);
        rd_close(r);
    }
    struct rd *r = rd_open(); /* and a client that just goes away mid-request */
    send_all(r->fd, "GET /small", 10);
    rd_close(r);
    r = rd_open();
    roundtrip(r, "after truncated requests", "GET", "/small.txt");
    rd_close(r);
}

/* A client that stays connected and says nothing is closed after the idle timeout. */
static void t_idle(void)
{
    struct rd *r = rd_open();
    long long t0 = now_ms();
    roundtrip(r, "idle", "GET", "/small.txt");
    if (!closed(r, (int)idle_ms + 3000))
        fail("idle: not closed after %ld ms", idle_ms + 3000);
    long long took = now_ms() - t0;
    if (took < idle_ms * 8 / 10)
        fail("idle: closed after %lld ms, before the %ld ms timeout", took, idle_ms);
    rd_close(r);
}

/* Empty lines between requests start none (RFC 9112 2.2): after a request and its
 * trailing CRLFs the connection stays open and silent past the request timeout (no
 * 408), and a run of CRLFs longer than the request buffer is no 414. */
static void t_blank_lines(void)
{
    static const char get[] = "GET /small.txt HTTP/1.1\r\nHost: t\r\n\r\n";
    char crlf[20000];
    struct resp s;
    struct rd *r = rd_open();
    struct pollfd p = {r->fd, POLLIN, 0};
    for (size_t i = 0; i < sizeof crlf; i += 2)
        memcpy(crlf + i, "\r\n", 2);
    send_all(r->fd, get, sizeof get - 1);
    send_all(r->fd, "\r\n\r\n", 4);
    if (read_resp(r, 0, &s) != 0 || s.status != 200)
        fail("blank lines: the request before them was not answered 200");
    free(s.body);
    if (r->len > 0 || poll(&p, 1, (int)req_ms + 500) != 0)
        fail("blank lines: the server answered or closed after them (a 408 for no request)");
    send_all(r->fd, crlf, sizeof crlf);
    roundtrip(r, "blank lines then a request", "GET", "/small.txt");
    rd_close(r);
}

/* A request begun late in the idle window has the request timeout to finish: the
 * idle timeout passes while it arrives, and it is answered all the same. */
static void t_late_request(void)
{
    static const char part1[] = "GET /small.txt HTTP/1.1\r\n", part2[] = "Host: t\r\n\r\n";
    struct rd *r = rd_open();
    struct resp s;
    usleep((useconds_t)(idle_ms * 750)); /* three quarters of the idle timeout */
    send_all(r->fd, part1, sizeof part1 - 1);
    usleep((useconds_t)(req_ms * 600)); /* past the idle timeout, in the request's */
    send_all(r->fd, part2, sizeof part2 - 1);
    if (read_resp(r, 0, &s) != 0 || s.status != 200)
        fail("late request: a request begun before the idle timeout was not answered");
    free(s.body);
    rd_close(r);
}

/* Empty lines are not progress: a client that sends only CRLFs, a pair every tenth
 * of the idle timeout, is closed after the idle timeout all the same. */
static void t_blank_idle(void)
{
    struct rd *r = rd_open();
    long long t0 = now_ms();
    int open = 1;
    while (open && now_ms() - t0 < idle_ms * 3) {
        struct pollfd p = {r->fd, POLLIN, 0};
        if (send_all(r->fd, "\r\n", 2) != 0 || poll(&p, 1, (int)(idle_ms / 10)) == 1)
            open = !closed(r, 1000);
    }
    if (open)
        fail("blank idle: still open after %lld ms of empty lines (idle timeout %ld ms)",
             now_ms() - t0, idle_ms);
    else if (now_ms() - t0 < idle_ms * 8 / 10)
        fail("blank idle: closed after %lld ms, before the idle timeout", now_ms() - t0);
    rd_close(r);
}

/* Out of descriptors (the server runs under a low RLIMIT_NOFILE): a file that exists
 * but cannot be opened is our trouble, 500 and close, never 404. */
static void t_emfile(void)
{
    struct rd *rs[80];
    struct resp s;
    int n = 0, got500 = 0;
    for (; n < 80; n++)
        rs[n] = rd_open();
    usleep(300000); /* the server accepts what it can */
    for (int i = 0; i < n && !got500; i++) {
        request(rs[i], "GET", "/small.txt");
        struct pollfd p = {rs[i]->fd, POLLIN, 0};
        if (poll(&p, 1, 300) != 1)
            continue; /* not accepted: it waits in the backlog */
        if (read_resp(rs[i], 0, &s) != 0)
            continue;
        if (s.status == 404)
            fail("emfile: a file that exists answered 404");
        else if (s.status == 500)
            got500 = s.close ? 1 : (fail("emfile: 500 without Connection: close"), 1);
        else if (s.status != 200)
            fail("emfile: status %d", s.status);
        free(s.body);
    }
    if (!got500)
        fail("emfile: no request met the descriptor limit (no 500)");
    for (int i = 0; i < n; i++)
        rd_close(rs[i]);
    usleep(300000);
    struct rd *r = rd_open(); /* descriptors back: served again */
    roundtrip(r, "emfile: after", "GET", "/small.txt");
    rd_close(r);
}

/* Another client's round trips while something else goes on: each must be quick. */
struct bystander {
    volatile int stop;
    int n, slow;
    long worst_ms;
};

static void *bystander(void *arg)
{
    struct bystander *b = arg;
    struct rd *r = rd_open();
    while (!b->stop) {
        long long t0 = now_ms();
        roundtrip(r, "bystander", "GET", "/small.txt");
        long long d = now_ms() - t0;
        if (d > b->worst_ms)
            b->worst_ms = (long)d;
        b->n++;
        usleep(2000);
    }
    rd_close(r);
    return NULL;
}

/* Slowloris: a byte every 100 ms, never a whole request. The request timer closes
 * it (408) while the bystander is served. */
static void t_slowloris(void)
{
    static const char req[] = "GET /small.txt HTTP/1.1\r\nHost: a\r\nX-Slow: "
                              "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n";
    struct bystander b = {0, 0, 0, 0};
    pthread_t t;
    struct rd *r = rd_open();
    int gone = 0;
    pthread_create(&t, NULL, bystander, &b);
    long long t0 = now_ms();
    for (size_t i = 0; i < sizeof req - 1 && !gone; i++) {
        if (send(r->fd, req + i, 1, MSG_NOSIGNAL) != 1)
            gone = 1;
        struct pollfd p = {r->fd, POLLIN, 0};
        if (!gone && poll(&p, 1, 100) == 1)
            gone = 1;
    }
    long long took = now_ms() - t0;
    b.stop = 1;
    pthread_join(t, NULL);
    if (!gone) {
        fail("slowloris: still connected after %lld ms (request timeout %ld ms)", took, req_ms);
    } else {
        struct resp s;
        if (took < req_ms * 8 / 10 || took > req_ms + 2000)
            fail("slowloris: closed after %lld ms, the request timeout is %ld ms", took, req_ms);
        if (read_resp(r, 0, &s) == 0 && s.status != 408)
            fail("slowloris: answered %d, want 408 (or nothing)", s.status);
        free(s.body);
    }
    if (b.n < 10 || b.worst_ms > 1000)
        fail("slowloris: the other client made %d round trips, the slowest %ld ms", b.n, b.worst_ms);
    rd_close(r);
}

/* Clients that ask for a large file, several times, and read nothing: more of them
 * than the server has threads. Another client's round trips go on; then they read,
 * and get every byte. */
static void t_stop_reading(void)
{
    enum { STALLED = 6, ASKS = 3 };
    struct rd *st[STALLED];
    struct bystander b = {0, 0, 0, 0};
    pthread_t t;
    for (int i = 0; i < STALLED; i++) {
        st[i] = rd_open();
        for (int k = 0; k < ASKS; k++)
            request(st[i], "GET", "/large.bin");
    }
    usleep(100000); /* let the server fill their sockets */
    pthread_create(&t, NULL, bystander, &b);
    long long t0 = now_ms();
    while (b.n < 100 && now_ms() - t0 < idle_ms / 2)
        usleep(5000);
    b.stop = 1;
    pthread_join(t, NULL);
    if (b.n < 20 || b.worst_ms > 1000)
        fail("stop reading: the other client made %d round trips, the slowest %ld ms", b.n,
             b.worst_ms);
    for (int i = 0; i < STALLED; i++) {
        for (int k = 0; k < ASKS; k++)
            check_get(st[i], "stop reading, then read", "GET", "/large.bin");
        rd_close(st[i]);
    }
}

/* Random mutations of valid requests, each on its own connection, the client's side
 * shut after it: whatever comes back must be HTTP responses, then the close. */
static void t_fuzz(void)
{
    static const char *const seeds[] = {
        "GET /small.txt HTTP/1.1\r\nHost: a\r\n\r\n",
        "HEAD /big.bin HTTP/1.1\r\nHost: a\r\nConnection: keep-alive\r\n\r\n",
        "GET /sub/index.html?q=%41 HTTP/1.0\r\nUser-Agent: x\r\n\r\n",
        "GET /%73mall.txt HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\nGET / HTTP/1.1\r\nHost: b\r\n\r\n",
    };
    static const char spice[] = "\r\n :/%.?\t\0\x7f\xff%2e%2f..HTTP/1.1Content-Length: 9";
    char *q = malloc(1 << 16), *in = malloc(1 << 16);
    long long t0 = now_ms();
    unsigned long iters = 0, answers = 0;
    while (now_ms() - t0 < fuzz_ms) {
        size_t len = strlen(strcpy(q, seeds[rand() % 4]));
        for (int m = 1 + rand() % 4; m > 0; m--) {
            size_t at = len ? (size_t)rand() % len : 0, k;
            switch (rand() % 6) {
            case 0: /* a random byte */
                if (len)
                    q[at] = (char)rand();
                break;
            case 1: /* insert a byte of spice */
                memmove(q + at + 1, q + at, len - at);
                q[at] = spice[rand() % (int)(sizeof spice - 1)];
                len++;
                break;
            case 2: /* delete a range */
                k = (size_t)rand() % 8;
                k = k > len - at ? len - at : k;
                memmove(q + at, q + at + k, len - at - k);
                len -= k;
                break;
            case 3: /* duplicate a range */
                k = (size_t)rand() % 32;
                k = k > len - at ? len - at : k;
                if (len + k < 30000) {
                    memmove(q + at + k, q + at, len - at);
                    len += k;
                }
                break;
            case 4: /* truncate */
                len = at;
                break;
            default: /* a long run of one byte */
                k = (size_t)rand() % (rand() % 8 ? 100 : 12000);
                if (len + k < 30000) {
                    memmove(q + at + k, q + at, len - at);
                    memset(q + at, spice[rand() % (int)(sizeof spice - 1)], k);
                    len += k;
                }
            }
        }
        int fd = connect_to();
        for (size_t off = 0; off < len;) { /* in one to three pieces */
            size_t k = rand() % 2 ? len - off : 1 + (size_t)rand() % (len - off);
            if (send_all(fd, q + off, k) != 0)
                break;
            off += k;
        }
        shutdown(fd, SHUT_WR);
        size_t got = 0;
        ssize_t n;
        while (got < (1 << 16) && (n = read(fd, in + got, (1 << 16) - got)) > 0)
            got += (size_t)n;
        if (got > 0) {
            answers++;
            if (got < 12 || memcmp(in, "HTTP/1.1 ", 9) != 0) {
                fail("fuzz: a response that is not one (%zu bytes: %.20s)", got, in);
                break;
            }
        } else if (n < 0 && errno != ECONNRESET) {
            fail("fuzz: no close within 10 s (%s)", strerror(errno));
            break;
        }
        close(fd);
        if (++iters % 200 == 0) {
            struct rd *r = rd_open();
            roundtrip(r, "fuzz, between", "GET", "/small.txt");
            rd_close(r);
        }
    }
    printf("fuzz: %lu mutated requests in %ld ms, %lu answered\n", iters, fuzz_ms, answers);
    free(q);
    free(in);
    struct rd *r = rd_open();
    roundtrip(r, "after the fuzzer", "GET", "/small.txt");
    rd_close(r);
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: httpd_client PORT DIR IDLE_MS REQUEST_MS FUZZ_MS [basic|emfile]\n");
        return 2;
    }
    port = atoi(argv[1]);
    idle_ms = atol(argv[3]);
    req_ms = atol(argv[4]);
    fuzz_ms = atol(argv[5]);
    int basic = argc > 6 && strcmp(argv[6], "basic") == 0;
    wwwdir = argv[2];
    small = slurp(argv[2], "small.txt", &small_n);
    big = slurp(argv[2], "big.bin", &big_n);
    large = slurp(argv[2], "large.bin", &large_n);
    index_html = slurp(argv[2], "index.html", &index_n);
    signal(SIGPIPE, SIG_IGN);
    srand(1);
    if (argc > 6 && strcmp(argv[6], "emfile") == 0) { /* the server has few descriptors */
        t_emfile();
        printf("%s out of descriptors\n", failures ? "FAIL" : "ok  ");
        return failures ? 1 : 0;
    }

    struct { const char *name; void (*fn)(void); int timeouts; } tests[] = {
        {"GET and HEAD", t_basic, 0},
        {"pipelining", t_pipeline, 0},
        {"errors", t_errors, 0},
        {"truncated requests", t_truncated, 0},
        {"a FIFO is not opened", t_fifo, 0},
        {"a client that stops reading", t_stop_reading, 0},
        {"slowloris", t_slowloris, 1},
        {"idle timeout", t_idle, 1},
        {"blank lines between requests", t_blank_lines, 1},
        {"empty lines are not progress", t_blank_idle, 1},
        {"a request begun late in the idle window", t_late_request, 1},
        {"fuzz", t_fuzz, 0},
    };
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        if (basic && tests[i].timeouts)
            continue;
        int before = failures;
        long long t0 = now_ms();
        tests[i].fn();
        printf("%s %s (%lld ms)\n", failures == before ? "ok  " : "FAIL", tests[i].name,
               now_ms() - t0);
        fflush(stdout);
    }
    free(small);
    free(big);
    free(large);
    free(index_html);
    return failures ? 1 : 0;
}
