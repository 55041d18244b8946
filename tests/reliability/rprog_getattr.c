/*
 * rprog_getattr.c: threads that ask for their own attributes first thing,
 * as Rust's std does for every thread it starts (the stack guard), then
 * allocate. glibc's pthread_getattr_np allocates while it holds the
 * thread's descriptor lock. Usage: rprog_getattr THREADS [self|main]
 *   self  each thread asks about itself (default)
 *   main  each thread asks about the main thread
 * Prints "threads N ok K" (K: calls that returned 0 with a stack that
 * contains the thread's own frame, for self).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Atomic int ok;
static pthread_t main_th;
static int about_main;
static void *volatile sink;

static void *
run(void *arg)
{
	(void)arg;
	pthread_attr_t a;
	pthread_t who = about_main ? main_th : pthread_self();
	if (pthread_getattr_np(who, &a) == 0) {
		void *lo;
		size_t sz;
		int here;
		if (pthread_attr_getstack(&a, &lo, &sz) == 0 &&
		    (about_main || ((uintptr_t)&here > (uintptr_t)lo &&
		                    (uintptr_t)&here < (uintptr_t)lo + sz)))
			ok++;
		pthread_attr_destroy(&a);
	}
	for (int i = 0; i < 20; i++) {
		char *p = malloc(16 + i * 100);
		memset(p, 1, 16);
		sink = p;
		free(p);
	}
	return NULL;
}

int
main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 50;
	about_main = argc > 2 && !strcmp(argv[2], "main");
	main_th = pthread_self();
	for (int i = 0; i < n; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, run, NULL) != 0) {
			perror("pthread_create");
			return 1;
		}
		pthread_join(t, NULL);
	}
	printf("threads %d ok %d\n", n, (int)ok);
	return 0;
}
