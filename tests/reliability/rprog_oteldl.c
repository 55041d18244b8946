/*
 * rprog_oteldl.c: fresh threads allocate inside a dl_iterate_phdr
 * callback (their first allocation, so a sample's first look at the
 * OpenTelemetry thread context happens there) while another thread
 * dlopens and dlcloses a library. The profiler looked otel_thread_ctx_v1
 * up with dlsym there, taking the loader's lock under the
 * dl_iterate_phdr lock: dlopen takes them in the other order, and the
 * two threads deadlocked. Built with -rdynamic: the variable is exported.
 *
 *   rprog_oteldl LIB ROUNDS   prints "ok oteldl ROUNDS"
 */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((visibility("default"))) __thread void *otel_thread_ctx_v1;
static atomic_int stop;
static const char *lib;

static int
cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)info;
	(void)size;
	void *volatile p = malloc(64);
	free(p);
	++*(int *)arg;
	return 0;
}

static void *
walker(void *arg)
{
	int n = 0;
	(void)arg;
	dl_iterate_phdr(cb, &n);
	return NULL;
}

static void *
loader(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		void *h = dlopen(lib, RTLD_NOW);
		if (!h) {
			fprintf(stderr, "dlopen: %s\n", dlerror());
			exit(2);
		}
		dlclose(h);
	}
	return NULL;
}

int
main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	lib = argv[1];
	int rounds = atoi(argv[2]);
	pthread_t l;
	pthread_create(&l, NULL, loader, NULL);
	for (int r = 0; r < rounds; r++) {
		pthread_t t;
		pthread_create(&t, NULL, walker, NULL);
		pthread_join(t, NULL);
	}
	atomic_store(&stop, 1);
	pthread_join(l, NULL);
	printf("ok oteldl %d\n", rounds);
	return 0;
}
