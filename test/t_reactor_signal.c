/* Signals as events: SIGUSR1 and SIGUSR2, blocked in every thread, arrive through
 * lf_reactor_register_signal as LF_EV_SIGNAL dispatches of one handler, on every
 * backend and policy; each of N signals is seen exactly once with the right number. */
#include "../lf_reactor.h"
#include "lf_test.h"

#include <signal.h>
#include <sys/signalfd.h>

#define N 200

static lf_reactor r;
static LFT_ATOMIC(int) seen_usr1, seen_usr2, other_bits;

static int on_signal(lf_handler *h, int fd, uint32_t events)
{
    struct signalfd_siginfo si;
    (void)h;
    if (events != LF_EV_SIGNAL)
        lft_add(&other_bits, 1);
    while (read(fd, &si, sizeof si) == (ssize_t)sizeof si) {
        if (si.ssi_signo == SIGUSR1)
            lft_add(&seen_usr1, 1);
        else if (si.ssi_signo == SIGUSR2)
            lft_add(&seen_usr2, 1);
        else
            lft_add(&other_bits, 1);
        lft_progress();
    }
    return LF_KEEP;
}

static void *runner(void *arg)
{
    CHECK_EQ(lf_reactor_run(&r, NULL), ECANCELED);
    return arg;
}

int main(void)
{
    sigset_t set;
    lf_handler h;
    pthread_t t[2];

    /* blocked before any thread exists, so every thread inherits the mask */
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGUSR2);
    CHECK(pthread_sigmask(SIG_BLOCK, &set, NULL) == 0);
    lft_start("t_reactor_signal", 30);
    CHECK_EQ(lf_reactor_init(&r), 0);
    memset(&h, 0, sizeof h);
    h.handle_event = on_signal;
#ifdef LF_PORTABLE
    /* no signalfd on the portable path: said so, and nothing registered */
    CHECK_EQ(lf_reactor_register_signal(&r, &h, &set), ENOSYS);
    CHECK_EQ(lf_reactor_destroy(&r), 0);
    printf("t_reactor_signal %s: LF_PORTABLE: ENOSYS, as documented\n", lf_reactor_backend_name());
    return 0;
#endif
    CHECK_EQ(lf_reactor_register_signal(&r, &h, &set), 0);
    CHECK_EQ(lf_reactor_register_signal(&r, &h, &set), EEXIST); /* h is in use */
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&t[i], NULL, runner, NULL) == 0);
    for (int i = 0; i < N; i++) {
        /* standard signals do not queue: send the next once this one was taken */
        int sig = i % 2 ? SIGUSR2 : SIGUSR1;
        int before = lft_load(&seen_usr1) + lft_load(&seen_usr2);
        CHECK(kill(getpid(), sig) == 0);
        while (lft_load(&seen_usr1) + lft_load(&seen_usr2) == before)
            lft_sleep_ms(0);
    }
    CHECK_EQ(lf_reactor_stop(&r), 0);
    for (int i = 0; i < 2; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
    CHECK_EQ(lft_load(&seen_usr1), N / 2);
    CHECK_EQ(lft_load(&seen_usr2), N / 2);
    CHECK_EQ(lft_load(&other_bits), 0);
    CHECK_EQ(lf_reactor_destroy(&r), 0);
    printf("t_reactor_signal %s/%s: %d signals, each dispatched once as LF_EV_SIGNAL\n",
           lf_reactor_backend_name(), lf_promote_name(), N);
    return 0;
}
