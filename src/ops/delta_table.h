/*
 * delta_table.h: the interning table the delta computer keeps its state in:
 * byte strings -> dense ids, with exact comparison (the hash only picks the
 * bucket) and an arena for the bytes.
 * Used twice: frames by lines (function, file, line) and label sets
 * (canonical sorted labels). All memory comes from a realloc hook; lookups
 * of existing keys allocate nothing.
 */
#ifndef HEAPPROF_DELTA_TABLE_H
#define HEAPPROF_DELTA_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "pb.h"

typedef struct dt_entry {
	uint64_t hash;
	uint32_t off, len; /* bytes in the arena */
} dt_entry;

typedef struct dt_table {
	uint32_t *slots; /* id + 1, 0 = empty; open addressing */
	size_t nslots;   /* power of two */
	dt_entry *ents;
	size_t n, cap;
	uint8_t *arena;
	size_t alen, acap;
	pb_realloc_fn *rf;
	void *rctx;
} dt_table;

void heapprof__dt_init(dt_table *t, pb_realloc_fn *rf, void *rctx);
void heapprof__dt_free(dt_table *t);
/* Drops every entry, keeps the memory. */
void heapprof__dt_clear(dt_table *t);

uint64_t heapprof__dt_hash(const void *p, size_t n);

/* Finds or inserts `key`: *id set; returns 1 if inserted, 0 if found, or
 * -ENOMEM. `hash` must be heapprof__dt_hash(key, len). */
int heapprof__dt_intern(dt_table *t, const void *key, size_t len,
                        uint64_t hash, uint32_t *id);

/* Entry id's bytes. */
static inline const uint8_t *
heapprof__dt_bytes(const dt_table *t, uint32_t id, size_t *len)
{
	*len = t->ents[id].len;
	/* (an empty first entry may have no arena yet) */
	return t->arena ? t->arena + t->ents[id].off : (const uint8_t *)"";
}

/* Room for n entries and abytes of arena without growing (a first fill
 * of known size: no copies, no slack). 0 or -ENOMEM. */
int heapprof__dt_reserve(dt_table *t, size_t n, size_t abytes);

/* Bytes held (for stats). */
size_t heapprof__dt_memory(const dt_table *t);

#endif
