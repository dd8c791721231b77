/* An installed lf without the reactor: lf.h and lf_bound.h need threads only, so the
 * "lf" pkg-config module and CMake's lf::lf bring no liburcu. A bound connection is
 * opened on a socket pair and closed again; a pool is made and taken down. Built by
 * test/install.sh, which also checks that nothing of liburcu was linked. */
#include "lf_bound.h"
#include <lf/lf.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

static int parse(void *user, const unsigned char *hdr, uint64_t *id, size_t *len)
{
    (void)user;
    *id = hdr[0];
    *len = hdr[1];
    return 0;
}

int main(void)
{
    struct lf_bound_hooks hooks;
    lf_bound b;
    lf_pool pool;
    int sv[2];

#ifdef LF_EXPECT_VERSION
    if (strcmp(LF_VERSION, LF_EXPECT_VERSION) != 0) {
        fprintf(stderr, "header says %s, package says %s\n", LF_VERSION, LF_EXPECT_VERSION);
        return 1;
    }
#endif
    memset(&hooks, 0, sizeof hooks);
    hooks.header_len = 2;
    hooks.parse_header = parse;
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0 || lf_bound_init(&b, sv[0], &hooks) != 0 ||
        lf_bound_destroy(&b) != 0 || lf_pool_init(&pool) != 0 || lf_pool_destroy(&pool) != 0)
        return 1;
    printf("lf %s without liburcu: a bound connection and a pool\n", LF_VERSION);
    return 0;
}
