/*
 * rprog_bigloop: allocates a block of SIZE bytes (argv[1]), writes every
 * byte, frees it, N times (argv[2]); then, M times, fills such a block
 * with 0xab, frees it and asks calloc for one of the same size, which
 * must be all zero. Prints "faults F" (minor page faults taken by the
 * loop after its first round, from getrusage) and "zero ok" or "zero
 * bad". A block larger than 512 KiB that the profiler samples is an exact
 * run of its range: given back to the kernel at every free, each round
 * faulted in every page again (4 MiB: ~1,000 faults a round), where glibc
 * serves the loop from memory it keeps.
 *
 * "rprog_bigloop grow STEP N BUFS": grows BUFS buffers (1 or 2), in turn,
 * by STEP bytes N times each with realloc, writing each new part with a
 * byte of its own; prints "faults F" for the whole growth and "data ok" if
 * every byte is still what was written, and "mappings M": how many more
 * lines /proc/self/maps has after the growth than before. A sampled block
 * was copied at every growth before (a buffer grown 1 MiB at a time to
 * 256 MiB: 135 s instead of 1.1 s); one buffer grows at the range's
 * frontier, two make each other move, and a moved block gained a
 * mapping at every move (2,000 moves: 1,013 mappings more, 12x slower).
 *
 * "rprog_bigloop aftermove STEP N": grows one buffer by STEP bytes N
 * times; a block allocated after it at the second growth and freed at the
 * fourth makes it move once. Prints "moves M" (growths after that which
 * returned another pointer), "maps K"
 * (lines of /proc/self/maps over the buffer at the end) and "data ok" or
 * "data bad".
 *
 * "rprog_bigloop shrink": fills 8 MiB, reallocs it to 4 MiB and prints
 * "same" or "moved" and "data ok" or "data bad".
 *
 * "rprog_bigloop present": one malloc and one calloc of 100,000 bytes
 * (sampled at HEAPPROF_RATE=1), then prints "malloc R calloc R": how many
 * of the pages under each are resident before the program touches them
 * (mincore). A fresh sampled run under a malloc has its first 64 KiB made
 * present (16 pages); a calloc's is left to fault (only the profiler's
 * header page).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

static int
resident(void *p, size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = (uintptr_t)p & ~(pg - 1);
	size_t len = ((uintptr_t)p + n - a + pg - 1) / pg;
	unsigned char v[64];
	if (len > sizeof(v) || mincore((void *)a, len * pg, v))
		return -1;
	int r = 0;
	for (size_t i = 0; i < len; i++)
		r += v[i] & 1;
	return r;
}

/* Lines of /proc/self/maps that overlap [p, p + n) (all of them for
 * NULL, SIZE_MAX). */
static int
maps_over(const void *p, size_t n)
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long lo, hi, a = (unsigned long)p;
	int k = 0;
	char line[512];
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo < a + n && hi > a)
			k++;
	fclose(f);
	return k;
}

static long
minflt_now(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

static int
grow(size_t step, int n, int bufs)
{
	unsigned char *b[2] = {NULL, NULL};
	int maps_before = maps_over(NULL, SIZE_MAX);
	long before = minflt_now();
	for (int i = 0; i < n; i++)
		for (int k = 0; k < bufs; k++) {
			unsigned char *q = realloc(b[k], (size_t)(i + 1) * step);
			if (!q)
				return 3;
			b[k] = q;
			memset(q + (size_t)i * step, (i * 2 + k) & 0xff, step);
		}
	printf("faults %ld\n", minflt_now() - before);
	printf("mappings %d\n", maps_over(NULL, SIZE_MAX) - maps_before);
	int bad = 0;
	for (int k = 0; k < bufs; k++) {
		for (int i = 0; i < n; i++)
			for (size_t j = 0; j < step; j += 4093)
				bad |= b[k][(size_t)i * step + j] != ((i * 2 + k) & 0xff);
		free(b[k]);
	}
	printf("data %s\n", bad ? "bad" : "ok");
	return 0;
}

static int
aftermove(size_t step, int n)
{
	unsigned char *b = NULL, *x = NULL;
	int moves = 0;
	for (int i = 0; i < n; i++) {
		unsigned char *q = realloc(b, (size_t)(i + 1) * step);
		if (!q)
			return 3;
		moves += i > 3 && q != b;
		b = q;
		memset(q + (size_t)i * step, i & 0xff, step);
		if (i == 1 && !(x = malloc(step)))
			return 3;
		if (i == 3)
			free(x);
	}
	int bad = 0;
	for (int i = 0; i < n; i++)
		for (size_t j = 0; j < step; j += 4093)
			bad |= b[(size_t)i * step + j] != (i & 0xff);
	printf("moves %d\nmaps %d\ndata %s\n", moves, maps_over(b, (size_t)n * step),
	       bad ? "bad" : "ok");
	free(b);
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "aftermove"))
		return aftermove((size_t)atol(argv[2]), atoi(argv[3]));
	if (argc == 2 && !strcmp(argv[1], "shrink")) {
		/* realloc to half: in place (glibc's mremap shrinks in
		 * place too), the bytes kept */
		unsigned char *m = malloc((size_t)8 << 20);
		if (!m)
			return 3;
		for (size_t j = 0; j < ((size_t)8 << 20); j++)
			m[j] = (unsigned char)(j * 7);
		unsigned char *q = realloc(m, (size_t)4 << 20);
		if (!q)
			return 3;
		int bad = 0;
		for (size_t j = 0; j < ((size_t)4 << 20); j++)
			bad |= q[j] != (unsigned char)(j * 7);
		printf("%s data %s\n", q == m ? "same" : "moved", bad ? "bad" : "ok");
		free(q);
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "present")) {
		void *m = malloc(100000), *c = calloc(1, 100000);
		printf("malloc %d calloc %d\n", resident(m, 100000), resident(c, 100000));
		return 0;
	}
	if (argc == 5 && !strcmp(argv[1], "grow"))
		return grow((size_t)atol(argv[2]), atoi(argv[3]), atoi(argv[4]) == 2 ? 2 : 1);
	if (argc < 3)
		return 2;
	size_t size = (size_t)atol(argv[1]);
	int n = atoi(argv[2]);
	char *volatile p;
	long before = 0;
	for (int i = 0; i < n; i++) {
		if (i == 1)
			before = minflt_now();
		p = malloc(size);
		if (!p)
			return 3;
		memset(p, i, size);
		free(p);
	}
	printf("faults %ld\n", minflt_now() - before);
	int bad = 0;
	for (int i = 0; i < 20; i++) {
		p = malloc(size);
		if (!p)
			return 3;
		memset(p, 0xab, size);
		free(p);
		unsigned char *z = calloc(1, size);
		if (!z)
			return 3;
		for (size_t j = 0; j < size; j++)
			bad |= z[j];
		free(z);
	}
	printf("zero %s\n", bad ? "bad" : "ok");
	return 0;
}
