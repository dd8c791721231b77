/* takeover.pml - lf.h's takeover (SCHEDULING in its doc block) for the follower-set
 * policies: a thread back from processing that finds the promoted follower not yet
 * running withdraws the promotion (WAKE_LEAD -> WAITING, under the pool lock), puts
 * the follower back and leads; the follower, when it runs, claims its promotion
 * with a compare-and-swap (WAKE_LEAD -> LEADING, no lock) or finds it withdrawn and
 * parks again. Three threads in lf_pool_join, each handling up to two events,
 * followers that may time out, one lf_pool_notify of any thread, and
 * lf_pool_shutdown at any moment.
 *
 * Checked in every state: never two threads acting as leader, and the one acting
 * holds the slot; with the pool lock free, a vacant slot has no parked follower (no
 * lost wake-up); a parked follower never holds a notification not yet reported (a
 * takeover must leave a notified follower alone, or it would sleep on it); at the
 * end every thread has returned and nobody is left parked.
 *
 * FIXED=0: the follower claims with a load and a store instead of one
 * compare-and-swap; a takeover between the two makes two leaders, which spin must
 * find.
 *
 *   lf.h                                          here
 *   lf__lead: vacant slot -> leader                "take the slot"
 *   lf__takeover: word[g] WAKE_LEAD -> WAITING,     "take over"
 *     g back in the set, leader = me
 *   lf__park: claim WAKE_LEAD -> LEADING            "claim"
 *   lf__follow: ETIMEDOUT under the lock: still     "time out"
 *     WAITING -> leave the set; WAKE_LEAD -> LEADING
 *   lf_pool_notify: a parked follower leaves the    notify()
 *     set (WAKE_NOTIFY); anyone else: lf__notified
 *   lf__lead: lf__notified -> EINTR                 "notified"
 *
 * NOGUARD: the takeover without its lf__notified check; spin must find the lost
 * notification (checked by hand: spin -DNOGUARD -a takeover.pml).
 */
#ifndef FIXED
#define FIXED 1
#endif
#define N 3
#define NONE 255
#define WAITING 0
#define LEAD 1
#define CANCEL 2
#define LEADING 3
#define NOTIFY 4
#ifndef EVENTS
#define EVENTS 1 /* per thread: 2 takes 10^8 states */
#endif

bit locked;            /* p->lf__lock */
byte leader = NONE;    /* p->lf__leader */
bit parked[N];         /* the follower set */
byte nfollowers;       /* p->lf__followers */
byte word[N];          /* each follower's word */
bit shutdown_flag;     /* p->lf__shutdown */
byte acting;           /* threads past their claim, acting as leader */
bit notified[N];       /* lf__notified: a notification not yet reported */
byte returned;         /* threads whose lf_pool_join returned */

inline lock() { atomic { locked == 0 -> locked = 1 } }
inline unlock() { locked = 0 }

inline handoff()
{
    if
    :: nfollowers == 0 -> leader = NONE
    :: else ->
        if
        :: parked[0] -> next = 0
        :: parked[1] -> next = 1
        :: parked[2] -> next = 2
        fi;
        parked[next] = 0;
        nfollowers--;
        leader = next;
        word[next] = LEAD
    fi
}

proctype thread(byte me)
{
    byte next, seen, events;
    bit back, took;

lead:
    lock();
    if
    :: notified[me] -> notified[me] = 0; unlock(); goto done       /* notified: EINTR */
    :: else -> skip
    fi;
    if
    :: shutdown_flag -> unlock(); goto done
    :: else -> skip
    fi;
    took = 0;
    if
    :: leader == NONE -> leader = me; unlock(); goto leading      /* take the slot */
#ifdef NOGUARD
    :: leader != NONE && back ->                                  /* take over? */
#else
    :: leader != NONE && back && !notified[leader] ->             /* take over? */
#endif
        atomic {                                                  /* one compare-and-swap */
            if
            :: word[leader] == LEAD -> word[leader] = WAITING; took = 1
            :: else -> skip
            fi
        }
    :: else -> skip
    fi;
    if
    :: took ->
        parked[leader] = 1;
        nfollowers++;
        leader = me;
        unlock();
        goto leading
    :: else ->                                                    /* park */
        word[me] = WAITING;
        parked[me] = 1;
        nfollowers++;
        unlock()
    fi;
    back = 0;
park:
    if
    :: word[me] == LEAD ->                                        /* claim */
#if FIXED
        atomic {
            if
            :: word[me] == LEAD -> word[me] = LEADING
            :: else -> skip
            fi
        }
#else
        seen = word[me];
        if
        :: seen == LEAD -> word[me] = LEADING
        :: else -> skip
        fi;
#endif
        if
        :: word[me] == LEADING -> goto leading
        :: else -> goto park                                      /* withdrawn */
        fi
    :: word[me] == CANCEL -> goto done
    :: word[me] == NOTIFY -> goto done                            /* EINTR */
    :: true ->                                                    /* time out */
        lock();
        if
        :: word[me] == WAITING -> parked[me] = 0; nfollowers--; unlock(); goto done
        :: word[me] == LEAD -> word[me] = LEADING; unlock(); goto leading
        :: else -> unlock(); goto done                            /* shut down, notified */
        fi
    fi;

leading:
    atomic { acting++; assert(acting == 1 && leader == me) };
    back = 0;
    if
    :: shutdown_flag -> goto leave
    :: events < EVENTS -> events++                                /* an event */
    :: true -> goto leave                                         /* the source failed */
    fi;
    lock(); acting--; handoff(); unlock();                        /* lf_pool_promote */
    back = 1;                                                     /* dispatch */
    goto lead;

leave:                                                            /* lf_pool_leave */
    lock(); acting--; handoff(); unlock();
done:
    returned++
}

proctype notify()
{
    byte t;
    if
    :: t = 0
    :: t = 1
    :: t = 2
    fi;
    lock();
    if
    :: parked[t] -> parked[t] = 0; nfollowers--; word[t] = NOTIFY
    :: else -> notified[t] = 1
    fi;
    unlock()
}

proctype shutdown()
{
    byte i;
    lock();
    shutdown_flag = 1;
    i = 0;
    do
    :: i < N ->
        if
        :: parked[i] -> parked[i] = 0; nfollowers--; word[i] = CANCEL
        :: else -> skip
        fi;
        i++
    :: else -> break
    od;
    unlock()
}

active proctype monitor()
{
end:
    do
    :: atomic { !locked && leader == NONE && nfollowers > 0 -> assert(0) } /* lost wake-up */
    :: atomic { acting > 1 -> assert(0) }
    :: atomic { !locked && ((parked[0] && notified[0]) || (parked[1] && notified[1]) ||
                            (parked[2] && notified[2])) -> assert(0) }  /* lost notification */
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
