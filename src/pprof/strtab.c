/*
 * strtab.c: the byte-string interner (see strtab.h).
 */
#include <errno.h>
#include <string.h>

#include "heapprof.h"
#include "strtab.h"

void
heapprof__strtab_init(strtab *t, pb_realloc_fn *rf, void *rctx)
{
	memset(t, 0, sizeof(*t));
	t->rf = rf ? rf : heapprof__pb_libc_realloc;
	t->rctx = rctx;
}

int
heapprof__strtab_init_pprof(strtab *t)
{
	uint32_t id;
	heapprof__strtab_init(t, NULL, NULL);
	return heapprof__strtab_intern(t, "", 0, &id);
}

void
heapprof__strtab_free(strtab *t)
{
	if (t->slots)
		t->rf(t->rctx, t->slots, t->nslots * sizeof(uint32_t), 0);
	if (t->ents)
		t->rf(t->rctx, t->ents, t->cap * sizeof(strtab_entry), 0);
	if (t->arena)
		t->rf(t->rctx, t->arena, t->acap, 0);
	pb_realloc_fn *rf = t->rf;
	void *rctx = t->rctx;
	heapprof__strtab_init(t, rf, rctx);
}

void
heapprof__strtab_clear(strtab *t)
{
	if (t->slots)
		memset(t->slots, 0, t->nslots * sizeof(uint32_t));
	t->n = 0;
	t->alen = 0;
}

size_t
heapprof__strtab_memory(const strtab *t)
{
	return t->nslots * sizeof(uint32_t) + t->cap * sizeof(strtab_entry) +
	       t->acap;
}

static inline uint64_t
rd64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

static inline uint64_t
mix(uint64_t a, uint64_t b)
{
	__uint128_t r = (__uint128_t)a * b;
	return (uint64_t)r ^ (uint64_t)(r >> 64);
}

/* A small multiply-mix hash (not cryptographic: collisions only cost a
 * compare, identity is decided by memcmp). */
uint64_t
heapprof__strtab_hash(const void *key, size_t n)
{
	const uint8_t *p = key;
	const uint64_t k0 = 0xa0761d6478bd642fULL, k1 = 0xe7037ed1a0b428dbULL;
	uint64_t h = k0 ^ (n * k1);
	while (n >= 16) {
		h = mix(rd64(p) ^ k1, rd64(p + 8) ^ h);
		p += 16;
		n -= 16;
	}
	if (n >= 8) {
		h = mix(rd64(p) ^ k1, h ^ k0);
		p += 8;
		n -= 8;
	}
	if (n) {
		uint64_t tail = 0;
		memcpy(&tail, p, n);
		h = mix(tail ^ k1, h ^ 0x8ebc6af09c88c6e3ULL);
	}
	return mix(h ^ k0, h ^ k1 ^ 0x589965cc75374cc3ULL);
}

static int
rehash(strtab *t, size_t nslots)
{
	uint32_t *s = t->rf(t->rctx, NULL, 0, nslots * sizeof(uint32_t));
	if (!s)
		return -ENOMEM;
	memset(s, 0, nslots * sizeof(uint32_t));
	size_t mask = nslots - 1;
	for (size_t i = 0; i < t->n; i++) {
		size_t h = (size_t)t->ents[i].hash & mask;
		while (s[h])
			h = (h + 1) & mask;
		s[h] = (uint32_t)i + 1;
	}
	if (t->slots)
		t->rf(t->rctx, t->slots, t->nslots * sizeof(uint32_t), 0);
	t->slots = s;
	t->nslots = nslots;
	return 0;
}

/* Room for len more bytes in the arena (offsets fit 32 bits). */
static int
arena_room(strtab *t, size_t len)
{
	if (t->acap - t->alen >= len)
		return 0;
	size_t c = t->acap ? t->acap : 4096;
	while (c - t->alen < len)
		c += c / 2;
	if (len > 65536)
		c = t->alen + len; /* a reservation: exactly that */
	if (c >= UINT32_MAX)
		return -ENOMEM;
	void *p = t->rf(t->rctx, t->arena, t->acap, c);
	if (!p)
		return -ENOMEM;
	t->arena = p;
	t->acap = c;
	return 0;
}

int
heapprof__strtab_reserve(strtab *t, size_t n, size_t abytes)
{
	size_t ns = t->nslots ? t->nslots : 64;
	while (ns < 2 * n)
		ns *= 2;
	if (ns != t->nslots)
		HP_TRY(rehash(t, ns));
	if (n > t->cap) {
		void *p = t->rf(t->rctx, t->ents, t->cap * sizeof(strtab_entry),
		                n * sizeof(strtab_entry));
		if (!p)
			return -ENOMEM;
		t->ents = p;
		t->cap = n;
	}
	if (abytes > t->acap - t->alen)
		HP_TRY(arena_room(t, abytes));
	return 0;
}

int
heapprof__strtab_add(strtab *t, const void *key, size_t len, uint64_t hash,
                     uint32_t *id)
{
	if (HP_LIKELY(t->nslots)) {
		size_t mask = t->nslots - 1;
		size_t h = (size_t)hash & mask;
		uint32_t s;
		while ((s = t->slots[h]) != 0) {
			const strtab_entry *e = &t->ents[s - 1];
			if (e->hash == hash && e->len == len &&
			    (len == 0 ||
			     memcmp(t->arena + e->off, key, len) == 0)) {
				*id = s - 1;
				return 0;
			}
			h = (h + 1) & mask;
		}
	}
	/* Insert. Load factor <= 1/2. */
	if ((t->n + 1) * 2 > t->nslots)
		HP_TRY(rehash(t, t->nslots ? t->nslots * 2 : 64));
	if (t->n >= UINT32_MAX - 1 || len >= UINT32_MAX)
		return -ENOMEM;
	HP_TRY(heapprof__grow(t->rf, t->rctx, &t->ents, &t->cap, t->n + 1,
	                      sizeof(strtab_entry)));
	HP_TRY(arena_room(t, len));
	if (len) /* an empty key may meet an arena not yet allocated */
		memcpy(t->arena + t->alen, key, len);
	strtab_entry *e = &t->ents[t->n];
	e->hash = hash;
	e->off = (uint32_t)t->alen;
	e->len = (uint32_t)len;
	t->alen += len;
	size_t mask = t->nslots - 1;
	size_t h = (size_t)hash & mask;
	while (t->slots[h])
		h = (h + 1) & mask;
	t->slots[h] = (uint32_t)t->n + 1;
	*id = (uint32_t)t->n++;
	return 1;
}

int
heapprof__strtab_intern(strtab *t, const void *key, size_t len, uint32_t *id)
{
	int rc = heapprof__strtab_add(t, key, len,
	                              heapprof__strtab_hash(key, len), id);
	return rc < 0 ? rc : 0;
}
