/*
 * pprof_stream.h: the decoder's stream input (pprof_stream.c), used by
 * pprof_dec.c for heapprof__pprof_dec_open_read and sample iteration in
 * stream mode.
 */
#ifndef HEAPPROF_PPROF_STREAM_H
#define HEAPPROF_PPROF_STREAM_H

#include "pprof_dec.h"

/* Reads the whole input once: its non-sample fields, as they were and in
 * input order, into d->zbuf[0, *dict_len); the number of its samples. */
int heapprof__pprof_stream_open(pprof_dec *d, pprof_read_fn *read, void *arg,
                                size_t *dict_len, size_t *nsamples);
/* The next sample of the pass `it` (the first call reads from the start):
 * 0 with (off, len), its bytes in s_win; 1 at the end. */
int heapprof__pprof_stream_sample(pprof_dec *d, pprof_sample_iter *it,
                                  uint32_t *off, uint32_t *len);
/* The buffer path's gzip input: inflates a gzip (or concatenated gzip)
 * buffer through the same stream, whole into the window, at most
 * d->limit bytes (HEAPPROF_ETOOBIG past it, HEAPPROF_EGZIP if corrupt or
 * truncated). *out points into the decoder until the next open. */
int heapprof__pprof_inflate(pprof_dec *d, const void *in, size_t n,
                            const uint8_t **out, size_t *out_len);
size_t heapprof__pprof_stream_memory(const pprof_dec *d);
/* Releases the window, the zlib stream and zbuf. */
void heapprof__pprof_stream_free(pprof_dec *d);

#endif
