/* defer_takeover.pml - defer.pml with LF_TAKEOVER=1 (what LF_SCHED_BATCH=1 turns on):
 * a thread back from processing may also take over a woken promotion whose follower
 * has not run yet, beside the deferred ones anybody may take. The same checks; one
 * of them (one thread acting as leader) is what a takeover could break, e.g. an
 * lf__undefer that rewrote a word its follower had already claimed. */
#define TAKEOVER 1
#include "defer.pml"
