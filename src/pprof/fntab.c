/*
 * fntab.c: the Function key -> id table of fntab.h (open addressing).
 */
#include <errno.h>
#include <stdlib.h>

#include "fntab.h"

struct fntab_slot {
	fntab_key k;
	uint64_t id; /* 0: empty */
};

static uint64_t
key_hash(const fntab_key *k)
{
	uint64_t h = k->name * 0x9e3779b97f4a7c15ULL;
	h ^= (k->system_name + 0x632be59bd9b4e019ULL) * 0xc2b2ae3d27d4eb4fULL;
	h ^= (k->filename + ((uint64_t)k->start_line << 32)) *
	     0x165667b19e3779f9ULL;
	return h ^ (h >> 31);
}

static int
grow(fntab *t)
{
	size_t nc = t->cap ? t->cap * 2 : 256;
	struct fntab_slot *nv = calloc(nc, sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	for (size_t i = 0; i < t->cap; i++) {
		if (!t->slots[i].id)
			continue;
		size_t j = key_hash(&t->slots[i].k) & (nc - 1);
		while (nv[j].id)
			j = (j + 1) & (nc - 1);
		nv[j] = t->slots[i];
	}
	free(t->slots);
	t->slots = nv;
	t->cap = nc;
	return 0;
}

int
heapprof__fntab_get(fntab *t, const fntab_key *k, uint64_t *id, int *is_new)
{
	if ((t->n + 1) * 2 > t->cap) {
		int rc = grow(t);
		if (rc < 0)
			return rc;
	}
	size_t j = key_hash(k) & (t->cap - 1);
	for (; t->slots[j].id; j = (j + 1) & (t->cap - 1)) {
		const fntab_key *e = &t->slots[j].k;
		if (e->name == k->name && e->system_name == k->system_name &&
		    e->filename == k->filename && e->start_line == k->start_line) {
			*id = t->slots[j].id;
			*is_new = 0;
			return 0;
		}
	}
	if (!t->next)
		t->next = 1;
	t->slots[j].k = *k;
	t->slots[j].id = *id = t->next++;
	t->n++;
	*is_new = 1;
	return 0;
}

void
heapprof__fntab_free(fntab *t)
{
	free(t->slots);
	t->slots = NULL;
	t->n = t->cap = 0;
}
