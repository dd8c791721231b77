/* SPDX-License-Identifier: MIT (the licence text is at the end of this file) */
/* lf_reactor.h - a Reactor turned by a Leader/Followers pool: handle set,
 * fd-indexed demultiplexing, the deactivation protocol, timers, notifications.
 *
 * WHAT IT DOES
 *   The threads of an lf_pool (lf.h) take turns waiting on one handle set and dispatch
 *   ONE event per turn, with the pattern's protocol done for you:
 *       deactivate the handle -> promote a follower -> dispatch the handler ->
 *       reactivate the handle.
 *   So at most one thread is ever inside one handler, for I/O, timers and
 *   notifications alike, while different handlers run concurrently. No user code runs
 *   inside liburcu's read-side sections or on liburcu's threads: a handler may block
 *   as long as it likes, and every hook may call back into the reactor.
 *
 * QUICK START
 *   #include "lf_reactor.h"
 *   struct conn { lf_handler h; ... };               (embed the handler)
 *   static int on_event(lf_handler *h, int fd, uint32_t ev)  (fd: a non-blocking stream)
 *   {   ssize_t n = read(fd, buf, sizeof buf);
 *       if (n == 0 || (n < 0 && errno != EAGAIN)) return LF_REMOVE;
 *       ... use the n > 0 bytes ...
 *       return n < (ssize_t)sizeof buf ? LF_DRAINED : LF_KEEP;  }  (or LF_RESUMED)
 *   static void on_close(lf_handler *h) { free(container of h); }
 *
 *   lf_reactor r;  lf_reactor_init(&r);
 *   lf_handler_init(&c->h, on_event, on_close);
 *   lf_reactor_register(&r, &c->h, fd, LF_EV_READ);
 *   each of N threads: lf_reactor_run(&r, NULL);     (returns ECANCELED after stop)
 *   lf_reactor_stop(&r); join the threads; lf_reactor_destroy(&r);
 *
 *   Build: cc -std=c11 -D_POSIX_C_SOURCE=200809L ... $(pkg-config --cflags --libs
 *   liburcu-memb) -pthread      (with LF_RCU_BP: liburcu-bp instead)
 *
 * CONFIGURATION (before #include; the same in every file that shares a reactor)
 *   LF_REACTOR_BACKEND   LF_REACTOR_EPOLL (default on Linux but with LF_PORTABLE), LF_REACTOR_POLL,
 *                        LF_REACTOR_SELECT. Anything else is a compile error.
 *       epoll   deactivation is EPOLLONESHOT, reactivation EPOLL_CTL_MOD: no kick.
 *               After LF_DRAINED the handle stays armed edge-triggered instead: no
 *               system call at all.
 *       poll    the leader polls the armed handles; a handle reported ready is
 *               disarmed, reactivation re-arms it and wakes a blocked leader.
 *       select  as poll; fds must be < FD_SETSIZE (EINVAL otherwise).
 *   LF_RCU_BP            use liburcu's bp flavour instead of memb (link liburcu-bp
 *                        instead of liburcu-memb); see FORK.
 *   LF_REACTOR_BATCH     events the epoll leader harvests per epoll_wait and hands
 *                        out one per turn (default 64).
 *   LF_REACTOR_BACKLOG_NS  with lf.h's LF_DEFER_NS (DEFERRAL there): events harvested
 *                        (returned by the wait) longer ago than this are a backlog,
 *                        and lf_reactor_run's leader wakes the follower it promotes at
 *                        once (default 50000, 50 us); younger, the wake-up is
 *                        deferred. How long they waited in the kernel is not known,
 *                        so after a wait that comes after the handles went unwatched
 *                        for longer than this (a long handler, its promotion
 *                        deferred) and returns at once, the follower is woken too:
 *                        events come while the handlers run.
 *   LF_PROMOTE, LF_SYNC  as in lf.h (the reactor's pool).
 *
 * HANDLERS AND THEIR LIFE
 *   A handler is a caller-owned struct (embed lf_handler in yours) with two hooks:
 *     int  handle_event(lf_handler *h, int fd, uint32_t events)
 *         events: LF_EV_* bits (READ, WRITE, TIMEOUT, SIGNAL, CLOSE, NOTIFY; several
 *         may come at once). LF_EV_CLOSE: a hang-up (both directions) or an error
 *         on the fd, or the fd was closed under the reactor (poll/select), or (epoll)
 *         the handle could not be re-armed (epoll_ctl failed; counted in
 *         stats.rearm_failed): nothing more will come through it, so read what is
 *         still buffered if you want it, and remove the handler (a hang-up keeps
 *         reporting until you do). A peer's half-close (shutdown of its writing side)
 *         is not LF_EV_CLOSE on any backend: it is LF_EV_READ, and read returns 0
 *         after the data. Returns LF_KEEP (reactivate the handle), LF_DRAINED (the
 *         same, and the handle is empty: see below), LF_REMOVE (remove the
 *         handler), or LF_RESUMED (the handler already called
 *         lf_reactor_reactivate, e.g. after reading one whole message, so another
 *         thread could take its next event while this one processes the message).
 *         After that call other threads may run h's handle_event too, and its state
 *         (buffers) is theirs; h itself stays valid and its fd open until this call
 *         returns (its handle_close waits for every thread inside handle_event).
 *         LF_DRAINED says that this dispatch left nothing to read: the last read
 *         returned EAGAIN, or, on a plain byte stream, fewer bytes than it asked for
 *         (a TCP socket that gets no urgent data, a UNIX stream socket that gets no
 *         descriptors, credentials or out-of-band data, a pipe not opened O_DIRECT).
 *         Anything else (a datagram socket, a tty, inotify, an eventfd, the streams'
 *         exceptions) can end a read early with more behind it: there only EAGAIN
 *         tells. epoll then keeps the handle armed edge-triggered instead of
 *         re-arming it with one epoll_ctl per event (0.4 to 1 us of system call;
 *         stats.rearmed counts them): whatever arrives later makes a new report, and
 *         a peer's end of file that came with the last data, which a short read
 *         stops before, is seen by the reactor, which reports it. Only when it is
 *         true: data left behind is not reported until more arrives. A dispatch
 *         that did not read (a timer's, a notification's, a write's) answers what
 *         the last read found. LF_KEEP or LF_RESUMED turns the handle back to
 *         one-shot (one epoll_ctl, and another at the next LF_DRAINED). With
 *         LF_EV_WRITE in the interest it counts as LF_KEEP, and poll and select
 *         always take it so (they look at the handle again anyway). An end of file
 *         is not "empty": a handler that read 0 and keeps LF_EV_READ is reported
 *         again, as after LF_KEEP (drop READ, or remove). While it is
 *         edge-triggered, each arrival during a dispatch, or while the handle is
 *         deactivated, wakes a waiting thread to leave its event to the handler
 *         (one-shot: none until the re-arm), so a handler that expects more soon,
 *         or deactivates itself to push back, says LF_KEEP.
 *     void handle_close(lf_handler *h)         (may be NULL)
 *         Runs exactly once after lf_reactor_remove (or LF_REMOVE, or destroy), when no
 *         thread is inside handle_event any more, on a thread that runs the reactor
 *         (as one turn's event, after the promotion) or in lf_reactor_destroy: never
 *         on a thread of liburcu's. It may call every lf_reactor_* function but
 *         destroy, register h again (also on the same fd), and free h.
 *   The life of a registration:
 *       register -> dispatches -> remove -> (grace period, last dispatch returns)
 *       -> handle_close -> the fd is closed (unless LF_EV_KEEPFD) -> free again.
 *   The grace period is liburcu's (about 10-20 ms: its call_rcu thread polls every
 *   10 ms); it covers only the table lookups, never user code, so a handler that
 *   blocks delays no other handler's close. handle_close needs a thread that turns
 *   the reactor (lf_reactor_run, handle_events, a hybrid lf_bound join) or
 *   lf_reactor_destroy: with none, it waits for one.
 *   A handler must start zeroed (calloc, = {0}, or lf_handler_init). Its record may
 *   be registered again once its handle_close has returned, or from inside it; any
 *   earlier registration of it is refused with EEXIST.
 *   Readiness is a hint: a dispatch with LF_EV_READ may find nothing to read (an
 *   event that arrived while the handler was busy and the re-arm after it can report
 *   the same data), so use non-blocking fds and treat EAGAIN as "nothing yet".
 *
 * WHO OWNS THE FD
 *   By default the reactor does: it closes the fd after handle_close returns, and the
 *   fd stays registered-looking (EEXIST for a new registration) until then, so its
 *   number cannot be reused while an event for it may be in flight.
 *   With LF_EV_KEEPFD the fd stays yours: the reactor never closes it, and the fd is
 *   free for a new registration as soon as no dispatch of the old handler can touch
 *   it (at once when lf_reactor_remove is called from the handler's own
 *   handle_event or while no dispatch runs; else when that dispatch returns). That is
 *   how a live connection changes handlers: remove the old one and register the new
 *   one, on the same fd, from the old one's handle_event. Close the fd yourself, after
 *   lf_reactor_remove (poll/select: a blocked leader is woken to let go of it).
 *   Generation tags drop events of an old registration that arrive after a new one.
 *
 * FUNCTIONS (errors are errno values as in lf.h; EINVAL for a reactor that is not
 * initialised, or destroyed, or a NULL argument)
 *   int lf_reactor_init(lf_reactor *r)             ENOMEM, EMFILE, EAGAIN (no key), ...
 *       Any memory will do (garbage too): every field is set. select: EMFILE when
 *       our own wake-up descriptor would be >= FD_SETSIZE.
 *   int lf_reactor_init_flags(lf_reactor *r, unsigned flags)
 *       LF_REACTOR_CONCURRENT (epoll only, else ENOTSUP): the pattern's relaxed
 *       serialization. No leader slot: every running thread waits in epoll_wait on
 *       the set at once, one event each; a ready handle still runs on one thread
 *       at a time (EPOLLONESHOT reports it once; an edge-triggered one may be
 *       reported to two, and the second leaves its event to the first), and all
 *       the guarantees above hold. Wins when handlers are short
 *       and cores many (one leader would be the bottleneck); costs more wake-ups and
 *       kernel lock traffic when they are few. See RELAXED SERIALIZATION below.
 *   int lf_reactor_destroy(lf_reactor *r)
 *       EBUSY while threads run it (or in a group, or from a hook). Stops it, removes
 *       every handler left, runs every pending handle_close (fds closed as above),
 *       frees everything. Hooks it runs may call lf_reactor_remove; register, notify
 *       and timer_start return ECANCELED there.
 *   int lf_reactor_register(r, h, fd, events)
 *       events: LF_EV_READ and/or LF_EV_WRITE (timers, notifications and signals
 *       need no interest bits), optionally | LF_EV_EDGE and | LF_EV_KEEPFD.
 *       LF_EV_EDGE: a promise that handle_event empties the handle on every dispatch
 *       (the safer way to the same saving: register without it, and answer
 *       LF_DRAINED from the dispatches that did; on an LF_EV_EDGE handle the answer
 *       is LF_KEEP): reads until EAGAIN or 0 (end of file). A read that returns less than asked
 *       is not enough: when the peer's end of file comes with its last data, that
 *       data and the end of file make one edge, and the end of file is seen only
 *       by a read after the short one. epoll then keeps the handle armed,
 *       edge-triggered, instead of re-arming it with one epoll_ctl per event (0.4 to
 *       1 us of system call on the machines we measured; bench/dispatch.sh); what arrives while the handler runs
 *       or is deactivated is delivered after, as always. A handler that leaves data
 *       behind is not called again until more arrives. poll/select ignore the flag.
 *       LF_EV_KEEPFD: the fd stays the caller's (see WHO OWNS THE FD).
 *       EBADF invalid fd; EEXIST fd registered (or its last registration not closed
 *       yet) or h in use (registered, or its handle_close not finished); EINVAL
 *       empty or unknown mask or NULL hook (select: also fd >= FD_SETSIZE);
 *       ECANCELED after stop; EPERM for a regular file or a directory (always
 *       "ready": epoll refuses them, and so do poll and select); or what the backend
 *       says.
 *   void lf_handler_init(h, handle_event, handle_close) / void lf_timer_init(t)
 *       Zero a caller-owned record and set its hooks.
 *   int lf_reactor_remove(r, h)
 *       From any thread, also inside h's own handle_event. When it returns, no
 *       dispatch of h starts any more; one already running goes on (remove does not
 *       wait for it), and handle_close follows it. ENOENT for a handler not registered
 *       here (or already removed).
 *   int lf_reactor_modify(r, h, events)
 *       Change h's interest: LF_EV_READ and/or LF_EV_WRITE, or 0 (no I/O events;
 *       timers and notifications still come). The registration flags (LF_EV_EDGE,
 *       LF_EV_KEEPFD) stay as registered. From h's own handle_event it makes no
 *       system call of its own: a one-shot handle's re-arm after the dispatch carries
 *       the new interest; an edge-triggered handle (whose dispatch re-arms nothing),
 *       or a dispatch for a timer or a notification, pays one epoll_ctl after the
 *       dispatch, and only when the interest changed. From another thread it is one
 *       epoll_ctl (epoll) or wakes a blocked leader (poll/select). A dispatch
 *       that starts after modify returns never carries READ or WRITE that is no
 *       longer wanted (LF_EV_CLOSE always comes; with 0, epoll and poll still report
 *       hang-ups and errors, select does not). The usual use: write what the socket
 *       takes, keep the rest, ask for WRITE; drop it when the rest is out; drop READ
 *       while a client's backlog is full (see the README's server). EINVAL: other
 *       bits, or a signal handler (its interest is its signal set); ENOENT as
 *       remove; or what epoll_ctl says (the interest is then unchanged).
 *   int lf_reactor_deactivate(r, h) / lf_reactor_reactivate(r, h)
 *       Suspend / resume dispatching of h (events arriving meanwhile are kept and
 *       delivered on reactivation). Called by h's own handle_event, reactivate ends
 *       the current dispatch's exclusive hold early: return LF_RESUMED afterwards.
 *       An edge-triggered handle (LF_EV_EDGE, or after LF_DRAINED) that is
 *       deactivated still wakes a waiting thread once per arrival, to keep the
 *       event; a handler that deactivates itself and returns LF_KEEP leaves it
 *       one-shot, which reports once and then waits for the reactivation.
 *   int lf_reactor_register_signal(r, h, const sigset_t *set)
 *       Signals in set arrive as LF_EV_SIGNAL for h, through a signalfd the reactor
 *       owns (h->fd; read struct signalfd_siginfo from it). Block the signals in every
 *       thread first. Linux only (ENOSYS elsewhere, and with LF_PORTABLE).
 *   int lf_reactor_notify(r, h, events)
 *       Post events (any LF_EV_* bits, usually LF_EV_NOTIFY) to h: delivered through
 *       a normal turn, coalesced with anything pending, never blocks the caller.
 *       ENOENT for a handler not registered here, ECANCELED after stop.
 *   int lf_reactor_timer_start(r, t, h, after_ns, period_ns)
 *       Arm caller-owned timer t: LF_EV_TIMEOUT for h after after_ns, then every
 *       period_ns (0: once). Restarting an armed timer re-arms it; a one-shot
 *       restarted to a later time (an idle timeout pushed on every read, a call's
 *       deadline) keeps its place in the heap: the restart does no heap work, and the
 *       timer is re-sorted once, when its old time comes (a sleeping leader wakes
 *       then, and with LF_REACTOR_CONCURRENT every idle thread). Timers of a removed
 *       handler are cancelled by the removal (as timer_cancel: their expiries not
 *       taken are forgotten; a one-shot that expired already is not armed, and keeps
 *       its count until taken or restarted). A handler may have any number of
 *       timers; LF_EV_TIMEOUT says that one of them expired, lf_timer_fired says
 *       which and how often (see TIMERS). Times saturate: one that ends past what
 *       63 bits of CLOCK_MONOTONIC nanoseconds hold (about the year 2262) never
 *       comes, so LLONG_MAX means "never" (after_ns) or "once" (period_ns). ENOENT,
 *       ECANCELED as notify; EINVAL for a negative time, or a t that is armed in
 *       another reactor (cancel it there first).
 *   int lf_reactor_timer_cancel(r, t)              ENOENT if not armed; EINVAL if
 *       armed in another reactor. Forgets t's expiries not taken yet.
 *   unsigned long long lf_timer_fired(lf_timer *t)
 *       Takes t's expiries since the last call (or since it was started): 0 if none.
 *       Any thread; usually t's handler on LF_EV_TIMEOUT.
 *   int lf_reactor_run(r, deadline)
 *       Join the calling thread to the reactor's pool until lf_reactor_stop
 *       (ECANCELED) or the deadline (ETIMEDOUT). EBUSY when a group leads r. The
 *       thread's policy, priority, signal mask and cancel state are left as they
 *       are; only LF_SCHED_BATCH=1, asked for by name, runs a SCHED_OTHER thread as
 *       SCHED_BATCH meanwhile (lf.h, SCHEDULING: its costs, and that a thread or
 *       child started from a handler inherits it; not with LF_REACTOR_CONCURRENT,
 *       whose threads do not join the pool).
 *   int lf_reactor_handle_events(r, deadline)
 *       One turn on the calling thread: wait (as leader) for one event and dispatch
 *       it. 0 (the turn took one event: it ran one handler or one handle_close, or
 *       dropped a stale event; a turn never runs more, so there is no count to
 *       return), ETIMEDOUT, ECANCELED or EBUSY (grouped). A deadline already past
 *       (lf_deadline_in(&d, 0)) polls: the handles are looked at once without
 *       blocking.
 *   int lf_reactor_turn(r, lf_follower *self, deadline)
 *       handle_events with the caller's own follower record (lf_follower_init), so
 *       that lf_reactor_wake can single the caller out: what a library that waits
 *       for something else while it serves the reactor builds on (lf_bound.h does).
 *       As handle_events, plus EINTR: lf_reactor_wake(r, self) was called, and
 *       ENOTSUP with LF_REACTOR_CONCURRENT (no leader slot to single a thread out
 *       of; handle_events works there). self NULL turns nothing: it only says whether
 *       a turn could run (0, EINVAL, ENOTSUP, EBUSY for a grouped reactor, or
 *       ECANCELED once lf_reactor_stop was called: the cheap way for code that
 *       serves r to learn of its stop before it starts something only a turn could
 *       finish; a stop that comes later is the turn's to report).
 *   int lf_reactor_wake(r, lf_follower *f)
 *       Make the thread turning r with f return EINTR from lf_reactor_turn: at once
 *       if it follows or leads, else from its next turn (nothing is lost between a
 *       check and a turn). Never blocks; ENOTSUP as turn. A leader's wait is
 *       interrupted through the
 *       wake-up descriptor, so another thread leading at that moment may see a
 *       spurious EINTR (lf_reactor_run ignores it).
 *   int lf_reactor_stop(r)
 *       Every running thread returns (ECANCELED), now and later: stop is final (make
 *       a new reactor to start again). It has to be: it may come from a signal
 *       handler, so it can only set a flag, and a flag that could be cleared again
 *       would race with the threads that have not seen it yet; the pool's followers
 *       are released for good for the same reason.
 *       Async-signal-safe: it only stores a flag and writes the wake-up descriptor;
 *       the thread that sees it releases the pool.
 *   int lf_reactor_stats(r, struct lf_reactor_stats *out)
 *       Counters (dispatched, stale events dropped, events deferred to a busy
 *       handler, timer expiries, notifications, leader wake-ups, registrations,
 *       removals, handle_close calls, epoll's re-arming system calls and the ones
 *       that failed), the threads waiting for events now, and the
 *       pool's roles. With LF_REACTOR_CONCURRENT the pool is idle.
 *   const char *lf_reactor_backend_name(void)     "epoll", "poll" or "select"
 *   void lf_reactor_atfork_prepare(void), _parent(void), _child(void)    see FORK.
 *
 * CALLING CONTEXTS
 *   Where each call may be made, and what it does there. "yes": as documented
 *   above. "own" is h's own handle_event; "other" a handler of another handle
 *   (or of another reactor); "close" any handle_close; "signal" a signal handler;
 *   "stopped" after lf_reactor_stop; "destroyed" after lf_reactor_destroy (or on a
 *   zeroed, never initialised lf_reactor); "child" a fork child, on a reactor made in
 *   that child (see FORK: the parent's reactors are not usable there).
 *
 *                     thread  own     other   close   signal  stopped destroyed
 *   init              yes     yes     yes     yes     no      -       yes
 *   destroy           yes     EBUSY   EBUSY   EBUSY   no      yes     EINVAL
 *   register(_signal) yes     yes(1)  yes     yes(2)  no      ECANCEL EINVAL
 *   remove            yes     yes     yes     yes     no      yes     EINVAL
 *   (de|re)activate   yes     yes     yes     yes     no      yes     EINVAL
 *   modify            yes     yes     yes     yes(3)  no      yes     EINVAL
 *   notify            yes     yes     yes     yes     no      ECANCEL EINVAL
 *   timer_start       yes     yes     yes     yes(3)  no      ECANCEL EINVAL
 *   timer_cancel      yes     yes     yes     yes     no      yes     EINVAL
 *   run               yes     yes(4)  yes(4)  yes(4)  no      ECANCEL EINVAL
 *   handle_events     yes     yes(4)  yes(4)  yes(4)  no      ECANCEL EINVAL
 *   turn / wake       yes     yes(4)  yes(4)  yes(4)  no      ECANCEL EINVAL
 *   stop              yes     yes     yes     yes     yes     yes     EINVAL
 *   stats             yes     yes     yes     yes     no      yes     EINVAL
 *   timer_fired       yes     yes     yes     yes     no(5)   yes     yes(6)
 *   backend_name      yes     yes     yes     yes     yes     yes     yes
 *   group_init        as init, for the group; the sets as they say
 *   group_run, _stop  as run and stop, for every set of the group
 *   group_destroy     as destroy (EBUSY while a thread runs the group)
 *   atfork_*          only around fork(): pthread_atfork, or called in its place
 *   rcu_registered    the calling thread, about itself (see LIBURCU), outside hooks
 *   In a fork child every row reads as "thread" for a reactor made there.
 *   (1) registering h itself again fails (EEXIST: it is registered); with
 *       LF_EV_KEEPFD, removing h and then registering another handler on its fd
 *       works at once (see WHO OWNS THE FD).
 *   (2) h may register itself again from its own handle_close (also on the same fd:
 *       the reactor closes a fd it owns only after handle_close, so register a new
 *       one, or use LF_EV_KEEPFD).
 *   (3) ENOENT for the handler being closed: it is no longer registered.
 *   (4) the thread turns the reactor from inside a hook (nested): it dispatches other
 *       handlers' events meanwhile; never its own (it holds it). Bound the depth.
 *   (5) an atomic exchange: lock-free where 64-bit atomics are (x86-64, aarch64), a
 *       library call that may take a lock elsewhere (32-bit ARM), so not in general.
 *   (6) it reads only the timer: a timer whose reactor was destroyed (or whose
 *       handler was closed) says what it counted and was not taken, then 0.
 *   What is never allowed: synchronize_rcu, rcu_barrier or lf_reactor_destroy of the
 *   same reactor from a hook (destroy says EBUSY; the others would dead-lock).
 *
 * TIMERS
 *   Each expiry adds to its timer's count and posts LF_EV_TIMEOUT to the handler;
 *   the handler takes each timer's count with lf_timer_fired. How they coalesce:
 *     - a periodic timer that fell behind (its handler was busy, or no thread was
 *       free) fires once for the periods that passed, counted in full, and keeps its
 *       phase (no burst);
 *     - the TIMEOUTs of several timers, and other events pending, come in one
 *       dispatch, as any events do while a handler is busy;
 *     - a restart (timer_start on t) or a cancel forgets t's expiries not taken: a
 *       TIMEOUT posted before may still come, and lf_timer_fired then says 0 for
 *       t, so an idle timeout that is pushed back on every request never fires
 *       late ("stale") without the handler keeping time stamps of its own.
 *   A handler with several timers calls lf_timer_fired on each one it owns when
 *   LF_EV_TIMEOUT comes (a few instructions each): the reactor keeps no list of
 *   which fired, so a dispatch costs the same however many timers a handler has.
 *   Timers and notifications go to registered handlers. Work with no descriptor of
 *   its own (a periodic job, a function to run on the pool) registers an eventfd
 *   (register asks for READ: then lf_reactor_modify(r, h, 0)); nothing reports it
 *   then, the table needs no second index, and removal and handle_close work as for
 *   any. (A pipe's read end does as well while its write end stays open: a closed
 *   write end is a hang-up, which epoll and poll report even at interest 0.)
 *
 * FORK
 *   fork() followed by exec() needs nothing. A child that goes on without exec may
 *   make, run and destroy reactors of its own if the three hooks bracket the fork:
 *       pthread_atfork(lf_reactor_atfork_prepare, lf_reactor_atfork_parent,
 *                      lf_reactor_atfork_child);        (once, or call them yourself)
 *   They stop liburcu's call_rcu thread before the fork and start it again in both
 *   processes (without them the child's first removal never reaches handle_close
 *   and its destroy hangs). liburcu's grace periods in the child also wait for the
 *   parent's reader threads, which the child does not have:
 *     LF_RCU_BP     forgets them in the child: fork at any time, also under load.
 *     memb          cannot: the child's reactors work only if no other thread was
 *                   inside a reactor call when fork() ran (for instance: fork before
 *                   starting the threads, or after they returned from
 *                   lf_reactor_run). A child forked under load may hang (that is
 *                   liburcu's rule for every flavour but bp).
 *   The parent's reactors are not usable in the child (their threads are gone):
 *   close their descriptors or leave them, never call lf_reactor_* on them.
 *
 * LIBURCU (the one dependency; RCU makes the fd -> handler lookup lock-free)
 *   Flavour memb by default (urcu_memb_* names only; the header never defines
 *   _LGPL_SOURCE, it honours yours). Threads inside lf_reactor_run are registered
 *   by it. Other threads that call lf_reactor_* are registered lazily on their first
 *   call and unregistered when they exit. A thread that your own code already
 *   registered with the same flavour must tell us before calling lf_reactor_*:
 *   lf_reactor_rcu_registered(1). Before unloading code that holds handlers, call
 *   lf_reactor_destroy (it waits for every deferred close).
 *   liburcu >= 0.13.3 is recommended (0.13.2 leaks its call_rcu thread at exit).
 *
 * GROUPS (several handle sets, each with its own leader, one pool of threads)
 *   int lf_reactor_group_init(lf_reactor_group *g, lf_reactor **sets, unsigned n)
 *       The n reactors (initialised, not LF_REACTOR_CONCURRENT, not being run; EINVAL
 *       for a NULL, repeated or concurrent set, EBUSY for one in another group or
 *       running) are led from now on by the group's threads only: lf_reactor_run,
 *       handle_events, turn and destroy on them return EBUSY. sets[] must outlive g.
 *   int lf_reactor_group_run(g, deadline)
 *       Join the calling thread to the group's pool. ECANCELED after
 *       lf_reactor_group_stop (or when every set was stopped), ETIMEDOUT.
 *   int lf_reactor_group_stop(g)                   stops every set and every thread.
 *   int lf_reactor_group_destroy(g)                EBUSY while threads run it; the
 *       sets are free again (stopped, if the group was), destroy them afterwards.
 *   Register, remove, notify and timers work on each set as usual. lf_pool_stats
 *   on g->pool shows the shared threads. Run more threads than sets: a set's leader
 *   stays with its set until that set has an event, so with no more threads than
 *   sets, a set with work may find nobody free to lead it.
 *
 * RELAXED SERIALIZATION (which arrangement wins when)
 *   one set, one leader (default)  every event passes one leader: the simplest, the
 *       strictest (one event per turn), and the fewest threads in the kernel. Good up
 *       to a few cores or when handlers are long next to the wait.
 *   one set, many leaders (LF_REACTOR_CONCURRENT)  no hand-off per event at all;
 *       wins with short handlers and many cores, costs wake-ups of idle waiters, and
 *       tails: a thread preempted with an event in hand holds that connection (on 2
 *       cores, 16 connections, README.md's Performance table: p99.9 21.8x a
 *       one-thread loop's, fairness 0.81, against 2.5x and 0.975 with one leader).
 *   many sets, a pool each (several lf_reactor, each run by its own threads)
 *       isolation: a flood on one set cannot take the threads of another (e.g. one
 *       set per priority class, or per core with connections partitioned), at the
 *       price of threads idling in quiet sets.
 *   many sets, one pool (lf_reactor_group)  each set keeps its own leader, timers and
 *       demultiplexer, while the threads move to wherever events are; costs one more
 *       wake-up per event (the set's leader wakes the pool's leader, which promotes a
 *       follower) and needs more threads than sets.
 *
 * HOW A TURN WORKS (the >>turn section below, in this order)
 *   wait      the leader takes one event: a due timer, the ready queue (handlers
 *             that own a dispatch nobody runs yet, and closes), what the last system
 *             call harvested, or a new one (>>wake says how a blocked leader is woken).
 *   claim     inside a short RCU read-side section: look the fd up, check the
 *             generation, take the handler's BUSY bit (or leave the events to the
 *             thread that holds it). The section ends here.
 *   promote   the pool hands leadership to a follower.
 *   dispatch  handle_event, by the owner of BUSY, outside any read-side section.
 *   release   re-arm the handle; queue the next dispatch if events came meanwhile,
 *             else let BUSY go.
 *   close     a removed handler is closed by whoever lets go of it last: the
 *             grace period after its removal (liburcu's call_rcu) or its owner. That
 *             one queues the close, which a later turn runs like an event.
 *
 * CANCELLATION (pthread_cancel, deferred; lf.h's CANCELLATION holds as well)
 *   Cancel a thread that runs the reactor and join it: the reactor goes on with the
 *   other threads, and lf_reactor_stop, the joins and lf_reactor_destroy work as
 *   before. Where a cancel takes effect, and what is put right:
 *     the wait for events (epoll_wait, poll, select) in lf_reactor_run,
 *         lf_reactor_handle_events, lf_reactor_turn, lf_reactor_group_run
 *         the handles epoll reported to the cancelled thread (their one-shot arms
 *         taken) go to the ready queue, so no event is lost; the leadership goes on
 *     a follower's park, the group's wait for a set          as lf.h says
 *     inside handle_event (wherever your code has a cancellation point)
 *         the handler is removed, as if it had returned LF_REMOVE (also when it had
 *         reactivated itself), its timers with it; handle_close comes as after any
 *         removal, on a thread that turns the reactor or in lf_reactor_destroy, and
 *         the fd is closed if the reactor owns it. stats.cancelled counts these.
 *     inside handle_close                 the close completes (fd closed, counted);
 *         in one that lf_reactor_destroy runs, the destroy stops there: call it
 *         again (any thread) and it finishes what is left
 *   Handlers that read or write are full of cancellation points: a cancel that lands
 *   in one removes its connection. To keep connections across "cancel the workers",
 *   disable cancellation inside the handler (pthread_setcancelstate) and leave the
 *   cancels to the waits. Sanitizers: ThreadSanitizer cannot follow a cancel inside
 *   a blocking call it intercepts (the library's waits are arranged for it, see lf.h;
 *   yours in handlers are not), and gcc 12's AddressSanitizer may abort when a cancel
 *   unwinds through instrumented frames, with or without this library.
 *   Nothing else of this header is a cancellation point: the writes and reads of the
 *   wake-up descriptor and the closes it makes run with cancellation disabled (a
 *   kick lost to a cancel would leave a sleeping leader asleep), and the caller's
 *   state is back before its code runs. Your own cleanup handlers in a hook run
 *   before the reactor's, as cleanup handlers do. Wherever a cancelled thread held a
 *   handler of its own outside a hook (a deactivated handler it meant to
 *   reactivate), that is yours to put right in your own cleanup handler.
 *
 * LIMITS
 *   - The fd table is an array indexed by fd, grown by doubling (copy, publish,
 *     reclaim the old one after a grace period): memory is O(highest fd).
 *   - poll/select rebuild their descriptor set from the table when they wait: O(n)
 *     per wait, as those system calls are; epoll is O(1) per event.
 *   - Timers: a binary heap, O(log n) start/cancel/expiry, millisecond resolution
 *     with epoll_wait/poll (deadlines are rounded up, never fire early).
 *   - No allocation per event. Registration may grow the table (allocation);
 *     poll/select grow their descriptor arrays with it.
 *   - lf_reactor_notify takes the ready queue's mutex for a few instructions; it
 *     never waits for a handler or a descriptor.
 *   - The per-thread RCU registration flag is a weak symbol (gcc/clang, ELF).
 *   - With LF_REACTOR_CONCURRENT every idle thread sleeps until the earliest timer:
 *     each expiry wakes them all once.
 *   - A group's set leader waits on its set until an event comes: with no more
 *     threads than sets, a thread can be held by a quiet set.
 */
#ifndef LF_REACTOR_EPOLL
#define LF_REACTOR_EPOLL 1
#define LF_REACTOR_POLL 2
#define LF_REACTOR_SELECT 3
#endif
/* LF_PORTABLE (see lf.h): the POSIX paths, also on Linux */
#if defined(__linux__) && !defined(LF_PORTABLE) && !defined(LF__LINUX)
#define LF__LINUX 1
#endif
#ifndef LF_REACTOR_BACKEND
#ifdef LF__LINUX
#define LF_REACTOR_BACKEND LF_REACTOR_EPOLL
#else
#define LF_REACTOR_BACKEND LF_REACTOR_POLL
#endif
#endif
#if LF_REACTOR_BACKEND != LF_REACTOR_EPOLL && LF_REACTOR_BACKEND != LF_REACTOR_POLL && \
    LF_REACTOR_BACKEND != LF_REACTOR_SELECT
#error "lf_reactor.h: LF_REACTOR_BACKEND must be LF_REACTOR_EPOLL, LF_REACTOR_POLL or LF_REACTOR_SELECT"
#endif

#ifndef LF_REACTOR_H_INCLUDED
#define LF_REACTOR_H_INCLUDED

#include "lf.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#if LF_REACTOR_BACKEND == LF_REACTOR_EPOLL
#include <sys/epoll.h>
#elif LF_REACTOR_BACKEND == LF_REACTOR_POLL
#include <poll.h>
#else
#include <sys/select.h>
#endif
#ifdef LF__LINUX
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#endif

/* Every flavour's header shares urcu/call-rcu.h's include guard: a program that
 * included another flavour's header first (a QSBR user, say) has it already, and
 * ours would then miss the call_rcu family's declarations. We declare those we use
 * again in that case only (a second declaration elsewhere would be redundant). */
#ifdef LF_RCU_BP
#if defined(_URCU_CALL_RCU_H) && !defined(_URCU_BP_H)
#define LF__URCU_REDECLARE 1
#endif
#include <urcu/urcu-bp.h>
#define LF__RCU(name) urcu_bp_##name
#else
#if defined(_URCU_CALL_RCU_H) && !defined(_URCU_MEMB_H)
#define LF__URCU_REDECLARE 1
#endif
#include <urcu/urcu-memb.h>
#define LF__RCU(name) urcu_memb_##name
#endif
#ifdef LF__URCU_REDECLARE
#ifdef __cplusplus
extern "C" {
#endif
void LF__RCU(call_rcu)(struct rcu_head *head, void (*func)(struct rcu_head *head));
void LF__RCU(barrier)(void);
struct call_rcu_data *LF__RCU(get_default_call_rcu_data)(void);
void LF__RCU(call_rcu_before_fork)(void);
void LF__RCU(call_rcu_after_fork_parent)(void);
void LF__RCU(call_rcu_after_fork_child)(void);
#ifdef __cplusplus
}
#endif
#endif

#ifdef __cplusplus
#define LF__THREAD_LOCAL thread_local
#else
#define LF__THREAD_LOCAL _Thread_local
#endif

#ifndef LF_REACTOR_BACKLOG_NS
#define LF_REACTOR_BACKLOG_NS 50000 /* DEFERRAL: events held this long are a backlog */
#endif
#ifndef LF_REACTOR_BATCH
#define LF_REACTOR_BATCH 64
#endif

/* ------------------------------------------------------------------ public types */

#define LF_EV_READ 0x01u
#define LF_EV_ACCEPT LF_EV_READ
#define LF_EV_WRITE 0x02u
#define LF_EV_TIMEOUT 0x04u
#define LF_EV_SIGNAL 0x08u
#define LF_EV_CLOSE 0x10u
#define LF_EV_NOTIFY 0x20u
#define LF_EV_ALL 0x3fu
/* registration flags, never events: see lf_reactor_register */
#define LF_EV_EDGE 0x40u
#define LF_EV_KEEPFD 0x80u

enum { LF_KEEP = 0, LF_REMOVE = 1, LF_RESUMED = 2, LF_DRAINED = 3 };

/* lf_reactor_init_flags: several threads wait in epoll_wait at once (epoll only) */
#define LF_REACTOR_CONCURRENT 1u

/* tags named after the configuration, as lf.h's (LF__CFG): the backend too */
#if LF_REACTOR_BACKEND == LF_REACTOR_EPOLL
#define LF__CFG_B _epoll
#elif LF_REACTOR_BACKEND == LF_REACTOR_POLL
#define LF__CFG_B _poll
#else
#define LF__CFG_B _select
#endif
#define LF__RCFG(name) LF__CAT(LF__CAT(LF__CAT(name, LF__CFG_P), LF__CFG_S), LF__CFG_B)
typedef struct LF__RCFG(lf_reactor) lf_reactor;
typedef struct lf_handler lf_handler;
typedef struct lf_timer lf_timer;
typedef struct LF__CFG(lf_reactor_group) lf_reactor_group;

struct lf_handler {
    /* public: set before lf_reactor_register */
    int (*handle_event)(lf_handler *h, int fd, uint32_t events);
    void (*handle_close)(lf_handler *h);
    /* read-only */
    int fd;
    /* private */
    /* the reactor it is registered with, from registration until its handle_close
     * is about to run (so also while a removal is pending): NULL = free to register */
    LF__ATOMIC(void *) lf__r; /* an lf_reactor (void: handlers are the same type in
                               * every configuration, the reactor is not) */
    uint32_t lf__gen;  /* tags this registration's events */
    uint32_t lf__mask; /* as registered: interest, LF_EV_EDGE, LF_EV_KEEPFD (fixed) */
    LF__ATOMIC(uint32_t) lf__want; /* LF_EV_READ | LF_EV_WRITE interest now (modify) */
    int lf__signalfd;  /* readable means LF_EV_SIGNAL */
    LF__ATOMIC(uint32_t) lf__state; /* pending LF_EV_* bits | LF__BUSY | ... */
    lf_handler *lf__qprev, *lf__qnext; /* ready queue links, under lf__qlock */
    int lf__queued;                    /* 0, or what the queue holds it for (LF__ITEM_*) */
    lf_timer *lf__timers; /* this handler's armed timers, under lf__tlock */
    struct rcu_head lf__rcu;
};

struct lf_timer {
    /* private */
    lf__heap_node lf__node;
    long long lf__when;   /* CLOCK_MONOTONIC ns: its place in the heap */
    long long lf__due;    /* its expiry, >= lf__when: a restart to a later time moves
                           * only this, and the heap re-sorts it when lf__when comes */
    long long lf__period; /* ns; 0 = one-shot */
    unsigned long long lf__seq;
    lf_handler *lf__h; /* NULL: not armed */
    lf_timer *lf__prev, *lf__next; /* the handler's timer list */
    LF__ATOMIC(void *) lf__r; /* the lf_reactor it is armed in, NULL: not armed */
    LF__ALIGN8 LF__ATOMIC(unsigned long long) lf__fired; /* expiries not taken (lf_timer_fired) */
};

struct lf_reactor_stats {
    unsigned long long dispatched; /* handle_event calls */
    unsigned long long stale;      /* events dropped: handler gone or replaced */
    unsigned long long deferred;   /* events that arrived while their handler was busy */
    unsigned long long timers;     /* timer expiries */
    unsigned long long notified;   /* lf_reactor_notify calls that posted */
    unsigned long long kicks;      /* writes to the wake-up descriptor */
    unsigned long long registered, removed;
    unsigned long long closed;     /* handle_close calls (with or without a hook) */
    unsigned long long rearm_failed; /* epoll: re-arms that failed (see LF_EV_CLOSE) */
    unsigned long long rearmed;    /* epoll: EPOLL_CTL_MOD calls, failed ones included: the
                                    * re-arms after dispatches (LF_KEEP after a report:
                                    * one; LF_DRAINED on an edge-triggered handle: none;
                                    * LF_KEEP on an edge-triggered one: one, report or
                                    * not), lf_reactor_modify from other threads, and the
                                    * repeats when an interest changed during a call */
    unsigned long long cancelled;  /* handlers removed because their thread was cancelled
                                    * inside handle_event (see CANCELLATION) */
    unsigned waiting;              /* threads blocked (or about to block) in the wait, now */
    struct lf_pool_stats pool;
};

/* the RCU-protected fd -> handler table. A slot holds a handler, NULL, or a
 * handler's address with its low bit set: removed, its fd not closed yet (so the
 * number is not free to register). */
typedef struct lf__table {
    int n;
    lf_handler **slot;
    struct rcu_head rcu;
} lf__table;

/* A handle_close running now: on the stack of the thread that runs it, linked into
 * its reactor under lf__reglock, so that registering the record meanwhile is refused. */
typedef struct lf__closing {
    lf_handler *h;
    uint32_t gen;
    struct lf__closing *next;
} lf__closing;

/* What one waiting thread took from the backend: the leader's batch (epoll: up to
 * LF_REACTOR_BATCH events; poll/select: the reactor's arrays), or with
 * LF_REACTOR_CONCURRENT one event on each waiting thread's stack. */
typedef struct LF__RCFG(lf__harvest) {
    int n, i;         /* harvested, handed out */
    int prefer_queue; /* alternates the ready queue and I/O */
    int drained;      /* this wait emptied the wake-up descriptor */
    int transient;    /* lives for one turn: never leave an event behind in it */
    long long at_ns;  /* DEFERRAL: when the last wait that reported something returned */
    long long end_ns; /* DEFERRAL: when the last wait returned */
    int stale;        /* DEFERRAL: what that wait found may be old (below) */
#if LF_REACTOR_BACKEND == LF_REACTOR_EPOLL
    int cap;
    struct epoll_event *ev;
#endif
} lf__harvest;

struct LF__RCFG(lf_reactor) {
    lf_pool pool;   /* the threads that turn this reactor */
    lf_source src;  /* our wait/dispatch/interrupt, joined by lf_reactor_run */
    /* private */
    unsigned lf__tag;                /* LF__REACTOR_TAG while initialised */
    lf__table *lf__tab;              /* RCU-published */
    pthread_mutex_t lf__reglock;     /* table writes, generations, lf__closing */
    uint32_t lf__gen;
    lf__closing *lf__closers;        /* handle_close calls running now */
    LF__ATOMIC(int) lf__stopped;
    int lf__destroying;              /* lf_reactor_destroy is running hooks */
    int lf__destroy_begun;           /* ... or began and was cancelled in one: resume */
    int lf__concurrent;              /* LF_REACTOR_CONCURRENT: many threads wait at once */
    LF__ATOMIC(int) lf__running;     /* threads inside run/handle_events/turn */
    LF__ATOMIC(unsigned) lf__cturn;  /* concurrent: alternates queue-first / I/O-first */
    LF__ATOMIC(lf_reactor_group *) lf__group; /* the group that leads this set, or NULL */
    int lf__led;                      /* grouped: a thread leads this set (group lock) */
    LF__ATOMIC(int) lf__leading;      /* grouped: threads inside the set's wait (0 or 1) */
    /* the wake-up protocol (>>wake) */
    int lf__wakefd[2];                /* eventfd (both the same) or a pipe */
    LF__ATOMIC(int) lf__kick_pending; /* a wake-up is already on its way */
    LF__ATOMIC(int) lf__yield;        /* the leader's wait returns EINTR once */
    LF__ATOMIC(int) lf__sleeping;     /* threads (about to be) blocked in the wait */
    /* the ready queue: handlers owning a dispatch nobody runs yet, and closes */
    pthread_mutex_t lf__qlock;
    lf_handler *lf__qfirst, *lf__qlast;
    /* timers */
    pthread_mutex_t lf__tlock;
    lf__heap lf__theap;
    unsigned long long lf__tseq;
    LF__ATOMIC(long long) lf__next_timer; /* earliest expiry, -1: none (a hint) */
    /* leader-only state (only the leader touches it: no lock) */
    lf__harvest lf__hv;
#if LF_REACTOR_BACKEND == LF_REACTOR_EPOLL
    int lf__epfd;
    struct epoll_event lf__ev[LF_REACTOR_BATCH];
#else
    unsigned lf__scan; /* rotating start of the harvest: no low-fd bias */
    int lf__cap;  /* capacity of the arrays below (table size + 1) */
    int *lf__cfd; /* candidates of the next wait: armed handles and their tags */
    uint32_t *lf__cgen;
    int lf__cn;
    int *lf__rfd; /* ready events harvested by the last wait, handed out in order */
    uint32_t *lf__rgen, *lf__rev;
#if LF_REACTOR_BACKEND == LF_REACTOR_POLL
    struct pollfd *lf__pfd;
#endif
#endif
    /* counters (relaxed atomics: statistics only) */
    LF__ALIGN8 LF__ATOMIC(unsigned long long) lf__n_dispatched, lf__n_stale, lf__n_deferred,
        lf__n_timers, lf__n_notified, lf__n_kicks, lf__n_registered, lf__n_removed,
        lf__n_closed, lf__n_rearm_failed, lf__n_rearmed, lf__n_cancelled;
};

/* Several handle sets, each with its own leader, sharing one pool of threads. The
 * pool's leader does not wait on a handle set: it claims a set that has no leader,
 * promotes a follower, and then leads that set for one turn. */
struct LF__CFG(lf_reactor_group) {
    lf_pool pool;             /* the shared threads; set leadership passes in LF_PROMOTE order */
    lf_reactor **lf__sets;    /* caller-owned, outlives the group */
    unsigned lf__n;
    unsigned lf__next;        /* where the next search for a leaderless set starts */
    pthread_mutex_t lf__lock; /* lf__led of every set, lf__next, lf__waiting */
    pthread_cond_t lf__cond;  /* the pool's leader waits here while every set is led */
    int lf__waiting;
    LF__ATOMIC(int) lf__stopped;
};

#define LF__REACTOR_TAG (0x4c465200u | (unsigned)LF_REACTOR_BACKEND)

/* state word of a handler: pending LF_EV_* bits in the low byte, and */
#define LF__BUSY 0x100u      /* a dispatch is owned: queued or running */
#define LF__SUSPENDED 0x200u /* lf_reactor_deactivate: no dispatch may start */
#define LF__REMOVED 0x400u   /* removed: no dispatch may start, ever */
#define LF__ARMED 0x800u     /* poll/select: in the set the leader waits on */
#define LF__FIRED 0x1000u    /* epoll: the kernel reported it (one-shot: now disarmed) */
#define LF__GRACE 0x2000u    /* removed, and a grace period has passed since */
#define LF__DIRTY 0x4000u    /* epoll: interest changed by its own handler: re-arm with it */
#define LF__ET LF_EV_EDGE    /* epoll: armed edge-triggered now (after LF_DRAINED), not one-shot */
#define LF__EOF 0x8000u      /* epoll: a report saw an end of file, a hang-up or an error */
#define LF__PENDING LF_EV_ALL
/* and in the high half, how many threads are inside handle_event now: the owner, and
 * those that returned LF_RESUMED after lf_reactor_reactivate and are still running */
#define LF__INSIDE_ONE 0x10000u
#define LF__INSIDE 0xffff0000u
/* a removed handler is closed once nothing holds it any more */
#define LF__CLOSABLE(st) (((st) & (LF__REMOVED | LF__GRACE | LF__BUSY | LF__INSIDE)) == (LF__REMOVED | LF__GRACE))

/* what a ready-queue entry asks for */
#define LF__ITEM_RUN 1u   /* run the handler: its dispatch is owned by the queue */
#define LF__ITEM_CLOSE 2u /* run its handle_close and close its fd */

/* ------------------------------------------------------------------ >>rcu
 * A thin shim over one liburcu flavour, and lazy registration of user threads. */

/* One flag per thread for the whole program: weak, so every file that includes this
 * header shares it (a static one per file would register a thread twice). */
#if defined(__GNUC__)
#define LF__SHARED __attribute__((weak))
#else
#error "lf_reactor.h needs weak symbols (gcc or clang) for its per-thread RCU registration flag"
#endif
/* (declared extern first: they are meant to be the program's, not the file's) */
extern LF__THREAD_LOCAL int lf__rcu_is_registered;
extern LF__THREAD_LOCAL lf_handler *lf__dispatching;
extern LF__THREAD_LOCAL lf_handler *lf__closing_self;
extern pthread_key_t lf__rcu_key;
extern pthread_once_t lf__rcu_once;
extern int lf__rcu_key_err;
LF__SHARED LF__THREAD_LOCAL int lf__rcu_is_registered;
LF__SHARED LF__THREAD_LOCAL lf_handler *lf__dispatching; /* the handler this thread runs */
LF__SHARED LF__THREAD_LOCAL lf_handler *lf__closing_self; /* the handle_close it runs */
LF__SHARED pthread_key_t lf__rcu_key;
LF__SHARED pthread_once_t lf__rcu_once = PTHREAD_ONCE_INIT;
LF__SHARED int lf__rcu_key_err; /* what pthread_key_create said, once per program */

static inline void lf__rcu_thread_exit(void *unused)
{
    (void)unused;
    if (lf__rcu_is_registered) {
        lf__rcu_is_registered = 0;
        LF__RCU(unregister_thread)();
    }
}

static inline void lf__rcu_make_key(void)
{
    lf__rcu_key_err = pthread_key_create(&lf__rcu_key, lf__rcu_thread_exit);
}

/* lf_reactor_init asks first: without the key a registered thread could exit without
 * unregistering, so no reactor is made then (EAGAIN, the key limit). Every later
 * lf__rcu_enter is on a thread that uses an initialised reactor. */
static inline int lf__rcu_key_ready(void)
{
    pthread_once(&lf__rcu_once, lf__rcu_make_key);
    return lf__rcu_key_err;
}

/* Every entry point that reads the table calls this first. */
static inline void lf__rcu_enter(void)
{
    if (!lf__rcu_is_registered) {
        LF__RCU(register_thread)();
        lf__rcu_is_registered = 1;
        pthread_once(&lf__rcu_once, lf__rcu_make_key);
        pthread_setspecific(lf__rcu_key, (void *)&lf__rcu_is_registered); /* non-NULL */
    }
}

/* For threads your own code registered with the same flavour: say so (1), or that
 * you unregistered it (0), so we neither register it twice nor leave it. */
static inline void lf_reactor_rcu_registered(int yes)
{
    lf__rcu_is_registered = yes;
}

/* ------------------------------------------------------------------ >>tsan
 * ThreadSanitizer cannot see a grace period. Readers "release" a token when they
 * leave a read-side section and reclamation callbacks "acquire" it, which tells TSan
 * what the grace period guarantees: every reader's accesses happen before them. */
#if defined(__SANITIZE_THREAD__)
#define LF__TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define LF__TSAN 1
#endif
#endif
#ifdef LF__TSAN
#ifdef __cplusplus
extern "C" {
#endif
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#ifdef __cplusplus
}
#endif
extern int lf__tsan_gp_token;
LF__SHARED int lf__tsan_gp_token;
#define LF__GP_READER_DONE() __tsan_release(&lf__tsan_gp_token)
#define LF__GP_RECLAIM() __tsan_acquire(&lf__tsan_gp_token)
#else
#define LF__GP_READER_DONE() ((void)0)
#define LF__GP_RECLAIM() ((void)0)
#endif

static inline void lf__read_lock(void)
{
    LF__RCU(read_lock)();
}

static inline void lf__read_unlock(void)
{
    LF__GP_READER_DONE();
    LF__RCU(read_unlock)();
}

/* ------------------------------------------------------------------ >>time */

static inline long long lf__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Milliseconds until `until` (ns), rounded up so we never wake early; -1 = forever. */
static inline int lf__ms_until(long long until, long long now)
{
    long long ms;
    if (until < 0)
        return -1;
    if (until <= now)
        return 0;
    ms = (until - now + 999999) / 1000000;
    return ms > 1000000000LL ? 1000000000 : (int)ms;
}

/* ------------------------------------------------------------------ >>table
 * fd -> handler: an array of pointers published with RCU. Readers (every claim)
 * take no lock; writers hold lf__reglock. Growth copies, publishes the copy and
 * frees the old array after a grace period. The pointers are published with release
 * stores and read with acquire loads (what rcu_assign_pointer/rcu_dereference do,
 * in a form TSan understands). */

static inline lf__table *lf__table_get(lf_reactor *r)
{
    return __atomic_load_n(&r->lf__tab, __ATOMIC_ACQUIRE);
}

/* The slot as stored: a handler, NULL, or a closing mark (lf__reglock or read lock). */
static inline lf_handler *lf__slot(lf_reactor *r, int fd)
{
    lf__table *t = lf__table_get(r);
    return fd >= 0 && fd < t->n ? __atomic_load_n(&t->slot[fd], __ATOMIC_ACQUIRE) : NULL;
}

static inline void lf__slot_set(lf_reactor *r, int fd, lf_handler *h)
{
    __atomic_store_n(&lf__table_get(r)->slot[fd], h, __ATOMIC_RELEASE);
}

/* The mark a removed handler leaves in its slot until its fd is closed. */
static inline lf_handler *lf__closing_mark(lf_handler *h)
{
    return (lf_handler *)(void *)((uintptr_t)(void *)h | 1u);
}

/* The handler registered on fd, or NULL (under the read lock or lf__reglock). */
static inline lf_handler *lf__lookup(lf_reactor *r, int fd)
{
    lf_handler *h = lf__slot(r, fd);
    return ((uintptr_t)(void *)h & 1u) ? NULL : h;
}

static inline lf__table *lf__table_new(int n)
{
    lf__table *t = (lf__table *)malloc(sizeof *t + (size_t)n * sizeof(lf_handler *));
    if (t == NULL)
        return NULL;
    t->n = n;
    t->slot = (lf_handler **)(void *)(t + 1);
    memset((void *)t->slot, 0, (size_t)n * sizeof(lf_handler *));
    return t;
}

static inline void lf__table_free(struct rcu_head *head)
{
    LF__GP_RECLAIM();
    free((void *)((char *)head - offsetof(lf__table, rcu)));
}

/* lf__reglock held. */
static inline int lf__table_fit(lf_reactor *r, int fd)
{
    lf__table *old = r->lf__tab, *t;
    long long n = old->n; /* doubled in 64 bits: fd may be near INT_MAX */

    if (fd < old->n)
        return 0;
    while (n <= fd)
        n *= 2;
    if (n > INT_MAX)
        n = (long long)fd + 1;
    if ((size_t)n > SIZE_MAX / sizeof(lf_handler *) - sizeof *t || (t = lf__table_new((int)n)) == NULL)
        return ENOMEM;
    memcpy((void *)t->slot, (void *)old->slot, (size_t)old->n * sizeof(lf_handler *));
    __atomic_store_n(&r->lf__tab, t, __ATOMIC_RELEASE);
    LF__GP_READER_DONE();
    LF__RCU(call_rcu)(&old->rcu, lf__table_free);
    return 0;
}

/* ------------------------------------------------------------------ >>wake
 * The one wake-up protocol, for the single leader, LF_REACTOR_CONCURRENT's many
 * waiters, a group's set leaders and lf_bound's hybrid waiters alike. A waiting
 * thread blocks in the backend with one descriptor in its set, an eventfd on Linux
 * (a pipe elsewhere), and counts itself in lf__sleeping first.
 *   Work (a queued dispatch or close, an earlier timer, a poll/select handle to add):
 *       publish it (under its lock), then: if lf__sleeping, kick.
 *   Kick: the first kick since the last drain writes the descriptor (lf__kick_pending
 *       coalesces the rest).
 *   Waiter: count itself sleeping, look at the queue, timers and flags once more,
 *       block; a waiter that drains the descriptor clears lf__kick_pending and looks
 *       again before it blocks. Either it sees the work, or the work's kick came after
 *       the clear and writes again.
 *   Pass it on: a waiter that drained the descriptor and then takes something to do
 *       kicks again if others sleep: one kick may stand for several items (they
 *       coalesce) or for a timer the others' sleep was computed without. The last
 *       one woken finds nothing and sleeps with everything seen. A single leader is
 *       the only sleeper, so there this costs nothing.
 *   Stop and yield: a flag, then a write. Stop is sticky: a drain that finds it set
 *       writes the descriptor again, so it stays readable and every waiter, now and
 *       later, sees it. (test/model/wake.pml checks all of this with two waiters.) */

static inline int lf__wake_open(lf_reactor *r)
{
#ifdef LF__LINUX
    r->lf__wakefd[0] = r->lf__wakefd[1] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    return r->lf__wakefd[0] < 0 ? errno : 0;
#else
    if (pipe(r->lf__wakefd) != 0)
        return errno;
    for (int i = 0; i < 2; i++) {
        fcntl(r->lf__wakefd[i], F_SETFL, fcntl(r->lf__wakefd[i], F_GETFL) | O_NONBLOCK);
        fcntl(r->lf__wakefd[i], F_SETFD, FD_CLOEXEC);
    }
    return 0;
#endif
}

static inline void lf__wake_close(lf_reactor *r)
{
    int cs = lf__nocancel_begin();
    close(r->lf__wakefd[0]);
    if (r->lf__wakefd[1] != r->lf__wakefd[0])
        close(r->lf__wakefd[1]);
    lf__nocancel_end(cs);
}

/* Make the descriptor readable (async-signal-safe: one write). Not a cancellation
 * point (CANCELLATION): a kick marked pending but never written would be lost for
 * good. pthread_setcancelstate is not on POSIX's list of async-signal-safe
 * functions; glibc and musl make it an update of the calling thread's own flags,
 * which a signal handler may do, and a cancellation point inside lf_reactor_stop's
 * signal handler would be worse. */
static inline void lf__wake_write(lf_reactor *r)
{
    static const uint64_t one = 1;
    int cs = lf__nocancel_begin();
    /* EAGAIN: the counter (or the pipe) is full, so it is readable anyway */
    ssize_t n = write(r->lf__wakefd[1], &one, r->lf__wakefd[0] == r->lf__wakefd[1] ? sizeof one : 1);
    lf__nocancel_end(cs);
    (void)n;
}

static inline void lf__kick(lf_reactor *r)
{
    /* seq_cst: pairs with the clear in lf__wake_drain, after which the waiter looks
     * at the queue, timers and flags again: it sees our work, or we see the flag
     * clear and write */
    if (lf__exchange(&r->lf__kick_pending, 1, seq_cst) == 0) {
        lf__wake_write(r);
        lf__fetch_add(&r->lf__n_kicks, 1ULL, relaxed);
    }
}

/* After publishing work: wake a waiter if one is (about to be) blocked. seq_cst
 * pairs with the waiter's increment of lf__sleeping before its last look. */
static inline void lf__kick_if_sleeping(lf_reactor *r)
{
    if (lf__load(&r->lf__sleeping, seq_cst))
        lf__kick(r);
}

static inline void lf__wake_drain(lf_reactor *r)
{
    uint64_t buf[4];
    int cs = lf__nocancel_begin();
    while (read(r->lf__wakefd[0], buf, sizeof buf) > 0) {
    }
    lf__nocancel_end(cs);
    lf__store(&r->lf__kick_pending, 0, seq_cst);
    /* a stop is for every waiter, now and later: keep the descriptor readable */
    if (lf__load(&r->lf__stopped, seq_cst))
        lf__wake_write(r);
}

/* lf_reactor_stop's part: sticky and async-signal-safe. */
static inline void lf__wake_stop(lf_reactor *r)
{
    lf__store(&r->lf__stopped, 1, seq_cst);
    lf__wake_write(r);
}

/* Make the current (or next) leader's wait return EINTR once (lf_reactor_wake). The
 * flag is stored before the kick, so the leader that drains the kick sees it. */
static inline void lf__wake_yield(lf_reactor *r)
{
    lf__store(&r->lf__yield, 1, seq_cst);
    lf__kick(r);
}

/* ------------------------------------------------------------------ >>ownership
 * Each handler's state word holds its pending events and who may dispatch it. To
 * run a handler a thread must own LF__BUSY; whoever posts events to an idle handler
 * takes it, everybody else only adds their bits, which the owner picks up before it
 * lets go. That one rule makes I/O, timers and notifications mutually exclusive. It
 * also keeps the handler alive: its close waits until the owner lets go. */

/* Add events; returns 1 if the caller now owns the dispatch of h. */
static inline int lf__post(lf_handler *h, uint32_t bits)
{
    uint32_t old = lf__load(&h->lf__state, relaxed), want;
    do {
        want = old | bits;
        if (!(old & (LF__BUSY | LF__SUSPENDED | LF__REMOVED)))
            want |= LF__BUSY;
    } while (!lf__cas(&h->lf__state, &old, want));
    return !(old & (LF__BUSY | LF__SUSPENDED | LF__REMOVED));
}

/* Take ownership of an idle handler that has events pending (after a resume). */
static inline int lf__claim_pending(lf_handler *h)
{
    uint32_t old = lf__load(&h->lf__state, relaxed);
    do {
        if (!(old & LF__PENDING) || (old & (LF__BUSY | LF__SUSPENDED | LF__REMOVED)))
            return 0;
    } while (!lf__cas(&h->lf__state, &old, old | LF__BUSY));
    return 1;
}

/* ------------------------------------------------------------------ >>queue
 * Handlers whose dispatch is owned but not running yet (a timer fired, a
 * notification, events that came in while they were busy), and removed handlers
 * whose close is due, wait here, first in first out, for a leader to hand them out
 * one per turn. */

/* Link h (its dispatch, or its close); returns 0 (and does nothing) for a dispatch of
 * a removed handler, which its owner must let go of instead (lf__letgo). */
static inline int lf__enqueue(lf_reactor *r, lf_handler *h, unsigned item)
{
    pthread_mutex_lock(&r->lf__qlock);
    /* lf__remove marks the handler before it unlinks it under this lock, so a
     * removed handler's dispatch is either unlinked there or never linked here */
    if (item == LF__ITEM_RUN && (lf__load(&h->lf__state, seq_cst) & LF__REMOVED)) {
        pthread_mutex_unlock(&r->lf__qlock);
        return 0;
    }
    h->lf__qnext = NULL;
    h->lf__qprev = r->lf__qlast;
    if (r->lf__qlast)
        r->lf__qlast->lf__qnext = h;
    else
        r->lf__qfirst = h;
    r->lf__qlast = h;
    h->lf__queued = (int)item;
    pthread_mutex_unlock(&r->lf__qlock);
    lf__kick_if_sleeping(r);
    return 1;
}

/* lf__qlock held. */
static inline void lf__unqueue(lf_reactor *r, lf_handler *h)
{
    if (h->lf__qprev)
        h->lf__qprev->lf__qnext = h->lf__qnext;
    else
        r->lf__qfirst = h->lf__qnext;
    if (h->lf__qnext)
        h->lf__qnext->lf__qprev = h->lf__qprev;
    else
        r->lf__qlast = h->lf__qprev;
    h->lf__queued = 0;
}

/* A waiting thread: take the first entry as this turn's event (ev->ptr: the handler,
 * owned by us now; ev->u64: LF__ITEM_*). */
static inline int lf__pop_queue(lf_reactor *r, lf_event *ev)
{
    lf_handler *h;
    pthread_mutex_lock(&r->lf__qlock);
    h = r->lf__qfirst;
    if (h) {
        ev->ptr = h;
        ev->u64 = (uint64_t)h->lf__queued;
        ev->fd = h->fd;
        ev->events = 0;
        lf__unqueue(r, h);
    }
    pthread_mutex_unlock(&r->lf__qlock);
    return h != NULL;
}

static inline int lf__queue_busy(lf_reactor *r)
{
    int busy;
    pthread_mutex_lock(&r->lf__qlock);
    busy = r->lf__qfirst != NULL;
    pthread_mutex_unlock(&r->lf__qlock);
    return busy;
}

/* ------------------------------------------------------------------ >>timers
 * Caller-owned records in an intrusive min-heap (lf.h's), ordered by expiry, then by
 * start order. Expiry posts LF_EV_TIMEOUT through the ownership rule above, so a
 * timer never runs while its handler's I/O does. */

#define LF__TIMER_OF(n) ((lf_timer *)(void *)((char *)(n) - offsetof(lf_timer, lf__node)))
#define LF__CTIMER_OF(n) ((const lf_timer *)(const void *)((const char *)(n) - offsetof(lf_timer, lf__node)))

static inline int lf__timer_before(const lf__heap_node *a, const lf__heap_node *b)
{
    const lf_timer *ta = LF__CTIMER_OF(a), *tb = LF__CTIMER_OF(b);
    if (ta->lf__when != tb->lf__when)
        return ta->lf__when < tb->lf__when;
    return ta->lf__seq < tb->lf__seq;
}

static inline void lf_handler_init(lf_handler *h, int (*handle_event)(lf_handler *, int, uint32_t),
                                   void (*handle_close)(lf_handler *))
{
    if (h) {
        memset((void *)h, 0, sizeof *h);
        h->handle_event = handle_event;
        h->handle_close = handle_close;
        h->fd = -1;
    }
}

static inline void lf_timer_init(lf_timer *t)
{
    if (t)
        memset((void *)t, 0, sizeof *t);
}

/* Contract: any thread (usually t's handler, on LF_EV_TIMEOUT). Takes the expiries
 * since the last call or since t was started (0: none, or they were forgotten by a
 * restart or a cancel). */
static inline unsigned long long lf_timer_fired(lf_timer *t)
{
    return t ? lf__exchange(&t->lf__fired, 0ULL, acq_rel) : 0ULL;
}

/* lf__tlock held: take t out of the heap and out of its handler's list. */
static inline void lf__timer_unarm(lf_reactor *r, lf_timer *t)
{
    lf__heap_remove(&r->lf__theap, &t->lf__node);
    if (t->lf__prev)
        t->lf__prev->lf__next = t->lf__next;
    else
        t->lf__h->lf__timers = t->lf__next;
    if (t->lf__next)
        t->lf__next->lf__prev = t->lf__prev;
    t->lf__h = NULL;
    lf__store(&t->lf__r, (void *)NULL, relaxed);
}

/* lf__tlock held: (re)insert an armed timer at its time. */
static inline void lf__timer_insert(lf_reactor *r, lf_timer *t)
{
    long long next = lf__load(&r->lf__next_timer, relaxed);
    t->lf__seq = r->lf__tseq++;
    lf__heap_insert(&r->lf__theap, &t->lf__node);
    if (next < 0 || t->lf__when < next)
        lf__store(&r->lf__next_timer, t->lf__when, relaxed);
}

static inline void lf__queue_dispatch(lf_reactor *r, lf_handler *h);

/* lf__tlock held: fire what is due; returns the next expiry or -1. */
static inline long long lf__timers_expire(lf_reactor *r, long long now)
{
    lf__heap_node *n;
    while ((n = r->lf__theap.root) != NULL && LF__TIMER_OF(n)->lf__when <= now) {
        lf_timer *t = LF__TIMER_OF(n);
        lf_handler *h = t->lf__h;
        unsigned long long due = 1;
        if (t->lf__due != t->lf__when) {
            /* restarted later since it was placed: re-sorted at its time (also when
             * that has passed too, so that what is due fires in expiry order) */
            lf__heap_remove(&r->lf__theap, n);
            t->lf__when = t->lf__due;
            lf__timer_insert(r, t);
            continue;
        }
        if (t->lf__period > 0) {
            /* every period that ended by now counts, in one expiry (no burst), and
             * the timer keeps its phase: the next expiry is the first period end
             * after now ((due - 1) periods fit before now: no overflow) */
            due += (unsigned long long)((now - t->lf__when) / t->lf__period);
            lf__heap_remove(&r->lf__theap, n);
            t->lf__when = lf__ns_add(t->lf__when + (long long)(due - 1) * t->lf__period, t->lf__period);
            t->lf__due = t->lf__when;
            lf__timer_insert(r, t);
        } else {
            lf__timer_unarm(r, t);
        }
        lf__fetch_add(&t->lf__fired, due, release);
        lf__fetch_add(&r->lf__n_timers, 1ULL, relaxed);
        /* h is alive: lf__remove takes its timers out under this lock before the
         * grace period that leads to its close starts */
        if (lf__post(h, LF_EV_TIMEOUT))
            lf__queue_dispatch(r, h);
        else
            lf__fetch_add(&r->lf__n_deferred, 1ULL, relaxed);
    }
    lf__store(&r->lf__next_timer, n ? LF__TIMER_OF(n)->lf__when : -1LL, relaxed);
    return n ? LF__TIMER_OF(n)->lf__when : -1;
}

/* A waiting thread, every turn: fire due timers even while the ready queue and the
 * harvested events keep it busy (else a stream of work starves them). One clock read
 * and one relaxed load when nothing is due. */
static inline void lf__timers_due(lf_reactor *r)
{
    long long next = lf__load(&r->lf__next_timer, relaxed), now;
    if (next < 0 || (now = lf__now_ns()) < next)
        return;
    pthread_mutex_lock(&r->lf__tlock);
    lf__timers_expire(r, now);
    pthread_mutex_unlock(&r->lf__tlock);
}

/* ------------------------------------------------------------------ >>backends
 * Every backend is the same handful of static functions over the reactor's private
 * state (the turn in >>turn uses nothing else):
 *   lf_reactor_backend_name()      which one this is
 *   lf__be_open(r) / lf__be_close(r)
 *   lf__be_add(r, h)               watch h->fd for h->lf__mask (0 or an errno)
 *   lf__be_del(r, h)               stop watching it (lf__reglock held)
 *   lf__be_rearm(r, h)             the owner of h reactivates its handle
 *   lf__be_wait(r, hv, ms)         block up to ms (-1: forever) and harvest into hv
 *   lf__be_pop(r, hv, ev)          the next harvested event (1), or none (0); the
 *                                  wake-up descriptor is drained on the way
 * An I/O event carries ev->fd, ev->u64 = the generation it was armed with, and
 * ev->events; ev->ptr is NULL (the claim looks the handler up). */

/* ------------------------------------------------------------------ >>epoll
 * Deactivation is EPOLLONESHOT: the kernel disarms a handle when it reports it, so
 * no other waiter can see it until lf__be_rearm re-arms it with EPOLL_CTL_MOD. A
 * handle registered with LF_EV_EDGE is edge-triggered instead and never disarmed: an
 * edge that comes while its handler is busy (or deactivated) only adds pending bits
 * (see >>ownership), which lf__release turns into the next dispatch, so the handler
 * still runs on one thread at a time, and the re-arm system call per event is saved.
 * A one-shot handle whose handler returns LF_DRAINED is switched to the same mode
 * (LF__ET) by the re-arm its report needed anyway, and stays so while its handler
 * keeps saying it; LF_KEEP switches it back (lf__be_rearm).
 * The leader harvests up to LF_REACTOR_BATCH events per epoll_wait and hands them out
 * one per turn; holding them is safe: a one-shot handle is disarmed by its report, and
 * an edge-triggered one reported again is claimed by whoever owns it. epoll's ready list
 * is served in arrival order, so no fd is favoured. */
#if LF_REACTOR_BACKEND == LF_REACTOR_EPOLL

#define LF__WAKE_TAG UINT64_MAX

static inline const char *lf_reactor_backend_name(void)
{
    return "epoll";
}

/* LF_EV_EDGE (registered so, or LF__ET: the handler said LF_DRAINED): edge-triggered
 * and armed for good (the handler has emptied the handle, and LF__BUSY alone keeps a
 * second thread out); otherwise one-shot, re-armed per event. */
static inline uint32_t lf__to_os(uint32_t mask)
{
    /* EPOLLRDHUP only marks a report (LF__EOF, see lf__be_rearm): a peer's half-close
     * is still LF_EV_READ (end of file after the data), as poll and select report it */
    return ((mask & LF_EV_READ) ? (uint32_t)(EPOLLIN | EPOLLRDHUP) : 0u) |
           ((mask & LF_EV_WRITE) ? (uint32_t)EPOLLOUT : 0u) |
           ((mask & LF_EV_EDGE) ? (uint32_t)EPOLLET : (uint32_t)EPOLLONESHOT);
}

static inline int lf__be_open(lf_reactor *r)
{
    struct epoll_event e;
    r->lf__hv.ev = r->lf__ev;
    r->lf__hv.cap = LF_REACTOR_BATCH;
    r->lf__epfd = epoll_create1(EPOLL_CLOEXEC);
    if (r->lf__epfd < 0)
        return errno;
    memset(&e, 0, sizeof e);
    e.events = EPOLLIN; /* level-triggered: stays ready until drained */
    e.data.u64 = LF__WAKE_TAG;
    if (epoll_ctl(r->lf__epfd, EPOLL_CTL_ADD, r->lf__wakefd[0], &e) != 0) {
        int rc = errno, cs = lf__nocancel_begin();
        close(r->lf__epfd);
        lf__nocancel_end(cs);
        return rc;
    }
    return 0;
}

static inline void lf__be_close(lf_reactor *r)
{
    int cs = lf__nocancel_begin();
    close(r->lf__epfd);
    lf__nocancel_end(cs);
}

/* How h is to be watched now: its interest, and LF__ET (edge-triggered after
 * LF_DRAINED) or not (one-shot). */
static inline uint32_t lf__be_kind(lf_handler *h)
{
    return lf__load(&h->lf__want, seq_cst) | (lf__load(&h->lf__state, seq_cst) & LF__ET);
}

/* Watch h->fd as lf__be_kind says; *used says how (see lf__be_mod). */
static inline int lf__be_ctl(lf_reactor *r, lf_handler *h, int op, uint32_t *used)
{
    struct epoll_event e;
    *used = lf__be_kind(h);
    memset(&e, 0, sizeof e);
    e.events = lf__to_os(*used | (h->lf__mask & LF_EV_EDGE));
    e.data.u64 = ((uint64_t)h->lf__gen << 32) | (uint32_t)h->fd;
    return epoll_ctl(r->lf__epfd, op, h->fd, &e) == 0 ? 0 : errno;
}

static inline int lf__be_add(lf_reactor *r, lf_handler *h)
{
    uint32_t used;
    return lf__be_ctl(r, h, EPOLL_CTL_ADD, &used);
}

/* Re-arm h with its interest. The owner (lf__be_rearm) and lf_reactor_modify from
 * another thread may both do it at once, each with the interest (and the LF__ET mode)
 * it read: whoever finds them changed after its own system call does it again, so
 * the last call the kernel sees carries the last ones stored. */
static inline int lf__be_mod(lf_reactor *r, lf_handler *h)
{
    uint32_t used;
    int rc;
    do {
        rc = lf__be_ctl(r, h, EPOLL_CTL_MOD, &used);
        lf__fetch_add(&r->lf__n_rearmed, 1ULL, relaxed);
    } while (rc == 0 && lf__be_kind(h) != used);
    return rc;
}

static inline void lf__be_del(lf_reactor *r, lf_handler *h)
{
    epoll_ctl(r->lf__epfd, EPOLL_CTL_DEL, h->fd, NULL);
}

/* The owner of h is done with a dispatch; drained: its handler returned LF_DRAINED. */
static inline void lf__be_rearm(lf_reactor *r, lf_handler *h, int drained)
{
    uint32_t st;
    int rc;
    if (h->lf__mask & LF_EV_EDGE) {
        /* never disarmed: an edge while busy left its bits for lf__release. Only an
         * interest changed by the handler itself (LF__DIRTY) needs the system call. */
        if (!(lf__load(&h->lf__state, relaxed) & LF__DIRTY) ||
            !(lf__fetch_and(&h->lf__state, ~LF__DIRTY, seq_cst) & LF__DIRTY))
            return;
    } else {
        /* Only a report disarms a one-shot handle, and every report sets LF__FIRED on
         * its way in (the claim, also when it only leaves its bits to a busy owner).
         * None since the last re-arm (a dispatch of a timer or a notification alone):
         * the handle is still armed, and the system call is saved. A report whose
         * event is still on its way (harvested, not claimed yet) sets the bit later
         * and re-arms through its own dispatch. LF__DIRTY: the handler changed its
         * interest, which takes the system call whether it fired or not.
         *
         * LF_DRAINED: the handler found the handle empty, so it can stay armed
         * edge-triggered (LF__ET): whatever arrives from now on makes a new edge, and
         * nothing is left that would need one. Switching to it is the re-arm the
         * report needed anyway; once there, LF_DRAINED costs no system call.
         * Not drained are: a report marked LF__EOF (an end of file, a hang-up or an
         * error: the data and the end of file may have come as one edge, and a read
         * that stopped short at the end of the data did not see the end of file,
         * which makes no new edge), and a handle that asks for LF_EV_WRITE
         * (LF_DRAINED speaks of reading; a socket with room makes no new edge).
         * On an edge-triggered handle any other answer (LF_KEEP, LF_RESUMED) re-arms
         * one-shot, whether this dispatch carried a report or not: an edge is spent
         * when it is harvested, so what a dispatch leaves behind gets no new one.
         * Such a dispatch may run a report that came while the handler was busy
         * (its bits queued it, and the LF_DRAINED before it took its LF__FIRED), or
         * a notification that read part of the data. */
        st = lf__load(&h->lf__state, relaxed);
        if (drained && !(lf__load(&h->lf__want, relaxed) & LF_EV_WRITE)) {
            /* the marks are taken with their test in one step, so a mark that a
             * report deferred to us sets meanwhile is either seen here or kept */
            st = lf__fetch_and(&h->lf__state, ~(LF__FIRED | LF__DIRTY | LF__EOF), seq_cst);
            if (st & LF__ET) {
                if (!(st & (LF__EOF | LF__DIRTY)))
                    return; /* stays armed edge-triggered: nothing left behind */
                if (st & LF__EOF) /* one-shot: its re-arm reports the end of file */
                    lf__fetch_and(&h->lf__state, ~LF__ET, seq_cst);
            } else {
                if (!(st & (LF__FIRED | LF__DIRTY)))
                    return; /* no report since the last re-arm: armed one-shot still */
                if (!(st & LF__EOF)) /* (set before the call: lf__be_kind reads it) */
                    lf__fetch_or(&h->lf__state, LF__ET, seq_cst);
            }
        } else if (st & LF__ET) {
            lf__fetch_and(&h->lf__state, ~(LF__ET | LF__FIRED | LF__DIRTY | LF__EOF), seq_cst);
        } else if (!(lf__fetch_and(&h->lf__state, ~(LF__FIRED | LF__DIRTY | LF__EOF), seq_cst) &
                     (LF__FIRED | LF__DIRTY))) {
            return;
        }
    }
    /* The owner re-arms; lf__remove cannot free the fd for another registration
     * while an owner other than its caller exists (see lf__remove), so this never
     * modifies someone else's registration. ENOENT: removed meanwhile, harmless.
     * Anything else (ENOMEM; EBADF, the fd was closed under us) leaves the handle
     * disarmed for good: never silently. The handler hears LF_EV_CLOSE (lf__release
     * finds the bit and queues the dispatch) and the failure is counted. */
    rc = lf__be_mod(r, h);
    if (rc != 0 && rc != ENOENT) {
        lf__fetch_or(&h->lf__state, LF_EV_CLOSE, seq_cst);
        lf__fetch_add(&r->lf__n_rearm_failed, 1ULL, relaxed);
    }
}

static inline int lf__be_wait(lf_reactor *r, lf__harvest *hv, int timeout_ms)
{
    int n;
    /* CANCELLATION: a cancel may end the wait after the kernel filled the array (and
     * took the one-shot arms of what it reports). Marked empty first, the cleanup can
     * tell which entries came back (epoll never reports an empty mask). The array
     * starts zeroed, and only the first hv->n entries (all handed out by now) were
     * written since, so those are all that need it. */
    int cs;
    for (int i = 0; i < hv->n; i++) /* the rest is zero since the wait before */
        hv->ev[i].events = 0;
    cs = lf__blocking_begin(); /* (ThreadSanitizer: see LF__TSAN_WAITS in lf.h) */
    n = epoll_wait(r->lf__epfd, hv->ev, hv->cap, lf__blocking_ms(timeout_ms));
    lf__blocking_end(cs);
    if (n < 0)
        return errno == EINTR ? 0 : errno;
    hv->n = n;
    hv->i = 0;
    return 0;
}

/* One reported handle as this turn's event (an I/O event: ev->ptr NULL). */
static inline void lf__be_event(const struct epoll_event *e, lf_event *ev)
{
    ev->ptr = NULL;
    ev->fd = (int)(uint32_t)e->data.u64;
    ev->u64 = e->data.u64 >> 32;
    ev->events = ((e->events & (EPOLLIN | EPOLLPRI)) ? LF_EV_READ : 0u) |
                 ((e->events & EPOLLOUT) ? LF_EV_WRITE : 0u) |
                 ((e->events & (EPOLLERR | EPOLLHUP)) ? LF_EV_CLOSE : 0u);
    if (ev->events == 0)
        ev->events = LF_EV_CLOSE;
    /* not an event: a mark for lf__be_rearm (an end of file or a hang-up is never
     * "drained": it stays readable, and is reported again after LF_DRAINED too) */
    if (e->events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
        ev->events |= LF__EOF;
}

static inline int lf__be_pop(lf_reactor *r, lf__harvest *hv, lf_event *ev)
{
    while (hv->i < hv->n) {
        const struct epoll_event *e = &hv->ev[hv->i++];
        if (e->data.u64 == LF__WAKE_TAG) {
            lf__wake_drain(r);
            hv->drained = 1;
            continue;
        }
        lf__be_event(e, ev);
        return 1;
    }
    return 0;
}

#else
/* ------------------------------------------------------------------ >>poll/select
 * Both keep an "active set": the handles whose LF__ARMED bit is set. The leader
 * collects the armed handles, waits, and disarms each one it reports (that is the
 * deactivation); lf__be_rearm sets the bit again and wakes a leader that is blocked
 * without it. The harvest starts at a rotating handle, so low fds are not favoured. */

static inline void lf__be_close(lf_reactor *r)
{
    free(r->lf__cfd);
    free(r->lf__cgen);
    free(r->lf__rfd);
    free(r->lf__rgen);
    free(r->lf__rev);
#if LF_REACTOR_BACKEND == LF_REACTOR_POLL
    free(r->lf__pfd);
#endif
}

static inline int lf__be_add(lf_reactor *r, lf_handler *h)
{
    (void)r;
    lf__fetch_or(&h->lf__state, LF__ARMED, relaxed);
    return 0;
}

static inline void lf__be_del(lf_reactor *r, lf_handler *h)
{
    /* LF__REMOVED (set seq_cst by the caller) keeps h out of the next collection. A
     * leader blocked now may hold h's descriptor in its set, and with it the open
     * file: wake it, so it lets go of it (pairs with lf__sleeping, as lf__be_rearm). */
    (void)h;
    lf__kick_if_sleeping(r);
}

static inline void lf__be_rearm(lf_reactor *r, lf_handler *h, int drained)
{
    (void)drained; /* level-triggered: the handle is looked at again in any case */
    /* seq_cst RMW then seq_cst load of lf__sleeping: pairs with the leader, which
     * counts itself sleeping before it collects the armed handles */
    lf__fetch_or(&h->lf__state, LF__ARMED, seq_cst);
    lf__kick_if_sleeping(r);
}

static inline int lf__be_pop(lf_reactor *r, lf__harvest *hv, lf_event *ev)
{
    if (hv->i >= hv->n)
        return 0;
    ev->ptr = NULL;
    ev->fd = r->lf__rfd[hv->i];
    ev->u64 = r->lf__rgen[hv->i];
    ev->events = r->lf__rev[hv->i];
    hv->i++;
    return 1;
}

/* Leader: make the arrays hold n handles (grows with the table; no per-event cost). */
static inline int lf__arrays_fit(lf_reactor *r, int n)
{
    void *p;
    if (n + 1 <= r->lf__cap)
        return 0;
    n = n + 1;
#define LF__GROW(field, type)                                                      \
    if ((p = realloc((void *)r->field, (size_t)n * sizeof(type))) == NULL)         \
        return ENOMEM;                                                             \
    r->field = (type *)p;
    LF__GROW(lf__cfd, int)
    LF__GROW(lf__cgen, uint32_t)
    LF__GROW(lf__rfd, int)
    LF__GROW(lf__rgen, uint32_t)
    LF__GROW(lf__rev, uint32_t)
#if LF_REACTOR_BACKEND == LF_REACTOR_POLL
    LF__GROW(lf__pfd, struct pollfd)
#endif
#undef LF__GROW
    r->lf__cap = n;
    return 0;
}

/* Leader: collect the armed handles with their interest (r->lf__rev[i], free until
 * the harvest). The arrays are grown here, to the table read under the lock: a
 * pointer into them taken before this call may be stale after it. */
static inline int lf__collect(lf_reactor *r)
{
    uint32_t *want;
    lf__table *t;
    int rc;

    lf__read_lock();
    t = lf__table_get(r);
    if ((rc = lf__arrays_fit(r, t->n)) != 0) {
        lf__read_unlock();
        return rc;
    }
    want = r->lf__rev;
    r->lf__cn = 0;
    for (int fd = 0; fd < t->n; fd++) {
        lf_handler *h = __atomic_load_n(&t->slot[fd], __ATOMIC_ACQUIRE);
        if (h && !((uintptr_t)(void *)h & 1u) &&
            (lf__load(&h->lf__state, seq_cst) & (LF__ARMED | LF__REMOVED)) == LF__ARMED) {
            r->lf__cfd[r->lf__cn] = fd;
            r->lf__cgen[r->lf__cn] = h->lf__gen;
            want[r->lf__cn] = lf__load(&h->lf__want, seq_cst);
            r->lf__cn++;
        }
    }
    lf__read_unlock();
    return 0;
}

/* Leader: where the harvest of this wait starts among the candidates. It moves by
 * one handle per wait, so over any cn waits every handle is first once: ready
 * handles are served in rotating order and the highest fd is not always last. */
static inline int lf__harvest_start(lf_reactor *r)
{
    int start = r->lf__cn ? (int)((unsigned)r->lf__scan % (unsigned)r->lf__cn) : 0;
    r->lf__scan++;
    return start;
}

/* Leader: disarm a reported handle and keep its event for the coming turns. */
static inline void lf__take(lf_reactor *r, lf__harvest *hv, int fd, uint32_t gen,
                            uint32_t events)
{
    lf_handler *h;
    lf__read_lock();
    h = lf__lookup(r, fd);
    if (h && h->lf__gen == gen && (lf__fetch_and(&h->lf__state, ~LF__ARMED, relaxed) & LF__ARMED)) {
        r->lf__rfd[hv->n] = fd;
        r->lf__rgen[hv->n] = gen;
        r->lf__rev[hv->n] = events;
        hv->n++;
    }
    lf__read_unlock();
}

#if LF_REACTOR_BACKEND == LF_REACTOR_POLL

static inline const char *lf_reactor_backend_name(void)
{
    return "poll";
}

static inline int lf__be_open(lf_reactor *r)
{
    return lf__arrays_fit(r, 64);
}

static inline int lf__be_wait(lf_reactor *r, lf__harvest *hv, int timeout_ms)
{
    int rc, n, cs;

    /* the interest goes into pfd[].events for now (as LF_EV_* bits) */
    {
        uint32_t *want;
        if ((rc = lf__collect(r)) != 0)
            return rc;
        want = r->lf__rev; /* (after the collection: it may have moved them) */
        for (int i = 0; i < r->lf__cn; i++) {
            r->lf__pfd[i].fd = r->lf__cfd[i];
            r->lf__pfd[i].events = (short)(((want[i] & LF_EV_READ) ? POLLIN : 0) |
                                           ((want[i] & LF_EV_WRITE) ? POLLOUT : 0));
            r->lf__pfd[i].revents = 0;
        }
    }
    r->lf__pfd[r->lf__cn].fd = r->lf__wakefd[0];
    r->lf__pfd[r->lf__cn].events = POLLIN;
    r->lf__pfd[r->lf__cn].revents = 0;
    cs = lf__blocking_begin(); /* (ThreadSanitizer: see LF__TSAN_WAITS in lf.h) */
    n = poll(r->lf__pfd, (nfds_t)r->lf__cn + 1, lf__blocking_ms(timeout_ms));
    lf__blocking_end(cs);
    if (n < 0)
        return errno == EINTR ? 0 : errno;
    hv->n = hv->i = 0;
    if (r->lf__pfd[r->lf__cn].revents) {
        lf__wake_drain(r);
        hv->drained = 1;
    }
    for (int k = 0, start = lf__harvest_start(r); k < r->lf__cn; k++) {
        int i = (start + k) % r->lf__cn;
        short re = r->lf__pfd[i].revents;
        if (re == 0)
            continue;
        /* POLLNVAL: the descriptor was closed while registered (or, with
         * LF_EV_KEEPFD, after its removal): the handler hears LF_EV_CLOSE, a
         * removed one is dropped by the generation check */
        lf__take(r, hv, r->lf__cfd[i], r->lf__cgen[i],
                    ((re & POLLIN) ? LF_EV_READ : 0u) | ((re & POLLOUT) ? LF_EV_WRITE : 0u) |
                        ((re & (POLLERR | POLLHUP | POLLNVAL)) ? LF_EV_CLOSE : 0u));
    }
    return 0;
}

#else /* LF_REACTOR_SELECT */

static inline const char *lf_reactor_backend_name(void)
{
    return "select";
}

static inline int lf__be_open(lf_reactor *r)
{
    if (r->lf__wakefd[0] >= FD_SETSIZE)
        return EMFILE; /* select could not watch our own wake-up descriptor */
    return lf__arrays_fit(r, 64);
}

static inline int lf__be_wait(lf_reactor *r, lf__harvest *hv, int timeout_ms)
{
    fd_set rs, ws;
    struct timeval tv;
    uint32_t *want;
    int rc, maxfd = r->lf__wakefd[0], n, cs;

    if ((rc = lf__collect(r)) != 0)
        return rc;
    want = r->lf__rev; /* (after the collection: it may have moved them) */
    FD_ZERO(&rs);
    FD_ZERO(&ws);
    FD_SET(r->lf__wakefd[0], &rs);
    for (int i = 0; i < r->lf__cn; i++) {
        int fd = r->lf__cfd[i];
        if (want[i] & LF_EV_READ)
            FD_SET(fd, &rs);
        if (want[i] & LF_EV_WRITE)
            FD_SET(fd, &ws);
        if (fd > maxfd)
            maxfd = fd;
    }
    timeout_ms = lf__blocking_ms(timeout_ms); /* (ThreadSanitizer: LF__TSAN_WAITS, lf.h) */
    tv.tv_sec = timeout_ms / 1000;
    tv.tv_usec = (suseconds_t)(timeout_ms % 1000) * 1000;
    cs = lf__blocking_begin();
    n = select(maxfd + 1, &rs, &ws, NULL, timeout_ms < 0 ? NULL : &tv);
    lf__blocking_end(cs);
    hv->n = hv->i = 0;
    if (n < 0 && errno == EBADF) {
        /* a collected descriptor was closed before select ran (LF_EV_KEEPFD: its
         * owner closed it after removing it; or it was closed while registered).
         * Report each closed one as LF_EV_CLOSE, as poll's POLLNVAL does: a removed
         * handler's is dropped by the generation check, a live one hears it. The
         * leader never leaves the reactor over it. */
        for (int i = 0; i < r->lf__cn; i++)
            if (fcntl(r->lf__cfd[i], F_GETFD) == -1 && errno == EBADF)
                lf__take(r, hv, r->lf__cfd[i], r->lf__cgen[i], LF_EV_CLOSE);
        return 0;
    }
    if (n < 0)
        return errno == EINTR ? 0 : errno;
    if (FD_ISSET(r->lf__wakefd[0], &rs)) {
        lf__wake_drain(r);
        hv->drained = 1;
    }
    for (int k = 0, start = lf__harvest_start(r); k < r->lf__cn; k++) {
        int i = (start + k) % r->lf__cn;
        int fd = r->lf__cfd[i];
        /* select reports errors and hang-ups as readable: the read says which */
        uint32_t ev = (FD_ISSET(fd, &rs) ? LF_EV_READ : 0u) | (FD_ISSET(fd, &ws) ? LF_EV_WRITE : 0u);
        if (ev)
            lf__take(r, hv, fd, r->lf__cgen[i], ev);
    }
    return 0;
}

#endif
#endif
/* ------------------------------------------------------------------ >>turn
 * wait -> claim -> promote -> dispatch -> release, and close. The pool (lf.h) does
 * the promotion between lf__wait and lf__dispatch. */

static inline int lf__remove(lf_reactor *r, lf_handler *h);

/* ---- close: a removed handler, let go of by everybody (lf__letgo or the grace
 * period below, whichever is last, queued it). Runs on a thread that turns the
 * reactor (processing role) or in lf_reactor_destroy, never inside a read-side
 * section: handle_close may do anything but destroy this reactor. */
/* The end of a close: unlink `me`, close the fd if the reactor owns it. */
static inline void lf__close_done(lf_reactor *r, lf__closing *me, int fd, int own_fd)
{
    pthread_mutex_lock(&r->lf__reglock);
    for (lf__closing **p = &r->lf__closers; *p; p = &(*p)->next)
        if (*p == me) {
            *p = me->next;
            break;
        }
    if (own_fd) {
        /* under the lock: a registration of the number waits until it is closed and
         * the mark is gone, so it can never be given a descriptor we then close */
        int cs = lf__nocancel_begin();
        close(fd);
        lf__nocancel_end(cs);
        if (lf__slot(r, fd) == lf__closing_mark(me->h)) /* (compares the address only) */
            lf__slot_set(r, fd, NULL);
    }
    pthread_mutex_unlock(&r->lf__reglock);
    lf__fetch_add(&r->lf__n_closed, 1ULL, relaxed);
}

/* CANCELLATION inside handle_close: the close still ends as it would have. */
typedef struct LF__RCFG(lf__close_guard) {
    lf_reactor *r;
    lf__closing *me;
    lf_handler *outer;
    int fd, own_fd;
} lf__close_guard;

static inline void lf__close_cancelled(void *arg)
{
    lf__close_guard *g = (lf__close_guard *)arg;
    lf__closing_self = g->outer;
    lf__close_done(g->r, g->me, g->fd, g->own_fd);
}

static inline void lf__call_close(lf_reactor *r, lf_handler *h, lf__closing *me, int fd,
                                  int own_fd, lf_handler *outer)
{
    lf__close_guard g;
    g.r = r;
    g.me = me;
    g.outer = outer;
    g.fd = fd;
    g.own_fd = own_fd;
    LF__CLEANUP_PUSH(lf__close_cancelled, &g);
    h->handle_close(h);
    LF__CLEANUP_POP(0);
}

static inline void lf__close(lf_reactor *r, lf_handler *h)
{
    lf__closing me;
    lf_handler *outer = lf__closing_self;
    int fd = h->fd, own_fd = !(h->lf__mask & LF_EV_KEEPFD);

    me.h = h;
    me.gen = h->lf__gen;
    pthread_mutex_lock(&r->lf__reglock);
    me.next = r->lf__closers;
    /* cppcheck-suppress autoVariables ; unlinked again below, before we return */
    r->lf__closers = &me;
    /* free to register from here on, but while `me` is linked only from inside its
     * own handle_close (lf__register looks at lf__closing) */
    lf__store(&h->lf__r, (void *)NULL, release);
    pthread_mutex_unlock(&r->lf__reglock);
    lf__closing_self = h;
    if (h->handle_close)
        lf__call_close(r, h, &me, fd, own_fd, outer); /* may free h: not touched after */
    lf__closing_self = outer;
    lf__close_done(r, &me, fd, own_fd);
}

/* Three things hold a removed handler: the grace period after its removal (claims
 * that found it before may still touch it), its owner (LF__BUSY), and threads still
 * inside handle_event (LF__INSIDE: an owner, or a thread that returned the hold
 * early with lf_reactor_reactivate and is still running). Each lets go with one
 * atomic RMW on the state word; the one whose RMW leaves nothing holding it
 * (LF__CLOSABLE) queues the close. None of them can come back once the handler is
 * removed (LF__BUSY cannot be taken again, and only an owner enters), so exactly
 * one RMW sees it become closable. */

/* The owner of a removed handler lets go (its LF__BUSY). */
static inline void lf__letgo(lf_reactor *r, lf_handler *h)
{
    if (h->lf__mask & LF_EV_KEEPFD) {
        /* lf__remove may have kept the fd from new registrations while we owned h
         * (our re-arm could have modified theirs): free it now */
        pthread_mutex_lock(&r->lf__reglock);
        if (lf__slot(r, h->fd) == lf__closing_mark(h))
            lf__slot_set(r, h->fd, NULL);
        pthread_mutex_unlock(&r->lf__reglock);
    }
    /* acq_rel: our accesses to h happen before the close, which may free it */
    if (LF__CLOSABLE(lf__fetch_and(&h->lf__state, ~LF__BUSY, acq_rel) & ~LF__BUSY))
        (void)lf__enqueue(r, h, LF__ITEM_CLOSE);
}

/* liburcu's call_rcu thread, a grace period after lf__remove: no claim can reach h
 * any more. Our code only (no user code runs on liburcu's threads). */
static inline void lf__grace_done(struct rcu_head *head)
{
    lf_handler *h = (lf_handler *)(void *)((char *)head - offsetof(lf_handler, lf__rcu));
    lf_reactor *r;
    LF__GP_RECLAIM();
    r = (lf_reactor *)lf__load(&h->lf__r, relaxed); /* first: once our bit is in, h may go */
    if (LF__CLOSABLE(lf__fetch_or(&h->lf__state, LF__GRACE, acq_rel) | LF__GRACE))
        (void)lf__enqueue(r, h, LF__ITEM_CLOSE); /* nobody holds it: close it now */
    LF__GP_READER_DONE(); /* lf_reactor_destroy's barrier waits for this */
}

/* The owner hands the dispatch to the ready queue (a later turn runs it), or, if h
 * was removed meanwhile, lets go of it. */
static inline void lf__queue_dispatch(lf_reactor *r, lf_handler *h)
{
    if (!lf__enqueue(r, h, LF__ITEM_RUN))
        lf__letgo(r, h);
}

/* ---- release: the owner is done with a dispatch. Re-arm the handle, then either
 * hand the next dispatch to the queue (more events came meanwhile: one event per
 * turn) or clear LF__BUSY. The re-arm comes first, so an event that fires in between
 * finds us still busy and leaves its bits for the check below. */
static inline void lf__release_as(lf_reactor *r, lf_handler *h, int drained)
{
    uint32_t old = lf__load(&h->lf__state, seq_cst);
    if (old & LF__REMOVED) {
        lf__letgo(r, h);
        return;
    }
    lf__be_rearm(r, h, drained);
    old = lf__load(&h->lf__state, relaxed);
    for (;;) {
        if (old & LF__REMOVED) {
            lf__letgo(r, h);
            return;
        }
        if ((old & LF__PENDING) && !(old & LF__SUSPENDED)) {
            lf__queue_dispatch(r, h); /* still ours: the queue takes over the ownership */
            return;
        }
        if (lf__cas(&h->lf__state, &old, old & ~LF__BUSY))
            return;
    }
}

static inline void lf__release(lf_reactor *r, lf_handler *h)
{
    lf__release_as(r, h, 0);
}

/* ---- dispatch: the owner runs h once with everything pending. */

/* After handle_event returned rc: the owner's part, or the last hold's. */
static inline void lf__run_done(lf_reactor *r, lf_handler *h, int rc)
{
    if (lf__dispatching == h) {
        lf__fetch_sub(&h->lf__state, LF__INSIDE_ONE, relaxed); /* LF__BUSY still holds it */
        if (rc == LF_REMOVE)
            (void)lf__remove(r, h); /* ENOENT: it removed itself already */
        /* LF_KEEP, LF_DRAINED, or LF_RESUMED without a resume */
        lf__release_as(r, h, rc == LF_DRAINED);
    } else if (LF__CLOSABLE(lf__fetch_sub(&h->lf__state, LF__INSIDE_ONE, acq_rel) - LF__INSIDE_ONE)) {
        /* it reactivated itself (LF_RESUMED) and was removed meanwhile: we were the
         * last thing holding it */
        (void)lf__enqueue(r, h, LF__ITEM_CLOSE);
    }
}

/* CANCELLATION inside handle_event: the handler is removed, as if it had returned
 * LF_REMOVE (one that reactivated itself may be running on another thread by now:
 * removed all the same), and its handle_close comes as for any removal. */
typedef struct LF__RCFG(lf__event_guard) {
    lf_reactor *r;
    lf_handler *h, *outer;
} lf__event_guard;

static inline void lf__event_cancelled(void *arg)
{
    lf__event_guard *g = (lf__event_guard *)arg;
    lf__fetch_add(&g->r->lf__n_dispatched, 1ULL, relaxed); /* a call, if not a whole one */
    lf__fetch_add(&g->r->lf__n_cancelled, 1ULL, relaxed);
    if (lf__dispatching != g->h)
        (void)lf__remove(g->r, g->h); /* our LF__INSIDE hold keeps it alive */
    lf__run_done(g->r, g->h, LF_REMOVE);
    lf__dispatching = g->outer;
}

static inline int lf__call_event(lf_reactor *r, lf_handler *h, uint32_t events, lf_handler *outer)
{
    lf__event_guard g;
    int rc;
    g.r = r;
    g.h = h;
    g.outer = outer;
    LF__CLEANUP_PUSH(lf__event_cancelled, &g);
    rc = h->handle_event(h, h->fd, events);
    LF__CLEANUP_POP(0);
    return rc;
}

static inline void lf__run(lf_reactor *r, lf_handler *h)
{
    uint32_t st = lf__load(&h->lf__state, relaxed), events;
    lf_handler *outer = lf__dispatching;
    int rc;

    for (;;) {
        if (st & LF__REMOVED) {
            lf__letgo(r, h); /* removed after this dispatch was claimed: do not start it */
            return;
        }
        if (st & LF__SUSPENDED) {
            /* deactivated after this dispatch was claimed: do not start it. Give the
             * ownership back and leave the events pending for lf_reactor_reactivate */
            if (lf__cas(&h->lf__state, &st, st & ~LF__BUSY))
                return;
            continue;
        }
        if (lf__cas(&h->lf__state, &st, st & ~LF__PENDING))
            break;
    }
    /* what the handler asks for now: an event harvested before lf_reactor_modify
     * dropped its kind is not handed on (LF_EV_CLOSE always is) */
    events = st & LF__PENDING & (lf__load(&h->lf__want, relaxed) | ~(LF_EV_READ | LF_EV_WRITE));
    if (events == 0) {
        lf__release(r, h);
        return;
    }
    if (h->lf__signalfd && (events & LF_EV_READ))
        events = (events & ~LF_EV_READ) | LF_EV_SIGNAL;
    lf__dispatching = h;
    lf__fetch_add(&h->lf__state, LF__INSIDE_ONE, relaxed); /* we own it: nothing waits yet */
    rc = lf__call_event(r, h, events, outer);
    lf__fetch_add(&r->lf__n_dispatched, 1ULL, relaxed);
    lf__run_done(r, h, rc);
    lf__dispatching = outer;
}

/* ---- claim, then dispatch (the processing role, after the promotion). An I/O
 * event names its handler by fd and generation: look it up and take its dispatch
 * inside one short read-side section; from then on our ownership keeps h alive, so
 * handle_event runs outside any section. A queue entry is owned already. */
static inline void lf__dispatch(lf_reactor *r, lf_event *ev)
{
    lf_handler *h = (lf_handler *)ev->ptr;
    if (h == NULL) {
        int mine = 0;
        lf__rcu_enter();
        lf__read_lock();
        h = lf__lookup(r, ev->fd);
        if (h == NULL || h->lf__gen != (uint32_t)ev->u64)
            lf__fetch_add(&r->lf__n_stale, 1ULL, relaxed); /* removed, maybe replaced */
        else if (!(mine = lf__post(h, ev->events | LF__FIRED)))
            lf__fetch_add(&r->lf__n_deferred, 1ULL, relaxed); /* its owner takes the bits */
        lf__read_unlock();
        if (!mine)
            return;
    } else if (ev->u64 == LF__ITEM_CLOSE) {
        lf__close(r, h);
        return;
    }
    lf__run(r, h);
}

/* ---- wait: the one wait of every mode (single leader, LF_REACTOR_CONCURRENT's
 * waiters, a group's set leader, lf_reactor_turn). One event per call: a due timer
 * becomes a queue entry; the queue and the harvested I/O alternate, so neither can
 * starve the other. Returns 0 with *ev, EINTR (yield), ECANCELED (stopped),
 * ETIMEDOUT, or a backend error. */

/* CANCELLATION in the backend's wait. epoll may have reported handles (and taken
 * their one-shot arms) just before the cancel: each goes to the ready queue, owned
 * as a claim in lf__dispatch would own it, so no event is lost. (The wake-up entry
 * is left: the descriptor is level-triggered and stays readable.) poll and select
 * take nothing before lf__take, which runs after the wait returned. */
typedef struct LF__RCFG(lf__wait_guard) {
    lf_reactor *r;
    lf__harvest *hv;
    int counted; /* counted in lf__sleeping */
} lf__wait_guard;

static inline void lf__wait_cancelled(void *arg)
{
    lf__wait_guard *g = (lf__wait_guard *)arg;
    lf_reactor *r = g->r;
    if (g->counted)
        lf__fetch_add(&r->lf__sleeping, -1, relaxed);
#if LF_REACTOR_BACKEND == LF_REACTOR_EPOLL
    {
        lf__harvest *hv = g->hv;
        for (int i = 0; i < hv->cap && hv->ev[i].events != 0; i++) {
            lf_event ev;
            lf_handler *h;
            int mine = 0;
            if (hv->ev[i].data.u64 == LF__WAKE_TAG)
                continue;
            lf__be_event(&hv->ev[i], &ev);
            lf__read_lock();
            h = lf__lookup(r, ev.fd);
            if (h != NULL && h->lf__gen == (uint32_t)ev.u64)
                mine = lf__post(h, ev.events | LF__FIRED);
            lf__read_unlock();
            if (mine)
                lf__queue_dispatch(r, h);
        }
        for (int i = 0; i < hv->cap && hv->ev[i].events != 0; i++)
            hv->ev[i].events = 0; /* (the next wait marks only hv->n of them) */
        hv->n = hv->i = 0;
    }
#endif
}

static inline int lf__be_wait_guarded(lf_reactor *r, lf__harvest *hv, int ms, int counted)
{
    lf__wait_guard g;
    int rc;
    g.r = r;
    g.hv = hv;
    g.counted = counted;
    long long start = LF_DEFER_NS ? lf__now_ns() : 0;
    LF__CLEANUP_PUSH(lf__wait_cancelled, &g);
    rc = lf__be_wait(r, hv, ms);
    LF__CLEANUP_POP(0);
    if (LF_DEFER_NS) {
        /* For lf__src_defer: what a wait that returned at once found may have come
         * at any time since the handles were last watched. If they went unwatched
         * for longer than a backlog's age (a handler ran long while its promotion
         * was deferred), it is stale: events come while the handlers run, and the
         * follower is woken to watch for them. If the wait blocked, what it found
         * came during it. */
        long long now = lf__now_ns();
        if (rc == 0 && hv->i < hv->n) {
            hv->at_ns = now;
            hv->stale = hv->end_ns != 0 && start - hv->end_ns > LF_REACTOR_BACKLOG_NS &&
                        now - start < LF_REACTOR_BACKLOG_NS;
        }
        hv->end_ns = now;
    }
    return rc;
}

/* Before a waiting thread blocks: count it as sleeping (so work posted from now on
 * wakes it), fire due timers, and look at the queue once more. Returns 0 with *ev
 * filled, ETIMEDOUT, or EAGAIN: block for *ms (-1: until woken), then uncount. */
static inline int lf__before_sleep(lf_reactor *r, lf_event *ev, long long until_dl, int *ms)
{
    long long now, next, until;

    lf__fetch_add(&r->lf__sleeping, 1, seq_cst);
    now = lf__now_ns();
    pthread_mutex_lock(&r->lf__tlock);
    next = lf__timers_expire(r, now);
    pthread_mutex_unlock(&r->lf__tlock);
    until = next < 0 ? until_dl : (until_dl < 0 || next < until_dl ? next : until_dl);
    if (lf__pop_queue(r, ev)) {
        lf__fetch_add(&r->lf__sleeping, -1, relaxed);
        return 0;
    }
    if (until_dl >= 0 && now >= until_dl) {
        lf__fetch_add(&r->lf__sleeping, -1, relaxed);
        return ETIMEDOUT;
    }
    *ms = lf__ms_until(until, now);
    return EAGAIN;
}

static inline int lf__wait(lf_reactor *r, lf__harvest *hv, lf_event *ev, long long until_dl)
{
    int looked = 0; /* past the deadline, the handles were looked at once */
    int rc, ms;

    hv->drained = 0;
    for (;;) {
        if (lf__load(&r->lf__stopped, relaxed))
            return ECANCELED;
        if (lf__load(&r->lf__yield, relaxed) && lf__exchange(&r->lf__yield, 0, seq_cst))
            return EINTR;
        lf__timers_due(r);
        hv->prefer_queue ^= 1;
        /* (a harvest that ends with this turn is handed out first: the kernel has
         * disarmed its one-shot handle, so an event left in it would be lost) */
        if (hv->prefer_queue && !(hv->transient && hv->i < hv->n) && lf__pop_queue(r, ev))
            break;
        if (lf__be_pop(r, hv, ev))
            break;
        /* an I/O turn with nothing harvested while the queue is busy: look at the
         * handles without blocking first, or handlers that keep notifying themselves
         * would keep everybody else's I/O from ever being harvested */
        if (!hv->prefer_queue && lf__queue_busy(r)) {
            if ((rc = lf__be_wait_guarded(r, hv, 0, 0)) != 0)
                return rc;
            if (lf__be_pop(r, hv, ev))
                break;
        }
        if (lf__pop_queue(r, ev))
            break;

        /* Nothing in hand: block, but not on a stop or yield whose kick lf__be_pop
         * drained above, after this turn looked at the flags. seq_cst pairs with the
         * kicker: it stores its flag and then tests kick_pending, the drain cleared
         * kick_pending and now we load the flags; so we see the flag, or it writes
         * the wake descriptor again. */
        if (lf__load(&r->lf__stopped, seq_cst))
            return ECANCELED;
        if (lf__load(&r->lf__yield, seq_cst) && lf__exchange(&r->lf__yield, 0, seq_cst))
            return EINTR;
        rc = lf__before_sleep(r, ev, until_dl, &ms);
        if (rc == 0)
            break;
        if (rc == ETIMEDOUT) {
            /* out of time: but look at the handles once without blocking first, so
             * that a deadline of now polls them (and a late turn sees what is ready) */
            if (looked)
                return ETIMEDOUT;
            looked = 1;
            if ((rc = lf__be_wait_guarded(r, hv, 0, 0)) != 0)
                return rc;
            continue;
        }
        rc = lf__be_wait_guarded(r, hv, ms, 1);
        lf__fetch_add(&r->lf__sleeping, -1, relaxed);
        if (rc)
            return rc;
    }
    /* pass the kick on (see >>wake): what woke us may have been meant for more */
    if (hv->drained)
        lf__kick_if_sleeping(r);
    return 0;
}

/* CANCELLATION of a turn's leader in its wait, or of its processing thread in the
 * dispatch (after their own cleanups): the role goes back to the pool. */
typedef struct LF__RCFG(lf__turn_guard) {
    lf_reactor *r;
    lf_follower *self;
    long long until_dl;
    int rc;
} lf__turn_guard;

static inline void lf__turn_cancelled(void *arg)
{
    lf__turn_guard *g = (lf__turn_guard *)arg;
    lf_pool_leave(&g->r->pool, g->self);
}

static inline void lf__turn_body(lf__turn_guard *g)
{
    lf_reactor *r = g->r;
    lf_event ev;
    int rc;

    memset(&ev, 0, sizeof ev);
    rc = lf__wait(r, &r->lf__hv, &ev, g->until_dl);
    if (rc == 0) {
        lf_pool_promote(&r->pool, g->self);
        lf__dispatch(r, &ev);
    } else if (rc == ECANCELED) {
        lf_pool_shutdown(&r->pool); /* a stop from a signal handler ends here */
    }
    g->rc = rc;
}

/* The turn of a thread that leads now. */
static inline int lf__turn_led(lf_reactor *r, lf_follower *self, long long until_dl)
{
    lf__turn_guard g;
    g.r = r;
    g.self = self;
    g.until_dl = until_dl;
    g.rc = 0;
    LF__CLEANUP_PUSH(lf__turn_cancelled, &g);
    lf__turn_body(&g);
    LF__CLEANUP_POP(0);
    lf_pool_leave(&r->pool, self);
    return g.rc;
}

/* ---- one whole turn on the calling thread, with its own follower record: lead,
 * wait, promote, dispatch, leave. LF_REACTOR_CONCURRENT has no leader slot: every
 * caller waits at once, each with its own harvest. */
static inline int lf__turn(lf_reactor *r, lf_follower *self, long long until_dl,
                           const struct timespec *deadline)
{
    int rc;

#if LF_REACTOR_BACKEND == LF_REACTOR_EPOLL
    if (r->lf__concurrent) {
        struct epoll_event one;
        lf__harvest hv;
        lf_event ev;
        memset(&ev, 0, sizeof ev);
        memset(&hv, 0, sizeof hv);
        memset(&one, 0, sizeof one); /* (lf__be_wait marks only what it used) */
        hv.ev = &one;
        hv.cap = 1;
        hv.transient = 1;
        /* the turns of all threads alternate queue-first and I/O-first together */
        hv.prefer_queue = (int)(lf__fetch_add(&r->lf__cturn, 1u, relaxed) & 1u);
        if ((rc = lf__wait(r, &hv, &ev, until_dl)) == 0)
            lf__dispatch(r, &ev);
        return rc;
    }
#endif
    if ((rc = lf_pool_lead(&r->pool, self, deadline)) != 0)
        return rc;
    return lf__turn_led(r, self, until_dl);
}

/* The lf_source that lf_reactor_run joins to the pool. */
static inline int lf__src_wait(void *ctx, lf_event *ev, const struct timespec *deadline)
{
    lf_reactor *r = (lf_reactor *)ctx;
    int rc = lf__wait(r, &r->lf__hv, ev, deadline ? lf__ts_ns(deadline) : -1);
    if (rc == ECANCELED)
        lf_pool_shutdown(&r->pool); /* a stop from a signal handler ends here */
    return rc;
}

static inline int lf__src_dispatch(void *ctx, lf_event *ev)
{
    lf__dispatch((lf_reactor *)ctx, ev);
    return 0;
}

/* DEFERRAL (lf.h): may the promotion after this wait leave its follower asleep, until
 * its tick or until we are back? Yes while what we hold is young: nothing harvested
 * and nothing queued, or a harvest younger than LF_REACTOR_BACKLOG_NS. Older, it is a
 * backlog, and the follower wakes at once to share it; and so it does after a harvest
 * that came after the handles went unwatched longer than that (stale, set by
 * lf__be_wait_guarded): events come while the handlers run. */
static inline int lf__src_defer(void *ctx)
{
    lf_reactor *r = (lf_reactor *)ctx;
    lf__harvest *hv = &r->lf__hv;
    if (hv->stale)
        return 0;
    if (hv->i >= hv->n && !lf__queue_busy(r))
        return 1;
    return lf__now_ns() - hv->at_ns < LF_REACTOR_BACKLOG_NS;
}

/* Called by lf_pool_shutdown under the pool lock: must not block. Sticky. */
static inline void lf__src_interrupt(void *ctx)
{
    lf__wake_stop((lf_reactor *)ctx);
}
/* ------------------------------------------------------------------ >>api */

/* A macro, not a function: static analysers then see the NULL check at each use. */
#define lf__reactor_ok(r) ((r) != NULL && (r)->lf__tag == LF__REACTOR_TAG)

/* Contract: any thread (not a signal handler). Blocks every signal while liburcu's
 * call_rcu worker is created, so that thread never takes a signal meant for a
 * signalfd or for you. flags: 0, or LF_REACTOR_CONCURRENT (epoll only; ENOTSUP with
 * poll/select). */
static inline int lf_reactor_init_flags(lf_reactor *r, unsigned flags)
{
    int rc;
    sigset_t all, old;

    if (r == NULL || (flags & ~LF_REACTOR_CONCURRENT))
        return EINVAL;
#if LF_REACTOR_BACKEND != LF_REACTOR_EPOLL
    if (flags & LF_REACTOR_CONCURRENT)
        return ENOTSUP;
#endif
    if ((rc = lf__rcu_key_ready()) != 0)
        return rc;
    memset((void *)r, 0, sizeof *r);
    r->lf__concurrent = (flags & LF_REACTOR_CONCURRENT) != 0;
    if ((rc = lf_pool_init(&r->pool)) != 0)
        return rc;
    r->src.ctx = r;
    r->src.wait = lf__src_wait;
    r->src.dispatch = lf__src_dispatch;
    r->src.interrupt = lf__src_interrupt;
    lf__store(&r->lf__next_timer, -1LL, relaxed);
    r->lf__theap.before = lf__timer_before;
    if ((r->lf__tab = lf__table_new(64)) == NULL) {
        rc = ENOMEM;
        goto fail_pool;
    }
    if ((rc = lf__wake_open(r)) != 0)
        goto fail_table;
    if ((rc = lf__be_open(r)) != 0)
        goto fail_wake;
    pthread_mutex_init(&r->lf__reglock, NULL);
    pthread_mutex_init(&r->lf__qlock, NULL);
    pthread_mutex_init(&r->lf__tlock, NULL);
    lf__rcu_enter();
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    (void)LF__RCU(get_default_call_rcu_data)();
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    r->lf__tag = LF__REACTOR_TAG;
    return 0;
fail_wake:
    lf__wake_close(r);
fail_table:
    free(r->lf__tab);
fail_pool:
    lf_pool_destroy(&r->pool);
    return rc;
}

static inline int lf_reactor_init(lf_reactor *r)
{
    return lf_reactor_init_flags(r, 0);
}

/* lf__reglock held: h is in the middle of its handle_close on another thread (a
 * record freed there and reused since has another generation: it is free). */
static inline int lf__closing_now(lf_reactor *r, lf_handler *h)
{
    for (lf__closing *c = r->lf__closers; c != NULL; c = c->next)
        if (c->h == h && c->gen == h->lf__gen && lf__closing_self != h)
            return 1;
    return 0;
}

static inline int lf__register(lf_reactor *r, lf_handler *h, int fd, uint32_t events, int sig)
{
    int rc;

    if (!lf__reactor_ok(r) || h == NULL || h->handle_event == NULL ||
        (events & (LF_EV_READ | LF_EV_WRITE)) == 0 ||
        (events & ~(LF_EV_READ | LF_EV_WRITE | LF_EV_EDGE | LF_EV_KEEPFD)))
        return EINVAL;
    if (fd < 0 || fcntl(fd, F_GETFD) == -1)
        return EBADF;
    {
        /* a regular file or a directory is always "ready": epoll refuses it (EPERM),
         * and so do poll and select, whose handler would otherwise spin */
        struct stat st;
        if (fstat(fd, &st) == 0 && (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)))
            return EPERM;
    }
#if LF_REACTOR_BACKEND == LF_REACTOR_SELECT
    if (fd >= FD_SETSIZE)
        return EINVAL; /* select cannot watch it: use poll or epoll */
#endif
    if (lf__load(&r->lf__stopped, relaxed))
        return ECANCELED;
    lf__rcu_enter();
    pthread_mutex_lock(&r->lf__reglock);
    /* acquire: pairs with the release in lf__close, whose accesses to h are then done
     * before we reuse it. A slot that holds a closing mark is taken too: its fd is
     * not closed yet. */
    if (lf__slot(r, fd) != NULL || lf__load(&h->lf__r, acquire) != NULL || lf__closing_now(r, h)) {
        pthread_mutex_unlock(&r->lf__reglock);
        return EEXIST;
    }
    if ((rc = lf__table_fit(r, fd)) != 0) {
        pthread_mutex_unlock(&r->lf__reglock);
        return rc;
    }
    if (++r->lf__gen == 0)
        r->lf__gen = 1;
    h->fd = fd;
    h->lf__gen = r->lf__gen;
    h->lf__mask = events;
    lf__store(&h->lf__want, events & (LF_EV_READ | LF_EV_WRITE), relaxed);
    lf__store(&h->lf__state, 0u, relaxed);
    h->lf__qprev = h->lf__qnext = NULL;
    h->lf__queued = 0;
    h->lf__timers = NULL;
    h->lf__signalfd = sig;
    lf__store(&h->lf__r, (void *)r, relaxed); /* published with the table slot below */
    /* The slot before the backend: once the backend watches fd, a leader may harvest
     * its first event at once (an accepted socket often has data already), and that
     * event must find h, or it is dropped as stale and the one-shot handle never
     * fires again. A failed add takes the slot back; nothing can have been dispatched
     * for it, since no event of this generation exists. */
    lf__slot_set(r, fd, h);
    if ((rc = lf__be_add(r, h)) != 0) {
        lf__slot_set(r, fd, NULL);
        lf__store(&h->lf__r, (void *)NULL, relaxed);
        pthread_mutex_unlock(&r->lf__reglock);
        return rc; /* e.g. EPERM: epoll cannot watch regular files */
    }
    pthread_mutex_unlock(&r->lf__reglock);
    lf__fetch_add(&r->lf__n_registered, 1ULL, relaxed);
    lf__kick_if_sleeping(r); /* poll/select: a blocked leader must add it */
    return 0;
}

/* Contract: any thread, any hook; `h` zeroed or closed (see HANDLERS). */
static inline int lf_reactor_register(lf_reactor *r, lf_handler *h, int fd, uint32_t events)
{
    return lf__register(r, h, fd, events, 0);
}

/* Contract: any thread. Signals in `set` arrive as LF_EV_SIGNAL events for h, through
 * a signalfd the reactor owns (h->fd; read struct signalfd_siginfo records from it).
 * Block those signals in every thread first (pthread_sigmask before creating any),
 * or the kernel delivers them the old way. Linux only: ENOSYS elsewhere. */
static inline int lf_reactor_register_signal(lf_reactor *r, lf_handler *h, const sigset_t *set)
{
#ifdef LF__LINUX
    int fd, rc;
    if (!lf__reactor_ok(r) || h == NULL || set == NULL)
        return EINVAL;
    if ((fd = signalfd(-1, set, SFD_NONBLOCK | SFD_CLOEXEC)) < 0)
        return errno;
    if ((rc = lf__register(r, h, fd, LF_EV_READ, 1)) != 0) {
        int cs = lf__nocancel_begin();
        close(fd);
        lf__nocancel_end(cs);
    }
    return rc;
#else
    (void)r;
    (void)h;
    (void)set;
    return ENOSYS;
#endif
}

static inline int lf__remove(lf_reactor *r, lf_handler *h)
{
    lf_timer *t;
    uint32_t old;
    int owned = 0, other_owner;

    pthread_mutex_lock(&r->lf__reglock);
    if (lf__load(&h->lf__r, relaxed) != (void *)r || lf__lookup(r, h->fd) != h) {
        pthread_mutex_unlock(&r->lf__reglock);
        return ENOENT;
    }
    old = lf__fetch_or(&h->lf__state, LF__REMOVED, seq_cst); /* no dispatch may start now */
    lf__be_del(r, h);
    pthread_mutex_lock(&r->lf__qlock);
    if (h->lf__queued) { /* a dispatch waiting in the queue: it is ours to let go now */
        lf__unqueue(r, h);
        owned = 1;
    }
    pthread_mutex_unlock(&r->lf__qlock);
    /* The slot: a closing mark while the fd may still be used on our behalf (we close
     * it later, or, LF_EV_KEEPFD, another thread owns a dispatch and will re-arm or
     * read it), else free at once for a new registration of the fd. */
    other_owner = (old & LF__BUSY) && !owned && lf__dispatching != h;
    lf__slot_set(r, h->fd, (!(h->lf__mask & LF_EV_KEEPFD) || other_owner) ? lf__closing_mark(h) : NULL);
    pthread_mutex_unlock(&r->lf__reglock);

    /* every timer of h out of the heap; h's list goes whole */
    pthread_mutex_lock(&r->lf__tlock);
    for (t = h->lf__timers; t != NULL; t = t->lf__next) {
        lf__heap_remove(&r->lf__theap, &t->lf__node);
        lf__store(&t->lf__fired, 0ULL, relaxed); /* cancelled: forgets, as timer_cancel */
        t->lf__h = NULL;
        lf__store(&t->lf__r, (void *)NULL, relaxed);
    }
    h->lf__timers = NULL;
    pthread_mutex_unlock(&r->lf__tlock);

    lf__fetch_add(&r->lf__n_removed, 1ULL, relaxed);
    /* a claim that found h before the slot changed may still touch its state: the
     * close waits for a grace period (and for the owner, if any) */
    LF__GP_READER_DONE();
    LF__RCU(call_rcu)(&h->lf__rcu, lf__grace_done);
    if (owned)
        lf__letgo(r, h);
    return 0;
}

/* Contract: any thread, any hook, also h's own handle_event. */
static inline int lf_reactor_remove(lf_reactor *r, lf_handler *h)
{
    if (!lf__reactor_ok(r) || h == NULL)
        return EINVAL;
    lf__rcu_enter();
    return lf__remove(r, h);
}

/* Under the read lock: h is registered in r (and so alive until the section ends). */
static inline int lf__registered(lf_reactor *r, lf_handler *h)
{
    return lf__load(&h->lf__r, relaxed) == (void *)r && lf__lookup(r, h->fd) == h;
}

/* Contract: any thread, any hook, also h's own handle_event. */
static inline int lf_reactor_deactivate(lf_reactor *r, lf_handler *h)
{
    int rc = 0;
    if (!lf__reactor_ok(r) || h == NULL)
        return EINVAL;
    lf__rcu_enter();
    lf__read_lock();
    if (!lf__registered(r, h))
        rc = ENOENT;
    else
        lf__fetch_or(&h->lf__state, LF__SUSPENDED, seq_cst);
    lf__read_unlock();
    return rc;
}

/* Contract: any thread, any hook. From h's own handle_event it ends the dispatch's
 * exclusive hold early (return LF_RESUMED afterwards and touch nothing of h again). */
static inline int lf_reactor_reactivate(lf_reactor *r, lf_handler *h)
{
    int rc = 0;
    if (!lf__reactor_ok(r) || h == NULL)
        return EINVAL;
    lf__rcu_enter();
    lf__read_lock();
    if (!lf__registered(r, h)) {
        rc = ENOENT;
    } else if (lf__dispatching == h) {
        lf__dispatching = NULL; /* tells lf__run the hold is released */
        lf__fetch_and(&h->lf__state, ~LF__SUSPENDED, seq_cst);
        lf__release(r, h);
    } else {
        lf__fetch_and(&h->lf__state, ~LF__SUSPENDED, seq_cst);
        if (lf__claim_pending(h))
            lf__queue_dispatch(r, h);
    }
    lf__read_unlock();
    return rc;
}

/* Contract: any thread, any hook, also h's own handle_event (where it costs no system
 * call and no lock: the re-arm after the dispatch applies it). */
static inline int lf_reactor_modify(lf_reactor *r, lf_handler *h, uint32_t events)
{
    int rc = 0;
    if (!lf__reactor_ok(r) || h == NULL || (events & ~(LF_EV_READ | LF_EV_WRITE)))
        return EINVAL;
    lf__rcu_enter();
    if (lf__dispatching == h) {
        /* its own dispatch holds it: the handle is disarmed (one-shot, poll/select)
         * or left alone (edge) until lf__release re-arms it, with the new interest */
        lf__read_lock();
        if (!lf__registered(r, h))
            rc = ENOENT;
        else if (h->lf__signalfd)
            rc = EINVAL; /* its interest is its signal set */
        else {
            uint32_t old = lf__exchange(&h->lf__want, events, seq_cst);
#if LF_REACTOR_BACKEND == LF_REACTOR_EPOLL
            if (old != events) /* (the same interest again costs nothing) */
                lf__fetch_or(&h->lf__state, LF__DIRTY, seq_cst);
#else
            (void)old;
#endif
        }
        lf__read_unlock();
        return rc;
    }
    /* Another thread: under the registration lock, so h cannot be removed (and, with
     * LF_EV_KEEPFD, its fd given to a new registration) while we change its watch. */
    pthread_mutex_lock(&r->lf__reglock);
    if (lf__load(&h->lf__r, relaxed) != (void *)r || lf__lookup(r, h->fd) != h) {
        rc = ENOENT;
    } else if (h->lf__signalfd) {
        rc = EINVAL;
    } else {
        uint32_t old = lf__exchange(&h->lf__want, events, seq_cst);
#if LF_REACTOR_BACKEND == LF_REACTOR_EPOLL
        /* also while a dispatch runs or an event is on its way: the handle may then
         * report once more, and the ownership rule gives that report to the owner,
         * as any event that comes while the handler is busy */
        if (old != events && (rc = lf__be_mod(r, h)) != 0)
            lf__store(&h->lf__want, old, seq_cst); /* still watched as before */
#else
        /* a leader blocked now waits with the old interest: wake it to collect again
         * (pairs with lf__sleeping, as lf__be_rearm) */
        if (old != events)
            lf__kick_if_sleeping(r);
#endif
    }
    pthread_mutex_unlock(&r->lf__reglock);
    return rc;
}

/* Contract: any thread, any hook; never waits for a handler or a descriptor (it may
 * take the ready queue's lock for a few instructions). */
static inline int lf_reactor_notify(lf_reactor *r, lf_handler *h, uint32_t events)
{
    int rc = 0;
    if (!lf__reactor_ok(r) || h == NULL || events == 0 || (events & ~LF_EV_ALL))
        return EINVAL;
    if (lf__load(&r->lf__stopped, relaxed))
        return ECANCELED; /* nobody would deliver it */
    lf__rcu_enter();
    lf__read_lock();
    if (!lf__registered(r, h)) {
        rc = ENOENT;
    } else {
        lf__fetch_add(&r->lf__n_notified, 1ULL, relaxed);
        if (lf__post(h, events))
            lf__queue_dispatch(r, h);
        else
            lf__fetch_add(&r->lf__n_deferred, 1ULL, relaxed);
    }
    lf__read_unlock();
    return rc;
}

/* Contract: any thread, any hook; t initialised with lf_timer_init, h registered here. */
static inline int lf_reactor_timer_start(lf_reactor *r, lf_timer *t, lf_handler *h,
                                         long long after_ns, long long period_ns)
{
    long long first, when;
    int earliest;
    void *owner;
    if (!lf__reactor_ok(r) || t == NULL || h == NULL || after_ns < 0 || period_ns < 0)
        return EINVAL;
    when = lf__ns_add(lf__now_ns(), after_ns); /* LLONG_MAX: never. (No clock under the lock) */
    if ((owner = lf__load(&t->lf__r, relaxed)) != NULL && owner != (void *)r)
        return EINVAL; /* armed in another reactor: cancel it there first */
    if (lf__load(&r->lf__stopped, relaxed))
        return ECANCELED;
    lf__rcu_enter();
    lf__read_lock();
    pthread_mutex_lock(&r->lf__tlock);
    /* checked under the timer lock: lf__remove marks h before it cancels h's timers
     * under this lock, so a timer is never left armed for a removed handler */
    if (!lf__registered(r, h) || (lf__load(&h->lf__state, seq_cst) & LF__REMOVED)) {
        pthread_mutex_unlock(&r->lf__tlock);
        lf__read_unlock();
        return ENOENT;
    }
    lf__store(&t->lf__fired, 0ULL, relaxed); /* a restart forgets what was not taken */
    if (t->lf__h == h && t->lf__period == 0 && period_ns == 0 && when >= t->lf__when) {
        /* a one-shot restarted later (an idle timeout pushed on every read, a call's
         * deadline): it keeps its place, no heap work; lf__timers_expire re-sorts it
         * if its old time comes first. Never a new earliest: no wake-up. */
        t->lf__due = when;
        pthread_mutex_unlock(&r->lf__tlock);
        lf__read_unlock();
        return 0;
    }
    if (t->lf__h)
        lf__timer_unarm(r, t);
    first = lf__load(&r->lf__next_timer, relaxed);
    t->lf__when = t->lf__due = when;
    t->lf__period = period_ns;
    t->lf__h = h;
    lf__store(&t->lf__r, (void *)r, relaxed);
    t->lf__prev = NULL;
    t->lf__next = h->lf__timers;
    if (h->lf__timers)
        h->lf__timers->lf__prev = t;
    h->lf__timers = t;
    lf__timer_insert(r, t);
    /* every sleeper sleeps at most until the earliest timer it saw (under this lock):
     * only a new earliest one needs a wake-up */
    earliest = first < 0 || t->lf__when < first;
    pthread_mutex_unlock(&r->lf__tlock);
    lf__read_unlock();
    if (earliest)
        lf__kick_if_sleeping(r);
    return 0;
}

/* Contract: any thread, any hook. ENOENT if t is not armed (expired one-shot, or
 * cancelled). */
static inline int lf_reactor_timer_cancel(lf_reactor *r, lf_timer *t)
{
    int rc = 0;
    void *owner;
    if (!lf__reactor_ok(r) || t == NULL)
        return EINVAL;
    if ((owner = lf__load(&t->lf__r, relaxed)) != NULL && owner != (void *)r)
        return EINVAL; /* armed in another reactor */
    pthread_mutex_lock(&r->lf__tlock);
    if (t->lf__h)
        lf__timer_unarm(r, t);
    else
        rc = ENOENT;
    /* forgets what was not taken, also of an expired one-shot (ENOENT): after
     * cancel, lf_timer_fired says 0 until t is started again */
    lf__store(&t->lf__fired, 0ULL, relaxed);
    pthread_mutex_unlock(&r->lf__tlock);
    return rc;
}

/* Count the caller as running r, unless a group leads r (EBUSY). The group's init
 * sets lf__group and then looks at lf__running; we count ourselves and then look at
 * lf__group (both seq_cst): one of the two sees the other. */
static inline int lf__enter(lf_reactor *r)
{
    lf__fetch_add(&r->lf__running, 1, seq_cst);
    if (lf__load(&r->lf__group, seq_cst) != NULL) {
        lf__fetch_add(&r->lf__running, -1, seq_cst);
        return EBUSY;
    }
    lf__rcu_enter();
    return 0;
}

static inline void lf__leave(lf_reactor *r)
{
    lf__fetch_add(&r->lf__running, -1, seq_cst);
}

/* CANCELLATION of a thread inside lf_reactor_run, _handle_events or _turn (after
 * the pool's and the turn's cleanups): it stops counting as running r. */
typedef struct LF__RCFG(lf__entry_guard) {
    lf_reactor *r;
    lf_follower *self;
    int own; /* self was made for the call (not the caller's record) */
    const struct timespec *deadline;
    int rc;
} lf__entry_guard;

static inline void lf__entry_cancelled(void *arg)
{
    lf__entry_guard *g = (lf__entry_guard *)arg;
    if (g->own)
        lf_follower_destroy(g->self);
    lf__leave(g->r);
}

static inline void lf__run_loop(lf__entry_guard *g)
{
    lf_reactor *r = g->r;
    int rc;
    if (r->lf__concurrent) {
        long long until = g->deadline ? lf__ts_ns(g->deadline) : -1;
        do
            rc = lf__turn(r, g->self, until, g->deadline);
        while (rc == 0 || rc == EINTR);
    } else {
        rc = lf__pool_join_as(&r->pool, g->self, &r->src, g->deadline,
                              LF_DEFER_NS ? lf__src_defer : NULL);
    }
    g->rc = rc;
}

static inline void lf__events_loop(lf__entry_guard *g)
{
    int rc;
    do /* a wake meant for another thread's turn: not ours to report */
        rc = lf__turn(g->r, g->self, g->deadline ? lf__ts_ns(g->deadline) : -1, g->deadline);
    while (rc == EINTR);
    g->rc = rc;
}

static inline void lf__turn_once(lf__entry_guard *g)
{
    g->rc = lf__turn(g->r, g->self, g->deadline ? lf__ts_ns(g->deadline) : -1, g->deadline);
}

/* Runs loop(g) on r, entered (lf__enter), with the cleanup above around it; leaves. */
static inline int lf__entered(lf_reactor *r, lf_follower *self, int own,
                              const struct timespec *deadline, void (*loop)(lf__entry_guard *))
{
    lf__entry_guard g;
    g.r = r;
    g.self = self;
    g.own = own;
    g.deadline = deadline;
    g.rc = 0;
    LF__CLEANUP_PUSH(lf__entry_cancelled, &g);
    loop(&g);
    LF__CLEANUP_POP(0);
    lf__leave(r);
    return g.rc;
}

/* Contract: any thread, any hook (nested); blocks until stop (ECANCELED) or the
 * deadline (ETIMEDOUT). */
static inline int lf_reactor_run(lf_reactor *r, const struct timespec *deadline)
{
    lf_follower self;
    int rc;
    if (!lf__reactor_ok(r) || !lf__deadline_ok(deadline))
        return EINVAL;
    if ((rc = lf__enter(r)) != 0)
        return rc;
    if ((rc = lf_follower_init(&self, 0)) != 0) {
        lf__leave(r);
        return rc;
    }
    rc = lf__entered(r, &self, 1, deadline, lf__run_loop);
    lf_follower_destroy(&self);
    return rc;
}

/* Contract: any thread, any hook (nested). One turn with the caller's follower
 * record; EINTR after lf_reactor_wake(r, self). self NULL: only say whether a turn
 * could run (0, EINVAL, ENOTSUP, EBUSY, ECANCELED). */
static inline int lf_reactor_turn(lf_reactor *r, lf_follower *self, const struct timespec *deadline)
{
    int rc;
    if (!lf__reactor_ok(r) || !lf__deadline_ok(deadline))
        return EINVAL;
    if (r->lf__concurrent)
        return ENOTSUP; /* no leader slot: lf_reactor_wake could not single self out */
    if (self == NULL) {
        /* after stop a turn returns ECANCELED at once: say so without taking one
         * (lf_bound.h asks before every write, so that no request goes out that
         * nobody would read the reply to), and before EBUSY: a stopped reactor put
         * in a group is stopped all the same */
        if (lf__load(&r->lf__stopped, seq_cst))
            return ECANCELED;
        return lf__load(&r->lf__group, seq_cst) != NULL ? EBUSY : 0;
    }
    if ((rc = lf__enter(r)) != 0)
        return rc;
    return lf__entered(r, self, 0, deadline, lf__turn_once);
}

/* Contract: any thread, any hook (nested); at most one event, as leader then
 * processing thread. */
static inline int lf_reactor_handle_events(lf_reactor *r, const struct timespec *deadline)
{
    lf_follower self;
    int rc;
    if (!lf__reactor_ok(r) || !lf__deadline_ok(deadline))
        return EINVAL;
    if ((rc = lf__enter(r)) != 0)
        return rc;
    if ((rc = lf_follower_init(&self, 0)) != 0) {
        lf__leave(r);
        return rc;
    }
    rc = lf__entered(r, &self, 1, deadline, lf__events_loop);
    lf_follower_destroy(&self);
    return rc;
}

/* Contract: any thread, any hook. Never blocks (the pool lock only). */
static inline int lf_reactor_wake(lf_reactor *r, lf_follower *f)
{
    if (!lf__reactor_ok(r) || f == NULL)
        return EINVAL;
    if (r->lf__concurrent)
        return ENOTSUP;
    /* parked: the pool wakes exactly it; leading (or processing): its wait, or its
     * next lead, returns EINTR */
    if (lf_pool_notify(&r->pool, f) == EBUSY)
        lf__wake_yield(r);
    return 0;
}

/* Contract: any thread, any hook, a signal handler (async-signal-safe). Final. */
static inline int lf_reactor_stop(lf_reactor *r)
{
    if (!lf__reactor_ok(r))
        return EINVAL;
    /* the waiting thread that sees the flag releases the pool's followers
     * (lf_pool_shutdown takes a lock, which a signal handler must not) */
    lf__wake_stop(r);
    return 0;
}

/* Run what the queue holds until it is empty (lf_reactor_destroy). Returns how
 * many entries ran. */
static inline int lf__drain_queue(lf_reactor *r)
{
    lf_event ev;
    int n = 0;
    while (lf__pop_queue(r, &ev)) {
        lf__dispatch(r, &ev);
        n++;
    }
    return n;
}

/* CANCELLATION inside a handle_close that lf_reactor_destroy runs: the close itself
 * completes (lf__close_cancelled), and the destroy can be called again to finish. */
static inline void lf__destroy_cancelled(void *arg)
{
    ((lf_reactor *)arg)->lf__destroying = 0;
}

/* Remove every handler and run every close, until none is left. */
static inline void lf__destroy_handlers(lf_reactor *r)
{
    for (;;) {
        lf__table *t = r->lf__tab;
        int removed = 0, ran;
        for (int fd = 0; fd < t->n; fd++) {
            lf_handler *h = lf__lookup(r, fd);
            if (h)
                removed += lf__remove(r, h) == 0;
        }
        /* every grace period after those removals ended: each close is queued (no
         * thread owns a dispatch any more), and old tables are freed */
        {
            int cs = lf__nocancel_begin(); /* (no hook runs in it) */
            LF__RCU(barrier)();
            lf__nocancel_end(cs);
        }
        LF__GP_RECLAIM();
        ran = lf__drain_queue(r); /* handle_close hooks, which may remove more */
        if (removed == 0 && ran == 0)
            break;
    }
}

/* Contract: any thread, no hook of this reactor (EBUSY), no thread running it. */
static inline int lf_reactor_destroy(lf_reactor *r)
{
    int rc;
    if (!lf__reactor_ok(r))
        return EINVAL;
    if (r->lf__destroying || lf__load(&r->lf__running, seq_cst) != 0 ||
        lf__load(&r->lf__group, seq_cst) != NULL)
        return EBUSY;
    /* a destroy cancelled in a hook destroyed the pool already: go on from there */
    if (!r->lf__destroy_begun && (rc = lf_pool_destroy(&r->pool)) != 0)
        return rc; /* EBUSY: threads still run it */
    r->lf__destroy_begun = 1;
    r->lf__destroying = 1;
    lf__store(&r->lf__stopped, 1, seq_cst); /* hooks below: no new registration */
    lf__rcu_enter();
    LF__CLEANUP_PUSH(lf__destroy_cancelled, r);
    lf__destroy_handlers(r);
    LF__CLEANUP_POP(0);
    r->lf__tag = 0;
    free(r->lf__tab);
    lf__be_close(r);
    lf__wake_close(r);
    pthread_mutex_destroy(&r->lf__reglock);
    pthread_mutex_destroy(&r->lf__qlock);
    pthread_mutex_destroy(&r->lf__tlock);
    return 0;
}

LF__STATS_NAME_BEGIN
static inline int lf_reactor_stats(lf_reactor *r, struct lf_reactor_stats *out)
{
    if (out == NULL)
        return EINVAL;
    memset((void *)out, 0, sizeof *out); /* defined on error too */
    if (!lf__reactor_ok(r))
        return EINVAL;
    out->dispatched = lf__load(&r->lf__n_dispatched, relaxed);
    out->stale = lf__load(&r->lf__n_stale, relaxed);
    out->deferred = lf__load(&r->lf__n_deferred, relaxed);
    out->timers = lf__load(&r->lf__n_timers, relaxed);
    out->notified = lf__load(&r->lf__n_notified, relaxed);
    out->kicks = lf__load(&r->lf__n_kicks, relaxed);
    out->registered = lf__load(&r->lf__n_registered, relaxed);
    out->removed = lf__load(&r->lf__n_removed, relaxed);
    out->closed = lf__load(&r->lf__n_closed, relaxed);
    out->rearm_failed = lf__load(&r->lf__n_rearm_failed, relaxed);
    out->rearmed = lf__load(&r->lf__n_rearmed, relaxed);
    out->cancelled = lf__load(&r->lf__n_cancelled, relaxed);
    out->waiting = (unsigned)lf__load(&r->lf__sleeping, relaxed);
    return lf_pool_stats(&r->pool, &out->pool);
}
LF__STATS_NAME_END

/* ------------------------------------------------------------------ >>fork
 * liburcu's call_rcu thread (and, with LF_RCU_BP, its reader registry) around
 * fork(); see FORK in the doc block for what the child may then do. */

static inline void lf_reactor_atfork_prepare(void)
{
#ifdef LF_RCU_BP
    urcu_bp_before_fork();
#endif
    LF__RCU(call_rcu_before_fork)();
}

static inline void lf_reactor_atfork_parent(void)
{
    LF__RCU(call_rcu_after_fork_parent)();
#ifdef LF_RCU_BP
    urcu_bp_after_fork_parent();
#endif
}

static inline void lf_reactor_atfork_child(void)
{
#ifdef LF_RCU_BP
    urcu_bp_after_fork_child();
#endif
    LF__RCU(call_rcu_after_fork_child)();
}

/* ------------------------------------------------------------------ >>group
 * Relaxed serialization, second variant: several handle sets (reactors), each with
 * its own leader, drawn from one pool. A thread's way through it:
 *   pool leader:  claim a set nobody leads (lf__group_wait), promote a follower;
 *   set leader:   one turn of that set, exactly as a lone reactor's leader does it
 *                 (lf__wait), then give the set up and wake the pool's leader;
 *   processing:   dispatch the event it got; back to the pool as a follower.
 * lf__led, under the group lock, plays the leader slot of each set: it is what keeps
 * the set's leader-only state to one thread. */

typedef struct LF__CFG(lf__group_turn) {
    lf_reactor_group *g;
    const struct timespec *deadline; /* the lf_reactor_group_run caller's */
} lf__group_turn;

/* CANCELLATION of a thread waiting for a set to lead (pthread_cond_wait took the
 * group's lock back before the cleanup runs). */
static inline void lf__group_wait_cancelled(void *arg)
{
    lf_reactor_group *g = (lf_reactor_group *)arg;
    g->lf__waiting--;
    pthread_mutex_unlock(&g->lf__lock);
}

static inline int lf__group_cv_wait(lf_reactor_group *g, const struct timespec *deadline)
{
    return lf__cond_wait_guarded(&g->lf__cond, &g->lf__lock, deadline, lf__group_wait_cancelled, g);
}

static inline int lf__group_wait(void *ctx, lf_event *ev, const struct timespec *deadline)
{
    lf_reactor_group *g = ((lf__group_turn *)ctx)->g;
    int rc = 0;

    if (deadline && lf__now_ns() >= lf__ts_ns(deadline))
        return ETIMEDOUT; /* (a set's turn that ended by the deadline comes back here) */
    pthread_mutex_lock(&g->lf__lock);
    for (;;) {
        unsigned live = 0;
        if (lf__load(&g->lf__stopped, relaxed)) {
            rc = ECANCELED;
            break;
        }
        for (unsigned i = 0; i < g->lf__n; i++) { /* round robin: no set is favoured */
            unsigned k = (g->lf__next + i) % g->lf__n;
            lf_reactor *r = g->lf__sets[k];
            if (lf__load(&r->lf__stopped, relaxed))
                continue; /* stopped on its own: nobody leads it again */
            live++;
            if (!r->lf__led) {
                r->lf__led = 1;
                g->lf__next = k + 1;
                ev->ptr = r;
                pthread_mutex_unlock(&g->lf__lock);
                return 0;
            }
        }
        if (live == 0) {
            rc = ECANCELED;
            break;
        }
        g->lf__waiting++;
        rc = lf__group_cv_wait(g, deadline);
        g->lf__waiting--;
        if (rc == ETIMEDOUT)
            break;
    }
    pthread_mutex_unlock(&g->lf__lock);
    return rc;
}

/* The claimed set's leader gives the set up (lf__led under the group's lock) and
 * wakes a thread waiting for one. */
static inline void lf__group_unlead(lf_reactor_group *g, lf_reactor *r)
{
    lf__fetch_add(&r->lf__leading, -1, relaxed);
    pthread_mutex_lock(&g->lf__lock);
    r->lf__led = 0;
    if (g->lf__waiting)
        pthread_cond_signal(&g->lf__cond);
    pthread_mutex_unlock(&g->lf__lock);
}

/* CANCELLATION of a set's leader in its wait (after lf__wait's own cleanup). */
typedef struct LF__RCFG(lf__group_guard) {
    lf_reactor_group *g;
    lf_reactor *r;
    lf_event *ev;
    const struct timespec *deadline;
    int rc;
} lf__group_guard;

static inline void lf__group_lead_cancelled(void *arg)
{
    lf__group_guard *t = (lf__group_guard *)arg;
    lf__group_unlead(t->g, t->r);
}

static inline void lf__group_lead_loop(lf__group_guard *t)
{
    int rc;
    do
        rc = lf__wait(t->r, &t->r->lf__hv, t->ev, t->deadline ? lf__ts_ns(t->deadline) : -1);
    while (rc == EINTR);
    t->rc = rc;
}

static inline void lf__group_lead(lf__group_guard *t)
{
    LF__CLEANUP_PUSH(lf__group_lead_cancelled, t);
    lf__group_lead_loop(t);
    LF__CLEANUP_POP(0);
}

/* Runs as the pool's processing thread, which is the claimed set's leader now. */
static inline int lf__group_dispatch(void *ctx, lf_event *claim)
{
    lf__group_turn *t = (lf__group_turn *)ctx;
    lf_reactor_group *g = t->g;
    lf_reactor *r = (lf_reactor *)claim->ptr;
    lf__group_guard lead;
    lf_event ev;
    int rc, others;

    /* the claim made us the only leader of r: checked, since r's leader-only state
     * (the harvested batch, the alternation) would be corrupted by a second one */
    others = lf__fetch_add(&r->lf__leading, 1, relaxed);
    LF_ASSERT(others == 0);
    (void)others;
    memset(&ev, 0, sizeof ev);
    lead.g = g;
    lead.r = r;
    lead.ev = &ev;
    lead.deadline = t->deadline;
    lead.rc = 0;
    lf__group_lead(&lead);
    rc = lead.rc;
    lf__group_unlead(g, r); /* before the dispatch: that is what "promote first" means here */
    if (rc == 0)
        lf__dispatch(r, &ev);
    /* stopped or out of time: the pool's next wait says so to this thread */
    return rc == 0 || rc == ECANCELED || rc == ETIMEDOUT ? 0 : rc;
}

/* Called by lf_pool_shutdown under the pool lock (lock order: pool, then group). */
static inline void lf__group_interrupt(void *ctx)
{
    lf_reactor_group *g = ((lf__group_turn *)ctx)->g;
    pthread_mutex_lock(&g->lf__lock);
    pthread_cond_broadcast(&g->lf__cond);
    pthread_mutex_unlock(&g->lf__lock);
}

static inline void lf__group_release(lf_reactor **sets, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        lf__store(&sets[i]->lf__group, (lf_reactor_group *)NULL, seq_cst);
}

/* Contract: any thread; the sets are initialised, not concurrent, not in another
 * group and not being run; sets[] outlives the group. */
static inline int lf_reactor_group_init(lf_reactor_group *g, lf_reactor **sets, unsigned n)
{
    int rc;

    if (g == NULL || sets == NULL || n == 0)
        return EINVAL;
    for (unsigned i = 0; i < n; i++) {
        if (!lf__reactor_ok(sets[i]) || sets[i]->lf__concurrent)
            return EINVAL;
        for (unsigned j = 0; j < i; j++)
            if (sets[j] == sets[i])
                return EINVAL;
    }
    /* claim each set, then look whether a thread runs it (see lf__enter) */
    for (unsigned i = 0; i < n; i++) {
        lf_reactor_group *none = NULL;
        while (!lf__cas(&sets[i]->lf__group, &none, g) && none == NULL) {
        }
        if (none != NULL || lf__load(&sets[i]->lf__running, seq_cst) != 0) {
            lf__group_release(sets, none != NULL ? i : i + 1); /* ours, up to here */
            return EBUSY;
        }
    }
    memset((void *)g, 0, sizeof *g);
    if ((rc = lf_pool_init(&g->pool)) != 0 || (rc = lf__cond_init_monotonic(&g->lf__cond)) != 0) {
        if (rc == 0)
            lf_pool_destroy(&g->pool);
        lf__group_release(sets, n);
        return rc;
    }
    pthread_mutex_init(&g->lf__lock, NULL);
    g->lf__sets = sets;
    g->lf__n = n;
    for (unsigned i = 0; i < n; i++) {
        sets[i]->lf__led = 0;
        lf__store(&sets[i]->lf__group, g, seq_cst); /* g was claimed before it was zeroed */
    }
    return 0;
}

static inline void lf__follower_cancelled(void *arg)
{
    lf_follower_destroy((lf_follower *)arg);
}

/* Contract: any thread; blocks until lf_reactor_group_stop (ECANCELED), every set
 * stopped (ECANCELED) or the deadline (ETIMEDOUT). */
static inline int lf_reactor_group_run(lf_reactor_group *g, const struct timespec *deadline)
{
    lf__group_turn turn;
    lf_source src;
    lf_follower self;
    int rc;

    if (g == NULL || g->lf__sets == NULL || !lf__deadline_ok(deadline))
        return EINVAL;
    turn.g = g;
    turn.deadline = deadline;
    src.ctx = &turn;
    src.wait = lf__group_wait;
    src.dispatch = lf__group_dispatch;
    src.interrupt = lf__group_interrupt;
    lf__rcu_enter();
    if ((rc = lf_follower_init(&self, 0)) != 0)
        return rc;
    LF__CLEANUP_PUSH(lf__follower_cancelled, &self);
    rc = lf_pool_join(&g->pool, &self, &src, deadline);
    LF__CLEANUP_POP(0);
    lf_follower_destroy(&self);
    return rc;
}

/* Contract: any thread, also a handler. Stops every set and every thread of the group. */
static inline int lf_reactor_group_stop(lf_reactor_group *g)
{
    if (g == NULL || g->lf__sets == NULL)
        return EINVAL;
    pthread_mutex_lock(&g->lf__lock);
    lf__store(&g->lf__stopped, 1, relaxed);
    pthread_cond_broadcast(&g->lf__cond);
    pthread_mutex_unlock(&g->lf__lock);
    for (unsigned i = 0; i < g->lf__n; i++)
        lf_reactor_stop(g->lf__sets[i]); /* wakes each set's leader */
    return lf_pool_shutdown(&g->pool);
}

/* Contract: no thread may be running the group. The sets stay (destroy them after). */
static inline int lf_reactor_group_destroy(lf_reactor_group *g)
{
    int rc;
    if (g == NULL || g->lf__sets == NULL)
        return EINVAL;
    if ((rc = lf_pool_destroy(&g->pool)) != 0)
        return rc; /* EBUSY: threads still run it */
    lf__group_release(g->lf__sets, g->lf__n);
    g->lf__sets = NULL;
    pthread_cond_destroy(&g->lf__cond);
    pthread_mutex_destroy(&g->lf__lock);
    return 0;
}

#endif /* LF_REACTOR_H_INCLUDED */

/*
 * MIT License
 *
 * Copyright (c) 2026 the lf authors
 *
 * Permission is hereby granted, free of charge, to any person obtaining a copy
 * of this software and associated documentation files (the "Software"), to deal
 * in the Software without restriction, including without limitation the rights
 * to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
 * copies of the Software, and to permit persons to whom the Software is
 * furnished to do so, subject to the following conditions:
 *
 * The above copyright notice and this permission notice shall be included in all
 * copies or substantial portions of the Software.
 *
 * THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
 * IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
 * FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
 * AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
 * LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
 * OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
 * SOFTWARE.
 */
