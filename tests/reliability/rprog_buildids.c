/*
 * rprog_buildids.c: what the exit dump reads to find build ids
 * (rel_buildids.sh).
 *   rprog_buildids marker [HOW]  dlopens libresolv (no allocation of ours
 *                           lands there), allocates, tries to open the path
 *                           /nonexistent/heapprof-exit-marker (a mark in
 *                           strace's output: what follows is the exit),
 *                           returns from main, or HOW: "_exit" calls
 *                           _exit(0), "term" raises SIGTERM (the profiler's
 *                           ending handler writes the profile), "thread"
 *                           returns with a second thread still running.
 *   rprog_buildids forkheld [_exit]  a thread holds the loader's lock
 *                           (inside a dl_iterate_phdr callback) while main
 *                           forks; the child allocates and exits (exit, or
 *                           _exit): its exit dump must not wait for that
 *                           lock, whose holder does not exist in the child.
 *                           The parent releases the thread, reaps the
 *                           child, exits with its status.
 *   rprog_buildids forkheld_c11 [_exit]  the same with the holder made
 *                           by C11 thrd_create, which glibc runs without
 *                           calling pthread_create through the PLT.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <threads.h>
#include <unistd.h>

/* volatile: gcc -O1 removed the mallocs of a write-only array, so the
 * fork child allocated nothing (and, since issue 29 item 7, wrote no exit
 * profile at all). */
static void *volatile keep[64];

static void
allocate(void)
{
	for (int i = 0; i < 64; i++)
		keep[i] = malloc(100 + (size_t)i * 16);
}

static _Atomic int holding, release_it;

static int
hold(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)info, (void)size, (void)arg;
	atomic_store(&holding, 1);
	while (!atomic_load(&release_it))
		usleep(1000);
	return 1; /* the first object only */
}

static void *
idle(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

static void *
holder(void *arg)
{
	(void)arg;
	dl_iterate_phdr(hold, NULL);
	return NULL;
}

static int
holder_c11(void *arg)
{
	holder(arg);
	return 0;
}

int
main(int argc, char **argv)
{
	const char *how = argc == 3 ? argv[2] : "";
	if ((argc == 2 || argc == 3) && !strcmp(argv[1], "marker")) {
		void *h = dlopen("libresolv.so.2", RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			fprintf(stderr, "dlopen libresolv.so.2: %s\n", dlerror());
			return 2;
		}
		allocate();
		pthread_t t;
		if (!strcmp(how, "thread") && pthread_create(&t, NULL, idle, NULL))
			return 2;
		int fd = open("/nonexistent/heapprof-exit-marker", O_RDONLY);
		if (fd >= 0)
			close(fd);
		printf("ok\n");
		fflush(stdout);
		if (!strcmp(how, "_exit"))
			_exit(0);
		if (!strcmp(how, "term"))
			raise(SIGTERM);
		return 0;
	}
	int c11 = (argc == 2 || argc == 3) && !strcmp(argv[1], "forkheld_c11");
	if ((argc == 2 || argc == 3) && (c11 || !strcmp(argv[1], "forkheld"))) {
		pthread_t t;
		thrd_t t11;
		if (c11 ? thrd_create(&t11, holder_c11, NULL) != thrd_success
		        : pthread_create(&t, NULL, holder, NULL) != 0)
			return 2;
		while (!atomic_load(&holding))
			usleep(1000);
		pid_t pid = fork();
		if (pid == 0) {
			allocate();
			if (!strcmp(how, "_exit"))
				_exit(0);
			exit(0); /* the exit dump */
		}
		atomic_store(&release_it, 1);
		if (c11)
			thrd_join(t11, NULL);
		else
			pthread_join(t, NULL);
		int st = 0;
		if (pid < 0 || waitpid(pid, &st, 0) != pid)
			return 3;
		printf("child %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128);
		return WIFEXITED(st) ? WEXITSTATUS(st) : 4;
	}
	fprintf(stderr, "usage: rprog_buildids marker|forkheld|forkheld_c11 [_exit|term|thread]\n");
	return 2;
}
