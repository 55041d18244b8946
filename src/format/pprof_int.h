/*
 * pprof_int.h: internals shared by the decoder's files (pprof_dec.c: index
 * pass, samples; pprof_rec.c: location/function/mapping records and their
 * validation): inline varint and field helpers, scratch growth.
 */
#ifndef HEAPPROF_PPROF_INT_H
#define HEAPPROF_PPROF_INT_H

#include "heapprof.h"
#include "pprof_dec.h"

/* Grows a scratch array to `need` elements (doubling) through the
 * decoder's allocator; release frees one. */
int heapprof__pprof_grow(pprof_dec *d, void *pp, size_t *cap, size_t need,
                         size_t elem);
void heapprof__pprof_release(pprof_dec *d, void *pp, size_t bytes);

/* Validates every mapping, function and location (string indexes in
 * range, line functions resolvable); the id maps must be built. */
int heapprof__pprof_validate_records(pprof_dec *d);

/* Varint, inlined; bounds checked once when 10 bytes are available. */
HP_INLINE int
rd_varint(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
	const uint8_t *p = *pp;
	if (HP_LIKELY(end - p >= 10)) {
		uint64_t v = p[0];
		if (v < 0x80) {
			*out = v;
			*pp = p + 1;
			return 0;
		}
		v &= 0x7f;
		for (int i = 1; i < 10; i++) {
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
