/*
 * rprog_secure.c: a program that allocates and exits, run setuid (plan
 * T32). Built twice: plain (profiled through LD_PRELOAD, which ld.so drops
 * for setuid programs) and linked with libheapprof.a (rprog_secure_linked,
 * where only the library itself can refuse). Prints AT_SECURE and whether
 * the profiler is active; the script checks that no file was written.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <dlfcn.h>

int
main(void)
{
	void *keep[100];
	for (int i = 0; i < 100; i++) {
		keep[i] = malloc(100000);
		memset(keep[i], 1, 100000);
	}
	int (*active)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "heapprof_active");
	printf("at_secure=%lu profiler=%s\n", getauxval(AT_SECURE),
	       active ? "loaded" : "absent");
	for (int i = 0; i < 100; i += 2)
		free(keep[i]);
	return 0;
}
