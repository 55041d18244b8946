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
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static long
minflt(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

int
main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	size_t size = (size_t)atol(argv[1]);
	int n = atoi(argv[2]);
	char *volatile p;
	long before = 0;
	for (int i = 0; i < n; i++) {
		if (i == 1)
			before = minflt();
		p = malloc(size);
		if (!p)
			return 3;
		memset(p, i, size);
		free(p);
	}
	printf("faults %ld\n", minflt() - before);
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
