# lf: build and test matrix.
#
#   make test                       every test x every policy (x synchronizer), plain,
#                                   then ASan+UBSan, then TSan, then compile checks;
#                                   ends with "N passed, N failed"
#   make test POLICIES=HEAP CC=clang   a slice of the matrix with another compiler
#   make test MODES=plain           skip the sanitizer runs
#   make bench                      the benchmarks (bench/)
#   make stress                     the reactor churn test, 60x longer, every variant
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

CFLAGS_plain := -O2 -g
CFLAGS_asan  := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
CFLAGS_tsan  := -O1 -g -fsanitize=thread
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
word_of = $(word $2,$(subst +, ,$(subst -, ,$1)))
vdefs = -DLF_PROMOTE=LF_PROMOTE_$(call word_of,$1,1) \
        $(if $(findstring -,$1),-DLF_SYNC=LF_SYNC_$(call word_of,$1,2)) \
        $(if $(findstring +,$1),-DLF_REACTOR_BACKEND=LF_REACTOR_$(call word_of,$1,2))
# (the fallback is what liburcu-memb.pc says; it matters before setup installed it)
URCU_LIBS := $(shell pkg-config --libs liburcu-memb 2>/dev/null || echo -lurcu-memb -lurcu-common)

POOL_TESTS := $(patsubst test/%.c,%,$(wildcard test/t_pool_*.c))
REACTOR_TESTS := $(patsubst test/%.c,%,$(wildcard test/t_reactor_*.c))
# Tests that count heap allocations replace malloc, which the sanitizers own.
PLAIN_ONLY := t_reactor_alloc

# run_check MODE TEST VARIANT LIBS: build one test binary for one variant, run it, record.
define run_check
$(RESULTS)/$1/$2.$3:
	@test/check.sh $$@ "$1 $2 $3" "$(ENV_$1)" $(BUILD)/$1/$2.$3 -- \
	  $(CC) $(CSTD) $(WARN) $(CFLAGS_$1) $(call vdefs,$3) -o $(BUILD)/$1/$2.$3 test/$2.c $4 $(LIBS)
RUN_$1 += $(RESULTS)/$1/$2.$3
endef
$(foreach m,$(MODES),$(foreach t,$(POOL_TESTS),$(foreach v,$(POOL_VARIANTS),\
  $(eval $(call run_check,$m,$t,$v,)))))
$(foreach m,$(MODES),$(foreach t,$(if $(filter plain,$m),$(REACTOR_TESTS),$(filter-out $(PLAIN_ONLY),$(REACTOR_TESTS))),\
  $(foreach v,$(REACTOR_VARIANTS),$(eval $(call run_check,$m,$t,$v,$(URCU_LIBS))))))

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
$(eval $(call reject_check,two-policies-one-file,included twice in one file,#define LF_PROMOTE LF_PROMOTE_FIFO\n#include "lf.h"\n#undef LF_PROMOTE\n#define LF_PROMOTE LF_PROMOTE_HEAP\n#include "lf.h"\n,$(STRICT)))

# The README's C code blocks compile and run.
$(RESULTS)/compile/readme:
	@test/check.sh $@ "README code blocks compile and run" compiles -- test/readme.sh $(CC) $(BUILD)/readme
RUN_compile += $(RESULTS)/compile/readme

# ---------------------------------------------------------------- targets
.PHONY: test setup bench stress clean summary $(addprefix run-,$(MODES)) run-compile

setup:
	@test/setup.sh

# Every check runs before the verdict: checks never stop make, the summary counts.
test: setup
	@rm -rf $(RESULTS)
	@mkdir -p $(BUILD)
	@$(MAKE) --no-print-directory -j1 $(addprefix run-,$(MODES)) run-compile
	@$(MAKE) --no-print-directory summary

$(foreach m,$(MODES) compile,$(eval run-$m: $$(RUN_$m)))

summary:
	@pass=$$(grep -rlx pass $(RESULTS) --include='*' 2>/dev/null | grep -vc '\.log$$'); \
	 fail=$$(grep -rlx fail $(RESULTS) --include='*' 2>/dev/null | grep -vc '\.log$$'); \
	 if [ "$$fail" -gt 0 ]; then echo "failed:"; grep -rlx fail $(RESULTS) | grep -v '\.log$$' | sed 's|^$(RESULTS)/|  |'; fi; \
	 echo "$$pass passed, $$fail failed"; [ "$$fail" -eq 0 ]

# Long stress, outside `make test`: the reactor churn test at STRESS_MULT times its
# usual size for every policy x backend (60: some 2.3x10^7 messages and 10^7
# dispatches per configuration and mode; about 20 minutes in all).
STRESS_MULT ?= 60
stress: setup
	@rm -rf $(BUILD)/results/stress
	@$(MAKE) --no-print-directory -j1 ENV_plain="LF_TEST_MULT=$(STRESS_MULT) LF_TEST_STALL_S=120" \
	  RESULTS=$(BUILD)/results/stress $(foreach v,$(REACTOR_VARIANTS),$(BUILD)/results/stress/plain/t_reactor_stress.$v)
	@grep -h "t_reactor_stress" $(BUILD)/results/stress/plain/*.log

bench: setup
	@bench/promote.sh $(BUILD)/bench

clean:
	rm -rf build
