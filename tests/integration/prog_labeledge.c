/*
 * prog_labeledge.c: label sets at their edges (issue 33 review,
 * tests/integration/labels_review.sh). One 1,000-byte block per case at
 * site_edge, each under its own set, at rate 1:
 *   utf8    route="/caf\xc3\xa9" (valid), route="/bad\xff\xfe" and a key
 *           "k\xc0" (invalid bytes), shard="3" (a value pprof's tagfocus
 *           reads as a number range)
 *   long    a 4,000-byte value (accepted) and a 5,000-byte one (refused:
 *           prints "LONG rc")
 *   fork    the parent's set is the child's: the child allocates under it
 *           and under a set it makes itself (each process writes its own
 *           profile: HEAPPROF_OUT with %p)
 *   signal  a handler allocates under the set its thread has, then under
 *           one it sets and restores itself
 * Prints "OK" at the end. The API is looked up with dlsym (the program is
 * profiled by preload).
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "heapprof.h"

typedef int (*set_fn)(const char *const *, size_t, const heapprof_labels **);
typedef void (*restore_fn)(const heapprof_labels *);
static set_fn lset;
static restore_fn lrestore;

static __attribute__((noinline)) void *
site_edge(size_t n)
{
	return malloc(n);
}

static void
under(const char *k, const char *v)
{
	const heapprof_labels *saved;
	const char *kv[2] = {k, v};
	int rc = lset(kv, 1, &saved);
	if (rc < 0) {
		printf("LONG %d\n", rc);
		return;
	}
	free(site_edge(1000));
	lrestore(saved);
}

static void
on_usr1(int sig)
{
	(void)sig;
	free(site_edge(1000)); /* the thread's set: case=signal */
	under("case", "in_handler");
}

int
main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";
	lset = (set_fn)dlsym(RTLD_DEFAULT, "heapprof_labels_set");
	lrestore = (restore_fn)dlsym(RTLD_DEFAULT, "heapprof_labels_restore");
	if (!lset || !lrestore) {
		fprintf(stderr, "prog_labeledge: the heapprof_labels API is not loaded\n");
		return 2;
	}
	if (!strcmp(m, "utf8")) {
		under("route", "/caf\xc3\xa9");
		under("route", "/bad\xff\xfe");
		under("k\xc0", "v");
		under("shard", "3");
	} else if (!strcmp(m, "long")) {
		static char v[5001];
		memset(v, 'v', 4000);
		under("big", v);
		memset(v, 'w', 5000);
		under("big", v);
	} else if (!strcmp(m, "fork")) {
		const heapprof_labels *saved;
		const char *kv[2] = {"case", "inherited"};
		lset(kv, 1, &saved);
		fflush(stdout);
		pid_t p = fork();
		if (p == 0) {
			free(site_edge(1000));
			under("case", "child_made");
			_exit(0);
		}
		int st;
		waitpid(p, &st, 0);
		lrestore(saved);
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			return 1;
	} else if (!strcmp(m, "signal")) {
		const heapprof_labels *saved;
		const char *kv[2] = {"case", "signal"};
		signal(SIGUSR1, on_usr1);
		lset(kv, 1, &saved);
		raise(SIGUSR1);
		lrestore(saved);
	} else {
		return 2;
	}
	printf("OK\n");
	return 0;
}
