/*
 * delta_pairs.h: a table of pairs of 32-bit words -> dense ids, the form
 * of the delta computer's stack nodes (parent node, frame) and sample keys
 * (stack node, label set). A pair is its own key: 8 bytes an entry and a
 * slot array, no stored hash and no arena. All memory comes from a
 * realloc hook; lookups allocate nothing.
 */
#ifndef HEAPPROF_DELTA_PAIRS_H
#define HEAPPROF_DELTA_PAIRS_H

#include <stddef.h>
#include <stdint.h>

#include "pb.h"

typedef struct dp_table {
	uint64_t *pairs;  /* id -> a | b << 32 */
	size_t n, cap;
	uint32_t *slots;  /* id + 1, 0 = empty; open addressing */
	size_t nslots;    /* power of two (or 0) */
	unsigned shift;   /* 64 - log2(nslots) */
	pb_realloc_fn *rf;
	void *rctx;
} dp_table;

void heapprof__dp_init(dp_table *t, pb_realloc_fn *rf, void *rctx);
void heapprof__dp_free(dp_table *t);
/* Drops every entry, keeps the memory. */
void heapprof__dp_clear(dp_table *t);

/* Finds or inserts (a, b): *id set; returns 1 if inserted, 0 if found, or
 * -ENOMEM. */
int heapprof__dp_intern(dp_table *t, uint32_t a, uint32_t b, uint32_t *id);
/* Takes back the entry just inserted (the table's last). */
void heapprof__dp_drop_last(dp_table *t);
/* Room for n entries without growing. 0 or -ENOMEM. */
int heapprof__dp_reserve(dp_table *t, size_t n);
/* Bytes held (for stats). */
size_t heapprof__dp_memory(const dp_table *t);

static inline uint32_t
heapprof__dp_a(const dp_table *t, uint32_t id)
{
	return (uint32_t)t->pairs[id];
}

static inline uint32_t
heapprof__dp_b(const dp_table *t, uint32_t id)
{
	return (uint32_t)(t->pairs[id] >> 32);
}

#endif
