/* bound.pml - lf_bound.h's hand-off (bare mode): three client threads share one
 * connection; each expects its id, sends, and joins. The leader reads frames and
 * hands each reply to its context (Specific Notification through the pool), or
 * keeps its own and leaves; the server answers in any order; client 0 has a
 * deadline, so it may time out as a follower or as the leader, and its reply may
 * then arrive late (a stray). The pool is lf.h's, as in promote.pml.
 *
 * Checked: every client returns, with its own reply (0) or ETIMEDOUT (client 0
 * only), never another's; with the pool lock free a vacant slot leaves nobody
 * parked (leadership is never lost, also when the leader times out); no deadlock,
 * so no waiter sleeps while its reply sits unread.
 *
 * FIXED=0: a leader whose deadline passes vacates the slot without promoting a
 * follower (no lf_pool_leave hand-off); spin must catch it.
 *
 *   lf_bound.h                                   here
 *   lf_bound_expect: in the map, WAITING          state[i] = WAITING
 *   lf_bound_join: collect, lf_pool_lead          join loop, "lead"
 *   lf__bound_lead: consume / fill / poll         "leader loop"
 *   lf__bound_consume: find id, finish, wake      deliver()
 *   lf__bound_wake: lf_pool_notify, EBUSY ->      wake(): parked -> NOTIFY,
 *     lf__yield (kick the leader's poll)            else notified[] + kick
 *   lf_pool_lead: notified -> EINTR               "notified"
 *   lf__bound_withdraw_locked (ETIMEDOUT)         withdraw
 */
#ifndef FIXED
#define FIXED 1
#endif
#define N 3
#define NONE 255
#define IDLE 0
#define WAITING 1
#define DONE 2
#define W_WAIT 0
#define W_LEAD 1
#define W_NOTIFY 2
#define OK 0
#define TIMEDOUT 1

/* the bound (b->lf__lock) and the pool (p->lf__lock); order: bound, then pool */
bit lockb, lockp;
byte state[N], result[N];
byte leader = NONE;
bit parked[N], notified[N];
byte nparked;
byte word[N];
bit kick;                 /* the wake descriptor is readable */
chan conn = [N] of { byte };
bit requested[N];         /* sent, not answered yet */
byte returned;
byte got_own[N];          /* replies for i delivered to i */

inline lockB() { atomic { lockb == 0 -> lockb = 1 } }
inline lockP() { atomic { lockp == 0 -> lockp = 1 } }

/* lf__handoff under the pool lock */
inline handoff()
{
    if
    :: nparked == 0 -> leader = NONE
    :: else ->
        if
        :: parked[0] -> nx = 0
        :: parked[1] -> nx = 1
        :: parked[2] -> nx = 2
        fi;
        parked[nx] = 0; nparked--; leader = nx; word[nx] = W_LEAD
    fi
}

/* lf__bound_wake(c = t), bound lock held */
inline wake(t)
{
    lockP();
    if
    :: parked[t] -> parked[t] = 0; nparked--; word[t] = W_NOTIFY
    :: else -> notified[t] = 1; kick = 1     /* EBUSY: kept, and the leader's poll kicked */
    fi;
    lockp = 0
}

proctype server()
{
    byte id;
end:
    do
    :: atomic { requested[0] -> requested[0] = 0; id = 0 }; conn!id
    :: atomic { requested[1] -> requested[1] = 0; id = 1 }; conn!id
    :: atomic { requested[2] -> requested[2] = 0; id = 2 }; conn!id
    od
}

proctype client(byte me; bit has_deadline)
{
    byte rc, id, nx;
    bit done;

    lockB(); state[me] = WAITING; lockb = 0;         /* lf_bound_expect */
    requested[me] = 1;                               /* lf_bound_send */

join:
    lockB();
    if
    :: state[me] == DONE -> rc = result[me]; state[me] = IDLE; lockb = 0; goto out
    :: else -> lockb = 0
    fi;

    /* lf_pool_lead */
    lockP();
    if
    :: notified[me] -> notified[me] = 0; lockp = 0; goto join       /* EINTR */
    :: !notified[me] && leader == NONE -> leader = me; lockp = 0
    :: !notified[me] && leader != NONE ->
        parked[me] = 1; nparked++; word[me] = W_WAIT; lockp = 0;
        if
        :: word[me] != W_WAIT -> skip
        :: has_deadline ->                                          /* times out */
            lockP();
            if
            :: word[me] == W_WAIT -> parked[me] = 0; nparked--; lockp = 0; goto timedout
            :: else -> lockp = 0
            fi
        fi;
        if
        :: word[me] == W_LEAD -> skip
        :: else -> goto join                                        /* notified */
        fi
    fi;

    /* leader loop (lf__bound_lead) */
    do
    :: nempty(conn) ->
        conn?id;                                                    /* consume */
        lockB();
        if
        :: state[id] == WAITING ->
            state[id] = DONE; result[id] = OK; got_own[id]++;
            if
            :: id != me -> wake(id)
            :: else -> skip
            fi
        :: else -> skip                                             /* stray */
        fi;
        done = (state[me] == DONE);
        lockb = 0;
        if
        :: done -> break                                            /* own reply */
        :: else -> skip
        fi
    :: empty(conn) ->
        lockB(); done = (state[me] == DONE); lockb = 0;
        if
        :: done -> break
        :: else -> skip
        fi;
        /* poll: the connection, a kick, or the deadline */
        if
        :: atomic { kick -> kick = 0 }
        :: nempty(conn) -> skip
        :: has_deadline -> goto lead_timedout
        fi
    od;
    lockP(); handoff(); lockp = 0;                                  /* lf_pool_leave */
    goto join;

lead_timedout:
#if FIXED
    lockP(); handoff(); lockp = 0;
#else
    lockP(); leader = NONE; lockp = 0;                              /* no hand-off */
#endif
timedout:
    lockB();                                                        /* withdraw */
    if
    :: state[me] == WAITING -> state[me] = DONE; result[me] = TIMEDOUT
    :: else -> skip                                                 /* the reply won */
    fi;
    lockb = 0;
    goto join;

out:
    assert(rc == OK || has_deadline);
    assert(rc != OK || got_own[me] == 1);
    returned++
}

active proctype monitor()
{
end:
    do
    :: atomic { !lockp && leader == NONE && nparked > 0 -> assert(0) }
    od
}

init
{
    atomic {
        run server();
        run client(0, 1);
        run client(1, 0);
        run client(2, 0)
    }
    (returned == N);
    assert(nparked == 0)
}
