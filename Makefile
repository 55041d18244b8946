# heapprof build. `make` builds the libraries and the CLI, `make test` runs
# every test, `make demo` profiles the bundled example. The test and demo
# targets install missing Debian packages first (apt-get, as root).
#
#   build/libheapprof.so  preload / link library: capture + format + serve
#   build/libheapprof.a   the same, for static linking
#   build/heapprof        the CLI: format + ops + cli (never capture code)

CC      ?= gcc
ifeq ($(origin CC),default)
CC      := gcc
endif
CXX     ?= g++
OPT     ?= -O2
CFLAGS  ?= $(OPT) -g
WARN    := -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter
ALLCFLAGS := -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) -fPIC -fvisibility=hidden \
	-Iinclude -Isrc/common -Isrc/format -MMD -MP
LIBS    := -lz -lm -ldl -lpthread

B := build

COMMON_SRC  := $(wildcard src/common/*.c)
FORMAT_SRC  := $(wildcard src/format/*.c)
OPS_SRC     := $(wildcard src/ops/*.c)
COLLECT_SRC := $(wildcard src/collect/*.c)
SERVE_SRC   := $(wildcard src/serve/*.c)
CLI_SRC     := $(wildcard cli/*.c)

obj = $(patsubst %.c,$(B)/obj/%.o,$(1))
COMMON_OBJ  := $(call obj,$(COMMON_SRC))
FORMAT_OBJ  := $(call obj,$(FORMAT_SRC))
OPS_OBJ     := $(call obj,$(OPS_SRC))
COLLECT_OBJ := $(call obj,$(COLLECT_SRC))
SERVE_OBJ   := $(call obj,$(SERVE_SRC))
CLI_OBJ     := $(call obj,$(CLI_SRC))

# The tool half: everything a profile-processing program needs.
TOOL_OBJ := $(COMMON_OBJ) $(FORMAT_OBJ) $(OPS_OBJ)
# The in-process half.
LIB_OBJ  := $(COMMON_OBJ) $(FORMAT_OBJ) $(OPS_OBJ) $(COLLECT_OBJ) $(SERVE_OBJ)

UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(patsubst tests/unit/%.c,$(B)/tests/%,$(UNIT_SRC))
ITEST_C  := $(wildcard tests/integration/prog_*.c)
ITEST_CC := $(wildcard tests/integration/prog_*.cc)
ITEST_BIN := $(patsubst tests/integration/%.c,$(B)/tests/%,$(ITEST_C)) \
	$(patsubst tests/integration/%.cc,$(B)/tests/%,$(ITEST_CC))
BENCH_SRC := $(wildcard bench/*.c)
BENCH_BIN := $(patsubst bench/%.c,$(B)/bench/%,$(BENCH_SRC))

.PHONY: all test demo deps deps-test clean fuzz bench
all: $(B)/libheapprof.so $(B)/libheapprof.a $(B)/heapprof

$(B)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) -c $< -o $@

$(B)/libheapprof.so: $(LIB_OBJ) src/collect/exports.map
	$(CC) -shared -Wl,-z,nodelete -Wl,-z,now -Wl,--version-script=src/collect/exports.map -o $@ $(LIB_OBJ) $(LIBS)

$(B)/libheapprof.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(B)/heapprof: $(CLI_OBJ) $(TOOL_OBJ)
	$(CC) -o $@ $^ -lz -lm

# `heapprof flame`'s page: cli/flame_template.html as a C array (od and sed
# only), included by cli/cmd_flame.c from $(B)/gen.
$(B)/gen/flame_template.h: cli/flame_template.html
	@mkdir -p $(dir $@)
	{ echo '/* generated from $< by the Makefile */'; \
	  echo 'static const char heapprof_flame_template[] = {'; \
	  od -An -v -tx1 $< | sed 's/ *$$//; s/ \([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	  echo '0x00};'; } >$@.tmp && mv $@.tmp $@
$(B)/obj/cli/cmd_flame.o: $(B)/gen/flame_template.h
$(B)/obj/cli/cmd_flame.o: ALLCFLAGS += -I$(B)/gen

# Unit tests: test_collect_* link the capture modules (without interpose.o).
# They link the capture modules that need no process-wide set-up (the test
# defines the globals those use): no constructor, no interposed malloc.
COLLECT_UNIT_OBJ := $(addprefix $(B)/obj/src/collect/,sampler.o range.o bucket.o arena.o stack.o unwind.o)
$(B)/tests/test_collect_%: tests/unit/test_collect_%.c $(COLLECT_UNIT_OBJ) $(TOOL_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) -fno-omit-frame-pointer -Itests -Isrc/collect -o $@ $^ $(LIBS)
# The endpoint's request parser is pure: tested without the capture half.
$(B)/tests/test_http_req: tests/unit/test_http_req.c $(B)/obj/src/serve/http_req.o $(TOOL_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) -Itests -Isrc/serve -o $@ $^ $(LIBS)
$(B)/tests/test_%: tests/unit/test_%.c $(TOOL_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) -Itests -Isrc/ops -o $@ $^ $(LIBS)
# Integration programs: plain programs, profiled from outside. -O1 and frame
# pointers so known call sites stay distinct and both unwinders work.
$(B)/tests/prog_%: tests/integration/prog_%.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O1 -g -fno-omit-frame-pointer -fno-inline -Iinclude -o $@ $< -lpthread -ldl -lm
$(B)/tests/prog_%: tests/integration/prog_%.cc
	@mkdir -p $(dir $@)
	$(CXX) -O1 -g -fno-omit-frame-pointer -fno-inline -o $@ $< -lpthread
# Reliability programs (tests/reliability/): the integration programs
# flags plus warnings as errors; librchurn.so is what rprog_dlchurn loads;
# rprog_secure_linked links the static library (setuid test).
RTEST_C  := $(wildcard tests/reliability/rprog_*.c)
RTEST_CC := $(wildcard tests/reliability/rprog_*.cc)
RTEST_BIN := $(patsubst tests/reliability/%.c,$(B)/tests/%,$(RTEST_C)) \
	$(patsubst tests/reliability/%.cc,$(B)/tests/%,$(RTEST_CC)) \
	$(B)/tests/librchurn.so $(B)/tests/rprog_secure_linked
# rprog_unwind: -O2 without frame pointers, so only CFI can walk it.
$(B)/tests/rprog_unwind: tests/reliability/rprog_unwind.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -g -fomit-frame-pointer $(WARN) -o $@ $<
$(B)/tests/rprog_unwindxx: tests/reliability/rprog_unwindxx.cc
	@mkdir -p $(dir $@)
	$(CXX) -std=c++17 -O2 -g -fomit-frame-pointer $(WARN) -o $@ $<
$(B)/tests/rprog_%: tests/reliability/rprog_%.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O1 -g -fno-omit-frame-pointer -fno-inline $(WARN) -Iinclude -o $@ $< -lpthread -ldl
$(B)/tests/rprog_%: tests/reliability/rprog_%.cc
	@mkdir -p $(dir $@)
	$(CXX) -std=c++17 -fsized-deallocation -O1 -g -fno-omit-frame-pointer -fno-inline $(WARN) -o $@ $< -lpthread
$(B)/tests/librchurn.so: tests/reliability/rlib_churn.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O1 -g -fPIC -shared $(WARN) -o $@ $<
$(B)/tests/rprog_secure_linked: tests/reliability/rprog_secure.c $(B)/libheapprof.a
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O1 -g $(WARN) -o $@ $< $(B)/libheapprof.a $(LIBS)
tests-build: $(RTEST_BIN)
# The long tier of tests/reliability (REL_TIER=stress): more iterations,
# 200 kill -9s, CPython's regression suite under the profiler.
.PHONY: stress
stress: deps-test
	$(MAKE) all tests-build
	REL_TIER=stress sh tests/reliability/stress.sh

# bench_merge links the tool half too (merge and pprof decoder).
$(B)/bench/bench_merge: bench/bench_merge.c $(TOOL_OBJ)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -g -Iinclude -o $@ $< $(TOOL_OBJ) -lz -lm
# bench_symbolize links the tool half (DWARF and ELF symbolizers, decoder).
$(B)/bench/bench_symbolize: bench/bench_symbolize.c $(TOOL_OBJ)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -g -Iinclude -Isrc/common -Isrc/format -o $@ $^ -lz -lm
# bench_delta links the tool half (delta computer and pprof decoder).
$(B)/bench/bench_delta: bench/bench_delta.c $(TOOL_OBJ)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -g -Iinclude -Isrc/common -Isrc/format -o $@ $^ -lz -lm
# bench_unwind links the capture's unwinders (stack.o, unwind.o).
$(B)/bench/bench_unwind: bench/bench_unwind.c $(B)/obj/src/collect/stack.o $(B)/obj/src/collect/unwind.o
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -g -fno-omit-frame-pointer -Iinclude -Isrc/common -Isrc/collect -o $@ $^ -ldl -lpthread
$(B)/bench/%: bench/%.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -g -Iinclude -o $@ $< -lpthread -ldl -lm
# The floor for the capture benchmarks: a bare forwarding malloc shim. It lives
# in bench/shim/ so the bench/*.c wildcard above does not build it as a program.
$(B)/bench/libshim.so: bench/shim/shim.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -g -fPIC -shared -fvisibility=hidden -o $@ $< -ldl
bench: $(B)/bench/libshim.so
$(B)/examples/leaky: examples/leaky.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O1 -g -fno-inline -o $@ $< -lpthread

# Debian packages: what building needs, and what the tests need on top.
DEBS_BUILD := gcc g++ make pkg-config zlib1g-dev libdw-dev
# libunwind8: only the HEAPPROF_UNWIND=libunwind opt-in, compared in tests.
DEBS_TEST  := libunwind8 golang-go golang-github-google-pprof-dev clang libclang-rt-14-dev \
	python3 sqlite3 procps chromium libjemalloc-dev
deps:
	@DEBS="$(DEBS_BUILD)" sh tools/apt-ensure.sh
deps-test:
	@DEBS="$(DEBS_BUILD) $(DEBS_TEST)" sh tools/apt-ensure.sh

test: deps-test
	$(MAKE) all tests-build
	sh tests/run.sh

tests-build: $(UNIT_BIN) $(ITEST_BIN) $(BENCH_BIN) $(B)/examples/leaky

demo: deps
	$(MAKE) all $(B)/examples/leaky
	sh examples/demo.sh

bench: all $(BENCH_BIN)

clean:
	rm -rf $(B)

# Go oracle helper for the tests, built offline against Debian's
# golang-github-google-pprof-dev (tests/oracle/lib.sh builds it on demand too).
$(B)/pprofcheck: tests/oracle/pprofcheck/main.go
	@mkdir -p $(B)/gocache
	cd tests/oracle/pprofcheck && GO111MODULE=off GOPATH=/usr/share/gocode \
		GOFLAGS= GOPROXY=off GOCACHE=$(CURDIR)/$(B)/gocache go build -o $(CURDIR)/$@ .

# Fuzzing (fuzz/): `make fuzz` builds the libFuzzer targets with clang;
# the replay binaries run the seed corpus without libFuzzer (gcc + ASan and
# UBSan), from fuzz/replay.sh in `make test`.
FUZZ_TARGETS := $(patsubst fuzz/%.c,%,$(wildcard fuzz/fuzz_*.c))
FUZZ_SRC  := $(COMMON_SRC) $(FORMAT_SRC) $(OPS_SRC) src/serve/http_req.c
FUZZ_CC   ?= clang
FUZZ_FLAGS := -std=c11 -D_GNU_SOURCE -g -O1 $(WARN) -Iinclude -Isrc/common \
	-Isrc/format -Isrc/ops -Ifuzz
fuzz: $(patsubst %,$(B)/fuzz/%,$(FUZZ_TARGETS))
.PHONY: fuzz-replay
fuzz-replay: $(patsubst fuzz_%,$(B)/fuzz/replay_%,$(FUZZ_TARGETS))
$(B)/fuzz/fuzz_%: fuzz/fuzz_%.c fuzz/fuzz_util.h $(FUZZ_SRC)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=undefined -o $@ $< $(FUZZ_SRC) -lz -lm
$(B)/fuzz/replay_%: fuzz/fuzz_%.c fuzz/replay.c fuzz/fuzz_util.h $(FUZZ_SRC)
	@mkdir -p $(dir $@)
	$(CC) $(FUZZ_FLAGS) -fsanitize=address,undefined \
		-fno-sanitize-recover=undefined -o $@ $< fuzz/replay.c $(FUZZ_SRC) -lz -lm

-include $(shell find $(B)/obj -name '*.d' 2>/dev/null)

# The frame-pointer unwinder walks through the profiler's own frames; the
# entry points (interpose.c) have none and must tail-call their slow paths.
$(B)/obj/src/collect/%.o: ALLCFLAGS += -fno-omit-frame-pointer
$(B)/obj/src/collect/interpose.o: ALLCFLAGS += -fomit-frame-pointer -foptimize-sibling-calls
