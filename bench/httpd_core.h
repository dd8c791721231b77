/* bench/httpd_core.h - what both HTTP servers share: the request parser, the file
 * lookup and the response head. No I/O on the connection: the servers do that, one
 * with lf_reactor.h (httpd.c), one with a thread per connection (httpd_tpc.c), so
 * the two differ only in how they are threaded.
 *
 * HTTP/1.1 (and 1.0), GET and HEAD of regular files under one directory:
 *   httpd_parse    finds one whole request at the start of a buffer: 0 (need more
 *                  bytes), or its length with the request filled in; a request that
 *                  can never be served sets status to the error to answer.
 *   httpd_respond  writes the response head (and an error's small body) and opens
 *                  the file whose bytes follow it (sent with httpd_sendfile).
 * What is refused, and with what:
 *   400  a malformed request line or header, a target that is not a path (an
 *        absolute-form target too, which RFC 9112 asks origin servers to accept), a
 *        bad %-escape, an encoded NUL or slash, a "." or ".." segment (no way out of the
 *        directory by name; but symbolic links are followed, out of it too, as nginx
 *        does by default: put no link there that you would not serve),
 *        an HTTP/1.1 request without exactly one Host
 *   405  a method other than GET and HEAD (with Allow)
 *   413  a request with a body (Content-Length > 0, or Transfer-Encoding): we take none
 *   414  a target longer than HTTPD_URI_MAX (a longer segment than the file system
 *        takes, or a file named with a trailing slash, is 404)
 *   431  a request head longer than HTTPD_REQ_MAX (the connection's buffer)
 *   505  an HTTP version other than 1.x
 *   404  no such regular file (a directory serves its index.html, also when named
 *        without its trailing slash: no redirect, so relative links in it resolve
 *        against the parent; a FIFO, socket or device is not opened at all); 403
 *        not readable; 503 a lease held on it; 500 the file could not be opened for
 *        a reason of ours (out of descriptors or memory, an I/O error), and close
 * Empty lines before a request are dropped (httpd_blank). An HTTP/1.0 request that
 * asks for keep-alive gets it, and its response says Connection: keep-alive.
 * Every error but 404 and 403 closes the connection after its response (a request
 * whose end we cannot find leaves the stream unusable); the caller closes gracefully
 * (httpd_linger), so the client reads the error before it sees the close.
 *
 * Not here, on purpose: ranges, conditional requests, ETag/Last-Modified, directory
 * listings, compression. A benchmark server that implements the part of HTTP that
 * wrk's requests and the tests exercise, done right.
 */
#ifndef BENCH_HTTPD_CORE_H
#define BENCH_HTTPD_CORE_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define HTTPD_REQ_MAX 8192  /* a request head, and a connection's input buffer */
#define HTTPD_URI_MAX 2048  /* a request target */
#define HTTPD_HEAD_MAX 512  /* room httpd_respond needs for a response head */

struct httpd_req {
    int status;      /* 0: serve it; else the error to answer */
    int head;        /* HEAD: no body */
    int keep_alive;  /* the connection stays open after the response (2: an HTTP/1.0
                      * client asked for it, so the response says it too) */
    char path[HTTPD_URI_MAX + 16]; /* decoded, relative to the directory ("" = root) */
};

static inline int httpd__tchar(unsigned char c) /* RFC 9110 token characters */
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static inline int httpd__lower(int c)
{
    return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

static inline int httpd__ieq(const char *a, size_t n, const char *lit)
{
    size_t i;
    for (i = 0; i < n && lit[i]; i++)
        if (httpd__lower((unsigned char)a[i]) != lit[i])
            return 0;
    return i == n && lit[i] == 0;
}

static inline int httpd__hex(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = httpd__lower(c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Does the comma-separated list v[0..n) hold the token tok (lower case)? */
static inline int httpd__has_token(const char *v, size_t n, const char *tok)
{
    size_t i = 0;
    while (i < n) {
        size_t s, e;
        while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
            i++;
        s = i;
        while (i < n && v[i] != ',')
            i++;
        e = i;
        while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
            e--;
        if (e > s && httpd__ieq(v + s, e - s, tok))
            return 1;
    }
    return 0;
}

/* Decode target t[0..n) (origin form) into r->path: 0, or the status to answer. */
static inline int httpd__path(struct httpd_req *r, const char *t, size_t n)
{
    size_t i = 0, o = 0, seg = 0;
    if (n == 0 || t[0] != '/')
        return 400;
    if (n > HTTPD_URI_MAX)
        return 414;
    for (i = 1; i <= n; i++) {
        int c = i < n ? (unsigned char)t[i] : '/';
        if (i < n && (c == '?' || c == '#'))
            c = '/', n = i; /* the query is not part of the file name */
        if (c == '%' && i < n) {
            int h = i + 2 < n ? httpd__hex((unsigned char)t[i + 1]) : -1;
            int l = i + 2 < n ? httpd__hex((unsigned char)t[i + 2]) : -1;
            if (h < 0 || l < 0 || (h == 0 && l == 0))
                return 400;
            c = h * 16 + l;
            i += 2;
            if (c == '/') /* an encoded slash is not a separator: refuse it */
                return 400;
        }
        if (c != '/') {
            r->path[o++] = (char)c;
            continue;
        }
        /* a segment ends: "." and ".." never reach the file system */
        if ((o - seg == 1 && r->path[seg] == '.') ||
            (o - seg == 2 && r->path[seg] == '.' && r->path[seg + 1] == '.'))
            return 400;
        if (o > seg && i < n) /* keep the separator, drop empty segments ("//") */
            r->path[o++] = '/';
        seg = o;
        if (i >= n)
            break;
    }
    /* a trailing slash stays: it names a directory, and a file so named is ENOTDIR */
    r->path[o] = 0;
    return 0;
}

/* The empty lines (CR, LF) at the start of buf: a client may send them between
 * requests, and they start no request (RFC 9112 2.2). The servers drop them as they
 * come, so that they arm no request timer and fill no buffer. */
static inline size_t httpd_blank(const char *buf, size_t len)
{
    size_t i = 0;
    while (i < len && (buf[i] == '\r' || buf[i] == '\n'))
        i++;
    return i;
}

/* Look at buf[0..len) for one whole request. Returns 0 when it is not all there yet
 * (and could still fit: else the request is complete as an error, 414 or 431, whose
 * length is len), else the bytes it took; r says what to answer. */
static inline size_t httpd_parse(const char *buf, size_t len, struct httpd_req *r)
{
    size_t i = 0, end, line, ls, le, mlen, tlen = 0;
    const char *t = NULL, *m;
    int found = 0, hosts = 0, conn_close = 0, conn_keep = 0, minor, body = 0;
    long long clen = -1;

    r->status = 0;
    r->head = 0;
    r->keep_alive = 0;
    r->path[0] = 0;
    i = httpd_blank(buf, len); /* empty lines before it */
    /* the head ends with an empty line (CRLF CRLF, or bare LFs, which we accept) */
    for (end = line = i; end < len; end++) {
        if (buf[end] != '\n')
            continue;
        if (line > i && (end == line || (end == line + 1 && buf[line] == '\r'))) {
            found = 1;
            end++;
            break;
        }
        line = end + 1;
    }
    if (!found) {
        if (len - i < HTTPD_REQ_MAX) /* the caller drops the empty lines (httpd_blank) */
            return 0;
        /* no end in a full buffer: the request line alone, or the whole head? */
        r->status = memchr(buf + i, '\n', len - i) ? 431 : 414;
        return len;
    }

    /* the request line: METHOD SP target SP HTTP/1.x */
    le = i;
    while (buf[le] != '\n')
        le++;
    ls = le > i && buf[le - 1] == '\r' ? le - 1 : le;
    m = buf + i;
    for (mlen = 0; i + mlen < ls && httpd__tchar((unsigned char)buf[i + mlen]); mlen++) {
    }
    if (mlen == 0 || i + mlen >= ls || buf[i + mlen] != ' ')
        goto bad;
    t = buf + i + mlen + 1;
    while (t + tlen < buf + ls && (unsigned char)t[tlen] > ' ' && t[tlen] != 0x7f)
        tlen++;
    if (tlen == 0 || t + tlen + 9 != buf + ls || t[tlen] != ' ' ||
        memcmp(t + tlen + 1, "HTTP/", 5) != 0 || t[tlen + 6] < '0' || t[tlen + 6] > '9' ||
        t[tlen + 7] != '.' || t[tlen + 8] < '0' || t[tlen + 8] > '9')
        goto bad;
    if (t[tlen + 6] != '1') {
        r->status = 505;
        return end;
    }
    minor = t[tlen + 8] - '0';

    /* the header fields */
    for (i = le + 1; i < end;) {
        size_t s = i, n, v, ve;
        while (buf[i] != '\n')
            i++;
        le = i++;
        ls = le > s && buf[le - 1] == '\r' ? le - 1 : le;
        if (ls == s) /* the empty line */
            break;
        for (n = s; n < ls && httpd__tchar((unsigned char)buf[n]); n++) {
        }
        if (n == s || n >= ls || buf[n] != ':') /* also obs-fold and space before ':' */
            goto bad;
        for (v = n + 1; v < ls && (buf[v] == ' ' || buf[v] == '\t'); v++) {
        }
        for (ve = ls; ve > v && (buf[ve - 1] == ' ' || buf[ve - 1] == '\t'); ve--) {
        }
        for (size_t k = v; k < ve; k++) {
            unsigned char c = (unsigned char)buf[k];
            if ((c < ' ' && c != '\t') || c == 0x7f)
                goto bad;
        }
        if (httpd__ieq(buf + s, n - s, "host")) {
            hosts++;
        } else if (httpd__ieq(buf + s, n - s, "connection")) {
            conn_close |= httpd__has_token(buf + v, ve - v, "close");
            conn_keep |= httpd__has_token(buf + v, ve - v, "keep-alive");
        } else if (httpd__ieq(buf + s, n - s, "content-length")) {
            long long x = 0;
            if (ve == v)
                goto bad;
            for (size_t k = v; k < ve; k++) {
                if (buf[k] < '0' || buf[k] > '9' || x > 1000000000000LL)
                    goto bad;
                x = x * 10 + (buf[k] - '0');
            }
            if (clen >= 0 && clen != x) /* two lengths that disagree */
                goto bad;
            clen = x;
            body |= x > 0;
        } else if (httpd__ieq(buf + s, n - s, "transfer-encoding")) {
            body = 1;
        }
    }
    if (minor >= 1 && hosts != 1)
        goto bad;
    r->keep_alive = minor >= 1 ? !conn_close : conn_keep && !conn_close ? 2 : 0;
    if (body) {
        r->status = 413;
    } else if (mlen == 3 && memcmp(m, "GET", 3) == 0) {
        r->status = httpd__path(r, t, tlen);
    } else if (mlen == 4 && memcmp(m, "HEAD", 4) == 0) {
        r->head = 1;
        r->status = httpd__path(r, t, tlen);
    } else {
        r->status = 405;
    }
    if (r->status != 0)
        r->keep_alive = 0;
    return end;
bad:
    r->status = 400;
    r->keep_alive = 0;
    return end;
}

/* The Date header's value for now: formatted once a second per thread. */
static inline const char *httpd__date(void)
{
    static _Thread_local char text[40];
    static _Thread_local time_t last = -1;
    time_t now = time(NULL);
    if (now != last) {
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(text, sizeof text, "%a, %d %b %Y %H:%M:%S GMT", &tm);
        last = now;
    }
    return text;
}

static inline const char *httpd__type(const char *path)
{
    static const char *const map[][2] = {
        {".html", "text/html"},       {".htm", "text/html"},   {".txt", "text/plain"},
        {".css", "text/css"},         {".js", "text/javascript"}, {".json", "application/json"},
        {".png", "image/png"},        {".jpg", "image/jpeg"},  {".svg", "image/svg+xml"},
    };
    const char *dot = strrchr(path, '.');
    if (dot && !strchr(dot, '/'))
        for (size_t k = 0; k < sizeof map / sizeof map[0]; k++)
            if (strcmp(dot, map[k][0]) == 0)
                return map[k][1];
    return "application/octet-stream";
}

static inline const char *httpd__reason(int status)
{
    switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 431: return "Request Header Fields Too Large";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Internal Server Error";
    }
}

/* The Connection header for keep_alive (as struct httpd_req has it). HTTP/1.1 keeps
 * the connection unless told; HTTP/1.0 closes it unless told. */
static inline const char *httpd__connection(int keep_alive)
{
    return keep_alive == 0 ? "Connection: close\r\n"
           : keep_alive == 2 ? "Connection: keep-alive\r\n"
                             : "";
}

/* An error response (its body a line naming it) into out[HTTPD_HEAD_MAX]: its
 * length. keep_alive as struct httpd_req has it (0 adds Connection: close). */
static inline size_t httpd_error(char *out, int status, int head, int keep_alive)
{
    const char *why = httpd__reason(status);
    int n = snprintf(out, HTTPD_HEAD_MAX,
                     "HTTP/1.1 %d %s\r\nServer: lf-httpd\r\nDate: %s\r\n"
                     "Content-Type: text/plain\r\nContent-Length: %zu\r\n%s%s\r\n",
                     status, why, httpd__date(), strlen(why) + 5,
                     status == 405 ? "Allow: GET, HEAD\r\n" : "", httpd__connection(keep_alive));
    if (!head && n > 0 && (size_t)n + strlen(why) + 5 < HTTPD_HEAD_MAX)
        n += snprintf(out + n, HTTPD_HEAD_MAX - (size_t)n, "%d %s\n", status, why);
    return n > 0 ? (size_t)n : 0;
}

/* Open name under dirfd for reading if it is a regular file or a directory: else -1
 * with errno ENXIO, and nothing opened. The type is looked at first because opening
 * is itself an act on some files (a FIFO's writer is released, a device acts);
 * a swap between the look and the open is caught by the caller's fstat. */
static inline int httpd__open(int dirfd, const char *name)
{
    struct stat st;
    if (fstatat(dirfd, name, &st, 0) != 0)
        return -1;
    if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
        errno = ENXIO;
        return -1;
    }
    return openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY); /* no FIFO block */
}

/* The answer to r: its head (and an error's body) into out[HTTPD_HEAD_MAX], its
 * length returned; *fd and *size the file to send after it (*fd -1: none, also for
 * HEAD). r->keep_alive is cleared when the response closes the connection. */
static inline size_t httpd_respond(int dirfd, struct httpd_req *r, char *out, int *fd,
                                   off_t *size)
{
    struct stat st;
    int f, status = r->status;
    const char *name = r->path; /* for its type */

    *fd = -1;
    *size = 0;
    memset(&st, 0, sizeof st);
    if (status == 0) {
        f = httpd__open(dirfd, r->path[0] ? r->path : ".");
        if (f >= 0 && fstat(f, &st) != 0)
            st.st_mode = 0;
        if (f >= 0 && S_ISDIR(st.st_mode)) {
            int g = httpd__open(f, "index.html");
            name = "index.html";
            close(f);
            f = g;
            if (f >= 0 && fstat(f, &st) != 0)
                st.st_mode = 0;
        }
        if (f < 0) /* ENOENT, ENOTDIR (a file named with a trailing slash), ENAMETOOLONG
                    * (a segment over the file system's limit), ELOOP, ENXIO (not a
                    * regular file), ENODEV: no such file; EWOULDBLOCK: another
                    * process holds a lease on it, try later; EMFILE, ENOMEM, EIO...:
                    * our trouble, not the client's */
            status = errno == EACCES || errno == EPERM ? 403
                     : errno == ENOENT || errno == ENOTDIR || errno == ENAMETOOLONG ||
                               errno == ELOOP || errno == ENXIO || errno == ENODEV
                         ? 404
                     : errno == EWOULDBLOCK ? 503
                                            : 500;
        else if (!S_ISREG(st.st_mode))
            status = 404;
        if (status != 0 && f >= 0)
            close(f);
        if (status == 500)
            r->keep_alive = 0; /* out of descriptors, say: one fewer helps */
    }
    if (status != 0)
        return httpd_error(out, status, r->head, r->keep_alive);
    int n = snprintf(out, HTTPD_HEAD_MAX,
                     "HTTP/1.1 200 OK\r\nServer: lf-httpd\r\nDate: %s\r\n"
                     "Content-Type: %s\r\nContent-Length: %lld\r\n%s\r\n",
                     httpd__date(), httpd__type(name), (long long)st.st_size,
                     httpd__connection(r->keep_alive));
    if (r->head || st.st_size == 0)
        close(f);
    else
        *fd = f, *size = st.st_size;
    return n > 0 ? (size_t)n : 0;
}

/* Send what the socket takes of file fd from *off (*left bytes to go): 0 all sent,
 * 1 the socket is full (EAGAIN), -1 failed (the file shrank, or the connection). */
static inline int httpd_sendfile(int sock, int fd, off_t *off, off_t *left)
{
    while (*left > 0) {
        size_t chunk = *left > (off_t)(1 << 30) ? (size_t)1 << 30 : (size_t)*left;
        ssize_t n = sendfile(sock, fd, off, chunk);
        if (n > 0) {
            *left -= n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else {
            return n < 0 && errno == EAGAIN ? 1 : -1;
        }
    }
    return 0;
}

#endif
