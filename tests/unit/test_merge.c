/*
 * test_merge.c: unit tests of the merger (src/ops/merge*.c) on hand-built
 * profiles: exact sums, zero-sample dropping, mapping rebasing, id
 * renumbering, label keys, header combination, type mismatch, scale
 * rounding and overflow. Outputs are read back with the shared decoder.
 */
#include <math.h>

#include "heapprof.h"
#include "merge.h"
#include "pb.h"
#include "pprof_dec.h"
#include "test.h"

/* ------------------------------------------------------------ a builder */

typedef struct builder {
	pb_writer w;
	const char *strs[64];
	int nstrs;
} builder;

static uint64_t
S(builder *b, const char *s)
{
	for (int i = 0; i < b->nstrs; i++)
		if (!strcmp(b->strs[i], s))
			return (uint64_t)i;
	b->strs[b->nstrs] = s;
	return (uint64_t)b->nstrs++;
}

static void
b_init(builder *b, const char *type0, const char *type1)
{
	memset(b, 0, sizeof(*b));
	heapprof__pb_init(&b->w, NULL, NULL, NULL, NULL);
	S(b, "");
	const char *types[2] = {type0, type1};
	for (int i = 0; i < 2; i++) {
		if (!types[i])
			continue;
		heapprof__pb_begin(&b->w, 1);
		heapprof__pb_uint_opt(&b->w, 1, S(b, types[i]));
		heapprof__pb_uint_opt(&b->w, 2, S(b, "count"));
		heapprof__pb_end(&b->w);
	}
	heapprof__pb_begin(&b->w, 11);
	heapprof__pb_uint_opt(&b->w, 1, S(b, "space"));
	heapprof__pb_uint_opt(&b->w, 2, S(b, "bytes"));
	heapprof__pb_end(&b->w);
}

static void
b_mapping(builder *b, uint64_t id, uint64_t start, uint64_t limit,
          const char *file)
{
	heapprof__pb_begin(&b->w, 3);
	heapprof__pb_uint_opt(&b->w, 1, id);
	heapprof__pb_uint_opt(&b->w, 2, start);
	heapprof__pb_uint_opt(&b->w, 3, limit);
	heapprof__pb_uint_opt(&b->w, 5, S(b, file));
	heapprof__pb_end(&b->w);
}

static void
b_function(builder *b, uint64_t id, const char *name)
{
	heapprof__pb_begin(&b->w, 5);
	heapprof__pb_uint_opt(&b->w, 1, id);
	heapprof__pb_uint_opt(&b->w, 2, S(b, name));
	heapprof__pb_uint_opt(&b->w, 3, S(b, name));
	heapprof__pb_end(&b->w);
}

/* func 0: no line. */
static void
b_location(builder *b, uint64_t id, uint64_t mapping, uint64_t addr,
           uint64_t func, int64_t line)
{
	heapprof__pb_begin(&b->w, 4);
	heapprof__pb_uint_opt(&b->w, 1, id);
	heapprof__pb_uint_opt(&b->w, 2, mapping);
	heapprof__pb_uint_opt(&b->w, 3, addr);
	if (func) {
		heapprof__pb_begin(&b->w, 4);
		heapprof__pb_uint_opt(&b->w, 1, func);
		heapprof__pb_uint_opt(&b->w, 2, (uint64_t)line);
		heapprof__pb_end(&b->w);
	}
	heapprof__pb_end(&b->w);
}

/* labels: "k=v" string labels or "k#123" numeric ones, NULL-terminated. */
static void
b_sample(builder *b, const uint64_t *locs, size_t nlocs, int64_t v0,
         int64_t v1, const char *const *labels)
{
	int64_t v[2] = {v0, v1};
	heapprof__pb_begin(&b->w, 2);
	heapprof__pb_packed_u64(&b->w, 1, locs, nlocs);
	heapprof__pb_packed_i64(&b->w, 2, v, 2);
	for (; labels && *labels; labels++) {
		static char key[32];
		const char *sep = strpbrk(*labels, "=#");
		size_t kn = (size_t)(sep - *labels);
		memcpy(key, *labels, kn);
		key[kn] = 0;
		heapprof__pb_begin(&b->w, 3);
		heapprof__pb_uint_opt(&b->w, 1, S(b, strdup(key)));
		if (*sep == '=')
			heapprof__pb_uint_opt(&b->w, 2, S(b, sep + 1));
		else
			heapprof__pb_uint_opt(&b->w, 3, (uint64_t)atoll(sep + 1));
		heapprof__pb_end(&b->w);
	}
	heapprof__pb_end(&b->w);
}

static void
b_header(builder *b, int64_t time, int64_t dur, int64_t period,
         const char *comment, const char *dflt)
{
	heapprof__pb_uint_opt(&b->w, 9, (uint64_t)time);
	heapprof__pb_uint_opt(&b->w, 10, (uint64_t)dur);
	heapprof__pb_uint_opt(&b->w, 12, (uint64_t)period);
	if (comment)
		heapprof__pb_varint_field(&b->w, 13, S(b, comment));
	if (dflt)
		heapprof__pb_varint_field(&b->w, 14, S(b, dflt));
}

static heapprof_merge_input
b_finish(builder *b, double scale)
{
	for (int i = 0; i < b->nstrs; i++)
		heapprof__pb_bytes_field(&b->w, 6, b->strs[i], strlen(b->strs[i]));
	heapprof_merge_input in = {b->w.buf, b->w.len, scale};
	return in; /* buffer owned by the input now */
}

/* Profile "A": mapping /bin/x at 0x1000, locations 1 (0x1100, f1) and
 * 2 (0x1200, f2); samples [1,2]=(1,10) and [2]=(2,20). */
static heapprof_merge_input
profile_a(double scale, uint64_t base)
{
	builder b;
	b_init(&b, "alloc_objects", "alloc_space");
	b_mapping(&b, 1, base, base + 0x1000, "/bin/x");
	b_function(&b, 1, "f1");
	b_function(&b, 2, "f2");
	b_location(&b, 1, 1, base + 0x100, 1, 10);
	b_location(&b, 2, 1, base + 0x200, 2, 20);
	uint64_t s1[] = {1, 2}, s2[] = {2};
	b_sample(&b, s1, 2, 1, 10, NULL);
	b_sample(&b, s2, 1, 2, 20, NULL);
	b_header(&b, 1000, 5, 512, "c1", NULL);
	return b_finish(&b, scale);
}

/* ------------------------------------------------------------ reading back */

struct out {
	uint8_t *p;
	size_t n;
};

static int
collect(void *arg, const void *p, size_t n)
{
	struct out *o = arg;
	uint8_t *q = realloc(o->p, o->n + n);
	if (!q)
		return -12;
	memcpy(q + o->n, p, n);
	o->p = q;
	o->n += n;
	return 0;
}

typedef struct rsample {
	uint64_t addr[8]; /* location addresses, leaf first */
	uint64_t loc[8];
	size_t nlocs;
	int64_t v[2];
	size_t nlabels;
} rsample;

typedef struct result {
	pprof_dec d;
	rsample s[16];
	size_t ns;
	struct out o;
} result;

static int
do_merge(result *r, heapprof_merge_input *in, size_t n, unsigned flags)
{
	memset(r, 0, sizeof(*r));
	int rc = heapprof_merge(in, n, flags, collect, &r->o);
	for (size_t i = 0; i < n; i++)
		free((void *)in[i].data);
	if (rc < 0)
		return rc;
	heapprof__pprof_dec_init(&r->d, NULL, NULL);
	rc = heapprof__pprof_dec_open(&r->d, r->o.p, r->o.n);
	if (rc < 0)
		return rc;
	pprof_sample_iter it;
	pprof_sample s;
	heapprof__pprof_samples(&r->d, &it);
	while ((rc = heapprof__pprof_sample_next(&r->d, &it, &s)) == 0 && r->ns < 16) {
		rsample *o = &r->s[r->ns++];
		for (size_t i = 0; i < s.nlocations && i < 8; i++) {
			long li = heapprof__pprof_find_location(&r->d, s.location_ids[i]);
			o->loc[i] = s.location_ids[i];
			o->addr[i] = li >= 0 ? r->d.loc_addr[li] : 0;
		}
		o->nlocs = s.nlocations;
		o->v[0] = s.values[0];
		o->v[1] = s.nvalues > 1 ? s.values[1] : 0;
		o->nlabels = s.nlabels;
	}
	return rc < 0 ? rc : 0;
}

static void
result_free(result *r)
{
	heapprof__pprof_dec_free(&r->d);
	free(r->o.p);
}

/* ------------------------------------------------------------ tests */

TEST(merge_sums_exactly)
{
	heapprof_merge_input in[3] = {profile_a(1, 0x1000), profile_a(1, 0x1000),
	                              profile_a(3, 0x1000)};
	result r;
	REQUIRE_OK(do_merge(&r, in, 3, 0));
	REQUIRE(r.ns == 2);
	CHECK_EQ(r.s[0].v[0], 5);
	CHECK_EQ(r.s[0].v[1], 50);
	CHECK_EQ(r.s[1].v[0], 10);
	CHECK_EQ(r.s[1].v[1], 100);
	/* Renumbered 1..N in order of first use. */
	CHECK_EQ(r.s[0].loc[0], 1);
	CHECK_EQ(r.s[0].loc[1], 2);
	CHECK_EQ(r.s[1].loc[0], 2);
	CHECK_EQ(r.d.nlocs, 2);
	CHECK_EQ(r.d.nfuncs, 2);
	CHECK_EQ(r.d.nmaps, 1);
	/* Header: earliest time, summed duration, max period, comment once. */
	CHECK_EQ(r.d.time_nanos, 1000);
	CHECK_EQ(r.d.duration_nanos, 15);
	CHECK_EQ(r.d.period, 512);
	CHECK_EQ(r.d.ncomments, 1);
	result_free(&r);
}

TEST(merge_drops_zero_samples_and_unused_entities)
{
	/* A - A: everything cancels; the main mapping stays, nothing else. */
	heapprof_merge_input in[2] = {profile_a(1, 0x1000), profile_a(-1, 0x1000)};
	result r;
	REQUIRE_OK(do_merge(&r, in, 2, 0));
	CHECK_EQ(r.ns, 0);
	CHECK_EQ(r.d.nlocs, 0);
	CHECK_EQ(r.d.nfuncs, 0);
	CHECK_EQ(r.d.nmaps, 1);
	result_free(&r);

	/* Only one sample cancels: its own location goes, the other stays. */
	builder b;
	b_init(&b, "alloc_objects", "alloc_space");
	b_mapping(&b, 1, 0x1000, 0x2000, "/bin/x");
	b_function(&b, 1, "f1");
	b_function(&b, 2, "f2");
	b_location(&b, 7, 1, 0x1100, 1, 10);
	b_location(&b, 9, 1, 0x1200, 2, 20);
	uint64_t s1[] = {7, 9};
	b_sample(&b, s1, 2, -1, -10, NULL);
	heapprof_merge_input in2[2] = {profile_a(1, 0x1000), b_finish(&b, 1)};
	REQUIRE_OK(do_merge(&r, in2, 2, 0));
	REQUIRE(r.ns == 1);
	CHECK_EQ(r.s[0].nlocs, 1);
	CHECK_EQ(r.s[0].loc[0], 1); /* renumbered after the drop */
	CHECK_EQ(r.s[0].addr[0], 0x1200);
	CHECK_EQ(r.s[0].v[1], 20);
	CHECK_EQ(r.d.nlocs, 1);
	CHECK_EQ(r.d.nfuncs, 1);
	result_free(&r);

	/* All-zero input samples are skipped before merging. */
	b_init(&b, "alloc_objects", "alloc_space");
	b_location(&b, 1, 0, 0x42, 0, 0);
	uint64_t s0[] = {1};
	b_sample(&b, s0, 1, 0, 0, NULL);
	heapprof_merge_input in3[1] = {b_finish(&b, 1)};
	REQUIRE_OK(do_merge(&r, in3, 1, 0));
	CHECK_EQ(r.ns, 0);
	CHECK_EQ(r.d.nlocs, 0);
	result_free(&r);
}

TEST(merge_rebases_mappings)
{
	/* The same binary loaded at 0x1000 and at 0x7000: B's addresses move
	 * onto A's mapping, and equal offsets merge. */
	heapprof_merge_input in[2] = {profile_a(1, 0x1000), profile_a(1, 0x7000)};
	result r;
	REQUIRE_OK(do_merge(&r, in, 2, 0));
	REQUIRE(r.ns == 2);
	CHECK_EQ(r.s[0].addr[0], 0x1100);
	CHECK_EQ(r.s[0].addr[1], 0x1200);
	CHECK_EQ(r.s[0].v[0], 2);
	CHECK_EQ(r.d.nmaps, 1);
	CHECK_EQ(r.d.nlocs, 2);
	result_free(&r);

	/* A different file: a second mapping, addresses kept. */
	builder b;
	b_init(&b, "alloc_objects", "alloc_space");
	b_mapping(&b, 1, 0x7000, 0x8000, "/lib/other.so");
	b_location(&b, 1, 1, 0x7100, 0, 0);
	uint64_t s1[] = {1};
	b_sample(&b, s1, 1, 4, 40, NULL);
	heapprof_merge_input in2[2] = {profile_a(1, 0x1000), b_finish(&b, 1)};
	REQUIRE_OK(do_merge(&r, in2, 2, 0));
	REQUIRE(r.ns == 3);
	CHECK_EQ(r.s[2].addr[0], 0x7100);
	CHECK_EQ(r.d.nmaps, 2);
	result_free(&r);

	/* Sizes that round to the same 4 KiB size still match. */
	b_init(&b, "alloc_objects", "alloc_space");
	b_mapping(&b, 1, 0x9000, 0x9ff0, "/bin/x");
	b_location(&b, 1, 1, 0x9300, 0, 0);
	b_sample(&b, s1, 1, 1, 1, NULL);
	heapprof_merge_input in3[2] = {profile_a(1, 0x1000), b_finish(&b, 1)};
	REQUIRE_OK(do_merge(&r, in3, 2, 0));
	REQUIRE(r.ns == 3);
	CHECK_EQ(r.s[2].addr[0], 0x1300);
	CHECK_EQ(r.d.nmaps, 1);
	result_free(&r);
}

TEST(merge_labels_are_part_of_the_key)
{
	const char *l1[] = {"a=1", "b=2", NULL};
	const char *l2[] = {"b=2", "a=1", NULL}; /* same set, other order */
	const char *l3[] = {"a=1", NULL};
	const char *l4[] = {"bytes#64", NULL};
	builder b;
	b_init(&b, "alloc_objects", "alloc_space");
	b_location(&b, 1, 0, 0x42, 0, 0);
	uint64_t s[] = {1};
	b_sample(&b, s, 1, 1, 1, l1);
	b_sample(&b, s, 1, 1, 1, l2);
	b_sample(&b, s, 1, 1, 1, l3);
	b_sample(&b, s, 1, 1, 1, l4);
	b_sample(&b, s, 1, 1, 1, l4);
	b_sample(&b, s, 1, 1, 1, NULL);
	heapprof_merge_input in[1] = {b_finish(&b, 1)};
	result r;
	REQUIRE_OK(do_merge(&r, in, 1, 0));
	REQUIRE(r.ns == 4);
	CHECK_EQ(r.s[0].v[0], 2);
	CHECK_EQ(r.s[0].nlabels, 2);
	CHECK_EQ(r.s[1].v[0], 1);
	CHECK_EQ(r.s[2].v[0], 2);
	CHECK_EQ(r.s[3].nlabels, 0);
	result_free(&r);
}

TEST(merge_rejects_type_mismatch)
{
	builder b;
	b_init(&b, "alloc_objects", "inuse_space");
	heapprof_merge_input in[2] = {profile_a(1, 0x1000), b_finish(&b, 1)};
	result r;
	size_t failed = 99;
	struct out o = {0};
	CHECK_EQ(heapprof_merge_ex(in, 2, 0, 0, &failed, collect, &o),
	         HEAPPROF_ETYPES);
	CHECK_EQ(failed, 1);
	CHECK_EQ(o.n, 0);
	free((void *)in[0].data);
	free((void *)in[1].data);
	/* One type fewer. */
	b_init(&b, "alloc_objects", NULL);
	heapprof_merge_input in2[2] = {profile_a(1, 0x1000), b_finish(&b, 1)};
	CHECK_EQ(do_merge(&r, in2, 2, 0), HEAPPROF_ETYPES);
	/* No inputs. */
	CHECK_EQ(heapprof_merge(NULL, 0, 0, collect, &o), -22);
	/* Garbage input. */
	heapprof_merge_input bad = {"\x0a\xff", 2, 1};
	CHECK(heapprof_merge(&bad, 1, 0, collect, &o) < 0);
	free(o.p);
}

TEST(merge_scale_rounds_as_pprof)
{
	CHECK_EQ(heapprof__mg_scale_value(3, 0.5), 2);   /* round half away */
	CHECK_EQ(heapprof__mg_scale_value(-3, 0.5), -2);
	CHECK_EQ(heapprof__mg_scale_value(5, -1), -5);
	CHECK_EQ(heapprof__mg_scale_value(1, 0.4), 0);
	CHECK_EQ(heapprof__mg_scale_value(7, 1.0 / 3), 2);
	CHECK(heapprof__mg_scale_value(INT64_MAX, 2) == INT64_MIN);
	CHECK(heapprof__mg_scale_value(1, NAN) == INT64_MIN);
	CHECK(heapprof__mg_scale_value(INT64_MIN, 1.0) == INT64_MIN);

	/* Samples rounded to all-zero are dropped: A's (1,10) * 0.04 -> (0,0);
	 * (2,20) * 0.04 -> (0,1). */
	heapprof_merge_input in[1] = {profile_a(0.04, 0x1000)};
	result r;
	REQUIRE_OK(do_merge(&r, in, 1, 0));
	REQUIRE(r.ns == 1);
	CHECK_EQ(r.s[0].v[0], 0);
	CHECK_EQ(r.s[0].v[1], 1);
	result_free(&r);
	/* Non-finite scales are refused. */
	heapprof_merge_input inf = profile_a(INFINITY, 0x1000);
	struct out o = {0};
	CHECK_EQ(heapprof_merge(&inf, 1, 0, collect, &o), -22);
	free((void *)inf.data);
}

TEST(merge_overflow_fails)
{
	builder b;
	b_init(&b, "alloc_objects", "alloc_space");
	b_location(&b, 1, 0, 0x42, 0, 0);
	uint64_t s[] = {1};
	b_sample(&b, s, 1, INT64_MAX, 1, NULL);
	b_sample(&b, s, 1, 1, 1, NULL);
	heapprof_merge_input in[1] = {b_finish(&b, 1)};
	result r;
	CHECK_EQ(do_merge(&r, in, 1, 0), HEAPPROF_EOVERFLOW);
	free(r.o.p);
}

TEST(merge_header_rules)
{
	/* time: pprof's loop (a zero time resets, later nonzero wins again);
	 * period: max; default_sample_type: first non-empty. */
	builder b;
	heapprof_merge_input in[3];
	int64_t times[3] = {300, 0, 200};
	const char *dflt[3] = {NULL, "alloc_space", "alloc_objects"};
	for (int i = 0; i < 3; i++) {
		b_init(&b, "alloc_objects", "alloc_space");
		b_header(&b, times[i], 1, 100 * (i + 1), i == 2 ? "c2" : "c1",
		         dflt[i]);
		in[i] = b_finish(&b, 1);
	}
	result r;
	REQUIRE_OK(do_merge(&r, in, 3, 0));
	CHECK_EQ(r.d.time_nanos, 200);
	CHECK_EQ(r.d.duration_nanos, 3);
	CHECK_EQ(r.d.period, 300);
	CHECK_EQ(r.d.ncomments, 2);
	CHECK(heapprof__pprof_string_eq(&r.d, r.d.default_sample_type, "alloc_space"));
	result_free(&r);
}

TEST(merge_gzip_output)
{
	heapprof_merge_input in[1] = {profile_a(1, 0x1000)};
	result r;
	REQUIRE_OK(do_merge(&r, in, 1, HEAPPROF_MERGE_GZIP));
	CHECK(r.d.was_gzip);
	CHECK_EQ(r.ns, 2);
	result_free(&r);
}

int
main(void)
{
	RUN(merge_sums_exactly);
	RUN(merge_drops_zero_samples_and_unused_entities);
	RUN(merge_rebases_mappings);
	RUN(merge_labels_are_part_of_the_key);
	RUN(merge_rejects_type_mismatch);
	RUN(merge_scale_rounds_as_pprof);
	RUN(merge_overflow_fails);
	RUN(merge_header_rules);
	RUN(merge_gzip_output);
	TEST_MAIN_END();
}
