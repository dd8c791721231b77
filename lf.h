/* SPDX-License-Identifier: MIT (the licence text is at the end of this file) */
/* lf.h - the Leader/Followers thread pool (POSA2), header-only, C11 + POSIX threads.
 *
 * THE PATTERN
 *   A pool of threads takes turns in three roles. One LEADER waits on a shared event
 *   source. When it detects an event it PROMOTES one of the FOLLOWERS to be the next
 *   leader, *before* it processes the event, and then becomes a PROCESSING thread.
 *   Processing threads run concurrently. A thread that finishes processing becomes the
 *   leader at once if the leader slot is vacant, or else a follower (with
 *   LF_TAKEOVER, see SCHEDULING, it also leads at once if the follower just promoted
 *   has not started to run yet). Only one thread at a
 *   time ever waits on the event source, so the source needs no locking of its own, and
 *   the thread that detected an event is the one that handles it (no queue, no hand-off
 *   of the event between threads).
 *
 * QUICK START
 *   #define LF_PROMOTE LF_PROMOTE_FIFO          (optional: LIFO is the default)
 *   #include "lf.h"
 *
 *   static int my_wait(void *ctx, lf_event *ev, const struct timespec *deadline);
 *   static int my_dispatch(void *ctx, lf_event *ev);
 *   static void my_interrupt(void *ctx);
 *
 *   static lf_pool pool;
 *   static lf_source src;                       (ctx, wait, dispatch, interrupt)
 *
 *   static void *worker(void *arg) {
 *       lf_follower self;
 *       lf_follower_init(&self, 0);
 *       lf_pool_join(&pool, &self, &src, NULL);  (returns ECANCELED after shutdown)
 *       lf_follower_destroy(&self);
 *       return arg;
 *   }
 *   ... lf_pool_init(&pool); start N workers; ... lf_pool_shutdown(&pool);
 *   join the workers; lf_pool_destroy(&pool);
 *
 *   Compile with: cc -std=c11 -D_POSIX_C_SOURCE=200809L ... -pthread
 *   (or -D_GNU_SOURCE / -D_DEFAULT_SOURCE; strict -std=c11 alone hides clock_gettime).
 *
 * CONFIGURATION (define before #include; each value must be the same in every
 * translation unit that shares an lf_pool or lf_follower with another)
 *   LF_PROMOTE   which follower becomes the next leader. Default LF_PROMOTE_LIFO.
 *       LF_PROMOTE_LIFO     stack: the most recently idle follower (its cache is warm).
 *       LF_PROMOTE_FIFO     queue: the longest waiting follower (fairness; bound pools
 *                           whose replies come back in request order).
 *       LF_PROMOTE_HEAP     binary heap: highest lf_follower.priority first, FIFO among
 *                           equals (real time: the pool's lock inherits priority, so a
 *                           thread waits for it behind one critical section of lower
 *                           priority at most; what stays unbounded: REAL TIME below).
 *       LF_PROMOTE_CONDVAR  one condition variable shared by all followers; the order
 *                           is whatever the pthread implementation picks.
 *     Any other value is a compile error. LIFO, FIFO and HEAP wake exactly the chosen
 *     follower through its own synchronizer (Specific Notification), never a herd.
 *   LF_SYNC      the per-follower synchronizer of LIFO/FIFO/HEAP. Default LF_SYNC_FUTEX
 *                on Linux with glibc, LF_SYNC_PTHREAD elsewhere (with any other C
 *                library, musl too, and with LF_PORTABLE). LF_SYNC_FUTEX by name
 *                without glibc parks in 10 ms slices (CANCELLATION): an idle follower
 *                wakes about 100 times a second.
 *       LF_SYNC_FUTEX       a 32-bit futex word per follower (Linux).
 *       LF_SYNC_PTHREAD     a condition variable per follower, on the pool's mutex.
 *   LF_TAKEOVER  0 or 1: whether a thread back from processing takes over a promotion
 *                whose follower has not started to run yet. Default: the value of
 *                LF_SCHED_BATCH, the one policy under which it pays (see SCHEDULING).
 *   LF_SCHED_BATCH  0 (default) or 1 (Linux only, opt-in): lf_pool_join runs a
 *                SCHED_OTHER thread as SCHED_BATCH while it is joined (see SCHEDULING:
 *                what that costs, and what inherits it); 1 also makes LF_TAKEOVER's
 *                default 1.
 *   LF_DEFER_NS  0 (default: off) or up to 1000000000, opt-in: the longest a deferred
 *                promotion leaves its follower asleep (see DEFERRAL; 1000000 is 1 ms).
 *                It acts in lf_reactor_run's pool only (lf_pool_join never defers).
 *   LF_PORTABLE  use only POSIX facilities, also on Linux: the paths a BSD, macOS or
 *                RTOS build takes (lf_reactor.h: pipe wake-ups, poll by default, no
 *                signalfd), so that Linux can test them.
 *   LF_ASSERT(x) checks internal invariants only (never user input). Default assert(x).
 *
 *   Different translation units may choose different policies; their pools must not
 *   cross between them. Every entry point checks the pool's policy tag and returns
 *   EINVAL on a pool made with another configuration (or not initialised, or
 *   destroyed). Including lf.h twice in one file with different values is an #error.
 *
 * ERRORS
 *   Functions return 0 or an errno value, pthread style; nothing aborts on bad input.
 *   Deadlines are absolute CLOCK_MONOTONIC times; NULL means no deadline. A deadline
 *   too far away to count in 63 bits of nanoseconds (past about the year 2262) is
 *   simply never reached, and lf_deadline_in saturates at the largest time_t.
 *   lf_pool_init and lf_follower_init set every field: the memory may hold garbage.
 *
 * FUNCTIONS (all static inline; all thread-safe unless stated)
 *   int lf_pool_init(lf_pool *p)
 *       Initialise an empty pool. EINVAL for NULL; otherwise what pthread init returns.
 *       LF_PROMOTE_HEAP makes the pool's lock with PTHREAD_PRIO_INHERIT where the
 *       platform has it; a system that refuses it at run time (a kernel built without
 *       PI futexes) gets a plain lock and a working pool: stats.prio_inherit says
 *       which (see REAL TIME).
 *   int lf_pool_destroy(lf_pool *p)
 *       Release the pool. EBUSY while any thread leads, follows, processes or is joined;
 *       the pool is then untouched. Afterwards every entry point returns EINVAL.
 *   int lf_follower_init(lf_follower *f, int priority) / void lf_follower_destroy(f)
 *       A follower is the per-thread record a thread brings to the pool; the caller owns
 *       it (a stack variable is fine). priority matters only to LF_PROMOTE_HEAP (higher
 *       first) and may be changed while the follower is not parked. One follower may be
 *       used by one thread at a time.
 *   int lf_pool_lead(lf_pool *p, lf_follower *f, const struct timespec *deadline)
 *       Block until the caller is the leader: at once if the slot is vacant, else as a
 *       follower until promoted. 0: the caller leads and must eventually call
 *       lf_pool_promote or lf_pool_leave. ETIMEDOUT: the deadline passed while it
 *       followed (it is no longer in the pool). ECANCELED: the pool is shut down.
 *       EINTR: lf_pool_notify(p, f) was called (the caller is not in the pool).
 *       EINVAL: bad arguments, or f already leads or follows.
 *   int lf_pool_try_lead(lf_pool *p, lf_follower *f)
 *       lf_pool_lead that never follows: 0 if the slot was vacant (the caller leads
 *       now, also when it takes over a promotion: see SCHEDULING and DEFERRAL), EBUSY if somebody
 *       leads (or it is promised to a parked follower that runs already); EINTR,
 *       ECANCELED, EINVAL as lf_pool_lead. For a thread that has something else to
 *       wait for and would take the leader's work only when nobody does it.
 *   int lf_pool_promote(lf_pool *p, lf_follower *f)
 *       The leader f hands leadership to the next follower in policy order and becomes
 *       a processing thread. With no follower waiting the slot is left vacant (counted
 *       in stats.promotions_vacant); the first thread to call lf_pool_lead takes it.
 *       EPERM if f is not the leader.
 *   int lf_pool_leave(lf_pool *p, lf_follower *f)
 *       f stops taking part: a leader hands leadership on (as promote does), a
 *       processing thread is no longer counted. EINVAL for a parked follower.
 *   int lf_pool_join(lf_pool *p, lf_follower *f, const lf_source *s, deadline)
 *       The whole loop: lead; s->wait (leader only); promote; s->dispatch (processing,
 *       concurrently with other threads); repeat. s->wait returning EINTR or EAGAIN is
 *       retried by the same leader. A non-zero s->dispatch is counted in
 *       stats.dispatch_errors and the thread carries on. Returns ECANCELED once the pool
 *       is shut down, ETIMEDOUT when the deadline passes (looked at when the wait would
 *       block and after every dispatch, so also while work keeps coming; a leader
 *       hands leadership on first: leadership is never lost), EINTR after
 *       lf_pool_notify(p, f), or the error s->wait returned.
 *   int lf_pool_notify(lf_pool *p, lf_follower *f)
 *       Specific Notification for any reason but leadership (e.g. "your reply is
 *       here", lf_bound.h): if f is parked as a follower it leaves the follower set
 *       and its lf_pool_lead/join returns EINTR; if it is not parked, its next
 *       lf_pool_lead/join returns EINTR at once, so no notification is lost between
 *       checking a condition and parking. LIFO/FIFO/HEAP wake only f; CONDVAR must
 *       broadcast (its followers share one condition variable). Counted in
 *       stats.notifications. Returns 0 if f was parked (and is woken), EBUSY if it
 *       was not (it may be the leader: waking its s->wait is then the caller's
 *       business), EINVAL for bad arguments.
 *   int lf_pool_shutdown(lf_pool *p)
 *       Every follower wakes with ECANCELED, a leader blocked in s->wait is interrupted
 *       through s->interrupt, and every later lead/join returns ECANCELED. Idempotent.
 *       Callable from any thread, including a dispatch callback.
 *   int lf_pool_stats(lf_pool *p, struct lf_pool_stats *out)
 *       A consistent snapshot of the counters and of the current roles, and
 *       out->prio_inherit: 1 if the pool's lock inherits priority (LF_PROMOTE_HEAP
 *       where the system grants it), else 0. (Like struct stat and stat(), the type
 *       and the function share a name.)
 *   const char *lf_promote_name(void) / const char *lf_sync_name(void)
 *       "LIFO", "FIFO", "HEAP" or "CONDVAR"; "futex" or "pthread".
 *   int lf_deadline_in(struct timespec *ts, long long ns)
 *       ts = now (CLOCK_MONOTONIC) + ns.
 *   LF_VERSION "0.1.0", and LF_VERSION_MAJOR, _MINOR, _PATCH as integers.
 *
 * THE EVENT SOURCE (lf_source, caller-owned, must outlive every join that uses it)
 *   wait(ctx, ev, deadline)  called by the leader only, so it needs no locking of its
 *       own. Fill *ev and return 0, or return ETIMEDOUT, EINTR/EAGAIN (nothing yet,
 *       try again) or another errno (join returns it).
 *   dispatch(ctx, ev)        called in the processing role, concurrently with other
 *       dispatches and with the next leader's wait.
 *   interrupt(ctx)           optional; called by lf_pool_shutdown, under the pool's
 *       lock, to make the current or the *next* wait return early (it must be sticky,
 *       like a write to an eventfd); it must not block or call into the pool.
 *
 * SCHEDULING: TAKEOVER, AND SCHED_BATCH ON REQUEST
 *   The pattern promotes before it processes, so a handler that blocks never leaves
 *   the event source unwatched. The price is a wake-up per promotion, and on a busy
 *   machine the scheduler decides what that wake-up does: Linux lets a woken thread
 *   preempt the thread that woke it, so the promoted follower may take the CPU from
 *   its promoter while the promoter holds the event it just detected, and that event
 *   then waits until the promoter runs again (up to a scheduler tick, 4 ms at HZ=250,
 *   when every CPU is busy). The library changes nothing of its callers' threads by
 *   default: policy, priority, nice, affinity, signal mask and cancel state stay as
 *   the caller set them, in the thread and in every thread or process it starts.
 *   - LF_SCHED_BATCH=1 (Linux, opt-in) asks lf_pool_join to run a SCHED_OTHER thread
 *     as SCHED_BATCH while it is joined, the policy whose wake-ups do not preempt.
 *     What that costs: SCHED_BATCH gives up wake-up preemption against the whole
 *     machine, so beside a CPU-bound process the pool's own event latency grows
 *     (milliseconds instead of tens of microseconds); a thread or a process started
 *     from a dispatch inherits SCHED_BATCH for good (threads made with default
 *     attributes, fork, and exec keep the policy: SCHED_RESET_ON_FORK resets only
 *     real-time policies); and the look at the policy and the switch are two system
 *     calls, so a creator that gives the thread SCHED_FIFO between them has its
 *     choice undone (no get-then-set can close that window). Only a SCHED_OTHER
 *     thread is changed, the old policy is back when lf_pool_join returns, a refusal
 *     (a sandbox) is ignored, and lf_pool_lead, _promote and the reactor's
 *     lf_reactor_handle_events never touch it.
 *   - TAKEOVER (LF_TAKEOVER=1; its default is LF_SCHED_BATCH's value, so it is off
 *     unless asked for). A promoted follower that has not started to run yet would
 *     still hold the leader slot, and every thread that finishes processing
 *     meanwhile would park behind it. So a thread back from processing (lf_pool_lead, _try_lead or
 *     _join after lf_pool_promote) that finds the promoted follower not yet running
 *     takes the leadership itself; the follower, put back at the front of the
 *     follower set (HEAP: among its equals, by its old arrival), finds its wake-up
 *     withdrawn and parks again. The claim is a
 *     compare-and-swap on the follower's word, so exactly one of the two leads.
 *     Counted in stats.takeovers. HEAP takes over only from a follower of equal or
 *     lower priority; a follower with a notification pending is left alone; a
 *     thread new to the pool (not back from processing) never takes over (a
 *     deferred promotion, DEFERRAL below, is the exception: anybody takes it).
 *     Why only with SCHED_BATCH: there a woken follower does not preempt, so a short
 *     handler usually ends before its follower runs, the promoter leads again, and
 *     the follower's wake-up is withdrawn before it costs a switch. Under
 *     SCHED_OTHER the wake-up has taken effect by then: the follower runs (often
 *     taking a CPU from another thread), finds its promotion withdrawn, and parks
 *     again, a switch for nothing. In six side-by-side runs on one day
 *     (bench/README.md), the strict hand-off did 0.94x to 1.24x the takeover's
 *     requests per second with a p99.9 1.4x to 7.3x shorter (beside a CPU-bound
 *     process 0.89x to 1.00x); under SCHED_BATCH the takeover did 1.12x to 1.23x the
 *     strict hand-off's. If you run the threads as SCHED_BATCH yourself (chrt -b 0,
 *     or your own sched_setscheduler), build with LF_TAKEOVER=1. Without it
 *     (LF_TAKEOVER=0) every promotion is a strict hand-off: the promoted follower
 *     leads, and the thread back from processing follows.
 *   Together: when a handler blocks or runs long, the follower it promoted runs and
 *   leads, as the pattern promises; the price is one futex wake per promotion.
 *
 * DEFERRAL (LF_DEFER_NS > 0, opt-in; for lf_reactor_run's pool only)
 *   The futex wake per promotion can be put off while the promoter holds only young
 *   work, and spared when the promoter comes back first:
 *   - While a pool is busy (lf_pool_join promoted for such a source within the last
 *     2 x LF_DEFER_NS), the follower next in line parks with a tick, LF_DEFER_NS from
 *     when it parks; the others park until woken. An idle pool has no ticks, and a
 *     busy one the ticks of about one follower.
 *   - When the source says what the leader holds is young (lf_reactor.h: nothing
 *     harvested left and nothing queued, or a harvest younger than
 *     LF_REACTOR_BACKLOG_NS, counted as old as the time the handles went unwatched
 *     before it when that was longer), a promotion to a follower parked with a tick
 *     posts the promotion and does not wake it (stats.deferred). So handlers that run
 *     longer than LF_REACTOR_BACKLOG_NS still get the follower woken to share the
 *     events that came meanwhile.
 *   - Whoever asks to lead first takes a deferred promotion: the promoter back from
 *     its handler (whatever LF_TAKEOVER says: a deferred follower was never woken, so
 *     nothing is wasted), another thread, or the follower itself once the deferral
 *     is LF_DEFER_NS old (stats.tick_leads: the promoter was away that long). A tick
 *     that finds a promotion deferred to it more recently (the promoter defers anew
 *     at every turn) sleeps on until then: the leadership does not move while its
 *     holder is only between two turns. A thread that may not take it (HEAP: of
 *     lower priority; or the follower has a notification pending) wakes it instead,
 *     and so do lf_pool_shutdown, lf_pool_notify and a promoter that leaves instead
 *     of coming back. lf_pool_try_lead takes it too (0, not
 *     EBUSY). HEAP never defers to a follower of higher priority than the promoter.
 *   So a handler that blocks leaves the handles unwatched for LF_DEFER_NS at most
 *   (plus the follower's scheduling delay), not for the whole handler, and a backlog
 *   older than LF_REACTOR_BACKLOG_NS still wakes a follower at once to share it.
 *   (test/model/defer.pml checks this with three threads, a notification, leaves and
 *   a shutdown: one leader at a time, no promotion deferred to a follower without a
 *   tick, and a handler that blocks always relieved by a leader.)
 *   Measured beside its peers (bench/README.md, "Promotion without SCHED_BATCH"):
 *   context switches per request 1.3x (10 us of work per request) to 4x fewer,
 *   requests/s 0.98x to 1.09x the strict hand-off's on a quiet machine and 1.0x to
 *   1.5x beside a CPU-bound process. Its p99.9 was 1.8 to 2.3 ms on a quiet machine
 *   while a tick took a promotion however young. As it is now (a tick waits out the
 *   deferral's age; a harvest after a long unwatched stretch wakes the follower;
 *   three runs, 2 threads): at 16 connections 0.23 to 0.90 ms against the strict
 *   hand-off's 0.38 to 0.90, at 1.07x to 1.26x its requests/s; at 64, 1.3 to 2.2 ms
 *   against 1.0 to 1.2, at 0.90x to 1.34x, fairness 0.86 to 0.89; beside a CPU-bound
 *   process 1.07x to 1.40x the requests/s of the best asio (either policy) at 0.48x
 *   to 0.87x its p99. Which is why it is not the default yet: the tail and fairness
 *   at 64 connections.
 *
 * REAL TIME (LF_PROMOTE_HEAP): WHAT IS BOUNDED, AND WHAT IS NOT
 *   Bounded, when stats.prio_inherit is 1:
 *   - The wait for the pool's lock. Every lf_pool_* call takes it; a thread blocked
 *     on it lends its scheduling priority to the owner until the owner lets go, and
 *     the lock then goes to the waiter of highest priority. So a thread waits, per
 *     acquisition, for at most one critical section of a thread of lower priority
 *     (the one under way when it asked), run at the waiter's priority: no thread of
 *     middle priority can stretch it. (Threads of equal or higher priority ahead of
 *     it are not an inversion.) Every critical section is a bounded amount of work
 *     that never blocks: a few steps through the heap (O(log n) in the followers
 *     parked) and, with LF_SYNC_PTHREAD, a condition-variable signal; lf_pool_shutdown
 *     wakes every follower under it (O(n)) and calls s->interrupt (which must not
 *     block).
 *   - Who leads next: the parked follower of highest lf_follower.priority (FIFO
 *     among equals); a takeover never takes a promotion from a follower of higher
 *     priority.
 *   Not bounded, by this lock or any other: leadership is a role, and nothing lends a
 *   priority to the thread that holds it. A parked follower waits for the leader to
 *   detect an event and promote, and from the promotion to its wake-up (the futex
 *   wake that follows the unlock, or the signal) for the promoter: both run at their
 *   own scheduling priority, and the follower sleeps on its own synchronizer, not on
 *   the lock, so nothing raises them. A leader of low priority preempted by work of
 *   middle priority delays its events and every follower, whatever their priority.
 *   So give the threads of a real-time pool scheduling priorities above any work
 *   that must not delay its events (lf_follower.priority only orders the followers;
 *   the scheduling priority is the thread's, which the library never changes).
 *   Only this pool's lock inherits: the locks lf_reactor.h and lf_bound.h add (the
 *   registrations, timers and queued notifications; the reply map) are plain mutexes,
 *   and so is the pool's lock under LIFO, FIFO and CONDVAR, which promise no order by
 *   priority (a thread may wait there behind any number of promotions anyway) and
 *   would pay for it: a contended lock that inherits goes through the kernel, which
 *   hands it to the waiter (nobody barges in). HEAP's hand-off costs what it did with
 *   LF_SYNC_FUTEX, whose woken follower needs no lock (about 0.3 us median in
 *   bench/promote.c, two threads on two CPUs), and 5 us instead of 1.5 with
 *   LF_SYNC_PTHREAD, whose woken follower takes the lock back at once.
 *
 * LIMITS
 *   - Followers parked at once: unlimited (intrusive links, no allocation at all).
 *   - One mutex per pool guards the roles; the expensive part of a hand-off is the
 *     wake-up of the promoted thread (a futex wake), not the critical section.
 *   - LF_SYNC_FUTEX wakes a follower after the pool lock is released. If the follower
 *     returns and its record is reused or freed in that window, the wake lands on a
 *     stale address: at worst a spurious wake-up of whoever waits there, which every
 *     wait in this header tolerates (the same trade glibc makes for its mutexes).
 *   - lf_pool_shutdown is final; make a new pool to start again.
 *
 * CANCELLATION (pthread_cancel; deferred, the default type)
 *   The pool's waits are cancellation points and clean up after themselves, so the
 *   usual "cancel the workers, then join them" leaves a pool that works on, and
 *   lf_pool_shutdown and lf_pool_destroy finish as they would have:
 *     a parked follower (lf_pool_lead, lf_pool_join)  leaves the follower set; if it
 *         was promoted in the meantime it hands the slot on, as lf_pool_leave does
 *         (the futex park turns cancellation asynchronous for its one system call,
 *         as libc does around its own; nothing else runs that way. Only with glibc:
 *         musl's asynchronous cancellation breaks the cleanup, so with any other C
 *         library the park waits in 10 ms slices with a deferred cancellation point
 *         before each, acted on up to a slice later);
 *     the leader in the source's wait, a thread in dispatch (lf_pool_join)  hands
 *         the slot on (or stops counting as processing) and leaves the pool; the
 *         source's own wait and dispatch are cancellation points if they contain
 *         one, and they are yours to clean up (pthread_cleanup_push).
 *   stats.cancelled counts them. Nothing else in this header is a cancellation point:
 *   lf_pool_shutdown runs s->interrupt with cancellation disabled (it is called under
 *   the pool's lock) and then restores the caller's state; every other call takes
 *   only the pool's lock. A thread that leads after lf_pool_lead returned, or
 *   processes after lf_pool_promote, is yours: give the role back in your own
 *   cleanup handler (lf_pool_leave). Cancellation type asynchronous (switched on by
 *   you) is supported nowhere in these headers: no lock is async-cancel-safe.
 *   The follower record must stay valid until the cleanup is done, which it is when
 *   it lives on the cancelled thread's stack. Built with ThreadSanitizer (which
 *   cannot follow a cancel inside a system call), the waits other than
 *   pthread_cond_wait take it at a pthread_testcancel before each slice of at most
 *   10 ms instead: the same outcome, up to 10 ms later. lf_reactor.h and lf_bound.h add their
 *   own waits to the list and say how each cleans up.
 */
#ifndef LF_PROMOTE_LIFO
/* The toolkit's version (all three headers share it; lf.pc and lfConfigVersion.cmake
 * carry the same number). */
#define LF_VERSION_MAJOR 0
#define LF_VERSION_MINOR 1
#define LF_VERSION_PATCH 0
#define LF_VERSION "0.1.0"
#define LF_PROMOTE_LIFO 1
#define LF_PROMOTE_FIFO 2
#define LF_PROMOTE_HEAP 3
#define LF_PROMOTE_CONDVAR 4
#define LF_SYNC_FUTEX 1
#define LF_SYNC_PTHREAD 2
#endif

#ifndef LF_PROMOTE
#define LF_PROMOTE LF_PROMOTE_LIFO
#endif
#if LF_PROMOTE != LF_PROMOTE_LIFO && LF_PROMOTE != LF_PROMOTE_FIFO && \
    LF_PROMOTE != LF_PROMOTE_HEAP && LF_PROMOTE != LF_PROMOTE_CONDVAR
#error "lf.h: LF_PROMOTE must be LF_PROMOTE_LIFO, LF_PROMOTE_FIFO, LF_PROMOTE_HEAP or LF_PROMOTE_CONDVAR"
#endif

/* LF_PORTABLE: only what POSIX gives, also on Linux (pipes for wake-ups, the poll
 * backend and LF_SYNC_PTHREAD by default, no signalfd): what a BSD, macOS or RTOS
 * build runs, put in the test matrix on Linux. */
#if defined(__linux__) && !defined(LF_PORTABLE) && !defined(LF__LINUX)
#define LF__LINUX 1
#endif
#include <errno.h> /* (the C library's own: glibc's defines __GLIBC__) */
#ifndef LF_SYNC
#if defined(LF__LINUX) && defined(__GLIBC__)
#define LF_SYNC LF_SYNC_FUTEX
#else
#define LF_SYNC LF_SYNC_PTHREAD /* (musl: see LF__SLICED_PARK) */
#endif
#endif
#if LF_SYNC != LF_SYNC_FUTEX && LF_SYNC != LF_SYNC_PTHREAD
#error "lf.h: LF_SYNC must be LF_SYNC_FUTEX (Linux) or LF_SYNC_PTHREAD"
#endif
#if LF_SYNC == LF_SYNC_FUTEX && !defined(__linux__)
#error "lf.h: LF_SYNC_FUTEX needs Linux; use -DLF_SYNC=LF_SYNC_PTHREAD"
#endif
#ifndef LF_SCHED_BATCH
#define LF_SCHED_BATCH 0
#endif
#ifndef LF_TAKEOVER
#define LF_TAKEOVER LF_SCHED_BATCH /* (SCHEDULING: it pays only there) */
#endif
#if LF_SCHED_BATCH != 0 && LF_SCHED_BATCH != 1
#error "lf.h: LF_SCHED_BATCH must be 0 or 1"
#endif
#if LF_TAKEOVER != 0 && LF_TAKEOVER != 1
#error "lf.h: LF_TAKEOVER must be 0 or 1"
#endif
#ifndef LF_DEFER_NS
#define LF_DEFER_NS 0 /* DEFERRAL (opt-in): a deferred promotion's wake-up comes at most this late */
#endif
#if LF_DEFER_NS < 0 || LF_DEFER_NS > 1000000000
#error "lf.h: LF_DEFER_NS must be 0 (no deferral) .. 1000000000"
#endif
#if LF_SCHED_BATCH && !defined(__linux__)
#error "lf.h: LF_SCHED_BATCH needs Linux"
#endif

#ifdef LF_H_INCLUDED
#if LF_PROMOTE != LF__PROMOTE_SEEN || LF_SYNC != LF__SYNC_SEEN
#error "lf.h: included twice in one file with different LF_PROMOTE or LF_SYNC; compile each policy in its own file"
#endif
#else
#define LF_H_INCLUDED
/* remember the values (not the names: a macro expands when used, so a plain alias
 * would follow a later #undef/#define of LF_PROMOTE) */
#if LF_PROMOTE == LF_PROMOTE_LIFO
#define LF__PROMOTE_SEEN 1
#elif LF_PROMOTE == LF_PROMOTE_FIFO
#define LF__PROMOTE_SEEN 2
#elif LF_PROMOTE == LF_PROMOTE_HEAP
#define LF__PROMOTE_SEEN 3
#else
#define LF__PROMOTE_SEEN 4
#endif
#if LF_SYNC == LF_SYNC_FUTEX
#define LF__SYNC_SEEN 1
#else
#define LF__SYNC_SEEN 2
#endif

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/* What the headers use is POSIX.1-2001 (CLOCK_MONOTONIC, pthread_condattr_setclock).
 * Strict -std=c11 hides it; with -pthread, glibc defines _POSIX_C_SOURCE as 199506L,
 * which shows the clock but not pthread_condattr_setclock: both must be caught. */
#if !defined(CLOCK_MONOTONIC) || (defined(_POSIX_C_SOURCE) && _POSIX_C_SOURCE < 200112L)
#error "lf.h needs POSIX.1-2001: compile with -D_POSIX_C_SOURCE=200809L (or define _GNU_SOURCE / _DEFAULT_SOURCE)"
#endif

/* LF_PROMOTE_HEAP: the pool's lock inherits priority (REAL TIME in the doc block)
 * where the platform has the option. _POSIX_THREAD_PRIO_INHERIT says so (-1: never;
 * 0: ask at run time, which the refusal of the attribute does for us). musl has the
 * option, and asks the kernel, but does not define the macro; its PTHREAD_PRIO_INHERIT
 * is a macro (glibc's an enumerator), which tells us instead. */
#if LF_PROMOTE == LF_PROMOTE_HEAP
#include <unistd.h>
#if defined(_POSIX_THREAD_PRIO_INHERIT)
#if _POSIX_THREAD_PRIO_INHERIT >= 0
#define LF__PRIO_INHERIT 1
#endif
#elif defined(PTHREAD_PRIO_INHERIT)
#define LF__PRIO_INHERIT 1
#endif
#endif

/* ThreadSanitizer cannot follow a thread cancelled inside a system call: one it
 * intercepts (poll, epoll_wait, select) leaves the thread's cleanup handlers running
 * with its interceptors switched off, so their locks and hand-offs are invisible and
 * the next thread's accesses look like races; one it does not intercept (a raw
 * futex wait) holds the cancel signal back until the call returns. In a TSan build
 * the library's blocking waits other than pthread_cond_wait (which TSan handles)
 * therefore run with cancellation off, at most LF__TSAN_SLICE_MS at a time, and the
 * cancellation point is pthread_testcancel before each: the same contract, acted on
 * up to that much later. Every other build cancels inside the system call (the futex
 * park without glibc excepted: LF__SLICED_PARK). */
#if defined(__SANITIZE_THREAD__)
#define LF__TSAN_WAITS 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define LF__TSAN_WAITS 1
#endif
#endif
#define LF__TSAN_SLICE_MS 10
/* The futex park is a cancellation point through an asynchronous window (see
 * lf__futex_wait), which needs a C library whose asynchronous cancellation runs the
 * cleanup handlers as deferred cancellation would. musl's does not: it acts on the
 * stack pointer the interrupted code had, and musl 1.2.3 on x86-64 ran the cleanups
 * 8 bytes off the ABI's alignment, so any cleanup that reached SSE code faulted (one
 * calling pthread_cond_wait, or snprintf; deferred cancellation at the same place
 * was fine). So with any C library but glibc (one whose headers do not define
 * __GLIBC__; uClibc-ng's do), and in a TSan build, the park waits in slices of
 * LF__TSAN_SLICE_MS with a deferred cancellation point before each: the same
 * contract, acted on up to a slice later, and an idle follower wakes once a slice.
 * That is why LF_SYNC_PTHREAD (pthread_cond_wait: a cancellation point of libc's
 * own) is the default there. */
#if defined(LF__TSAN_WAITS) || !defined(__GLIBC__)
#define LF__SLICED_PARK 1
#endif

#ifndef LF_ASSERT
#include <assert.h>
#define LF_ASSERT(x) assert(x)
#endif

#if LF_SYNC == LF_SYNC_FUTEX
/* The kernel's headers are not on every libc's path (musl-gcc leaves them out): the
 * four futex numbers we use are the kernel's ABI, the same on every architecture. */
#if defined(__has_include)
#if __has_include(<linux/futex.h>)
#include <linux/futex.h>
#endif
#endif
#ifndef FUTEX_WAIT_BITSET
#define FUTEX_WAKE 1
#define FUTEX_WAIT_BITSET 9
#define FUTEX_PRIVATE_FLAG 128
#define FUTEX_BITSET_MATCH_ANY 0xffffffff
#endif
#endif
#if LF_SYNC == LF_SYNC_FUTEX || LF_SCHED_BATCH
#include <sys/syscall.h>
#include <unistd.h>
/* unistd.h declares syscall() only with _DEFAULT_SOURCE, and a declaration of our own
 * under its name can conflict with another one (liburcu's headers call it
 * undeclared, which declares it implicitly). So: the same symbol under a name of our
 * own (an asm label: gcc and clang, which every Linux toolchain is). */
#ifdef __cplusplus
extern "C" long lf__syscall(long, ...) __asm__("syscall");
#else
extern long lf__syscall(long, ...) __asm__("syscall");
#endif
#endif

/* Atomics: C11 <stdatomic.h>, or <atomic> when the header is compiled as C++.
 * lf__cas is seq_cst and may fail spuriously: use it in a loop. */
#ifdef __cplusplus
#include <atomic>
#define LF__ATOMIC(T) std::atomic<T>
#define LF__ALIGN8 alignas(8)
#define lf__load(p, mo) std::atomic_load_explicit((p), std::memory_order_##mo)
#define lf__store(p, v, mo) std::atomic_store_explicit((p), (v), std::memory_order_##mo)
#define lf__fetch_add(p, v, mo) std::atomic_fetch_add_explicit((p), (v), std::memory_order_##mo)
#define lf__fetch_sub(p, v, mo) std::atomic_fetch_sub_explicit((p), (v), std::memory_order_##mo)
#define lf__fetch_or(p, v, mo) std::atomic_fetch_or_explicit((p), (v), std::memory_order_##mo)
#define lf__fetch_and(p, v, mo) std::atomic_fetch_and_explicit((p), (v), std::memory_order_##mo)
#define lf__exchange(p, v, mo) std::atomic_exchange_explicit((p), (v), std::memory_order_##mo)
#define lf__cas(p, expected, v) std::atomic_compare_exchange_weak((p), (expected), (v))
#else
#include <stdatomic.h>
#define LF__ATOMIC(T) _Atomic(T)
/* a 64-bit atomic field on 8 bytes on every ABI (i386's gcc moved it to 8 in 11.1:
 * said explicitly, objects from older and newer compilers agree) */
#define LF__ALIGN8 _Alignas(8)
#define lf__load(p, mo) atomic_load_explicit((p), memory_order_##mo)
#define lf__store(p, v, mo) atomic_store_explicit((p), (v), memory_order_##mo)
#define lf__fetch_add(p, v, mo) atomic_fetch_add_explicit((p), (v), memory_order_##mo)
#define lf__fetch_sub(p, v, mo) atomic_fetch_sub_explicit((p), (v), memory_order_##mo)
#define lf__fetch_or(p, v, mo) atomic_fetch_or_explicit((p), (v), memory_order_##mo)
#define lf__fetch_and(p, v, mo) atomic_fetch_and_explicit((p), (v), memory_order_##mo)
#define lf__exchange(p, v, mo) atomic_exchange_explicit((p), (v), memory_order_##mo)
#define lf__cas(p, expected, v) atomic_compare_exchange_weak((p), (expected), (v))
#endif

/* ------------------------------------------------------------------ public types */

/* The struct tags of the objects whose layout depends on the configuration carry it
 * in their names (lf_pool_lifo_futex, ...), so that two files of one program made with
 * different policies never define one type in two ways (C++'s one-definition rule,
 * the type checks of link-time optimisation). Use the typedefs. */
#define LF__CAT2(a, b) a##b
#define LF__CAT(a, b) LF__CAT2(a, b)
#if LF_PROMOTE == LF_PROMOTE_LIFO
#define LF__CFG_P _lifo
#elif LF_PROMOTE == LF_PROMOTE_FIFO
#define LF__CFG_P _fifo
#elif LF_PROMOTE == LF_PROMOTE_HEAP
#define LF__CFG_P _heap
#else
#define LF__CFG_P _condvar
#endif
#if LF_SYNC == LF_SYNC_FUTEX
#define LF__CFG_S _futex
#else
#define LF__CFG_S _pthread
#endif
#define LF__CFG(name) LF__CAT(LF__CAT(name, LF__CFG_P), LF__CFG_S)
typedef struct LF__CFG(lf_pool) lf_pool;
typedef struct LF__CFG(lf_follower) lf_follower;
typedef struct lf_event lf_event;
typedef struct lf_source lf_source;

/* One detected event, filled by lf_source.wait and handed to lf_source.dispatch.
 * The fields are the source's to use as it likes. */
struct lf_event {
    void *ptr;
    uint64_t u64;
    uint32_t events;
    int fd;
};

struct lf_source {
    void *ctx;
    int (*wait)(void *ctx, lf_event *ev, const struct timespec *deadline);
    int (*dispatch)(void *ctx, lf_event *ev);
    void (*interrupt)(void *ctx);
};

struct lf_pool_stats {
    unsigned long long promotions;        /* leadership handed to a waiting follower */
    unsigned long long promotions_vacant; /* promotions that found no follower */
    unsigned long long leads;             /* times a thread became the leader */
    unsigned long long timeouts;          /* lead/join calls ended by their deadline */
    unsigned long long dispatch_errors;   /* dispatch callbacks that returned non-zero */
    unsigned long long notifications;     /* lf_pool_notify calls */
    unsigned long long takeovers;         /* promotions withdrawn by a takeover (see
                                           * SCHEDULING): counted in promotions too;
                                           * the lead goes to the taker */
    unsigned leader;                      /* 0 or 1, now */
    unsigned followers;                   /* parked now */
    unsigned processing;                  /* promoted leaders not yet back, now */
    unsigned joined;                      /* threads inside lf_pool_join, now (from
                                           * entry to return: a moment longer than
                                           * their roles) */
    unsigned prio_inherit;                /* 1: the pool's lock inherits priority
                                           * (LF_PROMOTE_HEAP, where the system grants
                                           * it; see REAL TIME), 0: a plain lock */
    unsigned long long cancelled;         /* threads cancelled inside lf_pool_lead or
                                           * lf_pool_join (see CANCELLATION) */
    unsigned long long deferred;          /* promotions whose wake-up was left to the
                                           * follower's tick (DEFERRAL): counted in
                                           * promotions too */
    unsigned long long ticks;             /* ticks of a parked follower that found
                                           * nothing to do, or a promotion deferred
                                           * to it less than LF_DEFER_NS ago */
    unsigned long long tick_leads;        /* deferred promotions their follower took
                                           * up itself: the promoter was away
                                           * LF_DEFER_NS */
};

/* An intrusive binary heap (no allocation, O(log n)): nodes live inside the caller's
 * structs. Used by LF_PROMOTE_HEAP here and by the reactor's timers. */
typedef struct lf__heap_node lf__heap_node;
struct lf__heap_node {
    lf__heap_node *parent, *left, *right;
};
typedef struct lf__heap {
    lf__heap_node *root;
    size_t count;
    int (*before)(const lf__heap_node *a, const lf__heap_node *b); /* a goes first */
} lf__heap;

enum { LF__NONE = 0, LF__FOLLOWER, LF__LEADER, LF__PROCESSING };
/* a follower's word: WAITING while parked; the promoter posts WAKE_LEAD, which the
 * follower turns into LEADING when it runs (unless a takeover turned it back into
 * WAITING first: one compare-and-swap decides). WAKE_DEFERRED is a promotion whose
 * wake-up was deferred (DEFERRAL): a promotion all the same, but lf__undefer turns it
 * into WAKE_LEAD before its wake-up, so a follower about to sleep on a deferred one
 * (lf__defer_sleep) cannot miss that wake-up. */
enum {
    LF__WAITING = 0,
    LF__WAKE_LEAD = 1,
    LF__WAKE_SHUTDOWN = 2,
    LF__WAKE_NOTIFY = 3,
    LF__LEADING = 4,
    LF__WAKE_DEFERRED = 5
};
/* a word that says "promoted, not yet running": woken or deferred */
static inline int lf__is_promotion(uint32_t w)
{
    return w == LF__WAKE_LEAD || w == LF__WAKE_DEFERRED;
}

struct LF__CFG(lf_follower) {
    /* public */
    int priority; /* LF_PROMOTE_HEAP: higher is promoted first */
    /* private */
    int lf__role;                 /* LF__NONE..LF__PROCESSING, under the pool lock */
    int lf__notified;             /* lf_pool_notify not yet reported, under the pool lock */
    int lf__timed;                /* parked with a tick (DEFERRAL), under the pool lock */
    LF__ATOMIC(uint32_t) lf__word; /* LF__WAITING, LF__WAKE_*, LF__LEADING */
    const lf_source *lf__src;      /* the source this thread will wait on as leader */
#if LF_PROMOTE == LF_PROMOTE_LIFO || LF_PROMOTE == LF_PROMOTE_FIFO
    lf_follower *lf__prev, *lf__next;
#elif LF_PROMOTE == LF_PROMOTE_HEAP
    lf__heap_node lf__node;
    unsigned long long lf__seq; /* arrival order: FIFO among equal priorities */
#endif
#if LF_SYNC == LF_SYNC_PTHREAD && LF_PROMOTE != LF_PROMOTE_CONDVAR
    pthread_cond_t lf__cond; /* this follower's own synchronizer */
#endif
};

struct LF__CFG(lf_pool) {
    unsigned lf__tag; /* first: identifies the configuration the pool was made with */
    pthread_mutex_t lf__lock;
    lf_follower *lf__leader; /* NULL: the slot is vacant */
    LF__ATOMIC(int) lf__shutdown;
    int lf__deferred;       /* the leader was promoted and not woken (DEFERRAL) */
    long long lf__busy_ns;  /* the last promotion lf_pool_join made for a source
                             * that defers: the pool is busy (DEFERRAL) */
    unsigned lf__followers, lf__processing, lf__joined;
    struct lf_pool_stats lf__stats; /* counters and prio_inherit; the role counts are
                                     * filled in by lf_pool_stats */
#if LF_PROMOTE == LF_PROMOTE_LIFO || LF_PROMOTE == LF_PROMOTE_FIFO
    lf_follower *lf__first, *lf__last;
#elif LF_PROMOTE == LF_PROMOTE_HEAP
    struct lf__heap lf__heap; /* (C++: a member may not reuse a type name unqualified) */
    unsigned long long lf__seq;
#else
    pthread_cond_t lf__cond; /* all followers wait here */
    int lf__reserved;        /* the vacant slot is promised to a parked follower */
#endif
};

#define LF__TAG (0x4c460000u | ((unsigned)LF_PROMOTE << 8) | (unsigned)LF_SYNC)

/* A follower's word goes from `from` to `to`, or stays as it is if it no longer holds
 * `from` (a strong compare-and-swap, seq_cst). 1 if it went. */
static inline int lf__word_claim(lf_follower *f, uint32_t from, uint32_t to)
{
    uint32_t seen = from;
    while (!lf__cas(&f->lf__word, &seen, to)) {
        if (seen != from)
            return 0;
    }
    return 1;
}

/* ------------------------------------------------------------------ >>time */

static inline int lf__deadline_ok(const struct timespec *d)
{
    return d == NULL || (d->tv_sec >= 0 && d->tv_nsec >= 0 && d->tv_nsec < 1000000000L);
}

/* A valid time (lf__deadline_ok) in nanoseconds. Saturates: a time past the end of
 * what 63 bits of nanoseconds hold (the year 2262 of CLOCK_MONOTONIC) is LLONG_MAX,
 * "never", rather than an overflow that wraps into the past. */
static inline long long lf__ts_ns(const struct timespec *ts)
{
    long long sec = ts->tv_sec; /* (a 32-bit time_t never gets near the limit) */
    if (sec >= LLONG_MAX / 1000000000LL)
        return LLONG_MAX;
    return sec * 1000000000LL + ts->tv_nsec;
}

/* a + b for a, b >= 0, saturating at LLONG_MAX ("never"). */
static inline long long lf__ns_add(long long a, long long b)
{
    return b > LLONG_MAX - a ? LLONG_MAX : a + b;
}

static inline int lf_deadline_in(struct timespec *ts, long long ns)
{
    if (ts == NULL)
        return EINVAL;
    long long sec;
    long nsec;
    if (clock_gettime(CLOCK_MONOTONIC, ts) != 0)
        return errno;
    sec = (long long)ts->tv_sec + ns / 1000000000LL; /* |ns| / 1e9 < 2^34: no overflow */
    nsec = ts->tv_nsec + (long)(ns % 1000000000LL);
    if (nsec >= 1000000000L) {
        sec++;
        nsec -= 1000000000L;
    } else if (nsec < 0) {
        sec--;
        nsec += 1000000000L;
    }
    /* saturate at the largest time_t (32 bits on older 32-bit ABIs): "never" */
    if (sizeof(time_t) < sizeof(long long) && sec > (long long)INT32_MAX) {
        sec = INT32_MAX;
        nsec = 999999999L;
    }
    ts->tv_sec = (time_t)sec;
    ts->tv_nsec = nsec;
    return 0;
}

/* A condition variable that times out on CLOCK_MONOTONIC, like our deadlines. */
static inline int lf__cond_init_monotonic(pthread_cond_t *c)
{
    pthread_condattr_t a;
    int rc = pthread_condattr_init(&a);
    if (rc)
        return rc;
    rc = pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    if (rc == 0)
        rc = pthread_cond_init(c, &a);
    pthread_condattr_destroy(&a);
    return rc;
}

/* ------------------------------------------------------------------ >>heap
 * A pointer-linked complete binary tree. The path from the root to position k
 * (1-based, breadth-first) is spelled by the bits of k below its top bit: 0 = left,
 * 1 = right. Nodes move by relinking, never by copying, so the caller's records stay
 * where they are. */

/* Exchange a node with its child: the child takes the parent's place. */
static inline void lf__heap_swap(lf__heap *h, lf__heap_node *parent, lf__heap_node *child)
{
    lf__heap_node saved = *parent, *sibling;

    *parent = *child;
    *child = saved;
    parent->parent = child;
    if (child->left == child) {
        child->left = parent;
        sibling = child->right;
    } else {
        child->right = parent;
        sibling = child->left;
    }
    if (sibling)
        sibling->parent = child;
    if (parent->left)
        parent->left->parent = parent;
    if (parent->right)
        parent->right->parent = parent;
    if (child->parent == NULL)
        h->root = child;
    else if (child->parent->left == parent)
        child->parent->left = child;
    else
        child->parent->right = child;
}

/* The link that holds (or would hold) position k, and the node above it. */
static inline lf__heap_node **lf__heap_slot(lf__heap *h, size_t k, lf__heap_node **above)
{
    lf__heap_node **link = &h->root;
    size_t bit = 1;

    *above = NULL;
    while (bit <= k / 2)
        bit <<= 1;
    for (bit >>= 1; bit != 0; bit >>= 1) {
        LF_ASSERT(*link != NULL); /* a complete tree: positions below k all exist */
        *above = *link;
        link = (k & bit) ? &(*link)->right : &(*link)->left;
    }
    return link;
}

static inline void lf__heap_up(lf__heap *h, lf__heap_node *n)
{
    while (n->parent && h->before(n, n->parent))
        lf__heap_swap(h, n->parent, n);
}

static inline void lf__heap_down(lf__heap *h, lf__heap_node *n)
{
    for (;;) {
        lf__heap_node *first = n;
        if (n->left && h->before(n->left, first))
            first = n->left;
        if (n->right && h->before(n->right, first))
            first = n->right;
        if (first == n)
            return;
        lf__heap_swap(h, n, first);
    }
}

static inline void lf__heap_insert(lf__heap *h, lf__heap_node *n)
{
    lf__heap_node *above;
    lf__heap_node **link = lf__heap_slot(h, h->count + 1, &above);

    n->left = n->right = NULL;
    n->parent = above;
    *link = n;
    h->count++;
    lf__heap_up(h, n);
}

static inline void lf__heap_remove(lf__heap *h, lf__heap_node *n)
{
    lf__heap_node *above, *last;
    lf__heap_node **link = lf__heap_slot(h, h->count, &above);

    last = *link;
    LF_ASSERT(last != NULL); /* count >= 1: n is in the heap */
    *link = NULL; /* detach the last node; it refills n's place */
    h->count--;
    if (last == n)
        return;
    last->parent = n->parent;
    last->left = n->left;
    last->right = n->right;
    if (last->left)
        last->left->parent = last;
    if (last->right)
        last->right->parent = last;
    if (n->parent == NULL)
        h->root = last;
    else if (n->parent->left == n)
        n->parent->left = last;
    else
        n->parent->right = last;
    lf__heap_down(h, last);
    lf__heap_up(h, last);
}

/* ------------------------------------------------------------------ >>futex
 * Specific Notification on a futex word: the follower sleeps while its word is
 * LF__WAITING; the promoter stores the verdict, then wakes exactly that word. */
#if LF_SYNC == LF_SYNC_FUTEX && LF_PROMOTE != LF_PROMOTE_CONDVAR

static inline int lf__sync_init(lf_follower *f)
{
    (void)f;
    return 0;
}

static inline void lf__sync_destroy(lf_follower *f)
{
    (void)f;
}

/* The futex word's address for the kernel. Through an integer: a pointer cast would
 * drop the _Atomic qualifier (the kernel does its own atomic accesses). */
#define lf__futex_word(f) ((void *)(uintptr_t)&(f)->lf__word)

/* FUTEX_WAIT_BITSET, the one futex wait whose timeout is an absolute CLOCK_MONOTONIC
 * time, which is what our deadlines are. The kernel reads the timespec in its own
 * layout: 64-bit on 64-bit ABIs; on 32-bit ABIs SYS_futex takes 32-bit fields, wrong
 * for a 64-bit time_t (the time64 ABIs), so there we pass the kernel's 64-bit layout
 * to SYS_futex_time64 (Linux 5.1; some 32-bit architectures have nothing else), and
 * fall back to SYS_futex only for a 32-bit time_t on an older kernel. */
static inline long lf__futex_wait_raw(lf_follower *f, uint32_t expect,
                                      const struct timespec *deadline)
{
#if defined(SYS_futex_time64) && UINTPTR_MAX == 0xffffffffu
    struct {
        long long tv_sec, tv_nsec;
    } k, *kp = NULL;
    long rc;
    if (deadline) {
        k.tv_sec = (long long)deadline->tv_sec;
        k.tv_nsec = deadline->tv_nsec;
        kp = &k;
    }
    rc = lf__syscall(SYS_futex_time64, lf__futex_word(f), FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG,
                     expect, kp, (uint32_t *)NULL, FUTEX_BITSET_MATCH_ANY);
#if defined(SYS_futex)
    if (rc != 0 && errno == ENOSYS && sizeof(time_t) == 4)
        rc = lf__syscall(SYS_futex, lf__futex_word(f), FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG,
                         expect, deadline, (uint32_t *)NULL, FUTEX_BITSET_MATCH_ANY);
#endif
    return rc;
#else
    return lf__syscall(SYS_futex, lf__futex_word(f), FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG,
                       expect, deadline, (uint32_t *)NULL, FUTEX_BITSET_MATCH_ANY);
#endif
}

/* The park is a cancellation point, as pthread_cond_wait is (CANCELLATION in the doc
 * block), but a raw system call is not one to libc: so asynchronous cancellation for
 * the system call alone, which is what libc does around its own blocking calls. Every
 * instruction of that window leaves the follower's state for the cleanup to read under
 * the lock (lf__unpark). The caller's type is back before anything else runs.
 * (ThreadSanitizer builds and C libraries but glibc: see LF__SLICED_PARK.) */
static inline long lf__futex_wait(lf_follower *f, uint32_t expect, const struct timespec *deadline)
{
#ifdef LF__SLICED_PARK
    struct timespec slice;
    long rc;
    int last;
    lf_deadline_in(&slice, LF__TSAN_SLICE_MS * 1000000LL);
    last = deadline != NULL && lf__ts_ns(deadline) <= lf__ts_ns(&slice);
    pthread_testcancel();
    rc = lf__futex_wait_raw(f, expect, last ? deadline : &slice);
    if (rc != 0 && errno == ETIMEDOUT && !last)
        errno = EINTR; /* a slice, not the deadline: the park looks again */
    return rc;
#else
    int type, state, err;
    long rc;

    /* one raw system call runs in it, and the exit below closes it safely */
    /* NOLINTNEXTLINE(concurrency-thread-canceltype-asynchronous) */
    pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &type);
    rc = lf__futex_wait_raw(f, expect, deadline);
    err = errno;
    /* Leaving the window. glibc before 2.41 sends the cancel signal of an
     * asynchronous window and lets the target go on meanwhile; a signal still on its
     * way when the type is deferred again acts inside the thread's next libc call
     * that is a cancellation point, even one made with cancellation disabled (a read
     * in a handler: seen in t_reactor_cancel). libc's own wrappers wait for such a
     * signal before they return. So: cancellation off, the type back, one pass
     * through a wrapper (close(-1): EBADF, nothing else), and then the caller's state
     * and a cancellation point of our own. A cancel that lands anywhere here is still
     * inside the park, which lf__unpark cleans up. Elsewhere it costs one system call
     * per wake-up and changes nothing. */
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &state);
    pthread_setcanceltype(type, &type);
    /* cppcheck-suppress invalidFunctionArg ; -1 on purpose: the call, not a close */
    (void)close(-1);
    pthread_setcancelstate(state, &state);
    pthread_testcancel();
    errno = err;
    return rc;
#endif
}

/* FUTEX_WAKE has no time in it: SYS_futex where there is one. */
#ifdef SYS_futex
#define LF__SYS_FUTEX_WAKE SYS_futex
#else
#define LF__SYS_FUTEX_WAKE SYS_futex_time64
#endif

/* Entered with the pool lock held and f parked. Returns 0 once the verdict is in (lock
 * released), or ETIMEDOUT with the lock held again (the verdict may have arrived since:
 * under the lock the caller reads the final word). */
static inline int lf__park(lf_pool *p, lf_follower *f, const struct timespec *deadline)
{
    pthread_mutex_unlock(&p->lf__lock);
    for (;;) {
        /* acquire: pairs with the promoter's release store, so the role fields it
         * wrote under the lock are visible without taking the lock again */
        uint32_t w = lf__load(&f->lf__word, acquire);
        if (lf__is_promotion(w)) {
            /* running now: claim the promotion, unless a takeover withdrew it first
             * (then the word is WAITING again and we park again) */
            if (lf__word_claim(f, w, LF__LEADING))
                return 0;
            continue;
        }
        if (w != LF__WAITING)
            return 0;
        if (lf__futex_wait(f, LF__WAITING, deadline) != 0 && errno == ETIMEDOUT) {
            pthread_mutex_lock(&p->lf__lock);
            return ETIMEDOUT;
        }
    }
}

static inline void lf__post_locked(lf_follower *f, uint32_t verdict)
{
    lf__store(&f->lf__word, verdict, release);
}

static inline void lf__post_unlocked(lf_follower *f)
{
    lf__syscall(LF__SYS_FUTEX_WAKE, lf__futex_word(f), FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1,
                (struct timespec *)NULL, (uint32_t *)NULL, 0);
}

#endif
/* ------------------------------------------------------------------ >>pthread-sync
 * Specific Notification, portable: a condition variable per follower on the pool's
 * mutex. The signal is sent under the lock, so the follower cannot return (and free
 * its record) before the signal is complete. */
#if LF_SYNC == LF_SYNC_PTHREAD && LF_PROMOTE != LF_PROMOTE_CONDVAR

static inline int lf__sync_init(lf_follower *f)
{
    return lf__cond_init_monotonic(&f->lf__cond);
}

static inline void lf__sync_destroy(lf_follower *f)
{
    pthread_cond_destroy(&f->lf__cond);
}

static inline int lf__park(lf_pool *p, lf_follower *f, const struct timespec *deadline)
{
    while (lf__load(&f->lf__word, relaxed) == LF__WAITING) {
        int rc = deadline ? pthread_cond_timedwait(&f->lf__cond, &p->lf__lock, deadline)
                          : pthread_cond_wait(&f->lf__cond, &p->lf__lock);
        if (rc == ETIMEDOUT)
            return ETIMEDOUT; /* lock held; the word is final under it */
    }
    if (lf__is_promotion(lf__load(&f->lf__word, relaxed))) /* a takeover needs the lock */
        lf__store(&f->lf__word, (uint32_t)LF__LEADING, relaxed);
    pthread_mutex_unlock(&p->lf__lock);
    return 0;
}

static inline void lf__post_locked(lf_follower *f, uint32_t verdict)
{
    lf__store(&f->lf__word, verdict, relaxed); /* the lock orders it */
    pthread_cond_signal(&f->lf__cond);
}

static inline void lf__post_unlocked(lf_follower *f)
{
    (void)f;
}

#endif
/* ------------------------------------------------------------------ >>lifo / >>fifo
 * An intrusive doubly-linked list of parked followers. Both policies take from the
 * front; LIFO parks at the front (a stack), FIFO at the back (a queue). The back
 * links make the removal of a follower whose deadline passed O(1). */
#if LF_PROMOTE == LF_PROMOTE_LIFO || LF_PROMOTE == LF_PROMOTE_FIFO

static inline void lf__set_init(lf_pool *p)
{
    p->lf__first = p->lf__last = NULL;
}

/* At the front: where LIFO parks, and where a takeover puts back the follower it
 * withdrew a promotion from (both policies pop from the front). */
static inline void lf__set_putback(lf_pool *p, lf_follower *f)
{
    f->lf__prev = NULL;
    f->lf__next = p->lf__first;
    if (p->lf__first)
        p->lf__first->lf__prev = f;
    else
        p->lf__last = f;
    p->lf__first = f;
}

static inline void lf__set_push(lf_pool *p, lf_follower *f)
{
#if LF_PROMOTE == LF_PROMOTE_LIFO
    lf__set_putback(p, f);
#else
    f->lf__next = NULL;
    f->lf__prev = p->lf__last;
    if (p->lf__last)
        p->lf__last->lf__next = f;
    else
        p->lf__first = f;
    p->lf__last = f;
#endif
}

static inline void lf__set_remove(lf_pool *p, lf_follower *f)
{
    if (f->lf__prev)
        f->lf__prev->lf__next = f->lf__next;
    else
        p->lf__first = f->lf__next;
    if (f->lf__next)
        f->lf__next->lf__prev = f->lf__prev;
    else
        p->lf__last = f->lf__prev;
}

static inline lf_follower *lf__set_pop(lf_pool *p)
{
    lf_follower *f = p->lf__first;
    if (f)
        lf__set_remove(p, f);
    return f;
}

/* The follower a promotion would take now (NULL: none). */
static inline lf_follower *lf__set_front(lf_pool *p)
{
    return p->lf__first;
}

#endif
/* ------------------------------------------------------------------ >>heap policy
 * Followers in the intrusive heap: highest priority first, then lowest arrival
 * number, so equal priorities are served first come, first served. */
#if LF_PROMOTE == LF_PROMOTE_HEAP

#define LF__FOLLOWER_OF(n) ((lf_follower *)(void *)((char *)(n) - offsetof(lf_follower, lf__node)))
#define LF__CFOLLOWER_OF(n)                                                                      \
    ((const lf_follower *)(const void *)((const char *)(n) - offsetof(lf_follower, lf__node)))

static inline int lf__follower_before(const lf__heap_node *a, const lf__heap_node *b)
{
    const lf_follower *fa = LF__CFOLLOWER_OF(a), *fb = LF__CFOLLOWER_OF(b);
    if (fa->priority != fb->priority)
        return fa->priority > fb->priority;
    return fa->lf__seq < fb->lf__seq;
}

static inline void lf__set_init(lf_pool *p)
{
    p->lf__heap.root = NULL;
    p->lf__heap.count = 0;
    p->lf__heap.before = lf__follower_before;
    p->lf__seq = 0;
}

static inline void lf__set_push(lf_pool *p, lf_follower *f)
{
    f->lf__seq = p->lf__seq++;
    lf__heap_insert(&p->lf__heap, &f->lf__node);
}

/* (back with its old arrival number: first among its equals again) */
static inline void lf__set_putback(lf_pool *p, lf_follower *f)
{
    lf__heap_insert(&p->lf__heap, &f->lf__node);
}

static inline void lf__set_remove(lf_pool *p, lf_follower *f)
{
    lf__heap_remove(&p->lf__heap, &f->lf__node);
}

static inline lf_follower *lf__set_pop(lf_pool *p)
{
    lf__heap_node *n = p->lf__heap.root;
    if (n == NULL)
        return NULL;
    lf__heap_remove(&p->lf__heap, n);
    return LF__FOLLOWER_OF(n);
}

static inline lf_follower *lf__set_front(lf_pool *p)
{
    return p->lf__heap.root ? LF__FOLLOWER_OF(p->lf__heap.root) : NULL;
}

#endif
/* ------------------------------------------------------------------ >>condvar
 * No follower set: followers wait on one condition variable until the slot is vacant
 * and take it themselves. A promotion signals one waiter (which one is up to the
 * pthread implementation) and reserves the vacant slot for the followers: a thread
 * that finishes processing meanwhile parks instead of barging in, so a promotion
 * really hands leadership to a follower, as in the other policies. */
#if LF_PROMOTE == LF_PROMOTE_CONDVAR

static inline int lf__sync_init(lf_follower *f)
{
    (void)f;
    return 0;
}

static inline void lf__sync_destroy(lf_follower *f)
{
    (void)f;
}

static inline void lf__post_unlocked(lf_follower *f)
{
    (void)f;
}

#endif
/* ------------------------------------------------------------------ >>pool */

static inline const char *lf_promote_name(void)
{
#if LF_PROMOTE == LF_PROMOTE_LIFO
    return "LIFO";
#elif LF_PROMOTE == LF_PROMOTE_FIFO
    return "FIFO";
#elif LF_PROMOTE == LF_PROMOTE_HEAP
    return "HEAP";
#else
    return "CONDVAR";
#endif
}

static inline const char *lf_sync_name(void)
{
#if LF_PROMOTE == LF_PROMOTE_CONDVAR
    return "condvar";
#elif LF_SYNC == LF_SYNC_FUTEX
    return "futex";
#else
    return "pthread";
#endif
}

static inline int lf_follower_init(lf_follower *f, int priority)
{
    if (f == NULL)
        return EINVAL;
    f->priority = priority;
    f->lf__role = LF__NONE;
    f->lf__notified = 0;
    f->lf__timed = 0;
    f->lf__src = NULL;
    lf__store(&f->lf__word, (uint32_t)LF__WAITING, relaxed);
    return lf__sync_init(f);
}

static inline void lf_follower_destroy(lf_follower *f)
{
    if (f)
        lf__sync_destroy(f);
}

/* The pool's lock: with priority inheritance under LF_PROMOTE_HEAP (REAL TIME in the
 * doc block), plain otherwise. A refusal is not an error: glibc (ENOTSUP from
 * pthread_mutex_init) and musl (from setprotocol) refuse the attribute when the kernel
 * has no PI futexes (CONFIG_FUTEX_PI off), and a HEAP pool still orders its followers
 * then; stats.prio_inherit tells a program that needs more. */
static inline int lf__lock_init(pthread_mutex_t *m, unsigned *inherits)
{
    *inherits = 0;
#ifdef LF__PRIO_INHERIT
    pthread_mutexattr_t a;
    if (pthread_mutexattr_init(&a) == 0) {
        if (pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT) == 0 &&
            pthread_mutex_init(m, &a) == 0)
            *inherits = 1;
        pthread_mutexattr_destroy(&a);
        if (*inherits)
            return 0;
    }
#endif
    return pthread_mutex_init(m, NULL);
}

static inline int lf_pool_init(lf_pool *p)
{
    int rc;
    unsigned inherits;

    if (p == NULL)
        return EINVAL;
    rc = lf__lock_init(&p->lf__lock, &inherits);
    if (rc)
        return rc;
#if LF_PROMOTE == LF_PROMOTE_CONDVAR
    rc = lf__cond_init_monotonic(&p->lf__cond);
    if (rc) {
        pthread_mutex_destroy(&p->lf__lock);
        return rc;
    }
    p->lf__reserved = 0;
#else
    lf__set_init(p);
#endif
    p->lf__leader = NULL;
    lf__store(&p->lf__shutdown, 0, relaxed);
    p->lf__deferred = 0;
    p->lf__busy_ns = 0;
    p->lf__followers = p->lf__processing = p->lf__joined = 0;
    p->lf__stats.promotions = p->lf__stats.promotions_vacant = 0;
    p->lf__stats.leads = p->lf__stats.timeouts = p->lf__stats.dispatch_errors = 0;
    p->lf__stats.notifications = p->lf__stats.takeovers = p->lf__stats.cancelled = 0;
    p->lf__stats.deferred = p->lf__stats.ticks = p->lf__stats.tick_leads = 0;
    p->lf__stats.leader = p->lf__stats.followers = 0;
    p->lf__stats.processing = p->lf__stats.joined = 0;
    p->lf__stats.prio_inherit = inherits;
    p->lf__tag = LF__TAG;
    return 0;
}

static inline int lf_pool_destroy(lf_pool *p)
{
    if (p == NULL || p->lf__tag != LF__TAG)
        return EINVAL;
    pthread_mutex_lock(&p->lf__lock);
    if (p->lf__leader || p->lf__followers || p->lf__processing || p->lf__joined) {
        pthread_mutex_unlock(&p->lf__lock);
        return EBUSY;
    }
    p->lf__tag = 0;
    pthread_mutex_unlock(&p->lf__lock);
#if LF_PROMOTE == LF_PROMOTE_CONDVAR
    pthread_cond_destroy(&p->lf__cond);
#endif
    pthread_mutex_destroy(&p->lf__lock);
    return 0;
}

/* A macro, not a function: static analysers then see the NULL checks at each use. */
#define lf__args_ok(p, f) ((p) != NULL && (f) != NULL && (p)->lf__tag == LF__TAG)

/* How a hand-off may wake its follower (DEFERRAL): at once; at once, but the pool is
 * busy (lf_pool_join, for a source that defers); or at its tick, if it has one. */
enum { LF__AT_ONCE = 0, LF__BUSY, LF__MAY_DEFER };

static inline long long lf__mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return lf__ts_ns(&ts);
}

/* The slot is being given up by its leader (lock held). Hand it to the next follower
 * in policy order, or leave it vacant. Returns the follower to wake after unlock
 * (NULL: nobody, or the wake-up is deferred to the follower's tick). */
static inline lf_follower *lf__handoff_as(lf_pool *p, int how)
{
    p->lf__deferred = 0;
    if (LF_DEFER_NS && LF_PROMOTE != LF_PROMOTE_CONDVAR && how != LF__AT_ONCE)
        p->lf__busy_ns = lf__mono_ns();
#if LF_PROMOTE == LF_PROMOTE_CONDVAR
    p->lf__leader = NULL;
    /* after shutdown the broadcast already released everybody: nothing to hand on */
    if (p->lf__followers && !lf__load(&p->lf__shutdown, relaxed)) {
        p->lf__reserved = 1;
        p->lf__stats.promotions++;
        pthread_cond_signal(&p->lf__cond);
    } else {
        p->lf__stats.promotions_vacant++;
    }
    return NULL;
#else
    lf_follower *next = lf__set_pop(p);

    p->lf__leader = next;
    if (next == NULL) {
        p->lf__stats.promotions_vacant++;
        return NULL;
    }
    p->lf__followers--;
    p->lf__stats.promotions++;
    p->lf__stats.leads++;
    next->lf__role = LF__LEADER;
    if (LF_DEFER_NS && how == LF__MAY_DEFER && next->lf__timed) {
        /* its tick wakes it; whoever asks to lead first takes the slot (lf__lead) */
        lf__store(&next->lf__word, (uint32_t)LF__WAKE_DEFERRED, release);
        p->lf__deferred = 1;
        p->lf__stats.deferred++;
        return NULL;
    }
    lf__post_locked(next, LF__WAKE_LEAD); /* last touch of next under the lock */
    return next;
#endif
}

static inline lf_follower *lf__handoff(lf_pool *p)
{
    return lf__handoff_as(p, LF__AT_ONCE);
}

/* A cleanup handler pushed and popped around a wait. glibc's pthread_cleanup_push
 * opens a block and ends in `do {`, so the `;` written after it is an empty
 * statement, which clang reports under -Wextra-semi-stmt (-Weverything): quiet from
 * the push to its pop, which is a line or two. */
#if defined(__clang__) && defined(__has_warning)
#if __has_warning("-Wextra-semi-stmt")
#define LF__CLEANUP_PUSH(fn, arg)                                                        \
    _Pragma("clang diagnostic push") _Pragma("clang diagnostic ignored \"-Wextra-semi-stmt\"") \
    pthread_cleanup_push(fn, arg)
#define LF__CLEANUP_POP(run) _Pragma("clang diagnostic pop") pthread_cleanup_pop(run)
#endif
#endif
#ifndef LF__CLEANUP_PUSH
#define LF__CLEANUP_PUSH(fn, arg) pthread_cleanup_push(fn, arg)
#define LF__CLEANUP_POP(run) pthread_cleanup_pop(run)
#endif

/* A condition wait up to deadline (NULL: none) that is a cancellation point with a
 * cleanup; the cleanup runs with m held (pthread_cond_wait takes it back first). */
static inline int lf__cond_wait_guarded(pthread_cond_t *c, pthread_mutex_t *m,
                                        const struct timespec *deadline,
                                        void (*cleanup)(void *), void *arg)
{
    int rc;
    LF__CLEANUP_PUSH(cleanup, arg);
    rc = deadline ? pthread_cond_timedwait(c, m, deadline) : pthread_cond_wait(c, m);
    LF__CLEANUP_POP(0);
    return rc;
}

/* CANCELLATION: a system call that POSIX makes a cancellation point but that is not
 * one of our waits (a write to a wake-up descriptor, a close, a request's write) runs
 * between these two, so a cancel cannot end the thread with a lock held or half a
 * request on the wire; the caller's state is back before any of its code runs.
 * (Neither is a cancellation point.) */
static inline int lf__nocancel_begin(void)
{
    int cs;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cs);
    return cs;
}

static inline void lf__nocancel_end(int cs)
{
    pthread_setcancelstate(cs, &cs);
}

/* Around a blocking system call that is one of our cancellation points (the
 * reactor's and the bound's waits): nothing, or in a TSan build (LF__TSAN_WAITS) the
 * cancellation point before it and cancellation off during it, for at most
 * lf__blocking_ms(ms) (an early return is a spurious wake-up to every caller). */
static inline int lf__blocking_begin(void)
{
#ifdef LF__TSAN_WAITS
    pthread_testcancel();
    return lf__nocancel_begin();
#else
    return 0;
#endif
}

static inline void lf__blocking_end(int cs)
{
#ifdef LF__TSAN_WAITS
    lf__nocancel_end(cs);
#else
    (void)cs;
#endif
}

static inline int lf__blocking_ms(int ms)
{
#ifdef LF__TSAN_WAITS
    return ms < 0 || ms > LF__TSAN_SLICE_MS ? LF__TSAN_SLICE_MS : ms;
#else
    return ms;
#endif
}

/* CANCELLATION of a parked follower (the cleanup handler of its wait). The futex
 * park waits without the lock; pthread_cond_wait takes it back before the cleanup
 * runs. Under the lock the follower's role is final: still parked, it leaves the
 * follower set; promoted meanwhile (the slot is its own), it hands the slot on as
 * lf_pool_leave would; notified or shut down, it has nothing left to give back. */
typedef struct LF__CFG(lf__park_guard) {
    lf_pool *p;
    lf_follower *f;
} lf__park_guard;

static inline void lf__unpark(void *arg)
{
    lf_pool *p = ((lf__park_guard *)arg)->p;
    lf_follower *f = ((lf__park_guard *)arg)->f;
    lf_follower *next = NULL;

#if LF_SYNC == LF_SYNC_FUTEX && LF_PROMOTE != LF_PROMOTE_CONDVAR
    pthread_mutex_lock(&p->lf__lock);
#endif
    p->lf__stats.cancelled++;
#if LF_PROMOTE == LF_PROMOTE_CONDVAR
    p->lf__followers--;
    /* the signal for a reserved slot may have come to us: pass it on */
    if (p->lf__leader == NULL && p->lf__reserved) {
        if (p->lf__followers)
            pthread_cond_signal(&p->lf__cond);
        else
            p->lf__reserved = 0;
    }
#else
    if (f->lf__role == LF__FOLLOWER) {
        lf__set_remove(p, f);
        p->lf__followers--;
    } else if (f->lf__role == LF__LEADER) {
        LF_ASSERT(p->lf__leader == f);
        next = lf__handoff(p);
    }
#endif
    f->lf__role = LF__NONE;
    pthread_mutex_unlock(&p->lf__lock);
    if (next)
        lf__post_unlocked(next);
}

#if LF_PROMOTE == LF_PROMOTE_CONDVAR
/* One wait of a CONDVAR follower, with its cleanup (its own function: nothing here
 * changes after the cleanup is pushed). */
static inline int lf__cv_wait(lf_pool *p, lf_follower *f, const struct timespec *deadline)
{
    lf__park_guard g;
    g.p = p;
    g.f = f;
    return lf__cond_wait_guarded(&p->lf__cond, &p->lf__lock, deadline, lf__unpark, &g);
}
#else
static inline int lf__park_guarded(lf_pool *p, lf_follower *f, const struct timespec *deadline)
{
    lf__park_guard g;
    int rc;
    g.p = p;
    g.f = f;
    LF__CLEANUP_PUSH(lf__unpark, &g);
    rc = lf__park(p, f, deadline);
    LF__CLEANUP_POP(0);
    return rc;
}

/* DEFERRAL, lock held: f leads by a deferred promotion that it found at its tick but
 * that was made less than LF_DEFER_NS ago (the promoter is not away; it defers anew
 * at every turn). Sleep on until `until` (the deferral LF_DEFER_NS old), a wake-up
 * (lf__undefer) or, for nothing, a takeover of the promotion (the word back to
 * WAITING, f back in the set: it sleeps on to `until`, then parks as any follower).
 * Returns with the lock held; a cancellation point, with lf__park's cleanup. */
static inline void lf__defer_sleep(lf_pool *p, lf_follower *f, const struct timespec *until)
{
    lf__park_guard g;
    g.p = p;
    g.f = f;
    LF__CLEANUP_PUSH(lf__unpark, &g);
#if LF_SYNC == LF_SYNC_FUTEX
    pthread_mutex_unlock(&p->lf__lock);
    /* returns at once if the word changed: taken over, or woken by lf__undefer */
    (void)lf__futex_wait(f, LF__WAKE_DEFERRED, until);
    pthread_mutex_lock(&p->lf__lock);
#else
    (void)pthread_cond_timedwait(&f->lf__cond, &p->lf__lock, until);
#endif
    LF__CLEANUP_POP(0);
}
#endif

#if LF_PROMOTE != LF_PROMOTE_CONDVAR
/* Lock held, f in the set and about to park: how long (DEFERRAL). While the pool is
 * busy, the follower next in line parks with a tick, LF_DEFER_NS from now, and says
 * so in f->lf__timed: only such a follower's wake-up may be deferred, since its tick
 * bounds the delay. Everybody else, and every follower of an idle pool, parks until
 * woken (or its own deadline); one passed over since re-decides at its tick, so the
 * ticks of a busy pool come from one follower, and an idle pool has none. Returns
 * what to park until. */
static inline const struct timespec *lf__tick(lf_pool *p, lf_follower *f,
                                              const struct timespec *deadline,
                                              struct timespec *tick)
{
    long long now, at;
    f->lf__timed = 0;
    if (!LF_DEFER_NS || p->lf__busy_ns == 0 || lf__set_front(p) != f)
        return deadline;
    now = lf__mono_ns();
    if (now - p->lf__busy_ns >= 2LL * LF_DEFER_NS)
        return deadline; /* no promotion for two ticks: idle */
    at = now + LF_DEFER_NS;
    if (deadline != NULL && lf__ts_ns(deadline) <= at)
        return deadline;
    tick->tv_sec = (time_t)(at / 1000000000LL);
    tick->tv_nsec = (long)(at % 1000000000LL);
    f->lf__timed = 1;
    return tick;
}

/* Lock held: a leader whose wake-up was deferred is needed now (a shutdown, a
 * notification for it, a thread that may not take its promotion over): wake it. */
static inline void lf__undefer(lf_pool *p)
{
    lf_follower *g = p->lf__leader;
    if (!p->lf__deferred)
        return;
    p->lf__deferred = 0;
    if (g != NULL && lf__load(&g->lf__word, relaxed) == LF__WAKE_DEFERRED) {
        /* a plain promotion now: lf__defer_sleep's futex wait sees the change */
        lf__store(&g->lf__word, (uint32_t)LF__WAKE_LEAD, release);
#if LF_SYNC == LF_SYNC_PTHREAD
        pthread_cond_signal(&g->lf__cond);
#else
        lf__post_unlocked(g); /* under the lock: not a hot path */
#endif
    }
}
#else
static inline void lf__undefer(lf_pool *p)
{
    (void)p; /* CONDVAR defers nothing */
}
#endif

/* Wait as a follower until promoted (0), shut down (ECANCELED) or out of time
 * (ETIMEDOUT). Entered with the lock held and the slot taken; returns unlocked. */
static inline int lf__follow(lf_pool *p, lf_follower *f, const struct timespec *deadline)
{
    f->lf__role = LF__FOLLOWER;
    p->lf__followers++;
#if LF_PROMOTE == LF_PROMOTE_CONDVAR
    /* a newcomer waits at least once: a reserved slot belongs to the followers that
     * were parked when it was promised, and the signal went to one of them */
    int newcomer = 1;
    while ((p->lf__leader != NULL || newcomer) && !lf__load(&p->lf__shutdown, relaxed) &&
           !f->lf__notified) {
        int rc = lf__cv_wait(p, f, deadline);
        newcomer = 0;
        /* out of time, but a vacant slot is taken anyway: it may be reserved for us */
        if (rc == ETIMEDOUT && p->lf__leader != NULL && !lf__load(&p->lf__shutdown, relaxed) &&
            !f->lf__notified) {
            p->lf__followers--;
            f->lf__role = LF__NONE;
            p->lf__stats.timeouts++;
            pthread_mutex_unlock(&p->lf__lock);
            return ETIMEDOUT;
        }
    }
    p->lf__followers--;
    if (lf__load(&p->lf__shutdown, relaxed)) {
        f->lf__role = LF__NONE;
        pthread_mutex_unlock(&p->lf__lock);
        return ECANCELED;
    }
    if (f->lf__notified) {
        f->lf__notified = 0;
        f->lf__role = LF__NONE;
        /* a slot reserved for the parked followers must not wait for us: hand the
         * promise to another one, or drop it if nobody is left */
        if (p->lf__leader == NULL && p->lf__reserved) {
            if (p->lf__followers)
                pthread_cond_signal(&p->lf__cond);
            else
                p->lf__reserved = 0;
        }
        pthread_mutex_unlock(&p->lf__lock);
        return EINTR;
    }
    p->lf__leader = f;
    p->lf__reserved = 0;
    f->lf__role = LF__LEADER;
    p->lf__stats.leads++;
    pthread_mutex_unlock(&p->lf__lock);
    return 0;
#else
    lf__store(&f->lf__word, (uint32_t)LF__WAITING, relaxed);
    lf__set_push(p, f);
    for (;;) {
        struct timespec tick;
        const struct timespec *until = lf__tick(p, f, deadline, &tick);
        if (lf__park_guarded(p, f, until) != ETIMEDOUT)
            break;
        /* lock held: the verdict is final now. Still waiting means nobody chose us. */
        if (lf__load(&f->lf__word, relaxed) == LF__WAITING) {
            if (until != deadline) { /* our tick, not our deadline: park again */
                p->lf__stats.ticks++;
                continue;
            }
            lf__set_remove(p, f);
            p->lf__followers--;
            f->lf__role = LF__NONE;
            p->lf__stats.timeouts++;
            pthread_mutex_unlock(&p->lf__lock);
            return ETIMEDOUT;
        }
        /* deferred to us, but only just now: the promoter is not away, it defers at
         * every turn. Leading now would move the leadership for nothing (and the
         * promoter would park): sleep on until the deferral is LF_DEFER_NS old. */
        if (LF_DEFER_NS && until != deadline) {
            for (;;) {
                long long due = p->lf__busy_ns + LF_DEFER_NS; /* (the deferral's time) */
                struct timespec at;
                if (lf__load(&f->lf__word, relaxed) != LF__WAKE_DEFERRED || !p->lf__deferred ||
                    p->lf__leader != f || lf__mono_ns() >= due ||
                    (deadline != NULL && lf__ts_ns(deadline) <= due))
                    break;
                p->lf__stats.ticks++;
                at.tv_sec = (time_t)(due / 1000000000LL);
                at.tv_nsec = (long)(due % 1000000000LL);
                lf__defer_sleep(p, f, &at);
            }
            if (lf__load(&f->lf__word, relaxed) == LF__WAITING)
                continue; /* taken over meanwhile: back in the set, park again */
        }
        /* promoted at the last moment, or deferred to this tick: claim it while the
         * lock keeps takeovers out */
        if (lf__is_promotion(lf__load(&f->lf__word, relaxed))) {
            lf__store(&f->lf__word, (uint32_t)LF__LEADING, relaxed);
            if (p->lf__deferred && p->lf__leader == f) {
                p->lf__deferred = 0;
                p->lf__stats.tick_leads++;
            }
        }
        pthread_mutex_unlock(&p->lf__lock);
        break;
    }
    /* the promoter, lf_pool_notify or lf_pool_shutdown set our role before posting the
     * verdict */
    switch (lf__load(&f->lf__word, relaxed)) {
    case LF__LEADING:
        return 0;
    case LF__WAKE_NOTIFY:
        return EINTR;
    default:
        return ECANCELED;
    }
#endif
}

#if LF_PROMOTE != LF_PROMOTE_CONDVAR
/* Lock held, the slot taken by another thread. If it is a promoted follower that has
 * not started to run (its word still says WAKE_LEAD), withdraw the promotion, put the
 * follower back and lead instead (TAKEOVER in the doc block). 1 if f leads now. */
static inline int lf__takeover(lf_pool *p, lf_follower *f)
{
    lf_follower *g = p->lf__leader; /* not NULL: the caller found the slot taken */
    uint32_t w;

    LF_ASSERT(g->lf__role == LF__LEADER);
    if (g->lf__notified)
        return 0;
#if LF_PROMOTE == LF_PROMOTE_HEAP
    if (f->priority < g->priority)
        return 0;
#endif
    w = lf__load(&g->lf__word, relaxed); /* (under the lock only g's own claim moves it) */
    if (!lf__is_promotion(w) || !lf__word_claim(g, w, LF__WAITING))
        return 0; /* it runs already (or has been waiting as leader since lf_pool_lead) */
    g->lf__role = LF__FOLLOWER;
    lf__set_putback(p, g);
    p->lf__followers++;
    p->lf__stats.takeovers++;
    p->lf__deferred = 0;
    p->lf__leader = f;
    f->lf__role = LF__LEADER; /* (leads: g's promotion counted it already) */
    return 1;
}
#endif

/* try: do not follow; EBUSY if the slot is taken (or promised to a follower). */
static inline int lf__lead(lf_pool *p, lf_follower *f, const lf_source *src,
                           const struct timespec *deadline, int try_only)
{
    if (!lf__args_ok(p, f) || !lf__deadline_ok(deadline))
        return EINVAL;
    pthread_mutex_lock(&p->lf__lock);
    if (f->lf__role == LF__LEADER || f->lf__role == LF__FOLLOWER) {
        pthread_mutex_unlock(&p->lf__lock);
        return EINVAL;
    }
    int back = f->lf__role == LF__PROCESSING; /* back from processing: may take over */
    if (back) {
        p->lf__processing--;
        f->lf__role = LF__NONE;
    }
    if (f->lf__notified) { /* it came while we were not parked: report it now */
        f->lf__notified = 0;
        if (back)
            lf__undefer(p); /* we will not be the one to take it */
        pthread_mutex_unlock(&p->lf__lock);
        return EINTR;
    }
    if (lf__load(&p->lf__shutdown, relaxed)) {
        pthread_mutex_unlock(&p->lf__lock);
        return ECANCELED;
    }
    f->lf__src = src;
#if LF_PROMOTE == LF_PROMOTE_CONDVAR
    if (p->lf__leader == NULL && (!p->lf__reserved || (LF_TAKEOVER && back))) {
        /* a reserved slot taken over: the signalled follower finds it taken and waits on */
        if (p->lf__reserved) {
            p->lf__reserved = 0;
            p->lf__stats.takeovers++;
        }
#else
    if (p->lf__leader == NULL) {
        LF_ASSERT(p->lf__followers == 0); /* a direct hand-off never leaves them behind */
#endif
        p->lf__leader = f;
        f->lf__role = LF__LEADER;
        p->lf__stats.leads++;
        pthread_mutex_unlock(&p->lf__lock);
        return 0;
    }
#if LF_PROMOTE != LF_PROMOTE_CONDVAR
    /* a deferred promotion (DEFERRAL) is anybody's: its follower has not been woken */
    if (((LF_TAKEOVER && back) || p->lf__deferred) && lf__takeover(p, f)) {
        pthread_mutex_unlock(&p->lf__lock);
        return 0;
    }
    lf__undefer(p); /* not ours to take: do not leave it to its tick */
#endif
    if (try_only) {
        pthread_mutex_unlock(&p->lf__lock);
        return EBUSY;
    }
    return lf__follow(p, f, deadline);
}

/* Contract: any thread with its own follower record. Blocks. */
static inline int lf_pool_lead(lf_pool *p, lf_follower *f, const struct timespec *deadline)
{
    return lf__lead(p, f, NULL, deadline, 0);
}

/* Contract: any thread with its own follower record. Never blocks (the pool lock
 * only): lead if the slot is vacant, else EBUSY at once. */
static inline int lf_pool_try_lead(lf_pool *p, lf_follower *f)
{
    return lf__lead(p, f, NULL, NULL, 1);
}

static inline int lf__promote(lf_pool *p, lf_follower *f, int how)
{
    lf_follower *next;

    if (!lf__args_ok(p, f))
        return EINVAL;
    pthread_mutex_lock(&p->lf__lock);
    if (p->lf__leader != f) {
        pthread_mutex_unlock(&p->lf__lock);
        return EPERM;
    }
    f->lf__role = LF__PROCESSING;
    p->lf__processing++;
#if LF_PROMOTE == LF_PROMOTE_HEAP
    /* a follower of higher priority is not left asleep behind us (REAL TIME) */
    if (how == LF__MAY_DEFER && lf__set_front(p) && lf__set_front(p)->priority > f->priority)
        how = LF__BUSY;
#endif
    next = lf__handoff_as(p, how);
    pthread_mutex_unlock(&p->lf__lock);
    if (next)
        lf__post_unlocked(next);
    return 0;
}

/* Contract: the leader only (EPERM otherwise). Never blocks. */
static inline int lf_pool_promote(lf_pool *p, lf_follower *f)
{
    return lf__promote(p, f, LF__AT_ONCE);
}

/* Contract: the thread that owns f, in any role but parked follower. Never blocks. */
static inline int lf_pool_leave(lf_pool *p, lf_follower *f)
{
    lf_follower *next = NULL;

    if (!lf__args_ok(p, f))
        return EINVAL;
    pthread_mutex_lock(&p->lf__lock);
    if (f->lf__role == LF__FOLLOWER) {
        pthread_mutex_unlock(&p->lf__lock);
        return EINVAL;
    }
    if (f->lf__role == LF__LEADER) {
        LF_ASSERT(p->lf__leader == f);
        next = lf__handoff(p);
    } else if (f->lf__role == LF__PROCESSING) {
        p->lf__processing--;
        lf__undefer(p); /* a promoter that will not be back to take it */
    }
    f->lf__role = LF__NONE;
    pthread_mutex_unlock(&p->lf__lock);
    if (next)
        lf__post_unlocked(next);
    return 0;
}

/* Contract: any thread, also a dispatch callback. Never blocks (only the pool lock).
 * Specific Notification for a reason other than leadership: wake exactly f. */
static inline int lf_pool_notify(lf_pool *p, lf_follower *f)
{
    if (!lf__args_ok(p, f))
        return EINVAL;
    pthread_mutex_lock(&p->lf__lock);
    p->lf__stats.notifications++;
#if LF_PROMOTE == LF_PROMOTE_CONDVAR
    /* one condition variable for all: the notified follower cannot be singled out */
    int parked = f->lf__role == LF__FOLLOWER;
    f->lf__notified = 1;
    if (parked)
        pthread_cond_broadcast(&p->lf__cond);
    pthread_mutex_unlock(&p->lf__lock);
    return parked ? 0 : EBUSY;
#else
    if (f->lf__role != LF__FOLLOWER) {
        f->lf__notified = 1; /* not parked: its next lead or join reports it */
        /* promoted, its wake-up deferred: wake it now. It leads, and its next lead
         * returns EINTR; ending the turn it starts (waking its s->wait) is the
         * caller's business, as for any leader (EBUSY below). */
        if (p->lf__leader == f)
            lf__undefer(p);
        pthread_mutex_unlock(&p->lf__lock);
        return EBUSY;
    }
    lf__set_remove(p, f);
    p->lf__followers--;
    f->lf__role = LF__NONE;
    lf__post_locked(f, LF__WAKE_NOTIFY); /* last touch of f under the lock */
    pthread_mutex_unlock(&p->lf__lock);
    lf__post_unlocked(f);
#endif
    return 0;
}

/* Contract: any thread, any time, also from a dispatch callback. Never blocks on
 * other threads (it only takes the pool lock). */
static inline int lf_pool_shutdown(lf_pool *p)
{
    if (p == NULL || p->lf__tag != LF__TAG)
        return EINVAL;
    pthread_mutex_lock(&p->lf__lock);
    if (lf__load(&p->lf__shutdown, relaxed)) {
        pthread_mutex_unlock(&p->lf__lock);
        return 0;
    }
    /* relaxed: every decision that depends on the flag is taken under this lock,
     * except the leader's retry check in lf_pool_join, which only needs to see it
     * eventually (the interrupt below is what wakes it) */
    lf__store(&p->lf__shutdown, 1, relaxed);
#if LF_PROMOTE == LF_PROMOTE_CONDVAR
    pthread_cond_broadcast(&p->lf__cond); /* the one broadcast: everybody must go */
#else
    for (;;) {
        /* pop first: once its verdict is posted a follower may return and reuse its
         * record, so we must not read its links afterwards */
        lf_follower *f = lf__set_pop(p);
        if (f == NULL)
            break;
        p->lf__followers--;
        f->lf__role = LF__NONE;
        lf__post_locked(f, LF__WAKE_SHUTDOWN);
        lf__post_unlocked(f); /* under the lock here: shutdown is not a hot path */
    }
    lf__undefer(p); /* a leader promoted but asleep: it sees the flag when it runs */
#endif
    if (p->lf__leader && p->lf__leader->lf__src && p->lf__leader->lf__src->interrupt) {
        /* under the lock: a cancellation point in it (a write to a wake-up descriptor)
         * must not end us here (CANCELLATION) */
        int cs = lf__nocancel_begin();
        p->lf__leader->lf__src->interrupt(p->lf__leader->lf__src->ctx);
        lf__nocancel_end(cs);
    }
    pthread_mutex_unlock(&p->lf__lock);
    return 0;
}

/* SCHEDULING in the doc block: with LF_SCHED_BATCH=1 (asked for by name; off by
 * default) a joined SCHED_OTHER thread runs as SCHED_BATCH. The
 * kernel is asked about the calling thread (pid 0) by system call: glibc's
 * pthread_getschedparam answers from a cache that misses changes made with
 * sched_setscheduler or chrt (a stale SCHED_OTHER would demote a real-time thread),
 * and musl's sched_getscheduler refuses (POSIX means the process; Linux the thread).
 * The policies' numbers are the kernel's, the same on every architecture (glibc
 * names SCHED_BATCH only with _GNU_SOURCE). Returns 1 if it changed the policy. */
#define LF__SCHED_OTHER 0
#define LF__SCHED_BATCH 3
static inline int lf__sched_batch(void)
{
#if LF_SCHED_BATCH
    struct sched_param sp;
    if (lf__syscall(SYS_sched_getscheduler, 0L) != LF__SCHED_OTHER)
        return 0;
    sp.sched_priority = 0;
    return lf__syscall(SYS_sched_setscheduler, 0L, (long)LF__SCHED_BATCH, &sp) == 0;
#else
    return 0;
#endif
}

static inline void lf__sched_restore(int changed)
{
#if LF_SCHED_BATCH
    /* only if it is still ours: a policy the thread chose meanwhile stays */
    if (changed && lf__syscall(SYS_sched_getscheduler, 0L) == LF__SCHED_BATCH) {
        struct sched_param sp;
        sp.sched_priority = 0;
        lf__syscall(SYS_sched_setscheduler, 0L, (long)LF__SCHED_OTHER, &sp);
    }
#else
    (void)changed;
#endif
}

/* CANCELLATION of a joined thread, wherever it is in the loop: as leader in the
 * source's wait, processing in its dispatch (a parked follower left its set in
 * lf__unpark first). It gives its role back as lf_pool_leave does and leaves. */
typedef struct LF__CFG(lf__join_guard) {
    lf_pool *p;
    lf_follower *f;
    const lf_source *s;
    int (*defer)(void *ctx); /* DEFERRAL: may a promotion's wake-up wait (NULL: never) */
    const struct timespec *deadline;
    int batch;
    int rc;
} lf__join_guard;

static inline void lf__join_cancelled(void *arg)
{
    lf__join_guard *j = (lf__join_guard *)arg;
    lf_pool *p = j->p;
    lf_follower *f = j->f, *next = NULL;

    pthread_mutex_lock(&p->lf__lock);
    if (f->lf__role == LF__LEADER) {
        LF_ASSERT(p->lf__leader == f);
        next = lf__handoff(p);
    } else if (f->lf__role == LF__PROCESSING) {
        p->lf__processing--;
        lf__undefer(p);
    }
    if (f->lf__role != LF__NONE) /* (a parked follower was counted by lf__unpark) */
        p->lf__stats.cancelled++;
    f->lf__role = LF__NONE;
    p->lf__joined--;
    pthread_mutex_unlock(&p->lf__lock);
    if (next)
        lf__post_unlocked(next);
    lf__sched_restore(j->batch);
}

/* The loop of lf_pool_join (its own function: the cleanup is pushed around it). */
static inline void lf__join_loop(lf__join_guard *j)
{
    lf_pool *p = j->p;
    lf_follower *f = j->f;
    const lf_source *s = j->s;
    const struct timespec *deadline = j->deadline;
    int rc;

    while ((rc = lf__lead(p, f, s, deadline, 0)) == 0) {
        lf_event ev;
        do {
            /* the pool lock ordered this against lf_pool_shutdown: either lf__lead saw
             * the flag, or shutdown saw us as leader and interrupted our source (which
             * makes the wait return); this check ends the retry loop afterwards */
            rc = lf__load(&p->lf__shutdown, relaxed) ? ECANCELED : s->wait(s->ctx, &ev, deadline);
        } while (rc == EINTR || rc == EAGAIN);
        if (rc != 0) {
            lf_pool_leave(p, f); /* hand leadership on before returning */
            if (rc == ETIMEDOUT) {
                pthread_mutex_lock(&p->lf__lock);
                p->lf__stats.timeouts++;
                pthread_mutex_unlock(&p->lf__lock);
            }
            break;
        }
        lf__promote(p, f, j->defer == NULL ? LF__AT_ONCE
                                           : j->defer(s->ctx) ? LF__MAY_DEFER : LF__BUSY);
        if (s->dispatch(s->ctx, &ev) != 0) {
            pthread_mutex_lock(&p->lf__lock);
            p->lf__stats.dispatch_errors++;
            pthread_mutex_unlock(&p->lf__lock);
        }
        if (deadline != NULL) {
            /* the wait looks at the deadline only when it would block: a source that
             * always has work (or a vacant slot taken at once) would keep us past it */
            struct timespec now;
            clock_gettime(CLOCK_MONOTONIC, &now);
            if (lf__ts_ns(&now) >= lf__ts_ns(deadline)) {
                lf_pool_leave(p, f); /* a processing thread: no longer counted */
                pthread_mutex_lock(&p->lf__lock);
                p->lf__stats.timeouts++;
                pthread_mutex_unlock(&p->lf__lock);
                rc = ETIMEDOUT;
                break;
            }
        }
    }
    j->rc = rc;
}

/* Contract: any thread with its own follower record; s must outlive the call.
 * See the doc block for the loop and its results. */
/* lf_pool_join, with the DEFERRAL hook of a source that can say whether what it holds
 * is young (lf_reactor.h's; not public yet: the hook may change). */
static inline int lf__pool_join_as(lf_pool *p, lf_follower *f, const lf_source *s,
                                   const struct timespec *deadline, int (*defer)(void *ctx))
{
    lf__join_guard j;

    if (!lf__args_ok(p, f) || s == NULL || s->wait == NULL || s->dispatch == NULL ||
        !lf__deadline_ok(deadline))
        return EINVAL;
    pthread_mutex_lock(&p->lf__lock);
    if (f->lf__role != LF__NONE) {
        pthread_mutex_unlock(&p->lf__lock);
        return EINVAL;
    }
    p->lf__joined++;
    pthread_mutex_unlock(&p->lf__lock);
    j.p = p;
    j.f = f;
    j.s = s;
    j.defer = defer;
    j.deadline = deadline;
    j.batch = lf__sched_batch();
    j.rc = 0;
    LF__CLEANUP_PUSH(lf__join_cancelled, &j);
    lf__join_loop(&j);
    LF__CLEANUP_POP(0);

    lf__sched_restore(j.batch);
    pthread_mutex_lock(&p->lf__lock);
    p->lf__joined--;
    pthread_mutex_unlock(&p->lf__lock);
    return j.rc;
}

static inline int lf_pool_join(lf_pool *p, lf_follower *f, const lf_source *s,
                               const struct timespec *deadline)
{
    return lf__pool_join_as(p, f, s, deadline, NULL);
}

/* The *_stats functions share their names with their structs, as stat() does with
 * struct stat; C++ compilers may warn that the function hides the struct's
 * constructor (g++ -Wshadow). Deliberate: quiet it where it is said. */
#if defined(__cplusplus) && defined(__GNUC__)
#define LF__STATS_NAME_BEGIN _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wshadow\"")
#define LF__STATS_NAME_END _Pragma("GCC diagnostic pop")
#else
#define LF__STATS_NAME_BEGIN
#define LF__STATS_NAME_END
#endif

/* Contract: any thread. A snapshot taken under the pool lock. */
LF__STATS_NAME_BEGIN
static inline int lf_pool_stats(lf_pool *p, struct lf_pool_stats *out)
{
    if (out == NULL)
        return EINVAL;
    memset((void *)out, 0, sizeof *out); /* defined on error too */
    if (p == NULL || p->lf__tag != LF__TAG)
        return EINVAL;
    pthread_mutex_lock(&p->lf__lock);
    *out = p->lf__stats;
    out->leader = p->lf__leader != NULL;
    out->followers = p->lf__followers;
    out->processing = p->lf__processing;
    out->joined = p->lf__joined;
    pthread_mutex_unlock(&p->lf__lock);
    return 0;
}
LF__STATS_NAME_END

#endif /* LF_H_INCLUDED */

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
