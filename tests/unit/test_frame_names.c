/*
 * test_frame_names.c: what the writers do with symbol names (issue 14):
 * operator new / new[] frames dropped from the leaf (pprof and --text
 * forms), symbol versions stripped from names, mappings with names marked
 * has_functions (and not has_filenames without files), the helpers behind
 * them. Decodes with the profile decoder.
 */
#include "heapprof.h"
#include "demangle.h"
#include "pprof_dec.h"
#include "test.h"

/* Addresses 0x1000.. in mapping 1 ("/bin/prog"), 0x9000.. in mapping 2
 * ("/lib/libstdc++.so.6", named too), 0x20000 in mapping 3 (unnamed). */
static const char *
names(void *arg, uint64_t addr, const heapprof_mapping *m)
{
	(void)arg;
	(void)m;
	switch (addr) {
	case 0x9010: return "_Znwm";
	case 0x9020: return "_ZnwmRKSt9nothrow_t";
	case 0x9030: return "_ZnamSt11align_val_t";
	case 0x9040: return "_ZNSt6vectorIiSaIiEE9push_backERKi";
	case 0x1010: return "main";
	case 0x1020: return "__libc_start_main@@GLIBC_2.34";
	case 0x1030: return "helper@GLIBC_2.2.5";
	default: return NULL;
	}
}

static const heapprof_mapping maps[] = {
	{0x1000, 0x2000, 0, "/bin/prog", NULL},
	{0x9000, 0xa000, 0, "/lib/libstdc++.so.6", NULL},
	{0x20000, 0x21000, 0, "/lib/unnamed.so", NULL},
};

static void
profile(heapprof_heap_profile *p, heapprof_record *r)
{
	static uint64_t s1[] = {0x9010, 0x9020, 0x1030, 0x1010, 0x1020};
	static uint64_t s2[] = {0x9030, 0x9040, 0x20000, 0x1010};
	static uint64_t s3[] = {0x9010}; /* only operator new: kept */
	r[0] = (heapprof_record){1, 100, 0, 0, s1, 5, 0, 0};
	r[1] = (heapprof_record){2, 200, 0, 0, s2, 4, 0, 0};
	r[2] = (heapprof_record){3, 300, 0, 0, s3, 1, 0, 0};
	memset(p, 0, sizeof(*p));
	p->records = r;
	p->nrecords = 3;
	p->rate = 1;
	p->mappings = maps;
	p->nmappings = 3;
	p->symbolize = names;
}

static const char *
str(pprof_dec *d, uint64_t i)
{
	static char b[256];
	size_t n;
	const char *s = heapprof__pprof_string(d, i, &n);
	snprintf(b, sizeof(b), "%.*s", (int)n, s);
	return b;
}

/* The system name of the first function of location index li. */
static const char *
loc_fn(pprof_dec *d, uint32_t li, int system)
{
	pprof_location l;
	if (heapprof__pprof_location(d, li, &l) || l.nlines == 0)
		return "";
	long fi = heapprof__pprof_find_function(d, l.lines[0].function_id);
	pprof_function f;
	if (fi < 0 || heapprof__pprof_function(d, (size_t)fi, &f))
		return "";
	return str(d, system ? f.system_name : f.name);
}

TEST(helpers)
{
	CHECK(heapprof__is_alloc_entry("_Znwm", 5));
	CHECK(heapprof__is_alloc_entry("_Znam", 5));
	CHECK(heapprof__is_alloc_entry("_Znwj", 5));
	CHECK(heapprof__is_alloc_entry("_ZnwmRKSt9nothrow_t", 19));
	CHECK(heapprof__is_alloc_entry("_ZnamSt11align_val_tRKSt9nothrow_t", 34));
	CHECK(!heapprof__is_alloc_entry("_ZdlPv", 6));
	CHECK(!heapprof__is_alloc_entry("_ZN3foo3newEv", 13));
	CHECK(!heapprof__is_alloc_entry("malloc", 6));
	CHECK(!heapprof__is_alloc_entry("_Zn", 3));
	CHECK_EQ(heapprof__sym_unversioned_len("__libc_start_main@@GLIBC_2.34"), 17);
	CHECK_EQ(heapprof__sym_unversioned_len("memcpy@GLIBC_2.2.5"), 6);
	CHECK_EQ(heapprof__sym_unversioned_len("main"), 4);
	CHECK_EQ(heapprof__sym_unversioned_len("@x"), 2);
}

TEST(pprof_writer)
{
	heapprof_heap_profile p;
	heapprof_record r[3];
	profile(&p, r);
	outbuf o = {0};
	REQUIRE_OK(heapprof_encode_heap(&p, 0, out_write, &o));
	pprof_dec d;
	heapprof__pprof_dec_init(&d, NULL, NULL);
	REQUIRE_OK(heapprof__pprof_dec_open(&d, o.p, o.len));
	pprof_sample_iter it;
	pprof_sample s;
	int n = 0;
	heapprof__pprof_samples(&d, &it);
	while (heapprof__pprof_sample_next(&d, &it, &s) == 0) {
		if (s.values[0] == 1) {
			/* _Znwm and its nothrow caller gone: helper is the leaf,
			 * names without their versions. */
			CHECK_EQ(s.nlocations, 3);
			CHECK(!strcmp(loc_fn(&d, s.location_index[0], 1), "helper"));
			CHECK(!strcmp(loc_fn(&d, s.location_index[0], 0), "helper"));
			CHECK(!strcmp(loc_fn(&d, s.location_index[2], 1),
			              "__libc_start_main"));
		} else if (s.values[0] == 2) {
			CHECK_EQ(s.nlocations, 3);
			CHECK(!strcmp(loc_fn(&d, s.location_index[0], 1),
			              "_ZNSt6vectorIiSaIiEE9push_backERKi"));
		} else {
			CHECK_EQ(s.nlocations, 1); /* the last frame stays */
		}
		n++;
	}
	CHECK_EQ(n, 3);
	/* Mappings with names: has_functions; no files: not has_filenames;
	 * the unnamed one: nothing (pprof may symbolize it). */
	pprof_mapping m;
	REQUIRE_OK(heapprof__pprof_mapping(&d, 0, &m));
	CHECK(m.has_functions && !m.has_filenames && !m.has_line_numbers);
	REQUIRE_OK(heapprof__pprof_mapping(&d, 1, &m));
	CHECK(m.has_functions);
	REQUIRE_OK(heapprof__pprof_mapping(&d, 2, &m));
	CHECK(!m.has_functions && !m.has_filenames);
	heapprof__pprof_dec_free(&d);
	free(o.p);
}

TEST(text_writer)
{
	heapprof_heap_profile p;
	heapprof_record r[3];
	profile(&p, r);
	outbuf o = {0};
	REQUIRE_OK(heapprof_encode_heap_text(&p, out_write, &o));
	REQUIRE(o.p != NULL);
	/* Return addresses are written +1: operator new's are 0x9011,
	 * 0x9021, 0x9031; the lone one of record 3 stays. */
	CHECK(strstr((char *)o.p, "@ 0x1031 0x1011 0x1021\n") != NULL);
	CHECK(strstr((char *)o.p, "@ 0x9041 0x20001 0x1011\n") != NULL);
	CHECK(strstr((char *)o.p, "@ 0x9011\n") != NULL);
	CHECK(strstr((char *)o.p, "0x9021") == NULL);
	free(o.p);
}

int
main(void)
{
	RUN(helpers);
	RUN(pprof_writer);
	RUN(text_writer);
	TEST_MAIN_END();
}
