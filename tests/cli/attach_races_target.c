/* attach_races_target.c: programs for tests/cli/attach_races.sh, one per
 * mode (argv[1]); each prints "ready" when it can be attached to, reads
 * lines on stdin, and ends at "quit" (or the end of stdin) with a line
 * saying what it saw.
 *   sigmask: a SIGSEGV handler installed, every signal blocked, waiting in
 *     read: at the end, whether the handler and the mask are unchanged.
 *   errno: errno set to 4242 by the main thread, which spins checking it
 *     (a second thread reads stdin): at the end, any other value seen.
 *   dlrace PLUGIN N: a thread allocates and frees without pause; at "go"
 *     the main thread, N times: dlopen(PLUGIN), malloc a block, hand it to
 *     the plugin's pfree() (its own GOT entry for free), dlclose.
 *   altstack: the main thread spins in a SIGUSR1 handler that runs on a
 *     16 KB alternate stack with an inaccessible page below it.
 *   unload PLUGIN: at "go", dlopen(PLUGIN) and a call of its pmalloc(), a
 *     malloc (sampled at rate 1: the plugin is routed), dlclose, and the
 *     plugin's former pages mapped again inaccessible (as a guard page or
 *     a PROT_NONE reservation would be); "swapped". At "check": whether
 *     those pages are still inaccessible.
 *   handoff PLUGIN [lazy]: at "go", a block of 4242 bytes malloc'd by
 *     site_handoff (sampled at rate 1), then dlopen(PLUGIN) (RTLD_NOW, or
 *     RTLD_LAZY: its free bound by the loader at that first call) and the
 *     block handed to its pfree() with no allocation between.
 *   afterdetach PLUGIN: at "go", a block of 777 bytes malloc'd by
 *     site_window (sampled); "sampled". At "check" (after the detach):
 *     dlopen(PLUGIN), its pmalloc() and pfree() used, the window's block
 *     handed to its pfree(), and whether dlsym(RTLD_DEFAULT, "malloc") and
 *     the plugin's own address of malloc are what dlsym found before the
 *     attach.
 *   sleep: the main thread sleeps 2 s in nanosleep (attached to and
 *     detached from meanwhile): its status, errno, and how long it slept.
 *   relro PLUGIN: at "go", dlopen(PLUGIN), a call of its pmalloc(), a
 *     malloc (the plugin routed), then its later(): it writes its data and
 *     calls a function bound lazily (the loader writes its GOT).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static volatile int done;

static void
on_segv(int s)
{
	(void)s;
}

/* stdin until "quit" or its end; then done */
static void *
reader(void *arg)
{
	char b[256];
	while (fgets(b, sizeof(b), stdin))
		if (strncmp(b, "quit", 4) == 0)
			break;
	done = 1;
	return arg;
}

static void *
churner(void *arg)
{
	while (!done) {
		void *p = malloc(32);
		__asm__ volatile("" : : "r"(p) : "memory");
		free(p);
	}
	return arg;
}

/* the sites of the blocks counted in the profile (profsum.py) */
__attribute__((noinline)) static void *
site_handoff(void)
{
	void *p = malloc(4242);
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

__attribute__((noinline)) static void *
site_window(void)
{
	void *p = malloc(777);
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

static void
on_usr1(int s)
{
	(void)s;
	while (!done)
		__asm__ volatile("" ::: "memory");
}

int
main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	setvbuf(stdout, NULL, _IOLBF, 0);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_segv;
	sigaction(SIGSEGV, &sa, NULL);
	pthread_t th;
	if (strcmp(mode, "sigmask") == 0) {
		sigset_t all, m;
		sigfillset(&all);
		sigprocmask(SIG_BLOCK, &all, NULL);
		printf("ready\n");
		reader(NULL);
		struct sigaction now;
		sigaction(SIGSEGV, NULL, &now);
		sigprocmask(SIG_SETMASK, NULL, &m);
		printf("end handler %s, mask %s\n", now.sa_handler == on_segv ? "kept" : "LOST",
		       sigismember(&m, SIGSEGV) && sigismember(&m, SIGUSR2) ? "kept" : "CHANGED");
	} else if (strcmp(mode, "errno") == 0) {
		pthread_create(&th, NULL, reader, NULL);
		printf("ready\n");
		int bad = 0;
		errno = 4242;
		while (!done)
			if (errno != 4242) {
				bad = errno;
				errno = 4242;
			}
		pthread_join(th, NULL);
		printf("end errno %s %d\n", bad ? "CHANGED" : "kept", bad);
	} else if (strcmp(mode, "dlrace") == 0 && argc > 3) {
		pthread_create(&th, NULL, churner, NULL);
		printf("ready\n");
		char b[64];
		if (!fgets(b, sizeof(b), stdin))
			return 1;
		int n = atoi(argv[3]);
		for (int i = 0; i < n; i++) {
			void *h = dlopen(argv[2], RTLD_LAZY);
			void (*pf)(void *) = h ? (void (*)(void *))dlsym(h, "pfree") : NULL;
			if (!pf) {
				printf("end dlopen %s\n", dlerror());
				return 1;
			}
			pf(malloc(24)); /* sampled at rate 1, freed by the plugin */
			dlclose(h);
		}
		done = 1;
		pthread_join(th, NULL);
		printf("end dlrace %d\n", n);
		reader(NULL);
	} else if (strcmp(mode, "altstack") == 0) {
		long pg = sysconf(_SC_PAGESIZE);
		size_t sz = 16384;
		char *m = mmap(NULL, sz + (size_t)pg, PROT_READ | PROT_WRITE,
		               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED || mprotect(m, (size_t)pg, PROT_NONE) != 0)
			return 1;
		stack_t ss = {.ss_sp = m + pg, .ss_size = sz, .ss_flags = 0};
		sigaltstack(&ss, NULL);
		sa.sa_handler = on_usr1;
		sa.sa_flags = SA_ONSTACK;
		sigaction(SIGUSR1, &sa, NULL);
		pthread_create(&th, NULL, reader, NULL);
		printf("ready\n");
		raise(SIGUSR1);
		pthread_join(th, NULL);
		printf("end altstack\n");
	} else if (strcmp(mode, "handoff") == 0 && argc > 2) {
		signal(SIGSEGV, SIG_DFL);
		printf("ready\n");
		char b[64];
		if (!fgets(b, sizeof(b), stdin))
			return 1;
		void *volatile blk = site_handoff();
		int lazy = argc > 3 && strcmp(argv[3], "lazy") == 0;
		void *h = dlopen(argv[2], lazy ? RTLD_LAZY : RTLD_NOW);
		void (*pf)(void *) = h ? (void (*)(void *))dlsym(h, "pfree") : NULL;
		if (!pf) {
			printf("end dlopen %s\n", dlerror());
			return 1;
		}
		pf(blk);
		printf("end handoff\n");
		reader(NULL);
	} else if (strcmp(mode, "afterdetach") == 0 && argc > 2) {
		signal(SIGSEGV, SIG_DFL);
		void *m0 = dlsym(RTLD_DEFAULT, "malloc");
		printf("ready\n");
		char b[64];
		if (!fgets(b, sizeof(b), stdin))
			return 1;
		void *volatile blk = site_window();
		printf("sampled\n");
		if (!fgets(b, sizeof(b), stdin))
			return 1;
		void *h = dlopen(argv[2], RTLD_NOW);
		void (*pf)(void *) = h ? (void (*)(void *))dlsym(h, "pfree") : NULL;
		void *(*pm)(size_t) = h ? (void *(*)(size_t))dlsym(h, "pmalloc") : NULL;
		void *(*pmf)(void) = h ? (void *(*)(void))dlsym(h, "pmallocfn") : NULL;
		if (!pf || !pm || !pmf) {
			printf("end dlopen %s\n", dlerror());
			return 1;
		}
		for (int i = 0; i < 1000; i++) {
			char *volatile p = pm(100);
			p[0] = 1;
			pf(p);
		}
		pf(blk); /* sampled while attached, freed by an object loaded after */
		void *m1 = dlsym(RTLD_DEFAULT, "malloc");
		printf("end afterdetach dlsym %s, plugin's malloc %s\n",
		       m1 == m0 ? "kept" : "CHANGED", pmf() == m0 ? "kept" : "CHANGED");
		reader(NULL);
	} else if (strcmp(mode, "sleep") == 0) {
		struct timespec t0, t1, d = {2, 0};
		clock_gettime(CLOCK_MONOTONIC, &t0);
		printf("ready\n");
		int r = nanosleep(&d, NULL), e = errno;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		double dt = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
		printf("end sleep %s %d %d %.3f\n", r == 0 && dt >= 2.0 && dt < 2.5 ? "ok" : "BAD",
		       r, r ? e : 0, dt);
		reader(NULL);
	} else if (strcmp(mode, "relro") == 0 && argc > 2) {
		signal(SIGSEGV, SIG_DFL); /* a fault ends the program */
		printf("ready\n");
		char b[256];
		if (!fgets(b, sizeof(b), stdin))
			return 1;
		void *h = dlopen(argv[2], RTLD_LAZY);
		void *(*pm)(size_t) = h ? (void *(*)(size_t))dlsym(h, "pmalloc") : NULL;
		int (*later)(const char *) = h ? (int (*)(const char *))dlsym(h, "later") : NULL;
		if (!pm || !later) {
			printf("end dlopen %s\n", dlerror());
			return 1;
		}
		free(pm(16));
		void *volatile q = malloc(16); /* not elided: sampled */
		free(q);
		printf("end relro %d\n", later("42"));
		reader(NULL);
	} else if (strcmp(mode, "unload") == 0 && argc > 2) {
		printf("ready\n");
		char b[256], line[4096 + 128];
		if (!fgets(b, sizeof(b), stdin))
			return 1;
		void *h = dlopen(argv[2], RTLD_LAZY);
		void *(*pm)(size_t) = h ? (void *(*)(size_t))dlsym(h, "pmalloc") : NULL;
		if (!pm) {
			printf("end dlopen %s\n", dlerror());
			return 1;
		}
		free(pm(16));
		void *volatile q = malloc(16); /* not elided: sampled */
		free(q);
		unsigned long lo[16], hi[16];
		int n = 0;
		FILE *f = fopen("/proc/self/maps", "r");
		while (f && fgets(line, sizeof(line), f) && n < 16)
			if (strstr(line, argv[2]) && sscanf(line, "%lx-%lx", &lo[n], &hi[n]) == 2)
				n++;
		if (f)
			fclose(f);
		dlclose(h);
		for (int i = 0; i < n; i++)
			if (mmap((void *)lo[i], hi[i] - lo[i], PROT_NONE,
			         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) !=
			    (void *)lo[i])
				printf("remap failed\n");
		printf("swapped %d\n", n);
		if (!fgets(b, sizeof(b), stdin))
			return 1;
		int changed = 0;
		f = fopen("/proc/self/maps", "r");
		while (f && fgets(line, sizeof(line), f)) {
			unsigned long a, z;
			char perms[8];
			if (sscanf(line, "%lx-%lx %7s", &a, &z, perms) != 3)
				continue;
			for (int i = 0; i < n; i++)
				if (a < hi[i] && z > lo[i] && strcmp(perms, "---p") != 0)
					changed = 1;
		}
		if (f)
			fclose(f);
		printf("end unload %s\n", changed ? "CHANGED" : "kept");
	} else {
		fprintf(stderr, "usage: attach_races_target MODE\n");
		return 2;
	}
	return 0;
}
