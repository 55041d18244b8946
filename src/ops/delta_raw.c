/*
 * delta_raw.c: the delta computer's raw-sample cache. Within one
 * "dictionary" (the same location ids with the same nonzero addresses and
 * the same string table), a sample's identity is fixed by its bytes minus
 * its values field, so a sample whose bytes equal those recorded for a key
 * is that key: no varint decoding of the stack, no id lookups, no hashing.
 * The key is predicted from the last call's order (the key that followed
 * the previous one, else the next key id) and confirmed by memcmp, so a
 * profile written in the same order as the last one is one sequential pass.
 * Anything else (a changed dictionary, address-0 locations, unusual wire
 * forms, a wrong prediction) takes the exact slow path in delta.c, which
 * records the raw bytes for the next call.
 */
#include <errno.h>
#include <string.h>

#include "heapprof.h"
#include "delta.h"
#include "pprof_int.h"

void
heapprof__delta_raw_invalidate(heapprof_delta *d)
{
	for (size_t k = 0; k < d->keys.n; k++) {
		d->kraw[k].len = DELTA_RAW_NONE;
		d->kraw[k].next = DELTA_NONE;
		d->kraw[k].flags = 0;
	}
	d->raw_len = 0;
	d->raw_garbage = 0;
	d->khead = DELTA_NONE;
	d->have_dict = false;
}

void
heapprof__delta_raw_free(heapprof_delta *d)
{
	heapprof__delta_release(d, &d->kraw, d->kcap * sizeof(delta_kraw));
	heapprof__delta_release(d, &d->raw, d->raw_cap);
	heapprof__delta_release(d, &d->ps, d->ps_cap);
	heapprof__delta_release(d, &d->ps_lens, d->ps_lcap * 4);
}

/* The byte range of the input's string table when its strings are
 * consecutive fields (tag, minimal length, bytes), as every pprof writer
 * puts them; false otherwise. */
static bool
string_region(const pprof_dec *dec, size_t *start, size_t *end)
{
	size_t n = dec->nstrings, at = 0;
	for (size_t i = 0; i < n; i++) {
		size_t hdr = 1 + heapprof__pb_varint_size(dec->str.len[i]);
		size_t s0 = dec->str.off[i] - hdr;
		if (dec->str.off[i] < hdr || dec->buf[s0] != 0x32 ||
		    (i && s0 != at))
			return false;
		if (i == 0)
			*start = s0;
		at = (size_t)dec->str.off[i] + dec->str.len[i];
	}
	*end = at;
	return n != 0;
}

/* True if the input's locations and strings are the snapshot's. */
static bool
same_dict(const heapprof_delta *d)
{
	const pprof_dec *dec = &d->dec;
	/* records_same: the decoder found this profile's mappings, locations
	 * and functions byte-identical to its snapshot, and dict_gen says the
	 * raw records were built under that snapshot. */
	if (!d->have_dict || !dec->records_same ||
	    dec->snap.gen != d->dict_gen || dec->nstrings != d->ps_n)
		return false;
	if (d->ps_region) {
		/* The stored table was n consecutive string fields: the same
		 * bytes from the input's first string on are the same n
		 * strings. */
		size_t n = dec->nstrings;
		size_t hdr = 1 + heapprof__pb_varint_size(dec->str.len[0]);
		size_t s0 = dec->str.off[0] - hdr;
		size_t e = (size_t)dec->str.off[n - 1] + dec->str.len[n - 1];
		return dec->str.off[0] >= hdr && e - s0 == d->ps_len &&
		       memcmp(dec->buf + s0, d->ps, d->ps_len) == 0;
	}
	size_t off = 0;
	for (size_t i = 0; i < dec->nstrings; i++) {
		size_t l;
		const char *s = heapprof__pprof_string(dec, i, &l);
		if (l != d->ps_lens[i] || memcmp(d->ps + off, s, l) != 0)
			return false;
		off += l;
	}
	return true;
}

static int
snapshot(heapprof_delta *d)
{
	const pprof_dec *dec = &d->dec;
	if (!dec->snap.valid)
		return 0; /* no record snapshot: no raw cache this call */
	size_t rs, re;
	d->ps_n = dec->nstrings;
	d->ps_region = string_region(dec, &rs, &re);
	if (d->ps_region) {
		HP_TRY(heapprof__delta_grow(d, &d->ps, &d->ps_cap, re - rs + 1,
		                            1));
		memcpy(d->ps, dec->buf + rs, re - rs);
		d->ps_len = re - rs;
	} else {
		size_t total = 0;
		for (size_t i = 0; i < dec->nstrings; i++) {
			size_t l;
			heapprof__pprof_string(dec, i, &l);
			total += l;
		}
		HP_TRY(heapprof__delta_grow(d, &d->ps_lens, &d->ps_lcap,
		                            dec->nstrings + 1, 4));
		HP_TRY(heapprof__delta_grow(d, &d->ps, &d->ps_cap, total + 1,
		                            1));
		size_t off = 0;
		for (size_t i = 0; i < dec->nstrings; i++) {
			size_t l;
			const char *s = heapprof__pprof_string(dec, i, &l);
			memcpy(d->ps + off, s, l);
			d->ps_lens[i] = (uint32_t)l;
			off += l;
		}
		d->ps_len = off;
	}
	d->dict_gen = dec->snap.gen;
	d->have_dict = true;
	d->dict_nlocs = dec->nlocs;
	d->dict_seq = true;
	for (size_t i = 0; i < dec->nlocs && d->dict_seq; i++)
		d->dict_seq = dec->locs[i].id == i + 1;
	return 0;
}

int
heapprof__delta_raw_prepare(heapprof_delta *d)
{
	const pprof_dec *dec = &d->dec;
	d->klast = DELTA_NONE;
	/* Address-0 locations are identified by their lines' contents, which
	 * the snapshot does not cover: no raw cache for such profiles. */
	bool ok = dec->ntypes <= DELTA_RAW_MAXT &&
	          !(d->slow_only & DELTA_SLOW_NORAW);
	for (size_t i = 0; i < dec->nlocs && ok; i++)
		ok = dec->loc_addr[i] != 0;
	if (ok && same_dict(d)) {
		d->raw_ok = true;
		d->dict_changes = 0;
		return 0;
	}
	/* The last dictionary's records and frames are still here. */
	HP_TRY(heapprof__delta_materialize(d));
	heapprof__delta_raw_invalidate(d);
	d->dict_seq = false;
	memset(d->loc_frame, 0xff, dec->nlocs * 4);
	d->raw_ok = false;
	if (!ok)
		return 0;
	HP_TRY(snapshot(d));
	/* A stream whose dictionary changes at every call (alternating
	 * sources) would only pay for recording: record again every 8th
	 * call until it settles. */
	d->dict_changes++;
	d->raw_ok = d->have_dict && (d->dict_changes <= 2 || d->gen % 8 == 0);
	return 0;
}

/* Splits a sample body around its one packed values field (tag 0x12):
 * identity = [body, vs) + [ve, end). Only the one-byte tags pprof writers
 * use (packed ids, values and labels, and single unpacked ids, which Go's
 * runtime writes for stacks of one or two frames); anything else returns
 * -1 (slow path). */
HP_INLINE int
split(const uint8_t *body, size_t len, const uint8_t *hard,
      const uint8_t **vs, const uint8_t **ve, const uint8_t **vd)
{
	const uint8_t *p = body, *e = body + len;
	*vs = NULL;
	while (p < e) {
		uint8_t tag = *p;
		const uint8_t *q = p + 1;
		uint64_t n;
		if (tag == 0x08) {
			if (rd_varint(&q, hard, &n) < 0 || q > e)
				return -1;
			p = q;
			continue;
		}
		if (tag != 0x0a && tag != 0x12 && tag != 0x1a)
			return -1;
		if (rd_varint(&q, hard, &n) < 0 || q > e ||
		    n > (uint64_t)(e - q))
			return -1;
		if (tag == 0x12) {
			if (*vs)
				return -1;
			*vs = p;
			*vd = q;
			*ve = q + n;
		}
		p = q + n;
	}
	return *vs ? 0 : -1;
}

HP_INLINE bool
eq8(const uint8_t *a, const uint8_t *b)
{
	uint64_t x, y;
	memcpy(&x, a, 8);
	memcpy(&y, b, 8);
	return x == y;
}

HP_INLINE bool
eq4(const uint8_t *a, const uint8_t *b)
{
	uint32_t x, y;
	memcpy(&x, a, 4);
	memcpy(&y, b, 4);
	return x == y;
}

/* memcmp(a, b, n) == 0 for the short runs of a sample: 8 bytes a step,
 * the tail as one overlapping load. */
HP_INLINE bool
same(const uint8_t *a, const uint8_t *b, size_t n)
{
	if (n >= 8) {
		for (size_t i = 0; i + 8 < n; i += 8)
			if (!eq8(a + i, b + i))
				return false;
		return eq8(a + n - 8, b + n - 8);
	}
	if (n >= 4)
		return eq4(a, b) && eq4(a + n - 4, b + n - 4);
	while (n--)
		if (*a++ != *b++)
			return false;
	return true;
}

/* True if the sample body is key c's recorded bytes around a values field
 * (tag 0x12 at offset la); [*vs, *ve) is then that field's payload. The
 * body parses exactly as the recorded sample did, values aside. */
HP_INLINE bool
try_key(const heapprof_delta *d, uint32_t c, const uint8_t *body,
        size_t len, const uint8_t **vs, const uint8_t **ve)
{
	if (c >= d->keys.n)
		return false;
	const delta_kraw *r = &d->kraw[c];
	size_t la = r->la;
	if (r->len == DELTA_RAW_NONE || la >= len || body[la] != 0x12)
		return false;
	const uint8_t *hard = d->dec.buf + d->dec.len, *e = body + len;
	const uint8_t *q = body + la + 1;
	uint64_t vlen;
	if (rd_varint(&q, hard, &vlen) < 0 || q > e ||
	    vlen > (uint64_t)(e - q))
		return false;
	size_t lb = (size_t)(e - q - vlen);
	const uint8_t *rb = d->raw + r->off;
	if (lb != (size_t)r->len - la || !same(rb, body, la) ||
	    !same(rb + la, q + vlen, lb))
		return false;
	*vs = q;
	*ve = q + vlen;
	return true;
}

/* Decodes exactly nt varints from [q, ve) into out; false otherwise. */
HP_INLINE bool
values_at(const uint8_t *q, const uint8_t *ve, const uint8_t *hard,
          size_t nt, uint64_t *out)
{
	size_t n = 0;
	while (q < ve && n < nt) {
		uint64_t v;
		if (HP_LIKELY(*q < 0x80))
			v = *q++;
		else if (rd_varint(&q, hard, &v) < 0)
			return false;
		out[n++] = v;
	}
	return q == ve && n == nt;
}

int
heapprof__delta_raw_pass(heapprof_delta *d)
{
	pprof_dec *dec = &d->dec;
	const uint8_t *base = dec->buf;
	const uint8_t *p = base + dec->first_sample, *end = base + dec->end_sample;
	const uint8_t *hard = dec->buf + dec->len;
	size_t nt = dec->ntypes;
	uint64_t vals[DELTA_RAW_MAXT];
	while (p < end) {
		const uint8_t *body;
		size_t blen;
		if (HP_LIKELY(*p == 0x12)) {
			const uint8_t *q = p + 1;
			uint64_t v;
			HP_TRY(rd_varint(&q, end, &v));
			if (v > (uint64_t)(end - q))
				return HEAPPROF_ELENGTH;
			body = q;
			blen = (size_t)v;
			p = q + v;
		} else {
			/* Another field between samples (index_pass checked
			 * every sample's wire type). */
			pb_reader r = {p, end};
			pb_field f;
			HP_TRY(heapprof__pb_next(&r, &f));
			p = r.p;
			if (f.num != PPROF_SAMPLE)
				continue;
			body = f.data;
			blen = f.len;
		}
		d->last_in++;
		if (blen >= DELTA_ITEM_SAME)
			return HEAPPROF_ETOOBIG; /* its length must fit 31 bits */
		uint32_t off = (uint32_t)(body - base);
		/* The key that followed the previous one last time, else the
		 * next key id. */
		uint32_t c = d->klast == DELTA_NONE ? d->khead
		                                    : d->kraw[d->klast].next;
		const uint8_t *vs, *ve;
		if (!try_key(d, c, body, blen, &vs, &ve)) {
			c = d->klast == DELTA_NONE ? 0 : d->klast + 1;
			if (!try_key(d, c, body, blen, &vs, &ve))
				goto slow;
		}
		delta_kraw *r = &d->kraw[c];
		size_t vl = (size_t)(ve - vs);
		if (HP_LIKELY(d->kgen[c] != d->gen)) {
			HP_TRY(heapprof__delta_item_room(d));
			if ((r->flags & DELTA_KRAW_VALS) && vl == r->vl &&
			    same(d->raw + r->off + r->len, vs, vl)) {
				/* Values as in the last call: no decoding, no
				 * accumulator; emit and commit know. */
				heapprof__delta_item_new(
					d, c, off, (uint32_t)blen | DELTA_ITEM_SAME,
					DELTA_NONE);
			} else {
				/* Changed values: kept as the key's stored values
				 * where they fit (emit and commit read them
				 * there), else decoded into an accumulator row.
				 * No row for the common case, so a call whose
				 * values all changed needs no more memory than
				 * one whose values did not. */
				if (!values_at(vs, ve, hard, nt, vals))
					goto slow; /* the decoder says why */
				uint32_t row = DELTA_NONE;
				r->flags = 0;
				if (vl <= r->vcap) {
					memcpy(d->raw + r->off + r->len, vs, vl);
					r->vl = (uint8_t)vl;
					r->flags = DELTA_KRAW_VALS |
					           (heapprof__delta_nonsub_zero(d, vals)
					                    ? DELTA_KRAW_NZ0
					                    : 0);
				} else {
					HP_TRY(heapprof__delta_acc_row(d, &row));
					memcpy(d->acc + (size_t)row * nt, vals,
					       nt * 8);
				}
				heapprof__delta_item_new(d, c, off, (uint32_t)blen,
				                         row);
			}
		} else {
			if (!values_at(vs, ve, hard, nt, vals))
				goto slow;
			HP_TRY(heapprof__delta_unsame(d, c));
			uint64_t *acc =
				d->acc + (size_t)d->items[d->kpos[c]].arow * nt;
			for (size_t t = 0; t < nt; t++)
				acc[t] += vals[t];
		}
		d->raw_hits++;
		heapprof__delta_raw_link(d, c);
		continue;
	slow:
		HP_TRY(heapprof__delta_slow_sample(d, off, (uint32_t)blen));
	}
	return 0;
}

/* Every item of this call so far takes its values out of the raw records
 * into an accumulator row (the records are about to go). */
static int
items_to_rows(heapprof_delta *d)
{
	for (size_t i = 0; i < d->nitems; i++) {
		delta_item *it = &d->items[i];
		if (it->arow != DELTA_NONE)
			continue;
		uint32_t row;
		HP_TRY(heapprof__delta_acc_row(d, &row));
		HP_TRY(heapprof__delta_stored_values(
			d, it->kid, d->acc + (size_t)row * d->dec.ntypes));
		it->arow = row;
		it->len &= ~DELTA_ITEM_SAME;
	}
	return 0;
}

int
heapprof__delta_raw_record(heapprof_delta *d, uint32_t kid, uint32_t off,
                           uint32_t len, const int64_t *values)
{
	const uint8_t *body = d->dec.buf + off, *hard = d->dec.buf + d->dec.len;
	const uint8_t *vs = NULL, *ve = NULL, *vd = NULL;
	/* Whatever happens below, values stored for this key by an earlier
	 * call no longer stand for what this call commits. */
	d->kraw[kid].flags = 0;
	if (split(body, len, hard, &vs, &ve, &vd) < 0)
		return 0;
	size_t la = (size_t)(vs - body), lb = (size_t)(body + len - ve);
	size_t n = la + lb, vl = (size_t)(ve - vd);
	/* Room for the values field to grow a little in place. */
	size_t vcap = vl <= 253 ? vl + 2 : 0;
	delta_kraw *r = &d->kraw[kid];
	if (n >= DELTA_RAW_NONE)
		return 0; /* not cached */
	size_t have = r->len == DELTA_RAW_NONE ? 0 : (size_t)r->len + r->vcap;
	if (have && have >= n + vcap) {
		/* Fits where the old bytes were. */
		vcap = have - n > 255 ? 255 : have - n;
		d->raw_garbage += have - n - vcap;
	} else {
		d->raw_garbage += have;
		if (d->raw_garbage > 65536 && d->raw_garbage * 2 > d->raw_len) {
			/* Mostly dead bytes: start over (keeps capacity). */
			uint32_t head = d->khead;
			HP_TRY(heapprof__delta_materialize(d));
			HP_TRY(items_to_rows(d));
			d->raw_restarts++;
			heapprof__delta_raw_invalidate(d);
			d->khead = head;
			d->have_dict = true;
		}
		if (d->raw_len + n + vcap > UINT32_MAX)
			return 0;
		HP_TRY(heapprof__delta_grow(d, &d->raw, &d->raw_cap,
		                            d->raw_len + n + vcap + 1, 1));
		r->off = (uint32_t)d->raw_len;
		d->raw_len += n + vcap;
	}
	memcpy(d->raw + r->off, body, la);
	memcpy(d->raw + r->off + la, ve, lb);
	r->len = (uint16_t)n;
	r->la = (uint16_t)la;
	r->vcap = (uint8_t)vcap;
	r->flags = 0;
	/* A second sample of the key this call: no single stored values. */
	if (vl <= vcap && d->kgen[kid] != d->gen) {
		bool z = heapprof__delta_nonsub_zero(
			d, (const uint64_t *)(const void *)values);
		memcpy(d->raw + r->off + n, vd, vl);
		r->vl = (uint8_t)vl;
		r->flags = DELTA_KRAW_VALS | (z ? DELTA_KRAW_NZ0 : 0);
	}
	return 0;
}

void
heapprof__delta_raw_novals(heapprof_delta *d)
{
	for (size_t k = 0; k < d->keys.n; k++)
		d->kraw[k].flags = 0;
}

/* The values of the sample at (off, len) into out (nt of them). */
int
heapprof__delta_values_of(const heapprof_delta *d, uint32_t off, uint32_t len,
                          uint64_t *out)
{
	const uint8_t *body = d->dec.buf + off, *hard = d->dec.buf + d->dec.len;
	const uint8_t *vs = NULL, *ve = NULL, *vd = NULL;
	if (split(body, len, hard, &vs, &ve, &vd) < 0 ||
	    !values_at(vd, ve, hard, d->dec.ntypes, out))
		return HEAPPROF_EVALUES; /* cannot happen: it matched */
	return 0;
}

void
heapprof__delta_stored_prefix(const heapprof_delta *d, uint32_t kid, size_t n,
                              uint64_t *out)
{
	const delta_kraw *r = &d->kraw[kid];
	const uint8_t *q = d->raw + r->off + r->len;
	/* The arena's end bounds the reads, as in stored_values. */
	const uint8_t *hard = d->raw + d->raw_cap;
	for (size_t t = 0; t < n; t++) {
		uint64_t v = 0;
		if (HP_LIKELY(*q < 0x80))
			v = *q++;
		else if (rd_varint(&q, hard, &v) < 0)
			v = 0; /* cannot happen: parsed whole when stored */
		out[t] = v;
	}
}

int
heapprof__delta_stored_values(const heapprof_delta *d, uint32_t kid,
                              uint64_t *out)
{
	const delta_kraw *r = &d->kraw[kid];
	const uint8_t *q = d->raw + r->off + r->len, *e = q + r->vl;
	/* The arena's end bounds the reads (values_at still wants the field
	 * parsed to exactly e): no slow tail for the last varints. */
	if (!(r->flags & DELTA_KRAW_VALS) ||
	    !values_at(q, e, d->raw + d->raw_cap, d->dec.ntypes, out))
		return HEAPPROF_EVALUES; /* cannot happen: kept when valid */
	return 0;
}

int
heapprof__delta_unsame(heapprof_delta *d, uint32_t kid)
{
	delta_item *it = &d->items[d->kpos[kid]];
	if (it->arow == DELTA_NONE) {
		/* Unchanged or recorded: the values so far are the stored
		 * ones. */
		uint32_t row;
		HP_TRY(heapprof__delta_acc_row(d, &row));
		HP_TRY(heapprof__delta_stored_values(
			d, kid, d->acc + (size_t)row * d->dec.ntypes));
		it->arow = row;
		it->len &= ~DELTA_ITEM_SAME;
	}
	d->kraw[kid].flags = 0;
	return 0;
}
