/*
 * pathtab.h: the per-file caches' index (symcache.c, dwarf_sym.c): entries
 * found by file path, the last one hit checked first (a profile's
 * locations come in runs of the same mapping). Entries and their path
 * strings belong to the caller.
 */
#ifndef HEAPPROF_PATHTAB_H
#define HEAPPROF_PATHTAB_H

#include <stddef.h>

typedef struct pathtab {
	void **v;          /* the entries, in order of addition */
	const char **keys; /* their paths */
	size_t n, cap, last;
} pathtab;

/* The entry added under `path`, or NULL. */
void *heapprof__pathtab_find(pathtab *t, const char *path);
/* Adds `entry` under `path` (which must live as long as the entry).
 * 0 or -ENOMEM. */
int heapprof__pathtab_add(pathtab *t, const char *path, void *entry);
/* Releases the index (not the entries). */
void heapprof__pathtab_free(pathtab *t);

#endif
