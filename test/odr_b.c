/* See odr_a.c. */
#define LF_PROMOTE LF_PROMOTE_HEAP
#define LF_SYNC LF_SYNC_PTHREAD
#define LF_REACTOR_BACKEND LF_REACTOR_POLL
#define LF_BOUND_REACTOR 1
#include "../lf_bound.h"

int odr_a(void);
int main(void)
{
    lf_pool p;
    lf_reactor r;
    lf_bound_ctx c;
    unsigned char buf[8];
    int rc = lf_pool_init(&p) | lf_reactor_init(&r) | lf_bound_ctx_init(&c, buf, sizeof buf, 0);
    lf_bound_ctx_destroy(&c);
    rc |= lf_reactor_destroy(&r) | lf_pool_destroy(&p);
    return rc | odr_a();
}
