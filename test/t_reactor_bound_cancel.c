/* t_bound_cancel.c in hybrid mode: the bound attached to an lf_reactor, whose turns
 * the waiting threads take; a cancel there is cleaned up by the reactor (its pool
 * role, its count of threads inside) and then by the bound (the context). */
#define LFT_HYBRID 1
#define LF_BOUND_REACTOR 1
#include "t_bound_cancel.c" // NOLINT(bugprone-suspicious-include): the same test, hybrid
