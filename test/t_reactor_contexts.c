/* The calling-context table of lf_reactor.h, cell by cell: every public call made
 * from another thread, from its handler's own handle_event, from another handler,
 * from a handle_close, after lf_reactor_stop, after lf_reactor_destroy and on a
 * zeroed lf_reactor, and lf_reactor_stop from a signal handler. Each call's result is
 * compared with what the table says, and the calls that must have an effect are
 * checked for it (a notification arrives, a registration gets its events, a removal
 * reaches handle_close). The fork column is t_reactor_lifecycle's.
 * The results are printed as the table. */
#include "../lf_reactor.h"
#include "lf_test.h"

#include <signal.h>
#include <sys/socket.h>

#define RUNNERS 3

enum { C_THREAD, C_OWN, C_OTHER, C_CLOSE, C_STOPPED, C_DESTROYED, C_ZEROED, NCTX };
static const char *ctx_name[NCTX] = {"thread", "own", "other", "close", "stopped", "destroyed",
                                     "zeroed"};
enum { K_REGISTER, K_DEACTIVATE, K_REACTIVATE, K_NOTIFY, K_TIMER_START, K_TIMER_CANCEL,
       K_STATS, K_HANDLE_EVENTS, K_TURN, K_DESTROY, K_REMOVE, K_MODIFY, NCALL };
static const char *call_name[NCALL] = {"register", "deactivate", "reactivate", "notify",
                                       "timer_start", "timer_cancel", "stats", "handle_events",
                                       "turn", "destroy", "remove", "modify"};
#define ANY_TURN (-1) /* a polling turn: 0 (it ran something) or ETIMEDOUT */

/* what the table in lf_reactor.h says */
static const int expect[NCTX][NCALL] = {
    /*             reg        deact   react   notify     tstart     tcancel stats handle    turn      destroy remove modify */
    [C_THREAD] = {0, 0, 0, 0, 0, 0, 0, ANY_TURN, ANY_TURN, EBUSY, 0, 0},
    [C_OWN] = {0, 0, 0, 0, 0, 0, 0, ANY_TURN, ANY_TURN, EBUSY, 0, 0},
    [C_OTHER] = {0, 0, 0, 0, 0, 0, 0, ANY_TURN, ANY_TURN, EBUSY, 0, 0},
    [C_CLOSE] = {0, 0, 0, 0, 0, 0, 0, ANY_TURN, ANY_TURN, EBUSY, 0, 0},
    [C_STOPPED] = {ECANCELED, 0, 0, ECANCELED, ECANCELED, ENOENT, 0, ECANCELED, ECANCELED, 0, 0, 0},
    [C_DESTROYED] = {EINVAL, EINVAL, EINVAL, EINVAL, EINVAL, EINVAL, EINVAL, EINVAL, EINVAL, EINVAL, EINVAL, EINVAL},
    [C_ZEROED] = {EINVAL, EINVAL, EINVAL, EINVAL, EINVAL, EINVAL, EINVAL, EINVAL, EINVAL, EINVAL, EINVAL, EINVAL},
};
static int got[NCTX][NCALL];

static lf_reactor r;
static _Thread_local int on_runner;

typedef struct target {
    lf_handler h;
    lf_timer t;
    int peer;
    LFT_ATOMIC(int) notes, reads, closes;
} target;

static int target_event(lf_handler *h, int fd, uint32_t ev)
{
    target *t = (target *)h;
    char buf[64];
    while (read(fd, buf, sizeof buf) > 0) {
    }
    if (ev & LF_EV_NOTIFY)
        lft_add(&t->notes, 1);
    if (ev & LF_EV_READ)
        lft_add(&t->reads, 1);
    lft_progress();
    return LF_KEEP;
}

static void target_close(lf_handler *h)
{
    lft_add(&((target *)h)->closes, 1);
}

static void target_open(target *t, lf_reactor *rr)
{
    int sv[2];
    memset((void *)t, 0, sizeof *t);
    lf_handler_init(&t->h, target_event, target_close);
    lf_timer_init(&t->t);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    CHECK(fcntl(sv[0], F_SETFL, O_NONBLOCK) == 0);
    t->peer = sv[1];
    if (rr)
        CHECK_EQ(lf_reactor_register(rr, &t->h, sv[0], LF_EV_READ), 0);
    else
        t->h.fd = sv[0];
}

/* Every call of the table on reactor rr, about target tg (registered in rr, or, in
 * the own context, the handler running this); fresh is an unregistered handler with
 * an fd of its own, for register; victim (registered) is removed, except in the own
 * context, where the handler removes itself. own: reactivate ends our hold (return
 * LF_RESUMED). */
static void probe(int ctx, lf_reactor *rr, target *tg, target *fresh, target *victim)
{
    struct lf_reactor_stats st;
    struct timespec past;
    lf_follower f;
    int rc;

    got[ctx][K_REGISTER] = lf_reactor_register(rr, &fresh->h, fresh->h.fd, LF_EV_READ);
    got[ctx][K_DEACTIVATE] = lf_reactor_deactivate(rr, &tg->h);
    got[ctx][K_NOTIFY] = lf_reactor_notify(rr, &tg->h, LF_EV_NOTIFY);
    got[ctx][K_REACTIVATE] = lf_reactor_reactivate(rr, &tg->h);
    got[ctx][K_TIMER_START] = lf_reactor_timer_start(rr, &tg->t, &tg->h, 3600000000000LL, 0);
    got[ctx][K_TIMER_CANCEL] = lf_reactor_timer_cancel(rr, &tg->t);
    got[ctx][K_MODIFY] = lf_reactor_modify(rr, &tg->h, LF_EV_READ);
    got[ctx][K_STATS] = lf_reactor_stats(rr, &st);
    lf_deadline_in(&past, 0);
    rc = lf_reactor_handle_events(rr, &past);
    got[ctx][K_HANDLE_EVENTS] = rc == 0 || rc == ETIMEDOUT ? ANY_TURN : rc;
    CHECK_EQ(lf_follower_init(&f, 0), 0);
    rc = lf_reactor_turn(rr, &f, &past);
    got[ctx][K_TURN] = rc == 0 || rc == ETIMEDOUT ? ANY_TURN : rc;
    lf_follower_destroy(&f);
    if (ctx != C_STOPPED) /* after a stop, destroy ends the reactor: see stopped() */
        got[ctx][K_DESTROY] = lf_reactor_destroy(rr);
    got[ctx][K_REMOVE] = lf_reactor_remove(rr, ctx == C_OWN ? &tg->h : &victim->h);
}

/* ---- the handler contexts: a trigger handler runs the probe in its handle_event
 * (on itself: own; on another: other), or in its handle_close (close) */
typedef struct trigger {
    target t; /* first */
    int ctx;
    target *about, *fresh, *victim;
    LFT_ATOMIC(int) started, done, on_runner;
} trigger;

static int trigger_event(lf_handler *h, int fd, uint32_t ev)
{
    trigger *g = (trigger *)h;
    char buf[8];
    (void)ev;
    while (read(fd, buf, sizeof buf) > 0) {
    }
    /* once: after the own probe's reactivate, its notification may bring another
     * thread in here at once */
    if (g->ctx == C_CLOSE || lft_add(&g->started, 1) != 0)
        return LF_KEEP;
    probe(g->ctx, &r, g->ctx == C_OWN ? &g->t : g->about, g->fresh, g->victim);
    lft_store(&g->on_runner, on_runner);
    lft_store(&g->done, 1);
    /* own: our reactivate ended the hold, and our remove removed us */
    return g->ctx == C_OWN ? LF_RESUMED : LF_KEEP;
}

static void trigger_close(lf_handler *h)
{
    trigger *g = (trigger *)h;
    lft_add(&g->t.closes, 1);
    if (g->ctx == C_CLOSE && !lft_load(&g->done)) {
        probe(C_CLOSE, &r, g->about, g->fresh, g->victim);
        lft_store(&g->on_runner, on_runner);
        lft_store(&g->done, 1);
    }
}

static void *runner(void *arg)
{
    (void)arg;
    on_runner = 1;
    CHECK_EQ(lf_reactor_run(&r, NULL), ECANCELED);
    return NULL;
}

/* the effects the probe's calls must have had on tg, fresh and the removed one */
static void effects(int ctx, target *tg, target *fresh, target *removed)
{
    if (ctx != C_OWN) { /* (own: it removed itself right after) */
        AWAIT(lft_load(&tg->notes) == 1, "the notification to arrive");
        CHECK_EQ(lf_reactor_remove(&r, &tg->h), 0);
        AWAIT(lft_load(&tg->closes) == 1, "the target's close");
    }
    AWAIT(lft_load(&removed->closes) == 1, "the removed one's handle_close");
    CHECK(write(fresh->peer, "x", 1) == 1);
    AWAIT(lft_load(&fresh->reads) >= 1, "the new registration's event");
    CHECK_EQ(lf_reactor_remove(&r, &fresh->h), 0);
    AWAIT(lft_load(&fresh->closes) == 1, "the new registration's close");
    close(tg->peer);
    close(fresh->peer);
    if (removed != tg)
        close(removed->peer);
}

static void in_handlers(void)
{
    pthread_t th[RUNNERS];
    struct lf_reactor_stats st;
    CHECK_EQ(lf_reactor_init(&r), 0);
    for (int i = 0; i < RUNNERS; i++)
        CHECK(pthread_create(&th[i], NULL, runner, NULL) == 0);
    AWAIT((lf_reactor_stats(&r, &st), st.pool.joined == RUNNERS), "the runners to join");

    /* another thread */
    {
        static target tg, fresh, victim;
        target_open(&tg, &r);
        target_open(&fresh, NULL);
        target_open(&victim, &r);
        probe(C_THREAD, &r, &tg, &fresh, &victim);
        effects(C_THREAD, &tg, &fresh, &victim);
    }
    for (int ctx = C_OWN; ctx <= C_CLOSE; ctx++) {
        /* records of their own: a record is reused only after its close */
        static trigger gs[NCTX];
        static target tgs[NCTX], freshs[NCTX], victims[NCTX];
        trigger *gp = &gs[ctx];
        target *tp = &tgs[ctx], *fp = &freshs[ctx], *vp = &victims[ctx];
        memset((void *)gp, 0, sizeof *gp);
        target_open(&gp->t, &r);
        gp->t.h.handle_event = trigger_event;
        gp->t.h.handle_close = trigger_close;
        gp->ctx = ctx;
        target_open(tp, &r);
        target_open(fp, NULL);
        target_open(vp, &r);
        gp->about = tp;
        gp->fresh = fp;
        gp->victim = vp;
        if (ctx == C_CLOSE)
            CHECK_EQ(lf_reactor_remove(&r, &gp->t.h), 0);
        else
            CHECK(write(gp->t.peer, "go", 2) == 2);
        AWAIT(lft_load(&gp->done), "the probe in the handler");
        CHECK_EQ(lft_load(&gp->on_runner), 1);
        if (ctx == C_OWN) {
            effects(ctx, &gp->t, fp, &gp->t);
            CHECK_EQ(lf_reactor_remove(&r, &tp->h), 0); /* unused here */
            CHECK_EQ(lf_reactor_remove(&r, &vp->h), 0);
            close(tp->peer);
            close(vp->peer);
        } else {
            effects(ctx, tp, fp, vp);
            if (ctx == C_OTHER)
                CHECK_EQ(lf_reactor_remove(&r, &gp->t.h), 0);
            close(gp->t.peer);
        }
    }
    CHECK_EQ(lf_reactor_stop(&r), 0);
    for (int i = 0; i < RUNNERS; i++)
        CHECK(pthread_join(th[i], NULL) == 0);
    CHECK_EQ(lf_reactor_destroy(&r), 0);
}

/* ---- after stop, after destroy, zeroed */
static void stopped_destroyed_zeroed(void)
{
    target tg, fresh;
    lf_reactor z;
    int rc;

    CHECK_EQ(lf_reactor_init(&r), 0);
    target_open(&tg, &r);
    target_open(&fresh, NULL);
    CHECK_EQ(lf_reactor_stop(&r), 0);
    probe(C_STOPPED, &r, &tg, &fresh, &tg);
    CHECK_EQ(lf_reactor_run(&r, NULL), ECANCELED);
    CHECK_EQ(lf_reactor_stop(&r), 0); /* again: harmless */
    got[C_STOPPED][K_DESTROY] = lf_reactor_destroy(&r);
    CHECK_EQ(lft_load(&tg.closes), 1); /* the removal's close ran in destroy */

    probe(C_DESTROYED, &r, &tg, &fresh, &tg);
    CHECK_EQ(lf_reactor_run(&r, NULL), EINVAL);
    CHECK_EQ(lf_reactor_stop(&r), EINVAL);
    CHECK(fcntl(fresh.h.fd, F_GETFD) != -1); /* refused: still ours */

    memset((void *)&z, 0, sizeof z);
    probe(C_ZEROED, &z, &tg, &fresh, &tg);
    CHECK_EQ(lf_reactor_run(&z, NULL), EINVAL);
    CHECK_EQ(lf_reactor_stop(&z), EINVAL);
    /* and a destroyed reactor can be made again */
    CHECK_EQ(lf_reactor_init(&r), 0);
    rc = lf_reactor_register(&r, &fresh.h, fresh.h.fd, LF_EV_READ);
    CHECK_EQ(rc, 0);
    CHECK_EQ(lf_reactor_destroy(&r), 0); /* closes fresh's fd */
    close(tg.peer);
    close(fresh.peer);
}

/* ---- lf_reactor_stop from a signal handler */
static void on_signal(int sig)
{
    (void)sig;
    (void)lf_reactor_stop(&r);
}

static void from_signal(void)
{
    pthread_t th[RUNNERS];
    struct sigaction sa;
    target tg;

    CHECK_EQ(lf_reactor_init(&r), 0);
    target_open(&tg, &r);
    for (int i = 0; i < RUNNERS; i++)
        CHECK(pthread_create(&th[i], NULL, runner, NULL) == 0);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
    CHECK(write(tg.peer, "x", 1) == 1);
    AWAIT(lft_load(&tg.reads) == 1, "an event before the signal");
    CHECK(raise(SIGUSR1) == 0); /* on this thread, which is not a runner */
    for (int i = 0; i < RUNNERS; i++)
        CHECK(pthread_join(th[i], NULL) == 0);
    CHECK_EQ(lf_reactor_destroy(&r), 0);
    close(tg.peer);
    signal(SIGUSR1, SIG_DFL);
}

static const char *show(int v)
{
    static char buf[8][16];
    static int k;
    char *b = buf[k++ % 8];
    switch (v) {
    case 0:
    case ANY_TURN: return "yes";
    case EBUSY: return "EBUSY";
    case EINVAL: return "EINVAL";
    case ENOENT: return "ENOENT";
    case ECANCELED: return "ECANCEL";
    default: snprintf(b, 16, "%d", v); return b;
    }
}

int main(void)
{
    int bad = 0;
    lft_start("t_reactor_contexts", 30);
    signal(SIGPIPE, SIG_IGN);
    in_handlers();
    stopped_destroyed_zeroed();
    from_signal();
    printf("t_reactor_contexts %s/%s (stop from a signal handler: every thread returned)\n",
           lf_reactor_backend_name(), lf_promote_name());
    printf("  %-14s", "");
    for (int c = 0; c < NCTX; c++)
        printf(" %-9s", ctx_name[c]);
    printf("\n");
    for (int k = 0; k < NCALL; k++) {
        printf("  %-14s", call_name[k]);
        for (int c = 0; c < NCTX; c++) {
            int ok = got[c][k] == expect[c][k];
            bad += !ok;
            printf(" %-9s", ok ? show(got[c][k]) : "MISMATCH");
            if (!ok)
                fprintf(stderr, "%s from %s: %d, the table says %d\n", call_name[k], ctx_name[c],
                        got[c][k], expect[c][k]);
        }
        printf("\n");
    }
    CHECK_EQ(bad, 0);
    return 0;
}
