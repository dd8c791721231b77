/* t_bound_inorder.c in hybrid mode: the bound attached to an lf_reactor. */
#define LFT_HYBRID 1
#define LF_BOUND_REACTOR 1
#include "t_bound_inorder.c" // NOLINT(bugprone-suspicious-include): the same test, hybrid
