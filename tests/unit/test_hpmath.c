/*
 * test_hpmath.c: src/common/hpmath.h against libm (which this test links;
 * libheapprof.so does not): hp_exp_neg within 1 ulp of exp(-x) over the
 * whole range the sampler and the unsampling use, and well inside it for
 * the tiny arguments of small objects; hp_round equal to round() on
 * halves, negatives, large values, NaN and infinities; and unsampled
 * counts and sizes (heapprof_scale_heap_sample) against libm's formula
 * for random (count, size) pairs at the default rate and at 4 KiB: equal
 * but for a last-bit difference of exp that moves a truncation, which
 * changes a count or size by one in a few pairs per million (only with
 * counts near 10^5 and unsampled values past 10^8; Go's math.Exp differs
 * from glibc's in the last bit as well).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "heapprof.h"
#include "hpmath.h"
#include "test.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
#define next() t_xorshift(&rng)

/* Distance in ulps between two positive doubles. */
static int64_t
ulps(double a, double b)
{
	int64_t x, y;
	memcpy(&x, &a, sizeof(x));
	memcpy(&y, &b, sizeof(y));
	return x > y ? x - y : y - x;
}

TEST(exp_neg_within_1_ulp)
{
	int64_t worst = 0;
	double at = 0;
	for (double x = 0; x < 700.0; x += 0.0007) {
		int64_t u = ulps(hp_exp_neg(x), exp(-x));
		if (u > worst)
			worst = u, at = x;
	}
	/* small objects at large rates: x down to 1 / 2^40 */
	for (int i = 0; i < 200000; i++) {
		double x = ldexp((double)(next() >> 11) / 9007199254740992.0,
		                 -(int)(next() % 40));
		int64_t u = ulps(hp_exp_neg(x), exp(-x));
		if (u > worst)
			worst = u, at = x;
	}
	if (worst > 1)
		T_FAIL("%" PRId64 " ulps at x = %.17g", worst, at);
	CHECK_EQ(hp_exp_neg(0.0), 1.0);
	CHECK_EQ(hp_exp_neg(700.0), 0.0);
	CHECK_EQ(hp_exp_neg(INFINITY), 0.0);
	CHECK_EQ(hp_exp_neg(NAN), 0.0);
}

/* Negative arguments: a legacy heap_v2 line may have a negative in-use
 * count (pprof's heapSampleRE allows it), so the unsampling takes exp of a
 * positive number. Go (and libm, used before hpmath.h) give exp(x), +Inf
 * past 709.78, and with it zeros for that line; hp_exp_neg's series
 * lost up to ~6,000 ulps there, and below -1,024 ln 2 its 2^-k wrapped
 * into the sign bit: count -1 of 2839 bytes at rate 2 came out as 1465
 * bytes (go tool pprof: 0). */
TEST(exp_neg_of_negatives)
{
	int64_t worst = 0;
	double at = 0;
	for (double x = -0.0007; x > -709.0; x -= 0.0007) {
		int64_t u = ulps(hp_exp_neg(x), exp(-x));
		if (u > worst)
			worst = u, at = x;
	}
	if (worst > 2)
		T_FAIL("%" PRId64 " ulps at x = %.17g", worst, at);
	for (double x = -710.0; x > -1e6; x *= 1.01)
		if (!isinf(hp_exp_neg(x))) {
			T_FAIL("hp_exp_neg(%.17g) = %.17g, libm inf", x, hp_exp_neg(x));
			break;
		}
	CHECK(isinf(hp_exp_neg(-INFINITY)));
	int64_t c = 7, s = 7;
	heapprof_scale_heap_sample(-1, 2839, 2, &c, &s);
	CHECK_EQ(c, 0);
	CHECK_EQ(s, 0);
}

TEST(round_matches_libm)
{
	static const double v[] = {0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5,
	                           0.49999999999999994, -0.49999999999999994,
	                           4503599627370495.5, -4503599627370495.5,
	                           4503599627370496.0, 9007199254740993.0,
	                           1e300, -1e300, INFINITY, -INFINITY};
	int bad = 0;
	for (size_t i = 0; i < sizeof(v) / sizeof(*v); i++)
		if (memcmp(&(double){hp_round(v[i])}, &(double){round(v[i])},
		           sizeof(double)) && hp_round(v[i]) != round(v[i])) {
			printf("  round(%.17g): %.17g, libm %.17g\n", v[i],
			       hp_round(v[i]), round(v[i]));
			bad++;
		}
	for (int i = 0; i < 1000000; i++) {
		double x = ((double)(int64_t)next()) / (double)(1ull << (next() % 64));
		if (i % 3 == 0)
			x = (double)((int64_t)(next() % 20001) - 10000) / 2.0;
		if (hp_round(x) != round(x)) {
			if (bad++ < 5)
				printf("  round(%.17g): %.17g, libm %.17g\n", x,
				       hp_round(x), round(x));
		}
	}
	CHECK(isnan(hp_round(NAN)));
	CHECK_EQ(bad, 0);
}

TEST(unsampling_matches_libm)
{
	static const int64_t rates[] = {524288, 4096};
	int bad = 0, off_by_one = 0;
	for (size_t r = 0; r < 2; r++)
		for (int i = 0; i < 300000; i++) {
			int64_t count = 1 + (int64_t)(next() % 100000);
			int64_t avg = 1 + (int64_t)(next() % (i % 2 ? 256 : 1 << 24));
			int64_t size = count * avg, c, s;
			heapprof_scale_heap_sample(count, size, rates[r], &c, &s);
			double scale = 1.0 / (1.0 - exp(-((double)size / (double)count) /
			                                (double)rates[r]));
			int64_t dc = c - (int64_t)((double)count * scale);
			int64_t ds = s - (int64_t)((double)size * scale);
			if (dc == 0 && ds == 0)
				continue;
			if (dc >= -1 && dc <= 1 && ds >= -1 && ds <= 1) {
				off_by_one++;
				continue;
			}
			{
				if (bad++ < 5)
					printf("  %" PRId64 " %" PRId64 " at %" PRId64
					       ": %" PRId64 " %" PRId64 "\n",
					       count, size, rates[r], c, s);
			}
		}
	CHECK_EQ(bad, 0);
	CHECK(off_by_one <= 60); /* 1 in 10^4 of 600,000 pairs */
	printf("  %d of 600000 pairs off by one\n", off_by_one);
}

int
main(void)
{
	RUN(exp_neg_within_1_ulp);
	RUN(exp_neg_of_negatives);
	RUN(round_matches_libm);
	RUN(unsampling_matches_libm);
	TEST_MAIN_END();
}
