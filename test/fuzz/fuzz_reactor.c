/* fuzz_reactor.c - libFuzzer harness: any sequence of reactor operations, driven
 * from one thread, against a shadow model that says what may happen.
 *
 * Four slots each hold at most one handler on a socketpair. Every two input bytes
 * are one operation and its argument: register (a new handler, or again: EEXIST),
 * remove (or of a removed one: ENOENT), write a byte to the peer, hang the peer
 * up, deactivate, reactivate, arm or cancel a one-shot timer, notify, and a turn
 * (lf_reactor_handle_events, not waiting: at most one dispatch, whose handler may
 * return LF_REMOVE), and a wait for the deferred closes (rcu_barrier). Removed
 * handlers' fds are closed by the reactor after the grace period, so new
 * socketpairs reuse their numbers while events harvested for the old handler may
 * still wait in the leader's batch.
 *
 * Checked at every dispatch: the handler is registered, not removed, not
 * deactivated; the fd is its own; READ only with data or a hang-up to read (with one
 * thread, readiness is never reported twice); TIMEOUT only with a timer armed,
 * NOTIFY only after a notify. After every operation: the return code the model expects, and no
 * handle_close for a live handler, at most one for a removed one. At the end,
 * lf_reactor_destroy: exactly one handle_close per handler ever registered.
 *
 * Build and run: make fuzz (longer), or a short run inside make test. */
#include "../../lf_reactor.h"

#include <fcntl.h>
#include "fuzz_require.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>

#define SLOTS 4
#define MAX_HANDLERS 32

struct inst {
    lf_handler h; /* first: the reactor hands us &h */
    lf_timer t;
    int fd, peer;
    int removed;   /* lf_reactor_remove returned 0, or LF_REMOVE was returned */
    int suspended; /* deactivated */
    int armed;     /* the one-shot timer may still fire */
    int notified;  /* a notify not yet delivered */
    int slot;
    int remove_now; /* the next dispatch returns LF_REMOVE */
    _Atomic int closes;
};

static struct inst *slot_of[SLOTS];
static struct inst *all[MAX_HANDLERS];
static int nall;

static int on_event(lf_handler *h, int fd, uint32_t events)
{
    struct inst *in = (struct inst *)(void *)h;
    char buf[64];

    REQUIRE(!in->removed);
    REQUIRE(!in->suspended);
    REQUIRE(atomic_load(&in->closes) == 0);
    REQUIRE(fd == in->fd);
    REQUIRE(events != 0);
    if (events & LF_EV_TIMEOUT) {
        REQUIRE(in->armed);
        in->armed = 0;
    }
    if (events & LF_EV_NOTIFY) {
        REQUIRE(in->notified);
        in->notified = 0;
    }
    if (events & LF_EV_READ) {
        /* one thread: no readiness reported twice, so a READ finds data or the
         * hang-up (an event meant for an earlier handler on this fd would not) */
        ssize_t n, got = 0;
        while ((n = read(fd, buf, sizeof buf)) > 0)
            got += n;
        REQUIRE(got > 0 || n == 0);
    }
    if (in->remove_now) {
        in->removed = 1;
        in->armed = 0;
        slot_of[in->slot] = NULL;
        return LF_REMOVE;
    }
    return LF_KEEP;
}

static void on_close(lf_handler *h)
{
    struct inst *in = (struct inst *)(void *)h;
    atomic_fetch_add(&in->closes, 1);
}

static void checks(void)
{
    for (int i = 0; i < nall; i++) {
        int c = atomic_load(&all[i]->closes);
        REQUIRE(all[i]->removed ? c <= 1 : c == 0);
    }
}

static void new_handler(lf_reactor *r, int k)
{
    int sv[2];
    struct inst *in;
    if (nall == MAX_HANDLERS)
        return;
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    REQUIRE(fcntl(sv[0], F_SETFL, O_NONBLOCK) == 0);
    REQUIRE(fcntl(sv[1], F_SETFL, O_NONBLOCK) == 0);
    REQUIRE((in = (struct inst *)calloc(1, sizeof *in)) != NULL);
    lf_handler_init(&in->h, on_event, on_close);
    lf_timer_init(&in->t);
    in->fd = sv[0];
    in->peer = sv[1];
    in->slot = k;
    REQUIRE(lf_reactor_register(r, &in->h, in->fd, LF_EV_READ) == 0);
    all[nall++] = in;
    slot_of[k] = in;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    lf_reactor r;
    struct lf_reactor_stats st;

    if (size > 512)
        return -1;
    nall = 0;
    memset(slot_of, 0, sizeof slot_of);
    REQUIRE(lf_reactor_init(&r) == 0);
    for (size_t i = 0; i + 1 < size; i += 2) {
        uint8_t op = data[i] % 11, arg = data[i + 1];
        int k = arg % SLOTS;
        struct inst *in = slot_of[k];
        lf_handler spare;
        struct timespec now;

        switch (op) {
        case 0: /* register */
            if (in == NULL) {
                new_handler(&r, k);
            } else {
                REQUIRE(lf_reactor_register(&r, &in->h, in->fd, LF_EV_READ) == EEXIST);
                lf_handler_init(&spare, on_event, NULL);
                REQUIRE(lf_reactor_register(&r, &spare, in->fd, LF_EV_READ) == EEXIST);
            }
            break;
        case 1: /* remove */
            if (in != NULL) {
                REQUIRE(lf_reactor_remove(&r, &in->h) == 0);
                in->removed = 1;
                in->armed = 0;
                slot_of[k] = NULL;
            } else if (nall > 0) {
                struct inst *old = all[arg % nall];
                if (old->removed)
                    REQUIRE(lf_reactor_remove(&r, &old->h) == ENOENT);
            }
            break;
        case 2: /* a byte from the peer */
            if (in != NULL && in->peer >= 0)
                (void)send(in->peer, "x", 1, MSG_NOSIGNAL);
            break;
        case 3: /* the peer hangs up */
            if (in != NULL && in->peer >= 0) {
                close(in->peer);
                in->peer = -1;
            }
            break;
        case 4:
            if (in != NULL) {
                REQUIRE(lf_reactor_deactivate(&r, &in->h) == 0);
                in->suspended = 1;
            }
            break;
        case 5:
            if (in != NULL) {
                REQUIRE(lf_reactor_reactivate(&r, &in->h) == 0);
                in->suspended = 0;
            }
            break;
        case 6: /* a one-shot timer: due at once, or cancel it */
            if (in != NULL && arg & 4) {
                REQUIRE(lf_reactor_timer_start(&r, &in->t, &in->h, 0, 0) == 0);
                in->armed = 1;
            } else if (in != NULL) {
                int rc = lf_reactor_timer_cancel(&r, &in->t);
                /* not armed: it never was, it fired, or its event is pending */
                REQUIRE(rc == 0 || rc == ENOENT);
                if (rc == 0)
                    in->armed = 0;
            }
            break;
        case 7:
            if (in != NULL) {
                REQUIRE(lf_reactor_notify(&r, &in->h, LF_EV_NOTIFY) == 0);
                in->notified = 1;
            }
            break;
        case 8: /* the next dispatch of this handler returns LF_REMOVE */
            if (in != NULL)
                in->remove_now = 1;
            break;
        case 9: /* wait for the deferred closes: their fd numbers are free again */
            LF__RCU(barrier)();
            break;
        default: { /* a turn that does not wait */
            int rc;
            REQUIRE(lf_deadline_in(&now, 0) == 0);
            rc = lf_reactor_handle_events(&r, &now);
            REQUIRE(rc == 0 || rc == ETIMEDOUT);
            break;
        }
        }
        checks();
    }
    REQUIRE(lf_reactor_stats(&r, &st) == 0);
    REQUIRE(lf_reactor_destroy(&r) == 0); /* closes what is left, after the barrier */
    for (int i = 0; i < nall; i++) {
        REQUIRE(atomic_load(&all[i]->closes) == 1);
        if (all[i]->peer >= 0)
            close(all[i]->peer);
        free(all[i]);
    }
    return 0;
}
