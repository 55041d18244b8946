/*
 * sampler.c: the distance, in bytes, to the next sampled allocation.
 *
 * Sampling is a Poisson process over allocated bytes: the distances between
 * sample points are exponential with mean R, so an allocation of S bytes is
 * sampled with probability 1 - exp(-S/R) whatever happened before it (the
 * exponential is memoryless, which is why a fresh distance is drawn after
 * each sample). That probability is what scaleHeapSample divides by.
 *
 * The fast path, inline in interpose.c, is one thread-local subtraction and
 * one branch: `if ((t->left -= size) > 0) forward`. Everything here runs
 * only when the counter crosses zero. Called from malloc: must not allocate
 * or take locks.
 *
 * A thread starts with the counter at 0, which sends its first allocation
 * here: it has no distance yet, so one is drawn and the allocation charged
 * against it (heapprof__sampler_take), as tcmalloc and Go do. Taking that
 * first allocation as a sample would give each short-lived thread one
 * sample worth a whole rate. Each distance remembers the rate it was drawn
 * at (t->rate), and the sample at its end is recorded with that rate, so a
 * rate change at run time never reweighs samples already taken.
 */
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/auxv.h>

#include "collect.h"
#include "hpmath.h"

static uint64_t
rng_next(hp_tls *t)
{
	/* xorshift64* (Vigna 2014): period 2^64 - 1, good enough for a
	 * sampling distance and three instructions of state update. */
	uint64_t x = t->rng;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	t->rng = x;
	return x * 0x2545f4914f6cdd1dULL;
}

/* No gettid (a thread's first allocation comes here, and glibc's malloc
 * makes no such call: a seccomp filter may forbid it, sandbox.c): the
 * kernel's random bytes for this process (AT_RANDOM), a count of seeds
 * (threads of one process differ), the thread's own address and the
 * clock, which the vDSO reads without entering the kernel (fork children,
 * whose random bytes, count and address are the parent's, differ by it). */
static _Atomic uint64_t seeds;

static void
rng_seed(hp_tls *t)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	const unsigned char *ar = (const unsigned char *)getauxval(AT_RANDOM);
	uint64_t r = 0;
	if (ar)
		memcpy(&r, ar, sizeof(r));
	uint64_t s = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ r ^
	             (atomic_fetch_add_explicit(&seeds, 1, memory_order_relaxed)
	              * 0x9e3779b97f4a7c15ULL) ^ (uintptr_t)t;
	/* splitmix64 finaliser so that nearby seeds diverge at once. */
	s += 0x9e3779b97f4a7c15ULL;
	s = (s ^ (s >> 30)) * 0xbf58476d1ce4e5b9ULL;
	s = (s ^ (s >> 27)) * 0x94d049bb133111ebULL;
	s ^= s >> 31;
	t->rng = s ? s : 1;
	t->seeded = 1;
}

/* ln(u) for u in (0, 1], within 1e-14 relative: u = m * 2^e with m in
 * [sqrt(1/2), sqrt(2)), ln(m) = 2 atanh(s), s = (m - 1) / (m + 1), |s| <
 * 0.172, by its series to s^17. Ours, not libm's: libheapprof.so does not
 * load libm at all (hpmath.h). A distance is random anyway: the last bits
 * do not matter. */
static double
ln_unit(double u)
{
	uint64_t b;
	memcpy(&b, &u, sizeof(b));
	int e = (int)((b >> 52) & 0x7ff) - 1023; /* u is normal: >= 2^-53 */
	b = (b & ~(0x7ffull << 52)) | (1023ull << 52);
	double m;
	memcpy(&m, &b, sizeof(m));
	if (m > 1.4142135623730951) {
		m *= 0.5;
		e++;
	}
	double x = (m - 1.0) / (m + 1.0), x2 = x * x, sum = 0.0;
	for (int k = 17; k >= 3; k -= 2)
		sum = (sum + 1.0 / k) * x2;
	return (double)e * 0.6931471805599453 + 2.0 * x * (1.0 + sum);
}

int64_t
heapprof__sampler_next(hp_tls *t, int64_t rate)
{
	t->rate = rate > 0 ? rate : 0;
	if (rate <= 0) {
		/* Sampling is off: come back after 1 MiB to see whether it
		 * was turned on again (the bytes until then go unsampled). */
		return (int64_t)1 << 20;
	}
	if (rate == 1)
		return 1; /* every allocation (each counts at least 1 byte) */
	if (!t->seeded)
		rng_seed(t);
	/* U uniform in (0, 1]: the top 53 bits, plus one, over 2^53. */
	double u = (double)((rng_next(t) >> 11) + 1) * (1.0 / 9007199254740992.0);
	double d = -ln_unit(u) * (double)rate;
	if (d < 1.0)
		return 1;
	if (d > 9.0e18)
		return INT64_MAX / 2;
	return (int64_t)d;
}

int64_t
heapprof__sampler_take(hp_tls *t, int64_t rate, uint64_t w)
{
	if (!t->seeded || t->rate == 0) {
		/* No distance drawn at a rate yet: a new thread, the main
		 * thread's first allocation after init, a fork child, or the
		 * first crossing since sampling was off. Draw one now and
		 * charge this allocation against it as the fast path would:
		 * a sample only if its weight reaches it. Counting the
		 * allocation as a certain sample instead would make every
		 * short thread's first block weigh a whole `rate`. */
		if (!t->seeded)
			rng_seed(t);
		int64_t d = heapprof__sampler_next(t, rate);
		if (t->rate == 0 || w < (uint64_t)d) {
			t->left = t->rate == 0 ? d : d - (int64_t)w;
			return 0;
		}
	}
	/* The counter crossed zero inside this allocation: a sample, at the
	 * rate its distance was drawn at. The next distance is drawn at
	 * the current rate. */
	int64_t at = t->rate;
	t->left = heapprof__sampler_next(t, rate);
	return at;
}

uint32_t
heapprof__sampler_half(hp_tls *t)
{
	/* A draw of its own: a bit of the state would be tied to the
	 * distance just drawn from it, which places the next sample. */
	if (!t->seeded)
		rng_seed(t);
	return (uint32_t)(rng_next(t) >> 63);
}

HP_RARE void
heapprof__sampler_reset(hp_tls *t)
{
	t->seeded = 0;
	t->rate = 0;
	t->left = 0;
	t->saved_left = 0; /* what hp_leave restores if called while busy */
}

int64_t
heapprof__sampler_weight(uint64_t size, int64_t rate)
{
	if (rate <= 1)
		return (int64_t)size;
	double avg = size == 0 ? 1.0 : (double)size;
	double w = (double)size / (1.0 - hp_exp_neg(avg / (double)rate));
	return (int64_t)w;
}

