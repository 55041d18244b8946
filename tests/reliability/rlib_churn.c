/*
 * rlib_churn.c: the library rprog_dlchurn loads and unloads in a loop
 * (built as build/tests/librchurn.so). Allocates in its constructor, frees
 * in its destructor, and hands out blocks that outlive it.
 */
#include <stdlib.h>
#include <string.h>

static void *ctor_block;

__attribute__((constructor)) static void
rchurn_init(void)
{
	ctor_block = malloc(4096);
	if (ctor_block)
		memset(ctor_block, 1, 4096);
}

__attribute__((destructor)) static void
rchurn_fini(void)
{
	free(ctor_block);
}

__attribute__((visibility("default"), noinline)) void *
rchurn_alloc(size_t n)
{
	char *p = malloc(n);
	if (p)
		memset(p, 3, n);
	return p;
}
