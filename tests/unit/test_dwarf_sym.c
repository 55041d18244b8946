/*
 * test_dwarf_sym.c: the DWARF symbolizer on this test binary (built -O2 -g):
 * a function by address (name, file, start line), the file:line of a known
 * call (__LINE__), an always_inline function as an inlined frame in front of
 * its caller, libz's deflate (a shared library: a name from .dynsym), a
 * build id that does not match (no frames, one warning), a missing file,
 * the heapprof_symbolize_fn / heapprof_symbolize_frames_fn shapes, and
 * heapprof_encode_heap() with symbolize_frames (what a dump writes with
 * HEAPPROF_SYMBOLIZE=dwarf): Lines, functions and mapping flags; C++
 * names simplified as pprof shows them.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "demangle.h"
#include "dwarf_sym.h"
#include "elffile.h"
#include "heapprof.h"
#include "maps.h"
#include "pprof_dec.h"
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

TEST(demangle_simple)
{
	static const char *const cases[][2] = {
		{"_ZNSt6vectorIlSaIlEE17_M_realloc_insertIJlEEEvN9__gnu_cxx17__"
		 "normal_iteratorIPlS1_EEDpOT_", "std::vector::_M_realloc_insert"},
		{"_Znwm", "operator new"},
		{"_ZdaPv", "operator delete[]"},
		{"_ZNKSt6vectorIiSaIiEE4sizeEv", "std::vector::size"},
		{"_ZN12_GLOBAL__N_13fooEv", "(anonymous namespace)::foo"},
		{"_ZNSt6vectorIiSaIiEEixEm", "std::vector::operator[]"},
		{"_ZStlsISt11char_traitsIcEERSt13basic_ostreamIcT_ES5_PKc",
		 "std::operator<<"},
		{"_ZN2ns3BoxIlE4fillEi.cold", "ns::Box::fill"},
		{"_ZNK3FoocvbEv", "Foo::operator bool"},
		{"_ZN3FooclEi", "Foo::operator()"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *d = heapprof__demangle(cases[i][0], 0);
		CHECK_STR(d, cases[i][1]);
		free(d);
	}
	char *d = heapprof__demangle("_Znwm", 1);
	CHECK_STR(d, "operator new(unsigned long)");
	free(d);
	CHECK(heapprof__demangle("main", 0) == NULL);
	CHECK(heapprof__demangle("_Zgarbage", 0) == NULL);
}

static int
buf_write(void *arg, const void *p, size_t n)
{
	uint8_t **b = arg; /* b[0] = data, b[1] = (uint8_t *)len */
	size_t len = (size_t)(uintptr_t)b[1];
	uint8_t *nb = realloc(b[0], len + n);
	if (!nb)
		return -1;
	memcpy(nb + len, p, n);
	b[0] = nb;
	b[1] = (uint8_t *)(uintptr_t)(len + n);
	return 0;
}

/* The name of the function of line k of location id `id`, and its line. */
static const char *
line_of(pprof_dec *d, uint64_t id, size_t k, int64_t *line, size_t *nlines)
{
	static char name[128];
	pprof_location l;
	pprof_function f;
	long li = heapprof__pprof_find_location(d, id);
	if (li < 0 || heapprof__pprof_location(d, (size_t)li, &l) < 0)
		return NULL;
	*nlines = l.nlines;
	if (k >= l.nlines)
		return NULL;
	*line = l.lines[k].line;
	long fi = heapprof__pprof_find_function(d, l.lines[k].function_id);
	if (fi < 0 || heapprof__pprof_function(d, (size_t)fi, &f) < 0)
		return NULL;
	size_t n;
	const char *s = heapprof__pprof_string(d, f.name, &n);
	snprintf(name, sizeof(name), "%.*s", (int)n, s);
	return name;
}

TEST(encode_heap_with_frames)
{
	seen_ra = NULL;
	dwsym_outer(1);
	REQUIRE(seen_ra);
	uint64_t stack[2] = {(uint64_t)(uintptr_t)seen_ra - 1,
	                     (uint64_t)(uintptr_t)&dwsym_outer};
	heapprof_record r;
	memset(&r, 0, sizeof(r));
	r.alloc_objects = 1;
	r.alloc_bytes = 64;
	r.stack = stack;
	r.depth = 2;
	heapprof_mapping *ms = calloc(maps.n + 1, sizeof(*ms));
	REQUIRE(ms);
	for (size_t i = 0; i < maps.n; i++)
		mapping_of(maps.v[i].start, &ms[i]);
	heapprof_dwsym *s = new_sym();
	heapprof_heap_profile p;
	memset(&p, 0, sizeof(p));
	p.records = &r;
	p.nrecords = 1;
	p.rate = 1;
	p.mappings = ms;
	p.nmappings = maps.n;
	p.symbolize_frames = heapprof__dwsym_symbolize_frames;
	p.symbolize_frames_arg = s;
	uint8_t *b[2] = {NULL, NULL};
	CHECK_EQ(heapprof_encode_heap(&p, 0, buf_write, b), 0);
	pprof_dec d;
	heapprof__pprof_dec_init(&d, NULL, NULL);
	CHECK_EQ(heapprof__pprof_check(&d, b[0], (size_t)(uintptr_t)b[1]), 0);
	REQUIRE(heapprof__pprof_dec_open(&d, b[0], (size_t)(uintptr_t)b[1]) == 0);
	int64_t line = 0;
	size_t nl = 0;
	/* Location 1: the inlined call, two lines, callee first. */
	CHECK_STR(line_of(&d, 1, 0, &line, &nl), "inlined_leaf");
	CHECK_EQ(nl, 2);
	CHECK_EQ(line, seen_line);
	CHECK_STR(line_of(&d, 1, 1, &line, &nl), "dwsym_outer");
	CHECK_EQ(line, outer_call_line);
	/* Location 2: the function's entry; its real function last. */
	const char *last = line_of(&d, 2, 0, &line, &nl);
	if (nl > 1)
		last = line_of(&d, 2, nl - 1, &line, &nl);
	CHECK_STR(last, "dwsym_outer");
	/* The functions carry file and start line; the mapping all flags. */
	int found = 0;
	for (size_t i = 0; i < d.nfuncs; i++) {
		pprof_function f;
		REQUIRE(heapprof__pprof_function(&d, i, &f) == 0);
		if (!heapprof__pprof_string_eq(&d, f.name, "dwsym_outer"))
			continue;
		found++;
		CHECK_EQ(f.start_line, outer_decl_line);
		size_t n;
		const char *fn = heapprof__pprof_string(&d, f.filename, &n);
		CHECK(n > 16 && !memcmp(fn + n - 16, "test_dwarf_sym.c", 16));
	}
	CHECK_EQ(found, 1);
	long mi = -1;
	for (size_t i = 0; i < maps.n; i++)
		if (maps.v[i].start <= stack[0] && stack[0] < maps.v[i].limit)
			mi = (long)i;
	REQUIRE(mi >= 0);
	pprof_mapping m;
	REQUIRE(heapprof__pprof_mapping(&d, (size_t)mi, &m) == 0);
	CHECK(m.has_functions && m.has_filenames && m.has_line_numbers &&
	      m.has_inline_frames);
	/* Mappings without locations get no flags. */
	for (size_t i = 0; i < d.nmaps; i++) {
		REQUIRE(heapprof__pprof_mapping(&d, i, &m) == 0);
		if ((long)i != mi)
			CHECK(!m.has_functions && !m.has_filenames);
	}
	heapprof__pprof_dec_free(&d);
	free(b[0]);
	heapprof__dwsym_free(s);
	free(ms);
}

int
main(void)
{
	const char *why = heapprof__dwsym_unavailable();
	if (why && strstr(why, "not found")) {
		T_SKIP_TOOL("dwarf_sym", "libdw.so.1", "libdw1");
		return 0;
	}
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
	{
		/* Line information for this file's own code? */
		heapprof_dwsym *s = heapprof__dwsym_new(NULL);
		heapprof_mapping m;
		heapprof_frame f[8];
		uint64_t a = (uint64_t)(uintptr_t)&dwsym_outer;
		size_t n = 0;
		if (s && mapping_of(a, &m) == 0)
			n = heapprof__dwsym_frames(s, &m, NULL, a, f, 8);
		heapprof__dwsym_free(s);
		if (n == 0 || !f[n - 1].file) {
			printf("SKIP dwarf_sym: this test binary has no DWARF "
			       "(built without -g)\n");
			return 0;
		}
	}
	RUN(function_by_address);
	RUN(inlined_frames);
	RUN(shared_library);
	RUN(build_id_checked);
	RUN(missing_and_odd_inputs);
	RUN(encode_heap_with_frames);
	RUN(demangle_simple);
	heapprof__maps_free(&maps);
	TEST_MAIN_END();
}
