/*
 * rlib_plug.c: the plugins rel_plugins.sh loads, built twice from this one
 * source (Makefile): build/tests/libplug_a.so with PLUG_FN=a_alloc_site and
 * build/tests/libplug_b.so with PLUG_FN=innocent_libb_function. The code
 * is the same, so each library's function sits at the same offset of its
 * file, and a library loaded where the other was unloaded puts its
 * function at the other's addresses: a stack sampled in liba, symbolized
 * against libb, names innocent_libb_function.
 */
#include <stdlib.h>
#include <string.h>

#ifndef PLUG_FN
#error "PLUG_FN: the name of the function"
#endif

__attribute__((visibility("default"), noinline)) void *
PLUG_FN(size_t n)
{
	char *p = malloc(n);
	if (p)
		memset(p, 5, n < 4096 ? n : 4096);
	return p;
}
