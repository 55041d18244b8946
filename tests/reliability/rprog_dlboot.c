/*
 * rprog_dlboot.c: the profiler loaded by dlopen into a program whose
 * threads are already allocating and freeing (the bootstrap race of the
 * review's suspicions): 4 threads churn malloc/free/realloc with
 * cookie-checked blocks while the main thread dlopens LIB, calls its API
 * (heapprof_active, heapprof_dump_file) several times and dlcloses it
 * (nodelete keeps it). Prints "ok dlboot ACTIVE DUMPRC" and exits 0; a
 * damaged block prints BAD and exits 1.
 * usage: rprog_dlboot LIB OUTFILE ROUNDS
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Atomic int stop, bad;

static void *
churn(void *arg)
{
	uint64_t s = (uintptr_t)arg * 7919 + 1;
	unsigned char *slot[64] = {0};
	size_t len[64] = {0};
	while (!atomic_load(&stop)) {
		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		int k = (int)(s >> 58);
		if (slot[k]) {
			for (size_t i = 0; i < len[k]; i++)
				if (slot[k][i] != (unsigned char)(k + len[k])) {
					atomic_store(&bad, 1);
					break;
				}
			if (s & 1) {
				free(slot[k]);
				slot[k] = NULL;
				continue;
			}
		}
		size_t n = 1 + (s >> 40) % 3000;
		unsigned char *p = realloc(slot[k], n);
		if (!p) {
			atomic_store(&bad, 1);
			continue;
		}
		memset(p, (unsigned char)(k + n), n);
		slot[k] = p, len[k] = n;
	}
	for (int k = 0; k < 64; k++)
		free(slot[k]);
	return NULL;
}

int
main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: rprog_dlboot LIB OUTFILE ROUNDS\n");
		return 2;
	}
	pthread_t th[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, churn, (void *)(uintptr_t)(i + 1));
	int active = -1, rc = -1, rounds = atoi(argv[3]);
	for (int r = 0; r < rounds; r++) {
		void *h = dlopen(argv[1], RTLD_NOW | (r & 1 ? RTLD_GLOBAL : RTLD_LOCAL));
		if (!h) {
			printf("BAD dlopen: %s\n", dlerror());
			atomic_store(&stop, 1);
			return 1;
		}
		int (*act)(void) = (int (*)(void))dlsym(h, "heapprof_active");
		int (*dump)(const char *) =
			(int (*)(const char *))dlsym(h, "heapprof_dump_file");
		if (!act || !dump) {
			printf("BAD dlsym\n");
			return 1;
		}
		active = act();
		rc = dump(argv[2]);
		dlclose(h);
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	if (atomic_load(&bad)) {
		printf("BAD block damaged\n");
		return 1;
	}
	printf("ok dlboot %d %d\n", active, rc);
	return 0;
}
