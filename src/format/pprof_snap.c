/*
 * pprof_snap.c: the decoder's record snapshot (pprof_dec.h keep_records): a
 * copy of the last valid profile's Mapping, Location and Function messages
 * with their ids (and location addresses). A stream of profiles from one
 * source repeats most of them byte for byte; the index pass then takes ids
 * from the snapshot instead of parsing, and when every record and the
 * string count match, open skips validating them (they passed last time:
 * same bytes, same string range, same function ids).
 */
#include <string.h>

#include "heapprof.h"
#include "pprof_dec.h"
#include "pprof_int.h"

void
heapprof__pprof_snap_free(pprof_dec *d)
{
	pprof_snap *s = &d->snap;
	heapprof__pprof_release(d, &s->bytes, s->cap);
	heapprof__pprof_release(d, &s->recs, s->rcap * sizeof(pprof_rec));
	heapprof__pprof_release(d, &s->addr, s->rcap * sizeof(uint64_t));
	uint64_t gen = s->gen;
	memset(s, 0, sizeof(*s));
	s->gen = gen + 1;
}

/* a == b for n bytes, 8 at a time (records are short). */
HP_INLINE bool
same_bytes(const uint8_t *a, const uint8_t *b, size_t n)
{
	uint64_t x, y;
	while (n >= 8) {
		memcpy(&x, a, 8);
		memcpy(&y, b, 8);
		if (x != y)
			return false;
		a += 8;
		b += 8;
		n -= 8;
	}
	while (n--)
		if (*a++ != *b++)
			return false;
	return true;
}

bool
heapprof__pprof_snap_match(pprof_dec *d, int kind, size_t j,
                           const pb_field *f, uint64_t *id, uint64_t *addr)
{
	const pprof_snap *s = &d->snap;
	size_t base = kind == 0 ? 0 : kind == 1 ? s->nmaps : s->nmaps + s->nlocs;
	size_t count = kind == 0 ? s->nmaps : kind == 1 ? s->nlocs : s->nfuncs;
	if (j >= count)
		return false;
	const pprof_rec *r = &s->recs[base + j];
	if (r->len != f->len || !same_bytes(s->bytes + r->off, f->data, f->len))
		return false;
	*id = r->id;
	*addr = s->addr[base + j];
	return true;
}

static int
save_kind(pprof_dec *d, const pprof_rec *recs, size_t n, bool is_loc,
          size_t *at)
{
	pprof_snap *s = &d->snap;
	for (size_t i = 0; i < n; i++) {
		pprof_rec *r = &s->recs[*at];
		r->id = recs[i].id;
		r->off = (uint32_t)s->len;
		r->len = recs[i].len;
		s->addr[*at] = is_loc ? d->loc_addr[i] : 0;
		memcpy(s->bytes + s->len, d->buf + recs[i].off, recs[i].len);
		s->len += recs[i].len;
		(*at)++;
	}
	return 0;
}

int
heapprof__pprof_snap_save(pprof_dec *d)
{
	pprof_snap *s = &d->snap;
	size_t n = d->nmaps + d->nlocs + d->nfuncs, bytes = 0;
	for (size_t i = 0; i < d->nmaps; i++)
		bytes += d->maps[i].len;
	for (size_t i = 0; i < d->nlocs; i++)
		bytes += d->locs[i].len;
	for (size_t i = 0; i < d->nfuncs; i++)
		bytes += d->funcs[i].len;
	s->valid = false;
	if (bytes >= UINT32_MAX)
		return 0; /* no snapshot; opens just validate */
	if (n + 1 > s->rcap) {
		size_t c = s->rcap, c2 = s->rcap;
		HP_TRY(heapprof__pprof_grow(d, &s->recs, &c, n + 1,
		                            sizeof(pprof_rec)));
		HP_TRY(heapprof__pprof_grow(d, &s->addr, &c2, n + 1,
		                            sizeof(uint64_t)));
		s->rcap = c;
	}
	HP_TRY(heapprof__pprof_grow(d, &s->bytes, &s->cap, bytes + 1, 1));
	size_t at = 0;
	s->len = 0;
	save_kind(d, d->maps, d->nmaps, false, &at);
	save_kind(d, d->locs, d->nlocs, true, &at);
	save_kind(d, d->funcs, d->nfuncs, false, &at);
	s->n = n;
	s->nmaps = d->nmaps;
	s->nlocs = d->nlocs;
	s->nfuncs = d->nfuncs;
	s->nstrings = d->nstrings;
	s->gen++;
	s->valid = true;
	return 0;
}
