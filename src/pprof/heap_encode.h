/*
 * heap_encode.h: internal entry points of the heap profile writers
 * (heap_encode.c: pprof; heap_text.c: legacy text).
 */
#ifndef HEAPPROF_HEAP_ENCODE_H
#define HEAPPROF_HEAP_ENCODE_H

#include "heapprof.h"
#include "pb.h"

/* Encodes uncompressed profile.proto into `sink`. */
int heapprof__encode_heap_to(const heapprof_heap_profile *p, unsigned flags,
                             pb_sink_fn *sink, void *sink_ctx);

#endif
