/* condvar.pml - the promotion protocol of lf.h with LF_PROMOTE_CONDVAR: followers
 * wait on one condition variable; a leader that gives the slot up with followers
 * parked reserves it for them and signals one; a newcomer waits at least once (the
 * reserved slot belongs to those parked when it was promised). Three threads, each
 * may time out, spurious wake-ups anywhere, a source that may fail, shutdown at
 * any moment (one broadcast).
 *
 * Checked: one leader, and processing never holds the slot (asserts); with the
 * pool lock free, a vacant slot with followers has one of them awake (signalled,
 * timed out or spurious), never all asleep: no lost wake-up; every thread returns.
 *
 * FIXED=0: the hand-off reserves the slot but does not signal; spin must catch it.
 *
 *   lf.h                                        here
 *   lf__lead: leader NULL and not reserved       "take the slot"
 *   lf__follow (CONDVAR): newcomer, the wait     follow:
 *     loop, the timeout check, take the slot
 *   lf__handoff (CONDVAR): reserve, signal       handoff()
 *   lf_pool_shutdown: flag, broadcast,           shutdown()
 *     interrupt the leader's source
 *   pthread_cond_wait: unlock + sleep atomically wait_cv()
 */
#ifndef FIXED
#define FIXED 1
#endif
#define N 3
#define NONE 255

bit locked;
byte leader = NONE;
bit reserved;
byte followers;       /* p->lf__followers */
bit asleep[N];        /* in the condition wait, not woken yet */
bit shutdown_flag, interrupted;
byte returned;

inline lock() { atomic { locked == 0 -> locked = 1 } }

inline signal_one()
{
    if
    :: asleep[0] -> asleep[0] = 0
    :: asleep[1] -> asleep[1] = 0
    :: asleep[2] -> asleep[2] = 0
    :: else -> skip                          /* nobody asleep: the signal is lost */
    fi
}

/* lf__handoff, lock held */
inline handoff()
{
    leader = NONE;
    if
    :: followers > 0 && !shutdown_flag ->
        reserved = 1;
#if FIXED
        signal_one()
#else
        skip
#endif
    :: else -> skip
    fi
}

/* pthread_cond_(timed)wait, lock held: unlock and sleep as one step; wake on a
 * signal, a spurious wake-up, or (timed) the deadline; lock again */
inline wait_cv(me)
{
    atomic { asleep[me] = 1; locked = 0 };
    if
    :: asleep[me] == 0 -> timedout = 0       /* signalled or broadcast */
    :: atomic { asleep[me] == 1 -> asleep[me] = 0 }; timedout = 0   /* spurious */
    :: atomic { asleep[me] == 1 -> asleep[me] = 0 }; timedout = 1   /* the deadline */
    fi;
    lock()
}

proctype thread(byte me)
{
    bit newcomer, timedout;

lead:
    lock();
    if
    :: shutdown_flag -> locked = 0; goto done
    :: else -> skip
    fi;
    if
    :: leader == NONE && !reserved -> leader = me; locked = 0; goto leading   /* take the slot */
    :: else -> skip
    fi;
    /* follow */
    followers++;
    newcomer = 1;
    do
    :: (leader != NONE || newcomer) && !shutdown_flag ->
        wait_cv(me);
        newcomer = 0;
        if
        :: timedout && leader != NONE && !shutdown_flag ->
            followers--; locked = 0; goto done                  /* ETIMEDOUT */
        :: else -> skip
        fi
    :: else -> break
    od;
    followers--;
    if
    :: shutdown_flag -> locked = 0; goto done
    :: else -> skip
    fi;
    assert(leader == NONE);
    leader = me;
    reserved = 0;
    locked = 0;

leading:
    assert(leader == me);
    if
    :: shutdown_flag || interrupted -> goto leave
    :: true -> goto leave                                       /* the source failed */
    :: true -> skip                                             /* an event */
    fi;
    lock(); handoff(); locked = 0;                              /* lf_pool_promote */
    assert(leader != me);                                       /* dispatch */
    goto lead;

leave:
    lock(); handoff(); locked = 0;                              /* lf_pool_leave */
done:
    returned++
}

proctype shutdown()
{
    lock();
    shutdown_flag = 1;
    asleep[0] = 0; asleep[1] = 0; asleep[2] = 0;               /* broadcast */
    if
    :: leader != NONE -> interrupted = 1
    :: else -> skip
    fi;
    locked = 0
}

/* a vacant slot with followers: not all of them asleep */
active proctype monitor()
{
end:
    do
    :: atomic { !locked && leader == NONE && followers > 0 && !shutdown_flag &&
                followers == asleep[0] + asleep[1] + asleep[2] -> assert(0) }
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
    assert(followers == 0)
}
