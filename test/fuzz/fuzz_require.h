/* fuzz_require.h - the fuzz harnesses' check: on failure it says where and aborts,
 * which libFuzzer reports as a crash and saves the input for. */
#ifndef FUZZ_REQUIRE_H_INCLUDED
#define FUZZ_REQUIRE_H_INCLUDED

#include <stdio.h>
#include <stdlib.h>

#define REQUIRE(cond)                                                                   \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond);                  \
            abort();                                                                    \
        }                                                                               \
    } while (0)

#endif
