/*
 * gz.c: gzip deflate as a streaming sink and bounded whole-buffer inflate,
 * on zlib. See gz.h.
 */
#include <errno.h>
#include <string.h>

#include "heapprof.h"
#include "gz.h"

int
heapprof__gz_writer_init(gz_writer *g, int level, pb_sink_fn *out, void *out_ctx,
                         alloc_func zalloc, free_func zfree, void *opaque)
{
	memset(&g->zs, 0, sizeof(g->zs));
	g->zs.zalloc = zalloc;
	g->zs.zfree = zfree;
	g->zs.opaque = opaque;
	g->out = out;
	g->out_ctx = out_ctx;
	g->err = 0;
	/* windowBits 15 + 16: gzip wrapper; memLevel 8 is zlib's default. */
	int rc = deflateInit2(&g->zs, level, Z_DEFLATED, 15 + 16, 8,
	                      Z_DEFAULT_STRATEGY);
	if (rc != Z_OK)
		return rc == Z_MEM_ERROR ? -ENOMEM : -EINVAL;
	return 0;
}

static int
pump(gz_writer *g, int flush)
{
	int rc;
	do {
		g->zs.next_out = g->obuf;
		g->zs.avail_out = sizeof(g->obuf);
		rc = deflate(&g->zs, flush);
		if (rc == Z_STREAM_ERROR)
			return HEAPPROF_EGZIP;
		size_t have = sizeof(g->obuf) - g->zs.avail_out;
		if (have) {
			int w = g->out(g->out_ctx, g->obuf, have);
			if (w < 0)
				return w;
		}
	} while (g->zs.avail_out == 0 ||
	         (flush == Z_FINISH && rc != Z_STREAM_END));
	return 0;
}

int
heapprof__gz_write(void *ctx, const uint8_t *p, size_t n)
{
	gz_writer *g = ctx;
	if (g->err)
		return g->err;
	while (n) {
		/* avail_in is 32-bit: feed huge buffers in slices. */
		uInt chunk = n > (1u << 30) ? (1u << 30) : (uInt)n;
		g->zs.next_in = (Bytef *)(uintptr_t)p;
		g->zs.avail_in = chunk;
		int rc = pump(g, Z_NO_FLUSH);
		if (rc < 0)
			return g->err = rc;
		p += chunk;
		n -= chunk;
	}
	return 0;
}

int
heapprof__gz_writer_end(gz_writer *g)
{
	if (g->err)
		return g->err;
	g->zs.next_in = NULL;
	g->zs.avail_in = 0;
	int rc = pump(g, Z_FINISH);
	return rc < 0 ? (g->err = rc) : 0;
}

int
heapprof__gz_writer_finish(gz_writer *g)
{
	int rc = heapprof__gz_writer_end(g);
	deflateEnd(&g->zs);
	return rc;
}

void
heapprof__gz_writer_abort(gz_writer *g)
{
	deflateEnd(&g->zs);
}

typedef struct zhdr {
	size_t size;
	size_t pad; /* keep 16-byte alignment */
} zhdr;

voidpf
heapprof__gz_zalloc(voidpf opaque, uInt items, uInt size)
{
	gz_alloc *a = opaque;
	size_t n = (size_t)items * size + sizeof(zhdr);
	zhdr *h = a->rf(a->rctx, NULL, 0, n);
	if (!h)
		return Z_NULL;
	h->size = n;
	return h + 1;
}

void
heapprof__gz_zfree(voidpf opaque, voidpf p)
{
	gz_alloc *a = opaque;
	if (!p)
		return;
	zhdr *h = (zhdr *)p - 1;
	a->rf(a->rctx, h, h->size, 0);
}

int
heapprof__gz_is_gzip(const void *p, size_t n)
{
	const uint8_t *b = p;
	return n >= 2 && b[0] == 0x1f && b[1] == 0x8b;
}

int
heapprof__gunzip(const void *in, size_t n, size_t limit, pb_realloc_fn *rf,
                 void *rctx, uint8_t **out, size_t *out_len)
{
	if (!rf)
		rf = heapprof__pb_libc_realloc;
	z_stream zs;
	memset(&zs, 0, sizeof(zs));
	if (inflateInit2(&zs, 15 + 32) != Z_OK) /* +32: auto-detect gzip/zlib */
		return -ENOMEM;
	size_t cap = n * 4 + 4096, len = 0;
	if (cap > limit + 1)
		cap = limit + 1;
	uint8_t *buf = rf(rctx, NULL, 0, cap);
	int rc = 0;
	if (!buf) {
		inflateEnd(&zs);
		return -ENOMEM;
	}
	const uint8_t *src = in;
	size_t left = n;
	for (;;) {
		if (len == cap) {
			if (cap > limit) {
				rc = HEAPPROF_ETOOBIG;
				break;
			}
			size_t ncap = cap * 2;
			if (ncap > limit + 1)
				ncap = limit + 1;
			uint8_t *nb = rf(rctx, buf, cap, ncap);
			if (!nb) {
				rc = -ENOMEM;
				break;
			}
			buf = nb;
			cap = ncap;
		}
		uInt in_chunk = left > (1u << 30) ? (1u << 30) : (uInt)left;
		zs.next_in = (Bytef *)(uintptr_t)src;
		zs.avail_in = in_chunk;
		size_t out_room = cap - len;
		zs.next_out = buf + len;
		zs.avail_out = out_room > (1u << 30) ? (1u << 30) : (uInt)out_room;
		uInt avail_out0 = zs.avail_out;
		int z = inflate(&zs, Z_NO_FLUSH);
		len += avail_out0 - zs.avail_out;
		src += in_chunk - zs.avail_in;
		left -= in_chunk - zs.avail_in;
		if (z == Z_STREAM_END) {
			/* Another gzip member may follow (concatenated .gz). */
			while (left && *src == 0)
				src++, left--; /* tolerate zero padding */
			if (left == 0)
				break;
			if (inflateReset(&zs) != Z_OK) {
				rc = HEAPPROF_EGZIP;
				break;
			}
			continue;
		}
		if (z == Z_BUF_ERROR && left == 0 && zs.avail_out != 0) {
			rc = HEAPPROF_EGZIP; /* truncated stream */
			break;
		}
		if (z != Z_OK && z != Z_BUF_ERROR) {
			rc = z == Z_MEM_ERROR ? -ENOMEM : HEAPPROF_EGZIP;
			break;
		}
	}
	inflateEnd(&zs);
	if (rc == 0 && len > limit)
		rc = HEAPPROF_ETOOBIG;
	if (rc < 0) {
		rf(rctx, buf, cap, 0);
		return rc;
	}
	*out = buf;
	*out_len = len;
	return 0;
}
