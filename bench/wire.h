/* bench/wire.h - the benchmark's 64-byte request/reply and the server contract.
 *
 * Every server in bench/ (lf, the peers, the baselines) speaks this and nothing else,
 * so the rows of the table differ only in how the server is threaded.
 *
 * MESSAGE (64 bytes, host byte order: loopback only)
 *   bytes  0..7   id      the client's sequence number on this connection
 *          8..11  conn    the client's connection number
 *         12..15  work    iterations of CPU work the server does for this request
 *         16..23  sum     request: 0; reply: the result of that work
 *         24..63  payload request: a pattern from (id, conn); reply: each byte ^ 0xA5
 *   wire_serve() turns a request into its reply in place; the client checks the
 *   reply with wire_check(), which looks at id, conn and every payload byte.
 *
 * SERVER CONTRACT
 *   - argv: -p PORT (0: any free port), -t THREADS (what "threads" means is the
 *     server's own: the lf pool size, asio's run() threads, HS/HR's workers, ...).
 *   - Listen on 127.0.0.1 (backlog SOMAXCONN), TCP_NODELAY on every accepted socket.
 *   - When listening, print "port N\n" on stdout and flush it.
 *   - Serve each whole 64-byte request with wire_serve() and write the 64-byte reply
 *     on the same connection. Requests may be pipelined and may arrive split.
 *   - No allocation per request (buffers per connection).
 *   - Run until killed (SIGTERM). A client that closes its connection is cleaned up.
 */
#ifndef BENCH_WIRE_H
#define BENCH_WIRE_H

#include <stdint.h>
#include <string.h>

#define WIRE_SIZE 64
#define WIRE_PAYLOAD 24

static inline uint64_t wire_get64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline uint32_t wire_get32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline unsigned char wire_pattern(uint64_t id, uint32_t conn, unsigned i)
{
    return (unsigned char)(id * 131u + conn * 17u + i * 7u);
}

/* Build request `id` of connection `conn` asking for `work` iterations. */
static inline void wire_fill(unsigned char *m, uint64_t id, uint32_t conn, uint32_t work)
{
    uint64_t zero = 0;
    memcpy(m, &id, 8);
    memcpy(m + 8, &conn, 4);
    memcpy(m + 12, &work, 4);
    memcpy(m + 16, &zero, 8);
    for (unsigned i = WIRE_PAYLOAD; i < WIRE_SIZE; i++)
        m[i] = wire_pattern(id, conn, i);
}

/* The server's job: `work` rounds of a 64-bit LCG (about a nanosecond each), then
 * the reply in place. The sum goes on the wire, so the loop cannot be dropped. */
static inline void wire_serve(unsigned char *m)
{
    uint64_t x = wire_get64(m) | 1u;
    uint32_t work = wire_get32(m + 12);
    for (uint32_t i = 0; i < work; i++)
        x = x * 6364136223846793005u + 1442695040888963407u;
    memcpy(m + 16, &x, 8);
    for (unsigned i = WIRE_PAYLOAD; i < WIRE_SIZE; i++)
        m[i] ^= 0xA5u;
}

/* 0 if `m` is the reply to request `id` of connection `conn`, else -1. */
static inline int wire_check(const unsigned char *m, uint64_t id, uint32_t conn)
{
    if (wire_get64(m) != id || wire_get32(m + 8) != conn)
        return -1;
    for (unsigned i = WIRE_PAYLOAD; i < WIRE_SIZE; i++)
        if (m[i] != (unsigned char)(wire_pattern(id, conn, i) ^ 0xA5u))
            return -1;
    return 0;
}

#endif
