/*
 * hpmath.h: the two libm functions the profile code needs, as our own, so
 * that neither libheapprof.so nor a dump ever needs libm: exp(-x) for the
 * sampler's weights and the unsampling of heap profiles (Go's
 * scaleHeapSample), and round() for merge's scaling (pprof's math.Round).
 * libm was dlopen'ed on first use before; a dlopen inside a dump is what
 * hung fork children of threaded processes and nested in an interrupted
 * dlopen (RELIABILITY.md).
 */
#ifndef HEAPPROF_HPMATH_H
#define HEAPPROF_HPMATH_H

#include <stdint.h>
#include <string.h>

/* exp(-x) for x >= 0 (0 past 700; x < 0 as well), within 1 ulp of libm's over [0, 700)
 * (checked every 0.0007; test_hpmath): x = k ln2 + r, |r| <= ln2 / 2, with
 * ln2 in two parts (the high one exact in 32 bits, so k ln2_hi is exact:
 * with one constant the reduction lost up to 718 ulps near x = 700),
 * exp(-r) by its series to r^14 (0.35^15 / 15! < 1e-19), times 2^-k. It
 * differs from glibc's in the last bit for ~5 % of the unsampling's
 * arguments; in 2 M random (count, size) pairs at the default rate, no
 * unsampled count or size changed (both truncate to integers). */
static inline double
hp_exp_neg(double x)
{
	if (!(x < 700.0))
		return 0.0;
	/* x < 0 (a legacy profile's negative in-use count): exp(-x) > 1, as
	 * libm's, and +Inf past ln(DBL_MAX), not 2^-k wrapped into the sign
	 * bit (test_hpmath exp_neg_of_negatives). */
	if (x < -709.782712893384)
		return __builtin_inf();
	int k = (int)(x * 1.4426950408889634 + (x < 0.0 ? -0.5 : 0.5));
	double r = (x - (double)k * 6.93147180369123816490e-01) -
	           (double)k * 1.90821492927058770002e-10;
	double sum = 1.0;
	for (int i = 14; i >= 1; i--)
		sum = 1.0 - r * sum / i;
	double two = k < -1000 ? 2.0 : 1.0; /* 2^1024 is not a double */
	/* 2^-k, -1024 <= k <= 1010: normal */
	uint64_t b = (uint64_t)(1023 - k - (k < -1000)) << 52;
	double p;
	memcpy(&p, &b, sizeof(p));
	return sum * p * two;
}

/* round(): to the nearest integer, halves away from zero; exact (x - t is
 * exact below 2^52, past which every double is an integer). NaN and
 * infinities come back as they are. */
static inline double
hp_round(double x)
{
	if (!(x > -4503599627370496.0 && x < 4503599627370496.0))
		return x;
	double t = (double)(int64_t)x; /* toward zero */
	if (x - t >= 0.5)
		t += 1.0;
	else if (t - x >= 0.5)
		t -= 1.0;
	return t;
}

#endif
