/*
 * attach_symval.h: attach_symval.c's calls, for attach.c (all under its
 * lock). fn is attach.c's number of the function.
 */
#ifndef HP_ATTACH_SYMVAL_H
#define HP_ATTACH_SYMVAL_H
#include <stdint.h>

/* The definition of `name` that is `theirs` (the program's lookup's
 * first) made to lead to `ours` in the loader's lookups: the count of
 * .dynsym entries patched (0: patched already), or -errno (-ENOTSUP: an
 * IFUNC). */
int heapprof__symval_route(int fn, const char *name, uintptr_t theirs,
                           uintptr_t ours);
/* The entries of the functions numbered `from` and above put back. */
void heapprof__symval_restore(int from);
/* The original definition of fn if its entries lead to ours now, or 0. */
uintptr_t heapprof__symval_orig(int fn);

#endif
