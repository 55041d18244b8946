/*
 * u64map.h: a map from 64-bit keys (addresses) to 32-bit values, open
 * addressing with linear probing, for the writers that deduplicate
 * locations by address. Every key is allowed, 0 and UINT64_MAX included.
 */
#ifndef HEAPPROF_U64MAP_H
#define HEAPPROF_U64MAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct u64map {
	uint64_t *keys; /* key + 1; 0 = empty */
	uint32_t *vals;
	size_t cap, n;
	int has_max;       /* the key UINT64_MAX, kept out of the table */
	uint32_t max_val;
} u64map;

/* Finds `key`; if absent, inserts it with value `val_if_new`. *val gets
 * the value, *found whether the key was there. 0 or -ENOMEM. A zeroed
 * u64map is an empty map. */
int heapprof__u64map_get_or_put(u64map *m, uint64_t key, uint32_t val_if_new,
                                uint32_t *val, int *found);
void heapprof__u64map_free(u64map *m);

#endif
