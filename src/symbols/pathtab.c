/*
 * pathtab.c: entries by file path for the per-file caches (see pathtab.h).
 * A linear scan: a process maps tens of files, not thousands.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pathtab.h"

void *
heapprof__pathtab_find(pathtab *t, const char *path)
{
	if (t->last < t->n && strcmp(t->keys[t->last], path) == 0)
		return t->v[t->last];
	for (size_t i = 0; i < t->n; i++)
		if (strcmp(t->keys[i], path) == 0) {
			t->last = i;
			return t->v[i];
		}
	return NULL;
}

int
heapprof__pathtab_add(pathtab *t, const char *path, void *entry)
{
	if (t->n == t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 16;
		void **nv = realloc(t->v, nc * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		t->v = nv;
		const char **nk = realloc(t->keys, nc * sizeof(*nk));
		if (!nk)
			return -ENOMEM;
		t->keys = nk;
		t->cap = nc;
	}
	t->keys[t->n] = path;
	t->v[t->n] = entry;
	t->last = t->n++;
	return 0;
}

void
heapprof__pathtab_free(pathtab *t)
{
	free(t->v);
	free(t->keys);
	memset(t, 0, sizeof(*t));
}
