/*
 * range_int.h: what range.c (the range, its page runs and slots) and
 * range_exact.c (its exact runs: blocks over 512 KiB) share. Nothing
 * else includes it. Every field and function here is used with rg_lock
 * held, except rg_page (written once at init).
 */
#ifndef HEAPPROF_RANGE_INT_H
#define HEAPPROF_RANGE_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "collect.h"

#define BIG_CLASS 63 /* run_class of an exact run (below SLOT_CLASS) */

extern HP_HIDDEN pthread_mutex_t rg_lock;
extern HP_HIDDEN size_t rg_page;          /* init */
extern HP_HIDDEN uintptr_t rg_bump;       /* next unused byte */
extern HP_HIDDEN uintptr_t rg_committed;  /* [bump, committed) is read-write */

/* range.c */
HP_HIDDEN uintptr_t rg_span(void);
HP_HIDDEN bool rg_limited(void);
HP_HIDDEN uintptr_t rg_frontier(size_t bytes);
HP_HIDDEN bool rg_release(uintptr_t a, size_t len);
HP_HIDDEN void rg_trim(void);

/* range_exact.c: an exact run of len bytes (warm: *dirty, else zeroed),
 * or 0; a freed one back. */
HP_HIDDEN uintptr_t rg_exact_get(size_t len, bool *dirty);
HP_HIDDEN void rg_exact_put(uintptr_t r, size_t len);
/* The bytes of the free extents (PROT_NONE or unmapped again). */
HP_HIDDEN size_t rg_exact_released(void);

#endif
