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
	heapprof__pprof_release(d, &s->segs, s->segcap * sizeof(pprof_seg));
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

/* Start of the field whose payload is rec r (tag and minimal length
 * before it), or 0 if the bytes there are not that. */
static size_t
field_start(const pprof_dec *d, const pprof_rec *r, uint8_t tag)
{
	size_t hdr = 1 + heapprof__pb_varint_size(r->len);
	if (r->off < hdr || d->buf[r->off - hdr] != tag)
		return 0;
	return r->off - hdr;
}

static int
add_seg(pprof_dec *d, uint32_t first, uint32_t count, uint32_t off,
        uint32_t len)
{
	pprof_snap *s = &d->snap;
	HP_TRY(heapprof__pprof_grow(d, &s->segs, &s->segcap, s->nsegs + 1,
	                            sizeof(pprof_seg)));
	pprof_seg *g = &s->segs[s->nsegs++];
	g->first = first;
	g->count = count;
	g->off = off;
	g->len = len;
	return 0;
}

/* Copies one kind's records: each maximal run of consecutive fields as it
 * was in the input (a segment), a record whose field cannot be framed
 * (unusual length encoding) as its payload only. */
static int
save_kind(pprof_dec *d, const pprof_rec *recs, size_t n, int kind,
          size_t *at)
{
	pprof_snap *s = &d->snap;
	static const uint8_t tags[3] = {0x1a, 0x22, 0x2a};
	s->kseg[kind] = s->nsegs;
	s->kmax[kind] = 0;
	size_t i = 0;
	while (i < n) {
		size_t start = field_start(d, &recs[i], tags[kind]);
		size_t j = i + 1;
		if (start) {
			while (j < n && field_start(d, &recs[j], tags[kind]) ==
			                        (size_t)recs[j - 1].off + recs[j - 1].len)
				j++;
			size_t l = (size_t)recs[j - 1].off + recs[j - 1].len - start;
			HP_TRY(add_seg(d, (uint32_t)i, (uint32_t)(j - i),
			               (uint32_t)s->len, (uint32_t)l));
			if (j - i > s->kmax[kind])
				s->kmax[kind] = j - i;
			memcpy(s->bytes + s->len, d->buf + start, l);
		} else {
			memcpy(s->bytes + s->len, d->buf + recs[i].off,
			       recs[i].len);
		}
		for (size_t k = i; k < j; k++) {
			pprof_rec *r = &s->recs[*at + k];
			r->id = recs[k].id;
			r->len = recs[k].len;
			r->off = (uint32_t)(s->len + (start ? recs[k].off - start : 0));
			s->addr[*at + k] = kind == 1 ? d->loc_addr[k] : 0;
		}
		s->len += start ? (size_t)recs[j - 1].off + recs[j - 1].len - start
		                : recs[i].len;
		i = j;
	}
	*at += n;
	s->kseg[kind + 1] = s->nsegs;
	return 0;
}

size_t
heapprof__pprof_snap_bulk(pprof_dec *d, int kind, size_t at, size_t n,
                          pprof_rec *recs, uint64_t *addr)
{
	pprof_snap *s = &d->snap;
	size_t g = s->kseg[kind] + s->seg_at[kind];
	while (g < s->kseg[kind + 1] && s->segs[g].first < n) {
		g++;
		s->seg_at[kind]++;
	}
	if (g >= s->kseg[kind + 1] || s->segs[g].first != n)
		return 0;
	const pprof_seg *sg = &s->segs[g];
	if (sg->len > d->len - at ||
	    memcmp(d->buf + at, s->bytes + sg->off, sg->len) != 0)
		return 0;
	s->seg_at[kind]++;
	size_t base = kind == 0 ? 0 : kind == 1 ? s->nmaps : s->nmaps + s->nlocs;
	base += n;
	uint32_t shift = (uint32_t)at - sg->off;
	for (size_t i = 0; i < sg->count; i++) {
		recs[n + i].id = s->recs[base + i].id;
		recs[n + i].len = s->recs[base + i].len;
		recs[n + i].off = s->recs[base + i].off + shift;
	}
	if (addr)
		memcpy(addr + n, s->addr + base, sg->count * sizeof(uint64_t));
	return sg->len;
}

int
heapprof__pprof_snap_save(pprof_dec *d)
{
	pprof_snap *s = &d->snap;
	size_t n = d->nmaps + d->nlocs + d->nfuncs, bytes = 0;
	/* Room for the framed runs: each record's tag and length too. */
	for (size_t i = 0; i < d->nmaps; i++)
		bytes += d->maps[i].len + 11;
	for (size_t i = 0; i < d->nlocs; i++)
		bytes += d->locs[i].len + 11;
	for (size_t i = 0; i < d->nfuncs; i++)
		bytes += d->funcs[i].len + 11;
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
	s->nsegs = 0;
	HP_TRY(save_kind(d, d->maps, d->nmaps, 0, &at));
	HP_TRY(save_kind(d, d->locs, d->nlocs, 1, &at));
	HP_TRY(save_kind(d, d->funcs, d->nfuncs, 2, &at));
	s->n = n;
	s->nmaps = d->nmaps;
	s->nlocs = d->nlocs;
	s->nfuncs = d->nfuncs;
	s->nstrings = d->nstrings;
	s->gen++;
	s->valid = true;
	return 0;
}
