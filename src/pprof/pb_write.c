/*
 * pb_write.c: the protobuf wire encoder every writer in heapprof shares
 * (heap profiles, delta and merge output).
 *
 * Nested messages are written in one pass, as Go's runtime/pprof does: the
 * tag goes out, one byte is reserved for the length, the body is written,
 * and heapprof__pb_end() patches the length in, moving the body when the
 * length needs more than one varint byte. Between top-level fields the
 * finished bytes go to the sink, so memory stays bounded by the largest
 * top-level message rather than by the whole profile.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "heapprof.h"
#include "pb.h"

void *
heapprof__pb_libc_realloc(void *ctx, void *p, size_t old_size, size_t new_size)
{
	(void)ctx;
	(void)old_size;
	if (new_size == 0) {
		free(p);
		return NULL;
	}
	return realloc(p, new_size);
}

int
heapprof__grow_slow(pb_realloc_fn *rf, void *rctx, void *pp, size_t *cap,
                    size_t need, size_t elem)
{
	void **p = pp;
	/* 1.5x: the big arrays (per key, per node, per sample) are most of
	 * a delta computer's memory, so less slack than doubling. */
	size_t c = *cap + *cap / 2;
	if (c < need)
		c = need < 64 ? 64 : need;
	if (c > SIZE_MAX / 2 / elem)
		return -ENOMEM;
	void *np = rf(rctx, *p, *cap * elem, c * elem);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = c;
	return 0;
}

void
heapprof__release(pb_realloc_fn *rf, void *rctx, void *pp, size_t bytes)
{
	void **p = pp;
	if (*p)
		rf(rctx, *p, bytes, 0);
	*p = NULL;
}

void
heapprof__pb_init(pb_writer *w, pb_realloc_fn *rf, void *rctx, pb_sink_fn *sink,
                  void *sctx)
{
	memset(w, 0, sizeof(*w));
	w->realloc_fn = rf ? rf : heapprof__pb_libc_realloc;
	w->realloc_ctx = rctx;
	w->sink = sink;
	w->sink_ctx = sctx;
	w->flush_at = 64 * 1024;
}

static bool
reserve(pb_writer *w, size_t n)
{
	if (HP_UNLIKELY(w->err))
		return false;
	if (HP_LIKELY(w->cap - w->len >= n))
		return true;
	size_t cap = w->cap ? w->cap : 4096;
	while (cap - w->len < n) {
		if (cap > SIZE_MAX / 2) {
			w->err = HEAPPROF_EOVERFLOW;
			return false;
		}
		cap *= 2;
	}
	uint8_t *nb = w->realloc_fn(w->realloc_ctx, w->buf, w->cap, cap);
	if (!nb) {
		w->err = -12; /* -ENOMEM */
		return false;
	}
	w->buf = nb;
	w->cap = cap;
	return true;
}

static void
maybe_flush(pb_writer *w)
{
	if (w->depth != 0 || !w->sink || w->len < w->flush_at || w->err)
		return;
	int rc = w->sink(w->sink_ctx, w->buf, w->len);
	if (rc < 0)
		w->err = rc;
	w->len = 0;
}

uint8_t *
heapprof__pb_room_slow(pb_writer *w, size_t n)
{
	return reserve(w, n) ? w->buf + w->len : NULL;
}

void
heapprof__pb_advance_slow(pb_writer *w)
{
	maybe_flush(w);
}

size_t
heapprof__pb_varint_size(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

size_t
heapprof__pb_put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;
	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

HP_INLINE void
put_varint(pb_writer *w, uint64_t v)
{
	w->len += heapprof__pb_put_varint(w->buf + w->len, v);
}

void
heapprof__pb_varint_field(pb_writer *w, uint32_t field, uint64_t v)
{
	if (!reserve(w, 20))
		return;
	put_varint(w, ((uint64_t)field << 3) | PB_VARINT);
	put_varint(w, v);
	maybe_flush(w);
}

void
heapprof__pb_uint_opt(pb_writer *w, uint32_t field, uint64_t v)
{
	if (v != 0)
		heapprof__pb_varint_field(w, field, v);
}

void
heapprof__pb_bytes_field(pb_writer *w, uint32_t field, const void *p, size_t n)
{
	if (!reserve(w, 20 + n))
		return;
	put_varint(w, ((uint64_t)field << 3) | PB_LEN);
	put_varint(w, n);
	if (n)
		memcpy(w->buf + w->len, p, n);
	w->len += n;
	maybe_flush(w);
}

void
heapprof__pb_packed_u64(pb_writer *w, uint32_t field, const uint64_t *v,
                        size_t n)
{
	if (n == 0)
		return;
	size_t body = 0;
	for (size_t i = 0; i < n; i++)
		body += heapprof__pb_varint_size(v[i]);
	if (!reserve(w, 20 + body))
		return;
	put_varint(w, ((uint64_t)field << 3) | PB_LEN);
	put_varint(w, body);
	for (size_t i = 0; i < n; i++)
		put_varint(w, v[i]);
	maybe_flush(w);
}

void
heapprof__pb_packed_i64(pb_writer *w, uint32_t field, const int64_t *v,
                        size_t n)
{
	/* int64 varints are the two's-complement bits as uint64. */
	heapprof__pb_packed_u64(w, field, (const uint64_t *)(const void *)v, n);
}

void
heapprof__pb_begin(pb_writer *w, uint32_t field)
{
	if (w->depth >= PB_MAX_DEPTH) {
		w->err = HEAPPROF_EFORMAT;
		return;
	}
	if (!reserve(w, 11))
		return;
	put_varint(w, ((uint64_t)field << 3) | PB_LEN);
	w->buf[w->len++] = 0; /* length placeholder: one byte */
	w->open[w->depth++] = w->len;
}

void
heapprof__pb_end(pb_writer *w)
{
	if (w->err)
		return;
	if (w->depth <= 0) {
		w->err = HEAPPROF_EFORMAT;
		return;
	}
	size_t start = w->open[--w->depth];
	size_t body = w->len - start;
	size_t lsz = heapprof__pb_varint_size(body);
	if (lsz > 1) {
		if (!reserve(w, lsz - 1))
			return;
		memmove(w->buf + start + lsz - 1, w->buf + start, body);
		w->len += lsz - 1;
	}
	heapprof__pb_put_varint(w->buf + start - 1, body);
	maybe_flush(w);
}

int
heapprof__pb_finish(pb_writer *w)
{
	if (w->err)
		return w->err;
	if (w->depth != 0)
		return HEAPPROF_EFORMAT;
	if (w->sink && w->len) {
		int rc = w->sink(w->sink_ctx, w->buf, w->len);
		if (rc < 0)
			return w->err = rc;
		w->len = 0;
	}
	return 0;
}

void
heapprof__pb_free(pb_writer *w)
{
	if (w->buf)
		w->realloc_fn(w->realloc_ctx, w->buf, w->cap, 0);
	w->buf = NULL;
	w->cap = w->len = 0;
}
