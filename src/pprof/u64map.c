/*
 * u64map.c: 64-bit key -> 32-bit value hash map (see u64map.h).
 */
#include <errno.h>
#include <stdlib.h>

#include "u64map.h"

static uint64_t
mix64(uint64_t x)
{
	/* The murmur3 finaliser: addresses differ in few, low bits. */
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

static int
grow(u64map *m)
{
	size_t ncap = m->cap ? m->cap * 2 : 1024;
	uint64_t *nk = calloc(ncap, sizeof(*nk));
	uint32_t *nv = calloc(ncap, sizeof(*nv));
	if (!nk || !nv) {
		free(nk);
		free(nv);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->keys[i])
			continue;
		size_t j = mix64(m->keys[i]) & (ncap - 1);
		while (nk[j])
			j = (j + 1) & (ncap - 1);
		nk[j] = m->keys[i];
		nv[j] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	m->keys = nk;
	m->vals = nv;
	m->cap = ncap;
	return 0;
}

int
heapprof__u64map_get_or_put(u64map *m, uint64_t key, uint32_t val_if_new,
                            uint32_t *val, int *found)
{
	if (key == UINT64_MAX) {
		*found = m->has_max;
		if (!m->has_max) {
			m->has_max = 1;
			m->max_val = val_if_new;
		}
		*val = m->max_val;
		return 0;
	}
	if ((m->n + 1) * 2 > m->cap) {
		int rc = grow(m);
		if (rc)
			return rc;
	}
	uint64_t k = key + 1;
	size_t j = mix64(k) & (m->cap - 1);
	while (m->keys[j] && m->keys[j] != k)
		j = (j + 1) & (m->cap - 1);
	*found = m->keys[j] != 0;
	if (!*found) {
		m->keys[j] = k;
		m->vals[j] = val_if_new;
		m->n++;
	}
	*val = m->vals[j];
	return 0;
}

void
heapprof__u64map_free(u64map *m)
{
	free(m->keys);
	free(m->vals);
	m->keys = NULL;
	m->vals = NULL;
	m->cap = m->n = 0;
	m->has_max = 0;
}
