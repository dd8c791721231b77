/* An installed lf, used the way a project outside this tree uses it: a reactor whose
 * two threads take turns on one periodic timer, then stop. Built by test/install.sh
 * with flags from pkg-config (lf.pc) and from CMake (find_package(lf)). Both include
 * styles work: "lf_reactor.h" (-I.../include/lf) and <lf/lf.h>. */
#include "lf_reactor.h"
#include <lf/lf.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>

static lf_reactor reactor;
static lf_handler ticker;
static lf_timer tick;
static int ticks;

static int on_tick(lf_handler *h, int fd, uint32_t events)
{
    (void)h, (void)fd;
    if ((events & LF_EV_TIMEOUT) && ++ticks == 5)
        lf_reactor_stop(&reactor); /* from inside a handler: run() returns in every thread */
    return LF_KEEP;
}

static void *serve(void *arg)
{
    lf_reactor_run(&reactor, NULL);
    return arg;
}

int main(void)
{
    pthread_t t[2];
    int fd;

#ifdef LF_EXPECT_VERSION /* the version the package says it installed */
    if (strcmp(LF_VERSION, LF_EXPECT_VERSION) != 0) {
        fprintf(stderr, "header says %s, package says %s\n", LF_VERSION, LF_EXPECT_VERSION);
        return 1;
    }
#endif
    if (lf_reactor_init(&reactor) != 0 || (fd = eventfd(0, EFD_NONBLOCK)) < 0)
        return 1;
    ticker.handle_event = on_tick;
    lf_timer_init(&tick);
    if (lf_reactor_register(&reactor, &ticker, fd, LF_EV_READ) != 0 ||
        lf_reactor_timer_start(&reactor, &tick, &ticker, 1000000, 1000000) != 0)
        return 1;
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, serve, NULL);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    printf("lf %s (%s, %s): %d ticks\n", LF_VERSION, lf_reactor_backend_name(), lf_promote_name(),
           ticks);
    return lf_reactor_destroy(&reactor) != 0 || ticks != 5;
}
