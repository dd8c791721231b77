/* bench/srv_asio.cc - the boost.asio peer: one io_context, run() from -t threads.
 *
 * The usual asio shape, written the way an asio user would for a fair comparison:
 *   - the listening socket comes from srv_listen() (same address, backlog and ready
 *     line as every other server) and is handed to a tcp::acceptor with assign();
 *   - an async_accept loop; TCP_NODELAY on every accepted socket;
 *   - one session per connection, kept alive by the shared_ptr its pending completion
 *     handler holds; the last handler to drop it closes the socket;
 *   - per session one chain of operations: async_read_some into the session's buffer,
 *     wire_serve() every whole 64-byte request in place, one async_write of all the
 *     replies, then read again. One chain means no two handlers of a session ever run
 *     at once, so no strand is needed even with many run() threads.
 *
 * No allocation per request: the buffer belongs to the session, and each completion
 * handler captures only the session's shared_ptr (and a size), so asio's operation
 * objects are small and come from its per-thread recycled handler memory. asio frees
 * an operation's memory before it calls the handler, and that handler starts the
 * chain's next operation on the same thread, so in steady state every operation
 * reuses the block the previous one freed. (A per-session handler allocator, asio's
 * "allocation" example, measured the same zero, so it is left out.)
 *
 * Build: g++ -std=c++17 -O2 -Wall -Wextra -Ibench bench/srv_asio.cc -o srv_asio -pthread
 * (header-only asio; no -lboost_system since Boost 1.69).
 */
#include <boost/asio.hpp>

#include <cstddef>
#include <cstring>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "srv_common.h"
#include "wire.h"

namespace asio = boost::asio;
using asio::ip::tcp;

class session : public std::enable_shared_from_this<session> {
public:
    explicit session(tcp::socket s) : sock_(std::move(s)) {}

    void start() { read(); }

private:
    /* 64 requests per read: a pipelining client is served in batches, one write each. */
    enum { buf_size = 64 * WIRE_SIZE };

    void read()
    {
        auto self = shared_from_this();
        sock_.async_read_some(asio::buffer(buf_ + have_, buf_size - have_),
                              [self](const boost::system::error_code &ec, std::size_t n) {
                                  if (!ec)
                                      self->on_read(n);
                                  /* else eof or error: dropping self closes the socket */
                              });
    }

    void on_read(std::size_t n)
    {
        have_ += n;
        std::size_t whole = have_ - have_ % WIRE_SIZE;
        if (whole == 0) {
            read(); /* only part of a request so far */
            return;
        }
        for (std::size_t off = 0; off < whole; off += WIRE_SIZE)
            wire_serve(buf_ + off);
        auto self = shared_from_this();
        asio::async_write(sock_, asio::buffer(buf_, whole),
                          [self, whole](const boost::system::error_code &ec, std::size_t) {
                              if (!ec)
                                  self->on_write(whole);
                          });
    }

    void on_write(std::size_t whole)
    {
        /* Keep the start of a request that arrived split behind the whole ones. */
        have_ -= whole;
        if (have_ != 0)
            std::memmove(buf_, buf_ + whole, have_);
        read();
    }

    tcp::socket sock_;
    std::size_t have_ = 0; /* bytes in buf_, the unserved tail of a request included */
    unsigned char buf_[buf_size];
};

static void accept_loop(tcp::acceptor &acc)
{
    acc.async_accept([&acc](const boost::system::error_code &ec, tcp::socket s) {
        if (!ec) {
            srv_nodelay(s.native_handle());
            std::make_shared<session>(std::move(s))->start();
        } else if (ec == asio::error::operation_aborted) {
            return;
        }
        /* else (ECONNABORTED, EMFILE, ...) keep accepting; a server out of descriptors
         * spins here until one is closed */
        accept_loop(acc);
    });
}

int main(int argc, char **argv)
{
    struct srv_args a = srv_parse(argc, argv, 2);
    srv_raise_nofile();

    asio::io_context ioc(a.threads);
    tcp::acceptor acc(ioc);
    acc.assign(tcp::v4(), srv_listen(&a, 0));
    accept_loop(acc);

    std::vector<std::thread> pool;
    pool.reserve(a.threads - 1);
    for (int i = 1; i < a.threads; i++)
        pool.emplace_back([&ioc] { ioc.run(); });
    ioc.run();
    for (auto &t : pool)
        t.join();
    return 0;
}
