/* writeq.pml - lf_bound.h's write queue (PIPELINING): three client threads each make
 * two calls. A call queues its request; if nobody writes, it becomes the writer and
 * writes what is queued (one write takes a non-empty prefix of the queue, as a short
 * sendmsg would); a writer whose own request is out stops after one more write
 * (LF_BOUND_WRITE_ROUNDS 1), or at once when the socket is "full", and orphans the
 * queue: every thread whose request is queued is notified (kept if it is not parked),
 * and the first to look takes over as writer. A call that finds a writer at work goes
 * on to its join: it parks until its reply or a notification, and looks for an
 * orphaned queue holding its request before each park. The server answers each
 * request once it is written. The lock is lf__send: one atomic step per locked region.
 *
 * Checked: every call returns (no thread parks for good while its request is queued
 * and nobody writes: no lost hand-on), every request is written exactly once (queue
 * order is the array's: the model's writer takes the head only), at most one writer
 * at a time.
 *
 * FIXED=0: the orphaning writer does not notify the queued threads; spin must find
 * the threads parked with their requests queued and nobody writing.
 *
 *   lf_bound.h                                  here
 *   lf__bound_post_locked (queue, maybe write)   post
 *   lf__bound_write_queue                        writer()
 *   lf__bound_orphan: orphaned, wake each        orphan(): notify[]
 *   lf_pool_notify (kept if not parked)          notify[t] = 1
 *   lf__bound_adopt in the join loops            adopt, before each park
 *   lf_pool_lead / park                          park: notify[me] || replied[me]
 */
#ifndef FIXED
#define FIXED 1
#endif
#define N 3
#define CALLS 2
#define QMAX 3
#define NONE 255

byte q[QMAX];            /* the queue: owners, in order */
byte qlen;
bit sending;             /* a writer is at work */
bit orphaned;
bit queued[N], written[N], replied[N], notify[N];
byte writers;            /* writers at once: at most one */
byte returned;

hidden byte k, j;          /* scratch of the d_steps below */

inline pop_head()
{
    assert(queued[q[0]] && !written[q[0]]); /* once, and only what was queued */
    queued[q[0]] = 0;
    written[q[0]] = 1;
    k = 0;
    do
    :: k + 1 < qlen -> q[k] = q[k + 1]; k++
    :: else -> break
    od;
    q[qlen - 1] = NONE;
    qlen--;
    k = 0
}

/* lf__bound_orphan: under lf__send, the queue non-empty, none of it begun */
inline orphan()
{
    orphaned = 1;
    j = 0;
    do
    :: j < qlen ->
#if FIXED
        notify[q[j]] = 1;
#endif
        j++
    :: else -> break
    od;
    j = 0
}

/* lf__bound_write_queue(own = me), lf__send held at each step's start; the caller
 * (post, adopt) clears the writer's flag before it lets go of lf__send */
inline writer()
{
    byte rounds;
    rounds = 0;
    writers++;
    assert(writers == 1);
    do
    /* the writer's flag is cleared in the same locked region as the last look */
    :: atomic { qlen == 0 -> writers--; sending = 0; break }
    :: atomic { qlen > 0 && !queued[me] -> /* after a write of others', or full */
        d_step { orphan() }; writers--; sending = 0; rounds = 0; break }
    :: atomic { qlen > 0 && (queued[me] || rounds < 1) ->
        /* one write: the head, and perhaps more (a short write takes a prefix) */
        d_step { pop_head() };
        do
        :: qlen > 0 -> d_step { pop_head() }
        :: true -> break
        od;
        if
        :: !queued[me] && rounds < 1 -> rounds++    /* counted once its own is out */
        :: else -> skip
        fi }
    od
}

proctype server()
{
    byte i;
end:
    do
    :: atomic { written[0] && !replied[0] -> replied[0] = 1 }
    :: atomic { written[1] && !replied[1] -> replied[1] = 1 }
    :: atomic { written[2] && !replied[2] -> replied[2] = 1 }
    od
}

proctype client(byte me)
{
    byte call;
    bit iwrite;
    call = 0;
    do
    :: call == CALLS -> break
    :: else ->
        /* lf_bound_call: post (lf__send held) */
        atomic {
            written[me] = 0; replied[me] = 0; notify[me] = 0;
            q[qlen] = me; qlen++; queued[me] = 1;
            iwrite = 0;
            if
            :: !sending -> sending = 1; orphaned = 0; iwrite = 1
            :: else -> skip
            fi
        }
        if
        :: iwrite -> writer()
        :: else -> skip
        fi;
        /* the join's loop: look (adopt), then park until a reply or a notification */
        do
        :: atomic { replied[me] -> break }
        :: atomic { !replied[me] ->
            iwrite = 0;
            if
            :: orphaned && queued[me] && !sending && qlen > 0 ->
                sending = 1; orphaned = 0; iwrite = 1
            :: else -> skip
            fi }
            if
            :: iwrite -> writer()
            :: else ->
                atomic { (notify[me] || replied[me]) -> notify[me] = 0 }
            fi
        od;
        call++
    od;
    atomic { returned++ }
}

init {
    d_step {
        k = 0;
        do
        :: k < QMAX -> q[k] = NONE; k++
        :: else -> break
        od;
        k = 0
    };
    atomic {
        run server();
        run client(0);
        run client(1);
        run client(2)
    }
    /* every call returns (a client parked for good is an invalid end state), and
     * then nothing is left queued or half done */
    returned == N;
    assert(qlen == 0 && !sending && writers == 0)
}
