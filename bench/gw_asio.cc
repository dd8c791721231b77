/* bench/gw_asio.cc - the boost.asio gateway: the same clients and the same memcached as
 * bench/gw_lf.c, written the way asio's examples and its users write it.
 *
 *   gw_asio [-p PORT] [-t THREADS] [-m HOST:PORT] [-d DEADLINE_MS] [-i IDLE_S]
 *           [-w WSTALL_MS]            (bench/gw_proto.h: protocol, options)
 *
 * HOW IT IS WRITTEN, AND WHY THAT IS HOW asio'S USERS WRITE IT
 *   - One io_context, run() from THREADS threads (default 2), as bench/srv_asio.cc.
 *     The listening socket comes from srv_listen() and is handed to a tcp::acceptor;
 *     each accepted socket gets a strand of its own (async_accept(make_strand(ioc)),
 *     the Beast examples' idiom), so a session's handlers (its reads, writes, timers
 *     and the replies posted to it) never run at once, with no lock of its own.
 *   - A session: async_read_some into its input buffer, every whole request parsed
 *     and sent to memcached at once (pipelining), the replies written in request
 *     order (a FIFO of calls; the answered ones at its head are appended to the
 *     output and written with one async_write at a time, as the chat example's
 *     write queue does). Past GW_BACKLOG bytes of output it stops issuing reads
 *     until its writes drain; a steady_timer drops it when a write does not complete
 *     for -w ms. The idle timeout is the timeout example's: expires_after() before
 *     each read, and a check_deadline actor that closes the socket once the expiry
 *     has passed.
 *   - memcached: ONE connection shared by the whole io_context, requests pipelined
 *     with opaque ids; a std::mutex guards its write queue, the id -> call map
 *     (std::unordered_map of shared_ptr) and every operation started on its socket
 *     (asio sockets are not safe for concurrent use); queued requests go out in
 *     one async_write (a gather) while none is in progress. One async_read_some
 *     chain reads the replies; each is posted to its session's strand.
 *   - Each call has a steady_timer (the session's strand) for its deadline: the
 *     first of the reply and the timer wins (a flag on the call), the loser is
 *     dropped; a timed-out call leaves the map, so its late reply is skipped.
 *   - memcached fails: every call in the map gets ERR backend, the socket is closed,
 *     a steady_timer reconnects with a backoff of 10, 20, 40 .. 500 ms, and requests
 *     get ERR backend at once meanwhile.
 *   - SIGTERM/SIGINT with asio::signal_set: close the acceptor, take no new requests,
 *     let the calls in flight finish (bounded by the deadline + 200 ms), stop.
 *
 * Exit on SIGTERM: one line on stdout, exit 0:
 *   stats requests= errors= timeouts= backend= proto= reconnects= clients=
 *         idle_closed= stall_dropped=
 *
 * Build: g++ -std=c++17 -O2 -Ibench bench/gw_asio.cc -o gw_asio -pthread
 * (header-only asio, Boost >= 1.70 for make_strand and async_accept(executor)).
 */
#include <boost/asio.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gw_proto.h"

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;
using std::chrono::milliseconds;

static gw_args args;

static struct {
    std::atomic<unsigned long long> requests{0}, timeouts{0}, backend{0}, proto{0},
        reconnects{0}, clients{0}, idle_closed{0}, stall_dropped{0};
    std::atomic<long> pending{0}; /* calls whose reply is not in the output yet */
} st;

static std::atomic<bool> draining{false};

class session;

/* One client request, from its parse until its reply is in the session's output. */
struct call {
    call(std::shared_ptr<session> s_, const asio::any_io_executor &ex)
        : s(std::move(s_)), timer(ex) {}
    std::shared_ptr<session> s;
    uint32_t opaque = 0;
    asio::steady_timer timer; /* the deadline, on the session's strand */
    bool done = false;        /* on the session's strand */
    std::string reply;
};

/* ------------------------------------------------------------------ memcached */

class backend {
public:
    backend(asio::io_context &ioc, tcp::endpoint ep) : ioc_(ioc), ep_(ep), sock_(ioc), retry_(ioc) {}

    void start()
    {
        std::lock_guard<std::mutex> g(mu_);
        connect_locked();
    }

    /* From a session's strand: send k's request. false: memcached is down. */
    bool submit(const std::shared_ptr<call> &k, const gw_req &r)
    {
        std::vector<unsigned char> q(r.op == GW_GET ? GW_MC_HDR + r.klen
                                                    : GW_MC_HDR + 8 + r.klen + r.vlen);
        std::lock_guard<std::mutex> g(mu_);
        if (!up_)
            return false;
        k->opaque = next_++;
        if (r.op == GW_GET)
            gw_mc_get(q.data(), k->opaque, r.key, r.klen);
        else
            gw_mc_set(q.data(), k->opaque, r.key, r.klen, r.val, r.vlen);
        map_.emplace(k->opaque, k);
        queue_.push_back(std::move(q));
        if (!writing_)
            write_locked();
        return true;
    }

    /* k's deadline passed: its reply, if it comes, is nobody's. */
    void forget(uint32_t opaque)
    {
        std::lock_guard<std::mutex> g(mu_);
        map_.erase(opaque);
    }

    void stop()
    {
        std::lock_guard<std::mutex> g(mu_);
        stopped_ = true;
        up_ = false;
        error_code ec;
        sock_.close(ec);
        retry_.cancel();
    }

private:
    static void deliver(const std::shared_ptr<call> &k, std::string reply);

    void connect_locked()
    {
        if (stopped_)
            return;
        sock_ = tcp::socket(ioc_);
        unsigned g = ++gen_;
        sock_.async_connect(ep_, [this, g](const error_code &ec) { on_connect(ec, g); });
    }

    void on_connect(const error_code &ec, unsigned g)
    {
        std::lock_guard<std::mutex> lk(mu_);
        if (g != gen_ || stopped_)
            return;
        if (ec) {
            error_code ignored;
            sock_.close(ignored);
            retry_locked();
            return;
        }
        sock_.set_option(tcp::no_delay(true));
        up_ = true;
        backoff_ = GW_BACKOFF_MIN_MS;
        st.reconnects++;
        read_locked(std::make_shared<rstate>());
    }

    void retry_locked()
    {
        retry_.expires_after(milliseconds(backoff_));
        backoff_ = backoff_ * 2 > GW_BACKOFF_MAX_MS ? GW_BACKOFF_MAX_MS : backoff_ * 2;
        retry_.async_wait([this](const error_code &ec) {
            if (ec)
                return;
            std::lock_guard<std::mutex> g(mu_);
            connect_locked();
        });
    }

    /* Everything queued goes out in one async_write. */
    void write_locked()
    {
        writing_ = true;
        sending_.swap(queue_);
        queue_.clear();
        bufs_.clear();
        for (auto &q : sending_)
            bufs_.push_back(asio::buffer(q));
        unsigned g = gen_;
        asio::async_write(sock_, bufs_, [this, g](const error_code &ec, std::size_t) {
            std::unique_lock<std::mutex> lk(mu_);
            if (g != gen_)
                return;
            writing_ = false;
            sending_.clear();
            if (ec) {
                fail_locked(lk);
                return;
            }
            if (!queue_.empty())
                write_locked();
        });
    }

    /* What one connection's read chain has read: its own, so a chain that ends while
     * the next connection's starts never shares it. */
    struct rstate {
        gw_buf in = {nullptr, 0, 0, 0};
        size_t need = 0;
        ~rstate() { gw_buf_free(&in); }
    };

    void read_locked(const std::shared_ptr<rstate> &rs)
    {
        gw_buf &in_ = rs->in;
        size_t have = in_.len - in_.off;
        (void)gw_buf_reserve(&in_, rs->need > have + 16384 ? rs->need - have : 16384);
        unsigned g = gen_;
        sock_.async_read_some(asio::buffer(in_.p + in_.len, in_.cap - in_.len),
                              [this, g, rs](const error_code &ec, std::size_t n) {
                                  on_read(ec, n, g, rs);
                              });
    }

    /* One read at a time per connection: rs is this chain's alone; the map and the
     * socket are locked. */
    void on_read(const error_code &ec, std::size_t n, unsigned g, const std::shared_ptr<rstate> &rs)
    {
        std::unique_lock<std::mutex> lk(mu_);
        if (g != gen_)
            return;
        if (ec) {
            fail_locked(lk);
            return;
        }
        lk.unlock();
        gw_buf &in_ = rs->in;
        in_.len += n;
        gw_mc_reply r;
        int k;
        while ((k = gw_mc_frame(in_.p + in_.off, in_.len - in_.off, &r)) == 1) {
            std::shared_ptr<call> c;
            {
                std::lock_guard<std::mutex> g2(mu_);
                auto it = map_.find(r.opaque);
                if (it != map_.end()) {
                    c = std::move(it->second);
                    map_.erase(it);
                }
            }
            if (c) {
                std::string reply;
                if (r.status == 0 && r.op == 0x00) {
                    char head[GW_VALUE_HEAD_MAX];
                    size_t hl = gw_value_head(head, r.vlen);
                    reply.reserve(hl + r.vlen + 2);
                    reply.append(head, hl);
                    reply.append(reinterpret_cast<const char *>(r.val), r.vlen);
                    reply.append("\r\n", 2);
                } else if (r.status == 0) {
                    reply = GW_STORED;
                } else if (r.status == 0x0001 && r.op == 0x00) {
                    reply = GW_MISS;
                } else {
                    st.backend++;
                    reply = GW_ERR_BACKEND;
                }
                deliver(c, std::move(reply));
            }
            gw_buf_consume(&in_, r.size);
        }
        rs->need = in_.len - in_.off >= GW_MC_HDR ? GW_MC_HDR + gw__get32(in_.p + in_.off + 8) : 0;
        lk.lock();
        if (g != gen_)
            return;
        if (k < 0) {
            fail_locked(lk);
            return;
        }
        read_locked(rs);
    }

    /* The connection is gone: every call it owes gets ERR backend; reconnect later. */
    void fail_locked(std::unique_lock<std::mutex> &lk)
    {
        if (!up_)
            return;
        up_ = false;
        gen_++; /* completions of this socket are ignored from here on */
        error_code ec;
        sock_.close(ec);
        writing_ = false;
        queue_.clear();
        sending_.clear();
        std::unordered_map<uint32_t, std::shared_ptr<call>> owed;
        owed.swap(map_);
        retry_locked();
        lk.unlock();
        for (auto &e : owed) {
            st.backend++;
            deliver(e.second, GW_ERR_BACKEND);
        }
    }

    asio::io_context &ioc_;
    tcp::endpoint ep_;
    std::mutex mu_;
    tcp::socket sock_;
    asio::steady_timer retry_;
    bool up_ = false, writing_ = false, stopped_ = false;
    unsigned gen_ = 0;
    uint32_t next_ = 1;
    int backoff_ = GW_BACKOFF_MIN_MS;
    std::unordered_map<uint32_t, std::shared_ptr<call>> map_;
    std::vector<std::vector<unsigned char>> queue_, sending_;
    std::vector<asio::const_buffer> bufs_;
};

static backend *be;

/* ------------------------------------------------------------------ clients */

class session : public std::enable_shared_from_this<session> {
public:
    explicit session(tcp::socket s)
        : sock_(std::move(s)), idle_(sock_.get_executor()), stall_(sock_.get_executor()) {}

    ~session() { gw_buf_free(&in_); }

    void start()
    {
        idle_.expires_after(milliseconds(args.idle_ms));
        check_idle();
        read();
    }

    /* On this session's strand: k is answered (by memcached, or it failed). */
    void complete(const std::shared_ptr<call> &k, std::string reply)
    {
        if (k->done)
            return; /* the deadline came first */
        k->done = true;
        k->timer.cancel();
        k->reply = std::move(reply);
        progress();
    }

    asio::any_io_executor executor() { return sock_.get_executor(); }

private:
    std::size_t queued() const { return out_.size() + (writing_ ? wbuf_.size() : 0); }

    /* Room for more requests: the output is below the backlog, and fewer than
     * GW_PIPELINE_MAX requests are in the gateway. */
    bool has_room() const
    {
        return !closed_ && !doomed_ && !draining && calls_.size() < GW_PIPELINE_MAX &&
               queued() < GW_BACKLOG;
    }

    /* The timeout example's actor: the expiry moves on every read; close once passed. */
    void check_idle()
    {
        auto self = shared_from_this();
        idle_.async_wait([self](const error_code &) {
            if (self->closed_)
                return;
            if (self->idle_.expiry() <= asio::steady_timer::clock_type::now()) {
                st.idle_closed++;
                self->close();
                return;
            }
            self->check_idle();
        });
    }

    void read()
    {
        if (reading_ || eof_ || !has_room())
            return;
        size_t have = in_.len - in_.off, want = 1024;
        if (need_ > have && need_ - have > want)
            want = need_ - have;
        if (gw_buf_reserve(&in_, want) != 0) {
            close();
            return;
        }
        reading_ = true;
        auto self = shared_from_this();
        sock_.async_read_some(asio::buffer(in_.p + in_.len, in_.cap - in_.len),
                              [self](const error_code &ec, std::size_t n) { self->on_read(ec, n); });
    }

    void on_read(const error_code &ec, std::size_t n)
    {
        reading_ = false;
        if (closed_)
            return;
        if (ec == asio::error::eof) {
            eof_ = true;
            progress(); /* closes once nothing is owed */
            return;
        }
        if (ec) {
            close();
            return;
        }
        in_.len += n;
        idle_.expires_after(milliseconds(args.idle_ms));
        progress();
    }

    /* After anything that can move the session on (a read, a reply, a deadline, a
     * write): start what the client sent, write what is answered, read while there
     * is room. */
    void progress()
    {
        for (;;) {
            take();
            size_t before = calls_.size();
            flush();
            if (closed_ || calls_.size() == before)
                break;
        }
        read();
    }

    /* Start the whole requests in in_ while there is room for them. */
    void take()
    {
        while (has_room()) {
            gw_req r;
            int k = gw_parse(in_.p + in_.off, in_.len - in_.off, &r, &need_);
            if (k == 0)
                break;
            if (k < 0) {
                auto e = std::make_shared<call>(nullptr, executor());
                e->done = true;
                e->reply = GW_ERR_PROTO;
                calls_.push_back(e);
                st.pending++;
                st.proto++;
                st.requests++;
                doomed_ = true;
                break;
            }
            start_call(r);
            gw_buf_consume(&in_, r.size);
            need_ = 0;
        }
    }

    void start_call(const gw_req &r)
    {
        auto k = std::make_shared<call>(shared_from_this(), executor());
        calls_.push_back(k);
        st.requests++;
        st.pending++;
        if (!be->submit(k, r)) {
            st.backend++;
            k->done = true;
            k->reply = GW_ERR_BACKEND;
            return;
        }
        k->timer.expires_after(milliseconds(args.deadline_ms));
        k->timer.async_wait([k](const error_code &ec) {
            if (ec || k->done)
                return;
            k->done = true;
            be->forget(k->opaque);
            st.timeouts++;
            k->reply = GW_ERR_TIMEOUT;
            k->s->progress();
        });
    }

    /* The answered calls at the head of the FIFO go to the output, in order. */
    void flush()
    {
        if (closed_)
            return;
        while (!calls_.empty() && calls_.front()->done) {
            out_ += calls_.front()->reply;
            calls_.pop_front();
            st.pending--;
        }
        if (!writing_ && !out_.empty()) {
            writing_ = true;
            wbuf_.swap(out_);
            out_.clear();
            auto self = shared_from_this();
            asio::async_write(sock_, asio::buffer(wbuf_),
                              [self](const error_code &ec, std::size_t) { self->on_write(ec); });
            if (!stall_armed_)
                arm_stall();
        }
        if (calls_.empty() && !writing_ && (doomed_ || eof_)) {
            error_code ignored; /* all of it is out: an orderly close */
            sock_.shutdown(tcp::socket::shutdown_send, ignored);
            close();
        }
    }

    void on_write(const error_code &ec)
    {
        writing_ = false;
        wbuf_.clear();
        if (closed_)
            return;
        if (ec) {
            close();
            return;
        }
        if (out_.empty()) {
            stall_armed_ = false;
            stall_.cancel();
        } else {
            arm_stall(); /* progress: the client reads */
        }
        progress(); /* the backlog may have room again */
    }

    void arm_stall()
    {
        stall_armed_ = true;
        stall_.expires_after(milliseconds(args.wstall_ms));
        auto self = shared_from_this();
        stall_.async_wait([self](const error_code &ec) {
            if (ec)
                return;
            self->stall_armed_ = false;
            if (self->closed_ || !self->writing_)
                return;
            st.stall_dropped++;
            self->close();
        });
    }

    void close()
    {
        if (closed_)
            return;
        closed_ = true;
        error_code ignored;
        sock_.close(ignored);
        idle_.cancel();
        stall_.cancel();
        for (auto &k : calls_) {
            if (!k->done) {
                k->done = true;
                be->forget(k->opaque);
                k->timer.cancel();
            }
            st.pending--;
        }
        calls_.clear();
    }

    tcp::socket sock_;
    asio::steady_timer idle_, stall_;
    gw_buf in_ = {nullptr, 0, 0, 0};
    size_t need_ = 0;
    std::deque<std::shared_ptr<call>> calls_;
    std::string out_, wbuf_;
    bool reading_ = false, writing_ = false, eof_ = false, doomed_ = false, closed_ = false,
         stall_armed_ = false;
};

void backend::deliver(const std::shared_ptr<call> &k, std::string reply)
{
    std::shared_ptr<session> s = k->s;
    if (!s)
        return;
    asio::post(s->executor(), [s, k, reply = std::move(reply)]() mutable {
        s->complete(k, std::move(reply));
    });
}

/* ------------------------------------------------------------------ main */

static void accept_loop(asio::io_context &ioc, tcp::acceptor &acc)
{
    acc.async_accept(asio::make_strand(ioc), [&ioc, &acc](const error_code &ec, tcp::socket s) {
        if (ec == asio::error::operation_aborted || !acc.is_open())
            return;
        if (!ec) {
            s.set_option(tcp::no_delay(true));
            st.clients++;
            std::make_shared<session>(std::move(s))->start();
        }
        accept_loop(ioc, acc);
    });
}

int main(int argc, char **argv)
{
    args = gw_parse_args(argc, argv, 2);
    srv_raise_nofile();
    signal(SIGPIPE, SIG_IGN);

    asio::io_context ioc(args.threads);
    boost::system::error_code ec;
    auto mc = asio::ip::make_address_v4(args.mc_host, ec);
    if (ec) {
        fprintf(stderr, "gw_asio: bad memcached address %s\n", args.mc_host);
        return 2;
    }
    backend b(ioc, tcp::endpoint(mc, static_cast<unsigned short>(args.mc_port)));
    be = &b;
    b.start();

    srv_args sa;
    sa.port = args.port;
    sa.threads = args.threads;
    sa.flags = args.flags;
    tcp::acceptor acc(ioc);
    acc.assign(tcp::v4(), srv_listen(&sa, 0)); /* prints "port N" */
    accept_loop(ioc, acc);

    asio::signal_set signals(ioc, SIGTERM, SIGINT);
    asio::steady_timer drain(ioc);
    std::chrono::steady_clock::time_point stop_at;
    std::function<void()> check_drain = [&]() {
        drain.expires_after(milliseconds(10));
        drain.async_wait([&](const error_code &e) {
            if (e)
                return;
            if (st.pending.load() > 0 && std::chrono::steady_clock::now() < stop_at) {
                check_drain();
                return;
            }
            b.stop();
            ioc.stop();
        });
    };
    signals.async_wait([&](const error_code &e, int) {
        if (e)
            return;
        draining = true;
        error_code ignored;
        acc.close(ignored); /* no more accepts */
        stop_at = std::chrono::steady_clock::now() + milliseconds(args.deadline_ms + 200);
        check_drain();
    });

    std::vector<std::thread> pool;
    for (int i = 1; i < args.threads; i++)
        pool.emplace_back([&ioc] { ioc.run(); });
    ioc.run();
    for (auto &t : pool)
        t.join();

    unsigned long long t = st.timeouts, bk = st.backend, p = st.proto;
    printf("stats requests=%llu errors=%llu timeouts=%llu backend=%llu proto=%llu "
           "reconnects=%llu clients=%llu idle_closed=%llu stall_dropped=%llu\n",
           st.requests.load(), t + bk + p, t, bk, p, st.reconnects.load(), st.clients.load(),
           st.idle_closed.load(), st.stall_dropped.load());
    fflush(stdout);
    return 0;
}
