/* wake.pml - the reactor leader's wake-up protocol (lf_reactor.h, lf__wait), with
 * lf_reactor_stop (lf__interrupt) or a bound reply for the leader's own waiter
 * (lf__yield_leader) racing it. Both set a flag and then kick; the leader looks at
 * the flags, takes events from its harvested batch (draining the wake descriptor
 * when it meets the wake tag there) and, with nothing in hand, blocks in
 * epoll_wait. Property: the leader never blocks for good once a flag is set (spin:
 * no invalid end state, i.e. no deadlock). Every step is one atomic action, as the
 * header's seq_cst operations are; the interleavings are all of them.
 *
 * FIXED=1 models the header as it is; FIXED=0 leaves out the second look at the
 * flags before blocking (the bug CI found in November 2026), and spin must then
 * find the lost wake-up (test/model.sh checks both).
 *
 *   header (lf_reactor.h)                          here
 *   lf__kick: exchange(kick_pending, 1), write     kick()
 *   lf__wake_drain: read all, kick_pending = 0     drain()
 *   lf__wait: "if (lf__load(&r->lf__stopped...      top look
 *   lf__pop_io: the wake tag in the batch          wake_in_batch
 *   lf__wait: second look before lf__before_sleep  the FIXED look
 *   lf__backend_wait: epoll_wait blocks            (wakefd > 0)
 */
#ifndef FIXED
#define FIXED 1
#endif

bit flag;          /* lf__stopped, or lf__yield */
bit kick_pending;  /* lf__kick_pending */
byte wakefd;       /* the wake descriptor's counter (readable when > 0) */
bit wake_in_batch; /* the harvested batch still holds the wake tag */
bit returned;      /* the leader's lf__wait returned EINTR */

inline kick()
{
    atomic {
        if
        :: kick_pending == 0 -> kick_pending = 1; wakefd++
        :: else -> skip
        fi
    }
}

inline drain()
{
    wakefd = 0;
    kick_pending = 0
}

/* somebody kicked earlier (a timer, a notify): its tag may be harvested already */
proctype early()
{
    kick()
}

proctype stopper()
{
    flag = 1;
    kick()
}

proctype leader()
{
    do
    :: flag -> returned = 1; break               /* the top look */
    :: else ->
        if
        :: wake_in_batch -> wake_in_batch = 0; drain()   /* lf__pop_io */
        :: else -> skip
        fi;
#if FIXED
        if
        :: flag -> returned = 1; break           /* the look before blocking */
        :: else -> skip
        fi;
#endif
        /* epoll_wait: blocks until the descriptor is readable, then harvests */
        atomic { wakefd > 0 -> wake_in_batch = 1 }
    od
}

init
{
    atomic {
        run early();
        run leader();
        run stopper()
    }
}

/* at the end of every run the leader has returned */
ltl returns { <>[] returned }
