/*
 * rprog_dlchurn.c: dlopen/dlclose churn while sampling (plan T20, the
 * gperftools#1159 dl_load_write_lock ABBA): 2 threads dlopen a library
 * (build/tests/librchurn.so: allocates in its constructor, frees in its
 * destructor), call it to allocate blocks that outlive the dlclose, and
 * dlclose it; 2 threads allocate and free; dumps run meanwhile (the script
 * sets HEAPPROF_INTERVAL / HEAPPROF_SIGNAL and a child floods the signal).
 * usage: rprog_dlchurn LIBPATH SECONDS. Prints "ok dlchurn N" (N cycles).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *libpath;
static _Atomic int stop, bad;
static _Atomic long cycles;

static void *
dl_thread(void *arg)
{
	(void)arg;
	void *outlive[32] = {0};
	int k = 0;
	while (!atomic_load(&stop)) {
		void *h = dlopen(libpath, RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			if (!atomic_exchange(&bad, 1))
				printf("BAD dlopen: %s\n", dlerror());
			return NULL;
		}
		void *(*fn)(size_t) = (void *(*)(size_t))dlsym(h, "rchurn_alloc");
		if (!fn) {
			atomic_store(&bad, 1);
			dlclose(h);
			return NULL;
		}
		for (int i = 0; i < 20; i++)
			free(fn((size_t)i * 100 + 1));
		free(outlive[k]);
		outlive[k] = fn(70000); /* freed after the library is gone */
		k = (k + 1) % 32;
		dlclose(h);
		atomic_fetch_add(&cycles, 1);
	}
	for (int i = 0; i < 32; i++)
		free(outlive[i]);
	return NULL;
}

static void *
alloc_thread(void *arg)
{
	uint64_t s = (uintptr_t)arg + 3;
	void *slot[128] = {0};
	while (!atomic_load(&stop)) {
		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		int k = (int)(s >> 57);
		free(slot[k]);
		slot[k] = malloc((s >> 20) % 9000);
	}
	for (int k = 0; k < 128; k++)
		free(slot[k]);
	return NULL;
}

int
main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: rprog_dlchurn LIB SECONDS [storm]\n");
		return 2;
	}
	libpath = argv[1];
	double secs = atof(argv[2]);
	pid_t storm = -1;
	if (argc > 3 && !strcmp(argv[3], "storm")) {
		pid_t parent = getpid();
		storm = fork();
		if (storm == 0) {
			struct timespec ms = {0, 1000000};
			while (kill(parent, SIGUSR2) == 0 && getppid() == parent)
				nanosleep(&ms, NULL);
			_exit(0);
		}
	}
	pthread_t th[4];
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, dl_thread, NULL);
	for (int i = 0; i < 2; i++)
		pthread_create(&th[2 + i], NULL, alloc_thread, (void *)(uintptr_t)i);
	struct timespec ts = {(time_t)secs, (long)((secs - (time_t)secs) * 1e9)};
	while (nanosleep(&ts, &ts) != 0)
		; /* the storm interrupts sleeps */
	atomic_store(&stop, 1);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	if (storm > 0) {
		kill(storm, SIGKILL);
		waitpid(storm, NULL, 0);
	}
	if (atomic_load(&bad))
		return 1;
	printf("ok dlchurn %s\n", atomic_load(&cycles) > 0 ? "cycled" : "none");
	return 0;
}
