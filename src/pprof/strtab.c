/*
 * strtab.c: string interning for the pprof writers (see strtab.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "strtab.h"

static uint64_t
hash_bytes(const char *s, size_t n)
{
	/* FNV-1a, 64-bit: strings here are short symbol names and paths. */
	uint64_t h = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ULL;
	}
	return h ^ (h >> 29);
}

int
heapprof__strtab_init(strtab *t)
{
	memset(t, 0, sizeof(*t));
	uint32_t id;
	return heapprof__strtab_intern(t, "", 0, &id);
}

void
heapprof__strtab_free(strtab *t)
{
	free(t->bytes);
	free(t->off);
	free(t->len);
	free(t->slots);
	memset(t, 0, sizeof(*t));
}

static int
rehash(strtab *t)
{
	size_t ns = t->nslots ? t->nslots * 2 : 256;
	uint32_t *s = calloc(ns, sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (uint32_t i = 0; i < t->n; i++) {
		size_t j = hash_bytes(t->bytes + t->off[i], t->len[i]) & (ns - 1);
		while (s[j])
			j = (j + 1) & (ns - 1);
		s[j] = i + 1;
	}
	free(t->slots);
	t->slots = s;
	t->nslots = ns;
	return 0;
}

int
heapprof__strtab_intern(strtab *t, const char *s, size_t len, uint32_t *id)
{
	if (len > UINT32_MAX)
		return -EINVAL;
	if ((size_t)(t->n + 1) * 2 > t->nslots) {
		int rc = rehash(t);
		if (rc)
			return rc;
	}
	size_t j = hash_bytes(s, len) & (t->nslots - 1);
	while (t->slots[j]) {
		uint32_t i = t->slots[j] - 1;
		if (t->len[i] == len && memcmp(t->bytes + t->off[i], s, len) == 0) {
			*id = i;
			return 0;
		}
		j = (j + 1) & (t->nslots - 1);
	}
	if (t->n == t->ncap) {
		uint32_t nc = t->ncap ? t->ncap * 2 : 64;
		size_t *no = realloc(t->off, nc * sizeof(*no));
		if (!no)
			return -ENOMEM;
		t->off = no;
		uint32_t *nl = realloc(t->len, nc * sizeof(*nl));
		if (!nl)
			return -ENOMEM;
		t->len = nl;
		t->ncap = nc;
	}
	if (t->bcap - t->blen < len + 1) {
		size_t nc = t->bcap ? t->bcap : 4096;
		while (nc - t->blen < len + 1)
			nc *= 2;
		char *nb = realloc(t->bytes, nc);
		if (!nb)
			return -ENOMEM;
		t->bytes = nb;
		t->bcap = nc;
	}
	memcpy(t->bytes + t->blen, s, len);
	t->bytes[t->blen + len] = 0;
	t->off[t->n] = t->blen;
	t->len[t->n] = (uint32_t)len;
	t->blen += len + 1;
	t->slots[j] = t->n + 1;
	*id = t->n++;
	return 0;
}

const char *
heapprof__strtab_get(const strtab *t, uint32_t id, size_t *len)
{
	if (id >= t->n)
		return NULL;
	if (len)
		*len = t->len[id];
	return t->bytes + t->off[id];
}
