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
	-Iinclude -Isrc/common -Isrc/pprof -Isrc/legacy -Isrc/symbols -MMD -MP
LIBS    := -lz -lm -ldl -lpthread

B := build

COMMON_SRC  := $(wildcard src/common/*.c)
FORMAT_SRC  := $(wildcard src/pprof/*.c src/legacy/*.c src/symbols/*.c)
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
# The attach code (only a `heapprof attach` runs it) is linked last: first
# among the collect objects by name, its code and data shifted everything
# a process touches at start-up (+3 page faults per exec of /bin/true with
# attach_symval.c, rel.cost.exec_faults).
ATTACH_OBJ := $(filter %/attach.o %/attach_symval.o %/attach_http.o,$(COLLECT_OBJ) $(SERVE_OBJ))
LIB_OBJ  := $(COMMON_OBJ) $(FORMAT_OBJ) $(OPS_OBJ) \
	$(filter-out $(ATTACH_OBJ),$(COLLECT_OBJ) $(SERVE_OBJ)) $(ATTACH_OBJ)

UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(patsubst tests/unit/%.c,$(B)/tests/%,$(UNIT_SRC))
ITEST_C  := $(wildcard tests/integration/prog_*.c)
ITEST_CC := $(wildcard tests/integration/prog_*.cc)
ITEST_BIN := $(patsubst tests/integration/%.c,$(B)/tests/%,$(ITEST_C)) \
	$(patsubst tests/integration/%.cc,$(B)/tests/%,$(ITEST_CC)) \
	$(B)/tests/prog_customlabels1
BENCH_SRC := $(wildcard bench/*.c)
BENCH_BIN := $(patsubst bench/%.c,$(B)/bench/%,$(BENCH_SRC))

.PHONY: all test demo deps deps-test clean fuzz bench check-deps
all: $(B)/libheapprof.so $(B)/libheapprof.a $(B)/heapprof

# The headers a build needs and their Debian packages: a missing one stops
# `make` before any compiler error, naming the packages (tools/check-deps.sh).
DEP_HEADERS := zlib.h:zlib1g-dev elfutils/libdw.h:libdw-dev dwarf.h:libdw-dev \
	sys/sdt.h:systemtap-sdt-dev
check-deps:
	@sh tools/check-deps.sh "$(CC)" $(DEP_HEADERS)

$(B)/obj/%.o: %.c | check-deps
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) -c $< -o $@

# Binding (issue 15): code that runs on the program's stack inside malloc
# or a signal handler (the capture modules, dump.c until it switches to its
# own stack, the common helpers) calls libc through GOT entries (-fno-plt),
# bound when the library is loaded: never the lazy resolver there, which
# saves the register file on the stack (2.5 KiB; coroutine stacks
# overflowed, RELIABILITY.md). The rest (symbolizing, encoding, gzip, the
# endpoint, push: on the dump stack or their own threads) binds lazily, so
# a process that never dumps never looks those symbols up (-z now cost
# /bin/true ~60 k instructions of lookups).
# snapshot.c, loaded_ids.c, age_split.c and allocstats.c run only in dumps (on the dump stack, the
# endpoint's thread, or an API caller's stack, which the encoder needs
# anyway): lazy. So do unloaded.c and unload_hook.c (dumps, and the
# program's dlclose, never inside malloc), and
# otel_procctx.c (the constructor, the program's prctl, dumps), and
# config.c and parse.c, which run once, in the constructor: a process
# binds only the few of their calls it makes (101 -> 76 symbols bound at
# load; /bin/true +104 k -> +90 k instructions, BENCHMARKS.md).
EAGER_OBJ := $(filter-out %/attach.o %/attach_symval.o %/otel_procctx.o %/snapshot.o %/loaded_ids.o %/age_split.o %/allocstats.o %/config.o %/limits.o %/unloaded.o %/unload_hook.o,$(COLLECT_OBJ)) \
	$(filter-out %/parse.o,$(COMMON_OBJ)) $(B)/obj/src/serve/dump.o $(B)/obj/src/serve/dump_stack.o \
	$(B)/obj/src/serve/rolling.o
$(EAGER_OBJ): ALLCFLAGS += -fno-plt
SO_OBJ  := $(LIB_OBJ)
# -fini: DT_FINI is a cold empty function beside the start-up code
# (init.c's heapprof__fini), not crti's _fini after all the other code: one
# code page fewer at the exit of a program that never called malloc.
# zlib is linked in (Debian's libz.a is position-independent), its
# symbols local (--exclude-libs and the version script): a dump never
# loads a library. Loaded as libz.so.1 on first use before, its dlopen
# hung fork children of threaded processes (the loader's write lock,
# which glibc 2.36 does not reset in a child) and nested in a dlopen a
# signal handler had interrupted; and a dlopen'ed plugin that brought its
# own libz.so.1 got the system's (RELIABILITY.md). Linked as NEEDED it
# would cost every process its loading (~35 k instructions, /bin/true).
# libm: hpmath.h.
SO_LIBS := -Wl,--exclude-libs,libz.a -Wl,-Bstatic -lz -Wl,-Bdynamic -ldl -lpthread
$(B)/libheapprof.so: $(SO_OBJ) src/collect/exports.map
	$(CC) -shared -Wl,-z,nodelete -Wl,--sort-section=name -Wl,-fini=heapprof__fini -Wl,--version-script=src/collect/exports.map -o $@ $(SO_OBJ) $(SO_LIBS)

# The static library leaves the program's signals, _exit and dlclose alone
# (src/collect/ending.c, unload_hook.c: a fully static link would define
# _exit and dlclose twice).
$(B)/libheapprof.a: $(filter-out %/ending.o %/unload_hook.o,$(LIB_OBJ))
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
COLLECT_UNIT_OBJ := $(addprefix $(B)/obj/src/collect/,sampler.o range.o range_exact.o range_lock.o bucket.o arena.o stack.o unwind.o loaded_ids.o)
$(B)/tests/test_collect_%: tests/unit/test_collect_%.c $(COLLECT_UNIT_OBJ) $(TOOL_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) -fno-omit-frame-pointer -Itests -Isrc/collect -o $@ $(filter %.c %.o,$^) $(LIBS)
# The endpoint's request parser is pure: tested without the capture half.
$(B)/tests/test_http_req: tests/unit/test_http_req.c $(B)/obj/src/serve/http_req.o $(TOOL_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) -Itests -Isrc/serve -o $@ $(filter %.c %.o,$^) $(LIBS)
# top --error's arithmetic lives in the CLI (cli/top_err.c).
$(B)/tests/test_top_err: tests/unit/test_top_err.c $(B)/obj/cli/top_err.o $(B)/obj/cli/top_fmt.o $(TOOL_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) -Itests -Icli -o $@ $(filter %.c %.o,$^) $(LIBS)
$(B)/tests/test_%: tests/unit/test_%.c $(TOOL_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) -Itests -Isrc/ops -o $@ $(filter %.c %.o,$^) $(LIBS)
# Integration programs: plain programs, profiled from outside. -O1 and frame
# pointers so known call sites stay distinct and both unwinders work.
# prog_otel: -rdynamic, so its otel_thread_ctx_v1 is in .dynsym (OTEP 4947).
$(B)/tests/prog_otel: tests/integration/prog_otel.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O1 -g -fno-omit-frame-pointer -fno-inline -rdynamic -o $@ $<
# prog_customlabels(1): -rdynamic too (custom labels ABI v0; v1).
$(B)/tests/prog_customlabels: tests/integration/prog_customlabels.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O1 -g -fno-omit-frame-pointer -fno-inline -rdynamic -o $@ $< -lpthread
$(B)/tests/prog_customlabels1: tests/integration/prog_customlabels.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -DCL_V1 -O1 -g -fno-omit-frame-pointer -fno-inline -rdynamic -o $@ $< -lpthread
# prog_otelreview: -rdynamic too (its read() must bind heapprof's calls).
$(B)/tests/prog_otelreview: tests/integration/prog_otelreview.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O1 -g -fno-omit-frame-pointer -fno-inline -rdynamic -o $@ $< -lpthread
$(B)/tests/prog_%: tests/integration/prog_%.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O1 -g -fno-omit-frame-pointer -fno-inline -Iinclude -o $@ $< -lpthread -ldl -lm
$(B)/tests/prog_%: tests/integration/prog_%.cc
	@mkdir -p $(dir $@)
	$(CXX) -O1 -g -fno-omit-frame-pointer -fno-inline -o $@ $< -lpthread
# Reliability programs (tests/reliability/): the integration programs
# flags plus warnings as errors; librchurn.so is what rprog_dlchurn loads;
# liboldmremap.so, preloaded by rel_remap.sh, is mremap as before Linux 6.17;
# rprog_secure_linked and rprog_numbers_linked link the static library.
RTEST_C  := $(wildcard tests/reliability/rprog_*.c)
RTEST_CC := $(wildcard tests/reliability/rprog_*.cc)
RTEST_BIN := $(patsubst tests/reliability/%.c,$(B)/tests/%,$(RTEST_C)) \
	$(patsubst tests/reliability/%.cc,$(B)/tests/%,$(RTEST_CC)) \
	$(B)/tests/librchurn.so $(B)/tests/liboldmremap.so \
	$(B)/tests/libplug_a.so $(B)/tests/libplug_b.so \
	$(B)/tests/rprog_secure_linked \
	$(B)/tests/rprog_numbers_linked \
	$(B)/tests/rprog_range_linked $(B)/tests/rprog_sigexit_linked \
	$(B)/tests/rprog_serve_linked $(B)/tests/rprog_getattr_linked \
	$(B)/tests/rprog_seccomp_linked
# rprog_unwind: -O2 without frame pointers, so only CFI can walk it.
$(B)/tests/rprog_unwind: tests/reliability/rprog_unwind.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -g -fomit-frame-pointer $(WARN) -o $@ $<
$(B)/tests/rprog_unwindxx: tests/reliability/rprog_unwindxx.cc
	@mkdir -p $(dir $@)
	$(CXX) -std=c++17 -O2 -g -fomit-frame-pointer $(WARN) -o $@ $<
# rprog_ehtab: with 40,000 functions' call-frame information (~320 KB of
# .eh_frame_hdr table).
$(B)/tests/ehfuncs.s: tests/reliability/gen_ehfuncs.sh
	@mkdir -p $(dir $@)
	sh $< 40000 >$@
$(B)/tests/rprog_ehtab: tests/reliability/rprog_ehtab.c $(B)/tests/ehfuncs.s
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O1 -g $(WARN) -o $@ $^
# rprog_oteldl: -rdynamic, so that its otel_thread_ctx_v1 is exported.
$(B)/tests/rprog_oteldl: tests/reliability/rprog_oteldl.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O1 -g -rdynamic $(WARN) -o $@ $< -lpthread -ldl
$(B)/tests/rprog_%: tests/reliability/rprog_%.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O1 -g -fno-omit-frame-pointer -fno-inline $(WARN) -Iinclude -o $@ $< -lpthread -ldl
$(B)/tests/rprog_%: tests/reliability/rprog_%.cc
	@mkdir -p $(dir $@)
	$(CXX) -std=c++17 -fsized-deallocation -O1 -g -fno-omit-frame-pointer -fno-inline $(WARN) -o $@ $< -lpthread
$(B)/tests/liboldmremap.so: tests/reliability/rlib_oldmremap.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O1 -g -fPIC -shared $(WARN) -o $@ $<
$(B)/tests/librchurn.so: tests/reliability/rlib_churn.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O1 -g -fPIC -shared $(WARN) -o $@ $<
# libplug_a.so and libplug_b.so (rel_plugins.sh): one source, one layout,
# two function names.
$(B)/tests/libplug_a.so: tests/reliability/rlib_plug.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O1 -g -fPIC -shared $(WARN) -DPLUG_FN=a_alloc_site -o $@ $<
$(B)/tests/libplug_b.so: tests/reliability/rlib_plug.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O1 -g -fPIC -shared $(WARN) -DPLUG_FN=innocent_libb_function -o $@ $<
$(B)/tests/rprog_secure_linked: tests/reliability/rprog_secure.c $(B)/libheapprof.a
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O1 -g $(WARN) -o $@ $< $(B)/libheapprof.a $(LIBS)
# rprog_serve_linked: -rdynamic, so that the API it looks up with dlsym
# (heapprof_dump) is found in the executable.
$(B)/tests/rprog_serve_linked: tests/reliability/rprog_serve.c $(B)/libheapprof.a
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O1 -g -fno-omit-frame-pointer -fno-inline -rdynamic $(WARN) -Iinclude -o $@ $< $(B)/libheapprof.a $(LIBS)
# rprog_*_linked: the same program with the static library linked in.
$(B)/tests/rprog_%_linked: tests/reliability/rprog_%.c $(B)/libheapprof.a
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O1 -g -fno-omit-frame-pointer -fno-inline $(WARN) -Iinclude -o $@ $< $(B)/libheapprof.a $(LIBS)
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
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -g -Iinclude -Isrc/common -Isrc/pprof -Isrc/legacy -Isrc/symbols -o $@ $^ -lz -lm
# bench_exitsym links the tool half (symbol cache, pprof decoder).
$(B)/bench/bench_exitsym: bench/bench_exitsym.c $(TOOL_OBJ)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -g -Iinclude -Isrc/common -Isrc/pprof -Isrc/legacy -Isrc/symbols -o $@ $^ -lz -lm
# bench_delta links the tool half (delta computer and pprof decoder).
$(B)/bench/bench_delta: bench/bench_delta.c $(TOOL_OBJ)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -g -Iinclude -Isrc/common -Isrc/pprof -Isrc/legacy -Isrc/symbols -o $@ $^ -lz -lm
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
# systemtap-sdt-dev: <sys/sdt.h>, the otel_memory USDT probes (a header only)
DEBS_BUILD := gcc g++ make pkg-config zlib1g-dev libdw-dev systemtap-sdt-dev
# libunwind8: only the HEAPPROF_UNWIND=libunwind opt-in, compared in tests.
# heaptrack, zstd: the accuracy suite (tests/accuracy) reads heaptrack's records.
# Every tool a test uses is here: under CI=true a skip for a missing tool
# fails (tests/run.sh). curl (endpoint tests), strace, gdb (rel_sigalloc,
# hang dumps), valgrind, nodejs and npm (flame's browser suite drives
# chromium with playwright-core from npm; NodeSource's nodejs provides
# npm), lintian (deb.sh), binutils (readelf, objdump, nm), git, man-db;
# libgoogle-perftools-dev and libjemalloc-dev: tests/corpus/gen.sh writes
# gperftools and jemalloc dumps with them (jeprof reads the latter);
# heaptrack: the cross-check of the peak (capture_peak_bias.sh).
# bpftrace: the otel_memory USDT probes seen from outside (capture_usdt.sh).
DEBS_TEST  := libunwind8 golang-go golang-github-google-pprof-dev clang libclang-rt-14-dev \
	python3 sqlite3 procps chromium libjemalloc-dev groff-base \
	curl strace gdb valgrind nodejs npm lintian binutils git man-db libc6-dev \
	libgoogle-perftools-dev libtcmalloc-minimal4 redis-server redis-tools heaptrack zstd \
	bpftrace
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
	-Isrc/pprof -Isrc/legacy -Isrc/symbols -Isrc/ops -Ifuzz
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

# Sanitizer builds of the capture half (tests/sanitize/): the library's
# sources with interpose.c's entry points renamed hp_malloc, ... and the
# sanitizer's own malloc as the next allocator, linked into a multithreaded
# driver, with clang under TSan, ASan and UBSan, one directory each.
# tests/reliability/rel_sanitize.sh builds and runs them.
SAN_VARIANTS := tsan asan ubsan
SAN_CC ?= clang
SAN_tsan  := -fsanitize=thread
SAN_asan  := -fsanitize=address
SAN_ubsan := -fsanitize=undefined -fno-sanitize-recover=all
SAN_FLAGS := -std=c11 -D_GNU_SOURCE $(WARN) -O1 -g -fno-omit-frame-pointer \
	-fvisibility=hidden -Iinclude -Isrc/common -Isrc/pprof -Isrc/legacy -Isrc/symbols -Isrc/collect \
	-Isrc/serve -MMD -MP
# What the capture half links: no src/ops, no legacy-format readers.
SAN_SRC := $(COMMON_SRC) $(filter-out src/legacy/legacy_%,$(FORMAT_SRC)) $(SERVE_SRC) \
	$(filter-out src/collect/interpose.c src/collect/bootstrap.c src/collect/ending.c src/collect/unload_hook.c,$(COLLECT_SRC)) \
	tests/sanitize/hp_entry.c tests/sanitize/hp_boot.c
define SAN_RULES
$(B)/sanitize/$(1)/obj/%.o: %.c
	@mkdir -p $$(dir $$@)
	$$(SAN_CC) $$(SAN_FLAGS) $$(SAN_$(1)) -c $$< -o $$@
$(B)/sanitize/$(1)/driver: tests/sanitize/driver.c tests/sanitize/driver_net.c tests/sanitize/driver_child.c tests/sanitize/driver.h $$(patsubst %.c,$(B)/sanitize/$(1)/obj/%.o,$$(SAN_SRC))
	$$(SAN_CC) $$(SAN_FLAGS) $$(SAN_$(1)) -o $$@ $$(filter %.c %.o,$$^) $$(LIBS)
endef
$(foreach v,$(SAN_VARIANTS),$(eval $(call SAN_RULES,$(v))))
.PHONY: sanitize
sanitize: $(foreach v,$(SAN_VARIANTS),$(B)/sanitize/$(v)/driver)

-include $(shell find $(B)/obj -name '*.d' 2>/dev/null)
-include $(shell find $(B)/sanitize -name '*.d' 2>/dev/null)
-include $(wildcard $(B)/tests/*.d)

# The frame-pointer unwinder walks through the profiler's own frames; the
# entry points (interpose.c) have none and must tail-call their slow paths.
$(B)/obj/src/collect/%.o: ALLCFLAGS += -fno-omit-frame-pointer
$(B)/obj/src/collect/interpose.o: ALLCFLAGS += -fomit-frame-pointer -foptimize-sibling-calls

# ---------------------------------------------------------------------------
# Installing (issue 17): `make install` / `make uninstall` with PREFIX (or prefix)
# (default /usr/local) and DESTDIR, in the GNU layout; `make deb` builds
# build/heapprof_VERSION_ARCH.deb with dpkg-deb. What goes where:
#   BINDIR/heapprof                   the CLI
#   LIBDIR/libheapprof.so.0*, .a       the profiler (linking it profiles)
#   LIBDIR/heapprof/libheapprof.so     what `heapprof run` preloads
#   LIBDIR/libheapprof-tools.so.0*, .a the tool API alone (decode, delta,
#                                      merge, encode, convert, symbolize):
#                                      never interposes anything
#   PKGCONFIGDIR (LIBDIR/pkgconfig)/heapprof.pc, heapprof-tools.pc
#   INCLUDEDIR/heapprof.h, MANDIR/man1/heapprof.1, MANDIR/man3/libheapprof.3
# The flame page's template is compiled into the CLI: nothing to install.
VERSION := $(shell sed -n 's/^\#define HEAPPROF_VERSION_MAJOR \([0-9]*\).*/\1/p' include/heapprof.h).$(shell sed -n 's/^\#define HEAPPROF_VERSION_MINOR \([0-9]*\).*/\1/p' include/heapprof.h)
SOVERSION   := 0
prefix      ?= /usr/local
PREFIX      ?= $(prefix)
BINDIR      ?= $(PREFIX)/bin
LIBDIR      ?= $(PREFIX)/lib
INCLUDEDIR  ?= $(PREFIX)/include
DATAROOTDIR ?= $(PREFIX)/share
MANDIR      ?= $(DATAROOTDIR)/man
DOCDIR      ?= $(DATAROOTDIR)/doc/heapprof
PKGLIBDIR   := $(LIBDIR)/heapprof
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
INSTALL     ?= install

# The commit, baked in at build time: `git rev-parse` in a clone (with
# -dirty for uncommitted changes), else tools/commit.txt, which `git
# archive` fills in (export-subst), else "unknown". Evaluated only when
# build/gen/hp_version.h is written, which is on every make run (FORCE),
# but its timestamp only moves when the text changes.
HP_COMMIT = $(shell if [ -e .git ] && c=$$(git rev-parse --short=12 HEAD 2>/dev/null); then \
	git diff --quiet HEAD -- 2>/dev/null || c=$$c-dirty; echo $$c; \
	else sed -n 's/^\([0-9a-f]\{12\}\)[0-9a-f]*$$/\1/p' tools/commit.txt; fi)
.PHONY: FORCE
$(B)/gen/hp_version.h: FORCE
	@mkdir -p $(dir $@)
	@c='$(HP_COMMIT)'; printf '/* generated by the Makefile */\n#define HP_BUILD_COMMIT "%s"\n' "$${c:-unknown}" >$@.tmp
	@if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi
$(B)/obj/src/common/version.o: $(B)/gen/hp_version.h
$(B)/obj/src/common/version.o: ALLCFLAGS += -I$(B)/gen

# Installed shared libraries carry a SONAME (build/libheapprof.so, the one
# the tests preload, is left as it is).
$(B)/inst/libheapprof.so.$(VERSION): $(SO_OBJ) src/collect/exports.map
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,libheapprof.so.$(SOVERSION) -Wl,-z,nodelete \
		-Wl,--version-script=src/collect/exports.map -o $@ $(SO_OBJ) $(SO_LIBS)
# The tool library: the tool half's objects only. Linking the whole
# libheapprof.a for heapprof_delta_* interposes malloc: pb_write.o (and
# every tool object) calls free, which the archive's interpose.o defines,
# so the static linker pulls interpose.o (and with it the constructor and
# the exit dump) in. Without the capture objects there is no such member.
$(B)/libheapprof-tools.a: $(TOOL_OBJ)
	@rm -f $@
	ar rcs $@ $^
$(B)/inst/libheapprof-tools.so.$(VERSION): $(TOOL_OBJ) src/ops/exports.map
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,libheapprof-tools.so.$(SOVERSION) \
		-Wl,--version-script=src/ops/exports.map -Wl,--no-undefined \
		-o $@ $(TOOL_OBJ) -lz -ldl
INST_LIBS := $(B)/inst/libheapprof.so.$(VERSION) \
	$(B)/inst/libheapprof-tools.so.$(VERSION) $(B)/libheapprof-tools.a
.PHONY: install uninstall install-libs deb
install-libs: $(INST_LIBS)

# pkg-config files: libdir and includedir relative to ${prefix} when they
# are under PREFIX, so `pkg-config --define-variable=prefix=DIR` follows
# a moved tree. `--libs` links the shared library; the static one, in a
# dynamically linked program, is `--variable=static_libs` (the archive's
# path and what it needs: -Wl,-Bstatic without the bother).
hp_comma := ,
pcdir = $(patsubst $(PREFIX)%,$${prefix}%,$(1))
define HP_PC
prefix=$(PREFIX)
libdir=$(call pcdir,$(LIBDIR))
includedir=$(call pcdir,$(INCLUDEDIR))
static_libs=$${libdir}/lib$(1).a $(3)

Name: $(1)
Description: $(2)
Version: $(VERSION)
Libs: -L$${libdir} -l$(1)
Libs.private: $(3)
Cflags: -I$${includedir}
endef
export HP_PC_MAIN  = $(call HP_PC,heapprof,sampling heap profiler: a program linked with it is profiled (pprof heap profiles),-lz -ldl -lpthread)
export HP_PC_TOOLS = $(call HP_PC,heapprof-tools,heapprof's pprof toolkit (decode$(hp_comma) delta$(hp_comma) merge$(hp_comma) encode$(hp_comma) convert$(hp_comma) symbolize) without the profiler,-lz -lm -ldl)

install: all install-libs
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(PKGLIBDIR) \
		$(DESTDIR)$(PKGCONFIGDIR) $(DESTDIR)$(INCLUDEDIR) \
		$(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3 $(DESTDIR)$(DOCDIR)
	$(INSTALL) -m 755 $(B)/heapprof $(DESTDIR)$(BINDIR)/heapprof
	$(INSTALL) -m 644 $(B)/inst/libheapprof.so.$(VERSION) $(B)/inst/libheapprof-tools.so.$(VERSION) \
		$(DESTDIR)$(LIBDIR)/
	$(INSTALL) -m 644 $(B)/libheapprof.a $(B)/libheapprof-tools.a $(DESTDIR)$(LIBDIR)/
	for l in libheapprof libheapprof-tools; do \
		ln -sf $$l.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$$l.so.$(SOVERSION) && \
		ln -sf $$l.so.$(SOVERSION) $(DESTDIR)$(LIBDIR)/$$l.so || exit 1; done
	ln -sf ../libheapprof.so.$(VERSION) $(DESTDIR)$(PKGLIBDIR)/libheapprof.so
	$(INSTALL) -m 644 include/heapprof.h $(DESTDIR)$(INCLUDEDIR)/heapprof.h
	printf '%s\n' "$$HP_PC_MAIN" >$(DESTDIR)$(PKGCONFIGDIR)/heapprof.pc
	printf '%s\n' "$$HP_PC_TOOLS" >$(DESTDIR)$(PKGCONFIGDIR)/heapprof-tools.pc
	chmod 644 $(DESTDIR)$(PKGCONFIGDIR)/heapprof.pc $(DESTDIR)$(PKGCONFIGDIR)/heapprof-tools.pc
	$(INSTALL) -m 644 man/heapprof.1 $(DESTDIR)$(MANDIR)/man1/heapprof.1
	$(INSTALL) -m 644 man/libheapprof.3 $(DESTDIR)$(MANDIR)/man3/libheapprof.3
	$(INSTALL) -m 644 README.md $(DESTDIR)$(DOCDIR)/README.md

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/heapprof $(DESTDIR)$(PKGLIBDIR)/libheapprof.so \
		$(DESTDIR)$(INCLUDEDIR)/heapprof.h \
		$(DESTDIR)$(PKGCONFIGDIR)/heapprof.pc $(DESTDIR)$(PKGCONFIGDIR)/heapprof-tools.pc \
		$(DESTDIR)$(MANDIR)/man1/heapprof.1 $(DESTDIR)$(MANDIR)/man3/libheapprof.3 \
		$(DESTDIR)$(DOCDIR)/README.md
	for l in libheapprof libheapprof-tools; do \
		rm -f $(DESTDIR)$(LIBDIR)/$$l.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$$l.so.$(SOVERSION) \
			$(DESTDIR)$(LIBDIR)/$$l.so $(DESTDIR)$(LIBDIR)/$$l.a; done
	-rmdir $(DESTDIR)$(PKGLIBDIR) $(DESTDIR)$(DOCDIR) 2>/dev/null

# The Debian package: `make install` into build/deb with PREFIX=/usr, then
# what Debian's policy adds (stripped binaries, gzip'd man pages and
# changelog, copyright, control, shlibs, md5sums, the ldconfig trigger).
# The libraries stay in /usr/lib (where `heapprof run` looks, relative to
# itself); the pkg-config files go to the multiarch directory.
DEB_ARCH := $(shell dpkg --print-architecture 2>/dev/null || echo amd64)
DEB_MULTIARCH := $(shell dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || $(CC) -print-multiarch)
DEB_FILE := $(B)/heapprof_$(VERSION)_$(DEB_ARCH).deb
deb: $(DEB_FILE)
$(DEB_FILE): all install-libs man/heapprof.1 man/libheapprof.3 README.md tools/deb/control.in tools/deb/copyright
	rm -rf $(B)/deb && mkdir -p $(B)/deb/DEBIAN
	$(MAKE) --no-print-directory install DESTDIR=$(CURDIR)/$(B)/deb PREFIX=/usr \
		PKGCONFIGDIR=/usr/lib/$(DEB_MULTIARCH)/pkgconfig
	sh tools/deb/build.sh $(B)/deb $(VERSION) $(DEB_ARCH) $@
