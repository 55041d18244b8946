/*
 * mbench.c: malloc+free microbenchmark for the capture benchmarks.
 *
 *   mbench [-t THREADS] [-n PAIRS] [-l LIVE] [-s SEED] [-m live|tight]
 *
 * live (default): each thread keeps LIVE objects (default 10000) and does
 * PAIRS (default 10 M) iterations of "free a random slot, malloc a new block
 * into it, write its first byte". Sizes: 63 in 64 log-uniform in 16 B..4 KiB,
 * 1 in 64 uniform in 8 KiB..256 KiB (mean ~2.8 KiB, ~28 GB per 10 M pairs).
 * tight: malloc(64) + free, no live set: for counting instructions per pair.
 *
 * The PRNG (splitmix64 seeding a xorshift64*) is deterministic per thread, so
 * every run does the same allocations. Prints ns per pair (loop wall time of
 * the slowest thread / PAIRS) and a checksum line that does not depend on
 * timing or addresses (for comparing outputs across profilers).
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NSIZES 65536u /* size table: indexed by PRNG bits */

static long g_pairs = 10000000;
static long g_live = 10000;
static uint64_t g_seed = 1;
static int g_tight;
static uint32_t *g_sizes;
static pthread_barrier_t g_barrier;

struct worker {
	pthread_t tid;
	int index;
	double ns;         /* loop wall time */
	uint64_t checksum; /* sum of requested sizes */
};

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline uint64_t xorshift64s(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* Uniform double in [0, 1) from 53 bits. */
static double unit(uint64_t *s)
{
	return (double)(splitmix64(s) >> 11) * (1.0 / 9007199254740992.0);
}

static void make_sizes(void)
{
	uint64_t s = g_seed ^ 0x5a5a5a5a5a5a5a5aull;
	g_sizes = malloc(NSIZES * sizeof *g_sizes);
	if (!g_sizes) {
		perror("malloc");
		exit(1);
	}
	for (uint32_t i = 0; i < NSIZES; i++) {
		double u = unit(&s);
		uint32_t sz;
		if (splitmix64(&s) % 64 == 0)
			sz = 8192u + (uint32_t)(u * (262144.0 - 8192.0 + 1.0));
		else
			sz = (uint32_t)exp(log(16.0) + u * (log(4096.0) - log(16.0)));
		if (sz < 16)
			sz = 16;
		g_sizes[i] = sz;
	}
}

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Keeps the compiler from pairing up and deleting malloc/free. */
static inline void escape(void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

static void run_tight(struct worker *w)
{
	for (long i = 0; i < g_pairs; i++) {
		void *p = malloc(64);
		escape(p);
		free(p);
	}
	w->checksum = (uint64_t)g_pairs * 64u;
}

static void run_live(struct worker *w, char **slots, uint64_t *rng)
{
	uint64_t sum = 0;
	for (long i = 0; i < g_pairs; i++) {
		uint64_t r = xorshift64s(rng);
		size_t slot = (size_t)((r >> 32) % (uint64_t)g_live);
		uint32_t sz = g_sizes[r & (NSIZES - 1)];
		free(slots[slot]);
		char *p = malloc(sz);
		if (!p) {
			perror("malloc");
			exit(1);
		}
		p[0] = (char)i;
		slots[slot] = p;
		sum += sz;
	}
	w->checksum = sum;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint64_t seed = g_seed + 0x1000u * (uint64_t)(w->index + 1);
	uint64_t rng = splitmix64(&seed) | 1u;
	char **slots = NULL;

	if (!g_tight) {
		slots = calloc((size_t)g_live, sizeof *slots);
		if (!slots) {
			perror("calloc");
			exit(1);
		}
		for (long i = 0; i < g_live; i++) {
			uint64_t r = xorshift64s(&rng);
			slots[i] = malloc(g_sizes[r & (NSIZES - 1)]);
			if (!slots[i]) {
				perror("malloc");
				exit(1);
			}
			slots[i][0] = 1;
		}
	}
	pthread_barrier_wait(&g_barrier);
	double t0 = now_ns();
	if (g_tight)
		run_tight(w);
	else
		run_live(w, slots, &rng);
	w->ns = now_ns() - t0;
	if (slots) {
		for (long i = 0; i < g_live; i++)
			free(slots[i]);
		free(slots);
	}
	return NULL;
}

static void usage(const char *argv0)
{
	fprintf(stderr,
	        "usage: %s [-t THREADS] [-n PAIRS] [-l LIVE] [-s SEED] [-m live|tight]\n",
	        argv0);
	exit(2);
}

static long parse_long(const char *s, const char *argv0, long min)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (*s == '\0' || *end != '\0' || v < min)
		usage(argv0);
	return v;
}

int main(int argc, char **argv)
{
	int threads = 1;
	int opt;

	while ((opt = getopt(argc, argv, "t:n:l:s:m:h")) != -1) {
		switch (opt) {
		case 't': threads = (int)parse_long(optarg, argv[0], 1); break;
		case 'n': g_pairs = parse_long(optarg, argv[0], 1); break;
		case 'l': g_live = parse_long(optarg, argv[0], 1); break;
		case 's': g_seed = (uint64_t)parse_long(optarg, argv[0], 0); break;
		case 'm':
			if (strcmp(optarg, "tight") == 0)
				g_tight = 1;
			else if (strcmp(optarg, "live") == 0)
				g_tight = 0;
			else
				usage(argv[0]);
			break;
		default: usage(argv[0]);
		}
	}
	if (optind != argc || threads > 256)
		usage(argv[0]);

	make_sizes();
	struct worker *ws = calloc((size_t)threads, sizeof *ws);
	if (!ws) {
		perror("calloc");
		return 1;
	}
	pthread_barrier_init(&g_barrier, NULL, (unsigned)threads);
	for (int i = 0; i < threads; i++) {
		ws[i].index = i;
		if (pthread_create(&ws[i].tid, NULL, worker_main, &ws[i]) != 0) {
			fprintf(stderr, "pthread_create failed\n");
			return 1;
		}
	}
	double worst = 0;
	uint64_t sum = 0;
	for (int i = 0; i < threads; i++) {
		pthread_join(ws[i].tid, NULL);
		if (ws[i].ns > worst)
			worst = ws[i].ns;
		sum += ws[i].checksum;
	}
	pthread_barrier_destroy(&g_barrier);
	printf("mbench mode=%s threads=%d pairs=%ld live=%ld: %.2f ns per pair\n",
	       g_tight ? "tight" : "live", threads, g_pairs, g_tight ? 0L : g_live,
	       worst / (double)g_pairs);
	printf("checksum %llu\n", (unsigned long long)sum);
	free(ws);
	free(g_sizes);
	return 0;
}
