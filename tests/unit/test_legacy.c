/*
 * test_legacy.c: unit tests of the legacy heap readers and converters
 * (src/format/legacy_*.c): the exact unsampling vectors of
 * ../shared/notes/formats.md section 3, `heap/N` == `heap_v2/N/2`,
 * `heapprofile` unscaled, the sample-type rule, labels, address handling,
 * both memory-map forms and pprof's mapping fix-ups, jemalloc dumps,
 * malformed input of every kind, the regex engine's leftmost-first
 * semantics, and the pprof -> text -> pprof round trip.
 */
#include <errno.h>

#include "heapprof.h"
#include "legacy_parse.h"
#include "legacy_re.h"
#include "test.h"

static int
parse_str(const char *s, hp_legacy *p, hp_legacy_err *e)
{
	return heapprof__legacy_parse(s, strlen(s), p, e);
}

static const char vec_maps[] =
	"\nMAPPED_LIBRARIES:\n"
	"00401000-00402000 r-xp 00001000 00:00 0 /abs/path/to/binary\n";

/* The formats.md vector: two samples, two locations, one mapping. */
static void
check_vector(const char *header)
{
	char buf[512];
	snprintf(buf, sizeof(buf),
	         "%s\n1: 1024 [3: 3072] @ 0x401147 0x401269\n"
	         "2: 100 [4: 200] @ 0x401147\n%s",
	         header, vec_maps);
	hp_legacy p;
	hp_legacy_err e;
	int rc = parse_str(buf, &p, &e);
	if (rc) {
		T_FAIL("%s: %s (line %zu)", header, heapprof_strerror(rc), e.line);
		return;
	}
	CHECK_EQ(p.ntypes, 4);
	CHECK_EQ(p.period, 524288);
	CHECK_EQ(p.nsamples, 2);
	CHECK_EQ(p.nlocs, 2);
	CHECK_EQ(p.nmaps, 1);
	if (p.nsamples == 2 && p.nlocs == 2 && p.nmaps == 1) {
		const int64_t want[8] = {1537, 1574400, 512, 524800,
		                         41945, 2097252, 20972, 1048626};
		for (int i = 0; i < 8; i++)
			CHECK_EQ(p.values[i], want[i]);
		CHECK_EQ(p.label[0], 1024);
		CHECK_EQ(p.label[1], 50);
		CHECK_EQ(p.loc_addr[0], 0x401146);
		CHECK_EQ(p.loc_addr[1], 0x401268);
		CHECK_EQ(p.loc_map[0], 1);
		CHECK_EQ(p.loc_map[1], 1);
		CHECK_EQ(p.stack_at[2] - p.stack_at[1], 1);
		CHECK_EQ(p.stack[2], 0); /* shared location */
		/* non-PIE heuristic: 0x401000 - 0x1000 == 0x400000 */
		CHECK_EQ(p.maps[0].start, 0x400000);
		CHECK_EQ(p.maps[0].offset, 0);
		CHECK_EQ(p.maps[0].limit, 0x402000);
		CHECK_STR(p.maps[0].file, "/abs/path/to/binary");
	}
	heapprof__legacy_free(&p);
}

TEST(vector_heap_v2)
{
	check_vector("heap profile: 1: 1024 [ 3: 3072] @ heap_v2/524288");
}

TEST(vector_heap_half_rate)
{
	/* heap/N is period N/2 with the same unsampling. */
	check_vector("heap profile: 1: 1024 [ 3: 3072] @ heap/1048576");
	check_vector("heap profile: 1: 1024 [ 3: 3072] @ heapz_v2/524288");
}

TEST(heapprofile_unscaled)
{
	const char *s =
		"heap profile: 1: 1024 [ 3: 3072] @ heapprofile\n"
		"1: 1024 [3: 3072] @ 0x401147 0x401269\n"
		"2: 100 [4: 200] @ 0x401147\n"
		"--- Memory map: ---\n"
		"0x401000-0x402000 /abs/path/to/binary\n";
	hp_legacy p;
	hp_legacy_err e;
	REQUIRE_OK(parse_str(s, &p, &e));
	CHECK_EQ(p.period, 1);
	CHECK_EQ(p.ntypes, 4);
	const int64_t want[8] = {3, 3072, 1, 1024, 4, 200, 2, 100};
	for (int i = 0; i < 8 && p.nsamples == 2; i++)
		CHECK_EQ(p.values[i], want[i]);
	CHECK_EQ(p.nmaps, 1);
	if (p.nmaps == 1) {
		/* brief form, no offset: 0x401000 - 0 != 0x400000, kept */
		CHECK_EQ(p.maps[0].start, 0x401000);
		CHECK_STR(p.maps[0].file, "/abs/path/to/binary");
	}
	heapprof__legacy_free(&p);
}

TEST(has_alloc_rule)
{
	/* alloc == inuse in the header: two types, the in-use pair. */
	hp_legacy p;
	hp_legacy_err e;
	REQUIRE_OK(parse_str("heap profile: 2: 64 [2: 64] @ heapprofile\n"
	                     "2: 64 [5: 999] @ 0x10\n", &p, &e));
	CHECK_EQ(p.ntypes, 2);
	CHECK_EQ(p.values[0], 2);
	CHECK_EQ(p.values[1], 64);
	CHECK_EQ(p.label[0], 32);
	heapprof__legacy_free(&p);
	/* "0" allocation pair: two types too. */
	REQUIRE_OK(parse_str("heap profile: 2: 64 [0: 0] @ heapprofile\n", &p, &e));
	CHECK_EQ(p.ntypes, 2);
	CHECK_EQ(p.nsamples, 0);
	heapprof__legacy_free(&p);
	/* Compared as text: "02" differs from "2". */
	REQUIRE_OK(parse_str("heap profile: 2: 64 [02: 64] @ heapprofile\n", &p, &e));
	CHECK_EQ(p.ntypes, 4);
	heapprof__legacy_free(&p);
	/* growthz: period 1, two types. */
	REQUIRE_OK(parse_str("heap profile: 1: 2 [3: 4] @ growthz\n1: 2 [1: 2] @ 0x5\n",
	                     &p, &e));
	CHECK_EQ(p.ntypes, 2);
	CHECK_EQ(p.period, 1);
	CHECK_STR(p.sampler, "growthz");
	heapprof__legacy_free(&p);
}

TEST(labels_and_zero_pairs)
{
	hp_legacy p;
	hp_legacy_err e;
	/* In-use count 0: the label comes from the allocation pair; the
	 * in-use values stay 0. Negative in-use counts are allowed. */
	REQUIRE_OK(parse_str("heap profile: 1: 1 [9: 9] @ heap_v2/1\n"
	                     "0: 0 [4: 400] @ 0x2\n"
	                     "-2: -64 [4: 400] @ 0x2\n", &p, &e));
	REQUIRE(p.nsamples == 2);
	CHECK_EQ(p.label[0], 100);
	CHECK_EQ(p.values[2], 0);
	CHECK_EQ(p.values[3], 0);
	CHECK_EQ(p.values[6], -2);
	CHECK_EQ(p.values[7], -64);
	CHECK_EQ(p.label[1], 32);
	CHECK_EQ(p.period, 1); /* rate 1: no unsampling */
	heapprof__legacy_free(&p);
}

TEST(addresses)
{
	hp_legacy p;
	hp_legacy_err e;
	/* Lower-case hex only; text around the pattern ignored; 0x0 wraps;
	 * 0x1 gives address 0 (no mapping); leading zeros fine. */
	REQUIRE_OK(parse_str("heap profile: 1: 1 [1: 1] @ heapprofile\n"
	                     "junk 1: 1 [1: 1] @ 0x0 0x1 0x00000000000000000abc "
	                     "0xABC\n", &p, &e));
	REQUIRE(p.nsamples == 1);
	CHECK_EQ(p.stack_at[1], 3);
	CHECK(p.loc_addr[0] == UINT64_MAX);
	CHECK_EQ(p.loc_addr[1], 0);
	CHECK_EQ(p.loc_addr[2], 0xabb);
	CHECK_EQ(p.loc_map[1], 0);
	CHECK_EQ(p.loc_map[2], 1); /* the fake mapping */
	REQUIRE(p.nmaps == 1);
	CHECK(p.maps[0].start == 0 && p.maps[0].limit == UINT64_MAX);
	heapprof__legacy_free(&p);
}

TEST(malformed)
{
	static const struct {
		const char *text;
		int rc;
		size_t line;
	} cases[] = {
		{"hello\n", HEAPPROF_ENOTLEGACY, 1},
		{"heap profile: 1: 1 [1: 1] @ heapz/2\n", HEAPPROF_ENOTLEGACY, 1},
		{"heap profile: 1: 1 [1: 1] @ heap_v2/99999999999999999999\n",
		 HEAPPROF_ENOTLEGACY, 1},
		{"heap profile: 1: 1 [1: 1] @ heap_v2/2\n1: 1 [1: 1] 0x1\n",
		 HEAPPROF_ESAMPLE, 2},
		{"heap profile: 1: 1 [1: 1] @ heap_v2/2\n\n# c\n1: 1 [-1: 1] @ 0x1\n",
		 HEAPPROF_ESAMPLE, 4},
		{"heap profile: 1: 1 [1: 1] @ heap_v2/2\n"
		 "99999999999999999999: 1 [1: 1] @ 0x1\n", HEAPPROF_ESAMPLE, 2},
		{"heap profile: 1: 1 [1: 1] @ heap_v2/2\n0: 5 [1: 1] @ 0x1\n",
		 HEAPPROF_EZEROCOUNT, 2},
		{"heap profile: 1: 1 [2: 1] @ heap_v2/2\n1: 1 [0: 3] @ 0x1\n",
		 HEAPPROF_EZEROCOUNT, 2},
		{"heap profile: 1: 1 [1: 1] @ heap_v2/2\n1: 1 [1: 1] @ "
		 "0x10000000000000000\n", HEAPPROF_EADDR, 2},
		{"heap_v2/x\n", HEAPPROF_EJEMALLOC, 1},
		{"heap_v2/8\n@ 0x1 0xq\n", HEAPPROF_EJEMALLOC, 2},
		{"heap_v2/8\n@ 0x1\n  t*: 1: 0 [1: 0]\n", HEAPPROF_EJEMALLOC, 3},
		{"heap_v2/8\n@ 0x1\n  t*: 1 8 [1: 8]\n", HEAPPROF_EJEMALLOC, 3},
		{"heap_v2/8\nstray\n", HEAPPROF_EJEMALLOC, 2},
		{"", HEAPPROF_EEMPTY, 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		hp_legacy p;
		hp_legacy_err e;
		int rc = parse_str(cases[i].text, &p, &e);
		if (rc != cases[i].rc || e.line != cases[i].line)
			T_FAIL("case %zu: rc %d line %zu, want %d line %zu", i, rc,
			       e.line, cases[i].rc, cases[i].line);
		CHECK_EQ(p.nsamples, 0); /* left empty */
	}
}

TEST(maps_forms_and_fixups)
{
	const char *s =
		"heap profile: 1: 1 [1: 1] @ heapprofile\n"
		"1: 1 [1: 1] @ 0x7f0000001001 0x555500001001 0x555500003001\n"
		"MAPPED_LIBRARIES:\n"
		"libdir=/usr/lib\n"
		"7f0000000000-7f0000001000 r--p 00000000 08:01 5 $libdir/libc.so.6\n"
		"7f0000001000-7f0000002000 r-xp 00001000 08:01 5 $libdir/libc.so.6\n"
		"555500000000-555500001000 r--p 00000000 08:01 7 /bin/prog\n"
		"555500001000-555500002000 r-xp 00001000 08:01 7 /bin/prog\n"
		"555500002000-555500003000 r-xp 00002000 08:01 7 /bin/prog\n"
		"I0101 12:00:00 x.cc:42] 0x600000-0x601000 r-xp /x/y (@10) cafe01\n"
		"0x700000-0x701000 r-xp (@10) cafe02\n"
		"not a mapping at all\n";
	hp_legacy p;
	hp_legacy_err e;
	REQUIRE_OK(parse_str(s, &p, &e));
	/* libc, prog (two adjacent segments merged), the glog line, the
	 * brief line without a file (pprof's pattern then takes "(@10)" for
	 * the file); prog swapped to the front; 0x555500003000 is in no
	 * mapping: fake. */
	REQUIRE(p.nmaps == 5);
	CHECK_STR(p.maps[0].file, "/bin/prog");
	CHECK_EQ(p.maps[0].start, 0x555500001000);
	CHECK_EQ(p.maps[0].limit, 0x555500003000);
	CHECK_STR(p.maps[1].file, "/usr/lib/libc.so.6");
	CHECK_EQ(p.maps[2].start, 0x600000);
	CHECK_EQ(p.maps[2].offset, 0x10);
	CHECK_STR(p.maps[2].build_id, "cafe01");
	CHECK_STR(p.maps[2].file, "/x/y");
	CHECK_STR(p.maps[3].file, "(@10)");
	CHECK_EQ(p.maps[3].offset, 0);
	CHECK_STR(p.maps[3].build_id, "cafe02");
	CHECK(p.maps[4].start == 0 && p.maps[4].limit == UINT64_MAX);
	CHECK_EQ(p.loc_map[0], 2);
	CHECK_EQ(p.loc_map[1], 1);
	CHECK_EQ(p.loc_map[2], 5);
	heapprof__legacy_free(&p);
}

/* The allocator's leading frames (its shared library's) are dropped; the
 * locations left are renumbered in order of first use; a stack entirely
 * in the allocator and one whose leaf is in the executable stay whole. */
TEST(jemalloc_trim)
{
	const char *s =
		"heap_v2/1\n"
		"  t*: 3: 300 [0: 0]\n"
		"@ 0x7f0000001001 0x7f0000002001 0x401001 0x402001\n"
		"  t*: 1: 100 [0: 0]\n"
		"@ 0x7f0000001001 0x7f0000003001\n"
		"  t*: 1: 100 [0: 0]\n"
		"@ 0x401001 0x402001\n"
		"  t*: 1: 100 [0: 0]\n"
		"MAPPED_LIBRARIES:\n"
		"00400000-00410000 r-xp 00000000 00:00 0 /bin/prog\n"
		"7f0000000000-7f0000010000 r-xp 00000000 00:00 0 /usr/lib/libjemalloc.so.2\n";
	hp_legacy p;
	hp_legacy_err e;
	REQUIRE_OK(parse_str(s, &p, &e));
	REQUIRE(p.nsamples == 3);
	CHECK_EQ(p.stack_at[1] - p.stack_at[0], 2); /* prog frames only */
	CHECK_EQ(p.loc_addr[p.stack[p.stack_at[0]]], 0x401000);
	CHECK_EQ(p.stack[p.stack_at[0]], 0); /* renumbered */
	CHECK_EQ(p.stack_at[2] - p.stack_at[1], 2); /* all allocator: whole */
	CHECK_EQ(p.loc_addr[p.stack[p.stack_at[1]]], 0x7f0000001000);
	CHECK_EQ(p.stack_at[3] - p.stack_at[2], 2);
	CHECK_EQ(p.nlocs, 4);
	heapprof__legacy_free(&p);
}

TEST(jemalloc_dump)
{
	const char *s =
		"heap_v2/524288\n"
		"  t*: 3: 3072 [5: 5120]\n"
		"  t0: 3: 3072 [5: 5120]\n"
		"@ 0x401147 0x401269\n"
		"  t*: 1: 1024 [3: 3072]\n"
		"  t0: 1: 1024 [3: 3072]\n"
		"@ 0x401147\n"
		"  t*: 2: 100 [0: 0]\n"
		"\n"
		"MAPPED_LIBRARIES:\n"
		"00401000-00402000 r-xp 00001000 00:00 0 /abs/path/to/binary\n";
	hp_legacy p;
	hp_legacy_err e;
	REQUIRE_OK(parse_str(s, &p, &e));
	CHECK_EQ(p.kind, HP_LEGACY_JEMALLOC);
	CHECK_EQ(p.ntypes, 4);
	CHECK_EQ(p.period, 524288);
	REQUIRE(p.nsamples == 2);
	/* jeprof's formula, truncated: the same numbers as pprof's v2 here */
	CHECK_EQ(p.values[0], 1537);
	CHECK_EQ(p.values[1], 1574400);
	CHECK_EQ(p.values[2], 512);
	CHECK_EQ(p.values[3], 524800);
	CHECK_EQ(p.values[4], 0);
	CHECK_EQ(p.values[5], 0);
	CHECK_EQ(p.values[6], 20972);
	CHECK_EQ(p.values[7], 1048626);
	CHECK_EQ(p.label[0], 1024);
	CHECK_EQ(p.label[1], 50);
	CHECK_EQ(p.loc_addr[0], 0x401146); /* leaf adjusted too */
	CHECK_EQ(p.nmaps, 1);
	heapprof__legacy_free(&p);
	/* jeprof scales even at rate 1. */
	REQUIRE_OK(parse_str("heap_v2/1\n@ 0x10\n  t*: 1000: 8000 [1000: 8000]\n",
	                     &p, &e));
	REQUIRE(p.nsamples == 1);
	CHECK_EQ(p.values[0], 1000); /* 1000.34 */
	CHECK_EQ(p.values[1], 8002); /* 8002.68 */
	heapprof__legacy_free(&p);
}

TEST(regex_leftmost_first)
{
	hp_re *re;
	long c[8];
	REQUIRE_OK(heapprof__re_compile("(a+)(a*)b|(x)", &re));
	CHECK_EQ(heapprof__re_search(re, "zzaaab", 6, c), 1);
	CHECK(c[0] == 2 && c[1] == 6 && c[2] == 2 && c[3] == 5 && c[4] == 5 &&
	      c[6] == -1);
	CHECK_EQ(heapprof__re_search(re, "zzaaa", 5, c), 0);
	heapprof__re_free(re);
	/* Two hex runs without a separator: the first takes all it can. */
	REQUIRE_OK(heapprof__re_compile("^([[:xdigit:]]+)[\\s-]?([[:xdigit:]]+)$", &re));
	CHECK_EQ(heapprof__re_search(re, "12345678", 8, c), 1);
	CHECK(c[2] == 0 && c[3] == 7 && c[4] == 7 && c[5] == 8);
	heapprof__re_free(re);
	CHECK_EQ(heapprof__re_compile("(a", &re), -EINVAL);
	CHECK_EQ(heapprof__re_compile("[z-a]", &re), -EINVAL);
}

static int
buf_write(void *arg, const void *p, size_t n)
{
	struct {
		char *p;
		size_t n;
	} *b = arg;
	char *q = realloc(b->p, b->n + n + 1);
	if (!q)
		return -ENOMEM;
	memcpy(q + b->n, p, n);
	b->p = q;
	b->n += n;
	b->p[b->n] = 0;
	return 0;
}

TEST(round_trip_text)
{
	char src[512];
	snprintf(src, sizeof(src),
	         "heap profile: 1: 1024 [ 3: 3072] @ heap_v2/524288\n"
	         "1: 1024 [3: 3072] @ 0x401147 0x401269\n"
	         "2: 100 [4: 200] @ 0x401147\n%s", vec_maps);
	struct {
		char *p;
		size_t n;
	} pb = {NULL, 0}, txt = {NULL, 0};
	size_t line;
	REQUIRE_OK(heapprof_legacy_to_pprof(src, strlen(src), 0, buf_write, &pb,
	                                    &line));
	CHECK_EQ(heapprof_pprof_check(pb.p, pb.n, 0), 0);
	REQUIRE_OK(heapprof_pprof_to_legacy(pb.p, pb.n, buf_write, &txt));
	CHECK(strstr(txt.p, "@ heapprofile\n") != NULL);
	CHECK(strstr(txt.p, "512: 524800 [1537: 1574400] @ 0x401147 0x401269\n"));
	CHECK(strstr(txt.p, "\nMAPPED_LIBRARIES:\n00400000-00402000 r-xp "));
	hp_legacy p;
	hp_legacy_err e;
	REQUIRE_OK(heapprof__legacy_parse(txt.p, txt.n, &p, &e));
	CHECK_EQ(p.ntypes, 4);
	CHECK_EQ(p.period, 1);
	const int64_t want[8] = {1537, 1574400, 512, 524800,
	                         41945, 2097252, 20972, 1048626};
	for (int i = 0; i < 8 && p.nsamples == 2; i++)
		CHECK_EQ(p.values[i], want[i]);
	CHECK_EQ(p.loc_addr[0], 0x401146);
	heapprof__legacy_free(&p);
	free(pb.p);
	free(txt.p);

	/* Four types whose allocation totals equal the in-use ones keep four
	 * types through the text ("0" prefix in the header). */
	const char *same = "heap profile: 1: 8 [01: 8] @ heapprofile\n"
	                   "1: 8 [1: 8] @ 0x10\n";
	pb.p = txt.p = NULL;
	pb.n = txt.n = 0;
	REQUIRE_OK(heapprof_legacy_to_pprof(same, strlen(same), 0, buf_write,
	                                    &pb, &line));
	REQUIRE_OK(heapprof_pprof_to_legacy(pb.p, pb.n, buf_write, &txt));
	CHECK(strncmp(txt.p, "heap profile: 1: 8 [01: 8] @ heapprofile\n", 41) == 0);
	free(pb.p);
	free(txt.p);
}

int
main(void)
{
	RUN(vector_heap_v2);
	RUN(vector_heap_half_rate);
	RUN(heapprofile_unscaled);
	RUN(has_alloc_rule);
	RUN(labels_and_zero_pairs);
	RUN(addresses);
	RUN(malformed);
	RUN(maps_forms_and_fixups);
	RUN(jemalloc_dump);
	RUN(jemalloc_trim);
	RUN(regex_leftmost_first);
	RUN(round_trip_text);
	TEST_MAIN_END();
}
