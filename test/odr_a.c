/* Two files of one program made with different configurations (odr_a.c: FIFO,
 * epoll; odr_b.c: HEAP, poll, pthread synchronizers), linked with link-time
 * optimisation: the C build must see no -Wlto-type-mismatch, the C++ build no -Wodr.
 * The objects never cross between the files (the documented rule). */
#define LF_PROMOTE LF_PROMOTE_FIFO
#define LF_BOUND_REACTOR 1
#include "../lf_bound.h"

int odr_a(void);
int odr_a(void)
{
    lf_pool p;
    lf_reactor r;
    lf_bound_ctx c;
    unsigned char buf[8];
    int rc = lf_pool_init(&p) | lf_reactor_init(&r) | lf_bound_ctx_init(&c, buf, sizeof buf, 0);
    lf_bound_ctx_destroy(&c);
    return rc | lf_reactor_destroy(&r) | lf_pool_destroy(&p);
}
