/* defer.pml - lf.h's deferred promotions (DEFERRAL in its doc block, LF_DEFER_NS) for
 * the follower-set policies with the futex synchronizer, as lf_reactor_run's pool
 * runs them (no deadlines; LF_TAKEOVER=0, or 1 with -DTAKEOVER=1: defer_takeover.pml).
 * A leader that holds only young work promotes a follower parked with a tick by
 * posting WAKE_DEFERRED without waking it; whoever asks to lead first takes that
 * promotion (a takeover under the pool lock: WAKE_DEFERRED -> WAITING, the follower
 * back in the set); the follower takes it itself at its tick (WAKE_DEFERRED ->
 * LEADING under the lock). With LF_TAKEOVER=1 a thread back from processing also
 * takes a woken promotion (WAKE_LEAD) whose follower has not run yet. A thread that
 * may not take it (a notification pending) wakes it instead, and so do
 * lf_pool_notify, lf_pool_shutdown and a promoter that leaves.
 *
 * Three threads in lf_pool_join, each handling up to EVENTS events (a leader with
 * none left waits until the shutdown interrupts it); the source says "young" or not
 * at each promotion (any answer); a follower parks with a tick or without one (any
 * choice once the pool was busy; the real rule gives the tick to one follower, so
 * this covers it); a tick may fire at any moment, and one that finds a promotion
 * deferred to it may find it too young and sleep on, once per deferral (the age is
 * time, so any choice; when that sleep ends the deferral is LF_DEFER_NS old and the
 * next look takes it); a thread back from a handler leads again or leaves
 * (lf_pool_leave); one handler in the run may block until a thread leads after it or
 * every other thread has returned (a handler that waits for a reply only the next
 * leader reads: the case the tick exists for); one lf_pool_notify (of thread 0: the
 * threads are alike, so one covers any); lf_pool_shutdown at any moment but while
 * that handler blocks (a shutdown would release it: the tick must).
 *
 * Checked in every state: never two threads acting as leader, and the one acting
 * holds the slot; with the pool lock free, a vacant slot has no parked follower (no
 * lost wake-up), a deferred promotion went to a follower parked with a tick (its tick
 * bounds the delay), and a word reads WAKE_DEFERRED only while its promotion is the
 * deferred one (an undeferred promotion is a woken one), and none is deferred once the
 * pool is shut down. Spin's end-state check: no thread is left asleep with nobody to
 * wake it, and the blocking handler is never stuck for good (the deferred follower's
 * tick leads in its place, once the deferral is old). At the end every thread has returned and nobody is left parked.
 *
 * FIXED=0: the promotion defers to any follower, also one parked without a tick, and
 * the invariant that says so is off: with the blocking handler, that follower sleeps
 * for ever and the handles are never watched again; spin's end-state check must find
 * it.
 *
 *   lf.h                                          here
 *   lf__lead: vacant slot -> leader                "take the slot"
 *   lf__lead: p->lf__deferred -> lf__takeover       "take the deferred promotion"
 *   lf__lead: else lf__undefer                      undefer()
 *   lf__tick: the front follower parks with a tick "park", timed[me]
 *   lf__handoff_as(LF__MAY_DEFER), next->lf__timed  "defer": word DLEAD, no wake
 *   lf__park: futex_wait(word, WAITING)             "sleep" / "claim"
 *   lf__follow: ETIMEDOUT at a tick: WAITING ->     "tick"
 *     park again; WAKE_DEFERRED -> LEADING, tick_lead
 *   lf__follow: WAKE_DEFERRED less than              "young", ticked
 *     LF_DEFER_NS ago: lf__defer_sleep, look again
 *     (the age is time: any choice here)
 *   lf_pool_leave while processing: lf__undefer     "leave"
 */
#ifndef FIXED
#define FIXED 1
#endif
#ifndef TAKEOVER
#define TAKEOVER 0
#endif
#define N 3
#define NONE 255
#define WAITING 0
#define LEAD 1
#define CANCEL 2
#define LEADING 3
#define NOTIFY 4
#define DLEAD 5 /* WAKE_DEFERRED: a promotion whose wake-up was deferred */
#ifndef EVENTS
#define EVENTS 1
#endif

bit locked;            /* p->lf__lock */
byte leader = NONE;    /* p->lf__leader */
bit parked[N];         /* in the follower set */
byte nfollowers;       /* p->lf__followers */
byte word[N];          /* each follower's futex word */
bit asleep[N];         /* in futex_wait on its word */
bit timed[N];          /* f->lf__timed: parked with a tick */
bit deferred;          /* p->lf__deferred */
bit busy;              /* p->lf__busy_ns set: a promotion with a source that defers */
bit shutdown_flag;     /* p->lf__shutdown */
byte acting;           /* threads past their claim, acting as leader */
bit led;               /* a thread began to act as leader since the handler blocked */
bit notified[N];       /* lf__notified */
bit blocker_used;      /* the one handler that blocks has run */
bit blocking;          /* ... and is blocked now */
bit aged[N];           /* ghost: slept once on its deferred promotion; when it wakes
                          the deferral is LF_DEFER_NS old, so its next look takes it */
byte returned;

inline lock() { atomic { locked == 0 -> locked = 1 } }
inline unlock() { locked = 0 }

/* lf__post_unlocked: FUTEX_WAKE one waiter on t's word (nobody asleep: nothing) */
inline wake(t) { asleep[t] = 0 }

/* lf__undefer, lock held */
inline undefer()
{
    if
    :: deferred ->
        deferred = 0;
        if
        :: leader != NONE && word[leader] == DLEAD -> word[leader] = LEAD; wake(leader)
        :: else -> skip
        fi
    :: else -> skip
    fi
}

/* lf__handoff_as, lock held: sets next (NONE: nobody to wake after unlock) */
inline handoff(how)
{
    deferred = 0;
    if
    :: how != 0 -> busy = 1
    :: else -> skip
    fi;
    if
    :: nfollowers == 0 -> leader = NONE; next = NONE
    :: else ->
        if
        :: parked[0] -> next = 0
        :: parked[1] -> next = 1
        :: parked[2] -> next = 2
        fi;
        parked[next] = 0;
        nfollowers--;
        leader = next;
        if
#if FIXED
        :: how == 2 && timed[next] ->                             /* defer */
#else
        :: how == 2 ->                                            /* defer to anyone */
#endif
            word[next] = DLEAD; deferred = 1; next = NONE
        :: else -> word[next] = LEAD
        fi
    fi
}

proctype thread(byte me)
{
    byte next = NONE, g, events, how;
    bit back, took;

lead:
    atomic {                                                      /* lf__lead, locked */
    lock();
    if
    :: notified[me] ->                                            /* notified: EINTR */
        notified[me] = 0;
        if
        :: back -> undefer()
        :: else -> skip
        fi;
        unlock(); goto done
    :: else -> skip
    fi;
    if
    :: shutdown_flag -> unlock(); goto done
    :: else -> skip
    fi;
    took = 0;
    if
    :: leader == NONE -> back = 0; leader = me; unlock(); goto leading /* the slot */
    :: leader != NONE && (deferred || TAKEOVER && back) && !notified[leader] ->
        g = leader;                                               /* take the promotion */
        atomic {                                                  /* one compare-and-swap */
            if
            :: word[g] == LEAD || word[g] == DLEAD -> word[g] = WAITING; took = 1
            :: else -> skip
            fi
        }
    :: else -> skip
    fi;
    if
    :: took ->
        parked[g] = 1;
        nfollowers++;
        deferred = 0;
        leader = me;
        g = 0; took = 0; back = 0;
        unlock();
        goto leading
    :: else -> undefer()                                          /* not ours: wake it */
    fi;
    back = 0;
    word[me] = WAITING;                                           /* lf__follow */
    parked[me] = 1;
    nfollowers++;
park:                                                             /* lf__tick, lock held */
    aged[me] = 0;
    if
    :: busy -> timed[me] = 1
    :: true -> timed[me] = 0
    fi;
    unlock()
    };
sleep:                                                            /* lf__park */
    atomic {
        if
        :: word[me] == LEAD || word[me] == DLEAD ->               /* claim (a CAS) */
            word[me] = LEADING; goto leading
        :: word[me] == CANCEL || word[me] == NOTIFY -> goto done
        :: word[me] == WAITING -> asleep[me] = 1                  /* futex_wait */
        fi
    };
    if
    :: !asleep[me] -> goto sleep                                  /* woken: look again */
    :: atomic { asleep[me] && timed[me] -> asleep[me] = 0;        /* its tick */
        lock();
ticked:                                                           /* lock held */
        if
        :: word[me] == WAITING -> goto park                       /* nobody chose it */
        :: word[me] == DLEAD && deferred && leader == me && !aged[me] -> /* deferred only */
            aged[me] = 1; unlock(); goto young                    /* just now: sleep on */
        :: word[me] == LEAD || word[me] == DLEAD ->               /* deferred to this tick */
            word[me] = LEADING;                                   /* (or long enough ago) */
            if
            :: deferred && leader == me -> deferred = 0           /* tick_leads */
            :: else -> skip
            fi;
            unlock(); goto leading
        :: else -> unlock(); goto done                            /* shut down, notified */
        fi }
    fi;
young:                                                            /* lf__defer_sleep: */
    atomic {                                                      /* futex_wait(word, */
        if                                                        /* WAKE_DEFERRED) */
        :: word[me] == DLEAD -> asleep[me] = 1
        :: else -> skip                       /* taken over, or undeferred: at once */
        fi
    };
    atomic { lock(); asleep[me] = 0; goto ticked };               /* woken, or its time */

leading:
    atomic { acting++; led = 1; aged[me] = 0; assert(acting == 1 && leader == me) };
    if
    :: shutdown_flag -> goto leave                                /* interrupted */
    :: events < EVENTS -> events++                                /* an event */
    fi;
    if                                                            /* j->defer(ctx) */
    :: how = 1                                                    /* LF__BUSY */
    :: how = 2                                                    /* LF__MAY_DEFER */
    fi;
    atomic { lock(); acting--; handoff(how); unlock(); how = 0 }; /* lf__promote */
    if
    :: next != NONE -> wake(next); next = NONE
    :: else -> skip
    fi;
    if                                                            /* dispatch */
    :: atomic { !blocker_used ->                                  /* a handler that blocks */
        blocker_used = 1; led = 0; blocking = 1 };                /* until a leader reads */
        atomic { (led || acting > 0 || returned == N - 1) -> blocking = 0 }
    :: true -> skip
    fi;
    if
    :: back = 1; goto lead                                        /* back to lead */
    :: atomic { lock(); undefer(); unlock() }; goto done          /* lf_pool_leave */
    fi;

leave:                                                            /* lf_pool_leave */
    atomic { lock(); acting--; handoff(0); unlock() };
    if
    :: next != NONE -> wake(next)
    :: else -> skip
    fi;
done:
    returned++
}

proctype notify()
{
    byte t = 0; /* the threads are alike: notifying one covers any */
    atomic {
    lock();
    if
    :: parked[t] -> parked[t] = 0; nfollowers--; word[t] = NOTIFY; unlock(); wake(t)
    :: else ->
        notified[t] = 1;
        if
        :: leader == t -> undefer()
        :: else -> skip
        fi;
        unlock()
    fi
    }
}

proctype shutdown()
{
    byte i;
    (!blocking);    /* a shutdown would release it: the tick (or a thread) must */
    atomic {
    lock();
    shutdown_flag = 1;
    i = 0;
    do
    :: i < N ->
        if
        :: parked[i] -> parked[i] = 0; nfollowers--; word[i] = CANCEL; wake(i)
        :: else -> skip
        fi;
        i++
    :: else -> break
    od;
    undefer();
    unlock()
    }
}

active proctype monitor()
{
end:
    do
    :: atomic { !locked && leader == NONE && nfollowers > 0 -> assert(0) } /* lost wake-up */
    :: atomic { acting > 1 -> assert(0) }
    :: atomic { !locked && (word[0] == DLEAD && (leader != 0 || !deferred) ||
                            word[1] == DLEAD && (leader != 1 || !deferred) ||
                            word[2] == DLEAD && (leader != 2 || !deferred)) -> assert(0) }
    :: atomic { !locked && shutdown_flag && deferred -> assert(0) } /* a shutdown undefers */
    :: atomic { !locked && (parked[0] && notified[0] || parked[1] && notified[1] ||
                            parked[2] && notified[2]) -> assert(0) } /* a lost notification */
#if FIXED /* FIXED=0 breaks this: let the end-state check find what that costs */
    :: atomic { !locked && deferred && (leader == NONE || !timed[leader]) -> assert(0) }
#endif
    od
}

init
{
    atomic {
        run thread(0);
        run thread(1);
        run thread(2);
        run notify();
        run shutdown()
    }
    (returned == N);
    assert(nfollowers == 0 && acting == 0)
}
