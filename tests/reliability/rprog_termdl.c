/*
 * rprog_termdl.c: loops dlopen/dlclose of LIB (argv[1]) while allocating,
 * until a signal ends it. Under the profiler a SIGTERM (default action)
 * that lands inside the dynamic loader must still end the program with
 * status 143: the exit profile's handler must not call the loader inside
 * the interrupted dlopen (it once dlopen'ed libz and libm there).
 * With a second argument "exit" ("_exit"), the program's own SIGTERM
 * handler calls exit(3) (_exit(3)): the exit dump must not do it either
 * (status 3 every time).
 *
 * In "exit" mode SIGTERM is blocked across dlclose: exit() in a handler
 * that interrupted dlclose's __cxa_finalize, which holds glibc's
 * __exit_funcs_lock, waits on that lock for ever, with or without the
 * profiler (1 run in 1,800 here; gdb: __run_exit_handlers in the handler,
 * __cxa_finalize under the signal frame, no heapprof frame between). The
 * program's own deadlock is not what is tested; the signal still lands in
 * dlopen, and the other two modes still interrupt dlclose.
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void
on_term(int sig)
{
	(void)sig;
	exit(3);
}

static void
on_term_now(int sig)
{
	(void)sig;
	_exit(3);
}

int
main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	sigset_t term, old;
	sigemptyset(&term);
	int mask_close = argc > 2 && !strcmp(argv[2], "exit");
	if (mask_close) {
		signal(SIGTERM, on_term);
		sigaddset(&term, SIGTERM);
	}
	if (argc > 2 && !strcmp(argv[2], "_exit"))
		signal(SIGTERM, on_term_now);
	void *keep[64];
	for (int i = 0; i < 64; i++) {
		keep[i] = malloc(4096);
		memset(keep[i], i, 4096);
	}
	printf("looping\n");
	fflush(stdout);
	for (unsigned i = 0;; i++) {
		void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			fprintf(stderr, "%s\n", dlerror());
			return 2;
		}
		free(keep[i % 64]);
		keep[i % 64] = malloc(100 + i % 3000);
		if (mask_close)
			sigprocmask(SIG_BLOCK, &term, &old);
		dlclose(h);
		if (mask_close)
			sigprocmask(SIG_SETMASK, &old, NULL);
	}
}
