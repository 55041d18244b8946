/*
 * fntab.h: Function ids for pprof writers that emit file and line data: a
 * hash from pprof's Function key (name, system name, file, start line; the
 * strings as string-table ids) to an id, handed out in order from `next`.
 */
#ifndef HEAPPROF_FNTAB_H
#define HEAPPROF_FNTAB_H

#include <stddef.h>
#include <stdint.h>

typedef struct fntab_key {
	uint32_t name, system_name, filename; /* string ids */
	int64_t start_line;
} fntab_key;

typedef struct fntab {
	struct fntab_slot *slots;
	size_t n, cap;
	uint64_t next; /* the next id handed out (set before first use; 0: 1) */
} fntab;

/* Returns 0 with *id set (*is_new 1 if the key was new), or -ENOMEM. */
int heapprof__fntab_get(fntab *t, const fntab_key *k, uint64_t *id,
                        int *is_new);
void heapprof__fntab_free(fntab *t);

#endif
