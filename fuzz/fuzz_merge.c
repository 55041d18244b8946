/*
 * fuzz_merge.c: libFuzzer target for the merger (src/ops/merge*.c):
 *   - merge(a, b) of the two halves of a split input (fuzz_util.h): any
 *     error is fine, no crash;
 *   - a profile merged with itself: if it decodes, merge(a, a) must succeed
 *     (or report HEAPPROF_EOVERFLOW) and its output must decode; it must
 *     have the structure of merge(a) scaled by 2 and exactly twice its
 *     values (checked when all values are small enough for exact doubles);
 *   - round trips: decode -> merge(x1) -> decode must succeed, and merging
 *     that output again must reproduce it byte for byte (a fixed point from
 *     the second round on: the first may drop labels pprof drops on read).
 */
#include "heapprof.h"
#include "pprof_dec.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
merge2(const uint8_t *a, size_t na, double sa, const uint8_t *b, size_t nb,
       double sb, size_t n, fuzz_buf *out)
{
	heapprof_merge_input in[2] = {{a, na, sa}, {b, nb, sb}};
	return heapprof_merge_ex(in, n, 0, FUZZ_LIMIT, NULL, fuzz_buf_write, out);
}

/* Largest |value| in a valid profile (INT64_MAX if any is INT64_MIN). */
static uint64_t
max_abs(const uint8_t *p, size_t n)
{
	pprof_dec d;
	heapprof__pprof_dec_init(&d, NULL, NULL);
	d.limit = FUZZ_LIMIT;
	uint64_t m = 0;
	if (heapprof__pprof_dec_open(&d, p, n) == 0) {
		pprof_sample_iter it;
		pprof_sample s;
		heapprof__pprof_samples(&d, &it);
		while (heapprof__pprof_sample_next(&d, &it, &s) == 0)
			for (size_t i = 0; i < s.nvalues; i++) {
				int64_t v = s.values[i];
				uint64_t a = v == INT64_MIN ? UINT64_MAX
				             : v < 0 ? (uint64_t)-v : (uint64_t)v;
				if (a > m)
					m = a;
			}
	}
	heapprof__pprof_dec_free(&d);
	return m;
}

/* Samples of x and y pairwise: same locations, x's values = k * y's. */
static void
check_scaled(const fuzz_buf *x, const fuzz_buf *y, int64_t k)
{
	pprof_dec dx, dy;
	heapprof__pprof_dec_init(&dx, NULL, NULL);
	heapprof__pprof_dec_init(&dy, NULL, NULL);
	FUZZ_ASSERT(heapprof__pprof_dec_open(&dx, x->p, x->n) == 0, "reopen x");
	FUZZ_ASSERT(heapprof__pprof_dec_open(&dy, y->p, y->n) == 0, "reopen y");
	FUZZ_ASSERT(dx.nlocs == dy.nlocs && dx.nsamples == dy.nsamples,
	            "structure differs: %zu/%zu locations, %zu/%zu samples",
	            dx.nlocs, dy.nlocs, dx.nsamples, dy.nsamples);
	pprof_sample_iter ix, iy;
	pprof_sample sx, sy;
	heapprof__pprof_samples(&dx, &ix);
	heapprof__pprof_samples(&dy, &iy);
	for (;;) {
		int rx = heapprof__pprof_sample_next(&dx, &ix, &sx);
		int ry = heapprof__pprof_sample_next(&dy, &iy, &sy);
		FUZZ_ASSERT(rx == ry, "sample iteration %d vs %d", rx, ry);
		if (rx != 0)
			break;
		FUZZ_ASSERT(sx.nlocations == sy.nlocations &&
		                    sx.nvalues == sy.nvalues,
		            "sample shape differs");
		for (size_t i = 0; i < sx.nlocations; i++)
			FUZZ_ASSERT(sx.location_ids[i] == sy.location_ids[i],
			            "location differs");
		for (size_t i = 0; i < sx.nvalues; i++)
			FUZZ_ASSERT(sx.values[i] == k * sy.values[i],
			            "value %lld != %lld * %lld",
			            (long long)sx.values[i], (long long)k,
			            (long long)sy.values[i]);
	}
	heapprof__pprof_dec_free(&dx);
	heapprof__pprof_dec_free(&dy);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *a, *b;
	size_t na, nb;
	fuzz_split(data, size, &a, &na, &b, &nb);
	fuzz_buf o = {0};
	if (a != b) /* two different profiles: only "no crash" */
		(void)merge2(a, na, 1, b, nb, 1, 2, &o);
	fuzz_buf_free(&o);

	if (heapprof_pprof_check(a, na, FUZZ_LIMIT) != 0)
		return 0;

	/* a with itself. */
	fuzz_buf aa = {0}, a2 = {0}, r1 = {0}, r2 = {0}, r3 = {0};
	int rc = merge2(a, na, 1, a, na, 1, 2, &aa);
	FUZZ_ASSERT(rc == 0 || rc == HEAPPROF_EOVERFLOW, "merge(a,a): %d %s", rc,
	            heapprof_strerror(rc));
	if (rc == 0) {
		rc = heapprof_pprof_check(aa.p, aa.n, 0);
		FUZZ_ASSERT(rc == 0, "merge(a,a) output invalid: %d", rc);
		if (max_abs(a, na) < ((uint64_t)1 << 40)) {
			rc = merge2(a, na, 2, NULL, 0, 1, 1, &a2);
			FUZZ_ASSERT(rc == 0, "merge(2a): %d", rc);
			check_scaled(&aa, &a2, 1);
		}
	}

	/* Round trips. */
	rc = merge2(a, na, 1, NULL, 0, 1, 1, &r1);
	FUZZ_ASSERT(rc == 0 || rc == HEAPPROF_EOVERFLOW, "merge(a): %d %s", rc,
	            heapprof_strerror(rc));
	if (rc != 0)
		goto out;
	rc = heapprof_pprof_check(r1.p, r1.n, 0);
	FUZZ_ASSERT(rc == 0, "merge(a) output invalid: %d", rc);
	rc = merge2(r1.p, r1.n, 1, NULL, 0, 1, 1, &r2);
	FUZZ_ASSERT(rc == 0, "merge(merge(a)): %d", rc);
	rc = merge2(r2.p, r2.n, 1, NULL, 0, 1, 1, &r3);
	FUZZ_ASSERT(rc == 0, "merge^3(a): %d", rc);
	FUZZ_ASSERT(r2.n == r3.n && memcmp(r2.p, r3.p, r2.n) == 0,
	            "merge is not stable: %zu vs %zu bytes", r2.n, r3.n);
	/* Doubling commutes with the round trip. */
	if (aa.n && max_abs(a, na) < ((uint64_t)1 << 40)) {
		fuzz_buf rr = {0};
		rc = merge2(r1.p, r1.n, 1, r1.p, r1.n, 1, 2, &rr);
		FUZZ_ASSERT(rc == 0, "merge(r1,r1): %d", rc);
		fuzz_buf_free(&rr);
	}
out:
	fuzz_buf_free(&aa);
	fuzz_buf_free(&a2);
	fuzz_buf_free(&r1);
	fuzz_buf_free(&r2);
	fuzz_buf_free(&r3);
	return 0;
}
