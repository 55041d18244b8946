/*
 * test_top_err.c: `heapprof top --error`'s arithmetic (cli/top_err.c) on
 * profiles written by the encoder from records whose sampled counts are
 * known: the sampled count recovered from every unsampled count, the
 * variances n (1-p)/p^2 (x S^2 for bytes) against values computed by hand
 * (python3, math.exp), exact at rate 1, no interval without a rate or
 * without bytes labels, and the reconciliation line from the comments.
 */
#include <math.h>

#include "heapprof.h"
#include "pb.h"
#include "pprof_dec.h"
#include "test.h"
#include "top_err.h"

typedef struct out {
	uint8_t *p;
	size_t len;
} out;

static int
err_out_write(void *arg, const void *buf, size_t n)
{
	out *o = arg;
	uint8_t *q = realloc(o->p, o->len + n);
	if (!q)
		return -1;
	memcpy(q + o->len, buf, n);
	o->p = q;
	o->len += n;
	return 0;
}

static int
near(double a, double b)
{
	return fabs(a - b) <= 1e-9 * fabs(b) + 1e-12;
}

/* Every unsampled count maps back to its sampled count. */
TEST(sampled_roundtrip)
{
	static const int64_t sizes[] = {1, 8, 24, 1000, 4096, 65536, 524288,
	                                4194304};
	static const int64_t rates[] = {2, 4096, 524288};
	long bad = 0;
	for (size_t r = 0; r < 3; r++)
		for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
			for (int64_t n = 1; n <= 3000; n++) {
				int64_t c, b;
				heapprof_scale_heap_sample(n, n * sizes[k], rates[r], &c, &b);
				double got = cli_top_err_sampled(c, (double)sizes[k], rates[r]);
				if (got != (double)n && bad++ < 5)
					T_FAIL("n %lld size %lld rate %lld: count %lld -> %g",
					       (long long)n, (long long)sizes[k],
					       (long long)rates[r], (long long)c, got);
			}
	CHECK_EQ(bad, 0);
	CHECK(cli_top_err_sampled(0, 100, 524288) == 0);
	CHECK(cli_top_err_sampled(7, 100, 1) == 7);
}

static const uint64_t stk_a[] = {0x1001, 0x2001};
static const uint64_t stk_b[] = {0x1101, 0x2001};
static const uint64_t stk_c[] = {0x1201};

/* A: 12 x 64 KiB sampled, 2 freed; B: 3 x 1000 B; C: 1 x 4 MiB. */
static int
encode(int64_t rate, const char *const *comments, size_t ncomments, out *o)
{
	heapprof_record r[3] = {
		{12, 12 * 65536, 2, 2 * 65536, stk_a, 2, 65536, 0},
		{3, 3000, 0, 0, stk_b, 2, 1000, 0},
		{1, 4194304, 0, 0, stk_c, 1, 4194304, 0},
	};
	heapprof_heap_profile p;
	memset(&p, 0, sizeof(p));
	p.records = r;
	p.nrecords = 3;
	p.rate = rate;
	p.comments = comments;
	p.ncomments = ncomments;
	memset(o, 0, sizeof(*o));
	return heapprof_encode_heap(&p, 0, err_out_write, o);
}

static long
type_index(const pprof_dec *d, const char *name)
{
	for (size_t i = 0; i < d->ntypes; i++)
		if (heapprof__pprof_string_eq(d, d->types[i].type, name))
			return (long)i;
	return -1;
}

/* The variance of every sample of type `name`, in sample order. */
static int
vars(pprof_dec *d, const char *name, top_err *e, double *v, double *n,
     size_t cap)
{
	long vi = type_index(d, name);
	if (vi < 0)
		return -1;
	cli_top_err_init(e, d, (size_t)vi);
	pprof_sample_iter it;
	pprof_sample s;
	size_t k = 0;
	heapprof__pprof_samples(d, &it);
	while (k < cap && heapprof__pprof_sample_next(d, &it, &s) == 0) {
		double size;
		v[k] = e->kind == TOP_ERR_SAMPLED
		               ? cli_top_err_var(e, d, &s, &n[k], &size)
		               : 0;
		k++;
	}
	return (int)k;
}

TEST(variance_by_hand)
{
	out o;
	REQUIRE_OK(encode(524288, NULL, 0, &o));
	pprof_dec d;
	heapprof__pprof_dec_init(&d, NULL, NULL);
	REQUIRE_OK(heapprof__pprof_dec_open(&d, o.p, o.len));
	top_err e;
	double v[3], n[3];
	/* By hand: p = 1 - exp(-S/R); var = n (1-p)/p^2 (x S^2). */
	REQUIRE(vars(&d, "inuse_space", &e, v, n, 3) == 3);
	CHECK_EQ(e.kind, TOP_ERR_SAMPLED);
	CHECK(n[0] == 10 && n[1] == 3 && n[2] == 1);
	CHECK(near(v[0], 2745202724496.527));
	CHECK(near(v[1], 824633470831.9982));
	CHECK(near(v[2], 5905482433.747783));
	/* A row of A and B: +-1.96 sqrt(var), 3.70 MB. */
	CHECK(near(cli_top_err_half(v[0] + v[1]), 3703225.9893198605));
	REQUIRE(vars(&d, "inuse_objects", &e, v, n, 3) == 3);
	CHECK(near(v[0], 639.1673173048829));
	CHECK(near(v[1], 824633.4708319982));
	CHECK(near(v[2], 0.00033568781155666913));
	/* alloc_*: the 12 objects sampled at A. */
	REQUIRE(vars(&d, "alloc_objects", &e, v, n, 3) == 3);
	CHECK(n[0] == 12);
	CHECK(near(v[0], 639.1673173048829 * 1.2));
	heapprof__pprof_dec_free(&d);
	free(o.p);
}

TEST(exact_at_rate_1)
{
	out o;
	REQUIRE_OK(encode(1, NULL, 0, &o));
	pprof_dec d;
	heapprof__pprof_dec_init(&d, NULL, NULL);
	REQUIRE_OK(heapprof__pprof_dec_open(&d, o.p, o.len));
	top_err e;
	double v[3], n[3];
	REQUIRE(vars(&d, "inuse_space", &e, v, n, 3) == 3);
	CHECK_EQ(e.kind, TOP_ERR_EXACT);
	double heap, half, sampled;
	int exact;
	cli_top_err_inuse(&d, &heap, &half, &exact, &sampled);
	CHECK(exact && half == 0);
	CHECK(heap == 10 * 65536 + 3000 + 4194304 && sampled == heap);
	heapprof__pprof_dec_free(&d);
	free(o.p);
}

/* A heap profile without "bytes" labels, as other tools write them. */
static void
unlabelled(pb_writer *w, int64_t period)
{
	static const char *const st[] = {"", "alloc_objects", "count",
	                                 "alloc_space", "bytes", "inuse_objects",
	                                 "inuse_space", "space"};
	heapprof__pb_init(w, heapprof__pb_libc_realloc, NULL, NULL, NULL);
	for (int i = 0; i < 4; i++) {
		heapprof__pb_begin(w, 1);
		heapprof__pb_uint_opt(w, 1, i == 0 ? 1 : i == 1 ? 3 : i == 2 ? 5 : 6);
		heapprof__pb_uint_opt(w, 2, i % 2 ? 4 : 2);
		heapprof__pb_end(w);
	}
	int64_t vals[4] = {10, 10000, 10, 10000};
	heapprof__pb_begin(w, 2);
	heapprof__pb_packed_i64(w, 2, vals, 4);
	heapprof__pb_end(w);
	for (size_t i = 0; i < sizeof(st) / sizeof(st[0]); i++)
		heapprof__pb_bytes_field(w, 6, st[i], strlen(st[i]));
	heapprof__pb_begin(w, 11);
	heapprof__pb_uint_opt(w, 1, 7);
	heapprof__pb_uint_opt(w, 2, 4);
	heapprof__pb_end(w);
	heapprof__pb_uint_opt(w, 12, (uint64_t)period);
}

TEST(no_interval_without_rate_or_labels)
{
	top_err e;
	double v[1], n[1];
	pb_writer w;
	unlabelled(&w, 524288);
	pprof_dec d;
	heapprof__pprof_dec_init(&d, NULL, NULL);
	REQUIRE_OK(heapprof__pprof_dec_open(&d, w.buf, w.len));
	REQUIRE(vars(&d, "inuse_space", &e, v, n, 1) == 1);
	CHECK_EQ(e.kind, TOP_ERR_NONE);
	CHECK(strstr(e.why, "bytes") != NULL);
	heapprof__pprof_dec_free(&d);
	heapprof__pb_free(&w);

	unlabelled(&w, 0);
	heapprof__pprof_dec_init(&d, NULL, NULL);
	REQUIRE_OK(heapprof__pprof_dec_open(&d, w.buf, w.len));
	REQUIRE(vars(&d, "inuse_space", &e, v, n, 1) == 1);
	CHECK_EQ(e.kind, TOP_ERR_NONE);
	CHECK(strstr(e.why, "no sampling rate") != NULL);
	heapprof__pprof_dec_free(&d);
	heapprof__pb_free(&w);
}

TEST(reconciliation_line)
{
	static const char *const c[] = {
		"heapprof 0.1",
		"heapprof: profiler memory: records=1048576 bytes, "
		"sampled-object pages=8388608 bytes",
		"heapprof: memory: rss=20971520 allocator=glibc held=10485760 "
		"in_use=9437184 free=1048576"};
	out o;
	REQUIRE_OK(encode(1, c, 3, &o));
	pprof_dec d;
	heapprof__pprof_dec_init(&d, NULL, NULL);
	REQUIRE_OK(heapprof__pprof_dec_open(&d, o.p, o.len));
	top_mem m;
	cli_top_mem_parse(&d, &m);
	CHECK(m.have && m.have_alloc);
	CHECK_EQ(m.rss, 20971520);
	CHECK_EQ(m.held, 10485760);
	CHECK_EQ(m.in_use, 9437184);
	CHECK_EQ(m.free_b, 1048576);
	CHECK_EQ(m.records, 1048576);
	CHECK_EQ(m.pages, 8388608);
	CHECK_STR(m.allocator, "glibc");
	/* 6 MB heap (2 MB of it sampled), +-3%: free = 10 + 2 - 6 = 6 MB,
	 * heapprof = 1 + 8 - 2 = 7 MB, other = 20 - 10 - 8 - 1 = 1 MB. */
	char line[400];
	cli_top_mem_line(&m, 6291456, 188743.68, 0, 2097152, line, sizeof(line));
	CHECK_STR(line, "Memory: RSS 20MB = heap in use 6MB (est. \xc2\xb1" "3.0%) "
	                "+ glibc free and overhead 6MB + heapprof 7MB + other 1MB");
	cli_top_mem_line(&m, 6291456, 0, 1, 6291456, line, sizeof(line));
	CHECK(strstr(line, "heap in use 6MB (exact) + glibc free and overhead "
	                   "10MB + heapprof 3MB + other 1MB") != NULL);
	/* An estimate above what the allocator holds says so. */
	cli_top_mem_line(&m, 31457280, 1048576, 0, 0, line, sizeof(line));
	CHECK(strstr(line, "free and overhead -20MB") != NULL);
	CHECK(strstr(line, "exceeds, by more than its interval, what the "
	                   "allocator") != NULL);
	/* ... but not when within the interval. */
	cli_top_mem_line(&m, 11534336, 2097152, 0, 0, line, sizeof(line));
	CHECK(strstr(line, "free and overhead -1MB") != NULL);
	CHECK(strstr(line, "exceeds") == NULL);
	heapprof__pprof_dec_free(&d);
	free(o.p);

	static const char *const k[] = {
		"heapprof: memory: rss=20971520 allocator=skipped(dump in a "
		"signal handler or _exit, where the allocator's locks may be "
		"held)"};
	REQUIRE_OK(encode(524288, k, 1, &o));
	heapprof__pprof_dec_init(&d, NULL, NULL);
	REQUIRE_OK(heapprof__pprof_dec_open(&d, o.p, o.len));
	cli_top_mem_parse(&d, &m);
	CHECK(m.have && !m.have_alloc && m.rss == 20971520);
	cli_top_mem_line(&m, 1048576, 1000, 0, 0, line, sizeof(line));
	CHECK(strstr(line, "no allocator figures (dump in a signal handler") != NULL);
	heapprof__pprof_dec_free(&d);
	free(o.p);
}

int
main(void)
{
	RUN(sampled_roundtrip);
	RUN(variance_by_hand);
	RUN(exact_at_rate_1);
	RUN(no_interval_without_rate_or_labels);
	RUN(reconciliation_line);
	TEST_MAIN_END();
}
