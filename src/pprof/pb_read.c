/*
 * pb_read.c: the protobuf wire decoder: a pull cursor over the fields of
 * one message. Every read is bounds-checked against the enclosing message;
 * nothing is allocated. Schema knowledge (which field is which) lives in the
 * pprof decoder on top of it.
 */
#include "heapprof.h"
#include "pb.h"

int
heapprof__pb_read_varint(pb_reader *r, uint64_t *out)
{
	uint64_t v = 0;
	for (int shift = 0; shift < 70; shift += 7) {
		if (HP_UNLIKELY(r->p >= r->end))
			return HEAPPROF_ETRUNC;
		uint8_t b = *r->p++;
		if (shift == 63 && b > 1)
			return HEAPPROF_EVARINT;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = v;
			return 0;
		}
	}
	return HEAPPROF_EVARINT;
}

int
heapprof__pb_next(pb_reader *r, pb_field *f)
{
	uint64_t tag;
	HP_TRY(heapprof__pb_read_varint(r, &tag));
	uint64_t num = tag >> 3;
	if (num == 0 || num > 0x1fffffff)
		return HEAPPROF_EWIRETYPE;
	f->num = (uint32_t)num;
	f->wire = (uint8_t)(tag & 7);
	f->data = NULL;
	f->len = 0;
	switch (f->wire) {
	case PB_VARINT:
		return heapprof__pb_read_varint(r, &f->v);
	case PB_I64:
		if (r->end - r->p < 8)
			return HEAPPROF_ETRUNC;
		f->v = 0;
		for (int i = 7; i >= 0; i--)
			f->v = (f->v << 8) | r->p[i];
		r->p += 8;
		return 0;
	case PB_I32:
		if (r->end - r->p < 4)
			return HEAPPROF_ETRUNC;
		f->v = (uint64_t)r->p[0] | (uint64_t)r->p[1] << 8 |
		       (uint64_t)r->p[2] << 16 | (uint64_t)r->p[3] << 24;
		r->p += 4;
		return 0;
	case PB_LEN: {
		uint64_t n;
		HP_TRY(heapprof__pb_read_varint(r, &n));
		if (n > (uint64_t)(r->end - r->p))
			return HEAPPROF_ELENGTH;
		f->data = r->p;
		f->len = (size_t)n;
		f->v = n;
		r->p += n;
		return 0;
	}
	default:
		return HEAPPROF_EWIRETYPE;
	}
}

int
heapprof__pb_packed_start(pb_packed *it, const pb_field *f)
{
	if (f->wire == PB_VARINT) {
		it->single = true;
		it->single_v = f->v;
		it->r.p = it->r.end = NULL;
		return 0;
	}
	if (f->wire != PB_LEN)
		return HEAPPROF_EWIRETYPE;
	it->single = false;
	heapprof__pb_reader_init(&it->r, f->data, f->len);
	return 0;
}

int
heapprof__pb_packed_next(pb_packed *it, uint64_t *v)
{
	if (it->single) {
		it->single = false;
		it->r.p = it->r.end = NULL;
		*v = it->single_v;
		return 0;
	}
	if (it->r.p >= it->r.end)
		return 1;
	return heapprof__pb_read_varint(&it->r, v);
}
