/*
 * pprof_inflate.c: bounded, reusable gzip inflate for the pprof decoder
 * (see pprof_inflate.h).
 */
#include <errno.h>
#include <string.h>
#include <zlib.h>

#include "heapprof.h"
#include "gz.h"
#include "pprof_inflate.h"
#include "lazylibs.h"


static int
zbuf_grow(pprof_dec *d, size_t need_cap)
{
	if (need_cap <= d->zbuf_cap)
		return 0;
	uint8_t *nb = d->realloc_fn(d->realloc_ctx, d->zbuf, d->zbuf_cap,
	                            need_cap);
	if (!nb)
		return -ENOMEM;
	d->zbuf = nb;
	d->zbuf_cap = need_cap;
	return 0;
}

void *
heapprof__pprof_zstream(pprof_dec *d)
{
	z_stream *zs = d->zs;
	if (!zs) {
		zs = d->realloc_fn(d->realloc_ctx, NULL, 0, sizeof(*zs));
		if (!zs)
			return NULL;
		memset(zs, 0, sizeof(*zs));
		d->gza.rf = d->realloc_fn;
		d->gza.rctx = d->realloc_ctx;
		zs->zalloc = heapprof__gz_zalloc;
		zs->zfree = heapprof__gz_zfree;
		zs->opaque = &d->gza;
		/* 15 + 32: gzip or zlib, detected. */
		if (heapprof__lazy_libs() != 0 || inflateInit2(zs, 15 + 32) != Z_OK) {
			d->realloc_fn(d->realloc_ctx, zs, sizeof(*zs), 0);
			return NULL;
		}
		d->zs = zs;
	} else if (inflateReset(zs) != Z_OK) {
		return NULL;
	}
	return zs;
}

int
heapprof__pprof_inflate(pprof_dec *d, const void *in, size_t n,
                        const uint8_t **out, size_t *out_len)
{
	size_t limit = d->limit;
	if (limit >= UINT32_MAX)
		limit = UINT32_MAX - 1;
	z_stream *zs = heapprof__pprof_zstream(d);
	if (!zs)
		return -ENOMEM;
	if (d->zbuf_cap == 0) {
		size_t c = n * 4 + 4096;
		if (c > limit + 1)
			c = limit + 1;
		HP_TRY(zbuf_grow(d, c));
	}
	const uint8_t *src = in;
	size_t left = n, len = 0;
	for (;;) {
		if (len == d->zbuf_cap) {
			if (len > limit)
				return HEAPPROF_ETOOBIG;
			size_t c = d->zbuf_cap * 2;
			if (c > limit + 1)
				c = limit + 1;
			HP_TRY(zbuf_grow(d, c));
		}
		size_t room = d->zbuf_cap - len;
		/* Never write past limit + 1: that byte only detects overflow. */
		if (room > limit + 1 - len)
			room = limit + 1 - len;
		uInt in_chunk = left > (1u << 30) ? (1u << 30) : (uInt)left;
		uInt out_chunk = room > (1u << 30) ? (1u << 30) : (uInt)room;
		zs->next_in = (Bytef *)(uintptr_t)src;
		zs->avail_in = in_chunk;
		zs->next_out = d->zbuf + len;
		zs->avail_out = out_chunk;
		int z = inflate(zs, Z_NO_FLUSH);
		len += out_chunk - zs->avail_out;
		src += in_chunk - zs->avail_in;
		left -= in_chunk - zs->avail_in;
		if (len > limit)
			return HEAPPROF_ETOOBIG;
		if (z == Z_STREAM_END) {
			/* Another member may follow (concatenated .gz). */
			while (left && *src == 0)
				src++, left--;
			if (left == 0)
				break;
			if (inflateReset(zs) != Z_OK)
				return HEAPPROF_EGZIP;
			continue;
		}
		if (z == Z_BUF_ERROR && left == 0 && zs->avail_out != 0)
			return HEAPPROF_EGZIP; /* truncated */
		if (z == Z_MEM_ERROR)
			return -ENOMEM;
		if (z != Z_OK && z != Z_BUF_ERROR)
			return HEAPPROF_EGZIP;
		if (z == Z_BUF_ERROR && zs->avail_out != 0 && left != 0)
			return HEAPPROF_EGZIP; /* no progress possible */
	}
	*out = d->zbuf;
	*out_len = len;
	return 0;
}

void
heapprof__pprof_inflate_free(pprof_dec *d)
{
	if (d->zs) {
		inflateEnd(d->zs);
		d->realloc_fn(d->realloc_ctx, d->zs, sizeof(z_stream), 0);
		d->zs = NULL;
	}
	if (d->zbuf)
		d->realloc_fn(d->realloc_ctx, d->zbuf, d->zbuf_cap, 0);
	d->zbuf = NULL;
	d->zbuf_cap = 0;
}
