/*
 * rprog_dumpstack.c: exit() from a SIGUSR1 handler on a 16 KiB sigaltstack
 * (a guard page below it), after the program lowered RLIMIT_AS to what it
 * uses plus ROOM KiB (argv[1]): the exit dump cannot have its 4 MiB stack,
 * and must not run on the 16 KiB one (SIGSEGV instead of status 3).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

static void
on_usr1(int s)
{
	(void)s;
	exit(3);
}

static long
vm_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char l[256];
	long v = 0;
	if (!f)
		return -1;
	while (fgets(l, sizeof l, f))
		if (!strncmp(l, "VmSize:", 7))
			v = atol(l + 7);
	fclose(f);
	return v;
}

int
main(int argc, char **argv)
{
	long room = argc > 1 ? atol(argv[1]) : 1024;
	size_t sz = 16384, pg = (size_t)getpagesize();
	char *m = mmap(NULL, sz + pg, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return 2;
	mprotect(m, pg, PROT_NONE);
	stack_t ss = {.ss_sp = m + pg, .ss_size = sz, .ss_flags = 0};
	sigaltstack(&ss, NULL);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_ONSTACK;
	sigaction(SIGUSR1, &sa, NULL);
	char *keep[200];
	long sum = 0;
	for (int i = 0; i < 200; i++) {
		keep[i] = malloc(1000 + (size_t)i);
		memset(keep[i], i, 1000);
		sum += keep[i][999];
	}
	long vm = vm_kb();
	if (vm < 0)
		return 2;
	printf("kept 200 blocks, sum %ld\n", sum);
	fflush(stdout);
	struct rlimit rl = {.rlim_cur = (rlim_t)(vm + room) * 1024,
	                    .rlim_max = RLIM_INFINITY};
	setrlimit(RLIMIT_AS, &rl);
	raise(SIGUSR1);
	return 0;
}
