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

/* True if the n records are consecutive fields with the given tag. */
static bool
contiguous(const pprof_dec *d, const pprof_rec *recs, size_t n, uint8_t tag)
{
	if (n == 0 || field_start(d, &recs[0], tag) == 0)
		return false;
	for (size_t i = 1; i < n; i++)
		if (field_start(d, &recs[i], tag) !=
		    (size_t)recs[i - 1].off + recs[i - 1].len)
			return false;
	return true;
}

static int
save_kind(pprof_dec *d, const pprof_rec *recs, size_t n, int kind,
          size_t *at)
{
	pprof_snap *s = &d->snap;
	static const uint8_t tags[3] = {0x1a, 0x22, 0x2a};
	bool run = contiguous(d, recs, n, tags[kind]);
	size_t start = run ? field_start(d, &recs[0], tags[kind]) : 0;
	s->run_ok[kind] = run;
	s->run_off[kind] = s->len;
	s->run_len[kind] = 0;
	if (run) {
		size_t l = (size_t)recs[n - 1].off + recs[n - 1].len - start;
		memcpy(s->bytes + s->len, d->buf + start, l);
		s->run_len[kind] = l;
	}
	for (size_t i = 0; i < n; i++) {
		pprof_rec *r = &s->recs[*at];
		r->id = recs[i].id;
		r->len = recs[i].len;
		s->addr[*at] = kind == 1 ? d->loc_addr[i] : 0;
		if (run) {
			r->off = (uint32_t)(s->run_off[kind] + recs[i].off - start);
		} else {
			r->off = (uint32_t)s->len;
			memcpy(s->bytes + s->len, d->buf + recs[i].off,
			       recs[i].len);
			s->len += recs[i].len;
		}
		(*at)++;
	}
	s->len += s->run_len[kind];
	return 0;
}

size_t
heapprof__pprof_snap_bulk(pprof_dec *d, int kind, size_t at, pprof_rec *recs,
                          uint64_t *addr)
{
	const pprof_snap *s = &d->snap;
	size_t l = s->run_len[kind];
	if (!s->run_ok[kind] || l > d->len - at ||
	    memcmp(d->buf + at, s->bytes + s->run_off[kind], l) != 0)
		return 0;
	size_t base = kind == 0 ? 0 : kind == 1 ? s->nmaps : s->nmaps + s->nlocs;
	size_t count = kind == 0 ? s->nmaps : kind == 1 ? s->nlocs : s->nfuncs;
	uint32_t shift = (uint32_t)at - (uint32_t)s->run_off[kind];
	for (size_t i = 0; i < count; i++) {
		recs[i].id = s->recs[base + i].id;
		recs[i].len = s->recs[base + i].len;
		recs[i].off = s->recs[base + i].off + shift;
	}
	if (addr)
		memcpy(addr, s->addr + base, count * sizeof(uint64_t));
	return l;
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
	save_kind(d, d->maps, d->nmaps, 0, &at);
	save_kind(d, d->locs, d->nlocs, 1, &at);
	save_kind(d, d->funcs, d->nfuncs, 2, &at);
	s->n = n;
	s->nmaps = d->nmaps;
	s->nlocs = d->nlocs;
	s->nfuncs = d->nfuncs;
	s->nstrings = d->nstrings;
	s->gen++;
	s->valid = true;
	return 0;
}
