/*
 * test_heap_age.c: the age split of in-use samples (format/heap_age.c and
 * the encoder's age samples): the class table, how a record's unsampled
 * in-use values are shared among its age parts (exactly, and never more
 * than the record has), the age_s labels on the wire (key, num, num_unit
 * "seconds", in-use values only, alloc values left on the unlabelled
 * sample), and that merge and delta keep them apart and add up.
 */
#include "heapprof.h"
#include "heap_encode.h"
#include "pprof_dec.h"
#include "test.h"

TEST(classes)
{
	CHECK_EQ(heapprof__age_class_of_ms(-5), 0);
	CHECK_EQ(heapprof__age_class_of_ms(0), 0);
	CHECK_EQ(heapprof__age_class_of_ms(999), 0);
	CHECK_EQ(heapprof__age_class_of_ms(1000), 1);
	CHECK_EQ(heapprof__age_class_of_ms(4999), 2);
	CHECK_EQ(heapprof__age_class_of_ms(5000), 3);
	CHECK_EQ(heapprof__age_class_floor(heapprof__age_class_of_ms(599999)), 300);
	CHECK_EQ(heapprof__age_class_floor(heapprof__age_class_of_ms(600000)), 600);
	CHECK_EQ(heapprof__age_class_floor(heapprof__age_class_of_ms(3600000)), 3600);
	CHECK_EQ(heapprof__age_class_floor(heapprof__age_class_of_ms(86400000)), 86400);
	CHECK_EQ(heapprof__age_class_of_ms(INT64_MAX / 2), HEAPPROF_AGE_NCLASS - 1);
	/* Increasing, so that "label >= N" means "at least N old". */
	for (unsigned c = 1; c < HEAPPROF_AGE_NCLASS; c++)
		CHECK(heapprof__age_class_floor(c) > heapprof__age_class_floor(c - 1));
}

static heapprof_record
rec(int64_t ao, int64_t fo, int64_t size, const uint64_t *stack)
{
	heapprof_record r;
	memset(&r, 0, sizeof(r));
	r.alloc_objects = ao;
	r.alloc_bytes = ao * size;
	r.free_objects = fo;
	r.free_bytes = fo * size;
	r.object_size = size;
	r.stack = stack;
	r.depth = 1;
	return r;
}

TEST(part_values_add_up)
{
	static const uint64_t st[1] = {0x1000};
	/* 10 in use of 1000 bytes at rate 512 KiB: each stands for ~524. */
	heapprof_record r = rec(25, 15, 1000, st);
	int64_t wo, wb;
	heapprof_scale_heap_sample(10, 10000, 524288, &wo, &wb);
	heapprof__age_part parts[3] = {{3, 0}, {2, 4}, {5, 9}};
	int64_t v[6], ro, rb;
	heapprof__age_part_values(&r, 524288, parts, 3, v, &ro, &rb);
	CHECK_EQ(v[0] + v[2] + v[4] + ro, wo);
	CHECK_EQ(v[1] + v[3] + v[5] + rb, wb);
	CHECK_EQ(ro, 0);
	CHECK_EQ(rb, 0);
	/* Each part about its share (truncation moves at most one unit). */
	int64_t one_o, one_b;
	heapprof_scale_heap_sample(5, 5000, 524288, &one_o, &one_b);
	CHECK(v[4] >= one_o - 1 && v[4] <= one_o + 1);
	/* Fewer parts than in use: the rest stays unlabelled. */
	heapprof__age_part few[1] = {{4, 2}};
	heapprof__age_part_values(&r, 524288, few, 1, v, &ro, &rb);
	CHECK(ro > 0 && rb > 0);
	CHECK_EQ(v[0] + ro, wo);
	CHECK_EQ(v[1] + rb, wb);
	/* More parts than in use (the table read after the counters): the
	 * youngest are cut, nothing is invented. */
	heapprof__age_part many[2] = {{4, 0}, {10, 5}};
	heapprof__age_part_values(&r, 524288, many, 2, v, &ro, &rb);
	CHECK_EQ(v[0], 0);
	CHECK_EQ(v[2], wo);
	CHECK_EQ(v[3], wb);
	CHECK_EQ(ro, 0);
	CHECK_EQ(rb, 0);
	/* Nothing in use: nothing to share. */
	heapprof_record z = rec(7, 7, 100, st);
	heapprof__age_part_values(&z, 524288, few, 1, v, &ro, &rb);
	CHECK_EQ(v[0], 0);
	CHECK_EQ(v[1], 0);
	CHECK_EQ(ro, 0);
}

/* Sums of each value type, count of samples with age_s, their checks. */
typedef struct sums {
	int64_t v[4];
	int nsamples, naged, bad;
	int64_t age_sum;
} sums;

static int
sum_profile(const void *p, size_t n, sums *s)
{
	memset(s, 0, sizeof(*s));
	pprof_dec d;
	heapprof__pprof_dec_init(&d, NULL, NULL);
	int rc = heapprof__pprof_dec_open(&d, p, n);
	if (rc) {
		heapprof__pprof_dec_free(&d);
		return rc;
	}
	pprof_sample_iter it;
	pprof_sample smp;
	heapprof__pprof_samples(&d, &it);
	while ((rc = heapprof__pprof_sample_next(&d, &it, &smp)) == 0) {
		s->nsamples++;
		for (size_t i = 0; i < 4 && i < smp.nvalues; i++)
			s->v[i] += smp.values[i];
		for (size_t i = 0; i < smp.nlabels; i++) {
			const pprof_label *l = &smp.labels[i];
			if (!heapprof__pprof_string_eq(&d, l->key, "age_s"))
				continue;
			s->naged++;
			s->age_sum += l->num;
			if (l->str || !heapprof__pprof_string_eq(&d, l->num_unit,
			                                           "seconds") ||
			    smp.values[0] || smp.values[1])
				s->bad++;
		}
	}
	heapprof__pprof_dec_free(&d);
	return rc < 0 ? rc : 0;
}

static void
encode(const heapprof_record *r, size_t n, unsigned flags,
       const heapprof__age_split *a, outbuf *o)
{
	heapprof_heap_profile p;
	memset(&p, 0, sizeof(p));
	p.records = r;
	p.nrecords = n;
	p.rate = 524288;
	memset(o, 0, sizeof(*o));
	CHECK_EQ(heapprof__encode_heap_age(&p, flags, a, out_write, o), 0);
}

static const uint64_t st1[1] = {0x1000}, st2[1] = {0x2000}, st3[1] = {0x3000};

/* Three records: 10 in use (parts 0s x3, 10s x2, 600s x5), 4 in use (no
 * parts: unlabelled), 0 in use. */
static void
three(heapprof_record *r, heapprof__age_split *a, size_t *first,
      heapprof__age_part *parts)
{
	r[0] = rec(25, 15, 1000, st1);
	r[1] = rec(8, 4, 64, st2);
	r[2] = rec(5, 5, 4096, st3);
	parts[0] = (heapprof__age_part){3, 0};
	parts[1] = (heapprof__age_part){2, 4};
	parts[2] = (heapprof__age_part){5, 9};
	first[0] = 0;
	first[1] = first[2] = first[3] = 3;
	a->first = first;
	a->parts = parts;
	a->nparts = 3;
}

TEST(encoded_labels)
{
	heapprof_record r[3];
	heapprof__age_split a;
	size_t first[4];
	heapprof__age_part parts[3];
	three(r, &a, first, parts);
	outbuf plain, aged;
	encode(r, 3, 0, NULL, &plain);
	encode(r, 3, 0, &a, &aged);
	sums sp, sa;
	REQUIRE((sum_profile(plain.p, plain.len, &sp)) == 0);
	REQUIRE((sum_profile(aged.p, aged.len, &sa)) == 0);
	/* Same totals for every type: nothing counted twice or lost. */
	for (int i = 0; i < 4; i++)
		CHECK_EQ(sa.v[i], sp.v[i]);
	CHECK_EQ(sp.naged, 0);
	CHECK_EQ(sa.naged, 3);
	CHECK_EQ(sa.bad, 0);
	CHECK_EQ(sa.age_sum, 0 + 10 + 600);
	CHECK_EQ(sa.nsamples, sp.nsamples + 3);
	/* An in-use profile drops the unlabelled sample left with nothing. */
	outbuf inuse;
	encode(r, 3, HEAPPROF_ENCODE_INUSE_ONLY | HEAPPROF_ENCODE_DROP_ZERO, &a,
	       &inuse);
	sums si;
	REQUIRE((sum_profile(inuse.p, inuse.len, &si)) == 0);
	CHECK_EQ(si.nsamples, 3 + 1); /* three ages, record 1 unlabelled */
	CHECK_EQ(si.v[2], sp.v[2]);
	CHECK_EQ(si.v[3], sp.v[3]);
	CHECK_EQ(si.v[0], 0);
	free(plain.p);
	free(aged.p);
	free(inuse.p);
}

TEST(merge_and_delta_keep_ages)
{
	heapprof_record r[3];
	heapprof__age_split a;
	size_t first[4];
	heapprof__age_part parts[3];
	three(r, &a, first, parts);
	outbuf aged;
	encode(r, 3, 0, &a, &aged);
	sums s0;
	REQUIRE((sum_profile(aged.p, aged.len, &s0)) == 0);

	heapprof_merge_input in[2] = {{aged.p, aged.len, 1}, {aged.p, aged.len, 1}};
	outbuf m = {0};
	REQUIRE((heapprof_merge(in, 2, 0, out_write, &m)) == 0);
	sums sm;
	REQUIRE((sum_profile(m.p, m.len, &sm)) == 0);
	for (int i = 0; i < 4; i++)
		CHECK_EQ(sm.v[i], 2 * s0.v[i]);
	CHECK_EQ(sm.naged, 3); /* same stacks and labels: merged, not mixed */
	CHECK_EQ(sm.nsamples, s0.nsamples);
	CHECK_EQ(sm.bad, 0);

	/* Delta: the second of two equal profiles has no allocations and
	 * all its in-use values, age by age. */
	heapprof_delta *d;
	REQUIRE((heapprof_delta_new(&d, NULL)) == 0);
	outbuf d1 = {0}, d2 = {0};
	CHECK_EQ(heapprof_delta_compute(d, aged.p, aged.len, 0, out_write, &d1), 0);
	CHECK_EQ(heapprof_delta_compute(d, aged.p, aged.len, 0, out_write, &d2), 0);
	sums sd;
	REQUIRE((sum_profile(d2.p, d2.len, &sd)) == 0);
	CHECK_EQ(sd.v[0], 0);
	CHECK_EQ(sd.v[1], 0);
	CHECK_EQ(sd.v[2], s0.v[2]);
	CHECK_EQ(sd.v[3], s0.v[3]);
	CHECK_EQ(sd.naged, 3);
	CHECK_EQ(sd.bad, 0);
	heapprof_delta_free(d);
	free(aged.p);
	free(m.p);
	free(d1.p);
	free(d2.p);
}

int
main(void)
{
	RUN(classes);
	RUN(part_values_add_up);
	RUN(encoded_labels);
	RUN(merge_and_delta_keep_ages);
	return t_failed_total ? 1 : 0;
}
