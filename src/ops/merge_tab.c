/*
 * merge_tab.c: the containers the merger (merge.c) keys its tables with:
 * growable arrays, an open-addressing hash set of entity indexes whose keys
 * live in those arrays (strings: strtab.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "heapprof.h"
#include "merge.h"

int
heapprof__mg_vec_reserve(mg_vec *v, size_t elem, size_t more)
{
	if (v->cap - v->n >= more)
		return 0;
	size_t cap = v->cap ? v->cap : 64;
	while (cap - v->n < more) {
		if (cap > SIZE_MAX / 2 / elem)
			return HEAPPROF_EOVERFLOW;
		cap *= 2;
	}
	void *p = realloc(v->p, cap * elem);
	if (!p)
		return -ENOMEM;
	v->p = p;
	v->cap = cap;
	return 0;
}

void
heapprof__mg_vec_free(mg_vec *v)
{
	free(v->p);
	memset(v, 0, sizeof(*v));
}

uint64_t
heapprof__mg_hash(uint64_t h, uint64_t v)
{
	/* A multiply-xorshift step (in the style of splitmix64's finaliser). */
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 31;
	return h;
}

uint32_t
heapprof__mg_tab_find(const mg_tab *t, uint32_t hash,
                      bool (*eq)(const void *ctx, uint32_t idx), const void *ctx)
{
	if (!t->cap)
		return 0;
	size_t mask = t->cap - 1;
	for (size_t i = hash & mask;; i = (i + 1) & mask) {
		uint32_t s = t->slot[i];
		if (!s)
			return 0;
		if (t->hash[i] == hash && eq(ctx, s - 1))
			return s;
	}
}

static void
place(uint32_t *slot, uint32_t *hash, size_t mask, uint32_t h, uint32_t s)
{
	size_t i = h & mask;
	while (slot[i])
		i = (i + 1) & mask;
	slot[i] = s;
	hash[i] = h;
}

int
heapprof__mg_tab_insert(mg_tab *t, uint32_t hash, uint32_t idx)
{
	if ((t->n + 1) * 2 > t->cap) { /* load factor <= 1/2 */
		size_t cap = t->cap ? t->cap * 2 : 256;
		if (cap > SIZE_MAX / sizeof(uint32_t) / 2)
			return HEAPPROF_EOVERFLOW;
		uint32_t *slot = calloc(cap, sizeof(uint32_t));
		uint32_t *hash_a = malloc(cap * sizeof(uint32_t));
		if (!slot || !hash_a) {
			free(slot);
			free(hash_a);
			return -ENOMEM;
		}
		for (size_t i = 0; i < t->cap; i++)
			if (t->slot[i])
				place(slot, hash_a, cap - 1, t->hash[i], t->slot[i]);
		free(t->slot);
		free(t->hash);
		t->slot = slot;
		t->hash = hash_a;
		t->cap = cap;
	}
	place(t->slot, t->hash, t->cap - 1, hash, idx + 1);
	t->n++;
	return 0;
}

void
heapprof__mg_tab_free(mg_tab *t)
{
	free(t->slot);
	free(t->hash);
	memset(t, 0, sizeof(*t));
}
