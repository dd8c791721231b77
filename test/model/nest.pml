/* nest.pml - lf_bound.h's bounded nesting (hybrid mode, NESTING under HYBRID): T
 * lf_reactor_run threads share one reactor and one bound connection to a backend.
 * A thread turns the reactor one event per turn: a client request, a call-back of
 * the backend, or the connection's readability (replies). A client request's
 * handler makes one call (lf_bound_call) and joins: with d joins on the thread's
 * stack below it (lf_bound_depth), the join SERVES if d < L (it turns the reactor,
 * running handlers nested on its stack, until its reply is in) and is DEEP if
 * d >= L (it serves nothing: it waits in the bound's own pool, where one deep
 * waiter leads and reads the connection, delivering every reply, and the others
 * sleep until their reply is in or the lead is free). The reactor's dispatch of
 * the connection reads too (one reader at a time: the handler's lock; each read
 * here is one atomic step, delivering one reply). A call-back handler answers at
 * once (it calls nothing: call-back chains of length 1). The backend answers the
 * calls in any order, by itself, or (CB) only after its call-back for that call
 * was answered by one of our threads. A join returns only with its reply in and
 * every join above it on the stack returned (a stack per thread); a serving join's
 * turn also ends when its reply is delivered (lf_reactor_wake). Any ready event may
 * go to any thread that turns the reactor: every order is tried. The connection is
 * an event while a reply is unread (the header hands out every complete frame
 * before a reader lets go, and what is left on the socket brings a dispatch). The
 * client requests are all admitted (ready) at the start, which covers every arrival
 * order (nothing forces a thread to take one early), so N is the most requests in
 * service at once. Not modelled: deadlines, stop, cancellation, sends waiting for
 * room (a level too, in the header), the mutexes, the reactor pool's roles.
 *
 * Configurations (init picks one, spin explores each; T = 2, LMAX = 2):
 *   no call-backs (memcached): L = 0 with 2T requests, L = 1, 2 with T*(L+1)
 *     (enough for every thread to be deep at once);
 *   call-backs: L = 0, 1, 2 with T*(L+1) - FIXED requests.
 * Checked: every call returns and every thread ends back in lf_reactor_run (no
 * invalid end state: no dead-lock); every handler runs at depth <= L; a thread
 * holds at most L+1 joins; a join returns with its own reply in, from the top of
 * its thread's stack. That is: without call-backs no dead-lock at any limit, deep
 * waiters getting their replies with no other thread's help (at L = 0 nobody ever
 * serves); with call-backs, fewer than T*(L+1) requests in service at once never
 * dead-lock.
 *
 * FIXED=0: the configurations with call-backs admit T*(L+1) requests; spin must find
 * the dead-lock (each thread holds L+1 requests' joins, the top one deep, and every
 * call-back waits as an event that no thread will turn): the bound is exact, not
 * just sufficient. (By hand: -DCONFIG=k checks the k-th configuration alone;
 * -DT=3 -DLMAX=1 gives the same verdicts at 2, 3 and 5, 6 requests.)
 *
 *   lf_bound.h                                    here
 *   lf_reactor_run: lf_reactor_turn, depth 0        "idle": TURN
 *   a request's handler: lf_bound_call, join       TURN's request: push the call
 *   lf__bound_join_reactor: deep if depth >= max   "join": d - 1 >= L (d counts it)
 *   lf__bound_turn_until: collect, else a turn     "serve": DONE, else TURN
 *   lf__bound_wake_reactor: lf_reactor_wake        "serve"'s DONE guard
 *     (deep: lf__bound_wake_bare, lf_pool_notify)   "deep"/"lead"'s DONE guards
 *   lf__bound_join_bare: collect, lf_pool_lead     "deep": DONE, else take dleader
 *   lf__bound_lead: consume all, fill, poll        "lead": READ1, until DONE
 *   lf_pool_leave (the next deep waiter leads)     dleader = NONE
 *   lf__bound_on_event (under lf__bound_rx_lock)   TURN's READ1
 *   lf__bound_consume: finish, wake the waiter     st[x] = DONE
 *   the join returns, its handler returns          "ret": pop, finished++
 */
#ifndef FIXED
#define FIXED 1
#endif
#ifndef T
#define T 2          /* reactor threads (2 or 3) */
#endif
#ifndef LMAX
#define LMAX 2       /* the largest limit tried (at most 2) */
#endif
#ifndef CONFIG
#define CONFIG 0     /* 0: every configuration below; k: the k-th only */
#endif
#define MAXD (LMAX + 1)  /* joins on one stack at most */
#define MAXN 9       /* calls at most: T * (LMAX + 1) */
#if T < 2 || T > 3 || LMAX > 2 || T * (LMAX + 1) > MAXN
#error "nest.pml: T is 2 or 3, LMAX at most 2, T * (LMAX + 1) at most 9"
#endif
#define NONE 255

/* a call's state; call i is made by client request i's handler */
#define IDLE 0       /* not made yet */
#define SENT 1       /* the backend has the request */
#define CBQ 2        /* its call-back to us is a ready event of the reactor */
#define CBANS 3      /* one of our threads answered the call-back */
#define WIRE 4       /* the reply is on the connection, unread */
#define DONE 5       /* read and delivered to its context */

byte L;              /* lf_bound_set_nest_max */
bit CB;              /* every reply needs its call-back answered first */
byte N;              /* client requests admitted */
byte st[MAXN];       /* by call */
byte admitted;       /* requests taken by a handler: the next call's index */
byte finished;       /* requests whose handler returned */
byte dleader = NONE; /* the deep waiter that leads the bound's own pool */
byte stk[T * MAXD];  /* each thread's joins: the calls they wait for */

/* one reply read from the connection and delivered (lf__bound_consume) */
#define READ1(G) \
    :: G && st[0] == WIRE -> st[0] = DONE \
    :: G && st[1] == WIRE -> st[1] = DONE \
    :: G && st[2] == WIRE -> st[2] = DONE \
    :: G && st[3] == WIRE -> st[3] = DONE \
    :: G && st[4] == WIRE -> st[4] = DONE \
    :: G && st[5] == WIRE -> st[5] = DONE \
    :: G && st[6] == WIRE -> st[6] = DONE \
    :: G && st[7] == WIRE -> st[7] = DONE \
    :: G && st[8] == WIRE -> st[8] = DONE

/* a call-back handler: answer it */
#define ANSWER1 \
    :: st[0] == CBQ -> st[0] = CBANS \
    :: st[1] == CBQ -> st[1] = CBANS \
    :: st[2] == CBQ -> st[2] = CBANS \
    :: st[3] == CBQ -> st[3] = CBANS \
    :: st[4] == CBQ -> st[4] = CBANS \
    :: st[5] == CBQ -> st[5] = CBANS \
    :: st[6] == CBQ -> st[6] = CBANS \
    :: st[7] == CBQ -> st[7] = CBANS \
    :: st[8] == CBQ -> st[8] = CBANS

/* One turn of the reactor at depth d, inside an atomic if: take one ready event and
 * run its handler (at depth d). A request's handler calls: its join goes on the
 * stack and the thread carries on at "join"; the other handlers return at once. */
#define TURN \
    :: admitted < N -> \
        assert(d <= L); \
        st[admitted] = SENT; stk[me * MAXD + d] = admitted; admitted++; d++; \
        assert(d <= L + 1); \
        goto join \
    ANSWER1 \
    READ1(1)

proctype backend()
{
end:
    do
    :: atomic { st[0] == SENT -> if :: CB -> st[0] = CBQ :: else -> st[0] = WIRE fi }
    :: atomic { st[1] == SENT -> if :: CB -> st[1] = CBQ :: else -> st[1] = WIRE fi }
    :: atomic { st[2] == SENT -> if :: CB -> st[2] = CBQ :: else -> st[2] = WIRE fi }
    :: atomic { st[3] == SENT -> if :: CB -> st[3] = CBQ :: else -> st[3] = WIRE fi }
    :: atomic { st[4] == SENT -> if :: CB -> st[4] = CBQ :: else -> st[4] = WIRE fi }
    :: atomic { st[5] == SENT -> if :: CB -> st[5] = CBQ :: else -> st[5] = WIRE fi }
    :: atomic { st[6] == SENT -> if :: CB -> st[6] = CBQ :: else -> st[6] = WIRE fi }
    :: atomic { st[7] == SENT -> if :: CB -> st[7] = CBQ :: else -> st[7] = WIRE fi }
    :: atomic { st[8] == SENT -> if :: CB -> st[8] = CBQ :: else -> st[8] = WIRE fi }
    :: atomic { st[0] == CBANS -> st[0] = WIRE }
    :: atomic { st[1] == CBANS -> st[1] = WIRE }
    :: atomic { st[2] == CBANS -> st[2] = WIRE }
    :: atomic { st[3] == CBANS -> st[3] = WIRE }
    :: atomic { st[4] == CBANS -> st[4] = WIRE }
    :: atomic { st[5] == CBANS -> st[5] = WIRE }
    :: atomic { st[6] == CBANS -> st[6] = WIRE }
    :: atomic { st[7] == CBANS -> st[7] = WIRE }
    :: atomic { st[8] == CBANS -> st[8] = WIRE }
    od
}

proctype worker(byte me)
{
    byte d;          /* joins on this thread's stack (lf__bound_depth) */
    byte c;          /* the call the top join waits for */

    /* lf_reactor_run: a turn at depth 0 */
idle:
end_idle:
    atomic {
        if
        TURN
        fi
    };
    goto idle;                                     /* a call-back or a reply */

join:
    c = stk[me * MAXD + d - 1];
    if
    :: d - 1 < L -> goto serve
    :: else -> goto deep
    fi;

serve:  /* lf__bound_turn_until: collect, else one turn (or woken) */
    atomic {
        if
        :: st[c] == DONE -> goto ret
        TURN
        fi
    };
    goto serve;                                    /* that handler returned */

deep:   /* lf__bound_join_bare: collect, else lead the bound's pool, else sleep */
    if
    :: atomic { st[c] == DONE -> goto ret }
    :: atomic { st[c] != DONE && dleader == NONE -> dleader = me }; goto lead
    fi;

lead:   /* lf__bound_lead: read and deliver until our reply is in */
    if
    :: atomic { st[c] == DONE -> dleader = NONE }; goto ret   /* lf_pool_leave */
    :: atomic {
        if
        READ1(st[c] != DONE)
        fi
    };
        goto lead
    fi;

ret:    /* the join returns; the request's handler answers its client and returns */
    atomic {
        assert(st[c] == DONE && stk[me * MAXD + d - 1] == c);
        st[c] = IDLE;
        d--;
        finished++;
        if
        :: d == 0 -> goto idle
        :: else -> goto join                       /* the join below carries on */
        fi
    }
}

init
{
    atomic {
        if
        :: CONFIG == 0 || CONFIG == 1 -> L = 0; CB = 0; N = 2 * T
        :: CONFIG == 0 || CONFIG == 2 -> L = 1; CB = 0; N = T * (L + 1)
#if LMAX >= 2
        :: CONFIG == 0 || CONFIG == 3 -> L = 2; CB = 0; N = T * (L + 1)
#endif
        :: CONFIG == 0 || CONFIG == 4 -> L = 0; CB = 1; N = T * (L + 1) - FIXED
        :: CONFIG == 0 || CONFIG == 5 -> L = 1; CB = 1; N = T * (L + 1) - FIXED
#if LMAX >= 2
        :: CONFIG == 0 || CONFIG == 6 -> L = 2; CB = 1; N = T * (L + 1) - FIXED
#endif
        fi;
        run backend();
        run worker(0);
        run worker(1);
#if T > 2
        run worker(2)
#endif
    }
    (finished == N);
    assert(admitted == N && dleader == NONE)
}
