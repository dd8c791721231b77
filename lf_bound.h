/* SPDX-License-Identifier: MIT (the licence text is at the end of this file) */
/* lf_bound.h - bound handle/thread associations (POSA2 Leader/Followers variant):
 * many client threads share ONE multiplexed connection; whoever leads reads the
 * replies and hands each one to exactly the thread that waits for it.
 *
 * WHAT IT DOES
 *   Every thread that sent a request waits in lf_bound_join. One of them is the
 *   LEADER: it reads frames from the connection, finds the waiting context of each
 *   reply by its request id, copies the body into that context's buffer and wakes
 *   exactly that thread through its own synchronizer (Specific Notification, see
 *   lf_pool_notify in lf.h). The others are FOLLOWERS. When the leader's own reply
 *   arrives it promotes the next follower, in LF_PROMOTE order, and returns. Replies
 *   may come in any order; none is ever delivered to the wrong thread.
 *
 * QUICK START
 *   #include "lf_bound.h"
 *   static int parse(void *user, const unsigned char *hdr, uint64_t *id, size_t *len)
 *       { ...decode your header...; return 0; }     (or EPROTO, or ENOMSG: skip it)
 *   struct lf_bound_hooks hooks = { .header_len = 12, .parse_header = parse };
 *   lf_bound b;  lf_bound_init(&b, connected_fd, &hooks);
 *
 *   each client thread, per request (the context can live on its stack):
 *       char reply[256];  lf_bound_ctx c;
 *       lf_bound_ctx_init(&c, reply, sizeof reply, 0);
 *       rc = lf_bound_call(&b, &c, id, request, request_len, deadline);
 *       (0: c.len bytes of reply in c.buf) ... lf_bound_ctx_destroy(&c);
 *
 *   lf_bound_shutdown(&b); join the threads; lf_bound_destroy(&b); close(fd);
 *   Build: cc -std=c11 -D_POSIX_C_SOURCE=200809L ... -pthread   (lf.h only)
 *
 *   Hybrid (waiting threads also serve an lf_reactor, see HYBRID below):
 *   #define LF_BOUND_REACTOR 1   before #include "lf_bound.h" (it includes
 *   lf_reactor.h; link liburcu as that header says), then lf_bound_attach(&b, &r).
 *
 * CONFIGURATION (before #include; the same in every file that shares a bound)
 *   LF_PROMOTE, LF_SYNC   as in lf.h: the order in which leadership passes among the
 *                         waiting threads. FIFO suits servers that answer in request
 *                         order (the oldest waiter leads and usually reads its own
 *                         reply first); LIFO keeps the hottest thread leading.
 *   LF_BOUND_RXBUF        bytes of the leader's receive buffer, inside lf_bound
 *                         (default 16384). One read takes as many frames as it holds.
 *   LF_BOUND_HEADER_MAX   largest header_len accepted (default 64).
 *   LF_BOUND_BUCKETS      heads of the id -> context hash at first (default 256, a
 *                         power of 2); it grows with the contexts in flight (MAP).
 *   LF_BOUND_WRITE_ROUNDS the writes a writer makes for the requests queued behind
 *                         its own, once its own is out, before it hands the queue on
 *                         (default 8; see PIPELINING).
 *   LF_BOUND_READS_PER_EVENT  hybrid: reads per dispatch of the connection before
 *                         the reactor gets the thread back (default 4).
 *   LF_BOUND_NEST_MAX     hybrid: how many waits nested on one thread's stack serve
 *                         the reactor (default 4; per bound: lf_bound_set_nest_max).
 *                         See NESTING under HYBRID.
 *   LF_BOUND_REACTOR      defined: include lf_reactor.h and offer lf_bound_attach.
 *                         (Also offered when lf_reactor.h was included before.)
 *
 * FRAMES AND HOOKS (struct lf_bound_hooks, copied by lf_bound_init)
 *   A frame is a header that names the request id and the body's length, then the
 *   body. Either the header has a fixed length:
 *   header_len     every frame starts with exactly this many header bytes.
 *   parse_header(user, hdr, &id, &body_len)
 *       0: a reply for request id with body_len body bytes after the header.
 *       ENOMSG: a frame nobody waits for (a heartbeat, say): its body is skipped.
 *       anything else: the stream is malformed; the connection fails with EPROTO.
 *   or it does not (varints, text lines):
 *   frame_header(user, bytes, avail, &header_len, &id, &body_len)   (set: used
 *       instead of the two above) shown the avail bytes received so far (at least 1).
 *       0 or ENOMSG as parse_header, with *header_len set (1..avail); EAGAIN: the
 *       header is not all there yet, call again with more (a header longer than
 *       LF_BOUND_HEADER_MAX fails the connection); anything else: EPROTO.
 *   read_body(user, ctx, bytes, n, offset)      (may be NULL: copy to ctx->buf)
 *       Place n body bytes, starting at body offset `offset`, into the context (decode,
 *       scatter, ...). 0; LF_BOUND_BROKEN: the stream is out of step (under
 *       LF_BOUND_IN_ORDER, a reply that does not answer its request): the connection
 *       fails with EPROTO, for this call and every other; anything else: that
 *       context fails with EBADMSG and the rest of the body is skipped. Runs under the bound's lock: keep it
 *       short, never call lf_bound_* from it. A frame's header hook and then its
 *       read_body calls run on one reader, before the next frame's header hook: a
 *       hook may keep what the header said for the body in `user`.
 *   max_body       a body_len above this, in any frame (skipped ones too), fails the
 *                  connection with EPROTO (0: no limit).
 *   flags          LF_BOUND_STRICT: a reply whose id nobody waits for fails the
 *                  connection with EPROTO instead of being skipped and counted. Only
 *                  for protocols that never time requests out (a late reply after a
 *                  timeout is, by design, a reply nobody waits for).
 *                  LF_BOUND_IN_ORDER: the protocol's replies carry no id and come in
 *                  request order (Redis, memcached's text protocol, HTTP/1.1): see
 *                  IN ORDER. The hooks then only frame: the id they give is ignored.
 *   user           passed to the hooks.
 *
 * RESULTS of lf_bound_join (and lf_bound_call)
 *   0           the reply is in the context: c->len bytes (the body length).
 *   ETIMEDOUT   the deadline passed first. The context is withdrawn: a reply that
 *               arrives later is skipped and counted in stats.stray, never written
 *               into the context (which may already hold the next request).
 *   ECANCELED   two causes. The call found the bound shut down (lf_bound_shutdown;
 *               hybrid: also lf_reactor_stop, seen at once) before it wrote a byte:
 *               nothing of the request went out. Or lf_bound_cancel(b, c) from any
 *               thread, which ends the wait only: the request may have gone out
 *               (also when the cancel came between expect and the send), so after a
 *               cancel of your own ECANCELED does not mean "not sent".
 *   ECONNABORTED
 *               the request went out, wholly or in part, and the bound was shut down
 *               (as above) before its reply came: the server may have applied it; the
 *               reply will not be read. A shutdown never says ECANCELED for a request
 *               lf_bound_call wrote. (A join whose request you sent yourself gets
 *               ECONNABORTED too: the bound cannot tell whether that send came, and
 *               says the safe thing; your lf_bound_send's result tells.) Hybrid,
 *               also when the reactor can no longer be turned for this wait (put in
 *               a group after lf_bound_attach; c's follower record in use by
 *               another thread): the wait is given up, the request may be out.
 *   ECONNRESET  the connection ended (EOF, or a read error) before this reply came.
 *               Every reply that arrived before the end is delivered; the waiters
 *               still waiting then get ECONNRESET, and later calls too.
 *   EPROTO      the byte stream is malformed (a header parse_header refused, a body
 *               above max_body, under LF_BOUND_STRICT a reply nobody waits for): the
 *               connection failed; every waiter still waiting gets it, later calls too.
 *   EMSGSIZE    this reply is longer than c->cap: c->len says how long (retry with a
 *               buffer that size); its body was skipped; the connection goes on.
 *   EBADMSG     read_body refused this reply; its body was skipped; the connection
 *               goes on.
 *   EPIPE       (lf_bound_call) the request could not be sent: see lf_bound_send.
 *   EINVAL      (lf_bound_join) a malformed deadline (or c not in flight); c is free
 *               again either way (a reply already in is returned instead).
 *   A leader whose deadline passes hands leadership to the next follower before it
 *   returns, also while frames keep coming for others (it looks between reads):
 *   leadership is never lost, and a waiter never sleeps while its reply sits unread
 *   (the next leader reads what is buffered before it waits again).
 *
 * FUNCTIONS (all thread-safe; errors are errno values; EINVAL from every call on a
 * bound that is not initialised: zeroed, garbage, destroyed, or made in a file with
 * another LF_PROMOTE or LF_SYNC)
 *   int lf_bound_init(lf_bound *b, int fd, const struct lf_bound_hooks *hooks)
 *       fd: a connected stream (socket, pipe), made non-blocking here; the caller keeps
 *       it (close it after lf_bound_destroy). EINVAL fd < 0 or bad hooks, EBADF fd
 *       not open, ENOMEM, EMFILE.
 *   int lf_bound_destroy(lf_bound *b)          EBUSY while a context is in flight or a
 *       thread is inside lf_bound_join.
 *   int lf_bound_ctx_init(lf_bound_ctx *c, void *buf, size_t cap, int priority)
 *   void lf_bound_ctx_destroy(lf_bound_ctx *c)
 *       The caller-owned waiting context: the reply buffer, and the synchronizer of the
 *       thread that waits in it (priority: LF_PROMOTE_HEAP). One thread at a time.
 *       destroy also frees the copy of a started request that c keeps (init
 *       forgets it: destroy before an init again).
 *   int lf_bound_expect(b, c, uint64_t id)
 *       Register c for the reply to id, BEFORE sending the request (a fast server may
 *       answer before lf_bound_join is reached). EEXIST id already in flight, EBUSY c
 *       already in flight, ECONNRESET/EPROTO after the connection failed, EPIPE after
 *       a send failed, ECANCELED after shutdown (hybrid: after lf_reactor_stop),
 *       ENOTSUP under LF_BOUND_IN_ORDER (use lf_bound_call), ENOMEM.
 *   int lf_bound_send(b, const void *data, size_t len)
 *   int lf_bound_send_until(b, const void *data, size_t len, deadline)
 *       One whole request, queued and written (PIPELINING): sends from many threads
 *       never interleave, and the call returns when the request is on the wire (this
 *       thread wrote it, or the writer of the moment did). A writer that finds the
 *       socket full waits for room, and reads: if replies are waiting and no thread
 *       leads, it leads for a moment and hands them out (hybrid: it reads them itself;
 *       a send never runs a handler), so a peer that blocks until its replies are read
 *       cannot dead-lock senders that all wait for room. 0: written whole. EPIPE: the write
 *       failed; every later send and expect says EPIPE; requests sent before it stand
 *       (their replies still come, until the read side ends: ECONNRESET). ETIMEDOUT
 *       (send_until): the deadline passed; if part of the request was written, the
 *       stream cannot carry another one: the requests queued behind it fail with
 *       EPIPE at once, and later sends say EPIPE. ECONNRESET,
 *       EPROTO: the connection ended or failed. ECANCELED: the bound was shut down
 *       (hybrid: its reactor stopped) before a byte of this request was written:
 *       none was. ECONNABORTED: it was shut down part-way through the request (a
 *       send waiting for room notices within 50 ms, hybrid 5): part of it went out.
 *       The bound's state is looked at when a request is queued and by the writer
 *       before every write, so a send that starts after lf_bound_shutdown or
 *       lf_reactor_stop returned writes nothing, waiter or no waiter.
 *   int lf_bound_join(b, c, const struct timespec *deadline)    results above.
 *       EINVAL if c is not in flight. Returns with c free for the next expect.
 *   int lf_bound_call(b, c, id, const void *req, size_t len, deadline)
 *       expect, send and join, the deadline covering the send too. Bare, the request
 *       is queued and the call goes straight on to its join, while the writer of the
 *       moment (perhaps this thread, first) writes it (PIPELINING): one sleep per
 *       call, for its reply; hybrid, the join begins once the request is out. If the
 *       request does not go out whole (EPIPE, ETIMEDOUT before it was written, ...),
 *       c is collected and the send's error returned, as lf_bound_send_until would
 *       return it. The request's bytes are read until the call returns.
 *       Under a shutdown (or stop) it says ECANCELED only if it wrote nothing of the
 *       request; once a byte is out, the shutdown makes it ECONNABORTED (sent, reply
 *       abandoned), unless its reply came first (0). LF_BOUND_IN_ORDER: id is
 *       ignored (c->id is the place, see IN ORDER); len 0 is EINVAL.
 *   int lf_bound_cancel(b, c)                  c's join returns ECANCELED. ENOENT if c
 *       is not waiting (not expected, or its result is already in). It withdraws the
 *       wait, not the request: one already sent stays sent. A started call's result
 *       is then ECANCELED, and its handler is told; a started request still queued
 *       with nothing of it out is taken back (not sent), one cut part-way is left to
 *       the writers (moved out of c), and a start under way on another thread is
 *       waited for (ASYNCHRONOUS CALLS).
 *   int lf_bound_start(b, c, id, const void *req, size_t len, deadline,
 *                      lf_handler *h)          (hybrid only; ASYNCHRONOUS CALLS)
 *       lf_bound_call without the join, and without a wait: the request is copied
 *       into c and queued (written at once if no other thread writes), then h gets
 *       LF_EV_NOTIFY once c's result is in, and lf_bound_collect takes it. 0: the
 *       call is in flight (its send's failure, if any, is its result). Else nothing
 *       is in flight (c is free): the errors of lf_bound_call's expect, EPIPE, the
 *       send's failure if it came before the start returned (EPIPE, ETIMEDOUT,
 *       ECANCELED, ECONNABORTED, ...), ENOMEM (the copy); ENOTSUP on a bare bound;
 *       EINVAL for h, req NULL or len 0. id as lf_bound_call's (ignored under
 *       LF_BOUND_IN_ORDER).
 *   int lf_bound_collect(b, c)                 never waits: c's result (as a join
 *       would return it: 0 with c->len bytes in c->buf, ECANCELED, ECONNABORTED,
 *       ECONNRESET, EPROTO, EMSGSIZE, EBADMSG), and c is free; EINPROGRESS: not in
 *       yet (nothing changed); ENOENT: c has no call (never started, or collected).
 *   int lf_bound_shutdown(b)                   every waiter returns ECONNABORTED (its
 *       request, if sent, may have been applied; its reply will not be read), a
 *       leader blocked in poll is woken, a send waiting for room gives up; later
 *       expect/send/call return ECANCELED and write nothing, or the connection's
 *       first failure (ECONNRESET, EPROTO) if it had failed before. A call that
 *       overlaps the shutdown either wrote nothing (ECANCELED) or reports its request
 *       as sent (0 with its reply, or ECONNABORTED). Final and prompt: the waits are
 *       not drained (that would tie the teardown to the server's answering, and a
 *       stopped hybrid reactor leaves nobody to read); to keep the replies of the
 *       requests in flight, stop making calls and let them return first.
 *       Replies still on the socket may be read and counted as stray.
 *   int lf_bound_stats(b, struct lf_bound_stats *out)
 *       replies (handed_off to another thread + own, read by the waiter itself as
 *       leader), stray, skipped, refused, send_failures, timeouts, cancels,
 *       cancelled (waits ended by pthread_cancel, see CANCELLATION), reads, writes
 *       (system calls that carried requests: requests / writes is the batching, see
 *       PIPELINING), deep (hybrid joins past the nesting limit, see NESTING);
 *       in_flight, queued (requests waiting to be written), failed (the read side)
 *       and send_failed now; the waiters' pool (promotions = leadership
 *       hand-offs; hybrid: the reactor's pool, which the waiters share with its
 *       threads; deep joins' hand-offs are not in it, see NESTING).
 *   int lf_bound_depth(void)                   how many hybrid joins the calling
 *       thread is inside (0 outside any; always 0 without
 *       lf_reactor.h). See NESTING.
 *   int lf_bound_set_nest_max(b, int levels)   hybrid: the nesting limit (levels >= 0,
 *       else EINVAL); any thread, any time: joins and sends that start later use it.
 *   int lf_bound_attach(b, lf_reactor *r)            (hybrid only)
 *       Before any thread uses b. r: initialised, not LF_REACTOR_CONCURRENT, not in a
 *       group (ENOTSUP). EBUSY attached already; ECANCELED r stopped; or what
 *       lf_reactor_register says.
 *       The fd stays yours, as in bare mode: the reactor never closes it (it is
 *       registered with LF_EV_KEEPFD), so its number cannot be given to another file
 *       while the bound may still write to it. Close it after lf_bound_destroy.
 *
 * PIPELINING (how requests go out)
 *   Requests go out through a write queue, in the order they were queued. The sender
 *   that finds nobody writing becomes the writer: it writes everything queued, many
 *   requests per system call (sendmsg over an iovec; writev on a pipe), and goes on
 *   while more come. A sender that finds a writer at work leaves its request queued:
 *   a bare lf_bound_call goes on to its join at once (the reply cannot come before
 *   the request is written, so it sleeps once, for the reply); lf_bound_send, and a
 *   hybrid lf_bound_call, wait until the request is out (a hybrid join runs
 *   handlers, and none may run on the caller's thread while its request's bytes are
 *   still to be read: a buffer the handlers reuse stays safe). Under load one write
 *   carries many requests, and the server reads many in one read.
 *   The writer is held by the others' requests only so far. Once its own is out it
 *   stops after LF_BOUND_WRITE_ROUNDS more writes, at its own deadline, or as soon as
 *   the socket is full, and hands the queue on: every thread whose request waits in
 *   it is woken, and the first to look (a join looks before every wait, a send as it
 *   waits) writes on. A request cut part-way by a full socket is handed on with the
 *   rest: whoever writes on finishes it, but only its own caller has to wait for
 *   it (it takes it back by finishing it), and only its deadline cuts it (a started
 *   request's never does, below). The request's bytes are read until the call
 *   returns: leave them alone meanwhile.
 *   A started call's request (lf_bound_start, hybrid) is a copy, and has no thread
 *   to wait for it or to write on: a writer that leaves such requests queued asks
 *   the bound's handler to write them in the reactor (ASYNCHRONOUS CALLS), and a
 *   starter that becomes the writer writes a bounded amount and never waits for
 *   room.
 *   A request is either wholly on the wire or reported as not sent, to its caller:
 *     - a queued request whose deadline passes before a byte of it went out is taken
 *       out of the queue (by its caller, or by the writer before its next write):
 *       ETIMEDOUT, not sent, the stream goes on;
 *     - a request cut part-way (its deadline, a failed write) breaks the write side:
 *       ETIMEDOUT or EPIPE for it, EPIPE at once for every request queued behind it
 *       (nothing may follow a cut request), EPIPE for later sends;
 *     - a shutdown, a stop or a failure of the connection fails the queued requests
 *       that did not begin with the call's usual error (ECANCELED: not sent; a
 *       request cut by it: ECONNABORTED).
 *   stats.writes and stats.queued show the batching and the queue. Bare joins look
 *   for a handed-on queue between their waits (test/model/writeq.pml checks that no
 *   hand-on is lost).
 *
 * IN ORDER (hooks.flags LF_BOUND_IN_ORDER)
 *   A request's id is its place on the connection: the bound keeps the calls whose
 *   requests are on the wire in wire order, and each reply is the oldest one's. The
 *   place is taken when the writer writes the request (PIPELINING), so a request
 *   taken back before a byte of it went out takes none. Only lf_bound_call makes a
 *   call (its id argument is ignored; c->id says the place once it returns 0):
 *   lf_bound_expect says ENOTSUP, and lf_bound_send sends a request that has no
 *   reply (it takes no place). A call that ends before its reply (deadline,
 *   lf_bound_cancel, pthread_cancel) keeps its place: its reply is read and dropped
 *   in its turn (stats.stray; with LF_BOUND_STRICT it fails the connection), so its
 *   place stays until that reply comes: a server that never answers grows the ring.
 *   A reply read while no request is on the wire or being written fails the
 *   connection with EPROTO. That is seen only when the reply is read at such a
 *   moment: a bare bound reads only while a call waits, so a reply for nobody that
 *   comes just before the next call is taken for that call's (hybrid: the reactor
 *   reads it as it comes, when any thread turns the reactor). Likewise a request
 *   sent with lf_bound_send that does get a reply puts every later reply on the
 *   wrong call: only requests the protocol never answers go that way. A read_body
 *   hook that can tell a reply does not answer its request says LF_BOUND_BROKEN.
 *   Bare and hybrid.
 *
 * HYBRID (the pattern's Hybrid Thread Associations and Hybrid Client/Servers)
 *   After lf_bound_attach, the connection is a handle of the reactor, and a thread in
 *   lf_bound_join runs reactor turns (leader, then processing, one event per turn)
 *   until its reply is in, instead of waiting on the connection alone. So while it
 *   waits it serves every other handle of the reactor: incoming requests, timers,
 *   notifications. A server whose threads all wait for replies that depend on
 *   call-backs it must serve first does not dead-lock (within the bound NESTING
 *   states). The replies are read by whichever
 *   thread the reactor dispatches the connection to (lf_reactor_run threads too),
 *   which hands each one to its waiter: parked in the reactor's pool, it is woken
 *   there (lf_pool_notify); leading the reactor, its wait is made to return.
 *   lf_reactor_stop on that reactor (or its destroy) finishes the bound as
 *   lf_bound_shutdown does: no thread reads the connection any more. The bound sees
 *   it at once, whether or not a waiter is turning the reactor: expect, and send
 *   before each write (the writer, PIPELINING), ask the reactor whether it stopped
 *   (lf_reactor_turn with no follower), so a call made after lf_reactor_stop returned
 *   writes nothing and returns ECANCELED; waiters get ECONNABORTED, and a call that
 *   overlaps the stop reports its request as sent (0, ECONNABORTED) or not
 *   (ECANCELED), as under lf_bound_shutdown.
 *   Teardown: lf_bound_destroy and lf_reactor_destroy may come in either order
 *   (with started calls in flight at the stop: the reactor first, ASYNCHRONOUS CALLS), but
 *   the reactor's storage must stay valid (destroyed is fine, freed is not) until
 *   lf_bound_destroy returns: expect, send, join and stats look at the reactor to
 *   learn of its stop, and must not race its destroy either (call them after the
 *   destroy, or stop the reactor and let them return first). The
 *   bound's handler in the reactor is shared by both and freed by the last to let
 *   go; lf_bound_destroy takes it out of the reactor (unless a failure or the
 *   reactor's destroy did) and waits only for a dispatch that is reading into b.
 *   The hybrid part uses the reactor's public calls only (lf_reactor_register with
 *   LF_EV_KEEPFD, lf_reactor_remove, lf_reactor_turn, also with no follower to learn
 *   of a stop, lf_reactor_wake).
 *   Nested upcalls are ALLOWED: a handler that a waiting thread dispatches may call
 *   lf_bound_call itself; that inner call waits the same way and returns first, and
 *   the outer call returns after it (its reply, if it came meanwhile, waits in its
 *   context).
 *
 * NESTING (hybrid)
 *   Each wait that serves the reactor runs handlers on the waiting thread's stack,
 *   and their calls wait there in turn, so the nesting is bounded. lf_bound_depth()
 *   says how many hybrid joins the calling thread is inside (a send runs no
 *   handler: it waits for room reading replies itself). A join serves only while
 *   that depth is below the bound's limit, `levels` (LF_BOUND_NEST_MAX, default 4;
 *   lf_bound_set_nest_max): handlers run at depth <= levels, and a call made at
 *   depth == levels waits DEEP: it leads the bound's own pool (b->pool, as a bare
 *   bound's waiters do) and reads the connection itself, handing out every reply it
 *   reads, and runs no handler. Every other event stays in the reactor for its
 *   other threads. So a thread holds at most levels + 1 calls, and its stack at most
 *   levels handler frames on top of its own.
 *   levels 0: calls never serve (for a bound whose waiters must not run handlers).
 *   A deep waiter and the reactor's dispatch of the connection read under one lock;
 *   a reply for a deep waiter is a wake-up in the bound's pool (not counted in
 *   stats.pool, which is the reactor's), and a deep leader looks for
 *   lf_reactor_stop every 50 ms (it polls the connection, not the reactor). A deep
 *   join is not inside the reactor: lf_reactor_destroy does not wait for it (no
 *   EBUSY), so stop the reactor and let the calls return before destroying it, as
 *   Teardown says. stats.deep counts the deep joins that waited.
 *   Dead-lock: a deep waiter needs no other thread for its reply, so a server whose
 *   backend answers by itself (a database, memcached) cannot dead-lock at any limit.
 *   If a reply needs a call-back served first (the backend calls this server before
 *   it answers), the joins below the limit serve the call-backs; all threads are
 *   stuck only if every thread that turns the reactor is deep at once, which takes
 *   T x (levels + 1) handlers in service that each wait for a call (T threads; a
 *   call-back handler that calls out itself counts too, so call-backs that call
 *   halve the margin). test/model/nest.pml checks that T x (levels + 1) - 1 never
 *   dead-lock and that T x (levels + 1) can. With 2 threads and the default, that is
 *   9 requests in service at once: a call-back server raises the limit to what its
 *   load needs (each level is a handler's stack frames, a few KiB with ours) or
 *   caps the calls in flight across all its connections (a counter its handlers
 *   check, answering "busy" or deactivating their handle at the cap; deactivating
 *   the listening handle alone does not cap the connections already accepted).
 *   Also stuck for call-backs: threads inside lf_bound_send, and a writer waiting
 *   for room (neither serves anything), and a call-back that comes on a handle whose
 *   handler is itself waiting in a call (a handle's events are serialised,
 *   lf_reactor.h). Give sends a deadline in such a server.
 *   Deadlines: a nested call's deadline is the earliest of its own and those of the
 *   joins below it on the thread's stack, for its send (queue, room) and its join
 *   (ETIMEDOUT when an outer deadline comes first; lf_bound_send too), so no call
 *   below waits past its deadline for the calls above it longer than their handlers
 *   take to return. The same holds for calls from a handle_close (it runs on a
 *   reactor thread). Do not make calls while holding a lock a handler takes.
 *
 * ASYNCHRONOUS CALLS (hybrid; TAO's asynchronous invocation, in the reactor's terms)
 *   A blocking call holds its thread (and, nested, a level of its stack) until the
 *   reply; a server that must have thousands of calls in flight on a few threads
 *   starts them instead: lf_bound_start(b, c, id, req, len, deadline, h) queues the
 *   request and returns; the reply is read by whichever thread the reactor gives
 *   the connection to, placed in c (hooks as for any call), and h, a handler of the
 *   bound's reactor, gets LF_EV_NOTIFY. h's handler then calls lf_bound_collect(b, c)
 *   for the result. The completion is an event of h like any other: serialised with
 *   h's reads and timers, coalesced with what is pending (one LF_EV_NOTIFY may stand
 *   for several of h's calls: collect each; one may come for a call that is already
 *   collected: ENOENT, or EINPROGRESS once c carries the next call). Nothing waits,
 *   so nothing nests: a started call adds no depth and needs no stack. A handler
 *   that lives on notifications and timers alone needs a handle all the same: an
 *   eventfd (or a pipe) registered with LF_EV_READ, then lf_reactor_modify(r, h, 0).
 *   The start never waits for room or for another thread: the request is copied into
 *   c (c keeps the copy's buffer for its next calls; lf_bound_ctx_destroy frees it),
 *   so req is the caller's again at once, and queued behind the others
 *   (PIPELINING). If no thread is writing, the starter writes the queue itself, a
 *   bounded amount (LF_BOUND_WRITE_ROUNDS writes) and never waiting for room; the
 *   requests a writer leaves queued (its rounds spent, or the socket full) are
 *   written by the bound's own handler in the reactor: at once, as a notification
 *   of that handler, or when the socket has room again (LF_EV_WRITE): so some
 *   thread must be turning the reactor for them to go out. Until its request is
 *   out (written whole, or failed) and its start has returned, c is the bound's:
 *   whatever finishes the call meanwhile (a cancel, a failure, a shutdown,
 *   even its reply) tells h nothing, and a collect says EINPROGRESS; h is told as
 *   the last of these lets go (or a cancel at work on c, below), if the result is
 *   in. A start that fails leaves no call: h is never told of it, collect says
 *   ENOENT. A send that fails after the start returned is the call's result: EPIPE
 *   (the write side broke), ETIMEDOUT (its deadline passed before a byte of it went
 *   out: not sent), ECANCELED (a shutdown before a byte of it went out: not sent),
 *   ECONNABORTED (a shutdown once it had begun, or with its reply due).
 *   The deadline bounds the request's wait for its first byte to go out, also
 *   while the socket is full (the bound's handler keeps a timer for the earliest);
 *   from a handler that a blocking hybrid join dispatched it is the earlier of it
 *   and that join's (NESTING): there a start with no deadline of its own may end
 *   ETIMEDOUT at once, the outer join's deadline past. A request that went out
 *   part-way is finished when room comes, whatever its deadline: the stream must
 *   stay whole, and nobody waits for it (the blocking sends queued behind it wait
 *   until their own deadlines, then are not sent). The queue is not bounded: a
 *   peer that stops reading holds every request started meanwhile (a copy each);
 *   lf_bound_stats' queued says how many, and a server that starts faster than
 *   its peer reads bounds its own calls in flight.
 *   No deadline of the call's own after the send: arm an lf_timer on h, and on its
 *   LF_EV_TIMEOUT call lf_bound_cancel(b, c) (0: withdrawn, a reply that comes later
 *   is stray) and lf_bound_collect (ECANCELED), or take the result that won the race.
 *   A cancel takes a request still queued back (not sent). One cut part-way is
 *   moved out of c into a block of the bound's own, which the writers finish and
 *   free, or lf_bound_destroy frees (only if that block cannot be allocated does
 *   the cancel finish the request itself, waiting for room until the peer reads:
 *   a started request is never cut). stats.queued counts such blocks too. It waits
 *   for a start under way on another thread, which never waits itself, and for any
 *   other cancel at work on c. So handle_close's cancel and collect are safe in
 *   every case, and hold a reactor thread for no peer.
 *   The cancel tells h too (the notification it posts comes after the collect, and
 *   that collect says ENOENT, or EINPROGRESS for the next call on c): one spare
 *   dispatch per cancel.
 *   c (and the reply buffer) belongs to the bound until collected: it must not be
 *   freed, reused or destroyed before. A handle that goes away with calls in flight
 *   (h's handle_close, which also runs for the handlers left at lf_reactor_destroy)
 *   cancels and collects each first: after lf_bound_cancel returns, no thread
 *   touches c or notifies h for it. A stopped reactor tells nobody (notify says
 *   ECANCELED): a call's result waits in its context for handle_close's cancel and
 *   collect, which say what it was (0 for a reply that came before the stop,
 *   ECONNRESET, ... as a join's; ECANCELED, or ECONNABORTED once the bound has
 *   learnt of the stop, for one still waiting). So with started calls in flight at
 *   a stop, destroy the reactor first (its handle_close calls collect them) and the
 *   bound after: lf_bound_destroy says EBUSY until every started context is
 *   collected. lf_bound_join on a started context says EINVAL and changes nothing.
 *   h must be a handler registered in b's reactor (not checked: a result for
 *   anything else is told to nobody, and waits in c for a collect).
 *   Where each call may be made (b attached to r; h registered in r):
 *     lf_bound_start     h's handler, another handler, a handle_close, any other
 *                        thread (h must stay registered until the result is told:
 *                        else it is told to nobody). After shutdown/stop:
 *                        ECANCELED, nothing sent. From read_body or parse_header:
 *                        never (the bound's lock is held).
 *     lf_bound_collect   the thread that owns c: h's handler (usually on
 *                        LF_EV_NOTIFY or LF_EV_TIMEOUT), h's handle_close, or the
 *                        starter when it owns c outside the reactor. After stop and
 *                        shutdown it still returns the result (above).
 *     lf_bound_cancel    any thread, any time the context is not yet collected
 *                        (it waits for a start under way on another thread, and
 *                        for another cancel of c).
 *   Each result is told once, to h; a notify that cannot be posted (h removed, r
 *   stopped) is lost, and the result stays in c for the collect.
 *
 * THE MAP FROM ID TO CONTEXT
 *   An intrusive hash table (chained, LF_BOUND_BUCKETS heads, allocated at init) under
 *   the bound's mutex, with the contexts themselves as the nodes: no allocation per
 *   request. When the contexts in flight pass twice its heads (asynchronous calls,
 *   one per busy client, say), an expect makes it four times larger (a calloc and a
 *   rehash under the lock, as the in-order ring grows; without memory it stays as it
 *   is, and its chains grow longer), so a lookup stays a few steps at any load. The removal under that mutex is the one arbiter between a reply and a
 *   timeout or cancel. We measured liburcu's cds_lfht for this (375-680 ns per
 *   request, against ~15 ns for an array of slots, on a 2-vCPU x86-64 VM) and did not
 *   take it: a
 *   node removed from cds_lfht may not be reused before a grace period (~10 ms until
 *   call_rcu runs), which would force a heap node per request, and this map is written
 *   as often as it is read (expect, reply, withdraw), the case RCU does not help.
 *
 * CANCELLATION (pthread_cancel; deferred, the default type)
 *   A thread may be cancelled while it waits in lf_bound_join or lf_bound_call. Its
 *   context is then withdrawn, as lf_bound_cancel would withdraw it, before the
 *   thread's own cleanup handlers run: the context is free (idle, no longer in
 *   flight), the bound keeps no pointer to it, and a reply that comes later is
 *   skipped and counted in stats.stray, as after a timeout; a reply that was in
 *   already is dropped with the context (stats.replies counted it). Each such wait
 *   counts once in stats.cancelled, not in stats.cancels (lf_bound_cancel's). The
 *   other threads go on with their calls; lf_bound_shutdown and lf_bound_destroy
 *   work as before. The waits, and what their cleanup gives back:
 *     waiting for its request to go out (send; hybrid call)  the
 *         request is taken out of the queue if nothing of it was written; if a
 *         writer has it, waited for; if it was handed on cut part-way, finished
 *         (until its deadline, with none until the peer takes it: a cancel never cuts
 *         a request). A call's context is withdrawn and collected (a started one's
 *         handler is never told of it).
 *     any wait of a bare lf_bound_call's join (below)   as a join's; then its
 *         request, as for a send.
 *     parked as a follower (join, call; bare)  lf.h takes the follower out of the
 *         pool (or hands on a promotion that came too late); the context is withdrawn.
 *     leading, in poll (join, call; bare)      the context is withdrawn and the
 *         leader's slot goes to the next waiter. The receive state is the bound's,
 *         not the thread's: the next leader carries on where the cancelled one
 *         stopped, a reply it was half-way through included (delivered whole, or
 *         skipped to its end if it was the cancelled thread's own).
 *     turning the reactor (join, call; hybrid) lf_reactor_turn's waits are the
 *         reactor's, and it cleans up after them (lf_reactor.h, CANCELLATION); the
 *         context is withdrawn, and a join nested in a handler that an outer join
 *         ran is withdrawn first, then the outer one.
 *   Nothing else here is a cancellation point. A request is wholly on the wire or
 *   not sent at all: a writer's writes and its waits for room run with cancellation
 *   disabled (the poll it sleeps in, the replies it hands out meanwhile), and a
 *   cancel that comes then acts at the caller's next cancellation point
 *   (lf_bound_call: its join). So a cancel never cuts a request (hybrid too: a
 *   writer runs no handler, it reads the replies itself while it waits for room).
 *   The hooks (parse_header, frame_header, read_body) always run with cancellation disabled: read_body holds the bound's lock, and a
 *   hook cut half-way would leave a frame half parsed; keep them short, as they
 *   must be anyway. Reads (the socket is non-blocking), wake-ups (a write to an
 *   eventfd or a pipe), closes and the reactor calls of lf_bound_destroy are no
 *   waits of the caller's and run with cancellation disabled too. Every call puts
 *   the caller's cancel state back before it returns. lf_bound_start never waits
 *   but for locks (it may write, as any writer). expect, shutdown and stats take
 *   locks (shutdown and stats may fail the queued requests); lf_bound_cancel waits
 *   for a start under way and for another cancel, and, only if memory runs out,
 *   for room for a request cut part-way (ASYNCHRONOUS CALLS): none of these waits
 *   is a cancellation point. Asynchronous cancellation is supported
 *   nowhere (lf.h, CANCELLATION). A context on the cancelled thread's stack may be
 *   destroyed in that thread's own cleanup handler (lf_bound_ctx_destroy): the
 *   bound's cleanup has run by then.
 *
 * LIMITS
 *   - Request ids are the protocol's: do not reuse an id while a late reply to it may
 *     still come (a sequence number per connection avoids that).
 *   - read_body runs under the bound's mutex, as do the map operations.
 *   - The bound reads the connection; it never closes it. Writing is lf_bound_send's
 *     or yours (then you keep requests from interleaving).
 *   - lf_bound_destroy may run in a handler of another handle; hybrid, it waits for
 *     a dispatch of the bound's own handler that is reading into b, so never call it
 *     while holding a lock that read_body or parse_header takes.
 *   - Hybrid replies read by a thread that is not waiting are still one hand-off
 *     each; a leader woken for its reply costs one reactor kick (an eventfd write).
 */
#ifndef LF_BOUND_H_INCLUDED
#define LF_BOUND_H_INCLUDED

#include "lf.h"
#if defined(LF_BOUND_REACTOR) && !defined(LF_REACTOR_H_INCLUDED)
#include "lf_reactor.h"
#endif

#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#ifdef LF__LINUX
#include <sys/eventfd.h>
#endif

#ifndef LF_BOUND_RXBUF
#define LF_BOUND_RXBUF 16384
#endif
#ifndef LF_BOUND_HEADER_MAX
#define LF_BOUND_HEADER_MAX 64
#endif
#ifndef LF_BOUND_BUCKETS
#define LF_BOUND_BUCKETS 256 /* a power of two */
#endif
#ifndef LF_BOUND_READS_PER_EVENT
#define LF_BOUND_READS_PER_EVENT 4 /* hybrid: reads per dispatch of the connection */
#endif
#ifndef LF_BOUND_WRITE_ROUNDS
#define LF_BOUND_WRITE_ROUNDS 8 /* writes a writer makes for others once its own is out */
#endif
#if LF_BOUND_WRITE_ROUNDS < 1
#error "lf_bound.h: LF_BOUND_WRITE_ROUNDS must be at least 1"
#endif
#ifndef LF_BOUND_NEST_MAX
#define LF_BOUND_NEST_MAX 4 /* hybrid: nesting levels that serve (NESTING under HYBRID) */
#endif
#if LF_BOUND_NEST_MAX < 0 || LF_BOUND_NEST_MAX > 0x7fffffff /* an int everywhere */
#error "lf_bound.h: LF_BOUND_NEST_MAX must be 0 .. INT_MAX"
#endif
#if LF_BOUND_RXBUF < 2 * LF_BOUND_HEADER_MAX
#error "lf_bound.h: LF_BOUND_RXBUF must hold at least two headers (2 * LF_BOUND_HEADER_MAX)"
#endif
#if (LF_BOUND_BUCKETS & (LF_BOUND_BUCKETS - 1)) != 0
#error "lf_bound.h: LF_BOUND_BUCKETS must be a power of two"
#endif

/* ------------------------------------------------------------------ public types */

#define LF_BOUND_STRICT 1u /* hooks.flags: a reply for nobody fails the connection */
#define LF_BOUND_IN_ORDER 2u /* hooks.flags: replies come in request order, no ids */
#define LF_BOUND_BROKEN INT_MIN /* read_body: the stream is out of step, fail it */

/* tags named after the configuration, as lf.h's (LF__CFG) */
typedef struct LF__CFG(lf_bound) lf_bound;
typedef struct LF__CFG(lf_bound_ctx) lf_bound_ctx;
typedef struct LF__CFG(lf__bound_out) lf__bound_out; /* a request waiting to go out */

struct lf_bound_hooks {
    size_t header_len;
    int (*parse_header)(void *user, const unsigned char *hdr, uint64_t *id, size_t *body_len);
    int (*frame_header)(void *user, const unsigned char *bytes, size_t avail, size_t *header_len,
                        uint64_t *id, size_t *body_len);
    int (*read_body)(void *user, lf_bound_ctx *c, const unsigned char *bytes, size_t n,
                     size_t offset);
    size_t max_body;
    unsigned flags;
    void *user;
};

struct lf_bound_stats {
    unsigned long long replies;    /* delivered into a waiting context */
    unsigned long long handed_off; /* ... by a leader to another thread (a wake-up) */
    unsigned long long own;        /* ... read by the waiting thread itself, as leader */
    unsigned long long stray;      /* replies nobody waited for (late or unknown): skipped */
    unsigned long long skipped;    /* frames parse_header said to skip (ENOMSG) */
    unsigned long long refused;    /* replies too long for c->cap or refused by read_body */
    unsigned long long send_failures; /* sends that failed (EPIPE) or timed out part-way */
    unsigned long long timeouts;   /* joins ended by their deadline, context withdrawn */
    unsigned long long cancels;    /* contexts ended by lf_bound_cancel */
    unsigned long long cancelled;  /* waits ended by pthread_cancel of the waiting thread:
                                    * context withdrawn (see CANCELLATION) */
    unsigned long long deep;       /* hybrid joins at the nesting limit: they read the
                                    * connection and served nothing else (NESTING) */
    unsigned long long reads;      /* read() calls that returned data */
    unsigned long long writes;     /* write calls that carried requests (requests / writes:
                                    * how many one system call carried, PIPELINING) */
    unsigned in_flight;            /* contexts expected and not yet joined, now */
    unsigned queued;               /* requests in the write queue, now (PIPELINING) */
    int failed;                    /* 0, or why the connection failed (its read side) */
    int send_failed;               /* 0, or EPIPE: its write side failed */
    struct lf_pool_stats pool;     /* promotions: leadership passed between waiters (hybrid:
                                    * the reactor's pool, which they share with its threads) */
};

/* A request in the write queue (PIPELINING). */
enum { LF__OUT_QUEUED = 0, LF__OUT_WRITING, LF__OUT_DONE };

struct LF__CFG(lf__bound_out) {
    lf__bound_out *next;  /* in the queue */
    const char *p;        /* the request's bytes (the caller's, valid until it is DONE) */
    size_t len, off;      /* its length, and how much of it is on the wire */
    lf_bound_ctx *c;      /* lf_bound_call's or lf_bound_start's context (its join or
                           * its handler gets a failure); NULL: lf_bound_send */
    const struct timespec *deadline; /* the sender's (the storage is the sender's) */
    LF__ATOMIC(int) state; /* LF__OUT_*: written under lf__send, peeked by the owner */
    int rc;               /* DONE: 0 written whole, or why not (wholly or in part) */
    int waits;            /* the owner waits on lf__send_cv for it to change */
    unsigned long long pos; /* LF_BOUND_IN_ORDER: its place in the ring + 1, from its
                             * first write (0: none yet) */
    int started;          /* lf_bound_start's: in its context, and nobody waits for it */
    int owned;            /* a cancelled start's request cut part-way, moved out of its
                           * context: the queue's own block, freed when DONE */
};

enum { LF__BC_IDLE = 0, LF__BC_WAITING, LF__BC_RECEIVING, LF__BC_DONE };

struct LF__CFG(lf_bound_ctx) {
    /* public: set by lf_bound_ctx_init */
    void *buf;  /* where the reply's body goes */
    size_t cap; /* its size */
    /* read-only */
    uint64_t id; /* of the request in flight */
    size_t len;  /* body bytes received, after lf_bound_join returned 0 */
    /* private */
    lf_follower lf__f;                    /* the waiting thread's own synchronizer */
    int lf__state;                        /* LF__BC_*, under the bound's lock */
    int lf__result;                       /* for LF__BC_DONE */
    int lf__deep; /* hybrid: its join waits at the nesting limit, in the bound's own
                   * pool (woken as in bare mode); under the bound's lock */
    lf__bound_out *lf__out; /* lf_bound_call: its request, while it may be queued; the
                             * owner's own (set and cleared by its thread) */
    unsigned long long lf__pos; /* LF_BOUND_IN_ORDER: its place in the ring + 1 (0: not
                                 * on the wire); under the bound's lock */
    void *lf__h; /* hybrid, lf_bound_start: the lf_handler told (LF_EV_NOTIFY) when the
                  * result is in, instead of a waiting thread; NULL: a thread waits.
                  * Set by expect, under the bound's lock */
    /* lf_bound_start: while any of these holds c, its handler is not told and
     * lf_bound_collect says EINPROGRESS; under the bound's lock */
    int lf__starting; /* lf_bound_start has not returned */
    int lf__queued;   /* its request (lf__aout) is in the write queue */
    int lf__cancels;  /* lf_bound_cancels at work on it */
    unsigned lf__gen; /* its calls so far (a cancel that waited acts on its own call only) */
    lf__bound_out lf__aout; /* lf_bound_start: its request, in the write queue */
    char *lf__abuf;         /* ... its bytes, copied (freed by lf_bound_ctx_destroy) */
    size_t lf__acap;
    struct timespec lf__adl; /* ... its deadline, copied */
    lf_bound_ctx *lf__next, **lf__pprev;  /* hash chain, under the bound's lock */
};

struct LF__CFG(lf_bound) {
    lf_pool pool; /* the waiting threads: one leads (reads), the others follow */
    /* private */
    unsigned lf__tag;           /* LF__BOUND_TAG while initialised */
    /* wake c's thread: lf_pool_notify on our pool (and kick a leader blocked in
     * poll), or, hybrid, lf_reactor_wake on the reactor the waiters turn */
    void (*lf__wakeup)(lf_bound *b, lf_bound_ctx *c);
    void *lf__r;                /* hybrid: the lf_reactor the waiters turn, or NULL */
    void *lf__att;              /* hybrid: our handler in that reactor (lf__bound_att) */
    LF__ATOMIC(int) lf__nest_max; /* hybrid: the nesting levels that serve the reactor */
    struct lf_bound_hooks lf__hooks;
    int lf__fd;
    int lf__wake[2];          /* eventfd (both the same) or a pipe: wakes a polling leader */
    pthread_mutex_t lf__lock; /* the map, context states, lf__cur, counters, lf__failed */
    pthread_mutex_t lf__send; /* the write queue, lf__sending, lf__orphaned */
    pthread_cond_t lf__send_cv; /* a sender waits here for its request (CLOCK_MONOTONIC) */
    pthread_cond_t lf__start_cv; /* (with lf__lock) lf_bound_cancel waits here for a start
                                  * under way on another thread to return */
    lf__bound_out *lf__q_head, *lf__q_tail; /* requests to write, in order (PIPELINING) */
    int lf__sending;          /* a writer is writing the queue */
    LF__ATOMIC(int) lf__orphaned; /* 1: requests are queued and nobody writes them: a
                                   * thread whose request is among them takes over */
    LF__ALIGN8 LF__ATOMIC(unsigned long long) lf__writes; /* stats.writes */
    LF__ATOMIC(int) lf__send_failed; /* 0, or EPIPE: no request can go out any more */
    int (*lf__poolstats)(lf_bound *b, struct lf_pool_stats *out); /* the waiters' pool */
    lf_bound_ctx **lf__map;   /* lf__nmap chain heads (LF_BOUND_BUCKETS at first) */
    size_t lf__nmap;          /* a power of two */
    unsigned lf__map_shift;   /* 64 - log2(lf__nmap): the hash's top bits pick a head */
    /* LF_BOUND_IN_ORDER: the contexts whose requests are on the wire, in wire order
     * (NULL: withdrawn, its reply is dropped in its turn); positions count from 0 */
    lf_bound_ctx **lf__ring;
    lf_bound_ctx *lf__pending; /* ... and those expected, not on the wire yet (a list) */
    size_t lf__ring_cap;      /* a power of two */
    unsigned long long lf__ring_head, lf__ring_tail; /* the next reply's, the next request's */
    lf_bound_ctx *lf__cur;    /* the context the frame being read is for, or NULL */
    int lf__failed;           /* 0, or the error every call returns from now on */
    unsigned lf__in_flight;
    struct lf_bound_stats lf__stats;
    /* leader-only: the receive buffer and the frame being read */
    size_t lf__rx_start, lf__rx_end;
    int lf__in_body;   /* the header of the current frame is parsed */
    size_t lf__body_len, lf__body_off;
    unsigned char lf__rx[LF_BOUND_RXBUF];
};


/* Set by lf_bound_init, cleared by lf_bound_destroy: every call on a bound that is
 * not initialised (zeroed, garbage, destroyed, or made with another LF_PROMOTE or
 * LF_SYNC) says EINVAL instead of touching it. */
/* "try again": EAGAIN and EWOULDBLOCK are one value on Linux, two elsewhere */
#if EAGAIN == EWOULDBLOCK
#define LF__AGAIN(e) ((e) == EAGAIN)
#else
#define LF__AGAIN(e) ((e) == EAGAIN || (e) == EWOULDBLOCK)
#endif
#define LF__BOUND_TAG (0x4c464200u | ((unsigned)LF_PROMOTE << 4) | (unsigned)LF_SYNC)
#define lf__bound_ok(b) ((b) != NULL && (b)->lf__tag == LF__BOUND_TAG)

/* ------------------------------------------------------------------ >>map
 * Chained hashing with the contexts as nodes. Everything here runs under lf__lock. */

static inline lf_bound_ctx **lf__bmap_head(lf_bound *b, uint64_t id)
{
    /* Fibonacci hashing: sequential ids spread over all the buckets */
    uint64_t h = id * 0x9E3779B97F4A7C15ull;
    return &b->lf__map[b->lf__map_shift >= 64 ? 0 : (size_t)(h >> b->lf__map_shift)];
}

static inline lf_bound_ctx *lf__bmap_find(lf_bound *b, uint64_t id)
{
    lf_bound_ctx *c = *lf__bmap_head(b, id);
    while (c && c->id != id)
        c = c->lf__next;
    return c;
}

/* c at the front of the list at *head (a hash chain, or the in-order pending list) */
static inline void lf__blist_insert(lf_bound_ctx **head, lf_bound_ctx *c)
{
    c->lf__next = *head;
    c->lf__pprev = head;
    if (*head)
        (*head)->lf__pprev = &c->lf__next;
    *head = c;
}

static inline void lf__bmap_insert(lf_bound *b, lf_bound_ctx *c)
{
    lf__blist_insert(lf__bmap_head(b, c->id), c);
}

static inline void lf__bmap_remove(lf_bound_ctx *c)
{
    *c->lf__pprev = c->lf__next;
    if (c->lf__next)
        c->lf__next->lf__pprev = c->lf__pprev;
    c->lf__next = NULL;
    c->lf__pprev = NULL;
}

/* Four times the heads, every context moved over (see THE MAP). Without memory, or
 * at 2^24 heads, the table stays as it is. */
static inline void lf__bmap_grow(lf_bound *b)
{
    size_t n = b->lf__nmap;
    lf_bound_ctx **old = b->lf__map, **map;
    if (n >= ((size_t)1 << 24) ||
        (map = (lf_bound_ctx **)calloc(n * 4, sizeof(lf_bound_ctx *))) == NULL)
        return;
    b->lf__map = map;
    b->lf__nmap = n * 4;
    b->lf__map_shift -= 2;
    for (size_t i = 0; i < n; i++) {
        lf_bound_ctx *c = old[i], *next;
        for (; c != NULL; c = next) {
            next = c->lf__next;
            lf__bmap_insert(b, c);
        }
    }
    free(old);
}

/* ------------------------------------------------------------------ >>bound */

/* Called with the bound's lock held (and from cleanup handlers): the write is a
 * cancellation point to libc, not a wait of ours, so it runs with cancellation off. */
static inline void lf__bound_kick(lf_bound *b)
{
    static const uint64_t one = 1;
    int cs = lf__nocancel_begin();
    ssize_t n = write(b->lf__wake[1], &one, b->lf__wake[0] == b->lf__wake[1] ? sizeof one : 1);
    (void)n; /* a full pipe is a kick already pending */
    lf__nocancel_end(cs);
}

/* The wake-up descriptor(s), at destroy or a failed init: close is a cancellation
 * point to libc, and a thread ended half-way would leak the other one. */
static inline void lf__bound_close_wake(lf_bound *b)
{
    int cs = lf__nocancel_begin();
    close(b->lf__wake[0]);
    if (b->lf__wake[1] != b->lf__wake[0])
        close(b->lf__wake[1]);
    lf__nocancel_end(cs);
}

/* Bare mode: parked, lf_pool_notify wakes exactly c's thread. Not parked: the
 * notification is kept for its next lead, and if it is the leader, blocked in poll,
 * the kick makes that poll return. */
static inline void lf__bound_wake_bare(lf_bound *b, lf_bound_ctx *c)
{
    if (lf_pool_notify(&b->pool, &c->lf__f) == EBUSY)
        lf__bound_kick(b);
}

static inline int lf__bound_poolstats_bare(lf_bound *b, struct lf_pool_stats *out)
{
    return lf_pool_stats(&b->pool, out);
}

/* Wake c's thread (lock held). */
static inline void lf__bound_wake(lf_bound *b, lf_bound_ctx *c)
{
    b->lf__wakeup(b, c);
}

/* A started call's context is held (lf_bound_start's, lock held): by its start, its
 * request in the write queue, or a cancel at work. Its handler is not told meanwhile,
 * and lf_bound_collect says EINPROGRESS, so nothing of ours uses c once it is. */
static inline int lf__bound_held(const lf_bound_ctx *c)
{
    return c->lf__starting || c->lf__queued || c->lf__cancels;
}

/* One of the hands that held c let go (lock held): its handler is told if its result
 * is in and no hand holds it any more; a cancel waiting for the others looks again. */
static inline void lf__bound_let_go_locked(lf_bound *b, lf_bound_ctx *c)
{
    if (c->lf__state == LF__BC_DONE && !lf__bound_held(c))
        lf__bound_wake(b, c);
    pthread_cond_broadcast(&b->lf__start_cv);
}

/* c's result is in (lock held). The owner sees it only after the lock is released,
 * and the wake returns before that, so c cannot be gone while we wake it. */
static inline void lf__bound_finish(lf_bound *b, lf_bound_ctx *c, int result, int wake)
{
    c->lf__state = LF__BC_DONE;
    c->lf__result = result;
    if (wake)
        lf__bound_wake(b, c);
}

/* The connection is finished (lock held): err is what every later call says, and
 * every context in flight gets it too, but for a shutdown (err ECANCELED:
 * lf_bound_shutdown, or the hybrid reactor's stop). A shutdown's ECANCELED promises
 * "not sent",
 * and a context in flight may wait for a request that went out (lf_bound_call's
 * did, or is going out: it expects first; after a bare lf_bound_send the bound
 * cannot tell), so those get ECONNABORTED: the reply will not be read, the server
 * may have applied the request. A call that finds the bound finished before its
 * first byte is written still says ECANCELED (lf__bound_send returns it, and
 * lf_bound_call returns the send's error, not the context's). */
/* Hybrid: the bound's handler writes what is queued (a started call's request has no
 * thread to take over as writer), or fails it. Defined with the hybrid part. */
static inline void lf__bound_kick_writer(lf_bound *b);

static inline void lf__bound_fail_locked(lf_bound *b, int err, lf_bound_ctx *self)
{
    int waiters = err == ECANCELED ? ECONNABORTED : err;
    if (b->lf__failed)
        return;
    b->lf__failed = err;
    for (size_t i = 0; i < b->lf__nmap; i++) {
        /* the bucket goes whole; each context leaves it before it may wake */
        lf_bound_ctx *c = b->lf__map[i], *next;
        b->lf__map[i] = NULL;
        for (; c != NULL; c = next) {
            next = c->lf__next;
            c->lf__next = NULL;
            c->lf__pprev = NULL;
            lf__bound_finish(b, c, waiters, c != self);
        }
    }
    while (b->lf__pending != NULL) { /* in order, not on the wire yet */
        lf_bound_ctx *c = b->lf__pending;
        lf__bmap_remove(c);
        lf__bound_finish(b, c, waiters, c != self);
    }
    for (; b->lf__ring_head != b->lf__ring_tail; b->lf__ring_head++) {
        lf_bound_ctx *c = b->lf__ring[b->lf__ring_head & (b->lf__ring_cap - 1)];
        b->lf__ring[b->lf__ring_head & (b->lf__ring_cap - 1)] = NULL;
        if (c != NULL) {
            c->lf__pos = 0;
            lf__bound_finish(b, c, waiters, c != self);
        }
    }
    if (b->lf__cur) {
        lf__bound_finish(b, b->lf__cur, waiters, b->lf__cur != self);
        b->lf__cur = NULL;
    }
    lf__bound_kick(b); /* a leader blocked in poll looks again */
    if (b->lf__att != NULL)
        lf__bound_kick_writer(b); /* the queue fails too, wherever this failure came from */
}

static inline void lf__bound_q_drain(lf_bound *b);

/* ... and what is queued fails too (from a thread that holds none of our locks) */
static inline void lf__bound_fail(lf_bound *b, int err, lf_bound_ctx *self)
{
    pthread_mutex_lock(&b->lf__lock);
    lf__bound_fail_locked(b, err, self);
    pthread_mutex_unlock(&b->lf__lock);
    lf__bound_q_drain(b);
}

static inline int lf__bound_reactor_gone(lf_bound *b);

/* Hybrid (lock held): a stop of the reactor finishes the bound now, not when one of
 * its own waiters next turns the reactor: with none in a turn (the usual case: the
 * reactor's own threads saw the stop) expect and send would go on, and the requests
 * would reach a server whose replies nobody reads any more. Asked by expect, by each
 * write of the writer (PIPELINING) and by stats. */
static inline void lf__bound_learn_stop_locked(lf_bound *b)
{
    if (b->lf__r != NULL && b->lf__failed == 0 && lf__bound_reactor_gone(b))
        lf__bound_fail_locked(b, ECANCELED, NULL);
}

/* Leader: parse what the receive buffer holds, delivering every complete reply
 * (with stop_at_self, only up to self's own). Returns 0 when it needs more bytes or
 * stopped, or the error that failed the connection. */
static inline int lf__bound_consume(lf_bound *b, lf_bound_ctx *self, int stop_at_self)
{
    const struct lf_bound_hooks *k = &b->lf__hooks;
    int held = 0; /* the header's step kept the lock for the body's (one lock a frame) */

    for (;;) {
        size_t avail = b->lf__rx_end - b->lf__rx_start;
        const unsigned char *at = b->lf__rx + b->lf__rx_start;

        if (!b->lf__in_body) {
            uint64_t id = 0;
            size_t len = 0, hlen = k->header_len;
            int rc;
            if (k->frame_header) { /* the protocol's headers vary in length */
                if (avail == 0)
                    return 0;
                rc = k->frame_header(k->user, at, avail, &hlen, &id, &len);
                if (rc == EAGAIN && avail < LF_BOUND_HEADER_MAX)
                    return 0; /* more bytes first (fill keeps room for a whole header) */
                if ((rc == 0 || rc == ENOMSG) && (hlen == 0 || hlen > avail))
                    rc = EPROTO; /* a header that is not in what it was shown */
            } else {
                if (avail < hlen)
                    return 0;
                rc = k->parse_header(k->user, at, &id, &len);
            }
            /* max_body holds for skipped frames too: a header may claim any length */
            if ((rc == 0 || rc == ENOMSG) && k->max_body && len > k->max_body)
                rc = EPROTO;
            if (rc != 0 && rc != ENOMSG) {
                lf__bound_fail(b, EPROTO, self);
                return EPROTO;
            }
            b->lf__rx_start += hlen;
            pthread_mutex_lock(&b->lf__lock);
            if (rc == ENOMSG) {
                b->lf__stats.skipped++;
            } else {
                lf_bound_ctx *c;
                if (k->flags & LF_BOUND_IN_ORDER) {
                    /* the reply is the oldest request's; a reply with no request
                     * before it is a protocol error; a withdrawn one's is dropped */
                    if (b->lf__ring_head == b->lf__ring_tail) {
                        b->lf__stats.stray++;
                        lf__bound_fail_locked(b, EPROTO, self);
                        pthread_mutex_unlock(&b->lf__lock);
                        return EPROTO;
                    }
                    c = b->lf__ring[b->lf__ring_head & (b->lf__ring_cap - 1)];
                    b->lf__ring[b->lf__ring_head++ & (b->lf__ring_cap - 1)] = NULL;
                    if (c != NULL)
                        c->lf__pos = 0;
                } else {
                    c = lf__bmap_find(b, id);
                }
                if (c == NULL) {
                    b->lf__stats.stray++;
                    if (k->flags & LF_BOUND_STRICT) {
                        lf__bound_fail_locked(b, EPROTO, self);
                        pthread_mutex_unlock(&b->lf__lock);
                        return EPROTO;
                    }
                } else {
                    /* claimed: from now on a timeout or cancel must go through lf__cur */
                    if (c->lf__pprev != NULL) /* (in order, it is in the ring only) */
                        lf__bmap_remove(c);
                    c->lf__state = LF__BC_RECEIVING;
                    if (len > c->cap) {
                        /* EMSGSIZE, with the size it needs: the caller may retry */
                        b->lf__stats.refused++;
                        c->len = len;
                        lf__bound_finish(b, c, EMSGSIZE, c != self);
                    } else {
                        b->lf__cur = c;
                    }
                }
            }
            held = 1; /* for the body's step, next */
            b->lf__in_body = 1;
            b->lf__body_len = len;
            b->lf__body_off = 0;
            continue;
        }

        size_t n = b->lf__body_len - b->lf__body_off;
        if (n > avail)
            n = avail;
        if (n == 0 && b->lf__body_off < b->lf__body_len) {
            if (held)
                pthread_mutex_unlock(&b->lf__lock);
            return 0;
        }
        if (!held)
            pthread_mutex_lock(&b->lf__lock);
        held = 0;
        lf_bound_ctx *c = b->lf__cur; /* NULL: skipping (nobody's, withdrawn, refused) */
        if (c && n) {
            int bad = 0;
            if (k->read_body)
                bad = k->read_body(k->user, c, at, n, b->lf__body_off);
            else
                memcpy((char *)c->buf + b->lf__body_off, at, n);
            if (bad == LF_BOUND_BROKEN) { /* out of step: nothing after it holds */
                b->lf__rx_start += n;
                lf__bound_fail_locked(b, EPROTO, self);
                pthread_mutex_unlock(&b->lf__lock);
                return EPROTO;
            }
            if (bad) {
                b->lf__stats.refused++;
                lf__bound_finish(b, c, EBADMSG, c != self);
                b->lf__cur = c = NULL;
            }
        }
        b->lf__rx_start += n;
        b->lf__body_off += n;
        if (b->lf__body_off == b->lf__body_len) {
            b->lf__in_body = 0;
            if (c) {
                c->len = b->lf__body_len;
                b->lf__stats.replies++;
                if (c == self)
                    b->lf__stats.own++;
                else
                    b->lf__stats.handed_off++;
                lf__bound_finish(b, c, 0, c != self);
                b->lf__cur = NULL;
            }
            if (stop_at_self && c == self && c != NULL) {
                /* our own reply: stop here and let the next leader take what is
                 * buffered, as the pattern says (with FIFO and replies in request
                 * order, the next reply is usually the next leader's own) */
                pthread_mutex_unlock(&b->lf__lock);
                return 0;
            }
        }
        pthread_mutex_unlock(&b->lf__lock);
    }
}

static inline int lf__bound_ms_until(const struct timespec *dl)
{
    struct timespec now;
    long long ns;
    if (dl == NULL)
        return -1;
    clock_gettime(CLOCK_MONOTONIC, &now);
    ns = lf__ts_ns(dl); /* saturates: a deadline centuries away is "never" */
    if (ns == LLONG_MAX)
        return 0x7fffffff;
    ns -= lf__ts_ns(&now);
    if (ns <= 0)
        return 0;
    ns = (ns + 999999) / 1000000; /* round up: never wake before the deadline */
    return ns > 0x7fffffff ? 0x7fffffff : (int)ns;
}

/* Read once into the receive buffer: 1 got bytes, 0 nothing there (EAGAIN), -1 the
 * connection failed (every waiter has its result then). */
static inline int lf__bound_fill(lf_bound *b, lf_bound_ctx *self)
{
    ssize_t got;
    /* room for more: move a partial frame to the front when the tail is short */
    if (b->lf__rx_start == b->lf__rx_end) {
        b->lf__rx_start = b->lf__rx_end = 0;
    } else if (LF_BOUND_RXBUF - b->lf__rx_end < LF_BOUND_HEADER_MAX) {
        memmove(b->lf__rx, b->lf__rx + b->lf__rx_start, b->lf__rx_end - b->lf__rx_start);
        b->lf__rx_end -= b->lf__rx_start;
        b->lf__rx_start = 0;
    }
    do
        got = read(b->lf__fd, b->lf__rx + b->lf__rx_end, LF_BOUND_RXBUF - b->lf__rx_end);
    while (got < 0 && errno == EINTR);
    if (got > 0) {
        b->lf__rx_end += (size_t)got;
        pthread_mutex_lock(&b->lf__lock);
        b->lf__stats.reads++;
        pthread_mutex_unlock(&b->lf__lock);
        return 1;
    }
    if (got < 0 && LF__AGAIN(errno))
        return 0;
    lf__bound_fail(b, ECONNRESET, self); /* EOF or a broken connection */
    return -1;
}

/* The leader's wait (poll on the connection and the wake-up descriptor), entered
 * and left with cancellation off; cs is the caller's state, which the wait has. */
static inline int lf__bound_poll_cancelable(struct pollfd *pfd, int ms, int cs)
{
    int ready;
    int inner;
    lf__nocancel_end(cs);
    inner = lf__blocking_begin(); /* (ThreadSanitizer: see LF__TSAN_WAITS in lf.h) */
    ready = poll(pfd, 2, lf__blocking_ms(ms));
    lf__blocking_end(inner);
    (void)lf__nocancel_begin();
    return ready;
}

/* The receive state (lf__rx_*, lf__in_body, lf__body_*, lf__cur) has one reader at a
 * time: in bare mode the leader; hybrid, the dispatch of the bound's handler and a
 * join at the nesting limit, which reads the connection itself, take the handler's
 * lock around every step that touches it (defined with the hybrid part). */
static inline void lf__bound_rx_lock(lf_bound *b);
static inline void lf__bound_rx_unlock(lf_bound *b);

/* The leader's turn: read and deliver until self's result is in (0), the connection
 * failed (0: self has its result then too), or the deadline. Bare mode, and hybrid
 * for the joins at the nesting limit (which lead the bound's own pool: see NESTING).
 * CANCELLATION: the poll is the turn's one cancellation point, with the caller's
 * state; the rest runs with cancellation off: the hooks (read_body under the lock),
 * and the read, which never waits (the socket is non-blocking) yet is a cancellation
 * point to libc. So a cancel finds the receive state (in b, not on our stack)
 * between two steps of lf__bound_consume, where the next leader carries on from it
 * (lf__bound_abandon). */
static inline int lf__bound_lead(lf_bound *b, lf_bound_ctx *self, const struct timespec *deadline)
{
    int cs = lf__nocancel_begin(), rc = 0;
    /* hybrid: the reactor's threads read the connection too, and a reply left in the
     * buffer would wake no epoll: hand out every complete one, not just up to ours */
    int hybrid = b->lf__r != NULL;
    for (;;) {
        struct pollfd pfd[2];
        int done, ms, got, ready;

        lf__bound_rx_lock(b);
        got = lf__bound_consume(b, self, !hybrid);
        lf__bound_rx_unlock(b);
        if (got != 0)
            break;
        pthread_mutex_lock(&b->lf__lock);
        if (hybrid)
            lf__bound_learn_stop_locked(b); /* the reactor's stop finishes the bound */
        done = self->lf__state == LF__BC_DONE || b->lf__failed;
        pthread_mutex_unlock(&b->lf__lock);
        /* our request waits in a queue nobody writes: the join writes it */
        if (self->lf__out != NULL && lf__load(&b->lf__orphaned, relaxed) &&
            lf__load(&self->lf__out->state, relaxed) == LF__OUT_QUEUED)
            done = 1;
        if (done)
            break;
        /* looked at between reads too: a stream that never stops (a flood of frames
         * for others) must not keep a leader past its deadline */
        if ((ms = lf__bound_ms_until(deadline)) == 0) {
            rc = ETIMEDOUT;
            break;
        }
        lf__bound_rx_lock(b);
        got = lf__bound_fill(b, self);
        lf__bound_rx_unlock(b);
        if (got < 0)
            break;
        if (got > 0)
            continue;
        /* nothing buffered: wait for the connection, a kick, or the deadline (hybrid:
         * at most 50 ms, to see a stop of the reactor, which kicks nobody here) */
        if (hybrid && (ms < 0 || ms > 50))
            ms = 50;
        pfd[0].fd = b->lf__fd;
        pfd[0].events = POLLIN;
        pfd[1].fd = b->lf__wake[0];
        pfd[1].events = POLLIN;
        pfd[0].revents = pfd[1].revents = 0;
        ready = lf__bound_poll_cancelable(pfd, ms, cs);
        if (ready > 0 && (pfd[1].revents & POLLIN)) {
            uint64_t drain;
            ssize_t n = read(b->lf__wake[0], &drain, sizeof drain);
            (void)n;
        }
    }
    lf__nocancel_end(cs);
    return rc;
}

/* The context gives up (lock held): a timeout, a cancel or a shutdown. */
static inline void lf__bound_withdraw_locked(lf_bound *b, lf_bound_ctx *c, int why)
{
    if (c->lf__state == LF__BC_WAITING) {
        if (c->lf__pprev != NULL)
            lf__bmap_remove(c);
        if (c->lf__pos != 0) /* in order: its reply is dropped in its turn */
            b->lf__ring[(c->lf__pos - 1) & (b->lf__ring_cap - 1)] = NULL;
        c->lf__pos = 0;
    } else if (c->lf__state == LF__BC_RECEIVING) {
        /* the leader is reading its body: it skips the rest (it re-reads lf__cur
         * under this lock before every copy, so nothing lands in c any more) */
        if (b->lf__cur == c)
            b->lf__cur = NULL;
        b->lf__stats.stray++;
    } else {
        return; /* the result is already in: it wins */
    }
    if (why == ETIMEDOUT)
        b->lf__stats.timeouts++;
    else if (why == ECANCELED)
        b->lf__stats.cancels++; /* other reasons: lf_bound_call's failed send */
    lf__bound_finish(b, c, why, 0);
}

/* c's result, if it is in (lock held): LF__BC_IDLE again, and 1. */
static inline int lf__bound_collect(lf_bound *b, lf_bound_ctx *c, int *rc)
{
    if (c->lf__state != LF__BC_DONE)
        return 0;
    *rc = c->lf__result;
    c->lf__state = LF__BC_IDLE;
    if (c->lf__starting) { /* (a start that failed or was cancelled: it is over) */
        c->lf__starting = 0;
        pthread_cond_broadcast(&b->lf__start_cv);
    }
    b->lf__in_flight--;
    return 1;
}

/* CANCELLATION: c's thread is cancelled inside a wait of this header, and its cleanup
 * handler runs this (no lock of ours held: a condition wait's mutex is given back
 * first). c is withdrawn as lf_bound_cancel would withdraw it (a reply that comes
 * later is skipped and counted as stray) and collected at once: out of the map, out
 * of lf__cur, not counted in flight, so the bound keeps no pointer into the stack of
 * a thread that is going away, and lf_bound_destroy is not held up by it. A result
 * that was in already (a reply delivered, a failure) is dropped with it. Taking the
 * lock also waits out a waker inside lf__bound_wake(c). An idle c has nothing to
 * give back (and is not counted). */
static inline void lf__bound_abandon(lf_bound *b, lf_bound_ctx *c)
{
    int rc;
    pthread_mutex_lock(&b->lf__lock);
    if (c->lf__state != LF__BC_IDLE) {
        /* EINTR: a reason counted neither as a timeout nor as a cancel; nobody reads it */
        lf__bound_withdraw_locked(b, c, EINTR);
        (void)lf__bound_collect(b, c, &rc);
        b->lf__stats.cancelled++;
    }
    pthread_mutex_unlock(&b->lf__lock);
}

/* What a cleanup handler needs (pushed around small functions, so that nothing the
 * handler reads changes between push and pop: gcc -Wclobbered stays quiet). */
typedef struct LF__CFG(lf__bound_guard) {
    lf_bound *b;
    lf_bound_ctx *c;
    const struct timespec *deadline;
    void *outer; /* hybrid: the context of the join this one is nested in */
    long long outer_until; /* hybrid: the earliest deadline of the joins below, +1 (0: none) */
    int deep; /* a hybrid join's first look sets c->lf__deep to it; -1: done, or bare */
    int rc;
} lf__bound_guard;

/* The bound's lock held, at every look of a join at its context: the first look of
 * a hybrid join says how c is to be woken (by the reactor, or, deep, in the bound's
 * own pool: NESTING) and counts a deep join that will wait (not one that collects at
 * once). One lock for both, the look's own. */
static inline void lf__bound_mark(lf__bound_guard *g)
{
    if (g->deep < 0)
        return;
    g->c->lf__deep = g->deep;
    if (g->deep && (g->c->lf__state == LF__BC_WAITING || g->c->lf__state == LF__BC_RECEIVING))
        g->b->lf__stats.deep++;
    g->deep = -1;
}

/* ------------------------------------------------------------------ >>api */

static inline int lf_bound_init(lf_bound *b, int fd, const struct lf_bound_hooks *hooks)
{
    int rc, fl;

    if (b == NULL || hooks == NULL ||
        (hooks->frame_header == NULL && (hooks->parse_header == NULL || hooks->header_len == 0 ||
                                         hooks->header_len > LF_BOUND_HEADER_MAX)))
        return EINVAL;
    if (fd < 0 || (fl = fcntl(fd, F_GETFL)) < 0)
        return fd < 0 ? EINVAL : EBADF;
    memset((void *)b, 0, offsetof(lf_bound, lf__rx)); /* not the buffer: 16 KiB of nothing */
    if ((b->lf__map = (lf_bound_ctx **)calloc(LF_BOUND_BUCKETS, sizeof(lf_bound_ctx *))) == NULL)
        return ENOMEM;
    b->lf__nmap = LF_BOUND_BUCKETS;
    b->lf__map_shift = 64;
    for (size_t n = b->lf__nmap; n > 1; n >>= 1)
        b->lf__map_shift--;
    if (hooks->flags & LF_BOUND_IN_ORDER) {
        b->lf__ring_cap = 64;
        b->lf__ring = (lf_bound_ctx **)calloc(b->lf__ring_cap, sizeof(lf_bound_ctx *));
        if (b->lf__ring == NULL) {
            free(b->lf__map);
            return ENOMEM;
        }
    }
#ifdef LF__LINUX
    b->lf__wake[0] = b->lf__wake[1] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    rc = b->lf__wake[0] < 0 ? errno : 0;
#else
    rc = pipe(b->lf__wake) != 0 ? errno : 0;
    if (rc == 0) {
        fcntl(b->lf__wake[0], F_SETFL, O_NONBLOCK);
        fcntl(b->lf__wake[1], F_SETFL, O_NONBLOCK);
    }
#endif
    if (rc) {
        free(b->lf__ring);
        free(b->lf__map);
        return rc;
    }
    rc = lf_pool_init(&b->pool);
    if (rc == 0 && (rc = lf__cond_init_monotonic(&b->lf__send_cv)) != 0)
        lf_pool_destroy(&b->pool);
    if (rc == 0 && (rc = pthread_cond_init(&b->lf__start_cv, NULL)) != 0) {
        pthread_cond_destroy(&b->lf__send_cv);
        lf_pool_destroy(&b->pool);
    }
    if (rc != 0) {
        lf__bound_close_wake(b);
        free(b->lf__ring);
        free(b->lf__map);
        return rc;
    }
    fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    b->lf__wakeup = lf__bound_wake_bare;
    b->lf__poolstats = lf__bound_poolstats_bare;
    b->lf__hooks = *hooks;
    lf__store(&b->lf__nest_max, LF_BOUND_NEST_MAX, relaxed);
    b->lf__fd = fd;
    pthread_mutex_init(&b->lf__lock, NULL);
    pthread_mutex_init(&b->lf__send, NULL);
    b->lf__tag = LF__BOUND_TAG;
    return 0;
}

static inline void lf__bound_detach(lf_bound *b);

/* Contract: no context in flight, no thread inside; the fd stays open (yours, in
 * both modes). */
static inline int lf_bound_destroy(lf_bound *b)
{
    int rc;
    if (!lf__bound_ok(b))
        return EINVAL;
    pthread_mutex_lock(&b->lf__lock);
    rc = b->lf__in_flight ? EBUSY : 0;
    pthread_mutex_unlock(&b->lf__lock);
    if (rc || (rc = lf_pool_destroy(&b->pool)) != 0)
        return rc;
    b->lf__tag = 0; /* every call says EINVAL from here on */
    if (b->lf__att) {
        /* hybrid: no dispatch of the reactor touches b after it. Cancellation off:
         * taking the handler out of the reactor is not a wait, and must finish */
        int cs = lf__nocancel_begin();
        lf__bound_detach(b);
        lf__nocancel_end(cs);
        b->lf__att = NULL;
    }
    lf__bound_close_wake(b);
    while (b->lf__q_head != NULL) { /* (only blocks of cancelled starts can be left:
                                     * no call is in flight and no thread inside) */
        lf__bound_out *o = b->lf__q_head;
        b->lf__q_head = o->next;
        if (o->owned)
            free(o);
    }
    b->lf__q_tail = NULL;
    free(b->lf__map);
    b->lf__map = NULL;
    free(b->lf__ring);
    b->lf__ring = NULL;
    pthread_mutex_destroy(&b->lf__lock);
    pthread_mutex_destroy(&b->lf__send);
    pthread_cond_destroy(&b->lf__send_cv);
    pthread_cond_destroy(&b->lf__start_cv);
    return 0;
}

/* Contract: any thread; c is then used by one thread at a time. */
static inline int lf_bound_ctx_init(lf_bound_ctx *c, void *buf, size_t cap, int priority)
{
    if (c == NULL || (buf == NULL && cap != 0))
        return EINVAL;
    memset((void *)c, 0, sizeof *c);
    c->buf = buf;
    c->cap = cap;
    return lf_follower_init(&c->lf__f, priority);
}

static inline void lf_bound_ctx_destroy(lf_bound_ctx *c)
{
    if (c) {
        lf_follower_destroy(&c->lf__f);
        free(c->lf__abuf);
        c->lf__abuf = NULL;
        c->lf__acap = 0;
    }
}

/* Room in the ring for one more request on the wire (lock held): 0, or ENOMEM. */
static inline int lf__bound_ring_room(lf_bound *b)
{
    size_t cap = b->lf__ring_cap, used = (size_t)(b->lf__ring_tail - b->lf__ring_head);
    lf_bound_ctx **r;
    if (used + b->lf__in_flight + 1 <= cap)
        return 0;
    while (used + b->lf__in_flight + 1 > cap)
        cap *= 2;
    if ((r = (lf_bound_ctx **)calloc(cap, sizeof(lf_bound_ctx *))) == NULL)
        return ENOMEM;
    for (unsigned long long i = b->lf__ring_head; i != b->lf__ring_tail; i++)
        r[i & (cap - 1)] = b->lf__ring[i & (b->lf__ring_cap - 1)];
    free(b->lf__ring);
    b->lf__ring = r;
    b->lf__ring_cap = cap;
    return 0;
}

/* expect; in order (in_order), with no id: the writer gives c its place */
static inline int lf__bound_expect(lf_bound *b, lf_bound_ctx *c, uint64_t id, int in_order,
                                   void *h)
{
    int rc = 0, failed;
    pthread_mutex_lock(&b->lf__lock);
    lf__bound_learn_stop_locked(b);
    if ((failed = b->lf__failed) != 0)
        rc = b->lf__failed;
    else if (lf__load(&b->lf__send_failed, relaxed))
        rc = EPIPE; /* no request can go out: nothing to expect */
    else if (c->lf__state != LF__BC_IDLE)
        rc = EBUSY;
    else if (in_order)
        rc = lf__bound_ring_room(b);
    else if (lf__bmap_find(b, id) != NULL || (b->lf__cur && b->lf__cur->id == id))
        rc = EEXIST;
    if (rc == 0) {
        c->id = id;
        c->len = 0;
        c->lf__state = LF__BC_WAITING;
        c->lf__pos = 0;
        c->lf__h = h;
        c->lf__starting = h != NULL;
        c->lf__queued = h != NULL; /* (lf_bound_start queues it next, or lets go) */
        c->lf__gen++;
        c->lf__next = NULL;
        c->lf__pprev = NULL;
        if (!in_order) {
            if (b->lf__in_flight >= 2 * b->lf__nmap)
                lf__bmap_grow(b);
            lf__bmap_insert(b, c);
        } else
            lf__blist_insert(&b->lf__pending, c);
        b->lf__in_flight++;
    }
    pthread_mutex_unlock(&b->lf__lock);
    if (failed && b->lf__r != NULL)
        lf__bound_q_drain(b); /* a stop learnt here: started requests may be queued */
    return rc;
}

/* Contract: the thread that owns c, before it sends the request. */
static inline int lf_bound_expect(lf_bound *b, lf_bound_ctx *c, uint64_t id)
{
    if (!lf__bound_ok(b) || c == NULL)
        return EINVAL;
    if (b->lf__hooks.flags & LF_BOUND_IN_ORDER)
        return ENOTSUP; /* the place is the id: lf_bound_call only */
    return lf__bound_expect(b, c, id, 0, NULL);
}

/* ------------------------------------------------------------------ >>pipelining
 * A request goes out through the write queue (lf__q_head, under lf__send), in the
 * order the senders queued them. The sender that finds nobody writing becomes the
 * WRITER: it writes everything queued, many requests per system call (sendmsg with
 * an iovec; writev on a pipe), and goes on while more come, until the queue is empty.
 * A sender that finds a writer at work leaves its request in the queue: lf_bound_call
 * goes straight on to its join (its request is written by the writer meanwhile; its
 * reply cannot come before), lf_bound_send waits until the request is out. So under
 * load one write carries many requests and a queued caller sleeps once, for its
 * reply. A writer whose own request is out stops after LF_BOUND_WRITE_ROUNDS more
 * writes, at its own deadline, or when the socket is full: the queue is then
 * ORPHANED, every thread whose request is in it is woken, and the first to look
 * takes over as writer (a join looks at every turn of its loop; the innermost call
 * of a thread queued last, so a thread that has a request queued is woken in a wait
 * that looks). A request is only ever cut by a failure or a deadline in the middle of
 * its own bytes, and then nothing is written after it (the write side is broken:
 * EPIPE from then on). */

/* A request on its way out: the writer's state (see lf__bound_room). */
typedef struct LF__CFG(lf__bound_sending) {
    lf_bound *b;
    const struct timespec *deadline; /* the writer's own */
    lf_follower self; /* bare: for the leader's work, made on first use */
    int self_ready;
    int handler; /* the writer is the bound's handler (hybrid: lf__bound_write_some) */
    int full;    /* ... which found the socket full: it waits for LF_EV_WRITE */
} lf__bound_sending;

static inline int lf__bound_room_hybrid(lf__bound_sending *s);

static inline void lf__bound_sending_init(lf__bound_sending *s, lf_bound *b,
                                          const struct timespec *deadline)
{
    memset((void *)s, 0, sizeof *s); /* (self: made on first use, see self_ready) */
    s->b = b;
    s->deadline = deadline;
}

/* A waiting sender's share of the reader's work, bounded: the replies that are there
 * read and handed out, then back to its send. Under the receive lock (hybrid: the
 * handler's; bare: none, the caller leads the bound's pool). */
static inline void lf__bound_read_some(lf_bound *b)
{
    lf__bound_rx_lock(b);
    for (int i = 0; i < 16; i++)
        if (lf__bound_consume(b, NULL, 0) != 0 || lf__bound_fill(b, NULL) <= 0)
            break;
    (void)lf__bound_consume(b, NULL, 0);
    lf__bound_rx_unlock(b);
}

/* The socket is full. Wait for room until the deadline, looking at the connection's
 * state every 50 ms (a shutdown or a failure ends a send the peer never drains).
 * And read: a peer that writes replies until we read them stops reading our
 * requests meanwhile, so a sender that waited for room while nobody read would wait
 * for good (every client thread inside a send, the server blocked on its replies).
 * Bare: if replies are waiting and nobody leads, the sender leads for a moment and
 * hands them out; hybrid: it reads them itself, under the handler's lock. */
static inline int lf__bound_room(lf__bound_sending *s, const struct timespec *deadline)
{
    lf_bound *b = s->b;
    lf_follower *self = &s->self;
    int *self_ready = &s->self_ready;
    struct pollfd pfd;
    int ms = lf__bound_ms_until(deadline);
    if (ms == 0)
        return ETIMEDOUT;
    if (b->lf__r)
        return lf__bound_room_hybrid(s);
    if (ms < 0 || ms > 50)
        ms = 50;
    pfd.fd = b->lf__fd;
    pfd.events = POLLOUT | POLLIN;
    pfd.revents = 0;
    if (poll(&pfd, 1, ms) <= 0 || (pfd.revents & POLLOUT) || !(pfd.revents & POLLIN))
        return 0;
    /* replies wait and there is no room: if nobody leads, read them now */
    if (!*self_ready) {
        if (lf_follower_init(self, 0) != 0)
            return 0;
        *self_ready = 1;
    }
    if (lf_pool_try_lead(&b->pool, self) == 0) {
        lf__bound_read_some(b); /* the leader's work, bounded */
        lf_pool_leave(&b->pool, self); /* to the next follower, in policy order */
    } else {
        pfd.events = POLLOUT; /* a leader reads them: give it a moment */
        pfd.revents = 0;
        (void)poll(&pfd, 1, 1);
    }
    return 0;
}

/* The earliest of deadline and those of the hybrid joins below on this thread's
 * stack (NESTING): buf, or deadline itself. Defined with the hybrid part. */
static inline const struct timespec *lf__bound_inherit(const struct timespec *deadline,
                                                       struct timespec *buf);

/* A started call's request is DONE (lf__send held; o out of the queue): nobody waits
 * for it but a cancel (o->waits), and its context may be collected and reused once
 * we let go of it: nothing touches o after. */
static inline void lf__bound_started_done(lf_bound *b, lf__bound_out *o, int rc)
{
    int waits = o->waits;
    lf_bound_ctx *c = o->c;
    o->rc = rc;
    pthread_mutex_lock(&b->lf__lock);
    if (rc)
        lf__bound_withdraw_locked(b, c, rc); /* the call's result, unless in */
    if (rc == ECANCELED && o->off == 0 && c->lf__state == LF__BC_DONE &&
        c->lf__result == ECONNABORTED)
        c->lf__result = ECANCELED; /* a shutdown's: not sent, and now we know it */
    lf__store(&o->state, LF__OUT_DONE, release);
    c->lf__queued = 0;
    lf__bound_let_go_locked(b, c);
    pthread_mutex_unlock(&b->lf__lock);
    if (waits)
        pthread_cond_broadcast(&b->lf__send_cv);
}

/* o's result is in (lf__send held, o out of the queue): DONE, and its owner told. A
 * call's request that did not go out whole ends the call's wait with rc (its context
 * withdrawn and woken, unless it is the writer's own: self). */
static inline void lf__bound_out_done(lf_bound *b, lf__bound_out *o, int rc, lf_bound_ctx *self)
{
    if (o->owned) { /* nobody's: its call was cancelled */
        free(o);
        return;
    }
    if (o->started) {
        lf__bound_started_done(b, o, rc);
        return;
    }
    o->rc = rc;
    if (rc && o->c) {
        lf_bound_ctx *c = o->c;
        pthread_mutex_lock(&b->lf__lock);
        if (c->lf__state == LF__BC_WAITING || c->lf__state == LF__BC_RECEIVING) {
            lf__bound_withdraw_locked(b, c, rc);
            if (c != self)
                lf__bound_wake(b, c);
        }
        pthread_mutex_unlock(&b->lf__lock);
    }
    lf__store(&o->state, LF__OUT_DONE, release);
    if (o->waits)
        pthread_cond_broadcast(&b->lf__send_cv);
}

/* Take the head off the queue (lf__send held). */
static inline lf__bound_out *lf__bound_q_pop(lf_bound *b)
{
    lf__bound_out *o = b->lf__q_head;
    if ((b->lf__q_head = o->next) == NULL)
        b->lf__q_tail = NULL;
    o->next = NULL;
    return o;
}

/* The owner takes its request back before a byte of it went out (lf__send held). */
static inline void lf__bound_q_unlink(lf_bound *b, lf__bound_out *o)
{
    lf__bound_out **pp = &b->lf__q_head, *prev = NULL;
    while (*pp != NULL && *pp != o) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    if (*pp == NULL)
        return;
    *pp = o->next;
    if (b->lf__q_tail == o)
        b->lf__q_tail = prev;
    o->next = NULL;
    if (b->lf__q_head == NULL)
        lf__store(&b->lf__orphaned, 0, relaxed);
}

/* Every queued request fails with rc (lf__send held): the connection failed or was
 * shut down before they went out, or the write side broke. A head cut in the middle
 * breaks the stream: it was not "not sent" (a shutdown's ECANCELED becomes
 * ECONNABORTED for it), and nothing may follow it. */
static inline void lf__bound_q_fail(lf_bound *b, int rc, lf_bound_ctx *self, int broken)
{
    while (b->lf__q_head != NULL) {
        lf__bound_out *o = lf__bound_q_pop(b);
        int why = rc;
        if (o->off > 0) {
            broken = 1;
            if (why == ECANCELED)
                why = ECONNABORTED;
        }
        lf__bound_out_done(b, o, why, self);
    }
    lf__store(&b->lf__orphaned, 0, relaxed);
    if (broken) { /* counted once: later sends say EPIPE without a write */
        lf__store(&b->lf__send_failed, EPIPE, relaxed);
        pthread_mutex_lock(&b->lf__lock);
        b->lf__stats.send_failures++;
        pthread_mutex_unlock(&b->lf__lock);
    }
}

/* The writer stops with requests still queued (lf__send held; full: the socket is):
 * wake every thread whose request is among them; the first to look writes on. A
 * head cut part-way is queued again too: only its owner takes it back, by finishing
 * it (or cutting it at its deadline), so no other thread waits on it for longer than
 * it chooses to. Started calls' requests have no owner waiting: the bound's handler
 * is asked to write (or, if it is the writer and the socket is full, waits for
 * LF_EV_WRITE). A connection that failed meanwhile fails them all instead. */
static inline void lf__bound_orphan(lf__bound_sending *s, int full)
{
    lf_bound *b = s->b;
    int started = 0, failed;
    if (lf__load(&b->lf__q_head->state, relaxed) == LF__OUT_WRITING)
        lf__store(&b->lf__q_head->state, LF__OUT_QUEUED, relaxed);
    pthread_mutex_lock(&b->lf__lock);
    if ((failed = b->lf__failed) == 0) {
        lf__store(&b->lf__orphaned, 1, relaxed);
        for (lf__bound_out *o = b->lf__q_head; o != NULL; o = o->next) {
            started |= o->started | o->owned; /* (no thread waits for either) */
            if (o->c && (o->c->lf__state == LF__BC_WAITING || o->c->lf__state == LF__BC_RECEIVING))
                lf__bound_wake(b, o->c);
        }
    }
    pthread_mutex_unlock(&b->lf__lock);
    if (failed) { /* (nobody else would look: the writer is the one that does) */
        lf__bound_q_fail(b, failed, NULL, 0);
        pthread_cond_broadcast(&b->lf__send_cv);
        return;
    }
    pthread_cond_broadcast(&b->lf__send_cv); /* the waiting lf_bound_sends */
    if (started) {
        if (s->handler && full)
            s->full = 1;
        else
            lf__bound_kick_writer(b);
    }
}

/* The earlier of two deadlines (either may be NULL: never). */
static inline const struct timespec *lf__bound_earlier(const struct timespec *a,
                                                       const struct timespec *b)
{
    if (a == NULL)
        return b;
    if (b == NULL)
        return a;
    return lf__ts_ns(b) < lf__ts_ns(a) ? b : a;
}

#define LF__BOUND_IOV 64 /* requests per write, at most */

/* Before a write (lf__send held): the queued requests whose deadline passed before
 * a byte of them went out leave the queue, not sent (ETIMEDOUT). */
static inline void lf__bound_q_expire(lf_bound *b, lf_bound_ctx *self)
{
    struct timespec now;
    long long t;
    lf__bound_out *o, *next;
    int any = 0;
    for (o = b->lf__q_head; o != NULL && !any; o = o->next)
        any = o->off == 0 && o->deadline != NULL;
    if (!any)
        return; /* (no clock read when no request has a deadline) */
    clock_gettime(CLOCK_MONOTONIC, &now);
    t = lf__ts_ns(&now);
    for (o = b->lf__q_head; o != NULL; o = next) {
        next = o->next;
        if (o->off == 0 && o->deadline != NULL && lf__ts_ns(o->deadline) <= t) {
            lf__bound_q_unlink(b, o);
            lf__bound_out_done(b, o, ETIMEDOUT, self);
        }
    }
}

/* LF_BOUND_IN_ORDER, before a write (lf__send held): the n requests from h that are
 * about to be written take their places in the ring, in wire order (a call's context,
 * or NULL for one withdrawn meanwhile, whose reply is dropped in its turn; a plain
 * send's request has no reply and no place). Before the write, not after: the reply
 * may be read before the writer is back. */
static inline int lf__bound_ring_enter(lf_bound *b, lf__bound_out *h, int n)
{
    int rc;
    pthread_mutex_lock(&b->lf__lock);
    if ((rc = b->lf__failed) != 0) { /* failed since the writer looked: nothing goes out */
        pthread_mutex_unlock(&b->lf__lock);
        return rc;
    }
    for (lf__bound_out *o = h; o != NULL && n > 0; o = o->next, n--) {
        lf_bound_ctx *c = o->c;
        if (c == NULL || o->pos != 0)
            continue; /* no reply, or placed by an earlier write */
        if (c->lf__state != LF__BC_WAITING)
            c = NULL; /* (its call ended and may be collected: room not kept for it) */
        if (b->lf__ring_tail - b->lf__ring_head == b->lf__ring_cap &&
            lf__bound_ring_room(b) != 0) {
            lf__bound_fail_locked(b, ENOMEM, NULL); /* no place: nothing can match */
            rc = ENOMEM;
            break;
        }
        b->lf__ring[b->lf__ring_tail & (b->lf__ring_cap - 1)] = c;
        o->pos = ++b->lf__ring_tail;
        if (c != NULL) {
            lf__bmap_remove(c); /* off the pending list: on the wire */
            c->lf__pos = o->pos;
            c->id = o->pos - 1;
        }
    }
    pthread_mutex_unlock(&b->lf__lock);
    return rc;
}

/* After a write (lf__send held): the requests placed for it that did not go out (no
 * byte of them) give their places back. They hold the last places (the writer is
 * the only one to place). A place the reader took meanwhile (a reply for a request
 * not sent: the server is out of step) or a failure cleared is not given back. */
static inline void lf__bound_ring_unenter(lf_bound *b)
{
    unsigned long long back = 0;
    pthread_mutex_lock(&b->lf__lock);
    for (lf__bound_out *o = b->lf__q_head; o != NULL; o = o->next) {
        if (o->off != 0 || o->pos == 0)
            continue;
        if (o->c != NULL && o->c->lf__pos == o->pos) {
            o->c->lf__pos = 0; /* still waiting: pending again */
            lf__blist_insert(&b->lf__pending, o->c);
        }
        if (o->pos - 1 >= b->lf__ring_head) {
            b->lf__ring[(o->pos - 1) & (b->lf__ring_cap - 1)] = NULL;
            back++;
        }
        o->pos = 0;
    }
    b->lf__ring_tail -= back;
    pthread_mutex_unlock(&b->lf__lock);
}

/* The writer's turn: lf__send held (and given up around each system call), the
 * writer's flag set by the caller, who clears it after; cancellation off. own: the
 * writer's own request (in the queue, or DONE already). Writes the queue in order:
 * before each write the connection's state is looked at (a shutdown, a stop or a
 * failure fails what is queued), then as many requests as one system call takes. */
static inline void lf__bound_write_queue(lf__bound_sending *s, lf__bound_out *own)
{
    lf_bound *b = s->b;
    int rounds = 0; /* writes made for the others since ours went out */
    lf__bound_out *h;

    while (b->lf__q_head != NULL) {
        struct iovec iov[LF__BOUND_IOV];
        struct msghdr msg;
        lf__bound_out *o;
        int n_iov = 0, rc, err, waits = 0;
        int own_out = lf__load(&own->state, relaxed) == LF__OUT_DONE;
        ssize_t n;

        if (own_out && (rounds >= LF_BOUND_WRITE_ROUNDS || lf__bound_ms_until(s->deadline) == 0)) {
            lf__bound_orphan(s, 0); /* ours is out: the others' turn to write */
            return;
        }
        /* before each write, never after the last: a request written whole went out,
         * and a failure that comes after it is its join's to report. A shutdown or
         * stop between this look and the write overlaps the calls; their requests go
         * out, and their contexts, in flight, get ECONNABORTED: sent, either way. */
        pthread_mutex_lock(&b->lf__lock);
        lf__bound_learn_stop_locked(b); /* hybrid: a stop nobody waiting has seen yet */
        rc = b->lf__failed; /* the read side ended: nobody would read the replies */
        pthread_mutex_unlock(&b->lf__lock);
        if (rc || (rc = lf__load(&b->lf__send_failed, relaxed)) != 0) {
            lf__bound_q_fail(b, rc, own->c, 0);
            return;
        }
        lf__bound_q_expire(b, own->c);
        if ((h = b->lf__q_head) == NULL)
            return;
        for (o = h; o != NULL && n_iov < LF__BOUND_IOV; o = o->next) {
            iov[n_iov].iov_base = (void *)(uintptr_t)(o->p + o->off); /* (read only) */
            iov[n_iov].iov_len = o->len - o->off;
            lf__store(&o->state, LF__OUT_WRITING, relaxed); /* its owner may not take it back */
            n_iov++;
        }
        if ((b->lf__hooks.flags & LF_BOUND_IN_ORDER) &&
            (rc = lf__bound_ring_enter(b, h, n_iov)) != 0) {
            lf__bound_q_fail(b, rc, own->c, 0); /* the connection failed: none goes out */
            return;
        }
        pthread_mutex_unlock(&b->lf__send);
        memset(&msg, 0, sizeof msg);
        msg.msg_iov = iov;
        msg.msg_iovlen = (size_t)n_iov;
        n = sendmsg(b->lf__fd, &msg, MSG_NOSIGNAL);
        if (n < 0 && errno == ENOTSOCK)
            n = writev(b->lf__fd, iov, n_iov); /* a pipe: the caller handles SIGPIPE */
        err = n < 0 ? errno : 0;
        pthread_mutex_lock(&b->lf__send);
        if (n > 0) {
            size_t left = (size_t)n;
            rounds += own_out;
            lf__fetch_add(&b->lf__writes, 1, relaxed);
            while (left > 0) {
                o = b->lf__q_head;
                size_t take = o->len - o->off < left ? o->len - o->off : left;
                o->off += take;
                left -= take;
                if (o->off == o->len)
                    lf__bound_out_done(b, lf__bound_q_pop(b), 0, own->c);
            }
        }
        if (b->lf__hooks.flags & LF_BOUND_IN_ORDER)
            lf__bound_ring_unenter(b);
        /* the rest is queued again (a head cut part-way stays WRITING: it is the
         * writer's to finish, nobody may take it back) */
        for (o = b->lf__q_head; o != NULL; o = o->next) {
            /* (a started head cut part-way too: a cancel may move it out of its
             * context, lf__bound_out_detach) */
            if ((o->off == 0 || o->started) && lf__load(&o->state, relaxed) == LF__OUT_WRITING) {
                lf__store(&o->state, LF__OUT_QUEUED, relaxed);
                waits |= o->waits;
            }
        }
        if (waits)
            pthread_cond_broadcast(&b->lf__send_cv); /* an owner waits to take it back */
        if (n > 0 || err == EINTR)
            continue;
        if (n < 0 && LF__AGAIN(err)) {
            struct timespec hd, od;
            const struct timespec *dl = NULL;
            if ((h = b->lf__q_head) == NULL)
                continue; /* (a failed write took nothing off the queue) */
            if (lf__load(&own->state, relaxed) == LF__OUT_DONE) {
                lf__bound_orphan(s, 1); /* full: the others wait for room themselves */
                return;
            }
            /* ours is still to go: wait for room until the earlier of the head's
             * deadline and ours (copied: the head's owner may leave meanwhile) */
            if (h->deadline != NULL && !h->started) { /* (a started one's: see below) */
                hd = *h->deadline;
                dl = &hd;
            }
            if (own->deadline != NULL && !own->started) { /* (a cancel finishing a
                                                            * started one: no deadline) */
                od = *own->deadline;
                dl = lf__bound_earlier(dl, &od);
            }
            pthread_mutex_unlock(&b->lf__send);
            rc = lf__bound_room(s, dl);
            pthread_mutex_lock(&b->lf__send);
            h = b->lf__q_head;
            if (rc == ETIMEDOUT && h != NULL && h->off > 0 && !h->started &&
                lf__bound_ms_until(h->deadline) == 0) {
                /* cut part-way by its deadline: the stream is broken (a started
                 * request's deadline bounds its wait to begin only: once begun it is
                 * finished, nobody waiting for it) */
                lf__bound_out_done(b, lf__bound_q_pop(b), ETIMEDOUT, own->c);
                lf__bound_q_fail(b, EPIPE, own->c, 1);
                return;
            }
            continue; /* (a request that never began leaves at the next look) */
        }
        /* the write side failed: what was written before stands */
        lf__bound_q_fail(b, EPIPE, own->c, 1);
        return;
    }
}

/* Queue a request and, if nobody writes, write (lf__send held; cancellation off).
 * 0: queued, or written or failed by this thread as the writer (o->state says
 * which, o->rc why); else nothing was queued: the write side broke before (EPIPE,
 * or the connection's failure or shutdown if one came too). */
static inline int lf__bound_post_locked(lf__bound_sending *s, lf__bound_out *o)
{
    lf_bound *b = s->b;
    int rc;
    /* a broken write side refuses at once; the connection's state is the writer's
     * to look at, before every write (a request queued after a shutdown is failed
     * there, before a byte of it goes out) */
    if ((rc = lf__load(&b->lf__send_failed, relaxed)) != 0) {
        pthread_mutex_lock(&b->lf__lock); /* the connection's end says more, if it came */
        lf__bound_learn_stop_locked(b);
        if (b->lf__failed)
            rc = b->lf__failed;
        pthread_mutex_unlock(&b->lf__lock);
        return rc;
    }
    o->next = NULL;
    if (b->lf__q_tail)
        b->lf__q_tail->next = o;
    else
        b->lf__q_head = o;
    b->lf__q_tail = o;
    if (!b->lf__sending) {
        lf__bound_out none; /* a started call's writer has nothing of its own to wait for */
        b->lf__sending = 1;
        lf__store(&b->lf__orphaned, 0, relaxed); /* a new writer takes what was left */
        if (o->started) {
            memset((void *)&none, 0, sizeof none);
            lf__store(&none.state, LF__OUT_DONE, relaxed);
        }
        lf__bound_write_queue(s, o->started ? &none : o);
        b->lf__sending = 0;
    }
    return 0;
}

/* The connection failed (lf__send held): what is queued fails too, unless a writer
 * is at work (it looks before its next write, and before it leaves the queue). */
static inline void lf__bound_q_drain_locked(lf_bound *b)
{
    int rc;
    if (b->lf__sending || b->lf__q_head == NULL)
        return;
    pthread_mutex_lock(&b->lf__lock);
    rc = b->lf__failed;
    pthread_mutex_unlock(&b->lf__lock);
    if (rc)
        lf__bound_q_fail(b, rc, NULL, 0);
}

/* ... from a thread that holds none of the bound's locks (cancellation off: the
 * failures wake their owners) */
static inline void lf__bound_q_drain(lf_bound *b)
{
    int cs = lf__nocancel_begin();
    pthread_mutex_lock(&b->lf__send);
    lf__bound_q_drain_locked(b);
    pthread_mutex_unlock(&b->lf__send);
    lf__nocancel_end(cs);
}

/* A thread whose request waits in an orphaned queue takes over as its writer (from
 * the loops of the joins; cancellation off while it writes). */
static inline void lf__bound_adopt(lf_bound *b, lf__bound_out *own)
{
    lf__bound_sending s;
    int cs;
    if (own == NULL || !lf__load(&b->lf__orphaned, relaxed) ||
        lf__load(&own->state, relaxed) != LF__OUT_QUEUED)
        return;
    lf__bound_sending_init(&s, b, own->deadline);
    cs = lf__nocancel_begin();
    pthread_mutex_lock(&b->lf__send);
    /* (a request of ours that never began and whose deadline passed is the join's to
     * take back, not to write; one cut part-way is ours to finish, or to cut) */
    if (!b->lf__sending && lf__load(&b->lf__orphaned, relaxed) && b->lf__q_head != NULL &&
        lf__load(&own->state, relaxed) == LF__OUT_QUEUED &&
        (own->off > 0 || lf__bound_ms_until(own->deadline) != 0)) {
        b->lf__sending = 1;
        lf__store(&b->lf__orphaned, 0, relaxed);
        lf__bound_write_queue(&s, own);
        b->lf__sending = 0;
    }
    pthread_mutex_unlock(&b->lf__send);
    if (s.self_ready)
        lf_follower_destroy(&s.self);
    lf__nocancel_end(cs);
}

/* A started request cut part-way, its call cancelled (lf__send held; o queued, not
 * being written): the rest must still go out (the stream stays whole), but not from
 * its context, which its owner may free once the cancel returns. A block of the
 * queue's own takes its place (the whole request, and how much of it is out); the
 * writer frees it when it is out. 0, or ENOMEM (o left as it was). */
static inline int lf__bound_out_detach(lf_bound *b, lf__bound_out *o, int why)
{
    lf__bound_out *d;
    if (b->lf__q_head != o || o->len > SIZE_MAX - sizeof *d ||
        (d = (lf__bound_out *)malloc(sizeof *d + o->len)) == NULL)
        return ENOMEM; /* (a request begun is the head: the first test never holds) */
    memset((void *)d, 0, sizeof *d);
    memcpy((void *)(d + 1), o->p, o->len);
    d->p = (const char *)(d + 1);
    d->len = o->len;
    d->off = o->off;
    d->pos = o->pos; /* (in order: its place stays; its context was withdrawn from it) */
    lf__store(&d->state, LF__OUT_QUEUED, relaxed);
    d->owned = 1;
    d->next = o->next;
    b->lf__q_head = d;
    if (b->lf__q_tail == o)
        b->lf__q_tail = d;
    o->next = NULL;
    lf__bound_started_done(b, o, why); /* its context let go */
    return 0;
}

/* o is its owner's again (lf__send held, cancellation off): taken out of the queue
 * if no byte of it went out (DONE with why, "not sent"); waited for while a writer
 * has it; finished, as the writer, if a writer handed it on cut part-way (its
 * deadline then cuts it, so with none this waits for the peer to take it). */
static inline void lf__bound_out_settle(lf__bound_sending *s, lf__bound_out *o, int why)
{
    lf_bound *b = s->b;
    for (;;) {
        int st = lf__load(&o->state, relaxed);
        if (st == LF__OUT_DONE)
            return;
        if (st == LF__OUT_QUEUED && o->off == 0 && o->started) {
            lf__bound_q_unlink(b, o);
            lf__bound_started_done(b, o, why); /* its context let go too */
            return;
        }
        if (st == LF__OUT_QUEUED && o->started && lf__bound_out_detach(b, o, why) == 0)
            return; /* (no memory: finished by us, below) */
        if (st == LF__OUT_QUEUED && o->off == 0) {
            lf__bound_q_unlink(b, o);
            o->rc = why;
            lf__store(&o->state, LF__OUT_DONE, relaxed);
            return;
        }
        if (st == LF__OUT_QUEUED && !b->lf__sending) {
            b->lf__sending = 1; /* handed on part-way: ours to finish */
            lf__store(&b->lf__orphaned, 0, relaxed);
            lf__bound_write_queue(s, o);
            b->lf__sending = 0;
        } else {
            o->waits = 1; /* a writer has it, or will: out soon, handed on, or failed */
            pthread_cond_wait(&b->lf__send_cv, &b->lf__send);
        }
    }
}

/* A request waited for until it is out (lf_bound_send; hybrid, lf_bound_call), for
 * the cleanup: c, the call's context, or NULL. */
typedef struct LF__CFG(lf__bound_plain) {
    lf__bound_sending s;
    lf__bound_out *o;
    lf_bound_ctx *c;
} lf__bound_plain;

/* CANCELLATION of a wait for a request to go out (lf__send held again by the
 * condition wait): the request is taken back (nothing of it is out), or waited for,
 * or finished (see lf__bound_out_settle); a call's context is withdrawn. */
static inline void lf__bound_send_cancelled(void *arg)
{
    lf__bound_plain *g = (lf__bound_plain *)arg;
    int cs = lf__nocancel_begin();
    lf__bound_out_settle(&g->s, g->o, ECANCELED);
    pthread_mutex_unlock(&g->s.b->lf__send);
    if (g->c != NULL)
        lf__bound_abandon(g->s.b, g->c);
    if (g->s.self_ready)
        lf_follower_destroy(&g->s.self);
    lf__nocancel_end(cs);
}

static inline void lf__bound_out_init(lf__bound_out *o, const void *data, size_t len,
                                      lf_bound_ctx *c, const struct timespec *deadline)
{
    o->next = NULL;
    o->p = (const char *)data;
    o->len = len;
    o->off = 0;
    o->c = c;
    o->deadline = deadline;
    lf__store(&o->state, LF__OUT_QUEUED, relaxed);
    o->rc = 0;
    o->waits = 0;
    o->pos = 0;
    o->started = 0;
    o->owned = 0;
}

/* Queue g's request and wait until it is out (written by this thread as the writer,
 * or by another), or refused, or taken back at its deadline: 0 or why not.
 * lf__send held on entry and return; *cs the caller's cancel state (off meanwhile).
 * CANCELLATION: the wait while the request is queued and none of it is out is a
 * cancellation point (it is taken back); the writes and other waits are not. */
static inline int lf__bound_post_wait(lf__bound_plain *g, int *cs)
{
    lf_bound *b = g->s.b;
    lf__bound_out *o = g->o;
    int rc = lf__bound_post_locked(&g->s, o);
    while (rc == 0 && lf__load(&o->state, relaxed) != LF__OUT_DONE) {
        int st = lf__load(&o->state, relaxed);
        if (st == LF__OUT_QUEUED && !b->lf__sending &&
            (o->off > 0 || lf__load(&b->lf__orphaned, relaxed))) {
            b->lf__sending = 1; /* left by a writer: ours to write on */
            lf__store(&b->lf__orphaned, 0, relaxed);
            lf__bound_write_queue(&g->s, o);
            b->lf__sending = 0;
        } else if (st == LF__OUT_QUEUED && o->off == 0) {
            int w;
            o->waits = 1;
            lf__nocancel_end(*cs); /* the caller's cancel state, for this wait */
            w = lf__cond_wait_guarded(&b->lf__send_cv, &b->lf__send, o->deadline,
                                      lf__bound_send_cancelled, g);
            *cs = lf__nocancel_begin();
            if (w == ETIMEDOUT && lf__load(&o->state, relaxed) == LF__OUT_QUEUED && o->off == 0)
                lf__bound_out_settle(&g->s, o, ETIMEDOUT); /* never began: not sent */
        } else {
            o->waits = 1; /* a writer has it: out soon, handed on, or failed */
            pthread_cond_wait(&b->lf__send_cv, &b->lf__send);
        }
    }
    return rc ? rc : o->rc;
}

/* g's request queued and waited for until it is out (lf_bound_send; a hybrid call,
 * whose join must not run a handler while the request's bytes may still be read: a
 * buffer the handlers reuse, a thread-local one, stays the caller's to change). */
static inline int lf__bound_out_wait(lf__bound_plain *g)
{
    int rc, cs = lf__nocancel_begin();
    pthread_mutex_lock(&g->s.b->lf__send);
    rc = lf__bound_post_wait(g, &cs);
    pthread_mutex_unlock(&g->s.b->lf__send);
    if (g->s.self_ready)
        lf_follower_destroy(&g->s.self);
    lf__nocancel_end(cs);
    return rc;
}

/* lf_bound_send: one whole request, out when this returns 0. */
static inline int lf__bound_send(lf_bound *b, const void *data, size_t len,
                                 const struct timespec *deadline)
{
    lf__bound_out o;
    lf__bound_plain g;
    struct timespec inherited;
    int rc;

    if (!lf__bound_ok(b) || (data == NULL && len) || !lf__deadline_ok(deadline))
        return EINVAL;
    /* a send from a handler that a join dispatched waits no longer than that join */
    deadline = lf__bound_inherit(deadline, &inherited);
    if (len == 0) { /* nothing to write: what a send would say now */
        pthread_mutex_lock(&b->lf__lock);
        lf__bound_learn_stop_locked(b);
        rc = b->lf__failed;
        pthread_mutex_unlock(&b->lf__lock);
        return rc ? rc : lf__load(&b->lf__send_failed, relaxed);
    }
    lf__bound_out_init(&o, data, len, NULL, deadline);
    lf__bound_sending_init(&g.s, b, deadline);
    g.o = &o;
    g.c = NULL;
    return lf__bound_out_wait(&g);
}

/* Contract: any thread. One whole request, never interleaved with another. */
static inline int lf_bound_send(lf_bound *b, const void *data, size_t len)
{
    return lf__bound_send(b, data, len, NULL);
}

/* Contract: any thread. lf_bound_send with a deadline (ETIMEDOUT). */
static inline int lf_bound_send_until(lf_bound *b, const void *data, size_t len,
                                      const struct timespec *deadline)
{
    return lf__bound_send(b, data, len, deadline);
}

static inline int lf__bound_join_reactor(lf_bound *b, lf_bound_ctx *c,
                                         const struct timespec *deadline);

/* CANCELLATION of a bare join, wherever it waits: parked in the pool (lf.h's own
 * cleanup, lf__unpark, has taken c's follower out of the pool's set by now, and
 * handed on a promotion that came too late), or leading, in the poll of
 * lf__bound_lead. c is withdrawn first; then, if c's thread holds the leader's slot,
 * it goes to the next follower, which reads on from the receive state that is in b
 * (a reply half read is finished by it, or skipped if it was c's). */
static inline void lf__bound_join_cancelled(void *arg)
{
    lf__bound_guard *g = (lf__bound_guard *)arg;
    lf__bound_abandon(g->b, g->c);
    (void)lf_pool_leave(&g->b->pool, &g->c->lf__f); /* not leading: nothing to do */
}

/* The loop of a bare join (its own function: the cleanup is pushed around it). */
static inline void lf__bound_join_bare(lf__bound_guard *g)
{
    lf_bound *b = g->b;
    lf_bound_ctx *c = g->c;
    const struct timespec *deadline = g->deadline;

    for (;;) {
        int rc;
        pthread_mutex_lock(&b->lf__lock);
        lf__bound_mark(g);
        if (c->lf__state == LF__BC_IDLE) {
            pthread_mutex_unlock(&b->lf__lock);
            g->rc = EINVAL; /* nothing expected */
            return;
        }
        if (lf__bound_collect(b, c, &rc)) {
            pthread_mutex_unlock(&b->lf__lock);
            g->rc = rc;
            return;
        }
        pthread_mutex_unlock(&b->lf__lock);
        lf__bound_adopt(b, c->lf__out); /* our request is queued and nobody writes */

        rc = lf_pool_lead(&b->pool, &c->lf__f, deadline);
        if (rc == 0) {
            rc = lf__bound_lead(b, c, deadline);
            lf_pool_leave(&b->pool, &c->lf__f); /* the next follower leads, in policy order */
        }
        if (rc == ECANCELED) {
            /* the waiters' pool was shut down: lf_bound_shutdown, which finished the
             * bound first (c's result is in), or the public pool by hand: the same */
            lf__bound_fail(b, ECANCELED, c);
        } else if (rc == ETIMEDOUT) {
            pthread_mutex_lock(&b->lf__lock);
            lf__bound_withdraw_locked(b, c, rc);
            pthread_mutex_unlock(&b->lf__lock);
        } else if (rc != 0 && rc != EINTR) {
            g->rc = rc; /* EINVAL: c's follower is in use by another thread */
            return;
        }
        /* EINTR (notified) or 0 (led): the result is in, or look again */
    }
}

/* Contract: the thread that owns c, after lf_bound_expect. */
static inline int lf_bound_join(lf_bound *b, lf_bound_ctx *c, const struct timespec *deadline)
{
    lf__bound_guard g;
    struct timespec inherited;
    if (!lf__bound_ok(b) || c == NULL)
        return EINVAL;
    if (c->lf__h != NULL) /* (the owner's own field: expect sets it) */
        return EINVAL; /* started (lf_bound_start): lf_bound_collect takes its result */
    if (!lf__deadline_ok(deadline)) {
        /* a malformed deadline: c is given up (EINVAL), unless its result is in
         * already, which is returned; either way c is free again */
        int rc = EINVAL;
        pthread_mutex_lock(&b->lf__lock);
        if (c->lf__state != LF__BC_IDLE) {
            lf__bound_withdraw_locked(b, c, EINVAL);
            lf__bound_collect(b, c, &rc);
        }
        pthread_mutex_unlock(&b->lf__lock);
        return rc;
    }
    deadline = lf__bound_inherit(deadline, &inherited); /* NESTING */
    if (b->lf__r)
        return lf__bound_join_reactor(b, c, deadline);
    g.b = b;
    g.c = c;
    g.deadline = deadline;
    g.outer = NULL;
    g.deep = -1;
    g.rc = 0;
    LF__CLEANUP_PUSH(lf__bound_join_cancelled, &g);
    lf__bound_join_bare(&g);
    LF__CLEANUP_POP(0);
    return g.rc;
}

/* Contract: any thread. */
static inline int lf_bound_cancel(lf_bound *b, lf_bound_ctx *c)
{
    int rc = 0;
    if (!lf__bound_ok(b) || c == NULL)
        return EINVAL;
    pthread_mutex_lock(&b->lf__lock);
    if (c->lf__state == LF__BC_WAITING || c->lf__state == LF__BC_RECEIVING) {
        lf__bound_withdraw_locked(b, c, ECANCELED);
        lf__bound_wake(b, c); /* under the lock: c is still there (held: told below) */
    } else {
        rc = ENOENT;
    }
    if (c->lf__starting || c->lf__queued || c->lf__cancels) {
        /* a started call that the bound still holds: its request is taken out of
         * the write queue (one cut part-way is moved to a block of the queue's own,
         * lf__bound_out_detach), a start under way on another thread (its own
         * thread never cancels here: a start runs no handler) and any other cancel
         * at work are waited for, so that nothing of ours touches c once we return.
         * Not a cancellation point: lock waits, none for a peer (but with no memory
         * for the block: then we finish the request as lf_bound_send would). */
        int cs = lf__nocancel_begin();
        unsigned gen = c->lf__gen; /* (a start that fails collects c itself: its owner
                                    * may start it again meanwhile, not ours to touch) */
        c->lf__cancels++;
        while (c->lf__gen == gen && (c->lf__starting || c->lf__queued)) {
            if (c->lf__starting) {
                pthread_cond_wait(&b->lf__start_cv, &b->lf__lock); /* it never waits */
            } else {
                lf__bound_sending s;
                pthread_mutex_unlock(&b->lf__lock);
                lf__bound_sending_init(&s, b, NULL);
                pthread_mutex_lock(&b->lf__send);
                lf__bound_out_settle(&s, &c->lf__aout, ECANCELED);
                pthread_mutex_unlock(&b->lf__send);
                pthread_mutex_lock(&b->lf__lock);
            }
        }
        c->lf__cancels--;
        lf__bound_let_go_locked(b, c); /* told now, if no other cancel holds it */
        while (c->lf__cancels) /* another cancel at work: a collect after us must see */
            pthread_cond_wait(&b->lf__start_cv, &b->lf__lock); /* the result in */
        lf__nocancel_end(cs);
    }
    pthread_mutex_unlock(&b->lf__lock);
    return rc;
}

/* Contract: the thread that owns c (a started call's: its handler, on LF_EV_NOTIFY,
 * or its handle_close). Never waits. */
static inline int lf_bound_collect(lf_bound *b, lf_bound_ctx *c)
{
    int rc;
    if (!lf__bound_ok(b) || c == NULL)
        return EINVAL;
    pthread_mutex_lock(&b->lf__lock);
    if (c->lf__state == LF__BC_IDLE)
        rc = ENOENT;
    else if (lf__bound_held(c) || !lf__bound_collect(b, c, &rc))
        rc = EINPROGRESS; /* (held: the result is told after) */
    pthread_mutex_unlock(&b->lf__lock);
    return rc;
}

/* What lf_bound_call's cleanup needs (bare: its request may be queued while it
 * waits in its join). */
typedef struct LF__CFG(lf__bound_callg) {
    lf__bound_sending s;
    lf_bound_ctx *c;
    lf__bound_out *o;
} lf__bound_callg;

/* The request is its caller's again (after the join, or in its cleanup): see
 * lf__bound_out_settle. */
static inline void lf__bound_call_settle(lf__bound_callg *g, int why)
{
    int cs = lf__nocancel_begin();
    pthread_mutex_lock(&g->s.b->lf__send);
    lf__bound_out_settle(&g->s, g->o, why);
    pthread_mutex_unlock(&g->s.b->lf__send);
    g->c->lf__out = NULL;
    if (g->s.self_ready)
        lf_follower_destroy(&g->s.self);
    g->s.self_ready = 0;
    lf__nocancel_end(cs);
}

/* CANCELLATION of a bare lf_bound_call in its join (whose own cleanup withdrew c
 * first): its request is taken back if none of it is out, or waited for, or
 * finished (its bytes are on this thread's stack or the caller's). */
static inline void lf__bound_call_cancelled(void *arg)
{
    lf__bound_call_settle((lf__bound_callg *)arg, ECANCELED);
}

static inline int lf__bound_call_join(lf__bound_callg *g, const struct timespec *deadline)
{
    int rc;
    LF__CLEANUP_PUSH(lf__bound_call_cancelled, g);
    rc = lf_bound_join(g->s.b, g->c, deadline);
    LF__CLEANUP_POP(0);
    return rc;
}

/* Contract: the thread that owns c. Bare: the request is queued (PIPELINING) and the
 * call goes on to its join at once; the writer of the moment writes it meanwhile.
 * Hybrid: the join begins once the request is out. */
static inline int lf_bound_call(lf_bound *b, lf_bound_ctx *c, uint64_t id, const void *req,
                                size_t len, const struct timespec *deadline)
{
    lf__bound_out o;
    lf__bound_callg g;
    struct timespec inherited;
    const struct timespec *until;
    int rc, cs;

    if (!lf__bound_ok(b) || c == NULL || !lf__deadline_ok(deadline) || (req == NULL && len))
        return EINVAL;
    if (b->lf__hooks.flags & LF_BOUND_IN_ORDER) {
        if (len == 0)
            return EINVAL; /* no request, no place on the wire */
        id = 0; /* c->id says its place once it is on the wire */
    }
    if ((rc = lf__bound_expect(b, c, id, (b->lf__hooks.flags & LF_BOUND_IN_ORDER) != 0,
                                NULL)) != 0)
        return rc;
    if (len == 0)
        return lf_bound_join(b, c, deadline); /* nothing to write */
    /* the send waits no longer than the joins below it on this stack (NESTING) */
    until = lf__bound_inherit(deadline, &inherited);
    lf__bound_out_init(&o, req, len, c, until);
    if (b->lf__r != NULL) {
        lf__bound_plain p;
        lf__bound_sending_init(&p.s, b, until);
        p.o = &o;
        p.c = c;
        rc = lf__bound_out_wait(&p); /* out before the join serves */
    } else {
        lf__bound_sending_init(&g.s, b, until);
        g.c = c;
        g.o = &o;
        cs = lf__nocancel_begin(); /* a request goes out whole or not at all */
        pthread_mutex_lock(&b->lf__send);
        /* cppcheck-suppress autoVariables ; cleared before we return (call_settle) */
        c->lf__out = &o;
        rc = lf__bound_post_locked(&g.s, &o);
        pthread_mutex_unlock(&b->lf__send);
        lf__nocancel_end(cs);
        if (rc == 0) {
            rc = lf__bound_call_join(&g, deadline);
            /* the request is ours again: if it never went out whole, the call says
             * why, as a send would (a shutdown's ECONNABORTED is ECANCELED then: not
             * sent) */
            lf__bound_call_settle(&g, rc == ECONNABORTED ? ECANCELED : rc);
            return o.rc ? o.rc : rc;
        }
        c->lf__out = NULL;
        if (g.s.self_ready)
            lf_follower_destroy(&g.s.self);
    }
    if (rc != 0) {
        /* not out whole: withdraw the context (not counted as a cancel; a failure
         * of the connection or the writer may have completed it already), collect */
        pthread_mutex_lock(&b->lf__lock);
        lf__bound_withdraw_locked(b, c, rc);
        pthread_mutex_unlock(&b->lf__lock);
        (void)lf_bound_join(b, c, NULL);
        return rc;
    }
    return lf_bound_join(b, c, deadline);
}

/* Contract: any thread, any time (joins and sends that start later see it). */
static inline int lf_bound_set_nest_max(lf_bound *b, int levels)
{
    if (!lf__bound_ok(b) || levels < 0)
        return EINVAL;
    lf__store(&b->lf__nest_max, levels, relaxed);
    return 0;
}

/* Contract: any thread. Final. */
static inline int lf_bound_shutdown(lf_bound *b)
{
    if (!lf__bound_ok(b))
        return EINVAL;
    lf__bound_fail(b, ECANCELED, NULL);
    return lf_pool_shutdown(&b->pool);
}

LF__STATS_NAME_BEGIN
static inline int lf_bound_stats(lf_bound *b, struct lf_bound_stats *out)
{
    if (out == NULL)
        return EINVAL;
    memset((void *)out, 0, sizeof *out); /* defined on error too */
    if (!lf__bound_ok(b))
        return EINVAL;
    pthread_mutex_lock(&b->lf__lock);
    lf__bound_learn_stop_locked(b); /* failed says ECANCELED once the reactor stopped */
    *out = b->lf__stats;
    out->writes = lf__load(&b->lf__writes, relaxed);
    out->in_flight = b->lf__in_flight;
    out->failed = b->lf__failed;
    out->send_failed = lf__load(&b->lf__send_failed, relaxed);
    pthread_mutex_unlock(&b->lf__lock);
    if (out->failed)
        lf__bound_q_drain(b); /* (a stop learnt here: nobody else may look) */
    pthread_mutex_lock(&b->lf__send);
    for (lf__bound_out *o = b->lf__q_head; o != NULL; o = o->next)
        out->queued++;
    pthread_mutex_unlock(&b->lf__send);
    return b->lf__poolstats(b, &out->pool);
}
LF__STATS_NAME_END

/* ------------------------------------------------------------------ >>hybrid
 * Hybrid client/server: the connection is a handle of an lf_reactor, and a thread
 * waiting for its reply turns that reactor (lf_reactor_turn: one event per turn, as
 * leader and then processing thread) instead of waiting on the connection alone. So
 * it serves other handles meanwhile (incoming requests, timers), and the replies are
 * read by whichever thread the reactor dispatches the connection's handler to. A
 * reply wakes its waiter with lf_reactor_wake (parked in the reactor's pool, or
 * leading it). This part uses the reactor's public calls only. */
#ifdef LF_REACTOR_H_INCLUDED

/* The bound's handler in the reactor. Both the bound and the reactor hold it (refs):
 * the reactor until the handler's handle_close ran, the bound until
 * lf_bound_destroy, so either may go first. Its lock keeps a dispatch and
 * lf_bound_destroy apart: once `b` is NULL no dispatch touches the bound. */
typedef struct LF__CFG(lf__bound_att) {
    lf_handler h; /* first: the reactor hands us &h */
    pthread_mutex_t lock;
    lf_bound *b; /* NULL after lf_bound_destroy */
    lf_reactor *r;
    int refs;   /* the bound's and the reactor's */
    int closed; /* the reactor ran handle_close */
    int want_write; /* LF_EV_WRITE is in our interest: started requests wait for room
                     * (set and cleared by our own dispatch only) */
    lf_timer tmr;   /* ... and the earliest of their deadlines (lf__bound_write_some) */
} lf__bound_att;

/* the context this thread waits for in lf_bound_join (NULL: none), shared by every
 * file of the program like the reactor's own per-thread state. A void *: the context
 * type is named after the configuration, and the files of one program may differ. */
extern LF__THREAD_LOCAL void *lf__bound_self;
LF__SHARED LF__THREAD_LOCAL void *lf__bound_self;
/* the hybrid joins on this thread's stack: how many, and the earliest of their
 * deadlines (CLOCK_MONOTONIC nanoseconds plus one; 0: none of them has one) */
extern LF__THREAD_LOCAL int lf__bound_depth;
LF__SHARED LF__THREAD_LOCAL int lf__bound_depth;
extern LF__THREAD_LOCAL long long lf__bound_until;
LF__SHARED LF__THREAD_LOCAL long long lf__bound_until;

/* Contract: any thread, any hook. How many hybrid joins (lf_bound_join or
 * lf_bound_call on an attached bound) are waiting on the calling thread's stack: 0
 * outside any, 1 in a handler that such a join dispatched, and so on. A handler runs
 * at the bound's limit (LF_BOUND_NEST_MAX) at most; a join made there is one deeper,
 * and serves nothing (NESTING). */
static inline int lf_bound_depth(void)
{
    return lf__bound_depth;
}

static inline const struct timespec *lf__bound_inherit(const struct timespec *deadline,
                                                       struct timespec *buf)
{
    long long until = lf__bound_until; /* +1; 0: no join below has a deadline */
    if (until == 0 || (deadline != NULL && lf__ts_ns(deadline) < until - 1))
        return deadline;
    buf->tv_sec = (time_t)((until - 1) / 1000000000LL);
    buf->tv_nsec = (long)((until - 1) % 1000000000LL);
    return buf;
}

/* a->lock held: drop one reference (and the lock); the last one frees a. */
static inline void lf__bound_att_put(lf__bound_att *a)
{
    int last = --a->refs == 0;
    pthread_mutex_unlock(&a->lock);
    if (last) {
        pthread_mutex_destroy(&a->lock);
        free(a);
    }
}

/* The reactor stopped (lf_reactor_turn with no follower says so without a turn), or
 * was destroyed: nobody will read the connection any more. */
static inline int lf__bound_reactor_gone(lf_bound *b)
{
    int rc = lf_reactor_turn((lf_reactor *)b->lf__r, NULL, NULL);
    return rc == ECANCELED || rc == EINVAL;
}

/* Under the bound's lock: the reactor's wake may write its wake-up descriptor, a
 * cancellation point to libc that is no wait of ours, so cancellation is off. A
 * join at the nesting limit waits in the bound's own pool: woken as in bare mode. */
static inline void lf__bound_wake_reactor(lf_bound *b, lf_bound_ctx *c)
{
    int cs;
    if (c->lf__h != NULL) { /* started: its handler is told (ENOENT, ECANCELED: gone) */
        if (lf__bound_held(c))
            return; /* told when the last hand lets go (lf__bound_let_go_locked) */
        cs = lf__nocancel_begin();
        (void)lf_reactor_notify((lf_reactor *)b->lf__r, (lf_handler *)c->lf__h, LF_EV_NOTIFY);
        lf__nocancel_end(cs);
        return;
    }
    if (c->lf__deep) {
        lf__bound_wake_bare(b, c);
        return;
    }
    cs = lf__nocancel_begin();
    (void)lf_reactor_wake((lf_reactor *)b->lf__r, &c->lf__f);
    lf__nocancel_end(cs);
}

/* the receive state's one reader at a time (see lf__bound_lead): the handler's lock,
 * which its dispatch holds while it reads */
static inline void lf__bound_rx_lock(lf_bound *b)
{
    if (b->lf__att)
        pthread_mutex_lock(&((lf__bound_att *)b->lf__att)->lock);
}

static inline void lf__bound_rx_unlock(lf_bound *b)
{
    if (b->lf__att)
        pthread_mutex_unlock(&((lf__bound_att *)b->lf__att)->lock);
}

/* hybrid: the waiters park in the reactor's pool, shared with its other threads */
static inline int lf__bound_poolstats_reactor(lf_bound *b, struct lf_pool_stats *out)
{
    struct lf_reactor_stats rs;
    int rc = lf_reactor_stats((lf_reactor *)b->lf__r, &rs);
    *out = rs.pool;
    return rc;
}

/* A sender waiting for room (see lf__bound_room): a short wait for room or replies,
 * and the replies that are there read and handed out by the sender itself, as the
 * handler's dispatch would (under its lock), so they are read while every thread may
 * be sending. No reactor turn: a writer runs no handler (none nests in it, none
 * sees its cancel state, none queues on this bound from its stack meanwhile). */
static inline int lf__bound_room_hybrid(lf__bound_sending *s)
{
    lf_bound *b = s->b;
    struct pollfd pfd;
    pfd.fd = b->lf__fd;
    pfd.events = POLLOUT | POLLIN;
    pfd.revents = 0;
    if (poll(&pfd, 1, 5) <= 0 || (pfd.revents & POLLOUT) || !(pfd.revents & POLLIN))
        return 0;
    lf__bound_read_some(b);
    return 0;
}

/* Ask the bound's handler to write what is queued (lf__send held, cancellation off):
 * started calls' requests are left there with nobody of their own to write them.
 * LF_EV_NOTIFY (a notified LF_EV_WRITE would be dropped: not in our interest),
 * dispatched as any event of the connection; none if the reactor stopped or the
 * handler is gone (a failure, then, fails the queue: q_drain). */
static inline void lf__bound_kick_writer(lf_bound *b)
{
    lf__bound_att *a = (lf__bound_att *)b->lf__att;
    int cs = lf__nocancel_begin(); /* (it may write the reactor's wake-up descriptor) */
    (void)lf_reactor_notify((lf_reactor *)b->lf__r, &a->h, LF_EV_NOTIFY);
    lf__nocancel_end(cs);
}

/* LF_EV_NOTIFY, LF_EV_WRITE or LF_EV_TIMEOUT, in our dispatch (a->lock held): write
 * the queue unless a writer is at work, a bounded amount (the writer's rounds); on a
 * full socket wait for room with LF_EV_WRITE in our interest, not in a thread, and
 * with a timer for the earliest deadline of the requests not begun (the writer
 * takes those that passed out of the queue before it writes). Never waits: the
 * writer's own request is none, so lf__bound_room (whose reads take a->lock) is
 * never reached. */
static inline void lf__bound_write_some(lf__bound_att *a, lf_bound *b)
{
    lf__bound_sending s;
    lf__bound_out none;
    long long next = -1;
    lf__bound_sending_init(&s, b, NULL);
    s.handler = 1;
    memset((void *)&none, 0, sizeof none);
    lf__store(&none.state, LF__OUT_DONE, relaxed);
    pthread_mutex_lock(&b->lf__send);
    if (!b->lf__sending && b->lf__q_head != NULL) {
        b->lf__sending = 1;
        lf__store(&b->lf__orphaned, 0, relaxed);
        lf__bound_write_queue(&s, &none);
        b->lf__sending = 0;
    }
    if (s.full) {
        for (lf__bound_out *o = b->lf__q_head; o != NULL; o = o->next)
            if (o->off == 0 && o->deadline != NULL && (next < 0 || lf__ts_ns(o->deadline) < next))
                next = lf__ts_ns(o->deadline);
    }
    pthread_mutex_unlock(&b->lf__send);
    if (next >= 0) {
        long long left = next - lf__now_ns();
        (void)lf_reactor_timer_start(a->r, &a->tmr, &a->h, left > 0 ? left : 0, 0);
    }
    /* (from our own dispatch: no system call, applied as the handle is re-armed) */
    if (s.full != a->want_write &&
        lf_reactor_modify(a->r, &a->h, LF_EV_READ | (s.full ? LF_EV_WRITE : 0u)) == 0)
        a->want_write = s.full;
}

/* The connection is readable: read what is there and deliver every reply. One
 * thread at a time (the reactor's promise), so the receive state needs no lock.
 * LF_EV_NOTIFY (lf__bound_kick_writer) or LF_EV_WRITE (room): write what started
 * calls left queued. */
static inline int lf__bound_on_event(lf_handler *h, int fd, uint32_t events)
{
    lf__bound_att *a = (lf__bound_att *)(void *)h;
    lf_bound *b;
    int rc = LF_KEEP;
    /* CANCELLATION: off while we read and deliver (the hooks run here, read_body
     * under the bound's lock, all of it under a->lock); nothing here waits */
    int cs = lf__nocancel_begin();
    (void)fd;
    (void)events;
    pthread_mutex_lock(&a->lock);
    if ((b = a->b) == NULL)
        rc = LF_REMOVE; /* lf_bound_destroy is removing us */
    else if (events & (LF_EV_NOTIFY | LF_EV_WRITE | LF_EV_TIMEOUT))
        lf__bound_write_some(a, b);
    /* a bounded amount of work per dispatch: a connection that never stops sending
     * must not pin a reactor thread (LF_KEEP re-arms the handle one-shot, so what is
     * left brings the next dispatch at once, after everybody else's turn; LF_DRAINED,
     * on EAGAIN, leaves it armed edge-triggered, with no system call) */
    for (int reads = 0; b != NULL; reads++) {
        if (lf__bound_consume(b, (lf_bound_ctx *)lf__bound_self, 0) != 0) {
            rc = LF_REMOVE; /* failed: every waiter has its error */
            break;
        }
        if (reads == LF_BOUND_READS_PER_EVENT)
            break; /* LF_KEEP */
        switch (lf__bound_fill(b, (lf_bound_ctx *)lf__bound_self)) {
        case 1:
            continue;
        case 0:
            rc = LF_DRAINED; /* EAGAIN: wait for more, with no re-arm on epoll */
            break;
        default:
            rc = LF_REMOVE;
            break;
        }
        break;
    }
    if (rc == LF_REMOVE && b != NULL)
        lf__bound_q_drain(b); /* failed: what started calls left queued fails too */
    pthread_mutex_unlock(&a->lock);
    lf__nocancel_end(cs);
    return rc;
}

static inline void lf__bound_on_close(lf_handler *h)
{
    lf__bound_att *a = (lf__bound_att *)(void *)h;
    pthread_mutex_lock(&a->lock);
    a->closed = 1;
    lf__bound_att_put(a);
}

/* lf_bound_destroy: cut the handler off the bound, take it out of the reactor (unless
 * a failure or the reactor's destroy did), and drop the bound's reference. */
static inline void lf__bound_detach(lf_bound *b)
{
    lf__bound_att *a = (lf__bound_att *)b->lf__att;
    int closed;
    pthread_mutex_lock(&a->lock); /* waits for a dispatch that reads into b */
    a->b = NULL;
    closed = a->closed;
    pthread_mutex_unlock(&a->lock);
    if (!closed)
        (void)lf_reactor_remove(a->r, &a->h); /* ENOENT: a failure removed it */
    pthread_mutex_lock(&a->lock);
    lf__bound_att_put(a);
}

/* Contract: before any thread uses b; r is initialised, not LF_REACTOR_CONCURRENT and
 * not in a group. The fd stays the caller's (the reactor never closes it). */
static inline int lf_bound_attach(lf_bound *b, lf_reactor *r)
{
    lf__bound_att *a;
    int rc;
    if (!lf__bound_ok(b) || r == NULL)
        return EINVAL;
    /* ENOTSUP: no leader slot for the waiters; ECANCELED: stopped, as register says */
    if ((rc = lf_reactor_turn(r, NULL, NULL)) != 0)
        return rc == EINVAL || rc == ECANCELED ? rc : ENOTSUP;
    if (b->lf__att)
        return EBUSY;
    if ((a = (lf__bound_att *)calloc(1, sizeof *a)) == NULL)
        return ENOMEM;
    if ((rc = pthread_mutex_init(&a->lock, NULL)) != 0) {
        free(a);
        return rc;
    }
    a->b = b;
    a->r = r;
    a->refs = 2;
    lf_handler_init(&a->h, lf__bound_on_event, lf__bound_on_close);
    lf_timer_init(&a->tmr);
    if ((rc = lf_reactor_register(r, &a->h, b->lf__fd, LF_EV_READ | LF_EV_KEEPFD)) != 0) {
        pthread_mutex_destroy(&a->lock);
        free(a);
        return rc;
    }
    b->lf__r = r;
    b->lf__att = a;
    b->lf__wakeup = lf__bound_wake_reactor;
    b->lf__poolstats = lf__bound_poolstats_reactor;
    return 0;
}

/* Contract: the thread that owns c, any thread of the process (usually a handler of
 * r: h's own, or another's); hybrid only. The request is copied and queued, and
 * written at once if no other thread writes; nothing waits but for locks. No join
 * follows: h gets LF_EV_NOTIFY once the result is in, and lf_bound_collect takes it
 * (ASYNCHRONOUS CALLS). */
static inline int lf_bound_start(lf_bound *b, lf_bound_ctx *c, uint64_t id, const void *req,
                                 size_t len, const struct timespec *deadline, lf_handler *h)
{
    lf__bound_sending s;
    struct timespec inherited;
    const struct timespec *until;
    int rc, in_order, cs;

    if (!lf__bound_ok(b) || c == NULL || h == NULL || req == NULL || len == 0 ||
        !lf__deadline_ok(deadline))
        return EINVAL;
    if (b->lf__r == NULL)
        return ENOTSUP; /* bare: no reactor to tell h through */
    if ((in_order = (b->lf__hooks.flags & LF_BOUND_IN_ORDER) != 0))
        id = 0; /* c->id says its place once it is on the wire */
    if ((rc = lf__bound_expect(b, c, id, in_order, (void *)h)) != 0)
        return rc;
    /* c is ours until we let go (lf__starting): whatever finishes it meanwhile (a
     * cancel, a failure, a shutdown, even the reply) tells nobody, and no collect
     * takes it. The request is copied into c: req is the caller's again at once,
     * and the request, queued, goes out after us (lf__queued holds c until then). */
    until = lf__bound_inherit(deadline, &inherited); /* (NESTING: a handler's send) */
    if (len > c->lf__acap) {
        char *buf = (char *)realloc(c->lf__abuf, len);
        if (buf == NULL) {
            rc = ENOMEM;
        } else {
            c->lf__abuf = buf;
            c->lf__acap = len;
        }
    }
    if (rc == 0) {
        memcpy(c->lf__abuf, req, len);
        if (until != NULL) {
            c->lf__adl = *until;
            until = &c->lf__adl;
        }
        lf__bound_out_init(&c->lf__aout, c->lf__abuf, len, c, until);
        c->lf__aout.started = 1;
        lf__bound_sending_init(&s, b, NULL);
        cs = lf__nocancel_begin(); /* (a writer's writes are no cancellation points) */
        pthread_mutex_lock(&b->lf__send);
        rc = lf__bound_post_locked(&s, &c->lf__aout); /* queued, or written by us */
        pthread_mutex_unlock(&b->lf__send);
        lf__nocancel_end(cs);
    }
    pthread_mutex_lock(&b->lf__lock);
    if (rc == 0 && !c->lf__queued && c->lf__aout.rc != 0)
        rc = c->lf__aout.rc; /* written by us already, and not out whole */
    if (rc != 0) {
        /* nothing queued, or not out whole: the call never was; the error is its
         * one result */
        int ignored;
        c->lf__queued = 0;
        lf__bound_withdraw_locked(b, c, rc);
        (void)lf__bound_collect(b, c, &ignored);
    } else {
        c->lf__starting = 0;
        lf__bound_let_go_locked(b, c); /* in already (and out): told now */
    }
    pthread_mutex_unlock(&b->lf__lock);
    return rc;
}

/* CANCELLATION of a hybrid join, in lf_reactor_turn (the reactor's waits are
 * cancellation points; its own cleanup gives back what the turn held in the
 * reactor and its pool). The bound holds nothing during a turn (its handler runs
 * with cancellation off), so c is withdrawn, and the thread's current context is
 * the one of the join this one was nested in again (whose cleanup runs next, if the
 * thread was inside a handler that join dispatched). */
/* A hybrid join is over (returned or cancelled): the thread's nesting is the outer
 * join's again. */
static inline void lf__bound_unnest(const lf__bound_guard *g)
{
    lf__bound_self = g->outer;
    lf__bound_until = g->outer_until;
    lf__bound_depth--;
}

static inline void lf__bound_join_reactor_cancelled(void *arg)
{
    lf__bound_guard *g = (lf__bound_guard *)arg;
    lf__bound_abandon(g->b, g->c);
    lf__bound_unnest(g);
}

/* The turns of a hybrid join (its own function: the cleanup is pushed around it). */
static inline void lf__bound_turn_until(lf__bound_guard *g)
{
    lf_bound *b = g->b;
    lf_bound_ctx *c = g->c;
    const struct timespec *deadline = g->deadline;
    lf_reactor *r = (lf_reactor *)b->lf__r;
    int rc;

    for (;;) {
        pthread_mutex_lock(&b->lf__lock);
        lf__bound_mark(g);
        if (c->lf__state == LF__BC_IDLE) {
            pthread_mutex_unlock(&b->lf__lock);
            rc = EINVAL;
            break;
        }
        if (lf__bound_collect(b, c, &rc)) {
            pthread_mutex_unlock(&b->lf__lock);
            break;
        }
        pthread_mutex_unlock(&b->lf__lock);
        lf__bound_adopt(b, c->lf__out); /* our request is queued and nobody writes */

        /* our deadline, between turns too: a connection that keeps the turns coming
         * (a flood of frames for others) must not keep us past it */
        if (lf__bound_ms_until(deadline) == 0)
            rc = ETIMEDOUT;
        else
            rc = lf_reactor_turn(r, &c->lf__f, deadline); /* our reply, or someone's request */
        if (rc == ECANCELED || (rc == EINVAL && lf__bound_reactor_gone(b))) {
            /* lf_reactor_stop is final (or the reactor was destroyed), and the
             * reactor was this connection's only reader: the bound is finished, as
             * after lf_bound_shutdown (every waiter gets ECONNABORTED, expect and send
             * refuse with ECANCELED), so no request is sent that nobody would read the
             * reply to. c's own result may be in already. */
            lf__bound_fail(b, ECANCELED, c);
        } else if (rc == ETIMEDOUT) {
            pthread_mutex_lock(&b->lf__lock);
            lf__bound_withdraw_locked(b, c, rc);
            pthread_mutex_unlock(&b->lf__lock);
        } else if (rc != 0 && rc != EINTR) {
            /* the reactor cannot be turned (put in a group; c's follower in use by
             * another thread): give up the wait. Not ECANCELED: the request may be
             * out (lf_bound_call's is) */
            pthread_mutex_lock(&b->lf__lock);
            lf__bound_withdraw_locked(b, c, ECONNABORTED);
            pthread_mutex_unlock(&b->lf__lock);
        }
    }
    g->rc = rc;
}

/* CANCELLATION of a hybrid join at the nesting limit: as a bare join's (its waits
 * are the bound's own), and the thread's nesting is the outer join's again. */
static inline void lf__bound_join_deep_cancelled(void *arg)
{
    lf__bound_guard *g = (lf__bound_guard *)arg;
    lf__bound_join_cancelled(arg);
    lf__bound_unnest(g);
}

/* lf_bound_join in hybrid mode: turn the reactor until c's result is in; at the
 * nesting limit, wait as in bare mode, reading the connection (NESTING). */
static inline int lf__bound_join_reactor(lf_bound *b, lf_bound_ctx *c,
                                         const struct timespec *deadline)
{
    lf__bound_guard g;
    int deep = lf__bound_depth >= lf__load(&b->lf__nest_max, relaxed);
    g.b = b;
    g.c = c;
    g.deadline = deadline;
    g.outer = lf__bound_self; /* a join nested in an upcall */
    g.outer_until = lf__bound_until;
    g.deep = deep; /* set in c at the loop's first look (lf__bound_mark) */
    g.rc = 0;      /* deadline: the earliest below already (lf_bound_join) */
    lf__bound_self = c;
    lf__bound_until = g.deadline ? lf__ts_ns(g.deadline) + 1 : 0;
    lf__bound_depth++;
    if (deep) {
        LF__CLEANUP_PUSH(lf__bound_join_deep_cancelled, &g);
        lf__bound_join_bare(&g);
        LF__CLEANUP_POP(0);
    } else {
        LF__CLEANUP_PUSH(lf__bound_join_reactor_cancelled, &g);
        lf__bound_turn_until(&g);
        LF__CLEANUP_POP(0);
    }
    lf__bound_unnest(&g);
    return g.rc;
}

#else

/* Without lf_reactor.h no join is hybrid. */
static inline int lf_bound_depth(void)
{
    return 0;
}

static inline const struct timespec *lf__bound_inherit(const struct timespec *deadline,
                                                       struct timespec *buf)
{
    (void)buf;
    return deadline;
}

static inline int lf__bound_join_reactor(lf_bound *b, lf_bound_ctx *c,
                                         const struct timespec *deadline)
{
    (void)b;
    (void)c;
    (void)deadline;
    return EINVAL; /* unreachable: only lf_bound_attach sets lf__r */
}

static inline void lf__bound_detach(lf_bound *b)
{
    (void)b;
}

static inline void lf__bound_rx_lock(lf_bound *b)
{
    (void)b;
}

static inline void lf__bound_rx_unlock(lf_bound *b)
{
    (void)b;
}

static inline int lf__bound_room_hybrid(lf__bound_sending *s)
{
    (void)s;
    return 0; /* unreachable: only lf_bound_attach sets lf__r */
}

static inline void lf__bound_kick_writer(lf_bound *b)
{
    (void)b; /* unreachable: only lf_bound_start queues a started request */
}

static inline int lf__bound_reactor_gone(lf_bound *b)
{
    (void)b;
    return 0; /* unreachable: only lf_bound_attach sets lf__r */
}

#endif

#endif /* LF_BOUND_H_INCLUDED */

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
