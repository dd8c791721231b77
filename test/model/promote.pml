/* promote.pml - the promotion protocol of lf.h for the follower-set policies (LIFO,
 * FIFO, HEAP with the futex or per-follower synchronizer): three threads in
 * lf_pool_join, a leader slot, followers that time out, a source that may fail,
 * and lf_pool_shutdown at any moment. The set's pop takes any parked follower, so
 * every policy's order is one of the runs explored.
 *
 * Checked in every state: never two leaders; a processing thread is not the leader
 * (promotion before processing); with the pool lock free, a vacant slot has no
 * parked follower (no lost wake-up: nobody sleeps while the slot is free); and at
 * the end, after shutdown, every thread has returned (no deadlock, no thread lost).
 *
 * FIXED=0: the leader processes first and promotes afterwards; spin must catch it.
 *
 *   lf.h                                        here
 *   lf__lead: slot vacant -> leader              "take the slot"
 *   lf__follow: push, park (futex word)          "park", word[me]
 *   lf__follow: ETIMEDOUT, word still WAITING    "time out"
 *   lf__handoff (lf_pool_promote/leave): pop,    handoff()
 *     leader = next, post LF__WAKE_LEAD
 *   lf_pool_join: s->wait, then promote, then    "wait", "dispatch"
 *     dispatch; a failed wait: lf_pool_leave
 *   lf_pool_shutdown: flag, pop and post every   shutdown()
 *     follower LF__WAKE_SHUTDOWN, interrupt the leader's source
 */
#ifndef FIXED
#define FIXED 1
#endif
#define N 3
#define NONE 255
#define WAITING 0
#define LEAD 1
#define CANCEL 2

bit locked;            /* p->lf__lock */
byte leader = NONE;    /* p->lf__leader */
bit parked[N];         /* the follower set */
byte nfollowers;       /* p->lf__followers */
byte word[N];          /* each follower's futex word */
bit shutdown_flag;     /* p->lf__shutdown */
bit interrupted;       /* the source's own stop flag (lf_source.interrupt) */
byte processing;       /* threads in dispatch */
bit processing_is[N];
byte returned;         /* threads whose lf_pool_join returned */

inline lock() { atomic { locked == 0 -> locked = 1 } }
inline unlock() { locked = 0 }

/* lf__handoff, lock held: the slot goes to any parked follower, or stays vacant */
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
    byte next;
    bit promoted;

lead:
    lock();
    if
    :: shutdown_flag -> unlock(); goto done
    :: else -> skip
    fi;
    if
    :: leader == NONE -> leader = me; unlock()            /* take the slot */
    :: else ->
        word[me] = WAITING;                                /* park */
        parked[me] = 1;
        nfollowers++;
        unlock();
        if
        :: word[me] != WAITING -> skip                     /* woken with a verdict */
        :: true ->                                         /* time out */
            lock();
            if
            :: word[me] == WAITING ->
                parked[me] = 0; nfollowers--; unlock(); goto done
            :: else -> unlock()                            /* the verdict won */
            fi
        fi;
        if
        :: word[me] == LEAD -> skip
        :: else -> goto done                               /* shut down */
        fi
    fi;

    /* the leader: waits on the source (one event, or a failure, or interrupted) */
    assert(leader == me);
    if
    :: shutdown_flag || interrupted -> goto leave
    :: true -> goto leave                                  /* the source failed */
    :: true -> skip                                        /* an event */
    fi;
#if FIXED
    lock(); handoff(); unlock();                           /* lf_pool_promote */
    processing++; processing_is[me] = 1;
    assert(leader != me);
    processing--; processing_is[me] = 0;                   /* dispatch */
#else
    processing++; processing_is[me] = 1;
    assert(leader != me);                                  /* processing as leader */
    processing--; processing_is[me] = 0;
    lock(); handoff(); unlock();
#endif
    goto lead;

leave:                                                     /* lf_pool_leave */
    lock(); handoff(); unlock();
done:
    returned++
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
    if
    :: leader != NONE -> interrupted = 1
    :: else -> skip
    fi;
    unlock()
}

/* never two leaders: the slot holds one id, and only its holder acts as leader
 * (the assert above); the invariants below are checked in every state */
active proctype monitor()
{
end:
    do
    :: atomic { !locked && leader == NONE && nfollowers > 0 -> assert(0) } /* lost wake-up */
    :: atomic { nfollowers > N -> assert(0) }
    od
}

init
{
    atomic {
        run thread(0);
        run thread(1);
        run thread(2);
        run shutdown()
    }
    (returned == N);
    assert(nfollowers == 0 && processing == 0)
}
