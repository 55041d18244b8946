/* attach_target.c: a program for tests/cli/attach.sh. Reads commands on
 * stdin, one a line: "alloc N SIZE" allocates N blocks of SIZE bytes
 * (site_keep) and keeps them, "free" frees every other kept block, "churn
 * N" allocates and frees N blocks of each kind (malloc, calloc, realloc,
 * posix_memalign, strdup), "threads N" runs N threads doing churns;
 * "mark" starts the window of "truth", which prints on stderr what
 * site_keep allocated since the mark and what of it is still kept, as
 * profsum.py's EXPECT line; "quit" ends. Each command is answered on
 * stdout with "ok", a running checksum and the number of blocks kept, so
 * a run with an attach and one without print the same. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void **kept;
static long *ksize;  /* its size, negative if allocated before the mark */
static size_t nkept, cap;
static unsigned long sum;
static long ao, ab, io, ib; /* site_keep since the mark */
static int marked;

__attribute__((noinline)) static char *
site_keep(size_t size)
{
	char *p = malloc(size);
	__asm__ volatile("" ::: "memory");
	return p;
}

static void
churn(long n)
{
	for (long i = 0; i < n; i++) {
		char *a = malloc(1024), *b = calloc(4, 256), *c = NULL;
		void *d = NULL;
		a[0] = (char)i;
		b = realloc(b, 2048);
		if (posix_memalign(&d, 64, 512) == 0)
			memset(d, 1, 512);
		c = strdup("attach");
		__atomic_fetch_add(&sum, (unsigned long)(a[0] + b[0] + c[0]), __ATOMIC_RELAXED);
		free(a);
		free(b);
		free(c);
		free(d);
	}
}

static void *
worker(void *arg)
{
	churn((long)arg);
	return NULL;
}

int
main(void)
{
	char line[256];
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready\n");
	while (fgets(line, sizeof(line), stdin)) {
		long n = 0, size = 0;
		if (sscanf(line, "alloc %ld %ld", &n, &size) == 2) {
			for (long i = 0; i < n; i++) {
				if (nkept == cap) {
					cap = cap ? 2 * cap : 1024;
					kept = realloc(kept, cap * sizeof(*kept));
					ksize = realloc(ksize, cap * sizeof(*ksize));
				}
				char *p = site_keep((size_t)size);
				memset(p, (int)(i & 0x7f), (size_t)size);
				sum += (unsigned char)p[size - 1];
				if (marked)
					ao++, ab += size, io++, ib += size;
				ksize[nkept] = marked ? size : -size;
				kept[nkept++] = p;
			}
		} else if (strncmp(line, "free", 4) == 0) {
			size_t j = 0;
			for (size_t i = 0; i < nkept; i++) {
				if (i % 2) {
					if (ksize[i] > 0)
						io--, ib -= ksize[i];
					free(kept[i]);
				} else {
					ksize[j] = ksize[i];
					kept[j++] = kept[i];
				}
			}
			nkept = j;
		} else if (sscanf(line, "churn %ld", &n) == 1) {
			churn(n);
		} else if (sscanf(line, "threads %ld", &n) == 1) {
			pthread_t th[16];
			for (long i = 0; i < n && i < 16; i++)
				pthread_create(&th[i], NULL, worker, (void *)20000L);
			for (long i = 0; i < n && i < 16; i++)
				pthread_join(th[i], NULL);
		} else if (strncmp(line, "mark", 4) == 0) {
			marked = 1;
			ao = ab = io = ib = 0;
		} else if (strncmp(line, "truth", 5) == 0) {
			fprintf(stderr, "EXPECT site_keep %ld %ld %ld %ld\n", ao, ab, io, ib);
			continue; /* stdout the same with or without an attach */
		} else if (strncmp(line, "quit", 4) == 0) {
			break;
		}
		printf("ok %lu %zu\n", sum, nkept);
	}
	for (size_t i = 0; i < nkept; i++)
		free(kept[i]);
	free(kept);
	free(ksize);
	printf("end %lu\n", sum);
	return 0;
}
