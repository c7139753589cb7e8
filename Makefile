# vtrain: examples, tests and benches. Users need none of this: copy vtrain.h.
#
#   make demo    train the character GPT, audit it in another order, compare native
#   make test    the test suite (last line: "N passed, M failed")
#   make bench   benches (bench-gemm needs libopenblas-dev)
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

EXAMPLES = $(B)/train_digits $(B)/train_chargpt $(B)/demo $(B)/vtrain $(B)/nondeterminism_lab
TESTS    = $(B)/test_core $(B)/test_grad $(B)/test_reference $(B)/test_replay $(B)/test_transcript
BENCHES  = $(B)/bench_step $(B)/bench_logsize $(B)/bench_transcript

.PHONY: all demo lab fuzz test-asan test bench bench-gemm bench-step bench-logsize bench-transcript clean compile-checks

all: $(EXAMPLES) $(TESTS) $(BENCHES)

$(B):
	@mkdir -p $(B)

$(B)/%: examples/%.c vtrain.h | $(B)
	$(CC) $(CFLAGS) $< -o $@ $(LDLIBS)

$(B)/test_%: tests/test_%.c tests/test.h vtrain.h | $(B)
	$(CC) $(CFLAGS) $< -o $@ $(LDLIBS)

$(B)/bench_step: bench/step.c vtrain.h | $(B)
	$(CC) $(CFLAGS) $< -o $@ $(LDLIBS)

$(B)/bench_logsize: bench/logsize.c vtrain.h examples/chargpt.h | $(B)
	$(CC) $(CFLAGS) $< -o $@ $(LDLIBS)

$(B)/bench_transcript: bench/transcript.c vtrain.h examples/chargpt.h | $(B)
	$(CC) $(CFLAGS) $< -o $@ $(LDLIBS)

$(B)/bench_gemm: bench/gemm.c vtrain.h | $(B)
	$(CC) $(CFLAGS) $< -o $@ $(LDLIBS) -lopenblas

demo: $(B)/demo
	./$(B)/demo

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
test-asan: | $(B)
	@mkdir -p $(B)/asan
	@for t in core grad reference replay transcript; do \
	  $(CC) $(ASAN_FLAGS) tests/test_$$t.c -o $(B)/asan/test_$$t $(LDLIBS) || exit 1; done
	@bash tests/run.sh $(B)/asan/test_core $(B)/asan/test_grad $(B)/asan/test_reference $(B)/asan/test_replay $(B)/asan/test_transcript

# Compile checks: C99 and C++ with gcc and clang, two translation units,
# VTRAIN_STATIC, VTRAIN_NO_THREADS. Each one also links and runs.
WFLAGS = -O1 $(ARCH) -ffp-contract=off -Wall -Wextra -Werror
define compile_check
	@if $(2) > $(B)/cc_$(1).log 2>&1 && ./$(B)/cc_$(1) $(B)/cc_$(1).vtlog >> $(B)/cc_$(1).log 2>&1; \
	then echo "ok $(1)" >> $(B)/compile_checks.txt; echo "compile check $(1): ok"; \
	else echo "fail $(1)" >> $(B)/compile_checks.txt; echo "compile check $(1): FAILED"; cat $(B)/cc_$(1).log; fi
endef

compile-checks: | $(B)
	@rm -f $(B)/compile_checks.txt
	$(call compile_check,c99_gcc,gcc -std=c99 -pedantic $(WFLAGS) tests/compile/single.c -o $(B)/cc_c99_gcc $(LDLIBS))
	$(call compile_check,c99_clang,clang -std=c99 $(WFLAGS) tests/compile/single.c -o $(B)/cc_c99_clang $(LDLIBS))
	$(call compile_check,cxx_gpp,g++ -x c++ $(WFLAGS) tests/compile/single.c -o $(B)/cc_cxx_gpp $(LDLIBS))
	$(call compile_check,cxx_clangpp,clang++ -x c++ $(WFLAGS) tests/compile/single.c -o $(B)/cc_cxx_clangpp $(LDLIBS))
	$(call compile_check,two_tus,gcc -std=c99 $(WFLAGS) tests/compile/impl.c tests/compile/user.c -o $(B)/cc_two_tus $(LDLIBS))
	$(call compile_check,two_tus_cxx,g++ -x c++ $(WFLAGS) tests/compile/impl.c tests/compile/user.c -o $(B)/cc_two_tus_cxx $(LDLIBS))
	$(call compile_check,static,gcc -std=c99 -DVTRAIN_STATIC $(WFLAGS) -Wno-unused-function tests/compile/single.c -o $(B)/cc_static $(LDLIBS))
	$(call compile_check,no_threads,gcc -std=gnu99 -DVTRAIN_NO_THREADS $(WFLAGS) tests/compile/single.c -o $(B)/cc_no_threads -lm)
	$(call compile_check,no_simd,gcc -std=c99 -DVTRAIN_NO_SIMD $(WFLAGS) tests/compile/single.c -o $(B)/cc_no_simd $(LDLIBS))
	@# a log written by a gcc build replays on a clang build, and the reverse
	@if gcc -std=c99 -O2 $(ARCH) -Wall -Wextra -Werror tests/compile/cross.c -o $(B)/cc_xgcc $(LDLIBS) > $(B)/cc_cross.log 2>&1 && \
	    clang -std=c99 -O2 $(ARCH) -Wall -Wextra -Werror tests/compile/cross.c -o $(B)/cc_xclang $(LDLIBS) >> $(B)/cc_cross.log 2>&1 && \
	    ./$(B)/cc_xgcc train $(B)/cc_x1.vtlog >> $(B)/cc_cross.log 2>&1 && ./$(B)/cc_xclang audit $(B)/cc_x1.vtlog >> $(B)/cc_cross.log 2>&1 && \
	    ./$(B)/cc_xclang train $(B)/cc_x2.vtlog >> $(B)/cc_cross.log 2>&1 && ./$(B)/cc_xgcc audit $(B)/cc_x2.vtlog >> $(B)/cc_cross.log 2>&1; \
	then echo "ok gcc_clang_replay" >> $(B)/compile_checks.txt; echo "compile check gcc_clang_replay: ok"; \
	else echo "fail gcc_clang_replay" >> $(B)/compile_checks.txt; echo "compile check gcc_clang_replay: FAILED"; cat $(B)/cc_cross.log; fi

test: $(TESTS) compile-checks
	@bash tests/run.sh $(TESTS)

bench: bench-step bench-logsize bench-transcript bench-gemm
bench-logsize: $(B)/bench_logsize
	./$(B)/bench_logsize
bench-step: $(B)/bench_step
	./$(B)/bench_step
bench-gemm: $(B)/bench_gemm
	./$(B)/bench_gemm
bench-transcript: $(B)/bench_transcript
	./$(B)/bench_transcript

clean:
	rm -rf $(B)
