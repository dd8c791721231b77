/* wake.pml - the reactor's one wake-up protocol (lf_reactor.h, >>wake and lf__wait)
 * with two waiting threads, as LF_REACTOR_CONCURRENT runs it (a single leader is the
 * case of one waiter). Racing them: a notifier that posts two queue entries back to
 * back, a timer started earlier than anything the sleepers saw, and maybe a stop.
 * A waiter that takes an entry runs a handler that waits until no entry is left
 * queued (the first handler waits for the second: with idle threads around, that
 * must never dead-lock), then waits again.
 * Property (checked when nothing can move any more, spin's `timeout`): no queued
 * entry and no timer are left behind while a thread sleeps, and after a stop every
 * waiter has returned. Every step is one atomic action, as the header's seq_cst
 * operations and system calls are.
 *
 * FIXED=1 is the header as it is. FIXED=0 is v1's LF_REACTOR_CONCURRENT wait, which
 * has two lost wake-ups; test/model.sh checks that spin finds one (its search stops
 * at the first error, so a run does not show it finds both):
 *   - a waiter that drained a kick and took one entry did not pass the kick on, so a
 *     second entry whose kick was coalesced with the first waited for a handler to
 *     return (the dead-lock here);
 *   - a waiter that had looked at the stop flag drained the stop's write, and the
 *     other waiter slept on.
 *
 *   header (lf_reactor.h)                          here
 *   lf__kick: exchange(kick_pending, 1), write     kick()
 *   lf__kick_if_sleeping: load sleeping, kick      kick_if_sleeping()
 *   lf__enqueue (notify, a fired timer)            q++, then kick_if_sleeping()
 *   lf_reactor_timer_start (new earliest)          tpend, tgen++, kick_if_sleeping()
 *   lf__wake_stop: stopped = 1, write              stopper
 *   lf__before_sleep: sleeping++, timers, queue    sleeping++, seen = tgen, look at q
 *   lf__be_wait: epoll_wait until readable or      the two guarded wake-ups
 *     until the earliest timer it saw
 *   lf__wake_drain: read all, kick_pending = 0,    drain (FIXED: and the stop rewrite)
 *     stopped? write again
 *   lf__wait's end: drained and took work ->       the pass-on before work:
 *     kick_if_sleeping
 */
#ifndef FIXED
#define FIXED 1
#endif
#ifndef N
#define N 2 /* entries the notifier posts */
#endif

byte q;          /* entries in the ready queue */
byte posted;
bit stopped;     /* lf__stopped */
bit kp;          /* lf__kick_pending */
byte wakefd;     /* the eventfd's counter: readable when > 0 */
byte sleeping;   /* lf__sleeping */
bit tpend;       /* a timer is armed and not fired yet */
byte tgen;       /* bumped by each timer start: what a sleeper's timeout was computed from */
byte running = 2;

inline kick()
{
    atomic {
        if
        :: kp == 0 -> kp = 1; wakefd++
        :: else -> skip
        fi
    }
}

inline kick_if_sleeping()
{
    if
    :: sleeping > 0 -> kick()
    :: else -> skip
    fi
}

proctype notifier()
{
    do
    :: posted < N -> atomic { q++; posted++ }; kick_if_sleeping()
    :: posted == N -> break
    od
}

proctype timer_starter()
{
    atomic { tpend = 1; tgen++ };
    kick_if_sleeping()
}

proctype stopper()
{
    if
    :: stopped = 1; wakefd++ /* lf__wake_stop: the write is unconditional */
    :: skip                  /* or no stop at all: the entries alone */
    fi
}

proctype waiter()
{
    bit drained;
    byte seen;
loop:
    if
    :: stopped -> goto out
    :: else -> skip
    fi;
    if
    :: atomic { q > 0 -> q-- }; goto work
    :: else -> skip
    fi;
    /* lf__before_sleep: counted first, then the last look */
    sleeping++;
    seen = tgen;
    if
    :: atomic { q > 0 -> q--; sleeping-- }; goto work
    :: else -> skip
    fi;
    /* blocked in epoll_wait (a valid end: an idle reactor sleeps there) */
end_wait:
    if
    :: atomic { wakefd > 0 -> sleeping-- };
#if FIXED
        if
        :: stopped -> goto out /* lf__wait's first look after the wait */
        :: else -> skip
        fi;
        wakefd = 0;            /* lf__wake_drain: read all ... */
        kp = 0;                /* ... then clear kick_pending ... */
        if
        :: stopped -> wakefd++ /* ... and a stop stays readable for everyone */
        :: else -> skip
        fi;
        drained = 1
#else
        if                     /* v1: "if (!stopped) lf__wake_drain(r)" */
        :: !stopped -> wakefd = 0; kp = 0
        :: else -> skip
        fi
#endif
    :: atomic { tpend && seen == tgen -> sleeping-- };
        /* its timeout: fire the timer, whose entry is queued (and kicks) */
        atomic {
            if
            :: tpend -> tpend = 0; q++ /* (another waiter may have fired it first) */
            :: else -> skip
            fi
        };
        kick_if_sleeping()
    fi;
    goto loop;
work:
#if FIXED
    if
    :: drained -> kick_if_sleeping() /* pass the kick on */
    :: else -> skip
    fi;
#endif
    drained = 0;
    /* the handler: waits until no entry is left queued (or the stop); blocked here
     * for good is a valid end only when the checker found nobody asleep */
end_handler:
    (q == 0 || stopped);
    goto loop;
out:
    running--
}

active proctype checker()
{
    /* with waiters asleep, nothing may be left to do; when all are inside
     * handlers, entries may wait (that is a thread shortage, not a lost wake-up) */
    timeout -> assert(stopped && running == 0 || !stopped && (sleeping == 0 || q == 0 && !tpend))
}

init
{
    atomic {
        run waiter();
        run waiter();
        run notifier();
        run timer_starter();
        run stopper()
    }
}
