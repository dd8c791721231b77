/* bench/memc_refs.c - what memc.h's reference counting costs a call: T threads each
 * take a reference to the current connection and drop it again, in a loop, with
 * nothing in between (the worst case: every thread on the same lock or cache line
 * all the time; a real call spends tens of microseconds between the two).
 *
 *   mutex   memc.h's scheme: lock, load the pointer, count one, unlock; then lock,
 *           uncount, unlock (two lock/unlock pairs of a pthread mutex per call)
 *   atomic  the floor of any lock-free scheme: one atomic add to take, one atomic
 *           subtract to drop, on a count shared by every thread (a correct scheme
 *           needs more: the pointer load and the count must not race with a swap)
 *
 *   memc_refs [-t THREADS] [-n OPS_PER_THREAD]
 *
 * Prints one line per variant: threads, the CPU time (user + system, getrusage) per
 * take+drop pair, which the machine's other load does not inflate, and the pairs per
 * second of all threads together (wall clock).
 */
#include <pthread.h>
#include <sys/resource.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

struct conn {
    unsigned refs;          /* mutex: under lock */
    atomic_uint arefs;      /* atomic */
};

static struct conn the_conn;
static struct conn *cur = &the_conn;
static struct conn *_Atomic acur = &the_conn;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long ops = 2000000;
static int variant;
static pthread_barrier_t start;

static void *worker(void *arg)
{
    struct conn *c;
    (void)arg;
    pthread_barrier_wait(&start);
    for (long i = 0; i < ops; i++) {
        switch (variant) {
        case 0:
            pthread_mutex_lock(&lock);
            c = cur;
            c->refs++;
            pthread_mutex_unlock(&lock);
            /* (the call) */
            pthread_mutex_lock(&lock);
            c->refs--;
            pthread_mutex_unlock(&lock);
            break;
        default:
            c = atomic_load_explicit(&acur, memory_order_acquire);
            atomic_fetch_add_explicit(&c->arefs, 1, memory_order_acq_rel);
            atomic_fetch_sub_explicit(&c->arefs, 1, memory_order_acq_rel);
            break;
        }
    }
    return NULL;
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    static const char *const names[] = {"mutex", "atomic"};
    int threads = 8, opt;
    while ((opt = getopt(argc, argv, "t:n:")) != -1) {
        if (opt == 't')
            threads = atoi(optarg);
        else if (opt == 'n')
            ops = atol(optarg);
        else {
            fprintf(stderr, "usage: memc_refs [-t THREADS] [-n OPS_PER_THREAD]\n");
            return 2;
        }
    }
    if (threads < 1 || ops < 1)
        return 2;
    for (variant = 0; variant < 2; variant++) {
        pthread_t *th = (pthread_t *)calloc((size_t)threads, sizeof *th);
        double t0, t1, c0, c1;
        if (th == NULL)
            return 1;
        pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
        for (int i = 0; i < threads; i++)
            if (pthread_create(&th[i], NULL, worker, NULL) != 0)
                return 1;
        pthread_barrier_wait(&start);
        t0 = now_s();
        c0 = cpu_s();
        for (int i = 0; i < threads; i++)
            pthread_join(th[i], NULL);
        t1 = now_s();
        c1 = cpu_s();
        pthread_barrier_destroy(&start);
        printf("variant=%s threads=%d cpu_ns_per_pair=%.1f pairs_per_s=%.0f\n", names[variant],
               threads, (c1 - c0) * 1e9 / ((double)ops * threads), (double)ops * threads / (t1 - t0));
        free(th);
    }
    return the_conn.refs != 0 || atomic_load(&the_conn.arefs) != 0;
}
