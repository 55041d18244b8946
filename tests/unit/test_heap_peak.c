/*
 * test_heap_peak.c: the peak sample types of the heap writer
 * (HEAPPROF_ENCODE_PEAK): Go's four types first, then peak_objects and
 * peak_space, unsampled with each record's rate; default_sample_type
 * inuse_space unless given; a record with nothing in use but a peak is
 * kept by DROP_ZERO; without the flag (or without peaks) Go's four only.
 */
#include "heapprof.h"
#include "pprof_dec.h"
#include "test.h"

static const uint64_t stack_a[] = {0x1000, 0x2000};
static const uint64_t stack_b[] = {0x1100, 0x2000};

/* Two records at rate 1000: a (100-byte objects) has 2 in use and had 9
 * at the peak; b (4000-byte objects) has none in use and had 3. */
static void
profile(heapprof_heap_profile *p, heapprof_record r[2], heapprof_peak pk[2])
{
	memset(p, 0, sizeof(*p));
	memset(r, 0, 2 * sizeof(*r));
	r[0] = (heapprof_record){10, 1000, 8, 800, stack_a, 2, 100, 0};
	r[1] = (heapprof_record){5, 20000, 5, 20000, stack_b, 2, 4000, 0};
	pk[0] = (heapprof_peak){9, 900};
	pk[1] = (heapprof_peak){3, 12000};
	p->records = r;
	p->nrecords = 2;
	p->rate = 1000;
	p->peaks = pk;
}

TEST(six_types_unsampled)
{
	heapprof_heap_profile p;
	heapprof_record r[2];
	heapprof_peak pk[2];
	profile(&p, r, pk);
	r[1].alloc_objects = r[1].free_objects = 0; /* a delta: no allocs */
	r[1].alloc_bytes = r[1].free_bytes = 0;
	outbuf o = {0};
	REQUIRE_OK(heapprof_encode_heap(&p, HEAPPROF_ENCODE_PEAK |
	                                        HEAPPROF_ENCODE_DROP_ZERO,
	                                out_write, &o));
	pprof_dec d;
	heapprof__pprof_dec_init(&d, NULL, NULL);
	REQUIRE_OK(heapprof__pprof_dec_open(&d, o.p, o.len));
	static const char *const types[] = {"alloc_objects", "alloc_space",
	                                    "inuse_objects", "inuse_space",
	                                    "peak_objects", "peak_space"};
	REQUIRE(d.ntypes == 6);
	for (size_t i = 0; i < 6; i++)
		CHECK(heapprof__pprof_string_eq(&d, d.types[i].type, types[i]));
	CHECK(heapprof__pprof_string_eq(&d, d.types[5].unit, "bytes"));
	CHECK(heapprof__pprof_string_eq(&d, d.default_sample_type, "inuse_space"));
	pprof_sample_iter it;
	pprof_sample s;
	heapprof__pprof_samples(&d, &it);
	int n = 0;
	while (heapprof__pprof_sample_next(&d, &it, &s) == 0) {
		int64_t c, b;
		if (n == 0) {
			heapprof_scale_heap_sample(9, 900, 1000, &c, &b);
			CHECK_EQ(s.values[4], c);
			CHECK_EQ(s.values[5], b);
			CHECK(s.values[5] > 900); /* unsampled */
		} else {
			/* nothing in use, kept for its peak */
			CHECK_EQ(s.values[3], 0);
			heapprof_scale_heap_sample(3, 12000, 1000, &c, &b);
			CHECK_EQ(s.values[5], b);
		}
		n++;
	}
	CHECK_EQ(n, 2);
	heapprof__pprof_dec_free(&d);
	free(o.p);
}

TEST(without_flag_go_four)
{
	heapprof_heap_profile p;
	heapprof_record r[2];
	heapprof_peak pk[2];
	profile(&p, r, pk);
	p.default_sample_type = NULL;
	outbuf o = {0};
	REQUIRE_OK(heapprof_encode_heap(&p, HEAPPROF_ENCODE_DROP_ZERO, out_write,
	                                &o));
	pprof_dec d;
	heapprof__pprof_dec_init(&d, NULL, NULL);
	REQUIRE_OK(heapprof__pprof_dec_open(&d, o.p, o.len));
	CHECK(d.ntypes == 4);
	CHECK(d.default_sample_type == 0);
	pprof_sample_iter it;
	pprof_sample s;
	heapprof__pprof_samples(&d, &it);
	int n = 0;
	while (heapprof__pprof_sample_next(&d, &it, &s) == 0) {
		CHECK_EQ(s.nvalues, 4);
		n++;
	}
	CHECK_EQ(n, 2);
	heapprof__pprof_dec_free(&d);
	free(o.p);
	/* The flag without peaks: Go's four too. */
	p.peaks = NULL;
	memset(&o, 0, sizeof(o));
	REQUIRE_OK(heapprof_encode_heap(&p, HEAPPROF_ENCODE_PEAK, out_write, &o));
	heapprof__pprof_dec_init(&d, NULL, NULL);
	REQUIRE_OK(heapprof__pprof_dec_open(&d, o.p, o.len));
	CHECK(d.ntypes == 4);
	heapprof__pprof_dec_free(&d);
	free(o.p);
}

TEST(given_default_kept)
{
	heapprof_heap_profile p;
	heapprof_record r[2];
	heapprof_peak pk[2];
	profile(&p, r, pk);
	p.default_sample_type = "alloc_space";
	outbuf o = {0};
	REQUIRE_OK(heapprof_encode_heap(&p, HEAPPROF_ENCODE_PEAK, out_write, &o));
	pprof_dec d;
	heapprof__pprof_dec_init(&d, NULL, NULL);
	REQUIRE_OK(heapprof__pprof_dec_open(&d, o.p, o.len));
	CHECK(heapprof__pprof_string_eq(&d, d.default_sample_type, "alloc_space"));
	heapprof__pprof_dec_free(&d);
	free(o.p);
}

int
main(void)
{
	RUN(six_types_unsampled);
	RUN(without_flag_go_four);
	RUN(given_default_kept);
	TEST_MAIN_END();
}
