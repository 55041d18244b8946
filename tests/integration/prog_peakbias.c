/* prog_peakbias: heap shapes whose true peak is known, for the bias of the
 * peak estimate (issue 31.1). Prints "peak BYTES": the highest sum of the
 * requested sizes of the blocks in use, counted here.
 * Usage: prog_peakbias SHAPE MB CHURN_MB [SEED]
 *   plateau   holds MB MiB in 4 KiB blocks, then replaces random blocks
 *             (free, then malloc of the same size) until CHURN_MB MiB were
 *             allocated: the total never passes MB MiB
 *   spike     sizes of 64..8191 bytes up to MB MiB, all freed, then
 *             CHURN_MB MiB of short-lived 4 KiB blocks at a low level
 *   sawtooth  eight teeth: up to MB MiB, down to MB/5 MiB, in 4 KiB blocks
 *             freed oldest first (CHURN_MB is unused) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t in_use, peak;
static unsigned long long rng = 88172645463325252ULL;

static unsigned long long
next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void *
get(size_t n)
{
	char *p = malloc(n);
	if (!p) {
		perror("malloc");
		exit(1);
	}
	p[0] = 1; /* touch it */
	in_use += n;
	if (in_use > peak)
		peak = in_use;
	return p;
}

static void
put(void *p, size_t n)
{
	free(p);
	in_use -= n;
}

static void
plateau(size_t mb, size_t churn_mb)
{
	size_t n = mb * 256, churn = churn_mb * 256;
	void **v = get(n * sizeof(*v));
	in_use = peak = 0; /* the table itself is not counted... */
	for (size_t i = 0; i < n; i++)
		v[i] = get(4096);
	for (size_t k = 0; k < churn; k++) {
		size_t i = (size_t)(next() % n);
		put(v[i], 4096);
		v[i] = get(4096);
	}
	for (size_t i = 0; i < n; i++)
		put(v[i], 4096);
	in_use += n * sizeof(*v); /* ...so the peak is exact: count it now */
	peak += n * sizeof(*v);
	free(v);
}

struct blk {
	struct blk *next;
	size_t n;
};

static void
spike(size_t mb, size_t churn_mb)
{
	struct blk *head = NULL;
	while (in_use < mb << 20) {
		size_t n = 64 + (size_t)(next() % 8128);
		struct blk *b = get(n);
		b->n = n;
		b->next = head;
		head = b;
	}
	while (head) {
		struct blk *b = head;
		head = b->next;
		put(b, b->n);
	}
	enum { LOW = 256 }; /* 1 MiB of 4 KiB blocks, replaced at random */
	void *v[LOW];
	for (int i = 0; i < LOW; i++)
		v[i] = get(4096);
	for (size_t k = 0; k < churn_mb * 256; k++) {
		int i = (int)(next() % LOW);
		put(v[i], 4096);
		v[i] = get(4096);
	}
	for (int i = 0; i < LOW; i++)
		put(v[i], 4096);
}

static void
sawtooth(size_t mb)
{
	/* A FIFO ring: the oldest blocks go first, so that the top of
	 * glibc's heap is not trimmed and faulted in again at each tooth. */
	size_t n = mb * 256, low = n / 5, head = 0, tail = 0, have = 0;
	void **v = malloc(n * sizeof(*v)); /* not counted: malloc, not get */
	if (!v)
		return;
	for (int tooth = 0; tooth < 8; tooth++) {
		for (; have < n; have++, head = (head + 1) % n)
			v[head] = get(4096);
		for (; have > low; have--, tail = (tail + 1) % n)
			put(v[tail], 4096);
	}
	for (; have; have--, tail = (tail + 1) % n)
		put(v[tail], 4096);
	in_use += n * sizeof(*v);
	peak += n * sizeof(*v);
	free(v);
}

int
main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: prog_peakbias plateau|spike|sawtooth MB CHURN_MB [SEED]\n");
		return 2;
	}
	size_t mb = strtoul(argv[2], NULL, 10), churn = strtoul(argv[3], NULL, 10);
	if (argc > 4)
		rng ^= strtoull(argv[4], NULL, 10) * 0x9e3779b97f4a7c15ULL;
	if (!strcmp(argv[1], "plateau"))
		plateau(mb, churn);
	else if (!strcmp(argv[1], "spike"))
		spike(mb, churn);
	else if (!strcmp(argv[1], "sawtooth"))
		sawtooth(mb);
	else
		return 2;
	printf("peak %zu\n", peak);
	return 0;
}
