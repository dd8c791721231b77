/* bench/alloc_count.c - counts a server's heap allocations, for loadgen's
 * allocs_per_req. Built as a shared object and preloaded into the server:
 *
 *   BENCH_ALLOC_FILE=/tmp/x.cnt LD_PRELOAD=build/bench/alloc_count.so srv ...
 *
 * Every malloc, calloc, realloc and aligned allocation (C++'s operator new ends in
 * malloc) adds one to a counter in the first 8 bytes of BENCH_ALLOC_FILE, which the
 * load generator maps and reads at the edges of its window. glibc only: the calls are
 * passed on to glibc's own __libc_* entry points, so no dlsym, which itself allocates.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static _Atomic uint64_t early;             /* counts until the file is mapped */
static _Atomic uint64_t *counter = &early;

__attribute__((constructor)) static void alloc_count_init(void)
{
    const char *path = getenv("BENCH_ALLOC_FILE");
    if (!path)
        return;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    if (ftruncate(fd, 4096) == 0) {
        void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p != MAP_FAILED)
            counter = p;
    }
    close(fd);
}

static inline void count(void)
{
    atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
}

void *malloc(size_t n)
{
    count();
    return __libc_malloc(n);
}

void *calloc(size_t k, size_t n)
{
    count();
    return __libc_calloc(k, n);
}

void *realloc(void *p, size_t n)
{
    count();
    return __libc_realloc(p, n);
}

void *memalign(size_t align, size_t n)
{
    count();
    return __libc_memalign(align, n);
}

void *aligned_alloc(size_t align, size_t n)
{
    count();
    return __libc_memalign(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
    count();
    void *p = __libc_memalign(align, n);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}
