/*
 * test_heap_encode.c: the pprof heap writer (heap_encode.c) against seed
 * 002's exact vectors (Go's TestSampledHeapAllocProfile), plus the legacy
 * text writer (heap_text.c). Decodes with the bare wire reader so the test
 * does not depend on the profile decoder it may one day be compared with.
 */
#include "heapprof.h"
#include "gz.h"
#include "pb.h"
#include "test.h"

/* A decoded view of just what the tests check. */
typedef struct view {
	const char *str[64];
	size_t strlen_[64];
	int nstr;
	int64_t period;
	int nst;
	uint64_t st_type[8], st_unit[8], pt_type, pt_unit;
	int nsample;
	uint64_t s_locs[8][8];
	int s_nlocs[8];
	int64_t s_vals[8][4];
	int64_t s_label_num[8];
	uint64_t s_label_key[8];
	int nloc;
	uint64_t l_id[16], l_addr[16], l_map[16];
	int nmap;
	uint64_t m_start[64];
	int64_t time;
} view;

static int
decode(const uint8_t *p, size_t n, view *v)
{
	memset(v, 0, sizeof(*v));
	pb_reader r;
	pb_field f;
	heapprof__pb_reader_init(&r, p, n);
	while (heapprof__pb_more(&r)) {
		HP_TRY(heapprof__pb_next(&r, &f));
		pb_reader s;
		pb_field g;
		pb_packed it;
		uint64_t x;
		switch (f.num) {
		case 1:
		case 11:
			heapprof__pb_reader_init(&s, f.data, f.len);
			while (heapprof__pb_more(&s)) {
				HP_TRY(heapprof__pb_next(&s, &g));
				uint64_t *dst = f.num == 11
				    ? (g.num == 1 ? &v->pt_type : &v->pt_unit)
				    : (g.num == 1 ? &v->st_type[v->nst] : &v->st_unit[v->nst]);
				*dst = g.v;
			}
			if (f.num == 1)
				v->nst++;
			break;
		case 2:
			heapprof__pb_reader_init(&s, f.data, f.len);
			while (heapprof__pb_more(&s)) {
				HP_TRY(heapprof__pb_next(&s, &g));
				if (g.num == 3) {
					pb_reader lr;
					pb_field lf;
					heapprof__pb_reader_init(&lr, g.data, g.len);
					while (heapprof__pb_more(&lr)) {
						HP_TRY(heapprof__pb_next(&lr, &lf));
						if (lf.num == 1)
							v->s_label_key[v->nsample] = lf.v;
						if (lf.num == 3)
							v->s_label_num[v->nsample] = (int64_t)lf.v;
					}
					continue;
				}
				HP_TRY(heapprof__pb_packed_start(&it, &g));
				int k = 0;
				while (heapprof__pb_packed_next(&it, &x) == 0) {
					if (g.num == 1)
						v->s_locs[v->nsample][v->s_nlocs[v->nsample]++] = x;
					else
						v->s_vals[v->nsample][k++] = (int64_t)x;
				}
			}
			v->nsample++;
			break;
		case 3:
			heapprof__pb_reader_init(&s, f.data, f.len);
			while (heapprof__pb_more(&s)) {
				HP_TRY(heapprof__pb_next(&s, &g));
				if (g.num == 2)
					v->m_start[v->nmap] = g.v;
			}
			v->nmap++;
			break;
		case 4:
			heapprof__pb_reader_init(&s, f.data, f.len);
			while (heapprof__pb_more(&s)) {
				HP_TRY(heapprof__pb_next(&s, &g));
				if (g.num == 1)
					v->l_id[v->nloc] = g.v;
				if (g.num == 2)
					v->l_map[v->nloc] = g.v;
				if (g.num == 3)
					v->l_addr[v->nloc] = g.v;
			}
			v->nloc++;
			break;
		case 6:
			v->str[v->nstr] = (const char *)f.data;
			v->strlen_[v->nstr++] = f.len;
			break;
		case 9:
			v->time = (int64_t)f.v;
			break;
		case 12:
			v->period = (int64_t)f.v;
			break;
		}
	}
	return 0;
}

static int
streq(const view *v, uint64_t id, const char *s)
{
	return id < (uint64_t)v->nstr && v->strlen_[id] == strlen(s) &&
	       memcmp(v->str[id], s, v->strlen_[id]) == 0;
}

TEST(scale_heap_sample)
{
	int64_t c, s;
	heapprof_scale_heap_sample(4, 4096, 512 * 1024, &c, &s);
	CHECK_EQ(c, 2050);
	CHECK_EQ(s, 2099200);
	heapprof_scale_heap_sample(3, 3072, 524288, &c, &s);
	CHECK_EQ(c, 1537);
	CHECK_EQ(s, 1574400);
	heapprof_scale_heap_sample(4, 200, 524288, &c, &s);
	CHECK_EQ(c, 41945);
	CHECK_EQ(s, 2097252);
	heapprof_scale_heap_sample(0, 100, 524288, &c, &s);
	CHECK_EQ(c, 0);
	heapprof_scale_heap_sample(7, 700, 1, &c, &s);
	CHECK_EQ(c, 7);
	CHECK_EQ(s, 700);
	/* Zero-byte objects (malloc(0)) weigh one byte: Go would give 0, 0. */
	heapprof_scale_heap_sample(5, 0, 1, &c, &s);
	CHECK_EQ(c, 5);
	CHECK_EQ(s, 0);
	heapprof_scale_heap_sample(5, 0, 1024, &c, &s);
	CHECK_EQ(c, 5122); /* 5 / (1 - exp(-1/1024)) */
	CHECK_EQ(s, 0);
	heapprof_scale_heap_sample(-2, 0, 1024, &c, &s);
	CHECK_EQ(c, -2049);
}

/* Issue 13, defect 10: each record is unsampled with the rate it was
 * sampled at, whatever the profile's rate is now (0: sampling off). */
TEST(records_keep_their_rate)
{
	uint64_t s1[] = {0x1010}, s2[] = {0x1020}, s3[] = {0x1030};
	heapprof_record recs[3] = {
		{2, 2048, 0, 0, s1, 1, 0, 4096},
		{3, 0, 1, 0, s2, 1, 0, 1024}, /* malloc(0) */
		{4, 400, 0, 0, s3, 1, 0, 0},  /* the profile's rate */
	};
	heapprof_heap_profile p = {0};
	p.records = recs;
	p.nrecords = 3;
	p.rate = 0;
	outbuf o = {0};
	REQUIRE_OK(heapprof_encode_heap(&p, 0, out_write, &o));
	view v;
	REQUIRE_OK(decode(o.p, o.len, &v));
	REQUIRE(v.nsample == 3);
	int64_t c, sz;
	heapprof_scale_heap_sample(2, 2048, 4096, &c, &sz);
	CHECK(c > 2 * 4);
	CHECK_EQ(v.s_vals[0][0], c);
	CHECK_EQ(v.s_vals[0][1], sz);
	CHECK_EQ(v.s_vals[0][2], c);
	CHECK_EQ(v.s_vals[0][3], sz);
	CHECK_EQ(v.s_vals[1][0], 3073);
	CHECK_EQ(v.s_vals[1][1], 0);
	CHECK_EQ(v.s_vals[1][2], 2049);
	CHECK_EQ(v.s_vals[1][3], 0);
	CHECK_EQ(v.s_vals[2][0], 4);
	CHECK_EQ(v.s_vals[2][1], 400);
	free(o.p);
}

/* The legacy text has one rate: the records' when they share one (not
 * the current rate), else heap_v2/1 with counts unsampled per record. */
TEST(text_rates)
{
	uint64_t s1[] = {0x401146}, s2[] = {0x401268};
	heapprof_record recs[2] = {
		{4, 4096, 1, 1024, s1, 1, 0, 65536},
		{2, 200, 0, 0, s2, 1, 0, 65536},
	};
	heapprof_heap_profile p = {0};
	p.records = recs;
	p.nrecords = 2;
	p.rate = 0;
	outbuf o = {0};
	REQUIRE_OK(heapprof_encode_heap_text(&p, out_write, &o));
	out_write(&o, "", 1);
	CHECK_STR((const char *)o.p,
	          "heap profile: 5: 3272 [6: 4296] @ heap_v2/65536\n"
	          "3: 3072 [4: 4096] @ 0x401147\n"
	          "2: 200 [2: 200] @ 0x401269\n"
	          "\nMAPPED_LIBRARIES:\n");
	free(o.p);
	recs[1].rate = 1;
	memset(&o, 0, sizeof(o));
	REQUIRE_OK(heapprof_encode_heap_text(&p, out_write, &o));
	out_write(&o, "", 1);
	int64_t ic, ib, ac, ab;
	heapprof_scale_heap_sample(3, 3072, 65536, &ic, &ib);
	heapprof_scale_heap_sample(4, 4096, 65536, &ac, &ab);
	char want[512];
	snprintf(want, sizeof(want),
	         "heap profile: %lld: %lld [%lld: %lld] @ heap_v2/1\n"
	         "%lld: %lld [%lld: %lld] @ 0x401147\n"
	         "2: 200 [2: 200] @ 0x401269\n"
	         "# heapprof: records sampled at several rates: counts are "
	         "unsampled, hence heap_v2/1\n"
	         "\nMAPPED_LIBRARIES:\n",
	         (long long)ic + 2, (long long)ib + 200, (long long)ac + 2,
	         (long long)ab + 200, (long long)ic, (long long)ib,
	         (long long)ac, (long long)ab);
	CHECK_STR((const char *)o.p, want);
	free(o.p);
}

/* Seed 002: records {4096,1024,4,1}, {512K,0,1,0}, {512K,512K,1,1} at
 * 512 KiB give {2050,2099200,1537,1574400}, {1,829411,1,829411} and
 * {1,829411,0,0}, with locations 1..7 deduplicated by address. */
TEST(seed_002_vectors)
{
	const uint64_t a1 = 0x400000, a2 = 0x7f0000001000;
	heapprof_mapping maps[2] = {
		{a1, a1 + 0x1000, 0, "/bin/main", "abcd"},
		{a2, a2 + 0x1000, 0x1000, "/lib/x.so", NULL},
	};
	uint64_t s1[] = {a1, a2}, s2[] = {a2 + 1, a2 + 2},
		 s3[] = {a1 + 1, a1 + 2, a2 + 3};
	/* Go's MemProfileRecord is {AllocBytes, FreeBytes, AllocObjects,
	 * FreeObjects}. */
	heapprof_record recs[3] = {
		{4, 4096, 1, 1024, s1, 2, 0, 0},
		{1, 512 * 1024, 0, 0, s2, 2, 0, 0},
		{1, 512 * 1024, 1, 512 * 1024, s3, 3, 0, 0},
	};
	heapprof_heap_profile p = {0};
	p.records = recs;
	p.nrecords = 3;
	p.rate = 512 * 1024;
	p.time_nanos = 1234567;
	p.mappings = maps;
	p.nmappings = 2;
	outbuf o = {0};
	REQUIRE_OK(heapprof_encode_heap(&p, 0, out_write, &o));
	view v;
	REQUIRE_OK(decode(o.p, o.len, &v));
	CHECK(streq(&v, 0, ""));
	CHECK_EQ(v.period, 524288);
	CHECK(streq(&v, v.pt_type, "space"));
	CHECK(streq(&v, v.pt_unit, "bytes"));
	REQUIRE(v.nst == 4);
	const char *types[4] = {"alloc_objects", "alloc_space", "inuse_objects",
	                        "inuse_space"};
	const char *units[4] = {"count", "bytes", "count", "bytes"};
	for (int i = 0; i < 4; i++) {
		CHECK(streq(&v, v.st_type[i], types[i]));
		CHECK(streq(&v, v.st_unit[i], units[i]));
	}
	REQUIRE(v.nsample == 3);
	int64_t want[3][4] = {{2050, 2099200, 1537, 1574400},
	                      {1, 829411, 1, 829411},
	                      {1, 829411, 0, 0}};
	for (int i = 0; i < 3; i++)
		for (int k = 0; k < 4; k++)
			CHECK_EQ(v.s_vals[i][k], want[i][k]);
	/* Location ids in order of first use; addresses as given. */
	uint64_t want_locs[3][3] = {{1, 2}, {3, 4}, {5, 6, 7}};
	int want_n[3] = {2, 2, 3};
	for (int i = 0; i < 3; i++) {
		CHECK_EQ(v.s_nlocs[i], want_n[i]);
		for (int k = 0; k < want_n[i]; k++)
			CHECK_EQ(v.s_locs[i][k], want_locs[i][k]);
	}
	REQUIRE(v.nloc == 7);
	uint64_t want_addr[7] = {a1, a2, a2 + 1, a2 + 2, a1 + 1, a1 + 2, a2 + 3};
	uint64_t want_map[7] = {1, 2, 2, 2, 1, 1, 2};
	for (int i = 0; i < 7; i++) {
		CHECK_EQ(v.l_id[i], (uint64_t)i + 1);
		CHECK_EQ(v.l_addr[i], want_addr[i]);
		CHECK_EQ(v.l_map[i], want_map[i]);
	}
	/* Go's "bytes" label: AllocBytes / AllocObjects. */
	CHECK(streq(&v, v.s_label_key[0], "bytes"));
	CHECK_EQ(v.s_label_num[0], 1024);
	CHECK_EQ(v.s_label_num[1], 524288);
	CHECK_EQ(v.nmap, 2);
	CHECK_EQ(v.m_start[0], a1);
	CHECK_EQ(v.time, 1234567);
	free(o.p);
}

TEST(gzip_roundtrip_and_symbols)
{
	uint64_t s1[] = {0x1010, 0x2020, 0x1010};
	heapprof_record rec = {10, 1000, 5, 500, s1, 3, 0, 0};
	heapprof_mapping m = {0x1000, 0x3000, 0, "/x", NULL};
	heapprof_heap_profile p = {0};
	p.records = &rec;
	p.nrecords = 1;
	p.rate = 1;
	p.mappings = &m;
	p.nmappings = 1;
	outbuf o = {0};
	REQUIRE_OK(heapprof_encode_heap(&p, HEAPPROF_ENCODE_GZIP, out_write, &o));
	CHECK(heapprof__gz_is_gzip(o.p, o.len));
	uint8_t *raw;
	size_t rawlen;
	REQUIRE_OK(heapprof__gunzip(o.p, o.len, 1 << 20, NULL, NULL, &raw, &rawlen));
	view v;
	REQUIRE_OK(decode(raw, rawlen, &v));
	REQUIRE(v.nsample == 1);
	/* Rate 1: nothing unsampled. A repeated address reuses its location. */
	CHECK_EQ(v.s_vals[0][0], 10);
	CHECK_EQ(v.s_vals[0][3], 500);
	CHECK_EQ(v.nloc, 2);
	CHECK_EQ(v.s_locs[0][2], 1);
	free(raw);
	free(o.p);
}

/* A small and a large profile (3,000 records, several deflate blocks)
 * inflate to exactly their unzipped encoding. */
TEST(gzip_small_and_large_profiles)
{
	size_t counts[2] = {10, 3000};
	for (int c = 0; c < 2; c++) {
		size_t n = counts[c];
		heapprof_record *recs = calloc(n, sizeof(*recs));
		uint64_t *stacks = calloc(n * 3, sizeof(*stacks));
		REQUIRE(recs && stacks);
		for (size_t i = 0; i < n; i++) {
			stacks[3 * i] = 0x1000 + 16 * i;
			stacks[3 * i + 1] = 0x2000 + 8 * (i % 97);
			stacks[3 * i + 2] = 0x1010;
			heapprof_record r = {i + 1, 64 * (i + 1), i % 3, 64 * (i % 3),
			                     &stacks[3 * i], 3, 0, 0};
			recs[i] = r;
		}
		heapprof_mapping m = {0x1000, 0x100000, 0, "/x", NULL};
		heapprof_heap_profile p = {0};
		p.records = recs;
		p.nrecords = n;
		p.rate = 1;
		p.mappings = &m;
		p.nmappings = 1;
		outbuf plain = {0}, gz = {0};
		REQUIRE_OK(heapprof_encode_heap(&p, 0, out_write, &plain));
		REQUIRE_OK(heapprof_encode_heap(&p, HEAPPROF_ENCODE_GZIP, out_write, &gz));
		uint8_t *raw;
		size_t rawlen;
		REQUIRE_OK(heapprof__gunzip(gz.p, gz.len, 1 << 26, NULL, NULL, &raw,
		                            &rawlen));
		CHECK_EQ(rawlen, plain.len);
		CHECK(rawlen == plain.len && memcmp(raw, plain.p, rawlen) == 0);
		CHECK(gz.len < plain.len);
		free(raw);
		free(gz.p);
		free(plain.p);
		free(stacks);
		free(recs);
	}
}

TEST(text_format)
{
	uint64_t s1[] = {0x401146, 0x401268}, s2[] = {0x401146};
	heapprof_record recs[2] = {
		{3, 3072, 2, 2048, s1, 2, 0, 0},
		{4, 200, 2, 100, s2, 1, 0, 0},
	};
	heapprof_mapping m = {0x401000, 0x402000, 0x1000, "/abs/bin", NULL};
	heapprof_heap_profile p = {0};
	p.records = recs;
	p.nrecords = 2;
	p.rate = 524288;
	p.mappings = &m;
	p.nmappings = 1;
	outbuf o = {0};
	REQUIRE_OK(heapprof_encode_heap_text(&p, out_write, &o));
	out_write(&o, "", 1);
	const char *want =
		"heap profile: 3: 1124 [7: 3272] @ heap_v2/524288\n"
		"1: 1024 [3: 3072] @ 0x401147 0x401269\n"
		"2: 100 [4: 200] @ 0x401147\n"
		"\nMAPPED_LIBRARIES:\n"
		"00401000-00402000 r-xp 00001000 00:00 0 /abs/bin\n";
	CHECK_STR((const char *)o.p, want);
	free(o.p);
}

TEST(bad_arguments)
{
	heapprof_heap_profile p = {0};
	p.rate = -1;
	outbuf o = {0};
	CHECK_EQ(heapprof_encode_heap(&p, 0, out_write, &o), -22);
	CHECK_EQ(heapprof_encode_heap(NULL, 0, out_write, &o), -22);
	p.rate = 1;
	p.nrecords = 1;
	CHECK_EQ(heapprof_encode_heap_text(&p, out_write, &o), -22);
}

TEST(inuse_only_delta_and_header_fields)
{
	/* A delta record (negative in-use change) and one that ends up all
	 * zero once alloc values are dropped. */
	uint64_t s1[] = {0x1010}, s2[] = {0x1020}, s3[] = {0x1030};
	heapprof_record recs[3] = {
		{0, 0, 2, 200, s1, 1, 100, 0},  /* only frees in the window */
		{4, 400, 0, 0, s2, 1, 0, 0},     /* allocations, still live */
		{3, 300, 3, 300, s3, 1, 0, 0},   /* allocated and freed */
	};
	heapprof_heap_profile p = {0};
	p.records = recs;
	p.nrecords = 3;
	p.rate = 1;
	p.default_sample_type = "alloc_space";
	p.duration_nanos = 2000000000;
	outbuf o = {0};
	REQUIRE_OK(heapprof_encode_heap(&p, HEAPPROF_ENCODE_INUSE_ONLY |
	                                        HEAPPROF_ENCODE_DROP_ZERO,
	                                out_write, &o));
	view v;
	REQUIRE_OK(decode(o.p, o.len, &v));
	REQUIRE(v.nsample == 2);
	CHECK_EQ(v.s_vals[0][0], 0);
	CHECK_EQ(v.s_vals[0][2], -2);
	CHECK_EQ(v.s_vals[0][3], -200);
	CHECK_EQ(v.s_label_num[0], 100); /* object_size when no allocs */
	CHECK_EQ(v.s_vals[1][1], 0);
	CHECK_EQ(v.s_vals[1][3], 400);
	/* Only the locations of written samples are emitted. */
	CHECK_EQ(v.nloc, 2);
	/* duration (10) and default_sample_type (14) are present. */
	pb_reader r;
	pb_field f;
	int64_t dur = 0;
	uint64_t dflt = 0;
	heapprof__pb_reader_init(&r, o.p, o.len);
	while (heapprof__pb_more(&r) && heapprof__pb_next(&r, &f) == 0) {
		if (f.num == 10)
			dur = (int64_t)f.v;
		if (f.num == 14)
			dflt = f.v;
	}
	CHECK_EQ(dur, 2000000000);
	CHECK(streq(&v, dflt, "alloc_space"));
	free(o.p);
	/* Without DROP_ZERO the third record stays, with zero in-use. */
	memset(&o, 0, sizeof(o));
	REQUIRE_OK(heapprof_encode_heap(&p, 0, out_write, &o));
	REQUIRE_OK(decode(o.p, o.len, &v));
	CHECK_EQ(v.nsample, 3);
	CHECK_EQ(v.s_vals[2][0], 3);
	free(o.p);
}

int
main(void)
{
	RUN(scale_heap_sample);
	RUN(records_keep_their_rate);
	RUN(text_rates);
	RUN(seed_002_vectors);
	RUN(gzip_roundtrip_and_symbols);
	RUN(gzip_small_and_large_profiles);
	RUN(text_format);
	RUN(bad_arguments);
	RUN(inuse_only_delta_and_header_fields);
	TEST_MAIN_END();
}
