/* turn.pml - one handler of lf_reactor.h through its turns, with removal racing
 * them: two threads dispatch its events (I/O harvested by a leader, and dispatches
 * from the ready queue), a third thread removes it, and the handler may also remove
 * itself from inside (LF_REMOVE). The handler's state word holds BUSY (a thread owns
 * the next dispatch: the deactivation), PENDING (events not yet handed to it) and
 * REMOVED; each atomic block below is one load/CAS/fetch_or of the header. The
 * table slot is "published"; RCU's grace period is modelled by the readers inside
 * a read-side section when the removal unpublished the handler: handle_close (the
 * call_rcu callback) waits until each of them has left.
 *
 * Checked: never two threads inside the handler; no dispatch starts after a
 * removal returned; handle_close runs exactly once, and with no thread inside.
 *
 * FIXED=0: lf__run does not look at REMOVED before it starts a dispatch; spin must
 * catch it.
 *
 *   lf_reactor.h                                 here
 *   lf__dispatch: read lock, lookup, lf__post     io()
 *   lf__post: BUSY if idle, else PENDING only      post
 *   lf__run: REMOVED? then CAS ~PENDING, call      run_handler()
 *   lf__release: REMOVED? PENDING -> enqueue,      release()
 *     else CAS ~BUSY
 *   lf__remove: unpublish, fetch_or REMOVED,       remove()
 *     unqueue, call_rcu(handle_close)
 */
#ifndef FIXED
#define FIXED 1
#endif
#define T 3          /* threads: 0 and 1 dispatch, 2 removes */

bit busy, pending, removed, published = 1, queued;
byte inside;          /* threads in handle_event */
bit rs[T];            /* in a read-side section */
bit must_leave[T];    /* the grace period waits for this reader */
bit removal_returned;
byte closed;          /* handle_close calls */
bit remover_done;

inline rcu_lock(me) { rs[me] = 1 }
inline rcu_unlock(me) { atomic { rs[me] = 0; must_leave[me] = 0 } }

proctype closer()
{
    (must_leave[0] == 0 && must_leave[1] == 0 && must_leave[2] == 0);
    assert(inside == 0);
    closed++
}

/* lf__remove; ENOENT when no longer published. Under the registration lock: the
 * lookup and the unpublishing; then each step as the header takes it. */
inline remove(me)
{
    atomic {
        mine = published;
        published = 0
    };
    if
    :: mine ->
        removed = 1;                       /* fetch_or(LF__REMOVED) */
        queued = 0;                        /* lf__unqueue, under the queue lock */
        atomic {                           /* call_rcu: the grace period starts */
            must_leave[0] = rs[0];
            must_leave[1] = rs[1];
            must_leave[2] = rs[2];
            run closer()
        };
        removal_returned = 1
    :: else -> skip
    fi
}

/* lf__release: give up the ownership, or hand it to the queue */
inline release()
{
    atomic {
        if
        :: removed -> skip
        :: !removed && pending -> queued = 1
        :: !removed && !pending -> busy = 0
        fi
    }
}

/* lf__run: the owner runs the handler once with what is pending */
inline run_handler(me)
{
    started = 0;
    atomic {
#if FIXED
        if
        :: removed -> skip
        :: else ->
#endif
            had = pending; pending = 0; started = 1;
            assert(!removal_returned)        /* no dispatch starts after removal */
#if FIXED
        fi
#endif
    };
    if
    :: started && !had -> release()
    :: started && had ->
        inside++;
        assert(inside == 1);                 /* never two threads inside */
        inside--;
        if
        :: remove(me)                        /* LF_REMOVE from inside */
        :: release()                         /* LF_KEEP */
        fi
    :: else -> skip
    fi
}

proctype dispatcher(byte me)
{
    bit took, had, started, mine;
end:
    do
    :: rcu_lock(me);                         /* an I/O event */
       if
       :: published ->
           atomic {
               took = !(busy || removed);
               if
               :: took -> busy = 1
               :: else -> skip
               fi;
               pending = 1
           };
           if
           :: took -> run_handler(me)
           :: else -> skip                   /* its owner takes the bits */
           fi
       :: else -> skip                       /* stale */
       fi;
       rcu_unlock(me)
    :: atomic { queued -> queued = 0 };      /* from the ready queue: owned already */
       rcu_lock(me);
       if
       :: published -> run_handler(me)
       :: else -> skip
       fi;
       rcu_unlock(me)
    od
}

proctype remover()
{
    bit mine;
    rcu_lock(2);
    remove(2);
    rcu_unlock(2);
    remover_done = 1
}

init
{
    atomic {
        run dispatcher(0);
        run dispatcher(1);
        run remover()
    }
    remover_done;
    (closed == 1);
    assert(!published)
}

/* handle_close never runs twice: checked in every state */
active proctype once()
{
end:
    do
    :: atomic { closed > 1 -> assert(0) }
    od
}
