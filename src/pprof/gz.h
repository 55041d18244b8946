/*
 * gz.h: gzip in both directions over zlib. The writer is a pb_sink_fn that
 * deflates as bytes arrive (so a profile streams out without being held
 * whole); the reader inflates a whole buffer with a hard output limit (the
 * defence against gzip bombs). Allocation goes through caller hooks so the
 * capture side can keep zlib off the malloc it interposes.
 */
#ifndef HEAPPROF_GZ_H
#define HEAPPROF_GZ_H

#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

#include "pb.h"

typedef struct gz_writer {
	z_stream zs;
	pb_sink_fn *out;
	void *out_ctx;
	int err;
	uint8_t obuf[16384];
} gz_writer;

/* alloc/free may be NULL (zlib's defaults: libc). level: 1 = BestSpeed. */
int heapprof__gz_writer_init(gz_writer *g, int level, pb_sink_fn *out,
                             void *out_ctx, alloc_func zalloc, free_func zfree,
                             void *opaque);
/* A pb_sink_fn: ctx is the gz_writer. */
int heapprof__gz_write(void *ctx, const uint8_t *p, size_t n);
/* Writes the trailer and releases zlib state. Returns the first error. */
int heapprof__gz_writer_finish(gz_writer *g);
/* Ends the gzip stream (Z_FINISH) without freeing it: deflateReset then
 * starts the next one on the same state. */
int heapprof__gz_writer_end(gz_writer *g);
/* Releases zlib state without finishing (after an error). */
void heapprof__gz_writer_abort(gz_writer *g);

/* zlib allocation through a pb_realloc_fn (which wants the old size on
 * free, so a small header keeps it): zs.zalloc = heapprof__gz_zalloc,
 * zs.zfree = heapprof__gz_zfree, zs.opaque = a gz_alloc. */
typedef struct gz_alloc {
	pb_realloc_fn *rf;
	void *rctx;
} gz_alloc;
voidpf heapprof__gz_zalloc(voidpf opaque, uInt items, uInt size);
void heapprof__gz_zfree(voidpf opaque, voidpf p);

/* True if the buffer starts with the gzip magic 1f 8b. */
int heapprof__gz_is_gzip(const void *p, size_t n);

/* Inflates `in` (gzip, possibly several members) into a new buffer grown
 * with `rf` (NULL: libc). Fails with HEAPPROF_ETOOBIG past `limit` bytes of
 * output, HEAPPROF_EGZIP on a corrupt or truncated stream. */
int heapprof__gunzip(const void *in, size_t n, size_t limit, pb_realloc_fn *rf,
                     void *rctx, uint8_t **out, size_t *out_len);

#endif
