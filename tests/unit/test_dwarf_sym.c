/*
 * test_dwarf_sym.c: the DWARF symbolizer on this test binary (built -O2 -g):
 * a function by address (name, file, start line), the file:line of a known
 * call (__LINE__), an always_inline function as an inlined frame in front of
 * its caller, libz's deflate (a shared library: a name from .dynsym), a
 * build id that does not match (no frames, one warning), a missing file,
 * and the heapprof_symbolize_fn / heapprof_symbolize_frames_fn shapes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "dwarf_sym.h"
#include "elffile.h"
#include "heapprof.h"
#include "maps.h"
#include "test.h"

static void *volatile seen_ra;
static volatile int seen_line;

static __attribute__((noinline)) void
record(int line)
{
	seen_ra = __builtin_return_address(0);
	seen_line = line;
	__asm__ volatile("" ::: "memory");
}

static inline __attribute__((always_inline)) void
inlined_leaf(int k)
{
	if (k >= 0)
		record(__LINE__); /* the inlined frame's line */
}

static volatile int outer_call_line;
static const int outer_decl_line = __LINE__ + 2;
__attribute__((noinline)) void
dwsym_outer(int k)
{
	inlined_leaf(k); outer_call_line = __LINE__;
	__asm__ volatile("" ::: "memory");
}

static const char *base_name(const char *p)
{
	const char *s = p ? strrchr(p, '/') : NULL;
	return s ? s + 1 : p;
}

/* The executable mapping of this process that holds addr. */
static heapprof_maps maps;
static char main_bid[2 * HEAPPROF_BUILD_ID_MAX + 1];

static int
mapping_of(uint64_t addr, heapprof_mapping *m)
{
	const heapprof_maps_entry *e = heapprof__maps_find(&maps, addr);
	if (!e)
		return -1;
	memset(m, 0, sizeof(*m));
	m->start = e->start;
	m->limit = e->limit;
	m->offset = e->offset;
	m->file = e->path;
	return 0;
}

static int nwarn;
static char last_warn[512];

static void
on_warn(void *arg, const char *file, const char *msg)
{
	(void)arg;
	nwarn++;
	snprintf(last_warn, sizeof(last_warn), "%s: %s", file, msg);
}

static heapprof_dwsym *
new_sym(void)
{
	heapprof_dwsym_options o = {0};
	o.warn = on_warn;
	return heapprof__dwsym_new(&o);
}

TEST(function_by_address)
{
	dwsym_outer(1); /* sets outer_call_line */
	heapprof_mapping m;
	uint64_t a = (uint64_t)(uintptr_t)&dwsym_outer;
	REQUIRE(mapping_of(a, &m) == 0);
	heapprof_dwsym *s = new_sym();
	REQUIRE(s);
	heapprof_frame f[8];
	size_t n = heapprof__dwsym_frames(s, &m, NULL, a, f, 8);
	/* At -O2 the entry may already be inlined code (the `if` of
	 * inlined_leaf): the real function is the last frame either way. */
	REQUIRE(n >= 1 && n <= 2);
	CHECK_STR(f[n - 1].function, "dwsym_outer");
	CHECK_STR(f[n - 1].system_name, "dwsym_outer");
	CHECK_STR(base_name(f[n - 1].file), "test_dwarf_sym.c");
	CHECK_EQ(f[n - 1].start_line, outer_decl_line);
	CHECK(f[n - 1].line >= outer_decl_line &&
	      f[n - 1].line <= outer_call_line);
	/* The static record() too (a local symbol). */
	a = (uint64_t)(uintptr_t)&record + 4;
	n = heapprof__dwsym_frames(s, &m, NULL, a, f, 8);
	CHECK(n == 1 && f[0].function && !strcmp(f[0].function, "record"));
	heapprof__dwsym_free(s);
}

TEST(inlined_frames)
{
	seen_ra = NULL;
	dwsym_outer(1);
	REQUIRE(seen_ra);
	uint64_t a = (uint64_t)(uintptr_t)seen_ra - 1; /* the call site */
	heapprof_mapping m;
	REQUIRE(mapping_of(a, &m) == 0);
	heapprof_dwsym *s = new_sym();
	REQUIRE(s);
	heapprof_frame f[8];
	size_t n = heapprof__dwsym_frames(s, &m, NULL, a, f, 8);
	CHECK_EQ(n, 2);
	if (n == 2) {
		CHECK_STR(f[0].function, "inlined_leaf");
		CHECK_EQ(f[0].line, seen_line);
		CHECK_STR(base_name(f[0].file), "test_dwarf_sym.c");
		CHECK_STR(f[1].function, "dwsym_outer");
		CHECK_EQ(f[1].line, outer_call_line);
		CHECK_STR(base_name(f[1].file), "test_dwarf_sym.c");
		CHECK_EQ(f[1].start_line, outer_decl_line);
	}
	/* The one-name symbolizer gives the real function (outermost). */
	CHECK_STR(heapprof__dwsym_symbolize(s, a, &m), "dwsym_outer");
	heapprof_frame g[8];
	CHECK_EQ(heapprof__dwsym_symbolize_frames(s, a, &m, g, 8), n);
	/* A short buffer gets the innermost frames. */
	CHECK_EQ(heapprof__dwsym_frames(s, &m, NULL, a, g, 1), 1);
	CHECK_STR(g[0].function, "inlined_leaf");
	heapprof__dwsym_free(s);
}

TEST(shared_library)
{
	uint64_t a = (uint64_t)(uintptr_t)&deflate;
	heapprof_mapping m;
	REQUIRE(mapping_of(a, &m) == 0);
	CHECK(strstr(m.file, "libz") != NULL);
	heapprof_dwsym *s = new_sym();
	REQUIRE(s);
	heapprof_frame f[8];
	size_t n = heapprof__dwsym_frames(s, &m, NULL, a + 1, f, 8);
	REQUIRE(n >= 1);
	CHECK_STR(f[n - 1].function, "deflate");
	heapprof__dwsym_free(s);
}

TEST(build_id_checked)
{
	uint64_t a = (uint64_t)(uintptr_t)&dwsym_outer;
	heapprof_mapping m;
	REQUIRE(mapping_of(a, &m) == 0);
	REQUIRE(main_bid[0]);
	heapprof_dwsym *s = new_sym();
	REQUIRE(s);
	heapprof_frame f[8];
	m.build_id = main_bid; /* the right one */
	CHECK(heapprof__dwsym_frames(s, &m, NULL, a, f, 8) >= 1);
	int dw = 0;
	CHECK_EQ(heapprof__dwsym_file_status(s, m.file, main_bid, &dw),
	         HEAPPROF_DWSYM_OK);
	CHECK_EQ(dw, 1);
	nwarn = 0;
	m.build_id = "0123456789abcdef0123456789abcdef01234567";
	CHECK_EQ(heapprof__dwsym_frames(s, &m, NULL, a, f, 8), 0);
	CHECK_EQ(heapprof__dwsym_frames(s, &m, NULL, a + 1, f, 8), 0);
	CHECK_EQ(nwarn, 1); /* once per file */
	CHECK(strstr(last_warn, "does not match") != NULL);
	CHECK(strstr(last_warn, main_bid) != NULL);
	CHECK_EQ(heapprof__dwsym_file_status(s, m.file, m.build_id, NULL),
	         HEAPPROF_DWSYM_BUILDID);
	CHECK(heapprof__dwsym_symbolize(s, a, &m) == NULL);
	/* Case does not matter. */
	char upper[sizeof(main_bid)];
	for (size_t i = 0; i < sizeof(upper); i++)
		upper[i] = (char)(main_bid[i] >= 'a' && main_bid[i] <= 'f'
		                      ? main_bid[i] - 32 : main_bid[i]);
	m.build_id = upper;
	CHECK(heapprof__dwsym_frames(s, &m, NULL, a, f, 8) >= 1);
	heapprof__dwsym_free(s);
}

TEST(missing_and_odd_inputs)
{
	nwarn = 0;
	heapprof_dwsym *s = new_sym();
	REQUIRE(s);
	heapprof_frame f[4];
	heapprof_mapping m = {0x1000, 0x2000, 0, "/nonexistent/prog", NULL};
	CHECK_EQ(heapprof__dwsym_frames(s, &m, NULL, 0x1100, f, 4), 0);
	CHECK_EQ(heapprof__dwsym_file_status(s, "/nonexistent/prog", NULL, NULL),
	         HEAPPROF_DWSYM_NOFILE);
	CHECK_EQ(heapprof__dwsym_file_status(s, "/proc/self/status", NULL, NULL),
	         HEAPPROF_DWSYM_NOTELF);
	m.file = "[vdso]";
	CHECK_EQ(heapprof__dwsym_frames(s, &m, NULL, 0x1100, f, 4), 0);
	/* Outside the mapping, or no room. */
	uint64_t a = (uint64_t)(uintptr_t)&dwsym_outer;
	REQUIRE(mapping_of(a, &m) == 0);
	CHECK_EQ(heapprof__dwsym_frames(s, &m, NULL, m.limit, f, 4), 0);
	CHECK_EQ(heapprof__dwsym_frames(s, &m, NULL, a, f, 0), 0);
	CHECK_EQ(nwarn, 0); /* missing files are the caller's to report */
	heapprof__dwsym_free(s);
	heapprof__dwsym_free(NULL);
}

int
main(void)
{
	const char *why = heapprof__dwsym_unavailable();
	if (why) {
		printf("SKIP dwarf_sym: %s\n", why);
		return 0;
	}
	if (heapprof__maps_read_self(&maps) != 0) {
		printf("FAIL dwarf_sym_maps\n");
		return 1;
	}
	heapprof__maps_keep_exec(&maps);
	heapprof__elf_build_id("/proc/self/exe", main_bid, sizeof(main_bid));
	RUN(function_by_address);
	RUN(inlined_frames);
	RUN(shared_library);
	RUN(build_id_checked);
	RUN(missing_and_odd_inputs);
	heapprof__maps_free(&maps);
	TEST_MAIN_END();
}
