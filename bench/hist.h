/* bench/hist.h - the latency histogram of the load generators (loadgen.c, gw_load.c):
 * 64 power-of-two groups of nanoseconds, 32 linear steps in each (about 3% resolution);
 * a percentile is reported as its bucket's upper bound. One per thread, added up at
 * the end: no sharing while the load runs.
 */
#ifndef BENCH_HIST_H
#define BENCH_HIST_H

#include <stdint.h>

#define SUB_BITS 5
#define SUB (1u << SUB_BITS)
#define BUCKETS (64u * SUB)

struct hist {
    uint64_t n[BUCKETS];
};

static inline unsigned hist_index(uint64_t ns)
{
    if (ns < SUB)
        return (unsigned)ns;
    unsigned msb = 63u - (unsigned)__builtin_clzll(ns);
    unsigned sub = (unsigned)(ns >> (msb - SUB_BITS)) & (SUB - 1u);
    return (msb - SUB_BITS + 1u) * SUB + sub;
}

static inline uint64_t hist_upper(unsigned idx)
{
    if (idx < SUB)
        return idx;
    unsigned group = idx / SUB, sub = idx % SUB;
    unsigned msb = group + SUB_BITS - 1u;
    return ((uint64_t)(SUB + sub + 1u) << (msb - SUB_BITS)) - 1u;
}

/* into += from */
static inline void hist_add(struct hist *into, const struct hist *from)
{
    for (unsigned b = 0; b < BUCKETS; b++)
        into->n[b] += from->n[b];
}

static inline uint64_t hist_pct(const struct hist *h, uint64_t total, double p)
{
    uint64_t want = (uint64_t)(p * (double)total + 0.5), seen = 0;
    if (want == 0)
        want = 1;
    for (unsigned i = 0; i < BUCKETS; i++) {
        seen += h->n[i];
        if (seen >= want)
            return hist_upper(i);
    }
    return 0;
}

#endif
