/*
 * test_delta_fast.c: the delta computer's fast paths against its exact
 * ones: keys known by their location-id bytes across renumbered tables
 * and string changes, unchanged values (and a type layout change), one
 * key seen in the fast
 * and the decoded form, every fast path byte for byte against the exact
 * path on corpus streams, and zero allocations at steady state counted
 * through the allocator hook (synthetic and corpus streams).
 */
#include "delta_build.h"
#include "alloc_hook.h"

/* The computer keeps its location frames while consecutive profiles
 * share their tables; when the tables change
 * (the same stacks under renumbered location ids) it must fall back to
 * the frames, and come back, without a value going wrong. */
TEST(cache_survives_renumbered_tables)
{
	/* Layout X: ids 1 = 0xa1, 2 = 0xa2, 3 = 0xb1, 4 = 0xc1. Layout Y:
	 * the samples in another order, so 0xc1 gets id 1, and so on. */
	heapprof_delta *d;
	REQUIRE_OK(heapprof_delta_new(&d, NULL));
	const int64_t alloc_a[6] = {10, 15, 15, 40, 41, 50};
	const int64_t alloc_c[6] = {7, 7, 9, 9, 12, 20};
	int64_t prev_a = 0, prev_c = 0;
	for (int step = 0; step < 6; step++) {
		int layout_y = step == 2 || step == 3;
		tsample x[3] = {
			{{0xa1, 0xa2}, 2, {alloc_a[step], alloc_a[step] * 10, 1, 10}, NULL, NULL, 0},
			{{0xb1, 0xa2}, 2, {1, 1, 1, 1}, NULL, NULL, 0},
			{{0xc1}, 1, {alloc_c[step], alloc_c[step] * 10, 2, 20}, NULL, NULL, 0},
		};
		tsample y[3] = {x[2], x[1], x[0]};
		tprof tp = {{NAMES[0], NAMES[1], NAMES[2], NAMES[3]}, 4,
		            layout_y ? y : x, 3, 1000 * (step + 1), 0};
		sbuf o;
		result r;
		REQUIRE_OK(run(d, &tp, &o, 0));
		REQUIRE_OK(collect(&o, NAMES, 4, &r));
		free(o.p);
		const row *a = find(&r, 0xa1, NULL), *c = find(&r, 0xc1, NULL);
		REQUIRE(a && c);
		if (a->v[0] != alloc_a[step] - prev_a || c->v[0] != alloc_c[step] - prev_c ||
		    a->v[1] != (alloc_a[step] - prev_a) * 10 || a->v[2] != 1 ||
		    c->v[3] != 20 || a->frames[1] != 0xa2)
			T_FAIL("step %d: a %lld/%lld/%lld c %lld/%lld", step,
			       (long long)a->v[0], (long long)a->v[1],
			       (long long)a->v[2], (long long)c->v[0],
			       (long long)c->v[3]);
		prev_a = alloc_a[step];
		prev_c = alloc_c[step];
	}
	heapprof_delta_free(d);
}

/* Samples whose values field is byte for byte the last call's take a
 * path that decodes nothing (delta_key.c, DELTA_ITEM_SAME): duplicates
 * after such a sample, a failed call and a new type layout must not make
 * it trust stale bytes. */
static int
fail_write(void *arg, const void *p, size_t n)
{
	(void)arg;
	(void)p;
	(void)n;
	return -5;
}

TEST(unchanged_values_path)
{
	const tsample s1[] = {{{0xa1, 0xa2}, 2, {10, 100, 1, 10}, NULL, NULL, 0},
	                      {{0xb1}, 1, {1, 1, 0, 0}, NULL, NULL, 0}};
	const tsample s3[] = {{{0xa1, 0xa2}, 2, {10, 100, 1, 10}, NULL, NULL, 0},
	                      {{0xb1}, 1, {1, 1, 0, 0}, NULL, NULL, 0},
	                      {{0xa1, 0xa2}, 2, {5, 50, 0, 0}, NULL, NULL, 0}};
	const tsample s6[] = {{{0xa1, 0xa2}, 2, {12, 120, 1, 10}, NULL, NULL, 0},
	                      {{0xb1}, 1, {1, 1, 0, 0}, NULL, NULL, 0}};
	tprof p1 = {{NAMES[0], NAMES[1], NAMES[2], NAMES[3]}, 4, s1, 2, 1, 0};
	tprof p3 = {{NAMES[0], NAMES[1], NAMES[2], NAMES[3]}, 4, s3, 3, 1, 0};
	tprof p6 = {{NAMES[0], NAMES[1], NAMES[2], NAMES[3]}, 4, s6, 2, 1, 0};
	/* step: profile, expected alloc_objects delta of 0xa1 (or 99: no
	 * sample), its inuse_space */
	const struct {
		const tprof *p;
		int64_t a, inuse;
	} steps[] = {{&p1, 10, 10}, {&p1, 0, 10},  {&p3, 5, 10},
	             {&p1, -5, 10}, {&p1, 0, 10},  {&p6, 2, 10},
	             {&p6, 0, 10},  {&p3, 3, 10},  {&p3, 0, 10},
	             {&p3, 0, 10},  {&p1, -5, 10}, {&p1, 0, 10}};
	heapprof_delta *d;
	REQUIRE_OK(heapprof_delta_new(&d, NULL));
	for (size_t i = 0; i < HP_ARRAY_LEN(steps); i++) {
		sbuf o;
		result r;
		REQUIRE_OK(run(d, steps[i].p, &o, 0));
		REQUIRE_OK(collect(&o, NAMES, 4, &r));
		free(o.p);
		const row *a = find(&r, 0xa1, NULL);
		REQUIRE(a);
		if (a->v[0] != steps[i].a || a->v[1] != steps[i].a * 10 ||
		    a->v[3] != steps[i].inuse)
			T_FAIL("step %zu: alloc %lld/%lld inuse %lld, want %lld",
			       i, (long long)a->v[0], (long long)a->v[1],
			       (long long)a->v[3], (long long)steps[i].a);
		if (i > 0) /* 0 delta, nothing in use */
			CHECK(!find(&r, 0xb1, NULL));
	}
	heapprof_delta_free(d);

	/* A call that fails after reading its samples commits nothing: the
	 * next identical profile is still a delta against the one before. */
	const tsample t1[] = {{{0xa1}, 1, {10, 100, 0, 0}, NULL, NULL, 0}};
	const tsample t2[] = {{{0xa1}, 1, {15, 150, 0, 0}, NULL, NULL, 0}};
	tprof q1 = {{NAMES[0], NAMES[1], NAMES[2], NAMES[3]}, 4, t1, 1, 1, 0};
	tprof q2 = {{NAMES[0], NAMES[1], NAMES[2], NAMES[3]}, 4, t2, 1, 1, 0};
	REQUIRE_OK(heapprof_delta_new(&d, NULL));
	sbuf o;
	result r;
	REQUIRE_OK(run(d, &q1, &o, 0));
	free(o.p);
	REQUIRE_OK(run(d, &q1, &o, 0));
	free(o.p);
	sbuf in = build(&q2);
	CHECK(heapprof_delta_compute(d, in.p, in.len, 0, fail_write, NULL) < 0);
	free(in.p);
	REQUIRE_OK(run(d, &q2, &o, 0));
	REQUIRE_OK(collect(&o, NAMES, 4, &r));
	free(o.p);
	REQUIRE(r.n == 1);
	CHECK_EQ(r.rows[0].v[0], 5);
	REQUIRE_OK(run(d, &q2, &o, 0));
	REQUIRE_OK(collect(&o, NAMES, 4, &r));
	free(o.p);
	CHECK_EQ(r.n, 0);
	heapprof_delta_free(d);
}

/* Profiles that differ only in one string's bytes (a label value, same
 * length, same table layout) are not one dictionary: the quick path must
 * not take the second's samples for the first's keys. */
TEST(quick_path_string_change)
{
	const tsample sx[] = {{{0xa1}, 1, {10, 100, 0, 0}, "x", NULL, 0}};
	const tsample sy[] = {{{0xa1}, 1, {10, 100, 0, 0}, "y", NULL, 0}};
	tprof px = {{NAMES[0], NAMES[1], NAMES[2], NAMES[3]}, 4, sx, 1, 1, 0};
	tprof py = {{NAMES[0], NAMES[1], NAMES[2], NAMES[3]}, 4, sy, 1, 1, 0};
	const tprof *seq[] = {&px, &px, &py, &py, &px};
	const char *lab[] = {"x;", NULL, "y;", NULL, NULL};
	heapprof_delta *d;
	REQUIRE_OK(heapprof_delta_new(&d, NULL));
	for (size_t i = 0; i < HP_ARRAY_LEN(seq); i++) {
		sbuf o;
		result r;
		REQUIRE_OK(run(d, seq[i], &o, 0));
		REQUIRE_OK(collect(&o, NAMES, 4, &r));
		free(o.p);
		if (!lab[i]) {
			CHECK_EQ(r.n, 0); /* as last time for that label */
			continue;
		}
		REQUIRE(r.n == 1);
		CHECK(!strcmp(r.rows[0].labels, lab[i]));
		CHECK_EQ(r.rows[0].v[0], 10);
	}
	heapprof_delta_free(d);
}

/* The same values bytes under another sample-type order (same string
 * table, same records) mean other values: no unchanged path across it. */
TEST(unchanged_values_type_layout)
{
	const tsample s1[] = {{{0xa1}, 1, {10, 100, 1, 10}, NULL, NULL, 0}};
	tprof p1 = {{NAMES[0], NAMES[1], NAMES[2], NAMES[3]}, 4, s1, 1, 1, 0};
	sbuf a = build(&p1), b = build(&p1);
	/* Swap the first and third SampleType messages (6 bytes each). */
	REQUIRE(b.len > 18 && b.p[0] == 0x0a && b.p[1] == 4 && b.p[12] == 0x0a &&
	        b.p[13] == 4);
	uint8_t tmp[6];
	memcpy(tmp, b.p, 6);
	memcpy(b.p, b.p + 12, 6);
	memcpy(b.p + 12, tmp, 6);
	heapprof_delta *d;
	REQUIRE_OK(heapprof_delta_new(&d, NULL));
	sbuf o = {0};
	result r;
	for (int i = 0; i < 2; i++) {
		o.p = NULL;
		o.len = 0;
		REQUIRE_OK(heapprof_delta_compute(d, a.p, a.len, 0, sbuf_write, &o));
		free(o.p);
	}
	o.p = NULL;
	o.len = 0;
	REQUIRE_OK(heapprof_delta_compute(d, b.p, b.len, 0, sbuf_write, &o));
	REQUIRE_OK(collect(&o, NAMES, 4, &r));
	free(o.p);
	REQUIRE(r.n == 1);
	/* b says alloc_objects 1 (was 10), alloc_space 100 (was 100),
	 * inuse_objects 10, inuse_space 10 */
	CHECK_EQ(r.rows[0].v[0], -9);
	CHECK_EQ(r.rows[0].v[1], 0);
	CHECK_EQ(r.rows[0].v[2], 10);
	CHECK_EQ(r.rows[0].v[3], 10);
	heapprof_delta_free(d);
	free(a.p);
	free(b.p);
}

/* One stack and label written in two wire forms: packed ids and a plain
 * label (read straight from the bytes), and unpacked ids and a label with
 * an unknown field (left to the decoder). Both paths must give one key. */
static sbuf
two_forms(int64_t v2)
{
	pb_writer w;
	heapprof__pb_init(&w, NULL, NULL, NULL, NULL);
	for (int t = 0; t < 2; t++) {
		heapprof__pb_begin(&w, 1);
		heapprof__pb_uint_opt(&w, 1, 1 + 2 * (uint64_t)t);
		heapprof__pb_uint_opt(&w, 2, 2 + 2 * (uint64_t)t);
		heapprof__pb_end(&w);
	}
	const uint64_t ids[2] = {1, 2};
	const int64_t v1[2] = {3, 30}, vb[2] = {v2, v2 * 10};
	heapprof__pb_begin(&w, 2);
	heapprof__pb_packed_u64(&w, 1, ids, 2);
	heapprof__pb_packed_i64(&w, 2, v1, 2);
	heapprof__pb_begin(&w, 3);
	heapprof__pb_uint_opt(&w, 1, 5);
	heapprof__pb_uint_opt(&w, 2, 6);
	heapprof__pb_end(&w);
	heapprof__pb_end(&w);
	heapprof__pb_begin(&w, 2);
	heapprof__pb_varint_field(&w, 1, 1);
	heapprof__pb_varint_field(&w, 1, 2);
	heapprof__pb_packed_i64(&w, 2, vb, 2);
	heapprof__pb_begin(&w, 3);
	heapprof__pb_uint_opt(&w, 2, 6);
	heapprof__pb_uint_opt(&w, 1, 5);
	heapprof__pb_varint_field(&w, 6, 9); /* unknown: skipped */
	heapprof__pb_end(&w);
	heapprof__pb_end(&w);
	for (uint64_t j = 1; j <= 2; j++) {
		heapprof__pb_begin(&w, 4);
		heapprof__pb_uint_opt(&w, 1, j);
		heapprof__pb_uint_opt(&w, 3, 0x1000 * j);
		heapprof__pb_end(&w);
	}
	const char *str[] = {"", "alloc_objects", "count", "alloc_space",
	                     "bytes", "k", "x"};
	for (size_t i = 0; i < HP_ARRAY_LEN(str); i++)
		heapprof__pb_bytes_field(&w, 6, str[i], strlen(str[i]));
	sbuf b = {w.buf, w.len};
	return b;
}

TEST(fast_and_decoded_forms_one_key)
{
	static const char *const two[] = {"alloc_objects", "alloc_space"};
	const int64_t second[] = {4, 4, 6, 6};
	const int64_t want[] = {7, 0, 2, 0};
	heapprof_delta *d;
	REQUIRE_OK(heapprof_delta_new(&d, NULL));
	for (size_t i = 0; i < HP_ARRAY_LEN(second); i++) {
		sbuf in = two_forms(second[i]), o = {0};
		result r;
		REQUIRE_OK(heapprof_delta_compute(d, in.p, in.len, 0, sbuf_write,
		                                  &o));
		free(in.p);
		REQUIRE_OK(collect(&o, two, 2, &r));
		free(o.p);
		if (want[i] == 0) {
			CHECK_EQ(r.n, 0);
			continue;
		}
		REQUIRE(r.n == 1);
		CHECK_EQ(r.rows[0].v[0], want[i]);
		CHECK_EQ(r.rows[0].v[1], want[i] * 10);
		CHECK_EQ(r.rows[0].frames[1], 0x2000);
		CHECK(!strcmp(r.rows[0].labels, "x;"));
	}
	heapprof_delta_stats st;
	heapprof_delta_get_stats(d, &st);
	CHECK_EQ(st.keys, 1);
	heapprof_delta_free(d);
}

/* Steady state: after warm-up on alternating inputs, N more calls make no
 * allocation at all, for raw and gzip input and output. */
static void
steady_state(const sbuf *a, const sbuf *b)
{
	heapprof_delta_options opt = {0};
	opt.realloc_fn = hook_realloc;
	heapprof_delta *d;
	hook_allocs = 0;
	REQUIRE_OK(heapprof_delta_new(&d, &opt));
	CHECK(hook_allocs > 0); /* the hook does see the allocations */
	for (unsigned flags = 0; flags <= HEAPPROF_DELTA_GZIP; flags++) {
		for (int i = 0; i < 4; i++) {
			REQUIRE_OK(heapprof_delta_compute(d, a->p, a->len, flags,
			                                  null_write, NULL));
			REQUIRE_OK(heapprof_delta_compute(d, b->p, b->len, flags,
			                                  null_write, NULL));
		}
	}
	long before = hook_allocs;
	for (unsigned flags = 0; flags <= HEAPPROF_DELTA_GZIP; flags++) {
		for (int i = 0; i < 5; i++) {
			REQUIRE_OK(heapprof_delta_compute(d, a->p, a->len, flags,
			                                  null_write, NULL));
			REQUIRE_OK(heapprof_delta_compute(d, b->p, b->len, flags,
			                                  null_write, NULL));
		}
	}
	CHECK_EQ(hook_allocs - before, 0);
	heapprof_delta_free(d);
}

TEST(steady_state_zero_allocations_synthetic)
{
	const tsample s1[] = {
		{{0xa1, 0xa2}, 2, {10, 100, 5, 50}, "x", NULL, 0},
		{{0xb1, 0xa2}, 2, {1, 1, 1, 1}, NULL, NULL, 0},
		{{0xa1, 0xa2}, 2, {1, 1, 1, 1}, "x", NULL, 0},
	};
	const tsample s2[] = {
		{{0xa1, 0xa2}, 2, {20, 200, 5, 50}, "x", NULL, 0},
		{{0xb1, 0xa2}, 2, {3, 3, 1, 1}, NULL, NULL, 0},
	};
	tprof p1 = {{NAMES[0], NAMES[1], NAMES[2], NAMES[3]}, 4, s1, 3, 1, 0};
	tprof p2 = {{NAMES[0], NAMES[1], NAMES[2], NAMES[3]}, 4, s2, 2, 2, 0};
	sbuf a = build(&p1), b = build(&p2);
	steady_state(&a, &b);
	free(a.p);
	free(b.p);
}

TEST(steady_state_zero_allocations_corpus)
{
	static const char *const pairs[][2] = {
		{"fastdelta/stress-failure.before.pprof",
		 "fastdelta/stress-failure.after.pprof"},
		{"fastdelta/big-heap.pprof", "fastdelta/big-heap.pprof"},
		{"go/go_heap_delta_1.pb.gz", "go/go_heap_delta_2.pb.gz"},
	};
	for (size_t i = 0; i < HP_ARRAY_LEN(pairs); i++) {
		char pa[512], pb[512];
		sbuf a, b;
		snprintf(pa, sizeof(pa), "%s/%s", t_corpus(), pairs[i][0]);
		snprintf(pb, sizeof(pb), "%s/%s", t_corpus(), pairs[i][1]);
		REQUIRE(t_read_file(pa, &a.p, &a.len) == 0 && t_read_file(pb, &b.p, &b.len) == 0);
		steady_state(&a, &b);
		free(a.p);
		free(b.p);
	}
}

/* The fast paths (keys by id bytes and unchanged values, keys read from
 * the bytes, samples written from the bytes) against the exact ones: the
 * same output, byte for byte, at every call of corpus streams chosen to
 * change dictionaries, repeat profiles, evict keys and switch profile
 * types. */
TEST(fast_paths_equal_exact_paths)
{
	static const char *const seqs[][9] = {
		{"fastdelta/heap.before.pprof", "fastdelta/heap.after.pprof",
		 "fastdelta/heap.before.pprof", "fastdelta/heap.after.pprof",
		 "fastdelta/heap.after.pprof"},
		{"fastdelta/big-heap.pprof", "fastdelta/big-heap.pprof",
		 "fastdelta/heap.pprof", "fastdelta/big-heap.pprof",
		 "fastdelta/heap.pprof", "fastdelta/heap.pprof",
		 "fastdelta/heap.pprof", "fastdelta/big-heap.pprof",
		 "fastdelta/big-heap.pprof"},
		{"fastdelta/stress-failure.before.pprof",
		 "fastdelta/stress-failure.after.pprof",
		 "fastdelta/stress-failure.2.before.pprof",
		 "fastdelta/stress-failure.2.after.pprof",
		 "fastdelta/stress-failure.3.before.pprof",
		 "fastdelta/stress-failure.3.after.pprof",
		 "fastdelta/stress-failure.3.after.pprof"},
		{"go/go_heap_delta_1.pb.gz", "go/go_heap_delta_2.pb.gz",
		 "go/go_heap_delta_2.pb.gz", "go/go_heap_rate1.pb.gz",
		 "go/go_heap_delta_1.pb.gz", "go/go_heap_basic.pb.gz",
		 "go/go_allocs_basic.pb.gz", "go/go_heap_delta_2.pb.gz"},
		{"fastdelta/block.before.pprof", "fastdelta/block.after.pprof",
		 "fastdelta/block.after.pprof", "go/go_cpu_labels.pb.gz",
		 "go/go_goroutine_labels.pb.gz", "go/go_goroutine_labels.pb.gz",
		 "pprof_testdata/profile/cppbench.heap",
		 "pprof_testdata/profile/gobench.heap",
		 "pprof_testdata/profile/cppbench.heap"},
	};
	static const unsigned ages[] = {16, 1, 2};
	for (size_t q = 0; q < HP_ARRAY_LEN(seqs); q++) {
		for (size_t a = 0; a < HP_ARRAY_LEN(ages); a++) {
			heapprof_delta_options opt = {0};
			opt.max_age = ages[a];
			heapprof_delta *fast, *slow;
			REQUIRE_OK(heapprof_delta_new(&fast, &opt));
			REQUIRE_OK(heapprof_delta_new(&slow, &opt));
			slow->slow_only = DELTA_SLOW_NOPRED | DELTA_SLOW_NOKEY |
			                  DELTA_SLOW_NOOUT;
			for (size_t i = 0; i < 9 && seqs[q][i]; i++) {
				char path[512];
				sbuf in, of = {0}, os = {0};
				snprintf(path, sizeof(path), "%s/%s", t_corpus(),
				         seqs[q][i]);
				/* the generated corpus has no pprof_testdata:
				 * the sequence ends there (main says so) */
				if (t_corpus_generated() &&
				    strncmp(seqs[q][i], "pprof_testdata/", 15) == 0)
					break;
				REQUIRE(t_read_file(path, &in.p, &in.len) == 0);
				int rf = heapprof_delta_compute(fast, in.p, in.len, 0,
				                                sbuf_write, &of);
				int rs = heapprof_delta_compute(slow, in.p, in.len, 0,
				                                sbuf_write, &os);
				if (rf != rs || of.len != os.len ||
				    (of.len && memcmp(of.p, os.p, of.len) != 0))
					T_FAIL("sequence %zu age %u call %zu (%s): "
					       "rc %d/%d, %zu/%zu bytes differ",
					       q, ages[a], i, seqs[q][i], rf, rs,
					       of.len, os.len);
				free(in.p);
				free(of.p);
				free(os.p);
			}
			heapprof_delta_free(fast);
			heapprof_delta_free(slow);
		}
	}
}

int
main(void)
{
	RUN(cache_survives_renumbered_tables);
	RUN(unchanged_values_path);
	RUN(unchanged_values_type_layout);
	RUN(quick_path_string_change);
	RUN(fast_and_decoded_forms_one_key);
	RUN(steady_state_zero_allocations_synthetic);
	char p[512];
	snprintf(p, sizeof(p), "%s/fastdelta/big-heap.pprof", t_corpus());
	FILE *f = fopen(p, "rb");
	if (f) {
		fclose(f);
		RUN(steady_state_zero_allocations_corpus);
		RUN(fast_paths_equal_exact_paths);
		if (t_corpus_generated())
			T_SKIP_CORPUS("fast_paths_equal_exact_paths.pprof_testdata",
			              "pprof_testdata/, legacy heap text");
	} else {
		T_SKIP_CORPUS("steady_state_zero_allocations_corpus",
		              "nor build/corpus: sh tests/corpus/gen.sh");
		T_SKIP_CORPUS("fast_paths_equal_exact_paths",
		              "nor build/corpus: sh tests/corpus/gen.sh");
	}
	TEST_MAIN_END();
}
