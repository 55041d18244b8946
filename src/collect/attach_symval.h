/*
 * attach_symval.h: attach_symval.c's calls, for attach.c (all under its
 * lock). fn is attach.c's number of the function.
 */
#ifndef HP_ATTACH_SYMVAL_H
#define HP_ATTACH_SYMVAL_H
#include <stdint.h>

/* For each function fn < nfn: the definition of name[fn] that is
 * theirs[fn] (the program's lookup's first; 0: not routed) made to lead
 * to ours[fn] in the loader's lookups; err[fn] gets 0 (routed, now or
 * before), or why not (ENOENT: no such definition found, ENOTSUP: an
 * IFUNC, an mprotect's errno). */
void heapprof__symval_route(int nfn, const char *const *name,
                            const uintptr_t *theirs, const uintptr_t *ours,
                            int *err);
/* The entries of the functions numbered `from` and above put back. */
void heapprof__symval_restore(int from);
/* The original definition of fn if its entries lead to ours now, or 0. */
uintptr_t heapprof__symval_orig(int fn);

#endif
