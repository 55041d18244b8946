/*
 * pprof_snap.c: the decoder's record snapshot (pprof_dec.h keep_records): a
 * copy of the last valid profile's Mapping, Location and Function messages.
 * A stream of profiles from one source repeats most of them byte for byte;
 * the index pass then keeps the ids, lengths and addresses its record
 * arrays still hold from the last open instead of parsing, and when every
 * record and the string count match, open skips validating them (they
 * passed last time: same bytes, same string range, same function ids).
 * The snapshot holds only bytes and segments: the record arrays are the
 * rest, so an open that fails (arrays half overwritten) invalidates it.
 */
#include <errno.h>
#include <string.h>

#include "heapprof.h"
#include "pprof_dec.h"
#include "pprof_int.h"

void
heapprof__pprof_snap_free(pprof_dec *d)
{
	pprof_snap *s = &d->snap;
	heapprof__pprof_release(d, &s->bytes, s->cap);
	heapprof__pprof_release(d, &s->segs, s->segcap * sizeof(pprof_seg));
	heapprof__pprof_release(d, &s->undo, s->undocap * sizeof(pprof_undo));
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

static pprof_rec *
kind_recs(const pprof_dec *d, int kind)
{
	return kind == 0 ? d->maps : kind == 1 ? d->locs : d->funcs;
}

bool
heapprof__pprof_snap_match(pprof_dec *d, int kind, size_t j,
                           const pb_field *f, uint64_t *id, uint64_t *addr)
{
	pprof_snap *s = &d->snap;
	size_t count = kind == 0 ? s->nmaps : kind == 1 ? s->nlocs : s->nfuncs;
	if (j >= count)
		return false;
	/* The segment holding record j (j only grows during an open). */
	size_t g = s->kseg[kind] + s->mseg[kind];
	while (g < s->kseg[kind + 1] &&
	       (size_t)s->segs[g].first + s->segs[g].count <= j) {
		g++;
		s->mseg[kind]++;
	}
	if (g >= s->kseg[kind + 1] || s->segs[g].first > j)
		return false;
	const pprof_seg *sg = &s->segs[g];
	const pprof_rec *r = &kind_recs(d, kind)[j];
	size_t so = sg->off + (size_t)(r->off - sg->in_at);
	if (r->len != f->len || !same_bytes(s->bytes + so, f->data, f->len))
		return false;
	*id = r->id;
	*addr = kind == 1 ? d->loc_addr[j] : 0;
	/* Its new offset no longer follows its segment's in_at. */
	s->resave = true;
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
add_seg(pprof_dec *d, size_t first, size_t count, size_t in_at, size_t len,
        bool framed)
{
	pprof_snap *s = &d->snap;
	HP_TRY(heapprof__pprof_grow(d, &s->segs, &s->segcap, s->nsegs + 1,
	                            sizeof(pprof_seg)));
	pprof_seg *g = &s->segs[s->nsegs++];
	g->first = (uint32_t)first;
	g->count = (uint32_t)count;
	g->off = (uint32_t)s->len;
	g->len = (uint32_t)len;
	g->in_at = (uint32_t)in_at;
	g->framed = framed;
	memcpy(s->bytes + s->len, d->buf + in_at, len);
	s->len += len;
	return 0;
}

/* Copies one kind's records: each maximal run of consecutive fields as it
 * was in the input (a framed segment), a record whose field cannot be
 * framed (unusual length encoding) as its payload only (a segment of its
 * own). */
static int
save_kind(pprof_dec *d, const pprof_rec *recs, size_t n, int kind)
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
			HP_TRY(add_seg(d, i, j - i, start, l, true));
			if (j - i > s->kmax[kind])
				s->kmax[kind] = j - i;
		} else {
			HP_TRY(add_seg(d, i, 1, recs[i].off, recs[i].len, false));
		}
		i = j;
	}
	s->kseg[kind + 1] = s->nsegs;
	return 0;
}

void
heapprof__pprof_snap_undo(pprof_dec *d)
{
	pprof_snap *s = &d->snap;
	while (s->nundo) {
		const pprof_undo *u = &s->undo[--s->nundo];
		kind_recs(d, (int)u->kind)[u->index] = u->rec;
		if (u->kind == 1)
			d->loc_addr[u->index] = u->addr;
	}
}

size_t
heapprof__pprof_snap_bulk(pprof_dec *d, int kind, size_t at, size_t n,
                          pprof_rec *recs)
{
	pprof_snap *s = &d->snap;
	size_t g = s->kseg[kind] + s->seg_at[kind];
	while (g < s->kseg[kind + 1] && s->segs[g].first < n) {
		g++;
		s->seg_at[kind]++;
	}
	if (g >= s->kseg[kind + 1] || s->segs[g].first != n)
		return 0;
	pprof_seg *sg = &s->segs[g];
	if (!sg->framed || sg->len > d->len - at ||
	    memcmp(d->buf + at, s->bytes + sg->off, sg->len) != 0)
		return 0;
	s->seg_at[kind]++;
	/* The records are the ones the arrays hold: same relative offsets
	 * in the run, which has moved from in_at to at. */
	uint32_t from = sg->in_at, to = (uint32_t)at;
	for (size_t i = 0; i < sg->count; i++)
		recs[n + i].off = recs[n + i].off - from + to;
	sg->in_at = to;
	return sg->len;
}

int
heapprof__pprof_snap_save(pprof_dec *d, bool new_gen)
{
	pprof_snap *s = &d->snap;
	size_t bytes = 0;
	/* Room for the framed runs: each record's tag and length too. */
	const pprof_rec *kinds[3] = {d->maps, d->locs, d->funcs};
	size_t counts[3] = {d->nmaps, d->nlocs, d->nfuncs};
	for (int k = 0; k < 3; k++)
		for (size_t i = 0; i < counts[k]; i++)
			bytes += 1 + heapprof__pb_varint_size(kinds[k][i].len) +
			         kinds[k][i].len;
	s->valid = false;
	if (bytes >= UINT32_MAX)
		return 0; /* no snapshot; opens just validate */
	if (bytes + 1 > s->cap) {
		/* Sized to the records with an eighth of slack, not doubled:
		 * the snapshot is most of a delta computer's decoder. */
		size_t c = bytes + bytes / 8 + 1;
		void *np = d->realloc_fn(d->realloc_ctx, s->bytes, s->cap, c);
		if (!np)
			return -ENOMEM;
		s->bytes = np;
		s->cap = c;
	}
	s->len = 0;
	s->nsegs = 0;
	HP_TRY(save_kind(d, d->maps, d->nmaps, 0));
	HP_TRY(save_kind(d, d->locs, d->nlocs, 1));
	HP_TRY(save_kind(d, d->funcs, d->nfuncs, 2));
	s->nmaps = d->nmaps;
	s->nlocs = d->nlocs;
	s->nfuncs = d->nfuncs;
	s->nstrings = d->nstrings;
	if (new_gen)
		s->gen++;
	s->resave = false;
	s->valid = true;
	return 0;
}
