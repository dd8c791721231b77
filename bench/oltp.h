/* bench/oltp.h - what the parts of the OLTP demo share. One binary, four commands:
 *
 *   bench/oltp.c       the two servers, front-end and back-end (the POSA2 example), and
 *                      main(), which picks the command: backend, frontend, demo, soak
 *   bench/oltp_demo.c  demo: starts both servers, drives them, checks every reply
 *   bench/oltp_soak.c  soak: the same servers under churn, resets and stalls
 *
 * The demo and the soak start the servers as children of the same binary
 * (/proc/self/exe backend|frontend). What they share is here, as static inline
 * functions (like srv_common.h): time and socket helpers, the NOTICE a front-end sends
 * a client before it closes the connection, the soak's DOOMED bit, and starting,
 * reading and reaping a child process.
 */
#ifndef BENCH_OLTP_H
#define BENCH_OLTP_H

#include "srv_common.h"
#include "wire.h"

#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>

#define WRITE_WAIT_MS 1000 /* a peer that reads nothing for this long is dropped */

static inline long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* All n bytes to a non-blocking socket, waiting at most ms for room each time it is
 * full. 0, ETIMEDOUT, or the error. */
static inline int write_all(int fd, const void *buf, size_t n, int ms)
{
    const char *p = (const char *)buf;
    while (n > 0) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k > 0) {
            p += k;
            n -= (size_t)k;
        } else if (k < 0 && errno == EINTR) {
            continue;
        } else if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd pfd;
            int r;
            pfd.fd = fd;
            pfd.events = POLLOUT;
            pfd.revents = 0;
            r = poll(&pfd, 1, ms);
            if (r == 0)
                return ETIMEDOUT;
            if (r < 0 && errno != EINTR)
                return errno;
        } else {
            return k < 0 ? errno : EIO;
        }
    }
    return 0;
}

static inline void sleep_ns(long long ns)
{
    struct timespec ts;
    ts.tv_sec = (time_t)(ns / 1000000000LL);
    ts.tv_nsec = (long)(ns % 1000000000LL);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static inline void parse_int(const char *opt, const char *v, int *out)
{
    char *end;
    long x = strtol(v, &end, 10);
    if (*v == '\0' || *end != '\0' || x < 0 || x > 1000000000L) {
        fprintf(stderr, "oltp: bad value for %s: %s\n", opt, v);
        exit(2);
    }
    *out = (int)x;
}

/* -R: the NOTICE a front-end sends a client before it closes the connection, and why.
 * A reply can never look like one: request ids count up from 0, conn ids skip ~0. */
enum { NOTE_RESET = 1, NOTE_TIMEOUT, NOTE_NO_BACKEND, NOTE_OTHER, NOTE_IDLE, NOTE_N };
static const char *const note_name[NOTE_N] = { "?", "reset", "timeout", "no_backend", "other",
                                               "idle" };

static inline void notice_fill(unsigned char *m, uint32_t why)
{
    uint64_t id = ~(uint64_t)0;
    uint32_t conn = ~(uint32_t)0;
    memset(m, 0, WIRE_SIZE);
    memcpy(m, &id, 8);
    memcpy(m + 8, &conn, 4);
    memcpy(m + 12, &why, 4);
}

/* The reason of a NOTICE, or 0 if m is not one. */
static inline uint32_t notice_reason(const unsigned char *m)
{
    return wire_get64(m) == ~(uint64_t)0 && wire_get32(m + 8) == ~(uint32_t)0 ? wire_get32(m + 12)
                                                                             : 0;
}

/* The soak's bookkeeping: the top bit of a request's conn field marks a DOOMED request,
 * one its client will reset its connection under before it reads the reply. A -R
 * front-end counts those calls apart, so that every other request can be accounted
 * for exactly (a doomed call's outcome may never reach anybody). */
#define SOAK_DOOMED 0x80000000u

/* ------------------------------------------------------------------ >>child
 * The demo and the soak run each server as a child process: its stdout says
 * "port N" once it listens, its stderr ends with its stats line on SIGTERM. */

struct child {
    const char *name;
    pid_t pid;
    int out;   /* its stdout */
    FILE *err; /* its stderr, an unlinked temporary file */
    int status;
    char stats[1024]; /* its stats line ("fe ..." / "be ..."), if any */
};

static inline void cloexec(int fd)
{
    fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC);
}

static inline int spawn(struct child *ch, const char *path, char *const argv[])
{
    int p[2];
    if (pipe(p) != 0 || (ch->err = tmpfile()) == NULL)
        return -1;
    cloexec(p[0]);
    cloexec(p[1]);
    cloexec(fileno(ch->err));
    fflush(NULL);
    if ((ch->pid = fork()) < 0)
        return -1;
    if (ch->pid == 0) {
        dup2(p[1], 1); /* dup2 clears close-on-exec on the copies */
        dup2(fileno(ch->err), 2);
        execv(path, argv);
        _exit(127);
    }
    close(p[1]);
    ch->out = p[0];
    return 0;
}

/* The "port N" line (within timeout_ms), or -1. */
static inline int read_port(struct child *ch, int timeout_ms)
{
    char buf[256];
    size_t len = 0;
    long long until = now_ns() + (long long)timeout_ms * 1000000LL;
    while (len < sizeof buf - 1) {
        struct pollfd pfd;
        ssize_t n;
        int port;
        char *nl;
        pfd.fd = ch->out;
        pfd.events = POLLIN;
        pfd.revents = 0;
        if (poll(&pfd, 1, (int)((until - now_ns()) / 1000000LL) + 1) <= 0 || now_ns() > until)
            return -1;
        if ((n = read(ch->out, buf + len, sizeof buf - 1 - len)) <= 0)
            return -1;
        len += (size_t)n;
        buf[len] = '\0';
        if ((nl = strchr(buf, '\n')) != NULL)
            return sscanf(buf, "port %d", &port) == 1 ? port : -1;
    }
    return -1;
}

/* Wait for ch to exit within timeout_ms (after SIGKILL if it does not): its exit
 * status, or -1 if it had to be killed. Then collect its stderr. */
static inline int reap(struct child *ch, int timeout_ms)
{
    long long until = now_ns() + (long long)timeout_ms * 1000000LL;
    int st = 0, hung = 0;
    char line[1024];
    for (;;) {
        pid_t w = waitpid(ch->pid, &st, WNOHANG);
        if (w == ch->pid)
            break;
        if (w < 0 && errno != EINTR)
            break;
        if (now_ns() > until && !hung) {
            fprintf(stderr, "oltp demo: %s did not exit in time: killing it\n", ch->name);
            kill(ch->pid, SIGKILL);
            hung = 1;
        }
        usleep(10000);
    }
    ch->status = hung ? -1 : (WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    rewind(ch->err);
    while (fgets(line, sizeof line, ch->err) != NULL) {
        if ((strncmp(line, "fe ", 3) == 0 || strncmp(line, "be ", 3) == 0) &&
            ch->stats[0] == '\0') {
            line[strcspn(line, "\n")] = '\0';
            snprintf(ch->stats, sizeof ch->stats, "%s", line);
        } else {
            fprintf(stderr, "[%s] %s", ch->name, line);
        }
    }
    fclose(ch->err);
    close(ch->out);
    return ch->status;
}

static inline unsigned long long stat_field(const char *stats, const char *key)
{
    char pat[64];
    const char *p;
    snprintf(pat, sizeof pat, " %s=", key);
    p = strstr(stats, pat);
    return p ? strtoull(p + strlen(pat), NULL, 10) : 0ULL;
}

/* The commands other than the servers' (main, in oltp.c, picks one). */
int demo_main(int argc, char **argv);
int soak_main(int argc, char **argv);

#endif
