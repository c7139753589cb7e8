# vtrain: examples, tests and benches. Users need none of this: copy vtrain.h
# (and vtrain_btard.h for BTARD).
#
#   make demo    train the character GPT, audit it in another order, compare native
#   make test    the test suite (last line: "N passed, M failed")
#   make bench   benches (bench-gemm needs libopenblas-dev; bench-torch, PyTorch; bench-load)
#   make swarm   BTARD: 16 peers, 7 Byzantine, every attack; make bench-btard, bench-btard-mpi
#                make swarm-cnn (the digits CNN, batch norm), swarm-resnet (ResNet-18, 8 images
#                per peer: the paper's setting; CIFAR10=DIR, else synthetic CIFAR-shaped data)
#                (the MPI parts need libopenmpi-dev openmpi-bin)
#
# -ffp-contract=off: no implicit fused multiply-add (the numeric contract
# needs arithmetic to run as written; vtrain.h also switches it off itself).
# Never -ffast-math.

CC      ?= gcc
CXX     ?= g++
ARCH    ?= -march=native
CFLAGS  ?= -std=c99 -O2 $(ARCH) -ffp-contract=off -Wall -Wextra -Werror
LDLIBS  = -lm -lpthread
B       = build

EXAMPLES = $(B)/train_digits $(B)/train_chargpt $(B)/demo $(B)/vtrain $(B)/nondeterminism_lab $(B)/btard_swarm $(B)/train_digits_cnn $(B)/train_resnet
TESTS    = $(B)/test_core $(B)/test_grad $(B)/test_reference $(B)/test_replay $(B)/test_transcript $(B)/test_fixtures $(B)/test_btard $(B)/test_btard_byz $(B)/test_btard_cnn $(B)/test_btard_join $(B)/test_shards $(B)/test_cnn $(B)/test_alloc
BENCHES  = $(B)/bench_step $(B)/bench_logsize $(B)/bench_transcript $(B)/bench_btard $(B)/bench_cnn

.PHONY: all demo lab fuzz test-asan test-tsan test bench bench-gemm bench-step bench-logsize bench-transcript bench-torch bench-load clean compile-checks
.PHONY: swarm swarm-cnn swarm-resnet bench-btard bench-btard-mpi bench-dp test-mpi test-tcp test-dp test-bounds test-btard-byz

all: $(EXAMPLES) $(TESTS) $(BENCHES)

$(B):
	@mkdir -p $(B)

$(B)/%: examples/%.c vtrain.h | $(B)
	$(CC) $(CFLAGS) $< -o $@ $(LDLIBS)

# the convolutional programs' headers
$(B)/train_digits_cnn $(B)/train_resnet $(B)/vtrain: examples/digitscnn.h examples/cnnprog.h

$(B)/test_%: tests/test_%.c tests/test.h tests/allops.h vtrain.h examples/chargpt.h examples/digitsmlp.h examples/digitscnn.h | $(B)
	$(CC) $(CFLAGS) $< -o $@ $(LDLIBS)

# The quick test programs (a few seconds each) are built at -O1 without the
# -O3 vtrain.h asks for: a third of the build time, and a second
# optimisation level under test: the fixtures that -O3 builds recorded
# replay and re-train byte for byte from it, and code whose behaviour
# depends on the level shows (an overrun in test_cnn did).
TESTS_O1 = $(B)/test_grad $(B)/test_reference $(B)/test_fixtures $(B)/test_shards $(B)/test_cnn $(B)/test_alloc
$(TESTS_O1): CFLAGS := $(subst -O2,-O1 -DVTRAIN_NO_O3,$(CFLAGS))

# BTARD (vtrain_btard.h) signs every message with Ed25519 from libsodium
# (VTRAIN_SODIUM; Debian libsodium-dev) and runs peers as processes over TCP
# with ZeroMQ (VTRAIN_ZMQ; libzmq3-dev). Without libsodium the BTARD
# programs still build: their protocol tests skip with one line, and
# CenteredClip and the transports are still tested.
HAVE_SODIUM := $(shell printf '\043include <sodium.h>\nint main(void){return sodium_init() < 0;}' | $(CC) -x c - -lsodium -o /dev/null 2>/dev/null && echo 1)
HAVE_ZMQ    := $(shell printf '\043include <zmq.h>\nint main(void){return !zmq_has("curve");}' | $(CC) -x c - -lzmq -o /dev/null 2>/dev/null && echo 1)
BT_FLAGS = $(if $(HAVE_SODIUM),-DVTRAIN_SODIUM)
BT_LIBS  = $(if $(HAVE_SODIUM),-lsodium)

$(B)/test_btard: tests/test_btard.c tests/test.h tests/btard_test.h vtrain.h vtrain_btard.h | $(B)
	$(CC) $(CFLAGS) $(BT_FLAGS) $< -o $@ $(LDLIBS) $(BT_LIBS)
$(B)/test_btard_byz: tests/test_btard_byz.c tests/test.h tests/btard_test.h vtrain.h vtrain_btard.h | $(B)
	$(CC) $(CFLAGS) $(BT_FLAGS) $< -o $@ $(LDLIBS) $(BT_LIBS)
$(B)/test_btard_cnn: tests/test_btard_cnn.c tests/test.h tests/btard_test.h vtrain.h vtrain_btard.h | $(B)
	$(CC) $(CFLAGS) $(BT_FLAGS) $< -o $@ $(LDLIBS) $(BT_LIBS)
$(B)/test_btard_join: tests/test_btard_join.c tests/test.h tests/btard_test.h vtrain.h vtrain_btard.h | $(B)
	$(CC) $(CFLAGS) $(BT_FLAGS) $< -o $@ $(LDLIBS) $(BT_LIBS)
$(B)/btard_swarm: examples/btard_swarm.c vtrain.h vtrain_btard.h | $(B)
	$(CC) $(CFLAGS) $(BT_FLAGS) $< -o $@ $(LDLIBS) $(BT_LIBS)
# peers as separate processes over TCP (tests/tcp_run.sh starts them)
$(B)/btard_peer: examples/btard_peer.c vtrain.h vtrain_btard.h | $(B)
	$(CC) $(CFLAGS) -DVTRAIN_SODIUM -DVTRAIN_ZMQ $< -o $@ $(LDLIBS) -lsodium -lzmq
$(B)/zmq_slots: tests/zmq_slots.c vtrain.h vtrain_btard.h | $(B)
	$(CC) $(CFLAGS) -DVTRAIN_SODIUM -DVTRAIN_ZMQ $< -o $@ $(LDLIBS) -lsodium -lzmq

# BTARD against real Byzantines (issue 14): equivocation, withholding, spikes,
# predictable secrets, floods (make test runs it too)
test-btard-byz: $(B)/test_btard_byz
	./$(B)/test_btard_byz

# the bound-hunting test needs __float128 (libquadmath, which gcc brings on x86)
HAVE_QUADMATH := $(shell printf 'int main(void){return 0;}' | $(CC) -x c - -lquadmath -o /dev/null 2>/dev/null && echo 1)
$(B)/test_bounds: tests/test_bounds.c tests/test.h vtrain.h | $(B)
	$(CC) $(CFLAGS) $< -o $@ $(LDLIBS) -lquadmath
# the long hunt: more seeds, longer rows, every order
test-bounds: $(B)/test_bounds
	./$(B)/test_bounds --long

$(B)/bench_step: bench/step.c vtrain.h | $(B)
	$(CC) $(CFLAGS) $< -o $@ $(LDLIBS)

$(B)/bench_cnn: bench/cnn.c vtrain.h | $(B)
	$(CC) $(CFLAGS) $< -o $@ $(LDLIBS)

$(B)/bench_logsize: bench/logsize.c vtrain.h examples/chargpt.h examples/digitsmlp.h | $(B)
	$(CC) $(CFLAGS) $< -o $@ $(LDLIBS)

$(B)/bench_transcript: bench/transcript.c vtrain.h examples/chargpt.h | $(B)
	$(CC) $(CFLAGS) $< -o $@ $(LDLIBS)

$(B)/bench_gemm: bench/gemm.c vtrain.h | $(B)
	$(CC) $(CFLAGS) $< -o $@ $(LDLIBS) -lopenblas

# the GEMM micro-kernel alone beside OpenBLAS's (a DYNAMIC_ARCH build exports its per-core kernels)
$(B)/bench_gemm_kernel: bench/gemm_kernel.c vtrain.h | $(B)
	$(CC) $(CFLAGS) $< -o $@ $(LDLIBS) -lopenblas

$(B)/bench_btard: bench/btard.c vtrain.h vtrain_btard.h | $(B)
	$(CC) $(CFLAGS) $(BT_FLAGS) $< -o $@ $(LDLIBS) $(BT_LIBS)

# BTARD peers as MPI ranks: VTRAIN_MPI, an option of vtrain_btard.h (Open MPI: apt-get install
# libopenmpi-dev openmpi-bin)
MPICC  ?= mpicc
# (containers often forbid the cross-memory attach Open MPI uses between ranks)
MPIRUN ?= OMPI_MCA_btl_vader_single_copy_mechanism=none mpirun --oversubscribe $(if $(filter 0,$(shell id -u)),--allow-run-as-root)
$(B)/bench_btard_mpi: bench/btard.c vtrain.h vtrain_btard.h | $(B)
	$(MPICC) -DVTRAIN_MPI $(CFLAGS) $(BT_FLAGS) $< -o $@ $(LDLIBS) $(BT_LIBS)

demo: $(B)/demo
	./$(B)/demo

# 16 BTARD peers, 7 Byzantine, every attack under three defences; writes the table and the curves
swarm: $(B)/btard_swarm
	./$(B)/btard_swarm --md $(B)/btard_swarm.md --svg $(B)/btard_swarm.svg
# the same with batch norm (vtrain_btard.h >>cnn): the digits CNN, 8 images per peer (on the loaded
# 2-core VM about 4 min for BTARD, 14 more for CenteredClip and the mean), and the paper's ResNet-18
# (base width 8; on CIFAR-10 with CIFAR10=DIR, else on synthetic CIFAR-shaped images: about 20 min)
swarm-cnn: $(B)/btard_swarm
	./$(B)/btard_swarm --model cnn --steps 200 --every 20 --attacks none,sign_flip,random_direction,label_flip,ipm,alie \
	    --md $(B)/btard_swarm_cnn.md --svg $(B)/btard_swarm_cnn.svg
swarm-resnet: $(B)/btard_swarm
	./$(B)/btard_swarm --model resnet18 $(if $(CIFAR10),--data $(CIFAR10)) --steps 60 --start 20 --every 10 \
	    --attacks none,sign_flip --defences btard --md $(B)/btard_swarm_resnet.md --svg $(B)/btard_swarm_resnet.svg

# BTARD peers as processes over TCP alone (make test runs it too): kill -9, a hung peer, Byzantines
test-tcp:
	@bash tests/tcp_run.sh

# the BTARD tests over MPI alone (make test runs them too): mpirun -np 4
test-mpi:
	@bash tests/mpi_run.sh
# data-parallel training over MPI (vtrain_dp.h) alone (make test runs it too)
test-dp:
	@bash tests/dp_run.sh

# where bitwise nondeterminism comes from, measured on this machine
lab: $(B)/nondeterminism_lab
	./$(B)/nondeterminism_lab

# libFuzzer on every parser that reads files (clang; the first input byte
# picks the parser).
FUZZ_SECONDS ?= 300
$(B)/fuzz_parsers: tests/fuzz/fuzz_parsers.c vtrain.h | $(B)
	clang -std=c99 -g -O1 $(ARCH) -ffp-contract=off -fsanitize=fuzzer,address,undefined $< -o $@ -lm -lpthread
fuzz: $(B)/fuzz_parsers
	@mkdir -p $(B)/fuzz_corpus
	./$(B)/fuzz_parsers -max_total_time=$(FUZZ_SECONDS) $(B)/fuzz_corpus tests/fuzz/regress

# the whole suite under AddressSanitizer and UndefinedBehaviorSanitizer
ASAN_FLAGS = -std=c99 -O1 -g $(ARCH) -ffp-contract=off -fsanitize=address,undefined -fno-sanitize-recover=all -Wall -Wextra -Werror
ASAN_TESTS = core grad reference replay transcript fixtures btard btard_byz btard_join btard_cnn shards cnn alloc
test-asan: | $(B)
	@mkdir -p $(B)/asan
	@for t in $(ASAN_TESTS); do \
	  $(CC) $(ASAN_FLAGS) $(BT_FLAGS) tests/test_$$t.c -o $(B)/asan/test_$$t $(LDLIBS) $(BT_LIBS) || exit 1; done
	@bash tests/run.sh $(addprefix $(B)/asan/test_,$(ASAN_TESTS))

# the pool and its users under ThreadSanitizer (a few minutes; a report
# stops the program, which then counts as failed)
TSAN_FLAGS = -std=c99 -O1 -g $(ARCH) -ffp-contract=off -fsanitize=thread -Wall -Wextra -Werror
test-tsan: | $(B)
	@mkdir -p $(B)/tsan
	@for t in core replay alloc; do \
	  $(CC) $(TSAN_FLAGS) tests/test_$$t.c -o $(B)/tsan/test_$$t $(LDLIBS) || exit 1; done
	@TSAN_OPTIONS=halt_on_error=1 bash tests/run.sh $(B)/tsan/test_core $(B)/tsan/test_replay $(B)/tsan/test_alloc

# Optional groups of `make test`: each needs tools a plain C machine may
# lack. A missing group is skipped with one line that says what brings it
# (tests/run.sh counts the skips; .ci/run installs everything and fails on
# any skip). Overrides: NVCC=, CUDA_INC=, MPICC=.
have = $(shell command -v $(1) >/dev/null 2>&1 && echo 1)
HAVE_CLANG   := $(call have,clang)
HAVE_GXX     := $(call have,g++)
HAVE_CLANGXX := $(call have,clang++)
# Results of compile checks and skipped groups: one file each in $(B)/cc
# ("ok NAME", "fail NAME" or "skip GROUP WHY"); tests/run.sh counts them.
# cc-clear empties it first, so a check that no longer runs leaves nothing.
CCR = $(B)/cc
.PHONY: cc-clear
cc-clear: | $(B)
	@rm -rf $(CCR); mkdir -p $(CCR)
# record one skipped group: $(call skip,GROUP,WHY)
# (WHY: no commas, no quotes)
define skip
	@mkdir -p $(CCR); echo 'skip $(1) $(2)' > $(CCR)/skip_$(1); echo 'skipped: $(1): $(2)'
endef

# Compile checks: C99 and C++ with gcc and clang, two translation units,
# VTRAIN_STATIC, VTRAIN_NO_THREADS, VTRAIN_NO_SIMD, of vtrain.h alone and of
# vtrain.h with vtrain_btard.h. Each one also links and runs (a few steps of
# a tiny model and its audit). Each is its own target, so make -j runs them
# side by side. gcc C99, g++ and the CUDA host code under g++ compile at -O1,
# for the warnings that need the optimiser's data flow (the test programs
# are -O2 builds too); the rest at -O0 with VTRAIN_NO_O3 (so that the
# implementation really is compiled at -O0, not at the -O3 vtrain.h asks
# for), which checks the same language rules in a fifth of the time and
# covers VTRAIN_NO_O3's own lines.
WFLAGS  = -O1 $(ARCH) -ffp-contract=off -Wall -Wextra -Werror
WFLAGS0 = -O0 -DVTRAIN_NO_O3 $(ARCH) -ffp-contract=off -Wall -Wextra -Werror
# $(call compile_check,NAME,COMMAND): build with COMMAND, run, record
define compile_check
	@if $(2) > $(B)/cc_$(1).log 2>&1 && ./$(B)/cc_$(1) $(B)/cc_$(1).vtlog >> $(B)/cc_$(1).log 2>&1; \
	then echo "ok $(1)" > $(CCR)/$(1); echo "compile check $(1): ok"; \
	else echo "fail $(1)" > $(CCR)/$(1); echo "compile check $(1): FAILED"; cat $(B)/cc_$(1).log; fi
endef

CC_CHECKS = c99_gcc two_tus static no_threads no_simd posix_late fast_math_refused elementary_builds \
            btard_c99_gcc btard_two_tus btard_static btard_no_threads btard_order btard_no_sodium
ifeq ($(HAVE_GXX),1)
CC_CHECKS += cxx_gpp two_tus_cxx btard_cxx_gpp
else
CC_CHECKS += skip-g++
endif
ifeq ($(HAVE_CLANGXX),1)
CC_CHECKS += cxx_clangpp btard_cxx_clangpp
else
CC_CHECKS += skip-clang++
endif
ifeq ($(HAVE_CLANG),1)
CC_CHECKS += c99_clang gcc_clang_replay contract_refused
else
CC_CHECKS += skip-clang
endif
CC_TARGETS = $(addprefix cc-,$(CC_CHECKS))
.PHONY: $(CC_TARGETS)
compile-checks: $(CC_TARGETS)
$(CC_TARGETS): | cc-clear

cc-c99_gcc:
	$(call compile_check,c99_gcc,$(CC) -std=c99 -pedantic $(WFLAGS) tests/compile/single.c -o $(B)/cc_c99_gcc $(LDLIBS))
# a system header before vtrain.h under -std=c99: the #error that says to
# include vtrain.h first, and a build once _POSIX_C_SOURCE is on the line
cc-posix_late:
	@if ! $(CC) -std=c99 $(WFLAGS0) tests/compile/posix_late.c -o $(B)/cc_posix_late $(LDLIBS) > $(B)/cc_posix_late.log 2>&1 \
	    && grep -q 'include vtrain.h first' $(B)/cc_posix_late.log \
	    && $(CC) -std=c99 -D_POSIX_C_SOURCE=200809L $(WFLAGS0) tests/compile/posix_late.c -o $(B)/cc_posix_late $(LDLIBS) >> $(B)/cc_posix_late.log 2>&1 \
	    && ./$(B)/cc_posix_late >> $(B)/cc_posix_late.log 2>&1; \
	then echo "ok posix_late" > $(CCR)/posix_late; echo "compile check posix_late: ok"; \
	else echo "fail posix_late" > $(CCR)/posix_late; echo "compile check posix_late: FAILED"; cat $(B)/cc_posix_late.log; fi
# a build that breaks the numeric contract is refused at vt_create with a message saying why:
# $(call refused_check,NAME,COMMAND,MESSAGE) builds tests/compile/refused.c with COMMAND and runs it
define refused_check
	@if $(2) tests/compile/refused.c -o $(B)/cc_$(1) $(LDLIBS) > $(B)/cc_$(1).log 2>&1 && ./$(B)/cc_$(1) '$(3)' >> $(B)/cc_$(1).log 2>&1; \
	then echo "ok $(1)" > $(CCR)/$(1); echo "compile check $(1): ok"; \
	else echo "fail $(1)" > $(CCR)/$(1); echo "compile check $(1): FAILED"; cat $(B)/cc_$(1).log; fi
endef
# the implementation under -ffast-math does not compile (the #error that names the options); a program
# linked with -ffast-math (its startup code switches FTZ/DAZ on) around a clean implementation is refused at run time
cc-fast_math_refused:
	@if ! $(CC) -std=c99 -O2 $(ARCH) -ffast-math -c tests/compile/refused.c -o $(B)/cc_fm.o > $(B)/cc_fast_math_refused.log 2>&1 && \
	    grep -q "needs IEEE arithmetic as written" $(B)/cc_fast_math_refused.log && \
	    $(CC) -std=c99 -O2 $(ARCH) -ffp-contract=off -c tests/compile/refused.c -o $(B)/cc_fm.o >> $(B)/cc_fast_math_refused.log 2>&1 && \
	    $(CC) -ffast-math $(B)/cc_fm.o -o $(B)/cc_fast_math_refused $(LDLIBS) >> $(B)/cc_fast_math_refused.log 2>&1 && \
	    ./$(B)/cc_fast_math_refused 'flushes subnormal numbers to zero' >> $(B)/cc_fast_math_refused.log 2>&1; \
	then echo "ok fast_math_refused" > $(CCR)/fast_math_refused; echo "compile check fast_math_refused: ok"; \
	else echo "fail fast_math_refused" > $(CCR)/fast_math_refused; echo "compile check fast_math_refused: FAILED"; cat $(B)/cc_fast_math_refused.log; fi
# vtrain's own exp, log, ... give the same bits whatever the build's defaults: gcc -std=gnu99 (which
# contracts by default), clang's defaults (-ffp-contract=on) and -ffp-contract=off (both contracted
# them before their block had the pragmas: three builds, three hashes)
EL_BUILDS = $(CC) -std=c99 -O2 $(ARCH) -ffp-contract=off|$(CC) -std=gnu99 -O2 $(ARCH)$(if $(HAVE_CLANG),|clang -std=gnu99 -O2 $(ARCH))
cc-elementary_builds:
	@rm -f $(B)/cc_elementary_builds.log; ok=1; first=; k=0; builds='$(EL_BUILDS)'; IFS='|'; for cmd in $$builds; do k=$$((k + 1)); \
	  if ! eval "$$cmd -Wall -Wextra -Werror tests/compile/elementary.c -o $(B)/cc_el$$k $(LDLIBS)" >> $(B)/cc_elementary_builds.log 2>&1; then ok=0; break; fi; \
	  h=$$(./$(B)/cc_el$$k); echo "$$cmd: $$h" >> $(B)/cc_elementary_builds.log; \
	  if [ -z "$$first" ]; then first=$$h; elif [ "$$h" != "$$first" ]; then ok=0; fi; done; \
	if [ $$ok = 1 ]; then echo "ok elementary_builds" > $(CCR)/elementary_builds; echo "compile check elementary_builds: ok"; \
	else echo "fail elementary_builds" > $(CCR)/elementary_builds; echo "compile check elementary_builds: FAILED"; cat $(B)/cc_elementary_builds.log; fi
# clang -ffp-contract=fast contracts despite the pragma
cc-contract_refused:
	$(call refused_check,contract_refused,clang -std=c99 -O2 $(ARCH) -ffp-contract=fast,fuses a*b+c into fma)
cc-two_tus:
	$(call compile_check,two_tus,$(CC) -std=c99 $(WFLAGS0) tests/compile/impl.c tests/compile/user.c -o $(B)/cc_two_tus $(LDLIBS))
cc-static:
	$(call compile_check,static,$(CC) -std=c99 -DVTRAIN_STATIC $(WFLAGS0) -Wno-unused-function tests/compile/single.c -o $(B)/cc_static $(LDLIBS))
cc-no_threads:
	$(call compile_check,no_threads,$(CC) -std=gnu99 -DVTRAIN_NO_THREADS $(WFLAGS0) tests/compile/single.c -o $(B)/cc_no_threads -lm)
cc-no_simd:
	$(call compile_check,no_simd,$(CC) -std=c99 -DVTRAIN_NO_SIMD $(WFLAGS0) tests/compile/single.c -o $(B)/cc_no_simd $(LDLIBS))
cc-cxx_gpp:
	$(call compile_check,cxx_gpp,g++ -x c++ $(WFLAGS) tests/compile/single.c -o $(B)/cc_cxx_gpp $(LDLIBS))
cc-two_tus_cxx:
	$(call compile_check,two_tus_cxx,g++ -x c++ $(WFLAGS0) tests/compile/impl.c tests/compile/user.c -o $(B)/cc_two_tus_cxx $(LDLIBS))
cc-btard_cxx_gpp:
	$(call compile_check,btard_cxx_gpp,g++ -x c++ $(WFLAGS) $(BT_FLAGS) tests/compile/btard.c -o $(B)/cc_btard_cxx_gpp $(LDLIBS) $(BT_LIBS))
cc-skip-g++:
	$(call skip,g++,no g++: vtrain.h and vtrain_btard.h as C++ with g++ are not checked (apt-get install g++))
cc-cxx_clangpp:
	$(call compile_check,cxx_clangpp,clang++ -x c++ $(WFLAGS0) tests/compile/single.c -o $(B)/cc_cxx_clangpp $(LDLIBS))
cc-btard_cxx_clangpp:
	$(call compile_check,btard_cxx_clangpp,clang++ -x c++ $(WFLAGS0) $(BT_FLAGS) tests/compile/btard.c -o $(B)/cc_btard_cxx_clangpp $(LDLIBS) $(BT_LIBS))
cc-skip-clang++:
	$(call skip,clang++,no clang++: vtrain.h and vtrain_btard.h as C++ with clang++ are not checked (apt-get install clang))
# vtrain_btard.h after vtrain.h: C99, C++ with both compilers (above), two TUs, VTRAIN_STATIC and
# VTRAIN_NO_THREADS (its own #ifdef paths); single.c and impl.c/user.c stay vtrain.h alone
cc-btard_c99_gcc:
	$(call compile_check,btard_c99_gcc,$(CC) -std=c99 -pedantic $(WFLAGS0) $(BT_FLAGS) tests/compile/btard.c -o $(B)/cc_btard_c99_gcc $(LDLIBS) $(BT_LIBS))
cc-btard_two_tus:
	$(call compile_check,btard_two_tus,$(CC) -std=c99 $(WFLAGS0) $(BT_FLAGS) tests/compile/btard_impl.c tests/compile/btard_user.c -o $(B)/cc_btard_two_tus $(LDLIBS) $(BT_LIBS))
cc-btard_static:
	$(call compile_check,btard_static,$(CC) -std=c99 -DVTRAIN_STATIC $(WFLAGS0) $(BT_FLAGS) -Wno-unused-function tests/compile/btard.c -o $(B)/cc_btard_static $(LDLIBS) $(BT_LIBS))
cc-btard_no_threads:
	$(call compile_check,btard_no_threads,$(CC) -std=gnu99 -DVTRAIN_NO_THREADS $(WFLAGS0) $(BT_FLAGS) tests/compile/btard.c -o $(B)/cc_btard_no_threads -lm $(BT_LIBS))
# vtrain_btard.h's implementation without vtrain.h's before it: refused, with the message that names the order
cc-btard_order:
	@if ! $(CC) -std=c99 -fsyntax-only tests/compile/btard_order.c > $(B)/cc_btard_order.log 2>&1 && \
	    grep -q "vtrain.h's implementation is not in this file before it" $(B)/cc_btard_order.log; \
	then echo "ok btard_order" > $(CCR)/btard_order; echo "compile check btard_order: ok"; \
	else echo "fail btard_order" > $(CCR)/btard_order; echo "compile check btard_order: FAILED"; cat $(B)/cc_btard_order.log; fi
# without VTRAIN_SODIUM BTARD refuses to start, with a message (README), on every machine (the
# checks above build with libsodium where there is one): tests/compile/btard.c built without it
# must run, and print the refusal that names VTRAIN_SODIUM
cc-btard_no_sodium:
	@if $(CC) -std=c99 $(WFLAGS0) tests/compile/btard.c -o $(B)/cc_btard_no_sodium $(LDLIBS) > $(B)/cc_btard_no_sodium.log 2>&1 && \
	    ./$(B)/cc_btard_no_sodium >> $(B)/cc_btard_no_sodium.log 2>&1 && \
	    grep -q "^refused: .*built without VTRAIN_SODIUM" $(B)/cc_btard_no_sodium.log; \
	then echo "ok btard_no_sodium" > $(CCR)/btard_no_sodium; echo "compile check btard_no_sodium: ok"; \
	else echo "fail btard_no_sodium" > $(CCR)/btard_no_sodium; echo "compile check btard_no_sodium: FAILED"; cat $(B)/cc_btard_no_sodium.log; fi
cc-c99_clang:
	$(call compile_check,c99_clang,clang -std=c99 $(WFLAGS0) tests/compile/single.c -o $(B)/cc_c99_clang $(LDLIBS))
# a log written by a gcc build replays on a clang build, and the reverse
# (both -O2: the code each compiler makes of the hot loops is what differs)
cc-gcc_clang_replay:
	@if $(CC) -std=c99 -O2 $(ARCH) -Wall -Wextra -Werror tests/compile/cross.c -o $(B)/cc_xgcc $(LDLIBS) > $(B)/cc_cross.log 2>&1 && \
	    clang -std=c99 -O2 $(ARCH) -Wall -Wextra -Werror tests/compile/cross.c -o $(B)/cc_xclang $(LDLIBS) >> $(B)/cc_cross.log 2>&1 && \
	    ./$(B)/cc_xgcc train $(B)/cc_x1.vtlog >> $(B)/cc_cross.log 2>&1 && ./$(B)/cc_xclang audit $(B)/cc_x1.vtlog >> $(B)/cc_cross.log 2>&1 && \
	    ./$(B)/cc_xclang train $(B)/cc_x2.vtlog >> $(B)/cc_cross.log 2>&1 && ./$(B)/cc_xgcc audit $(B)/cc_x2.vtlog >> $(B)/cc_cross.log 2>&1; \
	then echo "ok gcc_clang_replay" > $(CCR)/gcc_clang_replay; echo "compile check gcc_clang_replay: ok"; \
	else echo "fail gcc_clang_replay" > $(CCR)/gcc_clang_replay; echo "compile check gcc_clang_replay: FAILED"; cat $(B)/cc_cross.log; fi
cc-skip-clang:
	$(call skip,clang,no clang: the clang C99 check and the gcc-to-clang log replay are not run (apt-get install clang))

# --- the CUDA backend (vtrain_cuda.cu.h) ------------------------------------
# nvcc compiles the kernels to PTX text (-fmad=false: no fused multiply-add,
# the numeric contract needs arithmetic as written; IEEE division and square
# root are nvcc's defaults), compute_90 for Hopper and a portable compute_75,
# and sed embeds both in a header. The host code needs only CUDA's headers:
# the driver and cuBLAS are opened at run time (dlopen), so these programs
# build, and test on the emulator, on machines without a GPU.
#   make cuda    the PTX, the CUDA tests and the GPU step bench
NVCC     ?= /usr/local/cuda/bin/nvcc
CUDA_INC ?= /usr/local/cuda/include
CU_CFLAGS = -I$(CUDA_INC) -I$(B)
CU_LIBS   = $(LDLIBS) -ldl
.PHONY: cuda cuda-compile-checks

$(B)/vtrain_cuda_%.ptx: vtrain_cuda.cu.h | $(B)
	$(NVCC) -ptx -arch=compute_$* -fmad=false -x cu $< -o $@

$(B)/vtrain_cuda_ptx.h: $(B)/vtrain_cuda_90.ptx $(B)/vtrain_cuda_75.ptx
	for a in 90 75; do echo "static const char vt__cuda_ptx_$$a[] ="; \
	  sed 's/\\/\\\\/g; s/"/\\"/g; s/^/"/; s/$$/\\n"/' $(B)/vtrain_cuda_$$a.ptx; echo ';'; done > $@

$(B)/test_cuda: tests/test_cuda.c tests/test.h tests/allops.h vtrain.h vtrain_cuda.cu.h $(B)/vtrain_cuda_ptx.h examples/chargpt.h examples/digitsmlp.h examples/digitscnn.h | $(B)
	$(CC) $(CFLAGS) $(CU_CFLAGS) $< -o $@ $(CU_LIBS)

$(B)/bench_gpu_step: bench/gpu_step.c vtrain.h vtrain_cuda.cu.h $(B)/vtrain_cuda_ptx.h examples/gpt2rand.h | $(B)
	$(CC) $(CFLAGS) $(CU_CFLAGS) $< -o $@ $(CU_LIBS)

$(B)/gpu_audit: tests/gpu/audit.c vtrain.h vtrain_cuda.cu.h $(B)/vtrain_cuda_ptx.h examples/chargpt.h examples/digitsmlp.h examples/gpt2rand.h examples/digitscnn.h | $(B)
	$(CC) $(CFLAGS) $(CU_CFLAGS) $< -o $@ $(CU_LIBS)

$(B)/bench_gpu_cnn: bench/cnn.c vtrain.h vtrain_cuda.cu.h $(B)/vtrain_cuda_ptx.h | $(B)
	$(CC) $(CFLAGS) $(CU_CFLAGS) -DVT_BENCH_CUDA $< -o $@ $(CU_LIBS)

# the command-line tool with the CUDA backend in it (`--backend cuda`; build/vtrain is CPU-only)
$(B)/vtrain_cuda: examples/vtrain.c vtrain.h vtrain_cuda.cu.h $(B)/vtrain_cuda_ptx.h examples/chargpt.h examples/digitscnn.h examples/cnnprog.h | $(B)
	$(CC) $(CFLAGS) $(CU_CFLAGS) -DVTRAIN_CUDA $< -o $@ $(CU_LIBS)

cuda: $(B)/test_cuda $(B)/bench_gpu_step $(B)/gpu_audit $(B)/bench_gpu_cnn $(B)/vtrain_cuda

# the CUDA host code as C99 with clang and as C++ with g++ and clang++
# (test_cuda is the gcc C99 build), and from two translation units; each
# trains a little on the emulator
HAVE_CUDA := $(shell command -v $(NVCC) >/dev/null 2>&1 && [ -f $(CUDA_INC)/cuda.h ] && echo 1)
CU_CHECKS = cuda_two_tus $(if $(HAVE_CLANG),cuda_c99_clang) $(if $(HAVE_GXX),cuda_cxx_gpp) $(if $(HAVE_CLANGXX),cuda_cxx_clangpp)
CU_TARGETS = $(addprefix cc-,$(CU_CHECKS))
.PHONY: $(CU_TARGETS)
cuda-compile-checks: compile-checks $(CU_TARGETS)
$(CU_TARGETS): $(B)/vtrain_cuda_ptx.h | cc-clear
cc-cuda_c99_clang:
	$(call compile_check,cuda_c99_clang,clang -std=c99 $(WFLAGS0) $(CU_CFLAGS) tests/compile/cuda.c -o $(B)/cc_cuda_c99_clang $(CU_LIBS))
cc-cuda_cxx_gpp:
	$(call compile_check,cuda_cxx_gpp,g++ -x c++ $(WFLAGS) $(CU_CFLAGS) tests/compile/cuda.c -o $(B)/cc_cuda_cxx_gpp $(CU_LIBS))
cc-cuda_cxx_clangpp:
	$(call compile_check,cuda_cxx_clangpp,clang++ -x c++ $(WFLAGS0) $(CU_CFLAGS) tests/compile/cuda.c -o $(B)/cc_cuda_cxx_clangpp $(CU_LIBS))
cc-cuda_two_tus:
	$(call compile_check,cuda_two_tus,$(CC) -std=c99 $(WFLAGS0) $(CU_CFLAGS) tests/compile/cuda_impl.c tests/compile/cuda_user.c -o $(B)/cc_cuda_two_tus $(CU_LIBS))

# the MPI programs of tests/mpi_run.sh and tests/dp_run.sh (Open MPI's mpicc;
# test_dp_mpi holds the CUDA emulator when the toolkit is here). make test
# builds them with everything else, on every core, so that the scripts,
# which run alone, find them built; run by hand, each script makes its own.
HAVE_MPI := $(shell command -v $(MPICC) >/dev/null 2>&1 && command -v mpirun >/dev/null 2>&1 && echo 1)
$(B)/test_btard_mpi: tests/test_btard_mpi.c tests/test.h vtrain.h vtrain_btard.h | $(B)
	$(MPICC) -DVTRAIN_MPI -DVTRAIN_SODIUM $(CFLAGS) $< -o $@ $(LDLIBS) -lsodium
$(B)/test_dp_mpi: tests/test_dp_mpi.c vtrain.h vtrain_dp.h examples/digitsmlp.h examples/chargpt.h $(if $(HAVE_CUDA),vtrain_cuda.cu.h $(B)/vtrain_cuda_ptx.h) | $(B)
	$(MPICC) $(CFLAGS) $(if $(HAVE_CUDA),-DVTRAIN_CUDA -DVTRAIN_CUDA_EMU $(CU_CFLAGS)) $< -o $@ $(LDLIBS) $(if $(HAVE_CUDA),-ldl)

# make test: everything this machine can build and run; each optional group
# it cannot is one "skipped:" line (tests/run.sh ends "N passed, M failed"
# and adds ", K skipped" when K > 0)
ifeq ($(HAVE_CUDA),1)
TEST_CUDA = cuda-compile-checks $(B)/test_cuda $(B)/vtrain_cuda
else
TEST_CUDA = compile-checks
endif
# tests/run.sh runs the first list side by side, one per core; the BTARD
# tests and the scripts that start peer processes or time-limited swarms
# run alone after them (their deadlines are real time)
TESTS_SER = $(B)/test_btard $(B)/test_btard_byz $(B)/test_btard_cnn $(B)/test_btard_join
TESTS_PAR = $(filter-out $(TESTS_SER),$(TESTS))
# the programs the serial scripts run, built here beside the rest
TEST_SCRIPT_PROGS = $(if $(and $(HAVE_SODIUM),$(HAVE_ZMQ)),$(B)/btard_peer $(B)/zmq_slots) \
                    $(if $(HAVE_MPI),$(if $(HAVE_SODIUM),$(B)/test_btard_mpi) $(B)/test_dp_mpi)
test: $(TESTS) $(EXAMPLES) $(TEST_CUDA) $(if $(HAVE_QUADMATH),$(B)/test_bounds) $(TEST_SCRIPT_PROGS)
ifneq ($(HAVE_CUDA),1)
	$(call skip,cuda,no nvcc at $(NVCC) or no cuda.h in $(CUDA_INC): the CUDA kernels are not compiled to PTX and the CUDA backend is not tested on its emulator (the NVIDIA CUDA toolkit: Debian nvidia-cuda-toolkit; or set NVCC= and CUDA_INC=))
endif
ifneq ($(HAVE_QUADMATH),1)
	$(call skip,bounds,no libquadmath: the bound-hunting test against __float128 is not run (gcc on x86 brings it: libquadmath0))
endif
	@bash tests/run.sh $(if $(HAVE_CUDA),$(B)/test_cuda) "tests/examples_golden.sh --part rest" $(TESTS_PAR) \
	  $(if $(HAVE_QUADMATH),$(B)/test_bounds) tests/test_cli.sh \
	  --serial $(TESTS_SER) tests/mpi_run.sh tests/dp_run.sh tests/tcp_run.sh "tests/examples_golden.sh --part swarm"

bench: bench-step bench-logsize bench-transcript bench-gemm
bench-logsize: $(B)/bench_logsize
	./$(B)/bench_logsize
bench-step: $(B)/bench_step
	./$(B)/bench_step
# bench-gemm: ours against OpenBLAS's kernel for our kernel's ISA (the bench
# refuses an older one), square and the bench GPT's layer products at width
# 512; on an AVX-512 machine also our AVX2 kernel against OpenBLAS's AVX2
# (Haswell) kernel
bench-gemm: $(B)/bench_gemm
	./$(B)/bench_gemm
	@echo; echo 'layer products of the bench GPT at width 512 (B8 T64):'
	./$(B)/bench_gemm --layers 512 --threads 1,2 --rounds 5
	@if grep -qw avx512f /proc/cpuinfo 2>/dev/null; then echo; echo 'the AVX2 kernels: VTRAIN_SIMD=avx2 OPENBLAS_CORETYPE=Haswell'; \
	  VTRAIN_SIMD=avx2 OPENBLAS_CORETYPE=Haswell ./$(B)/bench_gemm; fi
# vtrain's step beside PyTorch binary32, binary64 and the paper's method (installs nothing)
bench-torch: $(B)/bench_step
	@python3 -c 'import torch' 2>/dev/null || { echo 'bench-torch needs PyTorch: pip install torch --index-url https://download.pytorch.org/whl/cpu (or pip install torch, from PyPI)'; exit 1; }
	python3 bench/torch_step.py --vtrain ./$(B)/bench_step
# a 2-thread step against a 1-thread step while another process keeps one core busy
bench-load: $(B)/bench_step
	bash bench/load.sh ./$(B)/bench_step
bench-transcript: $(B)/bench_transcript
	./$(B)/bench_transcript
# BTARD: overhead over a plain all-reduce (in-process), and bans over 20 seeds per attack
bench-btard: $(B)/bench_btard
	./$(B)/bench_btard overhead
	./$(B)/bench_btard overhead --batch 256 --steps 40
	./$(B)/bench_btard bans --seeds 20
# shards: the cross-shard sum's cost and entries beside the step's other points; -np 2 x 1 thread
# against 1 process x 2 threads (needs Open MPI)
bench-dp:
	bash bench/dp.sh
# the overhead with 16 peers as MPI ranks
bench-btard-mpi: $(B)/bench_btard_mpi
	$(MPIRUN) -np 16 ./$(B)/bench_btard_mpi
	$(MPIRUN) -np 16 ./$(B)/bench_btard_mpi --batch 256 --steps 40

clean:
	rm -rf $(B)
