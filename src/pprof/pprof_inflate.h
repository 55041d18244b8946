/*
 * pprof_inflate.h: gzip input for the pprof decoder: inflates into the
 * decoder's reusable buffer with a persistent zlib stream (inflateReset per
 * profile), so decoding gzip'd profiles allocates nothing at steady state.
 * zlib's own allocations go through the decoder's allocator hook.
 */
#ifndef HEAPPROF_PPROF_INFLATE_H
#define HEAPPROF_PPROF_INFLATE_H

#include "pprof_dec.h"

/* Inflates a gzip (or concatenated gzip) buffer into d->zbuf, at most
 * d->limit bytes (HEAPPROF_ETOOBIG past it, HEAPPROF_EGZIP if corrupt or
 * truncated). *out points into the decoder until the next call. */
int heapprof__pprof_inflate(pprof_dec *d, const void *in, size_t n,
                            const uint8_t **out, size_t *out_len);
/* The decoder's zlib inflate stream (a z_stream), made on first use and
 * reset for a new input; NULL if out of memory. */
void *heapprof__pprof_zstream(pprof_dec *d);
/* Releases the zlib stream and the buffer. */
void heapprof__pprof_inflate_free(pprof_dec *d);

#endif
