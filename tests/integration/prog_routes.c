/*
 * prog_routes.c: a server-like program for the /debug/pprof endpoint's
 * labels (issue 33, tests/integration/serve_labels.sh). Worker threads
 * serve requests for routes /a, /ab, /b and allocate under them
 * (heapprof_labels_set / _restore, an interned set with
 * heapprof_labels_use, and a set nested inside another), with unlabelled
 * work between requests. Everything the test counts is allocated at site_*
 * frames; the program's own stdio is not.
 *
 *   prog_routes DIR
 *     phase 1, then writes DIR/truth1 ("ROUTE ao ab io ib" per route, "-"
 *     for the unlabelled part) and creates DIR/ready; waits for DIR/go;
 *     phase 2 (new requests, and half of phase 1's live blocks freed),
 *     then DIR/truth2 (the phase's own values: allocations, and in-use as
 *     the change, which is negative where phase 1's blocks were freed)
 *     and DIR/done ("START END", CLOCK_REALTIME ns around the phase);
 *     waits for DIR/quit.
 *
 * The API is looked up with dlsym (the program is profiled by preload).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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
#define REQS 240
#define NR 3
static const char *const routes[NR] = {"/a", "/ab", "/b"};
static const int nblk[NR] = {3, 2, 4}, bsz[NR] = {300, 1700, 90};
static int64_t truth[2][NR + 1][4]; /* phase x route (NR: none) x ao ab io ib */
static pthread_mutex_t tl = PTHREAD_MUTEX_INITIALIZER;
static const heapprof_labels *interned_ab; /* /ab through heapprof_labels_use */
static const char *dir;
static int phase;

/* Phase 1's live blocks, per worker: freed (half) in phase 2. */
typedef struct live {
	void *p;
	int route, size;
} live;
static live kept[WORKERS][REQS];
static int nkept[WORKERS];

static __attribute__((noinline)) void *
site_req(size_t n)
{
	return malloc(n);
}

static __attribute__((noinline)) void *
site_inner(size_t n)
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
	truth[phase][r][0] += ao;
	truth[phase][r][1] += ab;
	truth[phase][r][2] += io;
	truth[phase][r][3] += ib;
	pthread_mutex_unlock(&tl);
}

/* One request for route r in worker w: its blocks, the first one kept. */
static void
request(int w, int r, int i)
{
	const heapprof_labels *saved = NULL;
	char tenant[16];
	snprintf(tenant, sizeof(tenant), "t%d", (i + w) % 3);
	if (r == 1) {
		saved = luse(interned_ab);
	} else {
		const char *kv[4] = {"route", routes[r], "tenant", tenant};
		if (lset(kv, 2, &saved) != 0)
			abort();
	}
	for (int k = 0; k < nblk[r]; k++) {
		size_t n = (size_t)bsz[r] + (size_t)(i % 7) + (size_t)phase * 11;
		void *p = site_req(n);
		if (k == 0 && phase == 0 && i % 2 == 0) {
			kept[w][nkept[w]++] = (live){p, r, (int)n};
			count(r, 1, (int64_t)n, 1, (int64_t)n);
		} else {
			free(p);
			count(r, 1, (int64_t)n, 0, 0);
		}
	}
	if (r == 2) {
		/* A nested set (route /b, step inner) restored to the outer. */
		const heapprof_labels *outer;
		const char *kv[6] = {"route", routes[r], "tenant", tenant,
		                     "step", "inner"};
		if (lset(kv, 3, &outer) != 0)
			abort();
		free(site_inner(64));
		count(r, 1, 64, 0, 0);
		lrestore(outer);
	}
	lrestore(saved);
	free(site_idle(48)); /* between requests: no labels */
	count(NR, 1, 48, 0, 0);
}

static void *
worker(void *arg)
{
	int w = (int)(intptr_t)arg;
	for (int i = 0; i < REQS; i++)
		request(w, (i + w) % NR, i);
	if (phase == 1) {
		/* Half of phase 1's live blocks, freed without labels (a
		 * free counts against its allocation's record). */
		for (int j = 0; j < nkept[w]; j += 2) {
			free(kept[w][j].p);
			count(kept[w][j].route, 0, 0, -1, -kept[w][j].size);
		}
	}
	return NULL;
}

static void
run_phase(void)
{
	pthread_t th[WORKERS];
	for (int i = 0; i < WORKERS; i++)
		pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
	for (int i = 0; i < WORKERS; i++)
		pthread_join(th[i], NULL);
}

static char *
path(const char *name)
{
	static char buf[4096];
	snprintf(buf, sizeof(buf), "%s/%s", dir, name);
	return buf;
}

/* Writes NAME whole (a reader never sees part of it). */
static void
put(const char *name, const char *text)
{
	char tmp[4200];
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name);
	FILE *f = fopen(tmp, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0)
		exit(4);
	rename(tmp, path(name));
}

static void
put_truth(const char *name, int ph)
{
	char text[1024];
	size_t len = 0;
	for (int r = 0; r <= NR; r++)
		len += (size_t)snprintf(text + len, sizeof(text) - len,
		                        "%s %lld %lld %lld %lld\n",
		                        r < NR ? routes[r] : "-",
		                        (long long)truth[ph][r][0],
		                        (long long)truth[ph][r][1],
		                        (long long)truth[ph][r][2],
		                        (long long)truth[ph][r][3]);
	put(name, text);
}

/* Until DIR/NAME exists (at most 10 minutes). */
static void
wait_file(const char *name)
{
	for (int i = 0; i < 600000 && access(path(name), F_OK) != 0; i++)
		usleep(1000);
}

static long long
now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int
main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: prog_routes DIR\n");
		return 2;
	}
	dir = argv[1];
	lmake = (make_fn)dlsym(RTLD_DEFAULT, "heapprof_labels_make");
	luse = (use_fn)dlsym(RTLD_DEFAULT, "heapprof_labels_use");
	lset = (set_fn)dlsym(RTLD_DEFAULT, "heapprof_labels_set");
	lrestore = (restore_fn)dlsym(RTLD_DEFAULT, "heapprof_labels_restore");
	if (!lmake || !luse || !lset || !lrestore) {
		fprintf(stderr, "prog_routes: the heapprof_labels API is not loaded\n");
		return 2;
	}
	const char *kab[4] = {"route", "/ab", "tenant", "shared"};
	if (lmake(kab, 2, &interned_ab) != 0)
		return 3;
	run_phase();
	put_truth("truth1", 0);
	put("ready", "");
	wait_file("go");
	phase = 1;
	long long s = now_ns();
	run_phase();
	long long e = now_ns();
	put_truth("truth2", 1);
	char t[64];
	snprintf(t, sizeof(t), "%lld %lld\n", s, e);
	put("done", t);
	wait_file("quit");
	return 0;
}
