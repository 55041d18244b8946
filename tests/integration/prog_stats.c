/*
 * prog_stats.c: enough allocation for the sampler's estimates to be
 * checked statistically at the default rate: site_churn allocates and
 * frees GiBs of small blocks (16 B - 4 KiB, log-uniform), site_live keeps
 * 1 GiB of 64 KiB blocks (untouched, so it costs little memory), and
 * site_big keeps one 64 MiB block, which is sampled with probability
 * 1 - exp(-128) and must be counted exactly. Prints the truth as EXPECT
 * lines (see profsum.py), and for each site the standard deviation of the
 * profiler's estimates that Poisson sampling at 512 KiB implies, relative
 * to the truth, as "SIGMA site objects bytes": an allocation of S bytes is
 * sampled with probability p = 1 - exp(-S/R) and then counts 1/p objects
 * and S/p bytes, so the variance is the sum of (1-p)/p and S^2 (1-p)/p.
 *
 * usage: prog_stats [churn_mib] [live_mib] [seed]
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t rng = 88172645463325252ULL;

static uint64_t
next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static long ao[3], ab[3], io[3], ib[3];
static double var_o[3], var_b[3];

static void
account(int site, size_t n)
{
	double p = 1 - exp(-(double)n / 524288.0);
	var_o[site] += (1 - p) / p;
	var_b[site] += (double)n * (double)n * (1 - p) / p;
}

__attribute__((noinline)) static void
site_churn(long total)
{
	void *ring[64] = {0};
	long done = 0;
	for (unsigned i = 0; done < total; i++) {
		/* log-uniform in [16, 4096]: 2^(4 + 8u) */
		unsigned shift = 4 + (unsigned)(next() % 8);
		size_t n = ((size_t)1 << shift) + next() % ((size_t)1 << shift);
		if (n > 4096)
			n = 4096;
		free(ring[i % 64]);
		ring[i % 64] = malloc(n);
		((char *)ring[i % 64])[0] = 1;
		ao[0]++, ab[0] += (long)n, done += (long)n;
		account(0, n);
	}
	for (int i = 0; i < 64; i++)
		free(ring[i]);
}

__attribute__((noinline)) static void
site_live(long total, void ***keep, long *nkeep)
{
	long n = total / 65536;
	*keep = calloc((size_t)n, sizeof(void *));
	for (long i = 0; i < n; i++) {
		(*keep)[i] = malloc(65536);
		ao[1]++, ab[1] += 65536;
		account(1, 65536);
		io[1]++, ib[1] += 65536;
	}
	*nkeep = n;
}

__attribute__((noinline)) static void *
site_big(void)
{
	void *p = malloc((size_t)64 << 20);
	ao[2]++, ab[2] += 64L << 20;
	io[2]++, ib[2] += 64L << 20;
	return p;
}

int
main(int argc, char **argv)
{
	long churn = (argc > 1 ? atol(argv[1]) : 4096) << 20;
	long live = (argc > 2 ? atol(argv[2]) : 1024) << 20;
	if (argc > 3)
		rng ^= (uint64_t)atol(argv[3]) * 0x9e3779b97f4a7c15ULL;
	void **keep;
	long nkeep;
	site_churn(churn);
	site_live(live, &keep, &nkeep);
	void *big = site_big();
	printf("EXPECT site_churn %ld %ld 0 0\n", ao[0], ab[0]);
	printf("EXPECT site_live %ld %ld %ld %ld\n", ao[1], ab[1], io[1], ib[1]);
	printf("EXPECT site_big %ld %ld %ld %ld\n", ao[2], ab[2], io[2], ib[2]);
	const char *names[2] = {"site_churn", "site_live"};
	for (int i = 0; i < 2; i++)
		printf("SIGMA %s %.6f %.6f\n", names[i], sqrt(var_o[i]) / (double)ao[i],
		       sqrt(var_b[i]) / (double)ab[i]);
	fflush(stdout);
	(void)big;
	(void)nkeep;
	return 0;
}
