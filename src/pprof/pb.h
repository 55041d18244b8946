/*
 * pb.h: protobuf wire format, both directions, with no dependency on any
 * schema. The writer (pb_write.c) streams nested messages into a growable
 * buffer that flushes to a sink between top-level fields; the reader
 * (pb_read.c) is a bounds-checked pull cursor over one message's fields.
 *
 * Neither side calls malloc itself: the writer grows its buffer through a
 * caller-supplied allocator (libc for the tools, an mmap arena inside the
 * profiled process), the reader allocates nothing.
 */
#ifndef HEAPPROF_PB_H
#define HEAPPROF_PB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/compiler.h"

enum pb_wire {
	PB_VARINT = 0,
	PB_I64 = 1,
	PB_LEN = 2,
	PB_I32 = 5,
};

/* ---------------------------------------------------------------- writer */

/* Grows or frees a buffer: new_size 0 frees. Returns NULL on failure. */
typedef void *(pb_realloc_fn)(void *ctx, void *p, size_t old_size,
                              size_t new_size);
/* Receives finished bytes; returns 0 or a negative error code. */
typedef int(pb_sink_fn)(void *ctx, const uint8_t *p, size_t n);

#define PB_MAX_DEPTH 8

typedef struct pb_writer {
	uint8_t *buf;
	size_t len, cap;
	size_t open[PB_MAX_DEPTH]; /* body start offsets of open messages */
	int depth;
	int err; /* first error; every later call is a no-op */
	pb_realloc_fn *realloc_fn;
	void *realloc_ctx;
	pb_sink_fn *sink; /* NULL: keep everything in buf */
	void *sink_ctx;
	size_t flush_at; /* flush to sink when depth == 0 and len >= flush_at */
} pb_writer;

/* A pb_realloc_fn over libc realloc/free (for tools, not the capture side). */
void *heapprof__pb_libc_realloc(void *ctx, void *p, size_t old_size,
                                size_t new_size);

/* The tool half's one grow helper: makes the array *pp (*cap elements of
 * elem bytes, from rf) hold `need` elements, growing it 1.5x (at least
 * 64): 0 or -ENOMEM. release frees an array of `bytes` and nulls *pp. */
int heapprof__grow_slow(pb_realloc_fn *rf, void *rctx, void *pp, size_t *cap,
                        size_t need, size_t elem);
HP_INLINE int
heapprof__grow(pb_realloc_fn *rf, void *rctx, void *pp, size_t *cap,
               size_t need, size_t elem)
{
	if (HP_LIKELY(need <= *cap))
		return 0;
	return heapprof__grow_slow(rf, rctx, pp, cap, need, elem);
}
void heapprof__release(pb_realloc_fn *rf, void *rctx, void *pp,
                       size_t bytes);

void heapprof__pb_init(pb_writer *w, pb_realloc_fn *rf, void *rctx,
                       pb_sink_fn *sink, void *sctx);
/* Flushes what is left to the sink; returns the first error seen. */
int heapprof__pb_finish(pb_writer *w);
/* Releases the buffer. */
void heapprof__pb_free(pb_writer *w);

void heapprof__pb_varint_field(pb_writer *w, uint32_t field, uint64_t v);
/* A varint field, omitted when v == 0 (proto3 default). */
void heapprof__pb_uint_opt(pb_writer *w, uint32_t field, uint64_t v);
void heapprof__pb_bytes_field(pb_writer *w, uint32_t field, const void *p,
                              size_t n);
/* Packed repeated varints. Omitted when n == 0. */
void heapprof__pb_packed_u64(pb_writer *w, uint32_t field, const uint64_t *v,
                             size_t n);
void heapprof__pb_packed_i64(pb_writer *w, uint32_t field, const int64_t *v,
                             size_t n);
/* Nested message: start writes the tag; end patches in the length. */
void heapprof__pb_begin(pb_writer *w, uint32_t field);
void heapprof__pb_end(pb_writer *w);

/* Raw helpers, exposed for tests and for writers that build packed runs. */
size_t heapprof__pb_varint_size(uint64_t v);
size_t heapprof__pb_put_varint(uint8_t *p, uint64_t v);

/* Direct writing, for hot writers that encode a whole top-level field
 * themselves: room returns where n bytes may be written (NULL after an
 * error, which is then in w->err); advance commits n of them and flushes
 * to the sink like any other top-level field. Only at depth 0. */
uint8_t *heapprof__pb_room_slow(pb_writer *w, size_t n);
void heapprof__pb_advance_slow(pb_writer *w);

HP_INLINE uint8_t *
heapprof__pb_room(pb_writer *w, size_t n)
{
	if (HP_LIKELY(!w->err && w->cap - w->len >= n))
		return w->buf + w->len;
	return heapprof__pb_room_slow(w, n);
}

HP_INLINE void
heapprof__pb_advance(pb_writer *w, size_t n)
{
	w->len += n;
	if (HP_UNLIKELY(w->len >= w->flush_at))
		heapprof__pb_advance_slow(w);
}

/* A varint at p (room for 10 bytes): its length. Inline for hot loops. */
HP_INLINE size_t
heapprof__pb_put_varint_fast(uint8_t *p, uint64_t v)
{
	if (HP_LIKELY(v < 0x80)) {
		p[0] = (uint8_t)v;
		return 1;
	}
	if (v < 0x4000) {
		p[0] = (uint8_t)(v | 0x80);
		p[1] = (uint8_t)(v >> 7);
		return 2;
	}
	return heapprof__pb_put_varint(p, v);
}

/* ---------------------------------------------------------------- reader */

typedef struct pb_reader {
	const uint8_t *p, *end;
} pb_reader;

typedef struct pb_field {
	uint32_t num;
	uint8_t wire;
	uint64_t v;             /* PB_VARINT, PB_I64, PB_I32 value */
	const uint8_t *data;    /* PB_LEN payload */
	size_t len;             /* PB_LEN length */
} pb_field;

HP_INLINE void
heapprof__pb_reader_init(pb_reader *r, const void *p, size_t n)
{
	r->p = (const uint8_t *)p;
	r->end = r->p + n;
}

HP_INLINE bool
heapprof__pb_more(const pb_reader *r)
{
	return r->p < r->end;
}

/* Reads one varint. Returns 0, HEAPPROF_ETRUNC or HEAPPROF_EVARINT. */
int heapprof__pb_read_varint(pb_reader *r, uint64_t *out);
/* Reads the next field (tag and value). Returns 0 or a HEAPPROF_E* code:
 * ETRUNC, EVARINT, EWIRETYPE (groups, types 6/7, field number 0), ELENGTH. */
int heapprof__pb_next(pb_reader *r, pb_field *f);

/* Iterates a field that may be packed (PB_LEN of varints) or not (one
 * PB_VARINT): call with the field, then heapprof__pb_packed_next until it
 * returns 1 (done). Returns 0 with *v set, 1 at the end, or an error. */
typedef struct pb_packed {
	pb_reader r;
	bool single;
	uint64_t single_v;
} pb_packed;
int heapprof__pb_packed_start(pb_packed *it, const pb_field *f);
int heapprof__pb_packed_next(pb_packed *it, uint64_t *v);

#endif
