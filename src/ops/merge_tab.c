/*
 * merge_tab.c: the containers the merger (merge.c) keys its tables with:
 * growable arrays, an open-addressing hash set of entity indexes whose keys
 * live in those arrays, and the string interner (one arena, id 0 = "").
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

/* ---------------------------------------------------------------- strings */

static uint32_t
str_hash(const char *p, size_t n)
{
	/* FNV-1a, 64-bit, folded. */
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++) {
		h ^= (uint8_t)p[i];
		h *= 0x100000001b3ull;
	}
	return (uint32_t)(h ^ (h >> 32));
}

struct str_key {
	const mg_strings *s;
	const char *p;
	size_t n;
};

static bool
str_eq(const void *ctx, uint32_t idx)
{
	const struct str_key *k = ctx;
	return k->s->slen[idx] == k->n &&
	       memcmp(k->s->buf + k->s->off[idx], k->p, k->n) == 0;
}

int
heapprof__mg_str_init(mg_strings *s)
{
	memset(s, 0, sizeof(*s));
	return heapprof__mg_intern(s, "", 0) < 0 ? -ENOMEM : 0;
}

long
heapprof__mg_intern(mg_strings *s, const char *p, size_t n)
{
	uint32_t h = str_hash(p, n);
	struct str_key k = {s, p, n};
	uint32_t f = heapprof__mg_tab_find(&s->tab, h, str_eq, &k);
	if (f)
		return (long)(f - 1);
	if (n > UINT32_MAX || s->n >= UINT32_MAX - 1)
		return HEAPPROF_EOVERFLOW;
	if (!s->buf || s->cap - s->len < n) {
		size_t cap = s->cap ? s->cap : 4096;
		while (cap - s->len < n) {
			if (cap > SIZE_MAX / 2)
				return HEAPPROF_EOVERFLOW;
			cap *= 2;
		}
		char *b = realloc(s->buf, cap);
		if (!b)
			return -ENOMEM;
		s->buf = b;
		s->cap = cap;
	}
	if (s->n == s->ncap) {
		size_t nc = s->ncap ? s->ncap * 2 : 256;
		uint64_t *off = realloc(s->off, nc * sizeof(*off));
		if (!off)
			return -ENOMEM;
		s->off = off;
		uint32_t *sl = realloc(s->slen, nc * sizeof(*sl));
		if (!sl)
			return -ENOMEM;
		s->slen = sl;
		s->ncap = nc;
	}
	if (n)
		memcpy(s->buf + s->len, p, n);
	s->off[s->n] = s->len;
	s->slen[s->n] = (uint32_t)n;
	s->len += n;
	int rc = heapprof__mg_tab_insert(&s->tab, h, (uint32_t)s->n);
	if (rc < 0)
		return rc;
	return (long)s->n++;
}

const char *
heapprof__mg_str(const mg_strings *s, uint32_t id, size_t *len)
{
	*len = s->slen[id];
	return s->buf + s->off[id];
}

void
heapprof__mg_str_free(mg_strings *s)
{
	free(s->buf);
	free(s->off);
	free(s->slen);
	heapprof__mg_tab_free(&s->tab);
	memset(s, 0, sizeof(*s));
}
