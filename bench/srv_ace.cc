/* bench/srv_ace.cc - the ACE peer servers: one source, two reactors.
 *
 *   g++ -std=c++17 -O2 -DACE_REACTOR_KIND=1 -Ibench bench/srv_ace.cc -o srv_ace_tp -lACE -pthread
 *   g++ -std=c++17 -O2 -DACE_REACTOR_KIND=2 -Ibench bench/srv_ace.cc -o srv_ace_dp -lACE -pthread
 *   (`pkg-config --cflags --libs ACE` gives -lACE -ldl -lrt; -lACE alone links on Debian)
 *
 * ACE_REACTOR_KIND (required, no default)
 *   1  ACE_TP_Reactor: ACE's Leader/Followers reactor over select(). The leader holds
 *      the reactor token inside select(), picks ONE ready handle, suspends it (fd_set
 *      bits only, no system call), hands the token on and runs the upcall. After the
 *      upcall it takes the token back to resume the handle; if the new leader is asleep
 *      in select() that costs a write to the notify pipe to wake it (the token's
 *      sleep_hook). Bound by FD_SETSIZE: descriptors >= 1024 cannot be registered.
 *   2  ACE_Dev_Poll_Reactor: the same token-passing pool over epoll. The leader pulls
 *      ONE event per epoll_wait(); every handle is registered EPOLLONESHOT, so the
 *      kernel suspends it and the reactor resumes it after the upcall with
 *      epoll_ctl(MOD) under its repository mutex (no token, no notify).
 *   -t THREADS threads (default 2) each run reactor->run_reactor_event_loop().
 *
 * What one request costs in system calls (strace -c, one connection, -t 2, ACE 7.0.8):
 *   TP_Reactor   2 pselect6, recvfrom, sendto, ~14 futex, and one notify to wake the
 *                leader for the resume: write + read on the pipe, plus the poll and 5
 *                fcntl that ACE::send() with a timeout wraps round the write.
 *   Dev_Poll     epoll_wait (maxevents 1), epoll_ctl (the EPOLLONESHOT re-arm),
 *                recvfrom, sendto, ~5 futex.
 *   Neither allocates per request (alloc_count: 0; one allocation per connection).
 *
 * Both follow bench/wire.h: srv_listen() socket wrapped in an acceptor handler,
 * accept4 non-blocking, TCP_NODELAY, one Conn handler with an inline buffer per
 * connection, replies built in place and written back, partial and pipelined requests
 * handled, nothing allocated per request. Runs until SIGTERM (default action).
 *
 * Why the handlers are written the way they are:
 *   - handle_input returns 0 to stay registered and leaves resumption to the reactor
 *     (resume_handler() keeps its default, ACE_REACTOR_RESUMES_HANDLER). Suspension
 *     is what makes the upcall single-threaded per connection, so Conn needs no lock.
 *   - One recv() per upcall (a second one only when the first filled the buffer):
 *     both reactors are level-triggered, so anything left is reported again, and the
 *     extra recv() that would see EAGAIN is saved on every request.
 *   - A reply that does not fit the socket switches the handler from READ_MASK to
 *     WRITE_MASK (never both: a -1 from either upcall then removes the handler
 *     completely, with one handle_close).
 *   - Closing differs per reactor. TP_Reactor removes the handler and calls
 *     handle_close() under its token, which also serialises register_handler(), so
 *     handle_close() may close the descriptor and delete the handler (the classic
 *     idiom). Dev_Poll_Reactor calls handle_close() with its repository lock
 *     released and unbinds the handle only afterwards: closing there would let
 *     another thread accept the same descriptor number and register it onto the
 *     stale entry. So for KIND 2 Conn is reference counted and closes its descriptor
 *     in its destructor, which runs after the unbind.
 */
#if !defined(ACE_REACTOR_KIND) || (ACE_REACTOR_KIND != 1 && ACE_REACTOR_KIND != 2)
#error "define ACE_REACTOR_KIND: 1 (ACE_TP_Reactor) or 2 (ACE_Dev_Poll_Reactor), e.g. -DACE_REACTOR_KIND=1"
#endif

#include "ace/Reactor.h"
#include "ace/Event_Handler.h"
#include "ace/Thread_Manager.h"
#include "ace/OS_NS_sys_socket.h"
#include "ace/OS_NS_unistd.h"
#include "ace/OS_NS_string.h"
#include "ace/ACE.h"
#if ACE_REACTOR_KIND == 1
#include "ace/TP_Reactor.h"
#else
#include "ace/Dev_Poll_Reactor.h"
#endif

#if !defined(ACE_MT_SAFE) || ACE_MT_SAFE == 0
#error "this ACE is built without ACE_MT_SAFE: its reactor token is a no-op and a thread pool is unsafe"
#endif
#if ACE_REACTOR_KIND == 2 && !defined(ACE_HAS_EVENT_POLL) && !defined(ACE_HAS_DEV_POLL)
#error "this ACE has no ACE_Dev_Poll_Reactor (neither ACE_HAS_EVENT_POLL nor ACE_HAS_DEV_POLL in ace/config.h): rebuild ACE with epoll, or use -DACE_REACTOR_KIND=1"
#endif

#include <sys/socket.h>

#include "srv_common.h"
#include "wire.h"

/* Per-connection buffer: 64 requests. Replies overwrite their requests in place. */
#define SRV_ACE_BUF (64 * WIRE_SIZE)
/* Connections taken per acceptor upcall before the token goes round again. */
#define SRV_ACE_ACCEPT_BATCH 64

#if ACE_REACTOR_KIND == 1
#define SRV_ACE_NAME "ace-tp"
#else
#define SRV_ACE_NAME "ace-devpoll"
#endif

class Conn : public ACE_Event_Handler {
public:
    Conn(ACE_Reactor *r, ACE_HANDLE h)
        : ACE_Event_Handler(r), h_(h), len_(0), out_(0), out_end_(0)
    {
#if ACE_REACTOR_KIND == 2
        this->reference_counting_policy().value(
            ACE_Event_Handler::Reference_Counting_Policy::ENABLED);
#endif
    }

    ACE_HANDLE get_handle() const override { return h_; }

    /* Upcall for READ_MASK; the reactor has suspended this handle, so no other
     * thread is in this Conn. 0: stay registered, -1: remove (peer closed, error). */
    int handle_input(ACE_HANDLE) override
    {
        for (;;) {
            size_t room = sizeof buf_ - len_;
            ssize_t n = ACE_OS::recv(h_, reinterpret_cast<char *>(buf_) + len_, room);
            if (n == 0)
                return -1;
            if (n < 0) {
                if (errno == EINTR)
                    continue;
                /* EAGAIN: TP_Reactor may dispatch a ready bit left over from an
                 * earlier select(); nothing to do. */
                return errno == EWOULDBLOCK || errno == EAGAIN ? 0 : -1;
            }
            len_ += (size_t)n;
            size_t whole = len_ - len_ % WIRE_SIZE;
            for (size_t i = 0; i < whole; i += WIRE_SIZE)
                wire_serve(buf_ + i);
            out_ = 0;
            out_end_ = whole;
            int r = flush();
            if (r < 0)
                return -1;
            if (r > 0) {
                /* The peer is not reading: stop reading until the replies are out. */
                return this->reactor()->mask_ops(this, ACE_Event_Handler::WRITE_MASK,
                                                 ACE_Reactor::SET_MASK) == -1 ? -1 : 0;
            }
            if ((size_t)n < room)
                return 0;
        }
    }

    /* Upcall for WRITE_MASK (only while replies are pending). */
    int handle_output(ACE_HANDLE) override
    {
        int r = flush();
        if (r < 0)
            return -1;
        if (r > 0)
            return 0;
        return this->reactor()->mask_ops(this, ACE_Event_Handler::READ_MASK,
                                         ACE_Reactor::SET_MASK) == -1 ? -1 : 0;
    }

    /* Called once, when the only mask this handler has is removed. */
    int handle_close(ACE_HANDLE, ACE_Reactor_Mask) override
    {
#if ACE_REACTOR_KIND == 1
        delete this; /* under the TP_Reactor token: see the top of the file */
#endif
        /* KIND 2: the reactor's unbind and its upcall guard drop the references;
         * the last one deletes, and the destructor closes. */
        return 0;
    }

    ~Conn() override
    {
        if (h_ != ACE_INVALID_HANDLE)
            ACE_OS::closesocket(h_);
    }

private:
    /* Write buf_[out_, out_end_). 0: all written (the partial request left over is
     * moved to the front), 1: the socket is full, -1: error. */
    int flush()
    {
        while (out_ < out_end_) {
            ssize_t n = ACE_OS::send(h_, reinterpret_cast<char *>(buf_) + out_,
                                     out_end_ - out_, MSG_NOSIGNAL);
            if (n < 0) {
                if (errno == EINTR)
                    continue;
                return errno == EWOULDBLOCK || errno == EAGAIN ? 1 : -1;
            }
            out_ += (size_t)n;
        }
        size_t tail = len_ - out_end_;
        if (tail != 0 && out_end_ != 0)
            ACE_OS::memmove(buf_, buf_ + out_end_, tail);
        len_ = tail;
        out_ = out_end_ = 0;
        return 0;
    }

    ACE_HANDLE h_;
    size_t len_;     /* bytes in buf_: pending replies, then at most one partial request */
    size_t out_;     /* next reply byte to write */
    size_t out_end_; /* end of the replies (a multiple of WIRE_SIZE) */
    alignas(64) unsigned char buf_[SRV_ACE_BUF];
};

/* The listening socket from srv_listen(), as an event handler. Never removed. */
class Acceptor : public ACE_Event_Handler {
public:
    Acceptor(ACE_Reactor *r, ACE_HANDLE h) : ACE_Event_Handler(r), h_(h), warned_(false) {}

    ACE_HANDLE get_handle() const override { return h_; }

    int handle_input(ACE_HANDLE) override
    {
        for (int i = 0; i < SRV_ACE_ACCEPT_BATCH; i++) {
            int fd = accept4(h_, 0, 0, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (fd < 0) {
                if (errno == EINTR || errno == ECONNABORTED)
                    continue;
                if (errno != EAGAIN && errno != EWOULDBLOCK)
                    warn("accept4");
                return 0;
            }
            srv_nodelay(fd);
            Conn *c = new Conn(this->reactor(), fd);
            if (this->reactor()->register_handler(c, ACE_Event_Handler::READ_MASK) == -1) {
                warn("register_handler (TP_Reactor: descriptor >= FD_SETSIZE?)");
#if ACE_REACTOR_KIND == 1
                delete c;
#else
                c->remove_reference();
#endif
                continue;
            }
#if ACE_REACTOR_KIND == 2
            /* The reactor holds its own reference now; it may already have served
             * and dropped this connection on another thread, which is fine. */
            c->remove_reference();
#endif
        }
        return 0;
    }

private:
    void warn(const char *what)
    {
        if (!warned_) {
            warned_ = true; /* only this upcall touches it: the handle is suspended */
            fprintf(stderr, "%s: %s: %s\n", SRV_ACE_NAME, what, strerror(errno));
        }
    }

    ACE_HANDLE h_;
    bool warned_;
};

static ACE_THR_FUNC_RETURN srv_ace_loop(void *arg)
{
    ACE_Reactor *reactor = static_cast<ACE_Reactor *>(arg);
    /* Both reactors ignore owner(): any thread may run the loop. It returns only on
     * an error the reactor could not restart; report it, the thread is lost. */
    if (reactor->run_reactor_event_loop() == -1)
        fprintf(stderr, "%s: run_reactor_event_loop: %s\n", SRV_ACE_NAME, strerror(errno));
    return 0;
}

int main(int argc, char **argv)
{
    struct srv_args a = srv_parse(argc, argv, 2);

    /* Before the reactor: Dev_Poll_Reactor sizes its handle table from the limit. */
    srv_raise_nofile();

    /* restart = true: without it a select()/epoll_wait() interrupted by EINTR (a
     * SIGSTOP/SIGCONT from a debugger or profiler is enough, no handler needed) ends
     * run_reactor_event_loop() and the pool silently loses that thread (seen with
     * Dev_Poll). mask_signals = false: we register no signal handlers with ACE, so
     * the sigprocmask() pair TP_Reactor otherwise wraps round every ready-set scan
     * is pure cost. Token queue: the default FIFO (with 2 threads there is at most
     * one waiter, so FIFO and LIFO are the same). */
#if ACE_REACTOR_KIND == 1
    ACE_TP_Reactor *impl = new ACE_TP_Reactor(ACE_TP_Reactor::DEFAULT_SIZE, true, 0, 0, false);
#else
    ACE_Dev_Poll_Reactor *impl = new ACE_Dev_Poll_Reactor(ACE::max_handles(), true, 0, 0, 0, 0, 0);
#endif
    ACE_Reactor reactor(impl, true);

    int lfd = srv_listen(&a, 1);
    Acceptor acceptor(&reactor, lfd);
    if (reactor.register_handler(&acceptor, ACE_Event_Handler::ACCEPT_MASK) == -1)
        srv_die("register_handler(listen)");

    if (ACE_Thread_Manager::instance()->spawn_n((size_t)a.threads, srv_ace_loop, &reactor) == -1)
        srv_die("spawn_n");
    ACE_Thread_Manager::instance()->wait();
    return 0;
}
