# lf: build and test matrix.
#
#   make test                       the CI run (8 to 10 minutes): every test in every
#                                   policy and backend, plain, then once under ASan+UBSan
#                                   and once under TSan, with the compile checks, lint,
#                                   models and fuzzing beside them on one core; ends with
#                                   "N passed, N failed"
#   make test-full                  the whole matrix (FULL=1, about 50 minutes): every
#                                   policy x backend, the sanitizers on more variants,
#                                   bp flavour, m32, musl, ARM, longer fuzzing
#   make test POLICIES=HEAP CC=clang   a slice of the matrix with another compiler
#   make test MODES=plain           skip the sanitizer runs
#   make test-full SAN_REACTOR_VARIANTS="LIFO+POLL HEAP+EPOLL"   the reactor variants
#                                   the full run takes under the sanitizers (default:
#                                   LIFO on every backend, CONDVAR on epoll)
#   make bench                      the benchmarks (bench/; QUICK=1: a short run; as root
#                                   it installs its peers: ACE, asio, nginx, wrk)
#   make stress-ci                  make test 3 times beside a busy loop (before a resolve)
#   make stress                     the reactor churn test, 30x longer, every variant,
#                                   each required to dispatch 10^7 events
#   make lint                       cppcheck + clang-tidy (also part of make test)
#   make fuzz                       the fuzzers for FUZZ_S seconds each, keeping finds
#   make soak                       the OLTP demo under churn for SOAK_S (600) seconds,
#                                   every request accounted for
#   make cross                      the tests for aarch64 and armhf under qemu-user
#   make install / uninstall        PREFIX=/usr/local DESTDIR=
#   make setup                      install what is missing (as root), or say how
#
# Build products live in build/<compiler>/, so gcc and clang builds sit side by side.

CC       ?= cc
POLICIES ?= LIFO FIFO HEAP CONDVAR
SYNCS    ?= FUTEX PTHREAD
BACKENDS ?= EPOLL POLL SELECT
MODES    ?= plain asan tsan

CCNAME   := $(notdir $(CC))
BUILD    := build/$(CCNAME)
RESULTS  := $(BUILD)/results
HEADERS  := $(wildcard lf.h lf_reactor.h lf_bound.h)

CSTD     := -std=c11 -D_POSIX_C_SOURCE=200809L
WARN     := -Wall -Wextra -Wpedantic -Werror
LIBS     := -pthread

# -g1: line tables, enough for every backtrace and sanitizer report (file:line), and
# a fifth less compile time than -g over the ~730 binaries (rebuild one with -g to
# debug it).
CFLAGS_plain := -O2 -g1
CFLAGS_asan  := -O1 -g1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
CFLAGS_tsan  := -O1 -g1 -fsanitize=thread
# Sanitized runs are slower: they do half (ASan) or a quarter (TSan) of the stress
# work and allow longer stalls before the watchdog calls it a hang.
ENV_plain := LF_TEST_SCALE=1
ENV_asan  := LF_TEST_SCALE=2 LF_TEST_STALL_S=60 ASAN_OPTIONS=abort_on_error=0:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1
ENV_tsan  := LF_TEST_SCALE=4 LF_TEST_STALL_S=90 TSAN_OPTIONS=halt_on_error=1:exitcode=66:suppressions=$(CURDIR)/test/tsan.supp

# ---------------------------------------------------------------- the matrix
# A pool variant is POLICY-SYNC (CONDVAR has no per-follower synchronizer to vary);
# a reactor variant is POLICY+BACKEND with the default synchronizer.
POOL_VARIANTS := $(foreach p,$(POLICIES),$(if $(filter CONDVAR,$p),$p,$(foreach s,$(SYNCS),$p-$s)))
REACTOR_VARIANTS := $(foreach p,$(POLICIES),$(foreach b,$(BACKENDS),$p+$b))
# Two sizes of the matrix. `make test` (the CI run, about 10 minutes on 2 cores with
# its installs) runs every test once in every policy and every backend and once under
# each sanitizer; `make test-full` (FULL=1) runs today's whole matrix: every policy x
# backend, the sanitizer subsets below, every test on liburcu's bp flavour, m32, musl,
# the ARM targets and longer fuzzing. Run it before resolving what touches a header.
FULL ?= 0
# covering pairs: policy i with backend i, both lists cycled until the longer one is
# used up, so every policy and every backend runs (LIFO+EPOLL FIFO+POLL HEAP+SELECT
# CONDVAR+EPOLL for the default axes)
lf_rot = $(wordlist 2,999,$1) $(firstword $1)
lf_cover = $(if $3,$(firstword $1)+$(firstword $2) $(call lf_cover,$(call lf_rot,$1),$(call lf_rot,$2),$(wordlist 2,999,$3)))
lf_longer = $(if $(word $(words $2),$1),$1,$2)
COVER_REACTOR_VARIANTS := $(strip $(call lf_cover,$(POLICIES),$(BACKENDS),$(call lf_longer,$(POLICIES),$(BACKENDS))))
# The full run's sanitizer subsets. Reactor tests: LIFO (a synchronizer per follower,
# as FIFO and HEAP) on every backend, and CONDVAR (one condition variable and a
# reserved slot: lf.h's code, the same under every backend) on epoll. Pool tests:
# each policy once and each synchronizer at least twice (the synchronizer code is the
# same for LIFO, FIFO and HEAP; the set code differs per policy). Both override.
SAN_REACTOR_VARIANTS ?= $(filter $(REACTOR_VARIANTS),$(foreach b,$(BACKENDS),LIFO+$b) CONDVAR+EPOLL)
SAN_POOL_VARIANTS ?= $(filter $(POOL_VARIANTS),LIFO-FUTEX FIFO-PTHREAD HEAP-FUTEX LIFO-PTHREAD CONDVAR)
# VARIANTS_<kind>_<mode>: what each test runs in. The pool tests: all seven plain in
# the full run, covering pairs in make test. make test's sanitizer runs take one variant each: TSan the
# default (LIFO, futex, epoll: what most users run, and where a race would hurt
# most), ASan+UBSan the code TSan's variant leaves out: HEAP with the pthread
# synchronizer (the priority-inheriting lock under per-follower condition
# variables) and CONDVAR on select.
lf_first_of = $(firstword $(filter $1,$2) $2)
# the pool tests: every variant in the full run; make test takes covering pairs (each
# policy, each synchronizer: the synchronizer code is the same for LIFO, FIFO and HEAP)
POOL_COVER := $(or $(filter $(POOL_VARIANTS),LIFO-FUTEX FIFO-PTHREAD HEAP-FUTEX CONDVAR),$(POOL_VARIANTS))
ifeq ($(FULL),1)
VARIANTS_pool_plain := $(POOL_VARIANTS)
VARIANTS_reactor_plain := $(REACTOR_VARIANTS)
VARIANTS_pool_asan := $(SAN_POOL_VARIANTS)
VARIANTS_pool_tsan := $(SAN_POOL_VARIANTS)
VARIANTS_reactor_asan := $(SAN_REACTOR_VARIANTS)
VARIANTS_reactor_tsan := $(SAN_REACTOR_VARIANTS)
else
VARIANTS_pool_plain := $(POOL_COVER)
VARIANTS_reactor_plain := $(COVER_REACTOR_VARIANTS)
VARIANTS_pool_asan := $(call lf_first_of,HEAP-PTHREAD,$(POOL_VARIANTS))
VARIANTS_pool_tsan := $(call lf_first_of,LIFO-FUTEX,$(POOL_VARIANTS))
VARIANTS_reactor_asan := $(call lf_first_of,CONDVAR+SELECT,$(REACTOR_VARIANTS))
VARIANTS_reactor_tsan := $(call lf_first_of,LIFO+EPOLL,$(COVER_REACTOR_VARIANTS))
endif
word_of = $(word $2,$(subst +, ,$(subst -, ,$1)))
vdefs = -DLF_PROMOTE=LF_PROMOTE_$(call word_of,$1,1) \
        $(if $(filter FUTEX PTHREAD,$(call word_of,$1,2)),-DLF_SYNC=LF_SYNC_$(call word_of,$1,2)) \
        $(if $(findstring +,$1),-DLF_REACTOR_BACKEND=LF_REACTOR_$(call word_of,$1,2))
# (the fallback is what liburcu-memb.pc says; it matters before setup installed it)
URCU_LIBS := $(shell pkg-config --libs liburcu-memb 2>/dev/null || echo -lurcu-memb -lurcu-common)

# lf_bound.h needs lf.h only: its tests run in the pool matrix
POOL_TESTS := $(patsubst test/%.c,%,$(wildcard test/t_pool_*.c test/t_bound_*.c))
REACTOR_TESTS := $(patsubst test/%.c,%,$(wildcard test/t_reactor_*.c))
# Tests that count heap allocations replace malloc, which the sanitizers own.
PLAIN_ONLY := t_reactor_alloc

# run_check MODE TEST VARIANT LIBS: build one test binary for one variant, run it, record.
# The builds go first, two at a time (prebuild: a binary and its .pre mark, no verdict);
# the runs then go one at a time, since the tests measure timing-sensitive behaviour.
# check.sh builds again (and reports the error) where the prebuild left no binary.
define run_check
CMD_$1_$2_$3 = $(CC) $(CSTD) $(WARN) $(CFLAGS_$1) $(call vdefs,$3) -o $(BUILD)/$1/$2.$3 test/$2.c $4 $(LIBS)
$(BUILD)/$1/$2.$3.pre:
	@mkdir -p $(BUILD)/$1 && rm -f $(BUILD)/$1/$2.$3 && { $$(CMD_$1_$2_$3) >/dev/null 2>&1 || true; } && touch $$@
PRE += $(BUILD)/$1/$2.$3.pre
$(RESULTS)/$1/$2.$3:
	@test/check.sh $$@ "$1 $2 $3" "$(ENV_$1)" $(BUILD)/$1/$2.$3 -- $$(CMD_$1_$2_$3)
RUN_$1 += $(RESULTS)/$1/$2.$3
endef
# make test's plain pool runs, lighter for a few (the full run takes every variant):
# the write-queue tests (their code is the same under every policy) on LIFO-futex and
# FIFO-pthread; the pool's stress test on LIFO-futex and CONDVAR (HEAP under ASan).
POOL_LIGHT := t_bound_pipeline t_bound_inorder
pool_variants = $(if $(and $(filter plain,$1),$(filter-out 1,$(FULL))),$(strip \
  $(if $(filter $(POOL_LIGHT),$2),$(filter LIFO-FUTEX FIFO-PTHREAD,$(VARIANTS_pool_plain)),\
  $(if $(filter t_pool_stress,$2),$(filter LIFO-FUTEX CONDVAR,$(VARIANTS_pool_plain)),\
  $(VARIANTS_pool_plain)))),$(VARIANTS_pool_$1))
$(foreach m,$(MODES),$(foreach t,$(POOL_TESTS),$(foreach v,$(call pool_variants,$m,$t),\
  $(eval $(call run_check,$m,$t,$v,)))))
# The fault-injection test routes the headers' system calls through its schedule;
# the race test delays some of them, to widen a window between two.
FAULT_WRAP := -Wl,--wrap=epoll_wait,--wrap=poll,--wrap=select,--wrap=read,--wrap=send,--wrap=sendmsg,--wrap=eventfd,--wrap=epoll_create1,--wrap=epoll_ctl,--wrap=syscall,--wrap=malloc,--wrap=calloc,--wrap=fcntl,--wrap=fstat
RACE_WRAP := -Wl,--wrap=epoll_wait,--wrap=poll,--wrap=select,--wrap=read,--wrap=realloc,--wrap=epoll_ctl
wrap_of = $(if $(filter t_reactor_fault,$1),$(FAULT_WRAP),$(if $(filter t_reactor_race,$1),$(RACE_WRAP)))
# (t_reactor_defer checks the opt-in LF_DEFER_NS: below; without it, only the full run.
# The hybrid twins of the write-queue tests share all but the reactor's part with the
# bare ones, which run in the pool matrix: make test runs them on LIFO+EPOLL, plain
# and under TSan, the full run everywhere.)
BOUND_TWINS := t_reactor_bound_pipeline t_reactor_bound_inorder
MATRIX_REACTOR_TESTS := $(if $(filter 1,$(FULL)),$(REACTOR_TESTS),$(filter-out t_reactor_defer $(BOUND_TWINS),$(REACTOR_TESTS)))
# make test's plain runs of the hybrid lf_bound tests: LIFO+EPOLL and HEAP+SELECT (the
# bound's hybrid code is the same on every backend; PORTABLE adds poll for two of
# them), every variant in the full run
REACTOR_BOUND_LIGHT := $(filter t_reactor_bound_%,$(REACTOR_TESTS))
reactor_variants = $(if $(and $(filter plain,$1),$(filter-out 1,$(FULL)),$(filter $(REACTOR_BOUND_LIGHT),$2)),\
  $(or $(filter LIFO+EPOLL HEAP+SELECT,$(VARIANTS_reactor_plain)),$(VARIANTS_reactor_plain)),$(VARIANTS_reactor_$1))
$(if $(filter 1,$(FULL)),,$(if $(filter LIFO+EPOLL,$(REACTOR_VARIANTS)),$(foreach m,$(filter plain tsan,$(MODES)),\
  $(foreach t,$(BOUND_TWINS),$(eval $(call run_check,$m,$t,LIFO+EPOLL,$(URCU_LIBS)))))))
$(foreach m,$(MODES),$(foreach t,$(if $(filter plain,$m),$(MATRIX_REACTOR_TESTS),$(filter-out $(PLAIN_ONLY),$(MATRIX_REACTOR_TESTS))),\
  $(foreach v,$(call reactor_variants,$m,$t),$(eval $(call run_check,$m,$t,$v,$(URCU_LIBS) $(call wrap_of,$t))))))

# liburcu's bp flavour (LF_RCU_BP): the lifecycle test, whose fork part then forks
# under load, on every backend, plain (and under ASan in the full run); the full run
# also takes every reactor test but the fault schedule (written for memb's calls)
# once, plain, on epoll.
URCU_BP_LIBS := $(shell pkg-config --libs liburcu-bp 2>/dev/null || echo -lurcu-bp -lurcu-common)
BP_TESTS := t_reactor_lifecycle
BP_VARIANTS := $(foreach b,$(BACKENDS),$(firstword $(POLICIES))+$b+BP)
$(foreach m,$(filter plain $(if $(filter 1,$(FULL)),asan),$(MODES)),$(foreach t,$(BP_TESTS),$(foreach v,$(BP_VARIANTS),\
  $(eval $(call run_check,$m,$t,$v,-DLF_RCU_BP $(URCU_BP_LIBS))))))
$(if $(filter 1,$(FULL)),$(foreach t,$(filter-out t_reactor_fault $(BP_TESTS),$(REACTOR_TESTS)),\
  $(eval $(call run_check,plain,$t,LIFO+EPOLL+BP,-DLF_RCU_BP $(URCU_BP_LIBS) $(call wrap_of,$t)))))

# LF_SCHED_BATCH=1, the opt-in policy switch (lf.h, SCHEDULING): the takeover test,
# which checks the switch and its restore, plain, LIFO.
$(if $(filter LIFO-FUTEX,$(POOL_VARIANTS)),$(eval $(call run_check,plain,t_pool_takeover,LIFO-FUTEX-BATCH,-DLF_SCHED_BATCH=1)))
# LF_TAKEOVER=1 (on by default only with LF_SCHED_BATCH): the takeover test and the
# pool's stress test on LIFO-FUTEX and CONDVAR (every pool variant in the full run), and
# the reactor's stress test on epoll, plain; the two pool tests under TSan as well.
TAKEOVER_TESTS := t_pool_takeover t_pool_stress
$(foreach v,$(if $(filter 1,$(FULL)),$(VARIANTS_pool_plain),$(filter LIFO-FUTEX CONDVAR,$(VARIANTS_pool_plain))),\
  $(eval $(call run_check,plain,t_pool_takeover,$v-TAKEOVER,-DLF_TAKEOVER=1)))
$(foreach v,$(if $(filter 1,$(FULL)),$(VARIANTS_pool_plain),$(filter LIFO-FUTEX CONDVAR,$(VARIANTS_pool_plain))),\
  $(eval $(call run_check,plain,t_pool_stress,$v-TAKEOVER,-DLF_TAKEOVER=1)))
$(if $(filter LIFO+EPOLL,$(REACTOR_VARIANTS)),$(eval $(call run_check,plain,t_reactor_stress,LIFO+EPOLL+TAKEOVER,-DLF_TAKEOVER=1 $(URCU_LIBS))))
# LF_DEFER_NS (lf.h, DEFERRAL; opt-in): its test on LIFO+epoll (plain and TSan),
# HEAP+epoll (the priority rule) and LF_PORTABLE (the pthread synchronizer), and the
# stress test on LIFO+epoll, plain; the full run adds the blocking, cancellation and
# shutdown tests.
DEFER_NS := -DLF_DEFER_NS=1000000
DEFER_TESTS := t_reactor_defer t_reactor_stress $(if $(filter 1,$(FULL)),t_reactor_lifecycle t_reactor_cancel t_reactor_shutdown)
$(if $(filter LIFO+EPOLL,$(REACTOR_VARIANTS)),$(foreach t,$(DEFER_TESTS),\
  $(eval $(call run_check,plain,$t,LIFO+EPOLL+DEFER,$(DEFER_NS) $(URCU_LIBS)))))
$(if $(filter tsan,$(MODES)),$(if $(filter LIFO+EPOLL,$(REACTOR_VARIANTS)),\
  $(eval $(call run_check,tsan,t_reactor_defer,LIFO+EPOLL+DEFER,$(DEFER_NS) $(URCU_LIBS)))))
$(if $(filter HEAP+EPOLL,$(REACTOR_VARIANTS)),$(eval $(call run_check,plain,t_reactor_defer,HEAP+EPOLL+DEFER,$(DEFER_NS) $(URCU_LIBS))))
$(eval $(call run_check,plain,t_reactor_defer,LIFO+POLL+PORTABLE+DEFER,-DLF_PORTABLE $(DEFER_NS) $(URCU_LIBS)))
# and under TSan, the takeover's lock-free claim of a promotion (LIFO-FUTEX)
$(if $(filter tsan,$(MODES)),$(if $(filter LIFO-FUTEX,$(POOL_VARIANTS)),$(foreach t,$(TAKEOVER_TESTS),\
  $(eval $(call run_check,tsan,$t,LIFO-FUTEX-TAKEOVER,-DLF_TAKEOVER=1)))))

# LF_PORTABLE: the paths a BSD, macOS or RTOS build takes (pipe wake-ups, poll,
# LF_SYNC_PTHREAD, no signalfd), on Linux, plain: in the full run every reactor test but
# the fault schedule (written for the Linux calls); in make test the reactor tests that
# lean on what LF_PORTABLE changes (the wake-up pipe, signals without signalfd, the
# pool's pthread synchronizer under stops, cancels, forks and hybrid joins); and the
# lf_bound tests.
PORTABLE_TESTS := t_reactor_signal t_reactor_lifecycle t_reactor_stress t_reactor_shutdown \
  t_reactor_cancel t_reactor_hybrid t_reactor_timers t_reactor_ready t_reactor_sidefx \
  t_reactor_bound_stop t_reactor_bound_cancel t_reactor_group
$(foreach t,$(if $(filter 1,$(FULL)),$(filter-out t_reactor_fault,$(REACTOR_TESTS)),$(PORTABLE_TESTS)),\
  $(eval $(call run_check,plain,$t,LIFO+POLL+PORTABLE,-DLF_PORTABLE $(URCU_LIBS) $(call wrap_of,$t))))
$(foreach t,$(filter t_bound_%,$(if $(filter 1,$(FULL)),$(POOL_TESTS),$(filter-out $(POOL_LIGHT),$(POOL_TESTS)))),\
  $(eval $(call run_check,plain,$t,LIFO-PTHREAD-PORTABLE,-DLF_PORTABLE)))

# C++ tests (test/t_*.cc): the C API used from C++17. Plain on LIFO+EPOLL and
# HEAP+SELECT (the full run: every reactor variant); under each sanitizer once on
# epoll (the full run: every policy on epoll).
CXX_FOR  := $(if $(findstring clang,$(CCNAME)),clang++,g++)
CXX_TESTS := $(patsubst test/%.cc,%,$(wildcard test/t_*.cc))
define run_cxx_check
CMD_$1_$2_$3 = $(CXX_FOR) -std=c++17 -D_POSIX_C_SOURCE=200809L $(WARN) $(CFLAGS_$1) $(call vdefs,$3) \
	  -o $(BUILD)/$1/$2.$3 test/$2.cc $(URCU_LIBS) $(LIBS)
$(BUILD)/$1/$2.$3.pre:
	@mkdir -p $(BUILD)/$1 && rm -f $(BUILD)/$1/$2.$3 && { $$(CMD_$1_$2_$3) >/dev/null 2>&1 || true; } && touch $$@
PRE += $(BUILD)/$1/$2.$3.pre
$(RESULTS)/$1/$2.$3:
	@test/check.sh $$@ "$1 $2 $3" "$(ENV_$1)" $(BUILD)/$1/$2.$3 -- $$(CMD_$1_$2_$3)
RUN_$1 += $(RESULTS)/$1/$2.$3
endef
$(foreach m,$(MODES),$(foreach t,$(CXX_TESTS),\
  $(foreach v,$(if $(filter plain,$m),$(if $(filter 1,$(FULL)),$(VARIANTS_reactor_plain),$(or $(filter LIFO+EPOLL HEAP+SELECT,$(VARIANTS_reactor_plain)),$(VARIANTS_reactor_plain))),$(if $(filter 1,$(FULL)),$(filter %+EPOLL,$(REACTOR_VARIANTS)),$(VARIANTS_reactor_tsan))),\
  $(eval $(call run_cxx_check,$m,$t,$v)))))

# ---------------------------------------------------------------- compile checks
# Each header alone, strict C11 + POSIX, under gcc and clang; and as C++17.
STRICT := $(CSTD) $(WARN) -fsyntax-only
define header_check
$(RESULTS)/compile/$1.$2:
	@printf '#include "%s"\n' $1 > $(BUILD)/inc-$1.c
	@test/check.sh $$@ "compile $1 alone, $2" compiles -- \
	  $2 -x $(if $(filter %++,$2),c++ -std=c++17 $(WARN) -fsyntax-only,c $(STRICT)) -I. $(BUILD)/inc-$1.c
RUN_compile += $(RESULTS)/compile/$1.$2
endef
$(foreach h,$(HEADERS),$(foreach c,gcc clang g++ clang++,$(eval $(call header_check,$h,$c))))

# All three headers in one C++ file, for every policy (a C++-only error may hide in
# one policy's code: a member named like its type broke only HEAP under g++).
define cxx_policy_check
$(RESULTS)/compile/all-headers-cxx.$1.$2:
	@printf '#define LF_BOUND_REACTOR 1\n#include "lf_bound.h"\n' > $(BUILD)/inc-all.cc
	@test/check.sh $$@ "compile all headers as C++17, $1, $2" compiles -- \
	  $1 -x c++ -std=c++17 $(WARN) -fsyntax-only -DLF_PROMOTE=LF_PROMOTE_$2 -I. $(BUILD)/inc-all.cc
RUN_compile += $(RESULTS)/compile/all-headers-cxx.$1.$2
endef
$(foreach c,g++ clang++,$(foreach p,$(POLICIES),$(eval $(call cxx_policy_check,$c,$p))))

# lf_bound.h with its hybrid part (LF_BOUND_REACTOR pulls in lf_reactor.h)
define hybrid_check
$(RESULTS)/compile/lf_bound.h-hybrid.$1:
	@printf '#define LF_BOUND_REACTOR 1\n#include "lf_bound.h"\n' > $(BUILD)/inc-bound-hybrid.c
	@test/check.sh $$@ "compile lf_bound.h hybrid alone, $1" compiles -- \
	  $1 -x $(if $(filter %++,$1),c++ -std=c++17 $(WARN) -fsyntax-only,c $(STRICT)) -I. $(BUILD)/inc-bound-hybrid.c
RUN_compile += $(RESULTS)/compile/lf_bound.h-hybrid.$1
endef
$(if $(filter lf_bound.h,$(HEADERS)),$(foreach c,gcc clang g++ clang++,$(eval $(call hybrid_check,$c))))

# Negative checks: these must fail to compile, with our own message.
define reject_check
$(RESULTS)/compile/reject-$1:
	@printf '%b' '$3' > $(BUILD)/reject-$1.c
	@test/check.sh $$@ "reject $1" 'rejects:$2' -- $(CC) -x c $4 -fsyntax-only -I. $(BUILD)/reject-$1.c
RUN_compile += $(RESULTS)/compile/reject-$1
endef
$(eval $(call reject_check,bad-promote-number,LF_PROMOTE must be,#include "lf.h"\n,$(STRICT) -DLF_PROMOTE=12345))
$(eval $(call reject_check,bad-promote-name,LF_PROMOTE must be,#include "lf.h"\n,$(STRICT) -DLF_PROMOTE=LF_PROMOTE_RANDOM))
$(eval $(call reject_check,bad-sync,LF_SYNC must be,#include "lf.h"\n,$(STRICT) -DLF_SYNC=7))
$(eval $(call reject_check,strict-c11-no-posix,compile with -D_POSIX_C_SOURCE,#include "lf.h"\n,-std=c11 $(WARN)))
$(eval $(call reject_check,strict-c11-pthread,compile with -D_POSIX_C_SOURCE,#include "lf.h"\n,-std=c11 -pthread $(WARN)))
$(eval $(call reject_check,two-policies-one-file,included twice in one file,#define LF_PROMOTE LF_PROMOTE_FIFO\n#include "lf.h"\n#undef LF_PROMOTE\n#define LF_PROMOTE LF_PROMOTE_HEAP\n#include "lf.h"\n,$(STRICT)))

# A program that uses liburcu itself includes our headers after its own, or before,
# with its own flavour and _LGPL_SOURCE (the flavours share urcu/call-rcu.h's guard;
# liburcu's inline code calls syscall() undeclared): it compiles, C and C++.
define urcu_mix_check
$(RESULTS)/compile/urcu-mix-$1.$2:
	@printf '%b' '$3' > $(BUILD)/urcu-mix-$1.$(if $(filter %++,$2),cc,c)
	@test/check.sh $$@ "liburcu's headers and ours in one file: $1, $2" compiles -- \
	  $2 $(if $(filter %++,$2),-std=c++17 $(WARN),$(STRICT)) -fsyntax-only -I. $(BUILD)/urcu-mix-$1.$(if $(filter %++,$2),cc,c)
RUN_compile += $(RESULTS)/compile/urcu-mix-$1.$2
endef
URCU_MIX_lgpl-urcu-first := \#define _LGPL_SOURCE\n\#include <urcu.h>\n\#include "lf_reactor.h"\n
URCU_MIX_urcu-after := \#include "lf_reactor.h"\n\#define _LGPL_SOURCE\n\#include <urcu.h>\n
URCU_MIX_qsbr-first := \#include <urcu/urcu-qsbr.h>\n\#include "lf_reactor.h"\n
URCU_MIX_qsbr-after := \#include "lf_reactor.h"\n\#include <urcu/urcu-qsbr.h>\n
URCU_MIX_lgpl-qsbr-first := \#define _LGPL_SOURCE\n\#include <urcu/urcu-qsbr.h>\n\#include "lf_bound.h"\n\#include "lf_reactor.h"\n
$(foreach k,lgpl-urcu-first urcu-after qsbr-first qsbr-after lgpl-qsbr-first,$(foreach c,gcc g++,\
  $(eval $(call urcu_mix_check,$k,$c,$(URCU_MIX_$k)))))

# Two files with different configurations in one program, link-time optimised: no
# type is defined two ways (C: -Wlto-type-mismatch; C++: -Wodr), and the program runs.
$(RESULTS)/compile/odr.gcc:
	@test/check.sh $@ "two configurations in one program, gcc -flto" compiles -- sh -c \
	  'gcc $(CSTD) $(WARN) -O2 -flto -Werror=lto-type-mismatch -o $(BUILD)/odr-c test/odr_a.c test/odr_b.c $(URCU_LIBS) $(LIBS) && $(BUILD)/odr-c'
$(RESULTS)/compile/odr.g++:
	@test/check.sh $@ "two configurations in one program, g++ -flto -Wodr" compiles -- sh -c \
	  'g++ -x c++ -std=c++17 -D_POSIX_C_SOURCE=200809L $(WARN) -O2 -flto -Wodr -Werror=odr -o $(BUILD)/odr-cxx test/odr_a.c test/odr_b.c $(URCU_LIBS) $(LIBS) && $(BUILD)/odr-cxx'
RUN_compile += $(RESULTS)/compile/odr.gcc $(RESULTS)/compile/odr.g++

# Every header carries the licence (SPDX line, LICENSE's text): copied alone, it keeps its terms.
$(RESULTS)/compile/licence:
	@test/check.sh $@ "every header carries its SPDX line and the LICENSE text" compiles -- test/licence.sh
RUN_compile += $(RESULTS)/compile/licence

# The README's C code blocks compile and run.
$(RESULTS)/compile/readme:
	@test/check.sh $@ "README code blocks compile and run" compiles -- test/readme.sh $(CC) $(BUILD)/readme
RUN_compile += $(RESULTS)/compile/readme

# The README's server example, run and driven by a client (plain and ASan+UBSan).
$(RESULTS)/compile/readme-server:
	@test/check.sh $@ "README server example: driven by a client, SIGTERM exits 0" compiles -- test/readme_server.sh $(CC) $(BUILD)/readme-server
RUN_compile += $(RESULTS)/compile/readme-server

# The benchmark's HTTP server: byte-exact GET/HEAD, pipelining, the errors, truncated
# requests, huge headers, slowloris, clients that stop reading, idle timeout and a
# request fuzzer, plain and ASan+UBSan; the thread-per-connection server too.
$(RESULTS)/compile/httpd:
	@test/check.sh $@ "bench httpd: HTTP checks, slowloris, stalled readers, fuzzer (plain, ASan+UBSan)" compiles -- test/httpd.sh $(CC) $(BUILD)/httpd
RUN_compile += $(RESULTS)/compile/httpd

# make install into a temporary prefix; a consumer builds via pkg-config, CMake and a
# lone copy of lf.h; make uninstall leaves nothing.
$(RESULTS)/compile/install:
	@test/check.sh $@ "install: pkg-config, CMake, lf.h alone, uninstall" compiles -- test/install.sh $(CC) $(BUILD)/install
RUN_compile += $(RESULTS)/compile/install

# The full run only (make test-full): other ABIs and architectures.
# 32-bit x86 (gcc -m32), with the ABI's 32-bit time_t and with a 64-bit one: the
# pool's and the bound's tests, two policies.
$(RESULTS)/compile/m32:
	@test/check.sh $@ "gcc -m32, 32- and 64-bit time_t: lf.h and lf_bound.h tests" compiles -- test/m32.sh gcc $(BUILD)/m32
FULL_compile += $(RESULTS)/compile/m32

# musl (musl-gcc, static): lf.h's and lf_bound.h's tests. The reactor needs liburcu,
# which Debian does not build for musl (README: Limits).
$(RESULTS)/compile/musl:
	@test/check.sh $@ "musl-gcc, static: lf.h and lf_bound.h tests" compiles -- test/musl.sh $(BUILD)/musl
FULL_compile += $(RESULTS)/compile/musl

# A real memcached (installed if missing, started on loopback): bench/memc.h's client
# on lf_bound, 8 threads x 10^4 calls over one connection with every value checked,
# then memcached killed mid-run (every waiter wakes, none hangs), killed and restarted
# under load (the threads reconnect, values checked; also from reactor handlers,
# hybrid), connect errors and cancellation; plain, ASan+UBSan and TSan.
$(RESULTS)/compile/memcached:
	@test/check.sh $@ "memcached: 8 threads share one connection, every value checked; killed mid-run, every waiter wakes; killed and restarted, the threads reconnect (also hybrid); connect errors, cancellation (plain, ASan+UBSan, TSan)" compiles -- test/memcached.sh $(CC) $(BUILD)/memcached $(if $(filter 1,$(FULL)),full)
RUN_compile += $(RESULTS)/compile/memcached

# A real Redis (redis-server installed if missing, started on loopback): bench/redis.h's
# client on lf_bound's in-order mode, 8 threads x 10^4 GET/SET/DEL/INCR over one
# connection with every value checked, server errors and timed-out calls mixed in;
# redis-server killed mid-run (every waiter wakes, none hangs), killed and restarted
# under load (the threads reconnect); the framing's edges and connect errors against a
# fake server; plain (the full run: TSan, FIFO and ASan+UBSan too).
$(RESULTS)/compile/redis:
	@test/check.sh $@ "redis: 8 threads share one in-order connection, every value checked; killed mid-run, every waiter wakes; killed and restarted, the threads reconnect; malformed replies, connect errors, cancellation (plain; the full run adds TSan, FIFO and ASan+UBSan)" compiles -- test/redis.sh $(CC) $(BUILD)/redis $(if $(filter 1,$(FULL)),full)
RUN_compile += $(RESULTS)/compile/redis

# The hybrid gateway (bench/gw_lf.c: lf_reactor.h + memc.h, calls nested in handlers)
# against a real memcached: 4,000 busy connections on default stacks, every reply
# checked, the nesting within its limit; memcached stopped, then killed and restarted
# (the gateway serves again); SIGTERM. ASan+UBSan (plain too in the full run).
$(RESULTS)/compile/gateway:
	@test/check.sh $@ "gateway: the hybrid gateway at 4,000 busy connections, memcached stopped and killed, nesting within its limit (ASan+UBSan)" compiles -- test/gateway.sh $(CC) $(BUILD)/gateway $(if $(filter 1,$(FULL)),full)
RUN_compile += $(RESULTS)/compile/gateway

# ARM under qemu-user (aarch64, armhf): a slice in the full run; `make cross` runs them all.
$(RESULTS)/compile/cross:
	@test/check.sh $@ "aarch64 and armhf under qemu-user: one test of each header (make cross: all)" compiles -- test/cross.sh $(BUILD)/cross-slice slice
FULL_compile += $(RESULTS)/compile/cross

# Wide warning sets (clang -Weverything, a long gcc list; C and C++; every
# configuration; -Werror), each exclusion with its reason in the script.
$(RESULTS)/compile/warnings:
	@test/check.sh $@ "headers quiet under wide warning sets (clang -Weverything, gcc; C, C++; every configuration)" compiles -- test/warnings.sh $(BUILD)/warnings
RUN_compile += $(RESULTS)/compile/warnings

# Static analysis (make lint runs it alone): cppcheck and clang-tidy over every
# header in each policy/backend configuration and over the tests; zero findings.
# The clang static analyzer runs on the headers here, on some tests too in the full
# run and in make lint (a test repeats most of its header's analysis).
$(RESULTS)/compile/lint:
	@test/check.sh $@ "lint: cppcheck + clang-tidy, zero findings" compiles -- test/lint.sh $(BUILD)/lint $(if $(filter 1,$(FULL)),full)
RUN_compile += $(RESULTS)/compile/lint

# Model checking (spin): each protocol model in test/model/ explored exhaustively as
# the header does it, and broken on purpose, where spin must find the error.
$(RESULTS)/compile/model:
	@test/check.sh $@ "models: spin, exhaustive, each also broken on purpose" compiles -- test/model.sh $(BUILD)/model
RUN_compile += $(RESULTS)/compile/model

# Fuzzing (clang's libFuzzer): each harness in test/fuzz/ replays its kept corpus and
# then fuzzes for FUZZ_TEST_S seconds here; make fuzz runs FUZZ_S and keeps new finds.
FUZZ_TEST_S ?= $(if $(filter 1,$(FULL)),60,2)
FUZZ_S ?= 300
$(RESULTS)/compile/fuzz:
	@test/check.sh $@ "fuzz: kept corpus + $(FUZZ_TEST_S) s per harness, the reactor also on poll and select (libFuzzer, ASan+UBSan)" compiles -- test/fuzz.sh $(BUILD)/fuzz $(FUZZ_TEST_S)
RUN_compile += $(RESULTS)/compile/fuzz

# The benchmark's own servers answer every request right (300 connections too), and
# the OLTP demo passes its reply checks, under ASan+UBSan (make bench measures them).
$(RESULTS)/compile/bench-smoke:
	@test/check.sh $@ "bench: servers and the OLTP demo answer every request (ASan+UBSan)" compiles -- test/bench_smoke.sh $(CC) $(BUILD)/bench-smoke
RUN_compile += $(RESULTS)/compile/bench-smoke

# Soak: the OLTP demo under connection churn, resets of client and back-end
# connections, stalls and timers, every request accounted for (answered, or failed
# with a reason the client was told), ASan+UBSan. make soak runs SOAK_S seconds.
SOAK_TEST_S ?= $(if $(filter 1,$(FULL)),60,5)
SOAK_S ?= 600
$(RESULTS)/compile/soak:
	@test/check.sh $@ "soak: OLTP demo under churn and resets, $(SOAK_TEST_S) s, every request accounted (ASan+UBSan)" compiles -- test/soak.sh $(CC) $(BUILD)/soak-test $(SOAK_TEST_S)
RUN_compile += $(RESULTS)/compile/soak

# ---------------------------------------------------------------- install
# make install PREFIX=/usr/local DESTDIR=    the headers into $(PREFIX)/include/lf/,
# pkg-config modules and a CMake package, each asking only for what its headers need:
#   lf             lf.h and lf_bound.h: threads only          CMake lf::lf
#   lf-reactor     lf_reactor.h too: liburcu-memb              CMake lf::reactor
#   lf-reactor-bp  the same with LF_RCU_BP: liburcu-bp         CMake lf::reactor_bp
# The headers are arch-independent, so the descriptions go under share/.
PREFIX     ?= /usr/local
DESTDIR    ?=
INCDIR     := $(PREFIX)/include/lf
PCDIR      := $(PREFIX)/share/pkgconfig
CMAKEDIR   := $(PREFIX)/share/cmake/lf
LF_VERSION := $(shell sed -n 's/^\#define LF_VERSION "\(.*\)"/\1/p' lf.h)
LF_MAJOR   := $(word 1,$(subst ., ,$(LF_VERSION)))

# Both include styles work: `#include "lf.h"` (as with a copied header) through
# -I.../include/lf, and `#include <lf/lf.h>` through -I.../include.
define LF_PC
prefix=$(PREFIX)
includedir=$${prefix}/include

Name: lf
Description: Leader/Followers thread pool and bound handles, lf.h and lf_bound.h (header-only C11)
Version: $(LF_VERSION)
Cflags: -I$${includedir}/lf -I$${includedir}
Libs: -pthread
endef

define LF_REACTOR_PC
Name: lf-reactor
Description: lf's reactor, lf_reactor.h, on liburcu's memb flavour (with lf.h and lf_bound.h)
Version: $(LF_VERSION)
Requires: lf = $(LF_VERSION), liburcu-memb >= 0.13
endef

define LF_REACTOR_BP_PC
Name: lf-reactor-bp
Description: lf's reactor, lf_reactor.h, on liburcu's bp flavour (LF_RCU_BP)
Version: $(LF_VERSION)
Requires: lf = $(LF_VERSION), liburcu-bp >= 0.13
Cflags: -DLF_RCU_BP
endef

# liburcu ships no CMake package: ask pkg-config, else look for the libraries.
define LF_CMAKE_CONFIG
# lf: header-only Leader/Followers toolkit. INTERFACE targets:
#   lf::lf          lf.h and lf_bound.h (include directories, threads)
#   lf::reactor     lf_reactor.h too, on liburcu-memb
#   lf::reactor_bp  lf_reactor.h on liburcu-bp (LF_RCU_BP)
# The reactor targets exist when liburcu is found; lf::lf needs nothing else.
include(CMakeFindDependencyMacro)
find_dependency(Threads)
get_filename_component(_lf_prefix "$${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
if(NOT TARGET lf::lf)
  add_library(lf::lf INTERFACE IMPORTED)
  set_target_properties(lf::lf PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "$${_lf_prefix}/include/lf;$${_lf_prefix}/include"
    INTERFACE_LINK_LIBRARIES Threads::Threads)
  find_package(PkgConfig QUIET)
  foreach(_lf_flavour memb bp)
    set(_lf_urcu "")
    set(_lf_urcu_inc "")
    if(PKG_CONFIG_FOUND)
      pkg_check_modules(LF_URCU_$${_lf_flavour} QUIET IMPORTED_TARGET liburcu-$${_lf_flavour}>=0.13)
    endif()
    if(TARGET PkgConfig::LF_URCU_$${_lf_flavour})
      set(_lf_urcu PkgConfig::LF_URCU_$${_lf_flavour})
    else()
      find_path(LF_URCU_$${_lf_flavour}_INCLUDE_DIR urcu/urcu-$${_lf_flavour}.h)
      find_library(LF_URCU_$${_lf_flavour}_LIBRARY urcu-$${_lf_flavour})
      find_library(LF_URCU_COMMON_LIBRARY urcu-common)
      if(LF_URCU_$${_lf_flavour}_INCLUDE_DIR AND LF_URCU_$${_lf_flavour}_LIBRARY AND LF_URCU_COMMON_LIBRARY)
        set(_lf_urcu "$${LF_URCU_$${_lf_flavour}_LIBRARY};$${LF_URCU_COMMON_LIBRARY}")
        set(_lf_urcu_inc "$${LF_URCU_$${_lf_flavour}_INCLUDE_DIR}")
      endif()
    endif()
    if(_lf_urcu)
      if(_lf_flavour STREQUAL "memb")
        set(_lf_target lf::reactor)
      else()
        set(_lf_target lf::reactor_bp)
      endif()
      add_library($${_lf_target} INTERFACE IMPORTED)
      set_target_properties($${_lf_target} PROPERTIES
        INTERFACE_INCLUDE_DIRECTORIES "$${_lf_urcu_inc}"
        INTERFACE_LINK_LIBRARIES "lf::lf;$${_lf_urcu}")
      if(_lf_flavour STREQUAL "bp")
        set_target_properties($${_lf_target} PROPERTIES INTERFACE_COMPILE_DEFINITIONS LF_RCU_BP)
      endif()
    endif()
  endforeach()
  if("reactor" IN_LIST lf_FIND_COMPONENTS AND NOT TARGET lf::reactor)
    set(lf_FOUND FALSE)
    set(lf_NOT_FOUND_MESSAGE "lf::reactor needs liburcu (Debian: apt-get install liburcu-dev)")
  endif()
endif()
endef

# Same major version, and at least the version asked for.
define LF_CMAKE_VERSION
set(PACKAGE_VERSION "$(LF_VERSION)")
if(PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION OR
   NOT PACKAGE_FIND_VERSION_MAJOR STREQUAL "$(LF_MAJOR)")
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
endef

$(BUILD):
	mkdir -p $@

install: | $(BUILD)
	install -d $(DESTDIR)$(INCDIR) $(DESTDIR)$(PCDIR) $(DESTDIR)$(CMAKEDIR)
	install -m 644 lf.h lf_reactor.h lf_bound.h $(DESTDIR)$(INCDIR)/
	$(file >$(BUILD)/lf.pc,$(LF_PC))
	$(file >$(BUILD)/lf-reactor.pc,$(LF_REACTOR_PC))
	$(file >$(BUILD)/lf-reactor-bp.pc,$(LF_REACTOR_BP_PC))
	$(file >$(BUILD)/lfConfig.cmake,$(LF_CMAKE_CONFIG))
	$(file >$(BUILD)/lfConfigVersion.cmake,$(LF_CMAKE_VERSION))
	install -m 644 $(BUILD)/lf.pc $(BUILD)/lf-reactor.pc $(BUILD)/lf-reactor-bp.pc $(DESTDIR)$(PCDIR)/
	install -m 644 $(BUILD)/lfConfig.cmake $(BUILD)/lfConfigVersion.cmake $(DESTDIR)$(CMAKEDIR)/

uninstall:
	rm -f $(addprefix $(DESTDIR)$(INCDIR)/,lf.h lf_reactor.h lf_bound.h)
	rm -f $(addprefix $(DESTDIR)$(PCDIR)/,lf.pc lf-reactor.pc lf-reactor-bp.pc)
	rm -f $(DESTDIR)$(CMAKEDIR)/lfConfig.cmake $(DESTDIR)$(CMAKEDIR)/lfConfigVersion.cmake
	-rmdir $(DESTDIR)$(INCDIR) $(DESTDIR)$(CMAKEDIR) 2>/dev/null

# ---------------------------------------------------------------- targets
.PHONY: test test-full stress-ci prebuild setup lint fuzz soak bench stress cross clean summary install uninstall $(addprefix run-,$(MODES)) run-compile run-static run-dynamic

setup:
	@test/setup.sh $(if $(filter 1,$(FULL)),full)

# Every check runs before the verdict: checks never stop make, the summary counts.
test: setup
	@rm -rf $(RESULTS)
	@mkdir -p $(BUILD) $(RESULTS)
	@date +%s > $(RESULTS)/.start
	@find $(BUILD) -name '*.pre' -delete
	@echo "building $(words $(PRE)) test binaries, two at a time$(if $(filter 1,$(FULL)), (the full matrix))..."
	@$(MAKE) --no-print-directory -j2 prebuild
	@echo "built in $$(($$(date +%s) - $$(cat $(RESULTS)/.start))) s; running $(words $(foreach m,$(MODES) dynamic,$(RUN_$m))) tests one at a time, and beside them $(words $(RUN_static)) static checks one at a time on one core (their verdicts follow the tests')"
	@LINT_JOBS=1 MODEL_JOBS=1 setsid setpriv --pdeathsig TERM nice -n 19 \
	   $(MAKE) --no-print-directory -j1 run-static > $(BUILD)/static.out 2>&1 & st=$$!; \
	 trap 'kill -s TERM -- -$$st 2>/dev/null || kill $$st 2>/dev/null; exit 130' INT TERM HUP QUIT; \
	 $(MAKE) --no-print-directory -j1 $(addprefix run-,$(MODES)) run-dynamic; rd=$$?; \
	 wait $$st; rs=$$?; cat $(BUILD)/static.out; \
	 echo "make test$(if $(filter 1,$(FULL)),-full): $$(($$(date +%s) - $$(cat $(RESULTS)/.start))) s"; \
	 $(MAKE) --no-print-directory summary EXPECT=$(words $(foreach m,$(MODES) compile,$(RUN_$m))); su=$$?; \
	 if [ $$rd -ne 0 ] || [ $$rs -ne 0 ]; then echo "make test: FAILED (tests' make $$rd, static checks' make $$rs)"; exit 1; fi; \
	 exit $$su

$(if $(filter 1,$(FULL)),$(eval RUN_compile += $(FULL_compile)))
# The checks that run no test of ours (compiles, static analysis, models, fuzzing,
# install) run beside the tests, one at a time on one core at nice 19 (in a session of
# their own, which the trap stops whole on an interrupt or a hang-up, and which gets a
# TERM if the recipe's shell is killed outright): the tests must hold beside a busy
# neighbour anyway (stress-ci), and make test gains their minutes. make test fails if
# either make failed or a check left no verdict, whatever the counts say.
STATIC_compile := $(addprefix $(RESULTS)/compile/,$(foreach h,$(HEADERS),$(foreach c,gcc clang g++ clang++,$h.$c)) \
  lf_bound.h-hybrid.% all-headers-cxx.% reject-% urcu-mix-% odr.gcc odr.g++ licence install warnings lint model fuzz)
RUN_static := $(filter $(STATIC_compile),$(RUN_compile))
RUN_dynamic := $(filter-out $(STATIC_compile),$(RUN_compile))
# The whole matrix (see FULL above): before resolving anything that touches a header.
test-full:
	@$(MAKE) --no-print-directory test FULL=1

# make test three times back to back beside a CPU-bound busy loop (nice 0, as a log
# shipper or a compile would be): a test that fails here asserts a schedule, not the
# contract. The check before resolving an issue; fails if any run failed.
stress-ci: setup
	@sh -c 'while :; do :; done' & hog=$$!; trap 'kill $$hog 2>/dev/null' EXIT; trap 'exit 130' INT TERM; \
	 rc=0; start=$$(date +%s); \
	 for i in 1 2 3; do \
	   echo "stress-ci: make test, run $$i of 3, beside a busy loop (pid $$hog)"; \
	   $(MAKE) --no-print-directory test || rc=1; \
	 done; \
	 echo "stress-ci: $$(($$(date +%s) - start)) s, $$([ $$rc = 0 ] && echo 'no failure' || echo 'FAILED')"; \
	 exit $$rc

$(foreach m,$(MODES) compile static dynamic,$(eval run-$m: $$(RUN_$m)))
prebuild: $(PRE)

# EXPECT (make test passes it): how many checks should have left a verdict; a check
# that left none (killed, or its rule never ran) counts as failed.
summary:
	@pass=$$(grep -rlx pass $(RESULTS) --include='*' 2>/dev/null | grep -vc '\.log$$'); \
	 fail=$$(grep -rlx fail $(RESULTS) --include='*' 2>/dev/null | grep -vc '\.log$$'); \
	 if [ "$$fail" -gt 0 ]; then echo "failed:"; grep -rlx fail $(RESULTS) | grep -v '\.log$$' | sed 's|^$(RESULTS)/|  |'; fi; \
	 if [ -n "$(EXPECT)" ] && [ $$((pass + fail)) -lt $(EXPECT) ]; then \
	   echo "no verdict from $$(($(EXPECT) - pass - fail)) of $(EXPECT) checks: counted as failed"; fail=$$(($(EXPECT) - pass)); fi; \
	 echo "$$pass passed, $$fail failed"; [ "$$fail" -eq 0 ]

# Long stress, outside `make test`: the reactor churn test at STRESS_MULT times its
# usual size for every policy x backend, reading one message per dispatch, so every
# configuration (and on epoll each of its two modes) must dispatch at least
# STRESS_MIN events or fail (30: some 1.15x10^7 messages and dispatches each).
STRESS_MULT ?= 30
STRESS_MIN ?= 10000000
stress: setup
	@rm -rf $(BUILD)/results/stress
	@find $(BUILD) -name '*.pre' -delete 2>/dev/null || true
	@$(MAKE) --no-print-directory -j1 \
	  ENV_plain="LF_TEST_MULT=$(STRESS_MULT) LF_TEST_PER_DISPATCH=1 LF_TEST_MIN_DISPATCH=$(STRESS_MIN) LF_TEST_STALL_S=120" \
	  RESULTS=$(BUILD)/results/stress $(foreach v,$(REACTOR_VARIANTS),$(BUILD)/results/stress/plain/t_reactor_stress.$v)
	@grep -h "t_reactor_stress" $(BUILD)/results/stress/plain/*.log

# Every lf.h and lf_bound.h test, and the reactor tests on epoll and poll, for aarch64
# and armhf under qemu-user (installs its toolchains as root); about 10 minutes.
cross:
	@test/cross.sh $(BUILD)/cross

lint: setup
	@test/lint.sh $(BUILD)/lint full

soak: setup
	@test/soak.sh $(CC) $(BUILD)/soak $(SOAK_S)

fuzz: setup
	@test/fuzz.sh $(BUILD)/fuzz-long $(FUZZ_S) merge

# Every benchmark, each failing or not on its own, then the verdict. QUICK=1 runs one
# short round of each (under 3 minutes); the default size takes about 24.
QUICK ?= 0
bench: setup
	@start=$$(date +%s); rc=0; \
	 if [ "$(QUICK)" = 1 ]; then export QUICK=1 ROUNDS=1 DURATION=0.1; fi; \
	 bench/servers.sh $(BUILD)/bench || rc=1; \
	 bench/dispatch.sh $(BUILD)/bench || rc=1; \
	 bench/promote.sh $(BUILD)/bench || rc=1; \
	 bench/handoff.sh $(BUILD)/bench || rc=1; \
	 bench/memc.sh $(BUILD)/bench || rc=1; \
	 bench/redis.sh $(BUILD)/bench || rc=1; \
	 bench/gw.sh $(BUILD)/bench || rc=1; \
	 bench/httpd.sh $(BUILD)/bench || rc=1; \
	 echo "make bench: $$(($$(date +%s) - start)) s on $$(nproc) CPUs ($$(uname -m)), results in bench/results/"; \
	 exit $$rc

clean:
	rm -rf build
