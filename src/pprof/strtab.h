/*
 * strtab.h: the one byte-string interner of the tool half (and of the
 * heap profile writer): each distinct byte string gets the next dense id,
 * with exact comparison (the hash only picks the slot) and one arena for
 * the bytes. pprof writers (heap_encode.c, legacy_pb.c, symbolize.c,
 * merge) start it with "" as id 0 (pprof's string_table rule); the delta
 * computer interns its frames by lines and label sets (canonical bytes)
 * in it. All memory comes from a realloc hook; lookups of existing
 * strings allocate nothing.
 */
#ifndef HEAPPROF_STRTAB_H
#define HEAPPROF_STRTAB_H

#include <stddef.h>
#include <stdint.h>

#include "pb.h"

typedef struct strtab_entry {
	uint64_t hash;
	uint32_t off, len; /* bytes in the arena */
} strtab_entry;

typedef struct strtab {
	uint32_t *slots; /* id + 1, 0 = empty; open addressing */
	size_t nslots;   /* power of two */
	strtab_entry *ents;
	size_t n, cap;
	uint8_t *arena;
	size_t alen, acap;
	pb_realloc_fn *rf;
	void *rctx;
} strtab;

/* An empty table (rf NULL: libc). */
void heapprof__strtab_init(strtab *t, pb_realloc_fn *rf, void *rctx);
/* A pprof string table through libc: "" is id 0. 0 or -ENOMEM. */
int heapprof__strtab_init_pprof(strtab *t);
void heapprof__strtab_free(strtab *t);
/* Drops every entry, keeps the memory. */
void heapprof__strtab_clear(strtab *t);

uint64_t heapprof__strtab_hash(const void *p, size_t n);

/* Finds or inserts `key`: *id set; returns 1 if inserted, 0 if found, or
 * -ENOMEM. `hash` must be heapprof__strtab_hash(key, len). */
int heapprof__strtab_add(strtab *t, const void *key, size_t len,
                         uint64_t hash, uint32_t *id);
/* The same, hashing the key itself: 0 or -ENOMEM. */
int heapprof__strtab_intern(strtab *t, const void *key, size_t len,
                            uint32_t *id);

/* String id's bytes (id < n). */
static inline const void *
heapprof__strtab_get(const strtab *t, uint32_t id, size_t *len)
{
	*len = t->ents[id].len;
	/* (an empty first entry may have no arena yet) */
	return t->arena ? t->arena + t->ents[id].off : (const uint8_t *)"";
}

/* Room for n entries and abytes of arena without growing (a first fill
 * of known size: no copies, no slack). 0 or -ENOMEM. */
int heapprof__strtab_reserve(strtab *t, size_t n, size_t abytes);

/* Bytes held (for stats). */
size_t heapprof__strtab_memory(const strtab *t);

#endif
