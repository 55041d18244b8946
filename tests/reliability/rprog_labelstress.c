/*
 * rprog_labelstress.c: label interning under 8 threads (labels.c's
 * lock-free table). Each thread makes the sets {tenant=vI} for I in
 * 0..SETS-1, each in its own order, uses each for one 100-byte block at
 * site_lbl, and keeps the pointer it got. The same pairs must give the
 * same pointer in every thread; with HEAPPROF_LABEL_SETS=CAP < SETS,
 * exactly CAP distinct sets exist and every other make returned 1 (the
 * overflow set). Prints "sets D capped C" (D distinct non-overflow
 * pointers; C threads' makes that returned 1), "mismatch M" (sets whose
 * pointer differed between threads) and the truth per tenant as
 * "TRUTH vI 8 800 0 0" lines.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heapprof.h"

#define THREADS 8
#define SETS 300
typedef int (*make_fn)(const char *const *, size_t, const heapprof_labels **);
typedef const heapprof_labels *(*use_fn)(const heapprof_labels *);
static make_fn lmake;
static use_fn luse;
static const heapprof_labels *got[THREADS][SETS];
static int rcs[THREADS][SETS];
static pthread_barrier_t go;

static __attribute__((noinline)) void *
site_lbl(size_t n)
{
	return malloc(n);
}

static void *
worker(void *arg)
{
	int w = (int)(intptr_t)arg;
	pthread_barrier_wait(&go);
	for (int k = 0; k < SETS; k++) {
		int i = (k * 7 + w * 37) % SETS; /* 7 is prime to 300 */
		char v[16];
		snprintf(v, sizeof(v), "v%d", i);
		const char *kv[2] = {"tenant", v};
		const heapprof_labels *s;
		rcs[w][i] = lmake(kv, 1, &s);
		got[w][i] = s;
		const heapprof_labels *old = luse(s);
		void *volatile p = site_lbl(100);
		free(p);
		luse(old);
	}
	return NULL;
}

int
main(void)
{
	lmake = (make_fn)dlsym(RTLD_DEFAULT, "heapprof_labels_make");
	luse = (use_fn)dlsym(RTLD_DEFAULT, "heapprof_labels_use");
	if (!lmake || !luse)
		return 2;
	pthread_t t[THREADS];
	pthread_barrier_init(&go, NULL, THREADS);
	for (int w = 0; w < THREADS; w++)
		pthread_create(&t[w], NULL, worker, (void *)(intptr_t)w);
	for (int w = 0; w < THREADS; w++)
		pthread_join(t[w], NULL);
	/* real: distinct sets some thread got with rc 0; mismatch: two
	 * threads got different sets for the same pairs with rc 0, or an
	 * error; split: some threads got the set, others the overflow */
	int mismatch = 0, capped = 0, distinct = 0, split = 0;
	for (int i = 0; i < SETS; i++) {
		const heapprof_labels *real = NULL;
		int over = 0;
		for (int w = 0; w < THREADS; w++) {
			capped += rcs[w][i] == 1;
			over |= rcs[w][i] == 1;
			if (rcs[w][i] < 0 || !got[w][i])
				mismatch++;
			else if (rcs[w][i] == 0 && real && got[w][i] != real)
				mismatch++;
			else if (rcs[w][i] == 0)
				real = got[w][i];
		}
		distinct += real != NULL;
		split += real && over;
	}
	printf("sets %d capped %d split %d\n", distinct, capped, split);
	printf("mismatch %d\n", mismatch);
	for (int i = 0; i < SETS; i++)
		if (rcs[0][i] == 0 && rcs[THREADS - 1][i] == 0)
			printf("TRUTH v%d %d %d 0 0\n", i, THREADS, THREADS * 100);
	return 0;
}
