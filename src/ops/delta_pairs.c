/*
 * delta_pairs.c: the pair table of the delta computer (see delta_pairs.h).
 * Linear probing at a load factor of at most 3/4: 8 bytes an entry plus
 * 5.3 to 10.7 bytes of slots.
 */
#include <errno.h>
#include <string.h>

#include "heapprof.h"
#include "delta_pairs.h"

void
heapprof__dp_init(dp_table *t, pb_realloc_fn *rf, void *rctx)
{
	memset(t, 0, sizeof(*t));
	t->rf = rf ? rf : heapprof__pb_libc_realloc;
	t->rctx = rctx;
}

void
heapprof__dp_free(dp_table *t)
{
	if (t->slots)
		t->rf(t->rctx, t->slots, t->nslots * sizeof(uint32_t), 0);
	if (t->pairs)
		t->rf(t->rctx, t->pairs, t->cap * sizeof(uint64_t), 0);
	pb_realloc_fn *rf = t->rf;
	void *rctx = t->rctx;
	heapprof__dp_init(t, rf, rctx);
}

void
heapprof__dp_clear(dp_table *t)
{
	if (t->slots)
		memset(t->slots, 0, t->nslots * sizeof(uint32_t));
	t->n = 0;
}

size_t
heapprof__dp_memory(const dp_table *t)
{
	return t->nslots * sizeof(uint32_t) + t->cap * sizeof(uint64_t);
}

/* Fibonacci hashing of the pair, after folding its high half in (the
 * pairs are small integers, so the low bits alone would cluster). */
HP_INLINE size_t
slot_of(const dp_table *t, uint64_t v)
{
	v ^= v >> 29;
	return (size_t)((v * 0x9e3779b97f4a7c15ULL) >> t->shift);
}

static int
rehash(dp_table *t, size_t nslots)
{
	uint32_t *s = t->rf(t->rctx, NULL, 0, nslots * sizeof(uint32_t));
	if (!s)
		return -ENOMEM;
	memset(s, 0, nslots * sizeof(uint32_t));
	unsigned bits = 0;
	while (((size_t)1 << bits) < nslots)
		bits++;
	if (t->slots)
		t->rf(t->rctx, t->slots, t->nslots * sizeof(uint32_t), 0);
	t->slots = s;
	t->nslots = nslots;
	t->shift = 64 - bits;
	size_t mask = nslots - 1;
	for (size_t i = 0; i < t->n; i++) {
		size_t h = slot_of(t, t->pairs[i]);
		while (s[h])
			h = (h + 1) & mask;
		s[h] = (uint32_t)i + 1;
	}
	return 0;
}

/* Slots for n entries at a load of at most 3/4. */
static size_t
slots_for(size_t n)
{
	size_t ns = 64;
	while (ns / 4 * 3 < n)
		ns *= 2;
	return ns;
}

int
heapprof__dp_reserve(dp_table *t, size_t n)
{
	size_t ns = slots_for(n);
	if (ns > t->nslots)
		HP_TRY(rehash(t, ns));
	if (n > t->cap) {
		void *p = t->rf(t->rctx, t->pairs, t->cap * sizeof(uint64_t),
		                n * sizeof(uint64_t));
		if (!p)
			return -ENOMEM;
		t->pairs = p;
		t->cap = n;
	}
	return 0;
}

int
heapprof__dp_intern(dp_table *t, uint32_t a, uint32_t b, uint32_t *id)
{
	uint64_t v = a | (uint64_t)b << 32;
	if (HP_LIKELY(t->nslots)) {
		size_t mask = t->nslots - 1, h = slot_of(t, v);
		uint32_t s;
		while ((s = t->slots[h]) != 0) {
			if (t->pairs[s - 1] == v) {
				*id = s - 1;
				return 0;
			}
			h = (h + 1) & mask;
		}
	}
	if (t->n >= UINT32_MAX - 1)
		return -ENOMEM;
	if (t->n + 1 > t->nslots / 4 * 3)
		HP_TRY(rehash(t, slots_for(t->n + 1)));
	HP_TRY(heapprof__grow(t->rf, t->rctx, &t->pairs, &t->cap, t->n + 1,
	                      sizeof(uint64_t)));
	t->pairs[t->n] = v;
	size_t mask = t->nslots - 1, h = slot_of(t, v);
	while (t->slots[h])
		h = (h + 1) & mask;
	t->slots[h] = (uint32_t)t->n + 1;
	*id = (uint32_t)t->n++;
	return 1;
}

void
heapprof__dp_drop_last(dp_table *t)
{
	size_t mask = t->nslots - 1, h = slot_of(t, t->pairs[t->n - 1]);
	/* Every other entry went in before it, when its slot was free: no
	 * probe run passes through that slot, so emptying it breaks none. */
	while (t->slots[h] != (uint32_t)t->n)
		h = (h + 1) & mask;
	t->slots[h] = 0;
	t->n--;
}
