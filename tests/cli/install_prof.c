/*
 * install_prof.c: a program linked with the installed profiler library
 * (tests/cli/install.sh builds it from `pkg-config heapprof`, shared and
 * static): keeps 32 MiB allocated at a known site and prints
 * "prof active=N" from heapprof_active(); its exit dump is the profile.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <heapprof.h>

__attribute__((noinline)) static void *
install_prof_site(size_t n)
{
	void *p = malloc(n);
	if (p)
		memset(p, 2, n);
	return p;
}

int
main(void)
{
	static void *keep[32];
	for (int i = 0; i < 32; i++)
		keep[i] = install_prof_site(1 << 20);
	printf("prof active=%d\n", heapprof_active());
	return keep[31] == NULL;
}
