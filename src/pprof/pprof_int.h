/*
 * pprof_int.h: internals shared by the decoder's files (pprof_dec.c: index
 * pass, samples; pprof_rec.c: location/function/mapping records and their
 * validation): inline varint and field helpers, scratch growth.
 */
#ifndef HEAPPROF_PPROF_INT_H
#define HEAPPROF_PPROF_INT_H

#include <string.h>

#include "heapprof.h"
#include "pprof_dec.h"

/* heapprof__grow and heapprof__release through the decoder's allocator. */
HP_INLINE int
heapprof__pprof_grow(pprof_dec *d, void *pp, size_t *cap, size_t need,
                     size_t elem)
{
	return heapprof__grow(d->realloc_fn, d->realloc_ctx, pp, cap, need, elem);
}
HP_INLINE void
heapprof__pprof_release(pprof_dec *d, void *pp, size_t bytes)
{
	heapprof__release(d->realloc_fn, d->realloc_ctx, pp, bytes);
}

/* Returns rc after writing fault (pprof_dec.fault): what was wrong. */
int heapprof__pprof_fault(pprof_dec *d, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Validates every mapping, function and location (string indexes in
 * range, line functions resolvable); the id maps must be built. */
int heapprof__pprof_validate_records(pprof_dec *d);

/* A varint of at most 8 bytes from one little-endian 64-bit load: the
 * first clear top bit ends it, and its 7-bit groups are packed with three
 * shift/mask steps. Returns its length, or 0 if longer than 8 bytes. The
 * caller guarantees 8 readable bytes at p. */
HP_INLINE int
varint8(const uint8_t *p, uint64_t *out)
{
	uint64_t w;
	memcpy(&w, p, 8);
	uint64_t stop = ~w & 0x8080808080808080ULL;
	if (HP_UNLIKELY(stop == 0))
		return 0;
	int n = (__builtin_ctzll(stop) >> 3) + 1;
	uint64_t x = n == 8 ? w : w & ((1ULL << (8 * n)) - 1);
	x &= 0x7f7f7f7f7f7f7f7fULL;
	x = ((x & 0x7f007f007f007f00ULL) >> 1) | (x & 0x007f007f007f007fULL);
	x = ((x & 0x3fff00003fff0000ULL) >> 2) | (x & 0x00003fff00003fffULL);
	x = ((x & 0x0fffffff00000000ULL) >> 4) | (x & 0x000000000fffffffULL);
	*out = x;
	return n;
}

/* Varint, inlined: one- and two-byte values first, then varint8 when 8
 * bytes are readable, else the bounds-checked reader. */
HP_INLINE int
rd_varint(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
	const uint8_t *p = *pp;
	if (HP_LIKELY(end - p >= 10)) {
		if (*p < 0x80) {
			*out = *p;
			*pp = p + 1;
			return 0;
		}
		if (p[1] < 0x80) {
			*out = (uint64_t)(p[0] & 0x7f) | (uint64_t)p[1] << 7;
			*pp = p + 2;
			return 0;
		}
		if (p[2] < 0x80) {
			*out = (uint64_t)(p[0] & 0x7f) |
			       (uint64_t)(p[1] & 0x7f) << 7 | (uint64_t)p[2] << 14;
			*pp = p + 3;
			return 0;
		}
		int n = varint8(p, out);
		if (HP_LIKELY(n)) {
			*pp = p + n;
			return 0;
		}
		uint64_t v = 0;
		for (int i = 0; i < 10; i++) {
			uint64_t b = p[i];
			v |= (b & 0x7f) << (7 * i);
			if (b < 0x80) {
				if (i == 9 && b > 1)
					return HEAPPROF_EVARINT;
				*out = v;
				*pp = p + i + 1;
				return 0;
			}
		}
		return HEAPPROF_EVARINT;
	}
	pb_reader r = {p, end};
	int rc = heapprof__pb_read_varint(&r, out);
	*pp = r.p;
	return rc;
}

/* Wire tags (field number << 3 | wire type), one byte each, that the
 * byte-level readers match: the form every pprof writer uses. */
enum {
	TAG_SAMPLE = PPROF_SAMPLE << 3 | PB_LEN,                 /* Profile */
	TAG_STRING = PPROF_STRING_TABLE << 3 | PB_LEN,
	TAG_SAMPLE_LOCATION_ID = 1 << 3 | PB_VARINT,  /* Sample: one id */
	TAG_SAMPLE_LOCATION_IDS = 1 << 3 | PB_LEN,    /* packed ids */
	TAG_SAMPLE_VALUES = 2 << 3 | PB_LEN,          /* packed values */
	TAG_SAMPLE_LABEL = 3 << 3 | PB_LEN,
	TAG_LABEL_KEY = 1 << 3 | PB_VARINT,           /* Label */
	TAG_LABEL_STR = 2 << 3 | PB_VARINT,
	TAG_LABEL_NUM = 3 << 3 | PB_VARINT,
	TAG_LABEL_NUM_UNIT = 4 << 3 | PB_VARINT,
};

/* The one reader of a Sample's fields in the usual form, for every
 * consumer (the decoder, the delta computer's identity, values and
 * output): the field at *pp (before e) with a one-byte tag of
 * location_id (one id, or packed), value (packed) or label, whose
 * varint or length ends in e (read up to hard). 1: *tag and *v (the id,
 * or the length: the data at *pp) set; 0: another form or a fault, for
 * the general reader (heapprof__pb_next) to read or report. */
HP_INLINE int
sample_field(const uint8_t **pp, const uint8_t *e, const uint8_t *hard,
             uint8_t *tag, uint64_t *v)
{
	const uint8_t *q = *pp + 1;
	uint8_t t = **pp;
	if ((t != TAG_SAMPLE_LOCATION_ID && t != TAG_SAMPLE_LOCATION_IDS &&
	     t != TAG_SAMPLE_VALUES && t != TAG_SAMPLE_LABEL) ||
	    rd_varint(&q, hard, v) < 0 || q > e ||
	    (t != TAG_SAMPLE_LOCATION_ID && *v > (uint64_t)(e - q)))
		return 0;
	*tag = t;
	*pp = q;
	return 1;
}

/* The next varint of a packed run [*q, fe) (*q < fe): false if it does
 * not end in the run. */
HP_INLINE bool
packed_next(const uint8_t **q, const uint8_t *fe, const uint8_t *hard,
            uint64_t *v)
{
	if (HP_LIKELY(**q < 0x80)) {
		*v = *(*q)++;
		return true;
	}
	return rd_varint(q, hard, v) == 0 && *q <= fe;
}

/* A Label's payload [q, e) in the usual form (one-byte tags of its
 * varint fields, string indexes below nstrings) into f[1..4] (key, str,
 * num, num_unit; the last of a repeated field wins): true; another form
 * or a fault: false. */
HP_INLINE bool
label_fields(const uint8_t *q, const uint8_t *e, const uint8_t *hard,
             size_t nstrings, uint64_t f[5])
{
	memset(f, 0, 5 * sizeof(uint64_t));
	while (q < e) {
		uint8_t t = *q++;
		uint64_t v;
		if ((t != TAG_LABEL_KEY && t != TAG_LABEL_STR &&
		     t != TAG_LABEL_NUM && t != TAG_LABEL_NUM_UNIT) ||
		    rd_varint(&q, hard, &v) < 0 || q > e ||
		    (t != TAG_LABEL_NUM && v >= nstrings))
			return false;
		f[t >> 3] = v;
	}
	return true;
}

/* A string index field: must fit 32 bits (negative int64 does not). */
HP_INLINE int
str_idx(uint64_t v, uint32_t *out)
{
	if (v > UINT32_MAX)
		return HEAPPROF_EINDEX;
	*out = (uint32_t)v;
	return 0;
}

HP_INLINE int
want(const pb_field *f, int wire)
{
	return f->wire == wire ? 0 : HEAPPROF_EWIRETYPE;
}

/* heapprof__pb_next with an inline fast path for one-byte tags of varint
 * and length-delimited fields; varints may be read up to `hard` (the end of
 * the buffer, for the 10-byte fast path) and anything unusual or crossing
 * r->end is redone by heapprof__pb_next, so the error codes are the same. */
HP_INLINE int
fnext(pb_reader *r, const uint8_t *hard, pb_field *f)
{
	const uint8_t *p = r->p;
	uint8_t tag = *p;
	if (HP_LIKELY(tag >= 8 && tag < 0x80 && ((tag & 7) == PB_VARINT ||
	                                         (tag & 7) == PB_LEN))) {
		const uint8_t *q = p + 1;
		uint64_t v;
		if (HP_LIKELY(rd_varint(&q, hard, &v) == 0 && q <= r->end)) {
			f->num = tag >> 3;
			f->wire = tag & 7;
			f->v = v;
			if (f->wire == PB_VARINT) {
				f->data = NULL;
				f->len = 0;
				r->p = q;
				return 0;
			}
			if (HP_LIKELY(v <= (uint64_t)(r->end - q))) {
				f->data = q;
				f->len = (size_t)v;
				r->p = q + v;
				return 0;
			}
		}
	}
	return heapprof__pb_next(r, f);
}

HP_INLINE size_t
id_hash(uint64_t id)
{
	id ^= id >> 33;
	id *= 0xff51afd7ed558ccdULL;
	id ^= id >> 29;
	return (size_t)id;
}

HP_INLINE long
idmap_find(const pprof_idmap *m, const pprof_rec *recs, uint64_t id)
{
	if (m->dense) {
		if (id == 0 || id >= m->used)
			return -1;
		return (long)m->slots[id] - 1;
	}
	if (id == 0 || m->used == 0)
		return -1;
	size_t mask = m->used - 1;
	size_t h = id_hash(id) & mask;
	while (m->slots[h]) {
		uint32_t i = m->slots[h] - 1;
		if (recs[i].id == id)
			return (long)i;
		h = (h + 1) & mask;
	}
	return -1;
}

#endif
