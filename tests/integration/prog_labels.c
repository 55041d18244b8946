/*
 * prog_labels.c: label sets (issue 33), a server-like program: worker
 * threads take requests for routes /a, /b, /c and allocate under the
 * route's labels (heapprof_labels_set / _restore, or an interned set and
 * heapprof_labels_use), with unlabelled work between. Prints the truth:
 *   TRUTH ROUTE ALLOC_OBJECTS ALLOC_BYTES INUSE_OBJECTS INUSE_BYTES
 * ("-" for the unlabelled part).
 *
 *   prog_labels server      the routes, 4 workers
 *   prog_labels cap N       N + 5 distinct sets, one 777-byte block under
 *                           each: run with HEAPPROF_LABEL_SETS=N; prints
 *                           "CAPPED k" (make's 1 returns) and the truth
 *
 * The API is looked up with dlsym (the program is profiled by preload).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heapprof.h"

typedef int (*make_fn)(const char *const *, size_t, const heapprof_labels **);
typedef const heapprof_labels *(*use_fn)(const heapprof_labels *);
typedef int (*set_fn)(const char *const *, size_t, const heapprof_labels **);
typedef void (*restore_fn)(const heapprof_labels *);
static make_fn lmake;
static use_fn luse;
static set_fn lset;
static restore_fn lrestore;

#define WORKERS 4
#define REQS 300
static const char *const routes[3] = {"/a", "/b", "/c"};
/* per route: blocks per request, their size, how many stay live */
static const int nblk[3] = {3, 2, 1}, bsz[3] = {100, 1000, 5000}, keep[3] = {1, 0, 1};
static int64_t truth[4][4]; /* route (3: none) x ao ab io ib */
static pthread_mutex_t tl = PTHREAD_MUTEX_INITIALIZER;
static const heapprof_labels *interned_b; /* /b through heapprof_labels_use */

static __attribute__((noinline)) void *
site_req(size_t n)
{
	return malloc(n);
}

static __attribute__((noinline)) void *
site_idle(size_t n)
{
	return malloc(n);
}

static void
count(int r, int64_t ao, int64_t ab, int64_t io, int64_t ib)
{
	pthread_mutex_lock(&tl);
	truth[r][0] += ao;
	truth[r][1] += ab;
	truth[r][2] += io;
	truth[r][3] += ib;
	pthread_mutex_unlock(&tl);
}

static void *
worker(void *arg)
{
	int w = (int)(intptr_t)arg;
	for (int i = 0; i < REQS; i++) {
		int r = (i + w) % 3;
		const heapprof_labels *saved = NULL;
		char wid[16];
		snprintf(wid, sizeof(wid), "w%d", w % 2);
		if (r == 1) {
			saved = luse(interned_b);
		} else {
			const char *kv[4] = {"route", routes[r], "worker", wid};
			if (lset(kv, 2, &saved) != 0)
				abort();
		}
		for (int k = 0; k < nblk[r]; k++) {
			void *p = site_req((size_t)bsz[r]);
			if (k >= keep[r])
				free(p);
		}
		count(r, nblk[r], (int64_t)nblk[r] * bsz[r], keep[r],
		      (int64_t)keep[r] * bsz[r]);
		lrestore(saved);
		free(site_idle(48)); /* between requests: no labels */
		count(3, 1, 48, 0, 0);
	}
	return NULL;
}

int
main(int argc, char **argv)
{
	lmake = (make_fn)dlsym(RTLD_DEFAULT, "heapprof_labels_make");
	luse = (use_fn)dlsym(RTLD_DEFAULT, "heapprof_labels_use");
	lset = (set_fn)dlsym(RTLD_DEFAULT, "heapprof_labels_set");
	lrestore = (restore_fn)dlsym(RTLD_DEFAULT, "heapprof_labels_restore");
	if (!lmake || !luse || !lset || !lrestore) {
		fprintf(stderr, "prog_labels: the heapprof_labels API is not loaded\n");
		return 2;
	}
	if (argc > 2 && !strcmp(argv[1], "cap")) {
		int n = atoi(argv[2]), capped = 0;
		for (int i = 0; i < n + 5; i++) {
			char v[32];
			snprintf(v, sizeof(v), "t%d", i);
			const char *kv[2] = {"tenant", v};
			const heapprof_labels *s, *old;
			int rc = lmake(kv, 1, &s);
			capped += rc == 1;
			old = luse(s);
			free(site_req(777));
			luse(old);
		}
		printf("CAPPED %d\n", capped);
		return 0;
	}
	const char *kb[4] = {"route", "/b", "worker", "any"};
	if (lmake(kb, 2, &interned_b) != 0)
		return 3;
	pthread_t th[WORKERS];
	for (int i = 0; i < WORKERS; i++)
		pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
	for (int i = 0; i < WORKERS; i++)
		pthread_join(th[i], NULL);
	for (int r = 0; r < 4; r++)
		printf("TRUTH %s %lld %lld %lld %lld\n", r < 3 ? routes[r] : "-",
		       (long long)truth[r][0], (long long)truth[r][1],
		       (long long)truth[r][2], (long long)truth[r][3]);
	return 0;
}
